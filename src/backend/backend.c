/* backend.c — one policy, several boundaries: picks the backend the policy names. Never falls
 * back to another one: a backend that is missing or cannot enforce the policy refuses. */
#include <errno.h>

#include "backend/backend.h"
#include "util/error.h"

const char *al_backend_name(enum al_backend b)
{
	switch (b) {
	case AL_BACKEND_NATIVE:
		return "native";
	case AL_BACKEND_BWRAP:
		return "bwrap";
	case AL_BACKEND_GVISOR:
		return "gvisor";
	case AL_BACKEND_OCI:
		return "oci";
	case AL_BACKEND_NONE:
		return "none";
	}
	return "?";
}

int al_policy_set_backend(struct al_policy *p, enum al_backend b, struct al_error *err)
{
	switch (b) {
	case AL_BACKEND_NATIVE:
	case AL_BACKEND_BWRAP:
	case AL_BACKEND_GVISOR:
	case AL_BACKEND_OCI:
	case AL_BACKEND_NONE:
		p->backend = b;
		return 0;
	}
	return al_err(err, EINVAL, "--backend: unknown backend %d", (int)b);
}

enum al_backend al_policy_get_backend(const struct al_policy *p)
{
	return p->backend;
}

int be_spawn(const struct al_policy *p, const struct be_io *io, struct be_proc *out, struct al_error *err)
{
	if (p->attach)
		return be_attach_spawn(p, io, out, err);
	if (io->hold && p->backend != AL_BACKEND_NATIVE)
		return al_err(err, EINVAL, "held sandboxes (airlock serve) need the native backend, not %s",
			      al_backend_name(p->backend));
	switch (p->backend) {
	case AL_BACKEND_NATIVE:
		return be_native_spawn(p, io, out, err);
	case AL_BACKEND_BWRAP:
		return be_bwrap_spawn(p, io, out, err);
	case AL_BACKEND_GVISOR:
		return be_gvisor_spawn(p, io, out, err);
	case AL_BACKEND_OCI:
		return be_oci_spawn(p, io, out, err);
	case AL_BACKEND_NONE:
		return be_none_spawn(p, io, out, err);
	}
	return al_err(err, EINVAL, "unknown backend %d", (int)p->backend);
}
