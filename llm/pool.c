/* SPDX-License-Identifier: MIT */
/* llm/pool.c -- the call pool: worker threads that perform model calls,
 * with per-endpoint limits, retries with backoff, and failover.
 *
 * DESIGN
 * Calls wait in one FIFO. A worker pops a call and performs it to the end:
 * choose an endpoint (healthy, least loaded), wait for its concurrency and
 * rate limits, build the request with the provider's wire format, send it
 * (curl, or an in-process provider), classify the outcome, and retry the
 * retryable ones after a backoff with full jitter that honours Retry-After.
 * Nothing a worker does waits on another queued call, so the pool cannot
 * deadlock on itself; a call made from inside a worker (a completion
 * callback that submits more work and waits) is performed inline.
 *
 * Retry policy:
 *   retried:     429, 408, 409, 5xx (incl. 529), connection and transfer
 *                failures, timeouts, a 2xx body that does not parse;
 *   not retried: other 4xx (400, 401, 403, 404, 413, 422, ...), cancel,
 *                a body over the size cap.
 * A connection that cannot be made at all (refused, unknown host, connect
 * timeout) is tried at most twice per endpoint, quickly, so a wrong base
 * URL fails with a clear message instead of after minutes of backoff; a
 * malformed URL or a rejected TLS certificate is not retried at all.
 *
 * Retry-After is a floor under the next delay, except when the model has
 * another endpoint that is not backed off: then the throttled endpoint is
 * backed off that long and the retry goes elsewhere after the usual
 * backoff. A Retry-After longer than five minutes ends the call with the
 * server's request in the message rather than stalling it for hours.
 */
#define RETRY_AFTER_MAX_MS 300000
#include "llm_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct llm_latch {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t left;
};

struct worker {
	struct llm_pool *pool;
	pthread_t th;
	struct http_client *http;
	struct rng rng;
	struct buf body; /* request bodies are built here, call after call */
};

/* A worker's body buffer over this is let go after its call (a long root
 * history's), not kept for the next. */
#define BODY_KEEP_MAX ((size_t)4 << 20)

struct llm_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;         /* queue not empty, or stopping */
	struct llm_call *head, *tail;
	bool stopping;
	int n_workers;
	struct worker *workers;
	struct http_shared *shared;
	struct http_client *inline_http; /* for calls made inline, under inline_mu */
	pthread_mutex_t inline_mu;

	/* statistics, guarded by stats_mu */
	pthread_mutex_t stats_mu;
	struct llm_stats stats;
};

/* The pool whose worker this thread is, if any. */
static _Thread_local struct llm_pool *tls_pool;

void llm_call_init(struct llm_call *c, struct llm_model *m, const struct llm_msg *msgs,
		   size_t n_msgs)
{
	static const struct llm_params defaults = LLM_PARAMS_DEFAULT;
	memset(c, 0, sizeof(*c));
	c->model = m;
	c->msgs = msgs;
	c->n_msgs = n_msgs;
	c->params = defaults;
	c->endpoint = -1;
}

void llm_call_release(struct llm_call *c)
{
	free(c->text);
	free(c->error);
	free(c->finish_reason);
	c->text = c->error = c->finish_reason = NULL;
	c->len = 0;
}

static void reset_result(struct llm_call *c)
{
	llm_call_release(c);
	c->rc = 0;
	memset(&c->usage, 0, sizeof(c->usage));
	c->cost = 0;
	c->status = 0;
	c->attempts = 0;
	c->endpoint = -1;
	c->latency_ns = 0;
	c->cached = false;
}

/* ---- endpoints: choice, limits, health ---- */

static void refill(const struct llm_model *m, struct llm_endpoint *ep, int64_t now)
{
	double secs = (double)(now - ep->refill_ns) / 1e9;
	if (secs <= 0)
		return;
	if (m->cfg.rpm > 0)
		ep->req_tokens = RLM_MIN(RLM_MAX(1.0, m->cfg.rpm / 6),
					 ep->req_tokens + secs * m->cfg.rpm / 60);
	if (m->cfg.tpm > 0)
		ep->tok_tokens = RLM_MIN(RLM_MAX(1.0, m->cfg.tpm / 6),
					 ep->tok_tokens + secs * m->cfg.tpm / 60);
	ep->refill_ns = now;
}

