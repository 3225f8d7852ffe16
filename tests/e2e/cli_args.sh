#!/usr/bin/env bash
# cohere-transcribe's command line end to end: every parse rule of
# PRODUCT-DETAILS §10.3 (exit 2, the full help on stderr, then
# "cohere-transcribe: error: <OptionParser's message>"), -h/--help and
# --version (exit 0, stdout), every configuration rule of §10.5 (exit 1, the
# message alone on stderr, options named as flags), and the --help layout of
# §10.4 checked line by line against the spec's rules and option order.
# Only the exit-code contract is used, not what a successful run prints.
# If tests/fixtures/golden/cli_cases.json (recorded from the Python twin) is
# present, every case's exit code is compared with the twin's, except the
# differences listed in docs/USAGE.md ("Differences from the Python twin").
set -uo pipefail
bin="$CT_BIN/cohere-transcribe"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
n=0

bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$bin" --help > "$tmp/help" 2> "$tmp/help.err" || bad "--help exited $?"
[ -s "$tmp/help.err" ] && bad "--help wrote to stderr"

# parse ERR MESSAGE ARGS...: exit 2, help then the message on stderr, stdout empty.
parse() {
  local msg=$1; shift
  n=$((n + 1))
  "$bin" "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] || { bad "[$*] exit $rc, want 2 ($msg)"; return; }
  [ -s "$tmp/out" ] && bad "[$*] wrote to stdout"
  local last
  last=$(tail -n 1 "$tmp/err")
  [ "$last" = "cohere-transcribe: error: $msg" ] || bad "[$*] said '$last', want '$msg'"
  head -n -1 "$tmp/err" | cmp -s - "$tmp/help" || bad "[$*] stderr does not start with the full help"
}

# config MESSAGE ARGS...: exit 1 with exactly the message on stderr.
config() {
  local msg=$1; shift
  n=$((n + 1))
  "$bin" "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  [ $rc -eq 1 ] || { bad "[$*] exit $rc, want 1 ($msg): $(head -c 300 "$tmp/err")"; return; }
  [ "$(cat "$tmp/err")" = "$msg" ] || bad "[$*] said '$(head -c 300 "$tmp/err")', want '$msg'"
}

# help ARGS...: exit 0 with the help on stdout.
help() {
  n=$((n + 1))
  "$bin" "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  [ $rc -eq 0 ] || { bad "[$*] exit $rc, want 0 (help): $(tail -n 1 "$tmp/err")"; return; }
  cmp -s "$tmp/out" "$tmp/help" || bad "[$*] did not print the help"
}

version() {
  n=$((n + 1))
  "$bin" "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  [ $rc -eq 0 ] || { bad "[$*] exit $rc, want 0 (version)"; return; }
  [ "$(cat "$tmp/out")" = "cohere-transcribe 0.1.0" ] || bad "[$*] printed '$(cat "$tmp/out")'"
}

