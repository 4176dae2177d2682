/* The GPU variants of moe_mxfp4_interleave, moe_mxfp4_separated, norm_rmsnorm and linear (and, on
 * cuda, linear_tiled: the hip library's kernel) against their cpu twins, through the plugin ABI on
 * device memory, on fresh random inputs. Built once per enabled toolkit with SY_TEST_GPU_BACKEND
 * naming the backend; where its probe returns 0 the device cases are skipped with
 * "skipped: no GPU (reason)" and only the descriptor cases run.
 *
 * Every device case prints one PASS / FAIL line per comparison:
 *   moe prepare   the device-prepared buffer equals the host-prepared one byte for byte (both layouts;
 *                 on CUDA with each group of codes in the tensor-core order, moe_layout.h)
 *   moe route     the same expert ids (ties to the lower id, signed zeros tied, NaN last), weights
 *                 within 1e-6 relative L2; at the forward's shapes and at route-only ones (experts
 *                 past a warp of 32 and not a multiple of it, k up to 32, one expert, 1024 experts)
 *   moe forward   within 2e-5 (f32) / 5e-3 (bf16) of the cpu twin, INTERLEAVE and SEPARATED equal bit
 *                 for bit, a repeated run equal bit for bit, the first 7 tokens run alone equal bit
 *                 for bit, a buffer of the other layout (and on CUDA a host-prepared one) giving NaN;
 *                 small shapes also against a double-precision gpt-oss MoE
 *   norm          out within 1e-6 (f32) / 1e-3 (bf16), residual_out bit for bit, the padding zero
 *   linear        within 1e-5 (f32 y; 3e-5 for f32 x on bf16 weights) / 4e-3 (bf16 y) of the cpu twin
 *                 and of a double reference
 * The shapes are gpt-oss-120b's (hidden 2880 padded to 3072, intermediate 2880, 128 experts top-4
 * at 8 and 128 tokens; add+RMSNorm+pad of 128 and 16384 rows; the attention and router
 * projections) and odd small ones. Runs without fork: a GPU runtime initialized in a parent is
 * unusable in its forked children.
 *
 * Built with SY_CHECK_EMULATED (check_moe_norm_linear_emu32 / _emu64), the program links the GPU
 * MoE, norm and linear plugins' ops, their kernels compiled as C++ for tests/gpu's CPU emulator at
 * a warp width of 32 (the CUDA build's tensor-core MoE product, on emulated fragments) or 64 (the
 * HIP build's CUDA-core product), with the linear as the hip library's tiled kernel (cuBLAS does
 * not emulate), and runs the cases small enough for it (EMULATED_WORK) against the cpu twins from
 * the build tree: the same checks, on a machine without a GPU. */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef SY_CHECK_EMULATED
#include "check_emu_backend.h"
#endif
#include "moe_checkpoint.h"
#include "moe_layout.h"
#include "mxfp4_bf16_pairs.h"
#include "switchyard/switchyard.h"
#include "sy_numeric.h"
#include "sy_test.h"

#ifndef SY_TEST_GPU_BACKEND
#error "SY_TEST_GPU_BACKEND must name the backend under test (\"cuda\" or \"hip\")"
#endif

enum { F32 = SY_DTYPE_F32, BF16 = SY_DTYPE_BF16 };

static sy_registry *registry;
static const sy_registry_entry *backend_entry;
static const sy_backend_desc *backend;
static void *bctx;
static sy_host_api gpu_host;
static uint64_t seed;

/* ------------------------------------------------------------------------------------------ */
/* set-up and device helpers                                                                   */

/* The build tree's plugins folder, found from this executable (build/tests/). */
static void open_registry(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "cannot read /proc/self/exe\n");
        exit(1);
    }
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    static char plugins_dir[PATH_MAX + 32];
    snprintf(plugins_dir, sizeof plugins_dir, "%s/../lib/switchyard/plugins", exe);
    static const char *paths[1];
    paths[0] = plugins_dir;
    sy_registry_options opts = {0};
    opts.struct_size = sizeof opts;
    opts.plugin_paths = paths;
    opts.n_plugin_paths = 1;
    opts.allow_insecure = 1; /* the build tree's permissions are the builder's business */
    sy_error err = {{0}};
    if (sy_registry_open(&opts, &registry, &err) != SY_OK) {
        fprintf(stderr, "sy_registry_open: %s\n", err.msg);
        exit(1);
    }
#ifdef SY_CHECK_EMULATED
    backend = &sy_check_emu_backend;
#else
    backend_entry = sy_registry_find_backend(registry, SY_TEST_GPU_BACKEND);
    if (!backend_entry) {
        fprintf(stderr, "backend '%s' is not loaded from %s\n", SY_TEST_GPU_BACKEND, plugins_dir);
        exit(1);
    }
    backend = backend_entry->backend;
#endif
}

static sy_status workspace_alloc(void *host, size_t bytes, void **ptr, sy_error *err)
{
    (void)host;
    return backend->alloc(bctx, bytes, ptr, err);
}

static void workspace_free(void *host, void *ptr)
{
    (void)host;
    backend->free(bctx, ptr);
}

static void device_setup(void)
{
    sy_error err = {{0}};
    ck_assert_msg(backend->init(0, &bctx, &err) == SY_OK, "init(0): %s", err.msg);
    memset(&gpu_host, 0, sizeof gpu_host);
    gpu_host.struct_size = sizeof gpu_host;
    gpu_host.abi_major = SY_ABI_MAJOR;
    gpu_host.abi_minor = SY_ABI_MINOR;
    gpu_host.backend = backend;
    gpu_host.backend_ctx = bctx;
    gpu_host.workspace_alloc = workspace_alloc;
    gpu_host.workspace_free = workspace_free;
}

static void device_teardown(void)
{
    backend->fini(bctx);
    bctx = NULL;
}

static void sync_device(void)
{
    sy_error err = {{0}};
    ck_assert_msg(backend->stream_sync(bctx, NULL, &err) == SY_OK, "stream_sync: %s", err.msg);
}

/* A device buffer filled with 0xFF bytes (NaN in f32 and bf16), or a copy of host bytes. */
static void *dev_buffer(const void *host, size_t bytes)
{
    sy_error err = {{0}};
    void *p = NULL;
    ck_assert_msg(backend->alloc(bctx, bytes ? bytes : 1, &p, &err) == SY_OK, "alloc(%zu): %s", bytes, err.msg);
    if (host)
        ck_assert_msg(backend->memcpy_async(bctx, NULL, p, host, bytes, SY_MEMCPY_H2D, &err) == SY_OK, "upload: %s",
                      err.msg);
    else
        ck_assert_msg(backend->memset_async(bctx, NULL, p, 0xFF, bytes, &err) == SY_OK, "poison: %s", err.msg);
    sync_device();
    return p;
}

static void download(void *host, const void *dev, size_t bytes)
{
    sy_error err = {{0}};
    ck_assert_msg(backend->memcpy_async(bctx, NULL, host, dev, bytes, SY_MEMCPY_D2H, &err) == SY_OK, "download: %s",
                  err.msg);
    sync_device();
}

static void dev_free(void *p)
{
    backend->free(bctx, p);
}

#ifdef SY_CHECK_EMULATED
/* The GPU MoE plugins' ops, linked in (plugins/common/moe_mxfp4_gpu.cuh built for the emulator). */
extern const sy_moe_ops sy_moe_mxfp4_gpu_ops;
sy_status sy_moe_mxfp4_gpu_init(const sy_host_api *host, uint32_t gate_up_layout, void **ctx, sy_error *err);
void sy_moe_mxfp4_gpu_fini(void *ctx);

static sy_status emu_moe_interleave_init(const sy_host_api *host, void **ctx, sy_error *err)
{
    return sy_moe_mxfp4_gpu_init(host, SY_MOE_GATE_UP_INTERLEAVE, ctx, err);
}

static sy_status emu_moe_separated_init(const sy_host_api *host, void **ctx, sy_error *err)
{
    return sy_moe_mxfp4_gpu_init(host, SY_MOE_GATE_UP_SEPARATED, ctx, err);
}

/* plugins/norm_rmsnorm/gpu.cu and plugins/linear/gpu.cu, whose "linear" is the tiled kernel outside
 * CUDA builds: the hip library's linear. */
