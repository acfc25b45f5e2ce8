/* SPDX-License-Identifier: MIT */
/* store/store.c -- the store's keys, its opening and connections, and the
 * caches of model calls and child results.
 *
 * DESIGN
 * Writes take the one writer connection under wmu and run in a BEGIN
 * IMMEDIATE transaction of their own: in WAL mode the commit is an append
 * to the WAL, so once a put returns its row survives a kill -9. Reads take
 * a connection from a pool of read-only ones (opened on demand, at most
 * STORE_MAX_READERS, each used by one thread at a time), so lookups never
 * wait for the writer. Every connection keeps its statements prepared.
 *
 * A hit is counted without a write of its own: rewriting a row of the
 * calls table is a page (4 KiB) in the WAL, five times the cost of the
 * lookup. The lookup adds it to a table in memory (one entry per key), and
 * the table is written with the next write transaction (a solve writes an
 * event per step), and at close. Once it holds STORE_HIT_KEYS keys or its
 * oldest hit is STORE_HIT_AGE_NS old, a lookup writes it in a transaction
 * of its own, but only when that costs no wait (the writer mutex free, no
 * other process holding the lock): lookups never wait for a writer. A
 * process killed meanwhile loses those hit counts, never an answer; a hit
 * that finds the table full while the writer is busy may not be counted.
 */
#include "store_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

/* ---- keys ---- */

/* A tag before every field, so that types, NULL and lengths cannot run into
 * each other: ("ab","c") and ("a","bc") hash different inputs. */
enum { KB_NULL = 0x4e, KB_STR = 0x53, KB_I64 = 0x49, KB_F64 = 0x46 };

static void kb_put(struct store_kb *kb, unsigned char tag, uint64_t v, const void *p, size_t n)
{
	unsigned char h[9];
	h[0] = tag;
	for (int i = 0; i < 8; i++)
		h[1 + i] = (unsigned char)(v >> (8 * i));
	XXH3_128bits_update(kb->st, h, sizeof(h));
	if (n)
		XXH3_128bits_update(kb->st, p, n);
}

void store_kb_init(struct store_kb *kb, const char *domain)
{
	kb->st = XXH3_createState();
	if (!kb->st)
		abort(); /* a small allocation, like xmalloc */
	XXH3_128bits_reset(kb->st);
	store_kb_str(kb, domain, domain ? strlen(domain) : 0);
}

void store_kb_str(struct store_kb *kb, const char *s, size_t len)
{
	if (!s)
		kb_put(kb, KB_NULL, 0, NULL, 0);
	else
		kb_put(kb, KB_STR, (uint64_t)len, s, len);
}

void store_kb_i64(struct store_kb *kb, int64_t v)
{
	kb_put(kb, KB_I64, (uint64_t)v, NULL, 0);
}

void store_kb_f64(struct store_kb *kb, double v)
{
	uint64_t bits;
	if (v == 0)
		v = 0; /* -0.0 is 0.0 */
	if (v != v)
		bits = 0x7ff8000000000000ULL; /* one NaN */
	else
		memcpy(&bits, &v, sizeof(bits));
	kb_put(kb, KB_F64, bits, NULL, 0);
}

void store_kb_final(struct store_kb *kb, struct store_key *out)
{
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(kb->st));
	memcpy(out->b, c.digest, sizeof(out->b));
	XXH3_freeState(kb->st);
	kb->st = NULL;
}

void store_digest(const void *p, size_t len, struct store_key *out)
{
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits(p, len));
	memcpy(out->b, c.digest, sizeof(out->b));
}

void store_key_hex(const struct store_key *k, char out[33])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < 16; i++) {
		out[2 * i] = hex[k->b[i] >> 4];
		out[2 * i + 1] = hex[k->b[i] & 15];
	}
	out[32] = '\0';
}

void store_call_key(const struct store_call_req *c, struct store_key *out)
{
	const char *id = c->model_id;
	struct store_kb kb;
	store_kb_init(&kb, "call/1");
	store_kb_str(&kb, id, id ? strlen(id) : 0);
	store_kb_i64(&kb, (int64_t)c->n_msgs);
	for (size_t i = 0; i < c->n_msgs; i++) {
		store_kb_i64(&kb, (int64_t)c->msgs[i].role);
		store_kb_str(&kb, c->msgs[i].text, c->msgs[i].len);
	}
	store_kb_i64(&kb, c->max_tokens);
	/* Any negative value means "not sent": one key for all of them. */
	store_kb_f64(&kb, c->temperature < 0 ? -1 : c->temperature);
	store_kb_f64(&kb, c->top_p < 0 ? -1 : c->top_p);
	store_kb_i64(&kb, (int64_t)c->n_stop);
	for (size_t i = 0; i < c->n_stop; i++)
		store_kb_str(&kb, c->stop[i], c->stop[i] ? strlen(c->stop[i]) : 0);
	store_kb_str(&kb, c->extra_json, c->extra_json ? strlen(c->extra_json) : 0);
	store_kb_final(&kb, out);
}

