/* Composition against the fixture plugins (tests/config/fixtures): each rule of the design with a
 * config that passes and one that fails with the expected message at the expected key, auto and
 * explicit choices, explain, and the shipped configs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cfg_test.h"
#include "util/strbuf.h"

static sy_registry *reg;

/* fx_kv_noslot (an nhd plugin) ends every kv_layout refusal of a vectorized_5d config. */
#define KV_NOSLOT_ON_5D "; fx_kv_noslot is layout nhd, not kv_cache.layout vectorized_5d"

static void open_fixtures(void)
{
    reg = fixture_registry();
}

static void close_fixtures(void)
{
    sy_registry_close(reg);
}

typedef struct composed {
    sy_config *cfg;
    sy_composition *comp;
    sy_diags d;
} composed;

static composed compose_sets(const char *name, const char *text, const char *const *sets, size_t n_sets)
{
    composed r = {0};
    sy_config_options o = {0};
    static const char *const no_env[] = {NULL};
    o.sets = sets;
    o.n_sets = n_sets;
    o.envp = no_env;
    r.cfg = cfg_load(name, text, &o, &r.d);
    ck_assert_msg(r.cfg != NULL, "%s did not load", name);
    r.comp = sy_compose(reg, r.cfg, &r.d);
    sy_diags_sort(&r.d);
    return r;
}

static composed compose_text(const char *name, const char *text)
{
    return compose_sets(name, text, NULL, 0);
}

static void composed_free(composed *r)
{
    sy_composition_free(r->comp);
    sy_config_free(r->cfg);
    sy_diags_free(&r->d);
}

static const char *chosen(const composed *r, int32_t kind)
{
    const sy_registry_entry *e = sy_composition_plugin(r->comp, kind);
    return e ? e->plugin->name : "(none)";
}

static const char *reason_of(const composed *r, int32_t kind, const char *plugin)
{
    for (size_t i = 0; i < sy_composition_candidate_count(r->comp, kind); i++) {
        const sy_compose_candidate *c = sy_composition_candidate(r->comp, kind, i);
        if (strcmp(c->entry->plugin->name, plugin) == 0)
            return c->reason ? c->reason : "(compatible)";
    }
    return "(not a candidate)";
}

static char *explain_text(const composed *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    sy_composition_explain(r->comp, r->cfg, f);
    fclose(f);
    return text;
}

START_TEST(default_config_composes)
{
    composed r = compose_text("ok.yaml", "backend: cpu\n");
    expect_count(&r.d, 0);
    ck_assert(sy_composition_ok(r.comp));
    ck_assert_str_eq(sy_composition_backend(r.comp)->backend->name, "cpu");
    ck_assert_str_eq(chosen(&r, SY_KIND_KV_LAYOUT), "fx_kv_nhd");
    ck_assert_str_eq(chosen(&r, SY_KIND_ATTENTION), "fx_attn_nhd"); /* rank 20 beats fx_attn_paged's 10 */
    ck_assert_str_eq(chosen(&r, SY_KIND_ROPE), "fx_rope_yarn");
    ck_assert_str_eq(chosen(&r, SY_KIND_NORM), "fx_norm_rmsnorm");
    ck_assert_str_eq(chosen(&r, SY_KIND_MOE), "fx_moe_interleave");
    /* Equal ranks: the name decides. */
    ck_assert_str_eq(chosen(&r, SY_KIND_LINEAR), "fx_linear_a");
    ck_assert_str_eq(sy_composition_why(r.comp, SY_KIND_LINEAR), "auto: highest rank (5, ties by name) of 3 compatible");
    ck_assert_str_eq(sy_composition_why(r.comp, SY_KIND_KV_LAYOUT), "auto: the only compatible kv_layout plugin of 3");
    ck_assert_str_eq(reason_of(&r, SY_KIND_KV_LAYOUT, "fx_kv_5d"), "is layout vectorized_5d, not kv_cache.layout nhd");
    /* The gpu plugin is not a candidate on cpu. */
    ck_assert_str_eq(reason_of(&r, SY_KIND_ATTENTION, "fx_attn_gpu"), "(not a candidate)");
    const sy_compose_decisions *dec = sy_composition_decisions(r.comp);
    ck_assert_uint_eq(dec->page_size, 16);
    ck_assert_uint_eq(dec->kv_vec, 1);
    ck_assert_str_eq(sy_config_source(r.cfg, "kv_cache.page_size"), "default (nhd)");
    ck_assert_int_eq(dec->fused_rope_kv, 1);
    ck_assert_uint_eq(dec->pad_multiple, 0);
    ck_assert_uint_eq(dec->padded_hidden, 128);
    composed_free(&r);
}
END_TEST

START_TEST(rule1_vectorized_5d_default_page_and_x)
{
    composed r = compose_text("v.yaml", "kv_cache:\n  layout: vectorized_5d\n");
    expect_count(&r.d, 0);
    ck_assert_str_eq(chosen(&r, SY_KIND_KV_LAYOUT), "fx_kv_5d");
    const sy_compose_decisions *dec = sy_composition_decisions(r.comp);
    ck_assert_uint_eq(dec->page_size, 64);
    ck_assert_uint_eq(dec->kv_vec, 8);
    ck_assert_int_eq(sy_config_int(r.cfg, "kv_cache.page_size"), 64);
    ck_assert_str_eq(sy_config_source(r.cfg, "kv_cache.page_size"), "default (vectorized_5d)");
    composed_free(&r);

    static const char *const fp8[] = {"kv_cache.dtype=fp8_e4m3", "kv_cache.k_scale=unit", "kv_cache.v_scale=unit",
                                      "kv_cache.page_size=16"};
    r = compose_sets("v.yaml", "kv_cache:\n  layout: vectorized_5d\n", fp8, 4);
    expect_count(&r.d, 0);
    ck_assert_uint_eq(sy_composition_decisions(r.comp)->kv_vec, 16);
    composed_free(&r);
}
END_TEST

