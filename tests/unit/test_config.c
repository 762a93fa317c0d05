/* test_config.c — unit tests for the configuration: bad files name line:column and key, merging, round trips, lookup, trust. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "config/config.h"
#include "config/conv.h"
#include "config/yaml.h"
#include "policy/policy.h"
#include "risk/risk.h"
#include "util/cleanup.h"
#include "util/fsutil.h"

#define MiB (1ULL << 20)

static struct cfg *load_ok(const char *yaml)
{
	struct cfg *c = NULL;
	struct al_error err = {0};
	int r = cfg_load_buffer(yaml, strlen(yaml), "t.yaml", &c, &err);
	if (r != 0)
		fail_msg("config should load, got %d: %s\n---\n%s", r, err.msg, yaml);
	return c;
}

static char *dump_ok(const struct cfg *c)
{
	char *text = NULL;
	size_t len = 0;
	struct al_error err = {0};
	if (cfg_dump(c, &text, &len, &err) != 0)
		fail_msg("cfg_dump: %s", err.msg);
	assert_int_equal(strlen(text), len);
	return text;
}

/* ---- bad files: each names file:line:column and the key ---------------------------------- */

struct bad_case {
	const char *yaml;
	const char *where; /* "line:column" */
	const char *what;  /* a fragment of the message: the key path and the problem */
};

