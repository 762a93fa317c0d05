/* check.c — `airlock check`: print what this host can enforce, as a table or as one JSON object. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/capability.h"
#include "cli/cli.h"
#include "host/host.h"
#include "util/cleanup.h"

static const char check_usage[] =
	"Usage: airlock check [--json]\n"
	"\n"
	"Show what this host can enforce: user and other namespaces, Landlock, seccomp,\n"
	"the cgroup layout and usable controllers, overlayfs, /dev/kvm and the other\n"
	"backends' programs. Every probe is read-only or runs in a child that exits at once.\n"
	"\n"
	"Options:\n"
	"  --json      print one JSON object instead of the table\n"
	"  -h, --help  show this help\n"
	"\n"
	"The exit status is 0 whatever is missing: this is a report.\n";

struct check_row {
	char feature[40];
	char status[16];
	char detail[640];
};

struct check_table {
	struct check_row rows[48];
	size_t n;
};

static void __attribute__((format(printf, 4, 5)))
check_add(struct check_table *t, const char *feature, const char *status, const char *fmt, ...)
{
	if (t->n >= sizeof(t->rows) / sizeof(t->rows[0]))
		return;
	struct check_row *row = &t->rows[t->n++];
	snprintf(row->feature, sizeof(row->feature), "%s", feature);
	snprintf(row->status, sizeof(row->status), "%s", status);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(row->detail, sizeof(row->detail), fmt, ap);
	va_end(ap);
}

static const char *yesno(bool b)
{
	return b ? "yes" : "no";
}

static void check_res(struct check_table *t, const char *feature, const struct host_probe_res *res,
		      const char *ok_detail)
{
	char why[160];
	host_res_describe(res, why, sizeof(why));
	check_add(t, feature, res->ran ? yesno(res->ok) : "n/a", "%s", res->ok ? ok_detail : why);
}

static void check_userns(struct check_table *t, const struct al_host_report *r)
{
	const struct host_userns *u = &r->userns;
	char detail[96];
	if (u->as_root.ran)
		check_res(t, "user namespace (root)", &u->as_root, "");
	else
		check_add(t, "user namespace (root)", "n/a", "not running as root");
	snprintf(detail, sizeof(detail), "as uid %u", u->unpriv_uid);
	check_res(t, "user namespace (unprivileged)", &u->unprivileged, detail);
	if (!u->unprivileged.ok) {
		/* Say which knob is likely responsible, so the operator is told, not guessed at. */
		if (u->max_user_namespaces == 0)
			check_add(t, "", "", "user.max_user_namespaces is 0");
		if (u->unprivileged_userns_clone == 0)
			check_add(t, "", "", "kernel.unprivileged_userns_clone is 0");
		if (u->apparmor_restrict_userns > 0)
			check_add(t, "", "", "kernel.apparmor_restrict_unprivileged_userns is %ld",
				  u->apparmor_restrict_userns);
	}
	bool both = u->newuidmap[0] && u->newgidmap[0];
	bool priv = u->newuidmap_privileged && u->newgidmap_privileged;
	check_add(t, "newuidmap/newgidmap", yesno(both), "%s, %s%s",
		  u->newuidmap[0] ? u->newuidmap : "newuidmap absent",
		  u->newgidmap[0] ? u->newgidmap : "newgidmap absent",
		  !both	 ? ""
		  : priv ? " (setuid or file caps)"
			 : " (not privileged: cannot map id ranges)");
	for (int ns = 0; ns < HOST_NS__COUNT; ns++) {
		char feature[40];
		snprintf(feature, sizeof(feature), "namespace %s", host_ns_name(ns));
		check_res(t, feature, &r->ns[ns], "in a new user namespace");
	}
}

