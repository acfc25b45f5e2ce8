/* SPDX-License-Identifier: MIT */
/* corpus/decode.c -- text in any encoding: byte-order marks, UTF-16 and
 * UTF-32, legacy encodings through iconv, invalid UTF-8 replaced with
 * U+FFFD, and gzip files read decompressed.
 *
 * DESIGN
 * Nothing is converted that need not be: corpus__plan looks at a file's
 * bytes once (the scan a valid file needs anyway) and says whether they are
 * UTF-8 as they stand, after a mark that is skipped by offset. Only then is
 * anything copied: decoded into the buffer the loaders build (struct tbuf),
 * within its cap. A byte-order mark always wins; without one, valid UTF-8
 * is UTF-8 even when corpus_opts.encoding names another encoding, so a
 * directory of mixed files reads its UTF-8 files as they are and the rest
 * in the named encoding. Invalid sequences become U+FFFD: in UTF-8 each
 * maximal subpart (Unicode 3.9, the W3C/WHATWG practice), elsewhere one
 * code unit at a time; the bytes replaced are counted for the warning.
 * gzip goes through zlib's gzread, so a directory's .gz file is looked at
 * head first like any other, and a bomb stops at the cap.
 */
#include "corpus_int.h"

#include "../common/text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <iconv.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>

#define FFFD "\xef\xbf\xbd"

/* ---- encodings ---- */

/* Is name UTF-8 as we read it: NULL, "", "auto", "utf-8", "UTF8", "utf_8". */
bool corpus__enc_is_utf8(const char *name)
{
	char k[8];
	size_t n = 0;
	if (!name || !*name || strcasecmp(name, "auto") == 0)
		return true;
	for (const char *s = name; *s; s++) {
		if (*s == '-' || *s == '_')
			continue;
		if (n == sizeof(k) - 1)
			return false;
		k[n++] = (char)text_to_lower(*s);
	}
	k[n] = '\0';
	return strcmp(k, "utf8") == 0;
}

/* Bytes of one code unit of the encoding called name: 2 for UTF-16 and
 * UCS-2, 4 for UTF-32 and UCS-4, else 1 (a bad byte is skipped alone). */
static unsigned unit_of(const char *name)
{
	if (strncasecmp(name, "utf", 3) != 0 && strncasecmp(name, "ucs", 3) != 0)
		return 1;
	if (strstr(name, "16") || strstr(name, "-2") || strstr(name, "2LE") ||
	    strstr(name, "2BE") || strcasecmp(name, "ucs2") == 0)
		return 2;
	if (strstr(name, "32") || strstr(name, "-4") || strcasecmp(name, "ucs4") == 0)
		return 4;
	return 1;
}

/* A converter from the encoding called name to UTF-8, or (iconv_t)-1 with
 * errno. Python's spellings are tried too: "latin_1" and "latin-1" are
 * glibc's "latin1", "windows_1252" its "windows-1252". */
static iconv_t open_from(const char *name)
{
	char alt[64];
	size_t n = strlen(name);
	iconv_t cd = iconv_open("UTF-8", name);
	if (cd != (iconv_t)-1 || errno != EINVAL || n >= sizeof(alt))
		return cd;
	for (size_t i = 0; i <= n; i++)
		alt[i] = name[i] == '_' ? '-' : name[i];
	if ((cd = iconv_open("UTF-8", alt)) != (iconv_t)-1)
		return cd;
	n = 0;
	for (const char *p = name; *p; p++)
		if (*p != '-' && *p != '_')
			alt[n++] = *p;
	alt[n] = '\0';
	if ((cd = iconv_open("UTF-8", alt)) != (iconv_t)-1)
		return cd;
	errno = EINVAL;
	return cd;
}

int corpus_encoding_check(const char *name, struct rlm_err *err)
{
	iconv_t cd;
	if (corpus__enc_is_utf8(name))
		return 0;
	if ((cd = open_from(name)) == (iconv_t)-1)
		return rlm_err_set(err, RLM_EINVAL,
				   "unknown encoding '%s' (`iconv --list` names the known ones)",
				   name);
	iconv_close(cd);
	return 0;
}

