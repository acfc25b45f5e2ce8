/* SPDX-License-Identifier: MIT */
/* llm/http_util.c -- the HTTP request and response of one attempt,
 * Retry-After parsing, and the helpers the wire formats share (llm/wire.h):
 * JSON-safe message text, extra parameters, error bodies. */
#include "wire.h"
#include "../common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A server asking for a longer pause than this is capped to it. */
#define RETRY_AFTER_MAX_MS 3600000LL
/* Bytes of a plain-text error body kept as its message. */
#define PLAIN_ERROR_MAX 200
/* Bytes of a rejected extra-parameters string quoted in the message. */
#define EXTRA_QUOTE_MAX 80

/* ---- request and response ---- */

void llm__http_req_header(struct http_req *r, const char *fmt, ...)
{
	va_list ap;
	char *line;
	if (r->n_headers >= LLM_MAX_HEADERS) {
		fprintf(stderr, "rlm: cannot add header '%s': more than %d headers\n", fmt,
			LLM_MAX_HEADERS);
		abort();
	}
	va_start(ap, fmt);
	if (vasprintf(&line, fmt, ap) < 0) {
		fprintf(stderr, "rlm: out of memory formatting header '%s'\n", fmt);
		abort();
	}
	va_end(ap);
	r->headers[r->n_headers++] = line;
}

void llm__http_req_release(struct http_req *r)
{
	struct buf *keep = r->keep;
	free(r->url);
	for (int i = 0; i < r->n_headers; i++)
		free(r->headers[i]);
	if (!keep)
		free(r->body);
	memset(r, 0, sizeof(*r));
	r->keep = keep;
}

void llm__http_resp_init(struct http_resp *r)
{
	memset(r, 0, sizeof(*r)); /* status 0, no transport error */
	buf_init(&r->body, LLM_MAX_BODY);
	r->retry_after_ms = -1;
}

void llm__http_resp_release(struct http_resp *r)
{
	buf_release(&r->body);
}

/* ---- Retry-After ---- */

/* delta-seconds, with an optional fraction: "120", "1.5". */
static int64_t parse_delta(const char *s, const char *end)
{
	int64_t ms = 0, scale = 100;
	while (s < end && text_is_digit(*s)) {
		ms = ms * 10 + (*s++ - '0') * 1000;
		if (ms > RETRY_AFTER_MAX_MS)
			ms = RETRY_AFTER_MAX_MS + 1; /* saturate; keep checking the syntax */
	}
	if (s < end && *s == '.') {
		if (++s == end)
			return -1;
		while (s < end && text_is_digit(*s)) {
			ms += (*s++ - '0') * scale;
			scale /= 10;
		}
	}
	if (s != end)
		return -1;
	return RLM_MIN(ms, RETRY_AFTER_MAX_MS);
}

static int two_digits(const char *s)
{
	if (!text_is_digit(s[0]) || !text_is_digit(s[1]))
		return -1;
	return (s[0] - '0') * 10 + (s[1] - '0');
}

static int name_index(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strncmp(s, names[i], 3) == 0)
			return i;
	return -1;
}

/* IMF-fixdate, "Wed, 21 Oct 2015 07:28:00 GMT", as ms since the epoch. */
static int64_t parse_imf_fixdate(const char *s, size_t len)
{
	static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
	static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
					     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	struct tm tm;
	int mon, year = 0;
	time_t t;
	if (len != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' ||
	    s[16] != ' ' || s[19] != ':' || s[22] != ':' || s[25] != ' ' ||
	    memcmp(s + 26, "GMT", 3) != 0 || name_index(s, days, 7) < 0)
		return -1;
	mon = name_index(s + 8, months, 12);
	for (int i = 12; i < 16; i++) {
		if (!text_is_digit(s[i]))
			return -1;
		year = year * 10 + (s[i] - '0');
	}
	memset(&tm, 0, sizeof(tm));
	tm.tm_mday = two_digits(s + 5);
	tm.tm_hour = two_digits(s + 17);
	tm.tm_min = two_digits(s + 20);
	tm.tm_sec = two_digits(s + 23);
	if (mon < 0 || year < 1970 || tm.tm_mday < 1 || tm.tm_mday > mdays[mon] ||
	    (mon == 1 && tm.tm_mday == 29 &&
	     (year % 4 != 0 || (year % 100 == 0 && year % 400 != 0))) ||
	    tm.tm_hour < 0 || tm.tm_hour > 23 || tm.tm_min < 0 || tm.tm_min > 59 || tm.tm_sec < 0 ||
	    tm.tm_sec > 60)
		return -1;
	tm.tm_mon = mon;
	tm.tm_year = year - 1900;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return -1;
	return (int64_t)t * 1000;
}

