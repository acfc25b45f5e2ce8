/* SPDX-License-Identifier: MIT */
/* cli/cli_skills.c -- `rlm skills list|show|add|export|import|rm`: the
 * skills kept in the store (store/store.h), from the command line; `add`
 * reads its file in cli/cli_skills_add.c. */
#include "cli.h"
#include "cli_int.h"
#include "../common/json.h"
#include "../common/text.h"
#include "../store/store.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define IMPORT_MAX (256 << 20) /* bytes of an import file */

static const char skills_usage[] =
	"usage: rlm skills COMMAND [--cache PATH] [options]\n"
	"\n"
	"Skills are Python functions kept in the store, versioned and immutable: each\n"
	"name has versions 1, 2, ...; a version, once stored, never changes. Model code\n"
	"finds them with list_skills(), search_skills(), get_skill_info() and runs one\n"
	"with load_skill(name, version=None), in the sandboxed REPL (docs/tools.md).\n"
	"A skill is given as NAME (its latest version) or NAME@V.\n"
	"\n"
	"  list              the latest version of each skill (NAME@V), how many\n"
	"                    versions it has, its description\n"
	"      --all         retired skills too\n"
	"      --json        as a JSON array\n"
	"  show NAME[@V]     one version: signature, description, inputs and outputs,\n"
	"                    digest, every version of the name, and the source. A\n"
	"                    retired name is shown only by version (NAME@V)\n"
	"      --json        as a JSON object\n"
	"  add FILE.py       store the function FILE.py defines as a new version. The\n"
	"                    file is parsed, never run (python3's ast module): it must\n"
	"                    compile; the function is its one top-level def, or\n"
	"                    --entry's. Inputs come from the parameters (int, float,\n"
	"                    str, bool, list, dict annotations give JSON types;\n"
	"                    parameters without a default are required), the\n"
	"                    description from the docstring's first paragraph. The\n"
	"                    same content as the latest version adds nothing; a\n"
	"                    retired name is revived\n"
	"      --name NAME   the skill's name (default: the function's); letters,\n"
	"                    digits, _ . -, at most 64\n"
	"      --entry FN    the function, when the file defines several\n"
	"      --description TEXT\n"
	"                    instead of the docstring's (one of them is needed)\n"
	"      --python PATH the interpreter that parses the file (/usr/bin/python3)\n"
	"      --json        the result as a JSON object\n"
	"  export [FILE]     every version of every skill (retired ones too), one JSON\n"
	"                    object a line, to FILE or stdout\n"
	"  import FILE       add the versions of an export (FILE - : stdin) whose content\n"
	"                    the store does not hold yet, in order, each as the next\n"
	"                    version of its name; says how many were added and how many\n"
	"                    were there already. A bad line refuses the whole file.\n"
	"                    Names retired in the export are retired here when their\n"
	"                    versions were added\n"
	"  rm NAME           retire NAME: list and the bare name no longer find it; its\n"
	"                    versions stay, each still shown and loaded as NAME@V, and\n"
	"                    `add` or a save revives it (versions are never removed)\n"
	"\n"
	"      --cache PATH  the store (env RLM_CACHE; default $XDG_CACHE_HOME/rlm/rlm.db\n"
	"                    or ~/.cache/rlm/rlm.db); --store PATH is the same\n"
	"      --raw-output  write skills' text (source, descriptions) to a terminal as\n"
	"                    it is; by default a terminal gets its control characters\n"
	"                    shown escaped, as \\x1b (a pipe or a file gets the bytes)\n";

enum { OPT_CACHE = 1000, OPT_JSON, OPT_ALL, OPT_NAME, OPT_ENTRY, OPT_DESC, OPT_PYTHON, OPT_RAW };

