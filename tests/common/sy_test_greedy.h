/* The greedy-token rule written the plain way, and a check of a backend's greedy_rows against it
 * on rows built to exercise every clause of the rule (shared by the cpu and GPU backend suites). */
#ifndef SY_TEST_GREEDY_H
#define SY_TEST_GREEDY_H

#include <stddef.h>
#include <stdint.h>

#include "switchyard/backend.h"
#include "sy_test.h"

/* The first index of the largest number; NaN never wins; index 0 when there is no number. */
uint32_t sy_test_plain_greedy(const float *x, uint32_t n);

/* Fills row r of n values for pattern `kind` (0 .. SY_TEST_GREEDY_KINDS - 1): random values, the
 * maximum planted twice, NaNs scattered in (one where the maximum would be), all NaN, all -inf,
 * -inf among NaN, +inf twice, the maximum on the last element. */
enum { SY_TEST_GREEDY_KINDS = 8 };
void sy_test_greedy_fill(sy_rng *rng, float *x, uint32_t n, int kind);

/* Runs be->greedy_rows over several shapes (the gpt-oss vocab, single values, odd row strides so
 * rows start unaligned, widths that are not multiples of 4) with the output poisoned, through the
 * backend's own memory and copies. Returns 0 when every index equals the plain rule's; otherwise
 * 1 with the first difference described in why. */
int sy_test_greedy_rows(const sy_backend_desc *be, void *ctx, sy_rng *rng, char *why, size_t why_len);

#endif
