#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# scripts/bench_import.py -- turn the real OOLONG and BrowseComp-Plus files
# into `rlm bench run` datasets (a JSONL of items, each context in a file
# next to it). Standard library only; docs/bench.md, "Real OOLONG and
# BrowseComp-Plus", says where the files come from and what maps to what.
"""usage: bench_import.py oolong ROWS.jsonl [ROWS.jsonl ...] --out DIR
           [--dataset NAME] [--context-len N] [--limit N] [--labels]
       bench_import.py browsecomp QUERIES.jsonl --out DIR [--corpus CORPUS.jsonl]
           [--docs N] [--seed N] [--limit N] [--scorer exact|contains_all]
           [--instruction TEXT]

oolong: rows of oolongbench/oolong-synth (or oolong-real) exported as JSON
lines. Writes DIR/oolong.jsonl, an item per row (answer and answer_type kept
as OOLONG has them, scorer "oolong"), and each context window once, in
DIR/contexts/, however many rows ask about it.

browsecomp: the decrypted queries of Tevatron/browsecomp-plus as JSON lines
(query_id, query, answer, gold_docs, evidence_docs, negative_docs). Writes
DIR/browsecomp.jsonl and a JSONL of documents per query in DIR/docs/: the
query's own documents plus, with --corpus (Tevatron/browsecomp-plus-corpus
as JSON lines), random others up to --docs in all (1000, the paper's), in a
seeded order. The same inputs and options give the same bytes.
"""

import argparse
import hashlib
import json
import os
import random
import re
import sys
import tempfile

PROG = 'bench_import.py'


class Bad(Exception):
    """A problem with the input, said as one line without a traceback."""


def jsonl_rows(path):
    """(line number, object) for each non-blank line of path."""
    try:
        f = open(path, 'r', encoding='utf-8')
    except OSError as e:
        raise Bad("cannot open '%s': %s" % (path, e.strerror))
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                raise Bad('%s:%d: not valid JSON (%s)' % (path, n, e))
            if not isinstance(row, dict):
                raise Bad('%s:%d: not a JSON object' % (path, n))
            yield n, row


def field(row, key, kinds, where):
    v = row.get(key)
    if not isinstance(v, kinds) or isinstance(v, bool) or v == '':
        raise Bad("%s: no '%s' (%s)" % (where, key, kinds_name(kinds)))
    return v


def kinds_name(kinds):
    names = {str: 'a string', int: 'a number', list: 'a list'}
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    return ' or '.join(names.get(k, k.__name__) for k in kinds)


def safe_name(s):
    """A file name for an id: itself when plain, else a digest of it."""
    s = str(s)
    if re.fullmatch(r'[A-Za-z0-9_.-]{1,100}', s) and not s.startswith('.'):
        return s
    return hashlib.sha256(s.encode('utf-8')).hexdigest()[:24]


def write_line(f, obj):
    f.write(json.dumps(obj, ensure_ascii=False, separators=(',', ':')) + '\n')


# ---- OOLONG ----

def import_oolong(args):
    ctx_dir = os.path.join(args.out, 'contexts')
    os.makedirs(ctx_dir, exist_ok=True)
    text_key = 'context_window_text_with_labels' if args.labels else 'context_window_text'
    windows = {}  # window file name -> digest of its text
    items = 0
    out_path = os.path.join(args.out, 'oolong.jsonl')
    with open(out_path, 'w', encoding='utf-8') as out:
        for path in args.rows:
            for n, row in jsonl_rows(path):
                where = '%s:%d' % (path, n)
                if args.dataset and row.get('dataset') != args.dataset:
                    continue
                if args.context_len and row.get('context_len') != args.context_len:
                    continue
                if args.limit and items >= args.limit:
                    break
                rid = field(row, 'id', (str, int), where)
                question = field(row, 'question', str, where)
                answer = field(row, 'answer', (str, list, int), where)
                text = field(row, text_key, str, where)
                wid = row.get('context_window_id')
                if wid is None:
                    wid = 'sha-' + hashlib.sha256(text.encode('utf-8')).hexdigest()[:24]
                name = 'w-%s.txt' % safe_name(wid)
                digest = hashlib.sha256(text.encode('utf-8')).hexdigest()
                if name not in windows:
                    with open(os.path.join(ctx_dir, name), 'w', encoding='utf-8') as f:
                        f.write(text)
                    windows[name] = digest
                elif windows[name] != digest:
                    raise Bad("%s: context window %s differs from an earlier row's"
                              % (where, wid))
                item = {
                    'id': 'oolong-%s' % rid,
                    'suite': 'oolong-%s' % row.get('dataset', 'real'),
                    'question': question,
                    'answer': answer,
                    'context_path': 'contexts/' + name,
                    'format': 'text',
                    'scorer': 'oolong',
                }
                if isinstance(row.get('answer_type'), str) and row['answer_type']:
                    item['answer_type'] = row['answer_type']
                if isinstance(row.get('context_len'), int):
                    item['tokens'] = row['context_len']
                for k in ('dataset', 'task_group', 'task', 'context_window_id', 'input_subset'):
                    if k in row:
                        item['oolong_' + k if k == 'dataset' else k] = row[k]
                write_line(out, item)
                items += 1
    if not items:
        raise Bad('no row matched (--dataset %s, --context-len %s)'
                  % (args.dataset or 'any', args.context_len or 'any'))
    print('%s: %d items over %d context windows' % (out_path, items, len(windows)),
          file=sys.stderr)


