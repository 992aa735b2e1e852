/* kernels-scalar-attn.c: attention and SwiGLU in portable C, the reference
 * of the vector versions (the arithmetic is specified in kernels.h).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "expf-poly.h"
#include "kernels-private.h"

/* x[0] + ... + x[15] in the order of GCC's _mm512_reduce_add_ps: halves,
 * quarters, then (0 + 2) + (1 + 3). */
static float
reduce16 (const float x[16])
{
  float t3[8], t6[4];
  for (int l = 0; l < 8; l++)
    t3[l] = x[8 + l] + x[l];
  for (int l = 0; l < 4; l++)
    t6[l] = t3[4 + l] + t3[l];
  return (t6[0] + t6[2]) + (t6[1] + t6[3]);
}

/* q·k as ggml's AVX-512 dot product: per 64 values four chains of 16
 * lanes, (0 + 2) + (1 + 3), the lanes by reduce16, the last hd % 64
 * values one by one. */
static float
score (const float *q, const float *k, uint32_t hd)
{
  float sum[4][16];
  const uint32_t np = hd & ~63u;
  memset (sum, 0, sizeof sum);
  for (uint32_t i = 0; i < np; i += 64)
    for (int j = 0; j < 4; j++)
      for (int l = 0; l < 16; l++)
        sum[j][l] = fmaf (q[i + 16 * j + l], k[i + 16 * j + l], sum[j][l]);
  for (int l = 0; l < 16; l++)
    sum[0][l] = (sum[0][l] + sum[2][l]) + (sum[1][l] + sum[3][l]);
  float r = reduce16 (sum[0]);
  for (uint32_t i = np; i < hd; i++)
    r = fmaf (q[i], k[i], r);
  return r;
}

/* One query: the weights P of its positions into @p (zero up to a multiple
 * of 16), then out. */
static void
attend_one (const LmAttnQueries *a, uint32_t i, float *p)
{
  const uint32_t n = a->n_pos[i], hd = a->hd, padded = (n + 15) / 16 * 16;
  float max = -INFINITY;
  for (uint32_t t = 0; t < n; t++)
    {
      p[t] = score (a->q[i], a->k + (size_t) t * a->kvd, hd) * a->scale;
      max = p[t] > max ? p[t] : max;
    }
  for (uint32_t t = 0; t < n; t++)
    p[t] = lm_expf_poly (p[t] - max);
  memset (p + n, 0, (padded - n) * sizeof (float));
  double sum = 0.0;
  for (uint32_t t = 0; t < padded; t += 16)
    sum += reduce16 (p + t);
  float inv = (float) (1.0 / sum);
  for (uint32_t t = 0; t < n; t++)
    p[t] *= inv;
  const uint32_t chains = a->one_token ? 4 : 1;
  for (uint32_t d = 0; d < hd; d++)
    {
      float acc[4][16] = { { 0.0f } };
      for (uint32_t t = 0; t < n; t++)
        {
          float *c = acc[t / 16 % chains];
          c[t % 16] = fmaf (p[t], a->v[(size_t) t * a->kvd + d], c[t % 16]);
        }
      if (a->one_token)
        for (int l = 0; l < 16; l++)
          acc[0][l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
      a->out[i][d] = reduce16 (acc[0]);
    }
}

static void
attend (const LmAttnQueries *a, float *scratch)
{
  for (uint32_t i = 0; i < a->n_q; i++)
    attend_one (a, i, scratch);
}

static void
swiglu (float *gate, const float *up, size_t n)
{
  for (size_t i = 0; i < n; i++)
    gate[i] = lm_silu_poly (gate[i]) * up[i];
}

void
lm_kernels_fill_scalar_attn (LmKernels *k)
{
  k->attend = attend;
  k->swiglu = swiglu;
}
