/* tlcheck.c — what the tools' arguments must be beyond their JSON Schemas (tools.c): a network
 * only with its domains, package specs that cannot be options, base64 that decodes, no NUL in
 * a path or code, a file action's own fields, a terminal only in the background, labels. */
#include "service/tools.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/cleanup.h"
#include "util/error.h"
#include "util/text.h"

/* Allowed domains without network would read as "network to these hosts" and give none. */
static int check_network(const json_t *args, char *msg)
{
	if (json_array_size(json_object_get(args, "allowed_domains")) && !tl_flag_arg(args, "network_enabled")) {
		snprintf(msg, SCH_MSG_MAX, "allowed_domains: needs \"network_enabled\": true");
		return -EINVAL;
	}
	return 0;
}

/* A spec starting with '-' would be read by pip or npm as an option (--index-url=..., a
 * different registry): refuse it here, whatever the manager does later. */
static int check_packages(const json_t *args, char *msg)
{
	size_t i;
	const json_t *p;
	json_array_foreach(json_object_get(args, "packages"), i, p) {
		const char *s = json_string_value(p);
		if (s[0] == '-') {
			snprintf(msg, SCH_MSG_MAX, "packages[%zu]: a package spec cannot start with '-'", i);
			return -EINVAL;
		}
		for (const char *c = s; *c; c++)
			if ((unsigned char)*c <= ' ' || *c == 0x7f) {
				snprintf(msg, SCH_MSG_MAX, "packages[%zu]: no spaces or control characters", i);
				return -EINVAL;
			}
	}
	return 0;
}

static int check_content(const json_t *args, char *msg)
{
	const char *enc = tl_str_arg(args, "encoding");
	if (!enc || strcmp(enc, "base64") != 0)
		return 0;
	const json_t *c = json_object_get(args, "content");
	unsigned char *bytes = NULL;
	long n = txt_base64_decode(json_string_value(c), json_string_length(c), &bytes);
	free(bytes);
	if (n == -EINVAL) {
		snprintf(msg, SCH_MSG_MAX, "content: not valid base64 (RFC 4648, padded, no whitespace)");
		return -EINVAL;
	}
	return n < 0 ? (int)n : 0;
}

/* JSON strings may hold \u0000; the manager takes C strings, which would end there ("config.py\u0000.txt"
 * would write config.py): refuse such a path or id rather than act on a shorter one. */
static int check_nul(const json_t *args, char *msg)
{
	static const char *const names[] = {"path", "sandbox_id"};
	for (size_t i = 0; i < AL_ARRAY_SIZE(names); i++) {
		const json_t *v = json_object_get(args, names[i]);
		if (json_is_string(v) && strlen(json_string_value(v)) != json_string_length(v)) {
			snprintf(msg, SCH_MSG_MAX, "%s: a NUL character is not allowed", names[i]);
			return -EINVAL;
		}
	}
	return 0;
}

/* Each of code_file's optional arguments belongs to one action. */
static int check_file(const json_t *args, char *msg)
{
	static const struct {
		const char *key, *action;
	} only[] = {{"to", "move"}, {"overwrite", "move"}, {"recursive", "remove"}};
	const char *action = tl_str_arg(args, "action");
	for (size_t i = 0; i < AL_ARRAY_SIZE(only); i++)
		if (json_object_get(args, only[i].key) && strcmp(action, only[i].action) != 0) {
			snprintf(msg, SCH_MSG_MAX, "%s: only with \"action\": \"%s\"", only[i].key, only[i].action);
			return -EINVAL;
		}
	if (strcmp(action, "move") == 0 && !json_object_get(args, "to")) {
		snprintf(msg, SCH_MSG_MAX, "to: required with \"action\": \"move\"");
		return -EINVAL;
	}
	const json_t *to = json_object_get(args, "to");
	if (to && strlen(json_string_value(to)) != json_string_length(to)) {
		snprintf(msg, SCH_MSG_MAX, "to: a NUL character is not allowed");
		return -EINVAL;
	}
	return 0;
}

/* A terminal session is a background process: "background": false beside "pty" contradicts it. */
static int check_pty(const json_t *args, char *msg)
{
	if (json_object_get(args, "pty") && json_is_false(json_object_get(args, "background"))) {
		snprintf(msg, SCH_MSG_MAX,
			 "pty: a terminal session is a background process (drop \"background\": false)");
		return -EINVAL;
	}
	return 0;
}

/* What the schema cannot say of metadata: a key's characters, a value's bytes (the schema counts
 * characters) and no NUL (the manager takes C strings). */
static int check_metadata(const json_t *args, char *msg)
{
	const char *key;
	const json_t *v;
	json_t *meta = json_object_get(args, "metadata");
	json_object_foreach(meta, key, v) {
		size_t n = strlen(key);
		if (strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/") != n) {
			snprintf(msg, SCH_MSG_MAX, "metadata: key \"%.64s\" may hold only A-Z a-z 0-9 . _ - /", key);
			return -EINVAL;
		}
		if (json_string_length(v) > SRV_META_VALUE_MAX ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			snprintf(msg, SCH_MSG_MAX,
				 "metadata: the value of \"%s\" must be at most %d bytes, without NUL", key,
				 SRV_META_VALUE_MAX);
			return -EINVAL;
		}
	}
	return 0;
}

int tl_check_args(const struct tl_catalog *c, enum tl_id id, const json_t *args, char msg[SCH_MSG_MAX])
{
	int r = sch_validate(c->input[id], args, msg);
	if (r == 0)
		r = check_nul(args, msg);
	if (r < 0)
		return r;
	switch (id) {
	case TL_EXECUTE:
		return check_network(args, msg) ?: check_pty(args, msg);
	case TL_CREATE_SANDBOX:
		return check_network(args, msg) ?: check_metadata(args, msg);
	case TL_INSTALL_PACKAGE:
		return check_packages(args, msg);
	case TL_WRITE_FILE:
		return check_content(args, msg);
	case TL_FILE:
		return check_file(args, msg);
	case TL_FORK:
	case TL_SNAPSHOT:
		return check_metadata(args, msg);
	case TL_UPLOAD:
	case TL_READ_FILE:
	case TL_LIST_FILES:
	case TL_DESTROY_SANDBOX:
	case TL_CONTEXT:
	case TL_PROCESS:
	case TL_SET_TIMEOUT:
	case TL_WATCH:
	case TL_PAUSE:
	case TL_RESUME:
	case TL_LIST_SNAPSHOTS:
	case TL_DELETE_SNAPSHOT:
	case TL__COUNT:
		break;
	}
	return 0;
}
