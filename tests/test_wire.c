/* SPDX-License-Identifier: MIT */
/* tests/test_wire.c -- the provider wire formats without a network: the
 * exact request each builds, replies and error bodies of every shape,
 * truncated and garbage input, Retry-After values, and the HTTP request
 * and response helpers. */
#include "harness.h"
#include "../llm/llm_int.h"
#include "../llm/wire.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_LSAN 1
#endif
#endif
#ifdef HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

/* Under ASan, fail the test when it leaked: the forked child ends with
 * _exit, which skips LeakSanitizer's own check. */
static void check_no_leaks(void)
{
#ifdef HAVE_LSAN
	CHECK_MSG(__lsan_do_recoverable_leak_check() == 0, "memory leaked (see above)");
#endif
}

static void model_init(struct llm_model *m, const struct llm_wire *w, const char *name,
		       const char *key, const char *extra)
{
	memset(m, 0, sizeof(*m));
	m->wire = w;
	m->name = (char *)(uintptr_t)name; /* never freed: the model is on the stack */
	m->api_key = (char *)(uintptr_t)key;
	m->extra_json = (char *)(uintptr_t)extra;
}

static void call_init(struct llm_call *c, struct llm_model *m, const struct llm_msg *msgs, size_t n)
{
	static const struct llm_params defaults = LLM_PARAMS_DEFAULT;
	memset(c, 0, sizeof(*c));
	c->model = m;
	c->msgs = msgs;
	c->n_msgs = n;
	c->params = defaults;
}

static void call_release(struct llm_call *c)
{
	free(c->text);
	free(c->error);
	free(c->finish_reason);
	c->text = c->error = c->finish_reason = NULL;
}

/* clang-format off */
#define OAI (&llm_wire_openai)
#define ANT (&llm_wire_anthropic)
#define M(role, s) {role, s, sizeof(s) - 1}

static const struct llm_msg sys_user[] = {
	M(LLM_SYSTEM, "Be brief."),
	M(LLM_USER, "What is the capital of France?"),
};
static const struct llm_msg multi[] = {
	M(LLM_SYSTEM, "S1"), M(LLM_USER, "u1"), M(LLM_ASSISTANT, "a1"),
	M(LLM_SYSTEM, "S2"), M(LLM_USER, "u2"),
};
static const struct llm_msg user_only[] = {M(LLM_USER, "hi")};
static const struct llm_msg prefill[] = {M(LLM_USER, "u"), M(LLM_ASSISTANT, "a")};
static const struct llm_msg sys_only[] = {M(LLM_SYSTEM, "s")};
/* Quotes, backslashes, control characters, DEL, non-ASCII, U+2028. */
static const struct llm_msg tricky[] = {
	M(LLM_USER, "q\"b\\s\nt\tc\r\x01\x1f\x7f é 日本 😀 </x> \xe2\x80\xa8"),
};
/* NUL, a stray byte, a cut sequence, an overlong, a surrogate. */
static const struct llm_msg invalid[] = {
	M(LLM_USER, "a\0b\xff" "c\xc3"),
	M(LLM_USER, "\xc0\x80|\xed\xa0\x80"),
};

static const char *const stops[] = {"\n\n", "END"};

#define P_DEFAULT LLM_PARAMS_DEFAULT
#define P_FULL {100, 0.5, 0.9, stops, 2, NULL}
#define P_ZERO {0, 0.0, 0.0, NULL, 0, NULL}

#define FFFD "\xef\xbf\xbd"
#define CT "Content-Type: application/json"
#define ACC "Accept: application/json"
#define AVER "anthropic-version: 2023-06-01"

#define OAI_SYS_USER                                                                               \
	"\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\","       \
	"\"content\":\"What is the capital of France?\"}]"
#define OAI_MULTI                                                                                  \
	"\"messages\":[{\"role\":\"system\",\"content\":\"S1\"},{\"role\":\"user\",\"content\":"  \
	"\"u1\"},{\"role\":\"assistant\",\"content\":\"a1\"},{\"role\":\"system\",\"content\":"   \
	"\"S2\"},{\"role\":\"user\",\"content\":\"u2\"}]"
#define EPH "\"cache_control\":{\"type\":\"ephemeral\"}"
#define ANT_SYS_USER                                                                               \
	"\"system\":[{\"type\":\"text\",\"text\":\"Be brief.\"," EPH "}],\"messages\":[{\"role\":" \
	"\"user\",\"content\":[{\"type\":\"text\",\"text\":\"What is the capital of France?\","    \
	EPH "}]}]"

struct build_case {
	const char *name;
	const struct llm_wire *wire;
	const char *base;
	const char *key;
	const char *model_extra;
	const struct llm_msg *msgs;
	size_t n_msgs;
	struct llm_params params;
	int rc;
	const char *url;         /* or, when rc != 0, a substring of the error */
	const char *headers[5];  /* NULL-terminated */
	const char *body;
};

