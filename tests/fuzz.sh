#!/bin/sh
# tests/fuzz.sh BUILD SECONDS -- run each libFuzzer target for SECONDS with
# its seed corpus from tests/corpus/<target>/ (if any). Fails on the first
# target that finds a crash (its log and the crashing input are kept in
# BUILD/fuzz-logs/). Prints "total: N passed, N failed, 0 skipped" last, in
# the form of tests/run.sh's line (a target is never skipped).
set -eu
build=$1
secs=$2
logs="$build/fuzz-logs"
mkdir -p "$logs"
pass=0
fail=0
for f in "$build"/tests/fuzz_*; do
    [ -x "$f" ] || continue
    name=$(basename "$f")
    corpus="$build/corpus/$name"
    mkdir -p "$corpus"
    if [ -d "tests/corpus/$name" ]; then
        cp -n tests/corpus/"$name"/* "$corpus"/ 2>/dev/null || true
    fi
    echo "== $name ($secs s)"
    if "$f" -max_total_time="$secs" -max_len=65536 -print_final_stats=0 \
        -artifact_prefix="$logs/$name-" "$corpus" >"$logs/$name.log" 2>&1; then
        tail -n 1 "$logs/$name.log"
        pass=$((pass + 1))
    else
        tail -n 30 "$logs/$name.log"
        echo "FAIL $name (log: $logs/$name.log)"
        fail=$((fail + 1))
    fi
done
echo "total: $pass passed, $fail failed, 0 skipped"
[ "$fail" = 0 ]
