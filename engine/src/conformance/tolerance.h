/* Tolerances of the conformance suite, all in one place; docs/conformance.md gives the reasons and
 * the measurements behind each number.
 *
 * Every bound is a relative L2 error ||test - ref||_2 / ||ref||_2 against the cpu reference run on
 * the same inputs (the same rounded bf16 / fp8 bytes reach both). What may differ on a conformant
 * plugin is the order of its sums, its exp / rsqrt / sin approximations, and the precision of its
 * intermediates, which may be as narrow as the narrowest operand of the call (its "class") and no
 * narrower: an f32 call computes in f32, a call with bf16 operands may round its other operands and
 * its intermediates (softmax weights, activations) to bf16, a call over an fp8 KV pool may also
 * quantize the softmax weights (and q) to e4m3 for fp8 tensor cores. The bf16 and fp8 bounds sit
 * well above the largest error measured over hundreds of seeds of such fixtures, because that error
 * has a long tail over random inputs and a bound it reaches now and then makes the suite flaky.
 * Layout work (kv write / gather, pad columns, residual_out, the
 * pool of a fused rope + KV write, route ids) is exact: it moves or rounds values once, and the
 * project's own conversions (sy_numeric.h) are bit-exact on every backend. */
#ifndef SY_CONF_TOLERANCE_H
#define SY_CONF_TOLERANCE_H

#include "switchyard/tensor.h"

typedef enum sy_conf_op {
    SY_CONF_OP_ATTENTION = 0, /* decode_paged and prefill_linear outputs */
    SY_CONF_OP_MOE = 1,       /* moe forward output */
    SY_CONF_OP_ROUTE = 2,     /* moe route weights (the ids are exact) */
    SY_CONF_OP_NORM = 3,      /* rmsnorm output columns < N */
    SY_CONF_OP_ROPE = 4,      /* rotated q and k */
    SY_CONF_OP_LINEAR = 5,    /* linear output */
    SY_CONF_OP_ATTENTION_ROW = 6, /* attention output, each (token, head) row on its own: a defect in
                                   * a few rows (a window one key wide) is not averaged away */
    SY_CONF_OP_COUNT_ = 7
} sy_conf_op;

/* The narrower of two float dtypes (f32 > bf16 > fp8_e4m3); non-float dtypes are ignored. */
static inline int32_t sy_conf_narrower(int32_t a, int32_t b)
{
    int rank_a = a == SY_DTYPE_FP8_E4M3 ? 0 : a == SY_DTYPE_BF16 || a == SY_DTYPE_F16 ? 1 : 2;
    int rank_b = b == SY_DTYPE_FP8_E4M3 ? 0 : b == SY_DTYPE_BF16 || b == SY_DTYPE_F16 ? 1 : 2;
    return rank_a <= rank_b ? a : b;
}

/* The bound for `op` on a call whose narrowest operand is `narrowest`. */
static inline double sy_conf_tolerance(sy_conf_op op, int32_t narrowest)
{
    /*                                    f32     bf16    fp8 */
    static const double table[SY_CONF_OP_COUNT_][3] = {
        [SY_CONF_OP_ATTENTION] = {1e-5, 1e-2, 6.5e-2},
        [SY_CONF_OP_MOE] = {2e-5, 8e-3, 8e-3},
        [SY_CONF_OP_ROUTE] = {1e-6, 1e-6, 1e-6},
        [SY_CONF_OP_NORM] = {1e-6, 1e-3, 1e-3},
        [SY_CONF_OP_ROPE] = {2e-6, 1e-3, 1e-3},
        [SY_CONF_OP_LINEAR] = {1e-5, 4e-3, 4e-3},
        [SY_CONF_OP_ATTENTION_ROW] = {1e-5, 2e-2, 2e-1},
    };
    int column = narrowest == SY_DTYPE_FP8_E4M3 ? 2 : narrowest == SY_DTYPE_F32 ? 0 : 1;
    return table[op][column];
}

#endif
