/* SPDX-License-Identifier: MIT */
/* llm/llm.h -- model calls: request and response types, configured models
 * (provider + endpoints + limits), and the call pool that performs them.
 *
 * DESIGN
 * A pool owns N worker threads (default 64). A worker takes one call from a
 * FIFO queue, performs it to the end (rate-limit wait, HTTP attempt,
 * retries with backoff), stores the result in the call and signals its
 * waiter. A worker never waits on a task that is queued behind it (at most,
 * through a front, on the same call already being performed by another
 * worker), so the pool cannot starve itself however callers nest. Each worker keeps its own curl easy handle
 * (keep-alive connections); the pool shares DNS, TLS sessions and the
 * connection cache through a curl share handle.
 *
 * A model (struct llm_model) is one provider configuration: the wire format
 * (openai, anthropic, or an in-process provider that speaks the openai
 * format), the model name, one or more endpoints (base URLs) that spread
 * the load, credentials, limits, and prices. Calls name their model; root
 * and sub-calls may use different models of the same pool.
 *
 * An in-process provider (struct llm_provider) answers without a network:
 * the offline simulator of sim/ is one. It registers itself by name
 * (llm_provider_register), and a model names one instance of it; llm/
 * knows it only through the functions of its struct.
 *
 * Threads: llm_pool_* and llm_model_* functions may be called from any
 * thread once the pool exists; models are created before calls are made to
 * them and freed after the pool is drained.
 */
#ifndef RLM_LLM_H
#define RLM_LLM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/common.h"

enum llm_role { LLM_SYSTEM, LLM_USER, LLM_ASSISTANT };

/* The wire format and transport of a model: an HTTP provider, or an
 * in-process provider (struct llm_provider) that speaks the openai format. */
enum llm_kind { LLM_OPENAI, LLM_ANTHROPIC, LLM_INPROC };

struct llm_msg {
	enum llm_role role;
	const char *text; /* UTF-8, borrowed until the call completes */
	size_t len;
};

struct llm_usage {
	int64_t input_tokens;       /* prompt tokens, cached ones included */
	int64_t output_tokens;      /* completion tokens */
	int64_t cached_tokens;      /* prompt tokens read from the provider's cache */
	int64_t cache_write_tokens; /* prompt tokens written to it (anthropic) */
};

/* Prices in USD per million tokens. A zero price is free, not unknown. */
struct llm_price {
	double input;       /* uncached prompt tokens */
	double output;      /* completion tokens */
	double cached;      /* cached prompt tokens (read) */
	double cache_write; /* prompt tokens written to the cache */
	bool known;         /* false: no price for this model; cost reported as 0 */
};

/* Sampling and provider parameters of one call. */
struct llm_params {
	int max_tokens;           /* 0: provider default (anthropic needs one: 8192) */
	double temperature;       /* < 0: not sent */
	double top_p;             /* < 0: not sent */
	const char *const *stop;  /* stop sequences, borrowed */
	size_t n_stop;
	const char *extra_json;   /* JSON object merged into the request body, or NULL */
};

#define LLM_PARAMS_DEFAULT {0, -1.0, -1.0, NULL, 0, NULL}

/* Configuration of one model. Strings are copied by llm_model_new. */
struct llm_model_cfg {
	enum llm_kind kind;
	const char *name;        /* model name sent to the provider (required; for
				  * LLM_INPROC, NULL or "": the provider's name) */
	const char *base_urls;   /* comma-separated endpoints; NULL: the provider's default */
	const char *api_key;     /* NULL or "": none sent */
	long timeout_ms;         /* per attempt; 0: 300000 */
	long connect_timeout_ms; /* 0: 10000 */
	int max_retries;         /* retries after the first attempt; < 0: 6 */
	int max_inflight;        /* concurrent requests per endpoint; 0: unlimited */
	double rpm;              /* requests per minute per endpoint; 0: unlimited */
	double tpm;              /* tokens per minute per endpoint; 0: unlimited */
	long context_window;     /* tokens; 0: from the built-in table, else 128000 */
	const struct llm_price *price; /* NULL: from the price table */
	const char *extra_json;  /* JSON object merged into every request body */
	const struct llm_provider *provider; /* LLM_INPROC: the provider to call */
	void *impl;              /* LLM_INPROC: its instance (provider->open); borrowed */
	int64_t backoff_base_ms; /* first retry delay; 0: 500 */
	int64_t backoff_max_ms;  /* cap on one retry delay; 0: 30000 */
};

