/* ocistale.c — removes bundle directories whose supervisor is gone; best effort and silent.
 *
 * A bundle directory is <base>/airlock-<runtime>.<supervisor pid>.XXXXXX (ocispawn.c). Its monitor
 * removes it when the job ends, the supervisor's death included (PDEATHSIG). But the monitor lives
 * in the job's cgroup, which the next airlock's cg_cleanup_stale kills once the supervisor is gone:
 * a monitor killed in the middle of its cleanup would leave the directory for ever. So the same
 * start-up cleanup removes it, after the cgroups (by then nothing of that job runs). Only the
 * caller's own directories are touched, and only where ocispawn.c would have made them.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "cgroup/cgroup.h"
#include "util/fsutil.h"

/* "airlock-NAME.PID.XXXXXX": the supervisor's pid, or -1 for any other name. */
static pid_t bundle_owner(const char *name)
{
	if (strncmp(name, "airlock-", 8) != 0)
		return -1;
	const char *dot = strchr(name + 8, '.');
	if (!dot || dot == name + 8)
		return -1;
	char *end;
	long pid = strtol(dot + 1, &end, 10);
	if (end == dot + 1 || *end != '.' || strlen(end + 1) != 6 || pid <= 0 || pid > 0x7fffffff)
		return -1;
	return (pid_t)pid;
}

void be_oci_cleanup_stale(void)
{
	const char *base = getenv("TMPDIR");
	if (!base || base[0] != '/' || geteuid() == 0)
		base = "/tmp"; /* as ocispawn.c's make_dirs */
	DIR *d = opendir(base);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		pid_t owner = bundle_owner(de->d_name);
		struct stat st;
		if (owner < 0 || owner == getpid() || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		/* The directory was made after its supervisor started: a process that started later
		 * only reuses the pid. */
		if (cg_owner_alive_since(owner, (int64_t)st.st_mtim.tv_sec))
			continue;
		char path[4096];
		if (snprintf(path, sizeof(path), "%s/%s", base, de->d_name) < (int)sizeof(path))
			(void)al_remove_tree(path);
	}
	closedir(d);
}
