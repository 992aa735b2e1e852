/* ckks-helora-plan.c: HE-LoRA layouts, plans and evaluation (evaluator side,
 * no secret-key code).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "ckks-helora-private.h"

struct CkksHeloraPlan {
  CkksHeloraLayout *layout;
  double scale;            /* 2^pt_bits / (max|A| K) */
  /* pt[b][k]: limbs * N values then limbs * N companions, NTT form */
  uint64_t *pts;
};

static size_t
bit_reverse_bits (size_t x, size_t count)
{
  size_t r = 0;
  for (size_t b = 1; b < count; b <<= 1, x >>= 1)
    r = (r << 1) | (x & 1);
  return r;
}

/* Tables of the trace decryption (see ckks-helora-private.h). Copy t fills
 * the coset 5^t H of H = {h = 1 mod 4c}, the subgroup of order L' of the
 * slot group: the sum of its slots only sees coefficients k = 0 mod L'. */
void
ckks_helora_trace_tables_fill (const CkksHeloraLayout *l, uint64_t *trace_w, double *trace_re,
                               uint64_t *trace_x)
{
  const CkksContext *ctx = l->ctx;
  size_t g = 2 * l->copies, n = ctx->n;
  for (uint32_t i = 0; i < l->limbs; i++)
    {
      const CkksNttTables *t = &ctx->ntt[i];
      uint64_t ipsi = t->ipsi_rev[n / 2];           /* psi^-1 */
      uint64_t step = ckks_pow_mod (ipsi, l->span, &t->mod);
      uint64_t xstep = ckks_pow_mod (t->psi_rev[n / 2], l->span, &t->mod);
      for (size_t beta = 0; beta < g; beta++)
        {
          uint64_t e = 2 * bit_reverse_bits (beta, g) + 1;
          if (trace_x)
            trace_x[i * g + beta] = ckks_pow_mod (xstep, e, &t->mod);
          uint64_t w = ckks_pow_mod (step, e, &t->mod), acc = t->n_inv;
          for (size_t kappa = 0; kappa < g; kappa++)
            {
              trace_w[(i * g + kappa) * g + beta] = acc;
              acc = ckks_mul_mod (acc, w, &t->mod);
            }
        }
    }
  uint64_t two_n = 2 * n, rot = 1;
  for (size_t t = 0; t < l->copies; t++)
    {
      for (size_t kappa = 0; kappa < g; kappa++)
        {
          uint64_t e = (rot * (l->span * kappa % two_n)) % two_n;
          trace_re[t * g + kappa] = cos (M_PI * (double) e / (double) n);
        }
      rot = rot * 5 % two_n;
    }
}

/* sin of the angles whose cos trace_re holds: the imaginary parts. */
static void
trace_im_fill (const CkksHeloraLayout *l, double *trace_im)
{
  size_t g = 2 * l->copies;
  uint64_t two_n = 2 * l->ctx->n, rot = 1;
  for (size_t t = 0; t < l->copies; t++)
    {
      for (size_t kappa = 0; kappa < g; kappa++)
        {
          uint64_t e = (rot * (l->span * kappa % two_n)) % two_n;
          trace_im[t * g + kappa] = sin (M_PI * (double) e / (double) l->ctx->n);
        }
      rot = rot * 5 % two_n;
    }
}

static CkksStatus
layout_trace_tables (CkksHeloraLayout *l)
{
  size_t g = 2 * l->copies;
  bool complex = l->packing == CKKS_HELORA_PACKING_COMPLEX;
  l->trace_w = ckks_alloc ((size_t) l->limbs * g * g * sizeof (uint64_t));
  l->trace_re = ckks_alloc (l->copies * g * sizeof (double));
  l->trace_x = ckks_alloc ((size_t) l->limbs * g * sizeof (uint64_t));
  l->trace_im = complex ? ckks_alloc (l->copies * g * sizeof (double)) : NULL;
  if (!l->trace_w || !l->trace_re || !l->trace_x || (complex && !l->trace_im))
    return CKKS_ERR_NO_MEMORY;
  ckks_helora_trace_tables_fill (l, l->trace_w, l->trace_re, l->trace_x);
  if (complex)
    trace_im_fill (l, l->trace_im);
  return CKKS_OK;
}

