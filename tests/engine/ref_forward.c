#include "ref_forward.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sy_numeric.h"

struct sy_ref_model {
    sy_model_dims d;
    sy_host_weights g;
    sy_host_layer *layer;
    double *inv_freq; /* head_dim / 2 */
    double concentration;
};

/* E2M1 by nibble (OCP Microscaling Formats v1.0): low nibble is the even element. */
static const double e2m1[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};

static double mxfp4_at(const uint8_t *blocks, const uint8_t *scales, uint64_t row, uint32_t k, uint32_t K)
{
    uint64_t b = row * (K / 32) + k / 32;
    uint8_t byte = blocks[b * 16 + (k % 32) / 2];
    uint8_t nib = (k % 2) ? (byte >> 4) : (byte & 0xF);
    return e2m1[nib] * ldexp(1.0, (int)scales[b] - 127);
}

static double bf(uint16_t x)
{
    return (double)sy_bf16_to_f32(x);
}

sy_ref_model *sy_ref_create(const sy_model_dims *d, uint64_t seed)
{
    sy_ref_model *m = calloc(1, sizeof *m);
    m->d = *d;
    sy_synth_globals(d, seed, &m->g);
    m->layer = calloc(d->layers, sizeof *m->layer);
    for (uint32_t l = 0; l < d->layers; l++)
        sy_synth_layer(d, seed, l, &m->layer[l]);
    uint32_t half = d->head_dim / 2;
    m->inv_freq = calloc(half, sizeof(double));
    /* YaRN "NTK by parts" (Peng et al. 2023, arXiv:2309.00071) as in openai/gpt-oss
     * gpt_oss/torch/model.py: ramp between low and high dims, concentration 0.1 ln(factor) + 1. */
    double base = d->rope_theta, D = d->head_dim;
    m->concentration = 1.0;
    double low = 0, high = 1;
    if (d->yarn_factor > 1.0f) {
        m->concentration = 0.1 * log(d->yarn_factor) + 1.0;
        low = half * log(d->yarn_original_max_position / (d->yarn_beta_fast * 2 * M_PI)) / log(base);
        high = half * log(d->yarn_original_max_position / (d->yarn_beta_slow * 2 * M_PI)) / log(base);
    }
    for (uint32_t i = 0; i < half; i++) {
        double freq = pow(base, 2.0 * i / D);
        if (d->yarn_factor > 1.0f) {
            double ramp = ((double)i - low) / (high - low);
            double mask = 1.0 - (ramp < 0 ? 0 : ramp > 1 ? 1 : ramp);
            m->inv_freq[i] = (1.0 / (d->yarn_factor * freq)) * (1 - mask) + (1.0 / freq) * mask;
        } else {
            m->inv_freq[i] = 1.0 / freq;
        }
    }
    return m;
}

void sy_ref_destroy(sy_ref_model *m)
{
    sy_host_weights_free(&m->g);
    for (uint32_t l = 0; l < m->d.layers; l++)
        sy_host_layer_free(&m->layer[l]);
    free(m->layer);
    free(m->inv_freq);
    free(m);
}

static void rmsnorm(const double *x, const uint16_t *w, uint32_t n, double eps, double *out)
{
    double ss = 0;
    for (uint32_t i = 0; i < n; i++)
        ss += x[i] * x[i];
    double r = 1.0 / sqrt(ss / n + eps);
    for (uint32_t i = 0; i < n; i++)
        out[i] = x[i] * r * bf(w[i]);
}

static void matvec(const uint16_t *w, const uint16_t *b, uint32_t rows, uint32_t cols, const double *x, double *y)
{
    for (uint32_t r = 0; r < rows; r++) {
        double s = b ? bf(b[r]) : 0;
        for (uint32_t c = 0; c < cols; c++)
            s += bf(w[(uint64_t)r * cols + c]) * x[c];
        y[r] = s;
    }
}

static void rope(const sy_ref_model *m, double *v, uint32_t heads, uint32_t pos)
{
    uint32_t D = m->d.head_dim, half = D / 2;
    for (uint32_t h = 0; h < heads; h++) {
        double *x = v + (size_t)h * D;
        for (uint32_t i = 0; i < half; i++) {
            double a = pos * m->inv_freq[i];
            double c = cos(a) * m->concentration, s = sin(a) * m->concentration;
            double x1 = x[i], x2 = x[i + half];
            x[i] = x1 * c - x2 * s;
            x[i + half] = x2 * c + x1 * s;
        }
    }
}

