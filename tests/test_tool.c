/* SPDX-License-Identifier: MIT */
/* tests/test_tool.c -- tool/ as an MCP client: the config parser's
 * errors, then real servers: tests/fake_mcp.py (paging, the exact
 * requests sent, a crash, a hang, garbage, a reply over the cap, a request
 * of the server's in the middle of a call, a slow start, a revision we do
 * not speak, tools that change) and the official reference servers
 * server-everything and server-filesystem from tests/js/node_modules.
 * Also host tools, 8 threads calling one server at once, and that
 * tool_set_free leaves no process and no thread behind. */
#include "harness.h"
#include "proc.h"
#include "../tool/tool.h"
#include "../common/json.h"

#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ---- */

static bool is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* An absolute path of the repo's file rel: tests run from the repo root,
 * else the binary is BUILD/tests/test_tool in it. NULL when missing. */
static char *repo_path(const char *rel)
{
	char buf[PATH_MAX], exe[PATH_MAX], *alt;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (realpath(rel, buf))
		return xstrdup(buf);
	exe[n > 0 ? n : 0] = '\0';
	alt = xasprintf("%s/../../%s", dirname(exe), rel);
	if (realpath(alt, buf)) {
		free(alt);
		return xstrdup(buf);
	}
	free(alt);
	return NULL;
}

static char *fake_path(void)
{
	char *p = repo_path("tests/fake_mcp.py");
	CHECK_MSG(p, "cannot find tests/fake_mcp.py (run from the repo root)");
	if (!is_file("/usr/bin/python3"))
		SKIP("no /usr/bin/python3");
	return p;
}

/* A config entry for the fake server in mode (extra: more members). */
static char *fake_entry(const char *name, const char *mode, const char *extra)
{
	char *fake = fake_path(), *e;
	e = xasprintf("\"%s\": {\"command\": \"/usr/bin/python3\", \"args\": [\"%s\", %s]%s%s}",
		      name, fake, mode, extra ? ", " : "", extra ? extra : "");
	free(fake);
	return e;
}

/* A set with the servers of the config {"mcpServers": {entries}}. */
static struct tool_set *set_with(const char *entries)
{
	struct tool_set *ts = tool_set_new();
	struct rlm_err err = {0};
	char *cfg = xasprintf("{\"mcpServers\": {%s}}", entries);
	int rc = tool_set_add_config(ts, cfg, strlen(cfg), "test", &err);
	CHECK_MSG(rc == 0, "config: %s", err.msg);
	free(cfg);
	return ts;
}

static struct tool_set *fake_set(const char *mode)
{
	char *e = fake_entry("fake", mode, NULL);
	struct tool_set *ts = set_with(e);
	free(e);
	return ts;
}

/* Call name with the JSON args; the result's compact JSON (or NULL with
 * err). */
static char *call(struct tool_set *ts, const char *name, const char *args, int *rc,
		  struct rlm_err *err)
{
	cJSON *a = args ? cJSON_Parse(args) : NULL, *r = NULL;
	char *s = NULL;
	memset(err, 0, sizeof(*err));
	*rc = tool_set_call(ts, name, a, 0, &r, err);
	if (r)
		s = json_print(r);
	cJSON_Delete(a);
	cJSON_Delete(r);
	return s;
}

/* A call that must succeed: its result's JSON. */
static char *call_ok(struct tool_set *ts, const char *name, const char *args)
{
	struct rlm_err err;
	int rc;
	char *s = call(ts, name, args, &rc, &err);
	CHECK_MSG(rc == 0 && s, "%s(%s) failed: %d %s", name, args ? args : "", rc, err.msg);
	return s;
}

