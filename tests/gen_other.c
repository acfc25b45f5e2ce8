/* SPDX-License-Identifier: MIT */
/* tests/gen_other.c -- corpora of other shapes than `rlm bench gen`'s, with
 * their questions and expected answers, for tests of the simulator. */
#include "gen_other.h"
#include "harness.h"
#include "../common/common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* splitmix64: small, seeded, the same everywhere */
struct grng {
	uint64_t s;
};

static uint64_t grng_next(struct grng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned below(struct grng *r, unsigned n)
{
	return (unsigned)(grng_next(r) % n);
}

#define PICK(r, a) ((a)[below((r), ARRAY_SIZE(a))])

static const char *const places[] = {
    "Ærøskøbing", "the old quarter", "Kraków",	 "the harbour", "São Paulo",  "the valley",
    "東京",	  "the north bank",  "Zaragoza", "Reykjavík",	"the market", "Malmö",
};
static const char *const nouns[] = {
    "lantern", "façade",      "ferry", "bakery",	"clock tower", "smørrebrød stall",
    "choir",   "garden café", "tram",  "データ center", "bridge",      "jalapeño farm",
};
static const char *const verbs[] = {
    "was repainted", "stayed open late",  "flooded twice", "drew a crowd",
    "was sold",	     "closed for winter", "changed hands", "won a prize",
};
static const char *const times[] = {
    "at dawn", "in 1987", "after the storm", "every Tuesday", "last spring", "🌧 all week",
};

/* One sentence of prose, no newline: several shapes. */
static void sentence(struct grng *r, struct buf *b)
{
	switch (below(r, 5)) {
	case 0:
		buf_printf(b, "In %s, the %s %s %s.", PICK(r, places), PICK(r, nouns),
			   PICK(r, verbs), PICK(r, times));
		break;
	case 1:
		buf_printf(b, "People still talk about how the %s near %s %s — nobody knows why.",
			   PICK(r, nouns), PICK(r, places), PICK(r, verbs));
		break;
	case 2:
		buf_printf(b, "“It %s,” said the keeper of the %s, “and it will again.”",
			   PICK(r, verbs), PICK(r, nouns));
		break;
	case 3:
		buf_printf(b, "Nobody in %s remembers whether the %s %s; the records were lost %s.",
			   PICK(r, places), PICK(r, nouns), PICK(r, verbs), PICK(r, times));
		break;
	default:
		buf_printf(b, "The %s by %s — a local landmark 🏛 — %s %s.", PICK(r, nouns),
			   PICK(r, places), PICK(r, verbs), PICK(r, times));
		break;
	}
}

static void mkdirs(const char *dir)
{
	CHECK_MSG(mkdir(dir, 0755) == 0 || errno == EEXIST, "cannot make '%s'", dir);
}

static void write_file(const char *path, const struct buf *b)
{
	FILE *f = fopen(path, "w");
	CHECK_MSG(f, "cannot write '%s'", path);
	CHECK(fwrite(b->p, 1, b->len, f) == b->len);
	CHECK(fclose(f) == 0);
}

static void set_q(struct gen_other *g, size_t i, const char *name, char *q, char *a)
{
	g->qs[i].name = name;
	g->qs[i].question = q;
	g->qs[i].answer = a;
}

/* Release notes of three products, newest last: a version line "Node.js
 * 20.0.0 — 2023-04-18" (an em dash), then notes with credits in other
 * scripts. The 20.0.0 release of Node.js is there once (each product has a
 * 20.0.0, and a note names the host 120.0.0.1). */
static void changelog(struct grng *r, const char *dir, struct gen_other *g)
{
	static const char *const products[] = {"Node.js", "Deno", "Bun"};
	static const char *const credits[] = {"José Müller", "Zoë Ångström", "李小龙",
					      "Åsa Øberg",   "Renée Dubois", "Юрий Гагарин"};
	struct buf b;
	char date[16] = "";
	buf_init(&b, 0);
	for (unsigned major = 1; major <= 24; major++)
		for (unsigned minor = 0; minor < 8; minor++)
			for (size_t p = 0; p < ARRAY_SIZE(products); p++) {
				char d[16];
				snprintf(d, sizeof(d), "%04u-%02u-%02u", 2000 + major, 1 + minor,
					 1 + below(r, 28));
				if (p == 0 && major == 20 && minor == 0)
					memcpy(date, d, sizeof(d));
				buf_printf(&b, "%s %u.%u.0 — %s\n", products[p], major, minor, d);
				if (p == 2 && major == 7 && minor == 3) /* 20.0.0 inside */
					buf_puts(&b, "  * the resolver accepts 120.0.0.1 as a "
						     "host (#4411)\n");
				for (unsigned k = below(r, 3) + 1; k; k--)
					buf_printf(&b, "  * %s: fixed the %s (thanks to %s, #%u)\n",
						   PICK(r, nouns), PICK(r, verbs), PICK(r, credits),
						   1000 + below(r, 90000));
			}
	g->context = xasprintf("%s/CHANGELOG.md", dir);
	write_file(g->context, &b);
	g->bytes = b.len;
	buf_release(&b);
	set_q(g, 0, "release date, natural phrasing",
	      xstrdup("On what date was Node.js 20.0.0 released?"), xstrdup(date));
	set_q(g, 1, "release date, terse", xstrdup("Node.js 20.0.0 release date?"), xstrdup(date));
}

/* Six paragraphs of about 40 KB each, no newline inside, the needle 90%
 * into the fifth; a distractor with the same first word elsewhere. */
static void long_prose(struct grng *r, const char *dir, struct gen_other *g)
{
	struct buf b, code;
	buf_init(&b, 0);
	buf_init(&code, 0);
	buf_printf(&code, "畑-%04u-ÉTÉ", 1000 + below(r, 9000));
	for (int p = 0; p < 6; p++) {
		size_t start = b.len;
		bool needle = false;
		if (p)
			buf_puts(&b, "\n\n");
		while (b.len - start < 40000) {
			if (p == 4 && !needle && b.len - start > 36000) {
				buf_printf(&b, "The launch code of the Café Zürich vault is %s. ",
					   code.p);
				needle = true;
			}
			if (p == 1 && b.len - start > 20000 && b.len - start < 20200)
				buf_puts(&b, "The Café Lumière vault keeps its launch code in a "
					     "drawer. ");
			sentence(r, &b);
			buf_putc(&b, ' ');
		}
	}
	buf_putc(&b, '\n');
	g->context = xasprintf("%s/long.txt", dir);
	write_file(g->context, &b);
	g->bytes = b.len;
	buf_release(&b);
	set_q(g, 0, "non-ASCII name in a 40 KB line",
	      xstrdup("What is the launch code of the Café Zürich vault?"), xstrdup(code.p));
	set_q(g, 1, "no key, the needle far into a 40 KB line",
	      xstrdup("What is the launch code of the vault?"), buf_detach(&code, NULL));
}

/* A sentence a line, 4,000 of them: the needle near the end, a distractor
 * (the code of the harbour's ferry, not its vault) near the start. */
static void prose(struct grng *r, const char *dir, struct gen_other *g)
{
	struct buf b;
	char *code = xasprintf("%u-ORCA", 1000 + below(r, 9000));
	buf_init(&b, 0);
	for (int i = 0; i < 4000; i++) {
		if (i == 300)
			buf_printf(&b, "The launch code of the harbour ferry is %u-GULL.\n",
				   1000 + below(r, 9000));
		if (i == 3700)
			buf_printf(&b, "The launch code of the harbour vault is %s.\n", code);
		sentence(r, &b);
		buf_putc(&b, '\n');
	}
	g->context = xasprintf("%s/prose.txt", dir);
	write_file(g->context, &b);
	g->bytes = b.len;
	buf_release(&b);
	set_q(g, 0, "no key", xstrdup("What is the launch code of the harbour vault?"), code);
}

/* Twelve markdown inventories (a table each) and two key: value files. */
static void tables(struct grng *r, const char *dir, struct gen_other *g)
{
	static const char *const items[] = {"brass hinge", "oak dowel",	 "steel bracket",
					    "linen strap", "glass knob", "cork gasket"};
	static const char *const status[] = {"in stock", "in stock", "in stock", "discontinued"};
	struct buf b, list;
	unsigned back = 0, want[3], qty[3];
	char *p;
	g->context = xasprintf("%s/shop", dir);
	mkdirs(g->context);
	buf_init(&list, 0);
	for (int k = 0; k < 3; k++)
		want[k] = 20000 + 7919 * (unsigned)(k + 1) + below(r, 1000);
	for (int f = 1; f <= 12; f++) {
		buf_init(&b, 0);
		buf_printf(&b,
			   "# Inventory, shelf %d\n\nCounted by %s.\n\n"
			   "| part | item | qty | status |\n|---|---|---|---|\n",
			   f, f % 2 ? "Zoë" : "Łukasz");
		for (int row = 0; row < 60; row++) {
			unsigned code =
			    10000 + (unsigned)f * 1000 + (unsigned)row * 7 + below(r, 7);
			unsigned q = below(r, 500);
			bool is_back = below(r, 9) == 0;
			for (int k = 0; k < 3; k++)
				if (f == 3 + 4 * k && row == 20 + k) {
					code = want[k];
					qty[k] = q;
					is_back = false;
				}
			back += is_back;
			buf_printf(&b, "| QX-%u | %s | %u | %s |\n", code, PICK(r, items), q,
				   is_back ? "backordered" : PICK(r, status));
		}
		p = xasprintf("%s/inventory-%02d.md", g->context, f);
		write_file(p, &b);
		free(p);
		g->bytes += b.len;
		buf_release(&b);
	}
	buf_init(&b, 0);
	buf_puts(&b, "owner: Zoë Ångström\nupdated: 2024-02-29\nwarehouse: Malmö 2\n"
		     "currency: SEK\nnote: counts are taken every Friday 📦\n");
	p = xasprintf("%s/shop.conf", g->context);
	write_file(p, &b);
	free(p);
	g->bytes += b.len;
	buf_release(&b);
	p = xasprintf("%u", back);
	set_q(g, 0, "how many, no key", xstrdup("How many are backordered?"), p);
	set_q(g, 3, "how many, no key, a noun the rows lack",
	      xstrdup("How many parts are backordered?"), xstrdup(p));
	set_q(g, 1, "which file, a code",
	      xasprintf("Which file mentions the part code QX-%u?", want[1]),
	      xstrdup("inventory-07.md"));
	set_q(g, 4, "which files, two codes",
	      xasprintf("Which files mention QX-%u or QX-%u?", want[0], want[2]),
	      xstrdup("inventory-03.md, inventory-11.md"));
	for (int k = 0; k < 3; k++)
		buf_printf(&list, "%s%u", k ? "\n" : "", qty[k]);
	set_q(g, 2, "several keys in one question",
	      xasprintf("List the quantities of parts QX-%u, QX-%u and QX-%u.", want[0], want[1],
			want[2]),
	      buf_detach(&list, NULL));
}

/* 3,000 log records as JSONL: services, levels, codes; svc_kestrel logs
 * five errors; one record tells of a flooded cellar in Ærøskøbing. */
static void logs(struct grng *r, const char *dir, struct gen_other *g)
{
	static const char *const svcs[] = {"svc_billing", "svc_search", "svc_mobile",
					   "svc_storage"};
	static const char *const msgs[] = {"disk quota exceeded on 東京-2", "retry budget spent ⏳",
					   "certificate for café.example renews soon",
					   "queue depth above threshold"};
	struct buf b, codes;
	unsigned flood = 1000 + below(r, 1000);
	FILE *f;
	buf_init(&codes, 0);
	g->context = xasprintf("%s/events.jsonl", dir);
	f = fopen(g->context, "w");
	CHECK(f);
	buf_init(&b, 0);
	for (unsigned i = 0; i < 3000; i++) {
		const char *svc = PICK(r, svcs);
		unsigned code = 1000 + below(r, 9000);
		buf_reset(&b);
		if (i % 600 == 17) {
			svc = "svc_kestrel";
			buf_printf(&codes, "%sE-%u", codes.len ? "\n" : "", code);
		}
		buf_printf(&b,
			   "{\"id\": \"evt-%05u\", \"text\": \"2024-03-%02uT%02u:%02u:%02uZ %s %s "
			   "code=E-%u %s\"}\n",
			   i, 1 + i / 120, i / 60 % 24, i % 60, below(r, 60),
			   i == flood ? "WARN" : "ERROR", svc, code,
			   i == flood ? "water in the cellar of the Ærøskøbing depot, pumps running"
				      : PICK(r, msgs));
		CHECK(fwrite(b.p, 1, b.len, f) == b.len);
		g->bytes += b.len;
	}
	CHECK(fclose(f) == 0);
	buf_release(&b);
	set_q(g, 0, "all, an identifier",
	      xstrdup("What are all the error codes logged by svc_kestrel?"),
	      buf_detach(&codes, NULL));
	set_q(g, 1, "which record, a non-ASCII name",
	      xstrdup("Which record mentions water in a cellar in Ærøskøbing?"),
	      xasprintf("evt-%05u", flood));
	set_q(g, 2, "which record, a quoted phrase",
	      xstrdup("Which record says \u201cpumps running\u201d?"),
	      xasprintf("evt-%05u", flood));
	set_q(g, 3, "how many, an identifier", xstrdup("How many svc_kestrel errors are there?"),
	      xstrdup("5"));
	set_q(g, 4, "how many, an identifier, natural phrasing",
	      xstrdup("How many errors did svc_kestrel log?"), xstrdup("5"));
}

void gen_other_make(enum gen_other_kind kind, uint64_t seed, const char *dir, struct gen_other *g)
{
	struct grng r = {seed * 0x2545f4914f6cdd1dULL + (uint64_t)kind};
	memset(g, 0, sizeof(*g));
	mkdirs(dir);
	switch (kind) {
	case GEN_OTHER_CHANGELOG:
		changelog(&r, dir, g);
		break;
	case GEN_OTHER_LONG:
		long_prose(&r, dir, g);
		break;
	case GEN_OTHER_PROSE:
		prose(&r, dir, g);
		break;
	case GEN_OTHER_TABLES:
		tables(&r, dir, g);
		break;
	case GEN_OTHER_LOGS:
		logs(&r, dir, g);
		break;
	}
}

void gen_other_release(struct gen_other *g)
{
	free(g->context);
	for (size_t i = 0; i < GEN_OTHER_QS; i++) {
		free(g->qs[i].question);
		free(g->qs[i].answer);
	}
	memset(g, 0, sizeof(*g));
}
