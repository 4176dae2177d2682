/* What the per-kind case modules (cases_*.c) use: the plugin under test, the cpu references, and
 * the life of one case (name, inputs, memory on either side, timing, verdict).
 *
 * A case module walks its shape list and, for each case, calls sy_conf_case_begin with the case's
 * name; it gets NULL when the case is only listed or filtered out, otherwise a case to run and then
 * pass to sy_conf_case_end. Inside, failures and not-supported verdicts are recorded on the case;
 * the first verdict stands and the helpers below become no-ops once a backend call has failed, so a
 * case can return early without cleaning up: its memory is released by sy_conf_case_end. */
#ifndef SY_CONF_CASE_H
#define SY_CONF_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "conformance/conformance.h"
#include "conformance/inputs.h"
#include "conformance/side.h"

typedef struct sy_conf_run sy_conf_run;

/* A plugin with its context, on a side. */
typedef struct sy_conf_plugin_ctx {
    const sy_plugin_desc *desc;
    void *ctx;
    sy_conf_side *side;
} sy_conf_plugin_ctx;

/* The plugin under test; `index` is its row in the report's plugin list. */
typedef struct sy_conf_target {
    sy_conf_plugin_ctx p;
    const sy_registry_entry *entry;
    size_t index;
} sy_conf_target;

/* The in-tree cpu reference plugin of (kind, name), initialized once per run on the reference side.
 * NULL when it is not loaded or fails to initialize; *why then says which (when why != NULL). */
const sy_conf_plugin_ctx *sy_conf_reference(sy_conf_run *run, int32_t kind, const char *name, const char **why);
/* Records `ref` as the reference the target was held against (shown in the report). */
void sy_conf_note_reference(sy_conf_run *run, const sy_conf_target *t, const sy_conf_plugin_ctx *ref);
int sy_conf_quick(const sy_conf_run *run);
/* A generator for inputs shared by several cases (named by `what`): the same whichever case asks. */
sy_conf_rng sy_conf_shared_rng(const sy_conf_run *run, const char *what);

/* Memory of one side, released together. Host buffers are 256-byte aligned and start filled with
 * 0xFF bytes (NaN in f32, bf16 and fp8_e4m3; -1 in int32), as do device buffers from arena_dev. */
typedef struct sy_conf_arena {
    sy_conf_side *side;
    void **dev, **host;
    size_t n_dev, cap_dev, n_host, cap_host;
} sy_conf_arena;

void sy_conf_arena_init(sy_conf_arena *a, sy_conf_side *side);
void sy_conf_arena_release(sy_conf_arena *a);
void *sy_conf_arena_host(sy_conf_arena *a, size_t bytes);
void sy_conf_arena_host_free(sy_conf_arena *a, void *ptr);
sy_status sy_conf_arena_dev(sy_conf_arena *a, size_t bytes, void **ptr, sy_error *err);
void sy_conf_arena_dev_free(sy_conf_arena *a, void *ptr);

typedef struct sy_conf_case {
    sy_conf_run *run;
    const sy_conf_target *target;
    sy_conf_result result;
    sy_conf_arena arena; /* on the target's side */
    sy_conf_rng rng;     /* seeded from the run's seed and the case name */
    double started_ms;
} sy_conf_case;

sy_conf_case *sy_conf_case_begin(sy_conf_run *run, const sy_conf_target *t, const char *name);
void sy_conf_case_end(sy_conf_case *c);