static const struct bad_case bad_cases[] = {
	/* syntax and structure */
	{"version: 1\nlimits: {memory: 1G\n", "3:1", "YAML syntax"},
	{"- version\n", "1:1", "expected a mapping"},
	{"", "1:1", "version: missing"},
	{"# only a comment\n", "1:1", "version: missing"},
	{"limits: {}\n", "1:1", "version: missing"},
	{"version: 2\n", "1:10", "version: unsupported version '2'"},
	{"version: \"1\"\n", "1:10", "version: unsupported version"},
	{"version: 1\nversion: 1\n", "2:1", "version: duplicate key"},
	{"version: 1\nfoo: 1\n", "2:1", "foo: unknown key"},
	{"version: 1\n---\nversion: 1\n", "2:1", "only one YAML document"},
	{"version: 1\nlimits: &a {memory: 1G}\n", "2:9", "limits: anchors"},
	{"version: 1\nlimits: {memory: *a}\n", "2:18", "limits.memory: aliases"},
	{"version: !!int 1\n", "1:10", "version: tags"},
	{"version: 1\nlimits: {time: \"3\\0s\"}\n", "2:16", "limits.time: a string may not contain a NUL"},
	{"version: 1\nprofiles: {[a]: {}}\n", "2:12", "profiles: a mapping key must be a string"},
	{"version: 1\nlimits: [[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]\n", "2:24", "nested deeper than 16"},
	/* limits: the option table's parsers and ranges */
	{"version: 1\nlimits:\n  memory: 12X\n", "3:11", "limits.memory: invalid size '12X'"},
	{"version: 1\nlimits:\n  memroy: 12M\n", "3:3", "limits.memroy: unknown key"},
	{"version: 1\nlimits:\n  memory: 12M\n  memory: 1G\n", "4:3", "limits.memory: duplicate key"},
	{"version: 1\nlimits: 5\n", "2:9", "limits: expected a mapping, not '5'"},
	{"version: 1\nlimits:\n", "2:8", "limits: expected a mapping, not null"},
	{"version: 1\nlimits: {time: ~}\n", "2:16", "limits.time: expected a value, not null"},
	{"version: 1\nlimits: {time: [1]}\n", "2:16", "limits.time: expected a value, not a list"},
	{"version: 1\nlimits: {time: 0}\n", "2:16", "limits.time: duration '0' must be positive"},
	{"version: 1\nlimits: {open-files: 5}\n", "2:22", "limits.open-files: must be between 16"},
	{"version: 1\nlimits: {cpus: 2000}\n", "2:16", "limits.cpus: must be between 0.01 and 1024"},
	{"version: 1\nlimits: {output-limit: 2G}\n", "2:24", "limits.output-limit: must be at most 1G"},
	{"version: 1\nlimits: {memory: 1M}\n", "2:18", "limits.memory: must be at least 4M"},
	{"version: 1\nlimits: {address-space: 1}\n", "2:25", "limits.address-space: must be at least 16M"},
	{"version: 1\nlimits: {pids: -1}\n", "2:16", "limits.pids: invalid number"},
	{"version: 1\nlimits: {cgroup-systemd: sometimes}\n", "2:26",
	 "limits.cgroup-systemd: expected auto or never, not 'sometimes'"},
	{"version: 1\nlimits: {proxy-conns: 5}\n", "2:10", "limits.proxy-conns: unknown key"},
	/* network */
	{"version: 1\nnetwork: {registries: {pypi: []}}\n", "2:30",
	 "network.registries.pypi: a registry needs at least one host"},
	{"version: 1\nnetwork: {registries: {x: [a..b]}}\n", "2:28", "network.registries.x[0]: bad entry \"a..b\""},
	{"version: 1\nnetwork: {registries: {x: [\"a.org,b.org\"]}}\n", "2:28",
	 "network.registries.x[0]: one entry per list item"},
	{"version: 1\nnetwork: {registries: {x: a.org}}\n", "2:27", "network.registries.x: expected a list"},
	{"version: 1\nnetwork: {registries: {\"bad name\": [a.org]}}\n", "2:24",
	 "network.registries.bad name: invalid name"},
	{"version: 1\nnetwork: {allow-private: [10.0.0.0/33]}\n", "2:27", "network.allow-private[0]: bad entry"},
	{"version: 1\nnetwork: {allowprivate: []}\n", "2:11", "network.allowprivate: unknown key"},
	/* profiles */
	{"version: 1\nprofiles: {p: {netwrk: none}}\n", "2:16", "profiles.p.netwrk: unknown key"},
	{"version: 1\nprofiles: {p: {network: [pypi, nope]}}\n", "2:32", "profiles.p.network[1]: no registry 'nope'"},
	{"version: 1\nprofiles: {p: {network: internet}}\n", "2:25",
	 "profiles.p.network: 'internet' is not one of: none, loopback, host"},
	{"version: 1\nprofiles: {p: {network: []}}\n", "2:25", "profiles.p.network: an empty list of registries"},
	{"version: 1\nprofiles: {p: {namespaces: yes}}\n", "2:28",
	 "profiles.p.namespaces: 'yes' is not one of: false, true"},
	{"version: 1\nprofiles: {p: {namespaces: \"false\"}}\n", "2:28",
	 "profiles.p.namespaces: expected true or false"},
	{"version: 1\nprofiles: {p: {namespaces: false}}\n", "2:15",
	 "profiles.p: namespaces: false needs network: host"},
	{"version: 1\nprofiles: {p: {filesystem: checkout}}\n", "2:28",
	 "profiles.p.filesystem: 'checkout' is not one of"},
	{"version: 1\nprofiles: {p: {seccomp: none}}\n", "2:25",
	 "profiles.p.seccomp: 'none' is not one of: default, strict, off"},
	{"version: 1\nprofiles: {p: {require: [userns, bogus]}}\n", "2:34",
	 "profiles.p.require[1]: unknown layer 'bogus'"},
	{"version: 1\nprofiles: {p: {require: [\"userns,netns\"]}}\n", "2:26",
	 "profiles.p.require[0]: one entry per list item"},
	{"version: 1\nprofiles: {p: {rootfs: srv/root}}\n", "2:24",
	 "profiles.p.rootfs: 'srv/root' must be an absolute path"},
	{"version: 1\nprofiles: {p: {rootfs: /srv/../etc}}\n", "2:24",
	 "profiles.p.rootfs: '/srv/../etc' must be an absolute path"},
	{"version: 1\nprofiles: {p: {limits: {memory: lots}}}\n", "2:33",
	 "profiles.p.limits.memory: invalid size 'lots'"},
	{"version: 1\nprofiles: {p: {limits: {network: none}}}\n", "2:25", "profiles.p.limits.network: unknown key"},
	{"version: 1\nprofiles: {p: none}\n", "2:15", "profiles.p: expected a mapping, not 'none'"},
	{"version: 1\nprofiles: {-p: {}}\n", "2:12", "profiles.-p: invalid name"},
	/* languages */
	{"version: 1\nlanguages: {x: {command: [a]}}\n", "2:16", "languages.x: needs a file"},
	{"version: 1\nlanguages: {x: {file: x.y}}\n", "2:16", "languages.x: needs a command"},
	{"version: 1\nlanguages: {x: {command: [], file: x.y}}\n", "2:26", "languages.x.command: an empty command"},
	{"version: 1\nlanguages: {x: {command: [a, \"\"], file: x.y}}\n", "2:30",
	 "languages.x.command[1]: an empty argument"},
	{"version: 1\nlanguages: {x: {command: a, file: x.y}}\n", "2:26",
	 "languages.x.command: expected a list, not 'a'"},
	{"version: 1\nlanguages: {python: {file: ../x}}\n", "2:28",
	 "languages.python.file: '../x' is not a plain file name"},
	{"version: 1\nlanguages: {python: {file: a/b}}\n", "2:28",
	 "languages.python.file: 'a/b' is not a plain file name"},
	{"version: 1\nlanguages: {python: {paths: [opt/py]}}\n", "2:30",
	 "languages.python.paths[0]: 'opt/py' must be an absolute path"},
	{"version: 1\nlanguages: {python: {env: {1A: x}}}\n", "2:28", "languages.python.env.1A: invalid variable name"},
	{"version: 1\nlanguages: {python: {env: {A: [x]}}}\n", "2:31",
	 "languages.python.env.A: expected a value, not a list"},
	{"version: 1\nlanguages: {python: {env: [A=1]}}\n", "2:27",
	 "languages.python.env: expected a mapping, not a list"},
	{"version: 1\nlanguages: {python: {interpreter: [py]}}\n", "2:22", "languages.python.interpreter: unknown key"},
	/* rules */
	{"version: 1\nrules: {}\n", "2:8", "rules: expected a list, not a mapping"},
	{"version: 1\nrules: ~\n", "2:8", "rules: expected a list, not null"},
	{"version: 1\nrules:\n  - name: a\n    tools: [code_execute]\n    risk: HIGH\n    colour: red\n", "6:5",
	 "rules[0].colour: unknown key"},
	{"version: 1\nrules:\n  - {tools: [code_execute], risk: HIGH}\n", "3:5", "rules[0]: needs a name"},
	{"version: 1\nrules:\n  - {name: a, risk: HIGH}\n", "3:5", "rules[0]: needs tools"},
	{"version: 1\nrules:\n  - {name: a, tools: [code_execute]}\n", "3:5", "rules[0]: needs a risk"},
	{"version: 1\nrules:\n  - {name: 'a b', tools: [code_execute], risk: HIGH}\n", "3:12",
	 "rules[0].name: invalid name"},
	{"version: 1\nrules:\n  - {name: a, tools: [code_exec], risk: HIGH}\n", "3:23",
	 "rules[0].tools[0]: unknown tool 'code_exec'"},
	{"version: 1\nrules:\n  - {name: a, tools: [], risk: HIGH}\n", "3:22",
	 "rules[0].tools: an empty list of tools"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*', code_execute], risk: HIGH}\n", "3:23",
	 "rules[0].tools: \"*\" already names every tool"},
	{"version: 1\nrules:\n  - {name: a, tools: code_execute, risk: HIGH}\n", "3:22",
	 "rules[0].tools: expected a list, not 'code_execute'"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: high}\n", "3:35",
	 "rules[0].risk: 'high' is not one of: LOW, MEDIUM, HIGH, CRITICAL"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: none}\n", "3:35",
	 "rules[0].risk: 'none' is not one of"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW, approval_timeout: soon}\n", "3:58",
	 "rules[0].approval_timeout: invalid duration 'soon'"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW, approval_timeout: none}\n", "3:58",
	 "rules[0].approval_timeout: 'none' must be a duration of at most 24 hours"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW, approval_timeout: 25h}\n", "3:58",
	 "rules[0].approval_timeout: '25h' must be a duration"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW, require_approval: yes}\n", "3:58",
	 "rules[0].require_approval: 'yes' is not one of: false, true"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW, require_approval: 'true'}\n", "3:58",
	 "rules[0].require_approval: expected true or false, unquoted"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW}\n  - {name: a, tools: ['*'], risk: HIGH}\n",
	 "4:12", "rules[1].name: 'a' is also the name of rules[0]"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW, when: {param: x, equals: 1}}\n", "3:46",
	 "rules[0].when: expected a list, not a mapping"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW, when: [{equals: 1}]}\n", "3:47",
	 "rules[0].when[0]: needs a param"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW, when: [{param: x}]}\n", "3:47",
	 "rules[0].when[0]: needs equals or matches"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW, when: [{param: x, equals: 1, matches: y}]}\n",
	 "3:47", "rules[0].when[0]: give equals or matches, not both"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW, when: [{param: x, equals: [1]}]}\n", "3:66",
	 "rules[0].when[0].equals: expected a string, number, true, false or null, not a list"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW, when: [{param: x, matches: 'a(b'}]}\n", "3:67",
	 "rules[0].when[0].matches: invalid regex at offset 3: missing closing parenthesis"},
	{"version: 1\nrules:\n  - name: a\n    tools: ['*']\n    risk: LOW\n    when:\n      - param: code\n        "
	 "matches: '[z-a]'\n",
	 "8:18", "rules[0].when[0].matches: invalid regex at offset 3: range out of order"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW, when: [{param: x, matches: ''}]}\n", "3:67",
	 "rules[0].when[0].matches: an empty pattern"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW, when: [{param: x, matches: "
	 "'(*LIMIT_MATCH=99999999)a'}]}\n",
	 "3:67", "rules[0].when[0].matches: options such as (*UTF) are not accepted"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW, when: [{param: '', equals: 1}]}\n", "3:55",
	 "rules[0].when[0].param: an empty parameter name"},
	{"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW, when: [{param: x, regex: a}]}\n", "3:58",
	 "rules[0].when[0].regex: unknown key (expected param, equals, matches)"},
	/* approval */
	{"version: 1\napproval: {default_risk: none}\n", "2:26", "approval.default_risk: 'none' is not one of"},
	{"version: 1\napproval: {auto_approve_up_to: HIGH, deny_above: MEDIUM}\n", "2:11",
	 "approval: auto_approve_up_to (HIGH) is above deny_above (MEDIUM)"},
	{"version: 1\napproval: {channels: [http, http]}\n", "2:29", "approval.channels[1]: 'http' is listed twice"},
	{"version: 1\napproval: {channels: [email]}\n", "2:23",
	 "approval.channels[0]: 'email' is not one of: elicitation, http, terminal"},
	{"version: 1\napproval: {default_timeout: 0}\n", "2:29",
	 "approval.default_timeout: duration '0' must be positive"},
	{"version: 1\napproval: {timeout: 5s}\n", "2:12", "approval.timeout: unknown key"},
	/* audit */
	{"version: 1\naudit: {path: var/log/a.jsonl}\n", "2:15",
	 "audit.path: 'var/log/a.jsonl' must be an absolute path"},
	{"version: 1\naudit: {fsync: maybe}\n", "2:16", "audit.fsync: 'maybe' is not one of: false, true"},
	{"version: 1\naudit: {rotate_size: 1K}\n", "2:22", "audit.rotate_size: '1K' must be at least 64K"},
	{"version: 1\naudit: {rotate_size: lots}\n", "2:22", "audit.rotate_size: invalid size 'lots'"},
	{"version: 1\naudit: {keep: 0}\n", "2:15", "audit.keep: '0' must be a number between 1 and 1000"},
	{"version: 1\naudit: {keep: none}\n", "2:15", "audit.keep: 'none' must be a number"},
	{"version: 1\naudit: {rotate: 1M}\n", "2:9",
	 "audit.rotate: unknown key (expected path, fsync, rotate_size, keep)"},
	/* server */
	{"version: 1\nserver: {max_sandboxes: 0}\n", "2:25",
	 "server.max_sandboxes: '0' must be a number between 1 and 65536"},
	{"version: 1\nserver: {max_execs: -1}\n", "2:21", "server.max_execs: invalid number '-1'"},
	{"version: 1\nserver: {idle_ttl: none}\n", "2:20", "server.idle_ttl: 'none' must be a duration"},
	{"version: 1\nserver: {max_lifetime: 1x}\n", "2:24", "server.max_lifetime: invalid duration '1x'"},
	{"version: 1\nserver: {pool: {nope: 1}}\n", "2:17", "server.pool.nope: no profile 'nope' in profiles"},
	{"version: 1\nserver: {pool: {untrusted-code-read: 65}}\n", "2:38",
	 "server.pool.untrusted-code-read: '65' must be a number between 0 and 64"},
	{"version: 1\nserver: {max_sandboxes: 2, pool: {untrusted-code-write: 2}}\n", "2:9",
	 "server: the pool holds 4 sandboxes, more than max_sandboxes (2)"},
	{"version: 1\nserver: {http: {listen: 8080}}\n", "2:25", "server.http.listen: '8080' is not HOST:PORT"},
	{"version: 1\nserver: {http: {listen: '[::1]:99999'}}\n", "2:25",
	 "server.http.listen: '[::1]:99999' is not HOST:PORT"},
	{"version: 1\nserver: {socket: run/s.sock}\n", "2:18", "server.socket: 'run/s.sock' must be an absolute path"},
	{"version: 1\nserver: {approver_uids: [0, -1]}\n", "2:29", "server.approver_uids[1]: '-1' is not a uid"},
	{"version: 1\nserver: {http: {listen: '127.0.0.1:8080', token_file: tok}}\n", "2:55",
	 "server.http.token_file: 'tok' must be an absolute path"},
	{"version: 1\nserver: {http: {port: 1}}\n", "2:17",
	 "server.http.port: unknown key (expected listen, token_file, approver_token_file, e2b_domain, "
	 "max_connections)"},
	{"version: 1\nserver: {http: {e2b_domain: a..b}}\n", "2:29",
	 "server.http.e2b_domain: 'a..b' is not a domain name"},
	{"version: 1\nserver: {workers: 1}\n", "2:10", "server.workers: unknown key"},
	{"version: 1\nserver: {pool: [{count: 1}]}\n", "2:17", "server.pool[0]: needs profile"},
	{"version: 1\nserver: {pool: [{profile: untrusted-code-read, image: py, count: 1}]}\n", "2:17",
	 "server.pool[0]: profile untrusted-code-read does not offer the image 'py'"},
	{"version: 1\nserver: {pool: [{profile: untrusted-code-read, count: 1}, {profile: untrusted-code-read, count: "
	 "1}]}\n",
	 "2:59", "server.pool[1]: profile 'untrusted-code-read' is pooled twice on the same root"},
	{"version: 1\nserver: {pool: [3]}\n", "2:17", "server.pool[0]: expected a mapping, not '3'"},
	{"version: 1\nserver: {cell_image_limit: 64M}\n", "2:28",
	 "server.cell_image_limit: '64M' must be a size of at most 32M"},
	{"version: 1\nserver: {cell_image_limit: none}\n", "2:28",
	 "server.cell_image_limit: 'none' must be a size of at most 32M"},
};

