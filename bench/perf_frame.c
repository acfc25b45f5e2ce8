/* SPDX-License-Identifier: MIT */
/* bench/perf_frame.c -- the frame around the measurements of bench/perf.c
 * (`rlm bench perf`; its options are cli/cli_bench_perf.c's): each section
 * run with what it says on stderr kept, a failed section's rows marked
 * with its error while the others still run, and the results printed as a
 * table or as JSON.
 *
 * DESIGN
 * A section (bench/perf.c) reports a failure by printing "rlm: error: ..."
 * and returning non-zero; its helpers, threads and children print there
 * too. Rather than thread an error buffer through every measurement, the
 * frame points fd 2 at a temporary file for the section's run, copies the
 * file to the real stderr afterwards (so nothing is lost, only delayed),
 * and takes the section's last error line as its rows' error. A row whose
 * section did not run (--only) has no name and is left out of both
 * outputs. */
#include "perf_int.h"
#include "../common/json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* r met its target: measured, within its limit, and within
 * PERF_COPIES_MAX copies where it counts them. */
static bool row_ok(const struct perf_row *r)
{
	if (r->failed || r->copies > PERF_COPIES_MAX)
		return false;
	return r->at_least ? r->value >= r->limit : r->value <= r->limit;
}

/* Copy f (rewound) to stderr; the text of its last "rlm: error: " line
 * into error. */
static void replay(FILE *f, char *error, size_t n)
{
	static const char tag[] = "rlm: error: ";
	char line[1024];
	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		fputs(line, stderr);
		if (strncmp(line, tag, sizeof(tag) - 1) == 0)
			snprintf(error, n, "%.*s", (int)strcspn(line + sizeof(tag) - 1, "\n"),
				 line + sizeof(tag) - 1);
	}
}

/* Whether name is in the comma-separated list (NULL: any name is). */
static bool listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
		if (strcspn(p, ",") == n && strncmp(p, name, n) == 0)
			return true;
	}
	return !list;
}

/* 0 when every name of the comma-separated list only is a section's;
 * else 2, after saying which is not (log_error). */
static int only_check(const struct perf_section *secs, size_t n_secs, const char *only)
{
	struct buf known = BUF_INIT;
	for (size_t k = 0; k < n_secs; k++)
		buf_printf(&known, "%s%s", k ? ", " : "", secs[k].name);
	for (const char *p = only; p == only || *p;
	     p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
		size_t k = 0, n = strcspn(p, ",");
		while (k < n_secs &&
		       !(strlen(secs[k].name) == n && strncmp(p, secs[k].name, n) == 0))
			k++;
		if (k == n_secs || n == 0) {
			log_error("unknown section '%.*s' in --only (known: %s)", (int)n, p,
				  known.p);
			buf_release(&known);
			return 2;
		}
	}
	buf_release(&known);
	return 0;
}

/* Run section s into rows (its own at rows + s->first) with this
 * process's stderr (fd 2, its threads' and children's too) going to a
 * temporary file, copied to stderr afterwards. When it fails (or
 * `inject`, for tests: RLM_PERF_FAIL), mark its rows failed, named from
 * s->labels, with the last "rlm: error: " line it wrote as their error.
 * Returns 0, or 1 when it failed. */
static int run_section(const struct perf_section *s, const struct perf_opts *o, struct perf_row *rows,
		     bool inject)
{
	FILE *cap = tmpfile();
	char error[240] = "";
	int saved = -1, rc;
	fflush(stderr);
	if (cap && (saved = dup(2)) >= 0 && dup2(fileno(cap), 2) < 0) {
		close(saved);
		saved = -1;
	}
	if (inject) {
		fprintf(stderr, "rlm: error: %s: a failure injected by RLM_PERF_FAIL\n", s->name);
		rc = 1;
	} else {
		rc = s->run(o, rows + s->first);
	}
	fflush(stderr);
	if (saved >= 0) {
		dup2(saved, 2);
		close(saved);
	}
	if (cap) {
		replay(cap, error, sizeof(error));
		fclose(cap);
	}
	if (rc == 0)
		return 0;
	for (size_t i = 0; i < s->n; i++) {
		struct perf_row *r = &rows[s->first + i];
		memset(r, 0, sizeof(*r));
		r->name = s->labels[i].name;
		r->target = s->labels[i].target;
		r->unit = "";
		r->failed = true;
		snprintf(r->error, sizeof(r->error), "section '%.16s' failed: %.200s", s->name,
			 *error ? error : "(it said nothing on stderr)");
	}
	return 1;
}

/* What makes two runs comparable besides the code: when, and on what. */
struct machine {
	char when[32];	/* UTC, ISO 8601 */
	long cpus;	/* online */
	double load[3]; /* 1, 5, 15 minutes; -1 unknown */
};

