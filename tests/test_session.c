/* SPDX-License-Identifier: MIT */
/* tests/test_session.c -- sessions (rlm_session_*): one REPL worker and
 * one conversation across questions, with the root model scripted on a
 * fake server (its recorded requests show what the model was told) and
 * real sandboxed workers, looked at in /proc. */
#include "loopenv.h"
#include "proc.h"
#include "../store/store.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool pid_alive(pid_t pid)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return pid > 0 && stat(path, &st) == 0;
}

static struct rlm_session *open_session(struct env *v)
{
	struct rlm_session *s = NULL;
	CHECK_MSG(rlm_session_new(&v->o, v->ctx, &s, &v->err) == 0, "%s", v->err.msg);
	return s;
}

static int ask(struct env *v, struct rlm_session *s, const char *q)
{
	rlm_result_release(&v->r);
	return rlm_session_solve(s, NULL, q, &v->r, &v->err);
}

TEST(second_question_reuses_the_variables_of_the_first)
{
	struct env v;
	struct rlm_session *s;
	struct rlm_session_info in;
	char *m;
	const char *role;
	cJSON *h;
	env_init(&v, SUB_SIM);
	s = open_session(&v);
	rlm_session_info(s, &in);
	CHECK_INT(in.questions, 0);
	CHECK_INT(in.pid, 0); /* the worker starts with the first question */
	says(&v, "I will index it.\n```repl\nidx = {w: i for i, w in enumerate(context.split())}\n"
		 "answer['content'] = str(len(idx))\nanswer['ready'] = True\n```");
	CHECK_MSG(ask(&v, s, "How many words?") == 0, "%s", v.err.msg);
	CHECK_STR(v.r.answer, "3");
	CHECK_INT(v.r.stop, RLM_STOP_ANSWER);
	m = message(v.root_srv, 0, 1, NULL);
	CHECK_CONTAINS(m, "first question of a session");
	free(m);
	rlm_session_info(s, &in);
	CHECK_INT(in.questions, 1);
	CHECK(in.pid > 0 && pid_alive(in.pid));

	/* The second question: the same worker, the conversation goes on. */
	says(&v, "```repl\nanswer['content'] = '%d %d %s' % (idx['gamma'], len(history), "
		 "history[0]['answer'])\nanswer['ready'] = True\n```");
	CHECK_MSG(ask(&v, s, "Where is gamma?") == 0, "%s", v.err.msg);
	CHECK_STR(v.r.answer, "2 1 3");
	CHECK_INT(fakesrv_count(v.root_srv), 2);
	/* system, first user, the first answer's reply, the new question */
	CHECK_INT(n_messages(v.root_srv, 1), 4);
	m = message(v.root_srv, 1, 2, &role);
	CHECK_STR(role, "assistant");
	CHECK_CONTAINS(m, "I will index it.");
	free(m);
	m = message(v.root_srv, 1, 3, &role);
	CHECK_STR(role, "user");
	CHECK_CONTAINS(m, "New question (question 2 of this session): Where is gamma?");
	CHECK_CONTAINS(m, "idx: dict");
	CHECK_CONTAINS(m, "history: list");
	free(m);
	{
		struct rlm_session_info in2;
		rlm_session_info(s, &in2);
		CHECK_INT(in2.pid, in.pid);
		CHECK_INT(in2.questions, 2);
		CHECK(in2.rss_bytes > 1 << 20);
		CHECK(in2.conversation_bytes > 0);
	}
	h = rlm_session_history_json(s);
	CHECK_INT(cJSON_GetArraySize(h), 2);
	CHECK_STR(json_str(cJSON_GetArrayItem(h, 1), "answer"), "2 1 3");
	CHECK_STR(json_str(cJSON_GetArrayItem(h, 0), "stop"), "answer");
	cJSON_Delete(h);
	m = rlm_session_vars(s, &v.err);
	CHECK_CONTAINS(m, "idx: dict");
	free(m);

	/* Ending the session ends its worker. */
	rlm_session_free(s);
	CHECK(!pid_alive(in.pid));
	env_free(&v);
}

