/* SPDX-License-Identifier: MIT */
/* tests/test_fakesrv.c -- the fake HTTP server that the pool tests rely on,
 * driven by libcurl directly: keep-alive, recording, scripted replies and
 * each fault it can inject. */
#include "harness.h"
#include "fakesrv.h"
#include "../common/common.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Under ASan, fail the test when it leaked: the forked child ends with
 * _exit, which skips LeakSanitizer's own check. */
static void check_no_leaks(void)
{
#ifdef HAVE_LSAN
	CHECK_MSG(__lsan_do_recoverable_leak_check() == 0, "memory leaked (see above)");
#endif
}

struct got {
	struct buf body;
	struct buf headers;
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	buf_append(arg, p, size * n);
	return size * n;
}

static size_t on_discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

/* One request on e; fills g (when not NULL) and *status. */
static CURLcode fetch(CURL *e, const char *url, const char *body, struct curl_slist *hdrs,
		      long timeout_ms, struct got *g, long *status)
{
	CURLcode rc;
	if (g) {
		buf_init(&g->body, 1 << 20);
		buf_init(&g->headers, 1 << 20);
	}
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	if (body) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	} else {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	}
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, g ? on_data : on_discard);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, g ? &g->body : NULL);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, g ? on_data : on_discard);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, g ? &g->headers : NULL);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	rc = curl_easy_perform(e);
	*status = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
	return rc;
}

static void got_release(struct got *g)
{
	buf_release(&g->body);
	buf_release(&g->headers);
}

/* Ten requests on one easy handle: one connection; every request recorded
 * as sent; scripted replies first, then the default. */
TEST(fakesrv_keep_alive_and_recording)
{
	struct fakesrv *s = fakesrv_start();
	struct fake_reply first = {201, "X-Test: yes\r\nContent-Type: text/plain\r\n", "first",
				   FAKE_NORMAL, 0};
	struct fake_reply second = {429, "Retry-After: 1\r\n", "{\"error\":\"slow\"}", FAKE_NORMAL,
				    0};
	struct fake_reply dflt = {200, NULL, "dflt", FAKE_NORMAL, 0};
	CURL *e = curl_easy_init();
	long long last_t = 0;
	CHECK(s && e);
	{
		char want[64];
		CHECK(fakesrv_port(s) > 0);
		snprintf(want, sizeof(want), "http://127.0.0.1:%d", fakesrv_port(s));
		CHECK_STR(fakesrv_url(s), want);
	}
	fakesrv_push(s, &first);
	fakesrv_push(s, &second);
	for (int i = 0; i < 10; i++) {
		char url[128], body[32], hdr[32];
		struct curl_slist *h;
		struct got g;
		long status;
		snprintf(url, sizeof(url), "%s/p/%d", fakesrv_url(s), i);
		snprintf(body, sizeof(body), "n=%d", i);
		snprintf(hdr, sizeof(hdr), "X-Seq: %d", i);
		h = curl_slist_append(NULL, hdr);
		CHECK_INT(fetch(e, url, i == 9 ? NULL : body, h, 5000, &g, &status), CURLE_OK);
		curl_slist_free_all(h);
		if (i == 0) {
			CHECK_INT(status, 201);
			CHECK_STR(g.body.p, "first");
			CHECK_CONTAINS(g.headers.p, "X-Test: yes\r\n");
			CHECK_CONTAINS(g.headers.p, "Content-Type: text/plain\r\n");
			CHECK(!strstr(g.headers.p, "application/json"));
		} else if (i == 1) {
			CHECK_INT(status, 429);
			CHECK_CONTAINS(g.headers.p, "Retry-After: 1\r\n");
		} else if (i == 2) { /* after the scripted replies: the built-in default */
			CHECK_INT(status, 200);
			CHECK_STR(g.body.p, "{\"ok\":true}");
			CHECK_CONTAINS(g.headers.p, "Content-Type: application/json\r\n");
			CHECK_CONTAINS(g.headers.p, "Content-Length: 11\r\n");
			fakesrv_set_default(s, &dflt);
		} else {
			CHECK_INT(status, 200);
			CHECK_STR(g.body.p, "dflt");
		}
		got_release(&g);
	}
	CHECK_INT(fakesrv_count(s), 10);
	CHECK_INT(fakesrv_connections(s), 1);
	for (size_t i = 0; i < 10; i++) {
		const struct fake_request *r = fakesrv_request(s, i);
		char path[32], body[32], seq[8];
		snprintf(path, sizeof(path), "/p/%zu", i);
		snprintf(body, sizeof(body), "n=%zu", i);
		snprintf(seq, sizeof(seq), "%zu", i);
		CHECK(r);
		CHECK_STR(r->method, i == 9 ? "GET" : "POST");
		CHECK_STR(r->path, path);
		CHECK_STR(r->body, i == 9 ? "" : body);
		CHECK_INT(r->body_len, i == 9 ? 0 : strlen(body));
		CHECK_STR(fake_header(r, "x-seq"), seq);
		CHECK_STR(fake_header(r, "HOST"), fakesrv_url(s) + 7);
		CHECK(fake_header(r, "X-Se") == NULL);
		CHECK(r->n_headers >= 3);
		CHECK_CONTAINS(r->headers[0], "Host: 127.0.0.1:");
		CHECK_INT(r->conn, 0);
		CHECK(r->t_ms >= last_t);
		last_t = r->t_ms;
	}
	CHECK(fakesrv_request(s, 10) == NULL);
	curl_easy_cleanup(e);
	fakesrv_stop(s);
	check_no_leaks();
}

/* Truncate, reset and close each end their connection with the transfer
 * error a client must see; the next request gets a new connection. */
