/* SPDX-License-Identifier: MIT */
/* repl/repl.h -- the Python REPL worker: one persistent /usr/bin/python3
 * child per RLM node that holds the context and runs the model's code.
 *
 * DESIGN
 * The worker is started once and kept: variables survive between execs.
 * Its Python side (repl/runtime.py) is embedded in the binary and passed
 * with -c, so there is nothing to install. The child is cloned from a
 * long-lived spawner thread (PR_SET_PDEATHSIG fires when the creating
 * *thread* exits) with the sandbox's namespaces, set up with raw system
 * calls only (the sandbox layers below), then exec's python3 -s -S -B.
 *
 * Child file descriptors, nothing else open:
 *   0  /dev/null
 *   1, 2  a pipe the controller drains (C-level writes, crash messages;
 *      the last 4 KiB are kept for "the worker died: ..." reports)
 *   3  frames from the controller (the worker reads)
 *   4  frames to the controller (the worker writes)
 *   5  the context: a sealed memfd, read-only, mapped by the worker
 *   6  (a worker started cold, until its bootstrap closes it) the
 *      runtime's code: a sealed memfd (repl/code.c)
 * Environment: LANG=C.UTF-8, PYTHONHASHSEED=0, MALLOC_ARENA_MAX=2,
 * GLIBC_TUNABLES (malloc: huge pages, a heap for blocks under 4 MiB),
 * HOME=/nonexistent, TMPDIR (the worker's scratch directory, created by
 * the controller and removed by repl_free). No API keys, nothing else of
 * the controller's environment. The fixed hash seed (the reason for -s
 * instead of -I, whose -E would ignore it) gives every worker, cold or
 * forked by the zygote, the same str hashes: a printed set reads the
 * same in a resumed solve, whose prompts then hit the call cache. The
 * runtime removes the cwd ('') from sys.path, as -P would.
 *
 * The context memfd: the text, TEXT_LEN bytes at byte TEXT_AT, and for a
 * list of documents N_DOCS pairs of little-endian uint64 (offset, length)
 * at byte TABLE_AT, each offset counting from byte 0 of the memfd (so it
 * points into the text). A memfd the repl fills itself has the text at 0
 * and the table right after it; one the caller hands over
 * (repl_context.has_fd) may hold more than the worker's context, as a child
 * RLM's view of a part of its parent's does: the worker maps only the
 * page-aligned regions of its text and table. It decodes them once into
 * `context`: a str, or a list[str]; invalid UTF-8 becomes U+FFFD (a context
 * decoded so, or one with a NUL, is sent by the worker only as copies,
 * never as references: see "contexts" below). Then, for `documents`, the
 * documents' metadata lines (one JSON object per line, {"id", "path",
 * "title", "meta"}; one line for a str context) and N_META pairs of
 * little-endian uint64 (offset from byte 0, length) at META_TABLE_AT, one
 * per line: the worker reads a line when the model asks for that document
 * and keeps a mapping of the text for search(). The memfd is filled once and
 * reused when the worker is restarted, with the same view. The worker's
 * command line is
 *   python3 -s -S -B -c <bootstrap> TEXT_LEN N_DOCS OUTPUT_LIMIT MAX_FRAME
 *           MAX_CALLS_EXEC LATE_FILTER
 * (the bootstrap runs repl/runtime.py from fd 6; a worker forked by the
 * zygote has it loaded already)
 * with N_DOCS -1 when `context` is a str, and LATE_FILTER the hex of a
 * seccomp program (struct sock_filter bytes) the runtime stacks with
 * prctl before it reads the context frame, or "-" for none (it makes
 * itself non-dumpable first, either way). Prompts past MAX_CALLS_EXEC in one
 * exec raise ValueError in the code before any frame is sent (the
 * controller's kill on that cap is a backstop for a hostile worker). The
 * worker keeps its frames under MAX_FRAME: a batch whose prompts (and
 * contexts) would not fit in one frame is sent as several call frames, in
 * order, each answered on its own, and the code gets one list; a single
 * prompt (with its context) that cannot fit in a frame of its own raises
 * ValueError in the code naming it, its size and the cap, and nothing of
 * that call is sent; an answer that would not fit is dropped with an error
 * in the output, and "vars" lists at most 1000 names.
 *
 * WIRE FORMAT (fds 3 and 4)
 * A frame is a 4-byte big-endian length, then that many bytes of one UTF-8
 * JSON object with a string "type". Controller to worker:
 *   {"type":"context","text_at":A,"table_at":T,"meta_table_at":M,"n_meta":K}
 *                                              first, once the memfd is
 *                                              filled and sealed (the first
 *                                              worker starts up meanwhile):
 *                                              where the text and the table
 *                                              lie in it (M 0 and K 0:
 *                                              no metadata; documents
 *                                              are named by index)
 *                                              [,"form":"json"]
 *                                              [,"schema":"<JSON Schema>"]
 *                                              (below, STRUCTURED ANSWERS)
 *   {"type":"exec","id":N,"code":"..."}       run code in the namespace
 *   {"type":"reply","id":N,"texts":["..."],"errors":[false,...]}
 *                                              answers to call N, in order
 *   {"type":"final_var","id":N,"name":"x"}    resolve FINAL_VAR(x) as an
 *                                              exec would (answer a result)
 *   {"type":"set","id":N,"name":"x","value":V,"reset_answer":B}
 *                                              bind x to the JSON value V
 *                                              (a session's history and
 *                                              added contexts; answered
 *                                              with a result)
 *   {"type":"schema","id":N,"schema":"..."|null}
 *                                              set (null: clear) the answer
 *                                              schema of a running worker
 *                                              (answer a result: error true
 *                                              and output the reason when
 *                                              it refuses it; the old one
 *                                              stays then)
 *   {"type":"final","id":N,"text":"..."}      take FINAL(text) as code's
 *                                              FINAL would (answer a
 *                                              result): a FINAL the
 *                                              controller found in the
 *                                              model's text, to be checked
 *                                              under the schema
 * Worker to controller:
 *   {"type":"ready","pid":P,"python":"3.11.2","context_chars":C,
 *    "documents":D[,"schema_error":"..."]}     once, after `context` exists
 *                                              (D is 0 when it is a str)
 *   {"type":"call","id":N,"exec":E,"kind":"llm"|"rlm"|"tool","batched":B,
 *    "model":null|"name","prompts":["..."]}   during exec (or final_var) E
 *                                              only; the calling thread
 *                                              blocks until reply N; other
 *                                              threads may send calls
 *                                              meanwhile, and replies may
 *                                              come in any order; the
 *                                              result comes after the last
 *                                              reply. An rlm call
 *                                              given context= (contexts=)
 *                                              adds "contexts":[C, ...], one
 *                                              per prompt; it is absent when
 *                                              none was given
 *   {"type":"result","id":E,"output":"...","output_chars":T,"error":B,
 *    "interrupted":B,"ready":B,"answer":null|"...","content":null|"...",
 *    "vars":["name",...][,"error_at":A][,"sources":[S, ...]][,"made":"..."]
 *    [,"invalid":"..."]}
 *                                              the end of exec E
 *   {"type":"fatal","error":"..."}            the runtime cannot go on
 *                                              (also sent by the child when
 *                                              execve fails)
 * A "tool" call (TOOL CALLS below) has no contexts and model null.
 * BINARY CALL FRAMES: an llm or rlm call's prompts may come as bytes, not
 * JSON (the runtime sends them so: no escaping on either side). Such a
 * frame's body starts with a 0x00 byte (a JSON frame's with "{"), then the
 * header's length H (4 bytes, big-endian), H bytes of header -- the call
 * frame above with "prompt_lens":[L, ...] in place of "prompts" -- and
 * each prompt's UTF-8 bytes, L of them, followed by a NUL, to the end of
 * the frame. Each prompt is checked as a JSON one would be (UTF-8, no NUL
 * inside), once, and read where it lies (its NUL makes it a C string).
 * BINARY REPLY FRAMES: a reply whose texts come to 64 KiB or more goes the
 * same way back: 0x00, the header's length (4 bytes, big-endian), the
 * reply above with "text_lens":[L, ...] in place of "texts", then the
 * texts' bytes back to back (no NUL after them), which the runtime decodes
 * where they lie (bad UTF-8 as U+FFFD, as in the JSON form).
 * A context C is null (none: the prompt is the child's context), a str, a
 * list of str (the child's `context` is then that list), or a part of the
 * worker's own context as loaded, which is then not copied:
 *   {"ref":[OFF,LEN]}    bytes [OFF, OFF + LEN) of its text (a str
 *                        context): a str slice of it the worker found
 *   {"docs":[FIRST,END]} its documents [FIRST, END) (a list context): a
 *                        list of the very same str objects, in order
 * A str piece under 65,536 characters goes as a str; a longer one is
 * looked for right after the previous piece found, then with a few
 * find()s of its head, and goes as a str when it is not found there. A
 * list that is not such a run goes as a list (copied); so does an empty
 * one. A context that is not one of these
 * shapes is not a violation: its prompt gets an "Error: ..." (the handler
 * checks references against the context too).
 * output is what the model sees: captured stdout and stderr, in order,
 * already cut to the output limit (head and tail kept, the true length T
 * stated); a traceback, when the code raised, comes last, from character
 * A of output on (when it started in the part left out, A is the line
 * that says so; error_at is only sent with error true). answer is
 * str(answer["content"]) when answer["ready"] was set truthy (by the code,
 * FINAL(x) or FINAL_VAR(name)), else null; content is str(content) when
 * content is set (not "" or None) but ready is not (a partial answer), else
 * null. Once reported, ready is cleared in the worker (content is kept), so
 * the next question of a session starts unanswered. FINAL_VAR("x") in code
 * takes the variable x (NameError when there is none); any other argument,
 * or a str that is not a name, is the answer itself. Strings the worker
 * sends have NULs replaced by U+FFFD and lone surrogates by '?'.
 * made (exec only, absent when none) names the variables the exec made,
 * new or rebound top-level names that are not modules, helpers or _names,
 * each with its type: "x: int, chunks: list", at most 20 of them and 400
 * characters, then " (and N more: SHOW_VARS() lists all)".
 * sources is answer["sources"] (FINAL(x, sources=...) sets it), sent only
 * with an answer (ready) and only when it has entries: at most 100 (the
 * rest dropped), each S a document id (a str; an int index goes as its
 * decimal str) or {"doc":ID[,"start":S][,"end":E][,"quote":"..."]}, start
 * and end byte offsets >= 0 in that document, the quote cut to 2,000
 * characters. The worker drops ill-shaped entries (a float, a dict without
 * "doc", a negative offset, ...) with one line in the output naming them,
 * and clears sources once reported, as it clears ready. A sources member
 * the controller finds ill-shaped is ignored whole, with a line in the
 * output saying so: not a violation.
 * The result of an exec comes once the threads the code started have ended
 * (below, "Threads"); a call made after the exec ended all the same (from
 * a runtime the code patched) is a violation, and the runtime's helpers
 * refuse one with RuntimeError.
 *
 * STRUCTURED ANSWERS
 * With "schema" in the context frame (a JSON Schema as JSON text,
 * repl_cfg.schema), the worker imports Debian's python3-jsonschema from
 * /usr/lib/python3/dist-packages (-S leaves it off sys.path; the sandbox
 * lets the worker read /usr) and checks the schema (check_schema of the
 * validator its "$schema" names, draft 2020-12 by default): a schema that
 * is not JSON, not an object, not valid JSON Schema, or a validator that
 * cannot be imported, is said in the ready frame's "schema_error", and
 * repl_start fails with RLM_EINVAL and those words. Then an answer made
 * ready (answer["ready"], FINAL, FINAL_VAR, or a "final" frame) is taken
 * only when answer["content"] is a JSON value valid under the schema: a
 * str is JSON text (or, when it is not JSON, the str itself), any other
 * value must be one JSON holds (dict, list, str, int, float, bool, None;
 * FINAL(x) keeps x as it is, not str(x)). A valid one's answer is its
 * compact JSON text. An invalid one is not taken: ready is false and
 * cleared in the worker, error is true, the output ends with "[the
 * answer was not taken: it is not valid under the answer schema:" and
 * the errors, and "invalid" holds them: at most 5 lines "at $.path:
 * message" (each message cut to 300 characters), then "(and N more)".
 * content, with a schema, is the candidate's JSON text when it has one.
 * The check is the worker's: model code that patched the runtime can
 * only fool itself.
 *
 * TOOL CALLS
 * The tool and skill helpers of model code (list_tool_servers,
 * search_tools, get_tool_info, call_tool, call_tools_batched, list_skills,
 * search_skills, get_skill_info, load_skill, save_skill; docs/repl.md)
 * send call frames of kind "tool", with the same ids, threads, caps and
 * frame-cap splitting as llm calls: each prompt is one request, a JSON
 * object as text, {"op": OP, ...members}:
 *   "servers"        -
 *   "search"         "query": str, "server": str|null, "limit": int
 *   "info"           "name": str
 *   "call"           "name": str, "arguments": object
 *   "skills"         -
 *   "skill_search"   "query": str, "limit": int
 *   "skill_info"     "name": str ("NAME" or "NAME@V")
 *   "skill_load"     "name": str, "version": int|null (null: the latest)
 *   "skill_save"     "name", "source", "entry", "description", "signature":
 *                    str; "inputs": {PARAM: {"type": T, "required": B
 *                    [, "description": str][, "default": V]}}, T a JSON
 *                    Schema type name ("integer", "number", "string",
 *                    "boolean", "array", "object", "null") or "any", or
 *                    a list of them; "outputs": null or a JSON value
 * The worker refuses arguments that hold a NUL (a request has no
 * \u0000 escape). batched is true only for call_tools_batched (one
 * "call" request per item, n >= 1, answered in order). Each text of the
 * reply is a JSON object as text: {"ok": true, "value": V}, or
 * {"ok": false, "error": "message", "kind": K} with K one of "schema",
 * "policy", "budget", "notfound", "server", "timeout", "skill",
 * "request" (and errors[i] true). The worker raises a failed one as ToolError(message) with .kind
 * K (call_tools_batched returns it in its place); a text that is not such
 * an object ("Error: sub-calls are not available in this REPL", from a
 * repl without a handler) is a ToolError with that text and kind
 * "unavailable". What each op's value holds: docs/repl.md.
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
 * Time: each exec has a limit on the worker's own running time: the wall
 * time since the exec frame, less the time calls were out with the
 * controller, plus the CPU time the worker's threads used while calls were
 * out (at most that time; the kernel's process CPU clock, which the worker
 * cannot forge). So a wait on a call stops the clock only while the
 * worker is idle: one thread waiting on replies does not hide another's
 * computing (sub-calls are bounded by their own deadline). At the limit
 * the worker gets SIGINT (a KeyboardInterrupt in the code; variables
 * kept); if no result comes within the grace period (own time too) it
 * gets SIGKILL and is restarted: the model is told its variables are gone
 * and `context` was reloaded. The absolute deadline of repl_exec (the
 * solve's) is enforced the same way, counting everything.
 *
 * Threads of the code do not outlive its exec. Once the code is done the
 * runtime waits for the threads it started (threading's and _thread's),
 * the clock running on; if the time runs out first, SystemExit is raised
 * in each (never inside a call) for up to 0.3 s and the output names
 * them ("[1 thread the code started was still running when its time ran
 * out: 'spinner' (in spin(), line 3). SystemExit was raised in it and it
 * stopped; the variables are kept. ...]"). After the result the
 * controller counts the worker's threads in the kernel: any but the main
 * one still there 100 ms on (blocked in C, catching SystemExit, an idle
 * pool, a patched runtime) and the worker is restarted, said after the
 * output ("[the REPL was restarted: 2 threads the code started were still
 * running after the exec ended and could not be stopped. ...]"). The
 * code's alarm and interval timers, trace and profile functions are
 * cleared at the end of each exec.
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
	bool json;               /* true: the text is ONE JSON document and
				  * `context` its parsed value (json.loads in
				  * the worker, once); docs may still give the
				  * table (a document per record) */
	const size_t *doc_off;   /* n_docs offsets into text (docs only) */
	const size_t *doc_len;   /* n_docs lengths */
	size_t n_docs;
	/* Optional: a memfd that already holds the worker's layout, sealed
	 * against writes, growing and shrinking: the len bytes of text at byte
	 * text_at and, for docs, the n_docs (offset, length) pairs at byte
	 * table_at (0: text_at + len, right after the text), whose offsets
	 * count from byte 0 of the memfd (text_at + doc_off[i]). It may hold
	 * more (a view of a part of a parent's
	 * context): the worker maps a duplicate's regions and nothing is
	 * copied. repl_start refuses one that is not sealed or that ends before
	 * them (RLM_EINVAL); the worker checks the table's entries lie in the
	 * text. text is still read by nobody but the caller then. */
	bool has_fd;
	int fd;
	uint64_t text_at, table_at;
	/* The documents' identity, for the worker's `documents`: n_meta
	 * metadata lines ({"id":..., "path":..., "title":..., "meta":{...}},
	 * corpus_doc_info's), each ended by '\n', meta_len bytes at meta: one
	 * per document, or one for a str. With has_fd and meta_table_at not 0
	 * they lie in fd already, as n_meta (offset, length) pairs at byte
	 * meta_table_at (offsets from byte 0 of fd), and meta is not read.
	 * n_meta 0: none (`documents` names each by its index). */
	const char *meta;
	size_t meta_len;
	size_t n_meta;
	uint64_t meta_table_at;
};

