/* SPDX-License-Identifier: MIT */
/* cli/cli_bench_gen.c -- `rlm bench gen`: its options, each item's seed, the
 * S-NIAH items, and the dataset's JSONL of items (the other suites' items
 * are gen_suites.c's). */
#include "../bench/bench.h"

#include "../common/json.h"
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char gen_usage[] =
    "usage: rlm bench gen SUITE --out DIR [options]\n"
    "\n"
    "Generate a seeded benchmark dataset: a JSONL file of items (question, gold\n"
    "answer, scorer) and each item's context next to it. SUITE is one of:\n"
    "\n"
    "  sniah         RULER-style needles in a haystack. Each item's context is a\n"
    "                text file with one line \"One of the special magic numbers for\n"
    "                KEY is: VALUE.\" hidden in it, and the question asks for the\n"
    "                value of KEY. With --values K (RULER's multi-value NIAH) KEY\n"
    "                has K such lines with K distinct values, and the question asks\n"
    "                \"What are all the special magic numbers for KEY mentioned in\n"
    "                the provided text?\"; the answer is all K of them. Scorer\n"
    "                contains_all (RULER's string_match_all).\n"
    "  oolong        OOLONG trec_coarse, synthesized: a window of lines \"Date: Dec\n"
    "                12, 2022 || User: 63685 || Instance: QUESTION\" between an\n"
    "                instruction header and a closing reminder; each QUESTION is of\n"
    "                one of the 6 TREC coarse classes ('numeric value', 'entity',\n"
    "                'location', 'description and abstract concept', 'abbreviation',\n"
    "                'human being'), never stated but clear from its wording; users\n"
    "                Zipf-distributed over 5-digit IDs, dates uniform over 2022-2024.\n"
    "                One question per item, OOLONG's wording and answer format:\n"
    "                counting (most_freq, least_freq \"Label: X\"; relative_freq\n"
    "                \"Answer: A is more common than B\"; numeric_one_class \"Answer:\n"
    "                number\"), user (most_user, user_label \"User: X\"), timeline\n"
    "                (most_date \"Date: MM/DD/YYYY\", date_n_times). Scorer oolong\n"
    "                (0.75^|error| for counts).\n"
    "  oolong-pairs  OOLONG-Pairs: the same windows (byte for byte, for the same\n"
    "                seed, size, index and --users); the question asks for every\n"
    "                pair of user IDs meeting a symmetric predicate (\"both users\n"
    "                have at least one instance with A or B\", maybe with a date\n"
    "                condition) or an asymmetric one (\"one user has at least two\n"
    "                instances with X, and the other exactly one with Y\"); the\n"
    "                answer is the sorted \"a,b\" pairs, a < b. Scorer set_f1.\n"
    "                Up to ~1M tokens, as in the paper: past that every user has\n"
    "                every label, and the gold is every pair or none.\n"
    "  browse        BrowseComp-Plus-style retrieval: a corpus of documents and a\n"
    "                two-hop question: fact A in one document names a person B,\n"
    "                fact B in another (about B) holds the answer; near-duplicates\n"
    "                of both lead to a wrong answer. Scorer exact, against the\n"
    "                answer and its aliases.\n"
    "  which-doc     which document: a corpus of documents with ids of their own\n"
    "                (a JSONL's \"id\" field, or paths under topic folders); one\n"
    "                holds a fact (a reference code and a phrase), two others\n"
    "                near misses; the question asks which document holds it,\n"
    "                naming the phrase in quotes, the code, or the phrase in a\n"
    "                sentence. The answer is the document's id. Scorer exact.\n"
    "\n"
    "options:\n"
    "  --out DIR           where to write (created if missing); required\n"
    "  --sizes LIST        comma-separated sizes in tokens (1 token = 4 bytes),\n"
    "                      with k/M/G for thousands/millions/billions, each >= 1k\n"
    "                      (default 8k,32k,128k,1M; 10M works for every suite)\n"
    "  --n N               items per size (default 1)\n"
    "  --seed S            base seed (default 1); each item's seed is derived\n"
    "                      from (S, size, index), so items are reproducible alone\n"
    "  --format KIND       sniah: text (default): one file; dir: a directory of\n"
    "                      files doc-00000.txt ...; jsonl: a JSONL file of\n"
    "                      documents {\"id\":\"doc-00000\",\"text\":...}; documents are\n"
    "                      runs of whole lines of about equal size.\n"
    "                      browse, which-doc: jsonl (default) or dir. oolong and\n"
    "                      oolong-pairs:\n"
    "                      text only (a window is one file)\n"
    "  --docs N            documents per item: sniah with dir or jsonl, at most\n"
    "                      (default: one per 2,000 tokens, and at least --values);\n"
    "                      browse, at least 5, each of at least 1,000 bytes;\n"
    "                      which-doc, at least 5, each of at least 500 bytes\n"
    "                      (default: one per 1,000 tokens, from 10 to 1,000)\n"
    "\n"
    "sniah options:\n"
    "  --haystack KIND     essay (default): pseudo-essay paragraphs, one per line;\n"
    "                      noise: RULER's \"The grass is green. ...\" repeated;\n"
    "                      words: lines of random words\n"
    "  --value TYPE        number (default, 7 digits), word, or uuid\n"
    "  --distractors N     extra needles with other keys and values (default 0,\n"
    "                      at most 1000; for word values, at most 105 together\n"
    "                      with --values)\n"
    "  --values K          values of the key, 1..8 (default 1): K needles at K\n"
    "                      distinct depths drawn from RULER's 40 (with --format\n"
    "                      dir or jsonl, in K distinct documents), each value on\n"
    "                      its own line only; the question asks for all of them\n"
    "  --depth F           needle position in [0,1] (default: one of RULER's 40\n"
    "                      depths, drawn per item); not with --values\n"
    "  --utf8              haystack words in multi-byte UTF-8 too (accents, Greek,\n"
    "                      Cyrillic, CJK, emoji: 2-, 3- and 4-byte sequences)\n"
    "\n"
    "oolong and oolong-pairs options:\n"
    "  --users N           the pool of user IDs, 2..1000 (default: one per ~8\n"
    "                      instances, from 8 to 100; pair answers grow as N^2/2)\n"
    "  --task KIND         what to ask, drawn per item among: oolong: a task named\n"
    "                      above, a family (counting, user, timeline) or any\n"
    "                      (default); oolong-pairs: symmetric, asymmetric or any\n"
    "                      (default)\n"
    "  -h, --help          this text\n"
    "\n"
    "output:\n"
    "  DIR/SUITE-SIZE-I.txt   the context of item I at SIZE (as written in --sizes);\n"
    "                         DIR/SUITE-SIZE-I/ (dir) or DIR/SUITE-SIZE-I.jsonl\n"
    "                         (jsonl) for documents\n"
    "  DIR/SUITE.jsonl        one item per line (sniah.jsonl, oolong.jsonl, ...;\n"
    "                         rewritten on each run):\n"
    "    {\"id\":\"sniah-1M-0\",\"suite\":\"sniah\",\"question\":...,\"answer\":[VALUE],\n"
    "     \"context_path\":\"sniah-1M-0.txt\",\"scorer\":\"contains_all\",\"tokens\":...,\n"
    "     \"bytes\":...,\"needle_depth\":...,\"key\":...,\"haystack\":...,\"value_type\":...}\n"
    "  With --format dir or jsonl an item also has \"format\", \"documents\" and\n"
    "  \"needle_doc\" (the index of the document with the needle), and with --utf8\n"
    "  \"utf8\": true. With --values K > 1, \"answer\" holds the K values in the\n"
    "  order of the text, needle_depth, needle_offset and needle_doc are those of\n"
    "  the first, and the item also has \"values\": K, \"needle_offsets\",\n"
    "  \"needle_depths\" (and \"needle_docs\") of all K. The scorer contains_all is\n"
    "  RULER's string_match_all: the share of the answer's values that occur in\n"
    "  the prediction, ignoring case.\n"
    "  oolong items have \"task\", \"task_group\", \"task_type\", \"answer_type\",\n"
    "  \"instances\", \"users\" and \"label_counts\" (a count answer is a JSON number);\n"
    "  oolong-pairs items \"task\", \"pairs\" and \"qualifying_users\"; browse items\n"
    "  \"chain\", \"subject\", \"bridge_entity\", \"bridge_doc\" and \"answer_doc\"\n"
    "  (document indexes), \"fact_a\", \"fact_b\" and their byte offsets in their\n"
    "  documents, \"near_duplicate_docs\" and \"trap_doc\"; which-doc items\n"
    "  \"format\", \"documents\", \"ask\" (quoted, code or plain), \"answer_doc\"\n"
    "  (its index), \"fact\", \"phrase\", \"code\" and \"near_miss_docs\". context_path is\n"
    "  relative to the JSONL's directory. The JSONL path is printed on stdout,\n"
    "  one line per item on stderr.\n"
    "\n"
    "examples:\n"
    "  rlm bench gen sniah --sizes 8k,1M,10M --n 5 --out data/sniah\n"
    "  rlm bench gen sniah --sizes 10M --values 4 --format dir --out data/mv\n"
    "  rlm bench gen oolong --sizes 32k,128k --n 50 --task counting --out data/oolong\n"
    "  rlm bench gen oolong-pairs --sizes 32k --n 20 --out data/pairs\n"
    "  rlm bench gen browse --sizes 10M --docs 1000 --out data/browse\n"
    "  rlm bench gen which-doc --sizes 32k,1M --n 20 --format dir --out data/which\n";