void
ckks_helora_trace_block_values (const CkksHeloraLayout *l, uint32_t limb, const uint64_t *m,
                                uint64_t *values)
{
  size_t g = 2 * l->copies;
  const CkksModulus *mod = &l->ctx->ntt[limb].mod;
  const uint64_t *x = l->trace_x + (size_t) limb * g;
  for (size_t beta = 0; beta < g; beta++)
    {
      uint64_t acc = m[g - 1];
      for (size_t kappa = g - 1; kappa-- > 0;)
        acc = ckks_add_mod (ckks_mul_mod (acc, x[beta], mod), m[kappa], mod->q);
      values[beta] = acc;
    }
}

CkksStatus
ckks_helora_layout_new (const CkksContext *ctx, size_t d, size_t r,
                        CkksHeloraLayout **out)
{
  return ckks_helora_layout_new_scaled (ctx, d, r, CKKS_HELORA_SCALES_PLAIN, out);
}

CkksStatus
ckks_helora_layout_new_scaled (const CkksContext *ctx, size_t d, size_t r,
                               CkksHeloraScales scales, CkksHeloraLayout **out)
{
  return ckks_helora_layout_new_packed (ctx, d, r, scales, CKKS_HELORA_PACKING_REAL, out);
}

CkksStatus
ckks_helora_layout_new_packed (const CkksContext *ctx, size_t d, size_t r,
                               CkksHeloraScales scales, CkksHeloraPacking packing,
                               CkksHeloraLayout **out)
{
  if (!ctx || !out || d == 0 || r == 0 || d > ((size_t) 1 << 24) || r > ((size_t) 1 << 16)
      || (scales != CKKS_HELORA_SCALES_PLAIN && scales != CKKS_HELORA_SCALES_PRIVACY)
      || (packing != CKKS_HELORA_PACKING_REAL && packing != CKKS_HELORA_PACKING_COMPLEX))
    return CKKS_ERR_INVALID_ARGUMENT;
  /* enough limbs for a 2^96 product with 3 bits of margin */
  uint32_t limbs = 0;
  double bits = 0;
  while (limbs < ctx->params.n_moduli && bits < 99.0)
    bits += log2 ((double) ctx->params.moduli[limbs++]);
  if (bits < 99.0)
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksHeloraLayout *l = ckks_alloc0 (sizeof *l);
  if (!l)
    return CKKS_ERR_NO_MEMORY;
  l->ctx = ctx;
  l->scales = scales;
  /* private: 24 bits move from A to h, so the evaluation's error e * p_A,
   * which the flood must cover, shrinks by 2^24 against the result */
  l->in_bits = scales == CKKS_HELORA_SCALES_PRIVACY ? 72 : 48;
  l->pt_bits = CKKS_HELORA_RESULT_BITS - l->in_bits;
  l->d = d;
  l->r = r;
  l->limbs = limbs;
  l->chunks = (d + ctx->slots - 1) / ctx->slots;
  l->chunk_len = (d + l->chunks - 1) / l->chunks;
  for (l->span = 1; l->span < l->chunk_len; l->span <<= 1)
    ;
  l->copies = ctx->slots / l->span;
  l->packing = packing;
  if (packing == CKKS_HELORA_PACKING_COMPLEX
      && (l->copies > CKKS_HELORA_MAX_TRACE_COPIES || scales != CKKS_HELORA_SCALES_PLAIN))
    {
      ckks_free (l);
      return CKKS_ERR_UNSUPPORTED;
    }
  l->rows_per_output = packing == CKKS_HELORA_PACKING_COMPLEX ? 2 * l->copies : l->copies;
  l->n_outputs = (r + l->rows_per_output - 1) / l->rows_per_output;
  if (l->copies <= CKKS_HELORA_MAX_TRACE_COPIES)
    {
      CkksStatus st = layout_trace_tables (l);
      if (st != CKKS_OK)
        {
          ckks_helora_layout_free (l);
          return st;
        }
    }
  *out = l;
  return CKKS_OK;
}

void
ckks_helora_layout_free (CkksHeloraLayout *layout)
{
  if (!layout)
    return;
  ckks_free (layout->trace_w);
  ckks_free (layout->trace_re);
  ckks_free (layout->trace_im);
  ckks_free (layout->trace_x);
  ckks_free (layout);
}

