/* ckks-kernels-scalar.c: negacyclic NTT tables and the portable scalar kernels
 * (NTT, fixed-operand products, signed reduction, CRT, dot), the reference
 * of the SIMD ones.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Forward: Cooley-Tukey with Harvey's lazy butterflies (values in [0, 4q)),
 * natural order in, bit-reversed order out. Inverse: Gentleman-Sande (values
 * in [0, 2q)), bit-reversed in, natural out, scaled by N^-1. Both return fully
 * reduced values so that every backend is bit-identical to this one.
 */
#include <stdlib.h>
#include <string.h>

#include "ckks-internal.h"

static size_t
bit_reverse (size_t x, unsigned bits)
{
  size_t r = 0;
  for (unsigned i = 0; i < bits; i++)
    {
      r = (r << 1) | (x & 1);
      x >>= 1;
    }
  return r;
}

static unsigned
log2_size (size_t n)
{
  unsigned l = 0;
  while (((size_t) 1 << l) < n)
    l++;
  return l;
}

CkksStatus
ckks_ntt_tables_init (CkksNttTables *t, uint64_t q, size_t n, const CkksKernels *k)
{
  memset (t, 0, sizeof *t);
  ckks_modulus_init (&t->mod, q);
  uint64_t psi = ckks_primitive_root_2n (&t->mod, n);
  if (psi == 0)
    return CKKS_ERR_INVALID_ARGUMENT;
  uint64_t ipsi = ckks_inv_mod (psi, &t->mod);
  t->psi_rev = ckks_alloc (n * sizeof (uint64_t));
  t->psi_rev_shoup = ckks_alloc (n * sizeof (uint64_t));
  t->ipsi_rev = ckks_alloc (n * sizeof (uint64_t));
  t->ipsi_rev_shoup = ckks_alloc (n * sizeof (uint64_t));
  if (!t->psi_rev || !t->psi_rev_shoup || !t->ipsi_rev || !t->ipsi_rev_shoup)
    return CKKS_ERR_NO_MEMORY;
  unsigned logn = log2_size (n);
  uint64_t pw = 1, ipw = 1;
  for (size_t i = 0; i < n; i++)
    {
      size_t r = bit_reverse (i, logn);
      t->psi_rev[r] = pw;
      t->ipsi_rev[r] = ipw;
      pw = ckks_mul_mod (pw, psi, &t->mod);
      ipw = ckks_mul_mod (ipw, ipsi, &t->mod);
    }
  for (size_t i = 0; i < n; i++)
    {
      t->psi_rev_shoup[i] = k->shoup (t->psi_rev[i], q);
      t->ipsi_rev_shoup[i] = k->shoup (t->ipsi_rev[i], q);
    }
  t->n_inv = ckks_inv_mod (n % q, &t->mod);
  t->n_inv_shoup = k->shoup (t->n_inv, q);
  t->w_n_inv = ckks_mul_mod (t->ipsi_rev[1], t->n_inv, &t->mod);
  t->w_n_inv_shoup = k->shoup (t->w_n_inv, q);
  return k->ntt_tables_expand ? k->ntt_tables_expand (t, n) : CKKS_OK;
}

void
ckks_ntt_tables_clear (CkksNttTables *t)
{
  ckks_free (t->psi_rev);
  ckks_free (t->psi_rev_shoup);
  ckks_free (t->ipsi_rev);
  ckks_free (t->ipsi_rev_shoup);
  ckks_free (t->fwd_small);
  ckks_free (t->fwd_small_shoup);
  ckks_free (t->inv_small);
  ckks_free (t->inv_small_shoup);
  ckks_free (t->fwd_d);
  ckks_free (t->inv_d);
  memset (t, 0, sizeof *t);
}

void *
ckks_alloc (size_t bytes)
{
  void *p = NULL;
  if (bytes == 0)
    bytes = 64;
  bytes = (bytes + 63) & ~(size_t) 63;
  if (posix_memalign (&p, 64, bytes) != 0)
    return NULL;
  return p;
}

void *
ckks_alloc0 (size_t bytes)
{
  void *p = ckks_alloc (bytes);
  if (p)
    memset (p, 0, bytes);
  return p;
}

void
ckks_free (void *p)
{
  free (p);
}

