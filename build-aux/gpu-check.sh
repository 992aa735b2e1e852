#!/bin/bash
# gpu-check.sh: the one program to run on a GPU machine, from the repository
# root, with the bundle of build-aux/gpu-bundle.sh beside the tree.
#
#   OUT=/some/folder build-aux/gpu-check.sh         (OUT default: ./gpu-out)
#
# Writes as it goes, so that a run cut short still leaves its results:
#   $OUT/summary.txt   one line per step: PASS, FAIL, SKIP (with the reason)
#   $OUT/gpu.txt       nvidia-smi, the probe, tensafe-cli info
#   $OUT/tests.log     every GPU test of docs/gpu.md (TAP)
#   $OUT/bench.log     the benchmarks
#   $OUT/sanitizer.log compute-sanitizer's memcheck of the kernel tests
#   $OUT/profile.csv   GPU_CHECK_PROFILE=1: Nsight Compute's time per kernel
# GPU_CHECK_STEPS, an extended regular expression, runs only the steps whose
# names match (a second, shorter run after a fix). Stops starting steps once GPU_CHECK_BUDGET_S seconds (default 450) have
# passed and cuts the running one there, so that the whole run fits a
# device lease with time left for a second try. Without a GPU (or without
# nvcc's compute-sanitizer) it runs to the end and says which steps it
# skipped and why. Exit status: 0 when no step failed.
set -u

root=$PWD
OUT=${OUT:-$root/gpu-out}
budget=${GPU_CHECK_BUDGET_S:-450}
work=${GPU_CHECK_WORK:-/tmp/tensafe-gpu-check}
started=$(date +%s)
failures=0
mkdir -p "$OUT" "$work"
summary=$OUT/summary.txt
: >"$summary"
: >"$OUT/tests.log"
: >"$OUT/bench.log"

note() { echo "$*" | tee -a "$summary"; }
elapsed() { echo $(($(date +%s) - started)); }

# The programs: gpu-bundle/ (made here), else its archive (what travels).
find_bundle() {
  if [ -n "${GPU_CHECK_BUNDLE:-}" ]; then
    bundle=$GPU_CHECK_BUNDLE     # a folder with bin/ (and lib/): the suite's own check
  elif [ -x "$root/gpu-bundle/bin/tensafe-cli" ]; then
    bundle=$root/gpu-bundle
  elif [ -f "$root/gpu-bundle.tar.xz" ]; then
    bundle=$work/bundle
    rm -rf "$bundle" && mkdir -p "$bundle"
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$root/gpu-bundle.tar.xz" "$bundle" || tar -xJf "$root/gpu-bundle.tar.xz" -C "$bundle"
  else
    echo "gpu-check: no gpu-bundle/ or gpu-bundle.tar.xz: run build-aux/gpu-bundle.sh first" >&2
    exit 2
  fi
}
find_bundle
bin=$bundle/bin
export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The suite's environment (tests/meson.build).
export TENSAFE_TEST_DATA=$root/tests/data TENSAFE_CLI=$bin/tensafe-cli
export GSETTINGS_BACKEND=memory G_DEBUG=fatal-warnings G_ENABLE_DIAGNOSTIC=1

have_gpu=0
gpu_reason="no nvidia-smi"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  have_gpu=1
elif command -v nvidia-smi >/dev/null; then
  gpu_reason="nvidia-smi finds no GPU"
fi

# run_step NAME LIMIT_S LOG COMMAND...: runs COMMAND with LIMIT_S or what is
# left of the budget, whichever is less, appending its output to LOG.
run_step() {
  local name=$1 limit=$2 log=$3
  shift 3
  if [ -n "${GPU_CHECK_STEPS:-}" ] && ! echo "$name" | grep -Eq "$GPU_CHECK_STEPS"; then
    return 0
  fi
  local left=$((budget - $(elapsed)))
  if [ "$left" -lt 15 ]; then
    note "SKIP  $name (the ${budget} s budget is spent)"
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0
  t0=$(date +%s)
  echo "=== $name (limit ${limit} s, at $(elapsed) s) === $*" >>"$log"
  timeout -k 5 "$limit" "$@" >>"$log" 2>&1
  local rc=$? secs=$(($(date +%s) - t0))
  if [ "$rc" -eq 0 ]; then
    note "PASS  $name (${secs} s)"
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    note "FAIL  $name (stopped after ${secs} s)"
    failures=$((failures + 1))
  else
    note "FAIL  $name (exit $rc, ${secs} s)"
    failures=$((failures + 1))
  fi
  return "$rc"
}