extern const sy_norm_ops sy_norm_rmsnorm_gpu_ops;
extern const sy_linear_ops sy_linear_gpu_ops;
sy_status sy_linear_gpu_init(const sy_host_api *host, void **ctx, sy_error *err);
void sy_linear_gpu_fini(void *ctx);

static const sy_plugin_desc emu_plugins[] = {
    {.kind = SY_KIND_MOE, .name = "moe_mxfp4_interleave", .backend = "emu", .ops = &sy_moe_mxfp4_gpu_ops,
     .init = emu_moe_interleave_init, .fini = sy_moe_mxfp4_gpu_fini},
    {.kind = SY_KIND_MOE, .name = "moe_mxfp4_separated", .backend = "emu", .ops = &sy_moe_mxfp4_gpu_ops,
     .init = emu_moe_separated_init, .fini = sy_moe_mxfp4_gpu_fini},
    {.kind = SY_KIND_NORM, .name = "norm_rmsnorm", .backend = "emu", .ops = &sy_norm_rmsnorm_gpu_ops},
    {.kind = SY_KIND_LINEAR, .name = "linear", .backend = "emu", .ops = &sy_linear_gpu_ops,
     .init = sy_linear_gpu_init, .fini = sy_linear_gpu_fini},
};
#endif

static const sy_plugin_desc *plugin(int32_t kind, const char *name, const char *backend_name)
{
#ifdef SY_CHECK_EMULATED
    if (strcmp(backend_name, "cpu") != 0) {
        for (size_t i = 0; i < sizeof emu_plugins / sizeof emu_plugins[0]; i++)
            if ((int32_t)emu_plugins[i].kind == kind && strcmp(emu_plugins[i].name, name) == 0)
                return &emu_plugins[i];
        ck_abort_msg("plugin %s is not built for the emulator", name);
    }
#endif
    const sy_registry_entry *e = sy_registry_find(registry, kind, name, backend_name);
    ck_assert_msg(e != NULL, "plugin %s (%s) is not loaded", name, backend_name);
    return e->plugin;
}

/* cpu twins run with no host API (their scratch then comes from the C heap). */
static void *plugin_init(const sy_plugin_desc *d)
{
    void *ctx = NULL;
    sy_error err = {{0}};
    if (d->init)
        ck_assert_msg(d->init(strcmp(d->backend, "cpu") ? &gpu_host : NULL, &ctx, &err) == SY_OK, "%s (%s) init: %s",
                      d->name, d->backend, err.msg);
    return ctx;
}

static void plugin_fini(const sy_plugin_desc *d, void *ctx)
{
    if (d->fini)
        d->fini(ctx);
}

#ifdef SY_CHECK_EMULATED
static const int emulated = 1;
#else
static const int emulated = 0;
#endif
/* The emulated build runs the cases of at most this much work (multiply-adds, or elements for the
 * norm): its instructions take nanoseconds and its tensor-core ones microseconds each. */
#define EMULATED_WORK 3e7

/* Fills `selected` with the indices of the `count` cases this build runs, in order: every case on a
 * GPU, those whose work(i) is at most EMULATED_WORK on the emulator; returns how many. */
static int select_cases(int count, double (*work)(int), int *selected)
{
    int n = 0;
    for (int i = 0; i < count; i++)
        if (!emulated || work(i) <= EMULATED_WORK)
            selected[n++] = i;
    return n;
}

