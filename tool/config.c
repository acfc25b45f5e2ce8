/* SPDX-License-Identifier: MIT */
/* tool/config.c -- the MCP client config other clients read too:
 * {"mcpServers": {"NAME": {"command", "args", "env", "cwd", "description"}
 *                 | {"url", "headers", "description"}}}, with "type"
 * checked against the members when given. Members rlm does not know are
 * ignored (other clients add their own), but a known member of the wrong
 * type is an error that names the origin, the server and the member.
 * "disabled": true (Cline's, Roo's) leaves a server out. */
#include "client_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/json.h"

struct ctx {
	const char *origin;
	const char *server;
	struct rlm_err *err;
};

static int bad(const struct ctx *x, const char *fmt, const char *member, const char *more)
{
	char what[300];
	snprintf(what, sizeof(what), fmt, member, more);
	return rlm_err_set(x->err, RLM_EINVAL, "%s: server '%s': %s", x->origin, x->server, what);
}

bool tool__server_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n < 1 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!text_is_alnum(name[i]) && name[i] != '_' && name[i] != '-')
			return false;
	return true;
}

static const char *type_name(const cJSON *j)
{
	return cJSON_IsString(j) ? "a string"
	       : cJSON_IsNumber(j) ? "a number"
	       : cJSON_IsBool(j)   ? "a boolean"
	       : cJSON_IsNull(j)   ? "null"
	       : cJSON_IsArray(j)  ? "an array"
				   : "an object";
}

/* A string member or absent; "" is refused when nonempty. */
static int get_str(const struct ctx *x, const cJSON *o, const char *key, bool nonempty, char **out)
{
	const cJSON *j = json_get(o, key);
	*out = NULL;
	if (!j)
		return 0;
	if (!cJSON_IsString(j))
		return bad(x, "\"%s\" must be a string, not %s", key, type_name(j));
	if (nonempty && !*j->valuestring)
		return bad(x, "\"%s\" is empty%s", key, "");
	*out = xstrdup(j->valuestring);
	return 0;
}

/* "args": an array of strings, after the command into argv. */
static int get_argv(const struct ctx *x, const cJSON *o, const char *command, char ***out)
{
	const cJSON *args = json_get(o, "args"), *it;
	size_t n = 0, k = 0;
	char idx[32];
	if (args && !cJSON_IsArray(args))
		return bad(x, "\"%s\" must be an array of strings, not %s", "args", type_name(args));
	cJSON_ArrayForEach(it, args)
	{
		if (!cJSON_IsString(it)) {
			snprintf(idx, sizeof(idx), "%zu", n);
			return bad(x, "\"args\"[%s] must be a string, not %s", idx, type_name(it));
		}
		n++;
	}
	*out = xcalloc(n + 2, sizeof(**out));
	(*out)[k++] = xstrdup(command);
	cJSON_ArrayForEach(it, args)
	(*out)[k++] = xstrdup(it->valuestring);
	return 0;
}

/* An object of strings ("env", "headers") as "K=V" or "K: V". */
static int get_map(const struct ctx *x, const cJSON *o, const char *key, const char *sep,
		   char ***out, size_t *n)
{
	const cJSON *m = json_get(o, key), *it;
	char what[160];
	*out = NULL;
	*n = 0;
	if (!m)
		return 0;
	if (!cJSON_IsObject(m))
		return bad(x, "\"%s\" must be an object of strings, not %s", key, type_name(m));
	*out = xcalloc((size_t)cJSON_GetArraySize(m) + 1, sizeof(**out));
	cJSON_ArrayForEach(it, m)
	{
		const char *k = it->string;
		bool name_ok = *k && !strpbrk(k, *sep == '=' ? "=" : ":\r\n \t");
		snprintf(what, sizeof(what), "%s.%.80s", key, k);
		if (!name_ok)
			return bad(x, "\"%s\" is not a valid name%s", what, "");
		if (!cJSON_IsString(it))
			return bad(x, "\"%s\" must be a string, not %s", what, type_name(it));
		if (*sep == ':' && strpbrk(it->valuestring, "\r\n"))
			return bad(x, "\"%s\" holds a line break%s", what, "");
		(*out)[(*n)++] = xasprintf("%s%s%s", k, sep, it->valuestring);
	}
	return 0;
}

/* "type", when given, against the members. */
static int check_type(const struct ctx *x, const cJSON *o, bool has_cmd, bool has_url)
{
	const cJSON *t = json_get(o, "type");
	const char *v;
	if (!t)
		return 0;
	if (!cJSON_IsString(t))
		return bad(x, "\"%s\" must be a string, not %s", "type", type_name(t));
	v = t->valuestring;
	if (strcmp(v, "sse") == 0)
		return bad(x, "\"%s\": \"sse\" (the old HTTP+SSE transport) is not supported; %s", "type",
			   "use a streamable HTTP endpoint (\"type\": \"http\")");
	if (strcmp(v, "stdio") == 0)
		return has_url ? bad(x, "\"%s\" is \"stdio\" but %s", "type", "\"url\" is given") : 0;
	if (strcmp(v, "http") == 0 || strcmp(v, "streamable-http") == 0 ||
	    strcmp(v, "streamableHttp") == 0)
		return has_cmd ? bad(x, "\"%s\" is an HTTP type but %s", "type", "\"command\" is given") : 0;
	return bad(x, "\"%s\" '%.40s' is not one of stdio, http, streamable-http", "type", v);
}

