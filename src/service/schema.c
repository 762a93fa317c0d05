/* schema.c — validates tool arguments against the JSON Schema the tool publishes (a strict subset). */
#include "service/schema.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* jansson's object iteration takes a non-const pointer although it does not modify the object. */
static json_t *iterable(const json_t *v)
{
	return (json_t *)(uintptr_t)v;
}

/* Recursion follows the schema, never the input, so its depth is that of our own schemas, which
 * sch_check_schema bounds by SCH_MAX_DEPTH. */
#define SCH_MAX_DEPTH 16

struct vpath {
	char buf[128];
	size_t len;
	unsigned depth;
};

__attribute__((format(printf, 3, 4))) static int fail(char *msg, const struct vpath *p, const char *fmt, ...)
{
	int n = snprintf(msg, SCH_MSG_MAX, "%s: ", p->len ? p->buf : "arguments");
	if (n < 0 || n >= SCH_MSG_MAX)
		n = 0;
	va_list ap;
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive: ap was just started */
	vsnprintf(msg + n, SCH_MSG_MAX - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Appends ".key" (or "key" at the root) or "[i]"; returns the old length to restore. */
static size_t path_push_key(struct vpath *p, const char *key)
{
	size_t old = p->len;
	int n = snprintf(p->buf + p->len, sizeof(p->buf) - p->len, "%s%.40s", p->len ? "." : "", key);
	if (n > 0)
		p->len = strnlen(p->buf, sizeof(p->buf) - 1);
	return old;
}

static size_t path_push_index(struct vpath *p, size_t i)
{
	size_t old = p->len;
	int n = snprintf(p->buf + p->len, sizeof(p->buf) - p->len, "[%zu]", i);
	if (n > 0)
		p->len = strnlen(p->buf, sizeof(p->buf) - 1);
	return old;
}

static void path_pop(struct vpath *p, size_t old)
{
	p->len = old;
	p->buf[old] = 0;
}

static const char *type_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
		return "integer";
	case JSON_REAL:
		return "number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "boolean";
	case JSON_NULL:
		return "null";
	}
	return "unknown";
}

/* JSON Schema's "integer" is a mathematical property: 3.0 is an integer too. */
static bool has_type(const json_t *v, const char *t)
{
	if (strcmp(t, "number") == 0)
		return json_is_number(v);
	if (strcmp(t, "integer") == 0)
		return json_is_integer(v) || (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v));
	return strcmp(t, type_of(v)) == 0;
}

static int check_type(const json_t *schema, const json_t *v, char *msg, const struct vpath *p)
{
	const json_t *t = json_object_get(schema, "type");
	if (!t)
		return 0;
	if (json_is_string(t))
		return has_type(v, json_string_value(t))
			       ? 0
			       : fail(msg, p, "expected %s, got %s", json_string_value(t), type_of(v));
	size_t i;
	const json_t *e;
	json_array_foreach(t, i, e)
		if (has_type(v, json_string_value(e)))
			return 0;
	return fail(msg, p, "has the wrong type (%s)", type_of(v));
}

static int check_enum(const json_t *schema, const json_t *v, char *msg, const struct vpath *p)
{
	const json_t *en = json_object_get(schema, "enum");
	if (!en)
		return 0;
	size_t i;
	const json_t *e;
	json_array_foreach(en, i, e)
		if (json_equal(e, v))
			return 0;
	char list[160] = "";
	size_t used = 0;
	json_array_foreach(en, i, e) {
		if (json_is_string(e) && used < sizeof(list))
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
						 json_string_value(e));
	}
	return fail(msg, p, "must be one of: %s", list);
}

/* JSON Schema counts characters (code points), not bytes. */
static size_t utf8_chars(const char *s, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xC0) != 0x80;
	return c;
}

