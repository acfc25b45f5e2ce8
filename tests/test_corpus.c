/* SPDX-License-Identifier: MIT */
/* tests/test_corpus.c -- loading contexts: text files (mapped), directories,
 * JSONL, standard input, and every way each of them can be wrong. */
#include "harness.h"
#include "../common/common.h"
#include "../corpus/corpus.h"
#include "../common/text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

/* ---- helpers ---- */

static char *tmp(const char *name)
{
	return xasprintf("%s/%s", harness_tmpdir(), name);
}

static void write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK_MSG(fd >= 0, "cannot create '%s'", path);
	CHECK_INT(file_write_all(fd, data, len), 0);
	close(fd);
}

/* Write a file under the temporary directory, creating parent folders. */
static char *put(const char *rel, const char *data, size_t len)
{
	char *path = tmp(rel);
	for (char *s = path + strlen(harness_tmpdir()) + 1; *s; s++) {
		if (*s == '/') {
			*s = '\0';
			mkdir(path, 0755);
			*s = '/';
		}
	}
	write_file(path, data, len);
	return path;
}

static char *put_s(const char *rel, const char *text)
{
	return put(rel, text, strlen(text));
}

/* Load path, expecting failure with code and a message containing want. */
static void load_fails(const char *path, const struct corpus_opts *o, int code, const char *want)
{
	struct corpus *c = (struct corpus *)1;
	struct rlm_err err = {0, ""};
	int rc = corpus_load(path, o, &c, &err);
	CHECK_MSG(rc == code, "rc %d (%s), want %d", rc, err.msg, code);
	CHECK_INT(err.code, code);
	CHECK(c == NULL);
	CHECK_CONTAINS(err.msg, want);
}

static struct corpus *load_ok(const char *path, const struct corpus_opts *o)
{
	struct corpus *c = NULL;
	struct rlm_err err = {0, ""};
	int rc = corpus_load(path, o, &c, &err);
	CHECK_MSG(rc == 0, "corpus_load('%s'): %d %s", path, rc, err.msg);
	CHECK(c != NULL);
	return c;
}

static bool doc_is(const struct corpus *c, size_t i, const char *text, const char *name)
{
	const struct corpus_doc *d = &c->docs[i];
	if (d->len != strlen(text) || memcmp(c->buf + d->off, text, d->len) != 0)
		return false;
	if (!name || !d->id)
		return name == d->id;
	return strcmp(name, d->id) == 0;
}

/* Run fn with stderr going to a file; return what it wrote. */
static char *stderr_of(void (*fn)(void *), void *arg)
{
	char *path = tmp("stderr.txt"), *text = NULL;
	int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	size_t len;
	struct rlm_err err;
	CHECK(saved >= 0 && fd >= 0);
	fflush(stderr);
	dup2(fd, 2);
	close(fd);
	fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	CHECK_INT(file_read(path, 1 << 20, &text, &len, &err), 0);
	free(path);
	return text;
}

/* ---- single text files ---- */

TEST(text_file_is_mapped_as_one_document)
{
	char *p = put_s("a.txt", "hello\nwörld\n");
	struct corpus *c = load_ok(p, NULL);
	CHECK_INT(c->kind, CORPUS_TEXT);
	CHECK(c->mapped);
	CHECK_STR(c->source, p);
	CHECK_INT(c->len, 13);
	CHECK_INT(c->n_docs, 1);
	CHECK_INT(c->docs[0].off, 0);
	CHECK_INT(c->docs[0].len, 13);
	CHECK_STR(c->docs[0].id, strrchr(p, '/') + 1); /* its base name */
	CHECK(memcmp(c->buf, "hello\nwörld\n", 13) == 0);
	CHECK_INT(c->skipped, 0);
	corpus_free(c);
	free(p);
}

TEST(text_kind_forced_on_jsonl_name)
{
	char *p = put_s("x.jsonl", "not json at all\n");
	struct corpus_opts o = {.kind = CORPUS_TEXT};
	struct corpus *c = load_ok(p, &o);
	CHECK_INT(c->kind, CORPUS_TEXT);
	CHECK_INT(c->n_docs, 1);
	corpus_free(c);
	free(p);
}

TEST(text_40mb_loads_fast)
{
	const size_t size = 40u << 20;
	char *p = tmp("big.txt"), *data = xmalloc(size);
	static const char line[] = "The quick brown fox jumps over the lazy dog — façade, naïve.\n";
	struct corpus *c;
	int64_t t0;
	double ms;
	size_t n = 0;
	while (n < size) {
		size_t k = RLM_MIN(sizeof(line) - 1, size - n);
		memcpy(data + n, line, k);
		n += k;
	}
	/* End on a whole character: back up over a cut sequence. */
	n = text_utf8_floor(data, size);
	write_file(p, data, n);
	t0 = time_now_ns();
	c = load_ok(p, NULL);
	ms = (double)(time_now_ns() - t0) / 1e6;
	printf("     40 MB text file loaded in %.1f ms\n", ms);
	CHECK(c->mapped);
	CHECK_INT(c->len, n);
	CHECK_INT(c->docs[0].len, n);
	CHECK(memcmp(c->buf + n - 100, data + n - 100, 100) == 0);
	CHECK(ms < 20000); /* generous: sanitizers and valgrind run this too */
	corpus_free(c);
	free(data);
	free(p);
}

TEST(text_invalid_utf8_names_the_byte)
{
	static const struct {
		const char *data;
		size_t len;
		size_t bad;
	} cases[] = {
		{"abc\xc3(def", 7, 3},                /* bad continuation */
		{"hello \xff world", 13, 6},          /* never valid */
		{"ok\xc0\xafok", 6, 2},              /* overlong '/' */
		{"ab\xed\xa0\x80", 5, 2},            /* a UTF-16 surrogate */
		{"é is fine, then \xe2\x82", 19, 17}, /* cut at the end */
		{"\xef\xbb\xbfok\xff", 6, 5},         /* after a UTF-8 mark */
	};
	struct corpus_opts o = {.strict_utf8 = true};
	char *p = tmp("bad.txt");
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *want = xasprintf("invalid UTF-8 in '%s' at byte %zu", p, cases[i].bad);
		write_file(p, cases[i].data, cases[i].len);
		load_fails(p, &o, RLM_EPARSE, want);
		free(want);
	}
	free(p);
}

TEST(text_nul_bytes_rejected)
{
	char *p = put("bin.txt", "abc\0def", 7), *want;
	want = xasprintf("'%s' contains NUL bytes (a binary file?)", p);
	load_fails(p, NULL, RLM_EPARSE, want);
	free(want);
	free(p);
}

TEST(text_empty_file_rejected)
{
	char *p = put("empty.txt", "", 0), *want = xasprintf("'%s' is empty", p);
	load_fails(p, NULL, RLM_EINVAL, want);
	free(want);
	free(p);
}

TEST(path_missing)
{
	char *p = tmp("nope.txt"), *want = xasprintf("cannot open '%s': No such file or directory", p);
	load_fails(p, NULL, -ENOENT, want);
	free(want);
	free(p);
}

TEST(path_through_a_regular_file)
{
	char *f = put_s("file", "x"), *p = tmp("file/x");
	char *want = xasprintf("cannot open '%s': Not a directory", p);
	load_fails(p, NULL, -ENOTDIR, want);
	free(want);
	free(p);
	free(f);
}

