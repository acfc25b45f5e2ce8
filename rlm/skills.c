/* SPDX-License-Identifier: MIT */
/* rlm/skills.c -- skills for model code: versioned, immutable Python
 * functions kept in the store (store/store.h, store_skill_*), found by the
 * same three steps as tools (list_skills, search_skills, get_skill_info),
 * loaded into the worker (load_skill) and, with --allow-skill-writes,
 * saved (save_skill). The worker checks a skill's source and signature
 * before it sends it; this side checks the shapes again and keeps it. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solve_int.h"
#include "../common/json.h"

#define MAX_SOURCE (1u << 20) /* bytes of a skill's source */

static struct store *skills_store(const struct rlm_opts *o)
{
	return o->skills ? o->skills : o->store;
}

int64_t rlm__skills_count(const struct rlm_opts *o)
{
	struct store *s = skills_store(o);
	struct store_skill *v = NULL;
	struct rlm_err err = {0, ""};
	size_t n = 0;
	if (!s || store_skill_list(s, false, &v, &n, &err) < 0)
		return -1;
	store_skills_free(v, n);
	return (int64_t)n;
}

/* [A-Za-z_][A-Za-z0-9_.-]{0,63} */
static bool name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 64 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
			return false;
	return true;
}

static bool ident_ok(const char *s)
{
	if (!s || !*s || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (const char *p = s + 1; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return false;
	return strlen(s) <= 100;
}

/* A JSON text kept in the store as a value (null when absent or bad). */
static cJSON *json_of(const char *text)
{
	cJSON *v = text ? json_parse(text, strlen(text)) : NULL;
	return v ? v : cJSON_CreateNull();
}

static cJSON *brief(const struct store_skill *k)
{
	cJSON *o = cJSON_CreateObject();
	json_add_str(o, "name", k->name);
	json_add_num(o, "version", k->version);
	if (k->versions)
		json_add_num(o, "versions", k->versions);
	json_add_str(o, "description", k->description ? k->description : "");
	json_add_str(o, "signature", k->signature ? k->signature : "");
	return o;
}

static char *op_list(struct store *s)
{
	struct store_skill *v = NULL;
	struct rlm_err err = {0, ""};
	size_t n = 0;
	cJSON *a;
	if (store_skill_list(s, false, &v, &n, &err) < 0)
		return rlm__tool_err("skill", err.msg);
	a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		json_add(a, NULL, brief(&v[i]));
	store_skills_free(v, n);
	return rlm__tool_ok(a);
}

struct ranked {
	double score;
	size_t i;
};

static int by_score(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->score != y->score)
		return x->score < y->score ? 1 : -1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static char *op_search(struct store *s, const cJSON *r)
{
	const char *query = json_str(r, "query");
	int64_t limit = json_int(r, "limit", 10);
	struct store_skill *v = NULL;
	struct rlm_err err = {0, ""};
	struct ranked *rk;
	size_t n = 0, m = 0;
	cJSON *a;
	if (!query)
		return rlm__tool_err("request", "search_skills: the query must be a str");
	if (limit <= 0)
		limit = 10;
	if (limit > 100)
		limit = 100;
	if (store_skill_list(s, false, &v, &n, &err) < 0)
		return rlm__tool_err("skill", err.msg);
	rk = xcalloc(n + 1, sizeof(*rk));
	for (size_t i = 0; i < n; i++) {
		double sc = tool_rank(query, v[i].name, v[i].description ? v[i].description : "");
		if (sc > 0)
			rk[m++] = (struct ranked){sc, i};
	}
	qsort(rk, m, sizeof(*rk), by_score);
	a = cJSON_CreateArray();
	for (size_t j = 0; j < m && (int64_t)j < limit; j++) {
		cJSON *o = brief(&v[rk[j].i]);
		json_add_num(o, "score", rk[j].score);
		json_add(a, NULL, o);
	}
	free(rk);
	store_skills_free(v, n);
	return rlm__tool_ok(a);
}

/* "name" or "name@V" (V a positive number) into name and *version (0:
 * latest, or the request's "version"). */
static char *split_name(const cJSON *r, int *version)
{
	const char *given = json_str(r, "name"), *at;
	char *name;
	*version = (int)json_int(r, "version", 0);
	if (!given)
		return NULL;
	name = xstrdup(given);
	at = strrchr(given, '@');
	if (at && at[1] && strspn(at + 1, "0123456789") == strlen(at + 1)) {
		long v = strlen(at + 1) > 9 ? -1 : strtol(at + 1, NULL, 10);
		name[at - given] = 0;
		*version = v > 0 ? (int)v : -1; /* a version no skill has: not found */
	}
	return name;
}

static char *op_info(struct store *s, const cJSON *r)
{
	struct store_skill k, *v = NULL;
	struct rlm_err err = {0, ""};
	size_t n = 0;
	int version;
	char *name = split_name(r, &version);
	cJSON *o, *a;
	if (!name)
		return rlm__tool_err("request", "get_skill_info: the name must be a str");
	memset(&k, 0, sizeof(k));
	if (store_skill_get(s, name, version, &k, &err) < 0) {
		free(name);
		return rlm__tool_err(err.code == RLM_ENOTFOUND ? "notfound" : "skill", err.msg);
	}
	o = brief(&k);
	json_add_str(o, "entry", k.entry ? k.entry : "");
	json_add(o, "inputs", json_of(k.inputs_json));
	json_add(o, "outputs", json_of(k.outputs_json));
	json_add_str(o, "digest", k.digest);
	a = cJSON_CreateArray();
	if (store_skill_versions(s, name, &v, &n, &err) == 0) {
		for (size_t i = 0; i < n; i++) {
			cJSON *e = cJSON_CreateObject();
			json_add_num(e, "version", v[i].version);
			json_add_str(e, "digest", v[i].digest);
			json_add_num(e, "created_ms", (double)v[i].created_ms);
			json_add(a, NULL, e);
		}
		store_skills_free(v, n);
	}
	json_add(o, "versions", a);
	store_skill_release(&k);
	free(name);
	return rlm__tool_ok(o);
}

static char *op_load(struct store *s, const cJSON *r)
{
	struct store_skill k;
	struct rlm_err err = {0, ""};
	int version;
	char *name = split_name(r, &version);
	cJSON *o;
	if (!name)
		return rlm__tool_err("request", "load_skill: the name must be a str");
	memset(&k, 0, sizeof(k));
	if (store_skill_get(s, name, version, &k, &err) < 0) {
		free(name);
		return rlm__tool_err(err.code == RLM_ENOTFOUND ? "notfound" : "skill", err.msg);
	}
	o = cJSON_CreateObject();
	json_add_str(o, "name", k.name);
	json_add_num(o, "version", k.version);
	json_add_str(o, "digest", k.digest);
	json_add_str(o, "entry", k.entry ? k.entry : "");
	json_add_str(o, "source", k.source ? k.source : "");
	json_add(o, "inputs", json_of(k.inputs_json));
	json_add(o, "outputs", json_of(k.outputs_json));
	store_skill_release(&k);
	free(name);
	return rlm__tool_ok(o);
}

/* The inputs model code declared, as the JSON Schema the store keeps (the
 * shape `rlm skills add` writes too): {"p": {"type", "required", ...}}
 * becomes {"type": "object", "properties": {"p": {"type", ...}},
 * "required": [...]}; a schema already is one. The caller frees it. */
static char *inputs_schema(const cJSON *in)
{
	cJSON *o, *props, *req;
	const cJSON *p;
	char *s;
	if (!in || !cJSON_IsObject(in))
		return xstrdup("{\"type\":\"object\",\"properties\":{}}");
	if (cJSON_IsObject(json_get(in, "properties")))
		return json_print(in);
	o = cJSON_CreateObject();
	props = cJSON_CreateObject();
	req = cJSON_CreateArray();
	json_add_str(o, "type", "object");
	cJSON_ArrayForEach(p, in)
	{
		cJSON *spec = cJSON_IsObject(p) ? cJSON_Duplicate(p, true) : cJSON_CreateObject();
		if (cJSON_IsTrue(json_get(spec, "required")))
			json_add_str(req, NULL, p->string);
		cJSON_DeleteItemFromObjectCaseSensitive(spec, "required");
		json_add(props, p->string, spec);
	}
	json_add(o, "properties", props);
	json_add(o, "required", req);
	s = json_print(o);
	cJSON_Delete(o);
	return s;
}

static char *dup_or(const char *s, const char *fallback)
{
	return xstrdup(s ? s : fallback);
}

static char *op_save(const struct rlm_opts *opt, struct store *s, const cJSON *r)
{
	struct store_skill k;
	struct rlm_err err = {0, ""};
	const cJSON *in = json_get(r, "inputs"), *outs = json_get(r, "outputs");
	const char *src = json_str(r, "source"), *name = json_str(r, "name");
	const char *entry = json_str(r, "entry");
	char msg[sizeof(err.msg) + 16];
	int version = 0, rc;
	bool unchanged = false;
	cJSON *o;
	if (!opt->allow_skill_writes)
		return rlm__tool_err("skill",
				     "save_skill is off: skills are saved only when the operator "
				     "allows it (--allow-skill-writes), so that text in a context "
				     "cannot plant code for later runs");
	if (!name_ok(name))
		return rlm__tool_err("skill", "save_skill: a skill's name is 1 to 64 of "
					      "[A-Za-z0-9_.-], starting with a letter or _");
	if (!src || !*src || strlen(src) > MAX_SOURCE)
		return rlm__tool_err("skill", "save_skill: the source must be a non-empty str of "
					      "at most 1 MiB");
	if (!ident_ok(entry))
		return rlm__tool_err("skill", "save_skill: the entry must be a function name");
	if (in && !cJSON_IsObject(in) && !cJSON_IsNull(in))
		return rlm__tool_err("skill", "save_skill: inputs must be a dict");
	memset(&k, 0, sizeof(k));
	k.name = xstrdup(name);
	k.source = xstrdup(src);
	k.entry = xstrdup(entry);
	k.description = dup_or(json_str(r, "description"), "");
	k.signature = dup_or(json_str(r, "signature"), "");
	k.inputs_json = inputs_schema(in);
	k.outputs_json = outs && !cJSON_IsNull(outs) ? json_print(outs) : NULL;
	rc = store_skill_put(s, &k, &version, &unchanged, &err);
	store_skill_release(&k);
	if (rc < 0) {
		snprintf(msg, sizeof(msg), "save_skill: %s", err.msg);
		return rlm__tool_err("skill", msg);
	}
	memset(&k, 0, sizeof(k));
	o = cJSON_CreateObject();
	json_add_str(o, "name", name);
	json_add_num(o, "version", version);
	if (store_skill_get(s, name, version, &k, &err) == 0) {
		json_add_str(o, "digest", k.digest);
		store_skill_release(&k);
	}
	json_add_bool(o, "unchanged", unchanged);
	return rlm__tool_ok(o);
}

char *rlm__skills_op(struct calls *c, const char *op, const cJSON *r, int iteration)
{
	struct store *s = skills_store(c->o);
	const char *name = json_str(r, "name");
	char *reply;
	cJSON *rep;
	if (!s)
		return rlm__tool_err("skill", "skills are kept in the store, and this run has none "
					      "(it was started with --no-store)");
	if (strcmp(op, "skills") == 0) {
		rlm__tool_count(c, &STAT(c, skill_discovery), 1);
		reply = op_list(s);
	} else if (strcmp(op, "skill_search") == 0) {
		rlm__tool_count(c, &STAT(c, skill_discovery), 1);
		reply = op_search(s, r);
	} else if (strcmp(op, "skill_info") == 0) {
		rlm__tool_count(c, &STAT(c, skill_discovery), 1);
		reply = op_info(s, r);
	} else if (strcmp(op, "skill_load") == 0) {
		reply = op_load(s, r);
		if (strncmp(reply, "{\"ok\":true", 10) == 0)
			rlm__tool_count(c, &STAT(c, skills_loaded), 1);
	} else if (strcmp(op, "skill_save") == 0) {
		reply = op_save(c->o, s, r);
		if (strncmp(reply, "{\"ok\":true", 10) == 0)
			rlm__tool_count(c, &STAT(c, skills_saved), 1);
	} else {
		return rlm__tool_err("request", "a skill request of unknown op");
	}
	/* The record: what was asked and whether it went; a loaded skill's
	 * source is in the store already. */
	rep = json_parse(reply, strlen(reply));
	if (cJSON_IsTrue(json_get(rep, "ok")))
		rlm__tool_record(c, iteration, op, name, NULL,
				 strcmp(op, "skill_load") == 0 ? NULL : json_get(rep, "value"), NULL,
				 NULL, 0);
	else
		rlm__tool_record(c, iteration, op, name, NULL, NULL, json_str(rep, "kind"),
				 json_str(rep, "error"), 0);
	cJSON_Delete(rep);
	return reply;
}
