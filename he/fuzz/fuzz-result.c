/* fuzz-result.c: libFuzzer target for ckks_helora_result_deserialize_into.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "fuzz-common.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static CkksContext *ctx;
  static CkksHeloraLayout *layout;
  static CkksCiphertext **result;
  if (!ctx)
    {
      const unsigned bits[] = { 50, 50 };   /* two limbs: the HE-LoRA layout needs them */
      CkksParams p;
      if (ckks_params_generate (12, bits, 2, &p) != CKKS_OK || ckks_context_new (&p, &ctx) != CKKS_OK
          || ckks_helora_layout_new (ctx, 1000, 4, &layout) != CKKS_OK
          || ckks_helora_ciphertexts_new (layout, 1, &result) != CKKS_OK)
        abort ();
    }
  ckks_helora_result_deserialize_into (layout, result[0], data, size);
  return 0;
}
