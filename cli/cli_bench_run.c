/* SPDX-License-Identifier: MIT */
/* cli/cli_bench_run.c -- `rlm bench run`: its options, its notices, and the
 * summary it prints and writes once the engine (bench/run.c) is done. */
#include "../bench/bench.h"
#include "cliopt.h"
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "usage: rlm bench run DATASET.jsonl [DATASET.jsonl ...] [options]\n"
    "\n"
    "Run every item of the datasets with one or more strategies, score each answer\n"
    "against the item's gold, and summarise: the mean score per suite, context\n"
    "size and strategy, and the latency and cost of an item at p25/p50/p75/p95.\n"
    "Items run in parallel, all on one call pool, one set of models and one store.\n"
    "\n"
    "A dataset is a JSONL file, one item per line (`rlm bench gen` writes them):\n"
    "  {\"id\":\"sniah-8k-0\", \"suite\":\"sniah\", \"question\":\"...\", "
    "\"answer\":[\"3597342\"],\n"
    "   \"context_path\":\"sniah-8k-0.txt\", \"scorer\":\"contains_all\", \"tokens\":8000}\n"
    "  id            a string, unique across the datasets\n"
    "  question      the question\n"
    "  answer        the gold: an array of strings (a string or a number alone is\n"
    "                an array of one)\n"
    "  context       the context itself, a string; or\n"
    "  context_path  a text file, a directory of documents or a JSONL file of\n"
    "                documents, relative to the dataset's directory (\"format\":\n"
    "                \"text\", \"dir\" or \"jsonl\" says which; else as rlm solve guesses)\n"
    "  scorer        contains_all, exact, oolong, set_f1 or mc (docs/bench.md)\n"
    "  answer_type   optional, for oolong: OOLONG's ANSWER_TYPE.NUMERIC, DATE, LABEL,\n"
    "                USER, COMPARISON or MONTH_YEAR (else the gold's JSON type\n"
    "                decides); oolong also takes OOLONG's own gold, a Python list\n"
    "                in a string such as \"['entity']\" or \"[1542]\"\n"
    "  suite         optional: the summary's row (default: the file's name)\n"
    "  tokens        optional: the context's length, the summary's size (default:\n"
    "                its bytes / 4, grouped to the nearest power of two: ~8k)\n"
    "Other fields are ignored. Every line is checked before anything runs: a bad\n"
    "one, an unknown scorer or a missing context file is an error naming FILE:LINE.\n"
    "\n"
    "  -s, --strategy LIST     comma-separated; each item runs with each (repl):\n"
    "                            repl    the RLM loop (as rlm solve)\n"
    "                            tree    split, ask every part, combine (as rlm solve)\n"
    "                            direct  the baseline: ONE call to --model with the\n"
    "                                    question and the context cut to the model's\n"
    "                                    window (its head kept: 4 bytes a token, less\n"
    "                                    the reply's --max-tokens or 8192 (a quarter\n"
    "                                    of a smaller window) and 5%%); refused when\n"
    "                                    fewer than 1,000 tokens would fit\n"
    "  -j, --jobs N            items solved at once, 1..256 (4)\n"
    "  -o, --out DIR           where the results go, created if missing (bench-out)\n"
    "  -n, --limit N           only the first N items of each dataset\n"
    "      --cache PATH        the store (env RLM_CACHE; default as for rlm solve):\n"
    "                          every model call is kept in it and answered from it\n"
    "                          when asked again, so a rerun costs nothing\n"
    "      --no-cache          no store (env RLM_NO_CACHE=1, unless --cache is given)\n"
    "      --refresh           look nothing up in the store, but keep what is made\n"
    "      --quiet             no progress bar or notices on stderr\n"
    "  -h, --help              this help\n"
    "\n"
    "Output, in DIR:\n"
    "  results.jsonl        one line per (item, strategy), appended as each ends:\n"
    "                       id, suite, dataset, tokens, strategy, scorer, model,\n"
    "                       sub_model, options_digest, score, answer, gold,\n"
    "                       answer_type (when the item has one), usage {root,\n"
    "                       sub, total: {input_tokens, output_tokens}}, calls,\n"
    "                       cache_hits, from_cache (every answer came from the\n"
    "                       store), iterations, sub_calls, errors (model calls\n"
    "                       that failed), repl_errors (turns whose code raised,\n"
    "                       over every node), depth (of the deepest child RLM;\n"
    "                       0: none), nodes (child RLMs), wall_ms, cost_usd,\n"
    "                       run_id (rlm runs show ID), stop, complete (false\n"
    "                       when sub-calls, child RLMs or workers under it\n"
    "                       failed; their count in failed); \"error\" when the\n"
    "                       solve failed, and for direct \"context_cut_tokens\".\n"
    "                       For tree, iterations are the combine levels,\n"
    "                       sub_calls the parts\n"
    "  report.md            the tables (score per suite x size x strategy; latency\n"
    "                       and cost per strategy, and per suite x size x strategy),\n"
    "                       the command line, the date, rlm's commit, the models\n"
    "  summary.json         the same numbers, for programs\n"
    "  score_vs_length.svg  mean score against context length (log), a line per\n"
    "                       suite and strategy\n"
    "  cost_latency.svg     latency and cost per item, p25/p50/p75/p95 per strategy\n"
    "The tables are printed on stdout too; a progress bar (solves done, ETA) goes to\n"
    "stderr when it is a terminal.\n"
    "\n"
    "Resuming: a run stopped at any point (Ctrl-C, kill -9) and run again with the\n"
    "same --out skips every (item, strategy) already in DIR/results.jsonl, failed\n"
    "ones excepted, and those of other models or other solve options (each line\n"
    "has an options_digest of what shapes an answer: the models and their\n"
    "settings, sampling, prompts, --max-depth, --max-iterations, budgets, limits)\n"
    "or of items that changed (an item_digest of its question, gold, scorer and\n"
    "context), and says how many; the summary covers them all. A solve cut short goes on from the store, its "
    "calls answered from the\n"
    "cache. Delete DIR/results.jsonl to run everything again (then from the\n"
    "cache: nearly free, but the latencies measured are the cache's).\n"
    "\n"
    "The options below are rlm solve's; limits apply to each solve (item x\n"
    "strategy), and the --jobs solves at once share --concurrency model calls.\n"
    "\n"
    "%s"
    "\n"
    "%s"
    "\n"
    "%s"
    "\n"
    "Exit status: 0 the run completed, whatever the scores; 1 a solve failed, or\n"
    "the run could not start (a bad dataset, the store); 2 bad usage.\n"
    "\n"
    "Examples:\n"
    "  rlm bench gen sniah --sizes 8k,32k,128k --n 2 --out data/sniah\n"
    "  rlm bench run data/sniah/sniah.jsonl --strategy repl,direct --out runs/sim\n"
    "  rlm bench run data/sniah/sniah.jsonl data/oolong/oolong.jsonl --model gpt-5 \\\n"
    "      --sub-model gpt-5-mini --strategy repl,tree,direct --jobs 8 --max-cost 1 \\\n"
    "      --out runs/gpt-5\n";