static void test_bad_files(void **state)
{
	(void)state;
	int failures = 0;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *bc = &bad_cases[i];
		struct cfg *c = NULL;
		struct al_error err = {0};
		int r = cfg_load_buffer(bc->yaml, strlen(bc->yaml), "t.yaml", &c, &err);
		char where[32];
		snprintf(where, sizeof(where), "t.yaml:%s: ", bc->where);
		if (r >= 0 || c) {
			print_error("case %zu should fail: %s\n", i, bc->yaml);
			failures++;
		} else if (err.code != r || !strstr(err.msg, where) || !strstr(err.msg, bc->what)) {
			print_error("case %zu: want '%s' and '%s', got %d '%s'\n", i, where, bc->what, r, err.msg);
			failures++;
		}
		cfg_free(c);
	}
	assert_int_equal(failures, 0);
}

/* Bounds on untrusted input: size, number of values, entries per named mapping. */
static void test_bounds(void **state)
{
	(void)state;
	struct cfg *c = NULL;
	struct al_error err = {0};
	size_t big = CFG_MAX_BYTES + 1;
	cleanup_free char *buf = malloc(big);
	assert_non_null(buf);
	memset(buf, '#', big);
	assert_int_equal(cfg_load_buffer(buf, big, "t.yaml", &c, &err), -EFBIG);

	/* 70000 list items: refused by count, long before memory matters. */
	cleanup_free char *many = malloc(200000);
	assert_non_null(many);
	size_t n = (size_t)sprintf(many, "version: 1\nnetwork: {allow-private: [");
	for (int i = 0; i < 70000; i++)
		n += (size_t)sprintf(many + n, "%s1", i ? "," : "");
	n += (size_t)sprintf(many + n, "]}\n");
	assert_int_equal(cfg_load_buffer(many, n, "t.yaml", &c, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "more than 65536 values"));

	/* 1025 profiles. */
	n = (size_t)sprintf(many, "version: 1\nprofiles:\n");
	for (int i = 0; i < CFG_MAX_ENTRIES + 1; i++)
		n += (size_t)sprintf(many + n, "  p%d: {}\n", i);
	assert_int_equal(cfg_load_buffer(many, n, "t.yaml", &c, &err), -E2BIG);
	assert_non_null(strstr(err.msg, "t.yaml:3:3: profiles: more than 1024 entries"));
	assert_null(c);
}

/* ---- good files ---------------------------------------------------------------------------- */

