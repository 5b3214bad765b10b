#!/usr/bin/env bash
# S1 --link auto (old and new binary) and S1 --link 125MB/s through the shaped TCP rig of
# scripts/netlink.sh at 1gbit: stdout straight into the socket ("tcp") and through a pipe
# into socat ("pipe"). Rounds interleaved. Needs root (network namespace).
#   tcp.sh [-n ROUNDS] FILE          (OLD=/dev/shm/adz-base NEW=target/release/adz)
set -euo pipefail
n=3
while getopts n: o; do case $o in n) n=$OPTARG ;; *) exit 2 ;; esac; done
shift $((OPTIND - 1))
f=$1
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
OLD=${OLD:-/dev/shm/adz-base}
NEW=${NEW:-$ROOT/target/release/adz}
NL=$ROOT/scripts/netlink.sh
st=$(mktemp -d /tmp/link-nl.XXXXXX)
trap '"$NL" stop "$st/nl" >/dev/null 2>&1 || true; rm -rf "$st"' EXIT
"$NL" start "$st/nl" --rate 1gbit --no-minio --sink discard >/dev/null
echo "round,sink,binary,link,sink_seconds,sink_mbs,stored,link_reported"
conn=0
for r in $(seq 1 "$n"); do
    for sink in tcp pipe; do
        for c in "old auto" "new auto" "new 125MB/s"; do
            set -- $c
            b=$OLD; [ "$1" = new ] && b=$NEW
            if [ $sink = tcp ]; then
                line="$b compress -s throughput --link $2 - - <\$0 >/dev/tcp/\$ADZ_SINK_HOST/\$ADZ_SINK_PORT"
            else
                line="$b compress -s throughput --link $2 - - <\$0 | socat -b 1048576 -u - TCP:\$ADZ_SINK_ADDR"
            fi
            timeout 300 "$NL" exec "$st/nl" -- bash -c "$line" "$f" 2>"$st/err"
            conn=$((conn + 1))
            rec=$("$NL" sink-wait "$st/nl" "$conn" 60)
            lk=$(grep -o 'link [0-9.]* MB/s' "$st/err" | awk '{print $2}')
            sec=$(echo "$rec" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.3f,%.1f,%d" % (d["seconds"], d["mb_per_s"], d["bytes"]))')
            echo "$r,$sink,$1,$2,$sec,$lk"
        done
    done
done