# ---- parse rules (§10.2, §10.3) --------------------------------------------
parse "missing argument: audio"
parse "missing argument: audio" --model x/y
parse "missing argument: audio" -- 
parse "invalid option: --foo" --foo a.wav
parse "invalid option: --foo" a.wav --foo
parse "invalid option: -x" -x a.wav
parse "invalid option: --foo=1" --foo=1 a.wav
parse "ambiguous option: --max" --max 3 a.wav
parse "ambiguous option: --max=3" --max=3 a.wav
parse "ambiguous option: --no" --no a.wav
parse "ambiguous option: --v" --v
parse "ambiguous option: --m" a.wav --m x
# ambiguity is found before anything runs, even after --help
parse "ambiguous option: --max" --help --max 3
# the conflict, even with --alignment none, is found where the second stands:
# before a help after it (a help before both wins)
parse "invalid option: --text-only conflicts with --alignment" --text-only --alignment none a.wav
parse "invalid option: --text-only conflicts with --alignment" --alignment=segment --text-only --help
help --help --text-only --alignment none
parse "invalid option: --text-only conflicts with --alignment" --te --alignm word a.wav
# enumerations: exact values only (0.1.3), its wording
parse 'invalid argument: --device --device: invalid choice "cu"; choose from auto, mps, cuda, cpu' --device cu a.wav
parse 'invalid argument: --device --device: invalid choice "invalid"; choose from auto, mps, cuda, cpu' --device invalid a.wav
parse 'invalid argument: --device --device: invalid choice "CPU"; choose from auto, mps, cuda, cpu' --dev=CPU a.wav
parse 'invalid argument: --existing --existing: invalid choice "skipp"; choose from error, overwrite, skip' --existing skipp a.wav
parse 'invalid argument: --dtype --dtype: invalid choice "bf"; choose from auto, bf16, fp16, fp32' --dtype bf a.wav
parse 'invalid argument: --vad --vad: invalid choice "sil"; choose from silero, auditok, none' --vad sil a.wav
parse 'invalid argument: --vad-engine --vad-engine: invalid choice ""; choose from auto, torch, onnx, jit' --vad-engine "" a.wav
parse 'invalid argument: --audio-backend --audio-backend: invalid choice "sox"; choose from auto, torchcodec, ffmpeg, librosa, sndfile' --audio-backend sox a.wav
parse 'invalid argument: --truncation-policy --truncation-policy: invalid choice "stop"; choose from retry, warn' --truncation-policy stop a.wav
parse 'invalid argument: --alignment --alignment: invalid choice "words"; choose from word, segment, none' --alignment words a.wav
parse 'invalid argument: --align-dtype --align-dtype: invalid choice "int8"; choose from fp32, fp16' --align-dtype int8 a.wav
parse 'invalid argument: --device --device: invalid choice "a\"b"; choose from auto, mps, cuda, cpu' --device 'a"b' a.wav
# values: a following option-like token is not a value; negative numbers are
parse "missing argument: --vad-threshold" a.wav --vad-threshold
parse "missing argument: --vad-threshold" --vad-threshold --max-dur 3 a.wav
parse "missing argument: --max-dur" --max-dur -inf a.wav
parse "missing argument: --max-dur" --max-dur -1e3 a.wav
parse "missing argument: --model" --model -- a.wav
parse "missing argument: --model" --model --text-only a.wav
# integers (Python int syntax)
parse 'invalid argument: invalid integer value: "x"' --batch-size x a.wav
parse 'invalid argument: invalid integer value: "1__0"' --batch-size 1__0 a.wav
parse 'invalid argument: invalid integer value: "_1"' --batch-size=_1 a.wav
parse 'invalid argument: invalid integer value: "1_"' --batch-size 1_ a.wav
parse 'invalid argument: invalid integer value: "0x10"' --batch-size 0x10 a.wav
parse 'invalid argument: invalid integer value: "1.5"' --max-chars 1.5 a.wav
parse 'invalid argument: invalid integer value: ""' --max-chars "" a.wav
parse 'invalid argument: invalid integer value: "+-1"' --max-chars=+-1 a.wav
parse 'invalid argument: invalid integer value: "1 2"' --max-chars "1 2" a.wav
parse 'invalid argument: invalid integer value: "٣x"' --max-chars ٣x a.wav
# floats (Python float syntax)
parse 'invalid argument: invalid float value: "x"' --max-dur x a.wav
parse 'invalid argument: invalid float value: "1e"' --max-dur 1e a.wav
parse 'invalid argument: invalid float value: "..5"' --max-dur ..5 a.wav
parse 'invalid argument: invalid float value: "."' --max-dur . a.wav
parse 'invalid argument: invalid float value: "1_.5"' --max-dur 1_.5 a.wav
parse 'invalid argument: invalid float value: "infinit"' --max-dur infinit a.wav
parse 'invalid argument: invalid float value: "nan1"' --max-dur nan1 a.wav
parse 'invalid argument: invalid float value: "0x1p3"' --max-dur 0x1p3 a.wav
parse 'invalid argument: invalid float value: ""' --max-dur= a.wav
# --formats
parse "invalid argument: unsupported output formats: a.wav" --formats txt a.wav
parse "invalid argument: unsupported output formats: a.wav, csv" --formats a.wav csv
parse "invalid argument: unsupported output formats: TXT" --formats=TXT a.wav
parse "missing argument: --formats" --formats
parse "missing argument: --formats" --formats --text-only a.wav
parse "missing argument: --formats" --formats -- a.wav
# positional placement
parse "invalid argument: unrecognized arguments: b.wav" a.wav --model x/y b.wav
parse "invalid argument: unrecognized arguments: b.wav c.wav" a.wav --recursive b.wav c.wav
parse "invalid argument: unrecognized arguments: b.wav" a.wav --model x/y -- b.wav
parse "invalid argument: unrecognized arguments: --" a.wav --model x/y --
parse "invalid argument: unrecognized arguments: b.wav d.wav" a.wav --vad none b.wav --max-dur 5 d.wav
parse "invalid argument: unrecognized arguments: b.wav" --formats=txt srt --recursive b.wav
# flags take no value
parse "needless argument: --recursive=yes" --recursive=yes a.wav
parse "needless argument: --text-only=1" --text-only=1 a.wav
parse "needless argument: --help=1" --help=1
# an error before help wins over it
parse 'invalid argument: --device --device: invalid choice "xx"; choose from auto, mps, cuda, cpu' --device xx --help
parse 'invalid argument: --device --device: invalid choice "xx"; choose from auto, mps, cuda, cpu' --device xx --device cpu -h

