/* SPDX-License-Identifier: MIT */
/* bench/gen_which.c -- the which-doc suite: a corpus of documents with ids
 * of their own, one of which holds a fact, and a question that asks which
 * document does; the answer is that document's id, scored exactly.
 *
 * DESIGN
 * Documents are essay paragraphs (bench_gen_essay_line: no digits, no
 * hyphens) of about equal size. Their ids are what a user's corpus would
 * have: in a JSONL, an "id" field "rec-NNNNNN" that is not the line number
 * (a stride through a million, so ids are distinct and out of order); in a
 * directory, a path under a topic folder, "lab/minutes-0042.txt". One
 * document, drawn, gets the fact in its middle: "Under reference code
 * QX-4417 the board adopted the amber heron protocol for the coming
 * season." Two others get near misses: the same code's letters with other
 * digits, and a phrase sharing one word with the fact's, postponed rather
 * than adopted. The question names the fact one of three ways, drawn: the
 * phrase in quotes, the code, or the phrase's words in a sentence; so a
 * solver that searches for the phrase or the code finds one document, and
 * one that reads everything must tell the fact from the near misses.
 */
#include "bench.h"

#include "../common/json.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ESSAY_LINE 1024 /* bench_gen_essay_line's dst */

static const char *const topics[] = {"ops", "sales", "lab", "field", "legal"};
static const char *const kinds[] = {"memo", "log", "report", "notes", "minutes"};
/* The fact's words: none is in the essay vocabulary. */
static const char *const adjs[] = {"amber",	"cobalt", "saffron", "obsidian",
				   "vermilion", "jade",	  "indigo",  "ochre",
				   "cerise",	"umber",  "mauve",   "russet"};
static const char *const animals[] = {"heron", "lynx",	 "marlin", "ibis",   "okapi", "tapir",
				      "gecko", "walrus", "puffin", "jackal", "bison", "condor"};
static const char *const things[] = {"protocol", "ledger",  "charter",	 "manifest",
				     "accord",	 "compact", "directive", "roster"};

static const char *const ask_names[WHICH_ASKS] = {"quoted", "code", "plain"};

const char *bench_which_ask_name(enum which_ask a)
{
	return a < WHICH_ASKS ? ask_names[a] : "?";
}

#define PICK(r, list) (list)[rng_below((r), ARRAY_SIZE(list))]

/* A word of list other than w. */
static const char *pick_other(struct rng *r, const char *const *list, size_t n, const char *w)
{
	const char *o;
	do
		o = list[rng_below(r, n)];
	while (o == w);
	return o;
}

static void doc_id(enum sniah_format fmt, size_t i, char *dst, size_t cap)
{
	if (fmt == SNIAH_JSONL)
		snprintf(dst, cap, "rec-%06zu", (i * 7919 + 104729) % 1000000);
	else
		snprintf(dst, cap, "%s/%s-%04zu.txt", topics[i % ARRAY_SIZE(topics)],
			 kinds[(i / ARRAY_SIZE(topics)) % ARRAY_SIZE(kinds)], i);
}

static int cmp_ids(const void *a, const void *b, void *ids)
{
	const char(*v)[64] = ids;
	return strcmp(v[*(const size_t *)a], v[*(const size_t *)b]);
}

/* Where document i (in the order written) comes when rlm loads the
 * corpus: a JSONL's order; a directory's paths sorted. */
static void load_order(enum sniah_format fmt, size_t docs, size_t *const idx[], size_t n_idx)
{
	char(*ids)[64];
	size_t *order;
	if (fmt != SNIAH_DIR)
		return;
	ids = xmalloc(docs * sizeof(*ids));
	order = xmalloc(docs * sizeof(*order));
	for (size_t i = 0; i < docs; i++) {
		doc_id(fmt, i, ids[i], sizeof(ids[i]));
		order[i] = i;
	}
	qsort_r(order, docs, sizeof(*order), cmp_ids, ids);
	for (size_t k = 0; k < n_idx; k++)
		for (size_t r = 0; r < docs; r++)
			if (order[r] == *idx[k]) {
				*idx[k] = r;
				break;
			}
	free(order);
	free(ids);
}

