/* SPDX-License-Identifier: MIT */
/* tests/test_recursion.c -- child RLMs (rlm/node.c) through the whole
 * loop: a tree of nodes with real workers, the root model a fake server on
 * loopback whose default reply every child gets; depth and fan-out without
 * deadlock, budgets met deep in the tree, cancel and timeouts, and what is
 * left running afterwards (looked for in /proc). */
#include "loopenv.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The root model's default reply, which every child node gets: its
 * context is "L<depth>:<path>"; it asks `fan` children about
 * "L<depth+1>:<path>.<i>" and answers "<path>(<their answers>)", ready
 * only when none failed. At the last depth rlm_query_batched is a plain
 * sub-call, which the fake sub-model answers "x". */
static void tree_script(struct env *v, int fan, long in_tokens)
{
	char code[1024], *body;
	struct fake_reply r = {200, NULL, NULL, FAKE_NORMAL, 0};
	snprintf(code, sizeof(code),
		 "```repl\nlvl, path = context.split(':', 1)\nlvl = int(lvl[1:])\n"
		 "rs = rlm_query_batched(['L%%d:%%s.%%d' %% (lvl + 1, path, i) for i in "
		 "range(%d)])\nanswer['content'] = path + '(' + ','.join(rs) + ')'\n"
		 "if not any(r.startswith('Error') for r in rs):\n    answer['ready'] = True\n```",
		 fan);
	body = fakesrv_chat_body(code, "stop", in_tokens, 20);
	r.body = body;
	fakesrv_set_default(v->root_srv, &r);
	free(body);
	body = fakesrv_chat_body("x", "stop", 10, 1);
	r.body = body;
	fakesrv_set_default(v->sub_srv, &r);
	free(body);
}

/* The root's first reply: fan children about "L1:<i>"; ready when ready. */
static void tree_root(struct env *v, int fan, bool ready)
{
	char code[512];
	snprintf(code, sizeof(code),
		 "```repl\nanswer['content'] = 'partial'\n"
		 "rs = rlm_query_batched(['L1:%%d' %% i for i in range(%d)])\n"
		 "answer['content'] = '(' + ','.join(rs) + ')'\n%s```",
		 fan, ready ? "answer['ready'] = True\n" : "");
	says(v, code);
}

/* The answer of the node at path and depth, as tree_script's code makes it. */
static void tree_answer(struct buf *b, const char *path, int depth, int max_depth, int fan)
{
	buf_printf(b, "%s(", path);
	for (int i = 0; i < fan; i++) {
		char p[64];
		if (i)
			buf_putc(b, ',');
		if (depth + 1 >= max_depth) {
			buf_putc(b, 'x');
			continue;
		}
		snprintf(p, sizeof(p), "%s%s%d", path, *path ? "." : "", i);
		tree_answer(b, p, depth + 1, max_depth, fan);
	}
	buf_putc(b, ')');
}

/* Check the node r at path and depth and its subtree: shape, questions,
 * answers, counts. Marks its id in seen. Returns the nodes under it. */
static int64_t tree_check(const struct rlm_result *r, const char *path, int depth, int max_depth,
			  int fan, bool *seen, size_t n_seen)
{
	struct buf want;
	int64_t nodes = 0, calls = 1, sub_calls = 0;
	buf_init(&want, 0);
	tree_answer(&want, path, depth, max_depth, fan);
	CHECK_INT(r->depth, depth);
	CHECK_MSG(r->stop == RLM_STOP_ANSWER, "node %d at %s: stop %s: %s", r->node, path,
		  rlm_stop_name(r->stop), r->stop_detail ? r->stop_detail : "");
	CHECK_STR(r->answer, want.p);
	CHECK_INT(r->root_calls, 1);
	CHECK_INT(r->iterations, 1);
	CHECK_MSG(r->node >= 0 && (size_t)r->node < n_seen && !seen[r->node],
		  "node id %d twice or out of range", r->node);
	seen[r->node] = true;
	if (depth)
		CHECK_MSG(r->sandbox && r->worker_start_ns > 0, "node %d had no worker", r->node);
	if (depth + 1 >= max_depth) {
		CHECK_INT(r->n_children, 0);
		sub_calls = calls = fan + 1;
		sub_calls = fan;
	} else {
		CHECK_INT(r->n_children, fan);
		for (int i = 0; i < fan; i++) {
			const struct rlm_result *ch = &r->children[i];
			char p[64], q[80];
			snprintf(p, sizeof(p), "%s%s%d", path, *path ? "." : "", i);
			snprintf(q, sizeof(q), "L%d:%s", depth + 1, p);
			CHECK_STR(ch->question, q);
			nodes += 1 + tree_check(ch, p, depth + 1, max_depth, fan, seen, n_seen);
			calls += ch->calls;
			sub_calls += 1 + ch->sub_calls;
		}
	}
	CHECK_INT(r->nodes, nodes);
	CHECK_INT(r->calls, calls);
	CHECK_INT(r->sub_calls, sub_calls);
	CHECK_INT(r->usage.input_tokens, r->root_usage.input_tokens + r->sub_usage.input_tokens);
	buf_release(&want);
	return nodes;
}

/* Samples the number of node threads while a solve runs. */
struct sampler {
	atomic_bool stop;
	int peak;
	pthread_t th;
};

static void *sample(void *arg)
{
	struct sampler *s = arg;
	while (!atomic_load(&s->stop)) {
		int n = threads("rlm-node");
		if (n > s->peak)
			s->peak = n;
		time_sleep_ns(2000000);
	}
	return NULL;
}

static void sampler_start(struct sampler *s)
{
	atomic_init(&s->stop, false);
	s->peak = 0;
	CHECK_INT(pthread_create(&s->th, NULL, sample, s), 0);
}

static void sampler_stop(struct sampler *s)
{
	atomic_store(&s->stop, true);
	pthread_join(s->th, NULL);
}


/* 584 child RLMs on 2 node slots and 2 pool workers: every node that has
 * no slot runs its children itself, so nothing waits on anything that
 * cannot move, and the tree comes back whole and in order. */
TEST(recursion_deep_and_wide_on_two_slots)
{
	enum { FAN = 8, DEPTH = 4, NODES = FAN + FAN * FAN + FAN * FAN * FAN };
	struct env v;
	struct buf want;
	struct sampler sm;
	static bool seen[NODES + 1];
	int64_t t0, ms, start_ns = 0;
	env_init(&v, SUB_FAKE);
	small_pool(&v, 2);
	v.o.max_depth = DEPTH;
	v.o.max_nodes = 2;
	tree_script(&v, FAN, 100);
	tree_root(&v, FAN, true);
	sampler_start(&sm);
	t0 = time_now_ns();
	CHECK_MSG(solve(&v, "q?") == 0, "%s", v.err.msg);
	ms = (time_now_ns() - t0) / 1000000;
	sampler_stop(&sm);
	buf_init(&want, 0);
	tree_answer(&want, "", 0, DEPTH, FAN);
	CHECK_STR(v.r.answer, want.p);
	CHECK_INT(v.r.stop, RLM_STOP_ANSWER);
	CHECK_INT(v.r.node, 0);
	CHECK(v.r.question == NULL);
	CHECK_INT(tree_check(&v.r, "", 0, DEPTH, FAN, seen, NODES + 1), NODES);
	for (int i = 0; i <= NODES; i++)
		CHECK_MSG(seen[i], "no node %d", i);
	CHECK_INT(v.r.nodes, NODES);
	CHECK_INT(v.r.calls, 1 + NODES + FAN * FAN * FAN * FAN);
	CHECK_INT(v.r.sub_calls, NODES + FAN * FAN * FAN * FAN);
	CHECK_INT(v.r.root_usage.input_tokens, 100);
	CHECK_INT(v.r.usage.input_tokens, 100 * (1 + NODES) + 10 * FAN * FAN * FAN * FAN);
	CHECK_INT(fakesrv_count(v.root_srv), 1 + NODES);
	CHECK_INT(fakesrv_count(v.sub_srv), FAN * FAN * FAN * FAN);
	/* Two slots: no more node threads than that (one more may be on its
	 * way out when the next starts). */
	CHECK_MSG(sm.peak >= 1 && sm.peak <= 3, "peak of %d node threads", sm.peak);
	CHECK_INT(worker_processes(), 0);
	CHECK_INT(threads("rlm-node"), 0);
	/* Events of children carry their depth and node. */
	CHECK_CONTAINS(v.events.p, "sandbox:1@d3n");
	CHECK_MSG(ms < 100000 * slow_factor(), "took %lld ms", (long long)ms);
	for (size_t i = 0; i < v.r.n_children; i++)
		start_ns += v.r.children[i].worker_start_ns;
	fprintf(stderr, "  depth %d, fan-out %d: %d nodes, %d sub-calls in %lld ms (%.2f ms a "
			"node; a depth-1 worker starts in %.1f ms)\n",
		DEPTH, FAN, NODES, FAN * FAN * FAN * FAN, (long long)ms, (double)ms / NODES,
		(double)start_ns / (double)v.r.n_children / 1e6);
	buf_release(&want);
	env_free(&v);
}

