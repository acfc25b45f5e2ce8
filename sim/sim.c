/* SPDX-License-Identifier: MIT */
/* sim/sim.c -- the offline simulator: its configuration, timing model and
 * fault injector, the OpenAI chat completions format it speaks (JSON and
 * SSE), and the in-process llm provider "sim". The answering policy is in
 * sim/sim_policy.c, the root of the RLM loop in sim/sim_root.c. */
#include "sim.h"
#include "../llm/openai.h"
#include "../common/json.h"
#include "../common/text.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SSE_CHUNK 64	   /* content bytes per stream event */
#define SLICE_NS  10000000 /* the transport's wait checks cancel this often */

/* ---- configuration ---- */

void sim_cfg_default(struct sim_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->seed = 1;
	cfg->faults_max = -1;
	cfg->retry_after_s = 1;
	cfg->retry_after_ms = 0;
	cfg->slow_ms = 2000;
	cfg->rlm_chunks = 128;
}

static const char known_keys[] = "seed, ttft, tps, 429, 500, reset, malformed, slow, truncate, "
				 "faults, retry_after, retry_after_ms, slow_ms, code_errors, chunk, "
				 "rlm_chunks, window, explore";

/* A duration in ms: "250", "250ms", "1.5s"; unit_ms is the unit of a bare
 * number. */
static int parse_duration(const char *v, double unit_ms, double *out)
{
	size_t n = strlen(v);
	char tmp[64];
	if (n >= sizeof(tmp))
		return RLM_EINVAL;
	memcpy(tmp, v, n + 1);
	if (n > 2 && strcmp(tmp + n - 2, "ms") == 0) {
		unit_ms = 1;
		tmp[n - 2] = '\0';
	} else if (n > 1 && tmp[n - 1] == 's') {
		unit_ms = 1000;
		tmp[n - 1] = '\0';
	}
	if (text_parse_double(tmp, 0, 1e9, out))
		return RLM_EINVAL;
	*out *= unit_ms;
	return *out <= 1e9 ? 0 : RLM_EINVAL;
}

static int set_option(struct sim_cfg *c, const char *k, const char *v)
{
	double d;
	long l;
	if (strcmp(k, "seed") == 0) {
		char *end;
		unsigned long long u;
		if (*v < '0' || *v > '9')
			return RLM_EINVAL;
		u = strtoull(v, &end, 10);
		if (*end || u == ~0ULL)
			return RLM_EINVAL;
		c->seed = u;
		return 0;
	}
	if (strcmp(k, "ttft") == 0)
		return parse_duration(v, 1, &c->ttft_ms);
	if (strcmp(k, "slow_ms") == 0)
		return parse_duration(v, 1, &c->slow_ms);
	if (strcmp(k, "retry_after") == 0) {
		if (parse_duration(v, 1000, &d))
			return RLM_EINVAL;
		c->retry_after_s = d / 1000;
		return 0;
	}
	if (strcmp(k, "retry_after_ms") == 0) {
		if (parse_duration(v, 1, &d))
			return RLM_EINVAL;
		c->retry_after_ms = (long)ceil(d);
		return 0;
	}
	if (strcmp(k, "tps") == 0)
		return text_parse_double(v, 0, 1e9, &c->decode_tps);
	if (strcmp(k, "code_errors") == 0)
		return text_parse_double(v, 0, 1, &c->code_errors);
	if (strcmp(k, "chunk") == 0) {
		uint64_t u;
		if (text_parse_count(v, &u) || u < 1000 || u > 1000000000000ULL)
			return RLM_EINVAL;
		c->chunk_chars = (long)u;
		return 0;
	}
	if (strcmp(k, "rlm_chunks") == 0) {
		if (text_parse_int(v, 1, 1000000000, &l))
			return RLM_EINVAL;
		c->rlm_chunks = l;
		return 0;
	}
	if (strcmp(k, "window") == 0) {
		uint64_t u;
		if (text_parse_count(v, &u) || u > 1000000000ULL)
			return RLM_EINVAL;
		c->window = (long)u;
		return 0;
	}
	if (strcmp(k, "explore") == 0) {
		if (text_parse_int(v, 0, 100000, &l))
			return RLM_EINVAL;
		c->explore = l;
		return 0;
	}
	if (strcmp(k, "faults") == 0) {
		if (text_parse_int(v, -1, 1000000000, &l))
			return RLM_EINVAL;
		c->faults_max = l;
		return 0;
	}
	{
		static const char *const rates[] = {"429",	 "500",	 "reset",
						    "malformed", "slow", "truncate"};
		double *dst[] = {&c->p_429,	  &c->p_500,  &c->p_reset,
				 &c->p_malformed, &c->p_slow, &c->p_truncate};
		for (size_t i = 0; i < ARRAY_SIZE(rates); i++)
			if (strcmp(k, rates[i]) == 0)
				return text_parse_double(v, 0, 1, dst[i]);
	}
	return RLM_ENOTFOUND;
}

