/* Speed of the host MXFP4 MoE plugins (moe_mxfp4_interleave, moe_mxfp4_separated) at gpt-oss-20b
 * shapes: 32 experts, top 4, hidden 2880, intermediate 2880 (both padded to 3072), random checkpoint
 * and tokens. For each token count: the forward's time, the weight bytes it must read (the
 * experts the routing touches, unpadded rows and blocks, scales and biases), and the passes that
 * show where the time goes, all over the same experts:
 *   stream            read exactly those bytes (the memory ceiling)
 *   decode_layout     decode every used row to f32 through the layout's shuffled addressing,
 *                     in the forward's tiles, no arithmetic beyond the decode
 *   decode_sequential the same number of blocks decoded in storage order: no shuffle math at all
 *   gemm              the forward's sgemm calls on already-decoded tiles, for the experts with more
 *                     than SY_MXFP4_DOT_MAX_TOKENS tokens (fewer take the fused decode-and-multiply,
 *                     which has no separate multiply to time)
 * decode_layout - decode_sequential bounds what the tile layout costs from above: it holds the
 * shuffle addressing and also the scattered stores of a row-major tile for sgemm.
 *
 *     bench_moe_cpu [--out FILE] [--runs N] [--tokens T1,T2,...]
 *
 * Passes run interleaved, one of each per round; each reports the median and the minimum over the
 * rounds (on a shared machine the minimum is the steadier figure). OPENBLAS_NUM_THREADS picks the
 * sgemm threads; the JSON records it.
 *
 * JSON on stdout (or FILE), a table on stderr. */
#include <cblas.h>
/* complex.h, pulled in by cblas.h, defines I; the checkpoint's fields use the usual name. */
#undef I
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_support.h"
#include "moe_checkpoint.h"
#include "moe_mxfp4_cpu.h"
#include "mxfp4_decode_cpu.h"
#include "switchyard/switchyard.h"
#include "sy_test.h"

enum { E = 32, HID = 2880, INTER = 2880, TOPK = 4, TILE = 64, MAX_COUNTS = 16 };

/* Median and minimum of one pass's runs: on a shared machine the minimum is the steadier. */
typedef struct timing {
    double median_ms, min_ms;
} timing;

typedef struct layout_result {
    const char *plugin;
    double prepare_ms;
    timing forward, decode_layout;
} layout_result;

typedef struct token_result {
    int T;
    int experts_used;
    uint64_t weight_bytes;
    double gflop;
    timing stream, decode_sequential, gemm;
    layout_result layout[2];
} token_result;

static void die(const char *what, const sy_error *err)
{
    fprintf(stderr, "bench_moe_cpu: %s: %s\n", what, err->msg);
    exit(1);
}

static sy_tensor t2(void *data, int32_t dtype, int64_t d0, int64_t d1)
{
    int64_t shape[2] = {d0, d1};
    return sy_tensor_contiguous(data, dtype, 2, shape);
}

typedef struct timed_pass {
    void (*fn)(void *);
    void *arg;
    timing *out;
} timed_pass;

/* One warm-up round, then `runs` rounds in which every pass runs once, in turn, so that load from
 * elsewhere on the machine falls on all passes alike rather than on whichever ran at the time. */
static void time_interleaved(const timed_pass *passes, int n, int runs)
{
    double ms[16][64];
    for (int i = 0; i < n; i++)
        passes[i].fn(passes[i].arg);
    for (int r = 0; r < runs; r++)
        for (int i = 0; i < n; i++) {
            double t0 = sy_bench_now_ms();
            passes[i].fn(passes[i].arg);
            ms[i][r] = sy_bench_now_ms() - t0;
        }
    for (int i = 0; i < n; i++) {
        passes[i].out->median_ms = sy_bench_median(ms[i], (size_t)runs);
        passes[i].out->min_ms = ms[i][0];
    }
}

typedef struct pass {
    const sy_plugin_desc *desc;
    const sy_moe_ops *ops;
    void *ctx;
    const uint8_t *prepared;
    sy_moe_sections sec;
    sy_moe_forward_args fwd;
    const int *tokens_of; /* [E]: tokens routed to each expert, 0 = unused */
    float *tile;          /* [TILE][max(H, I)] */
    float *xe, *prod;     /* gemm operands */
    sy_mxfp4_cpu_decoder decoder;
    uint32_t gate_up_layout;
    volatile uint64_t sink;
} pass;

static void run_forward(void *arg)
{
    pass *p = arg;
    sy_error err = {{0}};
    if (p->ops->forward(p->ctx, NULL, &p->fwd, &err) != SY_OK)
        die("forward", &err);
}

