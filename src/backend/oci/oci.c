/* oci.c — placeholder until the oci backend lands: refuses, never falls back. */
#include <errno.h>

#include "backend/backend.h"
#include "util/error.h"

int be_oci_spawn(const struct al_policy *p, const struct be_io *io, struct be_proc *out, struct al_error *err)
{
	(void)p;
	(void)io;
	(void)out;
	return al_err(err, ENOTSUP, "setup: the oci backend is not built yet (use --backend native)");
}
