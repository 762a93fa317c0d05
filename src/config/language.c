/* language.c — turning a language entry of the configuration into files, binds, environment
 * and an argv for the policy. */
#include "config/language.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/policy.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/fsutil.h"

/* The directories the sandbox's PATH searches that exist on the host (the sandbox binds /usr). */
static const char search_path[] = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";

/* A growing shell command line. */
struct sh_buf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void sh_raw(struct sh_buf *b, const char *s, size_t n)
{
	if (b->oom || b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *m = b->oom ? NULL : realloc(b->s, cap);
		if (!m) {
			b->oom = true;
			return;
		}
		b->s = m;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = 0;
}

/* s single-quoted for sh ('it'\''s'), then a blank. */
static void sh_word(struct sh_buf *b, const char *s)
{
	sh_raw(b, "'", 1);
	for (const char *q; (q = strchr(s, '\'')); s = q + 1) {
		sh_raw(b, s, (size_t)(q - s));
		sh_raw(b, "'\\''", 4);
	}
	sh_raw(b, s, strlen(s));
	sh_raw(b, "' ", 2);
}

/* "compile... && exec command... "$@"": one shell, so a failed compile is the job's exit code. */
static char *compile_script(const struct cfg_language *l)
{
	struct sh_buf b = {0};
	for (size_t i = 0; i < l->compile.n; i++)
		sh_word(&b, l->compile.v[i]);
	sh_raw(&b, "&& exec ", 8);
	for (size_t i = 0; i < l->command.n; i++)
		sh_word(&b, l->command.v[i]);
	sh_raw(&b, "\"$@\"", 4);
	if (b.oom)
		free(b.s);
	return b.oom ? NULL : b.s;
}

static bool found(const char *root, const char *prog, char *buf, size_t cap);

const char *lang_program(const struct cfg_language *l, const char *root)
{
	char buf[PATH_MAX];
	const char *c = l->command.v[0];
	if (strcmp(c, "bash") == 0 && !found(root ? root : "", c, buf, sizeof(buf)) &&
	    found(root ? root : "", "sh", buf, sizeof(buf)))
		return "sh";
	return c;
}

static int set_argv(const struct cfg_language *l, const char *root, char *const *args, size_t nargs,
		    struct al_policy *p, struct al_error *err)
{
	cleanup_free char *script = l->compile.n ? compile_script(l) : NULL;
	size_t n = l->compile.n ? 4 + nargs : l->command.n + 1 + nargs, k = 0;
	cleanup_free const char **argv = calloc(n + 1, sizeof(*argv));
	if (!argv || (l->compile.n && !script))
		return al_err(err, ENOMEM, "out of memory");
	if (l->compile.n) {
		argv[k++] = "/bin/sh";
		argv[k++] = "-c";
		argv[k++] = script;
		argv[k++] = l->name; /* $0 */
	} else {
		argv[k++] = lang_program(l, root);
		for (size_t i = 1; i < l->command.n; i++)
			argv[k++] = l->command.v[i];
		argv[k++] = l->file;
	}
	for (size_t i = 0; i < nargs; i++)
		argv[k++] = args[i];
	return al_policy_set_argv(p, (int)k, argv, err);
}

int lang_apply(const struct cfg_language *l, const char *root, const char *code, size_t len, char *const *args,
	       size_t nargs, struct al_policy *p, struct al_error *err)
{
	char dest[300];
	snprintf(dest, sizeof(dest), "%s/%s", AL_WORKSPACE, l->file);
	int r = al_policy_add_file(p, dest, code, len, 0644, err);
	for (size_t i = 0; r == 0 && i < l->paths.n; i++)
		r = al_policy_add_bind(p, l->paths.v[i], NULL, false, err);
	for (size_t i = 0; r == 0 && i < l->nenv; i++) {
		cleanup_free char *kv = NULL;
		if (asprintf(&kv, "%s=%s", l->env[i].name, l->env[i].value) < 0)
			return al_err(err, ENOMEM, "out of memory");
		r = al_policy_add_env(p, kv, err);
	}
	r = r ?: set_argv(l, root ? root : p->rootfs, args, nargs, p, err);
	if (r < 0)
		al_err_prefix(err, "language %s", l->name);
	return r;
}

int cfg_apply_etc(const struct cfg *c, struct al_policy *p, struct al_error *err)
{
	for (size_t i = 0; i < c->nlanguages; i++)
		for (size_t k = 0; k < c->languages[i].etc.n; k++) {
			int r = pol_add_etc(p, c->languages[i].etc.v[k], err);
			if (r < 0) {
				al_err_prefix(err, "language %s: etc", c->languages[i].name);
				return r;
			}
		}
	return 0;
}

/* Where PATH would find prog (or prog itself when it has a slash: relative, it lives in the workspace). */
static bool found(const char *root, const char *prog, char *buf, size_t cap)
{
	if (strchr(prog, '/') && prog[0] != '/') {
		snprintf(buf, cap, "%s", prog);
		return true;
	}
	return al_find_program(root, search_path, prog, buf, cap);
}

bool lang_available(const struct cfg_language *l, const struct al_policy *p, char *buf, size_t cap, const char **why)
{
	const char *root = p && p->rootfs ? p->rootfs : "";
	const char *first = l->compile.n ? l->compile.v[0] : lang_program(l, root);
	if (!found(root, first, buf, cap)) {
		snprintf(buf, cap, "%s not found in PATH%s", first, *root ? " of the image or rootfs" : "");
		*why = buf;
		return false;
	}
	*why = NULL;
	return true;
}
