/* ckks-privacy.c: masks, flooding and DP noise for adapter-private HE-LoRA results.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ckks-privacy.h"

#include <math.h>
#include <string.h>
#include <openssl/rand.h>

#include "ckks-helora-private.h"
#include "ckks-keys.h"
#include "ckks-modarith.h"
#include "ckks-prng.h"

/* The CBD(21) error bound times sqrt(N) times the plaintext slot bound
 * (A's scale: 2^48 for plain layouts, 2^24 for private ones). */
static double
log2_comp_bound (const CkksHeloraLayout *l)
{
  return log2 (21.0 * sqrt ((double) l->ctx->n)) + (double) l->pt_bits;
}

static double
log2_modulus (const CkksHeloraLayout *l)
{
  double bits = 0.0;
  for (uint32_t i = 0; i < l->limbs; i++)
    bits += log2 ((double) l->ctx->ntt[i].mod.q);
  return bits;
}

double
ckks_privacy_flood_bits (const CkksHeloraLayout *layout, unsigned lambda_s)
{
  if (layout == NULL)
    return 0.0;
  return lambda_s == 0 ? 0.0 : ceil (lambda_s + log2_comp_bound (layout));
}

/* Whether the layout holds a flood of 2^f: it stays CKKS_PRIVACY_MARGIN_BITS
 * below the result's scale (past that the error of u reaches several
 * percent of max|u|, see docs/security.md), and a full-scale result plus
 * the flood stays below q/2. */
static bool
flood_fits (const CkksHeloraLayout *l, double f)
{
  return f <= (double) (CKKS_HELORA_RESULT_BITS - CKKS_PRIVACY_MARGIN_BITS)
         && log2 (ldexp (1.0, (int) f) + ldexp (1.0, CKKS_HELORA_RESULT_BITS + 1))
            < log2_modulus (l) - 1.0;
}

unsigned
ckks_privacy_max_lambda (const CkksHeloraLayout *layout)
{
  if (layout == NULL)
    return 0;
  unsigned lambda = CKKS_PRIVACY_MAX_LAMBDA;
  while (lambda > 0 && !flood_fits (layout, ckks_privacy_flood_bits (layout, lambda)))
    lambda--;
  return lambda;
}

double
ckks_privacy_flood_stddev (const CkksHeloraLayout *l, unsigned lambda_s, double result_scale)
{
  if (l == NULL || lambda_s == 0 || !(result_scale > 0.0))
    return 0.0;
  size_t g = 2 * l->copies;
  double worst = 0.0;
  for (size_t t = 0; t < l->copies; t++)
    {
      double sum = 0.0, rot = 1.0;     /* 5^t mod 2N, as the slot order uses */
      for (size_t k = 0; k < t; k++)
        rot = fmod (rot * 5.0, 2.0 * (double) l->ctx->n);
      for (size_t kappa = 0; kappa < g; kappa++)
        {
          double c = cos (M_PI * rot * (double) (l->span * kappa) / (double) l->ctx->n);
          sum += c * c;
        }
      worst = fmax (worst, sum);
    }
  double f = ckks_privacy_flood_bits (l, lambda_s);
  return (double) l->span / result_scale * ldexp (1.0, (int) f) / sqrt (3.0) * sqrt (worst);
}

/* c0 += a polynomial with coefficients uniform in [-2^f, 2^f) (f < 126). */
static CkksStatus
add_flood (const CkksHeloraLayout *l, CkksCiphertext *ct, int f)
{
  const CkksContext *ctx = l->ctx;
  size_t n = ctx->n;
  unsigned __int128 *x = ckks_alloc (n * sizeof *x);
  uint64_t *limb = ckks_alloc (n * sizeof (uint64_t));
  CkksPrng prng;
  CkksStatus st = x && limb ? ckks_prng_init_random (&prng) : CKKS_ERR_NO_MEMORY;
  if (st == CKKS_OK)
    {
      st = ckks_prng_bytes (&prng, x, n * sizeof *x);
      ckks_prng_clear (&prng);
    }
  unsigned __int128 mask = ((unsigned __int128) 1 << (f + 1)) - 1;
  unsigned __int128 offset = (unsigned __int128) 1 << f;
  for (uint32_t i = 0; st == CKKS_OK && i < ct->n_limbs; i++)
    {
      uint64_t q = ctx->ntt[i].mod.q, off = (uint64_t) (offset % q);
      for (size_t k = 0; k < n; k++)
        limb[k] = ckks_sub_mod ((uint64_t) ((x[k] & mask) % q), off, q);
      st = ckks_ntt_forward_limb (ctx, i, limb);
      uint64_t *c0 = ct->c0 + (size_t) i * n;
      for (size_t k = 0; st == CKKS_OK && k < n; k++)
        c0[k] = ckks_add_mod (c0[k], limb[k], q);
    }
  if (x)
    OPENSSL_cleanse (x, n * sizeof *x);
  ckks_free (x);
  ckks_free (limb);
  return st;
}

