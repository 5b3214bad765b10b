#!/usr/bin/env bash
# The streaming-write benchmark of adz mount (issue 25, decision 0042): see README.md beside
# this script. Usage: run.sh [REPS] [SIZE_MIB]   (as root; needs /dev/fuse, target/release/adz
# and target/release/adz-datagen). Inputs, SOURCE and outputs live in
# /dev/shm/adz-mount-stream-bench; one CSV row per measurement goes to stdout:
# test,variant,rep,seconds,MB/s (MB = 10^6 B). Each repetition runs every variant once, in
# the order below, so the variants are interleaved.
set -euo pipefail
reps=${1:-5}
mib=${2:-1024}
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
adz=$root/target/release/adz
gen=$root/target/release/adz-datagen
w=/dev/shm/adz-mount-stream-bench
src=$w/src
mnt=$w/mnt
bytes=$((mib << 20))
half=$((bytes / 2))

rm -rf "$w"
mkdir -p "$src" "$mnt"
"$gen" mixed "$bytes" 1 >"$w/in.raw"
"$gen" random "$half" 2 >"$w/rand.raw"

now() { date +%s.%N; }
row() { # test variant rep start end bytes
  awk -v t="$1" -v v="$2" -v r="$3" -v a="$4" -v b="$5" -v n="$6" \
    'BEGIN { s = b - a; printf "%s,%s,%s,%.3f,%.1f\n", t, v, r, s, n / s / 1e6 }'
}
up() { # mount, and wait until the mount serves the source's names
  "$adz" mount "$@" "$src" "$mnt"
  for _ in $(seq 100); do [ "$(ls "$mnt" | wc -l)" = "$(ls "$src" | wc -l)" ] && return; sleep 0.05; done
  echo "the mount does not show $src" >&2; exit 1
}
down() {
  umount "$mnt"
  # The daemon ends once the kernel lets go; wait for it before the next mount.
  while pgrep -f "adz mount.* $src $mnt" >/dev/null; do sleep 0.05; done
}
check() { # the mount's file decodes to the input
  "$adz" decompress -q "$src/$1.adz" - | cmp -s - "$2" || { echo "$1: wrong bytes" >&2; exit 1; }
}

echo "test,variant,rep,seconds,MB/s"
for rep in $(seq 1 "$reps"); do
  # 1. Sequential write of one file (dd, 1 MiB writes; the time includes close(), which
  #    commits) at two simulated links: staged (--stage-writes, the design before 0042),
  #    streamed (the default), and `adz compress` of the same file.
  for rate in 117MB/s 1200MB/s; do
    for mode in stage stream; do
      rm -f "$src"/*.adz
      if [ $mode = stage ]; then up --throttle "$rate" --stage-writes; else up --throttle "$rate"; fi
      a=$(now); dd if="$w/in.raw" of="$mnt/f" bs=1M status=none; b=$(now)
      row write "mount-$mode@$rate" "$rep" "$a" "$b" "$bytes"
      down
      check f "$w/in.raw"
    done
    rm -f "$w/out.adz"
    a=$(now); "$adz" compress -q -s throughput --throttle "$rate" "$w/in.raw" "$w/out.adz"; b=$(now)
    row write "compress@$rate" "$rep" "$a" "$b" "$bytes"
  done

  # 2. Sequential read of the file written above, through a fresh mount, and `adz decompress`.
  up
  a=$(now); dd if="$mnt/f" of=/dev/null bs=1M status=none; b=$(now)
  row read mount "$rep" "$a" "$b" "$bytes"
  down
  a=$(now); "$adz" decompress -q "$w/out.adz" - >/dev/null; b=$(now)
  row read decompress "$rep" "$a" "$b" "$bytes"

  # 3. Incompressible data (half the size): written and read through the mount as an adz file
  #    (staged and streamed), against the same mount's pass-through of a plain file (same FUSE
  #    daemon, no adz), and a plain copy on /dev/shm outside FUSE.
  rm -f "$src"/*.adz "$src/plain.bin" "$w/copy.raw"
  : >"$src/plain.bin"
  up --throttle 1200MB/s --stage-writes
  a=$(now); dd if="$w/rand.raw" of="$mnt/rs" bs=1M status=none; b=$(now)
  row incompressible-write mount-stage "$rep" "$a" "$b" "$half"
  down
  up --throttle 1200MB/s
  a=$(now); dd if="$w/rand.raw" of="$mnt/r" bs=1M status=none; b=$(now)
  row incompressible-write mount-stream "$rep" "$a" "$b" "$half"
  a=$(now); dd if="$w/rand.raw" of="$mnt/plain.bin" bs=1M status=none; b=$(now)
  row incompressible-write mount-passthrough "$rep" "$a" "$b" "$half"
  down
  a=$(now); dd if="$w/rand.raw" of="$w/copy.raw" bs=1M status=none; b=$(now)
  row incompressible-write plain-copy "$rep" "$a" "$b" "$half"
  check r "$w/rand.raw"
  up
  a=$(now); dd if="$mnt/r" of=/dev/null bs=1M status=none; b=$(now)
  row incompressible-read mount-adz "$rep" "$a" "$b" "$half"
  a=$(now); dd if="$mnt/plain.bin" of=/dev/null bs=1M status=none; b=$(now)
  row incompressible-read mount-passthrough "$rep" "$a" "$b" "$half"
  down
  a=$(now); dd if="$w/copy.raw" of=/dev/null bs=1M status=none; b=$(now)
  row incompressible-read plain-copy "$rep" "$a" "$b" "$half"
done
ls -l "$src" >&2
