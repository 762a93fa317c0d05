/* held.c — held sandboxes (airlock serve's engine), measured through the library: an exec of /bin/true
 * in a warm sandbox against a bare fork+exec (back to back, and with a 2 ms pause between execs as a
 * client would leave), creating a sandbox, and the memory of N idle sandboxes (fresh, and after one
 * exec, when each holds a spare payload). Usage: held EXECS SANDBOXES. Prints one JSON object. */
#include <airlock/airlock.h>
#include <dirent.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

extern char **environ;

/* Proportional set size of a process, in KiB. */
static long pss_kib(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	FILE *f = fopen(path, "re");
	long v = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Pss: %ld kB", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

/* The PSS of every descendant of pid (the sandboxes' inits and spares), and how many there are. */
static long tree_pss(pid_t pid, int *count)
{
	char path[64];
	long sum = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	for (struct dirent *de; d && (de = readdir(d));) {
		if (de->d_name[0] == '.')
			continue;
		char cpath[320];
		snprintf(cpath, sizeof(cpath), "%s/%s/children", path, de->d_name);
		FILE *f = fopen(cpath, "re");
		int c;
		while (f && fscanf(f, "%d", &c) == 1) {
			sum += pss_kib((pid_t)c) + tree_pss((pid_t)c, count);
			(*count)++;
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return sum;
}

static long inits_pss(int *count)
{
	*count = 0;
	return tree_pss(getpid(), count);
}

static long self_rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long v = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static double bare_median(double *t, int n, int gap_us)
{
	char *targv[] = {"/bin/true", NULL};
	for (int i = 0; i < n; i++) {
		if (gap_us)
			usleep((useconds_t)gap_us);
		double t0 = now();
		pid_t pid;
		posix_spawn(&pid, "/bin/true", NULL, NULL, targv, environ);
		waitpid(pid, NULL, 0);
		t[i] = now() - t0;
	}
	return median(t, n);
}

/* Where an exec's time goes: handing it over (al_job_spawn) and waiting for its end. */
static double *t_spawn, *t_wait;
static int n_split;

static int exec_true(struct al_policy *p)
{
	struct al_job *j;
	struct al_verdict *v;
	struct al_error e = {0};
	double a = now();
	int r = al_job_spawn(p, NULL, &j, &e);
	double b = now();
	if (r == 0)
		r = al_job_wait(j, &v, &e);
	if (t_spawn) {
		t_spawn[n_split] = b - a;
		t_wait[n_split++] = now() - b;
	}
	if (r < 0) {
		fprintf(stderr, "held: %s\n", e.msg);
		return -1;
	}
	al_verdict_free(v);
	al_job_free(j);
	return 0;
}

static double held_median(struct al_policy *p, double *t, int n, int gap_us)
{
	for (int i = 0; i < n; i++) {
		if (gap_us)
			usleep((useconds_t)gap_us);
		double t0 = now();
		if (exec_true(p) < 0)
			exit(1);
		t[i] = now() - t0;
	}
	return median(t, n);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200, nsb = argc > 2 ? atoi(argv[2]) : 100;
	double *t = calloc((size_t)n, sizeof(double));
	double bare = bare_median(t, n, 0), bare_gap = bare_median(t, n / 2 + 1, 2000);
	struct al_policy *sp;
	struct al_error e = {0};
	al_policy_new(&sp);
	/* HELD_CPUS=500: a CPU quota on the sandbox, as airlock serve's defaults set (cpus: 0.5). */
	const char *cpus = getenv("HELD_CPUS");
	if (cpus && al_policy_set_limit(sp, AL_LIMIT_CPUS, strtoull(cpus, NULL, 10), &e) < 0) {
		fprintf(stderr, "held: HELD_CPUS: %s\n", e.msg);
		return 1;
	}
	struct al_sandbox *sb;
	double c0 = now();
	if (al_sandbox_create(sp, &sb, &e) < 0) {
		fprintf(stderr, "held: %s\n", e.msg);
		return 1;
	}
	double create = now() - c0;
	struct al_policy *p;
	al_policy_new(&p);
	const char *av[] = {"/bin/true", NULL};
	al_policy_set_argv(p, 1, av, &e);
	al_policy_set_sandbox(p, sb, &e);
	t_spawn = calloc((size_t)n, sizeof(double));
	t_wait = calloc((size_t)n, sizeof(double));
	double held = held_median(p, t, n, 0);
	double spawn = median(t_spawn, n_split), wait = median(t_wait, n_split);
	free(t_spawn);
	free(t_wait);
	t_spawn = t_wait = NULL;
	double held_gap = held_median(p, t, n / 2 + 1, 2000);
	al_sandbox_destroy(sb);
	long rss0 = self_rss_kib();
	struct al_sandbox **all = calloc((size_t)nsb, sizeof(*all));
	for (int i = 0; i < nsb; i++)
		if (al_sandbox_create(sp, &all[i], &e) < 0) {
			fprintf(stderr, "held: sandbox %d: %s\n", i, e.msg);
			return 1;
		}
	int count = 0, count1 = 0;
	long inits = inits_pss(&count);
	long rss1 = self_rss_kib();
	/* One exec each: every sandbox now also holds a spare (exec init + confined payload). */
	for (int i = 0; i < nsb; i++) {
		al_policy_set_sandbox(p, all[i], &e);
		if (exec_true(p) < 0)
			return 1;
	}
	usleep(200000);
	long used = inits_pss(&count1);
	for (int i = 0; i < nsb; i++)
		al_sandbox_destroy(all[i]);
	printf("{\"bare_fork_exec_ms\":%.3f,\"held_exec_true_ms\":%.3f,\"ratio\":%.2f,\"held_spawn_ms\":%.3f,\"held_"
	       "wait_ms\":%.3f,"
	       "\"bare_fork_exec_paused_ms\":%.3f,\"held_exec_true_paused_ms\":%.3f,\"ratio_paused\":%.2f,\"create_"
	       "ms\":%.3f,"
	       "\"idle_sandboxes\":%d,\"inits_seen\":%d,\"init_pss_kib_each\":%.1f,\"supervisor_rss_kib_each\":%.1f,"
	       "\"after_one_exec_processes\":%d,\"after_one_exec_pss_kib_each\":%.1f}\n",
	       bare * 1e3, held * 1e3, held / bare, spawn * 1e3, wait * 1e3, bare_gap * 1e3, held_gap * 1e3,
	       held_gap / bare_gap, create * 1e3, nsb, count, count ? (double)inits / count : 0.0,
	       (double)(rss1 - rss0) / nsb, count1, (double)used / nsb);
	al_policy_free(p);
	al_policy_free(sp);
	free(all);
	free(t);
	return 0;
}
