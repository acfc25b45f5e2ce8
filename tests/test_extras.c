/* SPDX-License-Identifier: MIT */
/* tests/test_extras.c -- the caller's additions to repl nodes (rlm_opts
 * system_prompt, system_extra, setup_code and their sub_ forms, sub_tools),
 * the "turn" / "turn_end" detail events and what "child" / "child_end"
 * carry, and the sub-model's own provider, endpoint, key and extra body
 * (rlm_models_cfg sub_*): real workers, the root model a fake server on
 * loopback whose recorded requests show what each node was sent. */
#include "loopenv.h"
#include "../store/store.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The system prompt (message 0) of root-server request i, fresh. */
static char *system_of(struct env *v, size_t i)
{
	const char *role = NULL;
	char *m = message(v->root_srv, i, 0, &role);
	CHECK_STR(role, "system");
	return m;
}

static void check_absent(const char *hay, const char *needle)
{
	CHECK_MSG(hay && !strstr(hay, needle), "'%s' should not be in: %.300s", needle,
		  hay ? hay : "(null)");
}

/* A host tool: {"q": str} -> "seen <q>" */
static int host_echo(void *arg, const char *args_json, char **out)
{
	cJSON *a = json_parse(args_json, strlen(args_json));
	(void)arg;
	*out = xasprintf("\"seen %s\"", a ? json_str(a, "q") : "?");
	cJSON_Delete(a);
	return 0;
}

static struct tool_set *echo_tools(void)
{
	struct tool_set *ts = rlm_tools_new();
	struct rlm_err err = {0, ""};
	CHECK_MSG(rlm_tool_register(ts, "echo",
				    "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":"
				    "\"string\"}},\"required\":[\"q\"]}",
				    "Echo a query back", true, host_echo, NULL, &err) == 0,
		  "%s", err.msg);
	return ts;
}

/* ---- setup code ---- */

/* Setup code of another shape than a one-liner: imports, a class, a long
 * line, output that must not reach the model. */
static const char setup_defs[] =
    "import re, json\n"
    "class Lookup:\n"
    "    '''what the caller's setup made'''\n"
    "    def __init__(self):\n"
    "        self.table = {'alpha': 1, 'beta': 2, 'gamma': 3}\n"
    "def lookup(word):\n"
    "    return Lookup().table.get(word, -1)\n"
    "LONG = '" /* a long line */
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    "'\n"
    "print('SETUP-NOISE: this output is never shown')\n";

TEST(setup_code_defines_what_model_code_calls)
{
	struct env v;
	env_init(&v, SUB_SIM);
	v.o.setup_code = setup_defs;
	says(&v, "```repl\nprint('L', lookup('beta') + lookup('gamma'), len(LONG))\n```");
	says(&v, "FINAL(five)");
	CHECK_INT(solve(&v, "what is beta plus gamma?"), 0);
	CHECK_STR(v.r.answer, "five");
	CHECK_INT(fakesrv_count(v.root_srv), 2);
	CHECK_MSG_HAS(&v, 1, -1, "REPL output:\nL 5 176");
	for (size_t i = 0; i < 2; i++) {
		cJSON *j = request(v.root_srv, i);
		char *body = json_print(j);
		check_absent(body, "SETUP-NOISE");
		free(body);
		cJSON_Delete(j);
	}
	env_free(&v);
}

TEST(setup_code_that_raises_fails_before_any_model_call)
{
	struct env v;
	env_init(&v, SUB_SIM);
	v.o.setup_code = "import json\nx = json.loads('{}')\n"
			 "raise ValueError('the index is missing: ' + 'idx' * 3)\n";
	says(&v, "FINAL(never)");
	CHECK_INT(solve(&v, "q?"), RLM_EINVAL);
	CHECK_STR(v.err.msg, "setup code raised: ValueError: the index is missing: idxidxidx");
	CHECK(v.r.stop == RLM_STOP_ERROR);
	CHECK_CONTAINS(v.r.stop_detail, "setup code raised: ValueError");
	CHECK_INT(fakesrv_count(v.root_srv), 0);
	CHECK(!v.r.answer);
	env_free(&v);
}

