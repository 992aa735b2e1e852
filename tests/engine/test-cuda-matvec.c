/* test-cuda-matvec.c: the GPU product, dequantise and embedding kernels
 * against the CPU (skipped without a GPU).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Every product is checked twice: within float rounding of the double-precision
 * product of lm_dequantize_row's values, and bit for bit against the host
 * emulation of the kernel's schedule (lm-cuda-check.h), which the host tests
 * hold to the same tolerance without a GPU. */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "lm-cuda-buffer.h"
#include "lm-cuda-check.h"
#include "lm-cuda-matvec.h"
#include "lm-cuda-ops.h"
#include "lm-gpu.h"
#include "quant.h"
#include "test-cuda-util.h"

static gboolean
skip_without_gpu (void)
{
  char why[200] = "";
  if (lm_gpu_available (why, sizeof why))
    return FALSE;
  g_test_skip (why);
  return TRUE;
}

static void *
upload (const void *host, size_t bytes)
{
  void *d = lm_cuda_buffer_new (bytes, host);
  g_assert_nonnull (d);
  return d;
}

static void
download (const void *device, void *host, size_t bytes)
{
  char why[200] = "";
  if (!lm_cuda_buffer_sync (why, sizeof why))
    g_error ("device error: %s", why);
  g_assert_true (lm_cuda_buffer_read (device, host, bytes));
}

/* The device's floats equal the emulation's bit for bit. */
static void
assert_same_bits (const char *what, const float *got, const float *want, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (memcmp (&got[i], &want[i], sizeof (float)) != 0)
      g_error ("%s: element %zu is %.9g on the GPU, %.9g in the host emulation", what, i,
               (double) got[i], (double) want[i]);
}

static uint32_t
odd_n_in (LmTensorType type)
{
  size_t block = lm_type_block_size (type);
  return block == 1 ? 1001 : block == 32 ? 2080 : 1280;
}

static void
check_matvec (LmTensorType type, uint32_t n_in, uint32_t n_out, uint64_t *state)
{
  size_t bytes;
  uint8_t *w = cuda_test_weights (type, n_in, n_out, state, &bytes);
  float *x = cuda_test_floats (n_in, state), *base = cuda_test_floats (n_out, state);
  float *y = g_malloc (n_out * sizeof (float)), *emu = g_malloc (n_out * sizeof (float));
  float *cpu = g_malloc (n_out * sizeof (float));
  double *ref = g_malloc (n_out * sizeof (double)), *mag = g_malloc (n_out * sizeof (double));
  double *zero = g_malloc0 (n_out * sizeof (double));
  void *dw = upload (w, bytes);
  float *dx = upload (x, n_in * sizeof (float)), *dy = upload (base, n_out * sizeof (float));
  char what[128];

  cuda_test_reference (type, w, n_in, n_out, x, ref, mag);
  lm_matvec_ex (lm_kernels_best (), LM_ACT_NATIVE, NULL, type, w, n_in, n_out, x, cpu);
  for (int mode = LM_CUDA_ACT_F32; mode <= LM_CUDA_ACT_Q8; mode++)
    for (int accumulate = 0; accumulate < 2; accumulate++)
      {
        snprintf (what, sizeof what, "matvec %s %s %ux%u%s", mode ? "q8" : "f32",
                  lm_type_name (type), n_in, n_out, accumulate ? ", accumulating" : "");
        g_assert_true (lm_cuda_buffer_write (dy, base, n_out * sizeof (float)));
        g_assert_cmpint (lm_cuda_matvec_ex (NULL, (LmCudaActMode) mode, type, dw, n_in, n_out, dx,
                                            dy, accumulate), ==, LM_OK);
        download (dy, y, n_out * sizeof (float));
        memcpy (emu, base, n_out * sizeof (float));
        g_assert_cmpint (lm_cuda_matvec_host ((LmCudaActMode) mode, type, w, 0, NULL, 1, n_in,
                                              n_out, x, 0, emu, accumulate), ==, LM_OK);
        assert_same_bits (what, y, emu, n_out);
        if (mode == LM_CUDA_ACT_F32 || !cuda_test_gpu_q8 (type))
          cuda_test_assert_close (what, y, accumulate ? base : NULL, ref, mag, n_out);
        else if (!accumulate)
          {
            /* the CPU's native mode rounds x the same way: equal within float rounding */
            for (uint32_t o = 0; o < n_out; o++)
              emu[o] = y[o] - cpu[o];
            cuda_test_assert_close (what, emu, NULL, zero, mag, n_out);
          }
      }
  lm_cuda_buffer_free (dy);
  lm_cuda_buffer_free (dx);
  lm_cuda_buffer_free (dw);
  g_free (zero);
  g_free (mag);
  g_free (ref);
  g_free (cpu);
  g_free (emu);
  g_free (y);
  g_free (base);
  g_free (x);
  g_free (w);
}

