/* tlwatch.h — code_watch's part of the tool table (tlwatch.c), kept apart from tools.c: its schemas, start and result. */
#ifndef AL_SERVICE_TLWATCH_H
#define AL_SERVICE_TLWATCH_H

#include <jansson.h>
#include <stdbool.h>

#include "manager/api.h"

extern const char tl_watch_input[];
extern const char tl_watch_output[];

/* Starts a watch on the manager: a follow without wait streams its events until the client leaves;
 * otherwise it watches for wait seconds (default TL_WATCH_DEFAULT_S) and answers with the events. */
int tl_watch_start(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		   struct srv_op **op, struct al_error *err);
json_t *tl_watch_result(const json_t *args, const struct srv_result *r, bool *is_error);

#define TL_WATCH_DEFAULT_S 10

#endif
