/* test-cuda-host.c: the GPU kernels' block decoders and reduction schedules,
 * run on the host (no GPU needed): bit-exact decoding against
 * lm_dequantize_row, products against double precision and, with 8-bit
 * activations, against the CPU's native mode.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "lm-cuda-check.h"
#include "quant.h"
#include "test-cuda-util.h"

static void
test_blocks (void)
{
  char why[256] = "";
  gboolean ok = lm_cuda_check_blocks (0x5eed, 300, why, sizeof why);
  if (!ok)
    g_error ("block decoders: %s", why);
}

/* A second, different stream of blocks: the check can fail (a changed seed
 * still passes only if every pattern decodes right). */
static void
test_blocks_other_seed (void)
{
  char why[256] = "";
  if (!lm_cuda_check_blocks (g_test_rand_int () | 1u, 100, why, sizeof why))
    g_error ("block decoders: %s", why);
}

/* n_in of the shapes: multiples of 256, plus a Q8_0 and a scalar-form case. */
static uint32_t
odd_n_in (LmTensorType type)
{
  size_t block = lm_type_block_size (type);
  return block == 1 ? 257 : block == 32 ? 288 : 768;
}

static void
check_matvec (LmTensorType type, uint32_t n_in, uint32_t n_out, uint64_t *state)
{
  size_t bytes;
  uint8_t *w = cuda_test_weights (type, n_in, n_out, state, &bytes);
  float *x = cuda_test_floats (n_in, state);
  float *base = cuda_test_floats (n_out, state);
  float *y = g_malloc (n_out * sizeof (float));
  double *ref = g_malloc (n_out * sizeof (double)), *mag = g_malloc (n_out * sizeof (double));
  char what[96];

  cuda_test_reference (type, w, n_in, n_out, x, ref, mag);
  snprintf (what, sizeof what, "matvec %s %ux%u", lm_type_name (type), n_in, n_out);
  g_assert_cmpint (lm_cuda_matvec_host (LM_CUDA_ACT_F32, type, w, 0, NULL, 1, n_in, n_out, x, 0, y, false), ==, LM_OK);
  cuda_test_assert_close (what, y, NULL, ref, mag, n_out);
  memcpy (y, base, n_out * sizeof (float));
  g_assert_cmpint (lm_cuda_matvec_host (LM_CUDA_ACT_F32, type, w, 0, NULL, 1, n_in, n_out, x, 0, y, true), ==, LM_OK);
  snprintf (what, sizeof what, "matvec %s %ux%u, accumulating", lm_type_name (type), n_in, n_out);
  cuda_test_assert_close (what, y, base, ref, mag, n_out);

  g_free (mag);
  g_free (ref);
  g_free (y);
  g_free (base);
  g_free (x);
  g_free (w);
}

static void
test_matvec (void)
{
  uint64_t state = 0x1234;
  for (int t = 0; t < CUDA_TEST_N_TYPES; t++)
    {
      LmTensorType type = cuda_test_types[t];
      const uint32_t shapes[][2] = { { 256, 1 }, { 512, 7 }, { 2048, 37 }, { 5120, 3 },
                                     { odd_n_in (type), 5 } };
      for (size_t s = 0; s < G_N_ELEMENTS (shapes); s++)
        check_matvec (type, shapes[s][0], shapes[s][1], &state);
    }
}

/* LM_CUDA_ACT_Q8 against the CPU's native mode (same 8-bit activations,
 * exact integer sums: equal within float rounding), and loosely against the
 * f32 product (the activations' rounding); F32/F16/BF16 stay f32, and so do
 * the types without an 8-bit GPU product (against the CPU's f32 mode). */
