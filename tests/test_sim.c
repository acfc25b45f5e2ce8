/* SPDX-License-Identifier: MIT */
/* tests/test_sim.c -- the simulator: its policy on tree prompts and generic
 * ones, its configuration, fault injection, the OpenAI request and reply
 * format (JSON and SSE), the in-process transport, and `rlm sim-serve` over
 * real HTTP (errors, faults at the socket, keep-alive speed, signals). */
#include "harness.h"
#include "proc.h"
#include "../common/common.h"
#include "../common/json.h"
#include "../sim/sim.h"
#include "../sim/sim_int.h"
#include "../rlm/rlm.h"
#include "../rlm/prompt.h"
#include "../rlm/reply.h"
#include "../repl/repl.h"
#include "../common/text.h"

#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers ---- */

static const char leaf_head[] =
    "You are answering a question about one part of a larger text. Use only the text given "
    "here.\n\nQuestion: %s\n\nReply with the answer alone, as briefly as the question allows, "
    "quoting the text where you can. If this part does not contain the answer, reply with "
    "exactly NONE. For a question that asks how many, reply with the count for this part "
    "only, as a number.\n\nText:\n";

static const char combine_head[] =
    "Several readers each answered the question below from a different part of a larger "
    "text. Combine their partial answers into one final answer. A partial answer of NONE "
    "means that part held nothing relevant. For a question that asks how many, add the "
    "counts up. Reply with the final answer alone.\n\nQuestion: %s\n\nPartial answers:\n";

static const char magic_q[] =
    "What is the special magic number for harmonious-uniform mentioned in the provided text?";

static char *reply_to(const char *text)
{
	struct llm_msg m = {LLM_USER, text, strlen(text)};
	return sim_reply_text(NULL, &m, 1);
}

/* An essay-like chunk of about `bytes` bytes; `needles` lines go in at
 * evenly spread places. Its words include some of the question's. */
static char *essay(size_t bytes, const char *const *needles, size_t n_needles, const char *q)
{
	static const char *const words[] = {
	    "the",     "startup", "founders", "number",	   "of",       "users",
	    "grew",    "special", "because",  "investors", "magic",    "wanted",
	    "growth",  "and",	  "product",  "market",	   "a",	       "essay",
	    "about",   "how",	  "ideas",    "work",	   "when",     "you",
	    "write",   "code",	  "every",    "day",	   "city",     "harmonious",
	    "uniform", "people",  "think",    "hard",	   "problems", "money",
	};
	struct buf b;
	struct rng r;
	size_t lines = 0, placed = 0;
	rng_seed(&r, 42);
	buf_init(&b, 0);
	buf_printf(&b, leaf_head, q);
	while (b.len < bytes) {
		size_t nw = 8 + rng_below(&r, 30);
		if (placed < n_needles && b.len >= bytes * (placed + 1) / (n_needles + 1)) {
			buf_printf(&b, "%s\n", needles[placed++]);
			continue;
		}
		for (size_t i = 0; i < nw; i++) {
			const char *w = words[rng_below(&r, ARRAY_SIZE(words))];
			if (i)
				buf_printf(&b, " %s", w);
			else
				buf_printf(&b, "%c%s", w[0] - 32, w + 1);
		}
		buf_puts(&b, lines % 7 == 6 ? ".\n\n" : ".\n");
		lines++;
	}
	while (placed < n_needles)
		buf_printf(&b, "%s\n", needles[placed++]);
	return buf_detach(&b, NULL);
}

static char *combine_prompt(const char *q, const char *const *partials, size_t n)
{
	struct buf b;
	buf_init(&b, 0);
	buf_printf(&b, combine_head, q);
	for (size_t i = 0; i < n; i++)
		buf_printf(&b, "[%zu] %s\n", i + 1, partials[i]);
	return buf_detach(&b, NULL);
}

/* A request body asking `text` as the only user message. */
static char *request_body(const char *model, const char *text, const char *extra)
{
	cJSON *root = cJSON_CreateObject(), *msgs = cJSON_CreateArray(), *m = cJSON_CreateObject();
	char *s, *out;
	json_add_str(root, "model", model);
	json_add_str(m, "role", "user");
	json_add_str(m, "content", text);
	json_add(msgs, NULL, m);
	json_add(root, "messages", msgs);
	s = json_print(root);
	cJSON_Delete(root);
	if (!extra)
		return s;
	s[strlen(s) - 1] = '\0';
	out = xasprintf("%s,%s}", s, extra);
	free(s);
	return out;
}

static struct sim *sim_of(const char *spec)
{
	struct sim_cfg c;
	struct rlm_err err = {0, ""};
	sim_cfg_default(&c);
	CHECK_MSG(sim_cfg_parse(spec, &c, &err) == 0, "%s: %s", spec, err.msg);
	return sim_new(&c);
}

static const char needle_q_text[] = "Question: what is the code of item-5?\n\nText:\n"
				    "the code of item-5 is c35\nnothing else here\n";

/* Content of a non-stream reply body, checked to be a well-formed completion. */
static char *completion_content(const char *body, size_t len, const char **finish, cJSON **root)
{
	cJSON *j = json_parse(body, len), *ch, *msg;
	CHECK_MSG(j, "not JSON: %.300s", body);
	CHECK_STR(json_str(j, "object"), "chat.completion");
	ch = cJSON_GetArrayItem(json_get(j, "choices"), 0);
	CHECK(ch);
	msg = json_get(ch, "message");
	CHECK_STR(json_str(msg, "role"), "assistant");
	CHECK(json_str(msg, "content"));
	if (finish)
		*finish = json_str(ch, "finish_reason");
	*root = j;
	return xstrdup(json_str(msg, "content"));
}

/* Check an SSE body event by event; returns the reassembled content. */
static char *sse_content(const char *body, size_t len, const char **finish_out, bool *saw_usage)
{
	struct buf content;
	const char *p = body, *end = body + len;
	bool done = false, first = true;
	static char finish[32];
	buf_init(&content, 0);
	buf_puts(&content, "");
	finish[0] = '\0';
	*saw_usage = false;
	while (p < end) {
		const char *e = strstr(p, "\n\n");
		cJSON *j, *ch, *delta;
		CHECK_MSG(e, "event without a blank line after it: %.200s", p);
		CHECK_MSG(!done, "event after [DONE]");
		CHECK_MSG(strncmp(p, "data: ", 6) == 0, "event is not data: %.100s", p);
		p += 6;
		if ((size_t)(e - p) == 6 && memcmp(p, "[DONE]", 6) == 0) {
			done = true;
			p = e + 2;
			continue;
		}
		j = json_parse(p, (size_t)(e - p));
		CHECK_MSG(j, "event is not JSON: %.*s", (int)(e - p), p);
		CHECK_STR(json_str(j, "object"), "chat.completion.chunk");
		CHECK(strncmp(json_str(j, "id"), "simcmpl-", 8) == 0);
		ch = cJSON_GetArrayItem(json_get(j, "choices"), 0);
		if (!ch) {
			CHECK(json_get(j, "usage"));
			*saw_usage = true;
		} else {
			delta = json_get(ch, "delta");
			CHECK(delta);
			if (first)
				CHECK_STR(json_str(delta, "role"), "assistant");
			if (json_str(delta, "content"))
				buf_puts(&content, json_str(delta, "content"));
			if (json_str(ch, "finish_reason"))
				snprintf(finish, sizeof(finish), "%s",
					 json_str(ch, "finish_reason"));
		}
		first = false;
		cJSON_Delete(j);
		p = e + 2;
	}
	CHECK_MSG(done, "no [DONE] at the end");
	*finish_out = finish;
	return buf_detach(&content, NULL);
}

/* ---- policy ---- */

TEST(policy_needle_in_large_essay)
{
	const char *needle = "One of the special magic numbers for harmonious-uniform is: 2338687.";
	char *text = essay(400000, &needle, 1, magic_q), *got;
	int64_t t0 = time_now_ns(), dt;
	got = reply_to(text);
	dt = time_now_ns() - t0;
	CHECK_STR(got, needle);
	fprintf(stderr, "  400 KB leaf answered in %.2f ms\n", (double)dt / 1e6);
	CHECK_MSG(dt < 50000000 * slow_factor(), "took %lld ns", (long long)dt);
	free(got);
	free(text);
}

TEST(policy_none_when_absent)
{
	char *text = essay(200000, NULL, 0, magic_q), *got = reply_to(text);
	CHECK_STR(got, "NONE");
	free(got);
	free(text);
}

TEST(policy_true_needle_beats_distractor_in_one_chunk)
{
	const char *needles[] = {
	    "One of the special magic numbers for quiet-harbor is: 1111111.",
	    "One of the special magic numbers for harmonious-uniform is: 2338687.",
	    "One of the special magic numbers for brave-lantern is: 3333333.",
	};
	char *text = essay(100000, needles, 3, magic_q), *got = reply_to(text);
	CHECK_STR(got, needles[1]);
	free(got);
	free(text);
}

TEST(policy_combine_distractor_loses)
{
	const char *parts[] = {
	    "NONE",
	    "One of the special magic numbers for quiet-harbor is: 1111111.",
	    "NONE",
	    "One of the special magic numbers for harmonious-uniform is: 2338687.",
	    "One of the special magic numbers for brave-lantern is: 3333333.",
	};
	char *p = combine_prompt(magic_q, parts, 5), *got = reply_to(p);
	CHECK_STR(got, parts[3]);
	free(got);
	free(p);
	/* order does not matter */
	{
		const char *rev[] = {parts[4], parts[3], parts[1]};
		p = combine_prompt(magic_q, rev, 3);
		got = reply_to(p);
		CHECK_STR(got, parts[3]);
		free(got);
		free(p);
	}
}

TEST(policy_combine_ties_and_single)
{
	const char *parts[] = {"NONE", "the first", "the second"};
	char *p = combine_prompt("What is it?", parts, 3), *got = reply_to(p);
	CHECK_STR(got, "the first"); /* no terms: every score ties, the first wins */
	free(got);
	free(p);
	{
		const char *one[] = {"  alone here.  "};
		p = combine_prompt(magic_q, one, 1);
		got = reply_to(p);
		CHECK_STR(got, "alone here.");
		free(got);
		free(p);
	}
}

TEST(policy_combine_multiline_partial)
{
	char *got = reply_to("Question: which gate opens at dawn?\n\nPartial answers:\n"
			     "[1] The north gate\nopens at dawn.\n[2] NONE\n[3] the river\n");
	CHECK_STR(got, "The north gate\nopens at dawn.");
	free(got);
}

TEST(policy_combine_all_none)
{
	/* a NONE reply as text_is_none has it, quoted ones too */
	const char *parts[] = {"NONE", "none", " NONE. ", "'NONE'", "\"None\"", "`NONE`."};
	char *p = combine_prompt(magic_q, parts, 6), *got = reply_to(p);
	CHECK_STR(got, "NONE");
	free(got);
	free(p);
	got = reply_to("Question: how many cats?\n\nPartial answers:\n");
	CHECK_STR(got, "NONE");
	free(got);
}

TEST(policy_how_many_counts_lines)
{
	struct buf b;
	char *got;
	buf_init(&b, 0);
	buf_printf(&b, leaf_head, "How many reports mention a storm in Lisbon?");
	buf_puts(&b, "Report 1: a storm hit Lisbon.\n"
		     "Report 2: calm weather in Porto.\n"
		     "\n"
		     "Report 3: storms again over the Lisbon harbour.\n"
		     "Report 4: Lisbon was sunny.\n"
		     "Report 5: a storm in Faro.\n");
	got = reply_to(b.p);
	CHECK_STR(got, "2");
	free(got);
	buf_reset(&b);
	buf_printf(&b, leaf_head, "How many times does the word 'hail' appear?");
	buf_puts(&b, "rain and sun\nno hail today\nHAIL again\nsnow\n");
	got = reply_to(b.p);
	CHECK_STR(got, "2");
	free(got);
	buf_reset(&b);
	buf_printf(&b, leaf_head, "how many reports mention a volcano?");
	buf_puts(&b, "Report 1: a storm hit Lisbon.\n");
	got = reply_to(b.p);
	CHECK_STR(got, "0");
	free(got);
	buf_release(&b);
}

TEST(policy_combine_sums_counts)
{
	const char *parts[] = {"3", "NONE", "There are 4 such reports.", "0", "12"};
	char *p = combine_prompt("How many reports mention a storm in Lisbon?", parts, 5);
	char *got = reply_to(p);
	CHECK_STR(got, "19");
	free(got);
	free(p);
}

