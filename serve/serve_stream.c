/* SPDX-License-Identifier: MIT */
/* serve/serve_stream.c -- a streamed chat completion of `rlm serve`
 * ("stream": true): OpenAI's chunks, with the solve's progress.
 *
 * DESIGN
 * The library asks the reader for bytes on the connection's thread; the
 * reader formats one thing at a time: the role chunk at once, then, while
 * the solve runs, a progress line (delta.reasoning_content) for each event
 * of the run's log worth one, or a comment when the run has been quiet
 * for a while (so that proxies keep the connection), then the answer in
 * content chunks, the finish chunk, an optional usage chunk and [DONE].
 * Between events it looks at the client: one that went away cancels the
 * solve. */
#include "serve_int.h"
#include "../common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES	  1024		     /* of the answer per content chunk */
#define PROGRESS_EVERY_NS (1000 * 1000000LL) /* mid-wave progress lines, at most */

enum cs_state { CS_ROLE, CS_WAIT, CS_CONTENT, CS_FINISH, CS_USAGE, CS_DONE, CS_OVER };

/* A streamed completion. Owned by the library's response; used on the
 * connection's thread only. */
struct chat_stream {
	struct server *sv;
	struct svc_run *r;	/* a reference */
	char *model;		/* owned */
	char id[SERVE__OAI_ID]; /* of the completion */
	int fd;			/* the connection's socket, to see the client go */
	int64_t created, deadline_ns, last_ns;
	bool include_usage;
	bool progress;	 /* progress lines as reasoning_content */
	bool gone;	 /* the client went away: end with an error */
	size_t pos;	 /* the next event of the run's log */
	int64_t wave_ns; /* when a mid-wave line was last sent */
	enum cs_state state;
	cJSON *run;	/* serve_run_json once ended */
	size_t sent;	/* bytes of the answer sent */
	struct buf out; /* formatted, not yet sent from off */
	size_t off;
};

/* One chunk: choices [{index 0, delta, finish_reason}] (delta NULL: no
 * choices, usage instead; with include_usage the others carry "usage":
 * null, as OpenAI's do); ext: an "rlm" member (consumed), or NULL. */
static void cs_chunk(struct chat_stream *cs, cJSON *delta, const char *finish, cJSON *ext)
{
	cJSON *o = llm_openai_reply_new("chat.completion.chunk", cs->id, cs->model, cs->created,
					delta, finish);
	char *s;
	if (!delta)
		json_add(o, "usage", serve__oai_usage_json(cs->run));
	else if (cs->include_usage)
		json_add(o, "usage", cJSON_CreateNull());
	if (ext)
		json_add(o, "rlm", ext);
	s = json_print(o);
	cJSON_Delete(o);
	buf_printf(&cs->out, "data: %s\n\n", s ? s : "{}");
	free(s);
}

/* A delta of one string field. */
static cJSON *delta_of(const char *key, const char *s, size_t len)
{
	cJSON *d = cJSON_CreateObject();
	json_add_strn(d, key, s, len);
	return d;
}

static void cs_error(struct chat_stream *cs, const char *type, const char *msg)
{
	cJSON *o = cJSON_CreateObject(), *e = cJSON_CreateObject();
	char *s;
	json_add_str(e, "type", type);
	json_add_str(e, "message", msg);
	json_add(o, "error", e);
	s = json_print(o);
	cJSON_Delete(o);
	buf_printf(&cs->out, "data: %s\n\n", s ? s : "{}");
	free(s);
}

/* The first line of t, at most max bytes (on a UTF-8 boundary), into b. */
static void first_line(struct buf *b, const char *t, size_t max)
{
	size_t n;
	while (t && (*t == '\n' || *t == ' ' || *t == '\t'))
		t++;
	if (!t || !*t)
		return;
	n = strcspn(t, "\n");
	if (n > max) {
		n = text_utf8_floor(t, max);
		buf_printf(b, "%.*s...", (int)n, t);
	} else {
		buf_printf(b, "%.*s", (int)n, t);
	}
}

/* True when a wave's report (done of total) is to be skipped: one in the
 * middle of a wave, less than PROGRESS_EVERY_NS after the last one. */
static bool wave_throttled(struct chat_stream *cs, double done, double total)
{
	int64_t now = time_now_ns();
	if (done > 0 && done < total && now - cs->wave_ns < PROGRESS_EVERY_NS)
		return true;
	cs->wave_ns = now;
	return false;
}

/* A progress line for event e of the run's log into b (nothing for
 * events not worth a line). */
