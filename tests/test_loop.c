/* SPDX-License-Identifier: MIT */
/* tests/test_loop.c -- the RLM loop with real parts: a real Python worker,
 * a fake server on loopback playing the root model with scripted replies
 * (whose recorded requests show what the model was sent), and the
 * simulator or a second fake server as the sub-model (tests/loopenv.h).
 * Child RLMs are tested in test_recursion.c. */
#include "loopenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* n with thousands separators, into buf (32 bytes). */
static char *commas(char *buf, size_t n)
{
	char d[24];
	int len = snprintf(d, sizeof(d), "%zu", n), k = 0;
	for (int i = 0; i < len; i++) {
		if (i && (len - i) % 3 == 0)
			buf[k++] = ',';
		buf[k++] = d[i];
	}
	buf[k] = '\0';
	return buf;
}

/* Every request to s starts with all the messages of the one before it,
 * unchanged (append-only history, a stable prefix for prompt caches), and
 * no message is empty (providers refuse an empty assistant message). */
static void check_append_only(struct fakesrv *s)
{
	for (size_t i = 0; i < fakesrv_count(s); i++) {
		cJSON *cur = request(s, i), *cm = json_get(cur, "messages");
		for (int k = 0; k < cJSON_GetArraySize(cm); k++) {
			const char *t = json_str(cJSON_GetArrayItem(cm, k), "content");
			CHECK_MSG(t && *t, "request %zu: message %d is empty", i, k);
		}
		if (i) {
			cJSON *prev = request(s, i - 1), *pm = json_get(prev, "messages");
			int n = cJSON_GetArraySize(pm);
			CHECK_MSG(cJSON_GetArraySize(cm) > n, "request %zu has %d messages, not more "
				  "than the %d of the one before", i, cJSON_GetArraySize(cm), n);
			for (int k = 0; k < n; k++)
				CHECK_MSG(cJSON_Compare(cJSON_GetArrayItem(pm, k),
							cJSON_GetArrayItem(cm, k), true),
					  "request %zu: message %d differs from request %zu's", i, k,
					  i - 1);
			cJSON_Delete(prev);
		}
		cJSON_Delete(cur);
	}
}

/* ---- answers ---- */

TEST(answer_dict_over_two_turns_keeps_variables)
{
	struct env v;
	const char *t1 = "Let me compute.\n```repl\nx = 6 * 7\nprint('x is', x)\n```\n";
	char *m, *a, *b;
	const char *role;
	env_init(&v, SUB_SIM);
	says(&v, t1);
	says(&v, "```repl\nanswer['content'] = str(x)\nanswer['ready'] = True\n```");
	CHECK_INT(solve(&v, "What is x?"), 0);
	CHECK_STR(v.r.answer, "42");
	CHECK_INT(v.r.stop, RLM_STOP_ANSWER);
	CHECK(v.r.found);
	CHECK_INT(v.r.iterations, 2);
	CHECK_INT(v.r.execs, 2);
	CHECK_INT(v.r.error_turns, 0);
	CHECK_INT(v.r.calls, 2);
	CHECK_INT(v.r.root_usage.input_tokens, 200);
	CHECK_INT(v.r.usage.output_tokens, 40);
	CHECK_INT(v.r.sub_calls, 0);
	CHECK(v.r.worker_start_ns > 0);
	CHECK(v.r.stop_detail != NULL);
	CHECK_INT(fakesrv_count(v.root_srv), 2);
	/* The second request: the first two messages unchanged, the reply
	 * verbatim, then the output. */
	CHECK_INT(n_messages(v.root_srv, 0), 2);
	CHECK_INT(n_messages(v.root_srv, 1), 4);
	for (int k = 0; k < 2; k++) {
		a = message(v.root_srv, 0, k, NULL);
		b = message(v.root_srv, 1, k, NULL);
		CHECK_STR(a, b);
		free(a);
		free(b);
	}
	m = message(v.root_srv, 1, 2, &role);
	CHECK_STR(role, "assistant");
	CHECK_STR(m, t1);
	free(m);
	m = message(v.root_srv, 1, 3, &role);
	CHECK_STR(role, "user");
	/* The variables the block made end its output, as the reference
	 * shows them. */
	CHECK_MSG(strncmp(m, "REPL output:\nx is 42\nREPL variables: x: int\n\nTurn 2/30", 54) == 0,
		  "%s", m);
	free(m);
	CHECK_STR(v.events.p,
		  "sandbox:1\nreply:1\ncode:1\noutput:1\nreply:2\ncode:2\noutput:2\n");
	check_append_only(v.root_srv);
	env_free(&v);
}

TEST(metadata_not_text_in_first_messages)
{
	struct env v;
	struct buf b;
	char *sys, *first;
	env_init(&v, SUB_FAKE); /* its window: 100,000 tokens */
	corpus_free(v.ctx);
	buf_init(&b, 0);
	for (int i = 0; i < 1000; i++)
		buf_printf(&b, "line %d of the caf\xc3\xa9 log\n", i); /* é: 2 bytes, 1 char */
	buf_puts(&b, "ZEBRA-UNIQUE-MARKER\n");
	v.ctx = corpus_from_text(b.p, b.len);
	says(&v, "```repl\nprint(type(context).__name__, len(context), context.count('\\u00e9'))\n```");
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "Which line mentions a zebra?"), 0);
	CHECK_STR(v.r.answer, "done");
	CHECK(strstr(fakesrv_request(v.root_srv, 0)->body, "ZEBRA") == NULL);
	CHECK(strstr(fakesrv_request(v.root_srv, 1)->body, "ZEBRA") == NULL);
	sys = message(v.root_srv, 0, 0, NULL);
	first = message(v.root_srv, 0, 1, NULL);
	CHECK_CONTAINS(sys, "```repl");
	CHECK_CONTAINS(sys, "llm_query_batched");
	CHECK_CONTAINS(sys, "200,000 characters"); /* window 100,000 tokens x 2 */
	CHECK_CONTAINS(sys, "20,000 characters");  /* the output limit */
	CHECK(strncmp(first, "Question: Which line mentions a zebra?\n", 39) == 0);
	{
		char want[128], a[32], t[32];
		size_t chars = b.len - 1000; /* one byte less per é */
		snprintf(want, sizeof(want), "a str of %s characters (about %s tokens)",
			 commas(a, chars), commas(t, (b.len + 3) / 4));
		CHECK_CONTAINS(first, want);
		CHECK_CONTAINS(first, "Sub-calls can read about 200,000 characters");
		CHECK_CONTAINS(first, "Turn 1/30");
		snprintf(want, sizeof(want), "REPL output:\nstr %zu 1000", chars);
		CHECK_MSG_HAS(&v, 1, -1, want);
	}
	free(sys);
	free(first);
	buf_release(&b);
	env_free(&v);
}

/* The system prompt says what the sandbox forbids, from the configuration
 * (it is sent before the worker is up); the result carries the worker's
 * sandbox status, and the event stream its line, once. */
TEST(system_prompt_states_the_sandbox)
{
	struct env v;
	char *sys;
	env_init(&v, SUB_FAKE);
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "q?"), 0);
	sys = message(v.root_srv, 0, 0, NULL);
	CHECK_CONTAINS(sys, "The REPL is sandboxed: no network or sockets (so no asyncio event "
			    "loop; llm_query_batched and threads run things in parallel), no "
			    "subprocesses or shell commands, and files can be written only in the "
			    "current directory (a scratch directory).");
	CHECK(strstr(sys, "{{") == NULL);
	free(sys);
	CHECK_MSG(v.r.sandbox, "no sandbox status in the result");
	CHECK(v.r.sandbox->on[REPL_L_SECCOMP]);
	CHECK(!v.r.sandbox->unsafe);
	CHECK_CONTAINS(v.r.sandbox->line, "seccomp");
	CHECK(strncmp(v.events.p, "sandbox:1\nreply:1\n", 18) == 0);
	CHECK(strstr(v.events.p + 1, "sandbox:") == NULL);
	env_free(&v);

	env_init(&v, SUB_FAKE);
	v.o.sandbox.unsafe = true;
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "q?"), 0);
	sys = message(v.root_srv, 0, 0, NULL);
	CHECK_CONTAINS(sys, "The REPL may not be sandboxed");
	CHECK_CONTAINS(sys, "write files only in the current directory");
	free(sys);
	env_free(&v);
}

