/* SPDX-License-Identifier: MIT */
/* tests/test_store.c -- the SQLite store: keys, the call and result caches,
 * runs and events, resume's view of killed runs, 64 threads at once, the
 * cache in front of a real pool of 64 workers, two processes writing at
 * once, kill -9 while committing, corrupt, locked, newer and missing
 * files, upkeep, and the lookup and event rates. */
#include "harness.h"
#include "fakesrv.h"
#include "../rlm/solve_int.h"
#include "../store/store.h"
#include "../common/json.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_LSAN 1
#endif
#endif
#ifdef HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

/* ---- helpers ---- */

/* Under ASan, fail the test when it leaked: the forked child ends with
 * _exit, which skips LeakSanitizer's own check. */
static void check_no_leaks(void)
{
#ifdef HAVE_LSAN
	CHECK_MSG(__lsan_do_recoverable_leak_check() == 0, "memory leaked (see above)");
#endif
}

/* A fresh path in this test's scratch directory (removed after the test). */
static char *tpath(const char *name)
{
	char *d = xasprintf("%s/store-%d", harness_tmpdir(), (int)getpid());
	char *p;
	if (mkdir(d, 0700) < 0 && errno != EEXIST)
		CHECK_MSG(0, "mkdir %s: %s", d, strerror(errno));
	p = xasprintf("%s/%s", d, name);
	free(d);
	return p;
}

static int open_rc(const char *path, bool ro, int busy_ms, struct store **s, struct rlm_err *e)
{
	struct store_cfg cfg = {path, ro, busy_ms};
	rlm_err_clear(e);
	*s = NULL;
	return store_open(&cfg, s, e);
}

static struct store *open_ok(const char *path)
{
	struct rlm_err e;
	struct store *s;
	int rc = open_rc(path, false, 0, &s, &e);
	CHECK_MSG(rc == 0 && s, "store_open '%s': %d %s", path, rc, e.msg);
	return s;
}

static struct llm_model *model_of(const char *name, const char *urls, const char *key)
{
	struct llm_model_cfg cfg = {0};
	struct rlm_err e = {0, ""};
	struct llm_model *m;
	cfg.kind = LLM_OPENAI;
	cfg.name = name;
	cfg.base_urls = urls;
	cfg.api_key = key;
	m = llm_model_new(&cfg, &e);
	CHECK_MSG(m, "llm_model_new: %s", e.msg);
	return m;
}

static void key_n(struct store_key *k, int64_t i)
{
	struct store_kb kb;
	store_kb_init(&kb, "test/1");
	store_kb_i64(&kb, i);
	store_kb_final(&kb, k);
}

static bool key_eq(const struct store_key *a, const struct store_key *b)
{
	return memcmp(a->b, b->b, sizeof(a->b)) == 0;
}

/* Store text under k as a successful call with usage (n, 2n, 3n, 4n). */
static int put_text(struct store *s, const struct store_key *k, const char *text, size_t len,
		    int64_t n, struct rlm_err *e)
{
	struct store_reply r;
	int rc;
	memset(&r, 0, sizeof(r));
	r.text = xstrndup(text, len);
	memcpy(r.text, text, len); /* keep NULs inside */
	r.len = len;
	r.finish = xstrdup("stop");
	r.usage.input_tokens = n;
	r.usage.output_tokens = 2 * n;
	r.usage.cached_tokens = 3 * n;
	r.usage.cache_write_tokens = 4 * n;
	r.cost = 0.5 * (double)n;
	rc = store_call_put(s, k, "test-model", &r, e);
	store_reply_release(&r);
	return rc;
}

/* The text stored under k (malloc'd), or NULL on a miss. */
static char *get_text(struct store *s, const struct store_key *k)
{
	struct store_reply r;
	struct rlm_err e = {0, ""};
	char *t;
	int rc;
	rc = store_call_get(s, k, &r, &e);
	CHECK_MSG(rc >= 0, "store_call_get: %d %s", rc, e.msg);
	if (rc == 0) {
		CHECK(r.text == NULL && r.finish == NULL);
		return NULL;
	}
	t = r.text;
	r.text = NULL;
	store_reply_release(&r);
	return t;
}

/* The text stored under key_n(n) is want. */
static void check_text(struct store *s, int64_t n, const char *want)
{
	struct store_key k;
	char *t;
	key_n(&k, n);
	t = get_text(s, &k);
	CHECK_STR(t, want);
	free(t);
}

static double secs_since(int64_t t0)
{
	return (double)(time_now_ns() - t0) / 1e9;
}

static void write_random(const char *path, size_t n)
{
	unsigned char *b = xmalloc(n);
	FILE *f;
	for (size_t got = 0; got < n;) {
		ssize_t k = getrandom(b + got, n - got, 0);
		CHECK(k > 0);
		got += (size_t)k;
	}
	f = fopen(path, "wb");
	CHECK(f);
	CHECK(fwrite(b, 1, n, f) == n);
	fclose(f);
	free(b);
}

static sqlite3 *raw_open(const char *path)
{
	sqlite3 *db = NULL;
	CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	return db;
}

static void raw_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
	CHECK_MSG(rc == SQLITE_OK, "%s: %s", sql, msg ? msg : "?");
}

