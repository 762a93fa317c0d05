/* schema.h — the small JSON Schema (2020-12) subset the MCP tools publish, and a validator for it. */
#ifndef AL_SERVICE_SCHEMA_H
#define AL_SERVICE_SCHEMA_H

#include <jansson.h>
#include <stddef.h>

#define SCH_MSG_MAX 256

/*
 * Checks that schema uses only the keywords this validator enforces (type, properties,
 * required, additionalProperties, enum, items, minItems, maxItems, minLength, maxLength,
 * minimum, maximum, exclusiveMinimum, exclusiveMaximum; plus the annotations title,
 * description, default, $schema), each with a well-formed value. Every schema the server
 * publishes passes this, so what a client reads is exactly what the server enforces.
 * Returns 0, or -EINVAL with the reason in msg.
 */
int sch_check_schema(const json_t *schema, char msg[SCH_MSG_MAX]);

/* Validates value against schema (which passed sch_check_schema). Returns 0, or -EINVAL with a
 * message naming the offending location, e.g. "timeout: expected number, got string". */
int sch_validate(const json_t *schema, const json_t *value, char msg[SCH_MSG_MAX]);

#endif
