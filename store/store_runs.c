/* SPDX-License-Identifier: MIT */
/* store/store_runs.c -- the record of runs and their events, what resume
 * looks for, and the store's upkeep (statistics, pruning, clearing).
 *
 * DESIGN
 * A run row says which process runs it: its pid and the process's start
 * time (field 22 of /proc/PID/stat, clock ticks since boot), so that a
 * "running" row whose process is gone, or whose pid now names another
 * process, is known to be dead without anyone having marked it: load, list
 * and store_run_unfinished report it as "interrupted". Events are numbered
 * per run by a counter in memory (under the writer's mutex), read from the
 * table once per run, so an event is one prepared INSERT and one commit.
 */
#include "store_int.h"
#include "../common/json.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- processes ---- */

/* The start time of process pid (clock ticks since boot), or -1 when it
 * does not exist, is a zombie, or /proc cannot say. */
static int64_t proc_start(long pid)
{
	char path[64], line[1024], *p;
	FILE *f;
	size_t n;
	long long start = -1;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	if (!(f = fopen(path, "re")))
		return -1;
	n = fread(line, 1, sizeof(line) - 1, f);
	fclose(f);
	line[n] = '\0';
	/* "pid (comm) S ppid ...": comm may hold spaces and parentheses. */
	if (!(p = strrchr(line, ')')) || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return -1;
	p += 2;
	/* p is field 3, the state; starttime is field 22. */
	for (int field = 3; field < 22 && p; field++)
		if ((p = strchr(p, ' ')))
			p++;
	if (!p || sscanf(p, "%lld", &start) != 1)
		return -1;
	return start;
}

static bool run_alive(int64_t pid, int64_t start)
{
	if (pid <= 0)
		return false;
	if (start < 0) /* no /proc when it began: the pid alone */
		return kill((pid_t)pid, 0) == 0 || errno == EPERM;
	return proc_start((long)pid) == start;
}

/* The status to report: a "running" row without its process is dead. */
static const char *run_status(const char *status, int64_t pid, int64_t start)
{
	if (status && strcmp(status, "running") == 0 && !run_alive(pid, start))
		return "interrupted";
	return status;
}

/* ---- runs ---- */

static void make_run_id(char id[40], int64_t ms)
{
	unsigned char r[3];
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	size_t n;
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		uint64_t x = (uint64_t)time_now_ns() ^ ((uint64_t)getpid() << 32);
		x = rng_splitmix64(&x);
		memcpy(r, &x, sizeof(r));
	}
	gmtime_r(&t, &tm);
	n = strftime(id, 40, "%Y%m%d-%H%M%S", &tm);
	snprintf(id + n, 40 - n, "-%02x%02x%02x", r[0], r[1], r[2]);
}

static size_t slen(const char *s)
{
	return s ? strlen(s) : 0;
}

int store_run_begin(struct store *s, struct store_run *r, struct rlm_err *err)
{
	int64_t start = proc_start((long)getpid());
	int rc = 0;
	/* A new id on the rare collision of time and 24 random bits. */
	for (int attempt = 0; attempt < 8; attempt++) {
		sqlite3_stmt *st;
		int e;
		r->created_ms = time_wall_ms();
		make_run_id(r->id, r->created_ms);
		if ((rc = store__wbegin(s, err)))
			return rc;
		st = store__stmt(s, s->w, ST_RUN_BEGIN,
				 "INSERT INTO runs(id, created, ended, status, question,"
				 " context_digest, context_bytes, context_source, config_json,"
				 " resumed_from, pid, pid_start, note_json)"
				 " VALUES(?1, ?2, 0, 'running', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
				 " ?11)",
				 err);
		if (!st)
			return store__wend(s, RLM_ESTORE, err);
		sqlite3_bind_text(st, 1, r->id, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, r->created_ms);
		store__bind_text(st, 3, r->question, slen(r->question));
		store__bind_text(st, 4, r->context_digest, slen(r->context_digest));
		sqlite3_bind_int64(st, 5, r->context_bytes);
		store__bind_text(st, 6, r->context_source, slen(r->context_source));
		store__bind_text(st, 7, r->config_json, slen(r->config_json));
		store__bind_text(st, 8, r->resumed_from, slen(r->resumed_from));
		sqlite3_bind_int64(st, 9, (int64_t)getpid());
		sqlite3_bind_int64(st, 10, start);
		store__bind_text(st, 11, r->note_json, slen(r->note_json));
		e = sqlite3_step(st);
		rc = e == SQLITE_DONE ? 0 : store__fail(s, s->w->db, e, "recording a run", err);
		store__done(st);
		rc = store__wend(s, rc, err);
		if ((e & 0xff) != SQLITE_CONSTRAINT)
			break;
	}
	return rc;
}

