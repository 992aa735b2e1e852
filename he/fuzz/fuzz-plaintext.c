/* fuzz-plaintext.c: libFuzzer target for ckks_plaintext_deserialize.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "fuzz-common.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  CkksPlaintext *pt = NULL;
  if (ckks_plaintext_deserialize (fuzz_context (), data, size, &pt) == CKKS_OK)
    {
      double v[4];
      ckks_decode (pt, v, NULL, 4);
      ckks_plaintext_free (pt);
    }
  return 0;
}
