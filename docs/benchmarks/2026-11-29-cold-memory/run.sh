#!/bin/sh
# Fresh memory after an idle pause against right after another run, on this VM (see README).
# usage: run.sh ROUNDS ADZ FILE > results.txt     (inputs and outputs in /dev/shm)
set -eu
rounds=$1 adz=$2 file=$3
dir=$(dirname "$0") bin=/dev/shm/fresh-pages
cc -O2 -o "$bin" "$dir/fresh-pages.c"
pause() { sleep 5; }
echo "# virtio-balloon features (bit 5 = free page reporting):"
cat /sys/bus/virtio/drivers/virtio_balloon/virtio*/features 2>/dev/null || echo none
echo "# page_reporting_order: $(cat /sys/module/page_reporting/parameters/page_reporting_order 2>/dev/null || echo -)"
adzrun() { # label, then adz arguments; prints wall time and minor faults
    label=$1; shift
    /usr/bin/time -f "$label %e s, minor faults %R" "$adz" "$@" 2>&1 >/dev/null | tail -1
}
for r in $(seq "$rounds"); do
    echo "## round $r"
    pause; printf 'cold '; "$bin" 16 0; printf 'warm '; "$bin" 16 0
    pause; printf 'cold '; "$bin" 16 1; printf 'warm '; "$bin" 16 1
    pause; printf 'cold dd to tmpfs: '; dd if="$file" of=/dev/shm/cold-dd.bin bs=1M 2>&1 | tail -1
    printf 'warm dd to tmpfs: '; dd if="$file" of=/dev/shm/cold-dd.bin bs=1M 2>&1 | tail -1
    for out in /dev/shm/cold-out.adz -; do
        pause
        adzrun "cold adz static=zstd:3 to $out:" compress -f -q -s static=zstd:3 --throttle 125MB/s "$file" "$out"
        adzrun "warm adz static=zstd:3 to $out:" compress -f -q -s static=zstd:3 --throttle 125MB/s "$file" "$out"
    done
done
echo "## the first blocks' CPU time, ms per block (--trace), cold then warm"
for state in cold warm; do
    [ "$state" = cold ] && pause
    "$adz" compress -f -q -s static=zstd:3 --throttle 125MB/s --trace /dev/shm/cold-trace.jsonl \
        "$file" /dev/shm/cold-out.adz
    printf '%s ' "$state"
    python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if l.startswith("{\"seq")]; print("cpu ms", " ".join("%.1f" % (b["cpu_s"] * 1e3) for b in r[:12]), "| first frame at %.0f ms" % (r[0]["t_s"] * 1e3))' /dev/shm/cold-trace.jsonl
done
rm -f /dev/shm/cold-dd.bin /dev/shm/cold-trace.jsonl /dev/shm/cold-out.adz
