/* SPDX-License-Identifier: MIT */
/* tests/test_common.c -- buffers, errors, UTF-8, number parsing, URLs, random
 * numbers, JSON helpers, TCP plumbing (net_), the HTTP server pieces
 * (httpd_). */
#include "harness.h"
#include "../common/common.h"
#include "../common/httpd.h"
#include "../common/json.h"
#include "../common/net.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

TEST(buf_grows_and_caps)
{
	struct buf b;
	char *s;
	size_t len;
	buf_init(&b, 10);
	CHECK_INT(buf_puts(&b, "hello"), 0);
	CHECK_INT(buf_printf(&b, "%d", 1234), 0);
	CHECK_STR(b.p, "hello1234");
	CHECK_INT(buf_puts(&b, "xy"), RLM_ETOOBIG);
	CHECK_STR(b.p, "hello1234"); /* unchanged on failure */
	CHECK_INT(buf_putc(&b, '!'), 0);
	CHECK_INT(b.len, 10);
	s = buf_detach(&b, &len);
	CHECK_STR(s, "hello1234!");
	CHECK_INT(len, 10);
	CHECK(b.p == NULL && b.len == 0);
	free(s);
	s = buf_detach(&b, NULL);
	CHECK_STR(s, "");
	free(s);
}

TEST(buf_printf_long)
{
	struct buf b;
	buf_init(&b, 0);
	for (int i = 0; i < 100; i++)
		CHECK_INT(buf_printf(&b, "%0300d", i), 0);
	CHECK_INT(b.len, 30000);
	buf_release(&b);
}

TEST(err_set_and_prefix)
{
	struct rlm_err e = {0, ""};
	CHECK_INT(rlm_err_set(&e, RLM_EINVAL, "bad '%s'", "x"), RLM_EINVAL);
	CHECK_STR(e.msg, "bad 'x'");
	rlm_err_prefix(&e, "loading %d", 3);
	CHECK_STR(e.msg, "loading 3: bad 'x'");
	CHECK_INT(rlm_err_set(NULL, RLM_EIO, "ignored"), RLM_EIO);
	CHECK_STR(rlm_strerror(RLM_ETOOBIG), "too large");
	CHECK_STR(rlm_strerror(-2), "No such file or directory");
}

TEST(utf8_validation)
{
	static const struct {
		const char *s;
		bool ok;
		size_t bad;
	} cases[] = {
		{"plain ascii", true, 0},
		{"caf\xc3\xa9", true, 0},
		{"\xe2\x82\xac euro", true, 0},
		{"\xf0\x9f\x98\x80 emoji", true, 0},
		{"ab\xc3", false, 2},              /* truncated */
		{"ab\xc0\xaf", false, 2},          /* overlong */
		{"\xed\xa0\x80", false, 0},        /* surrogate */
		{"x\xf4\x90\x80\x80", false, 1},   /* above U+10FFFF */
		{"abcdefghij\xff", false, 10},     /* after the fast path */
		{"\x80", false, 0},                /* stray continuation */
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		size_t bad = 999;
		bool ok = utf8_valid(cases[i].s, strlen(cases[i].s), &bad);
		CHECK_MSG(ok == cases[i].ok, "case %zu", i);
		if (!ok)
			CHECK_MSG(bad == cases[i].bad, "case %zu: bad at %zu", i, bad);
	}
}

TEST(utf8_floor_cuts_on_boundaries)
{
	const char *s = "a\xc3\xa9\xe2\x82\xac"; /* a é € : 1 + 2 + 3 bytes */
	CHECK_INT(utf8_floor(s, 6), 6);
	CHECK_INT(utf8_floor(s, 5), 3);
	CHECK_INT(utf8_floor(s, 4), 3);
	CHECK_INT(utf8_floor(s, 3), 3);
	CHECK_INT(utf8_floor(s, 2), 1);
	CHECK_INT(utf8_floor(s, 1), 1);
	CHECK_INT(utf8_floor(s, 0), 0);
}