static void
check_matvec_q8 (LmTensorType type, uint32_t n_in, uint32_t n_out, uint64_t *state)
{
  size_t bytes;
  uint8_t *w = cuda_test_weights (type, n_in, n_out, state, &bytes);
  float *x = cuda_test_floats (n_in, state);
  float *y = g_malloc (n_out * sizeof (float)), *cpu = g_malloc (n_out * sizeof (float));
  float *f32 = g_malloc (n_out * sizeof (float));
  double *ref = g_malloc (n_out * sizeof (double)), *mag = g_malloc (n_out * sizeof (double));
  double *zero = g_malloc0 (n_out * sizeof (double));
  char what[96];

  cuda_test_reference (type, w, n_in, n_out, x, ref, mag);
  g_assert_cmpint (lm_cuda_matvec_host (LM_CUDA_ACT_Q8, type, w, 0, NULL, 1, n_in, n_out, x, 0, y,
                                        false), ==, LM_OK);
  lm_matvec_ex (lm_kernels_for_isa (LM_ISA_SCALAR), cuda_test_gpu_q8 (type) ? LM_ACT_NATIVE
                                                                           : LM_ACT_F32,
                NULL, type, w, n_in, n_out, x, cpu);
  snprintf (what, sizeof what, "matvec q8 %s %ux%u against the CPU's native mode",
            lm_type_name (type), n_in, n_out);
  /* y - cpu against zero: the same tolerance relative to sum |w x| */
  for (uint32_t o = 0; o < n_out; o++)
    f32[o] = y[o] - cpu[o];
  cuda_test_assert_close (what, f32, NULL, zero, mag, n_out);
  for (uint32_t o = 0; o < n_out; o++)
    if (!(fabs ((double) y[o] - ref[o]) <= 0.02 * mag[o]))
      g_error ("matvec q8 %s %ux%u: output %u is %g, the f32 product %g", lm_type_name (type), n_in,
               n_out, o, (double) y[o], ref[o]);
  if (!cuda_test_gpu_q8 (type))
    {
      g_assert_cmpint (lm_cuda_matvec_host (LM_CUDA_ACT_F32, type, w, 0, NULL, 1, n_in, n_out, x, 0,
                                            f32, false), ==, LM_OK);
      g_assert_cmpmem (y, n_out * sizeof (float), f32, n_out * sizeof (float));
    }
  g_free (zero);
  g_free (mag);
  g_free (ref);
  g_free (f32);
  g_free (cpu);
  g_free (y);
  g_free (x);
  g_free (w);
}

static void
test_matvec_q8 (void)
{
  uint64_t state = 0x8888;
  for (int t = 0; t < CUDA_TEST_N_TYPES; t++)
    {
      LmTensorType type = cuda_test_types[t];
      const uint32_t shapes[][2] = { { 256, 1 }, { 512, 7 }, { 2048, 37 }, { 5120, 3 },
                                     { odd_n_in (type), 5 } };
      for (size_t s = 0; s < G_N_ELEMENTS (shapes); s++)
        check_matvec_q8 (type, shapes[s][0], shapes[s][1], &state);
    }
}

/* Activations with ties of magnitude, zeros and a zero group: the 8-bit
 * rounding must pick the CPU's scale. */
static void
test_matvec_q8_ties (void)
{
  uint64_t state = 0x7171;
  const uint32_t n_in = 1024, n_out = 9;
  const LmTensorType types[] = { LM_TYPE_Q8_0, LM_TYPE_Q4_K, LM_TYPE_Q6_K, LM_TYPE_Q5_0 };
  for (size_t t = 0; t < G_N_ELEMENTS (types); t++)
    {
      size_t bytes;
      uint8_t *w = cuda_test_weights (types[t], n_in, n_out, &state, &bytes);
      float x[1024], y[9], cpu[9];
      for (uint32_t i = 0; i < n_in; i++)
        x[i] = (float) ((int) (cuda_test_random (&state) % 7) - 3) * 0.25f;
      memset (x + 256, 0, 256 * sizeof (float));
      g_assert_cmpint (lm_cuda_matvec_host (LM_CUDA_ACT_Q8, types[t], w, 0, NULL, 1, n_in, n_out, x,
                                            0, y, false), ==, LM_OK);
      lm_matvec_ex (lm_kernels_for_isa (LM_ISA_SCALAR), LM_ACT_NATIVE, NULL, types[t], w, n_in,
                    n_out, x, cpu);
      for (uint32_t o = 0; o < n_out; o++)
        g_assert_cmpfloat_with_epsilon (y[o], cpu[o], 1e-4 * (fabsf (cpu[o]) + 1.0f));
      g_free (w);
    }
}

