/* sblist.c — listings of held sandboxes: a principal's own (the sandboxes tool, GET /v1/sandboxes)
 * and every principal's for the approver's console, with usage from each sandbox's cgroup. */
#include "manager/sbmint.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manager/persist.h"
#include "network/secrets.h"
#include "policy/policy.h"
#include "util/error.h"

/* Under m->mu: s as its owner sees it (GET /v1/sandboxes and /v1/sandboxes/{id}). Its cgroup is
 * only read (a few small files), as the console's listing does. 0, or -ENOMEM. */
static int info_locked(const struct sbm *m, const struct sbx *s, struct srv_sandbox_info *i)
{
	memset(i, 0, sizeof(*i));
	snprintf(i->id, sizeof(i->id), "%s", s->id);
	snprintf(i->profile, sizeof(i->profile), "%s", s->profile);
	snprintf(i->state, sizeof(i->state), "%s", s->paused ? "paused" : "running");
	i->paused_unix_ms = s->paused ? sbm_wall_ms(m, s->paused_ms) : 0;
	snprintf(i->paused_by, sizeof(i->paused_by), "%s", s->paused ? s->paused_by : "");
	i->auto_pause = s->auto_pause;
	snprintf(i->image, sizeof(i->image), "%s", s->image[0] ? s->image : "host");
	snprintf(i->image_digest, sizeof(i->image_digest), "%s", s->image_digest);
	snprintf(i->network, sizeof(i->network), "%s", pol_net_name(s->net));
	i->created_unix_ms = sbm_wall_ms(m, s->created_ms);
	i->used_unix_ms = sbm_wall_ms(m, s->used_ms);
	uint64_t ends = life_ends_locked(m, s);
	i->ends_unix_ms = ends ? sbm_wall_ms(m, ends) : 0;
	i->busy = s->nrun > 0;
	i->processes = sbm_running_in(s);
	struct al_sandbox_usage u;
	if (s->sb && al_sandbox_usage(s->sb, &u) == 0) { /* paused to disk: nothing runs, nothing used */
		i->have_usage = true;
		i->cpu_s = u.cpu_s;
		i->memory_bytes = u.memory_bytes;
		i->peak_memory_bytes = u.peak_memory_bytes;
	}
	i->metadata_json = strdup(s->meta_json ? s->meta_json : "{}");
	return i->metadata_json ? 0 : -ENOMEM;
}

/* Only owner's listed sandboxes: a spare (owner "") or another principal's never shows. */
int sbm_list_sandboxes(void *ctx, const char *owner, struct srv_sandbox_info **out, size_t *n, struct al_error *err)
{
	struct sbm *m = ctx;
	const char *who = owner ? owner : "";
	int r = 0;
	pthread_mutex_lock(&m->mu);
	size_t k = 0, cap = m->live ? m->live : 1;
	struct srv_sandbox_info *v = calloc(cap, sizeof(*v));
	for (struct sbx *s = m->list; v && r == 0 && s && k < cap; s = s->next) {
		if (s->pooled || strcmp(s->owner, who) != 0)
			continue;
		r = info_locked(m, s, &v[k++]);
	}
	pthread_mutex_unlock(&m->mu);
	if (!v || r < 0) {
		srv_sandbox_infos_free(v, k);
		free(v);
		return al_err(err, ENOMEM, "out of memory");
	}
	*out = v;
	*n = k;
	return 0;
}

/* A look is not a use: the sandbox is found under the lock, without a reference, so reading its
 * info never holds off its idle_ttl. */
int sbm_sandbox_info(void *ctx, const char *owner, const char *id, struct srv_sandbox_info *out, struct al_error *err)
{
	struct sbm *m = ctx;
	const char *who = owner ? owner : "";
	int r = -ENOENT;
	pthread_mutex_lock(&m->mu);
	struct sbx *s = m->list;
	/* The ownership check: another principal's id is answered as an unknown one. */
	while (s && (s->pooled || strcmp(s->id, id) != 0 || strcmp(s->owner, who) != 0))
		s = s->next;
	if (s)
		r = info_locked(m, s, out);
	pthread_mutex_unlock(&m->mu);
	if (r == -ENOENT) {
		/* sbx_get's words for an id that is not there (ended lately, lost, unknown). */
		struct sbx *late = sbx_get(m, id, owner, err);
		if (late) {
			sbx_put(m, late);
			al_err(err, ENOENT, "no sandbox \"%s\" (never created, destroyed, or expired)", id);
		}
		return -ENOENT;
	}
	if (r < 0) {
		srv_sandbox_infos_free(out, 1);
		return al_err(err, ENOMEM, "out of memory");
	}
	return 0;
}

