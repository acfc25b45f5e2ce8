/* SPDX-License-Identifier: MIT */
/* repl/frame.c -- the frame protocol with the worker: checking what it
 * sends (it is hostile), encoding what we send, and cutting output. */
#include "repl_int.h"
#include "../common/json.h"
#include "../common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parsing frames from the worker ---- */

enum field_kind {
	F_INT,	 /* an integer that a double holds exactly */
	F_COUNT, /* an integer >= 0 */
	F_COUNT_OPT, /* absent, or an integer >= 0 */
	F_STR_OPT,   /* absent, or a string */
	F_BOOL,
	F_STR,
	F_STR_NULL, /* a string or null */
	F_STRS,	    /* an array of strings */
};

struct field {
	const char *name;
	enum field_kind kind;
};

static const struct field ready_fields[] = {
    {"pid", F_INT},
    {"python", F_STR},
    {"context_chars", F_COUNT},
    {"documents", F_COUNT},
    {"schema_error", F_STR_OPT},
};
static const struct field call_fields[] = {
    {"id", F_INT},	 {"exec", F_INT},	{"kind", F_STR},
    {"batched", F_BOOL}, {"model", F_STR_NULL}, {"prompts", F_STRS},
};
static const struct field result_fields[] = {
    {"id", F_INT},	    {"output", F_STR},	     {"output_chars", F_COUNT},
    {"error", F_BOOL},	    {"interrupted", F_BOOL}, {"ready", F_BOOL},
    {"answer", F_STR_NULL}, {"content", F_STR_NULL}, {"vars", F_STRS},
    {"error_at", F_COUNT_OPT}, {"invalid", F_STR_OPT},
};
static const struct field fatal_fields[] = {
    {"error", F_STR},
};

static const struct {
	const char *type;
	const struct field *fields;
	size_t n;
	size_t max_items; /* of the F_STRS field */
} frame_types[] = {
    {"ready", ready_fields, ARRAY_SIZE(ready_fields), 0},
    {"call", call_fields, ARRAY_SIZE(call_fields), REPL_MAX_PROMPTS},
    {"result", result_fields, ARRAY_SIZE(result_fields), REPL_MAX_VARS},
    {"fatal", fatal_fields, ARRAY_SIZE(fatal_fields), 0},
};

/* A string node that is text. A reference is a binary call frame's
 * prompt, which binary_call checked where it lies (the JSON parser makes
 * no references): it is not read again. */
static bool str_ok(const cJSON *it)
{
	if (cJSON_IsString(it) && it->valuestring && (it->type & cJSON_IsReference))
		return true;
	return cJSON_IsString(it) && it->valuestring &&
	       text_utf8_valid(it->valuestring, strlen(it->valuestring), NULL);
}

static int check_field(const cJSON *f, const struct field *fd, size_t max_items,
		       struct rlm_err *err)
{
	const cJSON *it = json_get(f, fd->name), *el;
	size_t n = 0;
	switch (fd->kind) {
	case F_COUNT_OPT:
		if (!it)
			return 0;
		/* fall through */
	case F_INT:
	case F_COUNT:
		if (!cJSON_IsNumber(it) || it->valuedouble != (double)(int64_t)it->valuedouble ||
		    it->valuedouble > 9007199254740992.0 || it->valuedouble < -9007199254740992.0 ||
		    (fd->kind != F_INT && it->valuedouble < 0))
			goto bad;
		return 0;
	case F_BOOL:
		if (!cJSON_IsBool(it))
			goto bad;
		return 0;
	case F_STR_OPT:
		if (!it)
			return 0;
		if (!str_ok(it))
			goto bad;
		return 0;
	case F_STR_NULL:
		if (cJSON_IsNull(it))
			return 0;
		/* fall through */
	case F_STR:
		if (!str_ok(it))
			goto bad;
		return 0;
	case F_STRS:
		if (!cJSON_IsArray(it))
			goto bad;
		cJSON_ArrayForEach(el, it)
		{
			if (++n > max_items)
				return rlm_err_set(err, RLM_ETOOBIG, "'%s' has more than %zu items",
						   fd->name, max_items);
			if (!str_ok(el))
				goto bad;
		}
		return 0;
	}
bad:
	return rlm_err_set(err, RLM_EPARSE, "field '%s' is missing or of the wrong type", fd->name);
}

