/* SPDX-License-Identifier: MIT */
/* cli/cli_solve.c -- `rlm solve`: answer a question over a context. */
#include "cli.h"
#include "cliopt.h"
#include "cli_int.h"
#include "../rlm/rlm.h"
#include "../common/json.h"
#include "../store/store.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
	"usage: rlm solve --context PATH --question TEXT [options]\n"
	"\n"
	"Answer a question over a context of any size. The answer goes to stdout (at a\n"
	"terminal with its control characters shown escaped: see --raw-output).\n"
	"\n"
	"  -c, --context PATH      a text file, a directory (each file a document), a\n"
	"                          JSONL file of documents ({\"text\": ...} per line), a\n"
	"                          .json file (its value), a .csv/.tsv table with a header\n"
	"                          row (a list of dicts), or - for standard input\n"
	"  -q, --question TEXT     the question (env RLM_QUESTION)\n"
	"      --question-file F   read the question from a file\n"
	"      --schema FILE       a JSON Schema the answer must be valid under: the model\n"
	"                          is shown it, the REPL checks each answer (with Debian's\n"
	"                          python3-jsonschema) and shows the model why one is not\n"
	"                          valid, and the answer printed is compact JSON (with\n"
	"                          --json, \"answer\" is the JSON value and \"answer_json\"\n"
	"                          true). A solve whose answer never validated prints no\n"
	"                          answer on stdout and exits 3 (docs/structured.md)\n"
	"%s"
	"  -s, --strategy NAME     repl (default): the root model sees only the context's\n"
	"                          size and writes Python that a persistent REPL runs with\n"
	"                          the context in `context`, calling sub-models from code;\n"
	"                          tree: the controller cuts the context into parts that\n"
	"                          fit one call, asks every part in parallel, and combines\n"
	"                          the partial answers (for models that cannot write code)\n"
	"      --json              print a JSON object: answer, stop reason, complete\n"
	"                          and failures (what failed under the solve: sub-calls,\n"
	"                          child RLMs, workers), usage per\n"
	"                          model, cost, calls, iterations, timings, the worker's\n"
	"                          sandbox (on failure too), the turns (each reply, its\n"
	"                          code blocks, the output shown, the notices), and the\n"
	"                          child RLMs with theirs, nested (a child answered from\n"
	"                          the store's memo ran no turn: \"turns\": [], \"memo\":\n"
	"                          true). A solve answered whole from the memo has\n"
	"                          \"memo\": {\"run\", \"date\", \"calls\", \"usage\",\n"
	"                          \"usage_by_role\", ...} of the run that made the answer\n"
	"                          and its children; its own usage, cost and calls are\n"
	"                          zero (cache.saved is what it did not spend again)\n"
	"      --no-trajectory     leave the turns out of --json\n"
	"      --session           ask more questions on the same REPL: after the first\n"
	"                          (--question, if given), one per line of stdin, as\n"
	"                          `rlm chat` does (see rlm chat --help)\n"
	"      --quiet             no progress line or notices on stderr\n"
	"      --progress          draw the progress line even when stderr is no terminal\n"
	"                          (env RLM_PROGRESS=1; RLM_PROGRESS=0: never). It says\n"
	"                          what runs (the root model, code, sub-calls done of a\n"
	"                          batch, child RLMs done) and the time, redrawn 5 times\n"
	"                          a second\n"
	"  -v, --verbose           show the worker's sandbox and each turn's reply, code\n"
	"                          and output on stderr (and log retries and other details;\n"
	"                          answered from the memo: the original run's, replayed);\n"
	"                          a child RLM's lines start [dDEPTH nNODE]; name each file\n"
	"                          of a directory that is skipped or has bytes replaced\n"
	CLI_RAW_OUTPUT_HELP
	"  -h, --help              this help\n"
	"\n"
	"The store (a SQLite file: every model call is kept and answered from it when\n"
	"asked again; child RLMs' answers too; every solve is a run, see `rlm runs`):\n"
	"      --cache PATH        the store (env RLM_CACHE; default\n"
	"                          $XDG_CACHE_HOME/rlm/rlm.db or ~/.cache/rlm/rlm.db)\n"
	"      --no-cache          no store: nothing is looked up, kept or recorded\n"
	"                          (env RLM_NO_CACHE=1, unless --cache is given)\n"
	"      --refresh           look nothing up, but keep what is made (replacing).\n"
	"                          A solve answered from the memo says so on stderr:\n"
	"                          \"rlm: answered from run ID of DATE; --refresh to run\n"
	"                          again\"\n"
	"      --resume ID         run run ID again as it was run (its question, context,\n"
	"                          options and RLM_* / *_BASE_URL variables; flags given\n"
	"                          here win; API keys come from here, never kept): its\n"
	"                          calls come from the store and it goes on where it\n"
	"                          stopped. A solve run again with the same question,\n"
	"                          context and options resumes the same way by itself.\n"
	"                          Ctrl-C stops a solve and prints the --resume command\n"
	"                          of its run; the exit status is then 130\n"
	"\n"
	"%s"
	"\n"
	"%s"
	"\n"
	"%s"
	"\n"
	"Exit status: 0 answered (the answer may be NONE: nothing in the context held\n"
	"it, and everything was read), 1 failed, 2 bad usage (a bad option or\n"
	"RLM_SANDBOX_DISABLE, a mandatory sandbox layer disabled without\n"
	"--unsafe-no-sandbox, --max-cost with a model that has no price: found before\n"
	"any model call), 3 the answer cannot be trusted whole: a limit stopped the\n"
	"solve (stop max_iterations, timeout, ...: a partial answer), or it is\n"
	"\"incomplete\": NONE or empty while sub-calls, child RLMs or the worker under\n"
	"it failed, so the part they would have read went unread (stderr names what\n"
	"failed; --json lists it in \"failures\"). A real answer with such failures\n"
	"exits 0 with \"complete\": false and a warning on stderr. 130 interrupted\n"
	"(Ctrl-C: stderr names the run and the command that resumes it).\n"
	"\n"
	"Examples:\n"
	"  rlm solve -c notes/ -q 'Which meeting moved the launch date?'\n"
	"  rlm solve -c corpus.jsonl -q 'How many reports mention a fire?' --json\n"
	"  rlm solve -c big.txt -q '...' --model gpt-5 --sub-model gpt-5-mini --max-cost 2\n"
	"  rlm solve -c big.txt -q '...' --base-url http://127.0.0.1:8000/v1 --model qwen3\n"
	"  rlm solve -c reports/ -q '...' --max-depth 3 --max-nodes 16 --json\n";

