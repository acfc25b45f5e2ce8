/* SPDX-License-Identifier: MIT */
/* cli/cli_serve.c -- `rlm serve`: the solve API over HTTP (libmicrohttpd): the
 * command line, the daemon and shutdown (the HTTP side is serve_http.c).
 *
 * DESIGN
 * One thread per connection, so a synchronous solve simply waits on its
 * run and a stream blocks in its reader until the run has more to say;
 * solves themselves run on the service's threads (serve/service.h), never
 * on a connection's. SIGINT and SIGTERM are blocked in every thread and
 * taken by sigwait() in the main thread: the listening socket is closed,
 * running solves get --shutdown-grace to end before they are cancelled (a
 * second signal cancels them at once), waiting requests are answered, and
 * the process exits 0. */
#include "cli.h"
#include "../common/net.h"
#include "cliopt.h"
#include "../serve/serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_PORT 8080

static const char usage[] =
    "usage: rlm serve [--host ADDR] [--port N] [--api-key KEY] [--root DIR]... [options]\n"
    "\n"
    "Serve rlm over HTTP: a solve API with live events, and an OpenAI-compatible\n"
    "chat completions endpoint whose answers come from recursive solves. Every\n"
    "solve uses the models given here (one call pool for all) and the store (the\n"
    "cache and the record of runs). It prints `rlm serve: listening on URL` on\n"
    "stdout when ready and logs to stderr. See docs/serve.md for the protocol.\n"
    "\n"
    "Routes:\n"
    "  POST   /v1/solve             {\"question\", \"context\" | \"context_path\" |\n"
    "                               \"corpus_id\", \"format\", \"async\", \"options\",\n"
    "                               \"schema\" (a JSON Schema: a typed answer)}\n"
    "  GET    /v1/runs/ID           a run's state and, once ended, its result\n"
    "  GET    /v1/runs/ID/events    its events as server-sent events, replayed then live\n"
    "  DELETE /v1/runs/ID           cancel it\n"
    "  POST   /v1/corpora           load a context once: {\"path\"} | {\"text\"} |\n"
    "                               {\"documents\": [...]}; GET, DELETE /v1/corpora/ID\n"
    "  POST   /v1/sessions          open a session (one REPL across questions):\n"
    "                               {\"context\" | \"context_path\" | \"corpus_id\",\n"
    "                               \"format\", \"options\"}; GET lists them\n"
    "  POST   /v1/sessions/ID/solve {\"question\", \"async\", \"options\"}: a run, as\n"
    "                               /v1/solve's (one at a time: 409 while busy)\n"
    "  POST   /v1/sessions/ID/contexts  add context_1, context_2, ...\n"
    "  POST   /v1/sessions/ID/reset  forget its conversation and variables\n"
    "  GET    /v1/sessions/ID       its state and history; DELETE ends it\n"
    "  POST   /v1/chat/completions  OpenAI-compatible (\"stream\" too); the context is\n"
    "                               \"rlm_context\", the earlier messages, or the one\n"
    "                               user message (the question at its end); a\n"
    "                               conversation continues its session (rlm_session)\n"
    "                               response_format json_schema / json_object:\n"
    "                               content that validated, else 422\n"
    "  GET    /v1/models, /healthz (no auth), /metrics (Prometheus)\n"
    "\n"
    "Server options:\n"
    "      --host ADDR         address to listen on (127.0.0.1); another than a\n"
    "                          loopback address needs --api-key\n"
    "      --port N            port; 0 lets the kernel pick one (8080)\n"
    "      --api-key KEY       clients must send `Authorization: Bearer KEY` (env\n"
    "                          RLM_API_KEY); /healthz needs none\n"
    "      --model-api-key KEY the model provider's key (else OPENAI_API_KEY or\n"
    "                          ANTHROPIC_API_KEY): --api-key is the server's here\n"
    "      --max-solves N      solves running at once; more are refused with 429 (4)\n"
    "      --max-body SIZE     largest request body, e.g. 64M (64M)\n"
    "      --request-timeout SECS  a synchronous solve that runs longer is\n"
    "                          cancelled and answered 504 (600)\n"
    "      --root DIR          a directory context_path and corpora may name (any\n"
    "                          number; none: paths are refused); opened at start,\n"
    "                          no symbolic link under it is followed\n"
    "      --corpus-cache SIZE  contexts sent inline or by context_path are kept\n"
    "                          once unused, the least recently used leaving first,\n"
    "                          up to SIZE bytes (256M; 0: none); corpora posted to\n"
    "                          /v1/corpora stay until deleted\n"
    "      --keep-runs N       finished runs kept in memory (1000); older ones are\n"
    "                          answered from the store\n"
    "      --keep-runs-bytes SIZE  memory the runs kept may hold, running ones\n"
    "                          included: their events, answers and results (256M);\n"
    "                          past it the oldest finished runs leave memory first\n"
    "                          (answered from the store); see also --max-answer\n"
    "      --head-timeout SECS  a request's head (its line and headers) must arrive\n"
    "                          within SECS of the connection's accept, or of the end\n"
    "                          of its previous request, however slowly it trickles\n"
    "                          in; else the connection is closed (10)\n"
    "      --body-timeout SECS  a request's body must arrive within SECS of its head\n"
    "                          (60): raise it for large bodies over slow links\n"
    "      --max-connections N  connections open at once (1024); at the limit, of\n"
    "                          those still sending their head, or a body without\n"
    "                          the API key, the one accepted first is closed so the\n"
    "                          newcomer is served (when there is none, the\n"
    "                          newcomer is closed)\n"
    "      --max-per-address N  connections open at once from one client address,\n"
    "                          handled the same way (256)\n"
    "      --session-idle-timeout SECS  a session unused this long is ended and\n"
    "                          its worker freed; a later request for it gets 404\n"
    "                          saying it expired (900)\n"
    "      --max-sessions N    sessions live at once (32); opening one more ends\n"
    "                          the least recently used idle one (429 when all are\n"
    "                          answering a question)\n"
    "      --max-session-memory SIZE  the sessions' workers' resident memory, summed\n"
    "                          (4G); past it the least recently used idle sessions\n"
    "                          are ended\n"
    "      --shutdown-grace SECS  on SIGTERM or SIGINT, how long running solves\n"
    "                          may go on before they are cancelled (30); a second\n"
    "                          signal cancels them at once (their runs stay\n"
    "                          resumable: the same request again resumes one)\n"
    "      --cache PATH        the store (env RLM_CACHE; default\n"
    "                          $XDG_CACHE_HOME/rlm/rlm.db or ~/.cache/rlm/rlm.db)\n"
    "      --no-cache          no store: nothing cached or recorded; runs are known\n"
    "                          only while the server runs\n"
    "      --refresh           look nothing up in the store, but keep what is made\n"
    "  -s, --strategy NAME     repl (default) or tree, as rlm solve; a request's\n"
    "                          options.strategy wins\n"
    "  -v, --verbose           log every request on stderr\n"
    "      --quiet             no notices on stderr\n"
    "  -h, --help              this help\n"
    "\n"
    "The limits below are every solve's. A request's \"options\" may change\n"
    "max_depth and max_iterations, and lower the budgets, never raise them (the\n"
    "smaller holds): tokens (--max-total-tokens), cost (--max-cost), calls\n"
    "(--max-calls), sub_calls (--max-sub-calls) and time (--time-limit).\n"
    "\n"
    "%s"
    "\n"
    "%s"
    "\n"
    "%s"
    "\n"
    "Exit status: 0 after a shutdown on SIGTERM or SIGINT (one or two), 1 a\n"
    "failure to start, 2 bad usage (including another address than loopback\n"
    "without --api-key).\n"
    "\n"
    "Examples:\n"
    "  rlm serve --port 8080 --root ~/docs\n"
    "  RLM_API_KEY=s3cret rlm serve --host 0.0.0.0 --model gpt-5 --sub-model gpt-5-mini\n"
    "  curl -s localhost:8080/v1/solve -d '{\"question\": \"Who won?\", \"context\": \"...\"}'\n";

