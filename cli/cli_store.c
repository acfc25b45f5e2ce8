/* SPDX-License-Identifier: MIT */
/* cli/cli_store.c -- `rlm cache stats|prune|clear` and `rlm runs
 * list|show|export`: the store from the command line. */
#include "cli.h"
#include "cli_int.h"
#include "../common/json.h"
#include "../store/export.h"
#include "../store/store.h"
#include "../common/text.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char cache_usage[] =
	"usage: rlm cache COMMAND [--cache PATH] [options]\n"
	"\n"
	"The store: a SQLite file that keeps every model call (a call asked again is\n"
	"answered from it), child RLMs' answers, and every solve as a run.\n"
	"\n"
	"  stats             rows, hits, what the hits saved, the file's size\n"
	"      --json        as a JSON object\n"
	"  prune --older-than DAYS\n"
	"                    forget cached calls and answers not used for DAYS days,\n"
	"                    and runs that ended that long ago; then shrink the file\n"
	"  clear             forget everything cached and recorded (skills stay:\n"
	"                    they are code, not cache; rlm skills rm retires one)\n"
	"\n"
	"      --cache PATH  the store (env RLM_CACHE; default $XDG_CACHE_HOME/rlm/rlm.db\n"
	"                    or ~/.cache/rlm/rlm.db)\n";

static const char runs_usage[] =
	"usage: rlm runs COMMAND [--cache PATH] [options]\n"
	"\n"
	"Every `rlm solve` is recorded as a run in the store: its question, context,\n"
	"options, status, answer, usage and every step (turns, code, output, model\n"
	"calls, child RLMs). A run id may be shortened to any unique prefix.\n"
	"\n"
	"  list [-n N]       the newest N runs (20; 0: all): id, status, age, model\n"
	"                    calls (memo and cache hits included; - while running),\n"
	"                    question. The status: done (a whole answer), incomplete\n"
	"                    (sub-calls, child RLMs or the worker failed under it:\n"
	"                    the answer may miss what they would have read), stopped:\n"
	"                    LIMIT (e.g. stopped: max_iterations), interrupted\n"
	"                    (cancelled or timed out: --resume goes on), failed,\n"
	"                    running\n"
	"      --json        as a JSON array\n"
	"  show ID           the run as a tree of nodes, each with its turns, code,\n"
	"                    output (cut) and model calls; the runs it is linked to:\n"
	"                    the one it resumes and those that resume it, the run\n"
	"                    whose answer it took from the memo and those that took\n"
	"                    its answer\n"
	"      --json        the whole record as one JSON object\n"
	"  export ID --format jsonl|html [-o FILE]\n"
	"                    jsonl: the reference RLM library's trajectory format (its\n"
	"                    visualizer opens it); html: one self-contained page that\n"
	"                    shows the tree of nodes, turns, code, output, sub-calls,\n"
	"                    timings and cost, offline. To stdout unless -o\n"
	"\n"
	"      --cache PATH  the store (env RLM_CACHE; default as for rlm solve)\n"
	"      --raw-output  write the runs' text (questions, replies, code, output,\n"
	"                    answers) to a terminal as it is; by default a terminal\n"
	"                    gets its control characters shown escaped, as \\x1b (in\n"
	"                    JSON as \\u001b), so that no ESC sequence from a model\n"
	"                    or a request acts on it (a pipe or a file gets the bytes)\n"
	"\n"
	"`rlm solve --resume ID` runs a run again, its calls answered from the store.\n";

enum { OPT_CACHE = 1000, OPT_JSON, OPT_OLDER, OPT_FORMAT, OPT_RAW_OUTPUT };

#define MAX_SHOW_DEPTH 32 /* levels of nodes rlm runs show follows */

struct store_args {
	const char *cache;
	bool json;
	double older_days;
	long limit;
	const char *format;
	const char *out;
	int first; /* argv index of the first operand */
};

