/* kernels-scalar-lowbit.c: portable reference kernels of Q4_0, Q4_1, Q5_0,
 * Q5_1 (against Q8_0 / Q8_1 activations) and Q2_K, Q3_K (against Q8_K).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Each block's integer sum is exact; blocks are combined in f32 as ggml's
 * x86 backend combines them (scale products first, the min terms of
 * Q4_1/Q5_1 through the activation sums s, of Q2_K through bsums). */
#include "kernels-private.h"
#include "quant-private.h"

/* The 32 quants of a Q4/Q5 block in natural order, minus @offset. */
static void
unpack_q32 (const uint8_t *qs, const uint8_t *qh_bytes, int offset, int q[LM_QK32])
{
  uint32_t qh = 0;
  if (qh_bytes)
    qh = (uint32_t) qh_bytes[0] | (uint32_t) qh_bytes[1] << 8 | (uint32_t) qh_bytes[2] << 16
         | (uint32_t) qh_bytes[3] << 24;
  for (int j = 0; j < LM_QK32 / 2; j++)
    {
      q[j] = ((qs[j] & 0xF) | (int) (((qh >> j) & 1u) << 4)) - offset;
      q[j + 16] = ((qs[j] >> 4) | (int) (((qh >> (j + 16)) & 1u) << 4)) - offset;
    }
}

static int
dot_i8 (const int q[LM_QK32], const int8_t *a)
{
  int sumi = 0;
  for (int j = 0; j < LM_QK32; j++)
    sumi += q[j] * a[j];
  return sumi;
}

static float
dot_q4_0_q8_0 (const LmBlockQ4_0 *w, const LmBlockQ8_0 *a, int64_t n_blocks)
{
  float sum = 0.0f;
  int q[LM_QK32];
  for (int64_t b = 0; b < n_blocks; b++)
    {
      unpack_q32 (w[b].qs, NULL, 8, q);
      sum += (float) dot_i8 (q, a[b].qs) * (lm_fp16_to_fp32 (w[b].d) * lm_fp16_to_fp32 (a[b].d));
    }
  return sum;
}

static float
dot_q5_0_q8_0 (const LmBlockQ5_0 *w, const LmBlockQ8_0 *a, int64_t n_blocks)
{
  float sum = 0.0f;
  int q[LM_QK32];
  for (int64_t b = 0; b < n_blocks; b++)
    {
      unpack_q32 (w[b].qs, w[b].qh, 16, q);
      sum += (float) dot_i8 (q, a[b].qs) * (lm_fp16_to_fp32 (w[b].d) * lm_fp16_to_fp32 (a[b].d));
    }
  return sum;
}

/* d*da*sum(q a) + m*s: the min enters through the activation sum s. */
static float
dot_q4_1_q8_1 (const LmBlockQ4_1 *w, const LmBlockQ8_1 *a, int64_t n_blocks)
{
  float sum = 0.0f, summs = 0.0f;
  int q[LM_QK32];
  for (int64_t b = 0; b < n_blocks; b++)
    {
      unpack_q32 (w[b].qs, NULL, 0, q);
      summs += lm_fp16_to_fp32 (w[b].m) * lm_fp16_to_fp32 (a[b].s);
      sum += (float) dot_i8 (q, a[b].qs) * (lm_fp16_to_fp32 (w[b].d) * lm_fp16_to_fp32 (a[b].d));
    }
  return sum + summs;
}

static float
dot_q5_1_q8_1 (const LmBlockQ5_1 *w, const LmBlockQ8_1 *a, int64_t n_blocks)
{
  float sum = 0.0f, summs = 0.0f;
  int q[LM_QK32];
  for (int64_t b = 0; b < n_blocks; b++)
    {
      unpack_q32 (w[b].qs, w[b].qh, 0, q);
      summs += lm_fp16_to_fp32 (w[b].m) * lm_fp16_to_fp32 (a[b].s);
      sum += (float) dot_i8 (q, a[b].qs) * (lm_fp16_to_fp32 (w[b].d) * lm_fp16_to_fp32 (a[b].d));
    }
  return sum + summs;
}

