/* SPDX-License-Identifier: MIT */
/* tests/test_pool.c -- the call pool against a fake server on loopback and
 * the in-process simulator: exact requests, retries, Retry-After, limits,
 * endpoints, timeouts, cancellation, ordering under faults. */
#include "harness.h"
#include "fakesrv.h"
#include "proc.h"
#include "../llm/llm.h"
#include "../rlm/rlm.h"
#include "../sim/sim.h"
#include "../common/json.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ok_openai[] =
	"{\"id\":\"x\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
	"\"Paris\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1000,"
	"\"completion_tokens\":100,\"prompt_tokens_details\":{\"cached_tokens\":400}}}";

static const char ok_anthropic[] =
	"{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":"
	"\"text\",\"text\":\"Paris\"}],\"stop_reason\":\"end_turn\",\"usage\":{\"input_tokens\":10,"
	"\"cache_read_input_tokens\":20,\"cache_creation_input_tokens\":30,\"output_tokens\":5}}";

static struct llm_model *model_for(enum llm_kind kind, const char *name, const char *urls,
				   const char *key, int retries)
{
	struct llm_model_cfg cfg = {0};
	struct rlm_err err = {0, ""};
	struct llm_model *m;
	cfg.kind = kind;
	cfg.name = name;
	cfg.base_urls = urls;
	cfg.api_key = key;
	cfg.max_retries = retries;
	cfg.backoff_base_ms = 10;
	cfg.backoff_max_ms = 50;
	m = llm_model_new(&cfg, &err);
	CHECK_MSG(m, "llm_model_new: %s", err.msg);
	return m;
}

static struct llm_pool *pool_of(int workers)
{
	struct llm_pool_cfg pc = {workers};
	struct rlm_err err = {0, ""};
	struct llm_pool *p = llm_pool_new(&pc, &err);
	CHECK_MSG(p, "llm_pool_new: %s", err.msg);
	return p;
}

static const struct llm_msg two_msgs[] = {
	{LLM_SYSTEM, "Be brief.", 9},
	{LLM_USER, "What is the capital of France?", 30},
};

TEST(openai_exact_request_and_usage)
{
	struct fakesrv *s = fakesrv_start();
	char url[128];
	struct fake_reply r = {200, NULL, ok_openai, FAKE_NORMAL, 0};
	struct llm_model *m;
	struct llm_pool *p = pool_of(4);
	struct llm_call c;
	const struct fake_request *req;
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(s));
	m = model_for(LLM_OPENAI, "gpt-5-mini", url, "sk-test", 0);
	fakesrv_push(s, &r);
	llm_call_init(&c, m, two_msgs, 2);
	c.params.max_tokens = 50;
	CHECK_INT(llm_pool_call(p, &c), 0);
	CHECK_STR(c.text, "Paris");
	CHECK_STR(c.finish_reason, "stop");
	CHECK_INT(c.usage.input_tokens, 1000);
	CHECK_INT(c.usage.output_tokens, 100);
	CHECK_INT(c.usage.cached_tokens, 400);
	CHECK_INT(c.attempts, 1);
	CHECK_INT(c.status, 200);
	/* gpt-5-mini: 600 x 0.25 + 400 x 0.025 + 100 x 2.0 per million */
	CHECK_MSG(c.cost > 0.000359 && c.cost < 0.000361, "cost %g", c.cost);
	CHECK_INT(fakesrv_count(s), 1);
	req = fakesrv_request(s, 0);
	CHECK_STR(req->method, "POST");
	CHECK_STR(req->path, "/v1/chat/completions");
	CHECK_STR(fake_header(req, "Authorization"), "Bearer sk-test");
	CHECK_STR(fake_header(req, "Content-Type"), "application/json");
	CHECK_STR(req->body, "{\"model\":\"gpt-5-mini\",\"messages\":[{\"role\":\"system\",\"content\":"
			     "\"Be brief.\"},{\"role\":\"user\",\"content\":\"What is the capital "
			     "of France?\"}],\"max_tokens\":50}");
	llm_call_release(&c);
	llm_pool_free(p);
	llm_model_free(m);
	fakesrv_stop(s);
}

TEST(anthropic_exact_request_and_usage)
{
	struct fakesrv *s = fakesrv_start();
	struct fake_reply r = {200, NULL, ok_anthropic, FAKE_NORMAL, 0};
	struct llm_model *m = model_for(LLM_ANTHROPIC, "claude-sonnet-4-5", fakesrv_url(s),
					"ak-test", 0);
	struct llm_pool *p = pool_of(2);
	struct llm_call c;
	const struct fake_request *req;
	fakesrv_push(s, &r);
	llm_call_init(&c, m, two_msgs, 2);
	CHECK_INT(llm_pool_call(p, &c), 0);
	CHECK_STR(c.text, "Paris");
	CHECK_STR(c.finish_reason, "end_turn");
	CHECK_INT(c.usage.input_tokens, 60);
	CHECK_INT(c.usage.cached_tokens, 20);
	CHECK_INT(c.usage.cache_write_tokens, 30);
	CHECK_INT(c.usage.output_tokens, 5);
	req = fakesrv_request(s, 0);
	CHECK_STR(req->path, "/v1/messages");
	CHECK_STR(fake_header(req, "x-api-key"), "ak-test");
	CHECK_STR(fake_header(req, "anthropic-version"), "2023-06-01");
	CHECK(fake_header(req, "Authorization") == NULL);
	CHECK_STR(req->body,
		  "{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":8192,\"system\":[{\"type\":"
		  "\"text\",\"text\":\"Be brief.\",\"cache_control\":{\"type\":\"ephemeral\"}}],"
		  "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
		  "\"What is the capital of France?\",\"cache_control\":{\"type\":"
		  "\"ephemeral\"}}]}]}");
	llm_call_release(&c);
	llm_pool_free(p);
	llm_model_free(m);
	fakesrv_stop(s);
}

