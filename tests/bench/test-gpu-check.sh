#!/bin/sh
# build-aux/gpu-check.sh on this machine, with the build's own programs:
# without a GPU it must run its steps to the end, pass the ones that need
# none, skip the GPU ones with the reason, and exit 0.
#   test-gpu-check.sh SOURCE_ROOT TENSAFE_CLI TEST_PROBE TEST_HE_GPU_HELORA
set -u
root=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bundle/bin" "$tmp/bundle/lib" "$tmp/out"
ln -s "$2" "$tmp/bundle/bin/tensafe-cli"
ln -s "$3" "$tmp/bundle/bin/test-gpu-probe"
ln -s "$4" "$tmp/bundle/bin/test-he-gpu-helora"
cd "$root" || exit 1
PATH=/usr/bin:/bin GPU_CHECK_BUNDLE=$tmp/bundle GPU_CHECK_WORK=$tmp/work OUT=$tmp/out \
  GPU_CHECK_STEPS='test-gpu-probe|test-he-gpu-helora|bench he' \
  sh build-aux/gpu-check.sh >"$tmp/log" 2>&1
rc=$?
cat "$tmp/log"
fail() { echo "not ok: $*"; exit 1; }
[ "$rc" -eq 0 ] || fail "exit status $rc"
grep -q '^PASS  test-gpu-probe' "$tmp/out/summary.txt" || fail "the probe did not pass"
grep -q '^PASS  test-he-gpu-helora' "$tmp/out/summary.txt" || fail "he-gpu-helora did not pass"
grep -q '^SKIP  bench he --backend cuda --preset default (no nvidia-smi)' "$tmp/out/summary.txt" ||
  fail "the GPU benchmark was not skipped with its reason"
grep -q '^PASS  bench he (CPU)' "$tmp/out/summary.txt" || fail "the CPU benchmark did not run"
grep -q 'HE-LoRA token, d = 2048' "$tmp/out/bench.log" || fail "bench.log lacks the CPU table"
grep -q '^gpu-check: 0 failed step' "$tmp/out/summary.txt" || fail "no closing line"
echo "ok"
