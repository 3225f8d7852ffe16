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
# 5. one summary table (tools/device/summarize.py). Logs under $LOG, packed into $OUT.
# 2b. product: cohere-transcribe-inspect --device cuda --dtype bf16 on the fixture
#    batch vs the committed fp32 reference (tools/device/compare_inspect.py);
# STAGES (default "tests fixture product tiny full"; "ab" adds the unfused
# attention A/B on the full model) picks stages. PREBUILT=dir: use binaries
# built beforehand (here: BUILD=dir DEVDEPS_ONLY=1 bash tools/device/build.sh,
# carried with build-devdeps/) instead of building on the device.
set -u
OUT=${OUT:-/tmp/out}
# logs go to $LOG; $OUT gets summary.txt and logs.tgz (the device tool returns at most 8 files)
LOG=${LOG:-/tmp/ct-logs}
mkdir -p "$OUT" "$LOG"
export PYTHONUNBUFFERED=1 TRANSFORMERS_VERBOSITY=error
STAGES=${STAGES-tests fixture product tiny full}  # set but empty: no stage (prebuilt setup only)
SAN="compute-sanitizer --tool memcheck --error-exitcode 9"
has() { [[ " $STAGES " == *" $1 "* ]]; }
t0=$(date +%s)
if [ -n "${PREBUILT:-}" ]; then
  echo "== $(date -u +%FT%TZ) prebuilt $PREBUILT: unpacking the carried runtime libraries"
  # the same /tmp paths build.sh linked against (rpaths); LD_LIBRARY_PATH for the libraries' own dependencies
  for d in cmocka jansson devdeps; do rm -rf /tmp/$d && mkdir -p /tmp/$d && for f in build-devdeps/*.deb; do dpkg -x "$f" /tmp/$d; done; done
  O=/tmp/devdeps/usr/lib/x86_64-linux-gnu/openblas-openmp
  ln -sf "$(ls $O/libopenblasp-r*.so | head -1)" "$O/libopenblas.so.0"
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/tmp/devdeps/usr/lib/x86_64-linux-gnu:$O${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  rm -rf build-dev && ln -s "$PREBUILT" build-dev
else
  echo "== $(date -u +%FT%TZ) build"
  bash tools/device/build.sh > "$LOG/build.log" 2>&1 || { tail -40 "$LOG/build.log"; exit 1; }
fi
if has tests; then
  echo "== $(( $(date +%s) - t0 ))s tests"
  { build-dev/test_scheduler; echo "test_scheduler rc=$?"; build-dev/test_cuda_ops; echo "test_cuda_ops rc=$?";
    build-dev/test_cuda_attention; echo "test_cuda_attention rc=$?"
    # --report-api-errors no: test_alloc_injection provokes a real cudaMalloc failure on purpose
    for t in test_cuda_ops test_cuda_attention; do
      $SAN --report-api-errors no --print-limit 4 build-dev/$t 2>&1 | grep -E -A7 "ERROR SUMMARY|Invalid|FAILED" | head -60
      echo "memcheck $t rc=${PIPESTATUS[0]}"
    done; } > "$LOG/tests.log" 2>&1
  grep -E "rel L2|rc=|FAILED|ERROR|PASSED|SKIP" "$LOG/tests.log" | head -60
fi
if has fixture; then
  echo "== $(( $(date +%s) - t0 ))s fixture parity (bf16 CUDA vs fp32 transformers, committed reference)"
  H=$(python3 -c "import json; print(json.load(open('tests/fixtures/tiny-hf/config.json'))['num_attention_heads'])")
  { build-dev/bench_cuda_asr --fixture tests/fixtures --dec-heads "$H"; echo "fixture rc=$?"
    CT_CUDA_ATTN=unfused build-dev/bench_cuda_asr --fixture tests/fixtures --dec-heads "$H" |
      sed 's/"fixture_parity"/"fixture_parity_unfused"/; s/"fixture_forced"/"fixture_forced_unfused"/'
    echo "fixture unfused rc=${PIPESTATUS[0]}"
    $SAN --print-limit 4 build-dev/bench_cuda_asr --fixture tests/fixtures --dec-heads "$H" 2>&1 |
      grep -E -A7 "ERROR SUMMARY|Invalid|error" | head -40
    echo "memcheck fixture rc=${PIPESTATUS[0]}"; } > "$LOG/fixture.log" 2>&1
  cat "$LOG/fixture.log" | head -30
fi
if has product; then
  # the product path: cohere-transcribe-inspect --device cuda (asr_gpu.c → gpu_engine.c → the engine)
  # on the six fixture clips as one batch, vs the committed fp32 transformers reference
  echo "== $(( $(date +%s) - t0 ))s product path (inspect --device cuda --dtype bf16 vs fp32 reference)"
  WAVS=$(for c in c0_tones_1s c1_en_us_3s c2_de_noise_6s c3_fr_ar_10s c4_en_gb_30s c5_es_en_34s; do
    printf 'tests/fixtures/audio/%s.wav ' $c; done)
  { if [ -x build-dev/cohere-transcribe-inspect ]; then
      build-dev/cohere-transcribe-inspect --model tests/fixtures/tiny-hf --device cuda --dtype bf16 \
        --max-new-tokens 40 --out /tmp/product.safetensors $WAVS; echo "inspect cuda rc=$?"
      python3 tools/device/compare_inspect.py /tmp/product.safetensors tests/fixtures/reference.safetensors
      echo "product parity rc=$?"
      [ -x build-dev/test_asr_gpu ] && { CT_FIXTURES=$PWD/tests/fixtures CT_BIN=$PWD/build-dev build-dev/test_asr_gpu 2>&1 | tail -12
        echo "test_asr_gpu rc=${PIPESTATUS[0]}"; }
      build-dev/cohere-transcribe-inspect --model tests/fixtures/tiny-hf --device cuda --dtype fp32 \
        --out /tmp/p32.safetensors tests/fixtures/audio/c1_en_us_3s.wav; echo "inspect cuda fp32 (must refuse) rc=$?"
      $SAN --print-limit 4 build-dev/cohere-transcribe-inspect --model tests/fixtures/tiny-hf --device cuda \
        --max-new-tokens 40 --out /tmp/product_san.safetensors $WAVS 2>&1 | grep -E -A7 "ERROR SUMMARY|Invalid" | head -30
      echo "memcheck product rc=${PIPESTATUS[0]}"
    else
      echo "product: build-dev/cohere-transcribe-inspect was not built (see build.log)"; grep product: "$LOG/build.log"
    fi; } > "$LOG/product.log" 2>&1
  cat "$LOG/product.log" | head -30
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
    CT_CUDA_ATTN=unfused build-dev/bench_cuda_asr --model /tmp/tiny --parity /tmp/tiny_parity.safetensors 2>&1 |
      sed 's/"parity"/"parity_unfused"/'
    echo "bench tiny unfused rc=${PIPESTATUS[0]}"; } > "$LOG/tiny.log" 2>&1
  grep -E "parity|rc=|ERROR SUMMARY|error" "$LOG/tiny.log" | head -30
fi
if has full; then
  echo "== $(( $(date +%s) - t0 ))s full model: cohere-transcribe-random-model"
  # the full-size random checkpoint (save_pretrained layout, bf16, seed 0) from the model
  # helper's tool; transformers loads it (tools/reference/check_random_model.py checks that)
  if build-dev/cohere-transcribe-random-model --out /tmp/full --seed 0 > "$LOG/randmodel.log" 2>&1; then
    SRC="--model /tmp/full"
  else
    tail -5 "$LOG/randmodel.log"; echo "random-model tool failed: transformers writes the model instead"
    SRC="--save /tmp/full"
  fi
  echo "== $(( $(date +%s) - t0 ))s full model: transformers"
  (cd /tmp && OUT=/tmp/tfout python3 "$OLDPWD/tools/device/tf_bench.py" --ceilings $SRC \
      --dump /tmp/full_parity.safetensors --cases 128x30x100 --reps 3 2>&1 | grep -v -i warn) > "$LOG/tf_full.log" 2>&1
  tail -5 "$LOG/tf_full.log"
  echo "== $(( $(date +%s) - t0 ))s full model: cuda"
  build-dev/bench_cuda_asr --model /tmp/full --gemm --parity /tmp/full_parity.safetensors --bench 128,30,100 \
      --reps 3 ${MIXED:---mixed 500} --oom > "$LOG/cuda_full.log" 2>&1
  echo "bench full rc=$?" >> "$LOG/cuda_full.log"
  CT_CUDA_PROFILE=1 build-dev/bench_cuda_asr --model /tmp/full --bench 128,30,100 --reps 1 2>&1 | grep profile >> "$LOG/cuda_full.log"
  tail -12 "$LOG/cuda_full.log"
fi
if has ab; then
  # the unfused reference attention (batched score GEMMs + softmax + P·V) on the same batch: the fused kernel's gain
  CT_CUDA_ATTN=unfused build-dev/bench_cuda_asr --model /tmp/full --bench 128,30,100 --reps 3 2>&1 |
    grep '"cuda_bench"' >> "$LOG/cuda_ab.log"  # summarize.py lists it as a variant of cuda_full.log's run
  CT_CUDA_ATTN=unfused CT_CUDA_PROFILE=1 build-dev/bench_cuda_asr --model /tmp/full --bench 128,30,100 --reps 1 2>&1 |
    grep profile | sed 's/"encoder_profile"/"encoder_profile_unfused"/' >> "$LOG/cuda_ab.log"
  # finished rows skipping their decoder attention, off (CT_CUDA_DEC_SKIP=0) vs on (cuda_full.log), mixed lengths
  CT_CUDA_DEC_SKIP=0 build-dev/bench_cuda_asr --model /tmp/full ${MIXED:---mixed 500} 2>&1 | grep '"sched"' |
    sed 's/"run":"/"run":"noskip_/' >> "$LOG/cuda_ab.log"
  tail -4 "$LOG/cuda_ab.log"
fi
echo "== $(( $(date +%s) - t0 ))s summary"
python3 tools/device/summarize.py "$LOG"/*.log | tee "$LOG/summary.txt"
if [ "$(realpath "$LOG")" != "$(realpath "$OUT")" ]; then  # LOG=$OUT: the logs come back as they are
  cp "$LOG/summary.txt" "$OUT/" && tar czf "$OUT/logs.tgz" -C "$LOG" .
fi
