/* Text lines and the JSON document of a conformance report (conformance.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conformance/conformance.h"
#include "util/json.h"

static const char *tag(int32_t status)
{
    switch (status) {
    case SY_CONF_PASS: return "PASS";
    case SY_CONF_FAIL: return "FAIL";
    case SY_CONF_NOT_SUPPORTED: return "N/S ";
    default: return "LIST";
    }
}

/* "out rel_l2 1.2e-07 <= 4e-03; k_cache bit-exact" */
static size_t checks_text(const sy_conf_result *r, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < r->n_checks && used < len; i++) {
        const sy_conf_check *k = &r->checks[i];
        const char *sep = i ? "; " : "";
        if (strcmp(k->metric, "bits") == 0)
            used += (size_t)snprintf(buf + used, len - used, "%s%s %s", sep, k->what,
                                     k->passed ? "bit-exact" : "differs");
        else
            used += (size_t)snprintf(buf + used, len - used, "%s%s rel_l2 %.2e %s %.0e", sep, k->what, k->error,
                                     k->passed ? "<=" : ">", k->tolerance);
    }
    return used;
}

void sy_conf_format_result(const sy_conf_report *rep, const sy_conf_result *r, char *buf, size_t len)
{
    const char *plugin = r->plugin < rep->n_plugins ? rep->plugins[r->plugin].name : "?";
    int used = snprintf(buf, len, "%s  %-22s %s", tag(r->status), plugin, r->name);
    if (used < 0 || (size_t)used >= len || r->status == SY_CONF_LISTED)
        return;
    char detail[768];
    if (r->status == SY_CONF_PASS) {
        checks_text(r, detail, sizeof detail);
        snprintf(buf + used, len - (size_t)used, "  %s  (%.3f ms)", detail, r->op_ms);
    } else {
        snprintf(buf + used, len - (size_t)used, "  %s", r->message);
    }
}

void sy_conf_format_summary(const sy_conf_report *rep, char *buf, size_t len)
{
    snprintf(buf, len, "%zu passed, %zu failed, %zu not supported", rep->passed, rep->failed, rep->not_supported);
}

/* "key": value members; a NULL string is written as null. */
static void member_string(sy_json *j, const char *key, const char *value)
{
    sy_json_key(j, key);
    if (value)
        sy_json_string(j, value);
    else
        sy_json_null(j);
}

static void member_double(sy_json *j, const char *key, double value)
{
    sy_json_key(j, key);
    sy_json_double(j, value);
}

static void member_uint(sy_json *j, const char *key, uint64_t value)
{
    sy_json_key(j, key);
    sy_json_uint(j, value);
}

static void json_check(sy_json *j, const sy_conf_check *k)
{
    sy_json_begin_object(j);
    member_string(j, "what", k->what);
    member_string(j, "metric", k->metric);
    member_double(j, "error", k->error);
    member_double(j, "tolerance", k->tolerance);
    member_double(j, "max_abs", k->max_abs);
    member_uint(j, "elements", (uint64_t)k->elements);
    sy_json_key(j, "passed");
    sy_json_bool(j, k->passed);
    sy_json_end_object(j);
}

/* The check that decides the case: the first failing one, else the one closest to its tolerance. */
static const sy_conf_check *headline(const sy_conf_result *r)
{
    const sy_conf_check *best = NULL;
    double best_ratio = -1;
    for (size_t i = 0; i < r->n_checks; i++) {
        const sy_conf_check *k = &r->checks[i];
        if (!k->passed)
            return k;
        double ratio = k->tolerance > 0 ? k->error / k->tolerance : 0;
        if (ratio > best_ratio) {
            best_ratio = ratio;
            best = k;
        }
    }
    return best;
}

static void json_case(sy_json *j, const sy_conf_report *rep, const sy_conf_result *r)
{
    const sy_conf_plugin *p = r->plugin < rep->n_plugins ? &rep->plugins[r->plugin] : NULL;
    const sy_conf_check *h = headline(r);
    sy_json_begin_object(j);
    member_string(j, "plugin", p ? p->name : NULL);
    member_string(j, "kind", p ? sy_kind_name(p->kind) : NULL);
    member_string(j, "name", r->name);
    member_string(j, "status", sy_conf_status_name(r->status));
    member_string(j, "metric", h ? h->metric : NULL);
    member_double(j, "error", h ? h->error : NAN);
    member_double(j, "tolerance", h ? h->tolerance : NAN);
    member_double(j, "time_ms", r->op_ms);
    member_double(j, "wall_ms", r->wall_ms);
    member_string(j, "message", r->message);
    sy_json_key(j, "checks");
    sy_json_begin_array(j);
    for (size_t i = 0; i < r->n_checks; i++)
        json_check(j, &r->checks[i]);
    sy_json_end_array(j);
    sy_json_end_object(j);
}

void sy_conf_write_json(const sy_conf_report *rep, FILE *f)
{
    sy_json j;
    uint32_t major, minor;
    char abi[32];
    sy_abi_version(&major, &minor);
    snprintf(abi, sizeof abi, "%u.%u", major, minor);
    sy_json_init(&j, f, 1);
    sy_json_begin_object(&j);
    member_string(&j, "switchyard", sy_version());
    member_string(&j, "abi", abi);
    member_string(&j, "backend", rep->backend);
    member_string(&j, "device", rep->device);
    member_string(&j, "reference_backend", "cpu");
    member_uint(&j, "seed", rep->seed);
    sy_json_key(&j, "quick");
    sy_json_bool(&j, rep->quick);
    sy_json_key(&j, "summary");
    sy_json_begin_object(&j);
    member_uint(&j, "cases", rep->n_results);
    member_uint(&j, "passed", rep->passed);
    member_uint(&j, "failed", rep->failed);
    member_uint(&j, "not_supported", rep->not_supported);
    member_double(&j, "wall_s", rep->wall_ms * 1e-3);
    sy_json_end_object(&j);
    sy_json_key(&j, "plugins");
    sy_json_begin_array(&j);
    for (size_t i = 0; i < rep->n_plugins; i++) {
        const sy_conf_plugin *p = &rep->plugins[i];
        sy_json_begin_object(&j);
        member_string(&j, "name", p->name);
        member_string(&j, "kind", sy_kind_name(p->kind));
        member_string(&j, "version", p->version);
        member_string(&j, "file", p->file);
        member_string(&j, "reference", p->reference);
        member_string(&j, "reference_file", p->reference_file);
        sy_json_end_object(&j);
    }
    sy_json_end_array(&j);
    sy_json_key(&j, "cases");
    sy_json_begin_array(&j);
    for (size_t i = 0; i < rep->n_results; i++)
        json_case(&j, rep, &rep->results[i]);
    sy_json_end_array(&j);
    sy_json_end_object(&j);
    fputc('\n', f);
}