static void
test_matvec (void)
{
  if (skip_without_gpu ())
    return;
  uint64_t state = 0xabcdef;
  for (int t = 0; t < CUDA_TEST_N_TYPES; t++)
    {
      LmTensorType type = cuda_test_types[t];
      const uint32_t shapes[][2] = { { 256, 1 }, { 512, 7 }, { 2048, 513 }, { 2048, 4096 },
                                     { 5120, 2047 }, { 4096, 33 }, { odd_n_in (type), 77 } };
      for (size_t s = 0; s < G_N_ELEMENTS (shapes); s++)
        check_matvec (type, shapes[s][0], shapes[s][1], &state);
    }
}

static void
test_experts (void)
{
  if (skip_without_gpu ())
    return;
  uint64_t state = 0x5151;
  const uint32_t n_expert = 12, k = 8;
  const int32_t sel[8] = { 11, 3, -1, 0, 7, 3, 5, 10 };
  /* the gate/up and down shapes: short and tall matrices launch differently */
  const uint32_t shapes[2][2] = { { 2048, 515 }, { 512, 2048 } };
  for (int t = 0; t < 2 * CUDA_TEST_N_TYPES; t++)
    {
      LmTensorType type = cuda_test_types[t / 2];
      const uint32_t n_in = shapes[t % 2][0], n_out = shapes[t % 2][1];
      size_t bytes, mat = lm_row_bytes (type, n_in) * n_out;
      uint8_t *w = cuda_test_weights (type, n_in, n_out * n_expert, &state, &bytes);
      float *x = cuda_test_floats ((size_t) k * n_in, &state);
      float *y = g_malloc ((size_t) k * n_out * sizeof (float));
      float *emu = g_malloc ((size_t) k * n_out * sizeof (float));
      double *ref = g_malloc (n_out * sizeof (double)), *mag = g_malloc (n_out * sizeof (double));
      void *dw = upload (w, bytes);
      float *dx = upload (x, (size_t) k * n_in * sizeof (float));
      float *dy = upload (NULL, (size_t) k * n_out * sizeof (float));
      int32_t *dsel = upload (sel, sizeof sel);
      for (int mode = LM_CUDA_ACT_F32; mode <= LM_CUDA_ACT_Q8; mode++)
        for (int shared_x = 0; shared_x < 2; shared_x++)
          {
            size_t x_stride = shared_x ? 0 : n_in;
            g_assert_cmpint (lm_cuda_matvec_experts_ex (NULL, (LmCudaActMode) mode, type, dw, mat,
                                                        n_in, n_out, dsel, k, dx, x_stride, dy),
                             ==, LM_OK);
            download (dy, y, (size_t) k * n_out * sizeof (float));
            g_assert_cmpint (lm_cuda_matvec_host ((LmCudaActMode) mode, type, w, mat, sel, k, n_in,
                                                  n_out, x, x_stride, emu, false), ==, LM_OK);
            char what[96];
            snprintf (what, sizeof what, "experts %s %s%s", mode ? "q8" : "f32",
                      lm_type_name (type), shared_x ? ", one x" : "");
            assert_same_bits (what, y, emu, (size_t) k * n_out);
            for (uint32_t j = 0; j < k; j++)
              {
                if (sel[j] < 0)
                  {
                    for (uint32_t o = 0; o < n_out; o++)
                      g_assert_cmpfloat (y[j * n_out + o], ==, 0.0f);
                    continue;
                  }
                cuda_test_reference (type, w + (size_t) sel[j] * mat, n_in, n_out,
                                     x + j * x_stride, ref, mag);
                if (mode == LM_CUDA_ACT_F32)
                  cuda_test_assert_close (what, y + j * n_out, NULL, ref, mag, n_out);
                else
                  for (uint32_t o = 0; o < n_out; o++)   /* the activations' 8-bit rounding */
                    g_assert_cmpfloat (fabs (y[j * n_out + o] - ref[o]), <=, 0.02 * mag[o]);
              }
          }
      lm_cuda_buffer_free (dsel);
      lm_cuda_buffer_free (dy);
      lm_cuda_buffer_free (dx);
      lm_cuda_buffer_free (dw);
      g_free (mag);
      g_free (ref);
      g_free (emu);
      g_free (y);
      g_free (x);
      g_free (w);
    }
}