int sim_cfg_parse(const char *spec, struct sim_cfg *cfg, struct rlm_err *err)
{
	struct sim_cfg c = *cfg;
	char *copy = xstrdup(spec ? spec : ""), *save = NULL, *item;
	double sum;
	int rc = 0;
	for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *k = item, *v = strchr(item, '='), *e;
		if (v)
			*v++ = '\0';
		while (*k == ' ' || *k == '\t')
			k++;
		for (e = k + strlen(k); e > k && (e[-1] == ' ' || e[-1] == '\t'); e--)
			e[-1] = '\0';
		if (!*k && !v)
			continue; /* an empty item: "a=1,,b=2" */
		while (v && (*v == ' ' || *v == '\t'))
			v++;
		for (e = v ? v + strlen(v) : NULL; e && e > v && (e[-1] == ' ' || e[-1] == '\t');
		     e--)
			e[-1] = '\0';
		rc = set_option(&c, k, v ? v : "");
		if (rc == RLM_ENOTFOUND) {
			rc =
			    rlm_err_set(err, RLM_EINVAL,
					"unknown simulator option '%s' (known: %s)", k, known_keys);
			goto out;
		}
		if (rc) {
			rc = rlm_err_set(err, RLM_EINVAL,
					 "bad value '%s' for simulator option '%s'", v ? v : "", k);
			goto out;
		}
	}
	sum = c.p_429 + c.p_500 + c.p_reset + c.p_malformed + c.p_slow + c.p_truncate;
	if (sum > 1 + 1e-9) {
		rc = rlm_err_set(err, RLM_EINVAL, "simulator fault rates add up to %g, more than 1",
				 sum);
		goto out;
	}
	*cfg = c;
out:
	free(copy);
	return rc;
}

/* ---- the simulator object ---- */

struct sim {
	struct sim_cfg cfg; /* read-only after sim_new */
	pthread_mutex_t mu; /* guards the fields below */
	struct rng rng;
	int64_t requests;
	int64_t faults;
};

void sim_cache_id(const struct sim *s, char *dst, size_t cap)
{
	int n = snprintf(dst, cap, "seed=%llu,code_errors=%g,chunk=%ld,rlm_chunks=%ld",
			 (unsigned long long)s->cfg.seed, s->cfg.code_errors, s->cfg.chunk_chars,
			 s->cfg.rlm_chunks);
	/* only when set, so that the ids of the runs before them stay */
	if (n >= 0 && (size_t)n < cap && s->cfg.window)
		n += snprintf(dst + n, cap - (size_t)n, ",window=%ld", s->cfg.window);
	if (n >= 0 && (size_t)n < cap && s->cfg.explore)
		snprintf(dst + n, cap - (size_t)n, ",explore=%ld", s->cfg.explore);
}

