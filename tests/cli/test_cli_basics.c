/* The `switchyard` command itself: help, version, and the documented exit codes. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_support.h"
#include "run_process.h"
#include "switchyard/switchyard.h"

/* Run switchyard with `args`, expect `exit_code` and, in stdout (or stderr when on_stderr), each
 * of the NULL-terminated `parts`. */
static void expect_run(const char *const *args, int exit_code, int on_stderr, const char *const *parts)
{
    sy_process_result r;
    sy_run_switchyard(args, NULL, &r);
    ck_assert_msg(r.term_signal == 0, "switchyard %s killed by signal %d; stderr:\n%s", args[0] ? args[0] : "",
                  r.term_signal, r.err);
    ck_assert_msg(r.exit_code == exit_code, "switchyard %s exited %d, expected %d; stderr:\n%s",
                  args[0] ? args[0] : "", r.exit_code, exit_code, r.err);
    const char *text = on_stderr ? r.out : r.err; /* the other stream must stay quiet */
    ck_assert_msg(text[0] == '\0', "switchyard %s also wrote to %s:\n%s", args[0] ? args[0] : "",
                  on_stderr ? "stdout" : "stderr", text);
    text = on_stderr ? r.err : r.out;
    for (size_t i = 0; parts[i]; i++)
        ck_assert_msg(strstr(text, parts[i]) != NULL, "output lacks '%s':\n%s", parts[i], text);
    sy_process_result_free(&r);
}

START_TEST(help_exits_zero_and_documents_exit_codes)
{
    static const char *const parts[] = {"usage: switchyard", "exit status:\n  0  success\n",
                                        "\n  1  the command's verdict is negative", "\n  2  a usage error, or a config error that stops run",
                                        "\n  3  a backend, plugin or I/O failure while running\n",
                                        "  plugins ", "--plugin-path DIR", "--allow-insecure-plugins",
                                        "never the current directory", NULL};
    const char *spellings[] = {"--help", "-h", "help"};
    for (size_t i = 0; i < 3; i++) {
        const char *args[] = {spellings[i], NULL};
        expect_run(args, 0, 0, parts);
    }
}
END_TEST

START_TEST(version_prints_the_abi)
{
    uint32_t major, minor;
    sy_abi_version(&major, &minor);
    ck_assert_uint_eq(major, SY_ABI_MAJOR);
    ck_assert_uint_eq(minor, SY_ABI_MINOR);
    char want[128];
    snprintf(want, sizeof want, "switchyard %s (plugin ABI %u.%u)\n", sy_version(), major, minor);
    const char *args[] = {"--version", NULL};
    const char *parts[] = {want, NULL};
    expect_run(args, 0, 0, parts);
}
END_TEST

START_TEST(no_command_is_a_usage_error)
{
    const char *args[] = {NULL};
    const char *parts[] = {"usage: switchyard", NULL};
    expect_run(args, 2, 1, parts);
}
END_TEST

START_TEST(unknown_command_exits_two)
{
    const char *args[] = {"frobnicate", NULL};
    const char *parts[] = {"unknown command 'frobnicate'", NULL};
    expect_run(args, 2, 1, parts);
}
END_TEST

START_TEST(plugins_bad_arguments_exit_two)
{
    const char *unknown[] = {"plugins", "--frobnicate", NULL};
    const char *unknown_parts[] = {"unknown argument '--frobnicate'", NULL};
    expect_run(unknown, 2, 1, unknown_parts);
    const char *missing_value[] = {"plugins", "--plugin-path", NULL};
    const char *missing_parts[] = {"--plugin-path needs a value", NULL};
    expect_run(missing_value, 2, 1, missing_parts);
}
END_TEST

START_TEST(plugins_help)
{
    const char *args[] = {"plugins", "--help", NULL};
    const char *parts[] = {"usage: switchyard plugins [--json]", NULL};
    expect_run(args, 0, 0, parts);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        help_exits_zero_and_documents_exit_codes,
        version_prints_the_abi,
        no_command_is_a_usage_error,
        unknown_command_exits_two,
        plugins_bad_arguments_exit_two,
        plugins_help,
    };
    return sy_fixture_run_tests("cli_basics", tests, sizeof tests / sizeof tests[0]);
}
