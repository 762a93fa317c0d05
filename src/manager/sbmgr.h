/* sbmgr.h — the sandbox manager behind airlock serve and airlock mcp: held sandboxes by id, execs on
 * worker threads, the workspace file API, limits and expiry. It implements the srv_mgr_api table
 * (manager/api.h) that the MCP session and the HTTP API drive. */
#ifndef AL_MANAGER_SBMGR_H
#define AL_MANAGER_SBMGR_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/airlock.h"
#include "config/config.h"
#include "manager/api.h"

struct sbm_opts {
	size_t size;		     /* sizeof(struct sbm_opts) */
	const struct cfg *cfg;	     /* borrowed: profiles, languages, registries, limits, server section */
	const char *default_profile; /* NULL: untrusted-code-read */
	const json_t *lost;	     /* borrowed, or NULL: sandbox id -> owner, of a server before us */
	/* A state directory (persist.h): clients' sandboxes are kept there, a stop of the server keeps
	 * them and the next one with the same directory brings them back. NULL: they end with us. */
	const char *state_dir;
};

struct sbm_stats {
	uint64_t live, pooled, paused, created, destroyed, expired;
	uint64_t execs_running;
};

struct sbm;

int sbm_new(const struct sbm_opts *o, struct sbm **out, struct al_error *err);
/* Ends every sandbox (waits for running operations to end, killing their processes): with a state
 * directory each is kept there (a last sync), else destroyed. */
void sbm_free(struct sbm *m);
/* The operation table for the MCP session / HTTP front end (ctx = m). */
void sbm_api(struct sbm *m, struct srv_mgr_api *api);
void sbm_stats(struct sbm *m, struct sbm_stats *st);
/* Every principal's sandboxes (spares left out), for the approver's console: [{id, owner, profile,
 * network, hosts, age_ms, idle_ms, exec_running, cpu_s, memory_bytes, peak_memory_bytes, state,
 * kept, disk_bytes, stored_bytes, layered}] (usage from the sandbox's cgroup, null when unknown;
 * stored_bytes: its files in the state directory, null when not kept). NULL on ENOMEM. */
json_t *sbm_list_all(struct sbm *m);
/* The owner of listed sandbox id (malloc'd), or NULL (unknown, or out of memory): a walk of the
 * list, nothing read from a cgroup, for a check made on every request (E2B's access tokens). */
char *sbm_owner_of(struct sbm *m, const char *id);
/* Every principal's snapshots, for the approver's console: [{snapshot_id, name, owner, sandbox_id,
 * bytes, entries, created_unix_ms, profile}]; empty without a state directory. NULL on ENOMEM. */
json_t *sbm_snapshots_all(struct sbm *m);

#endif
