/* tlfetched.c — what a package install fetched (code_install_package's "fetched"), read from its
 * egress records: each package file a registry served over TLS that airlock terminated, named by
 * the SHA-256 of the bytes airlock relayed (network/pxtls.c), with the name and version its file
 * name gives. An operator answers "what exactly did this agent install?" from it. What went
 * through a tunnel airlock could not see into is counted, never guessed at. Pure. */
#include "service/tools.h"

#include <stdio.h>
#include <string.h>

/* The file name's package extension, or NULL: wheels, source archives, npm tarballs. */
static const char *package_ext(const char *file)
{
	static const char *const exts[] = {".whl", ".tar.gz", ".tgz", ".zip", ".tar.bz2", ".tar.xz"};
	size_t n = strlen(file);
	for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		size_t k = strlen(exts[i]);
		if (n > k && strcmp(file + n - k, exts[i]) == 0)
			return file + n - k;
	}
	return NULL;
}

/* Name and version from a package file's name: a wheel's first two '-' fields (PEP 427), an npm
 * tarball's path (/NAME/-/BASE-VERSION.tgz, NAME scoped or not), else the last '-' of a source
 * archive's stem (NAME-VERSION.tar.gz). Empty strings when the name says neither. */
static void name_version(const char *path, const char *file, const char *ext, char *name, size_t nn, char *ver,
			 size_t vn)
{
	int stem = (int)(ext - file);
	const char *npm = strstr(path, "/-/");
	name[0] = ver[0] = 0;
	if (strcmp(ext, ".whl") == 0) {
		const char *d1 = memchr(file, '-', (size_t)stem),
			   *d2 = d1 ? memchr(d1 + 1, '-', (size_t)(ext - d1 - 1)) : NULL;
		if (d1)
			snprintf(name, nn, "%.*s", (int)(d1 - file), file);
		if (d1)
			snprintf(ver, vn, "%.*s", (int)((d2 ? d2 : ext) - d1 - 1), d1 + 1);
		return;
	}
	const char *start = path[0] == '/' ? path + 1 : path;
	if (npm && npm > start && strcmp(ext, ".tgz") == 0) {
		const char *base = strrchr(start, '/');
		snprintf(name, nn, "%.*s", (int)(npm - start), start);
		const char *bare = strrchr(name, '/') ? strrchr(name, '/') + 1 : name; /* @scope/NAME's NAME */
		size_t bl = strlen(bare);
		if (base && strncmp(base + 1, bare, bl) == 0 && base[1 + bl] == '-')
			snprintf(ver, vn, "%.*s", (int)(ext - (base + 2 + bl)), base + 2 + bl);
		return;
	}
	const char *dash = NULL;
	for (const char *p = file; p < ext; p++)
		if (*p == '-')
			dash = p;
	if (dash) {
		snprintf(name, nn, "%.*s", (int)(dash - file), file);
		snprintf(ver, vn, "%.*s", (int)(ext - dash - 1), dash + 1);
	}
}

json_t *tl_fetched(const char *proxy_json, json_int_t *unseen)
{
	json_t *px = proxy_json ? json_loads(proxy_json, 0, NULL) : NULL, *out = json_array();
	*unseen = 0;
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(px, "records"), i, r) {
		const char *tls = json_string_value(json_object_get(r, "tls"));
		const char *decision = json_string_value(json_object_get(r, "decision"));
		const char *path = json_string_value(json_object_get(r, "path"));
		const char *sha = json_string_value(json_object_get(r, "sha256"));
		bool allowed = decision && strcmp(decision, "allowed") == 0;
		/* A tunnel that was let through: its bytes are the job's TLS, which airlock never read. */
		if (allowed && (!tls || strcmp(tls, "airlock") != 0) &&
		    !json_string_value(json_object_get(r, "method")))
			++*unseen;
		if (!sha || !path)
			continue;
		char clean[160];
		snprintf(clean, sizeof(clean), "%.*s", (int)strcspn(path, "?#"), path);
		const char *file = strrchr(clean, '/') ? strrchr(clean, '/') + 1 : clean;
		const char *ext = package_ext(file);
		if (!ext)
			continue; /* an index page or metadata: fetched, but not a package */
		char name[128], ver[64];
		name_version(clean, file, ext, name, sizeof(name), ver, sizeof(ver));
		json_t *f = json_pack("{s:s,s:s,s:s,s:O?,s:s,s:s,s:O?}", "name", name, "version", ver, "file", file,
				      "host", json_object_get(r, "host"), "path", path, "sha256", sha, "bytes",
				      json_object_get(r, "bytes_down"));
		/* A name cut inside a character is no UTF-8: that file is left out, never the whole list. */
		if (out && f && json_array_append_new(out, f) < 0) {
			json_decref(out);
			out = NULL;
		}
	}
	json_decref(px);
	return out;
}
