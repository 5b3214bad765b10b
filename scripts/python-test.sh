#!/usr/bin/env bash
# Build the Python module with maturin into a virtual environment (.cache/venv) and run its
# pytest suite. Installs maturin, pytest, numpy, numcodecs, zarr, and h5py, h5netcdf, xarray and
# netCDF4 (for adz.hdf5's tests) into the venv if missing.
#
# The module is built with the cargo feature `s3`, and the suite's S3 tests (tests/test_s3.py)
# run against a throwaway MinIO on 127.0.0.1 (scripts/minio.sh; MINIO= names its binary),
# started here and stopped on exit even if the tests fail, unless AWS_ENDPOINT_URL is already
# set (then that server is used, with ADZ_S3_BUCKET and the AWS_* keys from the environment).
# ADZ_REQUIRE_S3=1 is exported, so the S3 tests fail instead of skipping when S3 is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${CACHE:-$PWD/.cache}"
VENV="$CACHE/venv"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
PY="$VENV/bin/python"
if ! "$PY" -c "import maturin, pytest, numpy, numcodecs, zarr, h5py, h5netcdf, xarray, netCDF4" 2>/dev/null; then
    "$PY" -m pip install -q --upgrade pip
    "$PY" -m pip install -q "maturin>=1.5,<2" pytest numpy numcodecs zarr h5py h5netcdf xarray netCDF4
fi
# The standalone HDF5 filter plugin goes into the package (adz/plugins/, package data of the
# wheel), for programs that find filters only on HDF5_PLUGIN_PATH (adz.hdf5.plugin_path()).
# Debug info stripped: the wheel carries the code, not 20 MB of DWARF.
CARGO="${CARGO:-cargo}"
"$CARGO" build --release -q -p adz-hdf5
TARGET="${CARGO_TARGET_DIR:-target}"
mkdir -p crates/adz-python/python/adz/plugins
if command -v strip >/dev/null; then
    strip --strip-debug -o crates/adz-python/python/adz/plugins/libadz_hdf5.so \
        "$TARGET/release/libadz_hdf5.so"
else
    cp "$TARGET/release/libadz_hdf5.so" crates/adz-python/python/adz/plugins/
fi
# maturin develop builds the extension and installs the package (editable) into the venv.
(cd crates/adz-python && VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" \
    "$VENV/bin/maturin" develop --release --quiet --features s3)
if [ -z "${AWS_ENDPOINT_URL:-}" ]; then
    state="$(mktemp -d "${TMPDIR:-/tmp}/adz-python-s3.XXXXXX")"
    trap 'CACHE="$CACHE" scripts/minio.sh stop "$state"; rm -rf "$state"' EXIT
    CACHE="$CACHE" scripts/minio.sh start "$state"
    # shellcheck disable=SC1091
    . "$state/env"
fi
export ADZ_REQUIRE_S3=1
"$PY" -m pytest -q crates/adz-python/tests "$@"
