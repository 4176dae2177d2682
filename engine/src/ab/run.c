/* The whole comparison: diffs, the numerics pass, the timing rounds, the verdict. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ab/ab.h"
#include "ab/numerics.h"
#include "ab/timing.h"
#include "util/strbuf.h"

sy_status sy_ab_run(const sy_ab_side sides[SY_AB_SIDES], const sy_ab_options *opts, sy_ab_report *out,
                    sy_error *err)
{
    memset(out, 0, sizeof *out);
    if (opts->rounds && opts->rounds < SY_AB_MIN_ROUNDS)
        return sy_fail(err, SY_E_INVALID, "--rounds %u: at least %u rounds give an interval (0 skips the timing)",
                       opts->rounds, SY_AB_MIN_ROUNDS);
    for (int s = 0; s < SY_AB_SIDES; s++)
        out->label[s] = sy_strdup(sides[s].label ? sides[s].label : sy_config_file(sides[s].cfg));
    sy_ab_config_diff(sides[SY_AB_A].cfg, sides[SY_AB_B].cfg, out);
    sy_ab_plugin_diff(sides[SY_AB_A].comp, sides[SY_AB_B].comp, out);

    /* One repetition per engine run: the numerics pass is one run, each timing round one more. */
    sy_engine *engines[SY_AB_SIDES] = {NULL, NULL};
    sy_status st = SY_OK;
    for (int s = 0; st == SY_OK && s < SY_AB_SIDES; s++) {
        sy_plan plan = sides[s].plan;
        plan.warmup = 0;
        plan.repeat = 1;
        st = sy_engine_create(&plan, &engines[s], err);
        if (st != SY_OK) {
            sy_error inner = *err;
            sy_fail(err, st, "side %c: %s", "AB"[s], inner.msg);
        }
    }
    if (st == SY_OK)
        st = sy_ab_numerics_run(engines, sides, opts, &out->numerics, err);
    if (st == SY_OK && opts->rounds)
        st = sy_ab_timing_run(engines, sides, opts, &out->timing, err);
    for (int s = 0; s < SY_AB_SIDES; s++)
        sy_engine_destroy(engines[s]);
    if (st != SY_OK) {
        sy_ab_report_free(out);
        return st;
    }
    sy_ab_numerics *n = &out->numerics;
    if (opts->tolerance >= 0) {
        n->tolerance = opts->tolerance;
        snprintf(n->tolerance_source, sizeof n->tolerance_source, "--tolerance");
    } else {
        n->tolerance = sy_ab_default_tolerance(sides[SY_AB_A].plan.kv_dtype, sides[SY_AB_B].plan.kv_dtype,
                                               n->tolerance_source, sizeof n->tolerance_source);
    }
    n->within_tolerance = !isnan(n->logits_rel_l2) && n->logits_rel_l2 <= n->tolerance;
    out->exit_code = n->within_tolerance ? 0 : 1;
    return SY_OK;
}

void sy_ab_report_free(sy_ab_report *r)
{
    for (int s = 0; s < SY_AB_SIDES; s++)
        free(r->label[s]);
    for (size_t i = 0; i < r->n_changes; i++) {
        free(r->changes[i].key);
        for (int s = 0; s < SY_AB_SIDES; s++) {
            free(r->changes[i].value[s]);
            free(r->changes[i].source[s]);
        }
    }
    free(r->changes);
    for (size_t i = 0; i < r->n_slots; i++) {
        free(r->slots[i].slot);
        for (int s = 0; s < SY_AB_SIDES; s++) {
            free(r->slots[i].choice[s]);
            free(r->slots[i].file[s]);
        }
    }
    free(r->slots);
    sy_ab_numerics_free(&r->numerics);
    sy_ab_timing_free(&r->timing);
    memset(r, 0, sizeof *r);
}
