#!/usr/bin/env bash
# Side-by-side codec benchmark: `adz compress --codec lz4:1 / zstd:3` against the `lz4` and
# `zstd` command-line tools on the same 1 GiB of text (issue 2), plus decompression of each.
# A benchmark, not a test: it prints figures and writes hyperfine exports; it passes or fails
# nothing. Committed runs live in docs/benchmarks/<date>-codecs/ with their exact command.
#
#   scripts/bench-codecs.sh                 # or: make bench
#   RUNS=5 RESULTS=/tmp/r scripts/bench-codecs.sh
#
# Environment:
#   CACHE    cache dir (default .cache): datasets in $CACHE/datasets, work files in $CACHE/bench
#   RUNS     timed runs per command (default 10), after one warmup run
#   RESULTS  where the exports go (default $CACHE/bench/results-<date>)
#   DATASET  dataset name from scripts/datasets.sh (default text-1g)
#   QUIET_WAIT  seconds to wait, before each pair, for other processes to leave the CPUs
#            idle (default 600; 0 to not wait)
#   MAX_STALL_PCT, TRIES  rerun a pair disturbed by other processes (default 20 %, 3 tries)
#
# Method: input and outputs are files on the same local filesystem; the input is read once
# first so every run finds it in the page cache. Before every timed run of every command the
# outputs are deleted and `sync` is run, so each command creates a fresh file with no dirty
# pages left by the previous run. Both commands of a pair run in one hyperfine invocation.
#
# Like for like: the issue compares with the single-threaded tools, so the headline adz rows
# use one compression thread (`-T 1`; adz still reads and writes on their own threads, as zstd
# 1.5.4 does with its asynchronous I/O even under --single-thread). Informational rows: adz
# with its default threads (one per core); "native + fsync", which runs `sync FILE` (fsync of
# that file) after the native tool, since adz's commit fsyncs its output (its durability
# contract) and the tools do not; zstd --no-asyncio (everything on one thread); adz -B 4M
# (lz4's own block size).
#
# A shared machine: before each pair the script waits for idle CPUs, and it measures the CPU
# pressure stall (PSI) over the pair; a pair that stalled for more than MAX_STALL_PCT of its
# duration (another process wanted the CPUs) is run again, up to TRIES times.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

CACHE=${CACHE:-.cache}
RUNS=${RUNS:-10}
DATASET=${DATASET:-text-1g}
mkdir -p "$CACHE/bench"
CACHE=$(cd "$CACHE" && pwd)
WORK="$CACHE/bench"
RESULTS=${RESULTS:-$WORK/results-$(date +%F)}
mkdir -p "$RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)
rm -f "$RESULTS/load.txt"

log() { echo "bench: $*" >&2; }

log "building adz (release)"
cargo build --release -q -p adz-cli
export PATH="$REPO/target/release:$PATH"

CACHE="$CACHE" scripts/datasets.sh "$DATASET"

if ! command -v hyperfine >/dev/null; then
    log "installing hyperfine"
    apt-get install -y -qq hyperfine >/dev/null 2>&1 \
        || { apt-get update -qq && apt-get install -y -qq hyperfine >/dev/null; }
fi
for tool in lz4 zstd python3; do
    command -v "$tool" >/dev/null || { log "error: $tool not found"; exit 1; }
done

cd "$WORK"
# A hard link, not a symbolic one: some tools skip symbolic links (zstd -b does).
ln -f "$CACHE/datasets/$DATASET" "$DATASET"
IN=$DATASET
raw_size=$(stat -L -c %s "$IN")

{
    echo "date: $(date -u +%FT%TZ)"
    echo "nproc: $(nproc)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "memory: $(free -g | awk '/^Mem:/ {print $2}') GiB"
    echo "kernel: $(uname -sr)"
    echo "filesystem: $(df -T . | awk 'NR==2 {print $2, $1}')"
    echo "adz: $(adz --version) (git $(git -C "$REPO" rev-parse --short HEAD)$(git -C "$REPO" diff --quiet HEAD -- crates || echo ', with uncommitted changes in crates/'))"
    echo "rustc: $(rustc --version)"
    echo "lz4: $(lz4 --version 2>&1 | head -1)"
    echo "zstd: $(zstd --version 2>&1 | head -1)"
    echo "hyperfine: $(hyperfine --version)"
    echo "dataset: $DATASET, $raw_size bytes, sha256 $(sha256sum -b "$IN" | cut -c1-64)"
    [ -f "$CACHE/datasets/linux-source-6.1.tar.xz.deb" ] \
        && echo "dataset source: $(cat "$CACHE/datasets/linux-source-6.1.tar.xz.deb")"
    echo "runs: $RUNS (after 1 warmup run), prepare: rm -f outputs; sync"
} | tee "$RESULTS/environment.txt"

