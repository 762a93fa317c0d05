/* test_cellresult.c — a cell's result on the wire: figures as MCP image content (their bytes not repeated in the text copy), the cell object in structuredContent, and the code_context tool's arguments. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "manager/context.h"
#include "service/tools.h"

#define PNG_B64 "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg=="

static struct srv_result *cell_result(void)
{
	struct srv_result *r = srv_result_new();
	assert_non_null(r);
	r->verdict = calloc(1, sizeof(*r->verdict));
	assert_non_null(r->verdict);
	r->verdict->status = AL_STATUS_EXITED;
	r->verdict->backend = "native";
	r->sandbox_id = strdup("sb-1");
	r->cell_json =
		strdup("{\"context_id\":\"python\",\"state\":\"kept\",\"value\":{\"type\":\"int\",\"text\":\"42\"},"
		       "\"images\":[{\"mime\":\"image/png\",\"data\":\"" PNG_B64 "\",\"width\":1,\"height\":1}]}");
	return r;
}

/* A kernel's answer is bounded before jansson sees it: its bytes, its elements, its depth. */
static void test_answer_budget(void **state)
{
	(void)state;
	char why[200] = "";
	const char *ok = "{\"value\":{\"text\":\"[,:{\\\"\"},\"files\":[{\"path\":\"a\",\"size\":1}]}";
	json_t *j = ctx_load_answer(ok, strlen(ok), 64, 4096, why, sizeof(why));
	assert_non_null(j);
	json_decref(j);
	/* Separators inside strings, escaped quotes included, do not count. */
	assert_true(ctx_json_within("[\"\\\",,,,\"]", 10, 2, 2));
	assert_false(ctx_json_within("[0,0,0]", 7, 2, 8));
	assert_false(ctx_json_within("[[[]]]", 6, 100, 2));
	assert_true(ctx_json_within("[[]]", 4, 100, 2));
	size_t n = 2 * CTX_ANSWER_ELEMENTS + 2;
	char *flat = malloc(n + 1);
	assert_non_null(flat);
	flat[0] = '[';
	for (size_t i = 1; i < n - 1; i += 2)
		memcpy(flat + i, "0,", 2);
	flat[n - 1] = '0';
	flat[n] = ']';
	assert_null(ctx_load_answer(flat, n + 1, 64, 4096, why, sizeof(why)));
	assert_non_null(strstr(why, "elements"));
	free(flat);
	size_t max = ctx_answer_max(64, 4096);
	assert_null(ctx_load_answer("{}", max + 1, 64, 4096, why, sizeof(why)));
	assert_non_null(strstr(why, "bytes"));
	assert_null(ctx_load_answer("[1]", 3, 64, 4096, why, sizeof(why)));
}

static void test_figure_is_image_content(void **state)
{
	(void)state;
	struct srv_result *r = cell_result();
	json_t *args = json_pack("{s:s,s:s,s:s}", "language", "python", "code", "x", "sandbox_id", "sb-1");
	json_t *out = tl_result(TL_EXECUTE, args, r);
	assert_non_null(out);
	json_t *content = json_object_get(out, "content");
	assert_int_equal(json_array_size(content), 2);
	json_t *text = json_array_get(content, 0), *image = json_array_get(content, 1);
	assert_string_equal(json_string_value(json_object_get(text, "type")), "text");
	assert_null(strstr(json_string_value(json_object_get(text, "text")), PNG_B64)); /* said once, as the image */
	/* The text a model reads: the value, and the figure named (its bytes are the image block). */
	assert_non_null(strstr(json_string_value(json_object_get(text, "text")), "]: 42"));
	assert_non_null(strstr(json_string_value(json_object_get(text, "text")), "[figure 1: PNG"));
	assert_string_equal(json_string_value(json_object_get(image, "type")), "image");
	assert_string_equal(json_string_value(json_object_get(image, "mimeType")), "image/png");
	assert_string_equal(json_string_value(json_object_get(image, "data")), PNG_B64);
	/* structuredContent (the JSON API's result) keeps the bytes, as base64. */
	json_t *sc = json_object_get(out, "structuredContent");
	json_t *im = json_array_get(json_object_get(json_object_get(sc, "cell"), "images"), 0);
	assert_string_equal(json_string_value(json_object_get(im, "data")), PNG_B64);
	assert_false(json_is_true(json_object_get(out, "isError")));
	json_decref(out);
	json_decref(args);
	srv_result_free(r);
}

static void test_exec_without_cell(void **state)
{
	(void)state;
	struct srv_result *r = cell_result();
	free(r->cell_json);
	r->cell_json = NULL;
	json_t *args = json_pack("{s:s,s:s}", "language", "python", "code", "x");
	json_t *out = tl_result(TL_EXECUTE, args, r);
	assert_int_equal(json_array_size(json_object_get(out, "content")), 1);
	assert_null(json_object_get(json_object_get(out, "structuredContent"), "cell"));
	json_decref(out);
	json_decref(args);
	srv_result_free(r);
}

