/* tlpause.h — code_pause_sandbox and code_resume_sandbox, the tool table's part for pause in place (tlpause.c): schemas, starts, result. */
#ifndef AL_SERVICE_TLPAUSE_H
#define AL_SERVICE_TLPAUSE_H

#include <jansson.h>
#include <stdbool.h>

#include "manager/api.h"

extern const char tl_pause_input[];
extern const char tl_resume_input[];
extern const char tl_pause_output[];

/* A pause (resume false) or a resume of args' sandbox_id on the manager, for owner. */
int tl_pause_start(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		   struct srv_op **op, struct al_error *err);
int tl_resume_start(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		    struct srv_op **op, struct al_error *err);
json_t *tl_pause_result(const json_t *args, const struct srv_result *r, bool *is_error);

#endif
