/* SPDX-License-Identifier: MIT */
/* bench/gen.c -- the S-NIAH haystack generator.
 *
 * DESIGN
 * A haystack is built line by line into a 1 MiB chunk that is written with
 * one fwrite, so 40 MB take a few hundred milliseconds. The budget is
 * 4 * tokens bytes: the needle lines are set aside first, haystack lines
 * fill the rest (the last one cut at a word), and each needle goes in at
 * the first line boundary at or past its target offset depth * bytes.
 * The words of keys and word values come from lists that share no word with
 * the haystack vocabulary (which has no digits and no hyphens either), so
 * the key, and the value, occur on the needle line only.
 *
 * Multi-value (RULER's "niah_multivalue"): the key gets K needles with K
 * values told apart from each other and from every distractor's, at K
 * distinct depths (a sample of RULER's 40, or K distinct documents' middles
 * when bench_sniah_write cuts the haystack into documents). The random draws of
 * a one-value haystack are the same as before multi-value existed, so old
 * seeds give the same bytes.
 */
#include "bench.h"
#include "../common/text.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- keys and values (never in the haystack) ---- */

/* clang-format off */
static const char *const key_adj[] = {
	"harmonious", "abrasive", "absurd", "adorable", "aggressive", "agreeable", "alluring",
	"aloof", "aquatic", "aromatic", "bashful", "beneficial", "bewildered", "boundless",
	"brawny", "breezy", "bustling", "capricious", "cerulean", "charming", "chivalrous",
	"clumsy", "colossal", "courageous", "cuddly", "dapper", "dazzling", "defiant",
	"delightful", "diligent", "dizzy", "eager", "elated", "elegant", "eloquent",
	"enchanting", "energetic", "enormous", "exuberant", "fabulous", "faithful", "fearless",
	"feisty", "flamboyant", "flawless", "fluffy", "fragrant", "frantic", "frosty", "fuzzy",
	"giddy", "glamorous", "gleaming", "glossy", "graceful", "grumpy", "handsome",
	"hilarious", "humble", "hungry", "illustrious", "imaginary", "immense", "impartial",
	"jaunty", "jealous", "jittery", "jolly", "jubilant", "juicy", "lavish", "lively",
	"luminous", "luxuriant", "magnificent", "majestic", "melodic", "mellow", "mighty",
	"mysterious", "nebulous", "nimble", "nostalgic", "obedient", "opulent", "outrageous",
	"peaceful", "placid", "playful", "pleasant", "plucky", "polite", "precious", "quaint",
	"quirky", "radiant", "resilient", "rustic", "scrawny", "serene", "shiny", "silky",
	"sleepy", "soggy", "sparkling", "spiky", "splendid", "spotless", "sturdy", "swanky",
	"tangible", "tender", "thirsty", "thoughtful", "tranquil", "tremendous", "vibrant",
	"vigorous", "vivacious", "wacky", "whimsical", "witty", "zany", "zealous",
};

static const char *const key_noun[] = {
	"uniform", "walrus", "accordion", "alligator", "anchor", "antelope", "apricot",
	"armadillo", "asparagus", "avalanche", "badger", "bagpipe", "balloon", "banjo",
	"barnacle", "beetle", "biscuit", "blizzard", "bonnet", "boulder", "buffalo",
	"butterfly", "cabbage", "cactus", "camel", "canoe", "caravan", "cardigan", "carousel",
	"cathedral", "caterpillar", "cauliflower", "chameleon", "chandelier", "cheetah",
	"chimney", "chipmunk", "cinnamon", "clarinet", "coconut", "compass", "cormorant",
	"crocodile", "cucumber", "cupcake", "daffodil", "dolphin", "dragonfly", "dumpling",
	"eggplant", "elephant", "emerald", "falcon", "ferret", "flamingo", "gazelle", "gecko",
	"giraffe", "glacier", "goblet", "gondola", "gorilla", "hammock", "harmonica",
	"hedgehog", "hurricane", "iguana", "jaguar", "jellyfish", "kangaroo", "kettle", "koala",
	"lantern", "lemur", "lighthouse", "lobster", "lollipop", "mandolin", "marmalade",
	"meteor", "mongoose", "moose", "narwhal", "nectarine", "octopus", "ostrich", "otter",
	"pancake", "panther", "parrot", "peacock", "pelican", "penguin", "pickle", "pineapple",
	"platypus", "porcupine", "pretzel", "pumpkin", "raccoon", "reindeer", "rhubarb",
	"saxophone", "scarecrow", "seahorse", "squirrel", "starfish", "submarine", "sunflower",
	"tambourine", "teapot", "tortoise", "toucan", "trombone", "trumpet", "tulip", "turnip",
	"ukulele", "umbrella", "unicorn", "volcano", "waffle", "walnut", "weasel", "windmill",
	"wombat", "xylophone", "zebra", "zucchini",
};

