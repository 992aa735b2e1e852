/* test-cuda-util.c: random weights and double-precision references for the
 * tests of the GPU product kernels.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "quant.h"
#include "test-cuda-util.h"

const LmTensorType cuda_test_types[CUDA_TEST_N_TYPES] = {
  LM_TYPE_F32, LM_TYPE_F16, LM_TYPE_BF16, LM_TYPE_Q8_0, LM_TYPE_Q4_K, LM_TYPE_Q5_K, LM_TYPE_Q6_K,
  LM_TYPE_Q4_0, LM_TYPE_Q4_1, LM_TYPE_Q5_0, LM_TYPE_Q5_1, LM_TYPE_Q2_K, LM_TYPE_Q3_K,
};

bool
cuda_test_gpu_q8 (LmTensorType type)
{
  return type == LM_TYPE_Q8_0 || type == LM_TYPE_Q4_K || type == LM_TYPE_Q5_K
         || type == LM_TYPE_Q6_K || type == LM_TYPE_Q4_0 || type == LM_TYPE_Q5_0;
}

uint64_t
cuda_test_random (uint64_t *state)
{
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *state = x;
  return x;
}

float
cuda_test_uniform (uint64_t *state)
{
  return (float) ((double) (cuda_test_random (state) >> 40) / (double) (1u << 23) - 1.0);
}

/* A finite fp16 scale of magnitude 2^-12 .. 2^-4 and random sign. */
static uint16_t
random_scale (uint64_t *state)
{
  float mag = ldexpf (1.0f + 0.5f * cuda_test_uniform (state), -4 - (int) (cuda_test_random (state) % 9));
  return lm_fp32_to_fp16 (cuda_test_random (state) & 1 ? -mag : mag);
}

static void
set_u16 (uint8_t *p, uint16_t v)
{
  memcpy (p, &v, sizeof v);
}

uint8_t *
cuda_test_weights (LmTensorType type, uint32_t n_in, uint32_t n_rows, uint64_t *state,
                   size_t *bytes_out)
{
  size_t row_bytes = lm_row_bytes (type, n_in), bytes = row_bytes * n_rows;
  uint8_t *w = g_malloc (bytes + 16);
  g_assert_true (((uintptr_t) w & 15) == 0);
  for (size_t i = 0; i < bytes; i++)
    w[i] = (uint8_t) (cuda_test_random (state) >> 56);
  size_t bb = lm_type_block_bytes (type);
  for (size_t off = 0; off + bb <= bytes; off += bb)
    switch (type)
      {
      case LM_TYPE_F32:
        {
          float f = cuda_test_uniform (state);
          memcpy (w + off, &f, 4);
          break;
        }
      case LM_TYPE_F16:
        set_u16 (w + off, lm_fp32_to_fp16 (cuda_test_uniform (state)));
        break;
      case LM_TYPE_BF16:
        set_u16 (w + off, lm_fp32_to_bf16 (cuda_test_uniform (state)));
        break;
      case LM_TYPE_Q4_0:
      case LM_TYPE_Q5_0:
      case LM_TYPE_Q8_0:
        set_u16 (w + off, random_scale (state));
        break;
      case LM_TYPE_Q4_1:
      case LM_TYPE_Q5_1:
      case LM_TYPE_Q4_K:
      case LM_TYPE_Q5_K:
        set_u16 (w + off, random_scale (state));
        set_u16 (w + off + 2, random_scale (state));
        break;
      case LM_TYPE_Q2_K:
        set_u16 (w + off + 80, random_scale (state));
        set_u16 (w + off + 82, random_scale (state));
        break;
      case LM_TYPE_Q3_K:
        set_u16 (w + off + 108, random_scale (state));
        break;
      case LM_TYPE_Q6_K:
        set_u16 (w + off + 208, random_scale (state));
        break;
      default:
        g_assert_not_reached ();
      }
  *bytes_out = bytes;
  return w;
}

float *
cuda_test_floats (size_t n, uint64_t *state)
{
  float *x = g_malloc ((n > 0 ? n : 1) * sizeof (float));
  for (size_t i = 0; i < n; i++)
    x[i] = cuda_test_uniform (state);
  return x;
}

void
cuda_test_reference (LmTensorType type, const uint8_t *w, uint32_t n_in, uint32_t n_out,
                     const float *x, double *y_ref, double *mag)
{
  size_t row_bytes = lm_row_bytes (type, n_in);
  float *row = g_malloc (n_in * sizeof (float));
  for (uint32_t o = 0; o < n_out; o++)
    {
      g_assert_cmpint (lm_dequantize_row (type, w + o * row_bytes, row, n_in), ==, LM_OK);
      double sum = 0.0, abs_sum = 0.0;
      for (uint32_t i = 0; i < n_in; i++)
        {
          double p = (double) row[i] * (double) x[i];
          sum += p;
          abs_sum += fabs (p);
        }
      y_ref[o] = sum;
      mag[o] = abs_sum;
    }
  g_free (row);
}

void
cuda_test_assert_close (const char *what, const float *y, const float *base,
                        const double *y_ref, const double *mag, uint32_t n)
{
  for (uint32_t o = 0; o < n; o++)
    {
      double want = (base ? (double) base[o] : 0.0) + y_ref[o];
      double tol = 2e-5 * (mag[o] + (base ? fabs ((double) base[o]) : 0.0));
      if (!(fabs ((double) y[o] - want) <= tol))
        g_error ("%s: output %u is %.9g, the double-precision product %.9g (tolerance %.3g)", what,
                 o, (double) y[o], want, tol);
    }
}