TEST(setup_code_runs_again_after_a_worker_restart)
{
	struct env v;
	env_init(&v, SUB_SIM);
	v.o.setup_code = "def helper():\n    return 'from-setup'\nmine = 'mine'\n";
	/* In its pid namespace the worker is pid 1, which ignores its own
	 * SIGKILL: then it exits instead (as test_loop does). */
	says(&v,
	     "```repl\nprint(helper())\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"
	     "os._exit(1)\n```");
	says(&v, "```repl\nprint('after', helper(), mine)\n```");
	says(&v, "FINAL(ok)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "ok");
	CHECK_INT(v.r.restarts, 1);
	CHECK_MSG_HAS(&v, 2, -1, "REPL output:\nafter from-setup mine");
	check_absent(v.events.p, "notice:2"); /* no error of the setup's */
	env_free(&v);
}

static int ask(struct env *v, struct rlm_session *s, const char *q)
{
	rlm_result_release(&v->r);
	return rlm_session_solve(s, NULL, q, &v->r, &v->err);
}

TEST(setup_code_runs_once_per_worker_in_a_session)
{
	struct env v;
	struct rlm_session *s = NULL;
	struct rlm_session_info in;
	static const char count[] = "```repl\nanswer['content'] = 'runs=%d' % n_setup\n"
				    "answer['ready'] = True\n```";
	env_init(&v, SUB_SIM);
	/* raises NameError in model code unless it ran in this worker */
	v.o.setup_code = "try:\n    n_setup += 1\nexcept NameError:\n    n_setup = 1\n";
	CHECK_MSG(rlm_session_new(&v.o, v.ctx, &s, &v.err) == 0, "%s", v.err.msg);
	for (int i = 0; i < 3; i++) {
		says(&v, count);
		CHECK_MSG(ask(&v, s, "How often did the setup run?") == 0, "%s", v.err.msg);
		CHECK_STR(v.r.answer, "runs=1");
	}
	/* a worker that died between questions: the new one runs it */
	rlm_session_info(s, &in);
	CHECK(in.pid > 0);
	CHECK_INT(kill(in.pid, SIGKILL), 0);
	says(&v, count);
	CHECK_MSG(ask(&v, s, "And now?") == 0, "%s", v.err.msg);
	CHECK_STR(v.r.answer, "runs=1");
	{
		/* a question with other setup code runs it in the same worker;
		 * the same code again does not run a second time */
		struct rlm_opts o2 = v.o;
		o2.setup_code = "n_setup += 10\n";
		for (int i = 0; i < 2; i++) {
			says(&v, count);
			rlm_result_release(&v.r);
			CHECK_MSG(rlm_session_solve(s, &o2, "And with other setup?", &v.r,
						    &v.err) == 0,
				  "%s", v.err.msg);
			CHECK_STR(v.r.answer, "runs=11");
		}
	}
	rlm_session_free(s);
	env_free(&v);
}

/* ---- system prompts ---- */

TEST(system_prompt_replaces_the_built_in_one)
{
	struct env v;
	char *sys;
	const char *custom = "You are a careful analyst working in a Python REPL.\n"
			     "Write ```repl blocks; the data is in `context`.";
	env_init(&v, SUB_SIM);
	v.o.system_prompt = custom;
	v.o.system_extra = "EXTRA: lookup(word) is defined for you.";
	v.o.tools = echo_tools();
	v.o.schema_json = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}},"
			  "\"required\":[\"n\"]}";
	says(&v, "```repl\nanswer['content'] = {'n': 3}\nanswer['ready'] = True\n```");
	CHECK_INT(solve(&v, "how many words?"), 0);
	CHECK_STR(v.r.answer, "{\"n\":3}");
	sys = system_of(&v, 0);
	/* verbatim at the start; the built-in's first line absent */
	CHECK_MSG(strncmp(sys, custom, strlen(custom)) == 0, "starts: %.200s", sys);
	check_absent(sys, "You are a Recursive Language Model");
	check_absent(sys, "How to work:");
	{
		const char *sb = strstr(sys, "The REPL is sandboxed");
		const char *tools = strstr(sys, "\nHost tools: 1 tool server");
		const char *schema = strstr(sys, "\"required\":[\"n\"]");
		const char *extra = strstr(sys, "\n\nEXTRA: lookup(word)");
		CHECK_MSG(sb && tools && schema && extra, "paragraphs missing: %s", sys);
		if (sb && tools && schema && extra)
			CHECK_MSG(sys + strlen(custom) < sb && sb < tools && tools < schema &&
				      schema < extra,
				  "order: %s", sys);
	}
	free(sys);
	rlm_tools_free(v.o.tools);
	env_free(&v);
}