static uint64_t
shoup64 (uint64_t w, uint64_t q)
{
  return ckks_shoup_precompute (w, q);
}

static void
ntt_forward_scalar (uint64_t *a, const CkksNttTables *t, size_t n)
{
  const uint64_t q = t->mod.q, two_q = 2 * q;
  size_t half = n;
  for (size_t m = 1; m < n; m <<= 1)
    {
      half >>= 1;
      for (size_t i = 0; i < m; i++)
        {
          const uint64_t w = t->psi_rev[m + i], ws = t->psi_rev_shoup[m + i];
          uint64_t *x = a + 2 * i * half, *y = x + half;
          for (size_t j = 0; j < half; j++)
            {
              uint64_t u = x[j];
              u = u >= two_q ? u - two_q : u;
              uint64_t v = ckks_mul_shoup_lazy (y[j], w, ws, q);
              x[j] = u + v;
              y[j] = u - v + two_q;
            }
        }
    }
  for (size_t i = 0; i < n; i++)
    {
      uint64_t v = a[i];
      v = v >= two_q ? v - two_q : v;
      a[i] = v >= q ? v - q : v;
    }
}

static void
ntt_inverse_scalar (uint64_t *a, const CkksNttTables *t, size_t n)
{
  const uint64_t q = t->mod.q, two_q = 2 * q;
  size_t half = 1;
  for (size_t m = n; m > 2; m >>= 1)
    {
      size_t h = m >> 1;
      for (size_t i = 0; i < h; i++)
        {
          const uint64_t w = t->ipsi_rev[h + i], ws = t->ipsi_rev_shoup[h + i];
          uint64_t *x = a + 2 * i * half, *y = x + half;
          for (size_t j = 0; j < half; j++)
            {
              uint64_t u = x[j], v = y[j];
              uint64_t s = u + v;
              x[j] = s >= two_q ? s - two_q : s;
              y[j] = ckks_mul_shoup_lazy (u - v + two_q, w, ws, q);
            }
        }
      half <<= 1;
    }
  /* last stage with N^-1 folded in: x' = (u + v) / N, y' = (u - v) w / N */
  uint64_t *x = a, *y = a + half;
  for (size_t j = 0; j < half; j++)
    {
      uint64_t u = x[j], v = y[j];
      x[j] = ckks_mul_shoup (u + v, t->n_inv, t->n_inv_shoup, q);
      y[j] = ckks_mul_shoup (u - v + two_q, t->w_n_inv, t->w_n_inv_shoup, q);
    }
}

static void
fixed_prepare_scalar (uint64_t *wf, uint64_t *comp, const uint64_t *w, uint64_t q, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      wf[i] = w[i];
      comp[i] = ckks_shoup_precompute (w[i], q);
    }
}

static void
fixed_values_plain (uint64_t *out, const uint64_t *wf, const CkksModulus *m, size_t n)
{
  (void) m;
  memcpy (out, wf, n * sizeof (uint64_t));
}

static void
mul_fixed_scalar (uint64_t *out, const uint64_t *a, const uint64_t *w,
                  const uint64_t *ws, uint64_t q, size_t n)
{
  for (size_t i = 0; i < n; i++)
    out[i] = ckks_mul_shoup (a[i], w[i], ws[i], q);
}

/* Partial sums of at most 4096 products below 2^52 fit in 64 bits, as in
 * ckks_block_sums. */
static void
mul_fixed_block_sums_scalar (const uint64_t *a, const uint64_t *w, const uint64_t *ws,
                             const CkksModulus *m, size_t blocks, size_t span, uint64_t *sums)
{
  for (size_t beta = 0; beta < blocks; beta++)
    {
      size_t base = beta * span;
      uint64_t acc = 0;
      for (size_t p = 0; p < span; p += 4096)
        {
          uint64_t part = 0;
          for (size_t j = base + p; j < base + span && j < base + p + 4096; j++)
            part += ckks_mul_shoup (a[j], w[j], ws[j], m->q);
          acc = ckks_add_mod (acc, ckks_barrett_reduce_64 (part, m), m->q);
        }
      sums[beta] = acc;
    }
}

static void
mul_fixed_add_scalar (uint64_t *out, const uint64_t *add, const uint64_t *a,
                      const uint64_t *w, const uint64_t *ws, uint64_t q, size_t n)
{
  for (size_t i = 0; i < n; i++)
    out[i] = ckks_add_mod (add[i], ckks_mul_shoup (a[i], w[i], ws[i], q), q);
}

