/* check_kv_attn: the GPU plugins kv_nhd, kv_vectorized_5d, attn_paged and rope_yarn of one backend
 * (SY_CHECK_GPU_BACKEND: "cuda" or "hip") against their cpu twins on the same random inputs, at
 * gpt-oss-120b shapes (64 q heads, 8 KV heads, head dim 64, pages 16 / 64 / 128) and odd ones. One
 * line per case and a summary; exit status 1 when a case fails. Without a usable device it prints
 * "skipped: no GPU (reason)" and exits 0.
 *
 *   kv.write / kv.gather   pools and gathered rows bit for bit against the cpu plugin, from pools
 *                          holding the same random bytes: every store dtype and source dtype, slot
 *                          maps, skipped slots, padded and misaligned source rows, prefill runs and
 *                          decode scatter.
 *   attn.decode            outputs against the cpu plugin by relative L2, within bounds set from
 *                          the H200's measured errors (attention_tolerance: 1e-5 f32, 6e-4 f32 out
 *                          of bf16 K/V, 1e-4 f32 out of fp8 K/V, 4e-3 bf16 out); f32 outputs also
 *                          against a double-precision reference over what the pool holds (read back
 *                          by the cpu plugin's gather), within the same bounds;
 *                          page 0 and unused pages hold NaN, so a read outside the context shows;
 *                          and the GPU's own split counts against each other; qstride cases give q
 *                          rows wider than their heads with NaN gaps (linear.fuse_qkv's slices).
 *   attn.prefill           the same for ragged prefill with prefixes, window, sinks (f32 outputs
 *                          against a double reference over the K/V given); padded cases widen the
 *                          rows of q, k and v; batches past a warp's lanes (sequences B cycle through
 *                          the shape's four lengths, some without queries) and a negative softmax
 *                          scale.
 *   rope.rope              q and k against the cpu plugin (2e-6 f32, 1e-3 bf16), with the count of
 *                          elements that are not bit-exact (rope_gpu.cuh: the device's cos / sin).
 *   rope.fused             rope_kv_write against rope then kv_layout.write of the GPU plugins, bit
 *                          for bit (q, k and both pools), and its pool against the cpu writer fed the
 *                          GPU's rotated k.
 *
 * Usage: check_kv_attn_<backend> [--quick | --full] [--seed N] [--filter TEXT]  (--full is the
 * default on a GPU; the emulated build runs --quick unless given --full)
 *
 * Built with SY_CHECK_EMULATED (check_kv_attn_emu32 / _emu64), the program links the plugins' ops
 * directly and runs the GPU kernels, compiled as C++, on the CPU emulator of gpu_emulator.cc
 * at a warp width of 32 or 64: the same cases, on a machine without a GPU. At 32 the tensor-core
 * prefill runs too, with the warpgroup products where an H200 takes them, and the cases those take
 * run again on mma.sync (names ending /mma_sync). */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attn_reference.h"
#ifdef SY_CHECK_EMULATED
#include "check_emu_backend.h"
#endif
#include "switchyard/switchyard.h"
#include "sy_numeric.h"
#include "sy_test.h"

#ifndef SY_CHECK_GPU_BACKEND
#error "SY_CHECK_GPU_BACKEND must name the backend under test (\"cuda\" or \"hip\")"
#endif

enum { F32 = SY_DTYPE_F32, BF16 = SY_DTYPE_BF16, FP8 = SY_DTYPE_FP8_E4M3, NHD = SY_LAYOUT_NHD,
       V5D = SY_LAYOUT_VECTORIZED_5D };

static const float K_SCALE = 0.02f, V_SCALE = 0.03f;

/* ------------------------------------------------------------------------------------------ */
/* set-up: registry, device, host APIs, plugin pairs                                           */

static sy_registry *registry;
static const sy_backend_desc *gpu;
static void *gpu_ctx;
static sy_stream stream;
static sy_host_api gpu_host, cpu_host;
static int quick, full;
#ifdef SY_CHECK_EMULATED
static const int emulated = 1;
#else
static const int emulated = 0;
#endif
/* Emulated --quick runs leave out the largest cases (keys x q heads past this): minutes each there. */
enum { EMULATED_QUICK_WORK = 2000000 };
static const char *filter;
static int passed, failed;
static sy_rng rng;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "check_kv_attn: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

static sy_status gpu_workspace_alloc(void *host, size_t bytes, void **ptr, sy_error *err)
{
    (void)host;
    return gpu->alloc(gpu_ctx, bytes ? bytes : 1, ptr, err);
}

static void gpu_workspace_free(void *host, void *ptr)
{
    (void)host;
    gpu->free(gpu_ctx, ptr);
}

static sy_status cpu_workspace_alloc(void *host, size_t bytes, void **ptr, sy_error *err)
{
    (void)host;
    *ptr = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
    if (*ptr)
        return SY_OK;
    snprintf(err->msg, sizeof err->msg, "out of host memory for %zu bytes of workspace", bytes);
    return SY_E_NOMEM;
}

static void cpu_workspace_free(void *host, void *ptr)
{
    (void)host;
    free(ptr);
}

static void host_log(void *host, int32_t level, const char *msg)
{
    (void)host;
    if (level == SY_LOG_ERROR)
        fprintf(stderr, "plugin: %s\n", msg);
}

static sy_host_api host_api(const sy_backend_desc *be, void *bctx, int device)
{
    sy_host_api h;
    memset(&h, 0, sizeof h);
    h.struct_size = sizeof h;
    h.abi_major = SY_ABI_MAJOR;
    h.abi_minor = SY_ABI_MINOR;
    h.backend = be;
    h.backend_ctx = bctx;
    h.log = host_log;
    h.workspace_alloc = device ? gpu_workspace_alloc : cpu_workspace_alloc;
    h.workspace_free = device ? gpu_workspace_free : cpu_workspace_free;
    return h;
}

typedef struct pair {
    const sy_plugin_desc *cpu, *gpu;
    void *cpu_ctx, *gpu_ctx;
} pair;

static pair kv_pairs[2], attn, rope;

static pair init_pair(const sy_plugin_desc *cpu_desc, const sy_plugin_desc *gpu_desc)
{
    pair p = {cpu_desc, gpu_desc, NULL, NULL};
    sy_error err = {{0}};
    if ((cpu_desc->init && cpu_desc->init(&cpu_host, &p.cpu_ctx, &err) != SY_OK) ||
        (gpu_desc->init && gpu_desc->init(&gpu_host, &p.gpu_ctx, &err) != SY_OK))
        die("%s: init: %s", cpu_desc->name, err.msg);
    return p;
}

#ifndef SY_CHECK_EMULATED
static pair load_pair(int32_t kind, const char *name)
{
    const sy_registry_entry *c = sy_registry_find(registry, kind, name, "cpu");
    const sy_registry_entry *g = sy_registry_find(registry, kind, name, SY_CHECK_GPU_BACKEND);
    if (!c || !g)
        die("plugin %s is not loaded for %s", name, !c ? "cpu" : SY_CHECK_GPU_BACKEND);
    return init_pair(c->plugin, g->plugin);
}
#endif

static void unload_pair(pair *p)
{
    if (p->cpu->fini)
        p->cpu->fini(p->cpu_ctx);
    if (p->gpu->fini)
        p->gpu->fini(p->gpu_ctx);
}

static const pair *kv_pair(uint32_t layout)
{
    return &kv_pairs[layout == V5D];
}

#ifdef SY_CHECK_EMULATED
/* The plugins' ops tables, linked in, and a backend over host memory. */
extern const sy_kv_layout_ops sy_kv_nhd_cpu_ops, sy_kv_5d_cpu_ops, sy_kv_nhd_gpu_ops, sy_kv_5d_gpu_ops;
extern const sy_attention_ops sy_attn_paged_cpu_ops, sy_attn_paged_gpu_ops;
extern const sy_rope_ops sy_rope_yarn_cpu_ops, sy_rope_yarn_gpu_ops;
sy_status sy_attn_paged_cpu_init(const sy_host_api *host, void **ctx, sy_error *err);
void sy_attn_paged_cpu_fini(void *ctx);
sy_status sy_attn_paged_gpu_init(const sy_host_api *host, void **ctx, sy_error *err);
void sy_attn_paged_gpu_fini(void *ctx);
sy_status sy_rope_yarn_gpu_init(const sy_host_api *host, void **ctx, sy_error *err);
void sy_rope_yarn_gpu_fini(void *ctx);
#if SY_EMU_WARP_SIZE == 32
void sy_attn_paged_gpu_emu_prefill_warpgroup(void *ctx, int on);
#endif

#define EMU_DESC(desc_name, plugin_name, ops_table, init_fn, fini_fn)                                  \
    static const sy_plugin_desc desc_name = {.name = plugin_name, .ops = &ops_table, .init = init_fn, \
                                             .fini = fini_fn}
EMU_DESC(emu_nhd_cpu, "kv_nhd", sy_kv_nhd_cpu_ops, NULL, NULL);
EMU_DESC(emu_nhd_gpu, "kv_nhd", sy_kv_nhd_gpu_ops, NULL, NULL);
EMU_DESC(emu_5d_cpu, "kv_vectorized_5d", sy_kv_5d_cpu_ops, NULL, NULL);
EMU_DESC(emu_5d_gpu, "kv_vectorized_5d", sy_kv_5d_gpu_ops, NULL, NULL);
EMU_DESC(emu_attn_cpu, "attn_paged", sy_attn_paged_cpu_ops, sy_attn_paged_cpu_init, sy_attn_paged_cpu_fini);
EMU_DESC(emu_attn_gpu, "attn_paged", sy_attn_paged_gpu_ops, sy_attn_paged_gpu_init, sy_attn_paged_gpu_fini);
EMU_DESC(emu_rope_cpu, "rope_yarn", sy_rope_yarn_cpu_ops, NULL, NULL);
EMU_DESC(emu_rope_gpu, "rope_yarn", sy_rope_yarn_gpu_ops, sy_rope_yarn_gpu_init, sy_rope_yarn_gpu_fini);

static int open_all(void)
{
    gpu = &sy_check_emu_backend;
    printf("device: CPU emulator, warp %d (kernels compiled as C++)\n", SY_EMU_WARP_SIZE);
    gpu_host = host_api(gpu, NULL, 1);
    cpu_host = host_api(NULL, NULL, 0);
    kv_pairs[0] = init_pair(&emu_nhd_cpu, &emu_nhd_gpu);
    kv_pairs[1] = init_pair(&emu_5d_cpu, &emu_5d_gpu);
    attn = init_pair(&emu_attn_cpu, &emu_attn_gpu);
    rope = init_pair(&emu_rope_cpu, &emu_rope_gpu);
    quick = !full; /* emulation is slow: the quick list unless --full */
    return 1;
}
#else
/* Returns 0 (and prints why) when there is no usable device. */
static int open_all(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        die("cannot read /proc/self/exe");
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    static char plugins_dir[PATH_MAX + 32];
    snprintf(plugins_dir, sizeof plugins_dir, "%s/../lib/switchyard/plugins", exe);
    const char *paths[1] = {plugins_dir};
    sy_registry_options opts;
    memset(&opts, 0, sizeof opts);
    opts.struct_size = sizeof opts;
    opts.plugin_paths = paths;
    opts.n_plugin_paths = 1;
    sy_error err = {{0}};
    if (sy_registry_open(&opts, &registry, &err) != SY_OK)
        die("sy_registry_open: %s", err.msg);
    const sy_registry_entry *be = sy_registry_find_backend(registry, SY_CHECK_GPU_BACKEND);
    if (!be)
        die("backend %s is not loaded from %s", SY_CHECK_GPU_BACKEND, plugins_dir);
    if (be->probe_score <= 0) {
        printf("skipped: no GPU (%s)\n", be->probe_reason && be->probe_reason[0] ? be->probe_reason : "probe returned 0");
        return 0;
    }
    gpu = be->backend;
    if (gpu->init(0, &gpu_ctx, &err) != SY_OK || gpu->stream_create(gpu_ctx, &stream, &err) != SY_OK)
        die("%s device 0: %s", SY_CHECK_GPU_BACKEND, err.msg);
    sy_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (gpu->device_info(gpu_ctx, &info, &err) == SY_OK)
        printf("device: %s (%u multiprocessors, warp %u)\n", info.name, info.multiprocessors, info.warp_size);
    gpu_host = host_api(gpu, gpu_ctx, 1);
    cpu_host = host_api(NULL, NULL, 0);
    kv_pairs[0] = load_pair(SY_KIND_KV_LAYOUT, "kv_nhd");
    kv_pairs[1] = load_pair(SY_KIND_KV_LAYOUT, "kv_vectorized_5d");
    attn = load_pair(SY_KIND_ATTENTION, "attn_paged");
    rope = load_pair(SY_KIND_ROPE, "rope_yarn");
    return 1;
}
#endif