enum {
	OPT_CACHE = OPT_MODEL_LAST + 1,
	OPT_NO_CACHE,
	OPT_QUIET,
};

/* Parse --strategy's list into strats (no repeats). Returns 0, or 2 after
 * saying what is wrong. */
static int parse_strategies(const char *list, enum bench_strat *strats, size_t *n)
{
	char *copy = xstrdup(list), *save = NULL;
	*n = 0;
	for (char *s = strtok_r(copy, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
		int k = 0;
		while (k < BST_COUNT && strcmp(s, bench_strat_names[k]) != 0)
			k++;
		if (k == BST_COUNT) {
			log_fail(2,
				 "unknown strategy '%s' in --strategy (known: repl, tree, direct)",
				 s);
			free(copy);
			return 2;
		}
		for (size_t i = 0; i < *n; i++)
			if (strats[i] == (enum bench_strat)k)
				k = -1;
		if (k >= 0)
			strats[(*n)++] = (enum bench_strat)k;
	}
	free(copy);
	return *n ? 0 : log_fail(2, "--strategy is empty (want repl, tree, direct, or a list)");
}

/* Shell-quote s onto b unless it needs none. */
static void quote_arg(struct buf *b, const char *s)
{
	if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			    "_-./,:=@%+") == strlen(s)) {
		buf_puts(b, s);
		return;
	}
	buf_putc(b, '\'');
	for (; *s; s++)
		if (*s == '\'')
			buf_puts(b, "'\\''");
		else
			buf_putc(b, *s);
	buf_putc(b, '\'');
}

