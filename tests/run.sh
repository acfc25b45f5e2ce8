#!/bin/sh
# tests/run.sh BUILD -- run every test binary in BUILD/tests and close with
# one line "total: N passed, N failed, N skipped" over all of them (a binary
# closes with "N passed, N failed, N skipped", or without the skipped count
# in the older form), then the Python package's tests (tests/python/run.py,
# under ASan with its runtime preloaded, skipped on another sanitizer's
# build). Exits 1 when anything failed. VALGRIND=1
# runs each binary under valgrind memcheck.
set -u
build=${1:-build}
RLM_BIN=$(cd "$build" && pwd)/rlm
export RLM_BIN
passed=0
failed=0
skipped=0
bad=""
for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    echo "== $name"
    out=$(mktemp)
    if [ "${VALGRIND:-0}" = 1 ]; then
        TEST_TIMEOUT=600 valgrind -q --error-exitcode=99 --leak-check=full \
            --errors-for-leak-kinds=definite --trace-children=no "$t" > "$out" 2>&1
    else
        "$t" > "$out" 2>&1
    fi
    rc=$?
    cat "$out"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$out" | tail -n 1)
    rm -f "$out"
    f=0
    if [ -n "$line" ]; then
        # "P passed, F failed[, S skipped]": the numbers are fields 1, 3, 5.
        set -- $line
        passed=$((passed + $1))
        f=$3
        failed=$((failed + f))
        skipped=$((skipped + ${5:-0}))
    fi
    if [ "$rc" != 0 ]; then
        bad="$bad $name"
        # A binary that died before its summary still counts as a failure.
        if [ -z "$line" ] || [ "$f" = 0 ]; then
            failed=$((failed + 1))
        fi
    fi
done
# The Python package crlm on this build's librlm.so.0 (python/, tests/python).
# Only where the build has the library (make test builds it; a directory
# of test binaries alone, as test_harness makes, has none).
if [ -f tests/python/run.py ] && [ -e "$build/librlm.so.0" ]; then
    echo "== python crlm"
    out=$(mktemp)
    /usr/bin/python3 tests/python/run.py "$build" > "$out" 2>&1
    rc=$?
    cat "$out"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$out" | tail -n 1)
    rm -f "$out"
    f=0
    if [ -n "$line" ]; then
        set -- $line
        passed=$((passed + $1))
        f=$3
        failed=$((failed + f))
        skipped=$((skipped + $5))
    fi
    if [ "$rc" != 0 ]; then
        bad="$bad python-crlm"
        if [ -z "$line" ] || [ "$f" = 0 ]; then
            failed=$((failed + 1))
        fi
    fi
fi
if [ -n "$bad" ]; then
    echo "failing binaries:$bad"
fi
echo "total: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
