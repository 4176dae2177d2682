/* A JSON Schema validator for the keywords docs/ab-report.schema.json uses: type, const, enum,
 * properties, required, additionalProperties, items, minItems, minimum and $ref to #/$defs/NAME
 * ($schema, title, description and $defs are annotations). A keyword outside that list is itself
 * reported, so the schema can never grow a constraint that goes unchecked here. Both documents
 * come from libyaml (JSON is YAML): quoted scalars are strings, plain ones null, booleans or
 * numbers. */
#ifndef SY_SCHEMA_CHECK_H
#define SY_SCHEMA_CHECK_H

#include <stddef.h>

#include "json_doc.h"

/* Appends one line per problem ("numerics.per_layer[2].rel_l2: expected number, got string") to
 * errors (truncated at len) and returns how many there were. */
size_t schema_check(json_doc *schema, json_doc *doc, char *errors, size_t len);

#endif