/* Where a repl's context lies in its memfd (repl_layout): what a child's
 * view of a part of it is made of. */
struct repl_layout {
	int fd;            /* the sealed memfd; borrowed: open until repl_free
			    * (duplicate it to keep it) */
	uint64_t text_at;  /* the text: bytes [text_at, text_at + text_len) */
	uint64_t text_len;
	uint64_t table_at; /* documents: n_docs (offset, length) pairs, each
			    * offset counted from byte 0 of fd */
	long long n_docs;  /* -1: `context` is a str */
	uint64_t meta_table_at; /* the documents' metadata: n_meta (offset,
			    * length) pairs (0: none) */
	size_t n_meta;
};

/* The context= of one prompt of an rlm call frame, as the worker sent it
 * (repl.h's "contexts"). Only the shape is checked here: the handler must
 * check a SLICE or a RUN against the worker's context (bounds, UTF-8
 * boundaries) before using it. */
enum repl_ctx_kind {
	REPL_CTX_NONE,  /* null: the prompt is the context */
	REPL_CTX_TEXT,  /* a str: text[0..len) */
	REPL_CTX_LIST,  /* a list of str: items[0..n_items) */
	REPL_CTX_SLICE, /* {"ref":[a,b]}: bytes [a, a + b) of the worker's text */
	REPL_CTX_RUN,   /* {"docs":[a,b]}: the worker's documents [a, b) */
	REPL_CTX_BAD,   /* none of these: bad says what is wrong */
};