START_TEST(rule1_fails_on_page_size_and_head_dim)
{
    composed r = compose_text("p.yaml", "kv_cache:\n  layout: vectorized_5d\n  page_size: 60\n");
    expect_count(&r.d, 1);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "p.yaml", 3, 14,
                "no kv_layout plugin for backend cpu fits this config: fx_kv_5d needs kv_cache.page_size to be a "
                "multiple of X = 8 (16 bytes / 2-byte bf16), not 60; fx_kv_nhd is layout nhd, not kv_cache.layout "
                "vectorized_5d" KV_NOSLOT_ON_5D);
    ck_assert(!sy_composition_ok(r.comp));
    composed_free(&r);

    /* fp8 doubles X: 24 is a multiple of 8 but not of 16. */
    static const char *const fp8[] = {"kv_cache.dtype=fp8_e4m3", "kv_cache.k_scale=1", "kv_cache.v_scale=1"};
    r = compose_sets("p.yaml", "kv_cache:\n  layout: vectorized_5d\n  page_size: 24\n", fp8, 3);
    expect_count(&r.d, 1);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "p.yaml", 3, 14,
                "no kv_layout plugin for backend cpu fits this config: fx_kv_5d needs kv_cache.page_size to be a "
                "multiple of X = 16 (16 bytes / 1-byte fp8_e4m3), not 24; fx_kv_nhd is layout nhd, not "
                "kv_cache.layout vectorized_5d" KV_NOSLOT_ON_5D);
    composed_free(&r);

    /* head dim 36 from --set: the error points at that --set. */
    static const char *const head[] = {"model.head_dim=36"};
    r = compose_sets("p.yaml", "kv_cache:\n  layout: vectorized_5d\n", head, 1);
    ck_assert_uint_ge(r.d.n, 1);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "--set", 1, 16,
                "no kv_layout plugin for backend cpu fits this config: fx_kv_5d needs model.head_dim to be a multiple "
                "of X = 8 (16 bytes / 2-byte bf16), not 36; fx_kv_nhd is layout nhd, not kv_cache.layout "
                "vectorized_5d" KV_NOSLOT_ON_5D);
    composed_free(&r);

    /* The plugin's own geometry check (callable before init) has the last word. */
    r = compose_text("g.yaml", "model:\n  q_heads: 128\n  kv_heads: 128\nkv_cache:\n  layout: vectorized_5d\n");
    expect_count(&r.d, 1);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "g.yaml", 5, 11,
                "no kv_layout plugin for backend cpu fits this config: fx_kv_5d refuses the geometry: fixture "
                "geometry: at most 64 KV heads, not 128; fx_kv_nhd is layout nhd, not kv_cache.layout vectorized_5d"
                KV_NOSLOT_ON_5D);
    composed_free(&r);
}
END_TEST

START_TEST(rule2_fp8_needs_scales_and_fp8_attention)
{
    composed r = compose_text("f.yaml", "kv_cache:\n  dtype: fp8_e4m3\n  k_scale: 0.5\n");
    expect_count(&r.d, 1);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "f.yaml", 2, 10,
                "kv_cache.dtype fp8_e4m3 needs kv_cache.v_scale: a number, or unit for an explicit scale of 1 (fp8 KV "
                "read without its scales is wrong)");
    composed_free(&r);

    r = compose_text("f.yaml", "kv_cache:\n  dtype: fp8_e4m3\n");
    expect_diag(&r.d, 0, SY_SEV_ERROR, "f.yaml", 2, 10,
                "kv_cache.dtype fp8_e4m3 needs kv_cache.k_scale and kv_cache.v_scale: a number, or unit for an "
                "explicit scale of 1 (fp8 KV read without its scales is wrong)");
    composed_free(&r);

    const char *ok = "kv_cache:\n  dtype: fp8_e4m3\n  k_scale: 0.5\n  v_scale: unit\n";
    r = compose_text("f.yaml", ok);
    expect_count(&r.d, 0);
    ck_assert_str_eq(chosen(&r, SY_KIND_ATTENTION), "fx_attn_paged");
    ck_assert_str_eq(reason_of(&r, SY_KIND_ATTENTION, "fx_attn_nhd"), "reads KV of bf16, not kv_cache.dtype fp8_e4m3");
    const sy_compose_decisions *dec = sy_composition_decisions(r.comp);
    ck_assert(dec->k_scale == 0.5f && dec->v_scale == 1.0f);
    ck_assert_int_eq(dec->kv_dtype, SY_DTYPE_FP8_E4M3);
    composed_free(&r);

    /* An explicit plugin without fp8 scales is an error at the choice, never a fallback. */
    static const char *const pick[] = {"attention.plugin=fx_attn_nhd"};
    r = compose_sets("f.yaml", ok, pick, 1);
    expect_count(&r.d, 1);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "--set", 1, 18,
                "attention.plugin fx_attn_nhd cannot serve this config: it reads KV of bf16, not kv_cache.dtype "
                "fp8_e4m3 (kv_cache.dtype = fp8_e4m3 from f.yaml:2:3)");
    ck_assert_str_eq(chosen(&r, SY_KIND_ATTENTION), "(none)");
    composed_free(&r);
}
END_TEST

START_TEST(rule3_attention_reads_the_layout)
{
    composed r = compose_text("a.yaml", "kv_cache:\n  layout: vectorized_5d\n");
    ck_assert_str_eq(chosen(&r, SY_KIND_ATTENTION), "fx_attn_paged");
    ck_assert_str_eq(reason_of(&r, SY_KIND_ATTENTION, "fx_attn_nhd"), "reads nhd only, not kv_cache.layout vectorized_5d");
    composed_free(&r);

    r = compose_text("a.yaml", "kv_cache:\n  layout: vectorized_5d\nattention:\n  plugin: fx_attn_nhd\n");
    expect_count(&r.d, 1);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "a.yaml", 4, 11,
                "attention.plugin fx_attn_nhd cannot serve this config: it reads nhd only, not kv_cache.layout "
                "vectorized_5d (kv_cache.layout = vectorized_5d from a.yaml:2:3)");
    composed_free(&r);
}
END_TEST

