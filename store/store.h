/* SPDX-License-Identifier: MIT */
/* store/store.h -- the SQLite store: the cache of model calls and of child
 * RLM results, the record of every run (a solve) and its events, and what
 * resume needs.
 *
 * DESIGN
 * One database file (default $XDG_CACHE_HOME/rlm/rlm.db, else
 * ~/.cache/rlm/rlm.db; RLM_CACHE or --cache PATH) in WAL mode with
 * synchronous=NORMAL: readers never wait for the writer, a commit is one
 * append to the WAL, and a process killed at any point (kill -9) leaves
 * every committed transaction whole. Writes go through one connection under
 * a mutex (SQLite allows one writer at a time anyway), each in its own
 * transaction, so a call's answer is on disk before the solve uses it:
 * a run killed and resumed never pays for a call twice. Reads use a pool of
 * read-only connections, one per thread at a time, so lookups from the
 * call pool's 64 workers run in parallel with the writer.
 *
 * Keys are 128-bit XXH3 hashes (libxxhash) of length-prefixed fields under
 * a domain string ("call/1", "result/1"), so no two different field lists
 * hash the same input and a format change is a new domain, never a wrong
 * hit. A call's key covers the provider kind, the model (for the
 * simulator, its configuration; else its name, extra JSON and set of
 * endpoints: what llm_model_cache_id says, given as one string), every
 * message (role and text), the sampling parameters and the extra JSON:
 * whatever changes the answer, and nothing that does not (the API key, the
 * order of the endpoints, timeouts).
 *
 * The store knows nothing of the model layer: a call comes in as its own
 * plain structs (struct store_call_req, struct store_reply, struct
 * store_usage), and rlm/ converts the model layer's calls to them and back
 * (rlm_store_call_key, rlm_store_call_get, rlm_store_call_put in
 * rlm/rlm.h).
 *
 * Schema (version 2, in PRAGMA user_version):
 *   calls(key BLOB PRIMARY KEY, model TEXT, text TEXT, finish TEXT,
 *         input_tokens, output_tokens, cached_tokens, cache_write_tokens,
 *         cost REAL, created INTEGER (unix ms), hits INTEGER, last_hit INTEGER)
 *   results(key BLOB PRIMARY KEY, answer TEXT, stop TEXT, usage_json TEXT,
 *         cost REAL, calls INTEGER, created, hits, last_hit)
 *   runs(id TEXT PRIMARY KEY, created, ended, status TEXT, question TEXT,
 *        context_digest TEXT, context_bytes INTEGER, context_source TEXT,
 *        config_json TEXT, note_json TEXT, answer TEXT, result_json TEXT,
 *        resumed_from TEXT, pid INTEGER, pid_start INTEGER (the process that
 *        runs it: a "running" row whose process is gone is "interrupted"))
 *   indexes runs_created, runs_digest
 * Hit counts are kept in memory and written with the next write, at
 * close, or by a lookup once 4096 keys or a second old, but only if the
 * writer is free at that moment: a lookup never waits for a writer (its
 * mutex or another process's lock). A kill can lose a count, never an
 * answer.
 *   events(run TEXT, seq INTEGER, t_ns INTEGER, node INTEGER, parent
 *          INTEGER, depth INTEGER, iteration INTEGER, kind TEXT, text TEXT,
 *          data_json TEXT, PRIMARY KEY(run, seq))
 *   skills(name TEXT, version INTEGER, digest TEXT, entry TEXT, description
 *          TEXT, signature TEXT, inputs_json TEXT, outputs_json TEXT, source
 *          TEXT, created INTEGER, PRIMARY KEY(name, version)) (version 2; a
 *          trigger refuses any UPDATE of a row: versions are immutable)
 *   skill_names(name TEXT PRIMARY KEY, retired INTEGER, retired_at INTEGER)
 * Skills are the user's code, not a cache: store_prune and store_clear
 * leave them alone.
 * A database with a newer user_version is refused (RLM_ESTORE, naming the
 * file); an older one is migrated in a transaction.
 *
 * Errors: every function that can fail returns 0 (or 1 for a hit) or a
 * negative code, RLM_ESTORE for the database's own trouble, with err
 * naming the file and SQLite's words ("database disk image is malformed",
 * "database is locked"). A locked database is waited on for busy_timeout,
 * then reported; a corrupt one is reported, never crashed on.
 *
 * Threads: every function may be called from any thread once the store is
 * open; store_close after all of them have returned.
 */