/* No word here contains another word of any list, or is contained in one. */
static const char *const value_words[] = {
	"marzipan", "quasar", "zeppelin", "obsidian", "tamarind", "galleon", "paprika",
	"sapphire", "juniper", "labyrinth", "mosaic", "origami", "papyrus", "quartz",
	"saffron", "tapestry", "vermilion", "wisteria", "bergamot", "calliope", "dirigible",
	"escarpment", "fjord", "gargoyle", "hieroglyph", "ironwood", "jasmine", "kaleidoscope",
	"lagoon", "monsoon", "nutmeg", "oregano", "pagoda", "quicksilver", "rosemary",
	"sarsaparilla", "tundra", "ultramarine", "velvet", "wolfram", "yarrow", "zephyr",
	"almanac", "basilisk", "cobalt", "driftwood", "edelweiss", "filigree", "geyser",
	"halcyon", "indigo", "jacaranda", "kerosene", "lilac", "magnolia", "nocturne", "oasis",
	"parchment", "rickshaw", "sequoia", "topaz", "undertow", "vortex", "wanderlust",
	"xenon", "yuzu", "zircon", "amethyst", "bramble", "cardamom", "dulcimer", "ebony",
	"fennel", "gossamer", "hibiscus", "inkwell", "jamboree", "kumquat", "lavender",
	"mistletoe", "nautilus", "obelisk", "pistachio", "quinoa", "rhapsody", "sorbet",
	"trellis", "verbena", "woodwind", "yodel", "zodiac", "anemone", "bonsai", "citadel",
	"dandelion", "eucalyptus", "flotsam", "gingham", "harpoon", "igloo", "krypton",
	"lichen", "meringue", "nougat", "okra",
};
_Static_assert(ARRAY_SIZE(value_words) == SNIAH_WORD_VALUES, "SNIAH_WORD_VALUES is wrong");

/* ---- the haystack vocabulary: no digits, no hyphens ---- */

static const char *const h_noun[] = {
	"time", "year", "world", "life", "hand", "part", "place", "week", "case", "point",
	"company", "group", "problem", "fact", "city", "idea", "house", "money", "story",
	"night", "road", "river", "town", "garden", "letter", "friend", "teacher", "market",
	"book", "reason", "school", "family", "morning", "window", "door", "table", "paper",
	"field", "village", "office", "street", "country", "language", "history", "music",
	"picture", "student", "doctor", "ship", "train", "bridge", "forest", "island",
	"kitchen", "machine", "engine", "program", "startup", "product", "customer", "founder",
	"investor", "essay", "habit", "mistake", "lesson", "answer", "plan", "method", "effort",
	"journey", "project", "business", "career", "system", "feeling", "memory", "pattern",
	"purpose", "result", "skill", "tool", "voice", "winter", "summer", "evening", "harbour",
	"valley", "library", "museum", "painter", "writer", "builder", "farmer", "neighbour",
	"stranger", "child", "owner", "worker", "reader", "signal", "question", "rule",
};

static const char *const h_plural[] = {
	"people", "children", "friends", "farmers", "students", "workers", "writers",
	"builders", "engineers", "painters", "founders", "investors", "programmers", "readers",
	"teachers", "neighbours", "customers", "hackers", "users", "strangers", "parents",
	"doctors", "merchants", "travellers", "scientists", "designers", "critics", "sailors",
	"owners", "visitors",
};

static const char *const h_adj[] = {
	"small", "large", "old", "new", "good", "simple", "quiet", "early", "late", "long",
	"short", "strange", "useful", "careful", "clever", "honest", "empty", "busy", "cheap",
	"common", "curious", "distant", "easy", "hard", "famous", "gentle", "heavy", "narrow",
	"ordinary", "plain", "private", "rare", "rough", "serious", "sharp", "slow", "smooth",
	"solid", "steady", "sudden", "tall", "thin", "tiny", "warm", "cold", "wide", "wild",
	"young", "bright", "dark", "patient", "modest", "sensible", "obvious", "practical",
	"ambitious", "difficult", "valuable", "important", "familiar", "careless", "certain",
};

