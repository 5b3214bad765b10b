#!/usr/bin/env bash
# A short run of every fuzz target: only a panic (or crash) fails. FUZZ_SECONDS per target.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${FUZZ_SECONDS:-30}
if ! rustup toolchain list | grep -q '^nightly' || ! command -v cargo-fuzz >/dev/null; then
    echo "fuzz-smoke: nightly or cargo-fuzz missing (run scripts/deps.sh); FAILING rather than skipping" >&2
    exit 1
fi
mkdir -p corpus
for target in $(cargo +nightly fuzz list); do
    mkdir -p "corpus/$target"
    # Seed the corpus with real files so the fuzzer starts from valid structure.
    cp -n ../crates/adz-core/tests/fixtures/v1.*/*.adz "corpus/$target/" 2>/dev/null || true
    echo "fuzz-smoke: $target for ${secs}s"
    cargo +nightly fuzz run "$target" "corpus/$target" -- -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 2>&1 | tail -n 3
    # pipefail makes a crash (non-zero exit of cargo fuzz) fail the script
done
echo "fuzz-smoke: every target ran ${secs}s without a crash"
