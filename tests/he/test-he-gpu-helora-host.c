/* test-he-gpu-helora-host.c: the GPU HE-LoRA pipeline's device arithmetic,
 * run on the host (no GPU needed), against RFC 8439, OpenSSL's ChaCha20 and
 * the CPU engine.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include <openssl/evp.h>

#include "ckks-gpu-helora-private.h"
#include "ckks-helora-private.h"
#include "ckks-objects.h"
#include "ckks.h"
#include "he-test-common.h"
#include "ts-config.h"

#if TS_HAVE_CUDA
#include "ckks-cuda-helora.h"

static GRand *rng;

static void
random_bytes (uint8_t *out, size_t n)
{
  for (size_t i = 0; i < n; i++)
    out[i] = (uint8_t) g_rand_int_range (rng, 0, 256);
}

/* @len bytes of OpenSSL's ChaCha20 keystream from block @counter. */
static void
openssl_keystream (const uint8_t key[32], uint32_t counter, const uint32_t nonce[3],
                   uint8_t *out, size_t len)
{
  uint8_t iv[16];
  uint32_t words[4] = { counter, nonce[0], nonce[1], nonce[2] };
  for (int i = 0; i < 4; i++)
    for (int b = 0; b < 4; b++)
      iv[4 * i + b] = (uint8_t) (words[i] >> (8 * b));
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new ();
  int outl = 0;
  memset (out, 0, len);
  g_assert_cmpint (EVP_EncryptInit_ex (c, EVP_chacha20 (), NULL, key, iv), ==, 1);
  g_assert_cmpint (EVP_EncryptUpdate (c, out, &outl, out, (int) len), ==, 1);
  g_assert_cmpint (outl, ==, (int) len);
  EVP_CIPHER_CTX_free (c);
}

static uint64_t
le64 (const uint8_t *p)
{
  uint64_t v = 0;
  for (int b = 7; b >= 0; b--)
    v = v << 8 | p[b];
  return v;
}

static void
test_chacha20_rfc8439 (void)
{
  /* RFC 8439, 2.3.2: key 00..1f, nonce 00:00:00:09:00:00:00:4a:00:00:00:00,
   * block counter 1 */
  static const uint8_t expect[64] = {
    0x10, 0xf1, 0xe7, 0xe4, 0xd1, 0x3b, 0x59, 0x15, 0x50, 0x0f, 0xdd, 0x1f, 0xa3, 0x20, 0x71, 0xc4,
    0xc7, 0xd1, 0xf4, 0xc7, 0x33, 0xc0, 0x68, 0x03, 0x04, 0x22, 0xaa, 0x9a, 0xc3, 0xd4, 0x6c, 0x4e,
    0xd2, 0x82, 0x64, 0x46, 0x07, 0x9f, 0xaa, 0x09, 0x14, 0xc2, 0xd7, 0x05, 0xd9, 0x8b, 0x02, 0xa2,
    0xb5, 0x12, 0x9c, 0xd1, 0xde, 0x16, 0x4e, 0xb9, 0xcb, 0xd0, 0x83, 0xe8, 0xa2, 0x50, 0x3c, 0x4e,
  };
  uint8_t key[32], nonce[12] = { 0, 0, 0, 9, 0, 0, 0, 0x4a, 0, 0, 0, 0 }, out[64];
  for (int i = 0; i < 32; i++)
    key[i] = (uint8_t) i;
  ckks_cuda_check_chacha20_block (key, 1, nonce, out);
  g_assert_cmpmem (out, 64, expect, 64);
  /* and any key, counter and nonce as OpenSSL's ChaCha20 */
  for (int trial = 0; trial < 50; trial++)
    {
      uint8_t ref[64];
      uint32_t nw[3], counter = g_rand_int (rng);
      random_bytes (key, 32);
      random_bytes (nonce, 12);
      for (int i = 0; i < 3; i++)
        nw[i] = (uint32_t) nonce[4 * i] | (uint32_t) nonce[4 * i + 1] << 8
                | (uint32_t) nonce[4 * i + 2] << 16 | (uint32_t) nonce[4 * i + 3] << 24;
      ckks_cuda_check_chacha20_block (key, counter, nonce, out);
      openssl_keystream (key, counter, nw, ref, 64);
      g_assert_cmpmem (out, 64, ref, 64);
    }
}

