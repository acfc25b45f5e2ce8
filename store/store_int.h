/* SPDX-License-Identifier: MIT */
/* store/store_int.h -- what store.c (keys, opening, connections, the call
 * and result caches) and store_runs.c (runs, events, upkeep) share: the
 * store object, its connections and their statement caches, the writer's
 * transactions and the error wording.
 *
 * Locking order: wmu, then hmu; rmu is never held with either while
 * SQLite works.
 */
#ifndef RLM_STORE_INT_H
#define RLM_STORE_INT_H

#include "store.h"

#include <pthread.h>
#include <sqlite3.h>

#define STORE_SCHEMA	  2
#define STORE_MAX_READERS 16
#define STORE_HIT_KEYS	  4096		/* pending keys that force a flush */
#define STORE_HIT_MAX	  (1 << 18)	/* more while the writer is busy: then dropped */
#define STORE_HIT_RETRY_NS 100000000LL	/* after a flush found the lock taken */
#define STORE_HIT_AGE_NS  1000000000LL	/* or the age of the oldest hit */

/* Every statement a connection may cache, by the SQL it was prepared from
 * at its one call site. */
enum store_stmt {
	ST_BEGIN,
	ST_BEGIN_IMM,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_CALL_GET,
	ST_CALL_PUT,
	ST_CALL_HIT,
	ST_RES_GET,
	ST_RES_PUT,
	ST_RES_HIT,
	ST_RUN_BEGIN,
	ST_RUN_END,
	ST_EV_NEXT,
	ST_EV_ADD,
	ST_RUN_FIND,
	ST_RUN_GET,
	ST_EV_LIST,
	ST_RUN_LIST,
	ST_RUN_UNF,
	ST_RUN_ORIGIN,
	ST_RUN_LINKS,
	ST_RUN_RESULT,
	ST_SKILL_LATEST,
	ST_SKILL_PUT,
	ST_SKILL_NAME,
	ST_SKILL_LIST,
	ST_SKILL_VERSIONS,
	ST_SKILL_VMETA,
	ST_SKILL_GET,
	ST_SKILL_MAXV,
	ST_SKILL_RETIRE,
	ST_MAX
};

/* One SQLite connection with its prepared statements. Used by one thread
 * at a time: the writer under wmu, a reader between store__rget and
 * store__rput. */
struct store_conn {
	sqlite3 *db;
	sqlite3_stmt *st[ST_MAX];  /* prepared on first use, kept until close */
	struct store_conn *next;   /* in the free list of readers */
};

/* The hits of one key counted in memory, not yet written. */
struct store_hit {
	struct store_key k;
	int64_t at;		   /* the last one, unix ms */
	int64_t n;		   /* how many */
	bool result;		   /* a result, else a call */
};

/* The next event number of a run this process writes to. */
struct store_seq {
	char run[40];
	int64_t next;
};

struct store {
	char *path;		   /* owned */
	bool readonly;
	int busy_ms;

	pthread_mutex_t wmu;	   /* the writer and what follows */
	struct store_conn *w;	   /* NULL when readonly */
	struct store_seq *seqs;	   /* event numbers, under wmu */
	size_t n_seqs;

	pthread_mutex_t rmu;	   /* the readers' pool */
	pthread_cond_t rcv;	   /* a reader came back */
	struct store_conn *rfree;  /* idle readers */
	struct store_conn *rall[STORE_MAX_READERS]; /* every reader, for close */
	int n_readers;		   /* opened or being opened */

	pthread_mutex_t hmu;	   /* pending hits, one entry per key */
	struct store_hit *hits;	   /* hit_cap of them */
	uint32_t *hit_slots;	   /* open addressing (2 * hit_cap): index + 1
				    * into hits, 0 free */
	size_t n_hits, hit_cap;
	int64_t hits_retry_ns;	   /* no flush by a lookup before (time_now_ns) */
	int64_t hits_since_ns;	   /* when the oldest pending hit came */
};

/* The cached statement id of conn, prepared from sql on first use; reset
 * and without bindings. NULL with err set (RLM_ESTORE) on failure. */
sqlite3_stmt *store__stmt(struct store *s, struct store_conn *c, enum store_stmt id,
			  const char *sql, struct rlm_err *err);
/* Done with a statement: reset it and drop its bindings. */
void store__done(sqlite3_stmt *st);
/* Fill err for SQLite code rc on db (NULL: no connection) while `doing`
 * ("reading a call"); returns RLM_ESTORE. Call before anything else runs
 * on db, so that its message is still the one of rc. */
int store__fail(const struct store *s, sqlite3 *db, int rc, const char *doing,
		struct rlm_err *err);

/* A reader connection for this thread (waits while all of them are in
 * use); NULL with err on failure. Give it back with store__rput. */
struct store_conn *store__rget(struct store *s, struct rlm_err *err);
void store__rput(struct store *s, struct store_conn *c);
/* Run one cached statement that returns no rows (BEGIN, COMMIT, ...). */
int store__exec(struct store *s, struct store_conn *c, enum store_stmt id, const char *sql,
		const char *doing, struct rlm_err *err);

/* Take the writer and open a write transaction (BEGIN IMMEDIATE), with
 * the pending hits written first; RLM_EINVAL on a read-only store. On
 * success the caller holds wmu until store__wend. */
int store__wbegin(struct store *s, struct rlm_err *err);
/* Commit when rc is 0, else roll back; release the writer. Returns rc or
 * the commit's failure. */
int store__wend(struct store *s, int rc, struct rlm_err *err);
/* The same without releasing the writer (the caller unlocks wmu), for what
 * must follow a commit under the same lock. */
int store__wcommit(struct store *s, int rc, struct rlm_err *err);
/* Write the pending hits now (a transaction of their own); under wmu. */
int store__flush_hits_locked(struct store *s, struct rlm_err *err);

/* Column i as a malloc'd string, NULL for SQL NULL. */
char *store__col_str(sqlite3_stmt *st, int i);
/* Bind s[0..len) as text, NULL when s is NULL. */
int store__bind_text(sqlite3_stmt *st, int i, const char *s, size_t len);

/* Forget the event numbers of a run (its end) or of all runs (run NULL). */
void store__seq_forget_locked(struct store *s, const char *run);

#endif
