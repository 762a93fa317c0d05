/* runtime.h — airlock-runc's operations on containers kept under a state root (the OCI runtime's lifecycle). */
#ifndef AL_OCIRT_RUNTIME_H
#define AL_OCIRT_RUNTIME_H

#include <stdbool.h>
#include <sys/types.h>

#include "airlock/airlock.h"

#define ORT_DEFAULT_ROOT "/run/airlock-runc"

/* Each call returns 0 or -errno with err saying why; -ENOENT: no such container. */
struct ort_ctx {
	const char *root; /* state root (--root) */
	/* What fails without failing the operation (a poststart or poststop hook, as the spec has
	 * it): the front end reports it; NULL: dropped. */
	void (*warn)(const char *msg);
};

struct ort_create_opts {
	const char *bundle;	    /* absolute */
	const char *pid_file;	    /* or NULL */
	const char *console_socket; /* or NULL */
};
int ort_create(const struct ort_ctx *c, const char *id, const struct ort_create_opts *o, struct al_error *err);
int ort_start(const struct ort_ctx *c, const char *id, struct al_error *err);
/* The OCI state JSON (malloc'd). */
int ort_state(const struct ort_ctx *c, const char *id, char **json, struct al_error *err);
/* The status word alone: creating, created, running, paused, stopped. */
int ort_status(const struct ort_ctx *c, const char *id, const char **status, pid_t *pid, struct al_error *err);
int ort_kill(const struct ort_ctx *c, const char *id, int sig, bool all, struct al_error *err);
int ort_delete(const struct ort_ctx *c, const char *id, bool force, struct al_error *err);
int ort_pause(const struct ort_ctx *c, const char *id, bool pause, struct al_error *err);
/* The container's processes (host pids, malloc'd). */
int ort_ps(const struct ort_ctx *c, const char *id, pid_t **pids, size_t *n, struct al_error *err);
/* runc's `events --stats` object (malloc'd JSON). */
int ort_stats(const struct ort_ctx *c, const char *id, char **json, struct al_error *err);
/* linux.resources JSON text: the new limits. */
int ort_update(const struct ort_ctx *c, const char *id, const char *resources, struct al_error *err);

struct ort_exec_opts {
	const char *process; /* process.json path */
	bool detach;
	const char *pid_file;
	const char *console_socket;
};
/* Runs a process in the container; without detach, *exit_code is its status (128+N for a signal). */
int ort_exec(const struct ort_ctx *c, const char *id, const struct ort_exec_opts *o, int *exit_code,
	     struct al_error *err);
/* The ids of the containers under the root (malloc'd NULL-terminated vector). */
int ort_list(const struct ort_ctx *c, char ***ids, struct al_error *err);

#endif
