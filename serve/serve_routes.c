/* SPDX-License-Identifier: MIT */
/* serve/serve_routes.c -- the routes of `rlm serve` for solves, runs, their
 * events, corpora and skills, and the checks every request body goes through.
 *
 * DESIGN
 * A body is checked whole before anything runs: each object's members
 * against the names it may have (an unknown one is an error naming it, so
 * a typo never passes silently), each value's type and range. A run's
 * events are a server-sent event stream whose reader blocks on the run's
 * log in short slices (the connection has a thread of its own), sends a
 * comment when the run has been quiet for a while, and ends after the
 * "end" event; a run the store knows but this server does not hold is
 * replayed from the store's record. Skills are read from the store as
 * they are at each request: another process may add one any time. */
#include "serve_int.h"
#include "../common/text.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- checks ---- */

void serve__check_fail(struct check *k, const char *fmt, ...)
{
	va_list ap;
	if (k->bad)
		return;
	k->bad = true;
	va_start(ap, fmt);
	vsnprintf(k->msg, sizeof(k->msg), fmt, ap);
	va_end(ap);
}

void serve__check_fields(struct check *k, const cJSON *o, const char *const *known, const char *where)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, o)
	{
		bool ok = false;
		for (size_t i = 0; known[i] && !ok; i++)
			ok = strcmp(it->string, known[i]) == 0;
		if (!ok) {
			serve__check_fail(k, "%s%.*s: unknown field", where, SRV_CUT(it->string, 100),
				   it->string);
			return;
		}
	}
}

const char *serve__check_str(struct check *k, const cJSON *o, const char *key, const char *where)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!j || cJSON_IsNull(j))
		return NULL;
	if (!cJSON_IsString(j)) {
		serve__check_fail(k, "%s%s: want a string", where, key);
		return NULL;
	}
	if (!text_utf8_valid(j->valuestring, strlen(j->valuestring), NULL)) {
		serve__check_fail(k, "%s%s: not valid UTF-8", where, key);
		return NULL;
	}
	return j->valuestring;
}

/* o[key] as an integer in min..max into *out (left alone when absent). */
static void check_int(struct check *k, const cJSON *o, const char *key, const char *where,
		      int64_t min, int64_t max, int64_t *out)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
	double v;
	if (!j || cJSON_IsNull(j))
		return;
	v = j->valuedouble;
	if (!cJSON_IsNumber(j) || v != floor(v) || v < (double)min || v > (double)max) {
		serve__check_fail(k, "%s%s: want an integer %lld..%lld", where, key, (long long)min,
			   (long long)max);
		return;
	}
	*out = (int64_t)v;
}

static void check_num(struct check *k, const cJSON *o, const char *key, const char *where,
		      double min, double max, bool min_open, double *out)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
	double v;
	if (!j || cJSON_IsNull(j))
		return;
	v = j->valuedouble;
	if (!cJSON_IsNumber(j) || !isfinite(v) || v < min || (min_open && v <= min) || v > max) {
		if (max < 1000) /* a fraction: say its top too */
			serve__check_fail(k, "%s%s: want a number %s %g and <= %g", where, key,
					  min_open ? ">" : ">=", min, max);
		else
			serve__check_fail(k, "%s%s: want a number %s %g", where, key,
					  min_open ? ">" : ">=", min);
		return;
	}
	*out = v;
}

void serve__check_bool(struct check *k, const cJSON *o, const char *key, const char *where, bool *out)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!j || cJSON_IsNull(j))
		return;
	if (!cJSON_IsBool(j)) {
		serve__check_fail(k, "%s%s: want true or false", where, key);
		return;
	}
	*out = cJSON_IsTrue(j);
}

/* ---- the context of a request ---- */

