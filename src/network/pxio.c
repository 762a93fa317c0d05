/* pxio.c — bounded, timed writes and short error responses for the egress proxy's handlers. */
#include "network/pxrecord.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

int px_write_all(int fd, const void *buf, size_t len, int timeout_ms)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return -errno;
		struct pollfd pfd = {.fd = fd, .events = POLLOUT};
		int r = poll(&pfd, 1, timeout_ms);
		if (r == 0)
			return -ETIMEDOUT;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}

const char *px_status_text(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 431:
		return "Request Header Fields Too Large";
	case 501:
		return "Not Implemented";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Error";
	}
}

void px_reply(int fd, int status, const char *reason, int timeout_ms)
{
	char buf[1024], phrase[320]; /* a 253-character name and its reason fit */
	if (!reason)
		reason = px_status_text(status);
	/* A refused or failed destination names its cause in the status line too: that line is what
	 * clients print for a failed tunnel ("Tunnel connection failed: 502 ..."), never the body. */
	bool named = status == 403 || status == 502 || status == 504;
	snprintf(phrase, sizeof(phrase), named ? "%s (airlock: %s)" : "%s", px_status_text(status), reason);
	for (char *s = phrase; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
	int n = snprintf(buf, sizeof(buf),
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\nairlock: %s\n",
			 status, phrase, strlen(reason) + 10, reason);
	if (n > 0 && (size_t)n < sizeof(buf))
		(void)px_write_all(fd, buf, (size_t)n, timeout_ms);
}