TEST(an_answer_does_not_leak_into_the_next_question)
{
	struct env v;
	struct rlm_session *s;
	env_init(&v, SUB_SIM);
	s = open_session(&v);
	says(&v, "```repl\nanswer['content'] = 'first'\nanswer['ready'] = True\n```");
	CHECK_INT(ask(&v, s, "One?"), 0);
	CHECK_STR(v.r.answer, "first");
	/* The next question's first turn only prints: not an answer. */
	says(&v, "```repl\nprint(answer['ready'], repr(answer['content']))\n```");
	says(&v, "```repl\nanswer['content'] = 'second'\nanswer['ready'] = True\n```");
	CHECK_INT(ask(&v, s, "Two?"), 0);
	CHECK_STR(v.r.answer, "second");
	CHECK_INT(v.r.iterations, 2);
	CHECK_MSG_HAS(&v, 2, -1, "False ''");
	rlm_session_free(s);
	env_free(&v);
}

TEST(added_contexts_are_context_1_with_their_documents)
{
	struct env v;
	struct rlm_session *s;
	struct corpus *c1 = NULL;
	const char jl[] = "{\"id\":\"rfc-1\",\"text\":\"one \\u00e9\"}\n{\"id\":\"rfc-2\",\"text\":\"two\"}\n";
	int n = 0;
	env_init(&v, SUB_SIM);
	s = open_session(&v);
	CHECK_INT(corpus_from_jsonl_buf("more.jsonl", jl, sizeof(jl) - 1, &c1, &v.err), 0);
	CHECK_INT(rlm_session_add_context(s, c1, &n, &v.err), 0);
	CHECK_INT(n, 1);
	says(&v, "```repl\nanswer['content'] = '%s|%s|%s' % (context_1[0], documents_1[1]['id'], "
		 "context.strip())\nanswer['ready'] = True\n```");
	CHECK_MSG(ask(&v, s, "What is in context_1?") == 0, "%s", v.err.msg);
	CHECK_STR(v.r.answer, "one \xc3\xa9|rfc-2|alpha beta gamma");
	/* The first message names it. */
	CHECK_MSG_HAS(&v, 0, 1, "`context_1` is a list of 2 documents");
	rlm_session_free(s);
	corpus_free(c1);
	env_free(&v);
}