int64_t llm__http_parse_retry_after(const char *v, int64_t now_wall_ms)
{
	const char *end;
	int64_t at;
	if (!v)
		return -1;
	while (text_is_space(*v))
		v++;
	end = v + strlen(v);
	while (end > v && text_is_space(end[-1]))
		end--;
	if (end == v)
		return -1;
	if (text_is_digit(*v))
		return parse_delta(v, end);
	at = parse_imf_fixdate(v, (size_t)(end - v));
	if (at < 0)
		return -1;
	if (at <= now_wall_ms)
		return 0;
	return RLM_MIN(at - now_wall_ms, RETRY_AFTER_MAX_MS);
}

/* ---- request bodies ---- */

/* s[0..len) with NUL bytes and invalid UTF-8 replaced by U+FFFD, as a
 * fresh NUL-terminated string. */
static char *clean_text(const char *s, size_t len)
{
	char *out, *o;
	size_t i = 0;
	if (!memchr(s, '\0', len) && text_utf8_valid(s, len, NULL))
		return xstrndup(s, len);
	/* Each bad byte becomes three: the output is at most 3 * len. */
	o = out = xmalloc(len * 3 + 1);
	while (i < len) {
		const char *z = memchr(s + i, '\0', len - i);
		size_t n = z ? (size_t)(z - (s + i)) : len - i, bad = n;
		text_utf8_valid(s + i, n, &bad);
		memcpy(o, s + i, bad);
		o += bad;
		i += bad;
		if (i < len) {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	*o = '\0';
	return out;
}

int llm__wire_add_text(cJSON *obj, const char *key, const char *s, size_t len)
{
	char *t = clean_text(s ? s : "", s ? len : 0);
	int rc = json_add_str(obj, key, t);
	free(t);
	return rc;
}

int llm__wire_merge_extra(cJSON *obj, const char *extra, struct rlm_err *err)
{
	cJSON *j, *it, *next;
	if (!extra)
		return 0;
	j = json_parse(extra, strlen(extra));
	if (!cJSON_IsObject(j)) {
		size_t n = strlen(extra);
		cJSON_Delete(j);
		n = n > EXTRA_QUOTE_MAX ? text_utf8_floor(extra, EXTRA_QUOTE_MAX) : n;
		return rlm_err_set(err, RLM_EINVAL,
				   "extra parameters are not a JSON object: '%.*s%s'", (int)n,
				   extra, extra[n] ? "..." : "");
	}
	for (it = j->child; it; it = next) {
		cJSON *old;
		char *key;
		next = it->next;
		if (!it->string)
			continue;
		cJSON_DetachItemViaPointer(j, it);
		old = cJSON_GetObjectItemCaseSensitive(obj, it->string);
		if (old) {
			cJSON_ReplaceItemViaPointer(obj, old, it); /* cannot fail: both exist */
			continue;
		}
		/* cJSON frees the item's own key while adding: pass a copy. */
		key = xstrdup(it->string);
		json_add(obj, key, it);
		free(key);
	}
	cJSON_Delete(j);
	return 0;
}

int llm__wire_check_key(const char *key, struct rlm_err *err)
{
	for (const char *k = key; k && *k; k++)
		if ((unsigned char)*k < 0x20 || *k == 0x7f)
			return rlm_err_set(err, RLM_EINVAL,
					   "cannot use API key: it holds a control character at "
					   "offset %zu",
					   (size_t)(k - key));
	return 0;
}

int llm__wire_add_texts(cJSON *obj, const char *key, int which)
{
	char raw[2] = {(char)which, '\0'};
	return json_add(obj, key, cJSON_CreateRaw(raw));
}

/* body printed with the values of texts where their placeholders are,
 * into out->body and out->len: in out->keep when it is set (its memory
 * already touched, where a fresh body of 160 KB would take 40 page
 * faults), else in an allocation of its own. */
static void set_body(struct http_req *out, const cJSON *body, const struct llm__wire_texts *texts)
{
	char *head = json_print(body);
	size_t n = strlen(head), room = n + 64, at = 0;
	struct buf own = BUF_INIT, *b = out->keep ? out->keep : &own;
	/* the texts and their wrapping: one allocation for most bodies */
	for (size_t i = 0; i < texts->call->n_msgs; i++)
		room += texts->call->msgs[i].len + texts->call->msgs[i].len / 32 + 96;
	buf_reset(b);
	buf_reserve(b, room);
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)head[i] < 1 || (unsigned char)head[i] > 8)
			continue;
		buf_append(b, head + at, i - at);
		texts->put(b, texts->call, head[i]);
		at = i + 1;
	}
	buf_append(b, head + at, n - at);
	free(head);
	if (out->keep) {
		out->body = b->p;
		out->len = b->len;
	} else {
		out->body = buf_detach(b, &out->len);
	}
}