/* "rlm bench run ARGS", as typed but the API key. The caller frees it. */
static char *command_line(int argc, char **argv)
{
	struct buf b = BUF_INIT;
	buf_puts(&b, "rlm bench run");
	for (int i = 1; i < argc; i++) {
		buf_putc(&b, ' ');
		if (strncmp(argv[i], "--api-key=", 10) == 0) {
			buf_puts(&b, "--api-key=...");
		} else if (strcmp(argv[i], "--api-key") == 0 && i + 1 < argc) {
			buf_puts(&b, "--api-key ...");
			i++;
		} else {
			quote_arg(&b, argv[i]);
		}
	}
	return buf_detach(&b, NULL);
}

static void fmt_date(char *buf, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%d %H:%M UTC", &tm);
}

/* The Markdown notes of the report: what was resumed, cut, failed. */
static char *notes(const struct bench_run *r, size_t skipped, const char *results)
{
	struct buf b = BUF_INIT;
	size_t direct = 0, cut = 0, failed = 0, cached = 0;
	double cost = 0;
	for (size_t i = 0; i < r->n_tasks; i++) {
		const struct bench_task *t = &r->tasks[i];
		direct += t->strat == BST_DIRECT;
		cut += t->res.cut;
		cached += t->res.cached;
		failed += t->res.failed;
		cost += t->res.cost;
	}
	buf_printf(&b,
		   "- %zu solves (items x strategies), %ld at a time on one pool of model "
		   "calls; latency is each solve's wall time, its context's loading included.\n",
		   r->n_tasks, r->jobs);
	if (skipped)
		buf_printf(&b,
			   "- %zu of them were read back from an earlier run in `%s` (the run "
			   "resumed).\n",
			   skipped, results);
	if (direct)
		buf_printf(&b,
			   "- direct: %zu of %zu contexts were longer than the root model's "
			   "window (%ld tokens, less the reply's) and were cut to their head; "
			   "`context_cut_tokens` in `results.jsonl` says how much for each.\n",
			   cut, direct, llm_model_context_window(r->ms.model));
	if (cached)
		buf_printf(&b,
			   "- %zu solves were answered wholly from the store (`from_cache` in "
			   "`results.jsonl`): their latency is the cache's, not the model's; "
			   "their cost is what the calls cost when first made.\n",
			   cached);
	if (failed)
		buf_printf(&b,
			   "- %zu solves failed and scored 0 (their `error` is in "
			   "`results.jsonl`); a rerun runs them again.\n",
			   failed);
	if (strcmp(r->ms.provider, "sim") == 0 || strcmp(llm_model_name(r->ms.model), "sim") == 0)
		buf_puts(&b,
			 "- The model is the simulator (docs/simulator.md): it answers "
			 "extractively (the sentence that best matches the question, or a count "
			 "of matching lines) and never sees the gold, so only a suite whose "
			 "answer is one sentence of the context (S-NIAH, which-doc) can score. "
			 "OOLONG, OOLONG-Pairs and browse need a model that classifies, counts, "
			 "pairs or follows two facts: near 0 here is expected, and says nothing "
			 "of the controller.\n");
	if (cost == 0 && strcmp(r->ms.provider, "sim") == 0)
		buf_puts(&b, "- Every cost is 0: the in-process simulator is free.\n");
	else if (cost == 0)
		buf_puts(&b, "- Every cost is 0: no price is known for the model (`--prices FILE` "
			     "sets one).\n");
	return buf_detach(&b, NULL);
}

