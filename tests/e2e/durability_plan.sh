#!/usr/bin/env bash
# Planning refusals of the whole command, before any decoding (issue 12):
# outputs that collide (a.wav and a.mp3 in one folder), an output that would
# overwrite an input, symlinked / dangling / folder / FIFO targets, output
# folders that escape the output root through a symlink. The audio is
# undecodable garbage: a run that got past planning would print stage 2 and
# fail the file with a decode error instead. Each case: exit 1, the planning
# message on stderr, nothing past stage 1 on stdout, no output, state or
# lock file written, the targets untouched.
set -euo pipefail
bin="$CT_BIN/cohere-transcribe"
model="$CT_FIXTURES/tiny-product"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
garbage() { head -c 3000 /dev/urandom > "$1"; }
n_cases=0

# refuse <expected stderr line> <args...>: exit 1, that message, stage 1 only
refuse() {
  local want=$1; shift
  local rc=0
  timeout 120 "$bin" --model "$model" --vad none "$@" > "$tmp/out" 2> "$tmp/err" || rc=$?
  [ $rc = 1 ] || { echo "exit $rc for: $*"; cat "$tmp/out" "$tmp/err"; exit 1; }
  grep -qxF -- "$want" "$tmp/err" || { echo "want on stderr: $want"; echo "got:"; cat "$tmp/err"; exit 1; }
  if grep -q '^\[2/4\]' "$tmp/out"; then echo "went past planning: $*"; cat "$tmp/out"; exit 1; fi
  n_cases=$((n_cases + 1))
}
# nothing_written <dir>: no outputs, state files or lock folder under dir
nothing_written() {
  local found
  found=$(find "$1" \( -name '*.txt' -o -name '*.srt' -o -name '*.vtt' -o -name '*.json' \
                       -o -name '.cohere-transcribe-locks' -o -name '*.tmp' -o -name '*.bak' \) \
                    ! -name 'notes.txt' ! -path '*/keep/*' | head -5)
  [ -z "$found" ] || { echo "written despite the refusal:"; echo "$found"; exit 1; }
}

# colliding outputs: a.wav and a.mp3 in one folder
c="$tmp/collide"; mkdir -p "$c"
garbage "$c/a.wav"; garbage "$c/a.mp3"
refuse "Output collision between $c/a.mp3 and $c/a.wav: $c/a.txt" "$c" --formats txt srt
nothing_written "$c"

# an output that would overwrite an input: the explicit input notes.txt and
# notes.wav beside it (notes.wav's txt output is notes.txt)
c="$tmp/overwrite"; mkdir -p "$c"
garbage "$c/notes.wav"; echo "keep me" > "$c/notes.txt"
refuse "Output path for $c/notes.wav collides with an input: $c/notes.txt" "$c/notes.wav" "$c/notes.txt" \
  --formats txt
[ "$(cat "$c/notes.txt")" = "keep me" ] || { echo "input overwritten"; exit 1; }
nothing_written "$c"

# symlinked, dangling, folder and FIFO targets (even with overwrite)
c="$tmp/targets"; mkdir -p "$c/keep"
garbage "$c/a.wav"; echo "precious" > "$c/keep/victim.txt"
ln -s keep/victim.txt "$c/a.txt"
refuse "Output path is not a regular file: $c/a.txt" "$c" --formats txt srt --existing overwrite
[ "$(cat "$c/keep/victim.txt")" = "precious" ] || { echo "symlink target written"; exit 1; }
rm "$c/a.txt"; ln -s missing "$c/a.txt"
refuse "Output path is not a regular file: $c/a.txt" "$c" --formats txt srt --existing overwrite
[ ! -e "$c/missing" ] || { echo "dangling symlink target created"; exit 1; }
rm "$c/a.txt"; mkdir "$c/a.txt"
refuse "Output path is not a regular file: $c/a.txt" "$c" --formats txt srt --existing overwrite
rmdir "$c/a.txt"; mkfifo "$c/a.srt"
# a FIFO must be refused without being opened (refuse's timeout catches a block)
refuse "Output path is not a regular file: $c/a.srt" "$c" --formats txt srt --existing overwrite
rm "$c/a.srt"
ln -s ../keep "$c/.a.cohere-transcribe.manifest.json"
refuse "State marker is not a regular file: $c/.a.cohere-transcribe.manifest.json" "$c" --formats txt
rm "$c/.a.cohere-transcribe.manifest.json"
nothing_written "$c"

# output folders escaping the output root: a symlinked sub-folder of the root
c="$tmp/escape"; mkdir -p "$c/in/sub" "$c/out" "$c/elsewhere"
garbage "$c/in/sub/b.wav"
ln -s ../elsewhere "$c/out/sub"
refuse "Output directory escapes output root: $c/out/sub -> $c/elsewhere" "$c/in" --output-dir "$c/out" \
  --formats txt
[ -z "$(ls -A "$c/elsewhere")" ] || { echo "wrote outside the output root"; ls -A "$c/elsewhere"; exit 1; }
# (a relative path with "..", which discovery never makes from the command
# line, is refused by planning itself: tests/unit/test_plan.c test_escapes)
nothing_written "$c/in"

echo "ok: $n_cases planning refusals, each before decoding, nothing written"
