/* SPDX-License-Identifier: MIT */
/* cli/cli_repl.c -- `rlm repl`: the REPL worker a model programs, driven by
 * hand: cells from stdin, each result printed exactly as a model gets it. */
#include "cli.h"
#include "cliopt.h"
#include "../rlm/rlm.h"
#include "../repl/repl.h"
#include "../corpus/corpus.h"
#include "../store/store.h"

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
	"the model would see it (cut to the output limit, tracebacks, restart notices;\n"
	"at a terminal, control characters shown escaped: see --raw-output).\n"
	"llm_query and llm_query_batched call the sub-model for real (the offline\n"
	"simulator unless a model is configured), and rlm_query and rlm_query_batched\n"
	"run child RLMs (the root model, with a REPL of their own) as in a solve;\n"
	"answer, FINAL and FINAL_VAR work as in a solve. Calls from several Python\n"
	"threads are in flight together. documents[i] names\n"
	"context[i] (its id, path, title, fields) and search(pattern) finds a regular\n"
	"expression over the whole context, with each hit's document, line and offsets.\n"
	"\n"
	"At a terminal a blank line ends a cell. From a pipe or file, cells are\n"
	"separated by lines reading '# %%%%', and the end of input ends the last one.\n"
	"\n"
	"  -c, --context PATH      a text file, a directory, a JSONL, .json, .csv or .tsv\n"
	"                          file, or - (stdin cannot then carry the cells)\n"
	"%s"
	"      --output-limit N    characters of output shown (20000)\n"
	"      --exec-timeout SECS running time of one cell, its threads' included; time\n"
	"                          idly waiting on sub-calls not counted (60)\n"
	"      --python PATH       the worker's interpreter (/usr/bin/python3)\n"
	"      --max-depth N       levels of RLMs, this REPL's included, 1..16 (env\n"
	"                          RLM_MAX_DEPTH; 2); 1: rlm_query is a plain sub-call\n"
	"      --max-nodes N       child RLMs running at once, 1..1024 (env RLM_MAX_NODES;\n"
	"                          8); exact: 1 runs them one at a time (a child waiting\n"
	"                          on its own children lends them its turn)\n"
	"      --setup-code FILE   Python the worker runs before the first cell (and\n"
	"                          again after a restart), as at a solve's root node;\n"
	"                          its output is not shown, an exception exits 1\n"
	"      --sub-setup-code FILE, --sub-system-extra FILE  the worker and system\n"
	"                          prompt of every child RLM, as in a solve\n"
	"      --system-prompt FILE  the child RLMs' system prompt, in place of the\n"
	"                          built-in one, as in a solve\n"
	"      --quiet             no prompts or notices on stderr (at a terminal they\n"
	"                          include the worker's sandbox line)\n"
	CLI_RAW_OUTPUT_HELP
	"  -v, --verbose           name each file of a directory that is skipped or has\n"
	"                          bytes replaced\n"
	"  -h, --help              this help\n"
	"\n"
	"%s"
	"      --cache PATH        the store skills are kept in (env RLM_CACHE; default\n"
	"                          ~/.cache/rlm/rlm.db); nothing else of the REPL is\n"
	"                          recorded\n"
	"      --no-cache          no store: no skills\n"
	"\n"
	"%s"
	"\n"
	"%s"
	"\n"
	"Exit status: 0 at the end of input, 1 when the worker cannot be started, 2 bad\n"
	"usage (a bad option or RLM_SANDBOX_DISABLE, a mandatory sandbox layer disabled\n"
	"without --unsafe-no-sandbox).\n"
	"\n"
	"Examples:\n"
	"  printf 'print(len(context))\\n# %%%%\\nllm_query(\"Say hi\")\\n' | rlm repl -c notes/\n"
	"  echo 'search(\"EPOLLEXCLUSIVE\")[:2]' | rlm repl -c /usr/include\n"
	"  echo 'search_tools(\"add two numbers\")' | rlm repl -c notes/ --mcp-config mcp.json\n"
	"  echo 'print(top_words(context, 5))' | rlm repl -c notes/ --setup-code helpers.py\n";

