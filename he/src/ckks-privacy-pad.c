/* ckks-privacy-pad.c: compact pads made directly, for compact (trace-only) results.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A compact result carries c1 in full and c0 only as its 2c NTT block sums,
 * so a pad for it needs no more: the block sums of NTT(p) depend only on
 * p's coefficients at multiples of L' (ckks-helora-private.h, trace_x), so
 * e0 and the flood are drawn there only (2c values, no NTT), the zero-sum
 * mask is not needed at all (it only changes what a compact result never
 * holds), and b u is only summed per block. What is left per limb: the
 * NTTs of u and e1. */
#include "ckks-privacy-pad.h"

#include <openssl/crypto.h>

#include "ckks-privacy.h"
#include "ckks-prng.h"

static uint64_t
reduce_i128 (ckks_i128 v, uint64_t q)
{
  ckks_i128 r = v % (ckks_i128) q;
  return (uint64_t) (r < 0 ? r + (ckks_i128) q : r);
}

void
ckks_privacy_compact_pad_from (const CkksHeloraLayout *l, const CkksPublicKey *pk,
                               const CkksPadDraws *draws, CkksCiphertext *pad,
                               uint64_t *scratch)
{
  const CkksContext *ctx = l->ctx;
  size_t n = ctx->n, g = 2 * l->copies;
  uint64_t *u_ntt = scratch, *bu = scratch + n;
  for (uint32_t i = 0; i < l->limbs; i++)
    {
      const CkksNttTables *t = &ctx->ntt[i];
      uint64_t q = t->mod.q, *c0 = pad->c0 + (size_t) i * n, *c1 = pad->c1 + (size_t) i * n;
      ctx->k.lift_small (u_ntt, draws->u, q, n);
      ctx->k.lift_small (c1, draws->e1, q, n);
      ctx->k.ntt_forward (u_ntt, t, n);
      ctx->k.ntt_forward (c1, t, n);
      ctx->k.mul_fixed_add (c1, c1, u_ntt, CKKS_FIXED_W (&pk->a_fixed, i, n),
                            CKKS_FIXED_C (&pk->a_fixed, i, n), q, n);
      ctx->k.mul_fixed (bu, u_ntt, CKKS_FIXED_W (&pk->b_fixed, i, n),
                        CKKS_FIXED_C (&pk->b_fixed, i, n), q, n);
      uint64_t sums[2 * CKKS_HELORA_MAX_TRACE_COPIES], m[2 * CKKS_HELORA_MAX_TRACE_COPIES];
      uint64_t values[2 * CKKS_HELORA_MAX_TRACE_COPIES];
      ckks_block_sums (bu, g, l->span, &t->mod, sums);
      for (size_t kappa = 0; kappa < g; kappa++)
        m[kappa] = reduce_i128 (draws->trace[kappa], q);
      ckks_helora_trace_block_values (l, i, m, values);
      uint64_t span = l->span % q;
      for (size_t beta = 0; beta < g; beta++)
        c0[beta * l->span] = ckks_add_mod (sums[beta], ckks_mul_mod (values[beta], span, &t->mod),
                                           q);
      /* all three would give the flood or u away */
      OPENSSL_cleanse (m, sizeof m);
      OPENSSL_cleanse (values, sizeof values);
      OPENSSL_cleanse (sums, sizeof sums);
    }
  pad->n_limbs = l->limbs;
  pad->scale = 1.0;
  pad->seeded = false;
  pad->trace_only = true;
}

/* e0 (CBD(21)) plus a flood uniform in [-2^f, 2^f) (f < 126; none for
 * f = 0) at the 2c trace coefficients. */
static CkksStatus
draw_trace (CkksPrng *prng, size_t g, int f, ckks_i128 *trace)
{
  int8_t e0[2 * CKKS_HELORA_MAX_TRACE_COPIES];
  ckks_u128 x[2 * CKKS_HELORA_MAX_TRACE_COPIES];
  CkksStatus st = ckks_sample_cbd (prng, e0, g);
  if (st == CKKS_OK && f > 0)
    st = ckks_prng_bytes (prng, x, g * sizeof x[0]);
  ckks_u128 mask = ((ckks_u128) 1 << (f + 1)) - 1;
  for (size_t k = 0; st == CKKS_OK && k < g; k++)
    trace[k] = e0[k] + (f > 0 ? (ckks_i128) (x[k] & mask) - ((ckks_i128) 1 << f) : 0);
  OPENSSL_cleanse (e0, sizeof e0);
  OPENSSL_cleanse (x, sizeof x);
  return st;
}

CkksStatus
ckks_privacy_compact_pad_new (const CkksHeloraLayout *l, const CkksPublicKey *pk,
                              unsigned lambda_s, CkksCiphertext **out)
{
  if (l == NULL || pk == NULL || out == NULL || lambda_s > CKKS_PRIVACY_MAX_LAMBDA)
    return CKKS_ERR_INVALID_ARGUMENT;
  *out = NULL;
  if (pk->ctx != l->ctx)
    return CKKS_ERR_MISMATCH;
  if (l->trace_w == NULL)
    return CKKS_ERR_UNSUPPORTED;
  if (lambda_s > ckks_privacy_max_lambda (l))
    return CKKS_ERR_SCALE;
  size_t n = l->ctx->n, g = 2 * l->copies;
  int8_t *small = ckks_alloc (2 * n);
  uint64_t *scratch = ckks_alloc (2 * n * sizeof (uint64_t));
  ckks_i128 trace[2 * CKKS_HELORA_MAX_TRACE_COPIES];
  CkksCiphertext *pad = NULL;
  CkksPrng prng;
  CkksStatus st = small && scratch ? ckks_ciphertext_new (l->ctx, l->limbs, &pad)
                                   : CKKS_ERR_NO_MEMORY;
  if (st == CKKS_OK && (st = ckks_prng_init_random (&prng)) == CKKS_OK)
    {
      st = ckks_sample_ternary (&prng, small, n);
      if (st == CKKS_OK)
        st = ckks_sample_cbd (&prng, small + n, n);
      if (st == CKKS_OK)
        st = draw_trace (&prng, g, (int) ckks_privacy_flood_bits (l, lambda_s), trace);
      ckks_prng_clear (&prng);
    }
  if (st == CKKS_OK)
    {
      CkksPadDraws draws = { .u = small, .e1 = small + n, .trace = trace };
      ckks_privacy_compact_pad_from (l, pk, &draws, pad, scratch);
    }
  /* u and the errors would undo the re-randomisation: wiped */
  if (small)
    OPENSSL_cleanse (small, 2 * n);
  if (scratch)
    OPENSSL_cleanse (scratch, 2 * n * sizeof (uint64_t));
  OPENSSL_cleanse (trace, sizeof trace);
  ckks_free (small);
  ckks_free (scratch);
  if (st != CKKS_OK)
    {
      ckks_ciphertext_free (pad);
      return st;
    }
  *out = pad;
  return CKKS_OK;
}
