// SPDX-License-Identifier: MIT
// tests/js/openai_schema_client.mjs -- structured answers (docs/structured.md)
// through the official `openai` JavaScript SDK against `rlm serve`:
// response_format json_schema from the SDK's own zod helper
// (zodResponseFormat, then chat.completions.parse, whose zod schema checks
// the parsed content), a plain nested json_schema (its content printed in
// the summary for the caller to validate with another validator), the same
// streamed, json_object, a schema the model cannot satisfy (an error, 422
// answer_not_valid, never content), a schema that is not JSON Schema (400),
// and /v1/solve with "schema" (a typed answer).
//
// Prints one line of JSON (the summary) on stdout; exits 0 when every check
// passed, 1 when one failed (the reason on stderr), 2 on bad usage.
// tests/test_clients.c runs it; `make deps` installs its node_modules.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const USAGE = `usage: node openai_schema_client.mjs --base-url URL --context-file FILE
                          --question Q --expect ANSWER --schema-file FILE
                          [--api-key KEY] [--timeout SECS]
  --base-url URL      the server, http://127.0.0.1:PORT (env RLM_BASE_URL)
  --api-key KEY       the server's key (env RLM_API_KEY)
  --context-file FILE the context the question is asked about
  --question Q        the question; --expect ANSWER must be in the answers
  --schema-file FILE  a JSON Schema (an object with a string property
                      "answer"): asked for as response_format json_schema;
                      the content is printed as "content" in the summary
  --timeout SECS      per request (default 120)`;

function usage(msg) {
	if (msg)
		process.stderr.write(`openai_schema_client: ${msg}\n`);
	process.stderr.write(USAGE + '\n');
	process.exit(2);
}

let args;
try {
	args = parseArgs({
		options: {
			'base-url': { type: 'string' },
			'api-key': { type: 'string' },
			'context-file': { type: 'string' },
			'schema-file': { type: 'string' },
			question: { type: 'string' },
			expect: { type: 'string' },
			timeout: { type: 'string', default: '120' },
			help: { type: 'boolean', short: 'h' },
		},
	}).values;
} catch (e) {
	usage(e.message);
}
if (args.help) {
	process.stdout.write(USAGE + '\n');
	process.exit(0);
}
let baseURL = args['base-url'] ?? process.env.RLM_BASE_URL;
const apiKey = args['api-key'] ?? process.env.RLM_API_KEY ?? '';
const timeoutMs = Number(args.timeout) * 1000;
if (!baseURL)
	usage('no base URL (--base-url or RLM_BASE_URL)');
for (const k of ['context-file', 'schema-file', 'question', 'expect'])
	if (!args[k])
		usage(`missing --${k}`);
if (!(timeoutMs > 0))
	usage(`bad --timeout '${args.timeout}'`);
baseURL = baseURL.replace(/\/+$/, '');
if (!baseURL.endsWith('/v1'))
	baseURL += '/v1';

const summary = { ok: false, client: 'openai-structured', sdk: null, node: process.version,
		  checks: [], ms: {} };
let step = 'setup';

function done(code, msg) {
	if (msg)
		process.stderr.write(`openai_schema_client: ${step}: ${msg}\n`);
	process.stdout.write(JSON.stringify(summary) + '\n');
	process.exit(code);
}

class CheckFailed extends Error {}

function check(cond, what, got) {
	if (!cond) {
		const shown = got === undefined ? '' : `: got ${JSON.stringify(got)?.slice(0, 600)}`;
		throw new CheckFailed(`${what}${shown}`);
	}
}

async function run(name, fn) {
	const t0 = Date.now();
	step = name;
	await fn();
	summary.ms[name] = Date.now() - t0;
	summary.checks.push(name);
}

let OpenAI, zodResponseFormat, z;
try {
	({ default: OpenAI } = await import('openai'));
	({ zodResponseFormat } = await import('openai/helpers/zod'));
	({ z } = await import('zod'));
	const pkg = new URL('./node_modules/openai/package.json', import.meta.url);
	summary.sdk = 'openai@' + JSON.parse(readFileSync(pkg, 'utf8')).version;
} catch (e) {
	done(1, `cannot load the 'openai' package and its zod helper (run \`make deps\`): ${e.message}`);
}

let context, schema;
try {
	context = readFileSync(args['context-file'], 'utf8');
	schema = JSON.parse(readFileSync(args['schema-file'], 'utf8'));
} catch (e) {
	done(2, `cannot read --context-file or --schema-file: ${e.message}`);
}
const question = args.question, expect = args.expect;
const client = new OpenAI({ baseURL, apiKey: apiKey || 'no-key', maxRetries: 0,
			    timeout: timeoutMs });

