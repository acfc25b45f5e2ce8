/* SPDX-License-Identifier: MIT */
/* bench/gen_browse.c -- a BrowseComp-Plus-style corpus: many documents and
 * one two-hop "bridge" question whose answer needs two of them.
 *
 * DESIGN
 * The question names a subject S (a building, a firm, a ship or a novel)
 * and asks for something about the person B behind it: fact A ("The Old
 * Observatory of Velamont was designed by the architect Orlen Maradi.") is
 * in the bridge document, fact B ("Orlen Maradi was born in the town of
 * ...") in the answer document, whose topic is B. The distractors are
 * near-duplicates of both (the same paragraphs, drawn from the same seed,
 * about a sibling subject S' and B's namesake B', whose own chain leads to
 * another answer), a document naming B beside another town, and filler
 * documents: a topic of their own, facts of the very same shapes about
 * other invented names, and the essay haystack's paragraphs (gen.c).
 * Every name is built from syllables that no English word or other list
 * shares; the names of the chains are reserved, and filler names that
 * contain one, or are contained in one, are drawn again, so the answer and
 * its aliases occur in the answer document only. Each document is filled
 * to its share of the bytes (the shares count from where the last one
 * ended, so the corpus misses its size by at most a word).
 */
#include "bench.h"

#include "../common/json.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* clang-format off */
static const char *const first_names[] = {
	"Orlen", "Tamsin", "Corvin", "Maelis", "Oswin", "Renata", "Bastien", "Liesel", "Caspian",
	"Isolde", "Percival", "Anouk", "Dorian", "Elowen", "Ilsa", "Leopold", "Mirela",
	"Thaddeus", "Verena", "Ambrose", "Cosima", "Evander", "Ottilie", "Lucan", "Sabine",
	"Florian", "Henrike", "Jasper", "Katell", "Lorcan", "Marit", "Nestor", "Perpetua",
	"Quillon", "Rosalind", "Silvan", "Theodora", "Ulrich", "Wilhelmina", "Xavier",
};
static const char *const sur_a[] = {
	"Mar", "Dre", "Vos", "Kal", "Ter", "Bel", "Har", "Lun", "Sor", "Gev", "Nor", "Pav", "Ril",
	"Tov", "Wen", "Zel", "Ask", "Brev", "Cor", "Dal", "Fal", "Gor", "Hol", "Isk", "Jar",
	"Kes", "Lor", "Mor", "Nev", "Orv",
};
static const char *const sur_b[] = {"a", "i", "o", "e", "en", ""};
static const char *const sur_c[] = {
	"di", "mont", "holt", "vane", "rek", "stad", "wick", "lund", "sen", "rova", "ski", "ton",
	"var", "dottir", "ez", "mann", "ley", "quist",
};
static const char *const place_a[] = {
	"Vel", "Kor", "Zan", "Thar", "Quel", "Bryn", "Ost", "Yar", "Drav", "Fen", "Lisk", "Carv",
	"Hesk", "Wyn", "Trel", "Grav", "Ashk", "Pell", "Rusk", "Tam", "Eld", "Mald", "Sev",
	"Varn", "Cald", "Brom", "Dun", "Glen", "Hald", "Kelv",
};
static const char *const place_b[] = {"a", "e", "i", "o", "en", "ar", "is"};
static const char *const place_c[] = {
	"mont", "brook", "wick", "holm", "stead", "mere", "dale", "thorpe", "ford", "haven",
	"gate", "moor", "crest", "vale", "bury", "fell", "by", "minster", "port", "shaw",
};
static const char *const building_adj[] = {
	"Old", "New", "Upper", "Lower", "Great", "Little", "North", "South", "East", "West",
	"High", "Royal",
};
static const char *const building_kind[] = {
	"Observatory", "Library", "Lighthouse", "Bridge", "Theatre", "Clock Tower", "Museum",
	"Market Hall", "Chapel", "Bathhouse", "Granary", "Opera House",
};
static const char *const industry[] = {
	"Instruments", "Shipping", "Textiles", "Engineering", "Glassworks", "Foundry", "Press",
	"Mills", "Ceramics", "Optics", "Brewery", "Rope Works",
};
static const char *const ship_kind[] = {
	"schooner", "brig", "barque", "clipper", "steamer", "frigate", "sloop", "packet ship",
};
static const char *const ship_name[] = {
	"Spirit of %s", "Queen of %s", "Star of %s", "Pride of %s", "Maid of %s", "Rose of %s",
};
static const char *const novel_noun[] = {
	"Lanterns", "Orchards", "Bells", "Winters", "Tides", "Letters", "Gardens", "Ashes",
	"Roads", "Mirrors", "Rivers", "Songs",
};
static const char *const profession[] = {
	"painter", "surveyor", "botanist", "teacher", "cartographer", "physician", "merchant",
	"violinist", "printer", "astronomer",
};
/* clang-format on */

