/* SPDX-License-Identifier: MIT */
/* serve/serve_int.h -- inside `rlm serve`: the server, one request, the
 * responses every route sends, and the routes (`rlm serve` in the CLI: the
 * command and shutdown; serve_http.c: the daemon, answers, dispatch, auth,
 * health and metrics; serve_routes.c: solves, runs, events and corpora;
 * serve_sessions.c: sessions; serve_openai.c: chat completions and
 * models; serve_stream.c: streamed chat completions).
 * See docs/serve.md for the protocol. */
#ifndef RLM_SERVE_INT_H
#define RLM_SERVE_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "serve.h"
#include "service.h"
#include "../common/common.h"
#include "../common/httpd.h"
#include "../common/json.h"
#include "../common/text.h"
#include "../llm/openai.h"

#define SRV_KEEPALIVE_NS   (15 * 1000000000LL) /* a comment on a quiet stream */
#define SRV_SLICE_NS	   (250 * 1000000LL)   /* streams wait on a run this long at once */
#define IDLE_TIMEOUT_S	   30u		       /* a connection's, but a solve's or a stream's */

/* For "%.*s": at most max bytes of s, cut where a UTF-8 sequence ends (an
 * answer is JSON: it must stay valid UTF-8). */
#define SRV_CUT(s, max) ((int)text_utf8_floor((s), strnlen((s), (max))))

/* The server: made by cli_serve, read-only once serving but for the
 * atomics. */
struct server {
	struct service *svc;
	const char *api_key;	    /* NULL: no auth */
	size_t max_body;	    /* bytes of a request body */
	int64_t request_timeout_ns; /* a synchronous solve's */
	unsigned max_connections;   /* the connection limits (serve_http_cfg) */
	unsigned max_per_address;
	unsigned head_timeout_s;
	unsigned body_timeout_s;
	struct httpd *_Atomic d;    /* the daemon, once listening (for /metrics) */
	int64_t started_s;	    /* unix seconds, for "created" */
	bool verbose;		    /* log every request */
	atomic_bool stopping;	    /* a signal came: /healthz says "stopping" */
	atomic_int active;	    /* requests begun and not completed */
	_Atomic int64_t codes[600]; /* responses sent, by status */
};

/* One request, from its headers to its completion; owned by its
 * connection's thread. */
struct req {
	struct server *sv;
	struct MHD_Connection *c;
	char method[16];	/* "GET", "POST", ... (cut) */
	char *url;		/* owned: for the log */
	struct httpd_body body; /* capped at max_body */
	int64_t t0;		/* time_now_ns at its start */
	unsigned status;	/* the status queued, for the log */
	int fd;			/* the connection's socket (the library's), or -1 */
	char session[SVC_SESSION_ID]; /* a session the answer is in: sent as
				       * the X-RLM-Session header; "": none */
};

/* ---- responses (serve_http.c); each returns what the access handler returns ---- */

/* Queue r (destroyed here) with status, counting it. */
enum MHD_Result serve__queue(struct req *rq, unsigned status, struct MHD_Response *r);
/* j (consumed) as the body. */
enum MHD_Result serve__json(struct req *rq, unsigned status, cJSON *j);
/* {"error": {"type", "message"}} with status; 429 adds Retry-After: 1,
 * 401 WWW-Authenticate. */
enum MHD_Result serve__error(struct req *rq, unsigned status, const char *type, const char *fmt, ...)
    RLM_PRINTF(4, 5);
/* The same with "code" (OpenAI's machine-readable one, as
 * "model_not_found") and "param" (the field at fault); either may be NULL. */
enum MHD_Result serve__error_code(struct req *rq, unsigned status, const char *type, const char *code,
			       const char *param, const char *fmt, ...) RLM_PRINTF(6, 7);
/* A service error (svc_* rc and its message) with the status it maps to:
 * SVC_EBUSY 429, SVC_EFORBIDDEN 403, RLM_ENOTFOUND 404, a bad value or a
 * file problem 400, anything else 500. */
enum MHD_Result serve__svc_error(struct req *rq, int rc, const char *msg);
/* The answer to a body refused by serve__*_parse with rc and err: 400,
 * invalid_json or invalid_request. */
enum MHD_Result serve__body_error(struct req *rq, int rc, const struct rlm_err *err);