int serve__context(struct req *rq, const char *text, const char *path, const char *format,
		const char *corpus_id, struct svc_corp **hold, enum MHD_Result *ret)
{
	struct svc_corpus_info info;
	struct rlm_err err = {0, ""};
	enum corpus_kind kind = CORPUS_AUTO;
	int rc;
	*hold = NULL;
	if (format && corpus_kind_parse(format, &kind)) {
		*ret = serve__error(rq, MHD_HTTP_BAD_REQUEST, "invalid_request",
				 "format: unknown '%.*s' (known: auto, text, dir, jsonl, json, csv)",
				 SRV_CUT(format, 40), format);
		return -1;
	}
	if (corpus_id)
		rc = serve_corpus_get(rq->sv->svc, corpus_id, SVC_CORPUS_HOLD, &info);
	else if (path)
		rc = serve_corpus_load(rq->sv->svc, path, kind, SVC_CORPUS_HOLD, &info, &err);
	else
		rc = serve_corpus_text(rq->sv->svc, text, strlen(text), NULL, NULL, 0,
				     SVC_CORPUS_HOLD, &info, &err);
	if (rc == RLM_ENOTFOUND && corpus_id)
		snprintf(err.msg, sizeof(err.msg), "no corpus '%.*s'", SRV_CUT(corpus_id, 40),
			 corpus_id);
	if (rc) {
		*ret = serve__svc_error(rq, rc, err.msg);
		return -1;
	}
	*hold = info.hold;
	return 0;
}

void serve__cancel_run(struct svc_run *r, const char *why)
{
	if (serve_run_cancel(r))
		log_info("serve: run %s cancelled: %s", serve_run_id(r), why);
	/* Its run ends in the store as cancelled; a cancel is seen within
	 * milliseconds, but a stuck worker is not waited on for long. */
	serve_run_wait(r, time_now_ns() + 10 * 1000000000LL);
}

enum srv_wait serve__wait_run(struct req *rq, struct svc_run *r)
{
	int64_t deadline = rq->t0 + rq->sv->request_timeout_ns;
	for (;;) {
		if (serve_run_wait(r, RLM_MIN(time_now_ns() + SRV_SLICE_NS, deadline)))
			return SRV_ENDED;
		if (serve__client_gone(rq->fd)) {
			serve__cancel_run(r, "the client went away");
			return SRV_GONE;
		}
		if (time_now_ns() >= deadline) {
			serve__cancel_run(r, "past the request timeout");
			return SRV_TIMEOUT;
		}
	}
}

/* ---- POST /v1/solve ---- */

/* options.budgets: the names for the flat limits. A budget given
 * both ways must say the same. */
static void check_budgets(struct check *k, const cJSON *o, struct svc_opts *so)
{
	static const char *const known[] = {"tokens", "cost", "calls", "sub_calls", "time", NULL};
	static const struct {
		const char *budget, *flat;
	} same[] = {{"tokens", "max_tokens"},
		    {"cost", "max_cost"},
		    {"calls", "max_calls"},
		    {"sub_calls", "max_sub_calls"},
		    {"time", "timeout"}};
	const cJSON *b = json_get(o, "budgets");
	const char *w = "options.budgets.";
	if (!b || cJSON_IsNull(b))
		return;
	if (!cJSON_IsObject(b)) {
		serve__check_fail(k, "options.budgets: want an object");
		return;
	}
	serve__check_fields(k, b, known, w);
	check_int(k, b, "tokens", w, 0, (int64_t)1 << 50, &so->max_tokens);
	check_int(k, b, "calls", w, 0, (int64_t)1 << 50, &so->max_calls);
	check_num(k, b, "cost", w, 0, 1e9, false, &so->max_cost);
	check_int(k, b, "sub_calls", w, 0, (int64_t)1 << 50, &so->max_sub_calls);
	check_num(k, b, "time", w, 0, 1e7, true, &so->timeout_s);
	for (size_t i = 0; i < ARRAY_SIZE(same); i++) {
		const cJSON *x = json_get(b, same[i].budget), *y = json_get(o, same[i].flat);
		if (x && y && !cJSON_IsNull(x) && !cJSON_IsNull(y) && !cJSON_Compare(x, y, true))
			serve__check_fail(k, "options.budgets.%s: says another than options.%s (give one)",
				   same[i].budget, same[i].flat);
	}
}

