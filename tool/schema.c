/* SPDX-License-Identifier: MIT */
/* tool/schema.c -- checking a tool call's arguments against the tool's
 * JSON Schema before the server sees them, and describing a schema's
 * parameters for model code.
 *
 * DESIGN: the check is a walk over the schema and the value together that
 * stops at the first problem and says it for a model that must fix its
 * call: the parameter by its path ("items[2].name"), what the schema
 * expects (its type, bounds, allowed values and description) and what was
 * given. Both the schema (a server's) and the arguments (model code's) come
 * from outside, so the walk is bounded in depth (64 levels of
 * either) and in work (anyOf inside anyOf could otherwise explode). An
 * object that declares its properties refuses any other key unless its
 * additionalProperties allows them: JSON Schema's default would let a
 * misspelt optional parameter through unseen, and servers built on zod
 * drop such keys silently, so a typo would change what the call does
 * without a word. */
#include "tool_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/json.h"

#define SCHEMA_DEPTH 64		 /* levels of schema or arguments */
#define SCHEMA_WORK  1000000	 /* schema nodes visited in one check */
#define MSG_MAX	     (16u << 10) /* bytes of a message before it is cut to cap */
#define DESC_MAX     120	 /* bytes of a description quoted in a message */
#define LIST_MAX     20		 /* parameters listed in a message */
#define ENUM_MAX     10		 /* enum values listed in a type */
#define VALUE_MAX    40		 /* bytes of a value quoted in a message */

struct walk {
	struct buf msg; /* the first problem */
	long work;	/* nodes visited */
	bool failed;
};

/* ---- describing schemas and values ---- */

static const char *type_article(const char *t)
{
	if (strcmp(t, "object") == 0 || strcmp(t, "array") == 0 || strcmp(t, "integer") == 0)
		return "an ";
	if (strcmp(t, "null") == 0)
		return "";
	return "a ";
}

/* "a string", "an array", "null", ... */
static const char *value_kind(const cJSON *v)
{
	if (cJSON_IsString(v))
		return "a string";
	if (cJSON_IsNumber(v))
		return "a number";
	if (cJSON_IsBool(v))
		return "a boolean";
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsArray(v))
		return "an array";
	if (cJSON_IsObject(v))
		return "an object";
	return "an invalid value";
}

/* Append s cut to max bytes at a character's end, with "..." when cut. */
static void put_cut(struct buf *b, const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n <= max) {
		buf_append(b, s, n);
		return;
	}
	buf_append(b, s, text_utf8_floor(s, max));
	buf_puts(b, "...");
}

/* A JSON value as a message quotes it: strings in single quotes, the rest
 * as compact JSON, cut. */
static void put_value(struct buf *b, const cJSON *v)
{
	char *s;
	if (cJSON_IsString(v)) {
		buf_putc(b, '\'');
		put_cut(b, v->valuestring, VALUE_MAX);
		buf_putc(b, '\'');
		return;
	}
	s = cJSON_PrintUnformatted(v);
	if (s) {
		put_cut(b, s, VALUE_MAX);
		cJSON_free(s);
	}
}

static bool is_schema(const cJSON *s)
{
	return cJSON_IsObject(s) || cJSON_IsBool(s);
}

/* A number member of schema (NULL when absent or not a number). */
static const cJSON *num_member(const cJSON *schema, const char *key)
{
	const cJSON *v = json_get(schema, key);
	return cJSON_IsNumber(v) ? v : NULL;
}

static void put_num(struct buf *b, double v)
{
	if (v == floor(v) && fabs(v) < 1e15)
		buf_printf(b, "%.0f", v);
	else
		buf_printf(b, "%.17g", v);
}

static void describe(struct buf *b, const cJSON *schema, int depth);

/* Append what schema expects (describe), at most about 1000 bytes of it. */
static void put_type(struct buf *b, const cJSON *schema)
{
	struct buf t = BUF_INIT;
	buf_init(&t, 1200);
	describe(&t, schema, 0);
	buf_append(b, t.p, t.len);
	buf_release(&t);
}