TEST(metadata_of_documents_is_small)
{
	struct env v;
	struct buf b;
	char *first;
	struct rlm_err err = {0, ""};
	env_init(&v, SUB_SIM);
	corpus_free(v.ctx);
	buf_init(&b, 0);
	for (int i = 0; i < 3000; i++)
		buf_printf(&b, "{\"text\": \"document %d %.*s\"}\n", i, i % 50 + 1,
			   "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	CHECK_INT(corpus_from_jsonl_buf("docs", b.p, b.len, &v.ctx, &err), 0);
	says(&v, "```repl\nprint(type(context).__name__, len(context), context[2])\n```");
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "How many documents?"), 0);
	first = message(v.root_srv, 0, 1, NULL);
	CHECK_CONTAINS(first, "a list of 3,000 documents (str), ");
	CHECK_CONTAINS(first, "documents are 12 to 64 characters long; the first 10 lengths: 12, "
			      "13, 14, 15, 16, 17, 18, 19, 20, 21, ...");
	CHECK(strlen(first) < 1000);
	CHECK(strstr(first, "document 7") == NULL);
	CHECK_MSG_HAS(&v, 1, -1, "REPL output:\nlist 3000 document 2 xxx\n");
	free(first);
	buf_release(&b);
	env_free(&v);
}

/* ---- sources ---- */

/* A JSONL of records with ids of several shapes (a slug, a number, one
 * without an id: its line number), long lines. */
static void sources_corpus(struct env *v)
{
	struct buf b = BUF_INIT;
	struct rlm_err err = {0, ""};
	corpus_free(v->ctx);
	buf_puts(&b, "{\"id\": \"rfc-7231\", \"title\": \"HTTP/1.1 Semantics\", \"text\": \"");
	for (int i = 0; i < 200; i++)
		buf_puts(&b, "Filler about methods and status codes. ");
	buf_puts(&b, "The 418 status code is not defined here; 404 Not Found is.\"}\n");
	buf_puts(&b, "{\"id\": 9110, \"text\": \"HTTP Semantics, the 2022 revision: 308 Permanent "
		     "Redirect.\"}\n");
	buf_puts(&b, "{\"text\": \"A record without an id at all.\"}\n");
	CHECK_INT(corpus_from_jsonl_buf("rfcs.jsonl", b.p, b.len, &v->ctx, &err), 0);
	buf_release(&b);
}

/* One real id with a correct quote, one real id with a quote not in it,
 * one invented id: the answer keeps exactly the good one, and the
 * trajectory has a notice naming the two dropped. */
TEST(sources_checked_against_the_context)
{
	struct env v;
	const char *notice = NULL;
	env_init(&v, SUB_SIM);
	sources_corpus(&v);
	v.o.trajectory = true;
	says(&v, "```repl\nanswer['content'] = '404'\n"
		 "answer['sources'] = [{'doc': 'rfc-7231', 'quote': '404 Not Found is.'},\n"
		 "    {'doc': '9110', 'quote': '418 I am a teapot'}, 'rfc-9999']\n"
		 "answer['ready'] = True\n```");
	CHECK_INT(solve(&v, "Which status code is defined?"), 0);
	CHECK_STR(v.r.answer, "404");
	CHECK_INT(v.r.stop, RLM_STOP_ANSWER);
	CHECK_INT(v.r.n_sources, 1);
	CHECK_STR(v.r.sources[0].doc, "rfc-7231");
	CHECK_STR(v.r.sources[0].quote, "404 Not Found is.");
	CHECK(v.r.sources[0].start == -1 && v.r.sources[0].end == -1);
	CHECK_INT(v.r.sources_dropped, 2);
	for (size_t i = 0; i < v.r.n_turns; i++)
		for (size_t k = 0; k < v.r.turns[i].n_notices; k++)
			if (strstr(v.r.turns[i].notices[k], "sources"))
				notice = v.r.turns[i].notices[k];
	CHECK(notice != NULL);
	if (notice) {
		CHECK_CONTAINS(notice, "2 of the answer's 3 sources were dropped");
		CHECK_CONTAINS(notice, "'9110': the quote \"418 I am a teapot\" is not in it");
		CHECK_CONTAINS(notice, "'rfc-9999': no such document");
	}
	CHECK_CONTAINS(v.events.p, "notice:1");
	env_free(&v);
}

/* Indexes name documents by their ids; a range with its quote is kept,
 * a wrong range with a quote found elsewhere is corrected, a range
 * without a quote must lie in the document; FINAL(x, sources=...). */
TEST(sources_ranges_indexes_and_final)
{
	struct env v;
	env_init(&v, SUB_SIM);
	sources_corpus(&v);
	says(&v, "```repl\ns = context[1].index('308')\n"
		 "FINAL('308', sources=[1, {'doc': 1, 'start': s, 'end': s + 3, 'quote': '308'},\n"
		 "    {'doc': '9110', 'start': 0, 'quote': 'Permanent'}, {'doc': 2, 'start': 2,"
		 " 'end': 8},\n    {'doc': '3', 'start': 0, 'end': 999999}, 2])\n```");
	CHECK_INT(solve(&v, "Which code is permanent?"), 0);
	CHECK_STR(v.r.answer, "308");
	CHECK_INT(v.r.n_sources, 5);
	CHECK_INT(v.r.sources_dropped, 1);
	if (v.r.n_sources == 5) {
		CHECK_STR(v.r.sources[0].doc, "9110");
		CHECK(v.r.sources[0].start == -1 && !v.r.sources[0].quote);
		CHECK_STR(v.r.sources[1].doc, "9110");
		CHECK_INT(v.r.sources[1].start, 35);
		CHECK_INT(v.r.sources[1].end, 38);
		CHECK_INT(v.r.sources[2].start, 39);
		CHECK_INT(v.r.sources[2].end, 48);
		CHECK_STR(v.r.sources[3].doc, "3");
		CHECK(v.r.sources[3].start == 2 && v.r.sources[3].end == 8);
		CHECK_STR(v.r.sources[4].doc, "3");
	}
	env_free(&v);
}

TEST(final_in_text)
{
	struct env v;
	env_init(&v, SUB_SIM);
	says(&v, "I already know.\nFINAL(\"Paris\")\n");
	CHECK_INT(solve(&v, "Capital of France?"), 0);
	CHECK_STR(v.r.answer, "Paris");
	CHECK_INT(v.r.stop, RLM_STOP_ANSWER);
	CHECK_INT(v.r.execs, 0);
	CHECK_INT(v.r.iterations, 1);
	env_free(&v);
}

TEST(final_inside_a_fence_does_not_count)
{
	struct env v;
	env_init(&v, SUB_SIM);
	says(&v, "Like this:\n```text\nFINAL(wrong)\n```\n");
	says(&v, "```repl\n# FINAL(wrong too)\nprint('still going')\n```\n");
	says(&v, "FINAL(right)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "right");
	CHECK_INT(v.r.iterations, 3);
	/* The other fence did not run: a nudge that says why. */
	CHECK_MSG_HAS(&v, 1, -1, "only ```repl blocks run");
	CHECK_MSG_HAS(&v, 2, -1, "REPL output:\nstill going");
	env_free(&v);
}

TEST(final_var_resolved_after_blocks)
{
	struct env v;
	env_init(&v, SUB_SIM);
	says(&v, "```repl\nres = 'forty' + '-two'\n```\nFINAL_VAR(res)\n");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "forty-two");
	CHECK_INT(v.r.stop, RLM_STOP_ANSWER);
	CHECK_INT(v.r.execs, 1);
	env_free(&v);
}

TEST(final_var_missing_is_told_and_goes_on)
{
	struct env v;
	env_init(&v, SUB_SIM);
	says(&v, "FINAL_VAR(nothing_here)");
	says(&v, "```repl\nnothing_here = 'now it exists'\n```\nFINAL_VAR(nothing_here)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "now it exists");
	CHECK_INT(v.r.iterations, 2);
	CHECK_MSG_HAS(&v, 1, -1, "FINAL_VAR(nothing_here):\n");
	CHECK_MSG_HAS(&v, 1, -1, "nothing_here");
	CHECK_MSG_HAS(&v, 1, -1, "Turn 2/30");
	env_free(&v);
}

/* FINAL_VAR of a missing name in code is an error the model sees, not the
 * name as a confident answer: the solve goes on (issue 18's (d)). */
TEST(final_var_missing_in_code_is_an_error_not_the_answer)
{
	struct env v;
	env_init(&v, SUB_SIM);
	says(&v, "```repl\nFINAL_VAR(\"no_such_var\")\n```");
	says(&v, "```repl\nno_such_var = 'made now'\nFINAL_VAR(\"no_such_var\")\n```");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "made now");
	CHECK_INT(v.r.iterations, 2);
	CHECK_MSG_HAS(&v, 1, -1, "NameError: FINAL_VAR('no_such_var'): there is no variable");
	env_free(&v);
}