size_t ckks_helora_layout_d (const CkksHeloraLayout *l) { return l->d; }
CkksHeloraScales ckks_helora_layout_scales (const CkksHeloraLayout *l) { return l->scales; }
CkksHeloraPacking ckks_helora_layout_packing (const CkksHeloraLayout *l) { return l->packing; }
unsigned ckks_helora_layout_input_bits (const CkksHeloraLayout *l) { return l->in_bits; }
unsigned ckks_helora_layout_plain_bits (const CkksHeloraLayout *l) { return l->pt_bits; }
size_t ckks_helora_layout_r (const CkksHeloraLayout *l) { return l->r; }
size_t ckks_helora_layout_n_inputs (const CkksHeloraLayout *l) { return l->chunks; }
size_t ckks_helora_layout_n_outputs (const CkksHeloraLayout *l) { return l->n_outputs; }
size_t ckks_helora_layout_copies (const CkksHeloraLayout *l) { return l->copies; }
uint32_t ckks_helora_layout_limbs (const CkksHeloraLayout *l) { return l->limbs; }

CkksStatus
ckks_helora_ciphertexts_new (const CkksHeloraLayout *layout, size_t count,
                             CkksCiphertext ***out)
{
  if (!layout || !out || count == 0)
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksCiphertext **cts = ckks_alloc0 (count * sizeof *cts);
  if (!cts)
    return CKKS_ERR_NO_MEMORY;
  for (size_t i = 0; i < count; i++)
    {
      CkksStatus st = ckks_ciphertext_new (layout->ctx, layout->limbs, &cts[i]);
      if (st != CKKS_OK)
        {
          ckks_helora_ciphertexts_free (cts, count);
          return st;
        }
    }
  *out = cts;
  return CKKS_OK;
}

void
ckks_helora_ciphertexts_free (CkksCiphertext **cts, size_t count)
{
  if (!cts)
    return;
  for (size_t i = 0; i < count; i++)
    ckks_ciphertext_free (cts[i]);
  ckks_free (cts);
}

/* Per packed plaintext: limbs * N prepared values, then as many companions
 * when the backend uses them. */
static size_t
pt_words (const CkksHeloraLayout *l)
{
  return (l->ctx->k.fixed_has_companion ? 2 : 1) * (size_t) l->limbs * l->ctx->n;
}

/* Copy t of @slots gets row @row of A, columns of chunk k (rows past r
 * stay zero). */
static void
fill_copy (const CkksHeloraLayout *l, const float *a, size_t row, size_t t, size_t k,
           double *slots)
{
  if (row >= l->r)
    return;
  for (size_t j = 0; j < l->chunk_len && k * l->chunk_len + j < l->d; j++)
    slots[ckks_helora_slot (l, t, j)] = a[row * l->d + k * l->chunk_len + j];
}

/* Slots of pt[b][k]: copy t holds row b*c + t (real packing), or rows
 * 2bc + t and 2bc + c + t as real and imaginary parts (complex). */
static void
fill_plan_slots (const CkksHeloraLayout *l, const float *a, size_t b, size_t k,
                 double *re, double *im)
{
  size_t first = b * l->rows_per_output;
  memset (re, 0, l->ctx->slots * sizeof (double));
  if (im)
    memset (im, 0, l->ctx->slots * sizeof (double));
  for (size_t t = 0; t < l->copies; t++)
    {
      fill_copy (l, a, first + t, t, k, re);
      if (im)
        fill_copy (l, a, first + l->copies + t, t, k, im);
    }
}

static CkksStatus
encode_plan (CkksHeloraPlan *plan, const float *a)
{
  const CkksHeloraLayout *l = plan->layout;
  const CkksContext *ctx = l->ctx;
  size_t n = ctx->n, words = (size_t) l->limbs * n;
  bool complex = l->packing == CKKS_HELORA_PACKING_COMPLEX;
  double *slots = ckks_alloc (ctx->slots * sizeof (double));
  double *im = complex ? ckks_alloc (ctx->slots * sizeof (double)) : NULL;
  int64_t *coeffs = ckks_alloc (n * sizeof (int64_t));
  uint64_t *ntt = ckks_alloc (words * sizeof (uint64_t));
  CkksStatus st = slots && coeffs && ntt && (im || !complex) ? CKKS_OK : CKKS_ERR_NO_MEMORY;
  for (size_t b = 0; st == CKKS_OK && b < l->n_outputs; b++)
    for (size_t k = 0; st == CKKS_OK && k < l->chunks; k++)
      {
        uint64_t *pt = plan->pts + (b * l->chunks + k) * pt_words (l);
        fill_plan_slots (l, a, b, k, slots, im);
        st = ckks_encode_coeffs (ctx, slots, im, ctx->slots, plan->scale, coeffs);
        if (st != CKKS_OK)
          break;
        ckks_coeffs_to_ntt (ctx, coeffs, l->limbs, ntt);
        for (uint32_t i = 0; i < l->limbs; i++)
          ctx->k.fixed_prepare (pt + i * n, ctx->k.fixed_has_companion ? pt + words + i * n : NULL,
                                ntt + i * n, ctx->params.moduli[i], n);
      }
  ckks_free (slots);
  ckks_free (im);
  ckks_free (coeffs);
  ckks_free (ntt);
  return st;
}

