/* SPDX-License-Identifier: MIT */
/* cli/cli_chat.c -- `rlm chat` (and `rlm solve --session`): question after
 * question over one context on one session, whose REPL keeps what the
 * model built for the questions before. */
#include "cli.h"
#include "cliopt.h"
#include "cli_int.h"
#include "../rlm/rlm.h"
#include "../common/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
	"usage: rlm chat --context PATH [options]\n"
	"\n"
	"Ask a context question after question on one session: one REPL worker and one\n"
	"conversation of the root model last from the first question to the last, so an\n"
	"index or a parsed table the model built for one question is there for the next.\n"
	"The model sees the variables the REPL holds with each new question, and\n"
	"`history` in the REPL lists the questions asked and their answers. Each\n"
	"question is a solve of its own (its limits, its run in the store; never\n"
	"answered from the memo, since the session's state shapes it). `rlm solve\n"
	"--session` is the same command.\n"
	"\n"
	"At a terminal: a prompt on stderr, the progress line while a question runs,\n"
	"Ctrl-C stops the running question (a second one, or one at the prompt,\n"
	"quits), Ctrl-D or /quit ends. These commands are understood:\n"
	"  /vars                the REPL's variables and their types\n"
	"  /history             the questions asked so far and their answers\n"
	"  /context PATH        add a context: the model sees it as context_1, context_2,\n"
	"                       ... (documents_1, ... name their documents)\n"
	"  /reset               forget the conversation and the history, end the worker\n"
	"  /help, /quit\n"
	"From a pipe or a file: one question per line (blank lines skipped; a line that is\n"
	"exactly one of the commands above runs it), the answers on stdout one after\n"
	"another (with --json, one JSON object per line).\n"
	"\n"
	"  -c, --context PATH      the session's context (`context`), as rlm solve takes it\n"
	"  -q, --question TEXT     a first question, asked before stdin is read\n"
	"      --json              a JSON object per question, each on one line\n"
	"      --quiet, --progress, -v, --raw-output, --cache, --no-cache, --refresh, and\n"
	"                          every model, limit and sandbox option of rlm solve\n"
	"                          (rlm solve --help): the limits hold per question\n"
	"  -h, --help              this help\n"
	"\n"
	"Exit status: 0 every question answered, 1 one failed (the session goes on), 2\n"
	"bad usage, 3 a limit stopped one, 130 interrupted from a pipe.\n"
	"\n"
	"Examples:\n"
	"  rlm chat -c reports/\n"
	"  printf 'Which file defines EPOLLEXCLUSIVE?\\nAnd its value?\\n' | rlm chat -c /usr/include\n";

int cli_chat(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	return cli__solve_main(argc, argv, true);
}

static void print_history(struct rlm_session *s)
{
	cJSON *h = rlm_session_history_json(s), *e;
	int i = 0;
	if (!cJSON_GetArraySize(h))
		fputs("(no question yet)\n", stderr);
	cJSON_ArrayForEach(e, h)
	{
		const char *a = json_str(e, "answer"), *stop = json_str(e, "stop");
		cli_term_printf(stderr, "%d. %s\n   -> %s%s%s%s\n", ++i, json_str(e, "question"),
				a ? a : "(no answer)", stop && strcmp(stop, "answer") ? " (" : "",
				stop && strcmp(stop, "answer") ? stop : "",
				stop && strcmp(stop, "answer") ? ")" : "");
	}
	cJSON_Delete(h);
}

/* A line that is one of the commands: run it and return true; *quit
 * when it ends the chat. Unknown "/..." lines are commands at a
 * terminal only (an error there), questions from a pipe. */
