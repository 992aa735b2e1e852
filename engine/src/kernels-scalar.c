/* kernels-scalar.c: portable reference kernels (the definition the SIMD paths are tested against).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "kernels-private.h"
#include "quant-private.h"

/* ---- f32 activations: decode a block, multiply in f32 ---- */

static float
dot_f32 (const float *a, const float *b, int64_t n)
{
  float sum = 0.0f;
  for (int64_t i = 0; i < n; i++)
    sum += a[i] * b[i];
  return sum;
}

/* Decodes each row block by block through @to_float and dots it with x. */
static void
rows_decoded (void (*to_float) (const void *, float *, int64_t), size_t block_size,
              size_t block_bytes, const void *W, size_t row_bytes, int64_t n_rows,
              const float *x, int64_t n, float *y)
{
  float tmp[LM_QK_K];
  const int64_t chunk = (int64_t) (LM_QK_K / block_size * block_size);

  for (int64_t r = 0; r < n_rows; r++)
    {
      const uint8_t *row = (const uint8_t *) W + r * row_bytes;
      float sum = 0.0f;
      for (int64_t i = 0; i < n; i += chunk)
        {
          int64_t len = n - i < chunk ? n - i : chunk;
          to_float (row + (size_t) (i / (int64_t) block_size) * block_bytes, tmp, len);
          sum += dot_f32 (tmp, x + i, len);
        }
      y[r] = sum;
    }
}

#define DEFINE_F32ACT(name, to_float, block_size, block_bytes)                   \
  static void name (const void *W, size_t row_bytes, int64_t n_rows,             \
                    const void *act, int64_t n, float *y)                        \
  {                                                                              \
    rows_decoded (to_float, block_size, block_bytes, W, row_bytes, n_rows, act,  \
                  n, y);                                                         \
  }

static void
rows_f32 (const void *W, size_t row_bytes, int64_t n_rows, const void *act, int64_t n, float *y)
{
  for (int64_t r = 0; r < n_rows; r++)
    y[r] = dot_f32 ((const float *) ((const uint8_t *) W + r * row_bytes), act, n);
}

DEFINE_F32ACT (rows_f16_f32, lm_dequantize_row_f16, 1, 2)
DEFINE_F32ACT (rows_bf16_f32, lm_dequantize_row_bf16, 1, 2)
DEFINE_F32ACT (rows_q8_0_f32, lm_dequantize_row_q8_0, LM_QK8_0, sizeof (LmBlockQ8_0))
DEFINE_F32ACT (rows_q4_K_f32, lm_dequantize_row_q4_K, LM_QK_K, sizeof (LmBlockQ4_K))
DEFINE_F32ACT (rows_q5_K_f32, lm_dequantize_row_q5_K, LM_QK_K, sizeof (LmBlockQ5_K))
DEFINE_F32ACT (rows_q6_K_f32, lm_dequantize_row_q6_K, LM_QK_K, sizeof (LmBlockQ6_K))
DEFINE_F32ACT (rows_q4_0_f32, lm_dequantize_row_q4_0, LM_QK32, sizeof (LmBlockQ4_0))
DEFINE_F32ACT (rows_q4_1_f32, lm_dequantize_row_q4_1, LM_QK32, sizeof (LmBlockQ4_1))
DEFINE_F32ACT (rows_q5_0_f32, lm_dequantize_row_q5_0, LM_QK32, sizeof (LmBlockQ5_0))
DEFINE_F32ACT (rows_q5_1_f32, lm_dequantize_row_q5_1, LM_QK32, sizeof (LmBlockQ5_1))
DEFINE_F32ACT (rows_q2_K_f32, lm_dequantize_row_q2_K, LM_QK_K, sizeof (LmBlockQ2_K))
DEFINE_F32ACT (rows_q3_K_f32, lm_dequantize_row_q3_K, LM_QK_K, sizeof (LmBlockQ3_K))

/* ---- 8-bit activations: exact integer sums per block, f32 across blocks ---- */

static float
dot_q8_0_q8_0 (const LmBlockQ8_0 *w, const LmBlockQ8_0 *a, int64_t n_blocks)
{
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; b++)
    {
      int sumi = 0;
      for (int i = 0; i < LM_QK8_0; i++)
        sumi += w[b].qs[i] * a[b].qs[i];
      sum += (float) sumi * (lm_fp16_to_fp32 (w[b].d) * lm_fp16_to_fp32 (a[b].d));
    }
  return sum;
}

/* Sum over sub-blocks of m_j times the activation sum of that sub-block. */
static int
k4_min_term (const uint8_t *scales, const LmBlockQ8_K *a)
{
  int summ = 0;
  for (int j = 0; j < 8; j++)
    {
      uint8_t sc, m;
      lm_k4_scale_min (scales, j, &sc, &m);
      summ += m * (a->bsums[2 * j] + a->bsums[2 * j + 1]);
    }
  return summ;
}

/* q[256] are the unsigned 4- or 5-bit values in natural order. */
static int
k4_scaled_sum (const uint8_t *scales, const uint8_t *q, const LmBlockQ8_K *a)
{
  int sumi = 0;
  for (int j = 0; j < 8; j++)
    {
      uint8_t sc, m;
      int s = 0;
      lm_k4_scale_min (scales, j, &sc, &m);
      for (int l = 0; l < 32; l++)
        s += q[32 * j + l] * a->qs[32 * j + l];
      sumi += sc * s;
    }
  return sumi;
}

