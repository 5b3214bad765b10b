#!/usr/bin/env bash
# The real-link evaluation of issue 30, on scripts/netlink.sh (not adz-bench): every tool writes
# through the same shaped link, rounds interleaved, medians in summary.md.
#
#   docs/benchmarks/2026-11-27-real-links/run.sh [-n ROUNDS] [-o OUT] [-r "1gbit 10gbit"]
#                                               [-k "tcp pipe s3"] INPUT...
#
# Sinks, per rate (one namespace each, with MinIO and the TCP sink inside):
#   tcp   the tool's stdout is the TCP socket to the sink (bash's /dev/tcp): kernel buffers only;
#   pipe  stdout is a pipe to `socat -b 1048576` into the same sink (pipe + TCP buffers);
#   s3    adz writes s3://bucket/bench/TOOL.adz on the namespace's MinIO (multipart upload).
# A TCP write ends when the sink has the last byte (the sink's accept-to-last-byte time; bash or
# socat connects as the tool starts); an S3 write when adz exits (the upload completed).
# Tools: S1/S2/S3 with --link auto, S1/S2/S3 with the true --link (the shaped rate), the static
# rungs in $RUNGS, and `zstd -T2 --adapt` (on s3 piped into `adz compress --codec none`, since
# MinIO refuses a PUT without a length; that row carries adz's framing).
# Output: OUT/results.csv (one row per run), OUT/summary.md (medians), OUT/logs/.
# Default OUT: $CACHE/bench/real-links. Use release binaries (cargo build --release -p adz-cli).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
NETLINK="$ROOT/scripts/netlink.sh"
CACHE="${CACHE:-$ROOT/.cache}"
export CACHE
ADZ="${ADZ:-$ROOT/target/release/adz}"
RUNGS="${RUNGS:-lz4:1 zstd:-3 zstd:1 zstd:3 zstd:6}"
PROLONG="${PROLONG:-2}"
ROUNDS=3
OUT="$CACHE/bench/real-links"
RATES="1gbit 10gbit"
SINKS="tcp pipe s3"
while getopts "n:o:r:k:" opt; do
    case "$opt" in
    n) ROUNDS="$OPTARG" ;;
    o) OUT="$OPTARG" ;;
    r) RATES="$OPTARG" ;;
    k) SINKS="$OPTARG" ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[[ $# -gt 0 ]] || {
    echo "usage: run.sh [-n ROUNDS] [-o OUT] [-r RATES] [-k SINKS] INPUT..." >&2
    exit 2
}
[[ -x "$ADZ" ]] || {
    echo "run.sh: $ADZ is missing (cargo build --release -p adz-cli)" >&2
    exit 1
}
if ! command -v zstd >/dev/null || ! command -v socat >/dev/null; then
    echo "run.sh: needs zstd and socat (scripts/deps.sh bench; apt-get install socat)" >&2
    exit 1
fi
inputs=()
for f in "$@"; do inputs+=("$(realpath "$f")"); done

mkdir -p "$OUT/logs"
base="$(mktemp -d "${TMPDIR:-/tmp}/adz-real-links.XXXXXX")"
cleanup() {
    local r
    for r in $RATES; do "$NETLINK" stop "$base/$r" || true; done
    rm -rf "$base"
}
trap cleanup EXIT
declare -A conns link_mb
for r in $RATES; do
    "$NETLINK" start "$base/$r" --rate "$r" --sink discard
    # shellcheck disable=SC1091,SC1090
    link_mb[$r]="$(. "$base/$r/env" && echo "$((${ADZ_LINK_BYTES_PER_S:-0} / 1000000))")"
    [[ "${link_mb[$r]}" -gt 0 ]] || {
        echo "run.sh: rate $r is not shaped; the *-given tools need a shaped rate" >&2
        exit 2
    }
    conns[$r]=0
done

# The compressor's command line for a tool, reading stdin ($IN) and writing stdout.
tool_cmd() {
    local tool="$1" r="$2" given="${link_mb[$2]}MB/s"
    case "$tool" in
    s1-auto) echo "$ADZ compress -s throughput --link auto" ;;
    s2-auto) echo "$ADZ compress -s keep-pace --link auto" ;;
    s3-auto) echo "$ADZ compress -s prolong=$PROLONG --link auto" ;;
    s1-given) echo "$ADZ compress -s throughput --link $given" ;;
    s2-given) echo "$ADZ compress -s keep-pace --link $given" ;;
    s3-given) echo "$ADZ compress -s prolong=$PROLONG --link $given" ;;
    static:*) echo "$ADZ compress --codec ${tool#static:}" ;;
    zstd-adapt) echo "zstd -T2 --adapt -c -q" ;;
    esac
}

tools=(s1-auto s2-auto s3-auto s1-given s2-given s3-given zstd-adapt)
for rung in $RUNGS; do tools+=("static:$rung"); done

