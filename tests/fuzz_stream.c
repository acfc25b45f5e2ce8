/* SPDX-License-Identifier: MIT */
/* tests/fuzz_stream.c -- libFuzzer target: any bytes as the stream a worker
 * writes on fd 4, through a real pipe, in chunks of sizes the input picks,
 * read as the controller reads it (repl__pump, repl__take_frame): length
 * prefixes, frames split across reads, binary call frames read into
 * blocks of their own and the spare blocks that go round. Every frame
 * taken has its type and its prompts the lengths carried; a broken stream is an error, never a crash; the
 * buffer's offsets stay in order; a large frame is never copied out of a
 * larger block (repl_stats.frames_copied stays 0).
 *
 * The input: byte 0 picks the chunk size (64..16320 bytes, or the pipe's
 * whole free room; the large frames at least 8 KiB), byte 1 how many
 * large binary call frames (0..3 of 70..130 KB, valid) go before the
 * rest, which is the stream itself
 * (libFuzzer's inputs are 64 KiB at most here: the large frames take the
 * paths of frames over a read's 64 KiB). */
#include "../repl/repl_int.h"
#include "../common/json.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A valid binary call frame, length prefix included, of one prompt of
 * len bytes (fill), appended to b. */
static void large_frame(struct buf *b, size_t len, char fill)
{
	char head[160];
	int h = snprintf(head, sizeof(head),
			 "{\"type\":\"call\",\"id\":1,\"exec\":1,\"kind\":\"llm\",\"batched\":true,"
			 "\"model\":null,\"prompt_lens\":[%zu]}",
			 len);
	size_t body = 5 + (size_t)h + len + 1;
	unsigned char pre[9] = {(unsigned char)(body >> 24), (unsigned char)(body >> 16),
				(unsigned char)(body >> 8),  (unsigned char)body,
				0,			     (unsigned char)((unsigned)h >> 24),
				(unsigned char)(h >> 16),    (unsigned char)(h >> 8),
				(unsigned char)h};
	buf_append(b, pre, sizeof(pre));
	buf_append(b, head, (size_t)h);
	char *text = xmalloc(len + 1);
	memset(text, fill, len);
	text[len] = '\0';
	buf_append(b, text, len + 1);
	free(text);
}

static void check_offsets(const struct repl *r)
{
	if (r->in_off > r->in_len || r->in_len > r->in_cap || (r->in_cap && !r->in) ||
	    r->n_spare < 0 || r->n_spare > REPL_SPARES)
		abort();
}

/* Take every whole frame: false once the stream broke the protocol. */
static bool take_all(struct repl *r, size_t *large)
{
	for (;;) {
		struct rlm_err why = {0, ""};
		cJSON *f = NULL;
		int k = repl__take_frame(r, &f, &why);
		check_offsets(r);
		if (k < 0) {
			if (f || !why.msg[0])
				abort();
			return false;
		}
		if (k == 0) {
			if (f)
				abort();
			return true;
		}
		if (!f || !json_str(f, "type"))
			abort();
		if (strcmp(json_str(f, "type"), "call") == 0) {
			const cJSON *p;
			cJSON_ArrayForEach(p, json_get(f, "prompts"))
			{
				size_t n = strlen(p->valuestring);
				if ((p->type & cJSON_IsReference) && (double)n != p->valuedouble)
					abort(); /* the length carried is the prompt's */
				if (n >= 70000)
					(*large)++;
			}
		}
		repl__frame_free(r, f);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct repl *r;
	struct repl_stats st;
	struct buf in = BUF_INIT;
	size_t chunk, at = 0, large = 0, n_large, large_end, spins = 0;
	int fds[2];
	bool ok = true;
	if (size < 2 || pipe2(fds, O_NONBLOCK | O_CLOEXEC))
		return 0;
	chunk = data[0] ? (size_t)data[0] * 64 : SIZE_MAX;
	n_large = data[1] % 4;
	for (size_t i = 0; i < n_large; i++)
		large_frame(&in, 70000 + 30000 * i, (char)('a' + i));
	large_end = in.len;
	buf_append(&in, data + 2, size - 2);

	r = xcalloc(1, sizeof(*r));
	r->cfg.max_frame = (size_t)1 << 20;
	r->from_w = fds[0];
	r->to_w = r->pidfd = r->log_r = r->wake_fd = -1;
	while (ok && at < in.len) {
		/* the large frames go in larger chunks (still split, at
		 * places that vary with the chunk), or a run takes seconds */
		size_t c = at < large_end ? RLM_MAX(chunk, 8192 + chunk % 4096) : chunk;
		ssize_t k = write(fds[1], in.p + at, RLM_MIN(c, in.len - at));
		if (k > 0) {
			at += (size_t)k;
			spins = 0;
		} else if (++spins > 1000) {
			break; /* nothing reads: a frame waits for more than fits */
		}
		repl__pump(r, 0);
		check_offsets(r);
		ok = take_all(r, &large);
	}
	close(fds[1]);
	for (int i = 0; ok && i < 64 && !r->eof; i++) {
		repl__pump(r, 10);
		check_offsets(r);
		ok = take_all(r, &large);
	}
	/* the large frames went first and whole: each was taken, uncopied */
	if (spins <= 1000 && large < n_large)
		abort();
	repl_stats(r, &st);
	if (st.frames_copied)
		abort();
	repl__spares_drop(r);
	free(r->in);
	close(fds[0]);
	free(r);
	buf_release(&in);
	return 0;
}
