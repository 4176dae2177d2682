/* The real host plugins of the build tree, loaded through the registry as the engine loads them,
 * for the kernel suites (moe, norm, rope, linear). */
#ifndef SY_CPU_PLUGIN_FIXTURE_H
#define SY_CPU_PLUGIN_FIXTURE_H

#include "switchyard/switchyard.h"

/* The loaded "cpu" plugin (kind, name) from $SY_BUILD_DIR/lib/switchyard/plugins; fails the test
 * when it is missing or was rejected (with the loader's reason). The registry stays open. */
const sy_plugin_desc *sy_cpu_plugin(int32_t kind, const char *name);

/* Runs the plugin's init with `host` (NULL: no host API) and returns its ctx; fails the test on error. */
void *sy_cpu_plugin_init(const sy_plugin_desc *desc, const sy_host_api *host);
void sy_cpu_plugin_fini(const sy_plugin_desc *desc, void *ctx);

#endif
