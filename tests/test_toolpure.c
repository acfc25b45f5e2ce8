/* SPDX-License-Identifier: MIT */
/* tests/test_toolpure.c -- tool/'s pure pieces on real inputs: argument
 * checks against the inputSchemas of the official MCP reference servers
 * (server-everything and server-filesystem 2026.8.31, their tools/list
 * kept verbatim in tests/tools/), against draft-07, 2020-12, pydantic
 * (anyOf with null) and OpenAPI (nullable) shapes, nested arrays of
 * objects, and schemas built to exhaust depth and work; the lexical
 * ranking over those servers' real tool lists; the --allow-tools and
 * --deny-tools policy; the streamable HTTP transport against the official
 * server-everything (streamableHttp mode, under node) and against
 * tests/fake_mcp_http.py (event streams with the server's own requests in
 * them, sessions and their expiry, errors, garbage, huge bodies, hangs,
 * redirects), checking the exact requests the client sent. */
#include "harness.h"
#include "proc.h"
#include "../tool/tool_int.h"
#include "../common/json.h"
#include "../common/net.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers ---- */

/* The tools/list of a reference server, from tests/tools/. */
static cJSON *load_tools(const char *file)
{
	char *path = xasprintf("tests/tools/%s", file), *text = NULL;
	size_t len = 0;
	struct rlm_err err = {0};
	cJSON *j;
	CHECK_MSG(file_read(path, 1 << 20, &text, &len, &err) == 0, "%s", err.msg);
	j = json_parse(text, len);
	CHECK(cJSON_IsArray(j));
	free(text);
	free(path);
	return j;
}

/* The tool named name in tools (borrowed). */
static const cJSON *find_tool(const cJSON *tools, const char *name)
{
	const cJSON *t;
	cJSON_ArrayForEach(t, tools)
	{
		const char *n = json_str(t, "name");
		if (n && strcmp(n, name) == 0)
			return t;
	}
	harness_fail(__FILE__, __LINE__, "no tool '%s'", name);
}

/* Check the JSON text args against schema: "" when it holds, else the
 * message (static, overwritten by the next call). */
static const char *check_text(const cJSON *schema, const char *args)
{
	static char msg[2048];
	cJSON *a = args ? json_parse(args, strlen(args)) : NULL;
	int rc;
	if (args)
		CHECK_MSG(a != NULL, "bad test JSON: %s", args);
	memset(msg, 'x', sizeof(msg));
	rc = tool_schema_check(schema, a, msg, sizeof(msg));
	cJSON_Delete(a);
	CHECK_MSG(memchr(msg, '\0', sizeof(msg)) != NULL, "message not terminated");
	CHECK_MSG((rc == 0) == (msg[0] == '\0'), "rc %d with message '%s'", rc, msg);
	return msg;
}

/* The same against the inputSchema of a tool of a reference server. */
static const char *check_tool(const cJSON *tools, const char *tool, const char *args)
{
	return check_text(json_get(find_tool(tools, tool), "inputSchema"), args);
}

static cJSON *parse(const char *s)
{
	cJSON *j = json_parse(s, strlen(s));
	CHECK_MSG(j != NULL, "bad test JSON: %s", s);
	return j;
}

/* ---- schema checks on the reference servers' schemas ---- */

TEST(schema_get_sum)
{
	cJSON *tools = load_tools("everything-tools.json");
	CHECK_STR(check_tool(tools, "get-sum", "{\"a\": 2, \"b\": 3}"), "");
	CHECK_STR(check_tool(tools, "get-sum", "{\"a\": -2.5, \"b\": 1e300}"), "");
	/* The messages the header promises, word for word. */
	CHECK_STR(check_tool(tools, "get-sum", "{\"x\": 2, \"b\": 3}"),
		  "unknown parameter 'x' (the parameters are: a (number, required), b (number, "
		  "required)); did you mean 'a'?");
	CHECK_STR(check_tool(tools, "get-sum", "{\"a\": 2}"),
		  "parameter 'b' is required (number: Second number)");
	CHECK_STR(check_tool(tools, "get-sum", "{\"a\": \"2\", \"b\": 3}"),
		  "parameter 'a' must be a number, not a string '2': First number");
	/* booleans are not numbers, null is not one either */
	CHECK_STR(check_tool(tools, "get-sum", "{\"a\": true, \"b\": 3}"),
		  "parameter 'a' must be a number, not a boolean true: First number");
	CHECK_CONTAINS(check_tool(tools, "get-sum", "{\"a\": 1, \"b\": null}"),
		       "parameter 'b' must be a number, not null");
	/* no arguments at all: the first required one is named */
	CHECK_STR(check_tool(tools, "get-sum", NULL),
		  "parameter 'a' is required (number: First number)");
	CHECK_STR(check_tool(tools, "get-sum", "[1, 2]"),
		  "the arguments must be an object, not an array");
	/* a slip of case or a letter is caught and named */
	CHECK_CONTAINS(check_tool(tools, "get-sum", "{\"A\": 1, \"b\": 2}"), "did you mean 'a'?");
	cJSON_Delete(tools);
}

TEST(schema_everything_others)
{
	cJSON *tools = load_tools("everything-tools.json");
	CHECK_STR(check_tool(tools, "echo", "{\"message\": \"hi\"}"), "");
	CHECK_STR(check_tool(tools, "echo", "{\"mesage\": \"hi\"}"),
		  "unknown parameter 'mesage' (the parameters are: message (string, required)); "
		  "did you mean 'message'?");
	CHECK_STR(check_tool(tools, "echo", "{\"text\": \"hi\"}"),
		  "unknown parameter 'text' (the parameters are: message (string, required))");
	/* enum */
	CHECK_STR(check_tool(tools, "get-annotated-message", "{\"messageType\": \"debug\"}"), "");
	CHECK_STR(check_tool(tools, "get-annotated-message", "{\"messageType\": \"warn\"}"),
		  "parameter 'messageType' must be one of 'error', 'success', 'debug', not 'warn'");
	CHECK_STR(check_tool(tools, "get-annotated-message",
			     "{\"messageType\": \"error\", \"includeImage\": 1}"),
		  "parameter 'includeImage' must be a boolean, not a number 1: Whether to "
		  "include an example image");
	/* minimum / maximum */
	CHECK_STR(check_tool(tools, "get-resource-links", "{\"count\": 10}"), "");
	CHECK_STR(check_tool(tools, "get-resource-links", "{\"count\": 11}"),
		  "parameter 'count' must be <= 10, not 11");
	CHECK_STR(check_tool(tools, "get-resource-links", "{\"count\": 0.5}"),
		  "parameter 'count' must be >= 1, not 0.5");
	/* a tool without parameters */
	CHECK_STR(check_tool(tools, "get-env", "{}"), "");
	CHECK_STR(check_tool(tools, "get-env", "{\"verbose\": true}"),
		  "unknown parameter 'verbose' (the tool takes no parameters)");
	/* only optional ones: {} holds */
	CHECK_STR(check_tool(tools, "gzip-file-as-resource", "{}"), "");
	CHECK_CONTAINS(check_tool(tools, "gzip-file-as-resource", "{\"outputtype\": \"resource\"}"),
		       "did you mean 'outputType'?");
	cJSON_Delete(tools);
}

