#!/usr/bin/env bash
# product_bench.sh [--cpu-smoke] — issue 15's benchmark in one device call,
# from the tree root (carry build-devdeps/ and build-pbench/, made here by
# tools/device/fetch-devdeps.sh and tools/device/prepare_product_bench.sh):
#  1. builds cohere-transcribe, bench_corpus, bench_product_engine and
#     cohere-transcribe-random-model with CUDA and without FFmpeg against the
#     carried libraries (tools/device/devdeps-env.sh);
#  2. expands the seed into HOURS (2.5) of audio: bench_corpus, every core;
#     CODECS wav,flac,opus,vorbis on the device (its build has no FFmpeg and
#     the libsndfile backend refuses MP3; m4a/AAC bench_corpus cannot write),
#     the smoke run decodes them as the device does (--audio-backend sndfile);
#  3. writes the full-size random model (seed 0) unless MODEL exists;
#  4. runs the product over the corpus, from process start to exit, with
#     --device cuda and the benchmark mode (--benchmark-tokens-per-second
#     RATE, 3.3), nvidia-smi sampling the GPU's utilisation meanwhile;
#  5. the engine alone over the same segments, batches and token counts
#     (bench_product_engine --device cuda, which also dumps them);
#  6. the transformers baseline over the same segments in the same batches
#     (tools/device/tf_product_bench.py);
#  7. one table (tools/device/product_bench_table.py) into $OUT/product_bench.txt, logs in $OUT/logs.tgz;
#  8. PREP_AB=1: audio preparation alone over the corpus, old vs new in the
#     same call (bench_prep --ab: libsamplerate without split helpers, then
#     the FIR resampler with them, alternated PREP_REPS (1) times, the
#     product's worker count) into $OUT/prep_ab.txt.
# --cpu-smoke runs steps 2 and 4-7 here on the CPU with the tiny model
# (tests/fixtures/tiny-product, fp32, a 3-minute corpus, build/bin, the
# transformers of /work/origenv): every part but the GPU and the build.
# Environment: HOURS, RATE, BATCH (cuda 24, cpu 4), EXTRA_BATCHES (other --batch-size
# runs after the main one, e.g. "128"), AB_BIN (a second product binary run
# the same way, for an A/B in one call; AB_BATCHES its batch sizes), MODEL, BIN, PB (build-pbench),
# ALIGN_WORD=1 (a --alignment word run too; ALIGN_EXTRA: its extra options),
# TRACE=1 (the main binary's runs write --trace; trace_summary.py prints its
# engine timeline), WORK (/tmp/pbench), PY (python3), CORPUS_SEED (1),
# MAX_SECONDS (the longest file: 1800; smoke 60), CODECS, AUDIO_BACKEND.
set -euo pipefail
smoke=0
[ "${1:-}" = --cpu-smoke ] && smoke=1
OUTDIR=${OUT:-/tmp/pbench-out}
WORK=${WORK:-/tmp/pbench}
PB=${PB:-build-pbench}
RATE=${RATE:-3.3}
export PYTHONUNBUFFERED=1 TRANSFORMERS_VERBOSITY=error
if [ $smoke = 1 ]; then
  DEVICE=cpu DTYPE=fp32 HOURS=${HOURS:-0.05} BATCH=${BATCH:-4} MODEL=${MODEL:-tests/fixtures/tiny-product}
  MAX_SECONDS=${MAX_SECONDS:-60} # several short files, so every codec is in the 3 minutes
  # the device's codecs and decoder (libsndfile: its build has no FFmpeg)
  CODECS=${CODECS:-wav,flac,opus,vorbis} AUDIO_BACKEND=${AUDIO_BACKEND:-sndfile}
  BIN=${BIN:-build/bin}
  PY=${PY:-$( [ -x /work/origenv/bin/python ] && echo /work/origenv/bin/python || echo python3)}