/* The constraints of schema besides its type, " (one of 'a', 'b'; at
 * least 1)", or nothing. */
static void describe_constraints(struct buf *b, const cJSON *schema)
{
	const cJSON *e = json_get(schema, "enum"), *c = json_get(schema, "const"), *v;
	const char *fmt = json_str(schema, "format");
	size_t start = b->len;
	int n = 0;
#define SEP() buf_puts(b, b->len == start ? " (" : "; ")
	if (cJSON_IsArray(e)) {
		SEP();
		buf_puts(b, "one of ");
		cJSON_ArrayForEach(v, e)
		{
			if (n == ENUM_MAX) {
				buf_printf(b, ", ... (%d in all)", cJSON_GetArraySize(e));
				break;
			}
			if (n++)
				buf_puts(b, ", ");
			put_value(b, v);
		}
	}
	if (c) {
		SEP();
		buf_puts(b, "exactly ");
		put_value(b, c);
	}
	if ((v = num_member(schema, "minimum"))) {
		SEP();
		buf_puts(b, cJSON_IsTrue(json_get(schema, "exclusiveMinimum")) ? "> " : ">= ");
		put_num(b, v->valuedouble);
	}
	if ((v = num_member(schema, "exclusiveMinimum"))) {
		SEP();
		buf_puts(b, "> ");
		put_num(b, v->valuedouble);
	}
	if ((v = num_member(schema, "maximum"))) {
		SEP();
		buf_puts(b, cJSON_IsTrue(json_get(schema, "exclusiveMaximum")) ? "< " : "<= ");
		put_num(b, v->valuedouble);
	}
	if ((v = num_member(schema, "exclusiveMaximum"))) {
		SEP();
		buf_puts(b, "< ");
		put_num(b, v->valuedouble);
	}
	if ((v = num_member(schema, "minLength"))) {
		SEP();
		buf_printf(b, "at least %.0f characters", v->valuedouble);
	}
	if ((v = num_member(schema, "maxLength"))) {
		SEP();
		buf_printf(b, "at most %.0f characters", v->valuedouble);
	}
	if ((v = num_member(schema, "minItems"))) {
		SEP();
		buf_printf(b, "at least %.0f items", v->valuedouble);
	}
	if ((v = num_member(schema, "maxItems"))) {
		SEP();
		buf_printf(b, "at most %.0f items", v->valuedouble);
	}
	if (fmt) {
		SEP();
		buf_puts(b, "format ");
		put_cut(b, fmt, 40);
	}
#undef SEP
	if (b->len != start)
		buf_putc(b, ')');
}

/* The alternatives of a list of schemas, "string or null". */
static void describe_any(struct buf *b, const cJSON *list, int depth)
{
	const cJSON *s;
	int n = 0;
	cJSON_ArrayForEach(s, list)
	{
		if (n == ENUM_MAX) {
			buf_puts(b, " or ...");
			break;
		}
		if (n++)
			buf_puts(b, " or ");
		describe(b, s, depth + 1);
	}
}

/* What schema expects, for people: "number", "array of string", "string
 * (one of 'a', 'b')", "integer or null". */
