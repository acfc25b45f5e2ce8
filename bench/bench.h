/* SPDX-License-Identifier: MIT */
/* bench/bench.h -- dataset generators, scorers, the benchmark runner and its
 * report, and the performance suite: the bench module's contract.
 *
 * Datasets are JSONL files of items
 *   {"id", "suite", "question", "answer": [gold, ...], "context_path",
 *    "scorer", "tokens", ...suite-specific fields}
 * with each item's context in its own file next to the JSONL, so that
 * `rlm solve --context PATH --question Q` (and later `rlm bench run`) can
 * consume them. Everything is seeded and reproducible: the same options give
 * byte-identical files. A token is counted as 4 bytes of text. */
#ifndef RLM_BENCH_H
#define RLM_BENCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/common.h"
#include "../common/json.h"
#include "../rlm/rlm.h"
#include "../store/store.h"

/* ---- S-NIAH (RULER-style needles in a haystack) ---- */

enum sniah_haystack { SNIAH_NOISE, SNIAH_WORDS, SNIAH_ESSAY };
enum sniah_value { SNIAH_NUMBER, SNIAH_WORD, SNIAH_UUID };

#define SNIAH_MAX_VALUES 8 /* values of one key (RULER's multi-value NIAH) */

struct sniah_opts {
	uint64_t tokens;                /* target size; bytes = 4 * tokens */
	uint64_t seed;
	enum sniah_haystack haystack;   /* default SNIAH_ESSAY */
	enum sniah_value value;         /* default SNIAH_NUMBER */
	double depth;                   /* needle position in [0,1]; < 0: drawn from the seed */
	int distractors;                /* other needles with other keys */
	int values;                     /* values of the key, 1..SNIAH_MAX_VALUES */
	bool utf8;                      /* haystack words in multi-byte UTF-8 too */
};

struct sniah_item {
	char key[64];                          /* e.g. "harmonious-uniform" */
	char value[64];                        /* e.g. "2338687": the key's first value in the text */
	char question[256];
	double depth;                          /* where that value's needle went, in [0,1] */
	uint64_t bytes;                        /* bytes written */
	uint64_t needle_off;                   /* byte offset of that needle sentence */
	int n_values;                          /* the key's values: o->values */
	char values[SNIAH_MAX_VALUES][64];     /* all of them, in the order of the text */
	uint64_t value_offs[SNIAH_MAX_VALUES]; /* byte offset of each one's needle sentence */
	size_t value_docs[SNIAH_MAX_VALUES];   /* the document holding each (bench_sniah_write) */
};

/* 8000 tokens, seed 1, essay haystack, number value, drawn depth, no
 * distractors, one value, ASCII. */
void bench_sniah_opts_default(struct sniah_opts *o);
/* Write one haystack of o->tokens * 4 bytes (give or take one word; within
 * 0.5% from 1000 tokens up) to f, with the needle "One of the special magic
 * numbers for KEY is: VALUE." ("words", "uuids" for the other value types)
 * on a line of its own at the first line boundary at or past depth * bytes;
 * fill item. The key and the value occur on that line only.
 * With o->values K > 1 (RULER's multi-value NIAH) the key has K distinct
 * values, each in a needle of its own at one of K distinct depths drawn
 * from RULER's 40, and the question asks for all of them; the key occurs on
 * those K lines only, each value on its line only. Distractors have other
 * keys and values. The same opts give the same bytes. Returns 0, -EINVAL
 * when the options are out of range (distractors > 1000, or more values
 * and distractors than the word values for SNIAH_WORD; depth > 1; values
 * out of 1..SNIAH_MAX_VALUES, or values > 1 with a depth; needles that
 * would take over half the bytes), or -errno from f. */
int bench_sniah_generate(const struct sniah_opts *o, FILE *f, struct sniah_item *item);

enum sniah_format { SNIAH_TEXT, SNIAH_DIR, SNIAH_JSONL };

/* mkdir -p path; 0, or -errno (-ENOTDIR when it is something else). */
int bench_make_dirs(const char *path);

#define SNIAH_MAX_DOCS 10000000