TEST(schema_filesystem_nested)
{
	cJSON *tools = load_tools("filesystem-tools.json");
	const char *ok = "{\"path\": \"/tmp/a\", \"edits\": [{\"oldText\": \"a\", \"newText\": "
			 "\"b\"}, {\"oldText\": \"c\", \"newText\": \"d\"}], \"dryRun\": true}";
	CHECK_STR(check_tool(tools, "edit_file", ok), "");
	/* a path into arrays of objects */
	CHECK_STR(check_tool(tools, "edit_file",
			     "{\"path\": \"p\", \"edits\": [{\"oldText\": \"a\", \"newText\": "
			     "\"b\"}, {\"oldText\": \"c\", \"newTxt\": \"d\"}]}"),
		  "unknown parameter 'edits[1].newTxt' (the members of 'edits[1]' are: oldText "
		  "(string, required), newText (string, required)); did you mean 'newText'?");
	CHECK_STR(
	    check_tool(tools, "edit_file", "{\"path\": \"p\", \"edits\": [{\"newText\": \"b\"}]}"),
	    "parameter 'edits[0].oldText' is required (string: Text to search for - must "
	    "match exactly)");
	CHECK_STR(
	    check_tool(tools, "edit_file",
		       "{\"path\": \"p\", \"edits\": [{\"oldText\": 1, \"newText\": \"b\"}]}"),
	    "parameter 'edits[0].oldText' must be a string, not a number 1: Text to "
	    "search for - must match exactly");
	CHECK_STR(check_tool(tools, "edit_file", "{\"path\": \"p\", \"edits\": [\"x\"]}"),
		  "parameter 'edits[0]' must be an object, not a string 'x'");
	CHECK_STR(check_tool(tools, "edit_file", "{\"path\": \"p\", \"edits\": {}}"),
		  "parameter 'edits' must be an array of object, not an object");
	/* additionalProperties: false */
	CHECK_STR(check_tool(tools, "read_text_file", "{\"path\": \"p\", \"encoding\": \"utf8\"}"),
		  "unknown parameter 'encoding' (the parameters are: path (string, required), "
		  "tail (number), head (number))");
	/* minItems */
	CHECK_STR(check_tool(tools, "read_multiple_files", "{\"paths\": [\"a\"]}"), "");
	CHECK_STR(check_tool(tools, "read_multiple_files", "{\"paths\": []}"),
		  "parameter 'paths' must have at least 1 item, not 0");
	CHECK_STR(check_tool(tools, "read_multiple_files", "{\"paths\": [\"a\", 7]}"),
		  "parameter 'paths[1]' must be a string, not a number 7");
	/* an outputSchema of anyOf alternatives, as a schema to check */
	{
		const cJSON *out = json_get(find_tool(tools, "read_media_file"), "outputSchema");
		CHECK_STR(check_text(out, "{\"content\": [{\"type\": \"image\", \"data\": \"x\", "
					  "\"mimeType\": \"image/png\"}, {\"type\": \"resource\", "
					  "\"resource\": {\"uri\": \"u\", \"blob\": \"b\"}}]}"),
			  "");
		CHECK_CONTAINS(check_text(out, "{\"content\": [{\"type\": \"video\", \"data\": "
					       "\"x\", \"mimeType\": \"v\"}]}"),
			       "parameter 'content[0]");
	}
	cJSON_Delete(tools);
}

/* ---- other shapes: draft 2020-12, draft-04, pydantic, OpenAPI ---- */

TEST(schema_integers)
{
	cJSON *s = parse("{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\", "
			 "\"description\": \"How many\"}, \"x\": {\"type\": \"number\"}}}");
	CHECK_STR(check_text(s, "{\"n\": 2}"), "");
	CHECK_STR(check_text(s, "{\"n\": 2.0}"), ""); /* no fraction: a whole number */
	CHECK_STR(check_text(s, "{\"n\": -0}"), "");
	CHECK_STR(check_text(s, "{\"n\": 1e3}"), "");
	CHECK_STR(check_text(s, "{\"n\": 2.5}"),
		  "parameter 'n' must be an integer, not 2.5 (a whole number): How many");
	CHECK_STR(check_text(s, "{\"n\": false}"),
		  "parameter 'n' must be an integer, not a boolean false: How many");
	CHECK_STR(check_text(s, "{\"n\": \"3\"}"),
		  "parameter 'n' must be an integer, not a string '3': How many");
	CHECK_STR(check_text(s, "{\"x\": 3}"), ""); /* an integer is a number */
	/* no "required": an empty object holds */
	CHECK_STR(check_text(s, "{}"), "");
	cJSON_Delete(s);
}

TEST(schema_2020_12_and_draft_04)
{
	cJSON *s =
	    parse("{\"$schema\": \"https://json-schema.org/draft/2020-12/schema\", \"type\": "
		  "\"object\", \"$defs\": {\"P\": {\"type\": \"number\"}}, \"properties\": "
		  "{\"point\": {\"type\": \"array\", \"prefixItems\": [{\"type\": \"number\"}, "
		  "{\"type\": \"string\"}], \"items\": false}, \"tag\": {\"type\": [\"string\", "
		  "\"null\"], \"maxLength\": 3}, \"ref\": {\"$ref\": \"#/$defs/P\"}, \"lo\": "
		  "{\"type\": \"number\", \"exclusiveMinimum\": 0}}, \"required\": [\"point\"], "
		  "\"additionalProperties\": false}");
	cJSON *d4 =
	    parse("{\"$schema\": \"http://json-schema.org/draft-04/schema#\", \"type\": "
		  "\"object\", \"properties\": {\"p\": {\"type\": \"number\", \"minimum\": "
		  "0, \"exclusiveMinimum\": true}, \"t\": {\"type\": \"array\", \"items\": "
		  "[{\"type\": \"string\"}], \"additionalItems\": {\"type\": \"integer\"}}}}");
	CHECK_STR(check_text(s, "{\"point\": [1, \"a\"], \"tag\": null, \"ref\": \"not checked\"}"),
		  "");
	CHECK_STR(check_text(s, "{\"point\": [1, 2]}"),
		  "parameter 'point[1]' must be a string, not a number 2");
	CHECK_STR(check_text(s, "{\"point\": [1, \"a\", 3]}"),
		  "parameter 'point[2]' is not allowed");
	CHECK_STR(check_text(s, "{\"point\": [1], \"tag\": \"long\"}"),
		  "parameter 'tag' must be at most 3 characters long, not 4");
	/* characters, not bytes */
	CHECK_STR(check_text(s, "{\"point\": [1], \"tag\": \"\xc3\xa9t\xc3\xa9\"}"), "");
	CHECK_STR(check_text(s, "{\"point\": [1], \"tag\": 5}"),
		  "parameter 'tag' must be string or null (at most 3 characters), not a number 5");
	CHECK_STR(check_text(s, "{\"point\": [1], \"lo\": 0}"),
		  "parameter 'lo' must be > 0, not 0");
	CHECK_STR(check_text(d4, "{\"p\": 0}"), "parameter 'p' must be > 0, not 0");
	CHECK_STR(check_text(d4, "{\"p\": 0.1, \"t\": [\"a\", 1, 2]}"), "");
	CHECK_STR(check_text(d4, "{\"t\": [\"a\", 1, \"b\"]}"),
		  "parameter 't[2]' must be an integer, not a string 'b'");
	cJSON_Delete(s);
	cJSON_Delete(d4);
}

TEST(schema_any_of_null)
{
	/* What pydantic writes for Optional[int] = None with a bound (as
	 * Python MCP servers built on FastMCP publish it), and OpenAPI's
	 * nullable. */
	cJSON *s = parse("{\"properties\": {\"limit\": {\"anyOf\": [{\"type\": \"integer\", "
			 "\"minimum\": 1}, {\"type\": \"null\"}], \"default\": null, \"title\": "
			 "\"Limit\"}, \"q\": {\"title\": \"Q\", \"type\": \"string\"}, \"when\": "
			 "{\"type\": \"string\", \"nullable\": true}}, \"required\": [\"q\"], "
			 "\"title\": \"searchArguments\", \"type\": \"object\"}");
	CHECK_STR(check_text(s, "{\"q\": \"x\"}"), "");
	CHECK_STR(check_text(s, "{\"q\": \"x\", \"limit\": null}"), "");
	CHECK_STR(check_text(s, "{\"q\": \"x\", \"limit\": 5}"), "");
	CHECK_STR(check_text(s, "{\"q\": \"x\", \"when\": null}"), "");
	/* the alternative whose type fits tells what is wrong */
	CHECK_STR(check_text(s, "{\"q\": \"x\", \"limit\": 0}"),
		  "parameter 'limit' must be >= 1, not 0");
	CHECK_STR(check_text(s, "{\"q\": \"x\", \"limit\": \"5\"}"),
		  "parameter 'limit' must be integer (>= 1) or null, not a string '5'");
	CHECK_STR(check_text(s, "{\"q\": \"x\", \"when\": 1}"),
		  "parameter 'when' must be string or null, not a number 1");
	CHECK_STR(check_text(s, "{\"limit\": 2}"), "parameter 'q' is required (string)");
	{
		cJSON *p = tool_schema_params(s);
		char *t = json_print(p);
		CHECK_STR(t, "{\"required\":[{\"name\":\"q\",\"type\":\"string\",\"description\":"
			     "\"\"}],\"optional\":[{\"name\":\"limit\",\"type\":\"integer (>= 1) "
			     "or null\",\"description\":\"\",\"default\":null},{\"name\":"
			     "\"when\",\"type\":\"string or null\",\"description\":\"\"}]}");
		free(t);
		cJSON_Delete(p);
	}
	cJSON_Delete(s);
}