/* One scripted failure, then success: retried, and the error is gone. */
static void retried_once(enum fake_action action, int status, const char *body)
{
	struct fakesrv *s = fakesrv_start();
	char url[128];
	struct fake_reply bad = {status, NULL, body, action, 0};
	struct fake_reply good = {200, NULL, ok_openai, FAKE_NORMAL, 0};
	struct llm_model *m;
	struct llm_pool *p = pool_of(1);
	struct llm_call c;
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(s));
	m = model_for(LLM_OPENAI, "m", url, NULL, 3);
	fakesrv_push(s, &bad);
	fakesrv_push(s, &good);
	llm_call_init(&c, m, two_msgs, 2);
	CHECK_MSG(llm_pool_call(p, &c) == 0, "rc %d: %s", c.rc, c.error);
	CHECK_STR(c.text, "Paris");
	CHECK_INT(c.attempts, 2);
	CHECK_INT(fakesrv_count(s), 2);
	llm_call_release(&c);
	llm_pool_free(p);
	llm_model_free(m);
	fakesrv_stop(s);
}

TEST(retry_500)
{
	retried_once(FAKE_NORMAL, 500, "{\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}");
}

TEST(retry_502_plain_text)
{
	retried_once(FAKE_NORMAL, 502, "<html>Bad Gateway</html>");
}

TEST(retry_529_overloaded)
{
	retried_once(FAKE_NORMAL, 529, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}");
}

TEST(retry_429)
{
	retried_once(FAKE_NORMAL, 429, "{\"error\":{\"message\":\"slow down\"}}");
}

TEST(retry_reset_connection)
{
	retried_once(FAKE_RESET, 200, "");
}

TEST(retry_closed_without_reply)
{
	retried_once(FAKE_CLOSE, 200, "");
}

TEST(retry_truncated_body)
{
	retried_once(FAKE_TRUNCATE, 200, ok_openai);
}

TEST(retry_malformed_json)
{
	retried_once(FAKE_NORMAL, 200, "{\"choices\":[{\"message\":{\"content\":\"Par");
}

TEST(retry_after_seconds_honoured)
{
	struct fakesrv *s = fakesrv_start();
	char url[128];
	struct fake_reply bad = {429, "Retry-After: 1\r\n", "{\"error\":{\"message\":\"later\"}}",
				 FAKE_NORMAL, 0};
	struct fake_reply good = {200, NULL, ok_openai, FAKE_NORMAL, 0};
	struct llm_model *m;
	struct llm_pool *p = pool_of(1);
	struct llm_call c;
	long long gap;
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(s));
	m = model_for(LLM_OPENAI, "m", url, NULL, 3);
	fakesrv_push(s, &bad);
	fakesrv_push(s, &good);
	llm_call_init(&c, m, two_msgs, 2);
	CHECK_INT(llm_pool_call(p, &c), 0);
	gap = fakesrv_request(s, 1)->t_ms - fakesrv_request(s, 0)->t_ms;
	CHECK_MSG(gap >= 990 && gap < 3000, "retried after %lld ms, want >= 1000", gap);
	llm_call_release(&c);
	llm_pool_free(p);
	llm_model_free(m);
	fakesrv_stop(s);
}

TEST(retry_after_ms_honoured)
{
	struct fakesrv *s = fakesrv_start();
	char url[128];
	struct fake_reply bad = {503, "retry-after-ms: 300\r\n", "{}", FAKE_NORMAL, 0};
	struct fake_reply good = {200, NULL, ok_openai, FAKE_NORMAL, 0};
	struct llm_model *m;
	struct llm_pool *p = pool_of(1);
	struct llm_call c;
	long long gap;
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(s));
	m = model_for(LLM_OPENAI, "m", url, NULL, 3);
	fakesrv_push(s, &bad);
	fakesrv_push(s, &good);
	llm_call_init(&c, m, two_msgs, 2);
	CHECK_INT(llm_pool_call(p, &c), 0);
	gap = fakesrv_request(s, 1)->t_ms - fakesrv_request(s, 0)->t_ms;
	CHECK_MSG(gap >= 295 && gap < 2000, "retried after %lld ms, want >= 300", gap);
	llm_call_release(&c);
	llm_pool_free(p);
	llm_model_free(m);
	fakesrv_stop(s);
}

/* A client error is not retried and its message reaches the caller. */
static void not_retried(int status, const char *body, int want_rc, const char *want_msg)
{
	struct fakesrv *s = fakesrv_start();
	char url[128];
	struct fake_reply bad = {status, NULL, body, FAKE_NORMAL, 0};
	struct llm_model *m;
	struct llm_pool *p = pool_of(1);
	struct llm_call c;
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(s));
	m = model_for(LLM_OPENAI, "m", url, NULL, 5);
	fakesrv_set_default(s, &bad);
	llm_call_init(&c, m, two_msgs, 2);
	CHECK_INT(llm_pool_call(p, &c), want_rc);
	CHECK_INT(c.attempts, 1);
	CHECK_INT(fakesrv_count(s), 1);
	CHECK(c.text == NULL);
	CHECK_CONTAINS(c.error, want_msg);
	llm_call_release(&c);
	llm_pool_free(p);
	llm_model_free(m);
	fakesrv_stop(s);
}

TEST(no_retry_400)
{
	not_retried(400,
		    "{\"error\":{\"message\":\"max_tokens is too large\",\"type\":"
		    "\"invalid_request_error\"}}",
		    RLM_EPROVIDER, "400");
}

TEST(no_retry_401)
{
	not_retried(401, "{\"error\":{\"message\":\"Incorrect API key provided\"}}", RLM_EAUTH,
		    "Incorrect API key provided");
}