enum {
	OPT_SIZES = 1,
	OPT_N,
	OPT_SEED,
	OPT_OUT,
	OPT_HAY,
	OPT_VALUE,
	OPT_DISTR,
	OPT_DEPTH,
	OPT_FORMAT,
	OPT_DOCS,
	OPT_UTF8,
	OPT_VALUES,
	OPT_USERS,
	OPT_TASK
};

#define GIVEN(opt) (1u << (opt)) /* gen_args.given: the option was given */

static const char *const suite_names[] = {"sniah", "oolong", "oolong-pairs", "browse",
					  "which-doc"};

struct gen_args {
	char **size_names; /* as given; owned array, borrowed strings */
	uint64_t *sizes;
	size_t n_sizes;
	long n;
	uint64_t seed;
	const char *out;
	struct sniah_opts so;
	enum sniah_format format;
	long docs; /* 0: by size */
	enum gen_suite suite;
	int users;	  /* oolong, oolong-pairs: 0 by size */
	const char *task; /* oolong, oolong-pairs: --task */
	unsigned tasks;	  /* its mask (bench_gen_task_parse) */
	unsigned given;	  /* GIVEN(OPT_...) of each option given */
};

static int parse_sizes(struct gen_args *a, char *list)
{
	char *save = NULL;
	free(a->size_names);
	free(a->sizes);
	a->size_names = NULL;
	a->sizes = NULL;
	a->n_sizes = 0;
	for (char *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (strspn(s, "0123456789.kKmMgG") != strlen(s) || text_parse_count(s, &v) || v < 1000 ||
		    v > 1000000000)
			return log_fail(2,
					"bad size '%s' in --sizes: want a token count from 1k "
					"to 1G, like 8k, 32k or 1M",
					s);
		for (size_t i = 0; i < a->n_sizes; i++)
			if (strcmp(a->size_names[i], s) == 0)
				return log_fail(2, "size '%s' is given twice in --sizes", s);
		a->size_names = xrealloc(a->size_names, (a->n_sizes + 1) * sizeof(char *));
		a->sizes = xrealloc(a->sizes, (a->n_sizes + 1) * sizeof(uint64_t));
		a->size_names[a->n_sizes] = s;
		a->sizes[a->n_sizes++] = v;
	}
	if (a->n_sizes == 0)
		return log_fail(2, "--sizes is empty: want a list like 8k,32k,1M");
	return 0;
}

