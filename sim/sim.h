/* SPDX-License-Identifier: MIT */
/* sim/sim.h -- the offline simulator model.
 *
 * DESIGN
 * The simulator lets the whole pipeline run with no network: tests, the
 * README demo, benchmarks of the controller. It speaks the OpenAI chat
 * completions format, in-process (the llm provider "sim": sim_provider)
 * and over HTTP (`rlm sim-serve`), through the same sim_handle(), so both
 * paths share one policy, one timing model and one fault injector.
 *
 * Policy (it never sees an expected answer):
 * - It splits the last user message into a question and material: the
 *   question is the text after a "Question:" line marker (else the last line
 *   ending in '?', else the first line); the material is what follows a line
 *   "Text:" or "Context:" (else everything but the question).
 * - Sub-model: it answers extractively from the material, whose units are
 *   sentences (a line cut at . ! ? before a space; a sentence over 600
 *   bytes cut into pieces of ~400 at spaces): the unit that best matches
 *   the question's terms (rare terms weigh more; terms are stemmed, so
 *   "released" meets "release"; "v20.0.0" is "20.0.0"; a compound term
 *   of words such as node.js also matches its parts, at half weight, one
 *   with a digit all its parts in a row: "OPS 1234"), or, for
 *   "how many" questions, the count of lines with a unit holding every
 *   term (a closing verb, "log" of "How many errors did X log?", only
 *   when some unit holding the rest holds it; what is counted, "parts" of
 *   "How many parts ...?", also when the material never says it, unless
 *   its lines are table rows or JSON records: a table's rows need not say
 *   "part"), or NONE when nothing matches. A unit answers only if it holds
 *   the question's keys (names written with a capital, numbers and
 *   identifiers, sim_next_key's keys; when some keys hold a digit, those
 *   alone, at least one whole), else, for a question with no key, half
 *   its weight: question words never sink a match. A sentence is the
 *   answer whole (1,000 bytes at most); a piece answers with a window of
 *   500 bytes of its line centred on the terms it holds, never the head
 *   of a long line. A question naming several keys in a list ("the codes
 *   of Ada, Grace and Linus": items joined by commas, "and", "or") gets
 *   the best unit of each key the material holds, one per line (NONE if
 *   none). A line "[doc: ID]" names the document whose text follows and
 *   is no material; a question that asks which document
 *   (sim_asks_which_doc) gets the ID above its best unit (one holding
 *   every key of the question, sim_next_key, else one matching as a best
 *   unit must), or for a plural the IDs above every unit as good, one per
 *   line. A question that asks for "all" of something (sim_asks_all) gets
 *   every distinct unit that matches as well as the best one, one per line.
 * - Combiner: when the message holds "Partial answers:", it combines them:
 *   for "how many" questions the sum of the numbers; for a question naming
 *   several keys, for each key the line of the partials that holds it and
 *   matches best, distinct, one per line; else the partial answer that
 *   best matches the question (of equals, one stating a value: a term
 *   with a digit the question lacks); NONE when all are NONE. For "all", the
 *   distinct lines of the partial answers that match best, one per line
 *   (so values found by different readers are listed together, and lines
 *   about something else are dropped).
 * - Root model (sim/sim_root.c): when the system message describes the
 *   REPL (it mentions ```repl blocks and llm_query_batched), it plays the
 *   root of the RLM loop and writes the code a sensible model would, one
 *   step per turn, reading only the conversation: turn 1 probes the
 *   context (type, size, a sample, how many documents and a few ids);
 *   turn 2 filters first when the question has a distinctive literal:
 *   its quoted phrases, else its identifiers (sim_next_key), numbers of
 *   two groups or more or of 5 digits (20.0.0, 2023-04-18; searched
 *   whole), names with an inner dot (Node.js) and names with non-ASCII
 *   letters (Zürich, 東京; not "código"); it search()es each, reads the lines of the rarest
 *   one found 1 to 2,000 times (of those, the ones that hold every key,
 *   when some do), or of every key when the question lists them ("the
 *   codes of A, B and C": each key's lines asked the question about that
 *   key alone, "the codes of A", and answered as an "all" question),
 *   under "[doc: ID]" lines, each window of a long line once; when those
 *   lines answer nothing, it reads the whole context; else it cuts the context into
 *   chunks of the size the first user message states ("Sub-calls can
 *   read about N characters"; `chunk=` overrides), groups documents into
 *   chunks when the context is a list (each headed by "[doc: ID]" when
 *   the question asks which document, sim_asks_which_doc), asks the
 *   question of every chunk with llm_query_batched, drops NONE and
 *   errors, and prints what it found;
 *   past `rlm_chunks=` chunks (128), when the system message does not say
 *   rlm_query is a plain call, it hands 8 to 16 pieces of the context to
 *   child RLMs with rlm_query_batched instead, each asked the question;
 *   turn 3 combines (a sum in code for "how many" questions, the answer
 *   itself when all agree, else one llm_query over the partial answers;
 *   for "all" questions, the distinct lines of the answers, combined by
 *   one llm_query when there are several; for a question that asks which
 *   document, the ids the chunks named) and sets answer["content"],
 *   answer["sources"] (the ids of the documents whose chunks gave the
 *   answer used) and answer["ready"]. The question is the
 *   first user message's "Question:" line. When the last output holds a
 *   Python traceback it writes the failed step again, correctly. With
 *   `code_errors=P` each step is written with a bug (a NameError, a
 *   TypeError, ...) with probability P, drawn from a hash of the seed,
 *   the question and the turn, so runs repeat exactly. Asked for a final
 *   answer outright ("out of turns"), it replies FINAL(...) with the best
 *   answer the outputs so far show, else FINAL(NONE).
 * - Host tools (sim/sim_tools.c): when the system message has a line
 *   starting "Host tools:", the root first takes the three steps of
 *   progressive discovery, in turns marked "# tools N:": search_tools()
 *   with the question's words (its literals left out, synonyms of a small
 *   table added), get_tool_info() of the hit whose name fits the question
 *   best, call_tool() with arguments from the question's literals (numbers
 *   in the order of the schema's required list, quoted strings, paths,
 *   enum values it names, the value after a parameter it names), then
 *   FINAL(the result). No hit that fits, a required argument the question
 *   lacks, a tool the policy refuses, or a ToolError: the usual steps.
 * - Usage: ceil(bytes / 4) tokens in and out.
 *
 * Timing: each reply waits ttft + output_tokens / decode_tps (zero by
 * default, so tests are fast).
 *
 * Faults: each request draws, from a seeded generator, at most one fault:
 * 429 with Retry-After, 500, a reset connection, a malformed JSON body, a
 * slow reply, or a truncated body, at the configured rates. `faults=N` caps
 * the number of faults injected in the simulator's life, so a test can ask
 * for "the first two requests fail" exactly.
 */
