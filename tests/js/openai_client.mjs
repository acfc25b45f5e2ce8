// SPDX-License-Identifier: MIT
// tests/js/openai_client.mjs -- the official `openai` JavaScript SDK against
// `rlm serve`'s OpenAI-compatible endpoint (docs/serve.md): a chat
// completion with the `rlm_context` extension field (a string, and a
// {"path"} when given one), one whose context is the earlier messages, the
// same streamed (SDK chunks, then the raw SSE body to see it end with
// `data: [DONE]`), the runs behind their ids (GET /v1/runs/{id}), a request
// of one user message (context and question), a three-turn conversation in
// one session (rlm_session, then found by its earlier turns),
// models.list, and the error shapes (an unknown model: 404 model_not_found;
// fields a solve cannot honour, as tools or n > 1: 400; a wrong key, a path
// outside the roots) as the SDK's typed errors.
//
// Prints one line of JSON (the summary) on stdout; exits 0 when every check
// passed, 1 when one failed (the reason on stderr), 2 on bad usage.
// tests/test_clients.c runs it; `make deps` installs its node_modules.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const USAGE = `usage: node openai_client.mjs --base-url URL --context-file FILE
                          --question Q --expect ANSWER [--api-key KEY]
                          [--context-path PATH] [--timeout SECS]
  --base-url URL      the server, http://127.0.0.1:PORT (a trailing /v1 is optional);
                      env RLM_BASE_URL
  --api-key KEY       the server's key (env RLM_API_KEY); with one, a wrong key
                      must get 401
  --context-file FILE the context the question is asked about
  --context-path PATH also ask with rlm_context {"path": PATH} (a file under
                      the server's --root, as the server sees it), and with
                      a path outside it (403)
  --question Q        the question; --expect ANSWER must be in every answer
  --timeout SECS      per request (default 120)`;

function usage(msg) {
	if (msg)
		process.stderr.write(`openai_client: ${msg}\n`);
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
			'context-path': { type: 'string' },
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
for (const k of ['context-file', 'question', 'expect'])
	if (!args[k])
		usage(`missing --${k}`);
if (!(timeoutMs > 0))
	usage(`bad --timeout '${args.timeout}'`);
baseURL = baseURL.replace(/\/+$/, '');
if (!baseURL.endsWith('/v1'))
	baseURL += '/v1';

const summary = { ok: false, client: 'openai', sdk: null, node: process.version,
		  base_url: baseURL, checks: [], ms: {} };
let step = 'setup';

function done(code, msg) {
	if (msg)
		process.stderr.write(`openai_client: ${step}: ${msg}\n`);
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

// Run one named step, timing it; the first failure ends the run.
async function run(name, fn) {
	const t0 = Date.now();
	step = name;
	await fn();
	summary.ms[name] = Date.now() - t0;
	summary.checks.push(name);
}

// An error's message and its causes' ("fetch failed: other side closed").
function causes(e) {
	const parts = [];
	for (let c = e; c && parts.length < 5; c = c.cause)
		parts.push(c.message ?? String(c));
	return parts.join(': ');
}

let OpenAI;
try {
	({ default: OpenAI } = await import('openai'));
	const pkg = new URL('./node_modules/openai/package.json', import.meta.url);
	summary.sdk = 'openai@' + JSON.parse(readFileSync(pkg, 'utf8')).version;
} catch (e) {
	done(1, `cannot load the 'openai' package (run \`make deps\`): ${e.message}`);
}

let context;
try {
	context = readFileSync(args['context-file'], 'utf8');
} catch (e) {
	done(2, `cannot read context file '${args['context-file']}': ${e.message}`);
}
const question = args.question, expect = args.expect;

// The server needs no key when it was started without one; the SDK wants
// some string all the same.
const client = new OpenAI({ baseURL, apiKey: apiKey || 'no-key', maxRetries: 0,
			    timeout: timeoutMs });