static int parse(int argc, char **argv, struct cli_skills_args *a)
{
	static const struct option longopts[] = {
	    {"cache", required_argument, NULL, OPT_CACHE},
	    {"store", required_argument, NULL, OPT_CACHE},
	    {"json", no_argument, NULL, OPT_JSON},
	    {"all", no_argument, NULL, OPT_ALL},
	    {"name", required_argument, NULL, OPT_NAME},
	    {"entry", required_argument, NULL, OPT_ENTRY},
	    {"description", required_argument, NULL, OPT_DESC},
	    {"python", required_argument, NULL, OPT_PYTHON},
	    {"raw-output", no_argument, NULL, OPT_RAW},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int opt;
	memset(a, 0, sizeof(*a));
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_CACHE:
			a->cache = optarg;
			break;
		case OPT_JSON:
			a->json = true;
			break;
		case OPT_ALL:
			a->all = true;
			break;
		case OPT_NAME:
			a->name = optarg;
			break;
		case OPT_ENTRY:
			a->entry = optarg;
			break;
		case OPT_DESC:
			a->description = optarg;
			break;
		case OPT_PYTHON:
			a->python = optarg;
			break;
		case OPT_RAW:
			cli_raw_output = true;
			break;
		case 'h':
			fputs(skills_usage, stdout);
			return -1;
		case ':':
			return log_fail(2, "option '%s' needs a value", argv[optind - 1]);
		default:
			return log_fail(2, "unknown option '%s' (see rlm skills --help)",
					argv[optind - 1]);
		}
	}
	a->first = optind;
	return 0;
}

/* The store for reading into *s; *s NULL (and 0) when there is none yet
 * (no file, or nothing written to it). A store of an older schema is
 * opened for writing, which migrates it. */
static int open_read(const struct cli_skills_args *a, struct store **s)
{
	struct store_cfg sc = {a->cache, true, 0};
	struct rlm_err err = {0, ""};
	int rc = store_open(&sc, s, &err);
	if (rc == RLM_ENOTFOUND) {
		*s = NULL;
		return 0;
	}
	if (rc == RLM_ESTORE) {
		rlm_err_clear(&err);
		sc.readonly = false;
		rc = store_open(&sc, s, &err);
	}
	return rc ? log_fail(1, "%s", err.msg) : 0;
}

/* Where the store is, for messages about an absent one. */
static char *store_where(const struct cli_skills_args *a)
{
	return a->cache && *a->cache ? xstrdup(a->cache) : store_default_path(NULL);
}

/* A string member, "" when there is none. */
static const char *js_or(const cJSON *o, const char *key)
{
	const char *s = json_str(o, key);
	return s ? s : "";
}

/* ---- list and show ---- */

/* One line of text at most max characters, newlines as spaces. */
static void oneline(const char *s, size_t max)
{
	size_t n = text_utf8_offset(s, strlen(s), max);
	char *t = xstrndup(s, n);
	for (size_t i = 0; i < n; i++)
		if (t[i] == '\n' || t[i] == '\r' || t[i] == '\t')
			t[i] = ' ';
	cli_term_write(stdout, t, n, 0);
	free(t);
	if (s[n])
		fputs("...", stdout);
}

static void print_json(cJSON *j)
{
	char *t = cJSON_Print(j);
	cli_term_write(stdout, t, strlen(t), TEXT_TERM_JSON);
	putchar('\n');
	free(t);
}

static int cmd_list(const struct cli_skills_args *a)
{
	struct store *s = NULL;
	struct store_skill *v = NULL;
	struct rlm_err err = {0, ""};
	size_t n = 0;
	int rc;
	if ((rc = open_read(a, &s)))
		return rc;
	if (s && store_skill_list(s, a->all, &v, &n, &err)) {
		store_close(s);
		return log_fail(1, "%s", err.msg);
	}
	if (a->json) {
		cJSON *arr = cJSON_CreateArray();
		for (size_t i = 0; i < n; i++)
			json_add(arr, NULL, store_skill_json(&v[i], false));
		print_json(arr);
		cJSON_Delete(arr);
	} else if (!n) {
		char *where = s ? xstrdup(store_path(s)) : store_where(a);
		struct store_skill *r = NULL;
		size_t nr = 0;
		if (s && !a->all && store_skill_list(s, true, &r, &nr, &err))
			nr = 0;
		store_skills_free(r, nr);
		if (nr)
			cli_term_printf(stdout,
					"no skills in the store '%s' but %zu retired one%s (--all "
					"lists %s)\n",
					where ? where : "?", nr, nr == 1 ? "" : "s",
					nr == 1 ? "it" : "them");
		else
			cli_term_printf(stdout,
					"no skills in the store '%s' (rlm skills add FILE.py adds "
					"one)\n",
					where ? where : "?");
		free(where);
	} else {
		printf("%-40s %8s  %s\n", "skill (latest version)", "versions", "description");
		for (size_t i = 0; i < n; i++) {
			char ref[STORE_SKILL_NAME_MAX + 16];
			snprintf(ref, sizeof(ref), "%s@%d", v[i].name, v[i].version);
			cli_term_printf(stdout, "%-40s %8d  %s", ref, v[i].versions,
					v[i].retired ? "(retired) " : "");
			oneline(v[i].description, 80);
			putchar('\n');
		}
	}
	store_skills_free(v, n);
	store_close(s);
	return 0;
}

