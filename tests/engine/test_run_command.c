/* `switchyard run` as users call it: what it prints, where, and what --json leaves behind. Runs the
 * built command on configs/default.yaml as a child process (pipes, or a pseudo-terminal for the
 * progress line). */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run_process.h"

static char default_config[4096];

static void find_default_config(void)
{
    const char *src = getenv("SY_SOURCE_DIR");
    ck_assert_msg(src != NULL, "SY_SOURCE_DIR is not set (run through ctest)");
    snprintf(default_config, sizeof default_config, "%s/configs/default.yaml", src);
}

/* A fresh empty folder under the build tree, for report files. */
static void make_dir(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/tests/run_command.%s.%d", getenv("SY_BUILD_DIR"), name, (int)getpid());
    ck_assert_msg(mkdir(out, 0700) == 0, "mkdir %s: %s", out, strerror(errno));
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = calloc((size_t)n + 1, 1);
    ck_assert_uint_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return s;
}

/* The entries of dir besides . and .., joined by spaces. */
static void list_dir(const char *dir, char *out, size_t len)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    out[0] = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            snprintf(out + strlen(out), len - strlen(out), "%s%s", out[0] ? " " : "", e->d_name);
    closedir(d);
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            char path[8192];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* The 16 hex digits after `label` in text, or "" when absent. */
static void hex_after(const char *text, const char *label, char out[17])
{
    const char *p = strstr(text, label);
    out[0] = 0;
    if (!p)
        return;
    p += strlen(label);
    while (*p == ' ' || *p == '"' || *p == ':')
        p++;
    if (strspn(p, "0123456789abcdef") >= 16) {
        memcpy(out, p, 16);
        out[16] = 0;
    }
}

