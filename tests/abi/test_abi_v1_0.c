/* ABI 1.0 compatibility of the current host and headers:
 *  - the current headers keep every member of every 1.0 struct at its 1.0 offset (and no struct
 *    shrinks) and every 1.0 constant at its value: asserts generated from the frozen headers
 *    (tests/fixtures/abi-v1.0) are compiled here against the current ones;
 *  - a plugin built against the frozen headers alone loads, initializes with the host API, runs
 *    its op correctly, and serves as the linear slot of a whole engine run. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "switchyard/switchyard.h"
#include "sy_test.h"

/* Generated at build time; a moved member or a changed value stops this file from compiling. */
#include "frozen_v1_0_constants.h"
#include "frozen_v1_0_layout.h"

static size_t count_asserts(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char line[1024];
    size_t n = 0;
    while (fgets(line, sizeof line, f))
        n += strncmp(line, "SY_STATIC_ASSERT(", 17) == 0;
    fclose(f);
    return n;
}

/* The asserts above are only worth something if the generators found the structs and enums. */
START_TEST(frozen_checks_cover_the_abi)
{
    size_t members = count_asserts(SY_FROZEN_LAYOUT_H), constants = count_asserts(SY_FROZEN_CONSTANTS_H);
    printf("%zu member offsets and struct sizes, %zu constants of ABI 1.0 checked at compile time\n", members,
           constants);
    ck_assert_uint_ge(members, 300);
    ck_assert_uint_ge(constants, 60);
}
END_TEST

/* A host API whose workspace comes from malloc, counted. */
typedef struct test_host {
    int live_workspaces;
} test_host;

static sy_status ws_alloc(void *host, size_t bytes, void **ptr, sy_error *err)
{
    (void)err;
    *ptr = malloc(bytes);
    ((test_host *)host)->live_workspaces++;
    return *ptr ? SY_OK : SY_E_NOMEM;
}

static void ws_free(void *host, void *ptr)
{
    ((test_host *)host)->live_workspaces--;
    free(ptr);
}

static void host_log(void *host, int32_t level, const char *msg)
{
    (void)host;
    (void)level;
    (void)msg;
}

static sy_registry *fixture_registry(const char *dir)
{
    const char *dirs[] = {dir};
    sy_registry_options o = {0};
    o.struct_size = sizeof o;
    o.plugin_paths = dirs;
    o.n_plugin_paths = 1;
    o.skip_environment = 1;
    o.skip_default_dir = 1;
    sy_registry *reg = NULL;
    sy_error err = {{0}};
    ck_assert_msg(sy_registry_open(&o, &reg, &err) == SY_OK, "%s", err.msg);
    return reg;
}

static uint16_t bf16_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