static const struct build_case build_cases[] = {
	{"openai system+user, defaults, no key", OAI, "http://127.0.0.1:8000/v1", NULL, NULL,
	 sys_user, 2, P_DEFAULT, 0, "http://127.0.0.1:8000/v1/chat/completions", {CT, ACC, NULL},
	 "{\"model\":\"gpt-x\"," OAI_SYS_USER "}"},
	{"openai empty key sends none", OAI, "http://h/v1", "", NULL, user_only, 1, P_DEFAULT, 0,
	 "http://h/v1/chat/completions", {CT, ACC, NULL},
	 "{\"model\":\"gpt-x\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"},
	{"openai key, max_tokens elsewhere", OAI, "http://h/v1", "sk-1", NULL, sys_user, 2,
	 {50, -1, -1, NULL, 0, NULL}, 0, "http://h/v1/chat/completions",
	 {CT, ACC, "Authorization: Bearer sk-1", NULL},
	 "{\"model\":\"gpt-x\"," OAI_SYS_USER ",\"max_tokens\":50}"},
	{"openai multi-turn, all params, api.openai.com", OAI, "https://api.openai.com/v1", "k",
	 NULL, multi, 5, P_FULL, 0, "https://api.openai.com/v1/chat/completions",
	 {CT, ACC, "Authorization: Bearer k", NULL},
	 "{\"model\":\"gpt-x\"," OAI_MULTI ",\"max_completion_tokens\":100,\"temperature\":0.5,"
	 "\"top_p\":0.9,\"stop\":[\"\\n\\n\",\"END\"]}"},
	{"openai host match ignores case, port, user", OAI, "https://u:p@API.OpenAI.com:443/v1",
	 NULL, NULL, user_only, 1, {7, -1, -1, NULL, 0, NULL}, 0,
	 "https://u:p@API.OpenAI.com:443/v1/chat/completions", {CT, ACC, NULL},
	 "{\"model\":\"gpt-x\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	 "\"max_completion_tokens\":7}"},
	{"openai look-alike host is not openai", OAI, "https://api.openai.com.example/v1", NULL,
	 NULL, user_only, 1, {7, -1, -1, NULL, 0, NULL}, 0,
	 "https://api.openai.com.example/v1/chat/completions", {CT, ACC, NULL},
	 "{\"model\":\"gpt-x\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	 "\"max_tokens\":7}"},
	{"openai zero temperature and top_p are sent", OAI, "http://h", NULL, NULL, user_only, 1,
	 P_ZERO, 0, "http://h/chat/completions", {CT, ACC, NULL},
	 "{\"model\":\"gpt-x\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	 "\"temperature\":0,\"top_p\":0}"},
	{"openai default base url", OAI, NULL, NULL, NULL, user_only, 1, P_DEFAULT, 0,
	 "https://api.openai.com/v1/chat/completions", {CT, ACC, NULL},
	 "{\"model\":\"gpt-x\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"},
	{"openai escapes", OAI, "http://h", NULL, NULL, tricky, 1, P_DEFAULT, 0,
	 "http://h/chat/completions", {CT, ACC, NULL},
	 "{\"model\":\"gpt-x\",\"messages\":[{\"role\":\"user\",\"content\":"
	 "\"q\\\"b\\\\s\\nt\\tc\\r\\u0001\\u001f\x7f é 日本 😀 </x> \xe2\x80\xa8\"}]}"},
	{"openai NUL and invalid UTF-8 become U+FFFD", OAI, "http://h", NULL, NULL, invalid, 2,
	 P_DEFAULT, 0, "http://h/chat/completions", {CT, ACC, NULL},
	 "{\"model\":\"gpt-x\",\"messages\":[{\"role\":\"user\",\"content\":\"a" FFFD "b" FFFD
	 "c" FFFD "\"},{\"role\":\"user\",\"content\":\"" FFFD FFFD "|" FFFD FFFD FFFD "\"}]}"},
	{"openai no messages", OAI, "http://h", NULL, NULL, NULL, 0, P_DEFAULT, RLM_EINVAL,
	 "no messages", {NULL}, NULL},
	{"openai model extras override in place and append", OAI, "http://h", NULL,
	 "{\"temperature\":0,\"seed\":7,\"model\":\"gpt-y\"}", user_only, 1,
	 {0, 0.5, -1, NULL, 0, "{\"seed\":8,\"response_format\":{\"type\":\"json_object\"}}"}, 0,
	 "http://h/chat/completions", {CT, ACC, NULL},
	 "{\"model\":\"gpt-y\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	 "\"temperature\":0,\"seed\":8,\"response_format\":{\"type\":\"json_object\"}}"},
	{"openai empty extras object", OAI, "http://h", NULL, "{}", user_only, 1,
	 {0, -1, -1, NULL, 0, " { } "}, 0, "http://h/chat/completions", {CT, ACC, NULL},
	 "{\"model\":\"gpt-x\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"},
	{"openai extras: array", OAI, "http://h", NULL, "[1,2]", user_only, 1, P_DEFAULT,
	 RLM_EINVAL, "extra parameters are not a JSON object: '[1,2]'", {NULL}, NULL},
	{"openai extras: truncated", OAI, "http://h", NULL, NULL, user_only, 1,
	 {0, -1, -1, NULL, 0, "{\"a\":"}, RLM_EINVAL,
	 "extra parameters are not a JSON object: '{\"a\":'", {NULL}, NULL},
	{"openai extras: null", OAI, "http://h", NULL, "null", user_only, 1, P_DEFAULT,
	 RLM_EINVAL, "not a JSON object: 'null'", {NULL}, NULL},
	{"openai extras: empty string", OAI, "http://h", NULL, "", user_only, 1, P_DEFAULT,
	 RLM_EINVAL, "not a JSON object: ''", {NULL}, NULL},
	{"openai extras: trailing garbage", OAI, "http://h", NULL, "{}x", user_only, 1,
	 P_DEFAULT, RLM_EINVAL, "not a JSON object", {NULL}, NULL},

	{"anthropic system+user, default max_tokens", ANT, "https://api.anthropic.com", "ak",
	 NULL, sys_user, 2, P_DEFAULT, 0, "https://api.anthropic.com/v1/messages",
	 {CT, ACC, "x-api-key: ak", AVER, NULL},
	 "{\"model\":\"claude-x\",\"max_tokens\":8192," ANT_SYS_USER "}"},
	{"anthropic no key, no system", ANT, "http://h", NULL, NULL, user_only, 1, P_DEFAULT, 0,
	 "http://h/v1/messages", {CT, ACC, AVER, NULL},
	 "{\"model\":\"claude-x\",\"max_tokens\":8192,\"messages\":[{\"role\":\"user\","
	 "\"content\":[{\"type\":\"text\",\"text\":\"hi\"," EPH "}]}]}"},
	{"anthropic multi-turn, systems joined, all params", ANT, "http://h", "", NULL, multi, 5,
	 P_FULL, 0, "http://h/v1/messages", {CT, ACC, AVER, NULL},
	 "{\"model\":\"claude-x\",\"max_tokens\":100,\"system\":[{\"type\":\"text\",\"text\":"
	 "\"S1\\n\\nS2\"," EPH "}],\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
	 "\"text\",\"text\":\"u1\"}]},{\"role\":\"assistant\",\"content\":[{\"type\":\"text\","
	 "\"text\":\"a1\"}]},{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"u2\","
	 EPH "}]}],\"temperature\":0.5,\"top_p\":0.9,\"stop_sequences\":[\"\\n\\n\",\"END\"]}"},
	{"anthropic cache_control on a last assistant message", ANT, "http://h", NULL, NULL,
	 prefill, 2, P_DEFAULT, 0, "http://h/v1/messages", {CT, ACC, AVER, NULL},
	 "{\"model\":\"claude-x\",\"max_tokens\":8192,\"messages\":[{\"role\":\"user\","
	 "\"content\":[{\"type\":\"text\",\"text\":\"u\"}]},{\"role\":\"assistant\",\"content\":"
	 "[{\"type\":\"text\",\"text\":\"a\"," EPH "}]}]}"},
	{"anthropic default base url", ANT, "", NULL, NULL, user_only, 1, P_DEFAULT, 0,
	 "https://api.anthropic.com/v1/messages", {CT, ACC, AVER, NULL},
	 "{\"model\":\"claude-x\",\"max_tokens\":8192,\"messages\":[{\"role\":\"user\","
	 "\"content\":[{\"type\":\"text\",\"text\":\"hi\"," EPH "}]}]}"},
	{"anthropic escapes", ANT, "http://h", NULL, NULL, tricky, 1, P_DEFAULT, 0,
	 "http://h/v1/messages", {CT, ACC, AVER, NULL},
	 "{\"model\":\"claude-x\",\"max_tokens\":8192,\"messages\":[{\"role\":\"user\","
	 "\"content\":[{\"type\":\"text\",\"text\":"
	 "\"q\\\"b\\\\s\\nt\\tc\\r\\u0001\\u001f\x7f é 日本 😀 </x> \xe2\x80\xa8\"," EPH "}]}]}"},
	{"anthropic extras merge and override", ANT, "http://h", NULL,
	 "{\"max_tokens\":1,\"metadata\":{\"user_id\":\"u\"}}", user_only, 1,
	 {0, -1, -1, NULL, 0, "{\"max_tokens\":2,\"thinking\":{\"type\":\"disabled\"}}"}, 0,
	 "http://h/v1/messages", {CT, ACC, AVER, NULL},
	 "{\"model\":\"claude-x\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\","
	 "\"content\":[{\"type\":\"text\",\"text\":\"hi\"," EPH "}]}],\"metadata\":{\"user_id\":"
	 "\"u\"},\"thinking\":{\"type\":\"disabled\"}}"},
	{"anthropic extras: not an object", ANT, "http://h", NULL, "{\"a\":1}", user_only, 1,
	 {0, -1, -1, NULL, 0, "\"str\""}, RLM_EINVAL,
	 "extra parameters are not a JSON object: '\"str\"'", {NULL}, NULL},
	{"openai key with a newline", OAI, "http://h", "sk-1\n", NULL, user_only, 1, P_DEFAULT,
	 RLM_EINVAL, "API key: it holds a control character at offset 4", {NULL}, NULL},
	{"anthropic key with a CR", ANT, "http://h", "a\rb", NULL, user_only, 1, P_DEFAULT,
	 RLM_EINVAL, "control character at offset 1", {NULL}, NULL},
	{"anthropic system only", ANT, "http://h", NULL, NULL, sys_only, 1, P_DEFAULT, RLM_EINVAL,
	 "no user or assistant message", {NULL}, NULL},
	{"anthropic no messages", ANT, "http://h", NULL, NULL, NULL, 0, P_DEFAULT, RLM_EINVAL,
	 "no user or assistant message", {NULL}, NULL},
};
/* clang-format on */