/* Root: asks one child, prints what it got and which setup names it has;
 * the child (the next reply of the same fake server) answers with what
 * its own setup defined. */
static void root_and_child(struct env *v)
{
	says(v, "```repl\nr = rlm_query('what does subhelper say?')\n"
		"print('GOT', r, 'roothelper' in globals(), 'subhelper' in globals())\n```");
	says(v, "```repl\nanswer['content'] = '%s %s' % (subhelper(), 'roothelper' in globals())\n"
		"answer['ready'] = True\n```");
	says(v, "FINAL(done)");
}

TEST(extras_and_setup_reach_the_root_and_sub_ones_the_children)
{
	struct env v;
	char *root_sys, *child_sys;
	env_init(&v, SUB_SIM);
	v.o.system_extra = "ROOT-EXTRA: roothelper() is defined.";
	v.o.sub_system_extra = "SUB-EXTRA: subhelper() is defined.";
	v.o.setup_code = "def roothelper():\n    return 'R'\n";
	v.o.sub_setup_code = "def subhelper():\n    return 'child-setup-ran'\n";
	root_and_child(&v);
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "done");
	CHECK_INT(fakesrv_count(v.root_srv), 3);
	root_sys = system_of(&v, 0);
	child_sys = system_of(&v, 1);
	CHECK_CONTAINS(root_sys, "You are a Recursive Language Model");
	CHECK_CONTAINS(root_sys, "\n\nROOT-EXTRA: roothelper() is defined.");
	check_absent(root_sys, "SUB-EXTRA");
	CHECK_CONTAINS(child_sys, "You are a Recursive Language Model");
	CHECK_CONTAINS(child_sys, "\n\nSUB-EXTRA: subhelper() is defined.");
	check_absent(child_sys, "ROOT-EXTRA");
	/* the child's code saw its setup, not the root's; the root's the
	 * other way round */
	CHECK_MSG_HAS(&v, 2, -1, "REPL output:\nGOT child-setup-ran False True False");
	free(root_sys);
	free(child_sys);
	env_free(&v);
}

TEST(system_prompt_reaches_children_too)
{
	struct env v;
	char *child_sys;
	env_init(&v, SUB_SIM);
	v.o.system_prompt = "CUSTOM PROMPT for every node.";
	v.o.sub_setup_code = "def subhelper():\n    return 'x'\n";
	root_and_child(&v);
	CHECK_INT(solve(&v, "q?"), 0);
	child_sys = system_of(&v, 1);
	CHECK_MSG(strncmp(child_sys, "CUSTOM PROMPT for every node.", 29) == 0, "%.100s",
		  child_sys);
	check_absent(child_sys, "You are a Recursive Language Model");
	free(child_sys);
	env_free(&v);
}