TEST(parse_numbers)
{
	uint64_t v;
	long l;
	double d;
	CHECK(parse_count("8k", &v) == 0 && v == 8000);
	CHECK(parse_count("1M", &v) == 0 && v == 1000000);
	CHECK(parse_count("1.5M", &v) == 0 && v == 1500000);
	CHECK(parse_count("10M", &v) == 0 && v == 10000000);
	CHECK(parse_count("42", &v) == 0 && v == 42);
	CHECK(parse_count("", &v) == RLM_EINVAL);
	CHECK(parse_count("1X", &v) == RLM_EINVAL);
	CHECK(parse_count("-3", &v) == RLM_EINVAL);
	CHECK(parse_count("k", &v) == RLM_EINVAL);
	CHECK(parse_int("12", 0, 100, &l) == 0 && l == 12);
	CHECK(parse_int("101", 0, 100, &l) == RLM_EINVAL);
	CHECK(parse_int("1e3", 0, 10000, &l) == RLM_EINVAL);
	CHECK(parse_double("0.5", 0, 1, &d) == 0 && d == 0.5);
	CHECK(parse_double("nan", 0, 1, &d) == RLM_EINVAL);
}

TEST(url_without_userinfo_table)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
	    {"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"},
	    {"http://user:pass@host/v1", "http://host/v1"},
	    {"https://sk-abc@host:443", "https://host:443"},
	    {"http://a:b@c@host/x@y?q=u@v#f@g", "http://host/x@y?q=u@v#f@g"},
	    {"http://u:p@h1/v1, https://h2/v1,http://x:y@h3", "http://h1/v1, https://h2/v1,http://h3"},
	    {"http://u:p@h?x", "http://h?x"},
	    {"http://@h/", "http://h/"},
	    {"no url here@all", "no url here@all"},
	    {"", ""},
	    {"://@", "://"},
	    /* query values that look secret */
	    {"https://gw/v1?api_key=sk-1&api-version=2024-10", "https://gw/v1?api_key=REDACTED&api-version=2024-10"},
	    {"https://gw/v1?x=1&Token=abc#frag", "https://gw/v1?x=1&Token=REDACTED#frag"},
	    {"http://a/v1?sig=s1,http://u:p@b/v1?key=k2&k", "http://a/v1?sig=REDACTED,http://b/v1?key=REDACTED&k"},
	    {"http://a/?key", "http://a/?key"},
	    {"no url?key=x", "no url?key=x"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *got = url_without_userinfo(cases[i].in);
		CHECK_MSG(strcmp(got, cases[i].want) == 0, "case %zu: '%s', want '%s'", i, got,
			  cases[i].want);
		free(got);
	}
}

TEST(rng_is_seeded)
{
	struct rng a, b;
	rng_seed(&a, 7);
	rng_seed(&b, 7);
	for (int i = 0; i < 100; i++)
		CHECK(rng_next(&a) == rng_next(&b));
	for (int i = 0; i < 1000; i++) {
		double u = rng_unit(&a);
		CHECK(u >= 0 && u < 1);
		CHECK(rng_below(&a, 10) < 10);
	}
}

TEST(json_add_consumes)
{
	cJSON *o = cJSON_CreateObject();
	char *s;
	CHECK_INT(json_add_str(o, "a", "x\"y"), 0);
	CHECK_INT(json_add_num(o, "b", 3), 0);
	CHECK_INT(json_add_strn(o, "c", "abcdef", 3), 0);
	CHECK_INT(json_add(o, "d", NULL), RLM_EINVAL);
	CHECK_INT(json_add(NULL, "e", cJSON_CreateNumber(1)), RLM_EINVAL); /* freed, no leak */
	s = json_print(o);
	CHECK_STR(s, "{\"a\":\"x\\\"y\",\"b\":3,\"c\":\"abc\"}");
	free(s);
	CHECK_STR(json_str(o, "a"), "x\"y");
	CHECK(json_str(o, "b") == NULL);
	CHECK_INT(json_int(o, "b", -1), 3);
	CHECK_INT(json_int(o, "zz", -1), -1);
	cJSON_Delete(o);
}

TEST(json_parse_exact_length)
{
	cJSON *j = json_parse("{\"a\":1}  \n", 10);
	CHECK(j != NULL);
	cJSON_Delete(j);
	CHECK(json_parse("{\"a\":1} x", 9) == NULL);
	CHECK(json_parse("{\"a\":1", 6) == NULL);
	CHECK(json_parse("", 0) == NULL);
	/* a NUL byte before the end is no JSON; trailing ones end the text */
	CHECK(json_parse("{\"a\":\"b\0c\"}", 11) == NULL);
	CHECK(json_parse("{\"a\":1}\0 ", 9) == NULL);
	j = json_parse("{\"a\":\"bc\"}\0\0", 12);
	CHECK(j != NULL);
	CHECK_STR(json_str(j, "a"), "bc");
	cJSON_Delete(j);
}

