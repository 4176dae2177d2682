/* Which library a plugin.c is being compiled for, and the name its entry point takes there.
 *
 * sy_add_plugin (cmake/targets.cmake) compiles a plugin's plugin.c once per library:
 *   the cpu library          SY_PLUGIN_BACKEND_NAME "cpu"
 *   a GPU front              SY_PLUGIN_GPU_FRONT   (sy_gpu_front.h)
 *   a GPU device library     SY_PLUGIN_GPU_DEVICE  (sy_device_library.h)
 * both GPU ones with SY_PLUGIN_BACKEND_GPU, SY_PLUGIN_BACKEND_CUDA or _HIP, and the backend's name.
 * A device library exports its descriptors as sy_device_plugin_entry, which only its front opens:
 * a registry that reached it by a search path refuses it instead of listing a plugin twice. */
#ifndef SY_PLUGIN_ROLE_H
#define SY_PLUGIN_ROLE_H

#if defined(SY_PLUGIN_GPU_FRONT) && defined(SY_PLUGIN_GPU_DEVICE)
#error "sy_plugin_role.h: a plugin.c is compiled for the front or for the device library, not both"
#endif

#if defined(SY_PLUGIN_GPU_DEVICE)
#define SY_PLUGIN_ENTRY sy_device_plugin_entry
#else
#define SY_PLUGIN_ENTRY sy_plugin_entry
#endif

#endif