else
  DEVICE=cuda DTYPE=bf16 HOURS=${HOURS:-2.5} BATCH=${BATCH:-24} MODEL=${MODEL:-/tmp/full}
  MAX_SECONDS=${MAX_SECONDS:-1800}
  # the device build has no FFmpeg, and the libsndfile backend refuses MP3
  # (src/audio: libsndfile's MP3 decoder prints to stderr): no mp3 there
  CODECS=${CODECS:-wav,flac,opus,vorbis} AUDIO_BACKEND=${AUDIO_BACKEND:-auto}
  BIN=${BIN:-build-gpu/bin} PY=${PY:-python3}
fi
mkdir -p "$OUTDIR" "$WORK"
OUTDIR=$(cd "$OUTDIR" && pwd)
log() { echo "== $(date -u +%T) $*"; }
t_all=$(date +%s)

if [ $smoke = 0 ]; then
  log "build (CUDA, no FFmpeg, carried libraries)"
  . tools/device/devdeps-env.sh
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCT_CUDA=ON -DCT_FFMPEG=OFF \
    -DCMAKE_EXE_LINKER_FLAGS="$DEVDEPS_LDFLAGS" > "$WORK/cmake.log" 2>&1 || { tail -40 "$WORK/cmake.log"; exit 1; }
  cmake --build build-gpu -j "$(nproc)" --target cohere-transcribe bench_corpus bench_product_engine \
    cohere-transcribe-random-model bench_prep bench_align > "$WORK/build.log" 2>&1 || { grep -E 'error|Error' "$WORK/build.log" | head -30; exit 1; }
fi
for b in cohere-transcribe bench_corpus bench_product_engine; do
  [ -x "$BIN/$b" ] || { echo "$BIN/$b missing (here: make -j2 -C build $b)"; exit 1; }
done
if [ ! -d "$PB/seed" ] || [ ! -f "$PB/silero_vad.onnx" ]; then
  [ $smoke = 1 ] || { echo "$PB/seed or $PB/silero_vad.onnx missing: run tools/device/prepare_product_bench.sh here and carry $PB"; exit 1; }
  bash tools/device/prepare_product_bench.sh "$PB"
fi

log "corpus: $HOURS h from $(ls "$PB/seed" | wc -l) seed utterances"
rm -rf "$WORK/corpus" "$WORK/out" "$WORK/plan"
mkdir -p "$WORK/plan"
t0=$(date +%s.%N)
"$BIN/bench_corpus" --seed-dir "$PB/seed" --out "$WORK/corpus" --hours "$HOURS" --seed "${CORPUS_SEED:-1}" \
  --max-seconds "$MAX_SECONDS" --codecs "$CODECS" --jobs "$(nproc)" | tee "$WORK/corpus.log"
echo "corpus_start_end_unix $t0 $(date +%s.%N)" >> "$WORK/corpus.log"
# the manifest stays out of the product's way (it would be skipped: not audio), but keep it apart anyway
mv "$WORK/corpus/manifest.json" "$WORK/manifest.json"

if [ ! -f "$MODEL/config.json" ]; then
  log "model: cohere-transcribe-random-model --seed 0 -> $MODEL"
  "$BIN/cohere-transcribe-random-model" --out "$MODEL" --seed 0 > "$WORK/randmodel.log" 2>&1 || { tail -5 "$WORK/randmodel.log"; exit 1; }
fi