START_TEST(run_prints_composition_and_every_metric)
{
    /* Through pipes (not a terminal): the report on stdout, nothing at all on stderr (no progress
     * line, no diagnostics), and the JSON report holds the same checksum. */
    char dir[4096], json[4200];
    make_dir(dir, sizeof dir, "report");
    snprintf(json, sizeof json, "%s/r.json", dir);
    FILE *old = fopen(json, "w");
    fputs("an older report, to be replaced whole\n", old);
    fclose(old);
    sy_process_result r;
    /* The report gets the mode of any file written under the caller's umask, not mkstemp's 0600. */
    mode_t saved_mask = umask(027);
    sy_run_switchyard((const char *const[]){"run", default_config, "--json", json, NULL}, NULL, &r);
    umask(saved_mask);
    ck_assert_msg(r.exit_code == 0, "exit %d: %s", r.exit_code, r.err);
    ck_assert_msg(r.err[0] == 0, "stderr is not empty: %s", r.err);
    struct stat report_stat;
    ck_assert_int_eq(stat(json, &report_stat), 0);
    ck_assert_msg((report_stat.st_mode & 0777) == 0640, "report mode %o, expected 640 under umask 027",
                  (unsigned)(report_stat.st_mode & 0777));
    static const char *const parts[] = {
        "composition:", "backend    cpu", "kv_layout  kv_nhd", "attention  attn_paged", "rope       rope_yarn",
        "norm       norm_rmsnorm", "moe        moe_mxfp4_interleave", "linear     linear", "kv cache   nhd bf16, page",
        "rope+kv", "norm pad   off", "q/k/v      one linear (fused)", "act dtype  f32", "TTFT", "(batch 2 x 64 prompt tokens)", "TPOT median", "TPOT p90",
        "prefill throughput", "decode throughput", "time by slot", "engine", "KV pool", "sliding-window pages peak",
        "peak resident memory", "token checksum", "report"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        ck_assert_msg(strstr(r.out, parts[i]), "'%s' not in the report:\n%s", parts[i], r.out);
    char printed[17], in_json[17], entries[1024];
    hex_after(r.out, "token checksum", printed);
    ck_assert_msg(printed[0], "no checksum printed:\n%s", r.out);
    char *text = read_file(json);
    hex_after(text, "\"token_checksum\"", in_json);
    ck_assert_str_eq(in_json, printed);
    static const char *const keys[] = {"\"ttft_ms\"", "\"tpot_median_ms\"", "\"tpot_p90_ms\"", "\"prefill_tokens_per_s\"",
                                       "\"decode_tokens_per_s\"", "\"per_op_ms\"", "\"peak_full_pages\"",
                                       "\"peak_swa_pages\"", "\"peak_rss_kib\"", "\"tokens\"", "\"resolved\""};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ck_assert_msg(strstr(text, keys[i]), "%s not in %s", keys[i], json);
    ck_assert_msg(strstr(text, "older report") == NULL, "%s still holds the old report", json);
    size_t n = strlen(text);
    ck_assert_msg(n > 2 && strcmp(text + n - 2, "}\n") == 0, "%s does not end the JSON object", json);
    /* Written to a temporary file and renamed: nothing else is left in the folder. */
    list_dir(dir, entries, sizeof entries);
    ck_assert_str_eq(entries, "r.json");
    free(text);
    sy_process_result_free(&r);
    remove_dir(dir);
}
END_TEST

START_TEST(checksum_is_a_function_of_the_seeds)
{
    /* ... and of the activations' dtype: bf16 activations run (model.dtype) and round differently. */
    char a[17], b[17], c[17], d[17];
    sy_process_result r;
    const char *const *runs[] = {(const char *const[]){"run", default_config, NULL},
                                 (const char *const[]){"run", default_config, "--quiet", NULL},
                                 (const char *const[]){"run", default_config, "--set", "model.seed=1", NULL},
                                 (const char *const[]){"run", default_config, "--set", "model.dtype=bf16", NULL}};
    char *sums[] = {a, b, c, d};
    for (int i = 0; i < 4; i++) {
        sy_run_switchyard(runs[i], NULL, &r);
        ck_assert_msg(r.exit_code == 0, "exit %d: %s", r.exit_code, r.err);
        hex_after(r.out, "token checksum", sums[i]);
        ck_assert(sums[i][0]);
        if (i == 3)
            ck_assert_msg(strstr(r.out, "act dtype  bf16"), "no bf16 activations in:\n%s", r.out);
        sy_process_result_free(&r);
    }
    ck_assert_str_eq(a, b);
    ck_assert_str_ne(a, c);
    ck_assert_str_ne(a, d);
}
END_TEST

/* Runs switchyard with stdin, stdout and stderr on a pseudo-terminal; returns all it wrote. */
static char *run_on_terminal(const char *const *args, int *exit_code)
{
    char exe[4096];
    snprintf(exe, sizeof exe, "%s/bin/switchyard", getenv("SY_BUILD_DIR"));
    int master = -1;
    pid_t pid = forkpty(&master, NULL, NULL, NULL);
    ck_assert_msg(pid >= 0, "forkpty: %s", strerror(errno));
    if (pid == 0) {
        const char *argv[16] = {exe};
        for (int i = 0; args[i] && i < 14; i++)
            argv[i + 1] = args[i];
        unsetenv("SWITCHYARD_PLUGIN_PATH");
        execv(exe, (char *const *)argv);
        _exit(127);
    }
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    for (;;) {
        if (cap - len < 4096)
            out = realloc(out, cap *= 2);
        ssize_t n = read(master, out + len, cap - len - 1);
        if (n <= 0)
            break; /* EIO once the child has gone */
        len += (size_t)n;
    }
    out[len] = 0;
    close(master);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
}

START_TEST(progress_line_only_on_a_terminal_and_not_quiet)
{
    int code = 0;
    char *out = run_on_terminal((const char *const[]){"run", default_config, NULL}, &code);
    ck_assert_msg(code == 0, "exit %d:\n%s", code, out);
    ck_assert_msg(strstr(out, "\r  step 1/") && strstr(out, " tok/s  ETA "), "no progress line on a terminal:\n%s", out);
    free(out);
    out = run_on_terminal((const char *const[]){"run", default_config, "--quiet", NULL}, &code);
    ck_assert_msg(code == 0, "exit %d:\n%s", code, out);
    ck_assert_msg(strstr(out, "step 1/") == NULL, "--quiet still shows progress:\n%s", out);
    ck_assert_msg(strstr(out, "token checksum") != NULL, "--quiet dropped the report:\n%s", out);
    free(out);
}
END_TEST

/* The unsigned number after `"key":` in a JSON text, or -1. */
static long long json_uint(const char *text, const char *key)
{
    char quoted[128];
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *p = strstr(text, quoted);
    if (!p || !(p = strchr(p, ':')))
        return -1;
    return strtoll(p + 1, NULL, 10);
}

START_TEST(memory_budget_bounds_both_pools)
{
    /* kv_cache.memory_budget_mib covers the sliding-window pool and the full-attention pool, their
     * padding pages included: the default run under 1 MiB uses all of it and not a byte more. */
    char dir[4096], json[4200];
    make_dir(dir, sizeof dir, "budget_ok");
    snprintf(json, sizeof json, "%s/r.json", dir);
    sy_process_result r;
    sy_run_switchyard(
        (const char *const[]){"run", default_config, "--json", json, "--set", "kv_cache.memory_budget_mib=1", NULL},
        NULL, &r);
    ck_assert_msg(r.exit_code == 0, "exit %d: %s", r.exit_code, r.err);
    char *text = read_file(json);
    long long bytes = json_uint(text, "pool_bytes");
    ck_assert_msg(bytes > 1048576 - 16 * 512 && bytes <= 1048576, "pool_bytes %lld under a budget of 1 MiB", bytes);
    free(text);
    sy_process_result_free(&r);
    remove_dir(dir);
}
END_TEST

START_TEST(pool_too_small_for_the_budget_is_a_clear_error)
{
    /* 1 MiB less the sliding pool (17 pages of 16 tokens at 512 bytes a token over the two sliding
     * layers) leaves 1760 tokens beside the padding page for the two full-attention layers;
     * 4 x (600 + 16) tokens do not fit. The run stops with the pool's message, no report file. */
    char dir[4096], json[4200], entries[1024];
    make_dir(dir, sizeof dir, "budget");
    snprintf(json, sizeof json, "%s/r.json", dir);
    sy_process_result r;
    sy_run_switchyard((const char *const[]){"run", default_config, "--quiet", "--json", json, "--set",
                                            "kv_cache.memory_budget_mib=1", "--set", "workload.batch=4", "--set",
                                            "workload.input_len=600", NULL},
                      NULL, &r);
    ck_assert_msg(r.exit_code == 3, "exit %d (signal %d): %s", r.exit_code, r.term_signal, r.err);
    ck_assert_msg(strstr(r.err, "KV pool exhausted") && strstr(r.err, "all 110 pages (1760 tokens)") &&
                      strstr(r.err, "kv_cache.memory_budget_mib"),
                  "%s", r.err);
    list_dir(dir, entries, sizeof entries);
    ck_assert_str_eq(entries, "");
    sy_process_result_free(&r);
    remove_dir(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("run_command");
    TCase *t = tcase_create("cli");
    tcase_add_checked_fixture(t, find_default_config, NULL);
    tcase_set_timeout(t, 300);
    tcase_add_test(t, run_prints_composition_and_every_metric);
    tcase_add_test(t, checksum_is_a_function_of_the_seeds);
    tcase_add_test(t, progress_line_only_on_a_terminal_and_not_quiet);
    tcase_add_test(t, memory_budget_bounds_both_pools);
    tcase_add_test(t, pool_too_small_for_the_budget_is_a_clear_error);
    suite_add_tcase(s, t);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
