/* SPDX-License-Identifier: MIT */
/* tests/test_compact.c -- compaction of a node's conversation
 * (rlm/compact.c): a solve of 100 turns on the simulator with a small
 * window stays under it and still answers, and overflows without
 * compaction; with a fake root model on loopback, what the summary call
 * was sent, what replaced the turns, and the fallback when the summary
 * call fails; the simulator's summary comes from the turns it is shown. */
#include "loopenv.h"
#include "../sim/sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 8000 /* tokens of the small model */

/* ---- a long solve on the simulator ---- */

/* The "call" and "notice" events of a solve, kept for the checks. */
struct seen {
	pthread_mutex_t mu;
	int calls, compact_calls, over, notices;
	long max_prompt_chars;
	struct buf notes;
};

static void on_seen(const struct rlm_event *e, void *arg)
{
	struct seen *s = arg;
	pthread_mutex_lock(&s->mu);
	if (strcmp(e->kind, "call") == 0 && e->data_json) {
		cJSON *d = json_parse(e->data_json, strlen(e->data_json));
		const char *role = json_str(d, "role");
		long chars = (long)json_num(d, "prompt_chars", -1);
		CHECK(chars >= 0);
		if (role && strcmp(role, "sub") != 0) {
			s->calls++;
			s->compact_calls += strcmp(role, "compact") == 0;
			if (chars > s->max_prompt_chars)
				s->max_prompt_chars = chars;
			/* the sim counts ceil(bytes / 4) tokens; these are ASCII */
			s->over += (chars + 3) / 4 > WINDOW;
		}
		cJSON_Delete(d);
	} else if (strcmp(e->kind, "notice") == 0) {
		s->notices++;
		buf_append(&s->notes, e->text, e->len);
		buf_putc(&s->notes, '\n');
	}
	pthread_mutex_unlock(&s->mu);
}

/* A text of 800 sentences with one needle, of another shape than the
 * benchmark generator's. */
static struct corpus *needle_text(void)
{
	static const char *const words[] = {"the",    "of",	"river",    "stone",
					    "lamp",   "quiet",	"northern", "market",
					    "harbor", "window", "garden",   "letter"};
	struct buf b = BUF_INIT;
	struct corpus *c;
	uint64_t st = 3;
	for (int i = 0; i < 800; i++) {
		if (i == 517)
			buf_puts(&b, "The access code for the Vesper vault is 4471-QX.\n");
		for (int w = 0; w < 12; w++)
			buf_printf(&b, "%s%s", w ? " " : "River ",
				   words[rng_splitmix64(&st) % ARRAY_SIZE(words)]);
		buf_puts(&b, ".\n");
	}
	c = corpus_from_text(b.p, b.len);
	buf_release(&b);
	return c;
}

/* Solve the needle question in 100 exploring turns on the simulator,
 * whose window is WINDOW tokens (it refuses more, as a provider does). */
static int long_solve(bool no_compaction, struct seen *s, struct rlm_result *r, struct rlm_err *err)
{
	struct rlm_models_cfg mc;
	struct rlm_models ms;
	struct rlm_opts o;
	struct corpus *ctx = needle_text();
	int rc;
	sim_provider_register();
	rlm_models_cfg_init(&mc);
	mc.provider = "sim";
	mc.provider_spec = "explore=100,window=8000";
	mc.sub_context_window = WINDOW;
	mc.concurrency = 4;
	mc.quiet = true;
	CHECK_MSG(rlm_models_init(&ms, &mc, err) == 0, "%s", err->msg);
	CHECK_INT(llm_model_context_window(ms.model), WINDOW);
	memset(&o, 0, sizeof(o));
	o.strategy = RLM_REPL;
	o.pool = ms.pool;
	o.model = ms.model;
	o.sub_model = ms.sub;
	o.params = ms.params;
	o.max_iterations = 120;
	o.no_compaction = no_compaction;
	o.event = on_seen;
	o.event_arg = s;
	o.detail_events = true;
	o.trajectory = true;
	rc = rlm_solve(&o, "What is the access code for the Vesper vault?", ctx, r, err);
	rlm_models_release(&ms);
	corpus_free(ctx);
	return rc;
}

