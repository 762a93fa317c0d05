/* record.c — what airlock-runc tells: the protections a container got, its audit records and its verdict file.
 *
 * The audit log is airlock's own (src/audit/; AIRLOCK_AUDIT, else /var/log/airlock/audit.jsonl
 * as root): a "start" record, synced, before the container's init is made (without it nothing
 * runs), an "end" record with its accounting when it is deleted. The verdict file is written on
 * delete where the annotation io.airlock.verdict asks for one; the annotation comes from whoever
 * wrote the config (a pod's author), so it names a file beneath the operator's verdict directory
 * (AIRLOCK_VERDICT_DIR, else /var/lib/airlock/verdicts), opened with RESOLVE_BENEATH and no
 * symlinks: it can never make the runtime, which runs as root, write elsewhere.
 */
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "backend/capability.h"
#include "keeper.h"
#include "occg.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/openat2.h"
#include "util/text.h"

#define ORT_VERDICT_DIR "/var/lib/airlock/verdicts"

static int strv_len(char **v)
{
	int n = 0;
	while (v && v[n])
		n++;
	return n;
}

const char *ort_rootmap_word(enum ort_rootmap_mode m)
{
	switch (m) {
	case ORT_ROOTMAP_HOST:
		return "host";
	case ORT_ROOTMAP_CONFIG:
		return "config";
	case ORT_ROOTMAP_IDMAPPED:
		return "idmapped";
	case ORT_ROOTMAP_UNSUPPORTED:
		return "unsupported";
	}
	return "?";
}

const char *ort_fs_name(unsigned long magic, char buf[24])
{
	static const struct {
		unsigned long magic;
		const char *name;
	} names[] = {
		{OVERLAYFS_SUPER_MAGIC, "overlay"},
		{EXT4_SUPER_MAGIC, "ext4"},
		{XFS_SUPER_MAGIC, "xfs"},
		{BTRFS_SUPER_MAGIC, "btrfs"},
		{TMPFS_MAGIC, "tmpfs"},
		{RAMFS_MAGIC, "ramfs"},
		{F2FS_SUPER_MAGIC, "f2fs"},
		{EROFS_SUPER_MAGIC_V1, "erofs"},
		{SQUASHFS_MAGIC, "squashfs"},
		{FUSE_SUPER_MAGIC, "fuse"},
		{NFS_SUPER_MAGIC, "nfs"},
		{V9FS_MAGIC, "9p"},
		{0x2fc12fc1, "zfs"},
	};
	for (size_t i = 0; i < AL_ARRAY_SIZE(names); i++)
		if (names[i].magic == magic)
			return names[i].name;
	snprintf(buf, 24, "0x%lx", magic);
	return buf;
}

/* {"mode": ..., "filesystem": ..., "error": ...}: what the container's root can do with its image. */
static json_t *rootmap_json(const struct ort_rootmap *rm)
{
	json_t *o = json_pack("{s:s}", "mode", ort_rootmap_word(rm->mode));
	if (o && rm->fs[0])
		json_object_set_new(o, "filesystem", json_string(rm->fs));
	const char *e = strerrorname_np(rm->err);
	if (o && rm->mode == ORT_ROOTMAP_UNSUPPORTED)
		json_object_set_new(o, "error", e ? json_string(e) : json_integer(rm->err));
	return o;
}

json_t *ort_enforced_json(const struct ort_spec *s, const struct ort_plan *plan, const struct ort_payload *pl)
{
	json_t *ns = json_object();
	static const char *const names[ORT_NS__COUNT] = {"pid", "net", "ipc", "uts", "mount", "user", "cgroup"};
	for (int i = 0; i < ORT_NS__COUNT; i++)
		json_object_set_new(ns, names[i],
				    s->ns_path[i] ? json_string("joined")
						  : json_boolean(s->ns[i] || (i == ORT_NS_USER && plan->add_userns)));
	json_t *ids = plan->add_userns	   ? json_pack("{s:s,s:I,s:i}", "mode", "range", "host_base",
						       (json_int_t)plan->id_base, "count", 65536)
		      : s->ns[ORT_NS_USER] ? json_pack("{s:s}", "mode", "config")
					   : json_pack("{s:s}", "mode", "host");
	uint64_t caps = plan->caps.bounding | plan->caps.effective | plan->caps.permitted;
	json_t *sc = json_pack("{s:o,s:b}", "airlock", plan->airlock_seccomp ? json_string("default") : json_false(),
			       "config", s->seccomp != NULL);
	int abi = ll_abi() > LL_ABI_MAX ? LL_ABI_MAX : ll_abi();
	return json_pack("{s:o,s:o,s:o,s:s,s:o,s:b,s:o,s:o,s:b,s:i,s:i,s:s,s:s,s:i}", "namespaces", ns, "id_map", ids,
			 "rootfs_idmap", rootmap_json(&s->rootmap), "capabilities", caps ? "config" : "none",
			 "capability_mask", json_integer((json_int_t)caps), "no_new_privs", plan->nnp, "seccomp", sc,
			 "landlock", be_landlock_json(pl->landlock_on ? &pl->landlock : NULL, abi), "readonly_root",
			 s->root_ro, "masked_paths", strv_len(s->masked), "readonly_paths", strv_len(s->readonly),
			 "profile", plan->profile, "network",
			 plan->net_join	     ? "pod"
			 : s->ns[ORT_NS_NET] ? "none"
					     : "host",
			 "hidden_mounts", (int)s->hidden_mounts);
}