CkksStatus
ckks_helora_plan_new (const CkksContext *ctx, size_t d, size_t r, const float *a,
                      CkksHeloraPlan **out)
{
  return ckks_helora_plan_new_scaled (ctx, d, r, a, CKKS_HELORA_SCALES_PLAIN, out);
}

CkksStatus
ckks_helora_plan_new_scaled (const CkksContext *ctx, size_t d, size_t r, const float *a,
                             CkksHeloraScales scales, CkksHeloraPlan **out)
{
  return ckks_helora_plan_new_packed (ctx, d, r, a, scales, CKKS_HELORA_PACKING_REAL, out);
}

CkksStatus
ckks_helora_plan_new_packed (const CkksContext *ctx, size_t d, size_t r, const float *a,
                             CkksHeloraScales scales, CkksHeloraPacking packing,
                             CkksHeloraPlan **out)
{
  if (!a || !out)
    return CKKS_ERR_INVALID_ARGUMENT;
  double amax = 0;
  for (size_t i = 0; i < r * d; i++)
    {
      if (!isfinite (a[i]))
        return CKKS_ERR_INVALID_ARGUMENT;
      amax = fmax (amax, fabs ((double) a[i]));
    }
  CkksHeloraPlan *plan = ckks_alloc0 (sizeof *plan);
  if (!plan)
    return CKKS_ERR_NO_MEMORY;
  CkksStatus st = ckks_helora_layout_new_packed (ctx, d, r, scales, packing, &plan->layout);
  if (st != CKKS_OK)
    {
      ckks_free (plan);
      return st;
    }
  const CkksHeloraLayout *l = plan->layout;
  /* a result slot sums K chunk products of at most 1 (normalised): divide
   * by K too, so every result coefficient stays below 2^96 */
  plan->scale = ldexp (1.0, (int) l->pt_bits) / ((amax > 0 ? amax : 1.0) * (double) l->chunks);
  /* a complex slot a + i a' is up to sqrt 2 max|A| in magnitude */
  if (l->packing == CKKS_HELORA_PACKING_COMPLEX)
    plan->scale *= M_SQRT1_2;
  plan->pts = ckks_alloc (l->n_outputs * l->chunks * pt_words (l) * sizeof (uint64_t));
  st = plan->pts ? encode_plan (plan, a) : CKKS_ERR_NO_MEMORY;
  if (st != CKKS_OK)
    {
      ckks_helora_plan_free (plan);
      return st;
    }
  *out = plan;
  return CKKS_OK;
}

void
ckks_helora_plan_free (CkksHeloraPlan *plan)
{
  if (!plan)
    return;
  ckks_helora_layout_free (plan->layout);
  ckks_free (plan->pts);
  ckks_free (plan);
}

const CkksHeloraLayout *
ckks_helora_plan_layout (const CkksHeloraPlan *plan)
{
  return plan->layout;
}

double
ckks_helora_plan_scale (const CkksHeloraPlan *plan)
{
  return plan->scale;
}

void
ckks_helora_plan_pt_values (const CkksHeloraPlan *plan, size_t b, size_t k, uint32_t limb,
                            uint64_t *out)
{
  const CkksHeloraLayout *l = plan->layout;
  const CkksContext *ctx = l->ctx;
  size_t n = ctx->n;
  const uint64_t *w = plan->pts + (b * l->chunks + k) * pt_words (l) + (size_t) limb * n;
  ctx->k.fixed_values (out, w, &ctx->ntt[limb].mod, n);
}

/* Inputs at the layout's scale only: an input made for another split would
 * push the result past the modulus. */
static CkksStatus
check_inputs (const CkksHeloraLayout *l, CkksCiphertext *const *inputs)
{
  double scale = ldexp (1.0, (int) l->in_bits);
  for (size_t k = 0; k < l->chunks; k++)
    {
      const CkksCiphertext *in = inputs[k];
      if (!in)
        return CKKS_ERR_INVALID_ARGUMENT;
      if (in->ctx != l->ctx || in->trace_only)
        return CKKS_ERR_MISMATCH;
      if (in->n_limbs < l->limbs)
        return CKKS_ERR_LEVEL;
      if (!ckks_same_scale (in->scale, scale))
        return CKKS_ERR_SCALE;
    }
  return CKKS_OK;
}

