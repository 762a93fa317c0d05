/* mgate.h — the approval gate of airlock's servers: risk rules decide, the audit log records (and no call runs without its durable start record). */
#ifndef AL_SERVICE_MGATE_H
#define AL_SERVICE_MGATE_H

#include "config/config.h"
#include "audit/audit.h"
#include "manager/gate.h"

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

#endif
