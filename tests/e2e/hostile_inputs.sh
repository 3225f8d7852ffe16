#!/usr/bin/env bash
# hostile_inputs.sh — issue 10 end to end through the tools: an address-space
# limit (ulimit -v) either runs or fails with a message, never spins (item 3);
# FIFOs as audio, model and tokenizer inputs fail at once instead of hanging
# (item 2); a device node or FIFO as the output is refused and left as it was
# (item 1); a clip shorter than one frame gives a valid file with empty
# tensors (item 5); a .gguf model works where a directory does (item 7); a
# special token is not a language (item 8); --out '' fails before the run.
# Each check names the item; the script exits 1 if any failed.
set -uo pipefail
B="$CT_BIN"
T="$CT_FIXTURES/tiny-hf"
A="$CT_FIXTURES/audio/c1_en_us_3s.wav"
A34="$CT_FIXTURES/audio/c5_es_en_34s.wav"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
bad() { echo "FAIL: $*"; failed=1; }
ok() { echo "ok: $*"; }

# run NAME TIMEOUT CMD...: rc in $rc, stderr in $tmp/err
run() {
  local name=$1 t=$2
  shift 2
  timeout "$t" "$@" > "$tmp/out" 2> "$tmp/err"
  rc=$?
  if [ "$rc" = 124 ]; then bad "$name: still running after ${t}s (hang or spin)"; return 1; fi
  return 0
}

# ---- item 3: address-space limits -----------------------------------------
# ASan reserves terabytes of shadow address space: no ulimit -v under it.
if ldd "$B/cohere-transcribe-inspect" | grep -q libasan; then
  echo "skip: ulimit -v checks (sanitizer build)"
else
  (ulimit -v 1048576; exec timeout 120 "$B/cohere-transcribe-inspect" --model "$T" --out "$tmp/lim.st" "$A34") \
    > "$tmp/out" 2> "$tmp/err"
  rc=$?
  if [ "$rc" = 0 ] && [ -s "$tmp/lim.st" ]; then ok "item 3: inspect runs under ulimit -v 1 GiB"
  else bad "item 3: inspect under ulimit -v 1 GiB: rc $rc: $(tail -1 "$tmp/err")"; fi
  for kb in 150000 250000 400000 600000 800000; do
    for tool in inspect vad; do
      if [ $tool = inspect ]; then args=(--model "$T" --out "$tmp/lim.st" "$A"); else args=(--mode none "$A"); fi
      (ulimit -v $kb; exec timeout 60 "$B/cohere-transcribe-$tool" "${args[@]}") > "$tmp/out" 2> "$tmp/err"
      rc=$?
      if [ "$rc" = 0 ]; then ok "item 3: $tool runs under ulimit -v $kb"
      elif [ "$rc" = 1 ] && grep -q "ulimit -v" "$tmp/err"; then ok "item 3: $tool under ulimit -v $kb: clear message"
      elif [ "$rc" = 127 ] && grep -q "error while loading shared libraries" "$tmp/err"; then
        ok "item 3: $tool under ulimit -v $kb: the loader cannot even map the libraries (its own message)"
      else bad "item 3: $tool under ulimit -v $kb: rc $rc: $(tail -1 "$tmp/err")"; fi
    done
  done
fi

# ---- item 2: FIFOs as inputs -----------------------------------------------
mkfifo "$tmp/f.wav"
run "item 2: vad on a FIFO" 60 "$B/cohere-transcribe-vad" --mode none "$tmp/f.wav" &&
  { [ "$rc" = 1 ] && grep -q "not a regular file (FIFO)" "$tmp/err" && ok "item 2: vad refuses a FIFO" ||
    bad "item 2: vad on a FIFO: rc $rc: $(cat "$tmp/err")"; }
run "item 2: inspect on a FIFO" 60 "$B/cohere-transcribe-inspect" --model "$T" --out "$tmp/x.st" "$tmp/f.wav" &&
  { [ "$rc" = 1 ] && grep -q "not a regular file (FIFO)" "$tmp/err" && ok "item 2: inspect refuses a FIFO clip" ||
    bad "item 2: inspect on a FIFO: rc $rc: $(cat "$tmp/err")"; }
