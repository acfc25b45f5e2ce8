/* SPDX-License-Identifier: MIT */
/* common/net.h -- TCP plumbing in the manner of Redis's anet.c: a listening
 * socket on host:port, a client connection, TCP_NODELAY.
 *
 * DESIGN
 * Our servers answer a request with one write of headers and body
 * together on a TCP_NODELAY socket: two writes without it stall each call
 * ~40 ms (Nagle against the client's delayed ACK). A buffer goes out whole
 * with file_write_all (common.h), which retries short writes and EINTR; it is
 * the one such loop for files, pipes and sockets alike (a process that
 * writes to sockets ignores SIGPIPE: main() and the test harness do).
 *
 * Errors: -1 with a git-style message in the caller's msg[0..msglen), or
 * -errno where no words are needed. Every function may be called from any
 * thread. */
#ifndef RLM_NET_H
#define RLM_NET_H

#include <stddef.h>

/* Bind and listen on host:port (port 0: the kernel picks one). host is
 * resolved with getaddrinfo (any family, AI_PASSIVE, a numeric port); the
 * first address that binds wins. The socket is close-on-exec, with
 * SO_REUSEADDR and TCP_NODELAY (inherited by the sockets it accepts) and a
 * backlog of 4096. Returns the socket with the port bound in *bound, or -1
 * with "cannot resolve host 'H': ..." or "cannot listen on H:P: ..." in
 * msg. */
int net_listen(const char *host, long port, int *bound, char *msg, size_t msglen);

/* Connect to host:port over TCP, blocking, trying each address host
 * resolves to in turn. The socket is close-on-exec, with TCP_NODELAY.
 * Returns it, or -1 with "cannot resolve host 'H': ..." or "cannot
 * connect to H:P: ..." in msg. */
int net_connect(const char *host, long port, char *msg, size_t msglen);

/* Set TCP_NODELAY on socket fd, so that a write leaves at once. Returns 0
 * or -errno. */
int net_nodelay(int fd);

/* The local port socket fd is bound to, or -errno. */
int net_port(int fd);

#endif
