#include "sy_device_library.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* One device library per front, and this file is linked into each front with hidden visibility:
 * the state below is the front's own. */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static int load_attempted;
static void *load_address;
static sy_status load_status;
static char load_message[SY_ERROR_MSG_LEN];

static pthread_once_t front_once = PTHREAD_ONCE_INIT;
static char front_path[PATH_MAX];
static char front_name[PATH_MAX] = "GPU module";

static void find_front(void)
{
    Dl_info info;
    if (!dladdr((void *)&find_front, &info) || !info.dli_fname || !realpath(info.dli_fname, front_path)) {
        front_path[0] = '\0';
        return;
    }
    const char *slash = strrchr(front_path, '/');
    snprintf(front_name, sizeof front_name, "%s", slash ? slash + 1 : front_path);
}

const char *sy_device_library_front_name(void)
{
    pthread_once(&front_once, find_front);
    return front_name;
}

static sy_status refuse(char *msg, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static sy_status refuse(char *msg, size_t len, const char *fmt, ...)
{
    int used = snprintf(msg, len, "%s: ", front_name);
    va_list ap;
    va_start(ap, fmt);
    if (used > 0 && (size_t)used < len)
        vsnprintf(msg + used, len - (size_t)used, fmt, ap);
    va_end(ap);
    return SY_E_IO;
}

/* The registry's rule for plugin files (engine/src/registry/registry.c): writable by group or
 * others means anyone in that group could swap the code; a sticky bit does not prevent adding. */
static const char *writable_by(mode_t mode)
{
    return (mode & S_IWOTH) ? "others" : (mode & S_IWGRP) ? "group" : NULL;
}

static sy_status check_folder(const char *library, const char *folder, char *msg, size_t len)
{
    struct stat st;
    if (stat(folder, &st) != 0)
        return refuse(msg, len, "cannot stat folder %s of device library %s: %s", folder, library, strerror(errno));
    const char *who = writable_by(st.st_mode);
    if (who)
        return refuse(msg, len, "refusing device library %s: folder %s is writable by %s (mode %04o); fix with chmod go-w",
                      library, folder, who, (unsigned)(st.st_mode & 07777));
    return SY_OK;
}

/* <folder of the front>/<vendor>/<front name without .so>_device.so, checked as the header says. */
static sy_status locate(const char *vendor, char *real, char *msg, size_t len)
{
    if (!front_path[0])
        return refuse(msg, len, "cannot find its own file (dladdr), so not its %s device library either", vendor);
    /* Sized for the longest front path, so that no name is ever cut. */
    char folder[PATH_MAX + 64], stem[PATH_MAX], path[2 * PATH_MAX + 128];
    const char *slash = strrchr(front_path, '/');
    snprintf(folder, sizeof folder, "%.*s/%s", (int)(slash - front_path), front_path, vendor);
    size_t stem_len = strlen(front_name);
    if (stem_len > 3 && strcmp(front_name + stem_len - 3, ".so") == 0)
        stem_len -= 3;
    snprintf(stem, sizeof stem, "%.*s", (int)stem_len, front_name);
    snprintf(path, sizeof path, "%s/%s_device.so", folder, stem);

    struct stat st, front_st;
    if (stat(path, &st) != 0 || !realpath(path, real))
        return refuse(msg, len, "cannot find its device library %s: %s (the GPU module is incomplete: rebuild or reinstall it)",
                      path, strerror(errno));
    if (stat(front_path, &front_st) != 0)
        return refuse(msg, len, "cannot stat its own file %s: %s", front_path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return refuse(msg, len, "refusing device library %s: not a regular file", real);
    const char *who = writable_by(st.st_mode);
    if (who)
        return refuse(msg, len, "refusing device library %s: file is writable by %s (mode %04o); fix with chmod go-w",
                      real, who, (unsigned)(st.st_mode & 07777));
    if (st.st_uid != front_st.st_uid && st.st_uid != 0)
        return refuse(msg, len, "refusing device library %s: owned by uid %u, neither the owner of %s (uid %u) nor root",
                      real, (unsigned)st.st_uid, front_path, (unsigned)front_st.st_uid);
    /* The folder it really lives in, and the <vendor> folder if a symlink led elsewhere. */
    char real_folder[PATH_MAX];
    snprintf(real_folder, sizeof real_folder, "%s", real);
    *strrchr(real_folder, '/') = '\0';
    sy_status s = check_folder(real, real_folder, msg, len);
    if (s == SY_OK && strcmp(real_folder, folder) != 0)
        s = check_folder(real, folder, msg, len);
    return s;
}

static sy_status load(const char *vendor, const char *symbol, void **address, char *msg, size_t len)
{
    char real[PATH_MAX];
    sy_status s = locate(vendor, real, msg, len);
    if (s != SY_OK)
        return s;
    dlerror();
    void *handle = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        return refuse(msg, len, "cannot load device library %s: %s", real, why ? why : "unknown dlopen error");
    }
    dlerror();
    *address = dlsym(handle, symbol);
    if (!*address) {
        const char *why = dlerror();
        /* Linked with -z nodelete (GPU runtimes must stay loaded): closing it would not unload it. */
        return refuse(msg, len, "device library %s does not export %s: %s", real, symbol,
                      why ? why : "the symbol is NULL");
    }
    return SY_OK;
}

sy_status sy_device_library_symbol(const char *vendor, const char *symbol, void **address, sy_error *err)
{
    pthread_once(&front_once, find_front);
    pthread_mutex_lock(&load_lock);
    if (!load_attempted) {
        load_attempted = 1;
        load_status = load(vendor, symbol, &load_address, load_message, sizeof load_message);
    }
    sy_status s = load_status;
    *address = s == SY_OK ? load_address : NULL;
    if (s != SY_OK && err)
        snprintf(err->msg, sizeof err->msg, "%s", load_message);
    pthread_mutex_unlock(&load_lock);
    return s;
}