CkksStatus
ckks_privacy_zero_new (const CkksHeloraLayout *l, const CkksPublicKey *pk, unsigned lambda_s,
                       CkksCiphertext **out)
{
  if (l == NULL || pk == NULL || out == NULL || lambda_s > CKKS_PRIVACY_MAX_LAMBDA)
    return CKKS_ERR_INVALID_ARGUMENT;
  *out = NULL;
  double f = ckks_privacy_flood_bits (l, lambda_s);
  if (lambda_s > ckks_privacy_max_lambda (l))
    return CKKS_ERR_SCALE;
  CkksCiphertext *ct = NULL;
  CkksStatus st = ckks_ciphertext_new (l->ctx, l->limbs, &ct);
  double zero = 0.0;
  if (st == CKKS_OK)
    st = ckks_encrypt_values_pk (pk, &zero, NULL, 1, 1.0, ct);
  if (st == CKKS_OK && lambda_s > 0)
    st = add_flood (l, ct, (int) f);
  if (st != CKKS_OK)
    {
      ckks_ciphertext_free (ct);
      return st;
    }
  *out = ct;
  return CKKS_OK;
}

CkksStatus
ckks_privacy_add_zero (CkksCiphertext *result, const CkksCiphertext *zero)
{
  if (result == NULL || zero == NULL || result->ctx != zero->ctx ||
      result->n_limbs != zero->n_limbs || result->trace_only || zero->trace_only)
    return CKKS_ERR_MISMATCH;
  size_t n = result->ctx->n;
  for (uint32_t i = 0; i < result->n_limbs; i++)
    {
      uint64_t q = result->ctx->ntt[i].mod.q;
      uint64_t *c0 = result->c0 + (size_t) i * n, *c1 = result->c1 + (size_t) i * n;
      const uint64_t *z0 = zero->c0 + (size_t) i * n, *z1 = zero->c1 + (size_t) i * n;
      for (size_t k = 0; k < n; k++)
        {
          c0[k] = ckks_add_mod (c0[k], z0[k], q);
          c1[k] = ckks_add_mod (c1[k], z1[k], q);
        }
    }
  result->seeded = false;    /* c1 is no longer the expansion of a seed */
  return CKKS_OK;
}

/* @compact_ok: whether trace-only (compact) results are accepted. */
static CkksStatus
check_outputs (const CkksHeloraLayout *l, CkksCiphertext *const *outputs, size_t n_outputs,
               bool compact_ok)
{
  if (l == NULL || outputs == NULL || n_outputs != l->n_outputs)
    return CKKS_ERR_INVALID_ARGUMENT;
  for (size_t b = 0; b < n_outputs; b++)
    if (outputs[b] == NULL || outputs[b]->ctx != l->ctx || outputs[b]->n_limbs != l->limbs ||
        (outputs[b]->trace_only && !compact_ok))
      return CKKS_ERR_MISMATCH;
  return CKKS_OK;
}