TEST(compaction_keeps_a_100_turn_solve_under_the_window)
{
	struct seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
	struct rlm_result r;
	struct rlm_err err = {0, ""};
	size_t kept_turns = 0;
	buf_init(&s.notes, 0);
	CHECK_MSG(long_solve(false, &s, &r, &err) == 0, "%s", err.msg);
	CHECK_STR(rlm_stop_name(r.stop), "answer");
	CHECK_CONTAINS(r.answer, "4471-QX");
	CHECK(r.iterations >= 100);
	CHECK_MSG(r.compactions >= 2, "%d compactions", r.compactions);
	CHECK_INT(s.compact_calls, r.compactions);
	/* every root call, the summaries' too, stayed under the window */
	CHECK_INT(s.over, 0);
	CHECK(s.max_prompt_chars > WINDOW * 4 / 2);
	CHECK_INT(s.calls, r.root_calls);
	CHECK_INT(r.root_calls, r.iterations + r.compactions);
	CHECK_CONTAINS(s.notes.p, "the conversation was compacted: turns 1 to ");
	CHECK_CONTAINS(s.notes.p, "became a summary");
	CHECK(!strstr(s.notes.p, "summary call failed"));
	/* the trajectory keeps every turn */
	for (size_t i = 0; i < r.n_turns; i++)
		kept_turns += r.turns[i].reply != NULL;
	CHECK_INT(kept_turns, (size_t)r.iterations);
	rlm_result_release(&r);
	buf_release(&s.notes);
}

TEST(no_compaction_overflows_the_window)
{
	struct seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
	struct rlm_result r;
	struct rlm_err err = {0, ""};
	buf_init(&s.notes, 0);
	CHECK(long_solve(true, &s, &r, &err) != 0);
	CHECK_STR(rlm_stop_name(r.stop), "error");
	CHECK_CONTAINS(r.stop_detail, "maximum context length is 8000 tokens");
	CHECK_INT(r.compactions, 0);
	CHECK_INT(s.compact_calls, 0);
	CHECK(r.iterations < 100);
	CHECK(!r.answer || !strstr(r.answer, "4471-QX"));
	rlm_result_release(&r);
	buf_release(&s.notes);
}

/* ---- what the summary call is sent, and what replaces the turns ---- */

/* Two turns of code on the fake root model, then the compaction call. */
static void two_turns(struct env *v)
{
	v->o.compaction_threshold = 0.01; /* 1,000 tokens of a 100,000 window */
	says(v, "Let me index it.\n```repl\nidx = {'alpha': 1}\nprint('indexed', len(idx))\n```");
	says(v, "Now the count.\n```repl\nfound = [k for k in idx]\nprint('answer: alpha')\n```");
}