int store_run_end(struct store *s, const struct store_run *r, struct rlm_err *err)
{
	sqlite3_stmt *st;
	int rc, e;
	if ((rc = store__wbegin(s, err)))
		return rc;
	st = store__stmt(s, s->w, ST_RUN_END,
			 "UPDATE runs SET ended = ?2, status = ?3, answer = ?4, result_json = ?5"
			 " WHERE id = ?1",
			 err);
	if (!st)
		return store__wend(s, RLM_ESTORE, err);
	sqlite3_bind_text(st, 1, r->id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, r->ended_ms ? r->ended_ms : time_wall_ms());
	sqlite3_bind_text(st, 3, r->status ? r->status : "done", -1, SQLITE_STATIC);
	store__bind_text(st, 4, r->answer, slen(r->answer));
	store__bind_text(st, 5, r->result_json, slen(r->result_json));
	e = sqlite3_step(st);
	rc = e == SQLITE_DONE ? 0 : store__fail(s, s->w->db, e, "ending a run", err);
	if (!rc && sqlite3_changes(s->w->db) == 0)
		rc = rlm_err_set(err, RLM_ENOTFOUND, "no run '%s' in the store '%s'", r->id,
				 s->path);
	store__done(st);
	if (!rc)
		store__seq_forget_locked(s, r->id);
	return store__wend(s, rc, err);
}

/* ---- events ---- */

void store__seq_forget_locked(struct store *s, const char *run)
{
	for (size_t i = 0; i < s->n_seqs; i++)
		if (!run || strcmp(s->seqs[i].run, run) == 0) {
			s->seqs[i] = s->seqs[--s->n_seqs];
			i--;
		}
	if (!s->n_seqs) {
		free(s->seqs);
		s->seqs = NULL;
	}
}

/* The counter of run, read from the table on first use; under wmu, in a
 * transaction. NULL with err on failure. */
static struct store_seq *seq_of(struct store *s, const char *run, struct rlm_err *err)
{
	struct store_seq *q;
	sqlite3_stmt *st;
	int e;
	for (size_t i = 0; i < s->n_seqs; i++)
		if (strcmp(s->seqs[i].run, run) == 0)
			return &s->seqs[i];
	st = store__stmt(s, s->w, ST_EV_NEXT,
			 "SELECT coalesce(max(seq), 0) + 1 FROM events WHERE run = ?1", err);
	if (!st)
		return NULL;
	sqlite3_bind_text(st, 1, run, -1, SQLITE_STATIC);
	e = sqlite3_step(st);
	if (e != SQLITE_ROW) {
		store__fail(s, s->w->db, e, "numbering an event", err);
		store__done(st);
		return NULL;
	}
	/* A process writes to few runs at a time: a short array will do. */
	s->seqs = xrealloc(s->seqs, (s->n_seqs + 1) * sizeof(*s->seqs));
	q = &s->seqs[s->n_seqs++];
	snprintf(q->run, sizeof(q->run), "%s", run);
	q->next = sqlite3_column_int64(st, 0);
	store__done(st);
	return q;
}

