/* rtstate.h — a container's state directory under the runtime's root: state.json, the exec fifo, the status read from the world. */
#ifndef AL_OCIRT_RTSTATE_H
#define AL_OCIRT_RTSTATE_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

#include "spec.h"

/* What create records once (state.json). */
struct ort_saved {
	const char *id, *bundle, *rootfs, *cgroup, *profile, *verdict;
	pid_t pid;
	json_t *annotations;
	json_t *enforced;
};

/* A container as read back, with its status now. */
struct ort_loaded {
	char *dir;
	json_t *doc; /* state.json; the strings below point into it */
	const char *bundle, *rootfs, *created, *cgroup, *profile, *verdict;
	json_t *annotations, *enforced;
	pid_t pid;
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
 * record's end, with the cgroup's figures. status: stopped, or killed (a forced delete). Best effort. */
void ort_state_finish(const struct ort_loaded *st, const char *status);

/* The exec fifo: made and opened read-write by create (held by the init, which then reads it:
 * a read-write open never blocks, and the init is its only reader); `start` opens it for
 * writing without blocking (ENXIO: the init is gone), writes one byte and removes it. */
int ort_fifo_make(const char *dir, int *fd, struct al_error *err);
int ort_fifo_release(const char *dir, struct al_error *err);

#endif
