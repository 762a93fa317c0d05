/* tlsnap.h — the snapshot tools' part of the tool table (tlsnap.c): code_snapshot_sandbox,
 * code_list_snapshots, code_delete_snapshot; their schemas, starts and results. */
#ifndef AL_SERVICE_TLSNAP_H
#define AL_SERVICE_TLSNAP_H

#include <jansson.h>
#include <stdbool.h>

#include "manager/api.h"

extern const char tl_snapshot_input[];
extern const char tl_snapshot_output[];
extern const char tl_snapshots_input[];
extern const char tl_snapshots_output[];
extern const char tl_snapshot_delete_input[];
extern const char tl_snapshot_delete_output[];

int tl_snapshot_start(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		      struct srv_op **op, struct al_error *err);
int tl_snapshots_start(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		       struct srv_op **op, struct al_error *err);
int tl_snapshot_delete_start(const struct srv_mgr_api *m, const json_t *args, const char *owner,
			     const struct srv_sink *sink, struct srv_op **op, struct al_error *err);
/* The three results: the manager's answer, its times as the API's (created_at, RFC 3339). */
json_t *tl_snapshot_result(const json_t *args, const struct srv_result *r, bool *is_error);

#endif