struct repl_ctx_arg {
	enum repl_ctx_kind kind;
	const char *text;               /* TEXT */
	size_t len;
	const char *const *items;       /* LIST: borrowed, like the frame */
	const size_t *item_lens;
	size_t n_items;
	uint64_t a, b;                  /* SLICE: offset, length; RUN: first, end
					 * (not checked: b < a may come) */
	const char *bad;                /* BAD: a static phrase */
};

/* One call frame from the worker: llm_query (n == 1, !batched),
 * llm_query_batched, rlm_query, rlm_query_batched, or (tool) the tool and
 * skill helpers' requests. Borrowed for the duration of the handler. */
struct repl_call {
	bool rlm;                /* rlm_query*: a child RLM is asked */
	bool tool;               /* kind "tool": each prompt is a request (a
				  * JSON object as text, "TOOL CALLS" above)
				  * and each text answered must be a reply
				  * object as text; rlm is false, no contexts,
				  * model NULL; batched only for
				  * call_tools_batched */
	bool batched;
	const char *model;       /* the model= argument, or NULL */
	const char *const *prompts;
	const size_t *lens;
	size_t n;
	/* rlm only: the context= (contexts= for the batch) argument, one per
	 * prompt, or NULL when none was given */
	const struct repl_ctx_arg *contexts;
	int64_t deadline_ns;     /* time_now_ns() clock: answer by then (0: none) */
	/* The strings behind prompts and contexts: bufs[i] is prompts[i]
	 * (NULL when it lies in the frame's bytes, as a binary call frame's
	 * prompts do: then nothing is to be taken, and it is valid until the
	 * handler returns), bufs[n + i] contexts[i].text (NULL: not a TEXT).
	 * The handler may
	 * take any: it sets the entry to NULL and frees the string itself
	 * once done with it (then prompts[i] or contexts[i].text must not be
	 * read again), so that
	 * a large context need not be held while a child works on a copy of
	 * its own. The repl frees the others once the handler returns. */
	char **bufs;
};

