#!/bin/bash
# gpu_tests.sh — the GPU machine's checks from the CMake build users build
# (issue 13): configure build-gpu against the carried .debs
# (devdeps-env.sh), build the GPU tests and tools, run `ctest -L gpu` with
# CT_REQUIRE_GPU=1 (a skip is a failure there), compute-sanitizer memcheck
# on the op tests and on a fixture run of the product's --device cuda (the
# model code over the backend table, leaks included), racecheck on the
# tests that run attention kernels, then bench_engine and bench_sched of --device cuda on
# one full-size random model (stages bench and sched; an A/B against another
# build is tools/device/product_bench.sh's AB_BIN).
# Stage align (issue 14): the wav2vec2 aligner on the device against
# transformers' Wav2Vec2ForCTC bf16 sdpa on random MMS-300M weights
# (tools/device/tf_align.py): emissions parity on clips of ALIGN_CLIPS
# seconds, then speed at ALIGN_BATCHES windows per batch and the bf16 GEMM
# rate, all in the same call.
#   STAGES="build tests parity sched memcheck" bash tools/device/gpu_tests.sh   (tree root)
# The stages run in the order build, tests, parity, align, bench, sched, product, memcheck.
# Stage product: cohere-transcribe --device cuda over the fixture clips (tiny
# model, VAD none) and the e2e tests that have a cuda variant.
# TESTS_R narrows `ctest -L gpu` to the tests matching it (ctest -R).
# Logs to $OUT (device call) or build-gpu/out.
set -uo pipefail
OUTDIR=${OUT:-build-gpu/out}
LOGS=$OUTDIR/logs # packed into one file at the end: the device tool returns at most 8 files
mkdir -p "$OUTDIR" "$LOGS"
STAGES=${STAGES:-build tests memcheck bench}
# the Silero weights for the product and e2e stages: SILERO, else the copy
# prepare_product_bench.sh leaves in build-pbench/ (carry it)
SILERO=${SILERO:-$([ -f build-pbench/silero_vad.onnx ] && echo build-pbench/silero_vad.onnx)}
BENCH_BATCHES=${BENCH_BATCHES:-1 32 128}
has() { [[ " $STAGES " == *" $1 "* ]]; }
t0=$(date +%s)
el() { echo "== $(($(date +%s) - t0))s $*"; }
. tools/device/devdeps-env.sh
export CT_FIXTURES=$PWD/tests/fixtures CT_BIN=$PWD/build-gpu/bin CT_SOURCE=$PWD CT_TESTDATA=$PWD/build-gpu/testdata
if has build; then
  el build
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCT_CUDA=ON -DCT_FFMPEG=OFF \
    -DCMAKE_EXE_LINKER_FLAGS="$DEVDEPS_LDFLAGS" > "$LOGS/cmake.log" 2>&1 || { tail -30 "$LOGS/cmake.log"; exit 1; }
  cmake --build build-gpu -j "$(nproc)" --target test_cuda_ops test_cuda_attention test_cuda_backend test_asr_gpu \
    test_asr_cuda_ops test_generate_forced test_generate_device test_mel_device test_cuda_w2v2_ops cohere-transcribe-inspect cohere-transcribe-random-model bench_engine bench_parity_ops \
    bench_sched bench_align cohere-transcribe cohere-transcribe-doctor bench_product_engine > "$LOGS/build.log" 2>&1 ||
    { grep -E 'error|Error' "$LOGS/build.log" | head -40; exit 1; }
  el built
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if has tests; then
  el "ctest -L gpu"
  (cd build-gpu && CT_REQUIRE_GPU=1 ctest -L gpu ${TESTS_R:+-R "$TESTS_R"} -FA testdata --output-on-failure --timeout 300) > "$OUTDIR/ctest.log" 2>&1
  echo "ctest rc=$?"; grep -E "tests passed|Passed|Failed|\*\*\*" "$OUTDIR/ctest.log" | head -20
  grep -E "rel L2|departs" "$OUTDIR/ctest.log" > "$OUTDIR/ctest-numbers.txt"
fi
if has bench || has parity || has sched; then
  el "random model"
  [ -d /tmp/full ] || build-gpu/bin/cohere-transcribe-random-model --out /tmp/full --seed 0 > "$LOGS/randmodel.log" 2>&1 ||
    { tail -5 "$LOGS/randmodel.log"; exit 1; }
