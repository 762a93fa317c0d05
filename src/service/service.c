/* service.c — service_open/service_close: what `airlock mcp` and `airlock serve` both need, in the order it must be opened. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "service/service.h"
#include "util/cleanup.h"
#include "util/error.h"

int service_stop_signals(bool background_tty)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (background_tty) {
		signal(SIGTTIN, SIG_IGN);
		signal(SIGTTOU, SIG_IGN);
	}
	int fd = signalfd(-1, &set, SFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int open_audit(struct service *svc, const char *path, struct al_error *err)
{
	cleanup_free char *fallback = NULL;
	if (!path && !svc->cfg->audit.path && audit_default_path(geteuid() == 0, &fallback) < 0)
		return al_err(err, ENOENT, "no audit log path (set audit.path or --audit)");
	struct audit_options ao;
	audit_options_from_cfg(&svc->cfg->audit, fallback, &ao);
	if (path)
		ao.path = path;
	svc->audit_path = strdup(ao.path);
	if (!svc->audit_path)
		return al_err(err, ENOMEM, "out of memory");
	int r = audit_open(&ao, &svc->log, err);
	/* Calls of a predecessor that started and never ended (it crashed or was killed while they
	 * ran) are named once, in a record of their own, before any call of ours is written; its
	 * sandboxes died with it, and a request naming one is told so (sbx_get). Read before our first
	 * record, so none of ours is taken for theirs. A log shared by servers that run at the same time
	 * would have the other's running calls named too: give each server its own log. */
	if (r == 0 && (r = audit_past_read(ao.path, &svc->past, err)) == 0)
		r = audit_write_recovered(svc->log, &svc->past, err);
	return r;
}

int service_open(const struct service_opts *o, struct service **out, struct al_error *err)
{
	struct service *svc = calloc(1, sizeof(*svc));
	if (!svc)
		return al_err(err, ENOMEM, "out of memory");
	int r = cfg_load(o->config, &svc->cfg, err);
	/* Compiled here, once, before any thread classifies: no other command needs them. */
	if (r == 0)
		r = cfg_rules_compile(svc->cfg, err);
	if (r == 0 && o->adjust && o->adjust(o->adjust_ctx, svc->cfg) != 0)
		r = -ECANCELED;
	if (r == 0)
		r = open_audit(svc, o->audit, err);
	if (r == 0 && apq_new(&svc->approvals) < 0)
		r = al_err(err, ENOMEM, "out of memory");
	if (r < 0) {
		service_close(svc);
		return r;
	}
	/* Jobs of a killed predecessor (cgroups, workspaces) go before ours start. */
	al_cleanup_stale(NULL);
	struct sbm_opts so = {.size = sizeof(so),
			      .cfg = svc->cfg,
			      .default_profile = o->profile,
			      .lost = svc->past.sandboxes,
			      .state_dir = o->state_dir};
	r = sbm_new(&so, &svc->mgr, err);
	if (r < 0) {
		service_close(svc);
		return r;
	}
	sbm_api(svc->mgr, &svc->api);
	if (o->peer)
		snprintf(svc->peer, sizeof(svc->peer), "%s", o->peer);
	svc->mg = (struct mgate){
		.cfg = svc->cfg, .log = svc->log, .transport = o->transport, .peer = svc->peer[0] ? svc->peer : NULL};
	mgate_init(&svc->mg, &svc->gate);
	*out = svc;
	return 0;
}

void service_close(struct service *svc)
{
	if (!svc)
		return;
	sbm_free(svc->mgr); /* no process or cgroup is left; sandboxes kept in the state directory stay there */
	apq_free(svc->approvals);
	audit_close(svc->log);
	audit_past_free(&svc->past);
	free(svc->audit_path);
	cfg_free(svc->cfg);
	free(svc);
}
