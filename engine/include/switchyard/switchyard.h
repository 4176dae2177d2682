/* Switchyard engine API: the registry of plugins and backends, configuration, composition and runs.
 * Embedders include this header and link libswitchyard. */
#ifndef SWITCHYARD_H
#define SWITCHYARD_H

#include "abi.h"
#include "backend.h"
#include "caps.h"
#include "plugin.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(SY_BUILDING_LIBRARY) || defined(__GNUC__)
#define SY_API __attribute__((visibility("default")))
#else
#define SY_API
#endif

/* Library version ("0.1.0") and the plugin ABI version it hosts. */
SY_API const char *sy_version(void);
SY_API void sy_abi_version(uint32_t *major, uint32_t *minor);

SY_API const char *sy_kind_name(int32_t kind);       /* "kv_layout", ..., "invalid" */
SY_API int32_t sy_kind_from_name(const char *name);  /* SY_KIND_INVALID when unknown */
SY_API const char *sy_layout_name(uint32_t layout);  /* "nhd", "vectorized_5d", "vendor" */

/* ------------------------------------------------------------------------------------------ */
/* Registry: every backend and plugin library found on the search path, loaded or rejected.    */

typedef struct sy_registry sy_registry;

typedef struct sy_registry_options {
    uint32_t struct_size;
    uint32_t allow_insecure;          /* 1: accept files / folders writable by group or others */
    const char *const *plugin_paths;  /* searched first, in order (--plugin-path, config plugin_path) */
    size_t n_plugin_paths;
    uint32_t skip_environment;        /* 1: ignore SWITCHYARD_PLUGIN_PATH */
    uint32_t skip_default_dir;        /* 1: do not search the folder beside libswitchyard */
} sy_registry_options;

typedef enum sy_entry_type { SY_ENTRY_PLUGIN = 1, SY_ENTRY_BACKEND = 2 } sy_entry_type;

/* Stages at which a library can be rejected, in the order they are checked. */
typedef enum sy_load_stage {
    SY_STAGE_NONE = 0,       /* loaded */
    SY_STAGE_PERMISSIONS,    /* writable by group or others */
    SY_STAGE_OPEN,           /* dlopen failed: not a shared object, missing dependency */
    SY_STAGE_SYMBOL,         /* neither sy_plugin_entry nor sy_backend_entry */
    SY_STAGE_ABI,            /* version 0, other major, newer minor, or NULL from the entry point */
    SY_STAGE_DESCRIPTOR,     /* struct too small, empty name / backend, unknown kind, missing caps / ops */
    SY_STAGE_DUPLICATE,      /* same (kind, name, backend) as an earlier file */
    SY_STAGE_INIT            /* init (plugin) or probe (backend) failed */
} sy_load_stage;

typedef struct sy_registry_entry {
    int32_t type;                    /* sy_entry_type; 0 when the file was rejected before its type was known */
    int32_t stage;                   /* sy_load_stage: SY_STAGE_NONE when loaded */
    const char *file;                /* absolute path of the library */
    const char *reason;              /* why it was rejected; "" when loaded */
    const sy_plugin_desc *plugin;    /* type == SY_ENTRY_PLUGIN and loaded */
    const sy_backend_desc *backend;  /* type == SY_ENTRY_BACKEND and loaded */
    int32_t probe_score;             /* backends: probe() result (0 = unusable here) */
    const char *probe_reason;        /* backends: probe()'s explanation when the score is 0 */
} sy_registry_entry;

SY_API sy_status sy_registry_open(const sy_registry_options *opts, sy_registry **out, sy_error *err);
SY_API void sy_registry_close(sy_registry *reg);
SY_API size_t sy_registry_count(const sy_registry *reg);
SY_API const sy_registry_entry *sy_registry_get(const sy_registry *reg, size_t i);
/* Folders searched, in order, after de-duplication. */
SY_API size_t sy_registry_search_dir_count(const sy_registry *reg);
SY_API const char *sy_registry_search_dir(const sy_registry *reg, size_t i);
SY_API const char *sy_stage_name(int32_t stage);
/* Loaded plugin of (kind, name, backend), or NULL. */
SY_API const sy_registry_entry *sy_registry_find(const sy_registry *reg, int32_t kind, const char *name,
                                                 const char *backend);
/* Loaded backend by name, or NULL. */
SY_API const sy_registry_entry *sy_registry_find_backend(const sy_registry *reg, const char *name);

/* One-line summary of a plugin's caps, e.g. "layouts=nhd,vectorized_5d kv=bf16,fp8_e4m3 ...". */
SY_API void sy_caps_summary(const sy_plugin_desc *desc, char *buf, size_t len);

/* Calls a plugin's init (when it has one), turning a failure into an SY_STAGE_INIT message that
 * names the file. *ctx is NULL for plugins without init. */
SY_API sy_status sy_registry_init_plugin(const sy_registry_entry *entry, const sy_host_api *host, void **ctx,
                                         sy_error *err);

#ifdef __cplusplus
}
#endif
#endif