TEST(no_code_gets_a_nudge)
{
	struct env v;
	env_init(&v, SUB_SIM);
	says(&v, "Let me think about this first.");
	says(&v, "FINAL(ok)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "ok");
	CHECK_INT(v.r.iterations, 2);
	CHECK_INT(v.r.execs, 0);
	CHECK_MSG_HAS(&v, 1, -1, "Your reply had no ```repl block, so nothing ran.");
	CHECK_MSG_HAS(&v, 1, -1, "Turn 2/30");
	CHECK_CONTAINS(v.events.p, "reply:1\nnotice:1\nreply:2\n");
	env_free(&v);
}

/* After each block the model sees the variables it made (new or rebound
 * names with their types; not modules, helpers or _names; not what it only
 * changed in place), short: at most 20 names, cut like other output. */
TEST(block_output_ends_with_the_variables_it_made)
{
	struct env v;
	char *m;
	env_init(&v, SUB_SIM);
	says(&v, "```repl\nimport re\nchunks = context.split()\nn = len(chunks)\n_tmp = 1\n"
		 "def f(x):\n    return x\nprint(n)\n```");
	says(&v, "```repl\nchunks.append('z')\nn = n + 1\nllm_query = 5\nraise ValueError('boom')\n```");
	says(&v, "```repl\n" "for i in range(30):\n    globals()['v%02d' % i] = i\n```");
	says(&v, "```repl\nx = 1\n```\n```repl\nprint(x)\n```");
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "q?"), 0);
	m = message(v.root_srv, 1, -1, NULL);
	CHECK_MSG(strncmp(m, "REPL output:\n3\nREPL variables: chunks: list, n: int, f: function\n\n",
			  66) == 0, "%s", m);
	free(m);
	/* A block that raised: what it made before, then the traceback; the
	 * helper it shadowed is restored, not listed. */
	m = message(v.root_srv, 2, -1, NULL);
	CHECK_CONTAINS(m, "ValueError: boom\nREPL variables: n: int\n\n");
	CHECK(strstr(m, "chunks:") == NULL && strstr(m, "llm_query:") == NULL);
	free(m);
	m = message(v.root_srv, 3, -1, NULL);
	CHECK_CONTAINS(m, "REPL output:\nREPL variables: i: int, v00: int, v01: int, ");
	CHECK_CONTAINS(m, "v18: int (and 11 more: SHOW_VARS() lists all)\n\n");
	free(m);
	m = message(v.root_srv, 4, -1, NULL);
	CHECK_CONTAINS(m, "REPL output (block 1 of 2):\nREPL variables: x: int\n\n"
			  "REPL output (block 2 of 2):\n1\n\n");
	free(m);
	env_free(&v);
}

TEST(blocks_run_in_order_with_one_message)
{
	struct env v;
	char *m;
	env_init(&v, SUB_SIM);
	says(&v, "```repl\na = [1]\n```\nthen\n```repl\na.append(2); print(a)\n```\n"
		 "```repl\na.append(3)\nprint(a)\n```\n");
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.execs, 3);
	m = message(v.root_srv, 1, -1, NULL);
	CHECK(strncmp(m,
		      "REPL output (block 1 of 3):\nREPL variables: a: list\n\n"
		      "REPL output (block 2 of 3):\n[1, 2]\n\n"
		      "REPL output (block 3 of 3):\n[1, 2, 3]\n\nTurn 2/30",
		      strlen("REPL output (block 1 of 3):\nREPL variables: a: list\n\n"
			     "REPL output (block 2 of 3):\n[1, 2]\n\n"
			     "REPL output (block 3 of 3):\n[1, 2, 3]\n\nTurn 2/30")) == 0);
	free(m);
	env_free(&v);
}

TEST(block_after_ready_is_not_run)
{
	struct env v;
	env_init(&v, SUB_FAKE);
	says(&v, "```repl\nanswer['content'] = 'A'\nanswer['ready'] = True\n```\n"
		 "```repl\nprint(llm_query('should never be asked'))\n```\n");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "A");
	CHECK_INT(v.r.execs, 1);
	CHECK_INT(fakesrv_count(v.sub_srv), 0);
	CHECK_STR(v.events.p, "sandbox:1\nreply:1\ncode:1\noutput:1\n");
	env_free(&v);
}

TEST(blocks_then_final_in_text)
{
	struct env v;
	env_init(&v, SUB_SIM);
	says(&v, "```repl\nprint('ran')\n```\nFINAL(after the code)\n");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "after the code");
	CHECK_INT(v.r.execs, 1);
	env_free(&v);
}

