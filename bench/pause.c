/* pause.c — pausing a held sandbox in place and resuming it, through the library (al_sandbox_pause,
 * al_sandbox_resume): medians of N rounds on an idle sandbox (its init and spare), then with a
 * CPU-burning job running in it. Usage: pause ROUNDS. Prints one JSON object. */
#include <airlock/airlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "timing.h"

/* Medians of n pauses and resumes of sb, in ms (a short wait between them, as a client leaves). */
static int rounds(struct al_sandbox *sb, int n, double *pause_ms, double *resume_ms)
{
	double *p = calloc((size_t)n, sizeof(double)), *r = calloc((size_t)n, sizeof(double));
	struct al_error e = {0};
	for (int i = 0; p && r && i < n; i++) {
		double t0 = now();
		if (al_sandbox_pause(sb, &e) < 0) {
			fprintf(stderr, "pause: %s\n", e.msg);
			return -1;
		}
		double t1 = now();
		usleep(2000);
		double t2 = now();
		if (al_sandbox_resume(sb, &e) < 0) {
			fprintf(stderr, "resume: %s\n", e.msg);
			return -1;
		}
		p[i] = (t1 - t0) * 1e3;
		r[i] = (now() - t2) * 1e3;
		usleep(2000);
	}
	*pause_ms = median(p, n);
	*resume_ms = median(r, n);
	free(p);
	free(r);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200;
	struct al_policy *sp, *p;
	struct al_error e = {0};
	struct al_sandbox *sb;
	al_policy_new(&sp);
	if (al_sandbox_create(sp, &sb, &e) < 0) {
		fprintf(stderr, "pause: %s\n", e.msg);
		return 1;
	}
	const char *why = NULL, *fz = al_sandbox_freezer(sb, &why);
	if (!fz) {
		fprintf(stderr, "pause: no freezer: %s\n", why);
		return 77;
	}
	double idle_p, idle_r, busy_p, busy_r;
	if (rounds(sb, n, &idle_p, &idle_r) < 0)
		return 1;
	al_policy_new(&p);
	const char *av[] = {"/bin/sh", "-c", "while :; do :; done", NULL};
	al_policy_set_argv(p, 3, av, &e);
	al_policy_set_limit(p, AL_LIMIT_WALL_MS, 600000, &e);
	al_policy_set_sandbox(p, sb, &e);
	struct al_job *job = NULL;
	if (al_job_spawn(p, NULL, &job, &e) < 0) {
		fprintf(stderr, "pause: the burner: %s\n", e.msg);
		return 1;
	}
	usleep(100000);
	if (rounds(sb, n, &busy_p, &busy_r) < 0)
		return 1;
	al_job_kill(job);
	struct al_verdict *v = NULL;
	al_job_wait(job, &v, &e);
	al_verdict_free(v);
	al_job_free(job);
	al_policy_free(p);
	al_sandbox_destroy(sb);
	al_policy_free(sp);
	printf("{\"freezer\": \"%s\", \"rounds\": %d, \"idle\": {\"pause_ms\": %.3f, \"resume_ms\": %.3f}, "
	       "\"burning\": {\"pause_ms\": %.3f, \"resume_ms\": %.3f}}\n",
	       fz, n, idle_p, idle_r, busy_p, busy_r);
	return 0;
}
