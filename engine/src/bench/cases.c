#include "bench/cases.h"

#include <stdio.h>
#include <string.h>

#include "switchyard/switchyard.h"

enum { BF16 = SY_DTYPE_BF16, FP8 = SY_DTYPE_FP8_E4M3, MAX_CASES = 64 };

static const uint32_t KV_LAYOUTS[] = {SY_LAYOUT_NHD, SY_LAYOUT_VECTORIZED_5D};
static const uint32_t MOE_LAYOUTS[] = {SY_MOE_GATE_UP_INTERLEAVE, SY_MOE_GATE_UP_SEPARATED};

/* A shape at full and quick size, and the part of the case name it gives. */
typedef struct shape_row {
    const char *tag;
    sy_bench_shape full, quick;
} shape_row;

/* Decode: B sequences of `context` keys. Quick keeps every feature (a window shorter than the
 * context, several pages a sequence, split-K at the plugin's choice) at a few thousand keys. */
static const shape_row DECODE[] = {
    {"bf16.B128.ctx8192", {.batch = 128, .context = 8192, .kv_dtype = BF16}, {.batch = 4, .context = 512, .kv_dtype = BF16}},
    {"bf16.B128.ctx1024", {.batch = 128, .context = 1024, .kv_dtype = BF16}, {.batch = 4, .context = 128, .kv_dtype = BF16}},
    {"bf16.B1.ctx32768", {.batch = 1, .context = 32768, .kv_dtype = BF16}, {.batch = 1, .context = 2048, .kv_dtype = BF16}},
    {"fp8.B128.ctx8192", {.batch = 128, .context = 8192, .kv_dtype = FP8}, {.batch = 4, .context = 512, .kv_dtype = FP8}},
    {"bf16.B128.ctx8192.window128", {.batch = 128, .context = 8192, .window = 128, .kv_dtype = BF16},
     {.batch = 4, .context = 512, .window = 128, .kv_dtype = BF16}},
};

/* Prefill: B sequences of L tokens, causal, sinks; quick halves the window with L so that it still
 * cuts (a window as long as the sequence would be no window). */
static const shape_row PREFILL[] = {
    {"B1.L8192.nowindow", {.batch = 1, .context = 8192}, {.batch = 1, .context = 160}},
    {"B1.L8192.window128", {.batch = 1, .context = 8192, .window = 128}, {.batch = 1, .context = 160, .window = 64}},
    {"B8.L2048.nowindow", {.batch = 8, .context = 2048}, {.batch = 2, .context = 96}},
    {"B8.L2048.window128", {.batch = 8, .context = 2048, .window = 128}, {.batch = 2, .context = 96, .window = 64}},
};

static const sy_bench_shape EXTEND_FULL = {.batch = 1, .context = 4096, .chunk = 512, .kv_dtype = BF16};
static const sy_bench_shape EXTEND_QUICK = {.batch = 1, .context = 192, .chunk = 32, .kv_dtype = BF16};
static const sy_bench_shape TOKENS_FULL = {.tokens = 16384, .kv_dtype = BF16};
static const sy_bench_shape TOKENS_QUICK = {.tokens = 512, .kv_dtype = BF16};

static const shape_row NORM[] = {
    {"M16384.N2880.P3072", {.tokens = 16384, .cols = 2880, .pad_multiple = 256},
     {.tokens = 256, .cols = 2880, .pad_multiple = 256}},
    {"M128.N2880.P3072", {.tokens = 128, .cols = 2880, .pad_multiple = 256},
     {.tokens = 32, .cols = 2880, .pad_multiple = 256}},
};

/* MoE: quick shrinks experts and widths too (a cpu expert of 2880 x 2880 takes milliseconds a
 * token); hidden 288 keeps the padding to the MXFP4 input alignment in play. */
static const shape_row MOE[] = {
    {"T128.E128.k4", {.tokens = 128, .experts = 128, .top_k = 4, .hidden = 2880, .intermediate = 2880},
     {.tokens = 4, .experts = 8, .top_k = 4, .hidden = 288, .intermediate = 256}},
    {"T8192.E128.k4", {.tokens = 8192, .experts = 128, .top_k = 4, .hidden = 2880, .intermediate = 2880},
     {.tokens = 64, .experts = 8, .top_k = 4, .hidden = 288, .intermediate = 256}},
};