/* ep->mu held, buckets refilled: how long until ep may send a call of
 * `tokens` (0: now; the rate buckets only, not max_inflight). */
static double bucket_wait_ns(const struct llm_model *m, const struct llm_endpoint *ep,
			     double tokens)
{
	const struct llm_model_cfg *cfg = &m->cfg;
	double tok_cap = cfg->tpm > 0 ? RLM_MAX(1.0, cfg->tpm / 6) : 0, w = 0;
	if (cfg->rpm > 0 && ep->req_tokens < 1)
		w = (1 - ep->req_tokens) * 60e9 / cfg->rpm;
	/* A request larger than the bucket goes when the bucket is full. */
	if (cfg->tpm > 0 && ep->tok_tokens < RLM_MIN(tokens, tok_cap))
		w = RLM_MAX(w, (RLM_MIN(tokens, tok_cap) - ep->tok_tokens) * 60e9 / cfg->tpm);
	return w;
}

/* The endpoint for the next attempt: of those not backed off, one that can
 * send at once (rate buckets and max_inflight), the least loaded; else the
 * one that can send soonest; when all are backed off, the one that
 * recovers first. */
static struct llm_endpoint *choose_endpoint(struct llm_model *m, double tokens, int *index)
{
	int64_t now = time_now_ns(), soonest = INT64_MAX;
	unsigned start = atomic_fetch_add(&m->rr, 1);
	size_t best = SIZE_MAX, fallback = 0;
	int best_load = 0;
	double best_wait = 0;
	for (size_t k = 0; k < m->n_eps; k++) {
		size_t i = (start + k) % m->n_eps;
		struct llm_endpoint *ep = &m->eps[i];
		int load;
		int64_t until;
		double wait;
		pthread_mutex_lock(&ep->mu);
		refill(m, ep, now);
		load = ep->inflight;
		until = ep->backoff_until_ns;
		wait = bucket_wait_ns(m, ep, tokens);
		if (m->cfg.max_inflight > 0 && load >= m->cfg.max_inflight && wait < 5e7)
			wait = 5e7; /* full: as good as a short wait */
		pthread_mutex_unlock(&ep->mu);
		if (until > now) {
			if (until < soonest) {
				soonest = until;
				fallback = i;
			}
			continue;
		}
		if (best == SIZE_MAX || wait < best_wait || (wait == best_wait && load < best_load)) {
			best = i;
			best_load = load;
			best_wait = wait;
		}
	}
	if (best == SIZE_MAX)
		best = fallback; /* all backed off: the one that recovers first */
	*index = (int)best;
	return &m->eps[best];
}

/* True when an endpoint other than `idx` is not backed off. */
static bool other_endpoint_ready(struct llm_model *m, int idx)
{
	int64_t now = time_now_ns();
	for (size_t i = 0; i < m->n_eps; i++) {
		bool ready;
		if ((int)i == idx)
			continue;
		pthread_mutex_lock(&m->eps[i].mu);
		ready = m->eps[i].backoff_until_ns <= now;
		pthread_mutex_unlock(&m->eps[i].mu);
		if (ready)
			return true;
	}
	return false;
}

static void abs_deadline(struct timespec *ts, int64_t wait_ns)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_nsec += wait_ns % 1000000000;
	ts->tv_sec += wait_ns / 1000000000 + ts->tv_nsec / 1000000000;
	ts->tv_nsec %= 1000000000;
}

static bool cancelled(const struct llm_call *c)
{
	return c->cancel && atomic_load(c->cancel);
}

/* Wait until the endpoint admits one request of about `tokens` tokens, then
 * take its slot. Returns false when the call was cancelled meanwhile. */