static int parse_stdio(const struct ctx *x, const cJSON *o, struct tool__server *s)
{
	char *command = NULL;
	int rc;
	if ((rc = get_str(x, o, "command", true, &command)) ||
	    (rc = get_argv(x, o, command, &s->argv)) ||
	    (rc = get_map(x, o, "env", "=", &s->env, &s->n_env)) ||
	    (rc = get_str(x, o, "cwd", true, &s->cwd))) {
		free(command);
		return rc;
	}
	free(command);
	return 0;
}

static int parse_http(const struct ctx *x, const cJSON *o, struct tool__server *s)
{
	int rc;
	if ((rc = get_str(x, o, "url", true, &s->url)) ||
	    (rc = get_map(x, o, "headers", ": ", &s->headers, &s->n_headers)))
		return rc;
	if (strncmp(s->url, "http://", 7) != 0 && strncmp(s->url, "https://", 8) != 0)
		return bad(x, "\"%s\" '%.100s' is not an http:// or https:// URL", "url", s->url);
	return 0;
}

/* One server's object; *out NULL when it is disabled. */
static int parse_server(const struct ctx *x, const cJSON *o, struct tool__server **out)
{
	const cJSON *cmd = json_get(o, "command"), *url = json_get(o, "url"),
		    *dis = json_get(o, "disabled");
	struct tool__server *s;
	int rc;
	*out = NULL;
	if (!tool__server_name_ok(x->server))
		return rlm_err_set(x->err, RLM_EINVAL,
				   "%s: server name '%.80s' is not [A-Za-z0-9_-]{1,64}", x->origin,
				   x->server);
	if (!cJSON_IsObject(o))
		return bad(x, "it must be an object, not %s%s", type_name(o), "");
	if ((rc = check_type(x, o, cmd != NULL, url != NULL)))
		return rc;
	if (cmd && url)
		return bad(x, "it has both \"%s\" and %s; give one", "command", "\"url\"");
	if (!cmd && !url)
		return bad(x, "it has neither \"%s\" (a stdio server) nor %s", "command",
			   "\"url\" (an HTTP one)");
	if (dis && !cJSON_IsBool(dis))
		return bad(x, "\"%s\" must be a boolean, not %s", "disabled", type_name(dis));
	if (cJSON_IsTrue(dis))
		return 0;
	s = tool__server_new(x->server, cmd ? TOOL__STDIO : TOOL__HTTP);
	if ((rc = get_str(x, o, "description", false, &s->description)) ||
	    (rc = cmd ? parse_stdio(x, o, s) : parse_http(x, o, s))) {
		tool__server_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* The whole text as JSON: one object, no duplicate key, no \u0000. */
static int parse_top(const char *json, size_t len, const char *origin, cJSON **out,
		     struct rlm_err *err)
{
	char msg[200], path[150];
	cJSON *j = json_parse(json, len);
	*out = NULL;
	if (!j)
		return rlm_err_set(err, RLM_EPARSE, "%s: not valid JSON", origin);
	if (!cJSON_IsObject(j))
		snprintf(msg, sizeof(msg), "not a JSON object");
	else if (!json_duplicate_msg(j, msg, sizeof(msg)) && json_nul_path(json, len, path, sizeof(path)))
		snprintf(msg, sizeof(msg), "a \\u0000 escape in '%s'", path);
	else if (!json_duplicate_msg(j, msg, sizeof(msg)))
		msg[0] = '\0';
	if (msg[0]) {
		cJSON_Delete(j);
		return rlm_err_set(err, RLM_EPARSE, "%s: %s", origin, msg);
	}
	*out = j;
	return 0;
}

int tool__config_parse(const char *json, size_t len, const char *origin,
		       struct tool__server ***out, size_t *n, struct rlm_err *err)
{
	cJSON *j, *it;
	const cJSON *servers;
	struct tool__server **v;
	int rc;
	*out = NULL;
	*n = 0;
	if ((rc = parse_top(json, len, origin, &j, err)))
		return rc;
	servers = json_get(j, "mcpServers");
	if (!cJSON_IsObject(servers)) {
		rc = rlm_err_set(err, RLM_EINVAL, "%s: %s", origin,
				 servers ? "\"mcpServers\" must be an object"
					 : "no \"mcpServers\" object");
		cJSON_Delete(j);
		return rc;
	}
	v = xcalloc((size_t)cJSON_GetArraySize(servers) + 1, sizeof(*v));
	cJSON_ArrayForEach(it, servers)
	{
		struct ctx x = {origin, it->string, err};
		if ((rc = parse_server(&x, it, &v[*n])))
			break;
		if (v[*n])
			(*n)++;
	}
	cJSON_Delete(j);
	if (rc) {
		for (size_t i = 0; i < *n; i++)
			tool__server_free(v[i]);
		free(v);
		*n = 0;
		return rc;
	}
	*out = v;
	return 0;
}
