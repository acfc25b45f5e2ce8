/* SPDX-License-Identifier: MIT */
/* tests/test_gen.c -- the S-NIAH generator: reproducible bytes, sizes, one
 * findable needle at the asked depth, every haystack and value type, and
 * `rlm bench gen` writing a JSONL whose items point at real files. */
#include "harness.h"
#include "../bench/bench.h"
#include "../common/common.h"
#include "../common/json.h"
#include "../cli/cli.h"
#include "../corpus/corpus.h"
#include "../common/text.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers ---- */

struct hay {
	char *p;
	size_t len;
	struct sniah_item it;
};

static struct hay gen(const struct sniah_opts *o)
{
	struct hay h = {0};
	FILE *f = open_memstream(&h.p, &h.len);
	CHECK(f);
	CHECK_INT(bench_sniah_generate(o, f, &h.it), 0);
	CHECK_INT(fclose(f), 0);
	CHECK_INT(h.it.bytes, h.len);
	return h;
}

static struct sniah_opts opts(uint64_t tokens, uint64_t seed)
{
	struct sniah_opts o;
	bench_sniah_opts_default(&o);
	o.tokens = tokens;
	o.seed = seed;
	return o;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0, k = strlen(needle);
	for (const char *p = hay; (p = strstr(p, needle)); p += k)
		n++;
	return n;
}

static bool size_ok(uint64_t tokens, size_t len)
{
	double want = 4.0 * (double)tokens;
	return (double)len <= want && (double)len >= want * 0.995;
}

static const char *value_plural(enum sniah_value v)
{
	return v == SNIAH_NUMBER ? "numbers" : v == SNIAH_WORD ? "words" : "uuids";
}

static bool value_ok(enum sniah_value v, const char *s)
{
	size_t n = strlen(s);
	if (v == SNIAH_NUMBER) {
		long x = atol(s);
		return n == 7 && strspn(s, "0123456789") == 7 && x >= 1000000 && x <= 9999999;
	}
	if (v == SNIAH_WORD) {
		for (size_t i = 0; i < n; i++)
			if (!islower((unsigned char)s[i]))
				return false;
		return n >= 3;
	}
	if (n != 36)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' : !strchr("0123456789abcdef", s[i]))
			return false;
	}
	return true;
}

/* Check the needle: its exact line at needle_off, the key and the value on
 * that line only. Returns the number of lines. */
static size_t check_needle(const struct hay *h, enum sniah_value v)
{
	char *want = xasprintf("One of the special magic %s for %s is: %s.\n", value_plural(v),
			       h->it.key, h->it.value);
	size_t lines = 0, key_lines = 0;
	CHECK(h->it.needle_off + strlen(want) <= h->len);
	CHECK(h->it.needle_off == 0 || h->p[h->it.needle_off - 1] == '\n');
	CHECK_MSG(memcmp(h->p + h->it.needle_off, want, strlen(want)) == 0, "needle at %llu",
		  (unsigned long long)h->it.needle_off);
	CHECK_INT(count(h->p, h->it.key), 1);
	CHECK_INT(count(h->p, h->it.value), 1);
	CHECK(value_ok(v, h->it.value));
	for (const char *p = h->p; p < h->p + h->len;) {
		const char *nl = memchr(p, '\n', (size_t)(h->p + h->len - p));
		CHECK(nl); /* every line ends with a newline */
		lines++;
		if (memmem(p, (size_t)(nl - p), h->it.key, strlen(h->it.key)))
			key_lines++;
		p = nl + 1;
	}
	CHECK_INT(key_lines, 1);
	free(want);
	return lines;
}

/* Is w a whole word somewhere in s[0..n)? */
static bool has_word(const char *s, size_t n, const char *w)
{
	size_t k = strlen(w);
	for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), w, k)); p += k) {
		bool left = p == s || !isalpha((unsigned char)p[-1]);
		bool right = p + k == s + n || !isalpha((unsigned char)p[k]);
		if (left && right)
			return true;
	}
	return false;
}