void store_reply_release(struct store_reply *r)
{
	if (!r)
		return;
	free(r->text);
	free(r->finish);
	memset(r, 0, sizeof(*r));
}

/* ---- errors and statements ---- */

int store__fail(const struct store *s, sqlite3 *db, int rc, const char *doing,
		struct rlm_err *err)
{
	const char *why = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
	switch (rc & 0xff) {
	case SQLITE_NOTADB:
	case SQLITE_CORRUPT:
		return rlm_err_set(err, RLM_ESTORE,
				   "the store '%s' is not a database or is corrupt (%s): move it "
				   "away or pass --cache with another path",
				   s->path, why);
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return rlm_err_set(err, RLM_ESTORE,
				   "the store '%s' is locked by another process (%s) after %g s",
				   s->path, why, s->busy_ms / 1000.0);
	case SQLITE_CANTOPEN: {
		int e = db ? sqlite3_system_errno(db) : 0;
		return rlm_err_set(err, RLM_ESTORE, "cannot open the store '%s': %s%s%s%s",
				   s->path, why, e ? " (" : "", e ? strerror(e) : "", e ? ")" : "");
	}
	case SQLITE_FULL:
	case SQLITE_READONLY:
		return rlm_err_set(err, RLM_ESTORE, "cannot write the store '%s': %s", s->path,
				   why);
	default:
		return rlm_err_set(err, RLM_ESTORE, "the store '%s' failed while %s: %s", s->path,
				   doing, why);
	}
}

sqlite3_stmt *store__stmt(struct store *s, struct store_conn *c, enum store_stmt id,
			  const char *sql, struct rlm_err *err)
{
	if (!c->st[id]) {
		int rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &c->st[id],
					    NULL);
		if (rc != SQLITE_OK) {
			store__fail(s, c->db, rc, "preparing a statement", err);
			sqlite3_finalize(c->st[id]);
			c->st[id] = NULL;
		}
	}
	return c->st[id];
}

