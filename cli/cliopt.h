/* SPDX-License-Identifier: MIT */
/* cli/cliopt.h -- the model options every command that calls models takes
 * (--provider, --model, --base-url, ...) and their environment variables,
 * into the configuration rlm_models_init sets models up from; the sandbox
 * options of the commands that start a REPL worker; the strategy and
 * limits of the commands that solve (solve, serve). */
#ifndef RLM_CLIOPT_H
#define RLM_CLIOPT_H

#include <getopt.h>
#include <stdbool.h>

#include "../common/json.h"
#include "../common/text.h"
#include "../llm/llm.h"
#include "../repl/repl.h"
#include "../rlm/rlm.h"

enum {
	OPT_PROVIDER = 1000,
	OPT_MODEL,
	OPT_SUB_MODEL,
	OPT_BASE_URL,
	OPT_API_KEY,
	OPT_CONCURRENCY,
	OPT_TIMEOUT,
	OPT_MAX_RETRIES,
	OPT_MAX_INFLIGHT,
	OPT_RPM,
	OPT_TPM,
	OPT_MAX_TOKENS,
	OPT_TEMPERATURE,
	OPT_EXTRA_JSON,
	OPT_PRICES,
	OPT_SIM,
	OPT_SUB_CONTEXT_WINDOW,
	OPT_MODEL_LAST,
};

/* Entries for a getopt_long table. */
#define MODEL_LONGOPTS                                                                             \
	{"provider", required_argument, NULL, OPT_PROVIDER},                                       \
	{"model", required_argument, NULL, OPT_MODEL},                                             \
	{"sub-model", required_argument, NULL, OPT_SUB_MODEL},                                     \
	{"base-url", required_argument, NULL, OPT_BASE_URL},                                       \
	{"api-key", required_argument, NULL, OPT_API_KEY},                                         \
	{"concurrency", required_argument, NULL, OPT_CONCURRENCY},                                 \
	{"timeout", required_argument, NULL, OPT_TIMEOUT},                                         \
	{"max-retries", required_argument, NULL, OPT_MAX_RETRIES},                                 \
	{"max-inflight", required_argument, NULL, OPT_MAX_INFLIGHT},                               \
	{"rpm", required_argument, NULL, OPT_RPM},                                                 \
	{"tpm", required_argument, NULL, OPT_TPM},                                                 \
	{"max-tokens", required_argument, NULL, OPT_MAX_TOKENS},                                   \
	{"temperature", required_argument, NULL, OPT_TEMPERATURE},                                 \
	{"extra-json", required_argument, NULL, OPT_EXTRA_JSON},                                   \
	{"prices", required_argument, NULL, OPT_PRICES},                                           \
	{"sim", required_argument, NULL, OPT_SIM},                                                 \
	{"sub-context-window", required_argument, NULL, OPT_SUB_CONTEXT_WINDOW}

/* Help text for the options above. */
extern const char cli_model_opts_help[];

/* Defaults (rlm_models_cfg_init), then the environment: RLM_PROVIDER,
 * RLM_MODEL, RLM_SUB_MODEL, RLM_CONCURRENCY, RLM_TIMEOUT, RLM_PRICES,
 * RLM_SIM (the provider spec), and each provider's key and endpoints:
 * OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
 * (used for a model of that provider when no --api-key / --base-url is
 * given). rlm_models_init turns o into the pool and models. */
void cli_model_opts_init(struct rlm_models_cfg *o);
/* Take option `opt` with argument `arg`. Returns 1 when taken, 0 when opt
 * is not a model option, or 2 after printing an error for a bad value. */
int cli_model_opts_take(struct rlm_models_cfg *o, int opt, const char *arg);

/* ---- the sandbox of the REPL worker (solve, repl, doctor) ---- */

enum {
	OPT_SANDBOX_DISABLE = 1100,
	OPT_UNSAFE_NO_SANDBOX,
	OPT_MEM_LIMIT,
	OPT_SCRATCH_LIMIT,
};

