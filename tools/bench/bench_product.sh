#!/usr/bin/env bash
# bench_product.sh [WORK] — the issue's CPU speed benchmark: `cohere-transcribe`
# over a deterministic ~10-minute multi-file corpus with the full-size random
# model (bf16, 2 threads, --max-new-tokens 100, --truncation-policy warn), then
# the engine alone (bench_product_engine) over the same segments, batches and
# token counts read back from the product's checkpoints and profile; prints
# product wall, engine time, their ratio and the product's stage breakdown.
# WORK defaults to /tmp/ct-bench (corpus, outputs, logs); the model goes to
# $MODEL (default /tmp/ct-bench-model, ~4 GB, reused when present).
# Environment: FILES (20: the ~10-minute corpus; fewer: its first FILES files),
# BIN (build/bin), MODEL, THREADS (2), VAD_WEIGHTS
# (build/testdata/silero/silero_vad.onnx), SKIP_PRODUCT=1 (reuse the last
# product run), SKIP_ENGINE=1, TWIN_TIMEOUT=S (also run the Python twin,
# /work/origenv/bin/cohere-transcribe, fp32, capped at S seconds; 0: not run).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-/tmp/ct-bench}
BIN=${BIN:-$root/build/bin}
MODEL=${MODEL:-/tmp/ct-bench-model}
THREADS=${THREADS:-2}
VAD_WEIGHTS=${VAD_WEIGHTS:-$root/build/testdata/silero/silero_vad.onnx}
TWIN_TIMEOUT=${TWIN_TIMEOUT:-0}
mkdir -p "$work"
log=$work/bench.log
say() { echo "$*" | tee -a "$log"; }

bash "$root/tools/bench/bench_product_corpus.sh" "$work/corpus" "${FILES:-20}"
[ -f "$MODEL/model.safetensors" ] || "$BIN/cohere-transcribe-random-model" --out "$MODEL" --seed 0

say "== $(date -u '+%F %T UTC')  commit $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- src || echo ' (src modified)')"
say "   nproc $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
say "   corpus: $(ls "$work/corpus" | wc -l) files, $(for f in "$work"/corpus/*; do ffprobe -v error -show_entries format=duration -of csv=p=0 "$f"; done | awk '{s+=$1} END {printf "%.1f", s}') s"

if [ "${SKIP_PRODUCT:-0}" != 1 ]; then
  rm -rf "$work/out"
  say "   load before product: $(cut -d' ' -f1-3 /proc/loadavg)"
  cmd=("$BIN/cohere-transcribe" "$work/corpus" --model "$MODEL" --language en --device cpu --dtype bf16
       --threads "$THREADS" --max-new-tokens 100 --truncation-policy warn --existing overwrite
       --output-dir "$work/out" --profile-json "$work/product.json" --vad-weights "$VAD_WEIGHTS")
  say "   product: ${cmd[*]}"
  /usr/bin/time -f '%e %U %S %M' -o "$work/product.time" "${cmd[@]}" > "$work/product.log" 2>&1
  say "   load after product: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
if [ "${SKIP_ENGINE:-0}" != 1 ]; then
  say "   load before engine: $(cut -d' ' -f1-3 /proc/loadavg)"
  ecmd=("$BIN/bench_product_engine" --model "$MODEL" --profile "$work/product.json" --out-dir "$work/out"
        --dtype bf16 --threads "$THREADS" --batch-size 4)
  say "   engine: ${ecmd[*]}"
  /usr/bin/time -f '%e %U %S %M' -o "$work/engine.time" "${ecmd[@]}" > "$work/engine.txt" 2> "$work/engine.log"
  say "   load after engine: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
if [ "$TWIN_TIMEOUT" != 0 ]; then
  bash "$root/tools/bench/bench_product_twin.sh" "$work" "$MODEL" "$TWIN_TIMEOUT" | tee -a "$log"
fi

python3 - "$work" <<'EOF' | tee -a "$log"
import json, sys
w = sys.argv[1]
p = json.load(open(f"{w}/product.json"))
pt = open(f"{w}/product.time").read().split()
e = {}
for line in open(f"{w}/engine.txt"):
    k, *v = line.split()
    e[k] = v
et = open(f"{w}/engine.time").read().split()
wall = float(pt[0])
eng = float(e["engine_transcribe_seconds"][0]); load = float(e["engine_load_seconds"][0])
run = p["run"]; t = p["timings"]; a = p["asr"]
print(f"product wall {wall:.2f} s (user {pt[1]} s, sys {pt[2]} s, max RSS {int(pt[3])/1048576:.2f} GiB); "
      f"profile elapsed {run['elapsed_seconds']:.2f} s, {run['successful_files']} files ok, "
      f"{run['failed_files']} failed, {run['successful_audio_seconds']:.1f} s audio, RTFx {run['real_time_factor_x']:.2f}")
print(f"  segments {a['processor_rows']}, batches {a['batches']}, generated tokens {a['generated_tokens']}, "
      f"OOM retries {a['oom_retries']}")
ok_calls = sum(b['generation_call_wall_seconds'] for b in a['batch_history'] if 'event' not in b)
print(f"  successful ASR calls {ok_calls:.3f} s; ASR pass wall minus them (failed OOM calls) "
      f"{t['asr_generation_call_wall_seconds'] - ok_calls:.3f} s")
for k in ("input_validation_seconds", "decode_worker_seconds", "vad_inference_seconds", "preparation_wait_seconds",
          "asr_load_seconds", "asr_wall_seconds", "asr_generation_call_wall_seconds", "asr_generate_device_seconds"):
    print(f"  {k:38s} {t.get(k) if t.get(k) is None else round(t[k], 3)}")
rest = {k: v for k, v in t.items() if isinstance(v, (int, float)) and v > 0.05 and k not in (
    "input_validation_seconds", "decode_worker_seconds", "vad_inference_seconds", "vad_worker_seconds",
    "preparation_wait_seconds", "asr_load_seconds", "asr_wall_seconds", "asr_generation_call_wall_seconds",
    "asr_generate_device_seconds")}
for k, v in rest.items():
    print(f"  {k:38s} {v:.3f}")
print(f"engine (process wall {et[0]} s, max RSS {int(et[3])/1048576:.2f} GiB): load {load:.2f} s, "
      f"ct_asr_transcribe {eng:.2f} s (mel/encoder/decoder {' / '.join(e['engine_mel_encoder_decoder_seconds'])} s), "
      f"{' '.join(e['engine_calls'])}; {' '.join(e['engine_row_steps'])}; OOM calls re-run {e['oom_replayed'][0]} taking {e['oom_replayed'][2]} s (not in the transcribe time); batch_mismatches {e['batch_mismatches'][0]}")
print(f"ratio product wall / (engine load + transcribe) = {wall / (eng + load):.3f}")
print(f"ratio product wall / engine transcribe         = {wall / eng:.3f}")
print(f"ratio product ASR pass / engine transcribe     = {t['asr_generation_call_wall_seconds'] / eng:.3f}")
print(f"ratio product successful calls / engine        = {ok_calls / eng:.3f}")
EOF