/* A schema's properties as "a: integer (required), b: number = 3.0". */
static void print_schema(const char *label, const cJSON *sch)
{
	const cJSON *props = json_get(sch, "properties"), *req = json_get(sch, "required"), *p;
	bool first = true;
	printf("%-10s", label);
	if (!cJSON_IsObject(sch) || (!props && !json_get(sch, "type"))) {
		printf("%s\n", cJSON_IsNull(sch) || !sch ? "(not declared)" : "(any)");
		return;
	}
	if (!cJSON_IsObject(props)) {
		cli_term_printf(stdout, "%s\n", js_or(sch, "type"));
		return;
	}
	cJSON_ArrayForEach(p, props)
	{
		const cJSON *r, *d = json_get(p, "default");
		bool required = false;
		cJSON_ArrayForEach(r, req)
		{
			if (cJSON_IsString(r) && strcmp(r->valuestring, p->string) == 0)
				required = true;
		}
		cli_term_printf(stdout, "%s%s: %s", first ? "" : ", ", p->string,
				json_str(p, "type") ? json_str(p, "type") : "any");
		if (required) {
			printf(" (required)");
		} else if (d) {
			char *t = json_print(d);
			cli_term_printf(stdout, " = %s", t);
			free(t);
		}
		first = false;
	}
	printf("%s\n", first ? "(none)" : "");
}

