/* SPDX-License-Identifier: MIT */
/* tests/fuzz_toolhttp.c -- libFuzzer target: any bytes as the reply of an
 * MCP server over streamable HTTP, through tool__http_post (its event
 * stream parser, its JSON body and batch handling, its answers to the
 * server's requests met in the stream). A server in this process, on
 * 127.0.0.1, answers the request with the input: the first byte picks the
 * status (200, 202, 404, 500) and the Content-Type (an event stream, JSON,
 * none), the rest is the body, sent in pieces of a size the second byte
 * picks; the client's answers to requests in the stream get 202. Checked:
 * the call ends (the server closes: no timeout), returns 0 with a reply
 * that is the JSON-RPC response to our id, or fails with RLM_EIO and a
 * message. Each input costs a loopback connection or a few: slow for a
 * fuzzer (~1000 a second), fast enough for the stream parser's states. */
#include "../tool/tool_int.h"
#include "../common/json.h"
#include "../common/net.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const uint8_t *cur; /* the input being served (under mu) */
static size_t cur_len;

/* Read a request's head and body; is it the call (it has a "method") or
 * an answer of the client's? */
static bool read_request(int fd, bool *is_call)
{
	char buf[65536];
	size_t n = 0, need = 0;
	char *end = NULL;
	while (n < sizeof(buf) - 1) {
		ssize_t k = recv(fd, buf + n, sizeof(buf) - 1 - n, 0);
		if (k <= 0)
			return false;
		n += (size_t)k;
		buf[n] = '\0';
		if (!end && (end = strstr(buf, "\r\n\r\n"))) {
			const char *cl = strcasestr(buf, "\r\nContent-Length:");
			need = (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 17, NULL, 10) : 0);
		}
		if (end && n >= need)
			break;
	}
	*is_call = end && strstr(end, "\"method\"") != NULL;
	return end != NULL;
}

static void *serve_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	bool is_call = false;
	if (read_request(fd, &is_call)) {
		if (!is_call) {
			static const char ok[] = "HTTP/1.1 202 Accepted\r\nContent-Length: "
						 "0\r\nConnection: close\r\n\r\n";
			(void)!file_write_all(fd, ok, sizeof(ok) - 1);
		} else {
			static const int statuses[] = {200, 200, 202, 404, 500, 200, 200, 200};
			static const char *const types[] = {"text/event-stream", "application/json",
							    NULL,
							    "text/event-stream; charset=utf-8"};
			static const size_t pieces[] = {1 << 20, 1, 3, 17, 100, 1000, 4096, 65536};
			uint8_t sel, pc, *body;
			size_t len, piece;
			char head[256];
			int hn;
			pthread_mutex_lock(&mu);
			sel = cur_len > 0 ? cur[0] : 0;
			pc = cur_len > 1 ? cur[1] : 0;
			len = cur_len > 2 ? cur_len - 2 : 0;
			/* a copy: the call may end (its response read) before
			 * the whole body is sent */
			body = malloc(len ? len : 1);
			if (len)
				memcpy(body, cur + 2, len);
			pthread_mutex_unlock(&mu);
			piece = pieces[pc & 7];
			hn = snprintf(
			    head, sizeof(head), "HTTP/1.1 %d X\r\n%s%s%sConnection: close\r\n\r\n",
			    statuses[sel & 7], types[(sel >> 3) & 3] ? "Content-Type: " : "",
			    types[(sel >> 3) & 3] ? types[(sel >> 3) & 3] : "",
			    types[(sel >> 3) & 3] ? "\r\n" : "");
			if (file_write_all(fd, head, (size_t)hn) == 0)
				for (size_t off = 0; off < len; off += piece)
					if (file_write_all(fd, body + off,
							   RLM_MIN(piece, len - off)))
						break;
			free(body);
		}
	}
	shutdown(fd, SHUT_WR);
	close(fd);
	return NULL;
}

static void *accept_loop(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		pthread_t t;
		if (fd < 0)
			continue;
		if (pthread_create(&t, NULL, serve_conn, (void *)(intptr_t)fd) == 0)
			pthread_detach(t);
		else
			close(fd);
	}
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tool__http *h;
	static const char req[] = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\"}";
	struct rlm_err err = {0};
	char *reply = NULL;
	uint8_t *copy;
	int rc;
	if (!h) {
		char msg[256], *url;
		int port = 0, lfd = net_listen("127.0.0.1", 0, &port, msg, sizeof(msg));
		pthread_t t;
		signal(SIGPIPE, SIG_IGN);
		if (lfd < 0 || pthread_create(&t, NULL, accept_loop, (void *)(intptr_t)lfd))
			abort();
		url = xasprintf("http://127.0.0.1:%d/mcp", port);
		if (tool__http_open(url, NULL, 0, &h, &err))
			abort();
		free(url);
	}
	/* an exact-size copy, so that reading past the input is caught */
	copy = malloc(size ? size : 1);
	memcpy(copy, data, size);
	pthread_mutex_lock(&mu);
	cur = copy;
	cur_len = size;
	pthread_mutex_unlock(&mu);
	rc = tool__http_post(h, req, sizeof(req) - 1, 5, time_now_ns() + 20 * (int64_t)1000000000,
			     &reply, &err);
	pthread_mutex_lock(&mu);
	cur = NULL;
	cur_len = 0;
	pthread_mutex_unlock(&mu);
	if (rc == 0) {
		cJSON *j = reply ? json_parse(reply, strlen(reply)) : NULL;
		const cJSON *id = json_get(j, "id");
		if (!j || !id || !(cJSON_IsNumber(id) || cJSON_IsString(id)) ||
		    !(json_get(j, "result") || json_get(j, "error")))
			abort();
		cJSON_Delete(j);
		free(reply);
	} else if (rc != RLM_EIO || reply || !err.msg[0] || err.code != rc) {
		/* RLM_ETIMEOUT would be a hang: the server always closes */
		fprintf(stderr, "rc %d: %s\n", rc, err.msg);
		abort();
	}
	free(copy);
	return 0;
}
