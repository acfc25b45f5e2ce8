/* SPDX-License-Identifier: MIT */
/* store/store_skills.c -- skills: versioned, immutable Python functions
 * kept in the store (store.h, "skills").
 *
 * DESIGN
 * A version is a row of `skills` that is inserted once and never updated
 * (a trigger refuses an UPDATE); whether a name is retired lives apart, in
 * `skill_names`, so that retiring and reviving touch no version. A put
 * reads the name's latest version and inserts the next one inside the
 * writer's BEGIN IMMEDIATE transaction: SQLite's write lock is taken
 * before the read, so a second process putting the same name waits for
 * the first one's commit and then reads its version, never the same
 * number. JSON members are stored compact, as parsed and printed again, so
 * that the digest does not depend on how a client spaced them.
 */
#include "store_int.h"
#include "../common/json.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SKILL_COLS                                                                                 \
	"s.name, s.version, s.digest, s.entry, s.description, s.signature, s.inputs_json,"         \
	" s.outputs_json, s.source, s.created, coalesce(n.retired, 0)"

/* ---- checks and the digest ---- */

static bool name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (!n || n > STORE_SKILL_NAME_MAX || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
			return false;
	return true;
}

static bool ident_ok(const char *s)
{
	if (!s || !*s || !(isalpha((unsigned char)s[0]) || s[0] == '_') || strlen(s) > 255)
		return false;
	for (const char *p = s + 1; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return false;
	return true;
}

/* text of a JSON member in its compact form into *out (malloc'd), NULL
 * staying NULL unless dflt. want_object: it must be an object. */
static int compact_json(const char *field, const char *text, bool want_object, const char *dflt,
			char **out, struct rlm_err *err)
{
	cJSON *j;
	*out = NULL;
	if (!text) {
		*out = dflt ? xstrdup(dflt) : NULL;
		return 0;
	}
	if (strlen(text) > STORE_SKILL_TEXT_MAX)
		return rlm_err_set(err, RLM_ETOOBIG, "%s: longer than %d bytes", field,
				   STORE_SKILL_TEXT_MAX);
	if (!(j = json_parse(text, strlen(text))))
		return rlm_err_set(err, RLM_EINVAL, "%s: not valid JSON", field);
	if (want_object && !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return rlm_err_set(err, RLM_EINVAL, "%s: want a JSON object", field);
	}
	if (cJSON_IsNull(j)) {
		cJSON_Delete(j);
		return 0; /* outputs null: none */
	}
	*out = json_print(j);
	cJSON_Delete(j);
	return 0;
}

/* A text member: present (NULL is "" when may_be_empty), valid size. */
static int text_ok(const char *field, const char *s, size_t max, bool may_be_empty,
		   struct rlm_err *err)
{
	if (!s || (!*s && !may_be_empty))
		return rlm_err_set(err, RLM_EINVAL, "%s: missing", field);
	if (strlen(s) > max)
		return rlm_err_set(err, RLM_ETOOBIG, "%s: longer than %zu bytes", field, max);
	return 0;
}

/* Check in and make the compact JSON of its inputs and outputs. */
static int skill_check(const struct store_skill *in, char **inputs, char **outputs,
		       struct rlm_err *err)
{
	int rc;
	*inputs = *outputs = NULL;
	if (!name_ok(in->name))
		return rlm_err_set(err, RLM_EINVAL,
				   "bad skill name '%.80s': want a letter or _, then up to 63 "
				   "letters, digits, _ . or -",
				   in->name ? in->name : "");
	if (!ident_ok(in->entry))
		return rlm_err_set(err, RLM_EINVAL,
				   "skill '%s': bad entry '%.80s': want a Python identifier",
				   in->name, in->entry ? in->entry : "");
	if ((rc = text_ok("source", in->source, STORE_SKILL_SOURCE_MAX, false, err)) ||
	    (rc = text_ok("description", in->description, STORE_SKILL_TEXT_MAX, true, err)) ||
	    (rc = text_ok("signature", in->signature, STORE_SKILL_TEXT_MAX, true, err)))
		goto fail;
	if ((rc = compact_json("inputs", in->inputs_json, true, "{}", inputs, err)) ||
	    (rc = compact_json("outputs", in->outputs_json, false, NULL, outputs, err)))
		goto fail;
	return 0;
fail:
	rlm_err_prefix(err, "skill '%s'", in->name);
	free(*inputs);
	free(*outputs);
	*inputs = *outputs = NULL;
	return rc;
}

static void kb_s(struct store_kb *kb, const char *s)
{
	store_kb_str(kb, s ? s : "", s ? strlen(s) : 0);
}

static void digest_of(const struct store_skill *in, const char *inputs, const char *outputs,
		      char digest[65])
{
	struct store_kb kb;
	struct store_key k;
	store_kb_init(&kb, "skill/1");
	kb_s(&kb, in->name);
	kb_s(&kb, in->source);
	kb_s(&kb, in->entry);
	kb_s(&kb, in->description);
	kb_s(&kb, inputs);
	store_kb_str(&kb, outputs, outputs ? strlen(outputs) : 0); /* NULL: none */
	kb_s(&kb, in->signature);
	store_kb_final(&kb, &k);
	store_key_hex(&k, digest);
}

int store_skill_digest(const struct store_skill *in, char digest[65], struct rlm_err *err)
{
	char *inputs, *outputs;
	int rc = skill_check(in, &inputs, &outputs, err);
	if (rc)
		return rc;
	digest_of(in, inputs, outputs, digest);
	free(inputs);
	free(outputs);
	return 0;
}

int store_skill_ref(const char *ref, char *name, size_t cap, int *version, struct rlm_err *err)
{
	const char *at = ref ? strrchr(ref, '@') : NULL;
	size_t n = at ? (size_t)(at - ref) : ref ? strlen(ref) : 0;
	*version = 0;
	if (at) {
		char *end;
		long v = strtol(at + 1, &end, 10);
		if (!isdigit((unsigned char)at[1]) || *end || v < 1 || v > 1000000000)
			return rlm_err_set(err, RLM_EINVAL,
					   "bad skill version in '%.80s': want NAME@N, N >= 1",
					   ref);
		*version = (int)v;
	}
	if (n >= cap || n > STORE_SKILL_NAME_MAX) {
		return rlm_err_set(err, RLM_EINVAL, "bad skill name '%.80s': longer than %d bytes",
				   ref, STORE_SKILL_NAME_MAX);
	}
	memcpy(name, ref, n);
	name[n] = '\0';
	if (!name_ok(name))
		return rlm_err_set(err, RLM_EINVAL,
				   "bad skill name '%.80s': want a letter or _, then up to 63 "
				   "letters, digits, _ . or -",
				   name);
	return 0;
}

/* ---- put and retire ---- */

/* The latest version of name and its digest, on the writer: 0 when none. */
static int latest_locked(struct store *s, const char *name, int *version, char digest[65],
			 struct rlm_err *err)
{
	sqlite3_stmt *st = store__stmt(s, s->w, ST_SKILL_LATEST,
				       "SELECT version, digest FROM skills WHERE name = ?1"
				       " ORDER BY version DESC LIMIT 1",
				       err);
	int e, rc = 0;
	*version = 0;
	digest[0] = '\0';
	if (!st)
		return RLM_ESTORE;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if ((e = sqlite3_step(st)) == SQLITE_ROW) {
		const char *d = (const char *)sqlite3_column_text(st, 1);
		*version = sqlite3_column_int(st, 0);
		snprintf(digest, 65, "%s", d ? d : "");
	} else if (e != SQLITE_DONE) {
		rc = store__fail(s, s->w->db, e, "reading a skill", err);
	}
	store__done(st);
	return rc;
}

/* Run a statement with name bound as ?1 (and retired_at ?2), no rows. */
static int name_stmt_locked(struct store *s, enum store_stmt id, const char *sql, const char *name,
			    const char *doing, int *changes, struct rlm_err *err)
{
	sqlite3_stmt *st = store__stmt(s, s->w, id, sql, err);
	int e, rc = 0;
	if (!st)
		return RLM_ESTORE;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (sqlite3_bind_parameter_count(st) >= 2)
		sqlite3_bind_int64(st, 2, time_wall_ms());
	if ((e = sqlite3_step(st)) != SQLITE_DONE)
		rc = store__fail(s, s->w->db, e, doing, err);
	else if (changes)
		*changes = sqlite3_changes(s->w->db);
	store__done(st);
	return rc;
}

static int insert_locked(struct store *s, const struct store_skill *in, int version,
			 const char *digest, const char *inputs, const char *outputs,
			 struct rlm_err *err)
{
	sqlite3_stmt *st =
	    store__stmt(s, s->w, ST_SKILL_PUT,
			"INSERT INTO skills(name, version, digest, entry, description,"
			" signature, inputs_json, outputs_json, source, created)"
			" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
			err);
	int e, rc = 0;
	if (!st)
		return RLM_ESTORE;
	sqlite3_bind_text(st, 1, in->name, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, version);
	sqlite3_bind_text(st, 3, digest, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, in->entry, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, in->description ? in->description : "", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, in->signature ? in->signature : "", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, inputs, -1, SQLITE_STATIC);
	store__bind_text(st, 8, outputs, outputs ? strlen(outputs) : 0);
	sqlite3_bind_text(st, 9, in->source, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 10, in->created_ms > 0 ? in->created_ms : time_wall_ms());
	if ((e = sqlite3_step(st)) != SQLITE_DONE)
		rc = store__fail(s, s->w->db, e, "storing a skill", err);
	store__done(st);
	return rc;
}

int store_skill_put(struct store *s, const struct store_skill *in, int *version, bool *unchanged,
		    struct rlm_err *err)
{
	char *inputs, *outputs, digest[65], latest_digest[65];
	int latest = 0, rc;
	bool same;
	if ((rc = skill_check(in, &inputs, &outputs, err)))
		return rc;
	digest_of(in, inputs, outputs, digest);
	if ((rc = store__wbegin(s, err)))
		goto out;
	rc = latest_locked(s, in->name, &latest, latest_digest, err);
	same = !rc && latest > 0 && strcmp(latest_digest, digest) == 0;
	if (!rc && !same)
		rc = insert_locked(s, in, latest + 1, digest, inputs, outputs, err);
	if (!rc)
		rc = name_stmt_locked(
		    s, ST_SKILL_NAME,
		    "INSERT INTO skill_names(name, retired) VALUES(?1, 0)"
		    " ON CONFLICT(name) DO UPDATE SET retired = 0, retired_at = NULL",
		    in->name, "storing a skill", NULL, err);
	if ((rc = store__wend(s, rc, err)))
		goto out;
	if (version)
		*version = same ? latest : latest + 1;
	if (unchanged)
		*unchanged = same;
out:
	free(inputs);
	free(outputs);
	return rc;
}

int store_skill_retire(struct store *s, const char *name, struct rlm_err *err)
{
	int rc, latest = 0, changes = 0;
	char d[65];
	if (!name_ok(name))
		return rlm_err_set(err, RLM_EINVAL, "bad skill name '%.80s'", name ? name : "");
	if ((rc = store__wbegin(s, err)))
		return rc;
	rc = latest_locked(s, name, &latest, d, err);
	if (!rc && !latest)
		rc = rlm_err_set(err, RLM_ENOTFOUND, "no skill '%s' in the store '%s'", name,
				 s->path);
	if (!rc)
		rc = name_stmt_locked(s, ST_SKILL_RETIRE,
				      "INSERT INTO skill_names(name, retired, retired_at)"
				      " VALUES(?1, 1, ?2) ON CONFLICT(name) DO UPDATE SET"
				      " retired = 1, retired_at = coalesce(retired_at, ?2)",
				      name, "retiring a skill", &changes, err);
	return store__wend(s, rc, err);
}

/* ---- reads ---- */

/* A row of SKILL_COLS (and the count of versions at column 11, when
 * there is one) into *k. */
static void row_skill(sqlite3_stmt *st, struct store_skill *k)
{
	const char *d = (const char *)sqlite3_column_text(st, 2);
	memset(k, 0, sizeof(*k));
	k->name = store__col_str(st, 0);
	k->version = sqlite3_column_int(st, 1);
	snprintf(k->digest, sizeof(k->digest), "%s", d ? d : "");
	k->entry = store__col_str(st, 3);
	k->description = store__col_str(st, 4);
	k->signature = store__col_str(st, 5);
	k->inputs_json = store__col_str(st, 6);
	k->outputs_json = store__col_str(st, 7);
	k->source = store__col_str(st, 8);
	k->created_ms = sqlite3_column_int64(st, 9);
	k->retired = sqlite3_column_int(st, 10) != 0;
	if (sqlite3_column_count(st) > 11)
		k->versions = sqlite3_column_int(st, 11);
}

/* Every row of st into a fresh array. */
static int rows(struct store *s, struct store_conn *c, sqlite3_stmt *st, const char *doing,
		struct store_skill **out, size_t *n, struct rlm_err *err)
{
	struct store_skill *v = NULL;
	size_t cap = 0, k = 0;
	int e;
	while ((e = sqlite3_step(st)) == SQLITE_ROW) {
		if (k == cap) {
			cap = cap ? 2 * cap : 8;
			v = xrealloc(v, cap * sizeof(*v));
		}
		row_skill(st, &v[k++]);
	}
	if (e != SQLITE_DONE) {
		store_skills_free(v, k);
		return store__fail(s, c->db, e, doing, err);
	}
	*out = v;
	*n = k;
	return 0;
}

/* Every version of name, oldest first; with_source false leaves each
 * source NULL (what show lists: a name may have many large versions). */
static int versions(struct store *s, const char *name, bool with_source, struct store_skill **out,
		    size_t *n, struct rlm_err *err)
{
	struct store_conn *c;
	sqlite3_stmt *st;
	int rc;
	*out = NULL;
	*n = 0;
	if (!name_ok(name))
		return rlm_err_set(err, RLM_EINVAL, "bad skill name '%.80s'", name ? name : "");
	if (!(c = store__rget(s, err)))
		return RLM_ESTORE;
	st =
	    with_source
		? store__stmt(s, c, ST_SKILL_VERSIONS,
			      "SELECT " SKILL_COLS ", (SELECT count(*) FROM skills WHERE name = ?1)"
			      " FROM skills s LEFT JOIN skill_names n ON n.name = s.name"
			      " WHERE s.name = ?1 ORDER BY s.version",
			      err)
		: store__stmt(s, c, ST_SKILL_VMETA,
			      "SELECT s.name, s.version, s.digest, s.entry, s.description,"
			      " s.signature, s.inputs_json, s.outputs_json, NULL, s.created,"
			      " coalesce(n.retired, 0),"
			      " (SELECT count(*) FROM skills WHERE name = ?1)"
			      " FROM skills s LEFT JOIN skill_names n ON n.name = s.name"
			      " WHERE s.name = ?1 ORDER BY s.version",
			      err);
	if (!st) {
		store__rput(s, c);
		return RLM_ESTORE;
	}
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	rc = rows(s, c, st, "reading a skill", out, n, err);
	store__done(st);
	store__rput(s, c);
	if (!rc && !*n)
		rc = rlm_err_set(err, RLM_ENOTFOUND, "no skill '%s' in the store '%s'", name,
				 s->path);
	return rc;
}

int store_skill_versions(struct store *s, const char *name, struct store_skill **out, size_t *n,
			 struct rlm_err *err)
{
	return versions(s, name, true, out, n, err);
}

int store_skill_list(struct store *s, bool retired_too, struct store_skill **out, size_t *n,
		     struct rlm_err *err)
{
	struct store_conn *c;
	sqlite3_stmt *st;
	int rc;
	*out = NULL;
	*n = 0;
	if (!(c = store__rget(s, err)))
		return RLM_ESTORE;
	st = store__stmt(s, c, ST_SKILL_LIST,
			 "SELECT " SKILL_COLS ", m.cnt FROM skills s"
			 " JOIN (SELECT name, max(version) AS v, count(*) AS cnt FROM skills"
			 " GROUP BY name) m ON m.name = s.name AND m.v = s.version"
			 " LEFT JOIN skill_names n ON n.name = s.name"
			 " WHERE ?1 OR NOT coalesce(n.retired, 0) ORDER BY s.name",
			 err);
	if (!st) {
		store__rput(s, c);
		return RLM_ESTORE;
	}
	sqlite3_bind_int(st, 1, retired_too);
	rc = rows(s, c, st, "listing skills", out, n, err);
	store__done(st);
	store__rput(s, c);
	return rc;
}

/* Why name@version (0: the latest) was not found, on reader c. */
static int not_found(struct store *s, struct store_conn *c, const char *name, int version,
		     struct rlm_err *err)
{
	sqlite3_stmt *st = store__stmt(s, c, ST_SKILL_MAXV,
				       "SELECT max(version) FROM skills WHERE name = ?1", err);
	int e, latest = 0;
	if (!st)
		return RLM_ESTORE;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	e = sqlite3_step(st);
	if (e == SQLITE_ROW)
		latest = sqlite3_column_int(st, 0);
	store__done(st);
	if (e != SQLITE_ROW)
		return store__fail(s, c->db, e, "reading a skill", err);
	if (!latest || !version)
		return rlm_err_set(err, RLM_ENOTFOUND, "no skill '%s' in the store '%s'", name,
				   s->path);
	return rlm_err_set(err, RLM_ENOTFOUND, "skill '%s' has no version %d (the latest is %d)",
			   name, version, latest);
}

int store_skill_get(struct store *s, const char *name, int version, struct store_skill *out,
		    struct rlm_err *err)
{
	struct store_conn *c;
	sqlite3_stmt *st;
	int rc, e;
	memset(out, 0, sizeof(*out));
	if (!name_ok(name))
		return rlm_err_set(err, RLM_EINVAL, "bad skill name '%.80s'", name ? name : "");
	if (version < 0)
		return rlm_err_set(err, RLM_EINVAL, "bad skill version %d", version);
	if (!(c = store__rget(s, err)))
		return RLM_ESTORE;
	/* One statement: the row, the count of versions and the retired flag
	 * from one snapshot. */
	st = store__stmt(s, c, ST_SKILL_GET,
			 "SELECT " SKILL_COLS ", m.cnt FROM skills s"
			 " JOIN (SELECT name, count(*) AS cnt, max(version) AS v FROM skills"
			 " WHERE name = ?1 GROUP BY name) m ON m.name = s.name"
			 " LEFT JOIN skill_names n ON n.name = s.name"
			 " WHERE s.name = ?1 AND s.version = CASE WHEN ?2 > 0 THEN ?2 ELSE m.v END",
			 err);
	if (!st) {
		store__rput(s, c);
		return RLM_ESTORE;
	}
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, version);
	e = sqlite3_step(st);
	if (e == SQLITE_ROW) {
		row_skill(st, out);
		rc = 0;
	} else if (e == SQLITE_DONE) {
		rc = 1;
	} else {
		rc = store__fail(s, c->db, e, "reading a skill", err);
	}
	store__done(st);
	if (rc == 1)
		rc = not_found(s, c, name, version, err);
	store__rput(s, c);
	if (!rc && !version && out->retired) {
		rc = rlm_err_set(err, RLM_ENOTFOUND,
				 "skill '%s' was retired (its versions stay: ask for one as "
				 "%s@1..%s@%d)",
				 name, name, name, out->version);
		store_skill_release(out);
	}
	return rc;
}

