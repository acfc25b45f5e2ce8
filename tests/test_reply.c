/* SPDX-License-Identifier: MIT */
/* tests/test_reply.c -- reading root replies: ```repl blocks, other
 * fences, unterminated blocks, FINAL / FINAL_VAR outside fences. */
#include "harness.h"
#include "../rlm/reply.h"
#include "../common/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rcase {
	const char *name;
	const char *text;
	bool python;
	const char *blocks[4];   /* expected code of each block, in order */
	int n_blocks;
	int open_last;           /* 1: the last block is unterminated */
	int other;               /* other_fences */
	enum reply_final final;
	const char *final_text;  /* FINAL's answer or FINAL_VAR's name */
};

static const struct rcase cases[] = {
	{"plain", "Let me look.\n```repl\nprint(len(context))\n```\nDone.", false,
	 {"print(len(context))\n"}, 1, 0, 0, REPLY_NO_FINAL, NULL},
	{"two blocks in order", "```repl\na = 1\n```\ntext\n```repl\nprint(a)\n```\n", false,
	 {"a = 1\n", "print(a)\n"}, 2, 0, 0, REPLY_NO_FINAL, NULL},
	{"empty reply", "", false, {NULL}, 0, 0, 0, REPLY_NO_FINAL, NULL},
	{"no code", "I think the answer is in the middle.", false, {NULL}, 0, 0, 0,
	 REPLY_NO_FINAL, NULL},
	{"python skipped when off", "```python\nprint(1)\n```\n", false, {NULL}, 0, 0, 1,
	 REPLY_NO_FINAL, NULL},
	{"python runs when on", "```python\nprint(1)\n```\n```py\nprint(2)\n```\n", true,
	 {"print(1)\n", "print(2)\n"}, 2, 0, 0, REPLY_NO_FINAL, NULL},
	{"untagged fence is another language", "```\nprint(1)\n```\n", true, {NULL}, 0, 0, 1,
	 REPLY_NO_FINAL, NULL},
	{"other fence hides a repl fence", "```text\n```repl\nprint(1)\n```\n", false, {NULL}, 0,
	 0, 1, REPLY_NO_FINAL, NULL},
	{"other fence then repl", "```json\n{\"a\": 1}\n```\n```repl\nx = 2\n```\n", false,
	 {"x = 2\n"}, 1, 0, 1, REPLY_NO_FINAL, NULL},
	{"tag case and trailing words", "```REPL  title\nx=1\n```\n", false, {"x=1\n"}, 1, 0, 0,
	 REPLY_NO_FINAL, NULL},
	{"tag must be the whole word", "```replx\nx=1\n```\n", false, {NULL}, 0, 0, 1,
	 REPLY_NO_FINAL, NULL},
	{"indented up to three spaces", "   ```repl\nx = 1\n   ```\n", false, {"x = 1\n"}, 1, 0, 0,
	 REPLY_NO_FINAL, NULL},
	{"four spaces is not a fence", "    ```repl\nx = 1\n    ```\n", false, {NULL}, 0, 0, 0,
	 REPLY_NO_FINAL, NULL},
	{"fence mid-line is not a fence", "see ```repl\nx = 1\n```\n", false, {NULL}, 0, 0, 1,
	 REPLY_NO_FINAL, NULL},
	{"inline triple backticks", "```print(1)```\nok\n", false, {NULL}, 0, 0, 0,
	 REPLY_NO_FINAL, NULL},
	{"four-backtick fence keeps inner ```", "````repl\ns = '''\n```\n'''\n````\n", false,
	 {"s = '''\n```\n'''\n"}, 1, 0, 0, REPLY_NO_FINAL, NULL},
	{"closing fence may be longer", "```repl\nx = 1\n`````\n", false, {"x = 1\n"}, 1, 0, 0,
	 REPLY_NO_FINAL, NULL},
	{"closing fence with words is not one", "```repl\nx = 1\n``` no\ny = 2\n```\n", false,
	 {"x = 1\n``` no\ny = 2\n"}, 1, 0, 0, REPLY_NO_FINAL, NULL},
	{"tildes are not a fence", "~~~repl\nx = 1\n~~~\nFINAL(7)\n", false, {NULL}, 0, 0, 0,
	 REPLY_FINAL, "7"},
	{"crlf line ends", "Look:\r\n```repl\r\nprint(1)\r\n```\r\nFINAL(yes)\r\n", false,
	 {"print(1)\r\n"}, 1, 0, 0, REPLY_FINAL, "yes"},
	{"block at the very end, closed, no newline", "```repl\nprint(1)\n```", false,
	 {"print(1)\n"}, 1, 0, 0, REPLY_NO_FINAL, NULL},
	{"empty closed block", "```repl\n```\n", false, {""}, 1, 0, 0, REPLY_NO_FINAL, NULL},
	{"unterminated block ending at a newline", "```repl\nx = 1\ny = 2\n", false,
	 {"x = 1\ny = 2\n"}, 1, 1, 0, REPLY_NO_FINAL, NULL},
	{"unterminated block drops its cut line", "```repl\nx = 1\ny = llm_qu", false,
	 {"x = 1\n"}, 1, 1, 0, REPLY_NO_FINAL, NULL},
	{"unterminated block cut in its first line", "```repl\nprin", false, {NULL}, 0, 0, 0,
	 REPLY_NO_FINAL, NULL},
	{"half a closing fence is cut", "```repl\nx = 1\n``", false, {"x = 1\n"}, 1, 1, 0,
	 REPLY_NO_FINAL, NULL},
	{"final in text", "I found it.\nFINAL(42)\n", false, {NULL}, 0, 0, 0, REPLY_FINAL, "42"},
	{"final after blanks", "  \tFINAL(The answer is Paris.)", false, {NULL}, 0, 0, 0,
	 REPLY_FINAL, "The answer is Paris."},
	{"final inside a fence does not count", "```repl\nFINAL(x)\n```\n", false, {"FINAL(x)\n"},
	 1, 0, 0, REPLY_NO_FINAL, NULL},
	{"final inside another fence does not count", "```text\nFINAL(no)\n```\n", false, {NULL},
	 0, 0, 1, REPLY_NO_FINAL, NULL},
	{"final inside an unterminated fence", "```repl\nx = 1\nFINAL(x)\n", false,
	 {"x = 1\nFINAL(x)\n"}, 1, 1, 0, REPLY_NO_FINAL, NULL},
	{"final mid-line does not count", "So we say FINAL(3) here.\n", false, {NULL}, 0, 0, 0,
	 REPLY_NO_FINAL, NULL},
	{"final with nested parens", "FINAL(f(x) = (a + b) * 2)\n", false, {NULL}, 0, 0, 0,
	 REPLY_FINAL, "f(x) = (a + b) * 2"},
	{"final across lines", "FINAL(line one\nline (two))\nafter", false, {NULL}, 0, 0, 0,
	 REPLY_FINAL, "line one\nline (two)"},
	{"final balanced across lines", "FINAL(a ( b)\nmore)", false, {NULL}, 0, 0, 0,
	 REPLY_FINAL, "a ( b)\nmore"},
	{"final unbalanced takes the last paren", "FINAL(a ( b) c\nmore", false, {NULL}, 0, 0, 0,
	 REPLY_FINAL, "a ( b"},
	{"final without a close paren takes the line", "FINAL(cut off here\nnext", false,
	 {NULL}, 0, 0, 0, REPLY_FINAL, "cut off here"},
	{"final quotes stripped", "FINAL(\"Paris\")", false, {NULL}, 0, 0, 0, REPLY_FINAL,
	 "Paris"},
	{"final single quotes stripped", "FINAL( 'Paris' )", false, {NULL}, 0, 0, 0, REPLY_FINAL,
	 "Paris"},
	{"final triple quotes stripped", "FINAL(\"\"\"two\nlines\"\"\")", false, {NULL}, 0, 0, 0,
	 REPLY_FINAL, "two\nlines"},
	{"final one level of quotes only", "FINAL(\"'x'\")", false, {NULL}, 0, 0, 0, REPLY_FINAL,
	 "'x'"},
	{"final mismatched quotes kept", "FINAL(\"x')", false, {NULL}, 0, 0, 0, REPLY_FINAL,
	 "\"x'"},
	{"final empty", "FINAL()", false, {NULL}, 0, 0, 0, REPLY_FINAL, ""},
	{"first final wins", "FINAL(one)\nFINAL(two)\n", false, {NULL}, 0, 0, 0, REPLY_FINAL,
	 "one"},
	{"final with a space is not final", "FINAL (x)\n", false, {NULL}, 0, 0, 0, REPLY_NO_FINAL,
	 NULL},
	{"final lower case is not final", "final(x)\n", false, {NULL}, 0, 0, 0, REPLY_NO_FINAL,
	 NULL},
	{"final_var", "Done.\nFINAL_VAR(result)\n", false, {NULL}, 0, 0, 0, REPLY_FINAL_VAR,
	 "result"},
	{"final_var quoted", "FINAL_VAR(\"result\")", false, {NULL}, 0, 0, 0, REPLY_FINAL_VAR,
	 "result"},
	{"final_var wins over an earlier final", "FINAL(a)\nFINAL_VAR(b)\n", false, {NULL}, 0, 0,
	 0, REPLY_FINAL_VAR, "b"},
	{"final_var inside a fence does not count", "```repl\nFINAL_VAR(x)\n```\nFINAL(y)\n",
	 false, {"FINAL_VAR(x)\n"}, 1, 0, 0, REPLY_FINAL, "y"},
	{"final_var empty falls back to final", "FINAL_VAR()\nFINAL(z)\n", false, {NULL}, 0, 0, 0,
	 REPLY_FINAL, "z"},
	{"final_var without paren takes the line", "FINAL_VAR(name\nx)", false, {NULL}, 0, 0, 0,
	 REPLY_FINAL_VAR, "name"},
	{"blocks and final", "```repl\nanswer['content'] = 1\n```\nFINAL(1)\n", false,
	 {"answer['content'] = 1\n"}, 1, 0, 0, REPLY_FINAL, "1"},
	{"final after an unterminated other fence", "```text\nFINAL(no)\n", false, {NULL}, 0, 0,
	 1, REPLY_NO_FINAL, NULL},
};

