#!/bin/sh
# scripts/demo.sh BIN DIR -- the README's main job: generate a 1M-token
# S-NIAH haystack and find its needle with the built-in simulator model.
set -eu
bin=$1
dir=$2
mkdir -p "$dir"
echo "== generating a 1M-token haystack (4 MB) in $dir"
"$bin" bench gen sniah --sizes 1M --n 1 --seed 42 --out "$dir" >/dev/null
line=$(head -n 1 "$dir/sniah.jsonl")
question=$(printf '%s\n' "$line" | sed 's/.*"question":"\([^"]*\)".*/\1/')
expected=$(printf '%s\n' "$line" | sed 's/.*"answer":\["\([^"]*\)"\].*/\1/')
echo "== question: $question"
echo "== rlm solve --context $dir/sniah-1M-0.txt --question '...' (simulator as root and sub-model, repl strategy)"
answer=$("$bin" solve --context "$dir/sniah-1M-0.txt" --question "$question" --verbose 2>"$dir/trace.txt")
# Run again on the same store, the solve is answered from the memo: it
# says so, and --verbose replays the run that made the answer.
memo=$(sed -n 's/^rlm: answered from /answered from /p' "$dir/trace.txt" | head -n 1)
if [ -n "$memo" ]; then
	echo "== $memo"
	echo "== (nothing ran now: the trace below is that run's, replayed from the store)"
fi
echo "== the REPL worker's sandbox (rlm doctor explains it): $(sed -n 's/^rlm: sandbox: //p' "$dir/trace.txt" | head -n 1)"
echo "== every turn's code and output is in $dir/trace.txt; what the REPL showed the model:"
awk '/^--- turn/ { show = ($4 == "output") } /^rlm: / { show = 0 } show' "$dir/trace.txt" | cut -c1-120
echo "answer:   $answer"
echo "expected: $expected"
case "$answer" in
*"$expected"*) echo "== found the needle" ;;
*) echo "== MISSED the needle" >&2; exit 1 ;;
esac
