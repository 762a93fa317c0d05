/* fuzz_oci_config.c — fuzz target for airlock-runc's config.json parser and the plan decided from it (security input). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ocirt/ctr.h"
#include "ocirt/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Parse, then decide under both privileges: each succeeds, or fails with -errno and a
 * terminated message; a plan never grants a capability under a confined profile; the hooks
 * (seed-hooks-docker: Docker's and every point) parse with the rest. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ort_spec s;
	struct al_error err = {0};
	int r = ort_spec_parse((const char *)data, size, "/bundle", &s, &err);
	if (r > 0 || (r < 0 && (err.code >= 0 || !memchr(err.msg, 0, sizeof(err.msg)))))
		abort();
	if (r < 0)
		return 0;
	if (!s.root || !s.proc.argv || !s.proc.argv[0] || !s.proc.cwd || s.proc.cwd[0] != '/')
		abort(); /* what create relies on after a successful parse */
	for (size_t i = 0; i < s.nmounts; i++)
		if (!s.mounts[i].dest || s.mounts[i].dest[0] != '/' || (s.mounts[i].bind && !s.mounts[i].source))
			abort();
	struct sock_fprog prog;
	err = (struct al_error){0};
	if (s.seccomp && ort_seccomp_compile(s.seccomp, &prog, &err) == 0)
		free(prog.filter);
	for (int root = 0; root < 2; root++) {
		struct ort_plan plan;
		err = (struct al_error){0};
		r = ort_plan_decide(&s, root, &plan, &err);
		if (r > 0 || (r < 0 && err.code >= 0))
			abort();
		if (r == 0 && plan.confined &&
		    (plan.caps.bounding | plan.caps.effective | plan.caps.permitted | plan.caps.ambient || !plan.nnp ||
		     !plan.airlock_seccomp || !plan.landlock || (!s.ns[ORT_NS_USER] && !plan.add_userns)))
			abort();
		/* The rootfs is idmapped exactly where airlock adds the user namespace, never over a
		 * config's own mapping (its engine's ids on disk) nor without any namespace. */
		if (r == 0 && (ort_rootmap_wanted(&s, &plan) == ORT_ROOTMAP_IDMAPPED) != plan.add_userns)
			abort();
	}
	ort_spec_free(&s);
	return 0;
}