/* (bench/gen_docs.c) Generate the haystack of o into path: a text file (SNIAH_TEXT, as
 * bench_sniah_generate), a directory of at most `docs` files doc-00000.txt ...
 * (SNIAH_DIR: created if missing, doc-*.txt files already in it removed),
 * or a JSONL file of at most `docs` lines {"id":"doc-00000","text":"..."}
 * (SNIAH_JSONL). Documents are runs of whole lines of about equal size,
 * without their last '\n', so that rlm's corpus of them (documents joined
 * and ended by '\n') is the haystack byte for byte, and item->needle_off is
 * an offset into it. With o->values K > 1 and dir or jsonl, the K values go
 * in K distinct documents, drawn, each in the middle half of its own.
 * *n_docs gets the documents written (1 for text), *needle_doc the index
 * of the one holding the needle (the key's first), item->value_docs that
 * of each value (0 for text). Returns 0, -EINVAL (as bench_sniah_generate, or
 * docs 0 or over SNIAH_MAX_DOCS, or fewer docs than values, or documents
 * too small to keep the values apart), or -errno. */
int bench_sniah_write(const struct sniah_opts *o, enum sniah_format fmt, size_t docs, const char *path,
		struct sniah_item *item, size_t *n_docs, size_t *needle_doc);

/* ---- OOLONG-style windows (bench/gen_oolong.c, bench/gen_pairs.c) ----
 *
 * A window is OOLONG's trec_coarse context, synthesized: an instruction
 * header, then one line per instance
 *   Date: Dec 12, 2022 || User: 63685 || Instance: How far is Oslo from Lima ?
 * and a closing reminder. Each instance is a general-knowledge question of
 * one of the six TREC coarse classes, written so that its class follows from
 * its wording (docs/bench.md lists the rule), but never stated. Users are
 * Zipf-distributed over a pool of distinct 5-digit IDs, dates uniform over
 * 2022-2024. The questions (OOLONG's counting, user and timeline families,
 * and OOLONG-Pairs' pair questions) are answered from the hidden labels. */

enum oolong_label {
	OOLONG_NUM,  /* "numeric value" */
	OOLONG_ENTY, /* "entity" */
	OOLONG_LOC,  /* "location" */
	OOLONG_DESC, /* "description and abstract concept" */
	OOLONG_ABBR, /* "abbreviation" */
	OOLONG_HUM,  /* "human being" */
	OOLONG_LABELS
};

#define OOLONG_MAX_USERS 1000
#define OOLONG_DAYS	 1096 /* 2022-01-01 (day 0) to 2024-12-31 */

struct oolong_opts {
	uint64_t tokens; /* target size; bytes = 4 * tokens */
	uint64_t seed;
	int users;       /* the user pool, 2..OOLONG_MAX_USERS; 0: bench_oolong_default_users */
};

/* What a window holds, counted from its hidden labels while it is written. */
struct oolong_window {
	uint64_t bytes;                                  /* bytes written */
	size_t lines;                                    /* instances */
	int n_users;                                     /* the pool (users with no line count too) */
	uint32_t user_id[OOLONG_MAX_USERS];              /* distinct, 10000..99999, by Zipf rank */
	size_t user_lines[OOLONG_MAX_USERS];             /* instances of each user */
	size_t user_label[OOLONG_MAX_USERS][OOLONG_LABELS];
	uint16_t first_day[OOLONG_MAX_USERS][OOLONG_LABELS]; /* earliest day of a user's label, */
	uint16_t last_day[OOLONG_MAX_USERS][OOLONG_LABELS];  /* latest; when user_label > 0 */
	size_t label_count[OOLONG_LABELS];
	size_t day_count[OOLONG_DAYS];
};

/* OOLONG's name of a label: "numeric value", ..., "human being". */
const char *bench_oolong_label_name(enum oolong_label l);
/* The pool size when oolong_opts.users is 0: one user per ~8 instances,
 * from 8 to 100, so that OOLONG-Pairs' gold sets stay under 5,000 pairs. */