# product, then the engine alone over the same segments: batch $1, into $2,
# the product binary $3 (default $BIN/cohere-transcribe)
run_product() {
  local batch=$1 work=$2 prod=${3:-$BIN/cohere-transcribe}
  log "product: $DEVICE, benchmark mode $RATE tokens/s, batch $batch"
  local sampler=
  if command -v nvidia-smi >/dev/null && [ "$DEVICE" = cuda ]; then
    nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv,noheader,nounits -lms 100 > "$work/gpu.csv" 2>/dev/null &
    sampler=$!
  fi
  local cmd=("$prod" "$WORK/corpus" --model "$MODEL" --device "$DEVICE" --dtype "$DTYPE" --language en
       --audio-backend "$AUDIO_BACKEND"
       --batch-size "$batch" --benchmark-tokens-per-second "$RATE" --formats txt json --existing overwrite
       --output-dir "$work/out" --profile-json "$work/product.json" --vad-weights "$PB/silero_vad.onnx"
       ${PRODUCT_EXTRA:-})
  # TRACE=1: the main binary's runs also write --trace (an AB_BIN may predate it)
  [ "${TRACE:-0}" = 1 ] && [ "$prod" = "$BIN/cohere-transcribe" ] && cmd+=(--trace "$work/trace.json")
  echo "${cmd[*]}" > "$work/product.cmd"
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  # product.tlog: the console's lines with seconds since the start (the
  # console flushes each line; "ASR: S/S" closes a file's ASR), a timeline
  # of when each file's ASR finished against the wall
  "${cmd[@]}" 2>&1 | tee "$work/product.log" | python3 -u -c '
import sys, time
t0 = float(sys.argv[1])
for line in sys.stdin:
    print(f"{time.time() - t0:8.3f} {line}", end="")' "$t0" > "$work/product.tlog" || rc=$?
  t1=$(date +%s.%N)
  awk '/ASR: / { if (!f) f = $1; l = $1 } END { printf "timeline: first file ASR done %s s, last %s s, exit %.3f s\n", f, l, '"$t1 - $t0"' }' \
    "$work/product.tlog" | tee -a "$work/product.time.txt" || true
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null && wait "$sampler" 2>/dev/null || true
  printf 'product_exit %s\nproduct_start_unix %s\nproduct_end_unix %s\n' "$rc" "$t0" "$t1" > "$work/product.time"
  tail -4 "$work/product.log"
  if [ -f "$work/trace.json" ]; then
    python3 tools/device/trace_summary.py "$work/trace.json" --wall "$(python3 -c "print($t1 - $t0)")" | tee "$work/trace_summary.txt" || true
  fi
  [ $rc = 0 ] || echo "product: exit $rc (the table says so)"

  log "engine alone over the same segments (batch $batch)"
  local ecmd=("$BIN/bench_product_engine" --model "$MODEL" --profile "$work/product.json" --out-dir "$work/out"
        --device "$DEVICE" --dtype "$DTYPE" --threads "$(nproc)" --batch-size "$batch" --dump "$work/plan")
  echo "${ecmd[*]}" > "$work/engine.cmd"
  rc=0
  "${ecmd[@]}" > "$work/engine.txt" 2> "$work/engine.log" || rc=$?
  echo "engine_exit $rc" >> "$work/engine.txt"
  grep -E "rtfx|mismatch" "$work/engine.txt" || true
}
run_product "$BATCH" "$WORK"

log "transformers baseline over the same batches"
rc=0
"$PY" tools/device/tf_product_bench.py --model "$MODEL" --plan "$WORK/plan" --device "$DEVICE" --json "$WORK/tf.json" \
  > "$WORK/tf.log" 2>&1 || rc=$?
[ $rc = 0 ] || { echo "transformers baseline: exit $rc"; tail -5 "$WORK/tf.log"; }

log "table"
flag=()
[ $smoke = 1 ] && flag=(--cpu-smoke)
python3 tools/device/product_bench_table.py "$WORK" "${flag[@]}" | tee "$OUTDIR/product_bench.txt"
# EXTRA_BATCHES: the product and the engine alone again at other batch
# sizes (a user's --batch-size), each with its own table; the transformers
# baseline stays the one at the original's batches above
for b in ${EXTRA_BATCHES:-}; do
  wb="$WORK/batch$b"
  rm -rf "$wb" && mkdir -p "$wb/plan"
  cp "$WORK/manifest.json" "$WORK/corpus.log" "$wb/"
  [ -f "$WORK/tf.json" ] && cp "$WORK/tf.json" "$wb/"
  run_product "$b" "$wb"
  log "table, batch $b (transformers at batch $BATCH)"
  python3 tools/device/product_bench_table.py "$wb" "${flag[@]}" | tee "$OUTDIR/product_bench_b$b.txt"
