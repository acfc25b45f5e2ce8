/* SPDX-License-Identifier: MIT */
/* rlm/session.c -- sessions: a root node's REPL worker and conversation
 * kept across questions (rlm.h's rlm_session_*).
 *
 * DESIGN
 * A session is a struct rlm__sess that each of its solves lends to its
 * root node through rlm_opts.session_: the node takes the worker and the
 * conversation at its start and gives them back at its end
 * (rlm/loop_session.c), so everything else of a solve -- its budget, its
 * children, its record -- is per question, as for rlm_solve. What only a
 * session has lives in the worker as plain variables, put there with
 * repl_set frames: `history` before every question, and context_1, ...
 * with documents_1, ... whenever the worker is new (its first start, a
 * restart after a death), since a worker restarts with `context` alone.
 */
#include "solve_int.h"
#include "../common/json.h"
#include "../common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

struct rlm_session {
	struct rlm_opts o;          /* the session's solves' (session_ set) */
	const struct corpus *ctx;   /* `context` */
	struct rlm__sess s;
	int64_t created_ms, last_ms;
};

static int64_t unix_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* ---- a corpus as a JSON value for the worker ---- */

/* s[0..n) as a JSON string: invalid UTF-8 becomes U+FFFD, as the worker
 * decodes `context`. */
static void put_jstr(struct buf *b, const char *s, size_t n)
{
	buf_putc(b, '"');
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		size_t k;
		if (c < 0x20 || c == '"' || c == '\\') {
			if (c == '"' || c == '\\')
				buf_printf(b, "\\%c", c);
			else if (c == '\n')
				buf_puts(b, "\\n");
			else if (c == '\t')
				buf_puts(b, "\\t");
			else
				buf_printf(b, "\\u%04x", c);
			i++;
			continue;
		}
		if (c < 0x80) {
			size_t j = i;
			while (j < n && (unsigned char)s[j] >= 0x20 && (unsigned char)s[j] < 0x80 &&
			       s[j] != '"' && s[j] != '\\')
				j++;
			buf_append(b, s + i, j - i);
			i = j;
			continue;
		}
		k = text_utf8_seq_len(s + i, n - i);
		if (k) {
			buf_append(b, s + i, k);
			i += k;
		} else {
			buf_puts(b, "\xef\xbf\xbd");
			i++;
		}
	}
	buf_putc(b, '"');
}

/* What the worker's `context` of ctx is: a str, a list of str, or (a JSON
 * corpus) its parsed value. */
static void put_context(struct buf *b, const struct corpus *ctx)
{
	if (ctx->json) {
		buf_append(b, ctx->buf, ctx->len);
		return;
	}
	if (ctx->kind == CORPUS_TEXT) {
		size_t o = ctx->n_docs ? ctx->docs[0].off : 0;
		size_t n = ctx->n_docs ? ctx->docs[0].len : ctx->len;
		put_jstr(b, ctx->buf ? ctx->buf + o : "", n);
		return;
	}
	buf_putc(b, '[');
	for (size_t i = 0; i < ctx->n_docs; i++) {
		if (i)
			buf_putc(b, ',');
		put_jstr(b, ctx->buf + ctx->docs[i].off, ctx->docs[i].len);
	}
	buf_putc(b, ']');
}

/* documents_N: a list of the documents' metadata objects, as
 * corpus_doc_info makes them (one per document; a str's one). */
static void put_documents(struct buf *b, const struct corpus *ctx)
{
	size_t n = ctx->kind != CORPUS_TEXT ? ctx->n_docs : RLM_MIN(ctx->n_docs, (size_t)1);
	struct buf line = BUF_INIT;
	buf_putc(b, '[');
	for (size_t i = 0; i < n; i++) {
		line.len = 0;
		if (corpus_doc_info(ctx, i, &line) || !line.len)
			break;
		if (i)
			buf_putc(b, ',');
		buf_append(b, line.p, line.len);
	}
	buf_putc(b, ']');
	buf_release(&line);
}

static int set_one(struct repl *r, const char *name, const char *json, bool reset,
		   int64_t deadline_ns, struct rlm_err *err)
{
	struct repl_result res;
	int rc;
	memset(&res, 0, sizeof(res));
	rc = repl_set(r, name, json, reset, deadline_ns, &res, err);
	/* A worker found dead before the set (between questions) is
	 * restarted and takes the value without an error: its variables are
	 * gone all the same, and the caller must know. */
	if (rc == 0 && (res.error || res.restarted))
		rc = rlm_err_set(err, res.restarted ? RLM_EIO : RLM_EINVAL,
				 "the session could not set %s in the REPL: %.*s", name,
				 (int)RLM_MIN(res.len, (size_t)300), res.output);
	repl_result_release(&res);
	return rc;
}

