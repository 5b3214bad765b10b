#!/usr/bin/env bash
# The lifecycle benchmark of issue 28: recompress vs compress from scratch, analyze, and the
# energy strategy against S1, S2 and static rungs. Usage:
#   docs/benchmarks/2026-11-27-lifecycle/run.sh ADZ REAL_DIR TARBALL_DIR SRC_DIR OUT_DIR
# ADZ: a release adz binary; REAL_DIR: the real corpus (/dev/shm/real, `adz-bench datasets
# --real`); TARBALL_DIR: the uncompressed versions of one source tarball (Django-5.0.N.tar);
# SRC_DIR: the same versions extracted; OUT_DIR: scratch.
set -euo pipefail
ADZ=$1 REAL=$2 TARS=$3 SRC=$4 OUT=$5
mkdir -p "$OUT"
T="/usr/bin/time -f %U+%S_cpu_%e_wall"
cpu() { # seconds of user+sys and wall from time's last line
    tail -1 "$1"
}

# --- 1. recompress an S1 output written at 10GbE, against compressing from scratch ----------
# 96 MiB: 32 MiB each of the source tarball, the already-compressed tar.xz and the FITS image.
MIX=$OUT/mix.bin
{ head -c 32M "$REAL/real-source.tar"; head -c 32M "$REAL/real-compressed.tar.xz";
  head -c 32M "$REAL/real-fits.fits"; } > "$MIX"
sha256sum "$MIX"
$T -o "$OUT/s1.time" "$ADZ" compress -f -T 2 -s throughput --link 10GbE --throttle 10GbE \
    "$MIX" "$OUT/s1.adz" 2> "$OUT/s1.txt"
cat "$OUT/s1.txt"; cpu "$OUT/s1.time"
"$ADZ" inspect "$OUT/s1.adz" | tail -15 || true
for run in 1 2; do
    cp "$OUT/s1.adz" "$OUT/re.adz"
    $T -o "$OUT/re$run.time" "$ADZ" recompress -T 2 -s archive "$OUT/re.adz" | tee "$OUT/re$run.txt"
    echo "recompress run $run: $(cpu "$OUT/re$run.time")"
    $T -o "$OUT/re$run-again.time" "$ADZ" recompress -T 2 -s archive "$OUT/re.adz"
    echo "rerun on the result: $(cpu "$OUT/re$run-again.time")"
    $T -o "$OUT/scratch$run.time" "$ADZ" compress -f -q -T 2 -s archive "$MIX" "$OUT/scratch.adz"
    echo "compress -s archive run $run: $(cpu "$OUT/scratch$run.time"), $(stat -c %s "$OUT/scratch.adz") bytes"
done
ls -l "$OUT/s1.adz" "$OUT/re.adz" "$OUT/scratch.adz"
cmp <("$ADZ" decompress "$OUT/re.adz" -) "$MIX" && echo "round trip equal"
$T -o "$OUT/st.time" "$ADZ" compress -f -q -T 2 -c xz:9 "$MIX" "$OUT/static.adz"
echo "compress -c xz:9 (static, every block attempted): $(cpu "$OUT/st.time")"
# What the frames sent raw by choice cost before the zstd:1 probe: xz:9 tried on every block
# of the incompressible third (static: no probe mode), as recompress used to.
head -c 32M "$REAL/real-compressed.tar.xz" > "$OUT/xz-part.bin"
$T -o "$OUT/xzpart.time" "$ADZ" compress -f -q -T 2 -c xz:9 "$OUT/xz-part.bin" "$OUT/xz-part.adz"
echo "xz:9 attempted on the 32 MiB incompressible third: $(cpu "$OUT/xzpart.time")"

# --- 2. analyze ---------------------------------------------------------------------------
$T -o "$OUT/an-real.time" "$ADZ" analyze "$REAL"/* --json > "$OUT/analyze-real.json"
"$ADZ" analyze "$REAL"/* > "$OUT/analyze-real.txt" 2>&1 || true
echo "analyze real: $(cpu "$OUT/an-real.time")"
$T -o "$OUT/an-tars.time" "$ADZ" analyze "$TARS"/* --json > "$OUT/analyze-tars.json"
"$ADZ" analyze "$TARS"/* > "$OUT/analyze-tars.txt" 2>&1 || true
echo "analyze tarballs: $(cpu "$OUT/an-tars.time")"
# The extracted trees' files, concatenated in path order (no tar headers between them).
(cd "$SRC" && find . -type f | LC_ALL=C sort | tr '\n' '\0' | xargs -0 cat) |
    "$ADZ" analyze - > "$OUT/analyze-django-files.txt"

# --- 3. the energy strategy against S1, S2 and static rungs ------------------------------
E=$OUT/energy-input.bin
{ head -c 64M "$REAL/real-source.tar"; head -c 32M "$REAL/real-fits.fits";
  head -c 32M "$REAL/real-nifti.nii"; } > "$E"
sha256sum "$E"
for rep in 1 2; do for link in 117MB/s 1200MB/s; do
    for s in throughput keep-pace energy static=lz4:1 static=zstd:3 $([ $rep = 1 ] && echo static=zstd:19); do
        "$ADZ" compress -f -T 2 -s "$s" --link "$link" --throttle "$link" "$E" "$OUT/e.adz" \
            2> "$OUT/e.txt"
        echo "== rep $rep $link $s"; grep -E "ratio|energy" "$OUT/e.txt"
    done
done; done
