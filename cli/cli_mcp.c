/* SPDX-License-Identifier: MIT */
/* cli/cli_mcp.c -- `rlm mcp`: the command line, the roots, and the process
 * around the MCP server (serve/mcp.c): stdout kept for the protocol alone
 * (fd 1 pointed at stderr), and SIGTERM and SIGINT read through a
 * signalfd, blocked before any thread is made so that every thread
 * inherits the mask (the REPL's spawner clears it in its children). */
#include "cli.h"
#include "cliopt.h"
#include "../serve/serve.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "usage: rlm mcp [--root DIR]... [options]\n"
    "\n"
    "Serve rlm to an agent as an MCP server over stdio (JSON-RPC 2.0, one message\n"
    "per line; protocol revision " MCP_VERSION ", and 2025-06-18, 2025-03-26,\n"
    "2024-11-05 and 2024-10-07 to clients that ask for them). Add it to a client as\n"
    "the command `rlm mcp --root DIR`. stdout carries only the protocol; logs go to\n"
    "stderr.\n"
    "\n"
    "Tools:\n"
    "  solve        answer a question over a context of any size. Arguments:\n"
    "               question, and one of context (the text), path (a file, a\n"
    "               directory or a JSONL file under a root) or corpus_id; optional\n"
    "               max_depth, max_iterations, schema (a JSON Schema the answer\n"
    "               must be valid under: the answer is then that JSON value).\n"
    "               Result: the answer as text, and structuredContent {run_id,\n"
    "               answer, stop, usage, cost_usd}\n"
    "  load_corpus  load path (optional format: auto, text, dir, jsonl) once and\n"
    "               return {corpus_id, kind, documents, bytes, tokens_estimate}\n"
    "  ask          question, and session_id or corpus_id (optional schema): as\n"
    "               solve, in a session\n"
    "               (the REPL's variables and the earlier questions stay) or over a\n"
    "               loaded corpus\n"
    "  open_session a context as solve takes it (optional max_depth,\n"
    "               max_iterations): {session_id, corpus_id} for ask\n"
    "  close_session  session_id: ends it, its worker freed\n"
    "A tools/call with _meta.progressToken gets notifications/progress (root turns\n"
    "and sub-call waves); notifications/cancelled stops the request's solve. Bad\n"
    "arguments are tool errors (isError); EOF on stdin cancels what runs and exits.\n"
    "\n"
    "      --root DIR          a directory that path may name (repeatable; default:\n"
    "                          the current directory); paths outside every root are\n"
    "                          refused, and no symbolic link under one is followed\n"
    "      --session-idle-timeout SECS  a session unused this long is ended (900)\n"
    "      --max-sessions N    sessions live at once (32); one more ends the least\n"
    "                          recently used idle one\n"
    "      --max-session-memory SIZE  the sessions' workers' resident memory,\n"
    "                          summed (4G); past it the least recently used idle\n"
    "                          sessions are ended\n"
    "  -s, --strategy NAME     repl (default) or tree, as for rlm solve\n"
    "      --cache PATH        the store: cached calls and recorded runs (env\n"
    "                          RLM_CACHE; default as for rlm solve): rlm runs show ID\n"
    "      --no-cache          no store (env RLM_NO_CACHE=1, unless --cache is given)\n"
    "      --refresh           look nothing up in the store, but keep what is made\n"
    "  -v, --verbose           log every message, and more, on stderr\n"
    "  -h, --help              this help\n"
    "\n"
    "The options of a solve, as for rlm solve (a call's max_depth and\n"
    "max_iterations override the server's):\n"
    "%s"
    "\n"
    "%s"
    "\n"
    "%s"
    "\n"
    "Exit status: 0 after EOF on stdin, SIGTERM or SIGINT; 1 the server could not\n"
    "start (the models, the store); 2 bad usage.\n";

enum {
	OPT_ROOT = OPT_MODEL_LAST + 1,
	OPT_CACHE,
	OPT_NO_CACHE,
	OPT_SESSION_IDLE,
	OPT_MAX_SESSIONS,
	OPT_MAX_SESSION_MEMORY,
};

