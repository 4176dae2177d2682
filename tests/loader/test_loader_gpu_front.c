/* GPU modules as front + device library (plugins/common/sy_device_library.h): what a scan of the
 * build's plugins folder loads, what a front is, and how it opens its device library.
 *
 * - Every front (libsy_*_cuda.so, libsy_*_hip.so, the backends' included) needs nothing beyond the C
 *   library (its ELF DT_NEEDED list) and holds no device code (no fatbin section); its device
 *   library, the control, has both.
 * - The registry loads every front; with no driver node the GPU backends probe 0 (and refuse init)
 *   with the driver reason; no device library, GPU runtime or BLAS of a front is in the process
 *   afterwards.
 * - Ops before init fail with a message, pure functions (kv geometry, moe prepared_bytes) answer
 *   before init with the cpu plugins' values, and init is what loads the device library.
 * - A device library writable by group or others, in such a folder, owned by another user, or
 *   missing, is refused at init with a message naming it; the device libraries on a search path
 *   are refused by the registry (they export no sy_plugin_entry).
 *
 * Check forks every test, so each starts from a process with nothing loaded. */
#include <check.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture_support.h"
#include "switchyard/switchyard.h"

#if !defined(SY_TEST_WITH_CUDA) || !defined(SY_TEST_WITH_HIP)
#error "the build defines SY_TEST_WITH_CUDA and SY_TEST_WITH_HIP (0 or 1)"
#endif

/* The vendors of this build, and the one whose libraries the refusal cases copy. */
static const char *const vendors[] = {
#if SY_TEST_WITH_CUDA
    "cuda",
#endif
#if SY_TEST_WITH_HIP
    "hip",
#endif
};
enum { N_VENDORS = sizeof vendors / sizeof vendors[0] };
static const char *const copied_vendor = SY_TEST_WITH_CUDA ? "cuda" : "hip";

static const struct {
    const char *vendor, *node, *reason;
} drivers[] = {
    {"cuda", "/dev/nvidiactl", "no NVIDIA driver (/dev/nvidiactl not found)"},
    {"hip", "/dev/kfd", "no AMD GPU driver (/dev/kfd not found)"},
};

static char *plugins_dir(void)
{
    char *path = sy_fixture_printf("%s/lib/switchyard/plugins", sy_fixture_build_dir());
    char *real = sy_fixture_realpath(path);
    free(path);
    return real;
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The GPU fronts of the plugins folder: "libsy_..._<vendor>.so" for a vendor of this build. */
static size_t list_fronts(const char *dir, char **names, size_t max)
{
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "opendir %s: %s", dir, strerror(errno));
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        for (size_t v = 0; v < N_VENDORS; v++) {
            char *suffix = sy_fixture_printf("_%s.so", vendors[v]);
            if (has_suffix(de->d_name, suffix) && strncmp(de->d_name, "libsy_", 6) == 0) {
                ck_assert(n < max);
                names[n++] = strdup(de->d_name);
            }
            free(suffix);
        }
    }
    closedir(d);
    return n;
}

static const char *front_vendor(const char *front)
{
    for (size_t v = 0; v < N_VENDORS; v++) {
        char *suffix = sy_fixture_printf("_%s.so", vendors[v]);
        int match = has_suffix(front, suffix);
        free(suffix);
        if (match)
            return vendors[v];
    }
    return NULL;
}

/* dir/<vendor>/<front without .so>_device.so */
static char *device_path(const char *dir, const char *front)
{
    return sy_fixture_printf("%s/%s/%.*s_device.so", dir, front_vendor(front), (int)(strlen(front) - 3), front);
}

/* ------------------------------------------------------------------------------------------ */
/* ELF: DT_NEEDED and section names of a 64-bit little-endian shared object                    */

typedef struct elf_image {
    unsigned char *data;
    size_t size;
    const Elf64_Shdr *sections;
    size_t n_sections;
    const char *section_names;
} elf_image;

