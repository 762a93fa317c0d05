/* esc-net.c — hostile program: reach host listeners over TCP, UDP, abstract and path UNIX sockets, and host daemons' sockets. */
/*
 * Usage: esc-net TCP-PORT UDP-PORT ABSTRACT-NAME PATH-SOCKET
 *   TCP-PORT, UDP-PORT  host listeners on 127.0.0.1 (the driver records every byte)
 *   ABSTRACT-NAME       the host's abstract UNIX listeners "\0NAME" (stream) and
 *                       "\0NAME-dgram" (datagram)
 *   PATH-SOCKET         host path of a UNIX stream listener in an unbound temp dir
 * Each attempt that connects sends one line, so the listener can tell. Well-known host
 * daemon sockets (D-Bus, Docker, containerd, systemd, syslog) are only connected to, never
 * written. Raw, packet and netlink sockets are only created.
 * Expected defence: the empty network namespace (lo down: ENETUNREACH; abstract sockets
 * are per namespace: ECONNREFUSED), seccomp (AF_INET/AF_INET6/AF_NETLINK/AF_PACKET
 * sockets: EPERM), Landlock ABI 4 (TCP connect: EACCES) and ABI 6 (abstract UNIX scope:
 * EPERM), the mount namespace (host socket paths do not exist inside).
 */
#include "esc.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/time.h>

static const char line[] = "escape\n";

static void set_timeouts(int s)
{
	struct timeval tv = {.tv_sec = 2, .tv_usec = 0};
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

static void tcp(const char *name, const char *addr, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
	inet_pton(AF_INET, addr, &sa.sin_addr);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		esc_reportf(-1, "%s", name);
		return;
	}
	set_timeouts(s);
	if (esc_reportf(connect(s, (struct sockaddr *)&sa, sizeof(sa)), "%s", name) == 0)
		esc_reportf(send(s, line, sizeof(line) - 1, MSG_NOSIGNAL), "%s-send", name);
	close(s);
}

static void udp(const char *name, const char *addr, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
	inet_pton(AF_INET, addr, &sa.sin_addr);
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		esc_reportf(-1, "%s", name);
		return;
	}
	esc_reportf(sendto(s, line, sizeof(line) - 1, 0, (struct sockaddr *)&sa, sizeof(sa)), "%s", name);
	close(s);
}

/* A UNIX socket address: abstract when name starts with '@'. */
static socklen_t unix_addr(struct sockaddr_un *sa, const char *name)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	size_t n = strlen(name);
	if (n >= sizeof(sa->sun_path))
		n = sizeof(sa->sun_path) - 1;
	memcpy(sa->sun_path, name, n);
	if (name[0] == '@')
		sa->sun_path[0] = '\0';
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (name[0] == '@' ? 0 : 1));
}

/* Connect to a UNIX stream socket; send a line only when asked (never to host daemons). */
static void unix_stream(const char *name, const char *addr, int speak)
{
	struct sockaddr_un sa;
	socklen_t len = unix_addr(&sa, addr);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		esc_reportf(-1, "%s", name);
		return;
	}
	set_timeouts(s);
	if (esc_reportf(connect(s, (struct sockaddr *)&sa, len), "%s", name) == 0 && speak)
		esc_reportf(send(s, line, sizeof(line) - 1, MSG_NOSIGNAL), "%s-send", name);
	close(s);
}

static void unix_dgram(const char *name, const char *addr)
{
	struct sockaddr_un sa;
	socklen_t len = unix_addr(&sa, addr);
	int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		esc_reportf(-1, "%s", name);
		return;
	}
	esc_reportf(sendto(s, line, sizeof(line) - 1, 0, (struct sockaddr *)&sa, len), "%s", name);
	close(s);
}

static void make_socket(const char *name, int family, int type, int proto)
{
	int s = socket(family, type | SOCK_CLOEXEC, proto);
	esc_report(name, s);
	if (s >= 0)
		close(s);
}

int main(int argc, char **argv)
{
	char addr[256];

	esc_init();
	if (argc != 5) {
		fprintf(stderr, "usage: esc-net TCP-PORT UDP-PORT ABSTRACT-NAME PATH-SOCKET\n");
		return 2;
	}
	int tport = (int)esc_num(argv[1]), uport = (int)esc_num(argv[2]);

	tcp("tcp-127.0.0.1", "127.0.0.1", tport);
	tcp("tcp-0.0.0.0", "0.0.0.0", tport);
	tcp("tcp-127.1.2.3", "127.1.2.3", tport);
	udp("udp-127.0.0.1", "127.0.0.1", uport);
	udp("udp-0.0.0.0", "0.0.0.0", uport);

	snprintf(addr, sizeof(addr), "@%s", argv[3]);
	unix_stream("abstract-stream", addr, 1);
	snprintf(addr, sizeof(addr), "@%s-dgram", argv[3]);
	unix_dgram("abstract-dgram", addr);
	unix_stream("path-socket", argv[4], 1);
	snprintf(addr, sizeof(addr), "/proc/1/root%s", argv[4]);
	unix_stream("path-socket-proc-root", addr, 1);

	/* Host daemons an escaped job would love to talk to: connect only, never a byte. */
	static const char *const daemons[] = {
		"/run/dbus/system_bus_socket",
		"/var/run/dbus/system_bus_socket",
		"/run/docker.sock",
		"/var/run/docker.sock",
		"/run/containerd/containerd.sock",
		"/run/systemd/private",
		"/run/systemd/journal/socket",
		"/run/systemd/journal/stdout",
		"/dev/log",
		"/run/user/0/bus",
		"/run/podman/podman.sock",
		"/var/run/nscd/socket",
	};
	for (size_t i = 0; i < sizeof(daemons) / sizeof(daemons[0]); i++) {
		char name[128];
		snprintf(name, sizeof(name), "daemon[%s]", daemons[i]);
		unix_stream(name, daemons[i], 0);
	}
	/* The systemd-logind / udev style abstract sockets and netlink (kernel uevents). */
	unix_stream("abstract-udev", "@/org/kernel/udev/udevd", 0);

	make_socket("socket-raw", AF_INET, SOCK_RAW, 1 /* ICMP */);
	make_socket("socket-packet", AF_PACKET, SOCK_RAW, 0);
	make_socket("socket-netlink-route", AF_NETLINK, SOCK_RAW, 0);
	make_socket("socket-netlink-uevent", AF_NETLINK, SOCK_DGRAM, 15 /* NETLINK_KOBJECT_UEVENT */);
	make_socket("socket-inet6", AF_INET6, SOCK_STREAM, 0);
	return 0;
}