struct llm_model;
struct llm_pool;
struct llm_call;

/* A cache in front of the pool (rlm's store; llm/ knows nothing of it).
 * All run on the pool thread that performs the call, before its caller
 * sees the result. lookup may wait for the same call, sent for another
 * caller and already on a worker of its own, to end (rlm's single flight):
 * never for a call still queued, so the pool still cannot starve. */
struct llm_front {
	/* c is about to be sent: true when it is answered instead (c's text,
	 * len, finish_reason, usage and cost filled in, rc 0), or failed
	 * instead (rc < 0 and error set: the same call, sent meanwhile,
	 * failed so; nothing was sent for c). */
	bool (*lookup)(void *arg, struct llm_call *c);
	/* c succeeded over the network (rc 0): keep it. */
	void (*save)(void *arg, const struct llm_call *c);
	void *arg;
	/* Optional: c, which lookup did not answer, was performed (whatever
	 * its rc), after save. */
	void (*release)(void *arg, const struct llm_call *c);
};

/* One model call. The caller fills the request part (llm_call_init and the
 * fields), the pool fills the result part before signalling completion.
 * Embedded by callers; release with llm_call_release. */
struct llm_call {
	/* request: set by the caller, read-only while the call is in the pool */
	struct llm_model *model;
	const struct llm_msg *msgs; /* borrowed until completion */
	size_t n_msgs;
	struct llm_params params;
	const atomic_bool *cancel;  /* optional: when it turns true the call ends
				     * with RLM_ECANCEL as soon as it can */
	const struct llm_front *front; /* optional: a cache asked first */

	/* result: written by the pool, valid after completion */
	int rc;                /* 0, or a negative code (RLM_EPROVIDER, ...) */
	char *text;            /* the reply (never NULL on success); owned */
	size_t len;
	char *error;           /* when rc != 0: what went wrong, git-style; owned */
	char *finish_reason;   /* "stop", "length", ... or NULL; owned */
	struct llm_usage usage;
	double cost;           /* USD for this call (all attempts that were billed) */
	int status;            /* HTTP status of the last attempt, 0 if none */
	int attempts;          /* attempts made, >= 1 once sent */
	int endpoint;          /* index of the endpoint that answered */
	int64_t latency_ns;    /* from submission to completion */
	bool cached;           /* answered by front->lookup: nothing was sent;
				* usage and cost are what the stored call spent */

	/* private to the pool */
	struct llm_latch *latch_;
	void (*done_)(struct llm_call *, void *);
	void *done_arg_;
	struct llm_call *next_;
	int64_t submitted_ns_;
};

typedef void llm_done_fn(struct llm_call *c, void *arg);

/* Prepare a call to model m with the given messages (borrowed). */
void llm_call_init(struct llm_call *c, struct llm_model *m, const struct llm_msg *msgs,
		   size_t n_msgs);
/* Free the result strings; the call may be initialised again. */
void llm_call_release(struct llm_call *c);

/* ---- models ---- */

/* Create a model from cfg. Checks the configuration (known kind, parseable
 * URLs, credentials present where the provider needs them, a provider and
 * an instance for LLM_INPROC) and fills err with a message naming the
 * problem. The model of an in-process provider has the provider's one
 * endpoint, costs nothing unless a price file (llm_prices_load) names it,
 * and has the provider's context window unless the window table knows
 * its name. The model is the caller's; free it after every call to it
 * has completed, and before the provider's instance. */