int store_event_add(struct store *s, const char *run, const struct store_event *e,
		    struct rlm_err *err)
{
	struct store_seq *q;
	sqlite3_stmt *st;
	int rc, x;
	if (!run || strlen(run) >= sizeof(q->run))
		return rlm_err_set(err, RLM_EINVAL, "not a run id: '%.60s'", run ? run : "");
	if ((rc = store__wbegin(s, err)))
		return rc;
	if (!(q = seq_of(s, run, err)))
		return store__wend(s, RLM_ESTORE, err);
	st = store__stmt(s, s->w, ST_EV_ADD,
			 "INSERT INTO events(run, seq, t_ns, node, parent, depth, iteration, kind,"
			 " text, data_json) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
			 err);
	if (!st)
		return store__wend(s, RLM_ESTORE, err);
	sqlite3_bind_text(st, 1, run, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, q->next);
	sqlite3_bind_int64(st, 3, e->t_ns);
	sqlite3_bind_int(st, 4, e->node);
	sqlite3_bind_int(st, 5, e->parent);
	sqlite3_bind_int(st, 6, e->depth);
	sqlite3_bind_int(st, 7, e->iteration);
	store__bind_text(st, 8, e->kind, slen(e->kind));
	store__bind_text(st, 9, e->text, e->len);
	store__bind_text(st, 10, e->data_json, slen(e->data_json));
	x = sqlite3_step(st);
	rc = x == SQLITE_DONE ? 0 : store__fail(s, s->w->db, x, "recording an event", err);
	store__done(st);
	/* The number is used only once the row is on disk. */
	if (!(rc = store__wcommit(s, rc, err)))
		q->next++;
	pthread_mutex_unlock(&s->wmu);
	return rc;
}

/* ---- reading runs ---- */

/* The columns run_json reads, in its order. */
#define RUN_COLS                                                                                   \
	"id, created, ended, status, question, context_digest, context_bytes, context_source,"    \
	" answer, resumed_from, pid, pid_start, config_json, result_json, note_json"

static int add_opt_str(cJSON *o, const char *key, sqlite3_stmt *st, int i)
{
	const char *p = (const char *)sqlite3_column_text(st, i);
	if (!p)
		return json_add(o, key, cJSON_CreateNull());
	return json_add_strn(o, key, p, (size_t)sqlite3_column_bytes(st, i));
}

/* Column i parsed as JSON: an object, else empty (want_object) or null. */
static int add_json_col(cJSON *o, const char *key, sqlite3_stmt *st, int i, bool want_object)
{
	const char *p = (const char *)sqlite3_column_text(st, i);
	cJSON *j = p ? json_parse(p, (size_t)sqlite3_column_bytes(st, i)) : NULL;
	if (j && !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		j = NULL;
	}
	if (!j)
		j = want_object ? cJSON_CreateObject() : cJSON_CreateNull();
	return json_add(o, key, j);
}

/* A row of RUN_COLS as an object; with the config and result when full,
 * else with the result's calls.total as "calls", its "stop" and its
 * "complete" (columns 15, 16, 17; null when the run has no result). */
static cJSON *run_json(sqlite3_stmt *st, bool full)
{
	cJSON *o = cJSON_CreateObject();
	const char *status = (const char *)sqlite3_column_text(st, 3);
	status = run_status(status, sqlite3_column_int64(st, 10), sqlite3_column_int64(st, 11));
	add_opt_str(o, "id", st, 0);
	json_add_num(o, "created_ms", (double)sqlite3_column_int64(st, 1));
	json_add_num(o, "ended_ms", (double)sqlite3_column_int64(st, 2));
	json_add(o, "status", status ? cJSON_CreateString(status) : cJSON_CreateNull());
	add_opt_str(o, "question", st, 4);
	add_opt_str(o, "context_digest", st, 5);
	json_add_num(o, "context_bytes", (double)sqlite3_column_int64(st, 6));
	add_opt_str(o, "context_source", st, 7);
	if (full)
		add_json_col(o, "config", st, 12, true);
	add_json_col(o, "note", st, 14, false);
	add_opt_str(o, "answer", st, 8);
	if (full)
		add_json_col(o, "result", st, 13, false);
	else {
		const char *complete = (const char *)sqlite3_column_text(st, 17);
		json_add(o, "calls", sqlite3_column_type(st, 15) == SQLITE_NULL
					     ? cJSON_CreateNull()
					     : cJSON_CreateNumber(sqlite3_column_double(st, 15)));
		add_opt_str(o, "stop", st, 16);
		/* null for a run without a result, or recorded before the flag */
		json_add(o, "complete", !complete ? cJSON_CreateNull()
					: cJSON_CreateBool(strcmp(complete, "true") == 0));
	}
	add_opt_str(o, "resumed_from", st, 9);
	return o;
}