TEST(no_retry_404)
{
	not_retried(404, "{\"error\":{\"message\":\"The model `nope` does not exist\"}}",
		    RLM_EPROVIDER, "does not exist");
}

TEST(retry_limit_gives_clear_error)
{
	struct fakesrv *s = fakesrv_start();
	char url[128];
	struct fake_reply bad = {503, NULL, "{\"error\":{\"message\":\"engine overloaded\"}}",
				 FAKE_NORMAL, 0};
	struct llm_model *m;
	struct llm_pool *p = pool_of(1);
	struct llm_call c;
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(s));
	m = model_for(LLM_OPENAI, "m", url, NULL, 2);
	fakesrv_set_default(s, &bad);
	llm_call_init(&c, m, two_msgs, 2);
	CHECK_INT(llm_pool_call(p, &c), RLM_EPROVIDER);
	CHECK_INT(c.attempts, 3);
	CHECK_INT(fakesrv_count(s), 3);
	CHECK_CONTAINS(c.error, "engine overloaded");
	CHECK_CONTAINS(c.error, "gave up after 3 attempts");
	llm_call_release(&c);
	llm_pool_free(p);
	llm_model_free(m);
	fakesrv_stop(s);
}

TEST(refused_connection_fails_fast)
{
	char url[64], want[96];
	struct llm_model *m;
	struct llm_pool *p = pool_of(1);
	struct llm_call c;
	int64_t t0 = time_now_ns();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", proc_closed_port());
	snprintf(want, sizeof(want), "cannot connect to %s", url);
	m = model_for(LLM_OPENAI, "m", url, NULL, 6);
	llm_call_init(&c, m, two_msgs, 2);
	CHECK_INT(llm_pool_call(p, &c), RLM_EHTTP);
	CHECK_CONTAINS(c.error, want);
	CHECK_MSG(time_now_ns() - t0 < 3000000000LL, "took %lld ms", (long long)(time_now_ns() - t0) / 1000000);
	llm_call_release(&c);
	llm_pool_free(p);
	llm_model_free(m);
}

TEST(timeout_is_retried_then_reported)
{
	struct fakesrv *s = fakesrv_start();
	char url[128];
	struct fake_reply hang = {200, NULL, "", FAKE_HANG, 0};
	struct llm_model_cfg cfg = {0};
	struct rlm_err err = {0, ""};
	struct llm_model *m;
	struct llm_pool *p = pool_of(1);
	struct llm_call c;
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(s));
	cfg.kind = LLM_OPENAI;
	cfg.name = "m";
	cfg.base_urls = url;
	cfg.timeout_ms = 300;
	cfg.max_retries = 1;
	cfg.backoff_base_ms = 10;
	m = llm_model_new(&cfg, &err);
	CHECK(m);
	fakesrv_set_default(s, &hang);
	llm_call_init(&c, m, two_msgs, 2);
	CHECK_INT(llm_pool_call(p, &c), RLM_ETIMEOUT);
	CHECK_INT(c.attempts, 2);
	CHECK_CONTAINS(c.error, "gave up after 2 attempts");
	llm_call_release(&c);
	llm_pool_free(p);
	llm_model_free(m);
	fakesrv_stop(s);
}

struct canceller {
	atomic_bool *flag;
	int ms;
};

static void *cancel_later(void *arg)
{
	struct canceller *k = arg;
	time_sleep_ns((int64_t)k->ms * 1000000);
	atomic_store(k->flag, true);
	return NULL;
}

TEST(cancel_in_flight)
{
	struct fakesrv *s = fakesrv_start();
	char url[128];
	struct fake_reply hang = {200, NULL, "", FAKE_HANG, 0};
	struct llm_model *m;
	struct llm_pool *p = pool_of(2);
	struct llm_call c[4], *ptrs[4];
	atomic_bool flag = false;
	struct canceller k = {&flag, 200};
	pthread_t th;
	int64_t t0 = time_now_ns();
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(s));
	m = model_for(LLM_OPENAI, "m", url, NULL, 3);
	fakesrv_set_default(s, &hang);
	for (int i = 0; i < 4; i++) {
		llm_call_init(&c[i], m, two_msgs, 2);
		c[i].cancel = &flag;
		ptrs[i] = &c[i];
	}
	pthread_create(&th, NULL, cancel_later, &k);
	CHECK_INT(llm_pool_run(p, ptrs, 4), 4);
	pthread_join(th, NULL);
	for (int i = 0; i < 4; i++) {
		CHECK_INT(c[i].rc, RLM_ECANCEL);
		llm_call_release(&c[i]);
	}
	CHECK_MSG(time_now_ns() - t0 < 2000000000LL, "cancel took %lld ms",
		  (long long)(time_now_ns() - t0) / 1000000);
	llm_pool_free(p);
	llm_model_free(m);
	fakesrv_stop(s);
}

TEST(keep_alive_reuses_connection)
{
	struct fakesrv *s = fakesrv_start();
	char url[128];
	struct fake_reply good = {200, NULL, ok_openai, FAKE_NORMAL, 0};
	struct llm_model *m;
	struct llm_pool *p = pool_of(1);
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(s));
	m = model_for(LLM_OPENAI, "m", url, NULL, 0);
	fakesrv_set_default(s, &good);
	for (int i = 0; i < 50; i++) {
		struct llm_call c;
		llm_call_init(&c, m, two_msgs, 2);
		CHECK_INT(llm_pool_call(p, &c), 0);
		llm_call_release(&c);
	}
	CHECK_INT(fakesrv_count(s), 50);
	CHECK_INT(fakesrv_connections(s), 1);
	llm_pool_free(p);
	llm_model_free(m);
	fakesrv_stop(s);
}

