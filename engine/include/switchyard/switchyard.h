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
    uint32_t allow_insecure;          /* 1: accept files / folders of other owners or writable by others */
    const char *const *plugin_paths;  /* searched first, in order (--plugin-path, config plugin_path) */
    size_t n_plugin_paths;
    uint32_t skip_environment;        /* 1: ignore SWITCHYARD_PLUGIN_PATH */
    uint32_t skip_default_dir;        /* 1: do not search the folder beside libswitchyard */
} sy_registry_options;

typedef enum sy_entry_type { SY_ENTRY_PLUGIN = 1, SY_ENTRY_BACKEND = 2 } sy_entry_type;

/* Stages at which a library can be rejected, in the order they are checked. */
typedef enum sy_load_stage {
    SY_STAGE_NONE = 0,       /* loaded */
    SY_STAGE_PERMISSIONS,    /* owned by another user (not root), or writable by group or others */
    SY_STAGE_OPEN,           /* dlopen failed: not a shared object, missing dependency */
    SY_STAGE_SYMBOL,         /* neither sy_plugin_entry nor sy_backend_entry */
    SY_STAGE_ABI,            /* version 0, other major, newer minor, or NULL from the entry point */
    SY_STAGE_DESCRIPTOR,     /* struct too small, empty name / backend, unknown kind, missing caps / ops */
    SY_STAGE_DUPLICATE,      /* same (kind, name, backend) as an earlier file */
    SY_STAGE_INIT            /* a plugin's init failed (a backend whose probe finds no device still loads, unusable) */
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

/* ------------------------------------------------------------------------------------------ */
/* Embedding: an engine built from a config exactly as `switchyard run` builds it (resolve the  */
/* config, open the registry, compose, build the model), then driven by the caller.            */
/*                                                                                             */
/* Threading: a handle is used by one thread at a time; separate handles are independent.      */
/* Every call that can fail returns a sy_status and fills *err with one line (never prints).   */
/* Output structs the caller passes carry struct_size = sizeof as the caller was built; the     */
/* library fills only the members that size covers, so programs built against an older        */
/* switchyard.h keep working with a newer library.                                            */

typedef struct sy_engine_handle sy_engine_handle;

/* One config diagnostic ("file:line:col: error: message"), handed out as the config is read. */
typedef void (*sy_engine_diag_fn)(void *user, const char *line);

typedef struct sy_engine_open_options {
    uint32_t struct_size;             /* sizeof(sy_engine_open_options) */
    uint32_t allow_insecure;          /* 1: as --allow-insecure-plugins */
    const char *const *sets;          /* "key=value" overrides applied last, in order, as --set */
    size_t n_sets;
    const char *const *plugin_paths;  /* folders searched first, as --plugin-path */
    size_t n_plugin_paths;
    sy_engine_diag_fn diag;           /* optional: receives every diagnostic, warnings included */
    void *diag_user;
} sy_engine_open_options;

/* Syntax of config text given to sy_engine_open_string. */
enum { SY_CONFIG_TEXT_YAML = 1, SY_CONFIG_TEXT_INI = 2 };

/* Builds the engine: weights generated or loaded, KV pools allocated, every plugin initialized.
 * opts may be NULL (no overrides, default search path). On failure *out is NULL and err holds the
 * first error (the config's first diagnostic when the config is at fault). */
SY_API sy_status sy_engine_open_file(const char *config_path, const sy_engine_open_options *opts,
                                     sy_engine_handle **out, sy_error *err);
/* The same from config text in memory; `name` is what diagnostics call it ("<embedded>" if NULL). */
SY_API sy_status sy_engine_open_string(const char *text, size_t len, int32_t syntax, const char *name,
                                       const sy_engine_open_options *opts, sy_engine_handle **out, sy_error *err);
/* Releases everything open created: plugin contexts, device memory, backend, libraries. NULL is a no-op. */
SY_API void sy_engine_close(sy_engine_handle *h);

/* The plugin chosen for one slot of the composition. Strings live as long as the handle. */
typedef struct sy_engine_slot {
    int32_t kind;         /* sy_kind */
    uint32_t reserved0;
    const char *plugin;   /* descriptor name, e.g. "attn_paged" */
    const char *version;  /* the plugin's own version */
    const char *file;     /* absolute path of the library it came from */
} sy_engine_slot;

/* What the composition decided and the limits of single steps. Owned by the handle. */
typedef struct sy_engine_info {
    uint32_t struct_size;       /* sizeof(sy_engine_info) as the library was built */
    uint32_t n_slots;           /* entries of slots[]: kv_layout, attention, rope, norm, moe, linear */
    const sy_engine_slot *slots;
    const char *backend;        /* "cpu", "cuda", "hip" */
    const char *backend_file;
    uint32_t kv_layout;         /* sy_kv_layout_id */
    int32_t kv_dtype;           /* sy_dtype of the KV pool */
    uint32_t page_size;
    uint32_t fused_rope_kv_write; /* 1: the rope plugin writes the KV cache itself */
    uint32_t norm_pad_multiple; /* > 0: add + RMSNorm + pad fused to this multiple */
    uint32_t batch;             /* sequences; every step advances all of them */
    uint32_t vocab;             /* token ids are below this */
    uint32_t max_prompt_tokens; /* a sequence may hold at most this many tokens after a prefill */
    uint32_t max_tokens;        /* and at most this many after a decode step */
    uint32_t fused_qkv;         /* 1: q, k and v are slices of one linear's rows (linear.fuse_qkv) */
    int32_t act_dtype;          /* sy_dtype of activations between ops (model.dtype) */
    uint32_t qkv_linears;       /* linear calls a layer makes for q, k and v: 1, or 3 where unfused q, k and v
                                   come from a linear plugin without split_y */
    uint32_t prefill_paged;     /* 1: a later prefill chunk reads its prefix from the pool's pages
                                   (attention.prefill_paged); 0: gather, then prefill_linear */
} sy_engine_info;

SY_API const sy_engine_info *sy_engine_get_info(const sy_engine_handle *h);

/* Runs the config's workload (warm-up and measured repetitions of chunked prefill, then greedy
 * decode) and keeps its metrics for sy_engine_get_metrics. Ends any sequences begun with
 * single steps. */
SY_API sy_status sy_engine_run_workload(sy_engine_handle *h, sy_error *err);

/* Indexed by sy_kind; index 0 is the engine's own time between plugin calls. */
#define SY_ENGINE_OP_SLOTS 16

typedef struct sy_engine_metrics {
    uint32_t struct_size;        /* set by the caller: sizeof(sy_engine_metrics) */
    uint32_t n_steps;            /* decode steps per repetition: entries of step_ms */
    double ttft_ms;              /* median over the measured repetitions; NaN when not measured: */
                                 /* workload.context synthetic runs no prefill */
    double tpot_median_ms, tpot_p90_ms;
    double prefill_tok_per_s, decode_tok_per_s; /* prefill_tok_per_s: NaN when ttft_ms is */
    double total_ms;             /* all measured repetitions */
    double op_ms[SY_ENGINE_OP_SLOTS];     /* time by slot; zero unless report.per_op is true */
    uint32_t op_calls[SY_ENGINE_OP_SLOTS];
    uint32_t peak_full_pages, full_pages;
    uint32_t peak_swa_pages, swa_pages;
    uint64_t pool_bytes;
    uint64_t checksum;           /* FNV-1a over every generated token id, as `switchyard run` prints */
    uint32_t batch, output_len;
    const uint32_t *tokens;      /* batch x output_len generated ids; valid until the next run or close */
    const double *step_ms;       /* decode step times of the last repetition; same lifetime */
} sy_engine_metrics;

/* Metrics of the last sy_engine_run_workload; SY_E_INVALID when there was none. */
SY_API sy_status sy_engine_get_metrics(const sy_engine_handle *h, sy_engine_metrics *out, sy_error *err);

/* Single steps. All `batch` sequences advance together; a sequence's first prefill starts it from
 * position 0, later prefills and decode steps append to it. Next-token choice is greedy (largest
 * logit, ties to the lower id), as in the workload.
 *
 * Prefill: token_ids holds batch rows of n_tokens ids (row b for sequence b); n_tokens >= 1 and a
 * sequence may reach at most info.max_prompt_tokens. Long prompts are split into the config's
 * workload.prefill_chunk internally. next_ids[b] receives the token that follows sequence b.
 * A config with workload.context: synthetic sizes the engine for the workload's decode steps only:
 * there sy_engine_prefill is refused (SY_E_INVALID) and sy_engine_run_workload is the way to run. */
SY_API sy_status sy_engine_prefill(sy_engine_handle *h, const uint32_t *token_ids, uint32_t n_tokens,
                                   uint32_t *next_ids, sy_error *err);
/* One decode step: token_ids[b] is appended to sequence b (usually the id the previous step
 * returned); next_ids[b] receives the one after it. A sequence may reach info.max_tokens. */
SY_API sy_status sy_engine_decode(sy_engine_handle *h, const uint32_t *token_ids, uint32_t *next_ids, sy_error *err);
/* Tokens each sequence holds (0 before the first prefill). */
SY_API uint32_t sy_engine_sequence_length(const sy_engine_handle *h);
/* Ends the sequences and returns their KV pages; the next prefill starts new ones. */
SY_API sy_status sy_engine_reset(sy_engine_handle *h, sy_error *err);

#ifdef __cplusplus
}
#endif
#endif