TEST(policy_generic_prompts)
{
	struct {
		const char *prompt, *want;
	} cases[] = {
	    /* material first, the question last (a line ending in '?') */
	    {"Some notes from the trip.\nThe access code for the north gate is 4471.\n"
	     "The south gate has no code.\nWhat is the access code for the north gate?\n",
	     "The access code for the north gate is 4471."},
	    /* the question first, with no '?' and no markers */
	    {"Find the capital of Freedonia\nThe capital of Sylvania is Vel.\n"
	     "The capital of Freedonia is Fenwick.\n",
	     "The capital of Freedonia is Fenwick."},
	    /* Context: first, Question: after it */
	    {"Context:\nalpha team scored 3\nbeta team scored 9\n\nQuestion: what did the beta "
	     "team score?\n",
	     "beta team scored 9"},
	    /* the pool tests' format */
	    {needle_q_text, "the code of item-5 is c35"},
	    /* nothing matches */
	    {"Question: who painted the ceiling?\nText:\nthe cat sat on the mat\n", "NONE"},
	    /* nothing at all */
	    {"", "NONE"},
	    {"\n\n  \n", "NONE"},
	    /* Question: alone on its line */
	    {"Question:\nwhere is the key kept?\n\nText:\nthe key is kept under the blue pot\n"
	     "the door is red\n",
	     "the key is kept under the blue pot"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *got = reply_to(cases[i].prompt);
		CHECK_MSG(strcmp(got, cases[i].want) == 0, "case %zu: got \"%s\", want \"%s\"", i,
			  got, cases[i].want);
		free(got);
	}
}

TEST(policy_last_user_message)
{
	struct llm_msg m[3] = {
	    {LLM_SYSTEM, "Question: what is the code?\nText:\nthe code is 1\n", 0},
	    {LLM_USER, needle_q_text, strlen(needle_q_text)},
	    {LLM_ASSISTANT, "ok", 2},
	};
	char *got;
	m[0].len = strlen(m[0].text);
	got = sim_reply_text(NULL, m, 3);
	CHECK_STR(got, "the code of item-5 is c35");
	free(got);
	got = sim_reply_text(NULL, m, 0);
	CHECK_STR(got, "NONE");
	free(got);
}

TEST(policy_multibyte_utf8)
{
	struct buf b;
	char *got;
	buf_init(&b, 0);
	buf_printf(&b, leaf_head, "Quel est le code secret de la clé «rouge-été» ?");
	for (int i = 0; i < 200; i++)
		buf_printf(&b,
			   "Le café de la gare — %d — est fermé le dimanche ☕. 日本語の文章 %d。\n",
			   i, i);
	buf_puts(&b, "Le code secret de la clé «rouge-été» est 42 ✓.\n");
	for (int i = 0; i < 50; i++)
		buf_puts(&b, "Une clé bleue ouvre la porte du jardin d’hiver.\n");
	got = reply_to(b.p);
	CHECK_STR(got, "Le code secret de la clé «rouge-été» est 42 ✓.");
	free(got);

	/* A matching line longer than 1000 bytes is cut on a character boundary. */
	buf_reset(&b);
	buf_printf(&b, leaf_head, magic_q);
	buf_puts(&b, "One of the special magic numbers for harmonious-uniform is: ");
	for (int i = 0; i < 700; i++)
		buf_puts(&b, "é");
	buf_puts(&b, "\nfiller line\n");
	got = reply_to(b.p);
	CHECK(strlen(got) <= 1000 && strlen(got) >= 300);
	CHECK(text_utf8_valid(got, strlen(got), NULL));
	CHECK(strncmp(got, "One of the special", 18) == 0);
	free(got);
	buf_release(&b);
}

static const char magic_all_q[] = "What are all the special magic numbers for "
				   "harmonious-uniform mentioned in the provided text?";

TEST(policy_asks_all)
{
	static const struct {
		const char *q;
		bool all;
	} cases[] = {
	    {magic_all_q, true},
	    {"List ALL the codes of the vault.", true},
	    {"all of them?", true},
	    {"What are the codes, all told?", true},
	    {magic_q, false},
	    {"How many numbers are there at all?", false}, /* a count */
	    {"Who called the small hall?", false},
	    {"What is the all-time high?", false},
	    {"What does allow mean?", false},
	    {"", false},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		CHECK_MSG(sim_asks_all(cases[i].q, strlen(cases[i].q)) == cases[i].all,
			  "case %zu: '%s'", i, cases[i].q);
}

/* RULER's multi-value NIAH: a leaf lists every value of the key it sees,
 * in the order of the text, each once, and not the needles of other
 * keys; asked for one value, it still gives the first. */
TEST(policy_all_lists_every_value_of_the_key)
{
	const char *needles[] = {
	    "One of the special magic numbers for harmonious-uniform is: 2338687.",
	    "One of the special magic numbers for quiet-harbor is: 1111111.",
	    "One of the special magic numbers for harmonious-uniform is: 7150309.",
	    "One of the special magic numbers for harmonious-uniform is: 2338687.",
	    "One of the special magic numbers for brave-lantern is: 3333333.",
	    "One of the special magic numbers for harmonious-uniform is: 4090771.",
	};
	char *text = essay(200000, needles, ARRAY_SIZE(needles), magic_all_q), *got;
	got = reply_to(text);
	CHECK_STR(got, "One of the special magic numbers for harmonious-uniform is: 2338687.\n"
		       "One of the special magic numbers for harmonious-uniform is: 7150309.\n"
		       "One of the special magic numbers for harmonious-uniform is: 4090771.");
	free(got);
	free(text);
	text = essay(200000, needles, ARRAY_SIZE(needles), magic_q);
	got = reply_to(text);
	CHECK_STR(got, needles[0]);
	free(got);
	free(text);
	text = essay(100000, NULL, 0, magic_all_q);
	got = reply_to(text);
	CHECK_STR(got, "NONE");
	free(got);
	free(text);
}

/* The combiner for "all": the lines of every partial answer that match
 * best, distinct, in order; lines about other keys are dropped. */
TEST(policy_combine_all_unions_the_partials)
{
	const char *k1 = "One of the special magic numbers for harmonious-uniform is: 2338687.";
	const char *k2 = "One of the special magic numbers for harmonious-uniform is: 7150309.";
	const char *k3 = "One of the special magic numbers for harmonious-uniform is: 4090771.";
	const char *d = "One of the special magic numbers for quiet-harbor is: 1111111.";
	char *two = xasprintf("%s\n%s", k1, k2), *again = xasprintf("%s\n%s", k3, k1);
	const char *parts[] = {two, "NONE", d, again, " NONE. "};
	char *p = combine_prompt(magic_all_q, parts, ARRAY_SIZE(parts)), *got = reply_to(p);
	char *want = xasprintf("%s\n%s\n%s", k1, k2, k3);
	CHECK_STR(got, want);
	free(got);
	free(p);
	/* bare values hold no term of the question: all of them */
	{
		const char *bare[] = {"2338687", "NONE", "7150309\n2338687", "4090771"};
		p = combine_prompt(magic_all_q, bare, ARRAY_SIZE(bare));
		got = reply_to(p);
		CHECK_STR(got, "2338687\n7150309\n4090771");
		free(got);
		free(p);
	}
	{
		const char *none[] = {"NONE", "none"};
		p = combine_prompt(magic_all_q, none, 2);
		got = reply_to(p);
		CHECK_STR(got, "NONE");
		free(got);
		free(p);
	}
	free(want);
	free(two);
	free(again);
}

/* ---- which document ---- */

TEST(policy_asks_which_doc)
{
	static const struct {
		const char *q;
		bool which, plural;
	} cases[] = {
	    {"Which header defines the macro EPOLLEXCLUSIVE?", true, false},
	    {"which C header declares struct epoll_event", true, false},
	    {"In which of the records is the coolant valve mentioned?", true, true},
	    {"In which record is the coolant valve mentioned?", true, false},
	    {"What files mention the turbine?", true, true},
	    {"What is the document that cites Knuth?", true, false},
	    {"Which entries name a colour?", true, true},
	    {"Where is parse_header_line defined?", true, false},
	    {"Which source says the bridge opened in 1932?", true, false},
	    {"Which are all the reports about hail?", true, true},
	    {"What does the report say about hail?", false, false},
	    {"In which town was the architect who designed the bridge born?", false, false},
	    {"How many files mention the turbine?", false, false},
	    {"Which team won the final?", false, false},
	    {"What is the access code of the zebra-7731 vault?", false, false},
	    {"Where is the vault?", false, false},
	    {"Is the file profile in the header?", false, false},
	    {"Which team is the report about?", false, false},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		bool plural = !cases[i].plural;
		bool got = sim_asks_which_doc(cases[i].q, strlen(cases[i].q), &plural);
		CHECK_MSG(got == cases[i].which && plural == cases[i].plural,
			  "'%s': which %d plural %d", cases[i].q, got, plural);
	}
	CHECK(!sim_asks_which_doc(NULL, 0, NULL));
}

TEST(policy_next_key)
{
	static const struct {
		const char *q, *keys; /* the keys, '|' after each; quoted ones in <> */
	} cases[] = {
	    {"Which header defines the macro EPOLLEXCLUSIVE?", "EPOLLEXCLUSIVE|"},
	    {"What is the access code of the zebra-7731 vault?", "zebra-7731|"},
	    {"Where is parse_header_line defined, and parseHeader?", "parse_header_line|parseHeader|"},
	    {"Which record mentions \"coolant valve on rig nine\"?", "<coolant valve on rig nine>|"},
	    {"Which record mentions \xe2\x80\x9c" "blue heron\xe2\x80\x9d today?", "<blue heron>|"},
	    {"What is the capital of France in 2022? Is it v2 or USA?", ""},
	    {"A \"\" empty quote and an \"unclosed one", ""},
	    {"Version v2.3.1. and item-5.", "v2.3.1|item-5|"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct buf b;
		size_t pos = 0, n;
		const char *k;
		bool quoted;
		buf_init(&b, 0);
		buf_puts(&b, "");
		while (sim_next_key(cases[i].q, strlen(cases[i].q), &pos, &k, &n, &quoted))
			buf_printf(&b, quoted ? "<%.*s>|" : "%.*s|", (int)n, k);
		CHECK_MSG(!strcmp(b.p, cases[i].keys), "'%s': keys '%s', want '%s'", cases[i].q,
			  b.p, cases[i].keys);
		buf_release(&b);
	}
}

/* Documents under "[doc: ID]" lines, in another shape than the root's
 * prompts: the sub-model names the document of its best line, not the
 * line; for a plural, every document that has one as good. */
TEST(policy_which_doc_names_the_document)
{
	static const char docs[] =
	    "Here are three files from a C project; each starts with a line naming it.\n"
	    "[doc: src/alpha.c]\n"
	    "static int count = 0; /* parse_header_line lives in util, see below */\n"
	    "int alpha(void) { return count++; }\n"
	    "[doc: src/util/parse.c]\n"
	    "#include \"parse.h\"\n"
	    "int parse_header_line(const char *s, size_t n) /* defined here */\n"
	    "{ return n && s[0] == '#'; }\n"
	    "[doc: src/omega.c]\n"
	    "int main(void) { return alpha(); }\n"
	    "The turbine in omega overheats on Mondays.\n";
	static const struct {
		const char *q, *want;
	} cases[] = {
	    /* the key parse_header_line is on lines of two files: the one
	     * that also defines it wins */
	    {"Where is parse_header_line defined?", "src/util/parse.c"},
	    {"In which file is the turbine said to overheat?", "src/omega.c"},
	    {"Which file has the alpha function that returns count?", "src/alpha.c"},
	    {"Which files mention parse_header_line?", "src/alpha.c\nsrc/util/parse.c"},
	    {"Which file talks about the weather in Lisbon?", "NONE"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *p = xasprintf("%s\nQuestion: %s\n", docs, cases[i].q), *got = reply_to(p);
		CHECK_MSG(!strcmp(got, cases[i].want), "'%s': got '%s', want '%s'", cases[i].q, got,
			  cases[i].want);
		free(got);
		free(p);
	}
	{
		/* no header: the best line itself, as for any question */
		char *got = reply_to("Question: Which file says the turbine overheats?\n\nText:\n"
				     "The pump is fine.\nThe turbine in omega overheats on "
				     "Mondays.\n");
		CHECK_STR(got, "The turbine in omega overheats on Mondays.");
		free(got);
	}
	{
		/* a question that does not ask which document skips the headers
		 * as material, even when they match */
		char *got = reply_to("Question: What is said of the omega turbine?\n\n"
				     "Text:\n[doc: omega turbine]\nThe turbine in omega overheats on "
				     "Mondays.\n");
		CHECK_STR(got, "The turbine in omega overheats on Mondays.");
		free(got);
	}
}

/* ---- text that `rlm bench gen` does not write ----
 * Paragraphs of tens of kilobytes with no newline, sentences of other
 * shapes, non-ASCII prose, CRLF lines, questions in natural phrasing and
 * questions naming several keys. */

/* A paragraph of about `bytes` bytes with no newline: prose sentences of
 * varied shapes (some about launches and passwords, none naming Aurora),
 * with `needle` as one sentence at fraction `at` of it. `sep` goes between
 * sentences (" " or, for CRLF text, "\r\n" now and then). */
static char *paragraph(size_t bytes, const char *needle, double at, bool utf8, bool crlf)
{
	static const char *const shapes[] = {
	    "The launch of the new rover was delayed twice because of the weather in March.",
	    "Nobody on the night shift remembered which password had been rotated last!",
	    "Is the telemetry archive really kept for seven years, as the handbook claims?",
	    "Mission control logged %d anomalies, most of them harmless sensor glitches.",
	    "Engineers argued for hours about fuel margins, then agreed on a compromise.",
	    "A second launch window opens in %d days if the first one is missed.",
	};
	static const char *const wide[] = {
	    "Η εκτόξευση αναβλήθηκε λόγω καιρού, είπε ο διευθυντής της αποστολής.",
	    "Le mot de passe de la station météo a été changé à l’été — encore une fois.",
	    "打ち上げは天候のため延期されました。",
	};
	struct buf b;
	bool placed = false;
	size_t i = 0;
	buf_init(&b, bytes + 256);
	while (b.len < bytes) {
		if (!placed && b.len >= (size_t)(at * (double)bytes)) {
			buf_puts(&b, needle);
			placed = true;
		} else if (utf8 && i % 3 == 1) {
			buf_puts(&b, wide[i % ARRAY_SIZE(wide)]);
		} else {
			buf_printf(&b, shapes[i % ARRAY_SIZE(shapes)], (int)(i % 97));
		}
		buf_puts(&b, crlf && i % 40 == 39 ? "\r\n" : " ");
		i++;
	}
	if (!placed)
		buf_puts(&b, needle);
	return buf_detach(&b, NULL);
}

static char *leaf_prompt(const char *q, const char *text)
{
	struct buf b;
	buf_init(&b, 0);
	buf_printf(&b, leaf_head, q);
	buf_puts(&b, text);
	buf_puts(&b, "\n");
	return buf_detach(&b, NULL);
}

TEST(policy_long_paragraph_answers_the_sentence)
{
	static const char needle[] = "For the Aurora mission, the launch password is "
				     "tangerine-4471, and it changes at dawn.";
	static const char q[] = "What is the launch password for the Aurora mission?";
	struct {
		size_t bytes;
		double at;
		bool utf8, crlf;
	} cases[] = {
	    {50000, 0.97, false, false}, {50000, 0.5, false, false}, {50000, 0.99, true, false},
	    {60000, 0.8, true, true},	 {3000, 0.9, false, false},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *text = paragraph(cases[i].bytes, needle, cases[i].at, cases[i].utf8,
				       cases[i].crlf);
		char *prompt = leaf_prompt(q, text);
		char *got = reply_to(prompt);
		if (!strstr(got, "tangerine-4471"))
			fprintf(stderr, "  case %zu: %.120s\n", i, got);
		CHECK(strstr(got, "tangerine-4471") != NULL);
		CHECK(strlen(got) <= 1000);
		CHECK(text_utf8_valid(got, strlen(got), NULL));
		CHECK(strstr(got, "telemetry") == NULL); /* the sentence, not its neighbours */
		free(got);
		free(prompt);
		free(text);
	}
}

TEST(policy_long_sentence_answers_a_window_on_the_match)
{
	/* one run-on sentence of 30 KB, no sentence end: the answer is a
	 * window around the terms, never the head */
	struct buf b;
	char *got, *prompt;
	buf_init(&b, 0);
	for (int i = 0; i < 400; i++) {
		buf_printf(&b, "and then the crew checked valve %d, ", i);
		if (i == 300)
			buf_puts(&b, "while the reactor serial number was QX-88-omega, ");
	}
	prompt = leaf_prompt("Which serial number did the reactor have?", b.p);
	got = reply_to(prompt);
	CHECK(strstr(got, "QX-88-omega") != NULL);
	CHECK(strlen(got) <= 600);
	CHECK(strncmp(got, "and then the crew checked valve 0,", 34) != 0);
	free(got);
	free(prompt);
	buf_release(&b);
}

TEST(policy_several_keys_each_part_and_combined)
{
	static const char q[] = "List the codes of Ada, Grace and Linus.";
	static const char part1[] = "Ada went to the market on Tuesday.\n"
				    "Staff codes are printed on every badge.\n"
				    "Ada's code is K-1815, issued in the spring.\n"
				    "The cafeteria closes at noon on Fridays.\n"
				    "Badge code for Linus: L-1991.\n";
	static const char part2[] = "Visitors sign in at the front desk.\n"
				    "Grace Hopper — code G-1906 — works on floor three.\n"
				    "Parking codes change monthly.\n";
	static const char part3[] = "Nothing here names a person.\nCodes are secret.\n";
	char *prompt, *got, *all, *owned[3];
	const char *partials[4];

	prompt = leaf_prompt(q, part1);
	got = reply_to(prompt);
	CHECK_STR(got, "Ada's code is K-1815, issued in the spring.\nBadge code for Linus: L-1991.");
	free(prompt);
	partials[0] = owned[0] = got;

	prompt = leaf_prompt(q, part2);
	got = reply_to(prompt);
	CHECK_STR(got, "Grace Hopper — code G-1906 — works on floor three.");
	free(prompt);
	partials[1] = owned[1] = got;

	prompt = leaf_prompt(q, part3);
	got = reply_to(prompt);
	CHECK_STR(got, "NONE");
	free(prompt);
	partials[2] = owned[2] = got;
	partials[3] = "Ada's code is K-1815, issued in the spring."; /* a duplicate */

	prompt = combine_prompt(q, partials, 4);
	all = reply_to(prompt);
	CHECK(strstr(all, "K-1815") && strstr(all, "G-1906") && strstr(all, "L-1991"));
	CHECK_STR(all, "Ada's code is K-1815, issued in the spring.\n"
		       "Grace Hopper — code G-1906 — works on floor three.\n"
		       "Badge code for Linus: L-1991.");
	free(all);
	free(prompt);
	for (int i = 0; i < 3; i++)
		free(owned[i]);

	/* other list shapes: "or", a two-word item, an Oxford comma */
	prompt = leaf_prompt("What are the codes for Ada Lovelace, Linus, or Grace?", part1);
	got = reply_to(prompt);
	CHECK(strstr(got, "K-1815") && strstr(got, "L-1991"));
	free(got);
	free(prompt);
}

TEST(policy_question_phrasing_does_not_sink_the_match)
{
	static const char *const texts[] = {
	    "Changelog\nNode.js 19.9.0 — 2023-04-10\nNode.js 20.0.0 — 2023-04-18\n"
	    "Node.js 18.16.0 — 2023-04-12\n",
	    "The project moves fast. v19.9.0 was released on April 10, 2023. v20.0.0 was released "
	    "on April 18, 2023. Then came the LTS line.\n",
	    "| version | released |\n| 20.0.0 | 2023-04-18 |\n| 19.9.0 | 2023-04-10 |\n",
	    "Release notes: Node.js 20.0.0 shipped on 2023-04-18 with a new permission model. "
	    "Before that, Node.js 19.9.0 had shipped on 2023-04-10.\n",
	};
	static const char *const questions[] = {
	    "On what date was Node.js 20.0.0 released?",
	    "Version 20.0.0 date?",
	    "When did Node 20.0.0 come out?",
	    "What was the release date of Node.js v20.0.0?",
	    "Which day saw the release of v20.0.0?",
	    "When was 20.0.0 releasing?",
	    "When was Node.js 20 released?",
	};
	for (size_t t = 0; t < ARRAY_SIZE(texts); t++) {
		for (size_t k = 0; k < ARRAY_SIZE(questions); k++) {
			char *prompt = leaf_prompt(questions[k], texts[t]);
			char *got = reply_to(prompt);
			bool ok = (strstr(got, "2023-04-18") || strstr(got, "April 18, 2023")) &&
				  !strstr(got, "19.9.0");
			if (!ok)
				fprintf(stderr, "  text %zu, question %zu: %s\n", t, k, got);
			CHECK(ok);
			free(got);
			free(prompt);
		}
	}
}

TEST(policy_long_lines_count_and_list_by_sentence)
{
	/* "how many" counts lines (two matching sentences on one line count
	 * once); "all" lists the matching sentences of a long line, not the
	 * line's head */
	static const char *const needles[] = {
	    "The vault code for Orion is 4417.", "Meanwhile the vault code for Orion became 5520!",
	    "A third vault code for Orion, 6631, was never used."};
	struct buf b;
	char *prompt, *got;
	buf_init(&b, 0);
	for (int i = 0; i < 3; i++) {
		char *para = paragraph(20000, needles[i], 0.3 + 0.3 * i, i == 1, false);
		buf_puts(&b, para);
		buf_puts(&b, i == 0 ? " The vault code for Orion is 4417 again.\r\n" : "\r\n");
		free(para);
	}
	prompt = leaf_prompt("How many vault codes for Orion are there?", b.p);
	got = reply_to(prompt);
	CHECK_STR(got, "3");
	free(got);
	free(prompt);
	prompt = leaf_prompt("What are all the vault codes for Orion?", b.p);
	got = reply_to(prompt);
	CHECK(strstr(got, "4417") && strstr(got, "5520") && strstr(got, "6631"));
	CHECK(strlen(got) < 600);
	free(got);
	free(prompt);
	buf_release(&b);
}

TEST(policy_how_many_needs_whole_terms)
{
	/* a part of a compound key (zebra of zebra-7731) ranks a unit but
	 * never counts it */
	static const char text[] = "The zebra-7731 vault opened at nine.\n"
				   "The zebra-1234 vault stayed shut.\n"
				   "A zebra vault is a joke among the guards.\n"
				   "Guards checked the zebra-7731 vault twice. Nobody else did.\n";
	char *prompt = leaf_prompt("How many times is the zebra-7731 vault mentioned?", text);
	char *got = reply_to(prompt);
	CHECK_STR(got, "2");
	free(got);
	free(prompt);
}

/* What a "how many" question counts and what it did ("parts", "log")
 * need not be in the lines: a table's rows do not say "part", a log line
 * of an error does not say "log". A header that says "part" does not make
 * it needed; a word the counted lines hold ("error") still is. */
TEST(policy_how_many_frame_words)
{
	static const char table[] = "| part | qty | status |\n|---|---|---|\n"
				    "| QX-1 | 4 | backordered |\n| QX-2 | 9 | shipped |\n"
				    "| QX-3 | 1 | backordered |\n| QX-4 | 2 | backordered |\n";
	static const char log[] = "{\"svc\":\"svc_kestrel\",\"level\":\"error\",\"msg\":\"disk full\"}\n"
				  "{\"svc\":\"svc_kestrel\",\"level\":\"info\",\"msg\":\"started\"}\n"
				  "{\"svc\":\"svc_osprey\",\"level\":\"error\",\"msg\":\"timeout\"}\n"
				  "{\"svc\":\"svc_kestrel\",\"level\":\"error\",\"msg\":\"timeout\"}\n";
	static const char fires[] = "Report 1: a fire in the barn.\nReport 2: a flood.\n";
	char *prompt = leaf_prompt("How many parts are backordered?", table);
	char *got = reply_to(prompt);
	CHECK_STR(got, "3");
	free(got);
	free(prompt);
	prompt = leaf_prompt("How many errors did svc_kestrel log?", log);
	got = reply_to(prompt);
	CHECK_STR(got, "2");
	free(got);
	free(prompt);
	/* the thing asked about is no frame word: no storm, no count */
	prompt = leaf_prompt("How many reports mention a storm?", fires);
	got = reply_to(prompt);
	CHECK_STR(got, "0");
	free(got);
	free(prompt);
	/* what is counted, in prose that never says it, is no count either */
	prompt = leaf_prompt("How many storms were reported?", fires);
	got = reply_to(prompt);
	CHECK_STR(got, "0");
	free(got);
	free(prompt);
	prompt = leaf_prompt("How many fires were reported?", fires);
	got = reply_to(prompt);
	CHECK_STR(got, "1");
	free(got);
	free(prompt);
	/* a table's rows whose header is in another part still count */
	prompt = leaf_prompt("How many parts are backordered?", table + 38);
	got = reply_to(prompt);
	CHECK_STR(got, "3");
	free(got);
	free(prompt);
}

/* Of two partial answers that match the question as well, the one that
 * states a value (a term with a digit the question lacks) is the answer. */
TEST(policy_combine_prefers_a_stated_value)
{
	static const char *const parts[] = {
	    "The Café Lumière vault keeps its launch code in a drawer.",
	    "The launch code of the Café Zürich vault is 畑-4023-ÉTÉ.",
	};
	char *p = combine_prompt("What is the launch code of the vault?", parts, 2);
	char *got = reply_to(p);
	CHECK_STR(got, "The launch code of the Café Zürich vault is 畑-4023-ÉTÉ.");
	free(got);
	free(p);
}

TEST(policy_identifiers_match_whole_and_in_parts)
{
	static const char text[] = "Ticket OPS-1235 is open and waits for the vendor.\n"
				   "Ticket OPS 1234 was closed on Monday by the night shift.\n"
				   "Nobody knows why ticket 1234 of the HR queue is still open.\n";
	static const char *const questions[] = {
	    "What is the status of ticket OPS-1234?",
	    "Is OPS-1234 closed?",
	    "What happened to ops_1234?",
	};
	for (size_t i = 0; i < ARRAY_SIZE(questions); i++) {
		char *prompt = leaf_prompt(questions[i], text);
		char *got = reply_to(prompt);
		if (strcmp(got, "Ticket OPS 1234 was closed on Monday by the night shift."))
			fprintf(stderr, "  question %zu: %s\n", i, got);
		CHECK_STR(got, "Ticket OPS 1234 was closed on Monday by the night shift.");
		free(got);
		free(prompt);
	}
}

TEST(policy_keys_keep_none_honest)
{
	/* a part that does not name the key answers NONE, however much of the
	 * question's wording it holds */
	static const char text[] = "The launch password was changed on Monday.\n"
				   "Every launch password has twelve characters.\n";
	char *prompt = leaf_prompt("What is the launch password for the Aurora mission?", text);
	char *got = reply_to(prompt);
	CHECK_STR(got, "NONE");
	free(got);
	free(prompt);
}

/* ---- the root policy (sim/sim_root.c) ---- */

#define ROOT_TURNS 12

/* A root conversation: the system prompt and the first user message
 * rendered from the real templates, then turns appended. */
struct convo {
	struct llm_msg m[64];
	char *owned[64];
	size_t n;
};

static void convo_add(struct convo *c, enum llm_role role, char *text)
{
	CHECK(c->n < ARRAY_SIZE(c->m));
	c->owned[c->n] = text;
	c->m[c->n] = (struct llm_msg){role, text, strlen(text)};
	c->n++;
}

static char *render(const char *name, const struct prompt_var *vars, size_t n)
{
	struct buf b;
	struct rlm_err err = {0, ""};
	buf_init(&b, 0);
	CHECK_MSG(rlm_prompt_render(name, vars, n, &b, &err) == 0, "%s: %s", name, err.msg);
	return buf_detach(&b, NULL);
}

#define SANDBOX_LINE                                                                       \
	"The REPL is sandboxed: no network or sockets (so no asyncio event loop; "                \
	"llm_query_batched and threads run things in parallel), no subprocesses or shell "       \
	"commands, and files can be written only in the current directory (a scratch "           \
	"directory)."

/* note: what rlm/loop.c puts in {{rlm_query_note}} ("": recursion on). */
static void convo_init_note(struct convo *c, const char *question, const char *desc,
			    const char *sub_chars, const char *note)
{
	struct prompt_var vars[] = {
	    {"question", question, strlen(question)},
	    {"context_desc", desc, strlen(desc)},
	    {"sub_chars", sub_chars, strlen(sub_chars)},
	    {"max_iterations", "12", 2},
	    {"output_limit", "20000", 5},
	    {"block_limits", "A block may make up to 10,000 sub-calls.", 40},
	    {"sandbox", SANDBOX_LINE, sizeof(SANDBOX_LINE) - 1},
	    {"rlm_query_note", note, strlen(note)},
	    {"tools", "", 0},
	};
	memset(c, 0, sizeof(*c));
	convo_add(c, LLM_SYSTEM, render("repl_system.txt", vars, ARRAY_SIZE(vars)));
	convo_add(c, LLM_USER, render("repl_first.txt", vars, ARRAY_SIZE(vars)));
}

static void convo_init(struct convo *c, const char *question, const char *desc,
		       const char *sub_chars)
{
	convo_init_note(c, question, desc, sub_chars, "");
}

/* The reply, then the user message with its output (repl_next.txt, or
 * repl_last.txt when last). */
static void convo_turn(struct convo *c, const char *reply, const char *output, bool last)
{
	char *outputs = xasprintf("REPL output:\n%s", output), turn[24];
	struct prompt_var vars[] = {
	    {"outputs", outputs, strlen(outputs)},
	    {"turn", turn, 0},
	    {"max_iterations", "12", 2},
	};
	snprintf(turn, sizeof(turn), "%zu", c->n / 2 + 1);
	vars[1].len = strlen(turn);
	convo_add(c, LLM_ASSISTANT, xstrdup(reply));
	convo_add(c, LLM_USER,
		  render(last ? "repl_last.txt" : "repl_next.txt", vars, ARRAY_SIZE(vars)));
	free(outputs);
}

static void convo_release(struct convo *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->owned[i]);
}

static struct sim_cfg root_cfg(const char *spec)
{
	struct sim_cfg cfg;
	struct rlm_err err = {0, ""};
	sim_cfg_default(&cfg);
	CHECK_MSG(sim_cfg_parse(spec, &cfg, &err) == 0, "%s: %s", spec, err.msg);
	return cfg;
}

static char *root_reply(const char *spec, const struct convo *c)
{
	struct sim_cfg cfg = root_cfg(spec);
	char *r = sim_reply_text(&cfg, c->m, c->n), *again = sim_root_reply(&cfg, c->m, c->n);
	CHECK_STR(r, again); /* sim_reply_text defers to the root policy */
	free(again);
	return r;
}

/* The code of the reply's one ```repl block (fresh), checking the reply's
 * shape: a sentence, then the block. */
static char *code_of(const char *reply)
{
	const char *open = strstr(reply, "\n\n```repl\n"), *body, *close;
	CHECK_MSG(open && open > reply, "no prose then ```repl block: %.300s", reply);
	CHECK_MSG(!memchr(reply, '\n', (size_t)(open - reply)), "prose of many lines: %.300s",
		  reply);
	body = open + 10;
	close = strstr(body, "\n```\n");
	CHECK_MSG(close && !strcmp(close, "\n```\n"), "block not closed at the end: %.300s", reply);
	return xstrndup(body, (size_t)(close - body) + 1);
}

static int step_in(const char *code)
{
	const char *p = strstr(code, "# step ");
	CHECK_MSG(p && code == p, "code does not start with a step marker: %.200s", code);
	return p[7] - '0';
}

static int py(const char *program, struct proc_out *o)
{
	const char *argv[] = {"/usr/bin/python3", "-I", "-S", "-", NULL};
	const char *env[] = {"LC_ALL=C.UTF-8", NULL};
	memset(o, 0, sizeof(*o));
	CHECK(proc_run(argv, program, env, 60, o) == 0);
	return o->status;
}

static void py_compiles(const char *code)
{
	const char *argv[] = {"/usr/bin/python3",
			      "-I",
			      "-S",
			      "-c",
			      "import sys; compile(sys.stdin.buffer.read(), 'x', 'exec')",
			      NULL};
	struct proc_out o;
	CHECK(proc_run(argv, code, NULL, 60, &o) == 0);
	CHECK_MSG(o.status == 0, "does not compile: %s\n%s", o.err, code);
	proc_out_release(&o);
}

/* The REPL, for the tests: stubs of llm_query and llm_query_batched that
 * answer like a sub-model reading for KEY (the line holding it, its count
 * for "how many", NONE without it, an error for a chunk holding
 * FAIL-CHUNK), and check the prompts are shaped like tree_leaf.txt and
 * tree_combine.txt. */
#define NEEDLE_TEXT "The access code of the zebra-7731 vault is 55-ALPHA."
static const char py_prelude[] =
    "KEY = 'zebra-7731'\n"
    "NEEDLE = '" NEEDLE_TEXT "'\n"
    "CALLS = []\n"
    "COMBINES = []\n"
    "def _leaf(p):\n"
    "    assert p.startswith('You are answering a question about one part'), p[:80]\n"
    "    head, text = p.split('\\n\\nText:\\n', 1)\n"
    "    assert 'reply with exactly NONE' in head and 'the count for this part' in head\n"
    "    qline = [l for l in head.split('\\n') if l.startswith('Question: ')]\n"
    "    assert len(qline) == 1, head\n"
    "    if 'FAIL-CHUNK' in text:\n"
    "        return 'Error: simulated failure'\n"
    "    n = text.count(KEY)\n"
    "    if not n:\n"
    "        return ' NONE\\n'\n"
    "    if 'how many' in qline[0].lower():\n"
    "        return str(n)\n"
    "    return [l for l in text.split('\\n') if KEY in l][0]\n"
    "def llm_query_batched(prompts, model=None):\n"
    "    assert isinstance(prompts, list) and prompts\n"
    "    CALLS.append(len(prompts))\n"
    "    return [_leaf(p) for p in prompts]\n"
    "def llm_query(prompt, model=None):\n"
    "    assert prompt.startswith('Several readers each answered'), prompt[:80]\n"
    "    assert '\\nQuestion: ' in prompt and '\\n\\nPartial answers:\\n[1] ' in prompt\n"
    "    COMBINES.append(prompt)\n"
    "    return ' ' + prompt.split('Partial answers:\\n[1] ', 1)[1].split('\\n')[0] + '\\n'\n"
    "answer = {'content': None, 'ready': False}\n"
    "class _Documents:\n"
    "    def __len__(self):\n"
    "        return 1 if isinstance(context, str) else len(context)\n"
    "    def __getitem__(self, i):\n"
    "        if isinstance(i, slice):\n"
    "            return [self[j] for j in range(*i.indices(len(self)))]\n"
    "        if i < 0:\n"
    "            i += len(self)\n"
    "        if not 0 <= i < len(self):\n"
    "            raise IndexError('documents index out of range')\n"
    "        t = context if isinstance(context, str) else context[i]\n"
    "        name = 'notes.txt' if isinstance(context, str) else 'doc-%02d.txt' % i\n"
    "        return {'id': name, 'path': name, 'title': None, 'chars': len(t), 'meta': {}}\n"
    "documents = _Documents()\n"
    "SEARCHES = []\n"
    "SEARCH_OFF = True\n"
    "def _cut(t, k):\n"
    "    # a long line: a window of 500 around the match, as the runtime's\n"
    "    if len(t) <= 500:\n"
    "        return t\n"
    "    a = max(0, min(k - 166, len(t) - 500))\n"
    "    return ('...' if a else '') + t[a:a + 500] + ('...' if a + 500 < len(t) else '')\n"
    "def search(pattern, max_results=100, regex=True, ignore_case=False):\n"
    "    import re\n"
    "    SEARCHES.append(pattern)\n"
    "    if SEARCH_OFF:\n"
    "        return []\n"
    "    rx = re.compile(pattern if regex else re.escape(pattern),\n"
    "                    re.M | (re.I if ignore_case else 0))\n"
    "    out = []\n"
    "    import json\n"
    "    docs = [context] if isinstance(context, str) else context\n"
    "    for i, d in enumerate(d if isinstance(d, str) else json.dumps(d) for d in docs):\n"
    "        for m in rx.finditer(d):\n"
    "            ls = d.rfind('\\n', 0, m.start()) + 1\n"
    "            le = d.find('\\n', m.start())\n"
    "            le = len(d) if le < 0 else le\n"
    "            out.append({'doc': documents[i]['id'], 'index': i,\n"
    "                        'line': d.count('\\n', 0, m.start()) + 1,\n"
    "                        'start': len(d[:m.start()].encode()),\n"
    "                        'end': len(d[:m.end()].encode()), 'text': _cut(d[ls:le], m.start() - ls)})\n"
    "            if len(out) >= max_results:\n"
    "                return out\n"
    "    return out\n";

/* Contexts: a str of lines, and a list of documents (an empty one, one
 * larger than a chunk); NEEDLES copies of NEEDLE in each. */
static const char py_ctx_str[] =
    "_lines = ['Line %d: the market in town %d was busy and the weather mild.' % (i, i % 17)\n"
    "          for i in range(300)]\n"
    "for _k in range(NEEDLES):\n"
    "    _lines.insert(40 + _k * 37, NEEDLE)\n"
    "context = '\\n'.join(_lines)\n";
static const char py_ctx_list[] =
    "context = ['Document %d. ' % d + ' '.join('word%d' % ((d * 7 + j) % 50)\n"
    "           for j in range(40 + d * 13 % 60)) for d in range(40)]\n"
    "context[5] = ''\n"
    "context[25] = 'Big document.\\n' + 'filler text line.\\n' * 400\n"
    "for _k in range(NEEDLES):\n"
    "    context[3 + _k * 5] += '\\n' + NEEDLE\n";

/* A persistent REPL played by re-running the blocks that succeeded. */
struct fake_repl {
	struct buf hist;
};

static void fake_repl_init(struct fake_repl *r, bool list, int needles, const char *extra)
{
	buf_init(&r->hist, 0);
	buf_puts(&r->hist, py_prelude);
	buf_printf(&r->hist, "NEEDLES = %d\n", needles);
	buf_puts(&r->hist, list ? py_ctx_list : py_ctx_str);
	if (extra)
		buf_puts(&r->hist, extra);
}

/* Run code; returns the output the model sees (stdout, then the
 * traceback); *ready gets answer["content"] when the code set
 * answer["ready"] (else NULL), *raised whether it raised. */
static char *fake_repl_exec(struct fake_repl *r, const char *code, const char *check, char **ready,
			    bool *raised)
{
	struct buf prog;
	struct proc_out o;
	char *out, *res;
	buf_init(&prog, 0);
	buf_printf(&prog, "%sprint('@@OUT@@')\n%s", r->hist.p, code);
	buf_puts(&prog, "print('@@RES@@', answer['ready'], answer['content'])\n");
	if (check)
		buf_puts(&prog, check);
	py(prog.p, &o);
	*raised = o.status != 0;
	out = strstr(o.out, "@@OUT@@\n");
	CHECK_MSG(out, "the history failed: %s\n%s", o.err, prog.p);
	out += 8;
	res = strstr(out, "@@RES@@ ");
	*ready = NULL;
	if (res) {
		CHECK_MSG(!*raised, "the check failed: %s", o.err);
		if (strncmp(res + 8, "True ", 5) == 0)
			*ready = xstrndup(res + 13, strcspn(res + 13, "\n"));
		*res = '\0';
	} else {
		CHECK_MSG(*raised && strstr(o.err, "Traceback (most recent call last):"),
			  "no result and no traceback: %s", o.err);
	}
	if (!*raised)
		buf_puts(&r->hist, code);
	out = xasprintf("%s%s", out, o.err);
	proc_out_release(&o);
	buf_release(&prog);
	return out;
}

/* The root's arithmetic (sim/sim_compute.c): the count in digits or
 * words, the sequence by its name, one per line when asked; the code
 * runs in a real python3 and prints the answer it sets. Questions that
 * only look like one are not its business (b untouched). */
TEST(compute_reads_the_sequence_and_its_count)
{
	static const struct {
		const char *q, *want; /* want NULL: not a sequence question */
	} cases[] = {
	    {"Print me the first 5 powers of two, each on a newline.", "1\n2\n4\n8\n16"},
	    {"What are the first forty-two natural numbers?", NULL},
	    {"List the first twelve prime numbers.", "2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37"},
	    {"the FIRST 3 Powers Of 10", "1, 10, 100"},
	    {"Give the first twenty-one triangular numbers, one per line", NULL},
	    {"first 4 cubes", "1, 8, 27, 64"},
	    {"Show the first seven Fibonacci numbers", "0, 1, 1, 2, 3, 5, 8"},
	    {"the first 6 odd numbers", "1, 3, 5, 7, 9, 11"},
	    {"the first 3 even integers", "2, 4, 6"},
	    {"the first 4 multiples of 25, each on its own line", "25\n50\n75\n100"},
	    {"Who are the first two prime suspects?", NULL},
	    {"What were the first 3 errors in the log?", NULL},
	    {"the first 10 powers", NULL},
	    {"the first 0 squares", NULL},
	    {"the first 1000000 primes", NULL}, /* over 100,000 terms */
	    {"first", NULL},
	    {"", NULL},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct buf b = BUF_INIT, prog = BUF_INIT;
		bool ok = sim__compute_code(&b, cases[i].q, strlen(cases[i].q));
		struct proc_out o;
		if (!cases[i].want && i != 1 && i != 4) {
			CHECK_MSG(!ok && b.len == 0, "%s: read as a sequence:\n%s", cases[i].q,
				  b.p ? b.p : "");
			buf_release(&b);
			continue;
		}
		CHECK_MSG(ok, "%s: not read as a sequence", cases[i].q);
		buf_printf(&prog, "answer = {}\n%sprint(answer['content'])\n", b.p);
		CHECK_MSG(py(prog.p, &o) == 0, "%s: %s", cases[i].q, o.err);
		/* the code's own line for the model, then the answer */
		CHECK_MSG(strstr(o.out, " terms, from ") && strchr(o.out, '\n'), "%s: %s",
			  cases[i].q, o.out);
		memmove(o.out, strchr(o.out, '\n') + 1, strlen(strchr(o.out, '\n') + 1) + 1);
		if (i == 1) {
			/* 1..42, comma-separated */
			CHECK_CONTAINS(o.out, "1, 2, 3, ");
			CHECK_CONTAINS(o.out, ", 41, 42\n");
		} else if (i == 4) {
			CHECK_CONTAINS(o.out, "1\n3\n6\n10\n");
			CHECK_CONTAINS(o.out, "\n210\n231\n");
		} else {
			char *want = xasprintf("%s\n", cases[i].want);
			CHECK_STR(o.out, want);
			free(want);
		}
		proc_out_release(&o);
		buf_release(&prog);
		buf_release(&b);
	}
}

/* Drive the loop: reply, run, show the output, until the code sets the
 * answer or the turns run out. Returns the answer (fresh) or NULL; *turns
 * and *errors count turns and turns whose code raised. */
static char *root_solve(const char *spec, struct fake_repl *r, struct convo *c, const char *check,
			int *turns, int *errors)
{
	char *answer = NULL;
	*turns = *errors = 0;
	while (!answer) {
		char *reply = root_reply(spec, c), *code, *out;
		bool raised;
		int step;
		if (*turns == ROOT_TURNS - 1) {
			/* out of turns: FINAL(...) */
			CHECK_MSG(!strncmp(reply, "FINAL(", 6) && reply[strlen(reply) - 1] == ')',
				  "not FINAL: %.200s", reply);
			answer = xstrndup(reply + 6, strlen(reply) - 7);
			free(reply);
			break;
		}
		code = code_of(reply);
		step = step_in(code);
		(*turns)++;
		py_compiles(code);
		out = fake_repl_exec(r, code, step == 2 ? check : NULL, &answer, &raised);
		*errors += raised;
		if (getenv("TEST_VERBOSE"))
			fprintf(stderr, "--- turn %d\n%s--- output\n%s", *turns, reply, out);
		convo_turn(c, reply, out, *turns == ROOT_TURNS - 1);
		free(out);
		free(code);
		free(reply);
	}
	return answer;
}

/* Checks of step 2's chunks, run right after it. */
static const char py_check_chunks[] =
    "assert SEARCHES == ['zebra-7731'], SEARCHES\n"
    "if picked:\n"
    "    # the lines that hold the key, under their document's name\n"
    "    assert not SEARCH_OFF and len(chunks) == 1 and chunks[0].startswith('[doc: ')\n"
    "    assert chunks[0].count(NEEDLE) == NEEDLES and 'market' not in chunks[0]\n"
    "    assert chunk_docs == [sorted(set(h['index'] for h in hits))], chunk_docs\n"
    "elif isinstance(context, str):\n"
    "    assert ''.join(chunks) == context\n"
    "else:\n"
    "    assert len(chunks) < len(context) - 5, len(chunks)\n"
    "assert all(0 < len(c) <= size for c in chunks), [len(c) for c in chunks]\n"
    "if picked:\n"
    "    pass\n"
    "elif isinstance(context, str):\n"
    "    assert ''.join(chunks) == context\n"
    "else:\n"
    "    assert len(chunks) < len(context) - 5, len(chunks)\n"
    "    for d in context:\n"
    "        if len(d) <= size:\n"
    "            assert any(d in c for c in chunks), d[:40]\n"
    "        else:\n"
    "            assert ''.join(c for c in chunks if c in d) == d\n"
    "assert CALLS == [len(chunks)], CALLS\n"
    "print('@@CHUNKS@@', len(chunks))\n";

TEST(root_solves_str_and_list)
{
	static const struct {
		bool list;
		int needles;
		const char *q, *want;
	} cases[] = {
	    {false, 1, "What is the access code of the zebra-7731 vault?",
	     "The access code of the zebra-7731 vault is 55-ALPHA."},
	    {true, 1, "What is the access code of the zebra-7731 vault?",
	     "The access code of the zebra-7731 vault is 55-ALPHA."},
	    {false, 0, "What is the access code of the zebra-7731 vault?", "NONE"},
	    {true, 0, "What is the access code of the zebra-7731 vault?", "NONE"},
	    {false, 5, "How many times is the zebra-7731 vault mentioned?", "5"},
	    {true, 6, "How many times is the zebra-7731 vault mentioned?", "6"},
	    {false, 0, "How many times is the zebra-7731 vault mentioned?", "NONE"},
	};
	/* twice: search() finds nothing (the whole context is read), then
	 * finds what there is (only the lines that hold the key are read,
	 * unless there are none) */
	for (size_t i = 0; i < 2 * ARRAY_SIZE(cases); i++) {
		size_t ci = i % ARRAY_SIZE(cases);
		bool on = i >= ARRAY_SIZE(cases);
		struct fake_repl r;
		struct convo c;
		int turns, errors;
		char *got;
		fake_repl_init(&r, cases[ci].list, cases[ci].needles,
			       on ? "SEARCH_OFF = False\n" : NULL);
		convo_init(&c, cases[ci].q,
			   cases[ci].list ? "a list of 40 documents (str), 20,000 characters in all"
					  : "a str of 19,500 characters",
			   "2,000");
		got = root_solve("", &r, &c, py_check_chunks, &turns, &errors);
		CHECK_MSG(got && !strcmp(got, cases[ci].want), "case %zu: got '%s', want '%s'", i,
			  got ? got : "(none)", cases[ci].want);
		CHECK_INT(turns, 3);
		CHECK_INT(errors, 0);
		/* step 1 named the documents; step 2 searched for the key, and
		 * was asked with the size the prompt stated */
		CHECK_CONTAINS(c.m[3].text, cases[ci].list ? "documents: 40 such as doc-00.txt, "
							     "doc-01.txt, doc-02.txt"
							   : "documents: 1 such as notes.txt");
		CHECK_CONTAINS(c.m[4].text, "terms = [(\"zebra-7731\", \"zebra-7731\", False, False)]\n");
		CHECK_CONTAINS(c.m[5].text,
			       on && cases[ci].needles ? "search 'zebra-7731': " : "search 'zebra-7731': 0 hits");
		CHECK_CONTAINS(c.m[4].text, "size = 2000\n");
		/* the sources: the document that held the needle */
		if (strcmp(cases[ci].want, "NONE") != 0 && !strstr(cases[ci].q, "How many"))
			CHECK_CONTAINS(c.m[7].text, cases[ci].list ? "sources: doc-03.txt\n"
								   : "sources: notes.txt\n");
		free(got);
		convo_release(&c);
		buf_release(&r.hist);
	}
}

/* A stub of rlm_query_batched: each child answers like a root solving its
 * piece (the needle line, its count for "how many", else NONE). */
static const char py_children[] =
    "CHILDREN = []\n"
    "def rlm_query_batched(prompts, model=None, contexts=None):\n"
    "    assert isinstance(prompts, list) and contexts and len(contexts) == len(prompts)\n"
    "    CHILDREN.append(len(prompts))\n"
    "    out = []\n"
    "    for p, c in zip(prompts, contexts):\n"
    "        assert p.endswith('?') and 'Text:' not in p and c, p\n"
    "        assert isinstance(c, str) if isinstance(context, str) else all(\n"
    "            type(d) is str for d in c), c\n"
    "        c = c if isinstance(c, str) else '\\n'.join(c)\n"
    "        n = c.count(KEY)\n"
    "        if not n:\n"
    "            out.append('NONE')\n"
    "        elif 'how many' in p.lower():\n"
    "            out.append(str(n))\n"
    "        else:\n"
    "            out.append([l for l in c.split('\\n') if KEY in l][0])\n"
    "    return out\n";

/* Checks of step 2 when it went to child RLMs. */
static const char py_check_pieces[] =
    "assert CALLS == [] and CHILDREN == [len(pieces)], (CALLS, CHILDREN)\n"
    "assert len(chunks) > 4 and 1 < len(pieces) <= 16, (len(chunks), len(pieces))\n"
    "if isinstance(context, str):\n"
    "    assert ''.join(pieces) == context\n"
    "else:\n"
    "    # runs of the very documents, in order, each about an equal share\n"
    "    docs = [d for p in pieces for d in p]\n"
    "    assert len(docs) == len(context) and all(map(lambda a, b: a is b, docs, context))\n"
    "    for p in pieces:\n"
    "        n = sum(len(d) for d in p)\n"
    "        assert len(p) == 1 or (n <= 2 * share and max(map(len, p)) <= share), (n, share)\n"
    "    assert [context[25]] in pieces and len(context[25]) > share\n";

TEST(root_recurses_past_rlm_chunks)
{
	static const char *const notes[] = {
	    " Recursion is off in this session: here rlm_query and rlm_query_batched are plain "
	    "sub-calls, the same as llm_query and llm_query_batched.",
	    " You are yourself a child RLM at the last level of recursion: here rlm_query and "
	    "rlm_query_batched are plain sub-calls, the same as llm_query and "
	    "llm_query_batched."};
	static const struct {
		bool list;
		int needles;
		const char *q, *want;
	} cases[] = {
	    {false, 1, "What is the access code of the zebra-7731 vault?",
	     "The access code of the zebra-7731 vault is 55-ALPHA."},
	    {true, 1, "What is the access code of the zebra-7731 vault?",
	     "The access code of the zebra-7731 vault is 55-ALPHA."},
	    {false, 0, "What is the access code of the zebra-7731 vault?", "NONE"},
	    {false, 5, "How many times is the zebra-7731 vault mentioned?", "5"},
	    {true, 6, "How many times is the zebra-7731 vault mentioned?", "6"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct fake_repl r;
		struct convo c;
		int turns, errors;
		char *got;
		fake_repl_init(&r, cases[i].list, cases[i].needles, py_children);
		convo_init(&c, cases[i].q,
			   cases[i].list ? "a list of 40 documents (str), 20,000 characters in all"
					 : "a str of 19,500 characters",
			   "2,000");
		got = root_solve("rlm_chunks=4", &r, &c, py_check_pieces, &turns, &errors);
		CHECK_MSG(got && !strcmp(got, cases[i].want), "case %zu: got '%s', want '%s'", i,
			  got ? got : "(none)", cases[i].want);
		CHECK_INT(turns, 3);
		CHECK_INT(errors, 0);
		CHECK_CONTAINS(c.m[4].text, "if not picked and len(chunks) > 4:\n");
		CHECK_CONTAINS(c.m[4].text, "rlm_query_batched([q] * len(pieces), contexts=pieces)");
		free(got);
		convo_release(&c);
		buf_release(&r.hist);
	}
	/* where rlm_query is a plain call, step 2 stays flat */
	for (size_t i = 0; i < ARRAY_SIZE(notes); i++) {
		struct fake_repl r;
		struct convo c;
		int turns, errors;
		char *got;
		fake_repl_init(&r, false, 1, NULL);
		convo_init_note(&c, cases[0].q, "a str of 19,500 characters", "2,000", notes[i]);
		got = root_solve("rlm_chunks=4", &r, &c, py_check_chunks, &turns, &errors);
		CHECK_STR(got, cases[0].want);
		CHECK(!strstr(c.m[4].text, "rlm_query"));
		free(got);
		convo_release(&c);
		buf_release(&r.hist);
	}
}

TEST(root_combines_different_answers)
{
	/* Two different needle lines: step 3 asks llm_query to combine them,
	 * and ignores a chunk whose call failed. */
	static const char extra[] = "context[30] += '\\nFAIL-CHUNK'\n"
				    "context[9] += '\\nThe zebra-7731 vault was sealed in 1999.'\n";
	struct fake_repl r;
	struct convo c;
	int turns, errors;
	char *got;
	fake_repl_init(&r, true, 1, extra);
	convo_init(&c, "What is the access code of the zebra-7731 vault?",
		   "a list of 40 documents (str)", "2,000");
	got = root_solve("", &r, &c,
			 "assert len(found) == 2, found\n"
			 "assert sum(a.startswith('Error:') for a in answers) == 1\n",
			 &turns, &errors);
	CHECK_STR(got, "The access code of the zebra-7731 vault is 55-ALPHA.");
	CHECK_INT(turns, 3);
	CHECK_CONTAINS(c.m[6].text, "llm_query(");
	free(got);
	convo_release(&c);
	buf_release(&r.hist);
}

/* Run a program that prints "@@J@@" and a JSON array last; the array. */
static cJSON *py_json(const char *program)
{
	struct proc_out o;
	cJSON *j;
	const char *at;
	CHECK_MSG(py(program, &o) == 0, "%s", o.err);
	at = strstr(o.out, "@@J@@");
	CHECK_MSG(at, "no JSON printed: %.300s", o.out);
	j = json_parse(at + 5, strlen(at + 5));
	CHECK_MSG(j && cJSON_IsArray(j), "not a JSON array: %.300s", at);
	proc_out_release(&o);
	return j;
}

/* For "all" questions: leaves (and children) that give every line with
 * KEY, two more values of it (one twice), a needle of another key, and a
 * combiner that checks it is given the distinct lines and joins them. */
static const char py_all[] =
    "ALL = ['The access code of the zebra-7731 vault is 55-ALPHA.',\n"
    "       'The access code of the zebra-7731 vault is 77-BRAVO.',\n"
    "       'The access code of the zebra-7731 vault is 99-CHARLIE.']\n"
    "def _every(text):\n"
    "    got = [l for l in text.split('\\n') if KEY in l]\n"
    "    return '\\n'.join(dict.fromkeys(got)) if got else 'NONE'\n"
    "_one_leaf = _leaf\n"
    "def _leaf(p):\n"
    "    a = _one_leaf(p)\n"
    "    return _every(p.split('\\n\\nText:\\n', 1)[1]) if a.startswith('The access') else a\n"
    "def rlm_query_batched(prompts, model=None, contexts=None):\n"
    "    CHILDREN.append(len(prompts))\n"
    "    return [_every(c if isinstance(c, str) else '\\n'.join(c)) for c in contexts]\n"
    "CHILDREN = []\n"
    "def llm_query(prompt, model=None):\n"
    "    assert prompt.startswith('Several readers each answered'), prompt[:80]\n"
    "    COMBINES.append(prompt)\n"
    "    parts = prompt.split('Partial answers:\\n', 1)[1].split('\\n')\n"
    "    assert parts == ['[%d] %s' % (i + 1, v) for i, v in enumerate(ALL)], parts\n"
    "    return ' ; '.join(ALL)\n";

TEST(root_gathers_every_value)
{
	static const char str_extra[] =
	    "_l = context.split('\\n')\n"
	    "_l.insert(120, ALL[1])\n"
	    "_l.insert(123, ALL[2])\n"
	    "_l.insert(200, 'The access code of the yak-1234 vault is 11-DELTA.')\n"
	    "_l.insert(260, ALL[1])\n"
	    "context = '\\n'.join(_l)\n";
	static const char list_extra[] =
	    "context[17] += '\\n' + ALL[1] + '\\n' + ALL[2]\n"
	    "context[22] += '\\nThe access code of the yak-1234 vault is 11-DELTA.'\n"
	    "context[33] += '\\n' + ALL[2]\n";
	static const char *const specs[] = {"", "rlm_chunks=4"};
	static const char q[] = "What are all the access codes of the zebra-7731 vault?";
	for (int list = 0; list < 2; list++) {
		for (size_t k = 0; k < ARRAY_SIZE(specs); k++) {
			struct fake_repl r;
			struct convo c;
			int turns, errors;
			char *got, *extra = xasprintf("%s%s", py_all, list ? list_extra : str_extra);
			fake_repl_init(&r, list, 1, extra);
			convo_init(&c, q,
				   list ? "a list of 40 documents (str), 20,000 characters in all"
					: "a str of 19,500 characters",
				   "2,000");
			got = root_solve(specs[k], &r, &c,
					 k ? "assert CHILDREN and not CALLS, (CHILDREN, CALLS)\n"
					   : "assert CALLS and not CHILDREN, (CHILDREN, CALLS)\n",
					 &turns, &errors);
			CHECK_MSG(got && !strcmp(got, "The access code of the zebra-7731 vault is "
						      "55-ALPHA. ; The access code of the "
						      "zebra-7731 vault is 77-BRAVO. ; The access "
						      "code of the zebra-7731 vault is 99-CHARLIE."),
				  "list %d, %s: got '%s'", list, specs[k], got ? got : "(none)");
			CHECK_INT(turns, 3);
			CHECK_INT(errors, 0);
			CHECK_CONTAINS(c.m[6].text, "# step 3: gather every answer");
			free(got);
			free(extra);
			convo_release(&c);
			buf_release(&r.hist);
		}
	}
}

/* Step 3 for "all", answered by the real combiner: the distinct lines of
 * the answers, those of another key dropped; one distinct line needs no
 * call; a failed call falls back on all the lines. */
TEST(root_all_combine_prompt_suits_the_sub_model)
{
	static const struct {
		const char *found, *want;
		int calls;
	} cases[] = {
	    {"['The access code of the zebra-7731 vault is 55-ALPHA.\\nThe access code of the "
	     "zebra-7731 vault is 77-BRAVO.', 'The access code of the yak-1234 vault is 11-DELTA.', "
	     "' NONE ', 'The access code of the zebra-7731 vault is 99-CHARLIE.\\nThe access code "
	     "of the zebra-7731 vault is 55-ALPHA.']",
	     "The access code of the zebra-7731 vault is 55-ALPHA.\n"
	     "The access code of the zebra-7731 vault is 77-BRAVO.\n"
	     "The access code of the zebra-7731 vault is 99-CHARLIE.",
	     1},
	    {"['The access code of the zebra-7731 vault is 55-ALPHA.', "
	     "'The access code of the zebra-7731 vault is 55-ALPHA.\\n']",
	     "The access code of the zebra-7731 vault is 55-ALPHA.", 0},
	    {"[]", "NONE", 0},
	    {"['FAIL one', 'FAIL two\\none']", "FAIL one\nFAIL two\none", 1},
	};
	struct fake_repl r;
	struct convo c;
	char *reply, *code;
	fake_repl_init(&r, false, 1, NULL);
	convo_init(&c, "What are all the access codes of the zebra-7731 vault?",
		   "a str of 19,500 characters", "2,000");
	reply = root_reply("", &c);
	convo_turn(&c, reply, "type: str length: 19500\n", false);
	free(reply);
	reply = root_reply("", &c);
	convo_turn(&c, reply, "10 chunks, 10 answers, 3 found\n", false);
	free(reply);
	reply = root_reply("", &c);
	code = code_of(reply);
	CHECK_INT(step_in(code), 3);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		/* the sub-model answers the combine prompt; one holding FAIL fails */
		char *prog = xasprintf(
		    "%sfound = %s\n"
		    "found_at, asked, by_doc = list(range(len(found))), [[0]] * len(found), False\n"
		    "texts = context\n"
		    "def llm_query(prompt, model=None):\n"
		    "    COMBINES.append(prompt)\n"
		    "    return 'Error: down' if 'FAIL' in prompt else ''\n"
		    "%simport json\nprint('@@J@@' + json.dumps([answer['content']] + COMBINES))\n",
		    r.hist.p, cases[i].found, code);
		cJSON *arr = py_json(prog);
		const char *final = cJSON_GetArrayItem(arr, 0)->valuestring;
		CHECK_INT(cJSON_GetArraySize(arr), 1 + cases[i].calls);
		if (cases[i].calls && !strstr(cases[i].found, "FAIL")) {
			const char *p = cJSON_GetArrayItem(arr, 1)->valuestring;
			struct llm_msg m = {LLM_USER, p, strlen(p)};
			char *a = sim_reply_text(NULL, &m, 1);
			CHECK_CONTAINS(p, "\n\nPartial answers:\n[1] ");
			CHECK_CONTAINS(p, "list every distinct one");
			CHECK_STR(a, cases[i].want);
			free(a);
		} else {
			CHECK_STR(final, cases[i].want);
		}
		cJSON_Delete(arr);
		free(prog);
	}
	free(code);
	free(reply);
	convo_release(&c);
	buf_release(&r.hist);
}

TEST(root_prompts_suit_the_sub_model)
{
	/* The prompts the root's code builds, answered by the real sub-model
	 * policy: the needle's chunk gives the needle line, the others NONE;
	 * counts add up; the combine prompt picks the right partial. */
	static const char *const qs[] = {"What is the access code of the zebra-7731 vault?",
					 "How many times is the zebra-7731 vault mentioned?"};
	for (int k = 0; k < 2; k++) {
		struct fake_repl r;
		struct convo c;
		char *reply, *code, *prog;
		cJSON *arr, *it;
		long long sum = 0;
		int hits = 0;
		fake_repl_init(&r, k == 0, k ? 3 : 1, NULL);
		convo_init(&c, qs[k], "a list of 40 documents (str)", "2,000");
		reply = root_reply("", &c);
		convo_turn(&c, reply, "type: list length: 40\n", false);
		free(reply);
		reply = root_reply("", &c);
		code = code_of(reply);
		CHECK_INT(step_in(code), 2);
		prog = xasprintf("%s%simport json\nprint('@@J@@' + json.dumps(prompts))\n",
				 r.hist.p, code);
		arr = py_json(prog);
		CHECK(cJSON_GetArraySize(arr) > 5);
		cJSON_ArrayForEach(it, arr)
		{
			struct llm_msg m = {LLM_USER, it->valuestring, strlen(it->valuestring)};
			char *a = sim_reply_text(NULL, &m, 1);
			bool has_key = strstr(it->valuestring, "zebra-7731 vault is") != NULL;
			if (k == 0 && has_key)
				CHECK_STR(a,
					  "The access code of the zebra-7731 vault is 55-ALPHA.");
			else if (k == 0)
				CHECK_STR(a, "NONE");
			hits += has_key;
			sum += atoll(a);
			free(a);
		}
		CHECK_INT(hits, k ? 3 : 1);
		if (k)
			CHECK_INT(sum, 3);
		cJSON_Delete(arr);
		free(prog);
		free(code);
		convo_turn(&c, reply, "12 chunks, 12 answers, 3 found\n", false);
		free(reply);
		if (!k) {
			/* step 3 over three partial answers: the combine prompt */
			reply = root_reply("", &c);
			code = code_of(reply);
			CHECK_INT(step_in(code), 3);
			prog = xasprintf(
			    "%sfound = ['The zebra-7731 vault was sealed in 1999.', NEEDLE, "
			    "'The zebra-7731 vault is in Oslo.']\n"
			    "found_at, asked, by_doc = [0, 1, 2], [[0], [1], [2]], False\n"
			    "texts = context\n%s"
			    "import json\nprint('@@J@@' + json.dumps(COMBINES))\n",
			    r.hist.p, code);
			arr = py_json(prog);
			CHECK_INT(cJSON_GetArraySize(arr), 1);
			{
				const char *p = cJSON_GetArrayItem(arr, 0)->valuestring;
				struct llm_msg m = {LLM_USER, p, strlen(p)};
				char *a = sim_reply_text(NULL, &m, 1);
				CHECK_STR(a,
					  "The access code of the zebra-7731 vault is 55-ALPHA.");
				free(a);
			}
			cJSON_Delete(arr);
			free(prog);
			free(code);
			free(reply);
		}
		convo_release(&c);
		buf_release(&r.hist);
	}
}

/* A question that asks which document, over a list with the needle in
 * context[3] (doc-03.txt): with its key found by search, step 2 reads
 * only the lines that hold it, under their documents' names; when search
 * finds nothing, or the question has no key, every document under its
 * name. The prompts are answered by the real sub-model policy; step 3
 * answers with the id and cites it. */
TEST(root_which_doc_with_the_sub_model)
{
	static const struct {
		const char *q;
		bool search_on, has_key, records;
	} cases[] = {
	    {"Which document gives the access code of the zebra-7731 vault?", true, true, false},
	    {"Which document gives the access code of the zebra-7731 vault?", false, true, false},
	    {"In which of the files is the access code of the zebra vault given?", true, false,
	     false},
	    /* records that are not str (a JSONL without a text field) */
	    {"Which document gives the access code of the zebra-7731 vault?", true, true, true},
	    {"In which of the files is the access code of the zebra vault given?", true, false,
	     true},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct fake_repl r;
		struct convo c;
		char *reply, *code, *out, *prog, *answer = NULL, *json;
		cJSON *arr, *it, *answers = cJSON_CreateArray();
		bool raised;
		int named = 0;
		fake_repl_init(&r, true, 1,
			       cases[i].records ? "SEARCH_OFF = False\n"
						  "context = [{'n': i, 'body': d} for i, d in "
						  "enumerate(context)]\n"
			       : cases[i].search_on ? "SEARCH_OFF = False\n"
						    : NULL);
		convo_init(&c, cases[i].q, "a list of 40 documents (str), 20,000 characters in all",
			   "2,000");
		reply = root_reply("", &c);
		code = code_of(reply);
		out = fake_repl_exec(&r, code, NULL, &answer, &raised);
		CHECK(!raised);
		convo_turn(&c, reply, out, false);
		free(out);
		free(code);
		free(reply);
		/* step 2's prompts, answered by the sub-model */
		reply = root_reply("", &c);
		code = code_of(reply);
		CHECK_INT(step_in(code), 2);
		CHECK(!strstr(code, "search(") == !cases[i].has_key);
		prog = xasprintf("%s"
				 "def llm_query_batched(prompts, model=None):\n"
				 "    global PROMPTS\n"
				 "    # the first batch (all NONE: the lines of the key are\n"
				 "    # followed by the whole context)\n"
				 "    if 'PROMPTS' not in globals():\n"
				 "        PROMPTS = prompts\n"
				 "    return ['NONE'] * len(prompts)\n"
				 "%simport json\nprint('@@J@@' + json.dumps(PROMPTS))\n",
				 r.hist.p, code);
		arr = py_json(prog);
		if (cases[i].search_on && cases[i].has_key)
			CHECK_INT(cJSON_GetArraySize(arr), 1);
		else
			CHECK(cJSON_GetArraySize(arr) > 5);
		cJSON_ArrayForEach(it, arr)
		{
			struct llm_msg m = {LLM_USER, it->valuestring, strlen(it->valuestring)};
			char *a = sim_reply_text(NULL, &m, 1);
			const char *text = strstr(it->valuestring, "\n\nText:\n");
			CHECK(text && !strncmp(text + 8, "[doc: doc-", 10));
			CHECK_CONTAINS(it->valuestring, "Reply with the ID of the document");
			if (strstr(it->valuestring, NEEDLE_TEXT)) {
				CHECK_STR(a, "doc-03.txt");
				named++;
			} else {
				CHECK_STR(a, "NONE");
			}
			json_add_str(answers, NULL, a);
			free(a);
		}
		CHECK_MSG(named == 1, "case %zu: %d prompts name it", i, named);
		json = json_print(answers);
		buf_printf(&r.hist, "ANSWERS = %s\n"
				    "def llm_query_batched(prompts, model=None):\n"
				    "    assert len(prompts) == len(ANSWERS)\n"
				    "    return list(ANSWERS)\n",
			   json);
		out = fake_repl_exec(&r, code, NULL, &answer, &raised);
		CHECK(!raised);
		CHECK_CONTAINS(out, "answer: doc-03.txt\n");
		convo_turn(&c, reply, out, false);
		free(out);
		free(code);
		free(reply);
		/* step 3: the id, and it is the source */
		reply = root_reply("", &c);
		code = code_of(reply);
		CHECK_CONTAINS(code, "# step 3: name the document");
		out = fake_repl_exec(&r, code, "print('@@SRC@@', answer['sources'])\n", &answer,
				     &raised);
		CHECK_STR(answer, "doc-03.txt");
		CHECK_CONTAINS(out, "sources: doc-03.txt\n");
		free(out);
		free(answer);
		free(code);
		free(reply);
		free(json);
		free(prog);
		cJSON_Delete(arr);
		cJSON_Delete(answers);
		convo_release(&c);
		buf_release(&r.hist);
	}
}

/* Many hits (more than the root reads line by line) and none: the whole
 * context is read, and the output says why. */
/* The keys step 2 searches for, from questions of other shapes than the
 * bench generator's: the terms list it writes, or no search at all. */
TEST(root_keys_of_natural_questions)
{
	static const struct {
		const char *q, *terms; /* NULL: no search */
		bool every;
	} cases[] = {
	    {"On what date was Node.js 20.0.0 released?",
	     "terms = [(\"Node.js\", \"Node.js\", False, True),\n"
	     "         (\"20.0.0\", rb\"(?<![\\w.])\" + re.escape(\"20.0.0\".encode()) + "
	     "rb\"(?![\\w]|\\.\\w)\", True, False)]\n",
	     false},
	    {"What is the launch code of the Café Zürich vault?",
	     "terms = [(\"Café\", \"Café\", False, True),\n"
	     "         (\"Zürich\", \"Zürich\", False, True)]\n",
	     false},
	    {"List the quantities of parts QX-28218, QX-36047 and QX-43986.",
	     "terms = [(\"QX-28218\", \"QX-28218\", False, False),\n"
	     "         (\"QX-36047\", \"QX-36047\", False, False),\n"
	     "         (\"QX-43986\", \"QX-43986\", False, False)]\n",
	     true},
	    {"Which record says \"water in the cellar\" about depot 20.0.0?",
	     "terms = [(\"water in the cellar\", \"water in the cellar\", False, True)]\n", false},
	    {"What did the Zoë Ångström note say about SKU_1 and Ærø's ferry?",
	     "terms = [(\"Zoë\", \"Zoë\", False, True),\n"
	     "         (\"Ångström\", \"Ångström\", False, True),\n"
	     "         (\"SKU_1\", \"SKU_1\", False, False),\n"
	     "         (\"Ærø\", \"Ærø\", False, True)]\n",
	     false},
	    {"東京タワーの高さは？",
	     "terms = [(\"東京タワーの高さは\", \"東京タワーの高さは\", False, True)]\n", false},
	    {"How many entries are dated 2023?", NULL, false},
	    /* words of another language are no names, nor a capital at the
	     * start: only Zürich is */
	    {"¿Cuál es el código de lanzamiento de Zürich?",
	     "terms = [(\"Zürich\", \"Zürich\", False, True)]\n", false},
	    /* (a German noun has a capital: searched, read if it is there) */
	    {"Wie heißt die Straße?", "terms = [(\"Straße\", \"Straße\", False, True)]\n", false},
	    {"Кто написал «Войну и мир»?", "terms = [(\"Войну\", \"Войну\", False, True)]\n",
	     false},
	    {"Zürich: what is its launch code?", NULL, false},
	    {"20.0.0: when was it released?",
	     "terms = [(\"20.0.0\", rb\"(?<![\\w.])\" + re.escape(\"20.0.0\".encode()) + "
	     "rb\"(?![\\w]|\\.\\w)\", True, False)]\n",
	     false},
	    {"How many dates are represented exactly 5 times?", NULL, false},
	    {"Who wrote the report about the harbour?", NULL, false},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct convo c;
		char *reply, *code;
		convo_init(&c, cases[i].q, "a str of 60,000 characters", "2,000");
		reply = root_reply("", &c);
		convo_turn(&c, reply, "type: str length: 60000\n", false);
		free(reply);
		reply = root_reply("", &c);
		code = code_of(reply);
		CHECK_INT(step_in(code), 2);
		if (!cases[i].terms) {
			CHECK_MSG(!strstr(code, "search("), "%s: searches\n%s", cases[i].q, code);
		} else {
			CHECK_MSG(strstr(code, cases[i].terms), "%s: want\n%s\nin\n%s", cases[i].q,
				  cases[i].terms, code);
			CHECK(!strstr(code, "# the question lists them") == !cases[i].every);
			/* a listed key is asked about alone */
			CHECK(!strstr(code, "key_qs = [") == !cases[i].every);
			if (cases[i].every)
				CHECK_CONTAINS(
				    code,
				    "key_qs = [\"List the quantities of parts QX-28218.\",\n"
				    "          \"List the quantities of parts QX-36047.\",\n"
				    "          \"List the quantities of parts QX-43986.\"]\n");
			CHECK(!strstr(code, "# narrowed again") ==
			      (cases[i].every || !strstr(cases[i].terms, "),\n")));
		}
		free(code);
		free(reply);
		convo_release(&c);
	}
}

/* Questions of random pieces (quotes straight and curly, dots, digits,
 * capitals, accents, CJK, stray UTF-8 bytes, list words): step 2 is
 * always written, and it is Python that compiles. */
TEST(root_keys_of_random_questions)
{
	cJSON *codes = cJSON_CreateArray(), *bad;
	char *path = xasprintf("%s/codes.json", harness_tmpdir()), *text, *prog;
	FILE *f;
	static const char *const pieces[] = {
	    "\"",
	    "\xe2\x80\x9c",
	    "\xe2\x80\x9d",
	    ".",
	    "-",
	    ":",
	    "/",
	    "_",
	    "'s",
	    " ",
	    ", ",
	    " and ",
	    " or ",
	    "20",
	    "0",
	    "12345",
	    "Node",
	    "js",
	    "Zürich",
	    "é",
	    "東京",
	    "？",
	    "\xc3",
	    "\xe2\x80",
	    "QX-1",
	    "a",
	    "B",
	    "List ",
	    "How many ",
	    "Which file ",
	    "¿",
	    "«",
	    "»",
	    "\xff",
	    "EPOLL",
	};
	uint64_t st = 18;
	for (int i = 0; i < 3000; i++) {
		struct convo c;
		char q[256], *reply, *code;
		size_t n = 0;
		int k = 1 + (int)(rng_splitmix64(&st) % 14);
		while (k--) {
			const char *p = pieces[rng_splitmix64(&st) % ARRAY_SIZE(pieces)];
			size_t pn = strlen(p);
			if (n + pn + 2 > sizeof(q))
				break;
			memcpy(q + n, p, pn);
			n += pn;
		}
		q[n++] = '?';
		q[n] = '\0';
		convo_init(&c, q, "a str of 60,000 characters", "2,000");
		reply = root_reply("", &c);
		convo_turn(&c, reply, "type: str length: 60000\n", false);
		free(reply);
		reply = root_reply("", &c);
		code = code_of(reply);
		CHECK_MSG(step_in(code) == 2, "%s", q);
		if (i % 10 == 0)
			cJSON_AddItemToArray(codes, cJSON_CreateString(code));
		free(code);
		free(reply);
		convo_release(&c);
	}
	text = json_print(codes);
	f = fopen(path, "w");
	CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
	prog = xasprintf("import json\n"
			 "bad = []\n"
			 "for c in json.load(open('%s')):\n"
			 "    try:\n"
			 "        compile(c, '<step 2>', 'exec')\n"
			 "    except SyntaxError as e:\n"
			 "        bad.append(str(e) + ': ' + c[:300])\n"
			 "print('@@J@@' + json.dumps(bad))\n",
			 path);
	bad = py_json(prog);
	CHECK_MSG(cJSON_GetArraySize(bad) == 0, "%s", cJSON_GetArrayItem(bad, 0)->valuestring);
	cJSON_Delete(bad);
	cJSON_Delete(codes);
	free(prog);
	free(text);
	free(path);
}

TEST(root_search_too_many_hits_reads_everything)
{
	struct fake_repl r;
	struct convo c;
	char *reply, *code, *out, *answer = NULL;
	bool raised;
	fake_repl_init(&r, false, 1,
		       "SEARCH_OFF = False\n"
		       "context = context + '\\nmarker_X1 line' * 2500\n");
	convo_init(&c, "What is the access code of the vault next to marker_X1?",
		   "a str of 60,000 characters", "2,000");
	reply = root_reply("", &c);
	convo_turn(&c, reply, "type: str length: 60000\n", false);
	free(reply);
	reply = root_reply("", &c);
	code = code_of(reply);
	CHECK_CONTAINS(code, "terms = [(\"marker_X1\", \"marker_X1\", False, False)]\n");
	out = fake_repl_exec(&r, code,
			     "assert not picked and len(hits) == 2001 and ''.join(chunks) == context\n",
			     &answer, &raised);
	CHECK(!raised);
	CHECK_CONTAINS(out, "search 'marker_X1': 2001 hits in 1 documents\n"
			    "too many hits: reading the whole context\n");
	free(out);
	free(code);
	free(reply);
	convo_release(&c);
	buf_release(&r.hist);
}

TEST(root_step_sequence)
{
	struct convo c;
	char *r1, *r2, *r3, *r, *code;
	convo_init(&c, "What is the code?", "a str of 5,000,000 characters", "200,000");
	r1 = root_reply("", &c);
	code = code_of(r1);
	CHECK_INT(step_in(code), 1);
	CHECK(!strstr(code, "answer["));
	free(code);
	convo_turn(&c, r1, "type: str length: 5000000\nsample: 'abc'\n", false);
	r2 = root_reply("", &c);
	code = code_of(r2);
	CHECK_INT(step_in(code), 2);
	CHECK_CONTAINS(code, "size = 200000\n");
	CHECK_CONTAINS(code, "llm_query_batched(prompts)");
	free(code);
	convo_turn(&c, r2, "3 chunks, 3 answers, 1 found\nanswer: the code is 7\n", false);
	r3 = root_reply("", &c);
	code = code_of(r3);
	CHECK_INT(step_in(code), 3);
	CHECK_CONTAINS(code, "answer[\"ready\"] = True");
	free(code);
	/* the solve did not end: step 3 again */
	convo_turn(&c, r3, "final answer: the code is 7\n", false);
	r = root_reply("", &c);
	code = code_of(r);
	CHECK_INT(step_in(code), 3);
	free(code);
	free(r);
	/* a restart notice: back to step 2 */
	c.n -= 2;
	free(c.owned[c.n]);
	free(c.owned[c.n + 1]);
	convo_turn(&c, r3,
		   "The REPL was restarted (the exec timed out): your variables are gone and "
		   "`context` was reloaded.\n",
		   false);
	r = root_reply("", &c);
	code = code_of(r);
	CHECK_INT(step_in(code), 2);
	free(code);
	free(r);
	/* a traceback in step 3 that says found is gone: step 2 */
	c.n -= 2;
	free(c.owned[c.n]);
	free(c.owned[c.n + 1]);
	convo_turn(&c, r3,
		   "Traceback (most recent call last):\n  File \"<repl>\", line 2, in "
		   "<module>\nNameError: name 'found' is not defined\n",
		   false);
	r = root_reply("", &c);
	code = code_of(r);
	CHECK_INT(step_in(code), 2);
	free(code);
	free(r);
	/* an ordinary traceback in step 3: step 3 again */
	c.n -= 2;
	free(c.owned[c.n]);
	free(c.owned[c.n + 1]);
	convo_turn(&c, r3,
		   "Traceback (most recent call last):\n  File \"<repl>\", line 2, in "
		   "<module>\nTypeError: can only concatenate str (not \"int\") to str\n",
		   false);
	r = root_reply("", &c);
	code = code_of(r);
	CHECK_INT(step_in(code), 3);
	free(code);
	free(r);
	/* code that did not compile: no traceback header, the same step */
	c.n -= 2;
	free(c.owned[c.n]);
	free(c.owned[c.n + 1]);
	convo_turn(&c, r3,
		   "  File \"<repl>\", line 3\n    print(\n         ^\nSyntaxError: '(' was never "
		   "closed\n",
		   false);
	r = root_reply("", &c);
	code = code_of(r);
	CHECK_INT(step_in(code), 3);
	free(code);
	free(r);
	/* what the context said is not a notice: a traceback or a restart
	 * printed inside an answer line or a sample leaves step 2 -> 3 */
	c.n -= 4;
	for (size_t i = c.n; i < c.n + 4; i++)
		free(c.owned[i]);
	convo_turn(&c, r2,
		   "3 chunks, 3 answers, 2 found\n"
		   "answer: Traceback (most recent call last): File x.py\n"
		   "answer: the REPL was restarted and variables are gone\n"
		   "sample: 'ValueError: x'\nanswer: NameError: y\n",
		   false);
	r = root_reply("", &c);
	code = code_of(r);
	CHECK_INT(step_in(code), 3);
	free(code);
	free(r);
	free(r1);
	free(r2);
	free(r3);
	convo_release(&c);
}

TEST(root_traceback_repeats_step_fixed)
{
	/* code_errors=1: every step is written with a bug that really raises;
	 * after its traceback the same step comes back, correct (code_errors=0
	 * for the retry), and runs. */
	static const char *const specs[] = {"code_errors=1,seed=1", "code_errors=1,seed=2",
					    "code_errors=1,seed=3", "code_errors=1,seed=4",
					    "code_errors=1,seed=5", "code_errors=1,seed=6"};
	bool seen_name = false, seen_type = false, seen_index = false;
	for (size_t s = 0; s < ARRAY_SIZE(specs); s++) {
		for (int list = 0; list < 2; list++) {
			struct fake_repl r;
			struct convo c;
			char *answer = NULL;
			fake_repl_init(&r, list, 1, NULL);
			convo_init(&c, "What is the access code of the zebra-7731 vault?",
				   "a str of 19,500 characters", "3k");
			for (int step = 1; step <= 3; step++) {
				char *bad = root_reply(specs[s], &c), *code = code_of(bad);
				char *out, *good, *gcode;
				bool raised;
				CHECK_INT(step_in(code), step);
				py_compiles(code);
				out = fake_repl_exec(&r, code, NULL, &answer, &raised);
				CHECK_MSG(raised, "%s step %d did not raise:\n%s", specs[s], step,
					  code);
				CHECK(!answer);
				seen_name |= strstr(out, "NameError:") != NULL;
				seen_type |= strstr(out, "TypeError:") != NULL;
				seen_index |= strstr(out, "IndexError:") != NULL;
				convo_turn(&c, bad, out, false);
				free(out);
				good = root_reply("seed=1", &c);
				gcode = code_of(good);
				CHECK_INT(step_in(gcode), step);
				CHECK_CONTAINS(good, "fixed");
				out = fake_repl_exec(&r, gcode, NULL, &answer, &raised);
				CHECK_MSG(!raised, "the retry raised: %s", out);
				convo_turn(&c, good, out, false);
				free(out);
				free(gcode);
				free(good);
				free(code);
				free(bad);
				CHECK(step == 3 ? answer != NULL : answer == NULL);
			}
			CHECK_STR(answer, "The access code of the zebra-7731 vault is 55-ALPHA.");
			free(answer);
			convo_release(&c);
			buf_release(&r.hist);
		}
	}
	CHECK(seen_name && seen_type && seen_index);
}

TEST(root_code_errors_still_solve)
{
	/* At a rate of 0.4 the loop stumbles but gets there, and the same seed
	 * makes the same run. */
	int bumpy = 0;
	for (int seed = 1; seed <= 6; seed++) {
		char spec[64];
		int turns[2], errors[2];
		char *got[2];
		snprintf(spec, sizeof(spec), "code_errors=0.4,seed=%d", seed);
		for (int k = 0; k < 2; k++) {
			struct fake_repl r;
			struct convo c;
			fake_repl_init(&r, seed % 2, 4, NULL);
			convo_init(&c, "How many times is the zebra-7731 vault mentioned?",
				   "a str of 19,500 characters", "2,500");
			got[k] = root_solve(spec, &r, &c, py_check_chunks, &turns[k], &errors[k]);
			CHECK_MSG(got[k] && !strcmp(got[k], "4"), "%s: got %s after %d turns", spec,
				  got[k] ? got[k] : "(none)", turns[k]);
			CHECK_INT(turns[k], 3 + errors[k]);
			convo_release(&c);
			buf_release(&r.hist);
		}
		CHECK_INT(turns[0], turns[1]);
		bumpy += errors[0] > 0;
		free(got[0]);
		free(got[1]);
	}
	CHECK(bumpy > 0);
}

TEST(root_question_escaping)
{
	/* Quotes, backslashes (one at the end), newlines, tabs, control
	 * characters, non-ASCII: the code compiles and q is the question. */
	static const char *const qs[] = {
	    "What did \"Bob\" say about 'the zebra-7731 vault'?",
	    "Is C:\\temp\\new the path of the zebra-7731 vault\\",
	    "First line of the question\nsecond line\twith a tab\r\nand \"\"\" triple quotes?",
	    "Quel est le code de la clé «zebra-7731» — 日本語 ✓ 🙂 \xe2\x80\xa8 sep?",
	    "control \x01\x02\x1b[0m and del \x7f and nul-free end '''",
	    "{{braces}} %s %d \\n \\x41 \\u0041 f\"{x}\" ?",
	};
	for (size_t i = 0; i < ARRAY_SIZE(qs); i++) {
		struct fake_repl r;
		struct convo c;
		struct buf hex;
		char *reply, *code, *out, *answer, *check;
		bool raised;
		buf_init(&hex, 0);
		buf_puts(&hex, "");
		for (const unsigned char *p = (const unsigned char *)qs[i]; *p; p++)
			buf_printf(&hex, "%02x", *p);
		fake_repl_init(&r, false, 1, NULL);
		convo_init(&c, qs[i], "a str of 19,500 characters", "5,000");
		reply = root_reply("", &c);
		convo_turn(&c, reply, "type: str length: 19500\n", false);
		free(reply);
		reply = root_reply("", &c);
		code = code_of(reply);
		CHECK_INT(step_in(code), 2);
		py_compiles(code);
		check = xasprintf("assert q.encode('utf-8').hex() == '%s', repr(q)\n"
				  "assert all(p.count('\\nQuestion: ') == 1 for p in prompts)\n",
				  hex.p);
		out = fake_repl_exec(&r, code, check, &answer, &raised);
		CHECK_MSG(!raised, "question %zu: %s\n%s", i, out, code);
		convo_turn(&c, reply, out, false);
		free(out);
		free(code);
		free(reply);
		reply = root_reply("", &c);
		code = code_of(reply);
		CHECK_INT(step_in(code), 3);
		py_compiles(code);
		free(code);
		free(reply);
		free(check);
		buf_release(&hex);
		convo_release(&c);
		buf_release(&r.hist);
	}
}

TEST(root_out_of_turns_final)
{
	struct convo c;
	char *r, *step2 = NULL, *step3;
	convo_init(&c, "What is the code?", "a str of 100 characters", "200,000");
	/* nothing found yet: FINAL(NONE) */
	r = root_reply("", &c);
	convo_turn(&c, r, "type: str length: 100\n", true);
	free(r);
	r = root_reply("", &c);
	CHECK_STR(r, "FINAL(NONE)");
	free(r);
	/* after step 2: the first answer it printed */
	c.n -= 1;
	free(c.owned[c.n]);
	convo_add(&c, LLM_USER, xstrdup("REPL output:\ntype: str\n\nTurn 2/12: go on."));
	step2 = root_reply("", &c);
	convo_turn(&c, step2,
		   "2 chunks, 2 answers, 2 found\nanswer: the code is 7\nanswer: the code is 9\n",
		   true);
	r = root_reply("", &c);
	CHECK_STR(r, "FINAL(the code is 7)");
	free(r);
	/* after step 3 printed its answer: that one */
	c.n -= 1;
	free(c.owned[c.n]);
	convo_add(&c, LLM_USER, xstrdup("REPL output:\n2 found\nanswer: the code is 7\n\ngo on"));
	step3 = root_reply("", &c);
	convo_turn(&c, step3, "final answer: the code is 9\n", true);
	r = root_reply("", &c);
	CHECK_STR(r, "FINAL(the code is 9)");
	free(r);
	free(step2);
	free(step3);
	convo_release(&c);

	/* "how many": the sum of the counts printed */
	convo_init(&c, "How many cats are there?", "a str of 100 characters", "200,000");
	r = root_reply("", &c);
	convo_turn(&c, r, "type: str\n", false);
	free(r);
	r = root_reply("", &c);
	convo_turn(&c, r, "3 chunks, 3 answers, 3 found\nanswer: 2\nanswer: 5 cats\nanswer: 0\n",
		   true);
	free(r);
	r = root_reply("", &c);
	CHECK_STR(r, "FINAL(7)");
	free(r);
	convo_release(&c);

	/* "all": every distinct answer printed */
	convo_init(&c, "What are all the codes?", "a str of 100 characters", "200,000");
	r = root_reply("", &c);
	convo_turn(&c, r, "type: str\n", false);
	free(r);
	r = root_reply("", &c);
	convo_turn(&c, r,
		   "4 chunks, 4 answers, 4 found\nanswer: code 7 code 8\nanswer: code 9\n"
		   "answer: code 7 code 8\nanswer: code 7\n",
		   true);
	free(r);
	r = root_reply("", &c);
	CHECK_STR(r, "FINAL(code 7 code 8 code 9 code 7)");
	free(r);
	convo_release(&c);
}

TEST(root_deterministic)
{
	/* The same seed gives the same replies; seeds differ in where the bugs
	 * fall. */
	static const char *const outs[] = {"type: str\n", "1 chunks, 1 answers, 1 found\n",
					   "final answer: x\n", "final answer: x\n"};
	char *first[ARRAY_SIZE(outs)] = {NULL};
	bool differs = false;
	for (int seed = 1; seed <= 8; seed++) {
		char spec[64];
		struct convo c[2];
		snprintf(spec, sizeof(spec), "code_errors=0.5,seed=%d", seed);
		for (int k = 0; k < 2; k++)
			convo_init(&c[k], "What is the zebra?", "a str of 100 characters", "1k");
		for (size_t t = 0; t < ARRAY_SIZE(outs); t++) {
			char *a = root_reply(spec, &c[0]), *b = root_reply(spec, &c[1]);
			CHECK_STR(a, b);
			if (seed == 1)
				first[t] = xstrdup(a);
			else if (strcmp(first[t], a) != 0)
				differs = true;
			convo_turn(&c[0], a, outs[t], false);
			convo_turn(&c[1], b, outs[t], false);
			free(a);
			free(b);
		}
		convo_release(&c[0]);
		convo_release(&c[1]);
	}
	CHECK(differs);
	for (size_t t = 0; t < ARRAY_SIZE(outs); t++)
		free(first[t]);
}

/* ---- the root policy in a session (sim/sim_session.c) ---- */

/* The paragraph the loop appends to a session's first user message. */
#define SESSION_FIRST                                                                      \
	"\n\nThis is the first question of a session: the REPL and its variables stay for "      \
	"the questions that follow, so what you build now (an index, parsed records) can be "    \
	"reused."

static void convo_session_first(struct convo *c)
{
	char *t = xasprintf("%s%s", c->owned[1], SESSION_FIRST);
	free(c->owned[1]);
	c->owned[1] = t;
	c->m[1] = (struct llm_msg){LLM_USER, t, strlen(t)};
}

/* The message of the session's question k, as the session writes it; vars
 * the REPL's variables ("name: type, ..." or "none yet"), more "" or the
 * sentence about more contexts. */
static void convo_next_question(struct convo *c, int k, const char *q, const char *vars,
				const char *more)
{
	convo_add(c, LLM_USER,
		  xasprintf("New question (question %d of this session): %s\n\nThis is the same "
			    "REPL as before: its variables are still there (%s), and `history` "
			    "lists this session's earlier questions and answers (each a dict "
			    "with \"question\", \"answer\" and \"stop\").%s Reuse what you built "
			    "for the earlier questions rather than building it again.\n\nTurn "
			    "1/30: write your code in ```repl blocks. When you are sure of the "
			    "answer, set answer[\"content\"] and answer[\"ready\"] = True.",
			    k, q, vars, more));
}

/* Real headers as a list of documents, one holding a note in another
 * phrasing than the generator's, under a str KEY the stub's sub-model
 * reads for. */
#define SESSION_NOTE                                                                       \
	"/* Ops note (2019): the vault labelled zebra-7731 now opens with 55-ALPHA; older "       \
	"runbooks are stale. */"
static const char py_ctx_headers[] =
    "_files = ['/usr/include/stdio.h', '/usr/include/string.h', '/usr/include/unistd.h',\n"
    "          '/usr/include/x86_64-linux-gnu/sys/epoll.h', '/usr/include/stdlib.h']\n"
    "context = [open(f, encoding='utf-8', errors='replace').read() for f in _files]\n"
    "_l = context[1].split('\\n')\n"
    "_l.insert(len(_l) // 2, '" SESSION_NOTE "')\n"
    "context[1] = '\\n'.join(_l)\n";

/* The code of the assistant messages c->m[from..], joined. */
static char *codes_from(const struct convo *c, size_t from)
{
	struct buf b;
	buf_init(&b, 0);
	for (size_t i = from; i < c->n; i++)
		if (c->m[i].role == LLM_ASSISTANT)
			buf_puts(&b, c->m[i].text);
	return buf_detach(&b, NULL);
}

/* Checks of a session's step 2: the index, never search(), and the lines
 * of the key. */
static const char py_check_index[] =
    "assert SEARCHES == [], SEARCHES\n"
    "assert isinstance(index, dict) and len(index) > 1000, len(index)\n"
    "assert picked and all(KEY in h['text'] for h in picked), picked[:3]\n"
    "assert all(h['text'] in context[h['index']].split('\\n')[h['line'] - 1] for h in picked)\n"
    "assert len(chunks) == 1 and chunks[0].startswith('[doc: ')\n"
    "assert 'INDEX_ID' not in globals() or INDEX_ID == id(index), 'rebuilt'\n";

TEST(session_index_built_then_reused)
{
	static const char q1[] = "What is the access code of the zebra-7731 vault?",
			  q2[] = "What is the value of EPOLLEXCLUSIVE?";
	struct fake_repl r;
	struct convo c;
	int turns, errors;
	size_t q2_at;
	char *got, *code, *check;
	fake_repl_init(&r, true, 0, py_ctx_headers);
	convo_init(&c, q1, "a list of 5 documents (str), 150,000 characters in all", "2,000");
	convo_session_first(&c);
	got = root_solve("", &r, &c, py_check_index, &turns, &errors);
	CHECK_STR(got, SESSION_NOTE);
	CHECK_INT(turns, 3);
	CHECK_INT(errors, 0);
	free(got);
	/* the first question built the index, guarded, and said how big */
	CHECK_CONTAINS(c.m[4].text, "index = {}\n");
	CHECK_CONTAINS(c.m[4].text, "if not isinstance(globals().get(\"index\"), dict):\n");
	CHECK_CONTAINS(c.m[4].text, "lookup(term, rx, ic, ");
	CHECK(!strstr(c.m[4].text, "search("));
	CHECK_CONTAINS(c.m[5].text, "index: ");
	CHECK_CONTAINS(c.m[5].text, " entries\n");
	CHECK_CONTAINS(c.m[5].text, "index 'zebra-7731': 1 hits in 1 documents\n");
	CHECK_CONTAINS(c.m[7].text, "sources: doc-01.txt\n");

	/* the second: the question taken is its own, step 1 is skipped, the
	 * index looked up as it is (the same dict: INDEX_ID) */
	buf_puts(&r.hist, "INDEX_ID = id(index)\nKEY = 'EPOLLEXCLUSIVE'\n"
			  "answer = {'content': None, 'ready': False}\n"); /* as the session resets it */
	q2_at = c.n;
	convo_next_question(&c, 2, q2, "index: dict, texts: list, found: list, answers: list", "");
	check = xasprintf("%sassert q == '%s', q\n", py_check_index, q2);
	got = root_solve("", &r, &c, check, &turns, &errors);
	CHECK_MSG(got && strstr(got, "EPOLLEXCLUSIVE = 1u << 28"), "got %s", got ? got : "(none)");
	CHECK_INT(turns, 2);
	CHECK_INT(errors, 0);
	free(got);
	code = codes_from(&c, q2_at);
	CHECK_CONTAINS(code, "# step 2: ");
	CHECK(!strstr(code, "# step 1: "));
	CHECK(!strstr(code, "index = "));
	CHECK(!strstr(code, "index.setdefault"));
	CHECK(!strstr(code, "globals()"));
	CHECK(!strstr(code, "zebra-7731")); /* nothing of the first question */
	CHECK_CONTAINS(code, "lookup(term, rx, ic, ");
	CHECK_CONTAINS(c.m[q2_at + 2].text, "index 'EPOLLEXCLUSIVE': ");
	CHECK(!strstr(c.m[q2_at + 2].text, "entries"));
	free(code);
	free(check);
	convo_release(&c);
	buf_release(&r.hist);
}

TEST(session_restarted_worker_builds_again)
{
	/* The worker of the session was restarted: its variables are "none
	 * yet", so the next question looks at the context and builds the
	 * index again (unguarded: it is known to be gone). The first question
	 * ended on its turn limit: "(no reply: ...)" comes before the next. */
	struct fake_repl r;
	struct convo c;
	int turns, errors;
	size_t q2_at;
	char *got, *code;
	fake_repl_init(&r, true, 0, py_ctx_headers);
	convo_init(&c, "What does the header say about getline?",
		   "a list of 5 documents (str), 150,000 characters in all", "2,000");
	convo_session_first(&c);
	got = root_reply("", &c);
	convo_turn(&c, got, "type: list length: 5\n", true);
	free(got);
	got = root_reply("", &c);
	CHECK(!strncmp(got, "FINAL(", 6));
	free(got);
	convo_add(&c, LLM_ASSISTANT, xstrdup("(no reply: the question ended on its turn limit)"));
	q2_at = c.n;
	convo_next_question(&c, 2, "What is the access code of the zebra-7731 vault?", "none yet",
			    " More contexts: `context_1` is a str of 10 characters.");
	got = root_solve("", &r, &c, py_check_index, &turns, &errors);
	CHECK_STR(got, SESSION_NOTE);
	CHECK_INT(turns, 3);
	CHECK_INT(errors, 0);
	free(got);
	code = codes_from(&c, q2_at);
	CHECK_CONTAINS(code, "# step 1: ");
	CHECK_CONTAINS(code, "index = {}\n");
	CHECK(!strstr(code, "globals()"));
	CHECK(!strstr(code, "getline"));
	free(code);
	convo_release(&c);
	buf_release(&r.hist);
}

/* Replace the last message (a user message) of c with text. */
static void convo_set_last(struct convo *c, const char *text)
{
	free(c->owned[c->n - 1]);
	c->owned[c->n - 1] = xstrdup(text);
	c->m[c->n - 1].text = c->owned[c->n - 1];
	c->m[c->n - 1].len = strlen(text);
}

TEST(session_turns_restart_with_each_question)
{
	/* Only the turns of the current question count: the step after the
	 * new question's message is its own first, a notice is read in its
	 * turns, and out of turns its answer is the best its outputs show. */
	static const char vars[] = "index: dict, found: list, answers: list";
	struct convo c;
	char *r, *r2, *code;
	convo_init(&c, "What is the code of the zebra-7731 vault?", "a str of 5,000,000 characters",
		   "200,000");
	convo_session_first(&c);
	r = root_reply("", &c);
	CHECK_INT(step_in(code = code_of(r)), 1);
	free(code);
	convo_turn(&c, r, "type: str length: 5000000\n", false);
	free(r);
	r = root_reply("", &c);
	convo_turn(&c, r, "index: 80000 entries\nindex 'zebra-7731': 1 hits in 1 documents\n"
			  "answer: the code is 7\n", false);
	free(r);
	r = root_reply("", &c);
	CHECK_INT(step_in(code = code_of(r)), 3);
	free(code);
	convo_turn(&c, r, "final answer: the code is 7\n", false);
	free(r);
	/* the next question: step 2 at once, on its question */
	convo_next_question(&c, 2, "Which release added the --frobnicate flag, v2.4 or v2.5?", vars,
			    "");
	r2 = root_reply("", &c);
	code = code_of(r2);
	CHECK_INT(step_in(code), 2);
	CHECK_CONTAINS(code, "q = \"Which release added the --frobnicate flag, v2.4 or v2.5?\"\n");
	CHECK_CONTAINS(code, "size = 200000\n"); /* the size the first message stated */
	CHECK(!strstr(code, "index = "));
	CHECK_CONTAINS(r2, "still has the index");
	free(code);
	/* a restart in its turns: step 2 again, building the index */
	convo_turn(&c, r2, "x\n", false);
	convo_set_last(&c, "The REPL was restarted (the exec timed out): your variables are gone "
			   "and `context` was reloaded.\n");
	r = root_reply("", &c);
	CHECK_INT(step_in(code = code_of(r)), 2);
	CHECK_CONTAINS(code, "index = {}\n");
	CHECK(!strstr(code, "globals()"));
	free(code);
	free(r);
	/* the index was not there after all: built */
	convo_set_last(&c, "Traceback (most recent call last):\n  File \"<repl>\", line 30, in "
			   "<module>\nNameError: name 'index' is not defined\n");
	r = root_reply("", &c);
	CHECK_INT(step_in(code = code_of(r)), 2);
	CHECK_CONTAINS(code, "index = {}\n");
	free(code);
	free(r);
	/* its output: step 3 of the second question */
	convo_set_last(&c, "index 'frobnicate': 2 hits in 1 documents\n"
			   "answer: v2.5 added --frobnicate\n");
	r = root_reply("", &c);
	CHECK_INT(step_in(code = code_of(r)), 3);
	CHECK_CONTAINS(code, "frobnicate");
	free(code);
	/* out of turns: the answer its own outputs show, not the first's */
	convo_turn(&c, r, "x\n", true);
	free(r);
	r = root_reply("", &c);
	CHECK_STR(r, "FINAL(v2.5 added --frobnicate)");
	free(r);
	free(r2);
	convo_release(&c);
}

TEST(session_questions_without_keys_and_without_session)
{
	struct convo c;
	char *r, *code;
	/* a session's first question with no key: the index is built for the
	 * questions to come, and the whole context read */
	convo_init(&c, "What is the overall tone of these notes?", "a str of 50 characters", "1k");
	convo_session_first(&c);
	r = root_reply("", &c);
	convo_turn(&c, r, "type: str\n", false);
	free(r);
	r = root_reply("", &c);
	code = code_of(r);
	CHECK_CONTAINS(code, "index = {}\n");
	CHECK(!strstr(code, "lookup("));
	CHECK(!strstr(code, "search("));
	CHECK_CONTAINS(code, "chunks = [label(0) + texts[i:i + size]");
	py_compiles(code);
	free(code);
	free(r);
	convo_release(&c);
	/* no session: search(), no index */
	convo_init(&c, "What is the code of the zebra-7731 vault?", "a str of 50 characters", "1k");
	r = root_reply("", &c);
	convo_turn(&c, r, "type: str\n", false);
	free(r);
	r = root_reply("", &c);
	code = code_of(r);
	CHECK_CONTAINS(code, "search(pattern, ");
	CHECK(!strstr(code, "index = "));
	CHECK(!strstr(code, "lookup("));
	free(code);
	free(r);
	convo_release(&c);
}

TEST(session_history_answers_earlier_questions)
{
	static const struct {
		const char *q, *want;
	} cases[] = {
	    {"What was the previous answer?", "the code is 7"},
	    {"What did I ask before?", "What is the code of the zebra vault?"},
	    {"Remind me of your answer to my first question.", "Paris"},
	    {"what was the last question i asked", "What is the code of the zebra vault?"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct fake_repl r;
		struct convo c;
		char *reply, *code, *out, *answer;
		bool raised;
		fake_repl_init(&r, false, 0,
			       "history = [{'question': 'Where is the capital?', 'answer': 'Paris', "
			       "'stop': 'answer'},\n"
			       "           {'question': 'What is the code of the zebra vault?', "
			       "'answer': 'the code is 7', 'stop': 'answer'}]\n");
		convo_init(&c, "Where is the capital?", "a str of 50 characters", "1k");
		convo_session_first(&c);
		convo_turn(&c, "x\n\n```repl\n# step 3: finish\n```\n", "final answer: Paris\n",
			   false);
		convo_next_question(&c, 2, "What is the code of the zebra vault?", "none yet", "");
		convo_turn(&c, "x\n\n```repl\n# step 3: finish\n```\n", "final answer: the code is 7\n",
			   false);
		convo_next_question(&c, 3, cases[i].q, "found: list", "");
		reply = root_reply("", &c);
		code = code_of(reply);
		CHECK_INT(step_in(code), 3);
		CHECK_CONTAINS(code, "history[");
		out = fake_repl_exec(&r, code, NULL, &answer, &raised);
		CHECK_MSG(!raised && answer && !strcmp(answer, cases[i].want), "case %zu: %s -> %s",
			  i, out, answer ? answer : "(none)");
		free(answer);
		free(out);
		free(code);
		free(reply);
		convo_release(&c);
		buf_release(&r.hist);
	}
	/* about a document's questions and answers, not the session's */
	for (size_t i = 0; i < 3; i++) {
		static const char *const qs[] = {"What is the first question of the survey?",
						 "What was the answer of the previous witness?",
						 "What happens if I asked for a refund late?"};
		struct convo c;
		char *reply;
		convo_init(&c, "Where is the capital?", "a str of 50 characters", "1k");
		convo_session_first(&c);
		convo_turn(&c, "x\n\n```repl\n# step 3: finish\n```\n", "final answer: Paris\n",
			   false);
		convo_next_question(&c, 2, qs[i], "none yet", "");
		reply = root_reply("", &c);
		CHECK_MSG(!strstr(reply, "history["), "%s: %s", qs[i], reply);
		CHECK_CONTAINS(reply, "# step 1: ");
		free(reply);
		convo_release(&c);
	}
}

TEST(session_odd_messages)
{
	/* Cut or odd new question messages: a well-formed reply, on the
	 * question they hold (or the first's when they hold none). */
	static const char *const msgs[] = {
	    "New question (question ",
	    "New question (question 2 of this session): ",
	    "New question (question 2 of this session): What is the code of zebra-7731?",
	    "New question (question 2 of this session): What is the code of zebra-7731?\n\n"
	    "This is the same REPL as before: its variables are still there (index: dict",
	    "New question (question 2 of this session): What is the code of zebra-7731?\n\n"
	    "This is the same REPL as before: its variables are still there (found: list, "
	    "index: dic, xindex: dict), and `history` lists",
	    "New question (question 2 of this session): What is the code of zebra-7731?\n\n"
	    "This is the same REPL as before: its variables are still there (none: the REPL "
	    "worker had stopped and was started again, so the variables of earlier questions "
	    "are gone), and `history` lists",
	};
	for (size_t i = 0; i < ARRAY_SIZE(msgs); i++) {
		struct convo c;
		char *reply, *code;
		convo_init(&c, "Where is the capital?", "a str of 50 characters", "1k");
		convo_session_first(&c);
		convo_turn(&c, "x\n\n```repl\n# step 3: finish\n```\n", "final answer: Paris\n",
			   false);
		convo_add(&c, LLM_USER, xstrdup(msgs[i]));
		reply = root_reply("code_errors=0", &c);
		code = code_of(reply);
		py_compiles(code);
		/* the first is no new question: the first question goes on;
		 * none lists `index: dict` whole: step 1 */
		CHECK_MSG(step_in(code) == (i ? 1 : 3), "%zu: %s", i, reply);
		if (i >= 2) {
			convo_turn(&c, reply, "type: str\n", false);
			free(reply);
			free(code);
			reply = root_reply("code_errors=0", &c);
			code = code_of(reply);
			CHECK_CONTAINS(code, "q = \"What is the code of zebra-7731?\"\n");
			CHECK_CONTAINS(code, "index = {}\n");
		}
		free(code);
		free(reply);
		convo_release(&c);
	}
}

TEST(session_question_named_by_a_compaction_summary)
{
	/* A compaction replaced the turns that held the new question's
	 * message with a summary (rlm/compact.c's pair: the summary, then a
	 * note): the summary's last question is the current one, its turns
	 * are those after it, and step 2 builds the index only if the REPL
	 * has none. Outside a session a summary changes nothing. */
	static const char summary[] =
	    "[Summary of turns 1 to 5, compacted to fit the context window]\n"
	    "Questions: Where is the capital?; What is the value of EPOLLEXCLUSIVE?\n"
	    "Variables: index: dict; found: list\n"
	    "Findings: final answer: Paris\n"
	    "Next: go on from the latest turns";
	for (int session = 1; session >= 0; session--) {
		struct convo c;
		char *r, *code;
		convo_init(&c, "Where is the capital?", "a str of 50 characters", "1k");
		if (session)
			convo_session_first(&c);
		convo_add(&c, LLM_ASSISTANT, xstrdup(summary));
		convo_add(&c, LLM_USER, xstrdup("(Turns 1 to 5 were summarised to keep the "
						"conversation within the context window. The REPL's "
						"variables still hold everything.)"));
		convo_turn(&c, "I will look.\n\n```repl\n# step 1: look at the context\n```\n",
			   "type: str\n", false);
		r = root_reply("", &c);
		code = code_of(r);
		CHECK_INT(step_in(code), 2);
		if (session) {
			CHECK_CONTAINS(code, "q = \"What is the value of EPOLLEXCLUSIVE?\"\n");
			CHECK_CONTAINS(code, "if not isinstance(globals().get(\"index\"), dict):\n");
			CHECK_CONTAINS(code, "lookup(term, rx, ic, ");
		} else {
			CHECK_CONTAINS(code, "q = \"Where is the capital?\"\n");
			CHECK(!strstr(code, "index"));
		}
		py_compiles(code);
		free(code);
		convo_turn(&c, r, "answer: EPOLLEXCLUSIVE = 1u << 28,\n", true);
		free(r);
		/* out of turns: the answer of the turns after the summary */
		r = root_reply("", &c);
		CHECK_STR(r, "FINAL(EPOLLEXCLUSIVE = 1u << 28,)");
		free(r);
		convo_release(&c);
	}
}

TEST(session_index_of_a_large_context)
{
	/* About 4 MB of real headers (a 1M-token context) as one str, a note
	 * in the middle: the index is built in well under 3 s of the worker's
	 * time, and the note is found through it. */
	struct fake_repl r;
	struct convo c;
	int turns, errors;
	char *got;
	fake_repl_init(&r, false, 0,
		       "import glob as _glob, time as _time\n"
		       "_parts, _n = [], 0\n"
		       "for _f in sorted(_glob.glob('/usr/include/**/*.h', recursive=True)):\n"
		       "    if _n > 4000000:\n"
		       "        break\n"
		       "    with open(_f, encoding='utf-8', errors='replace') as _h:\n"
		       "        _parts.append(_h.read())\n"
		       "    _n += len(_parts[-1])\n"
		       "_parts.insert(len(_parts) // 2, '" SESSION_NOTE "')\n"
		       "context = '\\n'.join(_parts)\n"
		       "_T0 = _time.process_time()\n");
	convo_init(&c, "What is the access code of the zebra-7731 vault?",
		   "a str of 4,000,000 characters", "64,000");
	convo_session_first(&c);
	got = root_solve("", &r, &c,
			 "assert len(context) > 4000000\n"
			 "_took = _time.process_time() - _T0\n"
			 "import sys\n"
			 "print('index of %d chars built and searched in %.2f s' % (len(context), _took),"
			 " file=sys.stderr)\n"
			 "assert _took < 3, _took\n"
			 "assert SEARCHES == [] and len(index) > 10000 and len(picked) == 1\n",
			 &turns, &errors);
	CHECK_STR(got, SESSION_NOTE);
	CHECK_INT(turns, 3);
	free(got);
	convo_release(&c);
	buf_release(&r.hist);
}

TEST(root_only_for_root_conversations)
{
	/* No system message about the REPL: the sub-model policy, as before. */
	struct llm_msg m[3] = {
	    {LLM_SYSTEM, "You are a helpful assistant. Use ```python blocks.", 0},
	    {LLM_USER, needle_q_text, strlen(needle_q_text)},
	};
	struct sim_cfg cfg = root_cfg("code_errors=1,chunk=5000");
	struct convo c;
	char *got;
	m[0].len = strlen(m[0].text);
	CHECK(sim_root_reply(&cfg, m, 2) == NULL);
	CHECK(sim_root_reply(&cfg, m + 1, 1) == NULL);
	CHECK(sim_root_reply(NULL, m, 0) == NULL);
	got = sim_reply_text(&cfg, m, 2);
	CHECK_STR(got, "the code of item-5 is c35");
	free(got);
	got = sim_reply_text(NULL, m + 1, 1);
	CHECK_STR(got, "the code of item-5 is c35");
	free(got);
	/* a root conversation with the defaults (cfg NULL) */
	convo_init(&c, "What is x?", "a str of 10 characters", "about 50k");
	got = sim_reply_text(NULL, c.m, c.n);
	CHECK_CONTAINS(got, "# step 1: ");
	CHECK(!strstr(got, "contxt"));
	free(got);
	got = sim_root_reply(NULL, c.m, c.n);
	CHECK_CONTAINS(got, "# step 1: ");
	convo_turn(&c, got, "type: str\n", false);
	free(got);
	got = sim_reply_text(NULL, c.m, c.n);
	CHECK_CONTAINS(got, "size = 100000\n"); /* "about about 50k": not a number */
	free(got);
	/* chunk= overrides the size the prompt states */
	got = sim_reply_text(&cfg, c.m, c.n);
	CHECK_CONTAINS(got, "size = 5000\n");
	free(got);
	convo_release(&c);
	convo_init(&c, "What is x?", "a str of 10 characters", "50k");
	got = sim_reply_text(NULL, c.m, c.n);
	convo_turn(&c, got, "type: str\n", false);
	free(got);
	got = sim_reply_text(NULL, c.m, c.n);
	CHECK_CONTAINS(got, "size = 50000\n");
	free(got);
	convo_release(&c);
}

/* ---- host tools (sim/sim_tools.c) ----
 * The root's tool turns, driven with the REPL played by Python whose
 * search_tools, get_tool_info and call_tool answer from real tool lists:
 * server-everything's and server-filesystem's (tests/mcp_lists/, their
 * tools/list results at the versions tests/js pins), and invented servers
 * that word things otherwise. search_tools ranks lexically (names 3,
 * descriptions 1, as tool_rank does), get_tool_info gives tool.h's info
 * object, call_tool checks the arguments against the schema and the
 * read-only policy, as the controller does, and raises ToolError. */

#define TOOLS_LINE                                                                         \
	"Host tools: 2 tool servers are connected. Find tools in three steps: "                  \
	"search_tools(query), get_tool_info(name), then call_tool(name, **arguments)."

static const char py_tools[] =
    "import json, re\n"
    "class ToolError(RuntimeError):\n"
    "    def __init__(self, msg, kind='server'):\n"
    "        super().__init__(msg)\n"
    "        self.kind = kind\n"
    "TOOLS = {}\n"
    "for _srv, _path in LISTS.items():\n"
    "    with open(_path) as _f:\n"
    "        _l = json.load(_f) if _path.endswith('.json') else None\n"
    "    TOOLS[_srv] = {t['name']: t for t in _l['tools']}\n"
    "for _srv, _l in INVENTED.items():\n"
    "    TOOLS[_srv] = {t['name']: t for t in _l}\n"
    "_STOP = {'the', 'a', 'an', 'of', 'to', 'and', 'or', 'in', 'is', 'what', 'does', 'for', 'with'}\n"
    "def _words(s):\n"
    "    out = []\n"
    "    for w in re.split(r'[^a-z0-9]+', s.lower()):\n"
    "        if w and w not in _STOP:\n"
    "            out.append(w[:-1] if len(w) > 3 and w.endswith('s') and not w.endswith('ss') else w)\n"
    "    return out\n"
    "def _rank(q, name, desc):\n"
    "    nw, dw, s, hit = _words(name), _words(desc), 0.0, 0\n"
    "    for w in set(_words(q)):\n"
    "        if w in nw:\n"
    "            s, hit = s + 3, hit + 1\n"
    "        elif any(min(len(x), len(w)) >= 4 and (x.startswith(w) or w.startswith(x)) for x in nw):\n"
    "            s, hit = s + 1.5, hit + 1\n"
    "        if w in dw:\n"
    "            s, hit = s + 1, hit + 1\n"
    "    return s\n"
    "TOOL_SEARCHES, INFOS_READ, TOOL_CALLS = [], [], []\n"
    "def search_tools(query, server=None, limit=10):\n"
    "    assert isinstance(query, str) and query.strip(), repr(query)\n"
    "    TOOL_SEARCHES.append(query)\n"
    "    hits = []\n"
    "    for srv, tools in TOOLS.items():\n"
    "        for name, t in tools.items():\n"
    "            s = _rank(query, name, t.get('description', ''))\n"
    "            if s > 0 and server in (None, srv):\n"
    "                hits.append({'name': srv + '.' + name,\n"
    "                             'description': t.get('description', '')[:300], 'score': s})\n"
    "    hits.sort(key=lambda h: -h['score'])\n"
    "    return hits[:limit]\n"
    "def _tool(name):\n"
    "    srv, _, tool = name.partition('.')\n"
    "    if srv not in TOOLS or tool not in TOOLS[srv]:\n"
    "        raise ToolError('no tool named %r' % name, 'notfound')\n"
    "    return TOOLS[srv][tool]\n"
    "def _params(sch):\n"
    "    props, req = sch.get('properties', {}), sch.get('required', [])\n"
    "    one = lambda n: {'name': n, 'type': props[n].get('type', 'any'),\n"
    "                     'description': props[n].get('description', '')}\n"
    "    return {'required': [one(n) for n in req],\n"
    "            'optional': [one(n) for n in props if n not in req]}\n"
    "def get_tool_info(name):\n"
    "    t = _tool(name)\n"
    "    INFOS_READ.append(name)\n"
    "    sch = t.get('inputSchema', {'type': 'object'})\n"
    "    ro = bool((t.get('annotations') or {}).get('readOnlyHint'))\n"
    "    info = {'name': name, 'server': name.split('.')[0], 'tool': t['name'],\n"
    "            'title': t.get('title'), 'description': t.get('description', ''),\n"
    "            'input_schema': sch, 'output_schema': t.get('outputSchema'),\n"
    "            'parameters': _params(sch), 'read_only': ro,\n"
    "            'annotations': t.get('annotations'), 'allowed': ro}\n"
    "    if not ro:\n"
    "        info['why'] = 'not read-only; allow it with --allow-tools ' + name\n"
    "    return info\n"
    "_TYPES = {'number': (int, float), 'integer': (int,), 'string': (str,), 'array': (list,),\n"
    "          'boolean': (bool,), 'object': (dict,)}\n"
    "def call_tool(name, *args, **arguments):\n"
    "    if args:\n"
    "        assert len(args) == 1 and isinstance(args[0], dict) and not arguments, args\n"
    "        arguments = dict(args[0])\n"
    "    t = _tool(name)\n"
    "    sch = t.get('inputSchema', {})\n"
    "    props = sch.get('properties', {})\n"
    "    if not (t.get('annotations') or {}).get('readOnlyHint'):\n"
    "        raise ToolError(name + ' is not read-only', 'policy')\n"
    "    for r in sch.get('required', []):\n"
    "        if r not in arguments:\n"
    "            raise ToolError('parameter %r is required' % r, 'schema')\n"
    "    for k, v in arguments.items():\n"
    "        if k not in props:\n"
    "            raise ToolError('unknown parameter %r' % k, 'schema')\n"
    "        ty = props[k].get('type')\n"
    "        if ty in _TYPES and (not isinstance(v, _TYPES[ty]) or (isinstance(v, bool) and ty != 'boolean')):\n"
    "            raise ToolError('parameter %r must be a %s' % (k, ty), 'schema')\n"
    "        if 'enum' in props[k] and v not in props[k]['enum']:\n"
    "            raise ToolError('parameter %r must be one of %r' % (k, props[k]['enum']), 'schema')\n"
    "    TOOL_CALLS.append((name, arguments))\n"
    "    return RESULTS[name](arguments)\n"
    "FILES = {'/tmp/x/notes.txt': 'Budget review moved to Friday (room 4).\\nBring the Q3 figures.'}\n"
    "def _read(a):\n"
    "    if a['path'] not in FILES:\n"
    "        raise ToolError('ENOENT: no such file or directory, open ' + repr(a['path']))\n"
    "    return FILES[a['path']]\n"
    "RESULTS = {\n"
    "    'everything.get-sum': lambda a: 'The sum of %s and %s is %s.' % (a['a'], a['b'], a['a'] + a['b']),\n"
    "    'everything.echo': lambda a: 'Echo: ' + a['message'],\n"
    "    'fs.read_text_file': _read,\n"
    "    'fs.read_file': _read,\n"
    "    'fs.list_directory': lambda a: '[FILE] notes.txt\\n[DIR] old' if a['path'] == '/tmp/x' else '',\n"
    "    'fs.search_files': lambda a: '/tmp/x/notes.txt' if a == {'path': '/tmp/x', 'pattern': '*.txt'} else '',\n"
    "    'fx.convert_currency': lambda a: {'amount': a['amount'], 'from': a['from'], 'to': a['to'],\n"
    "                                      'converted': round(a['amount'] * 0.92, 2)},\n"
    "    'money.convertAmount': lambda a: '%s %s is %s %s' % (a['value'], a['source_currency'],\n"
    "                                  a['value'] * 190, a['target_currency']),\n"
    "}\n";

/* Invented servers: a currency converter (its "from" and "to" are Python
 * keywords), and one with a camelCase name and enums. */
static const char py_invented[] =
    "INVENTED = {'fx': [{'name': 'convert_currency',\n"
    "    'description': 'Convert an amount of money from one currency to another at the '\n"
    "                   'latest rate.',\n"
    "    'inputSchema': {'type': 'object', 'properties': {\n"
    "        'amount': {'type': 'number', 'description': 'How much money'},\n"
    "        'from': {'type': 'string', 'description': 'ISO 4217 code to convert from'},\n"
    "        'to': {'type': 'string', 'description': 'ISO 4217 code to convert to'}},\n"
    "        'required': ['amount', 'from', 'to']},\n"
    "    'annotations': {'readOnlyHint': True}}],\n"
    "  'money': [{'name': 'convertAmount',\n"
    "    'description': 'Gives the value of a sum in another currency.',\n"
    "    'inputSchema': {'type': 'object', 'properties': {\n"
    "        'target_currency': {'type': 'string', 'enum': ['EUR', 'USD', 'GBP', 'JPY']},\n"
    "        'source_currency': {'type': 'string', 'enum': ['EUR', 'USD', 'GBP', 'JPY']},\n"
    "        'value': {'type': 'number'},\n"
    "        'round': {'type': 'boolean', 'default': True}},\n"
    "        'required': ['value', 'source_currency', 'target_currency']},\n"
    "    'annotations': {'readOnlyHint': True}}]}\n";

/* The REPL for a tool test: the usual prelude and a str context, the
 * servers named in lists ("everything,fs,fx,money"). */
static void tools_repl_init(struct fake_repl *r, const char *lists)
{
	char ev[4096], fs[4096];
	struct buf extra;
	CHECK(realpath("tests/mcp_lists/server-everything.json", ev) != NULL);
	CHECK(realpath("tests/mcp_lists/server-filesystem.json", fs) != NULL);
	buf_init(&extra, 0);
	buf_puts(&extra, "LISTS = {}\n");
	if (strstr(lists, "everything"))
		buf_printf(&extra, "LISTS['everything'] = '%s'\n", ev);
	if (strstr(lists, "fs"))
		buf_printf(&extra, "LISTS['fs'] = '%s'\n", fs);
	buf_puts(&extra, py_invented);
	if (!strstr(lists, "fx"))
		buf_puts(&extra, "del INVENTED['fx']\n");
	if (!strstr(lists, "money"))
		buf_puts(&extra, "del INVENTED['money']\n");
	buf_puts(&extra, py_tools);
	fake_repl_init(r, false, 1, extra.p);
	buf_release(&extra);
}

/* A root conversation whose system prompt offers host tools. */
static void convo_init_tools(struct convo *c, const char *question, const char *line)
{
	char *s;
	convo_init(c, question, "a str of 12,000 characters", "about 50,000");
	s = xasprintf("%s\n\n%s\n", c->m[0].text, line);
	free(c->owned[0]);
	c->owned[0] = s;
	c->m[0] = (struct llm_msg){LLM_SYSTEM, s, strlen(s)};
}

/* Drive a solve: reply, run, show the output. *trace gets each turn's
 * marker ("T1 T2 T3 F" for the tool turns and a FINAL, "S1" for steps);
 * returns the answer (fresh): FINAL's argument or answer["content"]. */
static char *tools_solve(struct fake_repl *r, struct convo *c, struct buf *trace)
{
	char *answer = NULL;
	buf_reset(trace);
	for (int turn = 0; !answer && turn < ROOT_TURNS - 1; turn++) {
		char *reply = root_reply("", c), *code, *out;
		const char *m;
		bool raised;
		if (trace->len)
			buf_putc(trace, ' ');
		if (!strncmp(reply, "FINAL(", 6)) {
			struct reply rp;
			CHECK_MSG(reply[strlen(reply) - 1] == ')', "%s", reply);
			buf_putc(trace, 'F');
			/* as the controller reads it: the whole text, no block */
			rlm_reply_parse(reply, strlen(reply), false, false, &rp);
			CHECK(rp.final == REPLY_FINAL && rp.n_blocks == 0);
			answer = xstrndup(reply + rp.final_off, rp.final_len);
			CHECK_INT(rp.final_off, 6);
			CHECK_INT(rp.final_len, strlen(reply) - 7);
			rlm_reply_release(&rp);
			free(reply);
			break;
		}
		code = code_of(reply);
		py_compiles(code);
		if (!strncmp(code, "# tools ", 8))
			buf_printf(trace, "T%c", code[8]);
		else
			buf_printf(trace, "S%d", step_in(code));
		out = fake_repl_exec(r, code, "print('@@CALLS@@', json.dumps([TOOL_CALLS, TOOL_SEARCHES]))\n",
				     &answer, &raised);
		CHECK_MSG(!raised, "the code raised:\n%s\n%s", code, out);
		m = strstr(out, "@@CALLS@@");
		if (m)
			out[m - out] = '\0';
		if (getenv("TEST_VERBOSE"))
			fprintf(stderr, "--- turn %d\n%s--- output\n%s", turn + 1, reply, out);
		convo_turn(c, reply, out, false);
		free(out);
		free(code);
		free(reply);
	}
	return answer;
}

/* The calls and searches the last run of the REPL made, as JSON. */
static cJSON *tools_calls(struct fake_repl *r)
{
	struct buf prog;
	cJSON *j;
	buf_init(&prog, 0);
	buf_printf(&prog, "%sprint('@@J@@' + json.dumps([TOOL_CALLS, TOOL_SEARCHES, INFOS_READ]))\n", r->hist.p);
	j = py_json(prog.p);
	buf_release(&prog);
	return j;
}

TEST(tools_reach_the_tool_that_answers)
{
	static const struct {
		const char *servers, *q;
		const char *trace;   /* the turns */
		const char *call;    /* json.dumps of CALLS[0], as [name, arguments] */
		const char *answer;  /* exactly */
	} cases[] = {
	    {"everything,fs", "What is the sum of 12 and 30?", "T1 T2 T3 F",
	     "[\"everything.get-sum\", {\"a\": 12, \"b\": 30}]", "The sum of 12 and 30 is 42."},
	    /* a number with thousands, a signed float; "add" is a synonym of sum */
	    {"everything", "Add 1,000 and -2.5, please.", "T1 T2 T3 F",
	     "[\"everything.get-sum\", {\"a\": 1000, \"b\": -2.5}]", "The sum of 1000 and -2.5 is 997.5."},
	    /* a path; the read tool that is not deprecated */
	    {"everything,fs", "What does the file /tmp/x/notes.txt say?", "T1 T2 T3 F",
	     "[\"fs.read_text_file\", {\"path\": \"/tmp/x/notes.txt\"}]",
	     "Budget review moved to Friday (room 4).\nBring the Q3 figures."},
	    {"everything,fs", "Show me the contents of '/tmp/x/notes.txt'.", "T1 T2 T3 F",
	     "[\"fs.read_text_file\", {\"path\": \"/tmp/x/notes.txt\"}]",
	     "Budget review moved to Friday (room 4).\nBring the Q3 figures."},
	    /* other tools of server-filesystem: a path and a quoted pattern */
	    {"everything,fs", "List the directory /tmp/x", "T1 T2 T3 F",
	     "[\"fs.list_directory\", {\"path\": \"/tmp/x\"}]", "[FILE] notes.txt\n[DIR] old"},
	    {"everything,fs", "Search the files in /tmp/x for '*.txt'.", "T1 T2 T3 F",
	     "[\"fs.search_files\", {\"path\": \"/tmp/x\", \"pattern\": \"*.txt\"}]",
	     "/tmp/x/notes.txt"},
	    /* a quoted string with parentheses and a comma */
	    {"everything,fs", "Echo \"Hello, (wide) world\" back to me.", "T1 T2 T3 F",
	     "[\"everything.echo\", {\"message\": \"Hello, (wide) world\"}]",
	     "Echo: Hello, (wide) world"},
	    /* parameters named by the question, and Python keywords */
	    {"everything,fx", "Convert 100 from USD to EUR.", "T1 T2 T3 F",
	     "[\"fx.convert_currency\", {\"amount\": 100, \"from\": \"USD\", \"to\": \"EUR\"}]",
	     "{\"amount\":100,\"from\":\"USD\",\"to\":\"EUR\",\"converted\":92}"},
	    /* enums, in the order the question names them; camelCase */
	    {"everything,fs,money", "Convert 250 GBP into JPY.", "T1 T2 T3 F",
	     "[\"money.convertAmount\", {\"value\": 250, \"source_currency\": \"GBP\", "
	     "\"target_currency\": \"JPY\"}]",
	     "250 GBP is 47500 JPY"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct fake_repl r;
		struct convo c;
		struct buf trace;
		cJSON *j;
		char *got, *call;
		buf_init(&trace, 0);
		tools_repl_init(&r, cases[i].servers);
		convo_init_tools(&c, cases[i].q, TOOLS_LINE);
		got = tools_solve(&r, &c, &trace);
		CHECK_MSG(!strcmp(trace.p, cases[i].trace), "%s: turns %s", cases[i].q, trace.p);
		CHECK_MSG(got && !strcmp(got, cases[i].answer), "%s: answer %s", cases[i].q,
			  got ? got : "(none)");
		j = tools_calls(&r);
		CHECK_INT(cJSON_GetArraySize(cJSON_GetArrayItem(j, 0)), 1);
		call = json_print(cJSON_GetArrayItem(cJSON_GetArrayItem(j, 0), 0));
		{
			/* compare as Python dumped it: reparse the expected */
			cJSON *want = json_parse(cases[i].call, strlen(cases[i].call));
			char *w = json_print(want);
			CHECK_MSG(!strcmp(call, w), "%s: call %s, want %s", cases[i].q, call, w);
			free(w);
			cJSON_Delete(want);
		}
		/* one search, with words and not the literals */
		CHECK_INT(cJSON_GetArraySize(cJSON_GetArrayItem(j, 1)), 1);
		{
			const char *sq = cJSON_GetArrayItem(cJSON_GetArrayItem(j, 1), 0)->valuestring;
			CHECK_MSG(!strstr(sq, "/tmp") && !strstr(sq, "100") && !strstr(sq, "12"),
				  "search %s", sq);
		}
		free(call);
		cJSON_Delete(j);
		free(got);
		convo_release(&c);
		buf_release(&r.hist);
		buf_release(&trace);
	}
}

TEST(tools_dropped_when_none_fits)
{
	static const struct {
		const char *servers, *q;
	} cases[] = {
	    /* nothing fits: the hits are about other things */
	    {"everything,fs", "Who wrote the memo about the zebra-7731 budget?"},
	    /* a write tool fits, but the policy does not allow it */
	    {"everything,fs", "Write 'hello' to the file /tmp/x/out.txt"},
	    /* a tool fits, the question lacks its arguments */
	    {"everything,fs", "What is the sum of the budget lines in zebra-7731?"},
	    {"fx", "Convert the zebra-7731 amount to euros."},
	    /* words a question about a text uses: no echo of "memo budget" */
	    {"everything,fs", "What does the memo say about the zebra-7731 budget?"},
	    /* a tool with side effects: not read-only, refused */
	    {"everything,fs", "Move /tmp/x/notes.txt to /tmp/x/old/zebra-7731.txt"},
	    /* a tool that takes nothing, reached by a synonym only (get-env) */
	    {"everything", "Which environment variables does zebra-7731 need?"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct fake_repl r;
		struct convo c;
		struct buf trace;
		cJSON *j;
		char *got;
		buf_init(&trace, 0);
		tools_repl_init(&r, cases[i].servers);
		convo_init_tools(&c, cases[i].q, TOOLS_LINE);
		got = tools_solve(&r, &c, &trace);
		/* the tools' turns, then the usual steps, which find the needle */
		CHECK_MSG(!strncmp(trace.p, "T1 ", 3) && strstr(trace.p, "S1 S2 S3"), "%s: %s",
			  cases[i].q, trace.p);
		CHECK_MSG(got && strstr(got, "55-ALPHA"), "%s: %s", cases[i].q, got ? got : "-");
		j = tools_calls(&r);
		CHECK_INT(cJSON_GetArraySize(cJSON_GetArrayItem(j, 0)), 0); /* no call */
		cJSON_Delete(j);
		free(got);
		convo_release(&c);
		buf_release(&r.hist);
		buf_release(&trace);
	}
}

/* One reply to a conversation whose tool turns' outputs are written by
 * hand; replies[k] the code of turn k ("T1"...). */
static char *tools_reply_after(const char *q, const char *const *outputs, size_t n)
{
	struct convo c;
	char *r = NULL;
	convo_init_tools(&c, q, TOOLS_LINE);
	for (size_t i = 0; i <= n; i++) {
		free(r);
		r = root_reply("", &c);
		if (i < n)
			convo_turn(&c, r, outputs[i], false);
	}
	convo_release(&c);
	return r;
}

TEST(tools_outputs_written_by_hand)
{
	static const char q[] = "Add 12 and 30.";
	static const char hits[] =
	    "2 tools found\n"
	    "tool hits: [{\"name\": \"everything.get-sum\", \"description\": \"Returns the sum "
	    "of two numbers\", \"score\": 4.5}, {\"name\": \"math.add_numbers\", "
	    "\"description\": \"Adds numbers (ints or floats).\\nReturns their total\", "
	    "\"score\": 4.0}]\n"
	    "REPL variables: hits";
	static const char info[] =
	    "tool info: {\"name\": \"math.add_numbers\", \"input_schema\": {\"type\": \"object\", "
	    "\"properties\": {\"x\": {\"type\": [\"integer\", \"null\"]}, \"y\": {\"type\": "
	    "\"integer\"}}, \"required\": [\"x\", \"y\"]}, \"allowed\": true}";
	const char *outs[4] = {NULL};
	char *r;

	/* turn 1: the search, with the question's words */
	r = tools_reply_after(q, outs, 0);
	CHECK_CONTAINS(r, "\n\n```repl\n# tools 1: ");
	CHECK_CONTAINS(r, "hits = search_tools(\"Add sum\", limit=5)\n");
	CHECK_CONTAINS(r, "print(\"tool hits:\", json.dumps(hits))\n");
	free(r);
	/* turn 2: the best fit of the hits, not the first: "add" is a word of
	 * the question, "sum" only a synonym of one */
	outs[0] = hits;
	r = tools_reply_after(q, outs, 1);
	CHECK_CONTAINS(r, "info = get_tool_info(\"math.add_numbers\")\n");
	free(r);
	/* turn 3: integers in the order of "required" (a type list with null) */
	outs[1] = info;
	r = tools_reply_after(q, outs, 2);
	CHECK_CONTAINS(r, "r = call_tool(\"math.add_numbers\", x=12, y=30)\n");
	free(r);
	/* turn 4: FINAL of the printed text; a structured value as JSON */
	outs[2] = "tool result: \"42\"\nREPL variables: r";
	r = tools_reply_after(q, outs, 3);
	CHECK_STR(r, "FINAL(42)");
	free(r);
	outs[2] = "tool result: {\"sum\": 42, \"note\": \"ok\"}";
	r = tools_reply_after(q, outs, 3);
	CHECK_STR(r, "FINAL({\"sum\":42,\"note\":\"ok\"})");
	free(r);
	/* a result FINAL cannot carry (a lone parenthesis, a fence): from r */
	outs[2] = "tool result: \"42 :)\"";
	r = tools_reply_after(q, outs, 3);
	CHECK_CONTAINS(r, "# tools 4: answer with the tool's result\n");
	CHECK_CONTAINS(r, "answer[\"content\"] = r if isinstance(r, str) else json.dumps(r)\n");
	free(r);
	/* a result cut by the output limit: from r too */
	outs[2] = "tool result: \"aaaa\n... [9,000 characters cut] ...\nbbbb\"";
	r = tools_reply_after(q, outs, 3);
	CHECK_CONTAINS(r, "# tools 4: ");
	free(r);
	/* a ToolError: the usual strategy, from step 1 */
	outs[2] = "Traceback (most recent call last):\n  File \"<repl>\", line 3, in <module>\n"
		  "ToolError: the server failed: connection reset";
	r = tools_reply_after(q, outs, 3);
	CHECK_CONTAINS(r, "\n\n```repl\n# step 1: ");
	CHECK_CONTAINS(r, "The tool call failed");
	free(r);
	/* then step 2, as without tools */
	{
		struct convo c;
		convo_init_tools(&c, q, TOOLS_LINE);
		for (int i = 0; i < 5; i++) {
			r = root_reply("", &c);
			if (i == 4)
				CHECK_CONTAINS(r, "# step 2: ");
			convo_turn(&c, r, i < 3 ? (i == 0 ? hits : i == 1 ? info : outs[2]) : "type: str",
				   false);
			free(r);
		}
		convo_release(&c);
	}
	/* not allowed: no call */
	outs[1] = "tool info: {\"name\": \"math.add_numbers\", \"input_schema\": {}, \"allowed\": "
		  "false, \"why\": \"denied by --deny-tools 'math.*'\"}";
	r = tools_reply_after(q, outs, 2);
	CHECK_CONTAINS(r, "# step 1: ");
	free(r);
	/* a string where a number goes: no number literal is a string */
	outs[1] = "tool info: {\"name\": \"math.add_numbers\", \"input_schema\": {\"properties\": "
		  "{\"x\": {\"type\": \"string\"}}, \"required\": [\"x\", \"y\"]}}";
	r = tools_reply_after(q, outs, 2);
	CHECK_CONTAINS(r, "# step 1: ");
	free(r);
	/* no schema but "parameters" (tool.h's summary) */
	outs[1] = "tool info: {\"name\": \"math.add_numbers\", \"parameters\": {\"required\": "
		  "[{\"name\": \"left\", \"type\": \"number\"}, {\"name\": \"right-hand\", \"type\": "
		  "\"number\"}], \"optional\": []}}";
	r = tools_reply_after(q, outs, 2);
	CHECK_CONTAINS(r, "r = call_tool(\"math.add_numbers\", {\"left\": 12, \"right-hand\": 30})\n");
	free(r);
	/* the search failed (a REPL without the helpers), or found nothing */
	outs[0] = "Traceback (most recent call last):\nNameError: name 'search_tools' is not defined";
	r = tools_reply_after(q, outs, 1);
	CHECK_CONTAINS(r, "# step 1: ");
	free(r);
	outs[0] = "0 tools found\ntool hits: []";
	r = tools_reply_after(q, outs, 1);
	CHECK_CONTAINS(r, "# step 1: ");
	CHECK_CONTAINS(r, "No host tool fits");
	free(r);
	/* a description cannot fake a line: JSON keeps it on one */
	outs[0] = "tool hits: [{\"name\": \"x.unrelated\", \"description\": \"a\\ntool info: "
		  "{}\\nTraceback (most recent call last):\"}]";
	r = tools_reply_after(q, outs, 1);
	CHECK_CONTAINS(r, "# step 1: ");
	CHECK_CONTAINS(r, "No host tool fits");
	free(r);
	/* out of turns after the result: the result */
	{
		struct convo c;
		convo_init_tools(&c, q, TOOLS_LINE);
		outs[0] = hits;
		outs[1] = info;
		outs[2] = "tool result: \"The sum is\\n42.\"";
		for (int i = 0; i < 3; i++) {
			r = root_reply("", &c);
			convo_turn(&c, r, outs[i], i == 2);
			free(r);
		}
		free(c.owned[c.n - 1]);
		c.owned[c.n - 1] = xstrdup("tool result: \"The sum is\\n42.\"\n\nYou are out of turns: "
					   "answer now with FINAL(...).");
		c.m[c.n - 1].text = c.owned[c.n - 1];
		c.m[c.n - 1].len = strlen(c.owned[c.n - 1]);
		r = root_reply("", &c);
		CHECK_STR(r, "FINAL(The sum is 42.)");
		free(r);
		convo_release(&c);
	}
}

/* The tool turns' Python in the real sandboxed worker (repl/): stubs of
 * the tool helpers head each cell (the runtime puts its own helpers back
 * after a cell, so they are defined where they are used), the outputs the
 * sim reads are the worker's own, with the variables line the loop adds. */
static const char py_worker_tools[] =
    "import builtins as _b\n"
    "if not hasattr(_b, '_TOOL_CALLS'):\n"
    "    _b._TOOL_CALLS = []\n"
    "class ToolError(RuntimeError):\n"
    "    pass\n"
    "_LIST = {'everything.get-sum': {'description': 'Returns the sum of two numbers',\n"
    "          'input_schema': {'type': 'object', 'properties': {\n"
    "              'a': {'type': 'number', 'description': 'First number'},\n"
    "              'b': {'type': 'number', 'description': 'Second number'}},\n"
    "              'required': ['a', 'b']}},\n"
    "          'everything.echo': {'description': 'Echoes back the input string',\n"
    "          'input_schema': {'type': 'object', 'properties': {\n"
    "              'message': {'type': 'string'}}, 'required': ['message']}}}\n"
    "def search_tools(query, server=None, limit=10):\n"
    "    return [{'name': n, 'description': t['description'], 'score': 1.0}\n"
    "            for n, t in _LIST.items() if any(w in (n + ' ' + t['description']).lower()\n"
    "                                            for w in query.lower().split())][:limit]\n"
    "def get_tool_info(name):\n"
    "    t = _LIST[name]\n"
    "    return {'name': name, 'description': t['description'],\n"
    "            'input_schema': t['input_schema'], 'allowed': True}\n"
    "def call_tool(name, *args, **kw):\n"
    "    kw = dict(args[0]) if args else kw\n"
    "    _b._TOOL_CALLS.append([name, kw])\n"
    "    if set(kw) != set(_LIST[name]['input_schema']['required']):\n"
    "        raise ToolError('parameter mismatch: %r' % sorted(kw))\n"
    "    return 'The sum of %s and %s is %s.' % (kw['a'], kw['b'], kw['a'] + kw['b'])\n";

TEST(tools_code_runs_in_the_real_worker)
{
	static const char ctx[] = "Line 1: nothing about sums here.\n";
	struct repl_cfg cfg;
	struct repl *r = NULL;
	struct rlm_err err = {0, ""};
	struct convo c;
	char *reply = NULL;
	int turn;
	memset(&cfg, 0, sizeof(cfg));
	cfg.ctx.text = ctx;
	cfg.ctx.len = strlen(ctx);
	cfg.exec_timeout_ns = 20000 * (int64_t)1000000;
	if (repl_start(&cfg, &r, &err) != 0) {
		SKIP("no sandboxed worker here: %s", err.msg);
		return;
	}
	convo_init_tools(&c, "What is the sum of 12 and 30?", TOOLS_LINE);
	for (turn = 0; turn < 5; turn++) {
		struct repl_result res;
		struct buf cell, out;
		char *code;
		reply = root_reply("", &c);
		if (!strncmp(reply, "FINAL(", 6))
			break;
		code = code_of(reply);
		CHECK_MSG(!strncmp(code, "# tools ", 8), "%s", code);
		buf_init(&cell, 0);
		buf_printf(&cell, "%s%s", py_worker_tools, code);
		memset(&res, 0, sizeof(res));
		CHECK_MSG(repl_exec(r, cell.p, cell.len, 0, &res, &err) == 0, "%s", err.msg);
		CHECK_MSG(!res.error, "the code raised: %s\n%s", res.output, code);
		buf_init(&out, 0);
		buf_append(&out, res.output, res.len);
		while (out.len && out.p[out.len - 1] == '\n')
			out.p[--out.len] = '\0';
		if (res.made)
			buf_printf(&out, "\nREPL variables: %s", res.made);
		convo_turn(&c, reply, out.p, false);
		buf_release(&out);
		buf_release(&cell);
		repl_result_release(&res);
		free(code);
		free(reply);
		reply = NULL;
	}
	CHECK_STR(reply, "FINAL(The sum of 12 and 30 is 42.)");
	CHECK_INT(turn, 3);
	{
		struct repl_result res;
		static const char q[] = "import builtins, json\nprint(json.dumps(builtins._TOOL_CALLS))\n";
		memset(&res, 0, sizeof(res));
		CHECK(repl_exec(r, q, strlen(q), 0, &res, &err) == 0);
		CHECK_CONTAINS(res.output, "[[\"everything.get-sum\", {\"a\": 12, \"b\": 30}]]");
		repl_result_release(&res);
	}
	free(reply);
	convo_release(&c);
	repl_free(r);
}

TEST(tools_questions_of_other_shapes)
{
	/* server-everything's get-tiny-image and gzip-file-as-resource (no
	 * required parameter), get-sum */
	static const char tiny[] =
	    "tool info: {\"name\": \"everything.get-tiny-image\", \"input_schema\": {\"type\": "
	    "\"object\", \"properties\": {}}, \"allowed\": true}";
	static const char gzip[] =
	    "tool info: {\"name\": \"everything.gzip-file-as-resource\", \"input_schema\": "
	    "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\", "
	    "\"default\": \"README.md.gz\"}, \"data\": {\"type\": \"string\"}, \"outputType\": "
	    "{\"type\": \"string\", \"enum\": [\"resourceLink\", \"resource\"]}}}, "
	    "\"allowed\": true}";
	static const char sum[] =
	    "tool info: {\"name\": \"everything.get-sum\", \"input_schema\": {\"type\": "
	    "\"object\", \"properties\": {\"a\": {\"type\": \"number\"}, \"b\": {\"type\": "
	    "\"number\"}}, \"required\": [\"a\", \"b\"]}, \"allowed\": true}";
	static const struct {
		const char *q, *info, *want; /* want: in the turn-3 reply */
	} cases[] = {
	    /* a tool the question names, taking nothing: called */
	    {"Get the tiny image", tiny, "r = call_tool(\"everything.get-tiny-image\")\n"},
	    /* taking nothing while the question gives a path: not called */
	    {"How many files are in /tmp/x?", gzip, "# step 1: "},
	    /* named optional parameters, an enum value after its name; "name"
	     * is call_tool's own, so a dict */
	    {"Gzip the file with name 'a.gz' and data 'abc' as outputType resource", gzip,
	     "r = call_tool(\"everything.gzip-file-as-resource\", {\"name\": \"a.gz\", "
	     "\"data\": \"abc\", \"outputType\": \"resource\"})\n"},
	    /* contractions are no words; "plus" a synonym of sum */
	    {"What's 3 plus 4?", sum, "r = call_tool(\"everything.get-sum\", a=3, b=4)\n"},
	    {"Could you add 7 and 8 for me?", sum, "a=7, b=8)"},
	    /* a date, a version, a time and an identifier are no numbers */
	    {"Add 2023-04-18, v20.0.0, 10:42 and item-5 to 1.", sum, "# step 1: "},
	    {"What is the sum of the first 3 numbers?", sum, "# step 1: "},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		/* the one hit: the tool of the info */
		cJSON *info = json_parse(cases[i].info + 11, strlen(cases[i].info + 11));
		char *hits = xasprintf("tool hits: [{\"name\": \"%s\", \"description\": \"\"}]",
				       json_str(info, "name"));
		const char *outs[2] = {hits, cases[i].info};
		char *r = tools_reply_after(cases[i].q, outs, 2);
		CHECK_MSG(strstr(r, cases[i].want), "%s: %s", cases[i].q, r);
		free(r);
		free(hits);
		cJSON_Delete(info);
	}
	/* the search: words, not contractions or literals */
	{
		char *r = tools_reply_after("What's 3 plus 4?", NULL, 0);
		CHECK_CONTAINS(r, "hits = search_tools(\"plus sum\", limit=5)\n");
		free(r);
	}
}

TEST(tools_only_with_the_host_tools_line)
{
	struct convo c;
	char *r;
	/* no line: the first turn is step 1, as before */
	convo_init(&c, "What is the sum of 12 and 30?", "a str of 12 characters", "about 50k");
	r = root_reply("", &c);
	CHECK_CONTAINS(r, "# step 1: ");
	free(r);
	convo_release(&c);
	/* the words, not at the start of a line: no tools either */
	convo_init_tools(&c, "What is the sum of 12 and 30?", "Tools: none. Host tools: 0.");
	r = root_reply("", &c);
	CHECK_CONTAINS(r, "# step 1: ");
	free(r);
	convo_release(&c);
	/* the line alone, whatever follows the prefix */
	convo_init_tools(&c, "What is the sum of 12 and 30?", "Host tools: 1 server (math).");
	r = root_reply("", &c);
	CHECK_CONTAINS(r, "# tools 1: ");
	free(r);
	convo_release(&c);
}

TEST(root_through_handle)
{
	/* Over the OpenAI format: the simulator's cfg reaches the root policy. */
	struct convo c;
	struct sim *s = sim_of("code_errors=1,seed=3");
	struct sim_reply rep;
	cJSON *root = cJSON_CreateObject(), *msgs = cJSON_CreateArray(), *j;
	char *body, *content;
	convo_init(&c, "What is x?", "a str of 10 characters", "50,000");
	for (size_t i = 0; i < c.n; i++) {
		cJSON *m = cJSON_CreateObject();
		json_add_str(m, "role", i ? "user" : "system");
		json_add_str(m, "content", c.m[i].text);
		json_add(msgs, NULL, m);
	}
	json_add_str(root, "model", "sim");
	json_add(root, "messages", msgs);
	body = json_print(root);
	CHECK_INT(sim_handle(s, body, strlen(body), &rep), 0);
	CHECK_INT(rep.status, 200);
	content = completion_content(rep.body, rep.len, NULL, &j);
	CHECK_CONTAINS(content, "# step 1: ");
	{
		struct sim_cfg cfg = root_cfg("code_errors=1,seed=3");
		char *direct = sim_root_reply(&cfg, c.m, c.n);
		CHECK_STR(content, direct);
		free(direct);
	}
	free(content);
	cJSON_Delete(j);
	sim_reply_release(&rep);
	free(body);
	cJSON_Delete(root);
	convo_release(&c);
	sim_free(s);
}

TEST(root_cfg_keys)
{
	struct sim_cfg c;
	struct rlm_err err = {0, ""};
	static const char *const bad[] = {"code_errors=1.5", "code_errors=-0.1", "code_errors=x",
					  "chunk=999",	     "chunk=abc",	 "chunk=-5k",
					  "chunk=",	     "chunk=5q"};
	sim_cfg_default(&c);
	CHECK(c.code_errors == 0 && c.chunk_chars == 0);
	CHECK_INT(sim_cfg_parse("code_errors=0.25,chunk=100k", &c, &err), 0);
	CHECK(c.code_errors == 0.25 && c.chunk_chars == 100000);
	CHECK_INT(sim_cfg_parse("chunk=1.5M,code_errors=1", &c, &err), 0);
	CHECK(c.code_errors == 1 && c.chunk_chars == 1500000);
	CHECK_INT(sim_cfg_parse("chunk=1000", &c, &err), 0);
	CHECK_INT(c.chunk_chars, 1000);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct sim_cfg before = c;
		CHECK_MSG(sim_cfg_parse(bad[i], &c, &err) == RLM_EINVAL, "'%s' accepted", bad[i]);
		CHECK_CONTAINS(err.msg, "bad value");
		CHECK(memcmp(&c, &before, sizeof(c)) == 0);
	}
	CHECK(sim_cfg_parse("warp=1", &c, &err) == RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "code_errors, chunk");
}

/* ---- configuration ---- */

TEST(cfg_parse_good)
{
	struct sim_cfg c;
	struct rlm_err err = {0, ""};
	sim_cfg_default(&c);
	CHECK_INT(c.seed, 1);
	CHECK(c.ttft_ms == 0 && c.decode_tps == 0 && c.p_429 == 0 && c.faults_max < 0);
	CHECK(c.retry_after_s == 1 && c.retry_after_ms == 0 && c.slow_ms == 2000);
	CHECK_INT(sim_cfg_parse("ttft=100ms,tps=50,429=0.1,500=0.05,reset=0.05,malformed=0.05,"
				"slow=0.02,truncate=0.05,faults=3,retry_after=2,retry_after_ms=50,"
				"slow_ms=1.5s,seed=7",
				&c, &err),
		  0);
	CHECK(c.ttft_ms == 100 && c.decode_tps == 50 && c.p_429 == 0.1 && c.p_500 == 0.05);
	CHECK(c.p_reset == 0.05 && c.p_malformed == 0.05 && c.p_slow == 0.02 &&
	      c.p_truncate == 0.05);
	CHECK(c.faults_max == 3 && c.retry_after_s == 2 && c.retry_after_ms == 50);
	CHECK(c.slow_ms == 1500 && c.seed == 7);
	/* over the values already there; spaces, empty items, units */
	CHECK_INT(sim_cfg_parse(" ttft = 2s ,, retry_after=500ms,", &c, &err), 0);
	CHECK(c.ttft_ms == 2000 && c.retry_after_s == 0.5 && c.decode_tps == 50);
	CHECK_INT(sim_cfg_parse("", &c, &err), 0);
	CHECK_INT(sim_cfg_parse(NULL, &c, &err), 0);
	CHECK_INT(sim_cfg_parse("ttft=7,faults=-1,429=0.5", &c, &err), 0);
	CHECK(c.ttft_ms == 7 && c.faults_max == -1);
}

TEST(cfg_parse_bad)
{
	static const struct {
		const char *spec, *msg;
	} cases[] = {
	    {"warp=9", "unknown simulator option 'warp' (known: seed, ttft, tps, 429"},
	    {"ttft=abc", "bad value 'abc' for simulator option 'ttft'"},
	    {"ttft=-5", "bad value '-5' for simulator option 'ttft'"},
	    {"ttft=5m", "bad value '5m' for simulator option 'ttft'"},
	    {"ttft=", "bad value '' for simulator option 'ttft'"},
	    {"ttft", "bad value '' for simulator option 'ttft'"},
	    {"tps=-1", "bad value '-1' for simulator option 'tps'"},
	    {"429=1.5", "bad value '1.5' for simulator option '429'"},
	    {"500=-0.1", "bad value '-0.1' for simulator option '500'"},
	    {"reset=x", "bad value 'x' for simulator option 'reset'"},
	    {"malformed=nan", "bad value 'nan' for simulator option 'malformed'"},
	    {"slow=inf", "bad value 'inf' for simulator option 'slow'"},
	    {"truncate=", "bad value '' for simulator option 'truncate'"},
	    {"faults=2.5", "bad value '2.5' for simulator option 'faults'"},
	    {"faults=-2", "bad value '-2' for simulator option 'faults'"},
	    {"seed=-1", "bad value '-1' for simulator option 'seed'"},
	    {"seed=12x", "bad value '12x' for simulator option 'seed'"},
	    {"retry_after=soon", "bad value 'soon' for simulator option 'retry_after'"},
	    {"retry_after_ms=-3", "bad value '-3' for simulator option 'retry_after_ms'"},
	    {"slow_ms=1h", "bad value '1h' for simulator option 'slow_ms'"},
	    {"429=0.6,500=0.5", "fault rates add up to 1.1, more than 1"},
	    {"=3", "unknown simulator option ''"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct sim_cfg c, before;
		struct rlm_err err = {0, ""};
		sim_cfg_default(&c);
		c.ttft_ms = 33;
		before = c;
		CHECK_MSG(sim_cfg_parse(cases[i].spec, &c, &err) == RLM_EINVAL, "'%s' accepted",
			  cases[i].spec);
		CHECK_MSG(strstr(err.msg, cases[i].msg), "'%s': message \"%s\", want \"%s\"",
			  cases[i].spec, err.msg, cases[i].msg);
		CHECK_MSG(memcmp(&c, &before, sizeof(c)) == 0, "'%s' changed cfg", cases[i].spec);
	}
}

/* ---- sim_handle: format, timing, faults ---- */

TEST(handle_completion_body)
{
	struct sim *s = sim_of("ttft=100ms,tps=10");
	char *body = request_body("my-model", needle_q_text, "\"temperature\":0"), *content;
	struct sim_reply r;
	const char *finish;
	cJSON *j, *u;
	CHECK_INT(sim_handle(s, body, strlen(body), &r), 0);
	CHECK_INT(r.status, 200);
	CHECK_INT(r.fault, SIM_OK);
	CHECK(!r.stream);
	CHECK_INT(r.retry_after_s, -1);
	content = completion_content(r.body, r.len, &finish, &j);
	CHECK_STR(content, "the code of item-5 is c35");
	CHECK_STR(finish, "stop");
	CHECK_STR(json_str(j, "id"), "simcmpl-1");
	CHECK_STR(json_str(j, "model"), "my-model");
	CHECK(json_num(j, "created", 0) > 1.6e9);
	u = json_get(j, "usage");
	CHECK_INT(json_int(u, "prompt_tokens", -1), (strlen(needle_q_text) + 3) / 4);
	CHECK_INT(json_int(u, "completion_tokens", -1), (strlen(content) + 3) / 4);
	CHECK_INT(json_int(u, "total_tokens", -1),
		  (strlen(needle_q_text) + 3) / 4 + (strlen(content) + 3) / 4);
	/* ttft + 7 tokens at 10 per second */
	CHECK_INT(r.delay_ns, 100000000LL + 700000000LL);
	cJSON_Delete(j);
	free(content);
	sim_reply_release(&r);
	/* array content parts, several messages: prompt tokens count them all */
	{
		const char *b2 = "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":"
				 "\"abcd\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\","
				 "\"text\":\"Question: what is the code of item-5?\"},{\"type\":"
				 "\"text\",\"text\":\"Text:\\nthe code of item-5 is c35\"}]}]}";
		CHECK_INT(sim_handle(s, b2, strlen(b2), &r), 0);
		CHECK_INT(r.status, 200);
		content = completion_content(r.body, r.len, NULL, &j);
		CHECK_STR(content, "the code of item-5 is c35");
		CHECK_STR(json_str(j, "id"), "simcmpl-2");
		CHECK_INT(json_int(json_get(j, "usage"), "prompt_tokens", -1),
			  (4 + 37 + 31 + 3) / 4);
		cJSON_Delete(j);
		free(content);
		sim_reply_release(&r);
	}
	free(body);
	sim_free(s);
}

TEST(handle_max_tokens_truncates)
{
	struct sim *s = sim_of("");
	char *body, *content;
	struct sim_reply r;
	const char *finish;
	cJSON *j;
	const char *text = "Question: what is the motto of the élève?\n\nText:\n"
			   "the motto of the élève is été été été été\nother\n";
	body = request_body("m", text, "\"max_tokens\":3");
	CHECK_INT(sim_handle(s, body, strlen(body), &r), 0);
	content = completion_content(r.body, r.len, &finish, &j);
	CHECK_STR(finish, "length");
	CHECK(strlen(content) <= 12 && strlen(content) >= 10);
	CHECK(text_utf8_valid(content, strlen(content), NULL));
	CHECK(strncmp(content, "the motto", 9) == 0);
	CHECK_INT(json_int(json_get(j, "usage"), "completion_tokens", -1), 3);
	cJSON_Delete(j);
	free(content);
	sim_reply_release(&r);
	free(body);
	/* max_completion_tokens too; a limit that is not reached changes nothing */
	body = request_body("m", text, "\"max_completion_tokens\":1000");
	CHECK_INT(sim_handle(s, body, strlen(body), &r), 0);
	content = completion_content(r.body, r.len, &finish, &j);
	CHECK_STR(finish, "stop");
	CHECK_STR(content, "the motto of the élève is été été été été");
	cJSON_Delete(j);
	free(content);
	sim_reply_release(&r);
	free(body);
	sim_free(s);
}

TEST(handle_bad_requests_400)
{
	static const struct {
		const char *body, *msg;
	} cases[] = {
	    {"", "could not parse the JSON body"},
	    {"{", "could not parse the JSON body"},
	    {"{} x", "could not parse the JSON body"},
	    {"[]", "must be a JSON object"},
	    {"{}", "you must provide a model parameter"},
	    {"{\"model\":1,\"messages\":[]}", "invalid type for 'model'"},
	    {"{\"model\":\"m\"}", "missing required parameter: 'messages'"},
	    {"{\"model\":\"m\",\"messages\":{}}", "invalid type for 'messages'"},
	    {"{\"model\":\"m\",\"messages\":[]}", "empty array"},
	    {"{\"model\":\"m\",\"messages\":[1]}", "'messages[0]': expected an object"},
	    {"{\"model\":\"m\",\"messages\":[{\"content\":\"x\"}]}",
	     "missing required parameter: 'messages[0].role'"},
	    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":"
	     "\"robot\",\"content\":\"x\"}]}",
	     "invalid value for 'messages[1].role': 'robot'"},
	    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}]}",
	     "missing required parameter: 'messages[0].content'"},
	    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":5}]}",
	     "invalid type for 'messages[0].content'"},
	    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
	     "\"image_url\",\"image_url\":{}}]}]}",
	     "unsupported content part type 'image_url' in 'messages[0].content[0]'"},
	    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
	     "\"text\"}]}]}",
	     "missing required parameter: 'messages[0].content[0].text'"},
	    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[7]}]}",
	     "'messages[0].content[0].type'"},
	    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
	     "\"max_tokens\":0}",
	     "invalid value for 'max_tokens'"},
	    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
	     "\"max_completion_tokens\":\"9\"}",
	     "invalid value for 'max_completion_tokens'"},
	    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
	     "\"max_tokens\":2.5}",
	     "invalid value for 'max_tokens'"},
	    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
	     "\"stream\":\"yes\"}",
	     "invalid type for 'stream'"},
	    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
	     "\"stream_options\":{\"include_usage\":1}}",
	     "invalid value for 'stream_options'"},
	    {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}",
	     "not valid UTF-8"},
	};
	struct sim *s = sim_of("429=1"); /* an invalid request draws no fault */
	int64_t reqs, faults;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct sim_reply r;
		cJSON *j, *e;
		CHECK_INT(sim_handle(s, cases[i].body, strlen(cases[i].body), &r), 0);
		CHECK_MSG(r.status == 400, "case %zu: status %d", i, r.status);
		CHECK_INT(r.delay_ns, 0);
		j = json_parse(r.body, r.len);
		CHECK(j);
		e = json_get(j, "error");
		CHECK_STR(json_str(e, "type"), "invalid_request_error");
		CHECK(cJSON_IsNull(json_get(e, "param")) && cJSON_IsNull(json_get(e, "code")));
		CHECK_MSG(strstr(json_str(e, "message"), cases[i].msg),
			  "case %zu: message \"%s\", want \"%s\"", i, json_str(e, "message"),
			  cases[i].msg);
		cJSON_Delete(j);
		sim_reply_release(&r);
	}
	sim_counts(s, &reqs, &faults);
	CHECK_INT(reqs, ARRAY_SIZE(cases));
	CHECK_INT(faults, 0);
	sim_free(s);
}

