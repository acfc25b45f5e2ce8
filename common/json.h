/* SPDX-License-Identifier: MIT */
/* common/json.h -- cJSON helpers with one ownership rule: an add consumes
 * the item, whether it succeeds or not, so callers never leak or double-free
 * on the failure path. */
#ifndef RLM_JSON_H
#define RLM_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Add item under key (or to an array when key is NULL). Consumes item.
 * Returns 0, or RLM_EINVAL when item is NULL or the add failed. */
int json_add(cJSON *obj, const char *key, cJSON *item);
int json_add_str(cJSON *obj, const char *key, const char *s);
/* s[0..len) need not be NUL-terminated; a NUL inside ends the string. */
int json_add_strn(cJSON *obj, const char *key, const char *s, size_t len);
int json_add_num(cJSON *obj, const char *key, double v);
int json_add_bool(cJSON *obj, const char *key, bool v);

/* Borrowed lookups; NULL or the fallback when absent or of another type. */
const char *json_str(const cJSON *obj, const char *key);
double json_num(const cJSON *obj, const char *key, double fallback);
int64_t json_int(const cJSON *obj, const char *key, int64_t fallback);
cJSON *json_get(const cJSON *obj, const char *key);

/* Parse exactly len bytes. Returns NULL on malformed input, trailing
 * garbage other than whitespace (NUL bytes at the very end are taken for a
 * terminator), or a NUL byte anywhere before: JSON has none, and cJSON
 * would end a string at it without a word. */
cJSON *json_parse(const char *s, size_t len);
/* A key that an object in item's tree (item itself, and every object
 * under it, inside arrays too) holds twice: its second occurrence
 * (borrowed from item; ->string is the key), or NULL when no object
 * repeats a key. Outer objects are looked at first, then each child's
 * tree in order; in one object, the key whose repeat comes first. cJSON keeps both (a lookup finds
 * the first) where another parser, a proxy in front say, may keep the
 * last: a request with one must be refused, not read. where[0..cap)
 * (when cap > 0) gets the path of the object that holds it: "" for item
 * itself, "messages[2]", "rlm_context.documents[0]"; long keys cut. Keys
 * compare as bytes (as json_get looks them up). O(n log n) in the keys of
 * an object: objects of more than a few keys are sorted, not compared
 * pairwise. */
const cJSON *json_find_duplicate(const cJSON *item, char *where, size_t cap);
/* json_find_duplicate, said for people: true when a key repeats, with
 * `duplicate key "question"` or `duplicate key "role" in messages[1]` in
 * msg[0..cap) (the key cut to 100 bytes where a UTF-8 character ends). */
bool json_duplicate_msg(const cJSON *item, char *msg, size_t cap);
/* Compact text of item; the caller frees it with free(). */
char *json_print(const cJSON *item);

/* Does the JSON text s[0..n), which json_parse accepted, hold the escape
 * \u0000 (cJSON would decode it to a NUL and silently cut the string
 * there)? Backslashes only occur inside strings of such text, so pairs are
 * skipped blindly. */
bool json_has_nul_escape(const char *s, size_t n);
/* Does a string of the JSON text s[0..len) (a key or a value) hold the
 * escape \u0000? cJSON decodes it to a NUL byte, which cuts the string
 * there, so a caller that parsed s cannot see it. When one does: true,
 * with its path in path[0..cap) ("question", "messages[2].content",
 * "documents[0]"; "" for a string at the top; a key that holds one is
 * named with " (a key)" after it). s should be text json_parse accepted:
 * for anything else the answer is arbitrary, but nothing outside s is
 * read and path is always terminated. */
bool json_nul_path(const char *s, size_t len, char *path, size_t cap);

/* json_put_str's flags: a NUL byte goes as U+FFFD, not \u0000 (what a
 * parser that cuts strings at NUL, cJSON's, needs). */
#define JSON_STR_NUL_FFFD 1u
struct buf;
/* Append s[0..len) to b as a JSON string, quoted and escaped in one pass:
 * bytes that are not valid UTF-8 become U+FFFD, NULs \u0000 (U+FFFD with
 * JSON_STR_NUL_FFFD). The one copy of a long text on its way into a
 * frame or a request body. */
void json_put_str(struct buf *b, const char *s, size_t len, unsigned flags);

#endif