static void describe(struct buf *b, const cJSON *schema, int depth)
{
	const cJSON *type = json_get(schema, "type"), *t, *any;
	int n = 0;
	if (depth > 8 || b->len > 1000) {
		buf_puts(b, "...");
		return;
	}
	if (cJSON_IsBool(schema)) {
		buf_puts(b, cJSON_IsTrue(schema) ? "any" : "nothing");
		return;
	}
	if (!cJSON_IsObject(schema)) {
		buf_puts(b, "any");
		return;
	}
	any = json_get(schema, "anyOf");
	if (!cJSON_IsArray(any))
		any = json_get(schema, "oneOf");
	if (cJSON_IsString(type)) {
		buf_puts(b, type->valuestring);
		n = 1;
	} else if (cJSON_IsArray(type)) {
		cJSON_ArrayForEach(t, type)
		{
			if (!cJSON_IsString(t))
				continue;
			if (n++)
				buf_puts(b, " or ");
			buf_puts(b, t->valuestring);
		}
	}
	if (!n) {
		if (cJSON_IsArray(any) && cJSON_GetArraySize(any) > 0) {
			describe_any(b, any, depth);
			n = 1;
		} else if (json_get(schema, "properties")) {
			buf_puts(b, "object");
		} else if (json_get(schema, "items")) {
			buf_puts(b, "array");
		} else if (!json_get(schema, "enum") && !json_get(schema, "const")) {
			buf_puts(b, "any");
		} else {
			buf_puts(b, "value");
		}
	}
	if (cJSON_IsTrue(json_get(schema, "nullable")))
		buf_puts(b, " or null");
	if (is_schema(json_get(schema, "items")) &&
	    ((cJSON_IsString(type) && strcmp(type->valuestring, "array") == 0) || !n)) {
		buf_puts(b, " of ");
		describe(b, json_get(schema, "items"), depth + 1);
	}
	describe_constraints(b, schema);
}

/* ---- the path of a parameter ---- */

/* path + ".key" (or "key" at the top), in a fresh buffer; a long key is
 * cut, and a path past 1000 bytes grows no more. */
static char *path_key(const char *path, const char *key)
{
	int n = (int)text_utf8_floor(key, RLM_MIN(strlen(key), (size_t)100));
	if (strlen(path) > 1000)
		return xstrdup(path);
	return *path ? xasprintf("%s.%.*s", path, n, key) : xasprintf("%.*s", n, key);
}

static char *path_index(const char *path, int i)
{
	if (strlen(path) > 1000)
		return xstrdup(path);
	return xasprintf("%s[%d]", path, i);
}

/* "parameter 'a'" or, at the top, "the arguments". */
static void put_subject(struct buf *b, const char *path)
{
	if (*path) {
		buf_puts(b, "parameter '");
		put_cut(b, path, 200);
		buf_putc(b, '\'');
	} else {
		buf_puts(b, "the arguments");
	}
}

static int fail(struct walk *w)
{
	w->failed = true;
	return -1;
}

/* ---- suggestions ---- */

size_t tool__edit_distance(const char *a, const char *b)
{
	size_t na = RLM_MIN(strlen(a), 128), nb = RLM_MIN(strlen(b), 128), row[129];
	for (size_t j = 0; j <= nb; j++)
		row[j] = j;
	for (size_t i = 1; i <= na; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= nb; j++) {
			size_t up = row[j],
			       cost = text_to_lower(a[i - 1]) != text_to_lower(b[j - 1]);
			row[j] = RLM_MIN(RLM_MIN(row[j] + 1, row[j - 1] + 1), diag + cost);
			diag = up;
		}
	}
	return row[nb];
}

/* The declared property closest to key, when close enough to be a
 * plausible slip: at most half its length away (at least 1), or one
 * containing the other. NULL when none is. */
static const char *closest(const cJSON *props, const char *key)
{
	const cJSON *p;
	const char *best = NULL;
	size_t best_d = SIZE_MAX, klen = strlen(key);
	cJSON_ArrayForEach(p, props)
	{
		size_t d = tool__edit_distance(key, p->string), plen = strlen(p->string),
		       limit = RLM_MAX((size_t)1, RLM_MAX(klen, plen) / 2);
		if (d > limit &&
		    !(plen >= 3 && klen >= 3 && (strstr(key, p->string) || strstr(p->string, key))))
			continue;
		if (d < best_d) {
			best_d = d;
			best = p->string;
		}
	}
	return best;
}