TEST(fakesrv_faults)
{
	struct fakesrv *s = fakesrv_start();
	char body[101];
	struct fake_reply trunc = {200, NULL, body, FAKE_TRUNCATE, 0};
	struct fake_reply reset = {200, NULL, "{}", FAKE_RESET, 0};
	struct fake_reply closed = {200, NULL, "{}", FAKE_CLOSE, 0};
	CURL *e = curl_easy_init();
	struct got g;
	long status;
	char url[128];
	memset(body, 'x', 100);
	body[100] = '\0';
	snprintf(url, sizeof(url), "%s/v1", fakesrv_url(s));
	fakesrv_push(s, &trunc);
	fakesrv_push(s, &reset);
	fakesrv_push(s, &closed);
	CHECK_INT(fetch(e, url, "{}", NULL, 5000, &g, &status), CURLE_PARTIAL_FILE);
	CHECK_INT(g.body.len, 50);
	CHECK_CONTAINS(g.headers.p, "Content-Length: 100\r\n");
	got_release(&g);
	CHECK_INT(fetch(e, url, "{}", NULL, 5000, NULL, &status), CURLE_RECV_ERROR);
	CHECK_INT(fetch(e, url, "{}", NULL, 5000, NULL, &status), CURLE_GOT_NOTHING);
	CHECK_INT(fetch(e, url, "{}", NULL, 5000, &g, &status), CURLE_OK);
	CHECK_STR(g.body.p, "{\"ok\":true}");
	got_release(&g);
	CHECK_INT(fakesrv_count(s), 4);
	CHECK_INT(fakesrv_connections(s), 4);
	for (int i = 0; i < 4; i++)
		CHECK_INT(fakesrv_request(s, i)->conn, i);
	curl_easy_cleanup(e);
	fakesrv_stop(s);
	check_no_leaks();
}

/* "Connection: close" ends the connection after the reply; a chunked body
 * gets 411; a delayed reply waits. */
TEST(fakesrv_close_chunked_delay)
{
	struct fakesrv *s = fakesrv_start();
	struct fake_reply slow = {200, NULL, "late", FAKE_NORMAL, 200};
	struct curl_slist *h;
	CURL *e = curl_easy_init();
	struct got g;
	long status;
	long long t0;
	char url[128];
	snprintf(url, sizeof(url), "%s/x", fakesrv_url(s));
	h = curl_slist_append(NULL, "Connection: close");
	CHECK_INT(fetch(e, url, "a", h, 5000, &g, &status), CURLE_OK);
	CHECK_CONTAINS(g.headers.p, "Connection: close\r\n");
	got_release(&g);
	CHECK_INT(fetch(e, url, "b", h, 5000, NULL, &status), CURLE_OK);
	curl_slist_free_all(h);
	CHECK_INT(fakesrv_connections(s), 2);

	h = curl_slist_append(NULL, "Transfer-Encoding: chunked");
	CHECK_INT(fetch(e, url, "chunky", h, 5000, NULL, &status), CURLE_OK);
	curl_slist_free_all(h);
	CHECK_INT(status, 411);
	CHECK_INT(fakesrv_count(s), 2); /* refused requests are not recorded */

	fakesrv_push(s, &slow);
	t0 = (long long)(time_now_ns() / 1000000);
	CHECK_INT(fetch(e, url, "c", NULL, 5000, &g, &status), CURLE_OK);
	CHECK_STR(g.body.p, "late");
	CHECK_MSG(time_now_ns() / 1000000 - t0 >= 195, "delay %lld ms", time_now_ns() / 1000000 - t0);
	got_release(&g);
	curl_easy_cleanup(e);
	fakesrv_stop(s);
	check_no_leaks();
}

struct hanger {
	const char *url;
	CURLcode rc;
};

static void *hang_fetch(void *arg)
{
	struct hanger *hg = arg;
	CURL *e = curl_easy_init();
	long status;
	hg->rc = fetch(e, hg->url, "{}", NULL, 30000, NULL, &status);
	curl_easy_cleanup(e);
	return NULL;
}

/* A hanging reply times the client out; stop does not wait for clients
 * that still hang, or for delays. */
TEST(fakesrv_hang_and_stop)
{
	struct fakesrv *s = fakesrv_start();
	struct fake_reply hang = {200, NULL, "", FAKE_HANG, 0};
	struct fake_reply slow = {200, NULL, "", FAKE_NORMAL, 60000};
	struct hanger hg[2];
	pthread_t th[2];
	CURL *e = curl_easy_init();
	long status;
	char url[128];
	int64_t t0;
	snprintf(url, sizeof(url), "%s/h", fakesrv_url(s));
	fakesrv_push(s, &hang);
	CHECK_INT(fetch(e, url, "{}", NULL, 200, NULL, &status), CURLE_OPERATION_TIMEDOUT);
	curl_easy_cleanup(e);
	fakesrv_push(s, &hang);
	fakesrv_push(s, &slow);
	for (int i = 0; i < 2; i++) {
		hg[i].url = url;
		pthread_create(&th[i], NULL, hang_fetch, &hg[i]);
	}
	while (fakesrv_count(s) < 3)
		time_sleep_ns(1000000);
	t0 = time_now_ns();
	fakesrv_stop(s);
	CHECK_MSG(time_now_ns() - t0 < 2000000000LL, "stop took %lld ms",
		  (long long)((time_now_ns() - t0) / 1000000));
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		CHECK_INT(hg[i].rc, CURLE_GOT_NOTHING);
	}
	check_no_leaks();
}

__attribute__((constructor)) static void init_curl(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}
