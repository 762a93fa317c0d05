/* esc-whoami.c — reporter (not hostile): print this process's ids, capabilities and no_new_privs, nothing else. */
/*
 * Planted as a setuid/setgid or file-capability binary by tests/escape/setuid.sh (from the
 * host, or by esc-setuid from inside the sandbox); after execve it tells what that gained.
 * It only reads and prints, so it is harmless wherever and however it runs.
 */
#include "esc.h"

int main(int argc, char **argv)
{
	const char *pre = argc > 1 ? argv[1] : "whoami";
	uid_t r, e, s;
	gid_t rg, eg, sg;
	char status[8192];

	esc_init();
	getresuid(&r, &e, &s);
	getresgid(&rg, &eg, &sg);
	printf("%s-uid=%u\n%s-euid=%u\n%s-suid=%u\n", pre, (unsigned)r, pre, (unsigned)e, pre, (unsigned)s);
	printf("%s-gid=%u\n%s-egid=%u\n%s-sgid=%u\n", pre, (unsigned)rg, pre, (unsigned)eg, pre, (unsigned)sg);
	if (esc_slurp("/proc/self/status", status, sizeof(status)) == 0) {
		static const char *const keys[] = {"CapEff", "CapPrm", "CapInh", "CapAmb", "NoNewPrivs"};
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			char pat[32], v[64] = "?";
			snprintf(pat, sizeof(pat), "\n%s:", keys[k]);
			const char *p = strstr(status, pat);
			if (p)
				sscanf(p + strlen(pat), " %63s", v);
			printf("%s-%s=%s\n", pre, keys[k], v);
		}
	}
	return 0;
}
