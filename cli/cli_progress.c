/* SPDX-License-Identifier: MIT */
/* cli/cli_progress.c -- what `rlm solve` says on stderr around a solve:
 * the progress line and its timer, Ctrl-C and the command that resumes
 * the run, and answers that came from the store (the memo's run, its
 * turns replayed; calls from the cache). */
#include "cli_int.h"
#include "../common/json.h"
#include "../store/store.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The progress line on stderr (a tty, or forced with --progress or
 * RLM_PROGRESS=1): what the solve is doing, redrawn with the elapsed time
 * by a timer thread every PROGRESS_EVERY_NS even while nothing completes,
 * and at once when the solve reports (at most every PROGRESS_MIN_NS). */
#define PROGRESS_EVERY_NS 200000000LL /* 5 redraws a second */
#define PROGRESS_MIN_NS	  50000000LL

/* Redraw the line (mu held). */
static void progress_draw(struct cli_progress *pr, int64_t now)
{
	pr->last_ns = now;
	fprintf(stderr, "\r\033[K%s  %.1f s", pr->what, (double)(now - pr->t0) / 1e9);
	fflush(stderr);
}

void cli__on_progress(const struct rlm_progress *p, void *arg)
{
	struct cli_progress *pr = arg;
	int64_t now = time_now_ns();
	char *w = pr->what;
	size_t n = sizeof(pr->what);
	pthread_mutex_lock(&pr->mu);
	if (strcmp(p->phase, "root") == 0)
		snprintf(w, n, "turn %d: the root model is thinking", p->level);
	else if (strcmp(p->phase, "compact") == 0)
		snprintf(w, n, "turn %d: compacting the conversation", p->level);
	else if (strcmp(p->phase, "exec") == 0)
		snprintf(w, n, "turn %d: running code (block %zu of %zu)", p->level,
			 RLM_MIN(p->done + 1, p->total), p->total);
	else if (strcmp(p->phase, "sub") == 0)
		snprintf(w, n, "turn %d: sub-calls %zu/%zu done", p->level, p->done, p->total);
	else if (strcmp(p->phase, "child") == 0)
		snprintf(w, n, "turn %d: child RLMs %zu/%zu done", p->level, p->done, p->total);
	else if (strcmp(p->phase, "leaves") == 0)
		snprintf(w, n, "reading parts %zu/%zu", p->done, p->total);
	else
		snprintf(w, n, "combining (level %d) %zu/%zu", p->level, p->done, p->total);
	if (now - pr->last_ns >= PROGRESS_MIN_NS || p->done == p->total)
		progress_draw(pr, now);
	pthread_mutex_unlock(&pr->mu);
}

static void *progress_timer(void *arg)
{
	struct cli_progress *pr = arg;
	pthread_mutex_lock(&pr->mu);
	while (!pr->stop) {
		struct timespec ts;
		int64_t now = time_now_ns(), until = pr->last_ns + PROGRESS_EVERY_NS;
		if (now >= until) {
			progress_draw(pr, now);
			until = now + PROGRESS_EVERY_NS;
		}
		ts.tv_sec = (time_t)(until / 1000000000LL);
		ts.tv_nsec = (long)(until % 1000000000LL);
		pthread_cond_timedwait(&pr->cv, &pr->mu, &ts);
	}
	pthread_mutex_unlock(&pr->mu);
	return NULL;
}

/* Start the line (and its timer) when pr->tty. */
void cli__progress_start(struct cli_progress *pr)
{
	pthread_condattr_t ca;
	pthread_mutex_init(&pr->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pr->cv, &ca);
	pthread_condattr_destroy(&ca);
	pr->t0 = time_now_ns();
	snprintf(pr->what, sizeof(pr->what), "starting");
	if (pr->tty) {
		pthread_mutex_lock(&pr->mu);
		progress_draw(pr, pr->t0);
		pthread_mutex_unlock(&pr->mu);
		pr->running = pthread_create(&pr->timer, NULL, progress_timer, pr) == 0;
	}
}

/* Stop the timer and clear the line (pr's lock stays usable until
 * progress_release). */
void cli__progress_end(struct cli_progress *pr)
{
	if (pr->running) {
		pthread_mutex_lock(&pr->mu);
		pr->stop = true;
		pthread_cond_signal(&pr->cv);
		pthread_mutex_unlock(&pr->mu);
		pthread_join(pr->timer, NULL);
		pr->running = false;
	}
	if (pr->tty)
		fprintf(stderr, "\r\033[K");
}

void cli__progress_release(struct cli_progress *pr)
{
	pthread_cond_destroy(&pr->cv);
	pthread_mutex_destroy(&pr->mu);
}

/* ---- Ctrl-C ---- */

/* Set by the first SIGINT: the solve stops as cancelled, its run stays
 * resumable. The handler is reset by it, so a second Ctrl-C kills. */
static atomic_bool interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	atomic_store(&interrupted, true);
}

const atomic_bool *cli__sigint_catch(bool on)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on ? on_sigint : SIG_DFL;
	sa.sa_flags = on ? (int)SA_RESETHAND : 0;
	if (on)
		atomic_store(&interrupted, false);
	sigaction(SIGINT, &sa, NULL);
	return &interrupted;
}

bool cli__interrupted(void)
{
	return atomic_load(&interrupted);
}

