/* occg.h — a container's cgroup at a cgroupsPath in every mounted hierarchy (v1 and v2). */
#ifndef AL_OCIRT_OCCG_H
#define AL_OCIRT_OCCG_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "spec.h"

/* Calls fn for each hierarchy the runtime uses, with path's directory in it. Count or -errno. */
int ort_cg_each(int (*fn)(const char *dir, const char *ctrl, int version, void *arg), void *arg, const char *path);
/* Makes path in each hierarchy (those that exist are kept) and applies res. An asked limit that
 * cannot be applied is an error. Processes join with ort_cg_join. */
int ort_cg_apply(const char *path, const struct ort_resources *res, struct al_error *err);
/* What lets a process join path's cgroups without being moved by pid, which takes the kernel's
 * global cgroup_threadgroup_rwsem and after a quiet moment waits for an RCU grace period (most of
 * a lone create here; cgroup.h says more): the v2 directory, for clone3's CLONE_INTO_CGROUP, and
 * each v1 hierarchy's `tasks`, for the process to write "0" to itself (cg_join_self) before it
 * runs anything. Opened by the caller, whose credentials the kernel checks; the process closes
 * them. Make the cgroups first (ort_cg_apply). */
#define ORT_CG_MAX 16 /* hierarchies: the 8 wanted ones (occg.c), with room for one mounted twice */
struct ort_cg_join {
	int v2; /* -1: no v2 hierarchy */
	int tasks[ORT_CG_MAX];
	int n;
};
int ort_cg_join_open(const char *path, struct ort_cg_join *j, struct al_error *err);
void ort_cg_join_close(struct ort_cg_join *j);
/* Every process of the container (malloc'd). */
int ort_cg_pids(const char *path, pid_t **out, size_t *n);
/* Signals every process; for SIGKILL, until none is left (thawing a frozen container). */
int ort_cg_kill(const char *path, int sig);
int ort_cg_freeze(const char *path, bool on);
bool ort_cg_frozen(const char *path);
/* Removes path from every hierarchy (waits briefly for it to empty). */
void ort_cg_remove(const char *path);
/* runc's "events --stats" data object: cpu, memory, pids. */
int ort_cg_stats(const char *path, json_t **out);

#endif
