/* test-kernels.c: dot products of every ISA and type against products in double
 * of the (golden-checked) decoded operands; thread-count independence.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "kernels.h"
#include "test-quant-refs.h"
#include "ts-test-util.h"

static const LmTensorType all_types[] = {
  LM_TYPE_F32, LM_TYPE_F16, LM_TYPE_BF16, LM_TYPE_Q8_0, LM_TYPE_Q4_K, LM_TYPE_Q5_K, LM_TYPE_Q6_K,
  LM_TYPE_Q4_0, LM_TYPE_Q4_1, LM_TYPE_Q5_0, LM_TYPE_Q5_1, LM_TYPE_Q2_K, LM_TYPE_Q3_K,
};

static float
random_float (GRand *rng)
{
  return (float) (g_rand_double_range (rng, -1, 1) + g_rand_double_range (rng, -1, 1));
}

static guint16
random_scale_fp16 (GRand *rng)
{
  return lm_fp32_to_fp16 ((float) g_rand_double_range (rng, 1e-3, 2e-2));
}

/* Random rows of @type: arbitrary bit patterns for the quants (every layout bit
 * exercised), sane fp16 scales. */
static guint8 *
random_rows (GRand *rng, LmTensorType type, gint64 n_in, gint64 n_rows)
{
  size_t row_bytes = lm_row_bytes (type, n_in);
  gsize total = row_bytes * (gsize) n_rows;
  guint8 *w = g_malloc (total);

  if (type == LM_TYPE_F32 || type == LM_TYPE_F16 || type == LM_TYPE_BF16)
    {
      g_autofree float *x = g_new (float, n_in);
      for (gint64 r = 0; r < n_rows; r++)
        {
          for (gint64 i = 0; i < n_in; i++)
            x[i] = random_float (rng);
          g_assert_cmpint (lm_quantize_row (type, x, w + r * row_bytes, n_in), ==, LM_OK);
        }
      return w;
    }
  for (gsize i = 0; i < total; i++)
    w[i] = (guint8) g_rand_int (rng);
  size_t block_bytes = lm_type_block_bytes (type);
  for (gsize off = 0; off < total; off += block_bytes)
    {
      guint16 d = random_scale_fp16 (rng), dmin = random_scale_fp16 (rng);
      switch (type)
        {
        case LM_TYPE_Q4_0:
        case LM_TYPE_Q5_0:
        case LM_TYPE_Q8_0: memcpy (w + off, &d, 2); break;
        case LM_TYPE_Q4_1:
        case LM_TYPE_Q5_1:
        case LM_TYPE_Q4_K:
        case LM_TYPE_Q5_K: memcpy (w + off, &d, 2); memcpy (w + off + 2, &dmin, 2); break;
        case LM_TYPE_Q2_K: memcpy (w + off + 80, &d, 2); memcpy (w + off + 82, &dmin, 2); break;
        case LM_TYPE_Q3_K: memcpy (w + off + 108, &d, 2); break;
        case LM_TYPE_Q6_K: memcpy (w + off + 208, &d, 2); break;
        default: g_assert_not_reached ();
        }
    }
  return w;
}

static void
random_vector (GRand *rng, float *x, gint64 n)
{
  for (gint64 i = 0; i < n; i++)
    x[i] = random_float (rng);
  if (n > 40)
    x[37] = 6.0f;   /* an outlier, as real activations have */
}

/* The activation values the kernels multiply with, decoded in double; for
 * Q8_1 also each block's sum s (@sums, n / 32 of them, may be NULL). */
