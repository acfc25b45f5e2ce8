/* SPDX-License-Identifier: MIT */
/* llm/wire_openai.c -- the OpenAI chat completions wire format
 * (POST {base}/chat/completions), also spoken by vLLM, Ollama, llama.cpp,
 * OpenRouter and the simulator; and the reply objects our own servers send
 * in it (llm/openai.h). */
#include "openai.h"
#include "wire.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const role_names[] = {"system", "user", "assistant"};

/* True when the host of url is api.openai.com, whose newer models take
 * "max_completion_tokens" and reject "max_tokens". */
static bool is_openai_host(const char *url)
{
	const char *h = strstr(url, "://"), *end, *at;
	h = h ? h + 3 : url;
	end = h + strcspn(h, "/?#");
	at = memchr(h, '@', (size_t)(end - h));
	if (at)
		h = at + 1;
	end = h + strcspn(h, ":/?#");
	return end - h == 14 && strncasecmp(h, "api.openai.com", 14) == 0;
}

/* "messages":[{"role":"user","content":"..."}, ...], each text escaped
 * straight into the body (llm__wire_texts). */
static void put_messages(struct buf *b, const struct llm_call *c, int which)
{
	(void)which;
	buf_putc(b, '[');
	for (size_t i = 0; i < c->n_msgs; i++) {
		const struct llm_msg *msg = &c->msgs[i];
		unsigned role = (unsigned)msg->role;
		buf_printf(b, "%s{\"role\":\"%s\",\"content\":", i ? "," : "",
			   role < ARRAY_SIZE(role_names) ? role_names[role] : "user");
		json_put_str(b, msg->text ? msg->text : "", msg->text ? msg->len : 0,
			     JSON_STR_NUL_FFFD);
		buf_putc(b, '}');
	}
	buf_putc(b, ']');
}

static int add_stop(cJSON *body, const char *key, const struct llm_params *p)
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
	return json_add(body, key, arr);
}

static int build(const struct llm_call *c, const struct llm_model *m, const char *base_url,
		 struct http_req *out, struct rlm_err *err)
{
	const struct llm_params *p = &c->params;
	cJSON *body;
	int rc;
	if (!base_url || !*base_url)
		base_url = llm_wire_openai.default_base_url;
	if (c->n_msgs == 0)
		return rlm_err_set(err, RLM_EINVAL, "cannot build request: no messages");
	rc = llm__wire_check_key(m->api_key, err);
	if (rc)
		return rc;
	body = cJSON_CreateObject();
	rc = json_add_str(body, "model", m->name);
	if (!rc)
		rc = llm__wire_add_texts(body, "messages", 1);
	if (!rc && p->max_tokens > 0)
		rc = json_add_num(body,
				  is_openai_host(base_url) ? "max_completion_tokens" : "max_tokens",
				  p->max_tokens);
	if (!rc && p->temperature >= 0)
		rc = json_add_num(body, "temperature", p->temperature);
	if (!rc && p->top_p >= 0)
		rc = json_add_num(body, "top_p", p->top_p);
	if (!rc)
		rc = add_stop(body, "stop", p);
	rc = llm__wire_finish(out, body, rc, m->extra_json, p->extra_json,
			      &(struct llm__wire_texts){put_messages, c},
			      xasprintf("%s/chat/completions", base_url), err);
	if (!rc && m->api_key && *m->api_key)
		llm__http_req_header(out, "Authorization: Bearer %s", m->api_key);
	return rc;
}

/* The reply text of a message: a string, or an array of parts of which
 * those of type "text" are concatenated. */
static int message_text(const cJSON *msg, struct buf *text)
{
	const cJSON *content = json_get(msg, "content");
	if (cJSON_IsString(content))
		return buf_puts(text, content->valuestring);
	if (!cJSON_IsArray(content))
		return RLM_EPARSE;
	for (const cJSON *part = content->child; part; part = part->next) {
		const char *type = json_str(part, "type"), *t = json_str(part, "text");
		if (t && (!type || strcmp(type, "text") == 0) && buf_puts(text, t))
			return RLM_ETOOBIG;
	}
	return 0;
}

