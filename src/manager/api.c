/* api.c — what the manager's contract (api.h, gate.h) defines beyond types: results and names. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "manager/gate.h"

struct srv_result *srv_result_new(void)
{
	struct srv_result *r = calloc(1, sizeof(struct srv_result));
	if (r)
		r->fd = -1;
	return r;
}

void srv_result_free(struct srv_result *r)
{
	if (!r)
		return;
	al_verdict_free(r->verdict);
	if (r->fd >= 0)
		close(r->fd);
	free(r->sandbox_id);
	free(r->cell_json);
	free(r->process_json);
	free(r->watch_json);
	free(r->sandboxes_json);
	free(r->state_json);
	free(r->snapshot_json);
	free(r->ended);
	free(r->data);
	for (size_t i = 0; i < r->n_entries; i++)
		free(r->entries[i].name);
	free(r->entries);
	if (r->stat)
		free(r->stat->link_target);
	free(r->stat);
	free(r);
}

void srv_sandbox_infos_free(struct srv_sandbox_info *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].metadata_json);
}

const char *srv_gate_outcome_name(enum srv_gate_outcome o)
{
	switch (o) {
	case SRV_GATE_ALLOWED:
		return "allowed";
	case SRV_GATE_DENIED:
		return "denied";
	case SRV_GATE_APPROVED:
		return "approved";
	case SRV_GATE_DECLINED:
		return "declined";
	case SRV_GATE_TIMED_OUT:
		return "timed-out";
	case SRV_GATE_UNAVAILABLE:
		return "unavailable";
	case SRV_GATE_ABANDONED:
		return "abandoned";
	}
	return "unknown";
}

const char *srv_gate_by_name(enum srv_gate_by by)
{
	switch (by) {
	case SRV_BY_NOBODY:
		return "nobody";
	case SRV_BY_ELICITATION:
		return "elicitation";
	case SRV_BY_HTTP:
		return "http";
	case SRV_BY_TERMINAL:
		return "terminal";
	}
	return "unknown";
}

int srv_gate_admit(const struct srv_gate *g, struct srv_call_start *start, char call_id[SRV_CALL_ID_MAX],
		   struct al_error *err)
{
	call_id[0] = 0;
	if (!g || !g->admit)
		return 0;
	int r = g->admit(g->ctx, start, err);
	if (r < 0)
		return r;
	memcpy(call_id, start->call_id, SRV_CALL_ID_MAX);
	call_id[SRV_CALL_ID_MAX - 1] = 0;
	return 0;
}