function checkCompletion(c, label) {
	check(c && c.object === 'chat.completion', `${label}: object is not chat.completion`, c?.object);
	check(typeof c.id === 'string' && c.id.startsWith('chatcmpl-'),
	      `${label}: id does not start with chatcmpl-`, c.id);
	check(Array.isArray(c.choices) && c.choices.length === 1, `${label}: want one choice`,
	      c.choices);
	const ch = c.choices[0];
	check(ch.message?.role === 'assistant', `${label}: message role`, ch.message?.role);
	check(typeof ch.message.content === 'string' && ch.message.content.includes(expect),
	      `${label}: answer does not contain '${expect}'`, ch.message.content);
	check(ch.finish_reason === 'stop', `${label}: finish_reason`, ch.finish_reason);
	const u = c.usage;
	// answered from the solve memo (the same question over the same
	// context as an earlier check): it spent nothing, and says whose
	// answer it is
	const memo = typeof c.rlm?.memo_run === 'string';
	check(u && (memo ? u.prompt_tokens === 0 : u.prompt_tokens > 0) &&
	      u.completion_tokens >= 0 &&
	      u.total_tokens === u.prompt_tokens + u.completion_tokens,
	      `${label}: usage${memo ? ' (answered from the memo)' : ''}`, u);
}

// A streamed request on a context of its own (tag: a line added at its
// end), so that neither the solve memo nor the call cache can answer it.
function streamRequest(tag, extra = {}) {
	return { model: 'rlm', messages: [{ role: 'user', content: question }],
		 rlm_context: `${context}\n(${tag})\n`, stream: true, ...extra };
}

// Read a stream from the SDK: every chunk checked, the text and the
// progress lines collected.
async function readStream(stream, label, usageAsked) {
	const got = { text: '', reasoning: '', n: 0, id: null, role: null, finish: null,
		      usage: null, reasoningChunks: 0 };
	for await (const chunk of stream) {
		got.n++;
		check(chunk.object === 'chat.completion.chunk', `${label}: chunk ${got.n}: object`,
		      chunk);
		check(typeof chunk.id === 'string' && chunk.id.startsWith('chatcmpl-'),
		      `${label}: chunk ${got.n}: id`, chunk.id);
		if (got.id === null)
			got.id = chunk.id;
		check(chunk.id === got.id, `${label}: chunk ${got.n}: id changed from ${got.id}`,
		      chunk.id);
		check(got.usage === null, `${label}: a chunk after the usage chunk`, chunk);
		if (Array.isArray(chunk.choices) && chunk.choices.length === 0) {
			check(usageAsked && chunk.usage && chunk.usage.prompt_tokens > 0,
			      `${label}: a chunk without choices that is not the usage chunk`, chunk);
			got.usage = chunk.usage;
			continue;
		}
		check(Array.isArray(chunk.choices) && chunk.choices.length === 1,
		      `${label}: chunk ${got.n}: want one choice`, chunk.choices);
		check(usageAsked ? chunk.usage === null : chunk.usage === undefined,
		      `${label}: chunk ${got.n}: usage`, chunk.usage);
		check(got.finish === null, `${label}: a choice after the finish_reason chunk`, chunk);
		const ch = chunk.choices[0];
		if (got.n === 1)
			got.role = ch.delta?.role;
		if (typeof ch.delta?.reasoning_content === 'string') {
			check(got.text === '', `${label}: progress after the answer began`, chunk);
			got.reasoning += ch.delta.reasoning_content;
			got.reasoningChunks++;
		}
		if (typeof ch.delta?.content === 'string')
			got.text += ch.delta.content;
		if (ch.finish_reason)
			got.finish = ch.finish_reason;
	}
	check(got.n >= 2, `${label}: too few chunks`, got.n);
	check(got.role === 'assistant', `${label}: first chunk: delta.role`, got.role);
	check(got.text.includes(expect), `${label}: streamed answer does not contain '${expect}'`,
	      got.text);
	check(got.finish === 'stop', `${label}: no chunk with finish_reason "stop"`, got.finish);
	check(!usageAsked || got.usage, `${label}: no usage chunk`, got);
	return got;
}

// The run behind a completion id solved live: calls made, no memo.
async function checkLive(id, label) {
	const r = await client.get(`/runs/${encodeURIComponent(id.slice(9))}`);
	check(r?.result?.cache?.memo_hits === 0 && r.result.calls.total > r.result.calls.cached,
	      `${label}: the run was not solved live`, r?.result);
}

