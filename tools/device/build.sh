#!/bin/bash
# build.sh — build the CUDA backend, the scheduler and their test/bench
# programs on the device machine with nvcc + gcc directly: the device image
# lacks the -dev packages the full CMake build requires (jansson, FFmpeg,
# libsndfile, utf8proc, cmocka; see tools/device/probe.sh), so this compiles
# only what the device runs. cmocka comes as Debian .debs carried in
# build-devdeps/ (unpacked under /tmp). Output: $BUILD (default build-dev/).
set -euo pipefail
BUILD=${BUILD:-build-dev}
mkdir -p "$BUILD/obj"
CUDA=${CUDA_HOME:-/usr/local/cuda}
NV="$CUDA/bin/nvcc -gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90 -O3 \
  --expt-relaxed-constexpr -Isrc -Iinclude -DCT_HAVE_CUDA -Xcompiler=-Wall,-Wno-unused-parameter,-Wno-format-truncation"
CC="gcc -std=c17 -O2 -D_GNU_SOURCE -DCT_VERSION=\"0.1.0\" -DCT_HAVE_CUDA -Isrc -Iinclude -Wall -Wno-unused-parameter -Wno-format-truncation"
pids=()
for f in src/compute/cuda/*.cu; do $NV -c "$f" -o "$BUILD/obj/$(basename "$f").o" & pids+=($!); done
for f in src/core/*.c src/asr/scheduler.c src/asr/breaker.c; do $CC -c "$f" -o "$BUILD/obj/$(basename "$f").o" & pids+=($!); done
for p in "${pids[@]}"; do wait "$p"; done
ar rcs "$BUILD/libct_dev.a" "$BUILD"/obj/*.o
LIBS="-L$CUDA/lib64 -lcublasLt -lcublas -lcudart_static -lstdc++ -lpthread -ldl -lrt -lm"
$CC -Itools/bench tools/bench/bench_cuda_asr.c "$BUILD/libct_dev.a" $LIBS -o "$BUILD/bench_cuda_asr"
if ls build-devdeps/*.deb >/dev/null 2>&1; then
  rm -rf /tmp/cmocka && mkdir -p /tmp/cmocka
  for d in build-devdeps/*.deb; do dpkg -x "$d" /tmp/cmocka; done
  CM="-I/tmp/cmocka/usr/include -L/tmp/cmocka/usr/lib/x86_64-linux-gnu -Wl,-rpath,/tmp/cmocka/usr/lib/x86_64-linux-gnu -lcmocka"
  for t in test_cuda_ops test_cuda_attention test_scheduler; do
    $CC -Itests/unit -I/tmp/cmocka/usr/include tests/unit/$t.c tests/unit/testutil.c "$BUILD/libct_dev.a" $CM $LIBS -o "$BUILD/$t"
  done
fi
# cohere-transcribe-random-model (model helper's tool) needs jansson, also carried as .debs
if ls build-devdeps/libjansson*.deb >/dev/null 2>&1; then
  rm -rf /tmp/jansson && mkdir -p /tmp/jansson
  for d in build-devdeps/libjansson*.deb; do dpkg -x "$d" /tmp/jansson; done
  JI=/tmp/jansson/usr/include; JL=/tmp/jansson/usr/lib/x86_64-linux-gnu
  $CC -fopenmp -I$JI src/cli/cohere-transcribe-random-model.c src/model/random_model.c src/model/safetensors.c \
      src/model/tokjson.c src/model/config.c "$BUILD/libct_dev.a" -L$JL -Wl,-rpath,$JL -ljansson -lm -o "$BUILD/cohere-transcribe-random-model"
fi
# The product path: cohere-transcribe-inspect (--device cuda reaches the GPU
# engine through src/asr/asr_gpu.c and src/compute/gpu_engine.c). Needs
# jansson, libsndfile, OpenBLAS, libcurl, OpenSSL: from pkg-config where the
# image has them, else from the .debs carried in build-devdeps/
# (tools/device/fetch-devdeps.sh), unpacked under /tmp/devdeps with an rpath.
if [ "${PRODUCT:-1}" = 1 ]; then
  PINC=""; PLIB=""
  if [ "${DEVDEPS_ONLY:-0}" != 1 ] && pkg-config --exists jansson sndfile openblas libcurl libcrypto 2>/dev/null; then
    PINC=$(pkg-config --cflags jansson sndfile openblas libcurl libcrypto)
    PLIB=$(pkg-config --libs jansson sndfile openblas libcurl libcrypto)
  elif ls build-devdeps/libsndfile1-dev*.deb >/dev/null 2>&1; then
    rm -rf /tmp/devdeps && mkdir -p /tmp/devdeps
    for d in build-devdeps/*.deb; do dpkg -x "$d" /tmp/devdeps; done
    R=/tmp/devdeps/usr; A=$R/lib/x86_64-linux-gnu; O=$A/openblas-openmp
    # the -dev packages' .so links point into the runtime packages; OpenBLAS's
    # libopenblas.so comes through Debian's alternatives, made by hand here
    ln -sf "$(ls $O/libopenblasp-r*.so | head -1)" "$O/libopenblas.so.0"; ln -sf libopenblas.so.0 "$O/libopenblas.so"
    PINC="-I$R/include -I$R/include/x86_64-linux-gnu -I$R/include/x86_64-linux-gnu/openblas-openmp"
    PLIB="-L$A -L$O -Wl,-rpath,$A -Wl,-rpath,$O -Wl,-rpath-link,$A -ljansson -lsndfile -lopenblas -lcurl -lcrypto"
  else
    echo "product: no jansson/sndfile/openblas/curl/crypto (pkg-config) and no build-devdeps/*.deb: inspect not built"
  fi
  if [ -n "$PLIB" ]; then
    mkdir -p "$BUILD/pobj"
    pids=()
    for f in src/compute/*.c src/compute/cpu/*.c src/compute/ref/*.c src/asr/*.c src/model/*.c; do
      $CC -fopenmp $PINC -c "$f" -o "$BUILD/pobj/$(echo "${f#src/}" | tr / _).o" & pids+=($!)
      if [ ${#pids[@]} -ge "$(nproc)" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
    done
    for p in "${pids[@]}"; do wait "$p"; done
    # core + CUDA objects from above; scheduler/breaker are in pobj again (src/asr)
    ar rcs "$BUILD/libct_product.a" "$BUILD"/pobj/*.o $(ls "$BUILD"/obj/*.o | grep -v -E '/(scheduler|breaker)\.c\.o$')
    $CC -fopenmp $PINC src/cli/cohere-transcribe-inspect.c "$BUILD/libct_product.a" $PLIB $LIBS \
      -o "$BUILD/cohere-transcribe-inspect"
    # the library-level GPU test (fixture batch through ct_asr_open/transcribe on the device)
    if [ -n "${CM:-}" ]; then
      $CC -fopenmp $PINC -Itests/unit -I/tmp/cmocka/usr/include tests/unit/test_asr_gpu.c tests/unit/testutil.c \
        "$BUILD/libct_product.a" $PLIB $CM $LIBS -o "$BUILD/test_asr_gpu"
    fi
  fi
fi
echo "built: $(ls "$BUILD" | tr '\n' ' ')"