static void test_defaults(void **state)
{
	(void)state;
	struct cfg *c = NULL;
	struct al_error err = {0};
	assert_int_equal(cfg_load_defaults(&c, &err), 0);
	assert_null(c->source);
	assert_string_equal(c->limits.text[CFG_LIM_TIME], "30s");
	assert_string_equal(c->limits.text[CFG_LIM_MEMORY], "512M");
	assert_string_equal(c->limits.text[CFG_LIM_CPUS], "0.5");
	assert_string_equal(c->limits.text[CFG_LIM_DISK], "1G");
	assert_string_equal(c->limits.text[CFG_LIM_OUTPUT], "1M");
	assert_null(c->limits.text[CFG_LIM_PIDS]);

	const struct cfg_profile *none = cfg_profile(c, "none"), *rd = cfg_profile(c, "untrusted-code-read"),
				 *wr = cfg_profile(c, "untrusted-code-write");
	assert_non_null(none);
	assert_false(none->namespaces);
	assert_int_equal(none->net, AL_NET_HOST);
	assert_int_equal(none->filesystem, CFG_FS_HOST);
	assert_int_equal(none->seccomp, AL_SECCOMP_OFF);
	assert_non_null(rd);
	assert_int_equal(rd->net, AL_NET_NONE);
	assert_int_equal(rd->filesystem, CFG_FS_CHECKOUT_RO);
	assert_int_equal(rd->require_bits, REQ_USERNS | REQ_PIDNS | REQ_MNTNS | REQ_NETNS | REQ_SECCOMP);
	assert_non_null(wr);
	assert_int_equal(wr->net, AL_NET_ALLOW);
	assert_int_equal(wr->registries.n, 2);
	assert_string_equal(wr->registries.v[0], "pypi");
	assert_null(wr->registries.v[2]);
	assert_int_equal(wr->filesystem, CFG_FS_CHECKOUT_COPY);
	assert_null(cfg_profile(c, "nope"));

	const struct cfg_registry *pypi = cfg_registry(c, "pypi");
	assert_non_null(pypi);
	assert_string_equal(pypi->hosts.v[1], "files.pythonhosted.org");

	static const char *const langs[] = {"python", "javascript", "shell", "ruby", "php", "perl", "c"};
	assert_int_equal(c->nlanguages, 7);
	for (size_t i = 0; i < 7; i++)
		assert_non_null(cfg_language(c, langs[i]));
	const struct cfg_language *py = cfg_language(c, "python"), *cc = cfg_language(c, "c");
	assert_string_equal(py->command.v[0], "python3");
	assert_string_equal(py->file, "main.py");
	assert_int_equal(py->nenv, 1);
	assert_string_equal(py->env[0].name, "PYTHONDONTWRITEBYTECODE");
	assert_string_equal(py->env[0].value, "1");
	assert_int_equal(cc->compile.n, 5);
	assert_string_equal(cc->compile.v[1], "-O2");
	assert_string_equal(cc->command.v[0], "./main");
	assert_null(cfg_language(c, "cobol"));
	cfg_free(c);
}

/* The manager's sections as shipped: the rule order the issue lists, a cautious policy. */
static void test_defaults_manager(void **state)
{
	(void)state;
	struct cfg *c = NULL;
	struct al_error err = {0};
	assert_int_equal(cfg_load_defaults(&c, &err), 0);
	static const char *const names[] = {
		"code-with-network", "code-rm-rf", "code-pipe-to-shell", "code-eval-exec", "code-execute",
		"package-install",   "files",	   "destroy-sandbox",	 "create-sandbox", "contexts",
		"process-stdin",     "processes",  "sandbox-timeout",	 "fork-sandbox",   "snapshots",
		"pause-sandbox",     "watch"};
	assert_int_equal(c->nrules, AL_ARRAY_SIZE(names));
	for (size_t i = 0; i < c->nrules; i++)
		assert_string_equal(c->rules[i].name, names[i]);
	const struct cfg_rule *net = &c->rules[0], *destroy = &c->rules[7];
	assert_int_equal(net->risk, CFG_RISK_CRITICAL);
	assert_int_equal(net->timeout_ms, 30000);
	assert_true(net->require_approval);
	assert_false(net->require_approval_set);
	assert_int_equal(net->nwhen, 1);
	assert_int_equal(net->when[0].op, CFG_COND_EQUALS);
	assert_true(json_is_true(net->when[0].equals));
	assert_int_equal(c->rules[1].when[0].op, CFG_COND_MATCHES);
	/* A load compiles no pattern of the defaults: only what classifies does, once. */
	assert_null(c->rules[1].when[0].re);
	assert_int_equal(cfg_rules_compile(c, &err), 0);
	assert_non_null(c->rules[1].when[0].re);
	const void *re = c->rules[1].when[0].re;
	assert_int_equal(cfg_rules_compile(c, &err), 0);
	assert_ptr_equal(c->rules[1].when[0].re, re);
	assert_int_equal(c->rules[6].risk, CFG_RISK_MEDIUM);
	assert_int_equal(c->rules[6].timeout_ms, 120000);
	assert_false(c->rules[6].require_approval);
	assert_int_equal(destroy->risk, CFG_RISK_LOW);
	assert_false(destroy->require_approval);
	assert_true(destroy->require_approval_set);
	assert_null(destroy->timeout);
	assert_int_equal(c->approval.default_risk, CFG_RISK_HIGH);
	assert_int_equal(c->approval.default_timeout_ms, 60000);
	assert_int_equal(c->approval.auto_approve_up_to, CFG_RISK_NONE);
	assert_int_equal(c->approval.deny_above, CFG_RISK_NONE);
	assert_int_equal(c->approval.channel_bits, 7);
	assert_string_equal(c->approval.channels.v[0], "elicitation");
	assert_null(c->audit.path);
	assert_true(c->audit.fsync);
	assert_int_equal(c->audit.rotate_bytes, 64 * MiB);
	assert_int_equal(c->audit.keep, 5);
	assert_int_equal(c->server.max_sandboxes, 128);
	assert_int_equal(c->server.max_execs, 8);
	assert_int_equal(c->server.idle_ttl_ms, 600000);
	assert_int_equal(c->server.max_lifetime_ms, 3600000);
	assert_int_equal(c->server.npool, 1);
	assert_string_equal(c->server.pool[0].profile, "untrusted-code-read");
	assert_int_equal(c->server.pool[0].count, 2);
	assert_null(c->server.http_listen);
	assert_null(c->server.http_token_file);
	assert_string_equal(cfg_risk_name(CFG_RISK_NONE), "none");
	assert_string_equal(cfg_channel_name(CFG_CHAN_TERMINAL), "terminal");
	cfg_free(c);
}

/* A file's rules replace the defaults' list whole; mappings (approval, audit, server, pool) merge. */
static void test_manager_file(void **state)
{
	(void)state;
	struct cfg *c = load_ok("version: 1\n"
				"rules:\n"
				"  - name: only\n"
				"    tools: ['*']\n"
				"    when:\n"
				"      - {param: n, equals: 12}\n"
				"      - {param: s, equals: '12'}\n"
				"      - {param: b, equals: false}\n"
				"      - {param: z, equals: ~}\n"
				"      - {param: f, equals: 1.5}\n"
				"      - {param: w, equals: yes}\n"
				"    risk: HIGH\n"
				"    require_approval: false\n"
				"approval: {auto_approve_up_to: MEDIUM, deny_above: HIGH, channels: [terminal]}\n"
				"audit: {path: /var/log/x/audit.jsonl, fsync: false, rotate_size: none, keep: 2}\n"
				"server: {max_execs: 2, pool: {untrusted-code-write: 1}, http: {listen: '[::]:8421', "
				"token_file: /etc/a/tok}}\n");
	assert_int_equal(c->nrules, 1);
	const struct cfg_cond *w = c->rules[0].when;
	assert_true(json_is_integer(w[0].equals) && json_integer_value(w[0].equals) == 12);
	assert_string_equal(json_string_value(w[1].equals), "12");
	assert_true(json_is_false(w[2].equals));
	assert_true(json_is_null(w[3].equals));
	assert_true(json_is_real(w[4].equals));
	/* YAML 1.1's yes is no boolean here: a string, as written. */
	assert_string_equal(json_string_value(w[5].equals), "yes");
	assert_false(c->rules[0].require_approval);
	assert_int_equal(c->approval.channel_bits, 1u << CFG_CHAN_TERMINAL);
	assert_int_equal(c->approval.default_timeout_ms, 60000); /* kept from the defaults */
	assert_string_equal(c->audit.path, "/var/log/x/audit.jsonl");
	assert_false(c->audit.fsync);
	assert_int_equal(c->audit.rotate_bytes, AL_UNLIMITED);
	assert_int_equal(c->server.max_sandboxes, 128);
	assert_int_equal(c->server.max_execs, 2);
	assert_int_equal(c->server.npool, 2);
	assert_string_equal(c->server.http_listen, "[::]:8421");
	cfg_free(c);
	/* Loopback needs no token; localhost and 127.x are loopback. */
	static const char *const ok[] = {"127.0.0.1:1", "localhost:8421", "127.9.9.9:65535", "[::1]:80"};
	for (size_t i = 0; i < AL_ARRAY_SIZE(ok); i++) {
		char y[160];
		snprintf(y, sizeof(y), "version: 1\nserver: {http: {listen: '%s'}}\n", ok[i]);
		cfg_free(load_ok(y));
	}
}

