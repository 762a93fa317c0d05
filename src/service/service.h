/* service.h — the service both programs serve (`airlock mcp`, `airlock serve`): configuration, manager, risk rules, approval queue and audit log, opened and closed in one place. */
#ifndef AL_SERVICE_SERVICE_H
#define AL_SERVICE_SERVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "airlock/airlock.h"
#include "config/config.h"
#include "manager/api.h"
#include "service/approval.h"
#include "audit/audit.h"
#include "service/gate.h"
#include "service/mgate.h"
#include "manager/sbmgr.h"

/* Size-prefixed so it can grow. Every pointer is borrowed for service_open only (what the
 * service keeps, it copies). */
struct service_opts {
	size_t size;	       /* sizeof(struct service_opts) */
	const char *config;    /* the configuration file (NULL: the default search) */
	const char *profile;   /* profile of sandboxes created without one (NULL: untrusted-code-read) */
	const char *audit;     /* the audit log, instead of the configuration's audit.path */
	const char *transport; /* the audit record's transport when a call names none ("stdio", "http") */
	const char *peer;      /* the audit record's peer when a call names none, or NULL */
	const char *state_dir; /* where clients' sandboxes are kept across restarts (sbm_opts), or NULL */
	/* Called once the configuration is loaded, before anything else is opened: a front end's
	 * command-line choices that change the configuration (cfg is the service's). Non-zero
	 * stops service_open, which then returns -ECANCELED (the front end has said why). */
	int (*adjust)(void *ctx, struct cfg *cfg);
	void *adjust_ctx;
};

/*
 * What a front end serves. Theory: one service per process; its manager may start threads, so
 * a front end blocks the signals it wants on a signalfd before service_open (every thread
 * inherits the mask). The gate is the risk rules deciding and the audit log recording; the
 * approval queue is how a human outside the MCP protocol answers (GET/POST /v1/approvals, the
 * terminal prompt). Front ends read these fields and never free them.
 */
struct service {
	struct cfg *cfg;
	struct audit_log *log;
	char *audit_path; /* the log's file, for readers (the console's GET /v1/audit) */
	struct apq *approvals;
	struct sbm *mgr;
	struct srv_mgr_api api; /* the manager's operation table */
	struct srv_gate gate;	/* risk rules + audit log */
	struct mgate mg;	/* gate's context */
	char peer[128];
	struct audit_past past; /* the log's predecessors: their sandboxes, lost in our start (sbm_opts.lost) */
};

/* Before any thread exists (so every thread inherits the mask): SIGTERM and SIGINT arrive on the
 * returned signalfd only, and a closed pipe is an error return, not a death. With background_tty,
 * a terminal we are in the background of answers EIO rather than stopping us (SIGTTIN, SIGTTOU).
 * The signalfd (O_CLOEXEC), or -errno. */
int service_stop_signals(bool background_tty);

/* Loads the configuration, opens the audit log and the approval queue, clears what a killed
 * predecessor left behind, starts the manager. 0, or -errno with err set (the message names
 * what failed, without a program prefix). *out is freed by service_close. */
int service_open(const struct service_opts *o, struct service **out, struct al_error *err);
/* Destroys every sandbox (no process, cgroup or workspace is left), then closes the rest. NULL
 * is a no-op. Front ends stop whatever asks through svc->approvals first. */
void service_close(struct service *svc);

#endif
