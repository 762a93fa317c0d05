/* record.c — one audit record as JSON: its time, event, client, parameters reduced (code digested, secrets dropped), decision and result; shrunk to fit a line. Pure. */
#include "audit/audit.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "util/cleanup.h"
#include "util/error.h"
#include "util/text.h"

#define PARAM_DEPTH  16	 /* nesting of reduced parameters; deeper values are replaced */
#define DROPPED_PATH 256 /* "env.API_TOKEN": where a dropped secret sat */

/* jansson's iteration takes non-const objects it never changes; -Wcast-qual wants this spelled out. */
static json_t *unconst(const json_t *j)
{
	return (json_t *)(uintptr_t)j;
}

/* A string from the caller as JSON; bytes that are not UTF-8 (a peer name off the wire) become
 * '?' rather than losing the record. */
static json_t *str_or_null(const char *s)
{
	if (!s)
		return json_null();
	json_t *j = json_string(s);
	if (j)
		return j;
	cleanup_free char *copy = strdup(s);
	for (char *p = copy; p && *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	return copy ? json_string(copy) : NULL;
}

/* Sets key, tracking failure: a NULL value or a failed set clears *ok (the value is consumed). */
static void put(json_t *obj, const char *key, json_t *value, bool *ok)
{
	if (!value || json_object_set_new(obj, key, value) < 0)
		*ok = false;
}

/* ---- secrets ------------------------------------------------------------------------------ */

static bool secret_name(const char *key)
{
	static const char *const words[] = {"token",  "secret",	    "password",	  "passwd", "authorization",
					    "apikey", "credential", "privatekey", "cookie"};
	size_t n = strlen(key), j = 0;
	cleanup_free char *norm = malloc(n + 1);
	if (!norm)
		return true; /* cannot tell: drop it */
	/* "API_KEY", "api-key" and "apiKey" all read "apikey". */
	for (size_t i = 0; i < n; i++)
		if (!strchr("_-. ", key[i]))
			norm[j++] = (char)tolower((unsigned char)key[i]);
	norm[j] = 0;
	for (size_t i = 0; i < AL_ARRAY_SIZE(words); i++)
		if (strstr(norm, words[i]))
			return true;
	return false;
}

/* ---- code: digest and excerpt -------------------------------------------------------------- */

/* The code point at p (valid, shortest-form UTF-8 only), its length, or 0. */
static size_t utf8_next(const unsigned char *p, size_t left, uint32_t *cp)
{
	unsigned char c = p[0];
	size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
	if (n == 0 || n > left)
		return 0;
	uint32_t v = n == 1 ? c : c & (0x7fu >> n);
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (p[i] & 0x3fu);
	}
	static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
	if (v < min[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n;
}

/* Characters that would act on a terminal or reorder what a reviewer sees. */
static bool must_escape(uint32_t cp)
{
	return cp < 0x20 || cp == '\\' || (cp >= 0x7f && cp <= 0x9f) || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

static size_t escape_one(uint32_t cp, char *out)
{
	switch (cp) {
	case '\n':
		return (size_t)sprintf(out, "\\n");
	case '\t':
		return (size_t)sprintf(out, "\\t");
	case '\r':
		return (size_t)sprintf(out, "\\r");
	case '\\':
		return (size_t)sprintf(out, "\\\\");
	default:
		return (size_t)sprintf(out, cp < 0x80 ? "\\x%02x" : "\\u%04x", (unsigned)cp);
	}
}

/* The first AUDIT_EXCERPT_CHARS characters of s, escaped; *more when s goes on. A byte that is
 * not UTF-8 counts as one character and is shown as \xHH. */
static json_t *excerpt(const char *s, size_t len, bool *more)
{
	char out[AUDIT_EXCERPT_CHARS * 8 + 1];
	size_t o = 0, i = 0;
	const unsigned char *p = (const unsigned char *)s;
	for (unsigned chars = 0; i < len && chars < AUDIT_EXCERPT_CHARS; chars++) {
		uint32_t cp = 0;
		size_t n = utf8_next(p + i, len - i, &cp);
		if (n == 0) {
			o += (size_t)sprintf(out + o, "\\x%02x", p[i]);
			i++;
		} else if (must_escape(cp)) {
			o += escape_one(cp, out + o);
			i += n;
		} else {
			memcpy(out + o, p + i, n);
			o += n;
			i += n;
		}
	}
	*more = i < len;
	return json_stringn(out, o);
}

/* {"sha256", "bytes", "excerpt", "truncated"} of a string; other values are digested as their
 * JSON text (a schema violation, but the record must still not hold them whole). */
static json_t *digest(const json_t *v)
{
	cleanup_free char *text = json_is_string(v) ? NULL : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	const char *s = text ? text : json_string_value(v);
	size_t len = text ? strlen(text) : json_string_length(v);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	if (!s || !EVP_Digest(s, len, md, &mdlen, EVP_sha256(), NULL))
		return NULL;
	char hex[2 * EVP_MAX_MD_SIZE + 1];
	for (unsigned i = 0; i < mdlen; i++)
		sprintf(hex + 2 * (size_t)i, "%02x", md[i]);
	bool more = false, ok = true;
	json_t *o = json_object();
	put(o, "sha256", json_string(hex), &ok);
	put(o, "bytes", json_integer((json_int_t)len), &ok);
	put(o, "excerpt", excerpt(s, len, &more), &ok);
	put(o, "truncated", json_boolean(more), &ok);
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* ---- parameters ---------------------------------------------------------------------------- */

static json_t *reduce(const json_t *v, const char *path, int depth, json_t *dropped);

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by PARAM_DEPTH */
static json_t *reduce_object(const json_t *v, const char *path, int depth, json_t *dropped)
{
	json_t *o = json_object();
	const char *key;
	json_t *item;
	bool ok = o != NULL;
	json_object_foreach(unconst(v), key, item) {
		char sub[DROPPED_PATH];
		snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", key);
		if (secret_name(key)) {
			if (dropped && json_array_append_new(dropped, str_or_null(sub)) < 0)
				ok = false;
			continue;
		}
		/* Only the tools' own top-level code and file body are digested. */
		bool bulky = depth == 0 && (strcmp(key, "code") == 0 || strcmp(key, "content") == 0);
		put(o, key, bulky ? digest(item) : reduce(item, sub, depth + 1, dropped), &ok);
	}
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* NOLINTNEXTLINE(misc-no-recursion): depth is bounded by PARAM_DEPTH */
static json_t *reduce(const json_t *v, const char *path, int depth, json_t *dropped)
{
	if (depth > PARAM_DEPTH)
		return json_string("(nested too deep)");
	if (json_is_object(v))
		return reduce_object(v, path, depth, dropped);
	if (!json_is_array(v))
		return json_deep_copy(v);
	json_t *a = json_array();
	for (size_t i = 0; a && i < json_array_size(v); i++)
		if (json_array_append_new(a, reduce(json_array_get(v, i), path, depth + 1, dropped)) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

json_t *audit_params(const json_t *params, json_t **dropped)
{
	json_t *names = json_array();
	json_t *out = names && params ? reduce(params, "", 0, names) : names ? json_object() : NULL;
	if (dropped && out)
		*dropped = names;
	else
		json_decref(names);
	return out;
}

/* ---- the record ----------------------------------------------------------------------------- */

/* RFC 3339, UTC, milliseconds: "2025-01-31T12:00:00.123Z"; a zero time is now. */
static void format_time(struct timespec t, char out[TXT_RFC3339_MAX])
{
	if (t.tv_sec == 0 && t.tv_nsec == 0)
		clock_gettime(CLOCK_REALTIME, &t);
	txt_rfc3339(t, 3, out);
}

static json_t *risk_json(const struct risk_decision *d)
{
	if (!d)
		return json_null();
	return json_pack("{s:s, s:s, s:b, s:b}", "level", cfg_risk_name(d->level), "rule", d->rule ? d->rule : "",
			 "needs_approval", d->needs_approval, "undecided", d->undecided);
}

static json_t *approval_json(const struct audit_record *rec)
{
	static const char *const decisions[] = {
		[AUDIT_NOT_DECIDED] = "none", [AUDIT_APPROVED] = "approved", [AUDIT_DENIED] = "denied"};
	bool decided = rec->decision == AUDIT_APPROVED || rec->decision == AUDIT_DENIED;
	json_t *o = json_object();
	bool ok = o != NULL;
	put(o, "decision", json_string(decided ? decisions[rec->decision] : decisions[AUDIT_NOT_DECIDED]), &ok);
	put(o, "by", decided ? json_string(approval_by_name(rec->by)) : json_null(), &ok);
	put(o, "approver", str_or_null(decided ? rec->approver : NULL), &ok);
	if (!ok)
		json_decref(o);
	return ok ? o : NULL;
}

static json_t *copy_or_null(const json_t *v)
{
	return v ? json_deep_copy(v) : json_null();
}

static const char *const event_names[] = {
	[AUDIT_EVENT_CALL] = "call", [AUDIT_EVENT_START] = "start", [AUDIT_EVENT_END] = "end"};

int audit_record_json(const struct audit_record *rec, json_t **out, struct al_error *err)
{
	char when[TXT_RFC3339_MAX];
	format_time(rec->time, when);
	json_t *o = json_object(), *dropped = NULL;
	bool ok = o != NULL;
	bool paired = rec->event == AUDIT_EVENT_START || rec->event == AUDIT_EVENT_END;
	put(o, "time", json_string(when), &ok);
	put(o, "event", json_string(event_names[paired ? rec->event : AUDIT_EVENT_CALL]), &ok);
	if (paired)
		put(o, "call_id", str_or_null(rec->call_id), &ok);
	json_t *client = json_pack("{s:o, s:o, s:o}", "transport", str_or_null(rec->transport), "peer",
				   str_or_null(rec->peer), "principal", str_or_null(rec->principal));
	/* Only in the records of an approver's call on another principal's sandbox (the console's
	 * destroy): the one who acted stays `principal`, the owner it acted for is named beside it. */
	if (client && rec->on_behalf_of &&
	    json_object_set_new(client, "on_behalf_of", json_string(rec->on_behalf_of)) < 0) {
		json_decref(client);
		client = NULL;
	}
	put(o, "client", client, &ok);
	put(o, "sandbox", str_or_null(rec->sandbox), &ok);
	put(o, "tool", str_or_null(rec->tool), &ok);
	put(o, "params", audit_params(rec->params, &dropped), &ok);
	if (dropped && json_array_size(dropped))
		put(o, "params_dropped", dropped, &ok);
	else
		json_decref(dropped);
	put(o, "risk", risk_json(rec->risk), &ok);
	put(o, "approval", approval_json(rec), &ok);
	json_t *result = json_pack("{s:o, s:I}", "status", str_or_null(rec->status), "duration_ms",
				   (json_int_t)rec->duration_ms);
	/* Only when true: the records of every other call keep the shape readers already know. */
	if (result && rec->client_left && json_object_set_new(result, "client_left", json_true()) < 0) {
		json_decref(result);
		result = NULL;
	}
	put(o, "result", result, &ok);
	put(o, "resources", copy_or_null(rec->resources), &ok);
	put(o, "proxy", copy_or_null(rec->proxy), &ok);
	if (!ok) {
		json_decref(o);
		return al_err(err, ENOMEM, "audit: out of memory");
	}
	*out = o;
	return 0;
}

/* ---- records that must fit one line --------------------------------------------------------- */

static size_t compact_len(const json_t *j)
{
	cleanup_free char *text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	return text ? strlen(text) : SIZE_MAX;
}

int audit_shrink(json_t *rec, size_t max)
{
	static const char *const bulky[] = {"params", "proxy", "resources"};
	json_t *names = NULL;
	size_t len = compact_len(rec);
	for (size_t i = 0; i < AL_ARRAY_SIZE(bulky) && len != SIZE_MAX && len + 1 > max; i++) {
		const json_t *v = json_object_get(rec, bulky[i]);
		if (!v || json_is_null(v))
			continue;
		/* The digest still proves what the field held; only its text is given up. */
		json_t *d = digest(v);
		if (!names && !(names = json_array())) {
			json_decref(d);
			return -ENOMEM;
		}
		if (!d || json_object_set_new(rec, bulky[i], d) < 0 ||
		    json_array_append_new(names, json_string(bulky[i])) < 0 ||
		    json_object_set(rec, "truncated", names) < 0) {
			json_decref(names);
			return -ENOMEM;
		}
		len = compact_len(rec);
	}
	json_decref(names);
	return len == SIZE_MAX ? -ENOMEM : len + 1 > max ? -E2BIG : 0;
}

json_t *audit_repair_json(const struct audit_tail *t, uint64_t at)
{
	char when[TXT_RFC3339_MAX];
	format_time((struct timespec){0, 0}, when);
	return json_pack("{s:s, s:s, s:{s:I, s:I, s:s}}", "time", when, "event", "repair", "repair", "offset",
			 (json_int_t)at, "bytes", (json_int_t)t->bytes, "kind",
			 t->kind == AUDIT_TAIL_UNTERMINATED ? "unterminated" : "invalid");
}

json_t *audit_recovered_json(json_t *ids)
{
	char when[TXT_RFC3339_MAX];
	format_time((struct timespec){0, 0}, when);
	return ids ? json_pack("{s:s, s:s, s:o}", "time", when, "event", "recovered", "unfinished", ids) : NULL;
}
