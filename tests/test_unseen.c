/* SPDX-License-Identifier: MIT */
/* tests/test_unseen.c -- the simulator's root policy, every branch of it,
 * on text that `rlm bench gen` does not write (tests/gen_other.h): the real
 * rlm binary, real sandboxed workers, the answers checked against what the
 * generator says, which the solve never sees.
 *
 * A case checks the root's part first (what it searched, what it read),
 * then the answer, so a failure says which of the two went wrong
 * (NEEDS_SUB_MODEL_FIX names the sub-model's). */
#include "harness.h"
#include "gen_other.h"
#include "proc.h"
#include "../common/common.h"
#include "../common/json.h"
#include "../common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A case whose root part passed and whose answer is still wrong: the
 * sub-model (sim/sim_policy.c) failed on this text, which it must not. */
#define NEEDS_SUB_MODEL_FIX(why) harness_fail(__FILE__, __LINE__, "the sub-model failed: %s", why)

/* Run `rlm solve -c ctx -q q --json --quiet --no-cache [extra...]` and
 * return its result, checked to be JSON with exit 0. */
static cJSON *solve(const char *ctx, const char *q, const char *const *extra)
{
	const char *args[32] = {"solve", "-c", ctx, "-q", q, "--json", "--quiet", "--no-cache"};
	struct proc_out o;
	size_t n = 8;
	cJSON *j;
	for (size_t i = 0; extra && extra[i] && n < 31; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	o = proc_rlm(args, NULL, 300);
	CHECK_MSG(o.status == 0, "%s: exit %d: %s", q, o.status, o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "%s: not JSON: %.300s", q, o.out);
	proc_out_release(&o);
	return j;
}

/* The code and the output of every turn of j and of its child RLMs. */
static void trajectory(const cJSON *j, struct buf *code, struct buf *out)
{
	const cJSON *t, *bl, *c;
	cJSON_ArrayForEach(t, json_get(j, "turns"))
	{
		cJSON_ArrayForEach(bl, json_get(t, "blocks"))
		{
			const char *s = json_str(bl, "code"), *o = json_str(bl, "output");
			buf_puts(code, s ? s : "");
			buf_puts(out, o ? o : "");
			buf_putc(out, '\n');
		}
	}
	cJSON_ArrayForEach(c, json_get(j, "children")) trajectory(c, code, out);
}

static long long input_tokens(const cJSON *j)
{
	return (long long)json_int(json_get(j, "usage"), "input_tokens", -1);
}

/* What the sub-calls read: the root's own prompts (about 6,000 tokens a
 * solve, whatever the context) left out. */
static long long sub_tokens(const cJSON *j)
{
	return (long long)json_int(json_get(json_get(j, "usage_by_role"), "sub"), "input_tokens",
				   -1);
}

/* What one solve showed, for the checks. */
struct seen {
	cJSON *j;
	const char *answer;
	struct buf code, out;
	long long tokens; /* input tokens of the whole solve */
	long long sub;	  /* ... of its sub-calls */
};

static void run(struct seen *s, const char *ctx, const char *q, const char *const *extra)
{
	s->j = solve(ctx, q, extra);
	s->answer = json_str(s->j, "answer");
	CHECK(s->answer);
	buf_init(&s->code, 0);
	buf_init(&s->out, 0);
	buf_puts(&s->code, "");
	buf_puts(&s->out, "");
	trajectory(s->j, &s->code, &s->out);
	s->tokens = input_tokens(s->j);
	s->sub = sub_tokens(s->j);
	fprintf(stderr, "  %s -> '%.80s': %lld input tokens, %lld by sub-calls\n", q, s->answer,
		s->tokens, s->sub);
	if (getenv("TEST_VERBOSE"))
		fprintf(stderr, "%s\n", s->out.p);
}

static void seen_release(struct seen *s)
{
	cJSON_Delete(s->j);
	buf_release(&s->code);
	buf_release(&s->out);
}

/* Whether every line of want is in got. */
static bool has_every_line(const char *got, const char *want)
{
	char *w = xstrdup(want), *save = NULL;
	bool ok = true;
	for (char *l = strtok_r(w, "\n", &save); l && ok; l = strtok_r(NULL, "\n", &save))
		ok = strstr(got, l) != NULL;
	free(w);
	return ok;
}

/* The probe of step 1 shows the context's type, size and documents. */
static void check_probe(const struct seen *s, const char *type)
{
	char *want = xasprintf("type: %s length: ", type);
	CHECK_CONTAINS(s->out.p, want);
	CHECK_CONTAINS(s->out.p, "documents: ");
	CHECK_CONTAINS(s->code.p, "# step 1: look at the context");
	free(want);
}

static void make(enum gen_other_kind kind, struct gen_other *g)
{
	char *dir = xasprintf("%s/corpus", harness_tmpdir());
	gen_other_make(kind, 18, dir, g);
	free(dir);
}

/* ---- the generator itself ---- */

TEST(generator_repeats_and_hides_nothing_in_the_question)
{
	struct gen_other a, b;
	char *da = xasprintf("%s/a", harness_tmpdir()), *db = xasprintf("%s/b", harness_tmpdir());
	for (int k = GEN_OTHER_CHANGELOG; k <= GEN_OTHER_LOGS; k++) {
		gen_other_make((enum gen_other_kind)k, 18, da, &a);
		gen_other_make((enum gen_other_kind)k, 18, db, &b);
		CHECK(a.bytes > 10000);
		CHECK_INT(a.bytes, b.bytes);
		for (int i = 0; i < GEN_OTHER_QS && a.qs[i].question; i++) {
			CHECK_STR(a.qs[i].question, b.qs[i].question);
			CHECK_STR(a.qs[i].answer, b.qs[i].answer);
			/* the question never gives its answer away */
			CHECK(!strstr(a.qs[i].question, a.qs[i].answer));
		}
		gen_other_release(&a);
		gen_other_release(&b);
	}
	free(da);
	free(db);
}

TEST(generator_shapes)
{
	struct gen_other g;
	char *text = NULL;
	size_t len, longest = 0, run = 0;
	struct rlm_err err = {0, ""};
	make(GEN_OTHER_LONG, &g);
	CHECK_INT(file_read(g.context, 64 << 20, &text, &len, &err), 0);
	for (size_t i = 0; i < len; i++) {
		run = text[i] == '\n' ? 0 : run + 1;
		longest = run > longest ? run : longest;
	}
	CHECK(longest >= 40000);
	CHECK(strstr(text, "Zürich") && strstr(text, "🏛"));
	CHECK(!text_utf8_valid(text, len, NULL) == false);
	free(text);
	gen_other_release(&g);
}

/* ---- filter first: a distinctive literal is searched for ---- */

/* A version number in a natural question: the root searches for the
 * number (whole) and reads the one line that holds it. */
TEST(filter_version_number_in_changelog)
{
	struct gen_other g;
	struct seen s;
	make(GEN_OTHER_CHANGELOG, &g);
	run(&s, g.context, g.qs[0].question, NULL);
	check_probe(&s, "str");
	/* Node.js, Deno and Bun all had a 20.0.0: the rarest term, then the
	 * line that holds both */
	CHECK_CONTAINS(s.out.p, "search 'Node.js': 192 hits in 1 documents\n"
				"search '20.0.0': 3 hits in 1 documents\n"
				"1 of them hold every term\n");
	CHECK_CONTAINS(s.out.p, "1 chunks, 1 answers");
	if (strcmp(s.answer, g.qs[0].answer) != 0 && !strstr(s.answer, g.qs[0].answer)) {
		/* the root read the right line; the sub-model did not answer */
		seen_release(&s);
		gen_other_release(&g);
		NEEDS_SUB_MODEL_FIX("'On what date was Node.js 20.0.0 released?' phrasing");
	}
	/* one line read, not 100 KB of changelog */
	CHECK(s.sub < (long long)g.bytes / 4 / 20);
	seen_release(&s);
	gen_other_release(&g);
}

/* The terse form of the same question ("Node.js 20.0.0 release date?"):
 * the same search, the same line. */
TEST(filter_version_number_terse)
{
	struct gen_other g;
	struct seen s;
	make(GEN_OTHER_CHANGELOG, &g);
	run(&s, g.context, g.qs[1].question, NULL);
	CHECK_CONTAINS(s.out.p, "1 of them hold every term\n1 chunks, 1 answers");
	if (!strstr(s.answer, g.qs[1].answer)) {
		fprintf(stderr, "  got '%s', want '%s'\n", s.answer, g.qs[1].answer);
		seen_release(&s);
		gen_other_release(&g);
		NEEDS_SUB_MODEL_FIX("a version line 'Node.js 20.0.0 — DATE' answered NONE");
	}
	CHECK(s.sub < (long long)g.bytes / 4 / 20);
	seen_release(&s);
	gen_other_release(&g);
}

/* A non-ASCII name in a paragraph of 40 KB: the search finds it, and the
 * window around the hit (not the head of the line) is what is read. */
TEST(filter_non_ascii_name_in_long_line)
{
	struct gen_other g;
	struct seen s;
	make(GEN_OTHER_LONG, &g);
	run(&s, g.context, g.qs[0].question, NULL);
	check_probe(&s, "str");
	/* "café" is everywhere, "Zürich" once */
	CHECK_CONTAINS(s.out.p, "search 'Zürich': 1 hits in 1 documents\n");
	CHECK_CONTAINS(s.out.p, "1 chunks, 1 answers");
	CHECK_MSG(strstr(s.answer, g.qs[0].answer), "answer '%s', want '%s'", s.answer,
		  g.qs[0].answer);
	CHECK_MSG(s.sub < (long long)g.bytes / 4 / 20, "%lld tokens of %zu bytes", s.sub, g.bytes);
	seen_release(&s);
	gen_other_release(&g);
}

/* The same, answered with the sentence (or a short window around the
 * terms), not with the 500 characters of the hit's window from its head. */
TEST(filter_long_line_answer_is_the_sentence)
{
	struct gen_other g;
	struct seen s;
	make(GEN_OTHER_LONG, &g);
	run(&s, g.context, g.qs[0].question, NULL);
	CHECK_MSG(strstr(s.answer, g.qs[0].answer), "answer '%s', want '%s'", s.answer,
		  g.qs[0].answer);
	if (strlen(s.answer) > 200) {
		fprintf(stderr, "  got %zu bytes: '%.120s...'\n", strlen(s.answer), s.answer);
		seen_release(&s);
		gen_other_release(&g);
		NEEDS_SUB_MODEL_FIX("a long line answered from its head, not the sentence");
	}
	seen_release(&s);
	gen_other_release(&g);
}

/* Which document, by an identifier: the one file that holds it, named,
 * and its source. */
TEST(filter_which_file_by_code)
{
	struct gen_other g;
	struct seen s;
	const cJSON *src;
	make(GEN_OTHER_TABLES, &g);
	run(&s, g.context, g.qs[1].question, NULL);
	check_probe(&s, "list");
	CHECK_CONTAINS(s.out.p, "hits in 1 documents");
	CHECK_CONTAINS(s.code.p, "# step 3: name the document");
	CHECK_STR(s.answer, g.qs[1].answer);
	src = json_get(s.j, "sources");
	CHECK_INT(cJSON_GetArraySize(src), 1);
	CHECK_STR(json_str(cJSON_GetArrayItem(src, 0), "doc"), g.qs[1].answer);
	CHECK(s.sub < (long long)g.bytes / 4 / 20);
	seen_release(&s);
	gen_other_release(&g);
}

/* The filter-first branches over other seeds: the same answers. */
TEST(filter_over_many_seeds)
{
	for (uint64_t seed = 1; seed <= 6; seed++) {
		static const enum gen_other_kind kinds[] = {GEN_OTHER_TABLES, GEN_OTHER_LOGS};
		for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
			struct gen_other g;
			struct seen s;
			char *dir = xasprintf("%s/seed%d-%zu", harness_tmpdir(), (int)seed, k);
			gen_other_make(kinds[k], seed, dir, &g);
			run(&s, g.context, g.qs[1].question, NULL);
			CHECK_MSG(!strcmp(s.answer, g.qs[1].answer), "seed %d: '%s', want '%s'",
				  (int)seed, s.answer, g.qs[1].answer);
			seen_release(&s);
			gen_other_release(&g);
			free(dir);
		}
	}
}