static CkksCudaLimb
limb_of (const CkksContext *ctx, uint32_t i)
{
  const CkksModulus *m = &ctx->ntt[i].mod;
  return (CkksCudaLimb) { m->q, m->ratio_lo, m->ratio_hi, m->ratio64 };
}

/* Uniform a mod q: the 128-bit words of the keystream reduced mod q, equal
 * for equal seeds, in range, mean and spread of a uniform variable. */
static void
test_sample_uniform (void)
{
  CkksContext *ctx = he_test_context ("default", CKKS_BACKEND_AUTO);
  size_t n = 16384;
  uint64_t *a = g_new (uint64_t, n), *again = g_new (uint64_t, n);
  uint8_t *stream = g_new (uint8_t, n * 16), seed[32];
  random_bytes (seed, 32);
  for (uint32_t limb = 0; limb < 2; limb++)
    {
      CkksCudaLimb lc = limb_of (ctx, limb);
      uint32_t ct = 3 + limb, nonce[3] = { CKKS_CUDA_DOMAIN_UNIFORM, ct, limb };
      ckks_cuda_check_sample_uniform (seed, ct, limb, &lc, a, n);
      ckks_cuda_check_sample_uniform (seed, ct, limb, &lc, again, n);
      g_assert_cmpmem (a, n * 8, again, n * 8);
      openssl_keystream (seed, 0, nonce, stream, n * 16);
      double mean = 0;
      for (size_t i = 0; i < n; i++)
        {
          unsigned __int128 v = (unsigned __int128) le64 (stream + 16 * i + 8) << 64
                                | le64 (stream + 16 * i);
          g_assert_cmpuint (a[i], ==, (uint64_t) (v % lc.q));
          g_assert_cmpuint (a[i], <, lc.q);
          mean += (double) a[i] / (double) lc.q;
        }
      /* mean of U(0,1): 0.5 with sigma 1 / sqrt(12 n) = 0.0023 */
      mean /= (double) n;
      g_assert_cmpfloat (fabs (mean - 0.5), <, 0.012);
      /* another ciphertext or limb: another stream */
      ckks_cuda_check_sample_uniform (seed, ct + 1, limb, &lc, again, n);
      g_assert_true (memcmp (a, again, n * 8) != 0);
    }
  g_free (a);
  g_free (again);
  g_free (stream);
  ckks_context_free (ctx);
}

/* Errors: centred binomial 21 per 64-bit word (as ckks_sample_cbd), in
 * [-21, 21], mean 0, variance 10.5. */
static void
test_sample_error (void)
{
  size_t n = 65536;
  int8_t *e = g_new (int8_t, n), *again = g_new (int8_t, n);
  uint8_t *stream = g_new (uint8_t, n * 8), seed[32];
  random_bytes (seed, 32);
  uint32_t ct = 7, nonce[3] = { CKKS_CUDA_DOMAIN_ERROR, ct, 0 };
  ckks_cuda_check_sample_error (seed, ct, e, n);
  ckks_cuda_check_sample_error (seed, ct, again, n);
  g_assert_cmpmem (e, n, again, n);
  openssl_keystream (seed, 0, nonce, stream, n * 8);
  double mean = 0, var = 0;
  for (size_t i = 0; i < n; i++)
    {
      uint64_t w = le64 (stream + 8 * i), mask = (1ull << 21) - 1;
      int ref = __builtin_popcountll (w & mask) - __builtin_popcountll ((w >> 21) & mask);
      g_assert_cmpint (e[i], ==, ref);
      g_assert_cmpint (abs (e[i]), <=, 21);
      mean += e[i];
      var += (double) e[i] * e[i];
    }
  mean /= (double) n;
  var /= (double) n;
  g_assert_cmpfloat (fabs (mean), <, 0.1);       /* sigma of the mean: 0.013 */
  g_assert_cmpfloat (fabs (var - 10.5), <, 0.4);  /* sigma of the variance: ~0.06 */
  ckks_cuda_check_sample_error (seed, ct + 1, again, n);
  g_assert_true (memcmp (e, again, n) != 0);
  g_free (e);
  g_free (again);
  g_free (stream);
}

/* The device encoder against ckks_encode_coeffs on the layout's packing:
 * bit for bit with the scalar backend, within 1e-9 (of the 2^48 scale)
 * with the default one, at every preset and for single and split chunks. */
