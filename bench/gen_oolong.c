/* SPDX-License-Identifier: MIT */
/* bench/gen_oolong.c -- OOLONG-style windows (trec_coarse, synthesized) and
 * OOLONG's counting, user and timeline questions about them.
 *
 * DESIGN
 * An instance is a question from a template of one TREC coarse class with
 * slots filled from word lists, so its class follows from its first words
 * (docs/bench.md has the rule, and tests/test_gen.c recounts windows with
 * it) while no label name ever occurs in an instance. Each window draws
 * its own label mix (TREC's training shares, each scaled by 0.5-1.5), its
 * own pool of user IDs with Zipf weights 1/rank, and a uniform day of
 * 2022-2024 per line.
 * The header and the reminder state the number of instances, so a window is
 * drawn twice from the same seed: the first pass only measures lines to
 * see how many fit in the bytes, the second writes them and counts what the
 * questions need. No line is held in memory, so 10M tokens take no more
 * than the counts; the questions are answered from those counts.
 */
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* clang-format off */
static const char *const label_names[OOLONG_LABELS] = {
	"numeric value", "entity", "location", "description and abstract concept",
	"abbreviation", "human being",
};

/* TREC's 5,452 training questions: NUM 896, ENTY 1250, LOC 835, DESC 1162,
 * ABBR 86, HUM 1223. */
static const double trec_share[OOLONG_LABELS] = {896, 1250, 835, 1162, 86, 1223};

/* ---- instance templates: the first words give the class ----
 * %p person, %c city, %k country, %t invention, %a animal, %f dish,
 * %w title, %x acronym, %l long name, %o phenomenon, %h idiom, %d task,
 * %y why-phrase, %g word, %e year. */

static const char *const t_num[] = {
	"How many years old is %p ?", "How many people live in %c ?",
	"How far is %c from %c ?", "How long does a %a live ?", "When was the %t invented ?",
	"When did %p die ?", "What year did %p move to %c ?", "What is the population of %k ?",
	"How much does a %t cost in %k ?", "How hot does it get in %c in July ?",
	"How fast can a %a run ?", "How tall is the tallest building in %c ?",
	"How many islands does %k have ?", "When did %k adopt its flag ?",
};

static const char *const t_enty[] = {
	"What kind of animal is a %a ?", "What color is a %a 's tongue ?",
	"What instrument did %p play ?", "What language is spoken in %k ?",
	"What sport is %p famous for ?", "What is the national dish of %k ?",
	"What currency is used in %k ?", "What is the main ingredient of %f ?",
	"What disease did %p suffer from ?", "What was the name of %p 's ship ?",
	"Which novel did %p write first ?", "What award did %p win in %e ?",
	"What breed of dog did %p own ?", "What fruit is %k best known for ?",
};

static const char *const t_loc[] = {
	"Where is %c ?", "Where did %p grow up ?", "Where was the %t invented ?",
	"What country is %c in ?", "What city is the capital of %k ?",
	"In what country did %p die ?", "Where does the %a live in the wild ?",
	"What river runs through %c ?", "What mountain range crosses %k ?",
	"Where was %w first published ?", "Where can you eat the best %f ?",
};

static const char *const t_desc[] = {
	"Why do %y ?", "How do you %d ?", "How does a %t work ?",
	"What is the origin of the phrase \" %h \" ?", "What causes %o ?",
	"What is the meaning of the word %g ?", "What is the definition of %o ?",
	"Why is %o important to farmers ?", "How can you explain %o to a child ?",
};

static const char *const t_abbr[] = {
	"What does %x stand for ?", "What is the short form of %l ?",
	"What is the full form of %x ?", "What is %x an acronym for ?",
};

static const char *const t_hum[] = {
	"Who invented the %t ?", "Who wrote %w ?", "Who was the first mayor of %c ?",
	"Who painted the portrait of %p ?", "Who founded the first library in %c ?",
	"Whose face is on the coins of %k ?", "Name the scientist who first explained %o .",
	"Who coached the national team of %k in %e ?", "Who was %p 's teacher ?",
	"Who designed the main bridge of %c ?",
};

static const char *const *const templates[OOLONG_LABELS] = {
	t_num, t_enty, t_loc, t_desc, t_abbr, t_hum,
};
static const size_t n_templates[OOLONG_LABELS] = {
	ARRAY_SIZE(t_num), ARRAY_SIZE(t_enty), ARRAY_SIZE(t_loc),
	ARRAY_SIZE(t_desc), ARRAY_SIZE(t_abbr), ARRAY_SIZE(t_hum),
};