/* The embedded limits equal what `airlock run` had before (policy.c), cpus aside, and applied
 * as defaults they stay defaults: nothing is marked as explicitly required. */
static void test_defaults_match_policy(void **state)
{
	(void)state;
	struct cfg *c = NULL;
	struct al_policy *builtin = NULL, *p = NULL;
	struct al_error err = {0};
	assert_int_equal(cfg_load_defaults(&c, &err), 0);
	assert_int_equal(al_policy_new(&builtin), 0);
	assert_int_equal(al_policy_new(&p), 0);
	assert_int_equal(cfg_apply_limits(&c->limits, p, true, &err), 0);
	for (int l = 0; l < AL_LIMIT__COUNT; l++)
		if (l != AL_LIMIT_CPUS)
			assert_int_equal(al_policy_get_limit(p, (enum al_limit)l),
					 al_policy_get_limit(builtin, (enum al_limit)l));
	assert_int_equal(al_policy_get_limit(p, AL_LIMIT_CPUS), 500);
	assert_int_equal(al_policy_get_limit(p, AL_LIMIT_WALL_MS), 30000);
	assert_int_equal(p->limits_set, 0);

	/* Not as defaults: what the config sets counts as requested. */
	assert_int_equal(cfg_apply_limits(&c->limits, builtin, false, &err), 0);
	assert_true(builtin->limits_set & (1u << AL_LIMIT_MEMORY));
	assert_true(builtin->limits_set & (1u << AL_LIMIT_CPUS));
	al_policy_free(builtin);
	al_policy_free(p);
	cfg_free(c);
}

/* A flag given after the config's limits wins, and only it is marked explicit. */
static void test_flags_win(void **state)
{
	(void)state;
	struct cfg *c = load_ok("version: 1\nlimits: {time: 5s, memory: 64M}\n");
	struct al_policy *p = NULL;
	struct al_error err = {0};
	assert_int_equal(al_policy_new(&p), 0);
	assert_int_equal(cfg_apply_limits(&c->limits, p, true, &err), 0);
	assert_int_equal(al_policy_get_limit(p, AL_LIMIT_WALL_MS), 5000);
	assert_int_equal(al_policy_get_limit(p, AL_LIMIT_MEMORY), 64 * MiB);
	assert_int_equal(opt_apply(p, opt_find(OPT_TIME), "2", &err), 0);
	assert_int_equal(al_policy_get_limit(p, AL_LIMIT_WALL_MS), 2000);
	assert_int_equal(al_policy_get_limit(p, AL_LIMIT_MEMORY), 64 * MiB);
	assert_int_equal(p->limits_set, 1u << AL_LIMIT_WALL_MS);
	al_policy_free(p);
	cfg_free(c);
}

/* cgroup-systemd: auto by default; never from the configuration, and a flag after it wins. */
static void test_cgroup_systemd(void **state)
{
	(void)state;
	struct cfg *c = load_ok("version: 1\nlimits: {cgroup-systemd: never}\n");
	struct al_policy *p = NULL;
	struct al_error err = {0};
	assert_int_equal(al_policy_new(&p), 0);
	assert_false(p->no_systemd_scope);
	assert_int_equal(cfg_apply_limits(&c->limits, p, true, &err), 0);
	assert_true(p->no_systemd_scope);
	assert_int_equal(p->limits_set, 0);
	assert_int_equal(opt_apply(p, opt_find(OPT_CGROUP_SYSTEMD), "auto", &err), 0);
	assert_false(p->no_systemd_scope);
	assert_int_equal(opt_apply(p, opt_find(OPT_CGROUP_SYSTEMD), "Never", &err), -EINVAL);
	assert_string_equal(err.msg, "--cgroup-systemd: expected auto or never, not 'Never'");
	assert_false(p->no_systemd_scope);
	al_policy_free(p);
	cfg_free(c);
}

