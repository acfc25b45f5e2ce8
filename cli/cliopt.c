/* SPDX-License-Identifier: MIT */
/* cli/cliopt.c -- model options and their environment variables; the
 * sandbox options; the strategy and limits of a solve. */
#include "cliopt.h"
#include "../rlm/prompt.h"
#include "../common/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

const char cli_model_opts_help[] =
	"Model options:\n"
	"  --provider NAME      openai, anthropic or sim (env RLM_PROVIDER). Without it a\n"
	"                       model name decides (claude-* is anthropic, anything else\n"
	"                       openai); with no model at all the offline simulator runs\n"
	"  --model NAME         root model (env RLM_MODEL)\n"
	"  --sub-model NAME     model for sub-calls (env RLM_SUB_MODEL; default: --model)\n"
	"  --base-url URL[,URL] endpoint(s) of the provider; several spread the load\n"
	"                       (env OPENAI_BASE_URL / ANTHROPIC_BASE_URL)\n"
	"  --api-key KEY        (env OPENAI_API_KEY / ANTHROPIC_API_KEY)\n"
	"  --concurrency N      parallel model calls, pool workers (env RLM_CONCURRENCY; 64)\n"
	"  --timeout SECS       per call attempt (env RLM_TIMEOUT; 300)\n"
	"  --max-retries N      retries after a failed attempt (6): 429, 5xx, timeouts\n"
	"                       and dropped connections are retried with backoff\n"
	"  --max-inflight N     concurrent requests per endpoint (0: no limit)\n"
	"  --rpm N, --tpm N     requests / tokens per minute per endpoint (0: no limit)\n"
	"  --max-tokens N       output tokens per call (provider default; anthropic 8192)\n"
	"  --temperature T      sampling temperature (not sent unless given)\n"
	"  --extra-json JSON    object merged into every request body\n"
	"  --prices FILE        JSON price overrides, USD per 1M tokens (env RLM_PRICES):\n"
	"                       {\"my-model\": {\"input\": 0.5, \"output\": 1.5, \"cached\": 0.05,\n"
	"                       \"context_window\": 200000}}\n"
	"  --sub-context-window N  tokens of the sub-model's context window, for a model\n"
	"                       the built-in table and --prices do not know (accepts k/M\n"
	"                       suffixes); a sub-call over a known window is refused\n"
	"                       before it is sent, with an Error: naming both sizes\n"
	"  --sim SPEC           simulator timing and faults (env RLM_SIM), e.g.\n"
	"                       ttft=100ms,tps=50,429=0.05,500=0.05,seed=7\n";

void cli_model_opts_init(struct rlm_models_cfg *o)
{
	rlm_models_cfg_init(o);
	rlm_models_cfg_env(o);
}

#define TOOLS_HELP                                                                                 \
	"Host tools and skills (docs/tools.md):\n"                                                  \
	"      --mcp-config FILE   MCP servers model code may use, in the format other\n"            \
	"                          MCP clients read: {\"mcpServers\": {\"NAME\": {\"command\",\n"    \
	"                          \"args\", \"env\"} or {\"url\"}}}; again for more files.\n"         \
	"                          Servers start on first use\n"                                    \
	"      --allow-tools LIST  tools model code may call besides read-only ones:\n"            \
	"                          SERVER.TOOL, SERVER.*, * (comma-separated; again adds)\n"       \
	"      --deny-tools LIST   tools it may never call (wins over --allow-tools)\n"            \
	"      --max-tool-calls N  tool calls of the whole solve, at any depth (none)\n"           \
	"      --tool-timeout SECS one tool call (60)\n"                                            \
	"      --allow-skill-writes  let model code save skills (save_skill); off, so that\n"      \
	"                          text in a context cannot plant code for later runs\n"

static int bad(const char *opt, const char *arg, const char *want)
{
	fprintf(stderr, "rlm: error: bad value '%s' for --%s: %s\n", arg, opt, want);
	return 2;
}