/* One line per comparison, then the assertion. */
static void verdict(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void verdict(int ok, const char *fmt, ...)
{
    char line[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    printf("%s %s\n", ok ? "PASS" : "FAIL", line);
    fflush(stdout);
    ck_assert_msg(ok, "%s (SY_TEST_SEED=%llu)", line, (unsigned long long)seed);
}

/* ------------------------------------------------------------------------------------------ */
/* values                                                                                      */

static void *random_values(sy_rng *rng, int32_t dtype, size_t n, float lo, float hi)
{
    void *p = malloc(n * sy_dtype_size(dtype) + 1);
    for (size_t i = 0; i < n; i++) {
        float v = (float)sy_rng_range(rng, lo, hi);
        if (dtype == BF16)
            ((uint16_t *)p)[i] = sy_f32_to_bf16(v);
        else
            ((float *)p)[i] = v;
    }
    return p;
}

static double value_at(const void *p, int32_t dtype, size_t i)
{
    return dtype == BF16 ? sy_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

/* Relative L2 of `test` against `ref`, both of `dtype`, over rows x cols with the given strides. */
static double rel_l2(const void *test, const void *ref, int32_t dtype, int64_t rows, int64_t cols, int64_t stride)
{
    double num = 0, den = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            double t = value_at(test, dtype, (size_t)(r * stride + c)), f = value_at(ref, dtype, (size_t)(r * stride + c));
            if (isnan(t) && !isnan(f))
                return INFINITY;
            num += (t - f) * (t - f);
            den += f * f;
        }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* The same against a double reference [rows][cols]. */
static double rel_l2_double(const void *test, int32_t dtype, int64_t rows, int64_t cols, int64_t stride,
                            const double *ref)
{
    double num = 0, den = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            double t = value_at(test, dtype, (size_t)(r * stride + c)), f = ref[r * cols + c];
            if (isnan(t))
                return INFINITY;
            num += (t - f) * (t - f);
            den += f * f;
        }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static sy_tensor matrix(void *p, int32_t dtype, int64_t rows, int64_t cols, int64_t stride)
{
    int64_t shape[2] = {rows, cols};
    sy_tensor t = sy_tensor_contiguous(p, dtype, 2, shape);
    t.stride[0] = stride;
    return t;
}

static sy_tensor vector(void *p, int32_t dtype, int64_t n)
{
    int64_t shape[1] = {n};
    return sy_tensor_contiguous(p, dtype, 1, shape);
}

static const char *dtype_tag(int32_t dtype)
{
    return dtype == BF16 ? "bf16" : "f32";
}

/* ------------------------------------------------------------------------------------------ */
/* descriptors (no device needed)                                                              */

START_TEST(test_descriptors_match_the_cpu_twins)
{
    const struct {
        int32_t kind;
        const char *name;
        size_t caps_size;
    } twins[] = {{SY_KIND_MOE, "moe_mxfp4_interleave", sizeof(sy_moe_caps)},
                 {SY_KIND_MOE, "moe_mxfp4_separated", sizeof(sy_moe_caps)},
                 {SY_KIND_NORM, "norm_rmsnorm", sizeof(sy_norm_caps)},
                 {SY_KIND_LINEAR, "linear", sizeof(sy_linear_caps)}};
    for (size_t i = 0; i < sizeof twins / sizeof twins[0]; i++) {
        const sy_plugin_desc *gpu = plugin(twins[i].kind, twins[i].name, SY_TEST_GPU_BACKEND);
        const sy_plugin_desc *cpu = plugin(twins[i].kind, twins[i].name, "cpu");
        ck_assert_str_eq(gpu->backend, SY_TEST_GPU_BACKEND);
        ck_assert_ptr_ne(gpu->ops, cpu->ops);
        /* The GPU versions do everything their twins declare, and declare nothing more. */
        ck_assert_msg(memcmp(gpu->caps, cpu->caps, twins[i].caps_size) == 0, "%s: caps differ from the cpu twin's",
                      twins[i].name);
        ck_assert_int_eq(gpu->rank, cpu->rank);
    }
    if (strcmp(SY_TEST_GPU_BACKEND, "cuda") == 0) {
        const sy_plugin_desc *tiled = plugin(SY_KIND_LINEAR, "linear_tiled", "cuda");
        ck_assert_int_lt(tiled->rank, 0);
    }
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* moe                                                                                         */

/* Whether the build under test runs the tensor-core product, which prepares each group of codes in
 * its own order (moe_layout.h) and refuses a buffer prepared on the host. */
static int moe_tensor_cores(void)
{
#ifdef SY_CHECK_EMULATED
    return SY_EMU_WARP_SIZE == 32;
#else
    return strcmp(SY_TEST_GPU_BACKEND, "cuda") == 0;
#endif
}

static const char *const moe_names[2] = {"moe_mxfp4_interleave", "moe_mxfp4_separated"};

typedef struct moe_case {
    uint32_t E, H, I, k, T;
    int double_reference; /* small enough for the double-precision model */
    float alpha, limit;   /* the SwiGLU's */
    /* Rows of x far from 1 (times 2^-64 and 2^-130, zero rows, and in bf16 times 16): each staged
     * row of the CUDA product takes its own power of two, which its sums are scaled back by. Only
     * where the clamp bounds act, so that no row's output outweighs the others' in the relative
     * error. Large rows only in bf16, whose tolerance is its rounding's: act changes over a few
     * units near the clamp's corners, where a large row's pre-activations carry the rounding of
     * large terms, so act differs from the cpu twin's by more than f32's 1e-5 allows (rows times 16
     * took f32 cases to 1.0-2.3e-5 on the H200, times 2^64 to 8e-3). */
    int far_rows;
} moe_case;

static const moe_case MOE_CASES[] = {
    {128, 2880, 2880, 4, 8, 0, 1.702f, 7.0f, 1},   /* gpt-oss-120b, decode */
    {128, 2880, 2880, 4, 128, 0, 1.702f, 7.0f, 1}, /* gpt-oss-120b, the speed target's batch */
    {5, 736, 608, 3, 37, 1, 1.702f, 7.0f, 1},      /* padded to 768 x 768, not multiples of 512 */
    {3, 32, 32, 2, 5, 1, 1.702f, 7.0f, 1},         /* one MXFP4 block a row */
    {7, 288, 1056, 3, 1, 1, 1.702f, 7.0f, 1},      /* one token; intermediate past one staging chunk */
    {4, 64, 96, 4, 2100, 0, 1.702f, 7.0f, 1},      /* 8400 routed pairs: nine passes of 256 tokens */
    /* k = E: every token routes to every expert, so each expert's pairs are known: 256 a pass
     * (moe_gpu_pass_tokens: 256 pairs an expert), then 12, 30 and 44 in the last pass, the chunk
     * sizes of each of the CUDA wide product's bodies (2, 4 and 6 n-tiles; 2100 above has 52, 8
     * n-tiles). */
    {4, 160, 96, 4, 2060, 0, 1.702f, 7.0f, 1},
    {4, 160, 96, 4, 2078, 0, 1.702f, 7.0f, 1},
    {4, 160, 96, 4, 2092, 0, 1.702f, 7.0f, 1},
    /* A SwiGLU without a bound (alpha 0: g / 2 for any negative g): the CUDA product stages act
     * row by row; and one whose bound is 2^41. */
    {5, 736, 608, 3, 37, 1, 0.0f, 7.0f, 0},
    {5, 736, 608, 3, 37, 1, 1.702f, 1e6f, 0},
    /* The shapes above that the emulator cannot afford, at sizes it can (EMULATED_WORK): padded
     * rows, the unbounded and the far bound; k = E within one pass, whose 76, 94 and 108 pairs an
     * expert make chunks of 64 and 12, 30 or 44 (the wide product's 8 and 2, 4 or 6 n-tile
     * bodies); and k = E past one pass (8400 pairs, nine passes). */
    {5, 224, 160, 3, 37, 1, 1.702f, 7.0f, 1},
    {5, 96, 64, 3, 37, 1, 0.0f, 7.0f, 0},
    {5, 96, 64, 3, 37, 1, 1.702f, 1e6f, 0},
    {3, 32, 32, 3, 76, 1, 1.702f, 7.0f, 1},
    {3, 32, 32, 3, 94, 1, 1.702f, 7.0f, 1},
    {3, 32, 32, 3, 108, 1, 1.702f, 7.0f, 1},
    {4, 32, 32, 4, 2100, 0, 1.702f, 7.0f, 1},
    /* The wide product past one block of k: 9 and 5 blocks (three stages of w13, the last one
     * block; both 64-k halves of a stage's swizzled inputs), chunks of 64 and 6, and slices whose
     * last rows are padding (160 intermediate indices, 288 hidden rows). */
    {3, 288, 160, 3, 70, 1, 1.702f, 7.0f, 1},
};
enum { MOE_CASE_COUNT = sizeof MOE_CASES / sizeof MOE_CASES[0] };

/* Multiply-adds of a case's forward (w13 and w2 over its routed pairs). */
static double moe_case_work(int i)
{
    const moe_case *mc = &MOE_CASES[i];
    return 3.0 * mc->T * mc->k * mc->H * mc->I;
}
/* MOE_CASES' indices that this build runs, in order (select_cases). */
static int moe_selected[MOE_CASE_COUNT], moe_selected_count;

/* The checkpoint's tensors on the device. */
typedef struct moe_device_checkpoint {
    void *w13_blocks, *w13_scales, *w13_bias, *w2_blocks, *w2_scales, *w2_bias;
} moe_device_checkpoint;

static moe_device_checkpoint moe_upload(const moe_checkpoint *c)
{
    const size_t n13 = (size_t)c->E * 2 * c->I * (c->H / 32), n2 = (size_t)c->E * c->H * (c->I / 32);
    moe_device_checkpoint d;
    d.w13_blocks = dev_buffer(c->w13_blocks, n13 * 16);
    d.w13_scales = dev_buffer(c->w13_scales, n13);
    d.w13_bias = dev_buffer(c->w13_bias, sizeof(float) * c->E * 2 * c->I);
    d.w2_blocks = dev_buffer(c->w2_blocks, n2 * 16);
    d.w2_scales = dev_buffer(c->w2_scales, n2);
    d.w2_bias = dev_buffer(c->w2_bias, sizeof(float) * c->E * c->H);
    return d;
}

static void moe_device_free(moe_device_checkpoint *d)
{
    void *all[6] = {d->w13_blocks, d->w13_scales, d->w13_bias, d->w2_blocks, d->w2_scales, d->w2_bias};
    for (int i = 0; i < 6; i++)
        dev_free(all[i]);
}

/* gpt-oss MLPBlock in double from the exactly dequantized checkpoint (rows 2i gate, 2i+1 up). */
static double *moe_double_reference(const moe_checkpoint *c, const sy_moe_shape *shape, const float *x, int64_t ldx,
                                    const int32_t *ids, const float *weights, uint32_t T, uint32_t k)
{
    float *w13 = moe_checkpoint_dequant_w13(c), *w2 = moe_checkpoint_dequant_w2(c);
    double *out = calloc((size_t)T * c->H, sizeof(double)), *act = malloc(sizeof(double) * c->I);
    for (uint32_t t = 0; t < T; t++)
        for (uint32_t j = 0; j < k; j++) {
            const uint32_t e = (uint32_t)ids[t * k + j];
            for (uint32_t i = 0; i < c->I; i++) {
                double h[2];
                for (int g = 0; g < 2; g++) {
                    const float *row = w13 + ((size_t)e * 2 * c->I + 2 * i + g) * c->H;
                    h[g] = c->w13_bias[(size_t)e * 2 * c->I + 2 * i + g];
                    for (uint32_t n = 0; n < c->H; n++)
                        h[g] += (double)row[n] * x[t * ldx + n];
                }
                const double limit = shape->swiglu_limit, gate = fmin(h[0], limit), up = fmax(fmin(h[1], limit), -limit);
                act[i] = gate / (1.0 + exp(-(double)shape->swiglu_alpha * gate)) * (up + 1.0);
            }
            for (uint32_t n = 0; n < c->H; n++) {
                const float *row = w2 + ((size_t)e * c->H + n) * c->I;
                double y = c->w2_bias[(size_t)e * c->H + n];
                for (uint32_t i = 0; i < c->I; i++)
                    y += (double)row[i] * act[i];
                out[(size_t)t * c->H + n] += weights[t * k + j] * y;
            }
        }
    free(act);
    free(w13);
    free(w2);
    return out;
}

/* The plugins of both layouts on both backends, each with its prepared buffer. */
typedef struct moe_side {
    const sy_plugin_desc *desc;
    const sy_moe_ops *ops;
    void *ctx, *prepared; /* host buffer for cpu, device buffer for the GPU */
} moe_side;

/* The host-prepared buffer as the GPU prepare must write it: CUDA's tensor-core product takes each
 * 4-byte group of codes in its own order (moe_layout.h), which the header records; HIP keeps the
 * checkpoint's. */
static void moe_expect_gpu_code_order(uint8_t *buf, const sy_moe_shape *shape)
{
    if (!moe_tensor_cores())
        return;
    const sy_moe_dims d = sy_moe_dims_of(shape->num_experts, shape->hidden, shape->intermediate);
    const sy_moe_sections sec = sy_moe_sections_of(&d);
    sy_moe_prepared_header h;
    memcpy(&h, buf + sec.header, sizeof h);
    h.code_order = SY_MOE_CODES_TENSOR_PAIRS;
    memcpy(buf + sec.header, &h, sizeof h);
    const uint64_t starts[2] = {sec.w13_blocks, sec.w2_blocks};
    const uint64_t sizes[2] = {d.experts * sec.w13_expert_bytes, d.experts * sec.w2_expert_bytes};
    for (int m = 0; m < 2; m++)
        for (uint64_t o = starts[m]; o < starts[m] + sizes[m]; o += 4) {
            uint32_t group;
            memcpy(&group, buf + o, 4); /* little-endian, as the device reads it */
            group = sy_e2m1x8_to_pair_order(group);
            memcpy(buf + o, &group, 4);
        }
}

static void moe_prepare_both(const moe_case *mc, const moe_checkpoint *c, const sy_moe_shape *shape,
                             moe_side cpu[2], moe_side gpu[2])
{
    moe_device_checkpoint dev = moe_upload(c);
    uint64_t bytes = 0;
    sy_error err = {{0}};
    for (int l = 0; l < 2; l++) {
        cpu[l].desc = plugin(SY_KIND_MOE, moe_names[l], "cpu");
        gpu[l].desc = plugin(SY_KIND_MOE, moe_names[l], SY_TEST_GPU_BACKEND);
        cpu[l].ops = cpu[l].desc->ops;
        gpu[l].ops = gpu[l].desc->ops;
        cpu[l].ctx = plugin_init(cpu[l].desc);
        gpu[l].ctx = plugin_init(gpu[l].desc);
        ck_assert_msg(gpu[l].ops->prepared_bytes(shape, &bytes, &err) == SY_OK, "%s", err.msg);
        uint64_t cpu_bytes = 0;
        ck_assert_msg(cpu[l].ops->prepared_bytes(shape, &cpu_bytes, &err) == SY_OK, "%s", err.msg);
        ck_assert_uint_eq(bytes, cpu_bytes);

        cpu[l].prepared = malloc(bytes);
        sy_poison_bytes(cpu[l].prepared, bytes);
        sy_moe_prepare_args a = moe_checkpoint_prepare_args(c, shape, cpu[l].prepared);
        ck_assert_msg(cpu[l].ops->prepare(cpu[l].ctx, NULL, &a, &err) == SY_OK, "cpu prepare: %s", err.msg);

        gpu[l].prepared = dev_buffer(NULL, bytes);
        a.w13_blocks.data = dev.w13_blocks;
        a.w13_scales.data = dev.w13_scales;
        a.w13_bias.data = dev.w13_bias;
        a.w2_blocks.data = dev.w2_blocks;
        a.w2_scales.data = dev.w2_scales;
        a.w2_bias.data = dev.w2_bias;
        a.prepared = gpu[l].prepared;
        ck_assert_msg(gpu[l].ops->prepare(gpu[l].ctx, NULL, &a, &err) == SY_OK, "%s prepare: %s", moe_names[l], err.msg);
        uint8_t *back = malloc(bytes), *want = malloc(bytes);
        download(back, gpu[l].prepared, bytes);
        memcpy(want, cpu[l].prepared, bytes);
        moe_expect_gpu_code_order(want, shape);
        uint64_t first = bytes, differing = 0;
        for (uint64_t i = 0; i < bytes; i++)
            if (back[i] != want[i]) {
                first = first < i ? first : i;
                differing++;
            }
        free(back);
        free(want);
        verdict(differing == 0,
                "%s (%s) prepare E%u H%u I%u: %llu bytes, %llu differ from the cpu twin's (first at %lld)",
                moe_names[l], SY_TEST_GPU_BACKEND, mc->E, mc->H, mc->I, (unsigned long long)bytes,
                (unsigned long long)differing, differing ? (long long)first : -1LL);
    }
    moe_device_free(&dev);
}

/* cpu and GPU route of the same logits; the cpu's ids and weights come back for the forward. */
static void moe_route_both(sy_rng *rng, const sy_moe_shape *shape, uint32_t T, const moe_side *cpu,
                           const moe_side *gpu, int32_t *ids, float *weights)
{
    const uint32_t E = shape->num_experts, k = shape->top_k;
    const size_t n = (size_t)T * k;
    float *logits = random_values(rng, F32, (size_t)T * E, -4.0f, 4.0f);
    for (uint32_t t = 0; t < T; t++) {
        float *row = logits + (size_t)t * E;
        /* Ties: the lower id must win on both. */
        if (t % 3 == 0)
            row[E - 1] = row[0];
        /* Signed zeros as the two largest: equal, so the lower id first. */
        if (t % 7 == 2) {
            for (uint32_t e = 0; e < E; e++)
                row[e] = -fabsf(row[e]) - 1.0f;
            row[0] = -0.0f;
            row[E - 1] = 0.0f;
        }
        /* A NaN ranks below every number; with more experts than k it is never chosen. */
        if (t % 5 == 1 && E > k)
            row[t % E] = NAN;
    }
    sy_moe_route_args r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.shape = *shape;
    r.logits = matrix(logits, F32, T, E, E);
    r.topk_ids = matrix(ids, SY_DTYPE_I32, T, k, k);
    r.topk_weights = matrix(weights, F32, T, k, k);
    sy_error err = {{0}};
    ck_assert_msg(cpu->ops->route(cpu->ctx, NULL, &r, &err) == SY_OK, "cpu route: %s", err.msg);

    void *d_logits = dev_buffer(logits, sizeof(float) * T * E);
    void *d_ids = dev_buffer(NULL, sizeof(int32_t) * n), *d_weights = dev_buffer(NULL, sizeof(float) * n);
    r.logits.data = d_logits;
    r.topk_ids.data = d_ids;
    r.topk_weights.data = d_weights;
    ck_assert_msg(gpu->ops->route(gpu->ctx, NULL, &r, &err) == SY_OK, "route: %s", err.msg);
    int32_t *gids = malloc(sizeof(int32_t) * n);
    float *gweights = malloc(sizeof(float) * n);
    double *ref = malloc(sizeof(double) * n);
    download(gids, d_ids, sizeof(int32_t) * n);
    download(gweights, d_weights, sizeof(float) * n);
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        wrong += gids[i] != ids[i];
        ref[i] = weights[i];
    }
    const double rel = sy_rel_l2_f32(gweights, ref, n);
    verdict(wrong == 0 && rel <= 1e-6, "%s (%s) route T%u E%u k%u: %zu ids differ, weights rel L2 %.2e (tol 1e-6)",
            gpu->desc->name, SY_TEST_GPU_BACKEND, T, E, k, wrong, rel);
    dev_free(d_logits);
    dev_free(d_ids);
    dev_free(d_weights);
    free(gids);
    free(gweights);
    free(ref);
    free(logits);
}

/* One forward variant: x of `x_dtype` with `cols` columns (H or Hp) and row stride `ldx`. */
static void moe_forward_variant(sy_rng *rng, const moe_case *mc, const moe_checkpoint *c, const sy_moe_shape *shape,
                                const moe_side *cpu, const moe_side *gpu, const int32_t *ids, const float *weights,
                                int32_t x_dtype, int64_t cols, int64_t ldx, int32_t out_dtype)
{
    const uint32_t T = mc->T, H = mc->H, k = mc->k;
    float *xf = random_values(rng, F32, (size_t)T * ldx, -1.0f, 1.0f);
    for (uint32_t t = 0; t < T; t++) {
        const float far = t % 11 == 6  ? 0.0f
                          : t % 5 == 3 ? (x_dtype == BF16 ? 16.0f : 1.0f)
                          : t % 5 == 4 ? 0x1p-64f
                          : t % 7 == 5 ? 0x1p-130f
                                       : 1.0f;
        for (int64_t n = 0; n < H; n++)
            xf[t * ldx + n] *= mc->far_rows ? far : 1.0f;
        /* Padding columns hold zeros, as the fused norm writes them. */
        for (int64_t n = H; n < cols; n++)
            xf[t * ldx + n] = 0.0f;
    }
    void *x = malloc((size_t)T * ldx * sy_dtype_size(x_dtype));
    for (size_t i = 0; i < (size_t)T * ldx; i++) {
        if (x_dtype == BF16) {
            ((uint16_t *)x)[i] = sy_f32_to_bf16(xf[i]);
            xf[i] = sy_bf16_to_f32(((uint16_t *)x)[i]); /* what both see */
        } else {
            ((float *)x)[i] = xf[i];
        }
    }
    const size_t out_bytes = (size_t)T * H * sy_dtype_size(out_dtype);
    void *ref_out = malloc(out_bytes);
    sy_poison_bytes(ref_out, out_bytes);
    sy_moe_forward_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.shape = *shape;
    a.prepared = cpu[0].prepared;
    a.x = matrix(x, x_dtype, T, cols, ldx);
    a.topk_ids = matrix((void *)ids, SY_DTYPE_I32, T, k, k);
    a.topk_weights = matrix((void *)weights, F32, T, k, k);
    a.out = matrix(ref_out, out_dtype, T, H, H);
    sy_error err = {{0}};
    ck_assert_msg(cpu[0].ops->forward(cpu[0].ctx, NULL, &a, &err) == SY_OK, "cpu forward: %s", err.msg);

    void *d_x = dev_buffer(x, (size_t)T * ldx * sy_dtype_size(x_dtype));
    void *d_ids = dev_buffer(ids, sizeof(int32_t) * T * k), *d_weights = dev_buffer(weights, sizeof(float) * T * k);
    a.x.data = d_x;
    a.topk_ids.data = d_ids;
    a.topk_weights.data = d_weights;
    /* Runs: interleave, separated, interleave again; then buffers that must be refused, or give NaN
     * where the check runs on the device: the interleave plugin on the separated buffer and, on
     * CUDA, on the host-prepared buffer uploaded as it is (codes in the checkpoint's order). */
    enum { RUNS = 5, WRONG_LAYOUT = 3, HOST_ORDER = 4 };
    const int runs = moe_tensor_cores() ? RUNS : HOST_ORDER;
    void *outs[RUNS] = {NULL};
    sy_status refused[RUNS] = {SY_OK};
    for (int run = 0; run < runs; run++) {
        const int plugin_layout = run == 1 ? 1 : 0, buffer_layout = run == 1 || run == WRONG_LAYOUT ? 1 : 0;
        void *d_out = dev_buffer(NULL, out_bytes), *host_order = NULL;
        a.out.data = d_out;
        a.prepared = gpu[buffer_layout].prepared;
        if (run == HOST_ORDER) {
            uint64_t prepared_bytes = 0;
            ck_assert_msg(gpu[0].ops->prepared_bytes(shape, &prepared_bytes, &err) == SY_OK, "%s", err.msg);
            host_order = dev_buffer(cpu[0].prepared, prepared_bytes);
            a.prepared = host_order;
        }
        const sy_status st = gpu[plugin_layout].ops->forward(gpu[plugin_layout].ctx, NULL, &a, &err);
        if (run >= WRONG_LAYOUT)
            refused[run] = st;
        else
            ck_assert_msg(st == SY_OK, "%s forward: %s", moe_names[plugin_layout], err.msg);
        outs[run] = malloc(out_bytes);
        download(outs[run], d_out, out_bytes);
        dev_free(d_out);
        if (host_order)
            dev_free(host_order);
    }
    char what[200];
    snprintf(what, sizeof what, "(%s) forward E%u H%u I%u k%u T%u alpha %g limit %g x %s [%lld cols, stride %lld] out %s",
             SY_TEST_GPU_BACKEND, mc->E, H, mc->I, k, T, (double)mc->alpha, (double)mc->limit, dtype_tag(x_dtype),
             (long long)cols, (long long)ldx, dtype_tag(out_dtype));
    /* f32: the conformance suite's bound for moe forward (docs/conformance.md). The GPU product
     * takes x and act as bf16 high and low planes, each keeping about 2^-17 of a value: 4-5e-6
     * from a double reference at these shapes, and 1.28e-5 at E3 H32 I32 k2 T5 with
     * SY_TEST_SEED=1796517289462493554 (160 outputs: a few outputs near the clamp's corners move
     * the whole relative L2), where the cpu twin is 1.2e-7 from it. */
    /* bf16 (either side): the suite's bf16 bound, 8e-3. With bf16 x the CUDA product rounds act to
     * bf16 for w2, as the gpt-oss reference does: 1.4-4.1e-3 from the cpu twin's f32 act over six
     * seeds of the emulated cases, whose sums of 32 terms average little of that rounding away. */
    const double tol = x_dtype == F32 && out_dtype == F32 ? 2e-5 : 8e-3;
    const double rel = rel_l2(outs[0], ref_out, out_dtype, T, H, H);
    verdict(rel <= tol, "%s %s: rel L2 %.2e against the cpu twin (tol %.0e)", moe_names[0], what, rel, tol);
    verdict(memcmp(outs[0], outs[1], out_bytes) == 0, "interleave and separated %s: equal bit for bit", what);
    verdict(memcmp(outs[0], outs[2], out_bytes) == 0, "%s %s: a repeated run equal bit for bit", moe_names[0], what);
    /* A token's output is a function of its own row: the first few tokens alone (a call with a
     * different chunk plan, and on CUDA the narrow product where the whole call ran the wide one)
     * give the same bits. */
    const uint32_t few = T < 7 ? T : 7;
    if (few < T) {
        void *d_out = dev_buffer(NULL, out_bytes), *out_few = malloc(out_bytes);
        a.x = matrix(d_x, x_dtype, few, cols, ldx);
        a.topk_ids = matrix(d_ids, SY_DTYPE_I32, few, k, k);
        a.topk_weights = matrix(d_weights, F32, few, k, k);
        a.out = matrix(d_out, out_dtype, few, H, H);
        a.prepared = gpu[0].prepared;
        ck_assert_msg(gpu[0].ops->forward(gpu[0].ctx, NULL, &a, &err) == SY_OK, "%s forward: %s", moe_names[0],
                      err.msg);
        const size_t few_bytes = (size_t)few * H * sy_dtype_size(out_dtype);
        download(out_few, d_out, few_bytes);
        verdict(memcmp(outs[0], out_few, few_bytes) == 0, "%s %s: its first %u tokens alone equal bit for bit",
                moe_names[0], what, few);
        dev_free(d_out);
        free(out_few);
    }
    for (int run = WRONG_LAYOUT; run < runs; run++) {
        size_t numbers = 0;
        for (size_t i = 0; i < (size_t)T * H; i++)
            numbers += !isnan(value_at(outs[run], out_dtype, i));
        verdict(refused[run] != SY_OK || numbers == 0, "%s %s on %s: %s, %zu of %zu outputs are not NaN", moe_names[0],
                what, run == WRONG_LAYOUT ? "a separated buffer" : "a host-prepared buffer", refused[run] != SY_OK ? "refused" : "accepted",
                numbers, (size_t)T * H);
    }
    if (mc->double_reference && x_dtype == F32 && out_dtype == F32) {
        double *ref = moe_double_reference(c, shape, xf, ldx, ids, weights, T, k);
        const double rel_d = rel_l2_double(outs[0], out_dtype, T, H, H, ref);
        verdict(rel_d <= tol, "%s %s: rel L2 %.2e against double precision (tol %.0e)", moe_names[0], what, rel_d, tol);
        free(ref);
    }
    for (int run = 0; run < runs; run++)
        free(outs[run]);
    dev_free(d_x);
    dev_free(d_ids);
    dev_free(d_weights);
    free(x);
    free(xf);
    free(ref_out);
}

/* Every row's scale bytes moved by a shift of its own in [lo, hi]: rows then have tops of their own,
 * which the CUDA product scales each row's sums back by (a top taken from the wrong row, or none,
 * puts whole rows off by powers of two). */
static void shift_row_scales(sy_rng *rng, uint8_t *scales, size_t rows, uint32_t per_row, int lo, int hi)
{
    for (size_t r = 0; r < rows; r++) {
        const int shift = lo + (int)sy_rng_below(rng, (uint32_t)(hi - lo + 1));
        for (uint32_t j = 0; j < per_row; j++)
            scales[r * per_row + j] = (uint8_t)((int)scales[r * per_row + j] + shift);
    }
}

START_TEST(test_moe)
{
    const moe_case *mc = &MOE_CASES[moe_selected[_i]];
    sy_rng rng = {seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(_i + 1))};
    /* Scale bytes 122..128 (2^-5 .. 2): pre-activations inside and well past the clamp of 7; then
     * each row shifted, 2^-4 .. 1 on w13's rows and 2^-3 .. 2 on w2's. */
    moe_checkpoint c = moe_checkpoint_random(&rng, mc->E, mc->H, mc->I, 122, 128);
    shift_row_scales(&rng, c.w13_scales, (size_t)mc->E * 2 * mc->I, mc->H / 32, -4, 0);
    shift_row_scales(&rng, c.w2_scales, (size_t)mc->E * mc->H, mc->I / 32, -3, 1);
    for (size_t i = 0; i < (size_t)mc->E * 2 * mc->I; i++)
        c.w13_bias[i] *= 4.0f;
    for (size_t i = 0; i < (size_t)mc->E * mc->H; i++)
        c.w2_bias[i] *= 30.0f;
    const sy_moe_shape shape = {sizeof shape, mc->E, mc->H, mc->I, mc->k, mc->alpha, mc->limit, 0};
    moe_side cpu[2], gpu[2];
    moe_prepare_both(mc, &c, &shape, cpu, gpu);

    int32_t *ids = malloc(sizeof(int32_t) * mc->T * mc->k);
    float *weights = malloc(sizeof(float) * mc->T * mc->k);
    moe_route_both(&rng, &shape, mc->T, &cpu[0], &gpu[0], ids, weights);

    const int64_t Hp = c.Hp;
    moe_forward_variant(&rng, mc, &c, &shape, cpu, gpu, ids, weights, F32, mc->H, mc->H, F32);
    moe_forward_variant(&rng, mc, &c, &shape, cpu, gpu, ids, weights, BF16, Hp, Hp, BF16);
    if (mc->T > 1) {
        moe_forward_variant(&rng, mc, &c, &shape, cpu, gpu, ids, weights, F32, Hp, Hp + 40, F32);
        /* bf16 rows 6 bytes off 16-byte alignment: the tensor-core product's plain-load path. */
        moe_forward_variant(&rng, mc, &c, &shape, cpu, gpu, ids, weights, BF16, Hp, Hp + 3, BF16);
    }

    for (int l = 0; l < 2; l++) {
        plugin_fini(cpu[l].desc, cpu[l].ctx);
        plugin_fini(gpu[l].desc, gpu[l].ctx);
        free(cpu[l].prepared);
        dev_free(gpu[l].prepared);
    }
    free(ids);
    free(weights);
    moe_checkpoint_free(&c);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* norm                                                                                        */

typedef struct norm_case {
    int64_t rows, cols;
    uint32_t pad;
    int fused, in_place;
    int32_t dtype, weight_dtype;
} norm_case;

static const norm_case NORM_CASES[] = {
    {128, 2880, 256, 1, 1, BF16, BF16},  /* gpt-oss decode batch: post-attention add+RMSNorm+pad */
    {16384, 2880, 256, 1, 0, BF16, BF16}, /* the bandwidth target's shape */
    {7, 2880, 256, 1, 1, F32, F32},      {7, 2880, 0, 0, 0, F32, F32},   {3, 1000, 256, 1, 0, F32, BF16},
    {9, 77, 64, 0, 0, BF16, BF16},       {1, 5, 0, 1, 1, BF16, F32},    {33, 4095, 128, 1, 1, F32, F32},
    {4100, 64, 256, 1, 0, F32, F32},     {2, 40000, 0, 1, 0, BF16, BF16}, {2, 2880, 3072, 0, 0, F32, F32},
};

/* s = x (+ res) in double; out = s * r * w; the same rounding of s to f32 first as the contract. */
static double *norm_double_reference(const norm_case *nc, const void *x, const void *res, const void *w)
{
    double *out = malloc(sizeof(double) * nc->rows * nc->cols);
    for (int64_t m = 0; m < nc->rows; m++) {
        double ss = 0;
        for (int64_t n = 0; n < nc->cols; n++) {
            float s = (float)value_at(x, nc->dtype, (size_t)(m * nc->cols + n)) +
                      (res ? (float)value_at(res, nc->dtype, (size_t)(m * nc->cols + n)) : 0.0f);
            out[m * nc->cols + n] = s;
            ss += (double)s * s;
        }
        const double r = 1.0 / sqrt(ss / (double)nc->cols + 1e-5);
        for (int64_t n = 0; n < nc->cols; n++)
            out[m * nc->cols + n] *= r * value_at(w, nc->weight_dtype, (size_t)n);
    }
    return out;
}

/* The routing alone at shapes the forward cases leave out: expert counts past one warp of 32 and not
 * a multiple of it, k up to SY_MOE_MAX_TOP_K, a single expert, the plugins' largest expert count. */
static const struct {
    uint32_t E, k, T;
} ROUTE_CASES[] = {{75, 5, 37}, {33, 32, 9}, {200, 8, 301}, {1, 1, 3}, {1024, 4, 70}};

START_TEST(test_moe_route)
{
    const uint32_t E = ROUTE_CASES[_i].E, k = ROUTE_CASES[_i].k, T = ROUTE_CASES[_i].T;
    sy_rng rng = {seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(_i + 1))};
    const sy_moe_shape shape = {sizeof shape, E, 32, 32, k, 1.702f, 7.0f, 0};
    moe_side cpu = {0}, gpu = {0};
    cpu.desc = plugin(SY_KIND_MOE, moe_names[0], "cpu");
    gpu.desc = plugin(SY_KIND_MOE, moe_names[0], SY_TEST_GPU_BACKEND);
    cpu.ops = cpu.desc->ops;
    gpu.ops = gpu.desc->ops;
    cpu.ctx = plugin_init(cpu.desc);
    gpu.ctx = plugin_init(gpu.desc);
    int32_t *ids = malloc(sizeof(int32_t) * T * k);
    float *weights = malloc(sizeof(float) * T * k);
    moe_route_both(&rng, &shape, T, &cpu, &gpu, ids, weights);
    free(ids);
    free(weights);
    plugin_fini(cpu.desc, cpu.ctx);
    plugin_fini(gpu.desc, gpu.ctx);
}
END_TEST

enum { NORM_CASE_COUNT = sizeof NORM_CASES / sizeof NORM_CASES[0] };

static double norm_case_work(int i)
{
    return (double)NORM_CASES[i].rows * NORM_CASES[i].cols;
}
static int norm_selected[NORM_CASE_COUNT], norm_selected_count;

START_TEST(test_norm)
{
    const norm_case *nc = &NORM_CASES[norm_selected[_i]];
    sy_rng rng = {seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(_i + 1))};
    const int64_t M = nc->rows, N = nc->cols, p = nc->pad > 1 ? nc->pad : 1, nout = (N + p - 1) / p * p;
    const size_t es = sy_dtype_size(nc->dtype);
    void *x = random_values(&rng, nc->dtype, (size_t)(M * N), -3.0f, 3.0f);
    void *res = random_values(&rng, nc->dtype, (size_t)(M * N), -2.0f, 2.0f);
    void *w = random_values(&rng, nc->weight_dtype, (size_t)N, 0.5f, 1.5f);
    /* Rows of very different scales: a norm over the wrong span shows. */
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            const float scale = (float)pow(10.0, (double)(m % 5) - 2.0);
            const size_t i = (size_t)(m * N + n);
            if (nc->dtype == BF16)
                ((uint16_t *)x)[i] = sy_f32_to_bf16(sy_bf16_to_f32(((uint16_t *)x)[i]) * scale);
            else
                ((float *)x)[i] *= scale;
        }
    const sy_plugin_desc *cpu = plugin(SY_KIND_NORM, "norm_rmsnorm", "cpu");
    const sy_plugin_desc *gpu = plugin(SY_KIND_NORM, "norm_rmsnorm", SY_TEST_GPU_BACKEND);
    void *cpu_ctx = plugin_init(cpu), *gpu_ctx = plugin_init(gpu);

    /* The cpu twin on host copies; residual_out beside or over the residual. */
    void *out = malloc((size_t)(M * nout) * es), *res_copy = malloc((size_t)(M * N) * es);
    void *res_out = malloc((size_t)(M * N) * es);
    memcpy(res_copy, res, (size_t)(M * N) * es);
    sy_poison_bytes(out, (size_t)(M * nout) * es);
    sy_poison_bytes(res_out, (size_t)(M * N) * es);
    sy_norm_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.pad_to_multiple = nc->pad;
    a.eps = 1e-5f;
    a.x = matrix(x, nc->dtype, M, N, N);
    a.weight = vector(w, nc->weight_dtype, N);
    a.out = matrix(out, nc->dtype, M, nout, nout);
    if (nc->fused) {
        a.residual = matrix(res_copy, nc->dtype, M, N, N);
        a.residual_out = matrix(nc->in_place ? res_copy : res_out, nc->dtype, M, N, N);
    }
    sy_error err = {{0}};
    ck_assert_msg(((const sy_norm_ops *)cpu->ops)->rmsnorm(cpu_ctx, NULL, &a, &err) == SY_OK, "cpu: %s", err.msg);

    void *d_x = dev_buffer(x, (size_t)(M * N) * es), *d_w = dev_buffer(w, (size_t)N * sy_dtype_size(nc->weight_dtype));
    void *d_res = dev_buffer(res, (size_t)(M * N) * es), *d_out = dev_buffer(NULL, (size_t)(M * nout) * es);
    void *d_res_out = nc->in_place ? d_res : dev_buffer(NULL, (size_t)(M * N) * es);
    a.x.data = d_x;
    a.weight.data = d_w;
    a.out.data = d_out;
    a.residual.data = nc->fused ? d_res : NULL;
    a.residual_out.data = nc->fused ? d_res_out : NULL;
    ck_assert_msg(((const sy_norm_ops *)gpu->ops)->rmsnorm(gpu_ctx, NULL, &a, &err) == SY_OK, "rmsnorm: %s",
                  err.msg);
    void *g_out = malloc((size_t)(M * nout) * es), *g_res_out = malloc((size_t)(M * N) * es);
    download(g_out, d_out, (size_t)(M * nout) * es);
    if (nc->fused)
        download(g_res_out, d_res_out, (size_t)(M * N) * es);

    char what[160];
    snprintf(what, sizeof what, "norm_rmsnorm (%s) M%lld N%lld pad%u %s%s %s w %s", SY_TEST_GPU_BACKEND, (long long)M,
             (long long)N, nc->pad, nc->fused ? "fused_add" : "plain", nc->in_place ? " in place" : "",
             dtype_tag(nc->dtype), dtype_tag(nc->weight_dtype));
    const double tol = nc->dtype == F32 ? 1e-6 : 1e-3;
    const double rel = rel_l2(g_out, out, nc->dtype, M, N, nout);
    verdict(rel <= tol, "%s: rel L2 %.2e against the cpu twin (tol %.0e)", what, rel, tol);
    size_t nonzero = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = N; n < nout; n++) {
            const double v = value_at(g_out, nc->dtype, (size_t)(m * nout + n));
            nonzero += v != 0.0 || signbit(v); /* +0 bit for bit, as the cpu twin writes */
        }
    verdict(nonzero == 0, "%s: %zu padding columns are not +0", what, nonzero);
    if (nc->fused)
        verdict(memcmp(g_res_out, nc->in_place ? res_copy : res_out, (size_t)(M * N) * es) == 0,
                "%s: residual_out equal to the cpu twin's bit for bit", what);
    if (M * N <= 1 << 20 && nc->dtype == F32) {
        double *ref = norm_double_reference(nc, x, nc->fused ? res : NULL, w);
        const double rel_d = rel_l2_double(g_out, nc->dtype, M, N, nout, ref);
        verdict(rel_d <= 1e-6, "%s: rel L2 %.2e against double precision (tol 1e-6)", what, rel_d);
        free(ref);
    }
    dev_free(d_x);
    dev_free(d_w);
    dev_free(d_res);
    dev_free(d_out);
    if (!nc->in_place)
        dev_free(d_res_out);
    plugin_fini(cpu, cpu_ctx);
    plugin_fini(gpu, gpu_ctx);
    free(x);
    free(res);
    free(w);
    free(out);
    free(res_copy);
    free(res_out);
    free(g_out);
    free(g_res_out);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* linear                                                                                      */

