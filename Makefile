# The two commands a newcomer runs (README.md): `make demo` and `make test`.
# Everything else is a convenience around CMake presets (CMakePresets.json).

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_ARGS ?=

.PHONY: demo test test-python test-wheel test-integrations build deps deps-test bench format \
	format-check tidy clean golden

demo: deps build
	@scripts/demo build/release

build: deps
	cmake --preset release >/dev/null
	cmake --build build/release -j $(JOBS)

deps:
	@scripts/install-deps build

deps-test:
	@scripts/install-deps test

# Every test: a -Werror debug build, an AddressSanitizer+UBSan build and a ThreadSanitizer
# build, each with its whole test suite, the fuzz targets, and the formatting check
# (scripts/test-all overlaps each tree's tests with the next build).
test: deps-test format-check
	@scripts/test-all $(JOBS) $(CTEST_ARGS)

# Rewrites the golden files of tests/golden (help texts, monitor screens, run summaries, doctor's
# report, joules steps' output, the /metrics exposition) from the dev build; `git diff tests/golden`
# then shows what a change did to what people see.
golden:
	cmake --preset dev >/dev/null
	cmake --build build/dev -j $(JOBS) --target joules_unit_tests
	JOULES_UPDATE_GOLDEN=1 build/dev/tests/joules_unit_tests --gtest_filter='Golden*'

# The Python package (tests/python): its wheel built with g++ (a build tree of its own, so
# minutes on 2 cores: not part of make test), a fresh venv, `joules` on its PATH, the API on
# the fake NVML.  .ci/run runs it.
test-python: deps-test
	@scripts/test-python $(JOBS)

# The manylinux_2_28 wheel (Zig's toolchain), auditwheel's check, and tests/python against it
# installed from the file.  About 13 minutes on 2 cores: run by hand before a release, not by
# .ci/run.
test-wheel: deps-test
	@scripts/test-wheel $(JOBS)

# The framework callbacks against real transformers, Lightning and Keras trainers on the CPU
# (the frameworks, torch with its CUDA libraries: 5.7 GB in build/integrations-venv, installed
# once).  Not in .ci/run: on a bare machine that download alone has no bound it can promise.
test-integrations: deps-test
	@scripts/test-integrations $(JOBS)

bench:
	@scripts/install-deps bench
	cmake --preset release >/dev/null
	cmake --build build/release -j $(JOBS)
	bench/run
	bench/python_package.py "$$(scripts/build-wheel $(JOBS) | tail -n 1)"

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp' '*.c' '*.h')

format-check:
	@clang-format --dry-run --Werror $$(git ls-files '*.cpp' '*.hpp' '*.c' '*.h') \
	  || { echo "joules: code is not formatted; run make format" >&2; exit 1; }

tidy:
	cmake --preset dev >/dev/null
	run-clang-tidy -p build/dev -quiet 'src/.*'

clean:
	rm -rf build
