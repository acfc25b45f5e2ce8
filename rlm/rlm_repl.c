/* SPDX-License-Identifier: MIT */
/* rlm/rlm_repl.c -- a REPL worker bound to a context with its sub-calls
 * wired as in a solve, driven from outside (`rlm repl`: cells typed by a
 * person instead of written by a root model).
 *
 * DESIGN
 * The REPL is the worker of a one-node solve that never calls its root
 * model: the nodes of a solve (the budget, the depth and node limits child RLMs obey),
 * the calls of node 0 (the worker's call handler: llm_query* on the pool,
 * rlm_query* as child RLMs below max_depth), and the worker, started as
 * loop.c starts a node's. The counts the calls keep go nowhere: no run is
 * recorded and nothing is asked of a store. The caller's setup code runs
 * as at a root node: once the worker is up, and again before the next
 * cell after a restart. */
#include "solve_int.h"

#include <stdlib.h>
#include <string.h>

struct rlm_repl {
	struct rlm_opts o;	  /* the caller's, copied: what the calls and
				   * the nodes point to */
	struct rlm_result counts; /* what the sub-calls spent (calls count
				   * into it) */
	struct rlm_nodes nodes;	  /* the one-node solve of the calls */
	struct calls calls;	  /* node 0's: the worker's call handler */
	struct repl *repl;	  /* NULL until started */
	int setup_at;		  /* the worker's restarts when the setup code
				   * last ran (rlm__setup_run) */
};

int rlm_repl_open(const struct rlm_opts *o, const struct corpus *ctx, struct rlm_repl **out,
		  struct rlm_err *err)
{
	struct rlm_repl *r;
	struct repl_cfg cfg;
	struct rlm__worker_ctx wc;
	int rc;
	*out = NULL;
	if (!o->pool || !o->model)
		return rlm_err_set(err, RLM_EINVAL, "no pool or no model to call");
	r = xcalloc(1, sizeof(*r));
	r->o = *o;
	r->o.strategy = RLM_REPL;
	r->o.skills = o->skills ? o->skills : o->store; /* skills outlive the REPL */
	r->o.store = NULL;
	r->o.record_ = NULL;
	rlm__nodes_init(&r->nodes, &r->o, time_now_ns());
	rlm__calls_init(&r->calls, &r->o, &r->counts, &r->nodes, 0, 0);
	r->calls.ctx = ctx;
	rlm__calls_worker_cfg(&r->calls, r->nodes.max_depth <= 1 /* no child RLMs below */, &cfg);
	rlm__worker_ctx_init(&wc, ctx);
	cfg.ctx = wc.ctx;
	rc = repl_start(&cfg, &r->repl, err);
	rlm__worker_ctx_release(&wc);
	if (rc) {
		rlm_repl_close(r);
		return rc;
	}
	r->calls.repl = r->repl;
	r->setup_at = -1;
	if ((rc = rlm__setup_run(r->repl, r->o.setup_code, 0, &r->setup_at, err))) {
		rlm_repl_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

int rlm_repl_exec(struct rlm_repl *r, const char *code, size_t len, int64_t deadline_ns,
		  struct repl_result *out, struct rlm_err *err)
{
	int rc = rlm__setup_run(r->repl, r->o.setup_code, deadline_ns, &r->setup_at, err);
	if (rc) {
		memset(out, 0, sizeof(*out));
		return rc;
	}
	return repl_exec(r->repl, code, len, deadline_ns, out, err);
}

void rlm_repl_sandbox_status(const struct rlm_repl *r, struct repl_sandbox_status *out)
{
	repl_sandbox_status(r->repl, out);
}

void rlm_repl_close(struct rlm_repl *r)
{
	if (!r)
		return;
	repl_free(r->repl);
	rlm__calls_release(&r->calls);
	rlm__nodes_release(&r->nodes);
	rlm_result_release(&r->counts);
	free(r);
}
