/* verdict.c — what happened to a job, as a struct and as one JSON object; sandbox failure apart from program failure. */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "job.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/text.h"

const char *al_status_name(enum al_status s)
{
	switch (s) {
	case AL_STATUS_EXITED:
		return "exited";
	case AL_STATUS_SIGNALED:
		return "signaled";
	case AL_STATUS_TIMEOUT:
		return "timeout";
	case AL_STATUS_OUTPUT_LIMIT:
		return "output-limit";
	case AL_STATUS_SETUP_ERROR:
		return "setup-error";
	case AL_STATUS_OOM:
		return "oom";
	case AL_STATUS_KILLED:
		return "killed";
	}
	return "unknown";
}

int al_verdict_exit_code(const struct al_verdict *v)
{
	switch (v->status) {
	case AL_STATUS_EXITED:
		return v->exit_code;
	case AL_STATUS_SIGNALED:
		return 128 + v->signal;
	case AL_STATUS_OUTPUT_LIMIT:
		return v->signal ? 128 + v->signal : v->exit_code;
	case AL_STATUS_TIMEOUT:
		return 124;
	case AL_STATUS_SETUP_ERROR:
		return 125;
	case AL_STATUS_OOM:
		return v->signal ? 128 + v->signal : 137;
	case AL_STATUS_KILLED:
		return 128 + v->signal; /* as a shell reports a command ended by that signal */
	}
	return 125;
}

void al_verdict_free(struct al_verdict *v)
{
	if (!v)
		return;
	free(v->out.data);
	free(v->err.data);
	free(v->enforced_json);
	free(v->proxy_json);
	free(v);
}

static void take_stream(struct al_stream_result *r, struct pump *p)
{
	r->bytes = p->total;
	r->truncated = p->total > p->limit;
	r->kept = p->len;
	if (p->capture) {
		char *b = realloc(p->buf, p->len + 1); /* room for the terminator */
		if (b)
			b[p->len] = 0;
		r->data = b;
		p->buf = NULL;
		p->len = p->cap = 0;
	}
}

static void setup_message(struct al_verdict *v, const struct nat_record *rec)
{
	char what[sizeof(rec->what) + 1];
	memcpy(what, rec->what, sizeof(rec->what));
	what[sizeof(rec->what)] = 0;
	enum nat_stage st = (enum nat_stage)rec->stage;
	if (st == NS_EXEC && (rec->err == ENOENT || rec->err == ENOTDIR))
		al_err(&v->setup, rec->err, "command not found in the sandbox: %s", what);
	else if (st == NS_EXEC)
		al_err(&v->setup, rec->err, "cannot execute %s in the sandbox: %s", what, strerror(rec->err));
	else
		al_err(&v->setup, rec->err,
		       "setup failed while %s%s%s%s: %s (kernel feature: %s); the command never ran",
		       nat_stage_name(st), *what ? " (" : "", what, *what ? ")" : "", strerror(rec->err),
		       nat_stage_feature(st));
}

static void classify(struct al_job *j, struct al_verdict *v)
{
	if (j->setup_err.kind == NK_ERROR) {
		v->status = AL_STATUS_SETUP_ERROR;
		setup_message(v, &j->setup_err);
	} else if (j->stop_signal) {
		v->status = AL_STATUS_KILLED;
		v->signal = j->stop_signal;
	} else if (j->timed_out) {
		v->status = AL_STATUS_TIMEOUT;
		v->signal = SIGKILL;
	} else if (j->have_status && WIFEXITED(j->wstatus)) {
		v->status = AL_STATUS_EXITED;
		v->exit_code = WEXITSTATUS(j->wstatus);
	} else if (j->have_status && WIFSIGNALED(j->wstatus)) {
		v->status = AL_STATUS_SIGNALED;
		v->signal = WTERMSIG(j->wstatus);
	} else if (j->proc.foreign && __atomic_load_n(&j->kill_asked, __ATOMIC_SEQ_CST)) {
		/* An exec of a held sandbox its caller killed (a cancel, a kill, its sandbox destroyed):
		 * its init died with the payload before any record, as the kill meant. */
		v->status = AL_STATUS_KILLED;
		v->signal = SIGKILL;
	} else if (j->si.si_code == CLD_KILLED || j->si.si_code == CLD_DUMPED) {
		/* init itself was killed from outside (e.g. the OOM killer): everything died with it. */
		v->status = AL_STATUS_SIGNALED;
		v->signal = j->si.si_status;
	} else {
		v->status = AL_STATUS_SETUP_ERROR;
		al_err(&v->setup, EPROTO, "the sandbox's init exited (code %d) without reporting the command's end",
		       j->si.si_status);
	}
	if (v->status == AL_STATUS_SIGNALED && v->signal == SIGKILL && j->have_cgu && j->cgu.oom_kills > 0)
		v->status = AL_STATUS_OOM;
	if (v->status == AL_STATUS_SIGNALED && v->signal == SIGSYS && j->proc.seccomp_kills)
		v->seccomp_killed = true;
	if ((v->status == AL_STATUS_EXITED || v->status == AL_STATUS_SIGNALED) &&
	    (v->out.truncated || v->err.truncated))
		v->status = AL_STATUS_OUTPUT_LIMIT;
}