static void moe(const sy_ref_model *m, const sy_host_layer *L, const double *x, double *out)
{
    const sy_model_dims *d = &m->d;
    uint32_t E = d->experts, H = d->hidden, I = d->intermediate, K = d->top_k;
    double *logits = calloc(E, sizeof(double)), *h = calloc(2 * I, sizeof(double)), *a = calloc(I, sizeof(double));
    matvec(L->router_w, L->router_b, E, H, x, logits);
    uint32_t ids[64] = {0}; /* K >= 1 for every model here; gcc -O3 cannot know */
    int used[1024] = {0};
    for (uint32_t k = 0; k < K; k++) {
        int best = -1;
        for (uint32_t e = 0; e < E; e++)
            if (!used[e] && (best < 0 || logits[e] > logits[best]))
                best = (int)e;
        used[best] = 1;
        ids[k] = (uint32_t)best;
    }
    double mx = logits[ids[0]], den = 0, wts[64];
    for (uint32_t k = 0; k < K; k++)
        den += (wts[k] = exp(logits[ids[k]] - mx));
    memset(out, 0, H * sizeof(double));
    for (uint32_t k = 0; k < K; k++) {
        uint32_t e = ids[k];
        for (uint32_t r = 0; r < 2 * I; r++) {
            uint64_t row = (uint64_t)e * 2 * I + r;
            double s = bf(L->w13_bias[row]);
            for (uint32_t c = 0; c < H; c++)
                s += mxfp4_at(L->w13_blocks, L->w13_scales, row, c, H) * x[c];
            h[r] = s;
        }
        for (uint32_t i = 0; i < I; i++) {
            double g = h[2 * i], u = h[2 * i + 1], lim = d->swiglu_limit;
            g = g > lim ? lim : g;
            u = u > lim ? lim : u < -lim ? -lim : u;
            a[i] = g / (1.0 + exp(-d->swiglu_alpha * g)) * (u + 1.0);
        }
        for (uint32_t r = 0; r < H; r++) {
            uint64_t row = (uint64_t)e * H + r;
            double s = bf(L->w2_bias[row]);
            for (uint32_t c = 0; c < I; c++)
                s += mxfp4_at(L->w2_blocks, L->w2_scales, row, c, I) * a[c];
            out[r] += wts[k] / den * s;
        }
    }
    free(logits);
    free(h);
    free(a);
}

static double stored(double x, int32_t kv_dtype)
{
    return kv_dtype == SY_DTYPE_BF16 ? (double)sy_round_bf16((float)x) : (double)(float)x;
}

void sy_ref_logits(const sy_ref_model *m, const uint32_t *tokens, uint32_t n, uint32_t fresh_len, int32_t kv_dtype,
                   double *logits)
{
    sy_ref_logits_after(m, NULL, tokens, n, fresh_len, kv_dtype, logits);
}