TEST(schema_nested_arrays_of_objects)
{
	cJSON *s = parse(
	    "{\"type\": \"object\", \"properties\": {\"orders\": {\"type\": \"array\", "
	    "\"items\": {\"type\": \"object\", \"properties\": {\"id\": {\"type\": "
	    "\"integer\"}, \"lines\": {\"type\": \"array\", \"maxItems\": 2, \"items\": "
	    "{\"type\": \"object\", \"properties\": {\"sku\": {\"type\": \"string\", "
	    "\"minLength\": 1}, \"qty\": {\"type\": \"integer\", \"minimum\": 1}}, "
	    "\"required\": [\"sku\", \"qty\"]}}}, \"required\": [\"id\"]}}, \"meta\": {\"type\": "
	    "\"object\", \"additionalProperties\": {\"type\": \"string\"}}}}");
	CHECK_STR(check_text(s, "{\"orders\": [{\"id\": 1, \"lines\": [{\"sku\": \"a\", \"qty\": "
				"2}]}, {\"id\": 2}], \"meta\": {\"k\": \"v\"}}"),
		  "");
	CHECK_STR(check_text(s, "{\"orders\": [{\"id\": 1}, {\"id\": 2, \"lines\": [{\"sku\": "
				"\"a\", \"qty\": 1}, {\"sku\": \"\", \"qty\": 1}]}]}"),
		  "parameter 'orders[1].lines[1].sku' must be at least 1 characters long, not 0");
	CHECK_STR(check_text(s, "{\"orders\": [{\"id\": 1, \"lines\": [{\"sku\": \"a\", \"qty\": "
				"0}]}]}"),
		  "parameter 'orders[0].lines[0].qty' must be >= 1, not 0");
	CHECK_STR(check_text(s, "{\"orders\": [{\"id\": 1, \"lines\": [{\"sku\": \"a\"}]}]}"),
		  "parameter 'orders[0].lines[0].qty' is required (integer (>= 1))");
	CHECK_STR(check_text(s, "{\"orders\": [{\"id\": 1, \"lines\": [{}, {}, {}]}]}"),
		  "parameter 'orders[0].lines' must have at most 2 items, not 3");
	CHECK_STR(check_text(s, "{\"meta\": {\"k\": 1}}"),
		  "parameter 'meta.k' must be a string, not a number 1");
	cJSON_Delete(s);
}

TEST(schema_odd_schemas)
{
	cJSON *t = parse("true"), *f = parse("false"), *e = parse("{}"),
	      *c = parse("{\"properties\": {\"kind\": {\"const\": \"resource\"}}}"),
	      *o = parse("{\"type\": \"object\", \"patternProperties\": {\"^x\": {}}, "
			 "\"properties\": {\"a\": {}}}"),
	      *all = parse("{\"allOf\": [{\"properties\": {\"a\": {\"type\": \"string\"}}}, "
			   "{\"required\": [\"a\"]}]}");
	/* NULL, true, {}: anything goes */
	CHECK_STR(check_text(NULL, "{\"any\": 1}"), "");
	CHECK_STR(check_text(t, "{\"any\": 1}"), "");
	CHECK_STR(check_text(e, "{\"any\": 1}"), "");
	CHECK_STR(check_text(f, "{}"), "the schema (false) allows no arguments at all");
	CHECK_STR(check_text(c, "{\"kind\": \"resource\"}"), "");
	CHECK_STR(check_text(c, "{\"kind\": \"link\"}"),
		  "parameter 'kind' must be 'resource', not 'link'");
	/* patternProperties are not checked: other keys pass */
	CHECK_STR(check_text(o, "{\"xyz\": 1, \"a\": 2}"), "");
	CHECK_STR(check_text(all, "{\"a\": \"s\"}"), "");
	CHECK_STR(check_text(all, "{}"), "parameter 'a' is required (any)");
	cJSON_Delete(t);
	cJSON_Delete(f);
	cJSON_Delete(e);
	cJSON_Delete(c);
	cJSON_Delete(o);
	cJSON_Delete(all);
}

TEST(schema_message_cut)
{
	cJSON *tools = load_tools("everything-tools.json");
	const cJSON *s = json_get(find_tool(tools, "get-sum"), "inputSchema");
	cJSON *a = parse("{\"zz\": 1}");
	char msg[12];
	CHECK(tool_schema_check(s, a, msg, sizeof(msg)) == -1);
	CHECK_STR(msg, "unknown par");
	CHECK(tool_schema_check(s, a, NULL, 0) == -1);
	cJSON_Delete(a);
	/* a cut never splits a character */
	a = parse("{\"\xc3\xa9\xc3\xa9\xc3\xa9\": 1}");
	{
		char m2[22];
		CHECK(tool_schema_check(s, a, m2, sizeof(m2)) == -1);
		CHECK(text_utf8_valid(m2, strlen(m2), NULL));
		CHECK_STR(m2, "unknown parameter '\xc3\xa9");
	}
	cJSON_Delete(a);
	cJSON_Delete(tools);
}

/* Schemas built to exhaust the check: nesting past 64 levels, and anyOf
 * alternatives that would be walked 2^60 times without a bound on work. */
TEST(schema_bounds)
{
	struct buf sb = BUF_INIT, ab = BUF_INIT;
	cJSON *s, *a;
	char msg[512];
	int64_t t0;
	/* 100 levels of objects */
	for (int i = 0; i < 100; i++)
		buf_puts(&sb, "{\"type\": \"object\", \"properties\": {\"a\": ");
	buf_puts(&sb, "{\"type\": \"number\"}");
	for (int i = 0; i < 100; i++) {
		buf_puts(&sb, "}}");
		buf_puts(&ab, "{\"a\": ");
	}
	buf_puts(&ab, "\"x\"");
	for (int i = 0; i < 100; i++)
		buf_puts(&ab, "}");
	s = json_parse(sb.p, sb.len);
	a = json_parse(ab.p, ab.len);
	CHECK(s && a);
	CHECK(tool_schema_check(s, a, msg, sizeof(msg)) == -1);
	CHECK_STR(msg, "the schema or arguments nest deeper than 64 levels");
	cJSON_Delete(s);
	cJSON_Delete(a);
	/* 60 levels of anyOf whose one fitting alternative is walked twice */
	buf_reset(&sb);
	buf_reset(&ab);
	for (int i = 0; i < 60; i++) {
		buf_puts(&sb, "{\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"object\", "
			      "\"properties\": {\"a\": ");
		buf_puts(&ab, "{\"a\": ");
	}
	buf_puts(&sb, "{\"type\": \"number\"}");
	buf_puts(&ab, "\"x\"");
	for (int i = 0; i < 60; i++) {
		buf_puts(&sb, "}}]}");
		buf_puts(&ab, "}");
	}
	s = json_parse(sb.p, sb.len);
	a = json_parse(ab.p, ab.len);
	CHECK(s && a);
	t0 = time_now_ns();
	CHECK(tool_schema_check(s, a, msg, sizeof(msg)) == -1);
	CHECK_STR(msg, "the schema and arguments are too large to check");
	CHECK_MSG(time_now_ns() - t0 < 5 * 1000000000LL * slow_factor(), "took %lld ms",
		  (long long)((time_now_ns() - t0) / 1000000));
	cJSON_Delete(s);
	cJSON_Delete(a);
	buf_release(&sb);
	buf_release(&ab);
}

