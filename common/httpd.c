/* SPDX-License-Identifier: MIT */
/* common/httpd.c -- our HTTP servers' shared pieces on libmicrohttpd: the
 * daemon (with its connection limits and deadlines), one-write
 * replies, capped request bodies, routes. */
#include "httpd.h"
#include "net.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- the daemon ----
 * DESIGN
 * Each connection has a struct conn, made when the library reports it
 * (MHD_CONNECTION_NOTIFY_STARTED) and freed when it reports it closed,
 * which it does before it closes the socket: so a socket shut down here
 * under mu is always the connection's own, never a reused descriptor.
 * A connection goes through phases: its head (from the accept, or from
 * the end of its previous request), its body (from the access handler's
 * first call, with the head, to its last, once the body is all in), then
 * busy (the answer is being made and sent) until the request completes.
 * The library's own limits are set above ours (total) or off (per
 * address): it would refuse a newcomer before we could drop anyone for
 * it. Dropping is shutdown(SHUT_RDWR): the connection's thread sees the
 * end at once and closes it the usual way. */

/* the library's limit past ours: dropped connections still closing */
#define LIMIT_SLACK 64u

enum phase { PH_HEAD, PH_BODY, PH_BUSY };

struct conn {
	struct conn *prev, *next;
	int fd;
	int family;		/* AF_INET, AF_INET6, or 0: unknown */
	unsigned char addr[16]; /* the client's address (not its port) */
	int64_t t0;		/* when its present phase began (mu) */
	atomic_int phase;	/* enum phase (set under mu) */
	atomic_bool trusted;	/* httpd_conn_trust: its key was good */
	bool dropped;		/* shut down here: no longer counted (mu) */
};

struct httpd {
	struct MHD_Daemon *d;
	struct httpd_cfg cfg;
	int64_t head_ns, body_ns;  /* cfg's deadlines; 0: none */
	pthread_mutex_t mu;	   /* guards the list, the counts, stop */
	pthread_cond_t cv;	   /* stop */
	struct conn *first, *last; /* open connections, in accept order */
	unsigned live;		   /* of them, not dropped */
	uint64_t head_timeouts, body_timeouts, evicted, refused;
	bool stop;
	bool watching; /* the watchdog thread runs */
	pthread_t watchdog;
};

static bool same_addr(const struct conn *a, const struct conn *b)
{
	return a->family && a->family == b->family && memcmp(a->addr, b->addr, 16) == 0;
}

/* Shut k down and stop counting it (h->mu held). */
static void drop_locked(struct httpd *h, struct conn *k, uint64_t *counter)
{
	shutdown(k->fd, SHUT_RDWR);
	k->dropped = true;
	h->live--;
	(*counter)++;
}

/* May k be dropped for a newcomer? In its head, or sending a body without
 * having shown a good key. */
static bool evictable(const struct conn *k)
{
	int ph = atomic_load(&k->phase);
	if (k->dropped)
		return false;
	return ph == PH_HEAD || (ph == PH_BODY && !atomic_load(&k->trusted));
}

/* The connection to drop for a newcomer, of like's address when like is
 * given, or NULL: of those evictable, the one accepted first (the list is
 * in the order of accepting). Age alone decides, not the phase: ranking
 * every head above every body would let a holder of old keyless bodies
 * evict, with each new connection of its own, the fresh head of a normal
 * client that had just made room for itself (h->mu held). */
static struct conn *victim_locked(struct httpd *h, const struct conn *like)
{
	for (struct conn *k = h->first; k; k = k->next) {
		if (evictable(k) && (!like || same_addr(k, like)))
			return k;
	}
	return NULL;
}

/* Make room for k, a newcomer not counted yet, or refuse it: false when a
 * limit is reached and nothing can be dropped (h->mu held). */
static bool admit_locked(struct httpd *h, struct conn *k)
{
	if (h->cfg.per_ip_limit && k->family) {
		unsigned n = 0;
		for (struct conn *o = h->first; o; o = o->next)
			n += !o->dropped && same_addr(o, k);
		if (n >= h->cfg.per_ip_limit) {
			struct conn *v = victim_locked(h, k);
			if (!v)
				return false;
			drop_locked(h, v, &h->evicted);
		}
	}
	if (h->live >= h->cfg.connection_limit) {
		struct conn *v = victim_locked(h, NULL);
		if (!v)
			return false;
		drop_locked(h, v, &h->evicted);
	}
	return true;
}