TEST(path_fifo_and_socket_rejected)
{
	char *fifo = tmp("fifo"), *sock = tmp("sock"), *want;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK_INT(mkfifo(fifo, 0644), 0);
	want = xasprintf("'%s' is a fifo, not a regular file or directory", fifo);
	load_fails(fifo, NULL, RLM_EINVAL, want); /* and does not block */
	free(want);
	CHECK(strlen(sock) < sizeof(sa.sun_path));
	strcpy(sa.sun_path, sock);
	CHECK_INT(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	want = xasprintf("'%s' is a socket, not a regular file or directory", sock);
	load_fails(sock, NULL, RLM_EINVAL, want);
	free(want);
	load_fails("/dev/null", NULL, RLM_EINVAL, "'/dev/null' is a character device");
	close(s);
	free(fifo);
	free(sock);
}

TEST(text_max_bytes)
{
	char *p = put_s("ten.txt", "0123456789");
	struct corpus_opts o = {.kind = CORPUS_AUTO, .max_bytes = 9};
	struct corpus *c;
	char *want = xasprintf("'%s' is larger than 9 bytes", p);
	load_fails(p, &o, RLM_ETOOBIG, want);
	o.max_bytes = 10;
	c = load_ok(p, &o);
	CHECK_INT(c->len, 10);
	corpus_free(c);
	free(want);
	free(p);
}

TEST(kind_mismatch)
{
	char *d = tmp("d"), *f = put_s("f.txt", "x"), *want;
	struct corpus_opts o = {.kind = CORPUS_TEXT};
	mkdir(d, 0755);
	want = xasprintf("'%s' is a directory, not a text file", d);
	load_fails(d, &o, RLM_EINVAL, want);
	free(want);
	o.kind = CORPUS_JSONL;
	load_fails(d, &o, RLM_EINVAL, "is a directory, not a JSONL file");
	o.kind = CORPUS_DIR;
	want = xasprintf("'%s' is not a directory", f);
	load_fails(f, &o, RLM_EINVAL, want);
	free(want);
	load_fails("", NULL, RLM_EINVAL, "no context path given");
	free(d);
	free(f);
}

TEST(from_text_copies)
{
	char text[] = "abc\ndef";
	struct corpus *c = corpus_from_text(text, 7);
	text[0] = 'X';
	CHECK_INT(c->kind, CORPUS_TEXT);
	CHECK(!c->mapped);
	CHECK(c->source == NULL);
	CHECK_INT(c->len, 7);
	CHECK_INT(c->n_docs, 1);
	CHECK(doc_is(c, 0, "abc\ndef", "context"));
	CHECK_INT(c->buf[7], '\0');
	corpus_free(c);
	corpus_free(NULL);
	c = corpus_from_text("", 0);
	CHECK_INT(c->n_docs, 1);
	CHECK_INT(c->docs[0].len, 0);
	corpus_free(c);
}

/* ---- directories ---- */

static void make_tree(void)
{
	free(put_s("docs/b.txt", "bee"));
	free(put_s("docs/a/z.txt", "zed"));
	free(put_s("docs/a/b/c.md", "see\nmore"));
	free(put_s("docs/a.txt", "ay"));
	free(put_s("docs/.hidden", "hidden"));
	free(put_s("docs/.git/config", "git"));
	free(put_s("docs/a/.secret/x.txt", "secret"));
	free(put("docs/a/empty.txt", "", 0));
	free(put("docs/prog.bin", "\x7f" "ELF\2\1\1\0\0\0\0\0\0\0\0\0", 16));
}

static void load_tree(void *arg)
{
	struct corpus **out = arg;
	char *d = tmp("docs");
	*out = load_ok(d, NULL);
	free(d);
}

TEST(dir_walks_sorted_and_skips)
{
	struct corpus *c = NULL;
	char *d = tmp("docs"), *log;
	make_tree();
	log = stderr_of(load_tree, &c);
	CHECK_INT(c->kind, CORPUS_DIR);
	CHECK(!c->mapped);
	CHECK_STR(c->source, d);
	CHECK_INT(c->n_docs, 4);
	CHECK_INT(c->skipped, 1);
	/* bytewise order of relative paths: '.' < '/' */
	CHECK(doc_is(c, 0, "ay", "a.txt"));
	CHECK(doc_is(c, 1, "see\nmore", "a/b/c.md"));
	CHECK(doc_is(c, 2, "zed", "a/z.txt"));
	CHECK(doc_is(c, 3, "bee", "b.txt"));
	CHECK_INT(c->len, 2 + 1 + 8 + 1 + 3 + 1 + 3 + 1);
	CHECK(memcmp(c->buf, "ay\nsee\nmore\nzed\nbee\n", c->len) == 0);
	CHECK_STR(log, "rlm: warning: skipped 1 file: 1 binary (--verbose lists them)\n");
	CHECK(!strstr(log, "empty")); /* empty files go silently */
	CHECK(!strstr(log, "hidden") && !strstr(log, "secret"));
	corpus_free(c);
	free(log);
	free(d);
}

static void load_quiet(void *arg)
{
	struct corpus_opts o = {.kind = CORPUS_DIR, .quiet = true};
	char *d = tmp("docs");
	corpus_free(load_ok(d, &o));
	(void)arg;
	free(d);
}

TEST(dir_quiet_and_latin1)
{
	char *log;
	make_tree();
	free(put_s("docs/latin1.txt", "caf\xe9"));
	log = stderr_of(load_quiet, NULL);
	CHECK_STR(log, "");
	free(log);
	{
		struct corpus *c = NULL;
		log = stderr_of(load_tree, &c);
		/* read with its bad byte replaced: one warning names it */
		CHECK_CONTAINS(log, "rlm: warning: latin1.txt: 1 invalid UTF-8 byte replaced with U+FFFD\n");
		CHECK_INT(c->skipped, 1);
		CHECK_INT(c->replaced, 1);
		CHECK_INT(c->n_docs, 5);
		CHECK(doc_is(c, 4, "caf\xef\xbf\xbd", "latin1.txt"));
		corpus_free(c);
		free(log);
	}
}

TEST(dir_symlinks)
{
	char *d = tmp("docs"), *link, *target, *dlink, *dangling, *outside;
	struct corpus_opts o = {.kind = CORPUS_AUTO, .quiet = true};
	struct corpus *c;
	make_tree();
	target = put_s("outside/t.txt", "linked");
	link = tmp("docs/link.txt");
	dlink = tmp("docs/linkdir");
	dangling = tmp("docs/dangling.txt");
	CHECK_INT(symlink(target, link), 0);
	outside = tmp("outside");
	CHECK_INT(symlink(outside, dlink), 0);
	CHECK_INT(symlink("/nonexistent/x", dangling), 0);
	c = load_ok(d, &o);
	CHECK_INT(c->n_docs, 5);
	CHECK(doc_is(c, 4, "linked", "link.txt"));
	for (size_t i = 0; i < c->n_docs; i++)
		CHECK(!strstr(c->docs[i].id, "linkdir"));
	corpus_free(c);
	free(d);
	free(link);
	free(target);
	free(dlink);
	free(dangling);
	free(outside);
}

TEST(dir_all_binary_is_an_error)
{
	char *d = tmp("bin"), *want;
	struct corpus_opts o = {.kind = CORPUS_AUTO, .quiet = true};
	free(put("bin/a.o", "\x7f" "ELF\2\1\1\0", 8));
	free(put("bin/sub/b.dat", "\xfd\xfe\xff", 3)); /* not text */
	want = xasprintf("no text documents in '%s' (2 skipped)", d);
	load_fails(d, &o, RLM_EINVAL, want);
	free(want);
	free(d);
}

TEST(dir_empty_is_an_error)
{
	char *d = tmp("void"), *want = xasprintf("no text documents in '%s' (0 skipped)", d);
	mkdir(d, 0755);
	free(put_s("void/.only-hidden", "x"));
	load_fails(d, NULL, RLM_EINVAL, want);
	free(want);
	free(d);
}

TEST(dir_unreadable_file_is_an_error)
{
	char *d = tmp("docs"), *f, *want;
	make_tree();
	f = put_s("docs/locked.txt", "x");
	chmod(f, 0);
	if (geteuid() == 0) {
		/* root reads it anyway: nothing to see */
		chmod(f, 0644);
	} else {
		want = xasprintf("cannot open '%s/locked.txt': Permission denied", d);
		load_fails(d, NULL, -EACCES, want);
		free(want);
	}
	free(f);
	free(d);
}

TEST(dir_max_bytes)
{
	char *d = tmp("docs"), *want = xasprintf("'%s' is larger than 12 bytes", d);
	struct corpus_opts o = {.kind = CORPUS_AUTO, .max_bytes = 12, .quiet = true};
	struct corpus *c;
	make_tree(); /* accepted text: "ay\nsee\nmore\nzed\nbee\n", 20 bytes */
	load_fails(d, &o, RLM_ETOOBIG, want);
	o.max_bytes = 19; /* the last separator must fit too */
	load_fails(d, &o, RLM_ETOOBIG, "is larger than 19 bytes");
	o.max_bytes = 20;
	c = load_ok(d, &o);
	CHECK_INT(c->len, 20);
	corpus_free(c);
	free(want);
	free(d);
}

TEST(dir_big_binary_skipped_under_cap)
{
	const size_t big = 1 << 20;
	char *d = tmp("mixed"), *data = xmalloc(big), *log;
	struct corpus_opts o = {.kind = CORPUS_AUTO, .max_bytes = 100, .quiet = true};
	struct corpus *c;
	memset(data, 'x', big);
	free(put_s("mixed/a.txt", "first"));
	data[0] = '\0';
	free(put("mixed/b.iso", data, big)); /* far over the cap, but binary */
	data[0] = 'x';
	data[big - 1] = '\0';              /* looks like text for a long while */
	free(put("mixed/c.txt", data, big));
	free(put_s("mixed/d.txt", "last"));
	load_fails(d, &o, RLM_ETOOBIG, "is larger than 100 bytes"); /* c.txt is read */
	o.max_bytes = 2 * big;
	c = load_ok(d, &o);
	CHECK_INT(c->skipped, 2);
	CHECK_INT(c->n_docs, 2);
	CHECK(doc_is(c, 0, "first", "a.txt"));
	CHECK(doc_is(c, 1, "last", "d.txt"));
	CHECK_INT(c->len, 11);
	corpus_free(c);
	/* a multibyte character cut by the first read is fine */
	data[0] = 'x';
	for (size_t i = 1; i + 2 <= big; i += 2)
		memcpy(data + i, "\xc3\xa9", 2);
	free(put("mixed/c.txt", data, 16385)); /* byte 16383 starts a character */
	remove(log = tmp("mixed/b.iso"));
	o.max_bytes = 0;
	c = load_ok(d, &o);
	CHECK_INT(c->n_docs, 3);
	CHECK_INT(c->docs[1].len, 16385);
	CHECK(memcmp(c->buf + c->docs[1].off, data, 16385) == 0);
	corpus_free(c);
	free(log);
	free(data);
	free(d);
}

TEST(dir_10k_files)
{
	char *d = tmp("many");
	struct corpus *c;
	int64_t t0;
	double ms;
	mkdir(d, 0755);
	for (int i = 0; i < 10000; i++) {
		char rel[64], text[128];
		snprintf(rel, sizeof(rel), "many/%02d/f%05d.txt", i % 100, i);
		snprintf(text, sizeof(text), "document %d: some text to read about item %d.\n", i,
			 i);
		free(put_s(rel, text));
	}
	t0 = time_now_ns();
	c = load_ok(d, NULL);
	ms = (double)(time_now_ns() - t0) / 1e6;
	printf("     10000-file directory loaded in %.1f ms\n", ms);
	CHECK_INT(c->n_docs, 10000);
	CHECK_STR(c->docs[0].id, "00/f00000.txt");
	CHECK_STR(c->docs[1].id, "00/f00100.txt");
	CHECK_STR(c->docs[9999].id, "99/f09999.txt");
	CHECK(doc_is(c, 0, "document 0: some text to read about item 0.\n", "00/f00000.txt"));
	corpus_free(c);
	free(d);
}

/* ---- JSONL ---- */

TEST(jsonl_good)
{
	static const char text[] =
		"{\"id\":\"a\",\"text\":\"hello\"}\n"
		"\n"
		"   \r\n"
		"\"just a string\"\r\n"
		"{\"title\":\"T\",\"content\":\"caf\\u00e9 \\ud83d\\ude00 \\u00E9\"}\n"
		"{\"docid\":42,\"body\":\"l1\\nl2\\ttab \\\"q\\\" \\\\ back \\/\"}\n"
		"{\"name\":1.5,\"document\":\"x\"}\n"
		"{\"contents\":\"y\",\"id\":null,\"title\":\"t2\"}\n"
		"{\"text\":\"\",\"id\":\"empty\"}\n"
		"{\"text\":\"raw é and \\\\u0000 spelled out\",\"id\":-7}";
	char *p = put_s("docs.jsonl", text);
	struct corpus *c = load_ok(p, NULL);
	CHECK_INT(c->kind, CORPUS_JSONL);
	CHECK(!c->mapped);
	CHECK_STR(c->source, p);
	CHECK_INT(c->n_docs, 8);
	CHECK(doc_is(c, 0, "hello", "a"));
	/* No id: the line number (blank lines count); a title is not an id. */
	CHECK(doc_is(c, 1, "just a string", "4"));
	CHECK(doc_is(c, 2, "caf\xc3\xa9 \xf0\x9f\x98\x80 \xc3\xa9", "5"));
	CHECK(doc_is(c, 3, "l1\nl2\ttab \"q\" \\ back /", "42"));
	CHECK(doc_is(c, 4, "x", "7"));
	CHECK(doc_is(c, 5, "y", "8"));
	CHECK(doc_is(c, 6, "", "empty"));
	CHECK(doc_is(c, 7, "raw é and \\u0000 spelled out", "-7"));
	for (size_t i = 0; i < c->n_docs; i++)
		CHECK(c->buf[c->docs[i].off + c->docs[i].len] == '\n');
	CHECK_INT(c->len, c->docs[7].off + c->docs[7].len + 1);
	corpus_free(c);
	free(p);
}

/* Every document has an id and a metadata line: a record's title and
 * other fields travel, its text does not; ids are found, so are indices. */
TEST(documents_keep_their_identity)
{
	static const char text[] = "{\"id\":\"r-1\",\"title\":\"Q3 report\",\"text\":\"sales up\","
				   "\"year\":2024,\"tags\":[\"a\",\"b\"]}\n"
				   "{\"docid\":7,\"body\":\"b\",\"title\":5}\n"
				   "\"plain\"\n";
	char *p = put_s("ids.jsonl", text), *d = tmp("docs");
	struct corpus *c = load_ok(p, NULL);
	struct buf b = BUF_INIT;
	CHECK_INT(c->n_docs, 3);
	CHECK_INT(corpus_doc_info(c, 0, &b), 0);
	CHECK_STR(b.p, "{\"id\":\"r-1\",\"path\":null,\"title\":\"Q3 report\",\"meta\":"
		       "{\"year\":2024,\"tags\":[\"a\",\"b\"]}}");
	buf_reset(&b);
	/* A title that is not a string stays a field. */
	CHECK_INT(corpus_doc_info(c, 1, &b), 0);
	CHECK_STR(b.p, "{\"id\":\"7\",\"path\":null,\"title\":null,\"meta\":{\"title\":5}}");
	buf_reset(&b);
	CHECK_INT(corpus_doc_info(c, 2, &b), 0);
	CHECK_STR(b.p, "{\"id\":\"3\",\"path\":null,\"title\":null,\"meta\":{}}");
	CHECK_INT(corpus_doc_find(c, "r-1", 3), 0);
	CHECK_INT(corpus_doc_find(c, "7", 1), 1);
	CHECK_INT(corpus_doc_find(c, "3", 1), 2);
	CHECK_INT(corpus_doc_find(c, "2", 1), 2); /* no id "2": index 2 */
	CHECK_INT(corpus_doc_find(c, "r-", 2), -1);
	CHECK_INT(corpus_doc_find(c, "9", 1), -1);
	CHECK_INT(corpus_doc_find(c, "02", 2), -1);
	corpus_free(c);
	make_tree();
	c = load_ok(d, NULL);
	buf_reset(&b);
	CHECK_INT(corpus_doc_info(c, 0, &b), 0);
	CHECK(strstr(b.p, "\"path\":\"") != NULL);
	CHECK(strstr(b.p, c->docs[0].id) != NULL);
	CHECK(corpus_doc_find(c, c->docs[c->n_docs - 1].id, strlen(c->docs[c->n_docs - 1].id)) ==
	      (long)c->n_docs - 1);
	corpus_free(c);
	buf_release(&b);
	free(p);
	free(d);
}

TEST(jsonl_kind_forced_and_ndjson)
{
	char *p = put_s("docs.txt", "{\"text\":\"one\"}\n"), *q = put_s("d.NDJSON", "\"two\"\n");
	struct corpus_opts o = {.kind = CORPUS_JSONL};
	struct corpus *c = load_ok(p, &o);
	CHECK_INT(c->kind, CORPUS_JSONL);
	CHECK(doc_is(c, 0, "one", "1"));
	corpus_free(c);
	c = load_ok(q, NULL);
	CHECK_INT(c->kind, CORPUS_JSONL);
	CHECK(doc_is(c, 0, "two", "1"));
	corpus_free(c);
	free(p);
	free(q);
}

TEST(jsonl_errors_name_the_line)
{
	static const struct {
		const char *text;
		size_t len;
		const char *want;
	} cases[] = {
		{"{\"text\":\"a\"}\n\n{\"text\":\"b\"}\n\"c\"\n\n{\"text\":\"d\"}\n{\"text\":\"e\"\n", 0,
		 "line 7: not valid JSON"},
		{"{\"text\":\"a\"}\n{\"text\":\"b\"} x\n", 0, "line 2: not valid JSON"},
		{"\"a\"\n\"b\"\n{\"id\":1,\"foo\":\"x\"}\n", 0,
		 "line 3: no text field (expected one of text, content, body, document, contents)"},
		{"{\"text\":5}\n", 0, "line 1: field 'text' is not a string"},
		{"{\"text\":null,\"content\":[1]}\n", 0, "line 1: field 'text' is not a string"},
		{"42\n", 0, "line 1: not a JSON object or string"},
		{"[\"text\"]\n", 0, "line 1: not a JSON object or string"},
		{"{\"text\":\"ab\xff\"}\n", 0, "line 1: invalid UTF-8 in the text at byte 2"},
		{"\"ok\"\n\"\xc3\xa9\xed\xa0\x80\"\n", 0, "line 2: invalid UTF-8 in the text at byte 2"},
		{"{\"text\":\"a\\u0000b\"}\n", 0, "line 1: contains a NUL character (\\u0000)"},
		{"{\"text\":\"a\",\"id\":\"\\u0000\"}\n", 0, "line 1: contains a NUL character"},
		{"{\"text\":\"a\0b\"}\n", 15, "line 1: contains NUL bytes"},
		{"{\"text\":\"\\ud800\"}\n", 0, "line 1: not valid JSON"},
		{"{\"text\":\"\\udc00\\ud800\"}\n", 0, "line 1: not valid JSON"},
		{"{\"text\":\"x\",\"id\":\"\xff\"}\n", 0, "line 1: invalid UTF-8 in field 'id'"},
		{"\n  \n\r\n", 0, "no documents in"},
	};
	char *p = tmp("docs.jsonl");
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *want = xasprintf("'%s' %s", p, cases[i].want);
		if (strncmp(cases[i].want, "no documents", 12) == 0) {
			free(want);
			want = xasprintf("no documents in '%s'", p);
		}
		write_file(p, cases[i].text, cases[i].len ? cases[i].len : strlen(cases[i].text));
		load_fails(p, NULL, strstr(cases[i].want, "no documents") ? RLM_EINVAL : RLM_EPARSE,
			   want);
		free(want);
	}
	write_file(p, "", 0);
	load_fails(p, NULL, RLM_EINVAL, "is empty");
	free(p);
}

