/* SPDX-License-Identifier: MIT */
/* tests/test_repl.c -- the REPL worker, driven for real: /usr/bin/python3
 * running the embedded runtime. Contexts, persistence, output cutting,
 * tracebacks, interrupts and restarts, crashes, hostile frames, sub-calls,
 * answers, the worker's environment and fds, deadlines and cancels, and
 * the frame parser. */
#include "harness.h"
#include "../common/common.h"
#include "../common/json.h"
#include "../corpus/corpus.h"
#include "../repl/repl.h"
#include "../repl/repl_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MS 1000000LL

/* ---- helpers ---- */

static const char ctx_text[] = "héllo 日本 😀\nsecond line\n";

static void cfg_init(struct repl_cfg *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->ctx.text = ctx_text;
	cfg->ctx.len = strlen(ctx_text);
	cfg->exec_timeout_ns = 20000 * MS;
}

static struct repl *start(const struct repl_cfg *cfg)
{
	struct repl *r = NULL;
	struct rlm_err err = {0, ""};
	int rc = repl_start(cfg, &r, &err);
	CHECK_MSG(rc == 0, "repl_start: %d %s", rc, err.msg);
	CHECK(r != NULL);
	return r;
}

static struct repl *start_default(void)
{
	struct repl_cfg cfg;
	cfg_init(&cfg);
	return start(&cfg);
}

/* Run code, expecting rc 0; res is filled (release it). */
static void run(struct repl *r, const char *code, struct repl_result *res)
{
	struct rlm_err err = {0, ""};
	int rc = repl_exec(r, code, strlen(code), 0, res, &err);
	CHECK_MSG(rc == 0, "repl_exec(%s): %d %s", code, rc, err.msg);
	CHECK(res->output != NULL);
	CHECK_INT(strlen(res->output), res->len);
}

/* Run code and compare its whole output. */
static void expect(struct repl *r, const char *code, const char *want)
{
	struct repl_result res;
	run(r, code, &res);
	CHECK_MSG(strcmp(res.output, want) == 0, "%s: output \"%s\", want \"%s\"", code, res.output,
		  want);
	repl_result_release(&res);
}

static struct repl *start_status(const struct repl_cfg *cfg, struct repl_sandbox_status *st)
{
	struct repl *r = start(cfg);
	repl_sandbox_status(r, st);
	return r;
}

/* The output of run() without its newline, in dst. */
static void output_line(struct repl *r, const char *code, char *dst, size_t cap)
{
	struct repl_result res;
	run(r, code, &res);
	snprintf(dst, cap, "%.*s", res.len ? (int)res.len - 1 : 0, res.output);
	repl_result_release(&res);
}

static pid_t worker_pid(const struct repl *r)
{
	struct repl_stats st;
	repl_stats(r, &st);
	return st.pid;
}

/* Wait (up to 3 s) until pid has exited: a zombie, or gone. */
static bool wait_zombie(pid_t pid)
{
	char path[64], st[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 300; i++) {
		FILE *f = fopen(path, "r");
		bool z;
		if (!f)
			return true;
		z = fgets(st, sizeof(st), f) && strstr(st, ") Z ");
		fclose(f);
		if (z)
			return true;
		time_sleep_ns(10 * MS);
	}
	return false;
}

/* Model code that writes a frame (JSON text) to fd 4 itself. */
static char *raw_frame_code(const char *json)
{
	return xasprintf("import os\nb = '''%s'''.encode()\n"
			 "os.write(4, len(b).to_bytes(4, 'big') + b)\n",
			 json);
}

/* ---- contexts ---- */

TEST(context_str_counts_characters)
{
	struct repl *r = start_default();
	struct repl_stats st;
	expect(r, "len(context)", "23\n");
	expect(r, "context[6:8]", "'日本'\n");
	expect(r, "context[9]", "'😀'\n");
	expect(r, "type(context).__name__", "'str'\n");
	repl_stats(r, &st);
	CHECK(st.pid > 0);
	CHECK(strncmp(st.python, "3.", 2) == 0);
	CHECK(st.start_ns > 0);
	CHECK_INT(st.restarts, 0);
	repl_free(r);
}

TEST(context_documents)
{
	static const char text[] = "é日本😀xyz";
	size_t off[] = {0, 2, 8, 13, 15}, len[] = {2, 6, 5, 2, 0};
	struct repl_cfg cfg;
	struct repl *r;
	cfg_init(&cfg);
	cfg.ctx.text = text;
	cfg.ctx.len = strlen(text);
	cfg.ctx.docs = true;
	cfg.ctx.doc_off = off;
	cfg.ctx.doc_len = len;
	cfg.ctx.n_docs = 5;
	r = start(&cfg);
	expect(r, "[len(d) for d in context]", "[1, 2, 2, 2, 0]\n");
	expect(r, "context", "['é', '日本', '😀x', 'yz', '']\n");
	repl_free(r);
}

static void crash_then_expect(struct repl *r, const char *code, const char *want);

/* documents: who each document is, from the metadata lines; search():
 * places of a pattern over the bytes, in document order, with line
 * numbers counted per document, long lines cut around the match. */
TEST(documents_and_search)
{
	static const char text[] = "alpha\nbeta GAMMA\n\x01\n"	/* doc 0 */
				   "naïve café gamma\n"		/* doc 1 (starts at 19) */
				   "x\n";				/* doc 2 (starts at 38) */
	static const char meta[] =
	    "{\"id\":\"a.txt\",\"path\":\"a.txt\",\"title\":null,\"meta\":{}}\n"
	    "{\"id\":\"r-2\",\"path\":null,\"title\":\"Two\",\"meta\":{\"year\":2024}}\n"
	    "{\"id\":\"3\",\"path\":null,\"title\":null,\"meta\":{}}\n";
	size_t off[] = {0, 19, 38}, len[] = {18, 18, 1};
	struct repl_cfg cfg;
	struct repl *r;
	cfg_init(&cfg);
	cfg.ctx = (struct repl_context){.text = text, .len = strlen(text), .docs = true,
					.doc_off = off, .doc_len = len, .n_docs = 3,
					.meta = meta, .meta_len = strlen(meta), .n_meta = 3};
	r = start(&cfg);
	expect(r, "len(documents), documents[1]",
	       "(3, {'id': 'r-2', 'path': None, 'title': 'Two', 'chars': 16, 'meta': {'year': "
	       "2024}})\n");
	expect(r, "[d['id'] for d in documents], documents[-1]['chars'], documents.index('3')",
	       "(['a.txt', 'r-2', '3'], 1, 2)\n");
	expect(r, "[d['id'] for d in documents[1:]], documents.index(1)", "(['r-2', '3'], 1)\n");
	expect(r, "try:\n    documents[3]\nexcept IndexError as e:\n    print(e)",
	       "documents index out of range (there are 3 documents)\n");
	expect(r, "try:\n    documents.index('nope')\nexcept ValueError as e:\n    print(e)",
	       "no document with id 'nope'\n");
	/* Case-insensitive, across documents, byte offsets within each. */
	expect(r, "[(h['doc'], h['index'], h['line'], h['start'], h['end'], h['text']) for h in "
		  "search('gamma', ignore_case=True)]",
	       "[('a.txt', 0, 2, 11, 16, 'beta GAMMA'), ('r-2', 1, 1, 13, 18, 'naïve café "
	       "gamma')]\n");
	expect(r, "len(search('gamma')), len(search('a', max_results=2)), search('zz')",
	       "(1, 2, [])\n");
	/* A literal with regex=False; ^ anchors at line starts; bytes work. */
	expect(r, "search('caf\\u00e9 g', regex=False)[0]['start'], "
		  "[h['line'] for h in search(r'^\\w+$')], search(b'x')[0]['doc']",
	       "(7, [1, 1], '3')\n");
	expect(r, "try:\n    search('(')\nexcept ValueError as e:\n    print(str(e)[:40])",
	       "search(): not a valid regular expression\n");
	/* Still there after a restart (the memfd is kept). */
	crash_then_expect(r, "documents[0]['path'], search('beta')[0]['doc']", "('a.txt', 'a.txt')\n");
	repl_free(r);

	/* A str: one document; a long line is cut around its match. */
	{
		struct buf b = BUF_INIT;
		for (int i = 0; i < 3000; i++)
			buf_puts(&b, "filler ");
		buf_puts(&b, "NEEDLE-42 tail\nnext\n");
		cfg_init(&cfg);
		cfg.ctx = (struct repl_context){
		    .text = b.p, .len = b.len, .meta = "{\"id\":\"big.txt\"}\n", .meta_len = 17,
		    .n_meta = 1};
		r = start(&cfg);
		expect(r, "h = search('NEEDLE-\\\\d+')[0]; h['doc'], h['line'], h['start'], "
			  "len(h['text']) <= 506, 'NEEDLE-42' in h['text'], len(documents)",
		       "('big.txt', 1, 21000, True, True, 1)\n");
		repl_free(r);
		buf_release(&b);
	}
	/* No metadata: documents are named by their index. */
	cfg_init(&cfg);
	cfg.ctx = (struct repl_context){.text = text, .len = strlen(text), .docs = true,
					.doc_off = off, .doc_len = len, .n_docs = 3};
	r = start(&cfg);
	expect(r, "[d['id'] for d in documents], search('x')[0]['doc']", "(['0', '1', '2'], '2')\n");
	repl_free(r);
}

/* The worker crashes; the new one (on the same context) runs code, whose
 * output is want. */
static void crash_then_expect(struct repl *r, const char *code, const char *want)
{
	struct repl_result res;
	run(r, "import os\nos._exit(1)", &res);
	CHECK(res.restarted);
	repl_result_release(&res);
	expect(r, code, want);
}

/* A sealed memfd that already holds the layout is mapped, not copied; one
 * that is not sealed, or of another size, is refused. */
TEST(context_from_a_sealed_memfd)
{
	static const char text[] = "alpha beta gamma";
	const size_t off[] = {0, 6, 11}, len[] = {5, 4, 5};
	unsigned char table[48];
	struct repl_cfg cfg;
	struct rlm_err err = {0, ""};
	struct repl *r = NULL;
	int fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECK(fd >= 0);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 16; j++)
			table[16 * i + j] =
			    (unsigned char)((j < 8 ? off[i] : len[i]) >> (8 * (j % 8)));
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	CHECK(write(fd, table, sizeof(table)) == (ssize_t)sizeof(table));
	cfg_init(&cfg);
	cfg.ctx = (struct repl_context){.text = text, .len = strlen(text), .docs = true,
					.doc_off = off, .doc_len = len, .n_docs = 3,
					.has_fd = true, .fd = fd};
	CHECK_INT(repl_start(&cfg, &r, &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "not a memfd sealed");
	CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW) == 0);
	cfg.ctx.text_at = 1;
	CHECK_INT(repl_start(&cfg, &r, &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "holds 64 bytes, fewer than the 65");
	cfg.ctx.text_at = 0;
	cfg.ctx.table_at = 17;
	CHECK_INT(repl_start(&cfg, &r, &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "holds 64 bytes, fewer than the 65");
	cfg.ctx.table_at = 0; /* right after the text */
	r = start(&cfg);
	close(fd); /* the repl keeps its own duplicate */
	expect(r, "print(context)", "['alpha', 'beta', 'gamma']\n");
	crash_then_expect(r, "print(len(context), context[2])", "3 gamma\n");
	repl_free(r);
}

/* A view of a part of a larger memfd: the text at some offset (past a
 * page, so the worker maps from a page boundary), the table of a run of
 * its documents at another, whose offsets count from byte 0; a restarted
 * worker gets the same view. A table entry outside the view's text is the
 * worker's fatal error at start. */
TEST(context_view_of_a_memfd_region)
{
	static const char text[] = "alpha beta gamma";
	const uint64_t at = 5000, ent[6] = {at + 0, 5, at + 6, 4, at + 11, 5};
	const size_t off[] = {0, 5}, len[] = {4, 5};
	unsigned char table[48];
	struct repl_cfg cfg;
	struct rlm_err err = {0, ""};
	struct repl *r = NULL;
	struct repl_layout ly;
	int fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECK(fd >= 0);
	for (int i = 0; i < 48; i++)
		table[i] = (unsigned char)(ent[i / 8] >> (8 * (i % 8)));
	CHECK(pwrite(fd, text, strlen(text), (off_t)at) == (ssize_t)strlen(text));
	CHECK(pwrite(fd, table, sizeof(table), 9000) == (ssize_t)sizeof(table));
	CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW) == 0);
	/* documents 1 and 2: "beta gamma" at at + 6, their entries at 9016 */
	cfg_init(&cfg);
	cfg.ctx = (struct repl_context){.text = text + 6, .len = 10, .docs = true,
					.doc_off = off, .doc_len = len, .n_docs = 2,
					.has_fd = true, .fd = fd, .text_at = at + 6,
					.table_at = 9016};
	r = start(&cfg);
	repl_layout(r, &ly);
	CHECK(ly.fd >= 0 && ly.fd != fd);
	CHECK(ly.text_at == at + 6 && ly.text_len == 10 && ly.table_at == 9016 &&
	      ly.n_docs == 2);
	expect(r, "print(context)", "['beta', 'gamma']\n");
	crash_then_expect(r, "print(context)", "['beta', 'gamma']\n");
	repl_free(r);
	/* the str "beta" */
	cfg.ctx = (struct repl_context){.text = text + 6, .len = 4, .has_fd = true, .fd = fd,
					.text_at = at + 6};
	r = start(&cfg);
	expect(r, "context", "'beta'\n");
	repl_layout(r, &ly);
	CHECK(ly.text_at == at + 6 && ly.text_len == 4 && ly.n_docs == -1);
	repl_free(r);
	/* document 0 is not in a view of the text from "beta" on */
	cfg.ctx = (struct repl_context){.text = text + 6, .len = 10, .docs = true,
					.doc_off = off, .doc_len = len, .n_docs = 2,
					.has_fd = true, .fd = fd, .text_at = at + 6,
					.table_at = 9000};
	CHECK(repl_start(&cfg, &r, &err) < 0);
	CHECK_CONTAINS(err.msg, "document 0 is outside the text");
	close(fd);
}

/* A JSON context: `context` is its parsed value, from one json.loads of
 * the mapped text; a restarted worker parses it again. */
TEST(context_json_is_its_value)
{
	static const char text[] = " {\"a\": [1, \"\u00e9\", 2.5], \"b\": null, \"c\": {\"d\": true}}";
	size_t off[1] = {0}, len[1] = {sizeof(text) - 1};
	struct repl_cfg cfg;
	struct repl *r;
	cfg_init(&cfg);
	cfg.ctx = (struct repl_context){.text = text, .len = sizeof(text) - 1, .docs = true,
					.json = true, .doc_off = off, .doc_len = len, .n_docs = 1};
	r = start(&cfg);
	expect(r, "type(context).__name__", "'dict'\n");
	expect(r, "context['a'][1], context['b'], context['c']['d']", "('é', None, True)\n");
	crash_then_expect(r, "print(type(context).__name__, sorted(context))", "dict ['a', 'b', 'c']\n");
	repl_free(r);
}

/* A CSV table as corpus_load builds it: a list of dicts of strings, from
 * the corpus's own memfd. */
TEST(context_csv_is_a_list_of_dicts)
{
	static const char csv[] = "name,n\r\nx,1\r\n\"y, \"\"z\"\"\nw\",2\r\n";
	struct corpus *c = NULL;
	struct rlm_err err = {0, ""};
	size_t *off, *len;
	struct repl_cfg cfg;
	struct repl *r;
	CHECK_INT(corpus_from_csv_buf("t.csv", csv, sizeof(csv) - 1, ',', &c, &err), 0);
	CHECK(c->json && c->fd >= 0);
	off = xcalloc(c->n_docs, sizeof(*off));
	len = xcalloc(c->n_docs, sizeof(*len));
	for (size_t i = 0; i < c->n_docs; i++) {
		off[i] = c->docs[i].off;
		len[i] = c->docs[i].len;
	}
	cfg_init(&cfg);
	cfg.ctx = (struct repl_context){.text = c->buf, .len = c->len, .docs = true, .json = true,
					.doc_off = off, .doc_len = len, .n_docs = c->n_docs,
					.has_fd = true, .fd = c->fd, .text_at = c->fd_text,
					.table_at = c->fd_table, .n_meta = c->n_docs,
					.meta_table_at = c->fd_meta_table};
	r = start(&cfg);
	expect(r, "type(context).__name__, [type(d).__name__ for d in context]",
	       "('list', ['dict', 'dict'])\n");
	expect(r, "context[1]['name']", "'y, \"z\"\\nw'\n");
	/* The rows are the documents: named by their row numbers, found by
	 * search() in the JSON text (a newline inside a field is escaped). */
	expect(r, "[d['id'] for d in documents], documents[1]['chars'], "
		  "[(h['doc'], h['line']) for h in search('z')]",
	       "(['1', '2'], 30, [('2', 1)])\n");
	expect(r, "context[0]", "{'name': 'x', 'n': '1'}\n");
	repl_free(r);
	corpus_free(c);
	free(off);
	free(len);
}

/* Text that is not JSON is refused by the worker, with a word. */
TEST(context_json_invalid_is_refused)
{
	static const char text[] = "{\"a\": ";
	struct repl_cfg cfg;
	struct repl *r = NULL;
	struct rlm_err err = {0, ""};
	cfg_init(&cfg);
	cfg.ctx = (struct repl_context){.text = text, .len = sizeof(text) - 1, .json = true};
	CHECK(repl_start(&cfg, &r, &err) < 0);
	CHECK(r == NULL);
	CHECK_CONTAINS(err.msg, "the context is not valid JSON");
}

TEST(context_empty_and_invalid)
{
	struct repl_cfg cfg;
	struct repl *r;
	struct rlm_err err = {0, ""};
	size_t off = 3, len = 5;
	cfg_init(&cfg);
	cfg.ctx.text = "";
	cfg.ctx.len = 0;
	r = start(&cfg);
	expect(r, "context", "''\n");
	repl_free(r);
	cfg.ctx.docs = true;
	r = start(&cfg);
	expect(r, "context", "[]\n");
	repl_free(r);
	/* A document outside the text. */
	cfg.ctx.text = "abcd";
	cfg.ctx.len = 4;
	cfg.ctx.doc_off = &off;
	cfg.ctx.doc_len = &len;
	cfg.ctx.n_docs = 1;
	CHECK_INT(repl_start(&cfg, &r, &err), RLM_EINVAL);
	CHECK(r == NULL);
	CHECK_CONTAINS(err.msg, "document 0");
	/* Invalid UTF-8 becomes U+FFFD. */
	cfg.ctx.docs = false;
	cfg.ctx.text = "a\xff"
		       "b";
	cfg.ctx.len = 3;
	r = start(&cfg);
	expect(r, "context",
	       "'a\xef\xbf\xbd"
	       "b'\n");
	repl_free(r);
}

/* ---- running code ---- */

TEST(variables_persist_and_expressions_echo)
{
	struct repl *r = start_default();
	struct repl_result res;
	expect(r, "x = 41", "");
	expect(r, "x + 1", "42\n");
	expect(r, "def f(a):\n    return a * 2\n", "");
	expect(r, "f(x)", "82\n");
	expect(r, "None", "");
	expect(r, "print('a'); 'b'", "a\n'b'\n");
	expect(r, "import sys\nprint('out')\nprint('err', file=sys.stderr)\n", "out\nerr\n");
	expect(r, "import json", "");
	run(r, "_hidden = 1\ny = [1]", &res);
	CHECK_INT(res.n_vars, 3);
	CHECK_STR(res.vars[0], "x");
	CHECK_STR(res.vars[1], "f");
	CHECK_STR(res.vars[2], "y");
	CHECK(res.vars[3] == NULL);
	CHECK(!res.error && !res.interrupted && !res.restarted && !res.ready);
	CHECK(res.ns > 0);
	repl_result_release(&res);
	/* SHOW_VARS() returns its text (shown as text when it is the last
	 * expression), as the reference's does; it prints nothing itself. */
	expect(r, "SHOW_VARS()", "Variables:\n  x: int\n  f: function\n  y: list\n");
	expect(r, "s = SHOW_VARS()\nprint(isinstance(s, str), s.splitlines()[1:])",
	       "True ['  x: int', '  f: function', '  y: list']\n");
	repl_free(r);
}

TEST(code_with_bad_bytes_is_an_error_not_a_crash)
{
	struct repl *r = start_default();
	struct repl_result res;
	struct rlm_err err;
	static const char nul[] = "x = 1\0 + 2";
	CHECK_INT(repl_exec(r, nul, sizeof(nul) - 1, 0, &res, &err), 0);
	CHECK(res.error && !res.restarted);
	CHECK_CONTAINS(res.output, "null bytes");
	repl_result_release(&res);
	expect(r, "s = 'a\xff'\nlen(s)", "2\n");
	repl_free(r);
}

TEST(tracebacks_show_only_model_frames)
{
	struct repl *r = start_default();
	struct repl_result res;
	run(r, "def f():\n    return g()\ndef g():\n    return 1 / 0\nf()\n", &res);
	CHECK(res.error);
	CHECK_CONTAINS(res.output, "Traceback (most recent call last):\n"
				   "  File \"<repl>\", line 5, in <module>\n    f()\n");
	CHECK_CONTAINS(res.output, "  File \"<repl>\", line 4, in g\n    return 1 / 0\n");
	CHECK_CONTAINS(res.output, "ZeroDivisionError: division by zero\n");
	CHECK(!strstr(res.output, "<string>"));
	CHECK(!strstr(res.output, "_run_user"));
	repl_result_release(&res);
	/* An error raised by a helper: its frames are the runtime's. */
	run(r, "llm_query(3)", &res);
	CHECK(res.error);
	CHECK_CONTAINS(res.output, "TypeError: llm_query() takes the prompt as a str, not int");
	CHECK(!strstr(res.output, "<string>"));
	repl_result_release(&res);
	run(r, "llm_query_batched(['a', 2])", &res);
	CHECK_CONTAINS(res.output,
		       "TypeError: llm_query_batched(): prompts[1] must be a str, not int");
	repl_result_release(&res);
	run(r, "llm_query(['a'])", &res);
	CHECK_CONTAINS(res.output, "use llm_query_batched");
	repl_result_release(&res);
	run(r, "def (", &res);
	CHECK(res.error);
	CHECK_CONTAINS(res.output, "SyntaxError");
	repl_result_release(&res);
	/* A function from an earlier exec and stdlib frames. */
	run(r, "import json\njson.loads('{')", &res);
	CHECK_CONTAINS(res.output, "json.decoder.JSONDecodeError");
	CHECK_CONTAINS(res.output, "File \"<repl>\", line 2, in <module>");
	repl_result_release(&res);
	expect(r, "f2 = 1", "");
	repl_free(r);
}

TEST(odd_code_does_not_break_the_runtime)
{
	struct repl *r = start_default();
	struct repl_result res;
	run(r, "globals()[1] = 2\nimport sys\nsys.stdout.close()\nsys.stdout = None", &res);
	CHECK(!res.restarted);
	repl_result_release(&res);
	expect(r, "print('still here')", "still here\n");
	run(r,
	    "class D(dict):\n    def get(self, *a):\n        raise ValueError\n"
	    "answer = D(content='c', ready=True)",
	    &res);
	CHECK(!res.restarted && res.ready);
	CHECK_STR(res.answer, "c");
	repl_result_release(&res);
	run(r,
	    "class S:\n    def __str__(self):\n        raise ValueError('no str')\nFINAL_VAR(S())",
	    &res);
	CHECK(!res.restarted && !res.ready && res.error);
	CHECK_CONTAINS(res.output, "no str");
	repl_result_release(&res);
	expect(r, "print('\\0x'); print('\\udc80')", "\xef\xbf\xbdx\n?\n");
	repl_free(r);
}

/* ---- output limits ---- */

TEST(output_is_cut_head_and_tail)
{
	struct repl_cfg cfg;
	struct repl *r;
	struct repl_result res;
	cfg_init(&cfg);
	cfg.output_limit = 1000;
	r = start(&cfg);
	run(r, "print('A' * 3000 + '日' * 2000 + 'Z' * 1000)", &res);
	CHECK_INT(res.output_chars, 6001);
	CHECK(strncmp(res.output, "AAAA", 4) == 0);
	CHECK_CONTAINS(res.output, "\n[... 5,001 of 6,001 characters omitted ...]\n");
	CHECK(res.len > 1000 && res.len < 1200);
	CHECK(strcmp(res.output + res.len - 6, "ZZZZZ\n") == 0);
	repl_result_release(&res);
	/* Exactly at the limit: untouched. */
	run(r, "print('日' * 999)", &res);
	CHECK_INT(res.output_chars, 1000);
	CHECK(!strstr(res.output, "omitted"));
	repl_result_release(&res);
	repl_free(r);
}

/* error_at: where in the output the error's text begins (what was
 * printed before it is not the error), also when the output was cut. */
TEST(error_at_splits_output_from_the_error)
{
	static const struct {
		const char *code;
		const char *before; /* the output up to error_at */
		const char *from;   /* how the rest starts; NULL: no error */
	} cases[] = {
	    {"print('before')\n1/0", "before\n", "Traceback (most recent call last):\n"},
	    {"x = (", "", "  File \"<repl>\", line 1"},
	    {"print('ok')", "ok\n", NULL},
	    {"import sys\nsys.stderr.write('warn\\n')\nraise KeyError('k')", "warn\n",
	     "Traceback"},
	    {"print('日本')\ntry:\n    1/0\nexcept Exception as e:\n    raise ValueError('v') from e",
	     "日本\n", "Traceback (most recent call last):\n"},
	    /* cut: the error in the tail, then an error that began in the
	     * part left out */
	    {"print('A' * 5000)\nraise ValueError('v')", NULL, "Traceback"},
	    {"import sys\nsys.stdout.write('B' * 600)\nraise ValueError('E' * 3000)", NULL,
	     "\n[... "},
	};
	struct repl_cfg cfg;
	struct repl *r;
	struct repl_result res;
	cfg_init(&cfg);
	cfg.output_limit = 1000;
	r = start(&cfg);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		run(r, cases[i].code, &res);
		CHECK_MSG(res.error == (cases[i].from != NULL), "case %zu: error %d", i, res.error);
		CHECK_MSG(res.error_at <= res.len, "case %zu", i);
		if (cases[i].before)
			CHECK_MSG(res.error_at == strlen(cases[i].before) &&
					  strncmp(res.output, cases[i].before, res.error_at) == 0,
				  "case %zu: error_at %zu in \"%s\"", i, res.error_at, res.output);
		if (cases[i].from)
			CHECK_MSG(strncmp(res.output + res.error_at, cases[i].from,
					  strlen(cases[i].from)) == 0,
				  "case %zu: \"%s\" from %zu", i, res.output, res.error_at);
		else
			CHECK_INT(res.error_at, res.len);
		repl_result_release(&res);
	}
	repl_free(r);
}

