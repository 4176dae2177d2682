/* JSON output read back with libyaml (JSON is valid YAML for everything the command prints), so
 * the tests check the structure rather than grepping text. */
#ifndef SY_JSON_DOC_H
#define SY_JSON_DOC_H

#include <stddef.h>
#include <yaml.h>

typedef struct json_doc {
    yaml_document_t doc;
    int loaded;
} json_doc;

/* Parse `text`; fails the test with libyaml's problem and position when it is not valid. */
void json_doc_parse(json_doc *d, const char *text);
void json_doc_free(json_doc *d);

yaml_node_t *json_root(json_doc *d);
/* Member `key` of a mapping, or NULL (also when `node` is not a mapping). */
yaml_node_t *json_member(json_doc *d, yaml_node_t *node, const char *key);
/* Element i of a sequence, or NULL; json_length is 0 for anything but a sequence. */
yaml_node_t *json_element(json_doc *d, yaml_node_t *node, size_t i);
size_t json_length(const yaml_node_t *node);
/* Text of a scalar member, or NULL when it is missing or not a scalar. */
const char *json_text(json_doc *d, yaml_node_t *node, const char *key);

#endif