static bool acquire(struct llm_model *m, struct llm_endpoint *ep, double tokens,
		    const struct llm_call *c)
{
	const struct llm_model_cfg *cfg = &m->cfg;
	pthread_mutex_lock(&ep->mu);
	for (;;) {
		int64_t now = time_now_ns(), wait = 0;
		struct timespec ts;
		if (cancelled(c)) {
			pthread_mutex_unlock(&ep->mu);
			return false;
		}
		refill(m, ep, now);
		if (cfg->max_inflight > 0 && ep->inflight >= cfg->max_inflight) {
			wait = 50000000; /* woken by release; the timeout re-checks cancel */
		} else {
			double w = bucket_wait_ns(m, ep, tokens);
			if (w <= 0)
				break;
			/* Wake at least every 100 ms to notice cancellation. */
			wait = (int64_t)RLM_MIN(w + 1e6, 1e8);
		}
		abs_deadline(&ts, wait);
		pthread_cond_timedwait(&ep->cv, &ep->mu, &ts);
	}
	if (cfg->rpm > 0)
		ep->req_tokens -= 1;
	if (cfg->tpm > 0)
		ep->tok_tokens -= tokens;
	ep->inflight++;
	ep->calls++;
	pthread_mutex_unlock(&ep->mu);
	return true;
}

/* Give the slot back and record the outcome for the endpoint's health.
 * backoff_ms > 0 keeps the endpoint out of rotation that long. */
static void release(struct llm_endpoint *ep, bool ok, bool failed, int64_t backoff_ms)
{
	pthread_mutex_lock(&ep->mu);
	ep->inflight--;
	if (ok)
		ep->fails = 0;
	if (failed) {
		ep->errors++;
		ep->fails++;
		if (backoff_ms <= 0)
			backoff_ms = RLM_MIN(250LL << RLM_MIN(ep->fails - 1, 7), 30000LL);
		ep->backoff_until_ns = time_now_ns() + backoff_ms * 1000000;
	}
	/* Waiters for a slot and for the buckets share the condvar: wake all. */
	pthread_cond_broadcast(&ep->cv);
	pthread_mutex_unlock(&ep->mu);
}

/* ---- one call ---- */

static double request_tokens(const struct llm_call *c)
{
	size_t bytes = 0;
	for (size_t i = 0; i < c->n_msgs; i++)
		bytes += c->msgs[i].len;
	return (double)llm_estimate_tokens(bytes) +
	       (c->params.max_tokens > 0 ? c->params.max_tokens : 512);
}

static bool retryable_status(int status)
{
	return status == 429 || status == 408 || status == 409 || status >= 500;
}

/* Sleep ms, waking early when the call is cancelled. */
static bool nap(const struct llm_call *c, int64_t ms)
{
	int64_t end = time_now_ns() + ms * 1000000;
	for (;;) {
		int64_t left = end - time_now_ns();
		if (cancelled(c))
			return false;
		if (left <= 0)
			return true;
		time_sleep_ns(RLM_MIN(left, (int64_t)20000000));
	}
}

static void set_error(struct llm_call *c, int rc, const char *fmt, ...) RLM_PRINTF(3, 4);
static void set_error(struct llm_call *c, int rc, const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	free(c->error);
	c->error = s;
	c->rc = rc;
}

static void perform(struct llm_pool *p, struct http_client *http, struct rng *rng,
		    struct buf *keep, struct llm_call *c)
{
	struct llm_model *m = c->model;
	const struct llm_model_cfg *cfg = &m->cfg;
	double tokens = request_tokens(c);
	int connect_fails = 0, max_connect_fails = (int)RLM_MAX(2, 2 * m->n_eps);
	char last[600] = "";

