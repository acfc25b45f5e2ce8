/* SPDX-License-Identifier: MIT */
/* cli/cli_repl.c -- `rlm repl`: the REPL worker a model programs, driven by
 * hand: cells from stdin, each result printed exactly as a model gets it. */
#include "cli.h"
#include "cliopt.h"
#include "../rlm/rlm.h"
#include "../rlm/solve_int.h"
#include "../repl/repl.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
	"usage: rlm repl --context PATH [options]\n"
	"\n"
	"Start the REPL worker the root model programs, with the context loaded as\n"
	"`context`, and run Python cells from stdin. Each result is printed exactly as\n"
	"the model would see it (cut to the output limit, tracebacks, restart notices).\n"
	"llm_query and llm_query_batched call the sub-model for real (the offline\n"
	"simulator unless a model is configured), and rlm_query and rlm_query_batched\n"
	"run child RLMs (the root model, with a REPL of their own) as in a solve;\n"
	"answer, FINAL and FINAL_VAR work as in a solve.\n"
	"\n"
	"At a terminal a blank line ends a cell. From a pipe or file, cells are\n"
	"separated by lines reading '# %%%%', and the end of input ends the last one.\n"
	"\n"
	"  -c, --context PATH      a text file, a directory, a JSONL file, or - (stdin\n"
	"                          cannot then carry the cells)\n"
	"      --format KIND       auto (default), text, dir, jsonl\n"
	"      --output-limit N    characters of output shown (20000)\n"
	"      --exec-timeout SECS running time of one cell, sub-calls not counted (60)\n"
	"      --python PATH       the worker's interpreter (/usr/bin/python3)\n"
	"      --max-depth N       levels of RLMs, this REPL's included, 1..16 (env\n"
	"                          RLM_MAX_DEPTH; 2); 1: rlm_query is a plain sub-call\n"
	"      --quiet             no prompts or notices on stderr (at a terminal they\n"
	"                          include the worker's sandbox line)\n"
	"  -h, --help              this help\n"
	"\n"
	"%s"
	"\n"
	"%s"
	"\n"
	"Exit status: 0 at the end of input, 1 when the worker cannot be started, 2 bad\n"
	"usage (a bad option or RLM_SANDBOX_DISABLE, a mandatory sandbox layer disabled\n"
	"without --unsafe-no-sandbox).\n"
	"\n"
	"Example:\n"
	"  printf 'print(len(context))\\n# %%%%\\nllm_query(\"Say hi\")\\n' | rlm repl -c notes/\n";

enum {
	OPT_FORMAT = OPT_MODEL_LAST + 1,
	OPT_OUTPUT_LIMIT,
	OPT_EXEC_TIMEOUT,
	OPT_PYTHON,
	OPT_QUIET,
	OPT_MAX_DEPTH,
};

/* Read the next cell into b; false at the end of input with nothing read. */
static bool read_cell(FILE *in, bool tty, bool quiet, struct buf *b)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	bool any = false;
	buf_reset(b);
	for (;;) {
		if (tty && !quiet)
			fputs(any ? "... " : ">>> ", stderr);
		if ((n = getline(&line, &cap, in)) < 0)
			break;
		if (tty && (n == 1 && line[0] == '\n')) {
			if (any)
				break;
			continue;
		}
		if (!tty && strncmp(line, "# %%", 4) == 0 &&
		    strspn(line + 4, " \t\r\n") == (size_t)n - 4)
			break;
		buf_append(b, line, (size_t)n);
		any = true;
	}
	if (n < 0 && tty && !quiet)
		fputc('\n', stderr);
	free(line);
	return any || n >= 0;
}