typedef struct linear_case {
    int64_t M, N, K, ldx;
    int32_t x_dtype, w_dtype, y_dtype;
    int bias;
    int32_t b_dtype; /* 0: x's dtype */
    int parts;       /* > 0: the GPU plugin writes y as this many column parts (ABI 1.4), rows padded */
} linear_case;

enum { LINEAR_PART_PAD = 5 };

static const linear_case LINEAR_CASES[] = {
    {128, 5120, 2880, 2880, F32, BF16, F32, 1, 0, 0},   /* gpt-oss-120b qkv projection, decode batch 128 */
    {128, 2880, 4096, 4096, F32, BF16, F32, 1, 0, 0},   /* its output projection */
    {128, 128, 2880, 2880, F32, BF16, F32, 1, 0, 0},    /* the router */
    {4, 20011, 2880, 2880, F32, BF16, F32, 0, 0, 0},    /* an unembedding slice, odd N */
    {7, 45, 33, 40, F32, F32, F32, 1, 0, 0},            {1, 100, 2880, 2880, F32, BF16, F32, 1, 0, 0},
    {70, 130, 96, 96, F32, BF16, BF16, 1, 0, 0},        {65, 64, 17, 20, BF16, BF16, F32, 0, 0, 0},
    {5, 77, 50, 50, BF16, F32, BF16, 1, 0, 0},          {300, 257, 1000, 1000, BF16, BF16, BF16, 1, 0, 0},
    {0, 16, 16, 16, F32, F32, F32, 1, 0, 0},
    /* The engine's bf16 step (f32 biases): q/k/v, the router on the padded normed rows, the
     * unembedding on every third row; then rows of y at odd element offsets. */
    {128, 5120, 2880, 2880, BF16, BF16, BF16, 1, F32, 0}, {128, 128, 2880, 3072, BF16, BF16, F32, 1, F32, 0},
    {5, 20011, 2880, 8640, BF16, BF16, F32, 0, 0, 0},    {33, 1001, 96, 100, BF16, BF16, BF16, 1, F32, 0},
    /* y as column parts: the unfused q/k/v of a bf16 step, and parts whose edges split runs of four
     * columns (f32 x as two planes; f32 y without bias, which alone would be the GEMM's own output). */
    {128, 5120, 2880, 2880, BF16, BF16, BF16, 1, F32, 3}, {33, 1001, 96, 100, F32, BF16, BF16, 1, 0, 4},
    {7, 45, 33, 40, F32, F32, F32, 0, 0, 2},             {1, 100, 2880, 2880, F32, BF16, F32, 0, 0, 3},
};