/* When each child started and ended (the "child" and "child_end" detail
 * events), by its question. */
struct child_times {
	int64_t start[3], end[3];
};

static void on_child_times(const struct rlm_event *e, void *arg)
{
	struct child_times *t = arg;
	static const char *const q[] = {"fast", "slow", "fast2"};
	bool start = strcmp(e->kind, "child") == 0;
	if (!start && strcmp(e->kind, "child_end") != 0)
		return;
	/* a child's question is its context; its answer "ok:" and it */
	for (int i = 0; i < 3; i++) {
		char want[16];
		snprintf(want, sizeof(want), "%s%s", start ? "" : "ok:", q[i]);
		if (e->len == strlen(want) && memcmp(e->text, want, e->len) == 0)
			*(start ? &t->start[i] : &t->end[i]) = e->elapsed_ns;
	}
}

/* Two slots, three children: whichever child the parent runs itself, the
 * one left does not wait for the slow one: it starts as soon as a slot is
 * free, while the slow one still runs. */
TEST(recursion_pending_child_takes_a_free_slot)
{
	struct env v;
	struct fake_reply r = {200, NULL, NULL, FAKE_NORMAL, 0};
	struct child_times t;
	char *body;
	memset(&t, 0, sizeof(t));
	env_init(&v, SUB_FAKE);
	v.o.max_nodes = 2;
	v.o.event = on_child_times;
	v.o.event_arg = &t;
	v.o.detail_events = true;
	body = fakesrv_chat_body("```repl\nimport time\nif context == 'slow':\n    time.sleep(2)\n"
				 "answer['content'] = 'ok:' + context\nanswer['ready'] = True\n```",
				 "stop", 10, 10);
	r.body = body;
	fakesrv_set_default(v.root_srv, &r);
	free(body);
	says(&v, "```repl\nrs = rlm_query_batched(['fast', 'slow', 'fast2'])\n"
		 "answer['content'] = '|'.join(rs)\nanswer['ready'] = True\n```");
	CHECK_MSG(solve(&v, "q?") == 0, "%s", v.err.msg);
	CHECK_STR(v.r.answer, "ok:fast|ok:slow|ok:fast2");
	CHECK_INT(v.r.n_children, 3);
	CHECK_STR(v.r.children[2].question, "fast2");
	CHECK_MSG(t.start[2] && t.end[1], "start %lld, end %lld", (long long)t.start[2],
		  (long long)t.end[1]);
	fprintf(stderr, "  the slow child ran %lld to %lld ms; the last started at %lld ms\n",
		(long long)(t.start[1] / 1000000), (long long)(t.end[1] / 1000000),
		(long long)(t.start[2] / 1000000));
	CHECK_MSG(t.start[2] < t.end[1] - SEC, "the last child started at %lld ms, the slow one "
		  "ended at %lld ms", (long long)(t.start[2] / 1000000),
		  (long long)(t.end[1] / 1000000));
	/* node ids count from 1 in the order nodes start, none skipped */
	for (size_t i = 0; i < 3; i++)
		CHECK_MSG(v.r.children[i].node >= 1 && v.r.children[i].node <= 3, "node %d",
			  v.r.children[i].node);
	CHECK(v.r.children[0].node != v.r.children[1].node &&
	      v.r.children[1].node != v.r.children[2].node &&
	      v.r.children[0].node != v.r.children[2].node);
	CHECK_INT(worker_processes(), 0);
	CHECK_INT(threads("rlm-node"), 0);
	env_free(&v);
}

/* When each child started and ended, by its question "c<i>". */
struct spans {
	int64_t start[8], end[8];
};

static void on_spans(const struct rlm_event *e, void *arg)
{
	struct spans *t = arg;
	bool start = strcmp(e->kind, "child") == 0;
	int i;
	if (!start && strcmp(e->kind, "child_end") != 0)
		return;
	if (start ? (e->len == 2 && e->text[0] == 'c')
		  : (e->len == 5 && memcmp(e->text, "ok:c", 4) == 0)) {
		i = e->text[e->len - 1] - '0';
		if (i >= 0 && i < 8)
			*(start ? &t->start[i] : &t->end[i]) = e->elapsed_ns;
	}
}

/* The most children running at any one time, by their spans. */
static int most_at_once(const struct spans *t, int n)
{
	int most = 0;
	for (int i = 0; i < n; i++) {
		int k = 0;
		for (int j = 0; j < n; j++)
			k += t->start[j] <= t->start[i] && t->start[i] < t->end[j];
		if (k > most)
			most = k;
	}
	return most;
}

/* max_nodes caps the child RLMs running at once exactly (issue 18:
 * --max-nodes 1 ran two, the parent's thread running one past the cap):
 * with 1, four children run one after another; with 2, never three. */
TEST(recursion_max_nodes_is_exact)
{
	for (int cap = 1; cap <= 2; cap++) {
		struct env v;
		struct fake_reply r = {200, NULL, NULL, FAKE_NORMAL, 0};
		struct spans t;
		char *body;
		int most;
		memset(&t, 0, sizeof(t));
		env_init(&v, SUB_FAKE);
		v.o.max_nodes = cap;
		v.o.event = on_spans;
		v.o.event_arg = &t;
		v.o.detail_events = true;
		body = fakesrv_chat_body("```repl\nimport time\ntime.sleep(0.3)\n"
					 "answer['content'] = 'ok:' + context\n"
					 "answer['ready'] = True\n```",
					 "stop", 10, 10);
		r.body = body;
		fakesrv_set_default(v.root_srv, &r);
		free(body);
		says(&v, "```repl\nrs = rlm_query_batched(['c0', 'c1', 'c2', 'c3'])\n"
			 "answer['content'] = '|'.join(rs)\nanswer['ready'] = True\n```");
		CHECK_MSG(solve(&v, "q?") == 0, "%s", v.err.msg);
		CHECK_STR(v.r.answer, "ok:c0|ok:c1|ok:c2|ok:c3");
		for (int i = 0; i < 4; i++)
			CHECK_MSG(t.start[i] && t.end[i] > t.start[i], "child %d: %lld to %lld", i,
				  (long long)t.start[i], (long long)t.end[i]);
		most = most_at_once(&t, 4);
		fprintf(stderr, "  max_nodes %d: at most %d children at once\n", cap, most);
		CHECK_INT(most, cap);
		CHECK_INT(worker_processes(), 0);
		CHECK_INT(threads("rlm-node"), 0);
		env_free(&v);
	}
}

/* rlm_query and llm_query from several threads of the code at once: the
 * child frames run one after another (they share the node's children),
 * the plain calls beside them; every answer reaches its thread. */