/* Which record, by a non-ASCII place name, in JSONL. */
TEST(filter_which_record_by_non_ascii_name)
{
	struct gen_other g;
	struct seen s;
	make(GEN_OTHER_LOGS, &g);
	run(&s, g.context, g.qs[1].question, NULL);
	check_probe(&s, "list");
	CHECK_CONTAINS(s.out.p, "search 'Ærøskøbing': 1 hits in 1 documents");
	CHECK_STR(s.answer, g.qs[1].answer);
	CHECK(s.sub < (long long)g.bytes / 4 / 20);
	seen_release(&s);
	gen_other_release(&g);
}

/* Which record, by a phrase in curly quotes: searched ignoring case. */
TEST(filter_which_record_by_quoted_phrase)
{
	struct gen_other g;
	struct seen s;
	make(GEN_OTHER_LOGS, &g);
	run(&s, g.context, g.qs[2].question, NULL);
	CHECK_CONTAINS(s.out.p, "search 'pumps running': 1 hits in 1 documents");
	CHECK_STR(s.answer, g.qs[2].answer);
	CHECK(s.sub < (long long)g.bytes / 4 / 20);
	seen_release(&s);
	gen_other_release(&g);
}

/* How many, by an identifier: the lines that hold it are counted, and the
 * counts added up in Python. */
