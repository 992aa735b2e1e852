/* test-quant.c: block formats against ggml's own dequantisation, element
 * conversions against arithmetic in double, quantisers by round-trip error.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "quant.h"
#include "test-quant-gguf.h"
#include "test-quant-refs.h"
#include "ts-test-util.h"

/* ---- sizes ---- */

static void
test_sizes (void)
{
  g_assert_cmpuint (lm_type_block_size (LM_TYPE_F32), ==, 1);
  g_assert_cmpuint (lm_type_block_size (LM_TYPE_BF16), ==, 1);
  g_assert_cmpuint (lm_type_block_size (LM_TYPE_Q8_0), ==, 32);
  g_assert_cmpuint (lm_type_block_size (LM_TYPE_Q6_K), ==, 256);
  g_assert_cmpuint (lm_type_block_bytes (LM_TYPE_F16), ==, 2);
  g_assert_cmpuint (lm_type_block_bytes (LM_TYPE_Q8_0), ==, 34);
  g_assert_cmpuint (lm_type_block_bytes (LM_TYPE_Q4_K), ==, 144);
  g_assert_cmpuint (lm_type_block_bytes (LM_TYPE_Q5_K), ==, 176);
  g_assert_cmpuint (lm_type_block_bytes (LM_TYPE_Q6_K), ==, 210);
  g_assert_cmpuint (lm_row_bytes (LM_TYPE_Q4_K, 2048), ==, 8 * 144);
  g_assert_cmpuint (lm_row_bytes (LM_TYPE_F32, 3), ==, 12);
  g_assert_cmpuint (lm_row_bytes (LM_TYPE_Q4_K, 100), ==, 0);
  g_assert_cmpuint (lm_row_bytes ((LmTensorType) 20, 256), ==, 0);   /* IQ4_NL: unsupported */
  g_assert_cmpstr (lm_type_name (LM_TYPE_Q5_K), ==, "q5_K");

  /* ggml's block geometry of the 32-value formats and Q2_K / Q3_K */
  const struct { LmTensorType type; const char *name; size_t values, bytes; } blocks[] = {
    { LM_TYPE_Q4_0, "q4_0", 32, 18 }, { LM_TYPE_Q4_1, "q4_1", 32, 20 },
    { LM_TYPE_Q5_0, "q5_0", 32, 22 }, { LM_TYPE_Q5_1, "q5_1", 32, 24 },
    { LM_TYPE_Q2_K, "q2_K", 256, 84 }, { LM_TYPE_Q3_K, "q3_K", 256, 110 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (blocks); i++)
    {
      g_assert_true (lm_type_is_supported (blocks[i].type));
      g_assert_cmpstr (lm_type_name (blocks[i].type), ==, blocks[i].name);
      g_assert_cmpuint (lm_type_block_size (blocks[i].type), ==, blocks[i].values);
      g_assert_cmpuint (lm_type_block_bytes (blocks[i].type), ==, blocks[i].bytes);
      g_assert_cmpuint (lm_row_bytes (blocks[i].type, 896), ==,
                        blocks[i].values == 32 ? 28 * blocks[i].bytes : 0);
    }

  float out[32];
  g_assert_cmpint (lm_dequantize_row (LM_TYPE_Q8_0, out, out, 31), ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_dequantize_row ((LmTensorType) 99, out, out, 32), ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_quantize_row (LM_TYPE_Q8_0, NULL, out, 32), ==, LM_ERR_INVALID_ARGUMENT);
}

/* ---- element conversions ---- */

static double
half_value (guint16 h)
{
  int sign = h >> 15, exponent = (h >> 10) & 31, mantissa = h & 1023;
  double v = exponent == 0 ? ldexp (mantissa, -24) : ldexp (1024 + mantissa, exponent - 25);
  return sign ? -v : v;
}

static void
test_fp16_decode_all (void)
{
  for (guint32 h = 0; h < 65536; h++)
    {
      float f = lm_fp16_to_fp32 ((guint16) h);
      int exponent = (h >> 10) & 31;
      if (exponent == 31 && (h & 1023))
        g_assert_true (isnan (f));
      else if (exponent == 31)
        g_assert_true (isinf (f) && (signbit (f) != 0) == ((h >> 15) != 0));
      else
        {
          g_assert_cmpfloat ((double) f, ==, half_value ((guint16) h));
          g_assert_cmpint (signbit (f) != 0, ==, (h >> 15) != 0);
        }
    }
}

static void
test_fp16_encode (void)
{
  /* every finite half converts back to itself */
  for (guint32 h = 0; h < 65536; h++)
    if (((h >> 10) & 31) != 31)
      g_assert_cmpuint (lm_fp32_to_fp16 ((float) half_value ((guint16) h)), ==, h);
  /* midpoints between neighbours round to the even one, nudges go the near way */
  for (guint32 h = 0; h < 0x7bff; h++)
    {
      double mid = (half_value ((guint16) h) + half_value ((guint16) (h + 1))) / 2;
      guint16 even = (h & 1) ? (guint16) (h + 1) : (guint16) h;
      g_assert_cmpuint (lm_fp32_to_fp16 ((float) mid), ==, even);
      g_assert_cmpuint (lm_fp32_to_fp16 (nextafterf ((float) mid, 0.0f)), ==, h);
      g_assert_cmpuint (lm_fp32_to_fp16 (nextafterf ((float) mid, 1e9f)), ==, h + 1);
      g_assert_cmpuint (lm_fp32_to_fp16 (-(float) mid), ==, even | 0x8000u);
    }
  g_assert_cmpuint (lm_fp32_to_fp16 (65520.0f), ==, 0x7c00);   /* overflow -> inf */
  g_assert_cmpuint (lm_fp32_to_fp16 (-1e30f), ==, 0xfc00);
  g_assert_cmpuint (lm_fp32_to_fp16 (1e-9f), ==, 0);
  g_assert_true (isnan (lm_fp16_to_fp32 (lm_fp32_to_fp16 (NAN))));
}

static void
test_bf16 (void)
{
  g_assert_cmpfloat (lm_bf16_to_fp32 (0x3f80), ==, 1.0);
  g_assert_cmpfloat (lm_bf16_to_fp32 (0xc040), ==, -3.0);
  g_assert_cmpuint (lm_fp32_to_bf16 (1.0f), ==, 0x3f80);
  /* 1 + 2^-8 is the midpoint of 1 and 1 + 2^-7: ties to even (1.0) */
  g_assert_cmpuint (lm_fp32_to_bf16 (1.0f + 0x1p-8f), ==, 0x3f80);
  g_assert_cmpuint (lm_fp32_to_bf16 (1.0f + 0x1p-8f + 0x1p-20f), ==, 0x3f81);
  g_assert_cmpuint (lm_fp32_to_bf16 (1.0f + 3 * 0x1p-8f), ==, 0x3f82);
  g_assert_true (isnan (lm_bf16_to_fp32 (lm_fp32_to_bf16 (NAN))));
}

/* ---- ggml's dequantisation of real tensors ---- */

typedef struct {
  const char *folder;
  const char *golden;
  const char *tensor;
  LmTensorType type;
} GoldenCase;

static const GoldenCase golden_cases[] = {
  { "tiny-qwen35moe-e256-q4_k_m", "dequant_q4_K.bin", "blk.0.attn_gate.weight", LM_TYPE_Q4_K },
  { "tiny-qwen35moe-e256-q4_k_m", "dequant_q5_K.bin", "blk.3.attn_output.weight", LM_TYPE_Q5_K },
  { "tiny-qwen35moe-e256-q4_k_m", "dequant_q6_K.bin", "blk.2.ffn_down_shexp.weight", LM_TYPE_Q6_K },
  { "tiny-qwen35moe-e256-q4_k_m", "dequant_q8_0.bin", "blk.3.attn_k.weight", LM_TYPE_Q8_0 },
  { "tiny-qwen35moe-e256-q8_0", "dequant_q8_0.bin", "blk.3.attn_k.weight", LM_TYPE_Q8_0 },
};

static gint64
ulp_distance (float a, float b)
{
  gint32 ia, ib;
  memcpy (&ia, &a, 4);
  memcpy (&ib, &b, 4);
  gint64 la = ia < 0 ? (gint64) G_MININT32 - ia : ia;   /* monotonic ordering */
  gint64 lb = ib < 0 ? (gint64) G_MININT32 - ib : ib;
  return la > lb ? la - lb : lb - la;
}

static void
test_golden (gconstpointer data)
{
  const GoldenCase *gc = data;
  g_autofree char *gguf_rel = g_strdup_printf ("qwen35/%s/%s.gguf", gc->folder, gc->folder);
  g_autofree char *golden_rel = g_strdup_printf ("qwen35/%s/%s", gc->folder, gc->golden);
  gsize gguf_len, golden_len;
  g_autofree guint8 *gguf = ts_test_read_data (gguf_rel, &gguf_len);
  g_autofree guint8 *golden = ts_test_read_data (golden_rel, &golden_len);
  TestGgufTensor t;

  test_gguf_find_tensor (gguf, gguf_len, gc->tensor, &t);
  g_assert_cmpuint (t.type, ==, gc->type);
  gint64 n_in = (gint64) t.ne[0], n_rows = (gint64) t.ne[1];
  g_assert_cmpuint (golden_len, ==, (gsize) (n_in * n_rows) * sizeof (float));
  size_t row_bytes = lm_row_bytes (gc->type, n_in);
  g_assert_cmpuint (row_bytes, >, 0);
  g_assert_cmpuint ((gsize) (t.data - gguf) + row_bytes * (gsize) n_rows, <=, gguf_len);

  g_autofree float *row = g_new (float, n_in);
  const float *expect = (const float *) golden;
  gint64 exact = 0;
  for (gint64 r = 0; r < n_rows; r++)
    {
      g_assert_cmpint (lm_dequantize_row (gc->type, t.data + r * row_bytes, row, n_in), ==, LM_OK);
      for (gint64 i = 0; i < n_in; i++)
        {
          gint64 ulps = ulp_distance (row[i], expect[r * n_in + i]);
          if (ulps > 1)
            g_error ("%s row %" G_GINT64_FORMAT " col %" G_GINT64_FORMAT ": %.9g != %.9g",
                     gc->tensor, r, i, row[i], expect[r * n_in + i]);
          exact += ulps == 0;
        }
    }
  g_test_message ("%s: %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT " values bit-exact",
                  gc->golden, exact, n_in * n_rows);
}

/* ---- gguf-py's encoding and decoding (tests/data/quant) ---- */

static guint32
float_bits (float f)
{
  guint32 u;
  memcpy (&u, &f, sizeof u);
  return u;
}

/* Every row decodes to gguf-py's values bit for bit. */
static void
test_refs_decode (gconstpointer data)
{
  TestQuantRef ref;
  test_quant_ref_load (data, &ref);
  g_autofree float *row = g_new (float, ref.n_cols);
  for (guint32 r = 0; r < ref.n_rows; r++)
    {
      g_assert_cmpint (lm_dequantize_row (ref.type, ref.w + r * ref.row_bytes, row, ref.n_cols),
                       ==, LM_OK);
      for (guint32 i = 0; i < ref.n_cols; i++)
        if (float_bits (row[i]) != float_bits (ref.deq[r * ref.n_cols + i]))
          g_error ("%s row %u value %u: %.9g, gguf-py %.9g", lm_type_name (ref.type), r, i,
                   (double) row[i], (double) ref.deq[r * ref.n_cols + i]);
    }
  test_quant_ref_clear (&ref);
}

/* The 32-value formats encode exactly as gguf-py's (ggml's reference) encoders. */
static void
test_refs_encode (gconstpointer data)
{
  TestQuantRef ref;
  test_quant_ref_load (data, &ref);
  g_assert_cmpuint (ref.n_src_rows, >, 0);
  g_autofree guint8 *blocks = g_malloc (ref.row_bytes);
  for (guint32 r = 0; r < ref.n_src_rows; r++)
    {
      g_assert_cmpint (lm_quantize_row (ref.type, ref.src + r * ref.n_cols, blocks, ref.n_cols),
                       ==, LM_OK);
      for (gsize b = 0; b < ref.row_bytes; b++)
        if (blocks[b] != ref.w[r * ref.row_bytes + b])
          g_error ("%s row %u: byte %" G_GSIZE_FORMAT " (block %" G_GSIZE_FORMAT ") is 0x%02x, "
                   "gguf-py's 0x%02x", lm_type_name (ref.type), r, b,
                   b / lm_type_block_bytes (ref.type), blocks[b], ref.w[r * ref.row_bytes + b]);
    }
  test_quant_ref_clear (&ref);
}

/* The activation row as 8-bit blocks, bit for bit as the numpy rendition of
 * ggml's x86 quantize_row_q8_0 / q8_1 / q8_K. */
static void
test_refs_activation (gconstpointer data)
{
  TestQuantRef ref;
  test_quant_ref_load (data, &ref);
  g_autofree guint8 *act = g_malloc0 (ref.act_bytes);
  gsize expect;
  switch (ref.act_type)
    {
    case 8:
      expect = ref.n_cols / 32 * sizeof (LmBlockQ8_0);
      lm_quantize_row_q8_0_act (ref.x, (LmBlockQ8_0 *) act, ref.n_cols);
      break;
    case 9:
      expect = ref.n_cols / 32 * sizeof (LmBlockQ8_1);
      lm_quantize_row_q8_1_act (ref.x, (LmBlockQ8_1 *) act, ref.n_cols);
      break;
    default:
      g_assert_cmpuint (ref.act_type, ==, 15);
      expect = ref.n_cols / 256 * sizeof (LmBlockQ8_K);
      lm_quantize_row_q8_K (ref.x, (LmBlockQ8_K *) act, ref.n_cols);
      break;
    }
  g_assert_cmpuint (ref.act_bytes, ==, expect);
  g_assert_cmpmem (act, ref.act_bytes, ref.act, ref.act_bytes);
  test_quant_ref_clear (&ref);
}

/* ---- quantisers: round trip through the golden-checked decoders ---- */

static void
fill_random (GRand *rng, float *x, gint64 n)
{
  for (gint64 i = 0; i < n; i++)
    {
      /* roughly Gaussian with occasional outliers, like trained weights */
      double u = g_rand_double_range (rng, -1, 1) + g_rand_double_range (rng, -1, 1)
                 + g_rand_double_range (rng, -1, 1);
      x[i] = (float) (u * (g_rand_int_range (rng, 0, 50) == 0 ? 8.0 : 1.0));
    }
}

/* Largest error a sub-block of @len values in [lo, hi] (0 included) may
 * show after quantising to @levels steps, allowing @super_range / @super_div
 * for the roundings of the scales (the super-block's, or fp16's). */
static double
allowed_error (const float *x, int len, double levels, double super_range, double super_div)
{
  double lo = 0, hi = 0;
  for (int i = 0; i < len; i++)
    {
      lo = fmin (lo, x[i]);
      hi = fmax (hi, x[i]);
    }
  return (hi - lo) / levels + super_range / super_div + 1e-6;
}

static void
check_round_trip_ex (LmTensorType type, int sub_len, double levels, double super_div,
                     double max_rms, GRand *rng)
{
  const gint64 n = 4096;
  g_autofree float *x = g_new (float, n);
  g_autofree float *back = g_new (float, n);
  g_autofree guint8 *blocks = g_malloc (lm_row_bytes (type, n));
  double err2 = 0, sig2 = 0;

  fill_random (rng, x, n);
  x[5] = 0.0f;
  memset (x + 512, 0, 256 * sizeof (float));   /* an all-zero super-block */
  g_assert_cmpint (lm_quantize_row (type, x, blocks, n), ==, LM_OK);
  g_assert_cmpint (lm_dequantize_row (type, blocks, back, n), ==, LM_OK);
  for (gint64 b = 0; b < n; b += 256)
    {
      double super_range = 0;
      for (int i = 0; i < 256; i++)
        super_range = fmax (super_range, fabs (x[b + i]));
      for (gint64 s = b; s < b + 256; s += sub_len)
        {
          double allowed = allowed_error (x + s, sub_len, levels, super_range, super_div);
          for (gint64 i = s; i < s + sub_len; i++)
            {
              double e = fabs ((double) back[i] - x[i]);
              if (e > allowed)
                g_error ("%s value %" G_GINT64_FORMAT ": %g -> %g (allowed %g)",
                         lm_type_name (type), i, x[i], back[i], allowed);
              err2 += e * e;
              sig2 += (double) x[i] * x[i];
            }
        }
    }
  for (int i = 512; i < 768; i++)
    g_assert_cmpfloat (back[i], ==, 0.0f);
  g_test_message ("%s: relative RMS error %.4f", lm_type_name (type), sqrt (err2 / sig2));
  g_assert_cmpfloat (sqrt (err2 / sig2), <, max_rms);
}

static void
check_round_trip (LmTensorType type, int sub_len, int levels, double max_rms, GRand *rng)
{
  check_round_trip_ex (type, sub_len, levels, 63.0, max_rms, rng);
}

static void
test_round_trip (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  /* RMS limits: a uniform rounding error of step/sqrt(12) with the step set by
   * the sub-block range (outliers make it about 1.5x the Gaussian case) */
  check_round_trip (LM_TYPE_Q8_0, 32, 254, 0.02, rng);
  /* Q4_0 / Q5_0: step amax/8 resp. amax/16, one step at the clamped end;
   * Q4_1 / Q5_1: half a step of range/15 resp. range/31; fp16 scales and
   * mins add at most 2^-10 of the super-block range */
  check_round_trip_ex (LM_TYPE_Q4_0, 32, 8, 1024, 0.2, rng);
  check_round_trip_ex (LM_TYPE_Q5_0, 32, 16, 1024, 0.1, rng);
  check_round_trip_ex (LM_TYPE_Q4_1, 32, 30, 1024, 0.14, rng);
  check_round_trip_ex (LM_TYPE_Q5_1, 32, 62, 1024, 0.07, rng);
  /* Q2_K: 4 levels with 4-bit scales and mins; Q3_K: step amax/4 (one step
   * at the clamped end), 6-bit scales over the super-block's amax/4 */
  check_round_trip_ex (LM_TYPE_Q2_K, 16, 3, 7.5, 0.55, rng);
  check_round_trip_ex (LM_TYPE_Q3_K, 16, 4, 31, 0.28, rng);
  check_round_trip (LM_TYPE_Q4_K, 32, 15, 0.15, rng);
  check_round_trip (LM_TYPE_Q5_K, 32, 31, 0.07, rng);
  check_round_trip (LM_TYPE_Q6_K, 16, 63, 0.045, rng);

  const gint64 n = 1024;
  g_autofree float *x = g_new (float, n);
  g_autofree float *back = g_new (float, n);
  g_autofree guint16 *h = g_new (guint16, n);
  fill_random (rng, x, n);
  g_assert_cmpint (lm_quantize_row (LM_TYPE_F16, x, h, n), ==, LM_OK);
  g_assert_cmpint (lm_dequantize_row (LM_TYPE_F16, h, back, n), ==, LM_OK);
  /* Half a unit in the last place, or half the subnormal step (2^-24) for
   * values below f16's normal range. */
  for (gint64 i = 0; i < n; i++)
    g_assert_cmpfloat (fabs (back[i] - x[i]), <=, MAX (fabs (x[i]) * 0x1p-11, 0x1p-25));
  g_assert_cmpint (lm_quantize_row (LM_TYPE_BF16, x, h, n), ==, LM_OK);
  g_assert_cmpint (lm_dequantize_row (LM_TYPE_BF16, h, back, n), ==, LM_OK);
  for (gint64 i = 0; i < n; i++)
    g_assert_cmpfloat (fabs (back[i] - x[i]), <=, fabs (x[i]) * 0x1p-8);
  g_assert_cmpint (lm_quantize_row (LM_TYPE_F32, x, back, n), ==, LM_OK);
  g_assert_cmpmem (back, n * sizeof (float), x, n * sizeof (float));
}

/* ---- activation blocks (FORMAT.md §4) ---- */

static void
test_q8_0_activation (void)
{
  float x[64];
  LmBlockQ8_0 a[2];

  for (int i = 0; i < 32; i++)
    x[i] = (float) (i - 16);
  x[3] = 127.0f;    /* amax 127: scale 1, so x * 127/amax = x */
  x[4] = 2.5f;      /* exact ties go to even */
  x[5] = 3.5f;
  x[6] = -2.5f;
  x[7] = -126.5f;
  for (int i = 32; i < 64; i++)
    x[i] = 0.0f;
  lm_quantize_row_q8_0_act (x, a, 64);
  g_assert_cmpfloat (lm_fp16_to_fp32 (a[0].d), ==, 1.0);
  g_assert_cmpint (a[0].qs[3], ==, 127);
  g_assert_cmpint (a[0].qs[4], ==, 2);
  g_assert_cmpint (a[0].qs[5], ==, 4);
  g_assert_cmpint (a[0].qs[6], ==, -2);
  g_assert_cmpint (a[0].qs[7], ==, -126);
  g_assert_cmpint (a[0].qs[0], ==, -16);
  g_assert_cmpfloat (lm_fp16_to_fp32 (a[1].d), ==, 0.0);
  for (int i = 0; i < 32; i++)
    g_assert_cmpint (a[1].qs[i], ==, 0);

  /* scale: d = amax/127 in fp16, q = rne(x * 127/amax) */
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  fill_random (rng, x, 64);
  lm_quantize_row_q8_0_act (x, a, 64);
  for (int b = 0; b < 2; b++)
    {
      float amax = 0;
      for (int i = 0; i < 32; i++)
        amax = fmaxf (amax, fabsf (x[32 * b + i]));
      g_assert_cmpuint (a[b].d, ==, lm_fp32_to_fp16 (amax / 127.0f));
      for (int i = 0; i < 32; i++)
        {
          double v = (double) (x[32 * b + i] * (127.0f / amax));
          g_assert_cmpfloat (fabs (a[b].qs[i] - v), <=, 0.5);
        }
    }
}

static void
test_q8_K_activation (void)
{
  float x[512];
  LmBlockQ8_K a[2];

  for (int i = 0; i < 256; i++)
    x[i] = (float) ((i % 100) - 50);
  x[10] = -127.0f;  /* the signed max: iscale = -127/-127 = 1 */
  x[11] = 127.0f;   /* same magnitude later: the first one wins */
  x[12] = 2.5f;
  x[13] = 3.5f;
  x[14] = -0.5f;
  memset (x + 256, 0, 256 * sizeof (float));
  lm_quantize_row_q8_K (x, a, 512);
  g_assert_cmpfloat (a[0].d, ==, 1.0);
  g_assert_cmpint (a[0].qs[10], ==, -127);
  g_assert_cmpint (a[0].qs[11], ==, 127);
  g_assert_cmpint (a[0].qs[12], ==, 2);
  g_assert_cmpint (a[0].qs[13], ==, 4);
  g_assert_cmpint (a[0].qs[14], ==, 0);
  g_assert_cmpfloat (a[1].d, ==, 0.0);
  for (int g = 0; g < 16; g++)
    {
      int sum = 0;
      for (int i = 0; i < 16; i++)
        sum += a[0].qs[16 * g + i];
      g_assert_cmpint (a[0].bsums[g], ==, sum);
      g_assert_cmpint (a[1].bsums[g], ==, 0);
    }

  /* positive max: iscale negative, so the max maps to -127 */
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  fill_random (rng, x, 256);
  x[100] = 40.0f;
  lm_quantize_row_q8_K (x, a, 256);
  g_assert_cmpint (a[0].qs[100], ==, -127);
  g_assert_cmpfloat (a[0].d, ==, 1.0f / (-127.0f / 40.0f));
  for (int i = 0; i < 256; i++)
    g_assert_cmpfloat (fabs (a[0].qs[i] * (double) a[0].d - x[i]), <=, fabs (a[0].d) * 0.5001);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/quant/sizes", test_sizes);
  g_test_add_func ("/engine/quant/fp16-decode-all", test_fp16_decode_all);
  g_test_add_func ("/engine/quant/fp16-encode", test_fp16_encode);
  g_test_add_func ("/engine/quant/bf16", test_bf16);
  for (gsize i = 0; i < G_N_ELEMENTS (golden_cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/engine/quant/golden/%s/%s",
                                               golden_cases[i].folder, golden_cases[i].golden);
      g_test_add_data_func (path, &golden_cases[i], test_golden);
    }
  for (gsize i = 0; i < TEST_QUANT_N_REFS; i++)
    {
      const char *name = test_quant_ref_names[i];
      g_autofree char *decode = g_strdup_printf ("/engine/quant/gguf-py/%s/decode", name);
      g_autofree char *act = g_strdup_printf ("/engine/quant/gguf-py/%s/activation", name);
      g_test_add_data_func (decode, name, test_refs_decode);
      g_test_add_data_func (act, name, test_refs_activation);
      if (lm_type_block_size (test_quant_ref_types[i]) == 32)
        {
          g_autofree char *encode = g_strdup_printf ("/engine/quant/gguf-py/%s/encode", name);
          g_test_add_data_func (encode, name, test_refs_encode);
        }
    }
  g_test_add_func ("/engine/quant/round-trip", test_round_trip);
  g_test_add_func ("/engine/quant/q8_0-activation", test_q8_0_activation);
  g_test_add_func ("/engine/quant/q8_K-activation", test_q8_K_activation);
  return g_test_run ();
}