# ---- help and version --------------------------------------------------------
help --help
help -h
help --he
help --h
help a.wav --help
help --foo --help
help -x --help --bar
version --version
version --vers
version --version --foo
version --foo a.wav --version
version --version --help
help --help --version

# ---- configuration rules (§10.5, the gem's order) -----------------------------
mkdir -p "$tmp/localmodel"
long=$(printf 'a%.0s' $(seq 1 97))
config "--model must be a non-empty Hugging Face repository ID or local directory" --model "" a.wav
config "--model must be a non-empty Hugging Face repository ID or local directory" --model "   " a.wav
config "--model must not have leading or trailing whitespace" --model " x/y" a.wav
config "--model must not have leading or trailing whitespace" --model "x/y " a.wav
config "--model must be a valid Hugging Face repository ID or local directory: x--y: a Hub repository id cannot contain '--' or '..'" --model x--y a.wav
config "--model must be a valid Hugging Face repository ID or local directory: x/a..b: a Hub repository id cannot contain '--' or '..'" --model x/a..b a.wav
config "--model must be a valid Hugging Face repository ID or local directory: x/y.git: a Hub repository id cannot end with '.git'" --model x/y.git a.wav
config "--model must be a valid Hugging Face repository ID or local directory: $long...: a Hub repository id has at most 96 characters" --model "$long" a.wav
config "--model $tmp/nope: no such local model directory" --model "$tmp/nope" a.wav
config "--model a/b/c: no such local model directory" --model a/b/c a.wav
config "--model-revision must be a non-empty revision without surrounding whitespace" --model-revision "" a.wav
config "--model-revision must be a non-empty revision without surrounding whitespace" --model-revision " main" a.wav
config "--model-revision cannot be used with a local model directory" --model "$tmp/localmodel" --model-revision main a.wav
config "--adapter must be a non-empty Hugging Face repository ID or local directory" --adapter "" a.wav
config "--adapter-revision requires --adapter" --adapter-revision main a.wav
config "--adapter-revision must be a non-empty revision without surrounding whitespace" --adapter x/y --adapter-revision "main " a.wav
config "--adapter-revision cannot be used with a local adapter directory" --adapter "$tmp/localmodel" --adapter-revision main a.wav
config "--language must be a language tag the model lists (letters, digits, '-', '_'; ar or en for the default model)" --language "" a.wav
config "--language must be a language tag the model lists (letters, digits, '-', '_'; ar or en for the default model)" --language "<|en|>" a.wav
config "Plain-text mode supports only --formats txt" --formats srt --text-only a.wav
config "Plain-text mode supports only --formats txt" --alignment none a.wav --formats txt json
config "--audio-memory-gb must be finite and positive" --audio-memory-gb 0 a.wav
config "--audio-memory-gb must be finite and positive" --audio-memory-gb=-1 a.wav
config "--audio-memory-gb must be finite and positive" --audio-memory-gb inf a.wav
config "--audio-memory-gb must be finite and positive" --audio-memory-gb NaN a.wav
config "--preprocess-workers must be positive" --preprocess-workers 0 a.wav
config "--preprocess-workers must be positive" --preprocess-workers -2 a.wav
config "--vad-batch-size and --vad-block-frames must be positive" --vad-batch-size 0 a.wav
config "--vad-batch-size and --vad-block-frames must be positive" --vad-block-frames -1 a.wav
config "--vad-batch-size * --vad-block-frames must not exceed 32768 frames" --vad-batch-size 64 --vad-block-frames 1024 a.wav
config "--vad-batch-size * --vad-block-frames must not exceed 32768 frames" --vad-engine torch --vad-batch-size 2147483647 a.wav
config "--vad-threads must be positive" --vad-threads 0 a.wav
config "--vad-threads applies only to packed Torch Silero VAD" --vad-threads 2 --vad-engine onnx a.wav
config "--vad-threads applies only to packed Torch Silero VAD" --vad-threads 2 --vad auditok a.wav
config "--batch-size must be positive" --batch-size 0 a.wav
config "--batch-size must be positive" --batch-size -5 a.wav
config "--batch-size must be positive" --batch-size -٣ a.wav
config "--batch-max-size must be positive" --batch-max-size 0 a.wav
config "--batch-max-size must be at least --batch-size" --batch-size 8 --batch-max-size 4 --adaptive-batch a.wav
config "--batch-max-size requires --adaptive-batch" --batch-max-size 8 a.wav
config "--batch-max-size requires --adaptive-batch" --batch-max-size 8 --adaptive-batch --no-adaptive-batch a.wav
config "--batch-audio-seconds must be finite and positive" --batch-audio-seconds 0 a.wav
config "--batch-audio-seconds must be finite and positive" --batch-audio-seconds Infinity a.wav
config "--batch-audio-seconds must be finite and positive" --batch-audio-seconds=-nan a.wav
config "--batch-vram-target must be between 0.50 and 0.98" --batch-vram-target 0.49 a.wav
config "--batch-vram-target must be between 0.50 and 0.98" --batch-vram-target 0.99 a.wav
config "--batch-vram-target must be between 0.50 and 0.98" --batch-vram-target nan a.wav
config "--align-batch-size must be positive" --alignment word --align-batch-size 0 a.wav
config "--max-dur must be finite and positive" --max-dur 0 a.wav
config "--max-dur must be finite and positive" --max-dur=-inf a.wav
config "--max-dur must be finite and positive" --max-dur nan a.wav
config "--min-dur must be finite" --min-dur inf a.wav
config "Require 0 <= --min-dur <= --max-dur" --min-dur -0.1 a.wav
config "Require 0 <= --min-dur <= --max-dur" --min-dur 31 a.wav
config "--vad none requires --max-dur >= 1 second to bound segment count and memory use" --vad none --max-dur 0.5 a.wav
config "--vad-threshold must be between 0 and 1" --vad-threshold 1.5 a.wav
config "--vad-threshold must be between 0 and 1" --vad-threshold -0.1 a.wav
config "--vad-threshold must be between 0 and 1" --vad-threshold nan a.wav
config "--min-silence-ms and --speech-pad-ms must be non-negative" --min-silence-ms -1 a.wav
config "--min-silence-ms and --speech-pad-ms must be non-negative" --speech-pad-ms -1 a.wav
config "Auditok silence and energy thresholds must be finite and non-negative" --vad auditok --max-silence -1 a.wav
config "Auditok silence and energy thresholds must be finite and non-negative" --vad auditok --energy-threshold -1 a.wav
config "--vad auditok requires --min-dur > 0" --vad auditok --min-dur 0 a.wav
config "--vad auditok requires --max-silence < --max-dur" --vad auditok --max-silence 30 a.wav
config "--vad-merge is supported only with --vad silero" --vad-merge --vad auditok a.wav
config "--vad-merge is supported only with --vad silero" --vad none --vad-merge a.wav
config "--max-new-tokens must be positive" --max-new-tokens 0 a.wav
config "--max-retry-tokens must be at least --max-new-tokens" --max-retry-tokens 100 a.wav
config "All numeric thresholds and cue limits must be finite" --energy-threshold inf a.wav
config "All numeric thresholds and cue limits must be finite" --max-silence nan a.wav
config "All numeric thresholds and cue limits must be finite" --max-gap inf a.wav
config "All numeric thresholds and cue limits must be finite" --text-only --max-cue-dur nan a.wav
config "Subtitle cue limits must be positive (and --max-gap non-negative)" --max-chars 0 a.wav
config "Subtitle cue limits must be positive (and --max-gap non-negative)" --max-cue-dur 0 a.wav
config "Subtitle cue limits must be positive (and --max-gap non-negative)" --max-gap -0.5 a.wav
# ours, then what the original accepts as configuration and refuses to run
config "--threads must be non-negative (0: every core)" --threads -1 a.wav
config "--device-index must be non-negative" --device-index -1 a.wav
config "--vad-weights must not be empty" --vad-weights "" a.wav
config "--device mps is not supported: this build runs on cuda or cpu" --device mps a.wav
config "--align-dtype fp16 is supported only with CUDA" --device cpu --alignment word --align-dtype fp16 a.wav
config "PEFT/LoRA adapters are not supported (--adapter x/y)" --adapter x/y a.wav
# the check order: the first failing rule is the one reported
config "--model must not have leading or trailing whitespace" --model " x" --max-dur 0 a.wav
config "--audio-memory-gb must be finite and positive" --max-dur 0 --audio-memory-gb 0 a.wav
config "--vad auditok requires --max-silence < --max-dur" --vad auditok --vad-merge --max-silence 40 --max-dur 35 a.wav