echo "round,rate,sink,input,tool,raw_bytes,stored_bytes,seconds,ratio,adz_link" >"$OUT/results.csv"
for round in $(seq 1 "$ROUNDS"); do
    for r in $RATES; do
        for sink in $SINKS; do
            for in in "${inputs[@]}"; do
                for tool in "${tools[@]}"; do
                    cmd="$(tool_cmd "$tool" "$r")"
                    log="$OUT/logs/$round-$r-$sink-$(basename "$in")-${tool//:/_}.log"
                    case "$sink" in
                    tcp | pipe)
                        if [[ "$sink" == tcp ]]; then
                            line="$cmd - - <\"\$0\" >\"/dev/tcp/\$ADZ_SINK_HOST/\$ADZ_SINK_PORT\""
                        else
                            line="$cmd - - <\"\$0\" | socat -b 1048576 -u - \"TCP:\$ADZ_SINK_ADDR\""
                        fi
                        [[ "$tool" == zstd-adapt ]] && line="${line/ - - </ <}"
                        timeout -k 5 900 "$NETLINK" exec "$base/$r" -- bash -c "$line" "$in" 2>"$log"
                        conns[$r]=$((conns[$r] + 1))
                        rec="$("$NETLINK" sink-wait "$base/$r" "${conns[$r]}" 60)"
                        stored="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["bytes"])' "$rec")"
                        secs="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["seconds"])' "$rec")"
                        ;;
                    s3)
                        if [[ "$tool" == zstd-adapt ]]; then
                            line="$cmd <\"\$0\" | $ADZ compress -f --codec none - \"s3://\$ADZ_S3_BUCKET/bench/$tool.adz\""
                        else
                            line="$cmd -f \"\$0\" \"s3://\$ADZ_S3_BUCKET/bench/${tool//:/_}.adz\""
                        fi
                        t0="$(date +%s.%N)"
                        timeout -k 5 900 "$NETLINK" exec "$base/$r" -- bash -c "$line" "$in" 2>"$log"
                        secs="$(python3 -c 'import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 6))' "$t0" "$(date +%s.%N)")"
                        stored="$(grep -Eo -- '-> [0-9]+ bytes' "$log" | grep -Eo '[0-9]+' | tail -1 || true)"
                        ;;
                    esac
                    raw="$(stat -c %s "$in")"
                    adz_link="$(grep -Eo 'link [0-9.]+ [MG]B/s' "$log" | head -1 | cut -d' ' -f2- || true)"
                    ratio="$(python3 -c 'import sys; print(round(int(sys.argv[1]) / int(sys.argv[2]), 4) if sys.argv[2] else "")' "$raw" "${stored:-}")"
                    echo "$round,$r,$sink,$(basename "$in"),$tool,$raw,${stored:-},$secs,$ratio,$adz_link" |
                        tee -a "$OUT/results.csv"
                done
            done
        done
    done
done

python3 - "$OUT/results.csv" >"$OUT/summary.md" <<'EOF'
import csv, statistics, sys
from collections import defaultdict
rows = list(csv.DictReader(open(sys.argv[1])))
cells = defaultdict(list)
for r in rows:
    cells[(r["rate"], r["sink"], r["input"], r["tool"])].append(r)
med = {k: statistics.median(float(r["seconds"]) for r in v) for k, v in cells.items()}
print("# Real links: medians over %d rounds\n" % max(int(r["round"]) for r in rows))
print("| rate | sink | input | tool | seconds | ratio | adz's link |")
print("|---|---|---|---|---|---|---|")
for k in sorted(cells):
    v = cells[k]
    print("| %s | %s | %s | %s | %.3f | %s | %s |" % (*k, med[k], v[0]["ratio"], v[0]["adz_link"]))
print("\nSpeed of S1 auto against: (the other's time / S1 auto's time; targets >= 0.97, >= 0.97, >= 1.03)\n")
print("| rate | sink | input | S1 with the true --link | the best static rung | zstd -T2 --adapt |")
print("|---|---|---|---|---|---|")
for (rate, sink, inp) in sorted({k[:3] for k in cells}):
    g = lambda t: med.get((rate, sink, inp, t))
    statics = {k[3]: s for k, s in med.items() if k[:3] == (rate, sink, inp) and k[3].startswith("static:")}
    best = min(statics, key=statics.get) if statics else None
    a, gv, z = g("s1-auto"), g("s1-given"), g("zstd-adapt")
    # Speed ratios (time of the other over time of S1 auto): >= 0.97 and >= 1.03 are the targets.
    print("| %s | %s | %s | %s | %s | %s |" % (rate, sink, inp,
        "%.3f" % (gv / a) if a and gv else "",
        "%.3f (%s)" % (statics[best] / a, best) if a and best else "",
        "%.3f" % (z / a) if a and z else ""))
EOF
echo "run.sh: $OUT/results.csv and $OUT/summary.md" >&2
