/* SPDX-License-Identifier: MIT */
/* llm/openai.h -- OpenAI's chat completion reply objects, built in one
 * place for every server that speaks the openai wire (the simulator, the
 * OpenAI-compatible door of `rlm serve`), so that their bytes agree: the
 * members in OpenAI's order, a chunk shaped as a completion is.
 * Implemented in llm/wire_openai.c. */
#ifndef RLM_LLM_OPENAI_H
#define RLM_LLM_OPENAI_H

#include <stddef.h>
#include <stdint.h>

#include "../common/json.h"

/* A chat completion (object "chat.completion") or a chunk of a streamed
 * one ("chat.completion.chunk"): {"id", "object", "created", "model",
 * "choices": [{"index": 0, "message" (in a chunk "delta"): msg,
 * "finish_reason": finish, or null when NULL}]}; msg NULL gives "choices":
 * [] (the chunk that carries the usage at a stream's end). msg is
 * consumed. The caller adds "usage" (llm_openai_usage_new) and members of
 * its own after these; the object is the caller's. */
cJSON *llm_openai_reply_new(const char *object, const char *id, const char *model, int64_t created,
			    cJSON *msg, const char *finish);
/* An assistant message, also the first delta of a stream: {"role":
 * "assistant", "content": text[0..len)} (text NULL: null). The caller's. */
cJSON *llm_openai_message_new(const char *text, size_t len);
/* {"prompt_tokens", "completion_tokens", "total_tokens"}. The caller's. */
cJSON *llm_openai_usage_new(int64_t prompt_tokens, int64_t completion_tokens);

#endif