/* End a reader's read transaction, whatever happened in it. */
static void read_end(struct store *s, struct store_conn *c)
{
	if (!sqlite3_get_autocommit(c->db))
		store__exec(s, c, ST_ROLLBACK, "ROLLBACK", "ending a read", NULL);
	store__rput(s, c);
}

/* The one id that id_or_prefix names, into id. */
static int find_run(struct store *s, struct store_conn *c, const char *prefix, char id[40],
		    struct rlm_err *err)
{
	sqlite3_stmt *st = store__stmt(s, c, ST_RUN_FIND,
				       "SELECT id FROM runs WHERE substr(id, 1, length(?1)) = ?1"
				       " ORDER BY id",
				       err);
	int n = 0, e, rc = 0;
	bool exact = false;
	if (!st)
		return RLM_ESTORE;
	sqlite3_bind_text(st, 1, prefix, -1, SQLITE_STATIC);
	while ((e = sqlite3_step(st)) == SQLITE_ROW) {
		const char *got = (const char *)sqlite3_column_text(st, 0);
		if (!got || exact)
			continue;
		if (!n || strcmp(got, prefix) == 0)
			snprintf(id, 40, "%s", got);
		exact = strcmp(got, prefix) == 0;
		n++;
	}
	if (e != SQLITE_DONE)
		rc = store__fail(s, c->db, e, "finding a run", err);
	else if (!n)
		rc = rlm_err_set(err, RLM_ENOTFOUND, "no run '%s' in the store '%s'", prefix,
				 s->path);
	else if (n > 1 && !exact)
		rc = rlm_err_set(err, RLM_EINVAL,
				 "the run id '%s' is ambiguous: %d runs start with it", prefix, n);
	store__done(st);
	return rc;
}

static int load_events(struct store *s, struct store_conn *c, const char *id, cJSON *arr,
		       struct rlm_err *err)
{
	sqlite3_stmt *st = store__stmt(s, c, ST_EV_LIST,
				       "SELECT seq, t_ns, node, parent, depth, iteration, kind,"
				       " text, data_json FROM events WHERE run = ?1 ORDER BY seq",
				       err);
	int e, rc = 0;
	if (!st)
		return RLM_ESTORE;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	while ((e = sqlite3_step(st)) == SQLITE_ROW) {
		cJSON *ev = cJSON_CreateObject();
		json_add_num(ev, "seq", (double)sqlite3_column_int64(st, 0));
		json_add_num(ev, "t_ns", (double)sqlite3_column_int64(st, 1));
		json_add_num(ev, "node", sqlite3_column_int(st, 2));
		json_add_num(ev, "parent", sqlite3_column_int(st, 3));
		json_add_num(ev, "depth", sqlite3_column_int(st, 4));
		json_add_num(ev, "iteration", sqlite3_column_int(st, 5));
		add_opt_str(ev, "kind", st, 6);
		add_opt_str(ev, "text", st, 7);
		add_json_col(ev, "data", st, 8, false);
		json_add(arr, NULL, ev);
	}
	if (e != SQLITE_DONE)
		rc = store__fail(s, c->db, e, "reading events", err);
	store__done(st);
	return rc;
}