/* Run cli_bench_gen with stdout and stderr captured. */
static int run_gen(const char *const *args, char **out, char **err)
{
	char *argv[32], *po = xasprintf("%s/stdout", harness_tmpdir()),
			*pe = xasprintf("%s/stderr", harness_tmpdir());
	int argc = 0, so = dup(1), se = dup(2), fo, fe, status;
	struct rlm_err e;
	size_t len;
	char *copies[32];
	argv[argc++] = xstrdup("gen");
	for (; args[argc - 1]; argc++)
		argv[argc] = xstrdup(args[argc - 1]);
	argv[argc] = NULL;
	memcpy(copies, argv, sizeof(copies)); /* getopt may permute argv */
	fo = open(po, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	fe = open(pe, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fo >= 0 && fe >= 0 && so >= 0 && se >= 0);
	fflush(stdout);
	fflush(stderr);
	dup2(fo, 1);
	dup2(fe, 2);
	status = cli_bench_gen(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(fo);
	close(fe);
	close(so);
	close(se);
	for (int i = 0; i < argc; i++)
		free(copies[i]);
	CHECK_INT(file_read(po, 1 << 20, out, &len, &e), 0);
	CHECK_INT(file_read(pe, 1 << 20, err, &len, &e), 0);
	free(po);
	free(pe);
	return status;
}

static char *slurp(const char *path, size_t *len)
{
	char *p;
	struct rlm_err e = {0, ""};
	CHECK_MSG(file_read(path, (size_t)1 << 30, &p, len, &e) == 0, "%s", e.msg);
	return p;
}

/* ---- the generator ---- */

TEST(gen_is_deterministic)
{
	struct sniah_opts o = opts(20000, 42);
	struct hay a, b, c;
	o.distractors = 3;
	a = gen(&o);
	b = gen(&o);
	CHECK_INT(a.len, b.len);
	CHECK(memcmp(a.p, b.p, a.len) == 0);
	CHECK_STR(a.it.key, b.it.key);
	CHECK_STR(a.it.value, b.it.value);
	o.seed = 43;
	c = gen(&o);
	CHECK(c.len != a.len || memcmp(a.p, c.p, a.len) != 0);
	CHECK(strcmp(a.it.key, c.it.key) != 0 || strcmp(a.it.value, c.it.value) != 0);
	free(a.p);
	free(b.p);
	free(c.p);
}

TEST(gen_size_within_half_percent)
{
	static const uint64_t sizes[] = {1000, 1234, 8000, 32768, 100000, 1000000};
	for (int h = SNIAH_NOISE; h <= SNIAH_ESSAY; h++) {
		for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
			for (uint64_t seed = 1; seed <= 3; seed++) {
				struct sniah_opts o = opts(sizes[i], seed);
				struct hay x;
				o.haystack = (enum sniah_haystack)h;
				x = gen(&o);
				CHECK_MSG(size_ok(sizes[i], x.len), "haystack %d, %llu tokens: %zu bytes",
					  h, (unsigned long long)sizes[i], x.len);
				free(x.p);
			}
		}
	}
}

TEST(gen_every_haystack_and_value)
{
	for (int h = SNIAH_NOISE; h <= SNIAH_ESSAY; h++) {
		for (int v = SNIAH_NUMBER; v <= SNIAH_UUID; v++) {
			for (uint64_t seed = 0; seed < 5; seed++) {
				struct sniah_opts o = opts(16000, seed * 7 + 1);
				struct hay x;
				char *q;
				o.haystack = (enum sniah_haystack)h;
				o.value = (enum sniah_value)v;
				x = gen(&o);
				check_needle(&x, o.value);
				q = xasprintf("What is the special magic %s for %s mentioned in the "
					      "provided text?",
					      v == SNIAH_NUMBER ? "number"
					      : v == SNIAH_WORD ? "word"
								: "uuid",
					      x.it.key);
				CHECK_STR(x.it.question, q);
				free(q);
				free(x.p);
			}
		}
	}
}

TEST(gen_haystack_shapes)
{
	static const char noise[] = "The grass is green. The sky is blue. The sun is yellow. "
				    "Here we go. There and back again.";
	struct sniah_opts o = opts(50000, 9);
	struct hay x;
	size_t lines = 0, odd = 0;
	o.haystack = SNIAH_NOISE;
	x = gen(&o);
	for (char *line = strtok(x.p, "\n"); line; line = strtok(NULL, "\n"), lines++)
		if (strcmp(line, noise) != 0)
			odd++;
	CHECK(lines > 2000);
	CHECK(odd <= 2); /* the needle and the cut last line */
	free(x.p);

	o.haystack = SNIAH_ESSAY;
	x = gen(&o);
	lines = 0;
	odd = 0;
	for (char *line = strtok(x.p, "\n"); line; line = strtok(NULL, "\n")) {
		size_t n = strlen(line);
		if (strncmp(line, "One of the special magic", 24) == 0)
			continue;
		lines++;
		if (n < 300 || n > 700)
			odd++;
		CHECK(isupper((unsigned char)line[0]) && line[n - 1] == '.');
	}
	CHECK(odd <= 1); /* the last line may be cut */
	CHECK(lines > 200);
	free(x.p);

	o.haystack = SNIAH_WORDS;
	x = gen(&o);
	odd = 0;
	for (char *line = strtok(x.p, "\n"); line; line = strtok(NULL, "\n")) {
		size_t words = 1;
		if (strncmp(line, "One of the special magic", 24) == 0)
			continue;
		for (char *s = line; *s; s++)
			words += *s == ' ';
		if (words < 10 || words > 14)
			odd++;
	}
	CHECK(odd <= 1);
	free(x.p);
}

TEST(gen_depth_lands_within_a_line)
{
	static const double depths[] = {0, 0.1, 0.25, 0.5, 0.77, 0.9, 1};
	for (int h = SNIAH_NOISE; h <= SNIAH_ESSAY; h++) {
		for (size_t i = 0; i < ARRAY_SIZE(depths); i++) {
			struct sniah_opts o = opts(64000, 5 + i);
			struct hay x;
			double want;
			o.haystack = (enum sniah_haystack)h;
			o.depth = depths[i];
			x = gen(&o);
			want = depths[i] * (double)x.len;
			check_needle(&x, o.value);
			/* within one haystack line (<= 700 bytes) of the target */
			CHECK_MSG(fabs((double)x.it.needle_off - want) <= 700, "depth %.2f: at %llu, want %.0f",
				  depths[i], (unsigned long long)x.it.needle_off, want);
			CHECK(fabs(x.it.depth - depths[i]) < 0.02);
			CHECK(x.it.depth >= 0 && x.it.depth <= 1);
			if (depths[i] == 0)
				CHECK_INT(x.it.needle_off, 0);
			free(x.p);
		}
	}
}

TEST(gen_drawn_depths_vary)
{
	double lo = 1, hi = 0;
	for (uint64_t seed = 0; seed < 60; seed++) {
		struct sniah_opts o = opts(2000, seed);
		struct hay x = gen(&o);
		lo = RLM_MIN(lo, x.it.depth);
		hi = RLM_MAX(hi, x.it.depth);
		free(x.p);
	}
	CHECK(lo < 0.2 && hi > 0.8);
}

TEST(gen_distractors_have_distinct_keys)
{
	for (int v = SNIAH_NUMBER; v <= SNIAH_UUID; v++) {
		struct sniah_opts o = opts(40000, 77);
		struct hay x;
		char **keys, prefix[64];
		size_t n = 0;
		o.value = (enum sniah_value)v;
		o.distractors = 25;
		x = gen(&o);
		check_needle(&x, o.value);
		CHECK(size_ok(o.tokens, x.len));
		keys = xcalloc(64, sizeof(*keys));
		snprintf(prefix, sizeof(prefix), "One of the special magic %s for ", value_plural(o.value));
		for (char *line = strtok(x.p, "\n"); line; line = strtok(NULL, "\n")) {
			char *key, *end;
			if (strncmp(line, prefix, strlen(prefix)) != 0)
				continue;
			key = line + strlen(prefix);
			end = strstr(key, " is: ");
			CHECK(end);
			CHECK(strcmp(end + 5, "") != 0);
			keys[n++] = xstrndup(key, (size_t)(end - key));
			if (strcmp(keys[n - 1], x.it.key) != 0)
				CHECK(!strstr(end + 5, x.it.value)); /* other values */
		}
		CHECK_INT(n, 26);
		for (size_t i = 0; i < n; i++) {
			CHECK(strchr(keys[i], '-'));
			for (size_t j = i + 1; j < n; j++)
				CHECK(strcmp(keys[i], keys[j]) != 0);
		}
		for (size_t i = 0; i < n; i++)
			free(keys[i]);
		free(keys);
		free(x.p);
	}
}

TEST(gen_key_words_never_in_the_haystack)
{
	/* Over many seeds every key word turns up; none of them may occur as a
	 * word outside the needle line. */
	for (uint64_t seed = 0; seed < 600; seed++) {
		struct sniah_opts o = opts(1000, seed);
		struct hay x;
		char adj[64], *noun, *line_end;
		o.haystack = (enum sniah_haystack)(seed % 3);
		o.value = seed % 2 ? SNIAH_WORD : SNIAH_NUMBER;
		x = gen(&o);
		snprintf(adj, sizeof(adj), "%s", x.it.key);
		noun = strchr(adj, '-');
		CHECK(noun && noun > adj && noun[1]);
		*noun++ = '\0';
		line_end = strchr(x.p + x.it.needle_off, '\n');
		/* blank out the needle line, then look for the words */
		memset(x.p + x.it.needle_off, ' ', (size_t)(line_end - (x.p + x.it.needle_off)));
		CHECK_MSG(!has_word(x.p, x.len, adj), "'%s' in the haystack", adj);
		CHECK_MSG(!has_word(x.p, x.len, noun), "'%s' in the haystack", noun);
		CHECK_MSG(!strstr(x.p, x.it.value), "'%s' in the haystack", x.it.value);
		free(x.p);
	}
}

TEST(gen_rejects_bad_opts)
{
	struct sniah_opts o = opts(1000, 1);
	struct sniah_item it;
	FILE *f = fopen("/dev/null", "w");
	o.distractors = -1;
	CHECK_INT(bench_sniah_generate(&o, f, &it), -EINVAL);
	o.distractors = 1001;
	CHECK_INT(bench_sniah_generate(&o, f, &it), -EINVAL);
	o.distractors = 100;
	CHECK_INT(bench_sniah_generate(&o, f, &it), -EINVAL); /* needles > half the bytes */
	o.distractors = 0;
	o.depth = 1.5;
	CHECK_INT(bench_sniah_generate(&o, f, &it), -EINVAL);
	fclose(f);
}

/* Neither of a and b contains the other. */
static bool told_apart(const char *a, const char *b)
{
	return !strstr(a, b) && !strstr(b, a);
}

/* RULER's multi-value NIAH: K needles of one key, each value distinct,
 * told apart from the others, on its own line only, at K distinct RULER
 * depths, in the order of the text; distractors keep other keys; the
 * question asks for all of them. */
TEST(gen_values_distinct_each_once)
{
	for (int v = SNIAH_NUMBER; v <= SNIAH_UUID; v++) {
		for (int k = 2; k <= SNIAH_MAX_VALUES; k += 3) {
			struct sniah_opts o = opts(200000, (uint64_t)(5 * v + k));
			struct hay x, y;
			char *q, prefix[64];
			int ruler[SNIAH_MAX_VALUES];
			size_t needles = 0;
			o.value = (enum sniah_value)v;
			o.values = k;
			o.distractors = 4;
			x = gen(&o);
			CHECK(size_ok(o.tokens, x.len));
			CHECK_INT(x.it.n_values, k);
			CHECK_INT(count(x.p, x.it.key), k);
			CHECK_STR(x.it.value, x.it.values[0]);
			CHECK_INT(x.it.needle_off, x.it.value_offs[0]);
			for (int i = 0; i < k; i++) {
				char *line = xasprintf("One of the special magic %s for %s is: %s.\n",
						       value_plural(o.value), x.it.key,
						       x.it.values[i]);
				uint64_t off = x.it.value_offs[i];
				CHECK(value_ok(o.value, x.it.values[i]));
				CHECK_INT(count(x.p, x.it.values[i]), 1);
				CHECK(off == 0 || x.p[off - 1] == '\n');
				CHECK_MSG(memcmp(x.p + off, line, strlen(line)) == 0,
					  "value %d at %llu", i, (unsigned long long)off);
				CHECK(i == 0 || off > x.it.value_offs[i - 1]);
				for (int j = 0; j < i; j++)
					CHECK(told_apart(x.it.values[i], x.it.values[j]));
				/* just past one of RULER's depths, each a different one */
				ruler[i] = -1;
				for (int d = 0; d < 40; d++) {
					double at = (double)(int)(d * 100.0 / 39 + 0.5) / 100 *
						    (double)(4 * o.tokens);
					/* a needle at depth 1 goes after the
					 * haystack, which is its needles short */
					if ((double)off >= at - 2000 && (double)off <= at + 3000)
						ruler[i] = d;
				}
				CHECK_MSG(ruler[i] >= 0, "value %d at %llu: no RULER depth", i,
					  (unsigned long long)off);
				for (int j = 0; j < i; j++)
					CHECK(ruler[i] != ruler[j]);
				free(line);
			}
			snprintf(prefix, sizeof(prefix), "One of the special magic %s for ",
				 value_plural(o.value));
			needles = count(x.p, prefix);
			CHECK_INT(needles, (size_t)k + 4);
			q = xasprintf("What are all the special magic %s for %s mentioned in the "
				      "provided text?",
				      value_plural(o.value), x.it.key);
			CHECK_STR(x.it.question, q);
			/* the same options, the same bytes */
			y = gen(&o);
			CHECK(x.len == y.len && memcmp(x.p, y.p, x.len) == 0);
			free(q);
			free(x.p);
			free(y.p);
		}
	}
}

/* One value is the default, and its haystack is what it always was: the
 * multi-value draws come only when asked for. */
TEST(gen_one_value_is_the_single_needle)
{
	struct sniah_opts o = opts(20000, 42);
	struct hay x;
	o.distractors = 3;
	CHECK_INT(o.values, 1);
	x = gen(&o);
	check_needle(&x, o.value);
	CHECK_INT(x.it.n_values, 1);
	CHECK_STR(x.it.values[0], x.it.value);
	CHECK(strncmp(x.it.question, "What is the special magic number for ", 37) == 0);
	/* pinned: what seed 42 gave before --values existed */
	CHECK_STR(x.it.key, "jealous-dumpling");
	CHECK_STR(x.it.value, "4124193");
	CHECK_INT(x.it.needle_off, 44878);
	free(x.p);
}

/* As documents: each value in a document of its own, and only there. */
TEST(gen_values_in_distinct_documents)
{
	static const enum sniah_format fmts[] = {SNIAH_DIR, SNIAH_JSONL};
	static const struct {
		int values;
		size_t docs;
		uint64_t tokens;
	} cases[] = {{4, 4, 8000}, {8, 8, 8000}, {3, 40, 40000}, {5, 2000, 400000}};
	for (size_t f = 0; f < ARRAY_SIZE(fmts); f++) {
		for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
			struct sniah_opts o = opts(cases[i].tokens, 60 + i);
			struct corpus_opts co = {.kind = CORPUS_AUTO, .quiet = true};
			struct corpus *c = NULL;
			struct rlm_err err = {0, ""};
			struct sniah_item it;
			char *path = xasprintf("%s/v%zu%zu%s", harness_tmpdir(), f, i,
					       fmts[f] == SNIAH_JSONL ? ".jsonl" : "");
			char *text;
			size_t n, nd;
			o.values = cases[i].values;
			o.distractors = 3;
			CHECK_INT(bench_sniah_write(&o, fmts[f], cases[i].docs, path, &it, &n, &nd), 0);
			CHECK_INT(it.n_values, cases[i].values);
			CHECK_INT(nd, it.value_docs[0]);
			CHECK_MSG(corpus_load(path, &co, &c, &err) == 0, "%s", err.msg);
			CHECK_INT(c->n_docs, n);
			CHECK_INT(n, cases[i].docs);
			text = xstrndup(c->buf, c->len);
			CHECK_INT(count(text, it.key), (size_t)cases[i].values);
			for (int v = 0; v < it.n_values; v++) {
				char *needle = xasprintf("for %s is: %s.", it.key, it.values[v]);
				size_t d = it.value_docs[v];
				CHECK(d < n);
				CHECK(v == 0 || d > it.value_docs[v - 1]);
				CHECK_INT(count(text, it.values[v]), 1);
				CHECK(it.value_offs[v] >= c->docs[d].off &&
				      it.value_offs[v] < c->docs[d].off + c->docs[d].len);
				CHECK_MSG(memmem(c->buf + c->docs[d].off, c->docs[d].len, needle,
						 strlen(needle)) != NULL,
					  "%s not in document %zu", needle, d);
				free(needle);
			}
			free(text);
			corpus_free(c);
			free(path);
		}
	}
}

TEST(gen_values_rejects_bad_opts)
{
	struct sniah_opts o = opts(200000, 1);
	struct sniah_item it;
	char *dir = xasprintf("%s/vbad", harness_tmpdir());
	size_t n, nd;
	FILE *f = fopen("/dev/null", "w");
	o.values = 0;
	CHECK_INT(bench_sniah_generate(&o, f, &it), -EINVAL);
	o.values = SNIAH_MAX_VALUES + 1;
	CHECK_INT(bench_sniah_generate(&o, f, &it), -EINVAL);
	o.values = 2;
	o.depth = 0.5; /* one depth for two needles */
	CHECK_INT(bench_sniah_generate(&o, f, &it), -EINVAL);
	o.depth = -1;
	o.value = SNIAH_WORD; /* 105 word values in all */
	o.values = 8;
	o.distractors = 98;
	CHECK_INT(bench_sniah_generate(&o, f, &it), -EINVAL);
	o.distractors = 97;
	CHECK_INT(bench_sniah_generate(&o, f, &it), 0);
	CHECK_INT(it.n_values, 8);
	o.distractors = 0;
	CHECK_INT(bench_sniah_write(&o, SNIAH_DIR, 7, dir, &it, &n, &nd), -EINVAL); /* 8 values */
	CHECK_INT(bench_sniah_write(&o, SNIAH_DIR, 8, dir, &it, &n, &nd), 0);
	CHECK_INT(n, 8);
	fclose(f);
	free(dir);
}

TEST(gen_10m_tokens_fast)
{
	struct sniah_opts o = opts(10000000, 3);
	struct sniah_item it;
	char *p = xasprintf("%s/big.txt", harness_tmpdir());
	FILE *f = fopen(p, "wb");
	int64_t t0 = time_now_ns();
	double ms;
	struct stat st;
	CHECK(f);
	CHECK_INT(bench_sniah_generate(&o, f, &it), 0);
	CHECK_INT(fclose(f), 0);
	ms = (double)(time_now_ns() - t0) / 1e6;
	printf("     10M-token essay haystack written in %.0f ms\n", ms);
	CHECK_INT(stat(p, &st), 0);
	CHECK_INT(st.st_size, it.bytes);
	CHECK(size_ok(o.tokens, (size_t)st.st_size));
	CHECK(ms < 60000); /* the 2 s goal is for optimized builds; sanitizers are slower */
	free(p);
}

/* ---- --utf8 ---- */

/* How many sequences of 1, 2, 3 and 4 bytes s[0..len) has. */
static void seq_counts(const char *s, size_t len, size_t n[5])
{
	memset(n, 0, 5 * sizeof(size_t));
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c & 0xc0) != 0x80)
			n[c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4]++;
	}
}