#ifndef RLM_SIM_H
#define RLM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../llm/llm.h"

struct sim_cfg {
	uint64_t seed;          /* fault generator seed */
	double ttft_ms;         /* time to first token */
	double decode_tps;      /* output tokens per second; 0: instant */
	double p_429;           /* fault rates in [0, 1] */
	double p_500;
	double p_reset;
	double p_malformed;
	double p_slow;
	double p_truncate;
	long faults_max;        /* < 0: no cap */
	double retry_after_s;   /* Retry-After of a 429, in whole seconds sent */
	long retry_after_ms;    /* > 0: also send retry-after-ms */
	double slow_ms;         /* extra delay of a slow reply */
	double code_errors;     /* root: rate of steps written with a bug */
	long chunk_chars;       /* root: chunk size; 0: what the prompt states */
	long rlm_chunks;        /* root: more chunks than this go to child RLMs */
	long window;            /* tokens of prompt accepted (ceil(bytes / 4) of
				 * the messages' content); more: 400
				 * context_length_exceeded; 0: any */
	long explore;           /* root: turns spent reading pieces of the
				 * context between step 1 and step 2 */
};

/* Defaults: no delay, no faults, seed 1, Retry-After 1 s, slow 2000 ms,
 * rlm_chunks 128. */
void sim_cfg_default(struct sim_cfg *cfg);

/* Parse a spec like "ttft=100ms,tps=50,429=0.1,500=0.05,reset=0.05,
 * malformed=0.05,slow=0.02,truncate=0.05,faults=3,retry_after=1,
 * retry_after_ms=50,slow_ms=500,seed=7,code_errors=0.2,chunk=100000,window=8k,
 * explore=100" over the values already in cfg.
 * Durations take ms or s suffixes (ms by default). Unknown keys and bad
 * values are errors naming the key. Returns 0 or RLM_EINVAL. */
int sim_cfg_parse(const char *spec, struct sim_cfg *cfg, struct rlm_err *err);

struct sim;

struct sim *sim_new(const struct sim_cfg *cfg);
/* What of its configuration decides its replies (not timing or faults):
 * "seed=1,code_errors=0,chunk=0,rlm_chunks=128", then ",window=N" and
 * ",explore=N" when they are set. */
void sim_cache_id(const struct sim *s, char *dst, size_t cap);
void sim_free(struct sim *s);
/* Requests handled and faults injected so far (thread-safe). */
void sim_counts(struct sim *s, int64_t *requests, int64_t *faults);

/* The policy alone: the reply text to a conversation (cfg NULL:
 * defaults). Fresh string. */