TEST(wire_build_table)
{
	for (size_t i = 0; i < ARRAY_SIZE(build_cases); i++) {
		const struct build_case *t = &build_cases[i];
		struct llm_model m;
		struct llm_call c;
		struct http_req req = {0};
		struct rlm_err err = {0, ""};
		int rc, n = 0;
		model_init(&m, t->wire, t->wire == OAI ? "gpt-x" : "claude-x", t->key,
			   t->model_extra);
		call_init(&c, &m, t->msgs, t->n_msgs);
		c.params = t->params;
		rc = t->wire->build(&c, &m, t->base, &req, &err);
		CHECK_MSG(rc == t->rc, "%s: rc %d, want %d (%s)", t->name, rc, t->rc, err.msg);
		if (rc) {
			CHECK_MSG(strstr(err.msg, t->url), "%s: error \"%s\" lacks \"%s\"", t->name,
				  err.msg, t->url);
			CHECK_MSG(err.code == rc, "%s: err.code %d", t->name, err.code);
			llm__http_req_release(&req);
			continue;
		}
		CHECK_MSG(req.url && strcmp(req.url, t->url) == 0, "%s: url \"%s\"", t->name,
			  req.url ? req.url : "(null)");
		while (t->headers[n])
			n++;
		CHECK_MSG(req.n_headers == n, "%s: %d headers, want %d", t->name, req.n_headers, n);
		for (int h = 0; h < n; h++)
			CHECK_MSG(strcmp(req.headers[h], t->headers[h]) == 0,
				  "%s: header %d \"%s\", want \"%s\"", t->name, h, req.headers[h],
				  t->headers[h]);
		CHECK_MSG(req.body && strcmp(req.body, t->body) == 0, "%s:\n  body %s\n  want %s",
			  t->name, req.body ? req.body : "(null)", t->body);
		CHECK_MSG(req.len == strlen(t->body), "%s: len %zu", t->name, req.len);
		llm__http_req_release(&req);
		CHECK(req.url == NULL && req.body == NULL && req.n_headers == 0);
	}
	check_no_leaks();
}