TEST(gen_utf8_haystacks)
{
	for (int h = 0; h < 3; h++) {
		struct sniah_opts o = opts(30000, 4);
		struct hay a, b, plain;
		size_t n[5];
		o.haystack = (enum sniah_haystack)h;
		plain = gen(&o);
		o.utf8 = true;
		a = gen(&o);
		b = gen(&o);
		CHECK(a.len == b.len && memcmp(a.p, b.p, a.len) == 0); /* deterministic */
		CHECK(size_ok(o.tokens, a.len));
		CHECK(text_utf8_valid(a.p, a.len, NULL));
		check_needle(&a, o.value);
		seq_counts(a.p, a.len, n);
		CHECK_MSG(n[2] > 0 && n[3] > 0 && n[4] > 0, "haystack %d: %zu/%zu/%zu multi-byte", h,
			  n[2], n[3], n[4]);
		CHECK(n[1] + n[2] + n[3] + n[4] < a.len);
		seq_counts(plain.p, plain.len, n); /* without --utf8: ASCII as before */
		CHECK(n[2] == 0 && n[3] == 0 && n[4] == 0);
		free(a.p);
		free(b.p);
		free(plain.p);
	}
	for (uint64_t seed = 0; seed < 100; seed++) {
		struct sniah_opts o = opts(2000, seed);
		struct hay x;
		o.utf8 = true;
		o.haystack = (enum sniah_haystack)(seed % 3);
		x = gen(&o);
		CHECK_INT(count(x.p, x.it.key), 1);
		CHECK_INT(count(x.p, x.it.value), 1);
		free(x.p);
	}
}

/* ---- documents: dir and jsonl ---- */

TEST(gen_docs_load_back_as_the_haystack)
{
	static const enum sniah_format fmts[] = {SNIAH_DIR, SNIAH_JSONL};
	for (size_t f = 0; f < ARRAY_SIZE(fmts); f++) {
		for (int utf8 = 0; utf8 < 2; utf8++) {
			struct sniah_opts o = opts(40000, 21);
			struct corpus_opts co = {.kind = CORPUS_AUTO, .quiet = true};
			struct corpus *c = NULL;
			struct rlm_err err = {0, ""};
			struct hay h;
			struct sniah_item it;
			char *path = xasprintf("%s/d%zu%d%s", harness_tmpdir(), f, utf8,
					       fmts[f] == SNIAH_JSONL ? ".jsonl" : "");
			char *needle;
			size_t n, nd, biggest = 0;
			o.utf8 = utf8;
			h = gen(&o);
			CHECK_INT(bench_sniah_write(&o, fmts[f], 37, path, &it, &n, &nd), 0);
			CHECK_INT(it.bytes, h.len);
			CHECK_INT(it.needle_off, h.it.needle_off);
			CHECK_MSG(corpus_load(path, &co, &c, &err) == 0, "%s", err.msg);
			CHECK_INT(c->kind, fmts[f] == SNIAH_DIR ? CORPUS_DIR : CORPUS_JSONL);
			CHECK_INT(c->n_docs, n);
			CHECK(n >= 30 && n <= 37);
			/* the documents, joined and ended by '\n', are the haystack */
			CHECK_INT(c->len, h.len);
			CHECK(memcmp(c->buf, h.p, h.len) == 0);
			needle = xasprintf("for %s is: %s.", it.key, it.value);
			CHECK(nd < n);
			CHECK(memmem(c->buf + c->docs[nd].off, c->docs[nd].len, needle,
				     strlen(needle)) != NULL);
			for (size_t i = 0; i < n; i++) {
				CHECK(c->docs[i].len > 0);
				biggest = RLM_MAX(biggest, c->docs[i].len);
			}
			CHECK(biggest < 2 * h.len / 37); /* about equal shares */
			{
				char want[32];
				snprintf(want, sizeof(want), "doc-%05zu%s", n - 1,
					 fmts[f] == SNIAH_DIR ? ".txt" : "");
				CHECK_STR(c->docs[n - 1].id, want);
			}
			free(needle);
			corpus_free(c);
			free(h.p);
			free(path);
		}
	}
}

TEST(gen_docs_dir_rewritten_and_bad_counts)
{
	struct sniah_opts o = opts(8000, 2);
	struct sniah_item it;
	struct corpus *c = NULL;
	struct rlm_err err = {0, ""};
	char *dir = xasprintf("%s/rw", harness_tmpdir());
	size_t n, nd;
	CHECK_INT(bench_sniah_write(&o, SNIAH_DIR, 20, dir, &it, &n, &nd), 0);
	CHECK_INT(n, 20);
	CHECK_INT(bench_sniah_write(&o, SNIAH_DIR, 3, dir, &it, &n, &nd), 0);
	CHECK_INT(n, 3); /* the 17 other files of the first run are gone */
	CHECK_INT(corpus_load(dir, NULL, &c, &err), 0);
	CHECK_INT(c->n_docs, 3);
	corpus_free(c);
	CHECK_INT(bench_sniah_write(&o, SNIAH_DIR, 0, dir, &it, &n, &nd), -EINVAL);
	CHECK_INT(bench_sniah_write(&o, SNIAH_JSONL, SNIAH_MAX_DOCS + 1, dir, &it, &n, &nd), -EINVAL);
	CHECK_INT(bench_sniah_write(&o, SNIAH_JSONL, 5, dir, &it, &n, &nd), -EISDIR);
	free(dir);
	/* more documents asked for than there are lines: a line each */
	dir = xasprintf("%s/many.jsonl", harness_tmpdir());
	CHECK_INT(bench_sniah_write(&o, SNIAH_JSONL, 100000, dir, &it, &n, &nd), 0);
	CHECK(n > 20 && n < 200);
	free(dir);
}

/* ---- rlm bench gen ---- */

TEST(cli_writes_jsonl_and_files)
{
	char *dir = xasprintf("%s/a/b", harness_tmpdir()), *jl = xasprintf("%s/sniah.jsonl", dir);
	const char *args[] = {"sniah", "--sizes", "1k,8k", "--n", "2", "--seed", "7", "--out", dir,
			      "--value", "uuid", "--haystack", "words", NULL};
	char *out, *err, *text, *save = NULL, *want_out = xasprintf("%s\n", jl);
	size_t len, items = 0;
	CHECK_INT(run_gen(args, &out, &err), 0);
	CHECK_STR(out, want_out);
	CHECK_CONTAINS(err, "sniah-8k-1.txt: ");
	text = slurp(jl, &len);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		static const char *const ids[] = {"sniah-1k-0", "sniah-1k-1", "sniah-8k-0",
						  "sniah-8k-1"};
		cJSON *j = json_parse(line, strlen(line));
		cJSON *ans;
		char *ctx, *body;
		size_t blen;
		CHECK(j);
		CHECK(items < 4);
		CHECK_STR(json_str(j, "id"), ids[items]);
		CHECK_STR(json_str(j, "suite"), "sniah");
		CHECK_STR(json_str(j, "scorer"), "contains_all");
		CHECK_STR(json_str(j, "haystack"), "words");
		CHECK_STR(json_str(j, "value_type"), "uuid");
		CHECK_INT(json_int(j, "tokens", 0), items < 2 ? 1000 : 8000);
		CHECK(json_num(j, "needle_depth", -1) >= 0 && json_num(j, "needle_depth", 2) <= 1);
		ans = json_get(j, "answer");
		CHECK(cJSON_IsArray(ans) && cJSON_GetArraySize(ans) == 1);
		CHECK(value_ok(SNIAH_UUID, cJSON_GetArrayItem(ans, 0)->valuestring));
		CHECK_CONTAINS(json_str(j, "question"), json_str(j, "key"));
		{
			char *want = xasprintf("%s.txt", ids[items]);
			CHECK_STR(json_str(j, "context_path"), want);
			free(want);
		}
		ctx = xasprintf("%s/%s", dir, json_str(j, "context_path"));
		body = slurp(ctx, &blen);
		CHECK_INT(blen, json_int(j, "bytes", -1));
		CHECK(size_ok((uint64_t)json_int(j, "tokens", 0), blen));
		CHECK_INT(count(body, cJSON_GetArrayItem(ans, 0)->valuestring), 1);
		CHECK_INT(count(body, json_str(j, "key")), 1);
		CHECK_INT(json_int(j, "needle_offset", -1),
			  strstr(body, "One of the special magic uuids") - body);
		free(body);
		free(ctx);
		cJSON_Delete(j);
		items++;
	}
	CHECK_INT(items, 4);
	free(want_out);
	free(text);
	free(out);
	free(err);
	free(jl);
	free(dir);
}

TEST(cli_items_are_independent_and_jsonl_truncated)
{
	char *dir = xasprintf("%s/g", harness_tmpdir());
	char *f = xasprintf("%s/sniah-8k-1.txt", dir), *jl = xasprintf("%s/sniah.jsonl", dir);
	const char *a1[] = {"sniah", "--sizes", "8k", "--n", "2", "--out", dir, NULL};
	const char *a2[] = {"--out", dir, "--n", "3", "--sizes", "1k,8k", "sniah", NULL};
	const char *a3[] = {"sniah", "--sizes", "1k", "--out", dir, NULL};
	char *out, *err, *x, *y, *t;
	size_t xl, yl, tl;
	CHECK_INT(run_gen(a1, &out, &err), 0);
	x = slurp(f, &xl);
	free(out);
	free(err);
	CHECK_INT(run_gen(a2, &out, &err), 0);
	y = slurp(f, &yl);
	CHECK(xl == yl && memcmp(x, y, xl) == 0);
	free(out);
	free(err);
	CHECK_INT(run_gen(a3, &out, &err), 0);
	t = slurp(jl, &tl);
	CHECK_INT(count(t, "\n"), 1);
	CHECK_CONTAINS(t, "\"id\":\"sniah-1k-0\"");
	free(t);
	free(out);
	free(err);
	free(x);
	free(y);
	free(f);
	free(jl);
	free(dir);
}

TEST(cli_formats_docs_and_utf8)
{
	char *dir = xasprintf("%s/f", harness_tmpdir()), *jl = xasprintf("%s/sniah.jsonl", dir);
	const char *a1[] = {"sniah", "--sizes", "8k", "--out", dir, "--format", "dir", "--docs",
			    "7", "--utf8", NULL};
	const char *a2[] = {"sniah", "--sizes", "8k", "--out", dir, "--format", "jsonl", NULL};
	char *out, *err, *text, *p;
	size_t len;
	cJSON *j;
	struct stat st;
	CHECK_INT(run_gen(a1, &out, &err), 0);
	CHECK_CONTAINS(err, "in 7 documents");
	text = slurp(jl, &len);
	j = json_parse(text, len);
	CHECK(j);
	CHECK_STR(json_str(j, "context_path"), "sniah-8k-0");
	CHECK_STR(json_str(j, "format"), "dir");
	CHECK_INT(json_int(j, "documents", 0), 7);
	CHECK(json_int(j, "needle_doc", -1) >= 0 && json_int(j, "needle_doc", -1) < 7);
	CHECK(cJSON_IsTrue(json_get(j, "utf8")));
	p = xasprintf("%s/sniah-8k-0/doc-00006.txt", dir);
	CHECK_INT(stat(p, &st), 0);
	free(p);
	cJSON_Delete(j);
	free(text);
	free(out);
	free(err);
	CHECK_INT(run_gen(a2, &out, &err), 0);
	text = slurp(jl, &len);
	j = json_parse(text, len);
	CHECK_STR(json_str(j, "context_path"), "sniah-8k-0.jsonl");
	CHECK_STR(json_str(j, "format"), "jsonl");
	CHECK_INT(json_int(j, "documents", 0), 4); /* one per 2,000 tokens */
	CHECK(json_get(j, "utf8") == NULL);
	cJSON_Delete(j);
	free(text);
	free(out);
	free(err);
	free(jl);
	free(dir);
}

/* --values: the answer holds every value, in the order of the text; the
 * item says where each went; the default --docs makes room for them. */