void store_skill_release(struct store_skill *k)
{
	if (!k)
		return;
	free(k->name);
	free(k->source);
	free(k->entry);
	free(k->description);
	free(k->signature);
	free(k->inputs_json);
	free(k->outputs_json);
	memset(k, 0, sizeof(*k));
}

void store_skills_free(struct store_skill *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store_skill_release(&v[i]);
	free(v);
}

/* ---- JSON ---- */

/* text parsed, or null when NULL or unparsable (a stored row is valid). */
static cJSON *json_or_null(const char *text)
{
	cJSON *j = text ? json_parse(text, strlen(text)) : NULL;
	return j ? j : cJSON_CreateNull();
}

cJSON *store_skill_json(const struct store_skill *k, bool source)
{
	cJSON *o = cJSON_CreateObject();
	json_add_str(o, "name", k->name ? k->name : "");
	json_add_num(o, "version", k->version);
	json_add_str(o, "digest", k->digest);
	json_add_str(o, "entry", k->entry ? k->entry : "");
	json_add_str(o, "description", k->description ? k->description : "");
	json_add_str(o, "signature", k->signature ? k->signature : "");
	json_add(o, "inputs", k->inputs_json ? json_or_null(k->inputs_json) : cJSON_CreateObject());
	json_add(o, "outputs", json_or_null(k->outputs_json));
	json_add_num(o, "created_ms", (double)k->created_ms);
	json_add_bool(o, "retired", k->retired);
	if (k->versions > 0)
		json_add_num(o, "versions", k->versions);
	if (source)
		json_add_str(o, "source", k->source ? k->source : "");
	return o;
}