# ---- BrowseComp-Plus ----

def own_docs(row, where):
    """The query's documents, evidence first, each docid once."""
    docs, seen = [], set()
    for key in ('evidence_docs', 'gold_docs', 'negative_docs'):
        v = row.get(key, [])
        if not isinstance(v, list):
            raise Bad("%s: '%s' is not a list" % (where, key))
        for i, d in enumerate(v):
            w = '%s: %s[%d]' % (where, key, i)
            if not isinstance(d, dict):
                raise Bad('%s: not an object' % w)
            docid = str(field(d, 'docid', (str, int), w))
            text = field(d, 'text', str, w)
            if docid not in seen:
                seen.add(docid)
                docs.append((docid, text))
    return docs


def corpus_ids(path):
    """The docids of the corpus, in its order."""
    ids = []
    for n, row in jsonl_rows(path):
        ids.append(str(field(row, 'docid', (str, int), '%s:%d' % (path, n))))
    if not ids:
        raise Bad("corpus '%s' is empty" % path)
    return ids


def import_browsecomp(args):
    doc_dir = os.path.join(args.out, 'docs')
    os.makedirs(doc_dir, exist_ok=True)
    queries = []  # (where, row, own docs)
    for n, row in jsonl_rows(args.queries):
        if args.limit and len(queries) >= args.limit:
            break
        where = '%s:%d' % (args.queries, n)
        field(row, 'query_id', (str, int), where)
        field(row, 'query', str, where)
        field(row, 'answer', str, where)
        queries.append((where, row, own_docs(row, where)))
    if not queries:
        raise Bad("no query in '%s'" % args.queries)

    # Which corpus lines each query takes: drawn from its own seed.
    wanted = {}  # corpus line index -> [query index]
    ids = corpus_ids(args.corpus) if args.corpus else []
    for qi, (where, row, docs) in enumerate(queries):
        need = args.docs - len(docs)
        if not ids or need <= 0:
            continue
        own = {d for d, _ in docs}
        rng = random.Random('%d:%s:pick' % (args.seed, row['query_id']))
        order = rng.sample(range(len(ids)), min(len(ids), need + len(own)))
        for i in [i for i in order if ids[i] not in own][:need]:
            wanted.setdefault(i, []).append(qi)

    tmp = Spool(doc_dir, len(queries))
    try:
        for qi, (_, _, docs) in enumerate(queries):
            for docid, text in docs:
                write_line(tmp.append(qi), {'docid': docid, 'text': text})
        if wanted:
            for i, (n, row) in enumerate(jsonl_rows(args.corpus)):
                for qi in wanted.get(i, ()):
                    text = field(row, 'text', str, '%s:%d' % (args.corpus, n))
                    write_line(tmp.append(qi), {'docid': ids[i], 'text': text})
        out_path = os.path.join(args.out, 'browsecomp.jsonl')
        with open(out_path, 'w', encoding='utf-8') as out:
            for qi, (where, row, docs) in enumerate(queries):
                qid = str(row['query_id'])
                name = 'docs/%s.jsonl' % safe_name(qid)
                with tmp.read(qi) as f:
                    n_docs = shuffle_into(f, os.path.join(args.out, name),
                                          random.Random('%d:%s:order' % (args.seed, qid)))
                question = row['query']
                if args.instruction:
                    question += '\n\n' + args.instruction
                item = {
                    'id': 'bcp-%s' % qid,
                    'suite': 'browsecomp-plus',
                    'question': question,
                    'answer': [row['answer']],
                    'context_path': name,
                    'format': 'jsonl',
                    'scorer': args.scorer,
                    'documents': n_docs,
                    'query_id': row['query_id'],
                    'evidence_docids': [str(d['docid']) for d in row.get('evidence_docs', [])],
                    'gold_docids': [str(d['docid']) for d in row.get('gold_docs', [])],
                }
                write_line(out, item)
    finally:
        tmp.close()
    print('%s: %d items; documents from %s' % (out_path, len(queries),
          'the queries and %s' % args.corpus if args.corpus else 'the queries only'),
          file=sys.stderr)