/* Used tiles of one expert matrix: row tiles [0, used_tiles) of each of `halves` halves, the first
 * used_blocks * 256 bytes of each (a tile stores its rows block-column by block-column). */
static uint64_t stream_tiles(const uint8_t *m, uint32_t halves, uint32_t half_tiles, uint32_t used_tiles,
                             uint32_t kblocks, uint32_t used_blocks)
{
    uint64_t acc[4] = {0, 0, 0, 0};
    for (uint32_t g = 0; g < halves; g++)
        for (uint32_t t = 0; t < used_tiles; t++) {
            const uint64_t *w = (const uint64_t *)(m + ((uint64_t)(g * half_tiles + t) * kblocks) * 256);
            for (uint32_t i = 0; i < used_blocks * 256 / 8; i += 4) {
                acc[0] ^= w[i];
                acc[1] ^= w[i + 1];
                acc[2] ^= w[i + 2];
                acc[3] ^= w[i + 3];
            }
        }
    return acc[0] ^ acc[1] ^ acc[2] ^ acc[3];
}

static uint64_t stream_bytes(const uint8_t *p, uint64_t n)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        acc ^= w;
    }
    return acc;
}

static void run_stream(void *arg)
{
    pass *p = arg;
    const uint32_t Ip = 3072, Hp = 3072;
    uint64_t acc = 0;
    for (uint32_t e = 0; e < E; e++) {
        if (!p->tokens_of[e])
            continue;
        /* SEPARATED order (GGUU): the gate half's used tiles, then the up half's; INTERLEAVE reads the
         * same tiles in another order, the same bytes. */
        acc ^= stream_tiles(p->prepared + p->sec.w13_blocks + e * p->sec.w13_expert_bytes, 2, Ip / 16, INTER / 16,
                            Hp / 32, HID / 32);
        acc ^= stream_tiles(p->prepared + p->sec.w2_blocks + e * p->sec.w2_expert_bytes, 1, Hp / 16, HID / 16, Ip / 32,
                            INTER / 32);
        acc ^= stream_bytes(p->prepared + p->sec.w13_scales + e * p->sec.w13_expert_scales, p->sec.w13_expert_scales);
        acc ^= stream_bytes(p->prepared + p->sec.w2_scales + e * p->sec.w2_expert_scales, p->sec.w2_expert_scales);
        acc ^= stream_bytes(p->prepared + p->sec.w13_bias + e * 2 * Ip * 4, 2 * Ip * 4);
        acc ^= stream_bytes(p->prepared + p->sec.w2_bias + e * Hp * 4, Hp * 4);
    }
    p->sink = acc;
}

/* The forward's decode: the same 16-row tiles in the same order, the same decoder, nothing else. */
static void run_decode_layout(void *arg)
{
    pass *p = arg;
    uint32_t tiles[TILE / 16];
    for (uint32_t e = 0; e < E; e++) {
        if (!p->tokens_of[e])
            continue;
        const uint8_t *w13 = p->prepared + p->sec.w13_blocks + e * p->sec.w13_expert_bytes;
        const uint8_t *s13 = p->prepared + p->sec.w13_scales + e * p->sec.w13_expert_scales;
        const uint8_t *w2 = p->prepared + p->sec.w2_blocks + e * p->sec.w2_expert_bytes;
        const uint8_t *s2 = p->prepared + p->sec.w2_scales + e * p->sec.w2_expert_scales;
        for (uint32_t i0 = 0; i0 < INTER; i0 += TILE / 2) {
            for (uint32_t g = 0; g < TILE / 32; g++) {
                tiles[g] = sy_moe_w13_tile_row(p->gate_up_layout, i0 + 16 * g, 3072) / 16;
                tiles[TILE / 32 + g] = sy_moe_w13_tile_row(p->gate_up_layout, 3072 + i0 + 16 * g, 3072) / 16;
            }
            sy_mxfp4_cpu_decode_tiles(&p->decoder, w13, s13, 3072 / 32, HID / 32, tiles, TILE / 16, p->tile);
        }
        for (uint32_t n0 = 0; n0 < HID; n0 += TILE) {
            uint32_t n = HID - n0 < TILE ? (HID - n0) / 16 : TILE / 16;
            for (uint32_t g = 0; g < n; g++)
                tiles[g] = n0 / 16 + g;
            sy_mxfp4_cpu_decode_tiles(&p->decoder, w2, s2, 3072 / 32, INTER / 32, tiles, n, p->tile);
        }
    }
    p->sink = (uint64_t)p->tile[7];
}

