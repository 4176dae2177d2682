#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

const char *sy_cli_option_value(const char *command, int argc, char **argv, int *i, const char *opt, int *missing)
{
    size_t n = strlen(opt);
    if (strncmp(argv[*i], opt, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] != '\0')
        return NULL;
    if (*i + 1 >= argc) {
        fprintf(stderr, "%s: %s needs a value\n", command, opt);
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

int sy_cli_common_opt(sy_cli_common *c, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (strcmp(a, "--allow-insecure-plugins") == 0) {
        c->allow_insecure = 1;
        return 1;
    }
    int missing = 0;
    const char *value = sy_cli_option_value("switchyard", argc, argv, i, "--plugin-path", &missing);
    if (missing)
        return -1;
    if (!value)
        return 0;
    /* Searched in vain otherwise: a typo would show only as a plugin that is "not loaded". */
    struct stat st;
    if (stat(value, &st) != 0)
        fprintf(stderr, "switchyard: warning: --plugin-path %s: %s\n", value, strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        fprintf(stderr, "switchyard: warning: --plugin-path %s is not a folder\n", value);
    c->plugin_paths = realloc(c->plugin_paths, (c->n_plugin_paths + 1) * sizeof *c->plugin_paths);
    if (!c->plugin_paths) {
        fprintf(stderr, "switchyard: out of memory\n");
        exit(SY_EXIT_RUNTIME);
    }
    c->plugin_paths[c->n_plugin_paths++] = value;
    return 1;
}

void sy_cli_common_free(sy_cli_common *c)
{
    free(c->plugin_paths);
    memset(c, 0, sizeof *c);
}

sy_status sy_cli_open_registry(const sy_cli_common *c, sy_registry **reg, sy_error *err)
{
    sy_registry_options o = {0};
    o.struct_size = sizeof o;
    o.allow_insecure = (uint32_t)c->allow_insecure;
    o.plugin_paths = c->plugin_paths;
    o.n_plugin_paths = c->n_plugin_paths;
    return sy_registry_open(&o, reg, err);
}