TEST(print_flood_does_not_take_memory)
{
	struct repl *r = start_default();
	struct repl_result res;
	long rss;
	/* 50 MB in 500 prints, then 200,000 small ones. */
	run(r, "for i in range(500):\n    print('x' * 99999)\n", &res);
	CHECK_INT(res.output_chars, 50000000);
	CHECK(res.len < 21000);
	CHECK_CONTAINS(res.output, "[... 49,980,000 of 50,000,000 characters omitted ...]");
	repl_result_release(&res);
	run(r, "for i in range(200000):\n    print(i)\n", &res);
	CHECK_CONTAINS(res.output, "199999\n");
	CHECK_CONTAINS(res.output, "characters omitted");
	repl_result_release(&res);
	run(r, "import resource\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)", &res);
	rss = atol(res.output);
	CHECK_MSG(rss > 0 && rss < 80000, "the worker's peak RSS is %ld KiB", rss);
	repl_result_release(&res);
	repl_free(r);
}

TEST(truncate_function)
{
	size_t n;
	char *s = repl_truncate("abcdef", 6, 6, &n);
	CHECK_STR(s, "abcdef");
	CHECK_INT(n, 6);
	free(s);
	s = repl_truncate("aé日😀bcdefgh", strlen("aé日😀bcdefgh"), 4, &n);
	CHECK_STR(s, "aé\n[... 7 of 11 characters omitted ...]\ngh");
	CHECK_INT(n, strlen(s));
	free(s);
	s = repl_truncate("line\nline\nline\n", 15, 10, NULL);
	CHECK_STR(s, "line\n[... 5 of 15 characters omitted ...]\nline\n");
	free(s);
	s = repl_truncate("xyz", 3, 0, NULL);
	CHECK_STR(s, "\n[... 3 of 3 characters omitted ...]\n");
	free(s);
}

/* ---- interrupts and restarts ---- */

TEST(sigint_interrupts_and_keeps_variables)
{
	struct repl_cfg cfg;
	struct repl *r;
	struct repl_result res;
	int64_t t0;
	cfg_init(&cfg);
	cfg.exec_timeout_ns = 200 * MS;
	r = start(&cfg);
	expect(r, "kept = 7", "");
	t0 = time_now_ns();
	run(r, "import time\nprint('before')\ntime.sleep(60)", &res);
	CHECK(time_now_ns() - t0 < 2000 * MS);
	CHECK(res.interrupted && res.error && !res.restarted);
	CHECK_CONTAINS(res.output, "before\n");
	CHECK_CONTAINS(res.output, "KeyboardInterrupt");
	CHECK_CONTAINS(res.output, "time limit of 0.2 s");
	repl_result_release(&res);
	expect(r, "kept", "7\n");
	/* A busy loop is interrupted too. */
	run(r, "while True:\n    pass\n", &res);
	CHECK(res.interrupted && !res.restarted);
	repl_result_release(&res);
	expect(r, "kept + 1", "8\n");
	repl_free(r);
}

TEST(sigkill_restarts_when_sigint_is_ignored)
{
	struct repl_cfg cfg;
	struct repl *r;
	struct repl_result res;
	struct repl_stats st;
	pid_t old;
	cfg_init(&cfg);
	cfg.exec_timeout_ns = 200 * MS;
	cfg.grace_ns = 300 * MS;
	r = start(&cfg);
	expect(r, "lost = 1", "");
	old = worker_pid(r);
	run(r,
	    "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass\n",
	    &res);
	CHECK(res.restarted && res.interrupted && res.error);
	CHECK_CONTAINS(res.output, "REPL was restarted");
	CHECK_CONTAINS(res.output, "variables are gone");
	CHECK_CONTAINS(res.output, "time limit of 0.2 s");
	repl_result_release(&res);
	CHECK(worker_pid(r) != old);
	CHECK(kill(old, 0) < 0 && errno == ESRCH);
	run(r, "lost", &res);
	CHECK(res.error);
	CHECK_CONTAINS(res.output, "NameError");
	repl_result_release(&res);
	expect(r, "len(context)", "23\n");
	repl_stats(r, &st);
	CHECK_INT(st.restarts, 1);
	repl_free(r);
}

TEST(crash_exit_is_reported_with_its_output)
{
	struct repl *r = start_default();
	struct repl_result res;
	expect(r, "v = 1", "");
	run(r, "import os\nos.write(2, b'last words\\n')\nos._exit(3)", &res);
	CHECK(res.restarted && res.error);
	CHECK_CONTAINS(res.output, "REPL was restarted: the worker died (exit status 3)");
	CHECK_CONTAINS(res.output, "variables are gone");
	CHECK_CONTAINS(res.output, "last words");
	repl_result_release(&res);
	expect(r, "context[:5]", "'héllo'\n");
	repl_free(r);
}

TEST(crash_segfault_is_reported)
{
	struct repl *r = start_default();
	struct repl_result res;
	run(r, "import ctypes\nctypes.string_at(0)", &res);
	CHECK(res.restarted && res.error);
	CHECK_CONTAINS(res.output, "REPL was restarted");
	CHECK_CONTAINS(res.output, "signal 11");
	repl_result_release(&res);
	expect(r, "1 + 1", "2\n");
	repl_free(r);
}

TEST(worker_killed_between_execs_is_restarted)
{
	struct repl *r = start_default();
	struct repl_result res;
	pid_t pid = worker_pid(r);
	kill(pid, SIGKILL);
	CHECK(wait_zombie(pid));
	run(r, "3 * 3", &res);
	CHECK_MSG(res.restarted && !res.error, "%s", res.output);
	CHECK_CONTAINS(res.output, "REPL was restarted: the worker died between execs");
	CHECK_CONTAINS(res.output, "\n9\n");
	repl_result_release(&res);
	repl_free(r);
}

/* ---- hostile frames ---- */

static void hostile(const char *code, const char *reason)
{
	struct repl *r = start_default();
	struct repl_result res;
	int64_t t0 = time_now_ns();
	expect(r, "gone = 1", "");
	run(r, code, &res);
	CHECK_MSG(time_now_ns() - t0 < 3000 * MS, "took %lld ms", (long long)((time_now_ns() - t0) / MS));
	CHECK(res.restarted);
	CHECK_CONTAINS(res.output, "REPL was restarted: the worker broke the protocol");
	CHECK_CONTAINS(res.output, reason);
	repl_result_release(&res);
	run(r, "gone", &res);
	CHECK_CONTAINS(res.output, "NameError");
	repl_result_release(&res);
	expect(r, "len(context)", "23\n");
	repl_free(r);
}

TEST(hostile_huge_length_header)
{
	hostile("import os, time\nos.write(4, b'\\x80\\x00\\x00\\x00')\ntime.sleep(30)",
		"a frame of 2147483648 bytes (the cap is 67108864)");
}

TEST(hostile_garbage_json)
{
	hostile("import os, time\nos.write(4, b'\\x00\\x00\\x00\\x05hello')\ntime.sleep(30)",
		"not a JSON object");
}

TEST(hostile_result_with_wrong_id)
{
	char *code = raw_frame_code(
	    "{\"type\":\"result\",\"id\":999,\"output\":\"\",\"output_chars\":0,\"error\":false,"
	    "\"interrupted\":false,\"ready\":false,\"answer\":null,\"content\":null,\"vars\":[]}");
	hostile(code, "a result for 999");
	free(code);
}

TEST(hostile_unknown_type_and_bad_fields)
{
	char *code = raw_frame_code("{\"type\":\"exec\",\"id\":1,\"code\":\"x\"}");
	hostile(code, "unknown type 'exec'");
	free(code);
	code = raw_frame_code("{\"type\":\"call\",\"id\":1,\"exec\":2,\"kind\":\"llm\",\"batched\":"
			      "false,\"model\":5,\"prompts\":[\"a\"]}");
	hostile(code, "field 'model'");
	free(code);
}

/* A call frame that comes after its exec ended is a violation. Threads
 * of the code can no longer send one (the exec waits for them, or stops
 * them: threads_* below); model code that patched the runtime can, from
 * the main thread as it goes back to wait for the next frame. */
TEST(hostile_call_after_its_exec)
{
	struct repl *r = start_default();
	struct repl_result res;
	char *raw = raw_frame_code("{\"type\":\"call\",\"id\":77,\"exec\":1,\"kind\":\"llm\","
				   "\"batched\":false,\"model\":null,\"prompts\":[\"x\"]}");
	struct buf code = BUF_INIT;
	buf_printf(&code, "g = llm_query.__globals__\n_orig = g['_read_frame']\ndef _evil():\n"
			  "    g['_read_frame'] = _orig\n");
	for (char *line = strtok(raw, "\n"); line; line = strtok(NULL, "\n"))
		buf_printf(&code, "    %s\n", line);
	buf_puts(&code, "    return _orig()\ng['_read_frame'] = _evil\n");
	expect(r, code.p, "");
	time_sleep_ns(300 * MS);
	run(r, "2 + 2", &res);
	/* Stopped from its result to the next frame (repl__freeze), it
	 * sends the call before that frame (caught before the code runs) or
	 * once it is thawed (caught during the exec, whose code is lost). */
	CHECK_MSG(res.restarted, "%s", res.output);
	CHECK_CONTAINS(res.output, "REPL was restarted: the worker broke the protocol (a call ");
	if (strstr(res.output, "a call arrived after its exec had ended"))
		CHECK_CONTAINS(res.output, "\n4\n");
	else
		CHECK_CONTAINS(res.output, "(a call for exec 1 during exec 2)");
	repl_result_release(&res);
	/* A thread's call made while the exec waits for the thread is
	 * answered as any other. */
	run(r,
	    "import threading, time\nbox = []\ndef late():\n    time.sleep(0.1)\n"
	    "    box.append(llm_query('x'))\nthreading.Thread(target=late).start()\n",
	    &res);
	CHECK(!res.restarted && !res.error);
	repl_result_release(&res);
	expect(r, "box", "['Error: sub-calls are not available in this REPL']\n");
	buf_release(&code);
	free(raw);
	repl_free(r);
}

static void big_call(void *arg, const struct repl_call *c, char **texts, bool *errors)
{
	(void)arg;
	for (size_t i = 0; i < c->n; i++) {
		texts[i] = xmalloc(4 << 20);
		memset(texts[i], 'y', (4 << 20) - 1);
		texts[i][(4 << 20) - 1] = '\0';
		errors[i] = false;
	}
}

/* A worker that sends a call and never reads the (4 MiB) reply, nor stops
 * on SIGINT: the write must not hang us. */
TEST(hostile_worker_that_stops_reading)
{
	struct repl_cfg cfg;
	struct repl *r;
	struct repl_result res;
	char *raw, *code;
	int64_t t0;
	cfg_init(&cfg);
	cfg.exec_timeout_ns = 300 * MS;
	cfg.grace_ns = 200 * MS;
	cfg.on_call = big_call;
	r = start(&cfg);
	raw = raw_frame_code("{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"llm\","
			     "\"batched\":false,\"model\":null,\"prompts\":[\"x\"]}");
	code = xasprintf("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n%s"
			 "while True:\n    pass\n",
			 raw);
	t0 = time_now_ns();
	run(r, code, &res);
	CHECK_MSG(time_now_ns() - t0 < 3000 * MS, "took %lld ms", (long long)((time_now_ns() - t0) / MS));
	CHECK(res.restarted && res.interrupted);
	CHECK_CONTAINS(res.output, "REPL was restarted: the code ran past its time limit");
	repl_result_release(&res);
	expect(r, "1 + 1", "2\n");
	free(raw);
	free(code);
	repl_free(r);
}

/* ---- sub-calls ---- */

struct seen {
	int calls;
	int prompts;
	bool rlm, batched;
	bool contexts; /* the last call carried contexts */
	char model[32];
	int64_t deadline;
};

/* "echo:PROMPT@" and what the context says: its text, "[a|b]" for a list,
 * "ref(OFF,LEN)", "docs(FIRST,END)", or "bad(WHY)". */
static char *echo_context(const char *prompt, const struct repl_ctx_arg *a)
{
	struct buf b;
	buf_init(&b, 0);
	buf_printf(&b, "echo:%s@", prompt);
	switch (a->kind) {
	case REPL_CTX_TEXT:
		CHECK_INT(strlen(a->text), a->len);
		if (a->len > 1000)
			buf_printf(&b, "text(%zu)", a->len);
		else
			buf_append(&b, a->text, a->len);
		break;
	case REPL_CTX_LIST:
		buf_putc(&b, '[');
		for (size_t k = 0; k < a->n_items; k++) {
			CHECK_INT(strlen(a->items[k]), a->item_lens[k]);
			buf_printf(&b, "%s%s", k ? "|" : "", a->items[k]);
		}
		buf_putc(&b, ']');
		break;
	case REPL_CTX_SLICE:
		buf_printf(&b, "ref(%llu,%llu)", (unsigned long long)a->a,
			   (unsigned long long)a->b);
		break;
	case REPL_CTX_RUN:
		buf_printf(&b, "docs(%llu,%llu)", (unsigned long long)a->a,
			   (unsigned long long)a->b);
		break;
	default:
		buf_printf(&b, "bad(%s)", a->bad);
		break;
	}
	return buf_detach(&b, NULL);
}

static void echo_call(void *arg, const struct repl_call *c, char **texts, bool *errors)
{
	struct seen *s = arg;
	s->calls++;
	s->prompts += (int)c->n;
	s->rlm = c->rlm;
	s->batched = c->batched;
	snprintf(s->model, sizeof(s->model), "%s", c->model ? c->model : "(null)");
	s->deadline = c->deadline_ns;
	s->contexts = c->contexts != NULL;
	CHECK(!c->contexts || c->rlm);
	for (size_t i = 0; i < c->n; i++) {
		CHECK_INT(strlen(c->prompts[i]), c->lens[i]);
		if (strcmp(c->prompts[i], "slow") == 0)
			time_sleep_ns(300 * MS);
		if (strcmp(c->prompts[i], "fail") == 0) {
			texts[i] = xstrdup("Error: boom");
			errors[i] = true;
		} else if (strcmp(c->prompts[i], "bad bytes") == 0) {
			/* a reply that is not UTF-8, large enough to go binary */
			texts[i] = xmalloc(70001);
			memset(texts[i], 0xff, 70000);
			memcpy(texts[i], "ok \xc3\xa9 ", 6);
			texts[i][70000] = '\0';
		} else if (c->contexts && c->contexts[i].kind != REPL_CTX_NONE) {
			texts[i] = echo_context(c->prompts[i], &c->contexts[i]);
		} else {
			texts[i] = xasprintf("echo:%s", c->prompts[i]);
		}
	}
}

/* Start a worker on cfg whose calls echo_call answers, counting in s. */
static struct repl *start_echo(struct repl_cfg *cfg, struct seen *s)
{
	cfg->on_call = echo_call;
	cfg->call_arg = s;
	return start(cfg);
}

TEST(calls_reach_the_handler_in_order)
{
	struct repl_cfg cfg;
	struct seen s = {0};
	struct repl *r;
	struct repl_result res;
	cfg_init(&cfg);
	cfg.on_call = echo_call;
	cfg.call_arg = &s;
	r = start(&cfg);
	expect(r, "llm_query('hi')", "'echo:hi'\n");
	CHECK(s.calls == 1 && !s.rlm && !s.batched);
	CHECK_STR(s.model, "(null)");
	run(r, "llm_query_batched(['a', 'fail', 'c日本'], model='small')", &res);
	CHECK_STR(res.output, "['echo:a', 'Error: boom', 'echo:c日本']\n");
	CHECK_INT(res.calls, 3);
	repl_result_release(&res);
	CHECK(s.calls == 2 && s.batched);
	CHECK_STR(s.model, "small");
	expect(r, "rlm_query('q', model='m')", "'echo:q'\n");
	CHECK(s.rlm && !s.batched);
	expect(r, "rlm_query_batched(['p', 'q'])", "['echo:p', 'echo:q']\n");
	CHECK(s.rlm && s.batched);
	expect(r, "llm_query_batched([])", "[]\n");
	CHECK_INT(s.calls, 4);
	/* Threads may call too. */
	expect(r,
	       "import threading\nout = [None] * 8\n"
	       "def w(i):\n    out[i] = llm_query(str(i))\n"
	       "ts = [threading.Thread(target=w, args=(i,)) for i in range(8)]\n"
	       "[t.start() for t in ts]; [t.join() for t in ts]\nout == ['echo:%d' % i for i in "
	       "range(8)]",
	       "True\n");
	CHECK_INT(s.calls, 12);
	repl_free(r);
}

/* A handler that takes 300 ms a prompt and counts how many frames it
 * answers at once. */
static atomic_int slow_now, slow_most, slow_calls;

static void slow_call(void *arg, const struct repl_call *c, char **texts, bool *errors)
{
	int now = atomic_fetch_add(&slow_now, 1) + 1, most = atomic_load(&slow_most);
	(void)arg;
	(void)errors;
	while (now > most && !atomic_compare_exchange_weak(&slow_most, &most, now))
		;
	atomic_fetch_add(&slow_calls, 1);
	time_sleep_ns(300 * MS);
	for (size_t i = 0; i < c->n; i++)
		texts[i] = xasprintf("slow:%s", c->prompts[i]);
	atomic_fetch_sub(&slow_now, 1);
}

/* Calls from several threads of the code are out together (issue 18:
 * the reference's threads run in parallel): 5 threads of 300 ms calls
 * take about 300 ms, not 1.5 s; without parallel_calls, one at a time. */
TEST(calls_from_threads_are_in_flight_together)
{
	const char *code = "import threading, time\nout = [None] * 5\n"
			   "def w(i):\n    out[i] = llm_query('p%d' % i)\n"
			   "t0 = time.monotonic()\n"
			   "ts = [threading.Thread(target=w, args=(i,)) for i in range(5)]\n"
			   "[t.start() for t in ts]; [t.join() for t in ts]\n"
			   "el = time.monotonic() - t0\n"
			   "print(out == ['slow:p%d' % i for i in range(5)])";
	for (int par = 1; par >= 0; par--) {
		struct repl_cfg cfg;
		struct repl *r;
		struct repl_result res;
		int64_t t0;
		cfg_init(&cfg);
		cfg.on_call = slow_call;
		cfg.parallel_calls = par;
		cfg.exec_timeout_ns = 200 * MS; /* the clock stops while calls are out */
		atomic_store(&slow_most, 0);
		atomic_store(&slow_calls, 0);
		r = start(&cfg);
		t0 = time_now_ns();
		run(r, code, &res);
		CHECK_STR(res.output, "True\n");
		CHECK(!res.interrupted);
		CHECK_INT(res.calls, 5);
		CHECK_INT(atomic_load(&slow_calls), 5);
		if (par) {
			CHECK(time_now_ns() - t0 < 900 * MS);
			CHECK_INT(atomic_load(&slow_most), 5);
		} else {
			CHECK(time_now_ns() - t0 >= 1500 * MS);
			CHECK_INT(atomic_load(&slow_most), 1);
		}
		repl_result_release(&res);
		/* A thread whose call is still out when the main code ends: the
		 * result waits for its reply. */
		if (par) {
			expect(r,
			       "box = []\nth = threading.Thread(target=lambda: "
			       "box.append(llm_query('late')))\nth.start()",
			       "");
			expect(r, "th.join(); box", "['slow:late']\n");
			/* Batches from threads and a batch over several frames at once. */
			expect(r,
			       "res = [None] * 3\n"
			       "def b(i):\n    res[i] = llm_query_batched(['b%d' % i, 'c%d' % i])\n"
			       "ts = [threading.Thread(target=b, args=(i,)) for i in range(3)]\n"
			       "[t.start() for t in ts]; [t.join() for t in ts]\n"
			       "res == [['slow:b%d' % i, 'slow:c%d' % i] for i in range(3)]",
			       "True\n");
		}
		repl_free(r);
	}
}

/* The controller answers at most 64 call frames at once, however many
 * threads the code starts (one thread a frame must stay bounded). */
TEST(calls_from_many_threads_are_bounded)
{
	struct repl_cfg cfg;
	struct repl *r;
	cfg_init(&cfg);
	cfg.on_call = slow_call;
	cfg.parallel_calls = true;
	atomic_store(&slow_most, 0);
	atomic_store(&slow_calls, 0);
	r = start(&cfg);
	expect(r,
	       "import threading\nout = [None] * 80\n"
	       "def w(i):\n    out[i] = llm_query('p%d' % i)\n"
	       "ts = [threading.Thread(target=w, args=(i,)) for i in range(80)]\n"
	       "[t.start() for t in ts]; [t.join() for t in ts]\n"
	       "out == ['slow:p%d' % i for i in range(80)]",
	       "True\n");
	CHECK_INT(atomic_load(&slow_calls), 80);
	fprintf(stderr, "  80 threads: %d frames answered at once\n", atomic_load(&slow_most));
	CHECK_MSG(atomic_load(&slow_most) <= 64 && atomic_load(&slow_most) >= 16,
		  "%d frames at once", atomic_load(&slow_most));
	repl_free(r);
}

/* Takes the strings of every other prompt it may take and of every
 * context (as a child RLM does with its context), answers from them after
 * freeing what it took of the frame, and leaves the rest to the repl. The
 * prompts of llm and rlm calls lie in their binary frame: none to take. */
static void taking_call(void *arg, const struct repl_call *c, char **texts, bool *errors)
{
	(void)arg;
	(void)errors;
	CHECK(c->bufs != NULL);
	for (size_t i = 0; i < c->n; i++) {
		char *p = NULL, *x = NULL;
		CHECK(c->bufs[i] == NULL);
		if (i % 2 == 0 && c->bufs[i]) {
			p = c->bufs[i];
			c->bufs[i] = NULL;
		}
		if (c->contexts && c->contexts[i].kind == REPL_CTX_TEXT) {
			CHECK(c->bufs[c->n + i] == c->contexts[i].text);
			x = c->bufs[c->n + i];
			c->bufs[c->n + i] = NULL;
		} else {
			CHECK(c->bufs[c->n + i] == NULL);
		}
		texts[i] = xasprintf("%s:%s|%s", p ? "took" : "left", c->prompts[i],
				     x ? x : "-");
		free(p);
		free(x);
	}
}

/* The handler may take a frame's strings (repl_call.bufs) and free them
 * itself; the repl frees the others. (ASan checks none leaks or is freed
 * twice.) */
TEST(handler_may_take_the_frame_strings)
{
	struct repl_cfg cfg;
	struct repl *r;
	cfg_init(&cfg);
	cfg.on_call = taking_call;
	r = start(&cfg);
	expect(r, "rlm_query_batched(['a', 'b', 'c'], contexts=['x' * 3, None, 'z'])",
	       "['left:a|xxx', 'left:b|-', 'left:c|z']\n");
	expect(r, "llm_query_batched(['p', 'q'])", "['left:p|-', 'left:q|-']\n");
	repl_free(r);
}

/* rlm_query(context=) and rlm_query_batched(contexts=) reach the handler
 * as repl_call.contexts; none given, the frame has none; bad ones raise in
 * the code before anything is sent. */
TEST(rlm_query_contexts_reach_the_handler)
{
	struct repl_cfg cfg;
	struct seen s = {0};
	struct repl *r;
	cfg_init(&cfg);
	cfg.on_call = echo_call;
	cfg.call_arg = &s;
	r = start(&cfg);
	expect(r, "rlm_query('q', context='big text')", "'echo:q@big text'\n");
	CHECK(s.rlm && !s.batched && s.contexts);
	expect(r, "rlm_query('q', context=None)", "'echo:q'\n");
	CHECK(!s.contexts);
	expect(r, "rlm_query_batched(['p', 'q', 'r'], contexts=['one', None, 'th\\x00ree'])",
	       "['echo:p@one', 'echo:q', 'echo:r@th\ufffdree']\n");
	CHECK(s.contexts && s.batched);
	expect(r, "rlm_query_batched(['p', 'q'], contexts=[None, None])", "['echo:p', 'echo:q']\n");
	CHECK(!s.contexts);
	CHECK_INT(s.calls, 4);
	expect(r,
	       "try:\n    rlm_query_batched(['a', 'b'], contexts=['x'])\nexcept ValueError as e:\n"
	       "    print(e)",
	       "rlm_query_batched(): 1 contexts for 2 prompts; give one per prompt (None where the "
	       "prompt is its own context)\n");
	/* a list of str is a list (copied: not this worker's documents) */
	expect(r, "rlm_query('a', context=['x', 'y'])", "'echo:a@[x|y]'\n");
	CHECK_INT(s.calls, 5);
	expect(r,
	       "try:\n    rlm_query('a', context=['x', 2])\nexcept TypeError as e:\n    print(e)",
	       "rlm_query(): context[1] must be a str, not int\n");
	expect(r,
	       "try:\n    rlm_query_batched(['a'], contexts='x')\nexcept TypeError as e:\n"
	       "    print(e)",
	       "rlm_query_batched() takes contexts as a list (one str, list of str or None per "
	       "prompt), not str\n");
	expect(r,
	       "try:\n    rlm_query_batched(['a'], contexts=[3])\nexcept TypeError as e:\n"
	       "    print(e)",
	       "rlm_query_batched(): contexts[0] must be a str, a list of str or None, not int\n");
	expect(r, "try:\n    llm_query('a', context='x')\nexcept TypeError as e:\n    print('TE')",
	       "TE\n");
	CHECK_INT(s.calls, 5);
	repl_free(r);
}

/* An ASCII context of 300,000 characters: "line 000000\n" ... */
static char *ascii_context(size_t *len)
{
	struct buf b;
	buf_init(&b, 0);
	for (int i = 0; b.len < 300000; i++)
		buf_printf(&b, "line %06d\n", i);
	return buf_detach(&b, len);
}

/* Slices of the worker's own str context go as references, with the byte
 * offsets of the piece: consecutive pieces, one found by a search, the
 * whole context, one after the model rebound `context`; small pieces and
 * strs that are not slices go as text. */