static void
decoded_activation_sums (LmTensorType type, LmActMode mode, const float *x, gint64 n,
                         double *out, double *sums)
{
  const LmKernels *scalar = lm_kernels_for_isa (LM_ISA_SCALAR);
  g_autofree guint8 *act = g_malloc (lm_act_row_bytes (type, mode, n));
  lm_quantize_act (scalar, type, mode, x, act, n);
  switch ((int) lm_act_type (type, mode))
    {
    case LM_TYPE_Q8_0:
      for (gint64 i = 0; i < n; i++)
        {
          const LmBlockQ8_0 *b = (const LmBlockQ8_0 *) act + i / 32;
          out[i] = (double) lm_fp16_to_fp32 (b->d) * b->qs[i % 32];
        }
      break;
    case LM_ACT_TYPE_Q8_1:
      for (gint64 i = 0; i < n; i++)
        {
          const LmBlockQ8_1 *b = (const LmBlockQ8_1 *) act + i / 32;
          out[i] = (double) lm_fp16_to_fp32 (b->d) * b->qs[i % 32];
          if (sums && i % 32 == 0)
            sums[i / 32] = lm_fp16_to_fp32 (b->s);
        }
      break;
    case LM_ACT_TYPE_Q8_K:
      for (gint64 i = 0; i < n; i++)
        {
          const LmBlockQ8_K *b = (const LmBlockQ8_K *) act + i / 256;
          out[i] = (double) b->d * b->qs[i % 256];
        }
      break;
    default:
      for (gint64 i = 0; i < n; i++)
        out[i] = x[i];
    }
}

/* Row @r of @w decoded, with the mins of Q4_1 / Q5_1 blocks zeroed when
 * @no_mins (the native product takes them through the activation sums);
 * the mins then go to @mins (one per 32 values). */
static void
decoded_weights (LmTensorType type, const guint8 *row_blocks, gint64 n_in, gboolean no_mins,
                 float *row, double *mins)
{
  size_t row_bytes = lm_row_bytes (type, n_in), bb = lm_type_block_bytes (type);
  g_autofree guint8 *copy = g_memdup2 (row_blocks, row_bytes);
  if (no_mins)
    for (size_t off = 0; off < row_bytes; off += bb)
      {
        guint16 m;
        memcpy (&m, copy + off + 2, 2);
        mins[off / bb] = lm_fp16_to_fp32 (m);
        memset (copy + off + 2, 0, 2);
      }
  g_assert_cmpint (lm_dequantize_row (type, copy, row, n_in), ==, LM_OK);
}

/* Checks y[r] against sum_i w[r][i] * a[i] in double, within the rounding
 * bound of an f32 summation of n terms (gamma_n * sum |terms|). With Q8_1
 * activations the mins m of the weight blocks enter as m * s, s the block's
 * activation sum (ggml's definition of that product). */
static void
check_against_double (LmTensorType type, LmActMode mode, const guint8 *w, gint64 n_in,
                      gint64 n_rows, const float *x, const float *y, const char *what)
{
  g_autofree double *a = g_new (double, n_in);
  g_autofree double *s = g_new0 (double, n_in / 32 + 1);
  g_autofree double *m = g_new0 (double, n_in / 32 + 1);
  g_autofree float *row = g_new (float, n_in);
  size_t row_bytes = lm_row_bytes (type, n_in);
  gboolean with_sums = lm_act_type (type, mode) == LM_ACT_TYPE_Q8_1;

  decoded_activation_sums (type, mode, x, n_in, a, s);
  for (gint64 r = 0; r < n_rows; r++)
    {
      double sum = 0, magnitude = 0;
      decoded_weights (type, w + r * row_bytes, n_in, with_sums, row, m);
      for (gint64 i = 0; i < n_in; i++)
        {
          sum += row[i] * a[i];
          magnitude += fabs (row[i] * a[i]);
        }
      for (gint64 b = 0; with_sums && b < n_in / 32; b++)
        {
          sum += m[b] * s[b];
          magnitude += fabs (m[b] * s[b]);
        }
      double allowed = 2.0 * (double) n_in * 0x1p-24 * magnitude + 1e-30;
      if (!(fabs (y[r] - sum) <= allowed))
        g_error ("%s %s mode %d row %" G_GINT64_FORMAT ": %.9g vs %.9g (allowed %g)",
                 what, lm_type_name (type), mode, r, y[r], sum, allowed);
    }
}