/* what: "" for a value, or "key \"k\" " for a property name (propertyNames). */
static int check_text(const json_t *schema, const char *s, size_t len, const char *what, char *msg,
		      const struct vpath *p)
{
	size_t n = utf8_chars(s, len);
	const json_t *lo = json_object_get(schema, "minLength"), *hi = json_object_get(schema, "maxLength");
	if (lo && n < (size_t)json_integer_value(lo))
		return fail(msg, p, "%smust be at least %lld characters", what, (long long)json_integer_value(lo));
	if (hi && n > (size_t)json_integer_value(hi))
		return fail(msg, p, "%smust be at most %lld characters", what, (long long)json_integer_value(hi));
	return 0;
}

static int check_string(const json_t *schema, const json_t *v, char *msg, const struct vpath *p)
{
	return check_text(schema, json_string_value(v), json_string_length(v), "", msg, p);
}

/* maxProperties, and propertyNames (its length keywords: a key is always a string). */
static int check_keys(const json_t *schema, const json_t *v, char *msg, const struct vpath *p)
{
	const json_t *hi = json_object_get(schema, "maxProperties");
	if (hi && json_object_size(v) > (size_t)json_integer_value(hi))
		return fail(msg, p, "takes at most %lld properties", (long long)json_integer_value(hi));
	const json_t *names = json_object_get(schema, "propertyNames");
	if (!names)
		return 0;
	const char *key;
	const json_t *val;
	json_t *obj = iterable(v);
	json_object_foreach(obj, key, val) {
		char what[80];
		snprintf(what, sizeof(what), "key \"%.40s\" ", key);
		int r = check_text(names, key, strlen(key), what, msg, p);
		if (r < 0)
			return r;
	}
	return 0;
}

static int check_number(const json_t *schema, const json_t *v, char *msg, const struct vpath *p)
{
	double x = json_number_value(v);
	const json_t *b;
	if ((b = json_object_get(schema, "minimum")) && x < json_number_value(b))
		return fail(msg, p, "must be at least %g", json_number_value(b));
	if ((b = json_object_get(schema, "maximum")) && x > json_number_value(b))
		return fail(msg, p, "must be at most %g", json_number_value(b));
	if ((b = json_object_get(schema, "exclusiveMinimum")) && x <= json_number_value(b))
		return fail(msg, p, "must be greater than %g", json_number_value(b));
	if ((b = json_object_get(schema, "exclusiveMaximum")) && x >= json_number_value(b))
		return fail(msg, p, "must be less than %g", json_number_value(b));
	return 0;
}

static int validate_at(const json_t *schema, const json_t *v, char *msg, struct vpath *p);
static int validate_body(const json_t *schema, const json_t *v, char *msg, struct vpath *p);

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by SCH_MAX_DEPTH (validate_at) */
static int check_array(const json_t *schema, const json_t *v, char *msg, struct vpath *p)
{
	size_t n = json_array_size(v);
	const json_t *lo = json_object_get(schema, "minItems"), *hi = json_object_get(schema, "maxItems");
	if (lo && n < (size_t)json_integer_value(lo))
		return fail(msg, p, "needs at least %lld items", (long long)json_integer_value(lo));
	if (hi && n > (size_t)json_integer_value(hi))
		return fail(msg, p, "takes at most %lld items", (long long)json_integer_value(hi));
	const json_t *items = json_object_get(schema, "items");
	if (!items)
		return 0;
	size_t i;
	const json_t *e;
	json_array_foreach(v, i, e) {
		size_t old = path_push_index(p, i);
		int r = validate_at(items, e, msg, p);
		path_pop(p, old);
		if (r < 0)
			return r;
	}
	return 0;
}

