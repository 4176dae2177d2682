#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int sy_cli_common_opt(sy_cli_common *c, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (strcmp(a, "--allow-insecure-plugins") == 0) {
        c->allow_insecure = 1;
        return 1;
    }
    const char *value = NULL;
    if (strncmp(a, "--plugin-path=", 14) == 0)
        value = a + 14;
    else if (strcmp(a, "--plugin-path") == 0) {
        if (*i + 1 >= argc) {
            fprintf(stderr, "switchyard: --plugin-path needs a folder\n");
            return -1;
        }
        value = argv[++*i];
    }
    if (!value)
        return 0;
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
