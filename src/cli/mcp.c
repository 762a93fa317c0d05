/* mcp.c — `airlock mcp`: the sandbox manager as an MCP server on stdin/stdout (one client), with approvals asked of the client's user or on the controlling terminal. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli.h"
#include "mcp/mcp.h"
#include "service/service.h"
#include "util/cleanup.h"

static const char mcp_usage_head[] =
	"Usage: airlock mcp [--profile NAME] [--audit FILE] [--approve MODE]\n"
	"\n"
	"Serves the Model Context Protocol on standard input and output (newline-delimited\n"
	"JSON-RPC; revisions " MCP_PROTOCOL_LATEST " and " MCP_PROTOCOL_PREVIOUS ").";

static const char mcp_usage_options[] =
	"\nStandard output carries protocol messages only; the log goes to standard error.\n"
	"\n"
	"  --profile NAME   profile of throwaway sandboxes and of code_create_sandbox without\n"
	"                   one (default untrusted-code-read)\n"
	"  --audit FILE     the audit log (default: the configuration's audit.path, else\n"
	"                   /var/log/airlock/audit.jsonl as root, ~/.local/state/airlock/audit.jsonl)\n";

static const char mcp_usage_tail[] =
	"                   (elicitation, then the terminal when there is one).\n"
	"\n"
	"Every request passes the configuration's risk rules. No answer before the rule's\n"
	"approval_timeout is a denial, and a denied call never runs. End of input or SIGTERM\n"
	"destroys every sandbox and exits 0.\n";

/* The usage text: the tools named from the tool table (it cannot drift from what is served), the
 * --approve lines from the table airlock serve shares. */
static void usage(FILE *f)
{
	char approve[2048];
	mgate_approve_help(CFG_CHAN_TERMINAL, 19, approve, sizeof(approve));
	fputs(mcp_usage_head, f);
	fputs("\nTools:", f);
	unsigned col = 6;
	for (int i = 0; i < TL__COUNT; i++) {
		const char *name = tl_name((enum tl_id)i);
		unsigned w = (unsigned)strlen(name) + 2;
		if (col + w > 88) {
			fputc('\n', f);
			col = 0;
		}
		fprintf(f, "%s%s%s", col ? " " : "", name, i + 1 < TL__COUNT ? "," : ".");
		col += w;
	}
	fputs(mcp_usage_options, f);
	fputs(approve, f);
	fputs(mcp_usage_tail, f);
}

static void log_stderr(void *ctx, enum mcp_log_level level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "airlock mcp: %s: %s\n", mcp_log_level_name(level), msg);
}

/* ---- who the client is (the audit log's peer) --------------------------------------------------- */

/* "pid 1234 (python3)[, tty /dev/pts/3]": the process that started us (whose pipes we serve) and
 * our controlling terminal. The name is the client's choice: kept to printable ASCII. */
static void stdio_peer(char *out, size_t cap)
{
	pid_t pp = getppid();
	char comm[32] = "?", path[64], stat[512];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pp);
	FILE *f = fopen(path, "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	for (char *c = comm; *c; c++)
		if (!isprint((unsigned char)*c) || *c == '(' || *c == ')')
			*c = '?';
	int n = snprintf(out, cap, "pid %d (%s)", (int)pp, comm);
	/* tty_nr, the 7th field of /proc/self/stat (after the parenthesised name). */
	f = fopen("/proc/self/stat", "re");
	size_t got = f ? fread(stat, 1, sizeof(stat) - 1, f) : 0;
	if (f)
		fclose(f);
	stat[got] = 0;
	/* After the name: state, ppid, pgrp, session, tty_nr. */
	const char *rp = strrchr(stat, ')');
	char *end = NULL;
	long tty = 0;
	for (int field = 0; rp && field < 5; field++) {
		rp = strchr(rp + 1, ' ');
		if (rp && field == 4)
			tty = strtol(rp + 1, &end, 10);
	}
	if (end && tty > 0 && n > 0 && (size_t)n < cap) {
		unsigned maj = major((dev_t)tty), min = minor((dev_t)tty);
		if (maj >= 136 && maj <= 143) /* Unix98 pseudo-terminals */
			snprintf(out + n, cap - (size_t)n, ", tty /dev/pts/%u", (maj - 136) * 256 + min);
		else
			snprintf(out + n, cap - (size_t)n, ", tty %u:%u", maj, min);
	}
}

