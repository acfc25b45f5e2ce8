/* SPDX-License-Identifier: MIT */
/* tests/test_skills.c -- skills in the store: versions, unchanged puts,
 * retire and revive, two handles and two processes putting at once, the
 * migration of a schema 1 file, versions that cannot be rewritten; and
 * `rlm skills` from the command line on real files (a module of the
 * system's Python library among them), with files it must refuse. */
#include "harness.h"
#include "proc.h"
#include "../store/store.h"
#include "../common/json.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers ---- */

static char *tpath(const char *name)
{
	return xasprintf("%s/%s", harness_tmpdir(), name);
}

static struct store *open_ok(const char *path)
{
	struct store_cfg cfg = {path, false, 0};
	struct rlm_err e = {0, ""};
	struct store *s = NULL;
	int rc = store_open(&cfg, &s, &e);
	CHECK_MSG(rc == 0 && s, "store_open '%s': %d %s", path, rc, e.msg);
	return s;
}

static struct store_skill skill(const char *name, const char *source, const char *desc)
{
	struct store_skill k = {0};
	k.name = (char *)(uintptr_t)name;
	k.source = (char *)(uintptr_t)source;
	k.entry = (char *)(uintptr_t) "f";
	k.description = (char *)(uintptr_t)desc;
	k.signature = (char *)(uintptr_t) "(x: int) -> int";
	k.inputs_json = (char *)(uintptr_t) "{\"type\": \"object\", \"properties\": {\"x\": "
					    "{\"type\": \"integer\"}}, \"required\": [\"x\"]}";
	k.outputs_json = (char *)(uintptr_t) "{\"type\":\"integer\"}";
	return k;
}

static int put(struct store *s, const struct store_skill *k, bool *unchanged)
{
	struct rlm_err e = {0, ""};
	int v = -1;
	bool u = false;
	int rc = store_skill_put(s, k, &v, &u, &e);
	CHECK_MSG(rc == 0, "store_skill_put %s: %d %s", k->name, rc, e.msg);
	if (unchanged)
		*unchanged = u;
	return v;
}

static sqlite3 *raw_open(const char *path)
{
	sqlite3 *db = NULL;
	CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	return db;
}

static int raw_exec(sqlite3 *db, const char *sql, char **msg)
{
	return sqlite3_exec(db, sql, NULL, NULL, msg);
}

