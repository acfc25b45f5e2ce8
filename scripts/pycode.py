# SPDX-License-Identifier: MIT
# scripts/pycode.py -- the REPL runtime and the zygote compiled at build
# time, so that a worker started cold unmarshals its code (0.5 ms) instead
# of compiling 116 KB of Python (28 ms on the build machine).
#
# usage: pycode.py OUT RUNTIME.py ZYGOTE.py
#
# OUT: the interpreter's bytecode magic (4 bytes), then for each file its
# source's length and FNV-1a 32 hash and its marshalled code's length
# (three 4-byte big-endian numbers), then the two codes. The controller
# (repl/code.c) uses a code only when its source is the one embedded
# beside it, and a worker only when its interpreter's magic is this one;
# anything else compiles the source, as before. Run by the Makefile with
# $(PYTHON); a build without a python3 writes an empty OUT (no codes).
import importlib.util
import marshal
import os
import sys


def fnv1a(data):
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def main(argv):
    out, files = argv[1], argv[2:]
    head, codes = [importlib.util.MAGIC_NUMBER], []
    for path, name in zip(files, ('<string>', '<zygote>')):
        with open(path, 'rb') as f:
            src = f.read()
        code = marshal.dumps(compile(src, name, 'exec', dont_inherit=True))
        head += [n.to_bytes(4, 'big') for n in (len(src), fnv1a(src), len(code))]
        codes.append(code)
    with open(out + '.tmp', 'wb') as f:
        f.write(b''.join(head + codes))
    os.replace(out + '.tmp', out)


if __name__ == '__main__':
    main(sys.argv)