TEST(none_answer_is_not_found)
{
	struct env v;
	env_init(&v, SUB_SIM);
	says(&v, "FINAL(NONE)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_ANSWER);
	CHECK(!v.r.found);
	env_free(&v);
}

/* One definition of a NONE reply (text_is_none) serves both strategies:
 * the same replies are "not found" under each, quoted ones too (the tree
 * strategy used to take 'NONE' for an answer). */
TEST(none_replies_agree_across_strategies)
{
	static const char *const replies[] = {"'NONE'", "NONE.", "none", "\"None\"", "`NONE`"};
	for (size_t i = 0; i < ARRAY_SIZE(replies); i++) {
		struct env v;
		char final[64];
		/* repl: the root model's FINAL answer is the reply */
		env_init(&v, SUB_SIM);
		snprintf(final, sizeof(final), "FINAL(\"%s\")", replies[i]);
		says(&v, final);
		CHECK_INT(solve(&v, "q?"), 0);
		CHECK_STR(v.r.answer, replies[i]);
		CHECK_INT(v.r.stop, RLM_STOP_ANSWER);
		CHECK_MSG(!v.r.found, "repl: %s was found", replies[i]);
		env_free(&v);
		/* tree: the one leaf's reply, from the sub-model */
		env_init(&v, SUB_FAKE);
		v.o.strategy = RLM_TREE;
		says_full(v.sub_srv, replies[i], "stop", 100, 20, 0);
		CHECK_INT(solve(&v, "q?"), 0);
		CHECK_INT(fakesrv_count(v.sub_srv), 1);
		CHECK_INT(fakesrv_count(v.root_srv), 0);
		CHECK_STR(v.r.answer, "NONE");
		CHECK_INT(v.r.stop, RLM_STOP_ANSWER);
		CHECK_MSG(!v.r.found, "tree: %s was found", replies[i]);
		env_free(&v);
	}
}

/* ---- errors and limits on turns ---- */

TEST(error_turn_feeds_the_traceback)
{
	struct env v;
	env_init(&v, SUB_SIM);
	says(&v, "```repl\nprint(undefined_name)\n```");
	says(&v, "FINAL(ok)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "ok");
	CHECK_INT(v.r.error_turns, 1);
	CHECK_MSG_HAS(&v, 1, -1, "Traceback");
	CHECK_MSG_HAS(&v, 1, -1, "NameError");
	CHECK_MSG_HAS(&v, 1, -1, "undefined_name");
	env_free(&v);
}

TEST(max_errors_stops_with_partial_answer)
{
	struct env v;
	env_init(&v, SUB_SIM);
	v.o.max_errors = 2;
	says(&v, "```repl\nanswer['content'] = 'partial'\n1/0\n```");
	says(&v, "```repl\n1/0\n```");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_ERRORS);
	CHECK_STR(v.r.answer, "partial");
	CHECK(!v.r.found);
	CHECK_INT(v.r.error_turns, 2);
	CHECK_CONTAINS(v.r.stop_detail, "2 turns in a row");
	CHECK_CONTAINS(v.r.stop_detail, "ZeroDivisionError");
	CHECK_INT(fakesrv_count(v.root_srv), 2);
	env_free(&v);
}

TEST(error_count_resets_after_a_good_turn)
{
	struct env v;
	env_init(&v, SUB_SIM);
	v.o.max_errors = 2;
	says(&v, "```repl\n1/0\n```");
	says(&v, "```repl\nprint('fine')\n```");
	says(&v, "```repl\n1/0\n```");
	says(&v, "FINAL(made it)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "made it");
	CHECK_INT(v.r.error_turns, 2);
	check_append_only(v.root_srv);
	env_free(&v);
}

TEST(worker_crash_is_an_error_turn_and_it_goes_on)
{
	struct env v;
	env_init(&v, SUB_SIM);
	/* In its pid namespace the worker is pid 1, which ignores its own
	 * SIGKILL: then it exits instead. */
	says(&v, "```repl\nkept = 1\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"
		 "os._exit(1)\n```");
	says(&v, "```repl\nprint('kept' in globals(), len(context))\n```");
	says(&v, "FINAL(recovered)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "recovered");
	CHECK_INT(v.r.restarts, 1);
	CHECK_INT(v.r.error_turns, 1);
	CHECK_CONTAINS(v.r.warning, "restarted 1 time");
	CHECK_CONTAINS(v.events.p, "reply:1\ncode:1\nnotice:1\noutput:1\n");
	CHECK_MSG_HAS(&v, 2, -1, "REPL output:\nFalse 17");
	env_free(&v);
}

TEST(exec_time_limit_interrupts_and_it_goes_on)
{
	struct env v;
	env_init(&v, SUB_SIM);
	v.o.exec_timeout_ns = 300000000LL * slow_factor();
	says(&v, "```repl\nx = 'survives'\nimport time\ntime.sleep(20)\n```");
	says(&v, "```repl\nprint(x)\n```");
	says(&v, "FINAL(ok)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "ok");
	CHECK_INT(v.r.error_turns, 1);
	CHECK_MSG_HAS(&v, 1, -1, "KeyboardInterrupt");
	CHECK_MSG_HAS(&v, 2, -1, "REPL output:\nsurvives");
	env_free(&v);
}

TEST(reply_cut_before_any_block_gets_told)
{
	struct env v;
	env_init(&v, SUB_SIM);
	says_full(v.root_srv, "Let me write a long plan first: 1. 2. 3. and then\n```repl\nx = ",
		  "length", 100, 50, 0);
	says(&v, "FINAL(ok)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_MSG_HAS(&v, 1, -1, "cut off at the output token limit");
	env_free(&v);
}

TEST(reply_cut_at_anthropic_max_tokens_gets_told)
{
	struct env v;
	env_init(&v, SUB_SIM);
	/* Anthropic's stop reason for the same thing. */
	says_full(v.root_srv, "Plan: first\n```repl\nx = ", "max_tokens", 100, 50, 0);
	says(&v, "FINAL(ok)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_MSG_HAS(&v, 1, -1, "cut off at the output token limit");
	env_free(&v);
}

TEST(cut_reply_whose_block_ran_is_told)
{
	struct env v;
	env_init(&v, SUB_SIM);
	says_full(v.root_srv, "```repl\nprint('ran')\nprint('this line is cu", "length", 100, 50,
		  0);
	says(&v, "FINAL(ok)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_MSG_HAS(&v, 1, -1, "REPL output:\nran\n\n(Your reply was cut off");
	CHECK_MSG_HAS(&v, 1, -1, "Turn 2/30");
	env_free(&v);
}

TEST(empty_reply_gets_a_nudge_and_a_valid_history)
{
	struct env v;
	env_init(&v, SUB_SIM);
	says(&v, "");
	says(&v, " \n");
	says(&v, "FINAL(ok)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "ok");
	CHECK_INT(v.r.iterations, 3);
	CHECK_MSG_HAS(&v, 1, -1, "Your reply was empty");
	check_append_only(v.root_srv);
	env_free(&v);
}

TEST(empty_final_is_not_found)
{
	struct env v;
	env_init(&v, SUB_SIM);
	says(&v, "FINAL()");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "");
	CHECK(!v.r.found);
	env_free(&v);
}

TEST(max_iterations_then_last_call_with_final)
{
	struct env v;
	env_init(&v, SUB_SIM);
	v.o.max_iterations = 2;
	says(&v, "```repl\nprint('one')\n```");
	says(&v, "```repl\nprint('two')\n```");
	says(&v, "I think it is seven.\nFINAL(7)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_ITERATIONS);
	CHECK_STR(v.r.answer, "7");
	CHECK(!v.r.found);
	CHECK_INT(v.r.iterations, 2);
	CHECK_INT(fakesrv_count(v.root_srv), 3);
	CHECK_MSG_HAS(&v, 1, -1, "Turn 2/2");
	CHECK_MSG_HAS(&v, 2, -1, "REPL output:\ntwo");
	CHECK_MSG_HAS(&v, 2, -1, "out of turns");
	CHECK_CONTAINS(v.r.stop_detail, "2 turns");
	check_append_only(v.root_srv);
	env_free(&v);
}

TEST(max_iterations_last_call_prose_is_the_answer)
{
	struct env v;
	env_init(&v, SUB_SIM);
	v.o.max_iterations = 1;
	says(&v, "```repl\nprint('one')\n```");
	says(&v, "  The answer is probably 12.\n");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_ITERATIONS);
	CHECK_STR(v.r.answer, "The answer is probably 12.");
	env_free(&v);
}

TEST(max_iterations_last_call_code_keeps_the_content)
{
	struct env v;
	env_init(&v, SUB_SIM);
	v.o.max_iterations = 1;
	says(&v, "```repl\nanswer['content'] = 'partial'\n```");
	says(&v, "Let me check once more:\n```repl\nprint('x')\n```\n");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_ITERATIONS);
	CHECK_STR(v.r.answer, "partial");
	CHECK_INT(v.r.execs, 2);
	env_free(&v);
}

TEST(root_failure_is_an_error)
{
	struct env v;
	struct fake_reply bad = {400, NULL, "{\"error\":{\"message\":\"model overloaded today\"}}",
				 FAKE_NORMAL, 0};
	env_init(&v, SUB_SIM);
	fakesrv_push(v.root_srv, &bad);
	CHECK(solve(&v, "q?") < 0);
	CHECK_INT(v.r.stop, RLM_STOP_ERROR);
	CHECK_CONTAINS(v.err.msg, "model overloaded today");
	CHECK(v.r.answer == NULL);
	env_free(&v);
}

TEST(worker_that_cannot_start_is_an_error)
{
	struct env v;
	env_init(&v, SUB_SIM);
	v.o.python = "/nonexistent/python3";
	says(&v, "```repl\nprint(1)\n```");
	CHECK(solve(&v, "q?") < 0);
	CHECK_INT(v.r.stop, RLM_STOP_ERROR);
	CHECK(v.err.msg[0] != '\0');
	env_free(&v);
}

TEST(empty_question_is_refused)
{
	struct env v;
	env_init(&v, SUB_SIM);
	CHECK_INT(solve(&v, ""), RLM_EINVAL);
	CHECK_INT(fakesrv_count(v.root_srv), 0);
	env_free(&v);
}

/* A sandbox configuration the worker would refuse fails the solve before
 * the first root call: no request reaches the server, nothing is spent. */
TEST(sandbox_refused_before_the_first_root_call)
{
	struct env v;
	env_init(&v, SUB_SIM);
	v.o.sandbox.disable = 1u << REPL_L_SECCOMP;
	says(&v, "```repl\nprint(1)\n```");
	CHECK_INT(solve(&v, "q?"), RLM_ESANDBOX);
	CHECK_INT(v.r.stop, RLM_STOP_ERROR);
	CHECK_CONTAINS(v.err.msg, "seccomp is ");
	CHECK_CONTAINS(v.err.msg, "by request");
	CHECK_CONTAINS(v.err.msg, "--unsafe-no-sandbox");
	CHECK_INT(fakesrv_count(v.root_srv), 0);
	CHECK_INT(v.r.calls, 0);
	CHECK(v.r.sandbox == NULL);
	CHECK(v.r.answer == NULL);
	env_free(&v);

	env_init(&v, SUB_SIM);
	CHECK_INT(setenv("RLM_SANDBOX_DISABLE", "landlock,bogus", 1), 0);
	says(&v, "```repl\nprint(1)\n```");
	CHECK_INT(solve(&v, "q?"), RLM_EINVAL);
	unsetenv("RLM_SANDBOX_DISABLE");
	CHECK_INT(v.r.stop, RLM_STOP_ERROR);
	CHECK_CONTAINS(v.err.msg, "RLM_SANDBOX_DISABLE: unknown sandbox layer 'bogus'");
	CHECK_INT(fakesrv_count(v.root_srv), 0);
	CHECK_INT(v.r.calls, 0);
	env_free(&v);

	/* with unsafe the same configuration runs */
	env_init(&v, SUB_SIM);
	v.o.sandbox.disable = 1u << REPL_L_SECCOMP;
	v.o.sandbox.unsafe = true;
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "done");
	CHECK_INT(fakesrv_count(v.root_srv), 1);
	CHECK_MSG(v.r.sandbox && v.r.sandbox->unsafe && !v.r.sandbox->on[REPL_L_SECCOMP],
		  "the worker's sandbox: %s", v.r.sandbox ? v.r.sandbox->line : "none");
	env_free(&v);
}

/* ---- sub-calls ---- */

TEST(batched_sub_calls_parallel_and_in_order)
{
	struct env v;
	char want[512];
	struct buf b;
	env_init_full(&v, SUB_SIM, "ttft=300ms", NULL);
	says(&v, "```repl\nps = ['Question: What is the colour?\\nText:\\nThe colour is c%d.' % i "
		 "for i in range(8)]\nrs = llm_query_batched(ps)\nprint('|'.join(rs))\n```");
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "q?"), 0);
	buf_init(&b, 0);
	for (int i = 0; i < 8; i++)
		buf_printf(&b, "%sThe colour is c%d.", i ? "|" : "", i);
	snprintf(want, sizeof(want), "REPL output:\n%s", b.p);
	CHECK_MSG_HAS(&v, 1, -1, want);
	CHECK_INT(v.r.sub_calls, 8);
	CHECK_INT(v.r.calls, 10);
	CHECK(v.r.sub_usage.input_tokens > 0);
	CHECK_INT(v.r.usage.input_tokens,
		  v.r.root_usage.input_tokens + v.r.sub_usage.input_tokens);
	/* 8 calls of 300 ms in parallel, not 2.4 s one after another. */
	CHECK_MSG(v.r.sub_ns < 1500000000LL * slow_factor(), "sub_ns %lld",
		  (long long)v.r.sub_ns);
	CHECK(v.r.sub_ns >= 300000000LL);
	CHECK(v.r.exec_ns >= v.r.sub_ns);
	buf_release(&b);
	env_free(&v);
}

/* Sub-calls from several threads of the code are out together (issue 18:
 * the system prompt says threads run in parallel; the runtime held its
 * lock until each reply came): 5 threads of llm_query against a model of
 * 300 ms finish in about 300 ms, not 1.5 s. */
TEST(sub_calls_from_threads_are_in_flight_together)
{
	struct env v;
	char *m;
	double el = 0;
	env_init_full(&v, SUB_SIM, "ttft=300ms", NULL);
	says(&v, "```repl\nimport threading, time\nout = [None] * 5\n"
		 "def w(i):\n    out[i] = llm_query('Question: What is the code?\\nText:\\n"
		 "The code is k%d.' % i)\n"
		 "t0 = time.monotonic()\n"
		 "ts = [threading.Thread(target=w, args=(i,)) for i in range(5)]\n"
		 "[t.start() for t in ts]; [t.join() for t in ts]\n"
		 "print('%.3f' % (time.monotonic() - t0), '|'.join(out))\n```");
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "q?"), 0);
	m = message(v.root_srv, 1, -1, NULL);
	CHECK_MSG(m && sscanf(m, "REPL output:\n%lf", &el) == 1, "%s", m);
	CHECK_CONTAINS(m, " The code is k0.|The code is k1.|The code is k2.|The code is k3.|"
			  "The code is k4.");
	fprintf(stderr, "  5 threads x 300 ms: %.3f s\n", el);
	CHECK_MSG(el >= 0.29 && el < 0.9 * slow_factor(), "took %.3f s", el);
	CHECK_INT(v.r.sub_calls, 5);
	/* sub_ns is the time calls were out, not their sum. */
	CHECK_MSG(v.r.sub_ns < 900000000LL * slow_factor() && v.r.exec_ns >= v.r.sub_ns,
		  "sub_ns %lld, exec_ns %lld", (long long)v.r.sub_ns, (long long)v.r.exec_ns);
	free(m);
	env_free(&v);
}

/* The 1 GB case of issue 18, scaled down with the same frame-cap shape:
 * each child RLM's batch of sub-calls is over the frame cap (64 KiB here,
 * 64 MiB by default), which used to raise ValueError in every child until
 * max_errors, and the root answered NONE. Now the batch goes as several
 * frames and is answered as one, and the password is found; one prompt
 * over the cap alone is the only error, and says what to do. */
TEST(child_batches_over_the_frame_cap_are_answered)
{
	struct env v;
	struct fake_reply child = {200, NULL, NULL, FAKE_NORMAL, 0};
	struct buf text;
	char *body, *m;
	int64_t requests = 0, faults = 0;
	env_init(&v, SUB_SIM);
	v.o.max_frame = 64 << 10;
	buf_init(&text, 0);
	for (int i = 0; text.len < 400000; i++) {
		buf_printf(&text, "Log line %d: the pump at station %d reported pressure %d kPa.\n", i,
			   i % 97, 100 + i % 50);
		if (i == 4321)
			buf_puts(&text, "The launch password is tangerine-42.\n");
	}
	corpus_free(v.ctx);
	v.ctx = corpus_from_text(text.p, text.len);
	/* Every child: 8,000-character chunks of its part (~100 KB), one
	 * batch; the answers that are not NONE. */
	body = fakesrv_chat_body(
	    "```repl\nq = 'What is the launch password?'\n"
	    "chunks = [context[i:i + 8000] for i in range(0, len(context), 8000)]\n"
	    "rs = llm_query_batched(['Question: ' + q + '\\nText:\\n' + c for c in chunks])\n"
	    "hits = [r for r in rs if r.strip() != 'NONE']\n"
	    "FINAL(' '.join(hits) if hits else 'NONE')\n```",
	    "stop", 10, 10);
	child.body = body;
	fakesrv_set_default(v.root_srv, &child);
	free(body);
	says(&v, "```repl\nn = 4\nsize = len(context) // n + 1\n"
		 "parts = [context[i * size:(i + 1) * size] for i in range(n)]\n"
		 "rs = rlm_query_batched(['What is the launch password?'] * n, contexts=parts)\n"
		 "print(rs)\nFINAL(' '.join(r for r in rs if r != 'NONE'))\n```");
	CHECK_MSG(solve(&v, "What is the launch password?") == 0, "%s", v.err.msg);
	CHECK_MSG(v.r.answer && strstr(v.r.answer, "tangerine-42"), "answer %s", v.r.answer);
	CHECK(strstr(v.r.answer, "Error") == NULL);
	CHECK_INT(v.r.stop, RLM_STOP_ANSWER);
	CHECK_INT(v.r.n_children, 4);
	for (size_t i = 0; i < v.r.n_children; i++) {
		CHECK_INT(v.r.children[i].stop, RLM_STOP_ANSWER);
		CHECK_INT(v.r.children[i].iterations, 1);
		CHECK(v.r.children[i].sub_calls >= 12);
	}
	sim_counts(v.sim, &requests, &faults);
	CHECK(requests >= 48);
	env_free(&v);

	/* One prompt over the cap: the error names it and what to do. */
	env_init(&v, SUB_SIM);
	v.o.max_frame = 64 << 10;
	says(&v, "```repl\nrs = llm_query_batched(['a', 'b' * 70000])\n```");
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "q?"), 0);
	m = message(v.root_srv, 1, -1, NULL);
	CHECK_CONTAINS(m, "ValueError: llm_query_batched: prompt 1 is 70 kB, over the 64 KiB one "
			  "call can carry: cut it into smaller pieces");
	free(m);
	sim_counts(v.sim, &requests, &faults);
	CHECK_INT(requests, 0);
	env_free(&v);
	buf_release(&text);
}