START_TEST(rule3_fused_rope_kv_write)
{
    composed r = compose_text("r.yaml", "rope:\n  fuse_kv_write: on\n");
    expect_count(&r.d, 0);
    ck_assert_int_eq(sy_composition_decisions(r.comp)->fused_rope_kv, 1);
    ck_assert_str_eq(sy_composition_decisions(r.comp)->fused_rope_kv_why,
                     "fused (rope.fuse_kv_write = on): fx_rope_yarn writes nhd bf16 K/V in its RoPE kernel");
    ck_assert_str_eq(reason_of(&r, SY_KIND_ROPE, "fx_rope_plain"),
                     "has no fused rope + KV write, needed by rope.fuse_kv_write on");
    composed_free(&r);

    r = compose_text("r.yaml", "kv_cache:\n  layout: vectorized_5d\nrope:\n  fuse_kv_write: on\n");
    expect_count(&r.d, 1);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "r.yaml", 4, 18,
                "no rope plugin for backend cpu fits this config: fx_rope_yarn fuses the KV write for nhd only, not "
                "kv_cache.layout vectorized_5d, needed by rope.fuse_kv_write on; fx_rope_plain has no fused rope + KV "
                "write, needed by rope.fuse_kv_write on; fx_rope_gptj lacks the NeoX (half-split) style gpt-oss uses; "
                "fx_rope_noscale lacks YaRN scaling, needed by model.yarn_factor > 1");
    composed_free(&r);

    /* auto: unfused where the rope plugin cannot write the layout, and explain says so. */
    r = compose_text("r.yaml", "kv_cache:\n  layout: vectorized_5d\n");
    expect_count(&r.d, 0);
    const sy_compose_decisions *dec = sy_composition_decisions(r.comp);
    ck_assert_int_eq(dec->fused_rope_kv, 0);
    const char *why = "unfused (rope.fuse_kv_write = auto): fx_rope_yarn fuses the KV write for nhd only, not "
                      "kv_cache.layout vectorized_5d; RoPE, then kv_layout.write";
    ck_assert_str_eq(dec->fused_rope_kv_why, why);
    char *text = explain_text(&r);
    ck_assert_ptr_nonnull(strstr(text, why));
    free(text);
    composed_free(&r);

    r = compose_text("r.yaml", "rope:\n  fuse_kv_write: off\n");
    ck_assert_int_eq(sy_composition_decisions(r.comp)->fused_rope_kv, 0);
    ck_assert_str_eq(sy_composition_decisions(r.comp)->fused_rope_kv_why,
                     "unfused (rope.fuse_kv_write = off): RoPE, then kv_layout.write");
    composed_free(&r);
}
END_TEST

/* Composes `text` (no diagnostics) and checks attention.prefill_paged's decision and its reason;
 * the reason must also be in `config explain`'s text. */
static void expect_prefill_paged(const char *text, int paged, const char *why)
{
    composed r = compose_text("q.yaml", text);
    expect_count(&r.d, 0);
    ck_assert_int_eq(sy_composition_decisions(r.comp)->prefill_paged, paged);
    ck_assert_str_eq(sy_composition_decisions(r.comp)->prefill_paged_why, why);
    char *explained = explain_text(&r);
    ck_assert_ptr_nonnull(strstr(explained, why));
    free(explained);
    composed_free(&r);
}

START_TEST(rule7_prefill_paged)
{
    static const char off_why[] = "gather (attention.prefill_paged = off): kv_layout.gather copies each sequence's "
                                  "prefix and chunk to contiguous rows, then attention.prefill_linear";
    static const char paged_why[] = "paged (attention.prefill_paged = auto): fx_attn_paged reads a later chunk's "
                                    "prefix from the nhd pool's pages, nothing gathered";
    /* The default is auto: the pages where the plugin declares prefill_paged; off always gathers. */
    expect_prefill_paged("attention:\n  plugin: fx_attn_paged\n", 1, paged_why);
    expect_prefill_paged("attention:\n  plugin: fx_attn_paged\n  prefill_paged: auto\n", 1, paged_why);
    expect_prefill_paged("attention:\n  plugin: fx_attn_paged\n  prefill_paged: off\n", 0, off_why);
    /* auto: the default attention (fx_attn_nhd) declares no prefill_paged: later chunks gather. */
    expect_prefill_paged("backend: cpu\n", 0,
                         "gather (attention.prefill_paged = auto): fx_attn_nhd declares no prefill_paged; "
                         "kv_layout.gather copies each sequence's prefix and chunk to contiguous rows, then "
                         "attention.prefill_linear");

    /* on: a requirement of the attention match. */
    composed r = compose_text("q.yaml", "attention:\n  prefill_paged: on\n");
    expect_count(&r.d, 0);
    ck_assert_str_eq(chosen(&r, SY_KIND_ATTENTION), "fx_attn_paged");
    ck_assert_str_eq(reason_of(&r, SY_KIND_ATTENTION, "fx_attn_nhd"),
                     "declares no prefill_paged, needed by attention.prefill_paged on");
    ck_assert_int_eq(sy_composition_decisions(r.comp)->prefill_paged, 1);
    composed_free(&r);

    r = compose_text("q.yaml", "attention:\n  plugin: fx_attn_nhd\n  prefill_paged: on\n");
    expect_count(&r.d, 1);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "q.yaml", 2, 11,
                "attention.plugin fx_attn_nhd cannot serve this config: it declares no prefill_paged, needed by "
                "attention.prefill_paged on (attention.prefill_paged = on from q.yaml:3:3)");
    composed_free(&r);
}
END_TEST