static const char *const h_verb[] = {
	"built", "found", "made", "wrote", "started", "changed", "noticed", "kept", "left",
	"carried", "opened", "closed", "followed", "learned", "watched", "moved", "fixed",
	"sold", "bought", "painted", "measured", "visited", "studied", "described",
	"explained", "improved", "remembered", "ignored", "tested", "planned", "copied",
	"shared", "finished", "borrowed", "repaired", "gathered", "counted", "traded",
	"sketched", "answered", "admired", "avoided", "chose", "doubted", "earned", "expected",
	"forgot", "guarded", "imagined", "questioned",
};

static const char *const h_adv[] = {
	"quickly", "slowly", "quietly", "rarely", "often", "usually", "always", "never",
	"carefully", "suddenly", "easily", "gradually", "probably", "simply", "eventually",
	"recently", "finally", "certainly", "mostly", "clearly", "nearly", "partly", "seldom",
	"gladly", "openly", "barely", "honestly", "patiently", "calmly", "boldly",
};

static const char *const h_prep[] = {
	"near", "behind", "beside", "across", "beyond", "under",
	"above", "around", "inside", "through", "along", "past",
};

static const char *const h_open[] = {
	"However", "Afterwards", "Meanwhile", "Later", "In the end", "For a while",
	"At first", "Still", "Even so", "Of course", "Sometimes", "Back then",
	"In practice", "As it turned out", "Before long", "Oddly enough",
};

/* %N noun, %P plural noun, %A adjective, %V verb (past), %D adverb,
 * %R preposition, %O opening phrase. */
static const char *const templates[] = {
	"The %A %N %V the %N %R the %N.",
	"%O, the %N %V the %A %N.",
	"Nobody %V the %N until the %N %V it.",
	"%P %D %V the %A %N, and the %N %V %D.",
	"It was %A to see how the %N %V the %N.",
	"If the %N is %A, the %N will be %A too.",
	"Most %P think the %N is %A, but it is %D %A.",
	"The %N %R the %N was %A and %A.",
	"%O, %P %V the %N %D.",
	"What matters is whether the %N %V the %N %R the %N.",
	"There was one %A %N %R the %N, and %P %D %V it.",
	"I %D %V the %N when I was %A.",
	"You can tell a lot about the %N by the way it %V the %N.",
	"The %N and the %N %V each other %D.",
	"Every %N %V the same %A %N, which %V the %P.",
	"%P who %V the %N were %D %A.",
	"%O, I %V that the %N was more %A than the %N.",
	"The %A %P %V the %N, so the %N %V %R the %N.",
	"In the %N, %P %D %V what the %N %V.",
	"That is why the %N %V the %N %D.",
	"Looking back, the %N was %A, and the %N was %A.",
	"The %N %V %D, and nobody knew why.",
};

/* Words of the --utf8 haystack, drawn one time in four for a noun or an
 * adjective: 2-, 3- and 4-byte UTF-8 sequences, Latin, Greek, Cyrillic,
 * CJK and emoji; no digits, no hyphens, no key or value word. */
static const char *const u_noun[] = {
	"café", "façade", "naïveté", "jalapeño", "smörgåsbord", "piñata", "Zürich", "Köln",
	"fjörður", "東京", "寿司", "図書館", "книга", "москва", "λόγος", "θάλασσα",
	"☕", "🙂", "🌍", "𝄞", "ångström", "œuvre", "kræfter", "страница",
};

static const char *const u_adj[] = {
	"naïve", "blasé", "soigné", "über", "schön", "élégant", "красивый", "καλός",
	"静かな", "新しい", "✓", "🔥", "açaí", "grøn", "žlutý", "ağır",
};

/* clang-format on */

static const char noise_line[] =
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";
static const char noise_line_utf8[] =
    "The grass is green. Le ciel est bleu. Die Sonne ist gelb. Вот и мы. 行って帰る. 🌍.";

#define PICK(r, list)  ((list)[rng_below((r), ARRAY_SIZE(list))])
#define LINE_MAX_BYTES 1024 /* longest haystack line, with room to spare */
#define CHUNK	       (1u << 20)

