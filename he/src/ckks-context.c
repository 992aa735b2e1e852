/* ckks-context.c: presets, parameter validation and context construction.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include <openssl/sha.h>

#include "ckks-internal.h"

static const char *const preset_names[] = { "fast", "default", "wide", NULL };

/* Four primes just below 2^50: IFMA52 lazy butterflies need 4q < 2^52, and
 * two of them (~2^100) hold a ct x pt product at scale 2^96 exactly, so an
 * HE-LoRA result decrypts with a two-limb CRT in 128-bit integers. */
static const unsigned preset_bits[] = { 50, 50, 50, 50 };

const char *const *
ckks_params_preset_names (void)
{
  return preset_names;
}

const char *
ckks_params_default_preset_name (void)
{
  return "fast";
}

/* The HE-LoRA ring for inputs of up to 1024 values (N = 4096: 2048 slots,
 * two copies of such an h per ciphertext): the two primes below 2^50 that
 * an HE-LoRA product needs and nothing more, log2 Q ~ 100, within the HE
 * Standard's 109 bits for N = 4096. Half the encryption work of "fast". */
static const unsigned compact_bits[] = { 50, 50 };

CkksStatus
ckks_params_preset (const char *name, CkksParams *out)
{
  static const uint32_t log_ns[] = { 13, 14, 15 };
  if (!name || !out)
    return CKKS_ERR_INVALID_ARGUMENT;
  if (strcmp (name, CKKS_PRESET_COMPACT) == 0)
    return ckks_params_generate (12, compact_bits, sizeof compact_bits / sizeof compact_bits[0],
                                 out);
  for (size_t i = 0; preset_names[i]; i++)
    if (strcmp (name, preset_names[i]) == 0)
      return ckks_params_generate (log_ns[i], preset_bits,
                                   sizeof preset_bits / sizeof preset_bits[0], out);
  return CKKS_ERR_INVALID_ARGUMENT;
}

unsigned
ckks_params_max_log2_q (uint32_t log_n)
{
  switch (log_n)
    {
    case 10: return 27;
    case 11: return 54;
    case 12: return 109;
    case 13: return 218;
    case 14: return 438;
    case 15: return 881;
    case 16: return 1772;
    default: return 0;
    }
}

double
ckks_params_log2_q (const CkksParams *p)
{
  double bits = 0;
  for (uint32_t i = 0; p && i < p->n_moduli && i < CKKS_MAX_MODULI; i++)
    bits += log2 ((double) p->moduli[i]);
  return bits;
}

CkksStatus
ckks_params_validate (const CkksParams *p)
{
  if (!p || p->log_n < CKKS_MIN_LOG_N || p->log_n > CKKS_MAX_LOG_N
      || p->n_moduli == 0 || p->n_moduli > CKKS_MAX_MODULI)
    return CKKS_ERR_INVALID_ARGUMENT;
  uint64_t two_n = (uint64_t) 2 << p->log_n;
  for (uint32_t i = 0; i < p->n_moduli; i++)
    {
      uint64_t q = p->moduli[i];
      if (q < ((uint64_t) 1 << (CKKS_MIN_PRIME_BITS - 1))
          || q >= ((uint64_t) 1 << CKKS_MAX_PRIME_BITS)
          || q % two_n != 1 || !ckks_is_prime (q))
        return CKKS_ERR_INVALID_ARGUMENT;
      for (uint32_t j = 0; j < i; j++)
        if (p->moduli[j] == q)
          return CKKS_ERR_INVALID_ARGUMENT;
    }
  /* A tiny tolerance so that a product of primes just below 2^b sums that
   * are exactly at the bound are accepted, as in the Standard's tables. */
  if (ckks_params_log2_q (p) > (double) ckks_params_max_log2_q (p->log_n) + 1e-9)
    return CKKS_ERR_INSECURE_PARAMETERS;
  return CKKS_OK;
}

