/* SPDX-License-Identifier: MIT */
/* llm/wire_anthropic.c -- the Anthropic Messages API wire format
 * (POST {base}/v1/messages).
 *
 * DESIGN
 * The system prompt goes in one top-level block and every other message in
 * "messages". Both the system block and the text block of the last message
 * carry cache_control {"type":"ephemeral"}: an RLM conversation grows by
 * appending turns, so each call reads the prefix the previous one wrote to
 * the prompt cache and pays full price only for the new turn. */
#include "wire.h"

#include <stdlib.h>
#include <string.h>

#define ANTHROPIC_VERSION "2023-06-01"
/* The API requires max_tokens; used when the call leaves it to us. */
#define DEFAULT_MAX_TOKENS 8192

/* [{"type":"text","text":s,"cache_control":{"type":"ephemeral"} when cache}],
 * s escaped straight into the body. */
static void put_blocks(struct buf *b, const char *s, size_t len, bool cache)
{
	buf_puts(b, "[{\"type\":\"text\",\"text\":");
	json_put_str(b, s ? s : "", s ? len : 0, JSON_STR_NUL_FFFD);
	buf_puts(b, cache ? ",\"cache_control\":{\"type\":\"ephemeral\"}}]" : "}]");
}

enum { TEXTS_SYSTEM = 1, TEXTS_MESSAGES = 2 };

/* TEXTS_SYSTEM: the system messages joined by blank lines, in one cached
 * block; TEXTS_MESSAGES: the others, the last one's block cached
 * (llm__wire_texts). */
static void put_texts(struct buf *b, const struct llm_call *c, int which)
{
	size_t last = 0;
	if (which == TEXTS_SYSTEM) {
		struct buf sys = BUF_INIT;
		for (size_t i = 0, n = 0; i < c->n_msgs; i++) {
			const struct llm_msg *msg = &c->msgs[i];
			if (msg->role != LLM_SYSTEM)
				continue;
			if (n++)
				buf_append(&sys, "\n\n", 2);
			if (msg->len)
				buf_append(&sys, msg->text, msg->len);
		}
		put_blocks(b, sys.p, sys.len, true);
		buf_release(&sys);
		return;
	}
	for (size_t i = 0; i < c->n_msgs; i++)
		if (c->msgs[i].role != LLM_SYSTEM)
			last = i;
	buf_putc(b, '[');
	for (size_t i = 0, n = 0; i < c->n_msgs; i++) {
		const struct llm_msg *msg = &c->msgs[i];
		if (msg->role == LLM_SYSTEM)
			continue;
		buf_printf(b, "%s{\"role\":\"%s\",\"content\":", n++ ? "," : "",
			   msg->role == LLM_ASSISTANT ? "assistant" : "user");
		put_blocks(b, msg->text, msg->len, i == last);
		buf_putc(b, '}');
	}
	buf_putc(b, ']');
}

static int add_stop(cJSON *body, const struct llm_params *p)
{
	cJSON *arr;
	int rc = 0;
	if (p->n_stop == 0 || !p->stop)
		return 0;
	arr = cJSON_CreateArray();
	for (size_t i = 0; i < p->n_stop && !rc; i++)
		if (p->stop[i])
			rc = llm__wire_add_text(arr, NULL, p->stop[i], strlen(p->stop[i]));
	if (rc) {
		cJSON_Delete(arr);
		return rc;
	}
	return json_add(body, "stop_sequences", arr);
}

