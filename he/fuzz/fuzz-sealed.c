/* fuzz-sealed.c: libFuzzer target for ckks_secret_key_unseal (fixed key).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "fuzz-common.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static const uint8_t key[32] = { 7 };
  CkksSecretKey *sk = NULL;
  if (ckks_secret_key_unseal (fuzz_context (), key, data, size, &sk) == CKKS_OK)
    ckks_secret_key_free (sk);
  return 0;
}