int llm__wire_finish(struct http_req *out, cJSON *body, int built_rc, const char *model_extra,
		     const char *call_extra, const struct llm__wire_texts *texts, char *url,
		     struct rlm_err *err)
{
	int rc = built_rc;
	if (rc)
		rlm_err_set(err, rc, "cannot build request body");
	if (!rc)
		rc = llm__wire_merge_extra(body, model_extra, err);
	if (!rc)
		rc = llm__wire_merge_extra(body, call_extra, err);
	if (rc) {
		cJSON_Delete(body);
		free(url);
		return rc;
	}
	llm__http_req_release(out);
	out->url = url;
	llm__http_req_header(out, "Content-Type: application/json");
	llm__http_req_header(out, "Accept: application/json");
	set_body(out, body, texts);
	cJSON_Delete(body);
	return 0;
}

/* ---- replies ---- */

int llm__wire_parse_reply(const char *body, size_t len, cJSON **out, struct rlm_err *err)
{
	cJSON *j = json_parse(body, len);
	*out = NULL;
	if (!j)
		return rlm_err_set(err, RLM_EPARSE, "malformed JSON in reply (%zu bytes)", len);
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return rlm_err_set(err, RLM_EPARSE, "reply is not a JSON object (%zu bytes)", len);
	}
	*out = j;
	return 0;
}

static bool nonempty(const char *s)
{
	return s && *s;
}

char *llm__wire_json_error(const cJSON *j)
{
	const cJSON *e, *d;
	const char *m, *t;
	if (!cJSON_IsObject(j))
		return NULL;
	e = json_get(j, "error");
	if (cJSON_IsObject(e)) {
		m = json_str(e, "message");
		t = json_str(e, "type");
		if (nonempty(m) && nonempty(t))
			return xasprintf("%s: %s", t, m);
		if (nonempty(m))
			return xstrdup(m);
		if (nonempty(t))
			return xstrdup(t);
	} else if (cJSON_IsString(e) && nonempty(e->valuestring)) {
		return xstrdup(e->valuestring);
	}
	d = json_get(j, "detail");
	if (cJSON_IsString(d) && nonempty(d->valuestring))
		return xstrdup(d->valuestring);
	if (cJSON_IsArray(d)) {
		struct buf b = BUF_INIT;
		for (const cJSON *it = d->child; it; it = it->next) {
			m = json_str(it, "msg");
			if (!nonempty(m))
				continue;
			if (b.len)
				buf_puts(&b, "; ");
			buf_puts(&b, m);
		}
		if (b.len)
			return buf_detach(&b, NULL);
		buf_release(&b);
	}
	m = json_str(j, "message");
	if (nonempty(m))
		return xstrdup(m);
	return NULL;
}

/* The first bytes of a plain-text body as one line of valid UTF-8 for an
 * error message: control characters count as whitespace, whitespace runs
 * become one space, bytes that are not UTF-8 become '?'. */
static char *plain_error(const char *body, size_t len)
{
	char *out = xmalloc(PLAIN_ERROR_MAX + 1);
	size_t n = 0, i = 0;
	bool space = false;
	len = text_utf8_floor(body, RLM_MIN(len, (size_t)PLAIN_ERROR_MAX));
	while (i < len) {
		unsigned char ch = (unsigned char)body[i];
		size_t k;
		if (ch <= 0x20 || ch == 0x7f) {
			space = n > 0;
			i++;
			continue;
		}
		if (space)
			out[n++] = ' ';
		space = false;
		k = text_utf8_seq_len(body + i, len - i);
		if (k) {
			memcpy(out + n, body + i, k);
			n += k;
			i += k;
		} else {
			out[n++] = '?';
			i++;
		}
	}
	out[n] = '\0';
	if (!n) {
		free(out);
		return NULL;
	}
	return out;
}

char *llm__wire_generic_error(const char *body, size_t len)
{
	cJSON *j;
	char *msg;
	if (!body || !len)
		return NULL;
	j = json_parse(body, len);
	if (!j)
		return plain_error(body, len);
	msg = llm__wire_json_error(j);
	cJSON_Delete(j);
	return msg;
}

void llm__wire_set_result(struct llm_call *c, const char *text, size_t len, const char *finish)
{
	free(c->text);
	free(c->finish_reason);
	c->text = xstrndup(text, len);
	c->len = len;
	c->finish_reason = finish ? xstrdup(finish) : NULL;
}

int64_t llm__wire_count(const cJSON *obj, const char *key)
{
	int64_t v = json_int(obj, key, 0);
	return v > 0 ? v : 0;
}
