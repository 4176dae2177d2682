/* switchyard config check | show | explain | import-env | doc */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "compose/compose.h"
#include "config/config.h"
#include "report_file.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: switchyard config check FILE... [OPTIONS]\n"
            "       switchyard config show [FILE] [--format yaml|ini|json] [OPTIONS]\n"
            "       switchyard config explain [FILE] [OPTIONS]\n"
            "       switchyard config import-env\n"
            "       switchyard config doc [--output FILE | --check FILE]\n"
            "\n"
            "check       validate each config and its plugin composition; every problem is printed on stderr as\n"
            "            FILE:LINE:COL: error: message. Exit 0 when there are no errors, 1 otherwise.\n"
            "show        print the resolved config (every key); the output loads back to the same config.\n"
            "explain     every key with its value and source, the plugin chosen per slot and why, every\n"
            "            rejected plugin with its reason, and the fused-path decisions.\n"
            "import-env  print the SGLang environment variables that are set as the equivalent YAML.\n"
            "doc         print the config reference (docs/config.md) generated from the schema.\n"
            "\n"
            "options:\n"
            "  --set KEY=VALUE            override a key, after the file and the environment (repeatable)\n"
            "  --import-env               apply the SGLang variables (otherwise each one set is a warning)\n"
            "  --format yaml|ini|json     output syntax of show (default yaml)\n"
            "  --plugin-path DIR          search DIR for plugins first (repeatable)\n"
            "  --allow-insecure-plugins   load plugin files or folders another user owns or can write\n"
            "\n"
            "Precedence: built-in default < config file < imported environment < --set.\n"
            "Reference: docs/config.md (switchyard config doc).\n");
}

typedef struct config_args {
    sy_cli_common common;
    const char **files;
    size_t n_files;
    const char **sets;
    size_t n_sets;
    int import_env;
    sy_config_format format;
    const char *format_given; /* the --format option as typed, NULL when absent */
    const char *doc_output;
    const char *doc_check;
    int help;
} config_args;

/* Which options each subcommand takes: one given to a subcommand that would ignore it is a usage
 * error, never silently dropped. */
enum {
    TAKES_FILES = 1 << 0,
    TAKES_ONE_FILE = 1 << 1,
    TAKES_SETS = 1 << 2, /* --set, --import-env */
    TAKES_PLUGINS = 1 << 3,
    TAKES_FORMAT = 1 << 4,
    TAKES_DOC_FILES = 1 << 5 /* --output, --check */
};

static const struct {
    const char *name;
    unsigned takes;
} subcommands[] = {
    {"check", TAKES_FILES | TAKES_SETS | TAKES_PLUGINS},
    {"show", TAKES_ONE_FILE | TAKES_SETS | TAKES_PLUGINS | TAKES_FORMAT},
    {"explain", TAKES_ONE_FILE | TAKES_SETS | TAKES_PLUGINS},
    {"import-env", 0},
    {"doc", TAKES_DOC_FILES},
};

static void push(const char ***list, size_t *n, const char *value)
{
    *list = realloc(*list, (*n + 1) * sizeof **list);
    if (!*list) {
        fprintf(stderr, "switchyard config: out of memory\n");
        exit(SY_EXIT_RUNTIME);
    }
    (*list)[(*n)++] = value;
}

static void args_free(config_args *a)
{
    sy_cli_common_free(&a->common);
    free(a->files);
    free(a->sets);
}

static int parse_args(int argc, char **argv, config_args *a)
{
    a->format = SY_FORMAT_YAML;
    for (int i = 2; i < argc; i++) {
        int missing = 0;
        int r = sy_cli_common_opt(&a->common, argc, argv, &i);
        if (r < 0)
            return 0;
        if (r > 0)
            continue;
        const char *v;
        if ((v = sy_cli_option_value("switchyard config", argc, argv, &i, "--set", &missing)))
            push(&a->sets, &a->n_sets, v);
        else if ((v = sy_cli_option_value("switchyard config", argc, argv, &i, "--format", &missing))) {
            a->format_given = v;
            if (strcmp(v, "yaml") == 0)
                a->format = SY_FORMAT_YAML;
            else if (strcmp(v, "ini") == 0)
                a->format = SY_FORMAT_INI;
            else if (strcmp(v, "json") == 0)
                a->format = SY_FORMAT_JSON;
            else {
                fprintf(stderr, "switchyard config: --format '%s' is not one of: yaml, ini, json\n", v);
                return 0;
            }
        } else if ((v = sy_cli_option_value("switchyard config", argc, argv, &i, "--output", &missing)))
            a->doc_output = v;
        else if ((v = sy_cli_option_value("switchyard config", argc, argv, &i, "--check", &missing)))
            a->doc_check = v;
        else if (missing)
            return 0;
        else if (strcmp(argv[i], "--import-env") == 0)
            a->import_env = 1;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            a->help = 1;
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "switchyard config: unknown option '%s' (see switchyard config --help)\n", argv[i]);
            return 0;
        } else
            push(&a->files, &a->n_files, argv[i]);
    }
    return 1;
}