/* Print the tables, write the report. Returns 0 or 1. */
static int summarise(const struct bench_run *r, int argc, char **argv, char *const *datasets,
		     size_t n_datasets, const enum bench_strat *strats, size_t n_strats,
		     const char *out, size_t skipped)
{
	struct bench_res *res = xcalloc(r->n_tasks + 1, sizeof(*res));
	const char *names[BST_COUNT];
	struct bench_report rep = {0};
	struct rlm_err err = {0, ""};
	char date[64], *results = xasprintf("%s/results.jsonl", out);
	char *cmd = command_line(argc, argv), *note = notes(r, skipped, results), *models;
	const char *root = llm_model_name(r->ms.model), *sub = llm_model_name(r->ms.sub);
	int status = 0;
	for (size_t i = 0; i < r->n_tasks; i++)
		if (r->tasks[i].done)
			res[rep.n++] = r->tasks[i].res;
	for (size_t k = 0; k < n_strats; k++)
		names[k] = bench_strat_names[strats[k]];
	fmt_date(date, sizeof(date));
	models =
	    xasprintf("`%s` (provider %s, window %ld tokens) for root calls and direct; "
		      "`%s` for sub-calls",
		      root, r->ms.provider, llm_model_context_window(r->ms.model), sub);
	rep.res = res;
	rep.strategies = names;
	rep.n_strategies = n_strats;
	rep.command = cmd;
	rep.date = date;
	rep.models = models;
	rep.model = root;
	rep.sub_model = sub;
	rep.datasets = (const char *const *)datasets;
	rep.n_datasets = n_datasets;
	rep.notes = note;
	bench_report_print(&rep, stdout);
	fflush(stdout);
	if (bench_report_write(&rep, out, &err)) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		status = 1;
	}
	free(models);
	free(note);
	free(cmd);
	free(results);
	free(res);
	return status;
}

/* Open DIR/results.jsonl to append, ending a line a killed run left half
 * written. Returns the fd, or -1 after saying why. */
static int open_results(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	char last;
	off_t end;
	if (fd < 0) {
		fprintf(stderr, "rlm: error: cannot open '%s': %s\n", path, strerror(errno));
		return -1;
	}
	end = lseek(fd, 0, SEEK_END);
	if (end > 0 && pread(fd, &last, 1, end - 1) == 1 && last != '\n' &&
	    file_write_all(fd, "\n", 1)) {
		fprintf(stderr, "rlm: error: cannot write '%s': %s\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Build the pool, models and store into r. Returns 0 or an exit status. */
static int setup(struct bench_run *r, const struct rlm_models_cfg *mo, const char *cache_path,
		 bool no_cache)
{
	struct rlm_err err = {0, ""};
	int rc;
	if ((rc = rlm_models_init(&r->ms, mo, &err))) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		return rc == RLM_EINVAL ? 2 : 1;
	}
	if (rlm_check_cost(r->ms.model, r->ms.sub, r->ro.max_cost, "--max-cost", &err)) {
		rlm_models_release(&r->ms);
		return log_fail(2, "%s", err.msg);
	}
	if (!no_cache) {
		struct store_cfg sc = {cache_path, false, 0};
		if ((rc = store_open(&sc, &r->store, &err))) {
			fprintf(stderr, "rlm: error: %s (or pass --no-cache)\n", err.msg);
			rlm_models_release(&r->ms);
			return 1;
		}
	}
	r->ro.pool = r->ms.pool;
	r->ro.model = r->ms.model;
	r->ro.sub_model = r->ms.sub;
	r->ro.params = r->ms.params;
	r->ro.window = (size_t)mo->concurrency * 2;
	r->ro.store = r->store;
	return 0;
}

/* What the command line of `rlm bench run` says, but the sandbox and
 * solve options, which go straight into the run's rlm_opts. Strings are
 * borrowed from argv and the environment. */
struct run_args {
	struct rlm_models_cfg mo;		    /* the models; --quiet */
	enum bench_strat strats[BST_COUNT]; /* --strategy, no repeats */
	size_t n_strats;
	const char *out;	/* --out */
	const char *cache_path; /* --cache */
	bool no_cache;		/* --no-cache, or RLM_NO_CACHE=1 */
	bool quiet;		/* --quiet */
	long jobs;		/* --jobs */
	long limit;		/* --limit; 0: every item */
	char **datasets;	/* the operands, in argv */
	size_t n_datasets;
};

static const struct option longopts[] = {
    {"jobs", required_argument, NULL, 'j'},
    {"out", required_argument, NULL, 'o'},
    {"limit", required_argument, NULL, 'n'},
    {"cache", required_argument, NULL, OPT_CACHE},
    {"no-cache", no_argument, NULL, OPT_NO_CACHE},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"help", no_argument, NULL, 'h'},
    MODEL_LONGOPTS,
    SANDBOX_LONGOPTS,
    SOLVE_LONGOPTS,
    {NULL, 0, NULL, 0},
};

static const struct cli_num run_nums[] = {
    {'j', "jobs", CLI_LONG, 1, 256, NULL, offsetof(struct run_args, jobs)},
    {'n', "limit", CLI_LONG, 1, 1000000000, "want a count > 0", offsetof(struct run_args, limit)},
};

/* Take option opt of bench run's own. Returns 0, 1 (--help printed) or 2
 * (said why). */
static int take_opt(struct run_args *a, int opt, char **argv)
{
	int rc = cli_num_take(run_nums, ARRAY_SIZE(run_nums), a, opt, optarg);
	if (rc)
		return rc == 1 ? 0 : rc;
	switch (opt) {
	case 's':
		return parse_strategies(optarg, a->strats, &a->n_strats);
	case 'o':
		a->out = optarg;
		return 0;
	case OPT_CACHE:
		a->cache_path = optarg;
		return 0;
	case OPT_NO_CACHE:
		a->no_cache = true;
		return 0;
	case OPT_QUIET:
		a->quiet = a->mo.quiet = true;
		return 0;
	case 'h':
		printf(usage, cli_solve_opts_help, cli_model_opts_help, cli_sandbox_opts_help);
		return 1;
	case ':':
		return log_fail(2, "option '%s' needs a value", argv[optind - 1]);
	default:
		return log_fail(2, "unknown option '%s' (see rlm bench run --help)",
				argv[optind - 1]);
	}
}

/* Parse argv into a, and the sandbox and solve options into ro: the
 * defaults, the environment, then the options in order (the first bad
 * one is the error), then the datasets. Returns 0, 1 (--help printed) or
 * 2 (said why). */
static int run_args_parse(struct run_args *a, struct rlm_opts *ro, int argc, char **argv)
{
	struct rlm_err err = {0, ""};
	int opt, rc;
	memset(a, 0, sizeof(*a));
	a->strats[0] = BST_REPL;
	a->n_strats = 1;
	a->out = "bench-out";
	a->jobs = 4;
	cli_model_opts_init(&a->mo);
	if ((rc = cli_solve_opts_env(ro)))
		return rc;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":j:s:o:n:h", longopts, NULL)) != -1) {
		/* -s is a list here: cli_solve_opts_take's is one strategy. */
		int taken = opt == 's' ? 0 : cli_model_opts_take(&a->mo, opt, optarg);
		if (!taken && opt != 's')
			taken = cli_sandbox_opts_take(&ro->sandbox, opt, optarg);
		if (!taken && opt != 's')
			taken = cli_solve_opts_take(ro, opt, optarg);
		if (taken == 2)
			return 2;
		if (!taken && (rc = take_opt(a, opt, argv)))
			return rc;
	}
	if (optind >= argc)
		return log_fail(2, "no dataset: pass one or more DATASET.jsonl files (`rlm bench "
				   "gen` writes them)");
	for (size_t k = 0; k < a->n_strats; k++)
		if (a->strats[k] == BST_REPL && repl_sandbox_check(&ro->sandbox, &err))
			return log_fail(2, "%s", err.msg);
	a->datasets = argv + optind;
	a->n_datasets = (size_t)(argc - optind);
	return 0;
}