static int64_t raw_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v;
	CHECK_INT(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	CHECK_INT(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void stats_ok(struct store *s, struct store_stats *st)
{
	struct rlm_err e = {0, ""};
	int rc = store_stats(s, st, &e);
	CHECK_MSG(rc == 0, "store_stats: %d %s", rc, e.msg);
}

/* ---- keys ---- */

struct keyreq {
	struct llm_model *model;
	struct llm_msg msgs[3];
	size_t n;
	struct llm_params p;
};

static void key_of(const struct keyreq *r, struct store_key *k)
{
	struct llm_call c;
	llm_call_init(&c, r->model, r->msgs, r->n);
	c.params = r->p;
	rlm_store_call_key(&c, k);
}

TEST(keys_cover_what_changes_the_answer)
{
	static const char *const stop1[] = {"END"}, *const stop2[] = {"END", "X"},
				 *const stop3[] = {"ENE"};
	struct llm_model *m =
		model_of("gpt-x", "http://127.0.0.3:9/v1,http://127.0.0.2:9/v1", "k1");
	/* the same servers: another order, a repeat, spelt another way,
	 * with credentials in the URL, another API key */
	struct llm_model *same = model_of(
		"gpt-x", "http://u:p@127.0.0.2:9/v1/, http://127.0.0.3:9/v1,http://127.0.0.2:9/v1",
		"k2");
	struct llm_model *other = model_of("gpt-y", "http://127.0.0.3:9/v1,http://127.0.0.2:9/v1",
					   "k1");
	/* another server serving the same model name (vLLM and OpenRouter) */
	struct llm_model *elsewhere = model_of("gpt-x", "http://127.0.0.2:9/v1", "k1");
	struct llm_model *def = model_of("gpt-x", NULL, "k1");
	struct llm_model *def2 = model_of("gpt-x", "https://API.openai.com:443/v1", "k2");
	struct keyreq base = {m, {{LLM_SYSTEM, "sys", 3}, {LLM_USER, "hello", 5}}, 2,
			      LLM_PARAMS_DEFAULT};
	struct keyreq r;
	struct store_key k0, k;
	char hex[33];

	base.p.max_tokens = 100;
	base.p.temperature = 0.5;
	base.p.stop = stop1;
	base.p.n_stop = 1;
	key_of(&base, &k0);
	key_of(&base, &k);
	CHECK(key_eq(&k0, &k));

	/* The API key, and the order or spelling of the endpoints, do not
	 * change the answer. */
	r = base;
	r.model = same;
	key_of(&r, &k);
	CHECK(key_eq(&k0, &k));
	CHECK_STR(llm_model_cache_id(same), "openai:gpt-x@[http://127.0.0.2:9/v1,"
					    "http://127.0.0.3:9/v1]");
	/* The provider's default endpoint is the id it always was. */
	CHECK_STR(llm_model_cache_id(def), "openai:gpt-x");
	CHECK_STR(llm_model_cache_id(def2), "openai:gpt-x");
	/* A query may hold a key: the id (kept in the store, shown by rlm runs)
	 * has a digest of it, its secret values left out (like an API key,
	 * they do not change the answer), which still tells others apart. */
	{
		struct llm_model *q1 = model_of("gpt-x", "http://gw:9/v1?api_key=SECRET1&v=1", "k1");
		struct llm_model *q2 = model_of("gpt-x", "http://gw:9/v1?api_key=SECRET2&v=1", "k1");
		struct llm_model *q3 = model_of("gpt-x", "http://gw:9/v1?api_key=SECRET1&v=2", "k1");
		const char *id1 = llm_model_cache_id(q1);
		CHECK(!strstr(id1, "SECRET"));
		CHECK_CONTAINS(id1, "openai:gpt-x@[http://gw:9/v1?~");
		CHECK_STR(llm_model_cache_id(q2), id1);
		CHECK(strcmp(id1, llm_model_cache_id(q3)) != 0);
		llm_model_free(q1);
		llm_model_free(q2);
		llm_model_free(q3);
	}

	/* Every field that does. */
#define DIFFERS(stmt)                                                                              \
	do {                                                                                       \
		r = base;                                                                          \
		stmt;                                                                              \
		key_of(&r, &k);                                                                    \
		CHECK_MSG(!key_eq(&k0, &k), "same key after %s", #stmt);                           \
	} while (0)
	DIFFERS(r.model = other);
	DIFFERS(r.model = elsewhere);
	DIFFERS(r.model = def);
	DIFFERS(r.model = NULL);
	DIFFERS(r.n = 1);
	DIFFERS((r.msgs[2] = (struct llm_msg){LLM_USER, "", 0}, r.n = 3));
	DIFFERS(r.msgs[1].role = LLM_ASSISTANT);
	DIFFERS(r.msgs[1].text = "hellp");
	DIFFERS(r.msgs[1].len = 4);
	DIFFERS(r.p.max_tokens = 101);
	DIFFERS(r.p.max_tokens = 0);
	DIFFERS(r.p.temperature = 0.7);
	DIFFERS(r.p.temperature = -1);
	DIFFERS(r.p.top_p = 0.9);
	DIFFERS(r.p.n_stop = 0);
	DIFFERS((r.p.stop = stop2, r.p.n_stop = 2));
	DIFFERS(r.p.stop = stop3);
	DIFFERS(r.p.extra_json = "{}");
	DIFFERS(r.p.extra_json = "{\"seed\":1}");
#undef DIFFERS

	/* Length prefixes: the split between messages matters. */
	{
		struct keyreq a = base, b = base;
		struct store_key ka, kb2;
		a.msgs[0] = (struct llm_msg){LLM_USER, "ab", 2};
		a.msgs[1] = (struct llm_msg){LLM_USER, "c", 1};
		b.msgs[0] = (struct llm_msg){LLM_USER, "a", 1};
		b.msgs[1] = (struct llm_msg){LLM_USER, "bc", 2};
		key_of(&a, &ka);
		key_of(&b, &kb2);
		CHECK(!key_eq(&ka, &kb2));
	}
	/* A negative temperature is "not sent", whatever its value. */
	r = base;
	r.p.temperature = -1;
	key_of(&r, &k0);
	r.p.temperature = -0.25;
	key_of(&r, &k);
	CHECK(key_eq(&k0, &k));

	store_key_hex(&k, hex);
	CHECK_INT(strlen(hex), 32);
	CHECK(strspn(hex, "0123456789abcdef") == 32);
	llm_model_free(m);
	llm_model_free(same);
	llm_model_free(other);
	llm_model_free(elsewhere);
	llm_model_free(def);
	llm_model_free(def2);
	check_no_leaks();
}

/* The keys of known calls, as computed before the store took structs of
 * its own (when store_call_key read a struct llm_call): they are the rows
 * of every store made since, and must never change (a change is a new
 * domain, "call/2"). Through rlm's converter and through the store's own
 * structs. */
TEST(call_keys_are_pinned)
{
	static const char *const stop[] = {"END", "\n\n"};
	static const char full_hex[] = "e8fd787f9893402de1e0ad82f9004232",
			  minimal_hex[] = "7d1ea985ae50377d3193c6e1ad037fc0",
			  default_hex[] = "e4deb7503419b5a2d32fd72233eec182";
	struct llm_model *m = model_of("gpt-x", "http://127.0.0.2:9/v1", "k1");
	struct llm_msg msgs[4] = {{LLM_SYSTEM, "You are terse.", 14},
				  {LLM_USER, "What is 2+2?", 12},
				  {LLM_ASSISTANT, "4", 1},
				  {LLM_USER, "And 3+3?", 8}};
	struct store_msg smsgs[4] = {{0, "You are terse.", 14},
				     {1, "What is 2+2?", 12},
				     {2, "4", 1},
				     {1, "And 3+3?", 8}};
	struct store_call_req q = {0};
	struct llm_call c;
	struct store_key k;
	char hex[33];

	CHECK_INT(LLM_SYSTEM, 0);
	CHECK_INT(LLM_USER, 1);
	CHECK_INT(LLM_ASSISTANT, 2);
	CHECK_STR(llm_model_cache_id(m), "openai:gpt-x@[http://127.0.0.2:9/v1]");

	/* every field set */
	llm_call_init(&c, m, msgs, 4);
	c.params.max_tokens = 256;
	c.params.temperature = 0.5;
	c.params.top_p = -1;
	c.params.stop = stop;
	c.params.n_stop = 2;
	c.params.extra_json = "{\"seed\":7}";
	rlm_store_call_key(&c, &k);
	store_key_hex(&k, hex);
	CHECK_STR(hex, full_hex);
	q = (struct store_call_req){.model_id = "openai:gpt-x@[http://127.0.0.2:9/v1]",
				    .msgs = smsgs,
				    .n_msgs = 4,
				    .max_tokens = 256,
				    .temperature = 0.5,
				    .top_p = -1,
				    .stop = stop,
				    .n_stop = 2,
				    .extra_json = "{\"seed\":7}"};
	store_call_key(&q, &k);
	store_key_hex(&k, hex);
	CHECK_STR(hex, full_hex);

	/* no model, one message, the default parameters */
	llm_call_init(&c, NULL, msgs + 1, 1);
	rlm_store_call_key(&c, &k);
	store_key_hex(&k, hex);
	CHECK_STR(hex, minimal_hex);
	q = (struct store_call_req){.msgs = smsgs + 1, .n_msgs = 1, .temperature = -1, .top_p = -1};
	store_call_key(&q, &k);
	store_key_hex(&k, hex);
	CHECK_STR(hex, minimal_hex);

	/* a negative temperature is "not sent", whatever its value */
	llm_call_init(&c, m, msgs + 1, 1);
	c.params.temperature = -7;
	rlm_store_call_key(&c, &k);
	store_key_hex(&k, hex);
	CHECK_STR(hex, default_hex);

	/* More messages than the converter keeps on its stack: the same key
	 * as the store's own structs give. */
	{
		enum { N = 40 };
		struct llm_msg lm[N];
		struct store_msg sm[N];
		struct store_key k2;
		for (int i = 0; i < N; i++) {
			lm[i] = (struct llm_msg){i % 2 ? LLM_ASSISTANT : LLM_USER, "turn", 4};
			sm[i] = (struct store_msg){i % 2 ? 2 : 1, "turn", 4};
		}
		llm_call_init(&c, m, lm, N);
		rlm_store_call_key(&c, &k);
		q = (struct store_call_req){.model_id = llm_model_cache_id(m),
					    .msgs = sm,
					    .n_msgs = N,
					    .temperature = -1,
					    .top_p = -1};
		store_call_key(&q, &k2);
		CHECK(key_eq(&k, &k2));
	}
	llm_model_free(m);
	check_no_leaks();
}

static void kb_two(const char *dom, const char *a, const char *b, struct store_key *k)
{
	struct store_kb kb;
	store_kb_init(&kb, dom);
	store_kb_str(&kb, a, a ? strlen(a) : 0);
	store_kb_str(&kb, b, b ? strlen(b) : 0);
	store_kb_final(&kb, k);
}

TEST(key_builder_prefixes_and_null)
{
	struct store_key a, b, c;
	struct store_kb kb;
	kb_two("d/1", "ab", "c", &a);
	kb_two("d/1", "a", "bc", &b);
	CHECK(!key_eq(&a, &b));
	kb_two("d/1", "ab", "c", &b);
	CHECK(key_eq(&a, &b));
	kb_two("d/2", "ab", "c", &b); /* another domain */
	CHECK(!key_eq(&a, &b));
	/* A field holding what a field boundary would hash as (its tag and a
	 * zero length) is still one field: the lengths tell them apart. */
	{
		static const char one[] = "x\x53\0\0\0\0\0\0\0\0y";
		store_kb_init(&kb, "d/1");
		store_kb_str(&kb, one, sizeof(one) - 1);
		store_kb_final(&kb, &a);
		store_kb_init(&kb, "d/1");
		store_kb_str(&kb, "x", 1);
		store_kb_str(&kb, "", 0);
		store_kb_str(&kb, "y", 1);
		store_kb_final(&kb, &b);
		CHECK(!key_eq(&a, &b));
		store_kb_init(&kb, "d/1");
		store_kb_str(&kb, "x", 1);
		store_kb_str(&kb, "y", 1);
		store_kb_final(&kb, &b);
		CHECK(!key_eq(&a, &b));
	}
	kb_two("d/1", NULL, "x", &a);
	kb_two("d/1", "", "x", &b);
	CHECK(!key_eq(&a, &b));
	kb_two("d/1", "abc", NULL, &a);
	kb_two("d/1", "abc", "", &b);
	CHECK(!key_eq(&a, &b));
	/* Types do not run into each other: i64 0 is not "" nor NULL. */
	store_kb_init(&kb, "d/1");
	store_kb_i64(&kb, 0);
	store_kb_final(&kb, &c);
	kb_two("d/1", NULL, NULL, &a);
	store_kb_init(&kb, "d/1");
	store_kb_str(&kb, "", 0);
	store_kb_final(&kb, &b);
	CHECK(!key_eq(&c, &b));
	store_kb_init(&kb, "d/1");
	store_kb_str(&kb, NULL, 0);
	store_kb_final(&kb, &a);
	CHECK(!key_eq(&c, &a) && !key_eq(&a, &b));
	/* f64: 1.0 is not i64 1; -0.0 is 0.0. */
	store_kb_init(&kb, "d/1");
	store_kb_f64(&kb, 1.0);
	store_kb_final(&kb, &a);
	store_kb_init(&kb, "d/1");
	store_kb_i64(&kb, 1);
	store_kb_final(&kb, &b);
	CHECK(!key_eq(&a, &b));
	store_kb_init(&kb, "d/1");
	store_kb_f64(&kb, -0.0);
	store_kb_final(&kb, &a);
	store_kb_init(&kb, "d/1");
	store_kb_f64(&kb, 0.0);
	store_kb_final(&kb, &b);
	CHECK(key_eq(&a, &b));
	/* The digest of a buffer. */
	store_digest("hello", 5, &a);
	store_digest("hello", 5, &b);
	CHECK(key_eq(&a, &b));
	store_digest("hellp", 5, &b);
	CHECK(!key_eq(&a, &b));
	check_no_leaks();
}

/* ---- the call cache ---- */

TEST(calls_put_get_hits_replace)
{
	char *path = tpath("rlm.db");
	struct store *s = open_ok(path);
	struct store_key k, k2;
	struct store_stats st;
	struct rlm_err e = {0, ""};
	struct llm_msg msgs[1] = {{LLM_USER, "q", 1}};
	struct llm_call c;
	char *t;

	key_n(&k, 1);
	key_n(&k2, 2);
	CHECK(get_text(s, &k) == NULL);
	CHECK_INT(put_text(s, &k, "hello\0world", 11, 10, &e), 0);

	/* A hit fills the result and nothing else. */
	llm_call_init(&c, NULL, msgs, 1);
	c.params.max_tokens = 77;
	CHECK_INT(rlm_store_call_get(s, &k, &c, &e), 1);
	CHECK_INT(c.rc, 0);
	CHECK_INT(c.len, 11);
	CHECK(memcmp(c.text, "hello\0world", 12) == 0);
	CHECK_STR(c.finish_reason, "stop");
	CHECK_INT(c.usage.input_tokens, 10);
	CHECK_INT(c.usage.output_tokens, 20);
	CHECK_INT(c.usage.cached_tokens, 30);
	CHECK_INT(c.usage.cache_write_tokens, 40);
	CHECK(c.cost == 5.0);
	CHECK(c.msgs == msgs && c.n_msgs == 1 && c.params.max_tokens == 77);
	CHECK(!c.cached && c.error == NULL && c.attempts == 0);
	llm_call_release(&c);

	CHECK(get_text(s, &k2) == NULL);
	for (int i = 0; i < 2; i++)
		free(get_text(s, &k));
	stats_ok(s, &st);
	CHECK_INT(st.calls, 1);
	CHECK_INT(st.call_hits, 3);
	CHECK_INT(st.saved_usage.input_tokens, 30);
	CHECK_INT(st.saved_usage.output_tokens, 60);
	CHECK_INT(st.saved_usage.cached_tokens, 90);
	CHECK_INT(st.saved_usage.cache_write_tokens, 120);
	CHECK(st.saved_cost == 15.0);

	/* Replacing (--refresh) keeps one row, with the new answer and its
	 * own hits: the old answer's would count as saved at the new usage. */
	CHECK_INT(put_text(s, &k, "second", 6, 1, &e), 0);
	t = get_text(s, &k);
	CHECK_STR(t, "second");
	free(t);
	stats_ok(s, &st);
	CHECK_INT(st.calls, 1);
	CHECK_INT(st.call_hits, 1);
	CHECK_INT(st.saved_usage.input_tokens, 1);

	/* Only successful calls are kept. */
	memset(&c, 0, sizeof(c));
	c.rc = RLM_EPROVIDER;
	CHECK_INT(rlm_store_call_put(s, &k2, &c, &e), RLM_EINVAL);
	CHECK_CONTAINS(e.msg, "only a successful call");
	{
		struct store_reply none = {0};
		CHECK_INT(store_call_put(s, &k2, NULL, &none, &e), RLM_EINVAL);
	}
	CHECK(get_text(s, &k2) == NULL);

	/* Hits counted in memory reach the file at close. */
	free(get_text(s, &k));
	store_close(s);
	s = open_ok(path);
	stats_ok(s, &st);
	CHECK_INT(st.call_hits, 2);
	t = get_text(s, &k);
	CHECK_STR(t, "second");
	free(t);
	store_close(s);
	free(path);
	check_no_leaks();
}

TEST(results_put_get)
{
	char *path = tpath("rlm.db");
	struct store *s = open_ok(path);
	struct store_result r = {0}, got;
	struct store_key k, k2;
	struct store_stats st;
	struct rlm_err e = {0, ""};

	key_n(&k, 7);
	key_n(&k2, 8);
	r.answer = xstrdup("42");
	r.stop = xstrdup("answer");
	r.usage = (struct store_usage){1000, 200, 300, 40};
	r.cost = 0.25;
	r.calls = 9;
	CHECK_INT(store_result_get(s, &k, &got, &e), 0);
	CHECK(got.answer == NULL);
	CHECK_INT(store_result_put(s, &k, &r, &e), 0);
	CHECK_INT(store_result_get(s, &k, &got, &e), 1);
	CHECK_STR(got.answer, "42");
	CHECK_STR(got.stop, "answer");
	CHECK_INT(got.usage.input_tokens, 1000);
	CHECK_INT(got.usage.output_tokens, 200);
	CHECK_INT(got.usage.cached_tokens, 300);
	CHECK_INT(got.usage.cache_write_tokens, 40);
	CHECK(got.cost == 0.25);
	CHECK_INT(got.calls, 9);
	store_result_release(&got);
	CHECK(got.answer == NULL && got.stop == NULL);
	CHECK_INT(store_result_get(s, &k2, &got, &e), 0);
	CHECK_INT(store_result_get(s, &k, &got, &e), 1);
	store_result_release(&got);

	/* A call under the same key bytes is another table. */
	CHECK(get_text(s, &k) == NULL);
	stats_ok(s, &st);
	CHECK_INT(st.results, 1);
	CHECK_INT(st.calls, 0);
	CHECK_INT(st.result_hits, 2);
	CHECK_INT(st.saved_usage.input_tokens, 2000);
	CHECK_INT(st.saved_usage.cache_write_tokens, 80);
	CHECK(st.saved_cost == 0.5);
	/* Replaced (--refresh): its hits start again. */
	CHECK_INT(store_result_put(s, &k, &r, &e), 0);
	stats_ok(s, &st);
	CHECK_INT(st.result_hits, 0);
	CHECK(st.saved_cost == 0);
	store_result_release(&r);
	store_close(s);
	free(path);
	check_no_leaks();
}

/* ---- runs and events ---- */

static void begin_run_note(struct store *s, struct store_run *r, const char *q,
			   const char *config, const char *note)
{
	struct rlm_err e = {0, ""};
	memset(r, 0, sizeof(*r));
	r->note_json = note;
	r->question = q;
	r->context_digest = "0123456789abcdef0123456789abcdef";
	r->context_bytes = 12345;
	r->context_source = "ctx.txt";
	r->config_json = config;
	CHECK_MSG(store_run_begin(s, r, &e) == 0, "store_run_begin: %s", e.msg);
}

static void begin_run(struct store *s, struct store_run *r, const char *q, const char *config)
{
	begin_run_note(s, r, q, config, NULL);
}

static void add_event(struct store *s, const char *run, const char *kind, const char *text,
		      const char *data, int node)
{
	struct store_event ev = {0};
	struct rlm_err e = {0, ""};
	ev.t_ns = 1000 * node;
	ev.node = node;
	ev.parent = node ? 0 : -1;
	ev.depth = node ? 1 : 0;
	ev.iteration = 1;
	ev.kind = kind;
	ev.text = text;
	ev.len = text ? strlen(text) : 0;
	ev.data_json = data;
	CHECK_MSG(store_event_add(s, run, &ev, &e) == 0, "store_event_add: %s", e.msg);
}

static bool valid_run_id(const char *id)
{
	if (strlen(id) != 22 || id[8] != '-' || id[15] != '-')
		return false;
	for (int i = 0; i < 22; i++) {
		if (i == 8 || i == 15)
			continue;
		if (i < 15 ? !strchr("0123456789", id[i]) : !strchr("0123456789abcdef", id[i]))
			return false;
	}
	return true;
}

TEST(runs_events_load_list)
{
	char *path = tpath("rlm.db");
	struct store *s = open_ok(path);
	struct store_run a, b, end;
	struct rlm_err e = {0, ""};
	cJSON *j, *evs, *ev, *list;
	char prefix[40];

	begin_run_note(s, &a, "what is x?", "{\"model\":\"m\",\"depth\":2}",
		       "{\"argv\":[\"rlm\",\"solve\"]}");
	CHECK_MSG(valid_run_id(a.id), "run id '%s'", a.id);
	CHECK(a.created_ms > 0 && llabs(a.created_ms - time_wall_ms()) < 60000);
	add_event(s, a.id, "reply", "I will look", NULL, 0);
	add_event(s, a.id, "code", "print(1)", NULL, 0);
	add_event(s, a.id, "call", NULL, "{\"key\":\"ab\",\"cached\":true}", 1);
	add_event(s, a.id, "output", "1\n", "not json", 0);

	/* A running run loads, with its events so far. */
	j = store_run_load(s, a.id, &e);
	CHECK_MSG(j, "store_run_load: %s", e.msg);
	CHECK_STR(json_str(j, "status"), "running");
	CHECK_INT(json_int(j, "ended_ms", -1), 0);
	CHECK(cJSON_IsNull(json_get(j, "answer")) && cJSON_IsNull(json_get(j, "result")));
	CHECK_INT(cJSON_GetArraySize(json_get(j, "events")), 4);
	cJSON_Delete(j);

	/* A new store object numbers on from the table. */
	store_close(s);
	s = open_ok(path);
	add_event(s, a.id, "end", "x is 3", "{\"stop\":\"answer\"}", 0);
	end = a;
	end.status = "done";
	end.answer = "x is 3";
	end.result_json = "{\"answer\":\"x is 3\",\"calls\":4}";
	end.ended_ms = a.created_ms + 5000;
	CHECK_INT(store_run_end(s, &end, &e), 0);

	begin_run(s, &b, "second", "{}");
	b.resumed_from = NULL;
	j = store_run_load(s, a.id, &e);
	CHECK_MSG(j, "store_run_load: %s", e.msg);
	CHECK_STR(json_str(j, "id"), a.id);
	CHECK_INT(json_int(j, "created_ms", 0), a.created_ms);
	CHECK_INT(json_int(j, "ended_ms", 0), a.created_ms + 5000);
	CHECK_STR(json_str(j, "status"), "done");
	CHECK_STR(json_str(j, "question"), "what is x?");
	CHECK_STR(json_str(j, "context_digest"), "0123456789abcdef0123456789abcdef");
	CHECK_INT(json_int(j, "context_bytes", 0), 12345);
	CHECK_STR(json_str(j, "context_source"), "ctx.txt");
	CHECK_INT(json_int(json_get(j, "config"), "depth", 0), 2);
	CHECK_STR(cJSON_GetStringValue(
			  cJSON_GetArrayItem(json_get(json_get(j, "note"), "argv"), 1)),
		  "solve");
	CHECK_STR(json_str(j, "answer"), "x is 3");
	CHECK_INT(json_int(json_get(j, "result"), "calls", 0), 4);
	CHECK(cJSON_IsNull(json_get(j, "resumed_from")));
	evs = json_get(j, "events");
	CHECK_INT(cJSON_GetArraySize(evs), 5);
	for (int i = 0; i < 5; i++)
		CHECK_INT(json_int(cJSON_GetArrayItem(evs, i), "seq", 0), i + 1);
	ev = cJSON_GetArrayItem(evs, 1);
	CHECK_STR(json_str(ev, "kind"), "code");
	CHECK_STR(json_str(ev, "text"), "print(1)");
	CHECK(cJSON_IsNull(json_get(ev, "data")));
	CHECK_INT(json_int(ev, "parent", 0), -1);
	ev = cJSON_GetArrayItem(evs, 2);
	CHECK(cJSON_IsNull(json_get(ev, "text")));
	CHECK(cJSON_IsTrue(json_get(json_get(ev, "data"), "cached")));
	CHECK_INT(json_int(ev, "node", 0), 1);
	CHECK_INT(json_int(ev, "depth", 0), 1);
	CHECK_INT(json_int(ev, "t_ns", 0), 1000);
	CHECK(cJSON_IsNull(json_get(cJSON_GetArrayItem(evs, 3), "data"))); /* not JSON */
	CHECK_STR(json_str(cJSON_GetArrayItem(evs, 4), "kind"), "end");
	cJSON_Delete(j);

	/* Prefixes: unique, ambiguous, unknown. */
	snprintf(prefix, sizeof(prefix), "%.*s", (int)strlen(b.id) - 2, b.id);
	j = store_run_load(s, prefix, &e);
	CHECK_MSG(j, "prefix: %s", e.msg);
	CHECK_STR(json_str(j, "id"), b.id);
	CHECK_INT(cJSON_GetArraySize(json_get(j, "events")), 0);
	CHECK(cJSON_IsNull(json_get(j, "resumed_from")));
	cJSON_Delete(j);
	CHECK(store_run_load(s, "2", &e) == NULL);
	CHECK_INT(e.code, RLM_EINVAL);
	CHECK_CONTAINS(e.msg, "ambiguous: 2 runs");
	CHECK(store_run_load(s, "19990101-000000-abcdef", &e) == NULL);
	CHECK_INT(e.code, RLM_ENOTFOUND);
	CHECK(store_run_load(s, "", &e) == NULL);
	CHECK_INT(e.code, RLM_EINVAL);

	/* Ending an unknown run says so. */
	snprintf(end.id, sizeof(end.id), "nope");
	CHECK_INT(store_run_end(s, &end, &e), RLM_ENOTFOUND);

	/* The list: newest first, without the heavy parts. */
	list = store_runs_list(s, 0, &e);
	CHECK_MSG(list, "store_runs_list: %s", e.msg);
	CHECK_INT(cJSON_GetArraySize(list), 2);
	CHECK_STR(json_str(cJSON_GetArrayItem(list, 0), "id"), b.id);
	CHECK_STR(json_str(cJSON_GetArrayItem(list, 0), "status"), "running");
	CHECK_STR(json_str(cJSON_GetArrayItem(list, 1), "id"), a.id);
	CHECK_STR(json_str(cJSON_GetArrayItem(list, 1), "answer"), "x is 3");
	CHECK(cJSON_IsObject(json_get(cJSON_GetArrayItem(list, 1), "note")));
	CHECK(cJSON_IsNull(json_get(cJSON_GetArrayItem(list, 0), "note")));
	CHECK(!json_get(cJSON_GetArrayItem(list, 1), "events"));
	CHECK(!json_get(cJSON_GetArrayItem(list, 1), "config"));
	CHECK(!json_get(cJSON_GetArrayItem(list, 1), "result"));
	cJSON_Delete(list);
	list = store_runs_list(s, 1, &e);
	CHECK_INT(cJSON_GetArraySize(list), 1);
	cJSON_Delete(list);
	store_close(s);
	free(path);
	check_no_leaks();
}

struct ev_arg {
	struct store *s;
	const char *run;
	int n, failed;
};

static void *ev_thread(void *p)
{
	struct ev_arg *a = p;
	for (int i = 0; i < a->n; i++) {
		struct store_event ev = {0};
		struct rlm_err e;
		char text[32];
		snprintf(text, sizeof(text), "t%d", i);
		ev.kind = "notice";
		ev.text = text;
		ev.len = strlen(text);
		if (store_event_add(a->s, a->run, &ev, &e))
			a->failed++;
	}
	return NULL;
}

TEST(events_from_threads_are_numbered_once)
{
	char *path = tpath("rlm.db");
	struct store *s = open_ok(path);
	struct store_run r;
	struct ev_arg args[8];
	pthread_t th[8];
	struct rlm_err e = {0, ""};
	cJSON *j, *evs;

	begin_run(s, &r, "q", "{}");
	for (int i = 0; i < 8; i++) {
		args[i] = (struct ev_arg){s, r.id, 100, 0};
		CHECK(pthread_create(&th[i], NULL, ev_thread, &args[i]) == 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		CHECK_INT(args[i].failed, 0);
	}
	j = store_run_load(s, r.id, &e);
	CHECK_MSG(j, "%s", e.msg);
	evs = json_get(j, "events");
	CHECK_INT(cJSON_GetArraySize(evs), 800);
	for (int i = 0; i < 800; i++)
		CHECK_INT(json_int(cJSON_GetArrayItem(evs, i), "seq", 0), i + 1);
	cJSON_Delete(j);
	store_close(s);
	free(path);
	check_no_leaks();
}

/* A child that begins a run, reports its id and waits to be killed. */
static pid_t running_child(const char *path, const char *q, char id[40])
{
	int fds[2];
	pid_t pid;
	CHECK(pipe(fds) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct store *s;
		struct store_run r;
		close(fds[0]);
		s = open_ok(path);
		begin_run(s, &r, q, "{\"c\":1}");
		if (file_write_all(fds[1], r.id, sizeof(r.id)))
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	CHECK(read(fds[0], id, 40) == 40);
	close(fds[0]);
	return pid;
}

static int unfinished(struct store *s, const char *q, const char *config, char id[40])
{
	struct rlm_err e = {0, ""};
	int rc = store_run_unfinished(s, q, "0123456789abcdef0123456789abcdef", config, id, &e);
	CHECK_MSG(rc >= 0, "store_run_unfinished: %s", e.msg);
	return rc;
}

TEST(runs_killed_are_unfinished_and_interrupted)
{
	char *path = tpath("rlm.db");
	struct store *s;
	struct store_run mine, done, intr, end;
	struct rlm_err e = {0, ""};
	char cid[40], id[40];
	pid_t pid;
	cJSON *j;
	int rc = 0, status;

	/* No connection of ours crosses the fork. */
	pid = running_child(path, "q", cid);
	s = open_ok(path);
	CHECK(valid_run_id(cid));
	/* Alive: not resumable, reported running. */
	CHECK_INT(unfinished(s, "q", "{\"c\":1}", id), 0);
	j = store_run_load(s, cid, &e);
	CHECK_MSG(j, "%s", e.msg);
	CHECK_STR(json_str(j, "status"), "running");
	cJSON_Delete(j);

	/* Runs of this process that must not be picked: alive, ended. */
	begin_run(s, &mine, "q", "{\"c\":1}");
	begin_run(s, &done, "q", "{\"c\":1}");
	end = done;
	end.status = "done";
	CHECK_INT(store_run_end(s, &end, &e), 0);

	kill(pid, SIGKILL);
	/* Dead but not reaped yet (a zombie) is dead already. */
	for (int i = 0; i < 200 && !(rc = unfinished(s, "q", "{\"c\":1}", id)); i++)
		time_sleep_ns(10 * 1000000LL);
	CHECK_INT(rc, 1);
	CHECK_STR(id, cid);
	CHECK_INT(waitpid(pid, &status, 0), pid);
	CHECK_INT(unfinished(s, "q", "{\"c\":1}", id), 1);
	CHECK_STR(id, cid);
	j = store_run_load(s, cid, &e);
	CHECK_STR(json_str(j, "status"), "interrupted");
	cJSON_Delete(j);
	j = store_runs_list(s, 0, &e);
	CHECK_INT(cJSON_GetArraySize(j), 3);
	CHECK_STR(json_str(cJSON_GetArrayItem(j, 2), "status"), "interrupted");
	CHECK_STR(json_str(cJSON_GetArrayItem(j, 1), "status"), "running");
	CHECK_STR(json_str(cJSON_GetArrayItem(j, 0), "status"), "done");
	cJSON_Delete(j);

	/* Other question, digest or config: none. */
	CHECK_INT(unfinished(s, "q2", "{\"c\":1}", id), 0);
	CHECK_INT(unfinished(s, "q", "{\"c\":2}", id), 0);

	/* A run ended as interrupted (Ctrl-C) is resumable, newest first. */
	time_sleep_ns(2 * 1000000LL);
	begin_run(s, &intr, "q", "{\"c\":1}");
	end = intr;
	end.status = "interrupted";
	CHECK_INT(store_run_end(s, &end, &e), 0);
	CHECK_INT(unfinished(s, "q", "{\"c\":1}", id), 1);
	CHECK_STR(id, intr.id);
	store_close(s);
	free(path);
	check_no_leaks();
}

/* store_run_origin finds the run a whole solve's memo answer came from:
 * the newest of the same question, digest and config that ended done
 * with stop answer and was no memo hit itself, never the asking run;
 * store_run_result reads its result alone; store_run_load links runs
 * both ways (resumed_by, memo_runs). */
TEST(run_origin_result_and_links)
{
	char *path = tpath("rlm.db");
	struct store *s = open_ok(path);
	struct store_run orig, limited, memo, other, res, end;
	struct rlm_err e = {0, ""};
	const char *cfg = "{\"c\":1}", *dg = "0123456789abcdef0123456789abcdef";
	char id[40] = "", *memo_res;
	int64_t created = 0;
	cJSON *j, *it;
	int n;

	begin_run(s, &orig, "q", cfg);
	end = orig;
	end.status = "done";
	end.answer = "42";
	end.result_json = "{\"answer\":\"42\",\"stop\":\"answer\",\"calls\":{\"total\":7,"
			  "\"root\":3},\"children\":[{\"node\":1}]}";
	CHECK_INT(store_run_end(s, &end, &e), 0);
	time_sleep_ns(2 * 1000000LL);
	/* newer, but stopped by a limit: not an answer the memo keeps */
	begin_run(s, &limited, "q", cfg);
	end = limited;
	end.status = "done";
	end.result_json = "{\"answer\":null,\"stop\":\"max_iterations\"}";
	CHECK_INT(store_run_end(s, &end, &e), 0);
	/* the memo run itself, asking */
	begin_run(s, &memo, "q", cfg);
	CHECK_INT(store_run_origin(s, "q", dg, cfg, memo.id, id, &created, &e), 1);
	CHECK_STR(id, orig.id);
	CHECK_INT(created, orig.created_ms);
	CHECK_INT(store_run_origin(s, "q", dg, cfg, orig.id, id, NULL, &e), 0);
	CHECK_INT(store_run_origin(s, "q", dg, "{\"c\":2}", memo.id, id, NULL, &e), 0);
	CHECK_INT(store_run_origin(s, "q2", dg, cfg, memo.id, id, NULL, &e), 0);
	memo_res = xasprintf("{\"answer\":\"42\",\"stop\":\"answer\",\"memo\":{\"run\":\"%s\"}}",
			     orig.id);
	end = memo;
	end.status = "done";
	end.result_json = memo_res;
	CHECK_INT(store_run_end(s, &end, &e), 0);
	/* a memo run is no origin: the original stays the one */
	time_sleep_ns(2 * 1000000LL);
	begin_run(s, &other, "q", cfg);
	CHECK_INT(store_run_origin(s, "q", dg, cfg, other.id, id, NULL, &e), 1);
	CHECK_STR(id, orig.id);
	/* the result alone */
	j = store_run_result(s, orig.id, &e);
	CHECK_MSG(j, "store_run_result: %s", e.msg);
	CHECK(json_num(json_get(j, "calls"), "root", -1) == 3);
	CHECK_INT(cJSON_GetArraySize(json_get(j, "children")), 1);
	cJSON_Delete(j);
	CHECK(store_run_result(s, other.id, &e) == NULL);
	CHECK_INT(e.code, RLM_ENOTFOUND);
	CHECK(store_run_result(s, "20000101-000000-000000", &e) == NULL);
	CHECK_INT(e.code, RLM_ENOTFOUND);
	/* links: a run resuming the limited one, the memo run of orig */
	memset(&res, 0, sizeof(res));
	res.question = "q";
	res.context_digest = dg;
	res.config_json = cfg;
	res.resumed_from = limited.id;
	CHECK_INT(store_run_begin(s, &res, &e), 0);
	j = store_run_load(s, orig.id, &e);
	CHECK_MSG(j, "%s", e.msg);
	n = 0;
	cJSON_ArrayForEach(it, json_get(j, "memo_runs"))
	{
		CHECK_STR(it->valuestring, memo.id);
		n++;
	}
	CHECK_INT(n, 1);
	CHECK_INT(cJSON_GetArraySize(json_get(j, "resumed_by")), 0);
	cJSON_Delete(j);
	j = store_run_load(s, limited.id, &e);
	CHECK_INT(cJSON_GetArraySize(json_get(j, "resumed_by")), 1);
	CHECK_STR(cJSON_GetArrayItem(json_get(j, "resumed_by"), 0)->valuestring, res.id);
	CHECK_INT(cJSON_GetArraySize(json_get(j, "memo_runs")), 0);
	cJSON_Delete(j);
	free(memo_res);
	store_close(s);
	free(path);
	check_no_leaks();
}

/* ---- threads ---- */

struct th_arg {
	struct store *s;
	int idx, n, errors;
	char msg[512];
};

static void *put_get_thread(void *p)
{
	struct th_arg *a = p;
	for (int i = 0; i < a->n; i++) {
		struct store_key k;
		struct store_reply c;
		struct rlm_err e;
		char text[64];
		int rc;
		key_n(&k, (int64_t)a->idx * 100000 + i);
		snprintf(text, sizeof(text), "answer %d/%d", a->idx, i);
		if (put_text(a->s, &k, text, strlen(text), i, &e)) {
			a->errors++;
			snprintf(a->msg, sizeof(a->msg), "%s", e.msg);
			continue;
		}
		rc = store_call_get(a->s, &k, &c, &e);
		if (rc != 1 || strcmp(c.text, text) != 0) {
			a->errors++;
			snprintf(a->msg, sizeof(a->msg), "get %d: %.400s", rc, rc < 0 ? e.msg : "");
		}
		store_reply_release(&c);
		/* And a key another thread wrote, hit or not. */
		key_n(&k, (int64_t)((a->idx + 1) % 64) * 100000 + i);
		if (store_call_get(a->s, &k, &c, &e) < 0) {
			a->errors++;
			snprintf(a->msg, sizeof(a->msg), "%s", e.msg);
		}
		store_reply_release(&c);
	}
	return NULL;
}

TEST(threads_64_put_and_get)
{
	enum { T = 64, N = 60 };
	char *path = tpath("rlm.db");
	struct store *s = open_ok(path);
	struct th_arg *args = xcalloc(T, sizeof(*args));
	pthread_t th[T];
	struct store_stats st;

	for (int i = 0; i < T; i++) {
		args[i].s = s;
		args[i].idx = i;
		args[i].n = N;
		CHECK(pthread_create(&th[i], NULL, put_get_thread, &args[i]) == 0);
	}
	for (int i = 0; i < T; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < T; i++)
		CHECK_MSG(args[i].errors == 0, "thread %d: %d errors: %s", i, args[i].errors,
			  args[i].msg);
	stats_ok(s, &st);
	CHECK_INT(st.calls, T * N);
	CHECK(st.call_hits >= T * N && st.call_hits <= 2 * T * N);
	for (int i = 0; i < T; i++)
		for (int j = 0; j < N; j++) {
			char want[64];
			snprintf(want, sizeof(want), "answer %d/%d", i, j);
			check_text(s, (int64_t)i * 100000 + j, want);
		}
	store_close(s);
	free(args);
	free(path);
	check_no_leaks();
}

/* What a solve has for its calls: the store with rlm/record.c's front in
 * o, a pool of 64 workers, and a model on a fake OpenAI server (no
 * retries). */
struct rig {
	char *path, *url;
	struct store *s;
	struct fakesrv *srv;
	struct rlm_opts o;
	struct rlm_record rec;
	struct llm_pool *pool;
	struct llm_model *m;
};

static void rig_start(struct rig *r)
{
	struct llm_pool_cfg pc = {64};
	struct llm_model_cfg mc = {0};
	struct rlm_err e = {0, ""};
	memset(r, 0, sizeof(*r));
	r->path = tpath("rlm.db");
	r->s = open_ok(r->path);
	CHECK((r->srv = fakesrv_start()) != NULL);
	r->url = xasprintf("%s/v1", fakesrv_url(r->srv));
	mc.kind = LLM_OPENAI;
	mc.name = "gpt-test";
	mc.base_urls = r->url;
	mc.max_retries = 0;
	CHECK_MSG((r->m = llm_model_new(&mc, &e)) != NULL, "%s", e.msg);
	CHECK_MSG((r->pool = llm_pool_new(&pc, &e)) != NULL, "%s", e.msg);
	r->o.store = r->s;
	rlm__record_init(&r->rec, &r->o);
	r->o.record_ = &r->rec;
	CHECK(rlm__record_front(&r->o) == &r->rec.front);
}

/* Queue a 200 reply of text after delay_ms. */
static void rig_reply(struct rig *r, const char *text, int delay_ms)
{
	char *body = fakesrv_chat_body(text, "stop", 10, 2);
	fakesrv_push(r->srv, &(struct fake_reply){200, NULL, body, FAKE_NORMAL, delay_ms});
	free(body);
}

/* Run calls[0..n) through the pool, each with msgs[i % n_msgs] and the
 * front; returns how many failed. */
static size_t rig_run(struct rig *r, struct llm_call *calls, size_t n, const struct llm_msg *msgs,
		      size_t n_msgs)
{
	struct llm_call **pcs = xcalloc(n, sizeof(*pcs));
	size_t failed;
	for (size_t i = 0; i < n; i++) {
		llm_call_init(&calls[i], r->m, &msgs[i % n_msgs], 1);
		calls[i].front = rlm__record_front(&r->o);
		pcs[i] = &calls[i];
	}
	failed = llm_pool_run(r->pool, pcs, n);
	free(pcs);
	return failed;
}

static void rig_stop(struct rig *r)
{
	llm_pool_free(r->pool);
	llm_model_free(r->m);
	fakesrv_stop(r->srv);
	store_close(r->s);
	free(r->url);
	free(r->path);
}

/* The call cache as a solve uses it: rlm/record.c's front on every call of
 * a real pool of 64 workers, to a fake OpenAI server on loopback. The
 * first pass sends every call once and stores each once; the second sends
 * nothing and gets back, call by call, the answer stored for its key. */
TEST(pool_64_workers_through_the_front)
{
	enum { N = 400 };
	struct rig r;
	struct llm_msg *msgs = xcalloc(N, sizeof(*msgs));
	struct llm_call *calls = xcalloc(N, sizeof(*calls));
	char **first = xcalloc(N, sizeof(*first)), **prompts = xcalloc(N, sizeof(*prompts));
	struct llm_stats st;
	struct store_stats ss;
	rig_start(&r);
	for (int i = 0; i < N; i++) {
		char *text = xasprintf("answer %d", i);
		rig_reply(&r, text, 5);
		free(text);
		prompts[i] = xasprintf("question %d", i);
		msgs[i] = (struct llm_msg){LLM_USER, prompts[i], strlen(prompts[i])};
	}
	for (int pass = 0; pass < 2; pass++) {
		CHECK_INT(rig_run(&r, calls, N, msgs, N), 0);
		for (int i = 0; i < N; i++) {
			CHECK_INT(calls[i].rc, 0);
			CHECK(calls[i].cached == (pass == 1));
			if (pass == 0)
				first[i] = xstrdup(calls[i].text);
			else
				CHECK_STR(calls[i].text, first[i]); /* its own answer, not another's */
			llm_call_release(&calls[i]);
		}
		/* pass 0: every call sent and kept once; pass 1: none sent */
		CHECK_INT(fakesrv_count(r.srv), N);
		stats_ok(r.s, &ss);
		CHECK_INT(ss.calls, N);
	}
	llm_pool_stats(r.pool, &st);
	CHECK_INT(st.cached, N);
	CHECK_INT(st.attempts, N);
	store_close(r.s);
	r.s = open_ok(r.path);
	stats_ok(r.s, &ss);
	CHECK_INT(ss.call_hits, N);
	rig_stop(&r);
	for (int i = 0; i < N; i++) {
		free(first[i]);
		free(prompts[i]);
	}
	free(first);
	free(prompts);
	free(calls);
	free(msgs);
	check_no_leaks();
}

/* Copies of a call asked while it is out wait for it: 64 calls of 4
 * prompts go out 4 times, and each copy gets the answer of its prompt.
 * When the one out fails, its copies fail with it. */
TEST(same_call_in_flight_goes_out_once)
{
	enum { N = 64, P = 4 };
	static const struct llm_msg msgs[P] = {{LLM_USER, "same", 4},
					       {LLM_USER, "alike", 5},
					       {LLM_USER, "twin", 4},
					       {LLM_USER, "copy", 4}};
	static const struct llm_msg fails[1] = {{LLM_USER, "fails first", 11}};
	struct rig r;
	struct llm_call calls[N];
	rig_start(&r);
	/* answers after 200 ms: every copy is asked meanwhile */
	for (int i = 0; i < P; i++) {
		char text[32];
		snprintf(text, sizeof(text), "answer %d", i);
		rig_reply(&r, text, 200);
	}
	CHECK_INT(rig_run(&r, calls, N, msgs, P), 0);
	CHECK_INT(fakesrv_count(r.srv), P);
	for (int i = 0; i < N; i++) {
		CHECK_INT(calls[i].rc, 0);
		CHECK_STR(calls[i].text, calls[i % P].text);
		CHECK(calls[i].cached == (calls[i].attempts == 0));
	}
	for (int i = 0; i < N; i++)
		llm_call_release(&calls[i]);
	/* the one out fails (500, no retry): its copies fail so too, sending
	 * nothing (not each in turn after it) */
	fakesrv_push(r.srv, &(struct fake_reply){500, NULL, "{}", FAKE_NORMAL, 200});
	rig_reply(&r, "not asked", 0);
	CHECK_INT(rig_run(&r, calls, 8, fails, 1), 8);
	CHECK_INT(fakesrv_count(r.srv), P + 1);
	for (int i = 0; i < 8; i++) {
		CHECK(calls[i].rc < 0);
		CHECK(!calls[i].cached);
		CHECK_CONTAINS(calls[i].error, "openai 500 from");
	}
	for (int i = 0; i < 8; i++)
		llm_call_release(&calls[i]);
	CHECK(r.rec.flights == NULL);
	rig_stop(&r);
	check_no_leaks();
}

/* Two processes writing one store at once (calls, and a run's events
 * each): both finish, the file passes integrity_check, every row is
 * there. */
TEST(two_processes_write_one_store)
{
	enum { N = 1500 };
	char *path = tpath("rlm.db");
	struct store *s = open_ok(path);
	struct store_stats st;
	int go[2], status;
	pid_t kids[2];
	sqlite3 *db;
	sqlite3_stmt *q;
	store_close(s); /* made, in WAL mode: each child opens its own */
	CHECK(pipe(go) == 0);
	for (int c = 0; c < 2; c++) {
		kids[c] = fork();
		CHECK(kids[c] >= 0);
		if (kids[c] == 0) {
			struct store *cs;
			struct store_run r;
			struct rlm_err e = {0, ""};
			char b;
			close(go[1]);
			if (read(go[0], &b, 1) != 0) /* EOF: go */
				_exit(3);
			cs = open_ok(path);
			begin_run(cs, &r, c ? "two" : "one", "{}");
			for (int i = 0; i < N; i++) {
				struct store_key k;
				char text[32];
				struct store_event ev = {0};
				key_n(&k, (int64_t)c * 1000000 + i);
				snprintf(text, sizeof(text), "%d/%d", c, i);
				ev.kind = "call";
				ev.text = text;
				ev.len = strlen(text);
				if (put_text(cs, &k, text, strlen(text), 1, &e) ||
				    store_event_add(cs, r.id, &ev, &e))
					_exit(1);
			}
			r.status = "done";
			if (store_run_end(cs, &r, &e))
				_exit(2);
			store_close(cs);
			_exit(0);
		}
	}
	close(go[0]);
	close(go[1]); /* both start together */
	for (int c = 0; c < 2; c++) {
		CHECK_INT(waitpid(kids[c], &status, 0), kids[c]);
		CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d: status %d", c,
			  status);
	}
	db = raw_open(path);
	CHECK_INT(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &q, NULL), SQLITE_OK);
	CHECK_INT(sqlite3_step(q), SQLITE_ROW);
	CHECK_STR((const char *)sqlite3_column_text(q, 0), "ok");
	sqlite3_finalize(q);
	CHECK_INT(raw_int(db, "SELECT count(*) FROM runs WHERE status = 'done'"), 2);
	CHECK_INT(raw_int(db, "SELECT count(DISTINCT run || '/' || seq) FROM events"), 2 * N);
	sqlite3_close(db);
	s = open_ok(path);
	stats_ok(s, &st);
	CHECK_INT(st.calls, 2 * N);
	CHECK_INT(st.events, 2 * N);
	for (int c = 0; c < 2; c++)
		for (int i = 0; i < N; i += 97) {
			char want[32];
			snprintf(want, sizeof(want), "%d/%d", c, i);
			check_text(s, (int64_t)c * 1000000 + i, want);
		}
	store_close(s);
	free(path);
	check_no_leaks();
}

/* ---- rates ---- */

struct look_arg {
	struct store *s;
	int n, nkeys, misses;
	unsigned seed;
};

static void *look_thread(void *p)
{
	struct look_arg *a = p;
	struct rng r;
	rng_seed(&r, a->seed);
	for (int i = 0; i < a->n; i++) {
		struct store_key k;
		struct store_reply c;
		key_n(&k, (int64_t)rng_below(&r, (uint64_t)a->nkeys));
		if (store_call_get(a->s, &k, &c, NULL) != 1)
			a->misses++;
		store_reply_release(&c);
	}
	return NULL;
}

static double lookups(struct store *s, int threads, int per, int nkeys)
{
	struct look_arg args[8];
	pthread_t th[8];
	int64_t t0 = time_now_ns();
	for (int i = 0; i < threads; i++) {
		args[i] = (struct look_arg){s, per, nkeys, 0, (unsigned)i + 1};
		CHECK(pthread_create(&th[i], NULL, look_thread, &args[i]) == 0);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		CHECK_INT(args[i].misses, 0);
	}
	return (double)threads * per / secs_since(t0);
}

TEST(rates_of_lookups_and_events)
{
	enum { KEYS = 5000, PER = 40000 };
	char *path = tpath("rlm.db");
	struct store *s = open_ok(path);
	struct store_stats st;
	struct rlm_err e = {0, ""};
	struct store_run r;
	char text[600];
	double puts, one, eight, evs;
	int64_t t0;

	memset(text, 'x', sizeof(text));
	t0 = time_now_ns();
	for (int i = 0; i < KEYS; i++) {
		struct store_key k;
		key_n(&k, i);
		CHECK_INT(put_text(s, &k, text, sizeof(text), 1, &e), 0);
	}
	puts = KEYS / secs_since(t0);
	one = lookups(s, 1, PER, KEYS);
	eight = lookups(s, 8, PER / 2, KEYS);
	stats_ok(s, &st);
	CHECK_INT(st.call_hits, PER + 8 * (PER / 2));

	begin_run(s, &r, "q", "{}");
	t0 = time_now_ns();
	for (int i = 0; i < 20000; i++) {
		struct store_event ev = {0};
		ev.t_ns = i;
		ev.kind = "call";
		ev.data_json = "{\"key\":\"0123456789abcdef0123456789abcdef\",\"cached\":false}";
		CHECK_INT(store_event_add(s, r.id, &ev, &e), 0);
	}
	evs = 20000 / secs_since(t0);
	printf("  store: %.0f puts/s, %.0f lookups/s (1 thread), %.0f lookups/s (8 threads), "
	       "%.0f events/s\n",
	       puts, one, eight, evs);
	/* Floors far below the aim (50000/s), so that sanitizer builds pass:
	 * they catch a lookup that writes or an event that fsyncs. */
	CHECK_MSG(one > 5000, "%.0f lookups/s", one);
	CHECK_MSG(evs > 1000, "%.0f events/s", evs);
	store_close(s);
	free(path);
	check_no_leaks();
}

/* ---- kill -9 ---- */

TEST(kill9_while_committing_loses_nothing_committed)
{
	char *path = tpath("rlm.db");
	struct rlm_err e = {0, ""};
	uint32_t committed = 0;

	for (int round = 0; round < 3; round++) {
		int fds[2], status;
		uint32_t v;
		pid_t pid;
		struct store *s;
		sqlite3 *db;
		sqlite3_stmt *q;
		unsigned char r;

		CHECK(pipe(fds) == 0);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			s = open_ok(path);
			for (uint32_t i = committed;; i++) {
				struct store_key k;
				char text[64];
				int n = snprintf(text, sizeof(text), "value %u", i);
				key_n(&k, i);
				if (put_text(s, &k, text, (size_t)n, i, &e))
					_exit(3);
				v = i + 1;
				if (file_write_all(fds[1], &v, sizeof(v)))
					_exit(4);
			}
		}
		close(fds[1]);
		/* Let it commit a while, then kill it at some moment. */
		v = committed;
		while (v < committed + 1500 && read(fds[0], &v, sizeof(v)) == sizeof(v))
			;
		/* what it reported so far; more may follow before the kill
		 * lands (a slow child, under TSan, may send none) */
		committed = v;
		CHECK(getrandom(&r, 1, 0) == 1);
		time_sleep_ns((int64_t)(r % 20) * 100000);
		CHECK(kill(pid, SIGKILL) == 0);
		CHECK_INT(waitpid(pid, &status, 0), pid);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		while (read(fds[0], &v, sizeof(v)) == sizeof(v))
			committed = v;
		close(fds[0]);
		CHECK(committed >= 1500u * (unsigned)(round + 1));

		/* Whole, and every reported commit is there. */
		db = raw_open(path);
		CHECK_INT(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &q, NULL),
			  SQLITE_OK);
		CHECK_INT(sqlite3_step(q), SQLITE_ROW);
		CHECK_STR((const char *)sqlite3_column_text(q, 0), "ok");
		sqlite3_finalize(q);
		CHECK(raw_int(db, "SELECT count(*) FROM calls") >= committed);
		CHECK(raw_int(db, "SELECT count(*) FROM calls") <= committed + 1);
		sqlite3_close(db);
		s = open_ok(path);
		for (uint32_t i = 0; i < committed; i++) {
			struct store_key k;
			char want[64], *t;
			snprintf(want, sizeof(want), "value %u", i);
			key_n(&k, i);
			t = get_text(s, &k);
			CHECK_MSG(t && strcmp(t, want) == 0, "row %u of %u: %s", i, committed,
				  t ? t : "missing");
			free(t);
		}
		store_close(s);
	}
	free(path);
	check_no_leaks();
}

/* ---- bad files ---- */

TEST(corrupt_file_fails_cleanly)
{
	char *path = tpath("rlm.db");
	struct store *s;
	struct rlm_err e;
	static const char head[] = "SQLite format 3";

	write_random(path, 65536);
	CHECK_INT(open_rc(path, false, 0, &s, &e), RLM_ESTORE);
	CHECK(s == NULL);
	CHECK_CONTAINS(e.msg, path);
	CHECK_CONTAINS(e.msg, "not a database or is corrupt (file is not a database)");
	CHECK_CONTAINS(e.msg, "move it away or pass --cache");
	CHECK_INT(open_rc(path, true, 0, &s, &e), RLM_ESTORE);
	CHECK_CONTAINS(e.msg, path);

	/* A header that looks right over random pages. */
	{
		FILE *f = fopen(path, "r+b");
		CHECK(f);
		CHECK(fwrite(head, 1, sizeof(head), f) == sizeof(head));
		fclose(f);
	}
	CHECK_INT(open_rc(path, false, 0, &s, &e), RLM_ESTORE);
	CHECK_CONTAINS(e.msg, path);
	free(path);
	check_no_leaks();
}

/* Overwrite page `page` (1-based) of path with random bytes. */
static void smash_page(const char *path, int64_t page, int64_t page_size)
{
	unsigned char *b = xmalloc((size_t)page_size);
	FILE *f = fopen(path, "r+b");
	CHECK(f);
	CHECK(getrandom(b, (size_t)page_size, 0) == page_size);
	b[0] = 0x07; /* no b-tree page type: corrupt for sure */
	CHECK(fseek(f, (long)((page - 1) * page_size), SEEK_SET) == 0);
	CHECK(fwrite(b, 1, (size_t)page_size, f) == (size_t)page_size);
	fclose(f);
	free(b);
}

TEST(corrupt_page_makes_calls_fail_cleanly)
{
	char *path = tpath("rlm.db");
	struct store *s, *early;
	struct rlm_err e = {0, ""};
	struct store_stats st;
	struct store_key k;
	struct store_reply c;
	sqlite3 *db;
	int64_t psize, root, iroot;
	char text[400];
	int rc;

	s = open_ok(path);
	memset(text, 'y', sizeof(text));
	for (int i = 0; i < 300; i++) {
		key_n(&k, i);
		CHECK_INT(put_text(s, &k, text, sizeof(text), 1, &e), 0);
	}
	store_close(s); /* checkpointed into the file */
	db = raw_open(path);
	psize = raw_int(db, "PRAGMA page_size");
	root = raw_int(db, "SELECT rootpage FROM sqlite_master WHERE name = 'calls'");
	iroot = raw_int(db, "SELECT rootpage FROM sqlite_master WHERE tbl_name = 'calls'"
			    " AND type = 'index'");
	sqlite3_close(db);
	CHECK(root > 1 && iroot > 1);

	/* Opened before the damage, used after it. */
	early = open_ok(path);
	smash_page(path, root, psize);
	smash_page(path, iroot, psize);

	key_n(&k, 5);
	rc = store_call_get(early, &k, &c, &e);
	CHECK_INT(rc, RLM_ESTORE);
	CHECK_INT(e.code, RLM_ESTORE);
	CHECK_CONTAINS(e.msg, path);
	CHECK_CONTAINS(e.msg, "corrupt");
	CHECK(c.text == NULL);
	CHECK_INT(put_text(early, &k, "z", 1, 1, &e), RLM_ESTORE);
	CHECK_CONTAINS(e.msg, path);
	store_close(early);

	/* Opened after it: open may pass (page 1 is whole), calls fail. */
	rc = open_rc(path, false, 0, &s, &e);
	if (rc == 0) {
		rc = store_call_get(s, &k, &c, &e);
		CHECK_INT(rc, RLM_ESTORE);
		CHECK_CONTAINS(e.msg, "malformed");
		CHECK_INT(store_stats(s, &st, &e), RLM_ESTORE);
		CHECK_CONTAINS(e.msg, path);
		store_close(s);
	} else {
		CHECK_INT(rc, RLM_ESTORE);
		CHECK_CONTAINS(e.msg, path);
	}
	free(path);
	check_no_leaks();
}

/* A child holding the write lock of path until killed. With fresh, the
 * file is a new rollback-journal database (readers are locked out too). */
static pid_t lock_child(const char *path, bool fresh)
{
	int fds[2];
	pid_t pid;
	char c;
	CHECK(pipe(fds) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		sqlite3 *db = raw_open(path);
		close(fds[0]);
		if (fresh)
			raw_exec(db, "CREATE TABLE t(x)");
		raw_exec(db, "BEGIN EXCLUSIVE");
		raw_exec(db, fresh ? "INSERT INTO t VALUES(1)" : "DELETE FROM calls");
		if (write(fds[1], "L", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	CHECK(read(fds[0], &c, 1) == 1);
	close(fds[0]);
	return pid;
}

TEST(locked_database_reported_after_busy_timeout)
{
	char *path = tpath("rlm.db"), *path2 = tpath("other.db");
	struct store *s;
	struct rlm_err e = {0, ""};
	struct store_key k;
	int64_t t0;
	double took;
	pid_t pid;
	char *t;

	s = open_ok(path);
	key_n(&k, 1);
	CHECK_INT(put_text(s, &k, "one", 3, 1, &e), 0);
	store_close(s);

	pid = lock_child(path, false);
	/* WAL: readers go on */
	CHECK_INT(open_rc(path, true, 200, &s, &e), 0);
	t = get_text(s, &k);
	CHECK_STR(t, "one");
	free(t);
	store_close(s);
	/* a writer is told at once, not one busy timeout per write later */
	t0 = time_now_ns();
	CHECK_INT(open_rc(path, false, 200, &s, &e), RLM_ESTORE);
	took = secs_since(t0);
	CHECK_MSG(took >= 0.15 && took < 5, "gave up after %.3f s", took);
	CHECK_CONTAINS(e.msg, path);
	CHECK_CONTAINS(e.msg, "is locked by another process (database is locked) after 0.2 s");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	s = open_ok(path);
	key_n(&k, 2);
	CHECK_INT(put_text(s, &k, "two", 3, 1, &e), 0);
	store_close(s);

	/* Not in WAL mode yet: even opening waits, then says so. */
	pid = lock_child(path2, true);
	CHECK_INT(open_rc(path2, false, 200, &s, &e), RLM_ESTORE);
	CHECK_CONTAINS(e.msg, path2);
	CHECK_CONTAINS(e.msg, "locked");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	s = open_ok(path2); /* an rlm store can live beside other tables */
	store_close(s);
	free(path);
	free(path2);
	check_no_leaks();
}

struct put_arg {
	struct store *s;
	struct store_key k;
	int rc;
	atomic_bool done;
};

static void *put_thread(void *p)
{
	struct put_arg *a = p;
	struct rlm_err e = {0, ""};
	a->rc = put_text(a->s, &a->k, "late", 4, 1, &e);
	atomic_store(&a->done, true);
	return NULL;
}

/* Lookups never wait for a writer: with hit counts due to be written
 * (their oldest a second old) and another process holding the write lock,
 * a lookup returns at once, whether the writer of this process is free
 * (its transaction would wait the busy timeout) or waiting itself (its
 * mutex held). The counts are written later, none lost. */
TEST(lookups_never_wait_for_the_writer)
{
	char *path = tpath("rlm.db");
	struct store *s;
	struct rlm_err e = {0, ""};
	struct store_key k;
	struct store_stats st;
	struct put_arg pa;
	pthread_t th;
	double worst = 0;
	int gets = 0;
	pid_t pid;
	CHECK_INT(open_rc(path, false, 2000, &s, &e), 0);
	key_n(&k, 1);
	CHECK_INT(put_text(s, &k, "one", 3, 1, &e), 0);
	free(get_text(s, &k)); /* a hit pending from now */
	gets++;
	pid = lock_child(path, false);
	time_sleep_ns(1100000000LL); /* the pending hits are due */
	for (int round = 0; round < 2; round++) {
		if (round == 1) {
			/* this process's writer waiting on the lock, its mutex held */
			pa.s = s;
			pa.rc = 1;
			atomic_init(&pa.done, false);
			key_n(&pa.k, 2);
			CHECK_INT(pthread_create(&th, NULL, put_thread, &pa), 0);
			time_sleep_ns(100000000);
		}
		for (int i = 0; i < 5; i++) {
			int64_t t0 = time_now_ns();
			char *t = get_text(s, &k);
			double took = secs_since(t0);
			CHECK_STR(t, "one");
			free(t);
			gets++;
			worst = took > worst ? took : worst;
		}
	}
	CHECK_MSG(worst < 0.2, "a lookup took %.3f s", worst);
	CHECK(!atomic_load(&pa.done)); /* the write was waiting all along */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	pthread_join(th, NULL);
	CHECK_INT(pa.rc, 0); /* and went through once the lock was gone */
	store_close(s);
	s = open_ok(path);
	stats_ok(s, &st);
	CHECK_INT(st.call_hits, gets);
	store_close(s);
	free(path);
	check_no_leaks();
}

TEST(newer_schema_is_refused)
{
	char *path = tpath("rlm.db");
	struct store *s = open_ok(path);
	struct rlm_err e;
	sqlite3 *db;
	store_close(s);
	db = raw_open(path);
	raw_exec(db, "PRAGMA user_version = 7");
	sqlite3_close(db);
	CHECK_INT(open_rc(path, false, 0, &s, &e), RLM_ESTORE);
	CHECK(s == NULL);
	CHECK_CONTAINS(e.msg, path);
	CHECK_CONTAINS(e.msg, "written by a newer rlm (schema 7, this one knows 2)");
	CHECK_INT(open_rc(path, true, 0, &s, &e), RLM_ESTORE);
	CHECK_CONTAINS(e.msg, "schema 7");
	free(path);
	check_no_leaks();
}

TEST(readonly_open_creates_nothing)
{
	char *dir = tpath("sub"), *path = xasprintf("%s/deeper/rlm.db", dir), *t;
	struct store *s;
	struct rlm_err e;
	struct store_key k;
	struct store_stats st;
	struct stat sb;

	CHECK_INT(open_rc(path, true, 0, &s, &e), RLM_ENOTFOUND);
	CHECK(s == NULL);
	CHECK_CONTAINS(e.msg, path);
	CHECK_CONTAINS(e.msg, "does not exist");
	CHECK(stat(dir, &sb) < 0 && errno == ENOENT);

	/* Writable open makes the directories, 0700. */
	s = open_ok(path);
	CHECK(stat(dir, &sb) == 0 && (sb.st_mode & 0777) == 0700);
	key_n(&k, 1);
	CHECK_INT(put_text(s, &k, "v", 1, 1, &e), 0);
	store_close(s);

	CHECK_INT(open_rc(path, true, 0, &s, &e), 0);
	t = get_text(s, &k);
	CHECK_STR(t, "v");
	free(t);
	CHECK_INT(put_text(s, &k, "w", 1, 1, &e), RLM_EINVAL);
	CHECK_CONTAINS(e.msg, "read-only");
	stats_ok(s, &st);
	CHECK_INT(st.calls, 1);
	CHECK_INT(st.call_hits, 0); /* a read-only store counts nothing */
	store_close(s);
	/* Nothing left behind: no WAL, no index of it. */
	t = xasprintf("%s-wal", path);
	CHECK(stat(t, &sb) < 0 && errno == ENOENT);
	free(t);
	t = xasprintf("%s-shm", path);
	CHECK(stat(t, &sb) < 0 && errno == ENOENT);
	free(t);
	free(dir);
	free(path);
	check_no_leaks();
}

TEST(default_path_from_the_environment)
{
	struct rlm_err e = {0, ""};
	char *p;
	setenv("RLM_CACHE", "/x/y.db", 1);
	setenv("XDG_CACHE_HOME", "/xdg", 1);
	setenv("HOME", "/home/u", 1);
	p = store_default_path(&e);
	CHECK_STR(p, "/x/y.db");
	free(p);
	unsetenv("RLM_CACHE");
	p = store_default_path(&e);
	CHECK_STR(p, "/xdg/rlm/rlm.db");
	free(p);
	setenv("XDG_CACHE_HOME", "relative", 1);
	p = store_default_path(&e);
	CHECK_STR(p, "/home/u/.cache/rlm/rlm.db");
	free(p);
	unsetenv("XDG_CACHE_HOME");
	unsetenv("HOME");
	CHECK(store_default_path(&e) == NULL);
	CHECK_CONTAINS(e.msg, "HOME");
	check_no_leaks();
}

/* ---- upkeep ---- */

TEST(stats_prune_clear)
{
	char *path = tpath("rlm.db");
	struct store *s;
	struct store_stats st;
	struct store_result res = {0};
	struct store_run old, dead, live, recent, end;
	struct rlm_err e = {0, ""};
	struct store_key k;
	int64_t removed = -1, big;
	char text[2000], *t, sql[256], ans[] = "a";
	sqlite3 *db;
	pid_t pid;

	/* A run whose process ended without ending it (forked first: no
	 * connection of ours crosses the fork). */
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct store *cs = open_ok(path);
		begin_run(cs, &dead, "dead", "{}");
		_exit(0);
	}
	CHECK_INT(waitpid(pid, NULL, 0), pid);
	CHECK_INT(open_rc(path, false, 300, &s, &e), 0);
	memset(text, 'z', sizeof(text));
	for (int i = 0; i < 100; i++) {
		key_n(&k, i);
		CHECK_INT(put_text(s, &k, text, sizeof(text), 1, &e), 0);
	}
	res.answer = ans;
	for (int i = 0; i < 10; i++) {
		key_n(&k, 1000 + i);
		CHECK_INT(store_result_put(s, &k, &res, &e), 0);
	}
	begin_run(s, &old, "q", "{}");
	add_event(s, old.id, "reply", "r", NULL, 0);
	add_event(s, old.id, "end", "e", NULL, 0);
	end = old;
	end.status = "done";
	CHECK_INT(store_run_end(s, &end, &e), 0);
	begin_run(s, &live, "q", "{}");
	add_event(s, live.id, "reply", "r", NULL, 0);
	begin_run(s, &recent, "q", "{}");
	end = recent;
	end.status = "failed";
	CHECK_INT(store_run_end(s, &end, &e), 0);
	stats_ok(s, &st);
	CHECK_INT(st.calls, 100);
	CHECK_INT(st.results, 10);
	CHECK_INT(st.runs, 4);
	CHECK_INT(st.events, 3);
	CHECK(st.bytes > 100 * 2000);
	big = st.bytes;

	/* Age some rows: calls 0-49 and results 0-4 made long ago, of which
	 * call 0 was hit just now; the old run ended long ago, the dead one
	 * began long ago. */
	db = raw_open(path);
	raw_exec(db, "UPDATE calls SET created = 1000");
	raw_exec(db, "UPDATE calls SET created = 5000000000000 WHERE rowid > 50");
	raw_exec(db, "UPDATE results SET created = 1000 WHERE rowid <= 5");
	snprintf(sql, sizeof(sql), "UPDATE runs SET ended = 2000 WHERE id = '%s'", old.id);
	raw_exec(db, sql);
	raw_exec(db, "UPDATE runs SET created = 3000 WHERE question = 'dead'");
	raw_exec(db, "UPDATE runs SET created = 3000 WHERE status = 'running'"
		     " AND question = 'q'"); /* alive: kept however old */
	sqlite3_close(db);
	key_n(&k, 0);
	free(get_text(s, &k));

	CHECK_INT(store_prune(s, 86400000, &removed, &e), 0);
	CHECK_INT(removed, 49 + 5 + 2);
	/* Shrinking needs the write lock for a while: held elsewhere, it
	 * fails, and what was deleted stays deleted. */
	pid = lock_child(path, false);
	CHECK_INT(store_shrink(s, &e), RLM_ESTORE);
	CHECK_CONTAINS(e.msg, "locked");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	stats_ok(s, &st);
	CHECK_INT(st.calls, 51);
	CHECK(st.bytes >= big);
	CHECK_INT(store_shrink(s, &e), 0);
	stats_ok(s, &st);
	CHECK_INT(st.calls, 51);
	CHECK_INT(st.results, 5);
	CHECK_INT(st.runs, 2);
	CHECK_INT(st.events, 1);
	CHECK(st.bytes < big);
	t = get_text(s, &k);
	CHECK(t != NULL);
	free(t);
	key_n(&k, 1);
	CHECK(get_text(s, &k) == NULL);
	CHECK(store_run_load(s, old.id, &e) == NULL && e.code == RLM_ENOTFOUND);

	/* Nothing is that old any more. */
	CHECK_INT(store_prune(s, 86400000, &removed, &e), 0);
	CHECK_INT(removed, 0);

	CHECK_INT(store_clear(s, &e), 0);
	CHECK_INT(store_shrink(s, &e), 0);
	stats_ok(s, &st);
	CHECK_INT(st.calls + st.results + st.runs + st.events, 0);
	CHECK_INT(st.call_hits, 0);
	CHECK(st.bytes < 100000);
	/* Events of a run go on after a clear. */
	add_event(s, live.id, "reply", "again", NULL, 0);
	stats_ok(s, &st);
	CHECK_INT(st.events, 1);
	store_close(s);
	free(path);
	check_no_leaks();
}