static const char *option_not_taken(const config_args *a, unsigned takes)
{
    if (!(takes & TAKES_SETS) && a->n_sets)
        return "--set";
    if (!(takes & TAKES_SETS) && a->import_env)
        return "--import-env";
    if (!(takes & TAKES_PLUGINS) && (a->common.n_plugin_paths || a->common.allow_insecure))
        return a->common.n_plugin_paths ? "--plugin-path" : "--allow-insecure-plugins";
    if (!(takes & TAKES_FORMAT) && a->format_given)
        return "--format";
    if (!(takes & TAKES_DOC_FILES) && a->doc_output)
        return "--output";
    if (!(takes & TAKES_DOC_FILES) && a->doc_check)
        return "--check";
    return NULL;
}

/* 1 when the options and files suit the subcommand; otherwise says why. */
static int suits(const char *sub, unsigned takes, const config_args *a)
{
    const char *extra = option_not_taken(a, takes);
    if (extra) {
        fprintf(stderr, "switchyard config %s: %s does not apply here (see switchyard config --help)\n", sub, extra);
        return 0;
    }
    if (!(takes & (TAKES_FILES | TAKES_ONE_FILE)) && a->n_files) {
        fprintf(stderr, "switchyard config %s: takes no file (got '%s')\n", sub, a->files[0]);
        return 0;
    }
    if ((takes & TAKES_ONE_FILE) && a->n_files > 1) {
        fprintf(stderr, "switchyard config %s: give at most one config file\n", sub);
        return 0;
    }
    if ((takes & TAKES_FILES) && a->n_files == 0) {
        fprintf(stderr, "switchyard config %s: give one or more config files\n", sub);
        return 0;
    }
    if (a->doc_output && a->doc_check) {
        fprintf(stderr, "switchyard config %s: --output and --check exclude each other\n", sub);
        return 0;
    }
    return 1;
}

static sy_config *load(const config_args *a, const char *file, sy_diags *d)
{
    sy_config_options o = {0};
    o.sets = a->sets;
    o.n_sets = a->n_sets;
    o.import_env = a->import_env;
    return file ? sy_config_load_file(file, &o, d) : sy_config_load_defaults(&o, d);
}

/* Load and compose one config; the composition is returned for show / explain (NULL when the
 * file could not be loaded or the registry not opened). */
static sy_composition *load_and_compose(const config_args *a, const char *file, sy_config **cfg, sy_registry **reg,
                                        sy_diags *d, size_t *load_errors)
{
    sy_error err = {{0}};
    *reg = NULL;
    size_t before = sy_diags_count(d, SY_SEV_ERROR);
    *cfg = load(a, file, d);
    *load_errors = sy_diags_count(d, SY_SEV_ERROR) - before;
    if (!*cfg)
        return NULL;
    if (sy_compose_open_registry(*cfg, a->common.plugin_paths, a->common.n_plugin_paths, a->common.allow_insecure,
                                 reg, &err) != SY_OK) {
        sy_diags_add(d, SY_SEV_ERROR, file ? file : "<defaults>", 0, 0, "cannot open the plugin registry: %s",
                     err.msg);
        return NULL;
    }
    return sy_compose(*reg, *cfg, d);
}

static int finish(sy_diags *d)
{
    sy_diags_sort(d);
    sy_diags_print(d, stderr);
    int errors = sy_diags_count(d, SY_SEV_ERROR) > 0;
    sy_diags_free(d);
    return errors ? SY_EXIT_FAILED : SY_EXIT_OK;
}