/* Processes whose parent we are. */
static int children(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d))) {
		char p[300], buf[512], *rp;
		FILE *f;
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(p, sizeof(p), "/proc/%s/stat", e->d_name);
		if (!(f = fopen(p, "r")))
			continue;
		if (fgets(buf, sizeof(buf), f) && (rp = strrchr(buf, ')')) &&
		    atoi(strchr(rp + 3, ' ') + 1) == getpid())
			n++;
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* ---- the config ---- */

struct bad_cfg {
	const char *json;
	int code;
	const char *want; /* in the message */
};

static const struct bad_cfg bad_cfgs[] = {
    {"not json", RLM_EPARSE, "cfg: not valid JSON"},
    {"[]", RLM_EPARSE, "not a JSON object"},
    {"{}", RLM_EINVAL, "no \"mcpServers\" object"},
    {"{\"mcpServers\": []}", RLM_EINVAL, "\"mcpServers\" must be an object"},
    {"{\"mcpServers\": {\"a b\": {\"command\": \"x\"}}}", RLM_EINVAL, "server name 'a b'"},
    {"{\"mcpServers\": {\"s\": 3}}", RLM_EINVAL, "server 's': it must be an object"},
    {"{\"mcpServers\": {\"s\": {}}}", RLM_EINVAL, "server 's': it has neither \"command\""},
    {"{\"mcpServers\": {\"s\": {\"command\": \"x\", \"url\": \"http://h\"}}}", RLM_EINVAL,
     "both \"command\" and \"url\""},
    {"{\"mcpServers\": {\"s\": {\"command\": 7}}}", RLM_EINVAL,
     "server 's': \"command\" must be a string, not a number"},
    {"{\"mcpServers\": {\"s\": {\"command\": \"\"}}}", RLM_EINVAL, "\"command\" is empty"},
    {"{\"mcpServers\": {\"s\": {\"command\": \"x\", \"args\": \"-v\"}}}", RLM_EINVAL,
     "\"args\" must be an array of strings, not a string"},
    {"{\"mcpServers\": {\"s\": {\"command\": \"x\", \"args\": [\"a\", 2]}}}", RLM_EINVAL,
     "\"args\"[1] must be a string, not a number"},
    {"{\"mcpServers\": {\"s\": {\"command\": \"x\", \"env\": {\"PORT\": 8080}}}}", RLM_EINVAL,
     "\"env.PORT\" must be a string, not a number"},
    {"{\"mcpServers\": {\"s\": {\"command\": \"x\", \"env\": [\"A=1\"]}}}", RLM_EINVAL,
     "\"env\" must be an object of strings, not an array"},
    {"{\"mcpServers\": {\"s\": {\"command\": \"x\", \"env\": {\"A=B\": \"1\"}}}}", RLM_EINVAL,
     "\"env.A=B\" is not a valid name"},
    {"{\"mcpServers\": {\"s\": {\"command\": \"x\", \"cwd\": false}}}", RLM_EINVAL,
     "\"cwd\" must be a string, not a boolean"},
    {"{\"mcpServers\": {\"s\": {\"url\": \"ftp://h/\"}}}", RLM_EINVAL,
     "\"url\" 'ftp://h/' is not an http:// or https:// URL"},
    {"{\"mcpServers\": {\"s\": {\"url\": \"http://h/\", \"headers\": {\"X\": \"a\\nb\"}}}}",
     RLM_EINVAL, "\"headers.X\" holds a line break"},
    {"{\"mcpServers\": {\"s\": {\"type\": \"sse\", \"url\": \"http://h/\"}}}", RLM_EINVAL,
     "\"sse\" (the old HTTP+SSE transport) is not supported"},
    {"{\"mcpServers\": {\"s\": {\"type\": \"stdio\", \"url\": \"http://h/\"}}}", RLM_EINVAL,
     "\"type\" is \"stdio\" but \"url\" is given"},
    {"{\"mcpServers\": {\"s\": {\"type\": \"http\", \"command\": \"x\"}}}", RLM_EINVAL,
     "\"type\" is an HTTP type but \"command\" is given"},
    {"{\"mcpServers\": {\"s\": {\"type\": \"grpc\", \"command\": \"x\"}}}", RLM_EINVAL,
     "\"type\" 'grpc' is not one of"},
    {"{\"mcpServers\": {\"s\": {\"command\": \"x\", \"disabled\": \"yes\"}}}", RLM_EINVAL,
     "\"disabled\" must be a boolean"},
    {"{\"mcpServers\": {\"s\": {\"command\": \"x\"}, \"s\": {\"command\": \"y\"}}}", RLM_EPARSE,
     "duplicate key \"s\""},
    {"{\"mcpServers\": {\"s\": {\"command\": \"x\\u0000y\"}}}", RLM_EPARSE, "\\u0000"},
    {"{\"mcpServers\": {\"s\": {\"command\": \"x\", \"env\": {\"T\": \"${RLM_TEST_UNSET_VAR}\"}}}}",
     RLM_EINVAL, "server 's': \"env.T\" needs ${RLM_TEST_UNSET_VAR}, which is not set"},
    {"{\"mcpServers\": {\"s\": {\"command\": \"x\", \"args\": [\"a\", "
     "\"${RLM_TEST_UNSET_VAR}\"]}}}",
     RLM_EINVAL, "\"args[1]\" needs ${RLM_TEST_UNSET_VAR}"},
    {"{\"mcpServers\": {\"s\": {\"command\": \"${RLM_TEST_UNSET_VAR:-}\"}}}", RLM_EINVAL,
     "\"command\" is empty once expanded"},
};

/* tool_set_resolve's read-only flag, checking the full name it gives:
 * 1 or 0, -1 when there is no such tool. */
static int read_only(struct tool_set *ts, const char *name, struct rlm_err *err)
{
	char *full = NULL;
	bool ro = false;
	if (tool_set_resolve(ts, name, &full, &ro, err))
		return -1;
	if (strchr(name, '.'))
		CHECK_STR(full, name);
	free(full);
	return ro;
}

TEST(config_errors_name_origin_server_and_member)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad_cfgs); i++) {
		struct tool_set *ts = tool_set_new();
		struct rlm_err err = {0};
		int rc = tool_set_add_config(ts, bad_cfgs[i].json, strlen(bad_cfgs[i].json), "cfg",
					     &err);
		CHECK_MSG(rc == bad_cfgs[i].code, "case %zu (%s): rc %d, want %d: %s", i,
			  bad_cfgs[i].json, rc, bad_cfgs[i].code, err.msg);
		CHECK_CONTAINS(err.msg, bad_cfgs[i].want);
		CHECK_MSG(strncmp(err.msg, "cfg: ", 5) == 0, "case %zu: %s", i, err.msg);
		CHECK_INT(tool_set_n_servers(ts), 0); /* all or nothing */
		tool_set_free(ts);
	}
}

