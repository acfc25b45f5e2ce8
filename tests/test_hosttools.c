/* SPDX-License-Identifier: MIT */
/* tests/test_hosttools.c -- host tools and skills end to end: `rlm repl`
 * and `rlm solve` with the official MCP reference servers from npm
 * (server-everything, server-filesystem: tests/js, installed by `make
 * deps`), skills saved by one process and loaded by others, the C API's
 * registered tools in a solve whose root model is a scripted fake server,
 * the policy and the budget, and the discovery health counted. */
#include "loopenv.h"
#include "proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* tests/js/node_modules/.bin/NAME as an absolute path, or fail saying to
 * run `make deps`. */
static char *npm_bin(const char *name)
{
	char js[4096], *p;
	CHECK_MSG(realpath("tests/js", js) != NULL, "cannot find tests/js (run from the repo root)");
	p = xasprintf("%s/node_modules/.bin/%s", js, name);
	CHECK_MSG(access(p, X_OK) == 0, "%s is missing: run `make deps` (npm ci in tests/js)", p);
	return p;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK_MSG(f != NULL, "cannot write %s", path);
	fputs(text, f);
	fclose(f);
}

/* A config of server-everything as "everything" and server-filesystem
 * over dir as "fs"; returns its path. */
static char *config(const char *dir)
{
	char *ev = npm_bin("mcp-server-everything"), *fs = npm_bin("mcp-server-filesystem");
	char *path = xasprintf("%s/mcp.json", harness_tmpdir());
	char *text = xasprintf("{\"mcpServers\": {\"everything\": {\"command\": \"%s\"},\n"
			       " \"fs\": {\"command\": \"%s\", \"args\": [\"%s\"]}}}\n",
			       ev, fs, dir);
	write_file(path, text);
	free(ev);
	free(fs);
	free(text);
	return path;
}

static char *notes(void)
{
	char *p = xasprintf("%s/notes.txt", harness_tmpdir());
	write_file(p, "The quarterly memo was written by Ada.\nBudget: 1200 units.\n");
	return p;
}

static char *fs_dir(void)
{
	char *d = xasprintf("%s/fsroot", harness_tmpdir());
	mkdir(d, 0700);
	return d;
}

/* ---- rlm repl against the reference servers ---- */

