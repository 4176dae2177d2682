#include "cli.h"

int sy_cmd_checkpoint(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return sy_cli_not_built("checkpoint");
}