/* matmul (expert < 0) or matmul_rows of matrix @expert of 3 (token t reads
 * x row n - 1 - t, writes y row n + (5 t mod n)). */
static void
check_matmul_mode (LmCudaActMode mode, LmTensorType type, uint32_t n_in, uint32_t n_out,
                   uint32_t n, int expert, uint64_t *state)
{
  gboolean gathered = expert >= 0;
  uint32_t n_mats = gathered ? 3 : 1, y_total = gathered ? 2 * n : n;
  size_t bytes, mat = lm_row_bytes (type, n_in) * n_out;
  uint8_t *w = cuda_test_weights (type, n_in, n_out * n_mats, state, &bytes);
  const uint8_t *wm = w + (gathered ? (size_t) expert * mat : 0);
  float *x = cuda_test_floats ((size_t) n * n_in, state);
  float *y = g_malloc ((size_t) y_total * n_out * sizeof (float));
  float *emu = g_malloc ((size_t) y_total * n_out * sizeof (float));
  int32_t *x_rows = g_malloc (n * sizeof (int32_t)), *y_rows = g_malloc (n * sizeof (int32_t));
  double *ref = g_malloc (n_out * sizeof (double)), *mag = g_malloc (n_out * sizeof (double));
  g_assert_true (!gathered || n % 5 != 0);
  for (uint32_t t = 0; t < n; t++)
    {
      x_rows[t] = (int32_t) (n - 1 - t);
      y_rows[t] = (int32_t) ((t * 5) % n + n);
    }
  void *dw = upload (w, bytes);
  float *dx = upload (x, (size_t) n * n_in * sizeof (float));
  float *dy = upload (NULL, (size_t) y_total * n_out * sizeof (float));
  int32_t *dxr = upload (x_rows, n * sizeof (int32_t)), *dyr = upload (y_rows, n * sizeof (int32_t));
  char what[128];
  snprintf (what, sizeof what, "%s %s %s %ux%u, %u tokens", gathered ? "matmul_rows" : "matmul",
            mode == LM_CUDA_ACT_Q8 ? "q8" : "f32", lm_type_name (type), n_in, n_out, n);
  gboolean int8 = mode == LM_CUDA_ACT_Q8 && cuda_test_gpu_q8 (type);
  float *cpu = g_malloc ((size_t) n * n_out * sizeof (float));
  double *zero = g_malloc0 (n_out * sizeof (double));
  if (int8)
    lm_matmul_ex (lm_kernels_best (), LM_ACT_NATIVE, NULL, type, wm, n_in, n_out, x, n, cpu);

  memset (emu, 0, (size_t) y_total * n_out * sizeof (float));
  g_assert_true (lm_cuda_buffer_write (dy, emu, (size_t) y_total * n_out * sizeof (float)));
  if (gathered)
    g_assert_cmpint (lm_cuda_matmul_rows_ex (NULL, mode, type, dw, mat, (uint32_t) expert, n_in,
                                             n_out, dx, dxr, dyr, n, dy), ==, LM_OK);
  else
    g_assert_cmpint (lm_cuda_matmul_ex (NULL, mode, type, dw, n_in, n_out, dx, n, dy), ==, LM_OK);
  download (dy, y, (size_t) y_total * n_out * sizeof (float));
  g_assert_cmpint (lm_cuda_matmul_host_ex (mode, type, wm, n_in, n_out, x,
                                           gathered ? x_rows : NULL, gathered ? y_rows : NULL, n,
                                           emu), ==, LM_OK);
  for (uint32_t t = 0; t < n; t++)
    {
      uint32_t xr = gathered ? (uint32_t) x_rows[t] : t, yr = gathered ? (uint32_t) y_rows[t] : t;
      float *yt = y + (size_t) yr * n_out;
      assert_same_bits (what, yt, emu + (size_t) yr * n_out, n_out);
      cuda_test_reference (type, wm, n_in, n_out, x + (size_t) xr * n_in, ref, mag);
      if (!int8)
        cuda_test_assert_close (what, yt, NULL, ref, mag, n_out);
      else
        {
          /* the CPU's native mode rounds each row the same way */
          for (uint32_t o = 0; o < n_out; o++)
            emu[(size_t) yr * n_out + o] = yt[o] - cpu[(size_t) xr * n_out + o];
          cuda_test_assert_close (what, emu + (size_t) yr * n_out, NULL, zero, mag, n_out);
        }
    }
  g_free (zero);
  g_free (cpu);
  lm_cuda_buffer_free (dyr);
  lm_cuda_buffer_free (dxr);
  lm_cuda_buffer_free (dy);
  lm_cuda_buffer_free (dx);
  lm_cuda_buffer_free (dw);
  g_free (mag);
  g_free (ref);
  g_free (y_rows);
  g_free (x_rows);
  g_free (emu);
  g_free (y);
  g_free (x);
  g_free (w);
}

