/* host.c — runs every host probe into one report and encodes it as JSON for `airlock check --json`. */
#include "host/host.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/error.h"

static const char *const backend_names[HOST_BACKEND__COUNT] = {
	[HOST_BACKEND_BWRAP] = "bwrap",
	[HOST_BACKEND_RUNSC] = "runsc",
	[HOST_BACKEND_CRUN] = "crun",
	[HOST_BACKEND_RUNC] = "runc",
};

const char *host_backend_name(enum host_backend b)
{
	return (unsigned)b < HOST_BACKEND__COUNT ? backend_names[b] : "?";
}

void host_res_describe(const struct host_probe_res *res, char *buf, size_t size)
{
	if (!res->ran)
		snprintf(buf, size, "not applicable");
	else if (res->ok)
		snprintf(buf, size, "ok");
	else
		snprintf(buf, size, "%s: %s", res->step ? res->step : "probe", strerror(res->err));
}

/* Probing a filesystem that is not listed would make the kernel load its module:
 * a change to the host, so the mount probe is skipped and reported as such. */
static void host_probe_overlay(struct al_host_report *r)
{
	FILE *f = fopen("/proc/filesystems", "re");
	if (f) {
		(void)host_fs_listed(f, "overlay", &r->overlay.listed);
		fclose(f);
	}
	if (r->overlay.listed)
		host_probe_overlay_userns(&r->overlay.userns_mount);
	else
		r->overlay.userns_mount =
			(struct host_probe_res){.ran = true, .err = ENODEV, .step = "/proc/filesystems"};
}

int host_probe(struct al_host_report *r, struct al_error *err)
{
	memset(r, 0, sizeof(*r));
	struct utsname u;
	if (uname(&u) == 0)
		snprintf(r->kernel, sizeof(r->kernel), "%s", u.release);
	r->euid = (unsigned)geteuid();
	host_probe_userns(&r->userns);
	for (int ns = 0; ns < HOST_NS__COUNT; ns++)
		host_probe_ns(ns, &r->ns[ns]);
	r->landlock_abi = host_landlock_abi(&r->landlock_err);
	host_probe_seccomp(&r->seccomp);
	struct al_error cgerr = {0};
	r->cg_err = host_cg_detect(&r->cg, &cgerr);
	if (r->cg_err < 0)
		memcpy(r->cg_errmsg, cgerr.msg, sizeof(r->cg_errmsg));
	r->systemd_scope.available =
		host_systemd_probe(&r->cg, r->systemd_scope.detail, sizeof(r->systemd_scope.detail));
	host_probe_overlay(r);
	host_probe_kvm(&r->kvm);
	for (int b = 0; b < HOST_BACKEND__COUNT; b++)
		(void)host_find_in_path(backend_names[b], r->backend[b], sizeof(r->backend[b]));
	host_probe_bwrap(r->bwrap_version, sizeof(r->bwrap_version));
	(void)err; /* a missing feature is data; nothing here can fail the whole report */
	return 0;
}

/* ---- JSON ------------------------------------------------------------------------ */

static json_t *host_str_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

static json_t *host_errno_json(int e)
{
	return e ? json_string(strerror(e)) : json_null();
}

static json_t *host_long_or_null(long v)
{
	return v < 0 ? json_null() : json_integer(v);
}

/* {"ok": bool, "error": "step: reason" | null}, or null when the probe did not apply. */
static json_t *host_res_json(const struct host_probe_res *res)
{
	if (!res->ran)
		return json_null();
	char msg[160];
	host_res_describe(res, msg, sizeof(msg));
	return json_pack("{s:b, s:o}", "ok", res->ok, "error", res->ok ? json_null() : json_string(msg));
}

/* A space-separated list as a JSON array of strings. */
static json_t *host_list_json(const char *list)
{
	json_t *a = json_array();
	for (const char *p = list; a && *p;) {
		size_t len = strcspn(p, " \t\n");
		if (len && json_array_append_new(a, json_stringn(p, len)) < 0) {
			json_decref(a);
			return NULL;
		}
		p += len;
		if (*p)
			p++;
	}
	return a;
}

static json_t *host_userns_json(const struct host_userns *u)
{
	json_t *unpriv = host_res_json(&u->unprivileged);
	if (json_is_object(unpriv) && json_object_set_new(unpriv, "uid", json_integer(u->unpriv_uid)) < 0) {
		json_decref(unpriv);
		unpriv = NULL;
	}
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b, s:b}", "as_root", host_res_json(&u->as_root),
			 "unprivileged", unpriv, "max_user_namespaces", host_long_or_null(u->max_user_namespaces),
			 "unprivileged_userns_clone", host_long_or_null(u->unprivileged_userns_clone),
			 "apparmor_restrict_unprivileged_userns", host_long_or_null(u->apparmor_restrict_userns),
			 "newuidmap", host_str_or_null(u->newuidmap), "newgidmap", host_str_or_null(u->newgidmap),
			 "newuidmap_privileged", u->newuidmap_privileged, "newgidmap_privileged",
			 u->newgidmap_privileged);
}

static json_t *host_ns_json(const struct al_host_report *r)
{
	json_t *o = json_object();
	for (int ns = 0; o && ns < HOST_NS__COUNT; ns++)
		if (json_object_set_new(o, host_ns_name(ns), host_res_json(&r->ns[ns])) < 0) {
			json_decref(o);
			return NULL;
		}
	return o;
}