/* Remove the .txt files of the topic folders under path (an earlier run's). */
static int clear_dirs(const char *path)
{
	int rc = 0;
	for (size_t t = 0; t < ARRAY_SIZE(topics) && !rc; t++) {
		char *sub = xasprintf("%s/%s", path, topics[t]);
		DIR *d;
		struct dirent *e;
		if ((rc = bench_make_dirs(sub))) {
			free(sub);
			break;
		}
		if (!(d = opendir(sub))) {
			rc = -errno;
			free(sub);
			break;
		}
		while ((e = readdir(d))) {
			size_t n = strlen(e->d_name);
			if (n > 4 && strcmp(e->d_name + n - 4, ".txt") == 0 &&
			    unlinkat(dirfd(d), e->d_name, 0) < 0) {
				rc = -errno;
				break;
			}
		}
		closedir(d);
		free(sub);
	}
	return rc;
}

/* A document's text: essay lines of about share bytes (the last one cut
 * at a word), with the sentence `extra` (or none) after the middle one. */
static void doc_text(struct rng *r, size_t share, const char *extra, struct buf *b)
{
	char line[ESSAY_LINE];
	size_t lines = 0, at;
	struct buf tmp;
	buf_init(&tmp, 0);
	while (tmp.len + 1 < share || !lines) {
		size_t k = bench_gen_essay_line(r, line), room = share - tmp.len - !!tmp.len;
		if (lines && k > room) {
			/* the last line, cut at a word to fill the share */
			while (room && line[room] != ' ')
				room--;
			if (!room)
				break;
			k = room;
		}
		if (tmp.len)
			buf_putc(&tmp, '\n');
		buf_append(&tmp, line, k);
		lines++;
	}
	buf_reset(b);
	if (!extra) {
		buf_append(b, tmp.p, tmp.len);
		buf_release(&tmp);
		return;
	}
	/* after the line that ends past the middle */
	at = 0;
	for (size_t seen = 0; seen <= lines / 2; seen++) {
		const char *nl = memchr(tmp.p + at, '\n', tmp.len - at);
		if (!nl || seen == lines / 2) {
			at = nl ? (size_t)(nl - tmp.p) : tmp.len;
			break;
		}
		at = (size_t)(nl - tmp.p) + 1;
	}
	buf_append(b, tmp.p, at);
	buf_printf(b, "\n%s", extra);
	buf_append(b, tmp.p + at, tmp.len - at);
	buf_release(&tmp);
}