TEST(recursion_calls_from_threads)
{
	struct env v;
	struct fake_reply r = {200, NULL, NULL, FAKE_NORMAL, 0};
	char *body;
	env_init(&v, SUB_FAKE);
	body = fakesrv_chat_body("```repl\nanswer['content'] = 'ok:' + context\n"
				 "answer['ready'] = True\n```",
				 "stop", 10, 10);
	r.body = body;
	fakesrv_set_default(v.root_srv, &r);
	free(body);
	body = fakesrv_chat_body("x", "stop", 10, 1);
	r.body = body;
	fakesrv_set_default(v.sub_srv, &r);
	free(body);
	says(&v, "```repl\nimport threading\nout = [None] * 6\n"
		 "def w(i):\n    out[i] = rlm_query('c%d' % i) if i % 2 == 0 else llm_query('p%d' % i)\n"
		 "ts = [threading.Thread(target=w, args=(i,)) for i in range(6)]\n"
		 "[t.start() for t in ts]; [t.join() for t in ts]\n"
		 "answer['content'] = '|'.join(out)\nanswer['ready'] = True\n```");
	CHECK_MSG(solve(&v, "q?") == 0, "%s", v.err.msg);
	CHECK_STR(v.r.answer, "ok:c0|x|ok:c2|x|ok:c4|x");
	CHECK_INT(v.r.n_children, 3);
	CHECK_INT(v.r.sub_calls, 6);
	CHECK_INT(fakesrv_count(v.sub_srv), 3);
	CHECK_INT(worker_processes(), 0);
	CHECK_INT(threads("rlm-node"), 0);
	CHECK_INT(threads("rlm-call"), 0);
	env_free(&v);
}

/* One slot and three levels: a child waiting on its own children gives
 * its slot to them, so the tree finishes (no deadlock) one node at a time. */
TEST(recursion_one_slot_deep_tree_finishes)
{
	enum { FAN = 2, DEPTH = 3, NODES = FAN + FAN * FAN };
	struct env v;
	struct buf want;
	static bool seen[NODES + 1];
	env_init(&v, SUB_FAKE);
	small_pool(&v, 2);
	v.o.max_depth = DEPTH;
	v.o.max_nodes = 1;
	tree_script(&v, FAN, 100);
	tree_root(&v, FAN, true);
	CHECK_MSG(solve(&v, "q?") == 0, "%s", v.err.msg);
	buf_init(&want, 0);
	tree_answer(&want, "", 0, DEPTH, FAN);
	CHECK_STR(v.r.answer, want.p);
	CHECK_INT(tree_check(&v.r, "", 0, DEPTH, FAN, seen, NODES + 1), NODES);
	CHECK_INT(worker_processes(), 0);
	CHECK_INT(threads("rlm-node"), 0);
	buf_release(&want);
	env_free(&v);
}

/* max_depth 1: rlm_query is a plain sub-call: no child, no worker. */
TEST(recursion_off_makes_rlm_query_a_sub_call)
{
	struct env v;
	char *sys;
	env_init(&v, SUB_FAKE);
	v.o.max_depth = 1;
	says(&v, "```repl\nprint(rlm_query('hello'))\n```");
	says(&v, "FINAL(done)");
	says_full(v.sub_srv, "plain answer", "stop", 5, 5, 0);
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "done");
	CHECK_MSG_HAS(&v, 1, -1, "REPL output:\nplain answer");
	CHECK_INT(v.r.n_children, 0);
	CHECK_INT(v.r.nodes, 0);
	CHECK_INT(v.r.sub_calls, 1);
	CHECK_INT(v.r.calls, 3);
	CHECK_INT(v.r.root_calls, 2);
	CHECK_INT(fakesrv_count(v.root_srv), 2);
	CHECK_INT(fakesrv_count(v.sub_srv), 1);
	{
		char *m = message(v.sub_srv, 0, 0, NULL);
		CHECK_STR(m, "hello");
		free(m);
	}
	sys = message(v.root_srv, 0, 0, NULL);
	CHECK_CONTAINS(sys, "Recursion is off in this session: here rlm_query and "
			    "rlm_query_batched are plain sub-calls");
	CHECK(strstr(sys, "{{") == NULL);
	free(sys);
	CHECK(strstr(v.events.p, "@d") == NULL);
	env_free(&v);
}

/* At the last depth rlm_query(prompt, context=...) is one plain call that
 * reads both: the context is not lost. */
TEST(recursion_context_at_the_last_depth_reaches_the_sub_model)
{
	struct env v;
	char *m;
	env_init(&v, SUB_FAKE);
	v.o.max_depth = 1;
	says(&v, "```repl\nprint(rlm_query('What is the code?', context='The code is 77.'))\n```");
	says(&v, "FINAL(done)");
	says_full(v.sub_srv, "77", "stop", 5, 5, 0);
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(fakesrv_count(v.sub_srv), 1);
	m = message(v.sub_srv, 0, 0, NULL);
	CHECK_STR(m, "What is the code?\n\nThe code is 77.");
	free(m);
	CHECK_MSG_HAS(&v, 1, -1, "REPL output:\n77");
	env_free(&v);
}

/* A budget that allows k of n children starts the first k, and they run
 * (they are not stopped before their first call); the node stops after. */
TEST(recursion_budget_for_some_children_runs_those)
{
	struct env v;
	struct fake_reply child = {200, NULL, NULL, FAKE_NORMAL, 0};
	char *body;
	env_init(&v, SUB_FAKE);
	v.o.max_sub_calls = 2;
	body = fakesrv_chat_body("```repl\nanswer['content'] = 'ok:' + context\n"
				 "answer['ready'] = True\n```",
				 "stop", 10, 10);
	child.body = body;
	fakesrv_set_default(v.root_srv, &child);
	free(body);
	says(&v, "```repl\nrs = rlm_query_batched(['a', 'b', 'c'])\n"
		 "answer['content'] = '|'.join(rs)\n```");
	CHECK_MSG(solve(&v, "q?") == 0, "%s", v.err.msg);
	CHECK_INT(v.r.n_children, 2);
	CHECK_STR(v.r.children[0].answer, "ok:a");
	CHECK_STR(v.r.children[1].answer, "ok:b");
	CHECK(v.r.stop == RLM_STOP_CALLS);
	CHECK_CONTAINS(v.r.answer, "ok:a|ok:b|Error: sub-call budget exhausted");
	env_free(&v);
}

/* One frame may not start more than 1,000 children. */
TEST(recursion_too_many_children_in_one_call)
{
	struct env v;
	env_init(&v, SUB_FAKE);
	says(&v, "```repl\nrs = rlm_query_batched(['p'] * 1001)\nprint(rs[0])\n```");
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.n_children, 0);
	CHECK_MSG_HAS(&v, 1, -1, "Error: too many child RLMs in one call (1001; at most 1000)");
	CHECK_INT(worker_processes(), 0);
	env_free(&v);
}

/* The node under r that met the limit why itself (the others that stopped
 * on it say in which child it was met), or NULL. */
static const struct rlm_result *find_stop(const struct rlm_result *r, enum rlm_stop why)
{
	for (size_t i = 0; i < r->n_children; i++) {
		const struct rlm_result *ch = &r->children[i], *f;
		if (ch->stop == why && ch->stop_detail && !strstr(ch->stop_detail, "(in child RLM"))
			return ch;
		if ((f = find_stop(ch, why)))
			return f;
	}
	return NULL;
}

/* A sub-call budget spent deep in the tree: the node that met it stops
 * with its partial answer, every other node stops on the same limit, and
 * the solve ends with it. */