# ---- help layout (§10.4) --------------------------------------------------------
h="$tmp/help"
[ "$(sed -n 1p "$h")" = "Usage: cohere-transcribe [options] audio [audio ...]" ] || bad "help line 1: $(sed -n 1p "$h")"
[ -z "$(sed -n 2p "$h")" ] || bad "help line 2 not blank"
[ "$(sed -n 3p "$h")" = "Batch Arabic/English transcription with optional timestamp alignment." ] || bad "help line 3"
[ -z "$(sed -n 4p "$h")" ] || bad "help line 4 not blank"
[ "$(tail -n 1 "$h")" = "    -h, --help                       Show this help and exit." ] || bad "help last line: $(tail -n 1 "$h")"
grep -qx '        --speech-pad-ms MILLISECONDS Silero speech padding.' "$h" || bad "--speech-pad-ms should exactly fill the field"
grep -A1 -x '        --formats FORMAT \[FORMAT ...\]' "$h" | tail -n 1 |
  grep -qx '                                     Outputs to write: txt, srt, vtt, json.' || bad "--formats should wrap"
grep -A1 -x '        --min-silence-ms MILLISECONDS' "$h" | tail -n 1 |
  grep -qx '                                     Silero split silence.' || bad "--min-silence-ms should wrap"
grep -A1 -x '        --batch-audio-seconds SECONDS' "$h" | tail -n 1 |
  grep -qx '                                     Maximum padded audio per batch.' || bad "--batch-audio-seconds should wrap"