TEST(handle_stream_sse)
{
	struct sim *s = sim_of("");
	struct buf t;
	char *body, *got, *plain;
	const char *finish;
	struct sim_reply r;
	bool usage;
	cJSON *j;
	buf_init(&t, 0);
	buf_puts(&t, "Question: what does the long line say about the ledger?\n\nText:\nshort\n"
		     "the long line about the ledger: ");
	for (int i = 0; i < 40; i++)
		buf_puts(&t, "ledger écrit 日本 ");
	buf_puts(&t, "\nend\n");
	/* the non-stream content first */
	body = request_body("m", t.p, NULL);
	CHECK_INT(sim_handle(s, body, strlen(body), &r), 0);
	plain = completion_content(r.body, r.len, NULL, &j);
	cJSON_Delete(j);
	sim_reply_release(&r);
	free(body);
	CHECK(strlen(plain) > 300);

	body =
	    request_body("m", t.p, "\"stream\":true,\"stream_options\":{\"include_usage\":true}");
	CHECK_INT(sim_handle(s, body, strlen(body), &r), 0);
	CHECK(r.stream);
	CHECK_INT(r.status, 200);
	got = sse_content(r.body, r.len, &finish, &usage);
	CHECK_STR(got, plain);
	CHECK_STR(finish, "stop");
	CHECK(usage);
	free(got);
	sim_reply_release(&r);
	free(body);

	/* without include_usage, and cut by max_tokens */
	body = request_body("m", t.p, "\"stream\":true,\"max_tokens\":20");
	CHECK_INT(sim_handle(s, body, strlen(body), &r), 0);
	got = sse_content(r.body, r.len, &finish, &usage);
	CHECK_STR(finish, "length");
	CHECK(!usage);
	CHECK(strlen(got) <= 80 && strncmp(got, plain, strlen(got)) == 0);
	free(got);
	sim_reply_release(&r);
	free(body);
	free(plain);
	buf_release(&t);
	sim_free(s);
}