#ifndef RLM_STORE_H
#define RLM_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/common.h"

struct cJSON;
struct store;

/* ---- keys ---- */

struct store_key {
	unsigned char b[16];
};

/* A key being built: fields are appended with their lengths. */
struct store_kb {
	void *st; /* XXH3_state_t, owned */
};

void store_kb_init(struct store_kb *kb, const char *domain);
void store_kb_str(struct store_kb *kb, const char *s, size_t len); /* s may be NULL: "none" */
void store_kb_i64(struct store_kb *kb, int64_t v);
void store_kb_f64(struct store_kb *kb, double v);
/* Finish (and free the state). */
void store_kb_final(struct store_kb *kb, struct store_key *out);
/* The digest of a buffer: one XXH3-128 of the bytes. */
void store_digest(const void *p, size_t len, struct store_key *out);
/* 32 lowercase hex digits and a NUL. */
void store_key_hex(const struct store_key *k, char out[33]);

/* ---- a model call, in the store's terms ---- */

/* What a call's tokens were, and what a hit did not spend. */
struct store_usage {
	int64_t input_tokens;       /* prompt tokens, cached ones included */
	int64_t output_tokens;      /* completion tokens */
	int64_t cached_tokens;      /* prompt tokens read from the provider's cache */
	int64_t cache_write_tokens; /* prompt tokens written to it */
};

/* One message of a call, as its key sees it. */
struct store_msg {
	int role;         /* the caller's number for the role (the model layer's
			   * enum: 0 system, 1 user, 2 assistant), hashed as is */
	const char *text; /* borrowed; may hold NULs */
	size_t len;       /* of text */
};

/* What a model call's key is made of: whatever changes its answer. All
 * borrowed, for the length of store_call_key. */
struct store_call_req {
	const char *model_id;         /* the model's identity for caching (its
				       * provider, name, endpoints and extra
				       * JSON), or NULL for no model */
	const struct store_msg *msgs; /* the messages, in order */
	size_t n_msgs;                /* of msgs */
	int max_tokens;               /* 0: the provider's default */
	double temperature;           /* < 0: not sent (every negative is one key) */
	double top_p;                 /* < 0: not sent (likewise) */
	const char *const *stop;      /* stop sequences (an entry may be NULL) */
	size_t n_stop;                /* of stop */
	const char *extra_json;       /* merged into the request body, or NULL */
};

/* A stored answer to a call: what store_call_get fills and store_call_put
 * keeps. */
struct store_reply {
	char *text;               /* the reply, may hold NULs; from store_call_get
				   * malloc'd (the caller's), to store_call_put
				   * borrowed and required */
	size_t len;               /* of text */
	char *finish;             /* the finish reason ("stop", "length", ...) or
				   * NULL; owned like text */
	struct store_usage usage; /* what the call spent */
	double cost;              /* USD, all billed attempts */
};

/* The key of a model call: "call/1" over its model id, its messages (the
 * count, then each role and text) and its parameters. The bytes hashed are
 * those of every store made so far: a change is a new domain. */
void store_call_key(const struct store_call_req *c, struct store_key *out);
/* Free a reply's strings (from store_call_get) and zero it. */
void store_reply_release(struct store_reply *r);

/* ---- opening ---- */

struct store_cfg {
	const char *path;       /* NULL: store_default_path() */
	bool readonly;          /* no writes (rlm runs list/show/export) */
	int busy_timeout_ms;    /* waiting on another writer; 0: 5000 */
};

/* The default path: $RLM_CACHE, else $XDG_CACHE_HOME/rlm/rlm.db, else
 * $HOME/.cache/rlm/rlm.db; malloc'd. NULL (err set) when none can be
 * formed (no HOME). */
char *store_default_path(struct rlm_err *err);
/* Open (creating the file and its directory, mode 0700, unless readonly)
 * and check or create the schema. Returns 0 or a negative code: RLM_ESTORE
 * for a file that is not a database, is corrupt, is newer, or stays
 * locked; -errno for the directory. */
#pragma GCC visibility push(default) /* exported by librlm.so (docs/api.md) */
int store_open(const struct store_cfg *cfg, struct store **out, struct rlm_err *err);
void store_close(struct store *s);
#pragma GCC visibility pop
const char *store_path(const struct store *s);