static int parse(struct llm_call *c, const char *body, size_t len, struct rlm_err *err)
{
	cJSON *j, *choices, *choice, *msg, *usage, *e;
	struct buf text;
	char *perr;
	const char *refusal;
	int rc;
	free(c->text);
	c->text = NULL;
	c->len = 0;
	rc = llm__wire_parse_reply(body, len, &j, err);
	if (rc)
		return rc;
	choices = json_get(j, "choices");
	e = json_get(j, "error");
	if (!choices && (cJSON_IsObject(e) || cJSON_IsString(e))) {
		/* Some servers answer 200 with an error object (OpenRouter, proxies). */
		perr = llm__wire_json_error(j);
		rc = rlm_err_set(err, RLM_EPROVIDER, "error in reply: %s",
				 perr ? perr : "no message");
		free(perr);
		goto out;
	}
	if (!cJSON_IsArray(choices) || !(choice = cJSON_GetArrayItem(choices, 0))) {
		rc = rlm_err_set(err, RLM_EPARSE, "reply has no choices (%zu bytes)", len);
		goto out;
	}
	msg = json_get(choice, "message");
	if (!cJSON_IsObject(msg)) {
		rc = rlm_err_set(err, RLM_EPARSE, "reply has no choices[0].message");
		goto out;
	}
	buf_init(&text, LLM_MAX_BODY);
	rc = message_text(msg, &text);
	if (rc) {
		buf_release(&text);
		refusal = json_str(msg, "refusal");
		if (refusal && *refusal)
			rc = rlm_err_set(err, RLM_EPROVIDER, "model refused: %s", refusal);
		else
			rc = rlm_err_set(err, RLM_EPARSE,
					 "reply has no text in choices[0].message.content");
		goto out;
	}
	llm__wire_set_result(c, text.p, text.len, json_str(choice, "finish_reason"));
	buf_release(&text);
	usage = json_get(j, "usage");
	c->usage.input_tokens = llm__wire_count(usage, "prompt_tokens");
	c->usage.output_tokens = llm__wire_count(usage, "completion_tokens");
	c->usage.cached_tokens =
	    llm__wire_count(json_get(usage, "prompt_tokens_details"), "cached_tokens");
	c->usage.cache_write_tokens = 0;
out:
	cJSON_Delete(j);
	return rc;
}

const struct llm_wire llm_wire_openai = {
    .name = "openai",
    .default_base_url = "https://api.openai.com/v1",
    .build = build,
    .parse = parse,
    .error_message = llm__wire_generic_error,
};

/* ---- reply objects, for the servers that speak this wire ---- */

cJSON *llm_openai_reply_new(const char *object, const char *id, const char *model, int64_t created,
			    cJSON *msg, const char *finish)
{
	cJSON *o = cJSON_CreateObject(), *choices = cJSON_CreateArray();
	json_add_str(o, "id", id);
	json_add_str(o, "object", object);
	json_add_num(o, "created", (double)created);
	json_add_str(o, "model", model);
	if (msg) {
		cJSON *c = cJSON_CreateObject();
		bool chunk = strcmp(object, "chat.completion.chunk") == 0;
		json_add_num(c, "index", 0);
		json_add(c, chunk ? "delta" : "message", msg);
		json_add(c, "finish_reason",
			 finish ? cJSON_CreateString(finish) : cJSON_CreateNull());
		json_add(choices, NULL, c);
	}
	json_add(o, "choices", choices);
	return o;
}

cJSON *llm_openai_message_new(const char *text, size_t len)
{
	cJSON *m = cJSON_CreateObject();
	json_add_str(m, "role", "assistant");
	if (text)
		json_add_strn(m, "content", text, len);
	else
		json_add(m, "content", cJSON_CreateNull());
	return m;
}

cJSON *llm_openai_usage_new(int64_t prompt_tokens, int64_t completion_tokens)
{
	cJSON *u = cJSON_CreateObject();
	json_add_num(u, "prompt_tokens", (double)prompt_tokens);
	json_add_num(u, "completion_tokens", (double)completion_tokens);
	json_add_num(u, "total_tokens", (double)(prompt_tokens + completion_tokens));
	return u;
}
