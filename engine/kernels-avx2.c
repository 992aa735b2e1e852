/* kernels-avx2.c: AVX2 + FMA + F16C kernels (compiled per function with target attributes).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "kernels-private.h"

void
lm_kernels_fill_avx2 (LmKernels *k)
{
  k->isa = LM_ISA_AVX2;
}