static void check_options(struct check *k, const cJSON *o, struct svc_opts *so)
{
	static const char *const known[] = {
	    "model",	      "sub_model",  "strategy", "max_depth",
	    "max_iterations", "max_tokens", "max_cost", "max_calls",
	    "max_sub_calls",  "timeout",    "budgets",  "compaction",
	    "compaction_threshold", NULL};
	const char *w = "options.", *st;
	int64_t v;
	if (!o || cJSON_IsNull(o))
		return;
	if (!cJSON_IsObject(o)) {
		serve__check_fail(k, "options: want an object");
		return;
	}
	serve__check_fields(k, o, known, w);
	so->model = serve__check_str(k, o, "model", w);
	so->sub_model = serve__check_str(k, o, "sub_model", w);
	if ((st = serve__check_str(k, o, "strategy", w))) {
		if (strcmp(st, "repl") == 0)
			so->strategy = RLM_REPL;
		else if (strcmp(st, "tree") == 0)
			so->strategy = RLM_TREE;
		else
			serve__check_fail(k, "options.strategy: want \"repl\" or \"tree\"");
	}
	v = 0;
	check_int(k, o, "max_depth", w, 1, 16, &v);
	so->max_depth = (int)v;
	v = 0;
	check_int(k, o, "max_iterations", w, 1, 10000, &v);
	so->max_iterations = (int)v;
	check_int(k, o, "max_tokens", w, 0, (int64_t)1 << 50, &so->max_tokens);
	check_int(k, o, "max_calls", w, 0, (int64_t)1 << 50, &so->max_calls);
	check_int(k, o, "max_sub_calls", w, 0, (int64_t)1 << 50, &so->max_sub_calls);
	check_num(k, o, "max_cost", w, 0, 1e9, false, &so->max_cost);
	check_num(k, o, "timeout", w, 0, 1e7, true, &so->timeout_s);
	check_num(k, o, "compaction_threshold", w, 0, 1, true, &so->compaction_threshold);
	if (json_get(o, "compaction") && !cJSON_IsNull(json_get(o, "compaction"))) {
		bool on = true;
		serve__check_bool(k, o, "compaction", w, &on);
		so->compaction = on;
	}
	check_budgets(k, o, so);
}

void serve__check_options(struct check *k, const cJSON *o, struct svc_opts *so)
{
	check_options(k, o, so);
}

int serve__solve_parse(const char *p, size_t len, struct serve_solve *s, struct rlm_err *err)
{
	static const char *const known[] = {"question", "context", "context_path", "corpus_id",
					    "format",	"async",   "options",	   "schema",
					    NULL};
	struct check k = {false, ""};
	const cJSON *body;
	int rc;
	memset(s, 0, sizeof(*s));
	serve_opts_init(&s->so);
	if ((rc = serve__body_parse(p, len, &s->body, err)))
		return rc;
	body = s->body;
	serve__check_fields(&k, body, known, "");
	s->question = serve__check_str(&k, body, "question", "");
	s->value = json_get(body, "context");
	if (!s->value || cJSON_IsString(s->value) || cJSON_IsNull(s->value))
		s->value = NULL;
	if (!s->value)
		s->text = serve__check_str(&k, body, "context", "");
	s->path = serve__check_str(&k, body, "context_path", "");
	s->corpus_id = serve__check_str(&k, body, "corpus_id", "");
	s->format = serve__check_str(&k, body, "format", "");
	serve__check_bool(&k, body, "async", "", &s->async);
	check_options(&k, json_get(body, "options"), &s->so);
	{
		/* the answer's JSON Schema: an object (true/false as JSON
		 * Schema has them), given as JSON, not as a string of it */
		const cJSON *sc = json_get(body, "schema");
		if (sc && !cJSON_IsNull(sc) && !cJSON_IsObject(sc) && !cJSON_IsBool(sc))
			serve__check_fail(&k, "schema: want a JSON Schema (an object)");
		else if (sc && !cJSON_IsNull(sc))
			s->so.schema_json = s->schema = cJSON_PrintUnformatted(sc);
	}
	if (!k.bad && (!s->question || !*s->question))
		serve__check_fail(&k, "question: want a non-empty string");
	if (!k.bad && (!!s->text + !!s->value + !!s->path + !!s->corpus_id) != 1)
		serve__check_fail(&k, "want exactly one of context, context_path and corpus_id");
	if (!k.bad && s->format && !s->path)
		serve__check_fail(&k, "format: only with context_path");
	if (k.bad) {
		serve__solve_release(s);
		return rlm_err_set(err, RLM_EINVAL, "%s", k.msg);
	}
	return 0;
}

void serve__solve_release(struct serve_solve *s)
{
	cJSON_Delete(s->body);
	s->body = NULL;
	free(s->schema);
	s->schema = NULL;
	s->so.schema_json = NULL;
}