static double bf16_value(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Every 1.0 descriptor, caps record and ops table, of every kind, and a 1.0 backend descriptor. */
START_TEST(host_loads_every_v1_0_kind)
{
    sy_registry *reg = fixture_registry(SY_ABI_KINDS_DIR);
    size_t loaded = 0;
    for (size_t i = 0; i < sy_registry_count(reg); i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        ck_assert_msg(e->stage == SY_STAGE_NONE, "%s: rejected at stage %s: %s", e->file, sy_stage_name(e->stage),
                      e->reason);
        loaded++;
    }
    ck_assert_uint_eq(loaded, SY_KIND_LINEAR + 1);
    for (int32_t kind = SY_KIND_KV_LAYOUT; kind <= SY_KIND_LINEAR; kind++) {
        char name[32];
        snprintf(name, sizeof name, "v1_0_%s", sy_kind_name(kind));
        const sy_registry_entry *e = sy_registry_find(reg, kind, name, "cpu");
        ck_assert_msg(e != NULL, "no %s plugin %s", sy_kind_name(kind), name);
        ck_assert_uint_eq(e->plugin->abi_minor, 0);
    }
    const sy_registry_entry *be = sy_registry_find_backend(reg, "v1_0_device");
    ck_assert_ptr_nonnull(be);
    ck_assert_uint_eq(be->backend->abi_minor, 0);
    ck_assert_int_eq(be->probe_score, 7);
    sy_registry_close(reg);
}
END_TEST

START_TEST(host_loads_and_runs_v1_0_plugin)
{
    sy_registry *reg = fixture_registry(SY_ABI_FIXTURE_DIR);
    const sy_registry_entry *e = sy_registry_find(reg, SY_KIND_LINEAR, "fixture_v1_0_linear", "cpu");
    if (!e) {
        for (size_t i = 0; i < sy_registry_count(reg); i++)
            fprintf(stderr, "%s: %s: %s\n", sy_registry_get(reg, i)->file,
                    sy_stage_name(sy_registry_get(reg, i)->stage), sy_registry_get(reg, i)->reason);
        ck_abort_msg("the 1.0 fixture did not load from %s", SY_ABI_FIXTURE_DIR);
    }
    ck_assert_int_eq(e->stage, SY_STAGE_NONE);
    const sy_plugin_desc *d = e->plugin;
    ck_assert_uint_eq(d->abi_major, 1);
    ck_assert_uint_eq(d->abi_minor, 0);
    ck_assert_uint_le(d->struct_size, sizeof(sy_plugin_desc));
    ck_assert_str_eq(d->description, "built against the frozen ABI 1.0 headers");
    const sy_linear_caps *caps = d->caps;
    ck_assert_uint_eq(caps->act_dtypes, SY_DTYPE_BIT(SY_DTYPE_F32));
    ck_assert_uint_eq(caps->has_bias, 1);

    test_host th = {0};
    sy_host_api host = {0};
    host.struct_size = sizeof host;
    host.abi_major = SY_ABI_MAJOR;
    host.abi_minor = SY_ABI_MINOR;
    host.host = &th;
    host.log = host_log;
    host.workspace_alloc = ws_alloc;
    host.workspace_free = ws_free;
    void *ctx = NULL;
    sy_error err = {{0}};
    ck_assert_msg(sy_registry_init_plugin(e, &host, &ctx, &err) == SY_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(ctx);
    ck_assert_int_eq(th.live_workspaces, 1);

    sy_rng rng = {sy_test_seed()};
    const sy_linear_ops *ops = d->ops;
    for (int bf16_weights = 0; bf16_weights < 2; bf16_weights++) {
        int64_t M = 3 + sy_rng_below(&rng, 7), K = 29 + sy_rng_below(&rng, 40), N = 5 + sy_rng_below(&rng, 30);
        int64_t ldx = K + 3; /* rows of a wider buffer, as the engine passes for the router */
        float *x = malloc(sizeof(float) * (size_t)(M * ldx)), *wf = malloc(sizeof(float) * (size_t)(N * K));
        float *b = malloc(sizeof(float) * (size_t)N), *y = malloc(sizeof(float) * (size_t)(M * N));
        uint16_t *wh = malloc(sizeof(uint16_t) * (size_t)(N * K));
        double *ref = malloc(sizeof(double) * (size_t)(M * N));
        sy_fill_uniform_f32(&rng, x, (size_t)(M * ldx), -2.0f, 2.0f);
        sy_fill_uniform_f32(&rng, wf, (size_t)(N * K), -1.0f, 1.0f);
        sy_fill_uniform_f32(&rng, b, (size_t)N, -0.5f, 0.5f);
        for (int64_t i = 0; i < N * K; i++)
            wh[i] = bf16_of(wf[i]);
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                double acc = b[n];
                for (int64_t k = 0; k < K; k++)
                    acc += (double)x[m * ldx + k] * (bf16_weights ? bf16_value(wh[n * K + k]) : (double)wf[n * K + k]);
                ref[m * N + n] = acc;
            }
        sy_poison_f32(y, (size_t)(M * N));
        sy_linear_args a = {0};
        a.struct_size = sizeof a;
        int64_t sx[2] = {M, K}, sw[2] = {N, K}, sy[2] = {M, N};
        a.x = sy_tensor_contiguous(x, SY_DTYPE_F32, 2, sx);
        a.x.stride[0] = ldx;
        a.w = sy_tensor_contiguous(bf16_weights ? (void *)wh : (void *)wf, bf16_weights ? SY_DTYPE_BF16 : SY_DTYPE_F32,
                                   2, sw);
        a.b = sy_tensor_contiguous(b, SY_DTYPE_F32, 1, &N);
        a.y = sy_tensor_contiguous(y, SY_DTYPE_F32, 2, sy);
        ck_assert_msg(ops->linear(ctx, NULL, &a, &err) == SY_OK, "%s", err.msg);
        double rel = sy_rel_l2_f32(y, ref, (size_t)(M * N));
        ck_assert_msg(rel < 1e-6, "M %lld K %lld N %lld %s weights: rel L2 %g", (long long)M, (long long)K,
                      (long long)N, bf16_weights ? "bf16" : "f32", rel);
        /* An args struct from a future host is larger; one smaller than 1.0 is refused with a reason. */
        a.struct_size = 8;
        ck_assert_int_eq(ops->linear(ctx, NULL, &a, &err), SY_E_INVALID);
        ck_assert_ptr_nonnull(strstr(err.msg, "struct_size 8"));
        free(x);
        free(wf);
        free(wh);
        free(b);
        free(y);
        free(ref);
    }
    d->fini(ctx);
    ck_assert_int_eq(th.live_workspaces, 0);
    sy_registry_close(reg);
}
END_TEST

/* The whole engine with the 1.0 plugin in its linear slot: chosen by name, found through the
 * plugin path, and called for every projection. */
START_TEST(engine_runs_with_v1_0_plugin)
{
    static const char config[] = "backend: cpu\nmodel:\n  preset: tiny\n  dtype: f32\nlinear:\n"
                                 "  plugin: fixture_v1_0_linear\nworkload:\n  batch: 2\n  input_len: 9\n"
                                 "  output_len: 3\n  warmup: 0\n  repeat: 1\n";
    const char *paths[] = {SY_ABI_FIXTURE_DIR};
    sy_engine_open_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.plugin_paths = paths;
    o.n_plugin_paths = 1;
    sy_engine_handle *h = NULL;
    sy_error err = {{0}};
    unsetenv("SWITCHYARD_PLUGIN_PATH");
    ck_assert_msg(sy_engine_open_string(config, strlen(config), SY_CONFIG_TEXT_YAML, "abi.yaml", &o, &h, &err) == SY_OK,
                  "%s", err.msg);
    const sy_engine_info *info = sy_engine_get_info(h);
    ck_assert_int_eq(info->slots[5].kind, SY_KIND_LINEAR);
    ck_assert_str_eq(info->slots[5].plugin, "fixture_v1_0_linear");
    ck_assert_msg(sy_engine_run_workload(h, &err) == SY_OK, "%s", err.msg);
    sy_engine_metrics m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    ck_assert_int_eq(sy_engine_get_metrics(h, &m, &err), SY_OK);
    /* Per layer one q/k/v linear (linear.fuse_qkv: a 1.0 linear plugin is just called with more
     * columns), o and the router, then one lm_head GEMM over the batch: 4 layers, 3 forwards. */
    ck_assert_uint_eq(info->fused_qkv, 1);
    ck_assert_uint_eq(m.op_calls[SY_KIND_LINEAR], (4 * 3 + 1) * 3);
    for (size_t i = 0; i < (size_t)m.batch * m.output_len; i++)
        ck_assert_uint_lt(m.tokens[i], info->vocab);
    sy_engine_close(h);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("abi_v1_0");
    TCase *tc = tcase_create("abi_v1_0");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, frozen_checks_cover_the_abi);
    tcase_add_test(tc, host_loads_every_v1_0_kind);
    tcase_add_test(tc, host_loads_and_runs_v1_0_plugin);
    tcase_add_test(tc, engine_runs_with_v1_0_plugin);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