TEST(json_nul_path_names_the_string)
{
	static const struct {
		const char *json;
		bool found;
		const char *path;
	} cases[] = {
	    {"{\"question\": \"a\\u0000b\", \"context\": \"x\"}", true, "question"},
	    {"{\"question\": \"ab\", \"context\": \"x\\u0000\"}", true, "context"},
	    {"{\"q\": \"a\\\\u0000 spelled out\"}", false, ""},
	    {"{\"q\": \"a\\\\\\u0000\"}", true, "q"},
	    {"{\"q\": \"\\u00000\"}", true, "q"},
	    {"{\"q\": \"\\u0001\", \"r\": \"\\u1000\"}", false, ""},
	    {"{\"documents\": [\"a\", \"b\", \"c\\u0000\"]}", true, "documents[2]"},
	    {"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}, {\"role\": \"user\", "
	     "\"content\": [{\"type\": \"text\", \"text\": \"\\u0000\"}]}]}",
	     true, "messages[1].content[0].text"},
	    {"{\"options\": {\"budgets\": {}, \"model\": \"m\\u0000\"}}", true, "options.model"},
	    {"{\"a\": {\"b\": 1}, \"c\": [1, {\"d\": [[], \"\\u0000\"]}]}", true, "c[1].d[1]"},
	    {"{\"ke\\u0000y\": 1}", true, "ke\\u0000y (a key)"},
	    {"\"\\u0000\"", true, ""},
	    {"[\"x\", \"\\u0000\"]", true, "[1]"},
	    {"{\"a\": \"}\\\"]\", \"b\": \"\\u0000\"}", true, "b"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char path[128];
		bool got;
		cJSON *j = json_parse(cases[i].json, strlen(cases[i].json));
		CHECK_MSG(j, "case %zu is not JSON: %s", i, cases[i].json);
		cJSON_Delete(j);
		got = json_nul_path(cases[i].json, strlen(cases[i].json), path, sizeof(path));
		CHECK_MSG(got == cases[i].found, "%s: %d", cases[i].json, got);
		CHECK_STR(path, cases[i].path);
	}
	{
		/* Deeper than the path holds, and a path cut to its buffer. */
		struct buf b = BUF_INIT;
		char small[8], path[256];
		const char *cut = "{\"abcdefghijkl\": \"\\u0000\"}";
		for (int i = 0; i < 40; i++)
			buf_puts(&b, "[");
		buf_puts(&b, "\"\\u0000\"");
		for (int i = 0; i < 40; i++)
			buf_puts(&b, "]");
		CHECK(json_nul_path(b.p, b.len, path, sizeof(path)));
		CHECK_CONTAINS(path, "[0][0]...");
		CHECK(json_nul_path(cut, strlen(cut), small, sizeof(small)));
		CHECK_STR(small, "abcdefg");
		buf_release(&b);
	}
}

/* ---- net ---- */

static int nodelay_of(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);
	CHECK(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len) == 0);
	return v != 0;
}

TEST(net_listen_connect_nodelay)
{
	char msg[512] = "", got[8] = "";
	int port = 0, lfd = net_listen("127.0.0.1", 0, &port, msg, sizeof(msg)), c, a;
	CHECK_MSG(lfd >= 0, "%s", msg);
	CHECK(port > 0 && port < 65536);
	CHECK_INT(net_port(lfd), port);
	CHECK_INT(nodelay_of(lfd), 1);
	c = net_connect("127.0.0.1", port, msg, sizeof(msg));
	CHECK_MSG(c >= 0, "%s", msg);
	CHECK_INT(nodelay_of(c), 1);
	a = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	CHECK(a >= 0);
	CHECK_INT(nodelay_of(a), 1); /* inherited from the listener */
	CHECK_INT(write_all(c, "ping", 4), 0);
	CHECK_INT(read(a, got, sizeof(got)), 4);
	CHECK_STR(got, "ping");
	close(a);
	close(c);
	close(lfd);
}

