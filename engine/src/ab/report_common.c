#include "ab/report_common.h"

#include <math.h>
#include <stdio.h>

void sy_ab_checkpoint_name(const sy_ab_numerics *n, uint32_t layer, char *buf, size_t len)
{
    if (layer >= n->layers)
        snprintf(buf, len, "logits");
    else
        snprintf(buf, len, "layer %u", layer);
}

void sy_ab_format_metric(double v, char *buf, size_t len)
{
    if (isnan(v))
        snprintf(buf, len, "nan");
    else if (v == 0)
        snprintf(buf, len, "0");
    else
        snprintf(buf, len, "%.3g", v);
}

double sy_ab_diff_max_abs(const sy_ab_diff *d)
{
    return d->nonfinite ? NAN : d->max_abs;
}

void sy_ab_numerics_sentence(const sy_ab_numerics *n, char *buf, size_t len)
{
    char rel[32], tol[32];
    sy_ab_format_metric(n->logits_rel_l2, rel, sizeof rel);
    snprintf(tol, sizeof tol, "%g", n->tolerance);
    if (!n->diverged)
        snprintf(buf, len, "bit-exact at every checkpoint compared; within tolerance %s (%s)", tol,
                 n->tolerance_source);
    else
        snprintf(buf, len, "logits relative L2 %s %s tolerance %s (%s): %s", rel,
                 n->within_tolerance ? "<=" : (isnan(n->logits_rel_l2) ? "vs" : ">"), tol, n->tolerance_source,
                 n->within_tolerance ? "within tolerance" : "beyond tolerance");
}
