/* SPDX-License-Identifier: MIT */
/* llm/model.c -- configured models: provider kind, endpoints, credentials,
 * limits and prices, checked once when the model is made. */
#include "llm_int.h"
#include "../common/json.h"
#include "../common/text.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <xxhash.h>

static const char *const kind_names[] = {"openai", "anthropic", "inproc"};

int llm_kind_parse(const char *s, enum llm_kind *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(kind_names); i++)
		if (s && (enum llm_kind)i != LLM_INPROC && strcmp(s, kind_names[i]) == 0) {
			*out = (enum llm_kind)i;
			return 0;
		}
	return RLM_EINVAL;
}

const char *llm_kind_name(enum llm_kind k)
{
	return (unsigned)k < ARRAY_SIZE(kind_names) ? kind_names[k] : "unknown";
}

/* Hosts whose APIs always need a key. */
static bool needs_key(const char *url)
{
	static const char *const hosts[] = {"api.openai.com", "api.anthropic.com", "openrouter.ai",
					    "api.together.xyz", "api.fireworks.ai"};
	for (size_t i = 0; i < ARRAY_SIZE(hosts); i++)
		if (strstr(url, hosts[i]))
			return true;
	return false;
}

static int check_url(const char *url, struct rlm_err *err)
{
	const char *host;
	if (strncmp(url, "http://", 7) == 0)
		host = url + 7;
	else if (strncmp(url, "https://", 8) == 0)
		host = url + 8;
	else
		return rlm_err_set(err, RLM_EINVAL,
				   "bad base URL '%s': it must start with http:// or https://", url);
	if (!*host || *host == '/' || *host == ':')
		return rlm_err_set(err, RLM_EINVAL, "bad base URL '%s': no host", url);
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == '"' || *p == '\\')
			return rlm_err_set(err, RLM_EINVAL,
					   "bad base URL '%s': it contains a space or a quote", url);
	return 0;
}

static void endpoint_init(struct llm_model *m, struct llm_endpoint *ep, const char *url)
{
	ep->base_url = xstrdup(url);
	pthread_mutex_init(&ep->mu, NULL);
	pthread_cond_init(&ep->cv, NULL);
	ep->req_tokens = m->cfg.rpm > 0 ? RLM_MAX(1.0, m->cfg.rpm / 6) : 0;
	ep->tok_tokens = m->cfg.tpm > 0 ? RLM_MAX(1.0, m->cfg.tpm / 6) : 0;
	ep->refill_ns = time_now_ns();
}

/* Split "a, b ,c" into trimmed endpoint URLs without trailing slashes. */
static int add_endpoints(struct llm_model *m, const char *list, struct rlm_err *err)
{
	char *copy = xstrdup(list), *save = NULL, *tok;
	int rc = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t len;
		while (*tok == ' ' || *tok == '\t')
			tok++;
		len = strlen(tok);
		while (len && (tok[len - 1] == ' ' || tok[len - 1] == '\t' || tok[len - 1] == '/'))
			tok[--len] = '\0';
		if (!len)
			continue;
		if ((rc = check_url(tok, err)))
			break;
		m->eps = xrealloc(m->eps, (m->n_eps + 1) * sizeof(*m->eps));
		memset(&m->eps[m->n_eps], 0, sizeof(*m->eps));
		endpoint_init(m, &m->eps[m->n_eps], tok);
		m->n_eps++;
	}
	free(copy);
	if (!rc && m->n_eps == 0)
		rc = rlm_err_set(err, RLM_EINVAL, "no base URL in '%s'", list);
	return rc;
}

/* An endpoint as the cache id names it: no user:password@, the scheme and
 * host in lower case, no default port (":80" for http, ":443" for https);
 * the path as it is (add_endpoints removed trailing slashes); a query or
 * fragment as a digest of it ("?~" and 16 hex digits) with the values of
 * parameters that look secret left out (text_url_without_userinfo), since the
 * id is kept in the store and shown. */
