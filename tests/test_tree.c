/* SPDX-License-Identifier: MIT */
/* tests/test_tree.c -- the tree strategy: splitting at natural boundaries,
 * solving over the in-process simulator, counting, combining level by
 * level, partial failures, prompt templates. */
#include "harness.h"
#include "../rlm/rlm.h"
#include "../rlm/prompt.h"
#include "../sim/sim.h"
#include "../common/text.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct env {
	struct sim *sim;
	struct llm_model *model;
	struct llm_pool *pool;
};

static void env_init(struct env *e, const char *spec, int retries)
{
	struct sim_cfg sc;
	struct rlm_err err = {0, ""};
	struct llm_model_cfg cfg = {0};
	struct llm_pool_cfg pc = {16};
	sim_cfg_default(&sc);
	if (spec)
		CHECK_INT(sim_cfg_parse(spec, &sc, &err), 0);
	e->sim = sim_new(&sc);
	cfg.kind = LLM_INPROC;
	cfg.name = "sim";
	cfg.provider = &sim_provider;
	cfg.impl = e->sim;
	cfg.max_retries = retries;
	cfg.backoff_base_ms = 1;
	cfg.backoff_max_ms = 5;
	e->model = llm_model_new(&cfg, &err);
	CHECK_MSG(e->model, "%s", err.msg);
	e->pool = llm_pool_new(&pc, &err);
	CHECK(e->pool);
}

static void env_free(struct env *e)
{
	llm_pool_free(e->pool);
	llm_model_free(e->model);
	sim_free(e->sim);
}

static void opts_for(struct rlm_opts *o, struct env *e, size_t leaf)
{
	memset(o, 0, sizeof(*o));
	o->strategy = RLM_TREE;
	o->pool = e->pool;
	o->model = e->model;
	o->params = (struct llm_params)LLM_PARAMS_DEFAULT;
	o->leaf_chars = leaf;
}

/* A haystack of `lines` filler lines with `needle` at line `at`. */
static char *haystack(size_t lines, size_t at, const char *needle, size_t *len)
{
	static const char *const filler[] = {
		"The harbour was quiet that morning and the boats rocked in the grey water.",
		"Nobody in the village remembered when the old mill had last turned its wheel.",
		"A long road wound between the hills, past orchards and low stone walls.",
		"Children ran along the river bank, shouting at the ducks and the herons.",
	};
	struct buf b;
	buf_init(&b, 0);
	for (size_t i = 0; i < lines; i++) {
		if (i == at)
			buf_printf(&b, "%s\n", needle);
		buf_printf(&b, "%s\n", filler[i % 4]);
	}
	return buf_detach(&b, len);
}

TEST(split_packs_small_documents)
{
	struct corpus c = {0};
	struct corpus_doc docs[4];
	struct rlm_span *parts;
	const char *text = "aaaa\nbbbb\ncccc\ndddd\n";
	size_t n;
	for (int i = 0; i < 4; i++)
		docs[i] = (struct corpus_doc){(size_t)i * 5, 4, NULL, NULL};
	c.buf = text;
	c.len = strlen(text);
	c.docs = docs;
	c.n_docs = 4;
	n = rlm_split(&c, 64, &parts);
	CHECK_INT(n, 1);
	CHECK_INT(parts[0].off, 0);
	CHECK_INT(parts[0].len, 19);
	free(parts);
}

TEST(split_cuts_at_blank_line_then_newline)
{
	struct buf b;
	struct corpus *c;
	struct rlm_span *parts;
	size_t n, total = 0;
	buf_init(&b, 0);
	for (int i = 0; i < 40; i++)
		buf_printf(&b, "paragraph %02d line one\nparagraph %02d line two\n\n", i, i);
	c = corpus_from_text(b.p, b.len);
	n = rlm_split(c, 300, &parts);
	CHECK(n > 1);
	for (size_t i = 0; i < n; i++) {
		CHECK(parts[i].len <= 300);
		CHECK_INT(parts[i].off, total);
		total += parts[i].len;
		/* every part but the last ends at a paragraph break */
		if (i + 1 < n)
			CHECK(c->buf[parts[i].off + parts[i].len - 1] == '\n' &&
			      c->buf[parts[i].off + parts[i].len - 2] == '\n');
	}
	CHECK_INT(total, b.len);
	free(parts);
	corpus_free(c);
	buf_release(&b);
}