/* ---- checking request fields (serve_routes.c) ---- */

/* What is wrong with a request, in words ("options.max_depth: want an
 * integer 1..16"); the first fault wins. */
struct check {
	bool bad;
	char msg[512];
};
void serve__check_fail(struct check *k, const char *fmt, ...) RLM_PRINTF(2, 3);
/* Every member of o must be named in known (NULL-terminated); where: the
 * object's name for messages ("" at the top, "options."). */
void serve__check_fields(struct check *k, const cJSON *o, const char *const *known, const char *where);
/* o[key] as a string (NULL when absent or, with k->bad set, not a string). */
const char *serve__check_str(struct check *k, const cJSON *o, const char *key, const char *where);
/* o[key] as true or false into *out (left alone when absent or null). */
void serve__check_bool(struct check *k, const cJSON *o, const char *key, const char *where, bool *out);
/* A request's "options" (o may be NULL: none) into so (serve_routes.c). */
void serve__check_options(struct check *k, const cJSON *o, struct svc_opts *so);
/* The context of a request: exactly one of text, path (with format) and
 * corpus id, loaded into the service (an inline one unregistered); 0 with
 * *hold (the request's hold on it, for serve_solve, dropped with
 * serve_corpus_put), or an answer sent (*ret). */
int serve__context(struct req *rq, const char *text, const char *path, const char *format,
		const char *corpus_id, struct svc_corp **hold, enum MHD_Result *ret);
/* Has the client at the other end of socket fd gone (closed, reset, or
 * shut its side)? Looks without reading what it may have sent next. */
bool serve__client_gone(int fd);
/* Cancel r, for the reason why, and wait a little for it to end. */
void serve__cancel_run(struct svc_run *r, const char *why);

enum srv_wait {
	SRV_ENDED,   /* the run ended */
	SRV_TIMEOUT, /* the request's time ran out: the run was cancelled */
	SRV_GONE,    /* the client went away: the run was cancelled */
};
/* Wait for r to end within the request's time, looking at the client
 * every SRV_SLICE_NS; past the time, or once the client is gone, cancel
 * r and wait a little for it to end. */
enum srv_wait serve__wait_run(struct req *rq, struct svc_run *r);

/* ---- request bodies, parsed and checked ----
 * What a route does with its body before anything else: no connection, no
 * service (tests/fuzz_serve.c drives these as the routes do). Each returns
 * 0, or RLM_EPARSE (the body is no JSON object: its answer's type is
 * "invalid_json") or RLM_EINVAL (a field is wrong: "invalid_request") with
 * err's message, never empty. A body taken is released with its
 * serve__*_release; on error nothing is left to release. */

/* The body (p, len) as a JSON object into *out (the caller's); a string
 * holding \u0000 is refused, as cJSON would cut it there, and so is an
 * object (at any depth) that holds a key twice: RLM_EPARSE, "duplicate
 * key \"question\"" (serve_http.c). */
int serve__body_parse(const char *p, size_t len, cJSON **out, struct rlm_err *err);

/* A POST /v1/solve body (serve_routes.c). */
struct serve_solve {
	cJSON *body;			     /* owned: the strings point into it */
	const char *question;		     /* not empty */
	const char *text, *path, *corpus_id; /* exactly one, or value */
	const cJSON *value;		     /* "context" given as any other JSON
					      * value (in body): a list of
					      * strings is documents, anything
					      * else a JSON corpus */
	const char *format;		     /* NULL, or given with path */
	bool async;
	struct svc_opts so; /* options and options.budgets; so.schema_json
			     * is schema */
	char *schema;	    /* "schema" (a JSON Schema object) as compact
			     * JSON text; owned, or NULL */
};
int serve__solve_parse(const char *p, size_t len, struct serve_solve *s, struct rlm_err *err);
void serve__solve_release(struct serve_solve *s);

/* A POST /v1/corpora body (serve_routes.c). */
struct serve_corpora {
	cJSON *body;		 /* owned: the strings point into it */
	const char *path, *text; /* exactly one of path, text and docs */
	const cJSON *docs;	 /* an array of strings, in body */
	enum corpus_kind kind;	 /* format, given with path (else CORPUS_AUTO) */
};
int serve__corpora_parse(const char *p, size_t len, struct serve_corpora *c, struct rlm_err *err);
void serve__corpora_release(struct serve_corpora *c);