struct sim *sim_new(const struct sim_cfg *cfg)
{
	struct sim *s = xcalloc(1, sizeof(*s));
	if (cfg)
		s->cfg = *cfg;
	else
		sim_cfg_default(&s->cfg);
	pthread_mutex_init(&s->mu, NULL);
	rng_seed(&s->rng, s->cfg.seed);
	return s;
}

void sim_free(struct sim *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void sim_counts(struct sim *s, int64_t *requests, int64_t *faults)
{
	pthread_mutex_lock(&s->mu);
	if (requests)
		*requests = s->requests;
	if (faults)
		*faults = s->faults;
	pthread_mutex_unlock(&s->mu);
}

/* Count one request, draw its fault; returns the request's serial. */
static int64_t draw(struct sim *s, bool valid, enum sim_fault *fault)
{
	const struct sim_cfg *c = &s->cfg;
	const double p[] = {c->p_429,	    c->p_500,  c->p_reset,
			    c->p_malformed, c->p_slow, c->p_truncate};
	static const enum sim_fault kinds[] = {SIM_429,	      SIM_500,	SIM_RESET,
					       SIM_MALFORMED, SIM_SLOW, SIM_TRUNCATE};
	int64_t serial;
	*fault = SIM_OK;
	pthread_mutex_lock(&s->mu);
	serial = ++s->requests;
	if (valid) {
		double u = rng_unit(&s->rng), acc = 0;
		for (size_t i = 0; i < ARRAY_SIZE(p); i++) {
			acc += p[i];
			if (u < acc) {
				*fault = kinds[i];
				break;
			}
		}
		if (*fault != SIM_OK && c->faults_max >= 0 && s->faults >= c->faults_max)
			*fault = SIM_OK;
		if (*fault != SIM_OK)
			s->faults++;
	}
	pthread_mutex_unlock(&s->mu);
	return serial;
}

/* ---- the OpenAI format ---- */

struct request {
	cJSON *root;
	const char *model;
	struct llm_msg *msgs;
	char **joined; /* texts joined from content parts; owned */
	size_t n;
	size_t content_bytes;
	long max_tokens; /* 0: none */
	bool stream, include_usage;
};

static void request_release(struct request *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->joined[i]);
	free(r->joined);
	free(r->msgs);
	cJSON_Delete(r->root);
}

/* The text of a content array of {"type":"text","text":...} parts. */
static int content_parts(const cJSON *arr, size_t i, char **out, size_t *bytes, char *why,
			 size_t whylen)
{
	struct buf b;
	const cJSON *part;
	size_t j = 0;
	buf_init(&b, 0);
	buf_puts(&b, "");
	cJSON_ArrayForEach(part, arr)
	{
		const char *type = json_str(part, "type"), *text = json_str(part, "text");
		if (!cJSON_IsObject(part) || !type) {
			snprintf(why, whylen,
				 "missing required parameter: 'messages[%zu].content[%zu].type'", i,
				 j);
			goto bad;
		}
		if (strcmp(type, "text") != 0) {
			snprintf(
			    why, whylen,
			    "unsupported content part type '%.64s' in 'messages[%zu].content[%zu]' "
			    "(only 'text' is supported)",
			    type, i, j);
			goto bad;
		}
		if (!text) {
			snprintf(why, whylen,
				 "missing required parameter: 'messages[%zu].content[%zu].text'", i,
				 j);
			goto bad;
		}
		if (j)
			buf_putc(&b, '\n');
		buf_puts(&b, text);
		*bytes += strlen(text);
		j++;
	}
	*out = buf_detach(&b, NULL);
	return 0;
bad:
	buf_release(&b);
	return RLM_EINVAL;
}

