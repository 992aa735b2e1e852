/* kernels-avx512.c: AVX-512 (F/BW/VL) + VNNI kernels (compiled per function with target attributes).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "kernels-private.h"

void
lm_kernels_fill_avx512 (LmKernels *k)
{
  k->isa = LM_ISA_AVX512;
}