/* ------------------------------------------------------------------------------------------ */
/* device memory (synchronous helpers; the ops under test run on `stream`)                     */

#define GPU_CALL(what, call)                                                                        \
    do {                                                                                            \
        sy_error gpu_call_err_ = {{0}};                                                             \
        if ((call) != SY_OK)                                                                        \
            die("%s: %s", what, gpu_call_err_.msg);                                                 \
    } while (0)
#define GERR (&gpu_call_err_)

static void gpu_sync(void)
{
    GPU_CALL("stream_sync", gpu->stream_sync(gpu_ctx, stream, GERR));
}

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    GPU_CALL("alloc", gpu->alloc(gpu_ctx, bytes ? bytes : 1, &p, GERR));
    GPU_CALL("memset", gpu->memset_async(gpu_ctx, stream, p, 0xFF, bytes ? bytes : 1, GERR));
    gpu_sync();
    return p;
}

static void dev_free(void *p)
{
    gpu->free(gpu_ctx, p);
}

static void upload(void *dev, const void *host, size_t bytes)
{
    if (!bytes)
        return;
    GPU_CALL("upload", gpu->memcpy_async(gpu_ctx, stream, dev, host, bytes, SY_MEMCPY_H2D, GERR));
    gpu_sync();
}

static void download(void *host, const void *dev, size_t bytes)
{
    if (!bytes)
        return;
    GPU_CALL("download", gpu->memcpy_async(gpu_ctx, stream, host, dev, bytes, SY_MEMCPY_D2H, GERR));
    gpu_sync();
}

static void *dev_copy(const void *host, size_t bytes)
{
    void *p = dev_alloc(bytes);
    upload(p, host, bytes);
    return p;
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        die("out of host memory (%zu bytes)", bytes);
    memset(p, 0xFF, bytes);
    return p;
}

/* The same view of device memory: a host tensor's shape and strides over `dev`. */
static sy_tensor on_device(sy_tensor t, void *dev)
{
    t.data = dev;
    return t;
}

/* ------------------------------------------------------------------------------------------ */
/* values and comparisons                                                                      */

static size_t es(int32_t dt)
{
    return sy_dtype_size(dt);
}

static double load_value(int32_t dt, const void *p, size_t i)
{
    switch (dt) {
    case F32: return ((const float *)p)[i];
    case BF16: return sy_bf16_to_f32(((const uint16_t *)p)[i]);
    default: return sy_fp8e4m3_to_f32(((const uint8_t *)p)[i]);
    }
}

/* Element i as the value it stands for: fp8 times its scale. */
static float held_value(int32_t dt, const void *p, size_t i, float scale)
{
    return (float)load_value(dt, p, i) * (dt == FP8 ? scale : 1.0f);
}

static void store_value(int32_t dt, void *p, size_t i, float x, float scale)
{
    switch (dt) {
    case F32: ((float *)p)[i] = x; break;
    case BF16: ((uint16_t *)p)[i] = sy_f32_to_bf16(x); break;
    default: ((uint8_t *)p)[i] = sy_f32_to_fp8e4m3(x / scale); break;
    }
}

/* A value of roughly N(0, sigma), one in eight of them probing a conversion: f32 halfway between two
 * bf16 values, past fp8's 448 after `scale`, or in fp8's subnormal range. */
static float probe_value(float sigma, float scale)
{
    float x = (float)(sy_rng_normal(&rng) * sigma);
    switch (sy_rng_below(&rng, 32)) {
    case 0: return sy_f32_from_bits((sy_f32_bits(x) & 0xFFFF0000u) | 0x8000u);
    case 1: return (float)((x < 0 ? -1 : 1) * sy_rng_range(&rng, 448.0, 2000.0) * scale);
    case 2: return (float)((x < 0 ? -1 : 1) * sy_rng_range(&rng, 0.0, 0.0156) * scale);
    case 3: return sy_f32_from_bits((sy_f32_bits(x) & 0xFFFFFF00u) | 0x80u);
    default: return x;
    }
}

static void fill_values(int32_t dt, void *p, size_t n, float sigma, float scale)
{
    for (size_t i = 0; i < n; i++)
        store_value(dt, p, i, probe_value(sigma, scale), scale);
}

/* q of an attention case. The conversion probes are there for calls that round q (a bf16 or fp8
 * operand makes the call's class narrower than f32); an all-f32 call converts nothing, and its
 * probes of up to 2000 only blow its scores up until f32 rounding of the scores alone reaches the f32
 * bound of 1e-5 (measured 3-13e-6 with them, 3e-7 without: the H200 failed 2 of 5 runs on it). */
static void fill_q(int32_t q_dtype, int32_t kv_dtype, void *q, size_t n)
{
    if (q_dtype == F32 && kv_dtype == F32)
        for (size_t i = 0; i < n; i++)
            store_value(F32, q, i, (float)sy_rng_normal(&rng), 1.0f);
    else
        fill_values(q_dtype, q, n, 1.0f, 1.0f);
}

/* q rows of `width` elements moved apart to `row` elements (row >= width), the gaps NaN (all-ones
 * bytes in every float dtype here): the engine's q as a slice of fused QKV rows. A kernel that reads
 * a gap puts NaN into its output. Frees `packed`. */
static void *spread_rows(void *packed, int64_t rows, int64_t width, int64_t row, size_t elem)
{
    if (row == width)
        return packed;
    char *out = xmalloc((size_t)(rows * row) * elem);
    memset(out, 0xFF, (size_t)(rows * row) * elem);
    for (int64_t r = 0; r < rows; r++)
        memcpy(out + (size_t)(r * row) * elem, (char *)packed + (size_t)(r * width) * elem, (size_t)width * elem);
    free(packed);
    return out;
}

static void fill_bytes(void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ((unsigned char *)p)[i] = (unsigned char)(sy_rng_next(&rng) >> 56);
}

static int want(const char *name)
{
    return !filter || strstr(name, filter) != NULL;
}

static void verdict(const char *name, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void verdict(const char *name, int ok, const char *fmt, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    printf("%s  %-72s %s\n", ok ? "PASS" : "FAIL", name, detail);
    fflush(stdout);
    if (ok)
        passed++;
    else
        failed++;
}

/* Index of the first differing element of elem bytes, or -1. */
static long long first_difference(const void *a, const void *b, size_t n, size_t elem)
{
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < n * elem; i++)
        if (x[i] != y[i])
            return (long long)(i / elem);
    return -1;
}

static long long count_differences(const void *a, const void *b, size_t n, size_t elem)
{
    long long count = 0;
    for (size_t i = 0; i < n; i++)
        count += memcmp((const char *)a + i * elem, (const char *)b + i * elem, elem) != 0;
    return count;
}

typedef struct closeness {
    double rel_l2, max_abs;
    long long nonfinite; /* test not finite where the reference is */
} closeness;

/* Running sums of a comparison: elements whose reference is not finite are skipped, a test element
 * that is not finite where the reference is counts apart. */
typedef struct closeness_sum {
    closeness c;
    double num, den;
} closeness_sum;

static void closeness_add(closeness_sum *s, double t, double r)
{
    if (!isfinite(r))
        return;
    if (!isfinite(t)) {
        s->c.nonfinite++;
        return;
    }
    s->num += (t - r) * (t - r);
    s->den += r * r;
    s->c.max_abs = fabs(t - r) > s->c.max_abs ? fabs(t - r) : s->c.max_abs;
}

static closeness closeness_end(closeness_sum *s)
{
    s->c.rel_l2 = s->den > 0 ? sqrt(s->num / s->den) : sqrt(s->num);
    return s->c;
}

static closeness compare_values(int32_t dt, const void *test, const void *ref, size_t n)
{
    closeness_sum s = {{0, 0, 0}, 0, 0};
    for (size_t i = 0; i < n; i++)
        closeness_add(&s, load_value(dt, test, i), load_value(dt, ref, i));
    return closeness_end(&s);
}

/* Bounds on the GPU's distance from its cpu twin, set from what the kernels' arithmetic leaves
 * (an output rounded to bf16; products of bf16 or f16 operands where the cpu multiplies in f32)
 * and held to about 4x the largest relative L2 measured on an H200 over the full list, so that a
 * dropped or doubled key of a short context shows in the f32-output cases (2026-12-05: bf16 out
 * 1.0e-3; f32 out of bf16 K/V 1.4e-4, whose PV product takes P in bf16; of fp8 K/V 1.5e-5, P in
 * f16; f32 3e-7). The conformance bounds (engine/src/conformance/tolerance.h) are wider: they
 * hold any plugin. */
static double attention_tolerance(int32_t q_dtype, int32_t kv_dtype)
{
    if (q_dtype == BF16)
        return 4e-3;
    if (kv_dtype == BF16)
        return 6e-4;
    if (kv_dtype == FP8)
        return 1e-4;
    return 1e-5;
}

static const char *tag(int32_t dt)
{
    return dt == F32 ? "f32" : dt == BF16 ? "bf16" : "fp8";
}

static const char *layout_tag(uint32_t layout)
{
    return layout == V5D ? "5d" : "nhd";
}

static void call(const char *what, sy_status st, const sy_error *err)
{
    if (st != SY_OK)
        die("%s returned %s: %s", what, sy_status_name(st), err->msg);
}

/* ------------------------------------------------------------------------------------------ */
/* pools                                                                                       */

static sy_kv_geometry geometry(uint32_t layout, int32_t store, uint32_t pages, uint32_t P, uint32_t H, uint32_t D)
{
    sy_kv_geometry g;
    memset(&g, 0, sizeof g);
    g.struct_size = sizeof g;
    g.layout = layout;
    g.store_dtype = store;
    g.num_pages = pages;
    g.page_size = P;
    g.kv_heads = H;
    g.head_dim = D;
    sy_error err = {{0}};
    const sy_kv_layout_ops *ops = kv_pair(layout)->cpu->ops;
    call("kv geometry", ops->geometry(&g, &err), &err);
    return g;
}

static size_t pool_bytes(const sy_kv_geometry *g)
{
    return (size_t)g->k_elems * es(g->store_dtype);
}