/* ---- the verdict file ---------------------------------------------------------------------------- */

const char *ort_verdict_dir(void)
{
	const char *d = getenv("AIRLOCK_VERDICT_DIR");
	return d && d[0] == '/' ? d : ORT_VERDICT_DIR;
}

/* The annotation's file beneath the verdict directory: an absolute path inside it, or a name
 * relative to it. O_CREAT without following any symlink, never above the directory. */
static int open_verdict(const char *dir, const char *want, int flags, struct al_error *err)
{
	const char *rel = want;
	size_t n = strlen(dir);
	if (want[0] == '/') {
		if (strncmp(want, dir, n) != 0 || want[n] != '/')
			return al_err(err, EPERM,
				      "annotation io.airlock.verdict=%s: outside the verdict directory %s "
				      "(AIRLOCK_VERDICT_DIR)",
				      want, dir);
		rel = want + n + 1;
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return al_err_sys(err, errno, "verdict directory %s", dir);
	cleanup_close int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return al_err_sys(err, errno, "verdict directory %s", dir);
	int fd = al_openat2(dfd, rel, flags | O_NOFOLLOW, 0600, AL_RESOLVE_NOLINKS);
	if (fd < 0)
		return al_err_sys(err, -fd, "annotation io.airlock.verdict=%s (beneath %s)", want, dir);
	return fd;
}

int ort_verdict_prepare(const char *dir, const char *want, struct al_error *err)
{
	int fd = open_verdict(dir, want, O_WRONLY | O_CREAT | O_TRUNC, err);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

json_t *ort_usage_json(const char *cgroup)
{
	json_t *u = NULL;
	if (ort_cg_stats(cgroup, &u) < 0)
		return json_null();
	return u;
}

int ort_verdict_write(const char *dir, const char *want, const char *id, const struct ort_end *end, json_t *usage,
		      json_t *enforced, const char *created, struct al_error *err)
{
	char now[TXT_RFC3339_MAX];
	txt_rfc3339_now(3, now);
	/* The end as airlock run's verdict tells it: exit_code for "exited" only, signal for the
	 * statuses a signal ended; both null, and exit_unknown saying why, when the exit status was
	 * not kept (keeper.c) — never a guess. */
	bool exited = end->known && end->status == AL_STATUS_EXITED;
	json_t *v = json_pack("{s:i,s:s,s:s,s:s,s:o,s:o,s:o,s:s,s:s,s:O,s:O}", "version", 1, "runtime", "airlock-runc",
			      "id", id, "status", ort_end_status(end), "exit_code",
			      exited ? json_integer(end->exit_code) : json_null(), "signal",
			      end->known && end->signal ? json_integer(end->signal) : json_null(), "exit_unknown",
			      end->known ? json_null() : json_string(end->why), "created", created, "deleted", now,
			      "usage", usage ? usage : json_null(), "enforced", enforced ? enforced : json_null());
	char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
	json_decref(v);
	if (!text)
		return al_err(err, ENOMEM, "out of memory");
	int fd = open_verdict(dir, want, O_WRONLY | O_CREAT | O_TRUNC, err), r = 0;
	if (fd >= 0) {
		size_t len = strlen(text);
		if (write(fd, text, len) != (ssize_t)len || write(fd, "\n", 1) != 1)
			r = al_err_sys(err, errno ? errno : EIO, "writing the verdict %s", want);
		close(fd);
	} else {
		r = fd;
	}
	free(text);
	return r;
}

/* ---- the audit log ------------------------------------------------------------------------------- */

static int open_log(struct audit_log **log, struct al_error *err)
{
	const char *env = getenv("AIRLOCK_AUDIT");
	cleanup_free char *path = NULL;
	if (env && env[0] == '/')
		path = strdup(env);
	else if (audit_default_path(geteuid() == 0, &path) < 0)
		path = NULL;
	if (!path)
		return al_err(err, ENOMEM, "audit log: no path");
	/* The log's directory, as `airlock serve` makes it on first start. */
	char *slash = strrchr(path, '/');
	if (slash && slash != path) {
		*slash = 0;
		for (char *p = path + 1; *p; p++)
			if (*p == '/') {
				*p = 0;
				mkdir(path, 0755);
				*p = '/';
			}
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return al_err_sys(err, errno, "audit log directory %s", path);
		*slash = '/';
	}
	struct audit_options o = {.path = path, .fsync = false, .rotate_bytes = AL_UNLIMITED, .keep = 1};
	return audit_open(&o, log, err);
}

int ort_audit(bool start, const char *id, const json_t *params, const json_t *resources, const char *status,
	      struct al_error *err)
{
	struct audit_log *log = NULL;
	int r = open_log(&log, err);
	if (r < 0)
		return r;
	char peer[64];
	snprintf(peer, sizeof(peer), "pid %d (airlock-runc's caller)", (int)getppid());
	struct audit_record rec = {.event = start ? AUDIT_EVENT_START : AUDIT_EVENT_END,
				   .call_id = id,
				   .transport = "oci",
				   .peer = peer,
				   .sandbox = id,
				   .tool = "oci_container",
				   .params = params,
				   .decision = AUDIT_NOT_DECIDED,
				   .status = status,
				   .resources = resources};
	r = audit_write(log, &rec, err);
	audit_close(log);
	return r;
}
