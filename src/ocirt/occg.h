/* occg.h — a container's cgroup at a cgroupsPath in every mounted hierarchy (v1 and v2). */
#ifndef AL_OCIRT_OCCG_H
#define AL_OCIRT_OCCG_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "spec.h"

/* Calls fn for each hierarchy the runtime uses, with path's directory in it. Count or -errno. */
int ort_cg_each(int (*fn)(const char *dir, const char *ctrl, int version, void *arg), void *arg, const char *path);
/* Makes path in each hierarchy, applies res and moves pid (> 0) in. An asked limit that cannot
 * be applied is an error. */
int ort_cg_create(const char *path, const struct ort_resources *res, pid_t pid, struct al_error *err);
int ort_cg_update(const char *path, const struct ort_resources *res, struct al_error *err);
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
