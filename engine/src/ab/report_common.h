/* What the three writers (text, JSON, HTML) say the same way. */
#ifndef SY_AB_REPORT_COMMON_H
#define SY_AB_REPORT_COMMON_H

#include <stddef.h>

#include "ab/ab.h"

/* "layer 3" or "logits". */
void sy_ab_checkpoint_name(const sy_ab_numerics *n, uint32_t layer, char *buf, size_t len);
/* A difference metric: "0" when exact, "nan" when not finite, else 3 significant digits. */
void sy_ab_format_metric(double v, char *buf, size_t len);
/* The numerics result in one sentence ("bit-exact", "within tolerance: ..."). */
void sy_ab_numerics_sentence(const sy_ab_numerics *n, char *buf, size_t len);
/* max_abs of a diff, NaN when a difference was not finite. */
double sy_ab_diff_max_abs(const sy_ab_diff *d);

#endif