/* ---- haystack lines ---- */

static size_t put(char *dst, size_t at, const char *s)
{
	size_t n = strlen(s);
	memcpy(dst + at, s, n);
	return at + n;
}

/* A noun or an adjective; with utf8, one time in four a non-ASCII one. */
static const char *noun(struct rng *r, bool utf8)
{
	return utf8 && rng_below(r, 4) == 0 ? PICK(r, u_noun) : PICK(r, h_noun);
}

static const char *adj(struct rng *r, bool utf8)
{
	return utf8 && rng_below(r, 4) == 0 ? PICK(r, u_adj) : PICK(r, h_adj);
}

static size_t sentence(struct rng *r, bool utf8, char *dst)
{
	const char *t = PICK(r, templates);
	size_t n = 0;
	for (; *t; t++) {
		if (*t != '%') {
			dst[n++] = *t;
			continue;
		}
		switch (*++t) {
		case 'N':
			n = put(dst, n, noun(r, utf8));
			break;
		case 'P':
			n = put(dst, n, PICK(r, h_plural));
			break;
		case 'A':
			n = put(dst, n, adj(r, utf8));
			break;
		case 'V':
			n = put(dst, n, PICK(r, h_verb));
			break;
		case 'D':
			n = put(dst, n, PICK(r, h_adv));
			break;
		case 'R':
			n = put(dst, n, PICK(r, h_prep));
			break;
		default:
			n = put(dst, n, PICK(r, h_open));
			break;
		}
	}
	if (n)
		dst[0] = (char)text_to_upper(dst[0]);
	return n;
}

/* A paragraph of 4-8 sentences, 300-700 bytes, without the newline. */
static size_t essay_line(struct rng *r, bool utf8, char *dst)
{
	size_t want = 4 + rng_below(r, 5), count = 0, n = 0;
	char s[256];
	while (count < want || n < 300) {
		size_t k = sentence(r, utf8, s);
		if (n + 1 + k > 700 && count >= 4)
			break;
		if (n)
			dst[n++] = ' ';
		memcpy(dst + n, s, k);
		n += k;
		count++;
	}
	return n;
}

size_t bench_gen_essay_line(struct rng *r, char *dst)
{
	return essay_line(r, false, dst);
}

static size_t words_line(struct rng *r, bool utf8, char *dst)
{
	size_t want = 10 + rng_below(r, 5), n = 0;
	for (size_t i = 0; i < want; i++) {
		const char *w;
		switch (rng_below(r, 6)) {
		case 0:
			w = noun(r, utf8);
			break;
		case 1:
			w = PICK(r, h_plural);
			break;
		case 2:
			w = adj(r, utf8);
			break;
		case 3:
			w = PICK(r, h_verb);
			break;
		case 4:
			w = PICK(r, h_adv);
			break;
		default:
			w = PICK(r, h_prep);
			break;
		}
		if (i)
			dst[n++] = ' ';
		n = put(dst, n, w);
	}
	dst[0] = (char)text_to_upper(dst[0]);
	dst[n++] = '.';
	return n;
}

static size_t hay_line(struct rng *r, enum sniah_haystack h, bool utf8, char *dst)
{
	switch (h) {
	case SNIAH_NOISE:
		return put(dst, 0, utf8 ? noise_line_utf8 : noise_line);
	case SNIAH_WORDS:
		return words_line(r, utf8, dst);
	default:
		return essay_line(r, utf8, dst);
	}
}

/* Cut line[0..n) to at most room - 1 bytes at a word boundary, ending the
 * fragment with a period; the newline takes the last byte. Returns the new
 * length, 0 when not even one word fits. */
static size_t cut_line(char *line, size_t n, size_t room)
{
	size_t k;
	if (room < 3)
		return 0;
	k = RLM_MIN(n, room - 2);
	while (k > 0 && line[k] != ' ')
		k--;
	if (k == 0)
		return 0;
	if (line[k - 1] == ',')
		k--;
	if (line[k - 1] != '.')
		line[k++] = '.';
	return k;
}

/* ---- keys and values ---- */

static void make_key(struct rng *r, char *dst)
{
	snprintf(dst, 64, "%s-%s", PICK(r, key_adj), PICK(r, key_noun));
}