TEST(split_respects_utf8_without_newlines)
{
	struct buf b;
	struct corpus *c;
	struct rlm_span *parts;
	size_t n;
	buf_init(&b, 0);
	for (int i = 0; i < 500; i++)
		buf_puts(&b, "\xc3\xa9t\xc3\xa9 "); /* "été " */
	c = corpus_from_text(b.p, b.len);
	n = rlm_split(c, 257, &parts);
	CHECK(n > 1);
	for (size_t i = 0; i < n; i++)
		CHECK(text_utf8_valid(c->buf + parts[i].off, parts[i].len, NULL));
	free(parts);
	corpus_free(c);
	buf_release(&b);
}

TEST(finds_needle_in_haystack)
{
	struct env e;
	struct rlm_opts o;
	struct rlm_result r;
	struct rlm_err err = {0, ""};
	size_t len;
	char *text = haystack(20000, 13777, "One of the special magic numbers for brave-lantern is: 8264013.",
			      &len);
	struct corpus *c = corpus_from_text(text, len);
	env_init(&e, NULL, 0);
	opts_for(&o, &e, 20000);
	CHECK_INT(rlm_solve(&o, "What is the special magic number for brave-lantern mentioned in "
				"the provided text?",
			    c, &r, &err),
		  0);
	CHECK_CONTAINS(r.answer, "8264013");
	CHECK(r.found);
	CHECK(r.leaves > 50);
	CHECK_INT(r.failed_leaves, 0);
	CHECK_INT(r.calls, (long long)r.leaves); /* one partial: no combine call */
	CHECK(r.usage.input_tokens > (int64_t)len / 4);
	rlm_result_release(&r);
	corpus_free(c);
	free(text);
	env_free(&e);
}

/* The documents of the parts that answered are the answer's sources: the
 * record holding the needle, by its id, once; none when nothing answers. */