grep -qx '        --model MODEL                Hugging Face repository or local native Cohere ASR directory.' "$h" || bad "--model line"
grep -qx '        --batch-vram-target FRACTION Adaptive batching VRAM target.' "$h" || bad "--batch-vram-target line"
grep -q '(ar or en)' "$h" && bad "the language help must not limit languages to ar/en"
# every line: a heading after a blank line, or the 4+32+1 layout
awk '
  NR <= 4 { next }
  /^$/ { blank = 1; next }
  /^[A-Z][A-Za-z ()]*:$/ { if (!blank) { print "heading without a blank line: " $0; bad = 1 } blank = 0; next }
  {
    blank = 0
    if (wrapped) { if (substr($0, 1, 37) != sprintf("%37s", "") || substr($0, 38, 1) == " ") { print "bad continuation: " $0; bad = 1 } wrapped = 0; next }
    if ($0 ~ /^    -h, --help/) next
    if (substr($0, 1, 8) != "        " || substr($0, 9, 2) != "--") { print "bad switch indent: " $0; bad = 1; next }
    sw = substr($0, 5); sub(/ +[^ -].*$/, "", sw)
    # a switch longer than the field stands alone; its help is on the next line
    if (length($0) > 36 && substr($0, 37, 1) != " ") { if (index(substr($0, 9), "  ")) { print "wrapped switch with text: " $0; bad = 1 } wrapped = 1; next }
    if (substr($0, 37, 1) != " " || substr($0, 38, 1) == " ") { print "description not at column 38: " $0; bad = 1 }
  }
  END { exit bad }' "$h" || bad "help layout (above)"