mkdir "$tmp/m"
cp "$T"/* "$tmp/m/"
for f in model.safetensors config.json tokenizer.json; do
  rm "$tmp/m/$f"
  mkfifo "$tmp/m/$f"
  run "item 2: inspect with $f a FIFO" 60 "$B/cohere-transcribe-inspect" --model "$tmp/m" --out "$tmp/x.st" "$A" &&
    { [ "$rc" = 1 ] && grep -q "$f: not a regular file (FIFO)" "$tmp/err" && ok "item 2: inspect refuses $f as a FIFO" ||
      bad "item 2: inspect with $f a FIFO: rc $rc: $(cat "$tmp/err")"; }
  run "item 2: convert with $f a FIFO" 60 "$B/cohere-transcribe-convert" "$tmp/m" "$tmp/m.gguf" &&
    { [ "$rc" = 1 ] && grep -q "$f: not a regular file (FIFO)" "$tmp/err" && ok "item 2: convert refuses $f as a FIFO" ||
      bad "item 2: convert with $f a FIFO: rc $rc: $(cat "$tmp/err")"; }
  rm "$tmp/m/$f"
  cp "$T/$f" "$tmp/m/$f"
done

# ---- item 1: special files as outputs --------------------------------------
mkfifo "$tmp/out.fifo"
nodes=("$tmp/out.fifo")
if mknod "$tmp/mynull" c 1 3 2> /dev/null; then nodes+=("$tmp/mynull"); else echo "skip: mknod (not root)"; fi
for n in "${nodes[@]}"; do
  kind=$(stat -c %F "$n")
  run "item 1: convert to $kind" 300 "$B/cohere-transcribe-convert" "$T" "$n" &&
    { [ "$rc" = 1 ] && [ "$(stat -c %F "$n")" = "$kind" ] && grep -q "refusing to replace" "$tmp/err" &&
        ok "item 1: convert refuses a $kind as OUT" || bad "item 1: convert to a $kind: rc $rc, now $(stat -c %F "$n")"; }
  run "item 1: inspect --out $kind" 300 "$B/cohere-transcribe-inspect" --model "$T" --out "$n" "$A" &&
    { [ "$rc" = 1 ] && [ "$(stat -c %F "$n")" = "$kind" ] && grep -q "refusing to replace" "$tmp/err" &&
        ok "item 1: inspect refuses a $kind as --out" || bad "item 1: inspect --out a $kind: rc $rc, now $(stat -c %F "$n")"; }
done
run "--out ''" 60 "$B/cohere-transcribe-inspect" --model "$T" --out "" "$A" &&
  { [ "$rc" = 2 ] && grep -q "output path is empty" "$tmp/err" && ! grep -q "clips," "$tmp/err" &&
      ok "--out '' refused before the run" || bad "--out '': rc $rc: $(cat "$tmp/err")"; }

# ---- item 5: a clip shorter than one frame ----------------------------------
python3 - "$tmp/short.wav" <<'PY'
import math, struct, sys, wave
with wave.open(sys.argv[1], "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
    w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i * 0.12))) for i in range(100)))
PY
run "item 5: inspect on 100 samples" 300 "$B/cohere-transcribe-inspect" --model "$T" --out "$tmp/short.st" "$tmp/short.wav" "$A" &&
  if [ "$rc" = 0 ] && python3 - "$tmp/short.st" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
assert h["features.0"]["shape"] == [0, 128] and h["encoder.0"]["shape"][0] == 0, h["features.0"]
assert h["features.1"]["shape"][0] > 0
# every tensor's bytes lie in the file and match its shape: nothing mis-written
for k, v in h.items():
    if k == "__metadata__": continue
    a, e = v["data_offsets"]
    size = {"F32": 4, "I32": 4}[v["dtype"]]
    count = 1
    for d in v["shape"]: count *= d
    assert e - a == size * count and 8 + n + e <= len(b), k
tok0 = h["tokens.0"]; a, e = tok0["data_offsets"]
ids = struct.unpack("<%di" % (tok0["shape"][0]), b[8 + n + a:8 + n + e])
assert all(0 <= i < 100000 for i in ids), ids  # token ids, not float bits from another tensor
PY
  then ok "item 5: empty features/encoder tensors, the rest intact"
  else bad "item 5: rc $rc: $(tail -1 "$tmp/err")"; fi

# ---- item 7: a .gguf model ------------------------------------------------------
"$B/cohere-transcribe-convert" "$T" "$tmp/tiny.gguf" > /dev/null 2>&1 || bad "item 7: convert failed"
run "item 7: inspect --model x.gguf" 300 "$B/cohere-transcribe-inspect" --model "$tmp/tiny.gguf" --out "$tmp/g.st" "$A" &&
  { cp "$tmp/out" "$tmp/gguf.out"; [ "$rc" = 0 ] || bad "item 7: inspect on the GGUF: rc $rc: $(tail -1 "$tmp/err")"; }
run "item 7: inspect --model dir" 300 "$B/cohere-transcribe-inspect" --model "$T" --out "$tmp/d.st" "$A" &&
  { [ "$rc" = 0 ] && cmp -s "$tmp/out" "$tmp/gguf.out" && cmp -s "$tmp/g.st" "$tmp/d.st" &&
      ok "item 7: the GGUF gives the directory's texts and tensors" || bad "item 7: GGUF and directory outputs differ"; }

# ---- item 8: languages ----------------------------------------------------------
for l in pnc nospeech itn; do
  run "item 8: --languages $l" 300 "$B/cohere-transcribe-inspect" --model "$T" --out "$tmp/l.st" --languages $l "$A" &&
    { [ "$rc" = 1 ] && grep -q "unsupported language \"$l\": the model's languages are af," "$tmp/err" &&
        ok "item 8: '$l' is not a language" || bad "item 8: --languages $l: rc $rc: $(tail -1 "$tmp/err")"; }
done

exit $failed
