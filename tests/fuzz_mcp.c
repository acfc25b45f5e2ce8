/* SPDX-License-Identifier: MIT */
/* tests/fuzz_mcp.c -- libFuzzer target: any bytes as what `rlm mcp` reads
 * on stdin, given in pieces of a size the first byte picks, through its
 * framing and its message handling (serve__mcp_feed, serve__mcp_end), with
 * tools/call checking its arguments and running nothing (dry_run). What
 * it writes is one JSON-RPC response of the right shape for each message
 * that asks for one, in order, with the request's id (every line under the
 * cap the first byte picks is a message, every one over it gets an error),
 * and valid UTF-8 when the input was. */
#include "../serve/mcp_int.h"
#include "../common/common.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Does message s[0..len) ask for a response? When it does, *id is the id
 * the response must carry (NULL: null; the caller's). */
static bool wants_response(const char *s, size_t len, cJSON **id)
{
	cJSON *j = json_parse(s, len);
	const cJSON *jid = json_get(j, "id"), *method = json_get(j, "method");
	const char *v = json_str(j, "jsonrpc");
	bool id_ok = !jid || cJSON_IsString(jid) || cJSON_IsNumber(jid), quiet = false;
	int ids = 0;
	*id = NULL;
	/* An object with the key "id" twice is answered, with a null id: it
	 * could not be read (a duplicate key elsewhere is refused with the
	 * id, when the message is answered at all). */
	cJSON_ArrayForEach(jid, cJSON_IsObject(j) ? j : NULL)
	{
		ids += jid->string && strcmp(jid->string, "id") == 0;
	}
	jid = json_get(j, "id");
	if (ids > 1) {
		cJSON_Delete(j);
		return true;
	}
	/* Responses to requests of the server's (it makes none) and
	 * notifications are not answered, whatever else is wrong with them. */
	if (cJSON_IsObject(j) && id_ok && v && strcmp(v, "2.0") == 0)
		quiet = (!method && (json_get(j, "result") || json_get(j, "error"))) ||
			(!jid && cJSON_IsString(method));
	/* An id that is not a finite number or a string is answered null. */
	if (!quiet && jid && id_ok && !(cJSON_IsNumber(jid) && !isfinite(jid->valuedouble)))
		*id = cJSON_Duplicate(jid, 1);
	cJSON_Delete(j);
	return !quiet;
}

/* One response written, r[0..len) (without its '\n'), against what it
 * answers: a message with id want (NULL: null). */
static void check_response(const char *r, size_t len, const cJSON *want)
{
	cJSON *j = json_parse(r, len);
	const cJSON *id = json_get(j, "id"), *res = json_get(j, "result"),
		    *e = json_get(j, "error");
	const char *v = json_str(j, "jsonrpc"), *msg = json_str(e, "message");
	int code = (int)json_int(e, "code", 0);
	if (!cJSON_IsObject(j) || !v || strcmp(v, "2.0") != 0 || !id || !res == !e)
		abort();
	if (want ? !cJSON_Compare(id, want, true) : !cJSON_IsNull(id))
		abort();
	if (res && !cJSON_IsObject(res))
		abort();
	if (e && (!msg || !*msg ||
		  (code != MCP_PARSE_ERROR && code != MCP_INVALID_REQUEST &&
		   code != MCP_METHOD_NOT_FOUND && code != MCP_INVALID_PARAMS &&
		   code != MCP_INTERNAL_ERROR)))
		abort();
	cJSON_Delete(j);
}

/* The next line of out[0..len) from *pos: its length, or abort when there
 * is none. */
static size_t next_line(const char *out, size_t len, size_t *pos)
{
	const char *nl = *pos < len ? memchr(out + *pos, '\n', len - *pos) : NULL;
	if (!nl)
		abort();
	return (size_t)(nl - (out + *pos));
}

/* Check what was written (out[0..len)) against the input (in[0..n)),
 * read with lines capped at cap bytes. */
static void check_output(const char *in, size_t n, size_t cap, const char *out, size_t len)
{
	size_t pos = 0, off = 0;
	while (off < n) {
		const char *nl = memchr(in + off, '\n', n - off);
		size_t raw = nl ? (size_t)(nl - (in + off)) : n - off, t = raw, k;
		cJSON *id = NULL;
		if (raw > cap) { /* one error, with no id */
			k = next_line(out, len, &pos);
			check_response(out + pos, k, NULL);
			pos += k + 1;
		} else {
			while (t && (in[off + t - 1] == '\r' || in[off + t - 1] == ' ' ||
				     in[off + t - 1] == '\t'))
				t--;
			if (t && wants_response(in + off, t, &id)) {
				k = next_line(out, len, &pos);
				check_response(out + pos, k, id);
				pos += k + 1;
			}
			cJSON_Delete(id);
		}
		off += raw + 1;
	}
	if (pos != len) /* a response to nothing */
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Line caps: the server's, and small ones to reach its refusal. */
	static const size_t caps[] = {(size_t)64 << 20, 4096, 256, 16};
	static const size_t pieces[] = {65536, 1, 2, 7, 64, 1000, 4096, 65536};
	static int out_fd = -1;
	struct mcp m;
	struct mcp_reader rd = {BUF_INIT, false};
	size_t cap, piece, n;
	char *in, *out;
	off_t end;
	if (out_fd < 0 && (out_fd = memfd_create("fuzz_mcp", 0)) < 0)
		abort();
	if (size < 1)
		return 0;
	cap = caps[data[0] & 3];
	piece = pieces[(data[0] >> 2) & 7];
	data++;
	size--;
	memset(&m, 0, sizeof(m));
	m.out_fd = out_fd;
	m.dry_run = true;
	pthread_mutex_init(&m.out_mu, NULL);
	pthread_mutex_init(&m.mu, NULL);
	buf_init(&rd.line, cap);
	/* An exact-size copy, so that reading past the input is caught. */
	in = malloc(size ? size : 1);
	memcpy(in, data, size);
	for (size_t off = 0; off < size; off += n) {
		n = RLM_MIN(piece, size - off);
		serve__mcp_feed(&m, &rd, in + off, n);
	}
	serve__mcp_end(&m, &rd);
	free(in);
	buf_release(&rd.line);
	pthread_mutex_destroy(&m.mu);
	pthread_mutex_destroy(&m.out_mu);
	if (m.calls) /* a dry run starts nothing */
		abort();

	/* What was written since the file's start (it is not truncated
	 * between inputs: its pages are kept). */
	end = lseek(out_fd, 0, SEEK_CUR);
	out = malloc((size_t)end + 1);
	if (end < 0 || pread(out_fd, out, (size_t)end, 0) != end || lseek(out_fd, 0, SEEK_SET))
		abort();
	if (text_utf8_valid((const char *)data, size, NULL) && !text_utf8_valid(out, (size_t)end, NULL))
		abort();
	check_output((const char *)data, size, cap, out, (size_t)end);
	free(out);
	return 0;
}