TEST(cli_values_items)
{
	static const char *const fmts[] = {"text", "dir", "jsonl"};
	for (size_t f = 0; f < ARRAY_SIZE(fmts); f++) {
		char *dir = xasprintf("%s/mv%zu", harness_tmpdir(), f),
		     *jl = xasprintf("%s/sniah.jsonl", dir);
		const char *args[] = {"sniah",	  "--sizes", "8k",	  "--out", dir,
				      "--values", "8",	     "--distractors", "2",   "--format",
				      fmts[f],	  NULL};
		char *out, *err, *text, *ctx, *body = NULL, *q;
		size_t len;
		cJSON *j, *ans, *offs, *docs;
		CHECK_INT(run_gen(args, &out, &err), 0);
		CHECK_CONTAINS(err, "8 needles from ");
		text = slurp(jl, &len);
		j = json_parse(text, len);
		CHECK(j);
		ans = json_get(j, "answer");
		offs = json_get(j, "needle_offsets");
		docs = json_get(j, "needle_docs");
		CHECK_INT(cJSON_GetArraySize(ans), 8);
		CHECK_INT(cJSON_GetArraySize(offs), 8);
		CHECK_INT(cJSON_GetArraySize(json_get(j, "needle_depths")), 8);
		CHECK_INT(json_int(j, "values", 0), 8);
		CHECK_INT(json_int(j, "needle_offset", -1), cJSON_GetArrayItem(offs, 0)->valuedouble);
		q = xasprintf("What are all the special magic numbers for %s mentioned in the "
			      "provided text?",
			      json_str(j, "key"));
		CHECK_STR(json_str(j, "question"), q);
		ctx = xasprintf("%s/%s", dir, json_str(j, "context_path"));
		if (f == 0) {
			body = slurp(ctx, &len);
			CHECK(docs == NULL);
		} else {
			struct corpus *c = NULL;
			struct rlm_err e = {0, ""};
			CHECK_INT(corpus_load(ctx, NULL, &c, &e), 0);
			CHECK_INT(json_int(j, "documents", 0), 8); /* 4 by size, 8 for the values */
			CHECK_INT(c->n_docs, 8);
			CHECK_INT(cJSON_GetArraySize(docs), 8);
			for (int i = 0; i < 8; i++)
				CHECK_INT(cJSON_GetArrayItem(docs, i)->valueint, i);
			body = xstrndup(c->buf, c->len);
			corpus_free(c);
		}
		CHECK_INT(count(body, json_str(j, "key")), 8);
		for (int i = 0; i < 8; i++) {
			const char *v = cJSON_GetArrayItem(ans, i)->valuestring;
			char *line = xasprintf("for %s is: %s.\n", json_str(j, "key"), v);
			const char *at = strstr(body, line);
			CHECK(value_ok(SNIAH_NUMBER, v));
			CHECK_INT(count(body, v), 1);
			CHECK(at);
			CHECK_INT((double)(at - body) - strlen("One of the special magic numbers "),
				  cJSON_GetArrayItem(offs, i)->valuedouble);
			free(line);
		}
		free(q);
		free(ctx);
		free(body);
		cJSON_Delete(j);
		free(text);
		free(out);
		free(err);
		free(jl);
		free(dir);
	}
}

TEST(cli_bad_options_exit_2)
{
	static const struct {
		const char *args[12];
		const char *msg;
	} cases[] = {
		{{"nope", "--out", "D", NULL},
		 "unknown suite 'nope' (known: sniah, oolong, oolong-pairs, browse, which-doc)"},
		{{"sniah", NULL}, "no output directory: pass --out DIR"},
		{{"--out", "D", NULL}, "no suite"},
		{{"sniah", "--out", "D", "--sizes", "abc", NULL}, "bad size 'abc' in --sizes"},
		{{"sniah", "--out", "D", "--sizes", "8k,0", NULL}, "bad size '0'"},
		{{"sniah", "--out", "D", "--sizes", "8x", NULL}, "bad size '8x'"},
		{{"sniah", "--out", "D", "--sizes", " 8k", NULL}, "bad size ' 8k'"},
		{{"sniah", "--out", "D", "--sizes", "999", NULL}, "bad size '999'"},
		{{"sniah", "--out", "D", "--sizes", ",", NULL}, "--sizes is empty"},
		{{"sniah", "--out", "D", "--sizes", "8k,8k", NULL}, "size '8k' is given twice"},
		{{"sniah", "--out", "D", "--n", "0", NULL}, "bad value '0' for --n"},
		{{"sniah", "--out", "D", "--seed", "-1", NULL}, "bad value '-1' for --seed"},
		{{"sniah", "--out", "D", "--depth", "1.5", NULL}, "bad value '1.5' for --depth"},
		{{"sniah", "--out", "D", "--haystack", "pg", NULL}, "unknown --haystack 'pg'"},
		{{"sniah", "--out", "D", "--value", "date", NULL}, "unknown --value 'date'"},
		{{"sniah", "--out", "D", "--distractors", "5000", NULL}, "bad value '5000' for --distractors"},
		{{"sniah", "--out", "D", "--value", "word", "--distractors", "200", NULL},
		 "too many distractors for word values"},
		{{"sniah", "--out", "D", "--frob", NULL}, "unknown option '--frob'"},
		{{"sniah", "--out", "D", "--format", "csv", NULL}, "unknown --format 'csv'"},
		{{"sniah", "--out", "D", "--docs", "0", NULL}, "bad value '0' for --docs"},
		{{"sniah", "--out", "D", "--docs", "5", NULL}, "--docs needs --format dir or jsonl"},
		{{"sniah", "--out", NULL}, "option '--out' needs a value"},
		{{"sniah", "extra", "--out", "D", NULL}, "unexpected argument 'extra'"},
		{{"sniah", "--out", "D", "--sizes", "1k", "--distractors", "100", NULL},
		 "size '1k' is too small for the needle and 100 distractors"},
		{{"sniah", "--out", "D", "--values", "0", NULL}, "bad value '0' for --values: want 1..8"},
		{{"sniah", "--out", "D", "--values", "9", NULL}, "bad value '9' for --values"},
		{{"sniah", "--out", "D", "--values", "2", "--depth", "0.5", NULL},
		 "--depth places one needle: it cannot go with --values 2"},
		{{"sniah", "--out", "D", "--format", "dir", "--docs", "3", "--values", "4", NULL},
		 "--docs 3 is fewer than --values 4: each value goes in a document of its own"},
		{{"sniah", "--out", "D", "--value", "word", "--values", "8", "--distractors", "98",
		  NULL},
		 "too many distractors for word values: at most 97"},
		{{"sniah", "--out", "D", "--sizes", "1k", "--values", "8", "--distractors", "60",
		  NULL},
		 "size '1k' is too small for 8 values and 60 distractors"},
	};
	char *cwd = getcwd(NULL, 0);
	CHECK_INT(chdir(harness_tmpdir()), 0);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *out, *err;
		int status = run_gen(cases[i].args, &out, &err);
		CHECK_MSG(status == 2, "case %zu: status %d: %s", i, status, err);
		CHECK_CONTAINS(err, "rlm: error: ");
		CHECK_CONTAINS(err, cases[i].msg);
		CHECK_STR(out, "");
		free(out);
		free(err);
	}
	CHECK_INT(chdir(cwd), 0);
	free(cwd);
}

TEST(cli_out_not_a_directory)
{
	char *f = xasprintf("%s/file", harness_tmpdir()), *out, *err;
	const char *args[] = {"sniah", "--sizes", "1k", "--out", f, NULL};
	FILE *fp = fopen(f, "w");
	fclose(fp);
	CHECK_INT(run_gen(args, &out, &err), 1);
	CHECK_CONTAINS(err, "cannot create directory");
	free(out);
	free(err);
	free(f);
}

TEST(cli_help)
{
	const char *args[] = {"--help", NULL};
	char *out, *err;
	CHECK_INT(run_gen(args, &out, &err), 0);
	CHECK_CONTAINS(out, "usage: rlm bench gen SUITE");
	CHECK_CONTAINS(out, "--sizes");
	CHECK_CONTAINS(out, "--n N");
	CHECK_CONTAINS(out, "--seed");
	CHECK_CONTAINS(out, "--out DIR");
	CHECK_CONTAINS(out, "--haystack");
	CHECK_CONTAINS(out, "--value");
	CHECK_CONTAINS(out, "--distractors");
	CHECK_CONTAINS(out, "--depth");
	CHECK_CONTAINS(out, "--format KIND");
	CHECK_CONTAINS(out, "--docs N");
	CHECK_CONTAINS(out, "--utf8");
	CHECK_CONTAINS(out, "--values K");
	CHECK_CONTAINS(out, "What are all the special magic numbers for KEY");
	CHECK_CONTAINS(out, "string_match_all");
	CHECK_CONTAINS(out, "sniah.jsonl");
	free(out);
	free(err);
}

/* ---- oolong and oolong-pairs: windows read back ---- */

static const char *const labels6[6] = {
    "numeric value", "entity",	    "location", "description and abstract concept",
    "abbreviation",  "human being",
};

static bool starts(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static bool ends(const char *s, const char *p)
{
	size_t n = strlen(s), k = strlen(p);
	return n >= k && strcmp(s + n - k, p) == 0;
}

/* The TREC coarse class of an instance, by the rule of docs/bench.md, with
 * lists of this test's own: ABBR, HUM, LOC, NUM, DESC, else ENTY. Returns
 * the index in labels6. */
static int classify(const char *q)
{
	static const char *const hum[] = {"Who ", "Whose ", "Name the "};
	static const char *const loc[] = {"Where ",	      "What country ", "What city ",
					  "In what country ", "What river ",   "What mountain "};
	static const char *const num[] = {
	    "How many ", "How much ", "How tall ", "How far ",	 "How long ",
	    "How hot ",	 "How fast ", "When ",	   "What year ", "What is the population of "};
	static const char *const desc[] = {"Why ",
					   "How do ",
					   "How does ",
					   "How can ",
					   "What is the origin of ",
					   "What causes ",
					   "What is the meaning of ",
					   "What is the definition of "};
	if (ends(q, " stand for ?") || ends(q, " an acronym for ?") ||
	    starts(q, "What is the short form of ") || starts(q, "What is the full form of "))
		return 4;
	for (size_t i = 0; i < ARRAY_SIZE(hum); i++)
		if (starts(q, hum[i]))
			return 5;
	for (size_t i = 0; i < ARRAY_SIZE(loc); i++)
		if (starts(q, loc[i]))
			return 2;
	for (size_t i = 0; i < ARRAY_SIZE(num); i++)
		if (starts(q, num[i]))
			return 0;
	for (size_t i = 0; i < ARRAY_SIZE(desc); i++)
		if (starts(q, desc[i]))
			return 3;
	return 1;
}

#define MAXU 1000
#define DAYS 1096

/* A window parsed back: per line, the class, the user and the day. */
struct parsed {
	size_t lines;
	size_t n_users;
	unsigned ids[MAXU];
	size_t ul[MAXU][6]; /* instances per user and class */
	int first[MAXU][6], last[MAXU][6];
	size_t label[6];
	size_t day[DAYS];
	size_t user_lines[MAXU];
};

/* Days since 2022-01-01 of "Mon DD, YYYY", by timegm. */
static int day_of(const char *s)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	struct tm tm = {0}, t0 = {0};
	char mon[4];
	int d, y;
	const char *m;
	CHECK_MSG(sscanf(s, "%3s %d, %d", mon, &d, &y) == 3, "bad date '%.20s'", s);
	m = strstr(months, mon);
	CHECK(m && (m - months) % 3 == 0);
	tm.tm_year = y - 1900;
	tm.tm_mon = (int)(m - months) / 3;
	tm.tm_mday = d;
	t0.tm_year = 122;
	t0.tm_mday = 1;
	return (int)((timegm(&tm) - timegm(&t0)) / 86400);
}

static size_t user_index(struct parsed *w, unsigned id)
{
	for (size_t i = 0; i < w->n_users; i++)
		if (w->ids[i] == id)
			return i;
	CHECK(w->n_users < MAXU);
	w->ids[w->n_users] = id;
	return w->n_users++;
}

/* Parse a window: the header's count, one "Date: ... || User: ... ||
 * Instance: ..." line per instance, and the reminder's count. */