/* "a (number, required), b (string)". */
static void put_params(struct buf *b, const cJSON *schema)
{
	const cJSON *props = json_get(schema, "properties"), *p;
	const cJSON *req = json_get(schema, "required");
	int n = 0;
	cJSON_ArrayForEach(p, props)
	{
		const cJSON *r;
		bool required = false;
		if (n == LIST_MAX) {
			buf_printf(b, ", ... (%d in all)", cJSON_GetArraySize(props));
			break;
		}
		cJSON_ArrayForEach(r, (cJSON_IsArray(req) ? req : NULL))
		{
			required |= cJSON_IsString(r) && strcmp(r->valuestring, p->string) == 0;
		}
		if (n++)
			buf_puts(b, ", ");
		put_cut(b, p->string, 64);
		buf_puts(b, " (");
		put_type(b, p);
		if (required)
			buf_puts(b, ", required");
		buf_putc(b, ')');
	}
}

/* ---- the check ---- */

static int check(struct walk *w, const cJSON *schema, const cJSON *v, const char *path, int depth);

/* Does v's JSON type satisfy the type name t? */
static bool type_holds(const char *t, const cJSON *v)
{
	if (strcmp(t, "string") == 0)
		return cJSON_IsString(v);
	if (strcmp(t, "number") == 0)
		return cJSON_IsNumber(v);
	if (strcmp(t, "integer") == 0)
		return cJSON_IsNumber(v) && isfinite(v->valuedouble) &&
		       v->valuedouble == floor(v->valuedouble);
	if (strcmp(t, "boolean") == 0)
		return cJSON_IsBool(v);
	if (strcmp(t, "null") == 0)
		return cJSON_IsNull(v);
	if (strcmp(t, "array") == 0)
		return cJSON_IsArray(v);
	if (strcmp(t, "object") == 0)
		return cJSON_IsObject(v);
	return true; /* a type this check does not know: not checked */
}

/* Does the value satisfy the "type" of schema (and its "nullable")? */
static bool types_hold(const cJSON *schema, const cJSON *v)
{
	const cJSON *type = json_get(schema, "type"), *t;
	bool any = false;
	if (cJSON_IsNull(v) && cJSON_IsTrue(json_get(schema, "nullable")))
		return true;
	if (cJSON_IsString(type))
		return type_holds(type->valuestring, v);
	if (!cJSON_IsArray(type))
		return true;
	cJSON_ArrayForEach(t, type)
	{
		if (!cJSON_IsString(t))
			continue;
		if (type_holds(t->valuestring, v))
			return true;
		any = true;
	}
	return !any;
}

/* "parameter 'a' must be a number, not a string (First number)". */
static int fail_type(struct walk *w, const cJSON *schema, const cJSON *v, const char *path)
{
	const cJSON *type = json_get(schema, "type");
	const char *desc = json_str(schema, "description");
	put_subject(&w->msg, path);
	buf_puts(&w->msg, " must be ");
	if (cJSON_IsString(type) && !json_get(schema, "nullable"))
		buf_puts(&w->msg, type_article(type->valuestring));
	put_type(&w->msg, schema);
	if (cJSON_IsNumber(v) && cJSON_IsString(type) &&
	    strcmp(type->valuestring, "integer") == 0) {
		buf_puts(&w->msg, ", not ");
		put_value(&w->msg, v);
		buf_puts(&w->msg, " (a whole number)");
	} else {
		buf_printf(&w->msg, ", not %s", value_kind(v));
		if (!cJSON_IsObject(v) && !cJSON_IsArray(v) && !cJSON_IsNull(v)) {
			buf_putc(&w->msg, ' ');
			put_value(&w->msg, v);
		}
	}
	if (desc && *desc) {
		buf_puts(&w->msg, ": ");
		put_cut(&w->msg, desc, DESC_MAX);
	}
	return fail(w);
}

/* "parameter 'n' must be <= 10, not 11". */
static int fail_bound(struct walk *w, const cJSON *schema, const cJSON *v, const char *path,
		      const char *what)
{
	put_subject(&w->msg, path);
	buf_printf(&w->msg, " must be %s", what);
	buf_puts(&w->msg, ", not ");
	put_value(&w->msg, v);
	(void)schema;
	return fail(w);
}

