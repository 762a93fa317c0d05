/* monitor.c — the boundary programs' monitor start and the process hygiene of children before execve (monitor.h). */
#include "backend/monitor.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit/channel.h"
#include "kit/net.h"
#include "policy/plan.h"
#include "kit/pidfd.h"
#include "cgroup/cgroup.h"
#include "util/error.h"
#include "util/fdpass.h"

bool mon_tie_to(pid_t supervisor, int sig)
{
	return prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0 && getppid() == supervisor;
}

int mon_start(const struct mon_start *m, const struct be_io *io, pid_t *pid, int *pidfd, struct al_error *err)
{
	int cgfd = io->cg ? cg_clone_fd(io->cg) : -1;
	/* On cgroup v1 the monitor moves itself into the job's cgroups (cg_join_fds), before it runs
	 * anything of the job: no move of ours by pid, which can wait for an RCU grace period. */
	int join[CG_JOIN_MAX], njoin = 0;
	bool joins = io->cg && cgfd < 0 && cg_joins_self(io->cg);
	if (joins && (njoin = cg_join_fds(io->cg, join, err)) < 0)
		return njoin;
	pid_t supervisor = getpid();
	*pid = pfd_clone3(0, pidfd, cgfd);
	if (*pid == 0) {
		/* SIGTERM, which m->main takes: its handler ends the job. */
		if (!mon_tie_to(supervisor, SIGTERM))
			_exit(126);
		int r = cg_join_self(join, njoin);
		if (r < 0) {
			nat_send(m->status_w, NK_ERROR, NS_CGROUP, -r, 0, "the job's cgroups (writing 0 to tasks)");
			_exit(126); /* the backends' own setup failure status */
		}
		for (size_t i = 0; i < m->nparent_only; i++)
			if (m->parent_only[i] >= 0)
				close(m->parent_only[i]);
		m->main(m->arg);
		_exit(127); /* not reached: main ends in execve or _exit */
	}
	for (int i = 0; i < njoin; i++)
		close(join[i]);
	if (*pid < 0)
		return al_err(err, -*pid, "setup: starting %s: %s", m->what, strerror(-*pid));
	int r = 0;
	/* v1 beside v2: the monitor is moved in by pid now, before it is released. */
	if (io->cg && cgfd < 0 && !joins)
		r = cg_attach(io->cg, *pid, err);
	if (r == 0 && write(m->sync_w, "g", 1) != 1)
		r = al_err_sys(err, errno, "setup: releasing %s", m->what);
	if (r < 0) {
		siginfo_t si;
		struct rusage ru;
		pfd_send_signal(*pidfd, SIGKILL);
		pfd_wait(*pidfd, &si, &ru, WEXITED);
	}
	return r;
}

void mon_reset_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &sa, NULL); /* fails harmlessly for SIGKILL, SIGSTOP and RT gaps */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

int mon_close_all_but(int *keep, size_t n)
{
	for (size_t i = 1; i < n; i++) /* insertion sort: n is tiny */
		for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	unsigned int from = 3;
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < (int)from)
			continue;
		if ((unsigned)keep[i] > from && syscall(SYS_close_range, from, keep[i] - 1, 0) < 0)
			return -errno;
		from = (unsigned)keep[i] + 1;
	}
	return syscall(SYS_close_range, from, ~0U, 0) < 0 ? -errno : 0;
}

/* The decimal digits of v into buf, without formatting functions: the length. */
static size_t put_uint(char *buf, unsigned v)
{
	char num[12];
	size_t n = 0, k = 0;
	do
		num[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < sizeof(num));
	while (n > 0)
		buf[k++] = num[--n];
	return k;
}

int mon_write_map(const char *file, unsigned inside, unsigned outside)
{
	char line[32];
	size_t k = put_uint(line, inside);
	line[k++] = ' ';
	k += put_uint(line + k, outside);
	line[k++] = ' ';
	line[k++] = '1';
	line[k++] = '\n';
	int fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = write(fd, line, k) == (ssize_t)k ? 0 : -errno;
	close(fd);
	return r;
}

int mon_map_self(unsigned inside, unsigned uid, unsigned gid, bool *in_maps)
{
	*in_maps = false;
	int fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "deny", 4) != 4) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return -e;
	}
	close(fd);
	*in_maps = true;
	int r = mon_write_map("/proc/self/uid_map", inside, uid);
	return r < 0 ? r : mon_write_map("/proc/self/gid_map", inside, gid);
}

/* One socket made and sent: 0 or -errno. */
static int hand_socket(int sock, int type, unsigned addr, unsigned short port, char tag)
{
	int fd = net_bind_socket(type, addr, port);
	if (fd < 0)
		return fd;
	int r = al_send_fd(sock, fd, tag);
	close(fd);
	return r < 0 ? r : 0;
}

/* The capture's sockets. Safe to make: they are bound in the job's own namespace, where only
 * the job can reach them, and they are served by the supervisor, which decides what each
 * connection may reach; the payload never holds one (init closes them once sent). Binding port 53
 * and the ports below 1024 needs init's CAP_NET_BIND_SERVICE, which the payload never has, so
 * the job cannot take these ports first. */
static int hand_capture(int sock, const struct pol_capture *cap, const char **what)
{
	unsigned dns = (127u << 24) | (53u << 16) | 1u; /* AL_DNS_ADDR */
	*what = "the sandbox's resolver on " AL_DNS_ADDR ":53";
	int r = hand_socket(sock, SOCK_DGRAM, dns, 53, 'u');
	r = r ?: hand_socket(sock, SOCK_STREAM, dns, 53, 't');
	if (r < 0)
		return r;
	*what = "a capture listener on an allowlist port";
	for (unsigned i = 0; r == 0 && i < cap->nports; i++)
		r = hand_socket(sock, SOCK_STREAM, INADDR_ANY, cap->ports[i], 'l');
	return r ?: al_send_fds(sock, NULL, 0, 'e');
}

int mon_hand_proxy_socket(int proxy_sock, const struct pol_capture *cap, const char **what)
{
	*what = "proxy socket on 127.0.0.1";
	int fd = net_listen_lo(AL_PROXY_PORT);
	if (fd < 0)
		return fd;
	*what = "handing the proxy socket to the supervisor";
	int r = al_send_fd(proxy_sock, fd, 'p');
	close(fd);
	if (r < 0)
		return r;
	r = cap && cap->on ? hand_capture(proxy_sock, cap, what) : 0;
	return r < 0 ? r : 0;
}
