/* SPDX-License-Identifier: MIT */
/* tests/test_scale.c -- contexts at scale through the whole loop: the root
 * model's first message stays small whatever the number of documents, and
 * multi-byte UTF-8 reaches the worker as the same characters. The root
 * model is a fake server on loopback with scripted replies (its recorded
 * requests are what the model was sent); the worker is real. */
#include "harness.h"
#include "fakesrv.h"
#include "../bench/bench.h"
#include "../common/json.h"
#include "../sim/sim.h"
#include "../rlm/rlm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct env {
	struct fakesrv *srv; /* the root model */
	struct sim *sim;     /* the sub-model */
	struct llm_model *root, *sub;
	struct llm_pool *pool;
	struct rlm_opts o;
	struct rlm_result r;
	struct rlm_err err;
};

/* Script the root model's next reply. */
static void says(struct env *v, const char *content)
{
	char *body = fakesrv_chat_body(content, "stop", 100, 20);
	struct fake_reply r = {200, NULL, body, FAKE_NORMAL, 0};
	fakesrv_push(v->srv, &r);
	free(body);
}

static void env_init(struct env *v)
{
	struct llm_model_cfg rc = {0}, sc = {0};
	struct llm_pool_cfg pc = {16};
	struct sim_cfg simc;
	char base[160];
	memset(v, 0, sizeof(*v));
	v->srv = fakesrv_start();
	CHECK(v->srv);
	snprintf(base, sizeof(base), "%s/v1", fakesrv_url(v->srv));
	rc.kind = LLM_OPENAI;
	rc.name = "root-m";
	rc.base_urls = base;
	rc.max_retries = 0;
	rc.context_window = 100000;
	v->root = llm_model_new(&rc, &v->err);
	CHECK_MSG(v->root, "%s", v->err.msg);
	sim_cfg_default(&simc);
	v->sim = sim_new(&simc);
	sc.kind = LLM_INPROC;
	sc.name = "sim";
	sc.provider = &sim_provider;
	sc.impl = v->sim;
	sc.max_retries = 0;
	v->sub = llm_model_new(&sc, &v->err);
	CHECK_MSG(v->sub, "%s", v->err.msg);
	v->pool = llm_pool_new(&pc, &v->err);
	CHECK(v->pool);
	v->o.strategy = RLM_REPL;
	v->o.pool = v->pool;
	v->o.model = v->root;
	v->o.sub_model = v->sub;
	v->o.params = (struct llm_params)LLM_PARAMS_DEFAULT;
}

static void env_free(struct env *v)
{
	rlm_result_release(&v->r);
	llm_pool_free(v->pool);
	llm_model_free(v->root);
	llm_model_free(v->sub);
	fakesrv_stop(v->srv);
	sim_free(v->sim);
}

/* The content of message k (k < 0: from the end) of root request i, fresh. */
static char *message(struct env *v, size_t i, int k)
{
	const struct fake_request *q = fakesrv_request(v->srv, i);
	cJSON *j, *msgs, *m;
	char *text;
	CHECK_MSG(q, "no request %zu", i);
	j = json_parse(q->body, q->body_len);
	CHECK_MSG(j, "request %zu is not JSON", i);
	msgs = json_get(j, "messages");
	m = cJSON_GetArrayItem(msgs, k < 0 ? cJSON_GetArraySize(msgs) + k : k);
	CHECK_MSG(m && json_str(m, "content"), "request %zu has no message %d", i, k);
	text = xstrdup(json_str(m, "content"));
	cJSON_Delete(j);
	return text;
}

/* Solve with two scripted root replies: `code` in a repl block, then
 * FINAL(done); return the REPL output the second root call was sent. */
static char *run_code(struct env *v, const struct corpus *ctx, const char *code)
{
	char *reply = xasprintf("```repl\n%s\n```", code);
	says(v, reply);
	says(v, "FINAL(done)");
	free(reply);
	CHECK_MSG(rlm_solve(&v->o, "What is in the context?", ctx, &v->r, &v->err) == 0, "%s",
		  v->err.msg);
	CHECK_STR(v->r.answer, "done");
	CHECK_INT(fakesrv_count(v->srv), 2);
	return message(v, 1, -1);
}

/* ---- the metadata message ---- */

