/* Small string helpers used across the engine. */
#ifndef SY_UTIL_STRBUF_H
#define SY_UTIL_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

#include "switchyard/status.h"

/* printf into err->msg (truncating); returns `status` so callers can `return sy_fail(...)`. */
sy_status sy_fail(sy_error *err, sy_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* strdup that aborts on exhaustion: the engine treats host OOM on metadata as fatal. */
char *sy_strdup(const char *s);
char *sy_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *sy_xcalloc(size_t n, size_t size);
void *sy_xrealloc(void *p, size_t size);

/* A growable string. */
typedef struct sy_str {
    char *data;
    size_t len, cap;
} sy_str;
void sy_str_appendf(sy_str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sy_str_vappendf(sy_str *s, const char *fmt, va_list ap);
void sy_str_free(sy_str *s);

#endif