/* The same number of blocks decoded in storage order, into a tile of the same size, chunk by chunk. */
static void decode_run(const pass *p, const uint8_t *b, const uint8_t *s, uint64_t blocks, uint32_t row_blocks)
{
    const uint64_t chunk = (uint64_t)TILE * row_blocks;
    for (uint64_t i = 0; i < blocks; i += chunk)
        sy_mxfp4_cpu_decode_run(&p->decoder, b + i * 16, s + i, blocks - i < chunk ? blocks - i : chunk, p->tile);
}

static void run_decode_sequential(void *arg)
{
    pass *p = arg;
    for (uint32_t e = 0; e < E; e++) {
        if (!p->tokens_of[e])
            continue;
        decode_run(p, p->prepared + p->sec.w13_blocks + e * p->sec.w13_expert_bytes,
                   p->prepared + p->sec.w13_scales + e * p->sec.w13_expert_scales, 2ull * INTER * (HID / 32), HID / 32);
        decode_run(p, p->prepared + p->sec.w2_blocks + e * p->sec.w2_expert_bytes,
                   p->prepared + p->sec.w2_scales + e * p->sec.w2_expert_scales, (uint64_t)HID * (INTER / 32),
                   INTER / 32);
    }
    p->sink = (uint64_t)p->tile[7];
}

static void run_gemm(void *arg)
{
    pass *p = arg;
    for (uint32_t e = 0; e < E; e++) {
        int te = p->tokens_of[e];
        if (te <= SY_MXFP4_DOT_MAX_TOKENS)
            continue;
        for (uint32_t i0 = 0; i0 < INTER; i0 += TILE / 2)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, te, TILE, HID, 1.0f, p->xe, HID, p->tile, HID, 0.0f,
                        p->prod, TILE);
        for (uint32_t n0 = 0; n0 < HID; n0 += TILE)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, te, TILE, INTER, 1.0f, p->xe, INTER, p->tile, INTER,
                        0.0f, p->prod, TILE);
    }
    p->sink = (uint64_t)p->prod[3];
}

static void json_timing(sy_json *j, const char *name, const timing *t)
{
    char key[64];
    snprintf(key, sizeof key, "%s_median_ms", name);
    sy_bench_kv_double(j, key, t->median_ms);
    snprintf(key, sizeof key, "%s_min_ms", name);
    sy_bench_kv_double(j, key, t->min_ms);
}

static int parse_tokens(const char *s, int *out)
{
    int n = 0;
    while (s && *s && n < MAX_COUNTS) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 4096)
            return 0;
        out[n++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return 0;
    }
    return n;
}