TEST(endpoints_spread_the_load)
{
	struct fakesrv *a = fakesrv_start(), *b = fakesrv_start();
	char urls[256];
	struct fake_reply good = {200, NULL, ok_openai, FAKE_NORMAL, 20};
	struct llm_model *m;
	struct llm_pool *p = pool_of(8);
	struct llm_call c[64], *ptrs[64];
	snprintf(urls, sizeof(urls), "%s/v1, %s/v1/", fakesrv_url(a), fakesrv_url(b));
	m = model_for(LLM_OPENAI, "m", urls, NULL, 0);
	CHECK_INT(llm_model_endpoints(m), 2);
	fakesrv_set_default(a, &good);
	fakesrv_set_default(b, &good);
	for (int i = 0; i < 64; i++) {
		llm_call_init(&c[i], m, two_msgs, 2);
		ptrs[i] = &c[i];
	}
	CHECK_INT(llm_pool_run(p, ptrs, 64), 0);
	CHECK_MSG(fakesrv_count(a) >= 16 && fakesrv_count(b) >= 16, "split %zu / %zu",
		  fakesrv_count(a), fakesrv_count(b));
	CHECK_INT(fakesrv_count(a) + fakesrv_count(b), 64);
	for (int i = 0; i < 64; i++)
		llm_call_release(&c[i]);
	llm_pool_free(p);
	llm_model_free(m);
	fakesrv_stop(a);
	fakesrv_stop(b);
}

TEST(failing_endpoint_is_backed_off)
{
	struct fakesrv *s = fakesrv_start();
	char urls[256];
	struct fake_reply good = {200, NULL, ok_openai, FAKE_NORMAL, 5};
	struct llm_model *m;
	struct llm_pool *p = pool_of(4);
	struct llm_call c[40], *ptrs[40];
	struct llm_stats st;
	snprintf(urls, sizeof(urls), "http://127.0.0.1:%d/v1,%s/v1", proc_closed_port(),
		 fakesrv_url(s));
	m = model_for(LLM_OPENAI, "m", urls, NULL, 4);
	fakesrv_set_default(s, &good);
	for (int i = 0; i < 40; i++) {
		llm_call_init(&c[i], m, two_msgs, 2);
		ptrs[i] = &c[i];
	}
	CHECK_INT(llm_pool_run(p, ptrs, 40), 0);
	CHECK_INT(fakesrv_count(s), 40);
	llm_pool_stats(p, &st);
	/* Only the first few calls may try the dead endpoint before it is backed off. */
	CHECK_MSG(st.attempts - 40 <= 8, "%lld attempts for 40 calls", (long long)st.attempts);
	for (int i = 0; i < 40; i++)
		llm_call_release(&c[i]);
	llm_pool_free(p);
	llm_model_free(m);
	fakesrv_stop(s);
}

TEST(max_inflight_per_endpoint)
{
	struct fakesrv *s = fakesrv_start();
	char url[128];
	struct fake_reply slow = {200, NULL, ok_openai, FAKE_NORMAL, 100};
	struct llm_model_cfg cfg = {0};
	struct rlm_err err = {0, ""};
	struct llm_model *m;
	struct llm_pool *p = pool_of(8);
	struct llm_call c[6], *ptrs[6];
	int64_t t0;
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(s));
	cfg.kind = LLM_OPENAI;
	cfg.name = "m";
	cfg.base_urls = url;
	cfg.max_inflight = 2;
	m = llm_model_new(&cfg, &err);
	CHECK(m);
	fakesrv_set_default(s, &slow);
	for (int i = 0; i < 6; i++) {
		llm_call_init(&c[i], m, two_msgs, 2);
		ptrs[i] = &c[i];
	}
	t0 = time_now_ns();
	CHECK_INT(llm_pool_run(p, ptrs, 6), 0);
	/* 6 calls, 2 at a time, 100 ms each: at least 3 waves. */
	CHECK_MSG(time_now_ns() - t0 >= 290000000LL, "took %lld ms",
		  (long long)(time_now_ns() - t0) / 1000000);
	for (int i = 0; i < 6; i++)
		llm_call_release(&c[i]);
	llm_pool_free(p);
	llm_model_free(m);
	fakesrv_stop(s);
}

TEST(requests_per_minute_limit)
{
	struct fakesrv *s = fakesrv_start();
	char url[128];
	struct fake_reply good = {200, NULL, ok_openai, FAKE_NORMAL, 0};
	struct llm_model_cfg cfg = {0};
	struct rlm_err err = {0, ""};
	struct llm_model *m;
	struct llm_pool *p = pool_of(8);
	struct llm_call c[12], *ptrs[12];
	int64_t t0;
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(s));
	cfg.kind = LLM_OPENAI;
	cfg.name = "m";
	cfg.base_urls = url;
	cfg.rpm = 60; /* one a second, bursts of 10 */
	m = llm_model_new(&cfg, &err);
	CHECK(m);
	fakesrv_set_default(s, &good);
	for (int i = 0; i < 12; i++) {
		llm_call_init(&c[i], m, two_msgs, 2);
		ptrs[i] = &c[i];
	}
	t0 = time_now_ns();
	CHECK_INT(llm_pool_run(p, ptrs, 12), 0);
	CHECK_MSG(time_now_ns() - t0 >= 1800000000LL, "12 calls at 60 rpm took %lld ms",
		  (long long)(time_now_ns() - t0) / 1000000);
	for (int i = 0; i < 12; i++)
		llm_call_release(&c[i]);
	llm_pool_free(p);
	llm_model_free(m);
	fakesrv_stop(s);
}

/* A throttled endpoint is passed over for one that can send at once, even
 * when it is the less loaded: a fast endpoint spends its burst, the rest
 * goes to the slow one instead of waiting seconds for the fast one's
 * bucket. */
