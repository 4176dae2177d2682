/* attn_paged (cpu): what plugin.c (descriptor) and cpu.c (ops) share. */
#ifndef SY_ATTN_PAGED_H
#define SY_ATTN_PAGED_H

#include "cpu_workspace.h"
#include "switchyard/plugin.h"

/* Per-context state: the scratch (split-K partials, K/V tiles, scores) comes from the host API's
 * workspace_alloc, reserved at init for common shapes and grown when a call needs more. */
typedef struct attn_paged_ctx {
    sy_cpu_workspace ws;
} attn_paged_ctx;

extern const sy_attention_ops sy_attn_paged_cpu_ops;

sy_status sy_attn_paged_cpu_init(const sy_host_api *host, void **ctx, sy_error *err);
void sy_attn_paged_cpu_fini(void *ctx);

#endif