enum {
	OPT_HOST = OPT_MODEL_LAST + 1,
	OPT_PORT,
	OPT_MODEL_API_KEY,
	OPT_MAX_SOLVES,
	OPT_MAX_BODY,
	OPT_REQUEST_TIMEOUT,
	OPT_ROOT,
	OPT_GRACE,
	OPT_CORPUS_CACHE,
	OPT_KEEP_RUNS,
	OPT_KEEP_RUNS_BYTES,
	OPT_HEAD_TIMEOUT,
	OPT_BODY_TIMEOUT,
	OPT_MAX_CONNECTIONS,
	OPT_MAX_PER_ADDRESS,
	OPT_SESSION_IDLE,
	OPT_MAX_SESSIONS,
	OPT_MAX_SESSION_MEMORY,
	OPT_CACHE,
	OPT_NO_CACHE,
	OPT_QUIET,
};

/* ---- the command ---- */

static bool loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (strcmp(host, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

struct serve_args {
	struct svc_cfg cfg;	/* the service's: models, solve options,
				 * store, roots, limits */
	const char *host;	/* --host */
	long port;		/* --port; 0: the kernel picks */
	const char *api_key;	/* --api-key or RLM_API_KEY: the server's */
	size_t max_body;	/* --max-body */
	double request_timeout; /* --request-timeout, seconds */
	double grace;		/* --shutdown-grace, seconds */
	int head_timeout;	/* --head-timeout, seconds */
	int body_timeout;	/* --body-timeout, seconds */
	int max_connections;	/* --max-connections */
	int max_per_address;	/* --max-per-address */
	const char **roots;	/* --root, NULL-terminated; owned array,
				 * borrowed strings (cfg.roots points here) */
	size_t n_roots;
	bool verbose; /* --verbose */
};

static const struct option longopts[] = {
    {"host", required_argument, NULL, OPT_HOST},
    {"port", required_argument, NULL, OPT_PORT},
    {"model-api-key", required_argument, NULL, OPT_MODEL_API_KEY},
    {"max-solves", required_argument, NULL, OPT_MAX_SOLVES},
    {"max-body", required_argument, NULL, OPT_MAX_BODY},
    {"request-timeout", required_argument, NULL, OPT_REQUEST_TIMEOUT},
    {"root", required_argument, NULL, OPT_ROOT},
    {"shutdown-grace", required_argument, NULL, OPT_GRACE},
    {"corpus-cache", required_argument, NULL, OPT_CORPUS_CACHE},
    {"keep-runs", required_argument, NULL, OPT_KEEP_RUNS},
    {"keep-runs-bytes", required_argument, NULL, OPT_KEEP_RUNS_BYTES},
    {"head-timeout", required_argument, NULL, OPT_HEAD_TIMEOUT},
    {"body-timeout", required_argument, NULL, OPT_BODY_TIMEOUT},
    {"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
    {"max-per-address", required_argument, NULL, OPT_MAX_PER_ADDRESS},
    {"session-idle-timeout", required_argument, NULL, OPT_SESSION_IDLE},
    {"max-sessions", required_argument, NULL, OPT_MAX_SESSIONS},
    {"max-session-memory", required_argument, NULL, OPT_MAX_SESSION_MEMORY},
    {"cache", required_argument, NULL, OPT_CACHE},
    {"no-cache", no_argument, NULL, OPT_NO_CACHE},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    MODEL_LONGOPTS,
    SANDBOX_LONGOPTS,
    SOLVE_LONGOPTS,
    {NULL, 0, NULL, 0},
};

static const struct cli_num serve_nums[] = {
    {OPT_PORT, "port", CLI_LONG, 0, 65535, NULL, offsetof(struct serve_args, port)},
    {OPT_MAX_SOLVES, "max-solves", CLI_INT, 1, 100000, NULL,
     offsetof(struct serve_args, cfg.max_solves)},
    {OPT_MAX_BODY, "max-body", CLI_SIZE, 1024, (double)((uint64_t)1 << 40),
     "want a size of at least 1K, such as 64M", offsetof(struct serve_args, max_body)},
    {OPT_REQUEST_TIMEOUT, "request-timeout", CLI_DOUBLE, 0.001, 1e7, "want seconds > 0",
     offsetof(struct serve_args, request_timeout)},
    {OPT_GRACE, "shutdown-grace", CLI_DOUBLE, 0, 1e7, "want seconds >= 0",
     offsetof(struct serve_args, grace)},
    {OPT_CORPUS_CACHE, "corpus-cache", CLI_SIZE, 0, (double)((uint64_t)1 << 40),
     "want a size such as 256M (0: keep no unused context)",
     offsetof(struct serve_args, cfg.corpus_cache)},
    {OPT_KEEP_RUNS, "keep-runs", CLI_INT, 1, 1000000, NULL,
     offsetof(struct serve_args, cfg.keep_runs)},
    {OPT_KEEP_RUNS_BYTES, "keep-runs-bytes", CLI_SIZE, 65536, (double)((uint64_t)1 << 40),
     "want a size of at least 64K, such as 256M", offsetof(struct serve_args, cfg.keep_runs_bytes)},
    {OPT_HEAD_TIMEOUT, "head-timeout", CLI_INT, 1, 3600, "want whole seconds 1..3600",
     offsetof(struct serve_args, head_timeout)},
    {OPT_BODY_TIMEOUT, "body-timeout", CLI_INT, 1, 86400, "want whole seconds 1..86400",
     offsetof(struct serve_args, body_timeout)},
    {OPT_MAX_CONNECTIONS, "max-connections", CLI_INT, 2, 65536, NULL,
     offsetof(struct serve_args, max_connections)},
    {OPT_MAX_PER_ADDRESS, "max-per-address", CLI_INT, 1, 65536, NULL,
     offsetof(struct serve_args, max_per_address)},
    {OPT_SESSION_IDLE, "session-idle-timeout", CLI_DOUBLE, 0.1, 1e7, "want seconds >= 0.1",
     offsetof(struct serve_args, cfg.session_idle_s)},
    {OPT_MAX_SESSIONS, "max-sessions", CLI_INT, 1, 100000, NULL,
     offsetof(struct serve_args, cfg.max_sessions)},
    {OPT_MAX_SESSION_MEMORY, "max-session-memory", CLI_SIZE, 1 << 20,
     (double)((uint64_t)1 << 44), "want a size of at least 1M, such as 4G",
     offsetof(struct serve_args, cfg.max_session_memory)},
};

/* Take option opt of serve's own (not numeric, nor a model, sandbox or
 * solve option). Returns 0, 1 (--help printed) or 2 (said why). */
static int take_opt(struct serve_args *a, int opt, char **argv)
{
	switch (opt) {
	case OPT_HOST:
		if (!*optarg)
			return log_fail(2, "bad value '' for --host: want an address");
		a->host = optarg;
		return 0;
	case OPT_MODEL_API_KEY:
		a->cfg.mo.api_key = optarg;
		return 0;
	case OPT_ROOT:
		if (access(optarg, R_OK | X_OK))
			return log_fail(2, "cannot use --root '%s': %s", optarg, strerror(errno));
		a->roots = xrealloc(a->roots, (a->n_roots + 2) * sizeof(*a->roots));
		a->roots[a->n_roots++] = optarg;
		a->roots[a->n_roots] = NULL;
		return 0;
	case OPT_CACHE:
		a->cfg.cache_path = optarg;
		return 0;
	case OPT_NO_CACHE:
		a->cfg.no_cache = true;
		return 0;
	case OPT_QUIET:
		a->cfg.mo.quiet = true;
		return 0;
	case 'v':
		a->verbose = true;
		return 0;
	case 'h':
		printf(usage, cli_solve_opts_help, cli_model_opts_help, cli_sandbox_opts_help);
		return 1;
	case ':':
		return log_fail(2, "option '%s' needs a value", argv[optind - 1]);
	default:
		return log_fail(2, "unknown option '%s' (see rlm serve --help)", argv[optind - 1]);
	}
}

/* What the options say together: the server's API key (RLM_API_KEY when
 * --api-key is not given; needed off loopback), the store, the roots.
 * Returns 0 or 2 (said why). */
static int check_args(struct serve_args *a)
{
	const char *no_cache_env = getenv("RLM_NO_CACHE");
	if (!a->api_key && getenv("RLM_API_KEY") && *getenv("RLM_API_KEY"))
		a->api_key = getenv("RLM_API_KEY");
	if (a->api_key && !*a->api_key)
		return log_fail(2, "the API key is empty");
	if (!a->api_key && !loopback(a->host))
		return log_fail(2,
				"refusing to listen on '%s' without an API key: pass --api-key "
				"KEY (or set RLM_API_KEY), or listen on 127.0.0.1",
				a->host);
	if (!a->cfg.no_cache && !a->cfg.cache_path && no_cache_env &&
	    strcmp(no_cache_env, "1") == 0)
		a->cfg.no_cache = true;
	a->cfg.roots = a->roots;
	return 0;
}

/* Parse the command line into a (its defaults set): the environment, then
 * the options in order (the first bad one is the error). Returns 0, 1
 * (--help printed) or 2 (said why). */
static int parse_args(int argc, char **argv, struct serve_args *a)
{
	int opt, rc;
	cli_model_opts_init(&a->cfg.mo);
	if (cli_solve_opts_env(&a->cfg.base))
		return 2;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":s:vh", longopts, NULL)) != -1) {
		int taken = 0;
		/* --api-key is the server's here; the provider's is --model-api-key. */
		if (opt == OPT_API_KEY) {
			a->api_key = optarg;
			continue;
		}
		taken = cli_model_opts_take(&a->cfg.mo, opt, optarg);
		if (!taken)
			taken = cli_sandbox_opts_take(&a->cfg.base.sandbox, opt, optarg);
		if (!taken)
			taken = cli_solve_opts_take(&a->cfg.base, opt, optarg);
		if (!taken)
			taken = cli_num_take(serve_nums, ARRAY_SIZE(serve_nums), a, opt, optarg);
		if (taken == 2)
			return 2;
		if (!taken && (rc = take_opt(a, opt, argv)))
			return rc;
	}
	if (optind < argc)
		return log_fail(2, "unexpected argument '%s' (see rlm serve --help)", argv[optind]);
	return check_args(a);
}

