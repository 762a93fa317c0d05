/* build.c — `airlock image build`: a Debian environment made by mmdebstrap, stored like an import. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image/imgint.h"
#include "util/cleanup.h"
#include "util/error.h"

#define BUILD_MAX_PACKAGES 256

/* Debian package names (policy 5.6.7), optionally with =version. Everything given to
 * mmdebstrap is checked so that no value can be read as an option of its own. Pure. */
static bool word_ok(const char *s)
{
	return s && strlen(s) < 128 && ((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')) &&
	       s[strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789.+-:=~_")] == 0;
}

static int check_spec(const struct img_build_spec *sp, struct al_error *err)
{
	if (!sp->name || !img_name_valid(sp->name))
		return al_err(err, EINVAL, "'%s' is not an image name", sp->name ? sp->name : "");
	size_t n = 0;
	for (; sp->packages && sp->packages[n]; n++)
		if (!word_ok(sp->packages[n]) || n >= BUILD_MAX_PACKAGES)
			return al_err(err, EINVAL, "package '%s': not a Debian package name", sp->packages[n]);
	if (n == 0)
		return al_err(err, EINVAL, "no packages given (--packages P1,P2,...)");
	if (sp->suite && !word_ok(sp->suite))
		return al_err(err, EINVAL, "suite '%s': not a suite name", sp->suite);
	if (sp->variant && !word_ok(sp->variant))
		return al_err(err, EINVAL, "variant '%s': not an mmdebstrap variant", sp->variant);
	if (sp->mirror && strncmp(sp->mirror, "http://", 7) != 0 && strncmp(sp->mirror, "https://", 8) != 0 &&
	    strncmp(sp->mirror, "file:///", 8) != 0)
		return al_err(err, EINVAL, "mirror '%s': an http(s):// or file:/// URL expected", sp->mirror);
	return 0;
}

/* mmdebstrap's command line; the strings are written into buf. */
static int build_argv(const struct img_build_spec *sp, char *out, char *buf, size_t size, char **argv)
{
	size_t k = 0, off = 0;
	int n = snprintf(buf, size, "--include=");
	off = n > 0 ? (size_t)n : 0;
	for (size_t i = 0; sp->packages[i] && off < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%s", i ? "," : "", sp->packages[i]);
	if (off >= size - 64)
		return -E2BIG;
	char *variant = buf + off + 1;
	snprintf(variant, size - off - 1, "--variant=%s", sp->variant ? sp->variant : "apt");
	argv[k++] = "mmdebstrap";
	argv[k++] = geteuid() == 0 ? "--mode=root" : "--mode=unshare";
	argv[k++] = variant;
	argv[k++] = buf;
	/* What the packages depend on, not what they recommend (apt's default would pull gcc and
	 * boost into a pandas+matplotlib image: 1.2 GB and 6 minutes); --recommends asks for it. */
	if (!sp->recommends)
		argv[k++] = "--aptopt=APT::Install-Recommends \"false\"";
	/* apt's own lines (Get:, Unpacking, Setting up): what the progress counts. */
	argv[k++] = "--verbose";
	/* No device nodes in the tarball: the sandbox makes its own /dev. */
	argv[k++] = "--skip=output/dev";
	argv[k++] = "--format=tar";
	argv[k++] = sp->suite ? sp->suite : "bookworm";
	argv[k++] = out;
	if (sp->mirror)
		argv[k++] = sp->mirror;
	argv[k] = NULL;
	return 0;
}

/* Runs mmdebstrap with a fixed environment; each output line goes to progress. */
static int run_mmdebstrap(char **argv, uint64_t epoch, img_progress_fn progress, void *ctx, struct al_error *err)
{
	char sde[48];
	snprintf(sde, sizeof(sde), "SOURCE_DATE_EPOCH=%llu", (unsigned long long)epoch);
	char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C.UTF-8", "HOME=/root", sde, NULL};
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return al_err_sys(err, errno, "pipe");
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		execve("/usr/bin/mmdebstrap", argv, envp);
		_exit(127);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return al_err_sys(err, errno, "fork");
	}
	FILE *f = fdopen(p[0], "r");
	char line[512], last[512] = "";
	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		snprintf(last, sizeof(last), "%s", line);
		if (progress)
			progress(ctx, line);
	}
	if (f)
		fclose(f);
	else
		close(p[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		return al_err(err, ENOENT, "mmdebstrap could not be run (is it installed? apt-get install mmdebstrap)");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return al_err(err, EIO, "mmdebstrap failed (status %#x): %s", (unsigned)st, last);
	return 0;
}

/* The text after prefix at the start of line, or NULL. */
static const char *after(const char *line, const char *prefix)
{
	size_t n = strlen(prefix);
	return strncmp(line, prefix, n) == 0 ? line + n : NULL;
}

/* apt's "U upgraded, N newly installed, ...": N, or -1 for any other line. */
static long newly_installed(const char *line)
{
	char *e = NULL, *f = NULL;
	(void)strtoul(line, &e, 10);
	if (e == line || strncmp(e, " upgraded, ", 11) != 0)
		return -1;
	unsigned long n = strtoul(e + 11, &f, 10);
	return f != e + 11 && strncmp(f, " newly installed", 16) == 0 && n < 1000000 ? (long)n : -1;
}

void img_progress_feed(struct img_progress *p, const char *line)
{
	const char *t;
	long fresh;
	if ((t = after(line, "I: "))) {
		size_t n = strcspn(t, "\n");
		while (n && (t[n - 1] == '.' || t[n - 1] == ' '))
			n--;
		snprintf(p->phase, sizeof(p->phase), "%.*s", (int)n, t);
		if (p->total && p->set_up >= p->total)
			p->total = 0; /* that apt run is done: its counts no longer describe the phase */
	} else if ((fresh = newly_installed(line)) >= 0) {
		/* A new apt run (the essential set, then the rest): its own counts. */
		p->total = (unsigned)fresh;
		p->fetched = p->unpacked = p->set_up = 0;
		p->need[0] = 0;
	} else if ((t = after(line, "Need to get "))) {
		size_t n = strcspn(t, "/");
		const char *of = strstr(t, " of archives");
		if (of && (size_t)(of - t) < n)
			n = (size_t)(of - t);
		snprintf(p->need, sizeof(p->need), "%.*s", (int)n, t);
	} else if (after(line, "Get:")) {
		p->fetched++;
	} else if (after(line, "Unpacking ")) {
		p->unpacked++;
	} else if (after(line, "Setting up ")) {
		p->set_up++;
	}
}

void img_progress_text(const struct img_progress *p, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s", p->phase[0] ? p->phase : "starting");
	if (n < 0 || (size_t)n >= size || !p->total)
		return;
	snprintf(buf + n, size - (size_t)n, ": %u/%u fetched%s%s, %u unpacked, %u set up", p->fetched, p->total,
		 p->need[0] ? " of " : "", p->need, p->unpacked, p->set_up);
}

static json_t *build_extra(const struct img_build_spec *sp, uint64_t epoch)
{
	json_t *pk = json_array();
	for (size_t i = 0; sp->packages[i]; i++)
		json_array_append_new(pk, json_string(sp->packages[i]));
	return json_pack("{s:o, s:s, s:s?, s:I, s:b}", "packages", pk, "suite", sp->suite ? sp->suite : "bookworm",
			 "mirror", sp->mirror, "source_date_epoch", (json_int_t)epoch, "recommends", sp->recommends);
}

int img_build(struct img_store *s, const struct img_build_spec *spec, const struct img_limits *lim,
	      img_progress_fn progress, void *ctx, char digest[IMG_DIGEST_LEN], struct al_error *err)
{
	int r = check_spec(spec, err);
	struct store_stage st;
	if (r < 0 || (r = store_stage_begin(s, &st, err)) < 0)
		return r;
	uint64_t epoch = spec->epoch ? spec->epoch : IMG_DEFAULT_EPOCH;
	char out[PATH_MAX], buf[8192], *argv[16];
	snprintf(out, sizeof(out), "%s/build.tar", st.path);
	r = build_argv(spec, out, buf, sizeof(buf), argv);
	r = r < 0 ? al_err(err, -r, "too many packages") : run_mmdebstrap(argv, epoch, progress, ctx, err);
	cleanup_close int tfd = r < 0 ? -1 : openat(st.fd, "build.tar", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char dg[IMG_DIGEST_LEN] = "";
	if (r == 0 && (tfd < 0 || oci_sha256_fd(tfd, dg, NULL) < 0))
		r = al_err_sys(err, errno, "mmdebstrap's tarball");
	if (progress && r == 0)
		progress(ctx, "unpacking");
	r = r ?: import_unpack(&st, &tfd, 1, lim, err);
	(void)unlinkat(st.fd, "build.tar", 0);
	json_t *extra = r == 0 ? build_extra(spec, epoch) : NULL;
	struct import_info in = {.name = spec->name,
				 .digest = dg,
				 .source = "mmdebstrap",
				 .format = "debian",
				 .config = "{\"config\":{\"Env\":[\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/"
					   "bin:/sbin:/bin\"]}}",
				 .nlayers = 1,
				 .extra = extra};
	r = r ?: import_commit(s, &st, &in, err);
	json_decref(extra);
	if (r == 0)
		snprintf(digest, IMG_DIGEST_LEN, "%s", dg);
	store_stage_abort(&st);
	return r;
}
