/* SPDX-License-Identifier: MIT */
/* bench/perf_serve.c -- `rlm serve` under load: many clients posting
 * synchronous solves at once to the real server on the simulator, for the
 * serve rows of `rlm bench perf`.
 *
 * DESIGN
 * The server is this binary again (`/proc/self/exe serve --port 0`), with
 * a store of its own in a temporary directory and RLM_SIM giving every
 * model call the same modelled latency; the port comes from the line it
 * prints when it listens. Every request carries an S-NIAH haystack and a
 * needle key of its own, so neither the solve memo nor the call cache can
 * answer it: each one is a whole solve with its own REPL worker. The
 * bodies are generated before the clock starts. Each client is a thread
 * with one libcurl easy handle (one keep-alive connection) that takes the
 * next request off a shared counter until there are none left, so the
 * server always has `clients` solves running. A first batch of one
 * request per client warms everything (connections, the store, the
 * zygote) and is not measured. The server keeps as many finished runs in
 * memory as there are clients (--keep-runs) and a cache of unused inline
 * contexts as big as the warm-up's (--corpus-cache): both are full once
 * the warm-up is over, so what grows after is a leak. The server's VmRSS
 * is read after the warm-up, once half the measured requests are answered
 * (read while the clients go on: no barrier) and at the end: the growth
 * over the second half, per solve, must be near zero. Last the server
 * gets SIGTERM and must exit 0 with nothing running. */
#include "bench.h"
#include "../common/json.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SERVE_TOKENS   8000	   /* each request's haystack */
#define SERVE_MAX_RESP (16u << 20) /* a response body, at most */

/* The load, shared by the client threads. The main thread fills it while
 * no client runs (between the phases). */
struct load {
	char url[64];
	char **bodies;	       /* request i's JSON body */
	char (*values)[64];    /* the needle value its answer must hold */
	int64_t *lat_ns;       /* request i's wall time, written by its client */
	size_t end;	       /* requests [0, end) of this phase */
	bool measured;	       /* this phase is measured: count the calls */
	atomic_size_t next;    /* the next request to send */
	atomic_size_t done;    /* requests of this phase answered */
	atomic_long errors;    /* requests that failed, over both phases */
	atomic_long calls;     /* model calls the measured solves made */
	atomic_long cached;    /* of those, answered by the store */
	pthread_mutex_t mu;    /* guards first_error */
	char first_error[160]; /* what the first failure was */
};

/* A client: one easy handle, so one keep-alive connection, over both
 * phases; owned by the main thread, used by one client thread at a time. */
struct client {
	struct load *L;
	CURL *h;
	struct curl_slist *hdr;
	struct buf resp; /* the last response body */
	pthread_t th;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	return buf_append(arg, p, size * n) ? 0 : size * n;
}

static void fail(struct load *L, size_t i, const char *fmt, ...) RLM_PRINTF(3, 4);

static void fail(struct load *L, size_t i, const char *fmt, ...)
{
	va_list ap;
	L->errors++;
	pthread_mutex_lock(&L->mu);
	if (!L->first_error[0]) {
		int n = snprintf(L->first_error, sizeof(L->first_error), "request %zu: ", i);
		va_start(ap, fmt);
		vsnprintf(L->first_error + n, sizeof(L->first_error) - (size_t)n, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&L->mu);
}

/* Post request i on h and check the answer. */
static void post_one(struct load *L, CURL *h, struct buf *resp, size_t i, bool measured)
{
	cJSON *j = NULL;
	const char *status, *answer;
	long code = 0;
	int64_t t0;
	CURLcode cc;
	buf_reset(resp);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, L->bodies[i]);
	t0 = time_now_ns();
	cc = curl_easy_perform(h);
	L->lat_ns[i] = time_now_ns() - t0;
	if (cc != CURLE_OK) {
		fail(L, i, "%s", curl_easy_strerror(cc));
		return;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200 || !(j = json_parse(resp->p, resp->len))) {
		fail(L, i, "status %ld: %.80s", code, resp->p);
		goto out;
	}
	status = json_str(j, "status");
	answer = json_str(j, "answer");
	if (!status || strcmp(status, "done") != 0 || !answer || !strstr(answer, L->values[i])) {
		fail(L, i, "status '%s', answer '%.60s', expected '%s'", status ? status : "?",
		     answer ? answer : "(none)", L->values[i]);
		goto out;
	}
	if (measured) {
		cJSON *calls = json_get(json_get(j, "result"), "calls");
		L->calls += (long)json_int(calls, "total", 0);
		L->cached += (long)json_int(calls, "cached", 0);
	}
out:
	cJSON_Delete(j);
}

/* A client thread: the requests of the current phase, taking the next
 * one each time. */