static void
test_encoder (void)
{
  const char *const *names = ckks_params_preset_names ();
  for (size_t p = 0; names[p]; p++)
    for (int scalar = 0; scalar < 2; scalar++)
      {
        CkksBackend backend = scalar ? CKKS_BACKEND_SCALAR : CKKS_BACKEND_AUTO;
        CkksContext *ctx = he_test_context (names[p], backend);
        size_t slots = ctx->slots, n = ctx->n;
        size_t ds[] = { 64, 100, 2048, slots + 300 };
        for (size_t di = 0; di < G_N_ELEMENTS (ds); di++)
          {
            CkksHeloraLayout *l;
            size_t d = ds[di];
            g_assert_cmpint (ckks_helora_layout_new (ctx, d, 8, &l), ==, CKKS_OK);
            float *h = g_new (float, d);
            double hmax = 0;
            for (size_t i = 0; i < d; i++)
              {
                h[i] = (float) g_rand_double_range (rng, -3, 3);
                hmax = fmax (hmax, fabs ((double) h[i]));
              }
            double inv = 1.0 / hmax, scale = ldexp (1.0, CKKS_HELORA_ENCODE_BITS);
            double *z = g_new0 (double, slots), *work = g_new (double, 2 * slots);
            int64_t *cpu = g_new (int64_t, n), *gpu = g_new (int64_t, n);
            for (size_t k = 0; k < l->chunks; k++)
              {
                size_t base = k * l->chunk_len, len = MIN (l->chunk_len, d - base);
                memset (z, 0, slots * sizeof (double));
                for (size_t j = 0; j < len; j++)
                  for (size_t t = 0; t < l->copies; t++)
                    z[ckks_helora_slot (l, t, j)] = h[base + j] * inv;
                g_assert_cmpint (ckks_encode_coeffs (ctx, z, NULL, slots, scale, cpu), ==, CKKS_OK);
                ckks_cuda_check_encode (h + base, (uint32_t) len, (uint32_t) l->copies, inv,
                                        (uint32_t) slots, ctx->fft_re, ctx->fft_im,
                                        ctx->slot_bitrev, scale / (double) slots, work, gpu);
                for (size_t i = 0; i < n; i++)
                  {
                    if (scalar)
                      g_assert_cmpint (gpu[i], ==, cpu[i]);
                    else
                      g_assert_cmpfloat (fabs ((double) (gpu[i] - cpu[i])) / scale, <=, 1e-9);
                  }
              }
            g_free (z);
            g_free (work);
            g_free (cpu);
            g_free (gpu);
            g_free (h);
            ckks_helora_layout_free (l);
          }
        ckks_context_free (ctx);
      }
}

/* Message limbs, forward NTT and CRT as the kernels compute them, bit for
 * bit against the CPU engine's functions. */
static void
test_limb_arithmetic (void)
{
  const char *const *names = ckks_params_preset_names ();
  for (size_t p = 0; names[p]; p++)
    {
      CkksContext *ctx = he_test_context (names[p], CKKS_BACKEND_AUTO);
      size_t n = ctx->n;
      int64_t *m = g_new (int64_t, n);
      int8_t *e = g_new (int8_t, n);
      uint64_t *cpu = g_new (uint64_t, n), *gpu = g_new (uint64_t, n);
      uint64_t *other = g_new (uint64_t, n), *shoup = g_new (uint64_t, n);
      for (size_t i = 0; i < n; i++)
        {
          m[i] = (int64_t) (g_rand_double_range (rng, -1, 1) * ldexp (1.0, 48));
          e[i] = (int8_t) g_rand_int_range (rng, -21, 22);
        }
      m[0] = 0;
      m[1] = -1;
      for (uint32_t i = 0; i < 2; i++)
        {
          const CkksNttTables *t = &ctx->ntt[i];
          CkksCudaLimb lc = limb_of (ctx, i);
          for (unsigned lift = 0; lift <= 24; lift += 24)
            {
              uint64_t w = ckks_barrett_reduce_128 ((ckks_u128) 1 << lift, &t->mod);
              ckks_message_to_limb (ctx, i, m, e, lift, cpu);
              ckks_cuda_check_message_limb (m, e, &lc, w, ckks_shoup_precompute (w, lc.q), gpu, n);
              g_assert_cmpmem (gpu, n * 8, cpu, n * 8);
            }
          for (size_t k = 0; k < n; k++)
            shoup[k] = ckks_shoup_precompute (t->psi_rev[k], lc.q);
          memcpy (gpu, cpu, n * 8);
          ckks_ntt_forward_limb (ctx, i, cpu);
          ckks_cuda_check_ntt_forward (gpu, t->psi_rev, shoup, lc.q, (uint32_t) n);
          g_assert_cmpmem (gpu, n * 8, cpu, n * 8);
        }
      for (size_t k = 0; k < n; k++)
        {
          cpu[k] = g_rand_int (rng) * (uint64_t) g_rand_int (rng) % ctx->crt2.q0;
          other[k] = g_rand_int (rng) * (uint64_t) g_rand_int (rng) % ctx->crt2.q1;
        }
      double *ref = g_new (double, n), *got = g_new (double, n);
      ckks_crt2_scalar (cpu, other, ref, &ctx->crt2, n);
      ckks_cuda_check_crt2 (cpu, other, ctx->crt2.q0, ctx->crt2.q1, ctx->crt2.inv,
                            ctx->crt2.inv_shoup, ctx->crt2.half_t, ctx->crt2.half_a, got, n);
      g_assert_cmpmem (got, n * sizeof (double), ref, n * sizeof (double));
      g_free (ref);
      g_free (got);
      g_free (m);
      g_free (e);
      g_free (cpu);
      g_free (gpu);
      g_free (other);
      g_free (shoup);
      ckks_context_free (ctx);
    }
}

