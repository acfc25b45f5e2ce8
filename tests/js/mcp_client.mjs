// SPDX-License-Identifier: MIT
// tests/js/mcp_client.mjs -- the official MCP TypeScript SDK's Client over
// StdioClientTransport against `rlm mcp` (docs/serve.md): it spawns
// `rlm mcp --cache DB --root DIR`, initializes (the SDK's latest protocol
// revision must be the one agreed on), lists the five tools,
// calls `solve` on a context (with a progress token), `load_corpus` on a
// file under the root and `ask` on that corpus, a session (`open_session`,
// `ask` twice with its session_id, `close_session`), then the errors: missing
// arguments, arguments of the wrong type (SEP-1303: input validation
// errors are tool errors) and a path outside the root as tool errors
// (isError), an unknown tool as a JSON-RPC error; last, that it exits 0
// when its input ends (the SDK's close).
//
// Prints one line of JSON (the summary) on stdout; exits 0 when every check
// passed, 1 when one failed (the reason on stderr, with the tail of the
// server's stderr), 2 on bad usage. tests/test_clients.c runs it; `make
// deps` installs its node_modules.
import { readFileSync, realpathSync } from 'node:fs';
import { parseArgs } from 'node:util';

const USAGE = `usage: node mcp_client.mjs --cache DB --root DIR --context-file FILE
                       --question Q --expect ANSWER [--rlm BIN] [--corpus-file FILE]
                       [--timeout SECS]
  --rlm BIN           the rlm binary (env RLM_BIN)
  --cache DB          passed to rlm mcp --cache
  --root DIR          passed to rlm mcp --root
  --context-file FILE solve's context is its text
  --corpus-file FILE  load_corpus loads it (default: --context-file); under --root
  --question Q        the question; --expect ANSWER must be in every answer
  --timeout SECS      per request (default 120)`;

function usage(msg) {
	if (msg)
		process.stderr.write(`mcp_client: ${msg}\n`);
	process.stderr.write(USAGE + '\n');
	process.exit(2);
}