/* ---- the terminal prompt -------------------------------------------------------------------------- */

/*
 * One thread asks on /dev/tty, one question at a time, oldest first. It polls the terminal, the
 * approval queue's change descriptor and a stop eventfd. The session puts a call needing approval
 * into the queue and keeps its deadline; when the deadline passes it withdraws the entry, so the
 * prompt notices the question vanish and says it will not run.
 *  - Never stdin or stdout: they carry the protocol.
 *  - Type-ahead is discarded when a question appears (tcflush), so a key pressed before the
 *    prompt cannot approve it. Only "y" or "yes" approves; anything else but an empty line asks
 *    again; an empty line or "n" denies.
 *  - The whole request is shown: every argument as ASCII-only JSON, and the code in full with
 *    invisible and control characters spelled \u{XXXX} (apq_visible), so a request can neither
 *    drive the terminal nor hide a line behind padding or a bidirectional override. Code longer
 *    than a page is paged (Enter: next page); "y" is accepted only once the last page was shown,
 *    and the approval names the digest of exactly the request shown.
 */
struct prompt {
	struct apq *q;
	int tty;
	int stop; /* eventfd */
	bool tty_dead;
	uint64_t cur;			 /* the question on screen, 0: none */
	char digest[APQ_DIGEST_LEN + 1]; /* of the request on screen */
	char *code;			 /* its code as shown (apq_visible), malloc'd, or NULL */
	size_t code_off;		 /* how much of it was shown */
	unsigned code_line;
	char line[64];
	size_t len;
	bool overlong;
	pthread_t th;
};