static elf_image elf_read(const char *path)
{
    elf_image e = {0};
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "open %s: %s", path, strerror(errno));
    ck_assert(fseek(f, 0, SEEK_END) == 0);
    long size = ftell(f);
    ck_assert(size > 0 && fseek(f, 0, SEEK_SET) == 0);
    e.size = (size_t)size;
    e.data = malloc(e.size);
    ck_assert(e.data && fread(e.data, 1, e.size, f) == e.size);
    fclose(f);
    const Elf64_Ehdr *h = (const Elf64_Ehdr *)e.data;
    ck_assert_msg(e.size >= sizeof *h && memcmp(h->e_ident, ELFMAG, SELFMAG) == 0 &&
                      h->e_ident[EI_CLASS] == ELFCLASS64 && h->e_ident[EI_DATA] == ELFDATA2LSB,
                  "%s is not a 64-bit little-endian ELF file", path);
    ck_assert_msg(h->e_shoff + (size_t)h->e_shnum * sizeof(Elf64_Shdr) <= e.size && h->e_shstrndx < h->e_shnum,
                  "%s: section headers out of the file", path);
    e.sections = (const Elf64_Shdr *)(e.data + h->e_shoff);
    e.n_sections = h->e_shnum;
    e.section_names = (const char *)e.data + e.sections[h->e_shstrndx].sh_offset;
    return e;
}

static int elf_has_section(const elf_image *e, const char *name)
{
    for (size_t i = 0; i < e->n_sections; i++)
        if (strcmp(e->section_names + e->sections[i].sh_name, name) == 0)
            return 1;
    return 0;
}

/* The DT_NEEDED names, in order; returns how many. */
static size_t elf_needed(const elf_image *e, const char **names, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < e->n_sections; i++) {
        const Elf64_Shdr *s = &e->sections[i];
        if (s->sh_type != SHT_DYNAMIC)
            continue;
        ck_assert(s->sh_link < e->n_sections && s->sh_offset + s->sh_size <= e->size);
        const char *strings = (const char *)e->data + e->sections[s->sh_link].sh_offset;
        const Elf64_Dyn *dyn = (const Elf64_Dyn *)(e->data + s->sh_offset);
        for (size_t k = 0; k < s->sh_size / sizeof *dyn && dyn[k].d_tag != DT_NULL; k++)
            if (dyn[k].d_tag == DT_NEEDED) {
                ck_assert(n < max);
                names[n++] = strings + dyn[k].d_un.d_val;
            }
    }
    return n;
}

/* What a front may need: the C library, the dynamic loader, and the sanitizer runtimes of an
 * ASan + UBSan build. Nothing that would bring a GPU runtime, BLAS or C++ along. */