static const char *const w_first[] = {
	"Benny", "Clara", "Hugo", "Ada", "Marcus", "Nadia", "Oscar", "Lena", "Victor", "Ruth",
	"Felix", "Irene", "Tomas", "Greta", "Pablo", "Yuki", "Omar", "Elsa", "Dmitri", "Priya",
	"Jonas", "Mira", "Carlos", "Ingrid", "Kwame", "Sofia", "Rafael", "Helga", "Amir", "Chloe",
};

static const char *const w_last[] = {
	"Carter", "Moreau", "Okafor", "Lindqvist", "Tanaka", "Rossi", "Novak", "Haddad",
	"Brennan", "Schultz", "Alvarez", "Kowalski", "Mensah", "Fischer", "Ivanova", "Dubois",
	"Sato", "Quinn", "Ferreira", "Larsen", "Nakamura", "Petrov", "Osei", "Walsh", "Romero",
	"Berg", "Castillo", "Horvat", "Sandoval", "Weber",
};

static const char *const w_city[] = {
	"Lisbon", "Nairobi", "Oslo", "Lima", "Hanoi", "Montreal", "Seville", "Krakow", "Bogota",
	"Perth", "Tbilisi", "Accra", "Porto", "Kyoto", "Dublin", "Quito", "Riga", "Cairo",
	"Denver", "Manila", "Zagreb", "Tunis", "Leeds", "Osaka", "Tallinn", "Valparaiso",
	"Bergen", "Malmo", "Havana", "Dakar",
};

static const char *const w_country[] = {
	"Peru", "Norway", "Kenya", "Portugal", "Vietnam", "Chile", "Ghana", "Latvia", "Iceland",
	"Morocco", "Finland", "Uruguay", "Nepal", "Croatia", "Ecuador", "Senegal", "Estonia",
	"Bolivia", "Tunisia", "Malta", "Jordan", "Laos", "Mongolia", "Panama", "Belize",
	"Georgia", "Oman", "Slovenia", "Paraguay", "Bhutan",
};

static const char *const w_thing[] = {
	"telescope", "typewriter", "bicycle", "compass", "barometer", "zipper", "microwave oven",
	"printing press", "steam engine", "telephone", "parachute", "stethoscope", "light bulb",
	"safety pin", "ballpoint pen", "sewing machine", "jet engine", "television",
	"thermometer", "elevator", "escalator", "vacuum cleaner", "refrigerator", "camera",
	"calculator", "submarine", "helicopter", "piano", "violin", "lawn mower",
};

static const char *const w_animal[] = {
	"giraffe", "octopus", "penguin", "platypus", "koala", "walrus", "flamingo", "armadillo",
	"hedgehog", "chameleon", "jaguar", "otter", "pelican", "lemur", "bison", "gecko",
	"narwhal", "toucan", "badger", "ostrich",
};

static const char *const w_dish[] = {
	"paella", "kimchi", "sushi", "goulash", "baklava", "ceviche", "falafel", "risotto",
	"pierogi", "tagine", "moussaka", "ramen", "borscht", "empanadas", "couscous",
};

static const char *const w_title[] = {
	"The Silent Harbor", "Winter Orchard", "A Map of Small Hours", "The Glass Meridian",
	"Letters from Quito", "The Ninth Lantern", "Salt and Iron", "The Long Tide",
	"Paper Kingdoms", "The Copper Garden", "Northern Hymns", "The Last Ferry",
	"Seven Bridges", "The Amber Room", "Under the Lindens",
};

static const char *const w_acronym[] = {
	"NATO", "UNESCO", "NASA", "RSVP", "SCUBA", "LASER", "FIFA", "OPEC", "DNA", "CPU", "GPS",
	"HTML", "UNICEF", "AWOL", "PIN", "ATM", "ASAP", "IMF", "BBC", "FBI", "MRI", "LCD",
	"USB", "PDF", "CEO", "UFO",
};

static const char *const w_long[] = {
	"the United Nations", "the European Union", "the Federal Bureau of Investigation",
	"the World Trade Organization", "the International Space Station",
	"Doctor of Philosophy", "the Organization of American States", "the Royal Air Force",
	"Greenwich Mean Time", "the National Hockey League", "Bachelor of Arts",
	"the Environmental Protection Agency", "Intensive Care Unit",
	"Frequently Asked Questions", "Personal Identification Number",
};