static void check_lsm(struct check_table *t, const struct al_host_report *r)
{
	if (r->landlock_abi > 0)
		check_add(t, "landlock", "yes", "ABI %d", r->landlock_abi);
	else
		check_add(t, "landlock", "no", "%s",
			  r->landlock_err == EOPNOTSUPP ? "built in but disabled at boot"
			  : r->landlock_err == ENOSYS	? "not built into this kernel"
							: strerror(r->landlock_err));
	const struct host_seccomp *s = &r->seccomp;
	char acts[256] = "";
	for (int a = 0; a < HOST_SECCOMP__COUNT; a++)
		if (s->actions & (1u << a)) {
			size_t len = strlen(acts);
			snprintf(acts + len, sizeof(acts) - len, "%s%s", len ? " " : "", host_seccomp_action_name(a));
		}
	if (s->filter)
		check_add(t, "seccomp filter", "yes", "actions: %s%s", acts,
			  s->mode == 2 ? " (airlock itself already runs under a filter)" : "");
	else
		check_add(t, "seccomp filter", "no", "%s", strerror(s->err ? s->err : ENOSYS));
}

static void check_hier(struct check_table *t, const char *feature, const struct host_cg_hier *h, const char *extra)
{
	if (!h->mounted)
		check_add(t, feature, "no", "not mounted");
	else if (!h->found)
		check_add(t, feature, "no", "mounted at %s, but our cgroup is not visible there", h->mount);
	else
		check_add(t, feature, "yes", "%s, %s%s", h->dir, h->writable ? "writable" : "not writable by us",
			  extra);
}

static void check_cgroup(struct check_table *t, const struct al_host_report *r)
{
	const struct host_cgroups *cg = &r->cg;
	if (r->cg_err < 0)
		check_add(t, "cgroup layout", "error", "%s", r->cg_errmsg);
	else
		check_add(t, "cgroup layout", host_cg_layout_name(cg->layout), "%s%s",
			  cg->v2.mounted ? "cgroup2 at " : "no cgroup2 mount", cg->v2.mounted ? cg->v2.mount : "");
	if (cg->v2.mounted) {
		char extra[600];
		snprintf(extra, sizeof(extra), "; controllers: %s; subtree_control: %s",
			 cg->v2_controllers[0] ? cg->v2_controllers : "(none)",
			 cg->v2_subtree[0] ? cg->v2_subtree : "(none)");
		check_hier(t, "cgroup v2", &cg->v2, extra);
	}
	for (int c = 0; c < HOST_CG__COUNT; c++) {
		char feature[40];
		snprintf(feature, sizeof(feature), "cgroup v1 %s", host_cg_ctrl_name(c));
		check_hier(t, feature, &cg->v1[c], "");
	}
	char use[128] = "";
	int usable = 0;
	for (int c = 0; c < HOST_CG__COUNT; c++) {
		const char *v = host_cg_version_name(cg->use[c]);
		size_t len = strlen(use);
		snprintf(use + len, sizeof(use) - len, "%s%s=%s", len ? " " : "", host_cg_ctrl_name(c), v ? v : "none");
		usable += v != NULL;
	}
	check_add(t, "user systemd scope", yesno(r->systemd_scope.available), "%s", r->systemd_scope.detail);
	check_add(t, "cgroup controllers usable",
		  usable == HOST_CG__COUNT ? "yes"
		  : usable		   ? "partial"
					   : "no",
		  "%s", use);
}

static void check_other(struct check_table *t, const struct al_host_report *r)
{
	char why[160];
	host_res_describe(&r->overlay.userns_mount, why, sizeof(why));
	if (!r->overlay.listed)
		check_add(t, "overlayfs", "no", "not in /proc/filesystems");
	else
		check_add(t, "overlayfs", yesno(r->overlay.userns_mount.ok), "%s",
			  r->overlay.userns_mount.ok ? "mounts in a user namespace" : why);
	if (r->kvm.usable)
		check_add(t, "/dev/kvm", "yes", "opens read-write");
	else
		check_add(t, "/dev/kvm", "no", "%s%s", r->kvm.present ? "present, open: " : "", strerror(r->kvm.err));
	for (int b = 0; b < HOST_BACKEND__COUNT; b++) {
		char feature[40];
		snprintf(feature, sizeof(feature), "backend %s", host_backend_name(b));
		check_add(t, feature, yesno(r->backend[b][0]), "%s", r->backend[b][0] ? r->backend[b] : "not in PATH");
	}
}

