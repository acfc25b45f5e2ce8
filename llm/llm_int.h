/* SPDX-License-Identifier: MIT */
/* llm/llm_int.h -- internals shared inside llm/: the HTTP request and
 * response of one attempt, the wire formats of the providers, endpoints and
 * their limits. Not for use outside llm/. */
#ifndef RLM_LLM_INT_H
#define RLM_LLM_INT_H

#include <pthread.h>

#include "llm.h"

/* Largest response body accepted from a provider. */
#define LLM_MAX_BODY (64u << 20)
#define LLM_MAX_HEADERS 16

/* The request of one attempt, built by a wire format. */
struct http_req {
	char *url;                         /* full URL; owned */
	char *headers[LLM_MAX_HEADERS];    /* "Name: value"; owned */
	int n_headers;
	char *body;                        /* owned, unless keep holds it */
	size_t len;
	struct buf *keep;                  /* a buffer the body is built in and
					    * left in: a pool thread's own,
					    * reused call after call; NULL:
					    * a fresh allocation */
};

void llm__http_req_header(struct http_req *r, const char *fmt, ...) RLM_PRINTF(2, 3);
void llm__http_req_release(struct http_req *r);

/* The outcome of one attempt. */
struct http_resp {
	int status;             /* HTTP status; 0 when none arrived */
	struct buf body;        /* capped at LLM_MAX_BODY */
	int64_t retry_after_ms; /* from Retry-After / retry-after-ms; -1 if absent */
	int transport_rc;       /* 0, RLM_EHTTP, RLM_ETIMEOUT, RLM_ETOOBIG, RLM_ECANCEL */
	bool connect_failed;    /* no connection could be made (refused, no route,
				 * unknown host, connect timeout): set by the transport */
	bool fatal;             /* retrying cannot help (malformed URL, unsupported
				 * scheme, TLS certificate rejected) */
	char transport_err[256];/* words for transport_rc */
};

void llm__http_resp_init(struct http_resp *r);
void llm__http_resp_release(struct http_resp *r);
/* Parse a Retry-After value in ms: delta-seconds, a fraction allowed
 * ("1.5"), or an IMF-fixdate HTTP date (a past date gives 0); surrounding
 * whitespace is ignored; capped at 3600000. -1 if it is neither. */
int64_t llm__http_parse_retry_after(const char *v, int64_t now_wall_ms);

/* A provider's wire format: how a call becomes a request and a response
 * becomes a result. Pure functions of their arguments, callable from any
 * thread. */
struct llm_wire {
	const char *name;             /* "openai", "anthropic" */
	const char *default_base_url; /* used when the model names none */
	/* Build the request for c to the endpoint base_url (no trailing '/'). */
	int (*build)(const struct llm_call *c, const struct llm_model *m, const char *base_url,
		     struct http_req *out, struct rlm_err *err);
	/* Parse a 2xx body into c->text, c->len, c->finish_reason, c->usage.
	 * Returns 0, or RLM_EPARSE with a message when the body is malformed,
	 * truncated, or holds no reply. Never crashes on any input. */
	int (*parse)(struct llm_call *c, const char *body, size_t len, struct rlm_err *err);
	/* The provider's own message in an error body of any status, as a fresh
	 * string ("type: message" when a type is given), or NULL when the body
	 * holds none. */
	char *(*error_message)(const char *body, size_t len);
};

extern const struct llm_wire llm_wire_openai;
extern const struct llm_wire llm_wire_anthropic;

/* One endpoint of a model with its limits and health. Fields after the
 * mutex are guarded by it. */
struct llm_endpoint {
	char *base_url;            /* no trailing '/'; owned */
	pthread_mutex_t mu;
	pthread_cond_t cv;         /* signalled when a slot frees */
	int inflight;
	double req_tokens;         /* request bucket: available requests */
	double tok_tokens;         /* token bucket: available tokens */
	int64_t refill_ns;         /* last refill of both buckets */
	int64_t backoff_until_ns;  /* not chosen before this, while others are healthy */
	int fails;                 /* consecutive failures */
	int64_t calls, errors;     /* stats */
};

struct llm_model {
	struct llm_model_cfg cfg;  /* strings below are the copies */
	char *name;
	char *api_key;
	char *extra_json;
	const struct llm_wire *wire;
	struct llm_price price;
	struct llm_endpoint *eps;
	size_t n_eps;
	atomic_uint rr;            /* round-robin cursor */
	char *cache_id;            /* llm_model_cache_id */
	const char *provider;      /* llm_model_provider; static */
	bool window_known;         /* llm_model_context_window_known */
};

/* ---- the curl transport (llm/http.c) ----
 * One http_shared per pool holds the curl share handle (DNS cache and TLS
 * sessions). Each worker owns one http_client, i.e. one easy handle whose
 * connection cache keeps its connections alive. The connection cache is not
 * shared: libcurl documents sharing it between concurrent threads as
 * unsupported (a known bug, data races under TSan). */
struct http_shared;
struct http_client;

struct http_shared *llm__http_shared_new(void);
void llm__http_shared_free(struct http_shared *sh);
struct http_client *llm__http_client_new(struct http_shared *sh);
void llm__http_client_free(struct http_client *hc);
/* Perform req; fill resp (status, body, Retry-After, or transport_rc and
 * transport_err). timeout_ms bounds the whole attempt; cancel aborts it.
 * Only the thread that owns hc may call it. */
void llm__http_perform(struct http_client *hc, const struct http_req *req, struct http_resp *resp,
		  long timeout_ms, long connect_timeout_ms, const atomic_bool *cancel);

/* Built-in table of context windows; 0 when unknown. */
long llm_context_window_lookup(const char *model);

/* The transport of an in-process model (llm/provider.c): req handed to
 * its provider's perform, its answer put in resp as llm__http_perform would. */
void llm__provider_perform(const struct llm_model *m, const struct http_req *req,
			   struct http_resp *resp, const atomic_bool *cancel);

#endif
