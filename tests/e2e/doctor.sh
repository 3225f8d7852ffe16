#!/usr/bin/env bash
# doctor.sh — cohere-transcribe-doctor end to end (PRODUCT-DETAILS §11 as
# adapted in docs/DOCTOR.md). The default run's every line is checked against
# what the machine says independently (sha256sum, getconf, pkg-config,
# /proc/cpuinfo, the project version); then the Silero asset (corrupted,
# missing, folder, environment, the default search of a relocated binary,
# package metadata), word mode, the audio backends, model access on local
# fixtures (passing, and a failure naming each broken file), the Hub through
# the fake Hub (metadata only, gated, cached, offline), and every parse error
# (exit 2, help and the message on stderr).
source "$(dirname "$0")/../hub/lib.sh"

DOC="$CT_BIN/cohere-transcribe-doctor"
W="$CT_TESTDATA/silero/silero_vad.onnx"
FIX="$CT_SOURCE/tests/fixtures"
export OMP_NUM_THREADS=2
unset OMP_WAIT_POLICY CT_CPU_WAIT_EXEC # the doctor reports libgomp's default (--cpu-wait auto, the default)
VERSION=$(sed -n 's/^project(cohere_transcribe VERSION \([0-9.]*\).*/\1/p' "$CT_SOURCE/CMakeLists.txt")
PINNED_SHA=$(sed -n 's/^#define CT_SILERO_SHA256_V62 "\([0-9a-f]*\)"/\1/p' "$CT_SOURCE/src/vad/silero.h")
[ -n "$VERSION" ] && [ ${#PINNED_SHA} = 64 ] || fail "cannot read the version or the pinned sha256"
[ "$(sha256_of "$W")" = "$PINNED_SHA" ] || fail "the test data's silero_vad.onnx is not v6.2"

# run_doc WANT_RC OUT ARGS...: stdout to OUT, stderr to OUT.err
run_doc() {
  local want=$1 out=$2
  shift 2
  local rc=0
  "$DOC" "$@" >"$out" 2>"$out.err" || rc=$?
  [ "$rc" = "$want" ] || { cat "$out" "$out.err" >&2; fail "doctor $* exited $rc, want $want"; }
}
# has OUT LINE: OUT contains exactly this line
has() { grep -qxF -- "$2" "$1" || { cat "$1" >&2; fail "missing line: $2"; }; }
# lacks OUT PATTERN: no line of OUT matches (fixed string)
lacks() { ! grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "unexpected: $2"; }; }
# last OUT LINE: the verdict, after a blank line
last() {
  [ "$(tail -n 1 "$1")" = "$2" ] || { cat "$1" >&2; fail "verdict: $(tail -n 1 "$1"), want $2"; }
  [ -z "$(tail -n 2 "$1" | head -n 1)" ] || fail "no blank line before the verdict"
}

# ---- the default run, line by line -------------------------------------------------
run_doc 0 "$WORK/default" --vad-weights "$W"
python3 - "$WORK/default" "$W" "$PINNED_SHA" "$VERSION" "$(realpath "$DOC")" "$(getconf GNU_LIBC_VERSION | sed "s/^glibc //")" \
  "$(getconf _NPROCESSORS_ONLN)" "$(pkg-config --modversion openblas)" "$(pkg-config --modversion libavformat)" \
  "$(pkg-config --modversion libavcodec)" "$(pkg-config --modversion libswresample)" \
  "$(pkg-config --modversion sndfile)" "$(pkg-config --modversion samplerate)" \
  "$(pkg-config --modversion jansson)" "$(pkg-config --modversion libcrypto)" \
  "$(pkg-config --modversion libcurl)" <<'PY'
import re, sys
(out, w, sha, version, exe, glibc, ncpu, blas, avf, avc, swr, sndfile, samplerate, jansson, crypto,
 curl) = sys.argv[1:]
lines = open(out).read().split("\n")
info = open("/proc/cpuinfo").read()
model = re.search(r"^model name\s*:\s*(.*)$", info, re.M)
model = model.group(1).strip() if model else "unknown CPU"
flags = set(re.search(r"^flags\s*:(.*)$", info, re.M).group(1).split())
yn = lambda f: "yes" if f in flags else "no"
mel = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "baseline"
rng = "AVX2+FMA" if {"avx2", "fma"} <= flags else "scalar"
ff = f"libavformat {avf}, libavcodec {avc}, libswresample {swr}"
sf = f"libsndfile-{sndfile}, libsamplerate-{samplerate}"
E = re.escape
want = [
    E("[WARN] package metadata is unavailable; running from a source checkout"),
    E(f"[OK]   Silero ONNX asset: {w} (--vad-weights)"),
    E(f"[OK]   Silero ONNX asset integrity: {sha}"),
    E(f"[OK]   C runtime: glibc {glibc}, built with ") + r"(GCC|clang) \S.*",
    E(f"[OK]   numeric runtime: OpenBLAS {blas} ") + r"(.* )?(?P<core>\w+) MAX_THREADS=\d+; 2 OpenMP threads",
    E("[OK]   CPU wait policy: libgomp's default, spin then sleep (OMP_WAIT_POLICY unset)"),
    E(f"[OK]   audio libraries: {ff}; {sf}"),
    E(f"[OK]   support libraries: jansson {jansson}, utf8proc ") + r"\d+\.\d+\.\d+" +
        E(f", OpenSSL {crypto} ") + r".*" + E(f", libcurl {curl} (") + r"[^)]*\)",
    E(f"[OK]   native Cohere ASR runtime: {exe} (cohere-transcribe {version})"),
    E(f"[OK]   CPU: {model}, {ncpu} cores online; AVX2 {yn('avx2')}, FMA {yn('fma')}, AVX-512F {yn('avx512f')}, "
      f"AVX-512 BF16 {yn('avx512_bf16')}, AVX-512 VNNI {yn('avx512_vnni')}"),
    E(f"[OK]   CPU kernels: mel spectrogram {mel}, dither RNG {rng}, matrix products OpenBLAS (") + r"(?P<core2>\w+)" +
        E(" core)") + r"( and oneDNN)?; (?P<plan>level (?P<level>baseline|vnni|bf16) \(cpu features: [a-z0-9_ /]+\); int8: .+)",
    r"\[OK\]   CUDA: (?P<cuda>not compiled into this build \(the cuda backend needs a build with nvcc\)|"
        r"compiled in; CUDA devices: none found \(.+\)|compiled in; CUDA device 0 is usable .*)",
]
got = {}
for i, pat in enumerate(want):
    m = re.fullmatch(pat, lines[i])
    if not m:
        sys.exit(f"line {i + 1}: {lines[i]!r}\n  does not match {pat!r}")
    got.update(m.groupdict())
if got["core"] != got["core2"]:
    sys.exit(f"OpenBLAS core {got['core2']} is not the one its config names ({got['core']})")
gpu = got["cuda"].endswith("usable (compute capability 9.0 or newer)")
native_bf16 = got["level"] == "bf16" and "bf16: oneDNN bf16" in got["plan"]
dev, dt = ("cuda", "bf16") if gpu else ("cpu", "bf16" if native_bf16 else "fp32")
rest = [
    f"[OK]   native inference devices: cpu{', cuda' if gpu else ''}; auto resolves to {dev}",
    f"[OK]   automatic settings: device auto resolves to {dev}, dtype auto to {dt}",
] + ([] if gpu else ["[OK]   dtype auto on the CPU: " + (
    "bf16, because the CPU multiplies bf16 natively (AVX512-BF16/AMX) through oneDNN, within the 1e-2 bf16 bound "
    "of fp32" if native_bf16 else
    "fp32, because no native bf16 on this CPU: bf16 weights would be widened to fp32 (slower than fp32), and int8 "
    "is outside the 1e-2 bound (opt in with --dtype int8)")]) + [
    "[OK]   accelerator: CUDA available through native runtime; BF16 operations supported" if gpu else
    "[WARN] accelerator: CPU only; the 2B model will be substantially slower",
    "[OK]   Silero ONNX smoke: 2 finite probability frames",
    f"[OK]   native FFmpeg decoder: {ff}",
    f"[OK]   native audio decoder fallback: libsndfile ABI ({sf})",
    "",
    f"Validation passed for segment mode with {1 if gpu else 2} warning(s).",
    "",
]
for j, line in enumerate(rest):
    if lines[len(want) + j] != line:
        sys.exit(f"line {len(want) + j + 1}: {lines[len(want) + j]!r}, want {line!r}")
if len(lines) != len(want) + len(rest):
    sys.exit(f"{len(lines)} lines, want {len(want) + len(rest)}")
PY
[ ! -s "$WORK/default.err" ] || { cat "$WORK/default.err" >&2; fail "stderr not empty"; }
if grep -q "^\[OK\]   accelerator: CUDA" "$WORK/default"; then GPU=1; NW=1; else GPU=0; NW=2; fi
pass "default run: every line"

# ---- the Silero asset ------------------------------------------------------------------
cp "$W" "$WORK/corrupt.onnx"
python3 -c '
import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 0xFF; open(p, "wb").write(b)' \
  "$WORK/corrupt.onnx"
run_doc 1 "$WORK/corrupt" --vad-weights "$WORK/corrupt.onnx"
has "$WORK/corrupt" "[FAIL] Silero ONNX checksum mismatch: expected $PINNED_SHA, found $(sha256_of "$WORK/corrupt.onnx")"
lacks "$WORK/corrupt" "asset integrity"
has "$WORK/corrupt" "[OK]   Silero ONNX smoke: 2 finite probability frames" # one weight byte off still runs
last "$WORK/corrupt" "Validation failed: 1 failure(s), $NW warning(s)."
pass "corrupted weights: checksum FAIL, exit 1"

run_doc 1 "$WORK/missing" --vad-weights "$WORK/none/silero_vad.onnx"
has "$WORK/missing" "[FAIL] missing Silero ONNX asset: $WORK/none/silero_vad.onnx"
grep -qx "\[FAIL\] Silero ONNX smoke: CT_ERR_NOT_FOUND: $WORK/none/silero_vad.onnx: .*" "$WORK/missing" ||
  fail "smoke of a missing file: $(cat "$WORK/missing")"
lacks "$WORK/missing" "integrity"
last "$WORK/missing" "Validation failed: 2 failure(s), $NW warning(s)."
pass "missing weights: FAIL naming the path, the smoke fails too"

mkdir -p "$WORK/vaddir"
cp "$W" "$WORK/vaddir/"
run_doc 0 "$WORK/dir" --vad-w "$WORK/vaddir"
has "$WORK/dir" "[OK]   Silero ONNX asset: $WORK/vaddir/silero_vad.onnx (--vad-weights)"
CT_VAD_WEIGHTS="$W" run_doc 0 "$WORK/env"
has "$WORK/env" "[OK]   Silero ONNX asset: $W (\$CT_VAD_WEIGHTS)"
CT_SILERO_VAD="$WORK/vaddir" run_doc 0 "$WORK/env2"
has "$WORK/env2" "[OK]   Silero ONNX asset: $WORK/vaddir/silero_vad.onnx (\$CT_SILERO_VAD)"
pass "a folder, \$CT_VAD_WEIGHTS, \$CT_SILERO_VAD"

# The default search and the package metadata, from a copy of the (statically
# linked) binary in a prefix of its own: <prefix>/bin/cohere-transcribe-doctor.
INST="$WORK/inst"
mkdir -p "$INST/bin"
cp "$DOC" "$INST/bin/"
IDOC="$INST/bin/cohere-transcribe-doctor"
# the configured prefix's share/ (CT_INSTALL_DATADIR), as this build tree was configured
PREFIX=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$CT_BIN/../CMakeCache.txt" 2>/dev/null)
DATADIR="${PREFIX:-/usr/local}/share"
if [ ! -e "$DATADIR/cohere-transcribe/silero_vad.onnx" ]; then
  rc=0
  "$IDOC" >"$WORK/inst0" 2>&1 || rc=$?
  [ "$rc" = 1 ] || fail "relocated doctor without weights exited $rc"
  has "$WORK/inst0" "[FAIL] missing Silero ONNX asset: no silero_vad.onnx at $INST/bin/../share/cohere-transcribe/silero_vad.onnx, $DATADIR/cohere-transcribe/silero_vad.onnx or $INST/bin/../testdata/silero/silero_vad.onnx"
  pass "default search: every place named when nothing is found"
fi
mkdir -p "$INST/share/cohere-transcribe" "$INST/lib/pkgconfig"
cp "$W" "$INST/share/cohere-transcribe/"
printf 'prefix=%s\nName: cohere-transcribe\nVersion: %s\nLibs: -lcohere_transcribe\n' "$INST" "$VERSION" \
  >"$INST/lib/pkgconfig/cohere-transcribe.pc"
"$IDOC" >"$WORK/inst1" 2>&1 || fail "installed layout: $(cat "$WORK/inst1")"
has "$WORK/inst1" "[OK]   package metadata version: $VERSION"
has "$WORK/inst1" "[OK]   Silero ONNX asset: $(realpath "$INST/share/cohere-transcribe/silero_vad.onnx") (found by the default search)"
has "$WORK/inst1" "[OK]   native Cohere ASR runtime: $(realpath "$IDOC") (cohere-transcribe $VERSION)"
last "$WORK/inst1" "Validation passed for segment mode with $((NW - 1)) warning(s)."
sed -i "s/^Version: .*/Version: 9.9.9/" "$INST/lib/pkgconfig/cohere-transcribe.pc"
rc=0
"$IDOC" >"$WORK/inst2" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "version mismatch exited $rc"
has "$WORK/inst2" "[FAIL] package metadata is 9.9.9, runtime is $VERSION"
pass "installed layout: share/ weights found, package metadata compared"

# ---- word mode and the audio backends ---------------------------------------------------
run_doc 0 "$WORK/word" --mode word --vad-weights "$W"
has "$WORK/word" "[OK]   word alignment: native MMS CTC Viterbi and Arabic romanization smokes execute"
has "$WORK/word" "[OK]   word aligner: MahmoudAshraf/mms-300m-1130-forced-aligner@49402e9577b1158620820667c218cd494cc44486 (CC-BY-NC-4.0: non-commercial use only), float32 on the CPU, bounded per-segment uniform fallback"
# after the Silero smoke, before the decoders
[ "$(grep -n "word alignment" "$WORK/word" | cut -d: -f1)" = $(($(grep -n "Silero ONNX smoke" "$WORK/word" | cut -d: -f1) + 1)) ] ||
  fail "word alignment line out of order"
last "$WORK/word" "Validation passed for word mode with $NW warning(s)."
run_doc 0 "$WORK/seg" --mode=segment --vad-weights "$W"
cmp -s "$WORK/seg" "$WORK/default" || fail "--mode=segment differs from the default"
pass "word mode: the CTC and romanisation smokes run"

FF="libavformat $(pkg-config --modversion libavformat), libavcodec $(pkg-config --modversion libavcodec), libswresample $(pkg-config --modversion libswresample)"
SF="libsndfile-$(pkg-config --modversion sndfile), libsamplerate-$(pkg-config --modversion samplerate)"
run_doc 0 "$WORK/tc" --audio-backend torchcodec --vad-weights "$W"
has "$WORK/tc" "[OK]   native FFmpeg decoder: $FF"
has "$WORK/tc" "[WARN] torchcodec compatibility mode uses FFmpeg through the native C ABI"
lacks "$WORK/tc" "fallback"
last "$WORK/tc" "Validation passed for segment mode with $((NW + 1)) warning(s)."
run_doc 0 "$WORK/lr" --audio librosa --vad-weights "$W"
has "$WORK/lr" "[WARN] librosa compatibility mode uses FFmpeg through the native C ABI"
has "$WORK/lr" "[OK]   librosa compatibility fallback: libsndfile ABI ($SF)"
run_doc 0 "$WORK/ff" --audio-backend=ffmpeg --vad-weights "$W"
has "$WORK/ff" "[OK]   native FFmpeg decoder: $FF"
lacks "$WORK/ff" "fallback"
lacks "$WORK/ff" "compatibility"
run_doc 0 "$WORK/sf" --audio-backend sndfile --vad-weights "$W"
has "$WORK/sf" "[OK]   native libsndfile decoder: $SF"
lacks "$WORK/sf" "FFmpeg decoder"
pass "audio backends: auto, torchcodec, librosa, ffmpeg, sndfile"

# ---- model access on local folders ----------------------------------------------------------
TINY=$(realpath "$FIX/tiny-hf")
run_doc 0 "$WORK/m" --model-access --model "$FIX/tiny-hf" --vad-weights "$W"
read -r NT NP < <(python3 - "$TINY/model.safetensors" <<'PY'
import json, math, struct, sys
f = open(sys.argv[1], "rb")
h = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
h.pop("__metadata__", None)
used = {k: v for k, v in h.items() if not k.endswith("num_batches_tracked")}
print(len(h), sum(math.prod(v["shape"]) for v in used.values()))
PY
)
NIDS=$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1])); print(len(t["model"]["vocab"]))' "$TINY/tokenizer.json")
has "$WORK/m" "[OK]   ASR configuration $FIX/tiny-hf (dense) accessible; CohereAsrProcessor one-row limit is 35.0s"
has "$WORK/m" "[OK]   ASR tokenizer: $NIDS ids; every prompt token present for ar, en, with and without punctuation"
has "$WORK/m" "[OK]   ASR checkpoint: $NT tensors, $NP parameters (F32); opened without loading weights"
[ "$(tail -n 5 "$WORK/m" | head -n 1)" = "[OK]   ASR configuration $FIX/tiny-hf (dense) accessible; CohereAsrProcessor one-row limit is 35.0s" ] ||
  fail "the model lines come last"
