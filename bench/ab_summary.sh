#!/usr/bin/env bash
# The per-case summary of an A/B run of bench/library_ab.sh: for each case both sides timed, the
# median over the rounds of each side's median_us, the range over the rounds, and B / A.
#   bench/ab_summary.sh OUT_DIR
# Reads OUT_DIR/bench-{a,b}-ROUND.txt (switchyard bench's table: case, status, median_us, ...);
# cases are listed in the order of the first round. A median over rounds, not one round's best:
# one machine's timings move by several percent from process to process.
set -euo pipefail
out=${1:?usage: bench/ab_summary.sh OUT_DIR}
shopt -s nullglob
files=("$out"/bench-a-*.txt "$out"/bench-b-*.txt)
[ ${#files[@]} -gt 0 ] || { echo "ab_summary: no bench-a-*.txt or bench-b-*.txt in $out" >&2; exit 2; }
awk '
# the numbers of a space-separated list into v[1..n], ascending; returns n
function sorted(list, v,   n, i, j, t) {
    n = split(list, v, " ")
    for (i = 2; i <= n; i++)
        for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
    return n
}
function median(v, n) { return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
FNR == 1 { side = FILENAME; sub(/.*\/bench-/, "", side); side = substr(side, 1, 1) }
$2 == "ok" && $3 ~ /^[0-9.]+$/ {
    if (!($1 in seen)) { seen[$1] = 1; order[++cases] = $1 }
    times[side, $1] = times[side, $1] " " $3
}
END {
    printf "%-50s %6s %10s %21s %10s %21s %7s\n", "case", "rounds", "A median", "A range", "B median", "B range", "B / A"
    for (c = 1; c <= cases; c++) {
        k = order[c]
        if (!(("a", k) in times) || !(("b", k) in times)) continue
        na = sorted(times["a", k], a); nb = sorted(times["b", k], b)
        printf "%-50s %3d/%-2d %10.1f %10.1f-%-10.1f %10.1f %10.1f-%-10.1f %7.3f\n", k, na, nb,
               median(a, na), a[1], a[na], median(b, nb), b[1], b[nb], median(b, nb) / median(a, na)
    }
}' "${files[@]}"