/* Wait for a signal of set until deadline_ns (time_now_ns clock) or, with
 * done, until done(arg) is true (checked every 20 ms). Returns the signal,
 * or 0. */
static int wait_signal(const sigset_t *set, int64_t deadline_ns, bool (*done)(void *), void *arg)
{
	for (;;) {
		int64_t left = deadline_ns - time_now_ns();
		struct timespec ts = {0, 20000000};
		int sig;
		if ((done && done(arg)) || left <= 0)
			return 0;
		if (left < ts.tv_nsec)
			ts.tv_nsec = (long)left;
		sig = sigtimedwait(set, NULL, &ts);
		if (sig > 0)
			return sig;
	}
}

static bool server_idle(void *arg)
{
	return serve_server_idle(arg);
}

static bool server_quiet(void *arg)
{
	return serve_server_quiet(arg);
}

/* Serve until SIGINT or SIGTERM, then shut down gracefully: a second
 * signal cuts the grace short. sigs is blocked in every thread. */
static int serve(struct serve_server *sv, const struct serve_args *a, int fd, int port,
		 const sigset_t *sigs)
{
	int sig = 0, cancelled;
	bool v6 = strchr(a->host, ':') != NULL;
	if (serve_server_listen(sv, fd))
		return log_fail(1, "cannot start the HTTP server on %s:%d", a->host, port);
	printf("rlm serve: listening on http://%s%s%s:%d\n", v6 ? "[" : "", a->host, v6 ? "]" : "",
	       port);
	fflush(stdout);
	while (sigwait(sigs, &sig) != 0)
		;
	fprintf(stderr,
		"rlm serve: %s: stopping (running solves have %.0f s to end; a second signal "
		"cancels them now)\n",
		strsignal(sig), a->grace);
	serve_server_stopping(sv);
	sig = wait_signal(sigs, time_now_ns() + (int64_t)(a->grace * 1e9), server_idle, sv);
	if (sig)
		fprintf(stderr, "rlm serve: %s again: cancelling the running solves now\n",
			strsignal(sig));
	cancelled = serve_server_cancel(sv);
	if (cancelled)
		fprintf(stderr, "rlm serve: cancelled %d solve%s (their runs stay in the store)\n",
			cancelled, cancelled == 1 ? "" : "s");
	/* Answer what is pending (waiting requests and streams see their runs
	 * end) for up to 10 s, or until one more signal. */
	if (wait_signal(sigs, time_now_ns() + 10 * 1000000000LL, server_quiet, sv))
		fprintf(stderr, "rlm serve: closing the connections now\n");
	return 0;
}

