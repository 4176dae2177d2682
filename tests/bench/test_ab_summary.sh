#!/usr/bin/env bash
# bench/ab_summary.sh: the medians, ranges and ratios of made-up rounds (odd and even counts, out of
# order, a case only one side timed, a failed case), then over two real rounds a side of
# `switchyard bench --backend cpu --quick`, whose every ok case it must list.
#   test_ab_summary.sh SUMMARY_SCRIPT SWITCHYARD_BINARY
set -uo pipefail
summary=${1:?usage: test_ab_summary.sh SUMMARY_SCRIPT SWITCHYARD_BINARY}
sy=${2:?usage: test_ab_summary.sh SUMMARY_SCRIPT SWITCHYARD_BINARY}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
expect() { # description, pattern, text
  if grep -qE "$2" <<<"$3"; then echo "ok: $1"; else echo "FAIL: $1 (no line matching '$2' in:)"; echo "$3"; fail=1; fi
}
row() { printf '%-46s %-8s %14s %9s %9s\n' "$1" "$2" "$3" 1.0 1.0; }
header='case                                           status          median_us      GB/s   TFLOP/s'
mkdir -p "$work/made"
# case x: A 30 10 20 (median 20, 10-30), B 41 39 40 38 (median 39.5, 38-41); y: A only; z: failed on B
for r in 1 2 3; do
  a=(0 30 10 20)
  { echo "$header"; row x.case ok "${a[$r]}"; row y.only_a ok 5; row z.case ok 100; } > "$work/made/bench-a-$r.txt"
done
for r in 1 2 3 4; do
  b=(0 41 39 40 38)
  { echo "$header"; row x.case ok "${b[$r]}"; row z.case failed -; } > "$work/made/bench-b-$r.txt"
done
out=$(bash "$summary" "$work/made")
expect "x: medians, ranges, rounds and B / A" '^x\.case +3/4 +20\.0 +10\.0-30\.0 +39\.5 +38\.0-41\.0 +1\.975$' "$out"
if grep -qE '^(y\.only_a|z\.case) ' <<<"$out"; then echo "FAIL: a case one side did not time is listed"; echo "$out"; fail=1
else echo "ok: cases one side did not time are left out"; fi
bash "$summary" "$work/nothing" >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] && echo "ok: a folder without rounds is a usage error" || { echo "FAIL: exit $rc for a folder without rounds"; fail=1; }

mkdir -p "$work/real"
for r in 1 2; do
  for side in a b; do
    "$sy" bench --backend cpu --quick --runs 50 --warmup 1 --case norm. > "$work/real/bench-$side-$r.txt" 2>&1 ||
      { echo "FAIL: switchyard bench exited $?"; cat "$work/real/bench-$side-$r.txt"; fail=1; }
  done
done
out=$(bash "$summary" "$work/real")
cases=$(awk '$2 == "ok" && $1 ~ /^norm\./ {print $1}' "$work/real/bench-a-1.txt")
[ -n "$cases" ] || { echo "FAIL: the real bench timed no norm case"; fail=1; }
for c in $cases; do
  expect "real round: $c" "^${c//./\\.} +2/2 +[0-9]+\.[0-9] +[0-9.]+-[0-9.]+ +[0-9]+\.[0-9] +[0-9.]+-[0-9.]+ +[0-9]+\.[0-9]{3}$" "$out"
done
exit $fail