enum {
	OPT_JSON = OPT_MODEL_LAST + 1,
	OPT_QFILE,
	OPT_SCHEMA,
	OPT_QUIET,
	OPT_CACHE,
	OPT_NO_CACHE,
	OPT_RESUME,
	OPT_NO_TRAJECTORY,
	OPT_PROGRESS,
	OPT_RAW_OUTPUT,
	OPT_SESSION,
};

static void on_event(const struct rlm_event *e, void *arg)
{
	struct cli_progress *pr = arg;
	const char *what = strcmp(e->kind, "reply") == 0    ? "model"
			   : strcmp(e->kind, "code") == 0   ? "code"
			   : strcmp(e->kind, "output") == 0 ? "output"
							    : "notice";
	char node[48] = "";
	/* Child RLMs interleave with their parents: say whose line it is. */
	if (e->depth > 0)
		snprintf(node, sizeof(node), "[d%d n%d] ", e->depth, e->node);
	pthread_mutex_lock(&pr->mu);
	if (pr->tty)
		fputs("\r\033[K", stderr);
	/* The reply, code and output are the model's: escaped at a terminal. */
	if (strcmp(e->kind, "sandbox") == 0)
		cli_term_printf(stderr, "rlm: %ssandbox: %.*s\n", node,
				(int)RLM_MIN(e->len, (size_t)INT32_MAX), e->text);
	else
		cli_term_printf(stderr, "--- %sturn %d %s (%.1f s)\n%.*s\n", node, e->iteration,
				what, (double)e->elapsed_ns / 1e9,
				(int)RLM_MIN(e->len, (size_t)INT32_MAX), e->text);
	pthread_mutex_unlock(&pr->mu);
}