/* First column of part i of lc's y (i == parts: N). */
static int64_t linear_part_first(const linear_case *lc, int i)
{
    return lc->N * i / lc->parts;
}

static int32_t linear_bias_dtype(const linear_case *lc)
{
    return lc->b_dtype ? lc->b_dtype : lc->x_dtype;
}

static sy_linear_args linear_args(const linear_case *lc, void *x, void *w, void *b, void *y)
{
    sy_linear_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.x = matrix(x, lc->x_dtype, lc->M, lc->K, lc->ldx);
    a.w = matrix(w, lc->w_dtype, lc->N, lc->K, lc->K);
    if (lc->bias)
        a.b = vector(b, linear_bias_dtype(lc), lc->N);
    if (!lc->parts || !y) {
        a.y = matrix(y, lc->y_dtype, lc->M, lc->N, lc->N);
        return a;
    }
    /* The parts one after another in y, each row LINEAR_PART_PAD elements wider than the part. */
    a.n_y_parts = (uint32_t)lc->parts;
    char *at = y;
    for (int i = 0; i < lc->parts; i++) {
        const int64_t n = linear_part_first(lc, i + 1) - linear_part_first(lc, i);
        a.y_parts[i] = matrix(at, lc->y_dtype, lc->M, n, n + LINEAR_PART_PAD);
        at += (size_t)(lc->M * (n + LINEAR_PART_PAD)) * sy_dtype_size(lc->y_dtype);
    }
    return a;
}