TEST(sources_are_the_documents_that_answered)
{
	static const char *const filler[] = {
		"The harbour was quiet that morning and the boats rocked in the grey water.\\n",
		"A long road wound between the hills, past orchards and low stone walls.\\n",
	};
	struct env e;
	struct rlm_opts o;
	struct rlm_result r;
	struct rlm_err err = {0, ""};
	struct buf b = BUF_INIT;
	struct corpus *c = NULL;
	for (int i = 1; i <= 30; i++) {
		buf_printf(&b, "{\"id\": \"log-2024-01-%02d\", \"title\": \"Day %d\", \"text\": \"", i, i);
		for (int k = 0; k < 40; k++)
			buf_puts(&b, filler[(i + k) % 2]);
		if (i == 17)
			buf_puts(&b, "One of the special magic numbers for brave-lantern is: 8264013.\\n");
		buf_puts(&b, "\"}\n");
	}
	CHECK_INT(corpus_from_jsonl_buf("days.jsonl", b.p, b.len, &c, &err), 0);
	env_init(&e, NULL, 0);
	opts_for(&o, &e, 2000);
	CHECK_INT(rlm_solve(&o, "What is the special magic number for brave-lantern mentioned in "
				"the provided text?",
			    c, &r, &err),
		  0);
	CHECK_CONTAINS(r.answer, "8264013");
	CHECK(r.leaves > 30);
	CHECK_INT(r.n_sources, 1);
	if (r.n_sources == 1) {
		CHECK_STR(r.sources[0].doc, "log-2024-01-17");
		CHECK(r.sources[0].start == -1 && r.sources[0].quote == NULL);
	}
	rlm_result_release(&r);
	corpus_free(c);
	/* The same records without the needle: every part says NONE. */
	buf_reset(&b);
	for (int i = 1; i <= 30; i++) {
		buf_printf(&b, "{\"id\": \"log-2024-01-%02d\", \"text\": \"", i);
		for (int k = 0; k < 40; k++)
			buf_puts(&b, filler[(i + k) % 2]);
		buf_puts(&b, "\"}\n");
	}
	CHECK_INT(corpus_from_jsonl_buf("days.jsonl", b.p, b.len, &c, &err), 0);
	CHECK_INT(rlm_solve(&o, "What is the special magic number for brave-lantern mentioned in "
				"the provided text?",
			    c, &r, &err),
		  0);
	CHECK_MSG(!r.found, "answer: %s", r.answer);
	CHECK_INT(r.n_sources, 0);
	rlm_result_release(&r);
	corpus_free(c);
	/* Small records share a part, each headed by its id: a which-record
	 * question is answered with the id, and only that record is cited,
	 * not its neighbours in the part. */
	buf_reset(&b);
	for (int i = 1; i <= 6; i++)
		buf_printf(&b, "{\"id\": \"memo-%d\", \"text\": \"%s\"}\n", i,
			   i == 4 ? "The shipment of copper valves left Rotterdam on Friday."
				  : "Nothing about cargo happened in this short note.");
	CHECK_INT(corpus_from_jsonl_buf("memos.jsonl", b.p, b.len, &c, &err), 0);
	CHECK_INT(rlm_solve(&o, "Which memo mentions the copper valves?", c, &r, &err), 0);
	CHECK_STR(r.answer, "memo-4");
	CHECK_INT(r.leaves, 1);
	CHECK_INT(r.n_sources, 1);
	if (r.n_sources == 1)
		CHECK_STR(r.sources[0].doc, "memo-4");
	rlm_result_release(&r);
	corpus_free(c);
	buf_release(&b);
	env_free(&e);
}

TEST(distractor_loses_in_combine)
{
	struct env e;
	struct rlm_opts o;
	struct rlm_result r;
	struct rlm_err err = {0, ""};
	struct buf b;
	size_t len;
	char *t1 = haystack(3000, 100, "One of the special magic numbers for quiet-falcon is: 1111111.",
			    &len);
	char *t2 = haystack(3000, 2500, "One of the special magic numbers for brave-lantern is: 2222222.",
			    &len);
	struct corpus *c;
	buf_init(&b, 0);
	buf_puts(&b, t1);
	buf_puts(&b, t2);
	c = corpus_from_text(b.p, b.len);
	env_init(&e, NULL, 0);
	opts_for(&o, &e, 30000);
	CHECK_INT(rlm_solve(&o, "What is the special magic number for brave-lantern mentioned in "
				"the provided text?",
			    c, &r, &err),
		  0);
	CHECK_CONTAINS(r.answer, "2222222");
	CHECK(!strstr(r.answer, "1111111"));
	/* No CHECK on r.levels: the part holding only quiet-falcon's needle
	 * answers NONE (the sub-model needs the question's key), so the
	 * distractor may never reach a combine; test_sim's
	 * policy_combine_distractor_loses covers the combiner itself. */
	rlm_result_release(&r);
	corpus_free(c);
	buf_release(&b);
	free(t1);
	free(t2);
	env_free(&e);
}

