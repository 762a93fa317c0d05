/* caps.c — capability sets via prctl and raw capset (no libcap needed for "drop everything"). */
#include "caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int caps_drop_bounding(void)
{
	/* Loop until the kernel says the capability does not exist, so capabilities newer
	 * than our headers are dropped too. Each drop commits a new set of credentials: one
	 * already gone (a held sandbox's init empties its own set once, for every payload it
	 * makes) is only read. */
	for (unsigned long cap = 0; cap < 64; cap++) {
		int in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
		if (in < 0 && errno == EINVAL)
			break;
		if (in == 0)
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
			if (errno == EINVAL)
				break;
			return -errno;
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	return 0;
}

int caps_clear(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof(data));
	return syscall(SYS_capset, &hdr, data) < 0 ? -errno : 0;
}

int caps_no_new_privs(void)
{
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ? -errno : 0;
}