TEST(filter_how_many_of_an_identifier)
{
	struct gen_other g;
	struct seen s;
	make(GEN_OTHER_LOGS, &g);
	run(&s, g.context, g.qs[3].question, NULL);
	CHECK_CONTAINS(s.out.p, "search 'svc_kestrel': 5 hits in 5 documents");
	CHECK_CONTAINS(s.code.p, "# step 3: add up the counts");
	CHECK_STR(s.answer, g.qs[3].answer);
	CHECK(s.sub < (long long)g.bytes / 4 / 20);
	/* the sources of a count: every record counted */
	CHECK_INT(cJSON_GetArraySize(json_get(s.j, "sources")), 5);
	seen_release(&s);
	gen_other_release(&g);
}

/* The same asked as people do. */
TEST(filter_how_many_of_an_identifier_natural_phrasing)
{
	struct gen_other g;
	struct seen s;
	make(GEN_OTHER_LOGS, &g);
	run(&s, g.context, g.qs[4].question, NULL);
	CHECK_CONTAINS(s.out.p, "search 'svc_kestrel': 5 hits in 5 documents");
	if (strcmp(s.answer, g.qs[4].answer) != 0) {
		fprintf(stderr, "  got '%s', want '%s'\n", s.answer, g.qs[4].answer);
		seen_release(&s);
		gen_other_release(&g);
		NEEDS_SUB_MODEL_FIX("'How many errors did X log?' counts only lines holding 'log'");
	}
	seen_release(&s);
	gen_other_release(&g);
}