static void print_json(const struct rlm_result *r, const struct rlm_opts *ro, const struct corpus *c,
		       const struct rlm_models *ms, int64_t load_ns, int64_t total_ns,
		       const struct llm_stats *st, const char *error, bool one_line)
{
	cJSON *o = rlm_result_json(r, ro), *ctx, *t;
	char *s;
	if (error)
		json_add_str(o, "error", error);
	json_add_str(o, "provider", ms->provider);
	json_add_num(json_get(o, "calls"), "retries", (double)st->retries);
	ctx = cJSON_CreateObject();
	json_add_str(ctx, "source", c->source);
	json_add_str(ctx, "kind", corpus_kind_name(c->kind));
	json_add_num(ctx, "documents", (double)c->n_docs);
	json_add_num(ctx, "bytes", (double)c->len);
	json_add_num(ctx, "tokens_estimate", (double)llm_estimate_tokens(c->len));
	json_add_num(ctx, "skipped_files", (double)c->skipped);
	json_add_num(ctx, "replaced_bytes", (double)c->replaced);
	json_add(o, "context", ctx);
	t = json_get(o, "timings");
	json_add_num(t, "load_ms", (double)load_ns / 1e6);
	json_add_num(t, "total_ms", (double)total_ns / 1e6);
	s = one_line ? cJSON_PrintUnformatted(o) : cJSON_Print(o);
	cli_term_write(stdout, s, strlen(s), TEXT_TERM_JSON);
	putchar('\n');
	free(s);
	cJSON_Delete(o);
}

static char *read_question_file(const char *path)
{
	char *q;
	size_t len;
	struct rlm_err err = {0, ""};
	if (file_read(path, 1 << 20, &q, &len, &err)) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		return NULL;
	}
	while (len && (q[len - 1] == '\n' || q[len - 1] == '\r'))
		q[--len] = '\0';
	return q;
}

static const char shortopts[] = ":c:q:s:vh";

static const struct option longopts[] = {
	{"context", required_argument, NULL, 'c'},
	{"question", required_argument, NULL, 'q'},
	{"question-file", required_argument, NULL, OPT_QFILE},
	{"schema", required_argument, NULL, OPT_SCHEMA},
	{"cache", required_argument, NULL, OPT_CACHE},
	{"no-cache", no_argument, NULL, OPT_NO_CACHE},
	{"resume", required_argument, NULL, OPT_RESUME},
	{"json", no_argument, NULL, OPT_JSON},
	{"no-trajectory", no_argument, NULL, OPT_NO_TRAJECTORY},
	{"quiet", no_argument, NULL, OPT_QUIET},
	{"progress", no_argument, NULL, OPT_PROGRESS},
	{"raw-output", no_argument, NULL, OPT_RAW_OUTPUT},
	{"session", no_argument, NULL, OPT_SESSION},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	CONTEXT_LONGOPTS,
	MODEL_LONGOPTS,
	SANDBOX_LONGOPTS,
	SOLVE_LONGOPTS,
	{NULL, 0, NULL, 0},
};

static char *run_note(int argc, char **argv);

/* Take option opt of solve's own (not a model, sandbox or solve option).
 * Returns 0, 1 (--help printed) or 2 (said why). */
static int take_opt(struct solve_args *a, int opt, char **argv)
{
	switch (opt) {
	case 'c': a->context = optarg; return 0;
	case 'q':
		a->question = optarg;
		a->qpath = NULL;
		return 0;
	case OPT_QFILE: /* read once the options are known good */
		a->qpath = optarg;
		a->question = NULL;
		return 0;
	case OPT_SCHEMA: a->schema_path = optarg; return 0;
	case OPT_CACHE: a->cache_path = optarg; return 0;
	case OPT_NO_CACHE: a->no_cache = true; return 0;
	case OPT_RESUME:
		/* cli_solve takes --resume before parsing; getopt got here
		 * through an abbreviation it does not see. */
		return log_fail(2, "spell --resume out in full");
	case OPT_JSON: a->json = true; return 0;
	case OPT_NO_TRAJECTORY: a->no_trajectory = true; return 0;
	case OPT_QUIET: a->mo.quiet = true; return 0;
	case OPT_PROGRESS: a->progress = true; return 0;
	case OPT_RAW_OUTPUT: cli_raw_output = true; return 0;
	case OPT_SESSION: a->chat = true; return 0;
	case 'v':
		rlm_log_level = LOG_DEBUG;
		a->verbose = true;
		return 0;
	case 'h': printf(usage, cli_context_opts_help, cli_solve_opts_help, cli_model_opts_help, cli_sandbox_opts_help); return 1;
	case ':': return log_fail(2, "option '%s' needs a value", argv[optind - 1]);
	default: return log_fail(2, "unknown option '%s' (see rlm solve --help)", argv[optind - 1]);
	}
}

