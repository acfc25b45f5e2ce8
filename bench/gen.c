/* SPDX-License-Identifier: MIT */
/* bench/gen.c -- the S-NIAH haystack generator and `rlm bench gen`.
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
 * when sniah_write cuts the haystack into documents). The random draws of
 * a one-value haystack are the same as before multi-value existed, so old
 * seeds give the same bytes.
 */
#include "bench_int.h"

#include "../common/json.h"
#include "../rlm/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

#define PICK(r, list)	((list)[rng_below((r), ARRAY_SIZE(list))])
#define LINE_MAX_BYTES	1024 /* longest haystack line, with room to spare */
#define CHUNK		(1u << 20)
#define MAX_DISTRACTORS 1000

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
	if (n && dst[0] >= 'a' && dst[0] <= 'z')
		dst[0] = (char)(dst[0] - 'a' + 'A');
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
	if (dst[0] >= 'a' && dst[0] <= 'z')
		dst[0] = (char)(dst[0] - 'a' + 'A');
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

static const char *value_single(enum sniah_value v)
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

void sniah_opts_default(struct sniah_opts *o)
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
			 value_single(o->value), keys[0]);
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

int sniah_generate(const struct sniah_opts *o, FILE *f, struct sniah_item *item)
{
	return sniah_generate_parts(o, 0, f, item);
}

int sniah_generate_parts(const struct sniah_opts *o, size_t parts, FILE *f, struct sniah_item *item)
{
	struct rng r;
	struct out out = {f, NULL, 0, 0, 0};
	struct needle *nd;
	uint64_t bytes = o->tokens * 4, hay = 0, budget = bytes;
	size_t nv = (size_t)o->values, n, next = 0;
	char line[LINE_MAX_BYTES];

	if (o->distractors < 0 || o->distractors > MAX_DISTRACTORS || o->depth > 1 ||
	    o->tokens > ((uint64_t)1 << 40) || o->values < 1 || o->values > SNIAH_MAX_VALUES ||
	    (o->values > 1 && (o->depth >= 0 || (parts && parts < nv))) ||
	    (o->value == SNIAH_WORD && nv + (size_t)o->distractors > ARRAY_SIZE(value_words)))
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

/* ---- rlm bench gen ---- */

static const char gen_usage[] =
    "usage: rlm bench gen SUITE --out DIR [options]\n"
    "\n"
    "Generate a seeded benchmark dataset. The only SUITE is sniah: RULER-style\n"
    "needles in a haystack. Each item's context is a text file with one line\n"
    "\"One of the special magic numbers for KEY is: VALUE.\" hidden in it, and the\n"
    "question asks for the value of KEY. With --values K (RULER's multi-value\n"
    "NIAH) KEY has K such lines with K distinct values, and the question asks\n"
    "\"What are all the special magic numbers for KEY mentioned in the provided\n"
    "text?\"; the answer is all K of them.\n"
    "\n"
    "options:\n"
    "  --out DIR           where to write (created if missing); required\n"
    "  --sizes LIST        comma-separated sizes in tokens (1 token = 4 bytes),\n"
    "                      with k/M/G for thousands/millions/billions, each >= 1k\n"
    "                      (default 8k,32k,128k,1M)\n"
    "  --n N               items per size (default 1)\n"
    "  --seed S            base seed (default 1); each item's seed is derived\n"
    "                      from (S, size, index), so items are reproducible alone\n"
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
    "  --format KIND       text (default): one file; dir: a directory of files\n"
    "                      doc-00000.txt ...; jsonl: a JSONL file of documents\n"
    "                      {\"id\":\"doc-00000\",\"text\":...}; documents are runs of\n"
    "                      whole lines of about equal size\n"
    "  --docs N            documents per item for dir and jsonl, at most (default:\n"
    "                      one per 2,000 tokens, and at least --values)\n"
    "  --utf8              haystack words in multi-byte UTF-8 too (accents, Greek,\n"
    "                      Cyrillic, CJK, emoji: 2-, 3- and 4-byte sequences)\n"
    "  -h, --help          this text\n"
    "\n"
    "output:\n"
    "  DIR/sniah-SIZE-I.txt   the context of item I at SIZE (as written in --sizes);\n"
    "                         DIR/sniah-SIZE-I/ or DIR/sniah-SIZE-I.jsonl with --format\n"
    "  DIR/sniah.jsonl        one item per line (rewritten on each run):\n"
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
    "  the prediction, ignoring case. context_path is relative to the JSONL's\n"
    "  directory. The JSONL path is printed on stdout, one line per item on\n"
    "  stderr.\n"
    "\n"
    "examples:\n"
    "  rlm bench gen sniah --sizes 8k,1M,10M --n 5 --out data/sniah\n"
    "  rlm bench gen sniah --sizes 10M --values 4 --format dir --out data/mv\n";

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
	OPT_VALUES
};

