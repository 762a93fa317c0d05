/* mcp.c — `airlock mcp`: the sandbox manager as an MCP server on stdin/stdout (one client). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli/cli.h"
#include "config/config.h"
#include "manager/audit.h"
#include "manager/mgate.h"
#include "manager/sbmgr.h"
#include "server/mcp.h"
#include "util/cleanup.h"

static const char mcp_usage[] =
	"Usage: airlock mcp [--profile NAME] [--audit FILE]\n"
	"\n"
	"Serves the Model Context Protocol on standard input and output (newline-delimited\n"
	"JSON-RPC; revisions " MCP_PROTOCOL_LATEST " and " MCP_PROTOCOL_PREVIOUS "). Tools: code_execute,\n"
	"code_create_sandbox, code_install_package, code_write_file, code_read_file,\n"
	"code_list_files, code_destroy_sandbox. Standard output carries protocol messages\n"
	"only; the log goes to standard error.\n"
	"\n"
	"  --profile NAME   profile of throwaway sandboxes and of code_create_sandbox without\n"
	"                   one (default untrusted-code-read)\n"
	"  --audit FILE     the audit log (default: the configuration's audit.path, else\n"
	"                   /var/log/airlock/audit.jsonl as root, ~/.local/state/airlock/audit.jsonl)\n"
	"\n"
	"Every request passes the configuration's risk rules; approvals are asked of the\n"
	"client's user through MCP elicitation. End of input or SIGTERM destroys every\n"
	"sandbox and exits 0.\n";

static void log_stderr(void *ctx, enum mcp_log_level level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "airlock mcp: %s: %s\n", mcp_log_level_name(level), msg);
}

int cli_mcp(int argc, char **argv)
{
	static const struct option opts[] = {
		{"profile", required_argument, NULL, 'p'}, {"audit", required_argument, NULL, 'a'},
		{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
	};
	if (cli_take_config(&argc, argv, true) != 0)
		return AL_EXIT_FAILURE;
	const char *profile = NULL, *audit_path = NULL;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:a:h", opts, NULL)) != -1) {
		if (c == 'p')
			profile = optarg;
		else if (c == 'a')
			audit_path = optarg;
		else if (c == 'h')
			return fputs(mcp_usage, stdout), 0;
		else
			return fputs(mcp_usage, stderr), AL_EXIT_FAILURE;
	}
	if (optind < argc)
		return cli_fail("mcp: unexpected argument '%s'", argv[optind]);
	struct al_error e = {0};
	struct cfg *cfg = NULL;
	struct audit_log *log = NULL;
	struct sbm *m = NULL;
	int rc = AL_EXIT_FAILURE, sfd = -1;
	cleanup_free char *fallback = NULL;
	if (cfg_load(cli_config_path(), &cfg, &e) < 0) {
		cli_fail("%s", e.msg);
		goto out;
	}
	if (!audit_path && !cfg->audit.path && audit_default_path(geteuid() == 0, &fallback) < 0) {
		cli_fail("mcp: no audit log path (set audit.path or --audit)");
		goto out;
	}
	struct audit_options ao;
	audit_options_from_cfg(&cfg->audit, fallback, &ao);
	if (audit_path)
		ao.path = audit_path;
	if (audit_open(&ao, &log, &e) < 0) {
		cli_fail("mcp: %s", e.msg);
		goto out;
	}
	/* Before any thread exists, so that every thread inherits the mask: SIGTERM and SIGINT
	 * arrive on the signalfd only, and a closed pipe is an error return, not a death. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((sfd = signalfd(-1, &set, SFD_CLOEXEC)) < 0) {
		cli_fail("mcp: signalfd: %s", strerror(errno));
		goto out;
	}
	al_cleanup_stale();
	struct sbm_opts so = {.size = sizeof(so), .cfg = cfg, .default_profile = profile};
	if (sbm_new(&so, &m, &e) < 0) {
		cli_fail("mcp: %s", e.msg);
		goto out;
	}
	struct srv_mgr_api api;
	sbm_api(m, &api);
	struct mgate mg = {.cfg = cfg, .log = log, .transport = "stdio", .peer = NULL};
	struct srv_gate gate;
	mgate_init(&mg, &gate);
	struct mcp_opts mo = {.size = sizeof(mo), .mgr = &api, .gate = &gate, .server_version = AIRLOCK_VERSION,
			      .log = log_stderr};
	if (mcp_serve_stdio(&mo, 0, 1, sfd, &e) < 0)
		cli_fail("mcp: %s", e.msg);
	else
		rc = 0;
out:
	sbm_free(m); /* every sandbox is destroyed: no process, cgroup or workspace is left */
	audit_close(log);
	cfg_free(cfg);
	if (sfd >= 0)
		close(sfd);
	return rc;
}
