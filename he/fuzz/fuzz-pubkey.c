/* fuzz-pubkey.c: libFuzzer target for ckks_public_key_deserialize.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "fuzz-common.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  CkksPublicKey *pk = NULL;
  if (ckks_public_key_deserialize (fuzz_context (), data, size, &pk) == CKKS_OK)
    ckks_public_key_free (pk);
  return 0;
}
