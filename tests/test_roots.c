/* SPDX-License-Identifier: MIT */
/* tests/test_roots.c -- what `--root` guarantees (issue 19, finding 1):
 * a path is resolved beneath the root's descriptor and read only through
 * the descriptors so opened, so a user who can write under a root and
 * swaps a file or a folder for a symbolic link (renameat2
 * RENAME_EXCHANGE, in a loop) never makes the server read what lies
 * outside. The corpus loader in process (openat2 and the O_NOFOLLOW walk
 * that stands in for it), then the real `rlm serve` binary over HTTP while
 * a thread swaps, and the plain cases: a link under a root is refused, ".."
 * cannot climb out, files and folders under a root still load. */
#include "harness.h"
#include "proc.h"
#include "../common/common.h"
#include "../common/json.h"
#include "../corpus/corpus_int.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BENIGN "Quarterly notes: the harbour reopened on Tuesday.\n"
#define SECRET "TOP-SECRET: the vault combination is 31-7-1999, keep it safe.\n"
#define SWAPS  2000 /* exchanges each race makes, at least */

/* ---- fixtures ---- */

static void put(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	CHECK_MSG(fd >= 0, "cannot create %s: %s", path, strerror(errno));
	CHECK(file_write_all(fd, text, strlen(text)) == 0);
	close(fd);
	CHECK(chmod(path, mode) == 0);
}

static char *tmp(const char *rel)
{
	return xasprintf("%s/%s", harness_tmpdir(), rel);
}

static void mkdirs(const char *rel)
{
	char *p = tmp(rel);
	CHECK_MSG(mkdir(p, 0755) == 0, "mkdir %s: %s", p, strerror(errno));
	free(p);
}

/* The secret: a 0600 file outside the root, in a folder of its own too
 * (named like the benign one, so a folder swapped in would yield it). */
static void secret_setup(void)
{
	char *p;
	mkdirs("outside");
	p = tmp("outside/f.txt");
	put(p, SECRET, 0600);
	free(p);
	p = tmp("outside/secret.txt");
	put(p, SECRET, 0600);
	free(p);
}

static int root_fd(const char *rel)
{
	char *p = tmp(rel);
	int fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	CHECK_MSG(fd >= 0, "open %s: %s", p, strerror(errno));
	free(p);
	return fd;
}

/* ---- the swapper ---- */

/* Exchanges a and b (one a real file or folder, the other a symbolic
 * link) at least SWAPS times, and on until stop is set (at most
 * max_swaps): an atomic swap, so at every moment one of the names is the
 * link. */
struct swapper {
	char *a, *b;
	long max_swaps;
	atomic_bool stop;
	atomic_long done;
	int err; /* errno of a failed exchange, or 0 */
	pthread_t th;
};

static void *swap_main(void *arg)
{
	struct swapper *w = arg;
	long n = 0;
	while (n < w->max_swaps && (n < SWAPS || !atomic_load(&w->stop))) {
		if (syscall(SYS_renameat2, AT_FDCWD, w->a, AT_FDCWD, w->b, RENAME_EXCHANGE) < 0) {
			w->err = errno;
			break;
		}
		atomic_store(&w->done, ++n);
		/* each state held for a moment (an even number of swaps
		 * between two yields would only ever show one) */
		sched_yield();
	}
	return NULL;
}

static void swap_start(struct swapper *w, const char *a, const char *b, long max_swaps)
{
	memset(w, 0, sizeof(*w));
	w->a = tmp(a);
	w->b = tmp(b);
	w->max_swaps = max_swaps;
	atomic_init(&w->stop, false);
	atomic_init(&w->done, 0);
	CHECK(pthread_create(&w->th, NULL, swap_main, w) == 0);
}

