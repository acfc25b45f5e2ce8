/* SPDX-License-Identifier: MIT */
/* common/embed.c -- lookup in the table of embedded files. */
#include "embed.h"

#include <string.h>

const struct embedded_file *embed_find(const char *name)
{
	for (const struct embedded_file *f = embed_files; f->name; f++)
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}
