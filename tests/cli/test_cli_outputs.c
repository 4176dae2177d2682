/* Where the command's output goes: report files (--json) through symlinks, into FIFOs, refused for
 * folders and unwritable paths before any work runs; a failed write to stdout is an I/O failure
 * (exit 3), never exit 0; options and filters that would be silently ignored are usage errors. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture_support.h"
#include "run_process.h"

static char *default_config(void)
{
    const char *src = getenv("SY_SOURCE_DIR");
    ck_assert_msg(src != NULL, "SY_SOURCE_DIR is not set (run through ctest)");
    return sy_fixture_printf("%s/configs/default.yaml", src);
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot read %s: %s", path, strerror(errno));
    char *text = calloc(1, 1 << 20);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* switchyard run on the default config with --json `report`: its exit code, its stdout in *out. */
static int run_with_report(const char *report, char **out, char **err)
{
    char *config = default_config();
    const char *args[] = {"run", config, "--quiet", "--json", report, NULL};
    sy_process_result r;
    sy_run_switchyard(args, NULL, &r);
    free(config);
    ck_assert_msg(r.term_signal == 0, "killed by signal %d; stderr:\n%s", r.term_signal, r.err);
    *out = r.out;
    *err = r.err;
    return r.exit_code;
}

START_TEST(report_through_a_symlink_replaces_the_target_and_keeps_the_link)
{
    char *dir = sy_scratch_dir();
    char *target = sy_scratch_write(dir, "target.json", "old\n", 0644);
    char *link = sy_fixture_printf("%s/link.json", dir);
    ck_assert_int_eq(symlink("target.json", link), 0);
    char *out, *err;
    ck_assert_msg(run_with_report(link, &out, &err) == 0, "stderr:\n%s", err);
    struct stat st;
    ck_assert_int_eq(lstat(link, &st), 0);
    ck_assert_msg(S_ISLNK(st.st_mode), "%s is no longer a symlink", link);
    char *text = read_all(target);
    ck_assert_msg(strstr(text, "\"switchyard\"") && strstr(text, "token_checksum"), "target holds:\n%.200s", text);
    free(text);
    free(out);
    free(err);
    free(link);
    free(target);
    sy_scratch_remove(dir);
}
END_TEST

