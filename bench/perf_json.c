/* SPDX-License-Identifier: MIT */
/* bench/perf_json.c -- `rlm bench perf`: a 40 MB JSON context (a .json
 * file of records) loaded and parsed by a worker: the time from the path
 * to a worker whose `context` is the parsed list, and the memory that
 * costs the worker and the controller. */
#include "bench.h"
#include "../corpus/corpus.h"
#include "../repl/repl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Fields of /proc/PID/status (pid 0: self) in bytes; -1 when unknown. */
static void status_of(pid_t pid, long long *rss, long long *hwm)
{
	char path[64], line[256];
	FILE *f;
	*rss = *hwm = -1;
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	if (!(f = fopen(path, "r")))
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "VmRSS:", 6) == 0)
			*rss = strtoll(line + 6, NULL, 10) * 1024;
		else if (strncmp(line, "VmHWM:", 6) == 0)
			*hwm = strtoll(line + 6, NULL, 10) * 1024;
	}
	fclose(f);
}

/* A JSON array of records, about bytes long, written to path. */
static int write_records(const char *path, size_t bytes, size_t *n, struct rlm_err *err)
{
	static const char *const words[] = {"alpha", "beta", "gamma", "door", "green", "report"};
	FILE *f = fopen(path, "w");
	size_t size = 1, i = 0;
	if (!f)
		return rlm_err_set(err, RLM_EIO, "cannot create '%s'", path);
	fputc('[', f);
	while (size < bytes) {
		int w = fprintf(f, "%s{\"id\": \"r%zu\", \"title\": \"Record %zu\", \"year\": %zu, "
				   "\"tags\": [\"a\", \"b\"], \"text\": \"",
				i ? ",\n" : "", i, i, 1990 + i % 30);
		for (int k = 0; k < 60; k++)
			w += fprintf(f, "%s%s", k ? " " : "", words[(i * 7 + (size_t)k * 13) % 6]);
		w += fprintf(f, "\"}");
		size += (size_t)w;
		i++;
	}
	fputc(']', f);
	*n = i;
	if (fclose(f))
		return rlm_err_set(err, RLM_EIO, "cannot write '%s'", path);
	return 0;
}

int bench_perf_json_load(size_t bytes, struct bench_json_load *out, struct rlm_err *err)
{
	const char *dir = getenv("TMPDIR");
	char *path = xasprintf("%s/rlm-perf-%d.json", dir && *dir ? dir : "/tmp", (int)getpid());
	struct corpus *c = NULL;
	struct repl *r = NULL;
	struct repl_cfg cfg;
	struct repl_stats st;
	size_t *off = NULL, *len = NULL, n = 0;
	long long rss, hwm;
	int64_t t0;
	int rc;
	memset(out, 0, sizeof(*out));
	if ((rc = write_records(path, bytes, &n, err)))
		goto out;
	t0 = time_now_ns();
	if ((rc = corpus_load(path, NULL, &c, err)))
		goto out;
	out->load_ms = (double)(time_now_ns() - t0) / 1e6;
	off = xcalloc(c->n_docs + 1, sizeof(*off));
	len = xcalloc(c->n_docs + 1, sizeof(*len));
	for (size_t i = 0; i < c->n_docs; i++) {
		off[i] = c->docs[i].off;
		len[i] = c->docs[i].len;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.ctx = (struct repl_context){.text = c->buf, .len = c->len, .docs = true, .json = true,
					.doc_off = off, .doc_len = len, .n_docs = c->n_docs,
					.has_fd = c->fd >= 0, .fd = c->fd, .text_at = c->fd_text,
					.table_at = c->fd_table};
	if ((rc = repl_start(&cfg, &r, err)))
		goto out;
	out->ready_ms = (double)(time_now_ns() - t0) / 1e6;
	out->bytes = c->len;
	out->records = c->n_docs;
	repl_stats(r, &st);
	status_of(st.pid, &rss, &hwm);
	out->worker_mb = rss >= 0 ? (double)rss / 1e6 : -1;
	out->worker_peak_mb = hwm >= 0 ? (double)hwm / 1e6 : -1;
	corpus_release_pages(c);
	status_of(0, &rss, &hwm);
	out->controller_mb = rss >= 0 ? (double)rss / 1e6 : -1;
	(void)n;
out:
	repl_free(r);
	corpus_free(c);
	free(off);
	free(len);
	unlink(path);
	free(path);
	return rc;
}