/* Parse argv into a: the defaults, the environment, then the options in
 * order (the first bad one is the error). Returns 0, 1 (--help printed) or
 * 2 (said why). */
static int solve_args_parse(struct solve_args *a, int argc, char **argv, bool chat)
{
	int opt, rc;
	memset(a, 0, sizeof(*a));
	a->chat = chat;
	a->question = getenv("RLM_QUESTION");
	cli_model_opts_init(&a->mo);
	if ((rc = cli_solve_opts_env(&a->ro)))
		return rc;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		int taken = cli_model_opts_take(&a->mo, opt, optarg);
		if (!taken)
			taken = cli_context_opts_take(&a->co, opt, optarg);
		if (!taken)
			taken = cli_sandbox_opts_take(&a->ro.sandbox, opt, optarg);
		if (!taken)
			taken = cli_solve_opts_take(&a->ro, opt, optarg);
		if (taken == 2)
			return 2;
		if (!taken && (rc = take_opt(a, opt, argv)))
			return rc;
	}
	if (optind < argc)
		return log_fail(2, "unexpected argument '%s' (see rlm %s --help)", argv[optind],
				chat ? "chat" : "solve");
	a->chat_json = a->chat && a->json;
	return 0;
}

/* Read the --schema file into a fresh string: a JSON object, else NULL
 * with why on stderr, naming the file. */
static char *read_schema_file(const char *path)
{
	struct rlm_err err = {0, ""};
	char *s = NULL;
	size_t len = 0;
	cJSON *j;
	if (file_read(path, 4 << 20, &s, &len, &err)) {
		fprintf(stderr, "rlm: error: cannot read the schema: %s\n", err.msg);
		return NULL;
	}
	j = cJSON_ParseWithLength(s, len);
	if (!j) {
		const char *at = cJSON_GetErrorPtr();
		size_t off = at && at >= s && at <= s + len ? (size_t)(at - s) : 0, line = 1;
		for (size_t i = 0; i < off; i++)
			line += s[i] == '\n';
		fprintf(stderr, "rlm: error: the schema '%s' is not JSON (line %zu)\n", path, line);
		free(s);
		return NULL;
	}
	if (!cJSON_IsObject(j) && !cJSON_IsBool(j)) {
		fprintf(stderr, "rlm: error: the schema '%s' is not a JSON object\n", path);
		cJSON_Delete(j);
		free(s);
		return NULL;
	}
	cJSON_Delete(j);
	return s;
}

/* Check what needs no model and no context: the question (read from
 * --question-file into *qfile, the caller's to free, then a->question),
 * the schema (--schema into *schema, the caller's) and the sandbox.
 * Returns 0 or 2 (said why). */
static int solve_args_check(struct solve_args *a, char **qfile, char **schema)
{
	struct rlm_err err = {0, ""};
	if (a->qpath) {
		if (!(*qfile = read_question_file(a->qpath)))
			return 2;
		a->question = *qfile;
	}
	if (a->schema_path) {
		if (!(*schema = read_schema_file(a->schema_path)))
			return 2;
		a->ro.schema_json = *schema;
		if (a->ro.strategy != RLM_REPL)
			return log_fail(2, "--schema needs the repl strategy (the tree strategy has "
					   "no REPL to check answers)");
	}
	if (a->ro.strategy != RLM_REPL && (a->ro.system_prompt || a->ro.system_extra ||
					   a->ro.setup_code || a->ro.sub_system_extra ||
					   a->ro.sub_setup_code))
		return log_fail(2, "--system-prompt, --system-extra and --setup-code (and their "
				   "--sub- forms) need the repl strategy (the tree strategy has "
				   "no REPL and prompts of its own)");
	if (!a->context)
		return log_fail(2, "no context: pass --context PATH (a file, a directory, a "
				   "JSONL file, or - for stdin)");
	if (a->chat && a->ro.strategy != RLM_REPL)
		return log_fail(2, "a session needs the repl strategy (--strategy tree keeps nothing "
				   "between questions)");
	if (a->chat && !a->question) /* the questions come from stdin */
		return 0;
	if (!a->question || !*a->question)
		return log_fail(2, "the question is empty: pass --question TEXT");
	if (!text_utf8_valid(a->question, strlen(a->question), NULL))
		return log_fail(2, "the question is not valid UTF-8");
	/* A sandbox the worker would refuse is a usage error, found before
	 * the context is read or a model is called. */
	if (a->ro.strategy == RLM_REPL && repl_sandbox_check(&a->ro.sandbox, &err))
		return log_fail(2, "%s", err.msg);
	return 0;
}