TEST(jsonl_from_buf_and_bom)
{
	static const char text[] = "\xef\xbb\xbf{\"text\":\"first\"}\n{\"text\":\"second\"}";
	struct corpus *c = NULL;
	struct rlm_err err = {0, ""};
	CHECK_INT(corpus_from_jsonl_buf("mem", text, sizeof(text) - 1, &c, &err), 0);
	CHECK_STR(c->source, "mem");
	CHECK_INT(c->n_docs, 2);
	CHECK(doc_is(c, 0, "first", "1"));
	CHECK(doc_is(c, 1, "second", "2"));
	corpus_free(c);
	CHECK_INT(corpus_from_jsonl_buf("mem", "{", 1, &c, &err), RLM_EPARSE);
	CHECK(c == NULL);
	CHECK_STR(err.msg, "'mem' line 1: not valid JSON");
	/* A record without text after documents with text is an error; a
	 * first record without text makes the file records (see
	 * jsonl_without_text_is_records). */
	CHECK_INT(corpus_from_jsonl_buf("-", "\"a\"\n{}", 6, &c, &err), RLM_EPARSE);
	CHECK_STR(err.msg, "standard input line 2: no text field (expected one of text, content, "
			   "body, document, contents)");
}

TEST(jsonl_max_bytes)
{
	char *p = put_s("d.jsonl", "\"abc\"\n");
	struct corpus_opts o = {.kind = CORPUS_AUTO, .max_bytes = 5};
	load_fails(p, &o, RLM_ETOOBIG, "is larger than 5 bytes");
	free(p);
}

/* ---- structured contexts: .json, CSV/TSV, JSONL records ---- */

static char *info_of(const struct corpus *c, size_t i)
{
	struct buf b = BUF_INIT;
	CHECK_INT(corpus_doc_info(c, i, &b), 0);
	return buf_detach(&b, NULL);
}

TEST(json_dict_is_one_document)
{
	static const char text[] = "\n {\"a\": 1, \"b\": [true, null, -1.5e3, \"\\u00e9\\n\"]}\n";
	char *p = put_s("data.json", text), *info;
	struct corpus *c = load_ok(p, NULL);
	CHECK_INT(c->kind, CORPUS_JSON);
	CHECK(c->json);
	CHECK(c->mapped); /* mapped like a text file, not copied */
	CHECK_INT(c->len, sizeof(text) - 1);
	CHECK_INT(c->n_docs, 1);
	CHECK_STR(c->docs[0].id, "data.json");
	CHECK_INT(c->docs[0].len, sizeof(text) - 1);
	info = info_of(c, 0);
	CHECK_CONTAINS(info, "\"path\":\"");
	CHECK_CONTAINS(info, "data.json\"");
	free(info);
	corpus_free(c);
	/* an array of anything but objects: one document too */
	write_file(p, "[1, {\"a\": 2}]", 13);
	c = load_ok(p, NULL);
	CHECK_INT(c->n_docs, 1);
	CHECK_INT(c->docs[0].len, 13);
	corpus_free(c);
	free(p);
}