static void
check_matmul (LmTensorType type, uint32_t n_in, uint32_t n_out, uint32_t n, int expert,
              uint64_t *state)
{
  check_matmul_mode (LM_CUDA_ACT_F32, type, n_in, n_out, n, expert, state);
  check_matmul_mode (LM_CUDA_ACT_Q8, type, n_in, n_out, n, expert, state);
}

static void
test_matmul (void)
{
  if (skip_without_gpu ())
    return;
  uint64_t state = 0x99;
  const uint32_t tokens[] = { 1, 7, 64 };
  for (int t = 0; t < CUDA_TEST_N_TYPES; t++)
    {
      LmTensorType type = cuda_test_types[t];
      for (size_t i = 0; i < G_N_ELEMENTS (tokens); i++)
        {
          check_matmul (type, 2048, 515, tokens[i], -1, &state);
          check_matmul (type, odd_n_in (type), 33, tokens[i], -1, &state);
        }
      check_matmul (type, 5120, 1024, 64, -1, &state);
      check_matmul (type, 256, 1, 7, -1, &state);
    }
}

static void
test_matmul_rows (void)
{
  if (skip_without_gpu ())
    return;
  uint64_t state = 0x77;
  for (int t = 0; t < CUDA_TEST_N_TYPES; t++)
    {
      LmTensorType type = cuda_test_types[t];
      check_matmul (type, 2048, 512, 1, 2, &state);
      check_matmul (type, 2048, 512, 37, 1, &state);
      check_matmul (type, 512, 2048, 73, 2, &state);
    }
}

/* Bit-exact, except that a NaN may come back as another NaN (a product with a
 * NaN scale gives the device's canonical NaN). */
static void
assert_dequantized (const char *what, const float *got, const float *want, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (memcmp (&got[i], &want[i], sizeof (float)) != 0 && !(isnan (got[i]) && isnan (want[i])))
      g_error ("%s: value %zu is %a on the GPU, lm_dequantize_row gives %a", what, i,
               (double) got[i], (double) want[i]);
}

