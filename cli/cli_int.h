/* SPDX-License-Identifier: MIT */
/* cli/cli_int.h -- internals of the cli module shared between its files:
 * what `rlm solve` says on stderr around a solve (cli/cli_progress.c),
 * opening the store for the store commands (cli/cli_store.c), and `rlm
 * skills add` (cli/cli_skills_add.c). */
#ifndef RLM_CLI_INT_H
#define RLM_CLI_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "../rlm/rlm.h"

struct store;

/* The progress line on stderr (a tty, or forced with --progress or
 * RLM_PROGRESS=1): what the solve is doing now and the elapsed time,
 * redrawn by a timer thread 5 times a second even while nothing
 * completes, and at once when the solve reports. Its lock also keeps
 * other stderr lines (--verbose) whole. Owned by the solving thread; the
 * timer and the solve's callbacks take mu. */
struct cli_progress {
	bool tty;             /* draw the line (set before cli__progress_start) */
	pthread_mutex_t mu;   /* the fields below and stderr */
	pthread_cond_t cv;    /* the timer's sleep; signalled to stop it */
	pthread_t timer;
	bool running, stop;   /* the timer thread is up; it is to end */
	int64_t t0;           /* the solve's start (time_now_ns) */
	int64_t last_ns;      /* the last redraw */
	char what[160];       /* the line without its elapsed time */
};

/* Whether to draw the line: never with quiet, always when forced
 * (--progress), else as RLM_PROGRESS says (0: never, else always), else
 * when stderr is a terminal. */
bool cli__progress_wanted(bool quiet, bool forced);
/* Init pr (tty set, the rest zero) and, when pr->tty, draw the line and
 * start its timer. */
void cli__progress_start(struct cli_progress *pr);
/* rlm_opts.progress with arg the cli_progress: the line says what p says. */
void cli__on_progress(const struct rlm_progress *p, void *arg);
/* Stop the timer and clear the line; pr->mu stays usable. */
void cli__progress_end(struct cli_progress *pr);
/* Free pr's lock and condition. */
void cli__progress_release(struct cli_progress *pr);

/* Catch SIGINT (on) or restore its default (off). On returns the flag the
 * first Ctrl-C sets (for rlm_opts.cancel), cleared; the handler resets
 * itself, so a second Ctrl-C kills. */
const atomic_bool *cli__sigint_catch(bool on);
bool cli__interrupted(void);
/* After a Ctrl-C: "rlm: interrupted: run ID is kept ..." and the command
 * that resumes it (with --cache cache_path when one was given), or why
 * there is nothing to resume (store: a store was open). */
void cli__say_interrupted(const char *run_id, bool store, const char *cache_path);

/* A solve answered from the memo (r->memo) says so on one line: the run
 * the answer came from and when it started, or that it is gone; with
 * replay (the store, for --verbose) that run's turns follow, marked
 * replayed, under pr's lock. */
void cli__say_memo(const struct rlm_result *r, struct cli_progress *pr, struct store *replay);
/* A solve answered in part from the store says how much: calls from its
 * cache, child RLMs from its memo. Nothing when none was. */
void cli__say_hits(const struct rlm_result *r);

/* What the command line of a solve says (solve_args_parse). Strings are
 * borrowed from argv and the environment. */
struct solve_args {
	struct rlm_models_cfg mo;   /* the models; --quiet */
	struct corpus_opts co;  /* --format, --encoding, --strict-utf8 */
	struct rlm_opts ro;     /* strategy, limits, sandbox: what rlm_solve gets */
	const char *context;    /* --context */
	const char *question;   /* --question or RLM_QUESTION */
	const char *qpath;      /* --question-file, the last of -q and it */
	const char *schema_path; /* --schema */
	const char *cache_path; /* --cache */
	bool json;              /* --json */
	bool no_trajectory;     /* --no-trajectory */
	bool no_cache;          /* --no-cache */
	bool verbose;           /* --verbose */
	bool progress;          /* --progress: the line even off a tty */
	bool chat;              /* rlm chat, or solve --session: questions
				 * one after another on one session */
	bool chat_json;         /* with chat and json: one line each */
};

/* Solve a->question over corpus with the models of ms -- in session sess
 * when not NULL (rlm_session_solve) -- and say how it went: the answer
 * (or --json), a warning, the limit that stopped it, the run. t0 is when
 * the command (or the question) started, load_ns what loading the context
 * took. Returns the exit status: 0 answered, 1 failed, 3 a limit stopped
 * it or it is incomplete, 130 Ctrl-C. (cli/cli_solve.c) */
int cli__solve_print(struct solve_args *a, const struct rlm_models *ms, const struct corpus *corpus,
		     struct rlm_session *sess, int64_t t0, int64_t load_ns);
/* The questions of `rlm chat` on one session over corpus: from the
 * terminal with a prompt and /commands, or a line each from a pipe.
 * Returns the exit status. (cli/cli_chat.c) */
int cli__chat(struct solve_args *a, const struct rlm_models *ms, const struct corpus *corpus);
/* rlm solve's main with argv as given; chat: as `rlm chat`. */
int cli__solve_main(int argc, char **argv, bool chat);

/* The options of `rlm skills` (cli/cli_skills.c parses them). */
struct cli_skills_args {
	const char *cache; /* --cache, --store: the store; NULL the default */
	bool json, all;	   /* --json; --all (list) */
	const char *name, *entry, *description, *python; /* add's options, or NULL */
	int first;	   /* argv index of the first operand */
};
/* `rlm skills add FILE` (cli/cli_skills_add.c); the exit status. */
int cli__skills_add(const struct cli_skills_args *a, const char *file);

/* Open the store at path (NULL: the default) for `rlm cache`, `rlm runs`
 * and `rlm skills`; on failure say why ("rlm: error: ...") and return the
 * exit status: 2 when it does not exist (readonly), else 1. */
int cli__store_open(const char *path, bool readonly, struct store **s);

#endif
