/* SPDX-License-Identifier: MIT */
/* common/common.h -- small shared pieces: allocation, errors, buffers, time,
 * random numbers, logging. Everything two or more modules need and nothing
 * more (text helpers: text.h). */
#ifndef RLM_COMMON_H
#define RLM_COMMON_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "text.h" /* the text_ helpers: parsing numbers, URLs, UTF-8 */

#define RLM_VERSION "0.1.0"
/* The commit this binary was built from: 12 hex digits, with "-dirty"
 * after them when tracked files differed from it; "unknown" when it was
 * not built from a git checkout (a tarball). Written at build time by
 * scripts/version.sh (build/gen/version.c). */
extern const char rlm_git_commit[];

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define RLM_MIN(a, b) ((a) < (b) ? (a) : (b))
#define RLM_MAX(a, b) ((a) > (b) ? (a) : (b))
#define RLM_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define RLM_UNUSED __attribute__((unused))

/* ---- allocation: small allocations abort on failure ---- */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Formatted string in a fresh allocation; the caller frees it. */
char *xasprintf(const char *fmt, ...) RLM_PRINTF(1, 2);

/* ---- errors ----
 * Functions return 0 or a negative code: -errno where it fits, otherwise one
 * of these. Where a cause needs words they fill an optional struct rlm_err. */
enum {
	RLM_EINVAL = -1000, /* bad argument or input */
	RLM_ETOOBIG,        /* a size cap was hit */
	RLM_EPARSE,         /* malformed input (JSON, HTTP, UTF-8, ...) */
	RLM_EHTTP,          /* transport failure: connect, reset, timeout */
	RLM_EPROVIDER,      /* the model provider answered with an error */
	RLM_EAUTH,          /* missing or rejected credentials */
	RLM_ETIMEOUT,       /* a deadline passed */
	RLM_ECANCEL,        /* cancelled by the caller */
	RLM_EBUDGET,        /* a token, cost, call or time budget ran out */
	RLM_ESANDBOX,       /* the sandbox refused or could not be set up */
	RLM_EIO,            /* file or pipe I/O failed */
	RLM_ENOTFOUND,      /* a named thing does not exist */
	RLM_ESTORE,         /* the store's database failed: corrupt, locked, newer */
};

struct rlm_err {
	int code;       /* 0 or a negative code, as returned */
	char msg[512];  /* git-style message: lower case, cause first */
};

/* The error helpers are part of the public API (exported by librlm.so). */
#pragma GCC visibility push(default)
/* Fill err (when not NULL) and return code, so callers can
 * `return rlm_err_set(err, RLM_EINVAL, "...")`. */
int rlm_err_set(struct rlm_err *err, int code, const char *fmt, ...) RLM_PRINTF(3, 4);
/* Prefix an existing message: "context: old message". */
void rlm_err_prefix(struct rlm_err *err, const char *fmt, ...) RLM_PRINTF(2, 3);
void rlm_err_clear(struct rlm_err *err);
/* A static description of a code (also handles -errno). */
const char *rlm_strerror(int code);
#pragma GCC visibility pop

/* ---- growable buffer with a hard cap ----
 * git's strbuf promise: after buf_init (or BUF_INIT) p is never NULL and
 * always NUL-terminated: an empty buffer's p is "" (buf_slopbuf, shared and
 * never written) until the first append allocates. Appending past `max`
 * fails with RLM_ETOOBIG and leaves the buffer as it was. A buffer that
 * was only zeroed (calloc, = {0}) works too, but its p is NULL until the
 * first append. */
struct buf {
	char *p;      /* data, NUL-terminated; "" until the first append */
	size_t len;   /* bytes used, not counting the NUL */
	size_t cap;   /* bytes allocated */
	size_t max;   /* hard cap on len; 0 means SIZE_MAX */
};

extern char buf_slopbuf[1];
#define BUF_INIT {buf_slopbuf, 0, 0, 0}

void buf_init(struct buf *b, size_t max);
int buf_append(struct buf *b, const void *s, size_t n);
int buf_puts(struct buf *b, const char *s);
int buf_putc(struct buf *b, char c);
int buf_printf(struct buf *b, const char *fmt, ...) RLM_PRINTF(2, 3);
int buf_vprintf(struct buf *b, const char *fmt, va_list ap);
/* Make room for n more bytes without changing len. */
int buf_reserve(struct buf *b, size_t n);
void buf_reset(struct buf *b);
/* Free the storage; the buffer can be reused after buf_init. */
void buf_release(struct buf *b);
/* Hand the string out (never NULL: an empty buffer gives ""); the caller
 * frees it and the buffer is left empty. */
char *buf_detach(struct buf *b, size_t *len);

/* ---- threads ---- */
/* pthread_create of fn(arg) (attr may be NULL), the thread born with name
 * (at most 15 bytes): the caller takes it for the moment of the create, so
 * that no one who reads thread names (/proc/PID/task/TID/comm) sees the new
 * thread under its creator's. 0 or pthread_create's error. */
int thread_start(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg,
		 const char *name);

/* ---- time ---- */
int64_t time_now_ns(void);          /* CLOCK_MONOTONIC */
int64_t time_wall_ms(void);         /* CLOCK_REALTIME, ms since the epoch */
void time_sleep_ns(int64_t ns);     /* sleeps the whole interval despite signals */

/* ---- random numbers: xoshiro256** seeded by rng_splitmix64 ----
 * Not thread-safe: each thread or object keeps its own state. */
struct rng {
	uint64_t s[4];
};
void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
/* Uniform in [0, n); n > 0. */
uint64_t rng_below(struct rng *r, uint64_t n);
/* Uniform in [0, 1). */
double rng_unit(struct rng *r);
uint64_t rng_splitmix64(uint64_t *state);

/* ---- logging to stderr, thread-safe, one line per call ---- */
enum { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };
extern int rlm_log_level; /* default LOG_WARN; set once at start */
void rlm_log(int level, const char *fmt, ...) RLM_PRINTF(2, 3);
/* Say "rlm: error: <message>" and return status: a command's exit status
 * (1 failure, 2 bad usage), for `return log_fail(2, "...")`. */
int log_fail(int status, const char *fmt, ...) RLM_PRINTF(2, 3);
#define log_error(...) rlm_log(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) rlm_log(LOG_WARN, __VA_ARGS__)
#define log_info(...) rlm_log(LOG_INFO, __VA_ARGS__)
#define log_debug(...)                                                                             \
	do {                                                                                       \
		if (rlm_log_level >= LOG_DEBUG)                                                     \
			rlm_log(LOG_DEBUG, __VA_ARGS__);                                           \
	} while (0)

/* ---- files ---- */
/* Read a whole file into a fresh NUL-terminated buffer, at most max bytes.
 * Returns 0, -errno, or RLM_ETOOBIG, with a message in err. */
int file_read(const char *path, size_t max, char **out, size_t *len, struct rlm_err *err);
/* Write all of buf to fd, retrying on EINTR and short writes. */
int file_write_all(int fd, const void *buf, size_t len);

#endif