static void
check_isa_dots (GRand *rng, gint64 n_in)
{
  const gint64 n_rows = 37;
  g_autofree float *x = g_new (float, n_in);
  g_autofree float *y = g_new (float, n_rows);
  g_autofree float *y1 = g_new (float, n_rows);

  random_vector (rng, x, n_in);
  for (int isa = 0; isa < LM_ISA_COUNT; isa++)
    {
      const LmKernels *k = lm_kernels_for_isa ((LmIsa) isa);
      if (!k)
        {
          g_test_message ("%s: not supported by this CPU, skipped", lm_isa_name ((LmIsa) isa));
          continue;
        }
      for (gsize t = 0; t < G_N_ELEMENTS (all_types); t++)
        for (int mode = 0; mode < 2; mode++)
          {
            LmTensorType type = all_types[t];
            if (n_in % (gint64) lm_type_block_size (type) != 0)
              continue;
            g_autofree guint8 *w = random_rows (rng, type, n_in, n_rows);
            g_autofree guint8 *act = g_malloc (lm_act_row_bytes (type, mode, n_in));
            size_t row_bytes = lm_row_bytes (type, n_in);

            lm_quantize_act (k, type, (LmActMode) mode, x, act, n_in);
            lm_dot_rows (k, type, (LmActMode) mode, w, row_bytes, n_rows, act, n_in, y);
            check_against_double (type, (LmActMode) mode, w, n_in, n_rows, x, y,
                                  lm_isa_name ((LmIsa) isa));
            /* a row's result must not depend on how rows are grouped */
            for (gint64 r = 0; r < n_rows; r++)
              lm_dot_rows (k, type, (LmActMode) mode, w + r * row_bytes, row_bytes, 1, act,
                           n_in, y1 + r);
            g_assert_cmpmem (y, n_rows * sizeof (float), y1, n_rows * sizeof (float));
            /* nor on whether one thread computes the product alone (an odd
             * number of rows: the pair kernel's last row) */
            lm_dot_rows_alone (k, type, (LmActMode) mode, w, row_bytes, n_rows, act, n_in, y1);
            g_assert_cmpmem (y, n_rows * sizeof (float), y1, n_rows * sizeof (float));
          }
    }
}

static void
test_isa_dots (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  check_isa_dots (rng, 1024);
  check_isa_dots (rng, 288);   /* an odd number of Q8_0 blocks */
  check_isa_dots (rng, 37);    /* float types: vector tails */
  check_isa_dots (rng, 16416); /* rows longer than a product's segment (513 Q8_0 blocks) */
}

/* Each ISA quantises activations to exactly the scalar reference's blocks. */
static void
test_isa_activation_blocks (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  const gint64 n = 2048;
  g_autofree float *x = g_new (float, n);
  const LmKernels *scalar = lm_kernels_for_isa (LM_ISA_SCALAR);
  const LmTensorType weight_types[] = { LM_TYPE_Q8_0, LM_TYPE_Q4_1, LM_TYPE_Q4_K };

  random_vector (rng, x, n);
  for (int i = 0; i < 64; i++)   /* exact .5 ties after scaling */
    x[256 + i] = (float) (i - 32) + 0.5f;
  x[300] = 31.75f;
  /* a block whose scale is exactly 1 (amax 127): every x.5 is a rounding tie */
  x[512] = -127.0f;
  for (int i = 0; i < 80; i++)
    x[513 + i] = (float) (i - 40) + 0.5f;
  for (int isa = 1; isa < LM_ISA_COUNT; isa++)
    {
      const LmKernels *k = lm_kernels_for_isa ((LmIsa) isa);
      if (!k)
        continue;
      for (gsize t = 0; t < G_N_ELEMENTS (weight_types); t++)
        {
          size_t bytes = lm_act_row_bytes (weight_types[t], LM_ACT_NATIVE, n);
          g_autofree guint8 *a = g_malloc (bytes), *b = g_malloc (bytes);
          lm_quantize_act (scalar, weight_types[t], LM_ACT_NATIVE, x, a, n);
          lm_quantize_act (k, weight_types[t], LM_ACT_NATIVE, x, b, n);
          g_assert_cmpmem (a, bytes, b, bytes);
        }
    }
}