static void *client_run(void *arg)
{
	struct client *c = arg;
	struct load *L = c->L;
	size_t i;
	while ((i = L->next++) < L->end) {
		post_one(L, c->h, &c->resp, i, L->measured);
		L->done++;
	}
	return NULL;
}

static int client_init(struct client *c, struct load *L)
{
	memset(c, 0, sizeof(*c));
	c->L = L;
	buf_init(&c->resp, SERVE_MAX_RESP);
	if (!(c->h = curl_easy_init()))
		return RLM_EHTTP;
	/* no "Expect: 100-continue": a round trip per request for nothing */
	c->hdr = curl_slist_append(c->hdr, "Content-Type: application/json");
	c->hdr = curl_slist_append(c->hdr, "Expect:");
	curl_easy_setopt(c->h, CURLOPT_URL, L->url);
	curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->hdr);
	curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &c->resp);
	curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->h, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(c->h, CURLOPT_PROXY, "");
	return 0;
}

static void client_release(struct client *c)
{
	curl_slist_free_all(c->hdr);
	curl_easy_cleanup(c->h);
	buf_release(&c->resp);
}

/* VmRSS or VmHWM of pid in MB (1e6 bytes), or -1. */
static double proc_mb(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t n = strlen(field);
	double v = -1;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			v = strtod(line + n + 1, NULL) * 1024 / 1e6;
	fclose(f);
	return v;
}

/* Run requests [from, to) on the n clients at once and wait for them;
 * with rss_pid > 0, read its VmRSS into *rss_mb once half of them are
 * answered (the clients going on meanwhile). */
static int run_phase(struct load *L, struct client *cs, int n, size_t from, size_t to,
		     bool measured, pid_t rss_pid, double *rss_mb, struct rlm_err *err)
{
	int started = 0, rc = 0;
	L->next = from;
	L->done = 0;
	L->end = to;
	L->measured = measured;
	for (; started < n; started++)
		if (pthread_create(&cs[started].th, NULL, client_run, &cs[started]) != 0)
			break;
	if (started < n) {
		/* the clients that run take the rest */
		rc = rlm_err_set(err, -EAGAIN, "cannot start client thread %d of %d", started + 1,
				 n);
	}
	if (rss_pid > 0 && started) {
		while (L->done < (to - from) / 2)
			time_sleep_ns(1000000);
		*rss_mb = proc_mb(rss_pid, "VmRSS");
	}
	for (int i = 0; i < started; i++)
		pthread_join(cs[i].th, NULL);
	return rc;
}

/* CPU time the whole machine has spent busy (all processes, all cores),
 * in seconds, from /proc/stat; -1 when unknown. */
static double machine_busy_s(void)
{
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");
	long hz = sysconf(_SC_CLK_TCK);
	int n;
	if (!f)
		return -1;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 5 || hz <= 0)
		return -1;
	/* user nice system idle iowait irq softirq steal: all but idle and iowait */
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)hz;
}

/* The first bytes of the server's stderr, for an error message. */
static void err_tail(const char *path, char *dst, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, dst, cap - 1) : 0;
	dst[n > 0 ? n : 0] = '\0';
	for (char *p = dst; *p; p++)
		if (*p == '\n')
			*p = ' ';
	if (fd >= 0)
		close(fd);
}

/* Start `rlm serve --port 0 --cache DIR/s.db --max-solves 64 --keep-runs
 * CLIENTS --corpus-cache CACHE` with every model call taking latency_ms,
 * its stderr in DIR/serve.err: its pid in
 * *pid, its port in *port, and in *out_fd the read end of its stdout (kept
 * open so that a later write cannot kill it with SIGPIPE). Returns 0 or a
 * negative code with err (then nothing is left running). */