// Each request a context of its own (tag), so that no memo answers it.
function request(tag, extra = {}) {
	return { model: 'rlm', messages: [{ role: 'user', content: question }],
		 rlm_context: `${context}\n(${tag})\n`, ...extra };
}

function content(c, label) {
	check(c?.object === 'chat.completion' && c.choices?.length === 1,
	      `${label}: not one chat.completion choice`, c);
	check(c.choices[0].finish_reason === 'stop', `${label}: finish_reason`,
	      c.choices[0].finish_reason);
	const t = c.choices[0].message?.content;
	check(typeof t === 'string', `${label}: content is no string`, t);
	return t;
}

// An API error of status (and code) whose message says says.
async function fails(promise, status, code, says, label) {
	let err = null;
	try {
		const c = await promise;
		err = { status: 200, message: JSON.stringify(c).slice(0, 300) };
	} catch (e) {
		err = e;
	}
	check(err instanceof OpenAI.APIError && err.status === status &&
	      (!code || err.code === code) && String(err.message).includes(says),
	      `${label}: want ${status} ${code ?? ''} saying '${says}'`,
	      err ? `${err.status} ${err.code} ${err.message}` : 'it succeeded');
	return err;
}

try {
	await run('zod_parse', async () => {
		// the SDK's own helper: a strict json_schema, parsed and checked
		// by zod on the client
		const Answer = z.object({
			answer: z.string(),
			evidence: z.array(z.object({ text: z.string(), doc: z.string() })),
			count: z.number().int(),
		});
		const c = await client.chat.completions.parse(request('zod', {
			response_format: zodResponseFormat(Answer, 'answer') }));
		const m = c.choices[0].message;
		check(m.parsed && typeof m.parsed.answer === 'string' &&
		      m.parsed.answer.includes(expect), 'parsed answer', m);
		check(Array.isArray(m.parsed.evidence) && m.parsed.evidence.length >= 1,
		      'parsed evidence', m.parsed);
		check(Answer.safeParse(JSON.parse(m.content)).success, 'content under zod', m.content);
		summary.zod = m.parsed;
	});

	await run('json_schema', async () => {
		const c = await client.chat.completions.create(request('js', {
			response_format: { type: 'json_schema',
					   json_schema: { name: 'findings', schema, strict: false } } }));
		const t = content(c, 'json_schema');
		const v = JSON.parse(t); // throws when it is not JSON
		check(typeof v.answer === 'string' && v.answer.includes(expect), 'answer member', v);
		summary.content = t;
	});

	await run('json_schema_stream', async () => {
		const stream = await client.chat.completions.create(request('st', {
			stream: true, rlm_progress: false,
			response_format: { type: 'json_schema',
					   json_schema: { name: 'findings', schema } } }));
		let text = '', finish = null;
		for await (const chunk of stream) {
			const ch = chunk.choices?.[0];
			if (typeof ch?.delta?.content === 'string')
				text += ch.delta.content;
			if (ch?.finish_reason)
				finish = ch.finish_reason;
		}
		check(finish === 'stop', 'finish_reason', finish);
		const v = JSON.parse(text);
		check(typeof v.answer === 'string' && v.answer.includes(expect), 'streamed answer', v);
		summary.stream_content = text;
	});

	await run('json_object', async () => {
		const c = await client.chat.completions.create(request('jo', {
			response_format: { type: 'json_object' } }));
		const v = JSON.parse(content(c, 'json_object'));
		check(v !== null && typeof v === 'object' && !Array.isArray(v), 'an object', v);
	});

	await run('unsatisfiable', async () => {
		// no integer is >= 5 and <= 3: the solve ends at its limit and the
		// request fails, saying why; no content is given as if valid
		const err = await fails(client.chat.completions.create(request('un', {
			response_format: { type: 'json_schema', json_schema: {
				name: 'n', schema: { type: 'integer', minimum: 5, maximum: 3 } } } })),
			422, 'answer_not_valid', 'never validated', 'unsatisfiable schema');
		summary.unsatisfiable = String(err.message).slice(0, 300);
	});

	await run('bad_schema', async () => {
		await fails(client.chat.completions.create(request('bad', {
			response_format: { type: 'json_schema', json_schema: {
				name: 'n', schema: { type: 'object', required: 'answer' } } } })),
			400, null, 'not valid JSON Schema', 'bad schema');
	});

	await run('solve_schema', async () => {
		const r = await client.post('/solve', { body: {
			question, context: `${context}\n(solve)\n`, schema } });
		check(r?.answer_json === true && r.answer && typeof r.answer === 'object' &&
		      r.answer.answer.includes(expect), '/v1/solve typed answer', r);
	});
} catch (e) {
	if (e instanceof CheckFailed)
		done(1, e.message);
	done(1, `${e?.constructor?.name ?? 'error'}: ${e?.status ?? ''} ${e?.message ?? e}`);
}
summary.ok = true;
done(0);