TEST(json_array_of_objects_is_records)
{
	static const char text[] =
		"\xef\xbb\xbf[ {\"id\": \"x-1\", \"title\": \"First\", \"n\": 1, \"big\": [1, 2]} ,\n"
		"  {\"docid\": 7, \"text\": \"a , ] } in a string\"},{}\n]\n";
	char *p = put_s("records.JSON", text), *info;
	struct corpus *c = load_ok(p, NULL);
	CHECK_INT(c->kind, CORPUS_JSON);
	CHECK(c->json);
	CHECK(c->buf[0] == '['); /* the byte-order mark is not part of it */
	CHECK_INT(c->n_docs, 3);
	CHECK(doc_is(c, 0, "{\"id\": \"x-1\", \"title\": \"First\", \"n\": 1, \"big\": [1, 2]}",
		     "x-1"));
	CHECK(doc_is(c, 1, "{\"docid\": 7, \"text\": \"a , ] } in a string\"}", "7"));
	CHECK(doc_is(c, 2, "{}", "3"));
	info = info_of(c, 0);
	CHECK_STR(info, "{\"id\":\"x-1\",\"path\":null,\"title\":\"First\",\"meta\":{\"n\":1}}");
	free(info);
	info = info_of(c, 1);
	CHECK_STR(info, "{\"id\":\"7\",\"path\":null,\"title\":null,\"meta\":{\"text\":\"a , ] } in "
			"a string\"}}");
	free(info);
	CHECK_INT(corpus_doc_find(c, "x-1", 3), 0);
	CHECK_INT(corpus_doc_find(c, "7", 1), 1);
	corpus_free(c);
	free(p);
}

TEST(json_invalid_names_the_byte_and_line)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{"{\n\"a\": 1,\n}", "expected a string key at byte 10 (line 3)"},
		{"[1] x", "more text after the JSON value at byte 4 (line 1)"},
		{"[1,2", "unexpected end of the text at byte 4 (line 1)"},
		{"{\"a\":01}", "expected ',' or '}' at byte 6 (line 1)"},
		{"[1,]", "unexpected character at byte 3"},
		{"[\"a\tb\"]", "control character in a string at byte 3"},
		{"[\"\\x\"]", "invalid escape in a string at byte 2"},
		{"[\"\\u12g4\"]", "invalid \\u escape"},
		{"{\"a\" 1}", "expected ':' at byte 5"},
		{"tru", "unexpected character at byte 0"},
		{"[-]", "invalid number at byte 2"},
		{"[1.]", "invalid number at byte 3"},
		{"[1e+]", "invalid number at byte 4"},
		{"[NaN]", "unexpected character at byte 1"},
		{"  \n ", "no JSON value at byte 4 (line 2)"},
		{"[\"\xc3\x28\"]", "invalid UTF-8 in"},
	};
	char *p = tmp("bad.json"), *deep = xmalloc(1202);
	struct corpus *c = NULL;
	struct rlm_err err = {0, ""};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		write_file(p, cases[i].text, strlen(cases[i].text));
		load_fails(p, NULL, RLM_EPARSE, cases[i].want);
		CHECK_MSG(corpus_from_json(cases[i].text, strlen(cases[i].text), &c, &err) ==
			      RLM_EPARSE,
			  "case %zu", i);
		CHECK(c == NULL);
	}
	/* nesting that json.loads could not take */
	memset(deep, '[', 601);
	memset(deep + 601, ']', 601);
	CHECK_INT(corpus_from_json(deep, 1202, &c, &err), RLM_EPARSE);
	CHECK_CONTAINS(err.msg, "nested too deep");
	CHECK_INT(corpus_from_json(deep + 101, 1000, &c, &err), 0);
	corpus_free(c);
	free(deep);
	free(p);
}

TEST(json_from_memory_in_a_memfd)
{
	static const char recs[] = "[{\"id\":1,\"v\":\"a\"},{\"id\":2,\"v\":\"b\"}]";
	struct corpus *c = NULL;
	struct rlm_err err = {0, ""};
	CHECK_INT(corpus_from_json(recs, sizeof(recs) - 1, &c, &err), 0);
	CHECK_INT(c->kind, CORPUS_JSON);
	CHECK(c->json);
	CHECK(c->fd >= 0);
	CHECK_INT(c->n_docs, 2);
	CHECK(doc_is(c, 1, "{\"id\":2,\"v\":\"b\"}", "2"));
	CHECK(c->fd_meta_table != 0);
	corpus_free(c);
	CHECK_INT(corpus_from_json("{\"k\":[1]}", 9, &c, &err), 0);
	CHECK_INT(c->n_docs, 1);
	CHECK_STR(c->docs[0].id, "context");
	corpus_free(c);
	CHECK_INT(corpus_from_json("\"text\"", 6, &c, &err), 0);
	CHECK_INT(c->n_docs, 1);
	corpus_free(c);
}

TEST(csv_quotes_crlf_and_newlines_in_fields)
{
	static const char text[] = "id,name,note\r\n"
				   "7,\"Smith, J.\",\"said \"\"hi\"\"\r\nline2\"\r\n"
				   "\r\n"
				   "8,Bob,\"\"\r\n"
				   "x\"y,caf\xc3\xa9,\"\\ \x01\"";
	static const char want[] =
		"[{\"id\":\"7\",\"name\":\"Smith, J.\",\"note\":\"said \\\"hi\\\"\\r\\nline2\"},\n"
		"{\"id\":\"8\",\"name\":\"Bob\",\"note\":\"\"},\n"
		"{\"id\":\"x\\\"y\",\"name\":\"caf\xc3\xa9\",\"note\":\"\\\\ \\u0001\"}]";
	char *p = put_s("t.csv", text), *info;
	struct corpus *c = load_ok(p, NULL);
	CHECK_INT(c->kind, CORPUS_CSV);
	CHECK(c->json);
	CHECK(!c->mapped);
	CHECK_INT(c->len, sizeof(want) - 1);
	CHECK(memcmp(c->buf, want, c->len) == 0);
	CHECK_INT(c->n_docs, 3);
	CHECK(doc_is(c, 0,
		     "{\"id\":\"7\",\"name\":\"Smith, J.\",\"note\":\"said \\\"hi\\\"\\r\\nline2\"}",
		     "7"));
	CHECK(doc_is(c, 1, "{\"id\":\"8\",\"name\":\"Bob\",\"note\":\"\"}", "8"));
	CHECK_STR(c->docs[2].id, "x\"y");
	info = info_of(c, 1);
	CHECK_STR(info, "{\"id\":\"8\",\"path\":null,\"title\":null,\"meta\":{\"name\":\"Bob\","
			"\"note\":\"\"}}");
	free(info);
	corpus_free(c);
	free(p);
}

TEST(tsv_and_forced_kinds)
{
	static const char text[] = "\xef\xbb\xbftitle\tbody\n\"A\ttab\"\tone, two\nB\t\"q\"\"\"\n";
	char *p = put_s("t.tsv", text), *q = put_s("table.txt", "a,b\n1,2\n"),
	     *r = put_s("value.txt", " [1,2] ");
	struct corpus_opts o = {.kind = CORPUS_CSV};
	struct corpus *c = load_ok(p, NULL);
	enum corpus_kind k;
	char *info;
	CHECK_INT(c->kind, CORPUS_CSV);
	CHECK_INT(c->n_docs, 2);
	CHECK(doc_is(c, 0, "{\"title\":\"A\\ttab\",\"body\":\"one, two\"}", "1"));
	CHECK(doc_is(c, 1, "{\"title\":\"B\",\"body\":\"q\\\"\"}", "2"));
	info = info_of(c, 0);
	CHECK_STR(info, "{\"id\":\"1\",\"path\":null,\"title\":\"A\\ttab\",\"meta\":{\"body\":\"one, "
			"two\"}}");
	free(info);
	corpus_free(c);
	c = load_ok(q, &o);
	CHECK(doc_is(c, 0, "{\"a\":\"1\",\"b\":\"2\"}", "1"));
	corpus_free(c);
	o.kind = CORPUS_JSON;
	c = load_ok(r, &o);
	CHECK(c->json);
	CHECK_INT(c->n_docs, 1);
	corpus_free(c);
	CHECK_INT(corpus_kind_parse("json", &k), 0);
	CHECK_INT(k, CORPUS_JSON);
	CHECK_INT(corpus_kind_parse("csv", &k), 0);
	CHECK_INT(k, CORPUS_CSV);
	CHECK_STR(corpus_kind_name(CORPUS_CSV), "csv");
	CHECK_STR(corpus_kind_name(CORPUS_JSON), "json");
	free(p);
	free(q);
	free(r);
}

TEST(csv_errors_name_the_line)
{
	static const struct {
		const char *text, *want;
		int code;
	} cases[] = {
		{"a,b\n1,2\n3\n", "line 3: 1 field, but the header has 2", RLM_EPARSE},
		{"a,b\n\"1\n2\",3\n4,5,6\n", "line 4: 3 fields, but the header has 2", RLM_EPARSE},
		{"1,2\n3,4\n", "line 1: the first row holds only numbers: a header row", RLM_EPARSE},
		{"a,,c\n1,2,3\n", "line 1: column 2 has no name", RLM_EPARSE},
		{"a,b,a\n1,2,3\n", "line 1: column 3 repeats the name 'a' of column 1", RLM_EPARSE},
		{"a\n\"x\n", "line 2: a quoted field has no closing quote", RLM_EPARSE},
		{"a\n\"x\"y\n", "line 2: a quoted field goes on after its closing quote", RLM_EPARSE},
		{"a,b\r\n", "has a header but no rows", RLM_EINVAL},
		{"\r\n\n", "is empty: a header row naming the columns is required", RLM_EINVAL},
		{"a\n\xff\n", "invalid UTF-8 in", RLM_EPARSE},
	};
	char *p = tmp("bad.csv");
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *want = xasprintf("'%s'", p);
		write_file(p, cases[i].text, strlen(cases[i].text));
		load_fails(p, NULL, cases[i].code, cases[i].want);
		load_fails(p, NULL, cases[i].code, want);
		free(want);
	}
	write_file(p, "a\nx\0y\n", 6);
	load_fails(p, NULL, RLM_EPARSE, "contains NUL bytes");
	write_file(p, "", 0);
	load_fails(p, NULL, RLM_EINVAL, "is empty");
	free(p);
}