static void progress_line(struct chat_stream *cs, const cJSON *e, struct buf *b)
{
	const char *kind = json_str(e, "kind"), *phase = json_str(e, "phase");
	const char *text = json_str(e, "text");
	const cJSON *data = json_get(e, "data");
	int depth = (int)json_int(e, "depth", 0), it = (int)json_int(e, "iteration", 0);
	int node = (int)json_int(e, "node", 0);
	double done = json_num(e, "done", 0), total = json_num(e, "total", 0);
	if (!kind)
		return;
	if (strcmp(kind, "progress") == 0 && phase) {
		if (strcmp(phase, "root") == 0) {
			buf_printf(b, "Turn %d: the root model is thinking.", it);
		} else if (strcmp(phase, "compact") == 0) {
			buf_printf(b, "Turn %d: compacting the conversation.", it);
		} else if (strcmp(phase, "sub") == 0) {
			if (!wave_throttled(cs, done, total))
				buf_printf(b, "Turn %d: sub-calls %.0f/%.0f.", it, done, total);
		} else if (strcmp(phase, "child") == 0) {
			if (!wave_throttled(cs, done, total))
				buf_printf(b, "Turn %d: child RLMs %.0f/%.0f.", it, done, total);
		} else if (strcmp(phase, "leaves") == 0) {
			if (!wave_throttled(cs, done, total))
				buf_printf(b, "Reading parts %.0f/%.0f.", done, total);
		} else if (strcmp(phase, "combine") == 0) {
			if (!wave_throttled(cs, done, total))
				buf_printf(b, "Combining, level %d: %.0f/%.0f.", it, done, total);
		}
	} else if (strcmp(kind, "code") == 0 && depth == 0) {
		buf_printf(b, "Turn %d: running code: ", it);
		first_line(b, text, 100);
	} else if (strcmp(kind, "notice") == 0 && depth == 0) {
		buf_printf(b, "Turn %d: ", it);
		first_line(b, text, 160);
	} else if (strcmp(kind, "child") == 0) {
		buf_printf(b, "%*sChild RLM %d (depth %d) asks: ", 2 * (depth - 1), "", node,
			   depth);
		first_line(b, text, 120);
	} else if (strcmp(kind, "child_end") == 0) {
		const char *stop = json_str(data, "stop");
		buf_printf(b, "%*sChild RLM %d %s (%.0f calls%s).", 2 * (depth - 1), "", node,
			   stop && strcmp(stop, "answer") == 0 ? "answered" : "stopped",
			   json_num(data, "calls", 0),
			   cJSON_IsTrue(json_get(data, "memo")) ? ", from the store" : "");
	}
	if (b->len)
		buf_putc(b, '\n');
}

/* The run ended: its state, then the answer or the error. */
static void cs_ended(struct chat_stream *cs)
{
	cs->run = serve_run_json(cs->r);
	if (strcmp(json_str(cs->run, "status"), "failed") == 0) {
		char msg[600];
		snprintf(msg, sizeof(msg), "the solve failed (run %s): %s", serve_run_id(cs->r),
			 json_str(cs->run, "error") ? json_str(cs->run, "error") : "");
		cs_error(cs, "internal", msg);
		cs->state = CS_DONE;
	} else {
		char why[1200];
		/* a structured answer: its JSON text, or an error when it
		 * never validated */
		if (!serve__oai_content(cs->run, why, sizeof(why)) &&
		    cJSON_IsTrue(json_get(cs->run, "structured"))) {
			cs_error(cs, "invalid_answer", why);
			cs->state = CS_DONE;
			return;
		}
		cs->state = CS_CONTENT;
	}
}

/* While the run runs: its next progress line, a keepalive comment, or
 * (returning false) nothing more to wait for: it ended, ran out of time,
 * or its client went away. */