/* Full pads for both evaluations; compact (trace-only) pads for the
 * compact one only. */
static CkksStatus
check_pads (const CkksHeloraLayout *l, CkksCiphertext *const *pads, bool compact)
{
  for (size_t b = 0; pads && b < l->n_outputs; b++)
    {
      if (!pads[b])
        return CKKS_ERR_INVALID_ARGUMENT;
      if (pads[b]->ctx != l->ctx || pads[b]->n_limbs != l->limbs
          || (pads[b]->trace_only && !compact))
        return CKKS_ERR_MISMATCH;
    }
  return CKKS_OK;
}

/* Limb @i of a compact result from one input chunk and no full pad: c1 =
 * p1 + a1 w written out (a1 w without @p1), c0 only as the block sums of
 * a0 w, taken as the products are computed. Block by block, so that the
 * second pass over a block of the plaintext reads it from L1, not memory. */
static void
compact_one_chunk (const CkksContext *ctx, uint32_t i, const uint64_t *pt, size_t words,
                   const CkksCiphertext *in, const uint64_t *p1, uint64_t *o1, size_t g,
                   size_t span, uint64_t *sums)
{
  size_t n = ctx->n;
  const CkksModulus *m = &ctx->ntt[i].mod;
  const uint64_t *w = pt + i * n, *a0 = in->c0 + i * n, *a1 = in->c1 + i * n;
  const uint64_t *ws = ctx->k.fixed_has_companion ? pt + words + i * n : NULL;
  for (size_t beta = 0; beta <= g; beta++)
    {
      size_t off = beta * span, len = beta < g ? span : n - g * span;
      const uint64_t *ws_block = ws ? ws + off : NULL;
      if (len == 0)
        continue;
      if (beta < g)
        ctx->k.mul_fixed_block_sums (a0 + off, w + off, ws_block, m, 1, span, &sums[beta]);
      if (p1)
        ctx->k.mul_fixed_add (o1 + off, p1 + off, a1 + off, w + off, ws_block, m->q, len);
      else
        ctx->k.mul_fixed (o1 + off, a1 + off, w + off, ws_block, m->q, len);
    }
}

/* Every evaluation: full results, or (compact) c1 in full and c0 only as
 * its 2c NTT block sums, stored at the start of each block (the rest of c0
 * is left as it was: a trace-only ciphertext never reads it). With @pads,
 * pads[b] is the accumulator of the first chunk's product, so the results
 * come out as pad + products in the same pass that writes them. */