TEST(sub_tools_empty_gives_children_no_tools)
{
	struct env v;
	char *root_sys, *child_sys;
	env_init(&v, SUB_SIM);
	v.o.tools = echo_tools();
	v.o.sub_tools = rlm_tools_new(); /* empty: no host tools below the root */
	says(&v, "```repl\nprint('T', call_tool('echo', q='hi'))\n"
		 "r = rlm_query('use a tool')\nprint('GOT', r)\n```");
	says(&v, "```repl\ntry:\n    call_tool('echo', q='child')\n    how = 'CALLED'\n"
		 "except ToolError as e:\n    how = 'CHILD-REFUSED ' + e.kind\n"
		 "answer['content'] = '%s S %s' % (how, list_tool_servers())\n"
		 "answer['ready'] = True\n```");
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "q?"), 0);
	root_sys = system_of(&v, 0);
	child_sys = system_of(&v, 1);
	CHECK_CONTAINS(root_sys, "\n\nHost tools: 1 tool server is connected.");
	check_absent(child_sys, "Host tools:");
	check_absent(child_sys, "call_tool");
	CHECK_MSG_HAS(&v, 2, -1, "T seen hi\nGOT CHILD-REFUSED notfound S []");
	/* and the children's set differs in the config (the memo's key) */
	{
		char *c1 = rlm_config_json(&v.o), *c2;
		struct tool_set *keep = v.o.sub_tools;
		v.o.sub_tools = NULL;
		c2 = rlm_config_json(&v.o);
		CHECK_CONTAINS(c1, "\"sub_tools\":\"");
		check_absent(c2, "sub_tools");
		v.o.sub_tools = keep;
		free(c1);
		free(c2);
	}
	rlm_tools_free(v.o.tools);
	rlm_tools_free(v.o.sub_tools);
	env_free(&v);
}

TEST(config_json_has_the_extras_only_when_set)
{
	struct env v;
	char *plain, *with, *other;
	env_init(&v, SUB_SIM);
	plain = rlm_config_json(&v.o);
	v.o.system_prompt = "P";
	v.o.system_extra = "E";
	v.o.setup_code = "x = 1";
	v.o.sub_system_extra = "SE";
	v.o.sub_setup_code = "y = 2";
	with = rlm_config_json(&v.o);
	v.o.setup_code = "x = 2";
	other = rlm_config_json(&v.o);
	for (size_t i = 0; i < 6; i++) {
		static const char *keys[] = {"system_prompt",	 "system_extra",   "setup_code",
					     "sub_system_extra", "sub_setup_code", "sub_tools"};
		char k[40];
		snprintf(k, sizeof(k), "\"%s\"", keys[i]);
		check_absent(plain, k);
		if (i < 5)
			CHECK_CONTAINS(with, k);
	}
	/* a digest, never the text */
	check_absent(with, "x = 1");
	CHECK(strcmp(with, other) != 0);
	/* what was there before is unchanged */
	CHECK(strncmp(plain, with, strlen(plain) - 1) == 0);
	free(plain);
	free(with);
	free(other);
	env_free(&v);
}

/* ---- events ---- */

struct evlog {
	pthread_mutex_t mu;
	struct buf b; /* "kind n<node> i<iteration> <data>\n" */
};

static void on_detail(const struct rlm_event *e, void *arg)
{
	struct evlog *g = arg;
	pthread_mutex_lock(&g->mu);
	buf_printf(&g->b, "%s n%d d%d i%d %s\n", e->kind, e->node, e->depth, e->iteration,
		   e->data_json ? e->data_json : "-");
	pthread_mutex_unlock(&g->mu);
}

/* The lines of g for node, kinds turn/turn_end/reply/output only, as
 * "kind:iteration " joined. */
static char *turns_of(struct evlog *g, int node)
{
	struct buf o = BUF_INIT;
	char want[16];
	const char *p = g->b.p;
	snprintf(want, sizeof(want), " n%d ", node);
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char kind[32];
		int nd, d, it;
		if (sscanf(p, "%31s n%d d%d i%d", kind, &nd, &d, &it) == 4 && nd == node &&
		    (!strcmp(kind, "turn") || !strcmp(kind, "turn_end") || !strcmp(kind, "reply") ||
		     !strcmp(kind, "output")))
			buf_printf(&o, "%s:%d ", kind, it);
		p += n + (nl ? 1 : 0);
	}
	(void)want;
	return buf_detach(&o, NULL);
}

