/* Descriptor validation: everything the host checks before it trusts a plugin or backend. */
#ifndef SY_REGISTRY_VALIDATE_H
#define SY_REGISTRY_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "switchyard/backend.h"
#include "switchyard/plugin.h"

/* Return 1 when valid; otherwise 0 with a reason and the stage (SY_STAGE_ABI / SY_STAGE_DESCRIPTOR). */
int sy_validate_plugin(const sy_plugin_desc *d, char *why, size_t len, int32_t *stage);
int sy_validate_backend(const sy_backend_desc *d, char *why, size_t len, int32_t *stage);

/* v1 sizes of the kind-specific records: the smallest struct_size the host accepts. */
size_t sy_caps_v1_size(int32_t kind);
size_t sy_ops_v1_size(int32_t kind);

#endif
