/* SPDX-License-Identifier: MIT */
/* bench/perf_batch.c -- the batch rows of `rlm bench perf`: one
 * llm_query_batched of 256 prompts over a 10M-token context, the data path
 * from the model's code to the wire and back.
 *
 * DESIGN
 * The trajectory is scripted, so that what is measured is the controller
 * and not a model's choices: the root model is an in-process provider of
 * this file that answers its first call with one code block (cut
 * `context` into N pieces, ask each the question in one
 * llm_query_batched, keep the first answer found) and its second with the
 * answer; the sub-calls go over loopback HTTP to `rlm sim-serve`, which
 * answers each from the piece it is sent. The code times itself with
 * time.perf_counter: its own Python work (the slicing and the prompt
 * strings, reading the replies) apart from the time inside
 * llm_query_batched, and puts both in its answer.
 *
 * The controller's share of a solve is its wall time less the model code's
 * own Python time less the server's time (its CPU time over the solve,
 * from /proc/PID/stat: at zero latency the server only computes). What is
 * left is the controller's work and the runtime's: starting the worker and
 * loading the context, the batch's trip from the code to the wire
 * (encoding, the pipe, the request bodies) and the replies' way back.
 * At a latency of MS a call, the same solve against its ideal: the root's
 * two calls and ceil(N / C) waves of sub-calls, each MS
 * (bench_perf_ideal_waves of the solve's own tree). */
#include "perf_int.h"
#include "../llm/llm.h"
#include "../rlm/rlm.h"
#include "../common/json.h"
#include "../corpus/corpus.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* ---- the scripted root model ---- */

/* The turn-1 code: N (%ld) pieces of `context`, each asked the question
 * (%s, a Python literal); the timings and the first answer go to
 * `result`, which turn 2 returns. */
static const char code_fmt[] =
    "```repl\n"
    "import time\n"
    "t0 = time.perf_counter()\n"
    "n = %ld\n"
    "size = -(-len(context) // n)\n"
    "prompts = ['Question: ' + %s + '\\n\\nText:\\n' + context[i:i + size]\n"
    "           for i in range(0, len(context), size)]\n"
    "t1 = time.perf_counter()\n"
    "replies = llm_query_batched(prompts)\n"
    "t2 = time.perf_counter()\n"
    "found = [r for r in replies if r.strip() and 'NONE' not in r and\n"
    "         not r.startswith('Error:')]\n"
    "errors = sum(1 for r in replies if r.startswith('Error:'))\n"
    "t3 = time.perf_counter()\n"
    "result = 'own_ms=%%.3f call_ms=%%.3f calls=%%d errors=%%d answer=%%s' %% (\n"
    "    ((t1 - t0) + (t3 - t2)) * 1e3, (t2 - t1) * 1e3, len(replies), errors,\n"
    "    found[0] if found else 'NONE')\n"
    "print('BATCH-DONE', result[:200])\n"
    "```";

static const char final_code[] = "```repl\nanswer['content'] = result\n"
				 "answer['ready'] = True\n```";

struct script {
	char *code;      /* turn 1's */
	long latency_ms; /* every root call's */
};

static void script_perform(void *impl, const char *body, size_t len, long timeout_ms,
			   const atomic_bool *cancel, struct llm_provider_resp *resp)
{
	struct script *s = impl;
	int64_t end = time_now_ns() + (int64_t)s->latency_ms * 1000000;
	/* the second call has the first one's output */
	bool done = memmem(body, len, "BATCH-DONE own_ms=", 18) != NULL;
	cJSON *r, *ch, *msg;
	char *text;
	(void)timeout_ms;
	while (time_now_ns() < end) {
		if (cancel && atomic_load(cancel)) {
			resp->rc = RLM_ECANCEL;
			snprintf(resp->err, sizeof(resp->err), "cancelled");
			return;
		}
		time_sleep_ns(RLM_MIN(end - time_now_ns(), (int64_t)5000000));
	}
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "object", "chat.completion");
	cJSON_AddStringToObject(r, "model", "bench-script");
	ch = cJSON_AddArrayToObject(r, "choices");
	msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "role", "assistant");
	cJSON_AddStringToObject(msg, "content", done ? final_code : s->code);
	{
		cJSON *c = cJSON_CreateObject();
		cJSON_AddNumberToObject(c, "index", 0);
		cJSON_AddItemToObject(c, "message", msg);
		cJSON_AddStringToObject(c, "finish_reason", "stop");
		cJSON_AddItemToArray(ch, c);
	}
	{
		cJSON *u = cJSON_AddObjectToObject(r, "usage");
		cJSON_AddNumberToObject(u, "prompt_tokens", (double)(len / 4));
		cJSON_AddNumberToObject(u, "completion_tokens", 100);
		cJSON_AddNumberToObject(u, "total_tokens", (double)(len / 4 + 100));
	}
	text = cJSON_PrintUnformatted(r);
	cJSON_Delete(r);
	resp->status = 200;
	if (buf_append(resp->body, text, strlen(text))) {
		resp->rc = RLM_ETOOBIG;
		snprintf(resp->err, sizeof(resp->err), "response body over its cap");
	}
	free(text);
}