	for (int attempt = 0;; attempt++) {
		struct http_req req = {.keep = keep};
		struct http_resp resp;
		struct rlm_err err = {0, ""};
		struct llm_endpoint *ep;
		int idx, rc;
		bool retry = false, ok = false, ep_failed = false, connect_failure = false;
		int64_t delay_ms, ep_backoff = 0;

		if (cancelled(c)) {
			set_error(c, RLM_ECANCEL, "cancelled");
			return;
		}
		ep = choose_endpoint(m, tokens, &idx);
		rc = m->wire->build(c, m, ep->base_url, &req, &err);
		if (rc) {
			set_error(c, rc, "%s", err.msg[0] ? err.msg : rlm_strerror(rc));
			llm__http_req_release(&req);
			return;
		}
		if (!acquire(m, ep, tokens, c)) {
			llm__http_req_release(&req);
			set_error(c, RLM_ECANCEL, "cancelled");
			return;
		}
		llm__http_resp_init(&resp);
		if (cfg->kind == LLM_INPROC)
			llm__provider_perform(m, &req, &resp, c->cancel);
		else
			llm__http_perform(http, &req, &resp, cfg->timeout_ms, cfg->connect_timeout_ms,
				     c->cancel);
		c->attempts++;
		c->status = resp.status;
		c->endpoint = idx;

		if (resp.transport_rc) {
			if (resp.transport_rc == RLM_ECANCEL || resp.transport_rc == RLM_ETOOBIG) {
				set_error(c, resp.transport_rc, "%s: %s", ep->base_url,
					  resp.transport_err);
			} else {
				connect_failure = resp.connect_failed;
				if (connect_failure)
					connect_fails++;
				snprintf(last, sizeof(last), "%s: %s", ep->base_url,
					 resp.transport_err);
				retry = !resp.fatal &&
					(!connect_failure || connect_fails < max_connect_fails);
				ep_failed = true;
				if (resp.fatal)
					set_error(c, RLM_EHTTP, "%s", last);
				else if (!retry)
					set_error(c, RLM_EHTTP, "cannot connect to %s: %s", ep->base_url,
						  resp.transport_err);
			}
		} else if (resp.status >= 200 && resp.status < 300) {
			rc = m->wire->parse(c, resp.body.p, resp.body.len, &err);
			if (rc == 0) {
				ok = true;
			} else if (rc == RLM_EPARSE) {
				snprintf(last, sizeof(last), "%s: %s", ep->base_url, err.msg);
				retry = true;
			} else {
				set_error(c, rc, "%s: %s", m->provider, err.msg);
			}
		} else {
			char *pm = m->wire->error_message(resp.body.p,
							  resp.body.len);
			snprintf(last, sizeof(last), "%s %d from %s%s%s", m->provider,
				 resp.status,
				 ep->base_url, pm ? ": " : "", pm ? pm : "");
			free(pm);
			if (retryable_status(resp.status)) {
				retry = true;
				ep_failed = resp.status != 429;
				if (resp.status == 429 && resp.retry_after_ms > 0 && m->n_eps > 1) {
					ep_failed = true;
					ep_backoff = resp.retry_after_ms;
				}
			} else {
				set_error(c, (resp.status == 401 || resp.status == 403) ? RLM_EAUTH
											 : RLM_EPROVIDER,
					  "%s", last);
			}
		}
		release(ep, ok, ep_failed, ep_backoff);
		llm__http_req_release(&req);

		if (ok) {
			c->rc = 0;
			c->cost = llm_cost(&m->price, &c->usage);
			llm__http_resp_release(&resp);
			return;
		}
		if (!retry || c->rc) {
			if (!c->rc)
				set_error(c, RLM_EPROVIDER, "%s", last);
			llm__http_resp_release(&resp);
			return;
		}
		if (attempt >= cfg->max_retries) {
			int last_rc = resp.transport_rc ? resp.transport_rc
					: resp.status >= 300 ? RLM_EPROVIDER
							      : RLM_EPARSE;
			set_error(c, last_rc, "%s (gave up after %d attempt%s)", last, c->attempts,
				  c->attempts == 1 ? "" : "s");
			llm__http_resp_release(&resp);
			return;
		}
		/* Full jitter over an exponential ceiling; Retry-After is a floor. */
		{
			int64_t ceil_ms = cfg->backoff_base_ms << RLM_MIN(attempt, 20);
			if (ceil_ms > cfg->backoff_max_ms || ceil_ms <= 0)
				ceil_ms = cfg->backoff_max_ms;
			if (connect_failure)
				ceil_ms = RLM_MIN(ceil_ms, (int64_t)500);
			delay_ms = ceil_ms / 2 + (int64_t)rng_below(rng, (uint64_t)(ceil_ms / 2) + 1);
			if (resp.retry_after_ms > RETRY_AFTER_MAX_MS) {
				set_error(c, RLM_EPROVIDER,
					  "%s (the server asked to retry after %lld s; giving up)", last,
					  (long long)(resp.retry_after_ms / 1000));
				llm__http_resp_release(&resp);
				return;
			}
			if (resp.retry_after_ms >= 0 && !other_endpoint_ready(m, idx))
				delay_ms = RLM_MAX(delay_ms, resp.retry_after_ms);
		}
		log_debug("retrying in %lld ms: %s", (long long)delay_ms, last);
		llm__http_resp_release(&resp);
		pthread_mutex_lock(&p->stats_mu);
		p->stats.retries++;
		pthread_mutex_unlock(&p->stats_mu);
		if (!nap(c, delay_ms)) {
			set_error(c, RLM_ECANCEL, "cancelled");
			return;
		}
	}
}