void store__done(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

int store__exec(struct store *s, struct store_conn *c, enum store_stmt id, const char *sql,
		const char *doing, struct rlm_err *err)
{
	sqlite3_stmt *st = store__stmt(s, c, id, sql, err);
	int rc;
	if (!st)
		return RLM_ESTORE;
	rc = sqlite3_step(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		rc = store__fail(s, c->db, rc, doing, err);
	else
		rc = 0;
	store__done(st);
	return rc;
}

char *store__col_str(sqlite3_stmt *st, int i)
{
	const unsigned char *p = sqlite3_column_text(st, i);
	return p ? xstrndup((const char *)p, (size_t)sqlite3_column_bytes(st, i)) : NULL;
}

int store__bind_text(sqlite3_stmt *st, int i, const char *s, size_t len)
{
	if (!s)
		return sqlite3_bind_null(st, i);
	return sqlite3_bind_text64(st, i, s, len, SQLITE_STATIC, SQLITE_UTF8);
}

/* ---- connections ---- */

static void conn_close(struct store_conn *c)
{
	if (!c)
		return;
	for (int i = 0; i < ST_MAX; i++)
		sqlite3_finalize(c->st[i]);
	sqlite3_close_v2(c->db);
	free(c);
}

/* A writer, or a reader. The readers of a read-only store open the file
 * read-write (never creating it; SQLite falls back to read-only when the
 * file is not writable) with query_only on: the last connection to close
 * then removes the WAL and its index as a writer would, so that a look at
 * the store leaves no files behind. */
static int conn_open(struct store *s, bool reader, struct store_conn **out,
		     struct rlm_err *err)
{
	struct store_conn *c = xcalloc(1, sizeof(*c));
	int flags = SQLITE_OPEN_NOMUTEX;
	int rc;
	if (!reader)
		flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	else
		flags |= s->readonly ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY;
	rc = sqlite3_open_v2(s->path, &c->db, flags, NULL);
	if (rc == SQLITE_OK && reader && s->readonly)
		rc = sqlite3_exec(c->db, "PRAGMA query_only = 1", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		rc = store__fail(s, c->db, rc, "opening", err);
		conn_close(c);
		return rc;
	}
	sqlite3_busy_timeout(c->db, s->busy_ms);
	*out = c;
	return 0;
}

struct store_conn *store__rget(struct store *s, struct rlm_err *err)
{
	struct store_conn *c;
	pthread_mutex_lock(&s->rmu);
	while (!s->rfree && s->n_readers >= STORE_MAX_READERS)
		pthread_cond_wait(&s->rcv, &s->rmu);
	if ((c = s->rfree)) {
		s->rfree = c->next;
		pthread_mutex_unlock(&s->rmu);
		return c;
	}
	s->n_readers++;
	pthread_mutex_unlock(&s->rmu);

	if (conn_open(s, true, &c, err))
		c = NULL;
	pthread_mutex_lock(&s->rmu);
	if (!c) {
		s->n_readers--;
		pthread_cond_signal(&s->rcv);
	} else {
		/* n_readers counts this one, so a slot is free. */
		for (int i = 0; i < STORE_MAX_READERS; i++)
			if (!s->rall[i]) {
				s->rall[i] = c;
				break;
			}
	}
	pthread_mutex_unlock(&s->rmu);
	return c;
}

void store__rput(struct store *s, struct store_conn *c)
{
	pthread_mutex_lock(&s->rmu);
	c->next = s->rfree;
	s->rfree = c;
	pthread_cond_signal(&s->rcv);
	pthread_mutex_unlock(&s->rmu);
}

/* ---- pending hits ---- */

/* The pending hits, handed over to the caller, who frees them; under hmu. */
static void take_hits_locked(struct store *s, struct store_hit **h, size_t *n)
{
	*n = s->n_hits;
	*h = s->hits;
	free(s->hit_slots);
	s->hits = NULL;
	s->hit_slots = NULL;
	s->n_hits = s->hit_cap = 0;
}

static void take_hits(struct store *s, struct store_hit **h, size_t *n)
{
	pthread_mutex_lock(&s->hmu);
	take_hits_locked(s, h, n);
	pthread_mutex_unlock(&s->hmu);
}

/* Write hits inside the writer's open transaction. */
static int apply_hits(struct store *s, const struct store_hit *h, size_t n, struct rlm_err *err)
{
	for (size_t i = 0; i < n; i++) {
		sqlite3_stmt *st =
			h[i].result
				? store__stmt(s, s->w, ST_RES_HIT,
					      "UPDATE results SET hits = hits + ?3, "
					      "last_hit = max(last_hit, ?2) WHERE key = ?1",
					      err)
				: store__stmt(s, s->w, ST_CALL_HIT,
					      "UPDATE calls SET hits = hits + ?3, "
					      "last_hit = max(last_hit, ?2) WHERE key = ?1",
					      err);
		int rc;
		if (!st)
			return RLM_ESTORE;
		sqlite3_bind_blob(st, 1, h[i].k.b, sizeof(h[i].k.b), SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, h[i].at);
		sqlite3_bind_int64(st, 3, h[i].n);
		rc = sqlite3_step(st);
		if (rc != SQLITE_DONE)
			rc = store__fail(s, s->w->db, rc, "counting a hit", err);
		else
			rc = 0;
		store__done(st);
		if (rc)
			return rc;
	}
	return 0;
}

static int begin_locked(struct store *s, struct rlm_err *err)
{
	return store__exec(s, s->w, ST_BEGIN_IMM, "BEGIN IMMEDIATE", "starting a write", err);
}

static int end_locked(struct store *s, int rc, struct rlm_err *err)
{
	if (!rc)
		rc = store__exec(s, s->w, ST_COMMIT, "COMMIT", "committing", err);
	if (rc && !sqlite3_get_autocommit(s->w->db))
		store__exec(s, s->w, ST_ROLLBACK, "ROLLBACK", "rolling back", NULL);
	return rc;
}

/* Write hits h[0..n) in a transaction of their own; under wmu. */
static int write_hits_locked(struct store *s, const struct store_hit *h, size_t n,
			     struct rlm_err *err)
{
	int rc;
	if (!n)
		return 0;
	rc = begin_locked(s, err);
	if (!rc)
		rc = end_locked(s, apply_hits(s, h, n, err), err);
	return rc;
}

int store__flush_hits_locked(struct store *s, struct rlm_err *err)
{
	struct store_hit *h;
	size_t n;
	int rc;
	take_hits(s, &h, &n);
	rc = write_hits_locked(s, h, n, err);
	free(h);
	return rc;
}

/* The slot of k in the table (true), or the free slot where it would go
 * (false); under hmu, the table allocated. */
static bool find_hit_locked(const struct store *s, const struct store_key *k, bool result,
			    size_t *slot)
{
	size_t mask = 2 * s->hit_cap - 1, i;
	uint64_t x;
	memcpy(&x, k->b, sizeof(x)); /* a hash already */
	for (i = (size_t)(x ^ result) & mask; s->hit_slots[i]; i = (i + 1) & mask) {
		const struct store_hit *h = &s->hits[s->hit_slots[i] - 1];
		if (h->result == result && memcmp(h->k.b, k->b, sizeof(k->b)) == 0)
			break;
	}
	*slot = i;
	return s->hit_slots[i] != 0;
}

/* Twice the room (STORE_HIT_KEYS at first), the slots (twice as many:
 * half full at most) rebuilt; under hmu. */
static void grow_hits_locked(struct store *s)
{
	size_t cap = s->hit_cap ? 2 * s->hit_cap : STORE_HIT_KEYS, slot;
	s->hits = xrealloc(s->hits, cap * sizeof(*s->hits));
	free(s->hit_slots);
	s->hit_slots = xcalloc(2 * cap, sizeof(*s->hit_slots));
	s->hit_cap = cap;
	for (size_t j = 0; j < s->n_hits; j++) {
		find_hit_locked(s, &s->hits[j].k, s->hits[j].result, &slot);
		s->hit_slots[slot] = (uint32_t)(j + 1);
	}
}

/* Add n hits of k, the last at `at`, to the table (one entry per key);
 * under hmu. The table grows while a flush is not possible, up to
 * STORE_HIT_MAX keys; returns false when it holds that many and not k
 * (nothing counted). *due: it holds STORE_HIT_KEYS keys or more, or its
 * oldest hit is STORE_HIT_AGE_NS old (and no flush failed just now). */
static bool add_hits_locked(struct store *s, const struct store_key *k, bool result, int64_t n,
			    int64_t t, int64_t at, bool *due)
{
	struct store_hit *h;
	size_t i;
	if (s->hit_cap && find_hit_locked(s, k, result, &i)) {
		h = &s->hits[s->hit_slots[i] - 1];
		goto found;
	}
	if (s->n_hits == s->hit_cap) {
		if (s->hit_cap >= STORE_HIT_MAX) {
			*due = t >= s->hits_retry_ns;
			return false;
		}
		grow_hits_locked(s);
		find_hit_locked(s, k, result, &i);
	}
	if (!s->n_hits)
		s->hits_since_ns = t;
	h = &s->hits[s->n_hits++];
	s->hit_slots[i] = (uint32_t)s->n_hits;
	h->k = *k;
	h->n = 0;
	h->at = 0;
	h->result = result;
found:
	h->n += n;
	h->at = RLM_MAX(h->at, at);
	*due = (s->n_hits >= STORE_HIT_KEYS || t - s->hits_since_ns >= STORE_HIT_AGE_NS) &&
	       t >= s->hits_retry_ns;
	return true;
}

/* Write the pending hits now if that needs no waiting: not for wmu (a
 * write of this process in progress) and not for another process's lock
 * (busy timeout 0 for this one transaction). When the lock is taken, the
 * next lookup tries again STORE_HIT_RETRY_NS later, not at once. */
static void try_flush_hits(struct store *s)
{
	struct store_hit *h;
	size_t n;
	int rc;
	if (pthread_mutex_trylock(&s->wmu) != 0)
		return;
	sqlite3_busy_timeout(s->w->db, 0);
	rc = begin_locked(s, NULL);
	sqlite3_busy_timeout(s->w->db, s->busy_ms);
	if (rc) {
		pthread_mutex_lock(&s->hmu);
		s->hits_retry_ns = time_now_ns() + STORE_HIT_RETRY_NS;
		pthread_mutex_unlock(&s->hmu);
	} else {
		struct rlm_err e = {0, ""};
		take_hits(s, &h, &n);
		if (end_locked(s, apply_hits(s, h, n, &e), &e))
			log_debug("hits not counted: %s", e.msg);
		free(h);
	}
	pthread_mutex_unlock(&s->wmu);
}

/* Count a hit in memory. The lookup that finds the table due writes it,
 * if the writer is free at that moment: a lookup never waits for a write
 * (store.h: readers never blocked). Meanwhile the table grows; a hit that
 * finds it at STORE_HIT_MAX keys, and still after that, is not counted. */
static void count_hit(struct store *s, const struct store_key *k, bool result)
{
	int64_t t = time_now_ns(), at = time_wall_ms();
	bool due = false, added;
	if (!s->w)
		return; /* read-only: nowhere to count */
	pthread_mutex_lock(&s->hmu);
	added = add_hits_locked(s, k, result, 1, t, at, &due);
	pthread_mutex_unlock(&s->hmu);
	if (!due)
		return;
	try_flush_hits(s);
	if (added)
		return;
	pthread_mutex_lock(&s->hmu);
	added = add_hits_locked(s, k, result, 1, t, at, &due);
	pthread_mutex_unlock(&s->hmu);
	if (!added)
		log_debug("a hit not counted: %d keys of hits pending", STORE_HIT_MAX);
}

/* ---- the writer's transactions ---- */

int store__wbegin(struct store *s, struct rlm_err *err)
{
	struct store_hit *h;
	size_t n;
	int rc;
	if (!s->w)
		return rlm_err_set(err, RLM_EINVAL, "the store '%s' is open read-only", s->path);
	pthread_mutex_lock(&s->wmu);
	if ((rc = begin_locked(s, err))) {
		pthread_mutex_unlock(&s->wmu);
		return rc;
	}
	take_hits(s, &h, &n);
	/* Hit counts ride along; if they fail, they are dropped, not the write. */
	if (n && apply_hits(s, h, n, NULL) && sqlite3_get_autocommit(s->w->db) &&
	    (rc = begin_locked(s, err)))
		pthread_mutex_unlock(&s->wmu);
	free(h);
	return rc;
}

int store__wcommit(struct store *s, int rc, struct rlm_err *err)
{
	return end_locked(s, rc, err);
}

int store__wend(struct store *s, int rc, struct rlm_err *err)
{
	rc = end_locked(s, rc, err);
	pthread_mutex_unlock(&s->wmu);
	return rc;
}

/* ---- opening ---- */

char *store_default_path(struct rlm_err *err)
{
	const char *e = getenv("RLM_CACHE");
	if (e && *e)
		return xstrdup(e);
	e = getenv("XDG_CACHE_HOME");
	if (e && *e == '/') /* the XDG spec: a relative path is ignored */
		return xasprintf("%s/rlm/rlm.db", e);
	e = getenv("HOME");
	if (e && *e)
		return xasprintf("%s/.cache/rlm/rlm.db", e);
	rlm_err_set(err, RLM_EINVAL,
		    "cannot find a place for the store: HOME is not set (set RLM_CACHE or pass "
		    "--cache PATH)");
	return NULL;
}

/* mkdir -p of the directory that holds path, mode 0700. */
static int make_dirs(const char *path, struct rlm_err *err)
{
	char *d = xstrdup(path), *slash = strrchr(d, '/');
	int rc = 0;
	if (slash && slash != d) {
		*slash = '\0';
		for (char *p = d + 1;; p++) {
			char c = *p;
			if (c != '/' && c != '\0')
				continue;
			*p = '\0';
			if (mkdir(d, 0700) < 0 && errno != EEXIST) {
				rc = rlm_err_set(err, -errno, "cannot create directory '%s': %s", d,
						 strerror(errno));
				break;
			}
			*p = c;
			if (!c)
				break;
		}
	}
	free(d);
	return rc;
}

/* Schema changes: migrations[v] takes a database from version v to v + 1. */
static const char *const migrations[STORE_SCHEMA] = {
	"CREATE TABLE IF NOT EXISTS calls(key BLOB PRIMARY KEY, model TEXT, text TEXT,"
	" finish TEXT, input_tokens INTEGER, output_tokens INTEGER, cached_tokens INTEGER,"
	" cache_write_tokens INTEGER, cost REAL, created INTEGER,"
	" hits INTEGER NOT NULL DEFAULT 0, last_hit INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE IF NOT EXISTS results(key BLOB PRIMARY KEY, answer TEXT, stop TEXT,"
	" usage_json TEXT, cost REAL, calls INTEGER, created INTEGER,"
	" hits INTEGER NOT NULL DEFAULT 0, last_hit INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE IF NOT EXISTS runs(id TEXT PRIMARY KEY, created INTEGER, ended INTEGER,"
	" status TEXT, question TEXT, context_digest TEXT, context_bytes INTEGER,"
	" context_source TEXT, config_json TEXT, note_json TEXT, answer TEXT, result_json TEXT,"
	" resumed_from TEXT, pid INTEGER, pid_start INTEGER);"
	"CREATE INDEX IF NOT EXISTS runs_created ON runs(created);"
	"CREATE INDEX IF NOT EXISTS runs_digest ON runs(context_digest);"
	"CREATE TABLE IF NOT EXISTS events(run TEXT, seq INTEGER, t_ns INTEGER, node INTEGER,"
	" parent INTEGER, depth INTEGER, iteration INTEGER, kind TEXT, text TEXT,"
	" data_json TEXT, PRIMARY KEY(run, seq));",
	/* 1 -> 2: skills (store_skills.c). A version's row is never changed. */
	"CREATE TABLE IF NOT EXISTS skills(name TEXT NOT NULL, version INTEGER NOT NULL,"
	" digest TEXT NOT NULL, entry TEXT NOT NULL, description TEXT NOT NULL,"
	" signature TEXT NOT NULL, inputs_json TEXT NOT NULL, outputs_json TEXT,"
	" source TEXT NOT NULL, created INTEGER NOT NULL, PRIMARY KEY(name, version));"
	"CREATE TABLE IF NOT EXISTS skill_names(name TEXT PRIMARY KEY,"
	" retired INTEGER NOT NULL DEFAULT 0, retired_at INTEGER);"
	"CREATE TRIGGER IF NOT EXISTS skills_immutable BEFORE UPDATE ON skills"
	" BEGIN SELECT RAISE(ABORT, 'skill versions are immutable'); END;",
};

static int user_version(struct store *s, struct store_conn *c, int64_t *v, struct rlm_err *err)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(c->db, "PRAGMA user_version", -1, &st, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		*v = sqlite3_column_int64(st, 0);
		rc = 0;
	} else {
		rc = store__fail(s, c->db, rc, "reading the schema version", err);
	}
	sqlite3_finalize(st);
	return rc;
}

static int newer(const struct store *s, int64_t v, struct rlm_err *err)
{
	return rlm_err_set(err, RLM_ESTORE,
			   "the store '%s' was written by a newer rlm (schema %lld, this one "
			   "knows %d)",
			   s->path, (long long)v, STORE_SCHEMA);
}

/* Check the schema, creating or migrating it (writer) in one transaction. */
static int check_schema(struct store *s, struct store_conn *c, struct rlm_err *err)
{
	int64_t v;
	int rc = user_version(s, c, &v, err);
	if (rc)
		return rc;
	if (v > STORE_SCHEMA)
		return newer(s, v, err);
	if (v == STORE_SCHEMA)
		return 0;
	if (s->readonly)
		return rlm_err_set(err, v ? RLM_ESTORE : RLM_ENOTFOUND,
				   v ? "the store '%s' has an older schema: open it once to write "
				       "to update it"
				     : "the store '%s' is empty: nothing was cached or recorded "
				       "there yet",
				   s->path);
	pthread_mutex_lock(&s->wmu);
	rc = begin_locked(s, err);
	/* Again inside the transaction: another process may have done it. */
	if (!rc)
		rc = user_version(s, c, &v, err);
	if (!rc && v > STORE_SCHEMA)
		rc = newer(s, v, err);
	for (; !rc && v < STORE_SCHEMA; v++) {
		int e = sqlite3_exec(c->db, migrations[v], NULL, NULL, NULL);
		if (e != SQLITE_OK)
			rc = store__fail(s, c->db, e, "creating the schema", err);
	}
	if (!rc) {
		char sql[64];
		int e;
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", STORE_SCHEMA);
		if ((e = sqlite3_exec(c->db, sql, NULL, NULL, NULL)) != SQLITE_OK)
			rc = store__fail(s, c->db, e, "creating the schema", err);
	}
	rc = end_locked(s, rc, err);
	pthread_mutex_unlock(&s->wmu);
	return rc;
}

/* The writer's settings: WAL, NORMAL sync. */
static int setup_writer(struct store *s, struct rlm_err *err)
{
	sqlite3_stmt *st;
	sqlite3 *db = s->w->db;
	int rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *mode = (const char *)sqlite3_column_text(st, 0);
		if (!mode || strcmp(mode, "wal") != 0)
			log_warn("the store '%s' cannot use WAL (journal mode %s): readers will "
				 "wait for writers",
				 s->path, mode ? mode : "?");
		rc = 0;
	} else {
		rc = store__fail(s, db, rc, "opening", err);
	}
	sqlite3_finalize(st);
	if (!rc && (rc = sqlite3_exec(db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL)))
		rc = store__fail(s, db, rc, "opening", err);
	return rc;
}