static void
test_experts (void)
{
  uint64_t state = 0x4321;
  const uint32_t n_in = 512, n_out = 9, n_expert = 5, k = 4;
  const int32_t sel[4] = { 4, -1, 0, 4 };
  for (int t = 0; t < CUDA_TEST_N_TYPES; t++)
    {
      LmTensorType type = cuda_test_types[t];
      size_t bytes, mat = lm_row_bytes (type, n_in) * n_out;
      uint8_t *w = cuda_test_weights (type, n_in, n_out * n_expert, &state, &bytes);
      float *x = cuda_test_floats ((size_t) k * n_in, &state);
      float *y = g_malloc ((size_t) k * n_out * sizeof (float));
      double ref[9], mag[9];
      for (int shared_x = 0; shared_x < 2; shared_x++)
        {
          size_t x_stride = shared_x ? 0 : n_in;
          memset (y, 0x7f, (size_t) k * n_out * sizeof (float));
          g_assert_cmpint (lm_cuda_matvec_host (LM_CUDA_ACT_F32, type, w, mat, sel, k, n_in, n_out, x, x_stride, y,
                                                false), ==, LM_OK);
          for (uint32_t j = 0; j < k; j++)
            {
              char what[96];
              snprintf (what, sizeof what, "experts %s slot %u", lm_type_name (type), j);
              if (sel[j] < 0)
                {
                  for (uint32_t o = 0; o < n_out; o++)
                    g_assert_cmpfloat (y[j * n_out + o], ==, 0.0f);
                  continue;
                }
              cuda_test_reference (type, w + (size_t) sel[j] * mat, n_in, n_out, x + j * x_stride,
                                   ref, mag);
              cuda_test_assert_close (what, y + j * n_out, NULL, ref, mag, n_out);
            }
        }
      g_free (y);
      g_free (x);
      g_free (w);
    }
}

static void
check_matmul (LmTensorType type, uint32_t n_in, uint32_t n_out, uint32_t n, gboolean gathered,
              uint64_t *state)
{
  size_t bytes;
  uint8_t *w = cuda_test_weights (type, n_in, n_out, state, &bytes);
  /* gathered: token t reads x row n - 1 - t and writes y row (t * 5) % n + n */
  uint32_t y_rows_total = gathered ? 2 * n : n;
  float *x = cuda_test_floats ((size_t) n * n_in, state);
  float *y = g_malloc ((size_t) y_rows_total * n_out * sizeof (float));
  int32_t *x_rows = g_malloc (n * sizeof (int32_t)), *y_rows = g_malloc (n * sizeof (int32_t));
  double *ref = g_malloc (n_out * sizeof (double)), *mag = g_malloc (n_out * sizeof (double));
  for (uint32_t t = 0; t < n; t++)
    {
      x_rows[t] = (int32_t) (n - 1 - t);
      y_rows[t] = (int32_t) ((t * 5) % n + n);
    }
  if (gathered && n % 5 == 0)
    g_error ("the gathered rows need n coprime to 5");

  g_assert_cmpint (lm_cuda_matmul_host (type, w, n_in, n_out, x, gathered ? x_rows : NULL,
                                        gathered ? y_rows : NULL, n, y), ==, LM_OK);
  for (uint32_t t = 0; t < n; t++)
    {
      char what[96];
      uint32_t xr = gathered ? (uint32_t) x_rows[t] : t, yr = gathered ? (uint32_t) y_rows[t] : t;
      snprintf (what, sizeof what, "matmul %s %ux%u token %u of %u", lm_type_name (type), n_in,
                n_out, t, n);
      cuda_test_reference (type, w, n_in, n_out, x + (size_t) xr * n_in, ref, mag);
      cuda_test_assert_close (what, y + (size_t) yr * n_out, NULL, ref, mag, n_out);
    }
  g_free (mag);
  g_free (ref);
  g_free (y_rows);
  g_free (x_rows);
  g_free (y);
  g_free (x);
  g_free (w);
}