static int64_t raw_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v;
	CHECK_INT(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	CHECK_INT(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* ---- the store ---- */

TEST(versions_unchanged_and_two_handles)
{
	char *path = tpath("rlm.db");
	struct store *a = open_ok(path), *b = open_ok(path);
	struct store_skill k = skill("add_one", "def f(x: int) -> int:\n    return x + 1\n",
				     "add one to x"),
			   got;
	struct store_skill *v;
	size_t n;
	struct rlm_err e = {0, ""};
	bool u = true;
	char d1[65], d2[65];

	CHECK_INT(put(a, &k, &u), 1);
	CHECK(!u);
	/* the same content, spaced otherwise, from the other handle */
	k.inputs_json = (char *)(uintptr_t) "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":"
					    "\"integer\"}},\"required\":[\"x\"]}";
	CHECK_INT(put(b, &k, &u), 1);
	CHECK(u);
	CHECK_INT(store_skill_get(b, "add_one", 0, &got, &e), 0);
	CHECK_INT(got.version, 1);
	CHECK_INT(got.versions, 1);
	CHECK_STR(got.source, k.source);
	CHECK_STR(got.inputs_json,
		  "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"integer\"}},"
		  "\"required\":[\"x\"]}");
	CHECK_INT((int)strlen(got.digest), 32);
	CHECK_INT(store_skill_digest(&k, d1, &e), 0);
	CHECK_STR(got.digest, d1);
	CHECK(got.created_ms > 0 && !got.retired);
	store_skill_release(&got);

	/* each member of the content makes a new version */
	k.description = (char *)(uintptr_t) "add one to an integer x";
	CHECK_INT(put(b, &k, &u), 2);
	CHECK(!u);
	CHECK_INT(store_skill_digest(&k, d2, &e), 0);
	CHECK(strcmp(d1, d2) != 0);
	k.outputs_json = NULL;
	CHECK_INT(put(a, &k, &u), 3);
	k.source = (char *)(uintptr_t) "def f(x: int) -> int:\n    return 1 + x\n";
	CHECK_INT(put(a, &k, &u), 4);
	CHECK_INT(put(a, &k, &u), 4);
	CHECK(u);
	/* back to the content of version 1: a new version all the same */
	k = skill("add_one", "def f(x: int) -> int:\n    return x + 1\n", "add one to x");
	CHECK_INT(put(b, &k, &u), 5);
	CHECK(!u);

	CHECK_INT(store_skill_versions(a, "add_one", &v, &n, &e), 0);
	CHECK_INT(n, 5);
	for (size_t i = 0; i < n; i++)
		CHECK_INT(v[i].version, (int)i + 1);
	CHECK_STR(v[0].digest, v[4].digest);
	CHECK_STR(v[1].description, "add one to an integer x");
	CHECK(v[2].outputs_json == NULL && v[1].outputs_json != NULL);
	store_skills_free(v, n);

	/* version 1 still loads as it was */
	CHECK_INT(store_skill_get(a, "add_one", 1, &got, &e), 0);
	CHECK_STR(got.description, "add one to x");
	CHECK_INT(got.versions, 5);
	store_skill_release(&got);
	CHECK_INT(store_skill_get(a, "add_one", 6, &got, &e), RLM_ENOTFOUND);
	CHECK_CONTAINS(e.msg, "skill 'add_one' has no version 6 (the latest is 5)");
	CHECK_INT(store_skill_get(a, "nope", 0, &got, &e), RLM_ENOTFOUND);
	CHECK_CONTAINS(e.msg, "no skill 'nope'");

	store_close(a);
	store_close(b);
	free(path);
}

TEST(list_retire_and_revive)
{
	char *path = tpath("rlm.db");
	struct store *s = open_ok(path), *r;
	struct store_cfg ro = {path, true, 0};
	struct store_skill a = skill("alpha", "def f(x):\n    return x\n", "first"),
			   b = skill("beta.v2-x", "def f(x):\n    return -x\n", "second"), got;
	struct store_skill *v;
	size_t n;
	struct rlm_err e = {0, ""};
	bool u;

	CHECK_INT(store_skill_list(s, false, &v, &n, &e), 0);
	CHECK_INT(n, 0);
	free(v);
	put(s, &a, NULL);
	put(s, &b, NULL);
	b.description = (char *)(uintptr_t) "second, better";
	put(s, &b, NULL);
	CHECK_INT(store_skill_list(s, false, &v, &n, &e), 0);
	CHECK_INT(n, 2);
	CHECK_STR(v[0].name, "alpha");
	CHECK_INT(v[0].versions, 1);
	CHECK_STR(v[1].name, "beta.v2-x");
	CHECK_INT(v[1].version, 2);
	CHECK_INT(v[1].versions, 2);
	CHECK_STR(v[1].description, "second, better");
	store_skills_free(v, n);

	CHECK_INT(store_skill_retire(s, "beta.v2-x", &e), 0);
	CHECK_INT(store_skill_retire(s, "beta.v2-x", &e), 0); /* again: no error */
	CHECK_INT(store_skill_retire(s, "gamma", &e), RLM_ENOTFOUND);
	CHECK_CONTAINS(e.msg, "no skill 'gamma'");

	/* a read-only handle (rlm skills list) sees it */
	CHECK_INT(store_open(&ro, &r, &e), 0);
	CHECK_INT(store_skill_list(r, false, &v, &n, &e), 0);
	CHECK_INT(n, 1);
	CHECK_STR(v[0].name, "alpha");
	store_skills_free(v, n);
	CHECK_INT(store_skill_list(r, true, &v, &n, &e), 0);
	CHECK_INT(n, 2);
	CHECK(v[1].retired && !v[0].retired);
	store_skills_free(v, n);
	CHECK_INT(store_skill_get(r, "beta.v2-x", 0, &got, &e), RLM_ENOTFOUND);
	CHECK_CONTAINS(e.msg, "skill 'beta.v2-x' was retired");
	CHECK_INT(store_skill_get(r, "beta.v2-x", 1, &got, &e), 0);
	CHECK_STR(got.description, "second");
	CHECK(got.retired);
	store_skill_release(&got);
	/* a read-only handle cannot write */
	CHECK(store_skill_put(r, &a, NULL, NULL, &e) < 0);
	CHECK(store_skill_retire(r, "alpha", &e) < 0);
	store_close(r);

	/* a put revives it, unchanged or not */
	CHECK_INT(put(s, &b, &u), 2);
	CHECK(u);
	CHECK_INT(store_skill_get(s, "beta.v2-x", 0, &got, &e), 0);
	CHECK(!got.retired);
	store_skill_release(&got);

	/* skills are no cache: clear and prune leave them */
	CHECK_INT(store_clear(s, &e), 0);
	{
		int64_t removed = 0;
		CHECK_INT(store_prune(s, 0, &removed, &e), 0);
	}
	CHECK_INT(store_skill_list(s, true, &v, &n, &e), 0);
	CHECK_INT(n, 2);
	store_skills_free(v, n);
	store_close(s);
	free(path);
}

TEST(bad_skills_are_refused)
{
	char *path = tpath("rlm.db");
	struct store *s = open_ok(path);
	struct store_skill k = skill("ok", "def f(x):\n    return x\n", "d");
	struct rlm_err e = {0, ""};
	char *big;
	static const char *const bad_names[] = {"", "1abc", "a b", "a@1", "a/b", "-x", NULL};
	for (size_t i = 0; bad_names[i]; i++) {
		k.name = (char *)(uintptr_t)bad_names[i];
		CHECK_INT(store_skill_put(s, &k, NULL, NULL, &e), RLM_EINVAL);
		CHECK_CONTAINS(e.msg, "bad skill name");
	}
	big = xmalloc(STORE_SKILL_NAME_MAX + 2);
	memset(big, 'a', STORE_SKILL_NAME_MAX + 1);
	big[STORE_SKILL_NAME_MAX + 1] = '\0';
	k.name = big;
	CHECK_INT(store_skill_put(s, &k, NULL, NULL, &e), RLM_EINVAL);
	big[STORE_SKILL_NAME_MAX] = '\0'; /* 64 is the most */
	CHECK_INT(store_skill_put(s, &k, NULL, NULL, &e), 0);
	free(big);
	k.name = (char *)(uintptr_t) "ok";
	k.entry = (char *)(uintptr_t) "not-an-ident";
	CHECK_INT(store_skill_put(s, &k, NULL, NULL, &e), RLM_EINVAL);
	CHECK_CONTAINS(e.msg, "bad entry 'not-an-ident'");
	k.entry = (char *)(uintptr_t) "f";
	k.inputs_json = (char *)(uintptr_t) "[1, 2]";
	CHECK_INT(store_skill_put(s, &k, NULL, NULL, &e), RLM_EINVAL);
	CHECK_CONTAINS(e.msg, "skill 'ok': inputs: want a JSON object");
	k.inputs_json = (char *)(uintptr_t) "{\"x\": ";
	CHECK_INT(store_skill_put(s, &k, NULL, NULL, &e), RLM_EINVAL);
	CHECK_CONTAINS(e.msg, "inputs: not valid JSON");
	k.inputs_json = NULL; /* {} */
	k.source = (char *)(uintptr_t) "";
	CHECK_INT(store_skill_put(s, &k, NULL, NULL, &e), RLM_EINVAL);
	CHECK_CONTAINS(e.msg, "source: missing");
	big = xmalloc(STORE_SKILL_SOURCE_MAX + 2);
	memset(big, '#', STORE_SKILL_SOURCE_MAX + 1);
	big[STORE_SKILL_SOURCE_MAX + 1] = '\0';
	k.source = big;
	CHECK_INT(store_skill_put(s, &k, NULL, NULL, &e), RLM_ETOOBIG);
	free(big);
	{
		char name[80];
		int ver;
		CHECK_INT(store_skill_ref("abc@12", name, sizeof(name), &ver, &e), 0);
		CHECK_STR(name, "abc");
		CHECK_INT(ver, 12);
		CHECK_INT(store_skill_ref("abc", name, sizeof(name), &ver, &e), 0);
		CHECK_INT(ver, 0);
		CHECK_INT(store_skill_ref("abc@0", name, sizeof(name), &ver, &e), RLM_EINVAL);
		CHECK_INT(store_skill_ref("abc@x", name, sizeof(name), &ver, &e), RLM_EINVAL);
		CHECK_INT(store_skill_ref("abc@", name, sizeof(name), &ver, &e), RLM_EINVAL);
		CHECK_INT(store_skill_ref("@3", name, sizeof(name), &ver, &e), RLM_EINVAL);
	}
	store_close(s);
	free(path);
}

TEST(versions_cannot_be_rewritten)
{
	char *path = tpath("rlm.db");
	struct store *s = open_ok(path);
	struct store_skill k = skill("imm", "def f(x):\n    return x\n", "d");
	sqlite3 *db;
	char *msg = NULL;
	put(s, &k, NULL);
	store_close(s);
	db = raw_open(path);
	CHECK(raw_exec(db, "UPDATE skills SET source = 'evil' WHERE name = 'imm'", &msg) !=
	      SQLITE_OK);
	CHECK_CONTAINS(msg, "skill versions are immutable");
	sqlite3_free(msg);
	CHECK_INT(raw_int(db, "SELECT count(*) FROM skills WHERE source = 'evil'"), 0);
	sqlite3_close(db);
	free(path);
}

/* A store of schema 1 (before skills), with a cached call and a run in
 * it, is migrated on the first writable open: its rows stay. */
TEST(schema_1_store_is_migrated)
{
	char *path = tpath("old.db");
	sqlite3 *db = raw_open(path);
	struct store *s;
	struct store_cfg ro = {path, true, 0};
	struct store_skill k = skill("after", "def f(x):\n    return x\n", "d");
	struct store_stats st;
	struct rlm_err e = {0, ""};
	CHECK_INT(
	    raw_exec(db,
		     "PRAGMA journal_mode = WAL;"
		     "CREATE TABLE calls(key BLOB PRIMARY KEY, model TEXT, text TEXT,"
		     " finish TEXT, input_tokens INTEGER, output_tokens INTEGER,"
		     " cached_tokens INTEGER, cache_write_tokens INTEGER, cost REAL,"
		     " created INTEGER, hits INTEGER NOT NULL DEFAULT 0,"
		     " last_hit INTEGER NOT NULL DEFAULT 0);"
		     "CREATE TABLE results(key BLOB PRIMARY KEY, answer TEXT, stop TEXT,"
		     " usage_json TEXT, cost REAL, calls INTEGER, created INTEGER,"
		     " hits INTEGER NOT NULL DEFAULT 0, last_hit INTEGER NOT NULL DEFAULT 0);"
		     "CREATE TABLE runs(id TEXT PRIMARY KEY, created INTEGER, ended INTEGER,"
		     " status TEXT, question TEXT, context_digest TEXT, context_bytes INTEGER,"
		     " context_source TEXT, config_json TEXT, note_json TEXT, answer TEXT,"
		     " result_json TEXT, resumed_from TEXT, pid INTEGER, pid_start INTEGER);"
		     "CREATE INDEX runs_created ON runs(created);"
		     "CREATE INDEX runs_digest ON runs(context_digest);"
		     "CREATE TABLE events(run TEXT, seq INTEGER, t_ns INTEGER, node INTEGER,"
		     " parent INTEGER, depth INTEGER, iteration INTEGER, kind TEXT, text TEXT,"
		     " data_json TEXT, PRIMARY KEY(run, seq));"
		     "INSERT INTO calls(key, model, text, created) VALUES(x'01', 'm', 'hi', 1);"
		     "INSERT INTO runs(id, created, ended, status, question) VALUES"
		     " ('20250101-000000-abcdef', 1, 2, 'done', 'q?');"
		     "PRAGMA user_version = 1;",
		     NULL),
	    SQLITE_OK);
	sqlite3_close(db);
	/* read-only cannot migrate, and says so */
	CHECK_INT(store_open(&ro, &s, &e), RLM_ESTORE);
	CHECK_CONTAINS(e.msg, "older schema");
	s = open_ok(path);
	CHECK_INT(store_stats(s, &st, &e), 0);
	CHECK_INT(st.calls, 1);
	CHECK_INT(st.runs, 1);
	CHECK_INT(put(s, &k, NULL), 1);
	store_close(s);
	db = raw_open(path);
	CHECK_INT(raw_int(db, "PRAGMA user_version"), 2);
	CHECK_INT(raw_int(db, "SELECT count(*) FROM skills"), 1);
	sqlite3_close(db);
	free(path);
}

/* Two processes put new content under one name at the same moment, many
 * times: every put gets its own version, and the versions run 1..2N. */
TEST(two_processes_put_at_once)
{
	enum { N = 60 };
	char *path = tpath("rlm.db");
	struct store *s = open_ok(path);
	struct store_skill *v;
	size_t n;
	struct rlm_err e = {0, ""};
	int go[2], res[2][2], status;
	pid_t kids[2];
	bool seen[2 * N + 1] = {false};
	store_close(s);
	CHECK(pipe(go) == 0);
	for (int c = 0; c < 2; c++) {
		CHECK(pipe(res[c]) == 0);
		kids[c] = fork();
		CHECK(kids[c] >= 0);
		if (kids[c] == 0) {
			struct store *cs;
			char b, src[96];
			close(go[1]);
			close(res[c][0]);
			if (read(go[0], &b, 1) != 0)
				_exit(3);
			cs = open_ok(path);
			for (int i = 0; i < N; i++) {
				struct store_skill k;
				int ver = 0;
				bool u = true;
				snprintf(src, sizeof(src), "def f(x):\n    return x + %d\n",
					 c * 1000 + i);
				k = skill("shared", src, "raced");
				if (store_skill_put(cs, &k, &ver, &u, &e) || u)
					_exit(1);
				if (write(res[c][1], &ver, sizeof(ver)) != sizeof(ver))
					_exit(2);
			}
			store_close(cs);
			_exit(0);
		}
		close(res[c][1]);
	}
	close(go[0]);
	close(go[1]);
	for (int c = 0; c < 2; c++) {
		int ver;
		while (read(res[c][0], &ver, sizeof(ver)) == sizeof(ver)) {
			CHECK_MSG(ver >= 1 && ver <= 2 * N, "version %d", ver);
			CHECK_MSG(!seen[ver], "version %d given twice", ver);
			seen[ver] = true;
		}
		close(res[c][0]);
		CHECK_INT(waitpid(kids[c], &status, 0), kids[c]);
		CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "putter %d: status %d", c,
			  status);
	}
	s = open_ok(path);
	CHECK_INT(store_skill_versions(s, "shared", &v, &n, &e), 0);
	CHECK_INT(n, 2 * N);
	for (size_t i = 0; i < n; i++)
		CHECK_INT(v[i].version, (int)i + 1);
	store_skills_free(v, n);
	store_close(s);
	free(path);
}

TEST(json_round_trip)
{
	char *path = tpath("rlm.db");
	struct store *s = open_ok(path);
	struct store_skill k = skill("rt", "def f(x):\n    \"\"\"é \\u2603\"\"\"\n    return x\n",
				     "unicode é ☃"),
			   got, back;
	struct rlm_err e = {0, ""};
	cJSON *j;
	char d[65];
	put(s, &k, NULL);
	CHECK_INT(store_skill_get(s, "rt", 0, &got, &e), 0);
	j = store_skill_json(&got, true);
	CHECK_STR(json_str(j, "name"), "rt");
	CHECK_INT(json_num(j, "version", 0), 1);
	CHECK_INT(json_num(j, "versions", 0), 1);
	CHECK_STR(json_str(j, "source"), k.source);
	CHECK_STR(json_str(json_get(j, "outputs"), "type"), "integer");
	CHECK(cJSON_IsArray(json_get(json_get(j, "inputs"), "required")));
	CHECK_INT(store_skill_from_json(j, &back, &e), 0);
	CHECK_INT(store_skill_digest(&back, d, &e), 0);
	CHECK_STR(d, got.digest);
	store_skill_release(&back);
	cJSON_DeleteItemFromObject(j, "entry");
	CHECK_INT(store_skill_from_json(j, &back, &e), RLM_EINVAL);
	CHECK_CONTAINS(e.msg, "\"entry\": missing");
	cJSON_Delete(j);
	store_skill_release(&got);
	store_close(s);
	free(path);
}

/* ---- rlm skills ---- */

static struct proc_out rlm(const char *const *args)
{
	return proc_rlm(args, NULL, 60);
}

static void write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "wb");
	CHECK_MSG(f, "fopen %s: %s", path, strerror(errno));
	CHECK(fwrite(text, 1, len, f) == len);
	CHECK(fclose(f) == 0);
}

