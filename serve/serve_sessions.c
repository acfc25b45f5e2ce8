/* SPDX-License-Identifier: MIT */
/* serve/serve_sessions.c -- the session routes of `rlm serve`: open one
 * over a context, add contexts, ask questions in it, look at it, end it.
 *
 * DESIGN
 * A session is the service's (serve/service.h); these routes only check
 * bodies and map errors. A question is a run like a /v1/solve one: answered
 * when it ends, or at once with its run id ("async": true) so that the
 * client follows GET /v1/runs/ID/events live and GET /v1/runs/ID for the
 * result. One question at a time per session: another is refused with
 * 409, never queued (a client that retries knows where it stands; a queue
 * would hold connections for minutes). A session that ended answers 404
 * saying why (expired, closed, evicted). */
#include "serve_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A body's context: exactly one of context (a string, documents, or any
 * JSON), context_path (with format) and corpus_id, loaded and held into
 * *hold; 0, or an answer sent (*ret). */
static int body_context(struct req *rq, const cJSON *body, struct check *k, struct svc_corp **hold,
			enum MHD_Result *ret)
{
	const cJSON *value = json_get(body, "context");
	const char *text = NULL, *path, *corpus_id, *format;
	struct svc_corpus_info info;
	struct rlm_err err = {0, ""};
	int rc;
	*hold = NULL;
	if (!value || cJSON_IsString(value) || cJSON_IsNull(value)) {
		value = NULL;
		text = serve__check_str(k, body, "context", "");
	}
	path = serve__check_str(k, body, "context_path", "");
	corpus_id = serve__check_str(k, body, "corpus_id", "");
	format = serve__check_str(k, body, "format", "");
	if (!k->bad && (!!text + !!value + !!path + !!corpus_id) != 1)
		serve__check_fail(k, "want exactly one of context, context_path and corpus_id");
	if (!k->bad && format && !path)
		serve__check_fail(k, "format: only with context_path");
	if (k->bad) {
		*ret = serve__error(rq, MHD_HTTP_BAD_REQUEST, "invalid_request", "%s", k->msg);
		return -1;
	}
	if (!value)
		return serve__context(rq, text, path, format, corpus_id, hold, ret);
	if ((rc = serve_corpus_value(rq->sv->svc, value, SVC_CORPUS_HOLD, &info, &err))) {
		*ret = serve__svc_error(rq, rc, err.msg);
		return -1;
	}
	*hold = info.hold;
	return 0;
}

/* POST /v1/sessions: {context | context_path | corpus_id, format, options} */
static enum MHD_Result session_open(struct req *rq)
{
	static const char *const known[] = {"context", "context_path", "corpus_id",
					    "format",  "options",      NULL};
	struct check k = {false, ""};
	struct rlm_err err = {0, ""};
	struct svc_opts so;
	struct svc_corp *hold = NULL;
	enum MHD_Result ret;
	char id[SVC_SESSION_ID];
	cJSON *body = NULL, *o;
	int rc;
	if ((rc = serve__body_parse(rq->body.buf.p, rq->body.buf.len, &body, &err)))
		return serve__body_error(rq, rc, &err);
	serve_opts_init(&so);
	serve__check_fields(&k, body, known, "");
	serve__check_options(&k, json_get(body, "options"), &so);
	if (body_context(rq, body, &k, &hold, &ret)) {
		cJSON_Delete(body);
		return ret;
	}
	rc = serve_session_open(rq->sv->svc, hold, &so, "api", id, &err);
	serve_corpus_put(rq->sv->svc, hold);
	cJSON_Delete(body);
	if (rc)
		return serve__svc_error(rq, rc, err.msg);
	if (!(o = serve_session_json(rq->sv->svc, id, false, &err)))
		return serve__svc_error(rq, err.code, err.msg); /* ended at once */
	return serve__json(rq, MHD_HTTP_CREATED, o);
}

/* POST /v1/sessions/ID/contexts: {context | context_path | corpus_id, format} */
static enum MHD_Result session_context(struct req *rq, const char *id)
{
	static const char *const known[] = {"context", "context_path", "corpus_id", "format", NULL};
	struct check k = {false, ""};
	struct rlm_err err = {0, ""};
	struct svc_corp *hold = NULL;
	enum MHD_Result ret;
	cJSON *body = NULL, *o;
	char name[32];
	int rc, n = 0;
	if ((rc = serve__body_parse(rq->body.buf.p, rq->body.buf.len, &body, &err)))
		return serve__body_error(rq, rc, &err);
	serve__check_fields(&k, body, known, "");
	if (body_context(rq, body, &k, &hold, &ret)) {
		cJSON_Delete(body);
		return ret;
	}
	rc = serve_session_add_context(rq->sv->svc, id, hold, &n, &err);
	serve_corpus_put(rq->sv->svc, hold);
	cJSON_Delete(body);
	if (rc)
		return serve__svc_error(rq, rc, err.msg);
	o = cJSON_CreateObject();
	snprintf(name, sizeof(name), "context_%d", n);
	json_add_str(o, "session_id", id);
	json_add_str(o, "name", name);
	json_add_num(o, "index", n);
	json_add_num(o, "contexts", n + 1);
	return serve__json(rq, MHD_HTTP_CREATED, o);
}

