#!/bin/bash
# run.sh — everything issue 5 measures, in ONE device call (device tool:
#   cd build-cuda-carry && bash tools/device/run.sh   with carry [build-cuda-carry]):
# 1. build the CUDA backend + programs (tools/device/build.sh);
# 2. unit tests: scheduler, every CUDA kernel vs CPU references, and the
#    kernels again under compute-sanitizer memcheck;
# 3. a tiny random model written by transformers (save_pretrained): parity of
#    this engine vs transformers bf16, then the same run under memcheck;
# 4. the full-size random model (2.07 B parameters, seed 0): ceilings (torch
#    bf16 GEMM, copy bandwidth), transformers baseline (CPU features +
#    generate, bf16, sdpa, 128 × 30 s × 100 tokens), the parity dump;
#    then this engine: cuBLASLt GEMM rate, parity, the same benchmark, mixed
#    lengths vs uniform through the scheduler, OOM and fatal-error injection;
# 5. one summary table (tools/device/summarize.py). Logs under $OUT.
# STAGES (default "tests tiny full") picks stages.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TRANSFORMERS_VERBOSITY=error
STAGES=${STAGES:-tests tiny full}
SAN="compute-sanitizer --tool memcheck --error-exitcode 9"
has() { [[ " $STAGES " == *" $1 "* ]]; }
t0=$(date +%s)
echo "== $(date -u +%FT%TZ) build"
bash tools/device/build.sh > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
if has tests; then
  echo "== $(( $(date +%s) - t0 ))s tests"
  { build-dev/test_scheduler; echo "test_scheduler rc=$?"; build-dev/test_cuda_ops; echo "test_cuda_ops rc=$?";
    # --report-api-errors no: test_alloc_injection provokes a real cudaMalloc failure on purpose
    $SAN --report-api-errors no --print-limit 4 build-dev/test_cuda_ops 2>&1 | grep -E -A7 "ERROR SUMMARY|Invalid|FAILED" | head -60
    echo "memcheck test_cuda_ops rc=${PIPESTATUS[0]}"; } > "$OUT/tests.log" 2>&1
  grep -E "rel L2|rc=|FAILED|ERROR|PASSED|SKIP" "$OUT/tests.log" | head -60
fi
if has tiny; then
  echo "== $(( $(date +%s) - t0 ))s tiny model"
  { python3 tools/device/tf_bench.py --tiny --save /tmp/tiny --cases "" --dump /tmp/tiny_parity.safetensors 2>&1 |
      grep -v -i warn
    build-dev/bench_cuda_asr --model /tmp/tiny --parity /tmp/tiny_parity.safetensors
    echo "bench tiny rc=$?"
    $SAN --print-limit 4 build-dev/bench_cuda_asr --model /tmp/tiny --parity /tmp/tiny_parity.safetensors 2>&1 |
      grep -E -A7 "ERROR SUMMARY|Invalid|error" | head -60
    echo "memcheck tiny model rc=${PIPESTATUS[0]}"
    CT_CUDA_BD_BLOCKED=1 $SAN --print-limit 4 build-dev/bench_cuda_asr --model /tmp/tiny --parity /tmp/tiny_parity.safetensors 2>&1 |
      grep -E -A7 "ERROR SUMMARY|Invalid|error|parity" | sed 's/"parity"/"parity_blocked"/' | head -60
    echo "memcheck tiny model blocked-bd rc=${PIPESTATUS[0]}"; } > "$OUT/tiny.log" 2>&1
  grep -E "parity|rc=|ERROR SUMMARY|error" "$OUT/tiny.log" | head -30
fi
if has full; then
  echo "== $(( $(date +%s) - t0 ))s full model: transformers"
  (cd /tmp && OUT=/tmp/tfout python3 "$OLDPWD/tools/device/tf_bench.py" --ceilings --save /tmp/full \
      --dump /tmp/full_parity.safetensors --cases 128x30x100 --reps 3 2>&1 | grep -v -i warn) > "$OUT/tf_full.log" 2>&1
  tail -5 "$OUT/tf_full.log"
  echo "== $(( $(date +%s) - t0 ))s full model: cuda"
  build-dev/bench_cuda_asr --model /tmp/full --gemm --parity /tmp/full_parity.safetensors --bench 128,30,100 \
      --reps 3 ${MIXED:---mixed 500} --oom > "$OUT/cuda_full.log" 2>&1
  echo "bench full rc=$?" >> "$OUT/cuda_full.log"
  CT_CUDA_PROFILE=1 build-dev/bench_cuda_asr --model /tmp/full --bench 128,30,100 --reps 1 2>&1 | grep profile >> "$OUT/cuda_full.log"
  # A/B: blocked position scores (half the bd GEMM): parity and speed
  CT_CUDA_BD_BLOCKED=1 build-dev/bench_cuda_asr --model /tmp/full --parity /tmp/full_parity.safetensors \
      --bench 128,30,100 --reps 3 > "$OUT/cuda_bdblk.log" 2>&1
  CT_CUDA_BD_BLOCKED=1 CT_CUDA_PROFILE=1 build-dev/bench_cuda_asr --model /tmp/full --bench 128,30,100 --reps 1 2>&1 |
    grep profile | sed 's/"encoder_profile"/"encoder_profile_bd_blocked"/' >> "$OUT/cuda_bdblk.log"
  tail -4 "$OUT/cuda_bdblk.log"
fi
echo "== $(( $(date +%s) - t0 ))s summary"
python3 tools/device/summarize.py "$OUT"/*.log | tee "$OUT/summary.txt"
