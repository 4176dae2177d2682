/* switchyard ab A.yaml [B.yaml]: compares two configs on the same synthetic weights and prompt
 * tokens (engine/src/ab/ab.h, docs/ab.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ab/ab.h"
#include "cli.h"
#include "compose/compose.h"
#include "config/config.h"
#include "model/plan.h"
#include "report_file.h"
#include "util/strbuf.h"

typedef struct ab_opts {
    const char *file[SY_AB_SIDES];
    const char **sets[SY_AB_SIDES]; /* what a side loads: --set, less the keys its own sets give, then its own */
    const char **set_origins[SY_AB_SIDES]; /* "--set" or "--set-a" / "--set-b", per entry of sets */
    size_t n_sets[SY_AB_SIDES];
    const char **own_sets[SY_AB_SIDES]; /* only --set-a / --set-b: for the labels */
    size_t n_own_sets[SY_AB_SIDES];
    const char **common_sets;
    size_t n_common_sets;
    int import_env;
    int quiet;
    const char *json, *html;
    sy_ab_options ab;
} ab_opts;

typedef struct ab_side_state {
    sy_config *cfg;
    sy_registry *reg;
    sy_composition *comp;
    char *label;
} ab_side_state;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: switchyard ab A.yaml [B.yaml] [--set key=value]... [--set-a key=value]... [--set-b key=value]...\n"
            "                     [--rounds N] [--tolerance X] [--json FILE] [--html FILE] [--import-env] [--quiet]\n"
            "                     [--plugin-path DIR]... [--allow-insecure-plugins]\n"
            "Compares A and B on the same synthetic weights and prompt tokens: the config diff, the plugin of each\n"
            "slot, numerics at every checkpoint (each layer's output, the logits, the generated tokens) and timing\n"
            "over N interleaved rounds (A B B A ...) with 95%% bootstrap intervals. Without B.yaml, B is A.yaml.\n"
            "  --set        applies to both sides; --set-a / --set-b to one side\n"
            "  --rounds N   timing rounds (default 10, at least %u; 0 skips the timing)\n"
            "  --tolerance  relative L2 of the logits that still passes (default by the KV dtypes, docs/ab.md)\n"
            "  --json/--html  write the report as JSON (docs/ab-report.schema.json) or one self-contained page\n"
            "exit status: 0 numerics within tolerance, 1 beyond, 2 usage or config error, 3 runtime error.\n",
            SY_AB_MIN_ROUNDS);
}

static void progress(void *user, const char *phase, uint32_t done, uint32_t total)
{
    (void)user;
    if (done == total && strcmp(phase, "timing") == 0)
        fputs("\r\033[K", stderr);
    else
        fprintf(stderr, "\r  %s %u/%u   ", phase, done, total);
}

