/* hooks.h — config.json's lifecycle hooks: parsed, checked against the profile, run as runc runs them (hooks.c). */
#ifndef AL_OCIRT_HOOKS_H
#define AL_OCIRT_HOOKS_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "airlock/airlock.h"

/* The spec's six points, in the order a container meets them. */
enum ort_hook_point {
	ORT_HOOK_PRESTART,	   /* create, runtime's namespaces, after the mounts, before pivot_root */
	ORT_HOOK_CREATE_RUNTIME,   /* right after prestart, the same place */
	ORT_HOOK_CREATE_CONTAINER, /* create, in the container's namespaces (its init), before pivot_root */
	ORT_HOOK_START_CONTAINER,  /* start, in the container (its init, confined), before the process runs */
	ORT_HOOK_POSTSTART,	   /* start, runtime's namespaces, once the process runs */
	ORT_HOOK_POSTSTOP,	   /* delete, runtime's namespaces, once the container is gone */
	ORT_HOOK__COUNT
};

struct ort_hook {
	char *path;  /* absolute */
	char **argv; /* NULL-terminated; the hook's args, or {path} when it gives none (as Go's exec does) */
	char **envp; /* NULL-terminated, or NULL: the runtime's own environment (as runc's) */
	int timeout; /* seconds, 0: none */
};

struct ort_hooks {
	struct ort_hook *v[ORT_HOOK__COUNT];
	size_t n[ORT_HOOK__COUNT];
};

/* The point's name in config.json ("createRuntime"). */
const char *ort_hook_name(enum ort_hook_point p);
/* config.json's hooks object (NULL: none) into *h. Pure. 0 or -errno with err naming the field;
 * on failure *h holds nothing to free. */
int ort_hooks_parse(json_t *j, struct ort_hooks *h, struct al_error *err);
void ort_hooks_free(struct ort_hooks *h);
bool ort_hooks_any(const struct ort_hooks *h, enum ort_hook_point first, enum ort_hook_point last);

/* Under a confined profile, refuses a hook that would run one of the image's own files (its path
 * resolves beneath the rootfs) before or outside the confinement: every point but startContainer,
 * which runs confined inside the container. */
int ort_hooks_check(const struct ort_hooks *h, const char *rootfs, bool confined, const char *profile,
		    struct al_error *err);

/* The OCI state a hook reads on its stdin (malloc'd JSON text, or NULL). */
char *ort_hook_state(const char *id, const char *status, pid_t pid, const char *bundle, json_t *annotations);

/* Runs the point's hooks one after another, as the caller (the runtime's namespaces and ids):
 * the state on stdin, stdout and stderr kept (the first 2 KiB of each) for the error, killed past
 * its timeout. Stops at the first that fails: -errno (ECANCELED for a non-zero exit, ETIMEDOUT)
 * with err saying which hook and what it printed. */
int ort_hooks_run(const struct ort_hooks *h, enum ort_hook_point p, const char *state, struct al_error *err);

/* Child side (the container's init; no allocation): runs the point's hooks with the state read
 * from state_fd (rewound for each) on stdin and the init's stdout and stderr; a hook without env
 * gets fallback_env (the container process's). 0, or the 1-based index of the hook that failed
 * with *why its errno (ETIMEDOUT, ECANCELED for a non-zero exit, else exec's). */
int ort_hooks_run_child(const struct ort_hooks *h, enum ort_hook_point p, int state_fd, char *const *fallback_env,
			int *why);

#endif