TEST(net_errors_name_the_address)
{
	char msg[512] = "", want[128];
	int port = 0, port2 = 0, lfd = net_listen("127.0.0.1", 0, &port, msg, sizeof(msg));
	CHECK_MSG(lfd >= 0, "%s", msg);
	CHECK_INT(net_listen("127.0.0.1", port, &port2, msg, sizeof(msg)), -1);
	snprintf(want, sizeof(want), "cannot listen on 127.0.0.1:%d: ", port);
	CHECK_CONTAINS(msg, want);
	close(lfd); /* nothing listens there now */
	CHECK_INT(net_connect("127.0.0.1", port, msg, sizeof(msg)), -1);
	snprintf(want, sizeof(want), "cannot connect to 127.0.0.1:%d: Connection refused", port);
	CHECK_STR(msg, want);
	CHECK(net_nodelay(-1) < 0);
}

struct drain {
	int fd;
	struct buf got;
};

static void *drain_main(void *arg)
{
	struct drain *d = arg;
	char chunk[4096];
	ssize_t n;
	while ((n = read(d->fd, chunk, sizeof(chunk))) > 0)
		buf_append(&d->got, chunk, (size_t)n);
	return NULL;
}

/* write_all is the one-write send: a buffer far larger than the socket's
 * buffer goes out whole in one call. */
TEST(write_all_sends_whole_over_a_socketpair)
{
	size_t len = 4u << 20;
	char *data = xmalloc(len);
	int sv[2];
	struct drain d;
	pthread_t th;
	for (size_t i = 0; i < len; i++)
		data[i] = (char)('a' + i % 26);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	d.fd = sv[1];
	buf_init(&d.got, 0);
	CHECK(pthread_create(&th, NULL, drain_main, &d) == 0);
	CHECK_INT(write_all(sv[0], data, len), 0);
	close(sv[0]);
	pthread_join(th, NULL);
	CHECK_INT(d.got.len, len);
	CHECK(memcmp(d.got.p, data, len) == 0);
	close(sv[1]);
	buf_release(&d.got);
	free(data);
}

/* ---- httpd ---- */

TEST(httpd_routes_table)
{
	static const struct httpd_route t[] = {
	    {"/healthz", "GET, HEAD", 1},
	    {"/v1/runs/*", "GET, HEAD, DELETE", 2},
	    {"/v1/runs/*/events", "GET, HEAD", 3},
	};
	static const struct {
		const char *url;
		int id; /* 0: none */
		const char *arg;
	} cases[] = {
	    {"/healthz", 1, NULL},
	    {"/healthz/", 0, NULL},
	    {"/healthzz", 0, NULL},
	    {"/health", 0, NULL},
	    {"/v1/runs/r-1", 2, "r-1"},
	    {"/v1/runs/r-1/events", 3, "r-1/events"},
	    {"/v1/runs/", 0, NULL},
	    {"/v1/runs//events", 0, NULL},
	    {"/v1/runs/r-1/", 0, NULL},
	    {"/v1/runs/r-1/eventsx", 0, NULL},
	    {"/v1/runs/a/b/events", 0, NULL},
	    {"", 0, NULL},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *arg = "unset";
		const struct httpd_route *r =
		    httpd_route_find(t, ARRAY_SIZE(t), cases[i].url, &arg);
		CHECK_MSG((r ? r->id : 0) == cases[i].id, "'%s': route %d, want %d", cases[i].url,
			  r ? r->id : 0, cases[i].id);
		CHECK_MSG(cases[i].arg ? arg && strcmp(arg, cases[i].arg) == 0 : !arg,
			  "'%s': arg '%s'", cases[i].url, arg ? arg : "(null)");
	}
	CHECK(httpd_route_allows(&t[1], "GET"));
	CHECK(httpd_route_allows(&t[1], "HEAD"));
	CHECK(httpd_route_allows(&t[1], "DELETE"));
	CHECK(!httpd_route_allows(&t[1], "POST"));
	CHECK(!httpd_route_allows(&t[1], "GE"));
	CHECK(!httpd_route_allows(&t[1], "DELETES"));
	CHECK(!httpd_route_allows(&t[1], ""));
}

TEST(httpd_error_json_keeps_the_order)
{
	cJSON *j = httpd_error_json((const char *const[]){"type", "bad", "code", "x_y", "param",
							  NULL, "message", "m", NULL});
	char *s = json_print(j);
	CHECK_STR(
	    s, "{\"error\":{\"type\":\"bad\",\"code\":\"x_y\",\"param\":null,\"message\":\"m\"}}");
	free(s);
	cJSON_Delete(j);
}