static void test_context_args(void **state)
{
	(void)state;
	struct tl_catalog c = {0};
	char msg[SCH_MSG_MAX];
	assert_int_equal(tl_catalog_load(&c, msg), 0);
	assert_int_equal(tl_lookup("code_context"), TL_CONTEXT);
	static const char *const good[] = {
		"{\"sandbox_id\":\"sb-1\",\"action\":\"list\"}",
		"{\"sandbox_id\":\"sb-1\",\"action\":\"create\",\"language\":\"javascript\"}",
		"{\"sandbox_id\":\"sb-1\",\"action\":\"restart\",\"context_id\":\"a.b-c\"}"};
	static const char *const bad[] = {"{\"sandbox_id\":\"sb-1\"}",
					  "{\"sandbox_id\":\"sb-1\",\"action\":\"explode\"}",
					  "{\"sandbox_id\":\"sb-1\",\"action\":\"create\",\"language\":\"cobol\"}",
					  "{\"sandbox_id\":\"sb-1\",\"action\":\"list\",\"extra\":1}"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		json_t *a = json_loads(good[i], 0, NULL);
		assert_int_equal(tl_check_args(&c, TL_CONTEXT, a, msg), 0);
		json_decref(a);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *a = json_loads(bad[i], 0, NULL);
		assert_int_equal(tl_check_args(&c, TL_CONTEXT, a, msg), -EINVAL);
		json_decref(a);
	}
	json_t *x = json_loads("{\"language\":\"python\",\"code\":\"1\",\"sandbox_id\":\"sb\",\"fresh\":true,"
			       "\"context_id\":\"c1\"}",
			       0, NULL);
	assert_int_equal(tl_check_args(&c, TL_EXECUTE, x, msg), 0);
	json_decref(x);
	tl_catalog_clear(&c);
}

/* What an install fetched: package files seen whole (wheel, sdist, npm, scoped npm), named by the
 * digest the proxy recorded; index pages, refusals and odd paths name nothing; tunnels are counted. */
static void test_fetched(void **state)
{
	(void)state;
	const char *px =
		"{\"records\":["
		"{\"tls\":\"airlock\",\"decision\":\"allowed\",\"method\":\"GET\",\"host\":\"pypi.org\","
		"\"path\":\"/simple/demo/\",\"sha256\":\"aa\",\"bytes_down\":10},"
		"{\"tls\":\"airlock\",\"decision\":\"allowed\",\"method\":\"GET\",\"host\":\"files.pythonhosted.org\","
		"\"path\":\"/packages/ab/"
		"demo_pkg-1.2.3-py3-none-any.whl#sha256=x\",\"sha256\":\"bb\",\"bytes_down\":20},"
		"{\"tls\":\"airlock\",\"decision\":\"allowed\",\"method\":\"GET\",\"host\":\"files.pythonhosted.org\","
		"\"path\":\"/packages/my-lib-0.9.tar.gz\",\"sha256\":\"cc\",\"bytes_down\":30},"
		"{\"tls\":\"airlock\",\"decision\":\"allowed\",\"method\":\"GET\",\"host\":\"registry.npmjs.org\","
		"\"path\":\"/@scope/tool/-/tool-2.0.0.tgz\",\"sha256\":\"dd\",\"bytes_down\":40},"
		"{\"tls\":\"airlock\",\"decision\":\"allowed\",\"method\":\"GET\",\"host\":\"registry.npmjs.org\","
		"\"path\":\"/-/x.tgz\",\"sha256\":\"ee\",\"bytes_down\":1},"
		"{\"tls\":\"airlock\",\"decision\":\"denied\",\"method\":\"POST\",\"host\":\"pypi.org\","
		"\"path\":\"/x.whl\",\"bytes_down\":0},"
		"{\"tls\":\"passthrough\",\"decision\":\"allowed\",\"method\":null,\"host\":\"pypi.org\"}]}";
	json_int_t unseen = -1;
	json_t *f = tl_fetched(px, &unseen);
	assert_non_null(f);
	assert_int_equal(unseen, 1);
	assert_int_equal(json_array_size(f), 4);
	static const char *const want[][4] = {{"demo_pkg", "1.2.3", "demo_pkg-1.2.3-py3-none-any.whl", "bb"},
					      {"my-lib", "0.9", "my-lib-0.9.tar.gz", "cc"},
					      {"@scope/tool", "2.0.0", "tool-2.0.0.tgz", "dd"},
					      {"", "", "x.tgz", "ee"}};
	for (size_t i = 0; i < 4; i++) {
		json_t *e = json_array_get(f, i);
		assert_string_equal(json_string_value(json_object_get(e, "name")), want[i][0]);
		assert_string_equal(json_string_value(json_object_get(e, "version")), want[i][1]);
		assert_string_equal(json_string_value(json_object_get(e, "file")), want[i][2]);
		assert_string_equal(json_string_value(json_object_get(e, "sha256")), want[i][3]);
	}
	json_decref(f);
	f = tl_fetched(NULL, &unseen);
	assert_int_equal(json_array_size(f), 0);
	assert_int_equal(unseen, 0);
	json_decref(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answer_budget),	  cmocka_unit_test(test_figure_is_image_content),
		cmocka_unit_test(test_exec_without_cell), cmocka_unit_test(test_context_args),
		cmocka_unit_test(test_fetched),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