/* Byte in qs (and, for Q3_K, in hmask modulo 32) and bit shift of the
 * 2-bit quant of value l of sub-block s, s = 8h + 2j + p. */
static inline int
k23_byte (int s, int l)
{
  return 32 * (s / 8) + 16 * (s % 2) + l;
}

static inline int
k23_shift (int s)
{
  return 2 * ((s % 8) / 2);
}

/* Sum of quant * activation over the 16 values of sub-block @s. */
static int
q2_sub_sum (const LmBlockQ2_K *w, const LmBlockQ8_K *a, int s)
{
  int part = 0;
  for (int l = 0; l < 16; l++)
    part += ((w->qs[k23_byte (s, l)] >> k23_shift (s)) & 3) * a->qs[16 * s + l];
  return part;
}

static int
q3_sub_sum (const LmBlockQ3_K *w, const LmBlockQ8_K *a, int s)
{
  int part = 0;
  for (int l = 0; l < 16; l++)
    part += lm_q3_K_quant (w->qs, w->hmask, k23_byte (s, l), k23_shift (s)) * a->qs[16 * s + l];
  return part;
}

/* dall * sum_s sc_s sum(q a) - dmin' * sum_s m_s bsums_s. */
static float
dot_q2_K_q8_K (const LmBlockQ2_K *w, const LmBlockQ8_K *a, int64_t n_blocks)
{
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; b++)
    {
      int isum = 0, summs = 0;
      for (int s = 0; s < 16; s++)
        {
          summs += (w[b].scales[s] >> 4) * a[b].bsums[s];
          isum += (w[b].scales[s] & 0xF) * q2_sub_sum (&w[b], &a[b], s);
        }
      float dall = a[b].d * lm_fp16_to_fp32 (w[b].d);
      float dmin = a[b].d * lm_fp16_to_fp32 (w[b].dmin);
      sum += dall * (float) isum - dmin * (float) summs;
    }
  return sum;
}

static float
dot_q3_K_q8_K (const LmBlockQ3_K *w, const LmBlockQ8_K *a, int64_t n_blocks)
{
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; b++)
    {
      int8_t sc[16];
      int sumi = 0;
      lm_q3_K_unpack_scales (w[b].scales, sc);
      for (int s = 0; s < 16; s++)
        sumi += sc[s] * q3_sub_sum (&w[b], &a[b], s);
      sum += lm_fp16_to_fp32 (w[b].d) * a[b].d * (float) sumi;
    }
  return sum;
}

#define NO_TARGET
LM_DEFINE_ROWS (NO_TARGET, rows_q4_0, dot_q4_0_q8_0, LmBlockQ4_0, LmBlockQ8_0, LM_QK32)
LM_DEFINE_ROWS (NO_TARGET, rows_q4_1, dot_q4_1_q8_1, LmBlockQ4_1, LmBlockQ8_1, LM_QK32)
LM_DEFINE_ROWS (NO_TARGET, rows_q5_0, dot_q5_0_q8_0, LmBlockQ5_0, LmBlockQ8_0, LM_QK32)
LM_DEFINE_ROWS (NO_TARGET, rows_q5_1, dot_q5_1_q8_1, LmBlockQ5_1, LmBlockQ8_1, LM_QK32)
LM_DEFINE_ROWS (NO_TARGET, rows_q2_K, dot_q2_K_q8_K, LmBlockQ2_K, LmBlockQ8_K, LM_QK_K)
LM_DEFINE_ROWS (NO_TARGET, rows_q3_K, dot_q3_K_q8_K, LmBlockQ3_K, LmBlockQ8_K, LM_QK_K)

void
lm_kernels_fill_scalar_lowbit (LmKernels *k)
{
  k->native[LM_KT_Q4_0] = rows_q4_0;
  k->native[LM_KT_Q4_1] = rows_q4_1;
  k->native[LM_KT_Q5_0] = rows_q5_0;
  k->native[LM_KT_Q5_1] = rows_q5_1;
  k->native[LM_KT_Q2_K] = rows_q2_K;
  k->native[LM_KT_Q3_K] = rows_q3_K;
}