TEST(jsonl_without_text_is_records)
{
	static const char text[] = "\n{\"id\":\"a\",\"x\":1}\n\n"
				   "{\"y\":2,\"text\":\"mixed is fine\"}\n"
				   "  {\"z\":[1], \"title\": \"Z\"}  \r\n";
	static const char want[] = "[{\"id\":\"a\",\"x\":1},\n{\"y\":2,\"text\":\"mixed is fine\"},\n"
				   "  {\"z\":[1], \"title\": \"Z\"}]";
	char *p = put_s("recs.jsonl", text), *info;
	struct corpus *c = load_ok(p, NULL);
	CHECK_INT(c->kind, CORPUS_JSONL);
	CHECK(c->json);
	CHECK_INT(c->len, sizeof(want) - 1);
	CHECK(memcmp(c->buf, want, c->len) == 0);
	CHECK_INT(c->n_docs, 3);
	CHECK(doc_is(c, 0, "{\"id\":\"a\",\"x\":1}", "a"));
	CHECK(doc_is(c, 1, "{\"y\":2,\"text\":\"mixed is fine\"}", "4"));
	CHECK(doc_is(c, 2, "  {\"z\":[1], \"title\": \"Z\"}", "5"));
	info = info_of(c, 2);
	CHECK_STR(info, "{\"id\":\"5\",\"path\":null,\"title\":\"Z\",\"meta\":{}}");
	free(info);
	corpus_free(c);
	write_file(p, "{\"a\":1}\n[1]\n", 12);
	load_fails(p, NULL, RLM_EPARSE, "line 2: not a JSON object");
	write_file(p, "{\"a\":1}\n\n{\"b\":}\n", 16);
	load_fails(p, NULL, RLM_EPARSE, "line 3: not valid JSON: unexpected character");
	free(p);
}

/* ---- standard input ---- */

/* Load "-" with data arriving through a pipe from a child process. */
static int load_stdin(const char *data, size_t len, const struct corpus_opts *o,
		      struct corpus **c, struct rlm_err *err)
{
	int fds[2], status, rc;
	pid_t pid;
	CHECK_INT(pipe(fds), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		_exit(file_write_all(fds[1], data, len) ? 1 : 0);
	}
	close(fds[1]);
	CHECK(dup2(fds[0], 0) == 0);
	close(fds[0]);
	rc = corpus_load("-", o, c, err);
	CHECK_INT(waitpid(pid, &status, 0), pid);
	return rc;
}

TEST(stdin_text)
{
	const size_t size = 3 << 20; /* several pipe buffers' worth */
	char *data = xmalloc(size);
	struct corpus *c = NULL;
	struct rlm_err err = {0, ""};
	for (size_t i = 0; i < size; i++)
		data[i] = (char)('a' + i % 26);
	CHECK_INT(load_stdin(data, size, NULL, &c, &err), 0);
	CHECK_INT(c->kind, CORPUS_TEXT);
	CHECK_STR(c->source, "-");
	CHECK(!c->mapped);
	CHECK_INT(c->n_docs, 1);
	CHECK_STR(c->docs[0].id, "stdin");
	CHECK_INT(c->len, size);
	CHECK(memcmp(c->buf, data, size) == 0);
	corpus_free(c);
	free(data);
}

TEST(stdin_errors)
{
	struct corpus *c = NULL;
	struct rlm_err err = {0, ""};
	struct corpus_opts strict = {.strict_utf8 = true};
	CHECK_INT(load_stdin("ab\xc3", 3, &strict, &c, &err), RLM_EPARSE);
	CHECK_STR(err.msg, "invalid UTF-8 in standard input at byte 2");
	CHECK_INT(load_stdin("a\0b", 3, NULL, &c, &err), RLM_EPARSE);
	CHECK_STR(err.msg, "standard input contains NUL bytes (a binary file?)");
	CHECK_INT(load_stdin("", 0, NULL, &c, &err), RLM_EINVAL);
	CHECK_STR(err.msg, "standard input is empty");
	CHECK(c == NULL);
}

TEST(stdin_max_bytes)
{
	struct corpus_opts o = {.kind = CORPUS_AUTO, .max_bytes = 10};
	struct corpus *c = NULL;
	struct rlm_err err = {0, ""};
	CHECK_INT(load_stdin("0123456789X", 11, &o, &c, &err), RLM_ETOOBIG);
	CHECK_STR(err.msg, "standard input is larger than 10 bytes");
	CHECK_INT(load_stdin("0123456789", 10, &o, &c, &err), 0);
	CHECK_INT(c->len, 10);
	corpus_free(c);
}

TEST(stdin_jsonl)
{
	static const char text[] = "{\"id\":\"x\",\"text\":\"from a pipe\"}\n\"two\"\n";
	struct corpus_opts o = {.kind = CORPUS_JSONL};
	struct corpus *c = NULL;
	struct rlm_err err = {0, ""};
	CHECK_INT(load_stdin(text, sizeof(text) - 1, &o, &c, &err), 0);
	CHECK_INT(c->kind, CORPUS_JSONL);
	CHECK_STR(c->source, "-");
	CHECK_INT(c->n_docs, 2);
	CHECK(doc_is(c, 0, "from a pipe", "x"));
	corpus_free(c);
	/* records without text: a JSON list of them */
	CHECK_INT(load_stdin("{\"t\":1}\n", 8, &o, &c, &err), 0);
	CHECK(c->json);
	CHECK_INT(c->len, 9);
	CHECK(memcmp(c->buf, "[{\"t\":1}]", 9) == 0);
	corpus_free(c);
	CHECK_INT(load_stdin("{\"t\":1}\n\"s\"\n", 12, &o, &c, &err), RLM_EPARSE);
	CHECK_CONTAINS(err.msg, "standard input line 2: not a JSON object");
}

/* ---- the memfd, releasing pages, memory held while loading ---- */

/* A field of /proc/self/status in kB. */
static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	size_t n = strlen(field);
	long v = -1;
	CHECK(f);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

/* Running under ASan or valgrind, whose heaps hold what a program frees. */
static bool under_tools(void)
{
	const char *v = getenv("VALGRIND");
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	(void)v;
	return true;
#else
	return v && strcmp(v, "1") == 0;
#endif
}

/* Start VmHWM over from the current RSS. */
static void reset_peak(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY);
	CHECK(fd >= 0);
	CHECK_INT(write(fd, "5", 1), 1);
	close(fd);
}

/* c's memfd is sealed, mode 0, and holds the text then (with docs) the
 * table of the REPL's context layout. */