static int check_call(const cJSON *f, struct rlm_err *err)
{
	const char *kind = json_str(f, "kind");
	const cJSON *cs = json_get(f, "contexts");
	int n = cJSON_GetArraySize(json_get(f, "prompts"));
	if (strcmp(kind, "llm") != 0 && strcmp(kind, "rlm") != 0 && strcmp(kind, "tool") != 0)
		return rlm_err_set(err, RLM_EPARSE, "a call of unknown kind '%.40s'", kind);
	if (n < 1)
		return rlm_err_set(err, RLM_EPARSE, "a call without prompts");
	if (!cJSON_IsTrue(json_get(f, "batched")) && n != 1)
		return rlm_err_set(err, RLM_EPARSE, "a single call with %d prompts", n);
	/* A tool call's prompts are requests (JSON texts the handler judges):
	 * no model, no contexts; a batch of one request is fine. */
	if (kind[0] == 't' && !cJSON_IsNull(json_get(f, "model")))
		return rlm_err_set(err, RLM_EPARSE, "a tool call with a model");
	/* Optional, rlm only: one item per prompt. What an item says is
	 * judged per prompt (repl__ctx_arg, then the handler): a bad one
	 * fails its prompt, not the worker. */
	if (!cs)
		return 0;
	if (strcmp(kind, "rlm") != 0)
		return rlm_err_set(err, RLM_EPARSE, "%s call with contexts",
				   kind[0] == 'l' ? "an llm" : "a tool");
	if (!cJSON_IsArray(cs) || cJSON_GetArraySize(cs) != n)
		return rlm_err_set(err, RLM_EPARSE,
				   "a call whose 'contexts' is not an array of %d "
				   "items (one per prompt)",
				   n);
	return 0;
}

/* ---- the contexts of a call ---- */

/* A JSON number that is an integer in [0, 2^53]. */
static bool count_ok(const cJSON *it, uint64_t *v)
{
	if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 9007199254740992.0 ||
	    it->valuedouble != (double)(uint64_t)it->valuedouble)
		return false;
	*v = (uint64_t)it->valuedouble;
	return true;
}

/* {"ref":[a,b]} or {"docs":[a,b]}: its kind, or REPL_CTX_BAD. */
static enum repl_ctx_kind ref_of(const cJSON *item, struct repl_ctx_arg *a)
{
	const cJSON *key = item->child, *v;
	enum repl_ctx_kind k;
	if (!key || key->next || !key->string)
		return REPL_CTX_BAD;
	if (strcmp(key->string, "ref") == 0)
		k = REPL_CTX_SLICE;
	else if (strcmp(key->string, "docs") == 0)
		k = REPL_CTX_RUN;
	else
		return REPL_CTX_BAD;
	v = key;
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2 ||
	    !count_ok(cJSON_GetArrayItem(v, 0), &a->a) || !count_ok(cJSON_GetArrayItem(v, 1), &a->b))
		return REPL_CTX_BAD;
	return k;
}