/* The client's address of c into k. */
static void conn_addr(struct conn *k, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;
	if (sa && sa->sa_family == AF_INET) {
		k->family = AF_INET;
		memcpy(k->addr, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6) {
		k->family = AF_INET6;
		memcpy(k->addr, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
	}
}

/* MHD_OPTION_NOTIFY_CONNECTION: count each connection in and out, drop or
 * refuse at the limits; TCP_NODELAY on every accepted socket, so an
 * answer is not held back by Nagle. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct httpd *h = cls;
	struct conn *k;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		k = xcalloc(1, sizeof(*k));
		k->fd = httpd_conn_fd(c);
		if (k->fd >= 0)
			net_nodelay(k->fd);
		conn_addr(k, c);
		atomic_init(&k->phase, PH_HEAD);
		atomic_init(&k->trusted, false);
		pthread_mutex_lock(&h->mu);
		k->t0 = time_now_ns();
		if (admit_locked(h, k)) {
			h->live++;
		} else {
			if (k->fd >= 0)
				shutdown(k->fd, SHUT_RDWR);
			k->dropped = true;
			h->refused++;
		}
		k->prev = h->last;
		if (h->last)
			h->last->next = k;
		else
			h->first = k;
		h->last = k;
		pthread_mutex_unlock(&h->mu);
		*socket_context = k;
		return;
	}
	if (code != MHD_CONNECTION_NOTIFY_CLOSED || !(k = *socket_context))
		return;
	pthread_mutex_lock(&h->mu);
	if (k->prev)
		k->prev->next = k->next;
	else
		h->first = k->next;
	if (k->next)
		k->next->prev = k->prev;
	else
		h->last = k->prev;
	if (!k->dropped)
		h->live--;
	pthread_mutex_unlock(&h->mu);
	free(k);
	*socket_context = NULL;
}

static struct conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* k enters phase ph, from now. */
static void set_phase(struct httpd *h, struct conn *k, enum phase ph)
{
	pthread_mutex_lock(&h->mu);
	k->t0 = time_now_ns();
	atomic_store(&k->phase, (int)ph);
	pthread_mutex_unlock(&h->mu);
}

/* The access handler: the first call of a request has its head (the body
 * comes next), a later one without data has it all; then the server's. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *data,
				  size_t *data_size, void **con_cls)
{
	struct httpd *h = cls;
	struct conn *k = conn_of(c);
	int ph = k ? atomic_load(&k->phase) : PH_BUSY;
	if (ph == PH_HEAD)
		set_phase(h, k, PH_BODY);
	else if (ph == PH_BODY && !*data_size)
		set_phase(h, k, PH_BUSY);
	return h->cfg.on_request(h->cfg.arg, c, url, method, version, data, data_size, con_cls);
}

/* A request ended: the server's callback, then the connection (kept
 * alive) waits for its next head, on a new deadline. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode code)
{
	struct httpd *h = cls;
	struct conn *k = conn_of(c);
	if (h->cfg.on_completed)
		h->cfg.on_completed(h->cfg.arg, c, con_cls, code);
	if (k) {
		set_phase(h, k, PH_HEAD);
		atomic_store(&k->trusted, false);
	}
}

void httpd_conn_trust(struct MHD_Connection *c)
{
	struct conn *k = conn_of(c);
	if (k)
		atomic_store(&k->trusted, true);
}

/* The watchdog: drops the connections whose head or body is late, waking
 * at the next deadline (one second at most apart). */
static void *watchdog_main(void *arg)
{
	struct httpd *h = arg;
	pthread_mutex_lock(&h->mu);
	while (!h->stop) {
		int64_t now = time_now_ns(), next = now + 1000000000LL;
		struct timespec ts;
		for (struct conn *k = h->first; k; k = k->next) {
			int ph = atomic_load(&k->phase);
			int64_t limit = ph == PH_HEAD ? h->head_ns : ph == PH_BODY ? h->body_ns : 0;
			if (k->dropped || limit <= 0)
				continue;
			if (now - k->t0 >= limit)
				drop_locked(h, k,
					    ph == PH_HEAD ? &h->head_timeouts : &h->body_timeouts);
			else if (k->t0 + limit < next)
				next = k->t0 + limit;
		}
		ts.tv_sec = (time_t)(next / 1000000000);
		ts.tv_nsec = (long)(next % 1000000000);
		pthread_cond_timedwait(&h->cv, &h->mu, &ts);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

static void httpd_free(struct httpd *h)
{
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	free(h);
}

struct httpd *httpd_start(const struct httpd_cfg *cfg, int listen_fd)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_POLL | (cfg->quiesce ? MHD_USE_ITC : 0);
	struct httpd *h = xcalloc(1, sizeof(*h));
	pthread_condattr_t ca;
	h->cfg = *cfg;
	if (!h->cfg.connection_limit)
		h->cfg.connection_limit = 1024;
	h->head_ns = (int64_t)cfg->head_timeout_s * 1000000000LL;
	h->body_ns = (int64_t)cfg->body_timeout_s * 1000000000LL;
	pthread_mutex_init(&h->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->cv, &ca);
	pthread_condattr_destroy(&ca);
	h->d = MHD_start_daemon(
	    flags, 0, NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET, listen_fd,
	    MHD_OPTION_CONNECTION_LIMIT, h->cfg.connection_limit + LIMIT_SLACK,
	    MHD_OPTION_CONNECTION_TIMEOUT, cfg->timeout_s, MHD_OPTION_NOTIFY_COMPLETED,
	    on_completed, h, MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_END);
	if (!h->d) {
		close(listen_fd);
		httpd_free(h);
		return NULL;
	}
	if (h->head_ns > 0 || h->body_ns > 0) {
		h->watching = pthread_create(&h->watchdog, NULL, watchdog_main, h) == 0;
		if (!h->watching) {
			MHD_stop_daemon(h->d);
			httpd_free(h);
			return NULL;
		}
	}
	return h;
}

void httpd_quiesce(struct httpd *h)
{
	int fd = MHD_quiesce_daemon(h->d);
	if (fd >= 0)
		close(fd);
}

void httpd_stop(struct httpd *h)
{
	if (!h)
		return;
	if (h->watching) {
		pthread_mutex_lock(&h->mu);
		h->stop = true;
		pthread_cond_signal(&h->cv);
		pthread_mutex_unlock(&h->mu);
		pthread_join(h->watchdog, NULL);
	}
	MHD_stop_daemon(h->d);
	httpd_free(h);
}

void httpd_stats(struct httpd *h, struct httpd_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&h->mu);
	st->open = h->live;
	for (struct conn *k = h->first; k; k = k->next) {
		int ph = atomic_load(&k->phase);
		st->in_head += !k->dropped && ph == PH_HEAD;
		st->in_body += !k->dropped && ph == PH_BODY;
	}
	st->head_timeouts = h->head_timeouts;
	st->body_timeouts = h->body_timeouts;
	st->evicted = h->evicted;
	st->refused = h->refused;
	pthread_mutex_unlock(&h->mu);
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

/* ---- request bodies ----
 *
 * A body's buffer comes from, and goes back to, one kept by its thread
 * (the connection's): the next body of a keep-alive connection is read
 * into pages already faulted in, not fresh ones (a 160 KB prompt is 40
 * page faults, ~0.5 ms on a VM whose faults cost 11 us). Only buffers of
 * at most SPARE_MAX are kept, one a thread, freed when the thread ends. */

#define SPARE_MAX ((size_t)2 << 20)

static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;
static bool spare_ok;

static void spare_free(void *p)
{
	struct buf *b = p;
	buf_release(b);
	free(b);
}

static void spare_init(void)
{
	spare_ok = pthread_key_create(&spare_key, spare_free) == 0;
}

/* The calling thread's kept buffer (made when make), or NULL. */
static struct buf *thread_spare(bool make)
{
	struct buf *b;
	pthread_once(&spare_once, spare_init);
	if (!spare_ok)
		return NULL;
	if ((b = pthread_getspecific(spare_key)) || !make)
		return b;
	b = xmalloc(sizeof(*b));
	*b = (struct buf)BUF_INIT;
	if (pthread_setspecific(spare_key, b)) {
		free(b);
		return NULL;
	}
	return b;
}

/* The Content-Length c declares (0 when none), and its text. */
static unsigned long long declared(struct MHD_Connection *c, const char **text)
{
	*text = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	return *text ? strtoull(*text, NULL, 10) : 0;
}

void httpd_body_init(struct httpd_body *b, size_t max)
{
	buf_init(&b->buf, max);
	b->too_big = false;
	b->dropped = 0;
	b->arrived = time_now_ns();
}

void httpd_body_expect(struct httpd_body *b, struct MHD_Connection *c)
{
	const char *cl;
	unsigned long long n = declared(c, &cl);
	struct buf *spare;
	if (!n || n > HTTPD_EXPECT_MAX || (b->buf.max && n > b->buf.max))
		return;
	spare = b->buf.cap ? NULL : thread_spare(false);
	if (spare && spare->cap > n) {
		b->buf.p = spare->p;
		b->buf.cap = spare->cap;
		b->buf.p[0] = '\0';
		*spare = (struct buf)BUF_INIT;
	}
	buf_reserve(&b->buf, (size_t)n);
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
	struct buf *spare = b->buf.cap && b->buf.cap <= SPARE_MAX ? thread_spare(true) : NULL;
	if (spare && !spare->cap) {
		spare->p = b->buf.p; /* kept for the thread's next body */
		spare->cap = b->buf.cap;
		b->buf = (struct buf)BUF_INIT;
		return;
	}
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
	const char *cl;
	return declared(c, &cl) > max ? cl : NULL;
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
