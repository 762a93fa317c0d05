/* mgate.h — the approval gate of airlock's servers: risk rules decide, the audit log records (and no call runs without its durable start record). */
#ifndef AL_SERVICE_MGATE_H
#define AL_SERVICE_MGATE_H

#include "config/config.h"
#include "audit/audit.h"
#include "service/gate.h"

struct mgate {
	const struct cfg *cfg; /* the rules and the approval policy */
	struct audit_log *log; /* NULL: no audit log */
	const char *transport; /* "stdio", "http": unless the call names its own */
	const char *peer;      /* the client, or NULL: unless the call names its own */
	/* Set by mgate_init: call ids are "<random prefix>-<counter>", unique across restarts. */
	char id_prefix[12];
	uint64_t next_id; /* atomic */
};

/* A gate whose ctx is g (borrowed: it must outlive the sessions). */
void mgate_init(struct mgate *g, struct srv_gate *out);

/* Which channels a front end's sessions may ask on, from the policy's approval.channels (in
 * preference order): elicitation, and the front end's other channel (CFG_CHAN_HTTP: the
 * approvals queue of airlock serve; CFG_CHAN_TERMINAL: the prompt of airlock mcp). */
struct mgate_channels {
	bool elicitation;
	bool other;
	bool other_first; /* listed before elicitation */
};
void mgate_channels(const struct cfg_approval *a, enum cfg_channel other, struct mgate_channels *out);

/* --approve MODE, the same choice on airlock mcp and airlock serve (one table, mgate.c): who
 * decides a call the risk rules put to a human. `other` is the front end's own channel
 * (CFG_CHAN_TERMINAL: airlock mcp's prompt; CFG_CHAN_HTTP: airlock serve's approvals queue). An
 * operator's auto=LEVEL is the approval policy's auto_approve_up_to: the audit log says
 * approval.by=auto for each call it let run, never a human's name. */
struct mgate_approve {
	bool given;	  /* --approve was given: it replaces approval.channels */
	bool elicitation; /* ask the client's user (MCP elicitation) */
	bool other;	  /* ask on the front end's own channel */
	bool other_first; /* listed before elicitation */
	bool auto_level_set;
	enum cfg_risk auto_level;
};
#define MGATE_MSG_MAX 192
/* "elicitation", the front end's channel, a comma list of them, "auto=LEVEL", "deny". 0, or
 * -EINVAL with the reason in msg. */
int mgate_approve_parse(const char *arg, enum cfg_channel other, struct mgate_approve *m, char msg[MGATE_MSG_MAX]);
/* The channels the front end's sessions may ask on: m's when given (its choice replaces
 * approval.channels in a, and auto=LEVEL its auto_approve_up_to; nobody to ask denies what the
 * policy does not approve), else approval.channels' (mgate_channels). */
void mgate_approve_apply(const struct mgate_approve *m, enum cfg_channel other, struct cfg_approval *a,
			 struct mgate_channels *out);
/* The --approve lines of the front end's usage text into buf (newline-terminated), its options'
 * explanations starting at column col. */
void mgate_approve_help(enum cfg_channel other, int col, char *buf, size_t cap);

#endif
