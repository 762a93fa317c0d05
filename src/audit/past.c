/* past.c — what a server's audit log says of its predecessors: calls that started and never ended (a crash), and the sandboxes they left. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit.h"
#include "util/cleanup.h"
#include "util/error.h"

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* One record: a start opens its call, an end closes it, a "recovered" record closes every call
 * before it (a predecessor named them already). A sandbox named by a record is remembered with the
 * principal of the call, until a destroy of it succeeded. */
static int on_record(json_t *rec, const char *line, size_t len, void *data)
{
	(void)line;
	(void)len;
	struct audit_past *p = data;
	const char *event = str(rec, "event"), *id = str(rec, "call_id"), *sb = str(rec, "sandbox");
	const char *who = str(json_object_get(rec, "client"), "principal"), *tool = str(rec, "tool");
	int r = 0;
	if (event && strcmp(event, "recovered") == 0)
		r = json_object_clear(p->open);
	else if (event && id && strcmp(event, "start") == 0)
		r = json_object_set_new(p->open, id, json_true());
	else if (event && id && strcmp(event, "end") == 0)
		(void)json_object_del(p->open, id);
	const char *status = str(json_object_get(rec, "result"), "status");
	bool destroyed = tool && strcmp(tool, "code_destroy_sandbox") == 0 && status && strcmp(status, "ok") == 0;
	if (r == 0 && sb && destroyed)
		(void)json_object_del(p->sandboxes, sb);
	else if (r == 0 && sb && !json_object_get(p->sandboxes, sb))
		r = json_object_set_new(p->sandboxes, sb, json_string(who ? who : ""));
	return r < 0 ? -ENOMEM : 0;
}

int audit_past_read(const char *path, struct audit_past *out, struct al_error *err)
{
	out->open = json_object();
	out->sandboxes = json_object();
	if (!out->open || !out->sandboxes) {
		audit_past_free(out);
		return al_err(err, ENOMEM, "audit: out of memory");
	}
	cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 0 : al_err_sys(err, errno, "audit: reading %s", path);
	struct audit_read_stats st;
	int r = audit_read(fd, on_record, out, &st, err);
	if (r < 0)
		audit_past_free(out);
	return r < 0 ? r : 0;
}

void audit_past_free(struct audit_past *p)
{
	json_decref(p->open);
	json_decref(p->sandboxes);
	p->open = p->sandboxes = NULL;
}

int audit_write_recovered(struct audit_log *l, const struct audit_past *p, struct al_error *err)
{
	if (!p->open || json_object_size(p->open) == 0)
		return 0;
	json_t *ids = json_array();
	const char *id;
	json_t *v;
	json_object_foreach(p->open, id, v) {
		if (json_array_append_new(ids, json_string(id)) < 0)
			break;
	}
	json_t *rec = audit_recovered_json(ids);
	int r = rec ? audit_write_json(l, rec, err) : al_err(err, ENOMEM, "audit: out of memory");
	json_decref(rec);
	return r;
}
