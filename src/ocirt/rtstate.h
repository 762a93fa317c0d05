/* rtstate.h — a container's state directory under the runtime's root: state.json, the exec fifo, the status read from the world. */
#ifndef AL_OCIRT_RTSTATE_H
#define AL_OCIRT_RTSTATE_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "spec.h"

/* What create records once (state.json). */
struct ort_saved {
	const char *id, *bundle, *rootfs, *cgroup, *profile, *verdict, *verdict_dir;
	pid_t pid;
	pid_t keeper; /* the exit status keeper (keeper.c), or 0 */
	json_t *annotations;
	json_t *enforced;
	json_t *hooks; /* config.json's hooks, or NULL */
};

/* A container as read back, with its status now. */
struct ort_loaded {
	char *dir;
	json_t *doc; /* state.json; the strings below point into it */
	const char *bundle, *rootfs, *created, *cgroup, *profile, *verdict, *verdict_dir;
	json_t *annotations, *enforced, *hooks;
	pid_t pid;
	uint64_t start;	  /* the init's start time (ticks): a reused pid is told apart */
	pid_t keeper_pid; /* 0: none recorded */
	uint64_t keeper_start;
	int pidfd;	    /* the init, -1 once it is gone */
	int lock_fd;	    /* the container's directory, flock'ed: -1 once let go */
	const char *status; /* created, running, paused, stopped (static) */
};

/* A valid container id: [A-Za-z0-9][A-Za-z0-9_.+-]*, at most 128 bytes (a directory name). */
bool ort_id_valid(const char *id);
/* Makes <root>/<id> (the root 0700 first); -EEXIST names the id taken. */
int ort_state_mkdir(const char *root, const char *id, char **dir, struct al_error *err);
void ort_state_rmdir(const char *dir);
/* Reads and parses <bundle>/config.json. */
int ort_state_load_spec(const char *bundle, struct ort_spec *s, struct al_error *err);
int ort_state_save(const char *dir, const struct ort_saved *sv, struct al_error *err);
/* -ENOENT: "container ID does not exist". */
int ort_state_open(const char *root, const char *id, struct ort_loaded *st, struct al_error *err);
void ort_loaded_free(struct ort_loaded *st);
/* Lets other operations on the container proceed (exec, while its process runs). */
void ort_state_unlock(struct ort_loaded *st);
/* On delete, before the cgroup goes: the verdict file the annotation asked for, and the audit
 * record's end, with the cgroup's figures and how the process ended (keeper.c). Best effort. */
struct ort_end;
void ort_state_finish(const struct ort_loaded *st, struct ort_end *end);

/* Field 22 of /proc/PID/stat (the start time in ticks) and field 3 (the state letter); -ESRCH. */
int ort_proc_stat(pid_t pid, uint64_t *start, char *state);
/* The wait status of pid, a zombie that started at start, not yet reaped by its parent (field 52 of
 * /proc/PID/stat, the same value the kernel keeps for a pidfd at the reap). -ESRCH: not that
 * zombie; -EACCES: not readable truthfully (not the host's root). */
int ort_zombie_status(pid_t pid, uint64_t start, int *wstatus);
/* A pidfd of pid if it is still the process that started at start (and not a zombie), else -1. */
int ort_pidfd_checked(pid_t pid, uint64_t start);

/* The exec fifo: made and opened read-write by create (held by the init, which then reads it:
 * a read-write open never blocks, and the init is its only reader); `start` opens it for
 * writing without blocking (ENXIO: the init is gone), writes one byte and removes it. */
int ort_fifo_make(const char *dir, int *fd, struct al_error *err);
int ort_fifo_release(const char *dir, struct al_error *err);

#endif