/* The fault of each of n requests. */
static void fault_sequence(struct sim *s, int n, enum sim_fault *out)
{
	char *body = request_body("m", needle_q_text, NULL);
	for (int i = 0; i < n; i++) {
		struct sim_reply r;
		CHECK_INT(sim_handle(s, body, strlen(body), &r), 0);
		out[i] = r.fault;
		sim_reply_release(&r);
	}
	free(body);
}

TEST(faults_deterministic_by_seed)
{
	enum { N = 400 };
	static enum sim_fault a[N], b[N], c[N];
	const char *spec = "429=0.1,500=0.1,reset=0.1,malformed=0.1,slow=0.1,truncate=0.1,seed=5";
	struct sim *s1 = sim_of(spec), *s2 = sim_of(spec);
	struct sim *s3 = sim_of("429=0.1,500=0.1,reset=0.1,malformed=0.1,slow=0.1,truncate=0.1,"
				"seed=6");
	int count[SIM_TRUNCATE + 1] = {0};
	int64_t reqs, faults;
	fault_sequence(s1, N, a);
	fault_sequence(s2, N, b);
	fault_sequence(s3, N, c);
	CHECK(memcmp(a, b, sizeof(a)) == 0);
	CHECK(memcmp(a, c, sizeof(a)) != 0);
	for (int i = 0; i < N; i++)
		count[a[i]]++;
	for (int k = SIM_429; k <= SIM_TRUNCATE; k++)
		CHECK_MSG(count[k] > N / 20 && count[k] < N / 5, "fault %d: %d of %d", k, count[k],
			  N);
	CHECK(count[SIM_OK] > N / 4);
	sim_counts(s1, &reqs, &faults);
	CHECK_INT(reqs, N);
	CHECK_INT(faults, N - count[SIM_OK]);
	sim_free(s1);
	sim_free(s2);
	sim_free(s3);
}

