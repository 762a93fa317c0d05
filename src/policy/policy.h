/* policy.h — the policy object's insides, shared by the layers above the public API. */
#ifndef AL_POLICY_POLICY_H
#define AL_POLICY_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "airlock/airlock.h"

#define AL_SANDBOX_UID	    1000   /* the payload's uid/gid inside the sandbox, unless an image's User names others */
#define AL_SANDBOX_ACCOUNT  "user" /* their name (passwd, group, USER, LOGNAME): E2B's, as its users' code expects */
#define AL_IDS_PER_SANDBOX  65536
#define AL_DEFAULT_ID_BASE  1879048192u /* 0x70000000: above systemd's container ranges */
#define AL_DEFAULT_HOSTNAME "airlock"
#define AL_WORKSPACE	    "/workspace"
#define AL_CHECKOUT_DEST    "/workspace/src"

struct al_file {
	char *dest; /* absolute inside path beneath /workspace */
	char *data;
	size_t len;
	unsigned mode;
};

struct al_bind {
	char *src;  /* absolute, canonical host path */
	char *dest; /* absolute path inside */
	bool writable;
	bool is_dir;
};

/* The protection floor (al_policy_require): each bit is a layer that must be enforced. */
enum pol_req {
	REQ_USERNS = 1u << 0,
	REQ_PIDNS = 1u << 1,
	REQ_MNTNS = 1u << 2,
	REQ_NETNS = 1u << 3,
	REQ_IPCNS = 1u << 4,
	REQ_UTSNS = 1u << 5,
	REQ_CGROUPNS = 1u << 6,
	REQ_PIVOT_ROOT = 1u << 7,
	REQ_SECCOMP = 1u << 8,
	REQ_LANDLOCK = 1u << 9,
	REQ_CGROUP_MEMORY = 1u << 10,
	REQ_CGROUP_PIDS = 1u << 11,
	REQ_CGROUP_CPU = 1u << 12,
	REQ_NO_NEW_PRIVS = 1u << 13,
	REQ_CAPS = 1u << 14,
};

/* Parses "userns,netns,seccomp,landlock>=4,cgroup-memory" (also "all"). Pure. */
int pol_parse_require(const char *spec, uint32_t *bits, int *landlock_abi, struct al_error *err);

struct al_policy {
	int argc;
	char **argv;
	char **env; /* "NAME=VALUE", already resolved */
	size_t nenv;
	struct al_bind *binds;
	size_t nbinds;
	struct al_file *files;
	size_t nfiles;
	char *workdir;	  /* canonical host dir bound at /workspace, or NULL for a tmpfs */
	char **ws_layers; /* a held sandbox's workspace: lower layers of an overlay, the top first */
	size_t nws_layers;
	char *hostname;
	char *rootfs;	       /* canonical host dir whose /usr, /bin, /lib... replace the host's, or NULL */
	struct img_ref *image; /* the image rootfs comes from (its lock held while the policy lives), or NULL */
	char *checkout;	       /* canonical host dir, or NULL */
	char *checkout_dest;   /* inside path */
	enum al_checkout_mode checkout_mode;
	char *keep_changes; /* absolute host path for the exported changes, or NULL */
	char *cwd;
	uint64_t limits[AL_LIMIT__COUNT];
	uint32_t limits_set; /* bit (1 << enum al_limit) for each limit set explicitly */
	uint32_t id_base;
	uint32_t run_uid, run_gid; /* the payload's ids inside: AL_SANDBOX_UID, or an image's User (image.c) */
	enum al_seccomp_profile seccomp;
	bool landlock;
	uint32_t require;	  /* enum pol_req bits */
	int require_landlock_abi; /* minimum Landlock ABI when REQ_LANDLOCK */
	bool fallback;		  /* without user namespaces, run on Landlock + seccomp alone */
	bool limits_best_effort;  /* default cgroup limits the host cannot enforce are reported, not refused */
	bool subids;		  /* unprivileged: also map the caller's subordinate ids */
	bool no_systemd_scope;	  /* never ask the user's systemd for a delegated scope (cgroup-systemd: never) */
	enum al_net_posture net;
	enum al_backend backend;
	/* The egress proxy (AL_NET_ALLOW; brokers also with AL_NET_NONE): see netpolicy.c. */
	struct al_allowlist *allow;
	struct al_cidr_list *allow_private;
	struct pol_brokers *brokers; /* shared with running proxies: see pol_brokers_ref */
	char *proxy_hosts;	     /* hosts(5) file for the proxy's resolver, or NULL */
	/* TLS terminated at airlock (network/pxtls.c): the sandbox's CA, made in memory once the
	 * policy has a request rule or a secret; shared with running proxies by reference. */
	struct tls_ca *tls_ca;
	struct al_secrets *secrets;
	char *upstream_ca; /* PEM file verifying upstreams, or NULL: the host's store */
	bool proxy_http;   /* forward absolute-form plain-HTTP requests too */
	uint32_t proxy_max_conns;
	uint64_t proxy_idle_ms;
	struct al_sandbox *attach; /* run in this held sandbox instead of a new one (supervisor/sandbox.c) */
	/* Host configuration beneath /etc shown read-only where it exists (etcview.c): patterns
	 * (glob(7)) the configured languages read, each checked by pol_etc_check. */
	char **etc;
	size_t netc;
};
#define AL_ETC_PATTERNS 64

/* Whether path (or glob pattern) beneath /etc may be shown: 0, or -EPERM when it is, holds or
 * names a place of secrets or of the host's network configuration, -EINVAL when not a clean path
 * beneath /etc. Pure. */
