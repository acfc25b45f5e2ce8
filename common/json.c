/* SPDX-License-Identifier: MIT */
/* common/json.c -- cJSON helpers where an add always consumes its item;
 * the checks cJSON does not make (NUL escapes, duplicate keys). */
#include "json.h"
#include "common.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int json_add(cJSON *obj, const char *key, cJSON *item)
{
	cJSON_bool ok;
	if (!item)
		return RLM_EINVAL;
	if (!obj) {
		cJSON_Delete(item);
		return RLM_EINVAL;
	}
	ok = key ? cJSON_AddItemToObject(obj, key, item) : cJSON_AddItemToArray(obj, item);
	if (!ok) {
		cJSON_Delete(item);
		return RLM_EINVAL;
	}
	return 0;
}

int json_add_str(cJSON *obj, const char *key, const char *s)
{
	return json_add(obj, key, cJSON_CreateString(s ? s : ""));
}

int json_add_strn(cJSON *obj, const char *key, const char *s, size_t len)
{
	char *tmp = xstrndup(s, len);
	int rc = json_add_str(obj, key, tmp);
	free(tmp);
	return rc;
}

int json_add_num(cJSON *obj, const char *key, double v)
{
	return json_add(obj, key, cJSON_CreateNumber(v));
}

int json_add_bool(cJSON *obj, const char *key, bool v)
{
	return json_add(obj, key, cJSON_CreateBool(v));
}