/* `rlm skills add FILE` with more arguments after (NULL-terminated). */
static struct proc_out add(const char *db, const char *file, const char *a1, const char *a2,
			   const char *a3, const char *a4)
{
	const char *args[] = {"skills", "add", file, "--cache", db, a1, a2, a3, a4, NULL};
	return rlm(args);
}

/* The file must be refused, with msg in the error, and nothing stored. */
static void refused(const char *db, const char *name, const char *text, const char *msg)
{
	char *path = tpath(name);
	struct proc_out o;
	write_file(path, text, strlen(text));
	o = add(db, path, NULL, NULL, NULL, NULL);
	CHECK_MSG(o.status != 0, "%s was added: %s", name, o.out);
	CHECK_CONTAINS(o.err, msg);
	CHECK_STR(o.out, "");
	proc_out_release(&o);
	free(path);
}

TEST(add_refuses_what_is_not_one_function)
{
	char *db = tpath("rlm.db");
	struct proc_out o;
	struct stat sb;
	refused(db, "syntax.py", "import os\n\n\ndef f(x:\n    return x\n",
		"syntax.py' does not compile: line 4:");
	refused(db, "outside.py", "def f():\n    \"\"\"d\"\"\"\n    return 1\nreturn 2\n",
		"does not compile: line 4: 'return' outside function");
	refused(db, "none.py", "X = 1\nprint(X)\n", "defines no top-level function");
	refused(db, "two.py", "def a():\n    '''d'''\ndef b():\n    '''d'''\n",
		"defines 2 top-level functions (a, b): pick the skill's with --entry");
	refused(db, "async.py", "async def f(x):\n    '''d'''\n    return x\n",
		"'f' is async (line 1): a skill is a plain function");
	refused(db, "nodoc.py", "def f(x):\n    return x\n",
		"function 'f' has no docstring: pass --description TEXT");
	refused(db, "latin1.py", "def f(x):\n    '''caf\xe9'''\n    return x\n", "not UTF-8 text");
	{
		char *path = tpath("nul.py");
		write_file(path, "def f(x):\n    '''d'''\n    return x\n\0\n", 37);
		o = add(db, path, NULL, NULL, NULL, NULL);
		CHECK(o.status != 0);
		CHECK_CONTAINS(o.err, "nul.py");
		proc_out_release(&o);
		free(path);
	}
	/* none of that made a store */
	CHECK(stat(db, &sb) < 0 && errno == ENOENT);
	{
		const char *args[] = {"skills", "list", "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 0);
	CHECK_CONTAINS(o.out, "no skills in the store");
	proc_out_release(&o);
	CHECK(stat(db, &sb) < 0 && errno == ENOENT);
	free(db);
}

/* The file is parsed, never run: top-level code that would leave a mark
 * leaves none. */
TEST(add_never_runs_the_file)
{
	char *db = tpath("rlm.db"), *mark = tpath("ran"), *path = tpath("trap.py"), *src;
	struct proc_out o;
	struct stat sb;
	src = xasprintf("open(%s%s%s, 'w').write('ran')\n"
			"import os\nos.system('touch %s')\n\n"
			"def trap(n: int) -> int:\n    \"\"\"Harmless.\"\"\"\n    return n\n",
			"'", mark, "'", mark);
	write_file(path, src, strlen(src));
	o = add(db, path, NULL, NULL, NULL, NULL);
	CHECK_MSG(o.status == 0, "%s", o.err);
	CHECK_CONTAINS(o.out, "added trap@1");
	proc_out_release(&o);
	CHECK_MSG(stat(mark, &sb) < 0 && errno == ENOENT, "the file was run");
	free(src);
	free(path);
	free(mark);
	free(db);
}

/* Files of other shapes: the system's own Python library (a module of
 * several functions, --entry picks one), CRLF line ends and tabs, a long
 * line, string and typing annotations, keyword-only and positional-only
 * parameters. */
TEST(add_reads_real_and_odd_files)
{
	char *db = tpath("rlm.db"), *path;
	const char *py[] = {"/usr/bin/python3", "-I", "-c",
			    "import bisect, sys; sys.stdout.write(bisect.__file__)", NULL};
	struct proc_out o, b;
	cJSON *j, *props;
	char *src, *long_line;

	CHECK_INT(proc_run(py, NULL, NULL, 30, &b), 0);
	CHECK_INT(b.status, 0);
	o = add(db, b.out, "--entry", "bisect_left", "--name", "bisect.left");
	CHECK_MSG(o.status == 0, "%s", o.err);
	CHECK_CONTAINS(o.out, "added bisect.left@1");
	CHECK_CONTAINS(o.out, "bisect_left(a, x, lo=0, hi=None, *, key=None)");
	proc_out_release(&o);
	{
		const char *args[] = {"skills",	 "show", "bisect.left", "--json",
				      "--cache", db,	 NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 0);
	j = json_parse(o.out, strlen(o.out));
	CHECK(j);
	CHECK_STR(json_str(j, "entry"), "bisect_left");
	CHECK_CONTAINS(json_str(j, "description"), "Return the index where to insert item x");
	props = json_get(json_get(j, "inputs"), "properties");
	CHECK_INT(cJSON_GetArraySize(props), 5);
	CHECK_INT(json_num(json_get(props, "lo"), "default", -1), 0);
	CHECK(cJSON_IsNull(json_get(json_get(props, "hi"), "default")));
	CHECK_INT(cJSON_GetArraySize(json_get(json_get(j, "inputs"), "required")), 2);
	CHECK_CONTAINS(json_str(j, "source"), "def insort_right"); /* the whole file */
	cJSON_Delete(j);
	proc_out_release(&o);
	proc_out_release(&b);

	path = tpath("odd.py");
	long_line = xmalloc(20001);
	memset(long_line, 'x', 20000);
	long_line[20000] = '\0';
	src = xasprintf("# -*- coding: utf-8 -*-\r\nfrom typing import List\r\n"
			"PAD = '%s'\r\n\r\n"
			"def odd(a: 'int', b: List[str], /, c: dict = {'k': [1, 2]}, *rest,\r\n"
			"\tflag: bool, scale: float = 1e3, **kw) -> list:\r\n"
			"\t\"\"\"  Spread over\r\n\ttwo lines, naïve ☃.\r\n\r\n\tMore.\"\"\"\r\n"
			"\treturn [a, b, c, flag, scale]\r\n",
			long_line);
	write_file(path, src, strlen(src));
	o = add(db, path, "--json", NULL, NULL, NULL);
	CHECK_MSG(o.status == 0, "%s", o.err);
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "%s", o.out);
	CHECK_STR(json_str(j, "signature"),
		  "(a: 'int', b: List[str], /, c: dict = {'k': [1, 2]}, *rest, flag: bool, "
		  "scale: float = 1000.0, **kw) -> list");
	cJSON_Delete(j);
	proc_out_release(&o);
	{
		const char *args[] = {"skills", "show", "odd@1", "--json", "--cache", db, NULL};
		o = rlm(args);
	}
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(j, "%s %s", o.out, o.err);
	CHECK_STR(json_str(j, "description"), "Spread over two lines, naïve ☃.");
	props = json_get(json_get(j, "inputs"), "properties");
	CHECK_STR(json_str(json_get(props, "a"), "type"), "integer");
	CHECK_STR(json_str(json_get(props, "b"), "type"), "array");
	CHECK_STR(json_str(json_get(props, "c"), "type"), "object");
	CHECK_STR(json_str(json_get(props, "flag"), "type"), "boolean");
	CHECK_STR(json_str(json_get(props, "scale"), "type"), "number");
	CHECK(!json_get(props, "rest") && !json_get(props, "kw"));
	CHECK_STR(json_str(json_get(j, "outputs"), "type"), "array");
	CHECK_CONTAINS(json_str(j, "source"), long_line);
	cJSON_Delete(j);
	proc_out_release(&o);
	free(src);
	free(long_line);
	free(path);
	free(db);
}

TEST(import_refuses_a_bad_file_whole)
{
	char *db = tpath("rlm.db"), *path = tpath("in.jsonl");
	const char *good =
	    "{\"name\":\"g\",\"entry\":\"g\",\"source\":\"def g():\\n    return 1\\n\","
	    "\"description\":\"one\"}\n";
	char *text;
	struct proc_out o;
	struct stat sb;
	text = xasprintf("%s\n{\"name\":\"h\",\"source\":\"def h(): pass\"}\n", good);
	write_file(path, text, strlen(text));
	{
		const char *args[] = {"skills", "import", path, "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 1);
	CHECK_CONTAINS(o.err, "in.jsonl' line 3: \"entry\": missing");
	proc_out_release(&o);
	CHECK(stat(db, &sb) < 0 && errno == ENOENT); /* nothing written */
	free(text);
	text = xasprintf("%snot json\n", good);
	write_file(path, text, strlen(text));
	{
		const char *args[] = {"skills", "import", path, "--cache", db, NULL};
		o = rlm(args);
	}
	CHECK_INT(o.status, 1);
	CHECK_CONTAINS(o.err, "line 2: not a JSON object");
	proc_out_release(&o);
	free(text);
	/* the good line alone goes in; again, it is there already */
	write_file(path, good, strlen(good));
	for (int i = 0; i < 2; i++) {
		const char *args[] = {"skills", "import", path, "--cache", db, NULL};
		o = rlm(args);
		CHECK_MSG(o.status == 0, "%s", o.err);
		CHECK_CONTAINS(o.out, i ? "0 added, 1 unchanged" : "1 added, 0 unchanged");
		proc_out_release(&o);
	}
	free(path);
	free(db);
}

/* A store of schema 1 made by an older rlm: `rlm skills list` opens it
 * for writing (a read-only open cannot migrate) and lists nothing; then
 * add works on it. */
TEST(cli_migrates_an_older_store)
{
	char *db = tpath("old.db"), *py = tpath("one.py");
	const char *src = "def one() -> int:\n    \"\"\"One.\"\"\"\n    return 1\n";
	sqlite3 *h = raw_open(db);
	struct proc_out o;
	CHECK_INT(
	    raw_exec(h,
		     "PRAGMA journal_mode = WAL;"
		     "CREATE TABLE calls(key BLOB PRIMARY KEY, model TEXT, text TEXT,"
		     " finish TEXT, input_tokens INTEGER, output_tokens INTEGER,"
		     " cached_tokens INTEGER, cache_write_tokens INTEGER, cost REAL,"
		     " created INTEGER, hits INTEGER NOT NULL DEFAULT 0,"
		     " last_hit INTEGER NOT NULL DEFAULT 0);"
		     "CREATE TABLE results(key BLOB PRIMARY KEY, answer TEXT, stop TEXT,"
		     " usage_json TEXT, cost REAL, calls INTEGER, created INTEGER,"
		     " hits INTEGER NOT NULL DEFAULT 0, last_hit INTEGER NOT NULL DEFAULT 0);"
		     "CREATE TABLE runs(id TEXT PRIMARY KEY, created INTEGER, ended INTEGER,"
		     " status TEXT, question TEXT, context_digest TEXT, context_bytes INTEGER,"
		     " context_source TEXT, config_json TEXT, note_json TEXT, answer TEXT,"
		     " result_json TEXT, resumed_from TEXT, pid INTEGER, pid_start INTEGER);"
		     "CREATE TABLE events(run TEXT, seq INTEGER, t_ns INTEGER, node INTEGER,"
		     " parent INTEGER, depth INTEGER, iteration INTEGER, kind TEXT, text TEXT,"
		     " data_json TEXT, PRIMARY KEY(run, seq));"
		     "PRAGMA user_version = 1;",
		     NULL),
	    SQLITE_OK);
	sqlite3_close(h);
	{
		const char *args[] = {"skills", "list", "--store", db, NULL};
		o = rlm(args);
	}
	CHECK_MSG(o.status == 0, "%s", o.err);
	CHECK_CONTAINS(o.out, "no skills in the store");
	proc_out_release(&o);
	h = raw_open(db);
	CHECK_INT(raw_int(h, "PRAGMA user_version"), 2);
	sqlite3_close(h);
	write_file(py, src, strlen(src));
	o = add(db, py, NULL, NULL, NULL, NULL);
	CHECK_MSG(o.status == 0, "%s", o.err);
	CHECK_CONTAINS(o.out, "added one@1");
	proc_out_release(&o);
	free(py);
	free(db);
}

/* An export of a store where a name was retired brings the retirement
 * along to the store it is imported into. */
TEST(import_keeps_a_retirement)
{
	char *db = tpath("a.db"), *db2 = tpath("b.db"), *py = tpath("two.py");
	char *ex = tpath("ex.jsonl");
	const char *src = "def two() -> int:\n    \"\"\"Two.\"\"\"\n    return 2\n";
	const char *rm[] = {"skills", "rm", "two", "--cache", db, NULL};
	const char *exp[] = {"skills", "export", ex, "--cache", db, NULL};
	const char *imp[] = {"skills", "import", ex, "--cache", db2, NULL};
	const char *ls[] = {"skills", "list", "--all", "--json", "--cache", db2, NULL};
	struct proc_out o;
	cJSON *j;
	write_file(py, src, strlen(src));
	o = add(db, py, NULL, NULL, NULL, NULL);
	CHECK_MSG(o.status == 0, "%s", o.err);
	proc_out_release(&o);
	o = rlm(rm);
	CHECK_INT(o.status, 0);
	proc_out_release(&o);
	o = rlm(exp);
	CHECK_INT(o.status, 0);
	proc_out_release(&o);
	o = rlm(imp);
	CHECK_MSG(o.status == 0, "%s", o.err);
	CHECK_CONTAINS(o.out, "added two@1 (line 1)\nretired two");
	proc_out_release(&o);
	o = rlm(ls);
	j = json_parse(o.out, strlen(o.out));
	CHECK(j && cJSON_GetArraySize(j) == 1);
	CHECK(cJSON_IsTrue(json_get(cJSON_GetArrayItem(j, 0), "retired")));
	cJSON_Delete(j);
	proc_out_release(&o);
	free(ex);
	free(py);
	free(db);
	free(db2);
}

/* The command is listed, explains itself, and says what is wrong with a
 * command line. */
TEST(help_and_usage_errors)
{
	static const struct {
		const char *a[6];
		int status;
		const char *out, *err;
	} cases[] = {
	    {{"--help"}, 0, "  skills      the skills in the store", ""},
	    {{"skills", "--help"}, 0, "usage: rlm skills COMMAND", ""},
	    {{"skills", "add", "--help"}, 0, "never run", ""},
	    {{"skills"}, 2, "", "usage: rlm skills COMMAND"},
	    {{"skills", "nope"}, 2, "", "unknown skills command 'nope'"},
	    {{"skills", "show"}, 2, "", "skills show needs NAME[@V]"},
	    {{"skills", "list", "extra"}, 2, "", "unexpected argument 'extra'"},
	    {{"skills", "list", "--entry", "f"}, 2, "", "are options of skills add"},
	    {{"skills", "show", "x", "--all"}, 2, "", "--all is an option of skills list"},
	    {{"skills", "export", "--json"}, 2, "", "export writes JSON already"},
	    {{"skills", "rm", "x@2"}, 2, "", "versions are never removed"},
	    {{"skills", "add"}, 2, "", "skills add needs FILE.py"},
	    {{"skills", "add", "--name"}, 2, "", "option '--name' needs a value"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct proc_out o = rlm(cases[i].a);
		CHECK_MSG(o.status == cases[i].status, "%s %s: exit %d: %s", cases[i].a[0],
			  cases[i].a[1] ? cases[i].a[1] : "", o.status, o.err);
		CHECK_CONTAINS(o.out, cases[i].out);
		CHECK_CONTAINS(o.err, cases[i].err);
		proc_out_release(&o);
	}
}