TEST(recursion_sub_call_budget_spent_deep_ends_the_solve)
{
	struct env v;
	const struct rlm_result *deep;
	env_init(&v, SUB_FAKE);
	v.o.max_depth = 3;
	v.o.max_sub_calls = 10; /* 2 + 4 children, then 8 plain calls at depth 2 */
	tree_script(&v, 2, 100);
	tree_root(&v, 2, false);
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_MSG(v.r.stop == RLM_STOP_CALLS, "stop %s: %s", rlm_stop_name(v.r.stop),
		  v.r.stop_detail ? v.r.stop_detail : "");
	CHECK_CONTAINS(v.r.stop_detail, "sub-call budget exhausted (10 of 10 sub-calls made)");
	CHECK_CONTAINS(v.r.stop_detail, "at depth 2)");
	CHECK_INT(v.r.sub_calls, 10);
	CHECK_INT(v.r.nodes, 6);
	/* The root's partial answer: what its code set after the children. */
	CHECK_MSG(v.r.answer && v.r.answer[0] == '(', "answer %s", v.r.answer);
	CHECK_CONTAINS(v.r.answer, "Error: ");
	deep = find_stop(&v.r, RLM_STOP_CALLS);
	CHECK_MSG(deep, "no child stopped on the budget");
	CHECK_INT(deep->depth, 2);
	CHECK(deep->answer != NULL);
	CHECK_CONTAINS(deep->answer, "Error: sub-call budget exhausted");
	/* One root turn: the limit ended it after its exec. */
	CHECK_INT(v.r.root_calls, 1);
	CHECK_INT(worker_processes(), 0);
	env_free(&v);
}

TEST(recursion_token_budget_spent_deep_ends_the_solve)
{
	struct env v;
	const struct rlm_result *deep;
	int64_t used;
	env_init(&v, SUB_FAKE);
	v.o.max_depth = 3;
	v.o.max_nodes = 1;
	/* A root call reserves its messages' size, ~1,000 tokens; the
	 * root's spends 120, a child's 820: a few children fit, not all 6. */
	v.o.max_tokens = 3000;
	tree_script(&v, 2, 800);
	tree_root(&v, 2, false);
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_MSG(v.r.stop == RLM_STOP_TOKENS, "stop %s: %s", rlm_stop_name(v.r.stop),
		  v.r.stop_detail ? v.r.stop_detail : "");
	CHECK_CONTAINS(v.r.stop_detail, "token budget exhausted");
	CHECK_CONTAINS(v.r.stop_detail, "(in child RLM");
	deep = find_stop(&v.r, RLM_STOP_TOKENS);
	CHECK_MSG(deep, "no child stopped on the budget");
	CHECK(deep->depth >= 1);
	CHECK_MSG(v.r.answer && v.r.answer[0] == '(', "answer %s", v.r.answer);
	used = v.r.usage.input_tokens + v.r.usage.output_tokens;
	CHECK_MSG(used <= 3000, "%lld tokens used", (long long)used);
	CHECK_INT(worker_processes(), 0);
	env_free(&v);
}

/* max_calls counts the model calls of every node: root turns and plain
 * sub-calls. The tree of fan-out 2 and depth 3 makes 1 + 2 + 4 root calls
 * and 8 plain calls at depth 2: at 10 the budget runs out at depth 2. */
TEST(recursion_call_budget_spent_deep_ends_the_solve)
{
	struct env v;
	const struct rlm_result *deep;
	env_init(&v, SUB_FAKE);
	v.o.max_depth = 3;
	v.o.max_calls = 10;
	tree_script(&v, 2, 100);
	tree_root(&v, 2, false);
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_MSG(v.r.stop == RLM_STOP_MAX_CALLS, "stop %s: %s", rlm_stop_name(v.r.stop),
		  v.r.stop_detail ? v.r.stop_detail : "");
	CHECK_CONTAINS(v.r.stop_detail, "call budget exhausted (10 of 10 model calls made)");
	CHECK_CONTAINS(v.r.stop_detail, "at depth 2)");
	CHECK_INT(v.r.calls, 10);
	CHECK_INT(fakesrv_count(v.root_srv) + fakesrv_count(v.sub_srv), 10);
	deep = find_stop(&v.r, RLM_STOP_MAX_CALLS);
	CHECK_MSG(deep, "no child stopped on the budget");
	CHECK_INT(deep->depth, 2);
	CHECK_MSG(v.r.answer && v.r.answer[0] == '(', "answer %s", v.r.answer);
	CHECK_INT(worker_processes(), 0);
	env_free(&v);
}

/* The threads of this process once a first solve has started what lives
 * as long as the process (the spawner thread) and its pool and servers are
 * gone: what a solve must leave behind it, and no more. */
static int base_threads(void)
{
	struct env v;
	int base;
	env_init(&v, SUB_FAKE);
	says(&v, "```repl\nprint(llm_query('warm'))\n```");
	says(&v, "FINAL(warm)");
	CHECK_INT(solve(&v, "q?"), 0);
	env_free(&v);
	base = threads(NULL);
	CHECK_INT(worker_processes(), 0);
	return base;
}

/* Cancel or time out a deep tree whose last nodes wait on hanging
 * sub-calls: rlm_solve comes back promptly, and leaves no worker and no
 * thread behind. */
static void stop_deep_tree(bool cancel)
{
	struct env v;
	struct fake_reply hang = {200, NULL, NULL, FAKE_HANG, 0};
	struct canceller c;
	pthread_t th;
	int base = base_threads();
	int64_t t0, ms;
	env_init(&v, SUB_FAKE);
	v.o.max_depth = 3;
	tree_script(&v, 3, 100);
	fakesrv_set_default(v.sub_srv, &hang);
	/* (Not ready: an answer set by code that ran on past the limit
	 * would win over it.) */
	tree_root(&v, 3, false);
	atomic_init(&c.flag, false);
	c.after_ns = 1500000000LL;
	if (cancel) {
		v.o.cancel = &c.flag;
		pthread_create(&th, NULL, cancel_later, &c);
	} else {
		v.o.timeout_ns = 1500000000LL;
	}
	t0 = time_now_ns();
	CHECK_INT(solve(&v, "q?"), 0);
	ms = (time_now_ns() - t0) / 1000000;
	if (cancel)
		pthread_join(th, NULL);
	CHECK_MSG(v.r.stop == (cancel ? RLM_STOP_CANCEL : RLM_STOP_TIMEOUT), "stop %s: %s",
		  rlm_stop_name(v.r.stop), v.r.stop_detail ? v.r.stop_detail : "");
	CHECK_MSG(ms < (1500 + 2500) * slow_factor(), "took %lld ms", (long long)ms);
	fprintf(stderr, "  %s 1.5 s in: rlm_solve returned after %lld ms\n",
		cancel ? "cancelled" : "timed out", (long long)ms);
	/* The content the code set: before the children, or after them when
	 * it ran on before the limit reached it. */
	CHECK_MSG(v.r.answer && (strcmp(v.r.answer, "partial") == 0 || v.r.answer[0] == '('),
		  "answer %s", v.r.answer ? v.r.answer : "(null)");
	/* The tree was deep when it stopped. */
	CHECK_INT(v.r.n_children, 3);
	CHECK_MSG(v.r.children[0].n_children == 3, "%zu grandchildren",
		  v.r.children[0].n_children);
	/* Nothing of the solve runs once it has returned. */
	CHECK_INT(worker_processes(), 0);
	CHECK_INT(threads("rlm-node"), 0);
	env_free(&v);
	CHECK_MSG(threads(NULL) == base, "%d threads, %d before", threads(NULL), base);
}

TEST(recursion_cancel_mid_tree_leaves_nothing_running)
{
	stop_deep_tree(true);
}

TEST(recursion_timeout_mid_tree_leaves_nothing_running)
{
	stop_deep_tree(false);
}

/* A child whose worker keeps crashing, and one whose root model fails:
 * the parent's code gets "Error: ..." and the solve goes on. */
