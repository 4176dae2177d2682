/* The loader: finds backend and plugin libraries on the search path, validates their descriptors
 * without running their code (beyond the entry point and a backend's probe), and records every
 * rejection with the file, the stage and the reason. One bad library never stops the others. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry/validate.h"
#include "switchyard/switchyard.h"
#include "util/strbuf.h"

typedef struct entry_impl {
    sy_registry_entry pub;
    void *handle; /* dlopen handle, shared by all descriptors of one library */
    int owns_handle;
} entry_impl;

struct sy_registry {
    entry_impl *entries;
    size_t n, cap;
    char **dirs;
    size_t n_dirs;
};

const char *sy_stage_name(int32_t stage)
{
    switch (stage) {
    case SY_STAGE_NONE: return "loaded";
    case SY_STAGE_PERMISSIONS: return "permissions";
    case SY_STAGE_OPEN: return "open";
    case SY_STAGE_SYMBOL: return "symbol";
    case SY_STAGE_ABI: return "abi";
    case SY_STAGE_DESCRIPTOR: return "descriptor";
    case SY_STAGE_DUPLICATE: return "duplicate";
    case SY_STAGE_INIT: return "init";
    default: return "unknown";
    }
}

static entry_impl *add_entry(sy_registry *reg, const char *file)
{
    if (reg->n == reg->cap) {
        reg->cap = reg->cap ? reg->cap * 2 : 16;
        reg->entries = sy_xrealloc(reg->entries, reg->cap * sizeof *reg->entries);
    }
    entry_impl *e = &reg->entries[reg->n++];
    memset(e, 0, sizeof *e);
    e->pub.file = sy_strdup(file);
    e->pub.reason = sy_strdup("");
    e->pub.probe_reason = sy_strdup("");
    return e;
}

static void reject(entry_impl *e, int32_t stage, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void reject(entry_impl *e, int32_t stage, const char *fmt, ...)
{
    sy_str s = {0};
    va_list ap;
    va_start(ap, fmt);
    sy_str_vappendf(&s, fmt, ap);
    va_end(ap);
    free((char *)e->pub.reason);
    e->pub.reason = s.data ? s.data : sy_strdup("");
    e->pub.stage = stage;
    e->pub.plugin = NULL;
    e->pub.backend = NULL;
}

static int already_scanned(const sy_registry *reg, const char *real)
{
    for (size_t i = 0; i < reg->n; i++)
        if (strcmp(reg->entries[i].pub.file, real) == 0)
            return 1;
    return 0;
}

/* A rejection reason fits the registry's fixed line; a path longer than the line is cut short there,
 * which still names the file, rather than growing every entry to PATH_MAX. */
__attribute__((format(printf, 3, 4))) static void set_reason(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

/* Loading a library runs its initializers, so its file and folders must be as trustworthy as the
 * program itself: owned by the user running it or by root (as ssh and sudo require of what they
 * read), and writable by nobody else. */
static int untrusted(const char *path, const char *what, char *why, size_t len)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        set_reason(why, len, "cannot stat %s: %s", path, strerror(errno));
        return 1;
    }
    if (st.st_uid != 0 && st.st_uid != geteuid()) {
        set_reason(why, len,
                   "%s is owned by uid %u, neither root nor this user (uid %u); fix with chown, or pass "
                   "--allow-insecure-plugins",
                   what, (unsigned)st.st_uid, (unsigned)geteuid());
        return 1;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        set_reason(why, len, "%s is writable by %s (mode %04o); fix with chmod go-w, or pass --allow-insecure-plugins",
                   what, (st.st_mode & S_IWOTH) ? "others" : "group", (unsigned)(st.st_mode & 07777));
        return 1;
    }
    return 0;
}

/* Files or folders another user owns or can write let that user inject code into the process. The
 * folder that was searched counts as well as the one the file really lives in: a writable search
 * folder lets anyone add a library, or a symlink to one kept elsewhere. A sticky bit is no
 * excuse, since it stops others from replacing files, not from adding them. */