/* Linear: the four products of a gpt-oss-120b decode step at batch 128, as the engine calls them
 * (bf16 weights, f32 biases): q/k/v over stacked weights and o (y in the activation dtype), the
 * router and the unembedding (f32 y), each with bf16 and with f32 activations; and q/k/v written to
 * three arrays of their own, as the unfused forward calls it (split_y). */
static const struct {
    const char *tag;
    uint32_t in, out, bias, f32_out; /* f32_out: y is f32 whatever the activations */
    uint32_t quick_in, quick_out;
    uint32_t y_parts;
} LINEAR[] = {
    {"qkv", 2880, 5120, 1, 0, 288, 320, 0},
    {"qkv_parts", 2880, 5120, 1, 0, 288, 320, 3},
    {"o", 4096, 2880, 1, 0, 256, 288, 0},
    {"router", 2880, 128, 1, 1, 288, 128, 0},
    {"unembed", 2880, 201088, 0, 1, 288, 2011, 0},
};
static const int32_t LINEAR_ACTS[] = {BF16, SY_DTYPE_F32};
enum { LINEAR_ROWS = 128, LINEAR_QUICK_ROWS = 4 };

static const sy_bench_shape COPY_FULL = {.bytes = (uint64_t)1 << 30};
static const sy_bench_shape COPY_QUICK = {.bytes = (uint64_t)16 << 20};

static sy_bench_case table[MAX_CASES];
static size_t n_table;

/* A new row of the table; the caller names it. */
static sy_bench_case *add(int32_t op, uint32_t layout, const sy_bench_shape *full, const sy_bench_shape *quick)
{
    sy_bench_case *c = &table[n_table++];
    memset(c, 0, sizeof *c);
    c->op = op;
    c->layout = layout;
    c->full = *full;
    c->quick = *quick;
    return c;
}

#define NAME(c, ...) snprintf((c)->name, sizeof (c)->name, __VA_ARGS__)