/* ---- the call cache ---- */

/* The answer stored under k: on a hit fill *out (its strings are the
 * caller's: store_reply_release) and return 1; 0 on a miss; a negative
 * code when the lookup failed (err says why; the caller goes on as for a
 * miss). *out is zeroed first, never freed. Counts the hit. */
int store_call_get(struct store *s, const struct store_key *k, struct store_reply *out,
		   struct rlm_err *err);
/* Store r, the answer of a successful call to model (its name, kept in
 * the row for whoever reads the table; NULL: none), under k, replacing any
 * older answer. RLM_EINVAL when r has no text. */
int store_call_put(struct store *s, const struct store_key *k, const char *model,
		   const struct store_reply *r, struct rlm_err *err);

/* ---- the result cache (child RLMs) ---- */

struct store_result {
	char *answer;            /* owned */
	char *stop;              /* "answer", ...; owned */
	struct store_usage usage; /* of the whole subtree */
	double cost;             /* USD, of the whole subtree */
	int64_t calls;           /* model calls of the subtree */
	int64_t sub_calls;       /* its sub-calls (rlm_result.sub_calls) */
	int64_t nodes;           /* child nodes under it */
	bool found;              /* rlm_result.found */
	char *sources;           /* owned, or NULL: the answer's sources, a JSON
				  * array, kept as given */
};
int store_result_get(struct store *s, const struct store_key *k, struct store_result *out,
		     struct rlm_err *err);
int store_result_put(struct store *s, const struct store_key *k, const struct store_result *r,
		     struct rlm_err *err);
void store_result_release(struct store_result *r);

/* ---- runs and events ---- */

struct store_run {
	char id[40];             /* "20261123-181500-3fa9c1": time and random */
	int64_t created_ms;      /* unix ms */
	int64_t ended_ms;        /* 0: not ended (running, or killed) */
	const char *status;      /* "running", "done" (a whole answer),
				  * "incomplete" (an answer, NONE or real,
				  * with failures under it), "stopped: LIMIT"
				  * (a limit other than time or cancel, e.g.
				  * "stopped: max_iterations"), "interrupted"
				  * (cancelled or timed out: resumable),
				  * "failed" */
	const char *question;
	const char *context_digest; /* 32 hex digits */
	int64_t context_bytes;
	const char *context_source; /* the path given, "-", or NULL */
	const char *config_json; /* the options that shape the answer, a JSON object
				  * (what store_run_unfinished compares) */
	const char *note_json;   /* how it was run (the command line), a JSON
				  * object or NULL; loaded as "note" */
	const char *answer;      /* when ended */
	const char *result_json; /* the solve's --json object, when ended */
	const char *resumed_from; /* a run id, or NULL */
};

/* Record a new run (status "running"); fills r->id and r->created_ms. */
int store_run_begin(struct store *s, struct store_run *r, struct rlm_err *err);
/* Its end: status, answer and result_json (r->ended_ms is set). */
int store_run_end(struct store *s, const struct store_run *r, struct rlm_err *err);

struct store_event {
	int64_t t_ns;            /* since the run began */
	int node;                /* 0 the root */
	int parent;              /* the parent node, -1 for the root */
	int depth;
	int iteration;           /* 1-based; 0: none */
	const char *kind;        /* "reply", "code", "output" (data: error_at
				  * when the code raised), "notice", "sandbox",
				  * "call" (a model call: data has key, role,
				  * cached, ok, usage, cost, ms, prompt_chars; a
				  * sub-call's model, prompt, response or error,
				  * cut: docs/store.md), "child" (a child
				  * node starts: text its question), "child_end"
				  * (text its answer; data its stop, usage),
				  * "end" (the run's result) */
	const char *text;        /* may be NULL */
	size_t len;
	const char *data_json;   /* a JSON object, or NULL */
};
/* Append an event to a run; seq is assigned in order of arrival. */
int store_event_add(struct store *s, const char *run, const struct store_event *e,
		    struct rlm_err *err);

/* A run with all of its events, as one JSON object:
 *   {"id","created_ms","ended_ms","status","question","context_digest",
 *    "context_bytes","context_source","config":{...},"note":{...}|null,"answer",
 *    "result":{...}|null,"resumed_from",
 *    "resumed_by":[ids of the runs that resume it],
 *    "memo_runs":[ids of the runs answered from the memo of its answer
 *                 (their result's memo.run is its id)],
 *    "events":[{"seq","t_ns","node","parent","depth","iteration","kind",
 *               "text","data":{...}|null}, ...]}
 * (what the exporters take). NULL with err when there is no such run; id
 * may be a unique prefix. The caller frees it with cJSON_Delete. */