# GPU facts first: what the numbers below were measured on.
{
  nvidia-smi 2>&1 || echo "nvidia-smi: $gpu_reason"
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,driver_version \
    --format=csv 2>&1
  echo "--- tensafe-cli info"
  "$bin/tensafe-cli" info 2>&1
  echo "--- machine"
  uname -r
  nproc
  grep -m1 "model name" /proc/cpuinfo
} >"$OUT/gpu.txt" 2>&1
note "gpu-check: $(grep -m1 -o 'NVIDIA [A-Z0-9][^|]*' "$OUT/gpu.txt" | head -1 | sed 's/ *$//')" \
  "$([ $have_gpu = 1 ] || echo "no GPU: $gpu_reason")"

# 1. Every GPU test; with a GPU nothing may be skipped.
gpu_tests="test-he-cuda-kernels test-he-gpu-helora test-engine-cuda-matvec test-engine-cuda-ops
  test-engine-forward-cuda test-engine-forward-quant-cuda test-engine-gpu-session
  test-helora-backend test-gpu-probe"
for t in $gpu_tests; do
  before=$(wc -l <"$OUT/tests.log" 2>/dev/null || echo 0)
  run_step "$t" 120 "$OUT/tests.log" "$bin/$t" --tap
  # the cases that only run without a GPU say so when they skip
  skips=$(tail -n +"$((before + 1))" "$OUT/tests.log" | grep "# SKIP" |
    grep -Evc "# SKIP a GPU is (present|usable)")
  if [ "$skips" -gt 0 ] && [ $have_gpu = 1 ]; then
    note "FAIL  $t: $skips test(s) skipped on a GPU machine"
    failures=$((failures + 1))
  elif [ "$skips" -gt 0 ]; then
    note "      $t: $skips skipped ($gpu_reason)"
  fi
done

gpu_step() {
  if [ $have_gpu = 1 ]; then
    run_step "$@"
  else
    note "SKIP  $1 ($gpu_reason)"
  fi
}

# 2. The HE-LoRA token (N = 16384, d = 2048, r = 32, sk): GPU and CPU in one run.
for preset in default fast; do
  gpu_step "bench he --backend cuda --preset $preset" 90 "$OUT/bench.log" \
    "$bin/tensafe-cli" bench he --backend cuda --preset $preset --runs 200
done
run_step "bench he (CPU)" 90 "$OUT/bench.log" "$bin/tensafe-cli" bench he --encrypt sk --runs 30

# 3. The runtime on the bench preset (4 layers of Qwen3.5-35B-A3B), Q4_K_M,
#    and local HE-LoRA with the engine and CKKS both on the GPU.
bench_model=$work/bench-q4_k_m.gguf
run_step "make-model bench" 120 "$OUT/bench.log" \
  "$bin/tensafe-cli" make-model --arch qwen35moe --preset bench --type q4_k_m -o "$bench_model" -f
if [ -f "$bench_model" ]; then
  gpu_step "bench engine bench preset --backend cuda" 90 "$OUT/bench.log" "$bin/tensafe-cli" bench engine \
    -m "$bench_model" --backend cuda --prompt-tokens 512 --decode-tokens 256
  # the same without programmatic dependent launch, and with a layer's
  # independent products on two streams, for the comparison
  gpu_step "bench engine bench preset --backend cuda, TENSAFE_CUDA_PDL=0" 90 "$OUT/bench.log" \
    env TENSAFE_CUDA_PDL=0 "$bin/tensafe-cli" bench engine \
    -m "$bench_model" --backend cuda --prompt-tokens 512 --decode-tokens 256
  gpu_step "bench engine bench preset --backend cuda, TENSAFE_CUDA_BRANCHES=1" 90 "$OUT/bench.log" \
    env TENSAFE_CUDA_BRANCHES=1 "$bin/tensafe-cli" bench engine \
    -m "$bench_model" --backend cuda --prompt-tokens 512 --decode-tokens 256
  gpu_step "bench helora bench preset, engine + CKKS on the GPU" 120 "$OUT/bench.log" \
    "$bin/tensafe-cli" bench helora -m "$bench_model" --make-lora "$work/bench-lora.gguf" --rank 32 \
    --backend cuda --he-backend cuda -n 64 --rounds 3
