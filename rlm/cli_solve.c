/* SPDX-License-Identifier: MIT */
/* rlm/cli_solve.c -- `rlm solve`: answer a question over a context. */
#include "cli.h"
#include "cliopt.h"
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
	"  -s, --strategy NAME     tree: the controller cuts the context into parts that\n"
	"                          fit one call, asks every part in parallel, and combines\n"
	"                          the partial answers (default and, for now, only)\n"
	"      --leaf-chars N      bytes of context per part (default: half the sub-model's\n"
	"                          window, at most 200k); accepts k/M suffixes\n"
	"      --json              print a JSON object: answer, usage, cost, calls, timings\n"
	"                          (on failure too: with \"error\" and what was spent)\n"
	"      --quiet             no progress line or notices on stderr\n"
	"  -v, --verbose           log retries and other details on stderr\n"
	"  -h, --help              this help\n"
	"\n"
	"%s"
	"\n"
	"Exit status: 0 answered (the answer may be NONE: nothing in the context held\n"
	"it), 1 failed, 2 bad usage.\n"
	"\n"
	"Examples:\n"
	"  rlm solve -c notes/ -q 'Which meeting moved the launch date?'\n"
	"  rlm solve -c corpus.jsonl -q 'How many reports mention a fire?' --json\n"
	"  rlm solve -c big.txt -q '...' --provider openai --model gpt-5-mini\n"
	"  rlm solve -c big.txt -q '...' --base-url http://127.0.0.1:8000/v1 --model qwen3\n";

enum { OPT_JSON = OPT_MODEL_LAST + 1, OPT_QFILE, OPT_FORMAT, OPT_LEAF, OPT_QUIET };

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
		if (strcmp(p->phase, "leaves") == 0)
			fprintf(stderr, "\r\033[Kreading parts %zu/%zu  %.1f s", p->done, p->total,
				(double)p->elapsed_ns / 1e9);
		else
			fprintf(stderr, "\r\033[Kcombining (level %d) %zu/%zu  %.1f s", p->level,
				p->done, p->total, (double)p->elapsed_ns / 1e9);
		fflush(stderr);
	}
	pthread_mutex_unlock(&pr->mu);
}

static const char *kind_name(enum corpus_kind k)
{
	switch (k) {
	case CORPUS_TEXT: return "text";
	case CORPUS_DIR: return "dir";
	case CORPUS_JSONL: return "jsonl";
	default: return "auto";
	}
}