/* A sub-call over the sub-model's known context window is refused before
 * it is sent (a 400 for sure: no tokens, no retries), with an Error: that
 * names both sizes and says what to do; the others of its batch go. A
 * window nobody stated is no reason to refuse. */
TEST(sub_call_over_the_context_window_is_not_sent)
{
	struct env v;
	struct llm_model_cfg cfg = {0};
	struct rlm_err err = {0, ""};
	char base[160], *m;
	int64_t requests = 0, faults = 0;
	/* The simulator's window, 32,000 tokens, is its provider's. */
	env_init(&v, SUB_SIM);
	says(&v, "```repl\nbig = 'The code is 7. ' * 10000\n"
		 "rs = llm_query_batched(['Question: What is the code?\\nText:\\nThe code is 5.', "
		 "'Question: What is the code?\\nText:\\n' + big])\nprint(rs[0])\nprint(rs[1])\n```");
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "q?"), 0);
	m = message(v.root_srv, 1, -1, NULL);
	CHECK_CONTAINS(m, "REPL output:\nThe code is 5.\nError: prompt not sent: it is about "
			  "37,509 tokens (150,034 characters, estimated at ~4 characters a token), "
			  "over the 32,000-token context window of 'sim'; cut it into pieces of at "
			  "most about 64,000 characters and ask about each\n");
	free(m);
	sim_counts(v.sim, &requests, &faults);
	CHECK_INT(requests, 1);
	CHECK_INT(v.r.sub_calls, 2);
	env_free(&v);

	/* A window stated in the configuration (as --sub-context-window and a
	 * price file's "context_window" do): refused, nothing sent. */
	env_init(&v, SUB_FAKE);
	says(&v, "```repl\nprint(llm_query('x' * 500000)[:60])\n```");
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_MSG_HAS(&v, 1, -1, "REPL output:\nError: prompt not sent: it is about 125,000 tokens");
	CHECK_INT(fakesrv_count(v.sub_srv), 0);
	env_free(&v);

	/* A model nobody described (128,000 assumed): sent. */
	env_init(&v, SUB_FAKE);
	snprintf(base, sizeof(base), "%s/v1", fakesrv_url(v.sub_srv));
	cfg.kind = LLM_OPENAI;
	cfg.name = "my-local-model";
	cfg.base_urls = base;
	cfg.max_retries = 0;
	llm_model_free(v.sub);
	v.sub = llm_model_new(&cfg, &err);
	CHECK_MSG(v.sub, "%s", err.msg);
	CHECK(!llm_model_context_window_known(v.sub));
	CHECK_INT(llm_model_context_window(v.sub), 128000);
	v.o.sub_model = v.sub;
	says(&v, "```repl\nprint(llm_query('x' * 600000)[:5])\n```");
	says(&v, "FINAL(done)");
	says_full(v.sub_srv, "fine.", "stop", 5, 5, 0);
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_MSG_HAS(&v, 1, -1, "REPL output:\nfine.");
	CHECK_INT(fakesrv_count(v.sub_srv), 1);
	env_free(&v);
}