/* A POST /v1/chat/completions body (serve_openai.c): OpenAI's request as
 * a solve. */
struct serve_chat {
	cJSON *body;	      /* owned: the strings point into it */
	const char *question; /* the last user message's text: not empty */
	char *qown;	      /* owned: what question points to */
	struct buf context;   /* the earlier messages' text, when no rlm_context */
	/* The context: exactly one of text (rlm_context as a string, or the
	 * earlier messages), path (with format) and corpus_id. */
	const char *text, *path, *format, *corpus_id;
	const char *model; /* as asked ("rlm" when absent) */
	bool stream, include_usage;
	bool progress; /* rlm_progress: progress lines in a stream (true) */
	char *schema;  /* response_format json_schema's schema (json_object:
			* {"type":"object"}) as compact JSON text; owned, or
			* NULL: a text answer */
	/* conversations (serve_openai.c: chat_turns) */
	const char *session; /* rlm_session: the session to ask in, or NULL */
	bool no_session;     /* rlm_session false: a plain solve (the memo
			      * may answer), no session opened */
	bool whole;	     /* one user message and no other context: it is
			      * the context, its question at its end */
	char conv[33];	     /* digest of the conversation up to the question */
	char prev[33];	     /* the key of the conversation before the
			      * question (its messages end with an
			      * assistant's), else "" */
};
int serve__chat_parse(const char *p, size_t len, struct serve_chat *ch, struct rlm_err *err);
void serve__chat_release(struct serve_chat *ch);

/* Send st as an event stream (text/event-stream, chunked): read fills it,
 * done frees st, even when this fails (serve_routes.c). */
enum MHD_Result serve__stream(struct req *rq, void *st, MHD_ContentReaderCallback read,
			   MHD_ContentReaderFreeCallback done);

/* ---- OpenAI's shapes (serve_openai.c), for serve_stream.c ---- */

/* The id of run_id's chat completion and its chunks: "chatcmpl-" run_id.
 * The completion and its chunks are llm/openai.h's. */
#define SERVE__OAI_ID 64
void serve__oai_id(char id[SERVE__OAI_ID], const char *run_id);
/* OpenAI's usage of run (serve_run_json). */
cJSON *serve__oai_usage_json(const cJSON *run);
/* "stop" when run answered, else "length". */
const char *serve__oai_finish_reason(const cJSON *run);
/* The "rlm" member: run_id, status, stop, cost_usd, sources (the answer's,
 * [] when none). */
cJSON *serve__oai_rlm_ext(const cJSON *run);
/* The content of a chat completion for run (serve_run_json, changed in
 * place): the answer's text; for a structured one ("structured"), its
 * compact JSON text when it validated, else NULL with why (cap bytes)
 * saying so and the stop's detail: never content that did not validate. */
const char *serve__oai_content(cJSON *run, char *why, size_t cap);
/* Answer rq with r streamed as chat.completion.chunk events (serve_stream.c);
 * takes over the reference r. */
enum MHD_Result serve__chat_stream(struct req *rq, struct svc_run *r, const char *model,
				bool include_usage, bool progress);

/* ---- routes ---- */
enum MHD_Result serve__route_solve(struct req *rq);
enum MHD_Result serve__route_run(struct req *rq, const char *id);
enum MHD_Result serve__route_events(struct req *rq, const char *id);
enum MHD_Result serve__route_corpora_post(struct req *rq);
enum MHD_Result serve__route_corpus(struct req *rq, const char *id); /* GET, DELETE */
enum MHD_Result serve__route_chat(struct req *rq);
/* /v1/sessions (serve_sessions.c): POST opens one, GET lists them; and
 * /v1/sessions/ID[/contexts|/solve] (id: the rest of the path). */
enum MHD_Result serve__route_sessions(struct req *rq);
enum MHD_Result serve__route_session(struct req *rq, const char *id);
enum MHD_Result serve__route_models(struct req *rq);
/* GET /v1/skills (id NULL; ?name=NAME[@V] for one, ?all=true for retired
 * names too) and /v1/skills/NAME[@V] (id). */
enum MHD_Result serve__route_skills(struct req *rq, const char *id);

#endif