static int serve_start(const char *dir, long latency_ms, int clients, size_t cache, pid_t *pid,
		       int *port, int *out_fd, struct rlm_err *err)
{
	static const char *const clean[] = {"RLM_PROVIDER",	  "RLM_MODEL",
					    "RLM_SUB_MODEL",	  "OPENAI_API_KEY",
					    "OPENAI_BASE_URL",	  "ANTHROPIC_API_KEY",
					    "ANTHROPIC_BASE_URL", "RLM_API_KEY",
					    "RLM_MAX_DEPTH",	  "RLM_MAX_NODES",
					    "RLM_NO_CACHE",	  "RLM_CACHE",
					    "RLM_CONCURRENCY",	  NULL};
	char self[PATH_MAX], line[256], spec[64], tail[200], keep[16], csize[32];
	char *db = xasprintf("%s/s.db", dir), *errp = xasprintf("%s/serve.err", dir);
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	size_t got = 0;
	int fds[2] = {-1, -1};
	int64_t deadline = time_now_ns() + 20 * (int64_t)1000000000;
	const char *colon;
	int rc = 0;
	*pid = -1;
	*port = 0;
	*out_fd = -1;
	if (n <= 0 || pipe2(fds, O_CLOEXEC) != 0) {
		rc = rlm_err_set(err, -errno, "cannot start rlm serve: %s", strerror(errno));
		goto out;
	}
	self[n] = '\0';
	snprintf(spec, sizeof(spec), "ttft=%ldms", latency_ms);
	snprintf(keep, sizeof(keep), "%d", clients);
	snprintf(csize, sizeof(csize), "%zu", cache);
	fflush(stdout);
	fflush(stderr);
	if ((*pid = fork()) < 0) {
		rc = rlm_err_set(err, -errno, "cannot start rlm serve: %s", strerror(errno));
		goto out;
	}
	if (*pid == 0) {
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (e < 0 || dup2(fds[1], 1) < 0 || dup2(e, 2) < 0)
			_exit(127);
		for (size_t i = 0; clean[i]; i++)
			unsetenv(clean[i]);
		setenv("RLM_SIM", spec, 1);
		execl(self, "rlm", "serve", "--port", "0", "--cache", db, "--max-solves", "64",
		      "--keep-runs", keep, "--corpus-cache", csize, "--provider", "sim", "--model",
		      "sim", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	fds[1] = -1;
	/* the first line, "rlm serve: listening on http://127.0.0.1:PORT" */
	while (got < sizeof(line) - 1 && !memchr(line, '\n', got)) {
		struct pollfd p = {fds[0], POLLIN, 0};
		int64_t left = deadline - time_now_ns();
		ssize_t r;
		if (left <= 0 || poll(&p, 1, (int)(left / 1000000) + 1) <= 0)
			break;
		if ((r = read(fds[0], line + got, sizeof(line) - 1 - got)) <= 0)
			break;
		got += (size_t)r;
	}
	line[got] = '\0';
	if (strstr(line, "listening on http://") && (colon = strrchr(line, ':')))
		*port = atoi(colon + 1);
	if (*port <= 0) {
		err_tail(errp, tail, sizeof(tail));
		rc =
		    rlm_err_set(err, RLM_EIO, "rlm serve did not start: %s", tail[0] ? tail : line);
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
		*pid = -1;
		goto out;
	}
	*out_fd = fds[0];
	fds[0] = -1;
out:
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	free(db);
	free(errp);
	return rc;
}

/* SIGTERM, then wait at most timeout_s (then SIGKILL): the exit status,
 * 128 + the signal when one ended it, or -1; *ms the time it took. */
static int serve_stop(pid_t pid, int timeout_s, double *ms)
{
	int64_t t0 = time_now_ns();
	int st = 0;
	pid_t r = 0;
	kill(pid, SIGTERM);
	while ((r = waitpid(pid, &st, WNOHANG)) == 0 &&
	       time_now_ns() - t0 < (int64_t)timeout_s * 1000000000)
		time_sleep_ns(5000000);
	*ms = (double)(time_now_ns() - t0) / 1e6;
	if (r == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return 128 + SIGKILL;
	}
	if (r < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Whether one of the first n requests asks for key. */
static bool key_taken(char (*keys)[64], size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(keys[i], key) == 0)
			return true;
	return false;
}

/* Make the bodies of n requests, from seeds 1000 up, skipping a seed
 * whose needle key an earlier request has: the root model's first prompt
 * holds the question, so two requests with one key could share a cached
 * call. */
static int make_bodies(struct load *L, size_t n, struct rlm_err *err)
{
	char(*keys)[64] = xcalloc(n, sizeof(*keys));
	struct sniah_opts so;
	int rc = 0;
	bench_sniah_opts_default(&so);
	so.tokens = SERVE_TOKENS;
	so.seed = 999;
	for (size_t i = 0; i < n;) {
		struct sniah_item item;
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		cJSON *o;
		so.seed++;
		if (!f) {
			rc = rlm_err_set(err, -errno, "cannot generate a haystack: %s",
					 strerror(errno));
			break;
		}
		rc = bench_sniah_generate(&so, f, &item);
		if (fclose(f) != 0 && !rc)
			rc = -errno;
		if (rc) {
			free(text);
			rlm_err_set(err, rc, "cannot generate a haystack: %s", rlm_strerror(rc));
			break;
		}
		if (!key_taken(keys, i, item.key)) {
			o = cJSON_CreateObject();
			json_add_str(o, "question", item.question);
			json_add_strn(o, "context", text, len);
			L->bodies[i] = json_print(o);
			snprintf(L->values[i], sizeof(L->values[i]), "%s", item.value);
			snprintf(keys[i], sizeof(keys[i]), "%s", item.key);
			cJSON_Delete(o);
			i++;
		}
		free(text);
	}
	free(keys);
	return rc;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* The work directory's files (the store and its -wal and -shm, the
 * server's stderr), then the directory. */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char *p;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		p = xasprintf("%s/%s", dir, e->d_name);
		unlink(p);
		free(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

int bench_perf_serve_run(int clients, size_t requests, long latency_ms, struct perf_serve *out,
		   struct rlm_err *err)
{
	char dir[] = "/tmp/rlm-perf-serve-XXXXXX";
	size_t warm = (size_t)clients, total = warm + requests;
	struct client *cs = xcalloc((size_t)clients, sizeof(*cs));
	struct load L;
	int64_t *lat = NULL, t0;
	double busy0;
	int port = 0, out_fd = -1, rc;
	bool have_dir = false;
	pid_t pid = -1;

	memset(out, 0, sizeof(*out));
	memset(&L, 0, sizeof(L));
	out->clients = clients;
	out->requests = requests;
	out->exit_status = -1;
	L.bodies = xcalloc(total, sizeof(*L.bodies));
	L.values = xcalloc(total, sizeof(*L.values));
	L.lat_ns = xcalloc(total, sizeof(*L.lat_ns));
	pthread_mutex_init(&L.mu, NULL);
	if (!mkdtemp(dir)) {
		rc = rlm_err_set(err, -errno, "cannot make a work directory: %s", strerror(errno));
		goto out;
	}
	have_dir = true;
	if ((rc = make_bodies(&L, total, err)))
		goto out;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		rc = rlm_err_set(err, RLM_EHTTP, "cannot initialise libcurl");
		goto out;
	}
	/* the warm-up's contexts fill the cache of unused ones */
	for (size_t i = 0; i < warm; i++)
		out->corpus_cache += strlen(L.bodies[i]);
	out->keep_runs = clients;
	if ((rc = serve_start(dir, latency_ms, clients, out->corpus_cache, &pid, &port, &out_fd,
			      err)))
		goto out;
	snprintf(L.url, sizeof(L.url), "http://127.0.0.1:%d/v1/solve", port);
	for (int i = 0; i < clients; i++)
		if ((rc = client_init(&cs[i], &L))) {
			rlm_err_set(err, rc, "cannot make a libcurl handle");
			goto out;
		}
	/* the warm-up batch: one request per client, not measured */
	if ((rc = run_phase(&L, cs, clients, 0, warm, false, 0, NULL, err)))
		goto out;
	out->rss_warm_mb = proc_mb(pid, "VmRSS");
	out->warm_errors = L.errors;
	busy0 = machine_busy_s();
	t0 = time_now_ns();
	if ((rc = run_phase(&L, cs, clients, warm, total, true, pid, &out->rss_half_mb, err)))
		goto out;
	out->wall_s = (double)(time_now_ns() - t0) / 1e9;
	out->cpu_ms_per_solve =
	    busy0 < 0 ? -1 : (machine_busy_s() - busy0) * 1e3 / (double)requests;
	out->cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
	out->rss_end_mb = proc_mb(pid, "VmRSS");
	out->hwm_mb = proc_mb(pid, "VmHWM");
	out->errors = L.errors - out->warm_errors;
	out->solves_per_s = (double)requests / out->wall_s;
	out->calls_per_solve = (double)L.calls / (double)requests;
	out->cached_calls = L.cached;
	snprintf(out->first_error, sizeof(out->first_error), "%s", L.first_error);
	lat = xmalloc(requests * sizeof(*lat));
	memcpy(lat, L.lat_ns + warm, requests * sizeof(*lat));
	qsort(lat, requests, sizeof(*lat), cmp_i64);
	/* nearest rank */
	out->p50_ms = (double)lat[(requests * 50 + 99) / 100 - 1] / 1e6;
	out->p99_ms = (double)lat[(requests * 99 + 99) / 100 - 1] / 1e6;
	out->max_ms = (double)lat[requests - 1] / 1e6;
	out->exit_status = serve_stop(pid, 40, &out->stop_ms);
	pid = -1;
out:
	if (pid > 0) {
		double ms;
		serve_stop(pid, 5, &ms);
	}
	if (out_fd >= 0)
		close(out_fd);
	if (have_dir)
		remove_dir(dir);
	for (int i = 0; i < clients; i++)
		client_release(&cs[i]);
	for (size_t i = 0; i < total; i++)
		free(L.bodies[i]);
	free(L.bodies);
	free(L.values);
	free(L.lat_ns);
	free(lat);
	free(cs);
	pthread_mutex_destroy(&L.mu);
	return rc;
}
