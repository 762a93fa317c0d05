/* record.h — a container's enforced protections, its audit records and its verdict file (record.c). */
#ifndef AL_OCIRT_RECORD_H
#define AL_OCIRT_RECORD_H

#include <jansson.h>
#include <stdbool.h>

#include "ctr.h"
#include "spec.h"

/* The protections the container gets, as a JSON object (new reference, or NULL). */
json_t *ort_enforced_json(const struct ort_spec *s, const struct ort_plan *plan, const struct ort_payload *pl);
/* The operator's verdict directory: AIRLOCK_VERDICT_DIR, else /var/lib/airlock/verdicts. create
 * records it with the container, so delete writes where create checked, whatever environment
 * its caller gives delete. */
const char *ort_verdict_dir(void);
/* Creates the annotation's verdict file (empty) beneath the verdict directory dir, so that
 * create refuses a name it could not write at delete. */
int ort_verdict_prepare(const char *dir, const char *want, struct al_error *err);
/* The cgroup's figures (runc's stats object), or JSON null. */
json_t *ort_usage_json(const char *cgroup);
/* Writes the verdict: id, how the process ended (status, exit_code, signal as airlock run's verdict
 * has them, or why not known), usage, enforced, times. */
struct ort_end;
int ort_verdict_write(const char *dir, const char *want, const char *id, const struct ort_end *end, json_t *usage,
		      json_t *enforced, const char *created, struct al_error *err);
/* One audit record: start (synced: nothing runs without it) or end. */
int ort_audit(bool start, const char *id, const json_t *params, const json_t *resources, const char *status,
	      struct al_error *err);

#endif