#define PICK(r, list) ((list)[rng_below((r), ARRAY_SIZE(list))])
#define PART	      32 /* a place or a surname */
#define NAME	      128
#define SENT	      320
#define RESERVED      24
#define PARA_BYTES    520 /* an essay paragraph and its newline, on average */

enum chain { CH_ARCHITECT, CH_FOUNDER, CH_CAPTAIN, CH_AUTHOR, CHAINS };

static const char *const chain_names[CHAINS] = {"architect", "founder", "captain", "author"};
static const char *const chain_role[CHAINS] = {"an architect", "the founder of a firm",
					       "a sea captain", "a novelist"};

/* ---- names ---- */

/* The names of the question's chains (and their years): nothing else may
 * contain one or be contained in one, ignoring case. */
struct reserved {
	char s[RESERVED][NAME];
	int n;
	int years[4];
	int n_years;
};

static bool clashes(const struct reserved *rs, const char *s)
{
	for (int i = 0; i < rs->n; i++)
		if (strcasestr(s, rs->s[i]) || strcasestr(rs->s[i], s))
			return true;
	return false;
}

/* strlcpy: s into dst of cap bytes, cut if need be. */
static void copy(char *dst, size_t cap, const char *s)
{
	size_t n = RLM_MIN(strlen(s), cap - 1);
	memcpy(dst, s, n);
	dst[n] = '\0';
}

static void reserve(struct reserved *rs, const char *s)
{
	if (rs->n < RESERVED)
		copy(rs->s[rs->n++], NAME, s);
}

static void draw_place(struct rng *r, const struct reserved *rs, char *dst)
{
	do
		snprintf(dst, PART, "%s%s%s", PICK(r, place_a), PICK(r, place_b), PICK(r, place_c));
	while (clashes(rs, dst));
}

static void draw_surname(struct rng *r, const struct reserved *rs, char *dst)
{
	do
		snprintf(dst, PART, "%s%s%s", PICK(r, sur_a), PICK(r, sur_b), PICK(r, sur_c));
	while (strlen(dst) < 5 || clashes(rs, dst));
}

/* "First Surname", the surname not clashing. */
static void draw_person(struct rng *r, const struct reserved *rs, char *dst)
{
	char sur[PART];
	draw_surname(r, rs, sur);
	snprintf(dst, NAME, "%s %s", PICK(r, first_names), sur);
}

static int draw_year(struct rng *r, const struct reserved *rs)
{
	for (;;) {
		int y = 1750 + (int)rng_below(r, 230);
		bool taken = false;
		for (int i = 0; i < rs->n_years; i++)
			taken |= rs->years[i] == y;
		if (!taken)
			return y;
	}
}

/* ---- the sentences of a chain ---- */

/* One chain: subject -> person -> answer. */
struct link {
	enum chain ch;
	char subject[NAME];
	const char *ship; /* CH_CAPTAIN: the ship's kind */
	char person[NAME];
	char place[PART];	/* CH_ARCHITECT: the town; CH_FOUNDER: the university's */
	char alias[PART];	/* CH_ARCHITECT: the town's older name */
	char answers[2][NAME];	/* the answer, and an alias (or "") */
	const char *spouse_job; /* CH_AUTHOR */
	int year;		/* CH_FOUNDER: the founding; CH_CAPTAIN: the answer */
};

/* The two sibling subjects of chain ch at place p, told apart by one word
 * (drawn from r); *ship the ship's kind for CH_CAPTAIN. */