TEST(compaction_summary_replaces_the_older_turns)
{
	struct env v;
	cJSON *j;
	const char *role;
	char *m;
	env_init(&v, SUB_SIM);
	two_turns(&v);
	says(&v, "Questions: q\nVariables: idx\nFindings: alpha was found\nNext: finish");
	says(&v, "FINAL(alpha)");
	CHECK_MSG(solve(&v, "Which word comes first?") == 0, "%s", v.err.msg);
	CHECK_STR(v.r.answer, "alpha");
	CHECK_INT(v.r.compactions, 1);
	CHECK_INT(v.r.root_calls, 4);
	CHECK_INT(fakesrv_count(v.root_srv), 4);
	/* request 2 is the summary call: its instructions, then turn 1 */
	j = request(v.root_srv, 2);
	CHECK_INT(cJSON_GetArraySize(json_get(j, "messages")), 2);
	cJSON_Delete(j);
	m = message(v.root_srv, 2, 0, &role);
	CHECK_STR(role, "system");
	CHECK_CONTAINS(m, "Summarise the earlier turns of a REPL session");
	CHECK_CONTAINS(m, "turns 1,");
	CHECK_CONTAINS(m, "(they are: ");
	CHECK_CONTAINS(m, "found");
	CHECK_CONTAINS(m, "idx");
	free(m);
	m = message(v.root_srv, 2, 1, &role);
	CHECK_STR(role, "user");
	CHECK_CONTAINS(m, "## Turn 1: the model's reply\nLet me index it.");
	CHECK_CONTAINS(m, "## Turn 1: what the REPL answered");
	CHECK_CONTAINS(m, "indexed 1");
	CHECK(!strstr(m, "Now the count")); /* turn 2 is kept, not summarised */
	free(m);
	/* request 3: system, question, the summary pair, turn 2 */
	CHECK_INT(n_messages(v.root_srv, 3), 6);
	m = message(v.root_srv, 3, 1, &role);
	CHECK_STR(role, "user");
	CHECK_CONTAINS(m, "Question: Which word comes first?");
	free(m);
	m = message(v.root_srv, 3, 2, &role);
	CHECK_STR(role, "assistant");
	CHECK_CONTAINS(m, "[Summary of turn 1, compacted to fit the context window]\nQuestions: q");
	free(m);
	m = message(v.root_srv, 3, 3, &role);
	CHECK_STR(role, "user");
	CHECK_CONTAINS(m, "The REPL was not reset: its variables (");
	CHECK_CONTAINS(m, ") still hold everything that turn computed");
	free(m);
	m = message(v.root_srv, 3, 4, &role);
	CHECK_STR(role, "assistant");
	CHECK_CONTAINS(m, "Now the count.");
	free(m);
	m = message(v.root_srv, 3, 5, &role);
	CHECK_STR(role, "user");
	CHECK_CONTAINS(m, "answer: alpha");
	free(m);
	pthread_mutex_lock(&v.mu);
	CHECK_CONTAINS(v.events.p, "notice:3\n");
	pthread_mutex_unlock(&v.mu);
	env_free(&v);
}

TEST(compaction_summary_failure_drops_the_turns)
{
	struct env v;
	struct fake_reply bad = {400, NULL,
				 "{\"error\":{\"message\":\"summary refused\",\"type\":"
				 "\"invalid_request_error\",\"code\":null}}",
				 FAKE_NORMAL, 0};
	const char *role;
	char *m;
	env_init(&v, SUB_SIM);
	two_turns(&v);
	fakesrv_push(v.root_srv, &bad);
	says(&v, "FINAL(alpha)");
	CHECK_MSG(solve(&v, "Which word comes first?") == 0, "%s", v.err.msg);
	CHECK_STR(rlm_stop_name(v.r.stop), "answer");
	CHECK_STR(v.r.answer, "alpha");
	CHECK_INT(v.r.compactions, 1);
	CHECK_INT(v.r.failed_calls, 1);
	CHECK_INT(n_messages(v.root_srv, 3), 6);
	m = message(v.root_srv, 3, 2, &role);
	CHECK_STR(role, "assistant");
	CHECK_CONTAINS(m, "[Summary of turn 1, dropped to fit the context window");
	free(m);
	m = message(v.root_srv, 3, 3, NULL);
	CHECK_CONTAINS(m, "(Turn 1 was dropped (no summary could be made) to keep the "
			  "conversation within the context window. The REPL was not reset");
	free(m);
	m = message(v.root_srv, 3, 4, NULL);
	CHECK_CONTAINS(m, "Now the count.");
	free(m);
	pthread_mutex_lock(&v.mu);
	CHECK_CONTAINS(v.events.p, "notice:3\nnotice:3\n"); /* the failure, then what was done */
	pthread_mutex_unlock(&v.mu);
	env_free(&v);
}

