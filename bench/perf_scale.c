/* SPDX-License-Identifier: MIT */
/* bench/perf_scale.c -- the 10M-token rows of `rlm bench perf`: the
 * controller's peak memory over a whole solve, and how fast a directory
 * and a JSONL file of documents load (and how much they hold meanwhile).
 *
 * DESIGN
 * Each measurement runs in a fresh process: this binary again, as `rlm
 * bench perf --child REPORT solve|load ...`, which does the one thing and
 * writes what it saw to REPORT. A solve's child runs `rlm solve` itself
 * (cli_solve), so the number is what a user's `rlm solve` costs. The REPL
 * workers are processes of their own and are not counted; wait4's
 * ru_maxrss (what `/usr/bin/time -v` prints) would count the largest of
 * them. What is counted is what the controller holds: VmHWM alone counts
 * the pages it maps, but the context memfds it creates and writes (the
 * root worker's 40 MB, or a directory's or a JSONL's corpus, which child
 * RLMs' workers map parts of; a child's own when its code handed it a
 * copy) hold shared memory whether it maps them or not. So a
 * thread samples, every 2 ms, RssAnon + RssFile + the larger of RssShmem
 * and the size of every memfd in /proc/self/fd, and the peak of that (at
 * least VmHWM) is the number. The corpora go to a directory that is not
 * a tmpfs when there is one with the room (a tmpfs file the controller
 * maps would count in RssShmem too), and are removed afterwards.
 */
#include "bench.h"
#include "../common/json.h"
#include "../corpus/corpus.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

/* A field of /proc/self/status in kB ("VmHWM", "VmRSS"), or -1. */
static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	size_t n = strlen(field);
	long v = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

/* ---- the child ---- */

/* The shared memory of the memfds this process holds, in kB: what it
 * created and wrote (contexts, corpora) whether it maps them or not; a
 * memfd open twice (a REPL borrows a corpus's) counts once. */
static long memfd_kb(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	ino_t seen[256];
	size_t n_seen = 0;
	long kb = 0;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[300], link[64];
		struct stat st;
		bool dup = false;
		ssize_t n;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strncmp(link, "/memfd:", 7) != 0 || stat(path, &st) != 0)
			continue;
		for (size_t i = 0; i < n_seen && !dup; i++)
			dup = seen[i] == st.st_ino;
		if (dup)
			continue;
		if (n_seen < ARRAY_SIZE(seen))
			seen[n_seen++] = st.st_ino;
		kb += (long)(st.st_blocks / 2); /* 512-byte blocks */
	}
	closedir(d);
	return kb;
}

/* What the controller holds: its private and file pages (RssAnon,
 * RssFile) and its shared memory, which is at least what it maps
 * (RssShmem) and at least its memfds, mapped or not. */
struct held {
	atomic_bool stop;
	long peak_kb, memfd_at_peak_kb, memfd_peak_kb, anon_at_peak_kb, file_at_peak_kb;
	pthread_t th;
};

static long held_now(long *memfd, long *anon, long *file)
{
	long shmem = status_kb("RssShmem");
	*anon = status_kb("RssAnon");
	*file = status_kb("RssFile");
	*memfd = memfd_kb();
	return *anon + *file + RLM_MAX(shmem, *memfd);
}

static void *held_sample(void *arg)
{
	struct held *h = arg;
	do {
		long m, a, f, kb = held_now(&m, &a, &f);
		if (kb > h->peak_kb) {
			h->peak_kb = kb;
			h->memfd_at_peak_kb = m;
			h->anon_at_peak_kb = a;
			h->file_at_peak_kb = f;
		}
		h->memfd_peak_kb = RLM_MAX(h->memfd_peak_kb, m);
		time_sleep_ns(2000000);
	} while (!atomic_load(&h->stop));
	return NULL;
}

static int child_load(FILE *rep, const char *path)
{
	struct corpus_opts o = {.kind = CORPUS_AUTO, .quiet = true};
	struct corpus *c = NULL;
	struct rlm_err err = {0, ""};
	long base = status_kb("VmRSS");
	int64_t t0 = time_now_ns(), t1;
	if (corpus_load(path, &o, &c, &err)) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		return 1;
	}
	t1 = time_now_ns();
	fprintf(rep, "load_ns %lld\nheld_kb %ld\nbytes %zu\ndocs %zu\n", (long long)(t1 - t0),
		status_kb("VmHWM") - base, c->len, c->n_docs);
	corpus_free(c);
	return 0;
}