static void subjects(struct rng *r, enum chain ch, const char *p, char s[2][NAME],
		     const char **ship)
{
	size_t n = ch == CH_ARCHITECT ? ARRAY_SIZE(building_adj)
		   : ch == CH_FOUNDER ? ARRAY_SIZE(industry)
		   : ch == CH_CAPTAIN ? ARRAY_SIZE(ship_name)
				      : ARRAY_SIZE(novel_noun);
	size_t k[2], kind = rng_below(r, ARRAY_SIZE(building_kind));
	k[0] = rng_below(r, n);
	do
		k[1] = rng_below(r, n);
	while (k[1] == k[0]);
	*ship = ch == CH_CAPTAIN ? PICK(r, ship_kind) : NULL;
	for (int v = 0; v < 2; v++) {
		if (ch == CH_ARCHITECT)
			snprintf(s[v], NAME, "%s %s of %s", building_adj[k[v]], building_kind[kind],
				 p);
		else if (ch == CH_FOUNDER)
			snprintf(s[v], NAME, "%s %s", p, industry[k[v]]);
		else if (ch == CH_CAPTAIN)
			snprintf(s[v], NAME, ship_name[k[v]], p);
		else
			snprintf(s[v], NAME, "%s of %s", novel_noun[k[v]], p);
	}
}

/* Draw what follows the person of l (l->ch, subject and person set): the
 * answer, reserved in rs when rs_add. */
static void answer_of(struct rng *r, struct reserved *rs, bool rs_add, struct link *l)
{
	char sur[PART];
	const char *first;
	l->answers[1][0] = '\0';
	switch (l->ch) {
	case CH_ARCHITECT:
		draw_place(r, rs, l->place);
		if (rs_add)
			reserve(rs, l->place);
		draw_place(r, rs, l->alias); /* its older name */
		if (rs_add)
			reserve(rs, l->alias);
		copy(l->answers[0], NAME, l->place);
		copy(l->answers[1], NAME, l->alias);
		break;
	case CH_FOUNDER:
		l->year = draw_year(r, rs);
		draw_place(r, rs, l->place);
		if (rs_add)
			reserve(rs, l->place);
		snprintf(l->answers[0], NAME, "University of %s", l->place);
		snprintf(l->answers[1], NAME, "%s University", l->place);
		break;
	case CH_CAPTAIN:
		l->year = draw_year(r, rs);
		if (rs_add && rs->n_years < (int)ARRAY_SIZE(rs->years))
			rs->years[rs->n_years++] = l->year;
		snprintf(l->answers[0], NAME, "%d", l->year);
		break;
	default:
		draw_surname(r, rs, sur);
		if (rs_add)
			reserve(rs, sur);
		first = PICK(r, first_names);
		l->spouse_job = PICK(r, profession);
		snprintf(l->answers[0], NAME, "%s %c. %s", first, (char)('A' + rng_below(r, 26)),
			 sur);
		snprintf(l->answers[1], NAME, "%s %s", first, sur);
		break;
	}
}

static void fact_a(const struct link *l, char *dst)
{
	if (l->ch == CH_ARCHITECT)
		snprintf(dst, SENT, "The %s was designed by the architect %s.", l->subject,
			 l->person);
	else if (l->ch == CH_FOUNDER)
		snprintf(dst, SENT, "%s was founded in %d by %s.", l->subject, l->year, l->person);
	else if (l->ch == CH_CAPTAIN)
		snprintf(dst, SENT, "The %s %s was commanded on her first voyage by Captain %s.",
			 l->ship, l->subject, l->person);
	else
		snprintf(dst, SENT, "The novel %s was written by %s.", l->subject, l->person);
}

static void fact_b(const struct link *l, char *dst)
{
	if (l->ch == CH_ARCHITECT)
		snprintf(dst, SENT, "%s was born in the town of %s, known in older records as %s.",
			 l->person, l->place, l->alias);
	else if (l->ch == CH_FOUNDER)
		snprintf(dst, SENT,
			 "%s studied at the University of %s before going into business.",
			 l->person, l->place);
	else if (l->ch == CH_CAPTAIN)
		snprintf(dst, SENT, "Captain %s retired from the sea in %d and never sailed again.",
			 l->person, l->year);
	else
		snprintf(dst, SENT, "%s married the %s %s.", l->person, l->spouse_job,
			 l->answers[0]);
}