START_TEST(report_into_a_fifo_is_written_through_not_replaced)
{
    char *dir = sy_scratch_dir();
    char *fifo = sy_fixture_printf("%s/report.fifo", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    /* A reader open before the run lets the writer's open return; the report (a few KB) fits in the
     * pipe's buffer, so the child finishes before anything is read. */
    int reader = open(fifo, O_RDONLY | O_NONBLOCK);
    ck_assert_int_ge(reader, 0);
    char *out, *err;
    ck_assert_msg(run_with_report(fifo, &out, &err) == 0, "stderr:\n%s", err);
    char buf[65536];
    ssize_t n = read(reader, buf, sizeof buf - 1);
    close(reader);
    ck_assert_int_gt(n, 0);
    buf[n] = '\0';
    ck_assert_msg(strstr(buf, "token_checksum") != NULL, "the FIFO carried:\n%.200s", buf);
    struct stat st;
    ck_assert_int_eq(lstat(fifo, &st), 0);
    ck_assert_msg(S_ISFIFO(st.st_mode), "%s is no longer a FIFO", fifo);
    free(out);
    free(err);
    free(fifo);
    sy_scratch_remove(dir);
}
END_TEST

/* A report that cannot be written is found before the workload runs: no results are printed, and
 * nothing is left beside the path. */
START_TEST(unwritable_reports_fail_before_the_run)
{
    char *dir = sy_scratch_dir();
    char *folder = sy_fixture_printf("%s/a_folder", dir);
    ck_assert_int_eq(mkdir(folder, 0755), 0);
    char *missing_parent = sy_fixture_printf("%s/no/such/dir/report.json", dir);
    const struct {
        const char *path, *reason;
    } cases[] = {{folder, "it is a directory"}, {missing_parent, "No such file or directory"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out, *err;
        ck_assert_int_eq(run_with_report(cases[i].path, &out, &err), 3);
        ck_assert_msg(strstr(err, cases[i].reason) != NULL, "stderr lacks '%s':\n%s", cases[i].reason, err);
        ck_assert_msg(strstr(out, "TPOT") == NULL, "the workload ran before the report was refused:\n%s", out);
        free(out);
        free(err);
    }
    char *listing = sy_fixture_printf("ls -A '%s' | grep -c tmp", dir);
    ck_assert_msg(system(listing) != 0, "a temporary report file was left in %s", dir);
    free(listing);
    free(missing_parent);
    free(folder);
    sy_scratch_remove(dir);
}
END_TEST

START_TEST(a_failed_write_to_stdout_exits_three)
{
    if (access("/dev/full", W_OK) != 0)
        return; /* a system without /dev/full has no cheap always-failing stdout */
    const char *build = sy_fixture_build_dir();
    const char *commands[] = {"plugins --json", "config doc", "conformance --list --quick"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        char *line = sy_fixture_printf("'%s/bin/switchyard' %s > /dev/full 2>/dev/null", build, commands[i]);
        int status = system(line);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 3, "`switchyard %s > /dev/full` gave status %d",
                      commands[i], status);
        free(line);
    }
}
END_TEST

static void expect_usage_error(const char *const *args, const char *message)
{
    sy_process_result r;
    sy_run_switchyard(args, NULL, &r);
    ck_assert_msg(r.exit_code == 2, "switchyard %s %s exited %d, expected 2; stderr:\n%s", args[0], args[1],
                  r.exit_code, r.err);
    ck_assert_msg(strstr(r.err, message) != NULL, "stderr lacks '%s':\n%s", message, r.err);
    sy_process_result_free(&r);
}

START_TEST(options_a_command_would_ignore_are_usage_errors)
{
    char *config = default_config();
    const char *show_output[] = {"config", "show", config, "--output", "x.yaml", NULL};
    expect_usage_error(show_output, "--output does not apply here");
    const char *check_format[] = {"config", "check", config, "--format", "json", NULL};
    expect_usage_error(check_format, "--format does not apply here");
    const char *import_env_file[] = {"config", "import-env", config, NULL};
    expect_usage_error(import_env_file, "takes no file");
    const char *doc_set[] = {"config", "doc", "--set", "model.layers=2", NULL};
    expect_usage_error(doc_set, "--set does not apply here");
    const char *no_case[] = {"conformance", "--quick", "--case", "no_case_has_this_name", NULL};
    expect_usage_error(no_case, "no case matches --case no_case_has_this_name");
    free(config);
}
END_TEST

/* "--opt=value" is read like "--opt value" by every option that takes a value, and an option at the
 * end of the line without its value says so. */
START_TEST(options_take_their_value_either_way)
{
    char *config = default_config();
    const char *ab_rounds[] = {"ab", config, "--rounds=abc", NULL};
    expect_usage_error(ab_rounds, "--rounds 'abc': expected a whole number");
    const char *ab_tolerance[] = {"ab", config, "--tolerance=-1", NULL};
    expect_usage_error(ab_tolerance, "--tolerance '-1'");
    const char *ab_json[] = {"ab", config, "--json", NULL};
    expect_usage_error(ab_json, "switchyard ab: --json needs a value");
    const char *run_set[] = {"run", config, "--set", NULL};
    expect_usage_error(run_set, "switchyard run: --set needs a value");
    const char *run_set_eq[] = {"run", config, "--set=model.no_such_key=1", NULL};
    expect_usage_error(run_set_eq, "unknown key 'model.no_such_key'");
    /* Diagnostics name the option typed and count its own occurrences. */
    const char *ab_side[] = {"ab", config, "--set", "workload.batch=1", "--set-b", "no_such_key=1", NULL};
    expect_usage_error(ab_side, "--set-b:1:1: error: unknown key 'no_such_key'");
    const char *ab_seed[] = {"ab", config, "--set-b", "model.seed=5", NULL};
    expect_usage_error(ab_seed, "B has 5 (--set-b)");
    free(config);
}
END_TEST

START_TEST(every_subcommand_takes_help)
{
    const char *const helps[][3] = {{"config", "check", "--help"}, {"config", "show", "-h"},
                                    {"config", "doc", "--help"},   {"run", "-h", NULL},
                                    {"conformance", "-h", NULL},   {"bench", "-h", NULL}};
    for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++) {
        const char *args[4] = {helps[i][0], helps[i][1], helps[i][2], NULL};
        sy_process_result r;
        sy_run_switchyard(args, NULL, &r);
        ck_assert_msg(r.exit_code == 0 && strstr(r.out, "usage: switchyard"), "switchyard %s %s %s: exit %d\n%s",
                      args[0], args[1], args[2] ? args[2] : "", r.exit_code, r.err);
        sy_process_result_free(&r);
    }
}
END_TEST