START_TEST(rule6_fused_qkv_linear)
{
    /* auto: the default attention (fx_attn_nhd, the higher rank) declares no row_stride. */
    composed r = compose_text("q.yaml", "backend: cpu\n");
    expect_count(&r.d, 0);
    ck_assert_str_eq(chosen(&r, SY_KIND_ATTENTION), "fx_attn_nhd");
    ck_assert_int_eq(sy_composition_decisions(r.comp)->fused_qkv, 0);
    const char *why = "off (linear.fuse_qkv = auto): fx_attn_nhd declares no row_stride; three linears, for q, k and v "
                      "(fx_linear_a declares no split_y)";
    ck_assert_str_eq(sy_composition_decisions(r.comp)->fused_qkv_why, why);
    ck_assert_uint_eq(sy_composition_decisions(r.comp)->qkv_linears, 3);
    char *text = explain_text(&r);
    ck_assert_ptr_nonnull(strstr(text, why));
    free(text);
    composed_free(&r);

    /* Unfused with a linear plugin that splits its output: still one linear, into three arrays. */
    static const struct {
        const char *text, *why;
    } split[] = {
        {"linear:\n  plugin: fx_linear_split\n",
         "off (linear.fuse_qkv = auto): fx_attn_nhd declares no row_stride; q, k and v in arrays of their own, "
         "written by one linear of 256 columns (fx_linear_split: split_y)"},
        {"linear:\n  plugin: fx_linear_split\n  fuse_qkv: off\n",
         "off (linear.fuse_qkv = off): q, k and v in arrays of their own, written by one linear of 256 columns "
         "(fx_linear_split: split_y)"},
    };
    for (size_t i = 0; i < sizeof split / sizeof split[0]; i++) {
        r = compose_text("q.yaml", split[i].text);
        expect_count(&r.d, 0);
        ck_assert_int_eq(sy_composition_decisions(r.comp)->fused_qkv, 0);
        ck_assert_uint_eq(sy_composition_decisions(r.comp)->qkv_linears, 1);
        ck_assert_str_eq(sy_composition_decisions(r.comp)->fused_qkv_why, split[i].why);
        composed_free(&r);
    }

    /* on: a requirement of the attention match, so auto takes the plugin that declares it. */
    r = compose_text("q.yaml", "linear:\n  fuse_qkv: on\n");
    expect_count(&r.d, 0);
    ck_assert_str_eq(chosen(&r, SY_KIND_ATTENTION), "fx_attn_paged");
    ck_assert_str_eq(reason_of(&r, SY_KIND_ATTENTION, "fx_attn_nhd"), "declares no row_stride, needed by linear.fuse_qkv on");
    ck_assert_int_eq(sy_composition_decisions(r.comp)->fused_qkv, 1);
    ck_assert_str_eq(sy_composition_decisions(r.comp)->fused_qkv_why,
                     "fused (linear.fuse_qkv = on): one linear of 256 columns (q 128, k 64, v 64); rope, the KV write "
                     "(fx_kv_nhd) and fx_attn_paged take q, k and v as slices of its rows");
    composed_free(&r);

    r = compose_text("q.yaml", "linear:\n  fuse_qkv: on\nattention:\n  plugin: fx_attn_nhd\n");
    expect_count(&r.d, 1);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "q.yaml", 4, 11,
                "attention.plugin fx_attn_nhd cannot serve this config: it declares no row_stride, needed by "
                "linear.fuse_qkv on (linear.fuse_qkv = on from q.yaml:2:3)");
    composed_free(&r);

    r = compose_text("q.yaml", "kv_cache:\n  layout: vectorized_5d\nlinear:\n  fuse_qkv: on\n");
    expect_count(&r.d, 1);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "q.yaml", 4, 13,
                "no kv_layout plugin for backend cpu fits this config: fx_kv_5d declares no any_token_stride (K/V rows "
                "as slices of wider rows), needed by linear.fuse_qkv on; fx_kv_nhd is layout nhd, not kv_cache.layout "
                "vectorized_5d" KV_NOSLOT_ON_5D);
    composed_free(&r);

    /* auto with a layout plugin that cannot take the slices. */
    r = compose_text("q.yaml", "kv_cache:\n  layout: vectorized_5d\n");
    expect_count(&r.d, 0);
    ck_assert_str_eq(sy_composition_decisions(r.comp)->fused_qkv_why,
                     "off (linear.fuse_qkv = auto): fx_kv_5d declares no any_token_stride; three linears, for q, k "
                     "and v (fx_linear_a declares no split_y)");
    composed_free(&r);

    r = compose_text("q.yaml", "linear:\n  fuse_qkv: off\nattention:\n  plugin: fx_attn_paged\n");
    ck_assert_int_eq(sy_composition_decisions(r.comp)->fused_qkv, 0);
    ck_assert_str_eq(sy_composition_decisions(r.comp)->fused_qkv_why,
                     "off (linear.fuse_qkv = off): three linears, for q, k and v (fx_linear_a declares no split_y)");
    composed_free(&r);
}
END_TEST