/* The whole GPU token run on the host from the session's own spec (its
 * tables, key copy and plaintexts in Shoup form, its stream layout) against
 * plain A h and the CPU pipeline, at every preset, for d in {64, 2048,
 * 4096}, r in {1, 8, 32, 64}, and several modules of several groups. */
static void
test_token (void)
{
  const char *const *names = ckks_params_preset_names ();
  size_t ds[] = { 64, 2048, 4096 }, rs[] = { 1, 8, 32, 64 };
  for (size_t p = 0; names[p]; p++)
    for (int scalar = 0; scalar < 2; scalar++)
      {
        CkksBackend backend = scalar ? CKKS_BACKEND_SCALAR : CKKS_BACKEND_AUTO;
        CkksContext *ctx = he_test_context (names[p], backend);
        CkksSecretKey *sk;
        g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
        for (size_t di = 0; di < G_N_ELEMENTS (ds); di++)
          for (size_t ri = 0; ri < G_N_ELEMENTS (rs); ri++)
            {
              size_t d = ds[di], r = rs[ri];
              if (scalar && (di != 1 || ri != 2))
                continue;           /* the other backend's plaintext form, once */
              float *a = he_test_random_floats (rng, d * r, 0.1);
              float *h = he_test_random_floats (rng, d, 1.0);
              CkksHeloraPlan *plan;
              g_assert_cmpint (ckks_helora_plan_new (ctx, d, r, a, &plan), ==, CKKS_OK);
              const CkksHeloraPlan *plans[] = { plan };
              double *u = g_new (double, r), *ref = g_new (double, r);
              const float *hs[] = { h };
              double *us[] = { u };
              g_assert_cmpint (ckks_gpu_helora_host_token (sk, plans, 1, hs, 1, us, 1), ==, CKKS_OK);
              he_test_plain_product (a, h, d, r, ref);
              double err = he_test_max_abs_diff (u, ref, r);
              g_assert_cmpfloat (err, <=, 1e-6 * fmax (1.0, (double) d / 2048));
              g_assert_cmpfloat (err, >, 0);          /* encrypted: some noise */
              ckks_helora_plan_free (plan);
              g_free (a);
              g_free (h);
              g_free (u);
              g_free (ref);
            }
        ckks_secret_key_free (sk);
        ckks_context_free (ctx);
      }
}