TEST(schema_params_reference)
{
	cJSON *tools = load_tools("everything-tools.json"),
	      *fs = load_tools("filesystem-tools.json");
	cJSON *p =
	    tool_schema_params(json_get(find_tool(tools, "get-annotated-message"), "inputSchema"));
	char *t = json_print(p);
	CHECK_STR(t,
		  "{\"required\":[{\"name\":\"messageType\",\"type\":\"string (one of "
		  "'error', 'success', 'debug')\",\"description\":\"Type of message to "
		  "demonstrate different annotation patterns\"}],\"optional\":[{\"name\":"
		  "\"includeImage\",\"type\":\"boolean\",\"description\":\"Whether to include an "
		  "example image\",\"default\":false}]}");
	free(t);
	cJSON_Delete(p);
	p = tool_schema_params(json_get(find_tool(fs, "edit_file"), "inputSchema"));
	t = json_print(p);
	CHECK_STR(t, "{\"required\":[{\"name\":\"path\",\"type\":\"string\",\"description\":\"\"},"
		     "{\"name\":\"edits\",\"type\":\"array of object\",\"description\":\"\"}],"
		     "\"optional\":[{\"name\":\"dryRun\",\"type\":\"boolean\",\"description\":"
		     "\"Preview changes using git-style diff format\",\"default\":false}]}");
	free(t);
	cJSON_Delete(p);
	p = tool_schema_params(json_get(find_tool(tools, "get-resource-links"), "inputSchema"));
	t = json_print(p);
	CHECK_CONTAINS(t, "\"type\":\"number (>= 1; <= 10)\"");
	CHECK_CONTAINS(t, "\"default\":3");
	free(t);
	cJSON_Delete(p);
	p = tool_schema_params(NULL);
	t = json_print(p);
	CHECK_STR(t, "{\"required\":[],\"optional\":[]}");
	free(t);
	cJSON_Delete(p);
	cJSON_Delete(tools);
	cJSON_Delete(fs);
}

/* ---- ranking ---- */

/* The name of the best match of query among tools ("SERVER.TOOL"), and its
 * score; the second best's score in *second. */
static char *best_tool(const cJSON *tools, const char *server, const char *query, double *score,
		       double *second)
{
	const cJSON *t;
	char *best = NULL;
	*score = 0;
	*second = 0;
	cJSON_ArrayForEach(t, tools)
	{
		char *name = xasprintf("%s.%s", server, json_str(t, "name"));
		double s = tool_rank(query, name, json_str(t, "description"));
		if (s > *score) {
			*second = *score;
			*score = s;
			free(best);
			best = name;
		} else {
			if (s > *second)
				*second = s;
			free(name);
		}
	}
	return best;
}

