/* switchyard conformance: every plugin of a backend against the cpu reference of its kind
 * (engine/src/conformance, docs/conformance.md). Exit 0 when no case fails, 1 when one does, 2 on
 * a usage error, 3 when the backend cannot be opened or the report cannot be written. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "conformance/conformance.h"
#include "report_file.h"

typedef struct conformance_opts {
    sy_conf_options run;
    const char *json;
    int seed_given;
} conformance_opts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: switchyard conformance [--backend B] [--plugin NAME] [--case TEXT] [--json FILE] [--seed N]\n"
            "                              [--quick] [--list] [--plugin-path DIR]... [--allow-insecure-plugins]\n"
            "Runs every plugin of backend B (default cpu) against the cpu reference plugin of its kind on fresh\n"
            "random inputs at a list of shapes, and reports each case as pass, fail or not supported (a case\n"
            "the plugin's caps do not declare). docs/conformance.md lists the cases and their tolerances.\n"
            "  --backend B      backend whose plugins are tested: cpu, cuda, hip, or a third party's\n"
            "  --plugin NAME    only this plugin\n"
            "  --case TEXT      only cases whose name contains TEXT\n"
            "  --json FILE      every case with status, error, tolerance and time, written atomically\n"
            "  --seed N         inputs of seed N (the seed of every run is printed)\n"
            "  --quick          the reduced shape list (CI)\n"
            "  --list           name the cases without running them\n"
            "exit status: 0 no case failed; 1 a case failed; 2 usage error; 3 the backend cannot be opened\n"
            "or the report cannot be written.\n");
}

static uint64_t clock_seed(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
}

static int parse_seed(const char *text, uint64_t *seed)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10); /* decimal, as printed: never octal or hex */
    if (errno || end == text || *end || text[0] == '-') {
        fprintf(stderr, "switchyard conformance: --seed '%s' is not a non-negative integer\n", text);
        return 0;
    }
    *seed = v;
    return 1;
}

/* -1: usage error (printed); 0: --help printed; 1: parsed. */
static int parse(int argc, char **argv, sy_cli_common *common, conformance_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int c = sy_cli_common_opt(common, argc, argv, &i);
        if (c < 0)
            return -1;
        if (c > 0)
            continue;
        const char **value_of = NULL;
        const char *seed_text = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--quick") == 0) {
            o->run.quick = 1;
            continue;
        } else if (strcmp(a, "--list") == 0) {
            o->run.list_only = 1;
            continue;
        } else if (strcmp(a, "--backend") == 0) {
            value_of = &o->run.backend;
        } else if (strcmp(a, "--plugin") == 0) {
            value_of = &o->run.plugin;
        } else if (strcmp(a, "--case") == 0) {
            value_of = &o->run.case_filter;
        } else if (strcmp(a, "--json") == 0) {
            value_of = &o->json;
        } else if (strcmp(a, "--seed") == 0) {
            value_of = &seed_text;
        } else {
            fprintf(stderr, "switchyard conformance: unknown option '%s'\n", a);
            usage(stderr);
            return -1;
        }
        if (i + 1 >= argc || argv[i + 1][0] == '\0') {
            fprintf(stderr, "switchyard conformance: %s needs a value\n", a);
            return -1;
        }
        *value_of = argv[++i];
        if (seed_text) {
            if (!parse_seed(seed_text, &o->run.seed))
                return -1;
            o->seed_given = 1;
        }
    }
    return 1;
}

static void print_result(void *user, const sy_conf_report *rep, const sy_conf_result *r)
{
    size_t *last_plugin = user;
    if (*last_plugin != r->plugin) {
        const sy_conf_plugin *p = &rep->plugins[r->plugin];
        *last_plugin = r->plugin;
        printf("\n%s plugin %s %s (%s)\n  reference: %s%s%s%s\n", sy_kind_name(p->kind), p->name,
               p->version ? p->version : "", p->file, p->reference ? p->reference : "none found",
               p->reference_file ? " (" : "", p->reference_file ? p->reference_file : "", p->reference_file ? ")" : "");
    }
    char line[1024];
    sy_conf_format_result(rep, r, line, sizeof line);
    printf("  %s\n", line);
    fflush(stdout);
}

int sy_cmd_conformance(int argc, char **argv)
{
    sy_cli_common common = {0};
    conformance_opts o;
    memset(&o, 0, sizeof o);
    int parsed = parse(argc, argv, &common, &o);
    if (parsed <= 0) {
        sy_cli_common_free(&common);
        return parsed == 0 ? SY_EXIT_OK : SY_EXIT_USAGE;
    }
    if (!o.seed_given)
        o.run.seed = clock_seed();
    size_t last_plugin = (size_t)-1;
    o.run.on_result = print_result;
    o.run.user = &last_plugin;

    sy_registry *reg = NULL;
    sy_error err = {{0}};
    sy_report_file json_file = {0};
    if (o.json && sy_report_open(&json_file, o.json) != 0) {
        sy_cli_common_free(&common);
        return SY_EXIT_RUNTIME;
    }
    if (sy_cli_open_registry(&common, &reg, &err) != SY_OK) {
        fprintf(stderr, "switchyard conformance: %s\n", err.msg);
        sy_report_abort(&json_file);
        sy_cli_common_free(&common);
        return SY_EXIT_RUNTIME;
    }
    const char *backend = o.run.backend ? o.run.backend : "cpu";
    printf("switchyard conformance: backend %s against the cpu reference, seed %llu (--seed %llu reproduces), %s "
           "shape list%s\n",
           backend, (unsigned long long)o.run.seed, (unsigned long long)o.run.seed, o.run.quick ? "quick" : "full",
           o.run.list_only ? " (listing only)" : "");
    fflush(stdout);
    sy_conf_report rep;
    sy_status st = sy_conformance_run(reg, &o.run, &rep, &err);
    int code;
    if (st != SY_OK) {
        fprintf(stderr, "switchyard conformance: %s\n", err.msg);
        code = st == SY_E_INVALID ? SY_EXIT_USAGE : SY_EXIT_RUNTIME;
    } else if (rep.n_results == 0 && (o.run.case_filter || o.run.plugin)) {
        /* A filter that selects nothing is a typo, not a pass. */
        fprintf(stderr, "switchyard conformance: no case matches%s%s%s%s%s\n", o.run.plugin ? " --plugin '" : "",
                o.run.plugin ? o.run.plugin : "", o.run.plugin ? "'" : "", o.run.case_filter ? " --case " : "",
                o.run.case_filter ? o.run.case_filter : "");
        code = SY_EXIT_USAGE;
    } else {
        char summary[160];
        sy_conf_format_summary(&rep, summary, sizeof summary);
        if (o.run.list_only)
            printf("\n%zu cases\n", rep.n_results);
        else
            printf("\n%s (%zu cases, %.1f s on %s)\n", summary, rep.n_results, rep.wall_ms * 1e-3, rep.device);
        code = rep.failed ? SY_EXIT_FAILED : SY_EXIT_OK;
        if (o.json) {
            sy_conf_write_json(&rep, json_file.f);
            if (sy_report_commit(&json_file) != 0)
                code = SY_EXIT_RUNTIME;
        }
    }
    sy_report_abort(&json_file);
    sy_conf_report_free(&rep);
    sy_registry_close(reg);
    sy_cli_common_free(&common);
    return code;
}