static void machine_now(struct machine *m)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(m->when, sizeof(m->when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	m->cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (getloadavg(m->load, 3) != 3)
		m->load[0] = m->load[1] = m->load[2] = -1;
}

/* The table on f: name, target, measured value, ok / MISSED / FAILED, the
 * note or the error. */
static void print_table(const struct perf_row *rows, size_t n, FILE *f)
{
	struct machine m;
	machine_now(&m);
	fprintf(f, "rlm %s, commit %s, %s, %ld CPUs, load average %.2f %.2f %.2f\n\n", RLM_VERSION,
		rlm_git_commit, m.when, m.cpus, m.load[0], m.load[1], m.load[2]);
	fprintf(f, "%-28s %-18s %-18s %s\n", "benchmark", "target", "measured", "");
	for (size_t i = 0; i < n; i++) {
		const struct perf_row *r = &rows[i];
		char val[64];
		if (!r->name)
			continue;
		if (r->failed) {
			fprintf(f, "%-28s %-18s %-18s FAILED  (%s)\n", r->name, r->target, "-",
				r->error);
			continue;
		}
		snprintf(val, sizeof(val), "%.3f %s", r->value, r->unit);
		fprintf(f, "%-28s %-18s %-18s %s  (%s)\n", r->name, r->target, val,
			row_ok(r) ? "ok" : "MISSED", r->note);
	}
}

static cJSON *row_json(const struct perf_row *r)
{
	cJSON *o = cJSON_CreateObject();
	json_add_str(o, "name", r->name);
	json_add_str(o, "target", r->target);
	if (r->failed) {
		json_add(o, "value", cJSON_CreateNull());
		json_add_bool(o, "ok", false);
		json_add_bool(o, "failed", true);
		json_add_str(o, "error", r->error);
		return o;
	}
	json_add_num(o, "value", r->value);
	json_add_str(o, "unit", r->unit);
	/* JSON has no infinity: a limit that is none ("reported") is null */
	json_add(o, "limit",
		 isfinite(r->limit) ? cJSON_CreateNumber(r->limit) : cJSON_CreateNull());
	json_add_bool(o, "at_least", r->at_least);
	if (r->copies > 0) {
		json_add_num(o, "copies", isfinite(r->copies) ? r->copies : -1);
		json_add_num(o, "copies_limit", PERF_COPIES_MAX);
	}
	json_add_bool(o, "ok", row_ok(r));
	json_add_str(o, "note", r->note);
	return o;
}

/* The JSON on f: {"results": [rows...], and what makes two runs
 * comparable: "version", "commit" (rlm_git_commit), "timestamp" (UTC),
 * "cpus" (online), "loadavg" (1, 5 and 15 minutes, as the run ends),
 * "options"}. Rows not run (--only) are left out. The table starts with a
 * line of the same. */
static void print_json(const struct perf_row *rows, size_t n, const struct perf_opts *o,
		     const char *only, FILE *f)
{
	cJSON *root = cJSON_CreateObject(), *arr = cJSON_CreateArray(), *opt = cJSON_CreateObject();
	cJSON *load;
	struct machine m;
	char *s;
	machine_now(&m);
	for (size_t i = 0; i < n; i++)
		if (rows[i].name)
			json_add(arr, NULL, row_json(&rows[i]));
	json_add(root, "results", arr);
	json_add_str(root, "version", RLM_VERSION);
	json_add_str(root, "commit", rlm_git_commit);
	json_add_str(root, "timestamp", m.when);
	json_add_num(root, "cpus", m.cpus);
	load = cJSON_CreateArray();
	for (int i = 0; i < 3; i++)
		json_add(load, NULL,
			 m.load[i] >= 0 ? cJSON_CreateNumber(m.load[i]) : cJSON_CreateNull());
	json_add(root, "loadavg", load);
	json_add_num(opt, "calls", (double)o->calls);
	json_add_num(opt, "concurrency", (double)o->conc);
	json_add_num(opt, "latency_ms", (double)o->latency_ms);
	json_add_num(opt, "execs", (double)o->execs);
	json_add_num(opt, "starts", (double)o->starts);
	json_add_bool(opt, "quick", o->quick);
	json_add(opt, "only", only ? cJSON_CreateString(only) : cJSON_CreateNull());
	json_add(root, "options", opt);
	s = cJSON_Print(root);
	fprintf(f, "%s\n", s);
	free(s);
	cJSON_Delete(root);
}

int bench_perf_main(struct perf_opts *o, const char *only, bool json, FILE *out)
{
	const char *inject = getenv("RLM_PERF_FAIL");
	struct perf_row rows[PERF_ROWS];
	bool all_ok = true;
	size_t failed = 0;
	if (only && only_check(bench_perf_sections, bench_perf_n_sections, only))
		return 2;
	/* --quick scales the counts down; what the user set stays */
	if (!o->calls)
		o->calls = o->quick ? 200 : 1000;
	if (!o->latency_ms)
		o->latency_ms = o->quick ? 20 : 100;
	if (o->quick) {
		o->execs = 200;
		o->starts = 5;
	}
	memset(rows, 0, sizeof(rows));
	for (size_t k = 0; k < bench_perf_n_sections; k++) {
		const struct perf_section *s = &bench_perf_sections[k];
		if (listed(only, s->name) &&
		    run_section(s, o, rows, inject && listed(inject, s->name)))
			failed++;
	}
	for (size_t i = 0; i < PERF_ROWS; i++)
		all_ok &= !rows[i].name || row_ok(&rows[i]);
	if (json)
		print_json(rows, PERF_ROWS, o, only, out);
	else
		print_table(rows, PERF_ROWS, out);
	fflush(out);
	if (failed)
		fprintf(stderr,
			"rlm: error: %zu of the sections failed (their rows say why); the "
			"others ran\n",
			failed);
	return all_ok ? 0 : 1;
}