static int insecure(const char *real, const char *search_dir, char *why, size_t len)
{
    char copy[PATH_MAX], what[PATH_MAX + 16];
    if (untrusted(real, "file", why, len))
        return 1;
    snprintf(copy, sizeof copy, "%s", real);
    const char *dir = dirname(copy);
    snprintf(what, sizeof what, "folder %s", dir);
    if (untrusted(dir, what, why, len))
        return 1;
    if (strcmp(search_dir, dir) != 0) {
        snprintf(what, sizeof what, "folder %s", search_dir);
        if (untrusted(search_dir, what, why, len))
            return 1;
    }
    return 0;
}

static const entry_impl *find_loaded_plugin(const sy_registry *reg, int32_t kind, const char *name,
                                            const char *backend)
{
    for (size_t i = 0; i < reg->n; i++) {
        const sy_registry_entry *p = &reg->entries[i].pub;
        if (p->stage == SY_STAGE_NONE && p->plugin && (int32_t)p->plugin->kind == kind &&
            strcmp(p->plugin->name, name) == 0 && strcmp(p->plugin->backend, backend) == 0)
            return &reg->entries[i];
    }
    return NULL;
}

static const entry_impl *find_loaded_backend(const sy_registry *reg, const char *name)
{
    for (size_t i = 0; i < reg->n; i++) {
        const sy_registry_entry *p = &reg->entries[i].pub;
        if (p->stage == SY_STAGE_NONE && p->backend && strcmp(p->backend->name, name) == 0)
            return &reg->entries[i];
    }
    return NULL;
}

static void load_backend(sy_registry *reg, entry_impl *e, sy_backend_entry_fn fn)
{
    char why[512];
    e->pub.type = SY_ENTRY_BACKEND;
    const sy_backend_desc *d = fn(SY_ABI_MAJOR, SY_ABI_MINOR);
    int32_t stage = SY_STAGE_NONE;
    if (!sy_validate_backend(d, why, sizeof why, &stage)) {
        reject(e, stage, "%s", why);
        return;
    }
    const entry_impl *dup = find_loaded_backend(reg, d->name);
    if (dup) {
        reject(e, SY_STAGE_DUPLICATE, "backend '%s' is already provided by %s", d->name, dup->pub.file);
        return;
    }
    e->pub.backend = d;
    char reason[512] = "";
    e->pub.probe_score = d->probe(reason, sizeof reason);
    free((char *)e->pub.probe_reason);
    e->pub.probe_reason = sy_strdup(e->pub.probe_score > 0 ? "" : (reason[0] ? reason : "probe returned 0"));
}

static void load_plugins(sy_registry *reg, size_t first_index, sy_plugin_entry_fn fn)
{
    char why[512];
    entry_impl *first = &reg->entries[first_index];
    void *handle = first->handle;
    first->pub.type = SY_ENTRY_PLUGIN;
    const sy_plugin_desc *const *list = fn(SY_ABI_MAJOR, SY_ABI_MINOR);
    if (!list || !list[0]) {
        reject(first, SY_STAGE_ABI, "sy_plugin_entry returned no descriptor for host ABI %u.%u", SY_ABI_MAJOR,
               SY_ABI_MINOR);
        return;
    }
    char *file = sy_strdup(first->pub.file);
    for (size_t i = 0; list[i]; i++) {
        /* add_entry may move the array: address entries by index only. */
        entry_impl *e = i == 0 ? &reg->entries[first_index] : add_entry(reg, file);
        e->pub.type = SY_ENTRY_PLUGIN;
        e->handle = handle;
        const sy_plugin_desc *d = list[i];
        int32_t stage = SY_STAGE_NONE;
        if (!sy_validate_plugin(d, why, sizeof why, &stage)) {
            reject(e, stage, "descriptor %zu: %s", i, why);
            continue;
        }
        const entry_impl *dup = find_loaded_plugin(reg, (int32_t)d->kind, d->name, d->backend);
        if (dup) {
            reject(e, SY_STAGE_DUPLICATE, "%s plugin '%s' for backend '%s' is already provided by %s",
                   sy_kind_name((int32_t)d->kind), d->name, d->backend, dup->pub.file);
            continue;
        }
        e->pub.plugin = d;
    }
    free(file);
}