/* Options after the subcommand. Returns 0, or an exit status. */
static int parse(int argc, char **argv, struct store_args *a, const char *usage,
		 const char *cmd)
{
	static const struct option longopts[] = {
		{"cache", required_argument, NULL, OPT_CACHE},
		{"json", no_argument, NULL, OPT_JSON},
		{"older-than", required_argument, NULL, OPT_OLDER},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"output", required_argument, NULL, 'o'},
		{"raw-output", no_argument, NULL, OPT_RAW_OUTPUT},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int opt;
	char *end;
	memset(a, 0, sizeof(*a));
	a->older_days = -1;
	a->limit = 20;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":n:o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_CACHE: a->cache = optarg; break;
		case OPT_JSON: a->json = true; break;
		case OPT_OLDER:
			a->older_days = strtod(optarg, &end);
			if (end == optarg || *end || !(a->older_days >= 0) || a->older_days > 1e6)
				return log_fail(2, "bad value '%s' for --older-than: want days >= 0",
						optarg);
			break;
		case OPT_FORMAT: a->format = optarg; break;
		case OPT_RAW_OUTPUT: cli_raw_output = true; break;
		case 'o': a->out = optarg; break;
		case 'n':
			a->limit = strtol(optarg, &end, 10);
			if (end == optarg || *end || a->limit < 0)
				return log_fail(2, "bad value '%s' for -n: want a count >= 0", optarg);
			break;
		case 'h': fputs(usage, stdout); return -1;
		case ':': return log_fail(2, "option '%s' needs a value", argv[optind - 1]);
		default:
			return log_fail(2, "unknown option '%s' (see rlm %s --help)", argv[optind - 1],
					cmd);
		}
	}
	a->first = optind;
	return 0;
}

int cli__store_open(const char *path, bool readonly, struct store **s)
{
	struct store_cfg sc = {path, readonly, 0};
	struct rlm_err err = {0, ""};
	int rc = store_open(&sc, s, &err);
	if (rc)
		return log_fail(rc == RLM_ENOTFOUND ? 2 : 1, "%s", err.msg);
	return 0;
}

static int open_store(const struct store_args *a, bool readonly, struct store **s)
{
	return cli__store_open(a->cache, readonly, s);
}

/* A string member, "" when there is none. */
static const char *js(const cJSON *o, const char *key)
{
	const char *s = json_str(o, key);
	return s ? s : "";
}

