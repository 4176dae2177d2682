/* Comparisons of a plugin's output with the reference's (case.h): each records a check on the case
 * and, when it fails, a message with the numbers and the first offending index. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conformance/case.h"
#include "switchyard/tensor.h"

sy_conf_where sy_conf_shape(int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    sy_conf_where w;
    memset(&w, 0, sizeof w);
    w.ndim = ndim;
    w.shape[0] = d0;
    w.shape[1] = d1;
    w.shape[2] = d2;
    w.shape[3] = d3;
    return w;
}

/* "what[i][j][k]" from a row-major shape, or "what[flat]". */
static void index_text(const char *what, const sy_conf_where *w, uint64_t index, char *buf, size_t len)
{
    if (w && w->describe) {
        char inner[160];
        w->describe(w->user, index, inner, sizeof inner);
        snprintf(buf, len, "%s %s", what, inner);
        return;
    }
    if (!w || w->ndim <= 0 || w->ndim > 4) {
        snprintf(buf, len, "%s[%llu]", what, (unsigned long long)index);
        return;
    }
    uint64_t idx[4], rest = index;
    for (int d = w->ndim - 1; d >= 0; d--) {
        uint64_t extent = w->shape[d] > 0 ? (uint64_t)w->shape[d] : 1;
        idx[d] = rest % extent;
        rest /= extent;
    }
    size_t used = (size_t)snprintf(buf, len, "%s", what);
    for (int d = 0; d < w->ndim && used < len; d++)
        used += (size_t)snprintf(buf + used, len - used, "[%llu]", (unsigned long long)idx[d]);
}

static sy_conf_check *add_check(sy_conf_case *c, const char *what, const char *metric)
{
    sy_conf_result *r = &c->result;
    if (r->n_checks == SY_CONF_MAX_CHECKS) {
        sy_conf_case_fail(c, "conformance suite: more than %d checks in one case", SY_CONF_MAX_CHECKS);
        return NULL;
    }
    sy_conf_check *k = &r->checks[r->n_checks++];
    memset(k, 0, sizeof *k);
    snprintf(k->what, sizeof k->what, "%s", what);
    snprintf(k->metric, sizeof k->metric, "%s", metric);
    k->passed = 1;
    return k;
}

static void hex_of(const uint8_t *p, size_t n, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "0x");
    /* Little-endian element: most significant byte first reads as the number. */
    for (size_t i = n; i > 0 && used < len; i--)
        used += (size_t)snprintf(buf + used, len - used, "%02x", p[i - 1]);
}

void sy_conf_check_bits(sy_conf_case *c, const char *what, const void *test, const void *ref, uint64_t n,
                        size_t elem_size, const sy_conf_where *where)
{
    if (!sy_conf_case_ok(c))
        return;
    sy_conf_check *k = add_check(c, what, "bits");
    if (!k)
        return;
    const uint8_t *t = test, *r = ref;
    uint64_t mismatched = 0, first = 0;
    for (uint64_t i = 0; i < n; i++)
        if (memcmp(t + i * elem_size, r + i * elem_size, elem_size) != 0 && mismatched++ == 0)
            first = i;
    k->elements = (int64_t)n;
    k->error = (double)mismatched;
    if (!mismatched)
        return;
    k->passed = 0;
    char at[224], tv[24], rv[24];
    index_text(what, where, first, at, sizeof at);
    hex_of(t + first * elem_size, elem_size, tv, sizeof tv);
    hex_of(r + first * elem_size, elem_size, rv, sizeof rv);
    sy_conf_case_fail(c, "%s: %llu of %llu elements differ from the reference bit for bit; first %s = %s, reference %s",
                      what, (unsigned long long)mismatched, (unsigned long long)n, at, tv, rv);
}