/* Perform c, unless its front answers it; a call that succeeded goes to
 * the front before anyone sees it. */
static void perform_front(struct llm_pool *p, struct http_client *http, struct rng *rng,
			  struct buf *keep, struct llm_call *c)
{
	const struct llm_front *f = c->front;
	bool asked = f && f->lookup && !cancelled(c);
	if (asked && f->lookup(f->arg, c)) {
		c->cached = c->rc == 0; /* else failed as a copy it waited for */
		return;
	}
	perform(p, http, rng, keep, c);
	if (f && f->save && c->rc == 0)
		f->save(f->arg, c);
	if (asked && f->release)
		f->release(f->arg, c);
}

static void finish(struct llm_pool *p, struct llm_call *c)
{
	struct llm_latch *l = c->latch_;
	llm_done_fn *done = c->done_;
	void *arg = c->done_arg_;
	c->latency_ns = time_now_ns() - c->submitted_ns_;
	pthread_mutex_lock(&p->stats_mu);
	p->stats.calls++;
	p->stats.attempts += c->attempts;
	if (c->rc)
		p->stats.failed++;
	if (c->cached)
		p->stats.cached++;
	p->stats.usage.input_tokens += c->usage.input_tokens;
	p->stats.usage.output_tokens += c->usage.output_tokens;
	p->stats.usage.cached_tokens += c->usage.cached_tokens;
	p->stats.usage.cache_write_tokens += c->usage.cache_write_tokens;
	p->stats.cost += c->cost;
	p->stats.in_flight--;
	pthread_mutex_unlock(&p->stats_mu);
	/* After the latch count drops, the waiter may free the call: touch
	 * nothing of it afterwards. */
	if (done)
		done(c, arg);
	if (l) {
		pthread_mutex_lock(&l->mu);
		if (--l->left == 0)
			pthread_cond_broadcast(&l->cv);
		pthread_mutex_unlock(&l->mu);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct llm_pool *p = w->pool;
	tls_pool = p;
	for (;;) {
		struct llm_call *c;
		pthread_mutex_lock(&p->mu);
		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->cv, &p->mu);
		c = p->head;
		if (!c) {
			pthread_mutex_unlock(&p->mu);
			break;
		}
		p->head = c->next_;
		if (!p->head)
			p->tail = NULL;
		pthread_mutex_unlock(&p->mu);
		c->next_ = NULL;
		perform_front(p, w->http, &w->rng, &w->body, c);
		if (w->body.cap > BODY_KEEP_MAX)
			buf_release(&w->body);
		finish(p, c);
	}
	return NULL;
}

/* ---- public ---- */

