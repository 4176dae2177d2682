#include "json_doc.h"

#include <check.h>
#include <string.h>

void json_doc_parse(json_doc *d, const char *text)
{
    yaml_parser_t parser;
    memset(d, 0, sizeof *d);
    ck_assert(yaml_parser_initialize(&parser));
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
    int ok = yaml_parser_load(&parser, &d->doc);
    ck_assert_msg(ok, "not valid JSON: %s at line %zu column %zu:\n%s", parser.problem ? parser.problem : "?",
                  parser.problem_mark.line + 1, parser.problem_mark.column + 1, text);
    d->loaded = 1;
    yaml_parser_delete(&parser);
    ck_assert_msg(yaml_document_get_root_node(&d->doc) != NULL, "empty JSON output");
}

void json_doc_free(json_doc *d)
{
    if (d->loaded)
        yaml_document_delete(&d->doc);
    d->loaded = 0;
}

yaml_node_t *json_root(json_doc *d)
{
    return yaml_document_get_root_node(&d->doc);
}

yaml_node_t *json_member(json_doc *d, yaml_node_t *node, const char *key)
{
    if (!node || node->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(&d->doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && strcmp((const char *)k->data.scalar.value, key) == 0)
            return yaml_document_get_node(&d->doc, p->value);
    }
    return NULL;
}

size_t json_length(const yaml_node_t *node)
{
    if (!node || node->type != YAML_SEQUENCE_NODE)
        return 0;
    return (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
}

yaml_node_t *json_element(json_doc *d, yaml_node_t *node, size_t i)
{
    if (i >= json_length(node))
        return NULL;
    return yaml_document_get_node(&d->doc, node->data.sequence.items.start[i]);
}

const char *json_text(json_doc *d, yaml_node_t *node, const char *key)
{
    yaml_node_t *v = json_member(d, node, key);
    return v && v->type == YAML_SCALAR_NODE ? (const char *)v->data.scalar.value : NULL;
}
