# The two commands a newcomer runs (README.md): `make demo` and `make test`.
# Everything else is a convenience around CMake presets (CMakePresets.json).

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_ARGS ?=

.PHONY: demo test build deps deps-test bench format format-check tidy clean golden

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
