/* SPDX-License-Identifier: MIT */
/* store/export_int.h -- what export.c (reading and checking a run, the
 * HTML page) and trajectory.c (the JSONL trajectory) share: the run's
 * events checked and filed under a table of nodes. */
#ifndef RLM_STORE_EXPORT_INT_H
#define RLM_STORE_EXPORT_INT_H

#include "export.h"
#include "../common/json.h"

#include <stdbool.h>
#include <stdint.h>

#define OUT_MAX ((size_t)1 << 30) /* the largest export */
#define NO_EV	SIZE_MAX

/* One event, its fields checked. Strings are borrowed from the run. */
struct ev {
	const char *kind;
	const char *text;  /* NULL when null or absent */
	const cJSON *data; /* an object, or NULL */
	int64_t t_ns;
	int node;
	int iteration; /* 0: none */
};

struct node {
	int id, parent, depth;
	int level;   /* nodes above it: the writers recurse that deep */
	size_t *evs; /* its events (indices into xrun.ev), in order */
	size_t n_evs, cap_evs;
	size_t *kids; /* its children (indices into xrun.nodes), in start order */
	size_t n_kids, cap_kids;
	size_t anchor;	  /* the parent's "code" event that started it, or NO_EV */
	size_t last_code; /* its latest "code" event so far */
	size_t start;	  /* its "child" event, or NO_EV */
	size_t end;	  /* its "child_end" event, or NO_EV */
	size_t prompt;	  /* its "prompt" event, or NO_EV */
	int64_t calls;	  /* its own "call" events */
};

struct xrun {
	const cJSON *run;
	const char *id; /* for messages */
	struct ev *ev;
	size_t n_ev;
	struct node *nodes;
	size_t n_nodes, cap_nodes;
	int *slot; /* node number -> index into nodes, -1: none */
	size_t n_slot;
	const cJSON *meta; /* the metadata line's fields (no type, no timestamp) */
	const char *model; /* the root model's name, for usage summaries */
	const char *sub_model; /* the sub-calls' model, when a call names none */
	bool has_created;
	int64_t created_ms;
	struct rlm_err *err;
};

/* Check run (store/export.h has the rules) and build its table of nodes
 * into x; 0, or RLM_EPARSE with err naming the run and the event (x is
 * then empty). x borrows from run until store__xrun_release. */
int store__xrun_load(struct xrun *x, const cJSON *run, struct rlm_err *err);
void store__xrun_release(struct xrun *x);
/* Append JSON text s to b with U+2028 and U+2029 and, for HTML, '<', '>'
 * and '&' written as \uXXXX; 0 or RLM_ETOOBIG. */
int store__put_escaped(struct buf *b, const char *s, bool html);
/* Release b and return NULL with x's err saying the export (what) is
 * over OUT_MAX. */
char *store__too_big(struct xrun *x, struct buf *b, const char *what);

#endif
