/* bundle.c — the policy as an OCI bundle's config.json: pure data, built from the native backend's filesystem plan. */
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <linux/netlink.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "bundle.h"
#include "util/cleanup.h"
#include "util/error.h"

/* fsplan.c stages the --workdir overlay's layers under this directory of the new root. */
#define OCI_STAGE ".airlock"

/* ---- the seccomp profile as linux.seccomp (runsc --oci-seccomp) ----------------------- */

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
/* seccomp.c's: clone may not make namespaces. */
#define OCI_CLONE_NS_MASK                                                                                            \
	(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | \
	 CLONE_NEWTIME)

/* One rule: names, an action, and up to two argument conditions (index, mask, value; masked
 * equality, as libseccomp's SCMP_CMP_MASKED_EQ: OCI value is the mask, valueTwo the datum). */
static int sc_rule(json_t *rules, json_t *names, const char *action, int nargs, const uint64_t (*args)[3])
{
	json_t *r = names ? json_pack("{s:o,s:s}", "names", names, "action", action) : NULL;
	json_t *a = nargs ? json_array() : NULL;
	for (int i = 0; a && i < nargs; i++)
		if (json_array_append_new(a, json_pack("{s:I,s:I,s:I,s:s}", "index", (json_int_t)args[i][0], "value",
						       (json_int_t)args[i][1], "valueTwo", (json_int_t)args[i][2], "op",
						       "SCMP_CMP_MASKED_EQ")) < 0)
			json_decref(steal_ptr(a));
	if (!r || (nargs && (!a || json_object_set_new(r, "args", steal_ptr(a)) < 0))) {
		json_decref(r);
		json_decref(a);
		return -ENOMEM;
	}
	return json_array_append_new(rules, r) < 0 ? -ENOMEM : 0;
}

static int sc_rule1(json_t *rules, const char *name, const char *action, int nargs, const uint64_t (*args)[3])
{
	return sc_rule(rules, json_pack("[s]", name), action, nargs, args);
}

/* seccomp.c's add_arg_rules and its ioctl prologue, as OCI rules. Rules for one call are
 * tried in order (the denials of ioctl before its allow). A name the filter filters by
 * argument that is not known here fails the build: never a silent allow. */
static int sc_arg_rules(json_t *rules, const struct sc_options *so, const char *name, struct al_error *err)
{
	const uint64_t lo = 0xffffffffULL;
	int r = 0;
	if (strcmp(name, "clone") == 0)
		return sc_rule1(rules, name, "SCMP_ACT_ALLOW", 1, (const uint64_t[][3]){{0, OCI_CLONE_NS_MASK, 0}});
	if (strcmp(name, "ioctl") == 0)
		return sc_rule1(rules, name, "SCMP_ACT_ERRNO", 1, (const uint64_t[][3]){{1, lo, TIOCSTI}}) ?:
		       sc_rule1(rules, name, "SCMP_ACT_ERRNO", 1, (const uint64_t[][3]){{1, lo, TIOCLINUX}}) ?:
		       sc_rule1(rules, name, "SCMP_ACT_ALLOW", 0, NULL);
	if (strcmp(name, "socketpair") == 0)
		return sc_rule1(rules, name, "SCMP_ACT_ALLOW", 1, (const uint64_t[][3]){{0, lo, AF_UNIX}});
	if (strcmp(name, "socket") == 0) {
		const int fam[] = {AF_UNIX, AF_INET, AF_INET6};
		for (int i = 0; r == 0 && i < (so->allow_inet ? 3 : 1); i++)
			r = sc_rule1(rules, name, "SCMP_ACT_ALLOW", 1,
				     (const uint64_t[][3]){{0, lo, (uint64_t)fam[i]}});
		if (r == 0 && so->allow_inet)
			r = sc_rule1(rules, name, "SCMP_ACT_ALLOW", 2,
				     (const uint64_t[][3]){{0, lo, AF_NETLINK}, {2, lo, NETLINK_ROUTE}});
		return r;
	}
	if (strcmp(name, "personality") == 0) {
		/* PER_LINUX and the query everywhere; PER_LINUX32, UNAME26 and both in default */
		const uint64_t both[] = {0x0, 0xffffffff}, dflt[] = {0x8, 0x20000, 0x20008};
		for (size_t i = 0; r == 0 && i < AL_ARRAY_SIZE(both); i++)
			r = sc_rule1(rules, name, "SCMP_ACT_ALLOW", 1, (const uint64_t[][3]){{0, lo, both[i]}});
		for (size_t i = 0; r == 0 && so->profile != AL_SECCOMP_STRICT && i < AL_ARRAY_SIZE(dflt); i++)
			r = sc_rule1(rules, name, "SCMP_ACT_ALLOW", 1, (const uint64_t[][3]){{0, lo, dflt[i]}});
		return r;
	}
	int mode_arg, flags_arg;
	if (sc_mode_args(name, &mode_arg, &flags_arg)) {
		/* seccomp.c's mode_filtered: allowed when the mode has no set-id bit, or (the open
		 * family) when no file is made; otherwise the default action (EPERM). */
		r = sc_rule1(rules, name, "SCMP_ACT_ALLOW", 1,
			     (const uint64_t[][3]){{(uint64_t)mode_arg, SC_SETID_MODE, 0}});
		if (r == 0 && flags_arg >= 0)
			r = sc_rule1(rules, name, "SCMP_ACT_ALLOW", 1,
				     (const uint64_t[][3]){{(uint64_t)flags_arg, SC_CREATE_FLAGS, 0}});
		return r;
	}
	return al_err(err, ENOTSUP, "seccomp: no OCI rule for the argument filter of %s", name);
}