try {
	await run('chat_rlm_context', async () => {
		const c = await client.chat.completions.create({
			model: 'rlm',
			messages: [{ role: 'user', content: question }],
			rlm_context: context, // the extension field (docs/serve.md)
			// today's OpenAI fields: accepted, ignored where they mean
			// nothing to a solve
			temperature: 0,
			user: 'rlm-tests',
			safety_identifier: 'rlm-tests',
			prompt_cache_key: 'rlm-tests',
			verbosity: 'low',
			reasoning_effort: 'low',
			metadata: { suite: 'rlm' },
			store: false,
			service_tier: 'auto',
			seed: 7,
		});
		checkCompletion(c, 'rlm_context');
		summary.answer = c.choices[0].message.content;
		summary.id = c.id;
	});

	await run('chat_messages_context', async () => {
		const c = await client.chat.completions.create({
			model: 'rlm',
			messages: [
				{ role: 'system', content: 'Answer from the document below.' },
				{ role: 'user', content: context },
				{ role: 'user', content: question },
			],
		});
		checkCompletion(c, 'earlier messages as context');
	});

	await run('chat_stream', async () => {
		const got = await readStream(await client.chat.completions.create(streamRequest('s1')),
					     'stream', false);
		check(got.reasoningChunks >= 2 &&
		      got.reasoning.includes('Turn 1: the root model is thinking.\n') &&
		      got.reasoning.includes('running code: '),
		      'stream: progress as reasoning_content before the answer', got.reasoning);
		await checkLive(got.id, 'stream');
		summary.stream_chunks = got.n;
		summary.stream_progress = got.reasoning.split('\n').slice(0, 4);
		summary.stream_id = got.id;
	});

	await run('chat_stream_usage_no_progress', async () => {
		const got = await readStream(await client.chat.completions.create(
			streamRequest('s2', { rlm_progress: false,
					       stream_options: { include_usage: true } })),
					     'stream without progress', true);
		check(got.reasoningChunks === 0, 'rlm_progress false: reasoning_content sent',
		      got.reasoning);
		check(got.usage.total_tokens === got.usage.prompt_tokens + got.usage.completion_tokens,
		      'usage totals', got.usage);
		await checkLive(got.id, 'stream without progress');
	});

	await run('runs_of_ids', async () => {
		// The id is chatcmpl-<run id>: the solve API knows both runs (a
		// custom request, as the SDK's README shows them).
		for (const id of [summary.id, summary.stream_id]) {
			const r = await client.get(`/runs/${encodeURIComponent(id.slice(9))}`);
			check(r && r.run_id === id.slice(9) && r.status === 'done', `GET /v1/runs for ${id}`,
			      r);
			check(typeof r.answer === 'string' && r.answer.includes(expect),
			      `run ${r.run_id}: answer`, r.answer);
		}
	});

	await run('chat_stream_raw', async () => {
		// The SDK ends its iteration quietly on EOF, [DONE] or not: read the
		// bytes the SDK received to see the stream end as OpenAI's does.
		const res = await client.chat.completions.create(streamRequest('s3')).asResponse();
		check(res.status === 200, 'status', res.status);
		check((res.headers.get('content-type') ?? '').startsWith('text/event-stream'),
		      'content-type', res.headers.get('content-type'));
		const body = await res.text();
		const data = body.split('\n').filter((l) => l.startsWith('data:'))
			.map((l) => l.slice(5).trim());
		check(data.length >= 3, 'too few data lines', body);
		check(data[data.length - 1] === '[DONE]', 'the last data line is not [DONE]',
		      body.slice(-300));
		check(data.indexOf('[DONE]') === data.length - 1, 'data after [DONE]', body.slice(-300));
		for (const d of data.slice(0, -1))
			JSON.parse(d); // throws on a line that is not JSON
		check(/\n\n$/.test(body), 'the body does not end with a blank line', body.slice(-40));
	});

	await run('models_list', async () => {
		const ids = [];
		for await (const m of client.models.list()) {
			check(m.object === 'model' && typeof m.id === 'string', 'model entry', m);
			ids.push(m.id);
		}
		check(ids.includes('rlm'), "no model 'rlm'", ids);
		summary.models = ids;
	});

	await run('error_unknown_model', async () => {
		let err = null;
		try {
			await client.chat.completions.create({
				model: 'no-such-model-xyz', rlm_context: 'x',
				messages: [{ role: 'user', content: 'q?' }] });
		} catch (e) {
			err = e;
		}
		check(err instanceof OpenAI.NotFoundError,
		      'an unknown model did not fail with NotFoundError (404), as OpenAI does',
		      err ? `${err.status} ${err.message}` : 'it succeeded');
		check(err.code === 'model_not_found' && err.param === 'model' &&
		      typeof err.error?.message === 'string' && err.error.message.length > 0,
		      'error body', err.error);
	});

	await run('error_unsupported', async () => {
		// fields whose meaning a solve cannot honour are refused, by name
		for (const [field, value] of [['tools', [{ type: 'function', function: { name: 'f' } }]],
					      ['n', 2],
					      ['response_format', 'json']]) {
			let err = null;
			try {
				await client.chat.completions.create({
					model: 'rlm', rlm_context: 'x', [field]: value,
					messages: [{ role: 'user', content: 'q?' }] });
			} catch (e) {
				err = e;
			}
			check(err instanceof OpenAI.BadRequestError &&
			      err.type === 'invalid_request_error' && err.code === 'invalid_request' &&
			      err.param === null && err.message.includes(`${field}:`),
			      `${field} was not refused with a 400 naming it`,
			      err ? `${err.status} ${err.message}` : 'it succeeded');
		}
	});

	if (apiKey) {
		await run('error_wrong_key', async () => {
			const bad = new OpenAI({ baseURL, apiKey: apiKey + 'x', maxRetries: 0,
						 timeout: timeoutMs });
			let err = null;
			try {
				await bad.models.list();
			} catch (e) {
				err = e;
			}
			check(err instanceof OpenAI.AuthenticationError,
			      'a wrong key did not fail with AuthenticationError (401)',
			      err ? `${err.status} ${err.message}` : 'it succeeded');
			check(err.type === 'authentication_error' && err.code === 'unauthorized',
			      'error type', err.error);
		});
	}

	// One user message: the context, with the question at its end; the
	// answer comes in a session the response names.
	await run('chat_one_message', async () => {
		const c = await client.chat.completions.create({
			model: 'rlm',
			messages: [{ role: 'user', content: `${context}\n(one message)\n\n${question}` }],
		});
		// the right answer: the model read the question off the end of
		// the context
		checkCompletion(c, 'one message');
		check(typeof c.rlm_session === 'string' && c.rlm_session.startsWith('s-'),
		      'one message: rlm_session', c.rlm_session);
	});

	// Three turns of one conversation: the second names its session with
	// rlm_session, the third is found by its earlier turns; all three in
	// one session, which GET /v1/sessions/ID shows.
	await run('chat_session_three_turns', async () => {
		const messages = [{ role: 'system', content: `${context}\n(conversation)\n` },
				  { role: 'user', content: question }];
		const c1 = await client.chat.completions.create({ model: 'rlm', messages });
		checkCompletion(c1, 'turn 1');
		const sid = c1.rlm_session;
		check(typeof sid === 'string' && sid.startsWith('s-'), 'turn 1: rlm_session', sid);
		messages.push(c1.choices[0].message, { role: 'user', content: `${question} (again)` });
		const c2 = await client.chat.completions.create({ model: 'rlm', messages,
								  rlm_session: sid });
		checkCompletion(c2, 'turn 2');
		check(c2.rlm_session === sid, 'turn 2: another session', c2.rlm_session);
		messages.push(c2.choices[0].message,
			      { role: 'user', content: `${question} (a third time)` });
		const c3 = await client.chat.completions.create({ model: 'rlm', messages });
		checkCompletion(c3, 'turn 3');
		check(c3.rlm_session === sid, 'turn 3: not found by its earlier turns',
		      c3.rlm_session);
		const r = await fetch(`${baseURL}/sessions/${sid}`,
				      { headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : {} });
		const j = await r.json();
		check(r.ok && j.questions === 3 && j.history?.length === 3 && j.pid > 0,
		      'GET /v1/sessions/ID after three turns', j);
	});

	if (args['context-path']) {
		await run('chat_rlm_context_path', async () => {
			const c = await client.chat.completions.create({
				model: 'rlm',
				messages: [{ role: 'user', content: question }],
				rlm_context: { path: args['context-path'] },
			});
			checkCompletion(c, 'rlm_context {path}');
		});

		await run('error_path_outside_root', async () => {
			let err = null;
			try {
				await client.chat.completions.create({
					model: 'rlm', rlm_context: { path: '/etc/hostname' },
					messages: [{ role: 'user', content: 'q?' }] });
			} catch (e) {
				err = e;
			}
			check(err instanceof OpenAI.PermissionDeniedError,
			      'a path outside the roots did not fail with PermissionDeniedError (403)',
			      err ? `${err.status} ${err.message}` : 'it succeeded');
			check(err.type === 'permission_error' && err.code === 'forbidden',
			      'error type', err.error);
		});
	}
} catch (e) {
	let msg = e instanceof CheckFailed ? e.message : (e?.stack ?? String(e));
	if (e instanceof OpenAI.APIError)
		msg = `${e.constructor.name} status=${e.status} error=${JSON.stringify(e.error)}: ` +
		      causes(e);
	summary.failed = step;
	done(1, msg);
}
summary.ok = true;
done(0);