static void test_good_files(void **state)
{
	(void)state;
	static const char *const good[] = {
		"version: 1\n",
		"# a comment\nversion: 1 # trailing comment\n\n",
		"---\nversion: 1\n...\n",
		"{version: 1, limits: {memory: '1G', time: \"2m\"}}\n",
		"version: 1\nlimits:\n  time: none\n  cpu-time: 250ms\n  pids: 64\n  cpus: 2\n  open-files: 64\n"
		"  file-size: 10M\n  address-space: unlimited\n",
		"version: 1\nnetwork:\n  registries:\n    corp: ['*.corp.example', 'pkg.corp.example:8443', 10.1.2.3]\n"
		"  allow-private: [10.0.0.0/8, fd00::/8]\nprofiles:\n  corp-build:\n    network: [corp, pypi]\n"
		"    filesystem: checkout-copy\n    rootfs: /srv/rootfs/debian\n    require: [all, landlock>=2]\n"
		"    limits: {memory: 2G, time: 10m}\n",
		"version: 1\nlanguages:\n  lua: {command: [lua5.4], file: main.lua, paths: [/usr/share/lua], env: "
		"{LUA_PATH: ''}}\n",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cfg_free(load_ok(good[i]));
	struct cfg *c = load_ok(good[5]);
	const struct cfg_profile *p = cfg_profile(c, "corp-build");
	assert_non_null(p);
	assert_true(p->namespaces);
	assert_int_equal(p->seccomp, AL_SECCOMP_DEFAULT);
	assert_int_equal(p->require_landlock_abi, 2);
	assert_string_equal(p->rootfs, "/srv/rootfs/debian");
	assert_string_equal(p->limits.text[CFG_LIM_MEMORY], "2G");
	assert_int_equal(c->allow_private.n, 2);
	cfg_free(c);
	/* The pool's list form names images (replacing the defaults' map whole); the image limit. */
	c = load_ok("version: 1\nprofiles:\n  imgs: {images: [py, bb]}\nserver:\n  cell_image_limit: 1M\n  pool:\n"
		    "  - {profile: imgs, image: py, count: 2}\n  - {profile: imgs, count: 1}\n");
	assert_int_equal(c->server.npool, 2);
	assert_string_equal(c->server.pool[0].profile, "imgs");
	assert_string_equal(c->server.pool[0].image, "py");
	assert_int_equal(c->server.pool[0].count, 2);
	assert_null(c->server.pool[1].image);
	assert_int_equal(c->server.cell_image_bytes, 1 << 20);
	cfg_free(c);
}

/* ---- merging: a file overrides only the keys it sets --------------------------------------- */

static void test_merge(void **state)
{
	(void)state;
	struct cfg *c = load_ok("version: 1\n"
				"limits: {memory: 1G, pids: 100}\n"
				"network:\n  registries:\n    pypi: [pypi.internal]\n    crates: [crates.io]\n"
				"profiles:\n"
				"  untrusted-code-read: {network: host}\n"
				"  fresh: {}\n"
				"  lo: {network: loopback}\n"
				"languages:\n"
				"  python: {env: {PYTHONUNBUFFERED: '1'}}\n"
				"  c: {compile: []}\n");
	/* Limits: the file's keys replaced, the others kept. */
	assert_string_equal(c->limits.text[CFG_LIM_MEMORY], "1G");
	assert_string_equal(c->limits.text[CFG_LIM_PIDS], "100");
	assert_string_equal(c->limits.text[CFG_LIM_TIME], "30s");
	assert_string_equal(c->limits.text[CFG_LIM_CPUS], "0.5");
	/* A list is replaced whole; a new registry is added after the defaults'. */
	assert_int_equal(cfg_registry(c, "pypi")->hosts.n, 1);
	assert_string_equal(cfg_registry(c, "pypi")->hosts.v[0], "pypi.internal");
	assert_non_null(cfg_registry(c, "npm"));
	assert_string_equal(c->registries[2].name, "crates");
	/* A profile key overridden, the profile's other keys kept. */
	const struct cfg_profile *rd = cfg_profile(c, "untrusted-code-read");
	assert_int_equal(rd->net, AL_NET_HOST);
	assert_int_equal(rd->filesystem, CFG_FS_CHECKOUT_RO);
	assert_int_equal(rd->require.n, 5);
	/* A new profile starts from the strict end of every knob. */
	const struct cfg_profile *fresh = cfg_profile(c, "fresh");
	assert_non_null(fresh);
	assert_true(fresh->namespaces);
	assert_int_equal(fresh->net, AL_NET_NONE);
	/* "loopback" is a synonym of "none" (a private lo, up, and nothing else). */
	assert_int_equal(cfg_profile(c, "lo")->net, AL_NET_NONE);
	assert_int_equal(fresh->filesystem, CFG_FS_WORKSPACE);
	assert_int_equal(fresh->seccomp, AL_SECCOMP_DEFAULT);
	/* Mappings inside entries merge too; the language keeps its command and file. */
	const struct cfg_language *py = cfg_language(c, "python");
	assert_string_equal(py->command.v[0], "python3");
	assert_int_equal(py->nenv, 2);
	assert_string_equal(py->env[1].name, "PYTHONUNBUFFERED");
	assert_int_equal(cfg_language(c, "c")->compile.n, 0);
	assert_int_equal(c->nprofiles, 5);
	cfg_free(c);

	/* The defaults' own marks: a file that breaks a reference into them is named where it is. */
	struct al_error err = {0};
	const char *y = "version: 1\nnetwork:\n  registries:\n    npm: 5\n";
	assert_int_equal(cfg_load_buffer(y, strlen(y), "t.yaml", &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "t.yaml:4:10: network.registries.npm: expected a list"));
}

/* ---- round trip: dump, load, dump gives the same text -------------------------------------- */

static void round_trip(const char *yaml)
{
	struct cfg *c = load_ok(yaml);
	cleanup_free char *first = dump_ok(c);
	cfg_free(c);
	c = load_ok(first);
	cleanup_free char *second = dump_ok(c);
	cfg_free(c);
	if (strcmp(first, second) != 0)
		fail_msg("dump changed on reload:\n%s\n---\n%s", first, second);
}

static void test_round_trip(void **state)
{
	(void)state;
	round_trip("version: 1\n");
	round_trip("version: 1\n"
		   "limits: {memory: 1.5G, time: none, open-files: 64}\n"
		   "network: {registries: {odd: ['*.x.org', '[2001:db8::1]:8443']}, allow-private: [10.0.0.0/8]}\n"
		   "profiles:\n"
		   "  p: {network: [odd], rootfs: /srv/root, require: [landlock>=3], limits: {cpus: 2}}\n"
		   "  q: {network: loopback, seccomp: strict, filesystem: checkout-ro}\n"
		   "languages:\n"
		   "  weird: {command: ['-x', 'a b', 'null', '~', 'true', '#', '\"q\"', \"it's\", 'ünï'], file: 'a "
		   "b.txt',\n"
		   "          env: {A: '', B: null-ish, C: 'line\\nbreak'}}\n"
		   "  c: {compile: []}\n");
	round_trip(
		"version: 1\n"
		"rules:\n"
		"  - {name: a, tools: ['*'], risk: LOW, approval_timeout: 1.5s, require_approval: true,\n"
		"     when: [{param: 'x y', equals: 'true'}, {param: n, equals: -0.25}, {param: z, equals: null},\n"
		"            {param: s, equals: ''}, {param: q, equals: \"it's \\\"q\\\"\"},\n"
		"            {param: code, matches: \"(?i)^\\\\s*#!.*\\\\b(sh|bash)\\\\b: 'x'\"}]}\n"
		"  - {name: b, tools: [code_read_file, code_write_file], risk: MEDIUM}\n"
		"approval: {default_risk: CRITICAL, default_timeout: 2m, deny_above: HIGH, channels: []}\n"
		"audit: {path: /srv/audit/a.jsonl, fsync: false, rotate_size: 1G, keep: 1}\n"
		"server: {pool: {untrusted-code-write: 0, none: 3}, http: {listen: 'localhost:1', token_file: /t}}\n");
	round_trip("version: 1\nrules: []\n");
	/* The dump of the defaults loads and equals the defaults. */
	struct cfg *c = NULL;
	struct al_error err = {0};
	assert_int_equal(cfg_load_defaults(&c, &err), 0);
	cleanup_free char *text = dump_ok(c);
	cfg_free(c);
	c = load_ok(text);
	cleanup_free char *again = dump_ok(c);
	cfg_free(c);
	assert_string_equal(text, again);
	assert_non_null(strstr(text, "version: 1\nlimits:\n  time: 30s\n"));
	/* The strings that look like null stay strings. */
	c = load_ok("version: 1\nlanguages: {w: {command: ['null', '~'], file: f, env: {E: '', F: 'NULL'}}}\n");
	cleanup_free char *d = dump_ok(c);
	cfg_free(c);
	c = load_ok(d);
	assert_string_equal(cfg_language(c, "w")->command.v[0], "null");
	assert_string_equal(cfg_language(c, "w")->command.v[1], "~");
	assert_string_equal(cfg_language(c, "w")->env[0].value, "");
	assert_string_equal(cfg_language(c, "w")->env[1].value, "NULL");
	cfg_free(c);
}

/* ---- the tree: merge semantics at the node level ------------------------------------------- */

static void test_node_merge(void **state)
{
	(void)state;
	struct cfg_node *a = NULL, *b = NULL;
	struct al_error err = {0};
	const char *ya = "x: {a: 1, b: [1, 2]}\ny: 1\n", *yb = "x: {b: [3], c: 4}\ny: {z: 1}\nw: 2\n";
	assert_int_equal(cfg_yaml_parse(ya, strlen(ya), "a", &a, &err), 0);
	assert_int_equal(cfg_yaml_parse(yb, strlen(yb), "b", &b, &err), 0);
	assert_int_equal(cfg_node_merge(a, b), 0);
	const struct cfg_node *x = cfg_node_get(a, "x");
	assert_string_equal(cfg_node_get(x, "a")->text, "1");
	assert_int_equal(cfg_node_get(x, "b")->n, 1);
	assert_string_equal(cfg_node_get(x, "c")->text, "4");
	assert_int_equal(cfg_node_get(a, "y")->kind, CFG_MAP);
	assert_string_equal(cfg_node_get(a, "y")->mark.file, "b");
	assert_string_equal(a->ents[2].key, "w");
	cfg_node_free(a);

	/* No document at all is not an error of the YAML layer. */
	assert_int_equal(cfg_yaml_parse("", 0, "e", &a, &err), 0);
	assert_null(a);
	assert_true(cfg_yaml_parse("a: 1\n", 5, "e", &a, &err) == 0 && !cfg_node_is_null(cfg_node_get(a, "a")));
	cfg_node_free(a);
	assert_true(cfg_yaml_parse("a: ~\nb: ''\nc: Null\n", 19, "e", &a, &err) == 0);
	assert_true(cfg_node_is_null(cfg_node_get(a, "a")));
	assert_false(cfg_node_is_null(cfg_node_get(a, "b")));
	assert_true(cfg_node_is_null(cfg_node_get(a, "c")));
	cfg_node_free(a);
}

/* Every field of two trees, marks and order included. */
static void same_mark(struct cfg_mark a, struct cfg_mark b)
{
	assert_ptr_equal(a.file, b.file);
	assert_int_equal(a.line, b.line);
	assert_int_equal(a.column, b.column);
}

static void same_text(const char *a, const char *b)
{
	assert_true(!a == !b);
	if (a)
		assert_string_equal(a, b);
}

/* NOLINTNEXTLINE(misc-no-recursion): as deep as the defaults, a few levels */
static void same_tree(const struct cfg_node *a, const struct cfg_node *b)
{
	assert_int_equal(a->kind, b->kind);
	same_mark(a->mark, b->mark);
	assert_int_equal(a->plain, b->plain);
	same_text(a->text, b->text);
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		same_text(a->ents[i].key, b->ents[i].key);
		same_mark(a->ents[i].key_mark, b->ents[i].key_mark);
		same_tree(a->ents[i].value, b->ents[i].value);
	}
}