TEST(context_slices_are_sent_as_references)
{
	struct repl_cfg cfg;
	struct seen s = {0};
	struct repl *r;
	size_t len;
	char *text = ascii_context(&len), want[200];
	cfg_init(&cfg);
	cfg.ctx.text = text;
	cfg.ctx.len = len;
	r = start_echo(&cfg, &s);
	expect(r, "rlm_query('q', context=context[1000:100000])", "'echo:q@ref(1000,99000)'\n");
	expect(r,
	       "rlm_query_batched(['a', 'b', 'c'], contexts=[context[i:i + 70000] for i in "
	       "range(0, 210000, 70000)])",
	       "['echo:a@ref(0,70000)', 'echo:b@ref(70000,70000)', "
	       "'echo:c@ref(140000,70000)']\n");
	/* not right after the last one: found by its head */
	expect(r, "rlm_query('q', context=context[5:80000])", "'echo:q@ref(5,79995)'\n");
	snprintf(want, sizeof(want), "'echo:q@ref(0,%zu)'\n", len);
	expect(r, "rlm_query('q', context=context)", want);
	/* the same text, made afresh: found too (the content is what counts) */
	expect(r, "rlm_query('q', context=''.join(list(context[7:70007])))",
	       "'echo:q@ref(7,70000)'\n");
	/* small: text */
	expect(r, "rlm_query('q', context=context[12:24])", "'echo:q@line 000001\\n'\n");
	/* not in the context at all */
	expect(r, "rlm_query('q', context='z' * 70000)", "'echo:q@text(70000)'\n");
	expect(r, "rlm_query('q', context=context[100:70100] + 'x')", "'echo:q@text(70001)'\n");
	/* the model rebinds context: the loaded one still counts */
	expect(r, "piece = context[120000:200000]\ncontext = 'other'\nrlm_query('q', context=piece)",
	       "'echo:q@ref(120000,80000)'\n");
	repl_free(r);
	free(text);
}

/* A context with 2-, 3- and 4-byte characters: a slice's reference is in
 * bytes, at any character offset (on both sides of the byte index's
 * blocks of 4,096 characters); ASCII pieces of it too. */
TEST(context_slices_of_multibyte_text)
{
	struct repl_cfg cfg;
	struct seen s = {0};
	struct repl *r;
	struct buf b;
	buf_init(&b, 0);
	for (int i = 0; b.len < 600000; i++)
		buf_printf(&b, "%s %d\n", i % 3 == 0 ? "é日😀x" : i % 3 == 1 ? "plain" : "ß—€", i);
	cfg_init(&cfg);
	cfg.ctx.text = b.p;
	cfg.ctx.len = b.len;
	r = start_echo(&cfg, &s);
	expect(r,
	       "def ref(o, n):\n    return 'echo:q@ref(%d,%d)' % (len(context[:o].encode()), "
	       "len(context[o:o + n].encode()))\n"
	       "ok = []\nfor o in (0, 1, 4095, 4096, 4097, 12345, 100003, len(context) - 70000):\n"
	       "    ok.append(rlm_query('q', context=context[o:o + 70000]) == ref(o, 70000))\n"
	       "print(ok, context.isascii())",
	       "[True, True, True, True, True, True, True, True] False\n");
	repl_free(r);
	buf_release(&b);
}

/* A context that was not valid UTF-8 (decoded with U+FFFD), or that holds
 * a NUL, is sent only as copies. */
TEST(context_lossy_is_sent_as_copies)
{
	struct repl_cfg cfg;
	struct seen s = {0};
	struct repl *r;
	size_t len;
	char *text = ascii_context(&len);
	cfg_init(&cfg);
	cfg.ctx.text = text;
	cfg.ctx.len = len;
	for (int k = 0; k < 2; k++) {
		text[150000] = k ? '\0' : '\xff';
		r = start_echo(&cfg, &s);
		expect(r, "rlm_query('q', context=context[0:100000])",
		       "'echo:q@text(100000)'\n");
		repl_free(r);
	}
	free(text);
}

/* Runs of the worker's own documents (the same str objects) go as a range:
 * the first, the last, the whole list, after a rebinding; a list of fresh
 * strs, an empty list, a list holding a document the code replaced, go as
 * lists; a str piece of a list context goes as text. */
TEST(context_document_runs_are_sent_as_ranges)
{
	static const char text[] = "zero one two three four";
	const size_t off[] = {0, 5, 9, 13, 19}, len[] = {4, 3, 3, 5, 4};
	struct repl_cfg cfg;
	struct seen s = {0};
	struct repl *r;
	cfg_init(&cfg);
	cfg.ctx = (struct repl_context){.text = text, .len = strlen(text), .docs = true,
					.doc_off = off, .doc_len = len, .n_docs = 5};
	r = start_echo(&cfg, &s);
	expect(r, "rlm_query('q', context=context[1:3])", "'echo:q@docs(1,3)'\n");
	expect(r, "rlm_query('q', context=context[:1])", "'echo:q@docs(0,1)'\n");
	expect(r, "rlm_query('q', context=context[-1:])", "'echo:q@docs(4,5)'\n");
	expect(r, "rlm_query('q', context=context)", "'echo:q@docs(0,5)'\n");
	expect(r, "rlm_query('q', context=tuple(context[2:4]))", "'echo:q@docs(2,4)'\n");
	expect(r,
	       "rlm_query_batched(['a', 'b', 'c'], contexts=[context[0:2], context[2:4], "
	       "context[4:]])",
	       "['echo:a@docs(0,2)', 'echo:b@docs(2,4)', 'echo:c@docs(4,5)']\n");
	expect(r, "rlm_query('q', context=context[2:2])", "'echo:q@[]'\n");
	expect(r, "rlm_query('q', context=[(d + '.')[:-1] for d in context[1:3]])",
	       "'echo:q@[one|two]'\n");
	expect(r, "rlm_query('q', context=context[3])", "'echo:q@three'\n");
	expect(r, "keep = context[3:5]\ncontext = ['x']\nrlm_query('q', context=keep)",
	       "'echo:q@docs(3,5)'\n");
	expect(r, "context[1] = 'ONE'\nrlm_query('q', context=context[0:2])",
	       "'echo:q@[zero|ONE]'\n");
	repl_free(r);
}

/* A context item of a shape the protocol does not know reaches the handler
 * as REPL_CTX_BAD (for that prompt alone): the worker is not killed. The
 * items are put in the frame as they are, by replacing the runtime's
 * checker. */
TEST(context_items_of_unknown_shapes_are_bad_not_violations)
{
	struct repl_cfg cfg;
	struct seen s = {0};
	struct repl *r;
	struct repl_result res;
	cfg_init(&cfg);
	r = start_echo(&cfg, &s);
	run(r,
	    "rlm_query.__globals__['_one_context'] = lambda c, fn, what: c\n"
	    "for x in rlm_query_batched(['a'] * 9, contexts=[{'ref': [1, 2]}, {'docs': [3, 1]}, "
	    "{'ref': 'x'}, {'ref': [1, 2, 3]}, {'ref': [-1, 2]}, {'ref': [0.5, 2]}, "
	    "{'ref': [1, 2], 'docs': [1, 2]}, 5, ['x', 3]]):\n    print(x)",
	    &res);
	CHECK_MSG(!res.restarted && !res.error, "%s", res.output);
	CHECK_STR(res.output,
		  "echo:a@ref(1,2)\necho:a@docs(3,1)\n"
		  "echo:a@bad(a context reference that is not {\"ref\": [offset, length]} or "
		  "{\"docs\": [first, end]})\n"
		  "echo:a@bad(a context reference that is not {\"ref\": [offset, length]} or "
		  "{\"docs\": [first, end]})\n"
		  "echo:a@bad(a context reference that is not {\"ref\": [offset, length]} or "
		  "{\"docs\": [first, end]})\n"
		  "echo:a@bad(a context reference that is not {\"ref\": [offset, length]} or "
		  "{\"docs\": [first, end]})\n"
		  "echo:a@bad(a context reference that is not {\"ref\": [offset, length]} or "
		  "{\"docs\": [first, end]})\n"
		  "echo:a@bad(a context that is not a str, a list of str, a reference or null)\n"
		  "echo:a@bad(a context list with an item that is not a str)\n");
	repl_result_release(&res);
	repl_free(r);
}

TEST(calls_without_handler_get_errors)
{
	struct repl *r = start_default();
	expect(r, "llm_query('x')", "'Error: sub-calls are not available in this REPL'\n");
	repl_free(r);
}

TEST(call_time_does_not_count_against_the_limit)
{
	struct repl_cfg cfg;
	struct seen s = {0};
	struct repl *r;
	struct repl_result res;
	cfg_init(&cfg);
	cfg.exec_timeout_ns = 200 * MS;
	cfg.on_call = echo_call;
	cfg.call_arg = &s;
	r = start(&cfg);
	run(r, "a = llm_query('slow')\nb = llm_query('slow')\na + b", &res);
	CHECK(!res.interrupted && !res.error);
	CHECK_STR(res.output, "'echo:slowecho:slow'\n");
	CHECK(res.call_ns >= 600 * MS);
	repl_result_release(&res);
	repl_free(r);
}

static void sigint_call(void *arg, const struct repl_call *c, char **texts, bool *errors)
{
	pid_t pid = worker_pid(*(struct repl **)arg);
	(void)errors;
	if (strcmp(c->prompts[0], "int") == 0) {
		kill(pid, SIGINT); /* while it waits for this reply */
		time_sleep_ns(50 * MS);
	}
	texts[0] = xstrdup("reply");
}

/* A SIGINT that lands while the worker waits for a reply must not tear the
 * frame: it is raised when the call returns. */
TEST(sigint_during_a_call_is_deferred)
{
	struct repl_cfg cfg;
	struct repl *r;
	struct repl_result res;
	cfg_init(&cfg);
	cfg.on_call = sigint_call;
	cfg.call_arg = &r;
	r = start(&cfg);
	run(r, "got = llm_query('int')\nafter = 1", &res);
	CHECK(res.error && res.interrupted && !res.restarted);
	CHECK_CONTAINS(res.output, "KeyboardInterrupt");
	CHECK_CONTAINS(res.output, "line 1, in <module>");
	repl_result_release(&res);
	expect(r, "'got' in globals(), 'after' in globals(), llm_query('again')",
	       "(False, False, 'reply')\n");
	repl_free(r);
}

TEST(call_caps_are_violations)
{
	struct repl_cfg cfg;
	struct seen s = {0};
	struct repl *r;
	struct repl_result res;
	cfg_init(&cfg);
	cfg.max_calls_exec = 3;
	cfg.max_calls_total = 7;
	cfg.on_call = echo_call;
	cfg.call_arg = &s;
	r = start(&cfg);
	/* The runtime refuses past the per-exec cap, the worker lives on... */
	run(r, "llm_query_batched(['a', 'b', 'c', 'd'])", &res);
	CHECK(res.error && !res.restarted);
	CHECK_CONTAINS(res.output, "ValueError: llm_query_batched: 4 more sub-calls would pass "
				   "the limit of 3 per block (0 sent so far)");
	CHECK_INT(s.calls, 0);
	repl_result_release(&res);
	run(r, "llm_query('a'); llm_query('b'); llm_query('c'); llm_query('d')", &res);
	CHECK(res.error && !res.restarted);
	CHECK_CONTAINS(res.output, "the limit of 3 per block (3 sent so far)");
	CHECK_INT(s.calls, 3);
	repl_result_release(&res);
	s.calls = 0;
	/* ...and a worker that bypasses the runtime is killed. */
	run(r,
	    "llm_query.__globals__['_st'].calls = -100\n"
	    "llm_query_batched(['a', 'b', 'c', 'd'])",
	    &res);
	CHECK(res.restarted);
	CHECK_CONTAINS(res.output, "more than 3 sub-calls (prompts) in one exec");
	CHECK_INT(s.calls, 0);
	repl_result_release(&res);
	expect(r, "llm_query_batched(['a', 'b', 'c'])", "['echo:a', 'echo:b', 'echo:c']\n");
	expect(r, "llm_query('d')", "'echo:d'\n");
	run(r, "llm_query('e')", &res);
	CHECK(res.restarted);
	CHECK_CONTAINS(res.output, "more than 7 sub-calls (prompts) in this REPL");
	repl_result_release(&res);
	repl_free(r);
}

/* A large batch goes in pieces of about 1 MiB, each a call frame of its
 * own (issue 23: the controller starts the first calls while the rest is
 * on its way), answered in order; a prompt over a piece goes alone. */
TEST(large_batches_go_in_pieces)
{
	struct repl_stats st;
	struct repl_cfg cfg;
	struct seen s = {0};
	struct repl *r;
	cfg_init(&cfg);
	cfg.output_limit = 1000;
	cfg.on_call = echo_call;
	cfg.call_arg = &s;
	r = start(&cfg);
	expect(r,
	       "ps = [chr(0x61 + i % 26) * 300000 + str(i) for i in range(12)]\n"
	       "out = llm_query_batched(ps)\n"
	       "out == ['echo:' + p for p in ps]",
	       "True\n");
	CHECK_INT(s.prompts, 12);
	CHECK_MSG(s.calls >= 4, "%d frames for 3.6 MB", s.calls);
	/* ASCII prompts are encoded as their piece goes, the others before:
	 * mixed, in order, a lone surrogate as '?' */
	s.calls = s.prompts = 0;
	expect(r,
	       "ps = [('\u00e9' if i % 2 else 'a') * 300000 + str(i) for i in range(8)]\n"
	       "out = llm_query_batched(ps + ['\\ud800x'])\n"
	       "out[:8] == ['echo:' + p for p in ps], out[8]",
	       "(True, 'echo:?x')\n");
	CHECK_INT(s.prompts, 9);
	CHECK_MSG(s.calls >= 4, "%d frames for 3.6 MB", s.calls);
	/* Replies of 64 KiB and more come back as a binary frame (the echoes
	 * above did); text that is not UTF-8 reads as U+FFFD either way, and
	 * errors keep their place. */
	expect(r,
	       "out = llm_query_batched(['bad bytes', 'fail', 'x' * 70000])\n"
	       "out[0][:5], set(out[0][5:]), len(out[0]), out[1], len(out[2])",
	       "('ok \u00e9 ', {'\ufffd'}, 69999, 'Error: boom', 70005)\n");
	expect(r, "llm_query_batched(['bad bytes'])[0][:3]", "'ok '\n");
	/* fd 4 grew for the large frames (F_SETPIPE_SZ) and is back to 64 KiB
	 * once they were taken (F_GETPIPE_SZ is 1032) */
	expect(r, "import fcntl\nfcntl.fcntl(4, 1032)", "65536\n");
	s.calls = s.prompts = 0;
	expect(r, "len(llm_query_batched(['w' * 3000000, 'v']))", "2\n");
	CHECK_INT(s.prompts, 2);
	CHECK_INT(s.calls, 2);
	/* small ones still go together */
	s.calls = s.prompts = 0;
	expect(r, "len(llm_query_batched(['p%d' % i for i in range(500)]))", "500\n");
	CHECK_INT(s.calls, 1);
	/* every large frame was kept where it was read (docs/llm.md's count) */
	repl_stats(r, &st);
	CHECK_INT(st.frames_copied, 0);
	repl_free(r);
}

/* The prompts being answered at once, and the most seen (calls_ahead). */
struct ahead {
	atomic_int out, most, frames;
	int hold_for; /* > 0: a call is held until this many are out (3 s at
		       * most), not 40 ms: under TSan the controller is slow
		       * enough that 40 ms calls end before the next piece */
};

static void ahead_call(void *arg, const struct repl_call *c, char **texts, bool *errors)
{
	struct ahead *a = arg;
	int now = atomic_fetch_add(&a->out, (int)c->n) + (int)c->n, m = atomic_load(&a->most);
	while (now > m && !atomic_compare_exchange_weak(&a->most, &m, now))
		;
	atomic_fetch_add(&a->frames, 1);
	time_sleep_ns(40 * MS); /* a model's latency: the next pieces come meanwhile */
	for (int64_t end = time_now_ns() + 3000 * MS;
	     a->hold_for && atomic_load(&a->most) < a->hold_for && time_now_ns() < end;)
		time_sleep_ns(5 * MS);
	for (size_t i = 0; i < c->n; i++) {
		texts[i] = xasprintf("echo:%zu", c->lens[i]);
		errors[i] = false;
	}
	atomic_fetch_sub(&a->out, (int)c->n);
}

/* A batch far larger than the slots: with calls_ahead the controller takes
 * the worker's next piece only once fewer prompts than that are being
 * answered (the worker waits to send it), so a few pieces are held at once
 * and their blocks go round; without it every piece is taken as it comes.
 * The answers are the same, in order. */
TEST(calls_ahead_bounds_the_pieces_held)
{
	static const char code[] =
	    "ps = ['%c' * 300000 + str(i) for i in range(40)]\n"
	    "out = llm_query_batched(ps)\n"
	    "out == ['echo:%%d' %% len(p) for p in ps]";
	for (int capped = 1; capped >= 0; capped--) {
		struct repl_stats st;
		struct repl_cfg cfg;
		struct ahead a;
		struct repl *r;
		char c[sizeof(code) + 8];
		cfg_init(&cfg);
		cfg.on_call = ahead_call;
		cfg.call_arg = &a;
		cfg.parallel_calls = true;
		cfg.calls_ahead = capped ? 4 : 0;
		atomic_init(&a.out, 0);
		atomic_init(&a.most, 0);
		atomic_init(&a.frames, 0);
		a.hold_for = capped ? 0 : 8;
		snprintf(c, sizeof(c), code, capped ? 'q' : 'u');
		r = start(&cfg);
		expect(r, c, "True\n");
		CHECK_MSG(atomic_load(&a.frames) >= 8, "%d frames for 12 MB", atomic_load(&a.frames));
		/* a frame is taken while fewer than 4 are out: at most 3 and
		 * one piece's (1 MiB: 4 prompts) */
		if (capped)
			CHECK_MSG(atomic_load(&a.most) <= 7, "%d prompts out at once (cap 4)",
				  atomic_load(&a.most));
		else
			CHECK_MSG(atomic_load(&a.most) > 7, "only %d prompts out at once uncapped",
				  atomic_load(&a.most));
		/* spare blocks larger than a piece still hold it alone */
		repl_stats(r, &st);
		CHECK_INT(st.frames_copied, 0);
		repl_free(r);
	}
}

/* A batch over the frame cap goes as several frames, answered as one batch
 * in order; only a single prompt over the cap is an error, which says
 * which one and what to do (issue 18: each child of a 1 GB solve built a
 * batch over the 64 MiB cap and got a ValueError it could not act on). */
TEST(frames_over_the_cap_are_split_in_the_worker)
{
	struct repl_cfg cfg;
	struct seen s = {0};
	struct repl *r;
	struct repl_result res;
	cfg_init(&cfg);
	cfg.max_frame = 4096;
	cfg.output_limit = 1000;
	cfg.on_call = echo_call;
	cfg.call_arg = &s;
	r = start(&cfg);
	/* Two prompts that fit one frame each, not together. */
	expect(r,
	       "out = llm_query_batched(['x' * 3000, 'y' * 3000])\n"
	       "[(len(o), o[:6]) for o in out]",
	       "[(3005, 'echo:x'), (3005, 'echo:y')]\n");
	CHECK_INT(s.calls, 2);
	CHECK_INT(s.prompts, 2);
	/* Many short ones, non-ASCII (3 bytes a character), in order, and
	 * contexts travel with their prompts. */
	s.calls = s.prompts = 0;
	expect(r,
	       "ps = ['日%d' % i * 40 for i in range(60)]\n"
	       "out = llm_query_batched(ps)\n"
	       "out == ['echo:' + p for p in ps]",
	       "True\n");
	CHECK_INT(s.prompts, 60);
	CHECK(s.calls >= 3);
	s.calls = s.prompts = 0;
	expect(r,
	       "cs = [('c%d ' % i) * 333 for i in range(4)]\n"
	       "out = rlm_query_batched(['q%d' % i for i in range(4)], contexts=cs)\n"
	       "out == ['echo:q%d@%s' % (i, c) for i, c in enumerate(cs)]",
	       "True\n");
	CHECK_INT(s.prompts, 4);
	CHECK(s.calls >= 2);
	/* One prompt over the cap: nothing is sent, and the error names it. */
	s.calls = 0;
	run(r, "llm_query_batched(['a', 'b', 'z' * 5000])", &res);
	CHECK(res.error && !res.restarted);
	CHECK_CONTAINS(res.output, "ValueError: llm_query_batched: prompt 2 is 5.0 kB, over the "
				   "4 KiB one call can carry: cut it into smaller pieces");
	CHECK_INT(s.calls, 0);
	repl_result_release(&res);
	run(r, "llm_query('z' * 5000)", &res);
	CHECK(res.error && !res.restarted);
	CHECK_CONTAINS(res.output, "ValueError: llm_query: prompt is 5.0 kB, over the 4 KiB");
	repl_result_release(&res);
	run(r, "rlm_query_batched(['a', 'b'], contexts=[None, 'c' * 6000])", &res);
	CHECK(res.error && !res.restarted);
	CHECK_CONTAINS(res.output, "ValueError: rlm_query_batched: prompt 1 with its context is "
				   "6.0 kB, over the 4 KiB one call can carry");
	repl_result_release(&res);
	CHECK_INT(s.calls, 0);
	run(r, "FINAL('z' * 5000)", &res);
	CHECK(res.error && !res.ready && !res.restarted);
	CHECK_CONTAINS(res.output, "error: the answer is too large to send");
	repl_result_release(&res);
	expect(r, "llm_query('ok')", "'echo:ok'\n");
	repl_free(r);
}

/* ---- answers ---- */

TEST(answer_dict_final_and_final_var)
{
	struct repl *r = start_default();
	struct repl_result res;
	struct rlm_err err;
	run(r, "answer['content'] = 'part'", &res);
	CHECK(!res.ready && res.answer == NULL);
	CHECK_STR(res.content, "part");
	repl_result_release(&res);
	run(r, "answer['content'] = 'done'\nanswer['ready'] = True", &res);
	CHECK(res.ready && res.content == NULL);
	CHECK_STR(res.answer, "done");
	repl_result_release(&res);
	/* Reported once, then cleared. */
	run(r, "answer['ready']", &res);
	CHECK(!res.ready);
	CHECK_STR(res.output, "False\n");
	repl_result_release(&res);
	run(r, "FINAL(6 * 7)", &res);
	CHECK(res.ready);
	CHECK_STR(res.answer, "42");
	repl_result_release(&res);
	run(r, "v = [1, 'b']\nFINAL_VAR('v')", &res);
	CHECK(res.ready);
	CHECK_STR(res.answer, "[1, 'b']");
	repl_result_release(&res);
	run(r, "FINAL_VAR(v)", &res);
	CHECK_STR(res.answer, "[1, 'b']");
	repl_result_release(&res);
	/* A name that is no variable is an error in the code, never the
	 * name as the answer; the session goes on. */
	run(r, "FINAL_VAR('no_such_var')", &res);
	CHECK(!res.ready && res.error && !res.answer);
	CHECK_CONTAINS(res.output, "NameError: FINAL_VAR('no_such_var'): there is no variable "
				   "named 'no_such_var'");
	CHECK_CONTAINS(res.output, "call FINAL(value)");
	repl_result_release(&res);
	run(r, "city = 'Paris'\nFINAL_VAR(city)", &res);
	CHECK(!res.ready && res.error);
	repl_result_release(&res);
	/* A value that cannot be a name is the answer itself. */
	run(r, "FINAL_VAR('Paris, France')", &res);
	CHECK(res.ready && !res.error);
	CHECK_STR(res.answer, "Paris, France");
	repl_result_release(&res);
	/* Set, then an error: still the answer. */
	run(r, "FINAL('early')\n1 / 0", &res);
	CHECK(res.ready && res.error);
	CHECK_STR(res.answer, "early");
	repl_result_release(&res);
	CHECK_INT(repl_final_var(r, "v", 0, &res, &err), 0);
	CHECK(res.ready && !res.error);
	CHECK_STR(res.answer, "[1, 'b']");
	repl_result_release(&res);
	CHECK_INT(repl_final_var(r, " \"v\" ", 0, &res, &err), 0);
	CHECK(res.ready);
	CHECK_STR(res.answer, "[1, 'b']");
	repl_result_release(&res);
	CHECK_INT(repl_final_var(r, "not a name", 0, &res, &err), 0);
	CHECK(!res.ready && res.error);
	repl_result_release(&res);
	CHECK_INT(repl_final_var(r, "nope", 0, &res, &err), 0);
	CHECK(!res.ready && res.error);
	CHECK_CONTAINS(res.output, "no variable named 'nope'");
	repl_result_release(&res);
	repl_free(r);
}

/* answer["sources"] and FINAL(x, sources=...): what the worker sends with
 * the answer, normalised, the ill-shaped entries dropped with a note. */