static CkksStatus
evaluate_part (const CkksHeloraPlan *plan, CkksCiphertext *const *inputs, size_t n_inputs,
               CkksCiphertext *const *outputs, size_t n_outputs, size_t first, size_t count,
               bool compact, CkksCiphertext *const *pads)
{
  if (!plan || !inputs || !outputs || n_inputs != plan->layout->chunks
      || n_outputs != plan->layout->n_outputs || first > n_outputs || count > n_outputs - first)
    return CKKS_ERR_INVALID_ARGUMENT;
  const CkksHeloraLayout *l = plan->layout;
  const CkksContext *ctx = l->ctx;
  if (compact && !l->trace_w)
    return CKKS_ERR_UNSUPPORTED;
  CkksStatus st = check_inputs (l, inputs);
  if (st == CKKS_OK)
    st = check_pads (l, pads, compact);
  for (size_t b = first; st == CKKS_OK && b < first + count; b++)
    if (!outputs[b] || outputs[b]->ctx != ctx || outputs[b]->capacity < l->limbs)
      st = outputs[b] ? CKKS_ERR_MISMATCH : CKKS_ERR_INVALID_ARGUMENT;
  if (st != CKKS_OK)
    return st;
  size_t n = ctx->n, words = (size_t) l->limbs * n, g = 2 * l->copies;
  uint64_t *scratch = compact ? ckks_alloc (n * sizeof (uint64_t)) : NULL;
  if (compact && !scratch)
    return CKKS_ERR_NO_MEMORY;
  for (size_t b = first; b < first + count; b++)
    {
      CkksCiphertext *out = outputs[b];
      for (uint32_t i = 0; i < l->limbs; i++)
        {
          uint64_t q = ctx->params.moduli[i];
          uint64_t *o0 = compact ? scratch : out->c0 + i * n, *o1 = out->c1 + i * n;
          /* a compact pad's c0 is its block sums: added to the sums below */
          const CkksCiphertext *pad = pads ? pads[b] : NULL;
          const uint64_t *p0 = pad && !pad->trace_only ? pad->c0 + i * n : NULL;
          const uint64_t *p1 = pad ? pad->c1 + i * n : NULL;
          uint64_t sums[2 * CKKS_HELORA_MAX_TRACE_COPIES];
          if (compact && l->chunks == 1 && !p0 && ctx->k.mul_fixed_block_sums)
            compact_one_chunk (ctx, i, plan->pts + b * pt_words (l), words, inputs[0], p1, o1,
                               g, l->span, sums);
          else
            {
              for (size_t k = 0; k < l->chunks; k++)
                {
                  const uint64_t *pt = plan->pts + (b * l->chunks + k) * pt_words (l);
                  const CkksCiphertext *in = inputs[k];
                  const uint64_t *w = pt + i * n;
                  const uint64_t *ws = ctx->k.fixed_has_companion ? pt + words + i * n : NULL;
                  ctx->k.mul_fixed_pair (o0, o1, k ? o0 : p0, k ? o1 : p1,
                                         in->c0 + i * n, in->c1 + i * n, w, ws, q, n);
                }
              if (compact)
                ckks_block_sums (scratch, g, l->span, &ctx->ntt[i].mod, sums);
            }
          if (compact)
            {
              for (size_t beta = 0; beta < g; beta++)
                out->c0[i * n + beta * l->span]
                  = pad && pad->trace_only
                    ? ckks_add_mod (sums[beta], pad->c0[i * n + beta * l->span], q) : sums[beta];
            }
        }
      out->n_limbs = l->limbs;
      out->scale = inputs[0]->scale * plan->scale;
      out->seeded = false;
      out->trace_only = compact;
    }
  ckks_free (scratch);
  return CKKS_OK;
}

static CkksStatus
evaluate (const CkksHeloraPlan *plan, CkksCiphertext *const *inputs, size_t n_inputs,
          CkksCiphertext *const *outputs, size_t n_outputs, bool compact,
          CkksCiphertext *const *pads)
{
  return evaluate_part (plan, inputs, n_inputs, outputs, n_outputs, 0, n_outputs, compact, pads);
}

CkksStatus
ckks_helora_evaluate_part (const CkksHeloraPlan *plan, CkksCiphertext *const *inputs,
                           size_t n_inputs, CkksCiphertext *const *outputs, size_t n_outputs,
                           size_t first, size_t count)
{
  bool compact = plan && plan->layout->trace_w;
  return evaluate_part (plan, inputs, n_inputs, outputs, n_outputs, first, count, compact, NULL);
}

CkksStatus
ckks_helora_evaluate (const CkksHeloraPlan *plan, CkksCiphertext *const *inputs,
                      size_t n_inputs, CkksCiphertext *const *outputs, size_t n_outputs)
{
  return evaluate (plan, inputs, n_inputs, outputs, n_outputs, false, NULL);
}

CkksStatus
ckks_helora_evaluate_compact (const CkksHeloraPlan *plan, CkksCiphertext *const *inputs,
                              size_t n_inputs, CkksCiphertext *const *outputs,
                              size_t n_outputs)
{
  return evaluate (plan, inputs, n_inputs, outputs, n_outputs, true, NULL);
}

CkksStatus
ckks_helora_evaluate_padded (const CkksHeloraPlan *plan, CkksCiphertext *const *inputs,
                             size_t n_inputs, CkksCiphertext *const *outputs,
                             size_t n_outputs, CkksCiphertext *const *pads)
{
  if (!pads)
    return CKKS_ERR_INVALID_ARGUMENT;
  return evaluate (plan, inputs, n_inputs, outputs, n_outputs, false, pads);
}

CkksStatus
ckks_helora_evaluate_compact_padded (const CkksHeloraPlan *plan, CkksCiphertext *const *inputs,
                                     size_t n_inputs, CkksCiphertext *const *outputs,
                                     size_t n_outputs, CkksCiphertext *const *pads)
{
  if (!pads)
    return CKKS_ERR_INVALID_ARGUMENT;
  return evaluate (plan, inputs, n_inputs, outputs, n_outputs, true, pads);
}