START_TEST(rule4_fused_add_rmsnorm_pad)
{
    composed r = compose_text("n.yaml", "model:\n  preset: gpt-oss-20b\nnorm:\n  fuse_pad: on\n");
    expect_count(&r.d, 0);
    const sy_compose_decisions *dec = sy_composition_decisions(r.comp);
    ck_assert_uint_eq(dec->pad_multiple, 256);
    ck_assert_uint_eq(dec->padded_hidden, 3072);
    ck_assert_str_eq(dec->fuse_pad_why,
                     "fused (norm.fuse_pad = on): fx_norm_rmsnorm pads to fx_moe_interleave's input alignment 256 "
                     "(model.hidden 2880 -> 3072); the router reads the unpadded slice, the MoE output is trimmed to "
                     "2880");
    composed_free(&r);

    r = compose_text("n.yaml", "norm:\n  fuse_pad: on\nparallel:\n  tp: 2\n");
    expect_count(&r.d, 1);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "n.yaml", 2, 13,
                "norm.fuse_pad on needs parallel.tp 1 (parallel.tp = 2 from n.yaml:4:3)");
    composed_free(&r);

    r = compose_text("n.yaml", "norm:\n  fuse_pad: on\n  plugin: fx_norm_plain\n");
    expect_count(&r.d, 1);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "n.yaml", 3, 11,
                "norm.plugin fx_norm_plain cannot serve this config: it declares no pad_to_multiple, needed by "
                "norm.fuse_pad on (norm.fuse_pad = on from n.yaml:2:3)");
    composed_free(&r);

    r = compose_text("n.yaml", "norm:\n  fuse_pad: on\nmoe:\n  plugin: fx_moe_unpadded\n");
    expect_count(&r.d, 1);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "n.yaml", 4, 11,
                "moe.plugin fx_moe_unpadded cannot serve this config: it does not accept padded input, needed by "
                "norm.fuse_pad on (norm.fuse_pad = on from n.yaml:2:3)");
    composed_free(&r);

    /* auto: enabled only when all three hold. */
    r = compose_text("n.yaml", "norm:\n  fuse_pad: auto\n");
    expect_count(&r.d, 0);
    ck_assert_uint_eq(sy_composition_decisions(r.comp)->pad_multiple, 256);
    ck_assert_uint_eq(sy_composition_decisions(r.comp)->padded_hidden, 256);
    composed_free(&r);
    r = compose_text("n.yaml", "norm:\n  fuse_pad: auto\nmoe:\n  plugin: fx_moe_unpadded\n");
    expect_count(&r.d, 0);
    ck_assert_uint_eq(sy_composition_decisions(r.comp)->pad_multiple, 0);
    ck_assert_str_eq(sy_composition_decisions(r.comp)->fuse_pad_why,
                     "off (norm.fuse_pad = auto): fx_moe_unpadded does not accept padded input");
    composed_free(&r);
    r = compose_text("n.yaml", "norm:\n  fuse_pad: auto\n  plugin: fx_norm_plain\nparallel:\n  tp: 2\n");
    expect_count(&r.d, 0);
    ck_assert_str_eq(sy_composition_decisions(r.comp)->fuse_pad_why,
                     "off (norm.fuse_pad = auto): parallel.tp is 2, and the padded width only flows through tp 1");
    composed_free(&r);
}
END_TEST

START_TEST(rule5_max_tp_bounds_parallel_tp)
{
    composed r = compose_text("t.yaml", "moe:\n  gate_up_layout: separated\nparallel:\n  tp: 2\n");
    expect_count(&r.d, 1);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "t.yaml", 4, 7,
                "no moe plugin for backend cpu fits this config: fx_moe_interleave uses gate/up layout interleave, "
                "not moe.gate_up_layout separated; fx_moe_separated is correct up to max_tp 1, not parallel.tp 2; "
                "fx_moe_unpadded uses gate/up layout interleave, not moe.gate_up_layout separated");
    composed_free(&r);

    r = compose_text("t.yaml", "moe:\n  gate_up_layout: separated\n");
    expect_count(&r.d, 0);
    ck_assert_str_eq(chosen(&r, SY_KIND_MOE), "fx_moe_separated");
    composed_free(&r);

    r = compose_text("t.yaml", "model:\n  preset: gpt-oss-120b\nparallel:\n  tp: 16\n");
    ck_assert_uint_ge(r.d.n, 2);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "t.yaml", 4, 7,
                "no attention plugin for backend cpu fits this config: fx_attn_nhd is correct up to max_tp 8, not "
                "parallel.tp 16; fx_attn_paged is correct up to max_tp 8, not parallel.tp 16; fx_attn_bare declares no "
                "sliding_window, needed by model.sliding_window 128");
    composed_free(&r);
}
END_TEST

/* Capability checks of engine/src/compose/match.c beyond the six rules, one row each. Where the
 * fixtures of the default set all refuse a value, auto fails and the error points at the key of the
 * value; where only a fixture that lacks one thing refuses, the config names that plugin and the error
 * points at the .plugin key, citing the key it needs (file:line:col). */
typedef struct refusal {
    const char *check;  /* the refusal, for a failure's message */
    const char *config; /* loaded as r.yaml */
    unsigned line, col; /* where the error points */
    size_t n_errors;    /* one value can fail several slots: each slot's error is a row of its own */
    const char *says;   /* the plugin and its reason, as the message words them */
    const char *fix;    /* a --set under which the same config composes: the refusal is all that failed */
} refusal;