TEST(rate_limited_endpoint_is_passed_over)
{
	struct fakesrv *fast = fakesrv_start(), *slow = fakesrv_start();
	struct fake_reply quick = {200, NULL, ok_openai, FAKE_NORMAL, 0};
	struct fake_reply lazy = {200, NULL, ok_openai, FAKE_NORMAL, 200};
	struct llm_model_cfg cfg = {0};
	struct rlm_err err = {0, ""};
	struct llm_model *m;
	struct llm_pool *p = pool_of(8);
	struct llm_call c[20], *ptrs[20];
	char urls[256];
	int64_t t0;
	snprintf(urls, sizeof(urls), "%s/v1,%s/v1", fakesrv_url(fast), fakesrv_url(slow));
	cfg.kind = LLM_OPENAI;
	cfg.name = "m";
	cfg.base_urls = urls;
	cfg.rpm = 60; /* per endpoint: one a second, bursts of 10 */
	m = llm_model_new(&cfg, &err);
	CHECK_MSG(m, "%s", err.msg);
	fakesrv_set_default(fast, &quick);
	fakesrv_set_default(slow, &lazy);
	for (int i = 0; i < 20; i++) {
		llm_call_init(&c[i], m, two_msgs, 2);
		ptrs[i] = &c[i];
	}
	t0 = time_now_ns();
	CHECK_INT(llm_pool_run(p, ptrs, 20), 0);
	/* Both bursts cover the 20 calls: no wait on a bucket (~10 s if the
	 * fast endpoint took them all). */
	CHECK_MSG(time_now_ns() - t0 < 3000000000LL, "took %lld ms", (long long)(time_now_ns() - t0) / 1000000);
	/* A burst of 10 each; a slow run (ASan) may see one or two more
	 * tokens refill on the fast one (one a second). */
	CHECK_MSG(fakesrv_count(fast) >= 10 && fakesrv_count(fast) <= 12, "fast %d",
		  (int)fakesrv_count(fast));
	CHECK_INT(fakesrv_count(fast) + fakesrv_count(slow), 20);
	for (int i = 0; i < 20; i++)
		llm_call_release(&c[i]);
	llm_pool_free(p);
	llm_model_free(m);
	fakesrv_stop(fast);
	fakesrv_stop(slow);
}

/* Many calls through the in-process simulator with every kind of fault:
 * each succeeds within the retry limit, answers its own question, in
 * order; the simulator saw exactly the attempts the pool counted. */
TEST(batch_under_faults_in_order)
{
	enum { N = 600 };
	struct sim_cfg sc;
	struct rlm_err err = {0, ""};
	struct sim *sim;
	struct llm_model_cfg cfg = {0};
	struct llm_model *m;
	struct llm_pool *p = pool_of(32);
	static struct llm_call c[N];
	static struct llm_call *ptrs[N];
	static struct llm_msg msgs[N];
	static char text[N][128];
	struct llm_stats st;
	int64_t reqs, faults;
	sim_cfg_default(&sc);
	CHECK_INT(sim_cfg_parse("429=0.1,500=0.1,reset=0.05,malformed=0.05,truncate=0.05,"
				"retry_after=0,retry_after_ms=5,seed=3",
				&sc, &err),
		  0);
	sim = sim_new(&sc);
	cfg.kind = LLM_INPROC;
	cfg.name = "sim";
	cfg.provider = &sim_provider;
	cfg.impl = sim;
	cfg.max_retries = 10;
	cfg.backoff_base_ms = 2;
	cfg.backoff_max_ms = 10;
	m = llm_model_new(&cfg, &err);
	CHECK_MSG(m, "%s", err.msg);
	for (int i = 0; i < N; i++) {
		snprintf(text[i], sizeof(text[i]),
			 "Question: what is the code of item-%d?\n\nText:\nthe code of item-%d is "
			 "c%d\nnothing else here\n",
			 i, i, i * 7);
		msgs[i] = (struct llm_msg){LLM_USER, text[i], strlen(text[i])};
		llm_call_init(&c[i], m, &msgs[i], 1);
		ptrs[i] = &c[i];
	}
	CHECK_INT(llm_pool_run(p, ptrs, N), 0);
	for (int i = 0; i < N; i++) {
		char want[32];
		snprintf(want, sizeof(want), "is c%d", i * 7);
		CHECK_MSG(c[i].rc == 0, "call %d: %s", i, c[i].error);
		CHECK_CONTAINS(c[i].text, want);
		llm_call_release(&c[i]);
	}
	llm_pool_stats(p, &st);
	sim_counts(sim, &reqs, &faults);
	CHECK_INT(st.calls, N);
	CHECK_INT(reqs, st.attempts);
	CHECK_INT(faults, st.attempts - N);
	CHECK_MSG(faults > N / 5, "only %lld faults injected", (long long)faults);
	llm_pool_free(p);
	llm_model_free(m);
	sim_free(sim);
}

TEST(model_config_errors)
{
	struct llm_model_cfg cfg = {0};
	struct rlm_err err = {0, ""};
	cfg.kind = LLM_ANTHROPIC;
	cfg.name = "claude-sonnet-4-5";
	CHECK(llm_model_new(&cfg, &err) == NULL);
	CHECK_CONTAINS(err.msg, "ANTHROPIC_API_KEY");
	cfg.kind = LLM_OPENAI;
	cfg.name = "gpt-5";
	CHECK(llm_model_new(&cfg, &err) == NULL);
	CHECK_CONTAINS(err.msg, "OPENAI_API_KEY");
	cfg.base_urls = "ftp://example.com";
	CHECK(llm_model_new(&cfg, &err) == NULL);
	CHECK_CONTAINS(err.msg, "must start with http:// or https://");
	cfg.base_urls = "http://127.0.0.1:8000/v1";
	cfg.extra_json = "[1,2]";
	CHECK(llm_model_new(&cfg, &err) == NULL);
	CHECK_CONTAINS(err.msg, "not a JSON object");
}

