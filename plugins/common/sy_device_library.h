/* The device library of a GPU module: the part of a GPU backend or plugin that holds the device code
 * and links the GPU runtime (and cuBLAS, ...), kept out of the plugins folder so that a registry scan
 * never pays for loading it.
 *
 * A GPU module is two libraries. The *front* (libsy_<name>_<vendor>.so, in the plugins folder) is
 * plain C with no GPU runtime: descriptor, caps and pure host functions, read at every scan. Its
 * *device library* (<vendor>/libsy_<name>_<vendor>_device.so, a subfolder the registry never
 * searches) is opened by the front on first real use: a plugin's init, a backend's probe once the
 * driver is known to be there. Both names derive from the front's own file, found with dladdr, so a
 * build tree and an installed (or moved) prefix need no configured path.
 *
 * The device library is refused, with the file and the reason, when it or its folder is writable by
 * group or others (the registry's rule for plugin files, engine/src/registry/registry.c), or when it
 * belongs to a user other than the front's owner and root: whoever could replace it could run code
 * in every process that uses the GPU. There is no override: the library is never named by a search
 * path, only placed there by the build or the install. */
#ifndef SY_DEVICE_LIBRARY_H
#define SY_DEVICE_LIBRARY_H

#include "switchyard/status.h"

/* Exported by the device library of a GPU plugin, with sy_plugin_entry's signature (plugin.h). A
 * name of its own, so that a device library on a search path is refused ("exports neither ...")
 * instead of shadowing its front. */
#define SY_DEVICE_PLUGIN_ENTRY_SYMBOL "sy_device_plugin_entry"
/* Exported by the device library of a GPU backend, with sy_backend_entry's signature (backend.h). */
#define SY_DEVICE_BACKEND_ENTRY_SYMBOL "sy_device_backend_entry"

/* Opens the device library of the front this file is linked into, for `vendor` ("cuda", "hip"),
 * and returns its `symbol` in *address. The first call of the process does the work, under a lock;
 * every later call returns the same address, or the same failure: SY_E_IO with one line naming the
 * file and why (missing, writable by others, foreign owner, dlopen's or dlsym's message). */
sy_status sy_device_library_symbol(const char *vendor, const char *symbol, void **address, sy_error *err);

/* The front's own file name without its folder ("libsy_linear_cuda.so"), for messages; "GPU module"
 * when dladdr cannot tell. */
const char *sy_device_library_front_name(void);

#endif
