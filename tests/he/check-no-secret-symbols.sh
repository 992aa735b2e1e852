#!/bin/sh
# SPDX-License-Identifier: GPL-3.0-or-later
# check-no-secret-symbols.sh NM EXECUTABLE: the evaluator runs, and its static
# link holds no secret-key function (sk generation, sealing, sk encryption,
# decryption).
set -eu
nm_tool=$1
exe=$2
"$exe" >/dev/null
found=$("$nm_tool" "$exe" | grep -E ' [TtDdBb] (ckks_secret_key_|ckks_decrypt|ckks_encrypt_sk|ckks_encrypt_values_sk|ckks_helora_decrypt|ckks_helora_encrypt_sk)' || true)
if [ -n "$found" ]; then
  echo "secret-key code linked into the evaluator:"
  echo "$found"
  exit 1
fi
# the check must be able to fail: the symbols it looks for are real names
"$nm_tool" "$exe" | grep -q ' T ckks_helora_evaluate'
echo "no secret-key symbols"