/* Answer a call: set texts[i] (malloc'd, owned by the repl afterwards) for
 * every i < n, and errors[i] true when slot i failed (its text then says
 * why, e.g. "Error: the sub-call budget is spent"). Runs on the thread that
 * called repl_exec, or with repl_cfg.parallel_calls on a thread the repl
 * starts for the frame, several at once when the code's threads call
 * together; every one has returned before repl_exec does. */
typedef void repl_call_fn(void *arg, const struct repl_call *call, char **texts, bool *errors);

struct repl;

/* ---- the sandbox ----
 *
 * Model-written code is hostile. Every worker is confined by layers, each
 * probed on first use and applied where the machine supports it (the
 * measurements and the policy behind them: docs/sandbox.md):
 *   seccomp   an allow-list built with libseccomp in the parent: no sockets,
 *             no fork or non-thread clone, no ptrace, io_uring, bpf,
 *             mount, unshare, memfd_create; kill, tkill and tgkill only
 *             to its own pid, and no fcntl that would have the kernel
 *             signal another process (F_SETOWN, F_SETSIG, O_ASYNC, ...);
 *             a second filter, stacked by the runtime once Python is up,
 *             denies execve. Mandatory: without it no worker starts
 *             unless unsafe is set.
 *   identity  as root, the worker runs as uid/gid 65534 (nobody), mapped
 *             from a user namespace when there is one, else setresuid;
 *             no capabilities either way; mandatory as root (disabling it
 *             needs unsafe). Not root: the controller's own uid, reported
 *             on (nothing to drop; why stays empty).
 *   landlock  reads only of what Python needs (/usr, /etc/ld.so.cache,
 *             /etc/localtime, ...), reads and writes only in its scratch
 *             directory, no TCP, no signals out of the domain (by ABI).
 *   userns    a user namespace: the base of the namespaces below, which
 *             are off when it is.
 *   mntns     a mount namespace: the tree read-only, the host's /proc
 *             covered by an empty tmpfs, the scratch directory a tmpfs of
 *             scratch_limit bytes.
 *   netns, pidns, ipcns, utsns   no network at all; its own pid 1 with a
 *             fresh /proc that shows only it (so signals it sends itself
 *             with a default action are ignored).
 *   pivot     a root of its own (pivot_root into a tmpfs, the host's tree
 *             detached): /usr, /etc/ld.so.cache and /etc/localtime,
 *             /dev/null, zero, random, urandom, /proc and the scratch
 *             directory; every other host path does not exist for it.
 *             Needs mntns.
 *   rlimits   address space, open files, file size, core 0, CPU seconds,
 *             each at most the controller's own hard limit; with userns
 *             also RLIMIT_NPROC, counted in the worker's own user
 *             namespace: a cap on its threads (max_threads).
 * and always: only its own fds, a scrubbed environment, its own session,
 * the parent-death signal, no_new_privs, no ambient capabilities, the wall
 * clock per exec, a worker that makes itself non-dumpable once Python is
 * up (its peers of the same uid cannot open its /proc/PID/fd or mem), and
 * a controller that is not dumpable (set by the first repl_start). A layer
 * that fails in the child is left out for the rest of the process and the
 * worker started again without it (seccomp only with unsafe);
 * RLM_SANDBOX_DISABLE=<list> turns layers off (a bad name fails
 * repl_start with RLM_EINVAL). */