/* The parts of a download back into one [M, N] y; 0 where a part wrote into its rows' padding. */
static int linear_join_parts(const linear_case *lc, const char *parts, char *y)
{
    const size_t es = sy_dtype_size(lc->y_dtype);
    unsigned char poison[8];
    sy_poison_bytes(poison, es);
    for (int i = 0; i < lc->parts; i++) {
        const int64_t n0 = linear_part_first(lc, i), n = linear_part_first(lc, i + 1) - n0, ld = n + LINEAR_PART_PAD;
        for (int64_t m = 0; m < lc->M; m++) {
            memcpy(y + (size_t)(m * lc->N + n0) * es, parts + (size_t)(m * ld) * es, (size_t)n * es);
            for (int64_t c = n; c < ld; c++)
                if (memcmp(parts + (size_t)(m * ld + c) * es, poison, es) != 0)
                    return 0;
        }
        parts += (size_t)(lc->M * ld) * es;
    }
    return 1;
}

static void linear_run(const char *name, const linear_case *lc, const void *x, const void *w, const void *b,
                       const void *cpu_y, const double *ref)
{
    const sy_plugin_desc *d = plugin(SY_KIND_LINEAR, name, SY_TEST_GPU_BACKEND);
    void *ctx = plugin_init(d);
    const size_t xb = (size_t)(lc->M * lc->ldx) * sy_dtype_size(lc->x_dtype);
    const size_t wb = (size_t)(lc->N * lc->K) * sy_dtype_size(lc->w_dtype), yb = (size_t)(lc->M * lc->N) * sy_dtype_size(lc->y_dtype);
    const size_t y_dev = yb + (size_t)(lc->M * lc->parts * LINEAR_PART_PAD) * sy_dtype_size(lc->y_dtype);
    void *d_x = dev_buffer(x, xb), *d_w = dev_buffer(w, wb), *d_y = dev_buffer(NULL, y_dev);
    void *d_b = lc->bias ? dev_buffer(b, (size_t)lc->N * sy_dtype_size(linear_bias_dtype(lc))) : NULL;
    sy_linear_args a = linear_args(lc, d_x, d_w, d_b, d_y);
    sy_error err = {{0}};
    ck_assert_msg(((const sy_linear_ops *)d->ops)->linear(ctx, NULL, &a, &err) == SY_OK, "%s: %s", name, err.msg);
    void *y = malloc(y_dev + 1);
    download(y, d_y, y_dev);
    char what[160];
    snprintf(what, sizeof what, "%s (%s) M%lld N%lld K%lld ldx%lld x %s w %s y %s%s%s", name, SY_TEST_GPU_BACKEND,
             (long long)lc->M, (long long)lc->N, (long long)lc->K, (long long)lc->ldx, dtype_tag(lc->x_dtype),
             dtype_tag(lc->w_dtype), dtype_tag(lc->y_dtype), lc->bias ? " bias" : "", lc->parts ? " in parts" : "");
    if (lc->parts) {
        void *joined = malloc(yb + 1);
        const int untouched = linear_join_parts(lc, y, joined);
        verdict(untouched, "%s: the parts' row padding %s", what, untouched ? "untouched" : "written");
        free(y);
        y = joined;
    }
    /* An f32 y is f32 accurate; the bf16 high / low split of an f32 x against bf16 weights keeps
     * about 2^-16 of each x value. A bf16 y is dominated by its own rounding. */
    const double tol = lc->y_dtype == BF16 ? 4e-3 : lc->x_dtype == F32 && lc->w_dtype == BF16 ? 3e-5 : 1e-5;
    const double rel = rel_l2(y, cpu_y, lc->y_dtype, lc->M, lc->N, lc->N);
    verdict(rel <= tol, "%s: rel L2 %.2e against the cpu twin (tol %.0e)", what, rel, tol);
    if (ref) {
        const double rel_d = rel_l2_double(y, lc->y_dtype, lc->M, lc->N, lc->N, ref);
        verdict(rel_d <= tol, "%s: rel L2 %.2e against double precision (tol %.0e)", what, rel_d, tol);
    }
    dev_free(d_x);
    dev_free(d_w);
    dev_free(d_y);
    if (d_b)
        dev_free(d_b);
    free(y);
    plugin_fini(d, ctx);
}