struct cJSON *store_run_load(struct store *s, const char *id, struct rlm_err *err);
/* Runs, newest first, at most limit (0: all): a JSON array of objects
 * without "events", "config" and "result", but with "calls" (the
 * result's calls.total), "stop" and "complete" (the result's; each null
 * while a run has no result). */
struct cJSON *store_runs_list(struct store *s, size_t limit, struct rlm_err *err);
/* The newest run of the same question, context digest and config that did
 * not end ("running" and not alive, or "interrupted"), into id; 1 found, 0
 * none. */
int store_run_unfinished(struct store *s, const char *question, const char *context_digest,
			 const char *config_json, char id[40], struct rlm_err *err);

/* The run a whole solve's memo answer came from: the newest run of the
 * same question, context digest and config, other than not_id (NULL:
 * none), that ended "done" with stop "answer" and was not itself answered
 * from the memo; its id into id and its start (unix ms) into *created_ms
 * (may be NULL). 1 found, 0 none (pruned, or made by a store older than
 * the runs table), or a negative code. */
int store_run_origin(struct store *s, const char *question, const char *context_digest,
		     const char *config_json, const char *not_id, char id[40], int64_t *created_ms,
		     struct rlm_err *err);

/* The recorded result of run id (its exact id) as a JSON object, without
 * its events: NULL with err when there is no such run or it has no result
 * (RLM_ENOTFOUND) or the read failed. The caller frees it. */
struct cJSON *store_run_result(struct store *s, const char *id, struct rlm_err *err);

/* ---- skills ----
 * Versioned, immutable Python functions (docs/tools.md): a name has
 * versions 1, 2, ...; a version, once stored, is never changed. A put of
 * content equal to the name's latest version stores nothing; other
 * content becomes version latest + 1, the read of the latest and the
 * insert in one BEGIN IMMEDIATE transaction, so that two processes putting
 * at once get distinct versions. A name is retired (rlm skills rm) rather
 * than deleted: a list leaves it out, a get of the bare name fails, but
 * each of its versions can still be asked for by number (name@V), and a
 * later put revives it.
 *
 * The digest is XXH3-128 (32 lowercase hex digits) under the domain
 * "skill/1" over name, source, entry, description, inputs, outputs and
 * signature, the JSON ones in their compact form (store_skill_digest):
 * the same function saved twice has one digest, wherever it was saved. */

#define STORE_SKILL_NAME_MAX   64	  /* bytes of a name */
#define STORE_SKILL_SOURCE_MAX (1 << 20)  /* bytes of a source */
#define STORE_SKILL_TEXT_MAX   (64 << 10) /* of a description, signature, inputs or outputs */

struct store_skill {
	char *name;          /* [A-Za-z_][A-Za-z0-9_.-]{0,63} */
	int version;         /* 1, 2, ... per name (ignored by put) */
	char digest[65];     /* XXH3-128 hex: 32 digits and a NUL (put fills
			      * nothing here: see store_skill_digest) */
	char *source;        /* the Python source, defining entry */
	char *entry;         /* the function's name, a Python identifier */
	char *description;   /* what it does, for list and search ("" allowed) */
	char *signature;     /* "(a: int, b: int = 2) -> int" ("" allowed) */
	char *inputs_json;   /* a JSON object: the inputs' JSON Schema
			      * ({"type":"object","properties":{...},"required":[...]}
			      * from rlm skills add); NULL on put: {} */
	char *outputs_json;  /* a JSON value (the output's schema), or NULL */
	int64_t created_ms;  /* unix ms; on put 0 means now (an import keeps the
			      * original's) */
	int versions;        /* in list results: how many versions the name has */
	bool retired;        /* the name is retired */
};

/* Check in (the rules above and in the struct) and fill its digest; JSON
 * members are read as JSON and hashed compact. RLM_EINVAL (err naming the
 * field) or RLM_ETOOBIG. Called by put; exported so that an import can
 * tell a version it holds already. */