static void check_case(const struct rcase *c)
{
	struct reply r;
	size_t len = strlen(c->text);
	/* An exact-size copy, so a read past the end is caught under ASan. */
	char *t = malloc(len ? len : 1);
	memcpy(t, c->text, len);
	rlm_reply_parse(t, len, c->python, true, &r);
	CHECK_MSG((int)r.n_blocks == c->n_blocks, "%s: %zu blocks, want %d", c->name, r.n_blocks,
		  c->n_blocks);
	for (int i = 0; i < c->n_blocks; i++) {
		const struct reply_block *b = &r.blocks[i];
		bool want_closed = !(c->open_last && i == c->n_blocks - 1);
		CHECK_MSG(b->off + b->len <= len, "%s: block %d out of range", c->name, i);
		CHECK_MSG(b->len == strlen(c->blocks[i]) && memcmp(t + b->off, c->blocks[i], b->len) == 0,
			  "%s: block %d is \"%.*s\", want \"%s\"", c->name, i, (int)b->len,
			  t + b->off, c->blocks[i]);
		CHECK_MSG(b->closed == want_closed, "%s: block %d closed=%d", c->name, i, b->closed);
	}
	CHECK_MSG((int)r.other_fences == c->other, "%s: %zu other fences, want %d", c->name,
		  r.other_fences, c->other);
	CHECK_MSG(r.final == c->final, "%s: final kind %d, want %d", c->name, (int)r.final,
		  (int)c->final);
	if (c->final != REPLY_NO_FINAL) {
		CHECK_MSG(r.final_off + r.final_len <= len, "%s: final out of range", c->name);
		CHECK_MSG(r.final_len == strlen(c->final_text) &&
				  memcmp(t + r.final_off, c->final_text, r.final_len) == 0,
			  "%s: final \"%.*s\", want \"%s\"", c->name, (int)r.final_len,
			  t + r.final_off, c->final_text);
	}
	rlm_reply_release(&r);
	CHECK(r.blocks == NULL);
	free(t);
}