int bench_oolong_default_users(uint64_t tokens);
/* Write one window of o->tokens * 4 bytes (at most, and within one line of
 * it) to f and count it into a new *out, the caller's to
 * bench_oolong_window_free. The same opts give the same bytes. Returns 0,
 * -EINVAL (users out of range, or fewer than 10 instances fit), or -errno
 * from f. */
int bench_oolong_generate(const struct oolong_opts *o, FILE *f, struct oolong_window **out);
void bench_oolong_window_free(struct oolong_window *w);

/* OOLONG's question types, by family: counting, user, timeline. */
enum oolong_task {
	OOLONG_MOST_FREQ,    /* the most common label: "Label: X" */
	OOLONG_LEAST_FREQ,   /* the least common label */
	OOLONG_RELATIVE_FREQ, /* 'A' more common, less common or the same frequency as 'B' */
	OOLONG_NUMERIC_ONE_CLASS, /* how many instances of label X: a number */
	OOLONG_MOST_USER,    /* the user represented most often: "User: X" */
	OOLONG_USER_LABEL,   /* the user with the most instances of label X */
	OOLONG_MOST_DATE,    /* the date represented most often: "Date: MM/DD/YYYY" */
	OOLONG_DATE_N_TIMES, /* how many dates are represented exactly n times */
	OOLONG_TASKS
};

struct oolong_question {
	enum oolong_task task;
	char question[512];
	char answer[64]; /* the gold: a label, a comparison phrase, a user ID,
			  * MM/DD/YYYY or a count */
	bool numeric;    /* answer is a count (a JSON number in the dataset) */
};

/* "most_freq", ... (as --task spells it); its family "counting", "user" or
 * "timeline"; OOLONG's TASK_TYPE ("MOST_FREQ", ...) and ANSWER_TYPE
 * ("LABEL", "NUMERIC", "COMPARISON", "USER", "DATE"). */
const char *bench_oolong_task_name(enum oolong_task t);
const char *bench_oolong_task_group(enum oolong_task t);
const char *bench_oolong_task_type(enum oolong_task t);
const char *bench_oolong_answer_type(enum oolong_task t);
/* Ask a question of type t about w, drawing its parameters (labels, the
 * pair compared) from r, into q. OOLONG asks some only when the gold is
 * clear: MOST_FREQ when one label leads the next by over 2% of the
 * instances; LEAST_FREQ, MOST_USER, USER_LABEL and MOST_DATE when one
 * answer is alone; RELATIVE_FREQ for labels over 2% apart or tied. Returns
 * 0, or -EAGAIN when w allows no such question. */
int bench_oolong_ask(const struct oolong_window *w, enum oolong_task t, struct rng *r,
	       struct oolong_question *q);

/* ---- OOLONG-Pairs questions (bench/gen_pairs.c) ---- */

enum pairs_kind {
	PAIRS_SYMMETRIC,  /* both users have at least one instance with label A or B
			   * (and, half of the time, all of a label's instances
			   * after or before a date) */
	PAIRS_ASYMMETRIC, /* one user meets C1 and the other C2: conjunctions of
			   * "at least / exactly one / two instances with L" */
	PAIRS_KINDS
};

struct pairs_question {
	enum pairs_kind kind;
	char question[1024];
	uint32_t (*pairs)[2]; /* the gold: user ID pairs, a < b, sorted, distinct;
			       * owned (bench_pairs_question_release) */
	size_t n_pairs;
	size_t users;         /* users with an instance in the window */
	size_t qualifying;    /* symmetric: users meeting the condition;
			       * asymmetric: those meeting C1 or C2 */
};

/* "symmetric" or "asymmetric". */
const char *bench_pairs_kind_name(enum pairs_kind k);
/* Ask a pair question of kind k about w, drawing its labels, counts and
 * date from r, and fill q. Of up to 32 predicates drawn it takes the first
 * whose gold is neither empty nor every pair, else the first that is not
 * empty, else the last (large windows, where every user has every label,
 * leave little else). Returns 0. */
int bench_pairs_ask(const struct oolong_window *w, enum pairs_kind k, struct rng *r,
	      struct pairs_question *q);
void bench_pairs_question_release(struct pairs_question *q);