struct llm_model *llm_model_new(const struct llm_model_cfg *cfg, struct rlm_err *err);
void llm_model_free(struct llm_model *m);
const char *llm_model_name(const struct llm_model *m);
enum llm_kind llm_model_kind(const struct llm_model *m);
/* The name of m's provider, as users name it: "openai", "anthropic", or
 * the in-process provider's ("sim"). Static storage. */
const char *llm_model_provider(const struct llm_model *m);
long llm_model_context_window(const struct llm_model *m);
/* Whether that window is known (the configuration, the built-in table, a
 * price file's "context_window", the in-process provider) rather than the
 * 128,000 assumed of a model nobody described: a prompt over a known window
 * is refused before it is sent (rlm's sub-calls). */
bool llm_model_context_window_known(const struct llm_model *m);
/* USD for input_tokens of uncached prompt at the model's price (0 when its
 * price is unknown): what a budget reserves before sending a call. */
double llm_model_input_cost(const struct llm_model *m, int64_t input_tokens);
/* Does m have a price (the built-in table, a price file, an in-process
 * provider's 0)? A price of 0 is a price: only a model no table names has
 * none, and its calls are reported as costing 0. */
bool llm_model_price_known(const struct llm_model *m);
size_t llm_model_endpoints(const struct llm_model *m);
/* What of the model decides its answers, for a cache key: "openai:gpt-5",
 * "anthropic:claude-...", with ":" and its extra JSON when it has one,
 * then, unless it is only the provider's default endpoint, "@[" its
 * endpoints "]" (without user:password@, scheme and host in lower case,
 * no default port, sorted, without repeats, joined by ','):
 * "openai:qwen3@[http://10.0.0.1:8000/v1,http://10.0.0.2:8000/v1]";
 * for an in-process provider its name, ':' and what its cache_id says:
 * "sim:seed=1,code_errors=0,chunk=0,rlm_chunks=128" for the simulator.
 * Not the API key or the limits. The string is m's, until
 * llm_model_free. */
const char *llm_model_cache_id(const struct llm_model *m);

/* Parse "openai", "anthropic" (in-process providers are found by name with
 * llm_provider_find); returns 0 or RLM_EINVAL. */
int llm_kind_parse(const char *s, enum llm_kind *out);
/* "openai", "anthropic", "inproc" (llm_model_provider names the provider). */
const char *llm_kind_name(enum llm_kind k);

/* ---- in-process providers ----
 * A provider that answers in the process, as a server would: it is handed
 * the body of a chat completions request as the openai wire format builds
 * it, and answers with a status and a body (a reply, or an error the pool
 * retries), or fails as a transport would (a reset, a timeout). The pool
 * treats it as one endpoint: limits, retries, usage and cost as for any
 * other. A provider registers itself once, before models are set up; a
 * model names it and one instance of it (llm_model_cfg.provider, .impl).
 */

/* The outcome of one in-process attempt, what a transport would report. */
struct llm_provider_resp {
	int status;             /* HTTP status of the answer; 0 when none came
				 * (a reset, a timeout: rc says) */
	struct buf *body;       /* the answer's body goes here; capped: buf_append
				 * fails past the cap (then rc = RLM_ETOOBIG) */
	int64_t retry_after_ms; /* what a Retry-After would say; -1: none */
	int rc;                 /* 0, or RLM_EHTTP (reset, truncated), RLM_ETIMEOUT,
				 * RLM_ETOOBIG, RLM_ECANCEL */
	char err[256];          /* words for rc */
};

