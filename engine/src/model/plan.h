/* From a resolved config and its composition to the engine's plan. */
#ifndef SY_PLAN_H
#define SY_PLAN_H

#include "compose/compose.h"
#include "config/config.h"
#include "model/engine.h"

/* Fails (with the key to change) on what the engine cannot run although the composition allows
 * it: a checkpoint whose config.json disagrees with the configured model, activations other than f32. */
sy_status sy_plan_from_config(const sy_config *cfg, const sy_composition *comp, sy_plan *plan, sy_error *err);

#endif