/* Stop it, and put the real one back under its name a (even swaps). */
static long swap_stop(struct swapper *w)
{
	long n;
	atomic_store(&w->stop, true);
	pthread_join(w->th, NULL);
	n = atomic_load(&w->done);
	CHECK_MSG(!w->err, "renameat2 RENAME_EXCHANGE: %s", strerror(w->err));
	if (n % 2)
		CHECK(syscall(SYS_renameat2, AT_FDCWD, w->a, AT_FDCWD, w->b, RENAME_EXCHANGE) == 0);
	free(w->a);
	free(w->b);
	return n;
}

static bool swapping(struct swapper *w)
{
	return atomic_load(&w->done) < SWAPS;
}

/* ---- resolving beneath a directory ---- */

/* The tree: root/{a.txt, sub/b.txt, sub/deeper/c.txt, to-secret -> the
 * secret, to-outside -> outside/, to-include -> /usr/include, to-proc ->
 * /proc/self/root (a magic link's way in)}. */
static void tree_setup(void)
{
	char *p, *t;
	secret_setup();
	mkdirs("root");
	mkdirs("root/sub");
	mkdirs("root/sub/deeper");
	p = tmp("root/a.txt");
	put(p, BENIGN, 0644);
	free(p);
	p = tmp("root/sub/b.txt");
	put(p, "b\n", 0644);
	free(p);
	p = tmp("root/sub/deeper/c.txt");
	put(p, "c\n", 0644);
	free(p);
	t = tmp("outside/secret.txt");
	p = tmp("root/to-secret");
	CHECK(symlink(t, p) == 0);
	free(p);
	free(t);
	t = tmp("outside");
	p = tmp("root/to-outside");
	CHECK(symlink(t, p) == 0);
	free(p);
	free(t);
	p = tmp("root/to-include");
	CHECK(symlink("/usr/include", p) == 0);
	free(p);
	p = tmp("root/sub/rel-up");
	CHECK(symlink("../a.txt", p) == 0); /* a link that stays inside: refused too */
	free(p);
	p = tmp("root/to-proc");
	CHECK(symlink("/proc/self/root", p) == 0);
	free(p);
}

static char *read_fd_all(int fd)
{
	struct buf b = BUF_INIT;
	char chunk[4096];
	ssize_t n;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		buf_append(&b, chunk, (size_t)n);
	buf_puts(&b, "");
	return buf_detach(&b, NULL);
}

/* rel beneath rootfd: the file's text, or NULL with *rc the error. */
static char *open_read(int rootfd, const char *rel, unsigned how, int *rc)
{
	int fd = corpus__open_beneath(rootfd, rel, O_RDONLY, how);
	char *s;
	*rc = fd < 0 ? fd : 0;
	if (fd < 0)
		return NULL;
	s = read_fd_all(fd);
	close(fd);
	return s;
}

TEST(open_beneath_follows_no_link_and_never_climbs_out)
{
	static const struct {
		const char *rel;
		int want; /* 0: opens; else -errno */
		const char *text;
	} cases[] = {
	    {"a.txt", 0, BENIGN},
	    {"./a.txt", 0, BENIGN},
	    {"sub//b.txt", 0, "b\n"},
	    {"sub/deeper/c.txt", 0, "c\n"},
	    {"sub/../a.txt", 0, BENIGN},
	    {"sub/deeper/../../a.txt", 0, BENIGN},
	    {"to-secret", -ELOOP, NULL},
	    {"to-outside/secret.txt", -ELOOP, NULL},
	    {"to-include/stdio.h", -ELOOP, NULL},
	    {"sub/rel-up", -ELOOP, NULL},
	    {"to-proc/etc/passwd", -ELOOP, NULL},
	    {"../outside/secret.txt", -EXDEV, NULL},
	    {"sub/../../outside/secret.txt", -EXDEV, NULL},
	    {"/etc/passwd", -EXDEV, NULL},
	    {"missing.txt", -ENOENT, NULL},
	    {"a.txt/x", -ENOTDIR, NULL},
	};
	int rootfd;
	tree_setup();
	rootfd = root_fd("root");
	for (unsigned how = 0; how <= CORPUS__BENEATH_WALK; how += CORPUS__BENEATH_WALK) {
		for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
			int rc;
			char *s = open_read(rootfd, cases[i].rel, how, &rc);
			CHECK_MSG(rc == cases[i].want, "%s '%s': %d (%s), want %d",
				  how ? "walk" : "openat2", cases[i].rel, rc,
				  rc ? strerror(-rc) : "opened", cases[i].want);
			if (cases[i].text)
				CHECK_STR(s, cases[i].text);
			free(s);
		}
		/* O_PATH does not open a final link either (openat2 would with
		 * O_NOFOLLOW, the walk does with O_PATH: both are refused) */
		CHECK_INT(corpus__open_beneath(rootfd, "to-secret", O_PATH, how), -ELOOP);
		/* "" and "." are the directory itself */
		{
			int fd = corpus__open_beneath(rootfd, "", O_RDONLY | O_DIRECTORY, how);
			struct stat a, b;
			CHECK(fd >= 0);
			CHECK(fstat(fd, &a) == 0 && fstat(rootfd, &b) == 0);
			CHECK(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
			close(fd);
		}
	}
	close(rootfd);
}

