#!/usr/bin/env bash
# Issue 27's tiers benchmark, scaled down, with MinIO throttled to 117 MB/s as the bottom tier:
# a VPIC-like writer (4 time steps of 8 float32 fields, 64 MiB each) and a BD-CATS-like reader
# (2 of the 8 fields of every step read back), through shm (/dev/shm, 32 MiB) / nvme (a local
# directory, 96 MiB, throttled to 1200 MB/s) / minio (s3://, unlimited, throttled to 117 MB/s).
# Usage: run.sh ADZ_BINARY BDCATS_READ_BINARY WORKDIR
#   (MINIO=path/to/minio, else .cache/go/bin/minio; a MinIO of its own is started and stopped)
# Prints one line per set-up and phase: name, phase, wall seconds.
set -euo pipefail
adz=$(realpath "$1"); reader=$(realpath "$2"); work=$3
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../.." && pwd)
rm -rf "$work" /dev/shm/adz-tier-bench; mkdir -p "$work"; cd "$work"
"$root/scripts/minio.sh" start "$work/minio"
trap '"$root/scripts/minio.sh" stop "$work/minio"; rm -rf /dev/shm/adz-tier-bench' EXIT
. "$work/minio/env"
bucket=$ADZ_S3_BUCKET

python3 - <<'PY'
import numpy as np
rng = np.random.default_rng(1)
n = 64 * 2**20 // 4 // 8          # 8 float32 fields per particle, 64 MiB per step
x = rng.random(n, dtype=np.float32)
for step in range(4):
    x = (x + 0.01 * rng.random(n, dtype=np.float32)) % 1.0
    fields = [np.sort(x), np.sort(x)[::-1].copy(), (x * 0.5).astype(np.float32),
              rng.normal(0, 1, n).astype(np.float32), rng.normal(0, 1, n).astype(np.float32),
              rng.normal(0, 0.1, n).astype(np.float32), np.arange(n, dtype=np.float32),
              np.full(n, step % 3, dtype=np.float32)]
    np.concatenate(fields).tofile(f"step{step}.bin")
PY
field=$((64 * 1024 * 1024 / 8))

minio_tier() {  # $1: set-up name
  printf '[[tier]]\nname = "minio"\npath = "s3://%s/%s"\nbandwidth = "117MB/s"\nthrottle = true\n' "$bucket" "$1"
  printf 'endpoint = "%s"\nallow_http = true\ntimeout = 60\n' "$AWS_ENDPOINT_URL"
}
tiers() {  # $1: name, $2: one tier only (1) or three
  printf 'catalog = "catalog-%s"\n' "$1"
  if [ "$2" = 3 ]; then
    printf '[[tier]]\nname = "shm"\npath = "/dev/shm/adz-tier-bench/%s"\ncapacity = "32MiB"\nbandwidth = "8GB/s"\n' "$1"
    printf '[[tier]]\nname = "nvme"\npath = "nvme-%s"\ncapacity = "96MiB"\nbandwidth = "1200MB/s"\nthrottle = true\n' "$1"
  fi
  minio_tier "$1"
}
echo '{"rungs": ["none"], "classes": [[{"speed": 1e10, "ratio": 1.0}]]}' > raw.json

secs() { echo "$(date +%s.%N) - $1" | bc; }
write() {  # $1: set-up name; the rest: the command for one step, with STEP for the step number
  local name=$1; shift
  local t0=$(date +%s.%N)
  for s in 0 1 2 3; do "${@//STEP/$s}" 2>> "$name.log"; done
  echo "$name write $(secs "$t0")"
}
read_back() {  # $1: set-up name; the rest: bdcats_read's source arguments
  local name=$1; shift
  local t0=$(date +%s.%N)
  "$reader" "$@" 4 "$field" 0 3 >> "$name.log"
  echo "$name read $(secs "$t0")"
}

# The machine profile, the tiers measured through their throttles.
t0=$(date +%s.%N)
tiers probe 3 > probe.toml
"$adz" profile -q --tiers probe.toml --out profile.json
echo "profile - $(secs "$t0")"

tiers bottom-raw 1 > bottom-raw.toml; tiers tiers-raw 3 > tiers-raw.toml; tiers tiers-dp 3 > tiers-dp.toml
s3="--s3-endpoint $AWS_ENDPOINT_URL --s3-allow-http"
write bottom-raw "$adz" compress -q --tiers bottom-raw.toml --tier-costs raw.json stepSTEP.bin sSTEP
read_back bottom-raw tiers bottom-raw.toml
write bottom-s1 "$adz" compress -q -f $s3 -s throughput --throttle 117MB/s stepSTEP.bin "s3://$bucket/s1/stepSTEP.adz"
read_back bottom-s1 file "s3://$bucket/s1/stepSTEP.adz"
write tiers-raw "$adz" compress -q --tiers tiers-raw.toml --tier-costs raw.json stepSTEP.bin sSTEP
read_back tiers-raw tiers tiers-raw.toml
write tiers-dp "$adz" compress --tiers tiers-dp.toml --profile profile.json --predict-every-block --measured-tiers stepSTEP.bin sSTEP
read_back tiers-dp tiers tiers-dp.toml
for t in bottom-raw tiers-raw tiers-dp; do
  echo "== $t"; "$adz" tier --tiers $t.toml --no-profile status
done
echo "== bottom-s1"; "$adz" ls $s3 "s3://$bucket/s1/" || true