TEST(httpd_body_caps)
{
	struct httpd_body b;
	httpd_body_init(&b, 8);
	httpd_body_take(&b, "1234", 4);
	httpd_body_take(&b, "5678", 4);
	CHECK_STR(b.buf.p, "12345678");
	CHECK(!b.too_big);
	httpd_body_take(&b, "9", 1);
	CHECK(b.too_big && !b.buf.p);
	httpd_body_take(&b, "0123", 4);
	CHECK_INT(b.dropped, 5);
	httpd_body_release(&b);
}

enum { T_HELLO, T_ITEM, T_ECHO };

static const struct httpd_route test_routes[] = {
    {"/hello", "GET, HEAD", T_HELLO},
    {"/items/*", "GET, DELETE", T_ITEM},
    {"/echo", "POST", T_ECHO},
};

#define TEST_BODY_MAX 16

static enum MHD_Result test_request(void *cls, struct MHD_Connection *c, const char *url,
				    const char *method, const char *version, const char *data,
				    size_t *data_size, void **con_cls)
{
	struct httpd_body *body = *con_cls;
	const char *arg = NULL, *cl;
	const struct httpd_route *rt =
	    httpd_route_find(test_routes, ARRAY_SIZE(test_routes), url, &arg);
	(void)cls;
	(void)version;
	if (!body) {
		if ((cl = httpd_declared_over(c, TEST_BODY_MAX)))
			return httpd_json(
			    c, 413, httpd_error_json((const char *const[]){"declared", cl, NULL}),
			    NULL);
		body = xmalloc(sizeof(*body));
		httpd_body_init(body, TEST_BODY_MAX);
		*con_cls = body;
		return MHD_YES;
	}
	if (*data_size) {
		httpd_body_take(body, data, *data_size);
		*data_size = 0;
		return MHD_YES;
	}
	if (!rt)
		return httpd_json(c, 404,
				  httpd_error_json((const char *const[]){
				      "message", "no route", "type", "not_found", NULL}),
				  NULL);
	if (!httpd_route_allows(rt, method))
		return httpd_json(c, 405,
				  httpd_error_json((const char *const[]){"message", "no", NULL}),
				  (const char *const[]){MHD_HTTP_HEADER_ALLOW, rt->methods, NULL});
	switch (rt->id) {
	case T_HELLO:
		return httpd_queue(
		    c, 200,
		    httpd_response(xstrdup("hi"), 2, "text/plain",
				   (const char *const[]){"X-One", "1", "X-Two", "2", NULL}));
	case T_ITEM: {
		cJSON *j = cJSON_CreateObject();
		json_add_str(j, "id", arg);
		json_add_str(j, "method", method);
		json_add_bool(j, "nodelay", nodelay_of(httpd_conn_fd(c)));
		return httpd_json(c, 200, j, NULL);
	}
	default:
		if (body->too_big)
			return httpd_queue(
			    c, 413, httpd_response(xstrdup("too big"), 7, "text/plain", NULL));
		return httpd_queue(
		    c, 200,
		    httpd_response(xstrndup(body->buf.p ? body->buf.p : "", body->buf.len),
				   body->buf.len, "application/octet-stream", NULL));
	}
}

static void test_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			   enum MHD_RequestTerminationCode code)
{
	struct httpd_body *body = *con_cls;
	(void)cls;
	(void)c;
	(void)code;
	if (body) {
		httpd_body_release(body);
		free(body);
		*con_cls = NULL;
	}
}

/* Send req on a new connection to port and read the whole answer (the
 * request asks to close). The caller frees it. */
static char *exchange(int port, const char *req)
{
	char msg[512];
	int fd = net_connect("127.0.0.1", port, msg, sizeof(msg));
	struct buf b;
	int64_t deadline = now_ns() + 10000000000LL;
	CHECK_MSG(fd >= 0, "%s", msg);
	CHECK_INT(write_all(fd, req, strlen(req)), 0);
	buf_init(&b, 0);
	buf_puts(&b, "");
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		char chunk[4096];
		ssize_t n;
		CHECK_MSG(now_ns() < deadline, "no answer to '%.40s'", req);
		if (poll(&p, 1, 100) <= 0)
			continue;
		if ((n = read(fd, chunk, sizeof(chunk))) <= 0)
			break;
		buf_append(&b, chunk, (size_t)n);
	}
	close(fd);
	return buf_detach(&b, NULL);
}