int cli_model_opts_take(struct rlm_models_cfg *o, int opt, const char *arg)
{
	double d;
	long l;
	switch (opt) {
	case OPT_PROVIDER: o->provider = arg; return 1;
	case OPT_MODEL: o->model = arg; return 1;
	case OPT_SUB_MODEL: o->sub_model = arg; return 1;
	case OPT_BASE_URL: o->base_url = arg; return 1;
	case OPT_API_KEY: o->api_key = arg; return 1;
	case OPT_EXTRA_JSON: o->extra_json = arg; return 1;
	case OPT_PRICES: o->prices = arg; return 1;
	case OPT_SIM: o->provider_spec = arg; return 1;
	case OPT_SUB_CONTEXT_WINDOW: {
		uint64_t n;
		if (text_parse_count(arg, &n) || n < 1000 || n > 100000000)
			return bad("sub-context-window", arg, "want 1000..100M tokens");
		o->sub_context_window = (long)n;
		return 1;
	}
	case OPT_CONCURRENCY:
		if (text_parse_int(arg, 1, 4096, &l))
			return bad("concurrency", arg, "want 1..4096");
		o->concurrency = l;
		return 1;
	case OPT_TIMEOUT:
		if (text_parse_double(arg, 0.001, 86400, &d))
			return bad("timeout", arg, "want seconds > 0");
		o->timeout_s = d;
		return 1;
	case OPT_MAX_RETRIES:
		if (text_parse_int(arg, 0, 100, &l))
			return bad("max-retries", arg, "want 0..100");
		o->max_retries = l;
		return 1;
	case OPT_MAX_INFLIGHT:
		if (text_parse_int(arg, 0, 100000, &l))
			return bad("max-inflight", arg, "want 0..100000");
		o->max_inflight = l;
		return 1;
	case OPT_RPM:
		if (text_parse_double(arg, 0, 1e9, &d))
			return bad("rpm", arg, "want a number >= 0");
		o->rpm = d;
		return 1;
	case OPT_TPM:
		if (text_parse_double(arg, 0, 1e12, &d))
			return bad("tpm", arg, "want a number >= 0");
		o->tpm = d;
		return 1;
	case OPT_MAX_TOKENS:
		if (text_parse_int(arg, 1, 10000000, &l))
			return bad("max-tokens", arg, "want a positive integer");
		o->max_tokens = l;
		return 1;
	case OPT_TEMPERATURE:
		if (text_parse_double(arg, 0, 2, &d))
			return bad("temperature", arg, "want 0..2");
		o->temperature = d;
		return 1;
	default: return 0;
	}
}

/* ---- the sandbox options ---- */

const char cli_sandbox_opts_help[] =
	"Sandbox options (of the REPL worker; `rlm doctor` shows what this machine has).\n"
	"Layers: seccomp, identity, landlock, userns, mntns, netns, pidns, ipcns, utsns,\n"
	"rlimits; ns is every namespace, all every layer. Sizes take K, M, G, T.\n"
	"  --sandbox-disable LIST  turn layers off (env RLM_SANDBOX_DISABLE adds to it)\n"
	"  --unsafe-no-sandbox     run model code even without seccomp (or, as root,\n"
	"                          as root when identity is disabled): dangerous, loud\n"
	"  --mem-limit SIZE        worker address space, at least 64M, e.g. 4G (2G, or\n"
	"                          16 x context)\n"
	"  --scratch-limit SIZE    bytes the code may write in its scratch dir (256M)\n";

static int size_opt(const char *opt, const char *arg, uint64_t min, const char *min_s,
		    size_t *out)
{
	uint64_t v;
	if (text_parse_size(arg, &v) || v < min || v > (uint64_t)SIZE_MAX / 2) {
		fprintf(stderr,
			"rlm: error: bad value '%s' for --%s: want a size of at least %s, such as "
			"512M or 2G (K, M, G, T: powers of 1024)\n",
			arg, opt, min_s);
		return 2;
	}
	*out = (size_t)v;
	return 1;
}

int cli_sandbox_opts_take(struct repl_sandbox_cfg *c, int opt, const char *arg)
{
	struct rlm_err err = {0, ""};
	unsigned bits = 0;
	switch (opt) {
	case OPT_SANDBOX_DISABLE:
		if (repl_sandbox_parse(arg, &bits, &err)) {
			fprintf(stderr, "rlm: error: bad value '%s' for --sandbox-disable: %s\n",
				arg, err.msg);
			return 2;
		}
		c->disable |= bits;
		return 1;
	case OPT_UNSAFE_NO_SANDBOX:
		if (!c->unsafe)
			fputs("rlm: WARNING: --unsafe-no-sandbox: if seccomp cannot be applied, "
			      "the model's code runs WITHOUT it: nothing then stops it from "
			      "opening sockets, starting processes or tracing this user's "
			      "processes; as root with identity disabled, it runs as root\n",
			      stderr);
		c->unsafe = true;
		return 1;
	case OPT_MEM_LIMIT:
		/* Below about 28M Python cannot start threads; 64M leaves room. */
		return size_opt("mem-limit", arg, (uint64_t)64 << 20, "64M", &c->mem_limit);
	case OPT_SCRATCH_LIMIT:
		return size_opt("scratch-limit", arg, 64u << 10, "64K", &c->scratch_limit);
	default: return 0;
	}
}