static int check_number(struct walk *w, const cJSON *schema, const cJSON *v, const char *path)
{
	const cJSON *b;
	double x = v->valuedouble;
	char what[96];
	struct buf tmp = BUF_INIT;
	int rc = 0;
	if ((b = num_member(schema, "minimum"))) {
		bool excl = cJSON_IsTrue(json_get(schema, "exclusiveMinimum"));
		if (excl ? !(x > b->valuedouble) : !(x >= b->valuedouble)) {
			buf_puts(&tmp, excl ? "> " : ">= ");
			put_num(&tmp, b->valuedouble);
			goto bad;
		}
	}
	if ((b = num_member(schema, "exclusiveMinimum")) && !(x > b->valuedouble)) {
		buf_puts(&tmp, "> ");
		put_num(&tmp, b->valuedouble);
		goto bad;
	}
	if ((b = num_member(schema, "maximum"))) {
		bool excl = cJSON_IsTrue(json_get(schema, "exclusiveMaximum"));
		if (excl ? !(x < b->valuedouble) : !(x <= b->valuedouble)) {
			buf_puts(&tmp, excl ? "< " : "<= ");
			put_num(&tmp, b->valuedouble);
			goto bad;
		}
	}
	if ((b = num_member(schema, "exclusiveMaximum")) && !(x < b->valuedouble)) {
		buf_puts(&tmp, "< ");
		put_num(&tmp, b->valuedouble);
		goto bad;
	}
	buf_release(&tmp);
	return 0;
bad:
	snprintf(what, sizeof(what), "%s", tmp.p);
	buf_release(&tmp);
	rc = fail_bound(w, schema, v, path, what);
	return rc;
}

static int check_string(struct walk *w, const cJSON *schema, const cJSON *v, const char *path)
{
	const cJSON *b;
	size_t n = text_utf8_count(v->valuestring, strlen(v->valuestring));
	if ((b = num_member(schema, "minLength")) && (double)n < b->valuedouble) {
		put_subject(&w->msg, path);
		buf_printf(&w->msg, " must be at least %.0f characters long, not %zu",
			   b->valuedouble, n);
		return fail(w);
	}
	if ((b = num_member(schema, "maxLength")) && (double)n > b->valuedouble) {
		put_subject(&w->msg, path);
		buf_printf(&w->msg, " must be at most %.0f characters long, not %zu",
			   b->valuedouble, n);
		return fail(w);
	}
	return 0;
}

static int check_array(struct walk *w, const cJSON *schema, const cJSON *v, const char *path,
		       int depth)
{
	const cJSON *items = json_get(schema, "items"), *prefix = json_get(schema, "prefixItems");
	const cJSON *b, *e;
	int n = cJSON_GetArraySize(v), i = 0;
	if ((b = num_member(schema, "minItems")) && (double)n < b->valuedouble) {
		put_subject(&w->msg, path);
		buf_printf(&w->msg, " must have at least %.0f item%s, not %d", b->valuedouble,
			   b->valuedouble == 1 ? "" : "s", n);
		return fail(w);
	}
	if ((b = num_member(schema, "maxItems")) && (double)n > b->valuedouble) {
		put_subject(&w->msg, path);
		buf_printf(&w->msg, " must have at most %.0f item%s, not %d", b->valuedouble,
			   b->valuedouble == 1 ? "" : "s", n);
		return fail(w);
	}
	/* Draft 2020-12's prefixItems then items; draft 4-7's items as an
	 * array (a tuple) then additionalItems. */
	if (cJSON_IsArray(items)) {
		prefix = items;
		items = json_get(schema, "additionalItems");
	}
	cJSON_ArrayForEach(e, v)
	{
		const cJSON *s = cJSON_IsArray(prefix) && i < cJSON_GetArraySize(prefix)
				     ? cJSON_GetArrayItem(prefix, i)
				     : items;
		if (is_schema(s)) {
			char *p = path_index(path, i);
			int rc = check(w, s, e, p, depth + 1);
			free(p);
			if (rc)
				return rc;
		}
		i++;
	}
	return 0;
}