enum repl_layer {
	REPL_L_SECCOMP,
	REPL_L_IDENTITY,
	REPL_L_LANDLOCK,
	REPL_L_USERNS,
	REPL_L_MNTNS,
	REPL_L_NETNS,
	REPL_L_PIDNS,
	REPL_L_IPCNS,
	REPL_L_UTSNS,
	REPL_L_RLIMITS,
	REPL_L_PIVOT,
	REPL_L_COUNT
};
#define REPL_L_ALL ((1u << REPL_L_COUNT) - 1)

struct repl_sandbox_cfg {
	unsigned disable;     /* bits (1u << REPL_L_...) turned off on request;
			       * RLM_SANDBOX_DISABLE is OR-ed in by repl_start */
	bool unsafe;          /* run even where seccomp cannot be applied, or
			       * is disabled, or (as root) with identity
			       * disabled: the explicit --unsafe-no-sandbox */
	size_t mem_limit;     /* RLIMIT_AS bytes; 0: max(2 GiB, 16 x context) */
	size_t scratch_limit; /* scratch bytes (tmpfs size, or the quota of a
			       * plain directory, checked after each exec and
			       * RLIMIT_FSIZE); 0: 256 MiB */
	int64_t cpu_limit_s;  /* RLIMIT_CPU for a worker's life; 0: 3600 */
	int max_files;        /* RLIMIT_NOFILE; 0: 64 */
	int max_threads;      /* threads of a worker, its main thread included
			       * (RLIMIT_NPROC in its own user namespace, so
			       * only with userns); 0: 256; < 0: no cap */
};