/* ---- BrowseComp-Plus-style bridge questions (bench/gen_browse.c) ----
 *
 * A corpus of documents (encyclopedic filler around a topic, with facts of
 * a few shapes about invented people, places, works and firms) and a
 * two-hop question: fact A in the bridge document names an entity B; fact B
 * in the answer document, about B, holds the answer. Near-duplicates of
 * both documents (a sibling subject and a namesake of B, leading to another
 * answer) and a document that names B beside another town are the
 * distractors. The answer and its aliases occur in the answer document
 * only. */

#define BROWSE_MIN_DOCS	 5
#define BROWSE_DOC_BYTES 1000 /* a document's bytes, at least */

struct browse_opts {
	uint64_t tokens; /* the corpus size; bytes = 4 * tokens, documents
			  * joined and ended by '\n' */
	uint64_t seed;
	size_t docs;     /* BROWSE_MIN_DOCS..SNIAH_MAX_DOCS; 0: bench_browse_default_docs */
};

struct browse_item {
	char question[512];
	char answers[4][128];   /* the answer, then its aliases */
	int n_answers;
	const char *chain;      /* "architect", "founder", "captain", "author" */
	char subject[128];      /* what the question names (in fact A) */
	char bridge[128];       /* B: named by fact A, the topic of fact B */
	char fact_a[320];       /* the sentence in the bridge document */
	char fact_b[320];       /* the sentence with the answer */
	size_t bridge_doc;      /* document index of fact A */
	size_t answer_doc;      /* of fact B */
	uint64_t fact_a_off;    /* byte offset of fact A in its document's text */
	uint64_t fact_b_off;
	size_t dup_docs[2];     /* near-duplicates of the bridge and answer documents */
	size_t trap_doc;        /* names B beside another town */
	size_t n_docs;
	uint64_t bytes;         /* of the documents joined and ended by '\n' */
};

/* One document per ~1,000 tokens, from 10 to 1,000 (BrowseComp-Plus' 1K
 * documents at 10M tokens), and at most one per BROWSE_DOC_BYTES; 0 when
 * not even BROWSE_MIN_DOCS fit. */
size_t bench_browse_default_docs(uint64_t tokens);
/* Write a corpus to path as a directory of doc-00000.txt ... (SNIAH_DIR:
 * created if missing, doc-*.txt files in it removed first) or a JSONL file
 * of {"id":"doc-00000","text":...} (SNIAH_JSONL), and fill it. Documents
 * are of about equal size; the same opts give the same bytes. Returns 0,
 * -EINVAL (SNIAH_TEXT, docs out of range, documents under
 * BROWSE_DOC_BYTES), or -errno. */
int bench_browse_write(const struct browse_opts *o, enum sniah_format fmt, const char *path,
		 struct browse_item *it);

/* ---- which-doc (bench/gen_which.c) ----
 * A corpus of documents with ids of their own (a JSONL's "id" field, or a
 * path under a topic folder of a directory), one of which holds a fact
 * (a reference code and a phrase), two others near misses of it, and a
 * question that asks which document holds the fact: its answer is that
 * document's id. */

enum which_ask {
	WHICH_QUOTED, /* "Which record mentions \"amber heron protocol\"?" */
	WHICH_CODE,   /* "Which file holds the reference code QX-4417? ..." */
	WHICH_PLAIN,  /* "In which record was the amber heron protocol adopted ...?" */
	WHICH_ASKS
};

struct which_item {
	char question[256];
	char answer[64];       /* the id of the document with the fact */
	char phrase[64];       /* "amber heron protocol" */
	char code[16];         /* "QX-4417" */
	char fact[192];        /* the sentence */
	enum which_ask ask;
	size_t answer_doc;     /* its index as rlm loads the corpus (a
				* directory's paths sorted) */
	size_t near_docs[2];   /* the documents with a near miss, the same way */
	size_t n_docs;
	uint64_t bytes;        /* of the documents joined and ended by '\n' */
};

