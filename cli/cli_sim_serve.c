/* SPDX-License-Identifier: MIT */
/* cli/cli_sim_serve.c -- `rlm sim-serve`: the command line, the ready file
 * and the signal loop around the simulator's HTTP server (sim/sim_serve.c).
 * SIGINT and SIGTERM are blocked before the server's threads are made, so
 * only sigwait() in the main thread sees them. */
#include "cli.h"
#include "../common/common.h"
#include "../common/net.h"
#include "../sim/sim.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_PORT 8089

static const char usage[] =
    "usage: rlm sim-serve [--host ADDR] [--port N] [--sim SPEC] [--ready-file PATH] [--quiet]\n"
    "\n"
    "Serve the offline simulator model over HTTP as an OpenAI-compatible chat\n"
    "completions server, so the HTTP path, other RLM implementations and benchmarks\n"
    "can run against it with no network. Stop it with SIGINT or SIGTERM.\n"
    "\n"
    "Routes: POST /v1/chat/completions (also /chat/completions; \"stream\": true gives\n"
    "server-sent events), GET /v1/models, GET /healthz.\n"
    "\n"
    "Options:\n"
    "  --host ADDR        address to listen on (127.0.0.1)\n"
    "  --port N           port to listen on; 0 picks a free one (8089)\n"
    "  --sim SPEC         timing and faults as KEY=VALUE,... (env RLM_SIM; keys below)\n"
    "  --ready-file PATH  write the bound port number to PATH once listening\n"
    "  --quiet            do not print the \"listening on\" line\n"
    "  -h, --help         show this help\n"
    "\n"
    "SPEC keys (durations take an ms or s suffix, ms by default):\n"
    "  ttft=D             time to first token, from the request's arrival (0)\n"
    "  tps=N              output tokens per second after the first; 0: instant (0)\n"
    "  429=P, 500=P       rate of 429 (with Retry-After) and 500 replies, in [0,1]\n"
    "  reset=P            rate of connections reset without a reply\n"
    "  malformed=P        rate of 200 replies whose JSON is cut off\n"
    "  slow=P             rate of replies slow_ms later than modelled\n"
    "  truncate=P         rate of bodies that stop half way (the connection closes)\n"
    "                     the fault rates add up to at most 1\n"
    "  faults=N           inject at most N faults in the server's life (-1: no cap)\n"
    "  retry_after=D      Retry-After of a 429, seconds by default, sent rounded up (1)\n"
    "  retry_after_ms=D   also send retry-after-ms: D when > 0 (0)\n"
    "  slow_ms=D          extra delay of a slow reply (2000)\n"
    "  seed=N             seed of the fault generator (1)\n"
    "\n"
    "Example: rlm sim-serve --port 8089 --sim ttft=100ms,tps=50,429=0.05,seed=7\n";

/* Write the port to path atomically (a reader never sees half a number). */
static int write_ready(const char *path, int port)
{
	char *tmp = xasprintf("%s.%d.tmp", path, (int)getpid()), line[16];
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), rc = 0;
	snprintf(line, sizeof(line), "%d\n", port);
	if (fd < 0 || file_write_all(fd, line, strlen(line)) || close(fd) || rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	free(tmp);
	return rc;
}

int cli_sim_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"host", required_argument, NULL, 'H'},
	    {"port", required_argument, NULL, 'p'},
	    {"sim", required_argument, NULL, 's'},
	    {"ready-file", required_argument, NULL, 'r'},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct sim_cfg cfg;
	struct sim_server *sv;
	struct rlm_err err = {0, ""};
	const char *host = "127.0.0.1", *spec = getenv("RLM_SIM"), *ready = NULL;
	long port = DEFAULT_PORT;
	bool quiet = false;
	int opt, fd, bound = 0, sig = 0, status = 0;
	sigset_t block, old;
	char msg[512];

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":hq", longopts, NULL)) != -1) {
		switch (opt) {
		case 'H':
			if (!*optarg)
				return log_fail(2, "bad value '' for --host: want an address");
			host = optarg;
			break;
		case 'p':
			if (text_parse_int(optarg, 0, 65535, &port))
				return log_fail(2, "bad value '%s' for --port: want 0..65535",
						optarg);
			break;
		case 's':
			spec = optarg;
			break;
		case 'r':
			ready = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case ':':
			return log_fail(2, "option '%s' needs a value", argv[optind - 1]);
		default:
			return log_fail(2, "unknown option '%s' (see rlm sim-serve --help)",
					argv[optind - 1]);
		}
	}
	if (optind < argc)
		return log_fail(2, "unexpected argument '%s' (see rlm sim-serve --help)",
				argv[optind]);
	sim_cfg_default(&cfg);
	if (spec && sim_cfg_parse(spec, &cfg, &err))
		return log_fail(2, "%s", err.msg);

	fd = net_listen(host, port, &bound, msg, sizeof(msg));
	if (fd < 0)
		return log_fail(1, "%s", msg);

	/* The server's threads inherit the mask: only sigwait() sees the signals. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	sv = sim_server_start(&cfg, fd, &err);
	if (!sv) {
		status = log_fail(1, "%s on %s:%d", err.msg, host, bound);
		goto out;
	}
	if (ready && (status = write_ready(ready, bound))) {
		status =
		    log_fail(1, "cannot write the ready file '%s': %s", ready, strerror(-status));
		goto stop;
	}
	if (!quiet) {
		bool v6 = strchr(host, ':') != NULL;
		fprintf(stderr, "rlm sim-serve: listening on http://%s%s%s:%d/v1\n", v6 ? "[" : "",
			host, v6 ? "]" : "", bound);
	}
	while (sigwait(&block, &sig) != 0)
		;
stop:
	sim_server_stop(sv);
out:
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return status;
}
