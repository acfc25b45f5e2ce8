/* SPDX-License-Identifier: MIT */
/* tests/proc.h -- run the rlm binary (or any program) from a test and
 * capture its output, or start it in the background. */
#ifndef RLM_TEST_PROC_H
#define RLM_TEST_PROC_H

#include <stddef.h>
#include <sys/types.h>

struct proc_out {
	int status;   /* exit status, or 128 + signal */
	char *out;    /* stdout, NUL-terminated; owned */
	char *err;    /* stderr; owned */
};

/* Run argv (argv[0] a path) with `input` on stdin (NULL: /dev/null) and
 * extra environment entries env ("NAME=value", NULL-terminated, or NULL),
 * waiting at most timeout_s. */
int proc_run(const char *const *argv, const char *input, const char *const *env,
	     int timeout_s, struct proc_out *o);
void proc_out_release(struct proc_out *o);

/* Run the rlm binary (harness_rlm_bin) with args (NULL-terminated, the
 * binary not among them), with no provider, model, simulator setting,
 * limit, price file or store from the caller's environment (those
 * variables unset), then the extra entries (NULL-terminated, or NULL),
 * waiting at most timeout_s. A failure to run it fails the test. */
struct proc_out proc_rlm(const char *const *args, const char *const *extra, int timeout_s);

/* Start argv in the background with stdout and stderr to /dev/null. */
pid_t proc_start(const char *const *argv, const char *const *env);
/* SIGTERM then wait; returns the exit status (128 + signal when killed). */
int proc_stop(pid_t pid);
/* A loopback TCP port with nothing listening on it (connections are
 * refused): bound once by the kernel's choice, then closed. */
int proc_closed_port(void);
/* Start argv in the background with stdout on a pipe and wait, at most
 * timeout_s, for the first line it writes there: into line[0..n), without
 * its newline. stderr goes to err_path (NULL: /dev/null, or ours with
 * TEST_VERBOSE). Returns the pid, or -1 when it exited or said nothing in
 * time (then it is killed and reaped). */
pid_t proc_start_line(const char *const *argv, const char *const *env, const char *err_path,
		      int timeout_s, char *line, size_t n);
/* Start `rlm sim-serve --port 0` with the given spec and return its port. */
pid_t proc_sim_serve(const char *spec, int *port);
/* The children of parent, from /proc (zombies too): their pids into
 * pids[0..cap) (pids may be NULL with cap 0), and how many there are. */
size_t proc_children(pid_t parent, pid_t *pids, size_t cap);

#endif