/* A config that loads is shown even when no plugin can serve it here; the composition's error still
 * sets the exit status. */
START_TEST(config_show_prints_a_config_that_cannot_compose)
{
    char *config = default_config();
    const char *args[] = {"config", "show", config, "--set", "attention.plugin=no_such_plugin", NULL};
    sy_process_result r;
    sy_run_switchyard(args, NULL, &r);
    ck_assert_msg(r.exit_code == 1, "exit %d; stderr:\n%s", r.exit_code, r.err);
    ck_assert_msg(strstr(r.out, "no_such_plugin") != NULL, "stdout lacks the config:\n%s", r.out);
    ck_assert_msg(strstr(r.err, "is not a loaded attention plugin") != NULL, "stderr:\n%s", r.err);
    sy_process_result_free(&r);
    free(config);
}
END_TEST

/* backend auto landing on the cpu because another backend cannot run here says so: otherwise a GPU
 * config starts a gpt-oss workload on the host without a word. */
START_TEST(backend_auto_names_the_backends_it_could_not_use)
{
    char *config = default_config();
    char *unusable = sy_fixture_dir("backend_unusable");
    const char *args[] = {"config", "check", config, "--set", "backend=auto", "--plugin-path", unusable, NULL};
    sy_process_result r;
    sy_run_switchyard(args, NULL, &r);
    ck_assert_msg(r.exit_code == 0, "exit %d; stderr:\n%s", r.exit_code, r.err);
    ck_assert_msg(strstr(r.err, "warning: backend auto: fixture_backend_unusable cannot run here (") &&
                      strstr(r.err, "running on cpu"),
                  "stderr:\n%s", r.err);
    sy_process_result_free(&r);
    free(unusable);
    free(config);
}
END_TEST

/* A plugin folder that does not exist is searched in vain; both ways of naming one say so. */
START_TEST(missing_plugin_folders_are_warned_about)
{
    char *dir = sy_scratch_dir();
    char *config = sy_scratch_write(dir, "c.yaml", "backend: cpu\nplugin_path: [no_such_folder]\n", 0644);
    const char *args[] = {"config", "check", config, "--plugin-path", "/no/such/plugins", NULL};
    sy_process_result r;
    sy_run_switchyard(args, NULL, &r);
    ck_assert_msg(r.exit_code == 0, "exit %d; stderr:\n%s", r.exit_code, r.err);
    ck_assert_msg(strstr(r.err, "warning: --plugin-path /no/such/plugins: No such file or directory") != NULL,
                  "stderr:\n%s", r.err);
    ck_assert_msg(strstr(r.err, "c.yaml:2:") && strstr(r.err, "no_such_folder: No such file or directory"),
                  "stderr:\n%s", r.err);
    sy_process_result_free(&r);
    free(config);
    sy_scratch_remove(dir);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {
        report_through_a_symlink_replaces_the_target_and_keeps_the_link,
        report_into_a_fifo_is_written_through_not_replaced,
        unwritable_reports_fail_before_the_run,
        a_failed_write_to_stdout_exits_three,
        options_a_command_would_ignore_are_usage_errors,
        options_take_their_value_either_way,
        every_subcommand_takes_help,
        config_show_prints_a_config_that_cannot_compose,
        backend_auto_names_the_backends_it_could_not_use,
        missing_plugin_folders_are_warned_about,
    };
    return sy_fixture_run_tests("cli_outputs", tests, sizeof tests / sizeof tests[0]);
}