static bool cs_wait(struct chat_stream *cs)
{
	int64_t check_at = time_now_ns() + SRV_SLICE_NS; /* the client, the time */
	for (;;) {
		int64_t until = RLM_MIN(time_now_ns() + SRV_SLICE_NS, cs->deadline_ns);
		bool ended = false;
		if (cs->progress) {
			cJSON *e = serve_run_event(cs->r, cs->pos, until, &ended);
			if (e) {
				const char *kind = json_str(e, "kind");
				struct buf line = BUF_INIT;
				cs->pos++;
				ended = kind && strcmp(kind, "end") == 0;
				if (!ended)
					progress_line(cs, e, &line);
				cJSON_Delete(e);
				if (line.len)
					cs_chunk(cs,
						 delta_of("reasoning_content", line.p, line.len),
						 NULL, NULL);
				buf_release(&line);
				if (cs->out.len)
					return true;
				if (!ended && time_now_ns() < check_at)
					continue;
			}
		} else {
			ended = serve_run_wait(cs->r, until);
		}
		check_at = time_now_ns() + SRV_SLICE_NS;
		if (ended || serve_run_wait(cs->r, time_now_ns())) {
			cs_ended(cs);
			return false;
		}
		if (serve__client_gone(cs->fd)) {
			serve__cancel_run(cs->r, "the client of a stream went away");
			cs->gone = true;
			return false;
		}
		if (time_now_ns() >= cs->deadline_ns) {
			char msg[300];
			serve__cancel_run(cs->r, "past the request timeout");
			snprintf(msg, sizeof(msg),
				 "the solve ran past the request timeout of %.0f s and was "
				 "cancelled (run %s)",
				 (double)cs->sv->request_timeout_ns / 1e9, serve_run_id(cs->r));
			cs_error(cs, "timeout", msg);
			cs->state = CS_DONE;
			return false;
		}
		if (time_now_ns() - cs->last_ns >= SRV_KEEPALIVE_NS) {
			buf_puts(&cs->out, ": solving\n\n");
			return true;
		}
	}
}

/* Format what comes next; false when the stream is over. */
static bool cs_next(struct chat_stream *cs)
{
	buf_reset(&cs->out);
	cs->off = 0;
	switch (cs->state) {
	case CS_ROLE:
		cs_chunk(cs, llm_openai_message_new("", 0), NULL, NULL);
		cs->state = CS_WAIT;
		break;
	case CS_WAIT:
		if (!cs_wait(cs) && !cs->out.len)
			return cs->gone ? false : cs_next(cs);
		break;
	case CS_CONTENT: {
		const char *a = json_str(cs->run, "answer");
		size_t len = a ? strlen(a) : 0, n;
		if (cs->sent >= len) {
			cs->state = CS_FINISH;
			return cs_next(cs);
		}
		n = len - cs->sent <= CHUNK_BYTES ? len - cs->sent
						  : text_utf8_floor(a + cs->sent, CHUNK_BYTES);
		if (!n)
			n = len - cs->sent; /* not UTF-8 after all: send the rest */
		cs_chunk(cs, delta_of("content", a + cs->sent, n), NULL, NULL);
		cs->sent += n;
		break;
	}
	case CS_FINISH:
		cs_chunk(cs, cJSON_CreateObject(), serve__oai_finish_reason(cs->run),
			 serve__oai_rlm_ext(cs->run));
		cs->state = cs->include_usage ? CS_USAGE : CS_DONE;
		break;
	case CS_USAGE:
		cs_chunk(cs, NULL, NULL, NULL);
		cs->state = CS_DONE;
		break;
	case CS_DONE:
		buf_puts(&cs->out, "data: [DONE]\n\n");
		cs->state = CS_OVER;
		break;
	case CS_OVER:
		return false;
	}
	cs->last_ns = time_now_ns();
	return true;
}

static ssize_t cs_read(void *cls, uint64_t off, char *out, size_t max)
{
	struct chat_stream *cs = cls;
	size_t n;
	(void)off;
	if (cs->off >= cs->out.len && !cs_next(cs))
		return cs->gone ? MHD_CONTENT_READER_END_WITH_ERROR
				: MHD_CONTENT_READER_END_OF_STREAM;
	n = RLM_MIN(max, cs->out.len - cs->off);
	memcpy(out, cs->out.p + cs->off, n);
	cs->off += n;
	return (ssize_t)n;
}

static void cs_free(void *cls)
{
	struct chat_stream *cs = cls;
	/* A client gone before the answer: its solve is of no use (and is
	 * not waited for here, on the library's thread). */
	if (cs->state <= CS_WAIT && serve_run_cancel(cs->r))
		log_info("serve: run %s cancelled: its stream ended early", serve_run_id(cs->r));
	serve_run_put(cs->r);
	cJSON_Delete(cs->run);
	buf_release(&cs->out);
	free(cs->model);
	free(cs);
}

enum MHD_Result serve__chat_stream(struct req *rq, struct svc_run *r, const char *model,
				bool include_usage, bool progress)
{
	struct chat_stream *cs = xcalloc(1, sizeof(*cs));
	cs->sv = rq->sv;
	cs->r = r;
	cs->model = xstrdup(model);
	serve__oai_id(cs->id, serve_run_id(r));
	cs->created = time_wall_ms() / 1000;
	cs->deadline_ns = rq->t0 + rq->sv->request_timeout_ns;
	cs->last_ns = time_now_ns();
	cs->include_usage = include_usage;
	cs->progress = progress;
	cs->fd = rq->fd;
	return serve__stream(rq, cs, cs_read, cs_free);
}
