/* spec.h — an OCI bundle's config.json as plain data, and airlock's decision about it (the runtime's plan). */
#ifndef AL_OCIRT_SPEC_H
#define AL_OCIRT_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "airlock/airlock.h"
#include "hooks.h"

#define ORT_MAX_IDMAPS 8
#define ORT_MAX_GIDS   32

struct ort_mount {
	char *dest;	      /* absolute, inside the container */
	char *type;	      /* "bind" for binds (also when options say bind/rbind) */
	char *source;	      /* host path for binds, else the filesystem's source name */
	char *data;	      /* options that are not flags, comma-joined ("mode=755,size=64k"), or NULL */
	unsigned long flags;  /* MS_* flags asked (MS_RDONLY, MS_NOSUID, ...) */
	unsigned long propag; /* MS_PRIVATE|MS_SLAVE|... with MS_REC, or 0 */
	bool bind, rec;
};

/* A linux.sysctl entry: its /proc/sys file inside the container and the value to write. */
struct ort_sysctl {
	char *key;  /* as given: "net.ipv4.ping_group_range" */
	char *path; /* "/proc/sys/net/ipv4/ping_group_range" */
	char *value;
};

struct ort_idmap {
	uint32_t inside, host, size;
};

/* Whether the container's root owns its image's files (decided by create, ort_rootmap_of). */
enum ort_rootmap_mode {
	ORT_ROOTMAP_HOST,	 /* no user namespace: the container's ids are the host's, nothing to map */
	ORT_ROOTMAP_CONFIG,	 /* the config's own user namespace: its engine's ids stand, unmapped (as runc) */
	ORT_ROOTMAP_IDMAPPED,	 /* an idmapped rootfs: container id N reads and writes the image's on-disk id N */
	ORT_ROOTMAP_UNSUPPORTED, /* the filesystem (or kernel) has no idmapped mounts: the image keeps host ids */
};
struct ort_rootmap {
	enum ort_rootmap_mode mode;
	int err;     /* UNSUPPORTED: mount_setattr's errno */
	char fs[24]; /* the rootfs's filesystem (IDMAPPED, UNSUPPORTED), by its magic (ort_fs_name) */
};

struct ort_rlimit {
	int resource;
	uint64_t soft, hard;
};

/* Capability sets as bit masks (bit n: capability n). */
struct ort_caps {
	uint64_t bounding, effective, permitted, inheritable, ambient;
};

/* The process of config.json, or of `exec --process`. */
struct ort_process {
	char **argv; /* NULL-terminated */
	char **envp; /* NULL-terminated */
	char *cwd;
	uint32_t uid, gid;
	uint32_t gids[ORT_MAX_GIDS];
	size_t ngids;
	bool terminal, nnp;
	struct ort_caps caps;
	struct ort_rlimit *rlimits;
	size_t nrlimits;
};

/* Namespace types by index (clone flags in ort_ns_flag). */
enum ort_ns {
	ORT_NS_PID,
	ORT_NS_NET,
	ORT_NS_IPC,
	ORT_NS_UTS,
	ORT_NS_MNT,
	ORT_NS_USER,
	ORT_NS_CGROUP,
	ORT_NS__COUNT
};

struct ort_resources {
	int64_t memory;	     /* bytes, -1: none */
	int64_t pids;	     /* -1: none */
	int64_t cpu_quota;   /* microseconds per period, -1: none */
	uint64_t cpu_period; /* 0: default */
	uint64_t cpu_shares; /* 0: none */
};

struct ort_spec {
	char *root; /* the rootfs, absolute (joined with the bundle) */
	bool root_ro;
	struct ort_process proc;
	char *hostname;
	struct ort_mount *mounts;
	size_t nmounts;
	bool ns[ORT_NS__COUNT];	      /* a namespace of this type is asked for */
	char *ns_path[ORT_NS__COUNT]; /* ... joined at this path instead of a new one */
	struct ort_idmap uidmap[ORT_MAX_IDMAPS], gidmap[ORT_MAX_IDMAPS];
	size_t nuidmap, ngidmap;
	char **masked, **readonly; /* NULL-terminated */
	char *cgroups_path;	   /* NULL: the runtime chooses */
	struct ort_resources res;
	json_t *seccomp;	   /* linux.seccomp as given, or NULL */
	json_t *annotations;	   /* object, or NULL */
	unsigned long root_propag; /* linux.rootfsPropagation, 0: rprivate */
	size_t ndevices;	   /* linux.devices entries (refused unless profile none) */
	struct ort_sysctl *sysctls;
	size_t nsysctls;
	struct ort_hooks hooks;
	json_t *hooks_json; /* config.json's hooks as given (create keeps it for start and delete), or NULL */
	bool has_apparmor, has_selinux, has_intel_rdt;
	size_t hidden_mounts;	    /* set by create: mounts a user namespace cannot make, now empty tmpfs */
	struct ort_rootmap rootmap; /* set by create: whether the rootfs is idmapped */
};