#define SANDBOX_LONGOPTS                                                                           \
	{"sandbox-disable", required_argument, NULL, OPT_SANDBOX_DISABLE},                         \
	{"unsafe-no-sandbox", no_argument, NULL, OPT_UNSAFE_NO_SANDBOX},                           \
	{"mem-limit", required_argument, NULL, OPT_MEM_LIMIT},                                     \
	{"scratch-limit", required_argument, NULL, OPT_SCRATCH_LIMIT}

/* Help text for the options above (and RLM_SANDBOX_DISABLE). */
extern const char cli_sandbox_opts_help[];

/* Take option `opt` with argument `arg` into c. Returns 1 when taken, 0
 * when opt is not a sandbox option, or 2 after printing an error for a bad
 * value. --unsafe-no-sandbox prints its warning on stderr here, always. */
int cli_sandbox_opts_take(struct repl_sandbox_cfg *c, int opt, const char *arg);


/* ---- how a context is read (solve, repl) ---- */

enum {
	OPT_C_FORMAT = 1300,
	OPT_C_ENCODING,
	OPT_C_STRICT_UTF8,
};

#define CONTEXT_LONGOPTS                                                                           \
	{"format", required_argument, NULL, OPT_C_FORMAT},                                         \
	{"encoding", required_argument, NULL, OPT_C_ENCODING},                                     \
	{"strict-utf8", no_argument, NULL, OPT_C_STRICT_UTF8}

/* Help lines for the options above, in the commands' option list. */
extern const char cli_context_opts_help[];

/* Take option `opt` with argument `arg` into co. Returns 1 when taken, 0
 * when opt is not a context option, or 2 after printing an error for a bad
 * value (an unknown kind or encoding). */
int cli_context_opts_take(struct corpus_opts *co, int opt, const char *arg);

/* ---- the strategy and limits of a solve (solve, serve) ---- */

enum {
	OPT_S_LEAF_CHARS = 1200,
	OPT_S_MAX_ITERATIONS,
	OPT_S_MAX_ERRORS,
	OPT_S_TIME_LIMIT,
	OPT_S_MAX_TOTAL_TOKENS,
	OPT_S_MAX_COST,
	OPT_S_MAX_SUB_CALLS,
	OPT_S_EXEC_TIMEOUT,
	OPT_S_OUTPUT_LIMIT,
	OPT_S_PYTHON,
	OPT_S_PYTHON_FENCES,
	OPT_S_PROMPTS,
	OPT_S_MAX_DEPTH,
	OPT_S_MAX_NODES,
	OPT_S_REFRESH,
	OPT_S_MAX_CALLS,
	OPT_S_MAX_ANSWER,
	OPT_S_COMPACTION_THRESHOLD,
	OPT_S_NO_COMPACTION,
	OPT_S_SYSTEM_PROMPT,
	OPT_S_SYSTEM_EXTRA,
	OPT_S_SETUP_CODE,
	OPT_S_SUB_SYSTEM_EXTRA,
	OPT_S_SUB_SETUP_CODE,
};

/* ---- host tools and skills (solve, serve, mcp, repl, bench run) ---- */

enum {
	OPT_T_MCP_CONFIG = 1400,
	OPT_T_ALLOW_TOOLS,
	OPT_T_DENY_TOOLS,
	OPT_T_MAX_TOOL_CALLS,
	OPT_T_TOOL_TIMEOUT,
	OPT_T_ALLOW_SKILL_WRITES,
};

#define TOOLS_LONGOPTS                                                                             \
	{"mcp-config", required_argument, NULL, OPT_T_MCP_CONFIG},                                 \
	{"allow-tools", required_argument, NULL, OPT_T_ALLOW_TOOLS},                               \
	{"deny-tools", required_argument, NULL, OPT_T_DENY_TOOLS},                                 \
	{"max-tool-calls", required_argument, NULL, OPT_T_MAX_TOOL_CALLS},                         \
	{"tool-timeout", required_argument, NULL, OPT_T_TOOL_TIMEOUT},                             \
	{"allow-skill-writes", no_argument, NULL, OPT_T_ALLOW_SKILL_WRITES}

/* Help lines for the options above. */
extern const char cli_tools_opts_help[];

/* Take option `opt` with argument `arg` into ro: --mcp-config FILE (may be
 * given again: the servers of every file) reads the file now and makes
 * ro->tools; --allow-tools and --deny-tools (may be given again: the lists
 * add up) set ro->tool_policy. Returns 1 when taken, 0 when opt is not a
 * tools option, or 2 after printing an error (a bad file, server or
 * pattern). */