static const refusal refusals[] = {
    /* kv_layout */
    {"kv_layout: the sliding-window pool needs a slot map",
     "model:\n  sliding_window: 128\nkv_cache:\n  plugin: fx_kv_noslot\n", 4, 11, 1,
     "kv_cache.plugin fx_kv_noslot cannot serve this config: it declares no slot map, needed by the sliding-window "
     "pool (model.sliding_window 128) (model.sliding_window = 128 from r.yaml:2:3)",
     "model.sliding_window=0"},
    {"kv_layout: max_page_size", "kv_cache:\n  page_size: 8192\n", 2, 14, 2,
     "fx_kv_nhd takes pages of at most 4096 tokens, not kv_cache.page_size 8192", "kv_cache.page_size=4096"},
    {"kv_layout: max_head_dim", "model:\n  head_dim: 512\n", 2, 13, 3,
     "fx_kv_nhd takes head dims of at most 256, not model.head_dim 512", "model.head_dim=256"},
    /* attention */
    {"attention: head dim range and multiple", "model:\n  head_dim: 40\nattention:\n  plugin: fx_attn_nhd\n", 4, 11, 1,
     "attention.plugin fx_attn_nhd cannot serve this config: it takes head dims 32..128 in multiples of 16, not "
     "model.head_dim 40 (model.head_dim = 40 from r.yaml:2:3)",
     "model.head_dim=48"},
    {"attention: page size range", "kv_cache:\n  page_size: 8192\n", 2, 14, 2,
     "fx_attn_nhd takes page sizes 1..4096, not kv_cache.page_size 8192", "kv_cache.page_size=4096"},
    {"attention: sliding_window",
     "model:\n  sliding_window: 128\n  sinks: false\nattention:\n  plugin: fx_attn_bare\n", 5, 11, 1,
     "attention.plugin fx_attn_bare cannot serve this config: it declares no sliding_window, needed by "
     "model.sliding_window 128 (model.sliding_window = 128 from r.yaml:2:3)",
     "model.sliding_window=0"},
    {"attention: sinks", "model:\n  sliding_window: 0\n  sinks: true\nattention:\n  plugin: fx_attn_bare\n", 5, 11, 1,
     "attention.plugin fx_attn_bare cannot serve this config: it declares no sinks, needed by model.sinks true "
     "(model.sinks = true from r.yaml:3:3)",
     "model.sinks=false"},
    {"attention: max_gqa_ratio", "model:\n  q_heads: 128\n  kv_heads: 1\n", 2, 12, 1,
     "fx_attn_paged takes at most 64 query heads per KV head, not 128 (model.q_heads 128 / model.kv_heads 1)",
     "model.q_heads=64"},
    {"attention: num_splits needs split_k",
     "model:\n  sliding_window: 0\n  sinks: false\nattention:\n  plugin: fx_attn_bare\n  num_splits: 2\n", 5, 11, 1,
     "attention.plugin fx_attn_bare cannot serve this config: it declares no split_k, needed by attention.num_splits "
     "2 (attention.num_splits = 2 from r.yaml:6:3)",
     "attention.num_splits=1"},
    /* moe */
    {"moe: weight_format", "moe:\n  weight_format: bf16\n", 2, 18, 1,
     "fx_moe_interleave takes mxfp4 experts, not moe.weight_format bf16", "moe.weight_format=mxfp4"},
    {"moe: max_experts", "model:\n  experts: 512\n", 2, 12, 1,
     "fx_moe_interleave takes at most 256 experts, not model.experts 512", "model.experts=256"},
    {"moe: max_top_k", "model:\n  experts: 32\n  top_k: 16\n", 3, 10, 1,
     "fx_moe_interleave routes to at most 8 experts, not model.top_k 16", "model.top_k=8"},
    /* norm */
    {"norm: the f32 residual stream", "model:\n  dtype: bf16\nnorm:\n  plugin: fx_norm_bf16\n", 4, 11, 1,
     "norm.plugin fx_norm_bf16 cannot serve this config: it normalizes bf16 only, and the residual stream is f32 "
     "under any model.dtype (model.dtype = bf16 from r.yaml:2:3)",
     "norm.plugin=fx_norm_plain"},
    /* rope */
    {"rope: NeoX style", "rope:\n  plugin: fx_rope_gptj\n", 2, 11, 1,
     "rope.plugin fx_rope_gptj cannot serve this config: it lacks the NeoX (half-split) style gpt-oss uses",
     "rope.plugin=fx_rope_plain"},
    {"rope: YaRN scaling", "model:\n  yarn_factor: 32\nrope:\n  plugin: fx_rope_noscale\n", 4, 11, 1,
     "rope.plugin fx_rope_noscale cannot serve this config: it lacks YaRN scaling, needed by model.yarn_factor > 1 "
     "(model.yarn_factor = 32 from r.yaml:2:3)",
     "rope.plugin=fx_rope_plain"},
    {"rope: unscaled RoPE", "model:\n  yarn_factor: 1\nrope:\n  plugin: fx_rope_noscale\n", 4, 11, 1,
     "rope.plugin fx_rope_noscale cannot serve this config: it lacks unscaled RoPE, needed by model.yarn_factor 1 "
     "(model.yarn_factor = 1 from r.yaml:2:3)",
     "rope.plugin=fx_rope_plain"},
    {"rope: head_dim_max", "model:\n  head_dim: 512\n", 2, 13, 3,
     "fx_rope_yarn rotates head dims of at most 256, not model.head_dim 512", "model.head_dim=256"},
    /* linear */
    {"linear: the checkpoint's bf16 weights", "linear:\n  plugin: fx_linear_f32w\n", 2, 11, 1,
     "linear.plugin fx_linear_f32w cannot serve this config: it takes weights of f32, not the checkpoint's bf16",
     "linear.plugin=fx_linear_a"},
    {"linear: the f32 logits", "model:\n  dtype: bf16\nlinear:\n  plugin: fx_linear_bf16act\n", 4, 11, 1,
     "linear.plugin fx_linear_bf16act cannot serve this config: it takes activations of bf16 only, and the logits it "
     "writes are f32 under any model.dtype (model.dtype = bf16 from r.yaml:2:3)",
     "linear.plugin=fx_linear_a"},
    {"linear: biases", "linear:\n  plugin: fx_linear_nobias\n", 2, 11, 1,
     "linear.plugin fx_linear_nobias cannot serve this config: it ignores biases, which gpt-oss projections have",
     "linear.plugin=fx_linear_a"},
};

/* Several slots refusing one value report at the same place, in no promised order: find the one. */
static int has_error(const sy_diags *d, unsigned line, unsigned col, const char *says)
{
    for (size_t i = 0; i < d->n; i++) {
        const sy_diag *g = &d->items[i];
        if (g->severity == SY_SEV_ERROR && strcmp(g->origin, "r.yaml") == 0 && g->line == line && g->col == col &&
            strstr(g->message, says))
            return 1;
    }
    return 0;
}