static void build(void)
{
    const size_t n_kv = sizeof KV_LAYOUTS / sizeof KV_LAYOUTS[0];
    sy_bench_case *c = add(SY_BENCH_OP_COPY, 0, &COPY_FULL, &COPY_QUICK);
    NAME(c, "copy.d2d");
    for (size_t l = 0; l < n_kv; l++)
        for (size_t i = 0; i < sizeof DECODE / sizeof DECODE[0]; i++) {
            c = add(SY_BENCH_OP_DECODE, KV_LAYOUTS[l], &DECODE[i].full, &DECODE[i].quick);
            NAME(c, "decode.%s.%s", sy_layout_name(KV_LAYOUTS[l]), DECODE[i].tag);
        }
    for (size_t i = 0; i < sizeof PREFILL / sizeof PREFILL[0]; i++) {
        c = add(SY_BENCH_OP_PREFILL, 0, &PREFILL[i].full, &PREFILL[i].quick);
        NAME(c, "prefill.%s", PREFILL[i].tag);
    }
    static const struct {
        int32_t op;
        const char *part;
    } EXTEND[] = {{SY_BENCH_OP_EXTEND_GATHER, "gather"},
                  {SY_BENCH_OP_EXTEND_PREFILL, "prefill"},
                  {SY_BENCH_OP_EXTEND_TOTAL, "total"},
                  {SY_BENCH_OP_EXTEND_PAGED, "paged"}};
    for (size_t l = 0; l < n_kv; l++)
        for (size_t i = 0; i < sizeof EXTEND / sizeof EXTEND[0]; i++) {
            c = add(EXTEND[i].op, KV_LAYOUTS[l], &EXTEND_FULL, &EXTEND_QUICK);
            NAME(c, "extend.%s.%s.prefix4096.chunk512", sy_layout_name(KV_LAYOUTS[l]), EXTEND[i].part);
        }
    for (size_t l = 0; l < n_kv; l++) {
        c = add(SY_BENCH_OP_KV_WRITE, KV_LAYOUTS[l], &TOKENS_FULL, &TOKENS_QUICK);
        NAME(c, "kv_write.%s.T16384", sy_layout_name(KV_LAYOUTS[l]));
    }
    c = add(SY_BENCH_OP_ROPE, 0, &TOKENS_FULL, &TOKENS_QUICK);
    NAME(c, "rope.T16384");
    for (size_t l = 0; l < n_kv; l++) {
        c = add(SY_BENCH_OP_ROPE_KV_WRITE, KV_LAYOUTS[l], &TOKENS_FULL, &TOKENS_QUICK);
        NAME(c, "rope_kv_write.%s.T16384", sy_layout_name(KV_LAYOUTS[l]));
    }
    for (size_t i = 0; i < sizeof NORM / sizeof NORM[0]; i++) {
        c = add(SY_BENCH_OP_NORM, 0, &NORM[i].full, &NORM[i].quick);
        NAME(c, "norm.add_rmsnorm_pad.%s", NORM[i].tag);
    }
    for (size_t i = 0; i < sizeof MOE / sizeof MOE[0]; i++)
        for (size_t l = 0; l < sizeof MOE_LAYOUTS / sizeof MOE_LAYOUTS[0]; l++) {
            c = add(SY_BENCH_OP_MOE, MOE_LAYOUTS[l], &MOE[i].full, &MOE[i].quick);
            NAME(c, "moe.%s.%s", MOE_LAYOUTS[l] == SY_MOE_GATE_UP_INTERLEAVE ? "interleave" : "separated",
                 MOE[i].tag);
        }
    for (size_t a = 0; a < sizeof LINEAR_ACTS / sizeof LINEAR_ACTS[0]; a++)
        for (size_t i = 0; i < sizeof LINEAR / sizeof LINEAR[0]; i++) {
            const int32_t act = LINEAR_ACTS[a], out = LINEAR[i].f32_out ? SY_DTYPE_F32 : act;
            const sy_bench_shape full = {.tokens = LINEAR_ROWS, .in_features = LINEAR[i].in,
                                         .out_features = LINEAR[i].out, .act_dtype = act, .out_dtype = out,
                                         .bias = LINEAR[i].bias, .y_parts = LINEAR[i].y_parts};
            sy_bench_shape quick = full;
            quick.tokens = LINEAR_QUICK_ROWS;
            quick.in_features = LINEAR[i].quick_in;
            quick.out_features = LINEAR[i].quick_out;
            c = add(SY_BENCH_OP_LINEAR, 0, &full, &quick);
            NAME(c, "linear.%s.%s.M%u.K%u.N%u", sy_dtype_name(act), LINEAR[i].tag, LINEAR_ROWS, LINEAR[i].in,
                 LINEAR[i].out);
        }
}

size_t sy_bench_cases(const sy_bench_case **cases)
{
    if (n_table == 0)
        build();
    *cases = table;
    return n_table;
}

const char *sy_bench_op_name(int32_t op)
{
    switch (op) {
    case SY_BENCH_OP_COPY: return "copy.d2d";
    case SY_BENCH_OP_DECODE: return "attention.decode_paged";
    case SY_BENCH_OP_PREFILL: return "attention.prefill_linear";
    case SY_BENCH_OP_EXTEND_GATHER: return "kv_layout.gather";
    case SY_BENCH_OP_EXTEND_PREFILL: return "attention.prefill_linear";
    case SY_BENCH_OP_EXTEND_TOTAL: return "kv_layout.gather+attention.prefill_linear";
    case SY_BENCH_OP_EXTEND_PAGED: return "attention.prefill_paged";
    case SY_BENCH_OP_KV_WRITE: return "kv_layout.write";
    case SY_BENCH_OP_ROPE: return "rope.rope";
    case SY_BENCH_OP_ROPE_KV_WRITE: return "rope.rope_kv_write";
    case SY_BENCH_OP_NORM: return "norm.rmsnorm";
    case SY_BENCH_OP_MOE: return "moe.forward";
    case SY_BENCH_OP_LINEAR: return "linear.linear";
    default: return "invalid";
    }
}

const char *sy_bench_layout_tag(const sy_bench_case *c)
{
    if (c->layout == 0)
        return NULL;
    if (c->op == SY_BENCH_OP_MOE)
        return c->layout == SY_MOE_GATE_UP_INTERLEAVE ? "interleave" : "separated";
    return sy_layout_name(c->layout);
}