TEST(faults_cap_and_zero_rate)
{
	enum sim_fault f[100];
	struct sim *s = sim_of("500=1,faults=5");
	int64_t reqs, faults;
	fault_sequence(s, 100, f);
	for (int i = 0; i < 100; i++)
		CHECK_INT(f[i], i < 5 ? SIM_500 : SIM_OK);
	sim_counts(s, &reqs, &faults);
	CHECK_INT(reqs, 100);
	CHECK_INT(faults, 5);
	sim_free(s);
	s = sim_of("seed=99");
	fault_sequence(s, 100, f);
	for (int i = 0; i < 100; i++)
		CHECK_INT(f[i], SIM_OK);
	sim_free(s);
	s = sim_of("500=1,faults=0");
	fault_sequence(s, 10, f);
	for (int i = 0; i < 10; i++)
		CHECK_INT(f[i], SIM_OK);
	sim_free(s);
}

TEST(faults_each_kind)
{
	static const struct {
		const char *spec;
		int status;
		enum sim_fault fault;
	} cases[] = {
	    {"429=1,retry_after=1.2,retry_after_ms=50,ttft=30", 429, SIM_429},
	    {"500=1,ttft=30", 500, SIM_500},
	    {"reset=1,ttft=30", 0, SIM_RESET},
	    {"malformed=1,ttft=30", 200, SIM_MALFORMED},
	    {"slow=1,slow_ms=40,ttft=30", 200, SIM_SLOW},
	    {"truncate=1,ttft=30", 200, SIM_TRUNCATE},
	};
	char *body = request_body("m", needle_q_text, NULL);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct sim *s = sim_of(cases[i].spec);
		struct sim_reply r;
		cJSON *j;
		CHECK_INT(sim_handle(s, body, strlen(body), &r), 0);
		CHECK_MSG(r.fault == cases[i].fault, "%s: fault %d", cases[i].spec, r.fault);
		CHECK_MSG(r.status == cases[i].status, "%s: status %d", cases[i].spec, r.status);
		j = r.len ? json_parse(r.body, r.len) : NULL;
		switch (r.fault) {
		case SIM_429:
			CHECK_INT(r.retry_after_s, 2);
			CHECK_INT(r.retry_after_ms, 50);
			CHECK_INT(r.delay_ns, 30000000);
			CHECK_STR(json_str(json_get(j, "error"), "type"), "rate_limit_error");
			CHECK_STR(json_str(json_get(j, "error"), "code"), "rate_limit_exceeded");
			CHECK_STR(json_str(json_get(j, "error"), "message"),
				  "Rate limit reached (simulated)");
			break;
		case SIM_500:
			CHECK_INT(r.retry_after_s, -1);
			CHECK_INT(r.delay_ns, 30000000);
			CHECK_STR(json_str(json_get(j, "error"), "type"), "server_error");
			CHECK(cJSON_IsNull(json_get(json_get(j, "error"), "code")));
			break;
		case SIM_MALFORMED:
			CHECK(!j && r.len > 10);
			CHECK(r.body[0] == '{');
			break;
		case SIM_SLOW:
			CHECK(j);
			CHECK_INT(r.delay_ns, 70000000);
			break;
		case SIM_TRUNCATE:
			CHECK(j); /* the whole body: the server sends half of it */
			break;
		default:
			break;
		}
		cJSON_Delete(j);
		sim_reply_release(&r);
		sim_free(s);
	}
	free(body);
}