static int allowed_for_front(const char *needed)
{
    static const char *const prefixes[] = {"libc.so.", "libm.so.", "libdl.so.", "libpthread.so.", "ld-linux",
                                           "libasan.so.", "libubsan.so."};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(needed, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

static int needs(const elf_image *e, const char *prefix)
{
    const char *names[64];
    size_t n = elf_needed(e, names, 64);
    for (size_t i = 0; i < n; i++)
        if (strncmp(names[i], prefix, strlen(prefix)) == 0)
            return 1;
    return 0;
}

static const char *fatbin_section(const char *vendor)
{
    return strcmp(vendor, "cuda") == 0 ? ".nv_fatbin" : ".hip_fatbin";
}

START_TEST(fronts_need_no_gpu_runtime)
{
    char *dir = plugins_dir();
    char *fronts[64];
    size_t n = list_fronts(dir, fronts, 64);
    /* Each vendor has its backend and at least the in-tree plugins. */
    ck_assert_msg(n >= N_VENDORS * 9, "only %zu GPU fronts in %s", n, dir);
    for (size_t i = 0; i < n; i++) {
        char *path = sy_fixture_printf("%s/%s", dir, fronts[i]);
        elf_image e = elf_read(path);
        const char *names[64];
        size_t k = elf_needed(&e, names, 64);
        for (size_t j = 0; j < k; j++)
            ck_assert_msg(allowed_for_front(names[j]), "%s needs %s: a front must need only libc", fronts[i],
                          names[j]);
        const char *vendor = front_vendor(fronts[i]);
        ck_assert_msg(!elf_has_section(&e, fatbin_section(vendor)), "%s carries device code (%s)", fronts[i],
                      fatbin_section(vendor));
        free(e.data);

        /* The control: its device library has what the front must not. */
        char *device = device_path(dir, fronts[i]);
        elf_image de = elf_read(device);
        ck_assert_msg(elf_has_section(&de, fatbin_section(vendor)), "%s has no %s section", device,
                      fatbin_section(vendor));
        if (strcmp(vendor, "hip") == 0)
            ck_assert_msg(needs(&de, "libamdhip64.so"), "%s does not need libamdhip64", device);
        if (strcmp(fronts[i], "libsy_linear_cuda.so") == 0)
            ck_assert_msg(needs(&de, "libcublas.so"), "%s does not need cuBLAS", device);
        free(de.data);
        free(device);
        free(path);
        free(fronts[i]);
    }
    free(dir);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* the scan                                                                                    */

/* A loaded object whose name contains `part`, or NULL. */
typedef struct object_search {
    const char *part;
    char found[512];
} object_search;

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    object_search *s = data;
    if (info->dlpi_name && strstr(info->dlpi_name, s->part)) {
        snprintf(s->found, sizeof s->found, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

static const char *loaded(const char *part)
{
    static object_search s;
    s.part = part;
    s.found[0] = '\0';
    return dl_iterate_phdr(find_object, &s) ? s.found : NULL;
}

/* Device libraries of plugins (not of backends, which a probe opens where the driver is). */
static void expect_no_plugin_device_library(const char *what)
{
    const char *hit = loaded("_device.so");
    if (hit && !strstr(hit, "/libsy_backend_"))
        ck_abort_msg("%s loaded %s", what, hit);
}

static int driver_missing(const char *vendor)
{
    for (size_t i = 0; i < sizeof drivers / sizeof drivers[0]; i++)
        if (strcmp(drivers[i].vendor, vendor) == 0)
            return access(drivers[i].node, F_OK) != 0;
    return 0;
}

static sy_registry *plugins_registry(void)
{
    char *dir = plugins_dir();
    const char *dirs[] = {dir};
    sy_registry *reg = sy_fixture_registry(dirs, 1, 0);
    free(dir);
    return reg;
}

START_TEST(scan_loads_fronts_only)
{
    sy_registry *reg = plugins_registry();
    size_t gpu_entries = 0;
    for (size_t i = 0; i < sy_registry_count(reg); i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        if (!front_vendor(e->file))
            continue;
        gpu_entries++;
        ck_assert_msg(e->stage == SY_STAGE_NONE, "%s: stage %s: %s", e->file, sy_stage_name(e->stage), e->reason);
    }
    ck_assert_uint_ge(gpu_entries, N_VENDORS * 9);
    int any_driver = 0;
    for (size_t v = 0; v < N_VENDORS; v++) {
        const sy_registry_entry *b = sy_registry_find_backend(reg, vendors[v]);
        ck_assert_msg(b != NULL, "backend %s not loaded", vendors[v]);
        if (!driver_missing(vendors[v])) {
            any_driver = 1;
            continue; /* a machine with this GPU's driver: the probe opened the device backend */
        }
        ck_assert_int_eq(b->probe_score, 0);
        const char *reason = NULL;
        for (size_t i = 0; i < sizeof drivers / sizeof drivers[0]; i++)
            if (strcmp(drivers[i].vendor, vendors[v]) == 0)
                reason = drivers[i].reason;
        ck_assert_str_eq(b->probe_reason, reason);
        /* Asked anyway: init gives the same reason, and calls before init are refused. */
        void *ctx = NULL, *ptr = NULL;
        sy_error err = {{0}};
        ck_assert_int_eq(b->backend->init(0, &ctx, &err), SY_E_BACKEND);
        ck_assert_msg(strstr(err.msg, reason) != NULL, "init: '%s' lacks '%s'", err.msg, reason);
        ck_assert_ptr_null(ctx);
        ck_assert_int_eq(b->backend->alloc(NULL, 64, &ptr, &err), SY_E_INVALID);
        ck_assert_msg(strstr(err.msg, "alloc called before init") != NULL, "alloc: %s", err.msg);
        b->backend->free(NULL, ptr);
    }
    /* A plugin's device library is opened by its init only, whatever the machine. */
    expect_no_plugin_device_library("the scan");
    ck_assert_msg(loaded("libcublas") == NULL, "the scan loaded %s", loaded("libcublas"));
    if (!any_driver) {
        static const char *const runtimes[] = {"_device.so", "libamdhip64", "libhsa-runtime64", "libcudart"};
        for (size_t i = 0; i < sizeof runtimes / sizeof runtimes[0]; i++)
            ck_assert_msg(loaded(runtimes[i]) == NULL, "the scan loaded %s without any GPU driver",
                          loaded(runtimes[i]));
    }
    sy_registry_close(reg);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* ops before init, pure functions, init                                                       */

static const sy_registry_entry *plugin_entry(const sy_registry *reg, int32_t kind, const char *name,
                                             const char *backend)
{
    const sy_registry_entry *e = sy_registry_find(reg, kind, name, backend);
    ck_assert_msg(e != NULL, "%s plugin %s for %s is not loaded", sy_kind_name(kind), name, backend);
    return e;
}

/* Every op that needs a ctx, called with none: a clean SY_E_INVALID naming the op and the front. */
static void expect_before_init(const char *front, const char *op, sy_status st, const sy_error *err)
{
    ck_assert_msg(st == SY_E_INVALID, "%s %s before init: status %d (%s)", front, op, (int)st, err->msg);
    char *want = sy_fixture_printf("%s called before init", op);
    ck_assert_msg(strstr(err->msg, want) != NULL, "%s %s: message '%s' lacks '%s'", front, op, err->msg, want);
    ck_assert_msg(strstr(err->msg, front) != NULL, "%s %s: message '%s' does not name the library", front, op,
                  err->msg);
    free(want);
}

START_TEST(ops_before_init_fail_cleanly)
{
    sy_registry *reg = plugins_registry();
    size_t checked = 0;
    for (size_t i = 0; i < sy_registry_count(reg); i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        if (!front_vendor(e->file) || !e->plugin)
            continue;
        const char *front = strrchr(e->file, '/') + 1;
        const void *ops = e->plugin->ops;
        sy_error err = {{0}};
        ck_assert_msg(e->plugin->init && e->plugin->fini, "%s: a GPU front has init and fini", e->file);
        switch (e->plugin->kind) {
        case SY_KIND_KV_LAYOUT: {
            sy_kv_write_args w = {.struct_size = sizeof w};
            sy_kv_gather_args g = {.struct_size = sizeof g};
            expect_before_init(front, "write", ((const sy_kv_layout_ops *)ops)->write(NULL, NULL, &w, &err), &err);
            expect_before_init(front, "gather", ((const sy_kv_layout_ops *)ops)->gather(NULL, NULL, &g, &err), &err);
            break;
        }
        case SY_KIND_ATTENTION: {
            sy_attn_decode_args d = {.struct_size = sizeof d};
            sy_attn_prefill_args p = {.struct_size = sizeof p};
            const sy_attention_ops *o = ops;
            expect_before_init(front, "decode_paged", o->decode_paged(NULL, NULL, &d, &err), &err);
            expect_before_init(front, "prefill_linear", o->prefill_linear(NULL, NULL, &p, &err), &err);
            break;
        }
        case SY_KIND_MOE: {
            sy_moe_prepare_args p = {.struct_size = sizeof p};
            sy_moe_route_args r = {.struct_size = sizeof r};
            sy_moe_forward_args f = {.struct_size = sizeof f};
            const sy_moe_ops *o = ops;
            expect_before_init(front, "prepare", o->prepare(NULL, NULL, &p, &err), &err);
            expect_before_init(front, "route", o->route(NULL, NULL, &r, &err), &err);
            expect_before_init(front, "forward", o->forward(NULL, NULL, &f, &err), &err);
            break;
        }
        case SY_KIND_NORM: {
            sy_norm_args a = {.struct_size = sizeof a};
            expect_before_init(front, "rmsnorm", ((const sy_norm_ops *)ops)->rmsnorm(NULL, NULL, &a, &err), &err);
            break;
        }
        case SY_KIND_ROPE: {
            sy_rope_args a = {.struct_size = sizeof a};
            sy_rope_kv_write_args f = {.struct_size = sizeof f};
            const sy_rope_ops *o = ops;
            expect_before_init(front, "rope", o->rope(NULL, NULL, &a, &err), &err);
            expect_before_init(front, "rope_kv_write", o->rope_kv_write(NULL, NULL, &f, &err), &err);
            break;
        }
        case SY_KIND_LINEAR: {
            sy_linear_args a = {.struct_size = sizeof a};
            expect_before_init(front, "linear", ((const sy_linear_ops *)ops)->linear(NULL, NULL, &a, &err), &err);
            break;
        }
        default: ck_abort_msg("%s: unexpected kind %u", e->file, e->plugin->kind);
        }
        checked++;
    }
    ck_assert_uint_ge(checked, N_VENDORS * 8);
    expect_no_plugin_device_library("an op before init");
    sy_registry_close(reg);
}
END_TEST

static sy_kv_geometry kv_geometry_of(const sy_registry_entry *e, uint32_t layout, int32_t store, sy_status *st)
{
    sy_kv_geometry g = {.struct_size = sizeof g, .layout = layout, .store_dtype = store, .num_pages = 7,
                        .page_size = 48, .kv_heads = 5, .head_dim = 80};
    sy_error err = {{0}};
    *st = ((const sy_kv_layout_ops *)e->plugin->ops)->geometry(&g, &err);
    return g;
}

/* Answered by the front alone, with the cpu plugins' values. */
START_TEST(pure_functions_before_init)
{
    sy_registry *reg = plugins_registry();
    static const struct {
        const char *name;
        uint32_t layout;
    } kv[] = {{"kv_nhd", SY_LAYOUT_NHD}, {"kv_vectorized_5d", SY_LAYOUT_VECTORIZED_5D}};
    static const int32_t stores[] = {SY_DTYPE_BF16, SY_DTYPE_FP8_E4M3, SY_DTYPE_F32, SY_DTYPE_U8};
    static const char *const moe[] = {"moe_mxfp4_interleave", "moe_mxfp4_separated"};
    for (size_t v = 0; v < N_VENDORS; v++) {
        for (size_t i = 0; i < 2; i++)
            for (size_t s = 0; s < sizeof stores / sizeof stores[0]; s++) {
                sy_status gst, cst;
                sy_kv_geometry g = kv_geometry_of(plugin_entry(reg, SY_KIND_KV_LAYOUT, kv[i].name, vendors[v]),
                                                  kv[i].layout, stores[s], &gst);
                sy_kv_geometry c = kv_geometry_of(plugin_entry(reg, SY_KIND_KV_LAYOUT, kv[i].name, "cpu"),
                                                  kv[i].layout, stores[s], &cst);
                ck_assert_int_eq(gst, cst);
                ck_assert_int_eq(gst, stores[s] == SY_DTYPE_U8 ? SY_E_UNSUPPORTED : SY_OK);
                ck_assert_uint_eq(g.vec, c.vec);
                ck_assert_uint_eq(g.k_elems, c.k_elems);
                ck_assert_uint_eq(g.v_elems, c.v_elems);
            }
        for (size_t i = 0; i < 2; i++) {
            /* gpt-oss-20b's experts */
            sy_moe_shape shape = {.struct_size = sizeof shape, .num_experts = 32, .hidden = 2880, .intermediate = 2880,
                                  .top_k = 4, .swiglu_alpha = 1.702f, .swiglu_limit = 7.0f};
            uint64_t gpu_bytes = 0, cpu_bytes = 1;
            sy_error err = {{0}};
            const sy_moe_ops *g = plugin_entry(reg, SY_KIND_MOE, moe[i], vendors[v])->plugin->ops;
            const sy_moe_ops *c = plugin_entry(reg, SY_KIND_MOE, moe[i], "cpu")->plugin->ops;
            ck_assert_msg(g->prepared_bytes(&shape, &gpu_bytes, &err) == SY_OK, "%s", err.msg);
            ck_assert_msg(c->prepared_bytes(&shape, &cpu_bytes, &err) == SY_OK, "%s", err.msg);
            ck_assert_uint_eq(gpu_bytes, cpu_bytes);
            shape.hidden = 2881;
            ck_assert_int_eq(g->prepared_bytes(&shape, &gpu_bytes, &err), SY_E_INVALID);
            ck_assert_msg(strstr(err.msg, "shape.hidden 2881") != NULL, "%s", err.msg);
        }
    }
    expect_no_plugin_device_library("a pure function");
    sy_registry_close(reg);
}
END_TEST

/* init opens the device library; the ops then reach the device code. */
START_TEST(init_opens_device_library)
{
    sy_registry *reg = plugins_registry();
    const sy_registry_entry *e = plugin_entry(reg, SY_KIND_NORM, "norm_rmsnorm", copied_vendor);
    char *device = sy_fixture_printf("libsy_norm_rmsnorm_%s_device.so", copied_vendor);
    ck_assert_ptr_null(loaded(device));
    void *ctx = NULL;
    sy_error err = {{0}};
    ck_assert_msg(sy_registry_init_plugin(e, NULL, &ctx, &err) == SY_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(ctx);
    ck_assert_msg(loaded(device) != NULL, "init did not load %s", device);
    /* An args struct of the wrong size: the device library's own check answers, not the front. */
    sy_norm_args a = {.struct_size = 4};
    sy_status st = ((const sy_norm_ops *)e->plugin->ops)->rmsnorm(ctx, NULL, &a, &err);
    ck_assert_int_ne(st, SY_OK);
    ck_assert_msg(strstr(err.msg, "before init") == NULL, "after init: %s", err.msg);
    e->plugin->fini(ctx);
    free(device);
    sy_registry_close(reg);
}
END_TEST

/* ------------------------------------------------------------------------------------------ */
/* refusals                                                                                    */

static void copy_file(const char *src, const char *dst, mode_t mode)
{
    FILE *in = fopen(src, "rb");
    ck_assert_msg(in != NULL, "open %s: %s", src, strerror(errno));
    FILE *out = fopen(dst, "wb");
    ck_assert_msg(out != NULL, "create %s: %s", dst, strerror(errno));
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        ck_assert(fwrite(buf, 1, n, out) == n);
    fclose(in);
    ck_assert(fclose(out) == 0);
    ck_assert_msg(chmod(dst, mode) == 0, "chmod %s: %s", dst, strerror(errno));
}

enum { CASE_CONTROL, CASE_FILE_GROUP, CASE_FILE_OTHERS, CASE_FOLDER_GROUP, CASE_MISSING, CASE_OWNER, N_CASES };

/* A copy of the norm_rmsnorm front and its device library in a scratch folder, one thing wrong per
 * case (the control has nothing wrong), then the front's init through the registry. */
START_TEST(device_library_refused)
{
    if (_i == CASE_OWNER && geteuid() != 0) {
        printf("device_library_refused: the foreign-owner case needs root (chown); not run\n");
        return;
    }
    char *src_dir = plugins_dir();
    char *front_name = sy_fixture_printf("libsy_norm_rmsnorm_%s.so", copied_vendor);
    char *src_front = sy_fixture_printf("%s/%s", src_dir, front_name), *src_device = device_path(src_dir, front_name);
    char *scratch = sy_scratch_dir();
    char *folder = sy_fixture_printf("%s/%s", scratch, copied_vendor);
    char *front = sy_fixture_printf("%s/%s", scratch, front_name), *device = device_path(scratch, front_name);
    copy_file(src_front, front, 0755);
    ck_assert_int_eq(mkdir(folder, 0755), 0);
    ck_assert_int_eq(chmod(folder, _i == CASE_FOLDER_GROUP ? 0775 : 0755), 0);
    if (_i != CASE_MISSING)
        copy_file(src_device, device, _i == CASE_FILE_GROUP ? 0664 : _i == CASE_FILE_OTHERS ? 0646 : 0755);
    if (_i == CASE_OWNER)
        ck_assert_msg(chown(device, 4242, 4242) == 0, "chown %s: %s", device, strerror(errno));
    const char *reasons[N_CASES] = {
        [CASE_FILE_GROUP] = "file is writable by group (mode 0664); fix with chmod go-w",
        [CASE_FILE_OTHERS] = "file is writable by others (mode 0646); fix with chmod go-w",
        [CASE_FOLDER_GROUP] = "is writable by group (mode 0775); fix with chmod go-w",
        [CASE_MISSING] = "No such file or directory",
        [CASE_OWNER] = "owned by uid 4242, neither the owner of",
    };
    char *named = _i == CASE_FOLDER_GROUP ? sy_fixture_printf("folder %s", folder) : strdup(device);

    const char *dirs[] = {scratch};
    sy_registry *reg = sy_fixture_registry(dirs, 1, 0);
    const sy_registry_entry *e = sy_fixture_entry(reg, front);
    ck_assert_msg(e->stage == SY_STAGE_NONE, "the front copy: stage %s: %s", sy_stage_name(e->stage), e->reason);
    void *ctx = NULL;
    sy_error err = {{0}};
    sy_status st = sy_registry_init_plugin(e, NULL, &ctx, &err);
    if (_i == CASE_CONTROL) {
        ck_assert_msg(st == SY_OK, "control: %s", err.msg);
        e->plugin->fini(ctx);
    } else {
        ck_assert_msg(st == SY_E_IO, "status %d: %s", (int)st, err.msg);
        ck_assert_ptr_null(ctx);
        ck_assert_msg(strstr(err.msg, named) != NULL, "message '%s' does not name %s", err.msg, named);
        ck_assert_msg(strstr(err.msg, reasons[_i]) != NULL, "message '%s' lacks '%s'", err.msg, reasons[_i]);
        ck_assert_msg(strstr(err.msg, front_name) != NULL, "message '%s' does not name the front", err.msg);
        /* The refusal is remembered: no second attempt, the same message. */
        sy_error again = {{0}};
        ck_assert_int_eq(sy_registry_init_plugin(e, NULL, &ctx, &again), SY_E_IO);
        ck_assert_str_eq(again.msg, err.msg);
    }
    sy_registry_close(reg);
    free(named);
    free(front);
    free(device);
    free(folder);
    sy_scratch_remove(scratch);
    free(src_front);
    free(src_device);
    free(front_name);
    free(src_dir);
}
END_TEST

/* A search path that reaches a vendor folder lists no plugin twice: device libraries export only
 * sy_device_plugin_entry / sy_device_backend_entry. */
START_TEST(device_libraries_are_not_plugins)
{
    char *dir = plugins_dir();
    char *folder = sy_fixture_printf("%s/%s", dir, copied_vendor);
    const char *dirs[] = {folder};
    sy_registry *reg = sy_fixture_registry(dirs, 1, 0);
    ck_assert_uint_ge(sy_registry_count(reg), 9);
    for (size_t i = 0; i < sy_registry_count(reg); i++) {
        const sy_registry_entry *e = sy_registry_get(reg, i);
        ck_assert_msg(e->stage == SY_STAGE_SYMBOL, "%s: stage %s (%s), expected symbol", e->file,
                      sy_stage_name(e->stage), e->reason);
        ck_assert_msg(strstr(e->reason, "exports neither sy_plugin_entry nor sy_backend_entry"), "%s", e->reason);
    }
    sy_registry_close(reg);
    free(folder);
    free(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("loader_gpu_front");
    TCase *tc = tcase_create("gpu_front");
    tcase_add_test(tc, fronts_need_no_gpu_runtime);
    tcase_add_test(tc, scan_loads_fronts_only);
    tcase_add_test(tc, ops_before_init_fail_cleanly);
    tcase_add_test(tc, pure_functions_before_init);
    tcase_add_test(tc, init_opens_device_library);
    tcase_add_loop_test(tc, device_library_refused, 0, N_CASES);
    tcase_add_test(tc, device_libraries_are_not_plugins);
    suite_add_tcase(s, tc);
    return sy_fixture_run_suite(s);
}