static int parse_seed(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	if (!*s || strspn(s, "0123456789") != strlen(s))
		return RLM_EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return RLM_EINVAL;
	*out = v;
	return 0;
}

/* The options that oolong, oolong-pairs and browse take, and their
 * defaults. Returns 0 or the exit status of the message printed. */
static int check_suite_args(struct gen_args *a)
{
	const char *suite = suite_names[a->suite];
	bool oolong = a->suite == GEN_OOLONG || a->suite == GEN_PAIRS;
	static const struct {
		int opt;
		const char *name;
	} only[] = {
	    /* the options of sniah alone */
	    {OPT_HAY, "--haystack"}, {OPT_VALUE, "--value"}, {OPT_DISTR, "--distractors"},
	    {OPT_DEPTH, "--depth"},  {OPT_UTF8, "--utf8"},   {OPT_VALUES, "--values"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(only); i++)
		if (a->given & GIVEN(only[i].opt))
			return log_fail(2, "%s is for sniah only, not %s", only[i].name, suite);
	if (!oolong && (a->given & (GIVEN(OPT_USERS) | GIVEN(OPT_TASK))))
		return log_fail(2, "%s is for oolong and oolong-pairs, not %s",
				a->given & GIVEN(OPT_USERS) ? "--users" : "--task", suite);
	if (oolong) {
		if (a->format != SNIAH_TEXT)
			return log_fail(2, "--format %s does not fit %s: a window is one text file",
					a->format == SNIAH_DIR ? "dir" : "jsonl", suite);
		if (a->docs)
			return log_fail(2, "--docs is for sniah, browse and which-doc, not %s",
					suite);
		if (bench_gen_task_parse(a->suite, a->task ? a->task : "any", &a->tasks))
			return log_fail(
			    2, "unknown --task '%s' for %s (known: %s)", a->task, suite,
			    a->suite == GEN_PAIRS
				? "symmetric, asymmetric, any"
				: "most_freq, least_freq, relative_freq, "
				  "numeric_one_class, most_user, user_label, most_date, "
				  "date_n_times, counting, user, timeline, any");
		return 0;
	}
	if (!(a->given & GIVEN(OPT_FORMAT)))
		a->format = SNIAH_JSONL;
	else if (a->format == SNIAH_TEXT)
		return log_fail(2, "--format text does not fit %s: its documents go in a "
				   "directory (dir) or a JSONL file (jsonl)", suite);
	if (a->docs && a->docs < BROWSE_MIN_DOCS)
		return log_fail(2, "bad value '%ld' for --docs: %s needs at least %d documents",
				a->docs, suite, BROWSE_MIN_DOCS);
	return 0;
}

static const struct option longopts[] = {
    {"sizes", required_argument, NULL, OPT_SIZES},
    {"n", required_argument, NULL, OPT_N},
    {"seed", required_argument, NULL, OPT_SEED},
    {"out", required_argument, NULL, OPT_OUT},
    {"haystack", required_argument, NULL, OPT_HAY},
    {"value", required_argument, NULL, OPT_VALUE},
    {"distractors", required_argument, NULL, OPT_DISTR},
    {"depth", required_argument, NULL, OPT_DEPTH},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"docs", required_argument, NULL, OPT_DOCS},
    {"utf8", no_argument, NULL, OPT_UTF8},
    {"values", required_argument, NULL, OPT_VALUES},
    {"users", required_argument, NULL, OPT_USERS},
    {"task", required_argument, NULL, OPT_TASK},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static const struct cli_num gen_nums[] = {
    {OPT_N, "n", CLI_LONG, 1, 1000000, NULL, offsetof(struct gen_args, n)},
    {OPT_DISTR, "distractors", CLI_INT, 0, SNIAH_MAX_DISTRACTORS, NULL,
     offsetof(struct gen_args, so.distractors)},
    {OPT_DEPTH, "depth", CLI_DOUBLE, 0, 1, "want a number in [0,1]",
     offsetof(struct gen_args, so.depth)},
    {OPT_DOCS, "docs", CLI_LONG, 1, SNIAH_MAX_DOCS, NULL, offsetof(struct gen_args, docs)},
    {OPT_VALUES, "values", CLI_INT, 1, SNIAH_MAX_VALUES, NULL,
     offsetof(struct gen_args, so.values)},
    {OPT_USERS, "users", CLI_INT, 2, OOLONG_MAX_USERS, NULL, offsetof(struct gen_args, users)},
};

/* The options whose value is one of a few names: each name's enum value,
 * and the field of gen_args the option sets. The names, in this order,
 * are also what the messages list and what the items' JSON says. */
struct named {
	const char *name;
	int val;
};

static const struct named haystacks[] = {
    {"essay", SNIAH_ESSAY}, {"noise", SNIAH_NOISE}, {"words", SNIAH_WORDS}, {NULL, 0}};
static const struct named value_types[] = {
    {"number", SNIAH_NUMBER}, {"word", SNIAH_WORD}, {"uuid", SNIAH_UUID}, {NULL, 0}};
static const struct named formats[] = {
    {"text", SNIAH_TEXT}, {"dir", SNIAH_DIR}, {"jsonl", SNIAH_JSONL}, {NULL, 0}};

static const struct {
	int opt;
	const char *name;	   /* the option's long name */
	const struct named *names; /* NULL-terminated */
	size_t off;		   /* offsetof its field (an enum) in gen_args */
} name_opts[] = {
    {OPT_HAY, "haystack", haystacks, offsetof(struct gen_args, so.haystack)},
    {OPT_VALUE, "value", value_types, offsetof(struct gen_args, so.value)},
    {OPT_FORMAT, "format", formats, offsetof(struct gen_args, format)},
};

_Static_assert(sizeof(enum sniah_haystack) == sizeof(int) &&
		   sizeof(enum sniah_value) == sizeof(int) &&
		   sizeof(enum sniah_format) == sizeof(int),
	       "name_opts sets its fields as ints");

/* The name of val in names, or the first name when it has none. */
static const char *name_of(const struct named *names, int val)
{
	for (const struct named *n = names; n->name; n++)
		if (n->val == val)
			return n->name;
	return names[0].name;
}

/* When opt is one of name_opts, set its field to arg's value. Returns 0
 * (not one of them), 1 (taken) or 2 after saying which names are known. */
static int take_name(struct gen_args *a, int opt, const char *arg)
{
	for (size_t i = 0; i < ARRAY_SIZE(name_opts); i++) {
		const struct named *names = name_opts[i].names;
		struct buf known = BUF_INIT;
		if (name_opts[i].opt != opt)
			continue;
		for (const struct named *n = names; n->name; n++)
			if (strcmp(arg, n->name) == 0) {
				*(int *)(void *)((char *)a + name_opts[i].off) = n->val;
				return 1;
			}
		for (const struct named *n = names; n->name; n++)
			buf_printf(&known, "%s%s", n == names ? "" : ", ", n->name);
		log_fail(2, "unknown --%s '%s' (known: %s)", name_opts[i].name, arg, known.p);
		buf_release(&known);
		return 2;
	}
	return 0;
}

/* Take option opt, neither numeric nor named, into a (--sizes into
 * *sizes). Returns 0, 1 (--help printed) or 2 (said why). */
static int take_opt(struct gen_args *a, int opt, char **argv, const char **sizes)
{
	switch (opt) {
	case OPT_SIZES:
		*sizes = optarg;
		return 0;
	case OPT_SEED:
		if (parse_seed(optarg, &a->seed))
			return log_fail(2,
					"bad value '%s' for --seed: want an integer "
					"0..18446744073709551615",
					optarg);
		return 0;
	case OPT_OUT:
		a->out = optarg;
		return 0;
	case OPT_UTF8:
		a->so.utf8 = true;
		return 0;
	case OPT_TASK:
		a->task = optarg;
		return 0;
	case 'h':
		fputs(gen_usage, stdout);
		return 1;
	case ':':
		return log_fail(2, "option '%s' needs a value", argv[optind - 1]);
	default:
		return log_fail(2, "unknown option '%s' (see rlm bench gen --help)",
				argv[optind - 1]);
	}
}

/* The options that go together for sniah, or not. Returns 0 or the exit
 * status of the message printed. */
static int check_sniah_args(const struct gen_args *a)
{
	if (a->given & (GIVEN(OPT_USERS) | GIVEN(OPT_TASK)))
		return log_fail(2, "%s is for oolong and oolong-pairs, not sniah",
				a->given & GIVEN(OPT_USERS) ? "--users" : "--task");
	if (a->docs && a->format == SNIAH_TEXT)
		return log_fail(2, "--docs needs --format dir or jsonl");
	if (a->so.values > 1 && a->so.depth >= 0)
		return log_fail(2, "--depth places one needle: it cannot go with --values %d",
				a->so.values);
	if (a->docs && a->docs < a->so.values)
		return log_fail(2,
				"--docs %ld is fewer than --values %d: each value goes in a "
				"document of its own",
				a->docs, a->so.values);
	if (a->so.value == SNIAH_WORD &&
	    (size_t)(a->so.values + a->so.distractors) > SNIAH_WORD_VALUES)
		return log_fail(2, "too many distractors for word values: at most %zu",
				SNIAH_WORD_VALUES - (size_t)a->so.values);
	return 0;
}

/* Parse argv into a: the options in order (the first bad one is the
 * error), the suite, then what the suite allows; --sizes last, from a copy
 * in *sizes_copy (the caller's to free) that a->size_names points into.
 * Returns 0, 1 (--help printed) or 2 (said why). */
static int parse_gen_args(struct gen_args *a, int argc, char **argv, char **sizes_copy)
{
	const char *sizes = "8k,32k,128k,1M";
	int opt, rc;
	optind = 0; /* full reset: this may run more than once per process */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (opt > 0 && opt <= OPT_TASK)
			a->given |= GIVEN(opt);
		if ((rc = cli_num_take(gen_nums, ARRAY_SIZE(gen_nums), a, opt, optarg)) ||
		    (rc = take_name(a, opt, optarg))) {
			if (rc == 2)
				return 2;
			continue;
		}
		if ((rc = take_opt(a, opt, argv, &sizes)))
			return rc;
	}
	if (optind >= argc)
		return log_fail(2, "no suite: say which, e.g. rlm bench gen sniah --out DIR");
	for (a->suite = GEN_SNIAH; a->suite <= GEN_WHICH; a->suite++)
		if (strcmp(argv[optind], suite_names[a->suite]) == 0)
			break;
	if (a->suite > GEN_WHICH)
		return log_fail(2,
				"unknown suite '%s' (known: sniah, oolong, oolong-pairs, browse, "
				"which-doc)",
				argv[optind]);
	if (optind + 1 < argc)
		return log_fail(2, "unexpected argument '%s' (see rlm bench gen --help)",
				argv[optind + 1]);
	if (!a->out || !*a->out)
		return log_fail(2, "no output directory: pass --out DIR");
	if ((rc = a->suite == GEN_SNIAH ? check_sniah_args(a) : check_suite_args(a)))
		return rc;
	*sizes_copy = xstrdup(sizes);
	return parse_sizes(a, *sizes_copy);
}