/* Large texts of every byte value but NUL survive the trip through JSON,
 * whether or not they are NUL-terminated. */
TEST(wire_build_large_text_round_trip)
{
	size_t n = 600 * 1000;
	char *text = malloc(n); /* deliberately not NUL-terminated */
	static const char pieces[][8] = {"a",	 "\"", "\\", "\n", "\x01",
					 "\x1f", "é",  "日", "😀",  "/"};
	size_t i = 0, k = 0;
	while (i < n) {
		const char *p = pieces[k++ % ARRAY_SIZE(pieces)];
		size_t l = strlen(p);
		if (i + l > n)
			p = "z", l = 1;
		memcpy(text + i, p, l);
		i += l;
	}
	for (int w = 0; w < 2; w++) {
		const struct llm_wire *wire = w ? ANT : OAI;
		struct llm_msg msgs[2] = {{LLM_SYSTEM, text, n}, {LLM_USER, text, n}};
		struct llm_model m;
		struct llm_call c;
		struct http_req req = {0};
		struct rlm_err err = {0, ""};
		cJSON *j, *msg, *got;
		model_init(&m, wire, "m", "k", NULL);
		call_init(&c, &m, msgs, 2);
		CHECK_INT(wire->build(&c, &m, "http://h", &req, &err), 0);
		j = json_parse(req.body, req.len);
		CHECK(j);
		msg = cJSON_GetArrayItem(json_get(j, "messages"), w ? 0 : 1);
		got = w ? json_get(cJSON_GetArrayItem(json_get(msg, "content"), 0), "text")
			: json_get(msg, "content");
		CHECK(cJSON_IsString(got));
		CHECK_INT(strlen(got->valuestring), n);
		CHECK(memcmp(got->valuestring, text, n) == 0);
		cJSON_Delete(j);
		llm__http_req_release(&req);
	}
	free(text);
	check_no_leaks();
}

/* ---- parse ---- */

/* clang-format off */
static const char ok_openai[] =
	"{\"id\":\"x\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
	"\"Paris\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1000,"
	"\"completion_tokens\":100,\"prompt_tokens_details\":{\"cached_tokens\":400}}}";
static const char ok_openai_parts[] =
	"{\"choices\":[{\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"Hel\"},{\"type\":"
	"\"image_url\",\"image_url\":{\"url\":\"x\"}},{\"type\":\"text\",\"text\":\"lo \\u00e9"
	"\\ud83d\\ude00\"}]},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":3}}\n";
static const char ok_anthropic[] =
	"{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":"
	"\"text\",\"text\":\"Paris\"}],\"stop_reason\":\"end_turn\",\"usage\":{\"input_tokens\":10,"
	"\"cache_read_input_tokens\":20,\"cache_creation_input_tokens\":30,\"output_tokens\":5}}";