void repl__ctx_arg(const cJSON *item, struct repl_ctx_arg *a)
{
	const cJSON *el;
	memset(a, 0, sizeof(*a));
	if (!item || cJSON_IsNull(item)) {
		a->kind = REPL_CTX_NONE;
	} else if (cJSON_IsString(item)) {
		a->kind = str_ok(item) ? REPL_CTX_TEXT : REPL_CTX_BAD;
		a->text = item->valuestring;
		a->len = strlen(item->valuestring);
		a->bad = "a context str that is not UTF-8";
	} else if (cJSON_IsArray(item)) {
		size_t n = (size_t)cJSON_GetArraySize(item), i = 0;
		const char **items = xcalloc(n ? n : 1, sizeof(*items));
		size_t *lens = xcalloc(n ? n : 1, sizeof(*lens));
		a->kind = REPL_CTX_LIST;
		a->items = items;
		a->item_lens = lens;
		a->n_items = n;
		cJSON_ArrayForEach(el, item)
		{
			if (!str_ok(el)) {
				repl__ctx_arg_release(a);
				a->kind = REPL_CTX_BAD;
				a->bad = "a context list with an item that is not a str";
				return;
			}
			items[i] = el->valuestring;
			lens[i++] = strlen(el->valuestring);
		}
	} else if (cJSON_IsObject(item) && (a->kind = ref_of(item, a)) != REPL_CTX_BAD) {
		return;
	} else {
		a->kind = REPL_CTX_BAD;
		a->a = a->b = 0;
		a->bad = cJSON_IsObject(item) ? "a context reference that is not {\"ref\": [offset, "
						"length]} or {\"docs\": [first, end]}"
					      : "a context that is not a str, a list of str, a "
						"reference or null";
	}
}

void repl__ctx_arg_release(struct repl_ctx_arg *a)
{
	if (a->kind == REPL_CTX_LIST) {
		free((void *)(uintptr_t)a->items);
		free((void *)(uintptr_t)a->item_lens);
	}
	a->items = NULL;
	a->item_lens = NULL;
	a->n_items = 0;
}

/* ---- the sources of a result ---- */

#define SOURCE_DOC_MAX 4000 /* bytes of a document id */

/* One entry: its doc (and range, quote) into *s, or a static phrase
 * saying what is wrong with it. */
static const char *source_of(const cJSON *el, struct repl_source *s)
{
	const cJSON *doc = el, *q = NULL;
	uint64_t v;
	s->start = s->end = -1;
	if (cJSON_IsObject(el)) {
		const cJSON *it;
		doc = json_get(el, "doc");
		if ((it = json_get(el, "start")) && !cJSON_IsNull(it)) {
			if (!count_ok(it, &v))
				return "a \"start\" that is not an integer >= 0";
			s->start = (int64_t)v;
		}
		if ((it = json_get(el, "end")) && !cJSON_IsNull(it)) {
			if (!count_ok(it, &v))
				return "an \"end\" that is not an integer >= 0";
			s->end = (int64_t)v;
		}
		if ((q = json_get(el, "quote")) && cJSON_IsNull(q))
			q = NULL;
		if (q && (!str_ok(q) || text_utf8_count(q->valuestring, strlen(q->valuestring)) >
							REPL_MAX_QUOTE))
			return "a quote that is not a UTF-8 str of at most 2,000 characters";
	}
	if (!str_ok(doc) || !*doc->valuestring || strlen(doc->valuestring) > SOURCE_DOC_MAX)
		return "an entry that is not a document id or an object with one in \"doc\"";
	s->doc = xstrdup(doc->valuestring);
	s->quote = q ? xstrdup(q->valuestring) : NULL;
	return NULL;
}

void repl__sources(const cJSON *f, struct repl_result *out, struct buf *note)
{
	const cJSON *src = json_get(f, "sources"), *el;
	const char *why = NULL;
	size_t n, i = 0;
	if (!src || cJSON_IsNull(src))
		return;
	if (!cJSON_IsArray(src)) {
		why = "it is not an array";
		goto bad;
	}
	n = (size_t)cJSON_GetArraySize(src);
	if (n > REPL_MAX_SOURCES) {
		why = "it has more than 100 entries";
		goto bad;
	}
	if (!n)
		return;
	out->sources = xcalloc(n, sizeof(*out->sources));
	cJSON_ArrayForEach(el, src)
	{
		if ((why = source_of(el, &out->sources[i])))
			goto bad;
		out->n_sources = ++i;
	}
	return;
bad:
	for (i = 0; i < out->n_sources; i++)
		free(out->sources[i].doc), free(out->sources[i].quote);
	free(out->sources);
	out->sources = NULL;
	out->n_sources = 0;
	buf_printf(note, "[the answer's sources were ignored: the worker sent them ill-shaped (%s)]\n",
		   why);
}