TEST(price_table)
{
	struct llm_price p = llm_price_lookup("gpt-5-mini-2025-08-07");
	struct llm_usage u = {1000000, 1000000, 0, 0};
	CHECK(p.known);
	CHECK(p.input == 0.25 && p.output == 2.0);
	CHECK(llm_cost(&p, &u) == 2.25);
	p = llm_price_lookup("openai/gpt-5");
	CHECK(p.known && p.input == 1.25);
	p = llm_price_lookup("claude-sonnet-4-5-20250929");
	CHECK(p.known && p.output == 15.0);
	p = llm_price_lookup("my-local-model");
	CHECK(!p.known);
	CHECK(llm_cost(&p, &u) == 0);
}

TEST(price_overrides_file)
{
	char path[512];
	FILE *f;
	struct rlm_err err = {0, ""};
	struct llm_price p;
	snprintf(path, sizeof(path), "%s/prices.json", harness_tmpdir());
	f = fopen(path, "w");
	fputs("{\"my-local-model\": {\"input\": 0.5, \"output\": 1.5}, "
	      "\"gpt-5\": {\"input\": 1, \"output\": 2, \"cached\": 0.1}}",
	      f);
	fclose(f);
	CHECK_INT(llm_prices_load(path, &err), 0);
	p = llm_price_lookup("my-local-model");
	CHECK(p.known && p.input == 0.5 && p.output == 1.5 && p.cached == 0.5);
	p = llm_price_lookup("gpt-5");
	CHECK(p.input == 1 && p.cached == 0.1);
	/* an override of gpt-5 does not hide the longer built-in gpt-5-mini */
	p = llm_price_lookup("gpt-5-mini-2025-08-07");
	CHECK(p.input == 0.25);
	p = llm_price_lookup("gpt-5-2025-08-07");
	CHECK(p.input == 1);
	f = fopen(path, "w");
	fputs("{\"free-writes\": {\"input\": 2, \"output\": 4, \"cache_write\": 0}}", f);
	fclose(f);
	CHECK_INT(llm_prices_load(path, &err), 0);
	p = llm_price_lookup("free-writes");
	CHECK(p.cache_write == 0 && p.input == 2);
	/* a load replaces the whole set */
	CHECK(!llm_price_lookup("my-local-model").known);
	f = fopen(path, "w");
	fputs("{\"x\": {\"input\": -1, \"output\": 1}}", f);
	fclose(f);
	CHECK(llm_prices_load(path, &err) != 0);
	CHECK_CONTAINS(err.msg, "non-negative");
	/* a bad file leaves the set it would have replaced */
	CHECK(llm_price_lookup("free-writes").known);
	CHECK(!llm_price_lookup("x").known);
}

TEST(malformed_url_is_not_retried)
{
	struct llm_model *m = model_for(LLM_OPENAI, "m", "http://127.0.0.1:99999/v1", NULL, 6);
	struct llm_pool *p = pool_of(1);
	struct llm_call c;
	llm_call_init(&c, m, two_msgs, 2);
	CHECK_INT(llm_pool_call(p, &c), RLM_EHTTP);
	CHECK_INT(c.attempts, 1);
	llm_call_release(&c);
	llm_pool_free(p);
	llm_model_free(m);
}

TEST(retry_after_goes_to_another_endpoint)
{
	struct fakesrv *a = fakesrv_start(), *b = fakesrv_start();
	char urls[256];
	struct fake_reply busy = {429, "Retry-After: 20\r\n", "{\"error\":{\"message\":\"busy\"}}",
				  FAKE_NORMAL, 0};
	struct fake_reply good = {200, NULL, ok_openai, FAKE_NORMAL, 0};
	struct llm_model *m;
	struct llm_pool *p = pool_of(1);
	struct llm_call c;
	int64_t t0 = time_now_ns();
	snprintf(urls, sizeof(urls), "%s/v1,%s/v1", fakesrv_url(a), fakesrv_url(b));
	m = model_for(LLM_OPENAI, "m", urls, NULL, 4);
	fakesrv_set_default(a, &busy);
	fakesrv_set_default(b, &good);
	for (int i = 0; i < 4; i++) {
		llm_call_init(&c, m, two_msgs, 2);
		CHECK_MSG(llm_pool_call(p, &c) == 0, "%s", c.error);
		llm_call_release(&c);
	}
	/* the throttled endpoint is asked at most once, and nobody waits 20 s */
	CHECK(fakesrv_count(a) <= 1);
	CHECK_MSG(time_now_ns() - t0 < 3000000000LL, "took %lld ms", (long long)(time_now_ns() - t0) / 1000000);
	llm_pool_free(p);
	llm_model_free(m);
	fakesrv_stop(a);
	fakesrv_stop(b);
}

TEST(retry_after_hours_gives_up)
{
	struct fakesrv *s = fakesrv_start();
	char url[128];
	struct fake_reply busy = {429, "Retry-After: 7200\r\n", "{\"error\":{\"message\":\"quota\"}}",
				  FAKE_NORMAL, 0};
	struct llm_model *m;
	struct llm_pool *p = pool_of(1);
	struct llm_call c;
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(s));
	m = model_for(LLM_OPENAI, "m", url, NULL, 4);
	fakesrv_set_default(s, &busy);
	llm_call_init(&c, m, two_msgs, 2);
	CHECK_INT(llm_pool_call(p, &c), RLM_EPROVIDER);
	CHECK_INT(c.attempts, 1);
	CHECK_CONTAINS(c.error, "the server asked to retry after");
	CHECK_CONTAINS(c.error, "quota");
	llm_call_release(&c);
	llm_pool_free(p);
	llm_model_free(m);
	fakesrv_stop(s);
}