enum { LINEAR_CASE_COUNT = sizeof LINEAR_CASES / sizeof LINEAR_CASES[0] };

static double linear_case_work(int i)
{
    return (double)LINEAR_CASES[i].M * LINEAR_CASES[i].N * LINEAR_CASES[i].K;
}
static int linear_selected[LINEAR_CASE_COUNT], linear_selected_count;

START_TEST(test_linear)
{
    const linear_case *lc = &LINEAR_CASES[linear_selected[_i]];
    sy_rng rng = {seed ^ (0x94D049BB133111EBull * (uint64_t)(_i + 1))};
    void *x = random_values(&rng, lc->x_dtype, (size_t)(lc->M * lc->ldx), -1.0f, 1.0f);
    void *w = random_values(&rng, lc->w_dtype, (size_t)(lc->N * lc->K), -0.5f, 0.5f);
    void *b = random_values(&rng, linear_bias_dtype(lc), (size_t)lc->N, -1.0f, 1.0f);
    const size_t yb = (size_t)(lc->M * lc->N) * sy_dtype_size(lc->y_dtype);
    void *y = malloc(yb + 1);
    sy_poison_bytes(y, yb);
    const sy_plugin_desc *cpu = plugin(SY_KIND_LINEAR, "linear", "cpu");
    void *cpu_ctx = plugin_init(cpu);
    linear_case whole = *lc;
    whole.parts = 0;
    sy_linear_args a = linear_args(&whole, x, w, b, y);
    sy_error err = {{0}};
    ck_assert_msg(((const sy_linear_ops *)cpu->ops)->linear(cpu_ctx, NULL, &a, &err) == SY_OK, "cpu: %s", err.msg);
    plugin_fini(cpu, cpu_ctx);

    double *ref = NULL;
    if (lc->M * lc->N * lc->K <= (int64_t)1 << 26) {
        ref = malloc(sizeof(double) * (size_t)(lc->M * lc->N) + 1);
        for (int64_t m = 0; m < lc->M; m++)
            for (int64_t n = 0; n < lc->N; n++) {
                double acc = lc->bias ? value_at(b, linear_bias_dtype(lc), (size_t)n) : 0.0;
                for (int64_t k = 0; k < lc->K; k++)
                    acc += value_at(x, lc->x_dtype, (size_t)(m * lc->ldx + k)) *
                           value_at(w, lc->w_dtype, (size_t)(n * lc->K + k));
                ref[m * lc->N + n] = acc;
            }
    }
    linear_run("linear", lc, x, w, b, y, ref);
    if (strcmp(SY_TEST_GPU_BACKEND, "cuda") == 0)
        linear_run("linear_tiled", lc, x, w, b, y, ref);
    free(ref);
    free(x);
    free(w);
    free(b);
    free(y);
}
END_TEST