/* A run's JSON as the answer of a synchronous solve. */
static cJSON *solve_answer(struct svc_run *r)
{
	cJSON *j = serve_run_json(r);
	cJSON_DeleteItemFromObjectCaseSensitive(j, "question");
	return j;
}

enum MHD_Result serve__route_solve(struct req *rq)
{
	struct serve_solve b;
	struct svc_run *r = NULL;
	struct rlm_err err = {0, ""};
	enum MHD_Result ret;
	struct svc_corp *hold = NULL;
	bool async;
	int rc;
	if ((rc = serve__solve_parse(rq->body.buf.p, rq->body.buf.len, &b, &err)))
		return serve__body_error(rq, rc, &err);
	async = b.async;
	/* Refused solves load no context (it would be kept for nothing). */
	if ((rc = serve_can_start(rq->sv->svc, &err)) ||
	    (!b.value && serve__context(rq, b.text, b.path, b.format, b.corpus_id, &hold, &ret))) {
		serve__solve_release(&b);
		return rc ? serve__svc_error(rq, rc, err.msg) : ret;
	}
	if (b.value) {
		struct svc_corpus_info info;
		if ((rc = serve_corpus_value(rq->sv->svc, b.value, SVC_CORPUS_HOLD, &info, &err))) {
			serve__solve_release(&b);
			return serve__svc_error(rq, rc, err.msg);
		}
		hold = info.hold;
	}
	rc = serve_solve(rq->sv->svc, b.question, hold, &b.so, &r, &err);
	serve_corpus_put(rq->sv->svc, hold);
	serve__solve_release(&b);
	if (rc)
		return serve__svc_error(rq, rc, err.msg);
	if (async) {
		cJSON *j = cJSON_CreateObject();
		json_add_str(j, "run_id", serve_run_id(r));
		json_add_str(j, "status", "running");
		serve_run_put(r);
		return serve__json(rq, MHD_HTTP_ACCEPTED, j);
	}
	switch (serve__wait_run(rq, r)) {
	case SRV_ENDED:
		ret = serve__json(rq, MHD_HTTP_OK, solve_answer(r));
		break;
	case SRV_TIMEOUT:
		ret = serve__error(rq, MHD_HTTP_GATEWAY_TIMEOUT, "timeout",
				"the solve ran past the request timeout of %.0f s and was "
				"cancelled (run %s)",
				(double)rq->sv->request_timeout_ns / 1e9, serve_run_id(r));
		break;
	default:
		ret = MHD_NO; /* no one to answer: the connection is closed */
		break;
	}
	serve_run_put(r);
	return ret;
}

/* ---- runs ---- */

/* A run id as ids are made: letters, digits, '-', '_', '.'. */
static bool id_ok(const char *id)
{
	size_t n = strlen(id);
	if (!n || n > 64)
		return false;
	return strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == n;
}

/* The status of a run the store recorded, in the words of this API. */
static const char *stored_status(const cJSON *run)
{
	const char *st = json_str(run, "status"), *stop = json_str(json_get(run, "result"), "stop");
	if (!st)
		return "failed";
	if (strcmp(st, "running") == 0 || strcmp(st, "failed") == 0)
		return st;
	if (stop && strcmp(stop, "cancelled") == 0)
		return "cancelled";
	if (strcmp(st, "interrupted") == 0)
		return stop ? "stopped" : "cancelled";
	if (strcmp(st, "incomplete") == 0)
		return st;
	return !stop || strcmp(stop, "answer") == 0 ? "done" : "stopped";
}

static cJSON *dup_or_null(const cJSON *j)
{
	return j ? cJSON_Duplicate(j, true) : cJSON_CreateNull();
}