static int parse_request(const char *body, size_t len, struct request *r, char *why, size_t whylen)
{
	static const char *const roles[] = {"system", "developer", "user", "assistant", "tool"};
	static const enum llm_role role_of[] = {LLM_SYSTEM, LLM_SYSTEM, LLM_USER, LLM_ASSISTANT,
						LLM_ASSISTANT};
	const cJSON *msgs, *m, *it;
	size_t i = 0;
	memset(r, 0, sizeof(*r));
	if (!text_utf8_valid(body, len, NULL)) {
		snprintf(why, whylen, "the request body is not valid UTF-8");
		return RLM_EINVAL;
	}
	r->root = json_parse(body, len);
	if (!r->root) {
		snprintf(why, whylen, "we could not parse the JSON body of your request: %s",
			 len ? "it is not valid JSON" : "it is empty");
		return RLM_EINVAL;
	}
	if (!cJSON_IsObject(r->root)) {
		snprintf(why, whylen, "the request body must be a JSON object");
		return RLM_EINVAL;
	}
	it = json_get(r->root, "model");
	if (!it || cJSON_IsNull(it)) {
		snprintf(why, whylen, "you must provide a model parameter");
		return RLM_EINVAL;
	}
	if (!cJSON_IsString(it)) {
		snprintf(why, whylen, "invalid type for 'model': expected a string");
		return RLM_EINVAL;
	}
	r->model = it->valuestring;
	msgs = json_get(r->root, "messages");
	if (!msgs) {
		snprintf(why, whylen, "missing required parameter: 'messages'");
		return RLM_EINVAL;
	}
	if (!cJSON_IsArray(msgs)) {
		snprintf(why, whylen, "invalid type for 'messages': expected an array");
		return RLM_EINVAL;
	}
	r->n = (size_t)cJSON_GetArraySize(msgs);
	if (!r->n) {
		snprintf(why, whylen,
			 "invalid 'messages': empty array, expected at least one message");
		return RLM_EINVAL;
	}
	r->msgs = xcalloc(r->n, sizeof(*r->msgs));
	r->joined = xcalloc(r->n, sizeof(*r->joined));
	cJSON_ArrayForEach(m, msgs)
	{
		const char *role = json_str(m, "role");
		const cJSON *content = json_get(m, "content");
		size_t k;
		if (!cJSON_IsObject(m)) {
			snprintf(why, whylen,
				 "invalid type for 'messages[%zu]': expected an object", i);
			return RLM_EINVAL;
		}
		if (!role) {
			snprintf(why, whylen, "missing required parameter: 'messages[%zu].role'",
				 i);
			return RLM_EINVAL;
		}
		for (k = 0; k < ARRAY_SIZE(roles) && strcmp(role, roles[k]) != 0; k++)
			;
		if (k == ARRAY_SIZE(roles)) {
			snprintf(
			    why, whylen,
			    "invalid value for 'messages[%zu].role': '%.64s' (supported: system, "
			    "developer, user, assistant, tool)",
			    i, role);
			return RLM_EINVAL;
		}
		r->msgs[i].role = role_of[k];
		if (cJSON_IsString(content)) {
			r->msgs[i].text = content->valuestring;
			r->msgs[i].len = strlen(content->valuestring);
			r->content_bytes += r->msgs[i].len;
		} else if (cJSON_IsArray(content)) {
			if (content_parts(content, i, &r->joined[i], &r->content_bytes, why,
					  whylen))
				return RLM_EINVAL;
			r->msgs[i].text = r->joined[i];
			r->msgs[i].len = strlen(r->joined[i]);
		} else if ((!content || cJSON_IsNull(content)) && role_of[k] == LLM_ASSISTANT) {
			r->msgs[i].text = "";
		} else if (!content || cJSON_IsNull(content)) {
			snprintf(why, whylen, "missing required parameter: 'messages[%zu].content'",
				 i);
			return RLM_EINVAL;
		} else {
			snprintf(
			    why, whylen,
			    "invalid type for 'messages[%zu].content': expected a string or an "
			    "array of content parts",
			    i);
			return RLM_EINVAL;
		}
		i++;
	}
	{
		static const char *const keys[] = {"max_tokens", "max_completion_tokens"};
		for (size_t k = 0; k < ARRAY_SIZE(keys); k++) {
			it = json_get(r->root, keys[k]);
			if (!it || cJSON_IsNull(it))
				continue;
			if (!cJSON_IsNumber(it) || it->valuedouble < 1 || it->valuedouble > 1e9 ||
			    it->valuedouble != floor(it->valuedouble)) {
				snprintf(why, whylen,
					 "invalid value for '%s': expected an integer >= 1",
					 keys[k]);
				return RLM_EINVAL;
			}
			r->max_tokens = (long)it->valuedouble;
		}
	}
	it = json_get(r->root, "stream");
	if (it && !cJSON_IsNull(it) && !cJSON_IsBool(it)) {
		snprintf(why, whylen, "invalid type for 'stream': expected a boolean");
		return RLM_EINVAL;
	}
	r->stream = cJSON_IsTrue(it);
	it = json_get(r->root, "stream_options");
	if (it && !cJSON_IsNull(it)) {
		const cJSON *iu = json_get(it, "include_usage");
		if (!cJSON_IsObject(it) || (iu && !cJSON_IsBool(iu))) {
			snprintf(why, whylen,
				 "invalid value for 'stream_options': expected an object "
				 "{\"include_usage\": boolean}");
			return RLM_EINVAL;
		}
		r->include_usage = cJSON_IsTrue(iu);
	}
	return 0;
}

