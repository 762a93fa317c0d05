/* capability.h — what each backend can enforce, in one table per backend; the one refusal and the one
 * "enforced" writer every backend shares.
 *
 * Design. A policy becomes one pure plan (policy/plan.h) once, in be_spawn. Every backend
 * declares a capability table (struct be_caps): for each need of a plan (enum pol_need) either
 * nothing (it can) or why it cannot, in its own words. be_refuse compares the plan with the table
 * and refuses what the backend cannot carry, naming what is missing ("the bwrap backend cannot
 * take --workdir safely: ..."); then the refusals no backend can lift (pol_plan_conflicts) and the
 * host's own limits (no cgroup namespaces, an old Landlock ABI). A backend that is spawned has
 * therefore nothing left to refuse but what it finds while setting up. Once it has set up, it
 * fills a struct be_applied (what it actually made: namespaces, id map, filter, ruleset, its
 * runtime) and be_enforced makes the verdict's "enforced" object from the plan and that
 * record, so the keys, the network facts and their names are written in one place. A new backend
 * is a spawn function, a capability table (with its name and stale-cleanup hook) and a row in backend.c's table. */
#ifndef AL_BACKEND_CAPABILITY_H
#define AL_BACKEND_CAPABILITY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "host/host.h"
#include "policy/plan.h"

struct ll_spec;
struct sc_options;

struct be_caps {
	const char *name; /* the backend's name, as --backend and the verdict say it */
	/* NULL: the backend carries this need; else why not, the refusal's tail ("bubblewrap has no
	 * Landlock support (use --backend native)"). */
	const char *lacks[PN__COUNT];
	bool isolation;	      /* false: the none backend, which makes no layer (its own refusals) */
	bool kernel_cgroupns; /* its cgroup namespace is the host kernel's: refused where there is none */
	bool kernel_landlock; /* its Landlock is the host kernel's: the floor's ABI is checked against it */
	/* It makes the job's planned cgroup (be_io.cg, cg_make) itself, once it has started its
	 * process where the cgroup is moved into (v1): else be_spawn makes it before the spawn. */
	bool makes_cgroup;
	/* Removes what a dead supervisor's jobs of this backend left outside their cgroups (an OCI
	 * runtime's bundles and state): NULL when nothing can be left. be_cleanup_stale calls it. */
	void (*cleanup_stale)(void);
};

/* Reasons more than one backend gives. */
#define BE_WHY_NO_COPY                                                                                   \
	"the throwaway copy is made by airlock's own init inside the sandbox (use --backend native, or " \
	"--checkout-mode ro)"
#define BE_WHY_NO_KEEP	"it needs the copied checkout's overlay (use --backend native)"
#define BE_WHY_NO_HOLD	"only the native backend's init serves later commands"
#define BE_WHY_NO_TTY	"only the native backend opens a pty of the sandbox's own devpts (use --backend native)"
#define BE_WHY_NO_WBACK "(use --backend native, which copies the changes back with set-id bits dropped, or --checkout)"

extern const struct be_caps be_native_caps, be_bwrap_caps, be_oci_caps, be_gvisor_caps, be_none_caps;

/* The host facts a refusal depends on (probed by the caller). */
struct be_host {
	bool cgroupns;	  /* the kernel has cgroup namespaces */
	int landlock_abi; /* the kernel's Landlock ABI, 0 without */
};

/* 0 if the backend of caps can carry plan pl of policy p on this host, else a refusal naming
 * the first thing missing (and -errno). */
int be_refuse(const struct be_caps *caps, const struct al_policy *p, const struct pol_plan *pl,
	      const struct be_host *host, struct al_error *err);

/* What `airlock check` tells of each backend: the host layers its table says it lacks, whatever
 * the host offers (host_backend_layers' lacks). */
void be_host_lacks(host_lacks_table *out);
/* Backend b's capability table (backend.c's row; the none backend's for an unknown b). */
const struct be_caps *be_caps_of(enum al_backend b);

/* The seccomp options of a plan: with a network namespace of the job's (or the host's), or with
 * none at all (the fallback). */
void be_sc_options(const struct pol_plan *pl, bool netns, struct sc_options *out);

/* Namespaces a backend made (be_applied.ns). */
enum be_ns {
	BE_NS_USER = 1u << 0,
	BE_NS_PID = 1u << 1,
	BE_NS_MOUNT = 1u << 2,
	BE_NS_NET = 1u << 3, /* the posture's own namespace: only where the plan has one */
	BE_NS_IPC = 1u << 4,
	BE_NS_UTS = 1u << 5,
	BE_NS_CGROUP = 1u << 6,
};
#define BE_NS_ALL (BE_NS_USER | BE_NS_PID | BE_NS_MOUNT | BE_NS_NET | BE_NS_IPC | BE_NS_UTS | BE_NS_CGROUP)

/* What a backend actually applied: each field a key of "enforced" (NULL strings and false
 * flags leave their key out, unless said otherwise). */
struct be_applied {
	const char *tool_key, *tool; /* "bwrap"/"runtime": the program that made the boundary */
	const char *isolation;	     /* "none": the none backend */
	bool fallback;		     /* "fallback": true */
	unsigned ns;		     /* enum be_ns: "namespaces" (always written) */
	bool pivot_root, readonly_root;
	/* "id_map": mode (NULL: null), host_base, count; "setgroups" (NULL: neither key) */
	const char *map_mode;
	json_int_t map_base, map_count;
	const char *setgroups;
	json_int_t payload_uid, payload_host_uid;
	json_int_t payload_gid, payload_host_gid;
	bool userns_disabled;
	const char *network;	 /* NULL: the plan's posture name */
	const char *netns_maker; /* "network_namespace" beside the host's or the proxy's (NULL: left out) */
	bool loopback;		 /* "loopback" from the plan */
	const char *seccomp;	 /* the profile's name, NULL: false */
	json_t *landlock;	 /* taken; NULL: false */
	const char *workdir, *files;
	bool cgroup_key; /* "cgroup": false (the supervisor sets it once it has the job's cgroup) */
	const char *kernel, *platform;
	bool disk_key;	       /* "disk": false */
	const char *workspace; /* the fallback's workspace directory */
};

/* The verdict's "enforced" object (a new reference; NULL when out of memory), carried as data to
 * the verdict, which adds the supervisor's own facts and writes it out once. */
json_t *be_enforced(const struct pol_plan *pl, const struct be_applied *a);
/* The "rlimits" entry: the limits rl_apply sets, in seconds and bytes (null: unlimited). */
json_t *be_rlimits_json(const uint64_t *limits);
/* The "landlock" entry: false without a spec, else the ABI and rule sets applied. */
json_t *be_landlock_json(const struct ll_spec *spec, int abi);

#endif