/* ---- the in-process provider ---- */

/* What sim_provider.perform answered, and the body it wrote. */
struct answer {
	struct llm_provider_resp r;
	struct buf body;
};

static void transport(struct sim *s, const char *text, long timeout_ms, const atomic_bool *cancel,
		      struct answer *a, int64_t *took_ns)
{
	char *body = request_body("sim", text, "\"stream\":true");
	int64_t t0 = time_now_ns();
	memset(a, 0, sizeof(*a));
	buf_init(&a->body, 64u << 20);
	a->r.body = &a->body;
	a->r.retry_after_ms = -1;
	sim_provider.perform(s, body, strlen(body), timeout_ms, cancel, &a->r);
	*took_ns = time_now_ns() - t0;
	free(body);
}

TEST(transport_replies_and_faults)
{
	struct sim *s = sim_of("ttft=20");
	struct answer resp;
	int64_t took;
	char *content;
	cJSON *j;
	transport(s, needle_q_text, 0, NULL, &resp, &took);
	CHECK_INT(resp.r.rc, 0);
	CHECK_INT(resp.r.status, 200);
	CHECK_INT(resp.r.retry_after_ms, -1);
	CHECK(took >= 20000000);
	/* never streams, even when asked */
	content = completion_content(resp.body.p, resp.body.len, NULL, &j);
	CHECK_STR(content, "the code of item-5 is c35");
	free(content);
	cJSON_Delete(j);
	buf_release(&resp.body);
	sim_free(s);

	s = sim_of("429=1,retry_after=3");
	transport(s, needle_q_text, 0, NULL, &resp, &took);
	CHECK_INT(resp.r.status, 429);
	CHECK_INT(resp.r.retry_after_ms, 3000);
	CHECK_CONTAINS(resp.body.p, "rate_limit_error");
	buf_release(&resp.body);
	sim_free(s);

	s = sim_of("429=1,retry_after=3,retry_after_ms=15");
	transport(s, needle_q_text, 0, NULL, &resp, &took);
	CHECK_INT(resp.r.retry_after_ms, 15);
	buf_release(&resp.body);
	sim_free(s);

	s = sim_of("reset=1");
	transport(s, needle_q_text, 0, NULL, &resp, &took);
	CHECK_INT(resp.r.rc, RLM_EHTTP);
	CHECK_STR(resp.r.err, "connection reset by peer (simulated)");
	buf_release(&resp.body);
	sim_free(s);

	s = sim_of("truncate=1");
	transport(s, needle_q_text, 0, NULL, &resp, &took);
	CHECK_INT(resp.r.rc, RLM_EHTTP);
	CHECK_CONTAINS(resp.r.err, "transfer closed with ");
	CHECK_CONTAINS(resp.r.err, " bytes remaining to read (simulated)");
	CHECK(resp.body.len > 0);
	buf_release(&resp.body);
	sim_free(s);
}

