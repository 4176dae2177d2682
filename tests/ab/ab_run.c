#include "ab_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_support.h"
#include "sy_test.h"

static sy_rng seeds;
static int seeded;
static unsigned long long model_seed, workload_seed;

static void draw_seeds(void)
{
    if (seeded)
        return;
    seeds.state = sy_test_seed();
    model_seed = sy_rng_next(&seeds) % 1000000;
    workload_seed = sy_rng_next(&seeds) % 1000000;
    fprintf(stderr, "ab suites: model.seed=%llu workload.seed=%llu\n", model_seed, workload_seed);
    seeded = 1;
}

unsigned long long ab_model_seed(void)
{
    draw_seeds();
    return model_seed;
}

unsigned long long ab_workload_seed(void)
{
    draw_seeds();
    return workload_seed;
}

char *ab_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    ck_assert(buf != NULL);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
            ck_assert(buf != NULL);
        }
    }
    fclose(f);
    buf[n] = '\0';
    return buf;
}

void ab_run(const char *const *extra, ab_result *r)
{
    ab_run_env(extra, NULL, r);
}

void ab_run_env(const char *const *extra, const char *const *env, ab_result *r)
{
    memset(r, 0, sizeof *r);
    const char *src = getenv("SY_SOURCE_DIR");
    ck_assert_msg(src && *src, "SY_SOURCE_DIR is not set (run the suite through ctest)");
    r->dir = sy_scratch_dir();
    r->json_path = sy_fixture_printf("%s/ab.json", r->dir);
    r->html_path = sy_fixture_printf("%s/ab.html", r->dir);
    char *config = sy_fixture_printf("%s/configs/default.yaml", src);
    char *fixtures = sy_fixture_printf("%s/tests/ab/plugins", sy_fixture_build_dir());
    char *mseed = sy_fixture_printf("model.seed=%llu", ab_model_seed());
    char *wseed = sy_fixture_printf("workload.seed=%llu", ab_workload_seed());
    const char *base[] = {"ab", config,
                          "--set", mseed, "--set", wseed,
                          "--set", "workload.batch=2", "--set", "workload.input_len=21",
                          "--set", "workload.output_len=6", "--set", "workload.prefill_chunk=8",
                          "--set", "workload.warmup=0",
                          "--plugin-path", fixtures, "--json", r->json_path, "--html", r->html_path};
    size_t nb = sizeof base / sizeof base[0], ne = 0;
    while (extra && extra[ne])
        ne++;
    const char **args = calloc(nb + ne + 1, sizeof *args);
    ck_assert(args != NULL);
    memcpy(args, base, sizeof base);
    for (size_t i = 0; i < ne; i++)
        args[nb + i] = extra[i];
    sy_run_switchyard(args, env, &r->proc);
    r->json = ab_slurp(r->json_path);
    free(args);
    free(config);
    free(fixtures);
    free(mseed);
    free(wseed);
}

void ab_expect_exit(const ab_result *r, int want)
{
    ck_assert_msg(r->proc.exit_code == want, "switchyard ab exited %d (signal %d), expected %d\nstdout:\n%s\nstderr:\n%s",
                  r->proc.exit_code, r->proc.term_signal, want, r->proc.out, r->proc.err);
}

void ab_result_free(ab_result *r)
{
    sy_process_result_free(&r->proc);
    free(r->json);
    free(r->json_path);
    free(r->html_path);
    if (r->dir)
        sy_scratch_remove(r->dir);
    memset(r, 0, sizeof *r);
}