static uint64_t item_seed(uint64_t seed, uint64_t tokens, uint64_t i)
{
	uint64_t st = seed;
	st = rng_splitmix64(&st) ^ tokens;
	st = rng_splitmix64(&st) ^ i;
	return rng_splitmix64(&st);
}

static const char *hay_name(enum sniah_haystack h)
{
	return name_of(haystacks, (int)h);
}

static const char *format_name(enum sniah_format f)
{
	return name_of(formats, (int)f);
}

static char *item_json(const struct gen_args *a, const char *id, const char *ctx, uint64_t tokens,
		       const struct sniah_item *it, size_t n_docs, size_t needle_doc)
{
	cJSON *j = cJSON_CreateObject(), *ans = cJSON_CreateArray();
	char *s;
	json_add_str(j, "id", id);
	json_add_str(j, "suite", "sniah");
	json_add_str(j, "question", it->question);
	for (int v = 0; v < it->n_values; v++)
		json_add_str(ans, NULL, it->values[v]);
	json_add(j, "answer", ans);
	json_add_str(j, "context_path", ctx);
	json_add_str(j, "scorer", "contains_all");
	json_add_num(j, "tokens", (double)tokens);
	json_add_num(j, "bytes", (double)it->bytes);
	json_add_num(j, "needle_depth", (double)(int64_t)(it->depth * 10000 + 0.5) / 10000);
	json_add_str(j, "key", it->key);
	json_add_str(j, "haystack", hay_name(a->so.haystack));
	json_add_str(j, "value_type", bench_sniah_value_name(a->so.value));
	json_add_num(j, "needle_offset", (double)it->needle_off);
	json_add_num(j, "distractors", a->so.distractors);
	if (a->format != SNIAH_TEXT) {
		json_add_str(j, "format", format_name(a->format));
		json_add_num(j, "documents", (double)n_docs);
		json_add_num(j, "needle_doc", (double)needle_doc);
	}
	if (it->n_values > 1) {
		cJSON *offs = cJSON_CreateArray(), *depths = cJSON_CreateArray();
		json_add_num(j, "values", it->n_values);
		for (int v = 0; v < it->n_values; v++) {
			double d = it->bytes ? (double)it->value_offs[v] / (double)it->bytes : 0;
			json_add_num(offs, NULL, (double)it->value_offs[v]);
			json_add_num(depths, NULL, (double)(int64_t)(d * 10000 + 0.5) / 10000);
		}
		json_add(j, "needle_offsets", offs);
		json_add(j, "needle_depths", depths);
		if (a->format != SNIAH_TEXT) {
			cJSON *docs = cJSON_CreateArray();
			for (int v = 0; v < it->n_values; v++)
				json_add_num(docs, NULL, (double)it->value_docs[v]);
			json_add(j, "needle_docs", docs);
		}
	}
	if (a->so.utf8)
		json_add_bool(j, "utf8", true);
	s = json_print(j);
	cJSON_Delete(j);
	return s;
}

