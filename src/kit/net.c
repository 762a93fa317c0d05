/* net.c — interface flags with the classic ioctls: enough for lo, and no netlink code in init. */
#include "net.h"

#include <errno.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sched.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static int lo_up_with(int fd)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	strncpy(ifr.ifr_name, "lo", sizeof(ifr.ifr_name) - 1);
	int r = ioctl(fd, SIOCGIFFLAGS, &ifr);
	if (r == 0) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		r = ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	return r < 0 ? -errno : 0;
}

int net_lo_up(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int r = lo_up_with(fd);
	close(fd);
	return r;
}

int net_new_ns_lo_up(void)
{
	if (unshare(CLONE_NEWNET) < 0)
		return -errno;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int r = lo_up_with(fd);
	/* The socket's namespace, as a descriptor for setns (Linux 5.6): no /proc path needed, and
	 * the namespace outlives this process for as long as the descriptor is open. */
	int ns = r < 0 ? r : ioctl(fd, SIOCGSKNS);
	if (r == 0 && ns < 0)
		r = -errno;
	close(fd);
	return r < 0 ? r : ns;
}

int net_listen_lo(unsigned short port)
{
	return net_bind_socket(SOCK_STREAM, INADDR_LOOPBACK, port);
}

int net_bind_socket(int type, unsigned addr, unsigned short port)
{
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(addr)};
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || (type == SOCK_STREAM && listen(fd, 128) < 0)) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}
