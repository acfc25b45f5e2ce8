/* SPDX-License-Identifier: MIT */
/* llm/provider.c -- in-process providers: the registry they join by name,
 * and the transport that hands them a model's requests. */
#include "llm_int.h"

#include <stdio.h>
#include <string.h>

#define MAX_PROVIDERS 16

/* Providers are few and never leave: a fixed table, appended to under the
 * mutex. Readers lock too; a lookup is rare (once per model set up). */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static const struct llm_provider *reg[MAX_PROVIDERS];
static size_t n_reg;

static const struct llm_provider *find_locked(const char *name)
{
	for (size_t i = 0; i < n_reg; i++)
		if (strcmp(reg[i]->name, name) == 0)
			return reg[i];
	return NULL;
}

int llm_provider_register(const struct llm_provider *p)
{
	const struct llm_provider *had;
	enum llm_kind k;
	int rc = 0;
	if (!p || !p->name || !*p->name || !p->open || !p->perform)
		return RLM_EINVAL;
	if (llm_kind_parse(p->name, &k) == 0)
		return RLM_EINVAL;
	pthread_mutex_lock(&reg_mu);
	had = find_locked(p->name);
	if (had)
		rc = had == p ? 0 : RLM_EINVAL;
	else if (n_reg == MAX_PROVIDERS)
		rc = RLM_EINVAL;
	else
		reg[n_reg++] = p;
	pthread_mutex_unlock(&reg_mu);
	return rc;
}

const struct llm_provider *llm_provider_find(const char *name)
{
	const struct llm_provider *p;
	if (!name)
		return NULL;
	pthread_mutex_lock(&reg_mu);
	p = find_locked(name);
	pthread_mutex_unlock(&reg_mu);
	return p;
}

char *llm_provider_names(void)
{
	struct buf b = BUF_INIT;
	buf_puts(&b, "openai, anthropic");
	pthread_mutex_lock(&reg_mu);
	for (size_t i = 0; i < n_reg; i++)
		buf_printf(&b, ", %s", reg[i]->name);
	pthread_mutex_unlock(&reg_mu);
	return buf_detach(&b, NULL);
}

void llm__provider_perform(const struct llm_model *m, const struct http_req *req,
			   struct http_resp *resp, const atomic_bool *cancel)
{
	struct llm_provider_resp pr;
	memset(&pr, 0, sizeof(pr));
	pr.body = &resp->body;
	pr.retry_after_ms = -1;
	m->cfg.provider->perform(m->cfg.impl, req->body ? req->body : "", req->body ? req->len : 0,
				 m->cfg.timeout_ms, cancel, &pr);
	resp->status = pr.status;
	resp->retry_after_ms = pr.retry_after_ms;
	resp->transport_rc = pr.rc;
	if (pr.rc)
		snprintf(resp->transport_err, sizeof(resp->transport_err), "%s", pr.err);
}
