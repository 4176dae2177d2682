/* The case lists, one module per plugin kind. Each runs every case of its list against the target
 * (docs/conformance.md lists them with their tolerances). */
#ifndef SY_CONF_CASES_H
#define SY_CONF_CASES_H

#include "conformance/case.h"

void sy_conf_cases_kv_layout(sy_conf_run *run, const sy_conf_target *t);
void sy_conf_cases_attention(sy_conf_run *run, const sy_conf_target *t);
void sy_conf_cases_moe(sy_conf_run *run, const sy_conf_target *t);
void sy_conf_cases_norm(sy_conf_run *run, const sy_conf_target *t);
void sy_conf_cases_rope(sy_conf_run *run, const sy_conf_target *t);
void sy_conf_cases_linear(sy_conf_run *run, const sy_conf_target *t);

#endif