TEST(answer_sources_reach_the_result)
{
	struct repl *r = start_default();
	struct repl_result res;
	/* Not ready: no sources travel. */
	run(r, "answer['sources'] = ['a.txt']\nanswer['content'] = 'part'", &res);
	CHECK(!res.ready && res.n_sources == 0 && res.sources == NULL);
	repl_result_release(&res);
	run(r,
	    "answer['sources'] = ['linux/eventpoll.h', 3, {'doc': 'x.md', 'start': 5, 'end': 9,"
	    " 'quote': 'q' * 2500}, 2.5, {'start': 1}, {'doc': 'y', 'end': -1}, True, -4,"
	    " {'doc': 7, 'quote': 'ab'}]\nanswer['ready'] = True",
	    &res);
	CHECK(res.ready && !res.error);
	CHECK_INT(res.n_sources, 4);
	CHECK_STR(res.sources[0].doc, "linux/eventpoll.h");
	CHECK(res.sources[0].start == -1 && res.sources[0].end == -1 && !res.sources[0].quote);
	CHECK_STR(res.sources[1].doc, "3");
	CHECK_STR(res.sources[2].doc, "x.md");
	CHECK(res.sources[2].start == 5 && res.sources[2].end == 9);
	CHECK_INT(strlen(res.sources[2].quote), 2000);
	CHECK_STR(res.sources[3].doc, "7");
	CHECK_STR(res.sources[3].quote, "ab");
	CHECK_CONTAINS(res.output, "note: answer[\"sources\"]: dropped entry 3 (a float), "
				   "entry 4 (a dict without \"doc\"), entry 5 (a \"end\" value that is not "
				   "an int >= 0), entry 6 (a bool), entry 7 (an empty, negative or "
				   "over-long id)");
	repl_result_release(&res);
	/* Reported once: the next answer starts without them. */
	run(r, "FINAL('again')", &res);
	CHECK(res.ready && res.n_sources == 0);
	CHECK(strstr(res.output, "sources") == NULL);
	repl_result_release(&res);
	run(r, "FINAL('x', sources=['b.txt', {'doc': 'c.txt', 'quote': 'héllo'}])", &res);
	CHECK(res.ready);
	CHECK_STR(res.answer, "x");
	CHECK_INT(res.n_sources, 2);
	CHECK_STR(res.sources[0].doc, "b.txt");
	CHECK_STR(res.sources[1].quote, "héllo");
	repl_result_release(&res);
	run(r, "v = 'y'\nFINAL_VAR('v', sources=('d.txt',))", &res);
	CHECK_STR(res.answer, "y");
	CHECK_INT(res.n_sources, 1);
	CHECK_STR(res.sources[0].doc, "d.txt");
	repl_result_release(&res);
	/* More than 100: the first 100 go. */
	run(r, "FINAL('many', sources=['d%d' % i for i in range(150)])", &res);
	CHECK_INT(res.n_sources, 100);
	CHECK_STR(res.sources[99].doc, "d99");
	CHECK_CONTAINS(res.output, "dropped the 50 past the first 100");
	repl_result_release(&res);
	/* Not a list at all; a replaced answer dict keeps its sources; an
	 * empty list sends nothing. */
	run(r, "FINAL('n', sources=5)", &res);
	CHECK(res.ready && res.n_sources == 0);
	CHECK_CONTAINS(res.output, "answer[\"sources\"] was ignored");
	repl_result_release(&res);
	run(r, "answer = {'content': 'swap', 'ready': True, 'sources': ['e.txt']}", &res);
	CHECK_STR(res.answer, "swap");
	CHECK_INT(res.n_sources, 1);
	CHECK_STR(res.sources[0].doc, "e.txt");
	repl_result_release(&res);
	run(r, "FINAL('none', sources=[])", &res);
	CHECK(res.ready && res.n_sources == 0 && res.sources == NULL);
	repl_result_release(&res);
	/* An entry whose comparison raises: the sources go, the answer stays. */
	run(r,
	    "class K(str):\n    def __hash__(self): return hash('doc')\n"
	    "    def __eq__(self, o): raise ValueError('boom')\n"
	    "FINAL('kept', sources=[{K('doc'): 1}])",
	    &res);
	CHECK(res.ready);
	CHECK_STR(res.answer, "kept");
	CHECK_INT(res.n_sources, 0);
	CHECK_CONTAINS(res.output, "answer[\"sources\"] was ignored: ValueError: boom");
	repl_result_release(&res);
	repl_free(r);
}

/* The controller's side: a hostile worker's sources member of the wrong
 * shape is ignored whole, with a note; a good one is taken. */
TEST(result_sources_parse)
{
	static const struct {
		const char *sources;
		size_t n;       /* taken; 0 with why: ignored */
		const char *why;
	} cases[] = {
	    {"[\"a\",{\"doc\":\"b\",\"start\":1,\"end\":4,\"quote\":\"xyz\"}]", 2, NULL},
	    {"[]", 0, NULL},
	    {"null", 0, NULL},
	    {"\"a\"", 0, "not an array"},
	    {"[\"a\",5]", 0, "not a document id"},
	    {"[{\"doc\":\"a\",\"start\":-1}]", 0, "\"start\" that is not"},
	    {"[{\"doc\":\"a\",\"end\":1.5}]", 0, "\"end\" that is not"},
	    {"[{\"doc\":\"a\",\"quote\":7}]", 0, "a quote that is not"},
	    {"[{\"quote\":\"x\"}]", 0, "not a document id"},
	    {"[\"\"]", 0, "not a document id"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *body = xasprintf(
		    "{\"type\":\"result\",\"id\":1,\"output\":\"\",\"output_chars\":0,\"error\":false,"
		    "\"interrupted\":false,\"ready\":true,\"answer\":\"x\",\"content\":null,"
		    "\"vars\":[],\"sources\":%s}",
		    cases[i].sources);
		struct rlm_err err = {0, ""};
		cJSON *f = repl_frame_parse(body, strlen(body), 1 << 20, &err);
		struct repl_result res;
		struct buf note = BUF_INIT;
		CHECK_MSG(f != NULL, "%s: %s", cases[i].sources, err.msg);
		memset(&res, 0, sizeof(res));
		repl__sources(f, &res, &note);
		CHECK_MSG(res.n_sources == cases[i].n, "%s: %zu sources", cases[i].sources,
			  res.n_sources);
		if (cases[i].why) {
			CHECK(res.sources == NULL);
			CHECK_CONTAINS(note.len ? note.p : "", cases[i].why);
		} else {
			CHECK_INT(note.len, 0);
		}
		if (cases[i].n == 2) {
			CHECK_STR(res.sources[0].doc, "a");
			CHECK(res.sources[0].start == -1 && res.sources[0].end == -1);
			CHECK(res.sources[1].start == 1 && res.sources[1].end == 4);
			CHECK_STR(res.sources[1].quote, "xyz");
		}
		repl_result_release(&res);
		buf_release(&note);
		cJSON_Delete(f);
		free(body);
	}
	/* Over 100 entries: ignored whole. */
	{
		struct buf b = BUF_INIT, note = BUF_INIT;
		struct repl_result res;
		cJSON *f;
		buf_puts(&b, "{\"type\":\"result\",\"id\":1,\"output\":\"\",\"output_chars\":0,"
			     "\"error\":false,\"interrupted\":false,\"ready\":true,\"answer\":\"x\","
			     "\"content\":null,\"vars\":[],\"sources\":[");
		for (int i = 0; i < 101; i++)
			buf_printf(&b, "%s\"d%d\"", i ? "," : "", i);
		buf_puts(&b, "]}");
		f = repl_frame_parse(b.p, b.len, 1 << 20, NULL);
		CHECK(f != NULL);
		memset(&res, 0, sizeof(res));
		repl__sources(f, &res, &note);
		CHECK_INT(res.n_sources, 0);
		CHECK_CONTAINS(note.len ? note.p : "", "more than 100 entries");
		repl_result_release(&res);
		buf_release(&note);
		buf_release(&b);
		cJSON_Delete(f);
	}
}

TEST(scaffold_names_are_restored)
{
	struct repl_cfg cfg;
	struct seen s = {0};
	struct repl *r;
	struct repl_result res;
	cfg_init(&cfg);
	cfg.on_call = echo_call;
	cfg.call_arg = &s;
	r = start(&cfg);
	expect(r, "llm_query = 5\ncontext = None\nFINAL = 'x'\ndel SHOW_VARS", "");
	expect(r, "llm_query('back')", "'echo:back'\n");
	expect(r, "len(context)", "23\n");
	run(r, "answer = {'content': 'plain', 'ready': True}", &res);
	CHECK(res.ready);
	CHECK_STR(res.answer, "plain");
	repl_result_release(&res);
	expect(r, "isinstance(answer, dict), answer['content'], answer['ready']",
	       "(True, 'plain', False)\n");
	run(r, "answer = 'not a dict'", &res);
	CHECK(!res.ready);
	repl_result_release(&res);
	expect(r, "answer['content']", "'plain'\n");
	expect(r, "FINAL('ok')", "");
	repl_free(r);
}

/* ---- tools and skills (kind "tool") ----
 *
 * The test plays the controller: tool_ctl answers each request from a
 * small table (two servers, a tool that adds, one that echoes its
 * arguments, one that is slow, one that is not allowed, one whose reply is
 * not JSON) with an argument check done by hand, and keeps skills in
 * memory with their versions, as the store would. */

#define SKILLS_MAX 16

struct kept_skill {
	char *name, *source, *entry, *description, *signature, *inputs, *outputs;
	int version;
};

struct tool_ctl {
	pthread_mutex_t mu;
	int frames, requests, batched_frames;
	int now, most;             /* "calc.slow" calls in flight, at most */
	struct repl **r;           /* "calc.int" sends its worker SIGINT */
	bool allow_writes;
	char last[4096];           /* the last request's text */
	struct kept_skill skills[SKILLS_MAX];
	size_t n_skills;
};

static void tool_ctl_init(struct tool_ctl *t)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->mu, NULL);
	t->allow_writes = true;
}

static void tool_ctl_release(struct tool_ctl *t)
{
	for (size_t i = 0; i < t->n_skills; i++) {
		struct kept_skill *k = &t->skills[i];
		free(k->name), free(k->source), free(k->entry), free(k->description);
		free(k->signature), free(k->inputs), free(k->outputs);
	}
	pthread_mutex_destroy(&t->mu);
}

static char *tool_ok(cJSON *value)
{
	char *v = json_print(value), *out = xasprintf("{\"ok\":true,\"value\":%s}", v);
	cJSON_Delete(value);
	free(v);
	return out;
}

static char *tool_fail(const char *kind, const char *msg)
{
	cJSON *o = cJSON_CreateObject();
	char *out;
	json_add_bool(o, "ok", false);
	json_add_str(o, "error", msg);
	json_add_str(o, "kind", kind);
	out = json_print(o);
	cJSON_Delete(o);
	return out;
}

static cJSON *parse_text(const char *s)
{
	return s ? json_parse(s, strlen(s)) : cJSON_CreateNull();
}

/* The latest version of name (version 0), or that one; mu held. */
static struct kept_skill *skill_find(struct tool_ctl *t, const char *name, int version)
{
	struct kept_skill *best = NULL;
	for (size_t i = 0; i < t->n_skills; i++) {
		struct kept_skill *k = &t->skills[i];
		if (strcmp(k->name, name) == 0 && (version ? k->version == version
							   : !best || k->version > best->version))
			best = k;
	}
	return best;
}

static cJSON *skill_row(struct tool_ctl *t, const struct kept_skill *k)
{
	cJSON *o = cJSON_CreateObject();
	int n = 0;
	for (size_t i = 0; i < t->n_skills; i++)
		n += strcmp(t->skills[i].name, k->name) == 0;
	json_add_str(o, "name", k->name);
	json_add_num(o, "version", k->version);
	json_add_num(o, "versions", n);
	json_add_str(o, "description", k->description);
	json_add_str(o, "signature", k->signature);
	return o;
}

/* "calc.get-sum": exactly a and b, numbers, checked by hand as the
 * controller's schema check would. */
static char *call_sum(const cJSON *args)
{
	const cJSON *it, *a = json_get(args, "a"), *b = json_get(args, "b");
	char msg[300];
	cJSON_ArrayForEach(it, args)
	{
		if (strcmp(it->string, "a") != 0 && strcmp(it->string, "b") != 0) {
			snprintf(msg, sizeof(msg),
				 "unknown parameter '%s' (the parameters are: a (number, required), "
				 "b (number, required))",
				 it->string);
			return tool_fail("schema", msg);
		}
	}
	if (!a || !b)
		return tool_fail("schema", !a ? "parameter 'a' is required (number: First number)"
					      : "parameter 'b' is required (number: Second number)");
	if (!cJSON_IsNumber(a) || !cJSON_IsNumber(b))
		return tool_fail("schema", "parameter 'a' must be a number");
	return tool_ok(cJSON_CreateNumber(a->valuedouble + b->valuedouble));
}

static char *tool_do_call(struct tool_ctl *t, const char *name, const cJSON *args, bool *err)
{
	if (!cJSON_IsObject(args))
		return tool_fail("request", "arguments is not an object");
	if (strcmp(name, "calc.get-sum") == 0)
		return call_sum(args);
	if (strcmp(name, "calc.echo") == 0)
		return tool_ok(cJSON_Duplicate(args, true));
	if (strcmp(name, "calc.slow") == 0) {
		pthread_mutex_lock(&t->mu);
		if (++t->now > t->most)
			t->most = t->now;
		pthread_mutex_unlock(&t->mu);
		time_sleep_ns(300 * MS);
		pthread_mutex_lock(&t->mu);
		t->now--;
		pthread_mutex_unlock(&t->mu);
		return tool_ok(cJSON_CreateString("slow"));
	}
	if (strcmp(name, "calc.int") == 0) {
		kill(worker_pid(*t->r), SIGINT); /* while it waits for this reply */
		time_sleep_ns(50 * MS);
		return tool_ok(cJSON_CreateString("int"));
	}
	if (strcmp(name, "fs.write") == 0)
		return tool_fail("policy", "fs.write is not read-only (its annotations do not say "
					   "readOnlyHint); allow it with --allow-tools fs.write");
	if (strcmp(name, "calc.garbage") == 0) {
		*err = true;
		return xstrdup("Error: the tool server answered garbage <html>");
	}
	return tool_fail("notfound", "no tool 'calc.nope'; did you mean 'calc.get-sum'?");
}

static char *skill_save(struct tool_ctl *t, const cJSON *q)
{
	const char *name = json_str(q, "name"), *src = json_str(q, "source");
	struct kept_skill *last, *k;
	cJSON *v;
	if (!t->allow_writes)
		return tool_fail("skill", "saving skills is not allowed here: start rlm with "
					  "--allow-skill-writes");
	if (!name || !src || !json_str(q, "entry") || !json_str(q, "description") ||
	    !json_str(q, "signature") || !cJSON_IsObject(json_get(q, "inputs")) ||
	    !json_get(q, "outputs") || t->n_skills == SKILLS_MAX)
		return tool_fail("request", "a skill_save without its members");
	last = skill_find(t, name, 0);
	v = cJSON_CreateObject();
	json_add_str(v, "name", name);
	if (last && strcmp(last->source, src) == 0) {
		json_add_num(v, "version", last->version);
		json_add_bool(v, "unchanged", true);
		return tool_ok(v);
	}
	k = &t->skills[t->n_skills++];
	k->name = xstrdup(name);
	k->source = xstrdup(src);
	k->entry = xstrdup(json_str(q, "entry"));
	k->description = xstrdup(json_str(q, "description"));
	k->signature = xstrdup(json_str(q, "signature"));
	k->inputs = json_print(json_get(q, "inputs"));
	k->outputs = json_print(json_get(q, "outputs"));
	k->version = last ? last->version + 1 : 1;
	json_add_num(v, "version", k->version);
	json_add_str(v, "digest", "d");
	json_add_bool(v, "unchanged", false);
	return tool_ok(v);
}

/* One request; mu held (but for the slow tool). */
static char *tool_answer(struct tool_ctl *t, const char *req, bool *err)
{
	cJSON *q = json_parse(req, strlen(req)), *v;
	const char *op = json_str(q, "op");
	char *out;
	struct kept_skill *k;
	char name[128];
	int version = 0;
	if (!op) {
		out = tool_fail("request", "a request without \"op\"");
	} else if (strcmp(op, "servers") == 0) {
		out = tool_ok(parse_text("[{\"name\":\"calc\",\"description\":\"arithmetic\","
					 "\"tools\":4,\"error\":null},{\"name\":\"fs\","
					 "\"description\":\"files\",\"tools\":1,\"error\":null}]"));
	} else if (strcmp(op, "search") == 0) {
		out = tool_ok(parse_text(
		    strstr(json_str(q, "query"), "add")
			? "[{\"name\":\"calc.get-sum\",\"description\":\"Adds two numbers\","
			  "\"score\":4.5}]"
			: "[]"));
	} else if (strcmp(op, "info") == 0) {
		out = strcmp(json_str(q, "name"), "calc.get-sum") != 0
			  ? tool_fail("notfound", "no tool named that")
			  : tool_ok(parse_text(
				"{\"name\":\"calc.get-sum\",\"server\":\"calc\",\"tool\":\"get-sum\","
				"\"input_schema\":{\"type\":\"object\",\"properties\":{\"a\":{"
				"\"type\":\"number\"},\"b\":{\"type\":\"number\"}},\"required\":["
				"\"a\",\"b\"]},\"output_schema\":null,\"parameters\":{\"required\":[{"
				"\"name\":\"a\",\"type\":\"number\"},{\"name\":\"b\",\"type\":"
				"\"number\"}],\"optional\":[]},\"read_only\":true,\"allowed\":true}"));
	} else if (strcmp(op, "call") == 0) {
		const char *tn = json_str(q, "name");
		bool slow = tn && strcmp(tn, "calc.slow") == 0;
		if (slow)
			pthread_mutex_unlock(&t->mu);
		out = tool_do_call(t, tn ? tn : "", json_get(q, "arguments"), err);
		if (slow)
			pthread_mutex_lock(&t->mu);
	} else if (strcmp(op, "skills") == 0) {
		v = cJSON_CreateArray();
		for (size_t i = 0; i < t->n_skills; i++)
			if (skill_find(t, t->skills[i].name, 0) == &t->skills[i])
				json_add(v, NULL, skill_row(t, &t->skills[i]));
		out = tool_ok(v);
	} else if (strcmp(op, "skill_search") == 0) {
		v = cJSON_CreateArray();
		for (size_t i = 0; i < t->n_skills; i++) {
			k = &t->skills[i];
			if (skill_find(t, k->name, 0) == k &&
			    strstr(k->description, json_str(q, "query"))) {
				cJSON *row = skill_row(t, k);
				json_add_num(row, "score", 1);
				json_add(v, NULL, row);
			}
		}
		out = tool_ok(v);
	} else if (strcmp(op, "skill_info") == 0 || strcmp(op, "skill_load") == 0) {
		snprintf(name, sizeof(name), "%s", json_str(q, "name"));
		if (strchr(name, '@'))
			version = atoi(strchr(name, '@') + 1), *strchr(name, '@') = '\0';
		if (cJSON_IsNumber(json_get(q, "version")))
			version = (int)json_int(q, "version", 0);
		if (!(k = skill_find(t, name, version))) {
			out = tool_fail("notfound", "no skill of that name and version");
		} else {
			v = skill_row(t, k);
			json_add(v, "inputs", parse_text(k->inputs));
			json_add(v, "outputs", parse_text(k->outputs));
			json_add_str(v, "entry", k->entry);
			json_add_str(v, "digest", "d");
			if (op[6] == 'l')
				json_add_str(v, "source", k->source);
			out = tool_ok(v);
		}
	} else if (strcmp(op, "skill_save") == 0) {
		out = skill_save(t, q);
	} else {
		out = tool_fail("request", "an unknown op");
	}
	cJSON_Delete(q);
	return out;
}

static void tool_call(void *arg, const struct repl_call *c, char **texts, bool *errors)
{
	struct tool_ctl *t = arg;
	CHECK(c->tool && !c->rlm && !c->contexts && !c->model);
	pthread_mutex_lock(&t->mu);
	t->frames++;
	t->batched_frames += c->batched;
	for (size_t i = 0; i < c->n; i++) {
		t->requests++;
		snprintf(t->last, sizeof(t->last), "%s", c->prompts[i]);
		texts[i] = tool_answer(t, c->prompts[i], &errors[i]);
		errors[i] = errors[i] || strncmp(texts[i], "{\"ok\":false", 11) == 0;
	}
	pthread_mutex_unlock(&t->mu);
}

static struct repl *start_tools(struct repl_cfg *cfg, struct tool_ctl *t)
{
	cfg_init(cfg);
	cfg->on_call = tool_call;
	cfg->call_arg = t;
	cfg->parallel_calls = true;
	return start(cfg);
}

TEST(tool_helpers_reach_the_controller)
{
	struct repl_cfg cfg;
	struct tool_ctl t;
	struct repl *r;
	struct repl_result res;
	tool_ctl_init(&t);
	r = start_tools(&cfg, &t);
	expect(r, "[s['name'] + ':' + str(s['tools']) for s in list_tool_servers()]",
	       "['calc:4', 'fs:1']\n");
	CHECK_STR(t.last, "{\"op\":\"servers\"}");
	expect(r, "search_tools('add two numbers')[0]['name']", "'calc.get-sum'\n");
	CHECK_STR(t.last, "{\"op\":\"search\",\"query\":\"add two numbers\",\"server\":null,"
			  "\"limit\":10}");
	expect(r, "search_tools('zzz', server='calc', limit=3)", "[]\n");
	CHECK_STR(t.last, "{\"op\":\"search\",\"query\":\"zzz\",\"server\":\"calc\",\"limit\":3}");
	expect(r, "info = get_tool_info('calc.get-sum')\n"
		  "[p['name'] for p in info['parameters']['required']], info['allowed']",
	       "(['a', 'b'], True)\n");
	run(r, "call_tool('calc.get-sum', a=2, b=3.5)", &res);
	CHECK_STR(res.output, "5.5\n");
	CHECK_INT(res.calls, 1);
	repl_result_release(&res);
	CHECK_STR(t.last, "{\"op\":\"call\",\"name\":\"calc.get-sum\",\"arguments\":{\"a\":2,"
			  "\"b\":3.5}}");
	/* A dict for names that are not Python's; "name" is an argument too. */
	expect(r, "call_tool('calc.echo', {'a-b': [1, None], 'ü': 'x'}, name='n')",
	       "{'a-b': [1, None], 'ü': 'x', 'name': 'n'}\n");
	expect(r, "call_tool('calc.echo')", "{}\n");
	/* Failures: ToolError (a RuntimeError) with the controller's words and kind. */
	expect(r,
	       "try:\n    call_tool('calc.get-sum', a=1, c=2)\n"
	       "except ToolError as e:\n    print(e.kind, isinstance(e, RuntimeError), e)\n",
	       "schema True unknown parameter 'c' (the parameters are: a (number, required), b "
	       "(number, required))\n");
	expect(r,
	       "try:\n    call_tool('calc.get-sum', a=1)\n"
	       "except ToolError as e:\n    print(e.kind, e)\n",
	       "schema parameter 'b' is required (number: Second number)\n");
	run(r, "call_tool('fs.write', path='/x', content='y')", &res);
	CHECK(res.error);
	CHECK_CONTAINS(res.output, "ToolError: fs.write is not read-only");
	CHECK(!strstr(res.output, "<string>"));
	repl_result_release(&res);
	expect(r, "try:\n    get_tool_info('calc.nope')\nexcept ToolError as e:\n    print(e.kind)\n",
	       "notfound\n");
	/* A reply that is not the reply object: its text, kind "unavailable". */
	expect(r, "try:\n    call_tool('calc.garbage')\nexcept ToolError as e:\n    print(e.kind, e)\n",
	       "unavailable Error: the tool server answered garbage <html>\n");
	/* Checked in the worker, nothing sent. */
	t.requests = 0;
	run(r, "call_tool('calc.echo', x={1, 2})", &res);
	CHECK_CONTAINS(res.output, "TypeError: call_tool(): the arguments must be JSON values");
	repl_result_release(&res);
	run(r, "call_tool('calc.echo', [1], {})", &res);
	CHECK_CONTAINS(res.output, "TypeError: call_tool() takes the arguments as keywords, or as "
				   "one dict after the name, not 2 positional values");
	repl_result_release(&res);
	run(r, "call_tool('calc.echo', s='a\\0b')", &res);
	CHECK_CONTAINS(res.output, "ValueError: call_tool(): a str in the arguments holds a NUL "
				   "character");
	repl_result_release(&res);
	run(r, "search_tools(3)", &res);
	CHECK_CONTAINS(res.output, "TypeError: search_tools(): query must be a str, not int");
	repl_result_release(&res);
	run(r, "search_tools('a', limit=0)", &res);
	CHECK_CONTAINS(res.output, "ValueError: search_tools(): limit must be from 1 to 100");
	repl_result_release(&res);
	CHECK_INT(t.requests, 0);
	expect(r, "call_tool('calc.echo', s='a\\\\u0000b')", "{'s': 'a\\\\u0000b'}\n");
	/* The helpers are the runtime's: not variables, and restored. */
	run(r, "call_tool = 1\nx = 2", &res);
	CHECK_STR(res.made, "x: int");
	for (size_t i = 0; i < res.n_vars; i++)
		CHECK(strcmp(res.vars[i], "call_tool") != 0 && strcmp(res.vars[i], "ToolError") != 0);
	repl_result_release(&res);
	expect(r, "call_tool('calc.get-sum', a=1, b=1)", "2\n");
	expect(r, "'save_skill' in SHOW_VARS()", "False\n");
	repl_free(r);
	tool_ctl_release(&t);
}

TEST(tool_calls_batched_in_order_with_errors_in_place)
{
	struct repl_cfg cfg;
	struct tool_ctl t;
	struct repl *r;
	struct repl_result res;
	tool_ctl_init(&t);
	r = start_tools(&cfg, &t);
	run(r,
	    "out = call_tools_batched([('calc.get-sum', {'a': 1, 'b': 2}), ('calc.get-sum', "
	    "{'a': 1}), ('calc.nope', None), ['calc.echo', {'k': 'v'}]])\n"
	    "[(type(o).__name__, getattr(o, 'kind', o)) for o in out]",
	    &res);
	CHECK_STR(res.output, "[('int', 3), ('ToolError', 'schema'), ('ToolError', 'notfound'), "
			      "('dict', {'k': 'v'})]\n");
	CHECK_INT(res.calls, 4);
	repl_result_release(&res);
	CHECK_INT(t.frames, 1);
	CHECK_INT(t.batched_frames, 1);
	CHECK_INT(t.requests, 4);
	expect(r, "call_tools_batched([])", "[]\n");
	expect(r, "call_tools_batched([('calc.get-sum', {'a': 1, 'b': 1})])", "[2]\n");
	CHECK_INT(t.frames, 2);
	run(r, "call_tools_batched([('calc.echo',)])", &res);
	CHECK_CONTAINS(res.output, "TypeError: call_tools_batched(): calls[0] must be a (name, "
				   "arguments) pair");
	repl_result_release(&res);
	run(r, "call_tools_batched('calc.echo')", &res);
	CHECK_CONTAINS(res.output, "TypeError: call_tools_batched() takes a list of (name, "
				   "arguments) pairs, not str");
	repl_result_release(&res);
	CHECK_INT(t.frames, 2);
	repl_free(r);
	tool_ctl_release(&t);
}

TEST(tool_calls_from_threads_are_out_together)
{
	struct repl_cfg cfg;
	struct tool_ctl t;
	struct repl *r;
	struct repl_result res;
	int64_t t0;
	tool_ctl_init(&t);
	r = start_tools(&cfg, &t);
	t0 = time_now_ns();
	run(r,
	    "import threading\nout = [None] * 4\n"
	    "def w(i):\n    out[i] = call_tool('calc.slow', i=i)\n"
	    "ts = [threading.Thread(target=w, args=(i,)) for i in range(4)]\n"
	    "[t.start() for t in ts]; [t.join() for t in ts]\nout",
	    &res);
	CHECK_STR(res.output, "['slow', 'slow', 'slow', 'slow']\n");
	CHECK_INT(res.calls, 4);
	repl_result_release(&res);
	CHECK_MSG(t.most >= 2, "at most %d tool calls were out at once", t.most);
	CHECK(time_now_ns() - t0 < 1100 * MS * slow_factor());
	/* A batch is answered in parallel by the controller, not here: one frame. */
	expect(r, "call_tools_batched([('calc.slow', {})] * 3)", "['slow', 'slow', 'slow']\n");
	repl_free(r);
	tool_ctl_release(&t);
}