int store_skill_digest(const struct store_skill *in, char digest[65], struct rlm_err *err);
/* Store in as a new version of in->name: *version gets the version that
 * holds its content (the latest when *unchanged, else the new one). Same
 * content as the latest version: *unchanged, nothing stored (a retired
 * name is revived either way). RLM_EINVAL / RLM_ETOOBIG for a bad skill,
 * RLM_ESTORE. version and unchanged may be NULL. */
int store_skill_put(struct store *s, const struct store_skill *in, int *version, bool *unchanged,
		    struct rlm_err *err);
/* Version `version` of name (0: the latest) into *out (zeroed first; the
 * caller releases it with store_skill_release); out->versions is the
 * name's count. RLM_ENOTFOUND: no such name ("no skill 'x'"), no such
 * version, or the bare name of a retired skill ("skill 'x' was retired");
 * a numbered version of a retired name is found. */
int store_skill_get(struct store *s, const char *name, int version, struct store_skill *out,
		    struct rlm_err *err);
/* The latest version of each name, by name; retired names only with
 * retired_too. *out is the caller's (store_skills_free); *n may be 0. */
int store_skill_list(struct store *s, bool retired_too, struct store_skill **out, size_t *n,
		     struct rlm_err *err);
/* Every version of name, oldest first, retired or not; RLM_ENOTFOUND when
 * it has none. */
int store_skill_versions(struct store *s, const char *name, struct store_skill **out, size_t *n,
			 struct rlm_err *err);
/* Retire name (again is no error); RLM_ENOTFOUND when it has no version. */
int store_skill_retire(struct store *s, const char *name, struct rlm_err *err);
/* Free k's strings and zero it; NULL is a no-op. */
void store_skill_release(struct store_skill *k);
/* Release each of v[0..n) and free v. */
void store_skills_free(struct store_skill *v, size_t n);
/* Parse "name" or "name@V" into name[0..cap) and *version (0 when not
 * given). RLM_EINVAL, with err, for a bad name or version. */
int store_skill_ref(const char *ref, char *name, size_t cap, int *version, struct rlm_err *err);
/* k as a JSON object: {"name","version","digest","entry","description",
 * "signature","inputs":{...},"outputs":...|null,"created_ms","retired"},
 * plus "versions" when k->versions > 0, plus "source" with source: the
 * shape of rlm skills show --json, export (one line each), and GET
 * /v1/skills. The caller frees it. */
struct cJSON *store_skill_json(const struct store_skill *k, bool source);
/* One version as rlm skills show --json and GET /v1/skills/NAME[@V] give
 * it: store_skill_json with "source", "versions" the list of the name's
 * versions [{"version","digest","created_ms"}, ...] and "latest" the
 * newest's number. ref is "name" (the latest; a retired name is not
 * found) or "name@V". NULL with err (RLM_ENOTFOUND, RLM_EINVAL, ...). The
 * caller frees it. */
struct cJSON *store_skill_show(struct store *s, const char *ref, struct rlm_err *err);
/* The reverse, for import: j's members into *out (zeroed first, the
 * caller's to release); digest and version are not read. RLM_EINVAL with
 * err naming a missing or mistyped member. */
int store_skill_from_json(const struct cJSON *j, struct store_skill *out, struct rlm_err *err);

/* ---- upkeep ---- */

struct store_stats {
	int64_t calls, results, runs, events;
	int64_t call_hits, result_hits;   /* over the life of the file */
	int64_t bytes;                    /* the file and its WAL */
	struct store_usage saved_usage;   /* what the hits did not spend */
	double saved_cost;
};
int store_stats(struct store *s, struct store_stats *out, struct rlm_err *err);
/* Delete cached calls and results not used (created or hit) in the last
 * max_age_ms, and runs ended that long ago with their events, in one
 * transaction. *removed counts rows. The file keeps its size: see
 * store_shrink. */
int store_prune(struct store *s, int64_t max_age_ms, int64_t *removed, struct rlm_err *err);
/* Delete calls, results, runs and events (not skills), in one transaction. */
int store_clear(struct store *s, struct rlm_err *err);
/* Give the space of deleted rows back (VACUUM, and the WAL truncated).
 * It rewrites the file, so it needs the write lock for a while: another
 * process's write past the busy timeout makes it fail (RLM_ESTORE, the
 * rows deleted before stay deleted). */
int store_shrink(struct store *s, struct rlm_err *err);

#endif