void sy_conf_check_close(sy_conf_case *c, const char *what, int32_t dtype, const void *test, const void *ref,
                         uint64_t n, double tol, const sy_conf_where *where)
{
    if (!sy_conf_case_ok(c))
        return;
    sy_conf_check *k = add_check(c, what, "rel_l2");
    if (!k)
        return;
    double num = 0, den = 0, max_abs = 0;
    uint64_t bad = 0, first_bad = 0, max_at = 0, ref_bad = 0, first_ref_bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        double t = sy_conf_load(dtype, test, i), r = sy_conf_load(dtype, ref, i);
        if (!isfinite(r)) {
            /* Every case's inputs are finite and so is every reference output of them: a NaN here is
             * the poison of an element the reference left unwritten, and the two sides agreeing on it
             * would let a region that neither writes pass unjudged. */
            if (ref_bad++ == 0)
                first_ref_bad = i;
            continue;
        }
        if (!isfinite(t)) {
            if (bad++ == 0)
                first_bad = i;
            continue;
        }
        double d = fabs(t - r);
        num += d * d;
        den += r * r;
        if (d > max_abs) {
            max_abs = d;
            max_at = i;
        }
    }
    k->elements = (int64_t)n;
    k->tolerance = tol;
    k->max_abs = max_abs;
    k->error = bad ? INFINITY : den > 0 ? sqrt(num / den) : sqrt(num);
    char at[224];
    if (ref_bad) {
        k->passed = 0;
        k->error = INFINITY;
        index_text(what, where, first_ref_bad, at, sizeof at);
        sy_conf_case_fail(c,
                          "%s: the reference left %llu of %llu elements NaN or infinite (first %s = %g): unwritten, "
                          "so the case cannot judge the plugin there",
                          what, (unsigned long long)ref_bad, (unsigned long long)n, at,
                          sy_conf_load(dtype, ref, first_ref_bad));
        return;
    }
    if (bad) {
        k->passed = 0;
        index_text(what, where, first_bad, at, sizeof at);
        sy_conf_case_fail(c,
                          "%s: %llu of %llu elements are NaN or infinite where the reference is not; "
                          "first %s = %g, reference %g (NaN: an output left unwritten holds the poison pattern)",
                          what, (unsigned long long)bad, (unsigned long long)n, at, sy_conf_load(dtype, test, first_bad),
                          sy_conf_load(dtype, ref, first_bad));
        return;
    }
    if (k->error <= tol)
        return;
    k->passed = 0;
    index_text(what, where, max_at, at, sizeof at);
    sy_conf_case_fail(c, "%s: rel_l2 %.3g exceeds the tolerance %.3g; largest difference %.3g at %s = %.7g, reference %.7g",
                      what, k->error, tol, max_abs, at, sy_conf_load(dtype, test, max_at),
                      sy_conf_load(dtype, ref, max_at));
}

/* Padding is +0, bit for bit: a -0 would be harmless to a sum but says the kernel computed rather
 * than cleared the column, and the host reference writes +0. */
static int is_positive_zero(double v)
{
    return v == 0.0 && !signbit(v);
}

void sy_conf_check_zero(sy_conf_case *c, const char *what, int32_t dtype, const void *test, int64_t rows,
                        int64_t stride, int64_t col0, int64_t col1)
{
    if (!sy_conf_case_ok(c))
        return;
    sy_conf_check *k = add_check(c, what, "bits");
    if (!k)
        return;
    uint64_t bad = 0;
    int64_t first_row = 0, first_col = 0;
    for (int64_t m = 0; m < rows; m++)
        for (int64_t n = col0; n < col1; n++)
            if (!is_positive_zero(sy_conf_load(dtype, test, (size_t)(m * stride + n))) && bad++ == 0) {
                first_row = m;
                first_col = n;
            }
    k->elements = rows * (col1 - col0);
    k->error = (double)bad;
    if (!bad)
        return;
    k->passed = 0;
    sy_conf_case_fail(c, "%s: %llu of %lld elements are not +0; first [%lld][%lld] = %g", what,
                      (unsigned long long)bad, (long long)k->elements, (long long)first_row, (long long)first_col,
                      sy_conf_load(dtype, test, (size_t)(first_row * stride + first_col)));
}

void sy_conf_check_rows_close(sy_conf_case *c, const char *what, int32_t dtype, const void *test, const void *ref,
                              uint64_t rows, uint64_t cols, double tol, const sy_conf_where *where)
{
    if (!sy_conf_case_ok(c))
        return;
    sy_conf_check *k = add_check(c, what, "row_rel_l2");
    if (!k)
        return;
    double all = 0;
    for (uint64_t i = 0; i < rows * cols; i++) {
        double r = sy_conf_load(dtype, ref, i);
        all += isfinite(r) ? r * r : 0;
    }
    /* A row whose output nearly cancels is judged against a quarter of the typical row norm. */
    double floor = 0.25 * sqrt(all / (double)(rows ? rows : 1));
    double worst = 0, max_abs = 0;
    uint64_t worst_row = 0;
    for (uint64_t row = 0; row < rows; row++) {
        double num = 0, den = 0;
        for (uint64_t j = row * cols; j < (row + 1) * cols; j++) {
            double t = sy_conf_load(dtype, test, j), r = sy_conf_load(dtype, ref, j);
            double d = isfinite(t) && isfinite(r) ? fabs(t - r) : (isnan(t) == isnan(r) && t == r ? 0 : INFINITY);
            num += d * d;
            den += r * r;
            max_abs = d > max_abs ? d : max_abs;
        }
        den = sqrt(den) > floor ? sqrt(den) : floor;
        double e = den > 0 ? sqrt(num) / den : sqrt(num);
        if (!(e <= worst)) {
            worst = e;
            worst_row = row;
        }
    }
    k->elements = (int64_t)(rows * cols);
    k->tolerance = tol;
    k->max_abs = max_abs;
    k->error = worst;
    if (worst <= tol)
        return;
    k->passed = 0;
    char at[224];
    index_text(what, where, worst_row * cols, at, sizeof at);
    sy_conf_case_fail(c, "%s: row %llu (from %s) has rel_l2 %.3g, beyond the per-row tolerance %.3g", what,
                      (unsigned long long)worst_row, at, worst, tol);
}