/* A SIGINT while a tool request is out is raised once its reply is in:
 * the frame is not torn, the worker lives on. */
TEST(sigint_during_a_tool_call_is_deferred)
{
	struct repl_cfg cfg;
	struct tool_ctl t;
	struct repl *r;
	struct repl_result res;
	tool_ctl_init(&t);
	t.r = &r;
	r = start_tools(&cfg, &t);
	run(r, "got = call_tool('calc.int')\nafter = 1", &res);
	CHECK(res.error && res.interrupted && !res.restarted);
	CHECK_CONTAINS(res.output, "KeyboardInterrupt");
	repl_result_release(&res);
	expect(r, "'got' in globals(), call_tool('calc.get-sum', a=1, b=2)", "(False, 3)\n");
	repl_free(r);
	tool_ctl_release(&t);
}

TEST(tool_helpers_without_a_handler_raise_tool_error)
{
	struct repl *r = start_default();
	expect(r, "try:\n    list_tool_servers()\nexcept ToolError as e:\n    print(e.kind, e)\n",
	       "unavailable Error: sub-calls are not available in this REPL\n");
	expect(r, "[type(x).__name__ for x in call_tools_batched([('a.b', {}), ('a.c', {})])]",
	       "['ToolError', 'ToolError']\n");
	repl_free(r);
}

TEST(tool_requests_count_against_the_caps)
{
	struct repl_cfg cfg;
	struct tool_ctl t;
	struct repl *r;
	struct repl_result res;
	tool_ctl_init(&t);
	cfg_init(&cfg);
	cfg.max_calls_exec = 3;
	cfg.max_calls_total = 5;
	cfg.on_call = tool_call;
	cfg.call_arg = &t;
	r = start(&cfg);
	run(r, "call_tools_batched([('calc.echo', {})] * 4)", &res);
	CHECK(res.error && !res.restarted);
	CHECK_CONTAINS(res.output, "ValueError: call_tools_batched: 4 more calls would pass the "
				   "limit of 3 per block (0 sent so far)");
	repl_result_release(&res);
	run(r, "for i in range(4):\n    call_tool('calc.echo', i=i)\n", &res);
	CHECK(res.error && !res.restarted);
	CHECK_CONTAINS(res.output, "ValueError: call_tool: 1 more calls would pass the limit of 3 "
				   "per block (3 sent so far)");
	repl_result_release(&res);
	CHECK_INT(t.requests, 3);
	expect(r, "list_tool_servers()[1]['name'], list_skills()", "('fs', [])\n");
	/* A worker that bypasses the runtime's count is killed. */
	run(r, "call_tool.__globals__['_st'].calls = -100\n"
	       "call_tools_batched([('calc.echo', {})] * 2)",
	    &res);
	CHECK(res.restarted);
	CHECK_CONTAINS(res.output, "more than 5 sub-calls (prompts) in this REPL");
	repl_result_release(&res);
	CHECK_INT(t.requests, 5);
	repl_free(r);
	tool_ctl_release(&t);
}

/* Tool requests share the frame cap's rules: a batch over it goes as
 * several frames, answered as one list in order; one request that cannot
 * fit says so and sends nothing. */
TEST(tool_batches_over_the_frame_cap_are_split)
{
	struct repl_cfg cfg;
	struct tool_ctl t;
	struct repl *r;
	struct repl_result res;
	tool_ctl_init(&t);
	cfg_init(&cfg);
	cfg.max_frame = 4096;
	cfg.on_call = tool_call;
	cfg.call_arg = &t;
	r = start(&cfg);
	expect(r,
	       "out = call_tools_batched([('calc.echo', {'i': i, 'pad': 'é' * 700}) for i in "
	       "range(5)])\n[o['i'] for o in out], all(len(o['pad']) == 700 for o in out)",
	       "([0, 1, 2, 3, 4], True)\n");
	CHECK_MSG(t.frames >= 3, "%d frames", t.frames);
	CHECK_INT(t.batched_frames, t.frames);
	CHECK_INT(t.requests, 5);
	run(r, "call_tool('calc.echo', pad='x' * 5000)", &res);
	CHECK(res.error && !res.restarted);
	CHECK_CONTAINS(res.output, "ValueError: call_tool: the request is 5.1 kB, over the 4 KiB "
				   "one call can carry: pass less data in its arguments");
	repl_result_release(&res);
	run(r, "call_tools_batched([('calc.echo', {}), ('calc.echo', {'pad': 'x' * 5000})])", &res);
	CHECK_CONTAINS(res.output, "ValueError: call_tools_batched: the request for item 1 is");
	repl_result_release(&res);
	CHECK_INT(t.requests, 5);
	repl_free(r);
	tool_ctl_release(&t);
}

TEST(skills_are_saved_listed_and_loaded_by_version)
{
	struct repl_cfg cfg;
	struct tool_ctl t;
	struct repl *r;
	struct repl_result res;
	int before;
	tool_ctl_init(&t);
	r = start_tools(&cfg, &t);
	/* From a function an earlier exec defined: its def, decorators and all. */
	expect(r, "x = 1\n\nclass K:\n    pass\n\ndef add(a: int, b: int = 1) -> int:\n"
		  "    '''Adds.'''\n    return a + b  # sum\n\ny = 2\n",
	       "");
	expect(r, "save_skill('math.add', add, 'add two integers')", "'math.add@1'\n");
	CHECK_INT(t.n_skills, 1);
	CHECK_STR(t.skills[0].source, "def add(a: int, b: int = 1) -> int:\n    '''Adds.'''\n"
				      "    return a + b  # sum\n");
	CHECK_STR(t.skills[0].entry, "add");
	CHECK_STR(t.skills[0].signature, "add(a: int, b: int=1) -> int");
	CHECK_STR(t.skills[0].inputs, "{\"a\":{\"type\":\"integer\",\"required\":true},\"b\":{"
				      "\"type\":\"integer\",\"required\":false,\"default\":1}}");
	CHECK_STR(t.skills[0].outputs, "{\"type\":\"integer\"}");
	CHECK_STR(t.skills[0].description, "add two integers");
	/* The same source again: the same version. */
	expect(r, "save_skill('math.add', add, 'add two integers')", "'math.add@1'\n");
	CHECK_INT(t.n_skills, 1);
	/* From a str: version 2, with declared inputs. */
	expect(r,
	       "save_skill('math.add', 'def add(a, b):\\n    return a + b + 100\\n', 'add, plus "
	       "100', inputs={'a': 'int', 'b': {'type': float, 'description': 'the second'}})",
	       "'math.add@2'\n");
	CHECK_STR(t.skills[1].inputs, "{\"a\":{\"type\":\"integer\",\"required\":true},\"b\":{"
				      "\"type\":\"number\",\"description\":\"the second\","
				      "\"required\":true}}");
	CHECK_STR(t.skills[1].outputs, "null");
	/* A nested def, indented: dedented; a str with a helper function and an
	 * import, the entry being the function named like the skill. */
	expect(r, "if True:\n    def twice(s: str):\n        return s * 2\n", "");
	expect(r, "save_skill('twice', twice, 'say it twice')", "'twice@1'\n");
	CHECK_STR(t.skills[2].source, "def twice(s: str):\n    return s * 2\n");
	expect(r,
	       "save_skill('words', '''import re\n\ndef _split(t):\n    return re.findall(r\"\\\\w+\", "
	       "t)\n\ndef words(text: str) -> list:\n    return _split(text)\n''', 'the words of a "
	       "text')",
	       "'words@1'\n");
	expect(r, "load_skill('words')('héllo, wörld 42')", "['héllo', 'wörld', '42']\n");
	/* Discovery. */
	expect(r, "[(s['name'], s['version'], s['versions']) for s in list_skills()]",
	       "[('math.add', 2, 2), ('twice', 1, 1), ('words', 1, 1)]\n");
	expect(r, "[s['name'] for s in search_skills('add')]", "['math.add']\n");
	expect(r, "i = get_skill_info('math.add@1')\ni['signature'], i['inputs']['b']",
	       "('add(a: int, b: int=1) -> int', {'type': 'integer', 'required': False, "
	       "'default': 1})\n");
	/* Loading: the latest, an older version, by "name@V". */
	expect(r, "load_skill('math.add')(1, 2)", "103\n");
	expect(r, "load_skill('math.add', 1)(1)", "2\n");
	expect(r, "load_skill('math.add@1')(a=5, b=5)", "10\n");
	expect(r, "f = load_skill('math.add', version=1)\nf", "<skill math.add@1: add(a: "
							    "integer, required, b: integer)>\n");
	run(r, "g = f", &res);
	CHECK_STR(res.made, "g: skill");
	repl_result_release(&res);
	/* Cached per version: no request for a version already loaded. */
	before = t.requests;
	expect(r, "load_skill('math.add', 1) is f, f.skill, f.__doc__", "(True, 'math.add@1', "
									 "'Adds.')\n");
	CHECK_INT(t.requests, before);
	/* The inputs are checked at call time. */
	run(r, "f()", &res);
	CHECK_CONTAINS(res.output, "TypeError: skill math.add@1: missing required input 'a' "
				   "(integer)");
	repl_result_release(&res);
	run(r, "f(1, c=2)", &res);
	CHECK_CONTAINS(res.output, "TypeError: skill math.add@1: unknown input 'c' (the inputs "
				   "are: a (integer, required), b (integer))");
	repl_result_release(&res);
	run(r, "f('1')", &res);
	CHECK_CONTAINS(res.output, "TypeError: skill math.add@1: input 'a' must be integer, not str");
	repl_result_release(&res);
	run(r, "f(True)", &res);
	CHECK_CONTAINS(res.output, "input 'a' must be integer, not bool");
	repl_result_release(&res);
	run(r, "f(1, 2, 3)", &res);
	CHECK_CONTAINS(res.output, "TypeError: skill math.add@1 takes 2 positional inputs but 3 "
				   "were given");
	repl_result_release(&res);
	expect(r, "load_skill('math.add', 2)(1, b=0.5)", "101.5\n");
	/* The skill's namespace: the helpers, not the REPL's variables. */
	expect(r,
	       "save_skill('peek', 'def peek():\\n    g = globals()\\n    return [k in g for k in "
	       "(\"context\", \"x\", \"llm_query\", \"call_tool\", \"load_skill\")]\\n', 'peek')\n"
	       "load_skill('peek')()",
	       "[False, False, True, True, True]\n");
	/* Not found, and a refusal by the controller, are ToolErrors. */
	expect(r, "try:\n    load_skill('nope')\nexcept ToolError as e:\n    print(e.kind)\n",
	       "notfound\n");
	t.allow_writes = false;
	run(r, "save_skill('math.add', 'def add(a):\\n    return a\\n', 'one')", &res);
	CHECK(res.error);
	CHECK_CONTAINS(res.output, "ToolError: saving skills is not allowed here: start rlm with "
				   "--allow-skill-writes");
	repl_result_release(&res);
	repl_free(r);
	tool_ctl_release(&t);
}

/* save_skill checks in the worker, before anything is sent. */
TEST(skill_declarations_are_checked_before_sending)
{
	static const struct {
		const char *code, *want;
	} cases[] = {
	    {"save_skill('add', add, 'x', inputs={'a': 'int'})",
	     "ValueError: save_skill(): parameter 'b' of add(a, b) is not in inputs"},
	    {"save_skill('add', add, 'x', inputs={'a': 'int', 'b': 'int', 'c': 'str'})",
	     "ValueError: save_skill(): inputs names 'c', which is not a parameter of add(a, b)"},
	    {"save_skill('add', add, 'x', inputs={'a': 'integr', 'b': 'int'})",
	     "ValueError: save_skill(): inputs['a']: 'integr' is not a type (the types are: integer "
	     "(int)"},
	    {"save_skill('add', add, 'x', inputs=['a', 'b'])",
	     "TypeError: save_skill(): inputs must be a dict {parameter: type} or None, not list"},
	    {"save_skill('add', add, 'x', inputs={'a': 'int', 'b': {'type': 'int', 'description': "
	     "3}})",
	     "TypeError: save_skill(): inputs['b']: \"description\" must be a str, not int"},
	    {"save_skill('add', add, 'x', inputs={'a': 'int', 'b': {'type': 'int', 'enum': {1}}})",
	     "TypeError: save_skill(): the arguments must be JSON values"},
	    {"save_skill('bad name', add, 'x')",
	     "ValueError: save_skill(): 'bad name' is not a skill name"},
	    {"save_skill('9lives', add, 'x')", "is not a skill name"},
	    {"save_skill('a' * 65, add, 'x')", "is not a skill name"},
	    {"save_skill('add', add, '  ')", "ValueError: save_skill(): the description is empty"},
	    {"save_skill('add', add, None)",
	     "TypeError: save_skill(): description must be a str, not NoneType"},
	    {"save_skill('add', lambda a: a, 'x')", "TypeError: save_skill(): a lambda has no name"},
	    {"save_skill('add', 42, 'x')",
	     "TypeError: save_skill() takes a function (defined with def) or its source as a str, "
	     "not int"},
	    {"save_skill('add', len, 'x')", "takes a function (defined with def)"},
	    {"save_skill('add', outer(), 'x')",
	     "ValueError: save_skill(): inner() uses k of the function it was defined in"},
	    {"save_skill('add', uses_re, 'x')",
	     "ValueError: save_skill(): uses_re(t) uses re (a module in the REPL), which the skill "
	     "does not define"},
	    {"save_skill('add', 'def f(:\\n  pass', 'x')",
	     "ValueError: save_skill(): the source does not compile: "},
	    {"save_skill('add', 'def f():\\n    return 1\\ndef g():\\n    return 2\\n', 'x')",
	     "ValueError: save_skill(): the source defines f(), g(): it must define one top-level "
	     "function, or one called 'add'"},
	    {"save_skill('add', 'x = 1\\n', 'x')", "the source defines no function"},
	    {"save_skill('add', 'def f(*a):\\n    return a\\n', 'x')",
	     "ValueError: save_skill(): f() takes *a or **kwargs: a skill takes named inputs only"},
	    {"save_skill('add', 'async def f():\\n    pass\\n', 'x')", "f() is async"},
	    {"save_skill('add', 'def f():\\n    return context\\n', 'x')",
	     "f() uses context (a str in the REPL), which the skill does not define"},
	};
	struct repl_cfg cfg;
	struct tool_ctl t;
	struct repl *r;
	struct repl_result res;
	tool_ctl_init(&t);
	r = start_tools(&cfg, &t);
	expect(r, "import re\ndef add(a, b):\n    return a + b\n"
		  "def outer():\n    k = 1\n    def inner(a):\n        return a + k\n    return inner\n"
		  "def uses_re(t):\n    return re.findall('x', t)\n",
	       "");
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		run(r, cases[i].code, &res);
		CHECK_MSG(res.error, "%s: no error: %s", cases[i].code, res.output);
		CHECK_CONTAINS(res.output, cases[i].want);
		repl_result_release(&res);
	}
	CHECK_INT(t.requests, 0);
	/* A function that exec() made has no source kept. */
	run(r, "exec('def made(a):\\n    return a\\n')\nsave_skill('made', made, 'x')", &res);
	CHECK_CONTAINS(res.output, "ValueError: save_skill(): the source of made() is not known");
	repl_result_release(&res);
	CHECK_INT(t.requests, 0);
	repl_free(r);
	tool_ctl_release(&t);
}

/* Sources not shaped like ours: CRLF line ends, tabs, a non-ASCII entry,
 * a 20,000-character line; and a function saved in the block that
 * defines it, decorated, inside a class. */
TEST(skill_sources_of_other_shapes)
{
	struct repl_cfg cfg;
	struct tool_ctl t;
	struct repl *r;
	tool_ctl_init(&t);
	r = start_tools(&cfg, &t);
	expect(r,
	       "src = 'import math\\r\\n\\r\\ndef gr\\u00f6\\u00dfe(wert: float, "
	       "*, genau: bool = False) -> float:\\r\\n\\tlang = \"' + 'x' * 20000 + '\"\\r\\n"
	       "\\treturn round(math.sqrt(wert), 6 if genau else 2) + len(lang) * 0\\r\\n'\n"
	       "save_skill('groesse', src, 'the square root, rounded')",
	       "'groesse@1'\n");
	CHECK_CONTAINS(t.skills[0].source, "\r\n\treturn round(");
	CHECK_STR(t.skills[0].entry, "gr\u00f6\u00dfe");
	CHECK_STR(t.skills[0].inputs, "{\"wert\":{\"type\":\"number\",\"required\":true},"
				      "\"genau\":{\"type\":\"boolean\",\"required\":false,"
				      "\"default\":false}}");
	expect(r, "g = load_skill('groesse')\ng(2.0), g(wert=2, genau=True)",
	       "(1.41, 1.414214)\n");
	expect(r,
	       "class Tools:\n    @staticmethod\n    def inc(n: int) -> int:\n        return n + 1\n"
	       "save_skill('inc', Tools.inc, 'add one')",
	       "'inc@1'\n");
	expect(r,
	       "save_skill('text.count-words', 'def _h(t):\\n    return t.split()\\n\\n"
	       "def count_words(t: str) -> int:\\n    return len(_h(t))\\n', 'count words')\n"
	       "load_skill('text.count-words')('a b  c')",
	       "3\n");
	CHECK_STR(t.skills[2].entry, "count_words");
	CHECK_STR(t.skills[1].source, "def inc(n: int) -> int:\n    return n + 1\n");
	repl_free(r);
	tool_ctl_release(&t);
}

TEST(skills_call_skills)
{
	struct repl_cfg cfg;
	struct tool_ctl t;
	struct repl *r;
	struct repl_result res;
	tool_ctl_init(&t);
	r = start_tools(&cfg, &t);
	expect(r,
	       "save_skill('text.words', 'def words(text: str) -> list:\\n    return "
	       "text.split()\\n', 'split a text into words')",
	       "'text.words@1'\n");
	/* One loads the other at its top level, another inside its function. */
	expect(r,
	       "save_skill('text.count', '''words = load_skill(\"text.words\")\n\n"
	       "def count(text: str) -> int:\n    return len(words(text))\n''', 'count the words')",
	       "'text.count@1'\n");
	expect(r,
	       "def stats(text: str, top: int = 2) -> dict:\n"
	       "    n = load_skill('text.count')(text)\n"
	       "    w = load_skill('text.words', 1)(text=text)\n"
	       "    return {'n': n, 'first': w[:top]}\n",
	       "");
	expect(r, "save_skill('text.stats', stats, 'word statistics')", "'text.stats@1'\n");
	expect(r, "load_skill('text.stats')('a bb ccc dd', top=3)",
	       "{'n': 4, 'first': ['a', 'bb', 'ccc']}\n");
	/* A skill whose input check fails inside another: the inner's words. */
	run(r, "load_skill('text.stats')('x', top='2')", &res);
	CHECK_CONTAINS(res.output, "TypeError: skill text.stats@1: input 'top' must be integer, "
				   "not str");
	repl_result_release(&res);
	/* A skill that loads itself while it loads: a ToolError, not a hang. */
	expect(r, "save_skill('loop', 'me = load_skill(\"loop\")\\ndef loop():\\n    return 1\\n', "
		  "'loops')",
	       "'loop@1'\n");
	run(r, "load_skill('loop')", &res);
	CHECK(res.error && !res.restarted);
	CHECK_CONTAINS(res.output, "ToolError: load_skill('loop'): skill loop@1 loads itself while "
				   "it is being loaded (loop@1 -> loop@1)");
	repl_result_release(&res);
	repl_free(r);
	tool_ctl_release(&t);
}

TEST(skill_tracebacks_show_the_skills_lines)
{
	struct repl_cfg cfg;
	struct tool_ctl t;
	struct repl *r;
	struct repl_result res;
	tool_ctl_init(&t);
	r = start_tools(&cfg, &t);
	expect(r,
	       "save_skill('boom', 'def boom(x: int):\\n    y = x + 1\\n    return y / 0\\n', "
	       "'divide by zero')",
	       "'boom@1'\n");
	expect(r,
	       "save_skill('outer', 'def outer(x: int):\\n    b = load_skill(\"boom\")\\n"
	       "    return b(x)\\n', 'calls boom')",
	       "'outer@1'\n");
	run(r, "f = load_skill('outer')\nf(1)", &res);
	CHECK(res.error);
	CHECK_CONTAINS(res.output, "Traceback (most recent call last):\n"
				   "  File \"<repl>\", line 2, in <module>\n    f(1)\n"
				   "  File \"<skill outer@1>\", line 3, in outer\n    return b(x)\n"
				   "  File \"<skill boom@1>\", line 3, in boom\n    return y / 0\n"
				   "ZeroDivisionError: division by zero\n");
	CHECK(!strstr(res.output, "<string>"));
	repl_result_release(&res);
	/* A function of an earlier exec shows its line too. */
	expect(r, "def g():\n    return 1 / 0\n", "");
	run(r, "g()", &res);
	CHECK_CONTAINS(res.output, "  File \"<repl>\", line 2, in g\n    return 1 / 0\n");
	repl_result_release(&res);
	repl_free(r);
	tool_ctl_release(&t);
}

/* ---- the worker's process ---- */

TEST(environment_is_scrubbed)
{
	struct repl *r;
	struct repl_result res;
	struct repl_cfg cfg;
	setenv("OPENAI_API_KEY", "sk-secret", 1);
	setenv("PYTHONPATH", "/evil", 1);
	cfg_init(&cfg);
	/* Landlock denies /proc; its own (pidns) /proc has its environ. */
	cfg.sandbox.disable = 1u << REPL_L_LANDLOCK;
	r = start(&cfg);
	run(r, "import os\nprint(sorted(os.environ))", &res);
	CHECK_STR(res.output, "['GLIBC_TUNABLES', 'HOME', 'LANG', 'MALLOC_ARENA_MAX', 'PYTHONHASHSEED', "
			      "'TMPDIR']\n");
	repl_result_release(&res);
	expect(r, "os.getcwd() == os.environ['TMPDIR'], os.environ['HOME']",
	       "(True, '/nonexistent')\n");
	/* The environment the worker started with: the worker, not
	 * dumpable, cannot open its own /proc/self/environ; root can. */
	if (geteuid() == 0) {
		char path[64], env[8192];
		ssize_t n;
		int fd;
		snprintf(path, sizeof(path), "/proc/%d/environ", (int)worker_pid(r));
		fd = open(path, O_RDONLY);
		CHECK_MSG(fd >= 0, "%s: %s", path, strerror(errno));
		n = read(fd, env, sizeof(env) - 1);
		close(fd);
		CHECK(n > 0);
		env[n] = 0;
		for (ssize_t i = 0; i < n; i++)
			env[i] = env[i] ? env[i] : '\n';
		CHECK_CONTAINS(env, "HOME=/nonexistent");
		CHECK_MSG(!strstr(env, "sk-secret"), "the worker's environ: %s", env);
	}
	repl_free(r);
}

TEST(only_fds_0_to_5_are_open)
{
	struct repl *r;
	int stray = open("/dev/null", O_RDONLY); /* not O_CLOEXEC: must still not leak */
	CHECK(stray >= 0);
	r = start_default();
	/* No /proc under Landlock: ask the fds themselves. */
	expect(r,
	       "import os, fcntl\n"
	       "def is_open(f):\n"
	       "    try:\n"
	       "        os.fstat(f)\n"
	       "        return True\n"
	       "    except OSError:\n"
	       "        return False\n"
	       "[f for f in range(4096) if is_open(f)]",
	       "[0, 1, 2, 3, 4, 5]\n");
	/* fd 0 reads EOF like /dev/null, but is a pipe: never a host inode
	 * (issue 19, finding 8). */
	expect(r, "import stat\nstat.S_ISFIFO(os.fstat(0).st_mode), os.read(0, 9)",
	       "(True, b'')\n");
	expect(r, "fcntl.fcntl(5, fcntl.F_GET_SEALS) & fcntl.F_SEAL_WRITE != 0", "True\n");
	expect(r, "os.getsid(0) == os.getpid()", "True\n");
	close(stray);
	repl_free(r);
}

TEST(free_leaves_no_process_and_no_scratch)
{
	struct repl *r = start_default();
	struct repl_result res;
	struct stat sb;
	char dir[512];
	pid_t pid = worker_pid(r);
	run(r,
	    "import os\nos.makedirs('a/b/c')\nopen('a/b/c/f', 'w').write('x')\n"
	    "os.symlink('/etc', 'link')\nos.chmod('a/b', 0)\nprint(os.getcwd())",
	    &res);
	snprintf(dir, sizeof(dir), "%.*s", (int)res.len - 1, res.output);
	repl_result_release(&res);
	CHECK(stat(dir, &sb) == 0);
	repl_free(r);
	CHECK(kill(pid, 0) < 0 && errno == ESRCH);
	CHECK(stat(dir, &sb) < 0 && errno == ENOENT);
	CHECK(stat("/etc/passwd", &sb) == 0);
}

/* A tree of any depth goes, files at the bottom included: 200 levels,
 * where removal used to stop at 64 and leave them on disk. The worker's
 * tree is too deep for the quota, which empties the directory; one made
 * behind the quota's back goes with repl_free. */
TEST(deep_scratch_trees_are_removed)
{
	struct repl_cfg cfg;
	struct repl_sandbox_status st;
	struct repl_result res;
	struct repl *r;
	struct stat sb;
	char dir[512], root[512];
	int fd;
	cfg_init(&cfg);
	cfg.sandbox.disable = 1u << REPL_L_USERNS; /* a plain directory on disk */
	r = start_status(&cfg, &st);
	CHECK(!st.scratch_tmpfs);
	output_line(r, "import os\nprint(os.getcwd())", dir, sizeof(dir));
	snprintf(root, sizeof(root), "%.*s", (int)(strrchr(dir, '/') - dir), dir);
	run(r,
	    "for i in range(200):\n"
	    "    os.mkdir('d')\n"
	    "    os.chdir('d')\n"
	    "open('bottom', 'wb').write(b'x' * 100000)\n"
	    "os.mkdir('ro')\n"
	    "os.chmod('.', 0o500)\n"
	    "os.chdir(os.environ['TMPDIR'])",
	    &res);
	if (res.restarted)
		expect(r, "import os\nos.listdir('.')", "[]\n");
	repl_result_release(&res);

	fd = open(dir, O_RDONLY | O_DIRECTORY);
	for (int i = 0; fd >= 0 && i < 200; i++) {
		int sub;
		CHECK(mkdirat(fd, "d", 0700) == 0);
		sub = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		close(fd);
		fd = sub;
	}
	CHECK(fd >= 0);
	CHECK(close(openat(fd, "bottom", O_WRONLY | O_CREAT, 0600)) == 0);
	close(fd);
	repl_free(r);
	CHECK_MSG(stat(root, &sb) < 0 && errno == ENOENT, "'%s' is still there", root);
}