/* "all" of something, by an identifier: every value, from the lines that
 * hold it. */
TEST(filter_all_values_of_an_identifier)
{
	struct gen_other g;
	struct seen s;
	make(GEN_OTHER_LOGS, &g);
	run(&s, g.context, g.qs[0].question, NULL);
	CHECK_CONTAINS(s.out.p, "search 'svc_kestrel': 5 hits in 5 documents");
	CHECK_CONTAINS(s.code.p, "# step 3: gather every answer");
	CHECK_MSG(has_every_line(s.answer, g.qs[0].answer), "answer '%s', want every one of\n%s",
		  s.answer, g.qs[0].answer);
	CHECK(s.sub < (long long)g.bytes / 4 / 20);
	seen_release(&s);
	gen_other_release(&g);
}

/* Several keys in one question, listed: the lines of each are read, each
 * asked about its key alone, and the answer lists every value. */
TEST(filter_several_keys_listed)
{
	struct gen_other g;
	struct seen s;
	make(GEN_OTHER_TABLES, &g);
	run(&s, g.context, g.qs[2].question, NULL);
	CHECK_CONTAINS(s.out.p, "search 'QX-");
	CHECK_CONTAINS(s.code.p, "# the question lists them: the lines of each");
	/* one question per key, over the one row that holds it */
	CHECK_CONTAINS(s.out.p, "3 chunks, one question per key");
	CHECK_CONTAINS(s.code.p, "key_qs = [\"List the quantities of parts QX-");
	if (!has_every_line(s.answer, g.qs[2].answer)) {
		fprintf(stderr, "  got '%s', want\n%s\n", s.answer, g.qs[2].answer);
		seen_release(&s);
		gen_other_release(&g);
		NEEDS_SUB_MODEL_FIX("several keys per question answered NONE, and "
				    "'List the quantities of parts QX-N.' over its row too");
	}
	seen_release(&s);
	gen_other_release(&g);
}

