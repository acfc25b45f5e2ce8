/* SPDX-License-Identifier: MIT */
/* rlm/cli_solve.c -- `rlm solve`: answer a question over a context. */
#include "cli.h"
#include "cliopt.h"
#include "prompt.h"
#include "rlm.h"
#include "../common/json.h"

#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
	"usage: rlm solve --context PATH --question TEXT [options]\n"
	"\n"
	"Answer a question over a context of any size. The answer goes to stdout.\n"
	"\n"
	"  -c, --context PATH      a text file, a directory (each file a document), a\n"
	"                          JSONL file of documents ({\"text\": ...} per line), or -\n"
	"                          for standard input\n"
	"  -q, --question TEXT     the question (env RLM_QUESTION)\n"
	"      --question-file F   read the question from a file\n"
	"      --format KIND       how to read --context: auto (default), text, dir, jsonl\n"
	"  -s, --strategy NAME     repl (default): the root model sees only the context's\n"
	"                          size and writes Python that a persistent REPL runs with\n"
	"                          the context in `context`, calling sub-models from code;\n"
	"                          tree: the controller cuts the context into parts that\n"
	"                          fit one call, asks every part in parallel, and combines\n"
	"                          the partial answers (for models that cannot write code)\n"
	"      --json              print a JSON object: answer, stop reason, usage per\n"
	"                          model, cost, calls, iterations, timings, the worker's\n"
	"                          sandbox (on failure too), and the child RLMs, nested\n"
	"      --quiet             no progress line or notices on stderr\n"
	"  -v, --verbose           show the worker's sandbox and each turn's reply, code\n"
	"                          and output on stderr (and log retries and other details);\n"
	"                          a child RLM's lines start [dDEPTH nNODE]\n"
	"  -h, --help              this help\n"
	"\n"
	"Limits (repl strategy; on any limit the best partial answer is printed, the\n"
	"reason goes to stderr and to the JSON, and the exit status is 3):\n"
	"      --max-iterations N  root model turns (30); then one last call asks for\n"
	"                          the final answer\n"
	"      --max-errors N      consecutive turns whose code failed (5)\n"
	"      --time-limit SECS   wall clock of the whole solve, enforced mid-call and\n"
	"                          mid-exec (none)\n"
	"      --max-total-tokens N  input + output tokens of all calls (none)\n"
	"      --max-cost USD      cost of all calls, from the price table (none)\n"
	"      --max-sub-calls N   sub-calls made from code, at any depth; a child RLM\n"
	"                          is one (none)\n"
	"      --exec-timeout SECS running time of one code block, sub-calls not counted\n"
	"                          (60): SIGINT first, then the REPL is restarted\n"
	"      --output-limit N    characters of REPL output shown to the model (20000)\n"
	"\n"
	"REPL strategy options:\n"
	"      --max-depth N       levels of RLMs, 1..16 (env RLM_MAX_DEPTH; 2): below the\n"
	"                          last, rlm_query runs a child RLM with a REPL of its own;\n"
	"                          at the last it is a plain sub-call; 1: recursion off\n"
	"      --max-nodes N       child RLMs running on threads of their own at once, in\n"
	"                          the whole solve, 1..1024 (env RLM_MAX_NODES; 8); past it\n"
	"                          a parent runs its children itself, one at a time\n"
	"      --python PATH       the interpreter of the REPL worker (/usr/bin/python3)\n"
	"      --python-fences     also run ```python blocks, not only ```repl\n"
	"      --prompts DIR       take prompt templates from DIR (files named like the\n"
	"                          built-in ones: repl_system.txt, repl_first.txt, ...)\n"
	"\n"
	"Tree strategy options:\n"
	"      --leaf-chars N      bytes of context per part (default: half the sub-model's\n"
	"                          window, at most 200k); accepts k/M suffixes\n"
	"\n"
	"%s"
	"\n"
	"%s"
	"\n"
	"Exit status: 0 answered (the answer may be NONE: nothing in the context held\n"
	"it), 1 failed, 2 bad usage (a bad option or RLM_SANDBOX_DISABLE, a mandatory\n"
	"sandbox layer disabled without --unsafe-no-sandbox: found before any model\n"
	"call), 3 a limit stopped the solve (partial answer).\n"
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
	OPT_FORMAT,
	OPT_LEAF,
	OPT_QUIET,
	OPT_MAX_ITER,
	OPT_MAX_ERRORS,
	OPT_TIME_LIMIT,
	OPT_MAX_TOTAL_TOKENS,
	OPT_MAX_COST,
	OPT_MAX_SUB_CALLS,
	OPT_EXEC_TIMEOUT,
	OPT_OUTPUT_LIMIT,
	OPT_PYTHON,
	OPT_PYTHON_FENCES,
	OPT_PROMPTS,
	OPT_MAX_DEPTH,
	OPT_MAX_NODES,
};

