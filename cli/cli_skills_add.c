/* SPDX-License-Identifier: MIT */
/* cli/cli_skills_add.c -- `rlm skills add FILE.py`: a Python file read
 * into a skill and stored as a new version.
 *
 * DESIGN
 * The file is read without being run: /usr/bin/python3 (or --python)
 * parses and compiles it with the ast module (a small script given with
 * -c, the file on its stdin, isolated with -I -S), and reports the
 * function, its signature, its parameters' types and defaults and its
 * docstring as JSON. Nothing of the file is executed, here or later but
 * in the sandboxed REPL worker of a solve that loads it. */
#include "cli.h"
#include "cli_int.h"
#include "../common/json.h"
#include "../store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ANALYSE_TIMEOUT_MS 30000     /* python3 parsing one file */
#define ANALYSE_OUT_MAX	   (4 << 20) /* what it may print */

/* The analysis python3 runs: the file's text on stdin, its name and the
 * wanted entry ("" for the only one) as arguments; one JSON object out,
 * {"error"} or {"entry","line","signature","description","inputs",
 * "outputs"}. */
static const char analyse_py[] =
	"import ast, json, sys\n"
	"def out(o):\n"
	"    sys.stdout.write(json.dumps(o))\n"
	"    sys.stdout.flush()\n"
	"    sys.exit(0)\n"
	"fn, want = sys.argv[1], sys.argv[2]\n"
	"raw = sys.stdin.buffer.read()\n"
	"try:\n"
	"    text = raw.decode(\"utf-8\")\n"
	"except UnicodeDecodeError as e:\n"
	"    out({\"error\": \"not UTF-8 text (byte %d)\" % e.start})\n"
	"try:\n"
	"    tree = ast.parse(text, fn)\n"
	"    compile(tree, fn, \"exec\", dont_inherit=True)\n"
	"except SyntaxError as e:\n"
	"    out({\"error\": \"does not compile: line %s: %s\" % (e.lineno, e.msg), \"line\": "
	"e.lineno})\n"
	"except (ValueError, RecursionError, MemoryError) as e:\n"
	"    out({\"error\": \"does not compile: %s\" % e})\n"
	"defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]\n"
	"names = [n.name for n in defs]\n"
	"if want:\n"
	"    found = [n for n in defs if n.name == want]\n"
	"    if not found:\n"
	"        out({\"error\": \"has no top-level function '%s'%s\" % (want, \" (it defines: %s)\" % "
	"\", \".join(names) if names else \"\")})\n"
	"    f = found[-1]\n"
	"elif not defs:\n"
	"    out({\"error\": \"defines no top-level function: a skill is one function (def "
	"NAME(...):)\"})\n"
	"elif len(set(names)) > 1:\n"
	"    out({\"error\": \"defines %d top-level functions (%s): pick the skill's with --entry\" % "
	"(len(set(names)), \", \".join(names))})\n"
	"else:\n"
	"    f = defs[-1]\n"
	"if isinstance(f, ast.AsyncFunctionDef):\n"
	"    out({\"error\": \"'%s' is async (line %d): a skill is a plain function\" % (f.name, "
	"f.lineno)})\n"
	"TYPES = {\"int\": \"integer\", \"float\": \"number\", \"str\": \"string\", \"bool\": "
	"\"boolean\",\n"
	"         \"list\": \"array\", \"dict\": \"object\", \"List\": \"array\", \"Dict\": "
	"\"object\",\n"
	"         \"tuple\": \"array\", \"Tuple\": \"array\"}\n"
	"def typ(a):\n"
	"    if a is None:\n"
	"        return None\n"
	"    if isinstance(a, ast.Constant) and isinstance(a.value, str):\n"
	"        try:\n"
	"            a = ast.parse(a.value, mode=\"eval\").body\n"
	"        except SyntaxError:\n"
	"            return None\n"
	"    if isinstance(a, ast.Subscript):\n"
	"        a = a.value\n"
	"    if isinstance(a, ast.Name):\n"
	"        return TYPES.get(a.id)\n"
	"    if isinstance(a, ast.Attribute):\n"
	"        return TYPES.get(a.attr)\n"
	"    return None\n"
	"def one(p, d):\n"
	"    s = p.arg\n"
	"    if p.annotation is not None:\n"
	"        s += \": \" + ast.unparse(p.annotation)\n"
	"        if d is not None:\n"
	"            s += \" = \" + ast.unparse(d)\n"
	"    elif d is not None:\n"
	"        s += \"=\" + ast.unparse(d)\n"
	"    return s\n"
	"a = f.args\n"
	"pos = a.posonlyargs + a.args\n"
	"pdef = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)\n"
	"parts, props, req = [], {}, []\n"
	"def add(p, d):\n"
	"    t = typ(p.annotation)\n"
	"    pr = {\"type\": t} if t else {}\n"
	"    if d is None:\n"
	"        req.append(p.arg)\n"
	"    else:\n"
	"        try:\n"
	"            v = ast.literal_eval(d)\n"
	"            json.dumps(v)\n"
	"            pr[\"default\"] = v\n"
	"        except Exception:\n"
	"            pass\n"
	"    props[p.arg] = pr\n"
	"for i, p in enumerate(pos):\n"
	"    parts.append(one(p, pdef[i]))\n"
	"    add(p, pdef[i])\n"
	"    if a.posonlyargs and i == len(a.posonlyargs) - 1:\n"
	"        parts.append(\"/\")\n"
	"if a.vararg:\n"
	"    parts.append(\"*\" + one(a.vararg, None))\n"
	"elif a.kwonlyargs:\n"
	"    parts.append(\"*\")\n"
	"for p, d in zip(a.kwonlyargs, a.kw_defaults):\n"
	"    parts.append(one(p, d))\n"
	"    add(p, d)\n"
	"if a.kwarg:\n"
	"    parts.append(\"**\" + one(a.kwarg, None))\n"
	"sig = \"(\" + \", \".join(parts) + \")\"\n"
	"if f.returns is not None:\n"
	"    sig += \" -> \" + ast.unparse(f.returns)\n"
	"doc = ast.get_docstring(f) or \"\"\n"
	"para = doc.strip().split(\"\\n\\n\")[0] if doc.strip() else \"\"\n"
	"desc = \" \".join(l.strip() for l in para.splitlines() if l.strip())\n"
	"inputs = {\"type\": \"object\", \"properties\": props, \"required\": req}\n"
	"rt = typ(f.returns)\n"
	"outputs = {\"type\": rt} if rt else None\n"
	"out({\"entry\": f.name, \"line\": f.lineno, \"signature\": sig, \"description\": desc,\n"
	"     \"inputs\": inputs, \"outputs\": outputs})\n";

