#!/usr/bin/env bash
# Issue 30's evaluation of S1 `--link auto` on real links (decision 0048): S1 auto against S1
# with the true --link, the static rungs and `zstd -T2 --adapt`, rounds interleaved.
#
#   docs/benchmarks/2026-11-27-real-links-2/run.sh [-n ROUNDS] [-o OUT] [-k SINKS] INPUT...
#
# Sinks (SINKS, default "tcp s3 pv throttle"):
#   tcp       stdout is a TCP socket to the sink of a scripts/netlink.sh namespace at 1gbit
#             (125 MB/s); the write ends when the sink has the last byte;
#   s3        s3://bucket/bench/TOOL.adz on that namespace's MinIO; ends when adz exits
#             (zstd is piped into `adz compress --codec none`, as MinIO needs a length);
#   pv        stdout piped into `pv -q -L 117m >/dev/null` (117 MiB/s = 122.7 MB/s); wall time;
#   throttle  adz's own `--throttle 125MB/s` to /dev/null (no zstd row: it is adz's decorator).
# S1 auto runs write a --trace (OUT/logs/*.trace) for the estimate after 64 MiB.
# Env: ADZ (the adz binary), TOOLS (default "s1-auto s1-given zstd-adapt"), RUNGS (the static
# rungs, default "lz4:1 zstd:1 zstd:3"; empty for none), MINIO and CACHE as scripts/minio.sh,
# WARM (default 1: read the input, untimed, before every run) and ROTATE (default 1: rotate
# the tools' order from round to round). The runs of real-links-2 and real-links-3 had neither
# (WARM=0 ROTATE=0): S1 auto ran first in every cell (docs/benchmarks/2026-11-29-cold-memory).
# Output: OUT/results.csv, OUT/summary.md. Release binaries (cargo build --release -p adz-cli).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
NETLINK="$ROOT/scripts/netlink.sh"
CACHE="${CACHE:-$ROOT/.cache}"
export CACHE
ADZ="${ADZ:-$ROOT/target/release/adz}"
RUNGS="${RUNGS-lz4:1 zstd:1 zstd:3}"
WARM="${WARM:-1}"
ROTATE="${ROTATE:-1}"
ROUNDS=3
OUT="$CACHE/bench/real-links-2"
SINKS="tcp s3 pv throttle"
while getopts "n:o:k:" opt; do
    case "$opt" in
    n) ROUNDS="$OPTARG" ;;
    o) OUT="$OPTARG" ;;
    k) SINKS="$OPTARG" ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[[ $# -gt 0 ]] || {
    echo "usage: run.sh [-n ROUNDS] [-o OUT] [-k SINKS] INPUT..." >&2
    exit 2
}
[[ -x "$ADZ" ]] || {
    echo "run.sh: $ADZ is missing (cargo build --release -p adz-cli)" >&2
    exit 1
}
inputs=()
for f in "$@"; do inputs+=("$(realpath "$f")"); done

mkdir -p "$OUT/logs"
ns="$(mktemp -d "${TMPDIR:-/tmp}/adz-real-links-2.XXXXXX")"
trap '"$NETLINK" stop "$ns" || true; rm -rf "$ns"' EXIT
"$NETLINK" start "$ns" --rate 1gbit --sink discard
conns=0

# The true link of a sink, as --link takes it.
given() {
    case "$1" in
    tcp | s3 | throttle) echo "125MB/s" ;;
    pv) echo "117MiB/s" ;;
    esac
}

# The compressor's command line for a tool on a sink, reading stdin or a file argument.
tool_cmd() {
    local tool="$1" sink="$2" extra=""
    [[ "$sink" == throttle ]] && extra=" --throttle 125MB/s"
    case "$tool" in
    s1-auto) echo "$ADZ compress -q -s throughput --link auto$extra" ;;
    s1-auto@*)
        # Another build of adz, from $ADZ_NAME (e.g. TOOLS="s1-auto s1-auto@old", ADZ_old=...).
        local var="ADZ_${tool#s1-auto@}"
        echo "${!var} compress -q -s throughput --link auto$extra"
        ;;
    s1-given) echo "$ADZ compress -q -s throughput --link $(given "$sink")$extra" ;;
    static:*) echo "$ADZ compress -q --codec ${tool#static:}$extra" ;;
    zstd-adapt) echo "zstd -T2 --adapt -c -q" ;;
    esac
}

