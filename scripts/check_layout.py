#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# scripts/check_layout.py -- the layout rules of docs/architecture.md, checked
# (`make lint`, CI):
#   includes  no file includes a header of a module above its own (the
#             arrows go down only: the table ALLOWED below), nor another
#             module's internal header (MODULE/*_int.h);
#   symbols   every symbol an object of librlm.a exports carries its
#             module's prefix (`nm` over the archive's objects, whose folder
#             names the module; the table PREFIXES);
#   exports   librlm.so's dynamic symbols are exactly the public API: only
#             the names of EXPORTED, and every function the public headers
#             of PUBLIC_HEADERS declare (docs/api.md).
# Usage: check_layout.py includes
#        check_layout.py symbols OBJECT.o...   (the members of librlm.a)
#        check_layout.py exports build/librlm.so.0
# Prints one line per violation and exits 1 when there is any.
import os
import re
import subprocess
import sys

# What each module may include besides itself: the arrows of
# docs/architecture.md, closed downwards.
BASE = {"common"}
LOW = BASE | {"corpus", "llm", "repl", "store", "tool"}
ALLOWED = {
    "common": set(),
    "llm": BASE,
    "repl": BASE,
    "store": BASE,
    "corpus": BASE,
    "tool": BASE,
    "sim": BASE | {"llm"},
    "rlm": LOW,
    "serve": LOW | {"rlm"},
    "bench": LOW | {"rlm"},
    "api": LOW | {"rlm", "sim"},
    "cli": LOW | {"rlm", "serve", "bench", "sim"},
}
MODULES = list(ALLOWED)

# The prefixes of each module's exported symbols. common/ is a set of small
# helpers, one prefix a file; the error type is the library's own (rlm_err).
PREFIXES = {
    "common": ("buf_", "json_", "text_", "net_", "httpd_", "file_", "time_",
               "thread_", "rng_", "embed_", "log_", "rlm_err", "rlm_strerror", "rlm_log",
               "xmalloc", "xcalloc", "xrealloc", "xstrdup", "xstrndup",
               "xasprintf"),
    "llm": ("llm_",),
    "sim": ("sim_",),
    "repl": ("repl_",),
    "tool": ("tool_",),
    "store": ("store_",),
    "corpus": ("corpus_",),
    "rlm": ("rlm_",),
    "api": ("rlm_api_",),
    "serve": ("serve_", "mcp_"),
    "bench": ("bench_",),
    "cli": ("cli_",),
    "gen": ("embed_", "rlm_"),   # build/gen: the embedded files, the version
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def module_of(path):
    """The module a path (relative to the top) belongs to, or None."""
    top = path.split("/", 1)[0]
    return top if top in ALLOWED else None


def check_includes():
    bad = 0
    for mod in MODULES:
        if not os.path.isdir(mod):
            continue
        for name in sorted(os.listdir(mod)):
            if not name.endswith((".c", ".h")):
                continue
            path = f"{mod}/{name}"
            with open(path, encoding="utf-8") as f:
                for no, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = os.path.normpath(os.path.join(mod, m.group(1)))
                    if not os.path.exists(target):
                        target = os.path.normpath(m.group(1))
                    other = module_of(target)
                    if other is None or other == mod:
                        continue
                    if target.endswith("_int.h"):
                        print(f"{path}:{no}: {mod}/ includes {target}, an "
                              f"internal header of {other}/ (use {other}/'s "
                              f"public header)")
                        bad += 1
                        continue
                    if other in ALLOWED[mod]:
                        continue
                    print(f"{path}:{no}: {mod}/ includes {target} of {other}/, "
                          f"a module above it (allowed: "
                          f"{', '.join(sorted(ALLOWED[mod])) or 'none'})")
                    bad += 1
    return bad


def check_symbols(objects):
    """objects: the members of librlm.a as built, BUILD/obj/MODULE/FILE.o
    (the archive keeps only base names, which do not say the module)."""
    out = subprocess.run(["nm", "-A", "-g", "--defined-only"] + objects,
                         capture_output=True, text=True, check=True).stdout
    bad = 0
    for line in out.splitlines():
        # "build/obj/llm/pool.o:0000000000000000 T llm_pool_new"
        path, _, rest = line.partition(":")
        parts = rest.split()
        if len(parts) != 3:
            continue
        mod = os.path.basename(os.path.dirname(path))
        sym = parts[2]
        if mod not in PREFIXES:
            print(f"{path}: {sym}: object of no known module")
            bad += 1
        elif not sym.startswith(PREFIXES[mod]):
            print(f"{path}: {sym}: exported without the prefix of {mod}/ "
                  f"({', '.join(PREFIXES[mod])})")
            bad += 1
    return bad


# What librlm.so may export (dynamic symbols): the C API of rlm/rlm.h (and
# the corpus/ and error helpers it needs), api/api.h, and the few functions
# below that a C user of rlm.h calls.
EXPORTED_PREFIXES = ("rlm_", "corpus_")
EXPORTED_NAMES = {"store_open", "store_close", "sim_provider_register",
                  "rlm_err_set", "rlm_err_prefix", "rlm_err_clear", "rlm_strerror"}
# Every function these declare (at the start of a line, "type name(") must
# be exported.
PUBLIC_HEADERS = ("rlm/rlm.h", "api/api.h", "corpus/corpus.h")
DECL = re.compile(r"^(?:const\s+)?(?:struct\s+|enum\s+|unsigned\s+)?\w+[\s*]+"
                  r"\**(\w+)\(")


def declared_functions(path):
    names = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith(("typedef", "#", " ", "\t", "/*", " *")):
                continue
            m = DECL.match(line)
            if m:
                names.add(m.group(1))
    return names


def check_exports(solib):
    out = subprocess.run(["nm", "-D", "--defined-only", solib],
                         capture_output=True, text=True, check=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            syms.add(parts[2])
    bad = 0
    for sym in sorted(syms):
        if sym in EXPORTED_NAMES or sym.startswith(EXPORTED_PREFIXES):
            continue
        print(f"{solib}: {sym}: exported but not part of the public API "
              f"(hide it: it is not in a public header's visibility block)")
        bad += 1
    for h in PUBLIC_HEADERS:
        for name in sorted(declared_functions(h)):
            if name not in syms:
                print(f"{solib}: {name}: declared in {h} but not exported "
                      f"(#pragma GCC visibility push(default) around it)")
                bad += 1
    for name in sorted(EXPORTED_NAMES):
        if name not in syms:
            print(f"{solib}: {name}: not exported")
            bad += 1
    return bad


def main(argv):
    if len(argv) == 2 and argv[1] == "includes":
        bad = check_includes()
        what = "include(s) from a module above"
    elif len(argv) >= 3 and argv[1] == "symbols":
        bad = check_symbols(argv[2:])
        what = "exported symbol(s) without their module's prefix"
    elif len(argv) == 3 and argv[1] == "exports":
        bad = check_exports(argv[2])
        what = "symbol(s) of the shared library outside the public API or missing"
    else:
        sys.stderr.write("usage: check_layout.py includes | symbols OBJECT.o... | "
                         "exports LIB.so\n")
        return 2
    if bad:
        print(f"check_layout: {bad} {what}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