static struct parsed *parse_window(const char *text)
{
	struct parsed *w = xcalloc(1, sizeof(*w));
	char *copy = xstrdup(text), *save = NULL;
	size_t head = 0, tail = 0, tail2 = 0;
	CHECK(sscanf(text, "The following lines contain %zu general-knowledge questions", &head) ==
	      1);
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *u, *inst;
		unsigned id;
		size_t ui;
		int l, day;
		if (starts(line, "Recall: ")) {
			CHECK(sscanf(line, "Recall: the preceding lines contain %zu", &tail) == 1);
			CHECK(strstr(line, "across all "));
			CHECK(sscanf(strstr(line, "across all ") + 11, "%zu examples", &tail2) ==
			      1);
			continue;
		}
		if (!starts(line, "Date: "))
			continue;
		u = strstr(line, " || User: ");
		inst = strstr(line, " || Instance: ");
		CHECK(u && inst && inst > u);
		CHECK(sscanf(u, " || User: %u ||", &id) == 1);
		CHECK(id >= 10000 && id <= 99999);
		day = day_of(line + 6);
		CHECK(day >= 0 && day < DAYS);
		inst += 14;
		CHECK(ends(inst, " ?") || ends(inst, " ."));
		/* no label is ever named */
		CHECK(!strcasestr(inst, "abbreviation") && !strcasestr(inst, "human") &&
		      !strcasestr(inst, "location") && !strcasestr(inst, "entity") &&
		      !strcasestr(inst, "numeric") && !strcasestr(inst, "concept"));
		l = classify(inst);
		ui = user_index(w, id);
		if (w->ul[ui][l] == 0 || day < w->first[ui][l])
			w->first[ui][l] = day;
		if (w->ul[ui][l] == 0 || day > w->last[ui][l])
			w->last[ui][l] = day;
		w->ul[ui][l]++;
		w->user_lines[ui]++;
		w->label[l]++;
		w->day[day]++;
		w->lines++;
	}
	CHECK_INT(head, w->lines);
	CHECK_INT(tail, w->lines);
	CHECK_INT(tail2, w->lines);
	free(copy);
	return w;
}

static struct parsed *gen_window(const struct oolong_opts *o, char **text, size_t *len,
				 struct oolong_window **win)
{
	FILE *f = open_memstream(text, len);
	CHECK(f);
	CHECK_INT(bench_oolong_generate(o, f, win), 0);
	CHECK_INT(fclose(f), 0);
	CHECK_INT((*win)->bytes, *len);
	return parse_window(*text);
}

TEST(oolong_window_recounts)
{
	/* the hidden labels, users and days, recounted from the text by this
	 * test's own rule, are those the generator counted */
	for (uint64_t seed = 1; seed <= 12; seed++) {
		struct oolong_opts o = {seed < 6 ? 8000 : 40000, seed, seed == 3 ? 5 : 0};
		struct oolong_window *w;
		char *text;
		size_t len, present = 0;
		struct parsed *p = gen_window(&o, &text, &len, &w);
		CHECK_INT(p->lines, w->lines);
		for (int l = 0; l < 6; l++)
			CHECK_MSG(p->label[l] == w->label_count[l], "seed %llu, %s: %zu, want %zu",
				  (unsigned long long)seed, labels6[l], p->label[l],
				  w->label_count[l]);
		for (int d = 0; d < DAYS; d++)
			CHECK_INT(p->day[d], w->day_count[d]);
		for (int u = 0; u < w->n_users; u++) {
			size_t i;
			if (!w->user_lines[u])
				continue;
			present++;
			for (i = 0; i < p->n_users && p->ids[i] != w->user_id[u]; i++)
				;
			CHECK(i < p->n_users);
			CHECK_INT(p->user_lines[i], w->user_lines[u]);
			for (int l = 0; l < 6; l++) {
				CHECK_INT(p->ul[i][l], w->user_label[u][l]);
				if (p->ul[i][l]) {
					CHECK_INT(p->first[i][l], w->first_day[u][l]);
					CHECK_INT(p->last[i][l], w->last_day[u][l]);
				}
			}
		}
		CHECK_INT(present, p->n_users);
		CHECK_INT(w->n_users, o.users ? o.users : bench_oolong_default_users(o.tokens));
		for (int l = 0; l < 6; l++) /* every class turns up in 300+ lines */
			CHECK(w->label_count[l] > 0 || l == 4);
		free(p);
		free(text);
		bench_oolong_window_free(w);
	}
}

TEST(oolong_deterministic_and_sized)
{
	static const uint64_t sizes[] = {1000, 1234, 8000, 32768, 100000, 1000000};
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		for (uint64_t seed = 1; seed <= 2; seed++) {
			struct oolong_opts o = {sizes[i], seed, 0};
			struct oolong_window *w1, *w2;
			char *a, *b;
			size_t al, bl;
			FILE *f = open_memstream(&a, &al);
			CHECK_INT(bench_oolong_generate(&o, f, &w1), 0);
			fclose(f);
			f = open_memstream(&b, &bl);
			CHECK_INT(bench_oolong_generate(&o, f, &w2), 0);
			fclose(f);
			CHECK(al == bl && memcmp(a, b, al) == 0);
			/* at most the bytes, and short of them by less than a line */
			CHECK_MSG(al <= 4 * sizes[i] && al + 160 > 4 * sizes[i],
				  "%llu tokens: %zu bytes", (unsigned long long)sizes[i], al);
			free(b);
			bench_oolong_window_free(w2);
			o.seed += 100;
			f = open_memstream(&b, &bl);
			CHECK_INT(bench_oolong_generate(&o, f, &w2), 0);
			fclose(f);
			CHECK(al != bl || memcmp(a, b, al) != 0);
			free(a);
			free(b);
			bench_oolong_window_free(w1);
			bench_oolong_window_free(w2);
		}
	}
}

TEST(oolong_rejects_bad_opts)
{
	struct oolong_opts o = {8000, 1, 1};
	struct oolong_window *w = (struct oolong_window *)1;
	FILE *f = fopen("/dev/null", "w");
	CHECK_INT(bench_oolong_generate(&o, f, &w), -EINVAL); /* one user */
	CHECK(w == NULL);
	o.users = OOLONG_MAX_USERS + 1;
	CHECK_INT(bench_oolong_generate(&o, f, &w), -EINVAL);
	o.users = 0;
	o.tokens = 200; /* 800 bytes: not even the header */
	CHECK_INT(bench_oolong_generate(&o, f, &w), -EINVAL);
	fclose(f);
}

/* Run `rlm bench gen` (in-process) and return the JSONL's items. */
static cJSON **gen_items(const char *const *args, const char *jl, size_t *n)
{
	char *out, *err, *text, *save = NULL;
	size_t len;
	cJSON **items = NULL;
	CHECK_MSG(run_gen(args, &out, &err) == 0, "%s", err);
	text = slurp(jl, &len);
	*n = 0;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *j = json_parse(line, strlen(line));
		CHECK_MSG(j, "bad JSONL line: %.200s", line);
		items = xrealloc(items, (*n + 1) * sizeof(*items));
		items[(*n)++] = j;
	}
	free(text);
	free(out);
	free(err);
	return items;
}

static void free_items(cJSON **items, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cJSON_Delete(items[i]);
	free(items);
}

/* The fields every item has. */
static void check_common(const cJSON *j, const char *suite, const char *scorer, const char *dir)
{
	struct stat st;
	char *ctx;
	CHECK_STR(json_str(j, "suite"), suite);
	CHECK_STR(json_str(j, "scorer"), scorer);
	CHECK(json_str(j, "id") && starts(json_str(j, "id"), suite));
	CHECK(json_str(j, "question") && strlen(json_str(j, "question")) > 20);
	CHECK(cJSON_IsArray(json_get(j, "answer")));
	CHECK(json_int(j, "tokens", 0) >= 1000);
	CHECK(json_int(j, "bytes", 0) > 0);
	CHECK(json_str(j, "context_path") && json_str(j, "context_path")[0] != '/');
	ctx = xasprintf("%s/%s", dir, json_str(j, "context_path"));
	CHECK_MSG(stat(ctx, &st) == 0, "no context '%s'", ctx);
	free(ctx);
}

static const char *ans_str(const cJSON *j)
{
	const cJSON *a = cJSON_GetArrayItem(json_get(j, "answer"), 0);
	CHECK(cJSON_IsString(a));
	return a->valuestring;
}

static double ans_num(const cJSON *j)
{
	const cJSON *a = cJSON_GetArrayItem(json_get(j, "answer"), 0);
	CHECK(cJSON_IsNumber(a)); /* counts are JSON numbers */
	return a->valuedouble;
}

/* The index of the sole largest (most) or smallest non-zero of v[0..n) by
 * stride, -1 on a tie. */
static int sole(const size_t *v, size_t n, size_t stride, bool most)
{
	int best = -1;
	bool tie = false;
	for (size_t i = 0; i < n; i++) {
		size_t x = v[i * stride];
		if (!most && x == 0)
			continue;
		if (best < 0 ||
		    (most ? x > v[(size_t)best * stride] : x < v[(size_t)best * stride])) {
			best = (int)i;
			tie = false;
		} else if (x == v[(size_t)best * stride]) {
			tie = true;
		}
	}
	return tie ? -1 : best;
}

static int label_in(const char *s, const char *after)
{
	const char *p = strstr(s, after);
	CHECK_MSG(p, "no '%s' in '%s'", after, s);
	p += strlen(after);
	if (starts(p, "an "))
		p += 3;
	else if (starts(p, "a "))
		p += 2;
	for (int l = 5; l >= 0; l--) /* "human being" before a shorter match */
		if (starts(p, labels6[l]))
			return l;
	CHECK_MSG(0, "no label after '%s' in '%s'", after, s);
	return -1;
}

/* The gold of an oolong item, recomputed from its window, and its wording. */
static void check_oolong_item(const cJSON *j, const struct parsed *p)
{
	const char *task = json_str(j, "task"), *q = json_str(j, "question");
	char want[600], list[200] = "";
	size_t n = 0;
	for (int l = 0; l < 6; l++)
		if (p->label[l])
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", n ? ", " : "",
					      labels6[l]);
	CHECK_INT(json_int(j, "instances", 0), p->lines);
	CHECK_INT(json_int(j, "users", 0), p->n_users);
	for (int l = 0; l < 6; l++)
		CHECK_INT(json_int(json_get(j, "label_counts"), labels6[l], -1), p->label[l]);
	if (strcmp(task, "most_freq") == 0 || strcmp(task, "least_freq") == 0) {
		bool most = task[0] == 'm';
		int l = sole(p->label, 6, 1, most);
		CHECK(l >= 0);
		CHECK_STR(ans_str(j), labels6[l]);
		for (int k = 0; most && k < 6; k++) /* over 2% ahead of the next */
			CHECK(k == l ||
			      (double)(p->label[l] - p->label[k]) > 0.02 * (double)p->lines);
		snprintf(
		    want, sizeof(want),
		    "In the above data, which of the labels is the %s common? Give your final "
		    "answer in the form 'Label: answer' where answer is one of the labels: %s.",
		    most ? "most" : "least", list);
		CHECK_STR(q, want);
		CHECK_STR(json_str(j, "answer_type"), "LABEL");
	} else if (strcmp(task, "relative_freq") == 0) {
		int a = label_in(q, "is label '"), b = label_in(q, "same frequency as label '");
		size_t ca = p->label[a], cb = p->label[b];
		CHECK(a != b);
		CHECK_STR(ans_str(j), ca > cb	? "more common than"
				      : ca < cb ? "less common than"
						: "same frequency as");
		CHECK(ca == cb || fabs((double)ca - (double)cb) > 0.02 * (double)p->lines);
		snprintf(
		    want, sizeof(want),
		    "In the above data, is label '%s' more common, less common, or the same "
		    "frequency as label '%s'? Give your final answer in the form 'Answer: %s is "
		    "[X] %s', where [X] is 'more common than', 'less common than', or 'same "
		    "frequency as'.",
		    labels6[a], labels6[b], labels6[a], labels6[b]);
		CHECK_STR(q, want);
	} else if (strcmp(task, "numeric_one_class") == 0) {
		int l = label_in(q, "classified as label '");
		CHECK_INT(ans_num(j), p->label[l]);
		snprintf(want, sizeof(want),
			 "In the above data, how many data points should be classified as label "
			 "'%s'? Give your final answer in the form 'Answer: number'.",
			 labels6[l]);
		CHECK_STR(q, want);
		CHECK_STR(json_str(j, "answer_type"), "NUMERIC");
	} else if (strcmp(task, "most_user") == 0) {
		int u = sole(p->user_lines, p->n_users, 1, true);
		CHECK(u >= 0);
		snprintf(want, sizeof(want), "%u", p->ids[u]);
		CHECK_STR(ans_str(j), want);
		CHECK_STR(q, "In the above data, which user is represented most often? Give your "
			     "final answer in the form 'User: [X]', where [X] is the user ID.");
	} else if (strcmp(task, "user_label") == 0) {
		int l = label_in(q, "instances with the label "), u;
		u = sole(&p->ul[0][l], p->n_users, 6, true);
		CHECK(u >= 0);
		snprintf(want, sizeof(want), "%u", p->ids[u]);
		CHECK_STR(ans_str(j), want);
		snprintf(
		    want, sizeof(want),
		    "In the above data, which user has the most instances with the label %s? "
		    "Give your final answer in the form 'User: [X]', where [X] is the user ID.",
		    labels6[l]);
		CHECK_STR(q, want);
	} else if (strcmp(task, "most_date") == 0) {
		int d = sole(p->day, DAYS, 1, true);
		struct tm tm = {0};
		time_t t;
		CHECK(d >= 0);
		tm.tm_year = 122;
		tm.tm_mday = 1 + d; /* timegm normalizes */
		t = timegm(&tm);
		gmtime_r(&t, &tm);
		snprintf(want, sizeof(want), "%02d/%02d/%d", tm.tm_mon + 1, tm.tm_mday,
			 tm.tm_year + 1900);
		CHECK_STR(ans_str(j), want);
		CHECK_STR(q, "In the above data, which date is represented most often? Give your "
			     "final answer in the form 'Date: [X]', where [X] is the date in the "
			     "format MM/DD/YYYY.");
		CHECK_STR(json_str(j, "answer_type"), "DATE");
	} else {
		size_t k, top[4] = {0}, dates = 0;
		CHECK_STR(task, "date_n_times");
		CHECK(sscanf(q, "In the above data, how many dates are represented exactly %zu",
			     &k) == 1);
		for (int d = 0; d < DAYS; d++) { /* k: the fourth largest count */
			size_t c = p->day[d];
			for (int i = 0; i < 4; i++)
				if (c > top[i]) {
					memmove(top + i + 1, top + i,
						(3 - (size_t)i) * sizeof(size_t));
					top[i] = c;
					break;
				}
		}
		CHECK_INT(k, top[3]);
		for (int d = 0; d < DAYS; d++)
			dates += p->day[d] == k;
		CHECK_INT(ans_num(j), dates);
		CHECK_STR(json_str(j, "task_group"), "timeline");
	}
}