int cli_tools_opts_take(struct rlm_opts *ro, int opt, const char *arg);
/* Stop the servers and free what cli_tools_opts_take made (ro->tools,
 * ro->tool_policy), and the texts cli_solve_opts_take read (--system-prompt
 * and the like). */
void cli_tools_opts_release(struct rlm_opts *ro);

/* --strategy is 's', so that a command may also take -s. The tools
 * options are among them (cli_solve_opts_take takes them). */
#define SOLVE_LONGOPTS                                                                             \
	TOOLS_LONGOPTS,                                                                            \
	{"strategy", required_argument, NULL, 's'},                                                \
	{"leaf-chars", required_argument, NULL, OPT_S_LEAF_CHARS},                                   \
	{"max-iterations", required_argument, NULL, OPT_S_MAX_ITERATIONS},                           \
	{"max-errors", required_argument, NULL, OPT_S_MAX_ERRORS},                                   \
	{"time-limit", required_argument, NULL, OPT_S_TIME_LIMIT},                                   \
	{"max-total-tokens", required_argument, NULL, OPT_S_MAX_TOTAL_TOKENS},                       \
	{"max-cost", required_argument, NULL, OPT_S_MAX_COST},                                       \
	{"max-sub-calls", required_argument, NULL, OPT_S_MAX_SUB_CALLS},                             \
	{"max-calls", required_argument, NULL, OPT_S_MAX_CALLS},                                     \
	{"exec-timeout", required_argument, NULL, OPT_S_EXEC_TIMEOUT},                               \
	{"output-limit", required_argument, NULL, OPT_S_OUTPUT_LIMIT},                               \
	{"max-answer", required_argument, NULL, OPT_S_MAX_ANSWER},                                   \
	{"compaction-threshold", required_argument, NULL, OPT_S_COMPACTION_THRESHOLD},               \
	{"no-compaction", no_argument, NULL, OPT_S_NO_COMPACTION},                                   \
	{"python", required_argument, NULL, OPT_S_PYTHON},                                           \
	{"python-fences", no_argument, NULL, OPT_S_PYTHON_FENCES},                                   \
	{"prompts", required_argument, NULL, OPT_S_PROMPTS},                                         \
	{"system-prompt", required_argument, NULL, OPT_S_SYSTEM_PROMPT},                             \
	{"system-extra", required_argument, NULL, OPT_S_SYSTEM_EXTRA},                               \
	{"setup-code", required_argument, NULL, OPT_S_SETUP_CODE},                                   \
	{"sub-system-extra", required_argument, NULL, OPT_S_SUB_SYSTEM_EXTRA},                       \
	{"sub-setup-code", required_argument, NULL, OPT_S_SUB_SETUP_CODE},                           \
	{"max-depth", required_argument, NULL, OPT_S_MAX_DEPTH},                                     \
	{"max-nodes", required_argument, NULL, OPT_S_MAX_NODES},                                     \
	{"refresh", no_argument, NULL, OPT_S_REFRESH}

/* Help text for the options above but --strategy and --refresh, which
 * each command words its own way. */
extern const char cli_solve_opts_help[];

/* RLM_MAX_DEPTH, RLM_MAX_NODES and RLM_MAX_CALLS into ro (the flags override them).
 * Returns 0, or 2 after printing which variable is bad. */
int cli_solve_opts_env(struct rlm_opts *ro);
/* Take option `opt` with argument `arg` into ro. Returns 1 when taken, 0
 * when opt is not a solve option, or 2 after printing an error for a bad
 * value. The files of --system-prompt, --system-extra, --setup-code,
 * --sub-system-extra and --sub-setup-code are read here (non-empty UTF-8
 * text without NUL, at most 16M), kept until cli_tools_opts_release. */
int cli_solve_opts_take(struct rlm_opts *ro, int opt, const char *arg);
/* The part of cli_solve_opts_take that reads those five files (`rlm
 * repl` takes them without the rest). Returns as it does. */
int cli_text_opts_take(struct rlm_opts *ro, int opt, const char *arg);

#endif