/* What airlock makes of a spec under a profile (ort_plan_decide). */
struct ort_plan {
	bool confined;	      /* a confined profile (anything but "none") */
	const char *profile;  /* static */
	bool add_userns;      /* the config has no user namespace: airlock adds one mapping 0..65535 */
	uint32_t id_base;     /* host id of container id 0 when add_userns */
	bool airlock_seccomp; /* airlock's default allowlist, stacked on the config's filter */
	bool landlock;
	bool nnp;
	struct ort_caps caps; /* what the process gets: config ∩ profile ceiling */
	bool net_join;	      /* joins a network namespace by path (io.airlock.net=pod) */
	const char *verdict;  /* io.airlock.verdict: a file beneath the verdict directory, or NULL (borrowed) */
};

#define ORT_ANN_PROFILE "io.airlock.profile"
#define ORT_ANN_NET	"io.airlock.net"
#define ORT_ANN_VERDICT "io.airlock.verdict"
#define ORT_ANN_SECCOMP "io.airlock.seccomp" /* "config-only": no airlock allowlist (profile none only) */

/* Parses config.json text of the bundle directory BUNDLE (absolute) into *s. Pure: no file is
 * touched. 0 or -errno with err naming the field (and *s then holds nothing to free). */
int ort_spec_parse(const char *text, size_t len, const char *bundle, struct ort_spec *s, struct al_error *err);
void ort_spec_free(struct ort_spec *s);
/* A process object (config's process, or exec's process.json). */
int ort_process_parse(json_t *j, struct ort_process *p, struct al_error *err);
void ort_process_free(struct ort_process *p);
/* Capability name ("CAP_SYS_ADMIN") to number, -1 when unknown. */
int ort_cap_number(const char *name);
/* Capability n's name, or NULL past the last one known. */
const char *ort_cap_name(int n);
int ort_ns_flag(enum ort_ns ns);
/* Decides what the container gets under its profile, or refuses (-EPERM, err says what and why).
 * is_root: the runtime runs as root (it can map a range of ids). Pure. */
int ort_plan_decide(const struct ort_spec *s, bool is_root, struct ort_plan *plan, struct al_error *err);
/* net.ipv4.ping_group_range's value "LO HI" narrowed to the ids the gid map m holds (out: "A B",
 * or "1 0" when none). -EINVAL: not two ids. Pure. */
int ort_ping_range_clamp(const char *value, const struct ort_idmap *m, size_t n, char out[32]);
/* The namespaced sysctls that name ids, narrowed to the container's maps (create, after the plan). */
int ort_sysctls_clamp(struct ort_spec *s, const struct ort_plan *plan, struct al_error *err);
/* What create aims for with the rootfs under plan: IDMAPPED exactly where airlock adds the user
 * namespace (the config asked for none, so its files are the host's, as under runc); CONFIG where
 * the config brings its own (its engine chose the ids on disk); HOST without one. Pure. */
enum ort_rootmap_mode ort_rootmap_wanted(const struct ort_spec *s, const struct ort_plan *plan);
/* What mount_setattr's answer to the idmapping makes of it: 0, IDMAPPED; an errno meaning "this
 * filesystem or kernel cannot" (EINVAL, EOPNOTSUPP, ENOSYS; EPERM: idmapped already), UNSUPPORTED;
 * anything else -1 (create fails). Pure. */
int ort_rootmap_after(int setattr_err);
/* The record's word for a mode: "host", "config", "idmapped", "unsupported". */
const char *ort_rootmap_word(enum ort_rootmap_mode m);
/* A filesystem's name from its statfs magic ("overlay", "ext4", ...), else "0x..." in buf. Pure. */
const char *ort_fs_name(unsigned long magic, char buf[24]);
/* An annotation's value, or NULL. */
const char *ort_annotation(const struct ort_spec *s, const char *key);

#endif