fi

# 4. The full Qwen3.5-35B-A3B shape in Q4_K_M (21.2 GB, written here).
full_model=$work/full-q4_k_m.gguf
if [ $have_gpu = 1 ]; then
  run_step "make-model full" 180 "$OUT/bench.log" \
    "$bin/tensafe-cli" make-model --arch qwen35moe --preset full --type q4_k_m -o "$full_model" -f &&
  [ -f "$full_model" ] && run_step "bench engine full --backend cuda" 120 "$OUT/bench.log" "$bin/tensafe-cli" bench engine \
    -m "$full_model" --backend cuda --prompt-tokens 64 --decode-tokens 128 &&
  run_step "bench engine full --backend cuda, TENSAFE_CUDA_BRANCHES=1" 120 "$OUT/bench.log" \
    env TENSAFE_CUDA_BRANCHES=1 "$bin/tensafe-cli" bench engine \
    -m "$full_model" --backend cuda --prompt-tokens 64 --decode-tokens 128 &&
  run_step "bench engine full --backend cuda, TENSAFE_CUDA_PDL=0" 120 "$OUT/bench.log" \
    env TENSAFE_CUDA_PDL=0 "$bin/tensafe-cli" bench engine \
    -m "$full_model" --backend cuda --prompt-tokens 64 --decode-tokens 128
  rm -f "$full_model"
else
  note "SKIP  make-model full, bench engine full ($gpu_reason: 21 GB for nothing)"
fi

# 5. compute-sanitizer on the kernel tests, then the kernels' timings.
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -z "$sanitizer" ]; then
  note "SKIP  compute-sanitizer (not installed)"
else
  for t in test-he-cuda-kernels test-he-gpu-helora test-engine-cuda-ops; do
    gpu_step "memcheck $t" 120 "$OUT/sanitizer.log" \
      "$sanitizer" --tool memcheck --error-exitcode 97 "$bin/$t" --tap
  done
fi

gpu_step "bench-cuda-kernels" 60 "$OUT/bench.log" "$bin/bench-cuda-kernels" 100
gpu_step "bench-cuda-matvec" 100 "$OUT/bench.log" "$bin/bench-cuda-matvec"
gpu_step "bench-cuda-ops" 60 "$OUT/bench.log" "$bin/bench-cuda-ops" 200
# 6. The real Qwen2.5 file of docs/models.md, when it is in the model cache.
real_model=${TENSAFE_REAL_MODEL:-$HOME/.cache/tensafe/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf}
if [ -f "$real_model" ]; then
  gpu_step "bench engine real Qwen2.5 --backend cuda" 60 "$OUT/bench.log" "$bin/tensafe-cli" bench engine \
    -m "$real_model" --backend cuda --prompt-tokens 128 --decode-tokens 128
else
  note "SKIP  real Qwen2.5 model (not at $real_model)"
fi

# 7. Kernel by kernel (Nsight Compute, each CUDA graph node timed alone):
#    decode of the bench preset and the HE-LoRA token, for the next
#    optimisation; only with GPU_CHECK_PROFILE=1 (about a minute).
ncu_bin=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
if [ "${GPU_CHECK_PROFILE:-0}" = 1 ] && [ -n "$ncu_bin" ] && [ -f "$bench_model" ]; then
  ncu_args="--clock-control none --graph-profiling node --metrics gpu__time_duration.sum --csv"
  # shellcheck disable=SC2086 # options, one per word
  # a one-token prompt: its prefill is a decode step; the rest replay the graph
  gpu_step "ncu engine decode" 120 "$OUT/profile.csv" "$ncu_bin" $ncu_args --launch-skip 300 \
    --launch-count 300 "$bin/tensafe-cli" bench engine -m "$bench_model" --backend cuda \
    --prompt-tokens 1 --decode-tokens 16 --runs 1
  # shellcheck disable=SC2086
  gpu_step "ncu HE-LoRA token" 120 "$OUT/profile.csv" "$ncu_bin" $ncu_args --launch-skip 40 \
    --launch-count 60 "$bin/tensafe-cli" bench he --backend cuda --preset default --runs 30
fi

rm -rf "$work"
note "gpu-check: $failures failed step(s) in $(elapsed) s"
[ "$failures" -eq 0 ]
