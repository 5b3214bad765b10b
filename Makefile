# adz: the two commands of the quick start are `make demo` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
CACHE ?= $(CURDIR)/.cache
FUZZ_SECONDS ?= 30

.PHONY: all build demo test deps fmt-check clippy unit fuzz-smoke bench clean
.PHONY: s3-test netlink-test
.PHONY: evaluate evaluate-quick
.PHONY: python-test c-test header

all: build

build:
	$(CARGO) build --release --workspace

## make demo: build, then run the main job on generated data (see scripts/demo.sh).
demo: build
	CACHE="$(CACHE)" scripts/demo.sh

## make test: install what is missing, then run every test: format, lints, unit, property,
## integration and CLI tests, and a short fuzz run of the decoder.
test: deps fmt-check clippy unit s3-test netlink-test python-test c-test fuzz-smoke

deps:
	scripts/deps.sh

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

unit:
	$(CARGO) test --workspace

fuzz-smoke:
	FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz-smoke.sh

## make s3-test: start MinIO on 127.0.0.1 (built once with go install, cached in
## .cache/go/bin), run the S3 tests against it (they must not skip), stop it even if they fail.
s3-test:
	@state="$$(mktemp -d "$${TMPDIR:-/tmp}/adz-s3-test.XXXXXX")"; \
	trap 'CACHE="$(CACHE)" scripts/minio.sh stop "$$state"; rm -rf "$$state"' EXIT; \
	CACHE="$(CACHE)" scripts/minio.sh start "$$state" && \
	. "$$state/env" && export ADZ_REQUIRE_S3=1 && \
	$(CARGO) test --workspace --test s3

## make netlink-test: S3 and TCP round trips of adz over a real TCP link shaped to 1gbit, in a
## network namespace of its own with MinIO and a TCP sink inside (scripts/netlink.sh,
## docs/REAL-LINKS.md). Needs root; fails where it cannot run unless ADZ_NETLINK_OPTIONAL=1.
netlink-test:
	CARGO="$(CARGO)" CACHE="$(CACHE)" scripts/netlink-test.sh

## make python-test: build the Python module (with the feature s3) with maturin in .cache/venv,
## start MinIO on 127.0.0.1 for its S3 tests (stopped even if they fail), run its pytest suite.
python-test:
	CACHE="$(CACHE)" scripts/python-test.sh

## make c-test: build the C API, compile examples/c against include/adz.h, run and check them.
c-test:
	CARGO="$(CARGO)" scripts/c-test.sh

## make header: regenerate crates/adz-capi/include/adz.h with cbindgen (from src/ffi.rs and
## cbindgen.toml); `make unit` fails while the committed header differs from the generated one.
header:
	ADZ_BLESS=1 $(CARGO) test -p adz-capi --test header

## make bench: side-by-side figures (not part of make test); see docs/benchmarks/.
bench: build
	scripts/bench-codecs.sh

clean:
	$(CARGO) clean
	rm -rf fuzz/target

## make evaluate: the full evaluation matrix of issue 5 (hours; docs/EVALUATION.md). Results in
## $(CACHE)/bench/evaluation: results.csv, summary.md, plots/, traces/.
evaluate:
	scripts/deps.sh bench
	CACHE="$(CACHE)" scripts/bench-evaluation.sh

## make evaluate-quick: a small subset of the matrix (a few minutes on 2 cores).
evaluate-quick:
	scripts/deps.sh bench
	CACHE="$(CACHE)" QUICK=1 scripts/bench-evaluation.sh
