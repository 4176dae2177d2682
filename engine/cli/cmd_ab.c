#include "cli.h"

int sy_cmd_ab(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return sy_cli_not_built("ab");
}
