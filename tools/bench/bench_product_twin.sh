#!/usr/bin/env bash
# bench_product_twin.sh WORK MODEL TIMEOUT_S — the original (Python twin
# 0.1.4, /work/origenv) over bench_product.sh's corpus with the same model and
# options, capped at TIMEOUT_S seconds. The twin loads the random model
# through transformers' processor, so a sibling directory MODEL-twin gets
# symlinks to the model's files plus processor_config.json and
# tokenizer_config.json (written as tools/reference/make_golden.py does for
# the tiny fixture). On CPU the twin runs --dtype fp32 (its auto on CPU);
# torch gets as many threads as the product (OMP_NUM_THREADS=$THREADS).
set -euo pipefail
work=${1:?usage: bench_product_twin.sh WORK MODEL TIMEOUT_S}
model=${2:?}
limit=${3:?}
THREADS=${THREADS:-2}
ENV=${ORIGENV:-/work/origenv}
twin=$model-twin
if [ ! -f "$twin/processor_config.json" ]; then
  mkdir -p "$twin"
  for f in "$model"/*; do ln -sf "$f" "$twin/$(basename "$f")"; done
  "$ENV/bin/python" - "$twin" <<'EOF'
import os, shutil, sys, tempfile
from transformers import CohereAsrFeatureExtractor, CohereAsrProcessor, PreTrainedTokenizerFast
d = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp:
    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(d, "tokenizer.json"), eos_token="<|endoftext|>",
                                  pad_token="<pad>", bos_token="<|startoftranscript|>", unk_token="<unk>")
    CohereAsrProcessor(feature_extractor=CohereAsrFeatureExtractor(), tokenizer=tok).save_pretrained(tmp)
    for name in ("processor_config.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(tmp, name), os.path.join(d, name))
EOF
fi
rm -rf "$work/twin-out"
cmd=("$ENV/bin/cohere-transcribe" "$work/corpus" --model "$twin" --language en --device cpu --dtype fp32
     --max-new-tokens 100 --truncation-policy warn --existing overwrite --output-dir "$work/twin-out"
     --profile-json "$work/twin.json")
echo "   twin: OMP_NUM_THREADS=$THREADS timeout $limit ${cmd[*]}"
echo "   load before twin: $(cut -d' ' -f1-3 /proc/loadavg)"
rc=0
OMP_NUM_THREADS=$THREADS HF_HUB_OFFLINE=1 /usr/bin/time -f '%e %U %S %M' -o "$work/twin.time" \
  timeout "$limit" "${cmd[@]}" > "$work/twin.log" 2>&1 || rc=$?
echo "   load after twin: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   twin exit $rc (124: stopped by the timeout), wall/user/sys/maxrss-KiB: $(tail -1 "$work/twin.time")"
echo "   twin outputs: $(ls "$work/twin-out" 2>/dev/null | grep -c '\.txt$' || true) txt files"
