#!/bin/sh
# bench-decode-floor.sh: decode against the machine's read-bandwidth ceiling, and
# against llama-bench, in interleaved rounds (ours, llama.cpp, [baseline], ...)
# so that all programs see the same machine load. Downloads nothing.
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Usage: tools/bench-decode-floor.sh LLAMA_BENCH TENSAFE_CLI ROUNDS "THREADS..." FILE...
#   e.g. tools/bench-decode-floor.sh ~/llama.cpp/build/bin/llama-bench \
#          build/src/cli/tensafe-cli 3 "1 2" bench-q4_k_m.gguf bench-q8_0.gguf
# BASELINE=path/to/another/tensafe-cli adds that binary to every round (before
# and after a change, same minutes). CLOCK=cpu times ours by CPU time.
# Per round, file and thread count it prints the load average, then
#   ours: `bench engine --json` (prompt 64, decode 32, 5 runs, median), which
#         measures the read bandwidth (256 MiB, best of 5 passes) with the
#         same threads and clock after each run and prints bytes per token,
#         the decode ceiling (median bandwidth / bytes) and decode as a % of it;
#   llama.cpp: `llama-bench -p 64 -n 32 -r 5 -o jsonl` (mean of 5).
# The bar of issue 21: ours >= 75 % of the ceiling and >= 1.2x llama.cpp's
# decode; divide llama.cpp's tg32 by ours' decode_ceiling_tok_s of the same
# round for its share of the ceiling.
set -eu
if [ $# -lt 5 ]; then
  sed -n '7,20p' "$0" >&2
  exit 2
fi
llama_bench=$1
tensafe_cli=$2
rounds=$3
thread_counts=$4
shift 4
clock=${CLOCK:-wall}
load () { cut -d' ' -f1-3 /proc/loadavg; }
ours () {
  "$1" bench engine --model "$2" --threads "$3" --prompt-tokens 64 --decode-tokens 32 \
    --runs 5 --clock "$clock" --json
}
round=1
while [ "$round" -le "$rounds" ]; do
  for model in "$@"; do
    for t in $thread_counts; do
      echo "round $round threads $t load $(load) ours:"
      ours "$tensafe_cli" "$model" "$t"
      echo "round $round threads $t load $(load) llama.cpp:"
      "$llama_bench" -m "$model" -t "$t" -p 64 -n 32 -r 5 -o jsonl
      if [ -n "${BASELINE:-}" ]; then
        echo "round $round threads $t load $(load) baseline:"
        ours "$BASELINE" "$model" "$t"
      fi
    done
  done
  round=$((round + 1))
done