/* Which files, for two codes: each code's row asked about alone, both
 * files named, each a source. */
TEST(filter_several_keys_which_files)
{
	struct gen_other g;
	struct seen s;
	make(GEN_OTHER_TABLES, &g);
	run(&s, g.context, g.qs[4].question, NULL);
	CHECK_CONTAINS(s.out.p, "2 chunks, one question per key\n2 chunks, 2 answers, 2 found");
	CHECK_STR(s.answer, g.qs[4].answer);
	CHECK_INT(cJSON_GetArraySize(json_get(s.j, "sources")), 2);
	CHECK(s.sub < (long long)g.bytes / 4 / 20);
	seen_release(&s);
	gen_other_release(&g);
}

/* ---- no key: chunks and llm_query_batched ---- */

/* A question with no literal to search for: every chunk is asked; two
 * chunks answer (the vault and a distractor about the harbour gate), so
 * step 3 combines them with one llm_query. */
TEST(chunks_and_combine_without_a_key)
{
	struct gen_other g;
	struct seen s;
	const char *extra[] = {"--sim", "chunk=20000", NULL};
	make(GEN_OTHER_PROSE, &g);
	run(&s, g.context, g.qs[0].question, extra);
	check_probe(&s, "str");
	CHECK(!strstr(s.out.p, "search '"));
	CHECK_CONTAINS(s.code.p, "llm_query_batched(prompts)");
	CHECK_CONTAINS(s.out.p, "2 found");
	CHECK_CONTAINS(s.code.p, "final = llm_query(");
	CHECK_MSG(strstr(s.answer, g.qs[0].answer), "answer '%s', want '%s'\n%s", s.answer,
		  g.qs[0].answer, s.out.p);
	seen_release(&s);
	gen_other_release(&g);
}

/* How many, no key, over a directory of markdown tables: each chunk
 * counts, step 3 adds up in Python. */
TEST(chunks_how_many_sum)
{
	struct gen_other g;
	struct seen s;
	const char *extra[] = {"--sim", "chunk=8000", NULL};
	make(GEN_OTHER_TABLES, &g);
	run(&s, g.context, g.qs[0].question, extra);
	CHECK(!strstr(s.out.p, "search '"));
	CHECK_CONTAINS(s.code.p, "# step 3: add up the counts");
	CHECK_CONTAINS(s.out.p, "6 chunks, 6 answers, 6 found");
	CHECK_MSG(!strcmp(s.answer, g.qs[0].answer), "answer '%s', want '%s'\n%s", s.answer,
		  g.qs[0].answer, s.out.p);
	seen_release(&s);
	gen_other_release(&g);
}

/* The same with a noun that no row holds ("parts"). */
TEST(chunks_how_many_sum_natural_phrasing)
{
	struct gen_other g;
	struct seen s;
	const char *extra[] = {"--sim", "chunk=8000", NULL};
	make(GEN_OTHER_TABLES, &g);
	run(&s, g.context, g.qs[3].question, extra);
	CHECK_CONTAINS(s.code.p, "# step 3: add up the counts");
	if (strcmp(s.answer, g.qs[3].answer) != 0) {
		fprintf(stderr, "  got '%s', want '%s'\n", s.answer, g.qs[3].answer);
		seen_release(&s);
		gen_other_release(&g);
		NEEDS_SUB_MODEL_FIX("'How many parts ...' counts only lines holding 'part'");
	}
	seen_release(&s);
	gen_other_release(&g);
}

/* No key, lines of 40 KB: the chunks cut through the lines, and the
 * needle 36 KB into one must still be found. */