static void
test_matmul (void)
{
  uint64_t state = 0x777;
  for (int t = 0; t < CUDA_TEST_N_TYPES; t++)
    {
      LmTensorType type = cuda_test_types[t];
      check_matmul (type, 512, 37, 1, FALSE, &state);
      check_matmul (type, 2048, 33, 7, FALSE, &state);
      check_matmul (type, odd_n_in (type), 5, 64, FALSE, &state);
      check_matmul (type, 768, 40, 9, TRUE, &state);
    }
}

/* The 8-bit prefill (lm_cuda_matmul_host_ex, LM_CUDA_ACT_Q8): every token
 * bit for bit the decode product of its row (the kernel runs the decode
 * kernel's row blocks), and within float rounding of the CPU's native-mode
 * lm_matmul_ex, which rounds each row to the same 8-bit blocks; F32/F16/BF16
 * bit for bit the f32 prefill, as the CPU keeps f32 activations for them. */
static void
check_matmul_q8 (LmTensorType type, uint32_t n_in, uint32_t n_out, uint32_t n, gboolean gathered,
                 uint64_t *state)
{
  size_t bytes;
  uint8_t *w = cuda_test_weights (type, n_in, n_out, state, &bytes);
  uint32_t y_total = gathered ? 2 * n : n;
  float *x = cuda_test_floats ((size_t) n * n_in, state);
  float *y = g_malloc0 ((size_t) y_total * n_out * sizeof (float));
  float *row = g_malloc (n_out * sizeof (float)), *diff = g_malloc (n_out * sizeof (float));
  float *cpu = g_malloc ((size_t) n * n_out * sizeof (float));
  float *f32 = g_malloc0 ((size_t) y_total * n_out * sizeof (float));
  double *ref = g_malloc (n_out * sizeof (double)), *mag = g_malloc (n_out * sizeof (double));
  double *zero = g_malloc0 (n_out * sizeof (double));
  int32_t *x_rows = g_malloc (n * sizeof (int32_t)), *y_rows = g_malloc (n * sizeof (int32_t));
  /* gathered: token t reads x row n - 1 - t and writes y row n + (5 t mod n) */
  g_assert_true (!gathered || n % 5 != 0);
  for (uint32_t t = 0; t < n; t++)
    {
      x_rows[t] = (int32_t) (n - 1 - t);
      y_rows[t] = (int32_t) ((t * 5) % n + n);
    }
  const int32_t *xr = gathered ? x_rows : NULL, *yr = gathered ? y_rows : NULL;

  g_assert_cmpint (lm_cuda_matmul_host_ex (LM_CUDA_ACT_Q8, type, w, n_in, n_out, x, xr, yr, n, y),
                   ==, LM_OK);
  lm_matmul_ex (lm_kernels_for_isa (LM_ISA_SCALAR), cuda_test_gpu_q8 (type) ? LM_ACT_NATIVE
                                                                           : LM_ACT_F32,
                NULL, type, w, n_in, n_out, x, n, cpu);
  for (uint32_t t = 0; t < n; t++)
    {
      uint32_t xi = gathered ? (uint32_t) x_rows[t] : t, yi = gathered ? (uint32_t) y_rows[t] : t;
      const float *yt = y + (size_t) yi * n_out;
      char what[128];
      snprintf (what, sizeof what, "matmul q8 %s %ux%u token %u of %u%s", lm_type_name (type),
                n_in, n_out, t, n, gathered ? " (gathered)" : "");
      if (cuda_test_gpu_q8 (type))
        {
          g_assert_cmpint (lm_cuda_matvec_host (LM_CUDA_ACT_Q8, type, w, 0, NULL, 1, n_in, n_out,
                                                x + (size_t) xi * n_in, 0, row, false), ==, LM_OK);
          g_assert_cmpmem (yt, n_out * sizeof (float), row, n_out * sizeof (float));
        }
      cuda_test_reference (type, w, n_in, n_out, x + (size_t) xi * n_in, ref, mag);
      for (uint32_t o = 0; o < n_out; o++)
        diff[o] = yt[o] - cpu[(size_t) xi * n_out + o];
      cuda_test_assert_close (what, diff, NULL, zero, mag, n_out);
    }
  if (!cuda_test_gpu_q8 (type))
    {
      g_assert_cmpint (lm_cuda_matmul_host (type, w, n_in, n_out, x, xr, yr, n, f32), ==, LM_OK);
      g_assert_cmpmem (y, (size_t) y_total * n_out * sizeof (float), f32,
                       (size_t) y_total * n_out * sizeof (float));
    }
  g_free (y_rows);
  g_free (x_rows);
  g_free (zero);
  g_free (mag);
  g_free (ref);
  g_free (f32);
  g_free (cpu);
  g_free (diff);
  g_free (row);
  g_free (y);
  g_free (x);
  g_free (w);
}