TEST(httpd_serves_on_a_listening_socket)
{
	struct httpd_cfg cfg = {
	    .on_request = test_request,
	    .on_completed = test_completed,
	    .connection_limit = 16,
	    .timeout_s = 10,
	    .quiesce = true,
	};
	char msg[512];
	int port = 0, fd = net_listen("127.0.0.1", 0, &port, msg, sizeof(msg));
	struct MHD_Daemon *d;
	char *r;
	CHECK_MSG(fd >= 0, "%s", msg);
	d = httpd_start(&cfg, fd);
	CHECK(d);

	r = exchange(port, "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	CHECK_MSG(strncmp(r, "HTTP/1.1 200 ", 13) == 0, "%.200s", r);
	CHECK_CONTAINS(r, "\r\nContent-Type: text/plain\r\n");
	CHECK_CONTAINS(r, "\r\nX-One: 1\r\n");
	CHECK_CONTAINS(r, "\r\nX-Two: 2\r\n");
	CHECK_CONTAINS(r, "\r\nContent-Length: 2\r\n");
	CHECK(strlen(r) > 6 && strcmp(r + strlen(r) - 6, "\r\n\r\nhi") == 0);
	free(r);

	r = exchange(port, "DELETE /items/a-1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	CHECK_MSG(strncmp(r, "HTTP/1.1 200 ", 13) == 0, "%.200s", r);
	CHECK_CONTAINS(r, "\r\nContent-Type: application/json\r\n");
	CHECK_CONTAINS(r, "\r\n\r\n{\"id\":\"a-1\",\"method\":\"DELETE\",\"nodelay\":true}");
	free(r);

	r = exchange(port, "POST /items/a-1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
			   "Content-Length: 0\r\n\r\n");
	CHECK_MSG(strncmp(r, "HTTP/1.1 405 ", 13) == 0, "%.200s", r);
	CHECK_CONTAINS(r, "\r\nAllow: GET, DELETE\r\n");
	CHECK_CONTAINS(r, "\r\n\r\n{\"error\":{\"message\":\"no\"}}");
	free(r);

	r = exchange(port, "GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	CHECK_MSG(strncmp(r, "HTTP/1.1 404 ", 13) == 0, "%.200s", r);
	CHECK_CONTAINS(r, "{\"error\":{\"message\":\"no route\",\"type\":\"not_found\"}}");
	free(r);

	r = exchange(port, "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
			   "Content-Length: 5\r\n\r\nhello");
	CHECK_MSG(strncmp(r, "HTTP/1.1 200 ", 13) == 0, "%.200s", r);
	CHECK(strcmp(r + strlen(r) - 9, "\r\n\r\nhello") == 0);
	free(r);

	/* declared over the cap: answered before the body is read */
	r = exchange(port, "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
			   "Content-Length: 17\r\n\r\n01234567890123456");
	CHECK_MSG(strncmp(r, "HTTP/1.1 413 ", 13) == 0, "%.200s", r);
	CHECK_CONTAINS(r, "{\"error\":{\"declared\":\"17\"}}");
	free(r);

	/* chunked, with no length: read until the cap, then refused */
	r = exchange(port, "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
			   "Transfer-Encoding: chunked\r\n\r\n"
			   "a\r\n0123456789\r\na\r\n0123456789\r\n0\r\n\r\n");
	CHECK_MSG(strncmp(r, "HTTP/1.1 413 ", 13) == 0, "%.200s", r);
	CHECK(strcmp(r + strlen(r) - 11, "\r\n\r\ntoo big") == 0);
	free(r);

	/* The listening socket is closed once the library's thread, woken,
	 * lets go of it. */
	httpd_quiesce(d);
	for (int i = 0;; i++) {
		int c = net_connect("127.0.0.1", port, msg, sizeof(msg));
		if (c < 0)
			break;
		close(c);
		CHECK_MSG(i < 200, "the socket still accepts after httpd_quiesce");
		sleep_ns(10000000);
	}
	httpd_stop(d);
	httpd_stop(NULL);
}