static int check_required(const json_t *schema, const json_t *v, char *msg, const struct vpath *p)
{
	size_t i;
	const json_t *e;
	json_array_foreach(json_object_get(schema, "required"), i, e)
		if (!json_object_get(v, json_string_value(e)))
			return fail(msg, p, "missing required property \"%s\"", json_string_value(e));
	return 0;
}

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by SCH_MAX_DEPTH (validate_at) */
static int check_object(const json_t *schema, const json_t *v, char *msg, struct vpath *p)
{
	int r = check_required(schema, v, msg, p);
	if (r == 0)
		r = check_keys(schema, v, msg, p);
	if (r < 0)
		return r;
	const json_t *props = json_object_get(schema, "properties");
	const json_t *extra = json_object_get(schema, "additionalProperties");
	const char *key;
	const json_t *val;
	json_t *obj = iterable(v);
	json_object_foreach(obj, key, val) {
		const json_t *sub = json_object_get(props, key);
		if (!sub && json_is_false(extra))
			return fail(msg, p, "unknown property \"%.40s\"", key);
		if (!sub)
			sub = json_is_object(extra) ? extra : NULL;
		if (!sub)
			continue;
		size_t old = path_push_key(p, key);
		r = validate_at(sub, val, msg, p);
		path_pop(p, old);
		if (r < 0)
			return r;
	}
	return 0;
}

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by SCH_MAX_DEPTH */
static int validate_at(const json_t *schema, const json_t *v, char *msg, struct vpath *p)
{
	if (p->depth >= SCH_MAX_DEPTH)
		return fail(msg, p, "nested too deeply");
	p->depth++;
	int r = validate_body(schema, v, msg, p);
	p->depth--;
	return r;
}

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by SCH_MAX_DEPTH (validate_at) */
static int validate_body(const json_t *schema, const json_t *v, char *msg, struct vpath *p)
{
	int r = check_type(schema, v, msg, p);
	if (r == 0)
		r = check_enum(schema, v, msg, p);
	if (r < 0)
		return r;
	if (json_is_string(v))
		return check_string(schema, v, msg, p);
	if (json_is_number(v))
		return check_number(schema, v, msg, p);
	if (json_is_array(v))
		return check_array(schema, v, msg, p);
	if (json_is_object(v))
		return check_object(schema, v, msg, p);
	return 0;
}

int sch_validate(const json_t *schema, const json_t *value, char msg[SCH_MSG_MAX])
{
	struct vpath p = {.len = 0};
	p.buf[0] = 0;
	msg[0] = 0;
	return validate_at(schema, value, msg, &p);
}

/* ---- checking our own schemas ----------------------------------------------------------- */

static const char *const type_names[] = {"null", "boolean", "object", "array", "number", "integer", "string"};

static bool known_type(const json_t *t)
{
	if (!json_is_string(t))
		return false;
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (strcmp(json_string_value(t), type_names[i]) == 0)
			return true;
	return false;
}

static int check_schema_at(const json_t *s, char *msg, struct vpath *p);
static int check_schema_body(const json_t *s, char *msg, struct vpath *p);

static int check_type_kw(const json_t *t, char *msg, const struct vpath *p)
{
	if (known_type(t))
		return 0;
	size_t i;
	const json_t *e;
	if (!json_is_array(t) || json_array_size(t) == 0)
		return fail(msg, p, "\"type\" must be a type name or a non-empty array of them");
	json_array_foreach(t, i, e)
		if (!known_type(e))
			return fail(msg, p, "unknown type in \"type\"");
	return 0;
}

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by SCH_MAX_DEPTH (check_schema_at) */
static int check_properties_kw(const json_t *props, char *msg, struct vpath *p)
{
	if (!json_is_object(props))
		return fail(msg, p, "\"properties\" must be an object");
	const char *key;
	const json_t *sub;
	json_t *obj = iterable(props);
	json_object_foreach(obj, key, sub) {
		size_t old = path_push_key(p, key);
		int r = check_schema_at(sub, msg, p);
		path_pop(p, old);
		if (r < 0)
			return r;
	}
	return 0;
}

static bool array_of_strings(const json_t *a, bool allow_empty)
{
	size_t i;
	const json_t *e;
	if (!json_is_array(a) || (!allow_empty && json_array_size(a) == 0))
		return false;
	json_array_foreach(a, i, e)
		if (!json_is_string(e))
			return false;
	return true;
}