/* A conversation under the threshold is sent as it is; so is one with
 * compaction off, whatever its size. */
TEST(compaction_off_or_under_the_threshold_sends_everything)
{
	for (int off = 0; off < 2; off++) {
		struct env v;
		env_init(&v, SUB_SIM);
		if (off) {
			two_turns(&v);
			v.o.no_compaction = true;
		} else {
			says(&v, "```repl\nidx = {'alpha': 1}\n```");
			says(&v, "```repl\nprint('answer: alpha')\n```");
		}
		says(&v, "FINAL(alpha)");
		CHECK_MSG(solve(&v, "Which word comes first?") == 0, "%s", v.err.msg);
		CHECK_INT(v.r.compactions, 0);
		CHECK_INT(fakesrv_count(v.root_srv), 3);
		CHECK_INT(n_messages(v.root_srv, 2), 6);
		env_free(&v);
	}
}

/* A second compaction folds the first summary in and goes on numbering
 * the turns. */
TEST(compaction_folds_an_earlier_summary)
{
	struct env v;
	char *m;
	env_init(&v, SUB_SIM);
	two_turns(&v);
	says(&v, "Findings: first summary");
	says(&v, "```repl\nprint('three')\n```");
	says(&v, "Findings: second summary");
	says(&v, "FINAL(alpha)");
	CHECK_MSG(solve(&v, "Which word comes first?") == 0, "%s", v.err.msg);
	CHECK_STR(v.r.answer, "alpha");
	CHECK_INT(v.r.compactions, 2);
	/* requests: t1, t2, sum1, t3, sum2, t4 */
	CHECK_INT(fakesrv_count(v.root_srv), 6);
	m = message(v.root_srv, 4, 0, NULL);
	CHECK_CONTAINS(m, "turns 1 to 2,");
	free(m);
	m = message(v.root_srv, 4, 1, NULL);
	CHECK_CONTAINS(m, "## Turns 1 to 1 (the summary of an earlier compaction)");
	CHECK_CONTAINS(m, "Findings: first summary");
	CHECK_CONTAINS(m, "## Turn 2: the model's reply\nNow the count.");
	free(m);
	m = message(v.root_srv, 5, 2, NULL);
	CHECK_CONTAINS(m, "[Summary of turns 1 to 2, compacted");
	CHECK_CONTAINS(m, "second summary");
	free(m);
	CHECK_INT(n_messages(v.root_srv, 5), 6);
	env_free(&v);
}

/* ---- options ---- */

TEST(compaction_options_in_the_config_only_when_not_default)
{
	struct rlm_opts o;
	char *c;
	memset(&o, 0, sizeof(o));
	c = rlm_config_json(&o);
	CHECK(!strstr(c, "compaction"));
	free(c);
	o.compaction_threshold = 0.85;
	c = rlm_config_json(&o);
	CHECK(!strstr(c, "compaction"));
	free(c);
	o.compaction_threshold = 0.5;
	c = rlm_config_json(&o);
	CHECK_CONTAINS(c, "\"compaction_threshold\":0.5");
	free(c);
	o.no_compaction = true;
	c = rlm_config_json(&o);
	CHECK_CONTAINS(c, "\"compaction\":false");
	free(c);
}

TEST(compaction_threshold_out_of_range_is_refused)
{
	struct env v;
	env_init(&v, SUB_SIM);
	v.o.compaction_threshold = 1.5;
	CHECK_INT(solve(&v, "Which word comes first?"), RLM_EINVAL);
	CHECK_CONTAINS(v.err.msg, "bad compaction threshold 1.5: want a fraction in (0, 1]");
	CHECK_INT(fakesrv_count(v.root_srv), 0);
	env_free(&v);
}

/* ---- the simulator's summary ---- */