int main(int argc, char **argv)
{
    const char *out_path = NULL;
    int runs = 5, counts[MAX_COUNTS] = {1, 4, 32, 128}, n_counts = 4;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out_path = argv[++i];
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc && (runs = atoi(argv[++i])) >= 1 && runs <= 64)
            continue;
        else if (!strcmp(argv[i], "--tokens") && i + 1 < argc && (n_counts = parse_tokens(argv[++i], counts)) > 0)
            continue;
        else {
            fprintf(stderr, "usage: %s [--out FILE] [--runs 1..64] [--tokens T1,T2,... (1..4096)]\n", argv[0]);
            return 2;
        }
    }
    sy_registry_options opts = {sizeof opts, 0, NULL, 0, 1, 0};
    sy_registry *reg = NULL;
    sy_error err = {{0}};
    if (sy_registry_open(&opts, &reg, &err) != SY_OK)
        die("registry", &err);
    static const char *const names[2] = {"moe_mxfp4_interleave", "moe_mxfp4_separated"};

    sy_rng rng = {12345};
    fprintf(stderr, "bench_moe_cpu: random checkpoint, %d experts x (2x%d x %d + %d x %d) MXFP4 ...\n", E, INTER, HID,
            HID, INTER);
    moe_checkpoint ck = moe_checkpoint_random(&rng, E, HID, INTER, 118, 122);
    sy_moe_shape shape = {sizeof shape, E, HID, INTER, TOPK, 1.702f, 7.0f, 0};
    uint64_t bytes = 0;
    pass p[2];
    memset(p, 0, sizeof p);
    double prepare_ms[2];
    for (int l = 0; l < 2; l++) {
        const sy_registry_entry *entry = sy_registry_find(reg, SY_KIND_MOE, names[l], "cpu");
        if (!entry) {
            fprintf(stderr, "bench_moe_cpu: plugin %s (cpu) not found; build it first\n", names[l]);
            return 1;
        }
        p[l].desc = entry->plugin;
        p[l].ops = entry->plugin->ops;
        if (sy_registry_init_plugin(entry, NULL, &p[l].ctx, &err) != SY_OK)
            die("init", &err);
        if (p[l].ops->prepared_bytes(&shape, &bytes, &err) != SY_OK)
            die("prepared_bytes", &err);
        uint8_t *buf = aligned_alloc(256, (bytes + 255) / 256 * 256);
        sy_moe_prepare_args pa = moe_checkpoint_prepare_args(&ck, &shape, buf);
        double t0 = sy_bench_now_ms();
        if (p[l].ops->prepare(p[l].ctx, NULL, &pa, &err) != SY_OK)
            die("prepare", &err);
        prepare_ms[l] = sy_bench_now_ms() - t0;
        p[l].prepared = buf;
        sy_moe_dims d = sy_moe_dims_of(E, HID, INTER);
        p[l].sec = sy_moe_sections_of(&d);
        p[l].tile = aligned_alloc(64, sizeof(float) * TILE * 3072);
        sy_mxfp4_cpu_decoder_init(&p[l].decoder, SY_MXFP4_DECODE_AVX512);
        p[l].gate_up_layout = ((const sy_moe_caps *)entry->plugin->caps)->gate_up_layout;
    }
    moe_checkpoint_free(&ck);

    token_result res[MAX_COUNTS];
    const uint64_t per_expert = 2ull * INTER * HID / 2 + 2ull * INTER * HID / 32 + 2ull * INTER * 4 +
                                (uint64_t)HID * INTER / 2 + (uint64_t)HID * INTER / 32 + (uint64_t)HID * 4;
    for (int c = 0; c < n_counts; c++) {
        const int T = counts[c];
        token_result *r = &res[c];
        memset(r, 0, sizeof *r);
        r->T = T;
        float *x = malloc(sizeof(float) * T * HID), *logits = malloc(sizeof(float) * T * E);
        float *weights = malloc(sizeof(float) * T * TOPK), *out = malloc(sizeof(float) * T * HID);
        int32_t *ids = malloc(sizeof(int32_t) * T * TOPK);
        int tokens_of[E] = {0};
        sy_fill_uniform_f32(&rng, x, (size_t)T * HID, -1, 1);
        sy_fill_uniform_f32(&rng, logits, (size_t)T * E, -2, 2);
        sy_moe_route_args ra = {sizeof ra,
                                0,
                                shape,
                                t2(logits, SY_DTYPE_F32, T, E),
                                t2(ids, SY_DTYPE_I32, T, TOPK),
                                t2(weights, SY_DTYPE_F32, T, TOPK)};
        if (p[0].ops->route(p[0].ctx, NULL, &ra, &err) != SY_OK)
            die("route", &err);
        for (int i = 0; i < T * TOPK; i++)
            tokens_of[ids[i]]++;
        for (int e = 0; e < E; e++)
            r->experts_used += tokens_of[e] > 0;
        r->weight_bytes = (uint64_t)r->experts_used * per_expert;
        r->gflop = 2.0 * T * TOPK * (2.0 * INTER * HID + (double)HID * INTER) * 1e-9;
        for (int l = 0; l < 2; l++) {
            p[l].tokens_of = tokens_of;
            p[l].xe = malloc(sizeof(float) * T * TOPK * HID);
            p[l].prod = malloc(sizeof(float) * T * TOPK * TILE);
            sy_fill_uniform_f32(&rng, p[l].xe, (size_t)T * TOPK * HID, -1, 1);
            sy_fill_uniform_f32(&rng, p[l].tile, (size_t)TILE * 3072, -1, 1);
            sy_moe_forward_args fa = {sizeof fa,
                                      0,
                                      shape,
                                      p[l].prepared,
                                      t2(x, SY_DTYPE_F32, T, HID),
                                      t2(ids, SY_DTYPE_I32, T, TOPK),
                                      t2(weights, SY_DTYPE_F32, T, TOPK),
                                      t2(out, SY_DTYPE_F32, T, HID)};
            p[l].fwd = fa;
            r->layout[l].plugin = names[l];
            r->layout[l].prepare_ms = prepare_ms[l];
        }
        const timed_pass passes[] = {
            {run_forward, &p[0], &r->layout[0].forward},
            {run_forward, &p[1], &r->layout[1].forward},
            {run_stream, &p[1], &r->stream},
            {run_decode_layout, &p[0], &r->layout[0].decode_layout},
            {run_decode_layout, &p[1], &r->layout[1].decode_layout},
            {run_decode_sequential, &p[1], &r->decode_sequential},
            {run_gemm, &p[1], &r->gemm},
        };
        time_interleaved(passes, (int)(sizeof passes / sizeof passes[0]), runs);
        fprintf(stderr,
                "T %4d: %2d experts, %6.1f MB of weights | stream %7.2f ms (%5.1f GB/s) | decode seq %7.2f ms | "
                "gemm %7.2f ms   (minimum of %d runs)\n",
                T, r->experts_used, r->weight_bytes * 1e-6, r->stream.min_ms, r->weight_bytes / r->stream.min_ms * 1e-6,
                r->decode_sequential.min_ms, r->gemm.min_ms, runs);
        for (int l = 0; l < 2; l++)
            fprintf(stderr,
                    "        %-21s forward %7.2f ms (%5.2f GB/s of weights, %5.1f GFLOP/s) | decode layout %7.2f ms\n",
                    names[l], r->layout[l].forward.min_ms, r->weight_bytes / r->layout[l].forward.min_ms * 1e-6,
                    r->gflop / r->layout[l].forward.min_ms * 1e3, r->layout[l].decode_layout.min_ms);
        for (int l = 0; l < 2; l++) {
            free(p[l].xe);
            free(p[l].prod);
        }
        free(x);
        free(logits);
        free(weights);
        free(out);
        free(ids);
    }

    FILE *f = sy_bench_open_out("bench_moe_cpu", out_path);
    sy_json j;
    sy_bench_json_begin(&j, f, "moe_cpu", runs);
    sy_bench_kv_string(&j, "timing",
                       "every pass once per round, rounds interleaved; *_median_ms and *_min_ms over the rounds");
    sy_json_key(&j, "shape");
    sy_json_begin_object(&j);
    sy_bench_kv_int(&j, "experts", E);
    sy_bench_kv_int(&j, "top_k", TOPK);
    sy_bench_kv_int(&j, "hidden", HID);
    sy_bench_kv_int(&j, "intermediate", INTER);
    sy_bench_kv_int(&j, "padded", 3072);
    sy_bench_kv_string(&j, "activations", "f32");
    sy_json_end_object(&j);
    sy_json_key(&j, "results");
    sy_json_begin_array(&j);
    for (int c = 0; c < n_counts; c++) {
        const token_result *r = &res[c];
        sy_json_begin_object(&j);
        sy_bench_kv_int(&j, "tokens", r->T);
        sy_bench_kv_int(&j, "experts_used", r->experts_used);
        sy_bench_kv_uint(&j, "weight_bytes_read", r->weight_bytes);
        sy_bench_kv_double(&j, "gflop", r->gflop);
        json_timing(&j, "stream", &r->stream);
        sy_bench_kv_double(&j, "stream_gbps_best", r->weight_bytes / r->stream.min_ms * 1e-6);
        json_timing(&j, "decode_sequential", &r->decode_sequential);
        json_timing(&j, "gemm", &r->gemm);
        sy_json_key(&j, "layouts");
        sy_json_begin_array(&j);
        for (int l = 0; l < 2; l++) {
            const layout_result *lr = &r->layout[l];
            sy_json_begin_object(&j);
            sy_bench_kv_string(&j, "plugin", lr->plugin);
            sy_bench_kv_double(&j, "prepare_ms", lr->prepare_ms);
            json_timing(&j, "forward", &lr->forward);
            sy_bench_kv_double(&j, "forward_weight_gbps_best", r->weight_bytes / lr->forward.min_ms * 1e-6);
            sy_bench_kv_double(&j, "forward_gflops_best", r->gflop / lr->forward.min_ms * 1e3);
            json_timing(&j, "decode_layout", &lr->decode_layout);
            sy_bench_kv_double(&j, "layout_overhead_ms_best", lr->decode_layout.min_ms - r->decode_sequential.min_ms);
            sy_json_end_object(&j);
        }
        sy_json_end_array(&j);
        sy_json_end_object(&j);
    }
    sy_json_end_array(&j);
    sy_json_end_object(&j);
    fputc('\n', f);
    if (f != stdout)
        fclose(f);
    for (int l = 0; l < 2; l++) {
        p[l].desc->fini(p[l].ctx);
        free((void *)p[l].prepared);
        free(p[l].tile);
    }
    sy_registry_close(reg);
    return 0;
}