last "$WORK/m" "Validation passed for segment mode with $NW warning(s)."
# --model alone implies model access; the NeMo layout lists its languages
run_doc 0 "$WORK/nemo" --model "$FIX/tiny-nemo" --vad-weights "$W"
LANGS=$(python3 -c 'import json,sys; print(", ".join(json.load(open(sys.argv[1]))["supported_languages"]))' "$FIX/tiny-nemo/config.json")
has "$WORK/nemo" "[OK]   ASR tokenizer: $NIDS ids; every prompt token present for $LANGS, with and without punctuation"
grep -qx "\[OK\]   ASR checkpoint: [0-9]* tensors, [0-9]* parameters (BF16); opened without loading weights" "$WORK/nemo" ||
  fail "nemo checkpoint line: $(cat "$WORK/nemo")"
run_doc 0 "$WORK/gguf" --model "$FIX/gguf/crisp-tiny.gguf" --vad-weights "$W"
has "$WORK/gguf" "[OK]   ASR configuration $FIX/gguf/crisp-tiny.gguf (gguf) accessible; CohereAsrProcessor one-row limit is 35.0s"
grep -q "^\[OK\]   ASR checkpoint: " "$WORK/gguf" || fail "gguf checkpoint line"
pass "model access: transformers and NeMo layouts, GGUF"