void corpus__plan(const char *s, size_t n, const char *encoding, struct corpus__enc *e)
{
	static const struct {
		const char *mark;
		size_t len;
		const char *from;
		unsigned unit;
	} boms[] = {
	    /* clang-format off */
	    /* UTF-32LE first: its mark begins with UTF-16LE's */
	    {"\xff\xfe\0\0", 4, "UTF-32LE", 4},
	    {"\0\0\xfe\xff", 4, "UTF-32BE", 4},
	    {"\xef\xbb\xbf", 3, NULL, 1},
	    {"\xff\xfe", 2, "UTF-16LE", 2},
	    {"\xfe\xff", 2, "UTF-16BE", 2},
	    /* clang-format on */
	};
	const char *nul;
	*e = (struct corpus__enc){NULL, 0, 1, SIZE_MAX, SIZE_MAX};
	for (size_t i = 0; i < ARRAY_SIZE(boms); i++) {
		if (n >= boms[i].len && memcmp(s, boms[i].mark, boms[i].len) == 0) {
			e->bom = boms[i].len;
			e->from = boms[i].from;
			e->unit = boms[i].unit;
			break;
		}
	}
	if (e->from)
		return;
	s += e->bom;
	n -= e->bom;
	if ((nul = memchr(s, 0, n)))
		e->nul = (size_t)(nul - s);
	if (text_utf8_valid(s, n, &e->bad))
		e->bad = SIZE_MAX;
	if ((e->bad != SIZE_MAX || e->nul != SIZE_MAX) && !e->bom &&
	    !corpus__enc_is_utf8(encoding)) {
		e->from = encoding;
		e->unit = unit_of(encoding);
	}
}

/* ---- UTF-8 repaired ---- */

/* Bytes of the maximal subpart of the ill-formed sequence at s[0..n): the
 * longest start of a well-formed sequence there, at least 1 byte. */
static size_t bad_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0], lo = 0x80, hi = 0xbf;
	size_t need, k = 1;
	if (c >= 0xc2 && c <= 0xdf) {
		need = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		need = 3;
		lo = c == 0xe0 ? 0xa0 : lo;
		hi = c == 0xed ? 0x9f : hi;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 4;
		lo = c == 0xf0 ? 0x90 : lo;
		hi = c == 0xf4 ? 0x8f : hi;
	} else {
		return 1;
	}
	if (k < n && s[k] >= lo && s[k] <= hi) {
		k++;
		while (k < n && k < need && text_utf8_is_cont(s[k]))
			k++;
	}
	return RLM_MIN(k, need - 1);
}

/* Append s[0..n) to b with each maximal ill-formed subpart replaced. */
static int utf8_repair(const char *s, size_t n, bool strict, struct tbuf *b, size_t *replaced,
		       size_t *bad)
{
	size_t i = 0;
	int rc;
	while (i < n) {
		size_t at = 0, run, k;
		bool ok = text_utf8_valid(s + i, n - i, &at);
		if (!ok && strict) {
			*bad = i + at;
			return RLM_EPARSE;
		}
		run = ok ? n - i : at;
		if ((rc = corpus__tb_reserve(b, run + (ok ? 0 : 3))))
			return rc;
		memcpy(b->p + b->len, s + i, run);
		b->len += run;
		i += run;
		if (ok)
			break;
		k = bad_len((const unsigned char *)s + i, n - i);
		memcpy(b->p + b->len, FFFD, 3);
		b->len += 3;
		*replaced += k;
		i += k;
	}
	if (b->p)
		b->p[b->len] = '\0';
	return 0;
}

/* Bytes of s[0..n) that utf8_repair would replace. */
static size_t utf8_bad_bytes(const char *s, size_t n)
{
	size_t i = 0, bad = 0, at;
	while (i < n && !text_utf8_valid(s + i, n - i, &at)) {
		size_t k = bad_len((const unsigned char *)s + i + at, n - i - at);
		bad += k;
		i += at + k;
	}
	return bad;
}

/* ---- iconv ---- */

/* Append s[0..n) converted by cd to b, within b->max: the output grows in
 * steps, an invalid or cut sequence becomes U+FFFD (unit bytes skipped,
 * all of them at the end) unless strict. As corpus__decode returns. */
