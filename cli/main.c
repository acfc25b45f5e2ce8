/* SPDX-License-Identifier: MIT */
/* cli/main.c -- the rlm command: dispatch to a subcommand. */
#include "cli.h"
#include "../common/common.h"
#include "../sim/sim.h"

#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
	"usage: rlm COMMAND [options]\n"
	"\n"
	"rlm answers questions over contexts far larger than a model's window: the\n"
	"context lives in a sandboxed Python REPL that the model programs, calling\n"
	"sub-models on pieces of it in parallel.\n"
	"\n"
	"Commands:\n"
	"  solve       answer a question over a file, a directory, a JSONL, or stdin\n"
	"  chat        ask a context question after question on one session (its REPL\n"
	"              keeps what the model built)\n"
	"  repl        run Python cells in the REPL worker a model programs\n"
	"  doctor      show the REPL sandbox's layers on this machine and test them live\n"
	"  serve       serve solves over HTTP: a solve API with live events, and an\n"
	"              OpenAI-compatible chat completions endpoint\n"
	"  sim-serve   serve the offline simulator model over HTTP (OpenAI-compatible)\n"
	"  bench gen   generate benchmark datasets (S-NIAH, OOLONG, OOLONG-Pairs, browse)\n"
	"  bench run   run datasets through strategies in parallel, score, and report\n"
	"  bench perf  measure the controller: pool fan-out efficiency, CPU per call\n"
	"  runs        list, show and export recorded solves (JSONL trajectory, HTML)\n"
	"  cache       the store's statistics, pruning and clearing\n"
	"  skills      the skills in the store: versioned Python functions model code\n"
	"              loads (list, show, add FILE.py, export, import, rm)\n"
	"  mcp         an MCP server (stdio) for agents: tools solve, load_corpus, ask\n"
	"\n"
	"  rlm COMMAND --help    options of a command\n"
	"  rlm --version         the version\n"
	"\n"
	"With no model configured rlm uses its built-in offline simulator 'sim', so\n"
	"everything runs without a network. See README.md for real providers.\n";

int cli_bench(int argc, char **argv)
{
	static const char bench_usage[] =
		"usage: rlm bench SUBCOMMAND [options]\n"
		"\n"
		"  gen SUITE   generate a dataset (rlm bench gen --help)\n"
		"  run DATASET.jsonl ...\n"
		"              run, score and report a benchmark (rlm bench run --help)\n"
		"  perf        run the controller performance suite (rlm bench perf --help)\n";
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(bench_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "gen") == 0)
		return cli_bench_gen(argc - 1, argv + 1);
	if (strcmp(argv[1], "perf") == 0)
		return cli_bench_perf(argc - 1, argv + 1);
	if (strcmp(argv[1], "run") == 0)
		return cli_bench_run(argc - 1, argv + 1);
	return log_fail(2, "unknown bench subcommand '%s' (known: gen, run, perf)", argv[1]);
}

int main(int argc, char **argv)
{
	/* Buffers of 256 KB and more (REPL frames, contexts handed to child
	 * RLMs) go straight to mmap and back to the system when freed. By
	 * default glibc raises that threshold to the size of the largest
	 * such buffer freed, up to 32 MB, and from then on keeps the memory
	 * of a 10M-token solve's multi-MB frames in its arenas. */
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} cmds[] = {
		{"solve", cli_solve},
		{"chat", cli_chat},
		{"repl", cli_repl},
		{"doctor", cli_doctor},
		{"sim-serve", cli_sim_serve},
		{"serve", cli_serve},
		{"bench", cli_bench},
		{"cache", cli_cache},
		{"runs", cli_runs},
		{"mcp", cli_mcp},
		{"skills", cli_skills},
	};
	signal(SIGPIPE, SIG_IGN);
	/* The offline simulator, as the provider "sim" models are set up
	 * with (rlm_models_init finds it by name). */
	sim_provider_register();
	if (argc < 2) {
		fputs(usage, stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("rlm %s (commit %s)\n", RLM_VERSION, rlm_git_commit);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			return cmds[i].fn(argc - 1, argv + 1);
	return log_fail(2, "unknown command '%s' (see rlm --help)", argv[1]);
}