static void print_json(const struct rlm_result *r, const struct corpus *c,
		       const struct model_setup *ms, int64_t load_ns, int64_t total_ns,
		       const struct llm_stats *st, const char *error)
{
	cJSON *o = cJSON_CreateObject(), *u, *calls, *ctx, *t, *tree;
	char *s;
	if (error)
		json_add_str(o, "error", error);
	json_add(o, "answer", r->answer ? cJSON_CreateString(r->answer) : cJSON_CreateNull());
	json_add_bool(o, "found", r->found);
	json_add_str(o, "strategy", "tree");
	json_add_str(o, "provider", llm_kind_name(ms->kind));
	json_add_str(o, "model", llm_model_name(ms->model));
	json_add_str(o, "sub_model", llm_model_name(ms->sub));
	u = cJSON_CreateObject();
	json_add_num(u, "input_tokens", (double)r->usage.input_tokens);
	json_add_num(u, "output_tokens", (double)r->usage.output_tokens);
	json_add_num(u, "cached_tokens", (double)r->usage.cached_tokens);
	json_add_num(u, "cache_write_tokens", (double)r->usage.cache_write_tokens);
	json_add(o, "usage", u);
	json_add_num(o, "cost_usd", r->cost);
	calls = cJSON_CreateObject();
	json_add_num(calls, "total", (double)r->calls);
	json_add_num(calls, "failed", (double)r->failed_calls);
	json_add_num(calls, "attempts", (double)r->attempts);
	json_add_num(calls, "retries", (double)st->retries);
	json_add(o, "calls", calls);
	tree = cJSON_CreateObject();
	json_add_num(tree, "parts", (double)r->leaves);
	json_add_num(tree, "failed_parts", (double)r->failed_leaves);
	json_add_num(tree, "combine_levels", r->levels);
	json_add_num(tree, "part_bytes", (double)r->leaf_chars);
	json_add(o, "tree", tree);
	ctx = cJSON_CreateObject();
	json_add_str(ctx, "source", c->source);
	json_add_str(ctx, "kind", kind_name(c->kind));
	json_add_num(ctx, "documents", (double)c->n_docs);
	json_add_num(ctx, "bytes", (double)c->len);
	json_add_num(ctx, "tokens_estimate", (double)llm_estimate_tokens(c->len));
	json_add_num(ctx, "skipped_files", (double)c->skipped);
	json_add(o, "context", ctx);
	t = cJSON_CreateObject();
	json_add_num(t, "load_ms", (double)load_ns / 1e6);
	json_add_num(t, "solve_ms", (double)r->solve_ns / 1e6);
	json_add_num(t, "total_ms", (double)total_ns / 1e6);
	json_add(o, "timings", t);
	if (r->warning)
		json_add_str(o, "warning", r->warning);
	s = cJSON_Print(o);
	puts(s);
	free(s);
	cJSON_Delete(o);
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
		{"json", no_argument, NULL, OPT_JSON},
		{"quiet", no_argument, NULL, OPT_QUIET},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		MODEL_LONGOPTS,
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
	bool json = false;
	uint64_t leaf = 0;
	int opt, rc, status = 1;
	int64_t t0 = now_ns(), load_ns;

	model_opts_init(&mo);
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":c:q:s:vh", longopts, NULL)) != -1) {
		int taken = model_opts_take(&mo, opt, optarg);
		if (taken == 2)
			return 2;
		if (taken)
			continue;
		switch (opt) {
		case 'c': context = optarg; break;
		case 'q': question = optarg; break;
		case OPT_QFILE:
			free(qfile);
			if (!(qfile = read_question_file(optarg)))
				return 2;
			question = qfile;
			break;
		case OPT_FORMAT:
			if (strcmp(optarg, "auto") == 0)
				co.kind = CORPUS_AUTO;
			else if (strcmp(optarg, "text") == 0)
				co.kind = CORPUS_TEXT;
			else if (strcmp(optarg, "dir") == 0)
				co.kind = CORPUS_DIR;
			else if (strcmp(optarg, "jsonl") == 0)
				co.kind = CORPUS_JSONL;
			else
				return cli_fail(2, "unknown --format '%s' (known: auto, text, dir, jsonl)",
						optarg);
			break;
		case 's':
			if (strcmp(optarg, "tree") != 0)
				return cli_fail(2, "unknown strategy '%s' (known: tree)", optarg);
			break;
		case OPT_LEAF:
			if (parse_count(optarg, &leaf) || leaf < 256 || leaf > (1u << 30))
				return cli_fail(2, "bad value '%s' for --leaf-chars: want 256..1G",
						optarg);
			break;
		case OPT_JSON: json = true; break;
		case OPT_QUIET: mo.quiet = true; break;
		case 'v': rlm_log_level = LOG_DEBUG; break;
		case 'h': printf(usage, model_opts_help); return 0;
		case ':': return cli_fail(2, "option '%s' needs a value", argv[optind - 1]);
		default: return cli_fail(2, "unknown option '%s' (see rlm solve --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_fail(2, "unexpected argument '%s' (see rlm solve --help)", argv[optind]);
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
	ro.strategy = RLM_TREE;
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
	rc = rlm_solve(&ro, question, corpus, &res, &err);
	if (pr.tty)
		fprintf(stderr, "\r\033[K");
	llm_pool_stats(ms.pool, &st);
	if (rc) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		if (json)
			print_json(&res, corpus, &ms, load_ns, now_ns() - t0, &st, err.msg);
	} else {
		if (res.warning)
			fprintf(stderr, "rlm: warning: %s\n", res.warning);
		if (json)
			print_json(&res, corpus, &ms, load_ns, now_ns() - t0, &st, NULL);
		else
			printf("%s\n", res.answer);
		status = 0;
	}
	rlm_result_release(&res);
	model_teardown(&ms);
	corpus_free(corpus);
	free(qfile);
	return status;
}
