/* fuzz-params.c: libFuzzer target for ckks_params_deserialize.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "fuzz-common.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  CkksParams p;
  if (ckks_params_deserialize (data, size, &p) == CKKS_OK && ckks_params_validate (&p) != CKKS_OK)
    abort ();   /* a parsed set must be valid */
  return 0;
}