void sy_ref_logits_after(const sy_ref_model *m, const sy_ref_context *ctx, const uint32_t *tokens, uint32_t n,
                         uint32_t fresh_len, int32_t kv_dtype, double *logits)
{
    const sy_model_dims *d = &m->d;
    uint32_t H = d->hidden, D = d->head_dim, Hq = d->q_heads, Hkv = d->kv_heads, V = d->vocab;
    uint32_t qd = Hq * D, kvd = Hkv * D, group = Hq / Hkv;
    uint32_t c0 = ctx ? ctx->len : 0, total = c0 + n; /* token i sits at position c0 + i */
    double scale = d->attn_scale ? d->attn_scale : 1.0 / sqrt((double)D);
    double *x = calloc((size_t)n * H, sizeof(double)), *t = calloc(H > qd ? H : qd, sizeof(double));
    double *q = calloc((size_t)n * qd, sizeof(double)), *k = calloc((size_t)total * kvd, sizeof(double));
    double *v = calloc((size_t)total * kvd, sizeof(double)), *att = calloc(qd, sizeof(double));
    double *ks = calloc((size_t)total * kvd, sizeof(double)), *vs = calloc((size_t)total * kvd, sizeof(double));
    double *o = calloc(H, sizeof(double)), *p = calloc(total, sizeof(double));
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t c = 0; c < H; c++)
            x[(size_t)i * H + c] = bf(m->g.embed[(uint64_t)tokens[i] * H + c]);
    for (uint32_t l = 0; l < d->layers; l++) {
        const sy_host_layer *L = &m->layer[l];
        int sliding = sy_layer_is_sliding(d, l);
        /* The context's K/V are what the pool holds: already rotated, already in the store dtype. */
        for (uint32_t j = 0; j < c0; j++)
            for (uint32_t c = 0; c < kvd; c++) {
                size_t at = (size_t)j * kvd + c;
                k[at] = ks[at] = stored(ctx->value(ctx->user, l, 0, j, c), kv_dtype);
                v[at] = vs[at] = stored(ctx->value(ctx->user, l, 1, j, c), kv_dtype);
            }
        for (uint32_t i = 0; i < n; i++) {
            uint32_t pos = c0 + i;
            rmsnorm(x + (size_t)i * H, L->attn_norm, H, d->rms_eps, t);
            matvec(L->q_w, L->q_b, qd, H, t, q + (size_t)i * qd);
            matvec(L->k_w, L->k_b, kvd, H, t, k + (size_t)pos * kvd);
            matvec(L->v_w, L->v_b, kvd, H, t, v + (size_t)pos * kvd);
            rope(m, q + (size_t)i * qd, Hq, pos);
            rope(m, k + (size_t)pos * kvd, Hkv, pos);
            for (uint32_t c = 0; c < kvd; c++) {
                ks[(size_t)pos * kvd + c] = stored(k[(size_t)pos * kvd + c], kv_dtype);
                vs[(size_t)pos * kvd + c] = stored(v[(size_t)pos * kvd + c], kv_dtype);
            }
        }
        for (uint32_t i = 0; i < n; i++) {
            uint32_t pos = c0 + i;
            uint32_t lo = sliding && pos + 1 > d->sliding_window ? pos + 1 - d->sliding_window : 0;
            const double *K = i < fresh_len ? k : ks, *Vv = i < fresh_len ? v : vs;
            for (uint32_t h = 0; h < Hq; h++) {
                const double *qi = q + (size_t)i * qd + (size_t)h * D;
                uint32_t kh = h / group;
                double mx = d->has_sinks ? bf(L->sinks[h]) : -INFINITY;
                for (uint32_t j = lo; j <= pos; j++) {
                    double s = 0;
                    for (uint32_t c = 0; c < D; c++)
                        s += qi[c] * K[(size_t)j * kvd + (size_t)kh * D + c];
                    p[j] = s * scale;
                    if (p[j] > mx)
                        mx = p[j];
                }
                double den = d->has_sinks ? exp(bf(L->sinks[h]) - mx) : 0;
                for (uint32_t j = lo; j <= pos; j++)
                    den += (p[j] = exp(p[j] - mx));
                for (uint32_t c = 0; c < D; c++) {
                    double s = 0;
                    for (uint32_t j = lo; j <= pos; j++)
                        s += p[j] * Vv[(size_t)j * kvd + (size_t)kh * D + c];
                    att[(size_t)h * D + c] = s / den;
                }
            }
            matvec(L->o_w, L->o_b, H, qd, att, o);
            for (uint32_t c = 0; c < H; c++)
                x[(size_t)i * H + c] += o[c];
        }
        for (uint32_t i = 0; i < n; i++) {
            rmsnorm(x + (size_t)i * H, L->mlp_norm, H, d->rms_eps, t);
            moe(m, L, t, o);
            for (uint32_t c = 0; c < H; c++)
                x[(size_t)i * H + c] += o[c];
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        rmsnorm(x + (size_t)i * H, m->g.final_norm, H, d->rms_eps, t);
        matvec(m->g.lm_head, NULL, V, H, t, logits + (size_t)i * V);
    }
    free(x);
    free(t);
    free(q);
    free(k);
    free(v);
    free(ks);
    free(vs);
    free(att);
    free(o);
    free(p);
}