static json_t *host_seccomp_json(const struct host_seccomp *s)
{
	json_t *acts = json_array();
	for (int a = 0; acts && a < HOST_SECCOMP__COUNT; a++)
		if ((s->actions & (1u << a)) &&
		    json_array_append_new(acts, json_string(host_seccomp_action_name(a))) < 0) {
			json_decref(acts);
			acts = NULL;
		}
	return json_pack("{s:b, s:o, s:o, s:o}", "filter", s->filter, "mode",
			 s->mode < 0 ? json_null() : json_integer(s->mode), "actions", acts, "error",
			 s->filter ? json_null() : host_errno_json(s->err ? s->err : ENOSYS));
}

static json_t *host_hier_json(const struct host_cg_hier *h)
{
	if (!h->mounted)
		return json_null();
	return json_pack("{s:s, s:o, s:b}", "mount", h->mount, "dir", host_str_or_null(h->found ? h->dir : NULL),
			 "writable", h->writable);
}

static json_t *host_cg_json(const struct al_host_report *r)
{
	const struct host_cgroups *cg = &r->cg;
	json_t *v2 = json_null();
	if (cg->v2.mounted) {
		v2 = host_hier_json(&cg->v2);
		if (v2 && (json_object_set_new(v2, "controllers", host_list_json(cg->v2_controllers)) < 0 ||
			   json_object_set_new(v2, "subtree_control", host_list_json(cg->v2_subtree)) < 0)) {
			json_decref(v2);
			v2 = NULL;
		}
	}
	json_t *v1 = json_object(), *use = json_object();
	for (int c = 0; v1 && use && c < HOST_CG__COUNT; c++) {
		const char *name = host_cg_ctrl_name(c);
		if (json_object_set_new(v1, name, host_hier_json(&cg->v1[c])) < 0 ||
		    json_object_set_new(use, name, host_str_or_null(host_cg_version_name(cg->use[c]))) < 0) {
			json_decref(v1);
			v1 = NULL;
		}
	}
	json_t *sd =
		json_pack("{s:b, s:s}", "available", r->systemd_scope.available, "detail", r->systemd_scope.detail);
	return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o}", "layout", host_cg_layout_name(cg->layout), "error",
			 r->cg_err < 0 ? json_string(r->cg_errmsg) : json_null(), "v2", v2, "v1", v1, "use", use,
			 "systemd_scope", sd);
}

static json_t *host_backends_json(const struct al_host_report *r)
{
	json_t *o = json_object();
	for (int b = 0; o && b < HOST_BACKEND__COUNT; b++)
		if (json_object_set_new(o, backend_names[b], host_str_or_null(r->backend[b])) < 0) {
			json_decref(o);
			return NULL;
		}
	return o;
}

/* {"native": {"available": b, "userns": b, ...}, "bwrap": {..., "path": s, "version": s}} */
/* lacks: the backend layer's words, which name the backends (so the host layer never does). */
static json_t *host_layers_json(const struct al_host_report *r, const host_lacks_table *lacks)
{
	json_t *o = json_object();
	for (int b = 0; o && b < HOST_LAYERS_BACKENDS; b++) {
		struct host_layers l;
		host_backend_layers(r, b, (*lacks)[b].lacks, &l);
		json_t *e = json_pack("{s:b}", "available", l.available);
		if (e && b == AL_BACKEND_BWRAP &&
		    (json_object_set_new(e, "path", host_str_or_null(r->bwrap_version[0] ? "/usr/bin/bwrap" : NULL)) <
			     0 ||
		     json_object_set_new(e, "version", host_str_or_null(r->bwrap_version)) < 0)) {
			json_decref(e);
			e = NULL;
		}
		for (int k = 0; e && k < HOST_LAYER__COUNT; k++)
			if (json_object_set_new(e, host_layer_name(k), json_boolean(l.has[k])) < 0) {
				json_decref(e);
				e = NULL;
			}
		if (!e || json_object_set_new(o, (*lacks)[b].name, e) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static json_t *host_report_json(const struct al_host_report *r, const host_lacks_table *lacks)
{
	char ovl[160];
	host_res_describe(&r->overlay.userns_mount, ovl, sizeof(ovl));
	json_t *overlay =
		json_pack("{s:b, s:b, s:o}", "listed", r->overlay.listed, "userns_mount", r->overlay.userns_mount.ok,
			  "error", r->overlay.userns_mount.ok ? json_null() : json_string(ovl));
	json_t *kvm = json_pack("{s:b, s:b, s:o}", "present", r->kvm.present, "usable", r->kvm.usable, "error",
				host_errno_json(r->kvm.usable ? 0 : r->kvm.err));
	json_t *landlock = json_pack("{s:i, s:o}", "abi", r->landlock_abi, "error",
				     host_errno_json(r->landlock_abi ? 0 : r->landlock_err));
	return json_pack("{s:i, s:s, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "version", 1, "kernel",
			 r->kernel, "euid", (json_int_t)r->euid, "user_namespaces", host_userns_json(&r->userns),
			 "namespaces", host_ns_json(r), "landlock", landlock, "seccomp", host_seccomp_json(&r->seccomp),
			 "cgroup", host_cg_json(r), "overlayfs", overlay, "kvm", kvm, "backends", host_backends_json(r),
			 "backend_layers", lacks ? host_layers_json(r, lacks) : json_null());
}

int host_report_to_json(const struct al_host_report *r, const host_lacks_table *lacks, char **out)
{
	json_t *root = host_report_json(r, lacks);
	if (!root)
		return -ENOMEM;
	*out = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	return *out ? 0 : -ENOMEM;
}