void
ckks_params_fingerprint (const CkksParams *p, uint8_t out[32])
{
  uint8_t buf[16 + 8 * CKKS_MAX_MODULI];
  size_t len = 0;
  memcpy (buf, "CKKSPRM1", 8);
  len = 8;
  for (int b = 0; b < 4; b++)
    buf[len++] = (uint8_t) (p->log_n >> (8 * b));
  for (int b = 0; b < 4; b++)
    buf[len++] = (uint8_t) (p->n_moduli >> (8 * b));
  for (uint32_t i = 0; i < p->n_moduli; i++)
    for (int b = 0; b < 8; b++)
      buf[len++] = (uint8_t) (p->moduli[i] >> (8 * b));
  SHA256 (buf, len, out);
}

static CkksStatus
init_fft_tables (CkksContext *ctx)
{
  size_t slots = ctx->slots, m = 2 * ctx->n;
  ctx->fft_re = ckks_alloc (slots * sizeof (double));
  ctx->fft_im = ckks_alloc (slots * sizeof (double));
  ctx->slot_bitrev = ckks_alloc (slots * sizeof (uint32_t));
  uint64_t *rot = ckks_alloc (slots * sizeof (uint64_t));
  if (!ctx->fft_re || !ctx->fft_im || !ctx->slot_bitrev || !rot)
    {
      ckks_free (rot);
      return CKKS_ERR_NO_MEMORY;
    }
  uint64_t g = 1;
  for (size_t j = 0; j < slots; j++)
    {
      rot[j] = g;
      g = (g * 5) % m;
    }
  ctx->fft_re[0] = 1.0;
  ctx->fft_im[0] = 0.0;
  for (size_t h = 1; h < slots; h <<= 1)
    {
      uint64_t lenq = 8 * (uint64_t) h;
      for (size_t j = 0; j < h; j++)
        {
          uint64_t idx = (rot[j] % lenq) * (m / lenq);
          double angle = 2.0 * M_PI * (double) idx / (double) m;
          ctx->fft_re[h + j] = cos (angle);
          ctx->fft_im[h + j] = sin (angle);
        }
    }
  unsigned bits = ctx->params.log_n - 1;
  for (size_t i = 0; i < slots; i++)
    {
      size_t r = 0, x = i;
      for (unsigned b = 0; b < bits; b++, x >>= 1)
        r = (r << 1) | (x & 1);
      ctx->slot_bitrev[i] = (uint32_t) r;
    }
  ckks_free (rot);
  return CKKS_OK;
}

static void
init_crt_constants (CkksContext *ctx)
{
  for (uint32_t i = 0; i < ctx->params.n_moduli; i++)
    for (uint32_t j = 0; j < ctx->params.n_moduli; j++)
      {
        if (i == j)
          continue;
        const CkksModulus *mi = &ctx->ntt[i].mod;
        uint64_t inv = ckks_inv_mod (ckks_barrett_reduce_128 (ctx->params.moduli[j], mi), mi);
        ctx->garner[i][j] = inv;
        ctx->garner_shoup[i][j] = ckks_shoup_precompute (inv, mi->q);
      }
}

/* Sets ctx->k for @backend: AUTO picks IFMA, then AVX2, then scalar; the
 * SIMD NTT and product kernels need every prime below 2^50 (lazy values
 * below 4q < 2^52 for IFMA52, exact doubles for AVX2). The AVX2 backend
 * also takes the AVX2 encode/decode kernels. An explicit SIMD backend the
 * CPU or the primes do not allow is CKKS_ERR_UNSUPPORTED. */
static CkksStatus
select_kernels (CkksContext *ctx, CkksBackend backend)
{
  const CkksParams *params = &ctx->params;
  ckks_kernels_scalar (&ctx->k);
  bool small_primes = true;
  for (uint32_t i = 0; i < params->n_moduli; i++)
    small_primes = small_primes && params->moduli[i] < ((uint64_t) 1 << 50);
  switch (backend)
    {
    case CKKS_BACKEND_SCALAR:
      return CKKS_OK;
    case CKKS_BACKEND_AUTO:
      if (small_primes && ckks_kernels_ifma (&ctx->k))
        return CKKS_OK;
      if (small_primes)
        ckks_kernels_avx2 (&ctx->k);
      /* the encode/decode kernels have AVX2 versions for any primes; they
       * are bit-identical to the scalar ones and keep the NTT's word form,
       * so with larger primes the backend (and its name) stays scalar */
      ckks_kernels_avx2_encode (&ctx->k);
      return CKKS_OK;
    case CKKS_BACKEND_IFMA:
      return small_primes && ckks_kernels_ifma (&ctx->k) ? CKKS_OK : CKKS_ERR_UNSUPPORTED;
    case CKKS_BACKEND_AVX2:
      if (!small_primes || !ckks_kernels_avx2 (&ctx->k))
        return CKKS_ERR_UNSUPPORTED;
      ckks_kernels_avx2_encode (&ctx->k);
      return CKKS_OK;
    default:
      return CKKS_ERR_INVALID_ARGUMENT;
    }
}