static void question(const struct link *l, char *dst, size_t cap)
{
	if (l->ch == CH_ARCHITECT)
		snprintf(dst, cap,
			 "In which town was the architect who designed the %s born? Reply with the "
			 "name of the town only.",
			 l->subject);
	else if (l->ch == CH_FOUNDER)
		snprintf(dst, cap,
			 "At which university did the founder of %s study? Reply with the name of "
			 "the university only.",
			 l->subject);
	else if (l->ch == CH_CAPTAIN)
		snprintf(
		    dst, cap,
		    "In which year did the captain who commanded the %s %s on her first voyage "
		    "retire from the sea? Reply with the year only.",
		    l->ship, l->subject);
	else
		snprintf(
		    dst, cap,
		    "Whom did the author of the novel %s marry? Reply with the full name only.",
		    l->subject);
}

static void subject_opening(const struct link *l, char *dst)
{
	if (l->ch == CH_ARCHITECT)
		snprintf(dst, SENT, "The %s is one of the best known buildings of its town.",
			 l->subject);
	else if (l->ch == CH_FOUNDER)
		snprintf(dst, SENT,
			 "%s is a firm that has changed hands several times since it began.",
			 l->subject);
	else if (l->ch == CH_CAPTAIN)
		snprintf(dst, SENT,
			 "The %s %s was a vessel well known to sailors on the northern routes.",
			 l->ship, l->subject);
	else
		snprintf(dst, SENT, "%s is a novel that readers and critics still argue about.",
			 l->subject);
}

static void person_opening(const char *person, const char *role, char *dst)
{
	snprintf(dst, SENT, "%s was %s whose life is recorded in several local histories.", person,
		 role);
}

/* A chain of fresh names (none reserved) of a drawn kind. */
static void fresh_link(struct rng *r, struct reserved *rs, struct link *l)
{
	char place[PART], s[2][NAME];
	l->ch = (enum chain)rng_below(r, CHAINS);
	draw_place(r, rs, place);
	subjects(r, l->ch, place, s, &l->ship);
	copy(l->subject, NAME, s[0]);
	draw_person(r, rs, l->person);
	answer_of(r, rs, false, l);
}

/* ---- documents ---- */

/* What a document says: its title, its first sentence, the sentences to
 * place at given depths, and the seed of its paragraphs. */
struct doc_spec {
	char title[NAME];
	char opening[SENT];
	char facts[3][SENT];
	double at[3]; /* depth of each, in [0, 1), ascending: the
		       * paragraph at * (share / PARA_BYTES - 2), or
		       * an earlier one if the end comes first */
	int n_facts;
	uint64_t para_seed;
	uint64_t fact_off[3]; /* out: byte offset of each in the text */
	int placed;	      /* out: the facts written whole, from the first */
};

/* Cut p[0..n) to at most room bytes at a word, ending with a period;
 * 0 when not even a word fits. */
static size_t cut(char *p, size_t n, size_t room)
{
	size_t k;
	if (n <= room)
		return n;
	if (room < 3)
		return 0;
	k = room - 1;
	while (k > 0 && p[k] != ' ')
		k--;
	if (k == 0)
		return 0;
	if (p[k - 1] == ',')
		k--;
	if (p[k - 1] != '.')
		p[k++] = '.';
	return k;
}

/* Splice the facts f[0..nf) into essay paragraph e (len k) after the first
 * sentence end past its middle (or before it all when front), into dst;
 * the facts' offsets in dst go to offs. Returns the length. */
static size_t splice_facts(const char *e, size_t k, char (*f)[SENT], int nf, bool front, char *dst,
			   size_t *offs)
{
	size_t at = 0, n = 0;
	if (!front) {
		const char *p = memmem(e + k / 2, k - k / 2, ". ", 2);
		at = p ? (size_t)(p - e) + 2 : 0;
	}
	memcpy(dst, e, at);
	n = at;
	for (int i = 0; i < nf; i++) {
		size_t m = strlen(f[i]);
		offs[i] = n;
		memcpy(dst + n, f[i], m);
		n += m;
		dst[n++] = ' ';
	}
	if (at == k && n > 0)
		n--; /* no essay text follows */
	memcpy(dst + n, e + at, k - at);
	return n + k - at;
}