enum {
	OPT_OUTPUT_LIMIT = OPT_MODEL_LAST + 1,
	OPT_EXEC_TIMEOUT,
	OPT_PYTHON,
	OPT_QUIET,
	OPT_MAX_DEPTH,
	OPT_MAX_NODES,
	OPT_RAW_OUTPUT,
	OPT_CACHE,
	OPT_NO_CACHE,
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

/* What the command line of `rlm repl` says. Strings are borrowed from
 * argv and the environment. */
struct repl_args {
	struct rlm_models_cfg mo;  /* the models; --quiet */
	struct corpus_opts co; /* --format, --encoding, --strict-utf8, --verbose */
	struct rlm_opts ro;    /* the worker's settings (its children's too):
				* --output-limit, --exec-timeout, --python,
				* --max-depth, --max-nodes, the sandbox */
	const char *context;   /* --context */
	const char *cache_path; /* --cache: the skills' store */
	bool no_cache;         /* --no-cache */
};

static const struct option longopts[] = {
	{"context", required_argument, NULL, 'c'},
	{"output-limit", required_argument, NULL, OPT_OUTPUT_LIMIT},
	{"exec-timeout", required_argument, NULL, OPT_EXEC_TIMEOUT},
	{"python", required_argument, NULL, OPT_PYTHON},
	{"quiet", no_argument, NULL, OPT_QUIET},
	{"raw-output", no_argument, NULL, OPT_RAW_OUTPUT},
	{"max-depth", required_argument, NULL, OPT_MAX_DEPTH},
	{"max-nodes", required_argument, NULL, OPT_MAX_NODES},
	{"system-prompt", required_argument, NULL, OPT_S_SYSTEM_PROMPT},
	{"system-extra", required_argument, NULL, OPT_S_SYSTEM_EXTRA},
	{"setup-code", required_argument, NULL, OPT_S_SETUP_CODE},
	{"sub-system-extra", required_argument, NULL, OPT_S_SUB_SYSTEM_EXTRA},
	{"sub-setup-code", required_argument, NULL, OPT_S_SUB_SETUP_CODE},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	CONTEXT_LONGOPTS,
	MODEL_LONGOPTS,
	SANDBOX_LONGOPTS,
	TOOLS_LONGOPTS,
	{"cache", required_argument, NULL, OPT_CACHE},
	{"no-cache", no_argument, NULL, OPT_NO_CACHE},
	{NULL, 0, NULL, 0},
};

static const struct cli_num repl_nums[] = {
	{OPT_OUTPUT_LIMIT, "output-limit", CLI_COUNT, 100, 1u << 26, "want 100..64M characters",
	 offsetof(struct repl_args, ro.output_limit)},
	{OPT_EXEC_TIMEOUT, "exec-timeout", CLI_SECS, 0.001, 1e7, "want seconds > 0",
	 offsetof(struct repl_args, ro.exec_timeout_ns)},
	{OPT_MAX_DEPTH, "max-depth", CLI_INT, 1, 16, NULL, offsetof(struct repl_args, ro.max_depth)},
	{OPT_MAX_NODES, "max-nodes", CLI_INT, 1, 1024, NULL,
	 offsetof(struct repl_args, ro.max_nodes)},
};

/* Take option opt of repl's own (not numeric, nor a model or sandbox
 * option). Returns 0, 1 (--help printed) or 2 (said why). */
static int take_opt(struct repl_args *a, int opt, char **argv)
{
	switch (opt) {
	case 'c': a->context = optarg; return 0;
	case 'v': a->co.verbose = true; return 0;
	case OPT_PYTHON:
		if (access(optarg, X_OK))
			return log_fail(2, "--python '%s' is not an executable file", optarg);
		a->ro.python = optarg;
		return 0;
	case OPT_QUIET: a->mo.quiet = true; return 0;
	case OPT_RAW_OUTPUT: cli_raw_output = true; return 0;
	case OPT_CACHE: a->cache_path = optarg; return 0;
	case OPT_NO_CACHE: a->no_cache = true; return 0;
	case OPT_S_SYSTEM_EXTRA:
		return log_fail(2, "--system-extra: the REPL has no root model to tell; the "
				   "children's is --sub-system-extra");
	case 'h':
		printf(usage, cli_context_opts_help, cli_tools_opts_help, cli_model_opts_help,
		       cli_sandbox_opts_help);
		return 1;
	case ':': return log_fail(2, "option '%s' needs a value", argv[optind - 1]);
	default: return log_fail(2, "unknown option '%s' (see rlm repl --help)", argv[optind - 1]);
	}
}

/* Parse argv into a: the defaults, RLM_MAX_DEPTH and RLM_MAX_NODES, then the options in
 * order (the first bad one is the error), then what they say together.
 * Returns 0, 1 (--help printed) or 2 (said why). */
static int repl_args_parse(struct repl_args *a, int argc, char **argv)
{
	struct rlm_err err = {0, ""};
	const char *v;
	long num;
	int opt, rc;
	memset(a, 0, sizeof(*a));
	cli_model_opts_init(&a->mo);
	if ((v = getenv("RLM_MAX_DEPTH")) && *v) {
		if (text_parse_int(v, 1, 16, &num))
			return log_fail(2, "bad value '%s' for RLM_MAX_DEPTH: want 1..16", v);
		a->ro.max_depth = (int)num;
	}
	if ((v = getenv("RLM_MAX_NODES")) && *v) {
		if (text_parse_int(v, 1, 1024, &num))
			return log_fail(2, "bad value '%s' for RLM_MAX_NODES: want 1..1024", v);
		a->ro.max_nodes = (int)num;
	}
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":c:vh", longopts, NULL)) != -1) {
		int taken = cli_model_opts_take(&a->mo, opt, optarg);
		if (!taken)
			taken = cli_context_opts_take(&a->co, opt, optarg);
		if (!taken)
			taken = cli_sandbox_opts_take(&a->ro.sandbox, opt, optarg);
		if (!taken)
			taken = cli_tools_opts_take(&a->ro, opt, optarg);
		if (!taken && opt != OPT_S_SYSTEM_EXTRA)
			taken = cli_text_opts_take(&a->ro, opt, optarg);
		if (!taken)
			taken = cli_num_take(repl_nums, ARRAY_SIZE(repl_nums), a, opt, optarg);
		if (taken == 2)
			return 2;
		if (!taken && (rc = take_opt(a, opt, argv)))
			return rc;
	}
	if (optind < argc)
		return log_fail(2, "unexpected argument '%s' (see rlm repl --help)", argv[optind]);
	if (!a->context)
		return log_fail(2, "no context: pass --context PATH (a file, a directory, a JSONL "
				   "file, or -)");
	if (repl_sandbox_check(&a->ro.sandbox, &err))
		return log_fail(2, "%s", err.msg);
	if (strcmp(a->context, "-") == 0 && a->co.kind != CORPUS_JSONL &&
	    a->co.kind != CORPUS_JSON && a->co.kind != CORPUS_CSV)
		a->co.kind = CORPUS_TEXT;
	return 0;
}