/* c0 += a uniform polynomial (NTT values) whose 2c blocks each sum to 0. */
static CkksStatus
mask_one (const CkksHeloraLayout *l, CkksCiphertext *ct, CkksPrng *prng, uint64_t *m)
{
  size_t n = l->ctx->n, g = 2 * l->copies;
  CkksStatus st = CKKS_OK;
  for (uint32_t i = 0; st == CKKS_OK && i < ct->n_limbs; i++)
    {
      uint64_t q = l->ctx->ntt[i].mod.q;
      st = ckks_sample_uniform_mod (prng, q, m, n);
      /* the last value of each block balances it */
      for (size_t beta = 0; st == CKKS_OK && beta < g; beta++)
        {
          uint64_t *blk = m + beta * l->span, sum = 0;
          for (size_t k = 0; k + 1 < l->span; k++)
            sum = ckks_add_mod (sum, blk[k], q);
          blk[l->span - 1] = ckks_neg_mod (sum, q);
        }
      uint64_t *c0 = ct->c0 + (size_t) i * n;
      for (size_t k = 0; st == CKKS_OK && k < n; k++)
        c0[k] = ckks_add_mod (c0[k], m[k], q);
    }
  return st;
}

/* Runs mask_one on @count ciphertexts with one CSPRNG stream. */
static CkksStatus
mask_all (const CkksHeloraLayout *l, CkksCiphertext *const *cts, size_t count)
{
  if (l->trace_w == NULL)
    return CKKS_ERR_UNSUPPORTED;
  uint64_t *m = ckks_alloc (l->ctx->n * sizeof (uint64_t));
  CkksPrng prng;
  CkksStatus st = m ? ckks_prng_init_random (&prng) : CKKS_ERR_NO_MEMORY;
  if (st != CKKS_OK)
    {
      ckks_free (m);
      return st;
    }
  for (size_t b = 0; st == CKKS_OK && b < count; b++)
    st = mask_one (l, cts[b], &prng, m);
  ckks_prng_clear (&prng);
  OPENSSL_cleanse (m, l->ctx->n * sizeof (uint64_t));
  ckks_free (m);
  return st;
}

CkksStatus
ckks_privacy_mask (const CkksHeloraLayout *l, CkksCiphertext *const *outputs, size_t n_outputs)
{
  CkksStatus st = check_outputs (l, outputs, n_outputs, false);
  return st != CKKS_OK ? st : mask_all (l, outputs, n_outputs);
}

/* The NTT value, per block, of the polynomial sum_kappa m_kappa X^(L' kappa)
 * whose segment sums (real parts) are @noise (c values) at @scale: m from
 * the orthogonality of the trace cosines, sum_kappa cos_t cos_t' = c
 * delta_tt' (the client's own table, so both sides agree on the slot
 * order). */
static void
noise_block_values (const CkksHeloraLayout *l, uint32_t limb, const double *noise, double scale,
                    uint64_t *values)
{
  size_t g = 2 * l->copies;
  const CkksModulus *mod = &l->ctx->ntt[limb].mod;
  uint64_t m[2 * CKKS_HELORA_MAX_TRACE_COPIES];
  for (size_t kappa = 0; kappa < g; kappa++)
    {
      double x = 0.0;
      for (size_t t = 0; t < l->copies; t++)
        x += noise[t] * l->trace_re[t * g + kappa];
      __int128 v = (__int128) nearbyint (x * scale / ((double) l->span * (double) l->copies));
      __int128 r = v % (__int128) mod->q;
      m[kappa] = (uint64_t) (r < 0 ? r + (__int128) mod->q : r);
    }
  ckks_helora_trace_block_values (l, limb, m, values);
}

/* A compact (trace-only) result keeps each block's NTT sum in the block's
 * first value: it takes the block sums of the pad's c0 (its mask sums to
 * zero, so only the flooded zero remains) and L' times the noise value. */
static void
apply_compact_c0 (const CkksHeloraLayout *l, uint64_t *c0, const uint64_t *p0,
                  const uint64_t *values, const CkksModulus *mod)
{
  size_t g = 2 * l->copies;
  uint64_t sums[2 * CKKS_HELORA_MAX_TRACE_COPIES] = { 0 };
  if (p0 != NULL)
    ckks_block_sums (p0, g, l->span, mod, sums);
  uint64_t span = (uint64_t) (l->span % mod->q);
  for (size_t beta = 0; beta < g; beta++)
    c0[beta * l->span] = ckks_add_mod (c0[beta * l->span],
                                       ckks_add_mod (sums[beta],
                                                     ckks_mul_mod (values[beta], span, mod),
                                                     mod->q), mod->q);
}