let args;
try {
	args = parseArgs({
		options: {
			rlm: { type: 'string' },
			cache: { type: 'string' },
			root: { type: 'string' },
			'context-file': { type: 'string' },
			'corpus-file': { type: 'string' },
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
const rlmBin = args.rlm ?? process.env.RLM_BIN;
const timeout = Number(args.timeout) * 1000;
if (!rlmBin)
	usage('no rlm binary (--rlm or RLM_BIN)');
for (const k of ['cache', 'root', 'context-file', 'question', 'expect'])
	if (!args[k])
		usage(`missing --${k}`);
if (!(timeout > 0))
	usage(`bad --timeout '${args.timeout}'`);
const question = args.question, expect = args.expect;
const corpusFile = args['corpus-file'] ?? args['context-file'];

const summary = { ok: false, client: 'mcp', sdk: null, node: process.version, server: null,
		  checks: [], ms: {} };
let step = 'setup';
let serverErr = ''; // the tail of rlm mcp's stderr
let serverEnd = null; // how rlm mcp ended, when it has
let client = null;

async function done(code, msg) {
	if (msg) {
		process.stderr.write(`mcp_client: ${step}: ${msg}\n`);
		if (serverEnd)
			process.stderr.write(`mcp_client: rlm mcp has ended (${serverEnd})\n`);
		if (serverErr)
			process.stderr.write(`mcp_client: rlm mcp stderr (tail):\n${serverErr}\n`);
	}
	if (client) {
		const c = client;
		client = null;
		await c.close().catch(() => {});
	}
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

let Client, StdioClientTransport, McpError, LATEST_PROTOCOL_VERSION;
try {
	({ Client } = await import('@modelcontextprotocol/sdk/client/index.js'));
	({ StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js'));
	({ McpError, LATEST_PROTOCOL_VERSION } = await import('@modelcontextprotocol/sdk/types.js'));
	const pkg = new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url);
	summary.sdk = '@modelcontextprotocol/sdk@' + JSON.parse(readFileSync(pkg, 'utf8')).version;
} catch (e) {
	await done(1, `cannot load '@modelcontextprotocol/sdk' (run \`make deps\`): ${e.message}`);
}

let context;
try {
	context = readFileSync(args['context-file'], 'utf8');
} catch (e) {
	await done(2, `cannot read context file '${args['context-file']}': ${e.message}`);
}

function textOf(result) {
	return (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
}

// A successful solve or ask: the answer as text content and in
// structuredContent {run_id, answer, stop, usage, cost_usd}.
function checkAnswer(r, label) {
	check(!r.isError, `${label}: isError`, r);
	check(textOf(r).includes(expect), `${label}: text does not contain '${expect}'`, r.content);
	const s = r.structuredContent;
	check(s && typeof s === 'object', `${label}: no structuredContent`, r);
	check(typeof s.run_id === 'string' && s.run_id.length > 0, `${label}: run_id`, s);
	check(typeof s.answer === 'string' && s.answer.includes(expect), `${label}: answer`, s);
	check(typeof s.stop === 'string', `${label}: stop`, s);
	check(s.usage && typeof s.usage === 'object', `${label}: usage`, s);
	check(typeof s.cost_usd === 'number', `${label}: cost_usd`, s);
}

// A tool error: a result with isError and a text saying what is wrong.
function checkToolError(r, label) {
	check(r.isError === true, `${label}: want isError`, r);
	check(textOf(r).length > 0, `${label}: no text saying what is wrong`, r);
}

const opts = { timeout };
try {
	await run('initialize', async () => {
		const transport = new StdioClientTransport({
			command: rlmBin,
			args: ['mcp', '--cache', args.cache, '--root', args.root],
			env: { ...process.env },
			stderr: 'pipe',
		});
		// Drain it, or a chatty server blocks on a full pipe.
		transport.stderr.on('data', (d) => {
			serverErr = (serverErr + d.toString()).slice(-4000);
		});
		// The revision the server answers initialize with: seen on the
		// way in (the Transport's onmessage, which the client sets).
		let onmessage;
		Object.defineProperty(transport, 'onmessage', {
			configurable: true,
			get: () => onmessage,
			set: (fn) => {
				onmessage = fn && ((msg, extra) => {
					if (typeof msg?.result?.protocolVersion === 'string')
						summary.protocol = msg.result.protocolVersion;
					return fn(msg, extra);
				});
			},
		});
		client = new Client({ name: 'rlm-tests', version: '1.0.0' });
		await client.connect(transport, opts);
		// The child process is not public API: used only to say how the
		// server ended when a check fails.
		transport._process?.on('exit', (code, sig) => {
			serverEnd = sig ? `signal ${sig}` : `exit ${code}`;
		});
		const v = client.getServerVersion();
		check(v && typeof v.name === 'string', 'serverInfo', v);
		summary.server = v;
		check(summary.protocol === LATEST_PROTOCOL_VERSION,
		      `the protocol revision agreed on is not the SDK's latest (${LATEST_PROTOCOL_VERSION})`,
		      summary.protocol);
		check(typeof v.description === 'string' && v.description.length > 0,
		      'serverInfo.description (2025-11-25)', v);
		check(client.getServerCapabilities()?.tools, 'no tools capability',
		      client.getServerCapabilities());
	});

	await run('list_tools', async () => {
		const { tools } = await client.listTools(undefined, opts);
		const names = tools.map((t) => t.name).sort();
		check(JSON.stringify(names) === '["ask","close_session","load_corpus","open_session","solve"]', 'tools', names);
		for (const t of tools)
			check(t.inputSchema?.type === 'object' && typeof t.description === 'string',
			      `tool ${t.name}: inputSchema or description`, t);
		const solve = tools.find((t) => t.name === 'solve');
		check(solve.inputSchema.properties?.question, 'solve: no question property', solve);
		for (const t of tools)
			check(t.execution?.taskSupport === 'forbidden' && typeof t.title === 'string' &&
			      t.outputSchema?.type === 'object',
			      `tool ${t.name}: execution, title or outputSchema`, t);
	});

	await run('call_solve', async () => {
		let progress = 0;
		const r = await client.callTool({ name: 'solve', arguments: { question, context } },
						undefined, { ...opts, onprogress: () => { progress++; } });
		checkAnswer(r, 'solve');
		check(progress >= 1, 'solve with a progress token got no notifications/progress',
		      progress);
		summary.answer = r.structuredContent.answer;
		summary.progress = progress;
	});

	let corpusId;
	await run('load_corpus', async () => {
		const r = await client.callTool({ name: 'load_corpus',
						  arguments: { path: realpathSync(corpusFile) } },
						undefined, opts);
		check(!r.isError, 'load_corpus: isError', r);
		const c = r.structuredContent;
		check(c && typeof c.corpus_id === 'string' && c.corpus_id.length > 0,
		      'load_corpus: structuredContent.corpus_id', r);
		check(c.documents >= 1 && c.bytes > 0 && c.tokens_estimate > 0 &&
		      typeof c.kind === 'string', 'load_corpus: corpus fields', c);
		corpusId = c.corpus_id;
		summary.corpus = c;
	});

	await run('ask', async () => {
		const r = await client.callTool({ name: 'ask',
						  arguments: { corpus_id: corpusId, question } },
						undefined, opts);
		checkAnswer(r, 'ask');
	});

	// A session: open_session over the context, two questions with ask in
	// it (the second answered in the same REPL), close_session; an ask
	// after it is a tool error.
	await run('session', async () => {
		const o = await client.callTool({ name: 'open_session', arguments: { context } },
						undefined, opts);
		check(!o.isError && typeof o.structuredContent?.session_id === 'string' &&
		      o.structuredContent.session_id.startsWith('s-'), 'open_session', o);
		const sid = o.structuredContent.session_id;
		const a1 = await client.callTool({ name: 'ask',
						   arguments: { session_id: sid, question } },
						 undefined, opts);
		checkAnswer(a1, 'ask in the session (1)');
		const a2 = await client.callTool({ name: 'ask',
						   arguments: { session_id: sid, question } },
						 undefined, opts);
		checkAnswer(a2, 'ask in the session (2)');
		check(a2.structuredContent.run_id !== a1.structuredContent.run_id,
		      'the second question is a run of its own', a2.structuredContent);
		const c = await client.callTool({ name: 'close_session',
						  arguments: { session_id: sid } }, undefined, opts);
		check(!c.isError && c.structuredContent?.questions === 2, 'close_session', c);
		checkToolError(await client.callTool({ name: 'ask',
						       arguments: { session_id: sid, question } },
						     undefined, opts), 'ask in a closed session');
	});

	await run('error_missing_arguments', async () => {
		checkToolError(await client.callTool({ name: 'solve', arguments: {} }, undefined, opts),
			       'solve {}');
		checkToolError(await client.callTool({ name: 'ask', arguments: { question } },
						     undefined, opts), 'ask without corpus_id');
	});

	await run('error_invalid_arguments', async () => {
		// SEP-1303: wrong types and values reach the model as tool errors
		checkToolError(await client.callTool({ name: 'solve',
						       arguments: { question: 42, context: 'x' } },
						     undefined, opts), 'solve with a number for question');
		checkToolError(await client.callTool({ name: 'solve',
						       arguments: { question, context: 'x', max_depth: 0 } },
						     undefined, opts), 'solve with max_depth 0');
		checkToolError(await client.callTool({ name: 'load_corpus',
						       arguments: { path: corpusFile, colour: 'red' } },
						     undefined, opts), 'load_corpus with an unknown argument');
		// JSON.stringify writes U+0000 as \u0000: named, never cut short
		const r = await client.callTool({ name: 'solve',
						  arguments: { question: `${question}\u0000 and more`, context } },
						undefined, opts);
		checkToolError(r, 'solve with a NUL in the question');
		check(textOf(r).includes("'question' holds a NUL character"), 'the NUL is named',
		      r.content);
	});

	await run('error_outside_root', async () => {
		checkToolError(await client.callTool({ name: 'load_corpus',
						       arguments: { path: '/etc/hostname' } },
						     undefined, opts), 'load_corpus outside --root');
	});

	await run('error_unknown_tool', async () => {
		let err = null;
		try {
			await client.callTool({ name: 'no_such_tool', arguments: {} }, undefined, opts);
		} catch (e) {
			err = e;
		}
		check(err instanceof McpError, 'an unknown tool did not fail with a JSON-RPC error',
		      err ? String(err) : 'it succeeded');
		check(err.code === -32602 || err.code === -32601, 'JSON-RPC error code', err.code);
		summary.unknown_tool_code = err.code;
	});

	await run('shutdown', async () => {
		// The SDK ends stdin, waits 2 s, then sends SIGTERM: the server
		// should leave on end of input, with status 0.
		const c = client;
		client = null;
		await c.close();
		for (let i = 0; i < 50 && !serverEnd; i++)
			await new Promise((r) => setTimeout(r, 10));
		check(serverEnd === 'exit 0', 'rlm mcp did not exit 0 at the end of its input',
		      serverEnd ?? 'still running');
	});
} catch (e) {
	summary.failed = step;
	// An SDK error says enough; anything else (a bug here) shows its stack.
	await done(1, e instanceof CheckFailed || e instanceof McpError ? e.message
		   : (e?.stack ?? String(e)));
}
summary.ok = true;
await done(0);