static int script_open(const char *spec, void **impl, struct rlm_err *err)
{
	(void)spec;
	(void)impl;
	return rlm_err_set(err, RLM_EINVAL, "bench-script: made by the benchmark only");
}

static void script_close(void *impl)
{
	(void)impl;
}

static void script_cache_id(const void *impl, char *dst, size_t cap)
{
	(void)impl;
	snprintf(dst, cap, "bench-script");
}

static const struct llm_provider script_provider = {
    .name = "bench-script",
    .endpoint = "bench://script/v1",
    .context_window = 1000000,
    .open = script_open,
    .close = script_close,
    .cache_id = script_cache_id,
    .perform = script_perform,
};

/* ---- one solve ---- */

/* utime + stime of process pid in seconds, or -1. */
static double proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;
	size_t n;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* after the command's ")": state is field 3, utime 14, stime 15 */
	if (!(p = strrchr(buf, ')')) ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

struct batch_run {
	double wall_ms, own_ms, call_ms, server_ms, cpu_ms;
	long calls, errors, faults;
	int64_t ideal_waves;
	int iterations;
};

/* A solve of the script over text[0..len) (its needle's value: want),
 * question q, n pieces, conc slots, latency_ms on every call. */
static int batch_solve(const char *text, size_t len, const char *q, const char *want, long n,
		       long conc, long latency_ms, struct batch_run *out)
{
	char spec[64], url[64];
	struct llm_pool_cfg pc = {(int)conc};
	struct llm_model_cfg rc_cfg = {0}, sc = {0};
	struct llm_model *root = NULL, *sub = NULL;
	struct llm_pool *pool = NULL;
	struct script s = {NULL, latency_ms};
	struct corpus *ctx = NULL;
	struct rlm_opts ro = {0};
	struct rlm_result res = {0};
	struct rlm_err err = {0, ""};
	cJSON *lit = cJSON_CreateString(q);
	char *q_lit = cJSON_PrintUnformatted(lit); /* a JSON string is a Python literal */
	const char *a;
	double srv0, c0;
	struct rusage ru;
	long f0;
	int64_t t0;
	int port = 0, rc = 1;
	pid_t pid;
	cJSON_Delete(lit);
	memset(out, 0, sizeof(*out));
	s.code = xasprintf(code_fmt, n, q_lit);
	free(q_lit);
	snprintf(spec, sizeof(spec), "ttft=%ldms", latency_ms);
	if ((pid = bench_perf_server_start(spec, &port)) < 0) {
		fprintf(stderr, "rlm: error: cannot start rlm sim-serve for the benchmark\n");
		free(s.code);
		return 1;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", port);
	rc_cfg.kind = LLM_INPROC;
	rc_cfg.provider = &script_provider;
	rc_cfg.impl = &s;
	rc_cfg.max_retries = 0;
	sc.kind = LLM_OPENAI;
	sc.name = "sim";
	sc.base_urls = url;
	sc.max_retries = 0;
	/* a piece of 40 MB / 256 is ~40k tokens, over sim's 32k */
	sc.context_window = (long)(len / (size_t)n / 2 + 8000);
	if (!(root = llm_model_new(&rc_cfg, &err)) || !(sub = llm_model_new(&sc, &err)) ||
	    !(pool = llm_pool_new(&pc, &err))) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		goto out;
	}
	ro.strategy = RLM_REPL;
	ro.pool = pool;
	ro.model = root;
	ro.sub_model = sub;
	ro.max_depth = 1;
	srv0 = proc_cpu_s(pid);
	getrusage(RUSAGE_SELF, &ru);
	f0 = ru.ru_minflt + ru.ru_majflt;
	c0 = bench_perf_cpu_s();
	t0 = time_now_ns();
	ctx = corpus_borrow_text(text, len); /* as the API and a mapped file: no copy */
	if (rlm_solve(&ro, q, ctx, &res, &err)) {
		fprintf(stderr, "rlm: error: the batch solve failed: %s\n", err.msg);
		goto out;
	}
	out->wall_ms = (double)(time_now_ns() - t0) / 1e6;
	out->cpu_ms = (bench_perf_cpu_s() - c0) * 1e3;
	out->server_ms = (proc_cpu_s(pid) - srv0) * 1e3;
	getrusage(RUSAGE_SELF, &ru);
	out->faults = ru.ru_minflt + ru.ru_majflt - f0;
	a = res.answer ? res.answer : "";
	if (sscanf(a, "own_ms=%lf call_ms=%lf calls=%ld errors=%ld", &out->own_ms, &out->call_ms,
		   &out->calls, &out->errors) != 4 || !strstr(a, want) || out->errors ||
	    out->calls != n) {
		fprintf(stderr, "rlm: error: the batch solve went wrong: answer '%.300s', expected "
				"%ld calls, no errors and '%s'\n",
			a, n, want);
		goto out;
	}
	out->ideal_waves = bench_perf_ideal_waves(&res, (int)conc);
	out->iterations = res.iterations;
	rc = 0;
out:
	rlm_result_release(&res);
	corpus_free(ctx);
	llm_pool_free(pool);
	llm_model_free(root);
	llm_model_free(sub);
	bench_perf_server_stop(pid);
	free(s.code);
	return rc;
}

/* ---- the rows ---- */

int bench_perf_batch_rows(const struct perf_opts *o, struct perf_row *share,
			  struct perf_row *eff)
{
	struct sniah_opts so;
	struct sniah_item item;
	struct batch_run zero, lat;
	char *text = NULL;
	size_t len = 0;
	long n = o->quick ? 64 : 256, conc = 16;
	double ideal_ms;
	int rc = 1;
	FILE *f;
	if (llm_provider_register(&script_provider)) {
		fprintf(stderr, "rlm: error: cannot register the benchmark's scripted model\n");
		return 1;
	}
	bench_sniah_opts_default(&so);
	so.tokens = o->quick ? 1000000 : 10000000;
	so.seed = 23;
	f = open_memstream(&text, &len);
	if (!f || bench_sniah_generate(&so, f, &item) || fclose(f)) {
		fprintf(stderr, "rlm: error: cannot generate the benchmark context\n");
		goto out;
	}
	if (batch_solve(text, len, item.question, item.value, n, conc, 0, &zero) ||
	    batch_solve(text, len, item.question, item.value, n, conc, o->latency_ms, &lat))
		goto out;
	share->name = "batch: controller share";
	share->target = "<= 100 ms";
	share->value = zero.wall_ms - zero.own_ms - zero.server_ms;
	share->unit = "ms";
	share->limit = 100;
	snprintf(share->note, sizeof(share->note),
		 "%.0f MB in %ld sub-calls at conc %ld, 0 ms: wall %.0f ms - code %.0f - "
		 "server %.0f; in the batch %.0f ms; our CPU %.0f ms, page faults %ld",
		 (double)len / 1e6, n, conc, zero.wall_ms, zero.own_ms, zero.server_ms,
		 zero.call_ms, zero.cpu_ms, zero.faults);
	ideal_ms = (double)lat.ideal_waves * (double)o->latency_ms;
	eff->name = "batch at latency";
	eff->target = "<= 1.10";
	eff->value = ideal_ms > 0 ? lat.wall_ms / ideal_ms : 0;
	eff->unit = "x ideal";
	eff->limit = 1.10;
	snprintf(eff->note, sizeof(eff->note),
		 "the same at %ld ms a call: %.0f ms (ideal %lld waves = %.0f ms); code %.0f ms, "
		 "in the batch %.0f ms",
		 o->latency_ms, lat.wall_ms, (long long)lat.ideal_waves, ideal_ms, lat.own_ms,
		 lat.call_ms);
	rc = 0;
out:
	free(text);
	return rc;
}