int oci_seccomp_json(const struct sc_options *so, json_t **out, struct al_error *err)
{
	*out = NULL;
	json_t *allow = json_array(), *kill = json_array(), *rules = json_array();
	int r = allow && kill && rules ? 0 : -ENOMEM, h = sc_horizon();
	for (int nr = 0; r == 0 && nr <= h; nr++) {
		cleanup_free char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nr);
		if (!name)
			continue;
		switch (sc_classify(so, name)) {
		case SC_ACT_ALLOW:
			r = json_array_append_new(allow, json_string(name)) < 0 ? -ENOMEM : 0;
			break;
		case SC_ACT_ARGS:
			r = sc_arg_rules(rules, so, name, err);
			break;
		case SC_ACT_KILL:
			r = json_array_append_new(kill, json_string(name)) < 0 ? -ENOMEM : 0;
			break;
		case SC_ACT_ENOSYS:
			/* clone3: glibc falls back to clone only on ENOSYS, which this runsc cannot
			 * return from a rule (every denial is EPERM, errnoRet is ignored); gVisor's
			 * kernel answers ENOSYS for clone3 itself. openat2 is not let through the same
			 * way, although this gVisor answers ENOSYS for it too: its mode (a set-id bit)
			 * is in a struct no rule can read, so a runsc that implements openat2 would be
			 * a hole. It gets the default, EPERM. Other ENOSYS names lie above the
			 * horizon: the default as well. */
			if (strcmp(name, "clone3") == 0)
				r = json_array_append_new(allow, json_string(name)) < 0 ? -ENOMEM : 0;
			break;
		case SC_ACT_EPERM:
			break; /* the default action */
		}
	}
	/* runsc 20221219 names x86_64 call 270 "pselect" and skips names it does not know, so
	 * "pselect6" alone left it denied (glibc's select() is pselect6: python's select.select
	 * failed with EPERM). Both names: the same call, already allowed. */
	if (r == 0 && sc_classify(so, "pselect6") == SC_ACT_ALLOW)
		r = json_array_append_new(allow, json_string("pselect")) < 0 ? -ENOMEM : 0;
	/* SCMP_ACT_KILL (the thread): this runsc has no SCMP_ACT_KILL_PROCESS. */
	if (r == 0)
		r = sc_rule(rules, json_incref(allow), "SCMP_ACT_ALLOW", 0, NULL);
	if (r == 0 && json_array_size(kill))
		r = sc_rule(rules, json_incref(kill), "SCMP_ACT_KILL", 0, NULL);
	json_decref(allow);
	json_decref(kill);
	json_t *sc = r == 0 ? json_pack("{s:s,s:[s],s:O}", "defaultAction", "SCMP_ACT_ERRNO", "architectures",
					"SCMP_ARCH_X86_64", "syscalls", rules)
			    : NULL;
	json_decref(rules);
	if (!sc)
		return r < 0 && err && err->code ? r : al_err(err, ENOMEM, "building linux.seccomp: out of memory");
	*out = sc;
	return 0;
}

