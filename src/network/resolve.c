/* resolve.c — name resolution and connecting for the egress proxy (runs in connection threads). */
#include "network/resolve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static int put_literal(const char *text, uint16_t port, struct rs_addr *a)
{
	memset(a, 0, sizeof(*a));
	struct sockaddr_in *s4 = (struct sockaddr_in *)&a->ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a->ss;
	if (inet_pton(AF_INET, text, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		a->len = sizeof(*s4);
		return 0;
	}
	if (inet_pton(AF_INET6, text, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		a->len = sizeof(*s6);
		return 0;
	}
	return -EINVAL;
}

/* Does this hosts(5) line name `name`? Fields after the address, up to a '#'. */
static int hosts_line(char *line, const char *name, uint16_t port, struct rs_addr *a)
{
	char *save = NULL, *addr = strtok_r(line, " \t\r\n", &save);
	if (!addr || addr[0] == '#')
		return 0;
	for (char *n = strtok_r(NULL, " \t\r\n", &save); n && n[0] != '#'; n = strtok_r(NULL, " \t\r\n", &save)) {
		size_t l = strlen(n);
		if (l && n[l - 1] == '.')
			n[--l] = 0;
		if (strcasecmp(n, name) == 0)
			return put_literal(addr, port, a) == 0 ? 1 : 0;
	}
	return 0;
}

static int from_hosts_file(const char *file, const char *name, uint16_t port, struct rs_addr *out, size_t *n)
{
	FILE *f = fopen(file, "re");
	if (!f)
		return -errno;
	char line[1024];
	*n = 0;
	while (*n < RS_MAX_ADDRS && fgets(line, sizeof(line), f))
		if (hosts_line(line, name, port, &out[*n]) == 1)
			(*n)++;
	fclose(f);
	return 0;
}

static int from_dns(const char *name, uint16_t port, struct rs_addr *out, size_t *n)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
	int e = getaddrinfo(name, NULL, &hints, &res);
	if (e == EAI_NONAME || e == EAI_NODATA)
		return -ENOENT;
	if (e == EAI_AGAIN)
		return -EAGAIN;
	if (e != 0)
		return e == EAI_SYSTEM ? -errno : -EIO;
	*n = 0;
	for (struct addrinfo *ai = res; ai && *n < RS_MAX_ADDRS; ai = ai->ai_next) {
		if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) || ai->ai_addrlen > sizeof(out[0].ss))
			continue;
		struct rs_addr *a = &out[(*n)++];
		memset(a, 0, sizeof(*a));
		memcpy(&a->ss, ai->ai_addr, ai->ai_addrlen);
		a->len = ai->ai_addrlen;
		if (ai->ai_family == AF_INET)
			((struct sockaddr_in *)&a->ss)->sin_port = htons(port);
		else
			((struct sockaddr_in6 *)&a->ss)->sin6_port = htons(port);
	}
	freeaddrinfo(res);
	return *n ? 0 : -ENOENT;
}

int rs_resolve(const char *name, uint16_t port, const char *hosts_file, struct rs_addr out[RS_MAX_ADDRS], size_t *n)
{
	*n = 0;
	if (put_literal(name, port, &out[0]) == 0) {
		*n = 1;
		return 0;
	}
	if (hosts_file) {
		int r = from_hosts_file(hosts_file, name, port, out, n);
		if (r < 0)
			return r;
		if (*n)
			return 0;
	}
	return from_dns(name, port, out, n);
}

int rs_connect(const struct rs_addr *a, int timeout_ms)
{
	int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)&a->ss, a->len) == 0)
		return fd;
	int e = errno;
	if (e == EINPROGRESS) {
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		int r;
		while ((r = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
			;
		socklen_t sl = sizeof(e);
		if (r == 0)
			e = ETIMEDOUT;
		else if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) < 0)
			e = errno;
		if (e == 0)
			return fd;
	}
	close(fd);
	return -e;
}