static int build(const struct llm_call *c, const struct llm_model *m, const char *base_url,
		 struct http_req *out, struct rlm_err *err)
{
	const struct llm_params *p = &c->params;
	size_t last = SIZE_MAX;
	cJSON *body;
	int rc;
	if (!base_url || !*base_url)
		base_url = llm_wire_anthropic.default_base_url;
	for (size_t i = 0; i < c->n_msgs; i++)
		if (c->msgs[i].role != LLM_SYSTEM)
			last = i;
	if (last == SIZE_MAX)
		return rlm_err_set(err, RLM_EINVAL,
				   "cannot build request: no user or assistant message");
	rc = llm__wire_check_key(m->api_key, err);
	if (rc)
		return rc;
	body = cJSON_CreateObject();
	rc = json_add_str(body, "model", m->name);
	if (!rc)
		rc = json_add_num(body, "max_tokens",
				  p->max_tokens > 0 ? p->max_tokens : DEFAULT_MAX_TOKENS);
	for (size_t i = 0; !rc && i < c->n_msgs; i++) {
		if (c->msgs[i].role == LLM_SYSTEM) {
			rc = llm__wire_add_texts(body, "system", TEXTS_SYSTEM);
			break;
		}
	}
	if (!rc)
		rc = llm__wire_add_texts(body, "messages", TEXTS_MESSAGES);
	if (!rc && p->temperature >= 0)
		rc = json_add_num(body, "temperature", p->temperature);
	if (!rc && p->top_p >= 0)
		rc = json_add_num(body, "top_p", p->top_p);
	if (!rc)
		rc = add_stop(body, p);
	rc = llm__wire_finish(out, body, rc, m->extra_json, p->extra_json,
			      &(struct llm__wire_texts){put_texts, c},
			      xasprintf("%s/v1/messages", base_url), err);
	if (rc)
		return rc;
	if (m->api_key && *m->api_key)
		llm__http_req_header(out, "x-api-key: %s", m->api_key);
	llm__http_req_header(out, "anthropic-version: " ANTHROPIC_VERSION);
	return 0;
}

static int parse(struct llm_call *c, const char *body, size_t len, struct rlm_err *err)
{
	cJSON *j, *content, *usage;
	struct buf text;
	const char *type;
	int64_t in, cache_read, cache_write;
	int rc;
	free(c->text);
	c->text = NULL;
	c->len = 0;
	rc = llm__wire_parse_reply(body, len, &j, err);
	if (rc)
		return rc;
	type = json_str(j, "type");
	if (type && strcmp(type, "error") == 0) {
		char *perr = llm__wire_json_error(j);
		rc = rlm_err_set(err, RLM_EPROVIDER, "error in reply: %s",
				 perr ? perr : "no message");
		free(perr);
		goto out;
	}
	content = json_get(j, "content");
	if (!cJSON_IsArray(content)) {
		rc = rlm_err_set(err, RLM_EPARSE, "reply has no content array (%zu bytes)", len);
		goto out;
	}
	buf_init(&text, LLM_MAX_BODY);
	for (const cJSON *b = content->child; b && !rc; b = b->next) {
		const char *bt = json_str(b, "type"), *t = json_str(b, "text");
		if (bt && t && strcmp(bt, "text") == 0)
			rc = buf_puts(&text, t);
	}
	if (rc) {
		buf_release(&text);
		rc =
		    rlm_err_set(err, rc, "reply text larger than %u bytes", (unsigned)LLM_MAX_BODY);
		goto out;
	}
	llm__wire_set_result(c, text.p, text.len, json_str(j, "stop_reason"));
	buf_release(&text);
	/* Our input_tokens counts every prompt token; anthropic's only the uncached. */
	usage = json_get(j, "usage");
	in = llm__wire_count(usage, "input_tokens");
	cache_read = llm__wire_count(usage, "cache_read_input_tokens");
	cache_write = llm__wire_count(usage, "cache_creation_input_tokens");
	c->usage.input_tokens = in + cache_read + cache_write;
	c->usage.output_tokens = llm__wire_count(usage, "output_tokens");
	c->usage.cached_tokens = cache_read;
	c->usage.cache_write_tokens = cache_write;
out:
	cJSON_Delete(j);
	return rc;
}

const struct llm_wire llm_wire_anthropic = {
    .name = "anthropic",
    .default_base_url = "https://api.anthropic.com",
    .build = build,
    .parse = parse,
    /* {"type":"error","error":{"type":T,"message":M}} is the generic
     * "error" object shape one level down. */
    .error_message = llm__wire_generic_error,
};