static int iconv_into(iconv_t cd, const char *s, size_t n, unsigned unit, bool strict,
		      struct tbuf *b, size_t *replaced, size_t *bad)
{
	size_t max = b->max ? b->max : SIZE_MAX / 4, inleft = n, extra = 64;
	char *in = (char *)(uintptr_t)s;
	for (;;) {
		/* at the end of the input: the shift sequence back to the
		 * initial state, for stateful encodings */
		bool flush = inleft == 0, limited;
		size_t room = max - b->len, outleft, r;
		char *out;
		int rc, e;
		if (!room && !flush)
			return RLM_ETOOBIG;
		if ((rc = corpus__tb_reserve(b, RLM_MIN(inleft + inleft / 2 + extra, room))))
			return rc;
		out = b->p + b->len;
		outleft = RLM_MIN(b->cap - b->len - 1, room);
		limited = outleft == room;
		r = flush ? iconv(cd, NULL, NULL, &out, &outleft)
			  : iconv(cd, &in, &inleft, &out, &outleft);
		e = errno;
		b->len = (size_t)(out - b->p);
		b->p[b->len] = '\0';
		if (r != (size_t)-1) {
			if (flush)
				return 0;
			continue;
		}
		if (e == E2BIG) {
			if (limited)
				return RLM_ETOOBIG;
			extra *= 2;
			continue;
		}
		if (flush || (e != EILSEQ && e != EINVAL))
			return -e;
		if (strict) {
			*bad = n - inleft;
			return RLM_EPARSE;
		}
		/* EINVAL: the input ends inside a sequence */
		r = e == EINVAL ? inleft : RLM_MIN((size_t)unit, inleft);
		if ((rc = corpus__tb_reserve(b, 3)))
			return rc;
		memcpy(b->p + b->len, FFFD, 3);
		b->len += 3;
		b->p[b->len] = '\0';
		in += r;
		inleft -= r;
		*replaced += r;
		iconv(cd, NULL, NULL, NULL, NULL); /* back to the initial state */
	}
}

int corpus__decode(const struct corpus__enc *e, const char *s, size_t n, bool strict,
		   struct tbuf *b, size_t *replaced, size_t *bad)
{
	iconv_t cd;
	int rc;
	if (!e->from)
		return utf8_repair(s, n, strict, b, replaced, bad);
	if ((cd = open_from(e->from)) == (iconv_t)-1)
		return errno == EINVAL ? RLM_EINVAL : -errno;
	rc = iconv_into(cd, s, n, e->unit, strict, b, replaced, bad);
	iconv_close(cd);
	return rc;
}

int corpus__tb_decode(struct tbuf *b, size_t start, const char *what, const char *encoding,
		      bool strict, size_t *replaced, const char **from, struct rlm_err *err)
{
	struct corpus__enc e;
	size_t n = b->len - start, bad = 0;
	char *raw;
	int rc;
	corpus__plan(b->p + start, n, encoding, &e);
	if (from)
		*from = e.from;
	if (!e.from && e.bad == SIZE_MAX) {
		/* UTF-8 already: only a mark to drop */
		if (e.bom) {
			memmove(b->p + start, b->p + start + e.bom, n - e.bom);
			b->len -= e.bom;
			b->p[b->len] = '\0';
		}
		return 0;
	}
	if (!e.from && strict) {
		b->len = start;
		b->p[start] = '\0';
		return rlm_err_set(err, RLM_EPARSE, "invalid UTF-8 in %s at byte %zu", what,
				   e.bom + e.bad);
	}
	raw = xmalloc(n - e.bom + 1);
	memcpy(raw, b->p + start + e.bom, n - e.bom);
	b->len = start;
	b->p[start] = '\0';
	rc = corpus__decode(&e, raw, n - e.bom, strict, b, replaced, &bad);
	free(raw);
	if (!rc)
		return 0;
	b->len = start;
	if (b->p)
		b->p[start] = '\0';
	return corpus__decode_err(rc, &e, what, bad, b->max, err);
}

int corpus__decode_err(int rc, const struct corpus__enc *e, const char *what, size_t bad,
		       size_t max, struct rlm_err *err)
{
	if (rc == RLM_EPARSE)
		return rlm_err_set(err, rc, "invalid %s in %s at byte %zu",
				   e->from ? e->from : "UTF-8", what, e->bom + bad);
	if (rc == RLM_ETOOBIG)
		return rlm_err_set(err, rc, "%s is larger than %zu bytes once decoded", what, max);
	if (rc == RLM_EINVAL)
		return rlm_err_set(err, rc, "unknown encoding '%s'", e->from);
	return rlm_err_set(err, rc, "cannot decode %s: %s", what, strerror(-rc));
}