/* ---- the strategy and limits of a solve ---- */

const char cli_solve_opts_help[] =
	"Limits (repl strategy; a limit stops the solve with its best partial answer\n"
	"and says which limit it was):\n"
	"      --max-iterations N  root model turns (30); then one last call asks for\n"
	"                          the final answer\n"
	"      --max-errors N      consecutive turns whose code failed (5)\n"
	"      --time-limit SECS   wall clock of the whole solve, enforced mid-call and\n"
	"                          mid-exec (none)\n"
	"      --max-total-tokens N  input + output tokens of all calls (none)\n"
	"      --max-cost USD      cost of all calls, from the price table (none)\n"
	"      --max-sub-calls N   sub-calls made from code, at any depth; a child RLM\n"
	"                          is one (none)\n"
	"      --max-calls N       model calls of the whole solve, at any depth: every\n"
	"                          node's root calls and every sub-call (env\n"
	"                          RLM_MAX_CALLS; none)\n"
	"      --exec-timeout SECS running time of one code block, its threads' included;\n"
	"                          time idly waiting on sub-calls not counted (60): SIGINT\n"
	"                          first, then the REPL is restarted\n"
	"      --output-limit N    characters of REPL output shown to the model (20000)\n"
	"      --max-answer SIZE   bytes of an answer kept, the root's and each child\n"
	"                          RLM's, e.g. 4M (4M): a longer one is cut where a\n"
	"                          UTF-8 character ends, and the result says so\n"
	"                          (answer_truncated, a warning)\n"
	"\n"
	"REPL strategy options:\n"
	"      --max-depth N       levels of RLMs, 1..16 (env RLM_MAX_DEPTH; 2): below the\n"
	"                          last, rlm_query runs a child RLM with a REPL of its own;\n"
	"                          at the last it is a plain sub-call; 1: recursion off\n"
	"      --max-nodes N       child RLMs running at once, in the whole solve, exactly,\n"
	"                          1..1024 (env RLM_MAX_NODES; 8); 1: one at a time (a\n"
	"                          child waiting on its own children lends them its turn)\n"
	"      --python PATH       the interpreter of the REPL worker (/usr/bin/python3)\n"
	"      --python-fences     also run ```python blocks, not only ```repl\n"
	"      --prompts DIR       take prompt templates from DIR (files named like the\n"
	"                          built-in ones: repl_system.txt, repl_first.txt, ...)\n"
	"      --system-prompt FILE  the system prompt of every REPL node, in place of\n"
	"                          the built-in one, used verbatim (what rlm adds for its\n"
	"                          own features, such as host tools or --schema, still\n"
	"                          follows it)\n"
	"      --system-extra FILE text appended to the root node's system prompt (say,\n"
	"                          what --setup-code defines for the model)\n"
	"      --setup-code FILE   Python the root node's worker runs before the first\n"
	"                          root call (and in a worker restarted after a crash):\n"
	"                          its functions and variables are there for model code;\n"
	"                          an exception fails the solve before any model call\n"
	"      --sub-system-extra FILE, --sub-setup-code FILE  the same for every child RLM\n"
	"      --compaction-threshold F  when a node's conversation passes this fraction\n"
	"                          of the root model's context window, its older turns\n"
	"                          become one summary (one root-model call; the REPL's\n"
	"                          variables keep everything), in (0, 1] (0.85)\n"
	"      --no-compaction     never compact: a conversation over the window fails\n"
	"                          as the provider refuses it\n"
	"\n"
	"Tree strategy options:\n"
	"      --leaf-chars N      bytes of context per part (default: half the sub-model's\n"
	"                          window, at most 200k); accepts k/M suffixes\n"
	"\n" TOOLS_HELP;