static void
test_thread_counts (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  const gint64 n_in = 512, n_out = 301, n_tok = 5;
  g_autofree float *X = g_new (float, n_in * n_tok);
  g_autofree float *ref = g_new (float, n_out * n_tok);
  g_autofree float *ref_mm = g_new (float, n_out * n_tok);
  g_autofree float *Y = g_new (float, n_out * n_tok);
  const int thread_counts[] = { 2, 3, 5 };

  random_vector (rng, X, n_in * n_tok);
  for (gsize t = 0; t < G_N_ELEMENTS (all_types); t++)
    {
      LmTensorType type = all_types[t];
      g_autofree guint8 *w = random_rows (rng, type, n_in, n_out);
      for (gint64 tok = 0; tok < n_tok; tok++)
        lm_matvec (NULL, type, w, n_in, n_out, X + tok * n_in, ref + tok * n_out);
      check_against_double (type, LM_ACT_NATIVE, w, n_in, n_out, X, ref, "matvec");
      lm_matmul (NULL, type, w, n_in, n_out, X, n_tok, ref_mm);
      for (gint64 tok = 0; tok < n_tok; tok++)
        check_against_double (type, LM_ACT_NATIVE, w, n_in, n_out, X + tok * n_in,
                              ref_mm + tok * n_out, "matmul");
      for (gsize c = 0; c < G_N_ELEMENTS (thread_counts); c++)
        {
          LmThreadPool *pool = lm_thread_pool_new (thread_counts[c]);
          g_assert_nonnull (pool);
          for (gint64 tok = 0; tok < n_tok; tok++)
            lm_matvec (pool, type, w, n_in, n_out, X + tok * n_in, Y + tok * n_out);
          g_assert_cmpmem (Y, n_out * n_tok * sizeof (float), ref, n_out * n_tok * sizeof (float));
          memset (Y, 0, n_out * n_tok * sizeof (float));
          lm_matmul (pool, type, w, n_in, n_out, X, n_tok, Y);
          g_assert_cmpmem (Y, n_out * n_tok * sizeof (float), ref_mm, n_out * n_tok * sizeof (float));
          lm_thread_pool_free (pool);
        }
    }
}

/* Several tokens at once give the same numbers as one at a time, for
 * every split of n_tok into full tiles, narrower tiles and single tokens. */
static void
check_products_n (GRand *rng, LmThreadPool *pool, LmActMode mode, LmTensorType type,
                  gint64 n_in, gint64 n_out, gint64 n_tok)
{
  g_autofree float *X = g_new (float, n_in * n_tok);
  g_autofree float *Y = g_new (float, n_out * n_tok);
  g_autofree float *y = g_new (float, n_out);
  g_autofree guint8 *w = random_rows (rng, type, n_in, n_out);

  random_vector (rng, X, n_in * n_tok);
  for (int isa = 0; isa < LM_ISA_COUNT; isa++)
    {
      const LmKernels *k = lm_kernels_for_isa ((LmIsa) isa);
      if (!k)
        continue;
      lm_matmul_ex (k, mode, pool, type, w, n_in, n_out, X, n_tok, Y);
      /* a batch kernel's tokens have a float order of their own */
      gint64 n_batch = mode == LM_ACT_NATIVE ? lm_matmul_batch_tokens (k, type, n_tok) : 0;
      for (gint64 t = 0; t < n_batch; t++)
        check_against_double (type, mode, w, n_in, n_out, X + t * n_in, Y + t * n_out, "batch");
      for (gint64 t = n_batch; t < n_tok; t++)
        {
          lm_matvec_ex (k, mode, NULL, type, w, n_in, n_out, X + t * n_in, y);
          g_assert_cmpmem (y, n_out * sizeof (float), Y + t * n_out, n_out * sizeof (float));
        }
      check_against_double (type, mode, w, n_in, n_out, X + (n_tok - 1) * n_in,
                            Y + (n_tok - 1) * n_out, lm_isa_name ((LmIsa) isa));
    }
}