TEST(rank_reference_servers)
{
	cJSON *ev = load_tools("everything-tools.json"), *fs = load_tools("filesystem-tools.json");
	static const struct {
		const char *file, *server, *query, *want;
	} cases[] = {
	    {"everything", "everything", "add two numbers", "everything.get-sum"},
	    {"everything", "everything", "sum", "everything.get-sum"},
	    {"everything", "everything", "what is the sum of 2 and 3", "everything.get-sum"},
	    {"everything", "everything", "echo message", "everything.echo"},
	    {"everything", "everything", "Echo", "everything.echo"},
	    {"everything", "everything", "environment variables", "everything.get-env"},
	    {"everything", "everything", "gzip compress a file",
	     "everything.gzip-file-as-resource"},
	    {"filesystem", "fs", "list directory", "fs.list_directory"},
	    {"filesystem", "fs", "move or rename a file", "fs.move_file"},
	    {"filesystem", "fs", "write file", "fs.write_file"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		double s1, s2;
		char *got = best_tool(strcmp(cases[i].file, "everything") == 0 ? ev : fs,
				      cases[i].server, cases[i].query, &s1, &s2);
		CHECK_MSG(got && strcmp(got, cases[i].want) == 0, "'%s': %s (%g, next %g), want %s",
			  cases[i].query, got ? got : "nothing", s1, s2, cases[i].want);
		CHECK_MSG(s1 > s2, "'%s': a tie at %g", cases[i].query, s1);
		free(got);
	}
	/* "read a file": a read tool first (read_file and read_text_file say
	 * the same words) */
	{
		double s1, s2;
		char *got = best_tool(fs, "fs", "read a file", &s1, &s2);
		CHECK_MSG(got && strncmp(got, "fs.read_", 8) == 0, "read a file: %s",
			  got ? got : "nothing");
		free(got);
	}
	cJSON_Delete(ev);
	cJSON_Delete(fs);
}

TEST(rank_words)
{
	/* no word in common, stop words only, empty */
	CHECK(tool_rank("weather", "s.get-sum", "Returns the sum of two numbers") == 0);
	CHECK(tool_rank("the of a", "s.the-of", "the of a") == 0);
	CHECK(tool_rank("", "s.x", "x") == 0);
	CHECK(tool_rank("x", NULL, NULL) == 0);
	/* name beats description; all words beat some */
	CHECK(tool_rank("sum", "s.sum", "") > tool_rank("sum", "s.x", "sum"));
	CHECK(tool_rank("file size", "s.stat", "size of a file") >
	      tool_rank("file size", "s.stat", "the file, the file, the file"));
	/* a name the query covers beats one that says more */
	CHECK(tool_rank("list directory", "fs.list_directory", "") >
	      tool_rank("list directory", "fs.list_allowed_directories", ""));
	/* separators, camelCase, case and plurals are folded */
	CHECK(tool_rank("read file", "s.readFile", "") ==
	      tool_rank("read file", "s.read_file", ""));
	CHECK(tool_rank("READ-FILES", "s.read_file", "") ==
	      tool_rank("read file", "s.read_file", ""));
	CHECK(tool_rank("directories", "s.list", "entries of a directory") > 0);
	/* a prefix of 4+ letters counts half; a shorter one nothing */
	CHECK(tool_rank("compress", "s.x", "compression") > 0);
	CHECK(tool_rank("compress", "s.x", "compression") <
	      tool_rank("compress", "s.x", "compress"));
	CHECK(tool_rank("compress", "s.x", "compression") ==
	      tool_rank("compression", "s.x", "compress"));
	CHECK(tool_rank("sum", "s.x", "summary") == 0);
	/* a long description does not win by repeating a word */
	CHECK(tool_rank("sum", "s.x", "sum sum sum sum") == tool_rank("sum", "s.x", "sum"));
	/* non-ASCII words */
	CHECK(tool_rank("größe", "s.x", "Die Größe einer Datei") == 0 ||
	      tool_rank("größe", "s.x", "Die größe einer Datei") > 0);
	{
		/* a huge description is read, not choked on */
		struct buf b = BUF_INIT;
		for (int i = 0; i < 100000; i++)
			buf_puts(&b, "word ");
		buf_puts(&b, "needle");
		CHECK(tool_rank("word", "s.x", b.p) > 0);
		buf_release(&b);
	}
}

/* ---- policy ---- */

TEST(policy_glob)
{
	CHECK(tool_glob_match("*", "fs.write_file"));
	CHECK(tool_glob_match("*", ""));
	CHECK(tool_glob_match("fs.*", "fs.write_file"));
	CHECK(!tool_glob_match("fs.*", "fsx.write_file"));
	CHECK(!tool_glob_match("fs.*", "everything.fs.x"));
	CHECK(tool_glob_match("fs.write_file", "fs.write_file"));
	CHECK(!tool_glob_match("fs.write_file", "fs.write_files"));
	CHECK(!tool_glob_match("fs.write_file", "fs.write_fil"));
	CHECK(tool_glob_match("*.read_*", "fs.read_text_file"));
	CHECK(tool_glob_match("fs.*file*", "fs.read_file_x"));
	CHECK(tool_glob_match("a*b*c", "aXbYbZc"));
	CHECK(!tool_glob_match("a*b*c", "aXbYbZ"));
	CHECK(!tool_glob_match("fs?write", "fs.write")); /* "?" is not special */
	CHECK(tool_glob_match("fs.", "fs.") && !tool_glob_match("fs", "fs."));
	CHECK(!tool_glob_match(NULL, "x") && !tool_glob_match("x", NULL));
	{
		/* a pathological pattern stays quick */
		char name[4001];
		memset(name, 'a', 4000);
		name[4000] = '\0';
		CHECK(!tool_glob_match("*a*a*a*a*a*a*a*a*b", name));
	}
}

TEST(policy_parse_and_allow)
{
	struct tool_policy p;
	struct rlm_err err = {0};
	char why[256];
	CHECK_INT(tool_policy_parse(&p, "fs.write_file, everything.*", "fs.move_*", &err), 0);
	CHECK_INT(p.n_allow, 2);
	CHECK_STR(p.allow[1], "everything.*");
	CHECK_INT(p.n_deny, 1);
	CHECK(tool_policy_allows(&p, "fs.write_file", false, why, sizeof(why)));
	CHECK_STR(why, "");
	CHECK(
	    tool_policy_allows(&p, "everything.toggle-simulated-logging", false, why, sizeof(why)));
	CHECK(tool_policy_allows(&p, "fs.read_file", true, why, sizeof(why)));
	CHECK(!tool_policy_allows(&p, "fs.edit_file", false, why, sizeof(why)));
	CHECK_STR(why, "not read-only (its annotations do not say readOnlyHint); allow it with "
		       "--allow-tools fs.edit_file");
	/* deny beats allow and read-only */
	CHECK(!tool_policy_allows(&p, "fs.move_file", true, why, sizeof(why)));
	CHECK_STR(why, "denied by --deny-tools 'fs.move_*'");
	CHECK(!tool_policy_allows(&p, "fs.move_file", true, NULL, 0));
	tool_policy_release(&p);
	CHECK(p.allow == NULL && p.n_allow == 0);
	tool_policy_release(&p); /* twice is fine */

	/* none given: read-only tools only */
	CHECK_INT(tool_policy_parse(&p, NULL, NULL, &err), 0);
	CHECK(tool_policy_allows(&p, "fs.read_file", true, why, sizeof(why)));
	CHECK(!tool_policy_allows(&p, "fs.write_file", false, why, sizeof(why)));
	CHECK(!tool_policy_allows(NULL, "fs.write_file", false, why, sizeof(why)));
	tool_policy_release(&p);
	CHECK_INT(tool_policy_parse(&p, "*", "*", &err), 0);
	CHECK(!tool_policy_allows(&p, "fs.read_file", true, why, sizeof(why)));
	tool_policy_release(&p);

	/* bad patterns, named */
	CHECK_INT(tool_policy_parse(&p, "fs.*,,x", NULL, &err), RLM_EINVAL);
	CHECK_STR(err.msg, "empty pattern in --allow-tools 'fs.*,,x'");
	CHECK(p.allow == NULL && p.n_allow == 0);
	CHECK_INT(tool_policy_parse(&p, "fs.*,", NULL, &err), RLM_EINVAL);
	CHECK_INT(tool_policy_parse(&p, "", NULL, &err), RLM_EINVAL);
	CHECK_INT(tool_policy_parse(&p, "fs.*", "fs.write file", &err), RLM_EINVAL);
	CHECK_STR(err.msg, "blank inside pattern 'fs.write file' of --deny-tools");
	CHECK(p.allow == NULL && p.n_allow == 0);
	CHECK_INT(tool_policy_parse(&p, "fs/write", NULL, &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "bad character '/' in pattern 'fs/write' of --allow-tools");
	CHECK_INT(tool_policy_parse(&p, "fs.?", NULL, &err), RLM_EINVAL);
}

/* ---- the streamable HTTP transport ---- */

struct fake {
	pid_t pid;
	int port;
	char *url;
};

/* Start tests/fake_mcp_http.py. */
static void fake_start(struct fake *f)
{
	const char *argv[] = {"/usr/bin/python3", "tests/fake_mcp_http.py", NULL};
	char line[64];
	if (access("/usr/bin/python3", X_OK) != 0)
		SKIP("no /usr/bin/python3");
	f->pid = proc_start_line(argv, NULL, NULL, 20, line, sizeof(line));
	CHECK_MSG(f->pid > 0, "tests/fake_mcp_http.py did not start");
	f->port = atoi(line);
	CHECK(f->port > 0);
	f->url = xasprintf("http://127.0.0.1:%d/mcp", f->port);
}

static void fake_stop(struct fake *f)
{
	proc_stop(f->pid);
	free(f->url);
}

static size_t collect(char *s, size_t size, size_t n, void *arg)
{
	buf_append(arg, s, size * n);
	return size * n;
}

/* What the fake server was sent: [{"method", "path", "headers", "body"}]. */
static cJSON *fake_log(const struct fake *f)
{
	CURL *e = curl_easy_init();
	struct buf b = BUF_INIT;
	char *url = xasprintf("http://127.0.0.1:%d/log", f->port);
	cJSON *j;
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	CHECK_INT(curl_easy_perform(e), CURLE_OK);
	curl_easy_cleanup(e);
	j = json_parse(b.p, b.len);
	CHECK(cJSON_IsArray(j));
	buf_release(&b);
	free(url);
	return j;
}

/* The last logged request whose JSON-RPC method (or, for answers, id) is
 * what, and of HTTP method verb (borrowed from log). */
static const cJSON *logged(const cJSON *log, const char *verb, const char *what)
{
	const cJSON *r, *found = NULL;
	cJSON_ArrayForEach(r, log)
	{
		const cJSON *body = json_get(r, "body");
		const char *m = json_str(body, "method"), *id = json_str(body, "id");
		if (strcmp(json_str(r, "method"), verb) != 0)
			continue;
		if (!what || (m && strcmp(m, what) == 0) || (!m && id && strcmp(id, what) == 0) ||
		    (!m && cJSON_IsNumber(json_get(body, "id")) &&
		     json_get(body, "id")->valueint == atoi(what) && atoi(what) != 0))
			found = r;
	}
	return found;
}

static const char *header_of(const cJSON *req, const char *name)
{
	return json_str(json_get(req, "headers"), name);
}

static bool id_matches(const cJSON *j, int64_t id)
{
	const cJSON *jid = json_get(j, "id");
	return cJSON_IsNumber(jid) && jid->valuedouble == (double)id;
}

/* POST one request by hand; its reply parsed, or NULL with err set. */
static cJSON *rpc(struct tool__http *h, int64_t id, const char *method, const char *params,
		  int64_t timeout_ms, struct rlm_err *err)
{
	char *body = id >= 0 ? xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"%s\","
					 "\"params\":%s}",
					 (long long)id, method, params)
			     : xasprintf("{\"jsonrpc\":\"2.0\",\"method\":\"%s\"}", method);
	static char unset[] = "unset";
	char *reply = unset;
	cJSON *j = NULL;
	int rc = tool__http_post(h, body, strlen(body), id,
				 time_now_ns() + timeout_ms * 1000000 * slow_factor(), &reply, err);
	free(body);
	if (rc == 0 && id < 0)
		CHECK(reply == NULL);
	if (rc == 0 && id >= 0) {
		j = json_parse(reply, strlen(reply));
		CHECK_MSG(j != NULL, "reply is not JSON: %s", reply);
		CHECK(id_matches(j, id));
	}
	if (rc)
		CHECK_MSG(err->code == rc && err->msg[0], "rc %d, err %d '%s'", rc, err->code,
			  err->msg);
	if (rc == 0)
		free(reply);
	return j;
}

static const char *call_params(const char *tool)
{
	static char p[128];
	snprintf(p, sizeof(p), "{\"name\":\"%s\",\"arguments\":{}}", tool);
	return p;
}

/* The text of a tools/call result's first content item. */
static const char *result_text(const cJSON *reply)
{
	const cJSON *c = json_get(json_get(reply, "result"), "content");
	return json_str(cJSON_GetArrayItem(c, 0), "text");
}

TEST(http_fake_session_and_stream)
{
	struct fake f;
	struct tool__http *h;
	struct rlm_err err = {0};
	const char *hdrs[] = {"X-Test: yes", "Authorization: Bearer tok"};
	cJSON *r, *log;
	const cJSON *req, *tl;
	int64_t t0;
	fake_start(&f);
	CHECK_INT(tool__http_open(f.url, hdrs, 2, &h, &err), 0);

	r = rpc(h, 1, "initialize",
		"{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":"
		"\"rlm\",\"version\":\"0\"}}",
		10000, &err);
	CHECK_MSG(r, "%s", err.msg);
	CHECK_STR(json_str(json_get(json_get(r, "result"), "serverInfo"), "name"), "fake-http");
	tool__http_set_version(h, json_str(json_get(r, "result"), "protocolVersion"));
	cJSON_Delete(r);
	CHECK(rpc(h, -1, "notifications/initialized", NULL, 10000, &err) == NULL);
	CHECK_MSG(err.code == 0, "%s", err.msg);

	/* a stream with a comment, a notification, a ping and a sampling
	 * request of the server's, an event of another type and a response to
	 * another id before ours, split over data lines */
	r = rpc(h, 2, "tools/list", "{}", 10000, &err);
	CHECK_MSG(r, "%s", err.msg);
	tl = json_get(r, "result");
	CHECK_STR(json_str(cJSON_GetArrayItem(json_get(tl, "tools"), 0), "name"), "sum");
	CHECK(json_get(tl, "wrong") == NULL);
	/* the server saw our answers before it sent the response */
	{
		char *p = json_print(json_get(tl, "pinged"));
		CHECK_STR(p, "{\"jsonrpc\":\"2.0\",\"id\":\"srv-ping\",\"result\":{}}");
		free(p);
	}
	CHECK_INT(json_int(json_get(json_get(tl, "other"), "error"), "code", 0), -32601);
	CHECK_INT(json_int(json_get(tl, "other"), "id", 0), 77);
	{
		char *p = json_print(json_get(tl, "roots"));
		CHECK_STR(p, "{\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"result\":{\"roots\":[]}}");
		free(p);
	}
	cJSON_Delete(r);

	r = rpc(h, 3, "tools/call", call_params("sum"), 10000, &err);
	CHECK_MSG(r, "%s", err.msg);
	CHECK_STR(result_text(r), "5");
	cJSON_Delete(r);
	/* a batch with a notification in it */
	r = rpc(h, 4, "tools/call", call_params("batch"), 10000, &err);
	CHECK_MSG(r, "%s", err.msg);
	CHECK_STR(result_text(r), "b");
	cJSON_Delete(r);
	/* the last event of a stream without a blank line after it */
	r = rpc(h, 5, "tools/call", call_params("lastevent"), 10000, &err);
	CHECK_MSG(r, "%s", err.msg);
	cJSON_Delete(r);
	/* a stream kept open after the response: back at once */
	t0 = time_now_ns();
	r = rpc(h, 6, "tools/call", call_params("keepopen"), 15000, &err);
	CHECK_MSG(r, "%s", err.msg);
	CHECK_MSG(time_now_ns() - t0 < 5 * 1000000000LL * slow_factor(), "took %lld ms",
		  (long long)(time_now_ns() - t0) / 1000000);
	cJSON_Delete(r);
	/* a redirect that keeps the origin is followed */
	r = rpc(h, 7, "tools/call", call_params("redirect-same"), 10000, &err);
	CHECK_MSG(r, "%s", err.msg);
	CHECK_STR(result_text(r), "moved");
	cJSON_Delete(r);

	/* the exact requests */
	log = fake_log(&f);
	req = logged(log, "POST", "initialize");
	CHECK(req);
	CHECK(header_of(req, "mcp-session-id") == NULL);
	CHECK(header_of(req, "mcp-protocol-version") == NULL);
	CHECK_STR(header_of(req, "accept"), "application/json, text/event-stream");
	CHECK_STR(header_of(req, "content-type"), "application/json");
	CHECK_STR(header_of(req, "x-test"), "yes");
	CHECK_STR(header_of(req, "authorization"), "Bearer tok");
	req = logged(log, "POST", "tools/list");
	CHECK(req);
	CHECK_STR(header_of(req, "mcp-session-id"), "sess-4f2a");
	CHECK_STR(header_of(req, "mcp-protocol-version"), "2025-06-18");
	CHECK_STR(header_of(req, "x-test"), "yes");
	req = logged(log, "POST", "notifications/initialized");
	CHECK(req && json_get(json_get(req, "body"), "id") == NULL);
	req = logged(log, "POST", "srv-ping"); /* our answer to the ping */
	CHECK(req);
	CHECK_STR(header_of(req, "mcp-session-id"), "sess-4f2a");
	CHECK(cJSON_IsObject(json_get(json_get(req, "body"), "result")));
	CHECK(logged(log, "POST", "77"));
	CHECK(logged(log, "DELETE", NULL) == NULL);
	cJSON_Delete(log);

	/* close ends the session */
	tool__http_close(h);
	log = fake_log(&f);
	req = logged(log, "DELETE", NULL);
	CHECK_MSG(req, "no DELETE");
	CHECK_STR(json_str(req, "path"), "/mcp");
	CHECK_STR(header_of(req, "mcp-session-id"), "sess-4f2a");
	CHECK_STR(header_of(req, "mcp-protocol-version"), "2025-06-18");
	cJSON_Delete(log);
	fake_stop(&f);
}

TEST(http_fake_failures)
{
	static const struct {
		const char *tool;
		int code;
		const char *msg; /* %s: the URL */
	} cases[] = {
	    {"noresp", RLM_EIO, "the stream from '%s' ended without the response to request 10"},
	    {"huge", RLM_EIO, "reply from '%s' larger than 16777216 bytes"},
	    {"error500", RLM_EIO, "HTTP 500 from '%s': <html> [31mboom</html>"},
	    {"garbage", RLM_EIO, "malformed reply from '%s': not JSON: <html>not json</html>"},
	    {"accepted", RLM_EIO, "'%s' accepted request 10 without answering it"},
	    {"redirect-other", RLM_EIO,
	     "'%s' redirects to 'http://127.0.0.2:9/mcp': not "
	     "followed (another host)"},
	    {"redirect-loop", RLM_EIO, "'%s' redirects more than 3 times"},
	    {"nosuch", 0, NULL},
	    {"expire", RLM_EIO, "session expired: '%s' answered HTTP 404"},
	};
	struct fake f;
	struct tool__http *h;
	struct rlm_err err = {0};
	cJSON *r;
	int64_t t0;
	fake_start(&f);
	CHECK_INT(tool__http_open(f.url, NULL, 0, &h, &err), 0);
	r = rpc(h, 1, "initialize", "{}", 10000, &err);
	CHECK_MSG(r, "%s", err.msg);
	cJSON_Delete(r);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		memset(&err, 0, sizeof(err));
		r = rpc(h, 10, "tools/call", call_params(cases[i].tool), 20000, &err);
		if (!cases[i].msg) {
			/* a JSON-RPC error is a response like any other */
			CHECK_MSG(r, "%s: %s", cases[i].tool, err.msg);
			CHECK_INT(json_int(json_get(r, "error"), "code", 0), -32602);
			cJSON_Delete(r);
			continue;
		}
		CHECK_MSG(!r, "%s: a reply", cases[i].tool);
		{
			char *want = xasprintf(cases[i].msg, f.url);
			CHECK_MSG(err.code == cases[i].code && strcmp(err.msg, want) == 0,
				  "%s: %d '%s', want '%s'", cases[i].tool, err.code, err.msg, want);
			free(want);
		}
	}
	/* after the expiry a new initialize gets a new session, and calls
	 * work again */
	r = rpc(h, 11, "initialize", "{}", 10000, &err);
	CHECK_MSG(r, "%s", err.msg);
	cJSON_Delete(r);
	r = rpc(h, 12, "tools/call", call_params("sum"), 10000, &err);
	CHECK_MSG(r, "%s", err.msg);
	cJSON_Delete(r);
	/* a hang ends at the deadline */
	t0 = time_now_ns();
	memset(&err, 0, sizeof(err));
	CHECK(rpc(h, 13, "tools/call", call_params("hang"), 1000, &err) == NULL);
	CHECK_INT(err.code, RLM_ETIMEOUT);
	CHECK_CONTAINS(err.msg, "no answer from '");
	CHECK_MSG(time_now_ns() - t0 < 4 * 1000000000LL * slow_factor(), "took %lld ms",
		  (long long)(time_now_ns() - t0) / 1000000);
	/* a deadline already past sends nothing */
	{
		char *reply = NULL;
		CHECK_INT(tool__http_post(h, "{}", 2, 14, time_now_ns() - 1, &reply, &err),
			  RLM_ETIMEOUT);
		CHECK(reply == NULL);
	}
	tool__http_close(h);
	fake_stop(&f);
}