/* The enforced object from the backend, completed with the supervisor's cgroup. */
static char *enforced_with_cgroup(const struct al_job *j)
{
	/* A copy of the first level: the backend's object may be the held sandbox's, shared by its execs. */
	json_t *e = j->proc.enforced ? json_copy(j->proc.enforced) : json_object();
	if (!e)
		return NULL;
	json_t *cg = json_false();
	if (j->cg && j->have_cgu) {
		const struct cg_usage *u = &j->cgu;
		/* Under gVisor the pids limit bounds the runtime's host tasks only: never said to bound
		 * the payload's processes (be_proc.pids_host_tasks). */
		bool host_tasks = j->proc.pids_host_tasks;
		cg = json_pack("{s:s,s:b,s:b,s:b}", "version", cg_version_name(j->cg), "memory", u->memory_limited,
			       "pids", u->pids_limited && !host_tasks, "cpu", u->cpu_limited);
		if (cg && host_tasks)
			json_object_set_new(cg, "pids_host_tasks", json_boolean(u->pids_limited));
	}
	json_object_set_new(e, "cgroup", cg ? cg : json_false());
	char *s = json_dumps(e, JSON_COMPACT);
	json_decref(e);
	return s;
}

int jv_build(struct al_job *j, struct al_verdict **out, struct al_error *err)
{
	struct al_verdict *v = calloc(1, sizeof(*v));
	if (!v)
		return al_err(err, ENOMEM, "out of memory");
	take_stream(&v->out, &j->out);
	take_stream(&v->err, &j->err);
	classify(j, v);
	v->wall_s = j->wall_s;
	v->user_s = (double)j->ru.ru_utime.tv_sec + (double)j->ru.ru_utime.tv_usec / 1e6;
	v->system_s = (double)j->ru.ru_stime.tv_sec + (double)j->ru.ru_stime.tv_usec / 1e6;
	v->peak_rss_kib = (uint64_t)j->ru.ru_maxrss;
	if (j->have_cgu) {
		/* The cgroup sees the whole tree, including processes nobody reaped. */
		v->cgroup_used = true;
		if (j->cgu.cpu_accounted) { /* else the rusage of init (a delegated v1 tree may lack cpuacct) */
			v->user_s = j->cgu.user_s;
			v->system_s = j->cgu.system_s;
		}
		v->peak_memory_bytes = j->cgu.peak_memory_bytes;
		v->oom_kills = j->cgu.oom_kills;
		v->pids_limit_hit = j->cgu.pids_limit_hit;
	}
	/* What a cgroup would have enforced and did not: only defaults get this far unapplied. */
	bool applied[3] = {j->have_cgu && j->cgu.memory_limited, j->have_cgu && j->cgu.pids_limited,
			   j->have_cgu && j->cgu.cpu_limited};
	for (int l = 0; l < 3; l++)
		if (j->cg_wanted[l] && !applied[l])
			v->limits_not_applied |= 1u << cg_limits_of[l];
	if (j->wrote_back) {
		v->workdir_written = true;
		v->workdir_files = j->wb.files;
		v->workdir_deleted = j->wb.deleted;
		v->workdir_bytes = j->wb.bytes;
		memcpy(v->workdir_error, j->wb.error, sizeof(v->workdir_error));
	}
	if (j->kept_changes) {
		v->changes_kept = true;
		v->changes_files = j->kc.files;
		v->changes_deleted = j->kc.deleted;
		v->changes_bytes = j->kc.bytes;
		memcpy(v->changes_error, j->kc.error, sizeof(v->changes_error));
	}
	v->backend = j->proc.backend;
	memcpy(v->image, j->image, sizeof(v->image));
	memcpy(v->image_name, j->image_name, sizeof(v->image_name));
	v->enforced_json = enforced_with_cgroup(j);
	v->proxy_json = jv_proxy_json(j);
	*out = v;
	return 0;
}