/* "quoted", "code", "plain". */
const char *bench_which_ask_name(enum which_ask a);
/* Write a which-doc corpus to path, a directory (SNIAH_DIR: created if
 * missing, the .txt files of its topic folders removed first) or a JSONL
 * file of {"id","topic","text"} records (SNIAH_JSONL), o->docs documents
 * (0: bench_browse_default_docs) of about equal size, and fill it. The
 * same opts give the same bytes. Returns 0, -EINVAL (SNIAH_TEXT, docs out
 * of range, documents under BROWSE_DOC_BYTES / 2), or -errno. */
int bench_which_write(const struct browse_opts *o, enum sniah_format fmt, const char *path,
		      struct which_item *it);

/* The options every section sees. */
struct perf_opts {
	long calls;	 /* fan-out calls */
	long conc;	 /* the pool's slots */
	long latency_ms; /* the simulator's latency a call */
	long execs;	 /* REPL round trips timed */
	long starts;	 /* worker starts timed */
	bool quick;	 /* scaled down (--quick): not for comparing */
};

/* `rlm bench perf`: run the sections named in only (comma-separated; NULL:
 * all), with o's counts (0: the defaults, scaled down when o->quick), and
 * print the table, or the JSON when json, on out. Returns an exit status:
 * 0 when every row met its target, 1 when one did not or a section failed,
 * 2 when only names no section (said on stderr). */
int bench_perf_main(struct perf_opts *o, const char *only, bool json, FILE *out);
/* The help text of `rlm bench perf` (bench/perf.c). */
extern const char bench_perf_usage[];

/* ---- the REPL worker (bench/perf_repl.c) ---- */

/* Run `x = 1` n times in each of two workers (tiny context), taking
 * turns: [0] with every layer of the sandbox the machine has, [1] with none
 * (sandbox.disable = REPL_L_ALL, unsafe); the p50 and p99 of repl_exec's
 * wall time in microseconds. Returns 0 or a negative code with err. */
int bench_perf_repl_roundtrip(size_t n, double p50_us[2], double p99_us[2], struct rlm_err *err);
/* Start a worker on a tiny context until it is ready, n times each (after
 * one not counted), taking turns: [0] sandboxed and [1] not, as above,
 * both started cold (python3 itself); [2] sandboxed and forked by the
 * zygote, while another REPL holds it (a child node's start); the medians
 * in milliseconds. */
int bench_perf_repl_start(size_t n, double ms[3], struct rlm_err *err);
/* Start a worker on ctx_bytes of ASCII text until it is ready (`context`
 * is a str), with the full sandbox; the median of 5 starts in
 * milliseconds, and the copies of the text the worker holds once ready:
 * its private memory (RssAnon) over a worker's on a tiny context, in units
 * of the text, the largest of the 5 (the str is one; the memfd it decoded
 * is shared and unmapped by then); -1 when /proc does not tell. */
int bench_perf_repl_ready(size_t ctx_bytes, double *ms, double *copies, struct rlm_err *err);
/* search() in a worker over ctx_bytes of documents (4 KB each, their ids
 * in the metadata): the median of 5 of a literal that occurs in 3 of them
 * into *literal_ms, of a regular expression anchored at line ends with
 * many hits (returned, up to 100,000, into *hits) into *regex_ms.
 * (bench/perf_repl.c) */
int bench_perf_repl_search(size_t ctx_bytes, double *literal_ms, double *regex_ms, size_t *hits,
			   struct rlm_err *err);

/* ---- a JSON context (bench/perf_json.c) ---- */

struct bench_json_load {
	size_t bytes, records;   /* the .json file: an array of records */
	double load_ms;          /* corpus_load (mapped, checked, records found) */
	double ready_ms;         /* load + a sandboxed worker whose `context` is
				  * the parsed list */
	double worker_mb;        /* its VmRSS then (-1: unknown) */
	double worker_peak_mb;   /* its VmHWM: the str and the value at once */
	double controller_mb;    /* this process's VmRSS, pages of the file
				  * released */
};
/* Write a JSON array of records of about bytes to a temporary file, load
 * it and start a worker on it, measuring. Returns 0 or a negative code
 * with err. */
int bench_perf_json_load(size_t bytes, struct bench_json_load *out, struct rlm_err *err);

/* ---- the store (bench/perf_store.c) ---- */