/* GET /v1/runs/ID of a run from the store. */
static cJSON *stored_json(const cJSON *run)
{
	cJSON *o = cJSON_CreateObject();
	const cJSON *res = json_get(run, "result");
	const char *st = stored_status(run);
	json_add_str(o, "run_id", json_str(run, "id"));
	json_add_str(o, "status", st);
	json_add(o, "question", dup_or_null(json_get(run, "question")));
	json_add(o, "answer", dup_or_null(json_get(run, "answer")));
	json_add(o, "sources", json_get(res, "sources") ? cJSON_Duplicate(json_get(res, "sources"), true)
							 : cJSON_CreateArray());
	json_add(o, "stop", dup_or_null(json_get(res, "stop")));
	if (json_str(res, "stop_detail"))
		json_add_str(o, "stop_detail", json_str(res, "stop_detail"));
	json_add_bool(o, "complete", cJSON_IsTrue(json_get(res, "complete")));
	json_add(o, "failures", json_get(res, "failures")
				    ? cJSON_Duplicate(json_get(res, "failures"), true)
				    : cJSON_CreateArray());
	json_add(o, "usage", dup_or_null(json_get(res, "usage")));
	json_add_num(o, "cost", json_num(res, "cost_usd", 0));
	json_add_num(o, "cost_usd", json_num(res, "cost_usd", 0));
	json_add(o, "timings", dup_or_null(json_get(res, "timings")));
	if (json_str(run, "resumed_from"))
		json_add_str(o, "resumed_from", json_str(run, "resumed_from"));
	if (json_str(res, "error"))
		json_add_str(o, "error", json_str(res, "error"));
	if (strcmp(st, "running") != 0)
		json_add(o, "result", dup_or_null(res));
	json_add_bool(o, "stored", true);
	return o;
}

enum MHD_Result serve__route_run(struct req *rq, const char *id)
{
	struct svc_run *r = id_ok(id) ? serve_run_get(rq->sv->svc, id) : NULL;
	struct rlm_err err = {0, ""};
	enum MHD_Result ret;
	cJSON *run;
	bool del = strcmp(rq->method, "DELETE") == 0;
	if (r) {
		if (!del) {
			ret = serve__json(rq, MHD_HTTP_OK, serve_run_json(r));
		} else if (serve_run_cancel(r)) {
			cJSON *j = cJSON_CreateObject();
			json_add_str(j, "run_id", serve_run_id(r));
			json_add_str(j, "status", "cancelling");
			ret = serve__json(rq, MHD_HTTP_ACCEPTED, j);
		} else {
			ret = serve__error(rq, MHD_HTTP_CONFLICT, "conflict", "run %s has ended", id);
		}
		serve_run_put(r);
		return ret;
	}
	run = id_ok(id) ? serve_run_record(rq->sv->svc, id, &err) : NULL;
	if (!run) {
		if (err.code == RLM_ESTORE)
			return serve__error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "%s",
					 err.msg);
		return serve__error(rq, MHD_HTTP_NOT_FOUND, "not_found", "no run '%.64s'", id);
	}
	if (del)
		ret = serve__error(rq, MHD_HTTP_CONFLICT, "conflict",
				strcmp(stored_status(run), "running") == 0
				    ? "run %s is not running in this server"
				    : "run %s has ended",
				id);
	else
		ret = serve__json(rq, MHD_HTTP_OK, stored_json(run));
	cJSON_Delete(run);
	return ret;
}

/* ---- GET /v1/runs/ID/events ---- */

/* A stream of a run's events. Owned by the library's response. */
struct sse {
	struct server *sv;
	struct svc_run *r; /* a reference; NULL when replaying a stored run */
	cJSON *stored;	   /* the stored run (owned), or NULL */
	const cJSON *next; /* the stored event to send next */
	size_t pos;	   /* the next event of r's log (stored: the next id) */
	size_t id;	   /* live: the id of the next event that has one */
	long from;	   /* Last-Event-ID: live events up to it are skipped */
	struct buf out;	   /* formatted, not yet sent from off */
	size_t off;
	bool done;	 /* the end was formatted */
	bool gone;	 /* the client went away */
	int fd;		 /* the connection's socket */
	int64_t last_ns; /* the last bytes formatted */
};

/* An event; with id SIZE_MAX, one without an id (progress: a client that
 * comes back resumes after the last event that had one). */
static void sse_format(struct sse *st, size_t id, const char *kind, const cJSON *data)
{
	char *s = json_print(data);
	buf_reset(&st->out);
	st->off = 0;
	if (id != SIZE_MAX)
		buf_printf(&st->out, "id: %zu\n", id);
	buf_printf(&st->out, "event: %s\ndata: %s\n\n", kind, s ? s : "{}");
	free(s);
	st->last_ns = time_now_ns();
}