static void when(char *dst, size_t cap, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(dst, cap, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

static int cmd_show(const struct cli_skills_args *a, const char *ref)
{
	struct store *s = NULL;
	struct rlm_err err = {0, ""};
	const cJSON *vs, *it;
	cJSON *o;
	char w[40];
	int rc;
	if ((rc = open_read(a, &s)))
		return rc;
	if (!s) {
		char *where = store_where(a);
		rc = log_fail(2, "no skill '%s': the store '%s' holds none yet", ref,
			      where ? where : "?");
		free(where);
		return rc;
	}
	o = store_skill_show(s, ref, &err);
	store_close(s);
	if (!o)
		return log_fail(err.code == RLM_ENOTFOUND || err.code == RLM_EINVAL ? 2 : 1, "%s",
				err.msg);
	if (a->json) {
		print_json(o);
		cJSON_Delete(o);
		return 0;
	}
	cli_term_printf(stdout, "skill     %s@%.0f%s\n", js_or(o, "name"),
			json_num(o, "version", 0),
			cJSON_IsTrue(json_get(o, "retired")) ? " (the name is retired)" : "");
	cli_term_printf(stdout, "entry     %s%s\n", js_or(o, "entry"), js_or(o, "signature"));
	printf("about     ");
	oneline(js_or(o, "description"), 400);
	putchar('\n');
	print_schema("inputs", json_get(o, "inputs"));
	print_schema("outputs", json_get(o, "outputs"));
	when(w, sizeof(w), (int64_t)json_num(o, "created_ms", 0));
	printf("digest    %s (xxh3-128)\ncreated   %s\n", js_or(o, "digest"), w);
	vs = json_get(o, "versions");
	printf("versions  %d:\n", cJSON_GetArraySize(vs));
	cJSON_ArrayForEach(it, vs)
	{
		when(w, sizeof(w), (int64_t)json_num(it, "created_ms", 0));
		printf("  %s@%-4.0f %s  %.12s%s\n", js_or(o, "name"), json_num(it, "version", 0), w,
		       js_or(it, "digest"),
		       json_num(it, "version", 0) == json_num(o, "version", 0) ? "  <- shown" : "");
	}
	printf("source:\n");
	{
		const char *src = js_or(o, "source");
		cli_term_write(stdout, src, strlen(src), 0);
		if (*src && src[strlen(src) - 1] != '\n')
			putchar('\n');
	}
	cJSON_Delete(o);
	return 0;
}

/* ---- export, import, rm ---- */

static int cmd_export(const struct cli_skills_args *a, const char *file)
{
	struct store *s = NULL;
	struct store_skill *names = NULL;
	struct rlm_err err = {0, ""};
	size_t n = 0, lines = 0;
	bool to_stdout = !file || strcmp(file, "-") == 0;
	FILE *f = stdout;
	int rc = 0;
	if ((rc = open_read(a, &s)))
		return rc;
	if (s && store_skill_list(s, true, &names, &n, &err)) {
		store_close(s);
		return log_fail(1, "%s", err.msg);
	}
	if (!to_stdout && !(f = fopen(file, "w"))) {
		rc = log_fail(1, "cannot write '%s': %s", file, strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < n && !rc; i++) {
		struct store_skill *v;
		size_t m;
		if (store_skill_versions(s, names[i].name, &v, &m, &err)) {
			rc = log_fail(1, "%s", err.msg);
			break;
		}
		for (size_t j = 0; j < m; j++) {
			cJSON *o;
			char *t;
			v[j].versions = 0;
			o = store_skill_json(&v[j], true);
			t = json_print(o);
			if (to_stdout)
				cli_term_write(f, t, strlen(t), TEXT_TERM_JSON);
			else
				fputs(t, f);
			fputc('\n', f);
			free(t);
			cJSON_Delete(o);
			lines++;
		}
		store_skills_free(v, m);
	}
	if (!to_stdout) {
		if ((fclose(f) != 0 || ferror(stdout)) && !rc)
			rc = log_fail(1, "cannot write '%s': %s", file, strerror(errno));
		if (!rc)
			cli_term_printf(stderr, "exported %zu version%s of %zu skill%s to '%s'\n",
					lines, lines == 1 ? "" : "s", n, n == 1 ? "" : "s", file);
	}
out:
	store_skills_free(names, n);
	store_close(s);
	return rc;
}

/* One line of an import, checked. */
struct import_item {
	struct store_skill k;
	char digest[65];
	size_t line;
};

/* Read and check every line of file: all or nothing. */
static int import_read(const char *file, struct import_item **out, size_t *n)
{
	struct rlm_err err = {0, ""};
	struct import_item *v = NULL;
	size_t cap = 0, k = 0, len = 0, line = 0;
	char *text = NULL, *p, *end;
	int rc;
	if ((rc = file_read(strcmp(file, "-") == 0 ? "/dev/stdin" : file, IMPORT_MAX, &text, &len,
			    &err)))
		return log_fail(rc == RLM_ETOOBIG ? 2 : 1, "%s", err.msg);
	for (p = text; p < text + len; p = end + 1) {
		cJSON *j;
		size_t l;
		end = memchr(p, '\n', (size_t)(text + len - p));
		if (!end)
			end = text + len;
		l = (size_t)(end - p);
		line++;
		while (l && (p[l - 1] == '\r' || p[l - 1] == ' ' || p[l - 1] == '\t'))
			l--;
		if (!l)
			continue;
		if (k == cap) {
			cap = cap ? 2 * cap : 16;
			v = xrealloc(v, cap * sizeof(*v));
		}
		memset(&v[k], 0, sizeof(v[k]));
		v[k].line = line;
		if (!(j = json_parse(p, l))) {
			rc = log_fail(1, "'%s' line %zu: not a JSON object", file, line);
			break;
		}
		rc = store_skill_from_json(j, &v[k].k, &err);
		cJSON_Delete(j);
		if (!rc && (rc = store_skill_digest(&v[k].k, v[k].digest, &err)))
			store_skill_release(&v[k].k);
		if (rc) {
			rc = log_fail(1, "'%s' line %zu: %s", file, line, err.msg);
			break;
		}
		k++;
	}
	free(text);
	if (rc) {
		for (size_t i = 0; i < k; i++)
			store_skill_release(&v[i].k);
		free(v);
		return rc;
	}
	*out = v;
	*n = k;
	return 0;
}

/* The digests a name holds in the store, kept while an import goes
 * through its lines (one read per run of lines of the same name). */
struct held {
	char name[STORE_SKILL_NAME_MAX + 1];
	char (*digests)[65];
	size_t n;
};

/* Does the store hold content digest under name already? */
static int held(struct store *s, struct held *h, const char *name, const char *digest, bool *yes)
{
	*yes = false;
	if (strcmp(h->name, name) != 0) {
		struct store_skill *v;
		struct rlm_err err = {0, ""};
		size_t n;
		int rc = store_skill_versions(s, name, &v, &n, &err);
		if (rc && rc != RLM_ENOTFOUND)
			return log_fail(1, "%s", err.msg);
		if (rc)
			n = 0;
		snprintf(h->name, sizeof(h->name), "%s", name);
		h->digests = xrealloc(h->digests, (n + 1) * sizeof(*h->digests));
		for (size_t i = 0; i < n; i++)
			memcpy(h->digests[i], v[i].digest, sizeof(h->digests[i]));
		h->n = n;
		if (n)
			store_skills_free(v, n);
	}
	for (size_t i = 0; i < h->n && !*yes; i++)
		*yes = strcmp(h->digests[i], digest) == 0;
	return 0;
}

/* Remember that name holds digest now. */
static void held_add(struct held *h, const char *digest)
{
	h->digests = xrealloc(h->digests, (h->n + 1) * sizeof(*h->digests));
	memcpy(h->digests[h->n++], digest, sizeof(h->digests[0]));
}

static int cmd_import(const struct cli_skills_args *a, const char *file)
{
	struct import_item *v = NULL;
	struct store *s = NULL;
	struct rlm_err err = {0, ""};
	struct held h = {"", NULL, 0};
	size_t n = 0, added = 0, same = 0;
	bool *took = NULL;
	cJSON *list = cJSON_CreateArray();
	int rc;
	if ((rc = import_read(file, &v, &n)))
		goto out;
	if ((rc = cli__store_open(a->cache, false, &s)))
		goto out;
	took = xcalloc(n + 1, sizeof(*took));
	for (size_t i = 0; i < n; i++) {
		bool yes, unchanged;
		int version;
		if ((rc = held(s, &h, v[i].k.name, v[i].digest, &yes)))
			goto out;
		if (yes) {
			same++;
			continue;
		}
		if ((rc = store_skill_put(s, &v[i].k, &version, &unchanged, &err))) {
			rc = log_fail(1, "'%s' line %zu: %s (%zu added before it)", file, v[i].line,
				      err.msg, added);
			goto out;
		}
		held_add(&h, v[i].digest);
		took[i] = true;
		added++;
		{
			cJSON *o = cJSON_CreateObject();
			json_add_str(o, "name", v[i].k.name);
			json_add_num(o, "version", version);
			json_add_str(o, "digest", v[i].digest);
			json_add_num(o, "line", (double)v[i].line);
			json_add(list, NULL, o);
		}
		if (!a->json)
			cli_term_printf(stdout, "added %s@%d (line %zu)\n", v[i].k.name, version,
					v[i].line);
	}
	/* A name the export has retired (its last line says so) is retired
	 * here too, when this import added to it. */
	for (size_t i = 0; i < n; i++) {
		bool any = false;
		size_t j;
		if (i + 1 < n && strcmp(v[i + 1].k.name, v[i].k.name) == 0)
			continue; /* not the name's last line */
		for (j = 0; j <= i && !any; j++)
			any = took[j] && strcmp(v[j].k.name, v[i].k.name) == 0;
		if (any && v[i].k.retired && store_skill_retire(s, v[i].k.name, &err)) {
			rc = log_fail(1, "%s", err.msg);
			goto out;
		}
		if (any && v[i].k.retired && !a->json)
			cli_term_printf(stdout, "retired %s (retired in '%s')\n", v[i].k.name,
					file);
	}
	if (a->json) {
		cJSON *o = cJSON_CreateObject();
		json_add(o, "added", list);
		list = NULL;
		json_add_num(o, "unchanged", (double)same);
		print_json(o);
		cJSON_Delete(o);
	} else {
		cli_term_printf(stdout, "imported '%s' into '%s': %zu added, %zu unchanged\n", file,
				store_path(s), added, same);
	}
out:
	cJSON_Delete(list);
	for (size_t i = 0; i < n; i++)
		store_skill_release(&v[i].k);
	free(v);
	free(took);
	free(h.digests);
	store_close(s);
	return rc;
}

static int cmd_rm(const struct cli_skills_args *a, const char *name)
{
	struct store *s = NULL;
	struct store_skill *v = NULL;
	struct rlm_err err = {0, ""};
	size_t n = 0;
	int rc;
	if (strchr(name, '@'))
		return log_fail(2,
				"rm retires a whole name, not a version ('%s'): versions are "
				"never removed",
				name);
	if ((rc = open_read(a, &s)))
		return rc;
	if (!s) {
		char *where = store_where(a);
		rc = log_fail(2, "no skill '%s': the store '%s' holds none yet", name,
			      where ? where : "?");
		free(where);
		return rc;
	}
	store_close(s);
	if ((rc = cli__store_open(a->cache, false, &s)))
		return rc;
	if ((rc = store_skill_retire(s, name, &err)) ||
	    (rc = store_skill_versions(s, name, &v, &n, &err))) {
		store_close(s);
		return log_fail(rc == RLM_ENOTFOUND || rc == RLM_EINVAL ? 2 : 1, "%s", err.msg);
	}
	if (a->json) {
		cJSON *o = cJSON_CreateObject();
		json_add_str(o, "name", name);
		json_add_bool(o, "retired", true);
		json_add_num(o, "versions", (double)n);
		print_json(o);
		cJSON_Delete(o);
		store_skills_free(v, n);
		store_close(s);
		return 0;
	}
	cli_term_printf(stdout,
			"retired %s: list and the bare name no longer find it; its %zu version%s "
			"stay (%s@1..%s@%d), and a new add revives it\n",
			name, n, n == 1 ? "" : "s", name, name, n ? v[n - 1].version : 0);
	store_skills_free(v, n);
	store_close(s);
	return 0;
}

int cli_skills(int argc, char **argv)
{
	static const struct {
		const char *name;
		int operands_min, operands_max;
		const char *want; /* what the operands are */
	} subs[] = {
	    {"list", 0, 0, ""},		{"show", 1, 1, "NAME[@V]"}, {"add", 1, 1, "FILE.py"},
	    {"export", 0, 1, "[FILE]"}, {"import", 1, 1, "FILE"},   {"rm", 1, 1, "NAME"},
	};
	struct cli_skills_args a;
	const char *sub = argc > 1 ? argv[1] : NULL;
	size_t i;
	int rc, ops;
	if (!sub || strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0) {
		fputs(skills_usage, sub ? stdout : stderr);
		return sub ? 0 : 2;
	}
	for (i = 0; i < ARRAY_SIZE(subs); i++)
		if (strcmp(sub, subs[i].name) == 0)
			break;
	if (i == ARRAY_SIZE(subs))
		return log_fail(
		    2,
		    "unknown skills command '%s' (known: list, show, add, export, import, "
		    "rm)",
		    sub);
	if ((rc = parse(argc - 1, argv + 1, &a)))
		return rc < 0 ? 0 : rc;
	argc--;
	argv++;
	ops = argc - a.first;
	if (ops < subs[i].operands_min)
		return log_fail(2, "skills %s needs %s (see rlm skills --help)", sub, subs[i].want);
	if (ops > subs[i].operands_max)
		return log_fail(2, "unexpected argument '%s' (see rlm skills --help)",
				argv[a.first + subs[i].operands_max]);
	if ((a.name || a.entry || a.description || a.python) && strcmp(sub, "add") != 0)
		return log_fail(2, "--name, --entry, --description and --python are options of "
				   "skills add");
	if (a.all && strcmp(sub, "list") != 0)
		return log_fail(2, "--all is an option of skills list");
	if (a.json && strcmp(sub, "export") == 0)
		return log_fail(2, "--json: export writes JSON already, one object a line");
	switch (i) {
	case 0:
		return cmd_list(&a);
	case 1:
		return cmd_show(&a, argv[a.first]);
	case 2:
		return cli__skills_add(&a, argv[a.first]);
	case 3:
		return cmd_export(&a, ops ? argv[a.first] : NULL);
	case 4:
		return cmd_import(&a, argv[a.first]);
	default:
		return cmd_rm(&a, argv[a.first]);
	}
}
