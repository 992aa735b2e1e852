#!/bin/sh
# bench-vs-llamacpp.sh: decode and prefill tokens/s of tensafe-cli and llama-bench
# on the same GGUF files, interleaved (ours, llama.cpp, ours, ...) so that both
# see the same machine load. Downloads nothing: llama-bench is given.
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Usage: build-aux/bench-vs-llamacpp.sh LLAMA_BENCH TENSAFE_CLI ROUNDS THREADS FILE...
#   e.g. build-aux/bench-vs-llamacpp.sh ~/llama.cpp/build/bin/llama-bench \
#          build/src/cli/tensafe-cli 3 2 bench-q4_k_m.gguf bench-q8_0.gguf
# The models come from
#   tensafe-cli make-model --arch qwen35moe --preset bench --type q4_k_m --out bench-q4_k_m.gguf
#   tensafe-cli make-model --arch qwen35moe --preset bench --type q8_0 --out bench-q8_0.gguf
# Each round runs, per file: tensafe-cli bench engine (64-token prompt, 32 decode
# steps, 5 runs, median) then llama-bench (pp64 and tg32, 5 repetitions, mean),
# each line prefixed with the load average at its start.
set -eu
if [ $# -lt 5 ]; then
  sed -n '7,15p' "$0" >&2
  exit 2
fi
llama_bench=$1
tensafe_cli=$2
rounds=$3
threads=$4
shift 4
round=1
while [ "$round" -le "$rounds" ]; do
  for model in "$@"; do
    echo "round $round load $(cut -d' ' -f1-3 /proc/loadavg) ours:"
    "$tensafe_cli" bench engine --model "$model" --threads "$threads" \
      --prompt-tokens 64 --decode-tokens 32 --runs 5 --json
    echo "round $round load $(cut -d' ' -f1-3 /proc/loadavg) llama.cpp:"
    "$llama_bench" -m "$model" -t "$threads" -p 64 -n 32 -r 5 -o jsonl
  done
  round=$((round + 1))
done