/* One sandbox as the approver's console shows it. Call with m->mu held: s stays listed, and its
 * cgroup and its two /proc network tables are only read (a few small files). */
static json_t *sbx_json(struct sbx *s, uint64_t now)
{
	struct al_sandbox_usage u;
	bool have = s->sb && al_sandbox_usage(s->sb, &u) == 0;
	json_t *o = json_pack(
		"{s:s,s:s,s:s,s:s,s:o,s:s,s:s,s:I,s:I,s:b,s:o,s:o,s:o}", "id", s->id, "owner", s->owner, "profile",
		s->profile ? s->profile : "", "image", s->image[0] ? s->image : "host", "image_digest",
		s->image_digest[0] ? json_string(s->image_digest) : json_null(), "network", pol_net_name(s->net),
		"hosts", s->net_hosts ? s->net_hosts : "", "age_ms", (json_int_t)(now - s->created_ms), "idle_ms",
		(json_int_t)(now - s->used_ms), "exec_running", s->nrun > 0, "cpu_s",
		have && u.cpu_s >= 0 ? json_real(u.cpu_s) : json_null(), "memory_bytes",
		have && u.memory_bytes ? json_integer((json_int_t)u.memory_bytes) : json_null(), "peak_memory_bytes",
		have && u.peak_memory_bytes ? json_integer((json_int_t)u.peak_memory_bytes) : json_null());
	json_t *ports = o && s->sb ? sbm_ports_json(s) : NULL;
	if (ports)
		json_object_set_new(o, "ports", ports);
	/* The variables its secrets fill, by name: what an approver may know (never a value, nor the
	 * placeholder a job could pass off as its own). */
	json_t *names = o && al_secrets_count(s->secrets) ? json_array() : NULL;
	for (size_t i = 0; names && i < al_secrets_count(s->secrets); i++)
		json_array_append_new(names, json_string(al_secret_name(s->secrets, i)));
	if (names)
		json_object_set_new(o, "secrets", names);
	if (o &&
	    (json_object_set_new(o, "state", json_string(s->paused ? "paused" : "running")) < 0 ||
	     json_object_set_new(o, "paused_ms",
				 s->paused ? json_integer((json_int_t)(now > s->paused_ms ? now - s->paused_ms : 0))
					   : json_null()) < 0 ||
	     json_object_set_new(o, "paused_by", s->paused ? json_string(s->paused_by) : json_null()) < 0 ||
	     /* Kept: its files are in the state directory and outlive the server (sbpersist.c). */
	     json_object_set_new(o, "kept", json_boolean(s->box != NULL)) < 0 ||
	     json_object_set_new(o, "disk_bytes", json_integer((json_int_t)s->disk_bytes)) < 0 ||
	     json_object_set_new(o, "stored_bytes",
				 s->box ? json_integer((json_int_t)pst_box_stored(s->box)) : json_null()) < 0 ||
	     json_object_set_new(o, "layered", json_boolean(s->layers != NULL)) < 0 ||
	     json_object_set_new(o, "on_disk", json_boolean(s->on_disk)) < 0)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

char *sbm_owner_of(struct sbm *m, const char *id)
{
	char *owner = NULL;
	pthread_mutex_lock(&m->mu);
	struct sbx *s = m->list;
	while (s && (s->pooled || !s->listed || strcmp(s->id, id) != 0))
		s = s->next;
	if (s)
		owner = strdup(s->owner);
	pthread_mutex_unlock(&m->mu);
	return owner;
}

json_t *sbm_list_all(struct sbm *m)
{
	json_t *list = json_array();
	uint64_t now = sbm_now_ms();
	pthread_mutex_lock(&m->mu);
	for (struct sbx *s = m->list; list && s; s = s->next) {
		if (s->pooled || !s->listed)
			continue;
		if (json_array_append_new(list, sbx_json(s, now)) < 0) {
			json_decref(list);
			list = NULL;
		}
	}
	pthread_mutex_unlock(&m->mu);
	return list;
}
