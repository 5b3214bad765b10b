#!/usr/bin/env bash
# Build the C API (static library), compile the C examples against include/adz.h (generated
# by cbindgen: `make header`) with the system compiler, run them, and check their output with
# the adz CLI and byte comparison. Honours CARGO_TARGET_DIR.
# The MPI example runs when Open MPI (mpicc, mpirun) is installed (scripts/deps.sh does it).
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

# rows_match SERIAL RANK N FIRST ROWS: RANK holds rows FIRST..FIRST+ROWS of every N x N
# snapshot of doubles in SERIAL.
rows_match() {
    python3 - "$@" <<'PY'
import sys
serial, rank, n, first, rows = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
s, r = open(serial, "rb").read(), open(rank, "rb").read()
row = n * 8
snap = n * row
want = b"".join(s[k + first * row:k + (first + rows) * row] for k in range(0, len(s), snap))
sys.exit(0 if want == r and len(r) > 0 else 1)
PY
}

# MPI: each rank writes its own file, rank 0 a manifest; each file holds that rank's rows of
# the serial solver's snapshots.
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
    OMPI_CC="$CC" mpicc $CFLAGS examples/c/jacobi_mpi.c $LIBS -o "$OUT/jacobi_mpi"
    n=64 iters=30 every=10 ranks=3
    check "jacobi serial reference" "$OUT/jacobi" "$OUT/serial.adz" -n $n -i $iters -e $every \
        -s static=zstd:1 -t 1 -r "$OUT/serial.raw"
    check "jacobi_mpi run" mpirun --oversubscribe --allow-run-as-root -np $ranks \
        "$OUT/jacobi_mpi" "$OUT/mpi" -n $n -i $iters -e $every -s static=zstd:1 -r "$OUT/mpi"
    check "jacobi_mpi manifest" test "$(grep -vc '^#' "$OUT/mpi.manifest")" -eq $ranks
    while read -r file first rows; do
        [[ "$file" == \#* ]] && continue
        r="${file%.adz}"
        r="${r##*.}"
        check "jacobi_mpi rank $r verify" "$ADZ" verify -q "$file"
        check "jacobi_mpi rank $r decompress" "$ADZ" decompress -q -f "$file" "$OUT/rank.out"
        check "jacobi_mpi rank $r bytes" cmp "$OUT/mpi.$r.raw" "$OUT/rank.out"
        check "jacobi_mpi rank $r equals the serial rows" \
            rows_match "$OUT/serial.raw" "$OUT/rank.out" "$n" "$first" "$rows"
    done < <(cat "$OUT/mpi.manifest" 2>/dev/null)
else
    echo "c-test: Open MPI not installed; skipping jacobi_mpi (scripts/deps.sh installs it)" >&2
fi

echo "c-test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