static void
test_matmul_q8 (void)
{
  uint64_t state = 0x9a9a;
  for (int t = 0; t < CUDA_TEST_N_TYPES; t++)
    {
      LmTensorType type = cuda_test_types[t];
      check_matmul_q8 (type, 512, 37, 1, FALSE, &state);
      check_matmul_q8 (type, 2048, 33, 7, FALSE, &state);
      check_matmul_q8 (type, odd_n_in (type), 5, 20, FALSE, &state);
      check_matmul_q8 (type, 768, 40, 9, TRUE, &state);
    }
}

/* Integer cases, where every float operation is exact: weight scales 1.0
 * (and K-quant mins 1.0), activations whole numbers with |x| = 127 once per
 * group of 32 (so the 8-bit rounding keeps them with scale +-1) and |x| <= 3
 * elsewhere, so that every partial sum stays far below 2^24. Then the
 * kernels' integer dot products and the CPU's native kernels must give the
 * same numbers bit for bit, decode and prefill, gathered rows included. */
static uint32_t
lmc_test_bits (float f)
{
  uint32_t u;
  memcpy (&u, &f, sizeof u);
  return u;
}

static void
set_integer_scales (LmTensorType type, uint8_t *w, size_t bytes)
{
  const uint16_t one = 0x3C00;   /* fp16 1.0 */
  size_t bb = lm_type_block_bytes (type);
  size_t at = type == LM_TYPE_Q6_K ? 208 : 0;
  for (size_t off = 0; off + bb <= bytes; off += bb)
    {
      memcpy (w + off + at, &one, 2);
      if (type == LM_TYPE_Q4_K || type == LM_TYPE_Q5_K)
        memcpy (w + off + 2, &one, 2);
    }
}