/* A stored event in the shape of a live one (NULL: not one to send). */
static cJSON *stored_event(const cJSON *e, const cJSON *run)
{
	const char *kind = json_str(e, "kind");
	cJSON *o;
	if (!kind || strcmp(kind, "prompt") == 0)
		return NULL;
	o = cJSON_CreateObject();
	json_add_str(o, "kind", strcmp(kind, "reply") == 0 ? "turn" : kind);
	json_add_num(o, "node", json_num(e, "node", 0));
	json_add_num(o, "depth", json_num(e, "depth", 0));
	json_add_num(o, "iteration", json_num(e, "iteration", 0));
	json_add_num(o, "t_ms", json_num(e, "t_ns", 0) / 1e6);
	if (strcmp(kind, "end") == 0) {
		json_add_str(o, "run_id", json_str(run, "id"));
		json_add_str(o, "status", stored_status(run));
		json_add(o, "result", dup_or_null(json_get(e, "data")));
		return o;
	}
	json_add(o, "text", dup_or_null(json_get(e, "text")));
	if (json_get(e, "data") && !cJSON_IsNull(json_get(e, "data")))
		json_add(o, "data", cJSON_Duplicate(json_get(e, "data"), true));
	return o;
}

/* Format the next thing to send; false when the stream is over. */
static bool sse_next(struct sse *st)
{
	if (st->done)
		return false;
	if (!st->r) {
		for (; st->next; st->next = st->next->next) {
			cJSON *e = stored_event(st->next, st->stored);
			if (!e)
				continue;
			sse_format(st, st->pos++, json_str(e, "kind"), e);
			st->done = strcmp(json_str(e, "kind"), "end") == 0;
			cJSON_Delete(e);
			st->next = st->next->next;
			return true;
		}
		return false; /* a record without its end (a killed process) */
	}
	for (;;) {
		bool ended = false;
		cJSON *e = serve_run_event(st->r, st->pos, time_now_ns() + SRV_SLICE_NS, &ended);
		if (e) {
			const char *kind = json_str(e, "kind");
			bool progress = kind && strcmp(kind, "progress") == 0;
			/* Ids count the events a stored run keeps too (not
			 * progress), so that a client that comes back after a
			 * restart resumes a replay at the same place. Up to
			 * Last-Event-ID, nothing is sent again. */
			size_t id = progress ? SIZE_MAX : st->id++;
			bool end = kind && strcmp(kind, "end") == 0,
			     seen = !end && (long)(progress ? st->id : id) <= st->from;
			st->pos++;
			if (seen) {
				cJSON_Delete(e);
				continue;
			}
			sse_format(st, id, kind ? kind : "notice", e);
			st->done = end; /* sent even past Last-Event-ID: it ends
					 * the client's stream */
			cJSON_Delete(e);
			return true;
		}
		if (ended)
			return false;
		/* A watcher that left need not hold its connection's thread. */
		if (serve__client_gone(st->fd)) {
			st->gone = true;
			return false;
		}
		if (time_now_ns() - st->last_ns >= SRV_KEEPALIVE_NS) {
			buf_reset(&st->out);
			st->off = 0;
			buf_puts(&st->out, ": keepalive\n\n");
			st->last_ns = time_now_ns();
			return true;
		}
	}
}

static ssize_t sse_read(void *cls, uint64_t off, char *out, size_t max)
{
	struct sse *st = cls;
	size_t n;
	(void)off;
	if (st->off >= st->out.len && !sse_next(st))
		return st->gone ? MHD_CONTENT_READER_END_WITH_ERROR
				: MHD_CONTENT_READER_END_OF_STREAM;
	n = RLM_MIN(max, st->out.len - st->off);
	memcpy(out, st->out.p + st->off, n);
	st->off += n;
	return (ssize_t)n;
}

static void sse_free(void *cls)
{
	struct sse *st = cls;
	serve_run_put(st->r);
	cJSON_Delete(st->stored);
	buf_release(&st->out);
	free(st);
}

enum MHD_Result serve__stream(struct req *rq, void *st, MHD_ContentReaderCallback read,
			   MHD_ContentReaderFreeCallback done)
{
	const char *hdrs[] = {MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache", "X-Accel-Buffering", "no",
			      *rq->session ? "X-RLM-Session" : NULL, rq->session, NULL};
	return serve__queue(rq, MHD_HTTP_OK,
			 httpd_callback_response(MHD_SIZE_UNKNOWN, 32 * 1024, read, st, done,
						 "text/event-stream", hdrs));
}