/* Open the store into *store, with the note that lets the run be run
 * again in *note (both the caller's), and hand them to a->ro; or nothing
 * with --no-cache, or RLM_NO_CACHE=1 without --cache. Returns 0 or 1
 * (said why). */
static int open_store(struct solve_args *a, int argc, char **argv, const char *resumed_from,
		      struct store **store, char **note)
{
	const char *no_cache_env = getenv("RLM_NO_CACHE");
	struct store_cfg sc = {a->cache_path, false, 0};
	struct rlm_err err = {0, ""};
	if (!a->no_cache && !a->cache_path && no_cache_env && strcmp(no_cache_env, "1") == 0)
		a->no_cache = true;
	if (a->no_cache)
		return 0;
	if (store_open(&sc, store, &err)) {
		fprintf(stderr, "rlm: error: %s (or pass --no-cache)\n", err.msg);
		return 1;
	}
	*note = run_note(argc, argv);
	a->ro.store = *store;
	a->ro.run_note_json = *note;
	a->ro.resumed_from = resumed_from;
	return 0;
}

/* The answer's sources on stderr (stdout stays the answer alone): "rlm:
 * sources: linux/eventpoll.h, report.txt [120, 164)", and how many the
 * answer gave that were not found. */
static void print_sources(const struct rlm_result *r)
{
	if (r->n_sources) {
		fputs("rlm: sources: ", stderr);
		for (size_t i = 0; i < r->n_sources; i++) {
			const struct rlm_source *s = &r->sources[i];
			cli_term_printf(stderr, "%s%s", i ? ", " : "", s->doc);
			if (s->start >= 0 || s->end >= 0)
				fprintf(stderr, " [%lld, %lld)", (long long)s->start, (long long)s->end);
		}
		fputc('\n', stderr);
	}
	if (r->sources_dropped)
		fprintf(stderr, "rlm: %zu of the answer's sources %s dropped: not found in the context\n",
			r->sources_dropped, r->sources_dropped == 1 ? "was" : "were");
}

int cli__solve_print(struct solve_args *a, const struct rlm_models *ms, const struct corpus *corpus,
		     struct rlm_session *sess, int64_t t0, int64_t load_ns)
{
	struct cli_progress pr;
	struct rlm_opts *ro = &a->ro;
	struct rlm_result res = {0};
	struct rlm_err err = {0, ""};
	struct llm_stats st;
	int rc, status = 1;