/* Run the cells of stdin in r, each result on stdout, until the end of
 * input. Returns 0, or 1 when the worker is lost. */
static int run_cells(struct rlm_repl *r, const struct corpus *corpus, const struct repl_args *a)
{
	struct repl_sandbox_status sb;
	struct rlm_err err = {0, ""};
	struct buf cell = BUF_INIT;
	bool tty = isatty(0) && strcmp(a->context, "-") != 0, quiet = a->mo.quiet;
	int status = 0;
	rlm_repl_sandbox_status(r, &sb);
	if (sb.unsafe)
		fprintf(stderr, "rlm: WARNING: the REPL worker runs WITHOUT seccomp "
				"(--unsafe-no-sandbox): %s\n", sb.line);
	if (tty && !quiet)
		fprintf(stderr, "rlm repl: `context` is loaded (%zu bytes, %zu document%s); a blank "
				"line runs a cell, Ctrl-D quits\nrlm repl: sandbox: %s\n",
			corpus->len, corpus->n_docs, corpus->n_docs == 1 ? "" : "s", sb.line);
	while (read_cell(stdin, tty, quiet, &cell)) {
		struct repl_result res;
		int rc;
		if (!cell.len)
			continue;
		rc = rlm_repl_exec(r, cell.p, cell.len, 0, &res, &err);
		if (rc && rc != RLM_ETIMEOUT && rc != RLM_ECANCEL) {
			fprintf(stderr, "rlm: error: %s\n", err.msg);
			status = 1;
			break;
		}
		/* What the cell printed, controls escaped at a terminal. */
		cli_term_write(stdout, res.output, res.len, 0);
		if (res.len && res.output[res.len - 1] != '\n')
			putchar('\n');
		/* As the model sees it: the variables the cell made, last. */
		if (res.made)
			cli_term_printf(stdout, "REPL variables: %s\n", res.made);
		if (res.ready && !quiet)
			cli_term_printf(stderr, "[answer ready: %s]\n", res.answer);
		fflush(stdout);
		repl_result_release(&res);
	}
	buf_release(&cell);
	return status;
}