int cli_mcp(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"root", required_argument, NULL, OPT_ROOT},
	    {"cache", required_argument, NULL, OPT_CACHE},
	    {"no-cache", no_argument, NULL, OPT_NO_CACHE},
	    {"session-idle-timeout", required_argument, NULL, OPT_SESSION_IDLE},
	    {"max-sessions", required_argument, NULL, OPT_MAX_SESSIONS},
	    {"max-session-memory", required_argument, NULL, OPT_MAX_SESSION_MEMORY},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    SOLVE_LONGOPTS,
	    MODEL_LONGOPTS,
	    SANDBOX_LONGOPTS,
	    {NULL, 0, NULL, 0},
	};
	struct serve_mcp_cfg mc = {0};
	struct svc_cfg *cfg = &mc.svc;
	struct rlm_err err = {0, ""};
	const char **roots = xcalloc((size_t)argc + 1, sizeof(*roots));
	const char *no_cache_env = getenv("RLM_NO_CACHE");
	char *cwd = NULL;
	size_t n_roots = 0;
	sigset_t sigs;
	int opt, rc, sfd = -1, out_fd = -1, status = 1;

	cli_model_opts_init(&cfg->mo);
	if ((status = cli_solve_opts_env(&cfg->base)))
		goto out;
	status = 1;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":s:vh", longopts, NULL)) != -1) {
		int taken = cli_model_opts_take(&cfg->mo, opt, optarg);
		if (!taken)
			taken = cli_solve_opts_take(&cfg->base, opt, optarg);
		if (!taken)
			taken = cli_sandbox_opts_take(&cfg->base.sandbox, opt, optarg);
		if (taken == 2) {
			status = 2;
			goto out;
		}
		if (taken)
			continue;
		switch (opt) {
		case OPT_ROOT:
			roots[n_roots++] = optarg;
			break;
		case OPT_CACHE:
			cfg->cache_path = optarg;
			break;
		case OPT_NO_CACHE:
			cfg->no_cache = true;
			break;
		case OPT_SESSION_IDLE:
			if (text_parse_double(optarg, 0.1, 1e7, &cfg->session_idle_s)) {
				status = log_fail(2, "bad value '%s' for --session-idle-timeout: "
						  "want seconds >= 0.1", optarg);
				goto out;
			}
			break;
		case OPT_MAX_SESSIONS: {
			long v;
			if (text_parse_int(optarg, 1, 100000, &v)) {
				status = log_fail(2, "bad value '%s' for --max-sessions: want an "
						  "integer 1..100000", optarg);
				goto out;
			}
			cfg->max_sessions = (int)v;
			break;
		}
		case OPT_MAX_SESSION_MEMORY: {
			uint64_t v;
			if (text_parse_size(optarg, &v) || v < (1u << 20)) {
				status = log_fail(2, "bad value '%s' for --max-session-memory: want a "
						  "size of at least 1M, such as 4G", optarg);
				goto out;
			}
			cfg->max_session_memory = (size_t)v;
			break;
		}
		case 'v':
			rlm_log_level = LOG_DEBUG;
			mc.verbose = true;
			break;
		case 'h':
			printf(usage, cli_solve_opts_help, cli_model_opts_help, cli_sandbox_opts_help);
			status = 0;
			goto out;
		case ':':
			status = log_fail(2, "option '%s' needs a value", argv[optind - 1]);
			goto out;
		default:
			status = log_fail(2, "unknown option '%s' (see rlm mcp --help)",
					  argv[optind - 1]);
			goto out;
		}
	}
	if (optind < argc) {
		status = log_fail(2, "unexpected argument '%s' (see rlm mcp --help)", argv[optind]);
		goto out;
	}
	if (!n_roots) {
		if (!(cwd = getcwd(NULL, 0))) {
			status =
			    log_fail(1, "cannot find the current directory: %s", strerror(errno));
			goto out;
		}
		roots[n_roots++] = cwd;
	}
	for (size_t i = 0; i < n_roots; i++) {
		struct stat st;
		const char *why = NULL;
		if (stat(roots[i], &st))
			why = strerror(errno);
		else if (!S_ISDIR(st.st_mode))
			why = "not a directory";
		if (why) {
			status = log_fail(2, "cannot serve --root '%s': %s", roots[i], why);
			goto out;
		}
	}
	if (repl_sandbox_check(&cfg->base.sandbox, &err)) {
		status = log_fail(2, "%s", err.msg);
		goto out;
	}
	/* RLM_NO_CACHE=1 unless --cache names a store; --no-cache always. */
	if (!cfg->cache_path && no_cache_env && strcmp(no_cache_env, "1") == 0)
		cfg->no_cache = true;
	cfg->roots = roots;
	cfg->corpus_cache = SVC_CORPUS_CACHE;

	/* Blocked before any thread is made: every thread inherits the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	if ((sfd = signalfd(-1, &sigs, SFD_CLOEXEC)) < 0) {
		status = log_fail(1, "signalfd: %s", strerror(errno));
		goto out;
	}
	/* The protocol's stdout; fd 1 becomes stderr. */
	if ((out_fd = fcntl(1, F_DUPFD_CLOEXEC, 3)) < 0 || dup2(2, 1) < 0) {
		status = log_fail(1, "cannot set up stdout: %s", strerror(errno));
		goto out;
	}
	if ((rc = serve_mcp(&mc, 0, out_fd, sfd, &err))) {
		status = log_fail(rc == RLM_EINVAL ? 2 : 1, "%s", err.msg);
		goto out;
	}
	status = 0;
out:
	if (out_fd > 0)
		close(out_fd);
	if (sfd >= 0)
		close(sfd);
	free(cwd);
	free(roots);
	cli_tools_opts_release(&cfg->base);
	return status;
}