int bench_which_write(const struct browse_opts *o, enum sniah_format fmt, const char *path,
		      struct which_item *it)
{
	size_t docs = o->docs ? o->docs : bench_browse_default_docs(o->tokens), share, miss[2];
	const char *adj, *animal, *thing, *noun;
	char letters[3], near_code[16], near[160], id[64];
	struct rng r;
	struct buf text;
	FILE *jl = NULL;
	int rc = 0;
	memset(it, 0, sizeof(*it));
	if (fmt == SNIAH_TEXT || docs < BROWSE_MIN_DOCS || docs > SNIAH_MAX_DOCS ||
	    o->tokens * 4 / docs < BROWSE_DOC_BYTES / 2)
		return -EINVAL;
	rng_seed(&r, o->seed);
	share = (size_t)(o->tokens * 4 / docs) - 1;
	/* the fact, its document, the near misses */
	adj = PICK(&r, adjs);
	animal = PICK(&r, animals);
	thing = PICK(&r, things);
	letters[0] = (char)('A' + rng_below(&r, 26));
	letters[1] = (char)('A' + rng_below(&r, 26));
	letters[2] = '\0';
	{
		unsigned num = 1000 + (unsigned)rng_below(&r, 9000);
		snprintf(it->code, sizeof(it->code), "%s-%04u", letters, num);
		snprintf(near_code, sizeof(near_code), "%s-%04u", letters,
			 1000 + (num - 1000 + 1 + (unsigned)rng_below(&r, 8998)) % 9000);
	}
	snprintf(it->phrase, sizeof(it->phrase), "%s %s %s", adj, animal, thing);
	snprintf(it->fact, sizeof(it->fact),
		 "Under reference code %s the board adopted the %s for the coming season.",
		 it->code, it->phrase);
	snprintf(near, sizeof(near),
		 "Under reference code %s the board postponed the %s %s %s until further notice.",
		 near_code, adj, pick_other(&r, animals, ARRAY_SIZE(animals), animal),
		 pick_other(&r, things, ARRAY_SIZE(things), thing));
	it->answer_doc = (size_t)rng_below(&r, docs);
	miss[0] = (it->answer_doc + 1 + (size_t)rng_below(&r, docs - 1)) % docs;
	do
		miss[1] = (size_t)rng_below(&r, docs);
	while (miss[1] == it->answer_doc || miss[1] == miss[0]);
	it->near_docs[0] = miss[0];
	it->near_docs[1] = miss[1];
	/* the question */
	it->ask = (enum which_ask)rng_below(&r, WHICH_ASKS);
	noun = fmt == SNIAH_DIR ? "file" : "record";
	if (it->ask == WHICH_QUOTED)
		snprintf(it->question, sizeof(it->question), "Which %s mentions \"%s\"?", noun,
			 it->phrase);
	else if (it->ask == WHICH_CODE)
		snprintf(it->question, sizeof(it->question),
			 "Which %s holds the reference code %s? Answer with its id.", noun,
			 it->code);
	else
		snprintf(it->question, sizeof(it->question),
			 "In which %s was the %s adopted by the board?", noun, it->phrase);
	doc_id(fmt, it->answer_doc, it->answer, sizeof(it->answer));

	if (fmt == SNIAH_DIR) {
		if ((rc = bench_make_dirs(path)) || (rc = clear_dirs(path)))
			return rc;
	} else if (!(jl = fopen(path, "wb"))) {
		return -errno;
	}
	buf_init(&text, 0);
	for (size_t i = 0; i < docs && !rc; i++) {
		const char *extra = i == it->answer_doc		   ? it->fact
				    : i == miss[0] || i == miss[1] ? near
								   : NULL;
		/* a sentence added takes its room from the essay */
		doc_text(&r, extra ? share - strlen(extra) - 1 : share, extra, &text);
		doc_id(fmt, i, id, sizeof(id));
		it->bytes += text.len + 1;
		if (fmt == SNIAH_JSONL) {
			cJSON *rec = cJSON_CreateObject();
			char *s;
			json_add_str(rec, "id", id);
			json_add_str(rec, "topic", topics[i % ARRAY_SIZE(topics)]);
			json_add_str(rec, "text", text.p);
			s = json_print(rec);
			if (fprintf(jl, "%s\n", s) < 0)
				rc = errno ? -errno : -EIO;
			free(s);
			cJSON_Delete(rec);
		} else {
			char *p = xasprintf("%s/%s", path, id);
			FILE *f = fopen(p, "wb");
			if (!f || fwrite(text.p, 1, text.len, f) != text.len)
				rc = errno ? -errno : -EIO;
			if (f && fclose(f) != 0 && !rc)
				rc = errno ? -errno : -EIO;
			free(p);
		}
	}
	buf_release(&text);
	if (jl && fclose(jl) != 0 && !rc)
		rc = errno ? -errno : -EIO;
	it->n_docs = docs;
	{
		size_t *const idx[] = {&it->answer_doc, &it->near_docs[0], &it->near_docs[1]};
		load_order(fmt, docs, idx, ARRAY_SIZE(idx));
	}
	return rc;
}