static void make_value(struct rng *r, enum sniah_value v, char *dst)
{
	if (v == SNIAH_NUMBER) {
		snprintf(dst, 64, "%u", (unsigned)(1000000 + rng_below(r, 9000000)));
	} else if (v == SNIAH_WORD) {
		snprintf(dst, 64, "%s", PICK(r, value_words));
	} else {
		uint64_t a = rng_next(r), b = rng_next(r);
		/* RFC 4122 version 4, variant 10xx. */
		a = (a & ~0xf000ULL) | 0x4000ULL;
		b = (b & ~(3ULL << 62)) | (2ULL << 62);
		snprintf(dst, 64, "%08x-%04x-%04x-%04x-%012llx", (unsigned)(a >> 32),
			 (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xffff, (unsigned)(b >> 48),
			 (unsigned long long)(b & 0xffffffffffffULL));
	}
}

/* a and b can be told apart: neither contains the other. */
static bool apart(const char *a, const char *b)
{
	return !strstr(a, b) && !strstr(b, a);
}

static const char *value_plural(enum sniah_value v)
{
	return v == SNIAH_NUMBER ? "numbers" : v == SNIAH_WORD ? "words" : "uuids";
}

const char *bench_sniah_value_name(enum sniah_value v)
{
	return v == SNIAH_NUMBER ? "number" : v == SNIAH_WORD ? "word" : "uuid";
}

/* ---- the generator ---- */

struct needle {
	uint64_t target; /* byte offset it should go at */
	size_t idx;	 /* below o->values: a value of the key; else a distractor */
	char line[160];	 /* the sentence and its newline */
	size_t len;
	char value[64];
};

static int cmp_needle(const void *a, const void *b)
{
	const struct needle *x = a, *y = b;
	if (x->target != y->target)
		return x->target < y->target ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

struct out {
	FILE *f;
	char *buf; /* CHUNK bytes */
	size_t len;
	uint64_t total;
	int err;
};

static void out_flush(struct out *o)
{
	if (o->len && !o->err && fwrite(o->buf, 1, o->len, o->f) != o->len)
		o->err = errno ? -errno : -EIO;
	o->len = 0;
}

static void out_put(struct out *o, const char *s, size_t n)
{
	if (o->len + n > CHUNK)
		out_flush(o);
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->total += n;
}

void bench_sniah_opts_default(struct sniah_opts *o)
{
	o->tokens = 8000;
	o->seed = 1;
	o->haystack = SNIAH_ESSAY;
	o->value = SNIAH_NUMBER;
	o->depth = -1;
	o->distractors = 0;
	o->values = 1;
	o->utf8 = false;
}

/* One of RULER's 40 depths, round(linspace(0, 100, 40)) %. */
static double ruler_depth(size_t i)
{
	return (double)(int)((double)i * 100.0 / 39 + 0.5) / 100;
}

/* The depths of k > 1 values: k distinct RULER depths (parts 0), or the
 * middle half of k distinct parts out of `parts`. */
static void spread_depths(struct rng *r, size_t k, size_t parts, double *depth)
{
	uint64_t pick[SNIAH_MAX_VALUES];
	for (size_t i = 0; i < k; i++) {
		bool ok;
		do {
			pick[i] = rng_below(r, parts ? parts : 40);
			ok = true;
			for (size_t j = 0; ok && j < i; j++)
				ok = pick[i] != pick[j];
		} while (!ok);
		depth[i] = parts ? ((double)pick[i] + 0.25 + 0.5 * rng_unit(r)) / (double)parts
				 : ruler_depth(pick[i]);
	}
}

/* The needles, the key's values first (o->values of them, one key), then
 * the distractors, with distinct keys and values; sorted by target. */
static struct needle *make_needles(const struct sniah_opts *o, size_t parts, struct rng *r,
				   uint64_t bytes, struct sniah_item *item)
{
	size_t k = (size_t)o->values, n = k + (size_t)o->distractors;
	struct needle *nd = xcalloc(n, sizeof(*nd));
	char(*keys)[64] = xcalloc(n, 64), (*vals)[64] = xcalloc(n, 64);
	double depth[SNIAH_MAX_VALUES];
	depth[0] = o->depth;
	if (k > 1)
		spread_depths(r, k, parts, depth);
	else if (depth[0] < 0)
		depth[0] = ruler_depth(rng_below(r, 40));
	for (size_t i = 0; i < n; i++) {
		bool ok;
		if (i > 0 && i < k) {
			memcpy(keys[i], keys[0], 64); /* another value of the key */
		} else {
			do {
				make_key(r, keys[i]);
				ok = i == 0 || apart(keys[i], keys[0]);
				for (size_t j = k; ok && j < i; j++)
					ok = strcmp(keys[i], keys[j]) != 0;
			} while (!ok);
		}
		do {
			make_value(r, o->value, vals[i]);
			ok = true;
			for (size_t j = 0; ok && j < i; j++)
				ok = apart(vals[i], vals[j]);
		} while (!ok);
		nd[i].idx = i;
		nd[i].target = (uint64_t)((i < k ? depth[i] : rng_unit(r)) * (double)bytes);
		nd[i].len = (size_t)snprintf(nd[i].line, sizeof(nd[i].line),
					     "One of the special magic %s for %s is: %s.\n",
					     value_plural(o->value), keys[i], vals[i]);
		memcpy(nd[i].value, vals[i], 64);
	}
	memcpy(item->key, keys[0], 64);
	if (k > 1)
		snprintf(item->question, sizeof(item->question),
			 "What are all the special magic %s for %s mentioned in the provided "
			 "text?",
			 value_plural(o->value), keys[0]);
	else
		snprintf(item->question, sizeof(item->question),
			 "What is the special magic %s for %s mentioned in the provided text?",
			 bench_sniah_value_name(o->value), keys[0]);
	free(keys);
	free(vals);
	qsort(nd, n, sizeof(*nd), cmp_needle);
	return nd;
}

/* Write a needle; a value of the key is noted in item, in text order. */
static void put_needle(struct out *out, const struct needle *nd, size_t nv, struct sniah_item *item)
{
	if (nd->idx < nv && item->n_values < SNIAH_MAX_VALUES) {
		item->value_offs[item->n_values] = out->total;
		memcpy(item->values[item->n_values], nd->value, 64);
		item->n_values++;
	}
	out_put(out, nd->line, nd->len);
}

int bench_sniah_generate(const struct sniah_opts *o, FILE *f, struct sniah_item *item)
{
	return bench_sniah_generate_parts(o, 0, f, item);
}

int bench_sniah_generate_parts(const struct sniah_opts *o, size_t parts, FILE *f, struct sniah_item *item)
{
	struct rng r;
	struct out out = {f, NULL, 0, 0, 0};
	struct needle *nd;
	uint64_t bytes = o->tokens * 4, hay = 0, budget = bytes;
	size_t nv = (size_t)o->values, n, next = 0;
	char line[LINE_MAX_BYTES];

	if (o->distractors < 0 || o->distractors > SNIAH_MAX_DISTRACTORS || o->depth > 1 ||
	    o->tokens > ((uint64_t)1 << 40) || o->values < 1 || o->values > SNIAH_MAX_VALUES ||
	    (o->values > 1 && (o->depth >= 0 || (parts && parts < nv))) ||
	    (o->value == SNIAH_WORD && nv + (size_t)o->distractors > SNIAH_WORD_VALUES))
		return -EINVAL;
	n = nv + (size_t)o->distractors;
	memset(item, 0, sizeof(*item));
	rng_seed(&r, o->seed);
	nd = make_needles(o, parts, &r, bytes, item);
	for (size_t i = 0; i < n; i++) {
		if (nd[i].len > budget / 2) {
			free(nd);
			return -EINVAL; /* the needles would be most of the haystack */
		}
		budget -= nd[i].len;
	}
	out.buf = xmalloc(CHUNK);
	while (hay < budget) {
		size_t k;
		while (next < n && out.total >= nd[next].target)
			put_needle(&out, &nd[next++], nv, item);
		k = hay_line(&r, o->haystack, o->utf8, line);
		if (hay + k + 1 > budget && !(k = cut_line(line, k, (size_t)(budget - hay))))
			break;
		line[k++] = '\n';
		out_put(&out, line, k);
		hay += k;
	}
	for (; next < n; next++)
		put_needle(&out, &nd[next], nv, item);
	out_flush(&out);
	free(out.buf);
	free(nd);
	if (out.err)
		return out.err;
	if (fflush(f) != 0)
		return errno ? -errno : -EIO;
	item->bytes = out.total;
	item->needle_off = item->value_offs[0];
	memcpy(item->value, item->values[0], 64);
	item->depth = out.total ? (double)item->needle_off / (double)out.total : 0;
	return 0;
}
