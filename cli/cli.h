/* SPDX-License-Identifier: MIT */
/* cli/cli.h -- the commands of the rlm binary. Each takes the arguments
 * after its name (argv[0] is the command name) and returns the process exit
 * status: 0 success, 1 failure, 2 bad usage. Errors go to stderr as
 * "rlm: error: ..." lines. */
#ifndef RLM_CLI_H
#define RLM_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/common.h" /* log_fail: "rlm: error: ..." and an exit status */

int cli_solve(int argc, char **argv);
int cli_chat(int argc, char **argv);	  /* cli/cli_chat.c */
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
int cli_skills(int argc, char **argv);	  /* cli/cli_skills.c */

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

/* ---- text from outside on the operator's terminal ----
 * A model's reply, the output of model code, an answer, a question that
 * came over HTTP, a file name of the context: any of them can hold bytes
 * a terminal acts on (OSC 52 writes the clipboard, OSC 0 the title, CSI
 * clears the screen). Written to a terminal they are shown escaped, as
 * text_term_escape says ("\x1b]52;..."); to a pipe or a file, or with
 * --raw-output, they go as they are. Main thread and solve callbacks
 * alike may call these; each call is one stdio write. */

/* --raw-output: the bytes as they are even to a terminal. Set while the
 * command line is parsed, before anything is written. */
extern bool cli_raw_output;
/* Is text written to f escaped: f is a terminal and not --raw-output? */
bool cli_term_escapes(FILE *f);
/* Write s[0..n) to f, escaped when cli_term_escapes(f) (flags: 0, or
 * TEXT_TERM_JSON for JSON text). */
void cli_term_write(FILE *f, const char *s, size_t n, int flags);
/* fprintf(f, fmt, ...), the whole of it escaped when cli_term_escapes(f):
 * a format holds no control but its newlines. */
void cli_term_printf(FILE *f, const char *fmt, ...) RLM_PRINTF(2, 3);
/* The help line of --raw-output, for the commands that take it. */
#define CLI_RAW_OUTPUT_HELP                                                                        \
	"      --raw-output        write model and REPL text to a terminal as it is; by\n"         \
	"                          default a terminal gets its control characters (ESC,\n"         \
	"                          CR, C1, ...) shown escaped, as \\x1b, so that output\n"         \
	"                          cannot retitle the window, write the clipboard or\n"            \
	"                          clear the screen (a pipe or a file gets the bytes)\n"

#endif
