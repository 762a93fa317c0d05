/* fuzz_jsonrpc.c — fuzz target for the MCP session (src/mcp/): arbitrary bytes as a sequence of
 * messages, against a fake manager and gate. No crash, no leak, every answer valid JSON-RPC, and a
 * call the gate did not allow never reaches the manager. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/mcp_fake.h"
#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

static uint64_t fuzz_now;

static uint64_t fuzz_clock(void *ctx)
{
	return fuzz_now;
}

/* Every message the session emits is one valid JSON-RPC 2.0 message on one line. */
static void check_out(json_t *out)
{
	size_t i;
	json_t *m;
	json_array_foreach(out, i, m) {
		char *line = NULL;
		ssize_t n = jr_encode(m, &line);
		CHECK(n > 0 && !memchr(line, '\n', (size_t)n));
		/* Program output may hold NUL bytes, sent as \u0000 (valid JSON); only our inbound parser
		 * refuses them, on purpose (C strings would cut there). Anything else must pass it. */
		if (!strstr(line, "\\u0000")) {
			struct jr_message back;
			struct jr_failure f;
			CHECK(jr_parse(line, (size_t)n, 0, &back, &f) == 0);
			jr_message_clear(&back);
		} else {
			json_t *back = json_loadb(line, (size_t)n, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, NULL);
			CHECK(json_is_object(back));
			json_decref(back);
		}
		free(line);
	}
	json_array_clear(out);
}

/*
 * The input is split at newlines into messages, as the stdio transport does. The first byte picks
 * the setting: async manager or not, which gate verdict, whether the session is initialized
 * first (so short inputs reach tools/call), and a small message limit.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t mode = size ? data[0] : 0;
	struct fake_mgr m = {.async = mode & 1, .cancel_finishes = (mode & 2) != 0};
	struct srv_mgr_api api = fake_api(&m);
	struct fake_gate g = {.verdict = (enum srv_gate_verdict)((mode >> 2) % 3), .reason = "fuzz"};
	struct srv_gate gate = fake_gate_api(&g);
	fake_add_sandbox(&m, "sb-a");
	struct mcp_opts o = {.size = sizeof(o),
			     .mgr = &api,
			     .gate = &gate,
			     .now_ms = fuzz_clock,
			     .max_message = (mode & 0x40) ? 512 : 0,
			     .max_inflight = 4};
	struct mcp_session *s = NULL;
	if (mcp_session_new(&o, &s, NULL) < 0)
		abort();
	json_t *out = json_array();
	if (mode & 0x20) {
		static const char init[] =
			"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
			"{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"elicitation\":{}}}}";
		mcp_session_feed(s, init, sizeof(init) - 1, out);
		check_out(out);
	}
	const char *p = (const char *)data + (size ? 1 : 0), *end = (const char *)data + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		mcp_session_feed(s, p, n, out);
		check_out(out);
		/* Running operations make progress between messages; time passes for approvals. */
		if (m.ops && !m.ops->done) {
			fake_output(m.ops, SRV_STDOUT, p, n < 16 ? n : 16);
			if (n & 1)
				fake_finish(m.ops, (int)(n & 7), "out");
		}
		fuzz_now += 20000;
		mcp_session_poll(s, out);
		check_out(out);
		p += n + 1;
	}
	/* Nothing ran unless the rules allowed it or a human could have approved it. */
	if (g.verdict == SRV_GATE_DENY)
		CHECK(m.total_calls == 0);
	CHECK(m.total_calls <= g.checks);
	mcp_session_cancel_all(s);
	mcp_session_poll(s, out);
	check_out(out);
	mcp_session_free(s);
	while (m.ops)
		fake_finish(m.ops, 0, ""); /* late, after the session is gone */
	CHECK(m.live_ops == 0);
	json_decref(out);
	return 0;
}
