#!/bin/sh
# tests/fuzz.sh BUILD SECONDS -- run each libFuzzer target for SECONDS with
# its seed corpus from tests/corpus/<target>/ (if any).
set -eu
build=$1
secs=$2
for f in "$build"/tests/fuzz_*; do
    [ -x "$f" ] || continue
    name=$(basename "$f")
    corpus="$build/corpus/$name"
    mkdir -p "$corpus"
    if [ -d "tests/corpus/$name" ]; then
        cp -n tests/corpus/"$name"/* "$corpus"/ 2>/dev/null || true
    fi
    echo "== $name ($secs s)"
    "$f" -max_total_time="$secs" -max_len=65536 -print_final_stats=0 "$corpus" 2>&1 | tail -n 3
done
