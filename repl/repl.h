/* SPDX-License-Identifier: MIT */
/* repl/repl.h -- the Python REPL worker: one persistent /usr/bin/python3
 * child per RLM node that holds the context and runs the model's code.
 *
 * DESIGN
 * The worker is started once and kept: variables survive between execs.
 * Its Python side (repl/runtime.py) is embedded in the binary and passed
 * with -c, so there is nothing to install. The child is forked from a
 * long-lived spawner thread (PR_SET_PDEATHSIG fires when the creating
 * *thread* exits) and set up with async-signal-safe calls only, then
 * exec's python3 -I -S -B: the sandbox (seccomp, Landlock, ...) slots in
 * between fork and exec.
 *
 * Child file descriptors, nothing else open:
 *   0  /dev/null
 *   1, 2  a pipe the controller drains (C-level writes, crash messages;
 *      the last 4 KiB are kept for "the worker died: ..." reports)
 *   3  frames from the controller (the worker reads)
 *   4  frames to the controller (the worker writes)
 *   5  the context: a sealed memfd, read-only, mapped by the worker
 * Environment: LANG=C.UTF-8, PYTHONDONTWRITEBYTECODE=1, PYTHONIOENCODING=utf-8,
 * MALLOC_ARENA_MAX=2, HOME=/nonexistent, TMPDIR (the worker's scratch
 * directory, created by the controller and removed by repl_free). No API
 * keys, nothing else of the controller's environment.
 *
 * The context memfd: the text bytes [0, text_len), then, for a list of
 * documents, n_docs pairs of little-endian uint64 (offset, length) into the
 * text. The worker decodes it once into `context`: a str, or a list[str]
 * (invalid UTF-8 becomes U+FFFD). The memfd is filled once and reused when
 * the worker is restarted. The worker's command line is
 *   python3 -I -S -B -c <repl/runtime.py> TEXT_LEN N_DOCS OUTPUT_LIMIT MAX_FRAME
 *           MAX_CALLS_EXEC
 * with N_DOCS -1 when `context` is a str. Prompts past MAX_CALLS_EXEC in one
 * exec raise ValueError in the code before any frame is sent (the
 * controller's kill on that cap is a backstop for a hostile worker). The
 * worker keeps its frames under MAX_FRAME: prompts that would not fit
 * raise ValueError in the code, an
 * answer that would not fit is dropped with an error in the output, and
 * "vars" lists at most 1000 names.
 *
 * WIRE FORMAT (fds 3 and 4)
 * A frame is a 4-byte big-endian length, then that many bytes of one UTF-8
 * JSON object with a string "type". Controller to worker:
 *   {"type":"context"}                        first, once the memfd is
 *                                              filled and sealed (the first
 *                                              worker starts up meanwhile)
 *   {"type":"exec","id":N,"code":"..."}       run code in the namespace
 *   {"type":"reply","id":N,"texts":["..."],"errors":[false,...]}
 *                                              answers to call N, in order
 *   {"type":"final_var","id":N,"name":"x"}    resolve FINAL_VAR(x) as an
 *                                              exec would (answer a result)
 * Worker to controller:
 *   {"type":"ready","pid":P,"python":"3.11.2","context_chars":C,
 *    "documents":D}                            once, after `context` exists
 *                                              (D is 0 when it is a str)
 *   {"type":"call","id":N,"exec":E,"kind":"llm"|"rlm","batched":B,
 *    "model":null|"name","prompts":["..."]}   during exec (or final_var) E
 *                                              only; the worker blocks
 *                                              until reply N
 *   {"type":"result","id":E,"output":"...","output_chars":T,"error":B,
 *    "interrupted":B,"ready":B,"answer":null|"...","content":null|"...",
 *    "vars":["name",...]}                      the end of exec E
 *   {"type":"fatal","error":"..."}            the runtime cannot go on
 *                                              (also sent by the child when
 *                                              execve fails)
 * output is what the model sees: captured stdout and stderr, in order,
 * already cut to the output limit (head and tail kept, the true length T
 * stated); a traceback, when the code raised, comes last. answer is
 * str(answer["content"]) when answer["ready"] was set truthy (by the code,
 * FINAL(x) or FINAL_VAR(name)), else null; content is str(content) when
 * content is set (not "" or None) but ready is not (a partial answer), else
 * null. Once reported, ready is cleared in the worker (content is kept), so
 * the next question of a session starts unanswered. FINAL_VAR("x") in code
 * takes the variable x (NameError when there is none); any other argument,
 * or a str that is not a name, is the answer itself. Strings the worker
 * sends have NULs replaced by U+FFFD and lone surrogates by '?'.
 * A call from a thread of the model's code after its exec ended does not
 * reach the wire: it raises RuntimeError in that thread.
 *
 * The worker is hostile: a frame longer than the cap, not JSON, of an
 * unknown type, a call outside an exec, a result for another id, or more
 * calls (prompts) than the per-exec or per-repl caps allow, is a
 * violation: the worker is killed (SIGKILL) and restarted, and the exec's
 * output says so. Anything the worker sent between execs, or its death
 * then, is found at the start of the next exec: the worker is restarted and
 * the code runs on the new one, after the notice.
 *
 * Restart notices start with "[the REPL was restarted: <reason>. All
 * variables are gone; `context` and the helper functions were reloaded.]";
 * after a crash, the worker's last output on fds 1 and 2 follows.
 *
 * Time: each exec has a limit on the worker's own running time; the clock
 * stops while a call is out with the controller (sub-calls are bounded by
 * their own deadline). At the limit the worker gets SIGINT (a
 * KeyboardInterrupt in the code; variables kept); if no result comes
 * within the grace period it gets SIGKILL and is restarted: the model is
 * told its variables are gone and `context` was reloaded. The absolute
 * deadline of repl_exec (the solve's) is enforced the same way, counting
 * everything.
 *
 * Threads: one struct repl is used by one thread at a time. Different
 * workers may be used from different threads at once.
 */
