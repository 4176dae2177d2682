/* "did you mean": the nearest of a set of names to a misspelled one. */
#ifndef SY_CONFIG_SUGGEST_H
#define SY_CONFIG_SUGGEST_H

#include <stddef.h>

/* Optimal-string-alignment distance (Levenshtein plus adjacent transpositions), the measure of
 * typing mistakes. */
size_t sy_edit_distance(const char *a, const char *b);
/* The candidate closest to `word`, or NULL when none is close enough to be a likely typo. A
 * candidate with the same last component also counts (model.page_size -> kv_cache.page_size,
 * preset -> model.preset), then the only candidate that is `word` behind a prefix ending in '_'
 * (nhd -> kv_nhd). */
const char *sy_suggest(const char *word, const char *const *candidates, size_t n);

#endif