TEST(cli_oolong_gold_recomputed)
{
	static const char *const tasks[] = {"most_freq",	 "least_freq",	 "relative_freq",
					    "numeric_one_class", "most_user",	 "user_label",
					    "most_date",	 "date_n_times", "any"};
	for (size_t t = 0; t < ARRAY_SIZE(tasks); t++) {
		char *dir = xasprintf("%s/o%zu", harness_tmpdir(), t),
		     *jl = xasprintf("%s/oolong.jsonl", dir);
		const char *args[] = {"oolong", "--sizes", "8k,20k", "--n",   "3", "--seed",
				      "9",	"--task",  tasks[t], "--out", dir, NULL};
		size_t n;
		cJSON **items = gen_items(args, jl, &n);
		CHECK_INT(n, 6);
		for (size_t i = 0; i < n; i++) {
			char *ctx, *text;
			size_t len;
			struct parsed *p;
			check_common(items[i], "oolong", "oolong", dir);
			CHECK_STR(json_str(items[i], "dataset"), "trec_coarse");
			if (t < 8)
				CHECK_STR(json_str(items[i], "task"), tasks[t]);
			ctx = xasprintf("%s/%s", dir, json_str(items[i], "context_path"));
			text = slurp(ctx, &len);
			p = parse_window(text);
			CHECK_INT(json_int(items[i], "bytes", 0), len);
			check_oolong_item(items[i], p);
			free(p);
			free(text);
			free(ctx);
		}
		free_items(items, n);
		free(jl);
		free(dir);
	}
}

/* ---- oolong-pairs: the predicate parsed from the question ---- */

struct atom_t {
	int label, n;
	bool exactly;
};

/* Parse "at least one instance with L and exactly two instances with M"
 * up to end into a. Returns the atoms. */
static int parse_conj(const char *s, const char *end, struct atom_t *a)
{
	int n = 0;
	while (s < end) {
		const char *at = strstr(s, "at least "), *ex = strstr(s, "exactly "), *p;
		bool exactly;
		if ((!at || at >= end) && (!ex || ex >= end))
			break;
		exactly = ex && ex < end && (!at || at >= end || ex < at);
		p = exactly ? ex + 8 : at + 9;
		CHECK(n < 3);
		a[n].exactly = exactly;
		a[n].n = starts(p, "one ") ? 1 : starts(p, "two ") ? 2 : 0;
		CHECK(a[n].n);
		a[n].label = label_in(p, a[n].n == 1 ? "instance with " : "instances with ");
		s = strstr(p, labels6[a[n].label]) + strlen(labels6[a[n].label]);
		n++;
	}
	CHECK(n >= 1);
	return n;
}

static bool conj_ok(const struct parsed *p, size_t u, const struct atom_t *a, int n)
{
	for (int i = 0; i < n; i++) {
		size_t k = p->ul[u][a[i].label];
		if (a[i].exactly ? k != (size_t)a[i].n : k < (size_t)a[i].n)
			return false;
	}
	return true;
}

static const char pairs_suffix[] =
    ". Each of the questions can be labelled as one of the labels (the data does not provide "
    "the labels, you need to figure out the label from the semantics of the question): "
    "description and abstract concept, entity, human being, numeric value, location, "
    "abbreviation. In your answer, list all pairs in the format (user_id_1, user_id_2), "
    "separated by newlines. If no pair qualifies, answer [].";

static const char pairs_prefix[] = "In the above data, list all pairs of user IDs (no duplicate "
				   "pairs, list lower ID first) ";

/* The gold pairs of an oolong-pairs item, recomputed from its window. */
static void check_pairs_item(const cJSON *j, const struct parsed *p)
{
	const char *q = json_str(j, "question"), *body;
	const cJSON *ans = json_get(j, "answer");
	bool s1[MAXU] = {false}, s2[MAXU] = {false};
	size_t want = 0, got = (size_t)cJSON_GetArraySize(ans);
	unsigned prev[2] = {0, 0};
	CHECK(starts(q, pairs_prefix));
	CHECK(ends(q, pairs_suffix));
	body = q + strlen(pairs_prefix);
	if (strcmp(json_str(j, "task"), "symmetric") == 0) {
		int a, b, dl = -1, cut = 0;
		bool after = false;
		const char *date = strstr(body, "for both users must be ");
		CHECK(starts(body, "where both users have at least one instance with "));
		a = label_in(body, "instance with ");
		b = label_in(body, " or ");
		if (date) {
			char mon[16];
			int d, y;
			struct tm tm = {0}, t0 = {0};
			static const char *const months[] = {
			    "January", "February", "March",	"April",   "May",      "June",
			    "July",    "August",   "September", "October", "November", "December"};
			dl = label_in(body, "all instances that are ");
			CHECK(dl == a || dl == b);
			date += strlen("for both users must be ");
			after = starts(date, "after ");
			CHECK(after || starts(date, "before "));
			CHECK(sscanf(strchr(date, ' ') + 1, "%15s %d, %d", mon, &d, &y) == 3);
			for (int m = 0; m < 12; m++)
				if (strcmp(mon, months[m]) == 0)
					tm.tm_mon = m, tm.tm_year = y - 1900, tm.tm_mday = d;
			CHECK(tm.tm_mday);
			t0.tm_year = 122;
			t0.tm_mday = 1;
			cut = (int)((timegm(&tm) - timegm(&t0)) / 86400);
		}
		for (size_t u = 0; u < p->n_users; u++) {
			s1[u] = p->ul[u][a] + p->ul[u][b] > 0;
			if (s1[u] && dl >= 0 && p->ul[u][dl])
				s1[u] = after ? p->first[u][dl] > cut : p->last[u][dl] < cut;
			s2[u] = s1[u];
		}
	} else {
		const char *mid = strstr(body, ", and the other user has ");
		struct atom_t c1[3], c2[3];
		int n1, n2;
		CHECK_STR(json_str(j, "task"), "asymmetric");
		CHECK(starts(body, "such that one user has ") && mid);
		n1 = parse_conj(body, mid, c1);
		n2 = parse_conj(mid, q + strlen(q), c2);
		for (size_t u = 0; u < p->n_users; u++) {
			s1[u] = conj_ok(p, u, c1, n1);
			s2[u] = conj_ok(p, u, c2, n2);
		}
	}
	for (size_t u = 0; u < p->n_users; u++)
		for (size_t v = u + 1; v < p->n_users; v++)
			want += (s1[u] && s2[v]) || (s1[v] && s2[u]);
	CHECK_INT(got, want);
	CHECK_INT(json_int(j, "pairs", -1), want);
	for (size_t i = 0; i < got; i++) {
		const char *s = cJSON_GetArrayItem(ans, (int)i)->valuestring;
		unsigned a, b;
		size_t ua, ub;
		CHECK(s && sscanf(s, "%u,%u", &a, &b) == 2);
		CHECK(a < b);					     /* lower ID first */
		CHECK(a > prev[0] || (a == prev[0] && b > prev[1])); /* sorted, no duplicate */
		prev[0] = a;
		prev[1] = b;
		for (ua = 0; ua < p->n_users && p->ids[ua] != a; ua++)
			;
		for (ub = 0; ub < p->n_users && p->ids[ub] != b; ub++)
			;
		CHECK(ua < p->n_users && ub < p->n_users);
		CHECK((s1[ua] && s2[ub]) || (s1[ub] && s2[ua]));
	}
}

TEST(cli_pairs_gold_recomputed)
{
	static const char *const kinds[] = {"symmetric", "asymmetric"};
	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		char *dir = xasprintf("%s/p%zu", harness_tmpdir(), k),
		     *jl = xasprintf("%s/oolong-pairs.jsonl", dir);
		const char *args[] = {
		    "oolong-pairs", "--sizes", "8k,32k", "--n", "8", "--seed", "4",
		    "--task",	    kinds[k],  "--out",	 dir,	NULL};
		size_t n, nonempty = 0;
		cJSON **items = gen_items(args, jl, &n);
		CHECK_INT(n, 16);
		for (size_t i = 0; i < n; i++) {
			char *ctx = xasprintf("%s/%s", dir, json_str(items[i], "context_path"));
			size_t len;
			char *text = slurp(ctx, &len);
			struct parsed *p = parse_window(text);
			check_common(items[i], "oolong-pairs", "set_f1", dir);
			CHECK_STR(json_str(items[i], "task"), kinds[k]);
			CHECK_INT(json_int(items[i], "users", 0), p->n_users);
			check_pairs_item(items[i], p);
			nonempty += cJSON_GetArraySize(json_get(items[i], "answer")) > 0;
			free(p);
			free(text);
			free(ctx);
		}
		CHECK(nonempty >= 12); /* predicates with a gold are preferred */
		free_items(items, n);
		free(jl);
		free(dir);
	}
}

/* oolong and oolong-pairs read the same windows; --users sets the pool. */
TEST(cli_pairs_share_oolong_windows)
{
	char *dir = xasprintf("%s/same", harness_tmpdir()), *a, *b, *jl;
	const char *a1[] = {"oolong",  "--sizes", "8k",	   "--n", "2",
			    "--users", "12",	  "--out", dir,	  NULL};
	const char *a2[] = {"oolong-pairs", "--sizes", "8k",	"--n", "2",
			    "--users",	    "12",      "--out", dir,   NULL};
	size_t al, bl, n;
	cJSON **items;
	char *out, *err;
	CHECK_INT(run_gen(a1, &out, &err), 0);
	free(out);
	free(err);
	jl = xasprintf("%s/oolong-pairs.jsonl", dir);
	items = gen_items(a2, jl, &n);
	CHECK_INT(n, 2);
	for (int i = 0; i < 2; i++) {
		char *pa = xasprintf("%s/oolong-8k-%d.txt", dir, i),
		     *pb = xasprintf("%s/oolong-pairs-8k-%d.txt", dir, i);
		struct parsed *p;
		a = slurp(pa, &al);
		b = slurp(pb, &bl);
		CHECK(al == bl && memcmp(a, b, al) == 0);
		p = parse_window(a);
		CHECK(p->n_users <= 12);
		CHECK_INT(json_int(items[i], "user_pool", 0), 12);
		free(p);
		free(a);
		free(b);
		free(pa);
		free(pb);
	}
	free_items(items, n);
	free(jl);
	free(dir);
}