/* POST /v1/sessions/ID/solve: {question, async, options} */
static enum MHD_Result session_solve(struct req *rq, const char *id)
{
	static const char *const known[] = {"question", "async", "options", NULL};
	struct check k = {false, ""};
	struct rlm_err err = {0, ""};
	struct svc_opts so;
	struct svc_run *r = NULL;
	enum MHD_Result ret;
	const char *question;
	bool async = false;
	cJSON *body = NULL, *j;
	int rc;
	if ((rc = serve__body_parse(rq->body.buf.p, rq->body.buf.len, &body, &err)))
		return serve__body_error(rq, rc, &err);
	serve_opts_init(&so);
	serve__check_fields(&k, body, known, "");
	question = serve__check_str(&k, body, "question", "");
	serve__check_bool(&k, body, "async", "", &async);
	serve__check_options(&k, json_get(body, "options"), &so);
	if (!k.bad && (!question || !*question))
		serve__check_fail(&k, "question: want a non-empty string");
	if (k.bad) {
		cJSON_Delete(body);
		return serve__error(rq, MHD_HTTP_BAD_REQUEST, "invalid_request", "%s", k.msg);
	}
	rc = serve_session_solve(rq->sv->svc, id, question, &so, NULL, &r, &err);
	cJSON_Delete(body);
	if (rc)
		return serve__svc_error(rq, rc, err.msg);
	snprintf(rq->session, sizeof(rq->session), "%s", serve_run_session(r)); /* X-RLM-Session */
	if (async) {
		j = cJSON_CreateObject();
		json_add_str(j, "run_id", serve_run_id(r));
		json_add_str(j, "session_id", id);
		json_add_str(j, "status", "running");
		serve_run_put(r);
		return serve__json(rq, MHD_HTTP_ACCEPTED, j);
	}
	switch (serve__wait_run(rq, r)) {
	case SRV_ENDED:
		j = serve_run_json(r);
		cJSON_DeleteItemFromObjectCaseSensitive(j, "question");
		ret = serve__json(rq, MHD_HTTP_OK, j);
		break;
	case SRV_TIMEOUT:
		ret = serve__error(rq, MHD_HTTP_GATEWAY_TIMEOUT, "timeout",
				   "the question ran past the request timeout of %.0f s and was "
				   "cancelled (run %s; the session lives on)",
				   (double)rq->sv->request_timeout_ns / 1e9, serve_run_id(r));
		break;
	default:
		ret = MHD_NO; /* no one to answer */
		break;
	}
	serve_run_put(r);
	return ret;
}

enum MHD_Result serve__route_sessions(struct req *rq)
{
	if (strcmp(rq->method, "POST") == 0)
		return session_open(rq);
	return serve__json(rq, MHD_HTTP_OK, serve_sessions_json(rq->sv->svc));
}

enum MHD_Result serve__route_session(struct req *rq, const char *full)
{
	struct rlm_err err = {0, ""};
	char id[SVC_SESSION_ID + 8];
	const char *rest;
	size_t n = strcspn(full, "/");
	cJSON *j;
	if (n >= sizeof(id))
		return serve__error(rq, MHD_HTTP_NOT_FOUND, "not_found", "no session '%.64s'",
				    full);
	memcpy(id, full, n);
	id[n] = '\0';
	rest = full + n;
	if (strcmp(rest, "/solve") == 0)
		return session_solve(rq, id);
	if (strcmp(rest, "/contexts") == 0)
		return session_context(rq, id);
	if (strcmp(rest, "/reset") == 0) {
		if (serve_session_reset(rq->sv->svc, id, &err) ||
		    !(j = serve_session_json(rq->sv->svc, id, true, &err)))
			return serve__svc_error(rq, err.code, err.msg);
		return serve__json(rq, MHD_HTTP_OK, j);
	}
	if (strcmp(rq->method, "DELETE") == 0) {
		if (serve_session_close(rq->sv->svc, id, &err))
			return serve__svc_error(rq, err.code, err.msg);
		j = cJSON_CreateObject();
		json_add_str(j, "id", id);
		json_add_str(j, "status", "closed");
		return serve__json(rq, MHD_HTTP_OK, j);
	}
	if (!(j = serve_session_json(rq->sv->svc, id, true, &err)))
		return serve__svc_error(rq, err.code, err.msg);
	return serve__json(rq, MHD_HTTP_OK, j);
}