enum MHD_Result serve__route_events(struct req *rq, const char *full)
{
	struct sse *st;
	struct rlm_err err = {0, ""};
	const char *last = MHD_lookup_connection_value(rq->c, MHD_HEADER_KIND, "Last-Event-ID");
	char id[65];
	size_t n = strcspn(full, "/");
	long from = -1;
	if (n >= sizeof(id))
		return serve__error(rq, MHD_HTTP_NOT_FOUND, "not_found", "no run '%.64s'", full);
	memcpy(id, full, n);
	id[n] = '\0';
	if (last && text_parse_int(last, 0, 1000000000, &from))
		return serve__error(rq, MHD_HTTP_BAD_REQUEST, "invalid_request",
				 "Last-Event-ID: want an event number");
	st = xcalloc(1, sizeof(*st));
	st->sv = rq->sv;
	st->fd = rq->fd;
	st->last_ns = time_now_ns();
	st->from = from;
	if (id_ok(id))
		st->r = serve_run_get(rq->sv->svc, id);
	if (!st->r) {
		st->stored = id_ok(id) ? serve_run_record(rq->sv->svc, id, &err) : NULL;
		if (!st->stored) {
			free(st);
			return serve__error(rq, MHD_HTTP_NOT_FOUND, "not_found", "no run '%s'", id);
		}
		/* Replay from the first event past Last-Event-ID. */
		st->next =
		    json_get(st->stored, "events") ? json_get(st->stored, "events")->child : NULL;
		st->pos = 0;
		while (st->next && (long)st->pos <= from) {
			cJSON *e = stored_event(st->next, st->stored);
			bool sent = e != NULL, end = e && strcmp(json_str(e, "kind"), "end") == 0;
			cJSON_Delete(e);
			if (end)
				break; /* always sent: it ends the client's stream */
			st->pos += sent;
			st->next = st->next->next;
		}
	}
	return serve__stream(rq, st, sse_read, sse_free);
}

/* ---- corpora ---- */

static cJSON *corpus_json(const struct svc_corpus_info *info)
{
	cJSON *o = cJSON_CreateObject();
	json_add_str(o, "corpus_id", info->id);
	json_add_str(o, "kind", info->kind);
	json_add_num(o, "documents", (double)info->documents);
	json_add_num(o, "bytes", (double)info->bytes);
	json_add_num(o, "tokens_estimate", (double)info->tokens_estimate);
	json_add_bool(o, "registered", info->registered);
	json_add_num(o, "in_use", info->in_use);
	return o;
}

int serve__corpora_parse(const char *p, size_t len, struct serve_corpora *c, struct rlm_err *err)
{
	static const char *const known[] = {"path", "format", "text", "documents", NULL};
	struct check k = {false, ""};
	const char *format;
	const cJSON *it;
	int rc;
	memset(c, 0, sizeof(*c));
	c->kind = CORPUS_AUTO;
	if ((rc = serve__body_parse(p, len, &c->body, err)))
		return rc;
	serve__check_fields(&k, c->body, known, "");
	c->path = serve__check_str(&k, c->body, "path", "");
	c->text = serve__check_str(&k, c->body, "text", "");
	format = serve__check_str(&k, c->body, "format", "");
	c->docs = json_get(c->body, "documents");
	if (c->docs && !cJSON_IsArray(c->docs))
		serve__check_fail(&k, "documents: want an array of strings");
	cJSON_ArrayForEach(it, c->docs)
	{
		if (!cJSON_IsString(it))
			serve__check_fail(&k, "documents: want an array of strings");
	}
	if (!k.bad && (!!c->path + !!c->text + !!c->docs) != 1)
		serve__check_fail(&k, "want exactly one of path, text and documents");
	if (!k.bad && format && !c->path)
		serve__check_fail(&k, "format: only with path");
	if (!k.bad && format && corpus_kind_parse(format, &c->kind))
		serve__check_fail(&k, "format: unknown '%.*s' (known: auto, text, dir, jsonl, json, csv)",
			   SRV_CUT(format, 40), format);
	if (k.bad) {
		serve__corpora_release(c);
		return rlm_err_set(err, RLM_EINVAL, "%s", k.msg);
	}
	return 0;
}