/* ---- browse ---- */

/* Occurrences of w in s[0..n) as a whole word, ignoring case. */
static size_t count_word(const char *s, size_t n, const char *w)
{
	size_t k = strlen(w), c = 0;
	for (size_t i = 0; i + k <= n; i++) {
		if (strncasecmp(s + i, w, k) != 0)
			continue;
		if ((i == 0 || !isalnum((unsigned char)s[i - 1])) &&
		    (i + k == n || !isalnum((unsigned char)s[i + k])))
			c++;
	}
	return c;
}

static void check_browse_item(const cJSON *j, const char *dir)
{
	struct corpus *c = NULL;
	struct rlm_err e = {0, ""};
	char *ctx = xasprintf("%s/%s", dir, json_str(j, "context_path"));
	const char *fa = json_str(j, "fact_a"), *fb = json_str(j, "fact_b"),
		   *bridge = json_str(j, "bridge_entity"), *subject = json_str(j, "subject");
	size_t bd = (size_t)json_int(j, "bridge_doc", -1),
	       ad = (size_t)json_int(j, "answer_doc", -1), td = (size_t)json_int(j, "trap_doc", -1),
	       fao = (size_t)json_int(j, "fact_a_offset", -1),
	       fbo = (size_t)json_int(j, "fact_b_offset", -1), same = 0, lines = 0;
	const cJSON *ans = json_get(j, "answer"), *dups = json_get(j, "near_duplicate_docs");
	size_t d1, d2;
	check_common(j, "browse", "exact", dir);
	CHECK_MSG(corpus_load(ctx, NULL, &c, &e) == 0, "%s", e.msg);
	CHECK_INT(c->n_docs, json_int(j, "documents", 0));
	CHECK_INT(c->len, json_int(j, "bytes", 0));
	CHECK(fa && fb && bridge && subject);
	CHECK(bd < c->n_docs && ad < c->n_docs && td < c->n_docs && bd != ad);
	/* the facts, exactly where stated */
	CHECK(fao + strlen(fa) <= c->docs[bd].len);
	CHECK_MSG(memcmp(c->buf + c->docs[bd].off + fao, fa, strlen(fa)) == 0, "fact A not at %zu",
		  fao);
	CHECK(fbo + strlen(fb) <= c->docs[ad].len);
	CHECK_MSG(memcmp(c->buf + c->docs[ad].off + fbo, fb, strlen(fb)) == 0, "fact B not at %zu",
		  fbo);
	/* fact A names the subject and B; fact B is about B and holds the answer */
	CHECK(strstr(fa, subject) && strstr(fa, bridge));
	CHECK(strstr(fb, bridge));
	CHECK(strstr(json_str(j, "question"), subject));
	CHECK(!strstr(json_str(j, "question"), bridge));
	CHECK(cJSON_GetArraySize(ans) >= 1);
	for (int i = 0; i < cJSON_GetArraySize(ans); i++) {
		const char *a = cJSON_GetArrayItem(ans, i)->valuestring;
		CHECK(!strstr(json_str(j, "question"), a));
		if (i == 0 || strcmp(json_str(j, "chain"), "architect") == 0)
			CHECK_MSG(strstr(fb, a), "'%s' not in fact B", a);
		/* the answer and its aliases: in the answer document only */
		for (size_t d = 0; d < c->n_docs; d++) {
			size_t k = count_word(c->buf + c->docs[d].off, c->docs[d].len, a);
			if (d == ad)
				CHECK_MSG(k >= 1 || i > 0, "'%s' not in its document", a);
			else
				CHECK_MSG(k == 0, "'%s' in document %zu too", a, d);
		}
	}
	/* B: in the bridge, answer and trap documents only; the subject in the
	 * bridge document only */
	for (size_t d = 0; d < c->n_docs; d++) {
		size_t kb = count_word(c->buf + c->docs[d].off, c->docs[d].len, bridge),
		       ks = count_word(c->buf + c->docs[d].off, c->docs[d].len, subject);
		CHECK_MSG((kb > 0) == (d == bd || d == ad || d == td), "B in document %zu: %zu", d,
			  kb);
		CHECK_MSG((ks > 0) == (d == bd), "the subject in document %zu: %zu", d, ks);
	}
	/* near-duplicates: mostly the same lines as the bridge document */
	CHECK_INT(cJSON_GetArraySize(dups), 2);
	d1 = (size_t)cJSON_GetArrayItem(dups, 0)->valueint;
	d2 = (size_t)cJSON_GetArrayItem(dups, 1)->valueint;
	CHECK(d1 < c->n_docs && d2 < c->n_docs && d1 != bd && d2 != ad && d1 != d2);
	{
		char *x = xstrndup(c->buf + c->docs[bd].off, c->docs[bd].len),
		     *y = xstrndup(c->buf + c->docs[d1].off, c->docs[d1].len), *sx = NULL,
		     *sy = NULL;
		for (char *lx = strtok_r(x, "\n", &sx), *ly = strtok_r(y, "\n", &sy); lx && ly;
		     lx = strtok_r(NULL, "\n", &sx), ly = strtok_r(NULL, "\n", &sy), lines++)
			same += strcmp(lx, ly) == 0;
		/* all but the title, the opening, fact A's and the last paragraph
		 * (and, rarely, one more where the end moved fact A up) */
		CHECK_MSG(same + 5 >= lines && same < lines, "%zu of %zu lines alike", same, lines);
		free(x);
		free(y);
	}
	corpus_free(c);
	free(ctx);
}

TEST(cli_browse_bridge_facts)
{
	static const char *const fmts[] = {"jsonl", "dir"};
	for (size_t f = 0; f < ARRAY_SIZE(fmts); f++) {
		char *dir = xasprintf("%s/b%zu", harness_tmpdir(), f),
		     *jl = xasprintf("%s/browse.jsonl", dir);
		const char *args[] = {"browse", "--sizes",  "8k,40k", "--n",   "6", "--seed",
				      "3",	"--format", fmts[f],  "--out", dir, NULL};
		size_t n;
		bool chains[4] = {false};
		cJSON **items = gen_items(args, jl, &n);
		CHECK_INT(n, 12);
		for (size_t i = 0; i < n; i++) {
			const char *ch = json_str(items[i], "chain");
			int64_t tokens = json_int(items[i], "tokens", 0),
				bytes = json_int(items[i], "bytes", 0);
			CHECK_STR(json_str(items[i], "format"), fmts[f]);
			CHECK_INT(json_int(items[i], "documents", 0),
				  tokens / 1000 < 10 ? 10 : tokens / 1000);
			CHECK(bytes <= 4 * tokens && bytes + 40 > 4 * tokens);
			check_browse_item(items[i], dir);
			chains[0] |= strcmp(ch, "architect") == 0;
			chains[1] |= strcmp(ch, "founder") == 0;
			chains[2] |= strcmp(ch, "captain") == 0;
			chains[3] |= strcmp(ch, "author") == 0;
		}
		CHECK(chains[0] + chains[1] + chains[2] + chains[3] >= 3);
		free_items(items, n);
		free(jl);
		free(dir);
	}
}

TEST(browse_deterministic_many_seeds)
{
	for (uint64_t seed = 0; seed < 40; seed++) {
		struct browse_opts o = {6000 + seed * 100, seed, seed % 3 ? 0 : 5 + seed % 7};
		struct browse_item a, b;
		char *p1 = xasprintf("%s/x%llu.jsonl", harness_tmpdir(), (unsigned long long)seed),
		     *p2 = xasprintf("%s/y%llu.jsonl", harness_tmpdir(), (unsigned long long)seed);
		char *t1, *t2;
		size_t l1, l2;
		cJSON *j = cJSON_CreateObject(), *ans = cJSON_CreateArray(),
		      *dups = cJSON_CreateArray();
		CHECK_INT(bench_browse_write(&o, SNIAH_JSONL, p1, &a), 0);
		CHECK_INT(bench_browse_write(&o, SNIAH_JSONL, p2, &b), 0);
		t1 = slurp(p1, &l1);
		t2 = slurp(p2, &l2);
		CHECK(l1 == l2 && memcmp(t1, t2, l1) == 0);
		CHECK_STR(a.question, b.question);
		/* the same checks as the CLI's items, on many more draws */
		json_add_str(j, "id", "browse-x");
		json_add_str(j, "suite", "browse");
		json_add_str(j, "question", a.question);
		for (int i = 0; i < a.n_answers; i++)
			json_add_str(ans, NULL, a.answers[i]);
		json_add(j, "answer", ans);
		json_add_str(j, "context_path", strrchr(p1, '/') + 1);
		json_add_str(j, "scorer", "exact");
		json_add_num(j, "tokens", (double)o.tokens);
		json_add_num(j, "bytes", (double)a.bytes);
		json_add_num(j, "documents", (double)a.n_docs);
		json_add_str(j, "chain", a.chain);
		json_add_str(j, "subject", a.subject);
		json_add_str(j, "bridge_entity", a.bridge);
		json_add_num(j, "bridge_doc", (double)a.bridge_doc);
		json_add_num(j, "answer_doc", (double)a.answer_doc);
		json_add_num(j, "trap_doc", (double)a.trap_doc);
		json_add_str(j, "fact_a", a.fact_a);
		json_add_str(j, "fact_b", a.fact_b);
		json_add_num(j, "fact_a_offset", (double)a.fact_a_off);
		json_add_num(j, "fact_b_offset", (double)a.fact_b_off);
		json_add_num(dups, NULL, (double)a.dup_docs[0]);
		json_add_num(dups, NULL, (double)a.dup_docs[1]);
		json_add(j, "near_duplicate_docs", dups);
		check_browse_item(j, harness_tmpdir());
		cJSON_Delete(j);
		free(t1);
		free(t2);
		free(p1);
		free(p2);
	}
}

TEST(browse_rejects_bad_opts)
{
	struct browse_opts o = {8000, 1, 4};
	struct browse_item it;
	char *p = xasprintf("%s/bad.jsonl", harness_tmpdir());
	CHECK_INT(bench_browse_write(&o, SNIAH_JSONL, p, &it), -EINVAL); /* 4 documents */
	o.docs = 33; /* 32,000 bytes: 969 a document */
	CHECK_INT(bench_browse_write(&o, SNIAH_JSONL, p, &it), -EINVAL);
	o.docs = 32;
	CHECK_INT(bench_browse_write(&o, SNIAH_TEXT, p, &it), -EINVAL);
	CHECK_INT(bench_browse_write(&o, SNIAH_JSONL, p, &it), 0);
	CHECK_INT(bench_browse_default_docs(1000), 0);
	CHECK_INT(bench_browse_default_docs(8000), 10);
	CHECK_INT(bench_browse_default_docs(128000), 128);
	CHECK_INT(bench_browse_default_docs(10000000), 1000);
	free(p);
}

/* ---- which-doc ---- */

/* An item of which-doc against its corpus as rlm loads it: the answer is
 * the id of document answer_doc, which holds the fact; the phrase, the
 * code and the fact's rarest words are in no other document; the near
 * misses are where stated; the question names the fact as its ask says. */