static void check_memfd(const struct corpus *c, bool table)
{
	struct stat st;
	unsigned char *t;
	size_t tlen = table ? 16 * c->n_docs : 0;
	int seals;
	CHECK(c->fd >= 0);
	CHECK(!c->mapped);
	seals = fcntl(c->fd, F_GET_SEALS);
	CHECK_INT(seals & (F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL),
		  F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
	CHECK_INT(fstat(c->fd, &st), 0);
	CHECK_INT(st.st_mode & 07777, 0);
	/* Then the documents' metadata lines and their table. */
	CHECK(c->fd_meta_table >= c->len + tlen);
	CHECK_INT(st.st_size, c->fd_meta_table + 16 * c->n_docs);
	for (size_t i = 0; i < c->n_docs; i++) {
		struct buf want = BUF_INIT;
		unsigned char e[16];
		uint64_t v[2] = {0, 0};
		char *line;
		CHECK_INT(pread(c->fd, e, 16, (off_t)(c->fd_meta_table + 16 * i)), 16);
		for (int j = 0; j < 16; j++)
			v[j / 8] |= (uint64_t)e[j] << (8 * (j % 8));
		CHECK_INT(corpus_doc_info(c, i, &want), 0);
		CHECK_INT(v[1], want.len);
		line = xmalloc(v[1] + 2);
		CHECK_INT(pread(c->fd, line, v[1] + 1, (off_t)v[0]), (ssize_t)(v[1] + 1));
		CHECK(memcmp(line, want.p, want.len) == 0);
		CHECK_INT(line[v[1]], '\n');
		free(line);
		buf_release(&want);
	}
	CHECK(write(c->fd, "x", 1) < 0); /* sealed against writes */
	t = xmalloc(c->len + tlen + 1);
	CHECK_INT(pread(c->fd, t, c->len + tlen, 0), (ssize_t)(c->len + tlen));
	CHECK(memcmp(t, c->buf, c->len) == 0);
	for (size_t i = 0; table && i < c->n_docs; i++) {
		uint64_t v[2] = {0, 0};
		for (int j = 0; j < 16; j++)
			v[j / 8] |= (uint64_t)t[c->len + 16 * i + (size_t)j] << (8 * (j % 8));
		CHECK_INT(v[0], c->docs[i].off);
		CHECK_INT(v[1], c->docs[i].len);
	}
	free(t);
}

TEST(dir_jsonl_and_stdin_live_in_a_sealed_memfd)
{
	static const char jl[] = "{\"id\":\"a\",\"text\":\"alpha\"}\n\"beta\"\n{\"text\":\"gamma\"}\n";
	struct corpus_opts heap = {.kind = CORPUS_AUTO, .quiet = true, .heap = true}, sin = {.kind = CORPUS_AUTO};
	struct corpus *c = NULL, *h;
	struct rlm_err err = {0, ""};
	char *d = tmp("docs"), *j = put("d.jsonl", jl, sizeof(jl) - 1);
	make_tree();
	c = load_ok(d, &heap);
	CHECK_INT(c->fd, -1); /* heap asked for: the heap, NUL-terminated */
	CHECK_INT(c->buf[c->len], '\0');
	h = c;
	c = load_ok(d, NULL);
	check_memfd(c, true);
	CHECK_INT(c->len, h->len);
	CHECK(memcmp(c->buf, h->buf, c->len) == 0);
	corpus_free(c);
	corpus_free(h);
	c = load_ok(j, NULL);
	check_memfd(c, true);
	CHECK(doc_is(c, 2, "gamma", "3"));
	corpus_free(c);
	CHECK_INT(corpus_from_jsonl_buf("x", jl, sizeof(jl) - 1, &c, &err), 0);
	check_memfd(c, true);
	corpus_free(c);
	CHECK_INT(load_stdin("plain text\n", 11, &sin, &c, &err), 0);
	CHECK_INT(c->kind, CORPUS_TEXT);
	check_memfd(c, false); /* a str: no table */
	corpus_free(c);
	c = corpus_from_text("abc", 3);
	CHECK_INT(c->fd, -1);
	corpus_free(c);
	c = load_ok(put_s("t.txt", "mapped\n"), NULL);
	CHECK_INT(c->fd, -1);
	CHECK(c->mapped);
	corpus_free(c);
	free(d);
	free(j);
}

/* A child RLM's context: a copy in a sealed memfd of its own, mapped
 * read-only, which its worker borrows. */
TEST(text_in_a_memfd_of_its_own)
{
	static const char t[] = "h\xc3\xa9llo\nworld\n";
	char *src = xstrdup(t);
	struct corpus *c = NULL;
	CHECK_INT(corpus_from_text_memfd(src, strlen(src), &c), 0);
	free(src); /* a copy: the source may go at once */
	CHECK_INT(c->kind, CORPUS_TEXT);
	CHECK_INT(c->n_docs, 1);
	CHECK_INT(c->docs[0].len, strlen(t));
	check_memfd(c, false);
	CHECK(memcmp(c->buf, t, strlen(t)) == 0);
	CHECK_INT(corpus_release_pages(c), strlen(t));
	CHECK(memcmp(c->buf, t, strlen(t)) == 0); /* faulted back in */
	corpus_free(c);
	CHECK_INT(corpus_from_text_memfd("", 0, &c), 0);
	CHECK_INT(c->len, 0);
	CHECK_STR(c->buf, "");
	CHECK(c->fd >= 0);
	corpus_free(c);
}

/* RSS (kB) after reading every byte of c; returns a checksum too. */
static long touch(const struct corpus *c, uint64_t *sum)
{
	uint64_t s = 0;
	for (size_t i = 0; i < c->len; i += 512)
		s = s * 31 + (unsigned char)c->buf[i];
	*sum = s;
	return status_kb("VmRSS");
}

TEST(release_pages_leaves_rss_not_the_text)
{
	const size_t size = 16 << 20;
	char *data = xmalloc(size), *text, *jl;
	struct corpus *c[3];
	struct buf b;
	for (size_t i = 0; i < size; i++)
		data[i] = i % 61 == 60 ? '\n' : (char)('a' + i % 26);
	text = put("big.txt", data, size);
	for (size_t i = 4096; i < 8096; i++)
		data[i] = (char)('a' + i % 26);
	buf_init(&b, 0);
	for (size_t i = 0; i < size; i += 4096)
		buf_printf(&b, "\"%zu %.*s\"\n", i, 4000, data + 4096); /* letters only */
	jl = put("big.jsonl", b.p, b.len);
	buf_release(&b);
	free(data);
	c[0] = load_ok(text, NULL);
	c[1] = load_ok(jl, NULL);
	c[2] = corpus_from_text("heap", 4);
	for (int k = 0; k < 2; k++) {
		uint64_t before, after;
		long full = touch(c[k], &before), low;
		CHECK_INT(corpus_release_pages(c[k]), c[k]->len);
		low = status_kb("VmRSS");
		CHECK_MSG(full - low > (long)(c[k]->len / 1024) * 9 / 10,
			  "corpus %d: RSS %ld kB before the release, %ld kB after", k, full, low);
		touch(c[k], &after); /* still readable, and the same */
		CHECK(before == after);
	}
	CHECK_INT(corpus_release_pages(c[2]), 0);
	CHECK_STR(c[2]->buf, "heap");
	CHECK_INT(corpus_release_pages(NULL), 0);
	for (int k = 0; k < 3; k++)
		corpus_free(c[k]);
	free(text);
	free(jl);
}

TEST(loading_holds_one_copy)
{
	/* 24 MB of documents as a directory of 2,400 files and as JSONL: the
	 * peak RSS while loading is the text and little more (the JSONL input
	 * is released behind the decoder). */
	const size_t n = 2400, each = 10000;
	char *d = tmp("copies"), *jl, *doc = xmalloc(each + 1);
	struct buf b;
	buf_init(&b, 0);
	mkdir(d, 0755);
	for (size_t i = 0; i < n; i++) {
		char rel[64];
		for (size_t k = 0; k < each; k++)
			doc[k] = k % 80 == 79 ? ' ' : (char)('a' + (i + k) % 26);
		snprintf(rel, sizeof(rel), "copies/f%05zu.txt", i);
		free(put(rel, doc, each));
		buf_printf(&b, "{\"id\":%zu,\"text\":\"%.*s\"}\n", i, (int)each, doc);
	}
	jl = put("copies.jsonl", b.p, b.len);
	buf_release(&b);
	free(doc);
	for (int k = 0; k < 2; k++) {
		struct corpus *c;
		long base, peak;
		reset_peak();
		base = status_kb("VmRSS");
		c = load_ok(k ? jl : d, NULL);
		peak = status_kb("VmHWM");
		CHECK_INT(c->n_docs, n);
		printf("     %s: %zu bytes, peak RSS growth %.2f x\n", k ? "JSONL" : "directory",
		       c->len, (double)(peak - base) * 1024 / (double)c->len);
		/* ASan's quarantine keeps every freed cJSON tree; valgrind has
		 * its own heap: the bound is for the real allocator. */
		CHECK_MSG(under_tools() || (double)(peak - base) * 1024 < 1.25 * (double)c->len,
			  "%s: RSS grew by %ld kB loading %zu bytes", k ? "JSONL" : "directory",
			  peak - base, c->len);
		corpus_free(c);
	}
	free(d);
	free(jl);
}

TEST(stdin_jsonl_big_is_decoded_past_released_input)
{
	/* Past DROP_STEP (4 MiB) the input behind the decoder is punched out of
	 * its memfd: the documents must still come out whole. */
	struct corpus_opts o = {.kind = CORPUS_JSONL};
	struct corpus *c = NULL;
	struct rlm_err err = {0, ""};
	struct buf b;
	buf_init(&b, 0);
	for (int i = 0; i < 12000; i++)
		buf_printf(&b, "{\"id\":%d,\"text\":\"doc %d %0900d\"}\n", i, i, i);
	CHECK(b.len > (10u << 20));
	CHECK_INT(load_stdin(b.p, b.len, &o, &c, &err), 0);
	CHECK_INT(c->n_docs, 12000);
	for (int i = 0; i < 12000; i += 997) {
		char want[1000], name[16];
		snprintf(want, sizeof(want), "doc %d %0900d", i, i);
		snprintf(name, sizeof(name), "%d", i);
		CHECK(doc_is(c, (size_t)i, want, name));
	}
	check_memfd(c, true);
	corpus_free(c);
	buf_release(&b);
}

/* ---- encodings and compression ---- */

/* What load_logged loads and gets. */
struct logged {
	const char *path;
	const struct corpus_opts *o;
	struct corpus *c;
	int rc;
	struct rlm_err err;
};

static void load_logged_fn(void *arg)
{
	struct logged *l = arg;
	l->rc = corpus_load(l->path, l->o, &l->c, &l->err);
}

/* Load path with o; return what it wrote on stderr (the caller's), with
 * the corpus or the error in *l. */
static char *load_logged(struct logged *l, const char *path, const struct corpus_opts *o)
{
	memset(l, 0, sizeof(*l));
	l->path = path;
	l->o = o;
	return stderr_of(load_logged_fn, l);
}

/* The text of c (one document) is want. */
static bool text_is(const struct corpus *c, const char *want, size_t len)
{
	return c->n_docs == 1 && c->len == len && c->docs[0].off == 0 && c->docs[0].len == len &&
	       memcmp(c->buf, want, len) == 0;
}

TEST(text_utf8_bom_dropped_and_still_mapped)
{
	char *p = put("bom.txt", "\xef\xbb\xbfhello, w\xc3\xb6rld\n", 17);
	struct logged l;
	char *log = load_logged(&l, p, NULL);
	CHECK_INT(l.rc, 0);
	CHECK_STR(log, "");
	CHECK(l.c->mapped); /* skipped by offset, no copy */
	CHECK(text_is(l.c, "hello, w\xc3\xb6rld\n", 14));
	CHECK_INT(l.c->replaced, 0);
	corpus_free(l.c);
	free(log);
	/* a mark alone is an empty file */
	write_file(p, "\xef\xbb\xbf", 3);
	load_fails(p, NULL, RLM_EINVAL, "is empty");
	free(p);
}

TEST(text_one_invalid_byte_replaced_with_one_warning)
{
	/* a latin-1 no-break space in a UTF-8 file, then a cut 3-byte
	 * sequence: each maximal ill-formed part is one U+FFFD */
	static const char data[] = "total: 5\xa0" "EUR\n\xe2\x82 and on\n";
	char *p = put("notes.txt", data, sizeof(data) - 1), *log, *want;
	struct corpus_opts strict = {.strict_utf8 = true};
	struct logged l;
	log = load_logged(&l, p, NULL);
	CHECK_MSG(l.rc == 0, "%s", l.err.msg);
	CHECK(!l.c->mapped); /* converted into a buffer of its own */
	CHECK(text_is(l.c, "total: 5\xef\xbf\xbd" "EUR\n\xef\xbf\xbd and on\n", 26));
	CHECK_INT(l.c->replaced, 3);
	want = xasprintf("rlm: warning: %s: 3 invalid UTF-8 bytes replaced with U+FFFD\n", p);
	CHECK_STR(log, want);
	corpus_free(l.c);
	free(log);
	free(want);
	/* exactly one byte: "1 ... byte" */
	write_file(p, "caf\xe9\n", 5);
	log = load_logged(&l, p, NULL);
	CHECK_INT(l.rc, 0);
	CHECK(text_is(l.c, "caf\xef\xbf\xbd\n", 7));
	want = xasprintf("rlm: warning: %s: 1 invalid UTF-8 byte replaced with U+FFFD\n", p);
	CHECK_STR(log, want);
	corpus_free(l.c);
	free(log);
	free(want);
	/* quiet: no warning, still counted */
	{
		struct corpus_opts q = {.quiet = true};
		log = load_logged(&l, p, &q);
		CHECK_INT(l.rc, 0);
		CHECK_STR(log, "");
		CHECK_INT(l.c->replaced, 1);
		corpus_free(l.c);
		free(log);
	}
	/* strict: today's refusal, with the offset */
	want = xasprintf("invalid UTF-8 in '%s' at byte 3", p);
	load_fails(p, &strict, RLM_EPARSE, want);
	free(want);
	/* a NUL byte is still no text, whatever else is wrong */
	write_file(p, "caf\xe9\0", 5);
	load_fails(p, NULL, RLM_EPARSE, "contains NUL bytes");
	free(p);
}

/* "h\u00e9llo \U0001F600\n" in UTF-16 and UTF-32, with their marks. */
static const char utf8_want[] = "h\xc3\xa9llo \xf0\x9f\x98\x80\n";
static const char u16le[] = "\xff\xfe" "h\0\xe9\0l\0l\0o\0 \0\x3d\xd8\x00\xde\n\0";
static const char u16be[] = "\xfe\xff" "\0h\0\xe9\0l\0l\0o\0 \xd8\x3d\xde\x00\0\n";
static const char u32le[] = "\xff\xfe\0\0" "h\0\0\0\xe9\0\0\0l\0\0\0l\0\0\0o\0\0\0 \0\0\0"
			    "\x00\xf6\x01\0\n\0\0\0";
static const char u32be[] = "\0\0\xfe\xff" "\0\0\0h\0\0\0\xe9\0\0\0l\0\0\0l\0\0\0o\0\0\0 "
			    "\0\x01\xf6\x00\0\0\0\n";

TEST(text_utf16_and_utf32_with_a_mark)
{
	static const struct {
		const char *name, *data;
		size_t len;
	} cases[] = {
		{"le16.txt", u16le, sizeof(u16le) - 1},
		{"be16.txt", u16be, sizeof(u16be) - 1},
		{"le32.txt", u32le, sizeof(u32le) - 1},
		{"be32.txt", u32be, sizeof(u32be) - 1},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *p = put(cases[i].name, cases[i].data, cases[i].len), *log;
		struct logged l;
		log = load_logged(&l, p, NULL);
		CHECK_MSG(l.rc == 0, "%s: %s", cases[i].name, l.err.msg);
		CHECK_MSG(text_is(l.c, utf8_want, sizeof(utf8_want) - 1), "%s: %.*s",
			  cases[i].name, (int)l.c->len, l.c->buf);
		CHECK_STR(log, "");
		CHECK_INT(l.c->replaced, 0);
		corpus_free(l.c);
		free(log);
		free(p);
	}
}

TEST(text_utf16_lone_surrogate_and_odd_byte)
{
	/* a high surrogate followed by 'x', then an odd last byte */
	static const char data[] = "\xff\xfe" "a\0\x3d\xd8x\0!";
	char *p = put("lone.txt", data, sizeof(data) - 1), *log, *want;
	struct corpus_opts strict = {.strict_utf8 = true};
	struct logged l;
	log = load_logged(&l, p, NULL);
	CHECK_MSG(l.rc == 0, "%s", l.err.msg);
	CHECK(text_is(l.c, "a\xef\xbf\xbdx\xef\xbf\xbd", 8));
	CHECK_INT(l.c->replaced, 3);
	want = xasprintf("rlm: warning: %s: 3 invalid UTF-16LE bytes replaced with U+FFFD\n", p);
	CHECK_STR(log, want);
	corpus_free(l.c);
	free(log);
	free(want);
	want = xasprintf("invalid UTF-16LE in '%s' at byte 4", p);
	load_fails(p, &strict, RLM_EPARSE, want);
	free(want);
	free(p);
}

/* A real file (a system header) converted with the iconv program, read
 * back: the same text as the original. */
TEST(text_utf16_made_by_iconv)
{
	const char *src = "/usr/include/stdio.h";
	char *p = tmp("stdio16.h"), *cmd, *orig;
	size_t olen;
	struct rlm_err err;
	struct corpus *c;
	if (access("/usr/bin/iconv", X_OK) != 0 || access(src, R_OK) != 0)
		SKIP("no iconv program or no /usr/include/stdio.h");
	/* "UTF-16" writes a mark and the machine's byte order */
	cmd = xasprintf("/usr/bin/iconv -f UTF-8 -t UTF-16 %s > %s", src, p);
	CHECK_INT(system(cmd), 0);
	CHECK_INT(file_read(src, 1 << 22, &orig, &olen, &err), 0);
	c = load_ok(p, NULL);
	CHECK(text_is(c, orig, olen));
	corpus_free(c);
	free(orig);
	free(cmd);
	free(p);
}

TEST(text_legacy_encodings)
{
	char *p = put_s("menu.txt", "caf\xe9 cr\xe8me br\xfbl\xe9" "e\n"), *log;
	struct corpus_opts o = {.encoding = "latin-1"};
	struct logged l;
	log = load_logged(&l, p, &o);
	CHECK_MSG(l.rc == 0, "%s", l.err.msg);
	CHECK(text_is(l.c, "caf\xc3\xa9 cr\xc3\xa8me br\xc3\xbbl\xc3\xa9" "e\n", 22));
	CHECK_STR(log, "");
	corpus_free(l.c);
	free(log);
	/* other spellings of it, and cp1252's euro sign */
	o.encoding = "ISO-8859-1";
	corpus_free(load_ok(p, &o));
	o.encoding = "latin_1";
	corpus_free(load_ok(p, &o));
	write_file(p, "\x80 5, \x93quoted\x94\n", 14);
	o.encoding = "cp1252";
	{
		struct corpus *c = load_ok(p, &o);
		CHECK(text_is(c, "\xe2\x82\xac 5, \xe2\x80\x9cquoted\xe2\x80\x9d\n", 20));
		corpus_free(c);
	}
	/* valid UTF-8 stays UTF-8 (and mapped) whatever --encoding says */
	write_file(p, "caf\xc3\xa9\n", 6);
	o.encoding = "latin-1";
	{
		struct corpus *c = load_ok(p, &o);
		CHECK(c->mapped);
		CHECK(text_is(c, "caf\xc3\xa9\n", 6));
		corpus_free(c);
	}
	/* cp1252 leaves 0x81 undefined: replaced, or refused when strict */
	write_file(p, "a\x81" "b\n", 4);
	o.encoding = "cp1252";
	{
		struct corpus_opts q = {.encoding = "cp1252", .quiet = true}, s = q;
		struct corpus *c = load_ok(p, &q);
		CHECK(text_is(c, "a\xef\xbf\xbd" "b\n", 6));
		CHECK_INT(c->replaced, 1);
		corpus_free(c);
		s.strict_utf8 = true;
		load_fails(p, &s, RLM_EPARSE, "invalid cp1252 in");
	}
	free(p);
}

TEST(unknown_encoding_is_named)
{
	char *p = put_s("plain.txt", "plain\n");
	struct corpus_opts o = {.encoding = "klingon-8"};
	struct rlm_err err = {0, ""};
	load_fails(p, &o, RLM_EINVAL, "unknown encoding 'klingon-8'");
	CHECK_INT(corpus_encoding_check("klingon-8", &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "unknown encoding 'klingon-8'");
	CHECK_INT(corpus_encoding_check(NULL, NULL), 0);
	CHECK_INT(corpus_encoding_check("auto", NULL), 0);
	CHECK_INT(corpus_encoding_check("UTF_8", NULL), 0);
	CHECK_INT(corpus_encoding_check("windows_1252", NULL), 0);
	free(p);
}

TEST(stdin_utf16_and_bom)
{
	struct corpus *c = NULL;
	struct rlm_err err = {0, ""};
	CHECK_INT(load_stdin(u16be, sizeof(u16be) - 1, NULL, &c, &err), 0);
	CHECK(text_is(c, utf8_want, sizeof(utf8_want) - 1));
	corpus_free(c);
	CHECK_INT(load_stdin("\xef\xbb\xbfpiped", 8, NULL, &c, &err), 0);
	CHECK(text_is(c, "piped", 5));
	corpus_free(c);
}

TEST(jsonl_utf16_and_legacy)
{
	/* {"id":"é","text":"ü"}\n as UTF-16LE with a mark */
	static const char rec[] = "{\"id\":\"\xc3\xa9\",\"text\":\"\xc3\xbc\"}\n";
	char u16[128], *p;
	size_t n = 2;
	uint32_t cp;
	struct corpus *c;
	struct corpus_opts o = {.encoding = "latin1"};
	u16[0] = '\xff';
	u16[1] = '\xfe';
	for (size_t i = 0; i < sizeof(rec) - 1;) {
		i += text_utf8_decode(rec + i, sizeof(rec) - 1 - i, &cp);
		u16[n++] = (char)(cp & 0xff);
		u16[n++] = (char)(cp >> 8);
	}
	p = put("u16.jsonl", u16, n);
	c = load_ok(p, NULL);
	CHECK_INT(c->kind, CORPUS_JSONL);
	CHECK(doc_is(c, 0, "\xc3\xbc", "\xc3\xa9"));
	corpus_free(c);
	CHECK_INT(corpus_from_jsonl_buf("mem", u16, n, &c, NULL), 0);
	CHECK(doc_is(c, 0, "\xc3\xbc", "\xc3\xa9"));
	corpus_free(c);
	free(p);
	/* latin-1 JSONL with --encoding */
	p = put_s("l1.jsonl", "{\"id\":\"caf\xe9\",\"text\":\"cr\xe8me\"}\n");
	load_fails(p, NULL, RLM_EPARSE, "invalid UTF-8");
	c = load_ok(p, &o);
	CHECK(doc_is(c, 0, "cr\xc3\xa8me", "caf\xc3\xa9"));
	corpus_free(c);
	free(p);
}

/* A directory of text in several encodings, binary files and files that
 * are not text. */
static char *make_mixed(void)
{
	static unsigned char noise[4096];
	char *d = tmp("mix");
	for (size_t i = 0; i < sizeof(noise); i++)
		noise[i] = (unsigned char)(0x80 + (i * 37) % 0x7f); /* no NUL, no ASCII */
	free(put_s("mix/a.txt", "plain"));
	free(put("mix/b16.txt", u16le, sizeof(u16le) - 1));
	free(put("mix/c-bom.md", "\xef\xbb\xbf# title", 10));
	free(put("mix/d-latin1.txt", "na\xefve", 5));
	free(put("mix/e.png", "\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16));
	free(put("mix/f.o", "\x7f" "ELF\2\1\1\0", 8));
	free(put("mix/g.dat", (const char *)noise, sizeof(noise)));
	return d;
}

TEST(dir_encodings_and_one_summary_line)
{
	char *d = make_mixed(), *log;
	struct corpus_opts verbose = {.verbose = true}, strict = {.strict_utf8 = true};
	struct logged l;
	log = load_logged(&l, d, NULL);
	CHECK_MSG(l.rc == 0, "%s", l.err.msg);
	CHECK_INT(l.c->n_docs, 4);
	CHECK(doc_is(l.c, 0, "plain", "a.txt"));
	CHECK(doc_is(l.c, 1, utf8_want, "b16.txt"));
	CHECK(doc_is(l.c, 2, "# title", "c-bom.md"));
	CHECK(doc_is(l.c, 3, "na\xef\xbf\xbdve", "d-latin1.txt"));
	CHECK_INT(l.c->skipped, 3);
	CHECK_INT(l.c->replaced, 1);
	CHECK_STR(log, "rlm: warning: skipped 3 files: 2 binary, 1 not text (--verbose lists "
		       "them)\n"
		       "rlm: warning: d-latin1.txt: 1 invalid UTF-8 byte replaced with U+FFFD\n");
	/* the layout holds: each document followed by one '\n' */
	CHECK_INT(l.c->len, 5 + 1 + sizeof(utf8_want) - 1 + 1 + 7 + 1 + 7 + 1);
	corpus_free(l.c);
	free(log);
	/* verbose: one line per file, no summary */
	log = load_logged(&l, d, &verbose);
	CHECK_INT(l.rc, 0);
	CHECK_STR(log, "rlm: warning: d-latin1.txt: 1 invalid UTF-8 byte replaced with U+FFFD\n"
		       "rlm: warning: skipping 'e.png': contains NUL bytes\n"
		       "rlm: warning: skipping 'f.o': contains NUL bytes\n"
		       "rlm: warning: skipping 'g.dat': not UTF-8 text\n");
	corpus_free(l.c);
	free(log);
	/* strict: the latin-1 file is skipped as not text */
	log = load_logged(&l, d, &strict);
	CHECK_INT(l.rc, 0);
	CHECK_INT(l.c->n_docs, 3);
	CHECK_STR(log, "rlm: warning: skipped 4 files: 2 binary, 2 not text (--verbose lists "
		       "them)\n");
	corpus_free(l.c);
	free(log);
	/* a named encoding reads the latin-1 file, the others as they were;
	 * in a one-byte encoding, any bytes but NUL are text (g.dat too) */
	{
		struct corpus_opts o = {.encoding = "latin-1", .quiet = true};
		struct corpus *c = load_ok(d, &o);
		CHECK_INT(c->n_docs, 5);
		CHECK_STR(c->docs[4].id, "g.dat");
		CHECK(doc_is(c, 0, "plain", "a.txt"));
		CHECK(doc_is(c, 3, "na\xc3\xafve", "d-latin1.txt"));
		corpus_free(c);
	}
	free(d);
}

TEST(dir_thousands_skipped_in_one_line)
{
	char *d = tmp("bins"), *log;
	struct logged l;
	struct corpus_opts o = {0};
	mkdir(d, 0755);
	free(put_s("bins/keep.txt", "kept"));
	for (int i = 0; i < 1100; i++) {
		char rel[64];
		snprintf(rel, sizeof(rel), "bins/b%04d.bin", i);
		free(put(rel, "\0\1\2", 3));
	}
	log = load_logged(&l, d, &o);
	CHECK_INT(l.rc, 0);
	CHECK_STR(log, "rlm: warning: skipped 1,100 files: 1,100 binary (--verbose lists them)\n");
	CHECK_INT(l.c->skipped, 1100);
	corpus_free(l.c);
	free(log);
	free(d);
}

/* Write text gzip-compressed to path (zlib, as gzip(1) writes it). */
static void put_gz(const char *path, const char *text, size_t len)
{
	gzFile gz = gzopen(path, "wb9");
	CHECK(gz != NULL);
	while (len) {
		unsigned k = (unsigned)RLM_MIN(len, (size_t)1 << 20);
		CHECK_INT(gzwrite(gz, text, k), (int)k);
		text += k;
		len -= k;
	}
	CHECK_INT(gzclose(gz), Z_OK);
}

TEST(gz_text_jsonl_and_dir)
{
	char *p = tmp("notes.txt.gz"), *jl = tmp("recs.jsonl.gz"), *d = tmp("gzd"), *f;
	struct corpus *c;
	put_gz(p, "compressed notes\n", 17);
	c = load_ok(p, NULL);
	CHECK_INT(c->kind, CORPUS_TEXT);
	CHECK(text_is(c, "compressed notes\n", 17));
	CHECK_STR(c->source, p);
	corpus_free(c);
	/* inside: UTF-16 with a mark */
	put_gz(p, u16le, sizeof(u16le) - 1);
	c = load_ok(p, NULL);
	CHECK(text_is(c, utf8_want, sizeof(utf8_want) - 1));
	corpus_free(c);
	/* x.jsonl.gz is JSONL */
	{
		static const char recs[] = "{\"id\":\"r1\",\"text\":\"one\"}\n"
					   "{\"id\":\"r2\",\"text\":\"two\"}\n";
		put_gz(jl, recs, sizeof(recs) - 1);
	}
	c = load_ok(jl, NULL);
	CHECK_INT(c->kind, CORPUS_JSONL);
	CHECK_INT(c->n_docs, 2);
	CHECK(doc_is(c, 1, "two", "r2"));
	corpus_free(c);
	/* in a directory: read decompressed; a binary one skipped */
	mkdir(d, 0755);
	f = tmp("gzd/a.txt.gz");
	put_gz(f, "alpha", 5);
	free(f);
	f = tmp("gzd/b.bin.gz");
	put_gz(f, "\0\0\0\0", 4);
	free(f);
	free(put_s("gzd/c.txt", "gamma"));
	free(put_s("gzd/d.gz", "not gzip at all"));
	{
		struct logged l;
		char *log = load_logged(&l, d, NULL);
		CHECK_MSG(l.rc == 0, "%s", l.err.msg);
		CHECK_INT(l.c->n_docs, 2);
		CHECK(doc_is(l.c, 0, "alpha", "a.txt.gz"));
		CHECK(doc_is(l.c, 1, "gamma", "c.txt"));
		CHECK_STR(log, "rlm: warning: skipped 2 files: 1 binary, 1 bad gzip data (--verbose "
			       "lists them)\n");
		corpus_free(l.c);
		free(log);
	}
	free(p);
	free(jl);
	free(d);
}

TEST(gz_made_by_gzip_and_bad_data)
{
	char *p = tmp("hdr.h"), *gz = tmp("hdr.h.gz"), *cmd, *orig, *want;
	size_t olen;
	struct rlm_err err;
	struct corpus *c;
	/* a real file compressed by gzip(1), two members back to back */
	if (access("/bin/gzip", X_OK) == 0 && access("/usr/include/stdlib.h", R_OK) == 0) {
		cmd = xasprintf("cat /usr/include/stdlib.h > %s && gzip -c %s > %s && "
				"gzip -c %s >> %s",
				p, p, gz, p, gz);
		CHECK_INT(system(cmd), 0);
		CHECK_INT(file_read(p, 1 << 22, &orig, &olen, &err), 0);
		c = load_ok(gz, NULL);
		CHECK_INT(c->len, 2 * olen);
		CHECK(memcmp(c->buf, orig, olen) == 0 && memcmp(c->buf + olen, orig, olen) == 0);
		corpus_free(c);
		free(orig);
		free(cmd);
	}
	/* cut short, not gzip, empty */
	put_gz(gz, "some text that will be cut off before its end\n", 47);
	{
		int fd = open(gz, O_WRONLY);
		struct stat st;
		CHECK(fd >= 0 && fstat(fd, &st) == 0);
		CHECK_INT(ftruncate(fd, st.st_size - 6), 0);
		close(fd);
	}
	want = xasprintf("cannot read '%s': gzip data cut short", gz);
	load_fails(gz, NULL, RLM_EPARSE, want);
	free(want);
	write_file(gz, "plain text", 10);
	want = xasprintf("cannot read '%s': not gzip data", gz);
	load_fails(gz, NULL, RLM_EPARSE, want);
	free(want);
	put_gz(gz, "", 0);
	load_fails(gz, NULL, RLM_EINVAL, "is empty");
	free(p);
	free(gz);
}

TEST(gz_bomb_stops_at_max_bytes)
{
	const size_t big = 64 << 20; /* 64 MB of 'a': about 64 KB compressed */
	char *data = xmalloc(big), *p = tmp("bomb.txt.gz"), *want, *d = tmp("bombd"), *f;
	struct corpus_opts o = {.max_bytes = 1 << 20};
	struct stat st;
	memset(data, 'a', big);
	put_gz(p, data, big);
	CHECK_INT(stat(p, &st), 0);
	CHECK(st.st_size < (1 << 20)); /* under the cap compressed */
	want = xasprintf("'%s' is larger than 1048576 bytes once decompressed", p);
	load_fails(p, &o, RLM_ETOOBIG, want);
	free(want);
	/* in a directory, the directory's cap */
	mkdir(d, 0755);
	f = tmp("bombd/x.gz");
	CHECK_INT(rename(p, f), 0);
	want = xasprintf("'%s' is larger than 1048576 bytes", d);
	load_fails(d, &o, RLM_ETOOBIG, want);
	free(want);
	free(f);
	free(d);
	free(data);
	free(p);
}
