/* forward-ops.c: element-wise and per-row primitives of the Qwen3.5 layers.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "forward-ops.h"

void
lm_rms_norm (const float *x, const float *w, float eps, uint32_t n, float *y)
{
  /* ggml's rounding (float squares summed in double, the mean and the
   * scale in float): with 8-bit activations downstream, a last-bit change
   * here can flip a rounding there, so a real model's logits track
   * llama.cpp's closely only when this matches it. */
  double ss = 0.0;
  for (uint32_t i = 0; i < n; i++)
    ss += (double) (x[i] * x[i]);
  float mean = (float) (ss / n);
  float scale = 1.0f / sqrtf (mean + eps);
  for (uint32_t i = 0; i < n; i++)
    y[i] = x[i] * scale * w[i];
}

void
lm_l2_norm (float *x, float eps, uint32_t n)
{
  double ss = 0.0;
  for (uint32_t i = 0; i < n; i++)
    ss += (double) x[i] * x[i];
  double norm = sqrt (ss);
  float scale = (float) (1.0 / (norm > eps ? norm : eps));
  for (uint32_t i = 0; i < n; i++)
    x[i] *= scale;
}

float
lm_silu (float x)
{
  return x / (1.0f + expf (-x));
}

float
lm_sigmoid (float x)
{
  return 1.0f / (1.0f + expf (-x));
}

float
lm_softplus (float x)
{
  return x > 20.0f ? x : log1pf (expf (x));
}

void
lm_add (float *x, const float *y, uint32_t n)
{
  for (uint32_t i = 0; i < n; i++)
    x[i] += y[i];
}

/* Eight floats as one value: GCC/Clang lower it to the widest vectors the
 * build targets (two SSE registers on baseline x86-64). Lane-wise only, so
 * the result is the same as the scalar loop. */
typedef float LmVec8 __attribute__ ((vector_size (32)));

void
lm_scale_axpy (float *restrict y, float b, float a, const float *restrict x, uint32_t n)
{
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8)
    {
      LmVec8 vy, vx;
      memcpy (&vy, y + i, sizeof vy);
      memcpy (&vx, x + i, sizeof vx);
      vy = b * vy + a * vx;
      memcpy (y + i, &vy, sizeof vy);
    }
  for (; i < n; i++)
    y[i] = b * y[i] + a * x[i];
}

/* Which position component pair @i follows; text tokens have (p, p, p, 0), so
 * only pairs assigned to the fourth section stay unrotated. */
static int
rope_pair_is_text (uint32_t i, const int32_t s[4])
{
  int32_t total = s[0] + s[1] + s[2] + s[3];
  if (total <= 0)
    return 1;
  int32_t sector = (int32_t) (i % (uint32_t) total);
  if (sector % 3 == 0 && sector < 3 * s[0])
    return 1;
  if (sector % 3 == 1 && sector < 3 * s[1])
    return 1;
  if (sector % 3 == 2 && sector < 3 * s[2])
    return 1;
  return 0;
}

/* As ggml's CPU rope rounds it (so that the rotated q and k follow
 * llama.cpp's): the angle of pair i is the position times theta_scale^i,
 * advanced by one float multiplication per pair; cos and sin of that
 * float by the C library's cosf and sinf, as ggml calls them (cos and sin
 * in double rounded once, as the GPU does, differ in the last bit at a
 * few angles, e.g. pair 3 at position 8 with base 1e6 and 64 dims). */
void
lm_rope_table (uint32_t pos, uint32_t n_rot, float base, const int32_t sections[4],
               float *cs)
{
  const float theta_scale = (float) pow ((double) base, (double) (-2.0f / (float) n_rot));
  float theta = (float) pos;
  for (uint32_t i = 0; i < n_rot / 2; i++)
    {
      float t = rope_pair_is_text (i, sections) ? theta : 0.0f;
      cs[2 * i] = cosf (t);
      cs[2 * i + 1] = sinf (t);
      theta *= theta_scale;
    }
}

void
lm_rope_apply (float *x, uint32_t n_rot, const float *cs)
{
  uint32_t half = n_rot / 2;
  for (uint32_t i = 0; i < half; i++)
    {
      float a = x[i], b = x[i + half];
      x[i] = fmaf (a, cs[2 * i], -(b * cs[2 * i + 1]));
      x[i + half] = fmaf (a, cs[2 * i + 1], b * cs[2 * i]);
    }
}
