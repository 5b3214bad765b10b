#!/usr/bin/env bash
# Predicted against real ratio, before and after sampling by kind (issue 6). Ratios only: the
# real ratio and the sample are deterministic; which rungs beyond the three cheapest get
# measured depends on timing, so runs can list more or fewer rungs.
#
#   run.sh ADZ_BEFORE ADZ_AFTER [WORKDIR]
#
# ADZ_BEFORE: an adz built at ead97a9 (main before this change), ADZ_AFTER: one built here
# (cargo build --release -p adz-cli -p adz-datagen). Writes before/ and after/
# (adz predict --check --json per input and link), sweeps.txt (ten seeds of the mixed
# inputs and of linux.tar) and prints the tables of README.md (summarize.py).
set -euo pipefail
BEFORE=$1
AFTER=$2
WORK=${3:-$(mktemp -d)}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
GEN="$ROOT/target/release/adz-datagen"
mkdir -p "$WORK"
for kind in text doubles sparse random mixed; do
  [ -f "$WORK/$kind.bin" ] || "$GEN" "$kind" $((512 << 20)) 1 > "$WORK/$kind.bin"
done
# mixed with its segments off the stretches' grid; the first 256 MiB of a Linux source tar.
[ -f "$WORK/mixed-shift.bin" ] || tail -c +1234568 "$WORK/mixed.bin" > "$WORK/mixed-shift.bin"
[ -f "$WORK/linux256.bin" ] || head -c $((256 << 20)) "$ROOT/.cache/datasets/linux.tar" > "$WORK/linux256.bin"
for who in before after; do
  adz=$BEFORE; [ $who = after ] && adz=$AFTER
  mkdir -p "$HERE/$who"
  for kind in text doubles sparse random mixed mixed-shift linux256; do
    for link in 1GbE 10GbE; do
      nice -n 19 "$adz" predict "$WORK/$kind.bin" --link $link --check --json \
        > "$HERE/$who/predict-$kind-$link.json"
    done
  done
  for kind in mixed-shift linux256; do
    nice -n 19 "$adz" predict "$WORK/$kind.bin" --link 117MB/s --strategy keep-pace --check --json \
      > "$HERE/$who/predict-$kind-keep-pace-1GbE.json"
  done
done
# Ten seeds, lz4:1 and zstd:1 against the real ratios of the check runs.
real() { python3 -c "import json,sys; print(next(c['ratio'] for c in json.load(open(sys.argv[1]))['check'] if c['spec']==sys.argv[2]))" "$@"; }
{
  for who in before after; do
    adz=$BEFORE; [ $who = after ] && adz=$AFTER
    for kind in mixed mixed-shift linux256; do
      rl=$(real "$HERE/after/predict-$kind-1GbE.json" lz4:1)
      rz=$(real "$HERE/after/predict-$kind-1GbE.json" zstd:1)
      for link in 1GbE 10GbE; do
        errs=""
        for seed in 0 1 2 3 4 5 6 7 8 9; do
          errs+=" $(nice -n 19 "$adz" predict "$WORK/$kind.bin" --link $link --seed $seed \
            --rungs lz4:1,zstd:-1,zstd:1 --json | python3 -c "
import json, sys
p = json.load(sys.stdin)['prediction']
r = {x['spec']: x['ratio'] for x in p['rungs']}
print('%+.1f/%+.1f' % ((r.get('lz4:1', 1.0) / $rl - 1) * 100, (r.get('zstd:1', 1.0) / $rz - 1) * 100))")"
        done
        echo "$who $kind $link (lz4:1/zstd:1 %, seeds 0-9):$errs"
      done
    done
  done
} | tee "$HERE/sweeps.txt"
python3 "$HERE/summarize.py" "$HERE/before" "$HERE/after"