/* Every bit pattern, NaN and Inf scales included. */
static uint8_t *
random_bytes (size_t bytes, uint64_t *state)
{
  uint8_t *b = g_malloc (bytes + 1);
  for (size_t i = 0; i < bytes; i++)
    b[i] = (uint8_t) (cuda_test_random (state) >> 56);
  return b;
}

static void
test_dequantize (void)
{
  if (skip_without_gpu ())
    return;
  uint64_t state = 0xdeadbeef;
  for (int t = 0; t < CUDA_TEST_N_TYPES; t++)
    {
      LmTensorType type = cuda_test_types[t];
      const uint32_t lengths[] = { 256, 5120, 65536, odd_n_in (type) };
      for (size_t i = 0; i < G_N_ELEMENTS (lengths); i++)
        {
          uint32_t n = lengths[i];
          size_t bytes = lm_row_bytes (type, n);
          uint8_t *src = random_bytes (bytes, &state);
          float *want = g_malloc (n * sizeof (float)), *got = g_malloc (n * sizeof (float));
          void *dsrc = upload (src, bytes);
          float *ddst = upload (NULL, n * sizeof (float));
          char what[64];
          snprintf (what, sizeof what, "dequantize %s x%u", lm_type_name (type), n);
          g_assert_cmpint (lm_dequantize_row (type, src, want, n), ==, LM_OK);
          g_assert_cmpint (lm_cuda_dequantize_row (NULL, type, dsrc, ddst, n), ==, LM_OK);
          download (ddst, got, n * sizeof (float));
          assert_dequantized (what, got, want, n);
          lm_cuda_buffer_free (ddst);
          lm_cuda_buffer_free (dsrc);
          g_free (got);
          g_free (want);
          g_free (src);
        }
    }
}

static void
test_embed (void)
{
  if (skip_without_gpu ())
    return;
  uint64_t state = 0xe1;
  const uint32_t n_vocab = 300;
  const int32_t good[] = { 0, 299, 17, 17, 150 }, bad[] = { 3, -1, 300, 42 };
  for (int t = 0; t < CUDA_TEST_N_TYPES; t++)
    {
      LmTensorType type = cuda_test_types[t];
      const uint32_t widths[] = { 2048, odd_n_in (type) };
      for (size_t wi = 0; wi < G_N_ELEMENTS (widths); wi++)
        for (int with_bad = 0; with_bad < 2; with_bad++)
          {
            uint32_t width = widths[wi];
            const int32_t *tokens = with_bad ? bad : good;
            uint32_t n = with_bad ? G_N_ELEMENTS (bad) : G_N_ELEMENTS (good);
            size_t row_bytes = lm_row_bytes (type, width);
            uint8_t *table = random_bytes (row_bytes * n_vocab, &state);
            float *got = g_malloc ((size_t) n * width * sizeof (float));
            float *want = g_malloc (width * sizeof (float));
            int32_t flag = 0;
            void *dtable = upload (table, row_bytes * n_vocab);
            int32_t *dtok = upload (tokens, n * sizeof (int32_t)), *dbad = upload (&flag, sizeof flag);
            float *dx = upload (NULL, (size_t) n * width * sizeof (float));
            g_assert_cmpint (lm_cuda_embed (NULL, type, dtable, n_vocab, width, dtok, n, dx, dbad),
                             ==, LM_OK);
            download (dx, got, (size_t) n * width * sizeof (float));
            download (dbad, &flag, sizeof flag);
            g_assert_cmpint (flag, ==, with_bad);
            for (uint32_t i = 0; i < n; i++)
              {
                char what[64];
                snprintf (what, sizeof what, "embed %s width %u token %d", lm_type_name (type),
                          width, tokens[i]);
                if (tokens[i] < 0 || (uint32_t) tokens[i] >= n_vocab)
                  memset (want, 0, width * sizeof (float));
                else
                  g_assert_cmpint (lm_dequantize_row (type, table + (size_t) tokens[i] * row_bytes,
                                                      want, width), ==, LM_OK);
                assert_dequantized (what, got + (size_t) i * width, want, width);
              }
            lm_cuda_buffer_free (dx);
            lm_cuda_buffer_free (dbad);
            lm_cuda_buffer_free (dtok);
            lm_cuda_buffer_free (dtable);
            g_free (want);
            g_free (got);
            g_free (table);
          }
    }
}

