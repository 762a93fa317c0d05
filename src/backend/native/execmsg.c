/* execmsg.c — a held sandbox's exec requests: encoding, decoding and carrying them with their
 * descriptors (see execmsg.h). The receiving side runs in the sandbox and allocates nothing. */
#include "execmsg.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/fdpass.h"

static size_t strv_len(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

int nx_encode(char *const *argv, char *const *envp, const char *cwd, uint32_t flags, char *buf, size_t cap)
{
	size_t argc = strv_len(argv), envc = strv_len(envp);
	if (argc == 0 || !cwd || cwd[0] != '/')
		return -EINVAL;
	if (argc + envc > NX_MAX_STRS || cap < sizeof(struct nx_hdr) || cap > NX_MAX_MSG)
		return -E2BIG;
	struct nx_hdr h = {.magic = NX_MAGIC, .flags = flags, .argc = (uint32_t)argc, .envc = (uint32_t)envc};
	memcpy(buf, &h, sizeof(h));
	size_t off = sizeof(h);
	for (size_t i = 0; i < argc + envc + 1; i++) {
		const char *s = i < argc ? argv[i] : i < argc + envc ? envp[i - argc] : cwd;
		size_t l = strlen(s) + 1;
		if (l > cap - off)
			return -E2BIG;
		memcpy(buf + off, s, l);
		off += l;
	}
	return (int)off;
}

void nx_encode_tty(char *buf, uint16_t cols, uint16_t rows)
{
	struct nx_hdr h;
	memcpy(&h, buf, sizeof(h));
	h.cols = cols;
	h.rows = rows;
	memcpy(buf, &h, sizeof(h));
}

int nx_decode(char *buf, size_t len, struct nx_view *v)
{
	struct nx_hdr h;
	if (len < sizeof(h) || len > NX_MAX_MSG)
		return -EPROTO;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != NX_MAGIC || h.argc == 0 || h.argc > NX_MAX_STRS || h.envc > NX_MAX_STRS - h.argc ||
	    (h.flags & ~(NX_STDIN | NX_CODE | NX_TTY)) || ((h.flags & NX_TTY) && (h.flags & NX_STDIN)))
		return -EPROTO;
	v->flags = h.flags;
	v->cols = h.cols;
	v->rows = h.rows;
	size_t off = sizeof(h), n = (size_t)h.argc + h.envc + 1;
	for (size_t i = 0; i < n; i++) {
		char *s = buf + off, *nul = off < len ? memchr(s, 0, len - off) : NULL;
		if (!nul)
			return -EPROTO;
		if (i < h.argc)
			v->argv[i] = s;
		else if (i < (size_t)h.argc + h.envc)
			v->envp[i - h.argc] = s;
		else
			v->cwd = s;
		off = (size_t)(nul - buf) + 1;
	}
	if (off != len || v->cwd[0] != '/' || v->argv[0][0] == 0)
		return -EPROTO;
	v->argv[h.argc] = NULL;
	v->envp[h.envc] = NULL;
	return 0;
}

int nx_send(int sock, char *msg, size_t len, const int *fds, int nfds)
{
	return al_send_msg(sock, msg, len, fds, nfds);
}

ssize_t nx_recv(int sock, char *buf, size_t cap, int *fds, int *nfds)
{
	ssize_t n = al_recv_msg(sock, buf, cap, fds, NX_MAX_FDS, nfds, true);
	if (*nfds > NX_MAX_FDS)
		*nfds = NX_MAX_FDS; /* the others are closed */
	return n;
}

int nx_recv_terminal(int sock)
{
	int fd = -1;
	char tag = 0;
	int n = al_recv_fds(sock, &fd, 1, &tag, true);
	if (n == 1 && tag == 't')
		return fd;
	if (n == 1)
		close(fd);
	return -1;
}

const char *nx_env_path(char *const *envp)
{
	for (; *envp; envp++)
		if (strncmp(*envp, "PATH=", 5) == 0)
			return *envp + 5;
	return "/usr/bin:/bin";
}
