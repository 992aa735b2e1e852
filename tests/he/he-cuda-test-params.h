/* he-cuda-test-params.h: the parameter sets the CUDA kernel tests cover.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

#include "ckks-params.h"

/* Every preset, then generated chains for log_n 12..16 (a 61-bit prime in
 * each, the widest the lazy ranges allow). Returns how many are in @out. */
static inline size_t
he_cuda_test_params (CkksParams *out, char names[][32], size_t max)
{
  size_t count = 0;
  for (const char *const *p = ckks_params_preset_names (); *p && count < max; p++)
    {
      g_assert_cmpint (ckks_params_preset (*p, &out[count]), ==, CKKS_OK);
      g_snprintf (names[count++], 32, "%s", *p);
    }
  for (uint32_t log_n = CKKS_MIN_LOG_N; log_n <= CKKS_MAX_LOG_N && count < max; log_n++)
    {
      static const unsigned small[] = { 61, 40 }, big[] = { 61, 50, 45, 30 };
      const unsigned *bits = log_n == 12 ? small : big;
      size_t n_bits = log_n == 12 ? G_N_ELEMENTS (small) : G_N_ELEMENTS (big);
      g_assert_cmpint (ckks_params_generate (log_n, bits, n_bits, &out[count]), ==, CKKS_OK);
      g_snprintf (names[count++], 32, "logn%u", log_n);
    }
  return count;
}
