/* SPDX-License-Identifier: MIT */
/* cli/cli.h -- the commands of the rlm binary. Each takes the arguments
 * after its name (argv[0] is the command name) and returns the process exit
 * status: 0 success, 1 failure, 2 bad usage. Errors go to stderr as
 * "rlm: error: ..." lines. */
#ifndef RLM_CLI_H
#define RLM_CLI_H

#include <stddef.h>
#include <stdint.h>

int cmd_solve(int argc, char **argv);
int cmd_repl(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_sim_serve(int argc, char **argv); /* cli/cli_sim_serve.c */
int cmd_serve(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_bench_gen(int argc, char **argv);
int cmd_bench_perf(int argc, char **argv);
int cmd_bench_run(int argc, char **argv); /* cli/cli_bench_run.c */
int cmd_mcp(int argc, char **argv);	  /* cli/cli_mcp.c */

/* Print "rlm: error: <msg>" and return 1 (or 2 for usage errors). */
int cli_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* True when --help or -h is among the arguments. */
int cli_wants_help(int argc, char **argv);

#endif