# broken_model NAME: a copy of tiny-hf in $WORK/NAME (its realpath in $B)
broken_model() {
  rm -rf "${WORK:?}/$1"
  cp -r "$TINY" "$WORK/$1"
  B=$(realpath "$WORK/$1")
}
# model_fails OUT MESSAGE ARGS...: exit 1, the FAIL line exactly
model_fails() {
  local out=$1 msg=$2
  shift 2
  run_doc 1 "$out" --vad-weights "$W" "$@"
  has "$out" "[FAIL] $msg"
  last "$out" "Validation failed: 1 failure(s), $NW warning(s)."
}
broken_model notok
rm "$B/tokenizer.json"
model_fails "$WORK/f1" "ASR model or adapter validation: CT_ERR_NOT_FOUND: $B: missing tokenizer.json" --model "$B"
broken_model noeot
python3 - "$B/tokenizer.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
n = 0
for a in t["added_tokens"]:
    if a["content"] == "<|endoftext|>":
        a["content"] = "<|end|>"
        n += 1
for e in t["model"]["vocab"]:
    if e[0] == "<|endoftext|>":
        e[0] = "<|end|>"
        n += 1
assert n == 2, n
json.dump(t, open(sys.argv[1], "w"))
PY
model_fails "$WORK/f2" "ASR model or adapter validation: CT_ERR_FORMAT: $B/tokenizer.json is missing Cohere prompt tokens: <|endoftext|>" --model "$B"
broken_model vocab
python3 - "$B/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["vocab_size"] = 500; json.dump(c, open(sys.argv[1], "w"))
PY
model_fails "$WORK/f3" "ASR model or adapter validation: CT_ERR_FORMAT: $B/tokenizer.json vocabulary has missing token IDs: [495, 496, 497, 498, 499]" --model "$B"
broken_model mtype
sed -i 's/"model_type": "cohere_asr"/"model_type": "whisper"/' "$B/config.json"
model_fails "$WORK/f4" "ASR model or adapter validation: CT_ERR_FORMAT: $B/config.json declares model_type=\"whisper\"; expected cohere_asr" --model "$B"
broken_model clip
sed -i 's/"max_audio_clip_s": 35.0/"max_audio_clip_s": 0/' "$B/preprocessor_config.json"
model_fails "$WORK/f5" "ASR model or adapter validation: CT_ERR_FORMAT: $B/preprocessor_config.json: the Cohere processor has an invalid max_audio_clip_s: 0" --model "$B"
sed -i 's/"max_audio_clip_s": 0/"max_audio_clip_s": 30.5/' "$B/preprocessor_config.json"
run_doc 0 "$WORK/f5b" --vad-weights "$W" --model "$B"
has "$WORK/f5b" "[OK]   ASR configuration $B (dense) accessible; CohereAsrProcessor one-row limit is 30.5s"
broken_model proc
sed -i 's/"processor_class": "CohereAsrProcessor"/"processor_class": "WhisperProcessor"/' "$B/preprocessor_config.json"
model_fails "$WORK/f6" "ASR model or adapter validation: CT_ERR_FORMAT: $B/preprocessor_config.json declares processor_class=\"WhisperProcessor\"; expected CohereAsrProcessor" --model "$B"
broken_model weights
GONE=$(python3 - "$B/model.safetensors" <<'PY'
import json, struct, sys
p = sys.argv[1]
b = open(p, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
name = sorted(k for k in h if k != "__metadata__")[0]
h["renamed.tensor"] = h.pop(name)
print(name)
hb = json.dumps(h).encode()
hb += b" " * (-len(hb) % 8)
open(p, "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
PY
)
run_doc 1 "$WORK/f7" --vad-weights "$W" --model "$B"
# (the message names the tensor by its normalised NeMo name, not $GONE)
grep -qxF "[FAIL] ASR checkpoint: CT_ERR_NOT_FOUND: $B: tensor '$(python3 -c 'import sys; print(sys.argv[1].removeprefix("model."))' "$GONE" | sed 's/^proj_out/log_softmax.mlp.layer0/')' is missing" "$WORK/f7" ||
  fail "broken checkpoint ($GONE renamed): $(cat "$WORK/f7")"
has "$WORK/f7" "[OK]   ASR configuration $B (dense) accessible; CohereAsrProcessor one-row limit is 35.0s"
model_fails "$WORK/f8" "ASR model or adapter validation: CT_ERR_INVALID_ARG: --model-revision cannot be used with a local model directory" --model "$TINY" --model-revision main
model_fails "$WORK/f9" "ASR model or adapter validation: CT_ERR_INVALID_ARG: --adapter-revision requires --adapter" --model "$TINY" --adapter-revision v1
run_doc 1 "$WORK/f10" --vad-weights "$W" --model "$TINY" --adapter acme/lora
has "$WORK/f10" "[FAIL] adapter acme/lora: PEFT/LoRA adapters are not supported by this runtime"
model_fails "$WORK/f11" "ASR model or adapter validation: CT_ERR_NOT_FOUND: --model ./nowhere: no such local model directory" --model ./nowhere
model_fails "$WORK/f12" "ASR model or adapter validation: CT_ERR_INVALID_ARG: --model must be a non-empty Hugging Face repository ID or local directory" --model ""
pass "model access: each broken file named (tokenizer.json, <|endoftext|>, vocab_size, model_type, processor, weights, options)"

# ---- model access through the Hub ---------------------------------------------------------
PINNED=0a8193caa4f3f92131471ab08824e488141cb392
start_hub --token secret-token --repo acme/tiny="$TINY" --repo acme/gated="$TINY",gated \
  --repo CohereLabs/cohere-transcribe-arabic-07-2026="$TINY",gated,commit=$PINNED
C=$(commit_of acme/tiny)
run_doc 0 "$WORK/h1" --vad-weights "$W" --model acme/tiny
has "$WORK/h1" "[OK]   ASR configuration acme/tiny@$C (dense) accessible; CohereAsrProcessor one-row limit is 35.0s"
has "$WORK/h1" "[WARN] ASR checkpoint weights of acme/tiny@$C are not in the cache yet (the first transcription downloads them); tensors not checked"
last "$WORK/h1" "Validation passed for segment mode with $((NW + 1)) warning(s)."
SNAP="$HF_HUB_CACHE/models--acme--tiny/snapshots/$C"
for f in config.json generation_config.json preprocessor_config.json tokenizer.json; do
  cmp -s "$SNAP/$f" "$TINY/$f" || fail "$f not fetched into the cache"
done
[ ! -e "$SNAP/model.safetensors" ] && [ "$(stat_of cdn_full_gets model.safetensors)" = 0 ] ||
  fail "the doctor downloaded the weights"
pass "Hub: metadata fetched, weights not"

"$FETCH" --quiet acme/tiny >/dev/null
run_doc 0 "$WORK/h2" --vad-weights "$W" --model acme/tiny
has "$WORK/h2" "[OK]   ASR checkpoint: $NT tensors, $NP parameters (F32); opened without loading weights"
last "$WORK/h2" "Validation passed for segment mode with $NW warning(s)."
n=$(stats api_gets)
HF_HUB_OFFLINE=1 run_doc 0 "$WORK/h3" --vad-weights "$W" --model acme/tiny
has "$WORK/h3" "[OK]   ASR checkpoint: $NT tensors, $NP parameters (F32); opened without loading weights"
[ "$(stats api_gets)" = "$n" ] || fail "HF_HUB_OFFLINE=1 went to the network"
pass "Hub: cached snapshot checked (online, and offline without the network)"

run_doc 1 "$WORK/h4" --vad-weights "$W" --model acme/gated
grep -qx "\[FAIL\] Cannot access the gated ASR model acme/gated\. Accept its terms, then set HF_TOKEN\. (CT_ERR_AUTH: .*gated.*)" "$WORK/h4" ||
  fail "gated: $(cat "$WORK/h4")"
last "$WORK/h4" "Validation failed: 1 failure(s), $NW warning(s)."
HF_TOKEN=secret-token run_doc 0 "$WORK/h5" --vad-weights "$W" --model acme/gated
has "$WORK/h5" "[OK]   ASR configuration acme/gated@$(commit_of acme/gated) (dense) accessible; CohereAsrProcessor one-row limit is 35.0s"
# the default model, by --model-access alone, at its pinned commit
HF_TOKEN=secret-token run_doc 0 "$WORK/h6" --vad-weights "$W" --model-access
has "$WORK/h6" "[OK]   ASR configuration CohereLabs/cohere-transcribe-arabic-07-2026@$PINNED (dense) accessible; CohereAsrProcessor one-row limit is 35.0s"
run_doc 1 "$WORK/h7" --vad-weights "$W" --model acme/nope
grep -qx "\[FAIL\] ASR model or adapter validation: CT_ERR_NOT_FOUND: .*acme/nope.*" "$WORK/h7" || fail "unknown repo: $(cat "$WORK/h7")"
stop_hub
pass "Hub: gated (FAIL naming HF_TOKEN, then passing with it), default model pinned, unknown repo"

# ---- the command line ---------------------------------------------------------------------------
cat >"$WORK/help.want" <<'EOF'
Usage: cohere-transcribe-doctor [options]

Validate the transcription package without loading model weights.

        --mode MODE                  Output mode to validate (default: segment).
        --model-access               Resolve and validate selected model metadata.
        --model MODEL                Hub repository or local model directory; implies model access.
        --model-revision REVISION    Optional Hub model commit, tag, or branch.
        --adapter ADAPTER            Optional Hub repository or local LoRA adapter directory.
        --adapter-revision REVISION  Optional Hub adapter commit, tag, or branch.
        --audio-backend BACKEND      Decoder configuration to validate (default: auto).
        --vad-weights PATH           Silero VAD weights to validate (default: the installed copy).
    -h, --help                       Show this help and exit.
EOF
for h in -h --help --he --bogus\ --help "-x -h" "x --help"; do
  # shellcheck disable=SC2086
  run_doc 0 "$WORK/help" $h
  cmp -s "$WORK/help" "$WORK/help.want" || { diff "$WORK/help.want" "$WORK/help" >&2; fail "help for $h"; }
  [ ! -s "$WORK/help.err" ] || fail "help wrote to stderr"
done
# parse_error MESSAGE ARGS...: exit 2, the help then "cohere-transcribe-doctor: error: MESSAGE" on stderr, stdout empty
parse_error() {
  local msg=$1
  shift
  run_doc 2 "$WORK/pe" "$@"
  [ ! -s "$WORK/pe" ] || fail "stdout not empty for $*"
  { cat "$WORK/help.want"; echo "cohere-transcribe-doctor: error: $msg"; } | cmp -s - "$WORK/pe.err" ||
    { cat "$WORK/pe.err" >&2; fail "stderr for $*"; }
}
parse_error "invalid option: --version" --version
parse_error "invalid argument: unexpected positional argument: audio.wav" audio.wav
parse_error "invalid argument: unexpected positional argument: b" --vad-weights "$W" b c
parse_error "invalid argument: unexpected positional argument: --help" -- --help
parse_error "ambiguous option: --mod" --mod word
parse_error "ambiguous option: --mod" --mod --help
parse_error "ambiguous option: --model-" --model-=x
parse_error "ambiguous option: --a" --a x
parse_error "missing argument: --mode" --mode
parse_error "missing argument: --model" --model --mode word
parse_error "invalid argument: --mode bogus" --mode bogus
parse_error "invalid argument: --mode=Word" --mode=Word
parse_error "invalid argument: --mode w" --mode w
parse_error "invalid argument: --audio-backend sox" --audio-backend sox
parse_error "invalid argument: --audio-backend=" --audio-backend=
parse_error "needless argument: --model-access=yes" --model-access=yes
parse_error "invalid option: -x" -x
parse_error "invalid option: --bogus" --bogus --mode word
parse_error "invalid argument: --mode bogus" --mode bogus --help
# a value that starts with '-' but holds a space, a lone '-' or a negative number is a value (argparse)
run_doc 1 "$WORK/dash" --vad-weights "$W" --model "-a b"
grep -qx "\[FAIL\] ASR model or adapter validation: CT_ERR_INVALID_ARG: --model must be a valid Hugging Face repository ID or local directory: .*" "$WORK/dash" ||
  fail "--model '-a b': $(cat "$WORK/dash")"
run_doc 1 "$WORK/dash2" --vad-weights - --model-access --model "$TINY"
has "$WORK/dash2" "[FAIL] missing Silero ONNX asset: -"
pass "command line: help, and every parse error exits 2 with the help and its message"
echo "doctor: all passed"
