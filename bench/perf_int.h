/* SPDX-License-Identifier: MIT */
/* bench/perf_int.h -- what `rlm bench perf`'s files share: a row of its
 * table, the sections of measurements (bench/perf.c, with its perf_*.c
 * helpers), and the frame around them (bench/perf_frame.c): a section run
 * with its errors kept, the table and the JSON. */
#ifndef RLM_BENCH_PERF_INT_H
#define RLM_BENCH_PERF_INT_H

#include "bench.h"

#include <stdio.h>
#include <sys/types.h>

/* One measurement next to its target. */
struct perf_row {
	const char *name;
	const char *target;
	double value; /* the measurement, in `unit` */
	const char *unit;
	double limit;  /* pass when value <= limit (>= with at_least) */
	bool at_least; /* more is better: pass when value >= limit */
	char note[200];
	double copies;	 /* copies of the text held (DESIGN: "one copy at most"):
			  * the memory held over the text's size; 0: not counted */
	bool failed;	 /* its section failed: no measurement */
	char error[240]; /* why, when failed */
};

/* A row holds one copy of the text when it holds at most this many times
 * its size: the text and its working buffers (a second copy makes 2). */
#define PERF_COPIES_MAX 1.25

/* A row's name and target before it is measured. */
struct perf_label {
	const char *name, *target;
};

/* A group of rows measured together; fails as a whole. */
struct perf_section {
	const char *name;		 /* as --only spells it */
	size_t first, n;		 /* its rows: rows[first .. first + n) */
	const struct perf_label *labels; /* theirs, for the table when it fails */
	int (*run)(const struct perf_opts *o, struct perf_row *rows); /* 0 or 1 */
};

/* The sections in the order they run, and their rows: rows
 * [0, PERF_ROWS) in the order they print; the usage text (bench/perf.c). */
#define PERF_ROWS 25
extern const struct perf_section bench_perf_sections[];
extern const size_t bench_perf_n_sections;

/* This process's user + system CPU seconds so far. */
double bench_perf_cpu_s(void);
/* Start `rlm sim-serve --sim spec` (this binary) on an ephemeral port:
 * its pid and *port, or -1. */
pid_t bench_perf_server_start(const char *spec, int *port);
/* SIGTERM it and reap it. */
void bench_perf_server_stop(pid_t pid);

/* The batch rows (bench/perf_batch.c): a scripted solve's one batch of
 * 256 sub-calls over a 10M-token context at zero latency (the
 * controller's share of its wall time) and at o->latency_ms (against its
 * ideal). 0 or 1, as a section. */
int bench_perf_batch_rows(const struct perf_opts *o, struct perf_row *share,
			  struct perf_row *eff);

struct rlm_result;
/* The ideal wall time of the solve whose result is root, in call
 * latencies: its tree of calls (each node's root calls; its plain
 * sub-calls and children all sent by the exec of its next-to-last turn,
 * the simulator's shape) scheduled by a controller that takes no time, on
 * conc slots, first come first served: a number of waves of at most conc
 * calls (bench/perf_ideal.c). */
int64_t bench_perf_ideal_waves(const struct rlm_result *root, int conc);

#endif