static const char ok_anthropic_blocks[] =
	"{\"type\":\"message\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hmm\",\"text\":"
	"\"no\"},{\"type\":\"text\",\"text\":\"a\\n\"},{\"type\":\"tool_use\",\"id\":\"t\","
	"\"name\":\"f\",\"input\":{}},{\"type\":\"text\",\"text\":\"b\"}],\"stop_reason\":"
	"\"tool_use\",\"usage\":{\"input_tokens\":7,\"output_tokens\":2}}";

struct parse_case {
	const struct llm_wire *wire;
	const char *body;
	int rc;
	const char *text;  /* or, when rc != 0, a substring of the error */
	const char *finish;
	int64_t in, out, cached, cache_write;
};

static const struct parse_case parse_cases[] = {
	{OAI, ok_openai, 0, "Paris", "stop", 1000, 100, 400, 0},
	{OAI, ok_openai_parts, 0, "Hello é😀", "length", 3, 0, 0, 0},
	{OAI, "{\"choices\":[{\"message\":{\"content\":\"\"}}]}", 0, "", NULL, 0, 0, 0, 0},
	{OAI, " {\"choices\":[{\"message\":{\"content\":\"x\"},\"finish_reason\":null}],"
	      "\"usage\":{\"prompt_tokens\":-5,\"completion_tokens\":\"7\","
	      "\"prompt_tokens_details\":null},\"error\":null}\r\n",
	 0, "x", NULL, 0, 0, 0, 0},
	{OAI, "{\"choices\":[{\"message\":{\"content\":[]}}]}", 0, "", NULL, 0, 0, 0, 0},
	{OAI, "{\"error\":{\"message\":\"Rate limit\",\"type\":\"rate_limit_error\"}}",
	 RLM_EPROVIDER, "rate_limit_error: Rate limit", NULL, 0, 0, 0, 0},
	{OAI, "{\"error\":\"boom\"}", RLM_EPROVIDER, "boom", NULL, 0, 0, 0, 0},
	{OAI, "{\"error\":{}}", RLM_EPROVIDER, "no message", NULL, 0, 0, 0, 0},
	{OAI, "{\"choices\":[{\"message\":{\"content\":null,\"refusal\":\"I can't\"}}]}",
	 RLM_EPROVIDER, "model refused: I can't", NULL, 0, 0, 0, 0},
	{OAI, "{\"choices\":[]}", RLM_EPARSE, "no choices", NULL, 0, 0, 0, 0},
	{OAI, "{\"choices\":{}}", RLM_EPARSE, "no choices", NULL, 0, 0, 0, 0},
	{OAI, "{}", RLM_EPARSE, "no choices", NULL, 0, 0, 0, 0},
	{OAI, "{\"message\":\"hi\"}", RLM_EPARSE, "no choices", NULL, 0, 0, 0, 0},
	{OAI, "{\"choices\":[1]}", RLM_EPARSE, "no choices[0].message", NULL, 0, 0, 0, 0},
	{OAI, "{\"choices\":[{\"message\":{\"content\":null}}]}", RLM_EPARSE,
	 "no text in choices[0].message.content", NULL, 0, 0, 0, 0},
	{OAI, "{\"choices\":[{\"message\":{\"content\":5}}]}", RLM_EPARSE, "no text", NULL, 0, 0,
	 0, 0},
	{OAI, "not json", RLM_EPARSE, "malformed JSON in reply (8 bytes)", NULL, 0, 0, 0, 0},
	{OAI, "", RLM_EPARSE, "malformed JSON in reply (0 bytes)", NULL, 0, 0, 0, 0},
	{OAI, "[1]", RLM_EPARSE, "not a JSON object", NULL, 0, 0, 0, 0},
	{OAI, "{\"choices\":[]} x", RLM_EPARSE, "malformed JSON", NULL, 0, 0, 0, 0},

	{ANT, ok_anthropic, 0, "Paris", "end_turn", 60, 5, 20, 30},
	{ANT, ok_anthropic_blocks, 0, "a\nb", "tool_use", 7, 2, 0, 0},
	{ANT, "{\"content\":[],\"stop_reason\":\"max_tokens\"}", 0, "", "max_tokens", 0, 0, 0, 0},
	{ANT, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":"
	      "\"Overloaded\"}}",
	 RLM_EPROVIDER, "overloaded_error: Overloaded", NULL, 0, 0, 0, 0},
	{ANT, "{\"type\":\"message\"}", RLM_EPARSE, "no content array", NULL, 0, 0, 0, 0},
	{ANT, "{\"content\":\"Paris\"}", RLM_EPARSE, "no content array", NULL, 0, 0, 0, 0},
	{ANT, "{\"content\":[", RLM_EPARSE, "malformed JSON in reply (12 bytes)", NULL, 0, 0, 0,
	 0},
	{ANT, "\"text\"", RLM_EPARSE, "not a JSON object", NULL, 0, 0, 0, 0},
};
/* clang-format on */