TEST(metadata_of_100k_documents_stays_small)
{
	struct env v;
	struct buf b;
	struct corpus *c = NULL;
	struct rlm_err err = {0, ""};
	char *first, *out;
	env_init(&v);
	buf_init(&b, 0);
	for (int i = 0; i < 100000; i++)
		buf_printf(&b, "{\"id\": %d, \"text\": \"note %d: %.*s\"}\n", i, i, i % 40 + 1,
			   "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
	CHECK_INT(corpus_from_jsonl_buf("notes.jsonl", b.p, b.len, &c, &err), 0);
	CHECK_INT(c->n_docs, 100000);
	out = run_code(&v, c, "print(len(context), context[99999][:10])");
	first = message(&v, 0, 1);
	CHECK_CONTAINS(first, "a list of 100,000 documents (str)");
	CHECK_CONTAINS(first, "the first 10 lengths: ");
	CHECK_MSG(strlen(first) < 2048, "the first user message has %zu bytes", strlen(first));
	printf("     first user message for 100,000 documents: %zu bytes\n", strlen(first));
	/* No text of any document, and no document name either. */
	CHECK(strstr(first, "note 7") == NULL);
	CHECK(strstr(first, "abcdef") == NULL);
	CHECK_CONTAINS(out, "100000 note 99999");
	free(first);
	free(out);
	corpus_free(c);
	buf_release(&b);
	env_free(&v);
}

/* ---- multi-byte UTF-8 ---- */

/* Code points of s[0..len) and their sum, decoded by hand. */
static void code_points(const char *s, size_t len, size_t *n, uint64_t *sum)
{
	const unsigned char *p = (const unsigned char *)s;
	*n = 0;
	*sum = 0;
	for (size_t i = 0; i < len;) {
		uint32_t c = p[i];
		size_t k = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
		if (k > 1)
			c &= 0x3f >> (k - 1);
		for (size_t j = 1; j < k; j++)
			c = (c << 6) | (p[i + j] & 0x3f);
		*sum += c;
		(*n)++;
		i += k;
	}
}

TEST(utf8_text_reaches_the_worker_as_the_same_characters)
{
	static const char text[] = "naïve café, Straße — 東京の寿司 🍣 and 𝄞 music\n"
				   "Ελληνικά, русский, עברית, العربية ✓\n";
	struct env v;
	struct corpus *c = corpus_from_text(text, sizeof(text) - 1);
	size_t chars;
	uint64_t sum;
	char *out, want[128];
	env_init(&v);
	code_points(text, sizeof(text) - 1, &chars, &sum);
	CHECK(chars < sizeof(text) - 1); /* multi-byte indeed */
	out = run_code(&v, c,
		       "print(len(context), len(context.encode('utf-8')), sum(map(ord, context)), "
		       "context[21:25], ord(context[27]), ord(context[33]))");
	snprintf(want, sizeof(want), "%zu %zu %llu ", chars, sizeof(text) - 1,
		 (unsigned long long)sum);
	CHECK_CONTAINS(out, want);
	/* Slices are by characters: the worker's indices are code points. */
	CHECK_INT(chars, 77);
	CHECK_CONTAINS(out, " 東京の寿 127843 119070\n");
	free(out);
	corpus_free(c);
	env_free(&v);
}

TEST(utf8_generated_documents_round_trip)
{
	struct env v;
	struct sniah_opts so;
	struct sniah_item it;
	struct corpus *c = NULL;
	struct corpus_opts co = {.kind = CORPUS_AUTO, .quiet = true};
	struct rlm_err err = {0, ""};
	char *dir = xasprintf("%s/docs", harness_tmpdir()), *out, want[160];
	size_t n_docs, needle_doc, chars = 0;
	uint64_t sum = 0;
	env_init(&v);
	bench_sniah_opts_default(&so);
	so.tokens = 50000;
	so.seed = 3;
	so.utf8 = true;
	CHECK_INT(bench_sniah_write(&so, SNIAH_DIR, 20, dir, &it, &n_docs, &needle_doc), 0);
	CHECK_INT(corpus_load(dir, &co, &c, &err), 0);
	CHECK_INT(c->n_docs, n_docs);
	for (size_t i = 0; i < c->n_docs; i++) {
		size_t n;
		uint64_t s;
		code_points(c->buf + c->docs[i].off, c->docs[i].len, &n, &s);
		chars += n;
		sum += s;
	}
	CHECK(chars < c->len - c->n_docs); /* multi-byte indeed */
	out = run_code(&v, c,
		       "print(len(context), sum(len(d) for d in context), "
		       "sum(len(d.encode('utf-8')) for d in context), "
		       "sum(sum(map(ord, d)) for d in context), '\\ufffd' in ''.join(context))");
	snprintf(want, sizeof(want), "%zu %zu %zu %llu False\n", c->n_docs, chars,
		 c->len - c->n_docs, (unsigned long long)sum);
	CHECK_CONTAINS(out, want);
	free(out);
	free(dir);
	corpus_free(c);
	env_free(&v);
}