static void
lift_small_scalar (uint64_t *out, const int8_t *e, uint64_t q, size_t n)
{
  for (size_t i = 0; i < n; i++)
    out[i] = ckks_lift_small (e[i], q);
}

static void
reduce_signed_scalar (uint64_t *out, const int64_t *x, const int8_t *e,
                      const CkksModulus *m, size_t n)
{
  for (size_t i = 0; i < n; i++)
    out[i] = ckks_reduce_i64 (x[i] + (e ? e[i] : 0), m);
}

static void
mul_fixed_pair_scalar (uint64_t *out0, uint64_t *out1, const uint64_t *add0,
                       const uint64_t *add1, const uint64_t *a0, const uint64_t *a1,
                       const uint64_t *w, const uint64_t *ws, uint64_t q, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      uint64_t p0 = ckks_mul_shoup (a0[i], w[i], ws[i], q);
      uint64_t p1 = ckks_mul_shoup (a1[i], w[i], ws[i], q);
      out0[i] = add0 ? ckks_add_mod (add0[i], p0, q) : p0;
      out1[i] = add1 ? ckks_add_mod (add1[i], p1, q) : p1;
    }
}

void
ckks_crt2_init (CkksCrt2 *c, uint64_t q0, uint64_t q1)
{
  CkksModulus m1;
  ckks_modulus_init (&m1, q1);
  c->q0 = q0;
  c->q1 = q1;
  c->inv = ckks_inv_mod (q0 % q1, &m1);
  c->inv_shoup = ckks_shoup_precompute (c->inv, q1);
  c->inv_shoup52 = (uint64_t) (((ckks_u128) c->inv << 52) / q1);
  ckks_u128 half = ((ckks_u128) q0 * q1 - 1) / 2;
  c->half_t = (uint64_t) (half / q0);
  c->half_a = (uint64_t) (half % q0);
}

void
ckks_crt2_scalar (const uint64_t *a0, const uint64_t *a1, double *out,
             const CkksCrt2 *c, size_t n)
{
  const double q0 = (double) c->q0;
  for (size_t k = 0; k < n; k++)
    {
      uint64_t r0 = a0[k] < 2 * c->q1 ? (a0[k] >= c->q1 ? a0[k] - c->q1 : a0[k])
                                      : a0[k] % c->q1;
      uint64_t diff = ckks_sub_mod (a1[k], r0, c->q1);
      uint64_t t = ckks_mul_shoup (diff, c->inv, c->inv_shoup, c->q1);
      int64_t st = (int64_t) t;
      if (t > c->half_t || (t == c->half_t && a0[k] > c->half_a))
        st -= (int64_t) c->q1;
      double hi = (double) st * q0;
      out[k] = hi + (double) a0[k];
    }
}

static double
dot_scalar (const double *a, const double *b, size_t n)
{
  double acc[8] = { 0 };
  for (size_t i = 0; i < n; i += 8)
    for (int j = 0; j < 8; j++)
      {
        double p = a[i + j] * b[i + j];
        acc[j] = acc[j] + p;
      }
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

void
ckks_kernels_scalar (CkksKernels *k)
{
  k->name = "scalar";
  k->shoup = shoup64;
  k->ntt_tables_expand = NULL;
  k->ntt_forward = ntt_forward_scalar;
  k->ntt_inverse = ntt_inverse_scalar;
  k->fixed_has_companion = true;
  k->fixed_prepare = fixed_prepare_scalar;
  k->fixed_values = fixed_values_plain;
  k->mul_fixed = mul_fixed_scalar;
  k->mul_fixed_add = mul_fixed_add_scalar;
  k->crt2 = ckks_crt2_scalar;
  k->mul_fixed_pair = mul_fixed_pair_scalar;
  k->mul_fixed_block_sums = mul_fixed_block_sums_scalar;
  k->lift_small = lift_small_scalar;
  k->reduce_signed = reduce_signed_scalar;
  k->fft_stages_forward = ckks_fft_stages_forward_scalar;
  k->round_scaled = ckks_round_scaled_scalar;
  k->fft_stages_inverse = ckks_fft_stages_inverse_scalar;
  k->dot = dot_scalar;
}
