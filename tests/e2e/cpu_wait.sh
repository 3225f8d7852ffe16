#!/usr/bin/env bash
# cpu_wait.sh — --cpu-wait (OpenMP's wait policy, docs/USAGE.md): the tools
# re-execute themselves once with OMP_WAIT_POLICY set, and libgomp in the new
# image really has it. libgomp is the witness: OMP_DISPLAY_ENV=verbose makes
# every process image print its spin count when it starts (passive '0',
# active '30000000000', unset '300000', which --cpu-wait auto, the default,
# leaves), so the list of spin counts shows how
# many images ran (one re-exec: two) and what each got. A user's
# OMP_WAIT_POLICY is kept.
set -u
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset OMP_WAIT_POLICY CT_CPU_WAIT_EXEC
export OMP_NUM_THREADS=2 OMP_DISPLAY_ENV=verbose
DOC="$CT_BIN/cohere-transcribe-doctor"
INS="$CT_BIN/cohere-transcribe-inspect"

# spins FILE: the GOMP_SPINCOUNT of each image, one per line
spins() { sed -n "s/^ *GOMP_SPINCOUNT = '\([0-9]*\)'.*/\1/p" "$1" | tr '\n' ' '; }

# the doctor: the default (auto) leaves libgomp its own: one image, spin 300000
timeout 120 "$DOC" >"$tmp/d.out" 2>"$tmp/d.err" || fail "doctor exited $? ($(tail -3 "$tmp/d.err"))"
[ "$(spins "$tmp/d.err")" = "300000 " ] || fail "doctor: spin counts '$(spins "$tmp/d.err")', want '300000 '"
grep -qxF "[OK]   CPU wait policy: libgomp's default, spin then sleep (OMP_WAIT_POLICY unset)" "$tmp/d.out" ||
  fail "doctor: no default line"

# the user's value wins: no re-exec, libgomp spins as active, reported so
OMP_WAIT_POLICY=active timeout 120 "$DOC" >"$tmp/u.out" 2>"$tmp/u.err" || fail "doctor (user active) exited $?"
[ "$(spins "$tmp/u.err")" = "30000000000 " ] || fail "user active: spin counts '$(spins "$tmp/u.err")'"
grep -qxF "[OK]   CPU wait policy: active (OMP_WAIT_POLICY=active from the environment, which wins over --cpu-wait)" \
  "$tmp/u.out" || fail "doctor: the user's value is not reported"

# inspect --cpu-wait active / passive / auto (it stops at its own missing-input check after the re-exec)
for p in active passive auto; do
  want=$([ $p = active ] && echo "30000000000 " || { [ $p = passive ] && echo "0 "; })
  timeout 120 "$INS" --cpu-wait $p --model "$tmp/none" --out "$tmp/o.st" "$tmp/none.wav" >/dev/null 2>"$tmp/i.err"
  [ "$(spins "$tmp/i.err")" = "300000 $want" ] || fail "inspect --cpu-wait $p: spin counts '$(spins "$tmp/i.err")'"
done
timeout 60 "$INS" --cpu-wait spin --model x --out "$tmp/o.st" a.wav >/dev/null 2>"$tmp/b.err"
[ $? = 2 ] && grep -q "cpu-wait: 'spin' (auto, passive or active)" "$tmp/b.err" || fail "inspect --cpu-wait spin not refused"

# cohere-transcribe: the parsed option, after the parse (help and errors do not re-exec)
timeout 60 "$CT_BIN/cohere-transcribe" --help >/dev/null 2>"$tmp/h.err"
[ "$(spins "$tmp/h.err")" = "300000 " ] || fail "--help: spin counts '$(spins "$tmp/h.err")' (re-executed?)"
timeout 120 "$CT_BIN/cohere-transcribe" --cpu-wait active --vad none "$tmp/missing.wav" >/dev/null 2>"$tmp/t.err"
[ "$(spins "$tmp/t.err")" = "300000 30000000000 " ] || fail "cohere-transcribe: spin counts '$(spins "$tmp/t.err")'"
timeout 120 "$CT_BIN/cohere-transcribe" --cpu-wait passive --vad none "$tmp/missing.wav" >/dev/null 2>"$tmp/t.err"
[ "$(spins "$tmp/t.err")" = "300000 0 " ] || fail "cohere-transcribe --cpu-wait passive: spin counts '$(spins "$tmp/t.err")'"
# the default (auto): no re-exec
timeout 120 "$CT_BIN/cohere-transcribe" --vad none "$tmp/missing.wav" >/dev/null 2>"$tmp/t.err"
[ "$(spins "$tmp/t.err")" = "300000 " ] || fail "cohere-transcribe (auto): spin counts '$(spins "$tmp/t.err")'"
echo "cpu_wait: ok"
