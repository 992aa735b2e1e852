/* test-he-cuda-kernels.c: every CUDA kernel against the CPU scalar backend
 * on random inputs, bit for bit, at every preset and at generated
 * parameters for log_n 12..16. Skips without a GPU (or without CUDA).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <string.h>

#include "ckks-gpu.h"
#include "he-cuda-test-params.h"
#include "he-test-common.h"
#include "ts-config.h"
#include "ts-test-util.h"

#if TS_HAVE_CUDA
#include "ckks-cuda-kernels.h"
#include "ckks-cuda-testutil.h"
#include "ckks-objects.h"

#define MAX_SETS 16
/* gap between batch items, so that a stride bug shows */
#define GAP 320

static CkksParams sets[MAX_SETS];
static char set_names[MAX_SETS][32];
static GRand *rng;

typedef struct {
  CkksContext *ctx;
  CkksCudaTables *tables;
  size_t n;
  uint32_t limbs;
} Fixture;

static gboolean
fixture_init (Fixture *f, const CkksParams *p)
{
  char why[200] = "";
  if (!ckks_gpu_available (why, sizeof why))
    {
      g_test_skip (why);
      return FALSE;
    }
  memset (f, 0, sizeof *f);
  g_assert_cmpint (ckks_context_new_with_backend (p, CKKS_BACKEND_SCALAR, &f->ctx), ==,
                   CKKS_OK);
  g_assert_cmpint (ckks_cuda_tables_new (f->ctx, &f->tables), ==, CKKS_OK);
  f->n = f->ctx->n;
  f->limbs = p->n_moduli;
  g_assert_cmpuint (ckks_cuda_tables_ring_degree (f->tables), ==, f->n);
  g_assert_cmpuint (ckks_cuda_tables_limbs (f->tables), ==, f->limbs);
  return TRUE;
}

static void
fixture_clear (Fixture *f)
{
  ckks_cuda_tables_free (f->tables);
  ckks_context_free (f->ctx);
}

/* @count polynomials of @limbs limbs, @stride apart, uniform below each q. */
static uint64_t *
random_batch (const Fixture *f, uint32_t limbs, uint32_t count, size_t stride)
{
  uint64_t *h = g_new0 (uint64_t, count * stride);
  for (uint32_t p = 0; p < count; p++)
    for (uint32_t i = 0; i < limbs; i++)
      {
        uint64_t q = f->ctx->params.moduli[i];
        for (size_t k = 0; k < f->n; k++)
          {
            uint64_t x = ((uint64_t) g_rand_int (rng) << 32) | g_rand_int (rng);
            h[p * stride + i * f->n + k] = x % q;
          }
      }
  return h;
}

static uint64_t *
upload (const uint64_t *h, size_t words)
{
  uint64_t *d = ckks_cuda_test_alloc (words);
  g_assert_nonnull (d);
  g_assert_cmpint (ckks_cuda_test_upload (d, h, words), ==, CKKS_OK);
  return d;
}

static uint64_t *
download (const uint64_t *d, size_t words)
{
  uint64_t *h = g_new (uint64_t, words);
  CkksStatus st = ckks_cuda_test_sync ();
  if (st != CKKS_OK)
    g_test_message ("CUDA: %s", ckks_cuda_test_error ());
  g_assert_cmpint (st, ==, CKKS_OK);
  g_assert_cmpint (ckks_cuda_test_download (h, d, words), ==, CKKS_OK);
  return h;
}

static void
assert_words_equal (const uint64_t *got, const uint64_t *want, size_t n, const char *what)
{
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i])
      {
        g_test_message ("%s: word %zu of %zu: got %" G_GUINT64_FORMAT ", want %"
                        G_GUINT64_FORMAT, what, i, n, got[i], want[i]);
        g_assert_cmpuint (got[i], ==, want[i]);
      }
}

typedef CkksStatus (*NttFn) (CkksCudaStream, const CkksCudaTables *, uint64_t *, uint32_t,
                             uint32_t, size_t);