/* A binary call frame (repl.h, BINARY CALL FRAMES): 0x00, the header's
 * length in 4 bytes big-endian, the header -- a call frame's JSON object
 * with "prompt_lens": [n, ...] where "prompts" would be -- and each
 * prompt's UTF-8 bytes followed by a NUL. Read into the JSON frame it
 * stands for: the prompts become the header's "prompts", each checked
 * once (UTF-8, no NUL inside, its NUL after it, within the frame) and
 * left where it lies, a string node referencing body (no copy) with its
 * length in valuedouble (unused in a string node), so that nothing reads
 * its bytes again before they go into a request body. */
static cJSON *binary_call(const char *body, size_t len, struct rlm_err *err)
{
	cJSON *f = NULL, *ps = NULL, *it;
	const cJSON *lens;
	size_t at, bad, i = 0;
	uint32_t h;
	if (len < 5) {
		rlm_err_set(err, RLM_EPARSE, "a binary frame of %zu bytes (its header needs 5)", len);
		return NULL;
	}
	h = repl__be32(body + 1);
	if (h > len - 5) {
		rlm_err_set(err, RLM_EPARSE,
			    "a binary frame whose header (%u bytes) is past its end (%zu bytes)", h,
			    len);
		return NULL;
	}
	if (!text_utf8_valid(body + 5, h, &bad)) {
		rlm_err_set(err, RLM_EPARSE, "a binary frame whose header is not UTF-8 (byte %zu)",
			    bad);
		return NULL;
	}
	f = json_parse(body + 5, h);
	if (!cJSON_IsObject(f) || !json_str(f, "type") || strcmp(json_str(f, "type"), "call")) {
		rlm_err_set(err, RLM_EPARSE, "a binary frame whose header is not a call's object");
		goto bad;
	}
	lens = json_get(f, "prompt_lens");
	if (json_get(f, "prompts") || !cJSON_IsArray(lens) ||
	    cJSON_GetArraySize(lens) > REPL_MAX_PROMPTS) {
		rlm_err_set(err, RLM_EPARSE,
			    "a binary call frame whose header has no 'prompt_lens' array of at most "
			    "%d lengths in place of 'prompts'",
			    REPL_MAX_PROMPTS);
		goto bad;
	}
	at = 5 + (size_t)h;
	ps = cJSON_CreateArray();
	cJSON_ArrayForEach(it, lens)
	{
		uint64_t n;
		if (!count_ok(it, &n) || n >= len - at) {
			rlm_err_set(err, RLM_EPARSE,
				    "a binary call frame whose prompt %zu is not a length within "
				    "the frame",
				    i);
			goto bad;
		}
		if (memchr(body + at, '\0', (size_t)n) || body[at + n] != '\0') {
			rlm_err_set(err, RLM_EPARSE,
				    "a binary call frame whose prompt %zu has a NUL inside or none "
				    "after it",
				    i);
			goto bad;
		}
		if (!text_utf8_valid(body + at, (size_t)n, &bad)) {
			rlm_err_set(err, RLM_EPARSE,
				    "a binary call frame whose prompt %zu is not UTF-8 (byte %zu)", i,
				    bad);
			goto bad;
		}
		cJSON *ref = cJSON_CreateStringReference(body + at);
		ref->valuedouble = (double)n;
		cJSON_AddItemToArray(ps, ref);
		at += (size_t)n + 1;
		i++;
	}
	if (at != len) {
		rlm_err_set(err, RLM_EPARSE, "a binary call frame with %zu bytes after its prompts",
			    len - at);
		goto bad;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(f, "prompt_lens");
	cJSON_AddItemToObject(f, "prompts", ps);
	return f;
bad:
	cJSON_Delete(ps);
	cJSON_Delete(f);
	return NULL;
}

cJSON *repl_frame_parse(const char *body, size_t len, size_t max, struct rlm_err *err)
{
	cJSON *f;
	const char *type;
	size_t bad;
	if (len > max) {
		rlm_err_set(err, RLM_ETOOBIG, "a frame of %zu bytes (the cap is %zu)", len, max);
		return NULL;
	}
	if (len && body[0] == '\0') {
		if (!(f = binary_call(body, len, err)))
			return NULL;
	} else {
		if (!text_utf8_valid(body, len, &bad)) {
			rlm_err_set(err, RLM_EPARSE, "a frame that is not UTF-8 (byte %zu)", bad);
			return NULL;
		}
		f = json_parse(body, len);
		if (!f || !cJSON_IsObject(f)) {
			cJSON_Delete(f);
			rlm_err_set(err, RLM_EPARSE, "a frame that is not a JSON object");
			return NULL;
		}
	}
	type = json_str(f, "type");
	for (size_t i = 0; type && i < ARRAY_SIZE(frame_types); i++) {
		if (strcmp(type, frame_types[i].type) != 0)
			continue;
		for (size_t k = 0; k < frame_types[i].n; k++) {
			if (check_field(f, &frame_types[i].fields[k], frame_types[i].max_items,
					err) < 0) {
				rlm_err_prefix(err, "a '%s' frame", type);
				cJSON_Delete(f);
				return NULL;
			}
		}
		if (strcmp(type, "call") == 0 && check_call(f, err) < 0) {
			cJSON_Delete(f);
			return NULL;
		}
		return f;
	}
	if (type)
		rlm_err_set(err, RLM_EPARSE, "a frame of unknown type '%.40s'", type);
	else
		rlm_err_set(err, RLM_EPARSE, "a frame without a string 'type'");
	cJSON_Delete(f);
	return NULL;
}

/* ---- encoding frames to the worker ---- */

size_t repl__frame_begin(struct buf *b)
{
	size_t start = b->len;
	buf_append(b, "\0\0\0\0", 4);
	return start;
}

int repl__frame_end(struct buf *b, size_t start)
{
	size_t n = b->len - start - 4;
	unsigned char *h = (unsigned char *)b->p + start;
	if (n > UINT32_MAX)
		return RLM_ETOOBIG;
	repl__put_be32(h, (uint32_t)n);
	return 0;
}

/* ---- text ---- */

char *repl__clean(const char *str, size_t len, size_t *out_len)
{
	const unsigned char *s = (const unsigned char *)str;
	char *out = xmalloc(len + 1);
	size_t i = 0, o = 0, k;
	while (i < len) {
		if (s[i] >= 0x80 && (k = text_utf8_seq_len(str + i, len - i)) > 0) {
			memcpy(out + o, s + i, k);
			o += k;
			i += k;
			continue;
		}
		out[o++] = s[i] >= 0x80 ? '?' : s[i] == 0 ? ' ' : (char)s[i];
		i++;
	}
	out[o] = '\0';
	if (out_len)
		*out_len = o;
	return out;
}

char *repl_truncate(const char *s, size_t len, size_t limit, size_t *out_len)
{
	size_t chars = text_utf8_count(s, len), head, tail, h_end, t_start;
	char omitted[32], total[32];
	struct buf b = BUF_INIT;
	if (chars <= limit) {
		if (out_len)
			*out_len = len;
		return xstrndup(s, len);
	}
	head = limit / 2;
	tail = limit - head;
	h_end = text_utf8_offset(s, len, head);
	t_start = text_utf8_offset(s, len, chars - tail);
	text_fmt_count(omitted, sizeof(omitted), (int64_t)(chars - head - tail));
	text_fmt_count(total, sizeof(total), (int64_t)chars);
	buf_append(&b, s, h_end);
	buf_printf(&b, "%s[... %s of %s characters omitted ...]\n",
		   h_end > 0 && s[h_end - 1] == '\n' ? "" : "\n", omitted, total);
	buf_append(&b, s + t_start, len - t_start);
	return buf_detach(&b, out_len);
}