START_TEST(match_refusals_name_plugin_reason_and_key)
{
    const refusal *t = &refusals[_i];
    composed r = compose_text("r.yaml", t->config);
    expect_count(&r.d, t->n_errors);
    ck_assert_msg(!sy_composition_ok(r.comp), "%s: composed", t->check);
    int found = has_error(&r.d, t->line, t->col, t->says);
    if (!found)
        print_diags(&r.d);
    ck_assert_msg(found, "%s: no error at r.yaml:%u:%u saying\n    %s", t->check, t->line, t->col, t->says);
    composed_free(&r);

    r = compose_sets("r.yaml", t->config, &t->fix, 1);
    if (r.d.n)
        print_diags(&r.d);
    ck_assert_msg(r.d.n == 0 && sy_composition_ok(r.comp), "%s: does not compose with --set %s", t->check, t->fix);
    composed_free(&r);
}
END_TEST

START_TEST(explicit_choices_are_never_fallbacks)
{
    composed r = compose_text("e.yaml", "attention:\n  plugin: fx_attn_pagde\n");
    expect_count(&r.d, 1);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "e.yaml", 2, 11,
                "attention.plugin 'fx_attn_pagde' is not a loaded attention plugin for backend cpu; did you mean "
                "'fx_attn_paged'?");
    composed_free(&r);

    /* a plugin named without its family's prefix */
    r = compose_text("e.yaml", "attention:\n  plugin: bare\n");
    expect_count(&r.d, 1);
    expect_diag(&r.d, 0, SY_SEV_ERROR, "e.yaml", 2, 11,
                "attention.plugin 'bare' is not a loaded attention plugin for backend cpu; did you mean 'fx_attn_bare'?");
    composed_free(&r);

    r = compose_text("e.yaml", "attention:\n  plugin: fx_attn_gpu\n");
    expect_diag(&r.d, 0, SY_SEV_ERROR, "e.yaml", 2, 11,
                "attention.plugin 'fx_attn_gpu' is a plugin for backend cuda, not for backend cpu (loaded for cpu: "
                "fx_attn_nhd, fx_attn_paged, fx_attn_bare)");
    composed_free(&r);

    r = compose_text("e.yaml", "linear:\n  plugin: fx_linear_b\n");
    expect_count(&r.d, 0);
    ck_assert_str_eq(chosen(&r, SY_KIND_LINEAR), "fx_linear_b");
    ck_assert_str_eq(sy_composition_why(r.comp, SY_KIND_LINEAR), "explicit choice: linear.plugin = fx_linear_b from e.yaml:2:3");
    composed_free(&r);

    r = compose_text("e.yaml", "backend: tpu\n");
    expect_count(&r.d, 1);
    char expected[1024];
    snprintf(expected, sizeof expected, "backend 'tpu' is not loaded (found: cpu; searched %s)",
             getenv("SY_CONFIG_FIXTURE_DIR"));
    expect_diag(&r.d, 0, SY_SEV_ERROR, "e.yaml", 1, 10, expected);
    composed_free(&r);

    r = compose_text("e.yaml", "backend: auto\n");
    expect_count(&r.d, 0);
    ck_assert_str_eq(sy_composition_backend_why(r.comp), "auto: highest probe score (1) of 1 usable");
    composed_free(&r);
}
END_TEST

START_TEST(explain_lists_keys_slots_and_reasons)
{
    composed r = compose_text("x.yaml", "kv_cache:\n  layout: vectorized_5d\n");
    char *text = explain_text(&r);
    const char *lines[] = {
        "config: x.yaml\n",
        "  kv_cache.layout                    vectorized_5d          x.yaml:2:3\n",
        "  kv_cache.page_size                 64                     default (vectorized_5d)\n",
        "  model.layers                       4                      default (preset tiny)\n",
        "      why: auto: the only compatible kv_layout plugin of 3\n",
        "      rejected fx_kv_nhd (rank 10): it is layout nhd, not kv_cache.layout vectorized_5d\n",
        "      rejected fx_attn_nhd (rank 20): it reads nhd only, not kv_cache.layout vectorized_5d\n",
        "      passed over fx_linear_b (rank 5): compatible, ranked after the choice\n",
        "  kv_cache.page_size: 64 (default (vectorized_5d)), X = 8\n",
        "result: ok\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        ck_assert_msg(strstr(text, lines[i]) != NULL, "explain lacks\n%s\nin\n%s", lines[i], text);
    free(text);
    composed_free(&r);
}
END_TEST

START_TEST(show_after_composition_round_trips)
{
    composed r = compose_text("s.yaml", "kv_cache:\n  layout: vectorized_5d\n");
    char *text = NULL;
    size_t len = 0;
    sy_error err = {{0}};
    FILE *f = open_memstream(&text, &len);
    ck_assert_int_eq(sy_config_write(r.cfg, SY_FORMAT_YAML, f, &err), SY_OK);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(text, "\n  page_size: 64\n"));
    composed back = compose_text("back.yaml", text);
    expect_count(&back.d, 0);
    for (size_t i = 0; i < sy_config_key_count(); i++) {
        const char *key = sy_config_key_name(i);
        ck_assert_str_eq(sy_config_text(back.cfg, key), sy_config_text(r.cfg, key));
    }
    ck_assert_str_eq(chosen(&back, SY_KIND_KV_LAYOUT), "fx_kv_5d");
    free(text);
    composed_free(&back);
    composed_free(&r);
}
END_TEST

static int is_config(const char *name)
{
    size_t n = strlen(name);
    return (n > 5 && strcmp(name + n - 5, ".yaml") == 0) || (n > 4 && strcmp(name + n - 4, ".ini") == 0);
}