TEST(turn_events_per_node_only_to_the_callback)
{
	struct env v;
	struct evlog g = {PTHREAD_MUTEX_INITIALIZER, BUF_INIT};
	struct store *st = NULL;
	struct store_cfg sc = {0};
	struct rlm_err e = {0, ""};
	char *path = xasprintf("%s/extras-events.db", harness_tmpdir()), *root, *child;
	cJSON *run, *evs, *ev;
	env_init(&v, SUB_SIM);
	sc.path = path;
	CHECK_MSG(store_open(&sc, &st, &e) == 0, "%s", e.msg);
	v.o.store = st;
	v.o.event = on_detail;
	v.o.event_arg = &g;
	v.o.detail_events = true;
	v.o.trajectory = true;
	root_and_child(&v);
	v.o.sub_setup_code = "def subhelper():\n    return 'x'\n";
	CHECK_INT(solve(&v, "turn events?"), 0);
	root = turns_of(&g, 0);
	child = turns_of(&g, 1);
	CHECK_STR(root, "turn:1 reply:1 output:1 turn_end:1 turn:2 reply:2 turn_end:2 ");
	CHECK_STR(child, "turn:1 reply:1 output:1 turn_end:1 ");
	CHECK_CONTAINS(g.b.p, "turn n0 d0 i1 {\"iteration\":1}\n");
	CHECK_CONTAINS(g.b.p, "turn n1 d1 i1 {\"iteration\":1}\n");
	CHECK_CONTAINS(g.b.p, "turn_end n1 d1 i1 {\"iteration\":1,\"ms\":");
	/* the child's turn lies inside the root's first */
	{
		const char *c0 = strstr(g.b.p, "turn n1 "), *c1 = strstr(g.b.p, "turn_end n1 ");
		const char *r1 = strstr(g.b.p, "turn_end n0 d0 i1");
		CHECK(c0 && c1 && r1 && c0 < c1 && c1 < r1);
	}
	/* not in the store's events, nor in the trajectory */
	run = store_run_load(st, v.r.run_id, &e);
	CHECK_MSG(run, "%s", e.msg);
	evs = json_get(run, "events");
	CHECK(cJSON_GetArraySize(evs) > 5);
	cJSON_ArrayForEach(ev, evs)
	{
		const char *k = json_str(ev, "kind");
		CHECK_MSG(strcmp(k, "turn") && strcmp(k, "turn_end"), "stored event %s", k);
	}
	CHECK_INT(v.r.n_turns, 2);
	for (size_t i = 0; i < v.r.n_turns; i++)
		CHECK_INT(v.r.turns[i].n_notices, 0);
	cJSON_Delete(run);
	/* without detail_events, none */
	buf_release(&g.b);
	rlm_result_release(&v.r);
	v.o.detail_events = false;
	v.o.store = NULL;
	root_and_child(&v);
	CHECK_INT(solve(&v, "turn events?"), 0);
	check_absent(g.b.p, "turn");
	free(root);
	free(child);
	store_close(st);
	free(path);
	buf_release(&g.b);
	env_free(&v);
}