/* A controller killed by SIGKILL leaves its scratch directory behind; the
 * next one to start in the same base removes it, and only it: not the
 * directory of a live controller, not one of another name. */
TEST(stale_scratch_directories_are_swept)
{
	char base[] = "/tmp/rlm-test-sweep-XXXXXX", dead[600], live[600], other[600], f[700];
	const char *old = getenv("TMPDIR");
	char *saved = old ? xstrdup(old) : NULL;
	struct repl *r;
	struct stat sb;
	pid_t pid;
	int st;
	CHECK(mkdtemp(base) != NULL);
	pid = fork();
	if (pid == 0)
		_exit(0);
	CHECK(waitpid(pid, &st, 0) == pid);
	snprintf(dead, sizeof(dead), "%s/rlm-repl-%ld-abcdef", base, (long)pid);
	snprintf(live, sizeof(live), "%s/rlm-repl-%ld-abcdef", base, (long)getppid());
	snprintf(other, sizeof(other), "%s/rlm-repl-abcdef", base);
	CHECK(mkdir(dead, 0700) == 0 && mkdir(live, 0700) == 0 && mkdir(other, 0700) == 0);
	snprintf(f, sizeof(f), "%s/sub", dead);
	CHECK(mkdir(f, 0700) == 0);
	snprintf(f, sizeof(f), "%s/sub/file", dead);
	CHECK(close(open(f, O_WRONLY | O_CREAT, 0600)) == 0);
	setenv("TMPDIR", base, 1);
	if (geteuid() == 0) {
		/* A worker as nobody cannot enter a 0700 base: a clear error. */
		struct repl_cfg cfg;
		struct rlm_err err = {0, ""};
		cfg_init(&cfg);
		r = NULL;
		CHECK(repl_start(&cfg, &r, &err) == RLM_ESANDBOX && r == NULL);
		CHECK_CONTAINS(err.msg, "is not searchable by others; set TMPDIR");
		CHECK(stat(dead, &sb) < 0 && errno == ENOENT); /* swept all the same */
	}
	CHECK(chmod(base, 0711) == 0);
	r = start_default();
	if (saved)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	free(saved);
	CHECK(stat(dead, &sb) < 0 && errno == ENOENT);
	CHECK(stat(live, &sb) == 0);
	CHECK(stat(other, &sb) == 0);
	repl_free(r);
	CHECK(rmdir(live) == 0 && rmdir(other) == 0 && rmdir(base) == 0);
}

/* As root without Landlock or a user namespace, file permissions are all
 * that holds the worker (nobody). Its scratch directory lies in one of
 * ours (0711): it cannot move the scratch away and leave a symlink to a
 * victim in its place for our cleanup to follow, nor list the directory
 * above it; a second worker, also nobody, cannot find the first's files. */
TEST(scratch_is_private_without_landlock)
{
	char victim[] = "/tmp/rlm-test-victim-XXXXXX", file[600], dir_a[512], code[2048];
	struct repl *a, *b;
	struct stat sb;
	if (geteuid() != 0)
		return; /* a worker of our own uid may do what we may */
	CHECK(mkdtemp(victim) != NULL);
	snprintf(file, sizeof(file), "%s/precious", victim);
	CHECK(close(open(file, O_WRONLY | O_CREAT, 0644)) == 0);
	setenv("RLM_SANDBOX_DISABLE", "userns,landlock", 1);
	a = start_default();
	b = start_default();
	output_line(a, "import os\nopen('secret', 'w').write('s')\nprint(os.getcwd())", dir_a,
		    sizeof(dir_a));
	snprintf(code, sizeof(code),
		 "import os\n"
		 "cwd = os.getcwd()\n"
		 "try:\n"
		 "    os.rename(cwd, cwd + '.moved')\n"
		 "    os.symlink('%s', cwd)\n"
		 "except OSError as e:\n"
		 "    print(e.errno)",
		 victim);
	expect(a, code, "13\n");
	expect(a, "try:\n    os.listdir('..')\nexcept OSError as e:\n    print(e.errno)", "13\n");
	/* The second worker: the outer directory is there to see, not to
	 * list; the secret is not where a guess would look. */
	snprintf(code, sizeof(code),
		 "import os\n"
		 "root = os.path.dirname('%s')\n"
		 "print(os.path.basename(root) in os.listdir('/tmp'))\n"
		 "try:\n"
		 "    os.listdir(root)\n"
		 "except OSError as e:\n"
		 "    print(e.errno)\n"
		 "print([os.path.exists(root + '/' + p)\n"
		 "       for p in ('secret', 'w/secret', 'w0000000000000000/secret')])",
		 dir_a);
	expect(b, code, "True\n13\n[False, False, False]\n");
	/* Nor through /proc: the runtime makes itself non-dumpable. */
	snprintf(code, sizeof(code),
		 "try:\n    os.listdir('/proc/%d/cwd')\nexcept OSError as e:\n    print(e.errno)",
		 (int)worker_pid(a));
	expect(b, code, "13\n");
	repl_free(a);
	repl_free(b);
	CHECK(stat(dir_a, &sb) < 0 && errno == ENOENT);
	CHECK_MSG(stat(file, &sb) == 0, "the victim's file is gone: %s", strerror(errno));
	CHECK(unlink(file) == 0 && rmdir(victim) == 0);
}

/* The context memfd's mode is 0: a peer cannot reopen it through
 * /proc/PID/fd/5, whatever the timing; the worker reads it all the same. */
TEST(context_memfd_cannot_be_reopened)
{
	struct repl *r;
	struct stat sb;
	char path[64];
	if (geteuid() != 0)
		return; /* only root sees a non-dumpable worker's fds */
	r = start_default();
	snprintf(path, sizeof(path), "/proc/%d/fd/5", (int)worker_pid(r));
	CHECK(stat(path, &sb) == 0);
	CHECK_MSG((sb.st_mode & 07777) == 0, "mode %o", (unsigned)(sb.st_mode & 07777));
	expect(r, "print(len(context))", "23\n");
	repl_free(r);
}

/* The worker exits by itself when fd 3 closes: the controller's process
 * keeps running (its spawner thread too, so no parent-death signal), but
 * its fds are gone. */
TEST(worker_exits_when_its_input_closes)
{
	int p[2];
	pid_t g, w = 0;
	bool zombie;
	CHECK(pipe(p) == 0);
	g = fork();
	CHECK(g >= 0);
	if (g == 0) {
		struct repl *r = start_default();
		pid_t pid = worker_pid(r);
		if (write(p[1], &pid, sizeof(pid)) != sizeof(pid))
			_exit(1);
		close_range(3, ~0U, 0);
		pause();
		_exit(0);
	}
	close(p[1]);
	CHECK(read(p[0], &w, sizeof(w)) == sizeof(w));
	close(p[0]);
	zombie = wait_zombie(w);
	kill(g, SIGKILL);
	waitpid(g, NULL, 0);
	CHECK_MSG(zombie, "the worker %d still runs after its input closed", (int)w);
}

TEST(missing_python_is_a_clear_error)
{
	struct repl_cfg cfg;
	struct repl *r = (struct repl *)1;
	struct rlm_err err = {0, ""};
	cfg_init(&cfg);
	cfg.python = "/nonexistent/python3";
	CHECK_INT(repl_start(&cfg, &r, &err), RLM_ENOTFOUND);
	CHECK(r == NULL);
	CHECK_STR(err.msg, "cannot run python '/nonexistent/python3': No such file or directory");
	cfg.python = "/bin/false";
	CHECK(repl_start(&cfg, &r, &err) < 0);
	CHECK(r == NULL);
	CHECK_CONTAINS(err.msg, "the worker exited while starting (exit status 1)");
}

static void *one_worker(void *arg)
{
	struct repl *r = start_default();
	char code[64], want[64];
	int k = *(int *)arg;
	for (int i = 0; i < 20; i++) {
		snprintf(code, sizeof(code), "%d * %d", k, i);
		snprintf(want, sizeof(want), "%d\n", k * i);
		expect(r, code, want);
	}
	repl_free(r);
	return NULL;
}

/* ---- the zygote ---- */

/* Our children, from /proc: their pids into pids (up to cap), how many;
 * zygote: the one that is none of the workers given (a worker forked by
 * the zygote shows the zygote's command line), or 0. */
static int children(pid_t *pids, int cap, pid_t *zygote, pid_t w1, pid_t w2)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;
	*zygote = 0;
	CHECK(d != NULL);
	while (d && (e = readdir(d))) {
		char path[300], st[512], *rp;
		int ppid = 0;
		pid_t pid;
		FILE *f;
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		rp = fgets(st, sizeof(st), f) ? strrchr(st, ')') : NULL;
		fclose(f);
		if (!rp || sscanf(rp + 2, "%*c %d", &ppid) != 1 || ppid != getpid())
			continue;
		pid = atoi(e->d_name);
		if (n < cap)
			pids[n] = pid;
		n++;
		if (pid != w1 && pid != w2 && !strstr(rp, ") Z "))
			*zygote = pid;
	}
	if (d)
		closedir(d);
	return n;
}

static bool started_by_zygote(const struct repl *r)
{
	struct repl_stats st;
	repl_stats(r, &st);
	return st.zygote;
}

/* Workers are forked by one zygote, are our children (CLONE_PARENT), each
 * in namespaces and a sandbox of its own, and the zygote goes with the
 * last REPL. */
TEST(zygote_forks_workers_that_are_our_children)
{
	struct repl *a = start_default(), *b = start_default();
	struct repl_sandbox_status sa, sb;
	pid_t kids[16], zyg;
	int n = children(kids, 16, &zyg, worker_pid(a), worker_pid(b));
	CHECK(started_by_zygote(a));
	CHECK(started_by_zygote(b));
	CHECK_INT(n, 3); /* the zygote and two workers */
	CHECK(zyg > 0 && zyg != worker_pid(a) && zyg != worker_pid(b));
	repl_sandbox_status(a, &sa);
	repl_sandbox_status(b, &sb);
	CHECK_STR(sa.line, sb.line);
	if (sa.on[REPL_L_PIDNS]) {
		/* each pid 1 of a pid namespace of its own */
		expect(a, "import os\nprint(os.getpid())", "1\n");
		expect(b, "import os\nprint(os.getpid())", "1\n");
	}
	if (sa.on[REPL_L_MNTNS]) {
		/* each its own scratch tmpfs: a's file is not in b's */
		char da[64], db[64], dr[64];
		expect(a, "open('mine', 'w').write('a')\nimport os\nprint(os.listdir('.'))",
		       "['mine']\n");
		expect(b, "import os\nprint(os.listdir('.'))", "[]\n");
		/* a mount of its own: another device than its neighbour's and /'s */
		output_line(a, "import os\nprint(os.stat('.').st_dev)", da, sizeof(da));
		output_line(b, "import os\nprint(os.stat('.').st_dev)", db, sizeof(db));
		output_line(a, "import os\nprint(os.stat('/').st_dev)", dr, sizeof(dr));
		CHECK(strcmp(da, db) != 0 && strcmp(da, dr) != 0);
	}
	expect(a, "print(context.count('日本'), 6 * 7)", "1 42\n");
	repl_free(a);
	CHECK_INT(children(kids, 16, &zyg, worker_pid(b), 0), 2);
	CHECK(zyg > 0);
	repl_free(b);
	CHECK_INT(children(kids, 16, &zyg, 0, 0), 0);
}

/* A worker that crashes is forked again; cfg.no_zygote and RLM_ZYGOTE=0
 * start workers cold. */
/* The tool and skill helpers are compiled on first use (a cold worker
 * does not pay for them at start); the zygote compiles them once it has
 * answered, so the workers it forks next have them. */
TEST(zygote_workers_find_the_tool_helpers_compiled)
{
	struct repl *r1 = start_default(), *r2 = start_default();
	if (!started_by_zygote(r2))
		SKIP("no zygote here");
	expect(r2, "len(call_tool.__globals__['_xs'])", "10\n");
	repl_free(r1);
	r1 = start_default();
	expect(r1, "len(call_tool.__globals__['_xs'])", "10\n");
	repl_free(r1);
	repl_free(r2);
	/* A cold worker compiles them when first called. */
	{
		struct repl_cfg cfg;
		cfg_init(&cfg);
		cfg.no_zygote = true;
		r1 = start(&cfg);
		expect(r1, "len(call_tool.__globals__['_xs'])", "0\n");
		expect(r1, "try:\n    list_skills()\nexcept ToolError as e:\n    print(e.kind)\n"
			   "len(call_tool.__globals__['_xs'])",
		       "unavailable\n10\n");
		repl_free(r1);
	}
}

TEST(zygote_restarts_and_can_be_turned_off)
{
	struct repl_cfg cfg;
	struct repl *r = start_default(), *c;
	struct repl_result res;
	pid_t before = worker_pid(r);
	run(r, "import os\nos._exit(3)", &res);
	CHECK(res.restarted);
	repl_result_release(&res);
	CHECK(worker_pid(r) != before);
	CHECK(started_by_zygote(r));
	expect(r, "print(len(context))", "23\n");
	repl_free(r);

	cfg_init(&cfg);
	cfg.no_zygote = true;
	c = start(&cfg);
	CHECK(!started_by_zygote(c));
	expect(c, "print(len(context))", "23\n");
	repl_free(c);
	setenv("RLM_ZYGOTE", "0", 1);
	c = start_default();
	unsetenv("RLM_ZYGOTE");
	CHECK(!started_by_zygote(c));
	repl_free(c);
}

/* A lone REPL (cfg.lone: no child RLMs will follow) starts its worker
 * cold while no zygote is up and no other REPL is open: a zygote's start
 * and a fork cost more than the one start they would save. A restart
 * stays cold; with another REPL open, or a zygote up, it forks. */
TEST(zygote_not_started_for_a_lone_worker)
{
	struct repl_cfg cfg;
	struct repl_result res;
	struct repl *a, *b, *c;
	pid_t kids[16], zyg;
	cfg_init(&cfg);
	cfg.lone = true;
	a = start(&cfg);
	CHECK(!started_by_zygote(a));
	CHECK_INT(children(kids, 16, &zyg, worker_pid(a), 0), 1);
	CHECK_INT(zyg, 0);
	run(a, "import os\nos._exit(3)", &res);
	CHECK(res.restarted);
	repl_result_release(&res);
	CHECK(!started_by_zygote(a));
	expect(a, "print(len(context))", "23\n");
	b = start(&cfg); /* a is open: a zygote pays now */
	CHECK(started_by_zygote(b));
	repl_free(a);
	c = start(&cfg); /* one is up */
	CHECK(started_by_zygote(c));
	CHECK_INT(children(kids, 16, &zyg, worker_pid(b), worker_pid(c)), 3);
	repl_free(b);
	repl_free(c);
	CHECK_INT(children(kids, 16, &zyg, 0, 0), 0);
}

/* AnonHugePages of process pid in kB, or -1. */
static long anon_huge_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* A worker started cold under the whole sandbox gets transparent huge
 * pages as a forked one does: glibc's malloc (GLIBC_TUNABLES hugetlb=1)
 * reads the kernel's THP mode from /sys when it starts, and the worker's
 * root and Landlock show it those two files. A 48 MB str is then in
 * 2 MiB pages, not 12,000 of 4 KiB. */
TEST(cold_worker_gets_huge_pages)
{
	struct repl_cfg cfg;
	struct repl *r;
	char mode[128] = "";
	long kb;
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (f) {
		if (!fgets(mode, sizeof(mode), f))
			mode[0] = '\0';
		fclose(f);
	}
	if (!strstr(mode, "[madvise]") && !strstr(mode, "[always]"))
		SKIP("the kernel gives no transparent huge pages on request here");
	cfg_init(&cfg);
	cfg.no_zygote = true;
	r = start(&cfg);
	CHECK(!started_by_zygote(r));
	expect(r, "s = 'x' * (48 << 20)\nprint(len(s) >> 20)", "48\n");
	kb = anon_huge_kb(worker_pid(r));
	if (kb < 0) {
		repl_free(r);
		SKIP("cannot read the worker's smaps_rollup (not root?)");
	}
	CHECK_MSG(kb >= 32 * 1024, "AnonHugePages %ld kB", kb);
	repl_free(r);
}

/* A zygote that dies is not fatal: the next worker starts cold, the one
 * after from a new zygote. */
TEST(zygote_killed_falls_back_to_cold)
{
	struct repl *r = start_default();
	struct repl_result res;
	pid_t kids[16], zyg, old;
	children(kids, 16, &zyg, worker_pid(r), 0);
	CHECK(zyg > 0);
	CHECK(kill(zyg, SIGKILL) == 0);
	CHECK(wait_zombie(zyg));
	run(r, "import os\nos._exit(3)", &res);
	CHECK(res.restarted);
	repl_result_release(&res);
	CHECK(!started_by_zygote(r));
	expect(r, "print(len(context))", "23\n");
	old = zyg;
	run(r, "import os\nos._exit(3)", &res);
	repl_result_release(&res);
	CHECK(started_by_zygote(r));
	children(kids, 16, &zyg, worker_pid(r), 0);
	CHECK(zyg > 0 && zyg != old);
	expect(r, "print(len(context))", "23\n");
	repl_free(r);
}

/* String hashing is the same in every worker, started cold or forked by
 * the zygote, in this process or another: model code that prints a set
 * shows the same text, so a resumed solve sends the same prompts (with a
 * random seed each worker orders 50 strings its own way). And the cwd
 * (the scratch directory, writable by model code) is not on sys.path. */
TEST(set_order_is_the_same_in_every_worker)
{
	static const char code[] = "print(list({'s%d' % i for i in range(50)}))";
	struct repl_cfg cfg;
	struct repl *cold, *a, *b;
	char want[1024], got[1024];
	cfg_init(&cfg);
	cfg.no_zygote = true;
	cold = start(&cfg);
	a = start_default();
	b = start_default();
	CHECK(!started_by_zygote(cold));
	CHECK(started_by_zygote(a) && started_by_zygote(b));
	output_line(cold, code, want, sizeof(want));
	CHECK_CONTAINS(want, "'s49'");
	output_line(a, code, got, sizeof(got));
	CHECK_STR(got, want);
	output_line(b, code, got, sizeof(got));
	CHECK_STR(got, want);
	expect(a, "import sys\nprint(sys.flags.hash_randomization, '' in sys.path)",
	       "0 False\n");
	expect(cold, "open('json.py', 'w').write('raise SystemExit(9)')\n"
		     "import json\nprint(json.dumps([1]))", "[1]\n");
	repl_free(cold);
	repl_free(a);
	repl_free(b);
	/* A controller of its own (a resumed solve): a new zygote. */
	a = start_default();
	output_line(a, code, got, sizeof(got));
	CHECK_STR(got, want);
	repl_free(a);
}

/* An interpreter whose zygote dies at start (argv 6 is "zygote"): the
 * worker starts cold, as if there were no zygote, and works. */
TEST(zygote_that_dies_at_start_falls_back_to_cold)
{
	char dir[256], bin[300], script[400];
	struct repl_cfg cfg;
	struct repl *r;
	FILE *f;
	snprintf(dir, sizeof(dir), "/tmp/rlm-zyg-%d", (int)getpid());
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	CHECK(mkdir(dir, 0755) == 0 && mkdir(bin, 0755) == 0);
	snprintf(script, sizeof(script), "%s/python3", bin);
	f = fopen(script, "w");
	CHECK(f);
	fputs("#!/bin/sh\n[ \"$6\" = zygote ] && exit 3\nexec /usr/bin/python3 \"$@\"\n", f);
	fclose(f);
	CHECK(chmod(script, 0755) == 0);
	cfg_init(&cfg);
	cfg.python = script;
	r = start(&cfg);
	CHECK(!started_by_zygote(r));
	expect(r, "print(6 * 7)", "42\n");
	repl_free(r);
	unlink(script);
	rmdir(bin);
	rmdir(dir);
}

/* A layer that fails in a zygote-forked worker is handled as in a cold
 * one: left out, and the worker forked again without it. */
TEST(zygote_worker_fault_falls_back)
{
	struct repl_sandbox_status st;
	struct repl_cfg cfg;
	struct repl *r;
	setenv("RLM_SANDBOX_FAULT", "landlock", 1);
	cfg_init(&cfg);
	r = start(&cfg);
	unsetenv("RLM_SANDBOX_FAULT");
	repl_sandbox_status(r, &st);
	CHECK(started_by_zygote(r));
	CHECK(!st.on[REPL_L_LANDLOCK]);
	CHECK_CONTAINS(st.why[REPL_L_LANDLOCK], "injected fault");
	expect(r, "print(2 + 2)", "4\n");
	repl_free(r);
}

TEST(workers_on_several_threads)
{
	pthread_t t[4];
	int k[4] = {1, 2, 3, 4};
	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&t[i], NULL, one_worker, &k[i]) == 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

/* ---- deadlines and cancels ---- */

TEST(deadline_returns_etimeout)
{
	struct repl *r = start_default();
	struct repl_result res;
	struct rlm_err err = {0, ""};
	const char *code = "import time\ntime.sleep(60)";
	int64_t t0 = time_now_ns();
	expect(r, "keep = 3", "");
	CHECK_INT(repl_exec(r, code, strlen(code), t0 + 300 * MS, &res, &err), RLM_ETIMEOUT);
	CHECK(time_now_ns() - t0 < 2000 * MS);
	CHECK(res.output && res.interrupted && !res.restarted);
	CHECK_CONTAINS(res.output, "KeyboardInterrupt");
	CHECK_CONTAINS(res.output, "the deadline of the run passed");
	CHECK_CONTAINS(err.msg, "deadline");
	repl_result_release(&res);
	/* Already past: nothing runs. */
	CHECK_INT(repl_exec(r, "keep = 4", 8, t0, &res, &err), RLM_ETIMEOUT);
	CHECK_CONTAINS(res.output, "not run");
	repl_result_release(&res);
	expect(r, "keep", "3\n");
	repl_free(r);
}

static void *set_later(void *arg)
{
	time_sleep_ns(200 * MS);
	atomic_store((atomic_bool *)arg, true);
	return NULL;
}

TEST(cancel_returns_ecancel)
{
	struct repl_cfg cfg;
	atomic_bool cancel = false;
	struct repl *r;
	struct repl_result res;
	struct rlm_err err = {0, ""};
	pthread_t t;
	const char *code = "import time\ntime.sleep(60)";
	int64_t t0;
	cfg_init(&cfg);
	cfg.cancel = &cancel;
	r = start(&cfg);
	t0 = time_now_ns();
	pthread_create(&t, NULL, set_later, &cancel);
	CHECK_INT(repl_exec(r, code, strlen(code), 0, &res, &err), RLM_ECANCEL);
	pthread_join(t, NULL);
	CHECK(time_now_ns() - t0 < 2000 * MS);
	CHECK(res.output && res.interrupted);
	CHECK_CONTAINS(res.output, "cancelled");
	repl_result_release(&res);
	repl_free(r);
}

/* A call whose answer stops the whole run (as a spent budget does). */
static void stopping_call(void *arg, const struct repl_call *c, char **texts, bool *errors)
{
	time_sleep_ns(300 * MS); /* waiting on calls does not count in the grace */
	atomic_store((atomic_bool *)arg, true);
	for (size_t i = 0; i < c->n; i++) {
		texts[i] = xstrdup("Error: budget exhausted");
		errors[i] = true;
	}
}

/* cfg.stop set while code waits on a call: the code keeps what the call
 * answered (its grace, in its own time), then a loop is interrupted, its
 * variables kept; with the stop set nothing more runs. */
TEST(stop_interrupts_after_its_grace)
{
	struct repl_cfg cfg;
	atomic_bool stop = false;
	struct repl *r;
	struct repl_result res;
	struct rlm_err err = {0, ""};
	const char *code = "got = llm_query('a')\nwhile True:\n    pass";
	int64_t t0, dt;
	cfg_init(&cfg);
	cfg.stop = &stop;
	cfg.stop_grace_ns = 200 * MS;
	cfg.on_call = stopping_call;
	cfg.call_arg = &stop;
	r = start(&cfg);
	t0 = time_now_ns();
	CHECK_INT(repl_exec(r, code, strlen(code), 0, &res, &err), RLM_ECANCEL);
	dt = time_now_ns() - t0;
	CHECK_MSG(dt >= 500 * MS && dt < 2000 * MS, "took %lld ms", (long long)(dt / 1000000));
	CHECK(res.interrupted && !res.restarted);
	CHECK_CONTAINS(res.output, "KeyboardInterrupt");
	CHECK_CONTAINS(res.output, "the run was stopped (a limit of the whole run was reached)");
	CHECK_CONTAINS(err.msg, "the run stopped while the REPL ran code");
	repl_result_release(&res);
	CHECK_INT(repl_exec(r, "got = 1", 7, 0, &res, &err), RLM_ECANCEL);
	CHECK_CONTAINS(res.output, "[the code was not run: the run was stopped]");
	repl_result_release(&res);
	atomic_store(&stop, false);
	expect(r, "print(got)", "Error: budget exhausted\n");
	repl_free(r);
}

TEST(deadline_during_a_call_interrupts_after_it)
{
	struct repl_cfg cfg;
	struct seen s = {0};
	struct repl *r;
	struct repl_result res;
	struct rlm_err err;
	const char *code = "got = llm_query('slow')\nimport time\ntime.sleep(60)";
	int64_t t0;
	cfg_init(&cfg);
	cfg.on_call = echo_call;
	cfg.call_arg = &s;
	r = start(&cfg);
	t0 = time_now_ns();
	CHECK_INT(repl_exec(r, code, strlen(code), t0 + 100 * MS, &res, &err), RLM_ETIMEOUT);
	CHECK(res.interrupted && !res.restarted);
	CHECK_CONTAINS(res.output, "KeyboardInterrupt");
	CHECK_INT(s.deadline, t0 + 100 * MS);
	CHECK_INT(s.calls, 1);
	repl_result_release(&res);
	/* The interrupt came after the reply (or during it, then raised as the
	 * call returned): the worker is in step either way. */
	expect(r, "1 + 1", "2\n");
	repl_free(r);
}

/* ---- the sandbox ---- */

