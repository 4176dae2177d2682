/* Synthetic checkpoints: each element a pure function of (seed, tensor, index), the seed and the
 * tensor id both matter, and the values sit where trained gpt-oss weights do (synth.c). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model/presets.h"
#include "sy_numeric.h"
#include "sy_synth.h"
#include "sy_test.h"

static sy_model_dims dims(const char *preset)
{
    const sy_model_preset *p = sy_model_preset_find(preset);
    ck_assert_ptr_nonnull(p);
    return p->dims;
}

/* Element i of tensor (layer, kind) evaluated alone, the way a device kernel does. */
static uint16_t element(const sy_synth_spec *s, uint64_t i)
{
    return sy_synth_element(s->kind, s->seed, s->tensor, i, s->scale, s->offset, s->e8m0_base, s->e8m0_span);
}

static void *fill(const sy_model_dims *d, uint64_t seed, uint32_t layer, uint32_t kind, uint64_t *n, sy_synth_spec *s)
{
    *s = sy_synth_spec_for(d, seed, layer, kind);
    *n = sy_ckpt_numel(d, layer, kind);
    void *t = calloc(*n, s->kind == SY_SYNTH_BF16_UNIFORM ? 2 : 1);
    sy_synth_fill_host(s, t, *n);
    return t;
}

static uint16_t at(const sy_synth_spec *s, const void *t, uint64_t i)
{
    return s->kind == SY_SYNTH_BF16_UNIFORM ? ((const uint16_t *)t)[i] : ((const uint8_t *)t)[i];
}

START_TEST(element_is_a_pure_function_of_seed_tensor_index)
{
    /* The whole tensor filled in order equals every element evaluated alone in a random order;
     * another seed, or the same kind in another layer, gives other values. */
    sy_model_dims d = dims("tiny");
    uint64_t seed = sy_test_seed();
    sy_rng rng = {seed};
    for (uint32_t kind = 0; kind < SY_T_PER_LAYER_COUNT_; kind++) {
        uint64_t n;
        sy_synth_spec s, s_seed, s_layer;
        void *t = fill(&d, seed, 1, kind, &n, &s);
        void *other_seed = fill(&d, seed + 1, 1, kind, &n, &s_seed);
        void *other_layer = fill(&d, seed, 2, kind, &n, &s_layer);
        for (int k = 0; k < 2000; k++) {
            uint64_t i = sy_rng_below(&rng, (uint32_t)n);
            ck_assert_msg(element(&s, i) == at(&s, t, i), "kind %u element %llu", kind, (unsigned long long)i);
        }
        uint64_t same_seed = 0, same_layer = 0;
        for (uint64_t i = 0; i < n; i++) {
            same_seed += at(&s, t, i) == at(&s, other_seed, i);
            same_layer += at(&s, t, i) == at(&s, other_layer, i);
        }
        /* Bytes collide 1 in 256, e8m0 exponents 1 in 6, norm weights (1 +- 0.1 holds 26 bf16
         * values) 1 in 26, other bf16 values rarely. */
        double limit = s.kind == SY_SYNTH_E8M0 ? 0.3 : s.kind == SY_SYNTH_BYTES ? 0.02 : s.offset != 0 ? 0.15 : 0.05;
        ck_assert_msg(same_seed < limit * n + 2 && same_layer < limit * n + 2,
                      "kind %u: %llu of %llu equal across seeds, %llu across layers", kind,
                      (unsigned long long)same_seed, (unsigned long long)n, (unsigned long long)same_layer);
        free(t);
        free(other_seed);
        free(other_layer);
    }
}
END_TEST