/* Keep n_keys model calls in a fresh store, then look n of them up (all
 * hits): per_s[0] lookups per second from one thread, per_s[1] from eight
 * at once. Returns 0 or a negative code with err. */
int bench_perf_store_lookups(size_t n_keys, size_t n, double per_s[2], struct rlm_err *err);
/* Remove a store file and its -wal and -shm. */
void bench_store_remove(const char *path);

/* ---- 10M-token scale (bench/perf_scale.c) ---- */

/* One 10M-token repl solve, in a process of its own (rlm solve). */
struct perf_scale_solve {
	double peak_mb;    /* what the controller held at its peak, in 1e6 bytes:
			    * its private and file pages plus its shared memory,
			    * the memfds it made included, mapped or not
			    * (RssAnon + RssFile + max(RssShmem, memfds), sampled
			    * every 2 ms, and at least VmHWM) */
	double hwm_mb;     /* VmHWM alone: mapped pages only */
	double memfd_mb;   /* the memfds it held at that peak */
	double memfd_most_mb; /* the most memfds it held at any time: the
			       * context once when children view it */
	double solve_s;    /* wall time (rlm solve, start to end) */
	long sub_calls;    /* sub-calls and child nodes of the solve */
	long nodes;
};

struct perf_scale {
	uint64_t bytes;    /* context bytes */
	struct perf_scale_solve text, dir, jsonl; /* the three kinds of corpus */
	bool tmpfs;        /* the corpora were on a tmpfs: their mapped pages
			    * may be counted in place of a memfd's */
	double dir_ms;     /* corpus_load of the directory */
	double dir_held;   /* peak RSS growth of that load / the text's bytes */
	size_t dir_docs;
	double jsonl_ms;   /* corpus_load of the JSONL file */
	double jsonl_held;
	size_t jsonl_docs;
};

/* Generate a `tokens`-token S-NIAH haystack as a text file, a directory of
 * a document per 2,000 tokens and a JSONL of a document per 1,000 tokens;
 * solve each on the simulator (`rlm solve --provider sim`, repl strategy,
 * recursive at 10M tokens) and load the directory and the JSONL, each in a
 * fresh child process (this binary's `rlm bench perf --child`), and fill
 * out. A wrong answer is an error. Returns 0 or a negative code with err. */
int bench_perf_scale_run(uint64_t tokens, struct perf_scale *out, struct rlm_err *err);
/* `rlm bench perf --child REPORT solve ARGS...` runs `rlm solve ARGS...`,
 * (through solve, the command's own function: cli_solve), `... load
 * PATH` loads PATH; either writes "key value" lines to REPORT
 * (status, wall_ns, peak_kb, hwm_kb, memfd_kb and memfd_peak_kb, or
 * load_ns, held_kb, bytes and docs). Returns an exit status. */
int bench_perf_scale_child(int argc, char **argv, int (*solve)(int argc, char **argv));

/* ---- `rlm serve` under load (bench/perf_serve.c) ---- */

struct perf_serve {
	int clients;            /* concurrent clients, one keep-alive connection each */
	size_t requests;        /* solves measured, after a warm-up of one per client */
	double wall_s;          /* the measured requests, first sent to last answered */
	double solves_per_s;    /* requests / wall_s */
	double p50_ms, p99_ms;  /* a request's wall time at the client (nearest rank) */
	double max_ms;
	double calls_per_solve; /* model calls per measured solve, from the results */
	long cached_calls;      /* of those, answered by the store (0: all distinct) */
	double cpu_ms_per_solve; /* busy CPU of the whole machine per measured solve
				  * (server, workers, clients); -1 unknown */
	int cores;              /* online CPUs */
	long errors;            /* measured requests that failed or answered wrong */
	long warm_errors;       /* the same in the warm-up batch */
	char first_error[160];  /* the first failure, over both batches; "" none */
	int keep_runs;          /* the server's --keep-runs (clients) */
	size_t corpus_cache;    /* its --corpus-cache: the warm-up's bodies */
	double rss_warm_mb;     /* the server's VmRSS after the warm-up, 1e6 bytes */
	double rss_half_mb;     /* once half the measured requests were answered */
	double rss_end_mb;      /* and after the measured requests */
	double hwm_mb;          /* its VmHWM then */
	int exit_status;        /* the server's after SIGTERM (128 + signal), -1 unknown */
	double stop_ms;         /* SIGTERM to its exit */
};