TEST(transport_timeout)
{
	struct sim *s = sim_of("ttft=5s");
	struct answer resp;
	int64_t took;
	transport(s, needle_q_text, 50, NULL, &resp, &took);
	CHECK_INT(resp.r.rc, RLM_ETIMEOUT);
	CHECK_STR(resp.r.err, "operation timed out after 50 ms (simulated)");
	CHECK_MSG(took >= 50000000 && took < 1000000000, "took %lld ns", (long long)took);
	buf_release(&resp.body);
	sim_free(s);
}

static void *cancel_later(void *arg)
{
	time_sleep_ns(40000000);
	atomic_store((atomic_bool *)arg, true);
	return NULL;
}

TEST(transport_cancel)
{
	struct sim *s = sim_of("ttft=5s");
	struct answer resp;
	atomic_bool cancel;
	pthread_t t;
	int64_t took;
	atomic_init(&cancel, false);
	pthread_create(&t, NULL, cancel_later, &cancel);
	transport(s, needle_q_text, 60000, &cancel, &resp, &took);
	pthread_join(t, NULL);
	CHECK_INT(resp.r.rc, RLM_ECANCEL);
	CHECK_MSG(took >= 40000000 && took < 1000000000, "took %lld ns", (long long)took);
	buf_release(&resp.body);
	sim_free(s);
}

