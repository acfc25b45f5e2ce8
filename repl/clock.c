/* SPDX-License-Identifier: MIT */
/* repl/clock.c -- what the kernel says of the current worker: the CPU time
 * all its threads used, and how many threads it has.
 *
 * DESIGN
 * The exec clock (repl.c) must not trust the worker: model code can patch
 * the runtime, so anything the runtime reports is advisory. The kernel's
 * figures cannot be forged from inside. The CPU time comes from the
 * process CPU clock of the worker (clock_getcpuclockid: a clock_gettime
 * per reading, nanoseconds, no permission needed for a process of ours),
 * else from utime + stime in /proc/PID/stat (clock ticks); the thread
 * count from /proc/PID/stat (num_threads), read with pread on a
 * descriptor kept open while the worker lives. The worker is our child and
 * not reaped before repl__worker_stop, so its pid cannot be reused under
 * us. */
#include "repl_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Open what the readings need for the current worker, once per worker. */
static void probe_open(struct repl *r)
{
	char path[64];
	if (r->probe_pid == r->pid)
		return;
	repl__probe_close(r);
	r->probe_pid = r->pid;
	r->cpu_clock_ok = clock_getcpuclockid(r->pid, &r->cpu_clock) == 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)r->pid);
	r->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
}

void repl__probe_close(struct repl *r)
{
	if (r->stat_fd >= 0)
		close(r->stat_fd);
	r->stat_fd = -1;
	r->probe_pid = 0;
	r->cpu_clock_ok = false;
	r->idle_cpu = -1;
}

/* Fields 14 (utime), 15 (stime) and 20 (num_threads) of /proc/PID/stat;
 * the command name (field 2) may hold blanks and parentheses, so fields
 * are counted from its last ')'. Returns 0 or -1. */
static int read_stat(struct repl *r, unsigned long long *ticks, long *threads)
{
	char b[1024], *p, *end;
	unsigned long long ut = 0, st = 0;
	ssize_t n;
	if (r->stat_fd < 0)
		return -1;
	n = pread(r->stat_fd, b, sizeof(b) - 1, 0);
	if (n <= 0)
		return -1;
	b[n] = '\0';
	p = strrchr(b, ')');
	if (!p)
		return -1;
	p++;
	/* p is at field 3 (state); walk to field 14. */
	for (int field = 3; field <= 20; field++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return -1;
		if (field == 14)
			ut = strtoull(p, &end, 10);
		else if (field == 15)
			st = strtoull(p, &end, 10);
		else if (field == 20)
			*threads = strtol(p, &end, 10);
		p = strchr(p, ' ');
		if (!p && field < 20)
			return -1;
		if (!p)
			break;
	}
	*ticks = ut + st;
	return 0;
}

int64_t repl__worker_cpu(struct repl *r)
{
	struct timespec ts;
	unsigned long long ticks;
	long threads, hz;
	if (r->pid <= 0)
		return -1;
	probe_open(r);
	if (r->cpu_clock_ok && clock_gettime(r->cpu_clock, &ts) == 0)
		return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0 || read_stat(r, &ticks, &threads) < 0)
		return -1;
	return (int64_t)(ticks * (1000000000ULL / (unsigned long long)hz));
}

int repl__worker_threads(struct repl *r)
{
	unsigned long long ticks;
	long threads = -1;
	if (r->pid <= 0)
		return -1;
	probe_open(r);
	if (read_stat(r, &ticks, &threads) < 0 || threads < 0 || threads > 1 << 30)
		return -1;
	return (int)threads;
}