/* Start the real `rlm serve` (this binary) on the simulator with every
 * model call taking latency_ms, a store of its own in a temporary
 * directory, --max-solves 64, --keep-runs clients and a --corpus-cache the
 * size of the warm-up's contexts; post `clients` synchronous solves (POST
 * /v1/solve, an 8k-token S-NIAH haystack and needle key of its own each)
 * as a warm-up, then `requests` more from `clients` threads at once,
 * checking that each is 200, "done" and holds its needle; SIGTERM the
 * server and fill out. A request
 * that fails is counted in out, not an error. Returns 0, or a negative
 * code with err when the load could not run (the server did not start,
 * no threads). Call from one thread. */
int bench_perf_serve_run(int clients, size_t requests, long latency_ms, struct perf_serve *out,
		   struct rlm_err *err);

/* ---- more of S-NIAH, and the other suites' generators ---- */

/* o->distractors, at most. */
#define SNIAH_MAX_DISTRACTORS 1000
/* The word values (SNIAH_WORD): o->values and o->distractors together, at
 * most. */
#define SNIAH_WORD_VALUES 105

/* bench_sniah_generate, for a haystack that bench_sniah_write cuts into `parts`
 * documents of about equal size: with o->values K > 1, the K values go in
 * K distinct parts drawn from the seed, each in the middle half of its
 * part (so in K distinct documents, unless the documents are only a few
 * lines long); parts 0: at K distinct RULER depths, as bench_sniah_generate.
 * -EINVAL as bench_sniah_generate, or when parts is below K. */
int bench_sniah_generate_parts(const struct sniah_opts *o, size_t parts, FILE *f,
			 struct sniah_item *item);
/* "number", "word" or "uuid": v as --value and an item's value_type
 * spell it. */
const char *bench_sniah_value_name(enum sniah_value v);

/* ---- `rlm bench run` (bench/run.c, cli/cli_bench_run.c, bench/report.c) ---- */

/* One (item, strategy) solved: what the summary needs of a line of
 * DIR/results.jsonl. Strings owned (bench_res_release). */
/* How an item's solve used host tools (rlm_tool_stats, docs/tools.md). */
struct bench_tools {
	bool used;               /* the solve had tools (the "tools" member) */
	int64_t discovery;       /* listings, searches and infos */
	int64_t calls;           /* tool calls asked for */
	int64_t blind;           /* of which without reading the tool's info */
	int64_t schema_refused;  /* refused by the schema check */
	int64_t repeated;        /* repeated listings and searches */
};

struct bench_res {
	char *id;
	char *suite;
	char *strategy;    /* "repl", "tree" or "direct" */
	int64_t tokens;    /* the item's context length */
	double score;      /* in [0, 1]; 0 when failed */
	double wall_ms;    /* the solve, the context's loading included */
	double cost;       /* USD */
	bool failed;       /* the solve failed (error): scored 0 */
	bool cut;          /* direct: the context was cut to the model's window */
	bool cached;       /* every answer came from the store: wall_ms is the cache's */
	bool approx;       /* tokens is the context's bytes / 4 (the item gave
			    * none): the summary groups it by bench_size_bucket */
	struct bench_tools tools; /* host tools: the discovery health */
};

void bench_res_release(struct bench_res *r);

/* What the summary is about; every pointer borrowed for the call. */
struct bench_report {
	const struct bench_res *res;     /* the results, one per (item, strategy) */
	size_t n;
	const char *const *strategies;   /* in the order given to --strategy */
	size_t n_strategies;
	const char *command;             /* the command line, as typed (no API key) */
	const char *date;                /* e.g. "2026-11-23 18:15 UTC" */
	const char *models;              /* a Markdown line naming the models */
	const char *model, *sub_model;   /* their names (summary.json) */
	const char *const *datasets;
	size_t n_datasets;
	const char *notes;               /* Markdown paragraphs for the end, or NULL */
};