cJSON *json_get(const cJSON *obj, const char *key)
{
	if (!obj || !cJSON_IsObject(obj))
		return NULL;
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

const char *json_str(const cJSON *obj, const char *key)
{
	cJSON *it = json_get(obj, key);
	return cJSON_IsString(it) ? it->valuestring : NULL;
}

double json_num(const cJSON *obj, const char *key, double fallback)
{
	cJSON *it = json_get(obj, key);
	return cJSON_IsNumber(it) ? it->valuedouble : fallback;
}

int64_t json_int(const cJSON *obj, const char *key, int64_t fallback)
{
	cJSON *it = json_get(obj, key);
	if (!cJSON_IsNumber(it) || it->valuedouble < -9e15 || it->valuedouble > 9e15)
		return fallback;
	return (int64_t)it->valuedouble;
}

cJSON *json_parse(const char *s, size_t len)
{
	const char *end = NULL;
	cJSON *j;
	/* NUL bytes at the end are tolerated, as a terminator; one before is
	 * no JSON, but cJSON would take a string cut short at it. */
	if (!s)
		return NULL;
	while (len > 0 && s[len - 1] == '\0')
		len--;
	if (len == 0 || memchr(s, '\0', len))
		return NULL;
	j = cJSON_ParseWithLengthOpts(s, len, &end, 0);
	if (!j)
		return NULL;
	while (end && end < s + len && text_is_space(*end))
		end++;
	if (end && end < s + len) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

/* ---- duplicate keys ---- */

#define DUP_PAIRWISE 16 /* objects of up to this many keys: compared pairwise */
#define DUP_SEG	     48 /* bytes of a key shown in a path */

/* A child of an object and its place in it, for sorting by key. */
struct dup_key {
	const cJSON *item;
	size_t index;
};

static const char *dup_key_of(const cJSON *c)
{
	return c->string ? c->string : "";
}

static int dup_cmp(const void *a, const void *b)
{
	const struct dup_key *x = a, *y = b;
	int c = strcmp(dup_key_of(x->item), dup_key_of(y->item));
	if (c)
		return c;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* The second occurrence of the first repeated key of object o (the one
 * whose second occurrence comes first), or NULL. */
static const cJSON *dup_in_object(const cJSON *o)
{
	const cJSON *c, *d, *best = NULL;
	struct dup_key *keys;
	size_t n = 0;
	for (c = o->child; c; c = c->next)
		n++;
	if (n < 2)
		return NULL;
	if (n <= DUP_PAIRWISE) {
		for (c = o->child->next; c; c = c->next)
			for (d = o->child; d != c; d = d->next)
				if (strcmp(dup_key_of(c), dup_key_of(d)) == 0)
					return c;
		return NULL;
	}
	keys = xmalloc(n * sizeof(*keys));
	n = 0;
	for (c = o->child; c; c = c->next, n++) {
		keys[n].item = c;
		keys[n].index = n;
	}
	qsort(keys, n, sizeof(*keys), dup_cmp);
	/* Equal keys end up together, in the order of the text: the second
	 * of a run is that key's first repeat. */
	for (size_t i = 1, best_index = SIZE_MAX; i < n; i++) {
		const char *k = dup_key_of(keys[i].item);
		if (strcmp(dup_key_of(keys[i - 1].item), k) != 0 ||
		    (i >= 2 && strcmp(dup_key_of(keys[i - 2].item), k) == 0))
			continue;
		if (keys[i].index < best_index) {
			best_index = keys[i].index;
			best = keys[i].item;
		}
	}
	free(keys);
	return best;
}

/* Append a path segment to path[0..cap) at *n: ".key" (no dot at the
 * start) or "[i]". */
static void dup_seg(char *path, size_t cap, size_t *n, const cJSON *parent, const cJSON *child,
		    size_t index)
{
	int w;
	if (*n >= cap)
		return;
	if (cJSON_IsArray(parent)) {
		w = snprintf(path + *n, cap - *n, "[%zu]", index);
	} else {
		const char *k = child->string ? child->string : "";
		size_t kl = strlen(k), cut = kl > DUP_SEG ? text_utf8_floor(k, DUP_SEG) : kl;
		w = snprintf(path + *n, cap - *n, "%s%.*s%s", *n ? "." : "", (int)cut, k,
			     cut < kl ? "..." : "");
	}
	*n += w > 0 ? (size_t)w : 0;
	if (*n >= cap)
		*n = cap - 1;
}

static const cJSON *dup_walk(const cJSON *item, char *path, size_t cap, size_t n)
{
	const cJSON *c, *hit;
	size_t i = 0;
	if (cJSON_IsObject(item) && (hit = dup_in_object(item))) {
		path[n] = '\0';
		return hit;
	}
	if (!cJSON_IsObject(item) && !cJSON_IsArray(item))
		return NULL;
	for (c = item->child; c; c = c->next, i++) {
		size_t m = n;
		if (!cJSON_IsObject(c) && !cJSON_IsArray(c))
			continue;
		dup_seg(path, cap, &m, item, c, i);
		if ((hit = dup_walk(c, path, cap, m)))
			return hit;
	}
	return NULL;
}

const cJSON *json_find_duplicate(const cJSON *item, char *where, size_t cap)
{
	char path[256];
	const cJSON *hit;
	if (!item)
		return NULL;
	hit = dup_walk(item, path, sizeof(path), 0);
	if (cap) {
		snprintf(where, cap, "%s", hit ? path : "");
		where[text_utf8_floor(where, strlen(where))] = '\0';
	}
	return hit;
}

bool json_duplicate_msg(const cJSON *item, char *msg, size_t cap)
{
	char where[128];
	const cJSON *dup = json_find_duplicate(item, where, sizeof(where));
	size_t kl, cut;
	if (!dup)
		return false;
	kl = strlen(dup->string);
	cut = text_utf8_floor(dup->string, RLM_MIN(kl, 100));
	if (cap) {
		snprintf(msg, cap, "duplicate key \"%.*s%s\"%s%s", (int)cut, dup->string,
			 cut < kl ? "..." : "", where[0] ? " in " : "", where);
		msg[text_utf8_floor(msg, strlen(msg))] = '\0';
	}
	return true;
}

char *json_print(const cJSON *item)
{
	char *s = cJSON_PrintUnformatted(item);
	if (!s) {
		/* cJSON only fails on allocation; treat like xmalloc. */
		abort();
	}
	return s;
}

bool json_has_nul_escape(const char *s, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++) {
		if (s[i] != '\\')
			continue;
		if (s[i + 1] == 'u' && i + 6 <= n && memcmp(s + i + 2, "0000", 4) == 0)
			return true;
		i++;
	}
	return false;
}

/* One container of the text json_nul_path walks: what its child being read
 * is called. */
struct nul_frame {
	bool array;
	size_t index; /* an array's */
	char key[56]; /* an object's, raw (escapes as written), maybe cut */
};

#define NUL_DEPTH 32 /* containers named in a path; deeper ones are "..." */

static void nul_path(const struct nul_frame *st, size_t depth, size_t over, bool key, char *path,
		     size_t cap)
{
	size_t n = 0;
	path[0] = '\0';
	for (size_t k = 0; k < depth && n < cap; k++) {
		int w = st[k].array ? snprintf(path + n, cap - n, "[%zu]", st[k].index)
				    : snprintf(path + n, cap - n, "%s%s", n ? "." : "",
					       st[k].key[0] ? st[k].key : "\"\"");
		n += w > 0 ? (size_t)w : 0;
	}
	if (n < cap && over)
		n += (size_t)snprintf(path + n, cap - n, "...");
	if (n < cap && key)
		snprintf(path + n, cap - n, " (a key)");
	path[text_utf8_floor(path, strlen(path))] = '\0'; /* cut by cap */
}

bool json_nul_path(const char *s, size_t len, char *path, size_t cap)
{
	struct nul_frame st[NUL_DEPTH];
	size_t depth = 0, over = 0;
	bool want_key = false; /* a string now is an object's key */
	if (cap)
		path[0] = '\0';
	if (!s || len < 6 || !memmem(s, len, "\\u0000", 6))
		return false;
	for (size_t i = 0; i < len; i++) {
		struct nul_frame *top = depth && !over ? &st[depth - 1] : NULL;
		size_t start;
		bool nul = false, key;
		switch (s[i]) {
		case '{':
		case '[':
			if (depth < NUL_DEPTH && !over) {
				memset(&st[depth], 0, sizeof(st[depth]));
				st[depth++].array = s[i] == '[';
			} else {
				over++;
			}
			want_key = s[i] == '{';
			break;
		case '}':
		case ']':
			if (over)
				over--;
			else if (depth)
				depth--;
			want_key = false;
			break;
		case ',':
			if (top && top->array)
				top->index++;
			else if (top)
				want_key = true;
			break;
		case ':':
			want_key = false;
			break;
		case '"':
			start = ++i;
			for (; i < len && s[i] != '"'; i++) {
				if (s[i] != '\\' || i + 1 >= len)
					continue;
				if (s[i + 1] == 'u' && i + 6 <= len &&
				    memcmp(s + i + 2, "0000", 4) == 0)
					nul = true;
				i++;
			}
			key = want_key && top && !top->array;
			/* cut where a UTF-8 sequence ends: a path goes into JSON */
			if (key)
				snprintf(top->key, sizeof(top->key), "%.*s",
					 (int)text_utf8_floor(s + start,
							 RLM_MIN(i - start, sizeof(top->key) - 1)),
					 s + start);
			if (nul) {
				if (cap)
					nul_path(st, depth, over, key, path, cap);
				return true;
			}
			break;
		default:
			break;
		}
	}
	return false;
}

/* Eight bytes that all go into a JSON string as they are: printable
 * ASCII but '"' and '\\' (word tricks: a byte below n is found by
 * (w - n per byte) & ~w & the high bits, for n <= 128). */
static bool plain8(const unsigned char *p)
{
	const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
	uint64_t w, q, bs;
	memcpy(&w, p, 8);
	q = w ^ (ones * '"');
	bs = w ^ (ones * '\\');
	return !((w | ((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((bs - ones) & ~bs)) & high);
}

void json_put_str(struct buf *b, const char *str, size_t len, unsigned flags)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, run = 0;
	if (len == 0) {
		buf_puts(b, "\"\"");
		return;
	}
	/* the text, its quotes and a few escapes: one allocation for most */
	buf_reserve(b, len + len / 32 + 2);
	buf_putc(b, '"');
	while (i < len) {
		unsigned char c;
		char esc[8];
		size_t k;
		while (i + 8 <= len && plain8(s + i)) {
			i += 8;
			run += 8;
		}
		if (i == len)
			break;
		c = s[i];
		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			i++;
			run++;
			continue;
		}
		if (c >= 0x80 && (k = text_utf8_seq_len(str + i, len - i)) > 0) {
			i += k;
			run += k;
			continue;
		}
		buf_append(b, s + i - run, run);
		run = 0;
		if (c >= 0x80 || (c == 0 && (flags & JSON_STR_NUL_FFFD))) {
			buf_append(b, "\xef\xbf\xbd", 3); /* U+FFFD */
		} else if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			buf_append(b, esc, 2);
		} else if (c == '\n') {
			buf_puts(b, "\\n");
		} else if (c == '\t') {
			buf_puts(b, "\\t");
		} else if (c == '\r') {
			buf_puts(b, "\\r");
		} else {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			buf_append(b, esc, 6);
		}
		i++;
	}
	buf_append(b, s + i - run, run);
	buf_putc(b, '"');
}
