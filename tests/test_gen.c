/* SPDX-License-Identifier: MIT */
/* tests/test_gen.c -- the S-NIAH generator: reproducible bytes, sizes, one
 * findable needle at the asked depth, every haystack and value type, and
 * `rlm bench gen` writing a JSONL whose items point at real files. */
#include "harness.h"
#include "../bench/bench.h"
#include "../common/common.h"
#include "../common/json.h"
#include "../rlm/cli.h"
#include "../rlm/corpus.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
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
	CHECK_INT(sniah_generate(o, f, &h.it), 0);
	CHECK_INT(fclose(f), 0);
	CHECK_INT(h.it.bytes, h.len);
	return h;
}

static struct sniah_opts opts(uint64_t tokens, uint64_t seed)
{
	struct sniah_opts o;
	sniah_opts_default(&o);
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

/* Run cmd_bench_gen with stdout and stderr captured. */
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
	status = cmd_bench_gen(argc, argv);
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
	CHECK_INT(read_file(po, 1 << 20, out, &len, &e), 0);
	CHECK_INT(read_file(pe, 1 << 20, err, &len, &e), 0);
	free(po);
	free(pe);
	return status;
}

static char *slurp(const char *path, size_t *len)
{
	char *p;
	struct rlm_err e = {0, ""};
	CHECK_MSG(read_file(path, (size_t)1 << 30, &p, len, &e) == 0, "%s", e.msg);
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
	CHECK_INT(sniah_generate(&o, f, &it), -EINVAL);
	o.distractors = 1001;
	CHECK_INT(sniah_generate(&o, f, &it), -EINVAL);
	o.distractors = 100;
	CHECK_INT(sniah_generate(&o, f, &it), -EINVAL); /* needles > half the bytes */
	o.distractors = 0;
	o.depth = 1.5;
	CHECK_INT(sniah_generate(&o, f, &it), -EINVAL);
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
			struct corpus_opts co = {CORPUS_AUTO, 0, true, false, false};
			struct corpus *c = NULL;
			struct rlm_err err = {0, ""};
			struct sniah_item it;
			char *path = xasprintf("%s/v%zu%zu%s", harness_tmpdir(), f, i,
					       fmts[f] == SNIAH_JSONL ? ".jsonl" : "");
			char *text;
			size_t n, nd;
			o.values = cases[i].values;
			o.distractors = 3;
			CHECK_INT(sniah_write(&o, fmts[f], cases[i].docs, path, &it, &n, &nd), 0);
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
	CHECK_INT(sniah_generate(&o, f, &it), -EINVAL);
	o.values = SNIAH_MAX_VALUES + 1;
	CHECK_INT(sniah_generate(&o, f, &it), -EINVAL);
	o.values = 2;
	o.depth = 0.5; /* one depth for two needles */
	CHECK_INT(sniah_generate(&o, f, &it), -EINVAL);
	o.depth = -1;
	o.value = SNIAH_WORD; /* 105 word values in all */
	o.values = 8;
	o.distractors = 98;
	CHECK_INT(sniah_generate(&o, f, &it), -EINVAL);
	o.distractors = 97;
	CHECK_INT(sniah_generate(&o, f, &it), 0);
	CHECK_INT(it.n_values, 8);
	o.distractors = 0;
	CHECK_INT(sniah_write(&o, SNIAH_DIR, 7, dir, &it, &n, &nd), -EINVAL); /* 8 values */
	CHECK_INT(sniah_write(&o, SNIAH_DIR, 8, dir, &it, &n, &nd), 0);
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
	int64_t t0 = now_ns();
	double ms;
	struct stat st;
	CHECK(f);
	CHECK_INT(sniah_generate(&o, f, &it), 0);
	CHECK_INT(fclose(f), 0);
	ms = (double)(now_ns() - t0) / 1e6;
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
		CHECK(utf8_valid(a.p, a.len, NULL));
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
			struct corpus_opts co = {CORPUS_AUTO, 0, true, false, false};
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
			CHECK_INT(sniah_write(&o, fmts[f], 37, path, &it, &n, &nd), 0);
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
				CHECK_STR(c->docs[n - 1].name, want);
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
	CHECK_INT(sniah_write(&o, SNIAH_DIR, 20, dir, &it, &n, &nd), 0);
	CHECK_INT(n, 20);
	CHECK_INT(sniah_write(&o, SNIAH_DIR, 3, dir, &it, &n, &nd), 0);
	CHECK_INT(n, 3); /* the 17 other files of the first run are gone */
	CHECK_INT(corpus_load(dir, NULL, &c, &err), 0);
	CHECK_INT(c->n_docs, 3);
	corpus_free(c);
	CHECK_INT(sniah_write(&o, SNIAH_DIR, 0, dir, &it, &n, &nd), -EINVAL);
	CHECK_INT(sniah_write(&o, SNIAH_JSONL, SNIAH_MAX_DOCS + 1, dir, &it, &n, &nd), -EINVAL);
	CHECK_INT(sniah_write(&o, SNIAH_JSONL, 5, dir, &it, &n, &nd), -EISDIR);
	free(dir);
	/* more documents asked for than there are lines: a line each */
	dir = xasprintf("%s/many.jsonl", harness_tmpdir());
	CHECK_INT(sniah_write(&o, SNIAH_JSONL, 100000, dir, &it, &n, &nd), 0);
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
		{{"nope", "--out", "D", NULL}, "unknown suite 'nope' (known: sniah)"},
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