const char *
ckks_cpu_backend_name (void)
{
  CkksKernels k;
  ckks_kernels_scalar (&k);
  /* each leaves the table untouched when the CPU lacks its instructions */
  if (!ckks_kernels_ifma (&k))
    ckks_kernels_avx2 (&k);
  return k.name;
}

CkksStatus
ckks_context_new_with_backend (const CkksParams *params, CkksBackend backend,
                               CkksContext **out)
{
  if (!out)
    return CKKS_ERR_INVALID_ARGUMENT;
  *out = NULL;
  CkksStatus st = ckks_params_validate (params);
  if (st != CKKS_OK)
    return st;
  CkksContext *ctx = ckks_alloc0 (sizeof *ctx);
  if (!ctx)
    return CKKS_ERR_NO_MEMORY;
  ctx->params = *params;
  ctx->n = (size_t) 1 << params->log_n;
  ctx->slots = ctx->n / 2;
  st = select_kernels (ctx, backend);
  for (uint32_t i = 0; i < params->n_moduli && st == CKKS_OK; i++)
    st = ckks_ntt_tables_init (&ctx->ntt[i], params->moduli[i], ctx->n, &ctx->k);
  if (st == CKKS_OK)
    st = init_fft_tables (ctx);
  if (st != CKKS_OK)
    {
      ckks_context_free (ctx);
      return st;
    }
  init_crt_constants (ctx);
  if (params->n_moduli >= 2)
    ckks_crt2_init (&ctx->crt2, params->moduli[0], params->moduli[1]);
  ckks_params_fingerprint (params, ctx->fingerprint);
  *out = ctx;
  return CKKS_OK;
}

CkksStatus
ckks_context_new (const CkksParams *params, CkksContext **out)
{
  return ckks_context_new_with_backend (params, CKKS_BACKEND_AUTO, out);
}

void
ckks_context_free (CkksContext *ctx)
{
  if (!ctx)
    return;
  for (uint32_t i = 0; i < CKKS_MAX_MODULI; i++)
    ckks_ntt_tables_clear (&ctx->ntt[i]);
  ckks_free (ctx->fft_re);
  ckks_free (ctx->fft_im);
  ckks_free (ctx->slot_bitrev);
  ckks_free (ctx);
}

const CkksParams *
ckks_context_params (const CkksContext *ctx)
{
  return &ctx->params;
}

size_t
ckks_context_ring_degree (const CkksContext *ctx)
{
  return ctx->n;
}

size_t
ckks_context_slots (const CkksContext *ctx)
{
  return ctx->slots;
}

const char *
ckks_context_backend_name (const CkksContext *ctx)
{
  return ctx->k.name;
}

const uint8_t *
ckks_context_fingerprint (const CkksContext *ctx)
{
  return ctx->fingerprint;
}

CkksStatus
ckks_ntt_forward_limb (const CkksContext *ctx, uint32_t limb, uint64_t *values)
{
  if (!ctx || !values || limb >= ctx->params.n_moduli)
    return CKKS_ERR_INVALID_ARGUMENT;
  ctx->k.ntt_forward (values, &ctx->ntt[limb], ctx->n);
  return CKKS_OK;
}

CkksStatus
ckks_ntt_inverse_limb (const CkksContext *ctx, uint32_t limb, uint64_t *values)
{
  if (!ctx || !values || limb >= ctx->params.n_moduli)
    return CKKS_ERR_INVALID_ARGUMENT;
  ctx->k.ntt_inverse (values, &ctx->ntt[limb], ctx->n);
  return CKKS_OK;
}
