/* SPDX-License-Identifier: MIT */
/* llm/wire.h -- pieces shared by the wire formats (llm/wire_openai.c,
 * llm/wire_anthropic.c), implemented in llm/http_util.c: message text made
 * safe for JSON, extra parameters merged into a request body, the request
 * body printed, and the provider's words found in an error body. Private
 * to llm/. */
#ifndef RLM_LLM_WIRE_H
#define RLM_LLM_WIRE_H

#include "../common/json.h"
#include "llm_int.h"

/* Add the message text s[0..len) under key (or to an array when key is
 * NULL). s need not be NUL-terminated. NUL bytes and bytes that are not
 * valid UTF-8 are sent as U+FFFD, so the body is always valid JSON.
 * Consumes nothing; returns 0 or RLM_EINVAL (the add failed). */
int llm__wire_add_text(cJSON *obj, const char *key, const char *s, size_t len);

/* Merge the JSON object text extra (NULL: nothing) into the request body
 * obj: each key is appended, or replaces in place a key of the same name.
 * Returns 0, or RLM_EINVAL with "extra parameters are not a JSON object:
 * '...'" when extra is anything but an object. */
int llm__wire_merge_extra(cJSON *obj, const char *extra, struct rlm_err *err);

/* Check that an API key can go in a header line: no control characters (a
 * key read from a file with its newline would split the header). Returns
 * 0, or RLM_EINVAL "cannot use API key: it holds a control character ...". NULL is fine. */
int llm__wire_check_key(const char *key, struct rlm_err *err);

/* The values of a request body that hold a call's texts (the messages,
 * a system prompt) are written straight into the body, not through the
 * tree: each text escaped in one pass from the call's message into the
 * body (json_put_str with JSON_STR_NUL_FFFD: llm__wire_add_text's rule),
 * its one copy on the way to the wire (docs/llm.md). The tree holds a
 * placeholder where such a value goes (llm__wire_add_texts: a raw byte
 * 1..8, which printed JSON cannot hold anywhere else), so the members
 * keep their order and an extra of the same key replaces it as it
 * replaces any member; put writes value `which` of c there. */
struct llm__wire_texts {
	void (*put)(struct buf *b, const struct llm_call *c, int which);
	const struct llm_call *call;
};

/* Add under key the placeholder of texts value which (1..8). Returns 0 or
 * RLM_EINVAL. */
int llm__wire_add_texts(cJSON *obj, const char *key, int which);

/* The end of every wire's build: body (consumed, whatever happens) gets
 * the model's extra JSON, then the call's (llm__wire_merge_extra); out is
 * emptied and gets url (consumed), the headers Content-Type and Accept of
 * JSON, and the body: body printed, with the members of texts after its
 * own. The caller adds its own headers after. Returns 0;
 * built_rc (not 0: the body could not be built) with err "cannot build
 * request body"; or RLM_EINVAL with err when an extra is not an object. */
int llm__wire_finish(struct http_req *out, cJSON *body, int built_rc, const char *model_extra,
		     const char *call_extra, const struct llm__wire_texts *texts, char *url,
		     struct rlm_err *err);

/* Parse a 2xx reply body of len bytes into *out (the caller deletes it).
 * Returns 0, or RLM_EPARSE "malformed JSON in reply (N bytes)" when it is
 * not JSON, or RLM_EPARSE "reply is not a JSON object" when it is other
 * JSON. */
int llm__wire_parse_reply(const char *body, size_t len, cJSON **out, struct rlm_err *err);

/* The provider's message in a parsed error body, as a fresh string, or NULL
 * when it holds none. Knows {"error":{"type":T,"message":M}} -> "T: M" (M
 * alone without a type; anthropic nests the same object in
 * {"type":"error",...}), {"error":"M"} (Ollama), {"detail":"M"} and
 * {"detail":[{"msg":M},...]} (FastAPI, vLLM), {"message":"M"}. */
char *llm__wire_json_error(const cJSON *j);

/* The error message of any error body, shared by both wires: the JSON
 * shapes of llm__wire_json_error; a body that is not JSON gives its first 200
 * bytes with whitespace runs collapsed, cut on a UTF-8 boundary; other
 * JSON, or an empty or blank body, gives NULL. The caller frees it. */
char *llm__wire_generic_error(const char *body, size_t len);

/* Store text[0..len) (a fresh NUL-terminated copy) as c->text and c->len,
 * and finish (or NULL) as c->finish_reason, freeing what was there. */
void llm__wire_set_result(struct llm_call *c, const char *text, size_t len, const char *finish);

/* A usage count from obj[key]: a non-negative number, else 0. */
int64_t llm__wire_count(const cJSON *obj, const char *key);

#endif