/* JSON strings must be UTF-8: invalid bytes become U+FFFD, everything else is kept. */
static json_t *json_bytes(const char *s, size_t n)
{
	json_t *j = txt_json_lossy(s, n);
	return j ? j : json_null();
}

static json_t *stream_json(const struct al_stream_result *r)
{
	json_t *o = json_pack("{s:I,s:I,s:b}", "bytes", (json_int_t)r->bytes, "kept", (json_int_t)r->kept, "truncated",
			      r->truncated);
	if (o && r->data)
		json_object_set_new(o, "data", json_bytes(r->data, r->kept));
	return o;
}

int al_verdict_to_json(const struct al_verdict *v, char **out, struct al_error *err)
{
	bool exited = v->status == AL_STATUS_EXITED || (v->status == AL_STATUS_OUTPUT_LIMIT && !v->signal);
	json_t *o = json_pack("{s:i,s:s,s:o,s:o,s:f,s:f,s:f,s:I,s:o,s:o,s:s}", "version", 1, "status",
			      al_status_name(v->status), "exit_code", exited ? json_integer(v->exit_code) : json_null(),
			      "signal", v->signal ? json_integer(v->signal) : json_null(), "wall_time_s", v->wall_s,
			      "cpu_user_s", v->user_s, "cpu_system_s", v->system_s, "peak_rss_kib",
			      (json_int_t)v->peak_rss_kib, "stdout", stream_json(&v->out), "stderr",
			      stream_json(&v->err), "backend", v->backend ? v->backend : "native");
	if (!o)
		return al_err(err, ENOMEM, "verdict: building JSON failed");
	json_object_set_new(o, "peak_memory_bytes",
			    v->cgroup_used ? json_integer((json_int_t)v->peak_memory_bytes) : json_null());
	json_object_set_new(o, "oom_kills", v->cgroup_used ? json_integer((json_int_t)v->oom_kills) : json_null());
	json_object_set_new(o, "pids_limit_hit", v->cgroup_used ? json_boolean(v->pids_limit_hit) : json_null());
	json_object_set_new(o, "seccomp_killed", json_boolean(v->seccomp_killed));
	json_t *na = json_array();
	for (int l = 0; na && l < AL_LIMIT__COUNT; l++)
		if (v->limits_not_applied & (1u << l))
			json_array_append_new(na, json_string(al_limit_name((enum al_limit)l)));
	json_object_set_new(o, "limits_not_applied", na ? na : json_null());
	if (v->workdir_written)
		json_object_set_new(o, "workdir",
				    json_pack("{s:I,s:I,s:I,s:o}", "files", (json_int_t)v->workdir_files, "deleted",
					      (json_int_t)v->workdir_deleted, "bytes", (json_int_t)v->workdir_bytes,
					      "error",
					      v->workdir_error[0] ? json_string(v->workdir_error) : json_null()));
	if (v->changes_kept)
		json_object_set_new(o, "changes",
				    json_pack("{s:I,s:I,s:I,s:o}", "files", (json_int_t)v->changes_files, "deleted",
					      (json_int_t)v->changes_deleted, "bytes", (json_int_t)v->changes_bytes,
					      "error",
					      v->changes_error[0] ? json_string(v->changes_error) : json_null()));
	json_t *enf = v->enforced_json ? json_loads(v->enforced_json, 0, NULL) : NULL;
	/* Which ids ran, as the backend reported them: the image's User's, or the sandbox user's. */
	if (v->image[0])
		json_object_set_new(o, "image",
				    json_pack("{s:s,s:s,s:O*,s:O*}", "name", v->image_name, "digest", v->image, "uid",
					      json_object_get(enf, "payload_uid"), "gid",
					      json_object_get(enf, "payload_gid")));
	json_object_set_new(o, "enforced", enf ? enf : json_object());
	json_t *px = v->proxy_json ? json_loads(v->proxy_json, 0, NULL) : NULL;
	if (px)
		json_object_set_new(o, "proxy", px);
	if (v->status == AL_STATUS_SETUP_ERROR)
		json_object_set_new(o, "error", json_pack("{s:s}", "message", v->setup.msg));
	*out = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6));
	json_decref(o);
	return *out ? 0 : al_err(err, ENOMEM, "verdict: out of memory");
}
