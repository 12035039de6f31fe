# The two commands a newcomer runs (README.md): `make demo` and `make check` (every test, as CI
# runs them: make test, make test-dev, make test-python, make test-wheel, make test-integrations).
# Everything else is a convenience around CMake presets (CMakePresets.json).

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_ARGS ?=

.PHONY: demo check test test-dev test-python test-wheel test-integrations build deps deps-test \
	bench format format-check tidy clean golden

demo: deps build
	@scripts/demo build/release

build: deps
	cmake --preset release >/dev/null
	cmake --build build/release -j $(JOBS)

deps:
	@scripts/install-deps build

deps-test:
	@scripts/install-deps test

# Every test CI runs, one after the other (docs/testing.md says how long each takes).
check:
	@$(MAKE) --no-print-directory test
	@$(MAKE) --no-print-directory test-dev
	@$(MAKE) --no-print-directory test-python
	@$(MAKE) --no-print-directory test-wheel
	@$(MAKE) --no-print-directory test-integrations

# The suite to run before a commit: an AddressSanitizer+UBSan build and a ThreadSanitizer build,
# each with every test but the `timing` ones, the fuzz targets, and the formatting check
# (scripts/test-all overlaps the tsan tree's tests with the asan build).
test: deps-test format-check
	@scripts/test-all $(JOBS) $(CTEST_ARGS)

# The uninstrumented dev tree (GCC, Debug, -Werror) and all its tests: those labelled `timing`
# (they bound wall time, CPU time or energy accuracy) last, with nothing else running.  The tree
# people rebuild after each edit, so before a commit it is mostly built already.
test-dev: deps-test
	@scripts/test-all --dev $(JOBS) $(CTEST_ARGS)

# Rewrites the golden files of tests/golden (help texts, monitor screens, run summaries, doctor's
# report, joules steps' output, the /metrics exposition) from the dev build; `git diff tests/golden`
# then shows what a change did to what people see.
golden:
	cmake --preset dev >/dev/null
	cmake --build build/dev -j $(JOBS) --target joules_unit_tests
	JOULES_UPDATE_GOLDEN=1 build/dev/tests/joules_unit_tests --gtest_filter='Golden*'

# The Python package (tests/python): its wheel built with g++ (a build tree of its own, so
# minutes on 2 cores: not part of make test), a fresh venv, `joules` on its PATH, the API on
# the fake NVML.  make check runs it.
test-python: deps-test
	@scripts/test-python $(JOBS)

# The manylinux_2_28 wheel (Zig's toolchain), auditwheel's check, and tests/python against it
# installed from the file.  About 13 minutes on 2 cores: make check runs it, make test does not
# (it would take make test past 15 minutes).
test-wheel: deps-test
	@scripts/test-wheel $(JOBS)

# The framework callbacks against real transformers, Lightning and Keras trainers on the CPU
# (the frameworks, torch with its CUDA libraries: 4.7 GB in build/integrations-venv, installed
# once).  make check runs it.
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

# clang-tidy reads the compile commands of a tree configured like dev but without its precompiled
# headers (GCC's, which clang cannot read); the generated tables in the build tree are not tidied.
tidy:
	cmake --preset dev -B build/tidy -DJOULES_PCH=OFF >/dev/null
	run-clang-tidy -p build/tidy -quiet '^$(CURDIR)/src/'

clean:
	rm -rf build
