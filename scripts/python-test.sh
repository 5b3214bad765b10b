#!/usr/bin/env bash
# Build the Python module with maturin into a virtual environment (.cache/venv) and run its
# pytest suite. Installs maturin, pytest, numpy, numcodecs and zarr into the venv if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${CACHE:-$PWD/.cache}"
VENV="$CACHE/venv"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
PY="$VENV/bin/python"
if ! "$PY" -c "import maturin, pytest, numpy, numcodecs, zarr" 2>/dev/null; then
    "$PY" -m pip install -q --upgrade pip
    "$PY" -m pip install -q "maturin>=1.5,<2" pytest numpy numcodecs zarr
fi
# maturin develop builds the extension and installs the package (editable) into the venv.
(cd crates/adz-python && VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" \
    "$VENV/bin/maturin" develop --release --quiet)
"$PY" -m pytest -q crates/adz-python/tests "$@"