struct repl_sandbox_status {
	bool on[REPL_L_COUNT];        /* applied to the worker */
	char why[REPL_L_COUNT][120];  /* for a layer that is off: why
				       * ("disabled by RLM_SANDBOX_DISABLE",
				       * "not root: already unprivileged",
				       * "clone(CLONE_NEWUSER): errno 1 (EPERM)") */
	int landlock_abi;             /* 0: none */
	int seccomp_filters;          /* stacked, as the kernel reports them
				       * (/proc/PID/status): 2 when the late
				       * filter is on */
	unsigned uid, gid;            /* of the worker, as seen from outside */
	bool scratch_tmpfs;           /* the scratch is a sized tmpfs */
	unsigned long scratch_inodes; /* files and directories it may hold
				       * (tmpfs nr_inodes=, or the plain
				       * directory's count) */
	int max_threads;              /* tasks of the worker, its main thread
				       * included (RLIMIT_NPROC in its own user
				       * namespace); 0: not capped */
	bool unsafe;                  /* it runs without seccomp, or as root */
	char fs[48];                  /* "landlock+ro-mount", "landlock",
				       * "ro-mount", "uid-65534", "unconfined" */
	char line[512];               /* one line of all of it: "seccomp=on(2)
				       * landlock=abi7 userns=on ... uid=65534
				       * fs=landlock+ro-mount scratch=tmpfs(256M)
				       * rlimits=AS2G,NOFILE64,FSIZE256M,CPU3600" */
};

const char *repl_layer_name(enum repl_layer l); /* "seccomp", "userns", ... */
/* Parse "userns,landlock" (names as above, "all", "ns" for every
 * namespace; blanks and empty items ignored) into disable bits. Returns 0
 * or RLM_EINVAL with err naming the unknown layer and listing the known. */
int repl_sandbox_parse(const char *list, unsigned *bits, struct rlm_err *err);
/* Check a sandbox configuration before anything starts (no probe, no
 * process): RLM_SANDBOX_DISABLE must parse, and a mandatory layer (seccomp;
 * identity when the caller is root) may be disabled, by cfg or by the
 * variable, only with unsafe. Returns 0, RLM_EINVAL (a bad layer name) or
 * RLM_ESANDBOX, with a message that names the fix. repl_start makes the
 * same checks; this lets a caller refuse bad options before it spends a
 * model call. What the kernel lacks is still only known to repl_start. */