log "warming the page cache with $IN"
cat "$IN" > /dev/null

OUTS="out.adz out.lz4 out.zst out.raw"
PREPARE="rm -f $OUTS; sync"
cpu_stall_us() { # total "some" CPU stall in microseconds, 0 without PSI
    sed -n 's/^some .*total=\([0-9]*\).*/\1/p' /proc/pressure/cpu 2>/dev/null || echo 0
}
cpu_busy_pct() { # share of all CPUs busy over the next second, from /proc/stat
    local a b
    a=$(awk '/^cpu / {print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat)
    sleep 1
    b=$(awk '/^cpu / {print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat)
    echo "$a $b" | awk '{ t = $4 - $2; print (t > 0) ? int(100 * ($3 - $1) / t) : 0 }'
}
wait_quiet() { # a shared machine: wait (up to QUIET_WAIT seconds) for 5 quiet seconds in a row
    local quiet=0 waited=0
    while [ "$quiet" -lt 5 ] && [ "$waited" -lt "${QUIET_WAIT:-600}" ]; do
        if [ "$(cpu_busy_pct)" -lt 10 ]; then quiet=$((quiet + 1)); else quiet=0; fi
        waited=$((waited + 1))
    done
    [ "$quiet" -ge 5 ] || log "warning: the machine is busy; measuring anyway"
}
bench() { # bench NAME MAX_STALL_PCT hyperfine-args...  (MAX_STALL_PCT "-": no check)
    local name=$1 max_stall=$2 try stall0 t0 stall_ms secs
    shift 2
    for try in $(seq 1 "${TRIES:-3}"); do
        echo
        wait_quiet
        log "== $name (try $try)"
        stall0=$(cpu_stall_us)
        t0=$(date +%s)
        hyperfine --warmup 1 --runs "$RUNS" --prepare "$PREPARE" \
            --export-json "$RESULTS/$name.json" --export-markdown "$RESULTS/$name.md" "$@"
        stall_ms=$(( ($(cpu_stall_us) - stall0) / 1000 ))
        secs=$(( $(date +%s) - t0 + 1 ))
        echo "$name try $try: ${secs} s, CPU stall ${stall_ms} ms ($(( stall_ms / secs / 10 )) %), load after $(cut -d' ' -f1-3 /proc/loadavg)" \
            | tee -a "$RESULTS/load.txt" >&2
        [ "$max_stall" = - ] && return
        [ $(( stall_ms / secs / 10 )) -le "$max_stall" ] && return
        log "$name: another process took the CPUs; running the pair again"
    done
    log "warning: $name measured on a busy machine"
}

MAX_STALL=${MAX_STALL_PCT:-20}

bench compress-lz4 "$MAX_STALL" \
    -n "adz lz4:1 -T 1" "adz compress -q -f -T 1 --codec lz4:1 $IN out.adz" \
    -n "lz4 -1" "lz4 -1 -f -q $IN out.lz4" \
    -n "lz4 -1 + fsync" "lz4 -1 -f -q $IN out.lz4 && sync out.lz4" \
    -n "adz lz4:1 -T 1 -B 4M" "adz compress -q -f -T 1 -B 4M --codec lz4:1 $IN out.adz"

bench compress-zstd "$MAX_STALL" \
    -n "adz zstd:3 -T 1" "adz compress -q -f -T 1 --codec zstd:3 $IN out.adz" \
    -n "zstd -3" "zstd -3 --single-thread -f -q $IN -o out.zst" \
    -n "zstd -3 + fsync" "zstd -3 --single-thread -f -q $IN -o out.zst && sync out.zst" \
    -n "zstd -3 --no-asyncio" "zstd -3 --single-thread --no-asyncio -f -q $IN -o out.zst"

# adz's default: one compression thread per core. Its own threads contend, so no stall check.
bench compress-default-threads - \
    -n "adz lz4:1 (default threads)" "adz compress -q -f --codec lz4:1 $IN out.adz" \
    -n "adz zstd:3 (default threads)" "adz compress -q -f --codec zstd:3 $IN out.adz"

# Compressed inputs for the decompression pairs, made outside any timed region; their sizes
# give the ratios.
log "making the compressed files"
adz compress -q -f -T 1 --codec lz4:1 "$IN" in.lz4.adz
adz compress -q -f -T 1 -B 4M --codec lz4:1 "$IN" in.lz4-4m.adz
adz compress -q -f -T 1 --codec zstd:3 "$IN" in.zstd.adz
lz4 -1 -f -q "$IN" in.lz4
zstd -3 --single-thread -f -q "$IN" -o in.zst
cat in.lz4.adz in.zstd.adz in.lz4 in.zst > /dev/null

check_round_trip() {
    cmp -s "$IN" out.raw || { log "error: out.raw differs from $IN after $1"; exit 1; }
}

bench decompress-lz4 "$MAX_STALL" \
    -n "adz decompress (lz4:1)" "adz decompress -q -f in.lz4.adz out.raw" \
    -n "lz4 -d" "lz4 -d -f -q in.lz4 out.raw" \
    -n "lz4 -d + fsync" "lz4 -d -f -q in.lz4 out.raw && sync out.raw"
check_round_trip "lz4 -d"

bench decompress-zstd "$MAX_STALL" \
    -n "adz decompress (zstd:3)" "adz decompress -q -f in.zstd.adz out.raw" \
    -n "zstd -d" "zstd -d -f -q in.zst -o out.raw" \
    -n "zstd -d + fsync" "zstd -d -f -q in.zst -o out.raw && sync out.raw" \
    -n "zstd -d --no-asyncio" "zstd -d --no-asyncio -f -q in.zst -o out.raw"
check_round_trip "zstd -d"
adz decompress -q -f in.lz4.adz out.raw && check_round_trip "adz decompress (lz4)"
adz decompress -q -f in.zstd.adz out.raw && check_round_trip "adz decompress (zstd)"
rm -f $OUTS

{
    echo "raw $raw_size"
    for f in in.lz4.adz in.lz4-4m.adz in.lz4 in.zstd.adz in.zst; do
        echo "$f $(stat -c %s "$f")"
    done
} > "$RESULTS/sizes.txt"

# Context, not part of the comparison: the native tools' own in-memory benchmark (no file I/O,
# no frame format), on the whole input as one stream and cut into independent blocks like
# adz's. It separates what the codec library does from what the I/O path adds, and shows what
# zstd's cross-block window is worth.
echo
log "== in-memory reference: zstd -b / lz4 -b"
{
    for cmd in "zstd -b3 -i5 $IN" "zstd -b3 -i5 -B1M $IN" "lz4 -b1 -i5 -B7 $IN"; do
        printf '%-26s ' "$cmd"
        $cmd 2>&1 | tr '\r' '\n' | grep -- '->' | tail -1 | sed 's/^[^:]*: *//'
    done
} | tee "$RESULTS/in-memory-reference.txt"
echo

python3 - "$RESULTS" <<'EOF' | tee "$RESULTS/summary.md"
import json, sys
d = sys.argv[1]
sizes = dict(l.split() for l in open(f"{d}/sizes.txt"))
raw = int(sizes["raw"])
ratio_file = {"lz4:1": "in.lz4.adz", "lz4:1 -T 1 -B 4M": "in.lz4-4m.adz", "lz4 -1": "in.lz4",
              "zstd:3": "in.zstd.adz", "zstd -3": "in.zst"}
groups = ["compress-lz4", "compress-zstd", "compress-default-threads", "decompress-lz4",
          "decompress-zstd"]
res = {g: json.load(open(f"{d}/{g}.json"))["results"] for g in groups}
native = {(c, r["command"]): r for g in groups for r in res[g] for c in [g.split("-")[0]]}
def base_of(group, command):
    kind = group.split("-")[0]
    codec = "lz4" if "lz4" in command else "zstd"
    return native[(kind, {"compress": {"lz4": "lz4 -1", "zstd": "zstd -3"},
                          "decompress": {"lz4": "lz4 -d", "zstd": "zstd -d"}}[kind][codec])]
def ratio(group, command):
    if not group.startswith("compress"):
        return ""
    for key in sorted(ratio_file, key=len, reverse=True):
        if key in command and not command.endswith("fsync") and "asyncio" not in command:
            return f"{raw / int(sizes[ratio_file[key]]):.3f}"
    return ""
# Wall time is the figure that counts. CPU time (user + system, all threads) says how much of
# it is computing; it includes work on helper threads, so it can exceed the wall time.
print("| benchmark | command | mean ± σ (s) | min (s) | MB/s (mean) | ratio | adz/native mean | adz/native min | CPU (s) |")
print("|---|---|---|---|---|---|---|---|---|")
for g in groups:
    for r in res[g]:
        rel = rel_min = ""
        if r["command"].startswith("adz"):
            b = base_of(g, r["command"])
            rel, rel_min = f"{r['mean'] / b['mean']:.3f}", f"{r['min'] / b['min']:.3f}"
        print(f"| {g} | {r['command']} | {r['mean']:.3f} ± {r['stddev']:.3f} | {r['min']:.3f} | "
              f"{raw / r['mean'] / 1e6:.0f} | {ratio(g, r['command'])} | {rel} | {rel_min} | "
              f"{r['user'] + r['system']:.2f} |")
EOF
echo
log "results in $RESULTS"