/* The trees tools/gen-config.c wrote at build time are what the loader's parser makes of
 * defaults.c's text now (the job's: the first document; the whole: both merged), and a copy of
 * one is the same tree again. */
static void test_build_time_defaults(void **state)
{
	(void)state;
	struct cfg_node *job = NULL, *all = NULL, *service = NULL;
	struct al_error err = {0};
	assert_int_equal(cfg_yaml_parse(cfg_default_yaml, strlen(cfg_default_yaml), cfg_defaults_name, &job, &err), 0);
	assert_int_equal(cfg_yaml_parse(cfg_default_yaml, strlen(cfg_default_yaml), cfg_defaults_name, &all, &err), 0);
	assert_int_equal(cfg_yaml_parse(cfg_default_service_yaml, strlen(cfg_default_service_yaml), cfg_defaults_name,
					&service, &err),
			 0);
	assert_int_equal(cfg_node_merge(all, service), 0);
	same_tree(cfg_defaults_job, job);
	same_tree(cfg_defaults_all, all);
	struct cfg_node *copy = cfg_node_clone(cfg_defaults_all);
	assert_non_null(copy);
	same_tree(copy, all);
	cfg_node_free(copy);
	cfg_node_free(job);
	cfg_node_free(all);

	/* A file's pattern is compiled at load whatever the file is called: only the defaults'
	 * own nodes (their marks point at cfg_defaults_name itself) skip it. */
	const char *bad =
		"version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW, when: [{param: x, matches: 'a(b'}]}\n";
	struct cfg *c = NULL;
	assert_int_equal(cfg_load_buffer(bad, strlen(bad), CFG_DEFAULTS_NAME, &c, &err), -EINVAL);
	assert_null(c);
	assert_non_null(strstr(err.msg, "invalid regex at offset 3"));
}

/* conv_index and conv_join write what their snprintf forms wrote (messages name these paths). */
static void test_key_paths(void **state)
{
	(void)state;
	static const size_t idx[] = {0, 1, 9, 10, 99, 100, 12345, SIZE_MAX};
	char path[PATH_BUF], key[100];
	srand(14);
	for (int round = 0; round < 20000; round++) {
		size_t pl = (size_t)rand() % PATH_BUF, kl = (size_t)rand() % sizeof(key);
		for (size_t i = 0; i < pl; i++)
			path[i] = (char)('a' + rand() % 26);
		path[pl] = 0;
		for (size_t i = 0; i < kl; i++)
			key[i] = (char)('a' + rand() % 26);
		key[kl] = 0;
		size_t n = round < 8 ? idx[round] : (size_t)rand() % (round % 3 ? 100 : 1000000);
		char want[PATH_BUF + 16], got[PATH_BUF + 16];
		snprintf(want, sizeof(want), "%s[%zu]", path, n);
		conv_index(got, path, n);
		assert_string_equal(got, want);
		char joined[PATH_BUF + 80]; /* then cut as snprintf into PATH_BUF bytes would */
		snprintf(joined, sizeof(joined), "%s%s%.64s%s", path, *path ? "." : "", key, kl > 64 ? "..." : "");
		joined[PATH_BUF - 1] = 0;
		conv_join(got, path, key);
		assert_string_equal(got, joined);
	}
}

/* ---- files: lookup, reading, trust --------------------------------------------------------- */

struct tmp {
	char dir[64];
};

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
}

static void mkpath(const char *a, const char *b, char *out)
{
	snprintf(out, 256, "%s/%s", a, b);
	assert_true(mkdir(out, 0755) == 0 || errno == EEXIST);
}

static int setup_tmp(void **state)
{
	static struct tmp t;
	snprintf(t.dir, sizeof(t.dir), "/tmp/al-test-config.XXXXXX");
	if (!mkdtemp(t.dir))
		return -1;
	*state = &t;
	return 0;
}

static int teardown_tmp(void **state)
{
	struct tmp *t = *state;
	/* Only our own mkdtemp directory, never following a symlink nor crossing a mount. */
	return al_remove_tree(t->dir) == 0 ? 0 : -1;
}