struct par {
	struct tool__http *h;
	int base, fails;
	char msg[512];
};

static void *par_calls(void *arg)
{
	struct par *p = arg;
	for (int i = 0; i < 20; i++) {
		struct rlm_err err = {0};
		char *body = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
				       "\"params\":{\"name\":\"sum\"}}",
				       p->base + i),
		     *reply = NULL;
		if (tool__http_post(p->h, body, strlen(body), p->base + i,
				    time_now_ns() + 20 * 1000000000LL * slow_factor(), &reply,
				    &err) != 0 ||
		    !strstr(reply, "\"5\"")) {
			p->fails++;
			snprintf(p->msg, sizeof(p->msg), "%s", reply ? reply : err.msg);
		}
		free(body);
		free(reply);
	}
	return NULL;
}

TEST(http_fake_threads_and_refusals)
{
	struct fake f;
	struct tool__http *h;
	struct rlm_err err = {0};
	struct par ps[8];
	pthread_t th[8];
	cJSON *r;
	fake_start(&f);
	CHECK_INT(tool__http_open(f.url, NULL, 0, &h, &err), 0);
	r = rpc(h, 1, "initialize", "{}", 10000, &err);
	CHECK_MSG(r, "%s", err.msg);
	cJSON_Delete(r);
	for (int i = 0; i < 8; i++) {
		ps[i] = (struct par){h, 1000 * (i + 1), 0, ""};
		CHECK(pthread_create(&th[i], NULL, par_calls, &ps[i]) == 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		CHECK_MSG(ps[i].fails == 0, "thread %d: %d failed: %s", i, ps[i].fails, ps[i].msg);
	}
	tool__http_close(h);
	fake_stop(&f);

	/* nothing listening */
	{
		char *url = xasprintf("http://127.0.0.1:%d/mcp", proc_closed_port());
		CHECK_INT(tool__http_open(url, NULL, 0, &h, &err), 0);
		CHECK(rpc(h, 1, "initialize", "{}", 5000, &err) == NULL);
		CHECK_INT(err.code, RLM_EIO);
		CHECK_CONTAINS(err.msg, "cannot reach 'http://127.0.0.1:");
		tool__http_close(h); /* no session: no DELETE */
		free(url);
	}
	/* what open refuses */
	{
		const char *bad_hdr[] = {"X-A: 1\r\nX-B: 2"}, *no_colon[] = {"Bearer"};
		CHECK_INT(tool__http_open("ftp://127.0.0.1/mcp", NULL, 0, &h, &err), RLM_EINVAL);
		CHECK_STR(err.msg, "bad url 'ftp://127.0.0.1/mcp': not an http:// or https:// URL");
		CHECK(h == NULL);
		CHECK_INT(tool__http_open("mcp.example", NULL, 0, &h, &err), RLM_EINVAL);
		CHECK_INT(tool__http_open("http://127.0.0.1:1/", bad_hdr, 1, &h, &err), RLM_EINVAL);
		CHECK_CONTAINS(err.msg, "bad header 'X-A: 1");
		CHECK_INT(tool__http_open("http://127.0.0.1:1/", no_colon, 1, &h, &err),
			  RLM_EINVAL);
		tool__http_close(NULL);
	}
}

/* tests/js, as test_clients.c finds it: RLM_JS_DIR, else under the
 * current directory. */
static char *js_dir(void)
{
	const char *env = getenv("RLM_JS_DIR");
	return xstrdup(env && *env ? env : "tests/js");
}

/* node on PATH, or NULL. */
static char *find_node(void)
{
	const char *path = getenv("PATH");
	char *copy = xstrdup(path ? path : "/usr/bin:/bin"), *save = NULL, *found = NULL;
	for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
		char *p = xasprintf("%s/node", d);
		if (access(p, X_OK) == 0)
			found = p;
		else
			free(p);
	}
	free(copy);
	return found;
}