/* Is key declared in props? */
static bool declared(const cJSON *props, const char *key)
{
	const cJSON *p;
	cJSON_ArrayForEach(p, props)
	{
		if (strcmp(p->string, key) == 0)
			return true;
	}
	return false;
}

static int check_object(struct walk *w, const cJSON *schema, const cJSON *v, const char *path,
			int depth)
{
	const cJSON *props = json_get(schema, "properties"), *req = json_get(schema, "required");
	const cJSON *extra = json_get(schema, "additionalProperties"), *k, *r;
	int n_props;
	bool strict;
	if (!cJSON_IsObject(props))
		props = NULL;
	n_props = props ? cJSON_GetArraySize(props) : 0;
	/* Keys the schema does not declare: refused when additionalProperties
	 * is false, or absent where properties are declared (see DESIGN);
	 * checked against additionalProperties when it is a schema. */
	strict =
	    cJSON_IsFalse(extra) || (!extra && props && !json_get(schema, "patternProperties"));
	cJSON_ArrayForEach(k, v)
	{
		const char *near;
		char *p;
		int rc;
		w->work += 1 + n_props / 16;
		if (props && declared(props, k->string))
			continue;
		if (cJSON_IsObject(extra)) {
			p = path_key(path, k->string);
			rc = check(w, extra, k, p, depth + 1);
			free(p);
			if (rc)
				return rc;
			continue;
		}
		if (!strict)
			continue;
		p = path_key(path, k->string);
		buf_puts(&w->msg, "unknown parameter '");
		put_cut(&w->msg, p, 200);
		free(p);
		if (!props || !props->child) {
			buf_puts(&w->msg, *path ? "' (it takes no members)"
						: "' (the tool takes no parameters)");
			return fail(w);
		}
		buf_puts(&w->msg, "' (the ");
		if (*path) {
			buf_puts(&w->msg, "members of '");
			put_cut(&w->msg, path, 200);
			buf_puts(&w->msg, "' are: ");
		} else {
			buf_puts(&w->msg, "parameters are: ");
		}
		put_params(&w->msg, schema);
		buf_putc(&w->msg, ')');
		if ((near = closest(props, k->string))) {
			buf_puts(&w->msg, "; did you mean '");
			put_cut(&w->msg, near, 64);
			buf_puts(&w->msg, "'?");
		}
		return fail(w);
	}
	cJSON_ArrayForEach(r, (cJSON_IsArray(req) ? req : NULL))
	{
		const cJSON *ps;
		const char *desc;
		char *p;
		if (!cJSON_IsString(r) || cJSON_GetObjectItemCaseSensitive(v, r->valuestring))
			continue;
		ps = props ? cJSON_GetObjectItemCaseSensitive(props, r->valuestring) : NULL;
		p = path_key(path, r->valuestring);
		put_subject(&w->msg, p);
		free(p);
		buf_puts(&w->msg, " is required (");
		put_type(&w->msg, ps);
		if ((desc = json_str(ps, "description")) && *desc) {
			buf_puts(&w->msg, ": ");
			put_cut(&w->msg, desc, DESC_MAX);
		}
		buf_putc(&w->msg, ')');
		return fail(w);
	}
	cJSON_ArrayForEach(k, (props ? v : NULL))
	{
		const cJSON *ps = cJSON_GetObjectItemCaseSensitive(props, k->string);
		char *p;
		int rc;
		if (!ps)
			continue;
		p = path_key(path, k->string);
		rc = check(w, ps, k, p, depth + 1);
		free(p);
		if (rc)
			return rc;
	}
	return 0;
}

/* anyOf / oneOf (both as "any of"): the first alternative that holds
 * wins. When none does, the message is that of the one alternative whose
 * type the value has (the most telling), else a list of what would do. */