static void check_which_item(const cJSON *j, const char *dir)
{
	struct corpus *c = NULL;
	struct rlm_err e = {0, ""};
	char *ctx = xasprintf("%s/%s", dir, json_str(j, "context_path"));
	const char *fact = json_str(j, "fact"), *phrase = json_str(j, "phrase"),
		   *code = json_str(j, "code"), *q = json_str(j, "question"),
		   *ask = json_str(j, "ask");
	const cJSON *ans = json_get(j, "answer"), *near = json_get(j, "near_miss_docs");
	size_t ad = (size_t)json_int(j, "answer_doc", -1), n1, n2;
	char code_head[4];
	check_common(j, "which-doc", "exact", dir);
	CHECK_MSG(corpus_load(ctx, NULL, &c, &e) == 0, "%s", e.msg);
	CHECK_INT(c->n_docs, json_int(j, "documents", 0));
	CHECK_INT(c->len, json_int(j, "bytes", 0));
	CHECK(fact && phrase && code && q && ask && ad < c->n_docs);
	CHECK(strstr(fact, phrase) && strstr(fact, code));
	/* the gold: one id, that of the document with the fact, found by it */
	CHECK_INT(cJSON_GetArraySize(ans), 1);
	CHECK_STR(cJSON_GetArrayItem(ans, 0)->valuestring, c->docs[ad].id);
	CHECK_INT(corpus_doc_find(c, c->docs[ad].id, strlen(c->docs[ad].id)), (int)ad);
	CHECK(memmem(c->buf + c->docs[ad].off, c->docs[ad].len, fact, strlen(fact)));
	/* ids of the corpus's own: not the index */
	CHECK(strcmp(c->docs[ad].id, json_str(j, "id")) != 0);
	CHECK_MSG(strchr(c->docs[ad].id, '/') || !strncmp(c->docs[ad].id, "rec-", 4), "id '%s'",
		  c->docs[ad].id);
	/* the phrase and the code: in that document only; the near misses
	 * share the code's letters and one word of the phrase */
	CHECK_INT(cJSON_GetArraySize(near), 2);
	n1 = (size_t)cJSON_GetArrayItem(near, 0)->valueint;
	n2 = (size_t)cJSON_GetArrayItem(near, 1)->valueint;
	CHECK(n1 < c->n_docs && n2 < c->n_docs && n1 != ad && n2 != ad && n1 != n2);
	memcpy(code_head, code, 3);
	code_head[3] = '\0';
	for (size_t d = 0; d < c->n_docs; d++) {
		const char *t = c->buf + c->docs[d].off;
		size_t n = c->docs[d].len;
		CHECK_INT(count_word(t, n, phrase), d == ad);
		CHECK_INT(count_word(t, n, code), d == ad);
		CHECK_MSG((memmem(t, n, code_head, 3) != NULL) == (d == ad || d == n1 || d == n2),
			  "the code's letters in document %zu", d);
	}
	/* the question */
	if (!strcmp(ask, "quoted")) {
		char *quoted = xasprintf("\"%s\"", phrase);
		CHECK_CONTAINS(q, quoted);
		free(quoted);
	} else if (!strcmp(ask, "code")) {
		CHECK_CONTAINS(q, code);
		CHECK(!strstr(q, phrase));
	} else {
		CHECK_STR(ask, "plain");
		CHECK_CONTAINS(q, phrase);
		CHECK(!strstr(q, "\"") && !strstr(q, code));
	}
	CHECK(!strstr(q, c->docs[ad].id));
	corpus_free(c);
	free(ctx);
}

TEST(cli_which_doc_items)
{
	static const char *const fmts[] = {"jsonl", "dir"};
	for (size_t f = 0; f < ARRAY_SIZE(fmts); f++) {
		char *dir = xasprintf("%s/w%zu", harness_tmpdir(), f),
		     *jl = xasprintf("%s/which-doc.jsonl", dir), *first = NULL;
		const char *args[] = {"which-doc", "--sizes",  "8k,40k", "--n",   "6", "--seed",
				      "4",	   "--format", fmts[f],  "--out", dir, NULL};
		size_t n;
		bool asks[3] = {false};
		cJSON **items = gen_items(args, jl, &n);
		CHECK_INT(n, 12);
		for (size_t i = 0; i < n; i++) {
			const char *ask = json_str(items[i], "ask");
			int64_t tokens = json_int(items[i], "tokens", 0),
				bytes = json_int(items[i], "bytes", 0);
			CHECK_STR(json_str(items[i], "format"), fmts[f]);
			CHECK_INT(json_int(items[i], "documents", 0),
				  tokens / 1000 < 10 ? 10 : tokens / 1000);
			/* the size asked, within a word a document */
			CHECK_MSG(bytes <= 4 * tokens && bytes + 16 * json_int(items[i], "documents", 0) > 4 * tokens,
				  "%lld bytes for %lld tokens", (long long)bytes, (long long)tokens);
			check_which_item(items[i], dir);
			asks[0] |= strcmp(ask, "quoted") == 0;
			asks[1] |= strcmp(ask, "code") == 0;
			asks[2] |= strcmp(ask, "plain") == 0;
		}
		CHECK(asks[0] && asks[1] && asks[2]);
		/* deterministic: the same run again gives the same bytes */
		{
			size_t len, m, k;
			cJSON **again_items;
			char *again;
			first = slurp(jl, &len);
			again_items = gen_items(args, jl, &k);
			again = slurp(jl, &m);
			CHECK_INT(k, n);
			CHECK_STR(again, first);
			free_items(again_items, k);
			free(again);
		}
		free(first);
		free_items(items, n);
		free(jl);
		free(dir);
	}
}

TEST(which_doc_deterministic_many_seeds)
{
	for (uint64_t seed = 0; seed < 30; seed++) {
		struct browse_opts o = {6000 + seed * 300, seed, seed % 3 ? 0 : 5 + seed % 7};
		struct which_item a, b;
		char *p1 = xasprintf("%s/wx%llu.jsonl", harness_tmpdir(), (unsigned long long)seed),
		     *p2 = xasprintf("%s/wy%llu.jsonl", harness_tmpdir(), (unsigned long long)seed);
		char *t1, *t2;
		size_t l1, l2;
		CHECK_INT(bench_which_write(&o, SNIAH_JSONL, p1, &a), 0);
		CHECK_INT(bench_which_write(&o, SNIAH_JSONL, p2, &b), 0);
		t1 = slurp(p1, &l1);
		t2 = slurp(p2, &l2);
		CHECK(l1 == l2 && memcmp(t1, t2, l1) == 0);
		CHECK_STR(a.question, b.question);
		CHECK_STR(a.answer, b.answer);
		CHECK_INT(a.bytes, l1 - (l1 - a.bytes)); /* filled */
		CHECK(a.answer_doc < a.n_docs && strlen(a.answer) == 10);
		CHECK(!strncmp(a.answer, "rec-", 4));
		CHECK(memmem(t1, l1, a.answer, strlen(a.answer)));
		free(t1);
		free(t2);
		free(p1);
		free(p2);
	}
	{
		struct browse_opts o = {8000, 1, 4};
		struct which_item it;
		char *p = xasprintf("%s/wbad.jsonl", harness_tmpdir());
		CHECK_INT(bench_which_write(&o, SNIAH_JSONL, p, &it), -EINVAL); /* 4 documents */
		o.docs = 70; /* 457 bytes a document */
		CHECK_INT(bench_which_write(&o, SNIAH_JSONL, p, &it), -EINVAL);
		o.docs = 10;
		CHECK_INT(bench_which_write(&o, SNIAH_TEXT, p, &it), -EINVAL);
		CHECK_INT(bench_which_write(&o, SNIAH_JSONL, p, &it), 0);
		free(p);
	}
}

TEST(gen_suites_10m_tokens_fast)
{
	struct oolong_opts oo = {10000000, 5, 0};
	struct browse_opts bo = {10000000, 5, 0};
	struct oolong_window *w;
	struct browse_item it;
	char *p = xasprintf("%s/big-oolong.txt", harness_tmpdir()),
	     *q = xasprintf("%s/big-browse.jsonl", harness_tmpdir());
	FILE *f = fopen(p, "wb");
	int64_t t0 = time_now_ns();
	double ms[2];
	struct stat st;
	CHECK_INT(bench_oolong_generate(&oo, f, &w), 0);
	CHECK_INT(fclose(f), 0);
	ms[0] = (double)(time_now_ns() - t0) / 1e6;
	t0 = time_now_ns();
	CHECK_INT(bench_browse_write(&bo, SNIAH_JSONL, q, &it), 0);
	ms[1] = (double)(time_now_ns() - t0) / 1e6;
	printf(
	    "     10M tokens: oolong window in %.0f ms (%zu instances), browse corpus in %.0f ms "
	    "(%zu documents)\n",
	    ms[0], w->lines, ms[1], it.n_docs);
	CHECK_INT(stat(p, &st), 0);
	CHECK_INT(st.st_size, w->bytes);
	CHECK(w->bytes <= 40000000 && w->bytes > 40000000 - 160);
	CHECK(it.bytes <= 40000000 && it.bytes > 40000000 - 40);
	CHECK_INT(it.n_docs, 1000);
	CHECK(ms[0] < 60000 && ms[1] < 60000);
	bench_oolong_window_free(w);
	free(p);
	free(q);
}

TEST(cli_suites_bad_options_exit_2)
{
	static const struct {
		const char *args[12];
		const char *msg;
	} cases[] = {
	    {{"oolong", "--out", "D", "--values", "2", NULL},
	     "--values is for sniah only, not oolong"},
	    {{"browse", "--out", "D", "--haystack", "noise", NULL},
	     "--haystack is for sniah only, not browse"},
	    {{"oolong-pairs", "--out", "D", "--utf8", NULL}, "--utf8 is for sniah only"},
	    {{"oolong", "--out", "D", "--format", "dir", NULL},
	     "--format dir does not fit oolong: a window is one text file"},
	    {{"oolong-pairs", "--out", "D", "--format", "jsonl", NULL},
	     "--format jsonl does not fit oolong-pairs"},
	    {{"oolong", "--out", "D", "--docs", "9", NULL},
	     "--docs is for sniah, browse and which-doc, not oolong"},
	    {{"oolong", "--out", "D", "--users", "1", NULL},
	     "bad value '1' for --users: want 2..1000"},
	    {{"oolong", "--out", "D", "--users", "1001", NULL}, "bad value '1001' for --users"},
	    {{"oolong", "--out", "D", "--task", "symmetric", NULL},
	     "unknown --task 'symmetric' for oolong (known: most_freq"},
	    {{"oolong-pairs", "--out", "D", "--task", "most_freq", NULL},
	     "unknown --task 'most_freq' for oolong-pairs (known: symmetric, asymmetric, any)"},
	    {{"browse", "--out", "D", "--users", "5", NULL},
	     "--users is for oolong and oolong-pairs, not browse"},
	    {{"sniah", "--out", "D", "--task", "any", NULL},
	     "--task is for oolong and oolong-pairs, not sniah"},
	    {{"browse", "--out", "D", "--format", "text", NULL},
	     "--format text does not fit browse: its documents go in a directory (dir) or a "
	     "JSONL file (jsonl)"},
	    {{"browse", "--out", "D", "--docs", "4", NULL},
	     "bad value '4' for --docs: browse needs at least 5 documents"},
	    {{"browse", "--out", "D", "--sizes", "1k", NULL},
	     "size '1k' is too small for browse: its 5 documents (the fewest it makes) of at "
	     "least 1000 bytes need 1250 tokens; pass --sizes 1250 or more"},
	    {{"browse", "--out", "D", "--sizes", "8k", "--docs", "40", NULL},
	     "size '8k' is too small for browse with --docs 40: 40 documents of at least 1000 "
	     "bytes need 10000 tokens; pass --sizes 10000 or more, or fewer --docs"},
	    {{"oolong", "--out", "D", "--sizes", "0.2k", NULL}, "bad size '0.2k'"},
	};
	char *cwd = getcwd(NULL, 0);
	CHECK_INT(chdir(harness_tmpdir()), 0);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *out, *err;
		int status = run_gen(cases[i].args, &out, &err);
		CHECK_MSG(status == 2, "case %zu: status %d: %s", i, status, err);
		CHECK_CONTAINS(err, "rlm: error: ");
		CHECK_CONTAINS(err, cases[i].msg);
		CHECK_STR(out, "");
		free(out);
		free(err);
	}
	CHECK_INT(chdir(cwd), 0);
	free(cwd);
}

TEST(cli_help_names_every_suite)
{
	const char *args[] = {"--help", NULL};
	char *out, *err;
	CHECK_INT(run_gen(args, &out, &err), 0);
	CHECK_CONTAINS(out, "  sniah ");
	CHECK_CONTAINS(out, "  oolong ");
	CHECK_CONTAINS(out, "  oolong-pairs ");
	CHECK_CONTAINS(out, "  browse ");
	CHECK_CONTAINS(out, "  which-doc ");
	CHECK_CONTAINS(out, "--users N");
	CHECK_CONTAINS(out, "--task KIND");
	CHECK_CONTAINS(out, "set_f1");
	CHECK_CONTAINS(out, "Scorer oolong");
	CHECK_CONTAINS(out, "Scorer exact");
	CHECK(!strstr(out, "The only SUITE"));
	free(out);
	free(err);
}