	memset(&pr, 0, sizeof(pr));
	pr.tty = cli__progress_wanted(a->mo.quiet, a->progress);
	ro->pool = ms->pool;
	ro->model = ms->model;
	ro->sub_model = ms->sub;
	ro->params = ms->params;
	ro->window = (size_t)a->mo.concurrency * 2;
	ro->trajectory = a->json && !a->no_trajectory;
	if (pr.tty) {
		ro->progress = cli__on_progress;
		ro->progress_arg = &pr;
	}
	if (a->verbose) {
		ro->event = on_event;
		ro->event_arg = &pr;
	}
	if (!ro->cancel)
		ro->cancel = cli__sigint_catch(true);
	cli__progress_start(&pr);
	rc = sess ? rlm_session_solve(sess, ro, a->question, &res, &err)
		  : rlm_solve(ro, a->question, corpus, &res, &err);
	cli__progress_end(&pr);
	cli__sigint_catch(false);
	llm_pool_stats(ms->pool, &st);
	if (cli__interrupted()) {
		/* Ctrl-C: exit 130 (128 + SIGINT, as the shell has it). What
		 * was answered is kept; the run goes on with --resume (a
		 * session's question is asked again instead). */
		if (sess)
			fputs("rlm: the question was stopped (Ctrl-C)\n", stderr);
		else
			cli__say_interrupted(res.run_id, a->ro.store != NULL, a->cache_path);
		if (a->json)
			print_json(&res, ro, corpus, ms, load_ns, time_now_ns() - t0, &st,
				   "interrupted", a->chat_json);
		status = 130;
		goto out;
	}
	if (!a->mo.quiet) {
		cli__say_memo(&res, &pr, a->verbose ? a->ro.store : NULL);
		cli__say_hits(&res);
	}
	if (res.sandbox && res.sandbox->unsafe)
		fprintf(stderr, "rlm: WARNING: the REPL worker ran WITHOUT seccomp "
				"(--unsafe-no-sandbox): %s\n", res.sandbox->line);
	if (rc) {
		if (ro->schema_json && rc == RLM_EINVAL && a->schema_path)
			cli_term_printf(stderr, "rlm: error: the schema '%s': %s\n", a->schema_path,
					err.msg);
		else
			cli_term_printf(stderr, "rlm: error: %s\n", err.msg);
		if (a->json)
			print_json(&res, ro, corpus, ms, load_ns, time_now_ns() - t0, &st, err.msg, a->chat_json);
		if (ro->schema_json && rc == RLM_EINVAL && res.calls == 0)
			status = 2; /* a schema refused before any call: a usage error */
	} else if (ro->schema_json && !res.answer_json) {
		/* Never an answer that did not validate on stdout as if it had. */
		cli_term_printf(stderr, "rlm: stopped (%s): %s\n", rlm_stop_name(res.stop),
				res.stop_detail ? res.stop_detail
						: "the answer never validated under the schema");
		if (res.answer && !a->json)
			cli_term_printf(stderr, "rlm: the last answer, not valid under the schema: "
						"%s\n", res.answer);
		if (a->json)
			print_json(&res, ro, corpus, ms, load_ns, time_now_ns() - t0, &st, NULL, a->chat_json);
		status = 3;
	} else {
		bool limited = res.stop != RLM_STOP_ANSWER;
		if (res.warning)
			cli_term_printf(stderr, "rlm: warning: %s\n", res.warning);
		if (res.stop == RLM_STOP_INCOMPLETE) {
			cli_term_printf(stderr, "rlm: incomplete: %s\n",
				res.stop_detail ? res.stop_detail : "something under the solve failed");
		} else if (res.stop == RLM_STOP_ANSWER && res.failed) {
			char *sum = rlm_failures_summary(&res);
			cli_term_printf(stderr, "rlm: warning: incomplete: %s; the answer may miss "
						"what they would have found\n", sum);
			free(sum);
		} else if (limited)
			cli_term_printf(stderr, "rlm: stopped (%s): %s%s\n", rlm_stop_name(res.stop),
				res.stop_detail ? res.stop_detail : "a limit was reached",
				res.answer ? "; the answer is partial" : "; no answer");
		if (a->json)
			print_json(&res, ro, corpus, ms, load_ns, time_now_ns() - t0, &st, NULL, a->chat_json);
		else if (res.answer)
			cli_term_printf(stdout, "%s\n", res.answer); /* escaped at a terminal */
		if (!a->json)
			print_sources(&res);
		status = limited ? 3 : 0;
	}
	if (res.run_id[0] && !a->json && !sess && (a->verbose || (status != 0 && !a->mo.quiet)))
		fprintf(stderr, "rlm: run %s (rlm runs show %s; rlm solve --resume %s)\n", res.run_id,
			res.run_id, res.run_id);
out:
	rlm_result_release(&res);
	cli__progress_release(&pr);
	return status;
}

/* rlm solve, argv as given (or as resume rebuilt it: resumed_from is then
 * the run it runs again). Returns the exit status. */
static int solve_main(int argc, char **argv, const char *resumed_from, bool chat)
{
	struct solve_args a;
	struct rlm_models ms;
	struct corpus *corpus = NULL;
	struct store *store = NULL;
	struct rlm_err err = {0, ""};
	char *qfile = NULL, *note = NULL, *schema = NULL;
	bool set_up = false;
	int rc, status;
	int64_t t0 = time_now_ns(), load_ns;

	if ((status = solve_args_parse(&a, argc, argv, chat))) {
		cli_tools_opts_release(&a.ro);
		return status == 1 ? 0 : status;
	}
	if ((status = solve_args_check(&a, &qfile, &schema)))
		goto out;
	status = 1;
	a.co.quiet = a.mo.quiet;
	a.co.verbose = a.verbose;
	if (corpus_load(a.context, &a.co, &corpus, &err)) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		goto out;
	}
	load_ns = time_now_ns() - t0;
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
	if (open_store(&a, argc, argv, resumed_from, &store, &note))
		goto out;
	status = a.chat ? cli__chat(&a, &ms, corpus)
		      : cli__solve_print(&a, &ms, corpus, NULL, t0, load_ns);