TEST(sandbox_parse_table)
{
	static const struct {
		const char *in;
		unsigned want;
		const char *err; /* NULL: accepted */
	} cases[] = {
	    {"", 0, NULL},
	    {" , ,", 0, NULL},
	    {"userns", 1u << REPL_L_USERNS, NULL},
	    {"landlock,userns", 1u << REPL_L_LANDLOCK | 1u << REPL_L_USERNS, NULL},
	    {" seccomp , rlimits ", 1u << REPL_L_SECCOMP | 1u << REPL_L_RLIMITS, NULL},
	    {"all", REPL_L_ALL, NULL},
	    {"ns",
	     1u << REPL_L_USERNS | 1u << REPL_L_MNTNS | 1u << REPL_L_NETNS | 1u << REPL_L_PIDNS |
		 1u << REPL_L_IPCNS | 1u << REPL_L_UTSNS,
	     NULL},
	    {"ns,identity",
	     1u << REPL_L_USERNS | 1u << REPL_L_MNTNS | 1u << REPL_L_NETNS | 1u << REPL_L_PIDNS |
		 1u << REPL_L_IPCNS | 1u << REPL_L_UTSNS | 1u << REPL_L_IDENTITY,
	     NULL},
	    {"utsns,ipcns,netns,pidns,mntns",
	     1u << REPL_L_UTSNS | 1u << REPL_L_IPCNS | 1u << REPL_L_NETNS | 1u << REPL_L_PIDNS |
		 1u << REPL_L_MNTNS,
	     NULL},
	    {"userns,bogus", 0, "unknown sandbox layer 'bogus'"},
	    {"user", 0, "unknown sandbox layer 'user'"},
	    {"usernsx", 0, "known: all, ns, seccomp"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct rlm_err err = {0, ""};
		unsigned bits = 99;
		int rc = repl_sandbox_parse(cases[i].in, &bits, &err);
		if (!cases[i].err) {
			CHECK_MSG(rc == 0, "case %zu: %s", i, err.msg);
			CHECK_MSG(bits == cases[i].want, "case %zu: %#x, want %#x", i, bits,
				  cases[i].want);
		} else {
			CHECK_INT(rc, RLM_EINVAL);
			CHECK_CONTAINS(err.msg, cases[i].err);
		}
	}
	CHECK_STR(repl_layer_name(REPL_L_SECCOMP), "seccomp");
	CHECK_STR(repl_layer_name(REPL_L_RLIMITS), "rlimits");
}

/* The check before anything starts: names, and the mandatory layers. */
TEST(sandbox_check_table)
{
	static const struct {
		const char *env; /* RLM_SANDBOX_DISABLE, NULL: unset */
		unsigned disable;
		bool unsafe;
		int rc;
		const char *msg;
	} cases[] = {
	    {NULL, 0, false, 0, NULL},
	    {NULL, 1u << REPL_L_LANDLOCK | 1u << REPL_L_USERNS, false, 0, NULL},
	    {"ns, landlock", 0, false, 0, NULL},
	    {"bogus", 0, false, RLM_EINVAL, "RLM_SANDBOX_DISABLE: unknown sandbox layer 'bogus'"},
	    {NULL, 1u << REPL_L_SECCOMP, false, RLM_ESANDBOX,
	     "seccomp is disabled (by request), and model code does not run without it"},
	    {"seccomp", 0, false, RLM_ESANDBOX, "seccomp is disabled (by RLM_SANDBOX_DISABLE)"},
	    {"all", 0, true, 0, NULL},
	    {NULL, 1u << REPL_L_IDENTITY, false, -1,
	     "identity is disabled (by request), and model "
	     "code does not run as root"},
	    {NULL, 1u << REPL_L_IDENTITY, true, 0, NULL},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct repl_sandbox_cfg c = {0};
		struct rlm_err err = {0, ""};
		int want = cases[i].rc, rc;
		if (want == -1) /* identity: mandatory only as root */
			want = geteuid() == 0 ? RLM_ESANDBOX : 0;
		c.disable = cases[i].disable;
		c.unsafe = cases[i].unsafe;
		if (cases[i].env)
			setenv("RLM_SANDBOX_DISABLE", cases[i].env, 1);
		else
			unsetenv("RLM_SANDBOX_DISABLE");
		rc = repl_sandbox_check(&c, &err);
		unsetenv("RLM_SANDBOX_DISABLE");
		CHECK_MSG(rc == want, "case %zu: %d, want %d (%s)", i, rc, want, err.msg);
		if (want)
			CHECK_CONTAINS(err.msg, cases[i].msg);
		if (want == RLM_ESANDBOX)
			CHECK_CONTAINS(err.msg, "--unsafe-no-sandbox");
	}
}

/* This machine has every layer (seccomp, Landlock, user namespaces). */
TEST(full_sandbox_reports_every_layer)
{
	struct repl_cfg cfg;
	struct repl_sandbox_status st;
	struct repl *r;
	unsigned uid = getuid() == 0 ? 65534 : getuid();
	char want[64];
	cfg_init(&cfg);
	r = start_status(&cfg, &st);
	for (int l = 0; l < REPL_L_COUNT; l++)
		CHECK_MSG(st.on[l], "%s is off: %s", repl_layer_name(l), st.why[l]);
	CHECK_INT(st.seccomp_filters, 2);
	CHECK(st.landlock_abi >= 1);
	CHECK(!st.unsafe);
	CHECK(st.scratch_tmpfs);
	CHECK_INT(st.uid, uid);
	CHECK_STR(st.fs, "landlock+ro-mount");
	CHECK_CONTAINS(st.line, "seccomp=on(2) landlock=abi");
	CHECK_CONTAINS(st.line, "userns=on mntns=on netns=on pidns=on ipcns=on utsns=on");
	snprintf(want, sizeof(want), "uid=%u fs=landlock+ro-mount scratch=tmpfs(256M)", uid);
	CHECK_CONTAINS(st.line, want);
	CHECK_CONTAINS(st.line, "rlimits=AS2G,NOFILE64,FSIZE256M,CPU3600");
	/* Inside: uid 1000 of its namespace, pid 1, no way out. */
	expect(r, "import os\n(os.getuid(), os.getgid(), os.getgroups(), os.getpid())",
	       "(1000, 1000, [], 1)\n");
	/* ENOENT: its own root has no /etc/passwd (pivot); Landlock would
	 * say EACCES. */
	expect(r, "try:\n    open('/etc/passwd')\nexcept OSError as e:\n    print(e.errno)",
	       "2\n");
	expect(r,
	       "try:\n    open('/tmp/rlm-sandbox-escape', 'w')\nexcept OSError as e:\n"
	       "    print(e.errno in (13, 30))",
	       "True\n");
	expect(r, "import socket\ntry:\n    socket.socket()\nexcept OSError as e:\n    print(1)",
	       "1\n");
	expect(r, "try:\n    os.fork()\nexcept OSError as e:\n    print(e.errno)", "1\n");
	expect(
	    r,
	    "open('f', 'w').write('x' * 100), open('f').read(3), open(os.devnull, 'w').write('x')",
	    "(100, 'xxx', 1)\n");
	expect(r,
	       "import hashlib, json, decimal, datetime, "
	       "threading\nlen(hashlib.sha256(b'').hexdigest())",
	       "64\n");
	repl_free(r);
}

/* Without a user namespace: no namespaces, identity by setresuid. */
TEST(sandbox_without_userns_uses_setresuid)
{
	struct repl_cfg cfg;
	struct repl_sandbox_status st;
	struct repl *r;
	char want[64];
	unsigned uid = getuid() == 0 ? 65534 : getuid();
	setenv("RLM_SANDBOX_DISABLE", "userns", 1);
	cfg_init(&cfg);
	r = start_status(&cfg, &st);
	CHECK(!st.on[REPL_L_USERNS]);
	CHECK_STR(st.why[REPL_L_USERNS], "disabled by RLM_SANDBOX_DISABLE");
	for (int l = REPL_L_MNTNS; l <= REPL_L_UTSNS; l++) {
		CHECK(!st.on[l]);
		CHECK_STR(st.why[l], "needs userns");
	}
	CHECK(st.on[REPL_L_IDENTITY] && st.on[REPL_L_SECCOMP] && st.on[REPL_L_LANDLOCK]);
	CHECK(!st.scratch_tmpfs);
	CHECK_INT(st.uid, uid);
	CHECK_INT(st.seccomp_filters, 2);
	CHECK_STR(st.fs, "landlock");
	CHECK_CONTAINS(st.line, "scratch=dir(256M)");
	snprintf(want, sizeof(want), "(%u, %u, [])\n", uid, uid);
	expect(r, "import os\n(os.getuid(), os.getgid(), os.getgroups())", want);
	expect(r, "open('f', 'w').write('x'), os.listdir('.')", "(1, ['f'])\n");
	repl_free(r);
}

/* A layer that fails in the child is left out, said why, and the worker
 * starts without it. */
TEST(broken_layer_falls_back)
{
	struct repl_cfg cfg;
	struct repl_sandbox_status st;
	struct repl *r;
	setenv("RLM_SANDBOX_FAULT", "mntns", 1);
	cfg_init(&cfg);
	r = start_status(&cfg, &st);
	CHECK(!st.on[REPL_L_MNTNS]);
	CHECK_CONTAINS(st.why[REPL_L_MNTNS], "sandbox: injected fault: errno 1");
	CHECK(!st.on[REPL_L_PIDNS]);
	CHECK_CONTAINS(st.why[REPL_L_PIDNS], "needs mntns");
	CHECK(st.on[REPL_L_USERNS] && st.on[REPL_L_NETNS] && st.on[REPL_L_SECCOMP]);
	CHECK(!st.scratch_tmpfs);
	CHECK_CONTAINS(st.line, "mntns=off");
	expect(r, "1 + 1", "2\n");
	repl_free(r);
	/* Broken for the whole process: the next worker does not try it. */
	unsetenv("RLM_SANDBOX_FAULT");
	r = start_status(&cfg, &st);
	CHECK(!st.on[REPL_L_MNTNS]);
	repl_free(r);

	setenv("RLM_SANDBOX_FAULT", "userns", 1);
	r = start_status(&cfg, &st);
	CHECK(!st.on[REPL_L_USERNS] && !st.on[REPL_L_NETNS]);
	CHECK_STR(st.why[REPL_L_NETNS], "needs userns");
	CHECK(st.on[REPL_L_IDENTITY] && st.on[REPL_L_SECCOMP]);
	expect(r, "2 + 2", "4\n");
	repl_free(r);
}

TEST(no_seccomp_no_worker_unless_unsafe)
{
	struct repl_cfg cfg;
	struct repl_sandbox_status st;
	struct repl *r = (struct repl *)1;
	struct rlm_err err = {0, ""};
	setenv("RLM_SANDBOX_DISABLE", "seccomp", 1);
	cfg_init(&cfg);
	CHECK_INT(repl_start(&cfg, &r, &err), RLM_ESANDBOX);
	CHECK(r == NULL);
	CHECK_CONTAINS(err.msg, "--unsafe-no-sandbox");
	CHECK_CONTAINS(err.msg, "RLM_SANDBOX_DISABLE");
	cfg.sandbox.unsafe = true;
	r = start_status(&cfg, &st);
	CHECK(st.unsafe && !st.on[REPL_L_SECCOMP]);
	CHECK_INT(st.seccomp_filters, 0);
	CHECK_CONTAINS(st.line, "seccomp=off(UNSAFE)");
	expect(r, "1 + 1", "2\n");
	repl_free(r);

	/* seccomp failing in the child is not left out without unsafe. */
	unsetenv("RLM_SANDBOX_DISABLE");
	setenv("RLM_SANDBOX_FAULT", "seccomp", 1);
	cfg.sandbox.unsafe = false;
	r = (struct repl *)1;
	CHECK_INT(repl_start(&cfg, &r, &err), RLM_ESANDBOX);
	CHECK(r == NULL);
	CHECK_CONTAINS(err.msg, "the seccomp layer of the sandbox failed");
	CHECK_CONTAINS(err.msg, "--unsafe-no-sandbox");

	setenv("RLM_SANDBOX_DISABLE", "userns,nonsense", 1);
	unsetenv("RLM_SANDBOX_FAULT");
	CHECK_INT(repl_start(&cfg, &r, &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "RLM_SANDBOX_DISABLE: unknown sandbox layer 'nonsense'");
}

/* A plain scratch directory past its limit: the worker is restarted on an
 * empty one. A tmpfs one is full instead. */
TEST(scratch_limits)
{
	struct repl_cfg cfg;
	struct repl_sandbox_status st;
	struct repl_result res;
	struct repl *r;
	setenv("RLM_SANDBOX_DISABLE", "userns", 1);
	cfg_init(&cfg);
	cfg.sandbox.scratch_limit = 1 << 20;
	r = start_status(&cfg, &st);
	CHECK(!st.scratch_tmpfs);
	expect(r, "kept = 1\nopen('a', 'wb').write(b'x' * 600000)", "600000\n");
	run(r, "open('b', 'wb').write(b'x' * 600000)", &res);
	CHECK(res.restarted);
	CHECK_CONTAINS(res.output, "600000\n[the REPL was restarted: the scratch directory "
				   "passed its limit of 1 MB");
	CHECK_CONTAINS(res.output, "All variables and scratch files are gone");
	repl_result_release(&res);
	expect(r, "import os\nos.listdir('.'), 'kept' in globals()", "([], False)\n");
	/* RLIMIT_FSIZE: one file cannot pass the limit at all. */
	expect(r,
	       "try:\n    open('c', 'wb').write(b'x' * 2000000)\nexcept OSError as e:\n"
	       "    print(e.errno)",
	       "27\n");
	repl_free(r);

	unsetenv("RLM_SANDBOX_DISABLE");
	r = start_status(&cfg, &st);
	CHECK(st.scratch_tmpfs);
	CHECK_CONTAINS(st.line, "scratch=tmpfs(1M)");
	expect(r,
	       "try:\n    for i in range(4):\n"
	       "        open(str(i), 'wb').write(b'x' * 400000)\nexcept OSError as e:\n"
	       "    print(e.errno)",
	       "28\n");
	repl_free(r);
}

/* A plain scratch directory is watched during an exec, not only after
 * it: a cell writing 400 MB in 1 MB files (each under RLIMIT_FSIZE)
 * against a 16 MB limit is stopped early, the worker restarted. */
TEST(scratch_fill_is_stopped_during_the_exec)
{
	struct repl_cfg cfg;
	struct repl_sandbox_status st;
	struct repl_result res;
	struct repl *r;
	const char *held;
	double mb = 0;
	cfg_init(&cfg);
	cfg.sandbox.disable = 1u << REPL_L_USERNS;
	cfg.sandbox.scratch_limit = 16 << 20;
	r = start_status(&cfg, &st);
	CHECK(!st.scratch_tmpfs);
	run(r,
	    "chunk = b'\\0' * (1 << 20)\n"
	    "for i in range(400):\n"
	    "    with open(f'fill{i}', 'wb') as f:\n"
	    "        f.write(chunk)\n"
	    "print('wrote 400 MB')",
	    &res);
	CHECK(res.restarted && res.error);
	CHECK_CONTAINS(res.output, "[the REPL was restarted: the scratch directory passed its "
				   "limit of 16 MB (it held ");
	CHECK(!strstr(res.output, "wrote 400 MB"));
	held = strstr(res.output, "(it held ");
	CHECK(held && sscanf(held, "(it held %lf MB", &mb) == 1);
	CHECK_MSG(mb > 16 && mb < 200, "the scratch held %.1f MB when it was stopped", mb);
	repl_result_release(&res);
	expect(r, "import os\nos.listdir('.')", "[]\n");
	repl_free(r);
}

/* ---- a kernel that fails on cue ----
 *
 * A seccomp filter in a test's own process (the spawner thread and the
 * worker's child inherit it) makes one system call fail with a chosen
 * errno, or stop for a listener, as a busy or locked-down machine would. */

#if defined(__x86_64__)
#define TEST_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define TEST_ARCH AUDIT_ARCH_AARCH64
#endif

struct cond {
	int arg; /* args[arg] (its low 32 bits) & mask == value */
	uint32_t mask, value;
};

/* Install a filter: syscall nr, when every cond holds, returns ret.
 * Returns the listener fd for SECCOMP_RET_USER_NOTIF, else 0. */
static int filter_syscall(int nr, const struct cond *c, int n, uint32_t ret)
{
#ifdef TEST_ARCH
	struct sock_filter f[16];
	struct sock_fprog prog;
	unsigned k = 0, allow;
	unsigned flags = ret == SECCOMP_RET_USER_NOTIF ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
	int fd;
	allow = 4 + 3 * (unsigned)n + 1;
	f[k] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					    offsetof(struct seccomp_data, arch));
	k++;
	f[k] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TEST_ARCH, 0,
					    (unsigned char)(allow - k - 1));
	k++;
	f[k] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					    offsetof(struct seccomp_data, nr));
	k++;
	f[k] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0,
					    (unsigned char)(allow - k - 1));
	k++;
	for (int i = 0; i < n; i++) {
		f[k] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						    offsetof(struct seccomp_data, args[c[i].arg]));
		k++;
		f[k] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, c[i].mask);
		k++;
		f[k] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, c[i].value, 0,
						    (unsigned char)(allow - k - 1));
		k++;
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ret);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	CHECK(k == allow + 1);
	prog.len = (unsigned short)k;
	prog.filter = f;
	CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
	CHECK_MSG(fd >= 0, "seccomp: %s", strerror(errno));
	return fd;
#else
	(void)nr, (void)c, (void)n, (void)ret;
	return -1;
#endif
}

/* Run fn in a process of its own, where its filters stay. */
static void in_child(void (*fn)(void))
{
	int st;
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the check in a child failed");
}

/* repl_start fails with code and a message containing want. */
static void start_fails(int code, const char *want)
{
	struct repl_cfg cfg;
	struct repl *r = (struct repl *)1;
	struct rlm_err err = {0, ""};
	int rc;
	cfg_init(&cfg);
	rc = repl_start(&cfg, &r, &err);
	CHECK_MSG(rc == code, "repl_start: %d, want %d: %s", rc, code, err.msg);
	CHECK(r == NULL);
	CHECK_CONTAINS(err.msg, want);
}

static void clone_enospc(void)
{
	struct cond c = {0, CLONE_NEWUSER, CLONE_NEWUSER};
	if (filter_syscall(SYS_clone, &c, 1, SECCOMP_RET_ERRNO | ENOSPC) < 0)
		return;
	start_fails(RLM_ESANDBOX, "clone(CLONE_NEWUSER): No space left on device, which does "
				  "not say the namespaces are missing, so they are kept: too many "
				  "namespaces");
}

static void clone_eperm(void)
{
	struct cond c = {0, CLONE_NEWUSER, CLONE_NEWUSER};
	struct repl_cfg cfg;
	struct repl_sandbox_status st;
	struct repl *r;
	if (filter_syscall(SYS_clone, &c, 1, SECCOMP_RET_ERRNO | EPERM) < 0)
		return;
	cfg_init(&cfg);
	r = start_status(&cfg, &st);
	CHECK(!st.on[REPL_L_USERNS] && !st.on[REPL_L_MNTNS]);
	CHECK_STR(st.why[REPL_L_USERNS], "clone(CLONE_NEWUSER): Operation not permitted");
	expect(r, "1 + 1", "2\n");
	repl_free(r);
}

static void mount_enomem(void)
{
	if (filter_syscall(SYS_mount, NULL, 0, SECCOMP_RET_ERRNO | ENOMEM) < 0)
		return;
	start_fails(RLM_ESANDBOX,
		    "the mntns layer of the sandbox failed at 'mount / private' "
		    "with errno 12 (Cannot allocate memory), which does not say the "
		    "layer is missing, so it is kept: the machine is short of memory");
}

static void mount_eperm(void)
{
	struct repl_cfg cfg;
	struct repl_sandbox_status st;
	struct repl *r;
	if (filter_syscall(SYS_mount, NULL, 0, SECCOMP_RET_ERRNO | EPERM) < 0)
		return;
	cfg_init(&cfg);
	r = start_status(&cfg, &st);
	CHECK(!st.on[REPL_L_MNTNS] && st.on[REPL_L_USERNS]);
	CHECK_STR(st.why[REPL_L_MNTNS], "sandbox: mount / private: errno 1");
	repl_free(r);
}

/* The child dies in the handshake (it cannot make itself dumpable). */
static void handshake_dies(void)
{
	struct cond c[2] = {{0, ~0u, PR_SET_DUMPABLE}, {1, ~0u, 1}};
	if (filter_syscall(SYS_prctl, c, 2, SECCOMP_RET_ERRNO | EPERM) < 0)
		return;
	start_fails(RLM_EIO, "cannot start the worker: the user-namespace handshake: the child "
			     "exited: Input/output error");
}

/* A machine that is only busy (ENOSPC from clone: namespaces per user,
 * shared with the running workers; ENOMEM in a mount; a child that died
 * in the handshake) fails the start and leaves the layer in; a refusal
 * (EPERM) leaves it out for the process, as before. */
TEST(passing_shortages_do_not_weaken_the_sandbox)
{
	in_child(clone_enospc);
	in_child(clone_eperm);
	in_child(mount_enomem);
	in_child(mount_eperm);
	in_child(handshake_dies);
}

/* Between the handshake and execve the child's memory is a copy of the
 * controller's, its environment (API keys) included, and a dumpable
 * process's /proc/PID/environ is open to its uid. A non-root controller's
 * child, held in its first mount by a seccomp listener, is looked at by
 * another thread of that uid. */
struct watch {
	int fd;
	atomic_bool stop;
	int seen;	/* notifications */
	int open_errno; /* opening the child's environ: 0 when it opened */
};

static void *watch_mounts(void *arg)
{
	struct watch *w = arg;
	while (!atomic_load(&w->stop)) {
		struct pollfd p = {w->fd, POLLIN, 0};
		struct seccomp_notif req;
		struct seccomp_notif_resp resp;
		char path[64];
		int fd;
		if (poll(&p, 1, 50) <= 0)
			continue;
		memset(&req, 0, sizeof(req));
		if (ioctl(w->fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
			continue;
		if (w->seen++ == 0) {
			snprintf(path, sizeof(path), "/proc/%d/environ", (int)req.pid);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			w->open_errno = fd < 0 ? errno : 0;
			if (fd >= 0)
				close(fd);
		}
		memset(&resp, 0, sizeof(resp));
		resp.id = req.id;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		ioctl(w->fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
	return NULL;
}

static void dumpable_window(void)
{
	struct watch w = {-1, false, 0, -1};
	struct repl_cfg cfg;
	struct repl_sandbox_status st;
	struct repl *r;
	pthread_t t;
	CHECK(setgroups(0, NULL) == 0);
	CHECK(setresgid(65534, 65534, 65534) == 0 && setresuid(65534, 65534, 65534) == 0);
	w.fd = filter_syscall(SYS_mount, NULL, 0, SECCOMP_RET_USER_NOTIF);
	if (w.fd < 0)
		return;
	CHECK(pthread_create(&t, NULL, watch_mounts, &w) == 0);
	cfg_init(&cfg);
	r = start_status(&cfg, &st);
	atomic_store(&w.stop, true);
	pthread_join(t, NULL);
	CHECK_MSG(st.on[REPL_L_MNTNS], "mntns is off: %s", st.why[REPL_L_MNTNS]);
	CHECK(w.seen > 0);
	CHECK_MSG(w.open_errno == EACCES, "the child's /proc/PID/environ, after the handshake: %s",
		  w.open_errno ? strerror(w.open_errno) : "open to its uid");
	expect(r, "1 + 1", "2\n");
	repl_free(r);
}

TEST(child_is_not_dumpable_after_the_handshake)
{
	if (geteuid() != 0)
		return; /* the check needs a second uid to become */
	in_child(dumpable_window);
}

/* ---- the frame parser ---- */

TEST(frame_parser_table)
{
	static const struct {
		const char *body;
		const char *want; /* NULL: accepted; else in the error */
	} cases[] = {
	    {"{\"type\":\"fatal\",\"error\":\"x\"}", NULL},
	    {"{\"type\":\"ready\",\"pid\":1,\"python\":\"3.11.2\",\"context_chars\":0,"
	     "\"documents\":0}",
	     NULL},
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"rlm\",\"batched\":true,"
	     "\"model\":null,\"prompts\":[\"a\",\"b\"]}",
	     NULL},
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"llm\",\"batched\":false,"
	     "\"model\":null,\"prompts\":[\"a\",\"b\"]}",
	     "a single call with 2 prompts"},
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"xx\",\"batched\":false,"
	     "\"model\":null,\"prompts\":[\"a\"]}",
	     "unknown kind"},
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"llm\",\"batched\":true,"
	     "\"model\":null,\"prompts\":[]}",
	     "without prompts"},
	    {"{\"type\":\"call\",\"id\":1.5,\"exec\":1,\"kind\":\"llm\",\"batched\":true,"
	     "\"model\":null,\"prompts\":[\"a\"]}",
	     "field 'id'"},
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"llm\",\"batched\":true,"
	     "\"model\":null,\"prompts\":[\"a\",3]}",
	     "field 'prompts'"},
	    /* tool: requests as prompts, a batch of one, never contexts */
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"tool\",\"batched\":false,"
	     "\"model\":null,\"prompts\":[\"{\\\"op\\\":\\\"servers\\\"}\"]}",
	     NULL},
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"tool\",\"batched\":true,"
	     "\"model\":null,\"prompts\":[\"a\"]}",
	     NULL},
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"tool\",\"batched\":false,"
	     "\"model\":null,\"prompts\":[\"a\",\"b\"]}",
	     "a single call with 2 prompts"},
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"tool\",\"batched\":true,"
	     "\"model\":null,\"prompts\":[]}",
	     "without prompts"},
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"tool\",\"batched\":true,"
	     "\"model\":null,\"prompts\":[\"a\"],\"contexts\":[null]}",
	     "a tool call with contexts"},
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"tool\",\"batched\":false,"
	     "\"model\":\"m\",\"prompts\":[\"a\"]}",
	     "a tool call with a model"},
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"Tool\",\"batched\":false,"
	     "\"model\":null,\"prompts\":[\"a\"]}",
	     "unknown kind"},
	    /* contexts: rlm only, one str or null per prompt */
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"rlm\",\"batched\":true,"
	     "\"model\":null,\"prompts\":[\"a\",\"b\"],\"contexts\":[\"x\",null]}",
	     NULL},
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"llm\",\"batched\":true,"
	     "\"model\":null,\"prompts\":[\"a\"],\"contexts\":[\"x\"]}",
	     "an llm call with contexts"},
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"rlm\",\"batched\":true,"
	     "\"model\":null,\"prompts\":[\"a\",\"b\"],\"contexts\":[\"x\"]}",
	     "not an array of 2 items"},
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"rlm\",\"batched\":false,"
	     "\"model\":null,\"prompts\":[\"a\"],\"contexts\":\"x\"}",
	     "not an array of 1 items"},
	    /* a context's shape is judged per prompt, not here */
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"rlm\",\"batched\":false,"
	     "\"model\":null,\"prompts\":[\"a\"],\"contexts\":[3]}",
	     NULL},
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"rlm\",\"batched\":true,"
	     "\"model\":null,\"prompts\":[\"a\",\"b\"],\"contexts\":[{\"ref\":[0,4]},"
	     "{\"docs\":[1,2]}]}",
	     NULL},
	    {"{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"rlm\",\"batched\":false,"
	     "\"model\":null,\"prompts\":[\"a\"],\"contexts\":[\"\xff\"]}",
	     "not UTF-8"},
	    {"{\"type\":\"result\",\"id\":1,\"output\":\"\",\"output_chars\":-1,\"error\":false,"
	     "\"interrupted\":false,\"ready\":false,\"answer\":null,\"content\":null,\"vars\":[]}",
	     "field 'output_chars'"},
	    {"{\"type\":\"result\",\"id\":1,\"output\":\"\",\"output_chars\":0,\"error\":false,"
	     "\"interrupted\":false,\"ready\":false,\"answer\":null,\"content\":null,\"vars\":[]}",
	     NULL},
	    {"{\"type\":\"result\",\"id\":1}", "field 'output'"},
	    {"{\"type\":\"result\",\"id\":1,\"output\":\"\",\"output_chars\":0,\"error\":true,"
	     "\"interrupted\":false,\"ready\":false,\"answer\":null,\"content\":null,\"vars\":[],"
	     "\"error_at\":0}",
	     NULL},
	    {"{\"type\":\"result\",\"id\":1,\"output\":\"\",\"output_chars\":0,\"error\":true,"
	     "\"interrupted\":false,\"ready\":false,\"answer\":null,\"content\":null,\"vars\":[],"
	     "\"error_at\":-1}",
	     "field 'error_at'"},
	    {"{\"type\":\"result\",\"id\":1,\"output\":\"\",\"output_chars\":0,\"error\":true,"
	     "\"interrupted\":false,\"ready\":false,\"answer\":null,\"content\":null,\"vars\":[],"
	     "\"error_at\":\"3\"}",
	     "field 'error_at'"},
	    /* structured answers: optional strings */
	    {"{\"type\":\"result\",\"id\":1,\"output\":\"\",\"output_chars\":0,\"error\":true,"
	     "\"interrupted\":false,\"ready\":false,\"answer\":null,\"content\":null,\"vars\":[],"
	     "\"invalid\":\"at $: 4 is less than the minimum of 5\"}",
	     NULL},
	    {"{\"type\":\"result\",\"id\":1,\"output\":\"\",\"output_chars\":0,\"error\":true,"
	     "\"interrupted\":false,\"ready\":false,\"answer\":null,\"content\":null,\"vars\":[],"
	     "\"invalid\":false}",
	     "field 'invalid'"},
	    {"{\"type\":\"ready\",\"pid\":2,\"python\":\"3.11\",\"context_chars\":0,"
	     "\"documents\":0,\"schema_error\":\"the schema is not JSON\"}",
	     NULL},
	    {"{\"type\":\"ready\",\"pid\":2,\"python\":\"3.11\",\"context_chars\":0,"
	     "\"documents\":0,\"schema_error\":null}",
	     "field 'schema_error'"},
	    {"{\"type\":\"fatal\",\"error\":\"\\udc80\"}", "not a JSON object"},
	    {"{\"type\":\"fatal\",\"error\":\"\xff\"}", "not UTF-8"},
	    {"{\"type\":\"nope\"}", "unknown type 'nope'"},
	    {"{\"type\":3}", "without a string 'type'"},
	    {"[1]", "not a JSON object"},
	    {"{\"type\":\"fatal\",\"error\":\"x\"} x", "not a JSON object"},
	    {"", "not a JSON object"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct rlm_err err = {0, ""};
		cJSON *f = repl_frame_parse(cases[i].body, strlen(cases[i].body), 1 << 20, &err);
		if (!cases[i].want) {
			CHECK_MSG(f != NULL, "case %zu: %s", i, err.msg);
		} else {
			CHECK_MSG(f == NULL, "case %zu accepted", i);
			CHECK_MSG(strstr(err.msg, cases[i].want), "case %zu: \"%s\", want \"%s\"",
				  i, err.msg, cases[i].want);
		}
		cJSON_Delete(f);
	}
	{
		struct rlm_err err = {0, ""};
		CHECK(repl_frame_parse("{\"type\":\"fatal\",\"error\":\"x\"}", 28, 10, &err) ==
		      NULL);
		CHECK_INT(err.code, RLM_ETOOBIG);
	}
}

