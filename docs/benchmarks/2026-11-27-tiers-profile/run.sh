#!/usr/bin/env bash
# The scaled-down write workflow of docs/benchmarks/2026-11-27-tiers (4 steps of VPIC-like
# particle arrays, 64 MiB each, through shm 32 MiB / nvme 96 MiB at 1200 MB/s / pfs at
# 117 MB/s), now with a measured machine profile and segments encoded on all cores.
# Usage: run.sh ADZ_BINARY WORKDIR     (prints one line per set-up: name, wall seconds)
set -euo pipefail
adz=$1; work=$2
rm -rf "$work" /dev/shm/adz-tier-bench; mkdir -p "$work"; cd "$work"

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

# The profiles: the default one (generated data), and one on the workload's own first step.
t0=$(date +%s.%N)
tiers probe 3
"$adz" profile -q --tiers probe.toml --out profile-generated.json
echo "profile-generated $(echo "$(date +%s.%N) - $t0" | bc)"
mkdir -p sample && ln -sf "$PWD/step0.bin" sample/step0.bin
t0=$(date +%s.%N)
"$adz" profile -q --data sample --per-file 16MiB --out profile-step0.json
echo "profile-step0 $(echo "$(date +%s.%N) - $t0" | bc)"

tiers bottom-raw 1; tiers tiers-raw 3
for s in dp-builtin dp-profile dp-profile-step0 dp-predict dp-measured; do tiers tiers-$s 3; done
run bottom-raw "$adz" compress -q --tiers bottom-raw.toml --tier-costs raw.json stepSTEP.bin sSTEP
run bottom-s1 "$adz" compress -q -f -s throughput --throttle 117MB/s stepSTEP.bin s1-STEP.adz
run tiers-raw "$adz" compress -q --tiers tiers-raw.toml --tier-costs raw.json stepSTEP.bin sSTEP
run tiers-dp-builtin "$adz" compress --tiers tiers-dp-builtin.toml --no-profile stepSTEP.bin sSTEP
run tiers-dp-profile "$adz" compress --tiers tiers-dp-profile.toml --profile profile-generated.json stepSTEP.bin sSTEP
run tiers-dp-profile-step0 "$adz" compress --tiers tiers-dp-profile-step0.toml --profile profile-step0.json stepSTEP.bin sSTEP
run tiers-dp-predict "$adz" compress --tiers tiers-dp-predict.toml --profile profile-generated.json --predict-every-block stepSTEP.bin sSTEP
run tiers-dp-measured "$adz" compress --tiers tiers-dp-measured.toml --profile profile-generated.json --predict-every-block --measured-tiers stepSTEP.bin sSTEP
for t in tiers-raw tiers-dp-builtin tiers-dp-profile tiers-dp-profile-step0 tiers-dp-predict tiers-dp-measured; do
  echo "== $t"; "$adz" tier --tiers $t.toml --no-profile status
done
ls -l s1-*.adz
rm -rf /dev/shm/adz-tier-bench