/* 1 while no verdict other than pass has been recorded. */
int sy_conf_case_ok(const sy_conf_case *c);
void sy_conf_case_unsupported(sy_conf_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sy_conf_case_fail(sy_conf_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Turns a call's status into a verdict: SY_OK -> 1; otherwise fails the case with
 * "<what> returned <status>: <message>" and returns 0. */
int sy_conf_case_call(sy_conf_case *c, const char *what, sy_status st, const sy_error *err);

/* One case per row of a shape table, in order; rows whose `quick` byte (at quick_offset) is 0 are
 * left out of the quick list. */
typedef struct sy_conf_table {
    const void *rows;
    size_t n_rows, row_size, quick_offset;
    void (*name)(char *buf, size_t len, const void *row, const void *user);
    void (*run)(sy_conf_case *c, const void *row, const void *user);
    const void *user;
} sy_conf_table;

void sy_conf_run_table(sy_conf_run *run, const sy_conf_target *t, const sy_conf_table *table);

/* Buffers of the case. host: never NULL. dev / upload: NULL after a backend failure (case failed). */
void *sy_conf_case_host(sy_conf_case *c, size_t bytes);
void *sy_conf_case_dev(sy_conf_case *c, size_t bytes);
void *sy_conf_case_upload(sy_conf_case *c, const void *host, size_t bytes);
/* Device bytes into a fresh host buffer (NULL after a failure). */
void *sy_conf_case_download(sy_conf_case *c, const void *dev, size_t bytes);
/* Device buffer set to the 0xFF poison again (before a second run into it). */
int sy_conf_case_poison(sy_conf_case *c, void *dev, size_t bytes);

/* Brackets the op(s) under test: their device time is added to the result's op_ms. */
int sy_conf_case_time_begin(sy_conf_case *c);
int sy_conf_case_time_end(sy_conf_case *c);
/* The usual bracket of one op: begin (0 when the case has already failed), then end with the op's
 * status (sy_conf_case_call's verdict, then time_end). */
int sy_conf_case_op_begin(sy_conf_case *c);
int sy_conf_case_op_end(sy_conf_case *c, const char *what, sy_status st, const sy_error *err);

/* The cpu reference of (kind, name); NULL with the case failed when there is none. */
const sy_conf_plugin_ctx *sy_conf_case_reference(sy_conf_case *c, int32_t kind, const char *name);

/* n values from N(0, std^2) stored as dtype (f32 or bf16), in the arena / the case's host memory. */
void *sy_conf_arena_random(sy_conf_arena *a, sy_conf_rng *rng, size_t n, int32_t dtype, double std);
void *sy_conf_case_random(sy_conf_case *c, size_t n, int32_t dtype, double std);

/* Comparisons (compare.c). `shape` (ndim <= 4, row-major) names indices in messages ("out[2][5][7]");
 * NULL gives flat indices. `describe`, when set, replaces that with its own words for an index. */
typedef void (*sy_conf_describe_fn)(const void *user, uint64_t index, char *buf, size_t len);
typedef struct sy_conf_where {
    int ndim;
    int64_t shape[4];
    sy_conf_describe_fn describe;
    const void *user;
} sy_conf_where;

sy_conf_where sy_conf_shape(int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3);

/* n elements of elem_size bytes, equal bit for bit. */
void sy_conf_check_bits(sy_conf_case *c, const char *what, const void *test, const void *ref, uint64_t n,
                        size_t elem_size, const sy_conf_where *where);
/* n elements of `dtype` (f32, bf16, f16): no NaN or infinity where the reference is finite, and
 * ||test - ref||_2 / ||ref||_2 <= tol. */
void sy_conf_check_close(sy_conf_case *c, const char *what, int32_t dtype, const void *test, const void *ref,
                         uint64_t n, double tol, const sy_conf_where *where);
/* Each of `rows` rows of `cols` elements on its own: ||test_r - ref_r|| / max(||ref_r||, a quarter of
 * the rms row norm) <= tol, so that a defect confined to a few rows (one key too many in a window)
 * is not averaged away. */
void sy_conf_check_rows_close(sy_conf_case *c, const char *what, int32_t dtype, const void *test, const void *ref,
                              uint64_t rows, uint64_t cols, double tol, const sy_conf_where *where);
/* Columns [col0, col1) of `rows` rows, `stride` elements apart, all equal to zero (either sign). */
void sy_conf_check_zero(sy_conf_case *c, const char *what, int32_t dtype, const void *test, int64_t rows,
                        int64_t stride, int64_t col0, int64_t col1);

#endif