TEST(window_bounds_sub_calls_in_flight)
{
	struct env v;
	env_init_full(&v, SUB_SIM, "ttft=200ms", NULL);
	v.o.window = 2;
	says(&v, "```repl\nrs = llm_query_batched(['Question: x?\\nText:\\nx is %d.' % i for i in "
		 "range(6)])\nprint(rs[5])\n```");
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_MSG_HAS(&v, 1, -1, "REPL output:\nx is 5.");
	/* 6 calls of 200 ms, 2 at a time: 3 rounds. */
	CHECK_MSG(v.r.sub_ns >= 580000000LL, "sub_ns %lld", (long long)v.r.sub_ns);
	CHECK_INT(v.r.sub_calls, 6);
	env_free(&v);
}

TEST(sub_call_failure_is_an_error_string)
{
	struct env v;
	struct fake_reply bad = {400, NULL, "{\"error\":{\"message\":\"prompt rejected by policy\"}}",
				 FAKE_NORMAL, 0};
	env_init(&v, SUB_FAKE);
	fakesrv_set_default(v.sub_srv, &bad);
	says(&v, "```repl\nr = llm_query('hi')\nprint('got:', r)\n```");
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_MSG_HAS(&v, 1, -1, "got: Error: ");
	CHECK_MSG_HAS(&v, 1, -1, "prompt rejected by policy");
	CHECK_INT(v.r.failed_calls, 1);
	CHECK_CONTAINS(v.r.warning, "1 of 1 sub-calls failed");
	/* The sub-call was one user message with the prompt. */
	{
		const char *role;
		char *m = message(v.sub_srv, 0, 0, &role);
		CHECK_STR(m, "hi");
		CHECK_STR(role, "user");
		CHECK_INT(n_messages(v.sub_srv, 0), 1);
		free(m);
	}
	env_free(&v);
}

TEST(sub_call_model_routing)
{
	struct env v;
	env_init(&v, SUB_FAKE);
	says(&v, "```repl\nprint(llm_query('a', model='nope'))\nprint(llm_query('b', "
		 "model='root-m'))\nprint(llm_query('c', model='sub-m'))\n```");
	says(&v, "the root answers a sub-call");
	says(&v, "FINAL(done)");
	says_full(v.sub_srv, "the sub answers", "stop", 5, 5, 0);
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "done");
	CHECK_MSG_HAS(&v, 2, -1,
		      "REPL output:\nError: unknown model 'nope' (available: sub-m, root-m)\nthe "
		      "root answers a sub-call\nthe sub answers");
	CHECK_INT(fakesrv_count(v.sub_srv), 1);
	CHECK_INT(fakesrv_count(v.root_srv), 3);
	CHECK_INT(v.r.sub_calls, 2);
	env_free(&v);
}

/* ---- budgets ---- */

TEST(token_budget_refuses_a_sub_call)
{
	struct env v;
	env_init(&v, SUB_FAKE);
	v.o.max_tokens = 8000;
	says_full(v.root_srv,
		  "```repl\nanswer['content'] = 'partial'\nr = llm_query('x' * 20000)\nprint(r)\n```",
		  "stop", 5000, 100, 0);
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_TOKENS);
	CHECK_STR(v.r.answer, "partial");
	CHECK_CONTAINS(v.r.stop_detail, "token budget exhausted");
	CHECK_INT(fakesrv_count(v.sub_srv), 0);
	CHECK_INT(fakesrv_count(v.root_srv), 1);
	CHECK_INT(v.r.sub_calls, 0);
	CHECK_INT(v.r.execs, 1);
	env_free(&v);
}

TEST(token_budget_refuses_a_root_call)
{
	struct env v;
	env_init(&v, SUB_SIM);
	v.o.max_tokens = 5500;
	says_full(v.root_srv, "```repl\nanswer['content'] = 'so far'\nprint('x' * 4000)\n```", "stop",
		  5000, 100, 0);
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_TOKENS);
	CHECK_STR(v.r.answer, "so far");
	CHECK_CONTAINS(v.r.stop_detail, "root call of turn 2 was not sent");
	CHECK_INT(fakesrv_count(v.root_srv), 1);
	CHECK_INT(v.r.iterations, 2);
	env_free(&v);
}

/* The worker starts on a thread of its own from the node's start: a node
 * that ends before its first root call (no room for it in the token
 * budget) waits for that start and frees the worker, leaving no process
 * or thread behind. */
TEST(no_first_root_call_leaves_no_worker)
{
	struct env v;
	env_init(&v, SUB_SIM);
	v.o.max_tokens = 50;
	says_full(v.root_srv, "```repl\nprint(1)\n```", "stop", 5000, 100, 0);
	CHECK(solve(&v, "q?") != 0 || v.r.stop == RLM_STOP_TOKENS);
	CHECK_INT(v.r.stop, RLM_STOP_TOKENS);
	CHECK_INT(fakesrv_count(v.root_srv), 0);
	CHECK_INT(v.r.execs, 0);
	CHECK_INT(worker_processes(), 0);
	CHECK_INT(threads("rlm-boot"), 0);
	env_free(&v);
}

TEST(cost_budget_stops_the_solve)
{
	struct env v;
	struct llm_price price = {1000.0, 1000.0, 1000.0, 1000.0, true}; /* $1 per 1,000 tokens */
	env_init_full(&v, SUB_FAKE, NULL, &price);
	/* Room for the first request's estimate (the system prompt, ~1,200
	 * tokens), not for what the call then spends. */
	v.o.max_cost = 3.0;
	says_full(v.root_srv, "```repl\nanswer['content'] = 'cheap'\nprint(llm_query('hi'))\n```",
		  "stop", 5000, 100, 0);
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_COST);
	CHECK_STR(v.r.answer, "cheap");
	CHECK_CONTAINS(v.r.stop_detail, "cost budget exhausted ($5.1000 of $3.0000 spent)");
	CHECK_MSG(v.r.cost > 5.09 && v.r.cost < 5.11, "cost %f", v.r.cost);
	CHECK(v.r.root_cost == v.r.cost);
	CHECK_INT(fakesrv_count(v.sub_srv), 0);
	env_free(&v);
}

TEST(sub_call_budget)
{
	struct env v;
	env_init(&v, SUB_SIM);
	v.o.max_sub_calls = 3;
	says(&v, "```repl\nanswer['content'] = 'some'\nrs = llm_query_batched(['Question: "
		 "x?\\nText:\\nx is 1.'] * 5)\nprint(sum(r.startswith('Error: sub-call budget "
		 "exhausted') for r in rs))\nanswer['content'] = rs[4]\n```");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_CALLS);
	/* Once the solve is stopping, the rest of the frame is not tried. */
	CHECK_STR(v.r.answer, "Error: not sent: the solve is stopping (sub-call budget exhausted "
			      "(3 of 3 sub-calls made): a sub-call was refused)");
	CHECK_INT(v.r.sub_calls, 3);
	CHECK_CONTAINS(v.r.stop_detail, "sub-call budget exhausted (3 of 3 sub-calls made)");
	CHECK_CONTAINS(v.events.p, "output:1\nnotice:1\n");
	env_free(&v);
}

/* max_calls counts every model call, root and sub alike, and is checked
 * before each is sent. */
TEST(call_budget_counts_root_and_sub_calls)
{
	struct env v;
	env_init(&v, SUB_FAKE);
	v.o.max_calls = 4;
	says_full(v.sub_srv, "s", "stop", 5, 1, 0);
	says_full(v.sub_srv, "s", "stop", 5, 1, 0);
	says_full(v.sub_srv, "s", "stop", 5, 1, 0);
	says(&v, "```repl\nanswer['content'] = 'some'\nrs = llm_query_batched(['a'] * 5)\n"
		 "answer['content'] = '|'.join(r[:30] for r in rs)\n```");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_MSG(v.r.stop == RLM_STOP_MAX_CALLS, "stop %s: %s", rlm_stop_name(v.r.stop),
		  v.r.stop_detail ? v.r.stop_detail : "");
	CHECK_STR(rlm_stop_name(v.r.stop), "max_calls");
	CHECK_CONTAINS(v.r.stop_detail, "call budget exhausted (4 of 4 model calls made): a "
					"sub-call was refused");
	CHECK_STR(v.r.answer, "s|s|s|Error: call budget exhausted (|Error: not sent: the solve is ");
	CHECK_INT(v.r.calls, 4);
	CHECK_INT(v.r.sub_calls, 3);
	CHECK_INT(fakesrv_count(v.root_srv), 1);
	CHECK_INT(fakesrv_count(v.sub_srv), 3);
	env_free(&v);

	/* A root call is refused the same way. */
	env_init(&v, SUB_FAKE);
	v.o.max_calls = 2;
	says(&v, "```repl\nanswer['content'] = llm_query('a')\n```");
	says_full(v.sub_srv, "one", "stop", 5, 1, 0);
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_MAX_CALLS);
	CHECK_CONTAINS(v.r.stop_detail, "call budget exhausted (2 of 2 model calls made): the root "
					"call of turn 2 was not sent");
	CHECK_STR(v.r.answer, "one");
	CHECK_INT(v.r.calls, 2);
	env_free(&v);
}