out:
	if (set_up)
		rlm_models_release(&ms);
	cli_tools_opts_release(&a.ro);
	store_close(store);
	free(note);
	corpus_free(corpus);
	free(qfile);
	free(schema);
	return status;
}

/* ---- runs: the note that lets a run be run again ---- */

/* Variables that shape a solve (no API keys), kept with the run: a run
 * resumed from another shell reaches the same models and endpoints. */
static const char *const note_env[] = {
    "RLM_PROVIDER",	   "RLM_MODEL",	      "RLM_SUB_MODEL",	 "RLM_PRICES",
    "RLM_SIM",		   "RLM_CONCURRENCY", "RLM_TIMEOUT",	 "RLM_MAX_DEPTH",
    "RLM_MAX_NODES",	   "RLM_MAX_CALLS",   "RLM_QUESTION",	 "RLM_SANDBOX_DISABLE",
    "RLM_ZYGOTE",	   "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
};

/* Options (long names, as getopt_long matched them, abbreviated or not)
 * whose value is a path: kept absolute in the note, so that a run resumed
 * from another directory finds its files. */
static const char *const path_opts[] = {"context",	  "question-file",    "cache",
					"prompts",	  "python",	      "prices",
					"schema",	  "mcp-config",	      "system-prompt",
					"system-extra",	  "setup-code",	      "sub-system-extra",
					"sub-setup-code"};
/* Left out of the note: a secret, and what only this run asked. */
static const char *const drop_opts[] = {"api-key", "resume", "refresh", "help", "progress",
					"raw-output"};
/* Kept without the user:password@ of their URLs (nothing else is touched:
 * a question may hold a URL and must stay as it was asked). */
static const char *const url_opts[] = {"base-url"};
static const char *const url_env[] = {"OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"};

static bool among(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, list[i]) == 0)
			return true;
	return false;
}

static cJSON *abs_path(const char *prefix, const char *p)
{
	char cwd[4096], *t;
	cJSON *j;
	if (p[0] == '/' || strcmp(p, "-") == 0 || !getcwd(cwd, sizeof(cwd)))
		t = xasprintf("%s%s", prefix, p);
	else
		t = xasprintf("%s%s/%s", prefix, cwd, p);
	j = cJSON_CreateString(t);
	free(t);
	return j;
}

/* One option as getopt_long parsed it (opt its value, idx its entry in
 * longopts or -1 for a short option), into the note's argv spelt out in
 * full: --name or --name=VALUE. Built from what was parsed, not from the
 * raw words, so that no spelling (--api sk-..., --api-key=..., --ap=...)
 * gets a key in; base URLs lose their user:password@. */
static void note_opt(cJSON *args, int opt, int idx, const char *arg)
{
	const struct option *o = idx >= 0 ? &longopts[idx] : NULL;
	char *t, *pre;
	for (const struct option *p = longopts; !o && p->name; p++)
		if (!p->flag && p->val == opt)
			o = p;
	if (!o || among(o->name, drop_opts, ARRAY_SIZE(drop_opts)))
		return;
	if (!arg) {
		t = xasprintf("--%s", o->name);
		json_add(args, NULL, cJSON_CreateString(t));
		free(t);
		return;
	}
	pre = xasprintf("--%s=", o->name);
	if (among(o->name, path_opts, ARRAY_SIZE(path_opts))) {
		json_add(args, NULL, abs_path(pre, arg));
	} else {
		char *v = among(o->name, url_opts, ARRAY_SIZE(url_opts)) ? text_url_without_userinfo(arg)
									   : xstrdup(arg);
		t = xasprintf("%s%s", pre, v);
		json_add(args, NULL, cJSON_CreateString(t));
		free(t);
		free(v);
	}
	free(pre);
}

/* {"argv":[...],"env":{...},"cwd":"..."}: how this solve was run, to run
 * it again. argv is parsed a second time, as solve_main parsed it (which
 * found no error and no operand), and each option kept as note_opt says. */
