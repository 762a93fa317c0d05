/* test_jsonrpc.c — unit tests for the MCP layer's pure parts: JSON-RPC parsing and building,
 * UTF-8 repair, base64, and the JSON Schema subset (src/mcp/jsonrpc.c, src/service/text.c, schema.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>

#include "mcp/jsonrpc.h"
#include "service/schema.h"
#include "util/text.h"

static struct jr_message parse_ok(const char *s)
{
	struct jr_message m;
	struct jr_failure f;
	int r = jr_parse(s, strlen(s), 0, &m, &f);
	if (r != 0)
		fail_msg("\"%s\": %d %s", s, r, f.message);
	return m;
}

static void test_kinds(void **state)
{
	struct jr_message m = parse_ok("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"x/y\",\"params\":{\"k\":1}}");
	assert_int_equal(m.kind, JR_REQUEST);
	assert_string_equal(m.method, "x/y");
	assert_string_equal(json_string_value(m.id), "a");
	assert_true(json_is_object(m.params));
	jr_message_clear(&m);
	m = parse_ok("{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":[1,2]}");
	assert_int_equal(m.kind, JR_NOTIFICATION);
	assert_null(m.id);
	assert_true(json_is_array(m.params));
	jr_message_clear(&m);
	m = parse_ok("{\"jsonrpc\":\"2.0\",\"id\":-7,\"result\":{}}");
	assert_int_equal(m.kind, JR_RESULT);
	assert_int_equal(json_integer_value(m.id), -7);
	jr_message_clear(&m);
	m = parse_ok("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"x\",\"data\":[1]}}");
	assert_int_equal(m.kind, JR_ERROR);
	assert_true(json_is_null(m.id));
	jr_message_clear(&m);
}

static void test_failures(void **state)
{
	struct jr_message m;
	struct jr_failure f;
	/* The id of an invalid request is echoed when it could be read. */
	const char *s = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"x\",\"params\":1}";
	assert_int_equal(jr_parse(s, strlen(s), 0, &m, &f), -EBADMSG);
	assert_int_equal(f.code, JR_INVALID_REQUEST);
	assert_int_equal(json_integer_value(f.id), 5);
	json_t *resp = jr_failure_response(&f);
	assert_int_equal(json_integer_value(json_object_get(resp, "id")), 5);
	json_decref(resp);
	jr_failure_clear(&f);
	/* A parse error answers with id null. */
	assert_int_equal(jr_parse("{", 1, 0, &m, &f), -EBADMSG);
	assert_int_equal(f.code, JR_PARSE_ERROR);
	resp = jr_failure_response(&f);
	assert_true(json_is_null(json_object_get(resp, "id")));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(resp, "error"), "code")), JR_PARSE_ERROR);
	json_decref(resp);
	jr_failure_clear(&f);
	/* The size limit comes before parsing. */
	s = "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}";
	assert_int_equal(jr_parse(s, strlen(s), 10, &m, &f), -EMSGSIZE);
	assert_int_equal(f.code, JR_INVALID_REQUEST);
	jr_failure_clear(&f);
	/* NULL with length 0 is an empty message, not a crash. */
	assert_int_equal(jr_parse(NULL, 0, 0, &m, &f), -EBADMSG);
	jr_failure_clear(&f);
}

static void test_encode(void **state)
{
	json_t *id = json_integer(3);
	json_t *msg = jr_result(id, json_pack("{s:s}", "text", "line one\nline two\r\n\xe2\x80\xa8"));
	char *line = NULL;
	ssize_t n = jr_encode(msg, &line);
	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(line));
	assert_null(strchr(line, '\n'));
	assert_null(strchr(line, '\r'));
	json_t *back = json_loads(line, 0, NULL);
	assert_true(json_equal(back, msg));
	json_decref(back);
	free(line);
	json_decref(msg);
	msg = jr_error(NULL, JR_INTERNAL_ERROR, "boom", json_string("d"));
	assert_true(json_is_null(json_object_get(msg, "id")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(msg, "error"), "data")), "d");
	json_decref(msg);
	msg = jr_request(id, "elicitation/create", NULL);
	assert_int_equal(json_integer_value(json_object_get(msg, "id")), 3);
	json_decref(msg);
	json_decref(id);
}

