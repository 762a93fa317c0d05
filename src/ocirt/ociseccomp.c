/* ociseccomp.c — a config's linux.seccomp compiled into BPF with libseccomp, in the parent (strict on input). */
#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctr.h"
#include "util/cleanup.h"
#include "util/error.h"

static int parse_action(json_t *j, json_t *errno_ret, uint32_t *out, struct al_error *err)
{
	const char *a = json_string_value(j);
	if (!a)
		return al_err(err, EINVAL, "linux.seccomp: an action must be a string");
	int e = json_is_integer(errno_ret) ? (int)json_integer_value(errno_ret) : EPERM;
	if (e < 0 || e > 4095)
		return al_err(err, EINVAL, "linux.seccomp: errnoRet out of range");
	if (!strcmp(a, "SCMP_ACT_ALLOW"))
		*out = SCMP_ACT_ALLOW;
	else if (!strcmp(a, "SCMP_ACT_ERRNO"))
		*out = SCMP_ACT_ERRNO((uint32_t)e);
	else if (!strcmp(a, "SCMP_ACT_KILL") || !strcmp(a, "SCMP_ACT_KILL_THREAD"))
		*out = SCMP_ACT_KILL;
	else if (!strcmp(a, "SCMP_ACT_KILL_PROCESS"))
		*out = SCMP_ACT_KILL_PROCESS;
	else if (!strcmp(a, "SCMP_ACT_TRAP"))
		*out = SCMP_ACT_TRAP;
	else if (!strcmp(a, "SCMP_ACT_LOG"))
		*out = SCMP_ACT_LOG;
	else if (!strcmp(a, "SCMP_ACT_TRACE"))
		*out = SCMP_ACT_TRACE((uint32_t)e);
	else
		return al_err(err, ENOTSUP,
			      "linux.seccomp: action %s is not supported (SCMP_ACT_NOTIFY needs a listener)", a);
	return 0;
}

static int parse_op(const char *op, enum scmp_compare *out)
{
	static const struct {
		const char *name;
		enum scmp_compare op;
	} ops[] = {{"SCMP_CMP_NE", SCMP_CMP_NE},
		   {"SCMP_CMP_LT", SCMP_CMP_LT},
		   {"SCMP_CMP_LE", SCMP_CMP_LE},
		   {"SCMP_CMP_EQ", SCMP_CMP_EQ},
		   {"SCMP_CMP_GE", SCMP_CMP_GE},
		   {"SCMP_CMP_GT", SCMP_CMP_GT},
		   {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ}};
	for (size_t i = 0; op && i < AL_ARRAY_SIZE(ops); i++)
		if (strcmp(ops[i].name, op) == 0) {
			*out = ops[i].op;
			return 0;
		}
	return -EINVAL;
}

#define MAX_ARGS 6

static int add_rule(scmp_filter_ctx ctx, const char *name, uint32_t act, json_t *args, struct al_error *err)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return 0; /* a call this architecture does not have (the profiles list every arch's) */
	struct scmp_arg_cmp cmp[MAX_ARGS];
	size_t n = json_array_size(args);
	if (args && !json_is_array(args))
		return al_err(err, EINVAL, "linux.seccomp: %s: args must be an array", name);
	if (n > MAX_ARGS)
		return al_err(err, EINVAL, "linux.seccomp: %s: more than %d argument rules", name, MAX_ARGS);
	for (size_t i = 0; i < n; i++) {
		json_t *a = json_array_get(args, i);
		json_t *idx = json_object_get(a, "index"), *v = json_object_get(a, "value"),
		       *v2 = json_object_get(a, "valueTwo");
		enum scmp_compare op;
		if (!json_is_integer(idx) || json_integer_value(idx) < 0 || json_integer_value(idx) >= MAX_ARGS ||
		    !json_is_integer(v) || (v2 && !json_is_integer(v2)) ||
		    parse_op(json_string_value(json_object_get(a, "op")), &op) < 0)
			return al_err(err, EINVAL, "linux.seccomp: %s: a malformed argument rule", name);
		cmp[i] = (struct scmp_arg_cmp){.arg = (unsigned)json_integer_value(idx),
					       .op = op,
					       .datum_a = (scmp_datum_t)json_integer_value(v),
					       .datum_b = v2 ? (scmp_datum_t)json_integer_value(v2) : 0};
	}
	int r = seccomp_rule_add_array(ctx, act, nr, (unsigned)n, n ? cmp : NULL);
	/* The default action already: libseccomp refuses the redundant rule, which changes nothing. */
	if (r == -EACCES || r == -EEXIST)
		return 0;
	return r < 0 ? al_err(err, -r, "linux.seccomp: rule for %s: %s", name, strerror(-r)) : 0;
}

static int add_syscalls(scmp_filter_ctx ctx, json_t *calls, struct al_error *err)
{
	if (calls && !json_is_array(calls))
		return al_err(err, EINVAL, "linux.seccomp.syscalls must be an array");
	size_t i, k;
	json_t *c, *n;
	json_array_foreach(calls, i, c) {
		uint32_t act = 0;
		json_t *names = json_object_get(c, "names");
		int r = parse_action(json_object_get(c, "action"), json_object_get(c, "errnoRet"), &act, err);
		if (r < 0)
			return r;
		if (!json_is_array(names))
			return al_err(err, EINVAL, "linux.seccomp.syscalls[].names must be an array");
		json_array_foreach(names, k, n) {
			if (!json_is_string(n))
				return al_err(err, EINVAL, "linux.seccomp: a system call name must be a string");
			if ((r = add_rule(ctx, json_string_value(n), act, json_object_get(c, "args"), err)) < 0)
				return r;
		}
	}
	return 0;
}

static int export(scmp_filter_ctx ctx, struct sock_fprog *out, struct al_error *err)
{
	cleanup_close int fd = memfd_create("airlock-oci-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return al_err_sys(err, errno, "seccomp: memfd_create");
	int r = seccomp_export_bpf(ctx, fd);
	struct stat st;
	if (r < 0 || fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size % sizeof(struct sock_filter))
		return al_err(err, r < 0 ? -r : EIO, "linux.seccomp: exporting the filter failed");
	struct sock_filter *f = malloc((size_t)st.st_size);
	if (!f)
		return al_err(err, ENOMEM, "out of memory");
	if (pread(fd, f, (size_t)st.st_size, 0) != st.st_size) {
		free(f);
		return al_err_sys(err, errno, "seccomp: reading the filter");
	}
	out->filter = f;
	out->len = (unsigned short)((size_t)st.st_size / sizeof(*f));
	return 0;
}

int ort_seccomp_compile(json_t *sc, struct sock_fprog *out, struct al_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!json_is_object(sc))
		return al_err(err, EINVAL, "linux.seccomp must be an object");
	if (json_object_get(sc, "listenerPath"))
		return al_err(err, ENOTSUP, "linux.seccomp.listenerPath (user notification) is not supported");
	uint32_t dflt = 0;
	int r = parse_action(json_object_get(sc, "defaultAction"), json_object_get(sc, "defaultErrnoRet"), &dflt, err);
	if (r < 0)
		return r;
	scmp_filter_ctx ctx = seccomp_init(dflt);
	if (!ctx)
		return al_err(err, ENOMEM, "seccomp_init failed");
	/* No_new_privs is airlock's to decide (the plan), not libseccomp's. */
	seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	r = add_syscalls(ctx, json_object_get(sc, "syscalls"), err);
	if (r == 0)
		r = export(ctx, out, err);
	seccomp_release(ctx);
	return r;
}