/* The official server-everything in streamable HTTP mode: initialize,
 * tools/list, tools/call get-sum, by hand, then close (DELETE). */
TEST(http_server_everything)
{
	char *node = find_node(), *js = js_dir(), *index, *port_env, *url;
	const char *argv[4], *env[2];
	struct tool__http *h = NULL;
	struct rlm_err err = {0};
	struct stat st;
	cJSON *r = NULL;
	const cJSON *t;
	int port;
	pid_t pid;
	bool found = false;
	int64_t until;
	if (!node)
		SKIP("node is not on PATH (make deps installs it)");
	index =
	    xasprintf("%s/node_modules/@modelcontextprotocol/server-everything/dist/index.js", js);
	if (stat(index, &st) != 0)
		SKIP("%s is missing: run `make deps` (npm ci in tests/js)", index);
	port = proc_closed_port();
	port_env = xasprintf("PORT=%d", port);
	argv[0] = node;
	argv[1] = index;
	argv[2] = "streamableHttp";
	argv[3] = NULL;
	env[0] = port_env;
	env[1] = NULL;
	/* Its output to /dev/null (it logs every request on stdout, and dies
	 * of EPIPE when that is a pipe no one reads); initialize is tried
	 * until it listens. */
	pid = proc_start(argv, env);
	CHECK_MSG(pid > 0, "server-everything did not start");
	url = xasprintf("http://127.0.0.1:%d/mcp", port);
	CHECK_INT(tool__http_open(url, NULL, 0, &h, &err), 0);
	until = time_now_ns() + 30 * 1000000000LL * slow_factor();
	do {
		memset(&err, 0, sizeof(err));
		r = rpc(h, 1, "initialize",
			"{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{"
			"\"name\":\"rlm-test\",\"version\":\"0\"}}",
			10000, &err);
		if (!r)
			time_sleep_ns(100000000);
	} while (!r && err.code == RLM_EIO && strstr(err.msg, "cannot reach") &&
		 time_now_ns() < until);
	CHECK_MSG(r, "initialize: %s", err.msg);
	CHECK_STR(json_str(json_get(r, "result"), "protocolVersion"), "2025-06-18");
	tool__http_set_version(h, "2025-06-18");
	cJSON_Delete(r);
	CHECK(rpc(h, -1, "notifications/initialized", NULL, 10000, &err) == NULL);
	CHECK_MSG(err.code == 0, "initialized: %s", err.msg);

	r = rpc(h, 2, "tools/list", "{}", 10000, &err);
	CHECK_MSG(r, "tools/list: %s", err.msg);
	cJSON_ArrayForEach(t, json_get(json_get(r, "result"), "tools"))
	{
		found |= strcmp(json_str(t, "name"), "get-sum") == 0;
	}
	CHECK_MSG(found, "no get-sum in tools/list");
	cJSON_Delete(r);

	r = rpc(h, 3, "tools/call", "{\"name\":\"get-sum\",\"arguments\":{\"a\":2,\"b\":3}}", 10000,
		&err);
	CHECK_MSG(r, "tools/call: %s", err.msg);
	CHECK_CONTAINS(result_text(r), "5");
	cJSON_Delete(r);
	/* a JSON-RPC error comes back as a response */
	r = rpc(h, 4, "tools/call", "{\"name\":\"no-such-tool\",\"arguments\":{}}", 10000, &err);
	CHECK_MSG(r, "tools/call: %s", err.msg);
	CHECK(json_get(r, "error") || cJSON_IsTrue(json_get(json_get(r, "result"), "isError")));
	cJSON_Delete(r);

	tool__http_close(h);
	/* the session is gone: a request with it is refused (the server
	 * answers 400 or 404 to a session it does not know) */
	{
		CURL *e = curl_easy_init();
		struct curl_slist *hd = NULL;
		long status = 0;
		hd = curl_slist_append(hd, "Content-Type: application/json");
		hd = curl_slist_append(hd, "Accept: application/json, text/event-stream");
		curl_easy_setopt(e, CURLOPT_URL, url);
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, hd);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS,
				 "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}");
		curl_easy_setopt(e, CURLOPT_TIMEOUT, 10L);
		curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
		{
			struct buf b = BUF_INIT;
			curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
			CHECK_INT(curl_easy_perform(e), CURLE_OK);
			buf_release(&b);
		}
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
		CHECK_MSG(status == 400 || status == 404, "status %ld", status);
		curl_slist_free_all(hd);
		curl_easy_cleanup(e);
	}
	proc_stop(pid);
	free(url);
	free(port_env);
	free(index);
	free(js);
	free(node);
}

