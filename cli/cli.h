/* SPDX-License-Identifier: MIT */
/* cli/cli.h -- the commands of the rlm binary. Each takes the arguments
 * after its name (argv[0] is the command name) and returns the process exit
 * status: 0 success, 1 failure, 2 bad usage. Errors go to stderr as
 * "rlm: error: ..." lines. */
#ifndef RLM_CLI_H
#define RLM_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "../common/common.h" /* log_fail: "rlm: error: ..." and an exit status */

int cli_solve(int argc, char **argv);
int cli_repl(int argc, char **argv);
int cli_doctor(int argc, char **argv);
int cli_sim_serve(int argc, char **argv); /* cli/cli_sim_serve.c */
int cli_serve(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_cache(int argc, char **argv);
int cli_runs(int argc, char **argv);
int cli_bench_gen(int argc, char **argv);
int cli_bench_perf(int argc, char **argv);
int cli_bench_run(int argc, char **argv); /* cli/cli_bench_run.c */
int cli_mcp(int argc, char **argv);	  /* cli/cli_mcp.c */

/* A numeric option of a command, as a row of the command's table: what
 * parses its value, the range it must lie in, and the field of the
 * command's argument struct it sets. A bad value is said the one way all
 * the commands say it: "bad value 'ARG' for --NAME: WANT". */
enum cli_num_kind {
	CLI_LONG,   /* text_parse_int: a decimal integer, into a long */
	CLI_INT,    /* text_parse_int, into an int */
	CLI_DOUBLE, /* text_parse_double: a number, into a double */
	CLI_SECS,   /* text_parse_double: seconds, into an int64_t of nanoseconds */
	CLI_COUNT,  /* text_parse_count: a count with k/M/G suffixes, into a size_t */
	CLI_SIZE,   /* text_parse_size: a size with K/M/G/T (powers of 1024), into a size_t */
};

struct cli_num {
	int opt;		/* the option's getopt value */
	const char *name;	/* its long name, without the dashes */
	enum cli_num_kind kind; /* how its value parses; the field's type */
	double min, max;	/* the range the value must lie in */
	const char *want;	/* what the message says is wanted; NULL:
				 * "want MIN..MAX" */
	size_t off;		/* offsetof the field in the argument struct */
};

/* When opt is the option of a row of t[0..n), parse arg as the row says
 * into its field of args. Returns 0 (opt is in no row), 1 (taken) or 2
 * after saying the value is bad (the field is left as it was). */
int cli_num_take(const struct cli_num *t, size_t n, void *args, int opt, const char *arg);
/* True when --help or -h is among the arguments. */
int cli_wants_help(int argc, char **argv);

#endif