/* Argument errors are answered before any launch, with or without a GPU. */
static void
test_errors (void)
{
  float x[8];
  g_assert_false (lm_cuda_matvec_supports ((LmTensorType) 20));   /* IQ4_NL */
  g_assert_true (lm_cuda_matvec_supports (LM_TYPE_Q6_K));
  g_assert_cmpint (lm_cuda_matvec (NULL, (LmTensorType) 20, x, 32, 1, x, x, false), ==,
                   LM_ERR_UNSUPPORTED);
  g_assert_cmpint (lm_cuda_matvec_ex (NULL, (LmCudaActMode) 7, LM_TYPE_F32, x, 8, 1, x, x, false),
                   ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_cuda_matvec (NULL, LM_TYPE_Q4_K, x, 100, 1, x, x, false), ==, LM_ERR_SHAPE);
  g_assert_cmpint (lm_cuda_matmul_ex (NULL, (LmCudaActMode) 7, LM_TYPE_Q8_0, x, 32, 1, x, 1, x),
                   ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_cuda_matmul_ex (NULL, LM_CUDA_ACT_Q8, LM_TYPE_Q4_K, x, 100, 1, x, 1, x), ==,
                   LM_ERR_SHAPE);
  g_assert_cmpint (lm_cuda_matmul (NULL, LM_TYPE_Q8_0, x, 33, 1, x, 1, x), ==, LM_ERR_SHAPE);
  g_assert_cmpint (lm_cuda_dequantize_row (NULL, LM_TYPE_Q6_K, x, x, 255), ==, LM_ERR_SHAPE);
  g_assert_cmpint (lm_cuda_embed (NULL, LM_TYPE_F16, x, 4, 8, NULL, 1, x, NULL), ==,
                   LM_ERR_INVALID_ARGUMENT);
}

/* One LmCudaProduct against its unfused launches, bit for bit: the pair
 * (gate and up) against two products, the SwiGLU input against
 * lm_cuda_swiglu and a product; for the k experts of @dsel or a dense
 * matrix (dsel NULL, k 1). */
