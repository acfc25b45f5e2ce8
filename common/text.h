/* SPDX-License-Identifier: MIT */
/* common/text.h -- the one copy of the small text helpers every module
 * needs: UTF-8 sequences and code points, ASCII character classes, trimming,
 * numbers and sizes for people, and what a NONE reply is.
 *
 * Everything here works on bytes and is locale-independent: the classes are
 * ASCII's, bytes >= 0x80 belong to none of them, and nothing reads LC_CTYPE.
 * Strings travel as (s, n) and need not be NUL-terminated unless a comment
 * says so. No function allocates; all may be called from any thread. */
#ifndef RLM_TEXT_H
#define RLM_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- UTF-8 ----
 * Well-formed is RFC 3629's: the shortest form, no surrogates (U+D800 to
 * U+DFFF), nothing above U+10FFFF; so C0, C1 and F5..FF never start a
 * sequence. */

/* Bytes of the well-formed sequence at s[0..n): 1 for an ASCII byte (NUL
 * included), 2 to 4 for the others; 0 when n is 0 or the bytes there are
 * not one (a stray continuation byte, a lead byte that is never valid, an
 * overlong form, a surrogate, above U+10FFFF, or a sequence that n cuts). */
size_t text_utf8_seq_len(const char *s, size_t n);
/* text_utf8_seq_len, with the code point in *cp (left alone on 0). */
size_t text_utf8_decode(const char *s, size_t n, uint32_t *cp);
/* Is s[0..len) well-formed UTF-8? On false, *bad (when not NULL) is the
 * offset of the first byte of the first ill-formed sequence. */
bool text_utf8_valid(const char *s, size_t len, size_t *bad);
/* The largest n <= len such that s[0..n) does not end inside a sequence:
 * a cut at n never splits a character. Continuation bytes after an ASCII
 * byte or a whole sequence are stray and kept; alone at the start they go. */
size_t text_utf8_floor(const char *s, size_t len);
/* Characters of s[0..len): the bytes that are not continuation bytes, which
 * on valid UTF-8 is the number of code points (Python's len()); on invalid
 * UTF-8 a lead byte counts as one and a stray continuation byte as none. */
size_t text_utf8_count(const char *s, size_t len);
/* Byte offset in s[0..len) where character number n (from 0, counted as
 * text_utf8_count counts) starts; len when s holds n characters or fewer. */
size_t text_utf8_offset(const char *s, size_t len, size_t n);

/* Is c (a char or an unsigned char) a continuation byte, 10xxxxxx? */
static inline bool text_utf8_is_cont(int c)
{
	return ((unsigned)c & 0xc0) == 0x80;
}

/* ---- ASCII character classes ----
 * c may be a char (negative for bytes >= 0x80), an unsigned char or EOF;
 * only ASCII is ever in a class. The C locale's isspace() and friends,
 * without the locale and without the undefined behaviour of a negative
 * char. */

