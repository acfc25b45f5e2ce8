/* SPDX-License-Identifier: MIT */
/* bench/run_int.h -- what `rlm bench run`'s two files share: the engine
 * (bench/run.c: datasets, tasks, workers, the direct baseline) and the
 * command (cli/cli_bench_run.c: options, notices, the summary). */
#ifndef RLM_BENCH_RUN_INT_H
#define RLM_BENCH_RUN_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "bench_int.h"
#include "../common/json.h"
#include "../rlm/rlm.h"
#include "../store/store.h"

enum bench_strat { BST_REPL, BST_TREE, BST_DIRECT, BST_COUNT };

/* "repl", "tree", "direct". */
extern const char *const bench_strat_names[BST_COUNT];

#define BENCH_MAX_BAD_LINES 20 /* bad dataset lines said before the rest are counted */

/* One line of a dataset, checked. */
struct bench_item {
	char *id;
	char *suite;
	char *question;
	char *scorer;
	cJSON *gold;	       /* the item's "answer"; owned */
	char *answer_type;     /* "answer_type" (OOLONG's), or NULL */
	char *context;	       /* the context inline, or NULL */
	char *path;	       /* context_path joined to the dataset's directory, or NULL */
	enum corpus_kind kind; /* "format"; AUTO when absent */
	int64_t tokens;	       /* "tokens"; 0: from the context's bytes once loaded */
	const char *dataset;   /* borrowed from argv */
	size_t line;	       /* 1-based */
};

/* One item with one strategy. */
struct bench_task {
	struct bench_item *it; /* borrowed from bench_run.items */
	enum bench_strat strat;
	bool done;    /* res holds a result */
	bool skipped; /* ... read back from an earlier run */
	struct bench_res res;
};

/* A run. The command fills the first part, then calls bench_run_all. */
struct bench_run {
	/* set before the workers start, read-only while they run */
	struct rlm_models ms;
	struct rlm_opts ro;  /* the base of every solve: pool, models, store,
			      * limits */
	struct store *store; /* or NULL (--no-cache) */
	struct bench_item *items;
	size_t n_items;
	struct bench_task *tasks; /* item-major: an item's strategies together */
	size_t n_tasks;
	long jobs;
	char digest[17];     /* of the solve options that shape an answer
			      * (rlm_config_json): bench_run_digest */
	size_t bad_said; /* bad dataset lines said so far */
	bool tty;	 /* draw the progress bar on stderr */
	bool quiet;	 /* no notices on stderr */
	int fd;		 /* DIR/results.jsonl, O_APPEND */
	int64_t t0;
	struct llm_front front; /* direct's calls through the store */
	atomic_size_t next;	/* the next task to take */

	pthread_mutex_t mu;		/* guards what follows, writes to fd, stderr */
	pthread_cond_t cv;		/* signalled when a task ends */
	size_t n_run, n_done, n_failed; /* tasks to run now, ended, failed */
	bool write_failed;		/* a results line could not be written */
};

/* Zero r and set up its mutex; bench_run_release undoes both. */
void bench_run_init(struct bench_run *r);
/* Free the items and tasks (not the models nor the store). */
void bench_run_release(struct bench_run *r);
/* Append the items of the dataset at path (its first `limit`; 0: all).
 * Every line is checked (JSON, fields, scorer, gold, the context file
 * exists); bad ones are said on stderr as "rlm: error: FILE:LINE: ..."
 * and left out. Returns the bad lines, or -1 when the file cannot be read
 * or holds nothing. */
long bench_run_load(struct bench_run *r, const char *path, long limit);
/* Say each id used twice on stderr; returns how many. */
size_t bench_run_check_ids(const struct bench_run *r);
/* The tasks: every item with every strategy of strats, item-major. */
void bench_run_plan(struct bench_run *r, const enum bench_strat *strats, size_t n);
/* r->digest: 16 hex digits of the digest of rlm_config_json(r->ro), the
 * options that change results (models, sampling, prompts, limits, depth).
 * Call once the models are set up. */
void bench_run_digest(struct bench_run *r);
/* Mark the tasks whose result is a line of path (an earlier run's
 * results.jsonl) done and skipped; returns how many. Lines with "error"
 * are not results, nor lines of another model or sub-model than r->ms's
 * (counted in *other_model), nor lines whose "options_digest" is not
 * r->digest, or absent (counted in *other_opts). Call after
 * bench_run_digest. */
size_t bench_run_resume(struct bench_run *r, const char *path, size_t *other_model,
			size_t *other_opts);
/* direct: the tokens kept free for the reply (--max-tokens; else 8,192, or
 * a quarter of the root model's window when that is less), and the tokens
 * of context that fit beside the question and the reply (<= 0: none). */
int64_t bench_direct_reserve(const struct bench_run *r);
int64_t bench_direct_room(const struct bench_run *r, const char *question);
/* The least room direct needs at the start, in tokens: below it, a run
 * with direct is refused. */
#define BENCH_DIRECT_MIN_ROOM 1000
/* Run every task not done on r->jobs threads, appending a line to r->fd
 * as each ends, with the progress bar when r->tty. */
void bench_run_all(struct bench_run *r);

#endif