TEST(recursion_child_failures_are_error_strings)
{
	struct env v;
	struct fake_reply bad = {500, NULL, "{\"error\":{\"message\":\"the model fell over\"}}",
				 FAKE_NORMAL, 0};
	env_init(&v, SUB_FAKE);
	v.o.max_errors = 2;
	says(&v, "```repl\nr = rlm_query('crash, please')\nprint('A:', r)\n```");
	/* the child's two turns, each killing its worker */
	says(&v, "```repl\nimport os\nos._exit(3)\n```");
	says(&v, "```repl\nimport os\nos._exit(3)\n```");
	says(&v, "```repl\nr = rlm_query('fail, please')\nprint('B:', r)\n```");
	fakesrv_push(v.root_srv, &bad);
	says(&v, "FINAL(done)");
	CHECK_MSG(solve(&v, "q?") == 0, "%s", v.err.msg);
	CHECK_STR(v.r.answer, "done");
	CHECK_INT(v.r.stop, RLM_STOP_ANSWER);
	/* requests: root 1, child 1 and 2, root 2, child (500), root 3 */
	CHECK_MSG_HAS(&v, 3, -1, "A: Error: child RLM stopped without an answer (max_errors: 2 "
				 "turns in a row ended in an error (max_errors)");
	CHECK_MSG_HAS(&v, 5, -1, "B: Error: child RLM failed: the root model failed: ");
	CHECK_MSG_HAS(&v, 5, -1, "the model fell over");
	CHECK_INT(v.r.n_children, 2);
	CHECK_INT(v.r.children[0].stop, RLM_STOP_ERRORS);
	CHECK_INT(v.r.children[0].restarts, 2);
	CHECK_INT(v.r.children[1].stop, RLM_STOP_ERROR);
	CHECK_INT(v.r.nodes, 2);
	CHECK_INT(v.r.failed_calls, 1);
	/* a child stopped on its own limit is a failure as much as one that
	 * failed (issue 18): both are counted, and listed with the workers
	 * the first one's code killed */
	CHECK_CONTAINS(v.r.warning, "2 of 2 sub-calls failed (the first: max_errors: 2 turns in "
				    "a row ended in an error");
	CHECK_CONTAINS(v.r.warning, "2 more failures under child RLMs");
	CHECK(!v.r.complete);
	CHECK_INT(v.r.failed, 4);
	CHECK_INT(v.r.n_failures, 4);
	CHECK_STR(v.r.failures[0].kind, "child");
	CHECK_INT(v.r.failures[0].node, v.r.children[0].node);
	CHECK_STR(v.r.failures[1].kind, "worker");
	CHECK_STR(v.r.failures[2].kind, "worker");
	CHECK_STR(v.r.failures[3].kind, "child");
	CHECK_INT(v.r.failures[3].node, v.r.children[1].node);
	CHECK_CONTAINS(v.r.failures[3].reason, "child RLM failed: the root model failed");
	CHECK_INT(worker_processes(), 0);
	env_free(&v);
}

/* context= makes the prompt the child's question; without it a long
 * prompt is cut in the question and whole in `context`. A child at the
 * last depth is told rlm_query is a plain sub-call there. */
TEST(recursion_context_argument_and_long_prompts)
{
	struct env v;
	struct fake_reply child = {200, NULL, NULL, FAKE_NORMAL, 0};
	char *body, *sys;
	bool saw_short = false, saw_long = false, saw_ctx = false;
	env_init(&v, SUB_FAKE);
	body = fakesrv_chat_body("```repl\nanswer['content'] = '%d:%s' % (len(context), context[:12])\n"
			  "answer['ready'] = True\n```",
			  "stop", 10, 10);
	child.body = body;
	fakesrv_set_default(v.root_srv, &child);
	free(body);
	says(&v, "```repl\nimport json\nlong = 'y' * 2500\n"
		 "a = rlm_query('What is the code?', context='The code is 77. ' * 3)\n"
		 "b = rlm_query_batched(['short one', long, 'Q3'], contexts=[None, None, 'ctx three'])\n"
		 "answer['content'] = json.dumps([a] + b)\nanswer['ready'] = True\n```");
	CHECK_MSG(solve(&v, "q?") == 0, "%s", v.err.msg);
	CHECK_STR(v.r.answer,
		  "[\"48:The code is \", \"9:short one\", \"2500:yyyyyyyyyyyy\", \"9:ctx three\"]");
	CHECK_INT(v.r.n_children, 4);
	CHECK_STR(v.r.children[0].question, "What is the code?");
	CHECK_STR(v.r.children[1].question, "short one");
	CHECK_STR(v.r.children[3].question, "Q3");
	CHECK_CONTAINS(v.r.children[2].question,
		       "yyy ...\n\n[This is the start of a request of 2,500 characters, too long to "
		       "repeat here: the whole request is the variable `context`. Read it there.]");
	CHECK(strlen(v.r.children[2].question) < 1200);
	for (size_t i = 1; i < fakesrv_count(v.root_srv); i++) {
		char *first = message(v.root_srv, i, 1, NULL);
		saw_ctx |= strncmp(first, "Question: What is the code?\n", 28) == 0 &&
			   strstr(first, "a str of 48 characters") != NULL;
		saw_short |= strncmp(first, "Question: short one\n", 20) == 0;
		saw_long |= strstr(first, "the whole request is the variable `context`") != NULL &&
			    strstr(first, "a str of 2,500 characters") != NULL;
		free(first);
	}
	CHECK(saw_ctx && saw_short && saw_long);
	/* The root can recurse (no note); its children, at the last depth of
	 * 2, are told rlm_query is a plain sub-call for them. */
	sys = message(v.root_srv, 0, 0, NULL);
	CHECK_CONTAINS(sys, "hand a sub-problem to a child RLM");
	CHECK(strstr(sys, "last level of recursion") == NULL);
	free(sys);
	sys = message(v.root_srv, 1, 0, NULL);
	CHECK_CONTAINS(sys, "You are yourself a child RLM at the last level of recursion: here "
			    "rlm_query and rlm_query_batched are plain sub-calls");
	free(sys);
	env_free(&v);
}

/* ---- a stop of the whole solve reaches running code ---- */

/* The default reply of every child: the one whose context is "loop" sets
 * a partial answer and computes for ever; the others wait a second (the
 * looper is in its loop by then), then spend the budget with five plain
 * calls. */
static void loop_and_spend_script(struct env *v)
{
	struct fake_reply r = {200, NULL, NULL, FAKE_NORMAL, 0};
	char *body = fakesrv_chat_body(
	    "```repl\nif context == 'loop':\n    answer['content'] = 'looping'\n"
	    "    while True:\n        pass\nimport time\ntime.sleep(1)\n"
	    "rs = llm_query_batched(['a'] * 5)\nanswer['content'] = 'spent: ' + rs[4]\n```",
	    "stop", 100, 20);
	r.body = body;
	fakesrv_set_default(v->root_srv, &r);
	free(body);
	body = fakesrv_chat_body("x", "stop", 10, 1);
	r.body = body;
	fakesrv_set_default(v->sub_srv, &r);
	free(body);
	says(v, "```repl\nanswer['content'] = 'root partial'\n"
		"rs = rlm_query_batched(['spend', 'loop'])\nanswer['content'] = ' | '.join(rs)\n```");
}

/* One child spends the sub-call budget while its sibling's block is in a
 * CPU loop: the loop is interrupted at once (not left to its exec time
 * limit of 30 s), the solve ends with the reason and the partial answers
 * (the looper's kept, as its variables: it was interrupted, not killed),
 * and nothing is left running. */
TEST(recursion_budget_stop_interrupts_a_sibling_in_a_loop)
{
	struct env v;
	const struct rlm_result *spend, *loop;
	int64_t t0, ms;
	env_init(&v, SUB_FAKE);
	v.o.max_sub_calls = 5; /* 2 children, then 3 of the spender's 5 */
	v.o.exec_timeout_ns = 30 * SEC;
	loop_and_spend_script(&v);
	t0 = time_now_ns();
	CHECK_MSG(solve(&v, "q?") == 0, "%s", v.err.msg);
	ms = (time_now_ns() - t0) / 1000000;
	fprintf(stderr, "  budget spent 1 s in, the sibling looping: rlm_solve returned after %lld "
			"ms\n",
		(long long)ms);
	CHECK_MSG(ms < 5000 * slow_factor(), "took %lld ms", (long long)ms);
	CHECK_MSG(v.r.stop == RLM_STOP_CALLS, "stop %s: %s", rlm_stop_name(v.r.stop),
		  v.r.stop_detail ? v.r.stop_detail : "");
	CHECK_CONTAINS(v.r.stop_detail, "sub-call budget exhausted (5 of 5 sub-calls made)");
	CHECK_CONTAINS(v.r.stop_detail, "(in child RLM");
	CHECK_INT(v.r.n_children, 2);
	spend = &v.r.children[0];
	loop = &v.r.children[1];
	CHECK_INT(spend->stop, RLM_STOP_CALLS);
	CHECK_CONTAINS(spend->answer, "spent: Error: not sent: the solve is stopping");
	CHECK_INT(loop->stop, RLM_STOP_CALLS);
	CHECK_CONTAINS(loop->stop_detail, "(in child RLM");
	CHECK_STR(loop->answer, "looping");
	CHECK_INT(loop->execs, 1);
	CHECK_INT(loop->restarts, 0);
	/* The root's code got both partial answers and kept them. */
	CHECK_CONTAINS(v.r.answer, "its partial answer: spent: Error: not sent");
	CHECK_CONTAINS(v.r.answer, "its partial answer: looping");
	CHECK_INT(fakesrv_count(v.sub_srv), 3);
	CHECK_INT(worker_processes(), 0);
	CHECK_INT(threads("rlm-node"), 0);
	env_free(&v);
}

