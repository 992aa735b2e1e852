/* fuzz-common.h: a small context shared by the deserialiser fuzz targets.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "ckks.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* N = 4096, one 50-bit prime: small enough for many executions a second. */
static inline const CkksContext *
fuzz_context (void)
{
  static CkksContext *ctx;
  if (!ctx)
    {
      const unsigned bits[] = { 50 };
      CkksParams p;
      if (ckks_params_generate (12, bits, 1, &p) != CKKS_OK || ckks_context_new (&p, &ctx) != CKKS_OK)
        abort ();
    }
  return ctx;
}