struct progress {
	bool tty;
	pthread_mutex_t mu;
	int64_t last_ns;
};

static void on_progress(const struct rlm_progress *p, void *arg)
{
	struct progress *pr = arg;
	int64_t now = now_ns();
	pthread_mutex_lock(&pr->mu);
	if (now - pr->last_ns > 100000000 || p->done == p->total) {
		pr->last_ns = now;
		if (strcmp(p->phase, "root") == 0)
			fprintf(stderr, "\r\033[Kturn %d: the root model is thinking  %.1f s",
				p->level, (double)p->elapsed_ns / 1e9);
		else if (strcmp(p->phase, "exec") == 0)
			fprintf(stderr, "\r\033[Kturn %d: running code  %.1f s", p->level,
				(double)p->elapsed_ns / 1e9);
		else if (strcmp(p->phase, "sub") == 0)
			fprintf(stderr, "\r\033[Kturn %d: sub-calls %zu/%zu  %.1f s", p->level,
				p->done, p->total, (double)p->elapsed_ns / 1e9);
		else if (strcmp(p->phase, "leaves") == 0)
			fprintf(stderr, "\r\033[Kreading parts %zu/%zu  %.1f s", p->done, p->total,
				(double)p->elapsed_ns / 1e9);
		else
			fprintf(stderr, "\r\033[Kcombining (level %d) %zu/%zu  %.1f s", p->level,
				p->done, p->total, (double)p->elapsed_ns / 1e9);
		fflush(stderr);
	}
	pthread_mutex_unlock(&pr->mu);
}

static void on_event(const struct rlm_event *e, void *arg)
{
	struct progress *pr = arg;
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
	if (strcmp(e->kind, "sandbox") == 0)
		fprintf(stderr, "rlm: %ssandbox: %.*s\n", node,
			(int)RLM_MIN(e->len, (size_t)INT32_MAX), e->text);
	else
		fprintf(stderr, "--- %sturn %d %s (%.1f s)\n%.*s\n", node, e->iteration, what,
			(double)e->elapsed_ns / 1e9, (int)RLM_MIN(e->len, (size_t)INT32_MAX),
			e->text);
	pthread_mutex_unlock(&pr->mu);
}

static cJSON *usage_json(const struct llm_usage *u, double cost)
{
	cJSON *o = cJSON_CreateObject();
	json_add_num(o, "input_tokens", (double)u->input_tokens);
	json_add_num(o, "output_tokens", (double)u->output_tokens);
	json_add_num(o, "cached_tokens", (double)u->cached_tokens);
	json_add_num(o, "cache_write_tokens", (double)u->cache_write_tokens);
	if (cost >= 0)
		json_add_num(o, "cost_usd", cost);
	return o;
}

/* s cut to max characters (code points), with "..." when cut. */
static cJSON *cut_string(const char *s, size_t max)
{
	size_t chars = 0, i = 0;
	cJSON *j;
	char *t;
	for (; s[i]; i++) {
		if (((unsigned char)s[i] & 0xC0) == 0x80)
			continue;
		if (chars++ == max)
			break;
	}
	if (!s[i])
		return cJSON_CreateString(s);
	t = xasprintf("%.*s...", (int)i, s);
	j = cJSON_CreateString(t);
	free(t);
	return j;
}