#ifndef RLM_REPL_H
#define RLM_REPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/common.h"

/* The context handed to the worker: one text, or documents in it. Only
 * read during repl_start (copied into the memfd). */
struct repl_context {
	const char *text;
	size_t len;
	bool docs;               /* true: `context` is a list[str] */
	const size_t *doc_off;   /* n_docs offsets into text (docs only) */
	const size_t *doc_len;   /* n_docs lengths */
	size_t n_docs;
};

/* One call frame from the worker: llm_query (n == 1, !batched),
 * llm_query_batched, rlm_query, rlm_query_batched. Borrowed for the
 * duration of the handler. */
struct repl_call {
	bool rlm;                /* rlm_query*: a child RLM is asked */
	bool batched;
	const char *model;       /* the model= argument, or NULL */
	const char *const *prompts;
	const size_t *lens;
	size_t n;
	int64_t deadline_ns;     /* now_ns() clock: answer by then (0: none) */
};

/* Answer a call: set texts[i] (malloc'd, owned by the repl afterwards) for
 * every i < n, and errors[i] true when slot i failed (its text then says
 * why, e.g. "Error: the sub-call budget is spent"). Runs on the thread that
 * called repl_exec. */
typedef void repl_call_fn(void *arg, const struct repl_call *call, char **texts, bool *errors);

/* Defaults of struct repl_cfg (also for prompts that state them). */
#define REPL_DEF_EXEC_TIMEOUT_NS (60 * (int64_t)1000000000)
#define REPL_DEF_CALLS_EXEC	 10000

struct repl_cfg {
	const char *python;          /* NULL: /usr/bin/python3 */
	struct repl_context ctx;
	size_t output_limit;         /* characters shown to the model; 0: 20000 */
	int64_t exec_timeout_ns;     /* worker time per exec; 0: 60 s; < 0: none */
	int64_t grace_ns;            /* SIGINT to SIGKILL; 0: 1 s */
	size_t max_frame;            /* bytes of a frame from the worker; 0: 64 MiB */
	size_t max_calls_exec;       /* prompts per exec; 0: 10000 */
	size_t max_calls_total;      /* prompts over the repl's life, restarts
				      * included; 0: 100000 */
	repl_call_fn *on_call;       /* NULL: every call gets an error string */
	void *call_arg;
	const atomic_bool *cancel;   /* optional: ends an exec like its deadline */
};

