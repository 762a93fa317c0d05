/* tlfork.h — code_fork_sandbox's part of the tool table (tlfork.c), kept apart from tools.c: its schemas, start and result. */
#ifndef AL_SERVICE_TLFORK_H
#define AL_SERVICE_TLFORK_H

#include <jansson.h>
#include <stdbool.h>

#include "manager/api.h"

extern const char tl_fork_input[];
extern const char tl_fork_output[];

int tl_fork_start(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		  struct srv_op **op, struct al_error *err);
json_t *tl_fork_result(const json_t *args, const struct srv_result *r, bool *is_error);

#endif
