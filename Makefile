# The two commands a newcomer runs (README.md): `make demo` and `make test`.
# Everything else is a convenience around CMake presets (CMakePresets.json).

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_ARGS ?=

.PHONY: demo test build deps deps-test bench format format-check tidy clean

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

bench:
	@scripts/install-deps bench
	cmake --preset release >/dev/null
	cmake --build build/release -j $(JOBS)
	bench/run

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