/* The text of d in about `share` bytes (never more) into out (share +
 * 4096 bytes); fills d->fact_off and d->placed. Returns the length. */
static size_t build_doc(struct doc_spec *d, size_t share, char *out)
{
	struct rng r;
	size_t n, next = 0, para = 0;
	double paras = RLM_MAX(1.0, (double)share / PARA_BYTES - 2);
	bool first = true;
	d->placed = 0;
	rng_seed(&r, d->para_seed);
	n = (size_t)snprintf(out, share + 4096, "%s", d->title);
	while (n + 2 < share) {
		char e[1100], p[2400];
		size_t k = bench_gen_essay_line(&r, e), m, room = share - n - 1, offs[3];
		int nf = 0;
		/* the facts due here, or all that are left when the end is near */
		while (next + (size_t)nf < (size_t)d->n_facts &&
		       ((double)para >= floor(d->at[next + (size_t)nf] * paras) || room < 1000))
			nf++;
		if (first) {
			size_t o = strlen(d->opening);
			memmove(e + o + 1, e, k);
			memcpy(e, d->opening, o);
			e[o] = ' ';
			k += o + 1;
		}
		m = splice_facts(e, k, d->facts + next, nf, false, p, offs);
		if (m > room && nf) /* the facts first, so that the cut keeps them */
			m = splice_facts(e, k, d->facts + next, nf, true, p, offs);
		if (!(m = cut(p, m, room)))
			break;
		out[n++] = '\n';
		for (int i = 0; i < nf; i++) {
			if (offs[i] + strlen(d->facts[next + (size_t)i]) > m)
				break; /* cut off: a document too small for its facts */
			d->fact_off[next + (size_t)i] = n + offs[i];
			d->placed++;
		}
		memcpy(out + n, p, m);
		n += m;
		next += (size_t)nf;
		first = false;
		para++;
	}
	return n;
}

/* ---- the corpus ---- */

enum role { R_FILLER, R_BRIDGE, R_ANSWER, R_DUP_BRIDGE, R_DUP_ANSWER, R_TRAP, ROLES };

struct plan {
	uint64_t seed;
	struct reserved rs;
	struct link l[2];  /* the question's chain, and that of B's namesake */
	char trap[SENT];   /* B beside another town */
	size_t doc[ROLES]; /* the document of each role but R_FILLER */
	double at[ROLES];  /* the depth of its sentence */
};

static uint64_t mix(uint64_t seed, uint64_t a, uint64_t b)
{
	uint64_t st = seed;
	st = rng_splitmix64(&st) ^ a;
	st = rng_splitmix64(&st) ^ b;
	return rng_splitmix64(&st);
}

static void plan_init(struct plan *pl, uint64_t seed, size_t docs)
{
	struct rng r;
	char place[PART], s[2][NAME], sur[PART], town[PART];
	const char *ship, *first[2];
	memset(pl, 0, sizeof(*pl));
	pl->seed = seed;
	rng_seed(&r, seed);
	pl->l[0].ch = pl->l[1].ch = (enum chain)rng_below(&r, CHAINS);
	draw_place(&r, &pl->rs, place);
	reserve(&pl->rs, place);
	subjects(&r, pl->l[0].ch, place, s, &ship);
	draw_surname(&r, &pl->rs, sur);
	reserve(&pl->rs, sur);
	first[0] = PICK(&r, first_names);
	do
		first[1] = PICK(&r, first_names);
	while (first[1] == first[0]);
	for (int v = 0; v < 2; v++) {
		struct link *l = &pl->l[v];
		copy(l->subject, NAME, s[v]);
		l->ship = ship;
		snprintf(l->person, NAME, "%s %s", first[v], sur);
		answer_of(&r, &pl->rs, true, l);
	}
	draw_place(&r, &pl->rs, town);
	reserve(&pl->rs, town);
	snprintf(pl->trap, SENT, "A portrait of %s hangs in the council hall of %s.",
		 pl->l[0].person, town);
	for (int k = R_BRIDGE; k < ROLES; k++) {
		bool taken;
		do {
			pl->doc[k] = rng_below(&r, docs);
			taken = false;
			for (int j = R_BRIDGE; j < k; j++)
				taken |= pl->doc[j] == pl->doc[k];
		} while (taken);
		pl->at[k] = 0.1 + 0.8 * rng_unit(&r);
	}
	pl->at[R_DUP_BRIDGE] = pl->at[R_BRIDGE]; /* near-duplicates: the same place too */
	pl->at[R_DUP_ANSWER] = pl->at[R_ANSWER];
}

