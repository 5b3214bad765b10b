#!/usr/bin/env bash
# Calibrates scripts/netlink.sh: a raw TCP stream over 127.0.0.1 inside one namespace per rate
# (1gbit, 10gbit, and none: the namespace's loopback unshaped), REPEATS rounds interleaved across
# the rates, two senders each (socat from a pipe, and bash writing the socket directly). The sink
# discards and records bytes and time from first to last byte. Writes calibration.csv here.
#   docs/benchmarks/2026-11-27-real-links/calibrate.sh [REPEATS]   (default 3; about 2 minutes)
# The commands run in the namespace are single-quoted: their $VARIABLES come from its env file.
# shellcheck disable=SC2016
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
NETLINK="$ROOT/scripts/netlink.sh"
REPEATS="${1:-3}"
RATES=(1gbit 10gbit none)
declare -A SIZE=([1gbit]=256M [10gbit]=2G [none]=2G)

base="$(mktemp -d "${TMPDIR:-/tmp}/adz-calibrate.XXXXXX")"
cleanup() {
    local r
    for r in "${RATES[@]}"; do "$NETLINK" stop "$base/$r" || true; done
    rm -rf "$base"
}
trap cleanup EXIT
for r in "${RATES[@]}"; do "$NETLINK" start "$base/$r" --rate "$r" --no-minio --sink discard; done

declare -A conns
out="$HERE/calibration.csv"
echo "round,rate,sender,bytes,first_to_last_s,mb_per_s,loadavg_1m" >"$out"
for round in $(seq 1 "$REPEATS"); do
    for r in "${RATES[@]}"; do
        for sender in socat devtcp; do
            case "$sender" in
            socat) cmd='head -c "$0" /dev/zero | socat -u - "TCP:$ADZ_SINK_ADDR"' ;;
            devtcp) cmd='head -c "$0" /dev/zero >"/dev/tcp/$ADZ_SINK_HOST/$ADZ_SINK_PORT"' ;;
            esac
            timeout -k 5 120 "$NETLINK" exec "$base/$r" -- bash -c "$cmd" "${SIZE[$r]}"
            conns[$r]=$((${conns[$r]:-0} + 1))
            rec="$("$NETLINK" sink-wait "$base/$r" "${conns[$r]}" 30)"
            python3 -c '
import json, sys
r = json.loads(sys.argv[1])
load = open("/proc/loadavg").read().split()[0]
print(",".join(map(str, [sys.argv[2], sys.argv[3], sys.argv[4], r["bytes"], r["first_to_last_s"], r["mb_per_s"], load])))
' "$rec" "$round" "$r" "$sender" | tee -a "$out"
        done
    done
done