START_TEST(shipped_configs_compose_and_twins_match)
{
    char dir[1024], path[1200];
    source_path("configs", dir, sizeof dir);
    static const char *const files[] = {
        "default.yaml", "default.ini", "gpt-oss-20b-nhd.yaml", "gpt-oss-20b-nhd.ini", "gpt-oss-20b-vectorized_5d.yaml",
        "gpt-oss-20b-vectorized_5d-fp8.yaml", "gpt-oss-20b-separated.yaml", "gpt-oss-20b-fused-pad.yaml",
        "gpt-oss-120b-nhd.yaml", "gpt-oss-120b-vectorized_5d.yaml", "gpt-oss-120b-vectorized_5d-fp8.yaml",
        "gpt-oss-120b-vectorized_5d-fp8.ini", "gpt-oss-120b-separated.yaml", "gpt-oss-120b-fused-pad.yaml"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        ck_assert(is_config(files[i]));
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        sy_diags d = {0};
        static const char *const no_env[] = {NULL};
        sy_config_options o = {0};
        o.envp = no_env;
        sy_config *c = sy_config_load_file(path, &o, &d);
        ck_assert_msg(c != NULL, "%s", path);
        sy_composition *comp = sy_compose(reg, c, &d);
        if (d.n)
            print_diags(&d);
        ck_assert_msg(d.n == 0 && sy_composition_ok(comp), "%s does not compose", files[i]);
        /* Each file says what it is for. */
        FILE *f = fopen(path, "r");
        char first[256] = "";
        ck_assert_ptr_nonnull(fgets(first, sizeof first, f));
        fclose(f);
        ck_assert_msg((first[0] == '#' || first[0] == ';') && strlen(first) > 20, "%s has no comment line", files[i]);
        size_t n = strlen(files[i]);
        if (strcmp(files[i] + n - 4, ".ini") == 0) {
            snprintf(path, sizeof path, "%s/%.*s.yaml", dir, (int)(n - 4), files[i]);
            sy_config *twin = sy_config_load_file(path, &o, &d);
            ck_assert_ptr_nonnull(twin);
            sy_composition_free(sy_compose(reg, twin, &d));
            for (size_t k = 0; k < sy_config_key_count(); k++) {
                const char *key = sy_config_key_name(k);
                ck_assert_msg(strcmp(sy_config_text(twin, key), sy_config_text(c, key)) == 0, "%s: %s differs",
                              files[i], key);
            }
            sy_config_free(twin);
        }
        sy_composition_free(comp);
        sy_config_free(c);
        sy_diags_free(&d);
    }
}
END_TEST

/* The command: exit status 0 / 1 and GNU diagnostics on stderr. */
START_TEST(cli_check_exit_status_and_stderr)
{
    char cfg[1024], dir[64], errfile[128], cmd[4096];
    const char *build = getenv("SY_BUILD_DIR");
    ck_assert_ptr_nonnull(build);
    source_path("configs/default.yaml", cfg, sizeof cfg);
    temp_dir(dir, sizeof dir);
    snprintf(errfile, sizeof errfile, "%s/stderr", dir);
    /* A clean environment: an SGLang variable in the caller's shell would add a warning. */
    const char *clean = "env -u SGLANG_AITER_KV_CACHE_LAYOUT -u SGLANG_KV_CACHE_LAYOUT -u SGLANG_USE_AITER_MOE_GU_ITLV "
                        "-u SGLANG_AITER_FUSE_RMSNORM_PAD -u SGLANG_FUSE_RMSNORM_PAD SWITCHYARD_PLUGIN_PATH=";
    snprintf(cmd, sizeof cmd, "%s %s/bin/switchyard config check --plugin-path %s %s >/dev/null 2>%s", clean, build,
             getenv("SY_CONFIG_FIXTURE_DIR"), cfg, errfile);
    int st = system(cmd);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);

    snprintf(cmd, sizeof cmd,
             "%s %s/bin/switchyard config check --plugin-path %s --set kv_cache.layuot=nhd --set=parallel.tp=0 %s "
             ">/dev/null 2>%s",
             clean, build, getenv("SY_CONFIG_FIXTURE_DIR"), cfg, errfile);
    st = system(cmd);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 1);
    FILE *f = fopen(errfile, "r");
    char text[4096] = "";
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    ck_assert_str_eq(text, "--set:1:1: error: unknown key 'kv_cache.layuot'; did you mean 'kv_cache.layout'?\n"
                           "--set:2:13: error: parallel.tp: 0 is out of range 1..64\n");
    unlink(errfile);
    rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("config_compose");
    TCase *t = tcase_create("compose");
    tcase_add_unchecked_fixture(t, open_fixtures, close_fixtures);
    tcase_add_test(t, default_config_composes);
    tcase_add_test(t, rule1_vectorized_5d_default_page_and_x);
    tcase_add_test(t, rule1_fails_on_page_size_and_head_dim);
    tcase_add_test(t, rule2_fp8_needs_scales_and_fp8_attention);
    tcase_add_test(t, rule3_attention_reads_the_layout);
    tcase_add_test(t, rule3_fused_rope_kv_write);
    tcase_add_test(t, rule4_fused_add_rmsnorm_pad);
    tcase_add_test(t, rule5_max_tp_bounds_parallel_tp);
    tcase_add_test(t, rule6_fused_qkv_linear);
    tcase_add_test(t, rule7_prefill_paged);
    tcase_add_loop_test(t, match_refusals_name_plugin_reason_and_key, 0, (int)(sizeof refusals / sizeof refusals[0]));
    tcase_add_test(t, explicit_choices_are_never_fallbacks);
    tcase_add_test(t, explain_lists_keys_slots_and_reasons);
    tcase_add_test(t, show_after_composition_round_trips);
    tcase_add_test(t, shipped_configs_compose_and_twins_match);
    tcase_add_test(t, cli_check_exit_status_and_stderr);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return run_suite(suite());
}