int rlm__sess_put(struct rlm__sess *s, struct repl *r, int64_t deadline_ns, struct rlm_err *err)
{
	struct repl_stats st;
	char *h;
	int rc = 0;
	repl_stats(r, &st);
	if (s->put_restarts != st.restarts) {
		for (size_t i = 0; i < s->n_extra && !rc; i++) {
			struct buf b = BUF_INIT;
			char name[32];
			put_context(&b, s->extra[i]);
			snprintf(name, sizeof(name), "context_%zu", i + 1);
			rc = set_one(r, name, b.p ? b.p : "\"\"", false, deadline_ns, err);
			b.len = 0;
			if (!rc) {
				put_documents(&b, s->extra[i]);
				snprintf(name, sizeof(name), "documents_%zu", i + 1);
				rc = set_one(r, name, b.p, false, deadline_ns, err);
			}
			buf_release(&b);
		}
		if (rc)
			return rc;
		repl_stats(r, &st);
		s->put_restarts = st.restarts;
	}
	h = cJSON_PrintUnformatted(s->history);
	rc = set_one(r, "history", h ? h : "[]", true, deadline_ns, err);
	free(h);
	return rc;
}

char *rlm__sess_vars(struct repl *r, int64_t deadline_ns, struct rlm_err *err)
{
	static const char code[] = "print(SHOW_VARS())";
	struct repl_result res;
	struct buf b = BUF_INIT;
	const char *p, *end;
	int rc, shown = 0;
	memset(&res, 0, sizeof(res));
	rc = repl_exec(r, code, sizeof(code) - 1, deadline_ns, &res, err);
	if (!rc && res.restarted)
		rlm_err_set(err, RLM_EIO, "the REPL worker was restarted: %.*s",
			    (int)RLM_MIN(res.len, (size_t)300), res.output);
	if (rc || res.restarted) {
		repl_result_release(&res);
		return NULL;
	}
	/* "Variables:\n  x: int\n  idx: dict\n" -> "x: int, idx: dict" */
	p = res.output;
	end = res.output + res.len;
	while (p < end && !res.error) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *l = p;
		size_t n = (size_t)((nl ? nl : end) - p);
		p = nl ? nl + 1 : end;
		if (n < 3 || l[0] != ' ' || l[1] != ' ')
			continue;
		if (++shown > 40 || b.len > 1500) {
			buf_puts(&b, ", ...");
			break;
		}
		buf_printf(&b, "%s%.*s", b.len ? ", " : "", (int)(n - 2), l + 2);
	}
	repl_result_release(&res);
	if (!b.p)
		return xstrdup("");
	return buf_detach(&b, NULL);
}

/* ---- the API ---- */

int rlm_session_new(const struct rlm_opts *o, const struct corpus *ctx, struct rlm_session **out,
		    struct rlm_err *err)
{
	struct rlm_session *s;
	int rc;
	*out = NULL;
	if (!o->pool || !o->model)
		return rlm_err_set(err, RLM_EINVAL, "no pool or no model to solve with");
	if (o->strategy != RLM_REPL)
		return rlm_err_set(err, RLM_EINVAL,
				   "a session needs the repl strategy (the tree strategy keeps "
				   "nothing between questions)");
	if (!ctx)
		return rlm_err_set(err, RLM_EINVAL, "a session needs a context");
	if ((rc = repl_sandbox_check(&o->sandbox, err)))
		return rc;
	s = xcalloc(1, sizeof(*s));
	s->o = *o;
	s->o.session_ = &s->s;
	s->o.record_ = NULL;
	s->ctx = ctx;
	s->s.put_restarts = -1;
	s->s.setup_at = -1;
	s->s.history = cJSON_CreateArray();
	s->created_ms = s->last_ms = unix_ms();
	*out = s;
	return 0;
}

int rlm_session_add_context(struct rlm_session *s, const struct corpus *ctx, int *n,
			    struct rlm_err *err)
{
	size_t bytes = ctx->len + 64 * ctx->n_docs + 64;
	size_t max = s->o.max_frame ? s->o.max_frame : (size_t)64 << 20;
	if (bytes + bytes / 8 > max)
		return rlm_err_set(err, RLM_EINVAL,
				   "the context is too large to add to a session (%zu bytes; a "
				   "context added goes to the worker in one frame of at most %zu "
				   "bytes: make it the session's first context instead)",
				   ctx->len, max);
	s->s.extra = xrealloc(s->s.extra, (s->s.n_extra + 1) * sizeof(*s->s.extra));
	s->s.extra[s->s.n_extra++] = ctx;
	if (n)
		*n = (int)s->s.n_extra;
	if (s->s.repl) {
		/* Into the running worker now: put all of them again. */
		int rc;
		s->s.put_restarts = -1;
		if ((rc = rlm__sess_put(&s->s, s->s.repl, 0, err))) {
			/* not added: the caller may free ctx (the others go
			 * in again with the next question) */
			s->s.n_extra--;
			if (n)
				*n = 0;
			return rc;
		}
	}
	return 0;
}

