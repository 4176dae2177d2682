/* The resolved config diff: only the keys whose values differ, each with both sources. */
#include <string.h>

#include "ab/ab.h"
#include "util/strbuf.h"

void sy_ab_config_diff(const sy_config *a, const sy_config *b, sy_ab_report *r)
{
    const sy_config *side[SY_AB_SIDES] = {a, b};
    for (size_t i = 0; i < sy_config_key_count(); i++) {
        const char *key = sy_config_key_name(i);
        if (strcmp(sy_config_text(a, key), sy_config_text(b, key)) == 0)
            continue;
        r->changes = sy_xrealloc(r->changes, (r->n_changes + 1) * sizeof *r->changes);
        sy_ab_config_change *c = &r->changes[r->n_changes++];
        c->key = sy_strdup(key);
        for (int s = 0; s < SY_AB_SIDES; s++) {
            c->value[s] = sy_strdup(sy_config_text(side[s], key));
            c->source[s] = sy_strdup(sy_config_source(side[s], key));
        }
    }
}
