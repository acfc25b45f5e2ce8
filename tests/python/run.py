#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# tests/python/run.py BUILD -- run crlm's tests (test_crlm.py) on
# BUILD/librlm.so.0 and close with the line tests/run.sh sums:
# "N passed, N failed, N skipped". On an ASan build (gcc's: the library
# NEEDs libasan) python3 runs again with that runtime preloaded (ASan must
# come first in the process; its leak check is off: python3 itself keeps
# memory to its exit), so that librlm's memory errors under crlm are
# found. Under another sanitizer (libtsan, or clang's, which leaves
# __asan_* and the like undefined for the executable to give) the tests
# are skipped, with a line that says so. A test that runs past TEST_TIMEOUT seconds (120) ends
# the run with every thread's traceback, and no closing line: tests/run.sh
# counts that as a failure. Exits 1 when a test failed.
import faulthandler
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def needed(lib):
    """The NEEDED entries of lib's dynamic section (objdump-free: readelf
    is in binutils, which the build needs anyway)."""
    try:
        out = subprocess.run(['readelf', '-d', lib], capture_output=True, text=True).stdout
    except OSError:
        return []
    return re.findall(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]', out)


def undefined_sanitizer_symbols(lib):
    """The sanitizer runtime's symbols lib uses but does not define: a
    clang -fsanitize build of a shared library does not link the runtime
    (no NEEDED libasan), it expects the executable to have it."""
    try:
        out = subprocess.run(['readelf', '--dyn-syms', '-W', lib], capture_output=True,
                             text=True).stdout
    except OSError:
        return []
    found = []
    for line in out.splitlines():
        # Num: Value Size Type Bind Vis Ndx Name
        f = line.split()
        if len(f) >= 8 and f[6] == 'UND' and \
                re.match(r'__(asan|tsan|ubsan|msan)_', f[7]):
            found.append(f[7].split('@')[0])
    return found


def asan_runtime(lib):
    """The path of the libasan lib NEEDs, as the loader finds it, or None."""
    if not any(re.match(r'libasan\.so', n) for n in needed(lib)):
        return None
    try:
        # without a preload of ours: ldd would list it by path alone
        env = {k: v for k, v in os.environ.items() if k != 'LD_PRELOAD'}
        out = subprocess.run(['ldd', lib], capture_output=True, text=True, env=env).stdout
    except OSError:
        return None
    m = re.search(r'^\s*libasan\.so\S*\s+=>\s+(/\S+)', out, re.M)
    return m.group(1) if m else None


def under_asan(rt):
    """Run this script again with the ASan runtime rt preloaded; returns
    only when exec fails."""
    env = dict(os.environ)
    env['CRLM_TEST_ASAN'] = rt
    env['LD_PRELOAD'] = ' '.join([rt] + ([env['LD_PRELOAD']] if env.get('LD_PRELOAD') else []))
    # python3 keeps memory to its exit: no leak report. UBSan stops at
    # the first error, as the C tests' build does.
    env['ASAN_OPTIONS'] = 'detect_leaks=0:' + env.get('ASAN_OPTIONS', '')
    env['UBSAN_OPTIONS'] = 'print_stacktrace=1:halt_on_error=1:' + env.get('UBSAN_OPTIONS', '')
    sys.stdout.flush()
    try:
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    except OSError as e:
        print('crlm: cannot run %s again under ASan: %s' % (sys.executable, e))


def sanitizer(lib):
    """What makes lib a sanitizer build, as words for a line, or None."""
    san = [n for n in needed(lib) if re.match(r'lib(asan|tsan|ubsan|lsan|msan)', n)]
    if san:
        return ', '.join(san)
    syms = undefined_sanitizer_symbols(lib)
    if syms:
        return 'undefined %s%s' % (', '.join(syms[:3]), ', ...' if len(syms) > 3 else '')
    return None


class _Result(unittest.TextTestResult):
    """Each test under a watchdog: a hang must not stall `make test`."""
    timeout = 120

    def startTest(self, test):
        faulthandler.dump_traceback_later(self.timeout, exit=True)
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        faulthandler.cancel_dump_traceback_later()


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else 'build')
    lib = os.path.join(build, 'librlm.so.0')
    if not os.path.exists(lib):
        print('crlm: %s is not built: skipping the Python tests' % lib)
        print('0 passed, 0 failed, 1 skipped')
        return 0
    san = sanitizer(lib)
    rt = asan_runtime(lib) if san else None
    if rt and os.environ.get('CRLM_TEST_ASAN') != rt:
        under_asan(rt)
    if san and (not rt or os.environ.get('CRLM_TEST_ASAN') != rt):
        print('crlm: %s is a sanitizer build (%s): skipping the Python tests' % (lib, san))
        print('0 passed, 0 failed, 1 skipped')
        return 0
    os.environ['RLM_LIB'] = lib
    if not os.environ.get('RLM_BIN'):
        os.environ['RLM_BIN'] = os.path.join(build, 'rlm')
    # Nothing of the caller's: no key, endpoint or store of theirs.
    for k in list(os.environ):
        if k.startswith(('OPENAI_', 'ANTHROPIC_', 'OPENROUTER_', 'AI_GATEWAY_')) or \
                (k.startswith('RLM_') and k not in ('RLM_LIB', 'RLM_BIN')):
            del os.environ[k]
    sys.path.insert(0, HERE)
    names = sys.argv[2:]
    loader = unittest.defaultTestLoader
    if names:
        suite = loader.loadTestsFromNames(names)
    else:
        suite = loader.discover(HERE, pattern='test_*.py')
    _Result.timeout = int(os.environ.get('TEST_TIMEOUT') or 120)
    res = unittest.TextTestRunner(verbosity=2, stream=sys.stdout,
                                  resultclass=_Result).run(suite)
    failed = len(res.failures) + len(res.errors) + len(res.unexpectedSuccesses)
    skipped = len(res.skipped)
    print('%d passed, %d failed, %d skipped' % (res.testsRun - failed - skipped, failed,
                                                 skipped))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