static void
check_matmul_is_matvec_n (GRand *rng, LmTensorType type, gint64 n_in, gint64 n_out,
                          gint64 n_tok)
{
  check_products_n (rng, NULL, LM_ACT_NATIVE, type, n_in, n_out, n_tok);
}

static void
check_matmul_is_matvec (GRand *rng, LmTensorType type, gint64 n_in, gint64 n_out)
{
  check_matmul_is_matvec_n (rng, type, n_in, n_out, 6);
}

/* n_in above the internal segment length: the partial sums are added. */
static void
test_long_rows (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  const gint64 n_in = 16384 + 2048, n_out = 3;
  g_autofree float *x = g_new (float, n_in);
  float y[3];

  random_vector (rng, x, n_in);
  for (int mode = 0; mode < 2; mode++)
    {
      g_autofree guint8 *w = random_rows (rng, LM_TYPE_Q4_K, n_in, n_out);
      lm_matvec_ex (lm_kernels_best (), (LmActMode) mode, NULL, LM_TYPE_Q4_K, w, n_in, n_out, x, y);
      check_against_double (LM_TYPE_Q4_K, (LmActMode) mode, w, n_in, n_out, x, y, "long");
    }

  check_matmul_is_matvec (rng, LM_TYPE_Q6_K, n_in, n_out);
  /* the 32-value formats are summed in chunks of 2048 values: several
   * chunks, a short last one, and several segments */
  check_matmul_is_matvec (rng, LM_TYPE_Q5_0, 4864, 7);
  check_matmul_is_matvec (rng, LM_TYPE_Q4_1, 4864, 7);
  check_matmul_is_matvec (rng, LM_TYPE_Q5_0, n_in, n_out);
}

/* an odd number of Q8_0 blocks in the token tiles */
static void
test_odd_blocks (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  check_matmul_is_matvec (rng, LM_TYPE_Q8_0, 288, 19);
}

/* every type with token tiles, for every ISA */
static void
test_token_tiles (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  /* tiles are 4 or 8 tokens wide: 2, 3, 5 to 7 are one narrow tile or a
   * full one and a rest of 1 to 3; 9 to 11 a full one and a rest of 1 to 3
   * or two full ones and a rest */
  const gint64 token_counts[] = { 1, 2, 3, 5, 6, 7, 9, 10, 11 };

  for (gsize t = 0; t < G_N_ELEMENTS (all_types); t++)
    for (gsize c = 0; c < G_N_ELEMENTS (token_counts); c++)
      check_matmul_is_matvec_n (rng, all_types[t], 512, 21, token_counts[c]);
}

/* f32 activations (the exact mode): a prompt's tokens, whether taken in
 * tiles of several or one by one, on one thread or two, get the numbers a
 * single token gets, bit for bit; and those are the schoolbook product's
 * within the rounding bound. */
static void
test_f32_token_tiles (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  LmThreadPool *pool = lm_thread_pool_new (2);
  /* tiles are 8 tokens wide, narrower ones split in 4s: every rest */
  const gint64 token_counts[] = { 2, 3, 5, 7, 8, 9, 12, 17 };

  for (gsize t = 0; t < G_N_ELEMENTS (all_types); t++)
    for (gsize c = 0; c < G_N_ELEMENTS (token_counts); c++)
      check_products_n (rng, c % 2 ? pool : NULL, LM_ACT_F32, all_types[t], 512, 21,
                        token_counts[c]);
  /* several segments of a long row: the tiles' partial sums are added */
  check_products_n (rng, pool, LM_ACT_F32, LM_TYPE_Q5_0, 16384 + 2048, 5, 9);
  check_products_n (rng, pool, LM_ACT_F32, LM_TYPE_Q6_K, 16384 + 2048, 5, 9);
  lm_thread_pool_free (pool);
}

/* The AVX-512 kernels of the 32-value formats (Q8_0 included: 8 tokens to a
 * tile there, 4 on AVX2) compute the same integers and float operations as
 * the AVX2 ones: equal bit for bit, rows and tiles. */
