/* SPDX-License-Identifier: MIT */
/* cli/cli_bench_perf.c -- `rlm bench perf`: its options; the measurements
 * and their table are bench/'s (bench_perf_main). `--child` is the child process
 * a scale row runs: a solve or a corpus load, measured from inside. */
#include "cli.h"
#include "../bench/bench.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

int cli_bench_perf(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"calls", required_argument, NULL, 'n'},
	    {"concurrency", required_argument, NULL, 'c'},
	    {"latency-ms", required_argument, NULL, 'l'},
	    {"json", no_argument, NULL, 'j'},
	    {"quick", no_argument, NULL, 'q'},
	    {"only", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct perf_opts o = {.conc = 64, .execs = 1000, .starts = 20};
	const char *only = NULL;
	bool json = false;
	int opt;
	if (argc >= 2 && strcmp(argv[1], "--child") == 0)
		return bench_perf_scale_child(argc - 1, argv + 1, cli_solve);
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			if (text_parse_int(optarg, 1, 1000000, &o.calls))
				return log_fail(2, "bad value '%s' for --calls", optarg);
			break;
		case 'c':
			if (text_parse_int(optarg, 1, 4096, &o.conc))
				return log_fail(2, "bad value '%s' for --concurrency", optarg);
			break;
		case 'l':
			if (text_parse_int(optarg, 1, 60000, &o.latency_ms))
				return log_fail(2, "bad value '%s' for --latency-ms", optarg);
			break;
		case 'j':
			json = true;
			break;
		case 'q':
			o.quick = true;
			break;
		case 'o':
			only = optarg;
			break;
		case 'h':
			fputs(bench_perf_usage, stdout);
			return 0;
		default:
			return log_fail(2, "unknown option '%s' (see rlm bench perf --help)",
					argv[optind - 1]);
		}
	}
	return bench_perf_main(&o, only, json, stdout);
}