static int check_any(struct walk *w, const cJSON *schema, const cJSON *list, const cJSON *v,
		     const char *path, int depth)
{
	const cJSON *s, *fits = NULL;
	int n_fit = 0;
	cJSON_ArrayForEach(s, list)
	{
		struct walk sub = {BUF_INIT, w->work, false};
		int rc = check(&sub, s, v, path, depth + 1);
		w->work = sub.work;
		buf_release(&sub.msg);
		if (rc == 0)
			return 0;
		if (w->work > SCHEMA_WORK)
			return check(w, s, v, path, depth + 1); /* says it is too much */
		if (types_hold(s, v) && is_schema(s) && !cJSON_IsFalse(s)) {
			fits = s;
			n_fit++;
		}
	}
	if (n_fit == 1)
		return check(w, fits, v, path, depth + 1);
	put_subject(&w->msg, path);
	buf_puts(&w->msg, " must be ");
	{
		struct buf t = BUF_INIT;
		buf_init(&t, 1200);
		describe_any(&t, list, 0);
		buf_append(&w->msg, t.p, t.len);
		buf_release(&t);
	}
	buf_printf(&w->msg, ", not %s", value_kind(v));
	if (!cJSON_IsObject(v) && !cJSON_IsArray(v)) {
		buf_putc(&w->msg, ' ');
		put_value(&w->msg, v);
	}
	(void)schema;
	return fail(w);
}

static int check(struct walk *w, const cJSON *schema, const cJSON *v, const char *path, int depth)
{
	const cJSON *e, *c, *any, *all, *s;
	if (++w->work > SCHEMA_WORK) {
		buf_reset(&w->msg);
		buf_puts(&w->msg, "the schema and arguments are too large to check");
		return fail(w);
	}
	if (depth > SCHEMA_DEPTH) {
		buf_reset(&w->msg);
		buf_printf(&w->msg, "the schema or arguments nest deeper than %d levels",
			   SCHEMA_DEPTH);
		return fail(w);
	}
	if (cJSON_IsFalse(schema)) {
		if (!*path) {
			buf_puts(&w->msg, "the schema (false) allows no arguments at all");
			return fail(w);
		}
		put_subject(&w->msg, path);
		buf_puts(&w->msg, " is not allowed");
		return fail(w);
	}
	if (!cJSON_IsObject(schema))
		return 0; /* true, or not a schema at all: anything */
	if (!types_hold(schema, v))
		return fail_type(w, schema, v, path);
	if (cJSON_IsNull(v) && cJSON_IsTrue(json_get(schema, "nullable")))
		return 0;
	if (cJSON_IsArray(e = json_get(schema, "enum"))) {
		bool found = false;
		cJSON_ArrayForEach(c, e)
		{
			if ((found = cJSON_Compare(c, v, true)))
				break;
		}
		if (!found) {
			put_subject(&w->msg, path);
			buf_puts(&w->msg, " must be one of ");
			int n = 0;
			cJSON_ArrayForEach(c, e)
			{
				if (n == ENUM_MAX) {
					buf_puts(&w->msg, ", ...");
					break;
				}
				if (n++)
					buf_puts(&w->msg, ", ");
				put_value(&w->msg, c);
			}
			buf_puts(&w->msg, ", not ");
			put_value(&w->msg, v);
			return fail(w);
		}
	}
	if ((c = json_get(schema, "const")) && !cJSON_Compare(c, v, true)) {
		put_subject(&w->msg, path);
		buf_puts(&w->msg, " must be ");
		put_value(&w->msg, c);
		buf_puts(&w->msg, ", not ");
		put_value(&w->msg, v);
		return fail(w);
	}
	if (cJSON_IsNumber(v) && check_number(w, schema, v, path))
		return -1;
	if (cJSON_IsString(v) && check_string(w, schema, v, path))
		return -1;
	if (cJSON_IsArray(v) && check_array(w, schema, v, path, depth))
		return -1;
	if (cJSON_IsObject(v) && check_object(w, schema, v, path, depth))
		return -1;
	if (cJSON_IsArray(all = json_get(schema, "allOf"))) {
		cJSON_ArrayForEach(s, all)
		{
			if (check(w, s, v, path, depth + 1))
				return -1;
		}
	}
	if (cJSON_IsArray(any = json_get(schema, "anyOf")) && cJSON_GetArraySize(any) > 0 &&
	    check_any(w, schema, any, v, path, depth))
		return -1;
	if (cJSON_IsArray(any = json_get(schema, "oneOf")) && cJSON_GetArraySize(any) > 0 &&
	    check_any(w, schema, any, v, path, depth))
		return -1;
	return 0;
}

