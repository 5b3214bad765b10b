#!/usr/bin/env bash
# adz mount over S3 (issue 25) against the CLI on the same MinIO: see README.md beside this
# script. Usage: run.sh [REPS] [SIZE_MIB] [RATE]   (as root; needs /dev/fuse, a release build
# of adz and adz-bench in $TARGET (default ROOT/target/release), and MinIO for
# scripts/minio.sh in $CACHE). Starts its own MinIO on 127.0.0.1 whose data, the input, the
# spool and every output live in /dev/shm/adz-mount-s3-bench; stops it at the end. One CSV row
# per measurement goes to stdout: test,variant,rep,seconds,MB/s (MB = 10^6 B of raw data).
# Each repetition runs every variant once, the two of a pair back to back in alternating
# order, so the variants are interleaved.
set -euo pipefail
reps=${1:-3}
mib=${2:-256}
rate=${3:-117MB/s}
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
target=${TARGET:-$root/target/release}
adz=$target/adz
w=/dev/shm/adz-mount-s3-bench
mnt=$w/mnt
bytes=$((mib << 20))

rm -rf "$w"
mkdir -p "$mnt" "$w/spool" "$w/minio"
"$target/adz-bench" datasets --cache "$w/cache" --datasets mixed --size "$bytes" >&2
in=$w/cache/datasets/gen/mixed-$bytes-1.bin

TMPDIR=$w/minio CACHE=${CACHE:-$root/.cache} "$root/scripts/minio.sh" start "$w/minio" >&2
stop_minio() { CACHE=${CACHE:-$root/.cache} "$root/scripts/minio.sh" stop "$w/minio" >&2; }
trap stop_minio EXIT
# shellcheck disable=SC1091
. "$w/minio/env"
url=s3://$ADZ_S3_BUCKET/bench

now() { date +%s.%N; }
row() { # test variant rep start end bytes
  awk -v t="$1" -v v="$2" -v r="$3" -v a="$4" -v b="$5" -v n="$6" \
    'BEGIN { s = b - a; printf "%s,%s,%s,%.3f,%.1f\n", t, v, r, s, n / s / 1e6 }'
}
up() { # mount PREFIX with the given flags, and wait until it is mounted
  local prefix=$1
  shift
  "$adz" mount --spool "$w/spool" "$@" "$url/$prefix/" "$mnt"
  for _ in $(seq 200); do mountpoint -q "$mnt" && return; sleep 0.05; done
  echo "$url/$prefix/ is not mounted on $mnt" >&2
  exit 1
}
down() {
  umount "$mnt"
  # The daemon ends once the kernel lets go; wait for it before the next mount.
  for _ in $(seq 600); do pgrep -f "adz mount .*$mnt\$" >/dev/null || return 0; sleep 0.05; done
  echo "the daemon of $mnt did not end" >&2
  exit 1
}
check() { # object decodes to the input
  "$adz" decompress -q "$url/$1" - | cmp -s - "$in" || { echo "$1: wrong bytes" >&2; exit 1; }
}
write_mount() {
  up m --throttle "$rate"
  local a b
  a=$(now); dd if="$in" of="$mnt/f" bs=1M status=none; b=$(now)
  row write "mount@$rate" "$rep" "$a" "$b" "$bytes"
  down
}
write_compress() {
  local a b
  a=$(now); "$adz" compress -q -f -s throughput --throttle "$rate" "$in" "$url/c/f.adz"; b=$(now)
  row write "compress@$rate" "$rep" "$a" "$b" "$bytes"
}
read_mount() { # the object adz compress wrote, through a fresh mount
  up c
  local a b
  a=$(now); dd if="$mnt/f" of=/dev/null bs=1M status=none; b=$(now)
  row read mount "$rep" "$a" "$b" "$bytes"
  down
}
read_decompress() {
  local a b
  a=$(now); "$adz" decompress -q "$url/c/f.adz" - >/dev/null; b=$(now)
  row read decompress "$rep" "$a" "$b" "$bytes"
}

echo "test,variant,rep,seconds,MB/s"
for rep in $(seq 1 "$reps"); do
  if [ $((rep % 2)) = 1 ]; then
    write_mount; write_compress; read_mount; read_decompress
  else
    write_compress; write_mount; read_decompress; read_mount
  fi
  check m/f.adz
  check c/f.adz
done
"$adz" inspect "$url/m/f.adz" 2>&1 | head -20 >&2
"$adz" inspect "$url/c/f.adz" 2>&1 | head -20 >&2