TEST(wire_parse_table)
{
	for (size_t i = 0; i < ARRAY_SIZE(parse_cases); i++) {
		const struct parse_case *t = &parse_cases[i];
		struct llm_model m;
		struct llm_call c;
		struct rlm_err err = {0, ""};
		size_t len = strlen(t->body);
		char *body = malloc(len ? len : 1); /* exactly len bytes: no NUL to lean on */
		int rc;
		memcpy(body, t->body, len);
		model_init(&m, t->wire, "m", NULL, NULL);
		call_init(&c, &m, user_only, 1);
		rc = t->wire->parse(&c, body, len, &err);
		CHECK_MSG(rc == t->rc, "case %zu (%s): rc %d, want %d (%s)", i, t->body, rc, t->rc,
			  err.msg);
		if (rc) {
			CHECK_MSG(strstr(err.msg, t->text), "case %zu: error \"%s\" lacks \"%s\"",
				  i, err.msg, t->text);
			CHECK_MSG(c.text == NULL, "case %zu: text set on error", i);
		} else {
			CHECK_MSG(c.text && strcmp(c.text, t->text) == 0, "case %zu: text \"%s\"",
				  i, c.text ? c.text : "(null)");
			CHECK_INT(c.len, strlen(t->text));
			if (t->finish)
				CHECK_STR(c.finish_reason, t->finish);
			else
				CHECK(c.finish_reason == NULL);
			CHECK_INT(c.usage.input_tokens, t->in);
			CHECK_INT(c.usage.output_tokens, t->out);
			CHECK_INT(c.usage.cached_tokens, t->cached);
			CHECK_INT(c.usage.cache_write_tokens, t->cache_write);
		}
		call_release(&c);
		free(body);
	}
	check_no_leaks();
}

/* A second parse into the same call replaces the first result. */
TEST(wire_parse_replaces_previous_result)
{
	struct llm_model m;
	struct llm_call c;
	struct rlm_err err = {0, ""};
	model_init(&m, OAI, "m", NULL, NULL);
	call_init(&c, &m, user_only, 1);
	CHECK_INT(OAI->parse(&c, ok_openai, strlen(ok_openai), &err), 0);
	CHECK_INT(OAI->parse(&c, ok_openai_parts, strlen(ok_openai_parts), &err), 0);
	CHECK_STR(c.text, "Hello é😀");
	CHECK_STR(c.finish_reason, "length");
	CHECK_INT(OAI->parse(&c, "{", 1, &err), RLM_EPARSE);
	CHECK(c.text == NULL);
	call_release(&c);
	check_no_leaks();
}

/* ---- error bodies ---- */

/* clang-format off */
struct error_case {
	int wires; /* 1: openai, 2: anthropic, 3: both */
	const char *body;
	const char *want; /* NULL: no message */
};

static const struct error_case error_cases[] = {
	{3, "{\"error\":{\"message\":\"bad model\",\"type\":\"invalid_request_error\",\"code\":"
	    "\"model_not_found\"}}",
	 "invalid_request_error: bad model"},
	{3, "{\"error\":{\"message\":\"bad\",\"code\":400,\"status\":\"INVALID_ARGUMENT\"}}", "bad"},
	{3, "{\"error\":{\"type\":\"server_error\"}}", "server_error"},
	{3, "{\"error\":\"model 'x' not found\"}", "model 'x' not found"},
	{3, "{\"detail\":\"Not Found\"}", "Not Found"},
	{3, "{\"detail\":[{\"loc\":[\"body\",\"x\"],\"msg\":\"field required\",\"type\":"
	    "\"missing\"},{\"msg\":\"extra\"},{\"loc\":[]}]}",
	 "field required; extra"},
	{3, "{\"detail\":[]}", NULL},
	{3, "{\"message\":\"Internal Server Error\"}", "Internal Server Error"},
	{3, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":"
	    "\"Overloaded\"}}",
	 "overloaded_error: Overloaded"},
	{3, "{\"error\":{\"message\":\"\"},\"message\":\"outer\"}", "outer"},
	{3, "{\"foo\":1}", NULL},
	{3, "{}", NULL},
	{3, "[1,2]", NULL},
	{3, "42", NULL},
	{3, "null", NULL},
	{3, "\"quoted\"", NULL},
	{3, "", NULL},
	{3, "  \r\n\t ", NULL},
	{3, "Bad Gateway\n", "Bad Gateway"},
	{3, "<html>\r\n  <head><title>502 Bad Gateway</title></head>\n</html>\n",
	 "<html> <head><title>502 Bad Gateway</title></head> </html>"},
	{3, "a\x01\x02" "b\x7f", "a b"},
	{3, "{\"error\":", "{\"error\":"},
	{3, "upstream \xff", "upstream"},
	{3, "a\xff" "b \xc3\xa9\xed\xa0\x80.", "a?b \xc3\xa9???."},
};
/* clang-format on */

static void check_error(const struct llm_wire *w, const char *body, size_t len, const char *want,
			const char *what)
{
	char *copy = malloc(len ? len : 1);
	char *got;
	memcpy(copy, body, len);
	got = w->error_message(copy, len);
	if (want)
		CHECK_MSG(got && strcmp(got, want) == 0, "%s %s: \"%s\", want \"%s\"", w->name,
			  what, got ? got : "(null)", want);
	else
		CHECK_MSG(!got, "%s %s: \"%s\", want NULL", w->name, what, got);
	free(got);
	free(copy);
}