/* ---- small pure helpers ------------------------------------------------------------- */

char *oci_base64(const void *data, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *in = data;
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
			     (i + 2 < n ? in[i + 2] : 0);
		*o++ = tab[v >> 18 & 63];
		*o++ = tab[v >> 12 & 63];
		o[0] = tab[v >> 6 & 63];
		o[1] = tab[v & 63];
		if (i + 1 >= n)
			o[0] = '=';
		if (i + 2 >= n)
			o[1] = '=';
		o += 2;
	}
	*o = 0;
	return out;
}

int oci_wstatus(int code)
{
	/* Both runtimes fold a signal into 128+N, so a payload that exits 128+N cannot be told
	 * from one killed by signal N: reported as the signal, as a shell would read it. */
	if (code > 128 && code <= 128 + 64)
		return code - 128;
	return (code & 0xff) << 8;
}

bool oci_log_error(const char *buf, size_t n, char *msg, size_t size)
{
	static const char key[] = "{\"msg\":\"", err[] = "\"level\":\"error\"";
	bool found = false;
	/* One JSON object per line: {"msg":"...","level":"error","time":"..."}. */
	for (const char *line = buf, *end = buf + n; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t len = nl ? (size_t)(nl - line) : (size_t)(end - line);
		if (len > sizeof(key) && memcmp(line, key, sizeof(key) - 1) == 0 &&
		    memmem(line, len, err, sizeof(err) - 1)) {
			const char *m = line + sizeof(key) - 1;
			size_t k = 0;
			/* An escaped character is taken as itself: runsc quotes the command it could not
			 * find (error finding executable \"X\"), and the message goes on past it. */
			for (; m < line + len && *m != '"' && k + 1 < size; m++) {
				if (*m == '\\' && m + 1 < line + len)
					m++;
				msg[k++] = *m;
			}
			msg[k] = 0;
			found = k > 0;
		}
		line += len + 1;
	}
	return found;
}

static bool under(const char *dest, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(dest, dir, n) == 0 && (dest[n] == 0 || dest[n] == '/');
}

/* Ops that make a mount: everything below their destination exists only inside it. */
static bool is_mount(const struct fs_op *op)
{
	return op->kind == FS_BIND || op->kind == FS_TMPFS || op->kind == FS_PROC || op->kind == FS_DEVPTS ||
	       op->kind == FS_OVERLAY || op->kind == FS_FILE;
}

bool oci_on_rootfs(const struct fs_plan *plan, size_t i)
{
	const struct fs_op *op = &plan->ops[i];
	if (op->skip || under(op->dest, OCI_STAGE) || op->kind == FS_SETATTR || op->kind == FS_CHOWN)
		return false;
	for (size_t k = 0; k < i; k++) {
		const struct fs_op *m = &plan->ops[k];
		if (!m->skip && is_mount(m) && strcmp(m->dest, op->dest) != 0 && under(op->dest, m->dest))
			return false;
	}
	return true;
}

/* ---- mounts ------------------------------------------------------------------------- */