static void human_bytes(char *dst, size_t cap, double v)
{
	const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int i = 0;
	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	snprintf(dst, cap, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

/* ---- rlm cache ---- */

int cli_cache(int argc, char **argv)
{
	struct store_args a;
	struct store *s = NULL;
	struct rlm_err err = {0, ""};
	const char *sub = argc > 1 ? argv[1] : NULL;
	int rc;
	if (!sub || strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0) {
		fputs(cache_usage, sub ? stdout : stderr);
		return sub ? 0 : 2;
	}
	if (strcmp(sub, "stats") && strcmp(sub, "prune") && strcmp(sub, "clear"))
		return log_fail(2, "unknown cache command '%s' (known: stats, prune, clear)", sub);
	if ((rc = parse(argc - 1, argv + 1, &a, cache_usage, "cache")))
		return rc < 0 ? 0 : rc;
	if (a.first < argc - 1)
		return log_fail(2, "unexpected argument '%s' (see rlm cache --help)",
				argv[1 + a.first]);
	if (strcmp(sub, "prune") == 0 && a.older_days < 0)
		return log_fail(2, "prune needs --older-than DAYS (0: everything not in use now)");
	if ((rc = open_store(&a, strcmp(sub, "stats") == 0, &s)))
		return rc;
	if (strcmp(sub, "stats") == 0) {
		struct store_stats st;
		char b[32];
		if (store_stats(s, &st, &err) < 0) {
			store_close(s);
			return log_fail(1, "%s", err.msg);
		}
		if (a.json) {
			cJSON *o = cJSON_CreateObject(), *sv = cJSON_CreateObject();
			char *t;
			json_add_str(o, "path", store_path(s));
			json_add_num(o, "bytes", (double)st.bytes);
			json_add_num(o, "calls", (double)st.calls);
			json_add_num(o, "results", (double)st.results);
			json_add_num(o, "runs", (double)st.runs);
			json_add_num(o, "events", (double)st.events);
			json_add_num(o, "call_hits", (double)st.call_hits);
			json_add_num(o, "result_hits", (double)st.result_hits);
			json_add_num(sv, "input_tokens", (double)st.saved_usage.input_tokens);
			json_add_num(sv, "output_tokens", (double)st.saved_usage.output_tokens);
			json_add_num(sv, "cost_usd", st.saved_cost);
			json_add(o, "saved", sv);
			t = cJSON_Print(o);
			puts(t);
			free(t);
			cJSON_Delete(o);
		} else {
			human_bytes(b, sizeof(b), (double)st.bytes);
			printf("store    %s (%s)\n", store_path(s), b);
			printf("calls    %lld cached, %lld hits\n", (long long)st.calls,
			       (long long)st.call_hits);
			printf("results  %lld child answers, %lld hits\n", (long long)st.results,
			       (long long)st.result_hits);
			printf("runs     %lld, %lld events\n", (long long)st.runs, (long long)st.events);
			printf("saved    %lld input and %lld output tokens, $%.4f\n",
			       (long long)st.saved_usage.input_tokens,
			       (long long)st.saved_usage.output_tokens, st.saved_cost);
		}
	} else {
		int64_t removed = 0;
		bool prune = strcmp(sub, "prune") == 0;
		if ((prune ? store_prune(s, (int64_t)(a.older_days * 86400e3), &removed, &err)
			   : store_clear(s, &err)) < 0) {
			store_close(s);
			return log_fail(1, "%s", err.msg);
		}
		if (prune)
			printf("removed %lld rows from %s\n", (long long)removed, store_path(s));
		else
			printf("cleared %s\n", store_path(s));
		/* The rows are gone either way; a file not shrunk is no failure. */
		if (store_shrink(s, &err) < 0)
			fprintf(stderr, "rlm: warning: the file was not shrunk: %s\n", err.msg);
	}
	store_close(s);
	return 0;
}

/* ---- rlm runs ---- */

static void age(char *dst, size_t cap, int64_t ms)
{
	int64_t now = (int64_t)time(NULL) * 1000, d = (now - ms) / 1000;
	if (d < 120)
		snprintf(dst, cap, "%llds ago", (long long)(d < 0 ? 0 : d));
	else if (d < 7200)
		snprintf(dst, cap, "%lldm ago", (long long)(d / 60));
	else if (d < 172800)
		snprintf(dst, cap, "%lldh ago", (long long)(d / 3600));
	else
		snprintf(dst, cap, "%lldd ago", (long long)(d / 86400));
}

/* One line of text, cut to max characters, with newlines as spaces (and
 * controls escaped at a terminal: the text is a model's or a client's). */
static void oneline(const char *s, size_t max)
{
	size_t n = s ? text_utf8_offset(s, strlen(s), max) : 0;
	char *t = xstrndup(s ? s : "", n);
	for (size_t i = 0; i < n; i++)
		if (t[i] == '\n' || t[i] == '\r' || t[i] == '\t')
			t[i] = ' ';
	cli_term_write(stdout, t, n, 0);
	free(t);
	if (s && s[n])
		fputs("...", stdout);
}

/* Text as indented lines: at most max_lines, each cut (controls escaped
 * at a terminal). */
static void block(const char *s, const char *indent, int max_lines)
{
	int lines = 0;
	while (s && *s && lines < max_lines) {
		const char *nl = strchr(s, '\n');
		size_t n = nl ? (size_t)(nl - s) : strlen(s);
		size_t cut = n > 160 ? text_utf8_floor(s, 160) : n;
		cli_term_printf(stdout, "%s%.*s%s\n", indent, (int)cut, s, n > 160 ? "..." : "");
		lines++;
		s = nl ? nl + 1 : s + n;
	}
	if (s && *s)
		printf("%s[... more]\n", indent);
}

/* The ids of a JSON array of strings, comma-separated, after label and
 * before tail on one line; nothing when there are none. */
static void id_list(const char *label, const cJSON *ids, const char *tail)
{
	const cJSON *it;
	bool first = true;
	if (cJSON_GetArraySize(ids) <= 0)
		return;
	printf("%s", label);
	cJSON_ArrayForEach(it, ids)
	{
		if (!cJSON_IsString(it))
			continue;
		printf("%s%s", first ? "" : ", ", it->valuestring);
		first = false;
	}
	printf("%s\n", tail);
}

/* The runs a run is linked to: the run whose answer it took from the
 * memo, and those that resume it or took its answer. */
static void show_links(const cJSON *run, const cJSON *res)
{
	const cJSON *memo = json_get(res, "memo");
	if (cJSON_IsObject(memo)) {
		const char *from = json_str(memo, "run");
		const cJSON *calls = json_get(memo, "calls");
		if (from)
			printf("memo      answered from the memo: the answer of run %s (%s); it "
			       "ran nothing\n",
			       from, js(memo, "date"));
		else
			printf("memo      answered from the memo (the run that made the answer "
			       "is no longer in the store); it ran nothing\n");
		if (cJSON_IsObject(calls))
			printf("          the answer took %.0f model calls, $%.4f, when it was "
			       "made\n",
			       json_num(calls, "total", 0), json_num(memo, "cost_usd", 0));
	}
	id_list("resumed by ", json_get(run, "resumed_by"), "");
	id_list("reused by ", json_get(run, "memo_runs"), " (answered from its memo)");
}

static void show_node(const cJSON *events, int node, int depth)
{
	const cJSON *e;
	char ind[80];
	int calls = 0, cached = 0, last_iter = -1;
	double cost = 0;
	snprintf(ind, sizeof(ind), "%*s", 2 * depth + 2, "");
	cJSON_ArrayForEach(e, events)
	{
		const char *kind = js(e, "kind");
		const char *text = js(e, "text");
		int en = (int)json_num(e, "node", -1), it = (int)json_num(e, "iteration", 0);
		const cJSON *d = json_get(e, "data");
		if (strcmp(kind, "child") == 0 && (int)json_num(e, "parent", -2) == node) {
			printf("%s-> child node %d (depth %d): ", ind, en,
			       (int)json_num(e, "depth", 0));
			oneline(text, 100);
			putchar('\n');
			/* A record that says a node is its own ancestor is not
			 * followed further than a tree could be deep. */
			if (en != node && depth < MAX_SHOW_DEPTH)
				show_node(events, en, depth + 1);
			continue;
		}
		if (en != node)
			continue;
		if (strcmp(kind, "call") == 0) {
			calls++;
			cached += cJSON_IsTrue(json_get(d, "cached"));
			cost += json_num(d, "cost", 0);
			continue;
		}
		if (it != last_iter && it > 0 &&
		    (!strcmp(kind, "reply") || !strcmp(kind, "code") || !strcmp(kind, "output"))) {
			printf("%sturn %d (%.1f s)\n", ind, it, json_num(e, "t_ns", 0) / 1e9);
			last_iter = it;
		}
		if (strcmp(kind, "reply") == 0) {
			printf("%s  reply: ", ind);
			oneline(text, 120);
			putchar('\n');
		} else if (strcmp(kind, "code") == 0) {
			char in2[96];
			snprintf(in2, sizeof(in2), "%s  | ", ind);
			printf("%s  code:\n", ind);
			block(text, in2, 12);
		} else if (strcmp(kind, "output") == 0) {
			char in2[96];
			snprintf(in2, sizeof(in2), "%s  > ", ind);
			printf("%s  output:\n", ind);
			block(text, in2, 8);
		} else if (strcmp(kind, "tool") == 0) {
			/* a host tool or skill request: what, and how it went */
			printf("%s  %s %s: ", ind, js(d, "op"), cJSON_IsTrue(json_get(d, "ok")) ? "ok" : "failed");
			oneline(text, 100);
			if (!cJSON_IsTrue(json_get(d, "ok"))) {
				printf(" (%s: ", js(d, "kind"));
				oneline(js(d, "error"), 160);
				putchar(')');
			}
			putchar('\n');
		} else if (strcmp(kind, "notice") == 0) {
			printf("%s  notice: ", ind);
			oneline(text, 160);
			putchar('\n');
		} else if (strcmp(kind, "child_end") == 0) {
			printf("%s<- answer (%s%s): ", ind, js(d, "stop"),
			       cJSON_IsTrue(json_get(d, "memo")) ? ", from the memo" : "");
			oneline(text, 160);
			putchar('\n');
		}
	}
	printf("%smodel calls: %d (%d from the cache), $%.4f\n", ind, calls, cached, cost);
}

/* Whether the answer rests on everything the solve asked and, when not,
 * what failed under it: "complete  no: 16 failures" and one line each. */
static void show_failures(const cJSON *res)
{
	const cJSON *f = json_get(res, "failures"), *it;
	const cJSON *complete = json_get(res, "complete");
	double failed = json_num(res, "failed", (double)cJSON_GetArraySize(f));
	int shown = 0;
	if (!cJSON_IsBool(complete))
		return; /* a run recorded before the flag */
	if (cJSON_IsTrue(complete)) {
		printf("complete  yes\n");
		return;
	}
	if (failed <= 0) {
		printf("complete  no: the solve did not end on its answer\n");
		return;
	}
	printf("complete  no: %.0f failure%s under the solve\n", failed, failed == 1 ? "" : "s");
	cJSON_ArrayForEach(it, f)
	{
		if (shown++ == 10) {
			printf("          ... (rlm runs show --json lists %d)\n", cJSON_GetArraySize(f));
			break;
		}
		printf("  failed  %s, node %.0f (depth %.0f): ", js(it, "kind"), json_num(it, "node", 0),
		       json_num(it, "depth", 0));
		oneline(js(it, "reason"), 200);
		putchar('\n');
	}
}

/* The discovery health of the run's host tools and skills, when it had
 * any (docs/tools.md). */
static void show_tools(const cJSON *res)
{
	const cJSON *t = json_get(res, "tools");
	if (!cJSON_IsObject(t))
		return;
	printf("tools     %.0f server%s; %.0f call%s (%.0f answered), %.0f discovery step%s "
	       "(%.0f listings, %.0f searches, %.0f infos)\n",
	       json_num(t, "servers", 0), json_num(t, "servers", 0) == 1 ? "" : "s",
	       json_num(t, "calls", 0), json_num(t, "calls", 0) == 1 ? "" : "s",
	       json_num(t, "calls_ok", 0), json_num(t, "discovery", 0),
	       json_num(t, "discovery", 0) == 1 ? "" : "s", json_num(t, "listings", 0),
	       json_num(t, "searches", 0), json_num(t, "infos", 0));
	printf("          %.0f without reading the tool's info first, %.0f refused by its "
	       "schema, %.0f by the policy, %.0f by the budget; %.0f repeated discovery\n",
	       json_num(t, "calls_without_info", 0), json_num(t, "schema_refused", 0),
	       json_num(t, "policy_refused", 0), json_num(t, "budget_refused", 0),
	       json_num(t, "repeated_discovery", 0));
	if (json_num(t, "skill_discovery", 0) || json_num(t, "skills_loaded", 0) ||
	    json_num(t, "skills_saved", 0))
		printf("skills    %.0f discovery step%s, %.0f loaded, %.0f saved\n",
		       json_num(t, "skill_discovery", 0),
		       json_num(t, "skill_discovery", 0) == 1 ? "" : "s",
		       json_num(t, "skills_loaded", 0), json_num(t, "skills_saved", 0));
}

static int runs_show(const cJSON *run, bool json)
{
	const cJSON *res = json_get(run, "result");
	char a[32];
	if (json) {
		cJSON *view = store_run_public(run);
		char *t = cJSON_Print(view);
		cli_term_write(stdout, t, strlen(t), TEXT_TERM_JSON);
		putchar('\n');
		free(t);
		cJSON_Delete(view);
		return 0;
	}
	age(a, sizeof(a), (int64_t)json_num(run, "created_ms", 0));
	printf("run       %s (%s, %s)\n", js(run, "id"), js(run, "status"), a);
	if (js(run, "resumed_from")[0])
		printf("resumes   %s\n", js(run, "resumed_from"));
	show_links(run, res);
	printf("question  ");
	oneline(js(run, "question"), 200);
	cli_term_printf(stdout, "\ncontext   %s, %.0f bytes, digest %.12s\n",
	       js(run, "context_source")[0] ? js(run, "context_source") : "(given)",
	       json_num(run, "context_bytes", 0), js(run, "context_digest"));
	if (res) {
		const cJSON *src = json_get(res, "sources"), *it;
		printf("answer    ");
		oneline(js(res, "answer"), 300);
		if (cJSON_GetArraySize(src) > 0) {
			bool first = true;
			printf("\nsources   ");
			cJSON_ArrayForEach(it, src)
			{
				printf("%s", first ? "" : ", ");
				oneline(js(it, "doc"), 200);
				first = false;
			}
		}
		printf("\nstop      %s; %.0f model calls (%.0f from the cache), $%.4f, %.1f s\n",
		       js(res, "stop")[0] ? js(res, "stop") : "-",
		       json_num(json_get(res, "calls"), "total", 0),
		       json_num(json_get(res, "calls"), "cached", 0), json_num(res, "cost_usd", 0),
		       json_num(json_get(res, "timings"), "solve_ms", 0) / 1e3);
		if (js(res, "stop_detail")[0]) {
			printf("          ");
			oneline(js(res, "stop_detail"), 300);
			putchar('\n');
		}
		show_failures(res);
		show_tools(res);
	}
	printf("\nnode 0 (root)\n");
	show_node(json_get(run, "events"), 0, 0);
	return 0;
}

int cli_runs(int argc, char **argv)
{
	struct store_args a;
	struct store *s = NULL;
	struct rlm_err err = {0, ""};
	const char *sub = argc > 1 ? argv[1] : NULL, *id;
	cJSON *run;
	int rc, status = 0;
	if (!sub || strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0) {
		fputs(runs_usage, sub ? stdout : stderr);
		return sub ? 0 : 2;
	}
	if (strcmp(sub, "list") && strcmp(sub, "show") && strcmp(sub, "export"))
		return log_fail(2, "unknown runs command '%s' (known: list, show, export)", sub);
	if ((rc = parse(argc - 1, argv + 1, &a, runs_usage, "runs")))
		return rc < 0 ? 0 : rc;
	argc--;
	argv++;
	if (strcmp(sub, "list") == 0) {
		cJSON *list, *r;
		if (a.first < argc)
			return log_fail(2, "unexpected argument '%s' (see rlm runs --help)",
					argv[a.first]);
		if ((rc = open_store(&a, true, &s)))
			return rc;
		list = store_runs_list(s, (size_t)a.limit, &err);
		store_close(s);
		if (!list)
			return log_fail(1, "%s", err.msg);
		if (a.json) {
			cJSON *pub = cJSON_CreateArray();
			char *t;
			cJSON_ArrayForEach(r, list)
			{
				cJSON *view = store_run_public(r);
				json_add(pub, NULL, cJSON_Duplicate(view, true));
				cJSON_Delete(view);
			}
			t = cJSON_Print(pub);
			cli_term_write(stdout, t, strlen(t), TEXT_TERM_JSON);
			putchar('\n');
			free(t);
			cJSON_Delete(pub);
			cJSON_Delete(list);
			return 0;
		}
		printf("%-24s %-23s %-9s %6s  %s\n", "id", "status", "age", "calls", "question");
		cJSON_ArrayForEach(r, list)
		{
			char ag[32], calls[24] = "-";
			age(ag, sizeof(ag), (int64_t)json_num(r, "created_ms", 0));
			if (cJSON_IsNumber(json_get(r, "calls")))
				snprintf(calls, sizeof(calls), "%.0f", json_num(r, "calls", 0));
			printf("%-24s %-23s %-9s %6s  ", js(r, "id"), js(r, "status"), ag, calls);
			oneline(js(r, "question"), 60);
			putchar('\n');
		}
		cJSON_Delete(list);
		return 0;
	}
	if (a.first >= argc)
		return log_fail(2, "runs %s needs a run id (rlm runs list shows them)", sub);
	if (a.first + 1 < argc)
		return log_fail(2, "unexpected argument '%s' (see rlm runs --help)",
				argv[a.first + 1]);
	id = argv[a.first];
	if (strcmp(sub, "export") == 0 &&
	    (!a.format || (strcmp(a.format, "jsonl") && strcmp(a.format, "html"))))
		return log_fail(2, "export needs --format jsonl or --format html");
	if ((rc = open_store(&a, true, &s)))
		return rc;
	run = store_run_load(s, id, &err);
	store_close(s);
	if (!run)
		return log_fail(err.code == RLM_ENOTFOUND || err.code == RLM_EINVAL ? 2 : 1, "%s",
				err.msg);
	if (strcmp(sub, "show") == 0) {
		status = runs_show(run, a.json);
	} else {
		char *text = strcmp(a.format, "jsonl") == 0 ? store_export_jsonl(run, &err)
							    : store_export_html(run, &err);
		if (!text) {
			status = log_fail(1, "cannot export run %s: %s", id, err.msg);
		} else if (a.out) {
			FILE *f = fopen(a.out, "w");
			bool ok = f && fputs(text, f) >= 0;
			if (f && fclose(f) != 0)
				ok = false;
			if (!ok)
				status = log_fail(1, "cannot write '%s': %s", a.out, strerror(errno));
		} else {
			cli_term_write(stdout, text, strlen(text),
				       strcmp(a.format, "jsonl") == 0 ? TEXT_TERM_JSON : 0);
		}
		free(text);
	}
	cJSON_Delete(run);
	return status;
}