/* A random permutation of pages 1 .. pages - 1 (page 0 is the padding page). */
static uint32_t *page_order(uint32_t pages)
{
    uint32_t *order = xmalloc(sizeof *order * pages);
    for (uint32_t i = 0; i + 1 < pages; i++)
        order[i] = i + 1;
    for (uint32_t i = pages - 1; i > 1; i--) {
        uint32_t j = sy_rng_below(&rng, i);
        uint32_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    return order;
}

/* ------------------------------------------------------------------------------------------ */
/* kv write / gather                                                                           */

typedef struct kv_shape {
    uint32_t layout;
    int32_t store, src;
    uint32_t P, H, D;
    int32_t tokens;
    uint8_t decode, slot_map, padded, misaligned;
} kv_shape;

static int64_t one_d[1];

static sy_tensor index_tensor(int32_t *data, int64_t n)
{
    one_d[0] = n;
    return sy_tensor_contiguous(data, SY_DTYPE_I32, 1, one_d);
}

/* Slots of T tokens: prefill runs (three sequences over shuffled pages, the first starting into its
 * page; one slot in a hundred -1) or decode scatter (distinct random slots; one in twenty -1). */
static int32_t *make_slots(const kv_shape *s, uint32_t pages, uint32_t *order)
{
    int32_t *slots = xmalloc(sizeof *slots * (size_t)s->tokens);
    const int64_t pool = (int64_t)pages * s->P;
    if (s->decode) {
        /* distinct: token t takes page t mod (pages - 1), at an offset that differs per visit */
        for (int32_t t = 0; t < s->tokens; t++) {
            const uint32_t page = order[(uint32_t)t % (pages - 1)];
            slots[t] = (int32_t)(page * s->P + ((uint32_t)t / (pages - 1) + page * 7u) % s->P);
        }
    } else {
        /* Sequence starts on multiples of 16 tokens and the first at a multiple of 16 into its page
         * (where the page allows), so that vectorized_5d groups of X tokens meet whole X-runs of
         * slots; nhd pages of odd sizes break them anyway. */
        uint32_t page_i = 0, seq_len = ((uint32_t)s->tokens / 3 + 16) / 16 * 16;
        int64_t slot = (int64_t)order[page_i] * s->P + s->P / 3 / 16 * 16;
        for (int32_t t = 0; t < s->tokens; t++) {
            if (t > 0 && (t % seq_len == 0 || slot % s->P == 0)) {
                page_i++;
                slot = (int64_t)order[page_i] * s->P;
            }
            slots[t] = (int32_t)slot++;
        }
    }
    for (int32_t t = 0; t < s->tokens; t++)
        if (sy_rng_below(&rng, s->decode ? 20 : 100) == 0 || slots[t] >= pool)
            slots[t] = -1;
    return slots;
}

static void kv_case(const kv_shape *s)
{
    char name[160];
    snprintf(name, sizeof name, "kv.write+gather/%s/%s<-%s/P%u/H%uD%u/T%d%s%s%s%s", layout_tag(s->layout), tag(s->store),
             tag(s->src), s->P, s->H, s->D, s->tokens, s->decode ? "/decode" : "/prefill", s->slot_map ? "/slot_map" : "",
             s->padded ? "/padded" : "", s->misaligned ? "/misaligned" : "");
    if (!want(name))
        return;
    const uint32_t pages = (uint32_t)(s->tokens / s->P) + 8;
    sy_kv_geometry g = geometry(s->layout, s->store, pages, s->P, s->H, s->D);
    const size_t pb = pool_bytes(&g);
    uint32_t *order = page_order(pages);
    int32_t *slots = make_slots(s, pages, order);
    const int64_t T = s->tokens;

    /* Slot map: slots index it; its values are the real slots (or -1: freed). Each real slot once. */
    int32_t *map = NULL, *index = slots;
    int64_t map_len = 0;
    if (s->slot_map) {
        map_len = 2 * T + 5;
        map = xmalloc(sizeof *map * (size_t)map_len);
        index = xmalloc(sizeof *index * (size_t)T);
        for (int64_t i = 0; i < map_len; i++)
            map[i] = -1;
        for (int64_t t = 0; t < T; t++) {
            index[t] = (int32_t)(2 * t + 1);
            map[2 * t + 1] = slots[t];
        }
    }

    /* Sources [T, H, D] with the chosen row stride and alignment. */
    const int64_t row = (int64_t)s->H * s->D, s0 = row + (s->padded ? 8 : 0), off = s->misaligned ? 1 : 0;
    const size_t src_elems = (size_t)(T * s0 + off);
    void *k_host = xmalloc(src_elems * es(s->src)), *v_host = xmalloc(src_elems * es(s->src));
    fill_values(s->src, k_host, src_elems, 3.0f, K_SCALE);
    fill_values(s->src, v_host, src_elems, 3.0f, V_SCALE);
    int64_t shape[3] = {T, s->H, s->D};
    sy_tensor k = sy_tensor_contiguous((char *)k_host + off * es(s->src), s->src, 3, shape);
    sy_tensor v = sy_tensor_contiguous((char *)v_host + off * es(s->src), s->src, 3, shape);
    k.stride[0] = v.stride[0] = s0;

    /* Pools start as the same random bytes on both sides. */
    void *kc = xmalloc(pb), *vc = xmalloc(pb), *kc_gpu = xmalloc(pb), *vc_gpu = xmalloc(pb);
    fill_bytes(kc, pb);
    fill_bytes(vc, pb);
    void *d_kc = dev_copy(kc, pb), *d_vc = dev_copy(vc, pb);
    void *d_k = dev_copy(k_host, src_elems * es(s->src)), *d_v = dev_copy(v_host, src_elems * es(s->src));
    void *d_index = dev_copy(index, sizeof *index * (size_t)T);
    void *d_map = map ? dev_copy(map, sizeof *map * (size_t)map_len) : NULL;

    sy_kv_write_args w;
    memset(&w, 0, sizeof w);
    w.struct_size = sizeof w;
    w.geom = g;
    w.k = k;
    w.v = v;
    w.slots = index_tensor(index, T);
    if (map)
        w.slot_map = index_tensor(map, map_len);
    w.k_cache = kc;
    w.v_cache = vc;
    w.k_scale = K_SCALE;
    w.v_scale = V_SCALE;
    sy_error err = {{0}};
    const pair *p = kv_pair(s->layout);
    const sy_kv_layout_ops *cpu_ops = p->cpu->ops, *gpu_ops = p->gpu->ops;
    call("cpu write", cpu_ops->write(p->cpu_ctx, NULL, &w, &err), &err);
    sy_kv_write_args wd = w;
    wd.k = on_device(k, (char *)d_k + off * es(s->src));
    wd.v = on_device(v, (char *)d_v + off * es(s->src));
    wd.slots.data = d_index;
    wd.slot_map.data = d_map;
    wd.k_cache = d_kc;
    wd.v_cache = d_vc;
    call("gpu write", gpu_ops->write(p->gpu_ctx, stream, &wd, &err), &err);
    download(kc_gpu, d_kc, pb);
    download(vc_gpu, d_vc, pb);
    const size_t n_elems = (size_t)g.k_elems, e = es(s->store);
    long long dk = first_difference(kc_gpu, kc, n_elems, e), dv = first_difference(vc_gpu, vc, n_elems, e);

    /* gather: every token whose slot resolved, in token order (prefill runs stay runs). */
    int32_t *gidx = xmalloc(sizeof *gidx * (size_t)T);
    int64_t G = 0;
    for (int64_t t = 0; t < T; t++)
        if (slots[t] >= 0)
            gidx[G++] = index[t];
    int64_t gshape[3] = {G, s->H, s->D};
    const size_t gbytes = (size_t)G * row * e;
    void *ko = xmalloc(gbytes), *vo = xmalloc(gbytes), *ko_gpu = xmalloc(gbytes), *vo_gpu = xmalloc(gbytes);
    void *d_ko = dev_alloc(gbytes), *d_vo = dev_alloc(gbytes), *d_gidx = dev_copy(gidx, sizeof *gidx * (size_t)(G ? G : 1));
    sy_kv_gather_args ga;
    memset(&ga, 0, sizeof ga);
    ga.struct_size = sizeof ga;
    ga.geom = g;
    ga.slots = index_tensor(gidx, G);
    if (map)
        ga.slot_map = index_tensor(map, map_len);
    ga.k_cache = kc;
    ga.v_cache = vc;
    ga.k_out = sy_tensor_contiguous(ko, s->store, 3, gshape);
    ga.v_out = sy_tensor_contiguous(vo, s->store, 3, gshape);
    call("cpu gather", cpu_ops->gather(p->cpu_ctx, NULL, &ga, &err), &err);
    sy_kv_gather_args gd = ga;
    gd.slots.data = d_gidx;
    gd.slot_map.data = d_map;
    gd.k_cache = d_kc;
    gd.v_cache = d_vc;
    gd.k_out.data = d_ko;
    gd.v_out.data = d_vo;
    call("gpu gather", gpu_ops->gather(p->gpu_ctx, stream, &gd, &err), &err);
    download(ko_gpu, d_ko, gbytes);
    download(vo_gpu, d_vo, gbytes);
    long long gk = first_difference(ko_gpu, ko, (size_t)G * row, e), gv = first_difference(vo_gpu, vo, (size_t)G * row, e);
    verdict(name, dk < 0 && dv < 0 && gk < 0 && gv < 0,
            "pools %s (first difference k %lld, v %lld of %zu), gather of %lld rows %s (k %lld, v %lld)",
            dk < 0 && dv < 0 ? "bit-exact" : "DIFFER", dk, dv, n_elems, (long long)G,
            gk < 0 && gv < 0 ? "bit-exact" : "DIFFER", gk, gv);

    dev_free(d_kc), dev_free(d_vc), dev_free(d_k), dev_free(d_v), dev_free(d_index), dev_free(d_ko), dev_free(d_vo);
    dev_free(d_gidx);
    if (d_map)
        dev_free(d_map);
    free(order), free(slots), free(map), free(s->slot_map ? index : NULL), free(k_host), free(v_host);
    free(kc), free(vc), free(kc_gpu), free(vc_gpu), free(gidx), free(ko), free(vo), free(ko_gpu), free(vo_gpu);
}

static void kv_cases(void)
{
    static const kv_shape shapes[] = {
        /* gpt-oss: 8 KV heads of 64; prefill runs and decode scatter */
        {NHD, BF16, BF16, 16, 8, 64, 1000, 0, 0, 0, 0},   {NHD, BF16, F32, 16, 8, 64, 1000, 0, 1, 0, 0},
        {NHD, FP8, BF16, 64, 8, 64, 777, 0, 0, 1, 0},     {NHD, F32, F32, 16, 8, 64, 128, 1, 0, 0, 0},
        {NHD, FP8, F32, 128, 8, 64, 128, 1, 1, 0, 1},     {NHD, BF16, BF16, 64, 8, 64, 129, 1, 0, 1, 1},
        {V5D, BF16, BF16, 64, 8, 64, 1000, 0, 0, 0, 0},   {V5D, BF16, F32, 64, 8, 64, 1000, 0, 1, 1, 0},
        {V5D, FP8, BF16, 64, 8, 64, 777, 0, 0, 0, 0},     {V5D, FP8, F32, 128, 8, 64, 1000, 0, 0, 0, 1},
        {V5D, F32, BF16, 16, 8, 64, 300, 0, 1, 0, 0},     {V5D, BF16, BF16, 64, 8, 64, 128, 1, 0, 0, 0},
        {V5D, FP8, BF16, 16, 8, 64, 128, 1, 1, 1, 1},
        /* odd: 3 heads of 40 / 48, odd pages, rows that are not 16-byte multiples (nhd D 13) */
        {NHD, BF16, F32, 13, 3, 40, 301, 0, 0, 0, 0},     {NHD, FP8, BF16, 13, 3, 13, 301, 0, 1, 1, 0},
        {NHD, F32, BF16, 7, 5, 13, 97, 1, 0, 0, 1},       {NHD, BF16, BF16, 5, 2, 13, 60, 0, 0, 1, 1},
        {V5D, BF16, F32, 24, 3, 40, 301, 0, 0, 0, 0},     {V5D, FP8, BF16, 48, 3, 48, 301, 0, 1, 1, 1},
        {V5D, F32, F32, 12, 5, 20, 97, 0, 0, 0, 1},       {V5D, BF16, BF16, 24, 3, 40, 50, 1, 1, 0, 0},
        /* head counts that the gather's heads a block do not divide (4 at vectorized_5d bf16 D 64,
         * 10 at nhd f32 D 100): the last blocks along the heads have fewer */
        {V5D, BF16, BF16, 32, 6, 64, 150, 0, 0, 0, 0},    {NHD, F32, BF16, 9, 12, 100, 77, 0, 1, 0, 0},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (!quick || i % 3 == 0)
            kv_case(&shapes[i]);
}

/* ------------------------------------------------------------------------------------------ */
/* attention: a paged pool of random tokens                                                    */

typedef struct heads {
    uint32_t hq, hkv, d;
} heads;

static const heads GPT_OSS = {64, 8, 64}, ODD40 = {12, 4, 40}, ODD48 = {6, 1, 48}, ODD80 = {10, 2, 80},
                   MHA128 = {16, 16, 128}, GQA16 = {32, 2, 64}, GQA24 = {48, 2, 72},
                   NARROW128 = {2, 2, 128};

typedef struct paged {
    sy_kv_geometry g;
    void *kc, *vc;     /* host pools */
    int32_t *tables;   /* [B][max_blocks] */
    int64_t max_blocks;
    uint32_t B;
    float **k_held, **v_held; /* [B] -> [len][H][D]: what the pool holds, read back and dequantized */
} paged;

/* The rows of slots[0 .. n) as the pool holds them, through the cpu plugin's gather, in f32 (fp8
 * times its scale): the keys and values a reference attends over. */
static void read_back(uint32_t layout, const paged *pg, const int32_t *slots, int64_t n, float *k_held, float *v_held)
{
    const sy_kv_geometry *g = &pg->g;
    const size_t elems = (size_t)n * g->kv_heads * g->head_dim, e = es(g->store_dtype);
    void *ko = xmalloc(elems * e), *vo = xmalloc(elems * e);
    int64_t shape[3] = {n, g->kv_heads, g->head_dim};
    sy_kv_gather_args ga;
    memset(&ga, 0, sizeof ga);
    ga.struct_size = sizeof ga;
    ga.geom = *g;
    ga.slots = index_tensor((int32_t *)slots, n);
    ga.k_cache = pg->kc;
    ga.v_cache = pg->vc;
    ga.k_out = sy_tensor_contiguous(ko, g->store_dtype, 3, shape);
    ga.v_out = sy_tensor_contiguous(vo, g->store_dtype, 3, shape);
    sy_error err = {{0}};
    const pair *p = kv_pair(layout);
    call("cpu gather", ((const sy_kv_layout_ops *)p->cpu->ops)->gather(p->cpu_ctx, NULL, &ga, &err), &err);
    for (size_t i = 0; i < elems; i++) {
        k_held[i] = held_value(g->store_dtype, ko, i, K_SCALE);
        v_held[i] = held_value(g->store_dtype, vo, i, V_SCALE);
    }
    free(ko), free(vo);
}

/* Writes lens[b] random tokens per sequence through the cpu kv plugin into shuffled pages; page 0
 * and unused pages keep NaN bytes. With a window, table entries of pages wholly before the window
 * of the sequence's first query (its last chunk[b] tokens; chunk NULL: one, decode) are 0 (freed),
 * as in an SWA pool. */
static paged make_paged(uint32_t layout, int32_t store, uint32_t P, uint32_t H, uint32_t D, uint32_t B,
                        const int32_t *lens, const int32_t *chunk, int32_t window)
{
    paged pg;
    int64_t pages = 1, max_blocks = 1;
    for (uint32_t b = 0; b < B; b++) {
        int64_t n = (lens[b] + P - 1) / P;
        pages += n;
        max_blocks = n + 1 > max_blocks ? n + 1 : max_blocks;
    }
    pages += 3;
    pg.g = geometry(layout, store, (uint32_t)pages, P, H, D);
    pg.max_blocks = max_blocks;
    const size_t pb = pool_bytes(&pg.g);
    pg.kc = xmalloc(pb);
    pg.vc = xmalloc(pb);
    /* Every slot no sequence writes is NaN (0xFF bytes are NaN in f32, bf16 and e4m3), as
     * memory a pool never wrote may be: a reader must not let keys past a sequence's length
     * (or before its window) reach the output, not even weighted by 0. */
    memset(pg.kc, 0xFF, pb);
    memset(pg.vc, 0xFF, pb);
    pg.B = B;
    pg.k_held = xmalloc(sizeof *pg.k_held * B);
    pg.v_held = xmalloc(sizeof *pg.v_held * B);
    pg.tables = xmalloc(sizeof *pg.tables * B * (size_t)max_blocks);
    memset(pg.tables, 0, sizeof *pg.tables * B * (size_t)max_blocks);
    uint32_t *order = page_order((uint32_t)pages);
    uint32_t next = 0;
    for (uint32_t b = 0; b < B; b++) {
        const int64_t len = lens[b], n = (len + P - 1) / P;
        for (int64_t j = 0; j < n; j++)
            pg.tables[b * max_blocks + j] = (int32_t)order[next++];
        pg.k_held[b] = pg.v_held[b] = NULL;
        if (len == 0)
            continue;
        int32_t *slots = xmalloc(sizeof *slots * (size_t)len);
        for (int64_t t = 0; t < len; t++)
            slots[t] = (int32_t)(pg.tables[b * max_blocks + t / P] * (int64_t)P + t % P);
        const size_t n_vals = (size_t)len * H * D;
        float *k = xmalloc(n_vals * sizeof *k), *v = xmalloc(n_vals * sizeof *v);
        for (size_t i = 0; i < n_vals; i++) {
            k[i] = (float)sy_rng_normal(&rng);
            v[i] = (float)sy_rng_normal(&rng);
        }
        int64_t shape[3] = {len, H, D};
        sy_kv_write_args w;
        memset(&w, 0, sizeof w);
        w.struct_size = sizeof w;
        w.geom = pg.g;
        w.k = sy_tensor_contiguous(k, F32, 3, shape);
        w.v = sy_tensor_contiguous(v, F32, 3, shape);
        w.slots = index_tensor(slots, len);
        w.k_cache = pg.kc;
        w.v_cache = pg.vc;
        w.k_scale = K_SCALE;
        w.v_scale = V_SCALE;
        sy_error err = {{0}};
        const pair *p = kv_pair(layout);
        call("cpu write", ((const sy_kv_layout_ops *)p->cpu->ops)->write(p->cpu_ctx, NULL, &w, &err), &err);
        pg.k_held[b] = xmalloc(n_vals * sizeof(float));
        pg.v_held[b] = xmalloc(n_vals * sizeof(float));
        read_back(layout, &pg, slots, len, pg.k_held[b], pg.v_held[b]);
        free(slots), free(k), free(v);
        const int64_t first_pos = len - (chunk ? chunk[b] : 1);
        if (window > 0 && first_pos + 1 > window)
            for (int64_t j = 0; j < (first_pos + 1 - window) / P; j++)
                pg.tables[b * max_blocks + j] = 0;
    }
    free(order);
    return pg;
}

static void free_paged(paged *pg)
{
    for (uint32_t b = 0; b < pg->B; b++)
        free(pg->k_held[b]), free(pg->v_held[b]);
    free(pg->k_held), free(pg->v_held);
    free(pg->kc), free(pg->vc), free(pg->tables);
}

/* Decode attention in double precision (tests/attention/attn_reference.c) over what the pool
 * holds, [B][hq][D]: the keys of the window (all of them without one), q as f32 rows of q_row. */
static double *decode_reference(const paged *pg, const float *q, int64_t q_row, uint32_t hq, const int32_t *lens,
                                int32_t window, const float *sinks, double scale)
{
    const uint32_t H = pg->g.kv_heads, D = pg->g.head_dim;
    double *ref = xmalloc(sizeof *ref * pg->B * hq * D);
    for (uint32_t b = 0; b < pg->B; b++) {
        const int64_t len = lens[b], lo = window > 0 && len > window ? len - window : 0;
        for (uint32_t h = 0; h < hq; h++) {
            double *out = ref + ((size_t)b * hq + h) * D;
            if (len == 0) {
                memset(out, 0, sizeof *out * D);
                continue;
            }
            const size_t head = (size_t)(h / (hq / H)) * D;
            sy_ref_attend(q + (size_t)b * (size_t)q_row + (size_t)h * D, D, pg->k_held[b] + head,
                          pg->v_held[b] + head, (size_t)H * D, lo, len, scale, sinks ? &sinks[h] : NULL, out, NULL);
        }
    }
    return ref;
}

/* f32 outputs against a double reference, folded into the case's verdict: `ok` cleared past
 * `tol`, the distance appended to `detail`. */
static void check_against_double(const float *test, double *ref, size_t n, double tol, int *ok, char *detail,
                                 size_t detail_len)
{
    closeness_sum s = {{0, 0, 0}, 0, 0};
    for (size_t i = 0; i < n; i++)
        closeness_add(&s, test[i], ref[i]);
    const closeness c = closeness_end(&s);
    *ok = *ok && c.nonfinite == 0 && c.rel_l2 <= tol;
    snprintf(detail, detail_len, "; double reference %.2e (%lld non-finite)", c.rel_l2, c.nonfinite);
    free(ref);
}

static float *make_sinks(uint32_t hq)
{
    float *s = xmalloc(sizeof *s * hq);
    for (uint32_t i = 0; i < hq; i++)
        s[i] = (float)sy_rng_range(&rng, 1.0, 7.0);
    return s;
}

typedef struct decode_shape {
    heads h;
    uint32_t layout;
    int32_t kv, q;
    uint32_t P;
    uint32_t B;
    int32_t lens[8];
    int32_t window;
    uint8_t sinks;
    int32_t splits;
    uint8_t q_pad; /* q rows 8 elements wider than their heads, as linear.fuse_qkv leaves them */
} decode_shape;

static void decode_case(const decode_shape *s)
{
    char name[160];
    snprintf(name, sizeof name, "attn.decode/%s/%s/q%s/P%u/Hq%uHkv%uD%u/B%u/ctx%d/w%d%s/splits%d%s",
             layout_tag(s->layout), tag(s->kv), tag(s->q), s->P, s->h.hq, s->h.hkv, s->h.d, s->B, s->lens[0],
             s->window, s->sinks ? "/sinks" : "", s->splits, s->q_pad ? "/qstride" : "");
    if (!want(name))
        return;
    paged pg = make_paged(s->layout, s->kv, s->P, s->h.hkv, s->h.d, s->B, s->lens, NULL, s->window);
    const size_t pb = pool_bytes(&pg.g), q_elems = (size_t)s->B * s->h.hq * s->h.d, qe = es(s->q);
    void *q = xmalloc(q_elems * qe), *out_cpu = xmalloc(q_elems * qe), *out_gpu = xmalloc(q_elems * qe);
    void *out_gpu2 = xmalloc(q_elems * qe);
    fill_q(s->q, s->kv, q, q_elems);
    const int64_t q_width = (int64_t)s->h.hq * s->h.d, q_row = q_width + (s->q_pad ? 8 : 0);
    q = spread_rows(q, s->B, q_width, q_row, qe);
    const size_t q_bytes = (size_t)(s->B * q_row) * qe;
    float *sinks = s->sinks ? make_sinks(s->h.hq) : NULL;
    int64_t qshape[3] = {s->B, s->h.hq, s->h.d}, tshape[2] = {s->B, pg.max_blocks}, sshape[1] = {s->h.hq};
    sy_attn_decode_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.geom = pg.g;
    a.q = sy_tensor_contiguous(q, s->q, 3, qshape);
    a.q.stride[0] = q_row;
    a.out = sy_tensor_contiguous(out_cpu, s->q, 3, qshape);
    a.k_cache = pg.kc;
    a.v_cache = pg.vc;
    a.block_tables = sy_tensor_contiguous(pg.tables, SY_DTYPE_I32, 2, tshape);
    a.context_lens = index_tensor((int32_t *)s->lens, s->B);
    if (sinks)
        a.sinks = sy_tensor_contiguous(sinks, F32, 1, sshape);
    a.scale = (float)(1.0 / sqrt((double)s->h.d));
    a.window = s->window;
    a.k_scale = K_SCALE;
    a.v_scale = V_SCALE;
    a.num_splits = s->splits;
    sy_error err = {{0}};
    const sy_attention_ops *cpu_ops = attn.cpu->ops, *gpu_ops = attn.gpu->ops;
    call("cpu decode", cpu_ops->decode_paged(attn.cpu_ctx, NULL, &a, &err), &err);

    void *d_kc = dev_copy(pg.kc, pb), *d_vc = dev_copy(pg.vc, pb), *d_q = dev_copy(q, q_bytes);
    void *d_out = dev_alloc(q_elems * qe);
    void *d_tables = dev_copy(pg.tables, sizeof *pg.tables * s->B * (size_t)pg.max_blocks);
    void *d_lens = dev_copy(s->lens, sizeof s->lens[0] * s->B), *d_sinks = sinks ? dev_copy(sinks, sizeof *sinks * s->h.hq) : NULL;
    sy_attn_decode_args d = a;
    d.q.data = d_q;
    d.out.data = d_out;
    d.k_cache = d_kc;
    d.v_cache = d_vc;
    d.block_tables.data = d_tables;
    d.context_lens.data = d_lens;
    d.sinks.data = d_sinks;
    call("gpu decode", gpu_ops->decode_paged(attn.gpu_ctx, stream, &d, &err), &err);
    download(out_gpu, d_out, q_elems * qe);
    /* The GPU against itself at another split count: 0 (its own choice) or 5. */
    d.num_splits = s->splits == 0 ? 5 : 0;
    GPU_CALL("poison", gpu->memset_async(gpu_ctx, stream, d_out, 0xFF, q_elems * qe, GERR));
    call("gpu decode", gpu_ops->decode_paged(attn.gpu_ctx, stream, &d, &err), &err);
    download(out_gpu2, d_out, q_elems * qe);

    const double tol = attention_tolerance(s->q, s->kv);
    closeness c = compare_values(s->q, out_gpu, out_cpu, q_elems), c2 = compare_values(s->q, out_gpu2, out_gpu, q_elems);
    int ok = c.nonfinite == 0 && c.rel_l2 <= tol && c2.nonfinite == 0 && c2.rel_l2 <= tol;
    /* f32 outputs also against the double reference (the bound is the GPU's own error; the cpu
     * twin's is about 1e-7). */
    char vs_double[64] = "";
    if (s->q == F32)
        check_against_double(out_gpu, decode_reference(&pg, q, q_row, s->h.hq, s->lens, s->window, sinks, a.scale),
                             q_elems, tol, &ok, vs_double, sizeof vs_double);
    verdict(name, ok,
            "rel_l2 %.2e (max abs %.2e, %lld non-finite) <= %.0e; splits %d vs %d: %.2e%s", c.rel_l2, c.max_abs,
            c.nonfinite, tol, s->splits, d.num_splits, c2.rel_l2, vs_double);
    dev_free(d_kc), dev_free(d_vc), dev_free(d_q), dev_free(d_out), dev_free(d_tables), dev_free(d_lens);
    if (d_sinks)
        dev_free(d_sinks);
    free(q), free(out_cpu), free(out_gpu), free(out_gpu2), free(sinks);
    free_paged(&pg);
}

static void decode_cases(void)
{
    static const decode_shape shapes[] = {
        /* gpt-oss-120b: the conformance list, both layouts */
        {GPT_OSS, NHD, BF16, BF16, 16, 4, {1000, 1, 129, 77}, 0, 1, 0, 0},
        {GPT_OSS, V5D, BF16, BF16, 64, 4, {1000, 1, 129, 77}, 128, 1, 3, 0},
        {GPT_OSS, NHD, BF16, F32, 128, 4, {1000, 1, 129, 77}, 128, 0, 1, 0},
        {GPT_OSS, V5D, FP8, BF16, 16, 4, {1000, 1, 129, 77}, 0, 1, 3, 0},
        {GPT_OSS, NHD, FP8, F32, 64, 4, {1000, 1, 129, 77}, 128, 1, 0, 0},
        {GPT_OSS, V5D, FP8, BF16, 128, 4, {1000, 1, 129, 77}, 128, 1, 7, 0},
        {GPT_OSS, V5D, F32, F32, 16, 3, {300, 17, 128}, 0, 1, 3, 0},
        {GPT_OSS, NHD, F32, F32, 16, 3, {300, 17, 128}, 0, 1, 3, 0},
        {GPT_OSS, V5D, BF16, BF16, 64, 2, {16385, 4100}, 0, 1, 0, 0},
        {GPT_OSS, NHD, FP8, BF16, 128, 2, {16385, 4100}, 128, 1, 3, 0},
        /* gpt-oss decode batches: long contexts, one long sequence (split-K), window 128 */
        {GPT_OSS, V5D, BF16, BF16, 64, 8, {8192, 8191, 8193, 7000, 64, 65, 1, 4097}, 0, 1, 0, 0},
        {GPT_OSS, NHD, BF16, BF16, 64, 8, {8192, 8191, 8193, 7000, 64, 65, 1, 4097}, 128, 1, 0, 0},
        {GPT_OSS, V5D, FP8, BF16, 64, 8, {8192, 8191, 8193, 7000, 64, 65, 1, 4097}, 0, 1, 0, 0},
        {GPT_OSS, V5D, BF16, BF16, 64, 1, {32768}, 0, 1, 0, 0},
        {GPT_OSS, NHD, FP8, BF16, 64, 1, {32768}, 0, 1, 0, 0},
        {GPT_OSS, V5D, BF16, BF16, 64, 1, {32768}, 128, 1, 0, 0},
        /* odd shapes */
        {ODD40, NHD, BF16, F32, 16, 3, {300, 17, 128}, 37, 1, 3, 0},
        {ODD40, V5D, BF16, F32, 24, 3, {300, 17, 128}, 37, 1, 3, 0},
        {ODD40, NHD, F32, F32, 13, 4, {1000, 1, 129, 77}, 37, 1, 7, 0},
        {ODD48, V5D, FP8, F32, 16, 4, {1000, 1, 129, 77}, 128, 1, 0, 0},
        {ODD48, NHD, BF16, BF16, 128, 3, {300, 17, 128}, 0, 1, 2, 0},
        {ODD80, V5D, BF16, F32, 64, 4, {1000, 1, 129, 77}, 0, 1, 3, 0},
        {ODD80, NHD, FP8, BF16, 16, 3, {300, 17, 128}, 37, 0, 0, 0},
        {MHA128, V5D, BF16, BF16, 16, 4, {1000, 1, 129, 77}, 128, 1, 3, 0},
        {MHA128, NHD, F32, BF16, 16, 3, {300, 17, 0}, 0, 1, 0, 0},
        {GQA16, V5D, BF16, BF16, 64, 3, {700, 3, 64}, 0, 1, 0, 0},
        {GQA24, NHD, FP8, F32, 8, 3, {700, 3, 65}, 100, 1, 2, 0},
        /* the warp-streaming kernel (pages of whole 64-key tiles) at head dim 128, where one q head
         * fills 1 of the 8 rows of its products, and at 2 head chunks a KV head; all in --quick */
        {MHA128, NHD, FP8, BF16, 64, 3, {300, 17, 128}, 0, 1, 0, 0},
        {MHA128, V5D, FP8, F32, 128, 3, {300, 17, 128}, 100, 1, 3, 0},
        {MHA128, NHD, BF16, F32, 64, 3, {300, 17, 129}, 37, 1, 2, 0},
        {GQA16, NHD, FP8, F32, 64, 3, {700, 3, 64}, 0, 1, 0, 0},
        /* the combine's later batches of loads: at head dim 128 a thread takes every split, here 70
         * of 64 keys each for the first sequence (SY_ATTN_COMBINE_BATCH is 32); the second sees
         * keys in one split of 70 */
        {NARROW128, NHD, BF16, BF16, 64, 2, {4480, 40}, 0, 1, 70, 0},
        /* q as a slice of fused QKV rows: the warp-streaming kernel (whole 64-key tiles) and the
         * block-wide one (pages of 16) */
        {GPT_OSS, NHD, BF16, F32, 64, 3, {300, 17, 129}, 0, 1, 0, 1},
        {GPT_OSS, V5D, BF16, BF16, 16, 3, {300, 17, 128}, 128, 1, 3, 1},
    };
    enum { QUICK_TAIL = 7 };
    const size_t count = sizeof shapes / sizeof shapes[0];
    for (size_t i = 0; i < count; i++) {
        int64_t work = 0;
        for (uint32_t b = 0; b < shapes[i].B; b++)
            work += (int64_t)shapes[i].lens[b] * shapes[i].h.hq;
        if (!quick || ((i < 6 || i % 4 == 0 || i + QUICK_TAIL >= count) && !(emulated && work > EMULATED_QUICK_WORK)))
            decode_case(&shapes[i]);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* attention: prefill                                                                          */

typedef struct prefill_shape {
    heads h;
    int32_t kv, q;
    uint32_t B;
    int32_t lq[4], prefix[4]; /* sequence b: lq[b % 4] queries after prefix[b % 4] keys */
    int32_t causal, window;
    uint8_t sinks, padded, scale_kind; /* PREFILL_SCALE_*: the softmax scale 1 / sqrt(D), its negative, or 0 */
} prefill_shape;

enum { PREFILL_SCALE_USUAL, PREFILL_SCALE_NEGATIVE, PREFILL_SCALE_ZERO };

/* Prefill in double precision over the case's K/V as given (fp8 times its scale), [Tq][hq][D]:
 * query i of a sequence of lq queries and lk keys sits at position p = lk - lq + i and sees keys
 * [p + 1 - window, p] when causal or windowed, all lk otherwise; q as f32 rows of q_row. */
static double *prefill_reference(const prefill_shape *s, const float *q, int64_t q_row, const void *k, const void *v,
                                 int64_t kv_s0, const int32_t *cu_q, const int32_t *cu_k, const float *sinks,
                                 double scale)
{
    const uint32_t hq = s->h.hq, H = s->h.hkv, D = s->h.d;
    const int64_t Tq = cu_q[s->B], Tk = cu_k[s->B], kv_row = (int64_t)H * D;
    float *kf = xmalloc(sizeof *kf * (size_t)(Tk * kv_row)), *vf = xmalloc(sizeof *vf * (size_t)(Tk * kv_row));
    for (int64_t t = 0; t < Tk; t++)
        for (int64_t e = 0; e < kv_row; e++) {
            kf[t * kv_row + e] = held_value(s->kv, k, (size_t)(t * kv_s0 + e), K_SCALE);
            vf[t * kv_row + e] = held_value(s->kv, v, (size_t)(t * kv_s0 + e), V_SCALE);
        }
    double *ref = xmalloc(sizeof *ref * (size_t)Tq * hq * D);
    for (uint32_t b = 0; b < s->B; b++) {
        const int64_t lq = cu_q[b + 1] - cu_q[b], lk = cu_k[b + 1] - cu_k[b];
        for (int64_t i = 0; i < lq; i++) {
            const int64_t p = lk - lq + i, hi = s->causal || s->window > 0 ? p + 1 : lk;
            const int64_t lo = s->window > 0 && p + 1 > s->window ? p + 1 - s->window : 0;
            for (uint32_t h = 0; h < hq; h++) {
                const size_t keys = (size_t)(cu_k[b] * kv_row) + (size_t)(h / (hq / H)) * D;
                sy_ref_attend(q + (size_t)((cu_q[b] + i) * q_row) + (size_t)h * D, D, kf + keys, vf + keys,
                              (size_t)kv_row, lo, hi, scale, sinks ? &sinks[h] : NULL,
                              ref + ((size_t)(cu_q[b] + i) * hq + h) * D, NULL);
            }
        }
    }
    free(kf), free(vf);
    return ref;
}

/* variant: appended to the case's name. */
static void prefill_case(const prefill_shape *s, const char *variant)
{
    char name[176];
    snprintf(name, sizeof name, "attn.prefill/%s/q%s/Hq%uHkv%uD%u/B%u/lq%d+%d/%s/w%d%s%s%s%s", tag(s->kv), tag(s->q),
             s->h.hq, s->h.hkv, s->h.d, s->B, s->lq[0], s->prefix[0], s->causal ? "causal" : "full", s->window,
             s->sinks ? "/sinks" : "", s->padded ? "/padded" : "",
             s->scale_kind == PREFILL_SCALE_NEGATIVE ? "/negscale" : s->scale_kind == PREFILL_SCALE_ZERO ? "/zeroscale" : "",
             variant);
    if (!want(name))
        return;
    const size_t cu_bytes = sizeof(int32_t) * (s->B + 1);
    int32_t *cu_q = xmalloc(cu_bytes), *cu_k = xmalloc(cu_bytes);
    cu_q[0] = cu_k[0] = 0;
    for (uint32_t b = 0; b < s->B; b++) {
        cu_q[b + 1] = cu_q[b] + s->lq[b % 4];
        cu_k[b + 1] = cu_k[b] + s->lq[b % 4] + s->prefix[b % 4];
    }
    const int64_t Tq = cu_q[s->B], Tk = cu_k[s->B];
    const int64_t kv_row = (int64_t)s->h.hkv * s->h.d, kv_s0 = kv_row + (s->padded ? 3 : 0);
    const size_t q_elems = (size_t)Tq * s->h.hq * s->h.d, kv_elems = (size_t)Tk * kv_s0;
    const size_t qe = es(s->q), ke = es(s->kv);
    void *q = xmalloc(q_elems * qe), *k = xmalloc(kv_elems * ke), *v = xmalloc(kv_elems * ke);
    void *out_cpu = xmalloc(q_elems * qe), *out_gpu = xmalloc(q_elems * qe);
    fill_q(s->q, s->kv, q, q_elems);
    /* Padded cases give q wider rows too, with NaN gaps (a first chunk's q, k, v under linear.fuse_qkv). */
    const int64_t q_width = (int64_t)s->h.hq * s->h.d, q_row = q_width + (s->padded ? 5 : 0);
    q = spread_rows(q, Tq, q_width, q_row, qe);
    const size_t q_bytes = (size_t)(Tq * q_row) * qe;
    for (size_t i = 0; i < kv_elems; i++) {
        store_value(s->kv, k, i, (float)sy_rng_normal(&rng), K_SCALE);
        store_value(s->kv, v, i, (float)sy_rng_normal(&rng), V_SCALE);
    }
    float *sinks = s->sinks ? make_sinks(s->h.hq) : NULL;
    int64_t qshape[3] = {Tq, s->h.hq, s->h.d}, kshape[3] = {Tk, s->h.hkv, s->h.d}, sshape[1] = {s->h.hq};
    int64_t cshape[1] = {s->B + 1};
    sy_attn_prefill_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.q = sy_tensor_contiguous(q, s->q, 3, qshape);
    a.q.stride[0] = q_row;
    a.k = sy_tensor_contiguous(k, s->kv, 3, kshape);
    a.v = sy_tensor_contiguous(v, s->kv, 3, kshape);
    a.k.stride[0] = a.v.stride[0] = kv_s0;
    a.out = sy_tensor_contiguous(out_cpu, s->q, 3, qshape);
    a.cu_seqlens_q = sy_tensor_contiguous(cu_q, SY_DTYPE_I32, 1, cshape);
    a.cu_seqlens_k = sy_tensor_contiguous(cu_k, SY_DTYPE_I32, 1, cshape);
    if (sinks)
        a.sinks = sy_tensor_contiguous(sinks, F32, 1, sshape);
    a.scale = s->scale_kind == PREFILL_SCALE_ZERO ? 0.0f
              : (float)((s->scale_kind == PREFILL_SCALE_NEGATIVE ? -1.0 : 1.0) / sqrt((double)s->h.d));
    a.causal = s->causal;
    a.window = s->window;
    a.k_scale = K_SCALE;
    a.v_scale = V_SCALE;
    sy_error err = {{0}};
    call("cpu prefill", ((const sy_attention_ops *)attn.cpu->ops)->prefill_linear(attn.cpu_ctx, NULL, &a, &err), &err);
    void *d_q = dev_copy(q, q_bytes), *d_k = dev_copy(k, kv_elems * ke), *d_v = dev_copy(v, kv_elems * ke);
    void *d_out = dev_alloc(q_elems * qe), *d_cq = dev_copy(cu_q, cu_bytes), *d_ck = dev_copy(cu_k, cu_bytes);
    void *d_sinks = sinks ? dev_copy(sinks, sizeof *sinks * s->h.hq) : NULL;
    sy_attn_prefill_args d = a;
    d.q.data = d_q;
    d.k.data = d_k;
    d.v.data = d_v;
    d.out.data = d_out;
    d.cu_seqlens_q.data = d_cq;
    d.cu_seqlens_k.data = d_ck;
    d.sinks.data = d_sinks;
    call("gpu prefill", ((const sy_attention_ops *)attn.gpu->ops)->prefill_linear(attn.gpu_ctx, stream, &d, &err), &err);
    download(out_gpu, d_out, q_elems * qe);
    const double tol = attention_tolerance(s->q, s->kv);
    closeness c = compare_values(s->q, out_gpu, out_cpu, q_elems);
    int ok = c.nonfinite == 0 && c.rel_l2 <= tol;
    char vs_double[64] = "";
    if (s->q == F32)
        check_against_double(out_gpu, prefill_reference(s, q, q_row, k, v, kv_s0, cu_q, cu_k, sinks, a.scale), q_elems,
                             tol, &ok, vs_double, sizeof vs_double);
    verdict(name, ok,
            "rel_l2 %.2e (max abs %.2e, %lld non-finite) <= %.0e%s", c.rel_l2, c.max_abs, c.nonfinite, tol, vs_double);
    dev_free(d_q), dev_free(d_k), dev_free(d_v), dev_free(d_out), dev_free(d_cq), dev_free(d_ck);
    if (d_sinks)
        dev_free(d_sinks);
    free(q), free(k), free(v), free(out_cpu), free(out_gpu), free(sinks), free(cu_q), free(cu_k);
}

static void prefill_cases(void)
{
    static const prefill_shape shapes[] = {
        {GPT_OSS, BF16, BF16, 3, {37, 1, 60}, {0, 0, 0}, 1, 0, 1, 0, 0},
        {GPT_OSS, BF16, F32, 3, {37, 1, 60}, {150, 0, 20}, 1, 128, 1, 1, 0},
        {GPT_OSS, FP8, BF16, 3, {37, 1, 100}, {150, 0, 20}, 1, 0, 1, 0, 0},
        {GPT_OSS, FP8, F32, 2, {64, 70}, {0, 200}, 1, 128, 0, 0, 0},
        {GPT_OSS, F32, F32, 2, {5, 33}, {7, 0}, 1, 0, 1, 1, 0},
        {GPT_OSS, BF16, BF16, 2, {600, 300}, {1000, 0}, 1, 128, 1, 0, 0},
        {GPT_OSS, BF16, BF16, 1, {1024}, {0}, 1, 0, 1, 0, 0},
        {GPT_OSS, BF16, BF16, 2, {512, 129}, {512, 3}, 1, 0, 1, 0, 0},
        {ODD40, BF16, F32, 3, {5, 64, 3}, {0, 0, 0}, 0, 0, 1, 0, 0},
        {ODD40, BF16, BF16, 3, {5, 64, 3}, {11, 1, 40}, 0, 0, 0, 1, 0},
        {ODD48, FP8, F32, 2, {17, 2}, {50, 3}, 1, 7, 1, 0, 0},
        {ODD80, BF16, F32, 2, {100, 1}, {0, 500}, 1, 0, 1, 0, 0},
        {MHA128, F32, F32, 2, {70, 9}, {30, 0}, 1, 16, 1, 1, 0},
        {GQA24, FP8, BF16, 3, {40, 0, 77}, {10, 5, 0}, 1, 0, 1, 0, 0},
        /* the tensor-core kernel at head dim 128 with bf16 q, and with 24 heads a KV head (blocks
         * whose rows are not all used) at head dim 72 */
        {MHA128, BF16, BF16, 2, {70, 200}, {30, 0}, 1, 0, 1, 0, 0},
        {GQA24, BF16, BF16, 2, {50, 33}, {0, 20}, 1, 0, 1, 0, 0},
        /* rows of 2048 or more keys on average, and enough of them for two waves of blocks on up
         * to 166 multiprocessors: the tensor-core kernel's LONG variant (tiles of 128 keys) on
         * mma.sync, and many 64-key tiles a row on the warpgroup products, ragged with prefixes,
         * and under a window of more than 2048 */
        {GPT_OSS, BF16, BF16, 2, {700, 301}, {1500, 2900}, 1, 0, 1, 0, 0},
        {GPT_OSS, BF16, BF16, 1, {1000}, {2500}, 1, 2100, 1, 0, 0},
        /* more sequences than a warp has lanes (the blocks' search of the batch: lanes sum the
         * query tiles of several sequences each), a quarter of them without queries; q copied as
         * it is where it can be, and (a negative scale) passed through registers with its sign
         * flipped */
        {GPT_OSS, BF16, BF16, 70, {9, 0, 17, 1}, {3, 5, 0, 64}, 1, 0, 1, 0, 0},
        {GPT_OSS, BF16, BF16, 70, {9, 0, 17, 1}, {3, 5, 0, 64}, 1, 40, 1, 0, PREFILL_SCALE_NEGATIVE},
        /* a zero scale: every key of a row weighs the same, masked keys none (0 x -inf is NaN) */
        {GPT_OSS, BF16, BF16, 2, {200, 77}, {100, 0}, 1, 128, 1, 0, PREFILL_SCALE_ZERO},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int64_t work = 0;
        for (uint32_t b = 0; b < shapes[i].B; b++)
            work += (int64_t)shapes[i].lq[b % 4] * (shapes[i].lq[b % 4] + shapes[i].prefix[b % 4]) / 2 * shapes[i].h.hq / 64;
        if (!quick || (i % 3 == 0 && !(emulated && work > EMULATED_QUICK_WORK))) {
            prefill_case(&shapes[i], "");
#if defined(SY_CHECK_EMULATED) && SY_EMU_WARP_SIZE == 32
            /* The emulated device runs the warpgroup products (head dim up to 64, bf16 q and K/V
             * with 16-byte aligned rows) as an H200 does; these cases again as other devices run
             * them, on mma.sync. */
            if (shapes[i].kv == BF16 && shapes[i].q == BF16 && shapes[i].h.d <= 64 && !shapes[i].padded) {
                sy_attn_paged_gpu_emu_prefill_warpgroup(attn.gpu_ctx, 0);
                prefill_case(&shapes[i], "/mma_sync");
                sy_attn_paged_gpu_emu_prefill_warpgroup(attn.gpu_ctx, 1);
            }
#endif
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* attention: prefill over the pool's pages (prefill_paged)                                    */

typedef struct paged_prefill_shape {
    heads h;
    uint32_t layout;
    int32_t kv, q;
    uint32_t P;
    uint32_t B;
    int32_t lens[4], chunk[4]; /* sequence b: the last chunk[b] of its lens[b] keys are queries */
    int32_t window;
    uint8_t sinks;
} paged_prefill_shape;

static void paged_prefill_case(const paged_prefill_shape *s, const char *variant)
{
    char name[176];
    int32_t lq = 0;
    for (uint32_t b = 0; b < s->B; b++)
        lq += s->chunk[b];
    snprintf(name, sizeof name, "attn.prefill_paged/%s/%s/q%s/P%u/Hq%uHkv%uD%u/B%u/ctx%d/lq%d/w%d%s%s",
             layout_tag(s->layout), tag(s->kv), tag(s->q), s->P, s->h.hq, s->h.hkv, s->h.d, s->B, s->lens[0], lq,
             s->window, s->sinks ? "/sinks" : "", variant);
    if (!want(name))
        return;
    paged pg = make_paged(s->layout, s->kv, s->P, s->h.hkv, s->h.d, s->B, s->lens, s->chunk, s->window);
    const size_t pb = pool_bytes(&pg.g), cu_bytes = sizeof(int32_t) * (s->B + 1);
    int32_t *cu_q = xmalloc(cu_bytes);
    cu_q[0] = 0;
    for (uint32_t b = 0; b < s->B; b++)
        cu_q[b + 1] = cu_q[b] + s->chunk[b];
    const int64_t Tq = cu_q[s->B];
    const size_t q_elems = (size_t)Tq * s->h.hq * s->h.d, qe = es(s->q);
    void *q = xmalloc(q_elems * qe), *out_cpu = xmalloc(q_elems * qe), *out_gpu = xmalloc(q_elems * qe);
    fill_q(s->q, s->kv, q, q_elems);
    float *sinks = s->sinks ? make_sinks(s->h.hq) : NULL;
    int64_t qshape[3] = {Tq, s->h.hq, s->h.d}, tshape[2] = {s->B, pg.max_blocks}, sshape[1] = {s->h.hq};
    int64_t cshape[1] = {s->B + 1};
    sy_attn_prefill_paged_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.geom = pg.g;
    a.q = sy_tensor_contiguous(q, s->q, 3, qshape);
    a.out = sy_tensor_contiguous(out_cpu, s->q, 3, qshape);
    a.k_cache = pg.kc;
    a.v_cache = pg.vc;
    a.block_tables = sy_tensor_contiguous(pg.tables, SY_DTYPE_I32, 2, tshape);
    a.context_lens = index_tensor((int32_t *)s->lens, s->B);
    a.cu_seqlens_q = sy_tensor_contiguous(cu_q, SY_DTYPE_I32, 1, cshape);
    if (sinks)
        a.sinks = sy_tensor_contiguous(sinks, F32, 1, sshape);
    a.scale = (float)(1.0 / sqrt((double)s->h.d));
    a.causal = 1;
    a.window = s->window;
    a.k_scale = K_SCALE;
    a.v_scale = V_SCALE;
    sy_error err = {{0}};
    call("cpu prefill_paged", sy_attention_prefill_paged(attn.cpu->ops)(attn.cpu_ctx, NULL, &a, &err), &err);
    void *d_kc = dev_copy(pg.kc, pb), *d_vc = dev_copy(pg.vc, pb), *d_q = dev_copy(q, q_elems * qe);
    void *d_out = dev_alloc(q_elems * qe), *d_cq = dev_copy(cu_q, cu_bytes);
    void *d_tables = dev_copy(pg.tables, sizeof *pg.tables * s->B * (size_t)pg.max_blocks);
    void *d_lens = dev_copy(s->lens, sizeof s->lens[0] * s->B);
    void *d_sinks = sinks ? dev_copy(sinks, sizeof *sinks * s->h.hq) : NULL;
    GPU_CALL("poison", gpu->memset_async(gpu_ctx, stream, d_out, 0xFF, q_elems * qe, GERR));
    sy_attn_prefill_paged_args d = a;
    d.q.data = d_q;
    d.out.data = d_out;
    d.k_cache = d_kc;
    d.v_cache = d_vc;
    d.block_tables.data = d_tables;
    d.context_lens.data = d_lens;
    d.cu_seqlens_q.data = d_cq;
    d.sinks.data = d_sinks;
    call("gpu prefill_paged", sy_attention_prefill_paged(attn.gpu->ops)(attn.gpu_ctx, stream, &d, &err), &err);
    download(out_gpu, d_out, q_elems * qe);
    const double tol = attention_tolerance(s->q, s->kv);
    closeness c = compare_values(s->q, out_gpu, out_cpu, q_elems);
    int ok = c.nonfinite == 0 && c.rel_l2 <= tol;
    char vs_double[64] = "";
    if (s->q == F32) {
        /* query i of sequence b sits at lens[b] - chunk[b] + i, over what the pool holds */
        const uint32_t H = s->h.hkv, D = s->h.d, hq = s->h.hq;
        double *ref = xmalloc(sizeof *ref * q_elems);
        for (uint32_t b = 0; b < s->B; b++)
            for (int32_t i = 0; i < s->chunk[b]; i++) {
                const int64_t pos = s->lens[b] - s->chunk[b] + i;
                const int64_t lo = s->window > 0 && pos + 1 > s->window ? pos + 1 - s->window : 0;
                for (uint32_t h = 0; h < hq; h++) {
                    const size_t head = (size_t)(h / (hq / H)) * D, row = ((size_t)(cu_q[b] + i) * hq + h) * D;
                    sy_ref_attend((const float *)q + row, D, pg.k_held[b] + head, pg.v_held[b] + head, (size_t)H * D,
                                  lo, pos + 1, a.scale, sinks ? &sinks[h] : NULL, ref + row, NULL);
                }
            }
        check_against_double(out_gpu, ref, q_elems, tol, &ok, vs_double, sizeof vs_double);
    }
    verdict(name, ok, "rel_l2 %.2e (max abs %.2e, %lld non-finite) <= %.0e%s", c.rel_l2, c.max_abs, c.nonfinite, tol,
            vs_double);
    dev_free(d_kc), dev_free(d_vc), dev_free(d_q), dev_free(d_out), dev_free(d_cq), dev_free(d_tables), dev_free(d_lens);
    if (d_sinks)
        dev_free(d_sinks);
    free(q), free(out_cpu), free(out_gpu), free(sinks), free(cu_q);
    free_paged(&pg);
}

static void paged_prefill_cases(void)
{
    static const paged_prefill_shape shapes[] = {
        /* gpt-oss-120b: pages of 64 (a tile a page), both layouts, window 128 and full */
        {GPT_OSS, NHD, BF16, BF16, 64, 4, {1000, 1, 129, 77}, {37, 1, 64, 77}, 0, 1},
        {GPT_OSS, V5D, BF16, BF16, 64, 4, {1000, 1, 129, 77}, {200, 1, 129, 5}, 128, 1},
        {GPT_OSS, V5D, BF16, F32, 64, 3, {700, 65, 300}, {300, 64, 1}, 0, 1},
        {GPT_OSS, NHD, BF16, F32, 64, 3, {700, 65, 300}, {300, 64, 1}, 128, 1},
        /* pages smaller than a tile (a tile's keys on several pages), and not a multiple of 8 */
        {GPT_OSS, NHD, BF16, BF16, 16, 3, {300, 17, 128}, {65, 17, 100}, 128, 1},
        {GPT_OSS, V5D, BF16, BF16, 16, 3, {300, 17, 128}, {65, 17, 100}, 37, 1},
        {GPT_OSS, V5D, BF16, F32, 24, 3, {300, 17, 128}, {100, 3, 128}, 0, 0},
        {GPT_OSS, NHD, BF16, BF16, 13, 3, {300, 17, 128}, {100, 3, 128}, 37, 1},
        /* pages larger than a tile */
        {GPT_OSS, V5D, BF16, BF16, 128, 2, {1000, 129}, {300, 129}, 128, 1},
        /* the CUDA-core kernel: fp8 and f32 pools */
        {GPT_OSS, V5D, FP8, BF16, 64, 3, {700, 65, 300}, {300, 64, 1}, 128, 1},
        {GPT_OSS, NHD, FP8, F32, 16, 3, {300, 17, 128}, {65, 17, 100}, 0, 1},
        {ODD40, V5D, F32, F32, 16, 3, {300, 17, 128}, {65, 17, 100}, 37, 1},
        /* head dim bucket 128 (mma.sync): a vectorized_5d V tile of 128 dims a key group, head dims
         * short of the bucket, pages smaller than a tile */
        {ODD80, V5D, BF16, F32, 64, 3, {300, 17, 128}, {65, 17, 100}, 0, 1},
        {MHA128, NHD, BF16, BF16, 64, 2, {500, 70}, {200, 70}, 128, 1},
        {MHA128, V5D, BF16, BF16, 32, 2, {500, 70}, {200, 70}, 37, 1},
        {ODD48, NHD, BF16, F32, 16, 3, {300, 17, 128}, {65, 17, 100}, 37, 1},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        if (quick && i % 3 != 0)
            continue;
        paged_prefill_case(&shapes[i], "");
#if defined(SY_CHECK_EMULATED) && SY_EMU_WARP_SIZE == 32
        if (shapes[i].kv == BF16 && shapes[i].q == BF16 && shapes[i].h.d <= 64) {
            sy_attn_paged_gpu_emu_prefill_warpgroup(attn.gpu_ctx, 0);
            paged_prefill_case(&shapes[i], "/mma_sync");
            sy_attn_paged_gpu_emu_prefill_warpgroup(attn.gpu_ctx, 1);
        }
#endif
    }
}

/* ------------------------------------------------------------------------------------------ */
/* rope                                                                                        */

static sy_rope_params rope_params(int yarn, uint32_t d)
{
    sy_rope_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.style = SY_ROPE_STYLE_NEOX;
    p.head_dim = d;
    if (yarn) {
        p.scaling = SY_ROPE_SCALING_YARN;
        p.theta = 150000.0f;
        p.yarn_factor = 32.0f;
        p.yarn_beta_fast = 32.0f;
        p.yarn_beta_slow = 1.0f;
        p.yarn_original_max_position = 4096;
    } else {
        p.scaling = SY_ROPE_SCALING_NONE;
        p.theta = 10000.0f;
    }
    return p;
}

/* q [T, Hq, D] and k [T, Hkv, D] in one buffer: separate, or views of a packed [T, Hq + 2 Hkv, D]. */
typedef struct qk {
    void *buf;
    size_t bytes;
    sy_tensor q, k, v;
    int32_t *positions;
} qk;

static qk make_qk(uint32_t T, uint32_t hq, uint32_t hkv, uint32_t d, int32_t dt, int packed)
{
    qk x;
    const int64_t all_heads = hq + 2 * (int64_t)hkv;
    x.bytes = (size_t)T * all_heads * d * es(dt);
    x.buf = xmalloc(x.bytes);
    fill_values(dt, x.buf, (size_t)T * all_heads * d, 1.0f, 1.0f);
    int64_t qs[3] = {T, hq, d}, ks[3] = {T, hkv, d};
    if (packed) {
        x.q = sy_tensor_contiguous(x.buf, dt, 3, qs);
        x.k = sy_tensor_contiguous((char *)x.buf + (size_t)hq * d * es(dt), dt, 3, ks);
        x.v = sy_tensor_contiguous((char *)x.buf + (size_t)(hq + hkv) * d * es(dt), dt, 3, ks);
        x.q.stride[0] = x.k.stride[0] = x.v.stride[0] = all_heads * d;
    } else {
        x.q = sy_tensor_contiguous(x.buf, dt, 3, qs);
        x.k = sy_tensor_contiguous((char *)x.buf + (size_t)T * hq * d * es(dt), dt, 3, ks);
        x.v = sy_tensor_contiguous((char *)x.buf + (size_t)T * (hq + hkv) * d * es(dt), dt, 3, ks);
    }
    x.positions = xmalloc(sizeof *x.positions * T);
    static const int32_t edges[5] = {0, 4095, 4096, 131071, 131072};
    for (uint32_t t = 0; t < T; t++)
        x.positions[t] = t < 5 ? edges[t] : (int32_t)sy_rng_below(&rng, 131073);
    return x;
}

/* The same tensors over another copy of the buffer. */
static sy_tensor rebase(sy_tensor t, const void *from, void *to)
{
    t.data = (char *)to + ((const char *)t.data - (const char *)from);
    return t;
}

typedef struct rope_shape {
    uint32_t T, hq, hkv, d;
    int32_t dtype;
    uint8_t yarn, packed;
} rope_shape;

static void rope_case(const rope_shape *s)
{
    char name[160];
    snprintf(name, sizeof name, "rope.rope/%s/T%u/Hq%uHkv%uD%u/%s%s", tag(s->dtype), s->T, s->hq, s->hkv, s->d,
             s->yarn ? "yarn" : "plain", s->packed ? "/packed" : "");
    if (!want(name))
        return;
    qk x = make_qk(s->T, s->hq, s->hkv, s->d, s->dtype, s->packed);
    void *gpu_result = xmalloc(x.bytes), *d_buf = dev_copy(x.buf, x.bytes);
    void *d_pos = dev_copy(x.positions, sizeof *x.positions * s->T);
    sy_rope_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.params = rope_params(s->yarn, s->d);
    a.q = x.q;
    a.k = x.k;
    a.positions = index_tensor(x.positions, s->T);
    sy_error err = {{0}};
    call("cpu rope", ((const sy_rope_ops *)rope.cpu->ops)->rope(rope.cpu_ctx, NULL, &a, &err), &err);
    sy_rope_args d = a;
    d.q = rebase(x.q, x.buf, d_buf);
    d.k = rebase(x.k, x.buf, d_buf);
    d.positions.data = d_pos;
    call("gpu rope", ((const sy_rope_ops *)rope.gpu->ops)->rope(rope.gpu_ctx, stream, &d, &err), &err);
    download(gpu_result, d_buf, x.bytes);
    const size_t n = x.bytes / es(s->dtype);
    const double tol = s->dtype == F32 ? 2e-6 : 1e-3;
    closeness c = compare_values(s->dtype, gpu_result, x.buf, n);
    long long diff = count_differences(gpu_result, x.buf, n, es(s->dtype));
    verdict(name, c.nonfinite == 0 && c.rel_l2 <= tol, "rel_l2 %.2e <= %.0e, %lld of %zu elements not bit-exact", c.rel_l2,
            tol, diff, n);
    dev_free(d_buf), dev_free(d_pos);
    free(gpu_result), free(x.buf), free(x.positions);
}

typedef struct fused_shape {
    uint32_t T, hq, hkv, d;
    int32_t dtype, store;
    uint32_t layout, P;
    uint8_t packed;
} fused_shape;

static void fused_case(const fused_shape *s)
{
    char name[160];
    snprintf(name, sizeof name, "rope.fused/%s/%s<-%s/P%u/T%u/Hq%uHkv%uD%u%s", layout_tag(s->layout), tag(s->store),
             tag(s->dtype), s->P, s->T, s->hq, s->hkv, s->d, s->packed ? "/packed" : "");
    if (!want(name))
        return;
    qk x = make_qk(s->T, s->hq, s->hkv, s->d, s->dtype, s->packed);
    const uint32_t pages = s->T / s->P + 8;
    sy_kv_geometry g = geometry(s->layout, s->store, pages, s->P, s->hkv, s->d);
    const size_t pb = pool_bytes(&g);
    kv_shape ks = {s->layout, s->store, s->dtype, s->P, s->hkv, s->d, (int32_t)s->T, 0, 0, 0, 0};
    uint32_t *order = page_order(pages);
    int32_t *slots = make_slots(&ks, pages, order);
    void *pool0 = xmalloc(2 * pb);
    fill_bytes(pool0, 2 * pb);

    /* fused on the device */
    void *d_buf = dev_copy(x.buf, x.bytes), *d_pool = dev_copy(pool0, 2 * pb);
    void *d_pos = dev_copy(x.positions, sizeof *x.positions * s->T), *d_slots = dev_copy(slots, sizeof *slots * s->T);
    sy_rope_kv_write_args f;
    memset(&f, 0, sizeof f);
    f.struct_size = sizeof f;
    f.rope.struct_size = sizeof f.rope;
    f.rope.params = rope_params(1, s->d);
    f.rope.q = rebase(x.q, x.buf, d_buf);
    f.rope.k = rebase(x.k, x.buf, d_buf);
    f.rope.positions = index_tensor(d_pos, s->T);
    f.kv.struct_size = sizeof f.kv;
    f.kv.geom = g;
    f.kv.k = f.rope.k;
    f.kv.v = rebase(x.v, x.buf, d_buf);
    f.kv.slots = index_tensor(d_slots, s->T);
    f.kv.k_cache = d_pool;
    f.kv.v_cache = (char *)d_pool + pb;
    f.kv.k_scale = K_SCALE;
    f.kv.v_scale = V_SCALE;
    sy_error err = {{0}};
    call("gpu rope_kv_write", ((const sy_rope_ops *)rope.gpu->ops)->rope_kv_write(rope.gpu_ctx, stream, &f, &err), &err);
    void *fused_buf = xmalloc(x.bytes), *fused_pool = xmalloc(2 * pb);
    download(fused_buf, d_buf, x.bytes);
    download(fused_pool, d_pool, 2 * pb);

    /* rope then write on the device, from the same inputs */
    upload(d_buf, x.buf, x.bytes);
    upload(d_pool, pool0, 2 * pb);
    call("gpu rope", ((const sy_rope_ops *)rope.gpu->ops)->rope(rope.gpu_ctx, stream, &f.rope, &err), &err);
    const pair *p = kv_pair(s->layout);
    call("gpu write", ((const sy_kv_layout_ops *)p->gpu->ops)->write(p->gpu_ctx, stream, &f.kv, &err), &err);
    void *split_buf = xmalloc(x.bytes), *split_pool = xmalloc(2 * pb);
    download(split_buf, d_buf, x.bytes);
    download(split_pool, d_pool, 2 * pb);

    /* the cpu writer fed the GPU's rotated k (and the untouched v) */
    void *cpu_pool = xmalloc(2 * pb);
    memcpy(cpu_pool, pool0, 2 * pb);
    sy_kv_write_args w = f.kv;
    w.k = rebase(x.k, x.buf, fused_buf);
    w.v = rebase(x.v, x.buf, fused_buf);
    w.slots.data = slots;
    w.k_cache = cpu_pool;
    w.v_cache = (char *)cpu_pool + pb;
    call("cpu write", ((const sy_kv_layout_ops *)p->cpu->ops)->write(p->cpu_ctx, NULL, &w, &err), &err);

    /* the cpu's fused op for the rotation's closeness */
    sy_rope_kv_write_args fc = f;
    void *cpu_buf = xmalloc(x.bytes), *cpu_pool2 = xmalloc(2 * pb);
    memcpy(cpu_buf, x.buf, x.bytes);
    memcpy(cpu_pool2, pool0, 2 * pb);
    fc.rope.q = rebase(x.q, x.buf, cpu_buf);
    fc.rope.k = rebase(x.k, x.buf, cpu_buf);
    fc.rope.positions.data = x.positions;
    fc.kv.k = fc.rope.k;
    fc.kv.v = rebase(x.v, x.buf, cpu_buf);
    fc.kv.slots.data = slots;
    fc.kv.k_cache = cpu_pool2;
    fc.kv.v_cache = (char *)cpu_pool2 + pb;
    call("cpu rope_kv_write", ((const sy_rope_ops *)rope.cpu->ops)->rope_kv_write(rope.cpu_ctx, NULL, &fc, &err), &err);

    const size_t n = x.bytes / es(s->dtype), pool_n = 2 * (size_t)g.k_elems, se = es(s->store);
    long long qk_diff = first_difference(fused_buf, split_buf, n, es(s->dtype));
    long long pool_diff = first_difference(fused_pool, split_pool, pool_n, se);
    long long cpu_diff = first_difference(fused_pool, cpu_pool, pool_n, se);
    closeness c = compare_values(s->dtype, fused_buf, cpu_buf, n);
    const double tol = s->dtype == F32 ? 2e-6 : 1e-3;
    verdict(name, qk_diff < 0 && pool_diff < 0 && cpu_diff < 0 && c.nonfinite == 0 && c.rel_l2 <= tol,
            "fused vs rope+write: q/k %s (%lld), pools %s (%lld); pools vs cpu write %s (%lld); rotation vs cpu "
            "rel_l2 %.2e",
            qk_diff < 0 ? "bit-exact" : "DIFFER", qk_diff, pool_diff < 0 ? "bit-exact" : "DIFFER", pool_diff,
            cpu_diff < 0 ? "bit-exact" : "DIFFER", cpu_diff, c.rel_l2);
    dev_free(d_buf), dev_free(d_pool), dev_free(d_pos), dev_free(d_slots);
    free(x.buf), free(x.positions), free(order), free(slots), free(pool0), free(fused_buf), free(fused_pool);
    free(split_buf), free(split_pool), free(cpu_pool), free(cpu_buf), free(cpu_pool2);
}

static void rope_cases(void)
{
    static const rope_shape shapes[] = {
        {9, 64, 8, 64, F32, 1, 0},    {9, 64, 8, 64, BF16, 1, 0},     {13, 64, 8, 64, F32, 1, 1},
        {5, 4, 4, 128, BF16, 0, 0},   {13, 12, 4, 40, F32, 1, 0},     {300, 64, 8, 64, BF16, 1, 1},
        {4096, 64, 8, 64, BF16, 1, 0}, {1000, 64, 8, 64, F32, 1, 1},   {77, 6, 2, 22, BF16, 1, 0},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (!quick || i < 6)
            rope_case(&shapes[i]);
    static const fused_shape fused[] = {
        {9, 64, 8, 64, BF16, BF16, NHD, 16, 0},     {9, 64, 8, 64, F32, FP8, V5D, 64, 0},
        {37, 12, 4, 48, BF16, FP8, NHD, 16, 0},     {37, 12, 4, 48, BF16, FP8, V5D, 48, 1},
        {200, 64, 8, 64, BF16, BF16, V5D, 128, 1},  {200, 64, 8, 64, BF16, BF16, NHD, 128, 0},
        {1000, 64, 8, 64, BF16, FP8, V5D, 64, 0},   {1000, 64, 8, 64, F32, F32, V5D, 16, 1},
        {65, 12, 4, 40, F32, BF16, V5D, 24, 0},     {65, 12, 4, 40, BF16, F32, NHD, 13, 1},
    };
    for (size_t i = 0; i < sizeof fused / sizeof fused[0]; i++)
        if (!quick || i < 5)
            fused_case(&fused[i]);
}

/* ------------------------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    uint64_t seed = 0;
    int seeded = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--full")) {
            full = 1;
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            seed = strtoull(argv[++i], NULL, 0);
            seeded = 1;
        } else if (!strcmp(argv[i], "--filter") && i + 1 < argc) {
            filter = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--quick | --full] [--seed N] [--filter TEXT]\n", argv[0]);
            return 2;
        }
    }
    if (!open_all()) {
        if (registry)
            sy_registry_close(registry);
        return 0;
    }
    if (!seeded)
        seed = sy_test_seed();
    printf("seed: %llu (--seed %llu reproduces)\n", (unsigned long long)seed, (unsigned long long)seed);
    rng.state = seed;
    kv_cases();
    decode_cases();
    prefill_cases();
    paged_prefill_cases();
    rope_cases();
    printf("%d passed, %d failed\n", passed, failed);
    if (passed + failed == 0)
        fprintf(stderr, "%s: no case was selected (--filter)\n", argv[0]);
    unload_pair(&kv_pairs[0]);
    unload_pair(&kv_pairs[1]);
    unload_pair(&attn);
    unload_pair(&rope);
    gpu->stream_destroy(gpu_ctx, stream);
    gpu->fini(gpu_ctx);
    if (registry)
        sy_registry_close(registry);
    return failed || passed == 0 ? 1 : 0;
}
