/* SPDX-License-Identifier: MIT */
/* common/net.c -- TCP plumbing: listen, connect, TCP_NODELAY. */
#include "net.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Resolve host:port for a stream socket into *res; 0, or -1 with msg. */
static int resolve(const char *host, long port, int flags, struct addrinfo **res, char *msg,
		   size_t msglen)
{
	struct addrinfo hints;
	char ps[16];
	int rc;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = flags | AI_NUMERICSERV;
	snprintf(ps, sizeof(ps), "%ld", port);
	rc = getaddrinfo(host, ps, &hints, res);
	if (rc) {
		snprintf(msg, msglen, "cannot resolve host '%s': %s", host, gai_strerror(rc));
		return -1;
	}
	return 0;
}

int net_nodelay(int fd)
{
	int one = 1;
	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ? -errno : 0;
}

int net_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl))
		return -errno;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return -EAFNOSUPPORT;
}

int net_listen(const char *host, long port, int *bound, char *msg, size_t msglen)
{
	struct addrinfo *res = NULL, *ai;
	int fd = -1, e = 0, one = 1, p;
	if (resolve(host, port, AI_PASSIVE, &res, msg, msglen))
		return -1;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		net_nodelay(fd);
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 4096) == 0)
			break;
		e = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(msg, msglen, "cannot listen on %s:%ld: %s", host, port, strerror(e));
		return -1;
	}
	p = net_port(fd);
	*bound = p >= 0 ? p : (int)port;
	return fd;
}

/* Connect fd to addr; 0 or errno. A connect cut by a signal goes on in
 * the background: wait for it and take its outcome. */
static int connect_fd(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct pollfd p = {fd, POLLOUT, 0};
	socklen_t el = sizeof(int);
	int e = 0;
	if (connect(fd, addr, len) == 0)
		return 0;
	if (errno != EINTR)
		return errno;
	while (poll(&p, 1, -1) < 0)
		if (errno != EINTR)
			return errno;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el))
		return errno;
	return e;
}

int net_connect(const char *host, long port, char *msg, size_t msglen)
{
	struct addrinfo *res = NULL, *ai;
	int fd = -1, e = 0;
	if (resolve(host, port, 0, &res, msg, msglen))
		return -1;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			e = errno;
			continue;
		}
		if (!(e = connect_fd(fd, ai->ai_addr, ai->ai_addrlen))) {
			net_nodelay(fd);
			break;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		snprintf(msg, msglen, "cannot connect to %s:%ld: %s", host, port, strerror(e));
	return fd;
}