static void
check_fused_mode (LmTensorType type, LmCudaActMode mode, uint32_t n_in, uint32_t n_out,
                  const int32_t *dsel, uint32_t k, const uint8_t *w, const uint8_t *w2,
                  size_t bytes, uint64_t *state)
{
  size_t mat = lm_row_bytes (type, n_in) * n_out, ny = (size_t) k * n_out;
  float *x = cuda_test_floats ((size_t) k * n_in, state);
  float *up = cuda_test_floats ((size_t) k * n_in, state);
  float *got = g_malloc (2 * ny * sizeof (float)), *want = g_malloc (2 * ny * sizeof (float));
  void *dw = upload (w, bytes), *dw2 = upload (w2, bytes);
  float *dx = upload (x, (size_t) k * n_in * sizeof (float));
  float *dup = upload (up, (size_t) k * n_in * sizeof (float));
  float *dy = upload (NULL, 2 * ny * sizeof (float)), *dz = upload (NULL, 2 * ny * sizeof (float));
  char what[96];

  LmCudaProduct pair = { type, dw, dw2, mat, dsel, k, n_in, n_out, dx, NULL, n_in, dy, dy + ny };
  g_assert_cmpint (lm_cuda_matvec_product (NULL, mode, &pair), ==, LM_OK);
  download (dy, got, 2 * ny * sizeof (float));
  LmCudaProduct one = pair;
  one.w_pair = NULL;
  one.y = dz;
  g_assert_cmpint (lm_cuda_matvec_product (NULL, mode, &one), ==, LM_OK);
  one.w = dw2;
  one.y = dz + ny;
  g_assert_cmpint (lm_cuda_matvec_product (NULL, mode, &one), ==, LM_OK);
  download (dz, want, 2 * ny * sizeof (float));
  snprintf (what, sizeof what, "pair %s %s k=%u", mode ? "q8" : "f32", lm_type_name (type), k);
  assert_same_bits (what, got, want, 2 * ny);

  LmCudaProduct gated = { type, dw, NULL, mat, dsel, k, n_in, n_out, dx, dup, n_in, dy, NULL };
  g_assert_cmpint (lm_cuda_matvec_product (NULL, mode, &gated), ==, LM_OK);
  download (dy, got, ny * sizeof (float));
  g_assert_cmpint (lm_cuda_swiglu (NULL, dx, dup, (size_t) k * n_in), ==, LM_OK);
  LmCudaProduct plain = gated;
  plain.x_up = NULL;
  plain.y = dz;
  g_assert_cmpint (lm_cuda_matvec_product (NULL, mode, &plain), ==, LM_OK);
  download (dz, want, ny * sizeof (float));
  snprintf (what, sizeof what, "SwiGLU input %s %s k=%u", mode ? "q8" : "f32",
            lm_type_name (type), k);
  assert_same_bits (what, got, want, ny);

  lm_cuda_buffer_free (dz);
  lm_cuda_buffer_free (dy);
  lm_cuda_buffer_free (dup);
  lm_cuda_buffer_free (dx);
  lm_cuda_buffer_free (dw2);
  lm_cuda_buffer_free (dw);
  g_free (want);
  g_free (got);
  g_free (up);
  g_free (x);
}

/* Both activation modes on one pair of random weight sets (12 experts when
 * @dsel is set). */
static void
check_fused (LmTensorType type, uint32_t n_in, uint32_t n_out, const int32_t *dsel, uint32_t k,
             uint64_t *state)
{
  size_t bytes;
  uint32_t n_mats = dsel != NULL ? 12 : 1;
  uint8_t *w = cuda_test_weights (type, n_in, n_out * n_mats, state, &bytes);
  uint8_t *w2 = cuda_test_weights (type, n_in, n_out * n_mats, state, &bytes);
  for (int mode = LM_CUDA_ACT_F32; mode <= LM_CUDA_ACT_Q8; mode++)
    check_fused_mode (type, (LmCudaActMode) mode, n_in, n_out, dsel, k, w, w2, bytes, state);
  g_free (w2);
  g_free (w);
}

static void
test_fused (void)
{
  if (skip_without_gpu ())
    return;
  uint64_t state = 0xf00d;
  const int32_t sel[8] = { 11, 3, -1, 0, 7, 3, 5, 10 };
  int32_t *dsel = upload (sel, sizeof sel);
  /* a short and a tall shape (they launch differently), and a dense pair */
  for (int t = 0; t < CUDA_TEST_N_TYPES; t++)
    {
      LmTensorType type = cuda_test_types[t];
      check_fused (type, 1024, 130, dsel, 8, &state);
      check_fused (type, 256, 2048, dsel, 8, &state);
      check_fused (type, 1024, 96, NULL, 1, &state);
    }
  lm_cuda_buffer_free (dsel);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/cuda/errors", test_errors);
  g_test_add_func ("/engine/cuda/matvec", test_matvec);
  g_test_add_func ("/engine/cuda/experts", test_experts);
  g_test_add_func ("/engine/cuda/fused", test_fused);
  g_test_add_func ("/engine/cuda/matmul", test_matmul);
  g_test_add_func ("/engine/cuda/matmul-rows", test_matmul_rows);
  g_test_add_func ("/engine/cuda/dequantize", test_dequantize);
  g_test_add_func ("/engine/cuda/embed", test_embed);
  return g_test_run ();
}