static char *error_body(const char *message, const char *type, const char *code)
{
	cJSON *root = cJSON_CreateObject(), *e = cJSON_CreateObject();
	char *out;
	json_add_str(e, "message", message);
	json_add_str(e, "type", type);
	json_add(e, "param", cJSON_CreateNull());
	json_add(e, "code", code ? cJSON_CreateString(code) : cJSON_CreateNull());
	json_add(root, "error", e);
	out = json_print(root);
	cJSON_Delete(root);
	return out;
}

/* What a reply is made of. */
struct answer {
	char id[40];
	int64_t created;
	const char *model;
	const char *text;
	size_t len;
	const char *finish;
	int64_t p, c;
	bool include_usage;
};

static char *completion_body(const struct answer *a)
{
	cJSON *root = llm_openai_reply_new("chat.completion", a->id, a->model, a->created,
					   llm_openai_message_new(a->text, a->len), a->finish);
	char *out;
	json_add(root, "usage", llm_openai_usage_new(a->p, a->c));
	out = json_print(root);
	cJSON_Delete(root);
	return out;
}

/* One "data: {chunk}\n\n" event; delta is consumed, NULL for a usage chunk. */
static void sse_event(struct buf *b, const struct answer *a, cJSON *delta, const char *finish)
{
	cJSON *root = llm_openai_reply_new("chat.completion.chunk", a->id, a->model, a->created,
					   delta, finish);
	char *s;
	if (!delta)
		json_add(root, "usage", llm_openai_usage_new(a->p, a->c));
	s = json_print(root);
	buf_printf(b, "data: %s\n\n", s);
	free(s);
	cJSON_Delete(root);
}

static char *stream_body(const struct answer *a, size_t *len)
{
	struct buf b;
	cJSON *d;
	buf_init(&b, 0);
	sse_event(&b, a, llm_openai_message_new("", 0), NULL);
	for (size_t off = 0; off < a->len;) {
		size_t k = text_utf8_floor(a->text + off, RLM_MIN(a->len - off, (size_t)SSE_CHUNK));
		if (!k)
			k = RLM_MIN(a->len - off, (size_t)SSE_CHUNK);
		d = cJSON_CreateObject();
		json_add_strn(d, "content", a->text + off, k);
		sse_event(&b, a, d, NULL);
		off += k;
	}
	sse_event(&b, a, cJSON_CreateObject(), a->finish);
	if (a->include_usage)
		sse_event(&b, a, NULL, NULL);
	buf_puts(&b, "data: [DONE]\n\n");
	return buf_detach(&b, len);
}