int store_open(const struct store_cfg *cfg, struct store **out, struct rlm_err *err)
{
	struct store *s = xcalloc(1, sizeof(*s));
	struct store_conn *c;
	struct stat sb;
	int rc = 0;

	*out = NULL;
	pthread_mutex_init(&s->wmu, NULL);
	pthread_mutex_init(&s->rmu, NULL);
	pthread_mutex_init(&s->hmu, NULL);
	pthread_cond_init(&s->rcv, NULL);
	s->readonly = cfg->readonly;
	s->busy_ms = cfg->busy_timeout_ms > 0 ? cfg->busy_timeout_ms : 5000;
	s->path = cfg->path && *cfg->path ? xstrdup(cfg->path) : store_default_path(err);
	if (!s->path) {
		rc = RLM_EINVAL;
		goto out;
	}
	if (s->readonly) {
		if (stat(s->path, &sb) < 0) {
			rc = errno == ENOENT
				     ? rlm_err_set(err, RLM_ENOTFOUND,
						   "the store '%s' does not exist: nothing was "
						   "cached or recorded there yet",
						   s->path)
				     : rlm_err_set(err, -errno, "cannot open the store '%s': %s",
						   s->path, strerror(errno));
			goto out;
		}
		if (!(c = store__rget(s, err))) {
			rc = RLM_ESTORE;
			goto out;
		}
		rc = check_schema(s, c, err);
		store__rput(s, c);
		goto out;
	}
	if ((rc = make_dirs(s->path, err)))
		goto out;
	if ((rc = conn_open(s, false, &s->w, err)))
		goto out;
	if ((rc = setup_writer(s, err)))
		goto out;
	rc = check_schema(s, s->w, err);
	/* A store another process keeps locked for writing is said now, not
	 * found one busy timeout per write into a solve. */
	if (!rc && !(rc = begin_locked(s, err)))
		rc = end_locked(s, 0, err);
out:
	if (rc) {
		store_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void store_close(struct store *s)
{
	if (!s)
		return;
	if (s->w) {
		struct rlm_err e;
		pthread_mutex_lock(&s->wmu);
		if (store__flush_hits_locked(s, &e))
			log_debug("hits not counted: %s", e.msg);
		pthread_mutex_unlock(&s->wmu);
	}
	/* Readers first: the last connection to close checkpoints the WAL. */
	for (int i = 0; i < STORE_MAX_READERS; i++)
		conn_close(s->rall[i]);
	conn_close(s->w);
	store__seq_forget_locked(s, NULL);
	free(s->hits);
	free(s->hit_slots);
	pthread_mutex_destroy(&s->wmu);
	pthread_mutex_destroy(&s->rmu);
	pthread_mutex_destroy(&s->hmu);
	pthread_cond_destroy(&s->rcv);
	free(s->path);
	free(s);
}

const char *store_path(const struct store *s)
{
	return s->path;
}

/* ---- the call cache ---- */

int store_call_get(struct store *s, const struct store_key *k, struct store_reply *out,
		   struct rlm_err *err)
{
	struct store_conn *conn;
	sqlite3_stmt *st;
	int rc;
	memset(out, 0, sizeof(*out));
	if (!(conn = store__rget(s, err)))
		return RLM_ESTORE;
	st = store__stmt(s, conn, ST_CALL_GET,
			 "SELECT text, finish, input_tokens, output_tokens, cached_tokens,"
			 " cache_write_tokens, cost FROM calls WHERE key = ?1",
			 err);
	if (!st) {
		store__rput(s, conn);
		return RLM_ESTORE;
	}
	sqlite3_bind_blob(st, 1, k->b, sizeof(k->b), SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);
		size_t n = (size_t)sqlite3_column_bytes(st, 0);
		out->text = xmalloc(n + 1);
		if (n)
			memcpy(out->text, t, n);
		out->text[n] = '\0';
		out->len = n;
		out->finish = store__col_str(st, 1);
		out->usage.input_tokens = sqlite3_column_int64(st, 2);
		out->usage.output_tokens = sqlite3_column_int64(st, 3);
		out->usage.cached_tokens = sqlite3_column_int64(st, 4);
		out->usage.cache_write_tokens = sqlite3_column_int64(st, 5);
		out->cost = sqlite3_column_double(st, 6);
		rc = 1;
	} else if (rc == SQLITE_DONE) {
		rc = 0;
	} else {
		rc = store__fail(s, conn->db, rc, "looking up a call", err);
	}
	store__done(st);
	store__rput(s, conn);
	if (rc == 1)
		count_hit(s, k, false);
	return rc;
}

int store_call_put(struct store *s, const struct store_key *k, const char *model,
		   const struct store_reply *r, struct rlm_err *err)
{
	sqlite3_stmt *st;
	int rc;
	if (!r->text)
		return rlm_err_set(err, RLM_EINVAL, "only a successful call can be cached");
	if ((rc = store__wbegin(s, err)))
		return rc;
	st = store__stmt(s, s->w, ST_CALL_PUT,
			 "INSERT INTO calls(key, model, text, finish, input_tokens, output_tokens,"
			 " cached_tokens, cache_write_tokens, cost, created)"
			 " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
			 " ON CONFLICT(key) DO UPDATE SET model = excluded.model,"
			 " text = excluded.text, finish = excluded.finish,"
			 " input_tokens = excluded.input_tokens,"
			 " output_tokens = excluded.output_tokens,"
			 " cached_tokens = excluded.cached_tokens,"
			 " cache_write_tokens = excluded.cache_write_tokens,"
			 " cost = excluded.cost, created = excluded.created,"
			 " hits = 0, last_hit = 0",
			 err);
	if (!st)
		return store__wend(s, RLM_ESTORE, err);
	sqlite3_bind_blob(st, 1, k->b, sizeof(k->b), SQLITE_STATIC);
	if (model)
		sqlite3_bind_text(st, 2, model, -1, SQLITE_STATIC);
	store__bind_text(st, 3, r->text, r->len);
	store__bind_text(st, 4, r->finish, r->finish ? strlen(r->finish) : 0);
	sqlite3_bind_int64(st, 5, r->usage.input_tokens);
	sqlite3_bind_int64(st, 6, r->usage.output_tokens);
	sqlite3_bind_int64(st, 7, r->usage.cached_tokens);
	sqlite3_bind_int64(st, 8, r->usage.cache_write_tokens);
	sqlite3_bind_double(st, 9, r->cost);
	sqlite3_bind_int64(st, 10, time_wall_ms());
	rc = sqlite3_step(st);
	rc = rc == SQLITE_DONE ? 0 : store__fail(s, s->w->db, rc, "storing a call", err);
	store__done(st);
	return store__wend(s, rc, err);
}

/* ---- the result cache ---- */

int store_result_get(struct store *s, const struct store_key *k, struct store_result *out,
		     struct rlm_err *err)
{
	struct store_conn *conn;
	sqlite3_stmt *st;
	int rc;
	memset(out, 0, sizeof(*out));
	if (!(conn = store__rget(s, err)))
		return RLM_ESTORE;
	st = store__stmt(s, conn, ST_RES_GET,
			 "SELECT answer, stop, json_extract(usage_json, '$.input_tokens'),"
			 " json_extract(usage_json, '$.output_tokens'),"
			 " json_extract(usage_json, '$.cached_tokens'),"
			 " json_extract(usage_json, '$.cache_write_tokens'), cost, calls,"
			 " json_extract(usage_json, '$.sub_calls'), json_extract(usage_json, '$.nodes'),"
			 " coalesce(json_extract(usage_json, '$.found'), 1),"
			 " json_extract(usage_json, '$.sources')"
			 " FROM results WHERE key = ?1",
			 err);
	if (!st) {
		store__rput(s, conn);
		return RLM_ESTORE;
	}
	sqlite3_bind_blob(st, 1, k->b, sizeof(k->b), SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		out->answer = store__col_str(st, 0);
		if (!out->answer)
			out->answer = xstrdup("");
		out->stop = store__col_str(st, 1);
		out->usage.input_tokens = sqlite3_column_int64(st, 2);
		out->usage.output_tokens = sqlite3_column_int64(st, 3);
		out->usage.cached_tokens = sqlite3_column_int64(st, 4);
		out->usage.cache_write_tokens = sqlite3_column_int64(st, 5);
		out->cost = sqlite3_column_double(st, 6);
		out->calls = sqlite3_column_int64(st, 7);
		out->sub_calls = sqlite3_column_int64(st, 8);
		out->nodes = sqlite3_column_int64(st, 9);
		out->found = sqlite3_column_int64(st, 10) != 0;
		out->sources = store__col_str(st, 11);
		rc = 1;
	} else if (rc == SQLITE_DONE) {
		rc = 0;
	} else {
		rc = store__fail(s, conn->db, rc, "looking up a result", err);
	}
	store__done(st);
	store__rput(s, conn);
	if (rc == 1)
		count_hit(s, k, true);
	return rc;
}

int store_result_put(struct store *s, const struct store_key *k, const struct store_result *r,
		     struct rlm_err *err)
{
	sqlite3_stmt *st;
	char *usage;
	int rc;
	/* The sources are JSON already (an array): they go in as they are. */
	usage = xasprintf("{\"input_tokens\":%lld,\"output_tokens\":%lld,\"cached_tokens\":%lld,"
			  "\"cache_write_tokens\":%lld,\"sub_calls\":%lld,\"nodes\":%lld,"
			  "\"found\":%d%s%s}",
			  (long long)r->usage.input_tokens, (long long)r->usage.output_tokens,
			  (long long)r->usage.cached_tokens, (long long)r->usage.cache_write_tokens,
			  (long long)r->sub_calls, (long long)r->nodes, r->found ? 1 : 0,
			  r->sources ? ",\"sources\":" : "", r->sources ? r->sources : "");
	if ((rc = store__wbegin(s, err))) {
		free(usage);
		return rc;
	}
	st = store__stmt(s, s->w, ST_RES_PUT,
			 "INSERT INTO results(key, answer, stop, usage_json, cost, calls, created)"
			 " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"
			 " ON CONFLICT(key) DO UPDATE SET answer = excluded.answer,"
			 " stop = excluded.stop, usage_json = excluded.usage_json,"
			 " cost = excluded.cost, calls = excluded.calls,"
			 " created = excluded.created, hits = 0, last_hit = 0",
			 err);
	if (!st) {
		free(usage);
		return store__wend(s, RLM_ESTORE, err);
	}
	sqlite3_bind_blob(st, 1, k->b, sizeof(k->b), SQLITE_STATIC);
	store__bind_text(st, 2, r->answer ? r->answer : "", r->answer ? strlen(r->answer) : 0);
	store__bind_text(st, 3, r->stop, r->stop ? strlen(r->stop) : 0);
	sqlite3_bind_text(st, 4, usage, -1, SQLITE_STATIC);
	sqlite3_bind_double(st, 5, r->cost);
	sqlite3_bind_int64(st, 6, r->calls);
	sqlite3_bind_int64(st, 7, time_wall_ms());
	rc = sqlite3_step(st);
	rc = rc == SQLITE_DONE ? 0 : store__fail(s, s->w->db, rc, "storing a result", err);
	store__done(st);
	free(usage);
	return store__wend(s, rc, err);
}

void store_result_release(struct store_result *r)
{
	if (!r)
		return;
	free(r->answer);
	free(r->stop);
	free(r->sources);
	memset(r, 0, sizeof(*r));
}