static void say(struct prompt *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct prompt *p, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized): false positive: ap was just started */
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	size_t left = n < 0 ? 0 : (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1;
	for (const char *b = buf; left && !p->tty_dead;) {
		ssize_t w = write(p->tty, b, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		b += w;
		left -= (size_t)w;
	}
}

/* Printable ASCII only (the operator's rule names, the reason). */
static void ascii(const char *in, char *out, size_t cap)
{
	size_t i = 0;
	for (; in && in[i] && i + 1 < cap; i++)
		out[i] = isprint((unsigned char)in[i]) ? in[i] : '?';
	out[i] = 0;
}

#define PAGE_LINES 40

/* The next page of the code on screen; then the question, or how to see more. */
static void page(struct prompt *p)
{
	for (unsigned n = 0; p->code && p->code[p->code_off] && n < PAGE_LINES; n++) {
		const char *l = p->code + p->code_off;
		size_t len = strcspn(l, "\n");
		say(p, "  %5u | %.*s\r\n", ++p->code_line, (int)(len > 3000 ? 3000 : len), l);
		for (size_t off = 3000; off < len; off += 3000) /* one long line, in pieces the buffer holds */
			say(p, "        | %.*s\r\n", (int)(len - off > 3000 ? 3000 : len - off), l + off);
		p->code_off += len + (l[len] == '\n');
	}
	if (p->code && p->code[p->code_off])
		say(p, "-- more below line %u: Enter shows the next page, n denies --\r\n", p->code_line);
	else
		say(p, "Run it? [y/N] (no answer in time denies it): ");
}

/* "line L, column C: >>>TEXT<<<; ..." of the item's marks (apq_marks_text), or NULL. */
static char *marks_of(const json_t *item)
{
	const json_t *code = json_object_get(json_object_get(item, "request"), "code");
	const json_t *list = json_object_get(item, "marks");
	struct srv_mark m[SRV_GATE_MARKS_MAX];
	size_t n = 0, i;
	const json_t *one;
	json_array_foreach(list, i, one) {
		if (n == SRV_GATE_MARKS_MAX)
			break;
		m[n++] = (struct srv_mark){(size_t)json_integer_value(json_object_get(one, "start")),
					   (size_t)json_integer_value(json_object_get(one, "end"))};
	}
	return json_is_string(code) && n ? apq_marks_text(json_string_value(code), json_string_length(code), m, n)
					 : NULL;
}

static void show(struct prompt *p, const json_t *item)
{
	const json_t *args = json_object_get(item, "request");
	const char *sb = json_string_value(json_object_get(args, "sandbox_id"));
	char tool[64], reason[SRV_GATE_REASON_MAX], sandbox[80], who[96];
	ascii(json_string_value(json_object_get(item, "tool")), tool, sizeof(tool));
	ascii(json_string_value(json_object_get(item, "reason")), reason, sizeof(reason));
	ascii(json_string_value(json_object_get(item, "principal")), who, sizeof(who));
	ascii(sb, sandbox, sizeof(sandbox));
	ascii(json_string_value(json_object_get(item, "digest")), p->digest, sizeof(p->digest));
	json_t *rest = json_deep_copy(args);
	json_object_del(rest, "code");
	json_object_del(rest, "sandbox_id");
	cleanup_free char *other = rest ? json_dumps(rest, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_SORT_KEYS) : NULL;
	json_decref(rest);
	long long timeout_s = (json_integer_value(json_object_get(item, "timeout_ms")) -
			       json_integer_value(json_object_get(item, "age_ms")) + 999) /
			      1000;
	free(p->code);
	/* The code with what the rule's pattern matched between >>> and <<<, as the elicitation
	 * message shows it, and the list of those matches above it. */
	const char *code = json_string_value(json_object_get(item, "code_marked"));
	if (!code)
		code = json_string_value(json_object_get(item, "code_visible"));
	cleanup_free char *where = marks_of(item);
	p->code = code ? strdup(code) : NULL;
	p->code_off = 0;
	p->code_line = 0;
	(void)tcflush(p->tty, TCIFLUSH); /* type-ahead must not answer a question not yet shown */
	say(p,
	    "\r\nairlock mcp: approval needed (request %llu, %lld s left)\r\n  tool:      %s\r\n  risk:      %s\r\n"
	    "  caller:    %s\r\n  sandbox:   %s\r\n  arguments: %s\r\n  digest:    %s\r\n",
	    (unsigned long long)p->cur, timeout_s > 0 ? timeout_s : 0, tool, reason, who[0] ? who : "?",
	    sb ? sandbox : "a new throwaway sandbox", other ? other : "{}", p->digest);
	if (where && *where)
		say(p, "  matched:   %s\r\n", where);
	if (p->code)
		say(p, "  code (%lld bytes; invisible characters shown as \\u{XXXX}):\r\n",
		    (long long)json_integer_value(json_object_get(item, "code_bytes")));
	page(p);
}

/* The queue changed: the question on screen may be gone; the next one may be due. */
static void refresh(struct prompt *p)
{
	json_t *list = apq_list(p->q, NULL);
	if (!list)
		return;
	bool still = false;
	size_t i;
	json_t *item;
	json_array_foreach(list, i, item)
		if ((uint64_t)json_integer_value(json_object_get(item, "id")) == p->cur)
			still = true;
	if (p->cur && !still) {
		say(p,
		    "\r\nairlock mcp: request %llu is no longer waiting (timed out or cancelled): it will not run.\r\n",
		    (unsigned long long)p->cur);
		p->cur = 0;
	}
	if (!p->cur && json_array_size(list)) {
		item = json_array_get(list, 0);
		p->cur = (uint64_t)json_integer_value(json_object_get(item, "id"));
		show(p, item);
	}
	json_decref(list);
}

static void answer(struct prompt *p, const char *line)
{
	bool yes = strcasecmp(line, "y") == 0 || strcasecmp(line, "yes") == 0;
	bool no = !*line || strcasecmp(line, "n") == 0 || strcasecmp(line, "no") == 0;
	if (!p->cur) {
		if (*line)
			say(p, "airlock mcp: nothing is waiting for an answer.\r\n");
		return;
	}
	bool more = p->code && p->code[p->code_off];
	if (more && !*line) {
		page(p);
		return;
	}
	if (more && yes) {
		say(p, "Read the whole code first: Enter shows the next page (n denies).\r\n");
		return;
	}
	if (!yes && !no) {
		say(p, "Please answer y or n: ");
		return;
	}
	struct apq_decision d = {.id = p->cur, .approve = yes, .by = SRV_BY_TERMINAL, .digest = p->digest};
	if (apq_resolve(p->q, &d) < 0)
		say(p, "airlock mcp: too late: request %llu is no longer waiting; it will not run.\r\n",
		    (unsigned long long)p->cur);
	else
		say(p, "airlock mcp: request %llu %s.\r\n", (unsigned long long)p->cur, yes ? "approved" : "denied");
	p->cur = 0;
	refresh(p);
}

static void read_tty(struct prompt *p)
{
	char buf[256];
	ssize_t n = read(p->tty, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		/* Hung up, or we are not in the terminal's foreground (EIO): nobody can answer here any
		 * more; what waits times out, which is a denial. */
		p->tty_dead = true;
		fprintf(stderr,
			"airlock mcp: the terminal can no longer be read (%s): approvals asked there will time out\n",
			n < 0 ? strerror(errno) : "end of file");
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		char ch = buf[i];
		if (ch != '\n' && ch != '\r') {
			if (p->len + 1 < sizeof(p->line))
				p->line[p->len++] = ch;
			else
				p->overlong = true;
			continue;
		}
		p->line[p->len] = 0;
		/* Surrounding blanks do not count; an overlong line is no answer. */
		char *s = p->line;
		while (*s == ' ' || *s == '\t')
			s++;
		for (size_t e = strlen(s); e && (s[e - 1] == ' ' || s[e - 1] == '\t'); e--)
			s[e - 1] = 0;
		answer(p, p->overlong ? "?" : s);
		p->len = 0;
		p->overlong = false;
	}
}

static void *prompt_main(void *arg)
{
	struct prompt *p = arg;
	for (;;) {
		struct pollfd f[3] = {
			{.fd = p->stop, .events = POLLIN},
			{.fd = apq_fd(p->q), .events = POLLIN},
			{.fd = p->tty_dead ? -1 : p->tty, .events = POLLIN},
		};
		if (poll(f, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (f[0].revents)
			break;
		if (f[1].revents) {
			apq_drain(p->q);
			refresh(p);
		}
		if (f[2].revents)
			read_tty(p);
	}
	return NULL;
}

static int prompt_start(struct prompt *p, struct apq *q, int tty)
{
	*p = (struct prompt){.q = q, .tty = tty, .stop = eventfd(0, EFD_CLOEXEC)};
	if (p->stop < 0)
		return -errno;
	int r = pthread_create(&p->th, NULL, prompt_main, p);
	if (r) {
		close(p->stop);
		p->stop = -1;
		return -r;
	}
	return 0;
}

static void prompt_stop(struct prompt *p)
{
	if (p->stop < 0)
		return;
	uint64_t one = 1;
	if (write(p->stop, &one, sizeof(one)) < 0) {
		/* An eventfd at 0 cannot refuse one increment. */
	}
	pthread_join(p->th, NULL);
	close(p->stop);
	p->stop = -1;
	free(p->code);
	p->code = NULL;
}

/* ---- the command ------------------------------------------------------------------------------ */

/* The session's approval channels from --approve, else from approval.channels. */
struct channel_choice {
	const struct mgate_approve *mode;
	int tty; /* /dev/tty or -1 */
	struct mcp_opts *mo;
	bool use_tty;
};

/* service_opts.adjust: with --approve, only the chosen channels count (cfg is the service's). */
static int channels(void *ctx, struct cfg *cfg)
{
	struct channel_choice *cc = ctx;
	struct mgate_channels ch;
	if (cc->mode->given && cc->mode->other && cc->tty < 0)
		return cli_fail("mcp: --approve terminal: no controlling terminal (/dev/tty cannot be opened)");
	mgate_approve_apply(cc->mode, CFG_CHAN_TERMINAL, &cfg->approval, &ch);
	/* approval.channels may name the terminal where there is none: then it is not used. */
	cc->use_tty = ch.other && cc->tty >= 0;
	cc->mo->no_elicitation = !ch.elicitation;
	cc->mo->approver_first = ch.other_first;
	return 0;
}

static int parse_args(int argc, char **argv, const char **profile, const char **audit_path, struct mgate_approve *m)
{
	static const struct option opts[] = {
		{"profile", required_argument, NULL, 'p'},
		{"audit", required_argument, NULL, 'a'},
		{"approve", required_argument, NULL, 'A'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:a:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			*profile = optarg;
			break;
		case 'a':
			*audit_path = optarg;
			break;
		case 'A': {
			char msg[MGATE_MSG_MAX];
			if (mgate_approve_parse(optarg, CFG_CHAN_TERMINAL, m, msg) < 0)
				return cli_fail("mcp: %s", msg);
			break;
		}
		case 'h':
			return usage(stdout), 0;
		default:
			return usage(stderr), AL_EXIT_FAILURE;
		}
	}
	if (optind < argc)
		return cli_fail("mcp: unexpected argument '%s'", argv[optind]);
	return -1;
}

int cli_mcp(int argc, char **argv)
{
	if (cli_take_config(&argc, argv, true) != 0)
		return AL_EXIT_FAILURE;
	const char *profile = NULL, *audit_path = NULL;
	struct mgate_approve mode = {0};
	int rc = parse_args(argc, argv, &profile, &audit_path, &mode);
	if (rc >= 0)
		return rc;
	rc = AL_EXIT_FAILURE;
	struct al_error e = {0};
	struct service *svc = NULL;
	struct prompt pr = {.stop = -1};
	/* The controlling terminal, if any; O_NOCTTY: never acquire one. */
	cleanup_close int tty = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	struct mcp_opts mo = {
		.size = sizeof(mo), .server_version = AIRLOCK_VERSION, .log = log_stderr, .transport = "stdio"};
	struct channel_choice cc = {.mode = &mode, .tty = tty, .mo = &mo};
	int sfd = service_stop_signals(true);
	if (sfd < 0) {
		cli_fail("mcp: signalfd: %s", strerror(-sfd));
		goto out;
	}
	char peer[128];
	stdio_peer(peer, sizeof(peer));
	struct service_opts so = {.size = sizeof(so),
				  .config = cli_config_path(),
				  .profile = profile,
				  .audit = audit_path,
				  .transport = "stdio",
				  .peer = peer,
				  .adjust = channels,
				  .adjust_ctx = &cc};
	int r = service_open(&so, &svc, &e);
	if (r < 0) {
		if (r != -ECANCELED)
			cli_fail("mcp: %s", e.msg);
		goto out;
	}
	struct srv_approver approver;
	if (cc.use_tty) {
		if (prompt_start(&pr, svc->approvals, tty) < 0) {
			cli_fail("mcp: cannot start the terminal prompt");
			goto out;
		}
		apq_approver(svc->approvals, &approver);
		mo.approver = &approver;
	}
	mo.mgr = &svc->api;
	mo.gate = &svc->gate;
	if (mcp_serve_stdio(&mo, 0, 1, sfd, &e) < 0)
		cli_fail("mcp: %s", e.msg);
	else
		rc = 0;
out:
	prompt_stop(&pr); /* the session withdrew its questions when it ended */
	service_close(svc);
	if (sfd >= 0)
		close(sfd);
	return rc;
}