static bool command(struct rlm_session *s, struct solve_args *a, const char *line, bool tty,
		    bool *quit, struct corpus ***added, size_t *n_added)
{
	struct rlm_err err = {0, ""};
	if (line[0] != '/')
		return false;
	if (!strcmp(line, "/quit") || !strcmp(line, "/exit")) {
		*quit = true;
	} else if (!strcmp(line, "/help")) {
		fputs("/vars, /history, /context PATH, /reset, /quit; anything else is a "
		      "question\n",
		      stderr);
	} else if (!strcmp(line, "/vars")) {
		char *v = rlm_session_vars(s, &err);
		if (!v)
			fprintf(stderr, "rlm: error: %s\n", err.msg);
		else
			cli_term_printf(stderr, "%s\n", *v ? v : "(no variables yet)");
		free(v);
	} else if (!strcmp(line, "/history")) {
		print_history(s);
	} else if (!strcmp(line, "/reset")) {
		rlm_session_reset(s);
		fputs("rlm: the session starts afresh (its contexts stay)\n", stderr);
	} else if (!strncmp(line, "/context ", 9)) {
		struct corpus *c = NULL;
		int n = 0;
		if (corpus_load(line + 9, &a->co, &c, &err) ||
		    rlm_session_add_context(s, c, &n, &err)) {
			fprintf(stderr, "rlm: error: %s\n", err.msg);
			corpus_free(c);
		} else {
			*added = xrealloc(*added, (*n_added + 1) * sizeof(**added));
			(*added)[(*n_added)++] = c;
			cli_term_printf(stderr, "rlm: %s is context_%d\n", line + 9, n);
		}
	} else if (tty) {
		fprintf(stderr, "rlm: unknown command %s (/help lists them)\n", line);
	} else {
		return false;
	}
	return true;
}

/* Keep the worst status: 130 over 1 over 3 over 0. */
static int worse(int a, int b)
{
	static const int rank[] = {0, 3, 1, 130};
	int ra = 0, rb = 0;
	for (int i = 0; i < 4; i++) {
		if (rank[i] == a)
			ra = i;
		if (rank[i] == b)
			rb = i;
	}
	return rb > ra ? b : a;
}

int cli__chat(struct solve_args *a, const struct rlm_models *ms, const struct corpus *corpus)
{
	struct rlm_session *s = NULL;
	struct rlm_err err = {0, ""};
	struct corpus **added = NULL;
	size_t n_added = 0, cap = 0;
	char *line = NULL;
	const char *first = a->question;
	bool tty = isatty(STDIN_FILENO) && isatty(STDERR_FILENO), quit = false;
	int status = 0;

	a->ro.pool = ms->pool;
	a->ro.model = ms->model;
	a->ro.sub_model = ms->sub;
	a->ro.params = ms->params;
	if (rlm_session_new(&a->ro, corpus, &s, &err)) {
		fprintf(stderr, "rlm: error: %s\n", err.msg);
		return 1;
	}
	if (tty && !a->mo.quiet)
		fputs("rlm: a session over the context: ask a question (/help for commands, Ctrl-D "
		      "to end)\n",
		      stderr);
	while (!quit) {
		ssize_t n;
		int st;
		if (first) {
			a->question = first;
			first = NULL;
		} else {
			if (tty)
				fputs("rlm> ", stderr);
			if ((n = getline(&line, &cap, stdin)) < 0)
				break;
			while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
				line[--n] = '\0';
			if (text_is_blank(line, (size_t)n) ||
			    command(s, a, line, tty, &quit, &added, &n_added))
				continue;
			if (!text_utf8_valid(line, (size_t)n, NULL)) {
				fputs("rlm: error: the question is not valid UTF-8\n", stderr);
				status = worse(status, 1);
				continue;
			}
			a->question = line;
		}
		a->ro.cancel = NULL; /* each question catches Ctrl-C afresh */
		st = cli__solve_print(a, ms, corpus, s, time_now_ns(), 0);
		fflush(stdout);
		if (st == 130 && !tty) {
			status = 130;
			break;
		}
		status = worse(status, st == 130 ? 0 : st);
	}
	if (tty && !a->mo.quiet)
		fputc('\n', stderr);
	rlm_session_free(s);
	for (size_t i = 0; i < n_added; i++)
		corpus_free(added[i]);
	free(added);
	free(line);
	return status;
}
