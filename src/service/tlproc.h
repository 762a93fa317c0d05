/* tlproc.h — code_process's part of the tool table (tlproc.c), kept apart from tools.c: its schemas, start and result. */
#ifndef AL_SERVICE_TLPROC_H
#define AL_SERVICE_TLPROC_H

#include <jansson.h>
#include <stdbool.h>

#include "manager/api.h"

/* A terminal's columns or rows, in code_execute's pty and code_process's resize. */
#define TL_PTY_SIZE_PROP "{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000}"

extern const char tl_process_input[];
extern const char tl_process_output[];

/* Starts one code_process action on the manager (see struct srv_process_req): "output" is a connect,
 * streamed to the end with follow and no wait, else read for up to wait seconds and answered. */
int tl_process_start(const struct srv_mgr_api *m, const json_t *args, const char *owner, const struct srv_sink *sink,
		     struct srv_op **op, struct al_error *err);
json_t *tl_process_result(const json_t *args, const struct srv_result *r, bool *is_error);

#endif
