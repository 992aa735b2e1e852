/* ckks-private.c: masks, flooding and DP noise for adapter-private HE-LoRA results.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ckks-private.h"

#include <math.h>
#include <string.h>
#include <openssl/rand.h>

#include "ckks-helora-private.h"
#include "ckks-keys.h"
#include "ckks-modarith.h"
#include "ckks-prng.h"

/* The CBD(21) error bound times sqrt(N) times the plaintext slot bound. */
static double
log2_comp_bound (const CkksHeloraLayout *l)
{
  return log2 (21.0 * sqrt ((double) l->ctx->n)) + log2 (CKKS_HELORA_PT_SCALE);
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
ckks_private_flood_bits (const CkksHeloraLayout *layout, unsigned lambda_s)
{
  if (layout == NULL)
    return 0.0;
  return lambda_s == 0 ? 0.0 : ceil (lambda_s + log2_comp_bound (layout));
}

double
ckks_private_flood_stddev (const CkksHeloraLayout *l, unsigned lambda_s, double result_scale)
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
  double f = ckks_private_flood_bits (l, lambda_s);
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
  CkksStatus st = x && limb ? CKKS_OK : CKKS_ERR_NO_MEMORY;
  if (st == CKKS_OK && RAND_priv_bytes ((unsigned char *) x, (int) (n * sizeof *x)) != 1)
    st = CKKS_ERR_RANDOM;
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
ckks_private_zero_new (const CkksHeloraLayout *l, const CkksPublicKey *pk, unsigned lambda_s,
                       CkksCiphertext **out)
{
  if (l == NULL || pk == NULL || out == NULL || lambda_s > 100)
    return CKKS_ERR_INVALID_ARGUMENT;
  *out = NULL;
  double f = ckks_private_flood_bits (l, lambda_s);
  /* the flood plus a full-scale result (2^96 times at most 2) must stay below q/2 */
  if (lambda_s > 0 && log2 (ldexp (1.0, (int) f) + 0x1p97) >= log2_modulus (l) - 1.0)
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
ckks_private_add_zero (CkksCiphertext *result, const CkksCiphertext *zero)
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

static CkksStatus
check_outputs (const CkksHeloraLayout *l, CkksCiphertext *const *outputs, size_t n_outputs)
{
  if (l == NULL || outputs == NULL || n_outputs != l->n_outputs)
    return CKKS_ERR_INVALID_ARGUMENT;
  for (size_t b = 0; b < n_outputs; b++)
    if (outputs[b] == NULL || outputs[b]->ctx != l->ctx || outputs[b]->n_limbs != l->limbs ||
        outputs[b]->trace_only)
      return CKKS_ERR_MISMATCH;
  return CKKS_OK;
}

CkksStatus
ckks_private_mask (const CkksHeloraLayout *l, CkksCiphertext *const *outputs, size_t n_outputs)
{
  CkksStatus st = check_outputs (l, outputs, n_outputs);
  if (st != CKKS_OK)
    return st;
  if (l->trace_w == NULL)
    return CKKS_ERR_UNSUPPORTED;
  size_t n = l->ctx->n, g = 2 * l->copies;
  uint64_t *m = ckks_alloc (n * sizeof (uint64_t));
  CkksPrng prng;
  st = m ? ckks_prng_init_random (&prng) : CKKS_ERR_NO_MEMORY;
  if (st != CKKS_OK)
    {
      ckks_free (m);
      return st;
    }
  for (size_t b = 0; st == CKKS_OK && b < n_outputs; b++)
    for (uint32_t i = 0; st == CKKS_OK && i < l->limbs; i++)
      {
        uint64_t q = l->ctx->ntt[i].mod.q;
        st = ckks_sample_uniform_mod (&prng, q, m, n);
        /* the last value of each block balances it: every block sums to 0 */
        for (size_t beta = 0; st == CKKS_OK && beta < g; beta++)
          {
            uint64_t *blk = m + beta * l->span, sum = 0;
            for (size_t k = 0; k + 1 < l->span; k++)
              sum = ckks_add_mod (sum, blk[k], q);
            blk[l->span - 1] = ckks_neg_mod (sum, q);
          }
        uint64_t *c0 = outputs[b]->c0 + (size_t) i * n;
        for (size_t k = 0; st == CKKS_OK && k < n; k++)
          c0[k] = ckks_add_mod (c0[k], m[k], q);
      }
  ckks_prng_clear (&prng);
  OPENSSL_cleanse (m, n * sizeof (uint64_t));
  ckks_free (m);
  return st;
}

/* c0 of @ct += the encoding of @slots at ct's own scale: encoded at
 * scale / F (F an integer near sqrt(scale)) so the coefficients fit 62 bits,
 * then multiplied by F in every limb. */
static CkksStatus
add_slots_at_scale (CkksCiphertext *ct, const double *slots, int64_t *coeffs, uint64_t *poly)
{
  const CkksContext *ctx = ct->ctx;
  size_t n = ctx->n;
  double f = nearbyint (sqrt (ct->scale));
  if (!(f >= 1.0) || f > 0x1p62)
    return CKKS_ERR_SCALE;
  CkksStatus st = ckks_encode_coeffs (ctx, slots, NULL, ctx->slots, ct->scale / f, coeffs);
  if (st != CKKS_OK)
    return st;
  ckks_coeffs_to_ntt (ctx, coeffs, ct->n_limbs, poly);
  for (uint32_t i = 0; i < ct->n_limbs; i++)
    {
      const CkksModulus *mod = &ctx->ntt[i].mod;
      uint64_t fq = (uint64_t) ((unsigned __int128) (uint64_t) f % mod->q);
      uint64_t *c0 = ct->c0 + (size_t) i * n, *p = poly + (size_t) i * n;
      for (size_t k = 0; k < n; k++)
        c0[k] = ckks_add_mod (c0[k], ckks_mul_mod (p[k], fq, mod), mod->q);
    }
  return CKKS_OK;
}

CkksStatus
ckks_private_add_segment_noise (const CkksHeloraLayout *l, CkksCiphertext *const *outputs,
                                size_t n_outputs, const double *noise)
{
  CkksStatus st = check_outputs (l, outputs, n_outputs);
  if (st != CKKS_OK)
    return st;
  if (noise == NULL)
    return CKKS_ERR_INVALID_ARGUMENT;
  const CkksContext *ctx = l->ctx;
  double *slots = ckks_alloc0 (ctx->slots * sizeof (double));
  int64_t *coeffs = ckks_alloc (ctx->n * sizeof (int64_t));
  uint64_t *poly = ckks_alloc ((size_t) l->limbs * ctx->n * sizeof (uint64_t));
  st = slots && coeffs && poly ? CKKS_OK : CKKS_ERR_NO_MEMORY;
  for (size_t b = 0; st == CKKS_OK && b < n_outputs; b++)
    {
      bool any = false;
      for (size_t t = 0; t < l->copies; t++)
        {
          size_t row = b * l->copies + t;
          double v = row < l->r ? noise[row] : 0.0;
          if (!isfinite (v))
            st = CKKS_ERR_INVALID_ARGUMENT;
          slots[ckks_helora_slot (l, t, 0)] = v;
          any = any || v != 0.0;
        }
      if (st == CKKS_OK && any)
        st = add_slots_at_scale (outputs[b], slots, coeffs, poly);
    }
  ckks_free (slots);
  ckks_free (coeffs);
  ckks_free (poly);
  return st;
}

CkksStatus
ckks_private_gaussian (double sigma, double *out, size_t n)
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