static int cmd_check(const config_args *a)
{
    sy_diags d = {0};
    for (size_t i = 0; i < a->n_files; i++) {
        sy_config *cfg;
        sy_registry *reg;
        size_t before = sy_diags_count(&d, SY_SEV_ERROR), load_errors;
        sy_composition *comp = load_and_compose(a, a->files[i], &cfg, &reg, &d, &load_errors);
        if (sy_diags_count(&d, SY_SEV_ERROR) == before)
            printf("%s: ok\n", a->files[i]);
        sy_composition_free(comp);
        sy_registry_close(reg);
        sy_config_free(cfg);
    }
    return finish(&d);
}

static int cmd_show_or_explain(const config_args *a, int explain)
{
    sy_diags d = {0};
    sy_config *cfg;
    sy_registry *reg;
    size_t load_errors = 0;
    sy_composition *comp = load_and_compose(a, a->n_files ? a->files[0] : NULL, &cfg, &reg, &d, &load_errors);
    int rc = SY_EXIT_OK;
    if (explain && comp)
        sy_composition_explain(comp, cfg, stdout);
    else if (!explain && cfg && load_errors == 0) {
        /* A config that loads is shown even when no plugin set can serve it here (a GPU config on a
         * machine without one): the composition's errors still go to stderr and set the exit status. */
        sy_error err = {{0}};
        if (sy_config_write(cfg, a->format, stdout, &err) != SY_OK) {
            fprintf(stderr, "switchyard config show: %s\n", err.msg);
            rc = SY_EXIT_FAILED;
        }
    }
    sy_composition_free(comp);
    sy_registry_close(reg);
    sy_config_free(cfg);
    int verdict = finish(&d);
    return rc != SY_EXIT_OK ? rc : verdict;
}

static int cmd_import_env(void)
{
    sy_diags d = {0};
    sy_config_env_write_yaml(NULL, stdout, &d);
    return finish(&d);
}

static int cmd_doc(const config_args *a)
{
    if (!a->doc_output && !a->doc_check) {
        sy_config_write_doc(stdout);
        return SY_EXIT_OK;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) {
        fprintf(stderr, "switchyard config doc: out of memory\n");
        return SY_EXIT_RUNTIME;
    }
    sy_config_write_doc(mem);
    fclose(mem);
    int rc = SY_EXIT_OK;
    if (a->doc_output) {
        sy_report_file out;
        if (sy_report_open(&out, a->doc_output) != 0)
            rc = SY_EXIT_RUNTIME;
        else if (fwrite(text, 1, len, out.f) != len) {
            sy_report_abort(&out);
            fprintf(stderr, "switchyard config doc: cannot write %s\n", a->doc_output);
            rc = SY_EXIT_RUNTIME;
        } else if (sy_report_commit(&out) != 0)
            rc = SY_EXIT_RUNTIME;
    } else {
        FILE *f = fopen(a->doc_check, "rb");
        char *old = calloc(1, len + 2);
        size_t n = f && old ? fread(old, 1, len + 1, f) : 0;
        if (f)
            fclose(f);
        if (!f || n != len || memcmp(old, text, len) != 0) {
            fprintf(stderr,
                    "%s: error: stale: it differs from what the schema generates; regenerate it with "
                    "`switchyard config doc --output %s`\n",
                    a->doc_check, a->doc_check);
            rc = SY_EXIT_FAILED;
        }
        free(old);
    }
    free(text);
    return rc;
}

int sy_cmd_config(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? SY_EXIT_USAGE : SY_EXIT_OK;
    }
    const char *sub = argv[1];
    config_args a = {0};
    if (!parse_args(argc, argv, &a)) {
        args_free(&a);
        return SY_EXIT_USAGE;
    }
    if (a.help) {
        usage(stdout);
        args_free(&a);
        return SY_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (strcmp(sub, subcommands[i].name) == 0 && !suits(sub, subcommands[i].takes, &a)) {
            args_free(&a);
            return SY_EXIT_USAGE;
        }
    int rc;
    if (strcmp(sub, "check") == 0)
        rc = cmd_check(&a);
    else if (strcmp(sub, "show") == 0)
        rc = cmd_show_or_explain(&a, 0);
    else if (strcmp(sub, "explain") == 0)
        rc = cmd_show_or_explain(&a, 1);
    else if (strcmp(sub, "import-env") == 0)
        rc = cmd_import_env();
    else if (strcmp(sub, "doc") == 0)
        rc = cmd_doc(&a);
    else {
        fprintf(stderr, "switchyard config: unknown subcommand '%s' (check, show, explain, import-env, doc)\n", sub);
        rc = SY_EXIT_USAGE;
    }
    args_free(&a);
    return rc;
}