TEST(sim_summary_comes_from_the_turns_shown)
{
	static const char sys[] =
	    "Summarise the earlier turns of a REPL session so that it can go on without them. "
	    "... its variables keep everything those turns computed (they are: idx, rows).";
	static const char turns[] =
	    "## Turns 1 to 3 (the summary of an earlier compaction)\n"
	    "[Summary of turns 1 to 3, compacted to fit the context window]\n"
	    "Questions: Who wrote the memo?\n"
	    "Variables: idx: dict\n"
	    "Findings: search 'memo': 3 hits in 2 documents; # step 2: ran\n"
	    "Next: read them\n\n"
	    "## Turn 4: the model's reply\n"
	    "Now I will ask about the lines that hold it.\n"
	    "```repl\n# step 2: ask\nprint('answer: ' + a)\n```\n\n"
	    "## Turn 4: what the REPL answered\n"
	    "REPL output:\n"
	    "answer: Ada Lovelace wrote the memo.\n"
	    "Question: What year was it?\n"
	    "REPL variables: found: list, answers: list, idx: dict";
	struct llm_msg m[2] = {{LLM_SYSTEM, sys, sizeof(sys) - 1},
			       {LLM_USER, turns, sizeof(turns) - 1}};
	char *r = sim_reply_text(NULL, m, 2);
	CHECK_CONTAINS(r, "Questions: Who wrote the memo?; What year was it?\n");
	CHECK_CONTAINS(r, "Variables: idx; rows; idx: dict; found: list; answers: list\n");
	CHECK_CONTAINS(r, "Findings: search 'memo': 3 hits in 2 documents; #step 2: ran; answer: "
			  "Ada Lovelace wrote the memo.\n");
	CHECK_CONTAINS(r, "Next: Now I will ask about the lines that hold it.");
	CHECK(!strstr(r, "# step")); /* the root policy's markers stay in the turns */
	free(r);
	/* nothing in the turns: it says so, and invents nothing */
	m[0] = (struct llm_msg){LLM_SYSTEM, sys, (size_t)(strstr(sys, " ...") - sys)};
	m[1] = (struct llm_msg){LLM_USER, "## Turn 1: the model's reply\nLooking.",
				strlen("## Turn 1: the model's reply\nLooking.")};
	r = sim_reply_text(NULL, m, 2);
	CHECK_STR(r, "Questions: none asked in these turns\nVariables: none named in these turns\n"
		     "Findings: nothing found yet\nNext: Looking.");
	free(r);
}

/* The simulator refuses a prompt over its window as a provider does (400,
 * context_length_exceeded) and answers one under it. */
TEST(sim_window_refuses_a_prompt_over_it)
{
	struct sim_cfg sc;
	struct rlm_err err = {0, ""};
	struct sim *s;
	struct sim_reply rep;
	struct buf body = BUF_INIT;
	char id[128];
	sim_cfg_default(&sc);
	CHECK_INT(sim_cfg_parse("window=1k,explore=3", &sc, &err), 0);
	CHECK_INT(sc.window, 1000);
	CHECK_INT(sc.explore, 3);
	CHECK_INT(sim_cfg_parse("window=x", &sc, &err), RLM_EINVAL);
	s = sim_new(&sc);
	sim_cache_id(s, id, sizeof(id));
	CHECK_STR(id, "seed=1,code_errors=0,chunk=0,rlm_chunks=128,window=1000,explore=3");
	buf_puts(&body, "{\"model\":\"sim\",\"messages\":[{\"role\":\"user\",\"content\":\"");
	for (int i = 0; i < 4000; i++)
		buf_putc(&body, 'a');
	buf_puts(&body, "\"}]}");
	CHECK_INT(sim_handle(s, body.p, body.len, &rep), 0);
	CHECK_INT(rep.status, 200); /* 4,000 bytes: 1,000 tokens */
	sim_reply_release(&rep);
	buf_release(&body);
	buf_init(&body, 0);
	buf_puts(&body, "{\"model\":\"sim\",\"messages\":[{\"role\":\"user\",\"content\":\"");
	for (int i = 0; i < 4001; i++)
		buf_putc(&body, 'a');
	buf_puts(&body, "\"}]}");
	CHECK_INT(sim_handle(s, body.p, body.len, &rep), 0);
	CHECK_INT(rep.status, 400);
	CHECK_CONTAINS(rep.body, "\"code\":\"context_length_exceeded\"");
	CHECK_CONTAINS(rep.body, "maximum context length is 1000 tokens. However, your messages "
				 "resulted in 1001 tokens");
	sim_reply_release(&rep);
	buf_release(&body);
	sim_free(s);
}