TEST(chunks_long_lines_without_a_key)
{
	struct gen_other g;
	struct seen s;
	make(GEN_OTHER_LONG, &g);
	run(&s, g.context, g.qs[1].question, NULL);
	CHECK(!strstr(s.out.p, "search '"));
	CHECK_CONTAINS(s.code.p, "llm_query_batched(prompts)");
	if (!strstr(s.answer, g.qs[1].answer)) {
		fprintf(stderr, "  got '%.200s', want '%s'\n", s.answer, g.qs[1].answer);
		seen_release(&s);
		gen_other_release(&g);
		NEEDS_SUB_MODEL_FIX("lines over 1,000 bytes answered with their head");
	}
	seen_release(&s);
	gen_other_release(&g);
}

/* ---- past rlm_chunks: child RLMs ---- */

TEST(children_past_rlm_chunks)
{
	struct gen_other g;
	struct seen s;
	const char *extra[] = {"--sim", "chunk=5000,rlm_chunks=8", NULL};
	make(GEN_OTHER_PROSE, &g);
	run(&s, g.context, g.qs[0].question, extra);
	CHECK_CONTAINS(s.out.p, "child RLMs");
	CHECK_CONTAINS(s.code.p, "rlm_query_batched(");
	CHECK(cJSON_GetArraySize(json_get(s.j, "children")) >= 8);
	CHECK_MSG(strstr(s.answer, g.qs[0].answer), "answer '%s', want '%s'", s.answer,
		  g.qs[0].answer);
	seen_release(&s);
	gen_other_release(&g);
}

/* A directory past rlm_chunks: child RLMs take runs of whole files, each
 * counts its rows, and the root adds their counts up. */
TEST(children_how_many_over_a_directory)
{
	struct gen_other g;
	struct seen s;
	const char *extra[] = {"--sim", "chunk=3000,rlm_chunks=4", NULL};
	make(GEN_OTHER_TABLES, &g);
	run(&s, g.context, g.qs[0].question, extra);
	CHECK_CONTAINS(s.out.p, "child RLMs");
	CHECK(cJSON_GetArraySize(json_get(s.j, "children")) >= 4);
	CHECK_CONTAINS(s.code.p, "# step 3: add up the counts");
	CHECK_MSG(!strcmp(s.answer, g.qs[0].answer), "answer '%s', want '%s'\n%s", s.answer,
		  g.qs[0].answer, s.out.p);
	seen_release(&s);
	gen_other_release(&g);
}

/* ---- error recovery ---- */

/* Steps written with bugs half the time: the tracebacks are read and the
 * step written again; the answer is the same. */
TEST(code_errors_recovered)
{
	struct gen_other g;
	struct seen s;
	int seen_error = 0;
	make(GEN_OTHER_LOGS, &g);
	for (int seed = 1; seed <= 6 && !seen_error; seed++) {
		char spec[64];
		const char *extra[] = {"--sim", spec, NULL};
		snprintf(spec, sizeof(spec), "code_errors=0.5,seed=%d", seed);
		run(&s, g.context, g.qs[1].question, extra);
		seen_error = strstr(s.out.p, "Error") != NULL;
		CHECK_STR(s.answer, g.qs[1].answer);
		seen_release(&s);
	}
	CHECK_MSG(seen_error, "no seed drew a bug");
	gen_other_release(&g);
}

/* ---- /usr/include ---- */

/* Issue 18: the question as a user types it, over the real headers. */
TEST(which_header_defines_epollexclusive)
{
	struct seen s;
	char *path, *text = NULL;
	size_t len;
	struct rlm_err err = {0, ""};
	if (access("/usr/include/linux/eventpoll.h", R_OK) != 0)
		SKIP("no /usr/include/linux/eventpoll.h");
	run(&s, "/usr/include", "Which header defines EPOLLEXCLUSIVE?", NULL);
	CHECK_CONTAINS(s.out.p, "search 'EPOLLEXCLUSIVE': ");
	path = xasprintf("/usr/include/%s", s.answer);
	CHECK_MSG(file_read(path, 64 << 20, &text, &len, &err) == 0, "%s: %s", path, err.msg);
	CHECK_MSG(strstr(text, "define EPOLLEXCLUSIVE"), "%s does not define it", path);
	CHECK(s.tokens > 0 && s.tokens < 1000000);
	free(text);
	free(path);
	seen_release(&s);
}