/* Write one item's context (file, directory or JSONL) and its JSONL line. */
static int gen_item(const struct gen_args *a, FILE *jl, const char *jl_path, size_t si, long i)
{
	static const char *const ext[] = {".txt", "", ".jsonl"};
	struct sniah_opts so = a->so;
	struct sniah_item it;
	char *id = xasprintf("sniah-%s-%ld", a->size_names[si], i);
	char *name = xasprintf("%s%s", id, ext[a->format]),
	     *path = xasprintf("%s/%s", a->out, name);
	char *line;
	size_t docs, n_docs, needle_doc;
	int rc, status = 1;
	so.tokens = a->sizes[si];
	so.seed = item_seed(a->seed, so.tokens, (uint64_t)i);
	docs = a->docs ? (size_t)a->docs : (size_t)RLM_MAX(so.tokens / 2000, (uint64_t)so.values);
	rc = bench_sniah_write(&so, a->format, docs, path, &it, &n_docs, &needle_doc);
	if (rc == -EINVAL && so.values > 1) {
		status = log_fail(2, "size '%s' is too small for %d values%s and %d distractors",
				  a->size_names[si], so.values,
				  a->format == SNIAH_TEXT ? "" : " in documents of their own",
				  so.distractors);
		goto out;
	}
	if (rc == -EINVAL) {
		status = log_fail(2, "size '%s' is too small for the needle and %d distractors",
				  a->size_names[si], a->so.distractors);
		goto out;
	}
	if (rc) {
		log_fail(1, "cannot write '%s': %s", path, strerror(-rc));
		goto out;
	}
	line = item_json(a, id, name, so.tokens, &it, n_docs, needle_doc);
	if (fprintf(jl, "%s\n", line) < 0) {
		log_fail(1, "cannot write '%s': %s", jl_path, strerror(errno));
		free(line);
		goto out;
	}
	free(line);
	fprintf(stderr, "%s: %llu bytes", path, (unsigned long long)it.bytes);
	if (a->format != SNIAH_TEXT)
		fprintf(stderr, " in %zu documents", n_docs);
	if (it.n_values > 1)
		fprintf(stderr, ", key %s, %d needles from %.3f", it.key, it.n_values, it.depth);
	else
		fprintf(stderr, ", key %s, needle at %.3f", it.key, it.depth);
	for (int v = 0; a->format != SNIAH_TEXT && v < it.n_values; v++) {
		const char *sep = it.n_values > 1 ? " (documents " : " (document ";
		fprintf(stderr, "%s%zu", v ? ", " : sep, it.value_docs[v]);
	}
	fputs(a->format != SNIAH_TEXT ? ")\n" : "\n", stderr);
	status = 0;
out:
	free(id);
	free(name);
	free(path);
	return status;
}