/* The child RLMs of r, each with its own children. */
static cJSON *children_json(const struct rlm_result *r)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < r->n_children; i++) {
		const struct rlm_result *ch = &r->children[i];
		cJSON *o = cJSON_CreateObject();
		json_add_num(o, "depth", ch->depth);
		json_add_num(o, "node", ch->node);
		json_add(o, "question", cut_string(ch->question ? ch->question : "", 200));
		json_add(o, "answer",
			 ch->answer ? cJSON_CreateString(ch->answer) : cJSON_CreateNull());
		json_add_str(o, "stop", rlm_stop_name(ch->stop));
		if (ch->stop_detail)
			json_add_str(o, "stop_detail", ch->stop_detail);
		json_add(o, "usage", usage_json(&ch->usage, -1));
		json_add_num(o, "cost_usd", ch->cost);
		json_add_num(o, "calls", (double)ch->calls);
		json_add_num(o, "iterations", ch->iterations);
		json_add_num(o, "sub_calls", (double)ch->sub_calls);
		json_add_num(o, "nodes", (double)ch->nodes);
		json_add_num(o, "solve_ms", (double)ch->solve_ns / 1e6);
		if (ch->warning)
			json_add_str(o, "warning", ch->warning);
		json_add(o, "children", children_json(ch));
		json_add(a, NULL, o);
	}
	return a;
}

static void print_json(const struct rlm_result *r, const struct rlm_opts *ro, const struct corpus *c,
		       const struct model_setup *ms, int64_t load_ns, int64_t total_ns,
		       const struct llm_stats *st, const char *error)
{
	cJSON *o = cJSON_CreateObject(), *calls, *ctx, *t, *x, *per;
	bool repl = ro->strategy == RLM_REPL;
	char *s;
	if (error)
		json_add_str(o, "error", error);
	json_add(o, "answer", r->answer ? cJSON_CreateString(r->answer) : cJSON_CreateNull());
	json_add_bool(o, "found", r->found);
	if (repl) {
		json_add_str(o, "stop", rlm_stop_name(r->stop));
		if (r->stop_detail)
			json_add_str(o, "stop_detail", r->stop_detail);
	}
	json_add_str(o, "strategy", repl ? "repl" : "tree");
	json_add_str(o, "provider", llm_kind_name(ms->kind));
	json_add_str(o, "model", llm_model_name(ms->model));
	json_add_str(o, "sub_model", llm_model_name(ms->sub));
	json_add(o, "usage", usage_json(&r->usage, -1));
	json_add_num(o, "cost_usd", r->cost);
	if (repl) {
		per = cJSON_CreateObject();
		json_add(per, "root", usage_json(&r->root_usage, r->root_cost));
		json_add(per, "sub", usage_json(&r->sub_usage, r->sub_cost));
		json_add(o, "usage_by_role", per);
	}
	calls = cJSON_CreateObject();
	json_add_num(calls, "total", (double)r->calls);
	json_add_num(calls, "failed", (double)r->failed_calls);
	json_add_num(calls, "attempts", (double)r->attempts);
	json_add_num(calls, "retries", (double)st->retries);
	if (repl) {
		/* Model calls: the root node's own, and the rest (its
		 * sub-calls and its child RLMs' calls), as usage_by_role. */
		json_add_num(calls, "root", (double)r->root_calls);
		json_add_num(calls, "sub", (double)(r->calls - r->root_calls));
	}
	json_add(o, "calls", calls);
	x = cJSON_CreateObject();
	if (repl) {
		json_add_num(x, "iterations", r->iterations);
		json_add_num(x, "error_turns", r->error_turns);
		json_add_num(x, "execs", r->execs);
		json_add_num(x, "restarts", r->restarts);
		json_add(o, "repl", x);
	} else {
		json_add_num(x, "parts", (double)r->leaves);
		json_add_num(x, "failed_parts", (double)r->failed_leaves);
		json_add_num(x, "combine_levels", r->levels);
		json_add_num(x, "part_bytes", (double)r->leaf_chars);
		json_add(o, "tree", x);
	}
	ctx = cJSON_CreateObject();
	json_add_str(ctx, "source", c->source);
	json_add_str(ctx, "kind", corpus_kind_name(c->kind));
	json_add_num(ctx, "documents", (double)c->n_docs);
	json_add_num(ctx, "bytes", (double)c->len);
	json_add_num(ctx, "tokens_estimate", (double)llm_estimate_tokens(c->len));
	json_add_num(ctx, "skipped_files", (double)c->skipped);
	json_add(o, "context", ctx);
	t = cJSON_CreateObject();
	json_add_num(t, "load_ms", (double)load_ns / 1e6);
	json_add_num(t, "solve_ms", (double)r->solve_ns / 1e6);
	json_add_num(t, "total_ms", (double)total_ns / 1e6);
	if (repl) {
		json_add_num(t, "root_ms", (double)r->root_ns / 1e6);
		json_add_num(t, "exec_ms", (double)r->exec_ns / 1e6);
		json_add_num(t, "sub_calls_ms", (double)r->sub_ns / 1e6);
		json_add_num(t, "worker_start_ms", (double)r->worker_start_ns / 1e6);
	}
	json_add(o, "timings", t);
	if (repl && r->sandbox)
		json_add(o, "sandbox", sandbox_status_json(r->sandbox));
	if (r->warning)
		json_add_str(o, "warning", r->warning);
	if (repl) {
		json_add_num(o, "depth", r->depth);
		json_add_num(o, "max_depth", ro->max_depth ? ro->max_depth : RLM_DEF_MAX_DEPTH);
		json_add_num(o, "sub_calls", (double)r->sub_calls);
		json_add_num(o, "nodes", (double)r->nodes);
		json_add(o, "children", children_json(r));
	}
	s = cJSON_Print(o);
	puts(s);
	free(s);
	cJSON_Delete(o);
}