/* A provider: static storage, its functions callable from any thread. */
struct llm_provider {
	const char *name;       /* "sim": what --provider and JSON say; unique */
	const char *endpoint;   /* the one endpoint its models have: "sim://local/v1" */
	long context_window;    /* tokens, for models the window table does not
				 * know; 0: 128000 */
	/* Make an instance from spec (NULL: the defaults). Returns 0 and sets
	 * *impl, or a negative code with err saying what is wrong. */
	int (*open)(const char *spec, void **impl, struct rlm_err *err);
	/* Free an instance; NULL is a no-op. */
	void (*close)(void *impl);
	/* What of impl decides its answers, for cache keys (a model's id is
	 * the provider's name, ':' and this): NUL-terminated in dst[0..cap). */
	void (*cache_id)(const void *impl, char *dst, size_t cap);
	/* Answer the request body[0..len) into resp (status 0, retry_after_ms
	 * -1, rc 0 on entry), within timeout_ms (0: none), ending with
	 * RLM_ECANCEL as soon as cancel (may be NULL) turns true. Called by
	 * pool workers, several at once. */
	void (*perform)(void *impl, const char *body, size_t len, long timeout_ms,
			const atomic_bool *cancel, struct llm_provider_resp *resp);
};

/* Register p (kept, not copied) under p->name. Registering p again is a
 * no-op. Returns 0, or RLM_EINVAL when the name is "openai", "anthropic"
 * or another provider's, or when 16 are registered. Any thread. */
int llm_provider_register(const struct llm_provider *p);
/* The provider registered under name, or NULL. Any thread. */
const struct llm_provider *llm_provider_find(const char *name);
/* Every provider name, for messages: "openai, anthropic" and the
 * registered ones in the order they came ("openai, anthropic, sim").
 * Fresh string. */
char *llm_provider_names(void);

/* Look a model up in the built-in price table (exact name, then the longest
 * known prefix, so "gpt-5-mini-2025-08-07" finds "gpt-5-mini"). Overrides
 * loaded by llm_prices_load come first. */
struct llm_price llm_price_lookup(const char *model);
/* The same in the overrides alone (known is false when none names it):
 * the simulator's price, which is 0 unless a price file gives one. */
struct llm_price llm_price_override(const char *model);
/* Load price overrides from a JSON file:
 *   {"model-name": {"input": 1.25, "output": 10, "cached": 0.125}, ...}
 * Call once at start, before any lookup from another thread. */
int llm_prices_load(const char *path, struct rlm_err *err);
double llm_cost(const struct llm_price *p, const struct llm_usage *u);

/* ---- the pool ---- */

struct llm_pool_cfg {
	int workers; /* worker threads; 0: 64 */
};

struct llm_stats {
	int64_t calls;       /* calls completed */
	int64_t failed;      /* of which ended with an error */
	int64_t attempts;    /* HTTP attempts, retries included */
	int64_t retries;     /* attempts beyond the first */
	struct llm_usage usage;
	double cost;
	int64_t in_flight;   /* calls queued or running now */
	int64_t cached;      /* calls answered by their front (counted in calls) */
};

struct llm_pool *llm_pool_new(const struct llm_pool_cfg *cfg, struct rlm_err *err);
/* Stop the workers after the queued calls have been performed. */
void llm_pool_free(struct llm_pool *p);
/* Its worker threads: how many calls it makes at once. */
int llm_pool_workers(const struct llm_pool *p);

/* Submit one call; done(c, arg) runs on a pool thread when it completes
 * (it must not block for long). Never fails: a call that cannot be made
 * completes with an error. */
void llm_pool_submit(struct llm_pool *p, struct llm_call *c, llm_done_fn *done, void *arg);
/* Perform n calls in parallel and wait for all of them. Results are in
 * each call, so they come back in input order. Returns the number of calls
 * that failed. Any thread may call it, a pool worker excepted. */
size_t llm_pool_run(struct llm_pool *p, struct llm_call *const *calls, size_t n);
/* Perform one call and wait; returns its rc. */
int llm_pool_call(struct llm_pool *p, struct llm_call *c);

void llm_pool_stats(struct llm_pool *p, struct llm_stats *out);

/* Estimate tokens of a text the way the pool does for rate limits and the
 * simulator does for usage: ceil(bytes / 4). */
int64_t llm_estimate_tokens(size_t bytes);

#endif