int pol_etc_check(const char *path, struct al_error *err);
/* Adds a checked pattern to p->etc (once). */
int pol_add_etc(struct al_policy *p, const char *pattern, struct al_error *err);

#define AL_PROXY_DEFAULT_CONNS	 64
#define AL_PROXY_DEFAULT_IDLE_MS 60000

/* Does this policy need the egress proxy's socket inside the sandbox? */
bool pol_needs_proxy(const struct al_policy *p);
/* The policy's brokers (NULL if none). A running proxy takes a reference, so a job may outlive
 * its policy; pol_brokers_release drops one. Do not add brokers while jobs use the policy. */
struct al_broker_list *pol_brokers(const struct al_policy *p);
void *pol_brokers_ref(const struct al_policy *p);
void pol_brokers_release(void *ref);
/* The job's proxy and broker variables (HTTPS_PROXY..., AIRLOCK_BROKER_<NAME>_URL): a malloc'd
 * array of *n malloc'd "NAME=VALUE" strings (empty when no proxy), or NULL when out of memory. */
char **pol_net_env(const struct al_policy *p, size_t *n);
void pol_free_net(struct al_policy *p);
/* Adds a secret the configuration names (network/secrets.h), the sandbox's CA made with it. */
struct al_secret_src;
int al_policy_add_secret_src(struct al_policy *p, const struct al_secret_src *src, struct al_error *err);
/* A held sandbox's CA and secrets for a policy run in it (an exec): references taken, each only
 * where p has none, so the exec's trust store and placeholders are the sandbox's own. */
void pol_share_tls(struct al_policy *p, struct tls_ca *ca, struct al_secrets *secrets);
struct al_secrets *pol_secrets(const struct al_policy *p);
struct tls_ca *pol_tls_ca(const struct al_policy *p);
/* The CA bundle files the sandbox gets where TLS is terminated: the system's bundle plus the
 * sandbox's CA, and the CA alone (NODE_EXTRA_CA_CERTS adds to Node's own). On an image, whose
 * /etc is its own and read-only, they are beside airlock's other files there (IMG_ETC_OWN). */
#define AL_CA_DIR	  "/etc/ssl/airlock"
#define AL_CA_DIR_IMAGE	  IMG_ETC_OWN "/ssl" /* image/image.h */
#define AL_CA_BUNDLE_FILE "bundle.pem"
#define AL_CA_CERT_FILE	  "ca.pem"
/* Where p's job finds them: AL_CA_DIR or AL_CA_DIR_IMAGE, then the file's name (into buf). */
const char *pol_ca_path(const struct al_policy *p, bool bundle, char *buf, size_t cap);
/* The sandbox CA's certificate (PEM), or NULL when nothing is terminated. */
const char *pol_tls_ca_pem(const struct al_policy *p);

/* A limit's default (policy.c, the one table of them): what al_policy_new starts with. */
uint64_t pol_default_limit(enum al_limit which);
/* Checks that a path inside the sandbox is absolute and free of "." and ".." parts. Pure. */
int pol_check_inside_path(const char *path, struct al_error *err);
/* The environment the payload gets (NULL-terminated, malloc'd): the policy's entries (--env), then
 * airlock's fixed base and the proxy's variables where --env did not set them, then the image's
 * Env where none of those did. */
char **pol_build_envp(const struct al_policy *p);
/* Whether s[0..len) is a variable name --env takes (letters, digits, '_'; no leading digit). Pure. */
bool pol_env_name_ok(const char *s, size_t len);
/* The image's Env as the image has it, "NAME=VALUE" (checked by al_policy_set_image), its first *n
 * entries taken (bounded); NULL and 0 without an image. */
char *const *pol_image_env(const struct al_policy *p, size_t *n);
/* The seccomp profiles' names, by enum al_seccomp_profile: the one table the command line, the
 * configuration, its dump and the verdict's "enforced" use. */
#define POL_SECCOMP_PROFILES 3
extern const char *const pol_seccomp_names[POL_SECCOMP_PROFILES];
/* A profile's name ("?" for none of them). */
const char *pol_seccomp_name(enum al_seccomp_profile p);
/* The posture's name ("none", "host", "allow"; "?" for no posture). */
const char *pol_net_name(enum al_net_posture n);
/* A posture chosen by its name alone ("none", its synonym "loopback", "host"): 0, or -EINVAL. */
int pol_net_parse(const char *name, enum al_net_posture *out);
/* Those names, in order, into names (at most max): how many. */
size_t pol_net_choices(const char **names, size_t max);
void pol_free_strv(char **v);
/* Replaces the first argument that equals from with a copy of to (a language's program file by
 * the path the sandbox reads it at): 1 when one was replaced, 0 when none equals from, -ENOMEM. */
int pol_argv_replace(struct al_policy *p, const char *from, const char *to);
/* The root filesystem the job runs on (a rootfs directory, an image's tree), NULL: the host's. */
const char *pol_rootfs(const struct al_policy *p);
/* Sets p's root: a rootfs (image false: a system tree, with /usr) or an image's root (any shape). */
int pol_set_root(struct al_policy *p, const char *dir, bool image, struct al_error *err);
/* Releases the policy's image (its lock too). */
void pol_free_image(struct al_policy *p);
/* Keeps an image's content in the default store for holder, a kept sandbox's record (img_pin). */
int pol_image_pin(const char *digest, const char *key, const char *holder, struct al_error *err);

#endif