/* Has pid exited: gone, or a zombie (its pipes closed)? Waits 5 s at most. */
static bool wait_exited(pid_t pid)
{
	for (int64_t end = time_now_ns() + 5000000000LL; time_now_ns() < end;) {
		char path[64], buf[256], *p;
		FILE *f;
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		if (!(f = fopen(path, "r")))
			return true;
		p = fgets(buf, sizeof(buf), f);
		fclose(f);
		/* "pid (comm) S ...": the state follows the last ')' */
		if (!p || !(p = strrchr(buf, ')')) || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
			return true;
		time_sleep_ns(5000000);
	}
	return false;
}

/* The worker is killed between two questions: the second question's
 * message says its variables are gone, whether the controller finds it
 * dead before it speaks to it (dead: the kill waited for) or on the way
 * (the kill just sent: the set of `history` meets the death). Under TSan
 * the first happened by itself, and the model was told the variables
 * were still there. */
static void died_between_questions(bool dead)
{
	struct env v;
	struct rlm_session *s;
	struct rlm_session_info in;
	env_init(&v, SUB_SIM);
	s = open_session(&v);
	says(&v, "```repl\nx = 41\nanswer['content'] = 'set'\nanswer['ready'] = True\n```");
	CHECK_INT(ask(&v, s, "Set x?"), 0);
	rlm_session_info(s, &in);
	CHECK(in.pid > 0);
	CHECK_INT(kill(in.pid, SIGKILL), 0);
	if (dead)
		CHECK_MSG(wait_exited(in.pid), "worker %d still runs 5 s after SIGKILL", (int)in.pid);
	says(&v, "```repl\nanswer['content'] = '%s %d' % ('x' in globals(), len(history))\n"
		 "answer['ready'] = True\n```");
	CHECK_MSG(ask(&v, s, "Is x there?") == 0, "%s", v.err.msg);
	/* The variables are gone, the history is back. */
	CHECK_STR(v.r.answer, "False 1");
	CHECK_MSG_HAS(&v, 1, -1, "the variables of earlier questions are gone");
	{
		struct rlm_session_info in2;
		rlm_session_info(s, &in2);
		CHECK_INT(in2.restarts, 1);
		CHECK(in2.pid > 0 && in2.pid != in.pid);
	}
	rlm_session_free(s);
	env_free(&v);
}

TEST(a_worker_that_died_between_questions_is_restarted_and_the_model_told)
{
	died_between_questions(false);
}

TEST(a_worker_found_dead_at_the_next_question_is_restarted_and_the_model_told)
{
	died_between_questions(true);
}

TEST(a_question_that_hit_a_limit_keeps_the_roles_alternating)
{
	struct env v;
	struct rlm_session *s;
	const char *role;
	char *m;
	env_init(&v, SUB_SIM);
	v.o.max_iterations = 1;
	s = open_session(&v);
	says(&v, "```repl\nprint('looking')\n```");
	says(&v, "Nothing more.");
	CHECK_INT(ask(&v, s, "First?"), 0);
	CHECK_INT(v.r.stop, RLM_STOP_ITERATIONS);
	says(&v, "```repl\nanswer['content'] = 'ok'\nanswer['ready'] = True\n```");
	CHECK_INT(ask(&v, s, "Second?"), 0);
	CHECK_STR(v.r.answer, "ok");
	for (int k = 1; k < n_messages(v.root_srv, 2); k++) {
		const char *want = k % 2 ? "user" : "assistant";
		m = message(v.root_srv, 2, k, &role);
		CHECK_MSG(strcmp(role, want) == 0, "message %d is %s", k, role);
		free(m);
	}
	rlm_session_free(s);
	env_free(&v);
}

TEST(reset_forgets_and_ends_the_worker)
{
	struct env v;
	struct rlm_session *s;
	struct rlm_session_info in;
	env_init(&v, SUB_SIM);
	s = open_session(&v);
	says(&v, "```repl\ny = 1\nanswer['content'] = 'a'\nanswer['ready'] = True\n```");
	CHECK_INT(ask(&v, s, "A?"), 0);
	rlm_session_info(s, &in);
	rlm_session_reset(s);
	CHECK(!pid_alive(in.pid));
	says(&v, "```repl\nanswer['content'] = '%s %d' % ('y' in globals(), len(history))\n"
		 "answer['ready'] = True\n```");
	CHECK_INT(ask(&v, s, "B?"), 0);
	CHECK_STR(v.r.answer, "False 0");
	CHECK_INT(n_messages(v.root_srv, 1), 2); /* a fresh conversation */
	rlm_session_free(s);
	env_free(&v);
}

TEST(a_session_question_is_not_answered_from_the_memo)
{
	struct env v;
	struct rlm_session *s;
	struct store *st = NULL;
	char dir[] = "/tmp/rlm-test-session-XXXXXX", path[96];
	CHECK(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/store.db", dir);
	env_init(&v, SUB_SIM);
	{
		struct store_cfg sc = {.path = path};
		CHECK_MSG(store_open(&sc, &st, &v.err) == 0, "%s", v.err.msg);
	}
	v.o.store = st;
	says(&v, "```repl\nanswer['content'] = 'plain'\nanswer['ready'] = True\n```");
	CHECK_INT(solve(&v, "Q?"), 0);
	CHECK_STR(v.r.answer, "plain");
	/* The same question without a session: the memo answers. */
	CHECK_INT(solve(&v, "Q?"), 0);
	CHECK(v.r.memo);
	s = open_session(&v);
	says(&v, "```repl\nz = 3\nanswer['content'] = 'in session'\nanswer['ready'] = True\n```");
	CHECK_INT(ask(&v, s, "Q?"), 0);
	CHECK(!v.r.memo);
	CHECK_STR(v.r.answer, "in session");
	CHECK(v.r.run_id[0]); /* recorded as a run of its own */
	rlm_session_free(s);
	rlm_result_release(&v.r);
	v.o.store = NULL;
	store_close(st);
	env_free(&v);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	CHECK_INT(system(path), 0);
}

TEST(the_tree_strategy_has_no_sessions)
{
	struct env v;
	struct rlm_session *s = NULL;
	env_init(&v, SUB_SIM);
	v.o.strategy = RLM_TREE;
	CHECK_INT(rlm_session_new(&v.o, v.ctx, &s, &v.err), RLM_EINVAL);
	CHECK(!s);
	CHECK_CONTAINS(v.err.msg, "repl strategy");
	env_free(&v);
}

/* ---- rlm chat: the real binary, the simulator ---- */

TEST(chat_answers_a_line_each_from_a_pipe)
{
	char path[] = "/tmp/rlm-test-chat-XXXXXX";
	int fd = mkstemp(path);
	const char text[] = "Notes of the week.\nThe vault code is 5521.\nLunch is at noon.\n";
	struct proc_out o;
	char *line2;
	cJSON *j;
	CHECK(fd >= 0);
	CHECK_INT(write(fd, text, sizeof(text) - 1), (int)sizeof(text) - 1);
	close(fd);
	{
		const char *args[] = {"chat", "-c", path, "--no-cache", "--json", "--quiet", NULL};
		o = proc_rlm(args, NULL, 120);
	}
	/* no input: nothing asked, a clean end */
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	CHECK_STR(o.out, "");
	proc_out_release(&o);
	{
		const char *argv[] = {harness_rlm_bin(), "chat", "-c", path, "--no-cache", "--json",
				      "--quiet", NULL};
		CHECK_INT(proc_run(argv,
				   "What is the vault code?\n\n/vars\n/history\n"
				   "When is lunch?\n/nonsense is a question from a pipe\n",
				   NULL, 120, &o),
			  0);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	/* three questions, three JSON lines */
	line2 = strchr(o.out, '\n');
	CHECK(line2 != NULL);
	j = json_parse(o.out, (size_t)(line2 - o.out));
	CHECK_MSG(j, "not JSON: %s", o.out);
	CHECK_CONTAINS(json_str(j, "answer"), "5521");
	cJSON_Delete(j);
	CHECK_INT((int)(strchr(line2 + 1, '\n') != NULL), 1);
	{
		int lines = 0;
		for (const char *p = o.out; *p; p++)
			lines += *p == '\n';
		CHECK_INT(lines, 3);
	}
	/* the commands answered on stderr */
	CHECK_CONTAINS(o.err, "history: list");
	CHECK_CONTAINS(o.err, "1. What is the vault code?");
	proc_out_release(&o);
	{
		const char *args[] = {"chat", "--no-cache", NULL};
		o = proc_rlm(args, NULL, 30);
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "no context");
	proc_out_release(&o);
	{
		const char *args[] = {"chat", "-c", path, "-s", "tree", "--no-cache", NULL};
		o = proc_rlm(args, NULL, 30);
	}
	CHECK_INT(o.status, 2);
	CHECK_CONTAINS(o.err, "repl strategy");
	proc_out_release(&o);
	{
		const char *args[] = {"chat", "--help", NULL};
		o = proc_rlm(args, NULL, 30);
	}
	CHECK_INT(o.status, 0);
	CHECK_CONTAINS(o.out, "/history");
	proc_out_release(&o);
	unlink(path);
}

/* ---- the simulator as the root of a session ---- */

TEST(chat_on_the_simulator_builds_an_index_once_and_reuses_it)
{
	/* About 4 MB of real headers (a 1M-token context) with two notes in
	 * phrasings of their own: the first question's code builds `index`,
	 * the second's looks its key up in it and builds nothing. */
	static const char gen[] =
	    "import glob, sys\n"
	    "parts, n = [], 0\n"
	    "for f in sorted(glob.glob('/usr/include/**/*.h', recursive=True)):\n"
	    "    if n > 4000000:\n"
	    "        break\n"
	    "    with open(f, encoding='utf-8', errors='replace') as h:\n"
	    "        parts.append(h.read())\n"
	    "    n += len(parts[-1])\n"
	    "parts.insert(len(parts) // 3, '/* Ops note (2019): the vault labelled zebra-7731 now "
	    "opens with 55-ALPHA; older runbooks are stale. */')\n"
	    "parts.insert(2 * len(parts) // 3, '# Backup tapes for project QX-4471 are kept in "
	    "locker 19, second floor.')\n"
	    "with open(sys.argv[1], 'w') as out:\n"
	    "    out.write('\\n'.join(parts))\n";
	char path[] = "/tmp/rlm-test-chat-index-XXXXXX";
	int fd = mkstemp(path);
	struct proc_out o;
	cJSON *q[2] = {NULL, NULL};
	const char *at;
	CHECK(fd >= 0);
	close(fd);
	{
		const char *argv[] = {"/usr/bin/python3", "-I", "-", path, NULL};
		CHECK_INT(proc_run(argv, gen, NULL, 60, &o), 0);
		CHECK_MSG(o.status == 0, "%s", o.err);
		proc_out_release(&o);
	}
	{
		const char *argv[] = {harness_rlm_bin(), "chat", "-c", path, "--no-cache", "--json",
				      "--quiet", NULL};
		CHECK_INT(proc_run(argv,
				   "What is the access code of the zebra-7731 vault?\n"
				   "Where are the backup tapes of project QX-4471 kept?\n",
				   NULL, 120, &o),
			  0);
	}
	CHECK_MSG(o.status == 0, "exit %d: %s", o.status, o.err);
	at = o.out;
	for (int i = 0; i < 2; i++) {
		const char *nl = strchr(at, '\n');
		CHECK_MSG(nl, "not two lines: %s", o.out);
		q[i] = json_parse(at, (size_t)(nl - at));
		CHECK_MSG(q[i], "not JSON: %.300s", at);
		at = nl + 1;
	}
	CHECK_CONTAINS(json_str(q[0], "answer"), "55-ALPHA");
	CHECK_CONTAINS(json_str(q[1], "answer"), "locker 19");
	for (int i = 0; i < 2; i++) {
		cJSON *turns = json_get(q[i], "turns"), *t;
		bool built = false, looked_up = false;
		CHECK_INT(cJSON_GetArraySize(turns), i ? 2 : 3); /* the second skips step 1 */
		cJSON_ArrayForEach(t, turns)
		{
			cJSON *b;
			cJSON_ArrayForEach(b, json_get(t, "blocks"))
			{
				const char *code = json_str(b, "code"), *out = json_str(b, "output");
				built = built || strstr(code, "index = {}") ||
					strstr(code, "index.setdefault") || strstr(out, " entries\n");
				looked_up = looked_up || (strstr(code, "lookup(term, ") &&
							  strstr(out, i ? "index 'QX-4471': 1 hits"
									: "index 'zebra-7731': 1 hits"));
				CHECK(!strstr(code, "search("));
			}
		}
		CHECK_MSG(built == (i == 0), "question %d: built %d", i + 1, built);
		CHECK(looked_up);
	}
	/* the index costs the first question, not the second */
	CHECK(json_num(json_get(q[1], "timings"), "exec_ms", 1e9) <
	      json_num(json_get(q[0], "timings"), "exec_ms", 0));
	cJSON_Delete(q[0]);
	cJSON_Delete(q[1]);
	proc_out_release(&o);
	unlink(path);
}

/* Each question has its own answer schema: the worker's is set per
 * question, and a later question's message shows its own, or says the
 * first one's (in the system prompt) does not hold. */
TEST(each_question_has_its_own_schema)
{
	struct env v;
	struct rlm_session *s;
	struct rlm_opts o;
	static const char schema[] = "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":"
				     "\"integer\"}},\"required\":[\"n\"]}";
	if (access("/usr/lib/python3/dist-packages/jsonschema/__init__.py", R_OK) != 0)
		SKIP("python3-jsonschema is not installed (scripts/deps.sh installs it)");
	env_init(&v, SUB_SIM);
	o = v.o;
	o.schema_json = schema;
	s = open_session(&v);
	says(&v, "```repl\nanswer['content'] = {'n': 3}\nanswer['ready'] = True\n```");
	rlm_result_release(&v.r);
	CHECK_MSG(rlm_session_solve(s, &o, "How many?", &v.r, &v.err) == 0, "%s", v.err.msg);
	CHECK(v.r.answer_json);
	CHECK_STR(v.r.answer, "{\"n\":3}");
	CHECK_MSG_HAS(&v, 0, 0, "Structured answer:");
	/* no schema now: text is fine, and the model is told */
	says(&v, "```repl\nanswer['content'] = 'three, as before'\nanswer['ready'] = True\n```");
	CHECK_INT(ask(&v, s, "Say it in words?"), 0);
	CHECK(!v.r.answer_json);
	CHECK_STR(v.r.answer, "three, as before");
	CHECK_MSG_HAS(&v, 1, -1, "answer is plain text");
	/* the schema again: a text answer is refused, the model told why */
	says(&v, "```repl\nanswer['content'] = 'four'\nanswer['ready'] = True\n```");
	says(&v, "```repl\nanswer['content'] = {'n': 4}\nanswer['ready'] = True\n```");
	rlm_result_release(&v.r);
	CHECK_MSG(rlm_session_solve(s, &o, "And now?", &v.r, &v.err) == 0, "%s", v.err.msg);
	CHECK(v.r.answer_json);
	CHECK_STR(v.r.answer, "{\"n\":4}");
	CHECK_MSG_HAS(&v, 2, -1, "Structured answer:");
	CHECK_MSG_HAS(&v, 3, -1, "not valid under the answer schema");
	/* a bad schema is refused before the session is touched */
	o.schema_json = "{\"type\": 12}";
	rlm_result_release(&v.r);
	CHECK_INT(rlm_session_solve(s, &o, "Bad?", &v.r, &v.err), RLM_EINVAL);
	CHECK_INT(fakesrv_count(v.root_srv), 4);
	{
		struct rlm_session_info in;
		rlm_session_info(s, &in);
		CHECK_INT(in.questions, 3);
	}
	rlm_session_free(s);
	env_free(&v);
}
