/* SPDX-License-Identifier: MIT */
/* common/util.c -- threads (thread_), time (time_) and random numbers
 * (rng_). */
#include "common.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <time.h>

int thread_start(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg,
		 const char *name)
{
	char mine[16] = "";
	int rc;
	bool named = prctl(PR_GET_NAME, mine, 0, 0, 0) == 0 &&
		     prctl(PR_SET_NAME, name, 0, 0, 0) == 0;
	rc = pthread_create(th, attr, fn, arg);
	if (named)
		prctl(PR_SET_NAME, mine, 0, 0, 0);
	return rc;
}

int64_t time_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t time_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void time_sleep_ns(int64_t ns)
{
	struct timespec ts;
	if (ns <= 0)
		return;
	ts.tv_sec = ns / 1000000000;
	ts.tv_nsec = ns % 1000000000;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

uint64_t rng_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = rng_splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
	/* Lemire's nearly divisionless method would do; rejection is simpler. */
	uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;
	do
		x = rng_next(r);
	while (x >= lim);
	return x % n;
}

double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}