static char *endpoint_norm(const char *url)
{
	char *u = text_url_without_userinfo(url), *host = strstr(u, "://"), *end, *port, *q;
	if (!host)
		return u;
	if ((q = strpbrk(host + 3, "?#"))) {
		char *t;
		uint64_t h = XXH3_64bits(q, strlen(q));
		*q = '\0';
		t = xasprintf("%s?~%016llx", u, (unsigned long long)h);
		free(u);
		u = t;
		host = strstr(u, "://");
	}
	host += 3;
	end = host + strcspn(host, "/?#");
	for (char *p = u; p < end; p++)
		*p = (char)text_to_lower(*p);
	port = memchr(host, ':', (size_t)(end - host));
	if (port && ((strncmp(u, "http:", 5) == 0 && end - port == 3 && !strncmp(port, ":80", 3)) ||
		     (strncmp(u, "https:", 6) == 0 && end - port == 4 && !strncmp(port, ":443", 4))))
		memmove(port, end, strlen(end) + 1);
	return u;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The endpoints that answer for m, for its cache id: two servers that
 * serve the same model name (a vLLM of one's own and OpenRouter) may not
 * answer the same, but replicas listed in any order, or one URL spelt
 * two ways, are one set: normalised, sorted, without repeats, joined by
 * ','. NULL for the provider's default endpoint alone, so that the ids,
 * and the keys, made before endpoints were in them stay valid. */
static char *endpoints_id(const struct llm_model *m)
{
	char **v = xcalloc(m->n_eps, sizeof(*v)), *def = endpoint_norm(m->wire->default_base_url);
	struct buf b = BUF_INIT;
	size_t n = 0;
	for (size_t i = 0; i < m->n_eps; i++)
		v[i] = endpoint_norm(m->eps[i].base_url);
	qsort(v, m->n_eps, sizeof(*v), cmp_str);
	for (size_t i = 0; i < m->n_eps; i++) {
		if (i && strcmp(v[i], v[i - 1]) == 0)
			continue;
		buf_printf(&b, "%s%s", n++ ? "," : "", v[i]);
	}
	for (size_t i = 0; i < m->n_eps; i++)
		free(v[i]);
	free(v);
	if (n == 1 && strcmp(b.p, def) == 0)
		buf_release(&b);
	free(def);
	return b.len ? buf_detach(&b, NULL) : NULL;
}

struct llm_model *llm_model_new(const struct llm_model_cfg *cfg, struct rlm_err *err)
{
	struct llm_model *m = xcalloc(1, sizeof(*m));
	const struct llm_provider *prov = cfg->kind == LLM_INPROC ? cfg->provider : NULL;
	const char *urls;
	int rc = 0;

	m->cfg = *cfg;
	m->name = xstrdup(cfg->name && *cfg->name ? cfg->name : prov ? prov->name : "");
	m->api_key = cfg->api_key && *cfg->api_key ? xstrdup(cfg->api_key) : NULL;
	m->extra_json = cfg->extra_json ? xstrdup(cfg->extra_json) : NULL;
	m->cfg.name = m->name;
	m->cfg.api_key = m->api_key;
	m->cfg.extra_json = m->extra_json;
	m->cfg.base_urls = NULL;
	if (!m->cfg.timeout_ms)
		m->cfg.timeout_ms = 300000;
	if (!m->cfg.connect_timeout_ms)
		m->cfg.connect_timeout_ms = 10000;
	if (m->cfg.max_retries < 0)
		m->cfg.max_retries = 6;
	if (!m->cfg.backoff_base_ms)
		m->cfg.backoff_base_ms = 500;
	if (!m->cfg.backoff_max_ms)
		m->cfg.backoff_max_ms = 30000;

	switch (cfg->kind) {
	case LLM_OPENAI: m->wire = &llm_wire_openai; break;
	case LLM_ANTHROPIC: m->wire = &llm_wire_anthropic; break;
	case LLM_INPROC:
		m->wire = &llm_wire_openai;
		if (!prov || !cfg->impl) {
			rc = rlm_err_set(err, RLM_EINVAL, "the %s provider needs an instance to call",
					 prov ? prov->name : "in-process");
			goto out;
		}
		break;
	default: rc = rlm_err_set(err, RLM_EINVAL, "unknown provider kind %d", (int)cfg->kind); goto out;
	}
	m->provider = prov ? prov->name : kind_names[cfg->kind];
	if (!*m->name) {
		rc = rlm_err_set(err, RLM_EINVAL, "the %s provider needs a model name", m->provider);
		goto out;
	}

	if (m->extra_json) {
		cJSON *j = json_parse(m->extra_json, strlen(m->extra_json));
		bool ok = cJSON_IsObject(j);
		cJSON_Delete(j);
		if (!ok) {
			rc = rlm_err_set(err, RLM_EINVAL, "extra parameters are not a JSON object: %.200s",
					 m->extra_json);
			goto out;
		}
	}

	if (prov) {
		m->eps = xcalloc(1, sizeof(*m->eps));
		endpoint_init(m, &m->eps[0], prov->endpoint ? prov->endpoint : "inproc://local/v1");
		m->n_eps = 1;
	} else {
		urls = cfg->base_urls && *cfg->base_urls ? cfg->base_urls : m->wire->default_base_url;
		if ((rc = add_endpoints(m, urls, err)))
			goto out;
		if (!m->api_key) {
			if (cfg->kind == LLM_ANTHROPIC) {
				rc = rlm_err_set(err, RLM_EAUTH,
						 "the anthropic provider needs an API key: set "
						 "ANTHROPIC_API_KEY or pass --api-key");
				goto out;
			}
			for (size_t i = 0; i < m->n_eps; i++)
				if (needs_key(m->eps[i].base_url)) {
					rc = rlm_err_set(err, RLM_EAUTH,
							 "'%s' needs an API key: set OPENAI_API_KEY "
							 "or pass --api-key",
							 m->eps[i].base_url);
					goto out;
				}
		}
	}
	m->price = cfg->price ? *cfg->price : llm_price_lookup(m->name);
	if (prov && !cfg->price) {
		/* An in-process provider (the simulator) costs nothing,
		 * whatever model it plays, unless a price file says what it
		 * should cost (to try --max-cost offline). */
		m->price = llm_price_override(m->name);
		if (!m->price.known)
			m->price = (struct llm_price){0, 0, 0, 0, true};
	}
	if (prov) {
		char id[256] = "";
		if (prov->cache_id)
			prov->cache_id(cfg->impl, id, sizeof(id));
		m->cache_id = xasprintf("%s:%s", prov->name, id);
	} else {
		/* The model's own extra JSON shapes its answers too, and so do
		 * the servers that answer (unless they are the default). */
		char *eps = endpoints_id(m);
		m->cache_id = xasprintf("%s:%s%s%s%s%s%s", llm_kind_name(cfg->kind), m->name,
					m->extra_json ? ":" : "", m->extra_json ? m->extra_json : "",
					eps ? "@[" : "", eps ? eps : "", eps ? "]" : "");
		free(eps);
	}
	m->window_known = true;
	if (!m->cfg.context_window) {
		m->cfg.context_window = llm_context_window_lookup(m->name);
		if (!m->cfg.context_window) {
			m->window_known = prov && prov->context_window;
			m->cfg.context_window =
			    prov && prov->context_window ? prov->context_window : 128000;
		}
	}
out:
	if (rc) {
		llm_model_free(m);
		return NULL;
	}
	return m;
}

void llm_model_free(struct llm_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_eps; i++) {
		pthread_mutex_destroy(&m->eps[i].mu);
		pthread_cond_destroy(&m->eps[i].cv);
		free(m->eps[i].base_url);
	}
	free(m->eps);
	free(m->cache_id);
	free(m->name);
	free(m->api_key);
	free(m->extra_json);
	free(m);
}

const char *llm_model_name(const struct llm_model *m)
{
	return m->name;
}

enum llm_kind llm_model_kind(const struct llm_model *m)
{
	return m->cfg.kind;
}

const char *llm_model_provider(const struct llm_model *m)
{
	return m->provider;
}

long llm_model_context_window(const struct llm_model *m)
{
	return m->cfg.context_window;
}

bool llm_model_price_known(const struct llm_model *m)
{
	return m->price.known;
}

bool llm_model_context_window_known(const struct llm_model *m)
{
	return m->window_known;
}

double llm_model_input_cost(const struct llm_model *m, int64_t input_tokens)
{
	struct llm_usage u = {0};
	u.input_tokens = input_tokens;
	return llm_cost(&m->price, &u);
}

size_t llm_model_endpoints(const struct llm_model *m)
{
	return m->n_eps;
}

int64_t llm_estimate_tokens(size_t bytes)
{
	return (int64_t)((bytes + 3) / 4);
}

const char *llm_model_cache_id(const struct llm_model *m)
{
	return m->cache_id;
}