int cli_solve_opts_env(struct rlm_opts *ro)
{
	const char *v;
	long num;
	if ((v = getenv("RLM_MAX_DEPTH")) && *v) {
		if (text_parse_int(v, 1, 16, &num)) {
			fprintf(stderr, "rlm: error: bad value '%s' for RLM_MAX_DEPTH: want 1..16\n", v);
			return 2;
		}
		ro->max_depth = (int)num;
	}
	if ((v = getenv("RLM_MAX_NODES")) && *v) {
		if (text_parse_int(v, 1, 1024, &num)) {
			fprintf(stderr, "rlm: error: bad value '%s' for RLM_MAX_NODES: want 1..1024\n",
				v);
			return 2;
		}
		ro->max_nodes = (int)num;
	}
	if ((v = getenv("RLM_MAX_FRAME")) && *v) {
		/* For tests and diagnosis: the 64 MiB shape at a small scale. */
		uint64_t bytes;
		if (text_parse_count(v, &bytes) || bytes < 4096 || bytes > ((uint64_t)1 << 30)) {
			fprintf(stderr, "rlm: error: bad value '%s' for RLM_MAX_FRAME: %s\n", v,
				"want 4096..1G bytes");
			return 2;
		}
		ro->max_frame = (size_t)bytes;
	}
	if ((v = getenv("RLM_MAX_CALLS")) && *v) {
		uint64_t count;
		if (text_parse_count(v, &count) || count < 1 || count > INT64_MAX) {
			fprintf(stderr, "rlm: error: bad value '%s' for RLM_MAX_CALLS: %s\n", v,
				"want a count > 0");
			return 2;
		}
		ro->max_calls = (int64_t)count;
	}
	return 0;
}

/* A count > 0 with k/M suffixes, at most max. */
static int count_opt(const char *opt, const char *arg, uint64_t min, uint64_t max,
		     const char *want, uint64_t *out)
{
	if (text_parse_count(arg, out) || *out < min || *out > max)
		return bad(opt, arg, want);
	return 1;
}

/* ---- host tools and skills ---- */

const char cli_tools_opts_help[] = TOOLS_HELP;

/* The policy of the process's one command, and the lists it came from. */
static struct tool_policy cli_policy;
static char *cli_allow, *cli_deny;

static int policy_add(struct rlm_opts *ro, char **list, const char *arg, const char *opt)
{
	struct rlm_err err = {0, ""};
	struct tool_policy p;
	char *joined = *list ? xasprintf("%s,%s", *list, arg) : xstrdup(arg);
	if (tool_policy_parse(&p, list == &cli_allow ? joined : cli_allow,
			      list == &cli_deny ? joined : cli_deny, &err)) {
		fprintf(stderr, "rlm: error: bad value '%s' for --%s: %s\n", arg, opt, err.msg);
		free(joined);
		return 2;
	}
	free(*list);
	*list = joined;
	tool_policy_release(&cli_policy);
	cli_policy = p;
	ro->tool_policy = &cli_policy;
	return 1;
}

int cli_tools_opts_take(struct rlm_opts *ro, int opt, const char *arg)
{
	struct rlm_err err = {0, ""};
	uint64_t count;
	double secs;
	switch (opt) {
	case OPT_T_MCP_CONFIG:
		if (!ro->tools)
			ro->tools = rlm_tools_new();
		if (rlm_tools_load_config(ro->tools, arg, &err)) {
			fprintf(stderr, "rlm: error: --mcp-config: %s\n", err.msg);
			return 2;
		}
		return 1;
	case OPT_T_ALLOW_TOOLS: return policy_add(ro, &cli_allow, arg, "allow-tools");
	case OPT_T_DENY_TOOLS: return policy_add(ro, &cli_deny, arg, "deny-tools");
	case OPT_T_MAX_TOOL_CALLS:
		if (text_parse_count(arg, &count) || count < 1 || count > INT64_MAX)
			return bad("max-tool-calls", arg, "want a count > 0");
		ro->max_tool_calls = (int64_t)count;
		return 1;
	case OPT_T_TOOL_TIMEOUT:
		if (text_parse_double(arg, 0.001, 1e6, &secs))
			return bad("tool-timeout", arg, "want seconds > 0");
		ro->tool_timeout_ns = (int64_t)(secs * 1e9);
		return 1;
	case OPT_T_ALLOW_SKILL_WRITES: ro->allow_skill_writes = true; return 1;
	default: return 0;
	}
}

/* The texts of --system-prompt and the like, read by cli_solve_opts_take,
 * in the order of their options (OPT_S_SYSTEM_PROMPT on). */
static char *cli_texts[OPT_S_SUB_SETUP_CODE - OPT_S_SYSTEM_PROMPT + 1];

