/* SPDX-License-Identifier: MIT */
/* common/httpd.c -- our HTTP servers' shared pieces on libmicrohttpd: the
 * daemon, one-write replies, capped request bodies, routes. */
#include "httpd.h"
#include "net.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the daemon ---- */

/* MHD_OPTION_NOTIFY_CONNECTION: TCP_NODELAY on every accepted socket, so
 * an answer is not held back by Nagle. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	int fd;
	(void)cls;
	(void)socket_context;
	if (code == MHD_CONNECTION_NOTIFY_STARTED && (fd = httpd_conn_fd(c)) >= 0)
		net_nodelay(fd);
}

struct MHD_Daemon *httpd_start(const struct httpd_cfg *cfg, int listen_fd)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_POLL | (cfg->quiesce ? MHD_USE_ITC : 0);
	struct MHD_Daemon *d = MHD_start_daemon(
	    flags, 0, NULL, NULL, cfg->on_request, cfg->arg, MHD_OPTION_LISTEN_SOCKET, listen_fd,
	    MHD_OPTION_CONNECTION_LIMIT, cfg->connection_limit, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
	    cfg->per_ip_limit, MHD_OPTION_CONNECTION_TIMEOUT, cfg->timeout_s,
	    MHD_OPTION_NOTIFY_COMPLETED, cfg->on_completed, cfg->arg, MHD_OPTION_NOTIFY_CONNECTION,
	    on_connection, NULL, MHD_OPTION_END);
	if (!d)
		close(listen_fd);
	return d;
}

void httpd_quiesce(struct MHD_Daemon *d)
{
	int fd = MHD_quiesce_daemon(d);
	if (fd >= 0)
		close(fd);
}

void httpd_stop(struct MHD_Daemon *d)
{
	if (d)
		MHD_stop_daemon(d);
}

int httpd_conn_fd(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? ci->connect_fd : -1;
}

/* ---- replies ---- */

/* Content-Type type and hdrs on r (which may be NULL). */
static struct MHD_Response *with_headers(struct MHD_Response *r, const char *type,
					 const char *const *hdrs)
{
	if (!r)
		return NULL;
	if (type)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	for (size_t i = 0; hdrs && hdrs[i]; i += 2)
		MHD_add_response_header(r, hdrs[i], hdrs[i + 1]);
	return r;
}

struct MHD_Response *httpd_response(char *body, size_t len, const char *type,
				    const char *const *hdrs)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r)
		free(body);
	return with_headers(r, type, hdrs);
}

struct MHD_Response *httpd_json_response(cJSON *j, const char *const *hdrs)
{
	char *s = json_print(j);
	cJSON_Delete(j);
	if (!s)
		return NULL;
	return httpd_response(s, strlen(s), "application/json", hdrs);
}

struct MHD_Response *httpd_callback_response(uint64_t size, size_t block,
					     MHD_ContentReaderCallback read, void *cls,
					     MHD_ContentReaderFreeCallback done, const char *type,
					     const char *const *hdrs)
{
	struct MHD_Response *r = MHD_create_response_from_callback(size, block, read, cls, done);
	if (!r)
		done(cls);
	return with_headers(r, type, hdrs);
}

enum MHD_Result httpd_queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r)
{
	enum MHD_Result ret;
	if (!r)
		return MHD_NO;
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result httpd_json(struct MHD_Connection *c, unsigned status, cJSON *j,
			   const char *const *hdrs)
{
	return httpd_queue(c, status, httpd_json_response(j, hdrs));
}

cJSON *httpd_error_json(const char *const *members)
{
	cJSON *root = cJSON_CreateObject(), *e = cJSON_CreateObject();
	for (size_t i = 0; members[i]; i += 2)
		json_add(e, members[i],
			 members[i + 1] ? cJSON_CreateString(members[i + 1]) : cJSON_CreateNull());
	json_add(root, "error", e);
	return root;
}

/* ---- request bodies ---- */

void httpd_body_init(struct httpd_body *b, size_t max)
{
	buf_init(&b->buf, max);
	b->too_big = false;
	b->dropped = 0;
}

void httpd_body_take(struct httpd_body *b, const char *data, size_t n)
{
	if (!b->too_big && buf_append(&b->buf, data, n)) {
		b->too_big = true;
		buf_release(&b->buf);
	}
	if (b->too_big)
		b->dropped += n;
}

void httpd_body_release(struct httpd_body *b)
{
	buf_release(&b->buf);
}

void httpd_body_completed(void *cls, struct MHD_Connection *c, void **con_cls,
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

const char *httpd_declared_over(struct MHD_Connection *c, size_t max)
{
	const char *cl =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	return cl && strtoull(cl, NULL, 10) > max ? cl : NULL;
}

/* ---- routes ---- */

/* Does url match path? *star: where its first "*" segment begins. */
static bool path_match(const char *path, const char *url, const char **star)
{
	*star = NULL;
	while (*path) {
		if (path[0] == '*' && (path[1] == '/' || !path[1])) {
			size_t n = strcspn(url, "/");
			if (!n)
				return false;
			if (!*star)
				*star = url;
			url += n;
			path++;
		} else if (*path++ != *url++) {
			return false;
		}
	}
	return !*url;
}

const struct httpd_route *httpd_route_find(const struct httpd_route *t, size_t n, const char *url,
					   const char **arg)
{
	const char *star = NULL;
	for (size_t i = 0; i < n; i++)
		if (path_match(t[i].path, url, &star)) {
			if (arg)
				*arg = star;
			return &t[i];
		}
	if (arg)
		*arg = NULL;
	return NULL;
}

bool httpd_route_allows(const struct httpd_route *r, const char *method)
{
	size_t len = strlen(method);
	for (const char *p = r->methods; *p; p += strspn(p, ", ")) {
		size_t n = strcspn(p, ", ");
		if (n == len && strncmp(p, method, n) == 0)
			return true;
		p += n;
	}
	return false;
}