read -r -a tools <<<"${TOOLS:-s1-auto s1-given zstd-adapt}"
for rung in $RUNGS; do tools+=("static:$rung"); done
now() { date +%s.%N; }
since() { python3 -c 'import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 6))' "$1" "$(now)"; }

echo "round,sink,input,tool,raw_bytes,stored_bytes,seconds,ratio,adz_link" >"$OUT/results.csv"
for round in $(seq 1 "$ROUNDS"); do
    for sink in $SINKS; do
        for in in "${inputs[@]}"; do
            for k in "${!tools[@]}"; do
                tool="${tools[k]}"
                [[ "$ROTATE" == 1 ]] && tool="${tools[(k + round - 1) % ${#tools[@]}]}"
                [[ "$sink" == throttle && "$tool" == zstd-adapt ]] && continue
                cmd="$(tool_cmd "$tool" "$sink")"
                name="$round-$sink-$(basename "$in")-${tool//[:@]/_}"
                log="$OUT/logs/$name.log"
                trace=""
                [[ "$tool" == s1-auto* ]] && trace=" --trace $OUT/logs/$name.trace"
                stored=""
                [[ "$WARM" == 1 ]] && cat "$in" >/dev/null
                case "$sink" in
                tcp)
                    line="$cmd$trace - - <\"\$0\" >\"/dev/tcp/\$ADZ_SINK_HOST/\$ADZ_SINK_PORT\""
                    [[ "$tool" == zstd-adapt ]] && line="${line/ - - </ <}"
                    timeout -k 5 900 "$NETLINK" exec "$ns" -- bash -c "$line" "$in" 2>"$log"
                    conns=$((conns + 1))
                    rec="$("$NETLINK" sink-wait "$ns" "$conns" 60)"
                    stored="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["bytes"])' "$rec")"
                    secs="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["seconds"])' "$rec")"
                    ;;
                s3)
                    obj="s3://\$ADZ_S3_BUCKET/bench/${tool//[:@]/_}.adz"
                    if [[ "$tool" == zstd-adapt ]]; then
                        line="$cmd <\"\$0\" | $ADZ compress -f --codec none - \"$obj\""
                    else
                        line="${cmd/ -q/}$trace -f \"\$0\" \"$obj\""
                    fi
                    t0="$(now)"
                    timeout -k 5 900 "$NETLINK" exec "$ns" -- bash -c "$line" "$in" 2>"$log"
                    secs="$(since "$t0")"
                    stored="$(grep -Eo -- '-> [0-9]+ bytes' "$log" | grep -Eo '[0-9]+' | tail -1 || true)"
                    ;;
                pv | throttle)
                    if [[ "$tool" == zstd-adapt ]]; then
                        line="$cmd <\"\$0\""
                    else
                        line="${cmd/ -q/}$trace - - <\"\$0\""
                    fi
                    [[ "$sink" == pv ]] && line="$line | tee >(wc -c >\"\$1\") | pv -q -L 117m >/dev/null"
                    [[ "$sink" == throttle ]] && line="$line | wc -c >\"\$1\""
                    t0="$(now)"
                    timeout -k 5 900 bash -c "$line" "$in" "$ns/count" 2>"$log"
                    secs="$(since "$t0")"
                    sleep 0.2
                    stored="$(tr -d ' \n' <"$ns/count")"
                    ;;
                esac
                raw="$(stat -c %s "$in")"
                adz_link="$(grep -Eo 'link [0-9.]+ [MG]B/s' "$log" | head -1 | cut -d' ' -f2- || true)"
                ratio="$(python3 -c 'import sys; print(round(int(sys.argv[1]) / int(sys.argv[2]), 4) if sys.argv[2] else "")' "$raw" "${stored:-}")"
                echo "$round,$sink,$(basename "$in"),$tool,$raw,${stored:-},$secs,$ratio,$adz_link" |
                    tee -a "$OUT/results.csv"
            done
        done
    done
done
python3 "$HERE/summary.py" "$OUT" >"$OUT/summary.md"
echo "run.sh: $OUT/results.csv and $OUT/summary.md" >&2