fi
if has parity; then
  # transformers bf16 (sdpa) on the same checkpoint: its features, encoder output
  # and logits after the prompt; then ours (--device cuda, bf16 and fp16) against them
  el "parity: transformers dump"
  (cd /tmp && OUT=/tmp/tfout python3 "$OLDPWD/tools/device/tf_bench.py" --model /tmp/full --cases "" \
    --dump /tmp/full_parity.safetensors 2>&1 | grep -v -i warn) > "$LOGS/tf_dump.log" 2>&1
  tail -2 "$LOGS/tf_dump.log"
  el "parity: ours"
  build-gpu/bin/bench_parity_ops --model /tmp/full --parity /tmp/full_parity.safetensors --device cuda --dtype bf16
  build-gpu/bin/bench_parity_ops --model /tmp/full --parity /tmp/full_parity.safetensors --device cuda --dtype fp16
fi
if has align; then
  # one random checkpoint (transformers' own save_pretrained), our emissions of
  # the clips and our speed, then transformers' emissions of the same samples
  # in one padded batch, its speed and the GEMM rate (one model load)
  el "align: random aligner"
  [ -d /tmp/mms300m ] || python3 tools/device/tf_align.py --make /tmp/mms300m > "$LOGS/align-make.log" 2>&1 ||
    { tail -5 "$LOGS/align-make.log"; exit 1; }
  el "align: ours"
  build-gpu/bin/bench_align --model /tmp/mms300m --backend cuda --dtype bf16 --batch 16 --clips ${ALIGN_CLIPS:-10,70,35} \
    --save /tmp/align_em.f32 --save-pcm /tmp/align_pcm.f32 2>&1 | tail -4
  # ALIGN_VARIANTS: default, tune (cuBLASLt candidates timed, --gemm-tune)
  for var in ${ALIGN_VARIANTS:-default}; do
    case $var in tune) ev="--gemm-tune" ;; *) ev="" ;; esac
    el "align: ours ($var)"
    timeout 200 build-gpu/bin/bench_align --model /tmp/mms300m --backend cuda --dtype bf16 $ev \
      --batches ${ALIGN_BATCHES:-16,32,64} --reps 3 2>&1 | grep -E "emissions|bench_align" | sed "s/^{/{\"variant\":\"$var\",/" |
      tee -a "$OUTDIR/align-ours.jsonl"
  done
  if [ -n "${ALIGN_PROFILE:-}" ]; then # every op between two synchronisations, one batch
    timeout 100 build-gpu/bin/bench_align --model /tmp/mms300m --backend cuda --dtype bf16 --batches $ALIGN_PROFILE \
      --reps 2 --profile-ops > "$OUTDIR/align-profile.jsonl" 2>&1
    tail -25 "$OUTDIR/align-profile.jsonl"
  fi
  el "align: transformers"
  timeout 240 python3 tools/device/tf_align.py --model /tmp/mms300m --parity /tmp/align_pcm.f32 --clips ${ALIGN_CLIPS:-10,70,35} \
    --ours /tmp/align_em.f32 --bench ${ALIGN_BATCHES:-16,32,64} --reps 3 2>&1 | grep -v -i warn | tee "$OUTDIR/align-tf.jsonl" | tail -12
  if [ -f "${ALIGN_VAD:-}" ]; then # the product: --alignment word on cuda and on cpu, tiny ASR model and tiny aligner
    el "align: product"
    for dev in cuda cpu; do
      rm -rf /tmp/align_e2e_$dev && mkdir -p /tmp/align_e2e_$dev
      cp tests/fixtures/audio/c1_en_us_3s.wav tests/fixtures/audio/c5_es_en_34s.wav /tmp/align_e2e_$dev/
      HF_HUB_CACHE=$PWD/tests/fixtures/tiny-aligner/hub HF_HUB_OFFLINE=1 timeout 100 build-gpu/bin/cohere-transcribe \
        /tmp/align_e2e_$dev --model tests/fixtures/tiny-product --vad-weights "$ALIGN_VAD" --language en \
        --max-new-tokens 8 --alignment word --device $dev --formats json > "$LOGS/align-product-$dev.log" 2>&1
      echo "product $dev rc=$?"
    done
    python3 -c "import json,sys
for n in ('c1_en_us_3s', 'c5_es_en_34s'):
    w = {d: json.load(open('/tmp/align_e2e_%s/%s.json' % (d, n)))['words'] for d in ('cuda', 'cpu')}
    key = lambda x: (x['text'], x['start'], x['end'], x['timing_source'])
    same = sum(key(a) == key(b) for a, b in zip(w['cuda'], w['cpu']))
    src = sorted(set(x['timing_source'] for x in w['cuda']))
    print(n, 'words cuda', len(w['cuda']), 'cpu', len(w['cpu']), 'identical', same, 'sources', src)"
  fi
