/* The `switchyard` command: shared option handling and the subcommands. */
#ifndef SY_CLI_H
#define SY_CLI_H

#include <stddef.h>

#include "switchyard/switchyard.h"

/* Documented exit codes (README.md, `switchyard --help`). */
enum {
    SY_EXIT_OK = 0,       /* success */
    SY_EXIT_FAILED = 1,   /* the command's verdict is negative: config check errors, numerics off, failed cases */
    SY_EXIT_USAGE = 2,    /* bad command line or unusable config */
    SY_EXIT_RUNTIME = 3   /* a backend, plugin or I/O failure while running */
};

/* Options every subcommand understands; parsed out of argv by sy_cli_common_opt. */
typedef struct sy_cli_common {
    const char **plugin_paths;
    size_t n_plugin_paths;
    int allow_insecure;
} sy_cli_common;

/* The value of "OPT VALUE" or "OPT=VALUE" at argv[*i] (moving *i past a separate value), or NULL
 * when argv[*i] is another option; when it is OPT with no value left, prints "COMMAND: OPT needs a
 * value" and sets *missing. */
const char *sy_cli_option_value(const char *command, int argc, char **argv, int *i, const char *opt, int *missing);

/* If argv[*i] is a common option, consume it (and its value) and return 1; 0 if not; -1 on a
 * missing value (message printed). */
int sy_cli_common_opt(sy_cli_common *c, int argc, char **argv, int *i);
void sy_cli_common_free(sy_cli_common *c);
sy_status sy_cli_open_registry(const sy_cli_common *c, sy_registry **reg, sy_error *err);

int sy_cmd_plugins(int argc, char **argv);
int sy_cmd_run(int argc, char **argv);
int sy_cmd_ab(int argc, char **argv);
int sy_cmd_config(int argc, char **argv);
int sy_cmd_conformance(int argc, char **argv);
int sy_cmd_bench(int argc, char **argv);
int sy_cmd_checkpoint(int argc, char **argv);

#endif
