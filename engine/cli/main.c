#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} commands[] = {
    {"run", sy_cmd_run, "run a config's workload (prefill + decode) and report metrics"},
    {"ab", sy_cmd_ab, "compare two configs on identical weights and inputs"},
    {"config", sy_cmd_config, "check, show or explain a config; import-env; the key reference"},
    {"plugins", sy_cmd_plugins, "list backends and plugins found, with status"},
    {"conformance", sy_cmd_conformance, "test a backend's plugins against the cpu reference"},
    {"bench", sy_cmd_bench, "benchmark kernels"},
    {"checkpoint", sy_cmd_checkpoint, "write synthetic checkpoints, check a checkpoint folder"},
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: switchyard [--help] [--version] COMMAND [ARGS]\n"
            "\n"
            "Plugin-based inference-engine core: kernels are plugins chosen and validated from a config.\n"
            "\n"
            "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "\n"
            "options every command accepts:\n"
            "  --plugin-path DIR          search DIR for plugins first (repeatable)\n"
            "  --allow-insecure-plugins   load plugin files or folders another user owns or can write\n"
            "\n"
            "plugin search order: --plugin-path / config plugin_path, then $SWITCHYARD_PLUGIN_PATH,\n"
            "then the switchyard/plugins folder beside libswitchyard; never the current directory.\n"
            "\n"
            "exit status:\n"
            "  0  success\n"
            "  1  the command's verdict is negative (config check finding errors, numerics beyond\n"
            "     tolerance, failed conformance cases)\n"
            "  2  a usage error, or a config error that stops run, ab or bench\n"
            "  3  a backend, plugin or I/O failure while running\n");
}

/* What a command printed is its result: a write to stdout that failed (a full disk, a closed pipe
 * reader) must not end in exit 0 with the output cut short. */
static int finish_stdout(int rc)
{
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
        int saved = errno ? errno : EIO;
        fprintf(stderr, "switchyard: cannot write the output: %s\n", strerror(saved));
        return rc == SY_EXIT_OK ? SY_EXIT_RUNTIME : rc;
    }
    return rc;
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return SY_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return SY_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        uint32_t major, minor;
        sy_abi_version(&major, &minor);
        printf("switchyard %s (plugin ABI %u.%u)\n", sy_version(), major, minor);
        return SY_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "switchyard: unknown command '%s' (see switchyard --help)\n", cmd);
    return SY_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    return finish_stdout(dispatch(argc, argv));
}