int cli_serve(int argc, char **argv)
{
	struct serve_args a;
	struct serve_server *sv = NULL;
	struct serve_http_cfg hc;
	struct rlm_err err = {0, ""};
	char msg[512];
	sigset_t sigs, old;
	bool blocked = false;
	int rc, fd, port = 0, status;
	memset(&a, 0, sizeof(a));
	a.host = "127.0.0.1";
	a.port = DEFAULT_PORT;
	a.max_body = 64u << 20;
	a.request_timeout = 600;
	a.grace = 30;
	a.cfg.corpus_cache = SVC_CORPUS_CACHE;
	a.cfg.base.run_note_json = "{\"via\":\"rlm serve\"}";
	if ((status = parse_args(argc, argv, &a))) {
		if (status == 1) /* --help */
			status = 0;
		goto out;
	}
	/* A sandbox the worker would refuse is a usage error, found now. */
	if (a.cfg.base.strategy == RLM_REPL && repl_sandbox_check(&a.cfg.base.sandbox, &err)) {
		status = log_fail(2, "%s", err.msg);
		goto out;
	}
	/* SIGINT and SIGTERM are taken by sigwait() in this thread only:
	 * blocked before the service starts its pool's threads, so that every
	 * thread (the pool's, the daemon's, the solves') inherits the mask
	 * and none can be killed by one (REPL workers clear it). */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, &old);
	blocked = true;
	hc = (struct serve_http_cfg){
	    .api_key = a.api_key,
	    .max_body = a.max_body,
	    .request_timeout_ns = (int64_t)(a.request_timeout * 1e9),
	    .max_connections = (unsigned)a.max_connections,
	    .max_per_address = (unsigned)a.max_per_address,
	    .head_timeout_s = (unsigned)a.head_timeout,
	    .body_timeout_s = (unsigned)a.body_timeout,
	    .verbose = a.verbose,
	};
	if ((rc = serve_server_new(&a.cfg, &hc, &sv, &err))) {
		status = log_fail(rc == RLM_EINVAL ? 2 : 1, "%s", err.msg);
		goto out;
	}
	fd = net_listen(a.host, a.port, &port, msg, sizeof(msg));
	if (fd < 0) {
		status = log_fail(1, "%s", msg);
		goto out;
	}
	status = serve(sv, &a, fd, port, &sigs);
out:
	serve_server_free(sv);
	cli_tools_opts_release(&a.cfg.base);
	free(a.roots);
	if (blocked)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	return status;
}
