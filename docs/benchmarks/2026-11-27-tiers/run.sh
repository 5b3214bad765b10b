#!/usr/bin/env bash
# A scaled-down form of issue 27's write benchmark (see README.md): 4 time steps of VPIC-like
# particle arrays, 64 MiB each, written through
#   shm  (/dev/shm, 32 MiB, memory speed),
#   nvme (a local directory, 96 MiB, throttled to 1200 MB/s),
#   pfs  (a local directory, unlimited, throttled to 117 MB/s; MinIO in the issue),
# in four set-ups. Usage: run.sh ADZ_BINARY WORKDIR
set -euo pipefail
adz=$1; work=$2
rm -rf "$work" /dev/shm/adz-tier-bench; mkdir -p "$work"; cd "$work"

python3 - <<'PY'
import numpy as np
rng = np.random.default_rng(1)
n = 64 * 2**20 // 4 // 8          # 8 float32 fields per particle, 64 MiB per step
x = rng.random(n, dtype=np.float32)
for step in range(4):
    # positions drift smoothly; momenta are noisy; ids and species are regular
    x = (x + 0.01 * rng.random(n, dtype=np.float32)) % 1.0
    fields = [np.sort(x), np.sort(x)[::-1].copy(), (x * 0.5).astype(np.float32),
              rng.normal(0, 1, n).astype(np.float32), rng.normal(0, 1, n).astype(np.float32),
              rng.normal(0, 0.1, n).astype(np.float32), np.arange(n, dtype=np.float32),
              np.full(n, step % 3, dtype=np.float32)]
    np.concatenate(fields).tofile(f"step{step}.bin")
PY

tiers() {  # $1: name, $2: one tier only (1) or three
  if [ "$2" = 1 ]; then
    printf '[[tier]]\nname = "pfs"\npath = "pfs-%s"\nbandwidth = "117MB/s"\nthrottle = true\n' "$1"
  else
    printf '[[tier]]\nname = "shm"\npath = "/dev/shm/adz-tier-bench/%s"\ncapacity = "32MiB"\nbandwidth = "8GB/s"\n' "$1"
    printf '[[tier]]\nname = "nvme"\npath = "nvme-%s"\ncapacity = "96MiB"\nbandwidth = "1200MB/s"\nthrottle = true\n' "$1"
    printf '[[tier]]\nname = "pfs"\npath = "pfs-%s"\nbandwidth = "117MB/s"\nthrottle = true\n' "$1"
  fi > "$1.toml"
}
echo '{"rungs": ["none"], "classes": [[{"speed": 1e10, "ratio": 1.0}]]}' > raw.json

run() {  # $1: set-up name; the rest: the command for one step, with STEP for the step number
  local name=$1; shift
  local t0=$(date +%s.%N)
  for s in 0 1 2 3; do "${@//STEP/$s}" 2>> "$name.log"; done
  local t1=$(date +%s.%N)
  echo "$name $(echo "$t1 - $t0" | bc)"
}

tiers bottom-raw 1; tiers tiers-raw 3; tiers tiers-dp 3
run bottom-raw "$adz" compress -q --tiers bottom-raw.toml --tier-costs raw.json stepSTEP.bin sSTEP
run bottom-s1 "$adz" compress -q -f -s throughput --throttle 117MB/s stepSTEP.bin s1-STEP.adz
run tiers-raw "$adz" compress -q --tiers tiers-raw.toml --tier-costs raw.json stepSTEP.bin sSTEP
run tiers-dp "$adz" compress --tiers tiers-dp.toml stepSTEP.bin sSTEP
for t in tiers-raw tiers-dp; do echo "== $t"; "$adz" tier --tiers $t.toml status; done
ls -l s1-*.adz
rm -rf /dev/shm/adz-tier-bench