int cli_repl(int argc, char **argv)
{
	struct repl_args a;
	struct rlm_models ms;
	struct corpus *corpus = NULL;
	struct rlm_repl *r = NULL;
	struct store *store = NULL;
	struct rlm_err err = {0, ""};
	const char *no_cache_env = getenv("RLM_NO_CACHE");
	bool set_up = false;
	int rc, status;

	if ((status = repl_args_parse(&a, argc, argv))) {
		cli_tools_opts_release(&a.ro);
		return status == 1 ? 0 : status;
	}
	status = 1;
	a.co.quiet = a.mo.quiet;
	if (corpus_load(a.context, &a.co, &corpus, &err)) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		goto out;
	}
	if ((rc = rlm_models_init(&ms, &a.mo, &err))) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		status = rc == RLM_EINVAL ? 2 : 1;
		goto out;
	}
	set_up = true;
	if (rlm_check_cost(ms.model, ms.sub, a.ro.max_cost, "--max-cost", &err)) {
		status = log_fail(2, "%s", err.msg);
		goto out;
	}
	/* Sub-calls go through the solve's own handler, without budgets: the
	 * user is at the keyboard. Child RLMs get this REPL's settings. */
	a.ro.pool = ms.pool;
	a.ro.model = ms.model;
	a.ro.sub_model = ms.sub;
	a.ro.params = ms.params;
	/* The store holds skills only here: RLM_NO_CACHE=1 unless --cache names
	 * one; --no-cache always. A store that cannot be opened costs the
	 * skills, not the REPL. */
	if (!a.no_cache && (a.cache_path || !no_cache_env || strcmp(no_cache_env, "1") != 0)) {
		struct store_cfg sc = {a.cache_path, false, 0};
		if (store_open(&sc, &store, &err)) {
			fprintf(stderr, "rlm: warning: no skills: %s\n", err.msg);
			store = NULL;
		}
		a.ro.skills = store;
	}
	if (rlm_repl_open(&a.ro, corpus, &r, &err)) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		goto out;
	}
	status = run_cells(r, corpus, &a);
out:
	rlm_repl_close(r);
	cli_tools_opts_release(&a.ro);
	store_close(store);
	if (set_up)
		rlm_models_release(&ms);
	corpus_free(corpus);
	return status;
}