void cli_tools_opts_release(struct rlm_opts *ro)
{
	for (size_t i = 0; i < ARRAY_SIZE(cli_texts); i++) {
		free(cli_texts[i]);
		cli_texts[i] = NULL;
	}
	rlm_tools_free(ro->tools);
	ro->tools = NULL;
	if (ro->tool_policy == &cli_policy) {
		tool_policy_release(&cli_policy);
		memset(&cli_policy, 0, sizeof(cli_policy));
		ro->tool_policy = NULL;
	}
	free(cli_allow);
	free(cli_deny);
	cli_allow = cli_deny = NULL;
}

/* Read the text file of option opt (--system-prompt, ...) into the
 * field of ro it sets. Returns 1, or 2 after saying what is wrong. */
static int text_opt(struct rlm_opts *ro, int opt, const char *arg)
{
	static const char *const names[] = {"system-prompt", "system-extra", "setup-code",
					    "sub-system-extra", "sub-setup-code"};
	const char **fields[] = {&ro->system_prompt, &ro->system_extra, &ro->setup_code,
				 &ro->sub_system_extra, &ro->sub_setup_code};
	size_t i = (size_t)(opt - OPT_S_SYSTEM_PROMPT), len = 0, bad_at;
	struct rlm_err err = {0, ""};
	char *s = NULL;
	if (file_read(arg, 16u << 20, &s, &len, &err))
		return log_fail(2, "--%s: %s", names[i], err.msg);
	if (!len || strspn(s, " \t\r\n") == len) {
		free(s);
		return log_fail(2, "--%s: '%s' is empty", names[i], arg);
	}
	if (memchr(s, 0, len)) {
		free(s);
		return log_fail(2, "--%s: '%s' holds a NUL byte: want text", names[i], arg);
	}
	if (!text_utf8_valid(s, len, &bad_at)) {
		free(s);
		return log_fail(2, "--%s: '%s' is not valid UTF-8 (byte %zu)", names[i], arg,
				bad_at);
	}
	free(cli_texts[i]);
	cli_texts[i] = s;
	*fields[i] = s;
	return 1;
}