/* RLM_MAX_DEPTH and RLM_MAX_NODES, which the flags override. Returns 0,
 * or 2 after saying which variable is bad. */
static int recursion_env(struct rlm_opts *ro)
{
	const char *v;
	long num;
	if ((v = getenv("RLM_MAX_DEPTH")) && *v) {
		if (parse_int(v, 1, 16, &num))
			return cli_fail(2, "bad value '%s' for RLM_MAX_DEPTH: want 1..16", v);
		ro->max_depth = (int)num;
	}
	if ((v = getenv("RLM_MAX_NODES")) && *v) {
		if (parse_int(v, 1, 1024, &num))
			return cli_fail(2, "bad value '%s' for RLM_MAX_NODES: want 1..1024", v);
		ro->max_nodes = (int)num;
	}
	return 0;
}

static char *read_question_file(const char *path)
{
	char *q;
	size_t len;
	struct rlm_err err = {0, ""};
	if (read_file(path, 1 << 20, &q, &len, &err)) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		return NULL;
	}
	while (len && (q[len - 1] == '\n' || q[len - 1] == '\r'))
		q[--len] = '\0';
	return q;
}

int cmd_solve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"context", required_argument, NULL, 'c'},
		{"question", required_argument, NULL, 'q'},
		{"question-file", required_argument, NULL, OPT_QFILE},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"strategy", required_argument, NULL, 's'},
		{"leaf-chars", required_argument, NULL, OPT_LEAF},
		{"max-iterations", required_argument, NULL, OPT_MAX_ITER},
		{"max-errors", required_argument, NULL, OPT_MAX_ERRORS},
		{"time-limit", required_argument, NULL, OPT_TIME_LIMIT},
		{"max-total-tokens", required_argument, NULL, OPT_MAX_TOTAL_TOKENS},
		{"max-cost", required_argument, NULL, OPT_MAX_COST},
		{"max-sub-calls", required_argument, NULL, OPT_MAX_SUB_CALLS},
		{"exec-timeout", required_argument, NULL, OPT_EXEC_TIMEOUT},
		{"output-limit", required_argument, NULL, OPT_OUTPUT_LIMIT},
		{"python", required_argument, NULL, OPT_PYTHON},
		{"python-fences", no_argument, NULL, OPT_PYTHON_FENCES},
		{"prompts", required_argument, NULL, OPT_PROMPTS},
		{"max-depth", required_argument, NULL, OPT_MAX_DEPTH},
		{"max-nodes", required_argument, NULL, OPT_MAX_NODES},
		{"json", no_argument, NULL, OPT_JSON},
		{"quiet", no_argument, NULL, OPT_QUIET},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		MODEL_LONGOPTS,
		SANDBOX_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	struct model_opts mo;
	struct model_setup ms;
	struct corpus_opts co = {0};
	struct corpus *corpus = NULL;
	struct rlm_opts ro = {0};
	struct rlm_result res = {0};
	struct rlm_err err = {0, ""};
	struct progress pr = {false, PTHREAD_MUTEX_INITIALIZER, 0};
	struct llm_stats st;
	const char *context = NULL, *question = getenv("RLM_QUESTION");
	char *qfile = NULL;
	const char *qpath = NULL; /* --question-file, the last of -q and it */
	bool json = false, verbose = false;
	uint64_t leaf = 0, count;
	long num;
	double secs;
	int opt, rc, status = 1;
	int64_t t0 = now_ns(), load_ns;

	model_opts_init(&mo);
	if ((rc = recursion_env(&ro)))
		return rc;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":c:q:s:vh", longopts, NULL)) != -1) {
		int taken = model_opts_take(&mo, opt, optarg);
		if (!taken)
			taken = sandbox_opts_take(&ro.sandbox, opt, optarg);
		if (taken == 2)
			return 2;
		if (taken)
			continue;
		switch (opt) {
		case 'c': context = optarg; break;
		case 'q':
			question = optarg;
			qpath = NULL;
			break;
		case OPT_QFILE: /* read once the options are known good */
			qpath = optarg;
			question = NULL;
			break;
		case OPT_FORMAT:
			if (corpus_kind_parse(optarg, &co.kind))
				return cli_fail(2, "unknown --format '%s' (known: auto, text, dir, jsonl)",
						optarg);
			break;
		case 's':
			if (strcmp(optarg, "repl") == 0)
				ro.strategy = RLM_REPL;
			else if (strcmp(optarg, "tree") == 0)
				ro.strategy = RLM_TREE;
			else
				return cli_fail(2, "unknown strategy '%s' (known: repl, tree)", optarg);
			break;
		case OPT_MAX_ITER:
			if (parse_int(optarg, 1, 10000, &num))
				return cli_fail(2, "bad value '%s' for --max-iterations: want 1..10000",
						optarg);
			ro.max_iterations = (int)num;
			break;
		case OPT_MAX_ERRORS:
			if (parse_int(optarg, 1, 10000, &num))
				return cli_fail(2, "bad value '%s' for --max-errors: want 1..10000",
						optarg);
			ro.max_errors = (int)num;
			break;
		case OPT_TIME_LIMIT:
			if (parse_double(optarg, 0.001, 1e7, &secs))
				return cli_fail(2, "bad value '%s' for --time-limit: want seconds > 0",
						optarg);
			ro.timeout_ns = (int64_t)(secs * 1e9);
			break;
		case OPT_MAX_TOTAL_TOKENS:
			if (parse_count(optarg, &count) || count == 0 || count > INT64_MAX)
				return cli_fail(2, "bad value '%s' for --max-total-tokens: want a count "
						   "> 0 (k/M suffixes)", optarg);
			ro.max_tokens = (int64_t)count;
			break;
		case OPT_MAX_COST:
			if (parse_double(optarg, 1e-9, 1e9, &ro.max_cost))
				return cli_fail(2, "bad value '%s' for --max-cost: want USD > 0", optarg);
			break;
		case OPT_MAX_SUB_CALLS:
			if (parse_count(optarg, &count) || count == 0 || count > INT64_MAX)
				return cli_fail(2, "bad value '%s' for --max-sub-calls: want a count > 0",
						optarg);
			ro.max_sub_calls = (int64_t)count;
			break;
		case OPT_EXEC_TIMEOUT:
			if (parse_double(optarg, 0.001, 1e7, &secs))
				return cli_fail(2, "bad value '%s' for --exec-timeout: want seconds > 0",
						optarg);
			ro.exec_timeout_ns = (int64_t)(secs * 1e9);
			break;
		case OPT_OUTPUT_LIMIT:
			if (parse_count(optarg, &count) || count < 100 || count > (1u << 26))
				return cli_fail(2, "bad value '%s' for --output-limit: want 100..64M "
						   "characters", optarg);
			ro.output_limit = (size_t)count;
			break;
		case OPT_PYTHON:
			if (access(optarg, X_OK))
				return cli_fail(2, "--python '%s' is not an executable file", optarg);
			ro.python = optarg;
			break;
		case OPT_PYTHON_FENCES: ro.python_fences = true; break;
		case OPT_MAX_DEPTH:
			if (parse_int(optarg, 1, 16, &num))
				return cli_fail(2, "bad value '%s' for --max-depth: want 1..16", optarg);
			ro.max_depth = (int)num;
			break;
		case OPT_MAX_NODES:
			if (parse_int(optarg, 1, 1024, &num))
				return cli_fail(2, "bad value '%s' for --max-nodes: want 1..1024",
						optarg);
			ro.max_nodes = (int)num;
			break;
		case OPT_PROMPTS:
			if (prompt_set_dir(optarg, &err))
				return cli_fail(2, "%s", err.msg);
			break;
		case OPT_LEAF:
			if (parse_count(optarg, &leaf) || leaf < 256 || leaf > (1u << 30))
				return cli_fail(2, "bad value '%s' for --leaf-chars: want 256..1G",
						optarg);
			break;
		case OPT_JSON: json = true; break;
		case OPT_QUIET: mo.quiet = true; break;
		case 'v':
			rlm_log_level = LOG_DEBUG;
			verbose = true;
			break;
		case 'h': printf(usage, model_opts_help, sandbox_opts_help); return 0;
		case ':': return cli_fail(2, "option '%s' needs a value", argv[optind - 1]);
		default: return cli_fail(2, "unknown option '%s' (see rlm solve --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_fail(2, "unexpected argument '%s' (see rlm solve --help)", argv[optind]);
	if (qpath) {
		if (!(qfile = read_question_file(qpath)))
			return 2;
		question = qfile;
	}
	if (!context) {
		free(qfile);
		return cli_fail(2, "no context: pass --context PATH (a file, a directory, a "
				   "JSONL file, or - for stdin)");
	}
	if (!question || !*question) {
		free(qfile);
		return cli_fail(2, "the question is empty: pass --question TEXT");
	}
	if (!utf8_valid(question, strlen(question), NULL)) {
		free(qfile);
		return cli_fail(2, "the question is not valid UTF-8");
	}
	/* A sandbox the worker would refuse is a usage error, found before
	 * the context is read or a model is called. */
	if (ro.strategy == RLM_REPL && repl_sandbox_check(&ro.sandbox, &err)) {
		free(qfile);
		return cli_fail(2, "%s", err.msg);
	}

	co.quiet = mo.quiet;
	if ((rc = corpus_load(context, &co, &corpus, &err))) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		free(qfile);
		return 1;
	}
	load_ns = now_ns() - t0;
	if ((rc = model_setup(&mo, &ms, &err))) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		corpus_free(corpus);
		free(qfile);
		return rc == RLM_EINVAL ? 2 : 1;
	}

	pr.tty = !mo.quiet && isatty(2);
	ro.pool = ms.pool;
	ro.model = ms.model;
	ro.sub_model = ms.sub;
	ro.params = ms.params;
	ro.leaf_chars = (size_t)leaf;
	ro.window = (size_t)mo.concurrency * 2;
	if (pr.tty) {
		ro.progress = on_progress;
		ro.progress_arg = &pr;
	}
	if (verbose) {
		ro.event = on_event;
		ro.event_arg = &pr;
	}
	rc = rlm_solve(&ro, question, corpus, &res, &err);
	if (pr.tty)
		fprintf(stderr, "\r\033[K");
	if (res.sandbox && res.sandbox->unsafe)
		fprintf(stderr, "rlm: WARNING: the REPL worker ran WITHOUT seccomp "
				"(--unsafe-no-sandbox): %s\n", res.sandbox->line);
	llm_pool_stats(ms.pool, &st);
	if (rc) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		if (json)
			print_json(&res, &ro, corpus, &ms, load_ns, now_ns() - t0, &st, err.msg);
	} else {
		bool limited = ro.strategy == RLM_REPL && res.stop != RLM_STOP_ANSWER;
		if (res.warning)
			fprintf(stderr, "rlm: warning: %s\n", res.warning);
		if (limited)
			fprintf(stderr, "rlm: stopped (%s): %s%s\n", rlm_stop_name(res.stop),
				res.stop_detail ? res.stop_detail : "a limit was reached",
				res.answer ? "; the answer is partial" : "; no answer");
		if (json)
			print_json(&res, &ro, corpus, &ms, load_ns, now_ns() - t0, &st, NULL);
		else if (res.answer)
			printf("%s\n", res.answer);
		status = limited ? 3 : 0;
	}
	rlm_result_release(&res);
	model_teardown(&ms);
	corpus_free(corpus);
	free(qfile);
	return status;
}