int repl_sandbox_check(const struct repl_sandbox_cfg *c, struct rlm_err *err);
/* The sandbox of the current worker. */
void repl_sandbox_status(const struct repl *r, struct repl_sandbox_status *out);
/* st as a JSON object: line, layers (true when on, else the words why it
 * is off), landlock_abi, seccomp_filters, uid, gid, fs, scratch_tmpfs,
 * unsafe. The caller owns the result (cJSON_Delete). */
struct cJSON *repl_sandbox_status_json(const struct repl_sandbox_status *st);

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
	bool parallel_calls;         /* answer each call frame on a thread of
				      * its own, so that calls from several
				      * threads of the code are out together:
				      * on_call may then run on several
				      * threads at once */
	size_t calls_ahead;          /* with parallel_calls: once the call
				      * frames being answered hold this many
				      * prompts, the next frame waits (the
				      * worker waits to send it) until some
				      * are answered: a batch far larger than
				      * the pool's slots is not all held
				      * here at once; 0: no such cap */
	const atomic_bool *cancel;   /* optional: ends an exec like its deadline */
	const atomic_bool *stop;     /* optional: a stop of the whole run (rlm:
				      * any node of the solve met a limit): ends
				      * an exec like cancel, once the code has
				      * had stop_grace_ns of its own time after
				      * it was seen (so code that was waiting on
				      * a call can keep what the call answered) */
	int64_t stop_grace_ns;       /* 0: 250 ms */
	struct repl_sandbox_cfg sandbox; /* zero: every layer the machine has */
	bool no_zygote;              /* start every worker cold, not from the
				      * zygote (so does RLM_ZYGOTE=0) */
	bool lone;                   /* the one worker its process wants for
				      * now (a solve that makes no child RLMs):
				      * started cold unless a zygote is up or
				      * another REPL is open, as a zygote's
				      * start and fork cost more than the one
				      * cold start they would save */
	const char *schema;          /* a JSON Schema (JSON text) every answer
				      * must be valid under (STRUCTURED ANSWERS
				      * above), copied; NULL: none */
};

/* Start a worker and wait until it has `context` (its "ready" frame).
 * Returns 0, or a negative code with err naming the problem (python3
 * missing: RLM_ENOTFOUND; the runtime failed, ...). The first call starts
 * the spawner thread and sets SIGPIPE to SIG_IGN when it is at its default
 * (writes to a dead worker must fail with EPIPE, not kill us). */
int repl_start(const struct repl_cfg *cfg, struct repl **out, struct rlm_err *err);
/* Kill the worker (if alive), reap it, remove its scratch directory. NULL
 * is a no-op. */
void repl_free(struct repl *r);
/* Where r's context lies in its memfd (the same for every worker r
 * starts). The thread that uses r. */
void repl_layout(const struct repl *r, struct repl_layout *out);

/* One entry of answer["sources"] as the worker sent it: what the answer
 * says it rests on. Only the shape is checked here: whether the document
 * exists and the quote is in it is the caller's to check. */
#define REPL_MAX_SOURCES 100   /* entries in a result frame */
#define REPL_MAX_QUOTE	 2000  /* characters of a quote */
struct repl_source {
	char *doc;               /* a document id, or an index as its decimal
				  * str; owned */
	int64_t start, end;      /* byte offsets in that document; -1: absent */
	char *quote;             /* owned, or NULL */
};

struct repl_result {
	char *output;            /* what the model sees, never NULL; owned */
	size_t len;
	size_t output_chars;     /* true length of the captured output */
	bool error;              /* the code raised (traceback in output) */
	size_t error_at;         /* when error: where in output the error's
				  * text (traceback, message) begins, what
				  * follows it included; len when not known
				  * or no error */
	bool interrupted;        /* the time limit interrupted it (SIGINT) */
	bool restarted;          /* the worker was killed and restarted: state lost */
	bool ready;              /* answer["ready"] was set: answer is final */
	char *answer;            /* when ready; owned */
	char *content;           /* answer["content"] when set but not ready; owned */
	struct repl_source *sources; /* answer["sources"] when ready and set;
				  * owned, n_sources entries (NULL: none) */
	size_t n_sources;
	size_t calls;            /* prompts this exec sent */
	int64_t ns;              /* wall time of the exec */
	int64_t call_ns;         /* of which waiting on calls */
	char **vars;             /* the user's variable names (not the helpers,
				  * modules or _names); owned, NULL-terminated */
	size_t n_vars;
	char *made;              /* the variables this exec made (new or
				  * rebound names, as n_vars), with their
				  * types: "x: int, chunks: list", at most 20
				  * and 400 characters (then "(and N more:
				  * ...)"); owned, NULL: none */
	char *invalid;           /* with a schema: the answer made ready was
				  * not valid under it (ready is false): the
				  * errors, "at $.a: message" lines; owned,
				  * NULL: none */
};