static void test_utf8(void **state)
{
	assert_true(txt_utf8_valid("h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 12));
	assert_false(txt_utf8_valid("\xc0\xaf", 2));	     /* overlong '/' */
	assert_false(txt_utf8_valid("\xed\xa0\x80", 3));     /* a surrogate */
	assert_false(txt_utf8_valid("\xf4\x90\x80\x80", 4)); /* above U+10FFFF */
	assert_false(txt_utf8_valid("\xe2\x82", 2));	     /* cut short */
	json_t *j = txt_json_lossy("a\xff"
				   "b\xc3",
				   4);
	assert_string_equal(json_string_value(j), "a\xef\xbf\xbd"
						  "b\xef\xbf\xbd");
	json_decref(j);
	j = txt_json_lossy("a\0b", 3); /* NUL is valid UTF-8 and survives */
	assert_int_equal(json_string_length(j), 3);
	json_decref(j);
	/* Chunk boundaries: hold back a started character, never a complete one. */
	assert_int_equal(txt_utf8_complete("ab", 2), 2);
	assert_int_equal(txt_utf8_complete("a\xc3", 2), 1);
	assert_int_equal(txt_utf8_complete("a\xc3\xa9", 3), 3);
	assert_int_equal(txt_utf8_complete("a\xf0\x9f\x98", 4), 1);
	assert_int_equal(txt_utf8_complete("\xf0\x9f\x98\x80", 4), 4);
	assert_int_equal(txt_utf8_complete("\x80\x80\x80\x80", 4), 4);
	assert_int_equal(txt_utf8_complete("", 0), 0);
	/* The carry joins a character split over two chunks; at the end it lets go of what it held. */
	struct txt_carry c = {0};
	char *out = NULL;
	size_t n = 9;
	assert_int_equal(txt_carry_take(&c, "a\xf0\x9f", 3, false, &out, &n), 0);
	assert_int_equal(n, 1);
	assert_memory_equal(out, "a", 1);
	assert_int_equal(c.len, 2);
	free(out);
	assert_int_equal(txt_carry_take(&c, "\x98\x80z\xc3", 4, false, &out, &n), 0);
	assert_int_equal(n, 5);
	assert_memory_equal(out, "\xf0\x9f\x98\x80z", 5);
	free(out);
	assert_int_equal(txt_carry_take(&c, NULL, 0, true, &out, &n), 0);
	assert_int_equal(n, 1);
	assert_memory_equal(out, "\xc3", 1);
	assert_int_equal(c.len, 0);
	free(out);
}

static void b64(const char *plain, size_t n, const char *enc)
{
	char *e = txt_base64_encode(plain, n);
	assert_string_equal(e, enc);
	free(e);
	unsigned char *d = NULL;
	long k = txt_base64_decode(enc, strlen(enc), &d);
	assert_int_equal(k, (long)n);
	assert_memory_equal(d, plain, n);
	free(d);
}

static void test_base64(void **state)
{
	b64("", 0, "");
	b64("f", 1, "Zg==");
	b64("fo", 2, "Zm8=");
	b64("foo", 3, "Zm9v");
	b64("foobar", 6, "Zm9vYmFy");
	b64("\x00\x01\xff", 3, "AAH/");
	static const char *const bad[] = {"Zg=", "Zg", "Z===", "====", "Zm9v\n", "Zh==", "Zm9=", "Zm=v", "Zm9*"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unsigned char *d = NULL;
		if (txt_base64_decode(bad[i], strlen(bad[i]), &d) != -EINVAL)
			fail_msg("\"%s\" decoded", bad[i]);
	}
}

static json_t *j(const char *s)
{
	json_t *v = json_loads(s, JSON_DECODE_ANY, NULL);
	assert_non_null(v);
	return v;
}

static void expect(const char *schema, const char *value, const char *want)
{
	json_t *s = j(schema), *v = j(value);
	char msg[SCH_MSG_MAX];
	assert_int_equal(sch_check_schema(s, msg), 0);
	int r = sch_validate(s, v, msg);
	if (!want && r != 0)
		fail_msg("%s against %s: %s", value, schema, msg);
	if (want && (r != -EINVAL || !strstr(msg, want)))
		fail_msg("%s against %s: \"%s\", want \"%s\"", value, schema, msg, want);
	json_decref(s);
	json_decref(v);
}

static void test_schema(void **state)
{
	const char *obj = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":1},"
			  "\"s\":{\"type\":\"string\",\"maxLength\":2},\"a\":{\"type\":\"array\",\"items\":{\"enum\":"
			  "[\"x\",\"y\"]}},\"o\":{\"type\":[\"string\",\"null\"]}},\"required\":[\"n\"],"
			  "\"additionalProperties\":false}";
	expect(obj, "{\"n\":1}", NULL);
	expect(obj, "{\"n\":2.0,\"s\":\"\xc3\xa9\xc3\xa9\",\"a\":[\"x\",\"y\"],\"o\":null}", NULL); /* 2 characters */
	expect(obj, "{}", "arguments: missing required property \"n\"");
	expect(obj, "[]", "arguments: expected object, got array");
	expect(obj, "{\"n\":0}", "n: must be at least 1");
	expect(obj, "{\"n\":1.5}", "n: expected integer, got number");
	expect(obj, "{\"n\":1,\"s\":\"abc\"}", "s: must be at most 2 characters");
	expect(obj, "{\"n\":1,\"a\":[\"x\",\"z\"]}", "a[1]: must be one of: x, y");
	expect(obj, "{\"n\":1,\"o\":1}", "o: has the wrong type (integer)");
	expect(obj, "{\"n\":1,\"zz\":1}", "unknown property \"zz\"");
	/* Labels: a bounded map of strings (code_create_sandbox's metadata). */
	const char *map = "{\"type\":\"object\",\"properties\":{\"m\":{\"type\":\"object\",\"maxProperties\":2,"
			  "\"propertyNames\":{\"minLength\":1,\"maxLength\":3},\"additionalProperties\":{\"type\":"
			  "\"string\",\"maxLength\":4}}}}";
	expect(map, "{\"m\":{\"a\":\"x\",\"bcd\":\"wxyz\"}}", NULL);
	expect(map, "{\"m\":{\"a\":\"x\",\"b\":\"y\",\"c\":\"z\"}}", "m: takes at most 2 properties");
	expect(map, "{\"m\":{\"abcd\":\"x\"}}", "m: key \"abcd\" must be at most 3 characters");
	expect(map, "{\"m\":{\"\":\"x\"}}", "m: key \"\" must be at least 1 characters");
	expect(map, "{\"m\":{\"a\":\"vwxyz\"}}", "m.a: must be at most 4 characters");
	expect(map, "{\"m\":{\"a\":1}}", "m.a: expected string, got integer");
	/* Our own schemas must only use what the validator enforces. */
	char msg[SCH_MSG_MAX];
	static const char *const bad[] = {
		"{\"type\":\"object\",\"pattern\":\"x\"}",
		"{\"type\":\"thing\"}",
		"{\"required\":\"a\"}",
		"{\"minLength\":-1}",
		"{\"enum\":[]}",
		"{\"type\":\"integer\",\"default\":\"x\"}",
		"[]",
		"{\"properties\":{\"a\":{\"format\":\"email\"}}}",
		"{\"propertyNames\":{\"pattern\":\"^a\"}}",
		"{\"maxProperties\":-1}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *s = j(bad[i]);
		if (sch_check_schema(s, msg) != -EINVAL)
			fail_msg("schema %s accepted", bad[i]);
		json_decref(s);
	}
	/* Nesting is bounded (the validator recurses along the schema). */
	json_t *deep = json_object();
	for (int i = 0; i < 40; i++)
		deep = json_pack("{s:s,s:o}", "type", "array", "items", deep);
	assert_int_equal(sch_check_schema(deep, msg), -EINVAL);
	assert_non_null(strstr(msg, "nested too deeply"));
	json_decref(deep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds), cmocka_unit_test(test_failures), cmocka_unit_test(test_encode),
		cmocka_unit_test(test_utf8),  cmocka_unit_test(test_base64),   cmocka_unit_test(test_schema),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