/* Cancel or time out a solve 1 s in, while a child's block computes in a
 * loop and its sibling sleeps: both are interrupted at once, the solve
 * returns promptly, and nothing is left running. */
static void stop_a_looping_child(bool cancel)
{
	struct env v;
	struct fake_reply r = {200, NULL, NULL, FAKE_NORMAL, 0};
	struct canceller c;
	pthread_t th;
	char *body;
	int base = base_threads();
	int64_t t0, ms;
	env_init(&v, SUB_FAKE);
	v.o.exec_timeout_ns = 30 * SEC;
	body = fakesrv_chat_body("```repl\nanswer['content'] = 'at ' + context\n"
				 "if context == 'loop':\n    while True:\n        pass\n"
				 "import time\ntime.sleep(30)\n```",
				 "stop", 100, 20);
	r.body = body;
	fakesrv_set_default(v.root_srv, &r);
	free(body);
	says(&v, "```repl\nanswer['content'] = 'root partial'\n"
		 "rs = rlm_query_batched(['loop', 'sleep'])\nanswer['content'] = '|'.join(rs)\n```");
	atomic_init(&c.flag, false);
	c.after_ns = SEC;
	if (cancel) {
		v.o.cancel = &c.flag;
		pthread_create(&th, NULL, cancel_later, &c);
	} else {
		v.o.timeout_ns = SEC;
	}
	t0 = time_now_ns();
	CHECK_INT(solve(&v, "q?"), 0);
	ms = (time_now_ns() - t0) / 1000000;
	if (cancel)
		pthread_join(th, NULL);
	fprintf(stderr, "  %s 1 s in, a child looping: rlm_solve returned after %lld ms\n",
		cancel ? "cancelled" : "timed out", (long long)ms);
	CHECK_MSG(v.r.stop == (cancel ? RLM_STOP_CANCEL : RLM_STOP_TIMEOUT), "stop %s: %s",
		  rlm_stop_name(v.r.stop), v.r.stop_detail ? v.r.stop_detail : "");
	CHECK_MSG(ms < 3000 * slow_factor(), "took %lld ms", (long long)ms);
	CHECK_INT(v.r.n_children, 2);
	for (size_t i = 0; i < 2; i++) {
		const struct rlm_result *ch = &v.r.children[i];
		CHECK_MSG(ch->stop == v.r.stop, "child %zu: stop %s", i, rlm_stop_name(ch->stop));
		CHECK_STR(ch->answer, i ? "at sleep" : "at loop");
		CHECK_INT(ch->execs, 1);
	}
	CHECK_MSG(strcmp(v.r.answer, "root partial") == 0 || v.r.answer[0] == 'E', "answer %s",
		  v.r.answer);
	CHECK_INT(worker_processes(), 0);
	CHECK_INT(threads("rlm-node"), 0);
	env_free(&v);
	CHECK_MSG(threads(NULL) == base, "%d threads, %d before", threads(NULL), base);
}

TEST(recursion_cancel_while_a_child_loops)
{
	stop_a_looping_child(true);
}

TEST(recursion_timeout_while_a_child_loops)
{
	stop_a_looping_child(false);
}

/* Stops the solve as its first child node starts: sets the cancel flag,
 * or sleeps (holding up that child) until the deadline has passed. */
struct at_start {
	atomic_bool cancel;
	int64_t sleep_ns;
	bool done;
};

static void stop_at_first_child(const struct rlm_event *e, void *arg)
{
	struct at_start *s = arg;
	if (strcmp(e->kind, "child") != 0 || s->done)
		return;
	s->done = true; /* events come one at a time */
	if (s->sleep_ns)
		time_sleep_ns(s->sleep_ns);
	else
		atomic_store(&s->cancel, true);
}

/* Cancel or time out while 8 children are starting (on 8 slots): the
 * children not yet started are refused, those starting stop before their
 * first turn or during it, and nothing is left running. */
static void stop_while_children_start(bool cancel)
{
	struct env v;
	struct at_start s = {false, 0, false};
	int base = base_threads();
	int64_t t0, ms;
	env_init(&v, SUB_FAKE);
	v.o.max_nodes = 8;
	v.o.event = stop_at_first_child;
	v.o.event_arg = &s;
	v.o.detail_events = true;
	atomic_init(&s.cancel, false);
	if (cancel) {
		v.o.cancel = &s.cancel;
	} else {
		v.o.timeout_ns = SEC;
		s.sleep_ns = 1200000000LL;
	}
	tree_script(&v, 2, 100);
	tree_root(&v, 8, false);
	t0 = time_now_ns();
	CHECK_INT(solve(&v, "q?"), 0);
	ms = (time_now_ns() - t0) / 1000000;
	fprintf(stderr, "  %s as children start: rlm_solve returned after %lld ms\n",
		cancel ? "cancelled" : "timed out", (long long)ms);
	CHECK(s.done);
	CHECK_MSG(v.r.stop == (cancel ? RLM_STOP_CANCEL : RLM_STOP_TIMEOUT), "stop %s: %s",
		  rlm_stop_name(v.r.stop), v.r.stop_detail ? v.r.stop_detail : "");
	CHECK_MSG(ms < (cancel ? 2000 : 3500) * slow_factor(), "took %lld ms", (long long)ms);
	for (size_t i = 0; i < v.r.n_children; i++)
		CHECK_MSG(v.r.children[i].stop == v.r.stop, "child %zu: stop %s", i,
			  rlm_stop_name(v.r.children[i].stop));
	CHECK_INT(worker_processes(), 0);
	CHECK_INT(threads("rlm-node"), 0);
	env_free(&v);
	CHECK_MSG(threads(NULL) == base, "%d threads, %d before", threads(NULL), base);
}

TEST(recursion_cancel_while_children_start)
{
	stop_while_children_start(true);
}

TEST(recursion_timeout_while_children_start)
{
	stop_while_children_start(false);
}

/* ---- children's contexts: views of a part of the parent's ---- */

/* v's context: text[0..len) written to a file `name` and loaded from it
 * (a .txt is mapped, a .jsonl decoded into a memfd); name NULL: the text
 * on the heap, which the root's worker copies into a memfd of its own. */
static void use_context(struct env *v, const char *name, const char *text, size_t len)
{
	struct rlm_err err = {0, ""};
	char *path;
	int fd;
	corpus_free(v->ctx);
	v->ctx = NULL;
	if (!name) {
		v->ctx = corpus_from_text(text, len);
		return;
	}
	path = xasprintf("%s/%s", harness_tmpdir(), name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && file_write_all(fd, text, len) == 0);
	close(fd);
	CHECK_MSG(corpus_load(path, NULL, &v->ctx, &err) == 0, "%s", err.msg);
	free(path);
}

/* About 400 KB of text with 2-, 3- and 4-byte characters, "é" first. */
static char *mixed_text(size_t *len)
{
	struct buf b;
	buf_init(&b, 0);
	for (int i = 0; b.len < 400000; i++)
		buf_printf(&b, "%s line %d\n", i % 3 == 0 ? "é日😀" : i % 3 == 1 ? "plain" : "ß—€",
			   i);
	return buf_detach(&b, len);
}