static int parse_uint(const char *opt, const char *text, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (!*text || *end || errno || v > 1000000 || text[0] == '-') {
        fprintf(stderr, "switchyard ab: %s '%s': expected a whole number of at most 1000000\n", opt, text);
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

static int parse_tolerance(const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!*text || *end || errno || !(v >= 0) || v > 1e30) {
        fprintf(stderr, "switchyard ab: --tolerance '%s': expected a number >= 0 (a relative L2 such as 1e-3)\n",
                text);
        return -1;
    }
    *out = v;
    return 0;
}

static void add_set(ab_opts *o, int side, const char *kv)
{
    if (side < 0)
        o->common_sets[o->n_common_sets++] = kv;
    else
        o->own_sets[side][o->n_own_sets[side]++] = kv;
}

/* 1 when two key=value settings name the same key (blanks around the key ignored). */
static int same_key(const char *x, const char *y)
{
    while (*x == ' ')
        x++;
    while (*y == ' ')
        y++;
    size_t nx = strcspn(x, "= "), ny = strcspn(y, "= ");
    return nx == ny && strncmp(x, y, nx) == 0;
}

static void append_set(ab_opts *o, int side, const char *kv, const char *origin)
{
    o->set_origins[side][o->n_sets[side]] = origin;
    o->sets[side][o->n_sets[side]++] = kv;
}

/* A side's --set-a / --set-b replaces a --set of the same key, wherever it stands on the line. */
static void merge_sets(ab_opts *o)
{
    for (int s = 0; s < SY_AB_SIDES; s++) {
        for (size_t i = 0; i < o->n_common_sets; i++) {
            int replaced = 0;
            for (size_t k = 0; k < o->n_own_sets[s] && !replaced; k++)
                replaced = same_key(o->common_sets[i], o->own_sets[s][k]);
            if (!replaced)
                append_set(o, s, o->common_sets[i], "--set");
        }
        for (size_t k = 0; k < o->n_own_sets[s]; k++)
            append_set(o, s, o->own_sets[s][k], s == SY_AB_A ? "--set-a" : "--set-b");
    }
}

/* Returns -1 to stop with SY_EXIT_USAGE, 1 after --help, 0 to run. */
static int parse(ab_opts *o, sy_cli_common *common, int argc, char **argv)
{
    size_t nfiles = 0;
    for (int i = 1; i < argc; i++) {
        int r = sy_cli_common_opt(common, argc, argv, &i);
        if (r < 0)
            return -1;
        if (r > 0)
            continue;
        const char *a = argv[i];
        static const char *const set_opts[] = {"--set", "--set-a", "--set-b"};
        int set_side = -2, missing = 0;
        const char *v = NULL;
        for (int k = 0; k < 3 && set_side == -2 && !missing; k++)
            if ((v = sy_cli_option_value("switchyard ab", argc, argv, &i, set_opts[k], &missing)))
                set_side = k - 1;
        if (missing)
            return -1;
        if (set_side > -2) {
            add_set(o, set_side, v);
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 1;
        } else if ((v = sy_cli_option_value("switchyard ab", argc, argv, &i, "--rounds", &missing))) {
            if (parse_uint("--rounds", v, &o->ab.rounds) != 0)
                return -1;
        } else if ((v = sy_cli_option_value("switchyard ab", argc, argv, &i, "--tolerance", &missing))) {
            if (parse_tolerance(v, &o->ab.tolerance) != 0)
                return -1;
        } else if ((v = sy_cli_option_value("switchyard ab", argc, argv, &i, "--json", &missing))) {
            o->json = v;
        } else if ((v = sy_cli_option_value("switchyard ab", argc, argv, &i, "--html", &missing))) {
            o->html = v;
        } else if (missing) {
            return -1;
        } else if (strcmp(a, "--import-env") == 0) {
            o->import_env = 1;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            o->quiet = 1;
        } else if (a[0] == '-' || nfiles == SY_AB_SIDES) {
            fprintf(stderr, "switchyard ab: unexpected argument '%s'\n", a);
            usage(stderr);
            return -1;
        } else {
            o->file[nfiles++] = a;
        }
    }
    if (nfiles == 0) {
        fprintf(stderr, "switchyard ab: missing the config A.yaml\n");
        usage(stderr);
        return -1;
    }
    if (nfiles == 1)
        o->file[SY_AB_B] = o->file[SY_AB_A];
    merge_sets(o);
    if (o->ab.rounds && o->ab.rounds < SY_AB_MIN_ROUNDS) {
        fprintf(stderr, "switchyard ab: --rounds %u: at least %u rounds give an interval (0 skips the timing)\n",
                o->ab.rounds, SY_AB_MIN_ROUNDS);
        return -1;
    }
    return 0;
}

static char *side_label(const ab_opts *o, int side)
{
    sy_str s = {0};
    sy_str_appendf(&s, "%s", o->file[side]);
    for (size_t i = 0; i < o->n_common_sets; i++)
        sy_str_appendf(&s, " --set %s", o->common_sets[i]);
    for (size_t i = 0; i < o->n_own_sets[side]; i++)
        sy_str_appendf(&s, " --set-%c %s", "ab"[side], o->own_sets[side][i]);
    return s.data;
}

/* Loads, composes and plans one side; diagnostics go to stderr prefixed with the side. */
static int load_side(const ab_opts *o, const sy_cli_common *common, int side, ab_side_state *st, sy_plan *plan)
{
    sy_diags diags = {0};
    sy_config_options copts = {.sets = o->sets[side],
                               .n_sets = o->n_sets[side],
                               .set_origins = o->set_origins[side],
                               .import_env = o->import_env};
    sy_error err = {{0}};
    int rc = SY_EXIT_USAGE;
    st->label = side_label(o, side);
    st->cfg = sy_config_load_file(o->file[side], &copts, &diags);
    if (!st->cfg || sy_diags_count(&diags, SY_SEV_ERROR))
        goto done;
    if (sy_compose_open_registry(st->cfg, common->plugin_paths, common->n_plugin_paths, common->allow_insecure,
                                 &st->reg, &err) != SY_OK) {
        fprintf(stderr, "switchyard ab: side %c: %s\n", "AB"[side], err.msg);
        rc = SY_EXIT_RUNTIME;
        goto done;
    }
    st->comp = sy_compose(st->reg, st->cfg, &diags);
    if (!sy_composition_ok(st->comp) || sy_diags_count(&diags, SY_SEV_ERROR))
        goto done;
    if (sy_plan_from_config(st->cfg, st->comp, plan, &err) != SY_OK) {
        fprintf(stderr, "switchyard ab: side %c: %s: error: %s\n", "AB"[side], o->file[side], err.msg);
        goto done;
    }
    rc = SY_EXIT_OK;
done:
    if (diags.n) {
        sy_diags_sort(&diags);
        fprintf(stderr, "side %c (%s):\n", "AB"[side], st->label);
        sy_diags_print(&diags, stderr);
    }
    sy_diags_free(&diags);
    return rc;
}

int sy_cmd_ab(int argc, char **argv)
{
    sy_cli_common common = {0};
    ab_opts o;
    memset(&o, 0, sizeof o);
    o.ab.rounds = 10;
    o.ab.tolerance = -1;
    for (int s = 0; s < SY_AB_SIDES; s++) {
        o.sets[s] = calloc((size_t)argc, sizeof *o.sets[s]);
        o.set_origins[s] = calloc((size_t)argc, sizeof *o.set_origins[s]);
        o.own_sets[s] = calloc((size_t)argc, sizeof *o.own_sets[s]);
    }
    o.common_sets = calloc((size_t)argc, sizeof *o.common_sets);
    ab_side_state st[SY_AB_SIDES];
    memset(st, 0, sizeof st);
    sy_ab_side sides[SY_AB_SIDES];
    memset(sides, 0, sizeof sides);
    sy_ab_report report;
    memset(&report, 0, sizeof report);
    int have_report = 0;
    sy_report_file json_file = {0}, html_file = {0};
    int rc = SY_EXIT_USAGE;
    int parsed = parse(&o, &common, argc, argv);
    if (parsed != 0) {
        rc = parsed > 0 ? SY_EXIT_OK : SY_EXIT_USAGE;
        goto out;
    }
    for (int s = 0; s < SY_AB_SIDES; s++) {
        rc = load_side(&o, &common, s, &st[s], &sides[s].plan);
        if (rc != SY_EXIT_OK)
            goto out;
        sides[s].label = st[s].label;
        sides[s].cfg = st[s].cfg;
        sides[s].comp = st[s].comp;
    }
    sy_error err = {{0}};
    if (sy_ab_check_same_inputs(st[SY_AB_A].cfg, st[SY_AB_B].cfg, &err) != SY_OK) {
        fprintf(stderr, "switchyard ab: %s\n", err.msg);
        rc = SY_EXIT_USAGE;
        goto out;
    }
    if (!o.quiet && isatty(fileno(stderr))) {
        o.ab.progress = progress;
        o.ab.progress_user = NULL;
    }
    rc = SY_EXIT_RUNTIME;
    if ((o.json && sy_report_open(&json_file, o.json) != 0) || (o.html && sy_report_open(&html_file, o.html) != 0))
        goto out;
    if (sy_ab_run(sides, &o.ab, &report, &err) != SY_OK) {
        if (isatty(fileno(stderr)))
            fputs("\r\033[K", stderr);
        fprintf(stderr, "switchyard ab: %s\n", err.msg);
        goto out;
    }
    have_report = 1;
    sy_ab_write_text(&report, stdout);
    fflush(stdout);
    if (o.json) {
        sy_ab_write_json(&report, json_file.f);
        if (sy_report_commit(&json_file) != 0)
            goto out;
    }
    if (o.html) {
        sy_ab_write_html(&report, html_file.f);
        if (sy_report_commit(&html_file) != 0)
            goto out;
    }
    if (o.json)
        printf("json report: %s\n", o.json);
    if (o.html)
        printf("html report: %s\n", o.html);
    rc = report.exit_code;
out:
    sy_report_abort(&json_file);
    sy_report_abort(&html_file);
    if (have_report)
        sy_ab_report_free(&report);
    for (int s = 0; s < SY_AB_SIDES; s++) {
        if (st[s].comp)
            sy_composition_free(st[s].comp);
        sy_registry_close(st[s].reg);
        sy_config_free(st[s].cfg);
        free(st[s].label);
        free(o.sets[s]);
        free(o.set_origins[s]);
        free(o.own_sets[s]);
    }
    free(o.common_sets);
    sy_cli_common_free(&common);
    return rc;
}
