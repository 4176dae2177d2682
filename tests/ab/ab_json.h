/* Reading the JSON report by dotted path ("numerics.per_layer.0.rel_l2"; numbers index arrays). */
#ifndef SY_AB_JSON_H
#define SY_AB_JSON_H

#include "json_doc.h"

/* The node at `path`, or NULL. */
yaml_node_t *ab_json_at(json_doc *d, const char *path);
/* A scalar's text; fails the test when the path is missing or not a scalar. */
const char *ab_json_text(json_doc *d, const char *path);
double ab_json_number(json_doc *d, const char *path);
int ab_json_bool(json_doc *d, const char *path);
int ab_json_is_null(json_doc *d, const char *path);
size_t ab_json_length(json_doc *d, const char *path);

#endif
