#!/bin/bash
# align_ab.sh — the word aligner's A/B on the device in one call (issue 14):
# this tree's bench_align against a baseline tree's (BASE: a copy of the tree
# without the change, e.g. main's checkout before an overlay is copied over
# it), both built side by side while transformers writes the random MMS-300M
# weights; then interleaved runs (new, base, new) at ALIGN_BATCHES windows a
# batch, a per-op profile of each at ALIGN_PROFILE, the parity of ours and
# transformers' Wav2Vec2ForCTC bf16 sdpa speed with the bf16 GEMM rate
# (tf_align.py, one process), the GPU op test and its memcheck.
#   BASE=/tmp/base bash tools/device/align_ab.sh            (tree root, device)
set -uo pipefail
OUTDIR=${OUT:-build-gpu/out}
mkdir -p "$OUTDIR"
BATCHES=${ALIGN_BATCHES:-16,32,64}
t0=$(date +%s)
el() { echo "== $(($(date +%s) - t0))s $*"; }
. tools/device/devdeps-env.sh
bld() { # tree, name, jobs, targets
  cmake -S "$1" -B "$1/build-gpu" -DCMAKE_BUILD_TYPE=Release -DCT_CUDA=ON -DCT_FFMPEG=OFF \
    -DCMAKE_EXE_LINKER_FLAGS="$DEVDEPS_LDFLAGS" > "$OUTDIR/cmake-$2.log" 2>&1 &&
    cmake --build "$1/build-gpu" -j "$3" --target $4 > "$OUTDIR/build-$2.log" 2>&1 ||
    { echo "build $2 failed"; grep -E 'error' "$OUTDIR/build-$2.log" | head -20; }
}
el "build new + base, random aligner"
bld . new 9 "bench_align test_cuda_w2v2_ops" &
bld "$BASE" base 7 bench_align &
[ -d /tmp/mms300m ] || python3 tools/device/tf_align.py --make /tmp/mms300m > "$OUTDIR/make.log" 2>&1 &
wait
el built
[ -x build-gpu/bin/bench_align ] && [ -x "$BASE/build-gpu/bin/bench_align" ] || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
export CT_FIXTURES=$PWD/tests/fixtures
(cd build-gpu && CT_REQUIRE_GPU=1 ./tests/test_cuda_w2v2_ops) > "$OUTDIR/test.log" 2>&1
echo "test_cuda_w2v2_ops rc=$?"; grep -E "rel L2|FAIL|PASSED" "$OUTDIR/test.log" | head -40
el "parity clips (ours)"
build-gpu/bin/bench_align --model /tmp/mms300m --backend cuda --dtype bf16 --batch 16 --clips ${ALIGN_CLIPS:-10,70,35} \
  --save /tmp/align_em.f32 --save-pcm /tmp/align_pcm.f32 2>&1 | tail -3
run() { # binary dir, label
  timeout 120 "$1/bench_align" --model /tmp/mms300m --backend cuda --dtype bf16 --batches "$BATCHES" --reps 3 2>&1 |
    grep -E "emissions" | sed "s/^{/{\"variant\":\"$2\",/" | tee -a "$OUTDIR/align-ab.jsonl"
}
for v in new base new; do
  el "bench $v"
  if [ $v = new ]; then run build-gpu/bin new; else run "$BASE/build-gpu/bin" base; fi
done
el "transformers"
timeout 200 python3 tools/device/tf_align.py --model /tmp/mms300m --parity /tmp/align_pcm.f32 \
  --clips ${ALIGN_CLIPS:-10,70,35} --ours /tmp/align_em.f32 --bench "$BATCHES" --reps 3 2>&1 | grep -v -i warn |
  tee "$OUTDIR/align-tf.jsonl" | tail -12
for v in new base; do
  el "profile $v"
  d=build-gpu/bin; [ $v = base ] && d=$BASE/build-gpu/bin
  timeout 60 $d/bench_align --model /tmp/mms300m --backend cuda --dtype bf16 --batches ${ALIGN_PROFILE:-32} \
    --reps 2 --profile-ops > "$OUTDIR/profile-$v.jsonl" 2>&1
  grep -E "emissions" "$OUTDIR/profile-$v.jsonl" | tail -1
done
el memcheck
(cd build-gpu && CT_REQUIRE_GPU=1 timeout ${MEMCHECK_TIMEOUT:-90} compute-sanitizer --tool memcheck --print-limit 20 \
  --error-exitcode 9 ./tests/test_cuda_w2v2_ops) > "$OUTDIR/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUTDIR/memcheck.log" | tail -1)"
el done