void serve__corpora_release(struct serve_corpora *c)
{
	cJSON_Delete(c->body);
	c->body = NULL;
}

enum MHD_Result serve__route_corpora_post(struct req *rq)
{
	struct serve_corpora b;
	struct svc_corpus_info info;
	struct rlm_err err = {0, ""};
	const cJSON *it;
	int rc;
	if ((rc = serve__corpora_parse(rq->body.buf.p, rq->body.buf.len, &b, &err)))
		return serve__body_error(rq, rc, &err);
	if (b.path) {
		rc = serve_corpus_load(rq->sv->svc, b.path, b.kind, SVC_CORPUS_KEEP, &info, &err);
	} else if (b.text) {
		rc = serve_corpus_text(rq->sv->svc, b.text, strlen(b.text), NULL, NULL, 0,
				     SVC_CORPUS_KEEP, &info, &err);
	} else {
		size_t n = (size_t)cJSON_GetArraySize(b.docs), i = 0;
		const char **d = xcalloc(n + 1, sizeof(*d));
		size_t *lens = xcalloc(n + 1, sizeof(*lens));
		cJSON_ArrayForEach(it, b.docs)
		{
			d[i] = it->valuestring;
			lens[i++] = strlen(it->valuestring);
		}
		rc =
		    serve_corpus_text(rq->sv->svc, NULL, 0, d, lens, n, SVC_CORPUS_KEEP, &info, &err);
		free(d);
		free(lens);
	}
	serve__corpora_release(&b);
	if (rc)
		return serve__svc_error(rq, rc, err.msg);
	return serve__json(rq, MHD_HTTP_CREATED, corpus_json(&info));
}

enum MHD_Result serve__route_corpus(struct req *rq, const char *id)
{
	struct svc_corpus_info info;
	cJSON *j;
	if (strcmp(rq->method, "DELETE") == 0) {
		if (serve_corpus_delete(rq->sv->svc, id, &info))
			return serve__error(rq, MHD_HTTP_NOT_FOUND, "not_found", "no corpus '%.64s'",
					 id);
		j = cJSON_CreateObject();
		json_add_str(j, "corpus_id", info.id);
		json_add_str(j, "status", "deleted");
		/* the runs still reading it keep it until they end */
		json_add_num(j, "in_use", info.in_use);
		return serve__json(rq, MHD_HTTP_OK, j);
	}
	if (serve_corpus_get(rq->sv->svc, id, 0, &info))
		return serve__error(rq, MHD_HTTP_NOT_FOUND, "not_found", "no corpus '%.64s'", id);
	return serve__json(rq, MHD_HTTP_OK, corpus_json(&info));
}

/* ---- skills ---- */

enum MHD_Result serve__route_skills(struct req *rq, const char *id)
{
	struct rlm_err err = {0, ""};
	const char *name = MHD_lookup_connection_value(rq->c, MHD_GET_ARGUMENT_KIND, "name");
	const char *all = MHD_lookup_connection_value(rq->c, MHD_GET_ARGUMENT_KIND, "all");
	bool with_all = false;
	cJSON *j;
	if (all && strcmp(all, "true") && strcmp(all, "1") && strcmp(all, "false") &&
	    strcmp(all, "0"))
		return serve__error(rq, MHD_HTTP_BAD_REQUEST, "invalid_request",
				    "all: want true or false");
	with_all = all && (strcmp(all, "true") == 0 || strcmp(all, "1") == 0);
	if (id && name)
		return serve__error(rq, MHD_HTTP_BAD_REQUEST, "invalid_request",
				    "name: a skill is named in the path already");
	if (!id && name)
		id = name;
	if (id && !*id)
		return serve__error(rq, MHD_HTTP_BAD_REQUEST, "invalid_request",
				    "name: want NAME or NAME@V");
	j = serve_skills(rq->sv->svc, id, with_all, &err);
	if (j)
		return serve__json(rq, MHD_HTTP_OK, j);
	if (err.code == RLM_ENOTFOUND)
		return serve__error(rq, MHD_HTTP_NOT_FOUND, "not_found", "%s", err.msg);
	if (err.code == RLM_EINVAL)
		return serve__error(rq, MHD_HTTP_BAD_REQUEST, "invalid_request", "%s", err.msg);
	return serve__error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "%s", err.msg);
}