static void scan_file(sy_registry *reg, const char *path, const char *search_dir, int allow_insecure)
{
    char real[PATH_MAX];
    char why[512];
    if (!realpath(path, real))
        snprintf(real, sizeof real, "%s", path);
    if (already_scanned(reg, real))
        return;
    size_t index = reg->n;
    entry_impl *e = add_entry(reg, real);
    if (!allow_insecure && insecure(real, search_dir, why, sizeof why)) {
        reject(e, SY_STAGE_PERMISSIONS, "%s", why);
        return;
    }
    dlerror();
    void *h = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *msg = dlerror();
        reject(e, SY_STAGE_OPEN, "dlopen failed: %s", msg ? msg : "unknown error");
        return;
    }
    e->handle = h;
    e->owns_handle = 1;
    dlerror();
    void *plugin_sym = dlsym(h, SY_PLUGIN_ENTRY_SYMBOL);
    /* Copied: the next dlsym/dlerror pair frees the string dlerror returned. */
    const char *msg = dlerror();
    char plugin_err[512] = "";
    if (msg)
        snprintf(plugin_err, sizeof plugin_err, "%s", msg);
    void *backend_sym = dlsym(h, SY_BACKEND_ENTRY_SYMBOL);
    const char *backend_err = dlerror();
    if (!plugin_sym && !backend_sym) {
        reject(e, SY_STAGE_SYMBOL, "exports neither %s nor %s: %s", SY_PLUGIN_ENTRY_SYMBOL, SY_BACKEND_ENTRY_SYMBOL,
               plugin_err[0] ? plugin_err : (backend_err ? backend_err : "symbol is NULL"));
        return;
    }
    if (plugin_sym && backend_sym) {
        reject(e, SY_STAGE_SYMBOL, "exports both %s and %s; a library is either a plugin or a backend",
               SY_PLUGIN_ENTRY_SYMBOL, SY_BACKEND_ENTRY_SYMBOL);
        return;
    }
    /* Converting a data pointer from dlsym to a function pointer is how POSIX dlsym is used;
     * go through memcpy so that -Wpedantic has nothing to say. */
    if (backend_sym) {
        sy_backend_entry_fn fn;
        memcpy(&fn, &backend_sym, sizeof fn);
        load_backend(reg, e, fn);
    } else {
        sy_plugin_entry_fn fn;
        memcpy(&fn, &plugin_sym, sizeof fn);
        load_plugins(reg, index, fn);
    }
}

static int has_so_suffix(const char *name)
{
    size_t n = strlen(name);
    return n > 3 && strcmp(name + n - 3, ".so") == 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void scan_dir(sy_registry *reg, const char *dir, int allow_insecure)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' || !has_so_suffix(de->d_name))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            names = sy_xrealloc(names, cap * sizeof *names);
        }
        names[n++] = sy_asprintf("%s/%s", dir, de->d_name);
    }
    closedir(d);
    /* Sorted so that which of two duplicates wins never depends on the file system's order. */
    if (n > 1) /* an empty folder leaves names NULL, which qsort must not be given */
        qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
            scan_file(reg, names[i], dir, allow_insecure);
        free(names[i]);
    }
    free(names);
}

static void add_dir(sy_registry *reg, const char *dir)
{
    char real[PATH_MAX];
    if (!dir || !dir[0])
        return; /* an empty element would mean the current directory: never implicitly */
    if (!realpath(dir, real))
        snprintf(real, sizeof real, "%s", dir);
    for (size_t i = 0; i < reg->n_dirs; i++)
        if (strcmp(reg->dirs[i], real) == 0)
            return;
    reg->dirs = sy_xrealloc(reg->dirs, (reg->n_dirs + 1) * sizeof *reg->dirs);
    reg->dirs[reg->n_dirs++] = sy_strdup(real);
}

/* The plugins folder beside the libswitchyard in use: lib/switchyard/plugins in the build tree and
 * in an install prefix alike, so nothing is baked in at build time. */