fi
if has bench; then
  # BENCH_DEVICES: cuda (auto: the device loop, a graph), cuda:host (the host loop)
  for b in $BENCH_BATCHES; do
    for spec in ${BENCH_DEVICES:-cuda}; do
      dev=${spec%%:*} loop=auto
      [[ $spec == *:* ]] && loop=${spec#*:}
      el "bench_engine $dev (loop $loop) batch $b"
      timeout 200 build-gpu/bin/bench_engine --model /tmp/full --dtype bf16 --device $dev --loop $loop --batch $b \
        --seconds 30 --tokens 100 --runs 3 > "$LOGS/bench-$dev-$loop-$b.log" 2>&1 || echo "bench $spec $b: rc=$?"
      grep -E "^load" "$LOGS/bench-$dev-$loop-$b.log" | tail -1
    done
  done
fi
if has sched; then
  # 500 mixed 2–35 s clips through ct_sched_run into ct_asr_transcribe
  for dev in cuda; do
    el "bench_sched $dev"
    timeout 150 build-gpu/bin/bench_sched --model /tmp/full --dtype bf16 --device $dev --clips ${SCHED_CLIPS:-500} \
      --runs 2 > "$LOGS/sched-$dev.log" 2>&1 || echo "sched $dev: rc=$?"
    grep -E "^\{" "$LOGS/sched-$dev.log" | tail -1
    # SCHED_EXTRA: the same clips with other batch caps, e.g. "--rows 512 --audio-seconds 4480"
    if [ -n "${SCHED_EXTRA:-}" ]; then
      timeout 150 build-gpu/bin/bench_sched --model /tmp/full --dtype bf16 --device $dev --clips ${SCHED_CLIPS:-500} \
        --runs 2 $SCHED_EXTRA > "$LOGS/sched-$dev-extra.log" 2>&1 || echo "sched $dev extra: rc=$?"
      grep -E "^\{" "$LOGS/sched-$dev-extra.log" | tail -1
    fi
  done
fi
if has product; then
  # the product's --device cuda on the fixture clips (tiny model; --vad none):
  # bf16 and fp16, --device-index 0 (and 1, which must fail), --trace (its
  # dither/mel/encoder/decoder spans), benchmark mode; txt against --device
  # cpu; a file whose last fixed window is 200 samples (under the GPU mel's
  # 320: that batch takes the CPU mel); the doctor's GPU lines; then the e2e
  # tests that look at a GPU (not e2e_doctor: it needs an FFmpeg build and
  # fails here at its audio-libraries line, before the CUDA one)
  el "product: cohere-transcribe --device cuda"
  P=/tmp/ct-prod && rm -rf $P && mkdir -p $P/in $P/tailin && cp tests/fixtures/audio/*.wav $P/in/
  python3 -c "import wave,struct,random
w=wave.open('$P/tailin/short_tail.wav','wb'); w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
random.seed(1); w.writeframes(b''.join(struct.pack('<h',int(random.gauss(0,2000))) for _ in range(7*16000+200)))"
  run_prod() { # name extra...
    local n=$1; shift
    timeout 120 build-gpu/bin/cohere-transcribe ${IN:-$P/in} --model tests/fixtures/tiny-product --vad none --max-dur 7 \
      --output-dir $P/$n --max-new-tokens 24 --formats txt json "$@" > "$LOGS/prod-$n.log" 2>&1
    echo "product $n rc=$? $(grep -cE '^' "$LOGS/prod-$n.log") log lines, $(ls $P/$n/*.txt 2>/dev/null | wc -l) txt"
  }
  run_prod cpu --device cpu
  run_prod cuda --device cuda --device-index 0 --trace $P/trace.json --profile-json $P/profile.json
  run_prod fp16 --device cuda --dtype fp16
  run_prod bench --device cuda --benchmark-tokens-per-second 3.3
  run_prod idx1 --device cuda --device-index 1 # one GPU: must fail naming device 1
  grep -m1 -iE "device 1|error" "$LOGS/prod-idx1.log"
  IN=$P/tailin run_prod tail --device cuda --trace $P/trace-tail.json
  [ -f "${SILERO:-}" ] && build-gpu/bin/cohere-transcribe-doctor --vad-weights "$SILERO" 2>&1 |
    grep -E "CUDA|devices|accelerator|automatic settings"
  for f in $P/cpu/*.txt; do cmp -s "$f" "$P/cuda/$(basename "$f")" && echo "same   $(basename "$f")" ||
    echo "DIFFER $(basename "$f"): $(head -c 80 "$f") | $(head -c 80 "$P/cuda/$(basename "$f")")"; done
  python3 -c "import json,collections
t=json.load(open('$P/trace.json')); ev=t['traceEvents'] if isinstance(t,dict) else t
print('trace spans', dict(collections.Counter(e.get('name') for e in ev if e.get('ph')=='X')))
for f in ('$P/trace.json', '$P/trace-tail.json'):
    t=json.load(open(f)); ev=t['traceEvents'] if isinstance(t,dict) else t
    print(f.split('/')[-1], [(e['name'], e.get('args')) for e in ev if e.get('name') in ('mel','dither')][:4])" 2>&1 | tail -4
  cp $P/trace.json $P/trace-tail.json $P/profile.json "$LOGS/" 2>/dev/null
  el "e2e with a cuda variant"
  # the e2e tests read the Silero weights from testdata (the setup fixture fetches them; the device
  # reaches nothing): SILERO names a carried copy (tools/device/prepare_product_bench.sh makes one)
  [ -f "${SILERO:-}" ] && mkdir -p build-gpu/testdata/silero && cp "$SILERO" build-gpu/testdata/silero/
  (cd build-gpu && timeout 200 ctest -R 'e2e_(transcribe_bad_inputs|benchmark_mode|trace)$' -FA testdata \
    --output-on-failure) > "$LOGS/e2e.log" 2>&1
  echo "e2e rc=$?"; grep -E "tests passed|Passed|Failed|\*\*\*" "$LOGS/e2e.log" | head -8
fi
if has memcheck; then
  el memcheck
  for t in test_cuda_backend test_asr_cuda_ops test_generate_device test_mel_device test_cuda_w2v2_ops; do
    compute-sanitizer --tool memcheck --print-limit 50 --error-exitcode 9 build-gpu/tests/$t \
      > "$LOGS/memcheck-$t.log" 2>&1
    echo "memcheck $t rc=$? $(grep -E 'ERROR SUMMARY' "$LOGS/memcheck-$t.log" | tail -1)"
    grep -m3 -A12 -E '^========= (Invalid|Program hit|Uninit|Error)' "$LOGS/memcheck-$t.log" | head -45
  done
  # a fixture run of the product (tiny model, --device cuda: load, mel,
  # encoder, graphs of the decoder step, publication), device leaks included
  P=/tmp/ct-memcheck && rm -rf $P && mkdir -p $P && cp tests/fixtures/audio/*.wav $P/
  compute-sanitizer --tool memcheck --leak-check full --print-limit 50 --error-exitcode 9 \
    build-gpu/bin/cohere-transcribe $P --model tests/fixtures/tiny-product --vad none --max-dur 7 --device cuda \
    --output-dir $P/out --max-new-tokens 24 --formats txt json > "$LOGS/memcheck-product.log" 2>&1
  echo "memcheck product rc=$? $(grep -E 'ERROR SUMMARY' "$LOGS/memcheck-product.log" | tail -1), $(ls $P/out/*.txt 2>/dev/null | wc -l) txt"
  grep -m3 -A12 -E '^========= (Invalid|Program hit|Uninit|Error|Leaked)' "$LOGS/memcheck-product.log" | head -45
  # racecheck on every test that runs an attention kernel: the decoder's and
  # the fused rel-pos (test_cuda_backend), the unfused and fused rel-pos
  # pieces (test_cuda_attention), the aligner's full attention (test_cuda_w2v2_ops)
  for t in test_cuda_backend test_cuda_attention test_cuda_w2v2_ops; do
    timeout ${RACE_TIMEOUT:-240} compute-sanitizer --tool racecheck --error-exitcode 9 build-gpu/tests/$t \
      > "$LOGS/racecheck-$t.log" 2>&1
    echo "racecheck $t rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$LOGS/racecheck-$t.log" | tail -1)"
    grep -m3 -B2 -A8 -E 'Race reported|Error:' "$LOGS/racecheck-$t.log" | head -30
  done
fi
tar czf "$OUTDIR/logs.tgz" -C "$OUTDIR" logs && rm -rf "$LOGS"
el done