TEST(counts_are_summed_across_parts)
{
	struct env e;
	struct rlm_opts o;
	struct rlm_result r;
	struct rlm_err err = {0, ""};
	struct buf b;
	struct corpus *c;
	buf_init(&b, 0);
	for (int i = 0; i < 3000; i++) {
		if (i % 100 == 7)
			buf_printf(&b, "incident %d: a small kitchen fire was reported\n", i);
		else
			buf_printf(&b, "entry %d: routine patrol, nothing to report\n", i);
	}
	c = corpus_from_text(b.p, b.len);
	env_init(&e, NULL, 0);
	opts_for(&o, &e, 8000);
	CHECK_INT(rlm_solve(&o, "How many lines mention a fire?", c, &r, &err), 0);
	CHECK_STR(r.answer, "30");
	CHECK(r.levels >= 1);
	rlm_result_release(&r);
	corpus_free(c);
	buf_release(&b);
	env_free(&e);
}

TEST(combines_level_by_level)
{
	struct env e;
	struct rlm_opts o;
	struct rlm_result r;
	struct rlm_err err = {0, ""};
	struct buf b;
	struct corpus *c;
	buf_init(&b, 0);
	for (int i = 0; i < 4000; i++)
		buf_printf(&b, "record %d: the alarm rang at dawn\n", i);
	c = corpus_from_text(b.p, b.len);
	env_init(&e, NULL, 0);
	/* tiny parts: hundreds of partial counts that need several levels */
	opts_for(&o, &e, 400);
	CHECK_INT(rlm_solve(&o, "How many records mention an alarm?", c, &r, &err), 0);
	CHECK_STR(r.answer, "4000");
	CHECK(r.levels >= 2);
	rlm_result_release(&r);
	corpus_free(c);
	buf_release(&b);
	env_free(&e);
}

TEST(answer_none_when_absent)
{
	struct env e;
	struct rlm_opts o;
	struct rlm_result r;
	struct rlm_err err = {0, ""};
	size_t len;
	char *text = haystack(2000, 99999, "", &len);
	struct corpus *c = corpus_from_text(text, len);
	env_init(&e, NULL, 0);
	opts_for(&o, &e, 10000);
	CHECK_INT(rlm_solve(&o, "What is the special magic number for brave-lantern?", c, &r, &err),
		  0);
	CHECK_STR(r.answer, "NONE");
	CHECK(!r.found);
	rlm_result_release(&r);
	corpus_free(c);
	free(text);
	env_free(&e);
}

TEST(failed_parts_give_a_warning)
{
	struct env e;
	struct rlm_opts o;
	struct rlm_result r;
	struct rlm_err err = {0, ""};
	size_t len;
	char *text = haystack(20000, 10, "One of the special magic numbers for brave-lantern is: 8264013.",
			      &len);
	struct corpus *c = corpus_from_text(text, len);
	/* no retries and 30% server errors: some parts fail */
	env_init(&e, "500=0.3,seed=5", 0);
	opts_for(&o, &e, 20000);
	CHECK_INT(rlm_solve(&o, "What is the special magic number for brave-lantern?", c, &r, &err),
		  0);
	CHECK(r.failed_leaves > 0);
	CHECK(r.failed_leaves < r.leaves);
	CHECK_CONTAINS(r.warning, "could not be read");
	rlm_result_release(&r);
	corpus_free(c);
	free(text);
	env_free(&e);
}

TEST(every_part_failing_is_an_error)
{
	struct env e;
	struct rlm_opts o;
	struct rlm_result r;
	struct rlm_err err = {0, ""};
	struct corpus *c = corpus_from_text("some text\n", 10);
	env_init(&e, "500=1", 1);
	opts_for(&o, &e, 1000);
	CHECK(rlm_solve(&o, "What is it?", c, &r, &err) != 0);
	CHECK_CONTAINS(err.msg, "500");
	CHECK_CONTAINS(err.msg, "gave up after 2 attempts");
	CHECK_INT(r.calls, 1);
	rlm_result_release(&r);
	corpus_free(c);
	env_free(&e);
}