static void load_at_cases(void)
{
	struct corpus_opts o = {.kind = CORPUS_AUTO, .quiet = true};
	struct rlm_err err = {0, ""};
	struct corpus *c = NULL;
	int rootfd;
	char *p;
	tree_setup();
	rootfd = root_fd("root");
	/* a file: mapped as corpus_load maps it, named as the caller says */
	CHECK_INT(corpus_load_at(rootfd, "a.txt", "/srv/a.txt", &o, &c, &err), 0);
	CHECK_INT(c->kind, CORPUS_TEXT);
	CHECK(c->len == strlen(BENIGN) && memcmp(c->buf, BENIGN, c->len) == 0);
	CHECK_STR(c->source, "/srv/a.txt");
	CHECK_STR(c->docs[0].id, "a.txt");
	corpus_free(c);
	/* a folder: its files, its links skipped (rel-up points inside, and
	 * is skipped all the same) */
	CHECK_INT(corpus_load_at(rootfd, "sub", NULL, &o, &c, &err), 0);
	CHECK_INT(c->kind, CORPUS_DIR);
	CHECK_INT(c->n_docs, 2);
	CHECK_STR(c->docs[0].id, "b.txt");
	CHECK_STR(c->docs[1].id, "deeper/c.txt");
	CHECK_INT(c->skipped, 1);
	corpus_free(c);
	/* the root itself: every file beneath, no link followed */
	CHECK_INT(corpus_load_at(rootfd, "", "root", &o, &c, &err), 0);
	CHECK_INT(c->n_docs, 3);
	CHECK(!memmem(c->buf, c->len, "TOP-SECRET", 10));
	CHECK_INT(c->skipped, 5);
	corpus_free(c);
	/* a link, at the end or on the way */
	c = NULL;
	CHECK_INT(corpus_load_at(rootfd, "to-secret", "to-secret", &o, &c, &err), -ELOOP);
	CHECK(!c);
	CHECK_CONTAINS(err.msg, "crosses a symbolic link");
	CHECK_INT(corpus_load_at(rootfd, "to-outside/secret.txt", NULL, &o, &c, &err), -ELOOP);
	CHECK_INT(corpus_load_at(rootfd, "to-outside", NULL, &o, &c, &err), -ELOOP);
	CHECK_INT(corpus_load_at(rootfd, "../outside/secret.txt", NULL, &o, &c, &err), -EXDEV);
	CHECK_CONTAINS(err.msg, "leads out");
	/* a fifo is refused without being opened (no reader would block) */
	p = tmp("root/pipe");
	CHECK(mkfifo(p, 0600) == 0);
	CHECK_INT(corpus_load_at(rootfd, "pipe", NULL, &o, &c, &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "fifo");
	free(p);
	/* the kind asked for is checked as corpus_load checks it */
	o.kind = CORPUS_DIR;
	CHECK_INT(corpus_load_at(rootfd, "a.txt", NULL, &o, &c, &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "not a directory");
	close(rootfd);
}

TEST(load_at_reads_files_and_folders_beneath_and_refuses_links)
{
	load_at_cases();
}

/* The same where the kernel has no openat2: the O_NOFOLLOW walk. */
TEST(load_at_without_openat2)
{
	corpus__beneath_force_walk(true);
	load_at_cases();
}

/* Real files of another shape than ours: a folder of system headers,
 * copied under the root (long lines, many files), read beneath it as
 * corpus_load reads the original. */
TEST(load_at_matches_corpus_load_on_real_headers)
{
	struct corpus_opts o = {.kind = CORPUS_AUTO, .quiet = true};
	struct rlm_err err = {0, ""};
	struct corpus *a = NULL, *b = NULL;
	char *cmd, *dst;
	int rootfd;
	if (access("/usr/include/linux", R_OK) != 0)
		SKIP("no /usr/include/linux");
	mkdirs("root");
	dst = tmp("root/linux");
	cmd = xasprintf("cp -r /usr/include/linux '%s'", dst);
	CHECK(system(cmd) == 0);
	rootfd = root_fd("root");
	CHECK_INT(corpus_load(dst, &o, &a, &err), 0);
	CHECK_INT(corpus_load_at(rootfd, "linux", dst, &o, &b, &err), 0);
	CHECK(a->n_docs > 100);
	CHECK_INT(b->n_docs, a->n_docs);
	CHECK(a->len == b->len && memcmp(a->buf, b->buf, a->len) == 0);
	CHECK_STR(b->docs[b->n_docs - 1].id, a->docs[a->n_docs - 1].id);
	corpus_free(a);
	corpus_free(b);
	close(rootfd);
	free(cmd);
	free(dst);
}

/* ---- the race, in process ---- */

/* root/doc.txt (the benign file) and root/swap (a link to the secret)
 * exchanged SWAPS times while corpus_load_at loads doc.txt: each load is
 * the benign text or "crosses a symbolic link", never the secret. */
static void race_file(void)
{
	struct corpus_opts o = {.kind = CORPUS_AUTO, .quiet = true};
	struct swapper w;
	long good = 0, refused = 0, walk_good = 0, walk_refused = 0;
	char *p, *t;
	int rootfd;
	secret_setup();
	mkdirs("root");
	p = tmp("root/doc.txt");
	put(p, BENIGN, 0644);
	free(p);
	p = tmp("root/swap");
	t = tmp("outside/secret.txt");
	CHECK(symlink(t, p) == 0);
	free(p);
	free(t);
	rootfd = root_fd("root");
	swap_start(&w, "root/doc.txt", "root/swap", 1000000);
	while (swapping(&w)) {
		struct rlm_err err = {0, ""};
		struct corpus *c = NULL;
		int rc = corpus_load_at(rootfd, "doc.txt", NULL, &o, &c, &err), wrc;
		char *s;
		if (rc == 0) {
			CHECK_MSG(c->len == strlen(BENIGN) && memcmp(c->buf, BENIGN, c->len) == 0,
				  "loaded '%.*s'", (int)RLM_MIN(c->len, 80), c->buf);
			good++;
		} else {
			CHECK_MSG(rc == -ELOOP || rc == -ENOENT, "%d: %s", rc, err.msg);
			refused++;
		}
		corpus_free(c);
		/* the fallback walk, under the same swaps */
		s = open_read(rootfd, "doc.txt", CORPUS__BENEATH_WALK, &wrc);
		if (s) {
			CHECK_STR(s, BENIGN);
			walk_good++;
		} else {
			CHECK_MSG(wrc == -ELOOP || wrc == -ENOENT, "walk: %d", wrc);
			walk_refused++;
		}
		free(s);
	}
	CHECK(swap_stop(&w) >= SWAPS);
	/* the race was run: both states were seen */
	CHECK_MSG(good > 0 && refused > 0, "%ld loaded, %ld refused", good, refused);
	CHECK_MSG(walk_good + walk_refused > 0, "the walk never ran");
	close(rootfd);
}

/* A folder swapped for a link to a folder outside: root/d (f.txt benign)
 * and root/dswap -> outside/ (f.txt the secret); and a folder deep in a
 * tree being walked: root/top/s and root/top/sswap -> outside/, while the
 * whole of root/top is loaded (the walk lists s/f.txt, then opens it:
 * s may be the link by then). */
static void race_folder(void)
{
	struct corpus_opts o = {.kind = CORPUS_AUTO, .quiet = true};
	struct swapper w;
	long good = 0, refused = 0;
	char *p, *t;
	int rootfd;
	secret_setup();
	mkdirs("root");
	mkdirs("root/d");
	mkdirs("root/top");
	mkdirs("root/top/s");
	p = tmp("root/d/f.txt");
	put(p, BENIGN, 0644);
	free(p);
	p = tmp("root/top/a.txt");
	put(p, BENIGN, 0644);
	free(p);
	p = tmp("root/top/s/f.txt");
	put(p, BENIGN, 0644);
	free(p);
	t = tmp("outside");
	p = tmp("root/dswap");
	CHECK(symlink(t, p) == 0);
	free(p);
	p = tmp("root/top/sswap");
	CHECK(symlink(t, p) == 0);
	free(p);
	free(t);
	rootfd = root_fd("root");

	swap_start(&w, "root/d", "root/dswap", 1000000);
	while (swapping(&w)) {
		struct rlm_err err = {0, ""};
		struct corpus *c = NULL;
		int rc = corpus_load_at(rootfd, "d", NULL, &o, &c, &err);
		if (rc == 0) {
			CHECK(!memmem(c->buf, c->len, "TOP-SECRET", 10));
			CHECK_INT(c->n_docs, 1);
			good++;
		} else {
			CHECK_MSG(rc == -ELOOP || rc == -ENOENT || rc == RLM_EINVAL, "%d: %s", rc,
				  err.msg);
			refused++;
		}
		corpus_free(c);
	}
	CHECK(swap_stop(&w) >= SWAPS);
	CHECK_MSG(good > 0 && refused > 0, "%ld loaded, %ld refused", good, refused);

	good = refused = 0;
	swap_start(&w, "root/top/s", "root/top/sswap", 1000000);
	/* and on, still racing, until f.txt was read once (10 s at most):
	 * under ASan a load is slow enough that the first 2,000 swaps can
	 * pass in a few dozen loads that each met the folder mid-swap */
	for (int64_t end = time_now_ns() + 10000000000LL;
	     swapping(&w) || (!good && time_now_ns() < end);) {
		struct rlm_err err = {0, ""};
		struct corpus *c = NULL;
		int rc = corpus_load_at(rootfd, "top", NULL, &o, &c, &err);
		CHECK_MSG(rc == 0, "%d: %s", rc, err.msg); /* a.txt is always there */
		CHECK(!memmem(c->buf, c->len, "TOP-SECRET", 10));
		/* a.txt, and f.txt under s or sswap, whichever is the folder
		 * when the walk passes (the link is skipped) */
		if (c->n_docs >= 2)
			good++;
		else
			refused++;
		corpus_free(c);
	}
	CHECK(swap_stop(&w) >= SWAPS);
	CHECK_MSG(good > 0, "f.txt was never read (%ld loads without it)", refused);
	close(rootfd);
}

TEST(race_file_swapped_for_a_link_never_loads_the_secret)
{
	race_file();
}

TEST(race_folder_swapped_for_a_link_never_loads_the_secret)
{
	race_folder();
}

/* The same two races where the kernel has no openat2: the walk. (Each
 * test runs in a process of its own: the switch ends with it.) */
TEST(race_file_without_openat2)
{
	corpus__beneath_force_walk(true);
	race_file();
}

TEST(race_folder_without_openat2)
{
	corpus__beneath_force_walk(true);
	race_folder();
}

/* ---- the server ---- */

struct srv {
	pid_t pid;
	int port;
};

static struct srv srv_start(const char *const *roots)
{
	const char *argv[16];
	char line[256], *db = tmp("s.db"), *errp = tmp("serve.err");
	const char *env[] = {"RLM_PROVIDER", "RLM_MODEL",     "RLM_SUB_MODEL", "OPENAI_API_KEY",
			     "RLM_API_KEY",  "ANTHROPIC_API_KEY", "RLM_SIM",   "RLM_CACHE",
			     "RLM_NO_CACHE", NULL};
	struct srv s = {0, 0};
	size_t n = 0;
	const char *colon;
	argv[n++] = harness_rlm_bin();
	argv[n++] = "serve";
	argv[n++] = "--port";
	argv[n++] = "0";
	argv[n++] = "--cache";
	argv[n++] = db;
	for (size_t i = 0; roots && roots[i] && n < 14; i++) {
		argv[n++] = "--root";
		argv[n++] = roots[i];
	}
	argv[n] = NULL;
	s.pid = proc_start_line(argv, env, errp, 60, line, sizeof(line));
	CHECK_MSG(s.pid > 0, "rlm serve did not start (stderr in %s)", errp);
	CHECK_CONTAINS(line, "listening on http://");
	colon = strrchr(line, ':');
	s.port = atoi(colon + 1);
	CHECK(s.port > 0);
	free(db);
	free(errp);
	return s;
}

static void srv_stop(struct srv *s)
{
	CHECK_INT(proc_stop(s->pid), 0);
	s->pid = 0;
}

struct resp {
	long status;
	char *body;  /* owned */
	cJSON *json; /* or NULL */
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	buf_append(arg, p, size * n);
	return size * n;
}

/* POST body to path on e (a connection kept between requests). */
static struct resp post(CURL *e, const struct srv *s, const char *path, const char *body)
{
	struct buf b = BUF_INIT;
	struct resp r = {0, NULL, NULL};
	char url[256];
	CURLcode rc;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", s->port, path);
	buf_puts(&b, "");
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 90L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	rc = curl_easy_perform(e);
	CHECK_MSG(rc == CURLE_OK, "POST %s: %s", path, curl_easy_strerror(rc));
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r.status);
	r.body = buf_detach(&b, NULL);
	r.json = json_parse(r.body, strlen(r.body));
	return r;
}

static void resp_release(struct resp *r)
{
	free(r->body);
	cJSON_Delete(r->json);
}

static const char *err_msg(const struct resp *r)
{
	const char *m = json_str(json_get(r->json, "error"), "message");
	return m ? m : "";
}

/* POST /v1/corpora {"path": path}: the corpus id on 201, else NULL and
 * the response in *out (released by the caller). */
static char *corpora_post(CURL *e, const struct srv *s, const char *path, struct resp *out)
{
	char *body = xasprintf("{\"path\": \"%s\"}", path), *id = NULL;
	*out = post(e, s, "/v1/corpora", body);
	if (out->status == 201)
		id = xstrdup(json_str(out->json, "corpus_id"));
	free(body);
	return id;
}

/* The server loads path (under its root) while a swapper exchanges
 * a and b: every load is the benign corpus (want_id) or a 403 that says a
 * link was crossed. */
static void serve_race(const struct srv *s, const char *path, const char *want_id,
		       const char *a, const char *b)
{
	CURL *e = curl_easy_init();
	struct swapper w;
	long good = 0, refused = 0, requests = 0, leaks = 0, unclear = 0;
	char first_leak[200] = "", first_unclear[300] = "";
	int64_t t0 = time_now_ns();
	swap_start(&w, a, b, 2000000);
	/* SWAPS exchanges, at least 200 requests among them (~20 s at most) */
	while (swapping(&w) || (requests < 200 && time_now_ns() - t0 < 20 * 1000000000LL)) {
		struct resp r;
		char *id = corpora_post(e, s, path, &r);
		requests++;
		if (id && strcmp(id, want_id) == 0) {
			good++;
		} else if (id) {
			if (!leaks++)
				snprintf(first_leak, sizeof(first_leak), "request %ld: %s, %.0f bytes",
					 requests, id, json_num(r.json, "bytes", -1));
		} else if (r.status == 403 &&
			   strstr(err_msg(&r), "crosses a symlink; not followed under --root")) {
			refused++;
		} else if (!unclear++) {
			snprintf(first_unclear, sizeof(first_unclear), "%ld %s", r.status, r.body);
		}
		free(id);
		resp_release(&r);
	}
	CHECK(swap_stop(&w) >= SWAPS);
	/* never what lies outside (the secret is another corpus)... */
	CHECK_MSG(!leaks, "%ld of %ld requests loaded a corpus from outside the root (%s)", leaks,
		  requests, first_leak);
	/* ...and each refusal says why */
	CHECK_MSG(!unclear, "%ld of %ld requests failed otherwise: %s", unclear, requests,
		  first_unclear);
	/* the race was run: both states were seen */
	CHECK_MSG(good > 0 && refused > 0, "%ld loaded, %ld refused of %ld", good, refused,
		  requests);
	curl_easy_cleanup(e);
}

TEST(serve_race_file_swapped_for_a_link)
{
	CURL *e = curl_easy_init();
	char *root = tmp("root"), *doc = tmp("root/doc.txt"), *sec = tmp("outside/secret.txt");
	char *link = tmp("root/swap"), *id;
	const char *roots[] = {root, NULL};
	struct srv s;
	struct resp r;
	secret_setup();
	mkdirs("root");
	put(doc, BENIGN, 0644);
	CHECK(symlink(sec, link) == 0);
	s = srv_start(roots);
	id = corpora_post(e, &s, doc, &r);
	CHECK_MSG(id, "%ld %s", r.status, r.body);
	resp_release(&r);
	serve_race(&s, doc, id, "root/doc.txt", "root/swap");
	srv_stop(&s);
	curl_easy_cleanup(e);
	free(id);
	free(root);
	free(doc);
	free(sec);
	free(link);
}

TEST(serve_race_folder_swapped_for_a_link)
{
	CURL *e = curl_easy_init();
	char *root = tmp("root"), *dir = tmp("root/d"), *f = tmp("root/d/f.txt");
	char *out = tmp("outside"), *link = tmp("root/dswap"), *id;
	const char *roots[] = {root, NULL};
	struct srv s;
	struct resp r;
	secret_setup();
	mkdirs("root");
	mkdirs("root/d");
	put(f, BENIGN, 0644);
	CHECK(symlink(out, link) == 0);
	s = srv_start(roots);
	id = corpora_post(e, &s, dir, &r);
	CHECK_MSG(id, "%ld %s", r.status, r.body);
	resp_release(&r);
	serve_race(&s, dir, id, "root/d", "root/dswap");
	srv_stop(&s);
	curl_easy_cleanup(e);
	free(id);
	free(root);
	free(dir);
	free(f);
	free(out);
	free(link);
}

/* Without a race: every way a path reaches the loader (/v1/corpora,
 * /v1/solve's context_path, a chat's rlm_context.path) refuses a link
 * under the root and ".." out of it, and still loads files and folders
 * beneath it, spelled by the root's real name or as it was given. */
TEST(serve_paths_go_beneath_the_root)
{
	CURL *e = curl_easy_init();
	char *real = tmp("real-root"), *given = tmp("root-link"), *body;
	const char *roots[] = {given, NULL};
	struct srv s;
	struct resp r;
	char *p, *id;
	secret_setup();
	mkdirs("real-root");
	mkdirs("real-root/sub");
	CHECK(symlink(real, given) == 0); /* the operator's link to the root: fine */
	p = tmp("real-root/notes.txt");
	put(p, BENIGN, 0644);
	free(p);
	p = tmp("real-root/sub/x.txt");
	put(p, "x\n", 0644);
	free(p);
	{
		char *t = tmp("outside/secret.txt");
		p = tmp("real-root/leak.txt");
		CHECK(symlink(t, p) == 0);
		free(p);
		free(t);
		t = tmp("outside");
		p = tmp("real-root/sub/out");
		CHECK(symlink(t, p) == 0);
		free(p);
		free(t);
	}
	s = srv_start(roots);

	/* beneath it, by either name; the root itself */
	p = xasprintf("%s/notes.txt", real);
	id = corpora_post(e, &s, p, &r);
	CHECK_MSG(id, "%ld %s", r.status, r.body);
	resp_release(&r);
	free(id);
	free(p);
	p = xasprintf("%s/./sub//x.txt", given);
	id = corpora_post(e, &s, p, &r);
	CHECK_MSG(id, "%ld %s", r.status, r.body);
	resp_release(&r);
	free(id);
	free(p);
	id = corpora_post(e, &s, given, &r);
	CHECK_MSG(id, "%ld %s", r.status, r.body);
	CHECK_INT(json_num(r.json, "documents", -1), 2); /* the links are skipped */
	resp_release(&r);
	free(id);

	/* a link at the end, or on the way */
	p = xasprintf("%s/leak.txt", real);
	CHECK(!corpora_post(e, &s, p, &r));
	CHECK_INT(r.status, 403);
	CHECK_CONTAINS(err_msg(&r), "crosses a symlink; not followed under --root");
	CHECK_CONTAINS(err_msg(&r), "leak.txt");
	resp_release(&r);
	free(p);
	p = xasprintf("%s/sub/out/secret.txt", given);
	CHECK(!corpora_post(e, &s, p, &r));
	CHECK_INT(r.status, 403);
	CHECK_CONTAINS(err_msg(&r), "crosses a symlink");
	resp_release(&r);
	free(p);
	/* ".." out of it, even to come back */
	p = xasprintf("%s/sub/../../outside/secret.txt", real);
	CHECK(!corpora_post(e, &s, p, &r));
	CHECK_INT(r.status, 403);
	CHECK_CONTAINS(err_msg(&r), "outside the server's roots");
	CHECK(!strstr(r.body, "TOP-SECRET"));
	resp_release(&r);
	free(p);

	/* /v1/solve's context_path and a chat's rlm_context.path: the same */
	body = xasprintf("{\"question\": \"What is the combination?\", \"context_path\": "
			 "\"%s/leak.txt\"}",
			 real);
	r = post(e, &s, "/v1/solve", body);
	CHECK_INT(r.status, 403);
	CHECK_CONTAINS(err_msg(&r), "crosses a symlink; not followed under --root");
	resp_release(&r);
	free(body);
	body = xasprintf("{\"messages\": [{\"role\": \"user\", \"content\": \"What is the "
			 "combination?\"}], \"rlm_context\": {\"path\": \"%s/sub/out/secret.txt\"}}",
			 given);
	r = post(e, &s, "/v1/chat/completions", body);
	CHECK_INT(r.status, 403);
	CHECK_CONTAINS(err_msg(&r), "crosses a symlink; not followed under --root");
	CHECK(!strstr(r.body, "TOP-SECRET"));
	resp_release(&r);
	free(body);
	/* and a file beneath it still answers through context_path */
	body = xasprintf("{\"question\": \"When did the harbour reopen?\", \"context_path\": "
			 "\"%s/notes.txt\"}",
			 given);
	r = post(e, &s, "/v1/solve", body);
	CHECK_MSG(r.status == 200, "%ld %s", r.status, r.body);
	resp_release(&r);
	free(body);
	srv_stop(&s);

	/* no --root: every path refused, as before */
	s = srv_start(NULL);
	p = xasprintf("%s/notes.txt", real);
	CHECK(!corpora_post(e, &s, p, &r));
	CHECK_INT(r.status, 403);
	CHECK_CONTAINS(err_msg(&r), "--root");
	resp_release(&r);
	free(p);
	srv_stop(&s);
	curl_easy_cleanup(e);
	free(real);
	free(given);
}