static void
test_q32_isas_agree (void)
{
  const LmKernels *avx2 = lm_kernels_for_isa (LM_ISA_AVX2);
  const LmKernels *avx512 = lm_kernels_for_isa (LM_ISA_AVX512);
  if (!avx2 || !avx512)
    {
      g_test_skip ("needs AVX2 and AVX-512");
      return;
    }
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  const LmTensorType types[] = { LM_TYPE_Q4_0, LM_TYPE_Q5_0, LM_TYPE_Q4_1, LM_TYPE_Q5_1,
                                 LM_TYPE_Q8_0 };
  const gint64 n_in = 4864, n_out = 21, n_tok = 11;
  g_autofree float *X = g_new (float, n_in * n_tok);
  g_autofree float *a = g_new (float, n_out * n_tok);
  g_autofree float *b = g_new (float, n_out * n_tok);

  random_vector (rng, X, n_in * n_tok);
  for (gsize t = 0; t < G_N_ELEMENTS (types); t++)
    {
      g_autofree guint8 *w = random_rows (rng, types[t], n_in, n_out);
      lm_matmul_ex (avx2, LM_ACT_NATIVE, NULL, types[t], w, n_in, n_out, X, n_tok, a);
      lm_matmul_ex (avx512, LM_ACT_NATIVE, NULL, types[t], w, n_in, n_out, X, n_tok, b);
      g_assert_cmpmem (a, n_out * n_tok * sizeof (float), b, n_out * n_tok * sizeof (float));
      lm_matvec_ex (avx512, LM_ACT_NATIVE, NULL, types[t], w, n_in, n_out, X, b);
      g_assert_cmpmem (a, n_out * sizeof (float), b, n_out * sizeof (float));
    }
}

/* The batch kernels of Q4_K and Q6_K (llama.cpp's batch float order) give
 * the same numbers on AVX2 and AVX-512, bit for bit, for every tile split
 * and with the tokens past the last whole group of Q4_K on the row kernel. */
static void
test_batch_isas_agree (void)
{
  const LmKernels *avx2 = lm_kernels_for_isa (LM_ISA_AVX2);
  const LmKernels *avx512 = lm_kernels_for_isa (LM_ISA_AVX512);
  if (!avx2 || !avx512)
    {
      g_test_skip ("needs AVX2 and AVX-512");
      return;
    }
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  const LmTensorType types[] = { LM_TYPE_Q4_K, LM_TYPE_Q6_K };
  const gint64 n_in = 4864, n_out = 21, token_counts[] = { 4, 8, 11, 13 };
  g_autofree float *X = g_new (float, n_in * 13);
  g_autofree float *a = g_new (float, n_out * 13);
  g_autofree float *b = g_new (float, n_out * 13);

  random_vector (rng, X, n_in * 13);
  for (gsize t = 0; t < G_N_ELEMENTS (types); t++)
    {
      g_autofree guint8 *w = random_rows (rng, types[t], n_in, n_out);
      for (gsize c = 0; c < G_N_ELEMENTS (token_counts); c++)
        {
          gint64 n_tok = token_counts[c];
          g_assert_true (n_tok < 8 || lm_matmul_batch_tokens (avx512, types[t], n_tok) > 0);
          lm_matmul_ex (avx2, LM_ACT_NATIVE, NULL, types[t], w, n_in, n_out, X, n_tok, a);
          lm_matmul_ex (avx512, LM_ACT_NATIVE, NULL, types[t], w, n_in, n_out, X, n_tok, b);
          g_assert_cmpmem (a, n_out * n_tok * sizeof (float), b, n_out * n_tok * sizeof (float));
        }
    }
}

/* ---- gguf-py's blocks (tests/data/quant) ---- */

/* Every ISA's activation blocks are the numpy rendition's of ggml's x86
 * backend, and its products the float64 ones of tools/make-quant-refs.py
 * (gguf-py's decoded weights times the activation, f32 or decoded 8-bit)
 * within the rounding bound of an f32 summation; each ISA also agrees with
 * the scalar reference within twice that. */
