#!/usr/bin/env bash
# make netlink-test: adz over a real TCP link shaped to 1gbit (scripts/netlink.sh), in seconds.
#   1. the link is shaped: a raw TCP stream into the sink is no faster than the token bucket;
#   2. S3: `adz compress -s throughput --link auto` of 32 MiB of text to the namespace's MinIO,
#      `adz decompress` back, compare;
#   3. TCP: the same compress to stdout piped through socat into the sink, decompress what the
#      sink received, compare.
# Needs root (ip netns). Where a namespace cannot be made it fails, with the reason, unless
# ADZ_NETLINK_OPTIONAL=1. Uses the release binaries (built here if they are stale).
#
# The commands run in the namespace are single-quoted: their $VARIABLES come from its env file.
# shellcheck disable=SC2016
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CARGO="${CARGO:-cargo}"
CACHE="${CACHE:-$ROOT/.cache}"
export CACHE
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
ADZ="$TARGET/release/adz"
DATAGEN="$TARGET/release/adz-datagen"
NETLINK="$ROOT/scripts/netlink.sh"
SIZE=$((32 << 20))

log() { echo "netlink-test: $*" >&2; }
fail() {
    log "FAILED: $*"
    exit 1
}

command -v socat >/dev/null 2>&1 || fail "socat is not installed (scripts/deps.sh installs it)"
"$CARGO" build --release -q -p adz-cli -p adz-datagen

state="$(mktemp -d "${TMPDIR:-/tmp}/adz-netlink-test.XXXXXX")"
trap '"$NETLINK" stop "$state"; rm -rf "$state"' EXIT

set +e
"$NETLINK" start "$state" --rate 1gbit
rc=$?
set -e
if [[ $rc == 77 ]]; then
    if [[ "${ADZ_NETLINK_OPTIONAL:-0}" == 1 ]]; then
        log "SKIPPED: no network namespace can be made here (see above); ADZ_NETLINK_OPTIONAL=1"
        exit 0
    fi
    fail "no network namespace can be made here (see above); run as root, or set ADZ_NETLINK_OPTIONAL=1 to skip"
fi
[[ $rc == 0 ]] || fail "the shaped link did not start"
# shellcheck disable=SC1091
rate_mb="$(. "$state/env" && echo "$((ADZ_LINK_BYTES_PER_S / 1000000))")"

# Runs a command in the namespace, bounded in time; the rest of the namespace goes at stop.
inside() { timeout -k 5 60 "$NETLINK" exec "$state" -- "$@"; }
# Prints one field of the sink's record of connection N.
sink_field() { "$NETLINK" sink-wait "$state" "$1" 20 | python3 -c "import json,sys; print(json.load(sys.stdin)['$2'])"; }
now() { date +%s.%N; }
# The ratio and the link adz measured, from its summary (for the log; not checked here).
summary() { grep -Eo 'ratio [0-9.]+|link [0-9.]+ [MG]B/s \([a-z]+\)' "$1" | paste -sd ' ' || true; }
since() { python3 -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$(now)"; }

# 1. The shaping holds: 48 MiB sent raw arrive no faster than the token bucket lets them.
inside bash -c 'head -c 48M /dev/zero | socat -b 1048576 -u - "TCP:$ADZ_SINK_ADDR"'
raw_mb="$(sink_field 1 mb_per_s)"
log "raw TCP stream: $raw_mb MB/s received over a link shaped to $rate_mb MB/s"
python3 -c "import sys; sys.exit(not float(sys.argv[1]) <= 1.10 * float(sys.argv[2]))" "$raw_mb" "$rate_mb" ||
    fail "the stream ran at $raw_mb MB/s, faster than the $rate_mb MB/s the link is shaped to: the shaping does not hold"

"$DATAGEN" text "$SIZE" 30 >"$state/in"

# 2. S3 over the shaped link.
t="$(now)"
inside bash -c '"$0" compress -f -s throughput --link auto "$1" "s3://$ADZ_S3_BUCKET/netlink-test/in.adz"' \
    "$ADZ" "$state/in" 2>"$state/s3.log" || {
    cat "$state/s3.log" >&2
    fail "adz compress to S3 over the shaped link"
}
log "S3: compress of $((SIZE >> 20)) MiB to MinIO over the link took $(since "$t") s; adz says: $(summary "$state/s3.log")"
inside bash -c '"$0" decompress -f -q "s3://$ADZ_S3_BUCKET/netlink-test/in.adz" "$1"' "$ADZ" "$state/out.s3" ||
    fail "adz decompress from S3 over the shaped link"
cmp "$state/in" "$state/out.s3" || fail "the object read back from S3 differs from the input"

# 3. stdout through socat into the sink.
t="$(now)"
inside bash -c '"$0" compress -s throughput --link auto - - <"$1" | socat -b 1048576 -u - "TCP:$ADZ_SINK_ADDR"' \
    "$ADZ" "$state/in" 2>"$state/tcp.log" || {
    cat "$state/tcp.log" >&2
    fail "adz compress through socat into the TCP sink"
}
log "TCP: compress of $((SIZE >> 20)) MiB through socat into the sink took $(since "$t") s; adz says: $(summary "$state/tcp.log")"
received="$(sink_field 2 file)"
[[ -s "$received" ]] || fail "the sink received nothing"
"$ADZ" decompress -f -q "$received" "$state/out.tcp" || fail "adz decompress of what the sink received"
cmp "$state/in" "$state/out.tcp" || fail "what the sink received does not decompress to the input"

log "ok: the link is shaped, and S3 and TCP round trips over it are exact"
