/* libFuzzer target for one config loader (FUZZ_SYNTAX_YAML or FUZZ_SYNTAX_INI): any input must load
 * or be refused with diagnostics, never crash, leak or trip a sanitizer; and a config that loads
 * without errors must survive `config show`: written out and loaded back, every value is the same. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

#if defined(FUZZ_SYNTAX_YAML)
#define SYNTAX SY_SYNTAX_YAML
#define NAME "/fuzz/input.yaml"
#define FORMATS 2 /* yaml, and json (read back as YAML) */
#elif defined(FUZZ_SYNTAX_INI)
#define SYNTAX SY_SYNTAX_INI
#define NAME "/fuzz/input.ini"
#define FORMATS 1
#else
#error "define FUZZ_SYNTAX_YAML or FUZZ_SYNTAX_INI"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const no_env[] = {NULL};

static void round_trip(const sy_config *c, sy_config_format format, sy_config_syntax syntax)
{
    char *text = NULL;
    size_t len = 0;
    sy_error err = {{0}};
    FILE *f = open_memstream(&text, &len);
    sy_status st = sy_config_write(c, format, f, &err);
    fclose(f);
    if (st == SY_OK) {
        sy_diags d = {0};
        sy_config_options o = {0};
        o.envp = no_env;
        sy_config *back = sy_config_load_string("/fuzz/shown", text, len, syntax, &o, &d);
        if (!back) {
            fprintf(stderr, "show output (format %d) did not load back:\n%s\n", (int)format, text);
            sy_diags_print(&d, stderr);
            abort();
        }
        for (size_t i = 0; i < sy_config_key_count(); i++) {
            const char *key = sy_config_key_name(i);
            if (strcmp(sy_config_text(c, key), sy_config_text(back, key)) != 0) {
                fprintf(stderr, "%s: '%s' became '%s' through show (format %d):\n%s\n", key, sy_config_text(c, key),
                        sy_config_text(back, key), (int)format, text);
                abort();
            }
        }
        sy_config_free(back);
        sy_diags_free(&d);
    }
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sy_diags d = {0};
    sy_config_options o = {0};
    o.envp = no_env;
    sy_config *c = sy_config_load_string(NAME, (const char *)data, size, SYNTAX, &o, &d);
    sy_diags_sort(&d);
    char line[1024];
    for (size_t i = 0; i < d.n; i++)
        sy_diag_format(&d.items[i], line, sizeof line);
    if (c && sy_diags_count(&d, SY_SEV_ERROR) == 0) {
        round_trip(c, SY_FORMAT_YAML, SY_SYNTAX_YAML);
        if (FORMATS > 1)
            round_trip(c, SY_FORMAT_JSON, SY_SYNTAX_YAML);
        else
            round_trip(c, SY_FORMAT_INI, SY_SYNTAX_INI);
    }
    sy_config_free(c);
    sy_diags_free(&d);
    return 0;
}
