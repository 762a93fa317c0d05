/* execmsg.h — a held sandbox's messages (hold.c): the manager asks init for a spare (struct
 * nx_spare_req); init answers with struct nx_reply and, on success, three descriptors: the spare's
 * pidfd, its payload's socket and the read end of its status pipe. The exec request then goes to
 * the spare payload itself: argv, environment, cwd.
 *
 * One SOCK_SEQPACKET message: a header, then argc + envc + 1 NUL-terminated strings (argv...,
 * envp..., cwd). A socket request (NX_SOCK_MAGIC) is answered with one descriptor, a TCP socket
 * made in the sandbox's network namespace (the manager connects it to a port of its loopback).
 * Descriptors travel beside it (SCM_RIGHTS): stdout, stderr, then stdin when
 * NX_STDIN is set, then the program's text (a sealed memfd) when NX_CODE is set. Decoding allocates nothing: it points into the caller's buffer. */
#ifndef AL_NATIVE_EXECMSG_H
#define AL_NATIVE_EXECMSG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define NX_MAGIC    0x616c7831u /* "alx1" */
#define NX_MAX_MSG  65536	/* the whole request, like a modest ARG_MAX */
#define NX_MAX_STRS 1024	/* argv + envp entries */
#define NX_STDIN    1u
#define NX_NONET    2u /* a spare in a network namespace of its own, only lo, up (nx_spare_req) */
#define NX_CODE	    4u /* the program's text comes beside the request, for fd 3 (AL_CODE_FD) */
/* A terminal: the spare opens a pty of the sandbox's devpts (cols x rows), sends its master back on
 * the request socket (tag 't') and takes the slave as stdio and controlling terminal; no NX_STDIN. */
#define NX_TTY	       8u
#define NX_SPARE_MAGIC 0x616c7873u /* "alxs" */

struct nx_spare_req {
	uint32_t magic;
	uint32_t flags; /* NX_NONET; for NX_SOCK_MAGIC: the address family */
};

/* "A socket, please" (same struct, this magic, flags the family: AF_INET or AF_INET6): init makes
 * an unconnected TCP socket in the sandbox's network namespace and answers struct nx_reply with it
 * beside (SCM_RIGHTS). Answered in order with the spare requests on the same socket. */
#define NX_SOCK_MAGIC 0x616c786bu /* "alxk" */

/* A spare payload's exec cgroup on v1, sent to the payload before its request with that cgroup's
 * `tasks` files (cg_join_fds): it moves itself in (cg_join_self) and waits on for the request. */
#define NX_JOIN_MAGIC 0x616c786au /* "alxj" */
struct nx_join {
	uint32_t magic;
};

struct nx_hdr {
	uint32_t magic;
	uint32_t flags;
	uint32_t argc;
	uint32_t envc;
	uint16_t cols, rows; /* NX_TTY: the terminal's first size (0: the kernel's default) */
	uint32_t reserved;
};

struct nx_reply {
	int32_t err; /* 0: the spare's three descriptors are attached; else an errno */
};

/* Encodes into buf[0..cap): the message length, or -E2BIG / -EINVAL (empty argv, relative cwd). */
int nx_encode(char *const *argv, char *const *envp, const char *cwd, uint32_t flags, char *buf, size_t cap);
/* The terminal's size for an NX_TTY request already encoded in buf. */
void nx_encode_tty(char *buf, uint16_t cols, uint16_t rows);

struct nx_view {
	uint32_t flags;
	uint16_t cols, rows;
	char *argv[NX_MAX_STRS + 1]; /* NULL-terminated, pointing into the buffer */
	char *envp[NX_MAX_STRS + 1];
	const char *cwd;
};

/* Decodes buf[0..len) in place: 0, or -EPROTO for anything malformed. */
int nx_decode(char *buf, size_t len, struct nx_view *v);

#define NX_MAX_FDS 4 /* stdout, stderr [, stdin] [, code]; or a spare's pidfd, socket, status pipe */

/* One message with nfds descriptors beside it: 0 or -errno. */
int nx_send(int sock, char *msg, size_t len, const int *fds, int nfds);
/* One message into buf: its length (0 at end of file, -errno, -EMSGSIZE when cut), and up to
 * NX_MAX_FDS descriptors (O_CLOEXEC) in fds; more are closed. Allocates nothing. */
ssize_t nx_recv(int sock, char *buf, size_t cap, int *fds, int *nfds);
/* A terminal's master (NX_TTY; a fresh job's payload sends one too, on the sync socket), tag 't',
 * waited for: the descriptor, or -1 when the peer ended first (the sandbox's status says why).
 * The sender does so at once after its fork or request, so this waits only for the sandbox's own
 * set-up; every other holder of the far end is the sandbox's, gone with it. */
int nx_recv_terminal(int sock);
/* The request's PATH, for finding argv[0] (execvpe would search the supervisor's). */
const char *nx_env_path(char *const *envp);

#endif