/* Run code in the worker. A crash, a violation or a timeout is not an
 * error: it is reported in out (output says what happened, restarted is
 * set) and the worker is alive again afterwards. Returns 0, RLM_ETIMEOUT
 * when deadline_ns (time_now_ns() clock; 0: none) passed, RLM_ECANCEL when
 * cfg.cancel or cfg.stop turned true -- out is filled in these cases, the
 * worker interrupted or restarted -- or another negative code when the
 * worker could not be restarted (err says why; the repl is then unusable). */
int repl_exec(struct repl *r, const char *code, size_t len, int64_t deadline_ns,
	      struct repl_result *out, struct rlm_err *err);
/* Resolve FINAL_VAR(name) in the worker: out->ready and out->answer when
 * the variable exists, else out->error with a message saying it does not.
 * name is a variable name, maybe quoted ("x", "'x'"). Time limits, restarts
 * and return codes as for repl_exec. */
int repl_final_var(struct repl *r, const char *name, int64_t deadline_ns,
		   struct repl_result *out, struct rlm_err *err);
/* Set the answer schema of r's worker (and of those it restarts) to
 * schema (JSON text; NULL: none, any answer), as repl_cfg.schema does at
 * start: for a worker kept across solves whose schemas differ (sessions).
 * The same schema again is a no-op. Returns 0; RLM_EINVAL with err saying
 * why when the worker refuses it (not JSON, not valid JSON Schema, no
 * validator: the old one stays); RLM_EIO when the worker died on it (the
 * one restarted keeps the old schema); or repl_exec's codes. Variables are
 * kept. */
int repl_set_schema(struct repl *r, const char *schema, struct rlm_err *err);
/* Take FINAL(text) in the worker, as code's FINAL would: with a schema,
 * checked under it (out->ready with the compact JSON, or out->invalid);
 * without, ready with text. Time limits, restarts and return codes as for
 * repl_exec (RLM_ETOOBIG: text does not fit in a frame). */
int repl_final(struct repl *r, const char *text, size_t len, int64_t deadline_ns,
	       struct repl_result *out, struct rlm_err *err);
void repl_result_release(struct repl_result *res);
/* Bind name in the worker's namespace to the JSON value value_json (text
 * of one JSON value, which the caller vouches for: cJSON's output), as a
 * session does for `history` and context_1, ...; with reset_answer, the
 * answer dict is emptied too (content "", ready False, no sources), so
 * that the next question starts without the last one's answer. name must
 * be an identifier, not a helper's name nor _private: the worker answers
 * otherwise with out->error. A frame over the cap is not sent (RLM_ETOOBIG);
 * time limits, restarts and the return as for repl_exec. */
int repl_set(struct repl *r, const char *name, const char *value_json, bool reset_answer,
	     int64_t deadline_ns, struct repl_result *out, struct rlm_err *err);
/* Point r's calls, cancel and stop at another caller's (a session's worker
 * serves one solve after another): repl_cfg's on_call, call_arg, cancel
 * and stop. Only between execs. */
void repl_rebind(struct repl *r, repl_call_fn *on_call, void *call_arg, const atomic_bool *cancel,
		 const atomic_bool *stop);

struct repl_stats {
	pid_t pid;               /* current worker */
	int restarts;
	int64_t execs;
	int64_t calls;           /* prompts over the life of the repl */
	int64_t frames_copied;   /* frames over 64 KiB copied out of the
				  * buffer they were read into instead of kept
				  * there (docs/llm.md counts a prompt's
				  * copies with this at 0) */
	int64_t start_ns;        /* last start: request to ready */
	bool zygote;             /* the last start was a fork of the zygote */
	char python[32];         /* the worker's Python version */
};
void repl_stats(const struct repl *r, struct repl_stats *out);

/* ---- frames (exposed for tests and the fuzz target) ---- */

/* Parse one frame body (what follows the length prefix: JSON, or a
 * binary call frame) from the worker and check it against the protocol:
 * known type, fields of the right types, strings valid UTF-8. A binary
 * frame's prompts are string nodes that reference body (cJSON_IsReference),
 * their lengths in valuedouble, checked here alone: body must outlive the
 * tree. Returns a cJSON object the caller frees (cJSON_Delete),
 * or NULL with err saying what is wrong. */
struct cJSON *repl_frame_parse(const char *body, size_t len, size_t max, struct rlm_err *err);

/* Cut s[0..len) for the model: when it is over limit characters (code
 * points), keep limit of them, the head and the tail, with a line in
 * between stating how many were left out of how many ("[... 140,000 of
 * 160,000 characters omitted ...]"). The worker cuts the same way. Returns
 * a fresh string. */
char *repl_truncate(const char *s, size_t len, size_t limit, size_t *out_len);

#endif
