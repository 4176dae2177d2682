#include "attn_cpu_core.h"

#include <math.h>
#include <string.h>

#include "sy_numeric.h"

size_t sy_attn_cpu_scratch_floats(uint32_t rows, uint32_t head_dim)
{
    return 2 * (size_t)head_dim * SY_ATTN_TILE + (size_t)rows * SY_ATTN_TILE;
}

void sy_attn_cpu_fp8_lut(float scale, float *lut)
{
    for (uint32_t c = 0; c < 256; c++)
        lut[c] = sy_fp8e4m3_to_f32((uint8_t)c) * scale;
}

/* K and V rows of key positions a .. a + n - 1 of head h. Paged: walks the pages (a division per
 * tile, not per key). */
static void tile_rows(const sy_attn_kv_view *kv, uint32_t h, int64_t a, uint32_t n, sy_kv_row *kr, sy_kv_row *vr)
{
    if (kv->block_table) {
        int64_t P = kv->dims.page_size, blk = a / P, off = a % P;
        for (uint32_t j = 0; j < n; j++) {
            uint64_t page = (uint64_t)kv->block_table[blk];
            kr[j] = sy_kv_k_row_at(&kv->dims, page, (uint64_t)off, h);
            vr[j] = sy_kv_v_row_at(&kv->dims, page, (uint64_t)off, h);
            if (++off == P) {
                off = 0;
                blk++;
            }
        }
        return;
    }
    for (uint32_t j = 0; j < n; j++) {
        int64_t row = kv->row0 + a + j;
        kr[j] = sy_kv_linear_row((uint64_t)(row * kv->k_strides[0] + (int64_t)h * kv->k_strides[1]), kv->head_dim);
        vr[j] = sy_kv_linear_row((uint64_t)(row * kv->v_strides[0] + (int64_t)h * kv->v_strides[1]), kv->head_dim);
    }
}

static inline float dequant(const void *elem, int32_t dtype, const float *lut)
{
    switch (dtype) {
    case SY_DTYPE_F32: return *(const float *)elem;
    case SY_DTYPE_BF16: return sy_bf16_to_f32(*(const uint16_t *)elem);
    default: return lut[*(const uint8_t *)elem];
    }
}

/* dst[j][d] = element d of row j, dequantized; rows of unit element stride (every K row, nhd and
 * linear V) copy run by run with pointer loops the compiler vectorizes, the rest element by
 * element. Inlined once per dtype so that each copy converts with straight-line code. */
static inline __attribute__((always_inline)) void load_rows_as(const void *pool, int32_t dtype, const float *lut,
                                                               const sy_kv_row *rows, uint32_t n, uint32_t D,
                                                               float *dst)
{
    const size_t es = dtype == SY_DTYPE_F32 ? 4 : dtype == SY_DTYPE_BF16 ? 2 : 1;
    for (uint32_t j = 0; j < n; j++) {
        const sy_kv_row *r = &rows[j];
        const size_t run = r->run, step = r->elem_stride;
        float *out = dst + (size_t)j * D;
        const char *src = (const char *)pool + r->base * es;
        for (size_t d0 = 0; d0 < D; d0 += run, out += run, src += (size_t)r->run_stride * es) {
            if (step == 1) {
                for (size_t i = 0; i < run; i++)
                    out[i] = dequant(src + i * es, dtype, lut);
            } else {
                for (size_t i = 0; i < run; i++)
                    out[i] = dequant(src + i * step * es, dtype, lut);
            }
        }
    }
}

static void load_rows(const void *pool, int32_t dtype, const float *lut, const sy_kv_row *rows, uint32_t n,
                      uint32_t D, float *dst)
{
    switch (dtype) {
    case SY_DTYPE_F32: load_rows_as(pool, SY_DTYPE_F32, lut, rows, n, D, dst); break;
    case SY_DTYPE_BF16: load_rows_as(pool, SY_DTYPE_BF16, lut, rows, n, D, dst); break;
    default: load_rows_as(pool, SY_DTYPE_FP8_E4M3, lut, rows, n, D, dst); break;
    }
}

/* q.k with a fixed summation order that depends on D alone: eight interleaved partial sums over
 * the first D - D % 8 dims, a pairwise tree of them, then the remaining dims in order. The lanes
 * stay in vector registers. */
static inline float dot(const float *q, const float *k, uint32_t D)
{
    float l0 = 0, l1 = 0, l2 = 0, l3 = 0, l4 = 0, l5 = 0, l6 = 0, l7 = 0;
    size_t d = 0;
    for (; d + 8 <= D; d += 8) {
        l0 += q[d] * k[d];
        l1 += q[d + 1] * k[d + 1];
        l2 += q[d + 2] * k[d + 2];
        l3 += q[d + 3] * k[d + 3];
        l4 += q[d + 4] * k[d + 4];
        l5 += q[d + 5] * k[d + 5];
        l6 += q[d + 6] * k[d + 6];
        l7 += q[d + 7] * k[d + 7];
    }
    float sum = ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7));
    for (; d < D; d++)
        sum += q[d] * k[d];
    return sum;
}