static const char *const w_phenomenon[] = {
	"photosynthesis", "inflation", "a solar eclipse", "the placebo effect", "jet lag",
	"deja vu", "a tsunami", "continental drift", "the greenhouse effect", "a black hole",
	"compound interest", "erosion", "the northern lights", "hiccups", "static electricity",
	"a rainbow", "the tides", "a sonic boom", "rust", "frostbite",
};

static const char *const w_idiom[] = {
	"break the ice", "bite the bullet", "spill the beans", "under the weather", "cold feet",
	"the whole nine yards", "piece of cake", "rule of thumb", "red herring", "cut to the chase",
};

static const char *const w_task[] = {
	"make bread rise", "tie a bowline knot", "clean a cast iron pan", "grow tomatoes indoors",
	"play the harmonica", "remove rust from steel", "train a puppy", "fold a paper crane",
	"tune a guitar", "bake sourdough",
};

static const char *const w_why[] = {
	"cats purr", "bees dance", "leaves change color in autumn", "onions make people cry",
	"stars twinkle", "birds migrate", "whales sing", "volcanoes erupt", "glaciers move",
	"candles flicker", "mosquitoes bite", "metals conduct heat", "clouds float",
	"sailors wear earrings", "dogs wag their tails",
};

static const char *const w_word[] = {
	"serendipity", "ubiquitous", "ephemeral", "quixotic", "laconic", "sanguine", "esoteric",
	"melancholy", "nostalgia", "wanderlust",
};

static const char *const month_abbr[12] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
};
/* clang-format on */

#define PICK(r, list) ((list)[rng_below((r), ARRAY_SIZE(list))])
#define LINE_BYTES    512 /* longest instance line, with room to spare */
#define MIN_LINES     10

const char *bench_oolong_label_name(enum oolong_label l)
{
	return (unsigned)l < OOLONG_LABELS ? label_names[l] : "?";
}

int bench_oolong_default_users(uint64_t tokens)
{
	uint64_t lines = tokens * 4 / 88; /* an instance line is about 88 bytes */
	return (int)RLM_MAX(8, RLM_MIN(100, lines / 8));
}

/* ---- dates ---- */