/* A body that is valid JSON cut in half (or a stream event that is). */
static char *malformed_body(const char *json, size_t n, bool stream, size_t *len)
{
	size_t half = n / 2 ? n / 2 : 1;
	char *out = stream ? xasprintf("data: %.*s\n\ndata: [DONE]\n\n", (int)half, json)
			   : xstrndup(json, half);
	*len = strlen(out);
	return out;
}

static int64_t ms_to_ns(double ms)
{
	return (int64_t)(ms * 1e6);
}

static int handle(struct sim *s, const char *body, size_t len, bool allow_stream,
		  struct sim_reply *out)
{
	const struct sim_cfg *c = &s->cfg;
	struct request rq;
	struct answer a;
	char why[384], *text, *json;
	size_t tlen, jlen;
	int64_t serial;
	memset(out, 0, sizeof(*out));
	out->retry_after_s = -1;
	if (parse_request(body, len, &rq, why, sizeof(why))) {
		draw(s, false, &out->fault);
		out->status = 400;
		out->body = error_body(why, "invalid_request_error", NULL);
		out->len = strlen(out->body);
		request_release(&rq);
		return 0;
	}
	if (c->window > 0 && llm_estimate_tokens(rq.content_bytes) > c->window) {
		/* as a real provider refuses a prompt over its window */
		char msg[320];
		draw(s, false, &out->fault);
		snprintf(msg, sizeof(msg),
			 "This model's maximum context length is %ld tokens. However, your messages "
			 "resulted in %lld tokens. Please reduce the length of the messages.",
			 c->window, (long long)llm_estimate_tokens(rq.content_bytes));
		out->status = 400;
		out->body = error_body(msg, "invalid_request_error", "context_length_exceeded");
		out->len = strlen(out->body);
		request_release(&rq);
		return 0;
	}
	serial = draw(s, true, &out->fault);
	out->stream = allow_stream && rq.stream;
	out->status = 200;
	out->delay_ns = ms_to_ns(c->ttft_ms);
	if (out->fault == SIM_429 || out->fault == SIM_500 || out->fault == SIM_RESET) {
		out->stream = false;
		if (out->fault == SIM_429) {
			out->status = 429;
			out->body = error_body("Rate limit reached (simulated)", "rate_limit_error",
					       "rate_limit_exceeded");
			out->retry_after_s = (long)ceil(c->retry_after_s);
			out->retry_after_ms = c->retry_after_ms > 0 ? c->retry_after_ms : 0;
		} else if (out->fault == SIM_500) {
			out->status = 500;
			out->body = error_body("The server had an error processing your request "
					       "(simulated)",
					       "server_error", NULL);
		} else {
			out->status = 0;
			out->body = xstrdup("");
		}
		out->len = strlen(out->body);
		request_release(&rq);
		return 0;
	}

	text = sim_reply_text(&s->cfg, rq.msgs, rq.n);
	tlen = strlen(text);
	memset(&a, 0, sizeof(a));
	snprintf(a.id, sizeof(a.id), "simcmpl-%lld", (long long)serial);
	a.created = (int64_t)time(NULL);
	a.model = rq.model;
	a.finish = "stop";
	a.p = llm_estimate_tokens(rq.content_bytes);
	a.c = RLM_MAX(llm_estimate_tokens(tlen), 1);
	if (rq.max_tokens > 0 && a.c > rq.max_tokens) {
		tlen = text_utf8_floor(text, (size_t)rq.max_tokens * 4);
		a.finish = "length";
		a.c = RLM_MAX(llm_estimate_tokens(tlen), 1);
	}
	a.text = text;
	a.len = tlen;
	a.include_usage = rq.include_usage;
	if (c->decode_tps > 0)
		out->delay_ns += (int64_t)((double)a.c / c->decode_tps * 1e9);
	if (out->fault == SIM_SLOW)
		out->delay_ns += ms_to_ns(c->slow_ms);
	if (out->fault == SIM_MALFORMED) {
		json = completion_body(&a);
		jlen = strlen(json);
		out->body = malformed_body(json, jlen, out->stream, &out->len);
		free(json);
	} else if (out->stream) {
		out->body = stream_body(&a, &out->len);
	} else {
		out->body = completion_body(&a);
		out->len = strlen(out->body);
	}
	free(text);
	request_release(&rq);
	return 0;
}