# headings and the original's option order, with ours where they stand
want="--model --model-revision --adapter --adapter-revision --language --formats --output-dir --recursive
--no-recursive --existing --device --device-index --dtype --threads --cpu-wait --audio-backend --resampler --audio-memory-gb
--preprocess-workers --pipeline-preparation --no-pipeline-preparation --file-order Segmentation --vad --vad-engine
--vad-weights --vad-batch-size --vad-block-frames --vad-threads --vad-merge --no-vad-merge --min-dur
--max-dur --max-silence --energy-threshold --vad-threshold --min-silence-ms --speech-pad-ms Transcription:
--batch-size --batch-max-size --batch-audio-seconds --batch-vram-target --adaptive-batch
--no-adaptive-batch --pin-memory --no-pin-memory --max-new-tokens --max-retry-tokens --truncation-policy
--stop-repetition-loops --no-stop-repetition-loops --no-punctuation --benchmark-tokens-per-second Alignment --alignment --text-only
--align-batch-size --align-dtype --aligner-model --aligner-revision --max-chars --max-cue-dur --max-gap --profile-json --trace --version -h,"
got=$(sed -n '5,$p' "$h" | awk '/^[A-Z]/ { print $1; next } /^ +-/ { print $1 }' | tr '\n' ' ')
[ "$(echo $got)" = "$(echo $want)" ] || bad "help option order: $got"
grep -qx 'Segmentation (VAD):' "$h" || bad "heading Segmentation (VAD):"
grep -qx 'Transcription:' "$h" || bad "heading Transcription:"
grep -qx 'Alignment and subtitle cues:' "$h" || bad "heading Alignment and subtitle cues:"

# ---- exit codes against the Python twin's recording ---------------------------------
golden="$CT_SOURCE/tests/fixtures/golden/cli_cases.json"
if [ -f "$golden" ] && command -v python3 > /dev/null; then
  python3 "$CT_SOURCE/tests/e2e/cli_golden.py" "$bin" "$golden" || bad "exit codes differ from the twin's (above)"
else
  echo "cli_args: no $golden (or no python3): exit codes not compared with the twin's"
fi

echo "cli_args: $n cases, $fails failures"
[ $fails -eq 0 ]
