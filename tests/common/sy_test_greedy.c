#include "sy_test_greedy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t sy_test_plain_greedy(const float *x, uint32_t n)
{
    int found = 0;
    uint32_t best = 0;
    for (uint32_t i = 0; i < n; i++)
        if (x[i] == x[i] && (!found || x[i] > x[best])) {
            best = i;
            found = 1;
        }
    return best;
}

void sy_test_greedy_fill(sy_rng *rng, float *x, uint32_t n, int kind)
{
    sy_fill_uniform_f32(rng, x, n, -30.0f, 30.0f);
    switch (kind) {
    case 1: {
        uint32_t i = sy_rng_below(rng, n), j = sy_rng_below(rng, n);
        x[i] = x[j] = 31.0f;
        break;
    }
    case 2:
        x[sy_test_plain_greedy(x, n)] = NAN;
        for (uint32_t i = 0; i < n; i += 1 + sy_rng_below(rng, 97))
            x[i] = NAN;
        break;
    case 3:
        for (uint32_t i = 0; i < n; i++)
            x[i] = NAN;
        break;
    case 4:
        for (uint32_t i = 0; i < n; i++)
            x[i] = -INFINITY;
        break;
    case 5:
        for (uint32_t i = 0; i < n; i++)
            x[i] = i % 3 ? NAN : -INFINITY;
        break;
    case 6:
        x[sy_rng_below(rng, n)] = x[n - 1] = INFINITY;
        break;
    case 7:
        x[n - 1] = 31.0f;
        break;
    default:
        break;
    }
}

static int fail(char *why, size_t len, const char *what, const char *msg)
{
    snprintf(why, len, "%s: %s", what, msg);
    return 1;
}

int sy_test_greedy_rows(const sy_backend_desc *be, void *ctx, sy_rng *rng, char *why, size_t why_len)
{
    static const struct {
        uint32_t rows, cols, stride, offset;
    } shapes[] = {
        {11, 201088, 201088, 0}, /* gpt-oss's vocab, aligned rows */
        {9, 1027, 1031, 3},      /* odd stride: every row starts somewhere else in a 16-byte word */
        {8, 1, 3, 1},            /* one value a row */
        {16, 6, 7, 2},           /* shorter than the device's 16-byte body */
        {3, 4099, 4099, 1},
    };
    if (!SY_HAS_MEMBER(be->struct_size, sy_backend_desc, greedy_rows) || !be->greedy_rows)
        return fail(why, why_len, be->name, "the backend has no greedy_rows");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const uint32_t R = shapes[s].rows, C = shapes[s].cols, S = shapes[s].stride, off = shapes[s].offset;
        const size_t n = off + (size_t)(R - 1) * S + C;
        float *x = malloc(n * sizeof *x);
        uint32_t *got = malloc(R * sizeof *got);
        /* Between rows a value larger than any in them: an index read past a row's end is caught. */
        for (size_t i = 0; i < n; i++)
            x[i] = 1e38f;
        for (uint32_t r = 0; r < R; r++)
            sy_test_greedy_fill(rng, x + off + (size_t)r * S, C, (int)(r % SY_TEST_GREEDY_KINDS));
        void *dx = NULL, *dout = NULL;
        sy_error err = {{0}};
        char what[96];
        snprintf(what, sizeof what, "%u rows of %u (stride %u, offset %u)", R, C, S, off);
        int bad = be->alloc(ctx, n * sizeof *x, &dx, &err) != SY_OK || be->alloc(ctx, R * sizeof *got, &dout, &err) != SY_OK ||
                  be->memcpy_async(ctx, NULL, dx, x, n * sizeof *x, SY_MEMCPY_H2D, &err) != SY_OK ||
                  be->memset_async(ctx, NULL, dout, 0xA5, R * sizeof *got, &err) != SY_OK ||
                  be->greedy_rows(ctx, NULL, (const float *)dx + off, R, C, S, dout, &err) != SY_OK ||
                  be->memcpy_async(ctx, NULL, got, dout, R * sizeof *got, SY_MEMCPY_D2H, &err) != SY_OK ||
                  be->stream_sync(ctx, NULL, &err) != SY_OK;
        int result = bad ? fail(why, why_len, what, err.msg) : 0;
        for (uint32_t r = 0; !result && r < R; r++) {
            const uint32_t want = sy_test_plain_greedy(x + off + (size_t)r * S, C);
            if (got[r] != want) {
                char msg[128];
                snprintf(msg, sizeof msg, "row %u (pattern %u): index %u, the rule gives %u", r,
                         r % SY_TEST_GREEDY_KINDS, got[r], want);
                result = fail(why, why_len, what, msg);
            }
        }
        be->free(ctx, dx);
        be->free(ctx, dout);
        free(x);
        free(got);
        if (result)
            return result;
    }
    return 0;
}
