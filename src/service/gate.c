/* gate.c — what the gate's contract (gate.h) defines beyond types: names, and admission. */
#include "service/gate.h"

#include <string.h>

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
