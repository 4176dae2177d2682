#include "config/suggest.h"

#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

size_t sy_edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    /* Three rows suffice for the transposition term. */
    size_t *prev2 = sy_xcalloc(m + 1, sizeof *prev2);
    size_t *prev = sy_xcalloc(m + 1, sizeof *prev);
    size_t *cur = sy_xcalloc(m + 1, sizeof *cur);
    for (size_t j = 0; j <= m; j++)
        prev[j] = j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (prev[j - 1] + cost < best)
                best = prev[j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    size_t d = prev[m];
    free(prev2);
    free(prev);
    free(cur);
    return d;
}

static const char *last_component(const char *s)
{
    const char *dot = strrchr(s, '.');
    return dot ? dot + 1 : s;
}

const char *sy_suggest(const char *word, const char *const *candidates, size_t n)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    size_t len = strlen(word);
    size_t limit = len / 4 > 2 ? len / 4 : 2;
    for (size_t i = 0; i < n; i++) {
        size_t d = sy_edit_distance(word, candidates[i]);
        if (d < best_d) {
            best_d = d;
            best = candidates[i];
        }
    }
    if (best && best_d <= limit && best_d < len)
        return best;
    /* Right name, wrong (or no) section. */
    for (size_t i = 0; i < n; i++)
        if (strcmp(last_component(word), last_component(candidates[i])) == 0)
            return candidates[i];
    /* The name without its family's prefix (nhd -> kv_nhd), where one candidate ends that
     * way; after the section rule, whose match is the whole name. */
    const char *unprefixed = NULL;
    size_t unprefixed_n = 0;
    for (size_t i = 0; len > 0 && i < n; i++) {
        size_t cl = strlen(candidates[i]);
        if (cl > len && candidates[i][cl - len - 1] == '_' && strcmp(candidates[i] + cl - len, word) == 0) {
            unprefixed = candidates[i];
            unprefixed_n++;
        }
    }
    if (unprefixed_n == 1)
        return unprefixed;
    return NULL;
}
