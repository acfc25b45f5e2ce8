/* SPDX-License-Identifier: MIT */
/* tool/policy.c -- which tools model code may call: --allow-tools and
 * --deny-tools, parsed and applied. Tools act on the world, so the default
 * is narrow (read-only tools only), deny beats allow, and a refusal says
 * why and how to widen it. */
#include "tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool tool_glob_match(const char *pattern, const char *name)
{
	/* The classic one-star backtrack: linear in practice, at most
	 * O(len(pattern) * len(name)). */
	const char *star = NULL, *resume = NULL;
	if (!pattern || !name)
		return false;
	while (*name) {
		if (*pattern == '*') {
			star = pattern++;
			resume = name;
		} else if (*pattern == *name) {
			pattern++;
			name++;
		} else if (star) {
			pattern = star + 1;
			name = ++resume;
		} else {
			return false;
		}
	}
	while (*pattern == '*')
		pattern++;
	return *pattern == '\0';
}

static bool pattern_byte(char c)
{
	return text_is_alnum(c) || c == '_' || c == '.' || c == '*' || c == '-';
}

/* Split list (comma-separated) into patterns; flag names the option in
 * errors. */
static int parse_list(const char *list, const char *flag, char ***out, size_t *n,
		      struct rlm_err *err)
{
	const char *p = list;
	*out = NULL;
	*n = 0;
	if (!list)
		return 0;
	for (;;) {
		const char *end = strchr(p, ','), *s = p;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		text_trim(&s, &len);
		if (len == 0)
			return rlm_err_set(err, RLM_EINVAL, "empty pattern in %s '%s'", flag, list);
		for (size_t i = 0; i < len; i++) {
			if (text_is_space(s[i]))
				return rlm_err_set(err, RLM_EINVAL,
						   "blank inside pattern '%.*s' of %s", (int)len, s,
						   flag);
			if (!pattern_byte(s[i]))
				return rlm_err_set(
				    err, RLM_EINVAL,
				    "bad character '%c' in pattern '%.*s' of %s (patterns are "
				    "SERVER.TOOL, SERVER.* or *: letters, digits, '_', '-', "
				    "'.' and '*')",
				    (unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f
					? '?'
					: s[i],
				    (int)len, s, flag);
		}
		*out = xrealloc(*out, (*n + 1) * sizeof(**out));
		(*out)[(*n)++] = xstrndup(s, len);
		if (!end)
			return 0;
		p = end + 1;
	}
}

int tool_policy_parse(struct tool_policy *p, const char *allow, const char *deny,
		      struct rlm_err *err)
{
	int rc;
	memset(p, 0, sizeof(*p));
	rc = parse_list(allow, "--allow-tools", &p->allow, &p->n_allow, err);
	if (rc == 0)
		rc = parse_list(deny, "--deny-tools", &p->deny, &p->n_deny, err);
	if (rc)
		tool_policy_release(p);
	return rc;
}

void tool_policy_release(struct tool_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_allow; i++)
		free(p->allow[i]);
	for (size_t i = 0; i < p->n_deny; i++)
		free(p->deny[i]);
	free(p->allow);
	free(p->deny);
	memset(p, 0, sizeof(*p));
}

bool tool_policy_allows(const struct tool_policy *p, const char *name, bool read_only, char *why,
			size_t cap)
{
	if (why && cap)
		why[0] = '\0';
	for (size_t i = 0; p && i < p->n_deny; i++) {
		if (tool_glob_match(p->deny[i], name)) {
			if (why && cap)
				snprintf(why, cap, "denied by --deny-tools '%s'", p->deny[i]);
			return false;
		}
	}
	for (size_t i = 0; p && i < p->n_allow; i++)
		if (tool_glob_match(p->allow[i], name))
			return true;
	if (read_only)
		return true;
	if (why && cap)
		snprintf(why, cap,
			 "not read-only (its annotations do not say readOnlyHint); allow it with "
			 "--allow-tools %s",
			 name);
	return false;
}