/* One row per backend: the layers it can enforce here, then those it cannot. */
static void check_layers(struct check_table *t, const struct al_host_report *r)
{
	host_lacks_table lacks;
	be_host_lacks(&lacks);
	for (int b = 0; b < HOST_LAYERS_BACKENDS; b++) {
		struct host_layers l;
		host_backend_layers(r, b, lacks[b].lacks, &l);
		char feature[40], can[300] = "", cannot[300] = "";
		for (int k = 0; k < HOST_LAYER__COUNT; k++) {
			char *list = l.has[k] ? can : cannot;
			size_t len = strlen(list);
			snprintf(list + len, sizeof(can) - len, "%s%s", len ? " " : "", host_layer_name(k));
		}
		snprintf(feature, sizeof(feature), "%s can enforce", lacks[b].name);
		bool bwrap = b == AL_BACKEND_BWRAP;
		if (!l.available)
			check_add(t, feature, "no", "%s", l.why);
		else
			check_add(t, feature, "yes", "%s%s%s%s%s", bwrap ? "bwrap " : "", bwrap ? r->bwrap_version : "",
				  bwrap ? ": " : "", can, *cannot ? "; not: " : "");
		if (l.available && *cannot) {
			struct check_row *row = &t->rows[t->n - 1];
			size_t len = strlen(row->detail);
			snprintf(row->detail + len, sizeof(row->detail) - len, "%s", cannot);
		}
	}
}

static void check_print(const struct check_table *t)
{
	int fw = (int)strlen("feature"), sw = (int)strlen("status");
	for (size_t i = 0; i < t->n; i++) {
		int f = (int)strlen(t->rows[i].feature), s = (int)strlen(t->rows[i].status);
		fw = f > fw ? f : fw;
		sw = s > sw ? s : sw;
	}
	printf("%-*s  %-*s  %s\n", fw, "feature", sw, "status", "detail");
	for (size_t i = 0; i < t->n; i++) {
		const struct check_row *row = &t->rows[i];
		/* No trailing blanks when a row has no detail. */
		if (row->detail[0])
			printf("%-*s  %-*s  %s\n", fw, row->feature, sw, row->status, row->detail);
		else
			printf("%-*s  %s\n", fw, row->feature, row->status);
	}
}

int cli_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false;
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'j')
			json = true;
		else if (c == 'h')
			return fputs(check_usage, stdout), 0;
		else
			return cli_fail("check: unknown option '%s' (try 'airlock check --help')", argv[optind - 1]);
	}
	if (optind < argc)
		return cli_fail("check: unexpected argument '%s'", argv[optind]);

	cleanup_free struct al_host_report *r = calloc(1, sizeof(*r));
	if (!r)
		return cli_fail("check: out of memory");
	struct al_error err = {0};
	if (host_probe(r, &err) < 0)
		return cli_fail("check: %s", err.msg);
	if (json) {
		cleanup_free char *out = NULL;
		host_lacks_table lacks;
		be_host_lacks(&lacks);
		if (host_report_to_json(r, &lacks, &out) < 0)
			return cli_fail("check: cannot encode the report");
		puts(out);
	} else {
		cleanup_free struct check_table *t = calloc(1, sizeof(*t));
		if (!t)
			return cli_fail("check: out of memory");
		check_userns(t, r);
		check_lsm(t, r);
		check_cgroup(t, r);
		check_other(t, r);
		check_layers(t, r);
		check_print(t);
	}
	return fflush(stdout) == 0 ? 0 : cli_fail("check: writing the report failed");
}