/* ---- a long session: 100 questions on one conversation ---- */

/* Ask the vault question n times on one session over the needle text, on
 * the simulator with a WINDOW-token window; stops at the first failure.
 * Returns how many were answered right, compactions in *compactions. */
static int long_session(bool no_compaction, int n, struct seen *s, int *compactions,
			char *why, size_t cap)
{
	struct rlm_models_cfg mc;
	struct rlm_models ms;
	struct rlm_opts o;
	struct rlm_session *sess = NULL;
	struct rlm_session_info in;
	struct rlm_err err = {0, ""};
	struct corpus *ctx = needle_text();
	int right = 0;
	sim_provider_register();
	rlm_models_cfg_init(&mc);
	mc.provider = "sim";
	mc.provider_spec = "window=8000";
	mc.sub_context_window = WINDOW;
	mc.concurrency = 4;
	mc.quiet = true;
	CHECK_MSG(rlm_models_init(&ms, &mc, &err) == 0, "%s", err.msg);
	memset(&o, 0, sizeof(o));
	o.strategy = RLM_REPL;
	o.pool = ms.pool;
	o.model = ms.model;
	o.sub_model = ms.sub;
	o.params = ms.params;
	o.no_compaction = no_compaction;
	o.event = on_seen;
	o.event_arg = s;
	o.detail_events = true;
	CHECK_MSG(rlm_session_new(&o, ctx, &sess, &err) == 0, "%s", err.msg);
	for (int i = 0; i < n; i++) {
		struct rlm_result r;
		int rc = rlm_session_solve(sess, NULL, "What is the access code for the Vesper vault?",
					   &r, &err);
		if (rc || !r.answer || !strstr(r.answer, "4471-QX")) {
			snprintf(why, cap, "question %d: %s", i + 1,
				 rc ? err.msg : r.answer ? r.answer : "(no answer)");
			rlm_result_release(&r);
			break;
		}
		right++;
		rlm_result_release(&r);
	}
	rlm_session_info(sess, &in);
	*compactions = in.compactions;
	rlm_session_free(sess);
	rlm_models_release(&ms);
	corpus_free(ctx);
	return right;
}

TEST(compaction_keeps_a_100_question_session_under_the_window)
{
	struct seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
	char why[400] = "";
	int compactions = 0, right;
	buf_init(&s.notes, 0);
	right = long_session(false, 100, &s, &compactions, why, sizeof(why));
	CHECK_MSG(right == 100, "%d right; %s", right, why);
	CHECK_MSG(compactions >= 2, "%d compactions", compactions);
	CHECK_INT(s.compact_calls, compactions);
	CHECK_INT(s.over, 0); /* no root call went over the window */
	buf_release(&s.notes);
	/* without compaction the same session outgrows the window */
	memset(&s, 0, sizeof(s));
	pthread_mutex_init(&s.mu, NULL);
	buf_init(&s.notes, 0);
	right = long_session(true, 100, &s, &compactions, why, sizeof(why));
	CHECK_MSG(right < 100, "%d right", right);
	CHECK_CONTAINS(why, "maximum context length is 8000 tokens");
	CHECK_INT(compactions, 0);
	buf_release(&s.notes);
	pthread_mutex_destroy(&s.mu);
}