/* ---- the tool set over HTTP: config, discovery and calls, end to end ---- */

TEST(http_tool_set_fake)
{
	struct fake f;
	struct tool_set *ts = tool_set_new();
	struct rlm_err err = {0};
	char *cfg, *p;
	cJSON *v, *args, *log;
	const cJSON *req;
	fake_start(&f);
	cfg = xasprintf("{\"mcpServers\": {\"fake\": {\"url\": \"%s\", \"headers\": {\"X-Test\": "
			"\"set\"}}}}",
			f.url);
	CHECK_MSG(tool_set_add_config(ts, cfg, strlen(cfg), "test", &err) == 0, "%s", err.msg);
	v = tool_set_servers_json(ts);
	p = json_print(v);
	CHECK_CONTAINS(p, "\"name\":\"fake\"");
	CHECK_CONTAINS(p, "\"tools\":1");
	CHECK_CONTAINS(p, "\"error\":null");
	free(p);
	cJSON_Delete(v);
	args = parse("{}");
	v = NULL;
	CHECK_MSG(tool_set_call(ts, "fake.sum", args, 0, &v, &err) == 0, "%s", err.msg);
	p = json_print(v);
	CHECK_STR(p, "\"5\"");
	free(p);
	cJSON_Delete(v);
	cJSON_Delete(args);
	tool_set_free(ts);
	/* what the server saw: initialize without a session, the rest with
	 * it and the version negotiated, the caller's header on each, and the
	 * session deleted at the end */
	log = fake_log(&f);
	req = logged(log, "POST", "initialize");
	CHECK(req && header_of(req, "mcp-session-id") == NULL);
	CHECK_STR(header_of(req, "x-test"), "set");
	req = logged(log, "POST", "tools/call");
	CHECK(req);
	CHECK_STR(header_of(req, "mcp-session-id"), "sess-4f2a");
	CHECK_STR(header_of(req, "mcp-protocol-version"), "2025-06-18");
	CHECK_STR(header_of(req, "x-test"), "set");
	req = logged(log, "DELETE", NULL);
	CHECK_MSG(req, "no DELETE at tool_set_free");
	CHECK_STR(header_of(req, "mcp-session-id"), "sess-4f2a");
	cJSON_Delete(log);
	free(cfg);
	fake_stop(&f);
}

/* server-everything over HTTP through the tool set: the three steps and a
 * call, as model code makes them. */
TEST(http_tool_set_server_everything)
{
	char *node = find_node(), *js = js_dir(), *index, *port_env, *cfg, *p;
	const char *argv[4], *env[2];
	struct tool_set *ts;
	struct rlm_err err = {0};
	struct stat st;
	cJSON *v = NULL, *args;
	pid_t pid;
	int port;
	int64_t until;
	if (!node)
		SKIP("node is not on PATH (make deps installs it)");
	index =
	    xasprintf("%s/node_modules/@modelcontextprotocol/server-everything/dist/index.js", js);
	if (stat(index, &st) != 0)
		SKIP("%s is missing: run `make deps` (npm ci in tests/js)", index);
	port = proc_closed_port();
	port_env = xasprintf("PORT=%d", port);
	argv[0] = node;
	argv[1] = index;
	argv[2] = "streamableHttp";
	argv[3] = NULL;
	env[0] = port_env;
	env[1] = NULL;
	pid = proc_start(argv, env);
	CHECK(pid > 0);
	/* wait until it listens */
	until = time_now_ns() + 30 * 1000000000LL * slow_factor();
	for (;;) {
		char msg[256];
		int fd = net_connect("127.0.0.1", port, msg, sizeof(msg));
		if (fd >= 0) {
			close(fd);
			break;
		}
		CHECK_MSG(time_now_ns() < until, "server-everything does not listen: %s", msg);
		time_sleep_ns(100000000);
	}
	cfg = xasprintf("{\"mcpServers\": {\"ev\": {\"type\": \"http\", \"url\": "
			"\"http://127.0.0.1:%d/mcp\"}}}",
			port);
	ts = tool_set_new();
	CHECK_MSG(tool_set_add_config(ts, cfg, strlen(cfg), "test", &err) == 0, "%s", err.msg);
	v = tool_set_search_json(ts, "add two numbers", NULL, 3, &err);
	CHECK_MSG(v, "%s", err.msg);
	CHECK_STR(json_str(cJSON_GetArrayItem(v, 0), "name"), "ev.get-sum");
	cJSON_Delete(v);
	v = tool_set_info_json(ts, "ev.get-sum", &err);
	CHECK_MSG(v, "%s", err.msg);
	p = json_print(json_get(v, "parameters"));
	CHECK_STR(p, "{\"required\":[{\"name\":\"a\",\"type\":\"number\",\"description\":\"First "
		     "number\"},{\"name\":\"b\",\"type\":\"number\",\"description\":\"Second "
		     "number\"}],\"optional\":[]}");
	free(p);
	cJSON_Delete(v);
	v = NULL;
	args = parse("{\"a\": 2, \"b\": 3}");
	CHECK_MSG(tool_set_call(ts, "ev.get-sum", args, 0, &v, &err) == 0, "%s", err.msg);
	p = json_print(v);
	CHECK_CONTAINS(p, "5");
	free(p);
	cJSON_Delete(v);
	cJSON_Delete(args);
	/* a wrong name never reaches the server */
	v = NULL;
	args = parse("{\"a\": 2, \"c\": 3}");
	CHECK_INT(tool_set_call(ts, "ev.get-sum", args, 0, &v, &err), RLM_EINVAL);
	CHECK_CONTAINS(err.msg, "unknown parameter 'c'");
	CHECK(v == NULL);
	cJSON_Delete(args);
	tool_set_free(ts);
	proc_stop(pid);
	free(cfg);
	free(port_env);
	free(index);
	free(js);
	free(node);
}