TEST(child_events_carry_model_time_and_error)
{
	struct env v;
	struct evlog g = {PTHREAD_MUTEX_INITIALIZER, BUF_INIT};
	const char *p;
	env_init(&v, SUB_SIM);
	v.o.event = on_detail;
	v.o.event_arg = &g;
	v.o.detail_events = true;
	/* the children's setup raises: each child fails before its first call */
	v.o.sub_setup_code = "raise RuntimeError('no database for children')\n";
	says(&v,
	     "```repl\nrs = rlm_query_batched(['one?', 'two?'])\nprint('GOT', rs[0][:40])\n```");
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(fakesrv_count(v.root_srv), 2); /* no child called the model */
	CHECK_MSG_HAS(&v, 1, -1, "GOT Error: child RLM failed: setup code");
	CHECK_CONTAINS(g.b.p, "\nchild n1 d1 i0 {\"model\":\"root-m\"}\n");
	CHECK_CONTAINS(g.b.p, "\nchild n2 d1 i0 {\"model\":\"root-m\"}\n");
	p = strstr(g.b.p, "child_end n1 d1 i0 ");
	CHECK_MSG(p, "%s", g.b.p);
	if (p) {
		const char *nl = strchr(p, '\n'), *js = strchr(p, '{');
		cJSON *d = json_parse(js, (size_t)(nl - js));
		CHECK(d);
		CHECK_STR(json_str(d, "model"), "root-m");
		CHECK_STR(json_str(d, "stop"), "error");
		CHECK(json_num(d, "ms", -1) >= 0);
		CHECK_STR(json_str(d, "error"),
			  "setup code raised: RuntimeError: no database for children");
		CHECK(json_get(d, "calls") && json_get(d, "usage") && json_get(d, "memo"));
		cJSON_Delete(d);
	}
	/* a child that answered: error null */
	buf_release(&g.b);
	rlm_result_release(&v.r);
	v.o.sub_setup_code = NULL;
	says(&v, "```repl\nprint(rlm_query('one?'))\n```");
	says(&v, "FINAL(child says hi)");
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "q?"), 0);
	p = strstr(g.b.p, "child_end n");
	CHECK_MSG(p, "%s", g.b.p);
	if (p) {
		const char *nl = strchr(p, '\n'), *js = strchr(p, '{');
		cJSON *d = json_parse(js, (size_t)(nl - js));
		CHECK(d && cJSON_IsNull(json_get(d, "error")));
		CHECK_STR(json_str(d, "stop"), "answer");
		CHECK_STR(json_str(d, "model"), "root-m");
		cJSON_Delete(d);
	}
	buf_release(&g.b);
	env_free(&v);
}

/* ---- the sub-model's own endpoint, key, extra body, provider ---- */

static const char anthropic_ok[] =
    "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":"
    "\"text\",\"text\":\"from claude\"}],\"stop_reason\":\"end_turn\",\"usage\":"
    "{\"input_tokens\":10,\"output_tokens\":5}}";

/* A solve whose root code makes one sub-call, on models built by
 * rlm_models_init from c; the root server plays two replies. */
static int models_solve(struct rlm_models_cfg *c, struct fakesrv *root, struct rlm_result *r,
			struct rlm_err *err)
{
	struct rlm_models ms;
	struct rlm_opts o = {0};
	struct corpus *ctx = corpus_from_text("a b c\n", 6);
	int rc = rlm_models_init(&ms, c, err);
	CHECK_MSG(rc == 0, "rlm_models_init: %s", err->msg);
	if (rc) {
		corpus_free(ctx);
		return rc;
	}
	says_full(root, "```repl\nprint('SUB', llm_query('say something'))\n```", "stop", 10, 5, 0);
	says_full(root, "FINAL(ok)", "stop", 10, 5, 0);
	o.strategy = RLM_REPL;
	o.pool = ms.pool;
	o.model = ms.model;
	o.sub_model = ms.sub;
	o.params = ms.params;
	rc = rlm_solve(&o, "q?", ctx, r, err);
	rlm_models_release(&ms);
	corpus_free(ctx);
	return rc;
}

TEST(sub_base_url_key_and_extra_reach_only_sub_calls)
{
	struct fakesrv *a = fakesrv_start(), *b = fakesrv_start();
	struct rlm_models_cfg c;
	struct rlm_result r;
	struct rlm_err err = {0, ""};
	char ua[160], ub[160];
	const struct fake_request *q;
	snprintf(ua, sizeof(ua), "%s/v1", fakesrv_url(a));
	snprintf(ub, sizeof(ub), "%s/v1", fakesrv_url(b));
	says_full(b, "from the sub server", "stop", 10, 5, 0);
	rlm_models_cfg_init(&c);
	c.provider = "openai";
	c.model = "root-m";
	c.base_url = ua;
	c.api_key = "key-root";
	c.extra_json = "{\"seed\":7}";
	c.sub_model = "sub-m";
	c.sub_base_url = ub;
	c.sub_api_key = "key-sub";
	c.sub_extra_json = "{\"reasoning_effort\":\"low\"}";
	c.max_retries = 0;
	c.concurrency = 4;
	c.quiet = true;
	CHECK_INT(models_solve(&c, a, &r, &err), 0);
	CHECK_STR(r.answer, "ok");
	CHECK_INT(fakesrv_count(a), 2);
	CHECK_INT(fakesrv_count(b), 1);
	for (size_t i = 0; i < 2; i++) {
		q = fakesrv_request(a, i);
		CHECK_STR(fake_header(q, "Authorization"), "Bearer key-root");
		CHECK_CONTAINS(q->body, "\"model\":\"root-m\"");
		CHECK_CONTAINS(q->body, "\"seed\":7");
		check_absent(q->body, "reasoning_effort");
	}
	q = fakesrv_request(b, 0);
	CHECK_STR(q->path, "/v1/chat/completions");
	CHECK_STR(fake_header(q, "Authorization"), "Bearer key-sub");
	CHECK_CONTAINS(q->body, "\"model\":\"sub-m\"");
	CHECK_CONTAINS(q->body, "\"reasoning_effort\":\"low\"");
	check_absent(q->body, "\"seed\"");
	{
		char *m = message(a, 1, -1, NULL);
		CHECK_CONTAINS(m, "SUB from the sub server");
		free(m);
	}
	rlm_result_release(&r);
	fakesrv_stop(a);
	fakesrv_stop(b);
}

