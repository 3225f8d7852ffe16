#!/bin/bash
# probe.sh — what the device image has that tools/device/run.sh relies on
# (compilers, libraries for the CMake build, compute-sanitizer). Prints facts only.
set +e
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
nvcc --version | tail -1; cmake --version | head -1; gcc --version | head -1
cat /etc/os-release | head -2; nproc; free -g | head -2
which compute-sanitizer ncu cuobjdump
for p in jansson openblas libavformat sndfile samplerate libcurl libcrypto libutf8proc cmocka; do
  printf '%s: ' $p; pkg-config --modversion $p 2>/dev/null || echo missing
done
ls /usr/local/cuda/lib64 | grep -E 'cublasLt.so|cudart.so' | head -4