int bench_perf_scale_child(int argc, char **argv, int (*solve)(int argc, char **argv))
{
	FILE *rep;
	int status;
	int64_t t0;
	if (argc < 3) {
		log_error("usage: rlm bench perf --child REPORT solve ARGS... | load PATH");
		return 2;
	}
	if (!(rep = fopen(argv[1], "w"))) {
		log_error("cannot open '%s': %s", argv[1], strerror(errno));
		return 1;
	}
	if (strcmp(argv[2], "load") == 0 && argc == 4) {
		status = child_load(rep, argv[3]);
	} else if (strcmp(argv[2], "solve") == 0) {
		struct held h = {false, 0, 0, 0, 0, 0, 0};
		bool sampling = pthread_create(&h.th, NULL, held_sample, &h) == 0;
		t0 = time_now_ns();
		status = solve(argc - 2, argv + 2);
		fflush(stdout);
		if (sampling) {
			atomic_store(&h.stop, true);
			pthread_join(h.th, NULL);
		}
		/* the high-water mark, in case a peak fell between samples */
		h.peak_kb = RLM_MAX(h.peak_kb, status_kb("VmHWM"));
		fprintf(rep,
			"status %d\nwall_ns %lld\npeak_kb %ld\nhwm_kb %ld\nmemfd_kb %ld\n"
			"memfd_peak_kb %ld\nanon_kb %ld\nfile_kb %ld\n",
			status, (long long)(time_now_ns() - t0), h.peak_kb, status_kb("VmHWM"),
			h.memfd_at_peak_kb, h.memfd_peak_kb, h.anon_at_peak_kb, h.file_at_peak_kb);
	} else {
		log_error("unknown child job '%s'", argv[2]);
		status = 2;
	}
	if (fclose(rep) != 0 && !status)
		status = 1;
	return status;
}

/* ---- the parent ---- */

/* Run `rlm bench perf --child REPORT args...` with stdout going to out and
 * stderr to /dev/null; read REPORT's "key value" lines into a JSON-less
 * table: get(key) after it. Returns the child's exit status, or -1. */
static int run_child(const char *dir, const char *const *args, const char *out)
{
	char self[PATH_MAX], *rep = xasprintf("%s/report", dir);
	const char *argv[32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	size_t k = 0;
	int st;
	pid_t pid;
	if (n <= 0) {
		free(rep);
		return -1;
	}
	self[n] = '\0';
	argv[k++] = "rlm";
	argv[k++] = "bench";
	argv[k++] = "perf";
	argv[k++] = "--child";
	argv[k++] = rep;
	for (size_t i = 0; args[i] && k < ARRAY_SIZE(argv) - 1; i++)
		argv[k++] = args[i];
	argv[k] = NULL;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		free(rep);
		return -1;
	}
	if (pid == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		int e = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(127);
		execv(self, (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	free(rep);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The number after `key ` in the child's report, or -1. */
static double report_get(const char *dir, const char *key)
{
	char *path = xasprintf("%s/report", dir), line[256];
	FILE *f = fopen(path, "r");
	size_t n = strlen(key);
	double v = -1;
	free(path);
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, n) == 0 && line[n] == ' ')
			v = strtod(line + n + 1, NULL);
	fclose(f);
	return v;
}

/* A fresh directory for `need` bytes of corpora, with the room: under
 * $TMPDIR, /var/tmp or /tmp when one is not a tmpfs (a corpus file mapped
 * from a tmpfs would count as the controller's shared memory, beside its
 * memfds), else under one of them or /dev/shm. *tmpfs says which. */
static char *make_workdir(uint64_t need, bool *tmpfs)
{
	const char *bases[] = {getenv("TMPDIR"), "/var/tmp", "/tmp", "/dev/shm"};
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < ARRAY_SIZE(bases); i++) {
			struct statvfs sv;
			struct statfs sf;
			char *t;
			if (!bases[i] || !*bases[i] || access(bases[i], W_OK) != 0 ||
			    statvfs(bases[i], &sv) != 0 ||
			    (uint64_t)sv.f_bavail * sv.f_frsize < need + (need >> 2) ||
			    statfs(bases[i], &sf) != 0)
				continue;
			*tmpfs = sf.f_type == TMPFS_MAGIC;
			if (pass == 0 && *tmpfs)
				continue;
			t = xasprintf("%s/rlm-perf-XXXXXX", bases[i]);
			if (mkdtemp(t))
				return t;
			free(t);
		}
	return NULL;
}

/* rm -r of the work directory: files, and the one level of documents. */
static void remove_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	if (!d) {
		unlink(path);
		return;
	}
	while ((e = readdir(d))) {
		char *p;
		struct stat st;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		p = xasprintf("%s/%s", path, e->d_name);
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			remove_tree(p);
		else
			unlink(p);
		free(p);
	}
	closedir(d);
	rmdir(path);
}

