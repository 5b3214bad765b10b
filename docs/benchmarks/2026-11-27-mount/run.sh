#!/usr/bin/env bash
# The mount benchmark (issue 25): see README.md beside this script.
# Usage: run.sh [REPS] [SIZE_MIB]   (as root; needs /dev/fuse, fio, target/release/adz and
# target/release/adz-datagen). Inputs, SOURCE and outputs live in /dev/shm/adz-mount-bench;
# one CSV row per measurement goes to stdout: test,variant,rep,seconds,MB/s (MB = 10^6 B).
set -euo pipefail
reps=${1:-3}
mib=${2:-1024}
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
adz=$root/target/release/adz
gen=$root/target/release/adz-datagen
w=/dev/shm/adz-mount-bench
src=$w/src
mnt=$w/mnt
bytes=$((mib << 20))

rm -rf "$w"
mkdir -p "$src" "$mnt"
"$gen" mixed "$bytes" 1 >"$w/in.raw"
"$gen" random $((bytes / 2)) 2 >"$w/rand.raw"

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

echo "test,variant,rep,seconds,MB/s"
for rep in $(seq 1 "$reps"); do
  # 1. Sequential write of one file at two simulated links: the mount (dd, 1 MiB writes, the
  #    time includes close(), which commits) against `adz compress` of the same file.
  for rate in 117MB/s 1200MB/s; do
    rm -f "$src"/*.adz "$w/out.adz"
    up --throttle "$rate"
    a=$(now); dd if="$w/in.raw" of="$mnt/f" bs=1M status=none; b=$(now)
    row write "mount@$rate" "$rep" "$a" "$b" "$bytes"
    down
    a=$(now); "$adz" compress -q -s throughput --throttle "$rate" "$w/in.raw" "$w/out.adz"; b=$(now)
    row write "compress@$rate" "$rep" "$a" "$b" "$bytes"
  done

  # 2. Sequential read of the file written above (the 1200MB/s one): through a fresh mount
  #    (cold cache), with and without read-ahead, against `adz decompress` to /dev/null.
  for ra in 16MiB 0; do
    up --read-ahead "$ra"
    a=$(now); dd if="$mnt/f" of=/dev/null bs=1M status=none; b=$(now)
    row read "mount-read-ahead=$ra" "$rep" "$a" "$b" "$bytes"
    down
  done
  a=$(now); "$adz" decompress -q "$w/out.adz" - >/dev/null; b=$(now)
  row read decompress "$rep" "$a" "$b" "$bytes"

  # 3. 4 KiB random reads, fio, 4 jobs, 10 s, O_DIRECT (past the page cache): cold (a fresh mount, the default 256 MiB cache)
  #    and warm (a cache that holds the file, filled by one sequential read first).
  for cache in cold warm; do
    if [ $cache = cold ]; then up; else up --cache 2GiB; dd if="$mnt/f" of=/dev/null bs=1M status=none; fi
    fio --name=rand --filename="$mnt/f" --rw=randread --bs=4k --numjobs=4 --runtime=10 \
      --time_based --ioengine=psync --direct=1 --group_reporting --output-format=json \
      >"$w/fio-$cache-$rep.json"
    python3 - "$w/fio-$cache-$rep.json" "$cache" "$rep" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]["read"]
p99 = j["clat_ns"]["percentile"]["99.000000"] / 1e3
print(f"fio,{sys.argv[2]},{sys.argv[3]},iops={j['iops']:.0f},p99_us={p99:.0f}")
PY
    down
  done

  # 4. Incompressible data (half the size): written and read through the mount as an adz
  #    file, against the same mount's pass-through of a plain file (same FUSE daemon, no adz),
  #    and a plain copy on /dev/shm outside FUSE.
  half=$((bytes / 2))
  rm -f "$src"/*.adz "$src/plain.bin" "$w/copy.raw"
  : >"$src/plain.bin"
  up --throttle 1200MB/s
  a=$(now); dd if="$w/rand.raw" of="$mnt/r" bs=1M status=none; b=$(now)
  row incompressible-write mount-adz "$rep" "$a" "$b" "$half"
  a=$(now); dd if="$w/rand.raw" of="$mnt/plain.bin" bs=1M status=none; b=$(now)
  row incompressible-write mount-passthrough "$rep" "$a" "$b" "$half"
  down
  a=$(now); dd if="$w/rand.raw" of="$w/copy.raw" bs=1M status=none; b=$(now)
  row incompressible-write plain-copy "$rep" "$a" "$b" "$half"
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