TEST(reply_table)
{
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		check_case(&cases[i]);
}

TEST(reply_null_and_nul_bytes)
{
	struct reply r;
	static const char t[] = "```repl\nx = '\0'\n```\nFINAL(a\0b)";
	rlm_reply_parse(NULL, 0, false, false, &r);
	CHECK_INT(r.n_blocks, 0);
	CHECK_INT(r.final, REPLY_NO_FINAL);
	rlm_reply_release(&r);
	rlm_reply_parse(t, sizeof(t) - 1, false, false, &r);
	CHECK_INT(r.n_blocks, 1);
	CHECK_INT(r.blocks[0].len, 8);
	CHECK_INT(r.final, REPLY_FINAL);
	CHECK_INT(r.final_len, 3);
	rlm_reply_release(&r);
}

TEST(reply_unterminated_not_cut_keeps_its_last_line)
{
	static const char t[] = "```repl\nx = 1\nprint(x)";
	struct reply r;
	rlm_reply_parse(t, sizeof(t) - 1, false, false, &r);
	CHECK_INT(r.n_blocks, 1);
	CHECK(!r.blocks[0].closed);
	CHECK_INT(r.blocks[0].len, sizeof(t) - 1 - 8);
	rlm_reply_release(&r);
	rlm_reply_parse(t, sizeof(t) - 1, false, true, &r);
	CHECK_INT(r.n_blocks, 1);
	CHECK_INT(r.blocks[0].len, 6);
	rlm_reply_release(&r);
}

TEST(reply_many_blocks)
{
	struct buf b;
	struct reply r;
	buf_init(&b, 0);
	for (int i = 0; i < 100; i++)
		buf_printf(&b, "step %d\n```repl\nprint(%d)\n```\n", i, i);
	rlm_reply_parse(b.p, b.len, false, false, &r);
	CHECK_INT(r.n_blocks, 100);
	for (int i = 0; i < 100; i++) {
		char want[32];
		snprintf(want, sizeof(want), "print(%d)\n", i);
		CHECK(r.blocks[i].len == strlen(want) &&
		      memcmp(b.p + r.blocks[i].off, want, r.blocks[i].len) == 0);
	}
	rlm_reply_release(&r);
	buf_release(&b);
}