static void
test_refs (gconstpointer data)
{
  TestQuantRef ref;
  test_quant_ref_load (data, &ref);
  g_autofree float *scalar_y = g_new (float, ref.n_rows);
  g_autofree float *y = g_new (float, ref.n_rows);
  double bound_per_mag = 2.0 * ref.n_cols * 0x1p-24;

  for (int mode = 0; mode < 2; mode++)
    for (int isa = 0; isa < LM_ISA_COUNT; isa++)
      {
        const LmKernels *k = lm_kernels_for_isa ((LmIsa) isa);
        if (!k)
          continue;
        gsize bytes = lm_act_row_bytes (ref.type, (LmActMode) mode, ref.n_cols);
        g_autofree guint8 *act = g_malloc (bytes);
        lm_quantize_act (k, ref.type, (LmActMode) mode, ref.x, act, ref.n_cols);
        if (mode == LM_ACT_NATIVE)
          {
            g_assert_cmpuint ((guint32) lm_act_type (ref.type, LM_ACT_NATIVE), ==, ref.act_type);
            g_assert_cmpmem (act, bytes, ref.act, ref.act_bytes);
          }
        lm_dot_rows (k, ref.type, (LmActMode) mode, ref.w, ref.row_bytes, ref.n_rows, act,
                     ref.n_cols, y);
        const double *want = mode == LM_ACT_NATIVE ? ref.dot_native : ref.dot_f32;
        const double *mag = mode == LM_ACT_NATIVE ? ref.mag_native : ref.mag_f32;
        for (guint32 r = 0; r < ref.n_rows; r++)
          {
            double allowed = bound_per_mag * mag[r] + 1e-30;
            if (!(fabs (y[r] - want[r]) <= allowed))
              g_error ("%s %s %s row %u: %.9g, reference %.9g (allowed %g)",
                       lm_type_name (ref.type), lm_isa_name ((LmIsa) isa),
                       mode == LM_ACT_NATIVE ? "native" : "f32", r, (double) y[r], want[r],
                       allowed);
            if (isa == LM_ISA_SCALAR)
              scalar_y[r] = y[r];
            else if (!(fabs (y[r] - scalar_y[r]) <= 2 * allowed))
              g_error ("%s %s row %u: %.9g, scalar %.9g", lm_type_name (ref.type),
                       lm_isa_name ((LmIsa) isa), r, (double) y[r], (double) scalar_y[r]);
          }
      }
  test_quant_ref_clear (&ref);
}

/* ---- thread pool ---- */

typedef struct {
  gint *hits;
} CountJob;

static void
count_index (void *ctx, int index, int n)
{
  CountJob *job = ctx;
  g_atomic_int_inc (&job->hits[index]);
}

static void
test_pool (void)
{
  g_assert_cmpint (lm_thread_pool_size (NULL), ==, 1);
  g_assert_null (lm_thread_pool_new (-1));
  LmThreadPool *all = lm_thread_pool_new (0);
  g_assert_cmpint (lm_thread_pool_size (all), >=, 1);
  lm_thread_pool_free (all);
  lm_thread_pool_free (NULL);

  const int sizes[] = { 1, 2, 4 };
  for (gsize s = 0; s < G_N_ELEMENTS (sizes); s++)
    {
      LmThreadPool *pool = lm_thread_pool_new (sizes[s]);
      g_assert_cmpint (lm_thread_pool_size (pool), ==, sizes[s]);
      /* many short jobs back to back: workers arrive late, find jobs already
       * claimed, or race the publication of the next one */
      for (int round = 0; round < 5000; round++)
        {
          int n = round % 37;
          gint hits[37] = { 0 };
          CountJob job = { hits };
          lm_thread_pool_run (pool, count_index, &job, n);
          for (int i = 0; i < 37; i++)
            g_assert_cmpint (hits[i], ==, i < n ? 1 : 0);
        }
      lm_thread_pool_free (pool);
    }
}

/* start/finish: the workers take a started job while the caller does
 * something else (here: waits for them to finish it alone), finish joins;
 * a pool of one thread runs it in finish. Mixed with run(), every index
 * runs once. */