static char *run_note(int argc, char **argv)
{
	cJSON *o = cJSON_CreateObject(), *e = cJSON_CreateObject();
	cJSON *args = cJSON_CreateArray();
	char cwd[4096], *s;
	int opt, idx = -1;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, shortopts, longopts, &idx)) != -1) {
		if (opt != '?' && opt != ':')
			note_opt(args, opt, idx, optarg);
		idx = -1;
	}
	json_add(o, "argv", args);
	for (size_t i = 0; i < ARRAY_SIZE(note_env); i++) {
		const char *v = getenv(note_env[i]);
		if (v && *v) {
			char *pub = among(note_env[i], url_env, ARRAY_SIZE(url_env))
					    ? text_url_without_userinfo(v)
					    : xstrdup(v);
			json_add_str(e, note_env[i], pub);
			free(pub);
		}
	}
	json_add(o, "env", e);
	if (getcwd(cwd, sizeof(cwd)))
		json_add_str(o, "cwd", cwd);
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
}

/* rlm solve --resume ID [flags]: the run's own command line (its paths
 * absolute), on the store it was found in, then the flags given now (the
 * later wins), with the run's variables. */
static int resume(int argc, char **argv, const char *id, const char *cache)
{
	struct store_cfg sc = {cache, true, 0};
	struct store *s = NULL;
	struct rlm_err err = {0, ""};
	cJSON *run, *note, *args, *env, *it;
	char **nargv, *full, *path;
	int n = 0, rc;
	if ((rc = store_open(&sc, &s, &err)))
		return log_fail(rc == RLM_ENOTFOUND ? 2 : 1, "--resume %s: %s", id, err.msg);
	run = store_run_load(s, id, &err);
	path = xstrdup(store_path(s));
	store_close(s);
	if (!run)
		return log_fail(2, "--resume %s: %s", id, err.msg);
	note = json_get(run, "note");
	args = json_get(note, "argv");
	if (!cJSON_IsArray(args)) {
		cJSON_Delete(run);
		free(path);
		return log_fail(2,
				"--resume %s: the run was not started by `rlm solve`, so there is no "
				"command line to run again (see `rlm runs show %s`)",
				id, id);
	}
	nargv = xcalloc((size_t)(cJSON_GetArraySize(args) + argc + 3), sizeof(*nargv));
	nargv[n++] = argv[0];
	cJSON_ArrayForEach(it, args)
	{
		if (cJSON_IsString(it))
			nargv[n++] = it->valuestring;
	}
	/* The store the run was found in (RLM_NO_CACHE or not). */
	nargv[n++] = (char *)(uintptr_t) "--cache";
	nargv[n++] = path;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--resume") == 0) {
			i++;
			continue;
		}
		if (strncmp(argv[i], "--resume=", 9) == 0)
			continue;
		nargv[n++] = argv[i];
	}
	/* The run's variables win over this shell's: they shaped it (flags
	 * given now still win over both). But a URL kept without its
	 * user:password@ stays as this shell has it when it is the same. */
	env = json_get(note, "env");
	cJSON_ArrayForEach(it, env)
	{
		const char *cur = getenv(it->string);
		char *pub = cur ? text_url_without_userinfo(cur) : NULL;
		if (cJSON_IsString(it) && (!pub || strcmp(pub, it->valuestring) != 0))
			setenv(it->string, it->valuestring, 1);
		free(pub);
	}
	full = xstrdup(json_str(run, "id"));
	rc = solve_main(n, nargv, full, false);
	free(full);
	free(path);
	free(nargv);
	cJSON_Delete(run);
	return rc;
}

int cli_solve(int argc, char **argv)
{
	const char *id = NULL, *cache = NULL;
	/* --resume and --cache, found before the rest is parsed: the run's
	 * own options come first. */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--resume") == 0 && i + 1 < argc)
			id = argv[++i];
		else if (strncmp(argv[i], "--resume=", 9) == 0)
			id = argv[i] + 9;
		else if (strcmp(argv[i], "--cache") == 0 && i + 1 < argc)
			cache = argv[++i];
		else if (strncmp(argv[i], "--cache=", 8) == 0)
			cache = argv[i] + 8;
	}
	return id ? resume(argc, argv, id, cache) : solve_main(argc, argv, NULL, false);
}

int cli__solve_main(int argc, char **argv, bool chat)
{
	return solve_main(argc, argv, NULL, chat);
}