/* The runs that point at run id: "resumed_by" (their resumed_from is id)
 * and "memo_runs" (answered from the memo its answer made: their
 * result's memo.run is id), each an array of ids, oldest first. */
static int load_links(struct store *s, struct store_conn *c, const char *id, cJSON *run,
		      struct rlm_err *err)
{
	sqlite3_stmt *st = store__stmt(s, c, ST_RUN_LINKS,
				       "SELECT id, resumed_from IS ?1 FROM runs WHERE resumed_from = ?1"
				       " OR (json_valid(result_json) AND"
				       " json_extract(result_json, '$.memo.run') = ?1)"
				       " ORDER BY created, rowid",
				       err);
	cJSON *by = cJSON_CreateArray(), *memo = cJSON_CreateArray();
	int e, rc = 0;
	if (!st) {
		cJSON_Delete(by);
		cJSON_Delete(memo);
		return RLM_ESTORE;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	while ((e = sqlite3_step(st)) == SQLITE_ROW) {
		const char *got = (const char *)sqlite3_column_text(st, 0);
		if (got)
			json_add(sqlite3_column_int(st, 1) ? by : memo, NULL,
				 cJSON_CreateString(got));
	}
	if (e != SQLITE_DONE)
		rc = store__fail(s, c->db, e, "reading the runs linked to a run", err);
	store__done(st);
	json_add(run, "resumed_by", by);
	json_add(run, "memo_runs", memo);
	return rc;
}

cJSON *store_run_load(struct store *s, const char *id, struct rlm_err *err)
{
	struct store_conn *c;
	sqlite3_stmt *st;
	cJSON *run = NULL, *events;
	char full[40];
	int e, rc;
	if (!id || !*id) {
		rlm_err_set(err, RLM_EINVAL, "no run id given");
		return NULL;
	}
	if (!(c = store__rget(s, err)))
		return NULL;
	/* One snapshot for the run and its events. */
	if ((rc = store__exec(s, c, ST_BEGIN, "BEGIN", "starting a read", err)) ||
	    (rc = find_run(s, c, id, full, err)))
		goto out;
	st = store__stmt(s, c, ST_RUN_GET, "SELECT " RUN_COLS " FROM runs WHERE id = ?1", err);
	if (!st)
		goto out;
	sqlite3_bind_text(st, 1, full, -1, SQLITE_STATIC);
	if ((e = sqlite3_step(st)) == SQLITE_ROW)
		run = run_json(st, true);
	else if (e == SQLITE_DONE)
		rlm_err_set(err, RLM_ENOTFOUND, "no run '%s' in the store '%s'", full, s->path);
	else
		store__fail(s, c->db, e, "reading a run", err);
	store__done(st);
	if (!run)
		goto out;
	events = cJSON_CreateArray();
	if (load_events(s, c, full, events, err)) {
		cJSON_Delete(events);
		cJSON_Delete(run);
		run = NULL;
		goto out;
	}
	json_add(run, "events", events);
	if (load_links(s, c, full, run, err)) {
		cJSON_Delete(run);
		run = NULL;
	}
out:
	read_end(s, c);
	return run;
}

cJSON *store_runs_list(struct store *s, size_t limit, struct rlm_err *err)
{
	struct store_conn *c = store__rget(s, err);
	sqlite3_stmt *st;
	cJSON *arr;
	int e;
	if (!c)
		return NULL;
	st = store__stmt(s, c, ST_RUN_LIST,
			 "SELECT " RUN_COLS ", CASE WHEN json_valid(result_json) THEN"
			 " json_extract(result_json, '$.calls.total') END,"
			 " CASE WHEN json_valid(result_json) THEN"
			 " json_extract(result_json, '$.stop') END,"
			 " CASE WHEN json_valid(result_json) THEN"
			 " json_type(result_json, '$.complete') END"
			 " FROM runs ORDER BY created DESC, rowid DESC LIMIT ?1",
			 err);
	if (!st) {
		store__rput(s, c);
		return NULL;
	}
	sqlite3_bind_int64(st, 1, limit ? (int64_t)limit : -1);
	arr = cJSON_CreateArray();
	while ((e = sqlite3_step(st)) == SQLITE_ROW)
		json_add(arr, NULL, run_json(st, false));
	if (e != SQLITE_DONE) {
		store__fail(s, c->db, e, "listing runs", err);
		cJSON_Delete(arr);
		arr = NULL;
	}
	store__done(st);
	store__rput(s, c);
	return arr;
}

int store_run_unfinished(struct store *s, const char *question, const char *context_digest,
			 const char *config_json, char id[40], struct rlm_err *err)
{
	struct store_conn *c = store__rget(s, err);
	sqlite3_stmt *st;
	int e, rc = 0;
	if (!c)
		return RLM_ESTORE;
	st = store__stmt(s, c, ST_RUN_UNF,
			 "SELECT id, status, pid, pid_start FROM runs WHERE context_digest IS ?2"
			 " AND question IS ?1 AND config_json IS ?3"
			 " AND status IN ('running', 'interrupted')"
			 " AND NOT EXISTS (SELECT 1 FROM runs AS r2 WHERE r2.resumed_from = runs.id"
			 " AND (r2.status IN ('done', 'incomplete') OR r2.status LIKE 'stopped:%'))"
			 " ORDER BY created DESC, rowid DESC",
			 err);
	if (!st) {
		store__rput(s, c);
		return RLM_ESTORE;
	}
	store__bind_text(st, 1, question, slen(question));
	store__bind_text(st, 2, context_digest, slen(context_digest));
	store__bind_text(st, 3, config_json, slen(config_json));
	while ((e = sqlite3_step(st)) == SQLITE_ROW) {
		const char *got = (const char *)sqlite3_column_text(st, 0);
		const char *status = (const char *)sqlite3_column_text(st, 1);
		status = run_status(status, sqlite3_column_int64(st, 2),
				    sqlite3_column_int64(st, 3));
		if (got && status && strcmp(status, "interrupted") == 0) {
			snprintf(id, 40, "%s", got);
			rc = 1;
			break;
		}
	}
	if (rc == 0 && e != SQLITE_DONE)
		rc = store__fail(s, c->db, e, "looking for an unfinished run", err);
	store__done(st);
	store__rput(s, c);
	return rc;
}

int store_run_origin(struct store *s, const char *question, const char *context_digest,
		     const char *config_json, const char *not_id, char id[40], int64_t *created_ms,
		     struct rlm_err *err)
{
	struct store_conn *c = store__rget(s, err);
	sqlite3_stmt *st;
	int e, rc = 0;
	if (!c)
		return RLM_ESTORE;
	st = store__stmt(s, c, ST_RUN_ORIGIN,
			 "SELECT id, created FROM runs WHERE context_digest IS ?2"
			 " AND question IS ?1 AND config_json IS ?3 AND id IS NOT ?4"
			 " AND status = 'done' AND json_valid(result_json)"
			 " AND json_extract(result_json, '$.stop') = 'answer'"
			 " AND json_type(result_json, '$.memo') IS NULL"
			 " ORDER BY created DESC, rowid DESC LIMIT 1",
			 err);
	if (!st) {
		store__rput(s, c);
		return RLM_ESTORE;
	}
	store__bind_text(st, 1, question, slen(question));
	store__bind_text(st, 2, context_digest, slen(context_digest));
	store__bind_text(st, 3, config_json, slen(config_json));
	store__bind_text(st, 4, not_id, slen(not_id));
	if ((e = sqlite3_step(st)) == SQLITE_ROW) {
		const char *got = (const char *)sqlite3_column_text(st, 0);
		if (got) {
			snprintf(id, 40, "%s", got);
			if (created_ms)
				*created_ms = sqlite3_column_int64(st, 1);
			rc = 1;
		}
	} else if (e != SQLITE_DONE) {
		rc = store__fail(s, c->db, e, "looking for the run a memo answer came from", err);
	}
	store__done(st);
	store__rput(s, c);
	return rc;
}

cJSON *store_run_result(struct store *s, const char *id, struct rlm_err *err)
{
	struct store_conn *c = store__rget(s, err);
	sqlite3_stmt *st;
	cJSON *res = NULL;
	int e;
	if (!c)
		return NULL;
	st = store__stmt(s, c, ST_RUN_RESULT, "SELECT result_json FROM runs WHERE id = ?1", err);
	if (!st) {
		store__rput(s, c);
		return NULL;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	if ((e = sqlite3_step(st)) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);
		if (t)
			res = json_parse(t, (size_t)sqlite3_column_bytes(st, 0));
		if (!cJSON_IsObject(res)) {
			cJSON_Delete(res);
			res = NULL;
			rlm_err_set(err, RLM_ENOTFOUND, "run '%s' has no result", id);
		}
	} else if (e == SQLITE_DONE) {
		rlm_err_set(err, RLM_ENOTFOUND, "no run '%s' in the store '%s'", id, s->path);
	} else {
		store__fail(s, c->db, e, "reading a run's result", err);
	}
	store__done(st);
	store__rput(s, c);
	return res;
}

/* ---- upkeep ---- */

static int64_t file_size(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
}

int store_stats(struct store *s, struct store_stats *out, struct rlm_err *err)
{
	static const char sql[] =
		"SELECT c.n, c.h, c.i, c.o, c.ca, c.cw, c.cost, r.n, r.h, r.i, r.o, r.ca, r.cw,"
		" r.cost, (SELECT count(*) FROM runs), (SELECT count(*) FROM events)"
		" FROM (SELECT count(*) n, total(hits) h, total(hits * input_tokens) i,"
		"  total(hits * output_tokens) o, total(hits * cached_tokens) ca,"
		"  total(hits * cache_write_tokens) cw, total(hits * cost) cost FROM calls) c,"
		" (SELECT count(*) n, total(hits) h,"
		"  total(hits * json_extract(usage_json, '$.input_tokens')) i,"
		"  total(hits * json_extract(usage_json, '$.output_tokens')) o,"
		"  total(hits * json_extract(usage_json, '$.cached_tokens')) ca,"
		"  total(hits * json_extract(usage_json, '$.cache_write_tokens')) cw,"
		"  total(hits * cost) cost FROM results) r";
	struct store_conn *c;
	sqlite3_stmt *st = NULL;
	char *wal;
	int e, rc = 0;
	memset(out, 0, sizeof(*out));
	if (s->w) { /* the hits counted so far, so that the numbers are whole */
		pthread_mutex_lock(&s->wmu);
		rc = store__flush_hits_locked(s, err);
		pthread_mutex_unlock(&s->wmu);
		if (rc)
			return rc;
	}
	if (!(c = store__rget(s, err)))
		return RLM_ESTORE;
	e = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);
	if (e == SQLITE_OK && (e = sqlite3_step(st)) == SQLITE_ROW) {
		out->calls = sqlite3_column_int64(st, 0);
		out->call_hits = sqlite3_column_int64(st, 1);
		out->results = sqlite3_column_int64(st, 7);
		out->result_hits = sqlite3_column_int64(st, 8);
		out->saved_usage.input_tokens =
			sqlite3_column_int64(st, 2) + sqlite3_column_int64(st, 9);
		out->saved_usage.output_tokens =
			sqlite3_column_int64(st, 3) + sqlite3_column_int64(st, 10);
		out->saved_usage.cached_tokens =
			sqlite3_column_int64(st, 4) + sqlite3_column_int64(st, 11);
		out->saved_usage.cache_write_tokens =
			sqlite3_column_int64(st, 5) + sqlite3_column_int64(st, 12);
		out->saved_cost = sqlite3_column_double(st, 6) + sqlite3_column_double(st, 13);
		out->runs = sqlite3_column_int64(st, 14);
		out->events = sqlite3_column_int64(st, 15);
	} else {
		rc = store__fail(s, c->db, e, "counting", err);
	}
	sqlite3_finalize(st);
	store__rput(s, c);
	wal = xasprintf("%s-wal", s->path);
	out->bytes = file_size(s->path) + file_size(wal);
	free(wal);
	return rc;
}