static void
test_pool_start_finish (void)
{
  const int sizes[] = { 1, 2, 4 };
  for (gsize s = 0; s < G_N_ELEMENTS (sizes); s++)
    {
      LmThreadPool *pool = lm_thread_pool_new (sizes[s]);
      for (int round = 0; round < 3000; round++)
        {
          int n = round % 23;
          gint hits[23] = { 0 };
          CountJob job = { hits };
          if (round % 3 == 0)
            lm_thread_pool_run (pool, count_index, &job, n);
          else
            {
              lm_thread_pool_start (pool, count_index, &job, n);
              if (round % 3 == 2 && n > 0)
                {
                  /* the workers alone: every index done before finish */
                  gint64 give_up = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
                  gboolean all = FALSE;
                  while (sizes[s] > 1 && !all && g_get_monotonic_time () < give_up)
                    {
                      all = TRUE;
                      for (int i = 0; i < n; i++)
                        all = all && g_atomic_int_get (&hits[i]) == 1;
                    }
                  g_assert_true (sizes[s] > 1 ? all : g_atomic_int_get (&hits[0]) == 0);
                }
              lm_thread_pool_finish (pool);
            }
          for (int i = 0; i < 23; i++)
            g_assert_cmpint (hits[i], ==, i < n ? 1 : 0);
        }
      lm_thread_pool_free (pool);
    }
}

/* Index 0 sleeps when a worker runs it (as a worker preempted in the
 * middle of its rows would stall); the others return at once. */
typedef struct {
  pthread_t caller;
  gint stalled;
} StallJob;

static void
stall_on_worker (void *ctx, int index, int n)
{
  StallJob *job = ctx;
  if (index == 0 && !pthread_equal (pthread_self (), job->caller))
    {
      g_usleep (3000);
      g_atomic_int_inc (&job->stalled);
    }
}

/* A caller that waits long for a worker's last index twice in a row makes
 * the pool poll briefly. (That short jobs do not is not asserted: on a loaded machine a
 * worker may really be preempted during one.) */
static void
test_pool_straggler (void)
{
  LmThreadPool *pool = lm_thread_pool_new (2);
  StallJob job = { pthread_self (), 0 };

  g_assert_false (lm_thread_pool_polls_briefly (NULL));
  /* the caller claims index 0 itself in some runs: until a worker took it,
   * twice */
  for (int tries = 0; tries < 400 && g_atomic_int_get (&job.stalled) < 2; tries++)
    {
      lm_thread_pool_start (pool, stall_on_worker, &job, 2);
      g_usleep (200);          /* the worker claims first */
      lm_thread_pool_finish (pool);
    }
  g_assert_cmpint (g_atomic_int_get (&job.stalled), ==, 2);
  g_assert_true (lm_thread_pool_polls_briefly (pool));
  lm_thread_pool_free (pool);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/kernels/isa-dots", test_isa_dots);
  g_test_add_func ("/engine/kernels/isa-activation-blocks", test_isa_activation_blocks);
  g_test_add_func ("/engine/kernels/thread-counts", test_thread_counts);
  g_test_add_func ("/engine/kernels/long-rows", test_long_rows);
  g_test_add_func ("/engine/kernels/odd-blocks", test_odd_blocks);
  g_test_add_func ("/engine/kernels/token-tiles", test_token_tiles);
  g_test_add_func ("/engine/kernels/f32-token-tiles", test_f32_token_tiles);
  g_test_add_func ("/engine/kernels/pool", test_pool);
  g_test_add_func ("/engine/kernels/pool-start-finish", test_pool_start_finish);
  g_test_add_func ("/engine/kernels/pool-straggler", test_pool_straggler);
  g_test_add_func ("/engine/kernels/q32-isas-agree", test_q32_isas_agree);
  g_test_add_func ("/engine/kernels/batch-isas-agree", test_batch_isas_agree);
  for (gsize i = 0; i < TEST_QUANT_N_REFS; i++)
    {
      g_autofree char *path = g_strdup_printf ("/engine/kernels/gguf-py/%s",
                                               test_quant_ref_names[i]);
      g_test_add_data_func (path, test_quant_ref_names[i], test_refs);
    }
  return g_test_run ();
}
