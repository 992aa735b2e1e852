/* test-q4k-batch.c: the Q4_K batch kernels of every ISA against a schoolbook
 * rendition of their float steps, and against a double-precision product of
 * the decoded operands.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The batch kernels (the tokens of a prefill in groups of 4) round as
 * llama.cpp's repacked Q4_K batch kernel does: per (row, token) and
 * super-block, four steps of two 32-value sub-blocks, each
 *   acc     = fmaf (sum of sc_j * q_i * a_i over the pair, d_w * d_a, acc)
 *   acc_min = fmaf (sum of m_j * a_i over the pair, dmin_w * d_a, acc_min)
 * and acc - acc_min at the end. The reference below forms those integer sums
 * value by value from the block layout (scales decoded per sub-block, the
 * activation sums counted from the quants, not taken from the blocks' bsums)
 * and must match the kernels bit for bit: every row, every token of the
 * batch, row counts and lengths that leave partial row groups and partial
 * interleaved chunks, and batches of 4, 8 and more tokens. */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "ts-test-util.h"

/* Sub-block j's 6-bit scale and min of a Q4_K block (the K-quant scale
 * packing: j < 4 in the low 6 bits of bytes j and j + 4; j >= 4 split
 * between the nibbles of byte j + 4 and the top 2 bits of bytes j - 4, j). */