TEST(cost_budget_counts_calls_in_flight)
{
	struct env v;
	struct llm_price price = {1000.0, 1000.0, 1000.0, 1000.0, true}; /* $1 per 1,000 tokens */
	char *body = fakesrv_chat_body("ok", "stop", 1000, 0);
	struct fake_reply sub = {200, NULL, body, FAKE_NORMAL, 200};
	env_init_full(&v, SUB_FAKE, NULL, &price);
	fakesrv_set_default(v.sub_srv, &sub);
	v.o.max_cost = 3.5;
	/* $1 for the root call, then ten sub-calls of ~$1 input each, all at
	 * once: only two fit, though nothing of them is spent yet. */
	says_full(v.root_srv,
		  "```repl\nanswer['content'] = 'partial'\nrs = llm_query_batched(['x' * 3996] * "
		  "10)\nanswer['content'] = ' | '.join(rs[1:4])\n```",
		  "stop", 1000, 0, 0);
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_COST);
	CHECK_INT(v.r.sub_calls, 2);
	CHECK_INT(fakesrv_count(v.sub_srv), 2);
	CHECK_MSG(v.r.cost > 2.99 && v.r.cost < 3.01, "cost %f", v.r.cost);
	CHECK_CONTAINS(v.r.stop_detail, "spent or reserved; this call's input costs about $0.99");
	CHECK_CONTAINS(v.r.answer, "ok | Error: cost budget exhausted");
	CHECK_CONTAINS(v.r.answer, "| Error: not sent: the solve is stopping");
	free(body);
	env_free(&v);
}

TEST(final_in_text_is_the_partial_answer_on_a_limit)
{
	struct env v;
	env_init(&v, SUB_SIM);
	v.o.max_sub_calls = 1;
	says(&v, "```repl\nrs = llm_query_batched(['Question: x?\\nText:\\nx is 1.'] * 2)\n```\n"
		 "FINAL(my guess)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_CALLS);
	CHECK_STR(v.r.answer, "my guess");
	CHECK(!v.r.found);
	env_free(&v);
}

/* ---- time and cancel ---- */

TEST(timeout_mid_exec)
{
	struct env v;
	int64_t t0;
	env_init(&v, SUB_SIM);
	v.o.timeout_ns = 1500000000LL;
	says(&v, "```repl\nanswer['content'] = 'slow'\nimport time\ntime.sleep(30)\n```");
	t0 = time_now_ns();
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_TIMEOUT);
	CHECK_STR(v.r.answer, "slow");
	CHECK_CONTAINS(v.r.stop_detail, "time limit of 1.5 s passed while code was running");
	CHECK_MSG(time_now_ns() - t0 < (1500000000LL + 2 * SEC) * slow_factor(), "took %lld ms",
		  (long long)((time_now_ns() - t0) / 1000000));
	env_free(&v);
}

TEST(timeout_mid_sub_call)
{
	struct env v;
	struct fake_reply hang = {200, NULL, NULL, FAKE_HANG, 0};
	int64_t t0;
	env_init(&v, SUB_FAKE);
	fakesrv_set_default(v.sub_srv, &hang);
	v.o.timeout_ns = 1500000000LL;
	says(&v, "```repl\nanswer['content'] = 'waiting'\nprint(llm_query('hi'))\n```");
	t0 = time_now_ns();
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_TIMEOUT);
	CHECK_STR(v.r.answer, "waiting");
	CHECK_CONTAINS(v.r.stop_detail, "passed during a sub-call");
	CHECK_MSG(time_now_ns() - t0 < (1500000000LL + 2 * SEC) * slow_factor(), "took %lld ms",
		  (long long)((time_now_ns() - t0) / 1000000));
	env_free(&v);
}

TEST(timeout_mid_root_call)
{
	struct env v;
	int64_t t0;
	env_init(&v, SUB_SIM);
	v.o.timeout_ns = 1000000000LL;
	says_full(v.root_srv, "FINAL(too late)", "stop", 10, 10, 10000);
	t0 = time_now_ns();
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_TIMEOUT);
	CHECK(v.r.answer == NULL);
	CHECK_CONTAINS(v.r.stop_detail, "1 s passed while the root model was answering");
	CHECK_MSG(time_now_ns() - t0 < 3 * SEC * slow_factor(), "took %lld ms",
		  (long long)((time_now_ns() - t0) / 1000000));
	env_free(&v);
}

TEST(cancel_mid_exec)
{
	struct env v;
	struct canceller c;
	pthread_t th;
	int64_t t0;
	env_init(&v, SUB_SIM);
	atomic_init(&c.flag, false);
	c.after_ns = 500000000LL;
	v.o.cancel = &c.flag;
	says(&v, "```repl\nanswer['content'] = 'so far'\nimport time\ntime.sleep(30)\n```");
	t0 = time_now_ns();
	pthread_create(&th, NULL, cancel_later, &c);
	CHECK_INT(solve(&v, "q?"), 0);
	pthread_join(th, NULL);
	CHECK_INT(v.r.stop, RLM_STOP_CANCEL);
	CHECK_STR(v.r.answer, "so far");
	CHECK_MSG(time_now_ns() - t0 < 3 * SEC * slow_factor(), "took %lld ms",
		  (long long)((time_now_ns() - t0) / 1000000));
	env_free(&v);
}

TEST(cancel_mid_sub_call)
{
	struct env v;
	struct canceller c;
	struct fake_reply hang = {200, NULL, NULL, FAKE_HANG, 0};
	pthread_t th;
	int64_t t0;
	env_init(&v, SUB_FAKE);
	fakesrv_set_default(v.sub_srv, &hang);
	atomic_init(&c.flag, false);
	c.after_ns = 500000000LL;
	v.o.cancel = &c.flag;
	says(&v, "```repl\nprint(llm_query_batched(['a', 'b', 'c']))\n```");
	t0 = time_now_ns();
	pthread_create(&th, NULL, cancel_later, &c);
	CHECK_INT(solve(&v, "q?"), 0);
	pthread_join(th, NULL);
	CHECK_INT(v.r.stop, RLM_STOP_CANCEL);
	CHECK(v.r.answer == NULL);
	CHECK_MSG(time_now_ns() - t0 < 3 * SEC * slow_factor(), "took %lld ms",
		  (long long)((time_now_ns() - t0) / 1000000));
	env_free(&v);
}

/* ---- outputs ---- */

TEST(huge_print_is_cut_in_the_next_request)
{
	struct env v;
	const struct fake_request *q;
	env_init(&v, SUB_SIM);
	v.o.output_limit = 1000;
	says(&v, "```repl\nprint('y' * 200000)\n```");
	says(&v, "FINAL(done)");
	CHECK_INT(solve(&v, "q?"), 0);
	q = fakesrv_request(v.root_srv, 1);
	CHECK(q);
	CHECK_MSG(q->body_len < 10000, "request of %zu bytes", q->body_len);
	CHECK_MSG_HAS(&v, 1, -1, "yyyyyyyyyy");
	CHECK_MSG_HAS(&v, 1, -1, "characters omitted");
	CHECK_MSG_HAS(&v, 1, -1, "200,001"); /* the true length, newline included */
	env_free(&v);
}

TEST(unterminated_block_of_a_cut_reply_still_runs)
{
	struct env v;
	env_init(&v, SUB_SIM);
	says_full(v.root_srv,
		  "```repl\nanswer['content'] = 'cut'\nanswer['ready'] = True\nprint('this line is "
		  "cu",
		  "length", 100, 50, 0);
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "cut");
	CHECK_INT(v.r.stop, RLM_STOP_ANSWER);
	env_free(&v);
}

TEST(indented_fence_code_is_dedented)
{
	struct env v;
	env_init(&v, SUB_SIM);
	says(&v, "1. Compute:\r\n   ```repl\r\n   x = 5\r\n   if x:\r\n       FINAL(x * 2)\r\n   ```\r\n");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(v.r.answer, "10");
	env_free(&v);
}

