/* The embedding handle of switchyard.h: everything `switchyard run` sets up, kept together so that
 * sy_engine_close releases it in the reverse order. */
#ifndef SY_API_HANDLE_H
#define SY_API_HANDLE_H

#include "compose/compose.h"
#include "config/config.h"
#include "model/plan.h"
#include "model/steps.h"
#include "switchyard/switchyard.h"

struct sy_engine_handle {
    sy_config *cfg;
    sy_registry *reg;        /* owns the plugin libraries: closed after the engine */
    sy_composition *comp;
    sy_plan plan;
    sy_engine *engine;
    sy_step_limits limits;
    sy_engine_slot slots[SY_COMPOSE_SLOTS];
    sy_engine_info info;
    uint32_t seq_len;        /* tokens every sequence holds; 0 = the next step starts new sequences */
    uint32_t *chunk_ids;     /* batch x limits.chunk: one prefill chunk's rows */
    int has_metrics;
    sy_run_metrics metrics;
};

#endif