static void add_default_dir(sy_registry *reg)
{
    Dl_info info;
    if (!dladdr((void *)&add_default_dir, &info) || !info.dli_fname)
        return;
    char real[PATH_MAX];
    if (!realpath(info.dli_fname, real))
        return;
    char *dir = sy_asprintf("%s/switchyard/plugins", dirname(real));
    add_dir(reg, dir);
    free(dir);
}

sy_status sy_registry_open(const sy_registry_options *opts, sy_registry **out, sy_error *err)
{
    sy_registry_options o = {0};
    if (opts) {
        if (opts->struct_size < sizeof o)
            return sy_fail(err, SY_E_INVALID, "sy_registry_options.struct_size %u is smaller than %zu",
                           opts->struct_size, sizeof o);
        o = *opts;
    }
    sy_registry *reg = sy_xcalloc(1, sizeof *reg);
    for (size_t i = 0; i < o.n_plugin_paths; i++)
        add_dir(reg, o.plugin_paths[i]);
    const char *env = o.skip_environment ? NULL : getenv("SWITCHYARD_PLUGIN_PATH");
    if (env) {
        char *copy = sy_strdup(env), *save = NULL;
        for (char *tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save))
            add_dir(reg, tok);
        free(copy);
    }
    if (!o.skip_default_dir)
        add_default_dir(reg);
    for (size_t i = 0; i < reg->n_dirs; i++)
        scan_dir(reg, reg->dirs[i], (int)o.allow_insecure);
    *out = reg;
    return SY_OK;
}

void sy_registry_close(sy_registry *reg)
{
    if (!reg)
        return;
    for (size_t i = 0; i < reg->n; i++) {
        entry_impl *e = &reg->entries[i];
        if (e->owns_handle && e->handle && !getenv("SWITCHYARD_KEEP_PLUGINS_LOADED"))
            dlclose(e->handle);
        free((char *)e->pub.file);
        free((char *)e->pub.reason);
        free((char *)e->pub.probe_reason);
    }
    for (size_t i = 0; i < reg->n_dirs; i++)
        free(reg->dirs[i]);
    free(reg->dirs);
    free(reg->entries);
    free(reg);
}

size_t sy_registry_count(const sy_registry *reg)
{
    return reg->n;
}

const sy_registry_entry *sy_registry_get(const sy_registry *reg, size_t i)
{
    return i < reg->n ? &reg->entries[i].pub : NULL;
}

size_t sy_registry_search_dir_count(const sy_registry *reg)
{
    return reg->n_dirs;
}

const char *sy_registry_search_dir(const sy_registry *reg, size_t i)
{
    return i < reg->n_dirs ? reg->dirs[i] : NULL;
}

const sy_registry_entry *sy_registry_find(const sy_registry *reg, int32_t kind, const char *name,
                                          const char *backend)
{
    const entry_impl *e = find_loaded_plugin(reg, kind, name, backend);
    return e ? &e->pub : NULL;
}

const sy_registry_entry *sy_registry_find_backend(const sy_registry *reg, const char *name)
{
    const entry_impl *e = find_loaded_backend(reg, name);
    return e ? &e->pub : NULL;
}

sy_status sy_registry_init_plugin(const sy_registry_entry *entry, const sy_host_api *host, void **ctx,
                                  sy_error *err)
{
    *ctx = NULL;
    if (!entry->plugin)
        return sy_fail(err, SY_E_INVALID, "%s: not a loaded plugin", entry->file);
    if (!entry->plugin->init)
        return SY_OK;
    sy_error inner = {{0}};
    sy_status st = entry->plugin->init(host, ctx, &inner);
    if (st != SY_OK)
        return sy_fail(err, st, "%s: stage %s: %s plugin '%s' failed to initialize: %s (%s)", entry->file,
                       sy_stage_name(SY_STAGE_INIT), sy_kind_name((int32_t)entry->plugin->kind), entry->plugin->name,
                       inner.msg[0] ? inner.msg : "no message", sy_status_name(st));
    return SY_OK;
}
