/* SPDX-License-Identifier: MIT */
/* bench/bench.h -- dataset generators, scorers, and the performance suite.
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

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/common.h"

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
	size_t value_docs[SNIAH_MAX_VALUES];   /* the document holding each (sniah_write) */
};

/* 8000 tokens, seed 1, essay haystack, number value, drawn depth, no
 * distractors, one value, ASCII. */
void sniah_opts_default(struct sniah_opts *o);
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
int sniah_generate(const struct sniah_opts *o, FILE *f, struct sniah_item *item);

enum sniah_format { SNIAH_TEXT, SNIAH_DIR, SNIAH_JSONL };

/* mkdir -p path; 0, or -errno (-ENOTDIR when it is something else). */
int bench_make_dirs(const char *path);

#define SNIAH_MAX_DOCS 10000000

/* (bench/gen_docs.c) Generate the haystack of o into path: a text file (SNIAH_TEXT, as
 * sniah_generate), a directory of at most `docs` files doc-00000.txt ...
 * (SNIAH_DIR: created if missing, doc-*.txt files already in it removed),
 * or a JSONL file of at most `docs` lines {"id":"doc-00000","text":"..."}
 * (SNIAH_JSONL). Documents are runs of whole lines of about equal size,
 * without their last '\n', so that rlm's corpus of them (documents joined
 * and ended by '\n') is the haystack byte for byte, and item->needle_off is
 * an offset into it. With o->values K > 1 and dir or jsonl, the K values go
 * in K distinct documents, drawn, each in the middle half of its own.
 * *n_docs gets the documents written (1 for text), *needle_doc the index
 * of the one holding the needle (the key's first), item->value_docs that
 * of each value (0 for text). Returns 0, -EINVAL (as sniah_generate, or
 * docs 0 or over SNIAH_MAX_DOCS, or fewer docs than values, or documents
 * too small to keep the values apart), or -errno. */
int sniah_write(const struct sniah_opts *o, enum sniah_format fmt, size_t docs, const char *path,
		struct sniah_item *item, size_t *n_docs, size_t *needle_doc);

/* ---- the REPL worker (bench/perf_repl.c) ---- */

/* Run `x = 1` n times in each of two workers (tiny context), taking
 * turns: [0] with every layer of the sandbox the machine has, [1] with none
 * (sandbox.disable = REPL_L_ALL, unsafe); the p50 and p99 of repl_exec's
 * wall time in microseconds. Returns 0 or a negative code with err. */
int perf_repl_roundtrip(size_t n, double p50_us[2], double p99_us[2], struct rlm_err *err);
/* Start a worker on a tiny context until it is ready, n times each (after
 * one not counted), taking turns: [0] sandboxed and [1] not, as above,
 * both started cold (python3 itself); [2] sandboxed and forked by the
 * zygote, while another REPL holds it (a child node's start); the medians
 * in milliseconds. */
int perf_repl_start(size_t n, double ms[3], struct rlm_err *err);
/* Start a worker on ctx_bytes of ASCII text until it is ready (`context`
 * is a str), with the full sandbox; the median of 5 starts in
 * milliseconds. */
int perf_repl_ready(size_t ctx_bytes, double *ms, struct rlm_err *err);

/* ---- the store (bench/perf_store.c) ---- */

/* Keep n_keys model calls in a fresh store, then look n of them up (all
 * hits): per_s[0] lookups per second from one thread, per_s[1] from eight
 * at once. Returns 0 or a negative code with err. */
int perf_store_lookups(size_t n_keys, size_t n, double per_s[2], struct rlm_err *err);

/* ---- 10M-token scale (bench/perf_scale.c) ---- */

struct perf_scale {
	uint64_t bytes;    /* context bytes */
	double peak_mb;    /* the controller's VmHWM over a repl solve, in 1e6 bytes */
	double solve_s;    /* that solve's wall time (rlm solve, start to end) */
	long sub_calls;    /* its sub-calls */
	double dir_ms;     /* corpus_load of the directory */
	double dir_held;   /* peak RSS growth of that load / the text's bytes */
	size_t dir_docs;
	double jsonl_ms;   /* corpus_load of the JSONL file */
	double jsonl_held;
	size_t jsonl_docs;
};

/* Generate a `tokens`-token S-NIAH haystack as a text file, a directory of
 * a document per 2,000 tokens and a JSONL of a document per 1,000 tokens;
 * solve the text on the simulator (`rlm solve --provider sim`, repl
 * strategy) and load the other two, each in a fresh child process (this
 * binary's `rlm bench perf --child`), and fill out. A wrong answer is an
 * error. Returns 0 or a negative code with err. */
int perf_scale_run(uint64_t tokens, struct perf_scale *out, struct rlm_err *err);
/* `rlm bench perf --child REPORT solve ARGS...` runs `rlm solve ARGS...`,
 * `... load PATH` loads PATH; either writes "key value" lines to REPORT
 * (peak_kb and wall_ns, or load_ns, held_kb, bytes and docs). Returns an
 * exit status. */
int perf_scale_child(int argc, char **argv);

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
	double rss_warm_mb;     /* the server's VmRSS after the warm-up, 1e6 bytes */
	double rss_end_mb;      /* and after the measured requests */
	double hwm_mb;          /* its VmHWM then */
	int exit_status;        /* the server's after SIGTERM (128 + signal), -1 unknown */
	double stop_ms;         /* SIGTERM to its exit */
};

/* Start the real `rlm serve` (this binary) on the simulator with every
 * model call taking latency_ms, a store of its own in a temporary
 * directory and --max-solves 64; post `clients` synchronous solves (POST
 * /v1/solve, an 8k-token S-NIAH haystack and needle key of its own each)
 * as a warm-up, then `requests` more from `clients` threads at once,
 * checking that each is 200, "done" and holds its needle; SIGTERM the
 * server and fill out. A request
 * that fails is counted in out, not an error. Returns 0, or a negative
 * code with err when the load could not run (the server did not start,
 * no threads). Call from one thread. */
int perf_serve_run(int clients, size_t requests, long latency_ms, struct perf_serve *out,
		   struct rlm_err *err);

#endif
