/* expf-poly.h: e^x by a polynomial, the exponential of the softmax and SiLU.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Internal. x = n ln2 + b with n = round(x / ln2) (the 1.5 * 2^23 shifter
 * rounds it), |b| <= ln2 / 2, ln2 in two parts so b is nearly exact; e^b by
 * the degree-5 minimax polynomial of Arm's optimized-routines expf (the
 * exponential ggml's AVX-512 softmax and SiLU use, so both agree with
 * llama.cpp's bit for bit), then 2^n into the exponent. Results below 2^-126
 * are 0 and above 2^128 infinite (|x| beyond about 87.3). Error below 2.2
 * ulp (tests/engine/test-attend.c). The vector versions in
 * kernels-attn-x86.h do these operations lane for lane: the same bits on
 * every ISA. */
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

/* How the functions are declared: static inline in C; the GPU's
 * lm-cuda-math.h compiles the same ones for host and device. */
#ifndef LM_EXPF_FN
#define LM_EXPF_FN static inline
#endif

#define LM_EXP_SHIFT 0x1.8p23f
#define LM_EXP_LOG2E 0x1.715476p+0f
#define LM_EXP_LN2_HI 0x1.62e4p-1f
#define LM_EXP_LN2_LO 0x1.7f7d1cp-20f
#define LM_EXP_C1 0x1.ffffecp-1f
#define LM_EXP_C2 0x1.fffdb6p-2f
#define LM_EXP_C3 0x1.555e66p-3f
#define LM_EXP_C4 0x1.573e2ep-5f
#define LM_EXP_C5 0x1.0e4020p-7f

LM_EXPF_FN float
lm_expf_poly (float x)
{
  float z = fmaf (x, LM_EXP_LOG2E, LM_EXP_SHIFT);
  float n = z - LM_EXP_SHIFT;
  float b = fmaf (-n, LM_EXP_LN2_LO, fmaf (-n, LM_EXP_LN2_HI, x));
  float u = b * b;
  float j = fmaf (fmaf (fmaf (LM_EXP_C5, b, LM_EXP_C4), u, fmaf (LM_EXP_C3, b, LM_EXP_C2)), u,
                  fmaf (LM_EXP_C1, b, 1.0f));
  if (n < -126.0f)
    return 0.0f;
  if (n > 127.0f)
    return INFINITY;
  /* 2^n: n sits in the low bits of z, so z's bits shifted into the
   * exponent field plus those of 1.0f (NaN stays NaN through j) */
  uint32_t zb, one;
  memcpy (&zb, &z, sizeof zb);
  float one_f = 1.0f;
  memcpy (&one, &one_f, sizeof one);
  uint32_t kb = (zb << 23) + one;
  float k;
  memcpy (&k, &kb, sizeof k);
  return j * k;
}

/* x / (1 + e^-x), as ggml's vector SiLU rounds it. */
LM_EXPF_FN float
lm_silu_poly (float x)
{
  return x / (1.0f + lm_expf_poly (0.0f - x));
}
