# Thin wrapper over CMake so that `make` and `make test` work from the root.
#   make              build everything into build/ (binaries in build/bin/)
#   make test         build, then run every test through ctest
#   make asan         the same with AddressSanitizer + UBSan, in build-asan/
#   make fuzz         libFuzzer targets (clang), in build-fuzz/
# Variables: BUILD_TYPE (Release), WERROR (OFF), JOBS (cores), CMAKE_ARGS.

BUILD_TYPE ?= Release
WERROR     ?= OFF
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
CTEST_ARGS ?=

.PHONY: all build test asan asan-test fuzz clean install

all: build

build/CMakeCache.txt:
	cmake -S . -B build -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCT_WERROR=$(WERROR) $(CMAKE_ARGS)

build: build/CMakeCache.txt
	cmake --build build -j $(JOBS)

test: build
	cd build && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

asan:
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCT_SANITIZE=ON -DCT_WERROR=$(WERROR) $(CMAKE_ARGS)
	cmake --build build-asan -j $(JOBS)

asan-test: asan
	cd build-asan && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

fuzz:
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DCT_FUZZ=ON -DCT_CUDA=OFF $(CMAKE_ARGS)
	cmake --build build-fuzz -j $(JOBS)

# make install PREFIX=/usr/local DESTDIR=/tmp/stage: the shared library, the
# header, cohere-transcribe.pc, the binaries, the Silero weights, the man page.
PREFIX ?= /usr/local
install: build
	cmake -S . -B build -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	cmake --build build -j $(JOBS)
	DESTDIR=$(DESTDIR) cmake --install build

clean:
	rm -rf build build-asan build-fuzz
