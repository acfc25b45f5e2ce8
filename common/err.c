/* SPDX-License-Identifier: MIT */
/* common/err.c -- error codes and messages. */
#include "common.h"

#include <stdio.h>
#include <string.h>

int rlm_err_set(struct rlm_err *err, int code, const char *fmt, ...)
{
	va_list ap;
	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

void rlm_err_prefix(struct rlm_err *err, const char *fmt, ...)
{
	char pre[256];
	size_t pl, ol, room;
	va_list ap;
	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	/* "pre: old", cut to the buffer: shift the old message right. */
	pl = strlen(pre);
	room = sizeof(err->msg) - 1 - pl - 2;
	ol = strnlen(err->msg, sizeof(err->msg) - 1);
	if (ol > room)
		ol = room;
	memmove(err->msg + pl + 2, err->msg, ol);
	memcpy(err->msg, pre, pl);
	err->msg[pl] = ':';
	err->msg[pl + 1] = ' ';
	err->msg[pl + 2 + ol] = '\0';
}

void rlm_err_clear(struct rlm_err *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}

const char *rlm_strerror(int code)
{
	switch (code) {
	case 0: return "success";
	case RLM_EINVAL: return "invalid argument";
	case RLM_ETOOBIG: return "too large";
	case RLM_EPARSE: return "malformed input";
	case RLM_EHTTP: return "transport error";
	case RLM_EPROVIDER: return "provider error";
	case RLM_EAUTH: return "authentication failed";
	case RLM_ETIMEOUT: return "timed out";
	case RLM_ECANCEL: return "cancelled";
	case RLM_EBUDGET: return "budget exhausted";
	case RLM_ESANDBOX: return "sandbox error";
	case RLM_EIO: return "i/o error";
	case RLM_ENOTFOUND: return "not found";
	case RLM_ESTORE: return "store error";
	default:
		if (code < 0 && code > -4096)
			return strerror(-code);
		return "unknown error";
	}
}