const char *corpus__head_why(const char *s, size_t n, const char *encoding, bool strict)
{
	struct corpus__enc e;
	corpus__plan(s, n, encoding, &e);
	if (e.from)
		return e.unit == 1 && e.nul != SIZE_MAX ? "binary" : NULL;
	if (e.nul != SIZE_MAX)
		return "binary";
	if (e.bad == SIZE_MAX)
		return NULL;
	if (strict)
		return "not text";
	/* A few bad bytes are text in another encoding (latin-1 read as
	 * UTF-8); many are something else. */
	if (utf8_bad_bytes(s + e.bom + e.bad, n - e.bom - e.bad) > (n - e.bom) / 4)
		return "not text";
	return NULL;
}

void corpus__warn_replaced(const char *path, const char *enc, size_t n)
{
	char count[32];
	log_warn("%s: %s invalid %s byte%s replaced with U+FFFD", path,
		 text_fmt_count(count, sizeof(count), (int64_t)n), enc ? enc : "UTF-8",
		 n == 1 ? "" : "s");
}

bool corpus__gz_name(const char *path)
{
	size_t n = strlen(path);
	return n > 3 && strcasecmp(path + n - 3, ".gz") == 0;
}

/* ---- gzip ---- */

int corpus__in_init(struct corpus__in *in, int fd, bool gz)
{
	int dfd;
	memset(in, 0, sizeof(*in));
	in->fd = fd;
	if (!gz)
		return 0;
	if ((dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
		return -errno;
	if (!(in->gz = gzdopen(dfd, "rb"))) {
		close(dfd);
		return -ENOMEM;
	}
	gzbuffer(in->gz, 128 << 10);
	return 0;
}

void corpus__in_release(struct corpus__in *in)
{
	if (in->gz)
		gzclose_r(in->gz);
	in->gz = NULL;
}

/* The gzip stream's error after a read returned got (-1 or 0), as a code
 * with in->why. */
static ssize_t gz_error(struct corpus__in *in, int got)
{
	int zerr = 0;
	const char *msg = gzerror(in->gz, &zerr);
	if (zerr == Z_ERRNO)
		return errno ? -errno : -EIO;
	if (zerr == Z_MEM_ERROR)
		return -ENOMEM;
	if (got == 0 && zerr == Z_BUF_ERROR)
		snprintf(in->why, sizeof(in->why), "gzip data cut short");
	else if (got == 0 && zerr == Z_OK)
		return 0;
	else
		snprintf(in->why, sizeof(in->why), "corrupt gzip data (%s)", msg ? msg : "?");
	return RLM_EPARSE;
}

ssize_t corpus__in_read(struct corpus__in *in, char *dst, size_t n)
{
	int got;
	if (!in->gz) {
		ssize_t k;
		do
			k = read(in->fd, dst, n);
		while (k < 0 && errno == EINTR);
		return k < 0 ? -errno : k;
	}
	got = gzread(in->gz, dst, (unsigned)RLM_MIN(n, (size_t)1 << 30));
	if (got > 0 && gzdirect(in->gz)) {
		snprintf(in->why, sizeof(in->why), "not gzip data");
		return RLM_EPARSE;
	}
	return got > 0 ? got : gz_error(in, got);
}

int corpus__in_read_all(struct corpus__in *in, struct tbuf *b, size_t hint)
{
	size_t max = b->max ? b->max : SIZE_MAX / 4, chunk = hint < 65536 ? 65536 : hint + 1;
	for (;;) {
		size_t room = max - b->len;
		ssize_t n;
		int rc;
		if (room == 0) {
			char c;
			n = corpus__in_read(in, &c, 1);
			return n < 0 ? (int)n : n ? RLM_ETOOBIG : 0;
		}
		if (b->cap <= b->len + 1 && (rc = corpus__tb_reserve(b, RLM_MIN(room, chunk))))
			return rc; /* not RLM_ETOOBIG: the size fits in room */
		n = corpus__in_read(in, b->p + b->len, RLM_MIN(b->cap - b->len - 1, room));
		if (n < 0)
			return (int)n;
		if (n == 0)
			return 0;
		b->len += (size_t)n;
		b->p[b->len] = '\0';
		chunk = RLM_MAX(b->len, 65536); /* past the hint: double */
	}
}