/* propertyNames: {minLength, maxLength} (what check_keys enforces), nothing else. */
static int check_names_kw(const json_t *v, char *msg, const struct vpath *p)
{
	if (!json_is_object(v))
		return fail(msg, p, "\"propertyNames\" must be a schema object");
	const char *key;
	const json_t *sub;
	json_t *obj = iterable(v);
	json_object_foreach(obj, key, sub) {
		if (strcmp(key, "minLength") != 0 && strcmp(key, "maxLength") != 0)
			return fail(msg, p, "\"propertyNames\": keyword \"%.40s\" is not enforced by this validator",
				    key);
		if (!json_is_integer(sub) || json_integer_value(sub) < 0)
			return fail(msg, p, "\"propertyNames\": \"%s\" must be a count", key);
	}
	return 0;
}

/* One keyword; 1 if it is not one we know. */
/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by SCH_MAX_DEPTH (check_schema_at) */
static int check_keyword(const char *k, const json_t *v, char *msg, struct vpath *p)
{
	if (!strcmp(k, "type"))
		return check_type_kw(v, msg, p);
	if (!strcmp(k, "properties"))
		return check_properties_kw(v, msg, p);
	if (!strcmp(k, "items"))
		return check_schema_at(v, msg, p);
	if (!strcmp(k, "additionalProperties"))
		return json_is_boolean(v) ? 0 : check_schema_at(v, msg, p);
	if (!strcmp(k, "required"))
		return array_of_strings(v, true) ? 0 : fail(msg, p, "\"required\" must be an array of strings");
	if (!strcmp(k, "enum"))
		return json_is_array(v) && json_array_size(v) ? 0 : fail(msg, p, "\"enum\" must be a non-empty array");
	if (!strcmp(k, "propertyNames")) /* only its length keywords are enforced: say so if it has others */
		return check_names_kw(v, msg, p);
	if (!strcmp(k, "minItems") || !strcmp(k, "maxItems") || !strcmp(k, "minLength") || !strcmp(k, "maxLength") ||
	    !strcmp(k, "maxProperties"))
		return json_is_integer(v) && json_integer_value(v) >= 0 ? 0 : fail(msg, p, "\"%s\" must be a count", k);
	if (!strcmp(k, "minimum") || !strcmp(k, "maximum") || !strcmp(k, "exclusiveMinimum") ||
	    !strcmp(k, "exclusiveMaximum"))
		return json_is_number(v) ? 0 : fail(msg, p, "\"%s\" must be a number", k);
	if (!strcmp(k, "title") || !strcmp(k, "description") || !strcmp(k, "$schema"))
		return json_is_string(v) ? 0 : fail(msg, p, "\"%s\" must be a string", k);
	if (!strcmp(k, "default"))
		return 0;
	return 1;
}

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by SCH_MAX_DEPTH */
static int check_schema_at(const json_t *s, char *msg, struct vpath *p)
{
	if (p->depth >= SCH_MAX_DEPTH)
		return fail(msg, p, "a schema nested too deeply");
	p->depth++;
	int r = check_schema_body(s, msg, p);
	p->depth--;
	return r;
}

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by SCH_MAX_DEPTH (check_schema_at) */
static int check_schema_body(const json_t *s, char *msg, struct vpath *p)
{
	if (!json_is_object(s))
		return fail(msg, p, "a schema must be an object");
	const char *key;
	const json_t *v;
	json_t *obj = iterable(s);
	json_object_foreach(obj, key, v) {
		int r = check_keyword(key, v, msg, p);
		if (r > 0)
			return fail(msg, p, "keyword \"%.40s\" is not enforced by this validator", key);
		if (r < 0)
			return r;
	}
	const json_t *def = json_object_get(s, "default");
	char sub[SCH_MSG_MAX];
	if (def && sch_validate(s, def, sub) < 0)
		return fail(msg, p, "\"default\" does not match its own schema");
	return 0;
}

int sch_check_schema(const json_t *schema, char msg[SCH_MSG_MAX])
{
	struct vpath p = {.len = 0};
	p.buf[0] = 0;
	msg[0] = 0;
	return check_schema_at(schema, msg, &p);
}