/* A string member, "" when there is none. */
static const char *js_or(const cJSON *o, const char *key)
{
	const char *s = json_str(o, key);
	return s ? s : "";
}

static bool blank(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	return !*s;
}

/* ---- add: the file read by python3's ast ---- */

/* Write all of p[0..n) to fd; a reader gone early is no error here (its
 * output says why). */
static void write_quietly(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* Run the analysis on src[0..len) (named file) with python; its JSON
 * object, or NULL with err. */
static cJSON *analyse(const char *python, const char *file, const char *src, size_t len,
		      const char *entry, struct rlm_err *err)
{
	int in[2], out[2], status = 0;
	struct buf b;
	pid_t pid;
	int64_t deadline = time_now_ns() + (int64_t)ANALYSE_TIMEOUT_MS * 1000000;
	bool timed_out = false;
	cJSON *j = NULL;
	char chunk[8192];
	if (pipe2(in, O_CLOEXEC) < 0)
		return rlm_err_set(err, -errno, "cannot run python3: %s", strerror(errno)), NULL;
	if (pipe2(out, O_CLOEXEC) < 0) {
		close(in[0]);
		close(in[1]);
		return rlm_err_set(err, -errno, "cannot run python3: %s", strerror(errno)), NULL;
	}
	pid = fork();
	if (pid < 0) {
		rlm_err_set(err, -errno, "cannot run python3: %s", strerror(errno));
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		return NULL;
	}
	if (pid == 0) {
		const char *argv[] = {
		    python, "-I", "-S", "-B", "-c", analyse_py, file, entry ? entry : "", NULL};
		char msg[512];
		int n;
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(out[1], 2);
		execv(python, (char *const *)(uintptr_t)argv);
		n = snprintf(msg, sizeof(msg), "{\"run_error\": \"cannot run '%s': %s\"}", python,
			     strerror(errno));
		write_quietly(1, msg, (size_t)n);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	write_quietly(in[1], src, len);
	close(in[1]);
	buf_init(&b, ANALYSE_OUT_MAX);
	for (;;) {
		struct pollfd pf = {out[0], POLLIN, 0};
		int64_t left = (deadline - time_now_ns()) / 1000000;
		ssize_t n;
		if (left <= 0) {
			timed_out = true;
			break;
		}
		if (poll(&pf, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		n = read(out[0], chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || buf_append(&b, chunk, (size_t)n))
			break;
	}
	close(out[0]);
	if (timed_out)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (timed_out)
		rlm_err_set(err, RLM_ETIMEOUT, "python3 took more than %d s to parse '%s'",
			    ANALYSE_TIMEOUT_MS / 1000, file);
	else if (!(j = json_parse(b.p ? b.p : "", b.len)) || !cJSON_IsObject(j)) {
		/* A traceback, or nothing: its last line says most. */
		const char *t = b.p ? b.p : "";
		size_t n = b.len;
		while (n && (t[n - 1] == '\n' || t[n - 1] == ' '))
			n--;
		size_t st = n;
		while (st && t[st - 1] != '\n')
			st--;
		rlm_err_set(err, RLM_EINVAL, "python3 could not parse '%s' (exit status %d): %.*s",
			    file, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
			    (int)RLM_MIN(n - st, 300), t + st);
		cJSON_Delete(j);
		j = NULL;
	}
	buf_release(&b);
	return j;
}

int cli__skills_add(const struct cli_skills_args *a, const char *file)
{
	struct rlm_err err = {0, ""};
	struct store_skill k = {0};
	struct store *s = NULL;
	char *src = NULL, *inputs = NULL, *outputs = NULL, *desc = NULL, digest[65];
	const char *why;
	size_t len = 0;
	cJSON *an = NULL;
	int rc, version = 0;
	bool unchanged = false;
	if ((rc = file_read(file, STORE_SKILL_SOURCE_MAX, &src, &len, &err)))
		return log_fail(rc == RLM_ETOOBIG ? 2 : 1, "%s", err.msg);
	an = analyse(a->python ? a->python : "/usr/bin/python3", file, src, len, a->entry, &err);
	if (!an) {
		rc = log_fail(1, "%s", err.msg);
		goto out;
	}
	if ((why = json_str(an, "run_error"))) {
		rc = log_fail(1, "%s (--python PATH names another interpreter)", why);
		goto out;
	}
	if ((why = json_str(an, "error"))) {
		rc = log_fail(1, "'%s' %s", file, why);
		goto out;
	}
	k.name = (char *)(uintptr_t)(a->name ? a->name : json_str(an, "entry"));
	k.entry = (char *)(uintptr_t)json_str(an, "entry");
	k.source = src;
	k.signature = (char *)(uintptr_t)json_str(an, "signature");
	desc = xstrdup(a->description ? a->description : js_or(an, "description"));
	k.description = desc;
	inputs = json_print(json_get(an, "inputs"));
	k.inputs_json = inputs;
	if (cJSON_IsObject(json_get(an, "outputs")))
		outputs = json_print(json_get(an, "outputs"));
	k.outputs_json = outputs;
	if (blank(desc)) {
		rc = log_fail(2,
			      "'%s': function '%s' has no docstring: pass --description TEXT "
			      "(what the skill does: list and search_skills show it)",
			      file, k.entry ? k.entry : "?");
		goto out;
	}
	if (strlen(src) != len) {
		rc = log_fail(1, "'%s' holds a NUL byte: not Python source", file);
		goto out;
	}
	/* The checks of the store, before it is opened (and created). */
	if ((rc = store_skill_digest(&k, digest, &err))) {
		rc = log_fail(2, "%s", err.msg);
		goto out;
	}
	if ((rc = cli__store_open(a->cache, false, &s)))
		goto out;
	if ((rc = store_skill_put(s, &k, &version, &unchanged, &err))) {
		rc = log_fail(1, "%s", err.msg);
		goto out;
	}
	if (a->json) {
		cJSON *o = cJSON_CreateObject();
		char *t;
		json_add_str(o, "name", k.name);
		json_add_num(o, "version", version);
		json_add_str(o, "digest", digest);
		json_add_bool(o, "unchanged", unchanged);
		json_add_str(o, "entry", k.entry);
		json_add_str(o, "signature", k.signature);
		t = json_print(o);
		cli_term_printf(stdout, "%s\n", t);
		free(t);
		cJSON_Delete(o);
	} else if (unchanged) {
		cli_term_printf(
		    stdout, "%s@%d unchanged: '%s' holds the same content as its latest version\n",
		    k.name, version, file);
	} else {
		cli_term_printf(stdout, "added %s@%d from '%s': %s%s (digest %.12s)\n", k.name,
				version, file, k.entry, k.signature, digest);
	}
out:
	store_close(s);
	cJSON_Delete(an);
	free(src);
	free(inputs);
	free(outputs);
	free(desc);
	return rc;
}
