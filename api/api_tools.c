/* SPDX-License-Identifier: MIT */
/* api/api_tools.c -- host tools: functions of the calling program offered
 * to model code (rlm_api_tool_add) through the tool path of rlm/rlm.h
 * (rlm_tool_register): the adapter from tool_host_fn (a return code and a
 * string) to rlm_api_tool_fn (a reply object the function fills). */
#include "api_int.h"
#include "../common/json.h"

#include <stdlib.h>
#include <string.h>

/* One tool the client offers: the caller's function, for both sets. */
struct rlm_api__host {
	struct rlm_api__host *next;
	char *name;	/* owned: "SERVER.TOOL" ("host.NAME" for a bare name) */
	unsigned where; /* RLM_API_ROOT, RLM_API_CHILDREN */
	rlm_api_tool_fn *fn;
	void *arg;
};

/* Is name (full) already a tool of a set that where names? Checked before
 * either set takes it, so that a refused tool is in neither. */
static bool taken(const struct rlm_api *a, const char *full, unsigned where)
{
	for (const struct rlm_api__host *h = a->hosts; h; h = h->next)
		if ((h->where & where) && !strcmp(h->name, full))
			return true;
	return false;
}

/* What a host tool's function answered; on the stack of the call. */
struct rlm_api_reply {
	char *json;  /* owned: the result as JSON text, or NULL */
	char *error; /* owned: the failure's message, or NULL */
};

void rlm_api_reply(struct rlm_api_reply *r, const char *json)
{
	cJSON *j;
	if (!r)
		return;
	free(r->json);
	free(r->error);
	r->error = NULL;
	if (!json) {
		r->json = xstrdup("null");
		return;
	}
	/* Text that is not JSON is a string. */
	j = json_parse(json, strlen(json));
	if (j) {
		r->json = xstrdup(json);
	} else {
		j = cJSON_CreateString(json);
		r->json = json_print(j);
	}
	cJSON_Delete(j);
}

void rlm_api_reply_error(struct rlm_api_reply *r, const char *message)
{
	if (!r)
		return;
	free(r->json);
	free(r->error);
	r->json = NULL;
	r->error = xstrdup(message && *message ? message : "the tool failed");
}

/* tool_host_fn: the caller's function with a reply to fill. */
static int host_call(void *arg, const char *args_json, char **out)
{
	struct rlm_api__host *h = arg;
	struct rlm_api_reply r = {NULL, NULL};
	h->fn(h->arg, args_json, &r);
	if (r.error) {
		free(r.json);
		*out = r.error;
		return -1;
	}
	if (!r.json) {
		*out = xstrdup("the tool gave no reply");
		return -1;
	}
	*out = r.json;
	return 0;
}

/* The children's set, made on the first tool: the MCP servers of the
 * config too, as the root's set has them. */
static int sub_set(struct rlm_api *a, struct rlm_err *err)
{
	if (a->sub_tools)
		return 0;
	a->sub_tools = rlm_tools_new();
	if (a->cfg.mcp_config && rlm_tools_load_config(a->sub_tools, a->cfg.mcp_config, err))
		return err->code ? err->code : RLM_EINVAL;
	return 0;
}

static int check_schema(const char *schema, struct rlm_err *err)
{
	cJSON *j;
	bool ok;
	if (!schema)
		return 0;
	j = json_parse(schema, strlen(schema));
	ok = cJSON_IsObject(j);
	cJSON_Delete(j);
	return ok ? 0 : rlm_err_set(err, RLM_EINVAL, "the input schema is not a JSON object");
}

int rlm_api_tool_add(struct rlm_api *a, unsigned where, const char *name,
		     const char *input_schema_json, const char *description, rlm_api_tool_fn *fn,
		     void *arg, char **err)
{
	/* NULL: any arguments (rlm_tool_register's NULL is none at all). */
	const char *schema = input_schema_json ? input_schema_json : "{\"type\": \"object\"}";
	struct rlm_err e = {0, ""};
	struct rlm_api__host *h;
	char *full;
	bool in_root = false;
	int rc = 0;
	if (err)
		*err = NULL;
	if (!a || !fn || !name) {
		rc = rlm_err_set(&e, RLM_EINVAL, "tool: no client, name or function");
		goto out;
	}
	if (!where || (where & ~(RLM_API_ROOT | RLM_API_CHILDREN))) {
		rc = rlm_err_set(&e, RLM_EINVAL,
				 "tool '%s': where must be RLM_API_ROOT, RLM_API_CHILDREN or both",
				 name);
		goto out;
	}
	if ((rc = check_schema(schema, &e))) {
		rlm_err_prefix(&e, "tool '%s'", name);
		goto out;
	}
	pthread_mutex_lock(&a->mu);
	if (a->solved) {
		pthread_mutex_unlock(&a->mu);
		rc =
		    rlm_err_set(&e, RLM_EINVAL,
				"tool '%s': tools are added before the client's first solve", name);
		goto out;
	}
	full = strchr(name, '.') ? xstrdup(name) : xasprintf("host.%s", name);
	if (taken(a, full, where)) {
		pthread_mutex_unlock(&a->mu);
		rc = rlm_err_set(&e, RLM_EINVAL, "tool '%s': the name is taken", name);
		free(full);
		goto out;
	}
	h = xcalloc(1, sizeof(*h));
	h->name = full;
	h->where = where;
	h->fn = fn;
	h->arg = arg;
	h->next = a->hosts;
	a->hosts = h;
	if (!a->tools)
		a->tools = rlm_tools_new();
	if ((rc = sub_set(a, &e)) == 0 && (where & RLM_API_ROOT)) {
		rc = rlm_tool_register(a->tools, name, schema, description ? description : "", true,
				       host_call, h, &e);
		in_root = rc == 0;
	}
	/* the name was free in both sets and the schema is one: what the
	 * root's set refuses the children's would too, so a refused tool is
	 * in neither */
	if (rc == 0 && (where & RLM_API_CHILDREN))
		rc = rlm_tool_register(a->sub_tools, name, schema, description ? description : "",
				       true, host_call, h, &e);
	if (rc && !in_root) { /* no set holds h: it goes */
		a->hosts = h->next;
		free(h->name);
		free(h);
	}
	pthread_mutex_unlock(&a->mu);
out:
	if (rc)
		rlm_api__err(err, &e);
	return rc;
}

void rlm_api__hosts_free(struct rlm_api *a)
{
	while (a->hosts) {
		struct rlm_api__host *h = a->hosts;
		a->hosts = h->next;
		free(h->name);
		free(h);
	}
}