START_TEST(values_have_trained_magnitudes)
{
    /* For tiny and gpt-oss-120b: dense weights uniform over +-sqrt(3 / fan_in) (mean |w| half of
     * that, none zero), norm weights 1 +- 0.1, sinks within +-2, biases within +-0.02, MXFP4
     * codes over all 16 nibbles, e8m0 scales over six octaves, the top one 2^0 shifted by
     * round(log2(sqrt(K))) - 2. gpt-oss-120b tensors are checked on their first 2^18 elements. */
    static const char *const presets[] = {"tiny", "gpt-oss-120b"};
    uint64_t seed = sy_test_seed();
    for (int pi = 0; pi < 2; pi++) {
        sy_model_dims d = dims(presets[pi]);
        for (uint32_t kind = 0; kind < SY_T_PER_LAYER_COUNT_; kind++) {
            sy_synth_spec s = sy_synth_spec_for(&d, seed, 0, kind);
            uint64_t n = sy_ckpt_numel(&d, 0, kind);
            if (n > (1u << 18))
                n = 1u << 18;
            if (s.kind == SY_SYNTH_E8M0) {
                uint32_t K = kind == SY_T_W13_SCALES ? d.hidden : d.intermediate, seen = 0;
                int shift = (int)lround(0.5 * log2((double)K)) - 2;
                for (uint64_t i = 0; i < n; i++) {
                    uint32_t e = element(&s, i);
                    ck_assert_msg(e >= 122u - (uint32_t)shift && e <= 127u - (uint32_t)shift, "%s kind %u: e8m0 %u",
                                  presets[pi], kind, e);
                    seen |= 1u << (e - (122u - (uint32_t)shift));
                }
                ck_assert_uint_eq(seen, 0x3Fu);
                continue;
            }
            if (s.kind == SY_SYNTH_BYTES) {
                uint32_t nibbles = 0;
                for (uint64_t i = 0; i < n; i++) {
                    uint32_t byte = element(&s, i);
                    nibbles |= 1u << (byte & 15) | 1u << (byte >> 4);
                }
                ck_assert_uint_eq(nibbles, 0xFFFFu);
                continue;
            }
            double lo = INFINITY, hi = -INFINITY, mean_dev = 0;
            uint64_t zeros = 0;
            for (uint64_t i = 0; i < n; i++) {
                double v = sy_bf16_to_f32(element(&s, i));
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
                mean_dev += fabs(v - s.offset) / (double)n;
                zeros += v == 0;
            }
            double want_scale = kind == SY_T_SINKS                                 ? 2.0
                                : kind == SY_T_ATTN_NORM || kind == SY_T_MLP_NORM  ? 0.1
                                : kind == SY_T_O_W                                 ? sqrt(3.0 / (d.q_heads * d.head_dim))
                                : kind == SY_T_Q_W || kind == SY_T_K_W || kind == SY_T_V_W || kind == SY_T_ROUTER_W
                                    ? sqrt(3.0 / d.hidden)
                                    : 0.02;
            double want_offset = kind == SY_T_ATTN_NORM || kind == SY_T_MLP_NORM ? 1.0 : 0.0;
            /* bf16 rounds to nearest: one half-step (2^-8 relative) beyond the f32 bounds. */
            double slack = want_scale + (fabs(want_offset) + want_scale) * 0x1p-8;
            ck_assert_msg(lo >= want_offset - slack && hi <= want_offset + slack,
                          "%s kind %u: values in [%g, %g], want %g +- %g", presets[pi], kind, lo, hi, want_offset,
                          want_scale);
            /* Mean distance from the centre of a uniform: scale / 2, within 5 standard errors
             * (scale / sqrt(12 n)). All zeros, or a scale off by 2x, is far outside. */
            ck_assert_msg(fabs(mean_dev - want_scale / 2) < 5 * want_scale / sqrt(12.0 * (double)n),
                          "%s kind %u: mean |v - %g| = %g, want %g", presets[pi], kind, want_offset, mean_dev,
                          want_scale / 2);
            ck_assert_msg(zeros < n / 100 + 1, "%s kind %u: %llu zeros of %llu", presets[pi], kind,
                          (unsigned long long)zeros, (unsigned long long)n);
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("synth");
    TCase *t = tcase_create("weights");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, element_is_a_pure_function_of_seed_tensor_index);
    tcase_add_test(t, values_have_trained_magnitudes);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
