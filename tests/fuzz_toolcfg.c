/* SPDX-License-Identifier: MIT */
/* tests/fuzz_toolcfg.c -- libFuzzer target: any bytes as an MCP client
 * config (--mcp-config), through tool__config_parse and tool_set_add_config.
 * A config is refused with RLM_EPARSE or RLM_EINVAL and a message that
 * starts with its origin, adding nothing; or accepted, every server with a
 * valid name and a command or an http(s) URL; adding it again is refused
 * when it named a server (a name given twice). Nothing is started. */
#include "../tool/client_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_servers(struct tool__server **v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct tool__server *s = v[i];
		if (!tool__server_name_ok(s->name) || s->conn || s->n_tools)
			abort();
		if (s->kind == TOOL__STDIO && (!s->argv || !s->argv[0] || !*s->argv[0] || s->url))
			abort();
		if (s->kind == TOOL__HTTP && (!s->url || s->argv ||
					      (strncmp(s->url, "http://", 7) != 0 &&
					       strncmp(s->url, "https://", 8) != 0)))
			abort();
		for (size_t k = 0; k < s->n_env; k++)
			if (!strchr(s->env[k], '=') || s->env[k][0] == '=')
				abort();
		for (size_t k = 0; k < s->n_headers; k++)
			if (strpbrk(s->headers[k], "\r\n"))
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct tool__server **v = NULL;
	struct tool_set *ts;
	struct rlm_err err = {0, ""};
	size_t n = 0;
	int rc = tool__config_parse(s, size, "fuzz.json", &v, &n, &err), rc2;
	if (rc) {
		if ((rc != RLM_EPARSE && rc != RLM_EINVAL) || err.code != rc || v || n ||
		    strncmp(err.msg, "fuzz.json: ", 11) != 0)
			abort();
	} else {
		check_servers(v, n);
	}
	for (size_t i = 0; i < n; i++)
		tool__server_free(v[i]);
	free(v);

	/* The same through the set, twice. */
	ts = tool_set_new();
	rc2 = tool_set_add_config(ts, s, size, "fuzz.json", &err);
	if (rc2 != rc || tool_set_n_servers(ts) != n)
		abort();
	if (!rc) {
		rc2 = tool_set_add_config(ts, s, size, "again", &err);
		if (n ? rc2 != RLM_EINVAL || !strstr(err.msg, "is defined twice") : rc2 != 0)
			abort();
		if (tool_set_n_servers(ts) != n)
			abort();
	}
	tool_set_free(ts);
	return 0;
}
