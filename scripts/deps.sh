#!/usr/bin/env bash
# Install what `make test` needs and is missing. Safe to run again: it only installs what is absent.
set -euo pipefail

need_cmd() { command -v "$1" >/dev/null 2>&1; }

if ! need_cmd cargo; then
    echo "deps: cargo not found; install Rust (rustup) first" >&2
    exit 1
fi
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy

# The fuzz smoke run needs a nightly toolchain and cargo-fuzz (libFuzzer needs a C++ compiler).
if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal || echo "deps: no nightly toolchain; the fuzz smoke run will be skipped" >&2
fi
if ! need_cmd cargo-fuzz; then
    cargo install cargo-fuzz --locked
fi
if ! need_cmd c++ && ! need_cmd g++; then
    if need_cmd apt-get; then (apt-get update -qq && apt-get install -y -qq g++) >/dev/null; fi
fi
# make s3-test builds MinIO once with go and drives it with curl and python3 (a free port).
if ! need_cmd curl && need_cmd apt-get; then (apt-get update -qq && apt-get install -y -qq curl) >/dev/null; fi
need_cmd go || [ -x "${CACHE:-.cache}/go/bin/minio" ] || echo "deps: go not found; make s3-test needs it once to build MinIO" >&2
# `scripts/deps.sh bench`: also what the evaluation harness (make evaluate) and the bench scripts
# use: the external tools they compare against, hyperfine and bc for the timings, pv as the
# link of scripts/bench-pipe.sh, and what scripts/datasets.sh needs (dpkg-deb; python3 for the
# real-data corpus). Not installed for make test.
if [ "${1:-}" = bench ]; then
    missing=()
    for tool in zstd:zstd lz4:lz4 xz:xz-utils dpkg-deb:dpkg hyperfine:hyperfine bc:bc pv:pv python3:python3; do
        need_cmd "${tool%%:*}" || missing+=("${tool#*:}")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        if need_cmd apt-get; then
            (apt-get update -qq && apt-get install -y -qq "${missing[@]}") >/dev/null
        else
            echo "deps: install ${missing[*]} for the evaluation's external tools" >&2
        fi
    fi
fi
# The bindings: a C compiler for examples/c, Open MPI for its MPI example, python3 with venv
# for the Python module (scripts/python-test.sh installs maturin, pytest, numpy into the venv).
apt_install() {
    if need_cmd apt-get; then
        (apt-get update -qq && apt-get install -y -qq "$@") >/dev/null || echo "deps: could not install $*" >&2
    fi
}
if ! need_cmd cc && ! need_cmd gcc; then apt_install gcc; fi
if ! need_cmd mpicc || ! need_cmd mpirun; then apt_install openmpi-bin libopenmpi-dev; fi
if ! python3 -c "import venv, ensurepip" >/dev/null 2>&1; then apt_install python3-venv; fi
# The HDF5 filter plugin's C tests: h5cc (libhdf5-dev), h5repack, h5dump and h5diff (hdf5-tools).
if ! need_cmd h5cc || ! need_cmd h5repack; then apt_install libhdf5-dev hdf5-tools; fi
# make netlink-test: ip and tc (iproute2) for a shaped network namespace, socat to stream into it.
if ! need_cmd ip || ! need_cmd tc; then apt_install iproute2; fi
if ! need_cmd socat; then apt_install socat; fi
# The mount tests (crates/adz-fuse): fusermount3 (Debian's fuse3) for mounts by a user other
# than root, and sqlite3 and rsync, unmodified programs they run through a mount.
if ! need_cmd fusermount3; then apt_install fuse3; fi
if ! need_cmd sqlite3; then apt_install sqlite3; fi
if ! need_cmd rsync; then apt_install rsync; fi
echo "deps: ok"
