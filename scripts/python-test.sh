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
# Install the package the way `pip install ./crates/adz-python` does, through its PEP 517
# backend (build_backend/adz_build.py), editable: the backend builds the standalone HDF5 filter
# plugin into adz/plugins/ and hands over to maturin (release, with `s3`). No build isolation:
# the venv's maturin builds it, and nothing is fetched per run.
(VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" "$PY" -m pip install -q --no-build-isolation \
    --no-deps -e ./crates/adz-python --config-settings=build-args="--features s3")
if [ -z "${AWS_ENDPOINT_URL:-}" ]; then
    state="$(mktemp -d "${TMPDIR:-/tmp}/adz-python-s3.XXXXXX")"
    trap 'CACHE="$CACHE" scripts/minio.sh stop "$state"; rm -rf "$state"' EXIT
    CACHE="$CACHE" scripts/minio.sh start "$state"
    # shellcheck disable=SC1091
    . "$state/env"
fi
export ADZ_REQUIRE_S3=1
"$PY" -m pytest -q crates/adz-python/tests "$@"