/* The text of document d of docs_jsonl, appended to b. */
static void doc_text(struct buf *b, int d)
{
	buf_printf(b, "doc %d", d);
	for (int k = 0; k < 10 + (d * 37) % 290; k++)
		buf_printf(b, " w%d%s", k, k % 7 ? "" : " é日");
}

/* 30 JSONL documents of 100 to 3,000 characters. */
static char *docs_jsonl(size_t *len)
{
	struct buf b;
	buf_init(&b, 0);
	for (int d = 0; d < 30; d++) {
		buf_printf(&b, "{\"id\": %d, \"text\": \"", d);
		doc_text(&b, d);
		buf_puts(&b, "\"}\n");
	}
	return buf_detach(&b, len);
}

/* Byte offset of character n of s[0..len). */
static size_t char_at(const char *s, size_t len, size_t n)
{
	size_t i = 0;
	for (; i < len; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80 && n-- == 0)
			break;
	return i;
}

/* The root model's default reply, which every child gets. */
static void children_say(struct env *v, const char *content)
{
	says_always(v->root_srv, content);
}

/* Python that every node runs: f(x) names a context by its length and its
 * hash (the same in every worker: PYTHONHASHSEED=0), and parts(c) are the
 * pieces a node hands its children. */
#define PY_VIEWS                                                                                   \
	"f = lambda s: '%d:%d' % (len(s), hash(s if isinstance(s, str) else tuple(s)))\n"          \
	"ids = lambda: ','.join(d['id'] for d in documents)\n"                                   \
	"def parts(c):\n"                                                                          \
	"    return [c[5000:100000], c[100000:]] if isinstance(c, str) else [c[2:9], c[9:]]\n"

/* A child RLM's context is a slice of its parent's str, or a run of its
 * documents, passed on as a reference and seen as a view of the parent's
 * memfd; a grandchild's is a part of that part (the offsets compose), and
 * `documents` names the same documents as the parent's does. Each
 * node answers with what it saw; the root checks it against its own
 * slices. Over a mapped text file, a text on the heap (the root's worker
 * made its own memfd) and JSONL documents in a memfd. */
TEST(recursion_children_see_views_of_the_context)
{
	static const char *const names[] = {"views.txt", NULL, "views.jsonl"};
	for (size_t k = 0; k < ARRAY_SIZE(names); k++) {
		struct env v;
		size_t len;
		char *text = k == 2 ? docs_jsonl(&len) : mixed_text(&len);
		env_init(&v, SUB_FAKE);
		v.o.max_depth = 3;
		use_context(&v, names[k], text, len);
		children_say(&v, "```repl\n" PY_VIEWS
				 "if len(context) > (200000 if isinstance(context, str) else 15):\n"
				 "    rs = rlm_query_batched(['g', 'g'], contexts=parts(context))\n"
				 "    answer['content'] = 'C' + f(context) + '@' + ids() + '|' + "
				 "'|'.join(rs)\n"
				 "else:\n"
				 "    answer['content'] = 'G' + f(context) + '@' + ids()\n"
				 "answer['ready'] = True\n```");
		says(&v, "```repl\n" PY_VIEWS
			 "a = context[1000:300000] if isinstance(context, str) else context[3:25]\n"
			 "r = rlm_query('child', context=a)\n"
			 "L = not isinstance(context, str)\n"
			 "I = lambda x, y: ','.join(d['id'] for d in documents[x:y]) if L else "
			 "documents[0]['id']\n"
			 "want = 'C' + f(a) + '@' + I(3, 25) + '|' + '|'.join('G' + f(p) + '@' + q "
			 "for p, q in zip(parts(a), [I(5, 12), I(12, 25)]))\n"
			 "answer['content'] = 'ok' if r == want else r + ' != ' + want\n"
			 "answer['ready'] = True\n```");
		CHECK_MSG(solve(&v, "q?") == 0, "%s", v.err.msg);
		CHECK_MSG(v.r.answer && strcmp(v.r.answer, "ok") == 0, "context %zu: %s", k,
			  v.r.answer ? v.r.answer : "(none)");
		CHECK_INT(v.r.n_children, 1);
		CHECK_INT(v.r.children[0].n_children, 2);
		CHECK_INT(v.r.nodes, 3);
		CHECK(!v.r.warning);
		env_free(&v);
		free(text);
	}
}

/* The default reply of every child: its context, shown. */
static void child_shows_context(struct env *v)
{
	children_say(v, "```repl\nanswer['content'] = 'got:' + repr(context)\n"
			"answer['ready'] = True\n```");
}

/* Solve over text[0..len) (use_context's name), every child showing its
 * context, the root's code code (the rest of a ```repl block) run with the
 * runtime's own checker of contexts replaced, so that the items go out as
 * they are; rlm_solve must succeed. */
static void raw_contexts(struct env *v, const char *name, const char *text, size_t len,
			 const char *code)
{
	char *block = xasprintf("```repl\nrlm_query.__globals__['_one_context'] = "
				"lambda c, fn, what: c\n%s",
				code);
	env_init(v, SUB_FAKE);
	use_context(v, name, text, len);
	child_shows_context(v);
	says(v, block);
	free(block);
	CHECK_MSG(solve(v, "q?") == 0, "%s", v->err.msg);
}

/* The worker is hostile: a reference that lies outside the context, cuts
 * a UTF-8 character, is of the wrong kind or shape, gives that prompt an
 * "Error: ..." (no child starts for it, and it counts as a failed
 * sub-call); the good ones in the same frame run, and the parent goes on. */
TEST(recursion_bad_context_references_are_error_strings)
{
	struct env v;
	size_t len, n = 0;
	char *text = mixed_text(&len), *want;
	char *lines[9], *save = NULL;
	raw_contexts(&v, "bad.txt", text, len,
		     "rs = rlm_query_batched(['a'] * 9, contexts=[{'ref': [0, 10**12]}, "
		     "{'ref': [1, 2]}, {'ref': [0, 2]}, {'docs': [0, 1]}, {'ref': 'x'}, 5, "
		     "{'ref': [0, 9]}, None, {'ref': [2**53, 1]}])\n"
		     "answer['content'] = '\\n'.join(rs)\nanswer['ready'] = True\n```");
	CHECK_INT(v.r.stop, RLM_STOP_ANSWER);
	for (char *l = strtok_r(v.r.answer, "\n", &save); l && n < 9; l = strtok_r(NULL, "\n", &save))
		lines[n++] = l;
	CHECK_INT(n, 9);
	want = xasprintf("Error: the context reference [0, 0 + 1000000000000) lies outside the "
			 "context (%zu bytes)",
			 len);
	CHECK_STR(lines[0], want);
	free(want);
	CHECK_STR(lines[1], "Error: the context reference [1, 1 + 2) starts or ends inside a "
			    "UTF-8 character");
	CHECK_STR(lines[2], "got:'é'");
	CHECK_STR(lines[3], "Error: a reference to a run of documents, but the context is a str");
	CHECK_CONTAINS(lines[4], "Error: a context reference that is not {\"ref\": [offset, "
				 "length]} or {\"docs\": [first, end]}");
	CHECK_STR(lines[5],
		  "Error: a context that is not a str, a list of str, a reference or null");
	CHECK_STR(lines[6], "got:'é日😀'");
	CHECK_STR(lines[7], "got:'a'");
	CHECK_CONTAINS(lines[8], "Error: the context reference [9007199254740992, ");
	CHECK_INT(v.r.n_children, 3);
	CHECK_CONTAINS(v.r.warning, "6 of 9 sub-calls failed (the first: the context reference");
	CHECK_INT(worker_processes(), 0);
	env_free(&v);
	free(text);
}

/* The same over documents: a range given backwards or past the end, a
 * slice of a list context, a list with a non-str; an empty range is an
 * empty list, a good one the documents. */