struct repl;

/* Start a worker and wait until it has `context` (its "ready" frame).
 * Returns 0, or a negative code with err naming the problem (python3
 * missing: RLM_ENOTFOUND; the runtime failed, ...). The first call starts
 * the spawner thread and sets SIGPIPE to SIG_IGN when it is at its default
 * (writes to a dead worker must fail with EPIPE, not kill us). */
int repl_start(const struct repl_cfg *cfg, struct repl **out, struct rlm_err *err);
/* Kill the worker (if alive), reap it, remove its scratch directory. NULL
 * is a no-op. */
void repl_free(struct repl *r);

struct repl_result {
	char *output;            /* what the model sees, never NULL; owned */
	size_t len;
	size_t output_chars;     /* true length of the captured output */
	bool error;              /* the code raised (traceback in output) */
	bool interrupted;        /* the time limit interrupted it (SIGINT) */
	bool restarted;          /* the worker was killed and restarted: state lost */
	bool ready;              /* answer["ready"] was set: answer is final */
	char *answer;            /* when ready; owned */
	char *content;           /* answer["content"] when set but not ready; owned */
	size_t calls;            /* prompts this exec sent */
	int64_t ns;              /* wall time of the exec */
	int64_t call_ns;         /* of which waiting on calls */
	char **vars;             /* the user's variable names (not the helpers,
				  * modules or _names); owned, NULL-terminated */
	size_t n_vars;
};

/* Run code in the worker. A crash, a violation or a timeout is not an
 * error: it is reported in out (output says what happened, restarted is
 * set) and the worker is alive again afterwards. Returns 0, RLM_ETIMEOUT
 * when deadline_ns (now_ns() clock; 0: none) passed, RLM_ECANCEL when
 * cfg.cancel turned true -- out is filled in both cases, the worker
 * interrupted or restarted -- or another negative code when the worker
 * could not be restarted (err says why; the repl is then unusable). */
int repl_exec(struct repl *r, const char *code, size_t len, int64_t deadline_ns,
	      struct repl_result *out, struct rlm_err *err);
/* Resolve FINAL_VAR(name) in the worker: out->ready and out->answer when
 * the variable exists, else out->error with a message saying it does not.
 * name is a variable name, maybe quoted ("x", "'x'"). Time limits, restarts
 * and return codes as for repl_exec. */
int repl_final_var(struct repl *r, const char *name, int64_t deadline_ns,
		   struct repl_result *out, struct rlm_err *err);
void repl_result_release(struct repl_result *res);

struct repl_stats {
	pid_t pid;               /* current worker */
	int restarts;
	int64_t execs;
	int64_t calls;           /* prompts over the life of the repl */
	int64_t start_ns;        /* last start: fork to ready */
	char python[32];         /* the worker's Python version */
};
void repl_stats(const struct repl *r, struct repl_stats *out);

/* ---- frames (exposed for tests and the fuzz target) ---- */

/* Parse one frame body (the JSON after the length prefix) from the worker
 * and check it against the protocol: known type, fields of the right types,
 * strings valid UTF-8. Returns a cJSON object the caller frees (cJSON_Delete),
 * or NULL with err saying what is wrong. */
struct cJSON *repl_frame_parse(const char *body, size_t len, size_t max, struct rlm_err *err);

/* Cut s[0..len) for the model: when it is over limit characters (code
 * points), keep limit of them, the head and the tail, with a line in
 * between stating how many were left out of how many ("[... 140,000 of
 * 160,000 characters omitted ...]"). The worker cuts the same way. Returns
 * a fresh string. */
char *repl_truncate(const char *s, size_t len, size_t limit, size_t *out_len);

#endif