/* c0 (+)= pad.c0 + noise block values, c1 += pad.c1, in one pass (pad or
 * noise may be NULL). */
static void
apply_one (const CkksHeloraLayout *l, CkksCiphertext *ct, const CkksCiphertext *pad,
           const double *noise)
{
  size_t n = l->ctx->n, g = 2 * l->copies;
  uint64_t values[2 * CKKS_HELORA_MAX_TRACE_COPIES] = { 0 };
  for (uint32_t i = 0; i < ct->n_limbs; i++)
    {
      const CkksModulus *mod = &l->ctx->ntt[i].mod;
      uint64_t q = mod->q;
      if (noise != NULL)
        noise_block_values (l, i, noise, ct->scale, values);
      uint64_t *c0 = ct->c0 + (size_t) i * n, *c1 = ct->c1 + (size_t) i * n;
      const uint64_t *p0 = pad ? pad->c0 + (size_t) i * n : NULL;
      const uint64_t *p1 = pad ? pad->c1 + (size_t) i * n : NULL;
      if (ct->trace_only)
        {
          apply_compact_c0 (l, c0, p0, values, mod);
          for (size_t k = 0; p1 && k < n; k++)
            c1[k] = ckks_add_mod (c1[k], p1[k], q);
          continue;
        }
      for (size_t beta = 0; beta < g; beta++)
        {
          size_t from = beta * l->span, to = from + l->span;
          for (size_t k = from; p0 && k < to; k++)
            {
              c0[k] = ckks_add_mod (c0[k], ckks_add_mod (p0[k], values[beta], q), q);
              c1[k] = ckks_add_mod (c1[k], p1[k], q);
            }
          for (size_t k = from; !p0 && k < to; k++)
            c0[k] = ckks_add_mod (c0[k], values[beta], q);
        }
    }
  if (pad != NULL)
    ct->seeded = false;
}

CkksStatus
ckks_privacy_pad_new (const CkksHeloraLayout *l, const CkksPublicKey *pk, unsigned lambda_s,
                      CkksCiphertext **out)
{
  CkksStatus st = ckks_privacy_zero_new (l, pk, lambda_s, out);
  if (st == CKKS_OK && (st = mask_all (l, out, 1)) != CKKS_OK)
    {
      ckks_ciphertext_free (*out);
      *out = NULL;
    }
  return st;
}

CkksStatus
ckks_privacy_pad_compact (const CkksHeloraLayout *l, CkksCiphertext *pad)
{
  if (l == NULL || pad == NULL)
    return CKKS_ERR_INVALID_ARGUMENT;
  if (pad->ctx != l->ctx || pad->n_limbs != l->limbs)
    return CKKS_ERR_MISMATCH;
  if (l->trace_w == NULL)
    return CKKS_ERR_UNSUPPORTED;
  if (pad->trace_only)
    return CKKS_OK;
  size_t n = l->ctx->n, g = 2 * l->copies;
  uint64_t sums[2 * CKKS_HELORA_MAX_TRACE_COPIES];
  for (uint32_t i = 0; i < pad->n_limbs; i++)
    {
      uint64_t *c0 = pad->c0 + (size_t) i * n;
      ckks_block_sums (c0, g, l->span, &l->ctx->ntt[i].mod, sums);
      OPENSSL_cleanse (c0, n * sizeof (uint64_t));
      for (size_t beta = 0; beta < g; beta++)
        c0[beta * l->span] = sums[beta];
    }
  pad->trace_only = true;
  return CKKS_OK;
}

