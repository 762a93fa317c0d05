/* plan.h — what a policy means, computed once and purely: every layer, every limit, the network
 * posture with its derived facts, and what the policy asks of a backend beyond the basics.
 *
 * The backends read the plan, never re-derive it: which namespace the posture gets, whether lo is
 * raised, whether the egress proxy lives there, whether inet sockets are allowed. backend/
 * capability.h compares a plan with a backend's capability table (be_refuse) and writes the
 * verdict's "enforced" object from the plan and what the backend applied (be_enforced). */
#ifndef AL_POLICY_PLAN_H
#define AL_POLICY_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"

/* The network posture and everything that follows from it. */
struct pol_net_plan {
	enum al_net_posture posture;
	const char *name;     /* pol_net_name: the verdict's "network" */
	bool own_netns;	      /* every posture but host gets a network namespace of the job's */
	bool proxy;	      /* the egress proxy's listening socket lives in it (allow=, or brokers) */
	const char *loopback; /* "up": lo raised in the job's namespace; "host": the host's own */
	/* AF_INET/AF_INET6 sockets (the seccomp filter's allow_inet): in a namespace of the job's
	 * under every posture (under "none" it holds only the job's own lo, as Docker's and
	 * bubblewrap's do); with no namespace at all (the fallback) only under "host", since the
	 * host's lo is not the job's to use. */
	bool inet_in_netns;
	bool inet_without_netns;
	/* The egress capture (allowlist posture): the sandbox's resolver on AL_DNS_ADDR:53 and a
	 * listener on each port, every address (network/capture.h says what they serve). */
	struct pol_capture {
		bool on;
		uint8_t nports;
		uint16_t ports[AL_CAPTURE_MAX_PORT];
	} capture;
};

/* What a policy asks of a backend beyond the namespaces, the root and the filter every backend
 * makes. Each is a row of a backend's capability table (backend/capability.h), in the order
 * refusals are tried. */
enum pol_need {
	PN_LANDLOCK,	  /* --require landlock */
	PN_CHECKOUT_COPY, /* --checkout-mode copy: a throwaway copy made inside the sandbox */
	PN_KEEP_CHANGES,  /* --keep-changes: the copy's overlay exported */
	PN_SUBIDS,	  /* --subids: the caller's subordinate ids mapped */
	PN_FALLBACK,	  /* --fallback: no user namespaces */
	PN_HOLD,	  /* a held sandbox (airlock serve) */
	PN_WORKDIR_DISK,  /* --workdir capped by --disk */
	PN_WORKDIR,	  /* --workdir with the changes written back */
	PN_ROOTLESS,	  /* run by an ordinary user */
	PN_NET_HOST,	  /* --net host */
	PN_PIDS,	  /* an explicit --pids or --require cgroup-pids: a promise about the payload's processes */
	PN_CPU_TIME,	  /* --cpu-time: RLIMIT_CPU that stops the payload */
	PN_CGROUPNS,	  /* --require cgroupns */
	PN_PIVOT_ROOT,	  /* --require pivot_root */
	PN_PROXY,	  /* the egress proxy (--net allow=..., --broker) */
	PN_TTY,		  /* a terminal of the sandbox's own (al_spawn_opts.tty, airlock run -t) */
	PN__COUNT,
};

struct pol_plan {
	uint32_t require; /* enum pol_req bits: the floor */
	int require_landlock_abi;
	enum al_seccomp_profile seccomp;
	bool landlock;
	struct pol_net_plan net;
	const uint64_t *limits; /* the policy's, by enum al_limit */
	uint32_t limits_set;
	bool root;	   /* the caller is host root (a fact of the host the plan is made on) */
	uint32_t needs;	   /* bit (1 << enum pol_need) for each need */
	bool sends_uppers; /* init hands overlay upper layers to the supervisor (--workdir, --keep-changes) */
};

/* The plan of policy p for a caller who is root or not. Pure: reads p, no system call. */
void pol_plan_build(const struct al_policy *p, bool root, struct pol_plan *out);
static inline bool pol_plan_needs(const struct pol_plan *pl, enum pol_need n)
{
	return pl->needs & (1u << n);
}
/* Refusals no backend can lift, tried before a backend's own: the policy contradicts itself (a
 * required layer turned off, a netns floor with --net host, files for a --workdir) or the caller
 * (--id-base as a user). 0 or a refusal naming the conflict. */
int pol_plan_conflicts(const struct al_policy *p, const struct pol_plan *pl, struct al_error *err);
/* Refusals tried after a backend's own (which name the flag the backend lacks first): a flag
 * that means something only with another (--keep-changes without a copied checkout, --subids as
 * root). */
int pol_plan_misuse(const struct al_policy *p, const struct pol_plan *pl, struct al_error *err);

#endif