done
# ALIGN_WORD=1: the product again with --alignment word over a full-size
# random MMS-300M aligner (bench_align --make-random, the 31-class
# vocabulary and tokenizer files of tests/fixtures/tiny-aligner), and the
# word run's wall against the segment run's above (issue 14's bound: +60 %)
if [ "${ALIGN_WORD:-0}" = 1 ]; then
  al=${ALIGNER:-$WORK/aligner} ww="$WORK/word" # ALIGNER: an aligner folder to use instead
  if [ ! -f "$al/model.safetensors" ]; then
    "$BIN/bench_align" --make-random "$al" > "$WORK/aligner.log" 2>&1 || { tail -5 "$WORK/aligner.log"; exit 1; }
    snap=$(ls -d tests/fixtures/tiny-aligner/hub/models--*/snapshots/*)
    cp "$snap"/vocab.json "$snap"/tokenizer_config.json "$snap"/special_tokens_map.json "$snap"/preprocessor_config.json "$al/"
  fi
  rm -rf "$ww" && mkdir -p "$ww/plan"
  cp "$WORK/manifest.json" "$WORK/corpus.log" "$ww/"
  PRODUCT_EXTRA="--alignment word --aligner-model $al ${ALIGN_EXTRA:-}" run_product "$BATCH" "$ww"
  log "table, --alignment word"
  python3 tools/device/product_bench_table.py "$ww" "${flag[@]}" | tee "$OUTDIR/product_bench_word.txt"
  python3 - "$WORK/product.time" "$ww/product.time" <<'PY' | tee -a "$OUTDIR/product_bench_word.txt"
import sys
def wall(p):
    d = dict(l.split() for l in open(p))
    return float(d["product_end_unix"]) - float(d["product_start_unix"])
s, w = wall(sys.argv[1]), wall(sys.argv[2])
print(f"word/segment wall: {w:.2f} s / {s:.2f} s = {w / s:.3f} (target <= 1.6: {'met' if w <= 1.6 * s else 'NOT met'})")
PY
fi
# AB_BIN: another cohere-transcribe binary (say, built from an earlier
# commit) over the same corpus at batch $BATCH, after the runs above: an
# A/B in one call, with its own engine-alone bound as a noise check
# (AB_BATCHES: the batch sizes of the A/B runs, default $BATCH)
if [ -n "${AB_BIN:-}" ]; then
  for b in ${AB_BATCHES:-$BATCH}; do
    wa="$WORK/ab$b"
    rm -rf "$wa" && mkdir -p "$wa/plan"
    cp "$WORK/manifest.json" "$WORK/corpus.log" "$wa/"
    [ -f "$WORK/tf.json" ] && cp "$WORK/tf.json" "$wa/"
    run_product "$b" "$wa" "$AB_BIN"
    log "table, $AB_BIN, batch $b"
    python3 tools/device/product_bench_table.py "$wa" "${flag[@]}" | tee "$OUTDIR/product_bench_ab$b.txt"
  done
fi
(cd "$WORK" && shopt -s nullglob && tar czf "$OUTDIR/logs.tgz" ./*.log ./*.txt ./*.json ./*.cmd ./*.time ./*.csv ./batch*/*.log ./batch*/*.txt ./batch*/*.json ./batch*/*.time ./batch*/*.csv ./ab*/*.log ./ab*/*.txt ./ab*/*.json ./ab*/*.time ./ab*/*.csv ./*.tlog ./*/*.tlog ./word/*.log ./word/*.txt ./word/*.json ./word/*.time)
if [ "${PREP_AB:-0}" = 1 ]; then
  log "preparation alone: old (sinc, unsplit) vs new (fir, split), bench_prep --ab"
  ab_backend=$AUDIO_BACKEND
  [ "$ab_backend" = auto ] && ab_backend=sndfile # what the device's build decodes with anyway
  w=$(( $(nproc) - 1 )); [ $w -gt 8 ] && w=8; [ $w -lt 1 ] && w=1 # ct_prep_auto_workers
  "$BIN/bench_prep" "$WORK/corpus" "$PB/silero_vad.onnx" "${PREP_REPS:-1}" "$w" --backend "$ab_backend" --ab \
    2>&1 | tee "$OUTDIR/prep_ab.txt"
fi
log "done in $(( $(date +%s) - t_all )) s"