TEST(empty_question_is_an_error)
{
	struct env e;
	struct rlm_opts o;
	struct rlm_result r;
	struct rlm_err err = {0, ""};
	struct corpus *c = corpus_from_text("x\n", 2);
	env_init(&e, NULL, 0);
	opts_for(&o, &e, 1000);
	CHECK_INT(rlm_solve(&o, "", c, &r, &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "question is empty");
	rlm_result_release(&r);
	corpus_free(c);
	env_free(&e);
}

TEST(prompt_templates)
{
	struct buf b;
	struct rlm_err err = {0, ""};
	struct prompt_var v[3] = {{"question", "Q?", 0}, {"text", "T", 0}, {"doc_note", "", 0}};
	buf_init(&b, 0);
	CHECK_INT(rlm_prompt_render("tree_leaf.txt", v, 3, &b, &err), 0);
	CHECK_CONTAINS(b.p, "Question: Q?");
	CHECK_CONTAINS(b.p, "Text:\nT");
	buf_reset(&b);
	CHECK_INT(rlm_prompt_render_text("a {{nope}} b", 12, v, 2, &b, &err), RLM_EPARSE);
	CHECK_CONTAINS(err.msg, "unknown placeholder '{{nope}}'");
	buf_reset(&b);
	CHECK_INT(rlm_prompt_render_text("a {{question", 12, v, 2, &b, &err), RLM_EPARSE);
	CHECK_CONTAINS(err.msg, "unterminated");
	buf_reset(&b);
	CHECK_INT(rlm_prompt_render("missing.txt", v, 2, &b, &err), RLM_ENOTFOUND);
	buf_release(&b);
}

static void *cancel_soon(void *arg)
{
	time_sleep_ns(100000000);
	atomic_store((atomic_bool *)arg, true);
	return NULL;
}

TEST(cancel_ends_the_solve)
{
	struct env e;
	struct rlm_opts o;
	struct rlm_result r;
	struct rlm_err err = {0, ""};
	size_t len;
	char *text = haystack(20000, 10, "One of the special magic numbers for brave-lantern is: 8264013.",
			      &len);
	struct corpus *c = corpus_from_text(text, len);
	atomic_bool flag = false;
	pthread_t th;
	int64_t t0 = time_now_ns();
	env_init(&e, "ttft=400ms", 0);
	opts_for(&o, &e, 20000);
	o.cancel = &flag;
	pthread_create(&th, NULL, cancel_soon, &flag);
	CHECK_INT(rlm_solve(&o, "What is the special magic number for brave-lantern?", c, &r, &err),
		  RLM_ECANCEL);
	pthread_join(th, NULL);
	CHECK_CONTAINS(err.msg, "cancelled");
	CHECK_MSG(time_now_ns() - t0 < 2000000000LL, "took %lld ms", (long long)(time_now_ns() - t0) / 1000000);
	rlm_result_release(&r);
	corpus_free(c);
	free(text);
	env_free(&e);
}

/* Limits, as in the repl strategy: a part is a sub-call and a combining
 * call a root call; a limit stops the solve where it is, the parts not
 * asked are unread, and the answer is what was found (rlm_result.stop). */
TEST(budgets_stop_the_tree)
{
	static const char q[] = "What is the special magic number for brave-lantern?";
	struct env e;
	struct rlm_opts o;
	struct rlm_result r;
	struct rlm_err err = {0, ""};
	size_t len;
	/* the needle early: the parts asked first find it */
	char *text = haystack(20000, 10, "One of the special magic numbers for brave-lantern is: 8264013.",
			      &len);
	struct corpus *c = corpus_from_text(text, len);
	struct llm_price price = {1.0, 1.0, 1.0, 1.0, true};
	struct llm_model *paid;
	struct llm_model_cfg cfg = {0};
	env_init(&e, NULL, 0);

	/* every model call counts: 5 of the ~75 parts are asked */
	opts_for(&o, &e, 20000);
	o.window = 2;
	o.max_calls = 5;
	CHECK_INT(rlm_solve(&o, q, c, &r, &err), 0);
	CHECK_INT(r.stop, RLM_STOP_MAX_CALLS);
	CHECK_CONTAINS(r.stop_detail, "call budget exhausted (5 of 5");
	CHECK_INT(r.calls, 5);
	CHECK_INT(r.failed_leaves, (long long)r.leaves - 5);
	CHECK_CONTAINS(r.warning, "not sent: call budget exhausted");
	CHECK_CONTAINS(r.answer, "8264013"); /* found in what was read */
	rlm_result_release(&r);

	/* sub-calls: the parts */
	o.max_calls = 0;
	o.max_sub_calls = 3;
	CHECK_INT(rlm_solve(&o, q, c, &r, &err), 0);
	CHECK_INT(r.stop, RLM_STOP_CALLS);
	CHECK_INT(r.calls, 3);
	rlm_result_release(&r);

	/* tokens: a part is ~5,000; 12,000 allow two */
	o.max_sub_calls = 0;
	o.max_tokens = 12000;
	CHECK_INT(rlm_solve(&o, q, c, &r, &err), 0);
	CHECK_INT(r.stop, RLM_STOP_TOKENS);
	CHECK_INT(r.calls, 2);
	CHECK(r.usage.input_tokens + r.usage.output_tokens <= 12000);
	rlm_result_release(&r);

	/* cost, at $1 per million tokens: ~$0.005 a part */
	cfg.kind = LLM_INPROC;
	cfg.name = "sim";
	cfg.provider = &sim_provider;
	cfg.impl = e.sim;
	cfg.price = &price;
	paid = llm_model_new(&cfg, &err);
	CHECK_MSG(paid, "%s", err.msg);
	o.model = paid;
	o.max_tokens = 0;
	o.max_cost = 0.02;
	CHECK_INT(rlm_solve(&o, q, c, &r, &err), 0);
	CHECK_INT(r.stop, RLM_STOP_COST);
	CHECK(r.calls >= 2 && r.calls <= 4);
	CHECK(r.cost <= 0.02);
	rlm_result_release(&r);

	/* roomy budgets change nothing */
	o.max_cost = 100;
	o.max_calls = 1000;
	CHECK_INT(rlm_solve(&o, q, c, &r, &err), 0);
	CHECK_INT(r.stop, RLM_STOP_ANSWER);
	CHECK(!r.stop_detail);
	CHECK_INT(r.failed_leaves, 0);
	CHECK_CONTAINS(r.answer, "8264013");
	rlm_result_release(&r);
	llm_model_free(paid);
	corpus_free(c);
	free(text);
	env_free(&e);
}

/* The time limit ends calls in flight: a slow model, a limit of 300 ms. */
TEST(time_limit_stops_the_tree)
{
	struct env e;
	struct rlm_opts o;
	struct rlm_result r;
	struct rlm_err err = {0, ""};
	size_t len;
	char *text = haystack(20000, 10, "One of the special magic numbers for brave-lantern is: 8264013.",
			      &len);
	struct corpus *c = corpus_from_text(text, len);
	int64_t t0 = time_now_ns();
	env_init(&e, "ttft=5s", 0);
	opts_for(&o, &e, 20000);
	o.timeout_ns = 300000000LL;
	CHECK_INT(rlm_solve(&o, "What is the special magic number for brave-lantern?", c, &r, &err),
		  0);
	CHECK_MSG(time_now_ns() - t0 < 2000000000LL, "took %lld ms", (long long)(time_now_ns() - t0) / 1000000);
	CHECK_INT(r.stop, RLM_STOP_TIMEOUT);
	CHECK_CONTAINS(r.stop_detail, "time limit of 300 ms reached");
	CHECK(!r.answer);
	CHECK_INT(r.failed_leaves, (long long)r.leaves);
	rlm_result_release(&r);
	corpus_free(c);
	free(text);
	env_free(&e);
}