TEST(recursion_bad_document_ranges_are_error_strings)
{
	struct env v;
	size_t len;
	char *text = docs_jsonl(&len);
	raw_contexts(&v, "bad.jsonl", text, len,
		     "rs = rlm_query_batched(['a'] * 6, contexts=[{'docs': [3, 1]}, {'docs': [0, 31]}, "
		     "{'ref': [0, 1]}, ['x', 3], {'docs': [2, 2]}, {'docs': [29, 30]}])\n"
		     "want = ['got:[]', 'got:' + repr(context[29:30])]\n"
		     "answer['content'] = '\\n'.join(rs[:4] + ['ok' if rs[4:] == want else "
		     "repr(rs[4:])])\nanswer['ready'] = True\n```");
	CHECK_STR(v.r.answer,
		  "Error: the document range [3, 1) is not a range within the context's 30 "
		  "documents\n"
		  "Error: the document range [0, 31) is not a range within the context's 30 "
		  "documents\n"
		  "Error: a reference to a slice of the context's text, but the context is a list "
		  "of documents\n"
		  "Error: a context list with an item that is not a str\n"
		  "ok");
	CHECK_INT(v.r.n_children, 2);
	env_free(&v);
	free(text);
}

/* At the last depth a reference is read from the node's context into the
 * plain call's prompt: a slice, a run of documents (joined by a blank
 * line); a bad one is an error and no call is made. */
TEST(recursion_references_at_the_last_depth_reach_the_sub_model)
{
	struct env v;
	size_t len;
	char *text = mixed_text(&len), *m, *want;
	env_init(&v, SUB_FAKE);
	v.o.max_depth = 1;
	use_context(&v, "last.txt", text, len);
	says(&v, "```repl\ng = rlm_query.__globals__\nmine = g['_one_context']\n"
		 "g['_one_context'] = lambda c, fn, what: c\n"
		 "print(rlm_query_batched(['Q1', 'Q2'], contexts=[{'ref': [0, 9]}, {'ref': [1, 2]}]))"
		 "\ng['_one_context'] = mine\nprint(rlm_query('Q3', context=context[2:70002]))\n```");
	says(&v, "FINAL(done)");
	says_full(v.sub_srv, "A1", "stop", 5, 5, 0);
	says_full(v.sub_srv, "A3", "stop", 5, 5, 0);
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(fakesrv_count(v.sub_srv), 2);
	m = message(v.sub_srv, 0, 0, NULL);
	CHECK_STR(m, "Q1\n\né日😀");
	free(m);
	m = message(v.sub_srv, 1, 0, NULL);
	{
		size_t a = char_at(text, len, 2), b = char_at(text, len, 70002);
		CHECK(strncmp(m, "Q3\n\n", 4) == 0);
		CHECK_INT(strlen(m + 4), b - a);
		CHECK(memcmp(m + 4, text + a, b - a) == 0);
	}
	free(m);
	want = xasprintf("REPL output:\n['A1', 'Error: the context reference [1, 1 + 2) starts "
			 "or ends inside a UTF-8 character']\nA3");
	CHECK_MSG_HAS(&v, 1, -1, want);
	free(want);
	env_free(&v);
	free(text);
	/* documents */
	text = docs_jsonl(&len);
	env_init(&v, SUB_FAKE);
	v.o.max_depth = 1;
	use_context(&v, "last.jsonl", text, len);
	says(&v, "```repl\nprint(rlm_query('Q', context=context[1:3]))\n```");
	says(&v, "FINAL(done)");
	says_full(v.sub_srv, "A", "stop", 5, 5, 0);
	CHECK_INT(solve(&v, "q?"), 0);
	m = message(v.sub_srv, 0, 0, NULL);
	{
		struct buf w;
		buf_init(&w, 0);
		buf_puts(&w, "Q\n\n");
		doc_text(&w, 1);
		buf_puts(&w, "\n\n");
		doc_text(&w, 2);
		CHECK_STR(m, w.p);
		buf_release(&w);
	}
	free(m);
	CHECK_MSG_HAS(&v, 1, -1, "REPL output:\nA");
	env_free(&v);
	free(text);
}

/* A child whose worker crashes gets a new one on the same view: the same
 * part of the parent's context (a slice of a str, a run of documents). */
TEST(recursion_restarted_child_keeps_its_view)
{
	static const char *const names[] = {"restart.txt", "restart.jsonl"};
	for (size_t k = 0; k < ARRAY_SIZE(names); k++) {
		struct env v;
		size_t len;
		char *text = k ? docs_jsonl(&len) : mixed_text(&len);
		env_init(&v, SUB_FAKE);
		use_context(&v, names[k], text, len);
		says(&v, "```repl\n" PY_VIEWS
			 "a = context[1000:300000] if isinstance(context, str) else context[3:25]\n"
			 "r = rlm_query('child', context=a)\n"
			 "answer['content'] = 'ok' if r == 'G' + f(a) else r\n"
			 "answer['ready'] = True\n```");
		says(&v, "```repl\nimport os\nos._exit(3)\n```");
		says(&v, "```repl\n" PY_VIEWS "answer['content'] = 'G' + f(context)\n"
			 "answer['ready'] = True\n```");
		CHECK_MSG(solve(&v, "q?") == 0, "%s", v.err.msg);
		CHECK_MSG(v.r.answer && strcmp(v.r.answer, "ok") == 0, "%s: %s", names[k],
			  v.r.answer ? v.r.answer : "(none)");
		CHECK_INT(v.r.n_children, 1);
		CHECK_INT(v.r.children[0].restarts, 1);
		CHECK_INT(v.r.children[0].iterations, 2);
		env_free(&v);
		free(text);
	}
}

/* Issue 19: an answer is cut to max_answer where a UTF-8 character ends,
 * at every node: the child's (its parent's code gets the cut one) and the
 * root's, each result saying so (answer_truncated, answer_bytes, its
 * warning) and a notice event; the result's JSON too. */
TEST(recursion_answers_are_cut_to_max_answer)
{
	struct env v;
	cJSON *j;
	env_init(&v, SUB_SIM);
	v.o.max_depth = 2;
	v.o.max_answer = 1001;
	/* the root asks a child, then answers with 3000 two-byte characters
	 * and what it got */
	says(&v, "```repl\nr = rlm_query('Say it long.')\n"
		 "answer['content'] = chr(233) * 3000 + '|' + str(len(r)) + '|' + r[-3:]\n"
		 "answer['ready'] = True\n```");
	/* the child: 'a' then 5000 of them: boundaries at odd offsets */
	says(&v, "```repl\nanswer['content'] = 'a' + chr(233) * 5000\nanswer['ready'] = True\n```");
	CHECK_MSG(solve(&v, "q?") == 0, "%s", v.err.msg);
	CHECK_INT(v.r.stop, RLM_STOP_ANSWER);
	CHECK_INT(v.r.n_children, 1);
	/* the child's: 1 + 2 * 500 bytes, its last character whole */
	CHECK(v.r.children[0].answer_truncated);
	CHECK_INT(v.r.children[0].answer_bytes, 10001);
	CHECK_INT(strlen(v.r.children[0].answer), 1001);
	CHECK_CONTAINS(v.r.children[0].warning, "the answer was cut from 10001 to 1001 bytes");
	/* the root's: 1000 bytes of its 6000 + ...; what its code got was the
	 * cut child answer (501 characters) */
	CHECK(v.r.answer_truncated);
	CHECK_INT(strlen(v.r.answer), 1000);
	CHECK_INT(v.r.answer_bytes, 6000 + strlen("|501|") + 2 * 3);
	CHECK_CONTAINS(v.r.warning, "the answer was cut from ");
	CHECK_CONTAINS(v.events.p, "notice:");
	j = rlm_result_json(&v.r, &v.o);
	CHECK(cJSON_IsTrue(json_get(j, "answer_truncated")));
	CHECK_INT(json_num(j, "answer_bytes", 0), v.r.answer_bytes);
	CHECK(cJSON_IsTrue(
	    json_get(cJSON_GetArrayItem(json_get(j, "children"), 0), "answer_truncated")));
	cJSON_Delete(j);
	env_free(&v);
}
