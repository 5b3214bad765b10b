#!/usr/bin/env bash
# Incompressible reads through the mount, several builds side by side (see README.md, "Raw
# frames served without a copy"). Usage: rawread.sh REPS SIZE_MIB NAME=ADZ_BINARY...   (as
# root; needs /dev/fuse and adz-datagen beside the last binary or in target/release). Inputs, SOURCE and
# mount point in /dev/shm/adz-rawread-bench; CSV rows to stdout: test,variant,rep,seconds,MB/s
# (MB = 10^6 B). Each repetition mounts each build once (the order rotates from one
# repetition to the next) and reads, on that fresh mount, the adz file `r` (512 MiB of random bytes, every
# frame stored raw) and then the plain file `plain.bin` (the same bytes: the daemon's
# pass-through, no adz), with `dd bs=1M` to /dev/null.
set -euo pipefail
reps=$1
mib=$2
shift 2
builds=("$@")
new=${builds[-1]#*=}
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
gen=$(dirname "$new")/adz-datagen
[ -x "$gen" ] || gen=$root/target/release/adz-datagen
w=/dev/shm/adz-rawread-bench
src=$w/src
mnt=$w/mnt
bytes=$((mib << 20))

rm -rf "$w"
mkdir -p "$src" "$mnt"
"$gen" random "$bytes" 2 >"$w/rand.raw"
cp "$w/rand.raw" "$src/plain.bin"

now() { date +%s.%N; }
row() { # test variant rep start end bytes
  awk -v t="$1" -v v="$2" -v r="$3" -v a="$4" -v b="$5" -v n="$6" \
    'BEGIN { s = b - a; printf "%s,%s,%s,%.3f,%.1f\n", t, v, r, s, n / s / 1e6 }'
}
up() { # BIN ARGS...: mount, and wait until the mount serves the source's names
  local bin=$1
  shift
  "$bin" mount "$@" "$src" "$mnt"
  for _ in $(seq 100); do [ "$(ls "$mnt" | wc -l)" = "$(ls "$src" | wc -l)" ] && return; sleep 0.05; done
  echo "the mount does not show $src" >&2; exit 1
}
down() {
  umount "$mnt"
  while pgrep -f "adz.* mount.* $src $mnt" >/dev/null; do sleep 0.05; done
}

# The adz file, written through the mount as in run.sh (streamed, S1: every frame stored raw).
up "$new" --throttle 1200MB/s
dd if="$w/rand.raw" of="$mnt/r" bs=1M status=none
down
"$new" decompress -q "$src/r.adz" - | cmp -s - "$w/rand.raw" || { echo "r: wrong bytes" >&2; exit 1; }

echo "test,variant,rep,seconds,MB/s"
for rep in $(seq 1 "$reps"); do
  n=${#builds[@]}
  for k in $(seq 0 $((n - 1))); do
    spec=${builds[$(((k + rep) % n))]}
    build=${spec%%=*}
    bin=${spec#*=}
    up "$bin"
    a=$(now); dd if="$mnt/r" of=/dev/null bs=1M status=none; b=$(now)
    row incompressible-read "adz-$build" "$rep" "$a" "$b" "$bytes"
    a=$(now); dd if="$mnt/plain.bin" of=/dev/null bs=1M status=none; b=$(now)
    row incompressible-read "passthrough-$build" "$rep" "$a" "$b" "$bytes"
    down
  done
done
ls -l "$src" >&2