/* The q-quantile (0..1) of v[0..n), linearly interpolated between the
 * closest ranks (numpy's default); sorts v. 0 when n is 0. */
double bench_quantile(double *v, size_t n, double q);
/* "8k", "128k", "1M", "10M", "1.5k", "500": tokens as sizes are written. */
void bench_fmt_tokens(int64_t tokens, char *buf, size_t n);
/* The power of two nearest tokens on a log scale (1 for 0): the size at
 * which an item of estimated length is summarised. */
int64_t bench_size_bucket(int64_t tokens);
/* A row's size: bench_fmt_tokens, or for a bucket (approx) "~" and the
 * power of two in binary units: "~128", "~8k", "~1M". */
void bench_fmt_size(int64_t tokens, bool approx, char *buf, size_t n);
/* The summary as plain-text tables: the mean score per suite x size x
 * strategy, then latency and cost per item at p25/p50/p75/p95 per
 * strategy. */
void bench_report_print(const struct bench_report *r, FILE *f);
/* Write dir/report.md (the command, date, rlm's version and commit,
 * models, datasets, the tables: score per suite x size x strategy, latency
 * and cost per item at p25/p50/p75/p95 per strategy and per suite x size
 * x strategy; the plots, the notes), dir/summary.json (the same numbers),
 * dir/score_vs_length.svg (the mean score against the context length, log
 * x, one line per suite x strategy) and dir/cost_latency.svg (latency and
 * cost per item at p25/p50/p75/p95 per strategy). Returns 0 or -errno with
 * err naming the file. */
int bench_report_write(const struct bench_report *r, const char *dir, struct rlm_err *err);

/* ---- the other suites (gen_oolong.c, gen_pairs.c, gen_browse.c,
 * gen_which.c, gen_suites.c) ---- */

/* A paragraph of the essay haystack (300-700 bytes of ASCII, no newline, no
 * digits, no hyphens) into dst (LINE_MAX_BYTES of gen.c: 1,024). */
size_t bench_gen_essay_line(struct rng *r, char *dst);
/* Day 0..OOLONG_DAYS-1 (0: 2022-01-01) as a calendar date, m and d from 1. */
void bench_oolong_day_date(int day, int *y, int *m, int *d);

enum gen_suite { GEN_SNIAH, GEN_OOLONG, GEN_PAIRS, GEN_BROWSE, GEN_WHICH };

/* One item of `rlm bench gen` for bench_gen_suite_item. */
struct gen_req {
	enum gen_suite suite;
	const char *dir;	  /* --out */
	const char *id;		  /* "oolong-8k-0": the item's id and file name */
	const char *size_name;	  /* "8k", as --sizes gave it */
	uint64_t tokens;
	uint64_t seed;		  /* the item's own */
	int users;		  /* oolong, oolong-pairs: --users, 0 by size */
	unsigned tasks;		  /* oolong: a bit per enum oolong_task; pairs:
				   * per enum pairs_kind; drawn among them */
	size_t docs;		  /* browse, which-doc: --docs, 0 by size */
	enum sniah_format format; /* browse, which-doc: SNIAH_DIR or SNIAH_JSONL */
};

/* Parse --task for suite into a mask of what to draw from: oolong takes a
 * task name (bench_oolong_task_name), a family ("counting", "user",
 * "timeline") or "any"; oolong-pairs "symmetric", "asymmetric" or "any".
 * Returns 0 or RLM_EINVAL. */
int bench_gen_task_parse(enum gen_suite suite, const char *s, unsigned *mask);
/* Write the context of r and its JSONL line to jl (at jl_path, for
 * messages), with a line about it on stderr. Returns an exit status: 0, 1
 * (I/O), or 2 (the size cannot hold the item), with the message printed. */
int bench_gen_suite_item(const struct gen_req *r, FILE *jl, const char *jl_path);

/* Remove the doc-*.txt files an earlier run left in dir (bench/gen_docs.c).
 * Returns 0 or -errno. */
int bench_gen_clear_docs(const char *dir);

/* ---- `rlm bench run`: the engine (bench/run.c) ---- */

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