static enum role role_of(const struct plan *pl, size_t k)
{
	for (int i = R_BRIDGE; i < ROLES; i++)
		if (pl->doc[i] == k)
			return (enum role)i;
	return R_FILLER;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* A filler document (or the trap's, with the trap sentence): a topic of
 * fresh names, its own fact, and one more fact of another chain. */
static void filler_spec(struct plan *pl, struct rng *r, bool trap, size_t share, struct doc_spec *d)
{
	struct link topic, other;
	double at[2];
	fresh_link(r, &pl->rs, &topic);
	fresh_link(r, &pl->rs, &other);
	if (rng_below(r, 2)) {
		copy(d->title, NAME, topic.subject);
		subject_opening(&topic, d->opening);
		fact_a(&topic, d->facts[0]);
	} else {
		char role[64];
		snprintf(role, sizeof(role), "a %s", PICK(r, profession));
		copy(d->title, NAME, topic.person);
		person_opening(topic.person, role, d->opening);
		fact_b(&topic, d->facts[0]);
	}
	at[0] = rng_unit(r);
	at[1] = rng_unit(r);
	d->n_facts = 1;
	if (trap) {
		copy(d->facts[0], SENT, pl->trap);
		at[0] = pl->at[R_TRAP];
	} else if (share >= 2000) {
		if (rng_below(r, 2))
			fact_a(&other, d->facts[1]);
		else
			fact_b(&other, d->facts[1]);
		d->n_facts = 2;
		if (at[1] < at[0]) { /* keep the facts in the order of their depths */
			char tmp[SENT];
			memcpy(tmp, d->facts[0], SENT);
			memcpy(d->facts[0], d->facts[1], SENT);
			memcpy(d->facts[1], tmp, SENT);
		}
		qsort(at, 2, sizeof(double), cmp_double);
	}
	memcpy(d->at, at, sizeof(at));
}

static void spec_of(struct plan *pl, size_t k, size_t share, struct doc_spec *d)
{
	enum role role = role_of(pl, k);
	struct rng r;
	size_t para = k;
	const struct link *l = &pl->l[role == R_DUP_BRIDGE || role == R_DUP_ANSWER];
	memset(d, 0, sizeof(*d));
	rng_seed(&r, mix(pl->seed, k, 1));
	if (role == R_DUP_BRIDGE)
		para = pl->doc[R_BRIDGE];
	else if (role == R_DUP_ANSWER)
		para = pl->doc[R_ANSWER];
	d->para_seed = mix(pl->seed, para, 2);
	d->n_facts = 1;
	d->at[0] = pl->at[role];
	switch (role) {
	case R_BRIDGE:
	case R_DUP_BRIDGE:
		copy(d->title, NAME, l->subject);
		subject_opening(l, d->opening);
		fact_a(l, d->facts[0]);
		break;
	case R_ANSWER:
	case R_DUP_ANSWER:
		copy(d->title, NAME, l->person);
		person_opening(l->person, chain_role[l->ch], d->opening);
		fact_b(l, d->facts[0]);
		break;
	default:
		filler_spec(pl, &r, role == R_TRAP, share, d);
		break;
	}
}

static int write_doc(enum sniah_format fmt, const char *path, FILE *jl, int width, size_t k,
		     const char *text, size_t len)
{
	int rc = 0;
	if (fmt == SNIAH_DIR) {
		char *p = xasprintf("%s/doc-%0*zu.txt", path, width, k);
		FILE *f = fopen(p, "wb");
		if (!f || fwrite(text, 1, len, f) != len)
			rc = errno ? -errno : -EIO;
		if (f && fclose(f) != 0 && !rc)
			rc = errno ? -errno : -EIO;
		free(p);
	} else {
		cJSON *j = cJSON_CreateObject();
		char *id = xasprintf("doc-%0*zu", width, k), *line;
		json_add_str(j, "id", id);
		json_add_strn(j, "text", text, len);
		line = json_print(j);
		if (fputs(line, jl) == EOF || fputc('\n', jl) == EOF)
			rc = errno ? -errno : -EIO;
		free(line);
		free(id);
		cJSON_Delete(j);
	}
	return rc;
}

size_t bench_browse_default_docs(uint64_t tokens)
{
	uint64_t d = RLM_MAX(10, RLM_MIN(1000, tokens / 1000));
	d = RLM_MIN(d, tokens * 4 / BROWSE_DOC_BYTES);
	return d < BROWSE_MIN_DOCS ? 0 : (size_t)d;
}

static void fill_item(const struct plan *pl, struct browse_item *it)
{
	const struct link *l = &pl->l[0];
	question(l, it->question, sizeof(it->question));
	it->n_answers = l->answers[1][0] ? 2 : 1;
	for (int i = 0; i < it->n_answers; i++)
		copy(it->answers[i], sizeof(it->answers[i]), l->answers[i]);
	it->chain = chain_names[l->ch];
	copy(it->subject, sizeof(it->subject), l->subject);
	copy(it->bridge, sizeof(it->bridge), l->person);
	fact_a(l, it->fact_a);
	fact_b(l, it->fact_b);
	it->bridge_doc = pl->doc[R_BRIDGE];
	it->answer_doc = pl->doc[R_ANSWER];
	it->dup_docs[0] = pl->doc[R_DUP_BRIDGE];
	it->dup_docs[1] = pl->doc[R_DUP_ANSWER];
	it->trap_doc = pl->doc[R_TRAP];
}

int bench_browse_write(const struct browse_opts *o, enum sniah_format fmt, const char *path,
		 struct browse_item *it)
{
	uint64_t bytes = o->tokens * 4, at = 0;
	size_t docs = o->docs ? o->docs : bench_browse_default_docs(o->tokens), cap = 0;
	struct plan *pl;
	FILE *jl = NULL;
	char *buf = NULL;
	int rc = 0, width = 5;

	memset(it, 0, sizeof(*it));
	if (fmt == SNIAH_TEXT || docs < BROWSE_MIN_DOCS || docs > SNIAH_MAX_DOCS ||
	    o->tokens > ((uint64_t)1 << 40) || bytes / docs < BROWSE_DOC_BYTES)
		return -EINVAL;
	for (size_t k = docs - 1; k >= 100000; k /= 10)
		width++;
	if (fmt == SNIAH_DIR) {
		if ((rc = bench_make_dirs(path)) || (rc = bench_gen_clear_docs(path)))
			return rc;
	} else if (!(jl = fopen(path, "wb"))) {
		return -errno;
	}
	pl = xmalloc(sizeof(*pl));
	plan_init(pl, o->seed, docs);
	fill_item(pl, it);
	for (size_t k = 0; k < docs && !rc; k++) {
		/* document k ends by (k + 1) / docs of the bytes, '\n' included */
		uint64_t end = bytes / docs * (k + 1) + bytes % docs * (k + 1) / docs;
		size_t share = end > at + 1 ? (size_t)(end - at - 1) : 1, len;
		enum role role = role_of(pl, k);
		struct doc_spec d;
		if (share + 4096 > cap) {
			cap = share + 4096;
			buf = xrealloc(buf, cap);
		}
		spec_of(pl, k, share, &d);
		len = build_doc(&d, share, buf);
		if (role != R_FILLER && d.placed < d.n_facts)
			rc = -EINVAL; /* cannot happen at BROWSE_DOC_BYTES */
		if (role == R_BRIDGE)
			it->fact_a_off = d.fact_off[0];
		else if (role == R_ANSWER)
			it->fact_b_off = d.fact_off[0];
		if (!rc)
			rc = write_doc(fmt, path, jl, width, k, buf, len);
		at += len + 1;
	}
	if (jl && fclose(jl) != 0 && !rc)
		rc = errno ? -errno : -EIO;
	it->n_docs = docs;
	it->bytes = at;
	free(buf);
	free(pl);
	return rc;
}