/* ---- in-process providers ---- */

/* A provider of the test's own: it answers every request with the text
 * its spec gives, or, with the spec "fail", with a 500. */
struct fixed {
	char *text;
	bool fail;
	atomic_int calls;
	char *last_body; /* the last request, as the pool sent it */
};

static atomic_int fixed_closed;

static int fixed_open(const char *spec, void **impl, struct rlm_err *err)
{
	struct fixed *f;
	if (spec && strcmp(spec, "bad") == 0)
		return rlm_err_set(err, RLM_EINVAL, "bad fixed spec '%s'", spec);
	f = xcalloc(1, sizeof(*f));
	f->text = xstrdup(spec ? spec : "fixed text");
	f->fail = spec && strcmp(spec, "fail") == 0;
	*impl = f;
	return 0;
}

static void fixed_close(void *impl)
{
	struct fixed *f = impl;
	if (!f)
		return;
	atomic_fetch_add(&fixed_closed, 1);
	free(f->text);
	free(f->last_body);
	free(f);
}

static void fixed_cache_id(const void *impl, char *dst, size_t cap)
{
	const struct fixed *f = impl;
	snprintf(dst, cap, "text=%s", f->text);
}

static void fixed_perform(void *impl, const char *body, size_t len, long timeout_ms,
			  const atomic_bool *cancel, struct llm_provider_resp *resp)
{
	struct fixed *f = impl;
	char *reply;
	(void)timeout_ms;
	(void)cancel;
	atomic_fetch_add(&f->calls, 1);
	free(f->last_body);
	f->last_body = xstrndup(body, len);
	if (f->fail) {
		resp->status = 500;
		buf_puts(resp->body, "{\"error\":{\"message\":\"down\"}}");
		return;
	}
	reply = xasprintf("{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
			  "\"%s\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":7,"
			  "\"completion_tokens\":3}}",
			  f->text);
	resp->status = 200;
	buf_puts(resp->body, reply);
	free(reply);
}

static const struct llm_provider fixed_provider = {
	.name = "fixed",
	.endpoint = "fixed://local/v1",
	.context_window = 4096,
	.open = fixed_open,
	.close = fixed_close,
	.cache_id = fixed_cache_id,
	.perform = fixed_perform,
};

static void models_cfg(struct rlm_models_cfg *c, const char *provider, const char *model)
{
	rlm_models_cfg_init(c);
	c->provider = provider;
	c->model = model;
	c->concurrency = 2;
	c->quiet = true;
}

/* Which context windows are known (a sub-call over one is refused before
 * it is sent): the built-in table's, a price file's "context_window", the
 * configuration's (--sub-context-window), an in-process provider's; not
 * the 128,000 assumed of a model nobody described. */
TEST(context_window_known_or_assumed)
{
	char path[512];
	FILE *f;
	struct rlm_models_cfg mc;
	struct rlm_models ms;
	struct rlm_err err = {0, ""};
	snprintf(path, sizeof(path), "%s/prices-window.json", harness_tmpdir());
	f = fopen(path, "w");
	fputs("{\"window-model\": {\"input\": 1, \"output\": 2, \"context_window\": 50000}}", f);
	fclose(f);
	models_cfg(&mc, "openai", "gpt-5-mini");
	mc.base_url = "http://127.0.0.1:9/v1";
	mc.api_key = "k";
	mc.prices = path;
	mc.sub_model = "window-model";
	CHECK_MSG(rlm_models_init(&ms, &mc, &err) == 0, "%s", err.msg);
	CHECK_INT(llm_model_context_window(ms.model), 400000);
	CHECK(llm_model_context_window_known(ms.model));
	CHECK_INT(llm_model_context_window(ms.sub), 50000);
	CHECK(llm_model_context_window_known(ms.sub));
	rlm_models_release(&ms);
	/* nobody said: assumed, not known; the flag makes it known */
	mc.sub_model = "my-other-model";
	CHECK_MSG(rlm_models_init(&ms, &mc, &err) == 0, "%s", err.msg);
	CHECK_INT(llm_model_context_window(ms.sub), 128000);
	CHECK(!llm_model_context_window_known(ms.sub));
	rlm_models_release(&ms);
	mc.sub_context_window = 64000;
	CHECK_MSG(rlm_models_init(&ms, &mc, &err) == 0, "%s", err.msg);
	CHECK_INT(llm_model_context_window(ms.sub), 64000);
	CHECK(llm_model_context_window_known(ms.sub));
	CHECK_INT(llm_model_context_window(ms.model), 400000);
	rlm_models_release(&ms);
	/* one model for both: the flag is its window */
	mc.sub_model = NULL;
	mc.model = "my-other-model";
	CHECK_MSG(rlm_models_init(&ms, &mc, &err) == 0, "%s", err.msg);
	CHECK(ms.sub == ms.model);
	CHECK_INT(llm_model_context_window(ms.model), 64000);
	CHECK(llm_model_context_window_known(ms.model));
	rlm_models_release(&ms);
}