static void test_lookup(void **state)
{
	struct tmp *t = *state;
	char etc[256], airlock_etc[256], xdg[256], xdg_airlock[256], home[256], file[300];
	mkpath(t->dir, "etc", etc);
	mkpath(t->dir, "xdg", xdg);
	mkpath(t->dir, "home", home);
	setenv(CFG_SYSCONFDIR_ENV, etc, 1);
	setenv("XDG_CONFIG_HOME", xdg, 1);
	char *path = NULL;
	struct al_error err = {0};
	/* Nothing anywhere: defaults only. */
	assert_int_equal(cfg_lookup(false, &path, &err), 0);
	assert_null(path);
	/* A job's load skips the service's sections, keeps everything a job reads, and cannot be
	 * used to classify a request (no rules would decide by omission). */
	struct cfg *all = NULL, *job = NULL;
	assert_int_equal(cfg_load(NULL, &all, &err), 0);
	assert_int_equal(cfg_load_job(NULL, &job, &err), 0);
	assert_false(all->job_only);
	assert_true(job->job_only);
	assert_true(all->nrules > 0);
	assert_int_equal(job->nrules, 0);
	assert_int_equal(job->nprofiles, all->nprofiles);
	assert_int_equal(job->nlanguages, all->nlanguages);
	assert_int_equal(job->nregistries, all->nregistries);
	for (size_t i = 0; i < CFG_LIM__COUNT; i++)
		assert_true(job->limits.text[i] == all->limits.text[i] ||
			    strcmp(job->limits.text[i], all->limits.text[i]) == 0);
	struct risk_decision d;
	/* Nor can a configuration whose patterns were never compiled. */
	assert_int_equal(risk_classify(all, "code_execute", NULL, &d, &err), -EINVAL);
	assert_int_equal(cfg_rules_compile(all, &err), 0);
	assert_int_equal(cfg_rules_compile(job, &err), 0);
	assert_int_equal(risk_classify(all, "code_execute", NULL, &d, &err), 0);
	assert_int_equal(risk_classify(job, "code_execute", NULL, &d, &err), -EINVAL);
	cfg_free(all);
	cfg_free(job);
	/* The user's file, for users only. */
	mkpath(xdg, "airlock", xdg_airlock);
	snprintf(file, sizeof(file), "%s/config.yaml", xdg_airlock);
	write_file(file, "version: 1\n", 0644);
	assert_int_equal(cfg_lookup(false, &path, &err), 0);
	assert_string_equal(path, file);
	free(path);
	assert_int_equal(cfg_lookup(true, &path, &err), 0);
	assert_null(path);
	/* $HOME/.config when XDG_CONFIG_HOME is unset (or relative, which XDG says to ignore). */
	setenv("XDG_CONFIG_HOME", "relative/dir", 1);
	setenv("HOME", home, 1);
	char dotconfig[256], dotairlock[256];
	mkpath(home, ".config", dotconfig);
	mkpath(dotconfig, "airlock", dotairlock);
	snprintf(file, sizeof(file), "%s/config.yaml", dotairlock);
	write_file(file, "version: 1\n", 0644);
	assert_int_equal(cfg_lookup(false, &path, &err), 0);
	assert_string_equal(path, file);
	free(path);
	/* The system file wins over the user's, for everyone. */
	mkpath(etc, "airlock", airlock_etc);
	snprintf(file, sizeof(file), "%s/config.yaml", airlock_etc);
	write_file(file, "version: 1\nlimits: {time: 7s}\n", 0644);
	for (int priv = 0; priv < 2; priv++) {
		assert_int_equal(cfg_lookup(priv, &path, &err), 0);
		assert_string_equal(path, file);
		free(path);
	}
	/* cfg_load reads it (this test's files are the caller's own, so trusted as root too). */
	struct cfg *c = NULL;
	assert_int_equal(cfg_load(NULL, &c, &err), 0);
	assert_string_equal(c->limits.text[CFG_LIM_TIME], "7s");
	assert_string_equal(c->source, file);
	cfg_free(c);
	/* A missing --config file is an error; a broken system file too. */
	snprintf(file, sizeof(file), "%s/missing.yaml", t->dir);
	assert_int_equal(cfg_load(file, &c, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "missing.yaml"));
	snprintf(file, sizeof(file), "%s/config.yaml", airlock_etc);
	write_file(file, "version: 1\nlimits: {time: soon}\n", 0644);
	assert_int_equal(cfg_load(NULL, &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "config.yaml:2:16: limits.time: invalid duration 'soon'"));
	/* A job's load checks a file whole: a broken rule is refused even where no rule is used. */
	write_file(file,
		   "version: 1\nrules:\n  - {name: a, tools: ['*'], risk: LOW, when: [{param: x, matches: 'a('}]}\n",
		   0644);
	assert_int_equal(cfg_load_job(NULL, &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "invalid regex"));
	/* Not a regular file. */
	assert_int_equal(cfg_load(etc, &c, &err), -EINVAL);
	unlink(file);
	unsetenv(CFG_SYSCONFDIR_ENV);
	unsetenv("XDG_CONFIG_HOME");
}

static int open_ro(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static void expect_trust(const char *path, uid_t trusted, int want, const char *fragment)
{
	struct al_error err = {0};
	cleanup_close int fd = open_ro(path);
	int r = cfg_check_trusted(fd, path, trusted, &err);
	if (r != want || (fragment && !strstr(err.msg, fragment)))
		fail_msg("cfg_check_trusted(%s, %u) = %d '%s', want %d '%s'", path, (unsigned)trusted, r, err.msg, want,
			 fragment ? fragment : "");
}

static void test_trusted(void **state)
{
	struct tmp *t = *state;
	uid_t me = getuid();
	char dir[256], file[300];
	mkpath(t->dir, "trust", dir);
	assert_int_equal(chmod(dir, 0755), 0);
	snprintf(file, sizeof(file), "%s/config.yaml", dir);
	write_file(file, "version: 1\n", 0644);
	expect_trust(file, me, 0, NULL);
	/* Writable by group or others: refused, whoever owns it. */
	assert_int_equal(chmod(file, 0664), 0);
	expect_trust(file, me, -EPERM, "the file is writable by group or others (mode 0664)");
	assert_int_equal(chmod(file, 0646), 0);
	expect_trust(file, me, -EPERM, "writable by group or others");
	assert_int_equal(chmod(file, 0644), 0);
	/* Its directory: no sticky exception for the file's own directory. */
	assert_int_equal(chmod(dir, 0777), 0);
	expect_trust(file, me, -EPERM, "directory");
	assert_int_equal(chmod(dir, 01777), 0);
	expect_trust(file, me, -EPERM, "is writable by group or others (mode 1777)");
	assert_int_equal(chmod(dir, 0755), 0);
	/* Above it, a directory anyone may write: refused, unless sticky (like /tmp). */
	char sub[256], deep[300];
	mkpath(dir, "sub", sub);
	snprintf(deep, sizeof(deep), "%s/config.yaml", sub);
	write_file(deep, "version: 1\n", 0644);
	assert_int_equal(chmod(dir, 0777), 0);
	expect_trust(deep, me, -EPERM, "directory");
	assert_int_equal(chmod(dir, 01777), 0);
	expect_trust(deep, me, 0, NULL);
	assert_int_equal(chmod(dir, 0755), 0);
	/* Owned by someone else than root and the trusted uid. */
	if (me == 0) {
		assert_int_equal(chown(file, 65534, 65534), 0);
		expect_trust(file, 0, -EPERM, "belongs to uid 65534");
		assert_int_equal(chown(file, 0, 0), 0);
		/* As root, cfg_load_file applies the check itself. */
		struct cfg *c = NULL;
		struct al_error err = {0};
		assert_int_equal(chmod(file, 0666), 0);
		assert_int_equal(cfg_load_file(file, &c, &err), -EPERM);
		assert_int_equal(chmod(file, 0644), 0);
		assert_int_equal(cfg_load_file(file, &c, &err), 0);
		cfg_free(c);
	} else {
		expect_trust(file, me + 1, -EPERM, "belongs to uid");
	}
	/* Through a symlink: the file it resolves to, and that file's directories, are checked. */
	char link[300];
	snprintf(link, sizeof(link), "%s/link.yaml", t->dir);
	assert_int_equal(symlink(file, link), 0);
	expect_trust(link, me, 0, NULL);
	assert_int_equal(chmod(dir, 0775), 0);
	expect_trust(link, me, -EPERM, "directory");
	assert_int_equal(chmod(dir, 0755), 0);
}

/* Reading: the size bound holds for any descriptor (stdin for `config check -`). */
static void test_read_fd(void **state)
{
	struct tmp *t = *state;
	char file[300];
	snprintf(file, sizeof(file), "%s/big.yaml", t->dir);
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, CFG_MAX_BYTES + 1), 0);
	close(fd);
	cleanup_close int rfd = open_ro(file);
	char *buf = NULL;
	size_t len = 0;
	struct al_error err = {0};
	assert_int_equal(cfg_read_fd(rfd, "big", &buf, &len, &err), -EFBIG);
	assert_null(buf);
	struct cfg *c = NULL;
	assert_int_equal(cfg_load_file(file, &c, &err), -EFBIG);
	assert_non_null(strstr(err.msg, "larger than 1048576 bytes"));
	assert_int_equal(truncate(file, CFG_MAX_BYTES), 0);
	cleanup_close int rfd2 = open_ro(file);
	assert_int_equal(cfg_read_fd(rfd2, "big", &buf, &len, &err), 0);
	assert_int_equal(len, CFG_MAX_BYTES);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_defaults_manager),
		cmocka_unit_test(test_manager_file),
		cmocka_unit_test(test_defaults_match_policy),
		cmocka_unit_test(test_flags_win),
		cmocka_unit_test(test_cgroup_systemd),
		cmocka_unit_test(test_good_files),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_node_merge),
		cmocka_unit_test(test_build_time_defaults),
		cmocka_unit_test(test_key_paths),
		cmocka_unit_test_setup_teardown(test_lookup, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_trusted, setup_tmp, teardown_tmp),
		cmocka_unit_test_setup_teardown(test_read_fd, setup_tmp, teardown_tmp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
