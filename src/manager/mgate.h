/* mgate.h — the approval gate of airlock's servers: risk rules decide, the audit log records. */
#ifndef AL_MANAGER_MGATE_H
#define AL_MANAGER_MGATE_H

#include "config/config.h"
#include "manager/audit.h"
#include "server/gate.h"

struct mgate {
	const struct cfg *cfg;	/* the rules and the approval policy */
	struct audit_log *log;	/* NULL: no audit log */
	const char *transport;	/* "stdio", "http" */
	const char *peer;	/* the client, or NULL */
};

/* A gate whose ctx is g (borrowed: it must outlive the sessions). */
void mgate_init(struct mgate *g, struct srv_gate *out);

#endif