TEST(wire_error_message_table)
{
	for (size_t i = 0; i < ARRAY_SIZE(error_cases); i++) {
		const struct error_case *t = &error_cases[i];
		if (t->wires & 1)
			check_error(OAI, t->body, strlen(t->body), t->want, t->body);
		if (t->wires & 2)
			check_error(ANT, t->body, strlen(t->body), t->want, t->body);
	}
	check_no_leaks();
}

TEST(wire_error_message_plain_text_cut)
{
	char body[400], want[256];
	/* 300 bytes: the first 200 are kept. */
	memset(body, 'x', 300);
	memset(want, 'x', 200);
	want[200] = '\0';
	check_error(OAI, body, 300, want, "300 x");
	/* "é" straddles byte 200: cut before it. */
	memset(body, 'a', 199);
	memcpy(body + 199, "é tail", 7);
	memset(want, 'a', 199);
	want[199] = '\0';
	check_error(ANT, body, 206, want, "e-acute at 199");
	/* Whitespace runs before the cut shrink the text, not the window. */
	memset(body, ' ', 150);
	memcpy(body + 150, "word", 4);
	check_error(OAI, body, 154, "word", "leading blanks");
	/* A NUL in a plain body is whitespace. */
	check_error(OAI, "ab\0cd", 5, "ab cd", "NUL");
	check_no_leaks();
}

/* ---- robustness ---- */

static void parse_any(const struct llm_wire *w, const char *data, size_t len, bool whole)
{
	struct llm_model m;
	struct llm_call c;
	struct rlm_err err = {0, ""};
	char *copy = malloc(len ? len : 1);
	char *msg;
	int rc;
	memcpy(copy, data, len);
	model_init(&m, w, "m", NULL, NULL);
	call_init(&c, &m, user_only, 1);
	rc = w->parse(&c, copy, len, &err);
	if (whole)
		CHECK_MSG(rc == 0, "%s: whole body: %s", w->name, err.msg);
	else
		CHECK_MSG(rc == 0 || rc == RLM_EPARSE || rc == RLM_EPROVIDER,
			  "%s: %zu bytes: rc %d", w->name, len, rc);
	if (rc)
		CHECK_MSG(!c.text && err.msg[0], "%s: %zu bytes: text on error or no message",
			  w->name, len);
	else
		CHECK(c.text && strlen(c.text) == c.len);
	call_release(&c);
	msg = w->error_message(copy, len);
	free(msg);
	free(copy);
}

/* Every prefix of a valid body parses or fails with RLM_EPARSE, cleanly. */
TEST(wire_parse_every_prefix)
{
	static const struct {
		const struct llm_wire *w;
		const char *body;
	} bodies[] = {
	    {OAI, ok_openai},
	    {OAI, ok_openai_parts},
	    {ANT, ok_anthropic},
	    {ANT, ok_anthropic_blocks},
	};
	for (size_t b = 0; b < ARRAY_SIZE(bodies); b++) {
		size_t len = strlen(bodies[b].body);
		for (size_t n = 0; n <= len; n++) {
			struct llm_model m;
			struct llm_call c;
			struct rlm_err err = {0, ""};
			char *copy = malloc(n ? n : 1);
			int rc;
			memcpy(copy, bodies[b].body, n);
			model_init(&m, bodies[b].w, "m", NULL, NULL);
			call_init(&c, &m, user_only, 1);
			rc = bodies[b].w->parse(&c, copy, n, &err);
			/* Only the whole body, or it less trailing whitespace, is a reply. */
			if (n == len || (n == len - 1 && bodies[b].body[n] == '\n'))
				CHECK_MSG(rc == 0, "body %zu, %zu of %zu bytes: %s", b, n, len,
					  err.msg);
			else
				CHECK_MSG(rc == RLM_EPARSE, "body %zu, %zu of %zu bytes: rc %d", b,
					  n, len, rc);
			CHECK(rc == 0 ? c.text != NULL : c.text == NULL);
			call_release(&c);
			free(bodies[b].w->error_message(copy, n));
			free(copy);
		}
	}
	check_no_leaks();
}

/* Random bytes, and valid bodies with one byte changed, never crash. */
TEST(wire_parse_garbage)
{
	static const char *const bodies[] = {ok_openai, ok_openai_parts, ok_anthropic,
					     ok_anthropic_blocks};
	static const char json_chars[] = "{}[]\":,0 a\\ntrue";
	static const char subst[] = {'"', '{', '}', '[', '\\', '\0', ',', ':', 'x', '\xff'};
	struct rng r;
	char buf[512];
	rng_seed(&r, 42);
	for (int i = 0; i < 3000; i++) {
		size_t len = rng_below(&r, sizeof(buf));
		for (size_t k = 0; k < len; k++)
			buf[k] = i % 2 ? (char)rng_below(&r, 256) : json_chars[rng_below(&r, 16)];
		parse_any(i % 4 < 2 ? OAI : ANT, buf, len, false);
	}
	for (size_t b = 0; b < ARRAY_SIZE(bodies); b++) {
		size_t len = strlen(bodies[b]);
		for (size_t pos = 0; pos < len; pos++)
			for (size_t s = 0; s < sizeof(subst); s++) {
				memcpy(buf, bodies[b], len);
				buf[pos] = subst[s];
				parse_any(OAI, buf, len, false);
				parse_any(ANT, buf, len, false);
			}
	}
	check_no_leaks();
}