static void
unpack_q4 (const uint8_t *qs, uint8_t q[LM_QK_K])
{
  for (int g = 0; g < 4; g++)
    for (int l = 0; l < 32; l++)
      {
        q[64 * g + l] = qs[32 * g + l] & 0xF;
        q[64 * g + 32 + l] = qs[32 * g + l] >> 4;
      }
}

/* One Q4_K (@qh NULL) or Q5_K super-block against its Q8_K block. */
static float
k4_block (const uint8_t *scales, const uint8_t *qs, const uint8_t *qh, uint16_t d,
          uint16_t dmin, const LmBlockQ8_K *a)
{
  uint8_t q[LM_QK_K];
  unpack_q4 (qs, q);
  if (qh)
    for (int s = 0; s < 8; s++)
      for (int l = 0; l < 32; l++)
        q[32 * s + l] |= (uint8_t) (((qh[l] >> s) & 1) << 4);
  return a->d * lm_fp16_to_fp32 (d) * (float) k4_scaled_sum (scales, q, a)
         - a->d * lm_fp16_to_fp32 (dmin) * (float) k4_min_term (scales, a);
}

static float
dot_q4_K_q8_K (const LmBlockQ4_K *w, const LmBlockQ8_K *a, int64_t n_blocks)
{
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; b++)
    sum += k4_block (w[b].scales, w[b].qs, NULL, w[b].d, w[b].dmin, &a[b]);
  return sum;
}

static float
dot_q5_K_q8_K (const LmBlockQ5_K *w, const LmBlockQ8_K *a, int64_t n_blocks)
{
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; b++)
    sum += k4_block (w[b].scales, w[b].qs, w[b].qh, w[b].d, w[b].dmin, &a[b]);
  return sum;
}

static float
dot_q6_K_q8_K (const LmBlockQ6_K *w, const LmBlockQ8_K *a, int64_t n_blocks)
{
  float sum = 0.0f;
  for (int64_t b = 0; b < n_blocks; b++)
    {
      int8_t q[LM_QK_K];
      for (int half = 0; half < 2; half++)
        {
          const uint8_t *ql = w[b].ql + 64 * half, *qh = w[b].qh + 32 * half;
          int8_t *v = q + 128 * half;
          for (int l = 0; l < 32; l++)
            {
              v[l] = (int8_t) (((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32);
              v[l + 32] = (int8_t) (((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
              v[l + 64] = (int8_t) (((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
              v[l + 96] = (int8_t) (((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
            }
        }
      int sumi = 0;
      for (int s = 0; s < 16; s++)
        {
          int part = 0;
          for (int l = 0; l < 16; l++)
            part += q[16 * s + l] * a[b].qs[16 * s + l];
          sumi += w[b].scales[s] * part;
        }
      sum += a[b].d * lm_fp16_to_fp32 (w[b].d) * (float) sumi;
    }
  return sum;
}

#define NO_TARGET
LM_DEFINE_ROWS (NO_TARGET, rows_q8_0_native, dot_q8_0_q8_0, LmBlockQ8_0, LmBlockQ8_0, LM_QK8_0)
LM_DEFINE_ROWS (NO_TARGET, rows_q4_K_native, dot_q4_K_q8_K, LmBlockQ4_K, LmBlockQ8_K, LM_QK_K)
LM_DEFINE_ROWS (NO_TARGET, rows_q5_K_native, dot_q5_K_q8_K, LmBlockQ5_K, LmBlockQ8_K, LM_QK_K)
LM_DEFINE_ROWS (NO_TARGET, rows_q6_K_native, dot_q6_K_q8_K, LmBlockQ6_K, LmBlockQ8_K, LM_QK_K)

static void
quantize_q8_0 (const float *x, void *act, int64_t n)
{
  lm_quantize_row_q8_0_act (x, act, n);
}

static void
quantize_q8_1 (const float *x, void *act, int64_t n)
{
  lm_quantize_row_q8_1_act (x, act, n);
}

static void
quantize_q8_K (const float *x, void *act, int64_t n)
{
  lm_quantize_row_q8_K (x, act, n);
}

void
lm_kernels_fill_scalar (LmKernels *k)
{
  k->isa = LM_ISA_SCALAR;
  k->f32act[LM_KT_F32] = rows_f32;
  k->f32act[LM_KT_F16] = rows_f16_f32;
  k->f32act[LM_KT_BF16] = rows_bf16_f32;
  k->f32act[LM_KT_Q8_0] = rows_q8_0_f32;
  k->f32act[LM_KT_Q4_K] = rows_q4_K_f32;
  k->f32act[LM_KT_Q5_K] = rows_q5_K_f32;
  k->f32act[LM_KT_Q6_K] = rows_q6_K_f32;
  k->f32act[LM_KT_Q4_0] = rows_q4_0_f32;
  k->f32act[LM_KT_Q4_1] = rows_q4_1_f32;
  k->f32act[LM_KT_Q5_0] = rows_q5_0_f32;
  k->f32act[LM_KT_Q5_1] = rows_q5_1_f32;
  k->f32act[LM_KT_Q2_K] = rows_q2_K_f32;
  k->f32act[LM_KT_Q3_K] = rows_q3_K_f32;
  k->native[LM_KT_Q8_0] = rows_q8_0_native;
  k->native[LM_KT_Q4_K] = rows_q4_K_native;
  k->native[LM_KT_Q5_K] = rows_q5_K_native;
  k->native[LM_KT_Q6_K] = rows_q6_K_native;
  k->quantize_q8_0 = quantize_q8_0;
  k->quantize_q8_1 = quantize_q8_1;
  k->quantize_q8_K = quantize_q8_K;
  lm_kernels_fill_scalar_lowbit (k);
  lm_kernels_fill_scalar_attn (k);
}
