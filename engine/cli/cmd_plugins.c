/* switchyard plugins [--json]: every backend and plugin found, loaded or rejected with the reason. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "util/json.h"

/* version and description are free text a library may leave NULL; printf must never see NULL. */
static const char *text_or_dash(const char *s)
{
    return s && *s ? s : "-";
}

static void print_text(const sy_registry *reg)
{
    size_t n = sy_registry_count(reg);
    printf("search path:\n");
    for (size_t i = 0; i < sy_registry_search_dir_count(reg); i++)
        printf("  %s\n", sy_registry_search_dir(reg, i));
    printf("\nbackends:\n");
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        if (e->type != SY_ENTRY_BACKEND || e->stage != SY_STAGE_NONE)
            continue;
        any = 1;
        if (e->probe_score > 0)
            printf("  %-8s %-8s usable (score %d)  %s\n    file: %s\n", e->backend->name,
                   text_or_dash(e->backend->version), e->probe_score, text_or_dash(e->backend->description), e->file);
        else
            printf("  %-8s %-8s unusable here: %s\n    file: %s\n", e->backend->name, text_or_dash(e->backend->version),
                   e->probe_reason, e->file);
    }
    if (!any)
        printf("  (none)\n");
    printf("\nplugins:\n");
    any = 0;
    for (size_t i = 0; i < n; i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        if (e->type != SY_ENTRY_PLUGIN || e->stage != SY_STAGE_NONE)
            continue;
        char caps[512];
        any = 1;
        sy_caps_summary(e->plugin, caps, sizeof caps);
        printf("  %-10s %-24s %-5s %-8s loaded\n    caps: %s\n    file: %s\n", sy_kind_name((int32_t)e->plugin->kind),
               e->plugin->name, e->plugin->backend, text_or_dash(e->plugin->version), caps, e->file);
    }
    if (!any)
        printf("  (none)\n");
    int rejected = 0;
    for (size_t i = 0; i < n; i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        if (e->stage == SY_STAGE_NONE)
            continue;
        if (!rejected++)
            printf("\nrejected:\n");
        printf("  %s: stage %s: %s\n", e->file, sy_stage_name(e->stage), e->reason);
    }
}

static void print_json(const sy_registry *reg)
{
    sy_json j;
    size_t n = sy_registry_count(reg);
    uint32_t major, minor;
    sy_abi_version(&major, &minor);
    sy_json_init(&j, stdout, 1);
    sy_json_begin_object(&j);
    sy_json_key(&j, "version");
    sy_json_string(&j, sy_version());
    sy_json_key(&j, "abi");
    sy_json_begin_array(&j);
    sy_json_uint(&j, major);
    sy_json_uint(&j, minor);
    sy_json_end_array(&j);
    sy_json_key(&j, "search_path");
    sy_json_begin_array(&j);
    for (size_t i = 0; i < sy_registry_search_dir_count(reg); i++)
        sy_json_string(&j, sy_registry_search_dir(reg, i));
    sy_json_end_array(&j);
    sy_json_key(&j, "entries");
    sy_json_begin_array(&j);
    for (size_t i = 0; i < n; i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        sy_json_begin_object(&j);
        sy_json_key(&j, "type");
        sy_json_string(&j, e->type == SY_ENTRY_BACKEND ? "backend" : e->type == SY_ENTRY_PLUGIN ? "plugin" : "unknown");
        sy_json_key(&j, "file");
        sy_json_string(&j, e->file);
        sy_json_key(&j, "status");
        sy_json_string(&j, e->stage == SY_STAGE_NONE ? "loaded" : "rejected");
        if (e->stage != SY_STAGE_NONE) {
            sy_json_key(&j, "stage");
            sy_json_string(&j, sy_stage_name(e->stage));
            sy_json_key(&j, "reason");
            sy_json_string(&j, e->reason);
        }
        if (e->backend) {
            sy_json_key(&j, "name");
            sy_json_string(&j, e->backend->name);
            sy_json_key(&j, "version");
            sy_json_string(&j, e->backend->version);
            sy_json_key(&j, "description");
            sy_json_string(&j, e->backend->description);
            sy_json_key(&j, "usable");
            sy_json_bool(&j, e->probe_score > 0);
            sy_json_key(&j, "probe_score");
            sy_json_int(&j, e->probe_score);
            if (e->probe_score <= 0) {
                sy_json_key(&j, "probe_reason");
                sy_json_string(&j, e->probe_reason);
            }
        }
        if (e->plugin) {
            char caps[512];
            sy_caps_summary(e->plugin, caps, sizeof caps);
            sy_json_key(&j, "kind");
            sy_json_string(&j, sy_kind_name((int32_t)e->plugin->kind));
            sy_json_key(&j, "name");
            sy_json_string(&j, e->plugin->name);
            sy_json_key(&j, "backend");
            sy_json_string(&j, e->plugin->backend);
            sy_json_key(&j, "version");
            sy_json_string(&j, e->plugin->version);
            sy_json_key(&j, "description");
            sy_json_string(&j, e->plugin->description);
            sy_json_key(&j, "rank");
            sy_json_int(&j, e->plugin->rank);
            sy_json_key(&j, "caps");
            sy_json_string(&j, caps);
        }
        sy_json_end_object(&j);
    }
    sy_json_end_array(&j);
    sy_json_end_object(&j);
    fputc('\n', stdout);
}

int sy_cmd_plugins(int argc, char **argv)
{
    sy_cli_common common = {0};
    int json = 0;
    for (int i = 1; i < argc; i++) {
        int r = sy_cli_common_opt(&common, argc, argv, &i);
        if (r < 0)
            return SY_EXIT_USAGE;
        if (r > 0)
            continue;
        if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--help") == 0) {
            printf("usage: switchyard plugins [--json] [--plugin-path DIR]... [--allow-insecure-plugins]\n"
                   "Lists every backend and plugin library on the search path: kind, name, backend, version,\n"
                   "capabilities, file, and status (loaded, or rejected with the stage and the reason).\n"
                   "Each library is loaded (its initializers run) and its descriptor read; no op is called except\n"
                   "backends' probe. Libraries owned by another user or writable by others are refused.\n");
            sy_cli_common_free(&common);
            return SY_EXIT_OK;
        } else {
            fprintf(stderr, "switchyard plugins: unknown argument '%s'\n", argv[i]);
            sy_cli_common_free(&common);
            return SY_EXIT_USAGE;
        }
    }
    sy_registry *reg = NULL;
    sy_error err = {{0}};
    if (sy_cli_open_registry(&common, &reg, &err) != SY_OK) {
        fprintf(stderr, "switchyard plugins: %s\n", err.msg);
        sy_cli_common_free(&common);
        return SY_EXIT_RUNTIME;
    }
    if (json)
        print_json(reg);
    else
        print_text(reg);
    sy_registry_close(reg);
    sy_cli_common_free(&common);
    return SY_EXIT_OK;
}