/* s as one shell word: as it is when it needs no quoting, else in single
 * quotes. The caller frees it. */
static char *shell_word(const char *s)
{
	struct buf b;
	if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			   "/._-+=:,@%") == strlen(s))
		return xstrdup(s);
	buf_init(&b, 0);
	buf_putc(&b, '\'');
	for (; *s; s++)
		if (*s == '\'')
			buf_puts(&b, "'\\''");
		else
			buf_putc(&b, *s);
	buf_putc(&b, '\'');
	return buf_detach(&b, NULL);
}

void cli__say_interrupted(const char *run_id, bool store, const char *cache_path)
{
	char *cache;
	if (!run_id[0]) {
		fprintf(stderr, "rlm: interrupted%s\n",
			store ? " (the run could not be recorded: nothing to resume)"
			      : " (no store: nothing to resume)");
		return;
	}
	if (cache_path) {
		/* absolute: the command works from any directory */
		char *abs = realpath(cache_path, NULL);
		cache = shell_word(abs ? abs : cache_path);
		free(abs);
	} else {
		cache = NULL;
	}
	fprintf(stderr,
		"rlm: interrupted: run %s is kept in the store; to go on where it stopped "
		"(its calls answered from the store):\n"
		"  rlm solve --resume %s%s%s\n",
		run_id, run_id, cache ? " --cache " : "", cache ? cache : "");
	free(cache);
}

/* ---- answers from the memo ---- */

/* "2026-11-27 12:14:03 UTC": unix ms in local time, for people. */
static void human_date(char *dst, size_t cap, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	if (ms <= 0 || !localtime_r(&t, &tm) || !strftime(dst, cap, "%Y-%m-%d %H:%M:%S %Z", &tm))
		snprintf(dst, cap, "an unknown date");
}

/* The trajectory of the run a memo answer came from, from its events in
 * the store, as --verbose shows a solve's (each line marked replayed). */
static void replay_run(struct cli_progress *pr, struct store *s, const char *id)
{
	struct rlm_err err = {0, ""};
	cJSON *run = store_run_load(s, id, &err), *e;
	int n = 0;
	if (!run) {
		fprintf(stderr, "rlm: cannot replay run %s: %s\n", id, err.msg);
		return;
	}
	fprintf(stderr, "rlm: replaying run %s from the store (nothing runs now):\n", id);
	cJSON_ArrayForEach(e, json_get(run, "events"))
	{
		const char *kind = json_str(e, "kind"), *text = json_str(e, "text");
		int depth = (int)json_num(e, "depth", 0), node = (int)json_num(e, "node", 0);
		char where[48] = "";
		if (!kind || !text)
			continue;
		if (depth > 0)
			snprintf(where, sizeof(where), "[d%d n%d] ", depth, node);
		pthread_mutex_lock(&pr->mu);
		if (strcmp(kind, "sandbox") == 0) {
			cli_term_printf(stderr, "rlm: %ssandbox: %s (replayed)\n", where, text);
			n++;
		} else if (!strcmp(kind, "reply") || !strcmp(kind, "code") ||
			   !strcmp(kind, "output") || !strcmp(kind, "notice")) {
			/* the model's text: escaped at a terminal */
			cli_term_printf(stderr, "--- %sturn %d %s (%.1f s, replayed)\n%s\n", where,
					(int)json_num(e, "iteration", 0),
					strcmp(kind, "reply") == 0 ? "model" : kind,
					json_num(e, "t_ns", 0) / 1e9, text);
			n++;
		}
		pthread_mutex_unlock(&pr->mu);
	}
	if (!n)
		fprintf(stderr, "rlm: run %s kept no turns to replay\n", id);
	fprintf(stderr, "rlm: end of the replay of run %s\n", id);
	cJSON_Delete(run);
}

void cli__say_memo(const struct rlm_result *r, struct cli_progress *pr, struct store *replay)
{
	char date[64];
	if (!r->memo)
		return;
	if (!r->memo_run[0]) {
		fprintf(stderr, "rlm: answered from the memo (the run that made the answer is no "
				"longer in the store); --refresh to run again\n");
		return;
	}
	human_date(date, sizeof(date), r->memo_created_ms);
	fprintf(stderr, "rlm: answered from run %s of %s; --refresh to run again\n", r->memo_run,
		date);
	if (replay)
		replay_run(pr, replay, r->memo_run);
}

void cli__say_hits(const struct rlm_result *r)
{
	if (r->memo || (!r->cache_hits && !r->memo_hits))
		return;
	fputs("rlm: answered in part from the store: ", stderr);
	if (r->cache_hits)
		fprintf(stderr, "%lld of %lld model calls from its cache", (long long)r->cache_hits,
			(long long)r->calls);
	if (r->memo_hits)
		fprintf(stderr, "%s%lld child RLM%s from its memo", r->cache_hits ? ", " : "",
			(long long)r->memo_hits, r->memo_hits == 1 ? "" : "s");
	fputs(" (nothing sent for them); --refresh to make them again\n", stderr);
}

bool cli__progress_wanted(bool quiet, bool forced)
{
	const char *env = getenv("RLM_PROGRESS");
	if (quiet)
		return false;
	if (forced)
		return true;
	if (env && *env)
		return strcmp(env, "0") != 0;
	return isatty(2);
}