TEST(config_good_forms_and_files)
{
	struct tool_set *ts = tool_set_new();
	struct rlm_err err = {0};
	const char *cfg =
	    "{\"mcpServers\": {"
	    "\"a\": {\"command\": \"x\", \"args\": [], \"env\": {}, \"alwaysAllow\": [1],"
	    " \"type\": \"stdio\", \"description\": \"A\"},"
	    "\"b-2\": {\"type\": \"streamable-http\", \"url\": \"https://h/mcp\","
	    " \"headers\": {\"Authorization\": \"Bearer x\"}},"
	    "\"off\": {\"command\": \"x\", \"disabled\": true}},"
	    " \"otherClientSetting\": {\"x\": 1}}";
	char *path = xasprintf("%s/cfg.json", harness_tmpdir());
	FILE *f;
	CHECK_INT(tool_set_add_config(ts, cfg, strlen(cfg), "c1", &err), 0);
	CHECK_INT(tool_set_n_servers(ts), 2);
	/* a name given again, in another config: refused, nothing added */
	cfg = "{\"mcpServers\": {\"c\": {\"command\": \"y\"}, \"a\": {\"command\": \"y\"}}}";
	CHECK_INT(tool_set_add_config(ts, cfg, strlen(cfg), "c2", &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "c2: server 'a' is defined twice");
	CHECK_INT(tool_set_n_servers(ts), 2);
	/* files: a missing one, then a good one */
	CHECK(tool_set_load_config(ts, path, &err) < 0);
	CHECK_CONTAINS(err.msg, "cannot read MCP config '");
	CHECK_CONTAINS(err.msg, "cfg.json");
	f = fopen(path, "w");
	fputs("{\"mcpServers\": {\"c\": {\"command\": \"y\"}}}\n", f);
	fclose(f);
	CHECK_INT(tool_set_load_config(ts, path, &err), 0);
	CHECK_INT(tool_set_n_servers(ts), 3);
	f = fopen(path, "w");
	fputs("{\"mcpServers\": {\"d\": {\"command\": [\"y\"]}}}", f);
	fclose(f);
	CHECK_INT(tool_set_load_config(ts, path, &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, path);
	CHECK_CONTAINS(err.msg, "server 'd': \"command\" must be a string, not an array");
	free(path);
	tool_set_free(ts);
}

/* ---- the fake server ---- */

TEST(fake_discovery_reads_every_page)
{
	struct tool_set *ts = fake_set("\"normal\"");
	struct rlm_err err = {0};
	cJSON *v = tool_set_servers_json(ts), *s = cJSON_GetArrayItem(v, 0), *h, *info, *p;
	char *j;
	CHECK_INT(cJSON_GetArraySize(v), 1);
	CHECK_STR(json_str(s, "name"), "fake");
	CHECK_INT(json_int(s, "tools", 0), 12); /* 3 pages */
	CHECK(cJSON_IsNull(json_get(s, "error")));
	CHECK_STR(json_str(s, "description"), "Fake MCP 1.2.3: Tools for tests.");
	cJSON_Delete(v);

	v = tool_set_search_json(ts, "add two numbers", NULL, 3, &err);
	CHECK(v);
	h = cJSON_GetArrayItem(v, 0);
	CHECK_STR(json_str(h, "name"), "fake.add");
	CHECK(json_num(h, "score", 0) > 0);
	CHECK(cJSON_GetArraySize(v) <= 3);
	cJSON_Delete(v);
	CHECK(!tool_set_search_json(ts, "x", "nosuch", 3, &err));
	CHECK_INT(err.code, RLM_ENOTFOUND);
	CHECK_CONTAINS(err.msg, "no tool server 'nosuch' (the servers: fake)");

	info = tool_set_info_json(ts, "fake.add", &err);
	CHECK_MSG(info, "%s", err.msg);
	CHECK_STR(json_str(info, "title"), "Adder");
	CHECK_STR(json_str(info, "server"), "fake");
	CHECK_STR(json_str(info, "tool"), "add");
	p = json_get(json_get(info, "parameters"), "required");
	CHECK_INT(cJSON_GetArraySize(p), 2);
	CHECK_STR(json_str(cJSON_GetArrayItem(p, 0), "name"), "a");
	CHECK(cJSON_IsObject(json_get(info, "output_schema")));
	CHECK(cJSON_IsFalse(json_get(info, "read_only")));
	j = json_print(json_get(info, "input_schema"));
	CHECK_CONTAINS(j, "\"required\":[\"a\",\"b\"]");
	free(j);
	cJSON_Delete(info);
	CHECK_INT(read_only(ts, "fake.echo", &err), 1);
	CHECK_INT(read_only(ts, "fake.add", &err), 0);
	CHECK_INT(read_only(ts, "fake.nope", &err), -1);
	tool_set_free(ts);
}

TEST(fake_unknown_tool_names_the_closest)
{
	struct tool_set *ts = fake_set("\"normal\"");
	struct rlm_err err = {0};
	CHECK(!tool_set_info_json(ts, "fake.ad", &err));
	CHECK_INT(err.code, RLM_ENOTFOUND);
	CHECK_CONTAINS(err.msg, "no tool 'fake.ad'; the closest are 'fake.add'");
	CHECK(!tool_set_info_json(ts, "fake.eko", &err));
	CHECK_CONTAINS(err.msg, "'fake.echo'");
	CHECK(!tool_set_info_json(ts, "other.add", &err));
	CHECK_CONTAINS(err.msg, "'fake.add'");
	/* a bare name that one server has */
	{
		cJSON *info = tool_set_info_json(ts, "echo", &err);
		CHECK_MSG(info, "%s", err.msg);
		CHECK_STR(json_str(info, "name"), "fake.echo");
		cJSON_Delete(info);
	}
	tool_set_free(ts);
}

TEST(fake_exact_requests)
{
	char *log = xasprintf("%s/log", harness_tmpdir()),
	     *env = xasprintf("\"env\": {\"FAKE_MCP_LOG\": \"%s\"}", log);
	char *e = fake_entry("fake", "\"normal\"", env), *text = NULL, *lines[8] = {0};
	struct tool_set *ts = set_with(e);
	struct rlm_err err = {0};
	size_t len;
	int n = 0;
	char *r = call_ok(ts, "fake.echo", "{\"text\": \"hi\"}");
	CHECK_STR(r, "\"hi\"");
	free(r);
	CHECK_INT(file_read(log, 1 << 20, &text, &len, &err), 0);
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && n < 8;
	     l = strtok_r(NULL, "\n", &save))
		lines[n++] = l;
	CHECK_INT(n, 6);
	CHECK_STR(lines[0], "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
			    "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
			    "\"clientInfo\":{\"name\":\"rlm\",\"version\":\"" RLM_VERSION "\"}}}");
	CHECK_STR(lines[1], "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	CHECK_STR(lines[2],
		  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{}}");
	CHECK_STR(lines[3], "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/"
			    "list\",\"params\":{\"cursor\":\"p2\"}}");
	CHECK_STR(lines[4], "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/"
			    "list\",\"params\":{\"cursor\":\"p3\"}}");
	CHECK_STR(lines[5], "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":"
			    "{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}}");
	free(text);
	free(log);
	free(env);
	free(e);
	tool_set_free(ts);
}

TEST(fake_calls_and_results)
{
	struct tool_set *ts = fake_set("\"normal\"");
	struct rlm_err err;
	int rc;
	char *r;
	r = call_ok(ts, "fake.add", "{\"a\": 2, \"b\": 3}");
	CHECK_STR(r, "{\"sum\":5}"); /* structuredContent */
	free(r);
	r = call_ok(ts, "fake.image", NULL);
	CHECK_CONTAINS(r, "a picture:\\n{\\\"type\\\":\\\"image\\\"");
	free(r);
	/* isError: the text as the error */
	r = call(ts, "fake.boom", "{}", &rc, &err);
	CHECK(!r);
	CHECK_INT(rc, RLM_EIO);
	CHECK_CONTAINS(err.msg, "tool 'fake.boom' failed: it failed on purpose");
	/* checked before the server sees it */
	r = call(ts, "fake.add", "{\"x\": 1, \"b\": 2}", &rc, &err);
	CHECK_INT(rc, RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "bad arguments for 'fake.add': ");
	CHECK_CONTAINS(err.msg, "'x'");
	r = call(ts, "fake.add", "[1]", &rc, &err);
	CHECK_INT(rc, RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "must be an object");
	/* over TOOL_MAX_RESULT: cut, and it says so */
	{
		cJSON *v = NULL;
		CHECK_INT(tool_set_call(ts, "fake.big", NULL, 0, &v, &err), 0);
		CHECK(cJSON_IsString(v));
		CHECK(strlen(v->valuestring) <= TOOL_MAX_RESULT);
		CHECK_CONTAINS(v->valuestring, "[... cut: the result is 2097152 bytes");
		cJSON_Delete(v);
	}
	tool_set_free(ts);
}

TEST(fake_server_requests_in_a_call)
{
	struct tool_set *ts = fake_set("\"normal\"");
	char *r = call_ok(ts, "fake.ping", NULL);
	CHECK_STR(r, "\"pong ok\"");
	free(r);
	r = call_ok(ts, "fake.batch", NULL); /* a 2025-03-26 batch */
	CHECK_STR(r, "\"batched\"");
	free(r);
	tool_set_free(ts);
}

TEST(fake_list_changed_rereads_the_tools)
{
	struct tool_set *ts = fake_set("\"normal\"");
	struct rlm_err err = {0};
	cJSON *v = tool_set_search_json(ts, "came later", NULL, 5, &err);
	char *r = json_print(v);
	CHECK(!strstr(r, "fake.late"));
	free(r);
	cJSON_Delete(v);
	r = call_ok(ts, "fake.changed", NULL);
	free(r);
	v = tool_set_search_json(ts, "came later", NULL, 5, &err);
	CHECK_STR(json_str(cJSON_GetArrayItem(v, 0), "name"), "fake.late");
	cJSON_Delete(v);
	tool_set_free(ts);
}

TEST(fake_environment_drops_credentials)
{
	char *e = fake_entry("fake", "\"normal\"",
			     "\"env\": {\"FAKE_EXTRA\": \"yes\", \"HOME\": \"/x\","
			     " \"PASSED_KEY\": \"k=${OPENAI_API_KEY}\","
			     " \"DEFAULTED\": \"${RLM_TEST_UNSET_VAR:-dflt}\","
			     " \"LITERAL\": \"a${ b } ${1x} $HOME ${\"}");
	struct tool_set *ts;
	char *r;
	setenv("OPENAI_API_KEY", "sk-secret", 1);
	setenv("my_token", "t", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "s", 1);
	setenv("FAKE_PLAIN", "plain", 1);
	setenv("PGPASSWORD", "pw", 1);
	setenv("OPENAI_BASE_URL", "https://user:pw@example.invalid/v1", 1);
	setenv("AWS_ACCESS_KEY_ID", "AKIA", 1);
	ts = set_with(e);
	for (int i = 0; i < 3; i++) {
		static const char *const more[] = {"PGPASSWORD", "OPENAI_BASE_URL",
						   "AWS_ACCESS_KEY_ID"};
		char *q = xasprintf("{\"name\": \"%s\"}", more[i]);
		r = call_ok(ts, "fake.env", q);
		CHECK_MSG(strcmp(r, "\"(unset)\"") == 0, "%s reached the server: %s", more[i], r);
		free(r);
		free(q);
	}
	r = call_ok(ts, "fake.env", "{\"name\": \"OPENAI_API_KEY\"}");
	CHECK_STR(r, "\"(unset)\"");
	free(r);
	r = call_ok(ts, "fake.env", "{\"name\": \"my_token\"}");
	CHECK_STR(r, "\"(unset)\"");
	free(r);
	r = call_ok(ts, "fake.env", "{\"name\": \"AWS_SECRET_ACCESS_KEY\"}");
	CHECK_STR(r, "\"(unset)\"");
	free(r);
	r = call_ok(ts, "fake.env", "{\"name\": \"FAKE_PLAIN\"}");
	CHECK_STR(r, "\"plain\"");
	free(r);
	r = call_ok(ts, "fake.env", "{\"name\": \"FAKE_EXTRA\"}");
	CHECK_STR(r, "\"yes\"");
	free(r);
	r = call_ok(ts, "fake.env", "{\"name\": \"HOME\"}");
	CHECK_STR(r, "\"/x\"");
	free(r);
	/* ${NAME} hands a server what it is not given by default */
	r = call_ok(ts, "fake.env", "{\"name\": \"PASSED_KEY\"}");
	CHECK_STR(r, "\"k=sk-secret\"");
	free(r);
	r = call_ok(ts, "fake.env", "{\"name\": \"DEFAULTED\"}");
	CHECK_STR(r, "\"dflt\"");
	free(r);
	r = call_ok(ts, "fake.env", "{\"name\": \"LITERAL\"}");
	CHECK_STR(r, "\"a${ b } ${1x} $HOME ${\"");
	free(r);
	free(e);
	tool_set_free(ts);
}

/* A misbehaving server "bad" beside a good one: the call fails with want,
 * the good one keeps working, and bad is started again for the next. */
static void misbehave(const char *mode, int want_rc, const char *want)
{
	char *b = fake_entry("bad", mode, NULL), *g = fake_entry("good", "\"normal\"", NULL);
	char *both = xasprintf("%s, %s", b, g), *r;
	struct tool_set *ts = set_with(both);
	struct rlm_err err;
	int64_t t0;
	int rc;
	tool_set_timeouts(ts, 0, 2 * (int64_t)1000000000 * slow_factor());
	r = call_ok(ts, "bad.echo", "{\"text\": \"before\"}");
	free(r);
	t0 = time_now_ns();
	r = call(ts, "bad.boom", NULL, &rc, &err);
	CHECK(!r);
	CHECK_MSG(rc == want_rc, "rc %d, want %d: %s", rc, want_rc, err.msg);
	CHECK_CONTAINS(err.msg, "'bad'");
	CHECK_CONTAINS(err.msg, want);
	CHECK(time_now_ns() - t0 < 10 * (int64_t)1000000000 * slow_factor());
	r = call_ok(ts, "good.add", "{\"a\": 1, \"b\": 1}");
	CHECK_STR(r, "{\"sum\":2}");
	free(r);
	r = call_ok(ts, "bad.echo", "{\"text\": \"after\"}"); /* started again */
	CHECK_STR(r, "\"after\"");
	free(r);
	tool_set_free(ts);
	CHECK_INT(children(), 0);
	free(both);
	free(b);
	free(g);
}

TEST(fake_crash_says_its_stderr)
{
	misbehave("\"crash\"", RLM_EIO,
		  "exited with status 3; its stderr ended: starting boom | fatal: boom happened");
}

TEST(fake_hang_times_out_naming_the_seconds)
{
	char want[80];
	snprintf(want, sizeof(want), "did not answer tools/call within %d s",
		 2 * (int)slow_factor());
	misbehave("\"hang\"", RLM_ETIMEOUT, want);
}

TEST(fake_garbage_fails_the_server)
{
	misbehave("\"garbage\"", RLM_EIO,
		  "wrote a line that is not JSON: 'this is not json at all'");
}

TEST(fake_bad_utf8_fails_the_server)
{
	misbehave("\"badutf8\"", RLM_EIO, "wrote a message that is not UTF-8 (byte ");
}

TEST(no_time_left_sends_nothing)
{
	struct tool_set *ts = fake_set("\"normal\"");
	struct rlm_err err = {0};
	cJSON *r = NULL, *a = cJSON_Parse("{\"text\": \"late\"}");
	char *s = call_ok(ts, "fake.echo", "{\"text\": \"up\"}");
	free(s);
	CHECK_INT(tool_set_call(ts, "fake.echo", a, time_now_ns() - 1, &r, &err), RLM_ETIMEOUT);
	cJSON_Delete(a);
	CHECK_CONTAINS(err.msg, "no time was left to call 'fake.echo'");
	s = call_ok(ts, "fake.echo", "{\"text\": \"still up\"}"); /* not killed */
	CHECK_STR(s, "\"still up\"");
	free(s);
	tool_set_free(ts);
}

TEST(fake_huge_reply_is_refused)
{
	misbehave("\"huge\"", RLM_EIO, "wrote a message over 16 MiB");
}

TEST(fake_server_that_stops_reading)
{
	struct tool_set *ts = fake_set("\"normal\"");
	struct rlm_err err;
	size_t big = 1u << 20;
	char *text = xmalloc(big + 32), *r;
	int64_t t0;
	int rc;
	tool_set_timeouts(ts, 0, (int64_t)1000000000 * slow_factor());
	r = call_ok(ts, "fake.deafen", NULL);
	free(r);
	/* 1 MiB of arguments to a server that reads no more: the write, not
	 * only the wait, ends at the deadline */
	strcpy(text, "{\"text\": \"");
	memset(text + 10, 'q', big);
	strcpy(text + 10 + big, "\"}");
	t0 = time_now_ns();
	r = call(ts, "fake.echo", text, &rc, &err);
	CHECK(!r);
	/* a line cut short breaks the stream: the server's fault, not a
	 * timeout of the caller's (which would keep it) */
	CHECK_MSG(rc == RLM_EIO, "rc %d: %s", rc, err.msg);
	CHECK_CONTAINS(err.msg, "did not read its input in time");
	CHECK(time_now_ns() - t0 < 5 * (int64_t)1000000000 * slow_factor());
	r = call_ok(ts, "fake.echo", "{\"text\": \"again\"}"); /* started again */
	CHECK_STR(r, "\"again\"");
	free(r);
	free(text);
	tool_set_free(ts);
	CHECK_INT(children(), 0);
}

TEST(fake_three_starts_then_failed_for_good)
{
	struct tool_set *ts = fake_set("\"crash\"");
	struct rlm_err err;
	cJSON *v;
	int rc;
	for (int i = 0; i < 3; i++) {
		char *r = call(ts, "fake.boom", NULL, &rc, &err);
		CHECK(!r);
		CHECK_CONTAINS(err.msg, "exited with status 3");
	}
	CHECK(!call(ts, "fake.echo", "{\"text\": \"x\"}", &rc, &err));
	CHECK_INT(rc, RLM_EIO);
	CHECK_CONTAINS(err.msg, "server 'fake' is not available: it failed 3 times (last: ");
	v = tool_set_servers_json(ts);
	CHECK_CONTAINS(json_str(cJSON_GetArrayItem(v, 0), "error"), "exited with status 3");
	CHECK_INT(json_int(cJSON_GetArrayItem(v, 0), "tools", -1), 0);
	cJSON_Delete(v);
	tool_set_free(ts);
	CHECK_INT(children(), 0);
}

TEST(fake_slow_start_and_bad_revision)
{
	char secs[40], *a, *b, *c, *all;
	struct tool_set *ts;
	cJSON *v, *s;
	int64_t t0;
	snprintf(secs, sizeof(secs), "\"slow\", \"%d\"", 5 * (int)slow_factor());
	a = fake_entry("slow", secs, NULL);
	b = fake_entry("old", "\"badversion\"", NULL);
	c = fake_entry("nocmd", "\"normal\"", "\"cwd\": \"/proc/no/such/dir\"");
	all =
	    xasprintf("%s, %s, %s, \"missing\": {\"command\": \"rlm-no-such-command-x\"}", a, b, c);
	ts = set_with(all);
	tool_set_timeouts(ts, (int64_t)1000000000 * slow_factor(), 0);
	t0 = time_now_ns();
	v = tool_set_servers_json(ts);
	CHECK(time_now_ns() - t0 < 4 * (int64_t)1000000000 * slow_factor()); /* in parallel */
	CHECK_INT(cJSON_GetArraySize(v), 4);
	s = cJSON_GetArrayItem(v, 0);
	CHECK_CONTAINS(json_str(s, "error"), "server 'slow' did not answer initialize within");
	s = cJSON_GetArrayItem(v, 1);
	CHECK_CONTAINS(json_str(s, "error"),
		       "server 'old' speaks MCP revision '1999-01-01', which rlm does not");
	s = cJSON_GetArrayItem(v, 2);
	CHECK_CONTAINS(json_str(s, "error"), "its cwd '/proc/no/such/dir' is not a directory");
	s = cJSON_GetArrayItem(v, 3);
	CHECK_CONTAINS(json_str(s, "error"),
		       "cannot start server 'missing': 'rlm-no-such-command-x': command not found");
	CHECK_INT(json_int(s, "tools", -1), 0);
	cJSON_Delete(v);
	free(a);
	free(b);
	free(c);
	free(all);
	tool_set_free(ts);
	CHECK_INT(children(), 0);
}

struct par {
	struct tool_set *ts;
	int i;
	char *got;
};

static void *par_main(void *arg)
{
	struct par *p = arg;
	struct rlm_err err;
	char args[80];
	int rc;
	snprintf(args, sizeof(args), "{\"ms\": 400, \"tag\": \"t%d\"}", p->i);
	p->got = call(p->ts, "fake.sleep", args, &rc, &err);
	return NULL;
}

TEST(fake_eight_threads_at_once)
{
	struct tool_set *ts = fake_set("\"normal\"");
	struct par p[8];
	pthread_t th[8];
	int64_t t0;
	char *r = call_ok(ts, "fake.echo", "{\"text\": \"warm\"}");
	free(r);
	t0 = time_now_ns();
	for (int i = 0; i < 8; i++) {
		p[i] = (struct par){ts, i, NULL};
		CHECK_INT(pthread_create(&th[i], NULL, par_main, &p[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		char want[16];
		pthread_join(th[i], NULL);
		snprintf(want, sizeof(want), "\"t%d\"", i);
		CHECK_STR(p[i].got, want);
		free(p[i].got);
	}
	/* multiplexed: 8 calls of 0.4 s took about one's time, not 3.2 s */
	CHECK(time_now_ns() - t0 < 2500000000LL * slow_factor());
	tool_set_free(ts);
}

static void *nothing(void *arg)
{
	return arg;
}

TEST(free_leaves_no_process_and_no_thread)
{
	pthread_t t;
	int th0;
	/* a first thread, for the threads a sanitizer starts with it */
	pthread_create(&t, NULL, nothing, NULL);
	pthread_join(t, NULL);
	th0 = threads();
	char *a = fake_entry("a", "\"normal\"", NULL), *b = fake_entry("b", "\"hang\"", NULL);
	char *all = xasprintf("%s, %s", a, b);
	struct tool_set *ts = set_with(all);
	cJSON *v = tool_set_servers_json(ts);
	int64_t t0;
	cJSON_Delete(v);
	CHECK_INT(children(), 2);
	t0 = time_now_ns();
	tool_set_free(ts);
	CHECK(time_now_ns() - t0 < 4 * (int64_t)1000000000 * slow_factor()); /* in parallel */
	CHECK_INT(children(), 0);
	CHECK_INT(threads(), th0);
	free(a);
	free(b);
	free(all);
}

/* Is pid gone (or a zombie, dead but not yet reaped by its new parent)? */
static bool gone(int pid)
{
	char p[64], *text = NULL, *rp;
	size_t len;
	bool dead;
	snprintf(p, sizeof(p), "/proc/%d/stat", pid);
	if (file_read(p, 4096, &text, &len, NULL))
		return true;
	rp = strrchr(text, ')');
	dead = rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
	free(text);
	return dead;
}

TEST(free_takes_the_server_process_group_down)
{
	struct tool_set *ts = fake_set("\"normal\"");
	char *r = call_ok(ts, "fake.child", NULL);
	int pid = atoi(r + 1);
	int64_t end;
	free(r);
	CHECK(pid > 0);
	CHECK(!gone(pid));
	tool_set_free(ts); /* the fake exits on EOF; its child would live on */
	end = time_now_ns() + 5 * (int64_t)1000000000 * slow_factor();
	while (!gone(pid) && time_now_ns() < end)
		time_sleep_ns(10000000);
	CHECK_MSG(gone(pid), "the server's child %d outlived tool_set_free", pid);
}

/* ---- host tools ---- */

static int greet(void *arg, const char *args_json, char **out)
{
	cJSON *a = cJSON_Parse(args_json);
	const char *who = json_str(a, "who");
	bool nobody = strcmp(who, "nobody") == 0;
	*out =
	    nobody ? xstrdup("nobody is there") : xasprintf("\"%s, %s\"", (const char *)arg, who);
	cJSON_Delete(a);
	return nobody ? -1 : 0;
}

TEST(host_tools_are_found_and_called)
{
	struct tool_set *ts = fake_set("\"normal\"");
	struct rlm_err err = {0};
	const char *schema = "{\"type\":\"object\",\"properties\":{\"who\":{\"type\":\"string\"}},"
			     "\"required\":[\"who\"]}";
	static char hello[] = "hello", hi[] = "hi", x[] = "x";
	cJSON *v;
	char *r;
	int rc;
	CHECK_INT(tool_set_register(ts, "greet", "Greet someone by name", schema, true, greet,
				    hello, &err),
		  0);
	CHECK_INT(tool_set_register(ts, "greet", "again", schema, true, greet, x, &err),
		  RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "'host.greet': the name is taken");
	CHECK_INT(tool_set_register(ts, "fake.greet", "d", schema, true, greet, x, &err),
		  RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "'fake' is an MCP server");
	CHECK_INT(tool_set_register(ts, "bad name", "d", NULL, true, greet, x, &err), RLM_EINVAL);
	CHECK_INT(tool_set_register(ts, "t", "d", "[1]", true, greet, x, &err), RLM_EINVAL);
	CHECK_INT(tool_set_register(ts, "mine.greet2", "Greet too", schema, false, greet, hi, &err),
		  0);
	CHECK_INT(tool_set_n_servers(ts), 3);
	v = tool_set_servers_json(ts);
	CHECK_STR(json_str(cJSON_GetArrayItem(v, 0), "name"), "fake");
	CHECK_STR(json_str(cJSON_GetArrayItem(v, 1), "name"), "host");
	CHECK_INT(json_int(cJSON_GetArrayItem(v, 1), "tools", 0), 1);
	cJSON_Delete(v);
	r = call_ok(ts, "host.greet", "{\"who\": \"Ada\"}");
	CHECK_STR(r, "\"hello, Ada\"");
	free(r);
	r = call_ok(ts, "greet", "{\"who\": \"Bob\"}");
	CHECK_STR(r, "\"hello, Bob\"");
	free(r);
	CHECK(!call(ts, "greet", "{\"who\": \"nobody\"}", &rc, &err));
	CHECK_INT(rc, RLM_EIO);
	CHECK_CONTAINS(err.msg, "tool 'host.greet' failed: nobody is there");
	CHECK(!call(ts, "greet", "{}", &rc, &err));
	CHECK_INT(rc, RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "'who'");
	CHECK_INT(read_only(ts, "mine.greet2", &err), 0);
	v = tool_set_search_json(ts, "greet", NULL, 10, &err);
	CHECK_INT(cJSON_GetArraySize(v), 2);
	CHECK_STR(json_str(cJSON_GetArrayItem(v, 0), "name"), "host.greet"); /* tie: by name */
	cJSON_Delete(v);
	tool_set_free(ts);
}

/* ---- the official reference servers ---- */

/* tests/js/node_modules/.bin/NAME, or SKIP. */
static char *npm_server(const char *name)
{
	char *rel = xasprintf("tests/js/node_modules/.bin/%s", name), *p = repo_path(rel);
	free(rel);
	if (!getenv("PATH") || system("command -v node >/dev/null 2>&1") != 0)
		SKIP("node is not on PATH (make deps installs Node.js)");
	if (!p)
		SKIP("tests/js/node_modules/.bin/%s is missing: run `make deps` (npm ci in "
		     "tests/js)",
		     name);
	return p;
}

TEST(everything_server_get_sum)
{
	char *bin = npm_server("mcp-server-everything");
	char *cfg = xasprintf("\"everything\": {\"command\": \"%s\", \"args\": [\"stdio\"]}", bin);
	struct tool_set *ts = set_with(cfg);
	struct rlm_err err = {0};
	cJSON *v, *info, *req, *a;
	char *r;
	int rc;
	v = tool_set_servers_json(ts);
	CHECK_STR(json_str(cJSON_GetArrayItem(v, 0), "name"), "everything");
	CHECK_MSG(cJSON_IsNull(json_get(cJSON_GetArrayItem(v, 0), "error")), "%s",
		  json_str(cJSON_GetArrayItem(v, 0), "error"));
	CHECK(json_int(cJSON_GetArrayItem(v, 0), "tools", 0) >= 5);
	cJSON_Delete(v);
	v = tool_set_search_json(ts, "sum", NULL, 10, &err);
	r = json_print(v);
	CHECK_CONTAINS(r, "\"everything.get-sum\"");
	free(r);
	cJSON_Delete(v);
	v = tool_set_search_json(ts, "add two numbers", NULL, 3, &err);
	r = json_print(v);
	CHECK_CONTAINS(r, "\"everything.get-sum\"");
	free(r);
	cJSON_Delete(v);
	info = tool_set_info_json(ts, "everything.get-sum", &err);
	CHECK_MSG(info, "%s", err.msg);
	req = json_get(json_get(info, "parameters"), "required");
	CHECK_INT(cJSON_GetArraySize(req), 2);
	a = cJSON_GetArrayItem(req, 0);
	CHECK_STR(json_str(a, "name"), "a");
	CHECK_STR(json_str(a, "type"), "number");
	CHECK_STR(json_str(cJSON_GetArrayItem(req, 1), "name"), "b");
	cJSON_Delete(info);
	r = call_ok(ts, "everything.get-sum", "{\"a\": 2, \"b\": 3}");
	CHECK_CONTAINS(r, "The sum of 2 and 3 is 5.");
	free(r);
	CHECK(!call(ts, "everything.get-sum", "{\"x\": 1, \"b\": 2}", &rc, &err));
	CHECK_INT(rc, RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "'a'");
	tool_set_free(ts);
	CHECK_INT(children(), 0);
	free(cfg);
	free(bin);
}

TEST(filesystem_server_write_is_not_read_only)
{
	char *bin = npm_server("mcp-server-filesystem"), dir[PATH_MAX], *path, *cfg, *args, *r;
	struct tool_set *ts;
	struct rlm_err err = {0};
	FILE *f;
	CHECK(realpath(harness_tmpdir(), dir));
	path = xasprintf("%s/note.txt", dir);
	f = fopen(path, "w");
	fputs("first line\nsecond line, a bit longer than the first one\n", f);
	fclose(f);
	cfg = xasprintf("\"fs\": {\"command\": \"%s\", \"args\": [\"%s\"]}", bin, dir);
	ts = set_with(cfg);
	CHECK_INT(read_only(ts, "fs.write_file", &err), 0);
	CHECK_INT(read_only(ts, "fs.read_text_file", &err), 1);
	args = xasprintf("{\"path\": \"%s\"}", path);
	r = call_ok(ts, "fs.read_text_file", args);
	CHECK_CONTAINS(r, "second line, a bit longer");
	free(r);
	free(args);
	tool_set_free(ts);
	CHECK_INT(children(), 0);
	free(path);
	free(cfg);
	free(bin);
}

TEST(verbose_logs_each_message)
{
	struct tool_set *ts = fake_set("\"normal\"");
	char *path = xasprintf("%s/log", harness_tmpdir()), *text = NULL, *r;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600), saved = dup(2);
	struct rlm_err err = {0};
	size_t len;
	rlm_log_level = LOG_INFO;
	tool_set_verbose(ts, true);
	dup2(fd, 2);
	r = call_ok(ts, "fake.echo", "{\"text\": \"loud\"}");
	dup2(saved, 2);
	close(fd);
	close(saved);
	free(r);
	CHECK_INT(file_read(path, 1 << 20, &text, &len, &err), 0);
	CHECK_CONTAINS(text,
		       "tool: fake <- {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"");
	CHECK_CONTAINS(text, "tool: fake -> "
			     "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"content\":[{\"type\":"
			     "\"text\",\"text\":\"loud\"}]}}");
	free(text);
	free(path);
	tool_set_free(ts);
}

/* ---- a server over streamable HTTP (tests/fake_mcp_http.py) ---- */

/* What the HTTP fake was sent, as JSON text ([{"method", "path",
 * "headers", "body"}]), fetched by Python's urllib. */
static char *http_log(int port)
{
	char *url = xasprintf("http://127.0.0.1:%d/log", port), *out;
	const char *argv[] = {
	    "/usr/bin/python3", "-c",
	    "import sys, urllib.request; "
	    "sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())",
	    url, NULL};
	struct proc_out o;
	CHECK_INT(proc_run(argv, NULL, NULL, 30, &o), 0);
	CHECK_INT(o.status, 0);
	out = xstrdup(o.out);
	proc_out_release(&o);
	free(url);
	return out;
}

TEST(http_server_through_the_set)
{
	char *fake = repo_path("tests/fake_mcp_http.py"), line[64], *cfg, *r, *log;
	const char *argv[] = {"/usr/bin/python3", fake, NULL};
	struct tool_set *ts;
	struct rlm_err err;
	cJSON *v;
	pid_t pid;
	int port, rc;
	if (!fake || access("/usr/bin/python3", X_OK) != 0)
		SKIP("no /usr/bin/python3 or tests/fake_mcp_http.py");
	pid = proc_start_line(argv, NULL, NULL, 20, line, sizeof(line));
	CHECK_MSG(pid > 0, "tests/fake_mcp_http.py did not start");
	port = atoi(line);
	setenv("RLM_TEST_HTTP_SECRET", "s3", 1);
	cfg = xasprintf("\"web\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:%d/mcp\","
			" \"headers\": {\"X-Key\": \"${RLM_TEST_HTTP_SECRET}\"}},"
			" \"gone\": {\"url\": \"http://127.0.0.1:%d/mcp\"}",
			port, proc_closed_port());
	ts = set_with(cfg);
	tool_set_timeouts(ts, 0, (int64_t)1000000000 * slow_factor());
	v = tool_set_servers_json(ts);
	CHECK_MSG(cJSON_IsNull(json_get(cJSON_GetArrayItem(v, 0), "error")), "%s",
		  json_str(cJSON_GetArrayItem(v, 0), "error"));
	CHECK_STR(json_str(cJSON_GetArrayItem(v, 0), "description"), "fake-http 1.0");
	CHECK_INT(json_int(cJSON_GetArrayItem(v, 0), "tools", 0), 1);
	/* a transport error names the server, not only the URL */
	CHECK_CONTAINS(json_str(cJSON_GetArrayItem(v, 1), "error"), "server 'gone'");
	cJSON_Delete(v);
	r = call_ok(ts, "web.sum", NULL);
	CHECK_STR(r, "\"5\"");
	free(r);
	/* garbage drops the session; the next call starts a new one */
	CHECK(!call(ts, "web.garbage", NULL, &rc, &err)); /* not listed: refused here */
	CHECK_INT(rc, RLM_ENOTFOUND);
	tool_set_free(ts);
	log = http_log(port);
	CHECK_CONTAINS(log, "\"x-key\": \"s3\"");
	CHECK_CONTAINS(log, "\"mcp-protocol-version\": \"2025-06-18\"");
	CHECK_CONTAINS(log, "\"method\": \"DELETE\""); /* the session ended */
	CHECK_CONTAINS(log, "\"clientInfo\": {\"name\": \"rlm\"");
	free(log);
	proc_stop(pid);
	free(cfg);
	free(fake);
}

TEST(stdio_cwd_and_commands)
{
	char *fake = fake_path(), *dir = xstrdup(fake), *plain, *cfg, *r;
	struct tool_set *ts;
	cJSON *v;
	FILE *f;
	plain = xasprintf("%s/plain.txt", harness_tmpdir());
	f = fopen(plain, "w");
	fputs("not a program\n", f);
	fclose(f);
	/* a relative script from the server's cwd; a file that is not
	 * executable; a relative command that is not there */
	cfg = xasprintf("\"rel\": {\"command\": \"/usr/bin/python3\", \"args\": [\"fake_mcp.py\", "
			"\"normal\"], \"cwd\": \"%s\"}, \"noexec\": {\"command\": \"%s\"}, "
			"\"norel\": {\"command\": \"./no-such-server\", \"cwd\": \"%s\"}",
			dirname(dir), plain, harness_tmpdir());
	ts = set_with(cfg);
	r = call_ok(ts, "rel.echo", "{\"text\": \"from cwd\"}");
	CHECK_STR(r, "\"from cwd\"");
	free(r);
	v = tool_set_servers_json(ts);
	CHECK_CONTAINS(json_str(cJSON_GetArrayItem(v, 1), "error"),
		       "plain.txt': permission denied");
	CHECK_CONTAINS(json_str(cJSON_GetArrayItem(v, 2), "error"),
		       "cannot start server 'norel': './no-such-server': command not found");
	cJSON_Delete(v);
	tool_set_free(ts);
	free(cfg);
	free(dir);
	free(plain);
	free(fake);
}

/* A sound server that is slow for the caller's deadline is told the call
 * is cancelled and kept: only TOOL__MAX_TIMEOUTS timeouts in a row take it
 * for hung (killed, started again on the next call), so slow calls never
 * use up its starts for good. */
TEST(slow_calls_cancel_and_keep_the_server)
{
	struct tool_set *ts = fake_set("\"normal\"");
	struct rlm_err err;
	int rc;
	char *r;
	tool_set_timeouts(ts, 0, 300000000); /* 0.3 s a call */
	for (int i = 0; i < 7; i++) {
		r = call(ts, "fake.sleep", "{\"ms\": 1500}", &rc, &err);
		CHECK(!r);
		CHECK_MSG(rc == RLM_ETIMEOUT, "call %d: rc %d: %s", i, rc, err.msg);
	}
	r = call_ok(ts, "fake.echo", "{\"text\": \"still served\"}");
	CHECK_STR(r, "\"still served\"");
	free(r);
	tool_set_free(ts);
	CHECK_INT(children(), 0);
}
