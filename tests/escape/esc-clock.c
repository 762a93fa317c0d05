/* esc-clock.c — hostile program: set the host's clock, hostname and domain name. */
/*
 * Usage: esc-clock
 * Every attempt writes the value it has just read (the current time, the current
 * hostname), so that even on a host without a sandbox nothing would change; the driver
 * judges by the result each call reports and compares the host's hostname before and after.
 * Attempts: clock_settime(CLOCK_REALTIME, now), settimeofday(now), clock_adjtime and
 * adjtimex with ADJ_TICK set to the current tick, sethostname/setdomainname(current),
 * and the hostname through /proc/sys/kernel/hostname.
 * Expected defence: seccomp (clock_settime, settimeofday, clock_adjtime, adjtimex: EPERM),
 * no CAP_SYS_TIME or CAP_SYS_ADMIN, the UTS namespace (a hostname change would only ever
 * reach the sandbox's own).
 */
#include "esc.h"

#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <time.h>

int main(void)
{
	char name[256];

	esc_init();
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	esc_report("clock_settime-realtime", syscall(SYS_clock_settime, CLOCK_REALTIME, &now));
	struct timeval tv;
	gettimeofday(&tv, NULL);
	esc_report("settimeofday", syscall(SYS_settimeofday, &tv, NULL));

	struct timex tx;
	memset(&tx, 0, sizeof(tx));
	long state = syscall(SYS_adjtimex, &tx); /* modes 0: read only */
	printf("adjtimex-read=%s\n", state >= 0 ? "OK" : esc_errname(errno));
	long tick = state >= 0 ? tx.tick : 10000;
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_TICK;
	tx.tick = tick;
	esc_report("adjtimex-set-tick", syscall(SYS_adjtimex, &tx));
	memset(&tx, 0, sizeof(tx));
	tx.modes = ADJ_TICK;
	tx.tick = tick;
	esc_report("clock_adjtime-set-tick", syscall(SYS_clock_adjtime, CLOCK_REALTIME, &tx));

	if (gethostname(name, sizeof(name)) == 0) {
		printf("hostname-inside=%s\n", name);
		esc_report("sethostname", sethostname(name, strlen(name)));
	}
	if (getdomainname(name, sizeof(name)) == 0)
		esc_report("setdomainname", setdomainname(name, strlen(name)));
	char cur[256];
	if (esc_slurp("/proc/sys/kernel/hostname", cur, sizeof(cur)) == 0) {
		int fd = open("/proc/sys/kernel/hostname", O_WRONLY | O_CLOEXEC);
		esc_report("proc-hostname", fd < 0 ? -1 : write(fd, cur, strlen(cur)));
		if (fd >= 0)
			close(fd);
	}
	return 0;
}