/* An item of the other suites: its request, for gen_suites.c. */
static int suite_item(const struct gen_args *a, FILE *jl, const char *jl_path, size_t si, long i)
{
	struct gen_req r;
	char *id = xasprintf("%s-%s-%ld", suite_names[a->suite], a->size_names[si], i);
	int status;
	memset(&r, 0, sizeof(r));
	r.suite = a->suite;
	r.dir = a->out;
	r.id = id;
	r.size_name = a->size_names[si];
	r.tokens = a->sizes[si];
	r.seed = item_seed(a->seed, r.tokens, (uint64_t)i);
	r.users = a->users;
	r.tasks = a->tasks;
	r.docs = (size_t)a->docs;
	r.format = a->format;
	status = bench_gen_suite_item(&r, jl, jl_path);
	free(id);
	return status;
}

int cli_bench_gen(int argc, char **argv)
{
	struct gen_args a;
	char *sizes = NULL, *jl_path = NULL;
	FILE *jl = NULL;
	int rc, status;
	memset(&a, 0, sizeof(a));
	a.n = 1;
	a.seed = 1;
	a.format = SNIAH_TEXT;
	bench_sniah_opts_default(&a.so);
	if (cli_wants_help(argc, argv)) {
		fputs(gen_usage, stdout);
		return 0;
	}
	if ((status = parse_gen_args(&a, argc, argv, &sizes))) {
		if (status == 1) /* --help */
			status = 0;
		goto out;
	}
	if ((rc = bench_make_dirs(a.out))) {
		status = log_fail(1, "cannot create directory '%s': %s", a.out, strerror(-rc));
		goto out;
	}
	jl_path = xasprintf("%s/%s.jsonl", a.out, suite_names[a.suite]);
	if (!(jl = fopen(jl_path, "w"))) {
		status = log_fail(1, "cannot open '%s': %s", jl_path, strerror(errno));
		goto out;
	}
	for (size_t si = 0; si < a.n_sizes && !status; si++)
		for (long i = 0; i < a.n && !status; i++)
			status = a.suite == GEN_SNIAH ? gen_item(&a, jl, jl_path, si, i)
						      : suite_item(&a, jl, jl_path, si, i);
	if (fclose(jl) != 0 && !status)
		status = log_fail(1, "cannot write '%s': %s", jl_path, strerror(errno));
	jl = NULL;
	if (!status)
		printf("%s\n", jl_path);
out:
	free(jl_path);
	free(sizes);
	free(a.size_names);
	free(a.sizes);
	return status;
}