/* Run `rlm repl` over ctx with cells on stdin and extra args. */
static struct proc_out repl_run(const char *ctx, const char *cells, const char *const *extra)
{
	const char *argv[24] = {harness_rlm_bin(), "repl", "-c", ctx, "--quiet"};
	size_t n = 5;
	struct proc_out o;
	for (size_t i = 0; extra && extra[i] && n < 23; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	CHECK_INT(proc_run(argv, cells, NULL, 180, &o), 0);
	return o;
}

static char *slurp(const char *path)
{
	struct rlm_err err = {0, ""};
	char *t = NULL;
	size_t len;
	if (file_read(path, 1 << 20, &t, &len, &err))
		return NULL;
	return t;
}

TEST(repl_finds_and_calls_get_sum_through_the_three_steps)
{
	char *dir = fs_dir(), *cfg = config(dir), *ctx = notes();
	char *w = xasprintf("%s/w.txt", dir), *got;
	const char *extra[] = {"--mcp-config", cfg, "--no-cache", NULL};
	const char *allow[] = {"--mcp-config", cfg, "--no-cache", "--allow-tools", "fs.write_file",
			       NULL};
	char *cells = xasprintf(
		"s = list_tool_servers()\n"
		"print('SERVERS', sorted(x['name'] for x in s), all(x['tools'] > 0 for x in s))\n"
		"# %%%%\n"
		"h = search_tools('add two numbers')\n"
		"print('TOP', h[0]['name'])\n"
		"# %%%%\n"
		"i = get_tool_info('everything.get-sum')\n"
		"print('REQ', sorted((p['name'], p['type']) for p in i['parameters']['required']))\n"
		"# %%%%\n"
		"print('SUM', call_tool('everything.get-sum', a=2, b=3))\n"
		"# %%%%\n"
		"try:\n"
		"    call_tool('everything.get-sum', x=2, b=3)\n"
		"except ToolError as e:\n"
		"    print('BADARG', e.kind, str(e))\n"
		"# %%%%\n"
		"try:\n"
		"    call_tool('fs.write_file', path='%s', content='hi')\n"
		"except ToolError as e:\n"
		"    print('REFUSED', e.kind, str(e))\n",
		w);
	char *write = xasprintf("print('W', call_tool('fs.write_file', path='%s', content='hi'))\n", w);
	struct proc_out o = repl_run(ctx, cells, extra);
	CHECK_MSG(o.status == 0, "rlm repl failed (%d): %s", o.status, o.err);
	CHECK_MSG(strstr(o.out, "SERVERS ['everything', 'fs'] True"), "servers: %s", o.out);
	CHECK_MSG(strstr(o.out, "TOP everything.get-sum"), "search: %s", o.out);
	CHECK_MSG(strstr(o.out, "REQ [('a', 'number'), ('b', 'number')]"), "info: %s", o.out);
	CHECK_MSG(strstr(o.out, "SUM The sum of 2 and 3 is 5."), "call: %s", o.out);
	CHECK_MSG(strstr(o.out, "BADARG schema") && strstr(o.out, "'a'"), "bad arg: %s", o.out);
	CHECK_MSG(strstr(o.out, "REFUSED policy") && strstr(o.out, "--allow-tools"),
		  "write tool: %s", o.out);
	CHECK_MSG(access(w, F_OK) != 0, "the refused write made %s", w);
	proc_out_release(&o);
	/* allowed by name, the same call writes the file */
	o = repl_run(ctx, write, allow);
	CHECK_MSG(o.status == 0 && strstr(o.out, "W "), "allowed write: %s %s", o.out, o.err);
	got = slurp(w);
	CHECK_MSG(got && strcmp(got, "hi") == 0, "the allowed write did not make %s", w);
	free(got);
	proc_out_release(&o);
	free(cells);
	free(write);
	free(w);
	free(dir);
	free(cfg);
	free(ctx);
}

/* ---- skills: saved by one process, found and loaded by others ---- */

TEST(skills_live_across_processes_with_versions)
{
	char *ctx = notes(), *db = xasprintf("%s/skills.db", harness_tmpdir());
	const char *rw[] = {"--cache", db, "--allow-skill-writes", NULL};
	const char *ro[] = {"--cache", db, NULL};
	struct proc_out o;
	o = repl_run(ctx,
		     "def double(x: int) -> int:\n"
		     "    \"\"\"Twice x.\"\"\"\n"
		     "    return 2 * x\n"
		     "print('SAVED', save_skill('double', double, 'twice a number', "
		     "inputs={'x': 'integer'}))\n"
		     "# %%\n"
		     "src = '''def quad(x):\n"
		     "    d = load_skill('double')\n"
		     "    return d(d(x))\n'''\n"
		     "print('SAVED', save_skill('quad', src, 'four times a number by doubling twice', "
		     "inputs={'x': 'integer'}))\n",
		     rw);
	CHECK_MSG(o.status == 0, "save: %s %s", o.out, o.err);
	CHECK_MSG(strstr(o.out, "SAVED double@1") && strstr(o.out, "SAVED quad@1"), "save: %s",
		  o.out);
	proc_out_release(&o);
	/* another process: listed, described, loaded; a skill calls a skill */
	o = repl_run(ctx,
		     "print('LIST', sorted(s['name'] for s in list_skills()))\n"
		     "# %%\n"
		     "print('FOUND', search_skills('doubling four times')[0]['name'])\n"
		     "# %%\n"
		     "i = get_skill_info('double')\n"
		     "print('INFO', i['version'], i['description'], sorted(i['inputs']['properties']))\n"
		     "# %%\n"
		     "print('QUAD', load_skill('quad')(5))\n",
		     ro);
	CHECK_MSG(o.status == 0, "load: %s %s", o.out, o.err);
	CHECK_MSG(strstr(o.out, "LIST ['double', 'quad']"), "list: %s", o.out);
	CHECK_MSG(strstr(o.out, "FOUND quad"), "search: %s", o.out);
	CHECK_MSG(strstr(o.out, "INFO 1 twice a number ['x']"), "info: %s", o.out);
	CHECK_MSG(strstr(o.out, "QUAD 20"), "a skill calling a skill: %s", o.out);
	proc_out_release(&o);
	/* a new version; version 1 still loads; saving is off without the flag */
	o = repl_run(ctx,
		     "print('SAVED', save_skill('double', 'def double(x):\\n    return x + x + 0\\n', "
		     "'twice a number, by adding', inputs={'x': 'integer'}))\n",
		     rw);
	CHECK_MSG(strstr(o.out, "SAVED double@2"), "version 2: %s %s", o.out, o.err);
	proc_out_release(&o);
	o = repl_run(ctx,
		     "print('V', get_skill_info('double')['version'], load_skill('double', "
		     "version=1)(4), load_skill('double')(4))\n"
		     "# %%\n"
		     "try:\n"
		     "    save_skill('triple', 'def triple(x):\\n    return 3 * x\\n', 'x3', "
		     "inputs={'x': 'integer'})\n"
		     "except Exception as e:\n"
		     "    print('OFF', type(e).__name__, e)\n",
		     ro);
	CHECK_MSG(strstr(o.out, "V 2 8 8"), "versions: %s %s", o.out, o.err);
	CHECK_MSG(strstr(o.out, "OFF ToolError") && strstr(o.out, "--allow-skill-writes"),
		  "save without the flag: %s", o.out);
	proc_out_release(&o);
	/* a skill added from a file by `rlm skills add`: loaded, its inputs
	 * typed from the annotations and checked at the call */
	{
		char *py = xasprintf("%s/slug.py", harness_tmpdir());
		const char *add[] = {"skills", "add", py, "--cache", db, NULL};
		write_file(py, "def slug(title: str, sep: str = '-') -> str:\n"
			       "    \"\"\"A URL slug of a title.\"\"\"\n"
			       "    return sep.join(title.lower().split())\n");
		o = proc_rlm(add, NULL, 60);
		CHECK_MSG(o.status == 0, "skills add: %s %s", o.out, o.err);
		proc_out_release(&o);
		o = repl_run(ctx,
			     "s = load_skill('slug')\n"
			     "print('SLUG', s('Hello Big World'), s(title='A b', sep='_'))\n"
			     "try:\n"
			     "    s(title=3)\n"
			     "except TypeError as e:\n"
			     "    print('TYPE', e)\n",
			     ro);
		CHECK_MSG(strstr(o.out, "SLUG hello-big-world a_b"), "%s %s", o.out, o.err);
		CHECK_MSG(strstr(o.out, "TYPE") && strstr(o.out, "'title'"), "%s", o.out);
		proc_out_release(&o);
		free(py);
	}
	free(ctx);
	free(db);
}

/* ---- the C API: tools of the embedding program in a solve ---- */

/* host.add: {"a": number, "b": number} -> their sum */
static int host_add(void *arg, const char *args_json, char **out)
{
	cJSON *a = json_parse(args_json, strlen(args_json));
	(void)arg;
	if (!a) {
		*out = xstrdup("arguments are not JSON");
		return -1;
	}
	*out = xasprintf("%.17g", json_num(a, "a", 0) + json_num(a, "b", 0));
	cJSON_Delete(a);
	return 0;
}

static int host_wipe(void *arg, const char *args_json, char **out)
{
	(void)args_json;
	(*(int *)arg)++;
	*out = xstrdup("\"wiped\"");
	return 0;
}

static const char add_schema[] =
	"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\",\"description\":\"first\"},"
	"\"b\":{\"type\":\"number\",\"description\":\"second\"}},\"required\":[\"a\",\"b\"]}";

static struct tool_set *host_tools(int *wiped)
{
	struct tool_set *ts = rlm_tools_new();
	struct rlm_err err = {0, ""};
	CHECK_MSG(rlm_tool_register(ts, "add", add_schema, "Add two numbers and return the sum",
				    true, host_add, NULL, &err) == 0,
		  "%s", err.msg);
	CHECK_MSG(rlm_tool_register(ts, "host.wipe", NULL, "Wipe the scratch area", false,
				    host_wipe, wiped, &err) == 0,
		  "%s", err.msg);
	CHECK(rlm_tool_register(ts, "add", add_schema, "again", true, host_add, NULL, &err) ==
	      RLM_EINVAL);
	return ts;
}

TEST(registered_tools_are_found_called_and_counted)
{
	struct env v;
	int wiped = 0;
	char *sys, *out;
	env_init(&v, SUB_SIM);
	v.o.tools = host_tools(&wiped);
	says(&v, "```repl\n"
		 "print('TOP', search_tools('sum of numbers')[0]['name'])\n"
		 "i = get_tool_info('host.add')\n"
		 "print('ALLOWED', i['allowed'], [p['name'] for p in i['parameters']['required']])\n"
		 "print('R', call_tool('host.add', a=2, b=40))\n"
		 "try:\n"
		 "    call_tool('host.wipe')\n"
		 "except ToolError as e:\n"
		 "    print('W', e.kind)\n"
		 "print('B', call_tools_batched([('host.add', {'a': 1, 'b': 1}), "
		 "('host.add', {'a': 'x'})])[0])\n"
		 "```");
	says(&v, "```repl\nFINAL('done')\n```");
	CHECK_MSG(solve(&v, "What is 2 + 40?") == 0, "%s", v.err.msg);
	sys = message(v.root_srv, 0, 0, NULL);
	CHECK_MSG(strstr(sys, "Host tools: 1 tool server is connected"), "system prompt: %s", sys);
	CHECK_MSG(!strstr(sys, "host.add"), "the catalogue is in the system prompt");
	out = message(v.root_srv, 1, -1, NULL);
	CHECK_MSG(strstr(out, "TOP host.add"), "%s", out);
	CHECK_MSG(strstr(out, "ALLOWED True ['a', 'b']"), "%s", out);
	CHECK_MSG(strstr(out, "R 42"), "%s", out);
	CHECK_MSG(strstr(out, "W policy"), "%s", out);
	CHECK_MSG(strstr(out, "B 2"), "%s", out);
	CHECK_INT(wiped, 0);
	CHECK_INT(v.r.tools.searches, 1);
	CHECK_INT(v.r.tools.infos, 1);
	CHECK_INT(v.r.tools.calls, 4);
	CHECK_INT(v.r.tools.calls_ok, 2);
	CHECK_INT(v.r.tools.policy_refused, 1);
	CHECK_INT(v.r.tools.schema_refused, 1);
	CHECK_INT(v.r.tools.blind, 1); /* host.wipe: its info was not read */
	{
		cJSON *j = rlm_result_json(&v.r, &v.o), *t = json_get(j, "tools");
		CHECK(t != NULL);
		CHECK_INT(json_int(t, "calls_without_info", -1), 1);
		CHECK_INT(cJSON_GetArraySize(json_get(t, "list")), 4);
		cJSON_Delete(j);
	}
	free(sys);
	free(out);
	rlm_tools_free(v.o.tools);
	v.o.tools = NULL;
	env_free(&v);
}

TEST(child_rlms_get_the_same_tools_and_one_budget)
{
	struct env v;
	int wiped = 0;
	char *out;
	env_init(&v, SUB_SIM);
	v.o.tools = host_tools(&wiped);
	v.o.max_tool_calls = 2;
	says(&v, "```repl\n"
		 "print('C', rlm_query('add one and two'))\n"
		 "print('R', call_tool('host.add', a=3, b=4))\n"
		 "try:\n"
		 "    call_tool('host.add', a=5, b=6)\n"
		 "except ToolError as e:\n"
		 "    print('OVER', e.kind)\n"
		 "```");
	says(&v, "```repl\nFINAL(str(call_tool('host.add', a=1, b=2)))\n```");
	says(&v, "```repl\nFINAL('done')\n```");
	CHECK_MSG(solve(&v, "q?") == 0, "%s", v.err.msg);
	out = message(v.root_srv, 2, -1, NULL);
	CHECK_MSG(strstr(out, "C 3"), "the child's tool call: %s", out);
	CHECK_MSG(strstr(out, "R 7"), "%s", out);
	CHECK_MSG(strstr(out, "OVER budget"), "%s", out);
	CHECK_INT(v.r.tools.calls, 3);
	CHECK_INT(v.r.tools.budget_refused, 1);
	free(out);
	rlm_tools_free(v.o.tools);
	v.o.tools = NULL;
	env_free(&v);
}

/* ---- the simulator follows the three steps; runs show and --json say so ---- */

TEST(sim_solve_answers_from_a_tool_and_counts_discovery)
{
	char *dir = fs_dir(), *cfg = config(dir), *ctx = notes();
	char *db = xasprintf("%s/solve.db", harness_tmpdir());
	const char *args[] = {"solve", "-c", ctx, "-q", "What is the sum of 12 and 30?",
			      "--mcp-config", cfg, "--cache", db, "--json", NULL};
	const char *plain[] = {"solve", "-c", ctx, "-q", "Who wrote the quarterly memo?",
			       "--mcp-config", cfg, "--cache", db, "--json", NULL};
	struct proc_out o = proc_rlm(args, NULL, 180);
	cJSON *j = json_parse(o.out, strlen(o.out)), *t = json_get(j, "tools");
	char *run;
	CHECK_MSG(o.status == 0 && j, "solve failed (%d): %s %s", o.status, o.out, o.err);
	CHECK_MSG(json_str(j, "answer") && strstr(json_str(j, "answer"), "42"), "answer: %s",
		  o.out);
	CHECK_MSG(t, "no tools section: %s", o.out);
	CHECK_INT(json_int(t, "calls", -1), 1);
	CHECK_INT(json_int(t, "calls_ok", -1), 1);
	CHECK_INT(json_int(t, "calls_without_info", -1), 0);
	CHECK_INT(json_int(t, "schema_refused", -1), 0);
	CHECK_MSG(json_int(t, "searches", 0) >= 1 && json_int(t, "infos", 0) >= 1, "%s", o.out);
	run = xstrdup(json_str(j, "run"));
	cJSON_Delete(j);
	proc_out_release(&o);
	{
		const char *show[] = {"runs", "show", run, "--cache", db, NULL};
		o = proc_rlm(show, NULL, 60);
		CHECK_MSG(o.status == 0 && strstr(o.out, "tools     2 servers; 1 call (1 answered)"),
			  "runs show: %s %s", o.out, o.err);
		CHECK_MSG(strstr(o.out, "call ok: everything.get-sum"), "runs show: %s", o.out);
		proc_out_release(&o);
	}
	/* a question no tool answers: the simulator reads the context */
	o = proc_rlm(plain, NULL, 180);
	j = json_parse(o.out, strlen(o.out));
	CHECK_MSG(o.status == 0 && j, "solve failed (%d): %s %s", o.status, o.out, o.err);
	CHECK_MSG(strstr(json_str(j, "answer") ? json_str(j, "answer") : "", "Ada"), "answer: %s",
		  o.out);
	CHECK_INT(json_int(json_get(j, "tools"), "calls", -1), 0);
	cJSON_Delete(j);
	proc_out_release(&o);
	free(run);
	free(db);
	free(dir);
	free(cfg);
	free(ctx);
}

/* A bad config is refused before anything starts, naming what is wrong. */
TEST(bad_mcp_config_is_refused_by_name)
{
	char *ctx = notes(), *p = xasprintf("%s/bad.json", harness_tmpdir());
	const char *args[] = {"solve", "-c", ctx, "-q", "q?", "--mcp-config", p, "--no-cache", NULL};
	struct proc_out o;
	write_file(p, "{\"mcpServers\": {\"x\": {\"args\": [1]}}}");
	o = proc_rlm(args, NULL, 60);
	CHECK_MSG(o.status == 2 && strstr(o.err, "--mcp-config") && strstr(o.err, "'x'"),
		  "%d: %s", o.status, o.err);
	proc_out_release(&o);
	{
		const char *a2[] = {"solve", "-c", ctx, "-q", "q?", "--allow-tools", "fs write",
				    "--no-cache", NULL};
		o = proc_rlm(a2, NULL, 60);
		CHECK_MSG(o.status == 2 && strstr(o.err, "--allow-tools"), "%d: %s", o.status, o.err);
		proc_out_release(&o);
	}
	free(ctx);
	free(p);
}

/* ---- servers that misbehave: the model gets an error, the REPL goes on ---- */

TEST(crashing_and_hanging_servers_give_the_model_errors)
{
	char *ctx = notes(), *py = NULL, *cfg = xasprintf("%s/bad_servers.json", harness_tmpdir());
	char here[4096], *text;
	const char *extra[] = {"--mcp-config", cfg, "--no-cache", "--allow-tools", "*",
			       "--deny-tools", "crash.env", "--tool-timeout", "1", NULL};
	struct proc_out o;
	CHECK(realpath("tests/fake_mcp.py", here) != NULL);
	py = xstrdup(here);
	text = xasprintf("{\"mcpServers\": {\"crash\": {\"command\": \"/usr/bin/python3\", "
			 "\"args\": [\"%s\", \"crash\"]}, \"hang\": {\"command\": "
			 "\"/usr/bin/python3\", \"args\": [\"%s\", \"hang\"]}, \"garbage\": "
			 "{\"command\": \"/usr/bin/python3\", \"args\": [\"%s\", \"garbage\"]}}}",
			 py, py, py);
	write_file(cfg, text);
	o = repl_run(ctx,
		     "for n in ('crash.boom', 'hang.boom', 'garbage.boom'):\n"
		     "    try:\n"
		     "        call_tool(n)\n"
		     "    except ToolError as e:\n"
		     "        print('ERR', n, e.kind)\n"
		     "# %%\n"
		     "print('AGAIN', call_tool('crash.echo', text='still here'))\n"
		     "# %%\n"
		     "try:\n"
		     "    call_tool('crash.env', name='HOME')\n"
		     "except ToolError as e:\n"
		     "    print('DENIED', e.kind, 'deny-tools' in str(e))\n"
		     "# %%\n"
		     "print('ALIVE', 6 * 7)\n",
		     extra);
	CHECK_MSG(o.status == 0, "repl: %s %s", o.out, o.err);
	CHECK_MSG(strstr(o.out, "ERR crash.boom server"), "crash: %s", o.out);
	CHECK_MSG(strstr(o.out, "ERR hang.boom timeout"), "hang: %s", o.out);
	CHECK_MSG(strstr(o.out, "ERR garbage.boom server"), "garbage: %s", o.out);
	CHECK_MSG(strstr(o.out, "AGAIN still here"), "restart: %s", o.out);
	CHECK_MSG(strstr(o.out, "DENIED policy True"), "deny wins over allow: %s", o.out);
	CHECK_MSG(strstr(o.out, "ALIVE 42"), "%s", o.out);
	proc_out_release(&o);
	free(text);
	free(py);
	free(cfg);
	free(ctx);
}

/* The policy judges the tool, not its spelling: a bare name is refused
 * by a deny pattern of its server, and the info read under one spelling
 * counts for a call under the other. Calls refused by the schema spend
 * nothing of --max-tool-calls. */
TEST(policy_and_counts_hold_for_bare_names)
{
	struct env v;
	struct tool_policy p;
	struct rlm_err err = {0, ""};
	int wiped = 0;
	char *out;
	env_init(&v, SUB_SIM);
	v.o.tools = host_tools(&wiped);
	CHECK_INT(tool_policy_parse(&p, "*", "host.wipe", &err), 0);
	v.o.tool_policy = &p;
	v.o.max_tool_calls = 2;
	says(&v, "```repl\n"
		 "i = get_tool_info('add')\n"
		 "for args in ({'x': 1}, {'a': 'one'}, {'a': 1, 'b': 2}, {'a': 2, 'b': 2}):\n"
		 "    try:\n"
		 "        print('ADD', call_tool('host.add', args))\n"
		 "    except ToolError as e:\n"
		 "        print('ERR', e.kind)\n"
		 "try:\n"
		 "    call_tool('wipe')\n"
		 "except ToolError as e:\n"
		 "    print('WIPE', e.kind)\n"
		 "```");
	says(&v, "```repl\nFINAL('done')\n```");
	CHECK_MSG(solve(&v, "q?") == 0, "%s", v.err.msg);
	out = message(v.root_srv, 1, -1, NULL);
	CHECK_MSG(strstr(out, "ADD 3") && strstr(out, "ADD 4"), "the budget after refusals: %s",
		  out);
	CHECK_MSG(strstr(out, "WIPE policy"), "a bare name past --deny-tools: %s", out);
	CHECK_INT(wiped, 0);
	CHECK_INT(v.r.tools.schema_refused, 2);
	CHECK_INT(v.r.tools.blind, 1); /* wipe only: add's info was read as 'add' */
	free(out);
	tool_policy_release(&p);
	rlm_tools_free(v.o.tools);
	v.o.tools = NULL;
	env_free(&v);
}

/* The configuration a memo is keyed by tells tool sets apart by how their
 * servers are reached, not by their names alone, and keeps no env value. */
TEST(config_tells_tool_sets_apart_without_secrets)
{
	struct rlm_opts o;
	struct rlm_err err = {0, ""};
	struct tool_set *a = rlm_tools_new(), *b = rlm_tools_new(), *c = rlm_tools_new();
	const char *ja = "{\"mcpServers\": {\"fs\": {\"command\": \"x\", \"args\": [\"/a\"], "
			 "\"env\": {\"PASS\": \"hunter2-secret\"}}}}";
	const char *jb = "{\"mcpServers\": {\"fs\": {\"command\": \"x\", \"args\": [\"/b\"], "
			 "\"env\": {\"PASS\": \"hunter2-secret\"}}}}";
	char *ca, *cb, *cc;
	CHECK_INT(tool_set_add_config(a, ja, strlen(ja), "a", &err), 0);
	CHECK_INT(tool_set_add_config(b, jb, strlen(jb), "b", &err), 0);
	CHECK_INT(tool_set_add_config(c, ja, strlen(ja), "c", &err), 0);
	memset(&o, 0, sizeof(o));
	o.tools = a;
	ca = rlm_config_json(&o);
	o.tools = b;
	cb = rlm_config_json(&o);
	o.tools = c;
	cc = rlm_config_json(&o);
	CHECK_MSG(strcmp(ca, cb) != 0, "same key for /a and /b: %s", ca);
	CHECK_STR(ca, cc);
	CHECK_MSG(!strstr(ca, "hunter2"), "an env value in the config: %s", ca);
	o.max_tool_calls = 3;
	free(cc);
	cc = rlm_config_json(&o);
	CHECK_MSG(strcmp(ca, cc) != 0, "--max-tool-calls is not in the key");
	free(ca);
	free(cb);
	free(cc);
	rlm_tools_free(a);
	rlm_tools_free(b);
	rlm_tools_free(c);
}
