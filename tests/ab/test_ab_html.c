/* The HTML report in a real browser: headless Chromium renders it, the test reads the rendered DOM
 * for every table and chart, and a screenshot goes to the build folder (ab-report.png). The page
 * must be self-contained: no script, nothing to fetch. Without chromium the suite exits 77, which
 * ctest reports as skipped. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ab_run.h"
#include "fixture_support.h"

static char *chromium;

static char *find_chromium(void)
{
    static const char *const names[] = {"chromium", "chromium-browser", NULL};
    const char *path = getenv("PATH");
    for (size_t k = 0; names[k]; k++) {
        char *dirs = strdup(path ? path : "/usr/bin:/bin"), *save = NULL;
        for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
            /* Before the suite runs: no ck_assert here, so no fixture helpers. */
            char *exe = malloc(strlen(d) + strlen(names[k]) + 2);
            if (!exe)
                break;
            sprintf(exe, "%s/%s", d, names[k]);
            if (access(exe, X_OK) == 0) {
                free(dirs);
                return exe;
            }
            free(exe);
        }
        free(dirs);
    }
    return NULL;
}

/* Chromium with a throwaway profile and everything that would reach the network switched off. */
static int run_chromium(const char *profile, const char *action, const char *url, const char *out_path)
{
    char *cmd = sy_fixture_printf("timeout 120 '%s' --headless --no-sandbox --disable-gpu --disable-quic "
                                  "--no-first-run --disable-background-networking --disable-component-update "
                                  "--disable-sync --user-data-dir='%s' %s '%s' >'%s' 2>'%s.log'",
                                  chromium, profile, action, url, out_path, out_path);
    int rc = system(cmd);
    free(cmd);
    return rc;
}

static size_t count(const char *from, const char *to, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(from, needle); p && (!to || p < to); p = strstr(p + 1, needle))
        n++;
    return n;
}

/* The part of the DOM from the element with this id to the end of its svg or table. */
static const char *element(const char *dom, const char *id, const char **end)
{
    char *attr = sy_fixture_printf("id=\"%s\"", id);
    const char *at = strstr(dom, attr);
    ck_assert_msg(at != NULL, "the rendered page has no element %s", attr);
    free(attr);
    const char *svg = strstr(at, "</svg>"), *table = strstr(at, "</table>"), *p = strstr(at, "</p>");
    *end = svg;
    if (!*end || (table && table < *end))
        *end = table;
    if (!*end || (p && p < *end))
        *end = p;
    return at;
}

START_TEST(report_renders_with_every_table_and_chart)
{
    ab_result r;
    const char *extra[] = {"--rounds", "3", "--set-b", "kv_cache.layout=vectorized_5d", "--set-b",
                           "attention.plugin=attn_drop_sinks", NULL};
    ab_run(extra, &r);
    ab_expect_exit(&r, 1);
    char *html = ab_slurp(r.html_path);
    ck_assert_msg(html != NULL, "no HTML report at %s", r.html_path);
    /* Self-contained: nothing loads or runs (the SVG namespace is a name, never fetched). */
    static const char *const forbidden[] = {"<script", "<link", "<img", "<iframe", " src=", " href=", "@import",
                                            "url(", "https:"};
    for (size_t i = 0; i < sizeof forbidden / sizeof forbidden[0]; i++)
        ck_assert_msg(strstr(html, forbidden[i]) == NULL, "the page contains %s", forbidden[i]);
    ck_assert_uint_eq(count(html, NULL, "http:"), count(html, NULL, "xmlns=\"http://www.w3.org/2000/svg\""));

    char *dom_path = sy_fixture_printf("%s/dom.html", r.dir), *profile = sy_fixture_printf("%s/profile", r.dir);
    char *url = sy_fixture_printf("file://%s", r.html_path);
    int rc = run_chromium(profile, "--dump-dom", url, dom_path);
    char *dom = ab_slurp(dom_path);
    char *log_path = sy_fixture_printf("%s.log", dom_path);
    char *log = ab_slurp(log_path);
    ck_assert_msg(rc == 0 && dom && strlen(dom) > 1000, "chromium --dump-dom failed (%d):\n%s", rc, log ? log : "");

    static const char *const tables[] = {"config-diff", "plugins", "numerics", "timing"};
    for (size_t i = 0; i < 4; i++) {
        const char *end, *at = element(dom, tables[i], &end);
        ck_assert_msg(count(at, end, "<tr") >= 2, "table %s has no rows", tables[i]);
    }
    const char *end, *at = element(dom, "numerics", &end);
    ck_assert_uint_eq(count(at, end, "<tr"), 1 + 4 + 1); /* header, 4 layers, logits */
    at = element(dom, "chart-numerics", &end);
    ck_assert_msg(count(at, end, "class=\"bar\"") >= 1, "no bars in chart-numerics");
    at = element(dom, "chart-ratio", &end);
    ck_assert_msg(count(at, end, "<circle") >= 3, "the ratio chart has fewer than 3 points");
    at = element(dom, "chart-phases", &end);
    ck_assert_uint_eq(count(at, end, "class=\"bar\""), 2 * 3);
    ck_assert_uint_eq(count(at, end, "class=\"whisker\""), 2 * 3);
    at = element(dom, "chart-ops", &end);
    ck_assert_msg(count(at, end, "class=\"bar\"") >= 2 * 5, "chart-ops has %zu bars", count(at, end, "class=\"bar\""));
    ck_assert_msg(count(at, end, "class=\"whisker\"") == count(at, end, "class=\"bar\""), "bars without whiskers");
    element(dom, "tokens", &end);
    at = element(dom, "result", &end);
    ck_assert_msg(strstr(at, "beyond tolerance"), "the result badge does not say beyond tolerance");

    /* The screenshot, for people to look at. */
    char *png = sy_fixture_printf("%s/ab-report.png", sy_fixture_build_dir());
    char *shot = sy_fixture_printf("--screenshot='%s' --window-size=1200,1600", png);
    char *shot_out = sy_fixture_printf("%s/screenshot.out", r.dir);
    unlink(png);
    rc = run_chromium(profile, shot, url, shot_out);
    FILE *f = fopen(png, "rb");
    unsigned char magic[8] = {0};
    size_t got = f ? fread(magic, 1, 8, f) : 0;
    if (f)
        fseek(f, 0, SEEK_END);
    long size = f ? ftell(f) : 0;
    if (f)
        fclose(f);
    ck_assert_msg(rc == 0 && got == 8 && memcmp(magic, "\x89PNG\r\n\x1a\n", 8) == 0 && size > 20000,
                  "no screenshot at %s (chromium exit %d, %ld bytes)", png, rc, size);
    fprintf(stderr, "screenshot: %s (%ld bytes)\n", png, size);

    free(png);
    free(shot);
    free(shot_out);
    free(html);
    free(dom);
    free(log);
    free(log_path);
    free(dom_path);
    free(profile);
    free(url);
    ab_result_free(&r);
}
END_TEST

int main(void)
{
    chromium = find_chromium();
    if (!chromium) {
        printf("ab_html: skipped: chromium is not installed (apt-get install chromium; .ci/steps/ab_html.sh "
               "installs it and runs this suite)\n");
        return 77;
    }
    ab_model_seed();
    const TTest *tests[] = {report_renders_with_every_table_and_chart};
    int rc = sy_fixture_run_tests("ab_html", tests, sizeof tests / sizeof tests[0]);
    free(chromium);
    return rc;
}