static int load_row(const char *dir, const char *path, double *ms, double *held, size_t *docs,
		    struct rlm_err *err)
{
	const char *args[] = {"load", path, NULL};
	char *out = xasprintf("%s/load.out", dir);
	int rc = run_child(dir, args, out);
	double bytes = report_get(dir, "bytes");
	free(out);
	if (rc != 0 || bytes <= 0)
		return rlm_err_set(err, RLM_EIO, "loading '%s' in a child failed (status %d)", path,
				   rc);
	*ms = report_get(dir, "load_ns") / 1e6;
	*held = report_get(dir, "held_kb") * 1024 / bytes;
	*docs = (size_t)report_get(dir, "docs");
	return 0;
}

/* Solve path (a corpus of `bytes`) in a child process: its memory, time
 * and counts into out. A wrong answer is an error. */
static int solve_row(const char *dir, const char *path, const struct sniah_item *item,
		     struct perf_scale_solve *out, struct rlm_err *err)
{
	/* A store of its own: what a solve costs with one, and nothing from
	 * an earlier run answers it. */
	char *cache = xasprintf("%s/cache.db", dir), *json = xasprintf("%s/solve.json", dir);
	char *text = NULL;
	const char *args[] = {"solve",	     "--context",   path,  "--question",
			      item->question, "--provider",  "sim", "--model",
			      "sim",	     "--sub-model", "sim", "--json",
			      "--quiet",     "--cache",	    cache, NULL};
	struct rlm_err e2;
	size_t len;
	cJSON *j = NULL;
	const char *a;
	int st = run_child(dir, args, json), rc = 0;
	unlink(cache);
	out->peak_mb = report_get(dir, "peak_kb") * 1024 / 1e6;
	out->hwm_mb = report_get(dir, "hwm_kb") * 1024 / 1e6;
	out->memfd_mb = report_get(dir, "memfd_kb") * 1024 / 1e6;
	out->memfd_most_mb = report_get(dir, "memfd_peak_kb") * 1024 / 1e6;
	out->solve_s = report_get(dir, "wall_ns") / 1e9;
	if (st == 0 && file_read(json, 64 << 20, &text, &len, &e2) == 0)
		j = json_parse(text, len);
	a = j ? json_str(j, "answer") : NULL;
	if (st != 0 || out->peak_mb <= 0 || !a || !strstr(a, item->value))
		rc = rlm_err_set(err, RLM_EIO,
				 "the 10M-token solve of '%s' went wrong: status %d, answer '%.80s', "
				 "expected '%s'",
				 path, st, a ? a : "(none)", item->value);
	else {
		out->sub_calls = (long)json_num(j, "sub_calls", 0);
		out->nodes = (long)json_num(j, "nodes", 0);
	}
	cJSON_Delete(j);
	free(text);
	free(cache);
	free(json);
	return rc;
}

int bench_perf_scale_run(uint64_t tokens, struct perf_scale *out, struct rlm_err *err)
{
	struct sniah_opts so;
	struct sniah_item item;
	char *dir, *text = NULL, *docs = NULL, *jsonl = NULL;
	size_t n, needle_doc;
	int rc;
	memset(out, 0, sizeof(*out));
	dir = make_workdir(3 * 4 * tokens, &out->tmpfs);
	if (!dir)
		return rlm_err_set(err, -errno, "cannot make a work directory: %s",
				   strerror(errno));
	bench_sniah_opts_default(&so);
	so.tokens = tokens;
	so.seed = 11;
	text = xasprintf("%s/hay.txt", dir);
	docs = xasprintf("%s/docs", dir);
	jsonl = xasprintf("%s/docs.jsonl", dir);
	if ((rc = bench_sniah_write(&so, SNIAH_TEXT, 1, text, &item, &n, &needle_doc)) ||
	    (rc = bench_sniah_write(&so, SNIAH_DIR, (size_t)RLM_MAX(tokens / 2000, 1), docs, &item,
			      &out->dir_docs, &needle_doc)) ||
	    (rc = bench_sniah_write(&so, SNIAH_JSONL, (size_t)RLM_MAX(tokens / 1000, 1), jsonl, &item,
			      &out->jsonl_docs, &needle_doc))) {
		rc = rlm_err_set(err, rc, "cannot write the corpora in '%s': %s", dir,
				 strerror(-rc));
		goto out;
	}
	out->bytes = item.bytes;
	if ((rc = solve_row(dir, text, &item, &out->text, err)) ||
	    (rc = solve_row(dir, docs, &item, &out->dir, err)) ||
	    (rc = solve_row(dir, jsonl, &item, &out->jsonl, err)) ||
	    (rc = load_row(dir, docs, &out->dir_ms, &out->dir_held, &out->dir_docs, err)) ||
	    (rc = load_row(dir, jsonl, &out->jsonl_ms, &out->jsonl_held, &out->jsonl_docs, err)))
		goto out;
	rc = 0;
out:
	remove_tree(dir);
	free(dir);
	free(text);
	free(docs);
	free(jsonl);
	return rc;
}