/* ' ', \t, \n, \v, \f, \r */
static inline bool text_is_space(int c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

static inline bool text_is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static inline bool text_is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static inline bool text_is_alnum(int c)
{
	return text_is_alpha(c) || text_is_digit(c);
}

/* c in lower case when it is an ASCII upper-case letter, else c. */
static inline int text_to_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* c in upper case when it is an ASCII lower-case letter, else c. */
static inline int text_to_upper(int c)
{
	return c >= 'a' && c <= 'z' ? c - ('a' - 'A') : c;
}

/* ---- white space ---- */

/* Is s[0..n) empty or all text_is_space? */
bool text_is_blank(const char *s, size_t n);
/* Narrow *s, *n to the text without the text_is_space bytes around it. */
void text_trim(const char **s, size_t *n);

/* ---- numbers for people ----
 * Each writes a NUL-terminated string into buf[0..n), n >= 1, cut to fit,
 * and returns buf. */

/* v with thousands separators: 1234567 -> "1,234,567", -1234 -> "-1,234". */
char *text_fmt_count(char *buf, size_t n, int64_t v);
/* A size in bytes in the largest power-of-1024 unit that divides it
 * exactly: "2G", "512M", "64K", else the bytes: "1000", "0". The form
 * --mem-limit and --scratch-limit take. */
char *text_fmt_size(char *buf, size_t n, uint64_t v);

/* ---- NONE ----
 * Prompts ask a model to reply NONE when it finds nothing; every strategy
 * and the simulator read that reply through this one definition. */

/* Is s[0..n) a NONE reply? The word none in any case, with white space,
 * quotes (' " `) and Markdown emphasis (*) around it and one final period
 * allowed: "NONE", "none", "'NONE'", "\"None\"", "NONE.", " none. ",
 * "**NONE**". Nothing else is: not "NONE of them", "no", "" or "NONE..". */
bool text_is_none(const char *s, size_t n);

/* A duration in words: "30 s", "1.5 s", "250 ms". Returns buf. */
char *text_fmt_duration(char *buf, size_t n, int64_t ns);
/* Parse a size: decimal digits with an optional fraction ("1.5"), then an
 * optional unit K, M, G or T (powers of 1024, either case) that "B" or "iB"
 * may follow, or a lone "B": "512M", "2G", "1.5GiB", "1024". Nothing else
 * (no sign, blank, hex, exponent, inf). Returns 0 or RLM_EINVAL. */
int text_parse_size(const char *s, uint64_t *out);

/* ---- parsing numbers with suffixes ---- */
/* Parse "1000", "8k", "32K", "1.5M", "10M", "2G" (powers of 1000).
 * Returns 0 or RLM_EINVAL. */
int text_parse_count(const char *s, uint64_t *out);
/* Parse a non-negative integer that must fit in an int; 0 or RLM_EINVAL. */
int text_parse_int(const char *s, long min, long max, long *out);
int text_parse_double(const char *s, double min, double max, double *out);

/* ---- text for a terminal ----
 * Text from outside (a model's reply, the output of model code, a file of
 * the context, a request) can hold bytes a terminal acts on instead of
 * showing: ESC starts sequences that set the window title (OSC 0), write
 * the clipboard (OSC 52) or clear the screen (CSI 2J); a lone CR or BS
 * overwrites what was shown; the C1 controls (U+0080 to U+009F, 0x9b is
 * CSI) act on terminals that decode them. Before such text is written to
 * a terminal it goes through text_term_escape. */

struct buf;

/* text_term_escape's flag for JSON text: controls as \u00XX, valid inside
 * its strings (cJSON escapes C0 but not DEL or C1). */
#define TEXT_TERM_JSON 1

/* Append s[0..n) to b as a terminal shows it without acting on it. Kept
 * as they are: newline, tab, CR right before a newline (a CRLF line end),
 * printable ASCII and every well-formed UTF-8 sequence of a code point
 * from U+00A0 up. Shown escaped: the other C0 controls (NUL to 0x1f) and
 * DEL as \xNN ("\x1b", "\x7f"; a lone CR is "\r"), the C1 code points
 * as \u00XX ("\u009b"), and each byte of ill-formed UTF-8 as \xNN ("\xff",
 * "\x9b": a raw 0x9b is CSI to an 8-bit terminal). With TEXT_TERM_JSON
 * every control is \u00XX (a lone CR "\u000d"). A backslash is not
 * escaped: the result is for reading, not for decoding back. Returns 0,
 * or RLM_ETOOBIG when b's cap is reached (b then holds a prefix). */
int text_term_escape(struct buf *b, const char *s, size_t n, int flags);
/* Would text_term_escape change s[0..n)? (false: write it as it is) */
bool text_term_safe(const char *s, size_t n);

/* ---- URLs ---- */
/* s with the "user:password@" of every URL in it removed (s may be a
 * comma-separated list of URLs), and the values of query parameters whose
 * names look secret (key, token, secret, password, auth, sig, ...:
 * ?api_key=...) replaced by REDACTED: a URL as it may be stored or shown,
 * a credential left out. Text that is no URL is copied as it is. The
 * caller frees the result. */
char *text_url_without_userinfo(const char *s);

#endif
