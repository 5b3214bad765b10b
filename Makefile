# adz: the two commands of the quick start are `make demo` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
CACHE ?= $(CURDIR)/.cache
FUZZ_SECONDS ?= 30

.PHONY: all build demo test deps fmt-check clippy unit fuzz-smoke bench clean
.PHONY: python-test c-test

all: build

build:
	$(CARGO) build --release --workspace

## make demo: build, then run the main job on generated data (see scripts/demo.sh).
demo: build
	CACHE="$(CACHE)" scripts/demo.sh

## make test: install what is missing, then run every test: format, lints, unit, property,
## integration and CLI tests, and a short fuzz run of the decoder.
test: deps fmt-check clippy unit fuzz-smoke
test: python-test c-test

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

## make python-test: build the Python module with maturin in .cache/venv and run its pytest suite.
python-test:
	CACHE="$(CACHE)" scripts/python-test.sh

## make c-test: build the C API, compile examples/c against include/adz.h, run and check them.
c-test:
	CARGO="$(CARGO)" scripts/c-test.sh

## make bench: side-by-side figures (not part of make test); see docs/benchmarks/.
bench: build
	scripts/bench-codecs.sh

clean:
	$(CARGO) clean
	rm -rf fuzz/target
