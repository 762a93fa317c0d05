/* sblist.c — listings of held sandboxes: a principal's own (the sandboxes tool, GET /v1/sandboxes)
 * and every principal's for the approver's console, with usage from each sandbox's cgroup. */
#include "manager/sbmint.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/policy.h"
#include "util/error.h"

/* The monotonic stamps of the table, on the wall clock (what a client can read). */
static uint64_t unix_ms(uint64_t mono_ms, uint64_t mono_now, uint64_t wall_now)
{
	return wall_now - (mono_now >= mono_ms ? mono_now - mono_ms : 0);
}

/* Only owner's listed sandboxes: a spare (owner "") or another principal's never shows. */
int sbm_list_sandboxes(void *ctx, const char *owner, struct srv_sandbox_info **out, size_t *n, struct al_error *err)
{
	struct sbm *m = ctx;
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	uint64_t wall_now = (uint64_t)wall.tv_sec * 1000 + (uint64_t)wall.tv_nsec / 1000000, mono_now = sbm_now_ms();
	const char *who = owner ? owner : "";
	pthread_mutex_lock(&m->mu);
	size_t k = 0, cap = m->live ? m->live : 1;
	struct srv_sandbox_info *v = calloc(cap, sizeof(*v));
	for (struct sbx *s = m->list; v && s && k < cap; s = s->next) {
		if (s->pooled || strcmp(s->owner, who) != 0)
			continue;
		snprintf(v[k].id, sizeof(v[k].id), "%s", s->id);
		snprintf(v[k].profile, sizeof(v[k].profile), "%s", s->profile);
		v[k].created_unix_ms = unix_ms(s->created_ms, mono_now, wall_now);
		v[k].used_unix_ms = unix_ms(s->used_ms, mono_now, wall_now);
		v[k].busy = s->busy;
		k++;
	}
	pthread_mutex_unlock(&m->mu);
	if (!v)
		return al_err(err, ENOMEM, "out of memory");
	*out = v;
	*n = k;
	return 0;
}

/* One sandbox as the approver's console shows it. Call with m->mu held: s stays listed, and its
 * cgroup and its two /proc network tables are only read (a few small files). */
static json_t *sbx_json(struct sbx *s, uint64_t now)
{
	struct al_sandbox_usage u;
	bool have = al_sandbox_usage(s->sb, &u) == 0;
	json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:o,s:s,s:s,s:I,s:I,s:b,s:o,s:o,s:o}", "id", s->id, "owner", s->owner,
			 "profile", s->profile ? s->profile : "", "image", s->image[0] ? s->image : "host",
			 "image_digest", s->image_digest[0] ? json_string(s->image_digest) : json_null(), "network",
			 pol_net_name(s->net), "hosts", s->net_hosts ? s->net_hosts : "", "age_ms",
			 (json_int_t)(now - s->created_ms), "idle_ms", (json_int_t)(now - s->used_ms), "exec_running",
			 s->busy, "cpu_s", have && u.cpu_s >= 0 ? json_real(u.cpu_s) : json_null(), "memory_bytes",
			 have && u.memory_bytes ? json_integer((json_int_t)u.memory_bytes) : json_null(),
			 "peak_memory_bytes",
			 have && u.peak_memory_bytes ? json_integer((json_int_t)u.peak_memory_bytes) : json_null());
	json_t *ports = o ? sbm_ports_json(s) : NULL;
	if (ports)
		json_object_set_new(o, "ports", ports);
	return o;
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
