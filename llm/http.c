/* SPDX-License-Identifier: MIT */
/* llm/http.c -- the libcurl transport: one easy handle per pool worker,
 * kept for the worker's life so its connections stay alive, and a share
 * handle for the DNS cache and TLS sessions. */
#include "llm_int.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct http_shared {
	CURLSH *sh;
	pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
};

struct http_client {
	CURL *easy;
	struct http_shared *shared;
	char errbuf[CURL_ERROR_SIZE];
};

/* State of one transfer, seen by the callbacks. */
struct xfer {
	struct http_resp *resp;
	const atomic_bool *cancel;
	bool too_big;
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *arg)
{
	struct http_shared *s = arg;
	(void)h;
	(void)access;
	pthread_mutex_lock(&s->locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *arg)
{
	struct http_shared *s = arg;
	(void)h;
	pthread_mutex_unlock(&s->locks[data]);
}

struct http_shared *llm__http_shared_new(void)
{
	struct http_shared *s;
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return NULL;
	s = xcalloc(1, sizeof(*s));
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&s->locks[i], NULL);
	s->sh = curl_share_init();
	if (!s->sh) {
		llm__http_shared_free(s);
		return NULL;
	}
	curl_share_setopt(s->sh, CURLSHOPT_LOCKFUNC, share_lock);
	curl_share_setopt(s->sh, CURLSHOPT_UNLOCKFUNC, share_unlock);
	curl_share_setopt(s->sh, CURLSHOPT_USERDATA, s);
	curl_share_setopt(s->sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	curl_share_setopt(s->sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	return s;
}

void llm__http_shared_free(struct http_shared *s)
{
	if (!s)
		return;
	if (s->sh)
		curl_share_cleanup(s->sh);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&s->locks[i]);
	free(s);
}

struct http_client *llm__http_client_new(struct http_shared *sh)
{
	struct http_client *hc = xcalloc(1, sizeof(*hc));
	hc->shared = sh;
	hc->easy = curl_easy_init();
	if (!hc->easy) {
		free(hc);
		return NULL;
	}
	return hc;
}

void llm__http_client_free(struct http_client *hc)
{
	if (!hc)
		return;
	curl_easy_cleanup(hc->easy);
	free(hc);
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;
	if (buf_append(&x->resp->body, p, len)) {
		x->too_big = true;
		return 0; /* makes curl fail the transfer with CURLE_WRITE_ERROR */
	}
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;
	char line[256];
	const char *v;
	if (len >= sizeof(line))
		return len;
	memcpy(line, p, len);
	line[len] = '\0';
	/* A new status line (after a 100 Continue or a redirect) starts over. */
	if (strncmp(line, "HTTP/", 5) == 0) {
		x->resp->retry_after_ms = -1;
		return len;
	}
	if (strncasecmp(line, "retry-after-ms:", 15) == 0) {
		char *end;
		double ms;
		v = line + 15;
		ms = strtod(v, &end);
		if (end != v && ms >= 0)
			x->resp->retry_after_ms = (int64_t)RLM_MIN(ms, 3600e3);
	} else if (strncasecmp(line, "retry-after:", 12) == 0 && x->resp->retry_after_ms < 0) {
		x->resp->retry_after_ms = llm__http_parse_retry_after(line + 12, time_wall_ms());
	}
	return len;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct xfer *x = arg;
	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return x->cancel && atomic_load(x->cancel) ? 1 : 0;
}

void llm__http_perform(struct http_client *hc, const struct http_req *req, struct http_resp *resp,
		  long timeout_ms, long connect_timeout_ms, const atomic_bool *cancel)
{
	struct curl_slist *hdrs = NULL;
	struct xfer x = {resp, cancel, false};
	CURL *e = hc->easy;
	CURLcode rc;
	long status = 0;

	for (int i = 0; i < req->n_headers; i++)
		hdrs = curl_slist_append(hdrs, req->headers[i]);
	/* No "Expect: 100-continue" round trip for large bodies. */
	hdrs = curl_slist_append(hdrs, "Expect:");

	curl_easy_reset(e);
	hc->errbuf[0] = '\0';
	curl_easy_setopt(e, CURLOPT_URL, req->url);
	curl_easy_setopt(e, CURLOPT_SHARE, hc->shared->sh);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->len);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, &x);
	curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e, CURLOPT_XFERINFODATA, &x);
	curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, hc->errbuf);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(e, CURLOPT_USERAGENT, "rlm/" RLM_VERSION);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	/* Keep the connections of every endpoint this worker talks to. */
	curl_easy_setopt(e, CURLOPT_MAXCONNECTS, 64L);

	rc = curl_easy_perform(e);
	curl_slist_free_all(hdrs);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	resp->status = (int)status;
	if (rc == CURLE_OK)
		return;

	if (x.too_big) {
		resp->transport_rc = RLM_ETOOBIG;
		snprintf(resp->transport_err, sizeof(resp->transport_err),
			 "reply body larger than %u bytes", (unsigned)LLM_MAX_BODY);
		return;
	}
	if (rc == CURLE_ABORTED_BY_CALLBACK) {
		resp->transport_rc = RLM_ECANCEL;
		snprintf(resp->transport_err, sizeof(resp->transport_err), "cancelled");
		return;
	}
	resp->transport_rc = rc == CURLE_OPERATION_TIMEDOUT ? RLM_ETIMEOUT : RLM_EHTTP;
	resp->connect_failed = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
			       rc == CURLE_COULDNT_RESOLVE_PROXY;
	if (rc == CURLE_OPERATION_TIMEDOUT) {
		/* A timeout before the connection was made is a connect failure. */
		double t = 0;
		curl_easy_getinfo(e, CURLINFO_CONNECT_TIME, &t);
		resp->connect_failed = t <= 0;
	}
	resp->fatal = rc == CURLE_URL_MALFORMAT || rc == CURLE_UNSUPPORTED_PROTOCOL ||
		      rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
		      rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_ISSUER_ERROR ||
		      rc == CURLE_SSL_PINNEDPUBKEYNOTMATCH || rc == CURLE_NOT_BUILT_IN;
	/* A transfer that failed midway has no usable status. */
	resp->status = 0;
	snprintf(resp->transport_err, sizeof(resp->transport_err), "%s",
		 hc->errbuf[0] ? hc->errbuf : curl_easy_strerror(rc));
}