int cli_solve_opts_take(struct rlm_opts *ro, int opt, const char *arg)
{
	struct rlm_err err = {0, ""};
	uint64_t count;
	double secs;
	long num;
	int rc;
	if ((rc = cli_tools_opts_take(ro, opt, arg)))
		return rc;
	switch (opt) {
	case 's':
		if (strcmp(arg, "repl") == 0)
			ro->strategy = RLM_REPL;
		else if (strcmp(arg, "tree") == 0)
			ro->strategy = RLM_TREE;
		else {
			fprintf(stderr, "rlm: error: unknown strategy '%s' (known: repl, tree)\n",
				arg);
			return 2;
		}
		return 1;
	case OPT_S_LEAF_CHARS:
		if ((rc = count_opt("leaf-chars", arg, 256, 1u << 30, "want 256..1G", &count)) == 1)
			ro->leaf_chars = (size_t)count;
		return rc;
	case OPT_S_MAX_ITERATIONS:
		if (text_parse_int(arg, 1, 10000, &num))
			return bad("max-iterations", arg, "want 1..10000");
		ro->max_iterations = (int)num;
		return 1;
	case OPT_S_MAX_ERRORS:
		if (text_parse_int(arg, 1, 10000, &num))
			return bad("max-errors", arg, "want 1..10000");
		ro->max_errors = (int)num;
		return 1;
	case OPT_S_TIME_LIMIT:
		if (text_parse_double(arg, 0.001, 1e7, &secs))
			return bad("time-limit", arg, "want seconds > 0");
		ro->timeout_ns = (int64_t)(secs * 1e9);
		return 1;
	case OPT_S_MAX_TOTAL_TOKENS:
		if ((rc = count_opt("max-total-tokens", arg, 1, INT64_MAX,
				    "want a count > 0 (k/M suffixes)", &count)) == 1)
			ro->max_tokens = (int64_t)count;
		return rc;
	case OPT_S_MAX_COST:
		if (text_parse_double(arg, 1e-9, 1e9, &ro->max_cost))
			return bad("max-cost", arg, "want USD > 0");
		return 1;
	case OPT_S_MAX_SUB_CALLS:
		if ((rc = count_opt("max-sub-calls", arg, 1, INT64_MAX, "want a count > 0",
				    &count)) == 1)
			ro->max_sub_calls = (int64_t)count;
		return rc;
	case OPT_S_MAX_CALLS:
		if ((rc = count_opt("max-calls", arg, 1, INT64_MAX, "want a count > 0", &count)) ==
		    1)
			ro->max_calls = (int64_t)count;
		return rc;
	case OPT_S_EXEC_TIMEOUT:
		if (text_parse_double(arg, 0.001, 1e7, &secs))
			return bad("exec-timeout", arg, "want seconds > 0");
		ro->exec_timeout_ns = (int64_t)(secs * 1e9);
		return 1;
	case OPT_S_OUTPUT_LIMIT:
		if ((rc = count_opt("output-limit", arg, 100, 1u << 26, "want 100..64M characters",
				    &count)) == 1)
			ro->output_limit = (size_t)count;
		return rc;
	case OPT_S_MAX_ANSWER:
		if (text_parse_size(arg, &count) || count < 1024 || count > ((uint64_t)1 << 30))
			return bad("max-answer", arg, "want a size 1K..1G, such as 4M");
		ro->max_answer = (size_t)count;
		return 1;
	case OPT_S_PYTHON:
		if (access(arg, X_OK)) {
			fprintf(stderr, "rlm: error: --python '%s' is not an executable file\n", arg);
			return 2;
		}
		ro->python = arg;
		return 1;
	case OPT_S_COMPACTION_THRESHOLD:
		if (text_parse_double(arg, 0, 1, &secs) || !(secs > 0))
			return bad("compaction-threshold", arg,
				   "want a fraction of the context window in (0, 1], such as 0.85");
		ro->compaction_threshold = secs;
		return 1;
	case OPT_S_NO_COMPACTION: ro->no_compaction = true; return 1;
	case OPT_S_PYTHON_FENCES: ro->python_fences = true; return 1;
	case OPT_S_PROMPTS:
		if (rlm_prompt_set_dir(arg, &err)) {
			fprintf(stderr, "rlm: error: %s\n", err.msg);
			return 2;
		}
		return 1;
	case OPT_S_MAX_DEPTH:
		if (text_parse_int(arg, 1, 16, &num))
			return bad("max-depth", arg, "want 1..16");
		ro->max_depth = (int)num;
		return 1;
	case OPT_S_MAX_NODES:
		if (text_parse_int(arg, 1, 1024, &num))
			return bad("max-nodes", arg, "want 1..1024");
		ro->max_nodes = (int)num;
		return 1;
	case OPT_S_REFRESH: ro->refresh = true; return 1;
	default: return cli_text_opts_take(ro, opt, arg);
	}
}

int cli_text_opts_take(struct rlm_opts *ro, int opt, const char *arg)
{
	if (opt < OPT_S_SYSTEM_PROMPT || opt > OPT_S_SUB_SETUP_CODE)
		return 0;
	return text_opt(ro, opt, arg);
}

/* ---- how a context is read ---- */

const char cli_context_opts_help[] =
	"      --format KIND       how to read --context: auto (default: by its name),\n"
	"                          text, dir, jsonl, json (a .json file: its value), csv\n"
	"                          (.csv/.tsv with a header row: a list of dicts)\n"
	"      --encoding NAME     what context files that are not UTF-8 are in: latin-1,\n"
	"                          cp1252, any `iconv --list` name (default utf-8: invalid\n"
	"                          bytes become U+FFFD, with a warning). A byte-order mark\n"
	"                          always wins (UTF-8, UTF-16, UTF-32); a *.gz file is\n"
	"                          read decompressed\n"
	"      --strict-utf8       invalid UTF-8 in the context is an error (a directory's\n"
	"                          file is skipped), not replaced with U+FFFD\n";

int cli_context_opts_take(struct corpus_opts *co, int opt, const char *arg)
{
	struct rlm_err err = {0, ""};
	switch (opt) {
	case OPT_C_FORMAT:
		if (corpus_kind_parse(arg, &co->kind))
			return log_fail(2,
					"unknown --format '%s' (known: auto, text, dir, jsonl, json, csv)",
					arg);
		return 1;
	case OPT_C_ENCODING:
		if (corpus_encoding_check(arg, &err))
			return log_fail(2, "--encoding: %s", err.msg);
		co->encoding = arg;
		return 1;
	case OPT_C_STRICT_UTF8:
		co->strict_utf8 = true;
		return 1;
	default:
		return 0;
	}
}