/* The simulator as rlm_models_init sets it up, by name through the
 * provider registry: what `rlm solve` with no model, --provider sim,
 * --model sim and --sim SPEC make. */
TEST(models_setup_finds_the_simulator)
{
	struct rlm_models_cfg mc;
	struct rlm_models ms;
	struct rlm_err err = {0, ""};
	struct llm_call c;
	struct llm_msg msg = {LLM_USER, needle_q_text, strlen(needle_q_text)};
	int64_t reqs;
	sim_provider_register();
	rlm_models_cfg_init(&mc);
	mc.quiet = true;
	CHECK_MSG(rlm_models_init(&ms, &mc, &err) == 0, "%s", err.msg);
	CHECK_INT(ms.kind, LLM_INPROC);
	CHECK_STR(ms.provider, "sim");
	CHECK(ms.inproc == &sim_provider && ms.impl);
	CHECK_STR(llm_model_name(ms.model), "sim");
	CHECK_STR(llm_model_provider(ms.model), "sim");
	CHECK_STR(llm_model_cache_id(ms.model), "sim:seed=1,code_errors=0,chunk=0,rlm_chunks=128");
	CHECK_INT(llm_model_context_window(ms.model), 32000);
	llm_call_init(&c, ms.sub, &msg, 1);
	CHECK_MSG(llm_pool_call(ms.pool, &c) == 0, "%s", c.error);
	CHECK_STR(c.text, "the code of item-5 is c35");
	CHECK(c.cost == 0);
	llm_call_release(&c);
	sim_counts(ms.impl, &reqs, NULL);
	CHECK_INT(reqs, 1);
	rlm_models_release(&ms);

	/* --provider sim --model gpt-5 --sim SPEC: the simulator plays gpt-5 */
	mc.provider = "sim";
	mc.model = "gpt-5";
	mc.provider_spec = "seed=7,chunk=5000";
	CHECK_MSG(rlm_models_init(&ms, &mc, &err) == 0, "%s", err.msg);
	CHECK_STR(llm_model_name(ms.model), "gpt-5");
	CHECK_STR(llm_model_cache_id(ms.model), "sim:seed=7,code_errors=0,chunk=5000,rlm_chunks=128");
	rlm_models_release(&ms);
	mc.provider_spec = "seed=x";
	CHECK_INT(rlm_models_init(&ms, &mc, &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "seed");

	/* --model sim with a --base-url: a sim-serve server, over HTTP */
	rlm_models_cfg_init(&mc);
	mc.model = "sim";
	mc.base_url = "http://127.0.0.1:9/v1";
	CHECK_MSG(rlm_models_init(&ms, &mc, &err) == 0, "%s", err.msg);
	CHECK_INT(ms.kind, LLM_OPENAI);
	CHECK_STR(ms.provider, "openai");
	CHECK(ms.impl == NULL);
	CHECK_STR(llm_model_cache_id(ms.model), "openai:sim@[http://127.0.0.1:9/v1]");
	rlm_models_release(&ms);

	/* a sim sub-model needs a sim root */
	rlm_models_cfg_init(&mc);
	mc.model = "gpt-5";
	mc.openai_api_key = "sk-test";
	mc.sub_model = "sim";
	CHECK_INT(rlm_models_init(&ms, &mc, &err), RLM_EINVAL);
	CHECK_STR(err.msg, "the sub-model 'sim' needs the root model to be 'sim' too");
}

/* ---- rlm sim-serve over HTTP ---- */

struct http {
	CURLcode rc;
	long status;
	struct buf body;
	char retry_after[32];
	char retry_after_ms[32];
	char ctype[64];
	int64_t first_byte_ns, last_byte_ns; /* since the start */
	int64_t t0;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct http *h = arg;
	int64_t t = time_now_ns() - h->t0;
	if (!h->first_byte_ns)
		h->first_byte_ns = t;
	h->last_byte_ns = t;
	buf_append(&h->body, p, size * n);
	return size * n;
}

static void header_value(const char *line, size_t n, const char *name, char *out, size_t outlen)
{
	size_t k = strlen(name);
	if (n > k + 1 && strncasecmp(line, name, k) == 0 && line[k] == ':') {
		const char *v = line + k + 1;
		size_t vn = n - k - 1;
		while (vn && (*v == ' '))
			v++, vn--;
		while (vn && (v[vn - 1] == '\r' || v[vn - 1] == '\n'))
			vn--;
		snprintf(out, outlen, "%.*s", (int)vn, v);
	}
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct http *h = arg;
	header_value(p, size * n, "Retry-After", h->retry_after, sizeof(h->retry_after));
	header_value(p, size * n, "retry-after-ms", h->retry_after_ms, sizeof(h->retry_after_ms));
	header_value(p, size * n, "Content-Type", h->ctype, sizeof(h->ctype));
	return size * n;
}

static void http_setup(CURL *e, struct http *h, int port, const char *method, const char *path,
		       const char *body)
{
	char url[256];
	memset(h, 0, sizeof(*h));
	buf_init(&h->body, 0);
	buf_puts(&h->body, "");
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, h);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	if (body) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	} else {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, NULL);
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	}
	h->t0 = time_now_ns();
}

static struct http http_do(int port, const char *method, const char *path, const char *body)
{
	struct http h;
	CURL *e = curl_easy_init();
	http_setup(e, &h, port, method, path, body);
	h.rc = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &h.status);
	curl_easy_cleanup(e);
	return h;
}

/* An error reply: JSON {"error": {"message", "type"}}. */
static void check_json_error(struct http *h, long status, const char *type, const char *msg)
{
	cJSON *j;
	CHECK_MSG(h->rc == CURLE_OK, "curl: %s", curl_easy_strerror(h->rc));
	CHECK_MSG(h->status == status, "status %ld, want %ld: %s", h->status, status, h->body.p);
	CHECK_STR(h->ctype, "application/json");
	j = json_parse(h->body.p, h->body.len);
	CHECK_MSG(j, "not JSON: %s", h->body.p);
	CHECK_STR(json_str(json_get(j, "error"), "type"), type);
	CHECK_CONTAINS(json_str(json_get(j, "error"), "message"), msg);
	cJSON_Delete(j);
}

TEST(serve_chat_models_health)
{
	int port;
	pid_t pid;
	struct http h;
	char *body = request_body("sim", needle_q_text, NULL), *content;
	cJSON *j;
	curl_global_init(CURL_GLOBAL_ALL);
	pid = proc_sim_serve("ttft=1", &port);
	h = http_do(port, "POST", "/v1/chat/completions", body);
	CHECK_INT(h.rc, CURLE_OK);
	CHECK_INT(h.status, 200);
	CHECK_STR(h.ctype, "application/json");
	content = completion_content(h.body.p, h.body.len, NULL, &j);
	CHECK_STR(content, "the code of item-5 is c35");
	CHECK_STR(json_str(j, "model"), "sim");
	free(content);
	cJSON_Delete(j);
	buf_release(&h.body);

	h = http_do(port, "POST", "/chat/completions", body);
	CHECK_INT(h.status, 200);
	CHECK_CONTAINS(h.body.p, "the code of item-5 is c35");
	buf_release(&h.body);

	h = http_do(port, "GET", "/v1/models", NULL);
	CHECK_INT(h.status, 200);
	CHECK_STR(h.body.p, "{\"object\":\"list\",\"data\":[{\"id\":\"sim\",\"object\":\"model\","
			    "\"created\":0,\"owned_by\":\"rlm\"}]}");
	buf_release(&h.body);
	h = http_do(port, "GET", "/healthz", NULL);
	CHECK_INT(h.status, 200);
	CHECK_STR(h.body.p, "{\"status\":\"ok\"}");
	buf_release(&h.body);
	CHECK_INT(proc_stop(pid), 0);
	free(body);
}

/* Content-Length of a body that is never sent: the server refuses first. */
static size_t read_zeros(char *p, size_t size, size_t n, void *arg)
{
	(void)arg;
	memset(p, ' ', size * n);
	return size * n;
}

TEST(serve_errors_json)
{
	int port;
	pid_t pid;
	struct http h;
	curl_global_init(CURL_GLOBAL_ALL);
	pid = proc_sim_serve("", &port);
	h = http_do(port, "GET", "/nope", NULL);
	check_json_error(&h, 404, "not_found", "no route for GET /nope");
	buf_release(&h.body);
	h = http_do(port, "POST", "/v2/anything", "{}");
	check_json_error(&h, 404, "not_found", "no route for POST /v2/anything");
	buf_release(&h.body);
	h = http_do(port, "GET", "/v1/chat/completions", NULL);
	check_json_error(&h, 405, "method_not_allowed", "method GET not allowed");
	buf_release(&h.body);
	h = http_do(port, "POST", "/v1/models", "{}");
	check_json_error(&h, 405, "method_not_allowed", "method POST not allowed");
	buf_release(&h.body);
	h = http_do(port, "POST", "/v1/chat/completions", "{\"model\":\"m\"}");
	check_json_error(&h, 400, "invalid_request_error", "'messages'");
	buf_release(&h.body);
	h = http_do(port, "POST", "/v1/chat/completions", "");
	check_json_error(&h, 400, "invalid_request_error", "could not parse the JSON body");
	buf_release(&h.body);
	{
		CURL *e = curl_easy_init();
		struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
		http_setup(e, &h, port, "POST", "/v1/chat/completions", NULL);
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, NULL);
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, read_zeros);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(64 << 20) + 1);
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, hd);
		h.rc = curl_easy_perform(e);
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &h.status);
		curl_easy_cleanup(e);
		curl_slist_free_all(hd);
		/* curl may see the close while it still sends: the reply counts */
		if (h.rc == CURLE_SEND_ERROR && h.status == 413)
			h.rc = CURLE_OK;
		check_json_error(&h, 413, "invalid_request_error", "larger than the limit");
		buf_release(&h.body);
	}
	CHECK_INT(proc_stop(pid), 0);
}

TEST(serve_stream_sse)
{
	int port;
	pid_t pid;
	struct http h;
	char *body, *got;
	const char *finish;
	bool usage;
	curl_global_init(CURL_GLOBAL_ALL);
	pid = proc_sim_serve("ttft=150ms,tps=100", &port);
	body = request_body("sim", needle_q_text,
			    "\"stream\":true,\"stream_options\":{\"include_usage\":true}");
	h = http_do(port, "POST", "/v1/chat/completions", body);
	CHECK_INT(h.rc, CURLE_OK);
	CHECK_INT(h.status, 200);
	CHECK_STR(h.ctype, "text/event-stream");
	got = sse_content(h.body.p, h.body.len, &finish, &usage);
	CHECK_STR(got, "the code of item-5 is c35");
	CHECK_STR(finish, "stop");
	CHECK(usage);
	/* the first event after ttft, the last 7 tokens / 100 per s later */
	CHECK_MSG(h.first_byte_ns >= 140000000, "first byte after %lld ns",
		  (long long)h.first_byte_ns);
	CHECK_MSG(h.last_byte_ns - h.first_byte_ns >= 50000000, "events %lld ns apart",
		  (long long)(h.last_byte_ns - h.first_byte_ns));
	CHECK_MSG(h.last_byte_ns < 1000000000, "last byte after %lld ns",
		  (long long)h.last_byte_ns);
	free(got);
	buf_release(&h.body);
	free(body);
	CHECK_INT(proc_stop(pid), 0);
}

TEST(serve_faults_at_the_socket)
{
	int port;
	pid_t pid;
	struct http h;
	char *body = request_body("sim", needle_q_text, NULL);
	curl_global_init(CURL_GLOBAL_ALL);

	pid = proc_sim_serve("reset=1", &port);
	h = http_do(port, "POST", "/v1/chat/completions", body);
	CHECK_MSG(h.rc == CURLE_RECV_ERROR || h.rc == CURLE_GOT_NOTHING, "reset: curl %d %s", h.rc,
		  curl_easy_strerror(h.rc));
	CHECK_INT(h.body.len, 0);
	buf_release(&h.body);
	CHECK_INT(proc_stop(pid), 0);

	pid = proc_sim_serve("truncate=1", &port);
	h = http_do(port, "POST", "/v1/chat/completions", body);
	CHECK_MSG(h.rc == CURLE_PARTIAL_FILE, "truncate: curl %d %s", h.rc,
		  curl_easy_strerror(h.rc));
	CHECK_INT(h.status, 200);
	CHECK(h.body.len > 0 && !json_parse(h.body.p, h.body.len));
	buf_release(&h.body);
	CHECK_INT(proc_stop(pid), 0);

	pid = proc_sim_serve("429=1,retry_after=2", &port);
	h = http_do(port, "POST", "/v1/chat/completions", body);
	check_json_error(&h, 429, "rate_limit_error", "Rate limit reached (simulated)");
	CHECK_STR(h.retry_after, "2");
	CHECK_STR(h.retry_after_ms, "");
	buf_release(&h.body);
	CHECK_INT(proc_stop(pid), 0);

	pid = proc_sim_serve("429=1,retry_after=0,retry_after_ms=20,faults=1", &port);
	h = http_do(port, "POST", "/v1/chat/completions", body);
	CHECK_INT(h.status, 429);
	CHECK_STR(h.retry_after, "0");
	CHECK_STR(h.retry_after_ms, "20");
	buf_release(&h.body);
	h = http_do(port, "POST", "/v1/chat/completions", body); /* the cap reached */
	CHECK_INT(h.status, 200);
	buf_release(&h.body);
	CHECK_INT(proc_stop(pid), 0);

	pid = proc_sim_serve("500=1", &port);
	h = http_do(port, "POST", "/v1/chat/completions", body);
	check_json_error(&h, 500, "server_error", "(simulated)");
	buf_release(&h.body);
	CHECK_INT(proc_stop(pid), 0);

	pid = proc_sim_serve("malformed=1", &port);
	h = http_do(port, "POST", "/v1/chat/completions", body);
	CHECK_INT(h.rc, CURLE_OK);
	CHECK_INT(h.status, 200);
	CHECK(h.body.len > 0 && !json_parse(h.body.p, h.body.len));
	buf_release(&h.body);
	CHECK_INT(proc_stop(pid), 0);
	free(body);
}

/* 200 sequential requests on one keep-alive connection: with a Nagle stall
 * (~40 ms each) this takes 8 s; without, a few ms each. */
TEST(serve_keepalive_fast)
{
	int port;
	pid_t pid;
	CURL *e;
	struct buf prompt;
	char *body;
	long conns = 0, total_conns = 0;
	int64_t t0, dt;
	curl_global_init(CURL_GLOBAL_ALL);
	pid = proc_sim_serve("", &port);
	buf_init(&prompt, 0);
	buf_printf(&prompt, leaf_head, "what is the code of item-5?");
	while (prompt.len < 16000)
		buf_puts(&prompt, "a line of filler text about nothing in particular at all\n");
	buf_puts(&prompt, "the code of item-5 is c35\n");
	body = request_body("sim", prompt.p, NULL);
	e = curl_easy_init();
	t0 = time_now_ns();
	for (int i = 0; i < 200; i++) {
		struct http h;
		http_setup(e, &h, port, "POST", "/v1/chat/completions", body);
		h.rc = curl_easy_perform(e);
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &h.status);
		curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &conns);
		total_conns += conns;
		CHECK_MSG(h.rc == CURLE_OK && h.status == 200, "request %d: %s %ld", i,
			  curl_easy_strerror(h.rc), h.status);
		CHECK_CONTAINS(h.body.p, "the code of item-5 is c35");
		buf_release(&h.body);
	}
	dt = time_now_ns() - t0;
	fprintf(stderr, "  200 keep-alive requests: %.1f ms (%.2f ms each), %ld connection(s)\n",
		(double)dt / 1e6, (double)dt / 2e8, total_conns);
	CHECK_INT(total_conns, 1);
	CHECK_MSG(dt < 2000000000, "took %lld ms", (long long)(dt / 1000000));
	curl_easy_cleanup(e);
	free(body);
	buf_release(&prompt);
	CHECK_INT(proc_stop(pid), 0);
}

/* 1000 requests at once, each with 100 ms of modelled latency: one thread
 * per connection serves them together. */
TEST(serve_many_concurrent)
{
	enum { N = 1000 };
	int port, running = 0, done = 0;
	pid_t pid;
	CURLM *m;
	static CURL *e[N];
	static struct http h[N];
	char *body = request_body("sim", needle_q_text, NULL);
	int64_t t0, dt;
	CURLMsg *msg;
	curl_global_init(CURL_GLOBAL_ALL);
	pid = proc_sim_serve("ttft=100ms", &port);
	m = curl_multi_init();
	curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0L);
	for (int i = 0; i < N; i++) {
		e[i] = curl_easy_init();
		http_setup(e[i], &h[i], port, "POST", "/v1/chat/completions", body);
		curl_easy_setopt(e[i], CURLOPT_PRIVATE, &h[i]);
		curl_multi_add_handle(m, e[i]);
	}
	t0 = time_now_ns();
	do {
		curl_multi_perform(m, &running);
		while ((msg = curl_multi_info_read(m, &(int){0}))) {
			struct http *hh;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&hh);
			curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &hh->status);
			hh->rc = msg->data.result;
			done++;
		}
		if (running)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	} while (running);
	dt = time_now_ns() - t0;
	fprintf(stderr, "  %d concurrent requests (100 ms each): %.1f ms\n", N, (double)dt / 1e6);
	CHECK_INT(done, N);
	for (int i = 0; i < N; i++) {
		CHECK_MSG(h[i].rc == CURLE_OK && h[i].status == 200, "request %d: %s %ld", i,
			  curl_easy_strerror(h[i].rc), h[i].status);
		CHECK_CONTAINS(h[i].body.p, "the code of item-5 is c35");
		buf_release(&h[i].body);
		curl_multi_remove_handle(m, e[i]);
		curl_easy_cleanup(e[i]);
	}
	curl_multi_cleanup(m);
	CHECK_MSG(dt < 5000000000LL * slow_factor(), "took %lld ms", (long long)(dt / 1000000));
	free(body);
	CHECK_INT(proc_stop(pid), 0);
}

TEST(serve_signals_exit_zero)
{
	int port, st = 0;
	pid_t pid = proc_sim_serve("ttft=5s", &port);
	/* SIGINT while a request sleeps in a handler */
	pid_t client = fork();
	if (client == 0) {
		struct http h;
		char *body = request_body("sim", needle_q_text, NULL);
		h = http_do(port, "POST", "/v1/chat/completions", body);
		_exit(h.rc == CURLE_OK ? 0 : 1);
	}
	time_sleep_ns(200000000);
	kill(pid, SIGINT);
	for (int i = 0; i < 300 && waitpid(pid, &st, WNOHANG) != pid; i++)
		time_sleep_ns(10000000);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	kill(client, SIGKILL);
	waitpid(client, NULL, 0);
	pid = proc_sim_serve("", &port);
	CHECK_INT(proc_stop(pid), 0); /* SIGTERM */
}

TEST(serve_command_line)
{
	const char *bin = harness_rlm_bin();
	struct proc_out o;
	int port;
	pid_t pid;
	char ps[16];
	{
		const char *argv[] = {bin, "sim-serve", "--help", NULL};
		CHECK_INT(proc_run(argv, NULL, NULL, 10, &o), 0);
		CHECK_INT(o.status, 0);
		CHECK_CONTAINS(o.out, "usage: rlm sim-serve");
		CHECK_CONTAINS(o.out, "--ready-file");
		CHECK_CONTAINS(o.out, "retry_after_ms");
		proc_out_release(&o);
	}
	static const struct {
		const char *a, *b, *msg;
	} bad[] = {
	    {"--port", "x", "bad value 'x' for --port"},
	    {"--port", "70000", "bad value '70000' for --port"},
	    {"--sim", "warp=9", "unknown simulator option 'warp'"},
	    {"--sim", "429=2", "bad value '2' for simulator option '429'"},
	    {"--bogus", NULL, "unknown option '--bogus'"},
	    {"--port", NULL, "option '--port' needs a value"},
	    {"extra", NULL, "unexpected argument 'extra'"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		const char *argv[] = {bin, "sim-serve", bad[i].a, bad[i].b, NULL};
		CHECK_INT(proc_run(argv, NULL, NULL, 10, &o), 0);
		CHECK_MSG(o.status == 2, "%s: status %d", bad[i].a, o.status);
		CHECK_CONTAINS(o.err, "rlm: error: ");
		CHECK_CONTAINS(o.err, bad[i].msg);
		proc_out_release(&o);
	}
	/* RLM_SIM is the default spec */
	{
		const char *argv[] = {bin, "sim-serve", "--port", "0", NULL};
		const char *env[] = {"RLM_SIM=frob=1", NULL};
		CHECK_INT(proc_run(argv, NULL, env, 10, &o), 0);
		CHECK_INT(o.status, 2);
		CHECK_CONTAINS(o.err, "unknown simulator option 'frob'");
		proc_out_release(&o);
	}
	/* a port in use */
	pid = proc_sim_serve("", &port);
	snprintf(ps, sizeof(ps), "%d", port);
	{
		const char *argv[] = {bin, "sim-serve", "--port", ps, NULL};
		char want[96];
		CHECK_INT(proc_run(argv, NULL, NULL, 10, &o), 0);
		CHECK_INT(o.status, 1);
		snprintf(want, sizeof(want), "rlm: error: cannot listen on 127.0.0.1:%d: ", port);
		CHECK_CONTAINS(o.err, want);
		CHECK_CONTAINS(o.err, "in use");
		proc_out_release(&o);
	}
	CHECK_INT(proc_stop(pid), 0);
	/* the listening line, unless --quiet (killed by proc_run's timeout) */
	{
		const char *argv[] = {bin, "sim-serve", "--port", "0", NULL};
		CHECK_INT(proc_run(argv, NULL, NULL, 1, &o), 0);
		CHECK_CONTAINS(o.err, "rlm sim-serve: listening on http://127.0.0.1:");
		CHECK_CONTAINS(o.err, "/v1\n");
		proc_out_release(&o);
	}
}

/* A one-message chat: the question is the context's last line (the root
 * prompt says so). Step 1 prints that line; step 2 asks it, not the
 * words of the prompt. */
TEST(root_reads_a_question_at_the_end_of_the_context)
{
	static const char prompt[] =
	    "The question is in the context, at its end: the context is the user's message, "
	    "whose last part says what to answer. Read the end of `context` first to find the "
	    "question, then answer it from the rest of the context.";
	struct convo c;
	char *r, *code;
	convo_init(&c, prompt, "a str of 120 characters (about 30 tokens)", "200,000");
	r = root_reply("seed=1", &c);
	code = code_of(r);
	CHECK_CONTAINS(code, "# step 1");
	CHECK_CONTAINS(code, "question line:");
	convo_turn(&c, r,
		   "type: str length: 120\nlines: 4\nsample: 'Lab notes. The rig 9 key is KX-2231.'\n"
		   "documents: 1 such as notes\nquestion line: Which key opens rig 9?\n",
		   false);
	free(code);
	free(r);
	r = root_reply("seed=1", &c);
	code = code_of(r);
	CHECK_CONTAINS(code, "# step 2");
	CHECK_CONTAINS(code, "q = \"Which key opens rig 9?\"");
	CHECK(!strstr(code, "Read the end of"));
	free(code);
	free(r);
	convo_release(&c);
}
