/* SPDX-License-Identifier: MIT */
/* bench/perf_ideal.c -- the ideal wall time of a recursive solve: its
 * calls, scheduled by a controller that costs nothing.
 *
 * DESIGN
 * The recursive fan-out row compares a real solve with what no controller
 * can beat. The bound "serial root calls + leaves in full waves" is not
 * that: it lets every node's root calls run beside the leaves for free,
 * when they need slots of the same pool (a tree of 144 nodes makes 432 of
 * them). So the ideal is computed instead: the solve's own tree (from its
 * rlm_result: each node's root calls, children and plain sub-calls), run
 * in ticks of one call latency with `conc` slots, first come first served,
 * where the controller, the workers and the network take no time at all.
 * Every call then starts and ends on a tick, so a tick is a wave of at
 * most `conc` calls, and the answer is a whole number of waves.
 *
 * A node's shape is the simulator's policy: root call after root call;
 * the exec after its next-to-last one (its fan-out turn; the first when it
 * made one) sends all of its plain sub-calls and starts all of its
 * children at once, and its next root call waits for them. Other execs
 * send nothing. */
#include "perf_int.h"
#include "../rlm/rlm.h"

#include <stdlib.h>

struct inode {
	int parent;          /* index, -1 for the root */
	int64_t root_calls;  /* R: its turns */
	int64_t fan;         /* the turn whose exec fans out, 1..R */
	int64_t leaves;      /* its plain sub-calls */
	int first, n_kids;   /* its children, indices first .. first + n_kids - 1 */
	int64_t next;        /* root calls made so far */
	int64_t pending;     /* leaves and children of the fan-out not yet done */
};

struct icall {
	int node;
	bool root;
};

struct isim {
	struct inode *n;
	size_t n_nodes;
	struct icall *q;     /* every call ever queued, in order */
	size_t head, tail, cap;
	bool done;
};

static size_t count_nodes(const struct rlm_result *r)
{
	size_t n = 1;
	for (size_t i = 0; i < r->n_children; i++)
		n += count_nodes(&r->children[i]);
	return n;
}

/* Lay r's tree out breadth-first under index at: children of a node are
 * consecutive. *used is the next free index. */
static void lay_out(struct isim *s, const struct rlm_result *r, int at, int parent, size_t *used)
{
	struct inode *n = &s->n[at];
	int64_t plain = r->sub_calls;
	for (size_t i = 0; i < r->n_children; i++)
		plain -= 1 + r->children[i].sub_calls; /* a child is one, plus its own */
	n->parent = parent;
	n->root_calls = r->root_calls > 0 ? r->root_calls : 1;
	n->fan = n->root_calls > 1 ? n->root_calls - 1 : 1;
	n->leaves = plain > 0 ? plain : 0;
	n->first = (int)*used;
	n->n_kids = (int)r->n_children;
	*used += r->n_children;
	for (size_t i = 0; i < r->n_children; i++)
		lay_out(s, &r->children[i], n->first + (int)i, at, used);
}

static void push(struct isim *s, int node, bool root)
{
	if (s->tail == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->q = xrealloc(s->q, s->cap * sizeof(*s->q));
	}
	s->q[s->tail].node = node;
	s->q[s->tail].root = root;
	s->tail++;
}

static void node_start(struct isim *s, int i)
{
	push(s, i, true);
}

static void node_done(struct isim *s, int i);

/* Node i's next turn, or its end. */
static void node_next(struct isim *s, int i)
{
	if (s->n[i].next < s->n[i].root_calls)
		push(s, i, true);
	else
		node_done(s, i);
}

static void work_done(struct isim *s, int i)
{
	if (--s->n[i].pending == 0)
		node_next(s, i);
}

static void node_done(struct isim *s, int i)
{
	if (s->n[i].parent < 0)
		s->done = true;
	else
		work_done(s, s->n[i].parent);
}

/* Node i's root call ended. */
static void root_done(struct isim *s, int i)
{
	struct inode *n = &s->n[i];
	n->next++;
	if (n->next != n->fan || n->leaves + n->n_kids == 0) {
		node_next(s, i);
		return;
	}
	n->pending = n->leaves + n->n_kids;
	for (int64_t k = 0; k < n->leaves; k++)
		push(s, i, false);
	for (int k = 0; k < n->n_kids; k++)
		node_start(s, n->first + k);
}

int64_t bench_perf_ideal_waves(const struct rlm_result *root, int conc)
{
	struct isim s = {0};
	size_t used = 1;
	int64_t waves = 0;
	s.n_nodes = count_nodes(root);
	s.n = xcalloc(s.n_nodes, sizeof(*s.n));
	lay_out(&s, root, 0, -1, &used);
	node_start(&s, 0);
	while (!s.done && s.head < s.tail) {
		/* A wave: up to conc calls start now and all end one latency
		 * later, in the order they started. */
		size_t end = s.head + (size_t)conc < s.tail ? s.head + (size_t)conc : s.tail;
		waves++;
		for (size_t k = s.head; k < end; k++) {
			struct icall c = s.q[k];
			if (c.root)
				root_done(&s, c.node);
			else
				work_done(&s, c.node);
		}
		s.head = end;
	}
	free(s.q);
	free(s.n);
	return waves;
}