static void
check_ntt (const Fixture *f, NttFn fn, gboolean forward, uint32_t limbs, uint32_t count,
           const char *what)
{
  size_t stride = limbs * f->n + GAP, words = count * stride;
  uint64_t *h = random_batch (f, limbs, count, stride);
  uint64_t *d = upload (h, words);
  g_assert_cmpint (fn (NULL, f->tables, d, limbs, count, stride), ==, CKKS_OK);
  uint64_t *got = download (d, words);
  for (uint32_t p = 0; p < count; p++)
    for (uint32_t i = 0; i < limbs; i++)
      {
        uint64_t *want = h + p * stride + i * f->n;
        if (forward)
          ckks_ntt_forward_limb (f->ctx, i, want);
        else
          ckks_ntt_inverse_limb (f->ctx, i, want);
        assert_words_equal (got + p * stride + i * f->n, want, f->n, what);
      }
  /* the gaps are untouched */
  for (uint32_t p = 0; p < count; p++)
    for (size_t k = limbs * f->n; k < stride; k++)
      g_assert_cmpuint (got[p * stride + k], ==, 0);
  ckks_cuda_test_free (d);
  g_free (h);
  g_free (got);
}

static void
test_ntt (gconstpointer data)
{
  Fixture f;
  if (!fixture_init (&f, data))
    return;
  for (uint32_t count = 1; count <= 3; count += 2)
    {
      check_ntt (&f, ckks_cuda_ntt_forward, TRUE, f.limbs, count, "forward NTT");
      check_ntt (&f, ckks_cuda_ntt_inverse, FALSE, f.limbs, count, "inverse NTT");
      check_ntt (&f, ckks_cuda_ntt_forward_reference, TRUE, f.limbs, count,
                 "per-stage forward NTT");
      check_ntt (&f, ckks_cuda_ntt_inverse_reference, FALSE, f.limbs, count,
                 "per-stage inverse NTT");
    }
  /* fewer limbs than the context has */
  check_ntt (&f, ckks_cuda_ntt_forward, TRUE, 1, 2, "forward NTT, one limb");
  check_ntt (&f, ckks_cuda_ntt_inverse, FALSE, 1, 2, "inverse NTT, one limb");
  /* bad shapes are refused */
  g_assert_cmpint (ckks_cuda_ntt_forward (NULL, f.tables, NULL, 1, 1, 0), ==,
                   CKKS_ERR_INVALID_ARGUMENT);
  uint64_t *d = ckks_cuda_test_alloc (f.n);
  g_assert_cmpint (ckks_cuda_ntt_forward (NULL, f.tables, d, f.limbs + 1, 1, 0), ==,
                   CKKS_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (ckks_cuda_ntt_forward (NULL, f.tables, d, 1, 2, f.n - 1), ==,
                   CKKS_ERR_INVALID_ARGUMENT);
  ckks_cuda_test_free (d);
  fixture_clear (&f);
}

static void
test_add (gconstpointer data)
{
  Fixture f;
  if (!fixture_init (&f, data))
    return;
  size_t words = f.limbs * f.n;
  uint64_t *ha = random_batch (&f, f.limbs, 1, words);
  uint64_t *hb = random_batch (&f, f.limbs, 1, words);
  uint64_t *da = upload (ha, words), *db = upload (hb, words);
  uint64_t *dout = ckks_cuda_test_alloc (words);
  g_assert_cmpint (ckks_cuda_add (NULL, f.tables, dout, da, db, f.limbs), ==, CKKS_OK);
  /* in place, too */
  g_assert_cmpint (ckks_cuda_add (NULL, f.tables, da, da, db, f.limbs), ==, CKKS_OK);
  uint64_t *got = download (dout, words), *got_in_place = download (da, words);
  for (uint32_t i = 0; i < f.limbs; i++)
    for (size_t k = 0; k < f.n; k++)
      ha[i * f.n + k] = ckks_add_mod (ha[i * f.n + k], hb[i * f.n + k],
                                      f.ctx->params.moduli[i]);
  assert_words_equal (got, ha, words, "add");
  assert_words_equal (got_in_place, ha, words, "add in place");
  ckks_cuda_test_free (da);
  ckks_cuda_test_free (db);
  ckks_cuda_test_free (dout);
  g_free (ha);
  g_free (hb);
  g_free (got);
  g_free (got_in_place);
  fixture_clear (&f);
}

/* The CPU evaluator's loop: for each output, mul_fixed_pair over the
 * inputs, the first with the pad (or nothing) as accumulator. */
static void
cpu_mul_plain_accumulate (const Fixture *f, const uint64_t *a, size_t in_stride,
                          uint32_t n_in, const uint64_t *w, const uint64_t *ws,
                          size_t pt_stride, uint32_t n_out, const uint64_t *add,
                          uint64_t *out, size_t out_stride)
{
  const uint64_t *a1 = a + n_in * in_stride;
  uint64_t *out1 = out + n_out * out_stride;
  const uint64_t *add1 = add ? add + n_out * out_stride : NULL;
  for (uint32_t b = 0; b < n_out; b++)
    for (uint32_t i = 0; i < f->limbs; i++)
      {
        size_t at = b * out_stride + i * f->n;
        for (uint32_t k = 0; k < n_in; k++)
          {
            size_t pt = (b * n_in + k) * pt_stride + i * f->n, in = k * in_stride + i * f->n;
            f->ctx->k.mul_fixed_pair (out + at, out1 + at,
                                      k ? out + at : (add ? add + at : NULL),
                                      k ? out1 + at : (add1 ? add1 + at : NULL), a + in,
                                      a1 + in, w + pt, ws + pt, f->ctx->params.moduli[i],
                                      f->n);
          }
      }
}

static void
check_mul_plain_accumulate (const Fixture *f, uint32_t n_in, uint32_t n_out, gboolean pads)
{
  const size_t words = f->limbs * f->n;
  const size_t in_stride = words + GAP, pt_stride = words + 2 * GAP, out_stride = words + GAP;
  uint64_t *ha = random_batch (f, f->limbs, 2 * n_in, in_stride);
  uint64_t *hw = random_batch (f, f->limbs, n_out * n_in, pt_stride);
  uint64_t *hws = g_new0 (uint64_t, n_out * n_in * pt_stride);
  for (size_t e = 0; e < n_out * n_in * pt_stride; e++)
    if (e % pt_stride < words)
      hws[e] = ckks_shoup_precompute (hw[e], f->ctx->params.moduli[(e % pt_stride) / f->n]);
  uint64_t *hadd = random_batch (f, f->limbs, 2 * n_out, out_stride);
  uint64_t *da = upload (ha, 2 * n_in * in_stride);
  uint64_t *dw = upload (hw, n_out * n_in * pt_stride);
  uint64_t *dws = upload (hws, n_out * n_in * pt_stride);
  uint64_t *dadd = upload (hadd, 2 * n_out * out_stride);
  uint64_t *dout = ckks_cuda_test_alloc (2 * n_out * out_stride);
  g_assert_cmpint (ckks_cuda_mul_plain_accumulate (
                     NULL, f->tables, f->limbs, da, da + n_in * in_stride, in_stride, n_in,
                     dw, dws, pt_stride, n_out, pads ? dadd : NULL,
                     pads ? dadd + n_out * out_stride : NULL, dout,
                     dout + n_out * out_stride, out_stride),
                   ==, CKKS_OK);
  uint64_t *got = download (dout, 2 * n_out * out_stride);
  uint64_t *want = g_new0 (uint64_t, 2 * n_out * out_stride);
  cpu_mul_plain_accumulate (f, ha, in_stride, n_in, hw, hws, pt_stride, n_out,
                            pads ? hadd : NULL, want, out_stride);
  char *what = g_strdup_printf ("mul_plain_accumulate n_in %u n_out %u%s", n_in, n_out,
                                pads ? " with pads" : "");
  assert_words_equal (got, want, 2 * n_out * out_stride, what);
  g_free (what);
  ckks_cuda_test_free (da);
  ckks_cuda_test_free (dw);
  ckks_cuda_test_free (dws);
  ckks_cuda_test_free (dadd);
  ckks_cuda_test_free (dout);
  g_free (ha);
  g_free (hw);
  g_free (hws);
  g_free (hadd);
  g_free (got);
  g_free (want);
}

static void
test_mul_plain_accumulate (gconstpointer data)
{
  Fixture f;
  if (!fixture_init (&f, data))
    return;
  static const uint32_t outs[] = { 1, 2, 16 };
  for (uint32_t n_in = 1; n_in <= 3; n_in++)
    for (size_t o = 0; o < G_N_ELEMENTS (outs); o++)
      for (int pads = 0; pads < 2; pads++)
        check_mul_plain_accumulate (&f, n_in, outs[o], pads);
  /* more inputs than the kernel keeps in registers */
  check_mul_plain_accumulate (&f, 6, 2, TRUE);
  fixture_clear (&f);
}

static void
test_rescale (gconstpointer data)
{
  Fixture f;
  if (!fixture_init (&f, data))
    return;
  for (uint32_t limbs = 2; limbs <= f.limbs; limbs++)
    {
      CkksCiphertext *ct = NULL;
      g_assert_cmpint (ckks_ciphertext_new (f.ctx, limbs, &ct), ==, CKKS_OK);
      size_t words = limbs * f.n, stride = words + GAP;
      uint64_t *h = random_batch (&f, limbs, 2, stride);
      memcpy (ct->c0, h, words * sizeof (uint64_t));
      memcpy (ct->c1, h + stride, words * sizeof (uint64_t));
      uint64_t *d = upload (h, 2 * stride);
      uint64_t *scratch = ckks_cuda_test_alloc (2 * f.n);
      g_assert_cmpint (ckks_cuda_rescale (NULL, f.tables, d, limbs, 2, stride, scratch), ==,
                       CKKS_OK);
      uint64_t *got = download (d, 2 * stride);
      g_assert_cmpint (ckks_rescale (ct), ==, CKKS_OK);
      assert_words_equal (got, ct->c0, (limbs - 1) * f.n, "rescale c0");
      assert_words_equal (got + stride, ct->c1, (limbs - 1) * f.n, "rescale c1");
      ckks_cuda_test_free (d);
      ckks_cuda_test_free (scratch);
      ckks_ciphertext_free (ct);
      g_free (h);
      g_free (got);
    }
  fixture_clear (&f);
}

/* Without a GPU the kernels refuse cleanly instead of crashing. */
static void
test_without_gpu (void)
{
  if (ckks_gpu_available (NULL, 0))
    {
      g_test_skip ("a GPU is present");
      return;
    }
  CkksParams p;
  CkksContext *ctx = NULL;
  CkksCudaTables *t = NULL;
  g_assert_cmpint (ckks_params_preset ("fast", &p), ==, CKKS_OK);
  g_assert_cmpint (ckks_context_new (&p, &ctx), ==, CKKS_OK);
  g_assert_cmpint (ckks_cuda_tables_new (ctx, &t), ==, CKKS_ERR_DEVICE);
  g_assert_null (t);
  g_assert_null (ckks_cuda_test_alloc (16));
  uint64_t word = 0;
  g_assert_cmpint (ckks_cuda_ntt_forward (NULL, NULL, &word, 1, 1, 0), ==,
                   CKKS_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (ckks_cuda_add (NULL, NULL, &word, &word, &word, 1), ==,
                   CKKS_ERR_INVALID_ARGUMENT);
  ckks_cuda_tables_free (NULL);
  ckks_context_free (ctx);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  rng = he_test_rng_new ();
  g_test_add_func ("/he/cuda/without-gpu", test_without_gpu);
  size_t n_sets = he_cuda_test_params (sets, set_names, MAX_SETS);
  static const struct {
    const char *name;
    GTestDataFunc fn;
  } tests[] = {
    { "ntt", test_ntt },
    { "add", test_add },
    { "mul-plain-accumulate", test_mul_plain_accumulate },
    { "rescale", test_rescale },
  };
  for (size_t t = 0; t < G_N_ELEMENTS (tests); t++)
    for (size_t i = 0; i < n_sets; i++)
      {
        char *path = g_strdup_printf ("/he/cuda/%s/%s", tests[t].name, set_names[i]);
        g_test_add_data_func (path, &sets[i], tests[t].fn);
        g_free (path);
      }
  int status = g_test_run ();
  g_rand_free (rng);
  return status;
}

#else

static void
test_no_cuda (void)
{
  char why[200] = "";
  g_assert_false (ckks_gpu_available (why, sizeof why));
  g_test_skip (why);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/he/cuda/skipped", test_no_cuda);
  return g_test_run ();
}
#endif