TEST(inproc_provider_registered_is_called)
{
	static const struct llm_provider impostor = {.name = "fixed", .open = fixed_open,
						     .perform = fixed_perform};
	static const struct llm_provider openai = {.name = "openai", .open = fixed_open,
						   .perform = fixed_perform};
	struct rlm_models_cfg mc;
	struct rlm_models ms;
	struct rlm_err err = {0, ""};
	struct llm_stats st;
	struct llm_call c;
	struct fixed *f;
	char *names;

	CHECK(llm_provider_find("fixed") == NULL);
	CHECK_INT(llm_provider_register(&fixed_provider), 0);
	CHECK_INT(llm_provider_register(&fixed_provider), 0); /* again: a no-op */
	CHECK_INT(llm_provider_register(&impostor), RLM_EINVAL);
	CHECK_INT(llm_provider_register(&openai), RLM_EINVAL);
	CHECK(llm_provider_find("fixed") == &fixed_provider);
	names = llm_provider_names();
	CHECK_CONTAINS(names, "openai, anthropic");
	CHECK_CONTAINS(names, ", fixed");
	free(names);

	/* --provider fixed --sim TEXT: the pool calls the provider, which
	 * is handed the openai request */
	models_cfg(&mc, "fixed", "any-model");
	mc.provider_spec = "the answer is 42";
	CHECK_MSG(rlm_models_init(&ms, &mc, &err) == 0, "%s", err.msg);
	CHECK_INT(ms.kind, LLM_INPROC);
	CHECK_STR(ms.provider, "fixed");
	CHECK(ms.inproc == &fixed_provider);
	CHECK(ms.sub == ms.model);
	CHECK_STR(llm_model_provider(ms.model), "fixed");
	CHECK_STR(llm_model_name(ms.model), "any-model");
	CHECK_STR(llm_model_cache_id(ms.model), "fixed:text=the answer is 42");
	CHECK_INT(llm_model_context_window(ms.model), 4096);
	CHECK_INT(llm_model_endpoints(ms.model), 1);
	llm_call_init(&c, ms.model, two_msgs, 2);
	CHECK_MSG(llm_pool_call(ms.pool, &c) == 0, "%s", c.error);
	CHECK_STR(c.text, "the answer is 42");
	CHECK_INT(c.usage.input_tokens, 7);
	CHECK_INT(c.usage.output_tokens, 3);
	CHECK(c.cost == 0); /* in-process: free unless a price file says */
	llm_call_release(&c);
	llm_pool_stats(ms.pool, &st);
	CHECK_INT(st.calls, 1);
	f = ms.impl;
	CHECK_INT(atomic_load(&f->calls), 1);
	CHECK_CONTAINS(f->last_body, "\"model\":\"any-model\"");
	CHECK_CONTAINS(f->last_body, "What is the capital of France?");
	rlm_models_release(&ms);
	CHECK_INT(atomic_load(&fixed_closed), 1);
	CHECK(ms.pool == NULL && ms.impl == NULL);

	/* without --provider, the name of a registered provider picks it */
	models_cfg(&mc, NULL, "fixed");
	CHECK_MSG(rlm_models_init(&ms, &mc, &err) == 0, "%s", err.msg);
	CHECK_STR(ms.provider, "fixed");
	CHECK_STR(llm_model_name(ms.model), "fixed");
	CHECK_STR(llm_model_cache_id(ms.model), "fixed:text=fixed text");
	rlm_models_release(&ms);
	CHECK_INT(atomic_load(&fixed_closed), 2);

	/* its errors are retried and reported in its name */
	models_cfg(&mc, "fixed", NULL);
	mc.provider_spec = "fail";
	mc.max_retries = 1;
	CHECK_MSG(rlm_models_init(&ms, &mc, &err) == 0, "%s", err.msg);
	CHECK_STR(llm_model_name(ms.model), "fixed");
	llm_call_init(&c, ms.model, two_msgs, 2);
	CHECK_INT(llm_pool_call(ms.pool, &c), RLM_EPROVIDER);
	CHECK_INT(c.attempts, 2);
	CHECK_CONTAINS(c.error, "fixed 500 from fixed://local/v1: down");
	llm_call_release(&c);
	rlm_models_release(&ms);

	/* a spec it refuses, and a sub-model of it under another root */
	models_cfg(&mc, "fixed", NULL);
	mc.provider_spec = "bad";
	CHECK_INT(rlm_models_init(&ms, &mc, &err), RLM_EINVAL);
	CHECK_STR(err.msg, "bad fixed spec 'bad'");
	models_cfg(&mc, NULL, "gpt-5");
	mc.api_key = "sk-test";
	mc.sub_model = "fixed";
	CHECK_INT(rlm_models_init(&ms, &mc, &err), RLM_EINVAL);
	CHECK_STR(err.msg, "the sub-model 'fixed' needs the root model to be 'fixed' too");
	CHECK(ms.pool == NULL && ms.model == NULL);
}

TEST(unregistered_provider_is_a_clear_error)
{
	struct rlm_models_cfg mc;
	struct rlm_models ms;
	struct rlm_err err = {0, ""};
	struct llm_model_cfg cfg = {0};
	models_cfg(&mc, "nope", "m");
	CHECK_INT(rlm_models_init(&ms, &mc, &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "unknown provider 'nope' (known: openai, anthropic");
	if (!llm_provider_find("sim")) {
		/* a program that set up no simulator: the default is not there */
		CHECK_STR(err.msg, "unknown provider 'nope' (known: openai, anthropic)");
		models_cfg(&mc, NULL, NULL);
		CHECK_INT(rlm_models_init(&ms, &mc, &err), RLM_EINVAL);
		CHECK_STR(err.msg, "unknown provider 'sim' (known: openai, anthropic)");
	}
	sim_provider_register();
	sim_provider_register(); /* idempotent */
	models_cfg(&mc, "nope", "m");
	CHECK_INT(rlm_models_init(&ms, &mc, &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "unknown provider 'nope' (known: openai, anthropic, sim");
	/* a model of an in-process kind needs its provider and an instance */
	cfg.kind = LLM_INPROC;
	cfg.name = "m";
	CHECK(llm_model_new(&cfg, &err) == NULL);
	CHECK_STR(err.msg, "the in-process provider needs an instance to call");
	cfg.provider = &sim_provider;
	CHECK(llm_model_new(&cfg, &err) == NULL);
	CHECK_STR(err.msg, "the sim provider needs an instance to call");
}