/* A binary call frame: 0x00, the header's length, the header, the
 * prompts' bytes (repl.h, BINARY CALL FRAMES). */
static size_t binary_frame(char *out, const char *header, const char *payload, size_t plen)
{
	size_t h = strlen(header);
	out[0] = '\0';
	out[1] = (char)(h >> 24);
	out[2] = (char)(h >> 16);
	out[3] = (char)(h >> 8);
	out[4] = (char)h;
	memcpy(out + 5, header, h);
	memcpy(out + 5 + h, payload, plen);
	return 5 + h + plen;
}

TEST(binary_call_frames_are_read_as_the_json_they_stand_for)
{
#define CALL_HEAD "{\"type\":\"call\",\"id\":7,\"exec\":1,\"kind\":\"llm\",\"batched\":true,"
	static const struct {
		const char *header;
		const char *payload;
		size_t plen;
		const char *want; /* NULL: accepted */
	} cases[] = {
	    {CALL_HEAD "\"model\":null,\"prompt_lens\":[3,0,6]}", "abc\0\0\xc3\xa9t\xc3\xa9!", 12,
	     NULL},
	    {CALL_HEAD "\"model\":null,\"prompt_lens\":[3,3]}", "abc\0\xc3\xa9t\0x!", 10,
	     "2 bytes after its prompts"},
	    {CALL_HEAD "\"model\":null,\"prompt_lens\":[3,8]}", "abc\0\xc3\xa9t\xc3\xa9!", 10,
	     "prompt 1 is not a length within the frame"},
	    /* its NUL must be inside the frame too */
	    {CALL_HEAD "\"model\":null,\"prompt_lens\":[3,2]}", "abc\0de", 6,
	     "prompt 1 is not a length within the frame"},
	    /* a character cut between two prompts */
	    {CALL_HEAD "\"model\":null,\"prompt_lens\":[4,5]}", "abc\xc3\0\xa9t\xc3\xa9!\0", 11,
	     "prompt 0 is not UTF-8"},
	    {CALL_HEAD "\"model\":null,\"prompt_lens\":[3]}", "a\0b\0", 4,
	     "prompt 0 has a NUL inside or none after it"},
	    {CALL_HEAD "\"model\":null,\"prompt_lens\":[3]}", "abcd", 4,
	     "prompt 0 has a NUL inside or none after it"},
	    {CALL_HEAD "\"model\":null,\"prompt_lens\":[-1]}", "", 0, "not a length"},
	    {CALL_HEAD "\"model\":null,\"prompt_lens\":[1.5]}", "ab\0", 3, "not a length"},
	    {CALL_HEAD "\"model\":null,\"prompts\":[\"x\"],\"prompt_lens\":[1]}", "y\0", 2,
	     "in place of 'prompts'"},
	    {CALL_HEAD "\"model\":null}", "", 0, "no 'prompt_lens'"},
	    {"{\"type\":\"fatal\",\"error\":\"x\",\"prompt_lens\":[1]}", "y\0", 2,
	     "not a call's object"},
	    {"[1]", "", 0, "not a call's object"},
	    {"{\"type\":\"call\",\xff}", "", 0, "header is not UTF-8"},
	    /* the call frame's own checks still hold */
	    {CALL_HEAD "\"model\":null,\"prompt_lens\":[]}", "", 0, "without prompts"},
	    {"{\"type\":\"call\",\"id\":7,\"exec\":1,\"kind\":\"llm\",\"batched\":false,"
	     "\"model\":null,\"prompt_lens\":[1,1]}",
	     "a\0b\0", 4, "a single call with 2 prompts"},
	    {CALL_HEAD "\"model\":null,\"prompt_lens\":[1],\"contexts\":[null]}", "a\0", 2,
	     "an llm call with contexts"},
	};
#undef CALL_HEAD
	char frame[512];
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct rlm_err err = {0, ""};
		size_t n = binary_frame(frame, cases[i].header, cases[i].payload, cases[i].plen);
		cJSON *f = repl_frame_parse(frame, n, 1 << 20, &err);
		if (!cases[i].want) {
			const cJSON *ps = json_get(f, "prompts");
			CHECK_MSG(f != NULL, "case %zu: %s", i, err.msg);
			CHECK_INT(cJSON_GetArraySize(ps), 3);
			CHECK_STR(cJSON_GetArrayItem(ps, 0)->valuestring, "abc");
			CHECK_STR(cJSON_GetArrayItem(ps, 1)->valuestring, "");
			CHECK_STR(cJSON_GetArrayItem(ps, 2)->valuestring, "\xc3\xa9t\xc3\xa9!");
			/* read where they lie, not copied */
			CHECK(cJSON_GetArrayItem(ps, 0)->valuestring ==
			      frame + 5 + strlen(cases[i].header));
			CHECK(cJSON_GetArrayItem(ps, 0)->type & cJSON_IsReference);
			CHECK(!json_get(f, "prompt_lens"));
		} else {
			CHECK_MSG(f == NULL, "case %zu accepted", i);
			CHECK_MSG(strstr(err.msg, cases[i].want), "case %zu: \"%s\", want \"%s\"",
				  i, err.msg, cases[i].want);
		}
		cJSON_Delete(f);
	}
	{
		/* short, a header past the end, over the cap */
		struct rlm_err err = {0, ""};
		CHECK(repl_frame_parse("\0\0\0", 3, 1 << 20, &err) == NULL);
		CHECK_CONTAINS(err.msg, "its header needs 5");
		CHECK(repl_frame_parse("\0\0\0\0\x09{}", 7, 1 << 20, &err) == NULL);
		CHECK_CONTAINS(err.msg, "past its end");
		CHECK(repl_frame_parse("\0\0\0\0\x02{}", 7, 6, &err) == NULL);
		CHECK_INT(err.code, RLM_ETOOBIG);
	}
}

/* ---- the exec clock and threads (issue 19, findings 5 and 6) ---- */

/* Field 20 (num_threads) and utime + stime (fields 14, 15, in ns) of a
 * process, from /proc/PID/stat; -1 when it is gone. */
static long proc_threads(pid_t pid, int64_t *cpu_ns)
{
	char path[64], b[1024], *p;
	unsigned long long v[21] = {0};
	FILE *f;
	size_t n;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(b, 1, sizeof(b) - 1, f);
	fclose(f);
	b[n] = '\0';
	p = strrchr(b, ')');
	if (!p)
		return -1;
	p += 2;
	for (int i = 3; i <= 20 && *p; i++) {
		v[i] = strtoull(p, &p, 10);
		if (i == 3) { /* the state letter */
			p = strchr(p, ' ');
			if (!p)
				return -1;
		}
		while (*p == ' ')
			p++;
	}
	if (cpu_ns)
		*cpu_ns = (int64_t)(v[14] + v[15]) * (1000000000LL / sysconf(_SC_CLK_TCK));
	return (long)v[20];
}

/* A fake model that answers each prompt after 20 ms. */
static void quick_call(void *arg, const struct repl_call *c, char **texts, bool *errors)
{
	(void)arg;
	(void)errors;
	time_sleep_ns(20 * MS);
	for (size_t i = 0; i < c->n; i++)
		texts[i] = xasprintf("q:%s", c->prompts[i]);
}

/* The exec clock stops while a call is out only as long as the worker does
 * not compute meanwhile: one thread looping llm_query does not let the
 * main thread's CPU loop run past a 2 s limit (before, it ran its whole
 * 12 s: the clock stood still while any call was out). Both ways of
 * answering calls. */
TEST(compute_does_not_hide_behind_calls)
{
	const char *code = "import threading, time\nn = [0]\ngo = [True]\n"
			   "def ask():\n    while go[0]:\n        llm_query('x'); n[0] += 1\n"
			   "th = threading.Thread(target=ask, daemon=True)\nth.start()\n"
			   "t0 = time.monotonic()\ntry:\n"
			   "    while time.monotonic() < t0 + 12:\n        pass\n"
			   "finally:\n    go[0] = False\n";
	for (int par = 1; par >= 0; par--) {
		struct repl_cfg cfg;
		struct repl *r;
		struct repl_result res;
		int64_t t0, ms, cpu0 = 0, cpu1 = 0, cpu;
		cfg_init(&cfg);
		cfg.on_call = quick_call;
		cfg.parallel_calls = par;
		cfg.exec_timeout_ns = 2000 * MS;
		r = start(&cfg);
		CHECK_INT(proc_threads(worker_pid(r), &cpu0), 1);
		t0 = time_now_ns();
		run(r, code, &res);
		ms = (time_now_ns() - t0) / MS;
		CHECK(proc_threads(worker_pid(r), &cpu1) >= 1);
		cpu = (cpu1 - cpu0) / MS;
		fprintf(stderr, "  parallel_calls=%d: interrupted after %lld ms (%lld ms of CPU), %zu "
				"calls\n",
			par, (long long)ms, (long long)cpu, res.calls);
		/* The worker had its 2 s (and a little for the calling thread
		 * and the interrupt); on a loaded machine it gets it later. */
		CHECK_MSG(ms >= 1900 && ms < 8000, "parallel_calls=%d: took %lld ms", par,
			  (long long)ms);
		CHECK_MSG(cpu < 3200, "parallel_calls=%d: the worker used %lld ms of CPU", par,
			  (long long)cpu);
		CHECK(res.interrupted && !res.restarted);
		CHECK_CONTAINS(res.output, "KeyboardInterrupt");
		CHECK_CONTAINS(res.output, "time limit of 2 s");
		CHECK(res.calls > 5);
		repl_result_release(&res);
		/* The worker is in step: its variables are kept. */
		expect(r, "n[0] > 5", "True\n");
		repl_free(r);
	}
}

/* A thread still computing when the code ends is waited for until the
 * exec's time is up, then stopped with SystemExit: the output says so, the
 * variables are kept, and the worker is back to one thread that uses no
 * CPU. Before, the exec returned at once and the thread ran on. Threads of
 * threading and of _thread alike. */
TEST(threads_still_running_at_the_end_are_stopped)
{
	static const struct {
		const char *code, *name;
	} cases[] = {
	    {"import threading\ndef spin():\n    while True:\n        pass\n"
	     "threading.Thread(target=spin, daemon=True, name='spinner').start()\nx = 5\n",
	     "'spinner' (in spin(), line 3)"},
	    {"import _thread\ndef spin():\n    n = 0\n    while True:\n        n += 1\n"
	     "_thread.start_new_thread(spin, ())\n_thread.start_new_thread(spin, ())\nx = 5\n",
	     "2 threads the code started were still running when its time ran out: "
	     "a _thread thread (in spin(), line"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct repl_cfg cfg;
		struct repl *r;
		struct repl_result res;
		int64_t t0, ms, cpu0 = 0, cpu1 = 0;
		pid_t pid;
		cfg_init(&cfg);
		cfg.exec_timeout_ns = 1000 * MS;
		r = start(&cfg);
		pid = worker_pid(r);
		t0 = time_now_ns();
		run(r, cases[i].code, &res);
		ms = (time_now_ns() - t0) / MS;
		CHECK_MSG(ms >= 900 && ms < 2500, "case %zu took %lld ms: %s", i, (long long)ms,
			  res.output);
		CHECK(res.interrupted && !res.restarted);
		CHECK_CONTAINS(res.output, cases[i].name);
		CHECK_CONTAINS(res.output, "SystemExit was raised in");
		CHECK_CONTAINS(res.output, "stopped; the variables are kept");
		CHECK_CONTAINS(res.output, "time limit of 1 s");
		CHECK_INT(worker_pid(r), pid);
		CHECK_INT(proc_threads(pid, &cpu0), 1);
		time_sleep_ns(300 * MS);
		CHECK_INT(proc_threads(pid, &cpu1), 1);
		CHECK_MSG(cpu1 - cpu0 <= 20 * MS, "the worker used %lld ms of CPU between execs",
			  (long long)((cpu1 - cpu0) / MS));
		repl_result_release(&res);
		expect(r, "x", "5\n");
		repl_free(r);
	}
}

/* A thread that will not stop (it catches SystemExit), or one blocked for
 * good (an idle pool that was not shut down), costs the worker a restart
 * once the exec's time is up, said after the output. */
TEST(threads_that_cannot_be_stopped_restart_the_worker)
{
	static const char *const codes[] = {
	    "import threading\ndef stubborn():\n    while True:\n        try:\n"
	    "            while True:\n                pass\n"
	    "        except BaseException:\n            pass\n"
	    "threading.Thread(target=stubborn, daemon=True).start()\nx = 5\n",
	    "import threading, time\nprint([1, 2, 3])\n"
	    "threading.Thread(target=time.sleep, args=(100,), daemon=True).start()\nx = 5\n",
	};
	for (size_t i = 0; i < ARRAY_SIZE(codes); i++) {
		struct repl_cfg cfg;
		struct repl *r;
		struct repl_result res;
		int64_t t0, ms;
		pid_t pid;
		cfg_init(&cfg);
		cfg.exec_timeout_ns = 1000 * MS;
		r = start(&cfg);
		pid = worker_pid(r);
		t0 = time_now_ns();
		run(r, codes[i], &res);
		ms = (time_now_ns() - t0) / MS;
		CHECK_MSG(ms >= 900 && ms < 3000, "case %zu took %lld ms", i, (long long)ms);
		CHECK(res.restarted);
		CHECK_CONTAINS(res.output, "did not stop");
		CHECK_CONTAINS(res.output, "[the REPL was restarted: ");
		CHECK_CONTAINS(res.output, " still running after the exec ended and could not be "
					   "stopped. All variables are gone");
		if (i == 1)
			CHECK_CONTAINS(res.output, "[1, 2, 3]\n");
		CHECK(worker_pid(r) != pid);
		repl_result_release(&res);
		CHECK_INT(proc_threads(worker_pid(r), NULL), 1);
		expect(r, "'x' in globals()", "False\n");
		repl_free(r);
	}
}

/* A pool the code left open keeps its idle threads parked on their empty
 * queues: no wait, no restart, the variables kept, and the pool works in
 * the next exec. A pool with work still queued at the end is waited for. */
TEST(an_open_pool_is_left_parked)
{
	struct repl_cfg cfg;
	struct repl *r;
	struct repl_result res;
	int64_t t0, ms;
	pid_t pid;
	cfg_init(&cfg);
	cfg.exec_timeout_ns = 3000 * MS;
	r = start(&cfg);
	pid = worker_pid(r);
	t0 = time_now_ns();
	run(r,
	    "from concurrent.futures import ThreadPoolExecutor\nex = ThreadPoolExecutor(3)\n"
	    "print(list(ex.map(abs, [1, -2, 3, -4, 5])))\n",
	    &res);
	ms = (time_now_ns() - t0) / MS;
	CHECK_MSG(ms < 1500, "took %lld ms", (long long)ms);
	CHECK_STR(res.output, "[1, 2, 3, 4, 5]\n");
	CHECK(!res.interrupted && !res.restarted && !res.error);
	repl_result_release(&res);
	CHECK(worker_pid(r) == pid);
	CHECK(proc_threads(pid, NULL) > 1);
	/* Work queued at the end: waited for, then parked again. */
	expect(r,
	       "import time\nfuts = [ex.submit(time.sleep, 0.2) for _ in range(3)]\n"
	       "print(len(futs))",
	       "3\n");
	expect(r, "all(f.done() for f in futs), sorted(abs(i) for i in ex.map(int, [-7, 8]))",
	       "(True, [7, 8])\n");
	CHECK(worker_pid(r) == pid);
	/* Shut down, the pool's threads leave. */
	expect(r, "ex.shutdown()\nprint('down')", "down\n");
	CHECK_INT(proc_threads(worker_pid(r), NULL), 1);
	repl_free(r);
}

/* Threads that end within the exec's time are waited for, joined or not:
 * their work is done when the exec returns, and nothing is said. */
TEST(threads_that_end_in_time_are_waited_for)
{
	struct repl_cfg cfg;
	struct repl *r;
	struct repl_result res;
	int64_t t0, ms;
	cfg_init(&cfg);
	cfg.exec_timeout_ns = 3000 * MS;
	r = start(&cfg);
	t0 = time_now_ns();
	run(r,
	    "import threading, _thread, time\nout = []\n"
	    "def w(i):\n    time.sleep(0.2)\n    out.append(i)\n"
	    "for i in range(3):\n    threading.Thread(target=w, args=(i,)).start()\n"
	    "_thread.start_new_thread(w, (3,))\nprint('started')\n",
	    &res);
	ms = (time_now_ns() - t0) / MS;
	CHECK_MSG(ms >= 190 && ms < 2000, "took %lld ms", (long long)ms);
	CHECK_STR(res.output, "started\n");
	CHECK(!res.interrupted && !res.restarted && !res.error);
	repl_result_release(&res);
	expect(r, "sorted(out)", "[0, 1, 2, 3]\n");
	CHECK_INT(proc_threads(worker_pid(r), NULL), 1);
	/* A pool shut down by its with: nothing to wait for. */
	expect(r,
	       "from concurrent.futures import ThreadPoolExecutor\n"
	       "with ThreadPoolExecutor(4) as ex:\n    got = list(ex.map(abs, [-1, -2]))\ngot",
	       "[1, 2]\n");
	repl_free(r);
}

/* Code that runs on after its exec, where no check of the threads can see
 * it (the main thread, in a runtime the code patched; a parked pool
 * thread given work by a gc callback that runs as the result is sent),
 * does not compute while the model thinks: the worker is stopped
 * (SIGSTOP) from its result to the next frame. Should that fail, the CPU
 * it used between execs gets it restarted before the next code runs. */
static void idle_cpu_stays_flat(struct repl *r, const char *what)
{
	int64_t a, b;
	time_sleep_ns(150 * MS); /* the stop is sent once the result is in */
	CHECK(proc_threads(worker_pid(r), &a) > 0);
	time_sleep_ns(600 * MS);
	CHECK(proc_threads(worker_pid(r), &b) > 0);
	CHECK_MSG(b - a < 50 * MS, "%s: %lld ms of CPU between execs", what,
		  (long long)((b - a) / MS));
}

TEST(code_left_behind_does_not_compute_between_execs)
{
	struct repl *r = start_default();
	struct repl_result res;
	pid_t pid = worker_pid(r);
	expect(r,
	       "import time\ng = llm_query.__globals__\n_orig = g['_read_frame']\n"
	       "def _evil():\n    g['_read_frame'] = _orig\n    t = time.monotonic()\n"
	       "    while time.monotonic() < t + 2:\n        pass\n    return _orig()\n"
	       "g['_read_frame'] = _evil\nx = 1\n",
	       "");
	idle_cpu_stays_flat(r, "a patched runtime");
	/* Thawed, it goes on in the next exec, on that exec's clock. */
	run(r, "'x' in globals()", &res);
	CHECK(!res.error);
	CHECK_CONTAINS(res.output, "True\n");
	repl_result_release(&res);
	CHECK(worker_pid(r) == pid);
	/* Whether the check of the threads sees the pool's work (a restart)
	 * or the callback runs after it: nothing computes between execs. */
	run(r,
	       "import gc\nfrom concurrent.futures import ThreadPoolExecutor\n"
	       "ex = ThreadPoolExecutor(2)\nlist(ex.map(abs, [1, 2]))\n"
	       "def spin():\n    t = time.monotonic()\n    while time.monotonic() < t + 2:\n"
	       "        pass\n"
	       "fired = []\n"
	       "def cb(phase, info):\n"
	       "    if phase == 'start' and g['_st'].exec_id is None and not fired:\n"
	       "        fired.append(1)\n        ex.submit(spin)\n"
	       "gc.callbacks.append(cb)\ngc.set_threshold(1)\ny = 1\n",
	       &res);
	CHECK(!res.error);
	repl_result_release(&res);
	idle_cpu_stays_flat(r, "a gc callback feeding a parked pool");
	repl_free(r);
	/* Not stopped (the stop is taken away here, as a failed kill would),
	 * the CPU it uses between execs restarts it. */
	r = start_default();
	expect(r,
	       "import time\ng = llm_query.__globals__\n_orig = g['_read_frame']\n"
	       "def _evil():\n    g['_read_frame'] = _orig\n    t = time.monotonic()\n"
	       "    while time.monotonic() < t + 0.4:\n        pass\n    return _orig()\n"
	       "g['_read_frame'] = _evil\nx = 1\n",
	       "");
	time_sleep_ns(50 * MS);
	repl__thaw(r);
	time_sleep_ns(600 * MS);
	run(r, "'x' in globals()", &res);
	CHECK(res.restarted && !res.error);
	CHECK_CONTAINS(res.output, "[the REPL was restarted: it used ");
	CHECK_CONTAINS(res.output, " of CPU between execs, running code after its exec had ended");
	CHECK_CONTAINS(res.output, "False\n");
	repl_result_release(&res);
	/* A worker that only waits is left alone. */
	time_sleep_ns(300 * MS);
	expect(r, "x = 2", "");
	time_sleep_ns(300 * MS);
	expect(r, "x", "2\n");
	repl_free(r);
}

/* RLIMIT_NPROC caps a worker's threads only where it counts per user
 * namespace (5.14): before, every worker of a root controller (all
 * nobody) would share the one count. */
TEST(thread_cap_needs_a_kernel_that_counts_per_namespace)
{
	static const struct {
		const char *rel;
		bool ok;
	} t[] = {
	    {"5.14.0", true},	      {"5.14", true},	     {"6.1.0-18-amd64", true},
	    {"6.18.44-fc-v782", true}, {"5.13.19", false},   {"5.10.0-28-amd64", false},
	    {"4.18.0-513.el8", false}, {"10.0", true},	     {"", false},
	    {"6", false},	      {"x.y", false},	     {"5.", false},
	    {"99999999999999999999.1", false},
	};
	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		CHECK_MSG(repl__kernel_at_least(t[i].rel, 5, 14) == t[i].ok, "'%s'", t[i].rel);
}