/* One row against keys [j0, j1) of the loaded tile: kt and vt are [SY_ATTN_TILE][D]. */
static void row_tile(const float *q, const float *kt, const float *vt, uint32_t D, uint32_t j0, uint32_t j1,
                     float scale, float *s, float *m, float *l, float *acc)
{
    float tile_max = -INFINITY;
    for (uint32_t j = j0; j < j1; j++) {
        s[j] = scale * dot(q, kt + (size_t)j * D, D);
        tile_max = s[j] > tile_max ? s[j] : tile_max;
    }
    float m_new = tile_max > *m ? tile_max : *m;
    float sum = 0.0f;
    for (uint32_t j = j0; j < j1; j++) {
        s[j] = expf(s[j] - m_new);
        sum += s[j];
    }
    if (m_new != *m) {
        /* Rescaling by exactly 1 would change nothing, so it is skipped when the max holds. */
        float alpha = expf(*m - m_new);
        *l *= alpha;
        for (uint32_t d = 0; d < D; d++)
            acc[d] *= alpha;
        *m = m_new;
    }
    *l += sum;
    for (uint32_t j = j0; j < j1; j++) {
        const float p = s[j];
        const float *vj = vt + (size_t)j * D;
        for (uint32_t d = 0; d < D; d++)
            acc[d] += p * vj[d];
    }
}

void sy_attn_cpu_partial(const sy_attn_kv_view *kv, uint32_t kv_head, const sy_attn_rows *rows, float scale,
                         float *scratch)
{
    const uint32_t D = kv->head_dim;
    float *kt = scratch;
    float *vt = kt + (size_t)D * SY_ATTN_TILE;
    float *s = vt + (size_t)D * SY_ATTN_TILE;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (uint32_t r = 0; r < rows->n; r++) {
        rows->m[r] = -INFINITY;
        rows->l[r] = 0.0f;
        memset(rows->acc + (size_t)r * D, 0, D * sizeof(float));
        if (rows->lo[r] < rows->hi[r]) {
            lo = rows->lo[r] < lo ? rows->lo[r] : lo;
            hi = rows->hi[r] > hi ? rows->hi[r] : hi;
        }
    }
    sy_kv_row krow[SY_ATTN_TILE], vrow[SY_ATTN_TILE];
    for (int64_t t0 = lo >= 0 ? lo / SY_ATTN_TILE * SY_ATTN_TILE : 0; lo < hi && t0 < hi; t0 += SY_ATTN_TILE) {
        /* Columns j of the tile are key positions t0 + j; only the ones some row needs are loaded. */
        int64_t a = t0 > lo ? t0 : lo, b = t0 + SY_ATTN_TILE < hi ? t0 + SY_ATTN_TILE : hi;
        uint32_t first = (uint32_t)(a - t0), count = (uint32_t)(b - a);
        tile_rows(kv, kv_head, a, count, krow, vrow);
        load_rows(kv->k, kv->dtype, kv->k_lut, krow, count, D, kt + (size_t)first * D);
        load_rows(kv->v, kv->dtype, kv->v_lut, vrow, count, D, vt + (size_t)first * D);
        for (uint32_t r = 0; r < rows->n; r++) {
            int64_t ra = rows->lo[r] > a ? rows->lo[r] : a, rb = rows->hi[r] < b ? rows->hi[r] : b;
            if (ra >= rb)
                continue;
            row_tile(rows->q + (size_t)r * D, kt, vt, D, (uint32_t)(ra - t0), (uint32_t)(rb - t0), scale,
                     s + (size_t)r * SY_ATTN_TILE, &rows->m[r], &rows->l[r], rows->acc + (size_t)r * D);
        }
    }
}

void sy_attn_cpu_combine(uint32_t parts, size_t part_stride, uint32_t head_dim, const float *m, const float *l,
                         const float *acc, const float *sink, float *out)
{
    float M = -INFINITY;
    for (uint32_t i = 0; i < parts; i++)
        if (l[i * part_stride] > 0.0f && m[i * part_stride] > M)
            M = m[i * part_stride];
    if (sink && *sink > M)
        M = *sink;
    memset(out, 0, head_dim * sizeof(float));
    if (M == -INFINITY)
        return;
    float den = 0.0f;
    for (uint32_t i = 0; i < parts; i++) {
        float li = l[i * part_stride];
        if (!(li > 0.0f))
            continue;
        float w = expf(m[i * part_stride] - M);
        const float *ai = acc + i * part_stride * head_dim;
        den += w * li;
        for (uint32_t d = 0; d < head_dim; d++)
            out[d] += w * ai[d];
    }
    if (sink)
        den += expf(*sink - M);
    for (uint32_t d = 0; d < head_dim; d++)
        out[d] /= den;
}