/* ---- the trajectory ---- */

/* With o.trajectory each turn is kept: the reply, its blocks with the
 * output shown, the notices; a limit's notice goes with the last turn. */
TEST(trajectory_keeps_each_turn)
{
	struct env v;
	const struct rlm_turn *t;
	env_init(&v, SUB_SIM);
	says(&v, "Thinking, no code.");
	says(&v, "```repl\nx = 'v'\nprint('hi')\n```\n```repl\nprint(1 / 0)\n```");
	says(&v, "```repl\nanswer['content'] = x\n```\nFINAL_VAR(y)");
	v.o.trajectory = true;
	v.o.max_iterations = 3;
	v.o.max_calls = 3;
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_MAX_CALLS);
	CHECK_INT(v.r.n_turns, 4);
	t = &v.r.turns[0];
	CHECK_INT(t->iteration, 1);
	CHECK_STR(t->reply, "Thinking, no code.");
	CHECK_INT(t->n_blocks, 0);
	CHECK_INT(t->n_notices, 1);
	CHECK_CONTAINS(t->notices[0], "Your reply had no ```repl block");
	t = &v.r.turns[1];
	CHECK_INT(t->n_blocks, 2);
	CHECK_STR(t->blocks[0].code, "x = 'v'\nprint('hi')\n");
	/* what the model saw: the output, then the variables the block made */
	CHECK_STR(t->blocks[0].output, "hi\nREPL variables: x: str\n");
	CHECK_STR(t->blocks[1].code, "print(1 / 0)\n");
	CHECK_CONTAINS(t->blocks[1].output, "ZeroDivisionError");
	CHECK_INT(t->n_notices, 0);
	/* FINAL_VAR of a name that is not there: its output, with no code */
	t = &v.r.turns[2];
	CHECK_INT(t->n_blocks, 2);
	CHECK_STR(t->blocks[0].output, "(no output)");
	CHECK(t->blocks[1].code == NULL);
	CHECK_CONTAINS(t->blocks[1].output, "y");
	/* the last call was refused: a turn with the limit's notice alone */
	t = &v.r.turns[3];
	CHECK_INT(t->iteration, 4);
	CHECK(t->reply == NULL);
	CHECK_INT(t->n_blocks, 0);
	CHECK_INT(t->n_notices, 1);
	CHECK_CONTAINS(t->notices[0], "call budget exhausted");
	env_free(&v);

	/* Off by default. */
	env_init(&v, SUB_SIM);
	says(&v, "FINAL(x)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK(v.r.turns == NULL && v.r.n_turns == 0);
	env_free(&v);
}

/* ---- progress ---- */

struct prog {
	pthread_mutex_t mu;
	struct buf log;
	int concurrent, max_concurrent;
};

static void on_progress(const struct rlm_progress *p, void *arg)
{
	struct prog *pr = arg;
	pthread_mutex_lock(&pr->mu);
	buf_printf(&pr->log, "%s %zu/%zu @%d\n", p->phase, p->done, p->total, p->level);
	pthread_mutex_unlock(&pr->mu);
}

TEST(progress_phases)
{
	struct env v;
	struct prog pr;
	env_init(&v, SUB_SIM);
	pthread_mutex_init(&pr.mu, NULL);
	buf_init(&pr.log, 0);
	v.o.progress = on_progress;
	v.o.progress_arg = &pr;
	says(&v, "```repl\nllm_query_batched(['a', 'b'])\n```");
	says(&v, "FINAL(x)");
	CHECK_INT(solve(&v, "q?"), 0);
	CHECK_STR(pr.log.p, "root 0/1 @1\nexec 0/1 @1\nsub 0/2 @1\nsub 1/2 @1\nsub 2/2 @1\nroot 0/1 @2\n");
	buf_release(&pr.log);
	pthread_mutex_destroy(&pr.mu);
	env_free(&v);
}

/* ---- the simulator plays both parts ---- */

/* The simulator as root and sub-model over ctx; code_errors as given. */
static void sim_solve(const char *spec, const struct corpus *ctx, const char *question,
		      struct rlm_result *r)
{
	struct sim_cfg sc;
	struct sim *sim;
	struct llm_model_cfg cfg = {0};
	struct llm_pool_cfg pc = {16};
	struct rlm_err err = {0, ""};
	struct llm_model *m;
	struct llm_pool *pool;
	struct rlm_opts o;
	sim_cfg_default(&sc);
	if (spec)
		CHECK_INT(sim_cfg_parse(spec, &sc, &err), 0);
	sim = sim_new(&sc);
	cfg.kind = LLM_INPROC;
	cfg.name = "sim";
	cfg.provider = &sim_provider;
	cfg.impl = sim;
	m = llm_model_new(&cfg, &err);
	CHECK_MSG(m, "%s", err.msg);
	pool = llm_pool_new(&pc, &err);
	CHECK(pool);
	memset(&o, 0, sizeof(o));
	o.strategy = RLM_REPL;
	o.pool = pool;
	o.model = m;
	o.params = (struct llm_params)LLM_PARAMS_DEFAULT;
	o.max_errors = 10;
	CHECK_MSG(rlm_solve(&o, question, ctx, r, &err) == 0, "%s", err.msg);
	llm_pool_free(pool);
	llm_model_free(m);
	sim_free(sim);
}

TEST(sim_root_code_errors_fed_back_and_fixed)
{
	/* The real worker's tracebacks go back to the simulator, which writes
	 * the step again, fixed; every seed still finds the needle. */
	struct buf b;
	struct corpus *ctx;
	int bumpy = 0;
	buf_init(&b, 0);
	for (size_t i = 0; b.len < 50000; i++)
		buf_printf(&b, "%s\n", i == 300 ? "The secret code is 4417."
						 : "Nothing of note happened on this day.");
	ctx = corpus_from_text(b.p, b.len);
	for (int seed = 1; seed <= 4; seed++) {
		struct rlm_result r;
		char spec[64];
		snprintf(spec, sizeof(spec), "code_errors=0.5,seed=%d", seed);
		sim_solve(spec, ctx, "What is the secret code?", &r);
		CHECK_MSG(r.stop == RLM_STOP_ANSWER, "%s: stop %s: %s", spec, rlm_stop_name(r.stop),
			  r.stop_detail ? r.stop_detail : "");
		CHECK_CONTAINS(r.answer, "4417");
		CHECK_INT(r.iterations, 3 + r.error_turns);
		bumpy += r.error_turns > 0;
		rlm_result_release(&r);
	}
	CHECK(bumpy > 0);
	corpus_free(ctx);
	buf_release(&b);
}

TEST(sim_root_and_sub_find_the_needle)
{
	struct sim_cfg sc;
	struct sim *sim;
	struct llm_model_cfg cfg = {0};
	struct llm_pool_cfg pc = {16};
	struct rlm_err err = {0, ""};
	struct llm_model *m;
	struct llm_pool *pool;
	struct rlm_opts o;
	struct rlm_result r;
	struct buf b;
	struct corpus *ctx;
	static const char *const filler[] = {
		"The harbour was quiet that morning and the boats rocked in the grey water.",
		"Nobody in the village remembered when the old mill had last turned its wheel.",
		"A long road wound between the hills, past orchards and low stone walls.",
	};
	buf_init(&b, 0);
	for (size_t i = 0; b.len < 300000; i++) {
		if (i == 2500)
			buf_puts(&b, "The secret code is 4417.\n");
		buf_printf(&b, "%s\n", filler[i % 3]);
	}
	ctx = corpus_from_text(b.p, b.len);
	sim_cfg_default(&sc);
	sim = sim_new(&sc);
	cfg.kind = LLM_INPROC;
	cfg.name = "sim";
	cfg.provider = &sim_provider;
	cfg.impl = sim;
	m = llm_model_new(&cfg, &err);
	CHECK_MSG(m, "%s", err.msg);
	pool = llm_pool_new(&pc, &err);
	CHECK(pool);
	memset(&o, 0, sizeof(o));
	o.strategy = RLM_REPL;
	o.pool = pool;
	o.model = m;
	o.params = (struct llm_params)LLM_PARAMS_DEFAULT;
	CHECK_MSG(rlm_solve(&o, "What is the secret code?", ctx, &r, &err) == 0, "%s", err.msg);
	CHECK_INT(r.stop, RLM_STOP_ANSWER);
	CHECK_CONTAINS(r.answer, "4417");
	CHECK(r.found);
	CHECK(r.sub_calls >= 2);
	CHECK(r.iterations >= 2);
	rlm_result_release(&r);
	llm_pool_free(pool);
	llm_model_free(m);
	sim_free(sim);
	corpus_free(ctx);
	buf_release(&b);
}