static void
scale_min (const guint8 s[12], int j, int *sc, int *m)
{
  if (j < 4)
    {
      *sc = s[j] & 63;
      *m = s[j + 4] & 63;
    }
  else
    {
      *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
      *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* Value i (0..255) of a Q4_K block's 4-bit quants: groups of 64, the low
 * nibbles of 32 bytes then their high nibbles. */
static int
quant (const LmBlockQ4_K *w, int i)
{
  guint8 byte = w->qs[32 * (i / 64) + i % 32];
  return (i % 64) < 32 ? byte & 0x0F : byte >> 4;
}

/* One (row, token) product in the batch kernels' float steps. */
static float
schoolbook (const LmBlockQ4_K *w, const LmBlockQ8_K *a, gint64 nb)
{
  float acc = 0.0f, acc_min = 0.0f;
  for (gint64 b = 0; b < nb; b++)
    {
      float d = lm_fp16_to_fp32 (w[b].d) * a[b].d;
      float dmin = lm_fp16_to_fp32 (w[b].dmin) * a[b].d;
      for (int pair = 0; pair < 4; pair++)
        {
          gint64 sum = 0, mins = 0;
          for (int j = 2 * pair; j < 2 * pair + 2; j++)
            {
              int sc, m;
              gint64 dot = 0, act_sum = 0;
              scale_min (w[b].scales, j, &sc, &m);
              for (int i = 32 * j; i < 32 * j + 32; i++)
                {
                  dot += (gint64) quant (&w[b], i) * a[b].qs[i];
                  act_sum += a[b].qs[i];
                }
              sum += sc * dot;
              mins += m * act_sum;
            }
          acc = fmaf ((float) sum, d, acc);
          acc_min = fmaf ((float) mins, dmin, acc_min);
        }
    }
  return acc - acc_min;
}

/* The same product from the decoded weights and activations, in double. */
static double
decoded_product (const LmBlockQ4_K *w, const LmBlockQ8_K *a, gint64 nb, double *magnitude)
{
  double total = 0.0;
  *magnitude = 0.0;
  for (gint64 b = 0; b < nb; b++)
    for (int i = 0; i < LM_QK_K; i++)
      {
        int sc, m;
        scale_min (w[b].scales, i / 32, &sc, &m);
        double x = (double) lm_fp16_to_fp32 (w[b].d) * sc * quant (&w[b], i)
                   - (double) lm_fp16_to_fp32 (w[b].dmin) * m;
        double term = x * (double) a[b].d * a[b].qs[i];
        total += term;
        *magnitude += fabs (term);
      }
  return total;
}

static guint8 *
random_q4_K_rows (GRand *rng, gint64 n_in, gint64 n_rows)
{
  gsize total = lm_row_bytes (LM_TYPE_Q4_K, n_in) * (gsize) n_rows;
  guint8 *w = g_malloc (total);
  for (gsize i = 0; i < total; i++)
    w[i] = (guint8) g_rand_int (rng);
  for (gsize off = 0; off < total; off += sizeof (LmBlockQ4_K))
    {
      LmBlockQ4_K *block = (LmBlockQ4_K *) (w + off);
      block->d = lm_fp32_to_fp16 ((float) g_rand_double_range (rng, 1e-3, 2e-2));
      block->dmin = lm_fp32_to_fp16 ((float) g_rand_double_range (rng, 1e-3, 2e-2));
    }
  return w;
}

static void
random_activations (GRand *rng, float *x, gint64 n)
{
  for (gint64 i = 0; i < n; i++)
    x[i] = (float) g_rand_double_range (rng, -2, 2);
  for (gint64 i = 37; i < n; i += 997)
    x[i] = 9.0f;   /* outlier channels, as Qwen2.5's activations have */
}

/* The batch tokens of one product on @kernels against the schoolbook and
 * decoded references. */
static void
check_product (const LmKernels *kernels, GRand *rng, gint64 n_in, gint64 n_out, gint64 n_tok)
{
  const gint64 nb = n_in / LM_QK_K;
  size_t row_bytes = lm_row_bytes (LM_TYPE_Q4_K, n_in);
  size_t act_bytes = lm_act_row_bytes (LM_TYPE_Q4_K, LM_ACT_NATIVE, n_in);
  g_autofree guint8 *w = random_q4_K_rows (rng, n_in, n_out);
  g_autofree float *X = g_new (float, n_in * n_tok);
  g_autofree float *Y = g_new (float, n_out * n_tok);
  g_autofree guint8 *act = g_malloc (act_bytes);

  random_activations (rng, X, n_in * n_tok);
  gint64 n_batch = lm_matmul_batch_tokens (kernels, LM_TYPE_Q4_K, n_tok);
  g_assert_cmpint (n_batch, ==, n_tok - n_tok % 4);
  lm_matmul_ex (kernels, LM_ACT_NATIVE, NULL, LM_TYPE_Q4_K, w, n_in, n_out, X, n_tok, Y);
  for (gint64 t = 0; t < n_batch; t++)
    {
      lm_quantize_act (kernels, LM_TYPE_Q4_K, LM_ACT_NATIVE, X + t * n_in, act, n_in);
      for (gint64 r = 0; r < n_out; r++)
        {
          const LmBlockQ4_K *row = (const LmBlockQ4_K *) (w + (gsize) r * row_bytes);
          float want = schoolbook (row, (const LmBlockQ8_K *) act, nb);
          float got = Y[t * n_out + r];
          if (memcmp (&want, &got, sizeof want) != 0)
            g_error ("%s, %" G_GINT64_FORMAT " x %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                     " tokens: row %" G_GINT64_FORMAT " token %" G_GINT64_FORMAT
                     ": %.9g, schoolbook %.9g", lm_isa_name (lm_kernels_isa (kernels)), n_out,
                     n_in, n_tok, r, t, got, want);
          double magnitude;
          double exact = decoded_product (row, (const LmBlockQ8_K *) act, nb, &magnitude);
          g_assert_cmpfloat (fabs (got - exact), <=, 4.0 * n_in * 0x1p-24 * magnitude + 1e-30);
        }
    }
}

static void
test_batch_schoolbook (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  /* rows: a partial group of 16 and more; super-blocks: partial chunks of 8 */
  const gint64 shapes[][2] = { { 256, 5 }, { 2048, 16 }, { 4864, 37 }, { 768, 19 } };
  const gint64 token_counts[] = { 4, 8, 13, 20 };

  for (int isa = LM_ISA_SCALAR; isa < LM_ISA_COUNT; isa++)
    {
      const LmKernels *kernels = lm_kernels_for_isa ((LmIsa) isa);
      if (!kernels || lm_matmul_batch_tokens (kernels, LM_TYPE_Q4_K, 8) == 0)
        continue;
      for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++)
        for (gsize c = 0; c < G_N_ELEMENTS (token_counts); c++)
          check_product (kernels, rng, shapes[s][0], shapes[s][1], token_counts[c]);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/q4k-batch/schoolbook", test_batch_schoolbook);
  return g_test_run ();
}
