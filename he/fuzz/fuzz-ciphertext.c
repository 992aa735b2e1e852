/* fuzz-ciphertext.c: libFuzzer target for ckks_ciphertext_deserialize; an
 * accepted input must serialise back to the same bytes.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "fuzz-common.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  CkksCiphertext *ct = NULL;
  if (ckks_ciphertext_deserialize (fuzz_context (), data, size, &ct) != CKKS_OK)
    return 0;
  size_t len = ckks_ciphertext_serialized_size (ct);
  uint8_t *buf = malloc (len);
  if (!buf || ckks_ciphertext_serialize (ct, buf, len) != CKKS_OK || len != size
      || memcmp (buf, data, len) != 0)
    abort ();
  free (buf);
  ckks_ciphertext_free (ct);
  return 0;
}