/* ---- Retry-After ---- */

#define DATE_MS 1445412480000LL /* Wed, 21 Oct 2015 07:28:00 GMT */
#define DATE	"Wed, 21 Oct 2015 07:28:00 GMT"

TEST(retry_after_table)
{
	static const struct {
		const char *v;
		int64_t now;
		int64_t want;
	} cases[] = {
	    {"120", 0, 120000},
	    {" 120\r\n", 0, 120000},
	    {"\t7 ", 0, 7000},
	    {"0", 0, 0},
	    {"1.5", 0, 1500},
	    {"0.001", 0, 1},
	    {"2.25009", 0, 2250},
	    {"3600", 0, 3600000},
	    {"3601", 0, 3600000},
	    {"99999999999999999999999999", 0, 3600000},
	    {"99999999999999999999999999.5", 0, 3600000},
	    {"1.", 0, -1},
	    {".5", 0, -1},
	    {"1.5s", 0, -1},
	    {"1 2", 0, -1},
	    {"-1", 0, -1},
	    {"+1", 0, -1},
	    {"1e3", 0, -1},
	    {"0x10", 0, -1},
	    {"", 0, -1},
	    {"   ", 0, -1},
	    {"soon", 0, -1},
	    {DATE, DATE_MS - 30000, 30000},
	    {"  " DATE "\r\n", DATE_MS - 1500, 1500},
	    {DATE, DATE_MS, 0},
	    {DATE, DATE_MS + 5000, 0},
	    {DATE, DATE_MS - 7200000, 3600000},
	    {"Thu, 29 Feb 2024 00:00:00 GMT", 1709164800000LL - 1000, 1000},
	    {"Sun, 06 Nov 1994 08:49:37 GMT", DATE_MS, 0},
	    {"Wed, 21 Oct 2015 07:28:00 UTC", 0, -1},
	    {"Wed, 21 Oct 2015 07:28:00 GMT x", 0, -1},
	    {"Wed, 21 Oct 2015 07:28 GMT", 0, -1},
	    {"Wed, 32 Oct 2015 07:28:00 GMT", 0, -1},
	    {"Wed, 00 Oct 2015 07:28:00 GMT", 0, -1},
	    {"Sun, 29 Feb 2015 07:28:00 GMT", 0, -1},
	    {"Wed, 21 Foo 2015 07:28:00 GMT", 0, -1},
	    {"Xyz, 21 Oct 2015 07:28:00 GMT", 0, -1},
	    {"Wed, 21 Oct 2015 24:00:00 GMT", 0, -1},
	    {"Wed, 21 Oct 2015 07:60:00 GMT", 0, -1},
	    {"Wed, 21 Oct 2O15 07:28:00 GMT", 0, -1},
	    {"Wed, 2a Oct 2015 07:28:00 GMT", 0, -1},
	    {"Wednesday, 21-Oct-15 07:28:00 GMT", 0, -1},
	    {"Wed Oct 21 07:28:00 2015", 0, -1},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int64_t got = llm__http_parse_retry_after(cases[i].v, cases[i].now);
		CHECK_MSG(got == cases[i].want, "\"%s\": %lld, want %lld", cases[i].v,
			  (long long)got, (long long)cases[i].want);
	}
	CHECK_INT(llm__http_parse_retry_after(NULL, 0), -1);
}

/* ---- request and response ---- */

TEST(http_req_and_resp_helpers)
{
	struct http_req r = {0};
	struct http_resp resp;
	llm__http_req_header(&r, "X-A: %d", 1);
	llm__http_req_header(&r, "X-B: %s", "two");
	CHECK_INT(r.n_headers, 2);
	CHECK_STR(r.headers[0], "X-A: 1");
	CHECK_STR(r.headers[1], "X-B: two");
	r.url = xstrdup("http://h");
	r.body = xstrdup("{}");
	r.len = 2;
	llm__http_req_release(&r);
	CHECK(!r.url && !r.body && r.n_headers == 0 && r.len == 0);
	llm__http_req_release(&r); /* twice is harmless */

	llm__http_resp_init(&resp);
	CHECK_INT(resp.status, 0);
	CHECK_INT(resp.retry_after_ms, -1);
	CHECK_INT(resp.transport_rc, 0);
	CHECK(!resp.connect_failed);
	CHECK_STR(resp.transport_err, "");
	CHECK_STR(resp.body.p, ""); /* never NULL after init */
	CHECK(resp.body.len == 0);
	CHECK(resp.body.max == LLM_MAX_BODY);
	CHECK_INT(buf_puts(&resp.body, "hello"), 0);
	llm__http_resp_release(&resp);
	CHECK(resp.body.cap == 0 && resp.body.len == 0);
	CHECK_STR(resp.body.p, "");
	check_no_leaks();
}

TEST(http_req_header_overflow_aborts)
{
	pid_t pid;
	int status;
	fflush(stderr);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct http_req r = {0};
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 2); /* the abort message is expected */
		for (int i = 0; i <= LLM_MAX_HEADERS; i++)
			llm__http_req_header(&r, "X-%d: v", i);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "status %#x", status);
}
