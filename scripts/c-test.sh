#!/usr/bin/env bash
# Build the C API (static library), compile the C examples against include/adz.h (generated
# by cbindgen: `make header`) with the system compiler, run them, and check their output with
# the adz CLI and byte comparison. Honours CARGO_TARGET_DIR.
# The MPI example runs when Open MPI (mpicc, mpirun) is installed (scripts/deps.sh does it).
# The HDF5 filter plugin (crates/adz-hdf5) is tested with Debian's HDF5 (h5cc, h5repack,
# h5dump, h5diff from libhdf5-dev and hdf5-tools, which scripts/deps.sh installs).
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO="${CARGO:-cargo}"
CC="${CC:-cc}"
"$CARGO" build --release -q -p adz-capi -p adz-cli
TARGET="${CARGO_TARGET_DIR:-target}"
LIB="$TARGET/release/libadz_capi.a"
ADZ="$TARGET/release/adz"
INC=crates/adz-capi/include
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
CFLAGS="-std=c11 -O2 -Wall -Wextra -Werror -I$INC"
LIBS="$LIB -lpthread -ldl -lm"

pass=0
fail=0
check() { # name command...
    local name="$1"
    shift
    if "$@"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "c-test: FAIL: $name" >&2
    fi
}

# Bad arguments: error codes, never a crash.
$CC $CFLAGS examples/c/test_bad_args.c $LIBS -o "$OUT/test_bad_args"
check test_bad_args "$OUT/test_bad_args" "$OUT"

# Datasets: part writers on threads, a commit by ids (a missing one refused), reads as one
# file through the C API and through `adz cat`; bad arguments are codes.
$CC $CFLAGS examples/c/test_dataset.c $LIBS -o "$OUT/test_dataset"
check test_dataset "$OUT/test_dataset" "$OUT"
check "test_dataset adz cat" cmp "$OUT/ds.raw" <("$ADZ" cat "$OUT/ds")

# The solver: its snapshots, written asynchronously, decompress to what it computed.
$CC $CFLAGS examples/c/jacobi.c $LIBS -o "$OUT/jacobi"
# Random ranges read through adz_reader_pread (4 threads, one reader) equal the original.
$CC $CFLAGS examples/c/read_random.c $LIBS -o "$OUT/read_random"
for strategy in throughput static=zstd:3 keep-pace; do
    check "jacobi $strategy" "$OUT/jacobi" "$OUT/j.adz" -n 200 -i 60 -e 10 -s "$strategy" \
        -l 1GbE -t 2 -r "$OUT/j.raw"
    check "jacobi $strategy verify" "$ADZ" verify -q "$OUT/j.adz"
    check "jacobi $strategy decompress" "$ADZ" decompress -q -f "$OUT/j.adz" "$OUT/j.out"
    check "jacobi $strategy bytes" cmp "$OUT/j.raw" "$OUT/j.out"
    check "jacobi $strategy random reads" "$OUT/read_random" "$OUT/j.adz" "$OUT/j.raw" 400 4
    # The same data in many small frames, so that reads cross frame ends.
    check "jacobi $strategy small blocks" "$ADZ" compress -q -f -B 16K "$OUT/j.raw" "$OUT/j16.adz"
    check "jacobi $strategy small-block random reads" "$OUT/read_random" "$OUT/j16.adz" \
        "$OUT/j.raw" 400 4
    rm -f "$OUT/j16.adz"
    rm -f "$OUT/j.adz" "$OUT/j.out" "$OUT/j.raw"
done

# MPI: 4 ranks write one dataset (each its rows of every snapshot as parts, rank 0 commits
# them by id); it reads back as the serial solver's snapshots, byte for byte, through
# `adz cat`, `adz decompress` and adz_reader_pread (read_random on the dataset name).
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
    OMPI_CC="$CC" mpicc $CFLAGS examples/c/jacobi_mpi.c $LIBS -o "$OUT/jacobi_mpi"
    n=64 iters=30 every=10 ranks=4
    check "jacobi serial reference" "$OUT/jacobi" "$OUT/serial.adz" -n $n -i $iters -e $every \
        -s static=zstd:1 -t 1 -r "$OUT/serial.raw"
    check "jacobi_mpi run" timeout 120 mpirun --oversubscribe --allow-run-as-root -np $ranks \
        "$OUT/jacobi_mpi" "$OUT/mpi" -n $n -i $iters -e $every -s static=zstd:1
    check "jacobi_mpi dataset has a part per rank and snapshot" \
        grep -q "version 1: $(stat -c %s "$OUT/serial.raw") bytes in $((ranks * 3)) parts" \
        <("$ADZ" dataset ls "$OUT/mpi")
    check "jacobi_mpi dataset equals the serial snapshots (adz cat)" \
        cmp "$OUT/serial.raw" <("$ADZ" cat "$OUT/mpi")
    check "jacobi_mpi dataset decompress" "$ADZ" decompress -q -f "$OUT/mpi" "$OUT/mpi.out"
    check "jacobi_mpi dataset equals the serial snapshots (decompress)" \
        cmp "$OUT/serial.raw" "$OUT/mpi.out"
    check "jacobi_mpi dataset random reads" "$OUT/read_random" "$OUT/mpi" "$OUT/serial.raw" 400 4