CkksStatus
ckks_privacy_apply (const CkksHeloraLayout *l, CkksCiphertext *const *outputs, size_t n_outputs,
                    CkksCiphertext *const *pads, const double *noise)
{
  CkksStatus st = check_outputs (l, outputs, n_outputs, true);
  if (st != CKKS_OK)
    return st;
  if (l->trace_w == NULL)
    return CKKS_ERR_UNSUPPORTED;
  /* a compact pad has no mask: never on a full result, which would then
   * show every product */
  for (size_t b = 0; pads && b < n_outputs; b++)
    if (pads[b] == NULL || pads[b]->ctx != l->ctx || pads[b]->n_limbs != l->limbs
        || (pads[b]->trace_only && !outputs[b]->trace_only))
      return CKKS_ERR_MISMATCH;
  for (size_t r = 0; noise && r < l->r; r++)
    if (!isfinite (noise[r]))
      return CKKS_ERR_INVALID_ARGUMENT;
  double *row_noise = NULL;
  if (noise != NULL && (row_noise = ckks_alloc0 (l->copies * sizeof (double))) == NULL)
    return CKKS_ERR_NO_MEMORY;
  for (size_t b = 0; b < n_outputs; b++)
    {
      for (size_t t = 0; row_noise && t < l->copies; t++)
        row_noise[t] = b * l->copies + t < l->r ? noise[b * l->copies + t] : 0.0;
      apply_one (l, outputs[b], pads ? pads[b] : NULL, row_noise);
    }
  ckks_free (row_noise);
  return CKKS_OK;
}

/* The noise of a masked result goes into the first value of each block
 * only (L' times the block's value): the block sums, so the segment sums,
 * are those of ckks_privacy_apply, and the difference from spreading it
 * over the block is a polynomial with zero block sums, which the uniform
 * zero-sum mask already in the result absorbs (same distribution). O(2c)
 * per limb instead of a pass over c0. */
CkksStatus
ckks_privacy_add_noise_masked (const CkksHeloraLayout *l, CkksCiphertext *const *outputs,
                               size_t n_outputs, const double *noise)
{
  CkksStatus st = check_outputs (l, outputs, n_outputs, true);
  if (st != CKKS_OK)
    return st;
  if (noise == NULL)
    return CKKS_ERR_INVALID_ARGUMENT;
  if (l->trace_w == NULL)
    return CKKS_ERR_UNSUPPORTED;
  for (size_t r = 0; r < l->r; r++)
    if (!isfinite (noise[r]))
      return CKKS_ERR_INVALID_ARGUMENT;
  double row_noise[CKKS_HELORA_MAX_TRACE_COPIES];
  uint64_t values[2 * CKKS_HELORA_MAX_TRACE_COPIES];
  for (size_t b = 0; b < n_outputs; b++)
    {
      CkksCiphertext *ct = outputs[b];
      for (size_t t = 0; t < l->copies; t++)
        row_noise[t] = b * l->copies + t < l->r ? noise[b * l->copies + t] : 0.0;
      for (uint32_t i = 0; i < ct->n_limbs; i++)
        {
          const CkksModulus *mod = &l->ctx->ntt[i].mod;
          noise_block_values (l, i, row_noise, ct->scale, values);
          apply_compact_c0 (l, ct->c0 + (size_t) i * l->ctx->n, NULL, values, mod);
        }
    }
  return CKKS_OK;
}

CkksStatus
ckks_privacy_add_segment_noise (const CkksHeloraLayout *l, CkksCiphertext *const *outputs,
                                size_t n_outputs, const double *noise)
{
  if (noise == NULL)
    return CKKS_ERR_INVALID_ARGUMENT;
  return ckks_privacy_apply (l, outputs, n_outputs, NULL, noise);
}

CkksStatus
ckks_privacy_gaussian (double sigma, double *out, size_t n)
{
  if (out == NULL || !(sigma >= 0.0) || !isfinite (sigma))
    return CKKS_ERR_INVALID_ARGUMENT;
  for (size_t i = 0; i < n; i += 2)
    {
      uint64_t r[2];
      if (RAND_priv_bytes ((unsigned char *) r, sizeof r) != 1)
        return CKKS_ERR_RANDOM;
      double u1 = ((double) (r[0] >> 11) + 1.0) * 0x1p-53;   /* (0, 1] */
      double u2 = (double) (r[1] >> 11) * 0x1p-53;
      double rad = sigma * sqrt (-2.0 * log (u1));
      out[i] = rad * cos (2.0 * M_PI * u2);
      if (i + 1 < n)
        out[i + 1] = rad * sin (2.0 * M_PI * u2);
    }
  return CKKS_OK;
}
