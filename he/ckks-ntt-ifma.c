/* ckks-ntt-ifma.c: AVX-512 IFMA52 kernels (primes below 2^50).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ckks-internal.h"

bool
ckks_kernels_ifma (CkksKernels *k)
{
  (void) k;
  return false;
}

void
ckks_ntt_tables_expand_ifma (CkksNttTables *t, size_t n)
{
  (void) t;
  (void) n;
}