/* Load every dataset of a, checking every line before anything is paid
 * for. Returns 0, or 1 after saying what is wrong. */
static int load_datasets(struct bench_run *r, const struct run_args *a)
{
	long bad = 0;
	for (size_t i = 0; i < a->n_datasets; i++) {
		long b = bench_run_load(r, a->datasets[i], a->limit);
		bad = b < 0 || bad < 0 ? -1 : bad + b;
	}
	if (r->bad_said > BENCH_MAX_BAD_LINES)
		fprintf(stderr, "rlm: error: ... and %zu more bad lines\n",
			r->bad_said - BENCH_MAX_BAD_LINES);
	if (bench_run_check_ids(r) || bad)
		return log_fail(1, "the datasets have errors (above); nothing was run");
	return 0;
}

/* With --strategy direct, does the root model's window leave room for
 * context? Returns 0, or 2 after saying how to make room. */
static int check_direct(struct bench_run *r, const struct run_args *a)
{
	for (size_t k = 0; k < a->n_strats; k++) {
		int64_t room = bench_direct_room(r, "");
		if (a->strats[k] == BST_DIRECT && room < BENCH_DIRECT_MIN_ROOM)
			return log_fail(
			    2,
			    "--strategy direct would send at most %lld tokens of context: %s's "
			    "window is %ld tokens and %lld are kept for the reply (--max-tokens); "
			    "lower --max-tokens to %lld or less",
			    (long long)RLM_MAX(room, 0), llm_model_name(r->ms.model),
			    llm_model_context_window(r->ms.model),
			    (long long)bench_direct_reserve(r),
			    (long long)(bench_direct_reserve(r) + room - BENCH_DIRECT_MIN_ROOM));
	}
	return 0;
}