cJSON *store_skill_show(struct store *s, const char *ref, struct rlm_err *err)
{
	struct store_skill *v = NULL, k;
	size_t n = 0;
	char name[STORE_SKILL_NAME_MAX + 1];
	int version;
	cJSON *o, *arr;
	if (store_skill_ref(ref, name, sizeof(name), &version, err) ||
	    store_skill_get(s, name, version, &k, err))
		return NULL;
	if (versions(s, name, false, &v, &n, err)) {
		store_skill_release(&k);
		return NULL;
	}
	k.versions = 0; /* the list below instead of the count */
	o = store_skill_json(&k, true);
	arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *e = cJSON_CreateObject();
		json_add_num(e, "version", v[i].version);
		json_add_str(e, "digest", v[i].digest);
		json_add_num(e, "created_ms", (double)v[i].created_ms);
		json_add(arr, NULL, e);
	}
	json_add(o, "versions", arr);
	json_add_num(o, "latest", n ? v[n - 1].version : k.version);
	store_skills_free(v, n);
	store_skill_release(&k);
	return o;
}

/* j[key] as a fresh string: a string member, or (json) any JSON value
 * printed; absent: NULL. */
static int member(const cJSON *j, const char *key, bool json, bool required, char **out,
		  struct rlm_err *err)
{
	const cJSON *m = json_get(j, key);
	*out = NULL;
	if (!m || (json && cJSON_IsNull(m))) {
		if (required)
			return rlm_err_set(err, RLM_EINVAL, "\"%s\": missing", key);
		return 0;
	}
	if (json) {
		*out = json_print(m);
		return 0;
	}
	if (!cJSON_IsString(m))
		return rlm_err_set(err, RLM_EINVAL, "\"%s\": want a string", key);
	*out = xstrdup(m->valuestring);
	return 0;
}