static void
test_token_modules (void)
{
  CkksContext *ctx = he_test_context (ckks_params_default_preset_name (), CKKS_BACKEND_AUTO);
  CkksSecretKey *sk;
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
  enum { M = 5 };
  size_t d[M] = { 2048, 2048, 4096, 2048, 2048 }, r[M] = { 32, 8, 16, 64, 32 };
  size_t group[M] = { 0, 0, 1, 0, 2 };
  CkksHeloraScales sc[M] = { 0, 0, 0, 0, CKKS_HELORA_SCALES_PRIVACY };
  float *a[M], *h[3] = { he_test_random_floats (rng, 2048, 1), he_test_random_floats (rng, 4096, 1),
                        he_test_random_floats (rng, 2048, 1) };
  CkksHeloraPlan *plans[M];
  double *u[M];
  for (int m = 0; m < M; m++)
    {
      a[m] = he_test_random_floats (rng, d[m] * r[m], 0.1);
      u[m] = g_new (double, r[m]);
      g_assert_cmpint (ckks_helora_plan_new_scaled (ctx, d[m], r[m], a[m], sc[m], &plans[m]), ==,
                       CKKS_OK);
    }
  g_assert_cmpint (ckks_gpu_helora_host_token (sk, (const CkksHeloraPlan *const *) plans, M,
                                               (const float *const *) h, 3, u, M), ==, CKKS_OK);
  /* wrong group count */
  g_assert_cmpint (ckks_gpu_helora_host_token (sk, (const CkksHeloraPlan *const *) plans, 1,
                                               (const float *const *) h, 3, u, 1), ==,
                   CKKS_ERR_INVALID_ARGUMENT);
  for (int m = 0; m < M; m++)
    {
      double *ref = g_new (double, r[m]);
      he_test_plain_product (a[m], h[group[m]], d[m], r[m], ref);
      double tol = sc[m] == CKKS_HELORA_SCALES_PRIVACY ? 1e-4 : 1e-6 * fmax (1.0, d[m] / 2048.0);
      g_assert_cmpfloat (he_test_max_abs_diff (u[m], ref, r[m]), <=, tol);
      g_free (ref);
      ckks_helora_plan_free (plans[m]);
      g_free (a[m]);
      g_free (u[m]);
    }
  for (int g = 0; g < 3; g++)
    g_free (h[g]);
  ckks_secret_key_free (sk);
  ckks_context_free (ctx);
}
/* The device's max|h| reduction against a plain loop (exact: a maximum
 * does not depend on the order), with h = 0, one non-finite value at a
 * random place, and lengths around the block size. */
static void
expect_abs_max (const float *h, size_t d)
{
  double want = 0, inv, factor;
  gboolean finite = TRUE;
  for (size_t i = 0; i < d; i++)
    {
      finite = finite && isfinite (h[i]);
      want = fmax (want, fabs ((double) h[i]));
    }
  ckks_cuda_check_abs_max (h, d, &inv, &factor);
  if (!finite)
    {
      g_assert_cmpfloat (inv, ==, 0);
      g_assert_true (isnan (factor));
      return;
    }
  want = want > 0 ? want : 1;
  g_assert_cmpfloat (factor, ==, want);
  g_assert_cmpfloat (inv, ==, 1.0 / want);
}

static void
test_abs_max (void)
{
  size_t ds[] = { 1, 7, 255, 256, 257, 2048, 5003 };
  float bad[] = { NAN, INFINITY, -INFINITY };
  for (size_t di = 0; di < G_N_ELEMENTS (ds); di++)
    {
      size_t d = ds[di];
      float *h = g_new0 (float, d);
      expect_abs_max (h, d);
      for (int trial = 0; trial < 20; trial++)
        {
          double bound = trial < 10 ? 1.0 : 1e6;
          for (size_t i = 0; i < d; i++)
            h[i] = (float) g_rand_double_range (rng, -bound, bound);
          expect_abs_max (h, d);
          size_t at = (size_t) g_rand_int_range (rng, 0, (gint32) d);
          float keep = h[at];
          h[at] = bad[trial % 3];
          expect_abs_max (h, d);
          h[at] = keep;
        }
      g_free (h);
    }
}

#else
static void
test_not_built (void)
{
  g_test_skip ("this build has no CUDA kernels: nothing of the GPU pipeline to check");
}
#endif

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
#if TS_HAVE_CUDA
  rng = he_test_rng_new ();
  g_test_add_func ("/he/gpu-helora-host/chacha20", test_chacha20_rfc8439);
  g_test_add_func ("/he/gpu-helora-host/sample-uniform", test_sample_uniform);
  g_test_add_func ("/he/gpu-helora-host/sample-error", test_sample_error);
  g_test_add_func ("/he/gpu-helora-host/encoder", test_encoder);
  g_test_add_func ("/he/gpu-helora-host/limb-arithmetic", test_limb_arithmetic);
  g_test_add_func ("/he/gpu-helora-host/token", test_token);
  g_test_add_func ("/he/gpu-helora-host/token-modules", test_token_modules);
  g_test_add_func ("/he/gpu-helora-host/abs-max", test_abs_max);
#else
  g_test_add_func ("/he/gpu-helora-host/not-built", test_not_built);
#endif
  int rc = g_test_run ();
#if TS_HAVE_CUDA
  g_rand_free (rng);
#endif
  return rc;
}
