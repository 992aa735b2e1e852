/* test-he-cuda-host.c: the CUDA kernels' arithmetic and schedules, run on
 * the host against the CPU backend (no GPU needed; needs a CUDA build).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>

#include "he-cuda-test-params.h"
#include "ts-config.h"
#include "ts-test-util.h"

#if TS_HAVE_CUDA
#include "ckks-cuda-selfcheck.h"

#define MAX_SETS 16

static CkksParams sets[MAX_SETS];
static guint64 seed;
static char set_names[MAX_SETS][32];

static CkksContext *
scalar_context (const CkksParams *p)
{
  CkksContext *ctx = NULL;
  g_assert_cmpint (ckks_context_new_with_backend (p, CKKS_BACKEND_SCALAR, &ctx), ==, CKKS_OK);
  return ctx;
}

static void
test_arith (void)
{
  char why[256] = "";
  gboolean ok = ckks_cuda_selfcheck_arith (seed, why, sizeof why);
  if (!ok)
    g_test_message ("%s", why);
  g_assert_true (ok);
}

static void
test_ntt (gconstpointer data)
{
  const CkksParams *p = data;
  /* the scalar backend's tables, and the fastest backend's (whose Shoup
   * companions the upload recomputes when they are not 64-bit) */
  for (int backend = 0; backend < 2; backend++)
    {
      CkksContext *ctx = NULL;
      g_assert_cmpint (ckks_context_new_with_backend (p, backend ? CKKS_BACKEND_AUTO
                                                                 : CKKS_BACKEND_SCALAR, &ctx),
                       ==, CKKS_OK);
      char why[256] = "";
      gboolean ok = ckks_cuda_selfcheck_ntt (ctx, seed + backend, why, sizeof why);
      if (!ok)
        g_test_message ("%s backend: %s", ckks_context_backend_name (ctx), why);
      ckks_context_free (ctx);
      g_assert_true (ok);
    }
}

static void
test_mul_plain_accumulate (gconstpointer data)
{
  CkksContext *ctx = scalar_context (data);
  static const guint32 shapes[][2] = { { 1, 1 }, { 1, 16 }, { 2, 3 }, { 3, 5 }, { 5, 2 } };
  for (size_t s = 0; s < G_N_ELEMENTS (shapes); s++)
    for (int with_add = 0; with_add < 2; with_add++)
      {
        char why[256] = "";
        gboolean ok = ckks_cuda_selfcheck_mul_plain_accumulate (
          ctx, seed + s, shapes[s][0], shapes[s][1], with_add, why, sizeof why);
        if (!ok)
          g_test_message ("%s", why);
        g_assert_true (ok);
      }
  ckks_context_free (ctx);
}

static void
test_rescale (gconstpointer data)
{
  CkksContext *ctx = scalar_context (data);
  const CkksParams *p = data;
  for (uint32_t limbs = 2; limbs <= p->n_moduli; limbs++)
    {
      char why[256] = "";
      gboolean ok = ckks_cuda_selfcheck_rescale (ctx, seed + limbs, limbs, why,
                                                 sizeof why);
      if (!ok)
        g_test_message ("%u limbs: %s", limbs, why);
      g_assert_true (ok);
    }
  ckks_context_free (ctx);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  seed = ts_test_seed ();
  size_t n_sets = he_cuda_test_params (sets, set_names, MAX_SETS);
  g_test_add_func ("/he/cuda-host/arith", test_arith);
  for (size_t i = 0; i < n_sets; i++)
    {
      char *path = g_strdup_printf ("/he/cuda-host/ntt/%s", set_names[i]);
      g_test_add_data_func (path, &sets[i], test_ntt);
      g_free (path);
      path = g_strdup_printf ("/he/cuda-host/mul-plain-accumulate/%s", set_names[i]);
      g_test_add_data_func (path, &sets[i], test_mul_plain_accumulate);
      g_free (path);
      path = g_strdup_printf ("/he/cuda-host/rescale/%s", set_names[i]);
      g_test_add_data_func (path, &sets[i], test_rescale);
      g_free (path);
    }
  return g_test_run ();
}

#else

static void
test_no_cuda (void)
{
  g_test_skip ("this build has no CUDA kernels");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/he/cuda-host/skipped", test_no_cuda);
  return g_test_run ();
}
#endif
