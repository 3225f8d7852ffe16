#!/bin/bash
# dec_profile.sh — where the decoder's time goes on --device cuda (the model
# code over the cuda table), in one device call (issue 13; DP_DEVICES names
# the devices, cuda by default). nsys is not on the device image, so:
#   1. per-step slope: bench_engine decoder seconds at T1 and T2 forced
#      tokens; (dec(T2) − dec(T1)) / (T2 − T1) is one step's wall time, the
#      rest the fixed part (cross K/V, prompt, first step, capture);
#   2. ncu --graph-profiling graph: each graph replay as one workload, its
#      GPU time (kernels and the gaps between them inside the graph);
#   3. ncu per kernel (graph nodes one by one), csv to $OUT for
#      tools/device/dec_profile.py.
#   DP_BATCHES="1 128" DP_STAGES="build model slope graph kernels" bash tools/device/dec_profile.sh
set -uo pipefail
TOP=${OUT:-build-gpu/out}
OUTDIR=$TOP/dp # packed into one file at the end: the device tool returns at most 8 files
mkdir -p "$OUTDIR"
BATCHES=${DP_BATCHES:-1 128}
STAGES=${DP_STAGES:-build model slope graph kernels}
has() { [[ " $STAGES " == *" $1 "* ]]; }
t0=$(date +%s)
el() { echo "== $(($(date +%s) - t0))s $*"; }
. tools/device/devdeps-env.sh
B=build-gpu/bin
if has build; then
  el build
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCT_CUDA=ON -DCT_FFMPEG=OFF \
    -DCMAKE_EXE_LINKER_FLAGS="$DEVDEPS_LDFLAGS" > "$OUTDIR/cmake.log" 2>&1 || { tail -30 "$OUTDIR/cmake.log"; exit 1; }
  cmake --build build-gpu -j "$(nproc)" --target bench_engine cohere-transcribe-random-model ${DP_TARGETS:-} \
    > "$OUTDIR/build.log" 2>&1 || { grep -E 'error|Error' "$OUTDIR/build.log" | head -40; exit 1; }
fi
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
if has model; then
  el "random model"
  [ -d /tmp/full ] || $B/cohere-transcribe-random-model --out /tmp/full --seed 0 > "$OUTDIR/randmodel.log" 2>&1 ||
    { tail -5 "$OUTDIR/randmodel.log"; exit 1; }
fi
bench() { # dev batch tokens runs [env...]
  timeout 120 $B/bench_engine --model /tmp/full --dtype bf16 --device $1 --batch $2 --seconds 30 --tokens $3 \
    --runs $4 2>&1 | grep -E '^\{' | tail -1
}
if has slope; then
  for b in $BATCHES; do
    for dev in ${DP_DEVICES:-cuda}; do
      for t in ${DP_TOKENS:-20 100}; do
        el "slope $dev b$b t$t"
        bench $dev $b $t 3 | tee -a "$OUTDIR/slope.jsonl" | python3 -c "import json,sys
j=json.loads(sys.stdin.read() or '{}'); print({k: j.get(k) for k in ('device','batch','tokens','mel_s','encoder_s','decoder_s')})"
      done
    done
  done
fi
NCU="ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv --page raw"
if has graph; then
  for b in $BATCHES; do
    for dev in ${DP_DEVICES:-cuda}; do
      el "ncu graph $dev b$b"
      timeout 150 $NCU --graph-profiling graph $B/bench_engine --model /tmp/full --dtype bf16 --device $dev --batch $b \
        --seconds 30 --tokens 6 --runs 1 > "$OUTDIR/graph-$dev-$b.csv" 2> "$OUTDIR/graph-$dev-$b.err"
      echo "rc=$? rows $(wc -l < "$OUTDIR/graph-$dev-$b.csv")"
    done
  done
fi
if has kernels; then
  for b in $BATCHES; do
    for dev in ${DP_DEVICES:-cuda}; do
      el "ncu kernels $dev b$b"
      timeout 200 $NCU $B/bench_engine --model /tmp/full --dtype bf16 --device $dev --batch $b \
        --seconds 30 --tokens 4 --runs 1 > "$OUTDIR/kern-$dev-$b.csv" 2> "$OUTDIR/kern-$dev-$b.err"
      echo "rc=$? rows $(wc -l < "$OUTDIR/kern-$dev-$b.csv")"
    done
  done
fi
python3 tools/device/dec_profile.py "$OUTDIR" > "$TOP/summary.txt" 2>&1
tail -90 "$TOP/summary.txt"
tar czf "$TOP/dp.tgz" -C "$TOP" dp && rm -rf "$OUTDIR"
el done