int rlm_session_solve(struct rlm_session *s, const struct rlm_opts *o, const char *question,
		      struct rlm_result *out, struct rlm_err *err)
{
	struct rlm_opts x = o ? *o : s->o;
	cJSON *h;
	int rc;
	x.session_ = &s->s;
	x.record_ = NULL;
	x.strategy = RLM_REPL;
	/* What the worker and the conversation were made with stays. */
	x.pool = s->o.pool;
	x.model = s->o.model;
	x.python = s->o.python;
	x.sandbox = s->o.sandbox;
	if (x.schema_json) {
		struct rlm_err e = {0, ""};
		if ((rc = rlm_schema_check(&x, &e))) {
			/* refused before it reaches the session's worker */
			memset(out, 0, sizeof(*out));
			out->stop = RLM_STOP_ERROR;
			out->stop_detail = xstrdup(e.msg);
			if (err)
				*err = e;
			return rc;
		}
	}
	s->s.questions++;
	rc = rlm_solve(&x, question, s->ctx, out, err);
	s->s.compactions += out->compactions;
	s->last_ms = unix_ms();
	h = cJSON_CreateObject();
	json_add_str(h, "question", question ? question : "");
	if (out->answer)
		json_add_str(h, "answer", out->answer);
	else
		json_add(h, "answer", cJSON_CreateNull());
	json_add_str(h, "stop", rlm_stop_name(out->stop));
	json_add_str(h, "run", out->run_id);
	cJSON_AddItemToArray(s->s.history, h);
	return rc;
}

static void drop_conversation(struct rlm__sess *s)
{
	for (size_t i = 0; i < s->n_msgs; i++)
		free((void *)(uintptr_t)s->msgs[i].text);
	free(s->msgs);
	s->msgs = NULL;
	s->n_msgs = s->cap_msgs = 0;
}

void rlm_session_reset(struct rlm_session *s)
{
	repl_free(s->s.repl);
	s->s.repl = NULL;
	s->s.put_restarts = -1;
	s->s.setup_at = -1;
	free(s->s.setup_code);
	s->s.setup_code = NULL;
	s->s.n_told = 0;
	s->s.questions = 0;
	drop_conversation(&s->s);
	cJSON_Delete(s->s.history);
	s->s.history = cJSON_CreateArray();
}

/* The resident memory of process pid, from /proc: bytes, 0 unknown. */
static int64_t rss_of(pid_t pid)
{
	char path[64];
	long long size = 0, res = 0;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	if (fscanf(f, "%lld %lld", &size, &res) != 2)
		res = 0;
	fclose(f);
	return (int64_t)res * sysconf(_SC_PAGESIZE);
}

void rlm_session_info(const struct rlm_session *s, struct rlm_session_info *out)
{
	memset(out, 0, sizeof(*out));
	out->questions = s->s.questions;
	out->contexts = 1 + (int)s->s.n_extra;
	out->restarts = s->s.restarts;
	out->created_ms = s->created_ms;
	out->last_ms = s->last_ms;
	out->compactions = s->s.compactions;
	for (size_t i = 0; i < s->s.n_msgs; i++)
		out->conversation_bytes += s->s.msgs[i].len;
	if (s->s.repl) {
		struct repl_stats st;
		repl_stats(s->s.repl, &st);
		out->pid = st.pid;
		out->rss_bytes = st.pid ? rss_of(st.pid) : 0;
	}
}

cJSON *rlm_session_history_json(const struct rlm_session *s)
{
	return cJSON_Duplicate(s->s.history, true);
}

char *rlm_session_vars(struct rlm_session *s, struct rlm_err *err)
{
	if (!s->s.repl)
		return xstrdup("");
	repl_rebind(s->s.repl, NULL, NULL, NULL, NULL);
	return rlm__sess_vars(s->s.repl, 0, err);
}

void rlm_session_free(struct rlm_session *s)
{
	if (!s)
		return;
	repl_free(s->s.repl);
	drop_conversation(&s->s);
	cJSON_Delete(s->s.history);
	free(s->s.extra);
	free(s->s.setup_code);
	free(s);
}