/* rlm_alive(pid, pid_start): whether the process of a run row lives. */
static void sql_alive(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	(void)argc;
	sqlite3_result_int(ctx, run_alive(sqlite3_value_int64(argv[0]),
					  sqlite3_value_int64(argv[1])));
}

/* Run sql on the writer in the open transaction; adds the rows it changed. */
static int delete_rows(struct store *s, const char *sql, int64_t cutoff, int64_t *n,
		       struct rlm_err *err)
{
	sqlite3_stmt *st;
	int e = sqlite3_prepare_v2(s->w->db, sql, -1, &st, NULL);
	if (e == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, cutoff);
		e = sqlite3_step(st);
	}
	if (e != SQLITE_DONE) {
		e = store__fail(s, s->w->db, e, "deleting", err);
		sqlite3_finalize(st);
		return e;
	}
	if (n)
		*n += sqlite3_changes64(s->w->db);
	sqlite3_finalize(st);
	return 0;
}

int store_shrink(struct store *s, struct rlm_err *err)
{
	int e;
	if (!s->w)
		return rlm_err_set(err, RLM_EINVAL, "the store '%s' is open read-only", s->path);
	pthread_mutex_lock(&s->wmu);
	e = sqlite3_exec(s->w->db, "VACUUM", NULL, NULL, NULL);
	if (e != SQLITE_OK)
		e = store__fail(s, s->w->db, e, "shrinking", err);
	else /* busy readers elsewhere only leave the WAL longer */
		sqlite3_exec(s->w->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
	pthread_mutex_unlock(&s->wmu);
	return e;
}

int store_prune(struct store *s, int64_t max_age_ms, int64_t *removed, struct rlm_err *err)
{
	int64_t cutoff = time_wall_ms() - max_age_ms, n = 0;
	int rc;
	if (removed)
		*removed = 0;
	if ((rc = store__wbegin(s, err)))
		return rc;
	sqlite3_create_function(s->w->db, "rlm_alive", 2, SQLITE_UTF8, NULL, sql_alive, NULL,
				NULL);
	/* Runs that ended long ago, and runs killed long ago (never ended). */
	if (!(rc = delete_rows(s, "DELETE FROM calls WHERE max(created, last_hit) < ?1", cutoff,
			       &n, err)) &&
	    !(rc = delete_rows(s, "DELETE FROM results WHERE max(created, last_hit) < ?1", cutoff,
			       &n, err)) &&
	    !(rc = delete_rows(s,
			       "DELETE FROM runs WHERE (ended > 0 AND ended < ?1) OR"
			       " (coalesce(ended, 0) = 0 AND created < ?1 AND"
			       " NOT rlm_alive(pid, pid_start))",
			       cutoff, &n, err)))
		rc = delete_rows(s, "DELETE FROM events WHERE run NOT IN (SELECT id FROM runs)",
				 cutoff, NULL, err);
	if ((rc = store__wend(s, rc, err)))
		return rc;
	if (removed)
		*removed = n;
	return 0;
}

int store_clear(struct store *s, struct rlm_err *err)
{
	int rc;
	if ((rc = store__wbegin(s, err)))
		return rc;
	if (!(rc = delete_rows(s, "DELETE FROM calls", 0, NULL, err)) &&
	    !(rc = delete_rows(s, "DELETE FROM results", 0, NULL, err)) &&
	    !(rc = delete_rows(s, "DELETE FROM runs", 0, NULL, err)) &&
	    !(rc = delete_rows(s, "DELETE FROM events", 0, NULL, err)))
		store__seq_forget_locked(s, NULL);
	return store__wend(s, rc, err);
}