int sim_handle(struct sim *s, const char *body, size_t len, struct sim_reply *out)
{
	return handle(s, body, len, true, out);
}

void sim_reply_release(struct sim_reply *r)
{
	free(r->body);
	r->body = NULL;
	r->len = 0;
}

/* ---- the in-process provider ---- */

/* Answer one request as `rlm sim-serve` would over HTTP, sleeping for the
 * modelled latency: the provider's perform. */
static void sim_perform(void *impl, const char *body, size_t len, long timeout_ms,
			const atomic_bool *cancel, struct llm_provider_resp *resp)
{
	struct sim *s = impl;
	struct sim_reply r;
	int64_t start = time_now_ns(), end, limit;
	bool timed_out;
	handle(s, body, len, false, &r);
	end = start + r.delay_ns;
	limit = timeout_ms > 0 ? start + (int64_t)timeout_ms * 1000000 : INT64_MAX;
	timed_out = end > limit;
	if (timed_out)
		end = limit;
	for (;;) {
		int64_t now = time_now_ns();
		if (cancel && atomic_load(cancel)) {
			resp->rc = RLM_ECANCEL;
			snprintf(resp->err, sizeof(resp->err), "cancelled");
			goto out;
		}
		if (now >= end)
			break;
		time_sleep_ns(RLM_MIN(end - now, (int64_t)SLICE_NS));
	}
	if (timed_out) {
		resp->rc = RLM_ETIMEOUT;
		snprintf(resp->err, sizeof(resp->err),
			 "operation timed out after %ld ms (simulated)", timeout_ms);
		goto out;
	}
	if (r.fault == SIM_RESET) {
		resp->rc = RLM_EHTTP;
		snprintf(resp->err, sizeof(resp->err), "connection reset by peer (simulated)");
		goto out;
	}
	resp->status = r.status;
	if (r.fault == SIM_TRUNCATE) {
		buf_append(resp->body, r.body, r.len / 2);
		resp->rc = RLM_EHTTP;
		snprintf(resp->err, sizeof(resp->err),
			 "transfer closed with %zu bytes remaining to read (simulated)",
			 r.len - r.len / 2);
		goto out;
	}
	if (buf_append(resp->body, r.body, r.len)) {
		resp->rc = RLM_ETOOBIG;
		snprintf(resp->err, sizeof(resp->err), "response body larger than %zu bytes",
			 resp->body->max);
		goto out;
	}
	if (r.retry_after_ms > 0)
		resp->retry_after_ms = r.retry_after_ms;
	else if (r.retry_after_s >= 0)
		resp->retry_after_ms = (int64_t)r.retry_after_s * 1000;
	else
		resp->retry_after_ms = -1;
out:
	sim_reply_release(&r);
}

static int sim_open(const char *spec, void **impl, struct rlm_err *err)
{
	struct sim_cfg sc;
	int rc;
	sim_cfg_default(&sc);
	if (spec && (rc = sim_cfg_parse(spec, &sc, err)))
		return rc;
	*impl = sim_new(&sc);
	return 0;
}

static void sim_close(void *impl)
{
	sim_free(impl);
}

static void sim_provider_cache_id(const void *impl, char *dst, size_t cap)
{
	sim_cache_id(impl, dst, cap);
}

const struct llm_provider sim_provider = {
    .name = "sim",
    .endpoint = "sim://local/v1",
    .context_window = 32000,
    .open = sim_open,
    .close = sim_close,
    .cache_id = sim_provider_cache_id,
    .perform = sim_perform,
};

static void register_once(void)
{
	if (llm_provider_register(&sim_provider))
		abort(); /* "sim" taken by another provider: a bug of the program */
}

void sim_provider_register(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, register_once);
}