struct llm_pool *llm_pool_new(const struct llm_pool_cfg *cfg, struct rlm_err *err)
{
	struct llm_pool *p = xcalloc(1, sizeof(*p));
	int n = cfg && cfg->workers > 0 ? cfg->workers : 64;
	uint64_t seed = (uint64_t)time_now_ns();
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	pthread_mutex_init(&p->stats_mu, NULL);
	pthread_mutex_init(&p->inline_mu, NULL);
	p->shared = llm__http_shared_new();
	if (!p->shared) {
		rlm_err_set(err, RLM_EHTTP, "cannot initialise libcurl");
		llm_pool_free(p);
		return NULL;
	}
	p->inline_http = llm__http_client_new(p->shared);
	p->workers = xcalloc((size_t)n, sizeof(*p->workers));
	for (int i = 0; i < n; i++) {
		struct worker *w = &p->workers[i];
		pthread_attr_t attr;
		int rc;
		w->pool = p;
		w->body = (struct buf)BUF_INIT;
		w->http = llm__http_client_new(p->shared);
		rng_seed(&w->rng, seed + (uint64_t)i);
		if (!w->http) {
			rlm_err_set(err, RLM_EHTTP, "cannot create a curl handle");
			llm_pool_free(p);
			return NULL;
		}
		pthread_attr_init(&attr);
		/* Workers run curl and JSON code only: a small stack is plenty. */
		pthread_attr_setstacksize(&attr, 256 * 1024);
		rc = pthread_create(&w->th, &attr, worker_main, w);
		pthread_attr_destroy(&attr);
		if (rc) {
			llm__http_client_free(w->http);
			w->http = NULL;
			rlm_err_set(err, -rc, "cannot start pool worker %d: %s", i, strerror(rc));
			llm_pool_free(p);
			return NULL;
		}
		p->n_workers = i + 1;
	}
	return p;
}

int llm_pool_workers(const struct llm_pool *p)
{
	return p->n_workers;
}

void llm_pool_free(struct llm_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->n_workers; i++) {
		pthread_join(p->workers[i].th, NULL);
		llm__http_client_free(p->workers[i].http);
		buf_release(&p->workers[i].body);
	}
	free(p->workers);
	llm__http_client_free(p->inline_http);
	llm__http_shared_free(p->shared);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->stats_mu);
	pthread_mutex_destroy(&p->inline_mu);
	free(p);
}

static void enqueue(struct llm_pool *p, struct llm_call *c, struct llm_latch *l,
		    llm_done_fn *done, void *arg)
{
	reset_result(c);
	c->latch_ = l;
	c->done_ = done;
	c->done_arg_ = arg;
	c->next_ = NULL;
	c->submitted_ns_ = time_now_ns();
	pthread_mutex_lock(&p->stats_mu);
	p->stats.in_flight++;
	pthread_mutex_unlock(&p->stats_mu);
	if (tls_pool == p) {
		/* From a worker: perform inline rather than wait on our own queue. */
		struct rng rng;
		rng_seed(&rng, (uint64_t)time_now_ns());
		pthread_mutex_lock(&p->inline_mu);
		if (p->inline_http)
			perform_front(p, p->inline_http, &rng, NULL, c);
		else
			set_error(c, RLM_EHTTP, "cannot create a curl handle");
		pthread_mutex_unlock(&p->inline_mu);
		finish(p, c);
		return;
	}
	pthread_mutex_lock(&p->mu);
	if (p->tail)
		p->tail->next_ = c;
	else
		p->head = c;
	p->tail = c;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void llm_pool_submit(struct llm_pool *p, struct llm_call *c, llm_done_fn *done, void *arg)
{
	enqueue(p, c, NULL, done, arg);
}

size_t llm_pool_run(struct llm_pool *p, struct llm_call *const *calls, size_t n)
{
	struct llm_latch l;
	size_t failed = 0;
	if (n == 0)
		return 0;
	pthread_mutex_init(&l.mu, NULL);
	pthread_cond_init(&l.cv, NULL);
	l.left = n;
	for (size_t i = 0; i < n; i++)
		enqueue(p, calls[i], &l, NULL, NULL);
	pthread_mutex_lock(&l.mu);
	while (l.left > 0)
		pthread_cond_wait(&l.cv, &l.mu);
	pthread_mutex_unlock(&l.mu);
	pthread_mutex_destroy(&l.mu);
	pthread_cond_destroy(&l.cv);
	for (size_t i = 0; i < n; i++)
		failed += calls[i]->rc != 0;
	return failed;
}

int llm_pool_call(struct llm_pool *p, struct llm_call *c)
{
	struct llm_call *one[1] = {c};
	llm_pool_run(p, one, 1);
	return c->rc;
}

void llm_pool_stats(struct llm_pool *p, struct llm_stats *out)
{
	pthread_mutex_lock(&p->stats_mu);
	*out = p->stats;
	pthread_mutex_unlock(&p->stats_mu);
}