else
    echo "c-test: Open MPI not installed; skipping jacobi_mpi (scripts/deps.sh installs it)" >&2
fi

# HDF5: the plugin, loaded by HDF5 from HDF5_PLUGIN_PATH by its filter id (429). A program
# built with h5cc -shlib writes through it and reads back; h5repack recompresses a file
# written without a filter, and h5dump of the result equals h5dump of the original (h5dump
# without the plugin cannot read it).
if command -v h5cc >/dev/null && command -v h5repack >/dev/null && command -v h5dump >/dev/null; then
    "$CARGO" build --release -q -p adz-hdf5
    mkdir -p "$OUT/plugins"
    cp "$TARGET/release/libadz_hdf5.so" "$OUT/plugins/"
    export HDF5_PLUGIN_PATH="$OUT/plugins"
    # -shlib: the plugin takes HDF5's functions from the process (a static HDF5 would have to
    # be linked with -rdynamic to export them).
    # In $OUT: h5cc leaves its object file in the current directory.
    (cd "$OUT" && h5cc -shlib -std=c11 -O2 -Wall -Wextra -Werror \
        "$OLDPWD/examples/c/hdf5_write.c" -lm -o "$OUT/hdf5_write")
    for mode in static s1 none; do
        check "hdf5_write $mode" "$OUT/hdf5_write" "$OUT/h5_$mode.h5" "$mode"
    done
    # UD=id,flags,count,cd_values: version 1, static (0), zstd (3) level 3, -, -, auto filters.
    check "h5repack -f UD=429" h5repack -f UD=429,0,7,1,0,3,3,0,0,0 "$OUT/h5_none.h5" "$OUT/h5_rp.h5"
    check "h5repack output uses the filter" \
        grep -q "FILTER_ID 429" <(h5dump -p -H "$OUT/h5_rp.h5")
    check "h5repack output is smaller" \
        test "$(stat -c %s "$OUT/h5_rp.h5")" -lt "$(stat -c %s "$OUT/h5_none.h5")"
    h5dump "$OUT/h5_none.h5" | tail -n +2 >"$OUT/dump_none.txt"
    h5dump "$OUT/h5_rp.h5" | tail -n +2 >"$OUT/dump_rp.txt" || true
    check "h5dump of the repacked file equals the original" cmp "$OUT/dump_none.txt" "$OUT/dump_rp.txt"
    check "h5diff original repacked" h5diff "$OUT/h5_none.h5" "$OUT/h5_rp.h5"
    check "without the plugin the repacked file does not read" \
        bash -c '! HDF5_PLUGIN_PATH=/nonexistent h5diff "$1" "$2" >/dev/null 2>&1' _ \
        "$OUT/h5_none.h5" "$OUT/h5_rp.h5"
    # Static lz4 (1) acceleration 1 with the bitshuffle filter (word 6 = 4): bit planes by the
    # element size that set_local records.
    check "h5repack -f UD=429 bitshuffle" \
        h5repack -f UD=429,0,7,1,0,1,1,0,0,4 "$OUT/h5_none.h5" "$OUT/h5_bs.h5"
    check "h5repack bitshuffle keeps word 6" \
        grep -q "PARAMS { 1 0 1 1 0 0 4 " <(h5dump -p -H "$OUT/h5_bs.h5")
    check "h5diff original bitshuffled" h5diff "$OUT/h5_none.h5" "$OUT/h5_bs.h5"
    unset HDF5_PLUGIN_PATH
else
    echo "c-test: HDF5 tools not installed; skipping the HDF5 plugin (scripts/deps.sh installs them)" >&2
fi

echo "c-test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