int store_skill_from_json(const cJSON *j, struct store_skill *out, struct rlm_err *err)
{
	const cJSON *c;
	int rc;
	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(j))
		return rlm_err_set(err, RLM_EINVAL, "want a JSON object");
	if ((rc = member(j, "name", false, true, &out->name, err)) ||
	    (rc = member(j, "entry", false, true, &out->entry, err)) ||
	    (rc = member(j, "source", false, true, &out->source, err)) ||
	    (rc = member(j, "description", false, false, &out->description, err)) ||
	    (rc = member(j, "signature", false, false, &out->signature, err)) ||
	    (rc = member(j, "inputs", true, false, &out->inputs_json, err)) ||
	    (rc = member(j, "outputs", true, false, &out->outputs_json, err)))
		goto fail;
	if (!out->description)
		out->description = xstrdup("");
	if (!out->signature)
		out->signature = xstrdup("");
	c = json_get(j, "created_ms");
	if (c && !cJSON_IsNumber(c)) {
		rc = rlm_err_set(err, RLM_EINVAL, "\"created_ms\": want a number");
		goto fail;
	}
	out->created_ms = c && c->valuedouble > 0 ? (int64_t)c->valuedouble : 0;
	out->retired = cJSON_IsTrue(json_get(j, "retired"));
	return 0;
fail:
	store_skill_release(out);
	return rc;
}