static json_t *strv(const char *const *v)
{
	json_t *a = json_array();
	for (; a && *v; v++)
		if (json_array_append_new(a, json_string(*v)) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* "/" + a plan destination (plan destinations are relative to the new root). */
static char *abs_dest(const char *dest)
{
	char *s = NULL;
	return asprintf(&s, "/%s", dest) < 0 ? NULL : s;
}

static int add_mount(json_t *mounts, const char *dest, const char *type, const char *src, json_t *opts)
{
	cleanup_free char *d = dest[0] == '/' ? strdup(dest) : abs_dest(dest);
	json_t *m = opts && d ? json_pack("{s:s,s:s,s:s,s:o}", "destination", d, "type", type, "source", src, "options",
					  opts)
			      : NULL;
	if (!m) {
		json_decref(opts);
		return -ENOMEM;
	}
	return json_array_append_new(mounts, m) < 0 ? -ENOMEM : 0;
}

/* mount(2) and mount_setattr(2) flags as OCI mount options. */
static int flag_opts(json_t *o, unsigned long mflags, uint64_t attr)
{
	int r = 0;
	if ((mflags & MS_RDONLY) || (attr & MOUNT_ATTR_RDONLY))
		r = r ?: json_array_append_new(o, json_string("ro"));
	if ((mflags & MS_NOSUID) || (attr & MOUNT_ATTR_NOSUID))
		r = r ?: json_array_append_new(o, json_string("nosuid"));
	if ((mflags & MS_NODEV) || (attr & MOUNT_ATTR_NODEV))
		r = r ?: json_array_append_new(o, json_string("nodev"));
	if ((mflags & MS_NOEXEC) || (attr & MOUNT_ATTR_NOEXEC))
		r = r ?: json_array_append_new(o, json_string("noexec"));
	return r < 0 ? -ENOMEM : 0;
}

static int bind_mount(json_t *mounts, const char *dest, const char *src, uint64_t attr)
{
	json_t *o = strv((const char *const[]){"rbind", "rprivate", NULL});
	if (!o || flag_opts(o, 0, attr) < 0) {
		json_decref(o);
		return -ENOMEM;
	}
	return add_mount(mounts, dest, "bind", src, o);
}

/* A plan tmpfs: its option string ("size=N,mode=0755,uid=1000,gid=1000") carries over; the ids
 * are the sandbox's, which the container's user namespace maps. */
static int tmpfs_mount(json_t *mounts, const char *dest, const char *text, unsigned long mflags)
{
	json_t *o = json_array();
	int r = o ? flag_opts(o, mflags, 0) : -ENOMEM;
	cleanup_free char *copy = strdup(text);
	char *save = NULL;
	for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; r == 0 && t; t = strtok_r(NULL, ",", &save))
		r = json_array_append_new(o, json_string(t)) < 0 ? -ENOMEM : 0;
	if (r < 0 || !copy) {
		json_decref(o);
		return -ENOMEM;
	}
	return add_mount(mounts, dest, "tmpfs", "tmpfs", o);
}

/* The runtime makes /dev itself (a tmpfs with null, zero, full, random, urandom, tty and the
 * fd/stdio/ptmx links: the plan's set); POSIX shared memory, a symlink to /tmp in the native
 * view, gets a tmpfs of --disk bytes of its own, as under bwrap.
 * crun: /dev read-only, as the plan's FS_SETATTR makes it, once crun has made its nodes: as an
 * ordinary user the runtime's tmpfs belongs to the only mapped id, the payload's, which could
 * otherwise add or replace nodes (/dev/null). "ro" on the tmpfs itself, which crun mounts
 * read-write, fills and then remounts with the mount's own flags (ro,nosuid,noexec): not
 * readonlyPaths, whose bind-and-remount in crun 1.8.1 drops nosuid and noexec (oci.sh reads
 * /proc/self/mountinfo). Its own mounts (pts, shm) stay as they are. gVisor's /dev is its own
 * devtmpfs, not writable by the payload, and a read-only one refuses writes to /dev/null. */
static int dev_mounts(json_t *mounts, const struct fs_op *op, const struct al_policy *p, const struct oci_opts *o)
{
	char shm[64];
	snprintf(shm, sizeof(shm), "size=%llu,mode=1777", (unsigned long long)p->limits[AL_LIMIT_DISK]);
	unsigned long ro = o->runtime == OCI_CRUN ? MS_RDONLY : 0;
	int r = tmpfs_mount(mounts, "/dev", op->text, op->mflags | ro)
			?: tmpfs_mount(mounts, "/dev/shm", shm, MS_NOSUID | MS_NODEV | MS_NOEXEC);
	/* crun, with Landlock: the IPC namespace's mqueue filesystem at /dev/mqueue, whose root is
	 * the inode of the namespace's internal mount that mq_open uses, so the layout's rule on it
	 * lets the job use its own POSIX queues (the native init reaches it with a detached mount,
	 * which needs a capability airlock-init does not have). */
	if (r == 0 && o->landlock)
		r = add_mount(mounts, "/dev/mqueue", "mqueue", "mqueue",
			      strv((const char *const[]){"nosuid", "nodev", "noexec", NULL}));
	return r;
}

/* Is op i an FS_FILE that the plan then gives to the sandbox user (the policy's files)? */
static bool file_owned(const struct fs_plan *plan, size_t i)
{
	return plan->ops[i].kind == FS_FILE && i + 1 < plan->n && plan->ops[i + 1].kind == FS_CHOWN &&
	       strcmp(plan->ops[i + 1].dest, plan->ops[i].dest) == 0;
}

/* Devices and /dev links come with the runtime's /dev; only binds the policy asked for are a
 * user's. The private devpts is the plan's too: the runtime mounts none unless the spec lists it
 * (without it os.openpty(), script and expect fail with ENOENT: /dev/ptmx points into it). */
static bool from_dev_setup(const struct fs_op *op)
{
	if (!under(op->dest, "dev") || strcmp(op->dest, "dev") == 0 || op->kind == FS_DEVPTS)
		return false;
	return op->kind != FS_BIND || !(op->attr_set & MOUNT_ATTR_NODEV);
}

static int plan_op(json_t *mounts, const struct fs_plan *plan, size_t i, const struct al_policy *p,
		   const struct oci_opts *o)
{
	const struct fs_op *op = &plan->ops[i];
	if (op->skip || under(op->dest, OCI_STAGE) || from_dev_setup(op))
		return 0;
	switch (op->kind) {
	case FS_MKDIR:
	case FS_SYMLINK:
		return 0; /* made in the rootfs directory (oci_on_rootfs), or by the runtime in /dev */
	case FS_FILE:
		/* The generated /etc files and the policy's own files (airlock exec's code): read-only
		 * binds of files in the bundle, which the sandbox user can read but not change. */
		if (!o->file_src || !o->file_src[i])
			return -EBADF;
		/* runsc: gVisor makes a missing mount point a directory, so a file cannot be bound
		 * inside the /workspace tmpfs; airlock-init copies the policy's files there instead. */
		if (o->init_exec && file_owned(plan, i))
			return 0;
		return bind_mount(mounts, op->dest, o->file_src[i],
				  MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	case FS_CHOWN:
		return i > 0 && file_owned(plan, i - 1) ? 0 : -ENOTSUP;
	case FS_BIND:
		return bind_mount(mounts, op->dest, op->src, op->attr_set);
	case FS_TMPFS:
		return strcmp(op->dest, "dev") == 0 ? dev_mounts(mounts, op, p, o)
						    : tmpfs_mount(mounts, op->dest, op->text, op->mflags);
	case FS_PROC: {
		json_t *opts =
			strv((op->mflags & MS_RDONLY) ? (const char *const[]){"ro", "nosuid", "nodev", "noexec", NULL}
						      : (const char *const[]){"nosuid", "nodev", "noexec", NULL});
		return add_mount(mounts, op->dest, "proc", "proc", opts);
	}
	case FS_DEVPTS: {
		json_t *opts = strv(
			(const char *const[]){"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", NULL});
		return add_mount(mounts, op->dest, "devpts", "devpts", opts);
	}
	case FS_SETATTR:
		return 0; /* the root is read-only (root.readonly); /dev stays the runtime's */
	case FS_OVERLAY:
		/* No overlay: the --workdir is bound read-write (reported as such, and refused with
		 * an explicit --disk, which only the overlay could enforce). */
		if (strcmp(op->dest, &AL_WORKSPACE[1]) != 0 || !p->workdir)
			return -ENOTSUP;
		return bind_mount(mounts, AL_WORKSPACE, p->workdir, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	case FS_SENDFD:
	case FS_UMOUNT:
	case FS_RMDIR:
	case FS_COPY:
		break;
	}
	return -ENOTSUP;
}

/* The job's own cgroups, read-only at FS_CGROUP_VIEW, as the native backend shows them
 * (cgroup/view.c): binds of the job's cgroup directories, not a "cgroup" mount, which crun makes
 * of every v1 hierarchy, also those whose cgroup is the supervisor's (showing the host's tree
 * from there). crun starts in the job's cgroups and unshares its cgroup namespace there, so
 * /proc/self/cgroup and mountinfo inside name the job's cgroup "/". No link for a co-mounted
 * hierarchy's controllers: an OCI mount list cannot make one. */
static int cgview_mounts(json_t *mounts, const struct cg_view *v)
{
	const uint64_t attrs = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
	if (v->whole)
		return bind_mount(mounts, FS_CGROUP_VIEW, v->h[0].path, attrs);
	int r = 0;
	for (int i = 0; r == 0 && i < v->n; i++) {
		char dest[sizeof(FS_CGROUP_VIEW) + sizeof(v->h[i].name)];
		snprintf(dest, sizeof(dest), "%s/%s", FS_CGROUP_VIEW, v->h[i].name);
		r = bind_mount(mounts, dest, v->h[i].path, attrs);
	}
	return r;
}

static json_t *mounts_json(const struct al_policy *p, const struct fs_plan *plan, const struct oci_opts *o,
			   struct al_error *err)
{
	json_t *mounts = json_array();
	/* airlock-init: the binary read-only, never setuid; a file mount point on the rootfs. With
	 * init_exec, the bundle's files beside it, read-only: the init copies from there. */
	if (mounts && o->init_src &&
	    (bind_mount(mounts, AI_PATH, o->init_src, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV) < 0 ||
	     (o->init_exec && (!o->files_dir || bind_mount(mounts, OCI_FILES_PATH, o->files_dir,
							   MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
								   MOUNT_ATTR_NOEXEC) < 0))))
		json_decref(steal_ptr(mounts));
	for (size_t i = 0; mounts && i < plan->n; i++) {
		int r = plan_op(mounts, plan, i, p, o);
		if (r < 0) {
			json_decref(mounts);
			if (r == -ENOMEM)
				break;
			al_err(err, -r, "the %s backend cannot set up /%s (plan step %d)",
			       o->runtime == OCI_RUNSC ? "gvisor" : "oci", plan->ops[i].dest, (int)plan->ops[i].kind);
			return NULL;
		}
	}
	if (mounts && plan->cgroup_view && o->cgview && cgview_mounts(mounts, o->cgview) < 0)
		json_decref(steal_ptr(mounts));
	if (!mounts)
		al_err(err, ENOMEM, "building config.json: out of memory");
	return mounts;
}

/* ---- process and linux -------------------------------------------------------------- */

static int append_str(json_t *a, const char *s)
{
	return json_array_append_new(a, json_string(s)) < 0 ? -ENOMEM : 0;
}

static int push_json(void *args, const char *s)
{
	return append_str(args, s);
}

/* airlock-init's options (ainit.h): every rlimit, for the payload alone, the ruleset; with init_exec
 * the policy's files, copied from the read-only OCI_FILES_PATH into place. */
static int init_args(json_t *args, const struct fs_plan *plan, const struct oci_opts *o)
{
	char buf[16];
	struct ai_opts ai = {.rlimits = o->rlimits,
			     .nrlimits = o->nrlimits,
			     .landlock = o->landlock,
			     .exec = o->init_exec,
			     .record_fd = -1};
	int r = ai_argv(&ai, push_json, args);
	for (size_t i = 0; r == 0 && o->init_exec && i < plan->n; i++) {
		if (!file_owned(plan, i))
			continue;
		const char *base = o->file_src && o->file_src[i] ? strrchr(o->file_src[i], '/') : NULL;
		if (!base)
			return -EBADF;
		cleanup_free char *src = NULL, *dest = abs_dest(plan->ops[i].dest);
		if (!dest || asprintf(&src, "%s%s", OCI_FILES_PATH, base) < 0) {
			src = NULL;
			return -ENOMEM;
		}
		snprintf(buf, sizeof(buf), "%o", plan->ops[i].mode & 07777);
		r = append_str(args, "--file") ?: append_str(args, src) ?: append_str(args, dest) ?: append_str(args, buf);
	}
	return r ?: append_str(args, "--");
}

/* The rlimits runc or runsc sets on the container's process. With airlock-init, which sets
 * them for the payload alone, only RLIMIT_CORE: the init never dumps core either (ainit.c). */
static json_t *rlimits_json(const struct oci_opts *o)
{
	json_t *rl = json_array();
	for (size_t i = 0; rl && i < o->nrlimits; i++) {
		if (o->init_src && o->rlimits[i].resource != RLIMIT_CORE)
			continue;
		if (json_array_append_new(rl, json_pack("{s:s,s:I,s:I}", "type", o->rlimits[i].type, "soft",
							(json_int_t)o->rlimits[i].soft, "hard",
							(json_int_t)o->rlimits[i].hard)) < 0)
			json_decref(steal_ptr(rl));
	}
	return rl;
}

static json_t *process_json(const struct al_policy *p, const struct fs_plan *plan, const struct oci_opts *o)
{
	char **envp = pol_build_envp(p);
	json_t *env = envp ? strv((const char *const *)envp) : NULL, *args = json_array(), *rl = rlimits_json(o);
	pol_free_strv(envp);
	/* airlock-init first, the payload's command after "--" (ainit.c) */
	if (args && o->init_src && init_args(args, plan, o) < 0)
		json_decref(steal_ptr(args));
	for (int i = 0; args && i < p->argc; i++)
		if (json_array_append_new(args, json_string(p->argv[i])) < 0)
			json_decref(steal_ptr(args));
	json_t *none = json_array();
	/* No capability in any set, no_new_privs: the payload holds nothing, even in its own
	 * user namespace; the sandbox user is uid/gid 1000 (or the image's User) with no
	 * supplementary groups, umask 022 (as the native payload's), whatever the caller's. */
	json_t *proc = json_pack("{s:b,s:{s:I,s:I,s:i},s:o,s:o,s:s,s:{s:O,s:O,s:O,s:O,s:O},s:b,s:o}", "terminal", 0,
				 "user", "uid", (json_int_t)p->run_uid, "gid", (json_int_t)p->run_gid, "umask", 022,
				 "args", args, "env", env, "cwd", p->cwd ? p->cwd : AL_WORKSPACE, "capabilities",
				 "bounding", none, "effective", none, "inheritable", none, "permitted", none, "ambient",
				 none, "noNewPrivileges", 1, "rlimits", rl);
	json_decref(none); /* each set holds its own reference ("O") */
	return proc;
}

/* As root: the sandbox's root to id_base and its user (id, 1000 or the image's User's) to
 * id_base+id, neither of them host root. As an ordinary user the runtime runs in a user
 * namespace of airlock's in which the caller is 0 (ocichild.c), so hostID 0 there is the caller:
 * the sandbox user is the caller. A group 0 (an image's "1001:0") is the one root entry. */
static json_t *id_map_json(const struct al_policy *p, bool root, uint32_t id)
{
	if (!root)
		return json_pack("[{s:I,s:i,s:i}]", "containerID", (json_int_t)id, "hostID", 0, "size", 1);
	json_t *m = json_pack("[{s:i,s:I,s:i}]", "containerID", 0, "hostID", (json_int_t)p->id_base, "size", 1);
	if (m && id != 0 &&
	    json_array_append_new(m, json_pack("{s:I,s:I,s:i}", "containerID", (json_int_t)id, "hostID",
					       (json_int_t)p->id_base + id, "size", 1)) < 0)
		json_decref(steal_ptr(m));
	return m;
}

static json_t *namespaces_json(const struct al_policy *p, const struct oci_opts *o)
{
	json_t *ns = strv((const char *const[]){"pid", "mount", "ipc", "uts", "user", NULL});
	json_t *out = json_array();
	for (size_t i = 0; ns && out && i < json_array_size(ns); i++)
		json_array_append_new(out, json_pack("{s:O}", "type", json_array_get(ns, i)));
	json_decref(ns);
	/* --net host shares the host's; the egress proxy's namespace is made by airlock around
	 * the runtime (ocichild.c), which the container then keeps. gVisor's network is its own
	 * stack (--network=none), so no host namespace is asked of it either way. */
	if (out && p->net != AL_NET_HOST && !pol_needs_proxy(p))
		json_array_append_new(out, json_pack("{s:s}", "type", "network"));
	if (out && o->runtime == OCI_CRUN)
		json_array_append_new(out, json_pack("{s:s}", "type", "cgroup"));
	return out;
}

static json_t *linux_json(const struct al_policy *p, const struct oci_opts *o)
{
	static const char *const masked[] = {"/proc/acpi",
					     "/proc/asound",
					     "/proc/kcore",
					     "/proc/keys",
					     "/proc/latency_stats",
					     "/proc/timer_list",
					     "/proc/timer_stats",
					     "/proc/sched_debug",
					     "/proc/scsi",
					     "/sys/firmware",
					     NULL};
	/* (/dev is read-only through its own mount's options: dev_mounts) */
	static const char *const ro[] = {"/proc/bus",		"/proc/fs", "/proc/irq", "/proc/sys",
					 "/proc/sysrq-trigger", NULL};
	return json_pack("{s:o,s:o,s:o,s:o,s:o}", "uidMappings", id_map_json(p, o->root, p->run_uid), "gidMappings",
			 id_map_json(p, o->root, p->run_gid), "namespaces", namespaces_json(p, o), "maskedPaths",
			 strv(masked), "readonlyPaths", strv(ro));
}

int oci_config_build(const struct al_policy *p, const struct fs_plan *plan, const struct oci_opts *o, json_t **out,
		     struct al_error *err)
{
	*out = NULL;
	json_t *mounts = mounts_json(p, plan, o, err);
	if (!mounts)
		return err && err->code ? err->code : -ENOMEM;
	json_t *c =
		json_pack("{s:s,s:o,s:{s:s,s:b},s:s,s:o,s:o}", "ociVersion", "1.0.2", "process",
			  process_json(p, plan, o), "root", "path", "rootfs", "readonly", 1, "hostname",
			  p->hostname ? p->hostname : AL_DEFAULT_HOSTNAME, "mounts", mounts, "linux", linux_json(p, o));
	json_t *sc = NULL;
	if (c && o->oci_seccomp &&
	    (oci_seccomp_json(o->oci_seccomp, &sc, err) < 0 ||
	     json_object_set_new(json_object_get(c, "linux"), "seccomp", sc) < 0)) {
		json_decref(c);
		return err && err->code ? err->code : al_err(err, ENOMEM, "building config.json: out of memory");
	}
	/* crun loads this program as it is, instead of linux.seccomp's rules: airlock's own filter. */
	if (c && o->runtime == OCI_CRUN && o->seccomp_b64 &&
	    json_object_set_new(c, "annotations", json_pack("{s:s}", "run.oci.seccomp_bpf_data", o->seccomp_b64)) < 0)
		json_decref(steal_ptr(c));
	if (!c)
		return al_err(err, ENOMEM, "building config.json: out of memory");
	*out = c;
	return 0;
}