static void
test_q8_integer_exact (void)
{
  uint64_t state = 0x1e7e9e5;
  const LmTensorType types[] = { LM_TYPE_Q8_0, LM_TYPE_Q4_K, LM_TYPE_Q5_K, LM_TYPE_Q6_K,
                                 LM_TYPE_Q4_0, LM_TYPE_Q5_0 };
  const uint32_t n_in = 1024, n_out = 11, n = 7;
  for (size_t t = 0; t < G_N_ELEMENTS (types); t++)
    for (int isa = 0; isa < 2; isa++)
      {
        const LmKernels *k = isa ? lm_kernels_best () : lm_kernels_for_isa (LM_ISA_SCALAR);
        size_t bytes;
        uint8_t *w = cuda_test_weights (types[t], n_in, n_out, &state, &bytes);
        set_integer_scales (types[t], w, bytes);
        float *x = g_malloc ((size_t) n * n_in * sizeof (float));
        for (size_t i = 0; i < (size_t) n * n_in; i++)
          x[i] = i % 32 == (i / 32) % 32 ? ((i / 32) % 2 ? 127.0f : -127.0f)
                                          : (float) ((int) (cuda_test_random (&state) % 7) - 3);
        float y[7 * 11], cpu[7 * 11], gpu_rows[2 * 7 * 11];
        int32_t x_rows[7], y_rows[7];
        for (uint32_t i = 0; i < n; i++)
          {
            x_rows[i] = (int32_t) (n - 1 - i);
            y_rows[i] = (int32_t) ((i * 5) % n + n);
          }
        lm_matmul_ex (k, LM_ACT_NATIVE, NULL, types[t], w, n_in, n_out, x, n, cpu);
        for (uint32_t i = 0; i < n; i++)
          {
            char what[96];
            snprintf (what, sizeof what, "%s integer case, token %u, %s kernels",
                      lm_type_name (types[t]), i, isa ? "best" : "scalar");
            g_assert_cmpint (lm_cuda_matvec_host (LM_CUDA_ACT_Q8, types[t], w, 0, NULL, 1, n_in,
                                                  n_out, x + (size_t) i * n_in, 0, y, false),
                             ==, LM_OK);
            for (uint32_t o = 0; o < n_out; o++)
              if (lmc_test_bits (y[o]) != lmc_test_bits (cpu[i * n_out + o]))
                g_error ("%s: decode output %u is %.9g, the CPU's %.9g", what, o, (double) y[o],
                         (double) cpu[i * n_out + o]);
          }
        g_assert_cmpint (lm_cuda_matmul_host_ex (LM_CUDA_ACT_Q8, types[t], w, n_in, n_out, x,
                                                 NULL, NULL, n, y), ==, LM_OK);
        g_assert_cmpmem (y, sizeof y, cpu, sizeof cpu);
        g_assert_cmpint (lm_cuda_matmul_host_ex (LM_CUDA_ACT_Q8, types[t], w, n_in, n_out, x,
                                                 x_rows, y_rows, n, gpu_rows), ==, LM_OK);
        for (uint32_t i = 0; i < n; i++)
          g_assert_cmpmem (gpu_rows + (size_t) y_rows[i] * n_out, n_out * sizeof (float),
                           cpu + (size_t) x_rows[i] * n_out, n_out * sizeof (float));
        g_free (x);
        g_free (w);
      }
}

static void
test_errors (void)
{
  float x[512] = { 0 }, y[4];
  uint8_t w[4096] = { 0 };
  g_assert_cmpint (lm_cuda_matvec_host (LM_CUDA_ACT_F32, (LmTensorType) 20, w, 0, NULL, 1, 32, 1, x, 0, y, false),
                   ==, LM_ERR_UNSUPPORTED);
  g_assert_cmpint (lm_cuda_matvec_host (LM_CUDA_ACT_F32, LM_TYPE_Q4_K, w, 0, NULL, 1, 300, 1, x, 0, y, false),
                   ==, LM_ERR_SHAPE);
  g_assert_cmpint (lm_cuda_matvec_host (LM_CUDA_ACT_F32, LM_TYPE_Q4_K, w + 4, 0, NULL, 1, 256, 1, x, 0, y, false),
                   ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_cuda_matmul_host (LM_TYPE_Q8_0, w, 31, 1, x, NULL, NULL, 1, y),
                   ==, LM_ERR_SHAPE);
  g_assert_cmpint (lm_cuda_matmul_host_ex ((LmCudaActMode) 7, LM_TYPE_Q8_0, w, 32, 1, x, NULL,
                                           NULL, 1, y), ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_cuda_matmul_host_ex (LM_CUDA_ACT_Q8, LM_TYPE_Q4_K, w, 300, 1, x, NULL,
                                           NULL, 1, y), ==, LM_ERR_SHAPE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/cuda/host/blocks", test_blocks);
  g_test_add_func ("/engine/cuda/host/blocks-random-seed", test_blocks_other_seed);
  g_test_add_func ("/engine/cuda/host/matvec", test_matvec);
  g_test_add_func ("/engine/cuda/host/matvec-q8", test_matvec_q8);
  g_test_add_func ("/engine/cuda/host/matvec-q8-ties", test_matvec_q8_ties);
  g_test_add_func ("/engine/cuda/host/experts", test_experts);
  g_test_add_func ("/engine/cuda/host/matmul", test_matmul);
  g_test_add_func ("/engine/cuda/host/matmul-q8", test_matmul_q8);
  g_test_add_func ("/engine/cuda/host/q8-integer-exact", test_q8_integer_exact);
  g_test_add_func ("/engine/cuda/host/errors", test_errors);
  return g_test_run ();
}