TEST(sub_model_of_another_provider_over_http)
{
	struct fakesrv *a = fakesrv_start(), *b = fakesrv_start();
	struct fake_reply rep = {200, NULL, anthropic_ok, FAKE_NORMAL, 0};
	struct rlm_models_cfg c;
	struct rlm_result r;
	struct rlm_err err = {0, ""};
	char ua[160];
	const struct fake_request *q;
	snprintf(ua, sizeof(ua), "%s/v1", fakesrv_url(a));
	fakesrv_push(b, &rep);
	rlm_models_cfg_init(&c);
	c.provider = "openai";
	c.model = "gpt-root";
	c.base_url = ua;
	c.api_key = "key-openai";
	c.sub_provider = "anthropic";
	c.sub_model = "claude-sub";
	c.sub_base_url = fakesrv_url(b);
	c.sub_api_key = "key-anthropic";
	c.max_retries = 0;
	c.concurrency = 4;
	c.quiet = true;
	CHECK_INT(models_solve(&c, a, &r, &err), 0);
	CHECK_INT(fakesrv_count(b), 1);
	q = fakesrv_request(b, 0);
	CHECK_STR(q->path, "/v1/messages");
	CHECK_STR(fake_header(q, "x-api-key"), "key-anthropic");
	CHECK(fake_header(q, "Authorization") == NULL);
	CHECK_CONTAINS(q->body, "\"model\":\"claude-sub\"");
	q = fakesrv_request(a, 0);
	CHECK_STR(fake_header(q, "Authorization"), "Bearer key-openai");
	{
		char *m = message(a, 1, -1, NULL);
		CHECK_CONTAINS(m, "SUB from claude");
		free(m);
	}
	rlm_result_release(&r);
	fakesrv_stop(a);
	fakesrv_stop(b);
}

TEST(in_process_sub_model_needs_an_in_process_root)
{
	struct rlm_models_cfg c;
	struct rlm_models ms;
	struct rlm_err err = {0, ""};
	sim_provider_register();
	rlm_models_cfg_init(&c);
	c.provider = "openai";
	c.model = "gpt-root";
	c.base_url = "http://127.0.0.1:9/v1";
	c.api_key = "k";
	c.sub_provider = "sim";
	c.quiet = true;
	CHECK_INT(rlm_models_init(&ms, &c, &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "needs the root model to be 'sim' too");
	/* an unknown sub_provider is named */
	err = (struct rlm_err){0, ""};
	c.sub_provider = "nosuch";
	CHECK_INT(rlm_models_init(&ms, &c, &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "unknown provider 'nosuch'");
	/* the same provider, only another key: two models */
	err = (struct rlm_err){0, ""};
	c.sub_provider = NULL;
	c.sub_api_key = "k2";
	CHECK_MSG(rlm_models_init(&ms, &c, &err) == 0, "%s", err.msg);
	CHECK(ms.sub != ms.model);
	CHECK_STR(llm_model_name(ms.sub), "gpt-root");
	rlm_models_release(&ms);
}