int main(void)
{
    open_registry();
    seed = sy_test_seed();
#ifdef SY_CHECK_EMULATED
    printf("device: CPU emulator, warp %d (kernels compiled as C++); cases of at most %.0e multiply-adds\n",
           SY_EMU_WARP_SIZE, EMULATED_WORK);
    const int have_device = 1;
#else
    const int have_device = backend_entry->probe_score > 0;
#endif
    moe_selected_count = select_cases(MOE_CASE_COUNT, moe_case_work, moe_selected);
    norm_selected_count = select_cases(NORM_CASE_COUNT, norm_case_work, norm_selected);
    linear_selected_count = select_cases(LINEAR_CASE_COUNT, linear_case_work, linear_selected);
    Suite *suite = suite_create("gpu_moe_norm_linear_" SY_TEST_GPU_BACKEND);
    if (!emulated) {
        TCase *host = tcase_create("host");
        tcase_add_test(host, test_descriptors_match_the_cpu_twins);
        suite_add_tcase(suite, host);
    }
    if (have_device) {
        /* One test case a kind, so that Check's CK_RUN_CASE=norm|linear|moe runs one of them alone. */
        TCase *norm = tcase_create("norm"), *linear = tcase_create("linear"), *moe = tcase_create("moe");
        tcase_add_loop_test(norm, test_norm, 0, norm_selected_count);
        tcase_add_loop_test(linear, test_linear, 0, linear_selected_count);
        tcase_add_loop_test(moe, test_moe, 0, moe_selected_count);
        tcase_add_loop_test(moe, test_moe_route, 0, (int)(sizeof ROUTE_CASES / sizeof ROUTE_CASES[0]));
        TCase *device[] = {norm, linear, moe};
        for (size_t i = 0; i < sizeof device / sizeof device[0]; i++) {
            tcase_add_checked_fixture(device[i], device_setup, device_teardown);
            suite_add_tcase(suite, device[i]);
        }
    } else {
        printf("skipped: no GPU (%s)\n", backend_entry->probe_reason);
    }
    SRunner *runner = srunner_create(suite);
    srunner_set_fork_status(runner, CK_NOFORK);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    sy_registry_close(registry);
    return failed ? 1 : 0;
}