static bool leap(int y)
{
	return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

static int month_days(int y, int m)
{
	static const int d[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	return d[m] + (m == 1 && leap(y));
}

void bench_oolong_day_date(int day, int *y, int *m, int *d)
{
	*y = 2022;
	while (day >= (leap(*y) ? 366 : 365)) {
		day -= leap(*y) ? 366 : 365;
		(*y)++;
	}
	*m = 0;
	while (day >= month_days(*y, *m))
		day -= month_days(*y, (*m)++);
	*m += 1;
	*d = day + 1;
}

/* ---- one window ---- */

struct wgen {
	struct rng r;
	double label_cdf[OOLONG_LABELS];
	double *user_cdf; /* n_users entries, the last 1 */
	int n_users;
	uint32_t ids[OOLONG_MAX_USERS];
};

static void wgen_init(struct wgen *g, const struct oolong_opts *o, int users)
{
	double sum = 0, acc = 0, w[OOLONG_LABELS];
	rng_seed(&g->r, o->seed);
	for (int l = 0; l < OOLONG_LABELS; l++)
		sum += w[l] = trec_share[l] * (0.5 + rng_unit(&g->r));
	for (int l = 0; l < OOLONG_LABELS; l++)
		g->label_cdf[l] = (acc += w[l] / sum);
	g->label_cdf[OOLONG_LABELS - 1] = 1;
	g->n_users = users;
	g->user_cdf = xmalloc((size_t)users * sizeof(double));
	for (int i = 0; i < users; i++) {
		bool dup;
		do {
			g->ids[i] = (uint32_t)(10000 + rng_below(&g->r, 90000));
			dup = false;
			for (int j = 0; j < i && !dup; j++)
				dup = g->ids[j] == g->ids[i];
		} while (dup);
	}
	sum = acc = 0;
	for (int i = 0; i < users; i++)
		sum += 1.0 / (i + 1);
	for (int i = 0; i < users; i++)
		g->user_cdf[i] = (acc += 1.0 / (i + 1) / sum);
	g->user_cdf[users - 1] = 1;
}

static int draw_user(struct wgen *g)
{
	double u = rng_unit(&g->r);
	int lo = 0, hi = g->n_users - 1;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (g->user_cdf[mid] > u)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static size_t put(char *dst, size_t at, const char *s)
{
	size_t n = strlen(s);
	memcpy(dst + at, s, n);
	return at + n;
}

/* The instance of one template of label l, without a newline. */
static size_t instance(struct rng *r, int l, char *dst)
{
	const char *t = templates[l][rng_below(r, n_templates[l])];
	size_t n = 0;
	char tmp[64];
	for (; *t; t++) {
		if (*t != '%') {
			dst[n++] = *t;
			continue;
		}
		switch (*++t) {
		case 'p':
			n = put(dst, n, PICK(r, w_first));
			dst[n++] = ' ';
			n = put(dst, n, PICK(r, w_last));
			break;
		case 'c':
			n = put(dst, n, PICK(r, w_city));
			break;
		case 'k':
			n = put(dst, n, PICK(r, w_country));
			break;
		case 't':
			n = put(dst, n, PICK(r, w_thing));
			break;
		case 'a':
			n = put(dst, n, PICK(r, w_animal));
			break;
		case 'f':
			n = put(dst, n, PICK(r, w_dish));
			break;
		case 'w':
			n = put(dst, n, PICK(r, w_title));
			break;
		case 'x':
			n = put(dst, n, PICK(r, w_acronym));
			break;
		case 'l':
			n = put(dst, n, PICK(r, w_long));
			break;
		case 'o':
			n = put(dst, n, PICK(r, w_phenomenon));
			break;
		case 'h':
			n = put(dst, n, PICK(r, w_idiom));
			break;
		case 'd':
			n = put(dst, n, PICK(r, w_task));
			break;
		case 'y':
			n = put(dst, n, PICK(r, w_why));
			break;
		case 'g':
			n = put(dst, n, PICK(r, w_word));
			break;
		default:
			snprintf(tmp, sizeof(tmp), "%u", (unsigned)(1950 + rng_below(r, 71)));
			n = put(dst, n, tmp);
			break;
		}
	}
	return n;
}

/* One line with its newline; its label, user (pool index) and day. */
static size_t next_line(struct wgen *g, char *dst, int *label, int *user, int *day)
{
	double u = rng_unit(&g->r);
	int l = 0, y, m, d;
	size_t n;
	while (l < OOLONG_LABELS - 1 && u >= g->label_cdf[l])
		l++;
	*label = l;
	*user = draw_user(g);
	*day = (int)rng_below(&g->r, OOLONG_DAYS);
	bench_oolong_day_date(*day, &y, &m, &d);
	n = (size_t)snprintf(dst, LINE_BYTES,
			     "Date: %s %02d, %d || User: %u || Instance: ", month_abbr[m - 1], d, y,
			     (unsigned)g->ids[*user]);
	n += instance(&g->r, l, dst + n);
	dst[n++] = '\n';
	return n;
}

static const char all_labels[] =
    "'numeric value', 'entity', 'location', 'description and abstract concept', "
    "'abbreviation', 'human being'";

static char *header(size_t n)
{
	return xasprintf(
	    "The following lines contain %zu general-knowledge questions, one per line. Each line "
	    "has a User ID, which is not necessarily unique, i.e. each User ID can be associated "
	    "with multiple questions. Each question has an answer that can be described as one "
	    "of 6 categories: %s (the data does not provide the labels, you need to figure out "
	    "the label from the semantics of the question). You will be asked to answer "
	    "questions about the aggregate label statistics across all examples in this dataset. "
	    "Do not try to guess, estimate, or approximate the result. Calculate the exact answer "
	    "given these datapoints.\n\n",
	    n, all_labels);
}

static char *reminder(size_t n)
{
	return xasprintf("\nRecall: the preceding lines contain %zu general-knowledge questions, "
			 "one per line. Each question's answer can be described as one of 6 "
			 "categories: %s. You will be asked to answer questions about the "
			 "aggregate label statistics across all %zu examples in this dataset. Do "
			 "not try to guess, estimate, or approximate the result. Calculate the "
			 "exact answer given these datapoints.\n",
			 n, all_labels, n);
}

static size_t digits(size_t n)
{
	size_t k = 1;
	while (n >= 10) {
		n /= 10;
		k++;
	}
	return k;
}

/* The bytes of the header and the reminder for n lines: those of 0 lines,
 * and n is in them three times. */
static size_t overhead(size_t zero, size_t n)
{
	return zero - 3 + 3 * digits(n);
}

static size_t overhead_zero(void)
{
	char *h = header(0), *t = reminder(0);
	size_t k = strlen(h) + strlen(t);
	free(h);
	free(t);
	return k;
}

static void count_line(struct oolong_window *w, int l, int u, int day)
{
	if (w->user_label[u][l] == 0 || day < w->first_day[u][l])
		w->first_day[u][l] = (uint16_t)day;
	if (w->user_label[u][l] == 0 || day > w->last_day[u][l])
		w->last_day[u][l] = (uint16_t)day;
	w->user_label[u][l]++;
	w->user_lines[u]++;
	w->label_count[l]++;
	w->day_count[day]++;
	w->lines++;
}

static int put_all(FILE *f, const char *s, size_t n)
{
	return fwrite(s, 1, n, f) == n ? 0 : errno ? -errno : -EIO;
}

int bench_oolong_generate(const struct oolong_opts *o, FILE *f, struct oolong_window **out)
{
	int users = o->users ? o->users : bench_oolong_default_users(o->tokens);
	uint64_t bytes = o->tokens * 4, total = 0;
	struct oolong_window *w;
	struct wgen g;
	struct rng start;
	char line[LINE_BYTES], *h, *t;
	size_t n = 0, zero = overhead_zero();
	int rc, l, u, day;

	*out = NULL;
	if (users < 2 || users > OOLONG_MAX_USERS || o->tokens > ((uint64_t)1 << 40))
		return -EINVAL;
	wgen_init(&g, o, users);
	start = g.r;
	/* pass 1: how many lines fit beside the header and the reminder */
	for (;;) {
		size_t k = next_line(&g, line, &l, &u, &day);
		if (total + k + overhead(zero, n + 1) > bytes)
			break;
		total += k;
		n++;
	}
	if (n < MIN_LINES) {
		free(g.user_cdf);
		return -EINVAL;
	}
	/* pass 2: the same lines, written and counted */
	g.r = start;
	w = xcalloc(1, sizeof(*w));
	w->n_users = users;
	memcpy(w->user_id, g.ids, sizeof(g.ids));
	h = header(n);
	t = reminder(n);
	rc = put_all(f, h, strlen(h));
	w->bytes = strlen(h) + strlen(t);
	for (size_t i = 0; i < n && !rc; i++) {
		size_t k = next_line(&g, line, &l, &u, &day);
		count_line(w, l, u, day);
		w->bytes += k;
		rc = put_all(f, line, k);
	}
	if (!rc)
		rc = put_all(f, t, strlen(t));
	if (!rc && fflush(f) != 0)
		rc = errno ? -errno : -EIO;
	free(h);
	free(t);
	free(g.user_cdf);
	if (rc) {
		free(w);
		return rc;
	}
	*out = w;
	return 0;
}

void bench_oolong_window_free(struct oolong_window *w)
{
	free(w);
}

/* ---- the questions ---- */

static const struct {
	const char *name, *group, *type, *answer;
} tasks[OOLONG_TASKS] = {
    {"most_freq", "counting", "MOST_FREQ", "LABEL"},
    {"least_freq", "counting", "LEAST_FREQ", "LABEL"},
    {"relative_freq", "counting", "RELATIVE_FREQ", "COMPARISON"},
    {"numeric_one_class", "counting", "NUMERIC_ONE_CLASS", "NUMERIC"},
    {"most_user", "user", "MOST_FREQ", "USER"},
    {"user_label", "user", "MOST_FREQ", "USER"},
    {"most_date", "timeline", "MOST_FREQ", "DATE"},
    {"date_n_times", "timeline", "REPRESENTED_N_TIMES", "NUMERIC"},
};

const char *bench_oolong_task_name(enum oolong_task t)
{
	return (unsigned)t < OOLONG_TASKS ? tasks[t].name : "?";
}

const char *bench_oolong_task_group(enum oolong_task t)
{
	return (unsigned)t < OOLONG_TASKS ? tasks[t].group : "?";
}

const char *bench_oolong_task_type(enum oolong_task t)
{
	return (unsigned)t < OOLONG_TASKS ? tasks[t].type : "?";
}

const char *bench_oolong_answer_type(enum oolong_task t)
{
	return (unsigned)t < OOLONG_TASKS ? tasks[t].answer : "?";
}

/* The labels present in w, in OOLONG's order, ", "-separated. */
static void present_labels(const struct oolong_window *w, char *dst, size_t cap)
{
	size_t n = 0;
	dst[0] = '\0';
	for (int l = 0; l < OOLONG_LABELS; l++)
		if (w->label_count[l])
			n += (size_t)snprintf(dst + n, cap - n, "%s%s", n ? ", " : "",
					      label_names[l]);
}

/* The index of the largest of v[0..n), or -1 when it is shared. */
static int sole_max(const size_t *v, size_t n, size_t stride)
{
	int best = -1;
	bool tie = false;
	for (size_t i = 0; i < n; i++) {
		size_t x = v[i * stride];
		if (best < 0 || x > v[(size_t)best * stride]) {
			best = (int)i;
			tie = false;
		} else if (x == v[(size_t)best * stride]) {
			tie = true;
		}
	}
	return tie ? -1 : best;
}

static int ask_label_freq(const struct oolong_window *w, bool most, struct oolong_question *q)
{
	char list[256];
	int pick = -1;
	bool tie = false;
	for (int l = 0; l < OOLONG_LABELS; l++) {
		size_t c = w->label_count[l];
		if (!c)
			continue;
		if (pick < 0 || (most ? c > w->label_count[pick] : c < w->label_count[pick])) {
			pick = l;
			tie = false;
		} else if (c == w->label_count[pick]) {
			tie = true;
		}
	}
	if (pick < 0 || tie)
		return -EAGAIN;
	if (most) {
		/* OOLONG: only when the leader is over 2% of the instances ahead */
		for (int l = 0; l < OOLONG_LABELS; l++)
			if (l != pick && w->label_count[l] &&
			    (double)(w->label_count[pick] - w->label_count[l]) <=
				0.02 * (double)w->lines)
				return -EAGAIN;
	}
	present_labels(w, list, sizeof(list));
	snprintf(q->question, sizeof(q->question),
		 "In the above data, which of the labels is the %s common? Give your final answer "
		 "in the form 'Label: answer' where answer is one of the labels: %s.",
		 most ? "most" : "least", list);
	snprintf(q->answer, sizeof(q->answer), "%s", label_names[pick]);
	return 0;
}

static int ask_relative(const struct oolong_window *w, struct rng *r, struct oolong_question *q)
{
	int order[OOLONG_LABELS * OOLONG_LABELS], n = 0;
	for (int a = 0; a < OOLONG_LABELS; a++)
		for (int b = 0; b < OOLONG_LABELS; b++)
			if (a != b && w->label_count[a] && w->label_count[b])
				order[n++] = a * OOLONG_LABELS + b;
	for (int i = n - 1; i > 0; i--) {
		int j = (int)rng_below(r, (uint64_t)i + 1), x = order[i];
		order[i] = order[j];
		order[j] = x;
	}
	for (int i = 0; i < n; i++) {
		int a = order[i] / OOLONG_LABELS, b = order[i] % OOLONG_LABELS;
		size_t ca = w->label_count[a], cb = w->label_count[b];
		double diff = ((double)ca - (double)cb) / (double)w->lines;
		if (ca != cb && diff <= 0.02 && diff >= -0.02)
			continue;
		snprintf(
		    q->question, sizeof(q->question),
		    "In the above data, is label '%s' more common, less common, or the same "
		    "frequency as label '%s'? Give your final answer in the form 'Answer: %s "
		    "is [X] %s', where [X] is 'more common than', 'less common than', or 'same "
		    "frequency as'.",
		    label_names[a], label_names[b], label_names[a], label_names[b]);
		snprintf(q->answer, sizeof(q->answer), "%s",
			 ca > cb   ? "more common than"
			 : ca < cb ? "less common than"
				   : "same frequency as");
		return 0;
	}
	return -EAGAIN;
}

static int ask_numeric(const struct oolong_window *w, struct rng *r, struct oolong_question *q)
{
	int present[OOLONG_LABELS], n = 0, l;
	for (l = 0; l < OOLONG_LABELS; l++)
		if (w->label_count[l])
			present[n++] = l;
	if (!n)
		return -EAGAIN;
	l = present[rng_below(r, (uint64_t)n)];
	snprintf(q->question, sizeof(q->question),
		 "In the above data, how many data points should be classified as label '%s'? "
		 "Give your final answer in the form 'Answer: number'.",
		 label_names[l]);
	snprintf(q->answer, sizeof(q->answer), "%zu", w->label_count[l]);
	q->numeric = true;
	return 0;
}

static int ask_user(const struct oolong_window *w, struct rng *r, bool by_label,
		    struct oolong_question *q)
{
	int u;
	if (!by_label) {
		if ((u = sole_max(w->user_lines, (size_t)w->n_users, 1)) < 0)
			return -EAGAIN;
		snprintf(q->question, sizeof(q->question),
			 "In the above data, which user is represented most often? Give your final "
			 "answer in the form 'User: [X]', where [X] is the user ID.");
	} else {
		int first = (int)rng_below(r, OOLONG_LABELS), l = 0;
		u = -1;
		for (int i = 0; i < OOLONG_LABELS && u < 0; i++) {
			l = (first + i) % OOLONG_LABELS;
			if (w->label_count[l])
				u = sole_max(&w->user_label[0][l], (size_t)w->n_users,
					     OOLONG_LABELS);
		}
		if (u < 0)
			return -EAGAIN;
		snprintf(
		    q->question, sizeof(q->question),
		    "In the above data, which user has the most instances with the label %s? "
		    "Give your final answer in the form 'User: [X]', where [X] is the user ID.",
		    label_names[l]);
	}
	snprintf(q->answer, sizeof(q->answer), "%u", (unsigned)w->user_id[u]);
	return 0;
}

static int ask_date(const struct oolong_window *w, bool most, struct oolong_question *q)
{
	int y, m, d;
	if (most) {
		int day = sole_max(w->day_count, OOLONG_DAYS, 1);
		if (day < 0)
			return -EAGAIN;
		bench_oolong_day_date(day, &y, &m, &d);
		snprintf(q->question, sizeof(q->question),
			 "In the above data, which date is represented most often? Give your final "
			 "answer in the form 'Date: [X]', where [X] is the date in the format "
			 "MM/DD/YYYY.");
		snprintf(q->answer, sizeof(q->answer), "%02d/%02d/%d", m, d, y);
	} else {
		/* OOLONG: n is the count of the fourth most frequent date */
		size_t top[4] = {0, 0, 0, 0}, n, dates = 0;
		for (int i = 0; i < OOLONG_DAYS; i++) {
			size_t c = w->day_count[i];
			for (int k = 0; k < 4; k++) {
				if (c > top[k]) {
					memmove(top + k + 1, top + k,
						(3 - (size_t)k) * sizeof(size_t));
					top[k] = c;
					break;
				}
			}
		}
		if ((n = top[3]) == 0)
			return -EAGAIN;
		for (int i = 0; i < OOLONG_DAYS; i++)
			dates += w->day_count[i] == n;
		snprintf(
		    q->question, sizeof(q->question),
		    "In the above data, how many dates are represented exactly %zu times? Give "
		    "your final answer in the form 'Answer: [X]', where [X] is the number of "
		    "dates represented exactly %zu times.",
		    n, n);
		snprintf(q->answer, sizeof(q->answer), "%zu", dates);
		q->numeric = true;
	}
	return 0;
}

int bench_oolong_ask(const struct oolong_window *w, enum oolong_task t, struct rng *r,
	       struct oolong_question *q)
{
	memset(q, 0, sizeof(*q));
	q->task = t;
	if (w->lines == 0)
		return -EAGAIN;
	switch (t) {
	case OOLONG_MOST_FREQ:
		return ask_label_freq(w, true, q);
	case OOLONG_LEAST_FREQ:
		return ask_label_freq(w, false, q);
	case OOLONG_RELATIVE_FREQ:
		return ask_relative(w, r, q);
	case OOLONG_NUMERIC_ONE_CLASS:
		return ask_numeric(w, r, q);
	case OOLONG_MOST_USER:
		return ask_user(w, r, false, q);
	case OOLONG_USER_LABEL:
		return ask_user(w, r, true, q);
	case OOLONG_MOST_DATE:
		return ask_date(w, true, q);
	case OOLONG_DATE_N_TIMES:
		return ask_date(w, false, q);
	default:
		return -EINVAL;
	}
}