int cmd_repl(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"context", required_argument, NULL, 'c'},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"output-limit", required_argument, NULL, OPT_OUTPUT_LIMIT},
		{"exec-timeout", required_argument, NULL, OPT_EXEC_TIMEOUT},
		{"python", required_argument, NULL, OPT_PYTHON},
		{"quiet", no_argument, NULL, OPT_QUIET},
		{"max-depth", required_argument, NULL, OPT_MAX_DEPTH},
		{"help", no_argument, NULL, 'h'},
		MODEL_LONGOPTS,
		SANDBOX_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	struct rlm_models_cfg mo;
	struct rlm_models ms;
	struct corpus_opts co = {0};
	struct corpus *corpus = NULL;
	struct repl_cfg cfg = {0};
	struct repl *r = NULL;
	struct repl_sandbox_status sb;
	struct rlm_opts ro = {0};
	struct rlm_result counts = {0};
	struct rlm_tree tree;
	struct calls calls;
	size_t *off = NULL, *lens = NULL;
	struct rlm_err err = {0, ""};
	struct buf cell = BUF_INIT;
	const char *context = NULL, *v;
	uint64_t count;
	double secs;
	long num;
	bool tty;
	int opt, rc, status = 0;

	model_opts_init(&mo);
	if ((v = getenv("RLM_MAX_DEPTH")) && *v) {
		if (parse_int(v, 1, 16, &num))
			return cli_fail(2, "bad value '%s' for RLM_MAX_DEPTH: want 1..16", v);
		ro.max_depth = (int)num;
	}
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":c:h", longopts, NULL)) != -1) {
		int taken = model_opts_take(&mo, opt, optarg);
		if (!taken)
			taken = sandbox_opts_take(&cfg.sandbox, opt, optarg);
		if (taken == 2)
			return 2;
		if (taken)
			continue;
		switch (opt) {
		case 'c': context = optarg; break;
		case OPT_FORMAT:
			if (corpus_kind_parse(optarg, &co.kind))
				return cli_fail(2, "unknown --format '%s' (known: auto, text, dir, jsonl)",
						optarg);
			break;
		case OPT_OUTPUT_LIMIT:
			if (parse_count(optarg, &count) || count < 100 || count > (1u << 26))
				return cli_fail(2, "bad value '%s' for --output-limit: want 100..64M "
						   "characters", optarg);
			cfg.output_limit = (size_t)count;
			break;
		case OPT_EXEC_TIMEOUT:
			if (parse_double(optarg, 0.001, 1e7, &secs))
				return cli_fail(2, "bad value '%s' for --exec-timeout: want seconds > 0",
						optarg);
			cfg.exec_timeout_ns = (int64_t)(secs * 1e9);
			break;
		case OPT_PYTHON:
			if (access(optarg, X_OK))
				return cli_fail(2, "--python '%s' is not an executable file", optarg);
			cfg.python = optarg;
			break;
		case OPT_QUIET: mo.quiet = true; break;
		case OPT_MAX_DEPTH:
			if (parse_int(optarg, 1, 16, &num))
				return cli_fail(2, "bad value '%s' for --max-depth: want 1..16", optarg);
			ro.max_depth = (int)num;
			break;
		case 'h': printf(usage, model_opts_help, sandbox_opts_help); return 0;
		case ':': return cli_fail(2, "option '%s' needs a value", argv[optind - 1]);
		default: return cli_fail(2, "unknown option '%s' (see rlm repl --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_fail(2, "unexpected argument '%s' (see rlm repl --help)", argv[optind]);
	if (!context)
		return cli_fail(2, "no context: pass --context PATH (a file, a directory, a JSONL "
				   "file, or -)");
	if (repl_sandbox_check(&cfg.sandbox, &err))
		return cli_fail(2, "%s", err.msg);
	if (strcmp(context, "-") == 0 && co.kind != CORPUS_JSONL)
		co.kind = CORPUS_TEXT;

	co.quiet = mo.quiet;
	if (corpus_load(context, &co, &corpus, &err)) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		return 1;
	}
	if ((rc = rlm_models_init(&ms, &mo, &err))) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		corpus_free(corpus);
		return rc == RLM_EINVAL ? 2 : 1;
	}
	/* Sub-calls go through the solve's own handler, without budgets: the
	 * user is at the keyboard. Child RLMs get this REPL's settings. */
	ro.pool = ms.pool;
	ro.model = ms.model;
	ro.sub_model = ms.sub;
	ro.params = ms.params;
	ro.strategy = RLM_REPL;
	ro.output_limit = cfg.output_limit;
	ro.exec_timeout_ns = cfg.exec_timeout_ns;
	ro.python = cfg.python;
	ro.sandbox = cfg.sandbox;
	tree_init(&tree, &ro, now_ns());
	calls_init(&calls, &ro, &counts, &tree, 0, 0);
	calls.ctx = corpus;
	loop_repl_context(corpus, &cfg.ctx, &off, &lens);
	cfg.on_call = calls_on_call;
	cfg.call_arg = &calls;
	rc = repl_start(&cfg, &r, &err);
	free(off);
	free(lens);
	if (rc) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		status = 1;
		goto out;
	}
	calls.repl = r;
	tty = isatty(0) && strcmp(context, "-") != 0;
	repl_sandbox_status(r, &sb);
	if (sb.unsafe)
		fprintf(stderr, "rlm: WARNING: the REPL worker runs WITHOUT seccomp "
				"(--unsafe-no-sandbox): %s\n", sb.line);
	if (tty && !mo.quiet)
		fprintf(stderr, "rlm repl: `context` is loaded (%zu bytes, %zu document%s); a blank "
				"line runs a cell, Ctrl-D quits\nrlm repl: sandbox: %s\n",
			corpus->len, corpus->n_docs, corpus->n_docs == 1 ? "" : "s", sb.line);
	while (read_cell(stdin, tty, mo.quiet, &cell)) {
		struct repl_result res;
		if (!cell.len)
			continue;
		rc = repl_exec(r, cell.p, cell.len, 0, &res, &err);
		if (rc && rc != RLM_ETIMEOUT && rc != RLM_ECANCEL) {
			fprintf(stderr, "rlm: error: %s\n", err.msg);
			status = 1;
			break;
		}
		fwrite(res.output, 1, res.len, stdout);
		if (res.len && res.output[res.len - 1] != '\n')
			putchar('\n');
		if (res.ready && !mo.quiet)
			fprintf(stderr, "[answer ready: %s]\n", res.answer);
		fflush(stdout);
		repl_result_release(&res);
	}
out:
	buf_release(&cell);
	repl_free(r);
	calls_release(&calls);
	tree_release(&tree);
	rlm_result_release(&counts);
	rlm_models_release(&ms);
	corpus_free(corpus);
	return status;
}