/* The notices before the run: what it will do, and what of an earlier
 * run in results it skips or runs again. */
static void say_plan(const struct bench_run *r, const struct run_args *a, const char *results,
		     size_t skipped, size_t other, size_t other_opts)
{
	fprintf(stderr,
		"rlm: bench: %zu items x %zu strategies = %zu solves, %ld at a time; "
		"results in %s\n",
		r->n_items, a->n_strats, r->n_tasks, a->jobs, results);
	if (skipped)
		fprintf(stderr,
			"rlm: bench: %zu of them already in %s: skipped (resuming; "
			"delete the file to run them again)\n",
			skipped, results);
	if (other)
		fprintf(stderr,
			"rlm: bench: %zu results in %s are of another model: run again "
			"with this one (give each model its own --out)\n",
			other, results);
	if (other_opts)
		fprintf(stderr,
			"rlm: bench: %zu results in %s were made with other solve options "
			"(depth, limits, sampling, prompts) or for items that changed since "
			"(question, gold, scorer, context): run again\n",
			other_opts, results);
}

/* Run what results (DIR/results.jsonl) does not hold yet, then print
 * and write the summary. r is set up. Returns the exit status. */
static int run_and_summarise(struct bench_run *r, const struct run_args *a, int argc, char **argv,
			     const char *results)
{
	struct llm_stats st;
	size_t skipped, other, other_opts;
	int status;
	bench_run_plan(r, a->strats, a->n_strats);
	bench_run_digest(r);
	skipped = bench_run_resume(r, results, &other, &other_opts);
	if ((r->fd = open_results(results)) < 0)
		return 1;
	r->jobs = a->jobs;
	r->quiet = a->quiet;
	r->tty = !a->quiet && isatty(2);
	if (!a->quiet)
		say_plan(r, a, results, skipped, other, other_opts);
	bench_run_all(r);
	llm_pool_stats(r->ms.pool, &st);
	status = summarise(r, argc, argv, a->datasets, a->n_datasets, a->strats, a->n_strats,
			   a->out, skipped);
	if (r->write_failed)
		status =
		    log_fail(1, "cannot write '%s': some results are missing from it", results);
	if (r->n_failed)
		status = 1;
	if (!a->quiet)
		fprintf(stderr,
			"rlm: bench: %zu run (%zu failed), %zu skipped; %lld model calls "
			"(%lld from the cache), $%.4f; %.1f s; report in %s/report.md\n",
			r->n_done, r->n_failed, skipped, (long long)st.calls, (long long)st.cached,
			st.cost, (double)(time_now_ns() - r->t0) / 1e9, a->out);
	return status;
}

int cli_bench_run(int argc, char **argv)
{
	const char *no_cache_env = getenv("RLM_NO_CACHE");
	struct run_args a;
	struct bench_run r;
	char *results = NULL;
	bool set_up = false;
	int rc, status;

	bench_run_init(&r);
	if ((status = run_args_parse(&a, &r.ro, argc, argv))) {
		if (status == 1) /* --help */
			status = 0;
		goto out;
	}
	if ((status = load_datasets(&r, &a)))
		goto out;
	if ((rc = bench_make_dirs(a.out))) {
		status = log_fail(1, "cannot create '%s': %s", a.out, strerror(-rc));
		goto out;
	}
	if (!a.no_cache && !a.cache_path && no_cache_env && strcmp(no_cache_env, "1") == 0)
		a.no_cache = true;
	if ((status = setup(&r, &a.mo, a.cache_path, a.no_cache)))
		goto out;
	set_up = true;
	if ((status = check_direct(&r, &a)))
		goto out;
	results = xasprintf("%s/results.jsonl", a.out);
	status = run_and_summarise(&r, &a, argc, argv, results);
out:
	if (r.fd >= 0)
		close(r.fd);
	if (set_up) {
		rlm_models_release(&r.ms);
		store_close(r.store);
	}
	bench_run_release(&r);
	cli_tools_opts_release(&r.ro);
	free(results);
	return status;
}