class Spool:
    """One scratch file per query, in a directory of its own under dir, with
    at most MAX_OPEN of them open at once (the least recently used is closed
    and opened again to append): a thousand queries need no thousand file
    descriptors."""

    MAX_OPEN = 64

    def __init__(self, dir, n):
        self.dir = tempfile.mkdtemp(prefix='.bench-import-', dir=dir)
        self.paths = [os.path.join(self.dir, '%d' % i) for i in range(n)]
        self.open = {}  # index -> file, in order of use

    def append(self, i):
        f = self.open.pop(i, None)
        if f is None:
            if len(self.open) >= self.MAX_OPEN:
                self.open.pop(next(iter(self.open))).close()
            f = open(self.paths[i], 'a', encoding='utf-8')
        self.open[i] = f  # the most recently used last
        return f

    def read(self, i):
        """Scratch file i, written, opened to read (the caller closes it)."""
        f = self.open.pop(i, None)
        if f is not None:
            f.close()
        if not os.path.exists(self.paths[i]):
            open(self.paths[i], 'w').close()
        return open(self.paths[i], 'r', encoding='utf-8')

    def close(self):
        for f in self.open.values():
            f.close()
        self.open = {}
        for p in self.paths:
            if os.path.exists(p):
                os.remove(p)
        os.rmdir(self.dir)


def shuffle_into(f, path, rng):
    """Write the lines of f to path in an order drawn from rng; their count."""
    f.seek(0)
    offs = []
    while True:
        at = f.tell()
        line = f.readline()
        if not line:
            break
        offs.append(at)
    rng.shuffle(offs)
    with open(path, 'w', encoding='utf-8') as out:
        for at in offs:
            f.seek(at)
            out.write(f.readline())
    return len(offs)


def main(argv):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split('\n\n', 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='what', required=True)
    o = sub.add_parser('oolong', help='OOLONG rows (oolong-synth, oolong-real)')
    o.add_argument('rows', nargs='+', help='JSON lines of OOLONG rows')
    o.add_argument('--out', required=True, help='the dataset directory (created)')
    o.add_argument('--dataset', help="only rows of this source dataset (the paper's: "
                   'trec_coarse)')
    o.add_argument('--context-len', type=int, help="only rows of this context_len (the "
                   "paper's: 131072)")
    o.add_argument('--limit', type=int, default=0, help='at most this many items')
    o.add_argument('--labels', action='store_true',
                   help='the windows with their labels (context_window_text_with_labels)')
    b = sub.add_parser('browsecomp', help='BrowseComp-Plus queries')
    b.add_argument('queries', help='JSON lines of decrypted queries')
    b.add_argument('--out', required=True, help='the dataset directory (created)')
    b.add_argument('--corpus', help='JSON lines of the corpus {docid, text}, to draw '
                   'random documents from')
    b.add_argument('--docs', type=int, default=1000,
                   help="documents per query with --corpus (1000, the paper's)")
    b.add_argument('--seed', type=int, default=1, help='for the draw and the order (1)')
    b.add_argument('--limit', type=int, default=0, help='only the first N queries')
    b.add_argument('--scorer', choices=('exact', 'contains_all'), default='exact',
                   help='exact: the reply is the answer (normalized); contains_all: the '
                   'reply holds it (exact)')
    b.add_argument('--instruction', default='Reply with the exact answer alone.',
                   help="appended to each query ('' for none)")
    args = ap.parse_args(argv)
    try:
        if args.what == 'oolong':
            import_oolong(args)
        else:
            if args.docs < 1:
                raise Bad('--docs must be at least 1')
            import_browsecomp(args)
    except Bad as e:
        print('%s: error: %s' % (PROG, e), file=sys.stderr)
        return 1
    except OSError as e:
        print('%s: error: %s: %s' % (PROG, e.filename or '', e.strerror), file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