struct gen_args {
	char **size_names; /* as given; owned array, borrowed strings */
	uint64_t *sizes;
	size_t n_sizes;
	long n;
	uint64_t seed;
	const char *out;
	struct sniah_opts so;
	enum sniah_format format;
	long docs; /* 0: one per 2,000 tokens */
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
		if (strspn(s, "0123456789.kKmMgG") != strlen(s) || parse_count(s, &v) || v < 1000 ||
		    v > 1000000000)
			return cli_fail(2,
					"bad size '%s' in --sizes: want a token count from 1k "
					"to 1G, like 8k, 32k or 1M",
					s);
		for (size_t i = 0; i < a->n_sizes; i++)
			if (strcmp(a->size_names[i], s) == 0)
				return cli_fail(2, "size '%s' is given twice in --sizes", s);
		a->size_names = xrealloc(a->size_names, (a->n_sizes + 1) * sizeof(char *));
		a->sizes = xrealloc(a->sizes, (a->n_sizes + 1) * sizeof(uint64_t));
		a->size_names[a->n_sizes] = s;
		a->sizes[a->n_sizes++] = v;
	}
	if (a->n_sizes == 0)
		return cli_fail(2, "--sizes is empty: want a list like 8k,32k,1M");
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

static int parse_gen_args(struct gen_args *a, int argc, char **argv, char **sizes_copy)
{
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
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *sizes = "8k,32k,128k,1M";
	long l;
	int opt;
	optind = 0; /* full reset: this may run more than once per process */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_SIZES:
			sizes = optarg;
			break;
		case OPT_N:
			if (parse_int(optarg, 1, 1000000, &a->n))
				return cli_fail(2, "bad value '%s' for --n: want 1..1000000",
						optarg);
			break;
		case OPT_SEED:
			if (parse_seed(optarg, &a->seed))
				return cli_fail(2,
						"bad value '%s' for --seed: want an integer "
						"0..18446744073709551615",
						optarg);
			break;
		case OPT_OUT:
			a->out = optarg;
			break;
		case OPT_HAY:
			if (strcmp(optarg, "essay") == 0)
				a->so.haystack = SNIAH_ESSAY;
			else if (strcmp(optarg, "noise") == 0)
				a->so.haystack = SNIAH_NOISE;
			else if (strcmp(optarg, "words") == 0)
				a->so.haystack = SNIAH_WORDS;
			else
				return cli_fail(2,
						"unknown --haystack '%s' (known: essay, noise, "
						"words)",
						optarg);
			break;
		case OPT_VALUE:
			if (strcmp(optarg, "number") == 0)
				a->so.value = SNIAH_NUMBER;
			else if (strcmp(optarg, "word") == 0)
				a->so.value = SNIAH_WORD;
			else if (strcmp(optarg, "uuid") == 0)
				a->so.value = SNIAH_UUID;
			else
				return cli_fail(2,
						"unknown --value '%s' (known: number, word, "
						"uuid)",
						optarg);
			break;
		case OPT_DISTR:
			if (parse_int(optarg, 0, MAX_DISTRACTORS, &l))
				return cli_fail(2, "bad value '%s' for --distractors: want 0..%d",
						optarg, MAX_DISTRACTORS);
			a->so.distractors = (int)l;
			break;
		case OPT_DEPTH:
			if (parse_double(optarg, 0, 1, &a->so.depth))
				return cli_fail(2,
						"bad value '%s' for --depth: want a number in "
						"[0,1]",
						optarg);
			break;
		case OPT_FORMAT:
			if (strcmp(optarg, "text") == 0)
				a->format = SNIAH_TEXT;
			else if (strcmp(optarg, "dir") == 0)
				a->format = SNIAH_DIR;
			else if (strcmp(optarg, "jsonl") == 0)
				a->format = SNIAH_JSONL;
			else
				return cli_fail(
				    2, "unknown --format '%s' (known: text, dir, jsonl)", optarg);
			break;
		case OPT_DOCS:
			if (parse_int(optarg, 1, SNIAH_MAX_DOCS, &a->docs))
				return cli_fail(2, "bad value '%s' for --docs: want 1..%d", optarg,
						SNIAH_MAX_DOCS);
			break;
		case OPT_UTF8:
			a->so.utf8 = true;
			break;
		case OPT_VALUES:
			if (parse_int(optarg, 1, SNIAH_MAX_VALUES, &l))
				return cli_fail(2, "bad value '%s' for --values: want 1..%d",
						optarg, SNIAH_MAX_VALUES);
			a->so.values = (int)l;
			break;
		case 'h':
			fputs(gen_usage, stdout);
			return 1;
		case ':':
			return cli_fail(2, "option '%s' needs a value", argv[optind - 1]);
		default:
			return cli_fail(2, "unknown option '%s' (see rlm bench gen --help)",
					argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_fail(2, "no suite: say which, e.g. rlm bench gen sniah --out DIR");
	if (strcmp(argv[optind], "sniah") != 0)
		return cli_fail(2, "unknown suite '%s' (known: sniah)", argv[optind]);
	if (optind + 1 < argc)
		return cli_fail(2, "unexpected argument '%s' (see rlm bench gen --help)",
				argv[optind + 1]);
	if (!a->out || !*a->out)
		return cli_fail(2, "no output directory: pass --out DIR");
	if (a->docs && a->format == SNIAH_TEXT)
		return cli_fail(2, "--docs needs --format dir or jsonl");
	if (a->so.values > 1 && a->so.depth >= 0)
		return cli_fail(2, "--depth places one needle: it cannot go with --values %d",
				a->so.values);
	if (a->docs && a->docs < a->so.values)
		return cli_fail(2,
				"--docs %ld is fewer than --values %d: each value goes in a "
				"document of its own",
				a->docs, a->so.values);
	if (a->so.value == SNIAH_WORD &&
	    (size_t)(a->so.values + a->so.distractors) > ARRAY_SIZE(value_words))
		return cli_fail(2, "too many distractors for word values: at most %zu",
				ARRAY_SIZE(value_words) - (size_t)a->so.values);
	*sizes_copy = xstrdup(sizes);
	return parse_sizes(a, *sizes_copy);
}

static uint64_t item_seed(uint64_t seed, uint64_t tokens, uint64_t i)
{
	uint64_t st = seed;
	st = splitmix64(&st) ^ tokens;
	st = splitmix64(&st) ^ i;
	return splitmix64(&st);
}

static const char *hay_name(enum sniah_haystack h)
{
	return h == SNIAH_NOISE ? "noise" : h == SNIAH_WORDS ? "words" : "essay";
}

static const char *format_name(enum sniah_format f)
{
	return f == SNIAH_DIR ? "dir" : f == SNIAH_JSONL ? "jsonl" : "text";
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
	json_add_str(j, "value_type", value_single(a->so.value));
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
	rc = sniah_write(&so, a->format, docs, path, &it, &n_docs, &needle_doc);
	if (rc == -EINVAL && so.values > 1) {
		status = cli_fail(2, "size '%s' is too small for %d values%s and %d distractors",
				  a->size_names[si], so.values,
				  a->format == SNIAH_TEXT ? "" : " in documents of their own",
				  so.distractors);
		goto out;
	}
	if (rc == -EINVAL) {
		status = cli_fail(2, "size '%s' is too small for the needle and %d distractors",
				  a->size_names[si], a->so.distractors);
		goto out;
	}
	if (rc) {
		cli_fail(1, "cannot write '%s': %s", path, strerror(-rc));
		goto out;
	}
	line = item_json(a, id, name, so.tokens, &it, n_docs, needle_doc);
	if (fprintf(jl, "%s\n", line) < 0) {
		cli_fail(1, "cannot write '%s': %s", jl_path, strerror(errno));
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

int cmd_bench_gen(int argc, char **argv)
{
	struct gen_args a = {NULL, NULL, 0, 1, 1, NULL, {0}, SNIAH_TEXT, 0};
	char *sizes = NULL, *jl_path = NULL;
	FILE *jl = NULL;
	int rc, status;
	sniah_opts_default(&a.so);
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
		status = cli_fail(1, "cannot create directory '%s': %s", a.out, strerror(-rc));
		goto out;
	}
	jl_path = xasprintf("%s/sniah.jsonl", a.out);
	if (!(jl = fopen(jl_path, "w"))) {
		status = cli_fail(1, "cannot open '%s': %s", jl_path, strerror(errno));
		goto out;
	}
	for (size_t si = 0; si < a.n_sizes && !status; si++)
		for (long i = 0; i < a.n && !status; i++)
			status = gen_item(&a, jl, jl_path, si, i);
	if (fclose(jl) != 0 && !status)
		status = cli_fail(1, "cannot write '%s': %s", jl_path, strerror(errno));
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