char *sim_reply_text(const struct sim_cfg *cfg, const struct llm_msg *msgs, size_t n);
/* The root policy: the reply when msgs is a conversation of the RLM loop
 * (see above), else NULL. Fresh string. */
char *sim_root_reply(const struct sim_cfg *cfg, const struct llm_msg *msgs, size_t n);
/* Whether the question q[0..n) asks for all of something, every answer
 * and not the best one ("What are all the special magic numbers for
 * ...?"): it has the word "all", in any case, and does not ask how many. */
bool sim_asks_all(const char *q, size_t n);
/* Whether the question q[0..n) asks which document holds something, so
 * that its answer is a document's name: "which" or "what" with a kind of
 * document within four words ("Which header defines ...", "In which of
 * the records ...", "What files mention ..."; a file, document, header,
 * record, source, page, report, article, entry, module, paper, email,
 * ticket, row, chapter, post, note, memo, log, book, story, review or
 * listing), or "where is ... defined / declared / implemented"; never a
 * "how many" question. *plural (may be NULL) gets whether it asks for
 * several (the noun is a plural, or the question asks for all). */
bool sim_asks_which_doc(const char *q, size_t n, bool *plural);
/* The next key of the question q[*pos..n), the thing it is about that a
 * search can find: a phrase in double quotes (straight or curly; *quoted
 * true), or a token of identifier shape of at least 4 bytes (letters,
 * digits, '_', inner '-' and '.'; with an underscore, a digit and a
 * letter, two capitals and no small letter, or camelCase):
 * EPOLLEXCLUSIVE, zebra-7731, max_len, parseHeader. *key points into q;
 * *pos moves past it. False when there is no more. */
bool sim_next_key(const char *q, size_t n, size_t *pos, const char **key, size_t *len,
		  bool *quoted);

enum sim_fault {
	SIM_OK,
	SIM_429,
	SIM_500,
	SIM_RESET,     /* close the connection without a response */
	SIM_MALFORMED, /* 200 with a body that is not the expected JSON */
	SIM_SLOW,      /* the reply comes slow_ms later than modelled */
	SIM_TRUNCATE,  /* send the headers and half the body, then close */
};

/* What a server sends for one request. */
struct sim_reply {
	int status;              /* 200, 400, 429, 500 */
	enum sim_fault fault;
	int64_t delay_ns;        /* wait this long before the first byte */
	bool stream;             /* the request asked for "stream": true */
	char *body;              /* the full body (JSON, or SSE text when stream); owned */
	size_t len;
	long retry_after_s;      /* >= 0: send Retry-After */
	long retry_after_ms;     /* > 0: send retry-after-ms */
};

/* Answer one chat completions request body (OpenAI format) the way a
 * server would, including timing and an injected fault. A body that is not
 * a valid request gets status 400 and an OpenAI-style error body. Returns 0;
 * thread-safe. */
int sim_handle(struct sim *s, const char *body, size_t len, struct sim_reply *out);
void sim_reply_release(struct sim_reply *r);

/* ---- the simulator over HTTP (sim/sim_serve.c) ----
 * An OpenAI-compatible chat completions server on libmicrohttpd: POST
 * /v1/chat/completions (also /chat/completions; "stream": true gives
 * server-sent events), GET /v1/models, GET /healthz; every reply from
 * sim_handle, with its latency slept and its fault played at the socket. */

struct sim_server;

/* Serve a simulator made with cfg on listen_fd, a listening socket
 * (net_listen), on threads of its own; they inherit the caller's signal
 * mask. listen_fd is the server's from now on, closed here too when it
 * cannot start: then NULL with err. */
struct sim_server *sim_server_start(const struct sim_cfg *cfg, int listen_fd, struct rlm_err *err);
/* Stop serving: handlers sleeping a latency give up within 10 ms, the
 * connections and the socket are closed, everything is freed. NULL: no-op. */
void sim_server_stop(struct sim_server *sv);

/* The simulator as an in-process llm provider named "sim": open makes a
 * struct sim from a spec (sim_cfg_parse over the defaults), close frees
 * it, cache_id is sim_cache_id, perform answers as sim_handle does and
 * waits the modelled latency (a stream is answered whole); its models
 * have the endpoint "sim://local/v1" and a window of 32000 tokens. A
 * model may also name it with a struct sim of the caller's as impl. */
extern const struct llm_provider sim_provider;
/* Register sim_provider (llm_provider_register) so that the provider
 * "sim" can be found by name: before models are set up. Idempotent; any
 * thread. */
#pragma GCC visibility push(default) /* exported by librlm.so (docs/api.md) */
void sim_provider_register(void);
#pragma GCC visibility pop

#endif