/* Copy src into msg[0..cap), cut where a character ends. */
static void copy_msg(char *msg, size_t cap, const char *src)
{
	size_t n;
	if (!msg || !cap)
		return;
	n = strlen(src);
	if (n >= cap)
		n = text_utf8_floor(src, cap - 1);
	memcpy(msg, src, n);
	msg[n] = '\0';
}

int tool_schema_check(const cJSON *schema, const cJSON *args, char *msg, size_t cap)
{
	struct walk w = {BUF_INIT, 0, false};
	cJSON *empty = NULL;
	int rc;
	buf_init(&w.msg, MSG_MAX);
	if (!args)
		args = empty = cJSON_CreateObject();
	/* The arguments of a tool call are an object whatever the schema
	 * says (MCP's tools/call carries them as one). */
	if (!cJSON_IsObject(args)) {
		buf_printf(&w.msg, "the arguments must be an object, not %s", value_kind(args));
		rc = -1;
	} else {
		rc = check(&w, schema, args, "", 0);
	}
	if (rc)
		copy_msg(msg, cap, w.msg.len ? w.msg.p : "the arguments do not match the schema");
	else
		copy_msg(msg, cap, "");
	buf_release(&w.msg);
	cJSON_Delete(empty);
	return rc ? -1 : 0;
}

/* ---- parameters for tool_set_info_json ---- */

static cJSON *param_json(const char *name, const cJSON *ps, bool with_default)
{
	cJSON *o = cJSON_CreateObject(), *d;
	struct buf t = BUF_INIT;
	const char *desc = json_str(ps, "description");
	buf_init(&t, 4096);
	describe(&t, ps, 0);
	json_add_str(o, "name", name);
	json_add_str(o, "type", t.p);
	json_add_str(o, "description", desc ? desc : "");
	if (with_default && (d = json_get(ps, "default")))
		json_add(o, "default", cJSON_Duplicate(d, true));
	buf_release(&t);
	return o;
}

cJSON *tool_schema_params(const cJSON *schema)
{
	cJSON *out = cJSON_CreateObject(), *req = cJSON_CreateArray(), *opt = cJSON_CreateArray();
	const cJSON *props = json_get(schema, "properties"), *r = json_get(schema, "required"), *p;
	/* Required ones in the order "required" names them, then the others
	 * in the order of "properties". */
	cJSON_ArrayForEach(p, (cJSON_IsArray(r) ? r : NULL))
	{
		if (cJSON_IsString(p))
			json_add(
			    req, NULL,
			    param_json(p->valuestring,
				       cJSON_IsObject(props)
					   ? cJSON_GetObjectItemCaseSensitive(props, p->valuestring)
					   : NULL,
				       false));
	}
	cJSON_ArrayForEach(p, (cJSON_IsObject(props) ? props : NULL))
	{
		const cJSON *q;
		bool is_req = false;
		cJSON_ArrayForEach(q, (cJSON_IsArray(r) ? r : NULL))
		{
			is_req |= cJSON_IsString(q) && strcmp(q->valuestring, p->string) == 0;
		}
		if (!is_req)
			json_add(opt, NULL, param_json(p->string, p, true));
	}
	json_add(out, "required", req);
	json_add(out, "optional", opt);
	return out;
}
