/* ckks-encode.c: canonical embedding via the special FFT over N/2 slots.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Slot j is the evaluation at zeta^(5^j), zeta = exp(i*pi/N). Encoding runs
 * the inverse special FFT and puts real parts in coefficients 0..N/2-1 and
 * imaginary parts in N/2..N-1; decoding is the reverse.
 */
#include <math.h>
#include <string.h>

#include "ckks-objects.h"

static void
bit_reverse_permute (const CkksContext *ctx, double *re, double *im)
{
  for (size_t i = 0; i < ctx->slots; i++)
    {
      size_t r = ctx->slot_bitrev[i];
      if (i < r)
        {
          double t = re[i]; re[i] = re[r]; re[r] = t;
          t = im[i]; im[i] = im[r]; im[r] = t;
        }
    }
}

/* Forward stages, half-lengths h0 <= h < n (shared with the SIMD backend
 * for the short stages). */
void
ckks_fft_forward_stages_from (double *re, double *im, const double *tw_re,
                              const double *tw_im, size_t n, size_t h0, size_t h_end)
{
  for (size_t h = h0; h < h_end && h < n; h <<= 1)
    {
      const double *wr = tw_re + h, *wi = tw_im + h;
      for (size_t i = 0; i < n; i += 2 * h)
        {
          double *xr = re + i, *xi = im + i, *yr = xr + h, *yi = xi + h;
          for (size_t j = 0; j < h; j++)
            {
              double tr = yr[j] * wr[j] - yi[j] * wi[j];
              double ti = yr[j] * wi[j] + yi[j] * wr[j];
              yr[j] = xr[j] - tr;
              yi[j] = xi[j] - ti;
              xr[j] += tr;
              xi[j] += ti;
            }
        }
    }
}

/* Inverse stages, half-lengths from h_start down to h_end (inclusive). */
void
ckks_fft_inverse_stages_from (double *re, double *im, const double *tw_re,
                              const double *tw_im, size_t n, size_t h_start, size_t h_end)
{
  for (size_t h = h_start; h >= h_end && h >= 1; h >>= 1)
    {
      const double *wr = tw_re + h, *wi = tw_im + h;
      for (size_t i = 0; i < n; i += 2 * h)
        {
          double *xr = re + i, *xi = im + i, *yr = xr + h, *yi = xi + h;
          for (size_t j = 0; j < h; j++)
            {
              double dr = xr[j] - yr[j], di = xi[j] - yi[j];
              xr[j] += yr[j];
              xi[j] += yi[j];
              /* times conj(w) */
              yr[j] = dr * wr[j] + di * wi[j];
              yi[j] = di * wr[j] - dr * wi[j];
            }
        }
      if (h == 1)
        break;
    }
}

bool
ckks_round_scaled_scalar (int64_t *out, const double *v, const uint32_t *idx,
                          double scale, size_t n)
{
  const double limit = 4611686018427387904.0;   /* 2^62 */
  bool ok = true;
  for (size_t i = 0; i < n; i++)
    {
      double a = nearbyint (v[idx[i]] * scale);
      ok = ok && fabs (a) < limit;             /* false for NaN too */
      out[i] = ok ? (int64_t) a : 0;
    }
  return ok;
}

void
ckks_fft_stages_forward_scalar (double *re, double *im, const double *tw_re,
                                const double *tw_im, size_t n)
{
  ckks_fft_forward_stages_from (re, im, tw_re, tw_im, n, 1, n);
}

void
ckks_fft_stages_inverse_scalar (double *re, double *im, const double *tw_re,
                                const double *tw_im, size_t n)
{
  ckks_fft_inverse_stages_from (re, im, tw_re, tw_im, n, n >> 1, 1);
}

void
ckks_fft_forward (const CkksContext *ctx, double *re, double *im)
{
  bit_reverse_permute (ctx, re, im);
  ctx->k.fft_stages_forward (re, im, ctx->fft_re, ctx->fft_im, ctx->slots);
}

void
ckks_fft_inverse (const CkksContext *ctx, double *re, double *im)
{
  size_t n = ctx->slots;
  ctx->k.fft_stages_inverse (re, im, ctx->fft_re, ctx->fft_im, n);
  bit_reverse_permute (ctx, re, im);
  double inv = 1.0 / (double) n;
  for (size_t i = 0; i < n; i++)
    {
      re[i] *= inv;
      im[i] *= inv;
    }
}

CkksStatus
ckks_encode_coeffs (const CkksContext *ctx, const double *re, const double *im,
                    size_t count, double scale, int64_t *coeffs)
{
  size_t n = ctx->slots;
  if (count > n || (count > 0 && !re) || !(scale > 0) || !isfinite (scale))
    return count > n || (count > 0 && !re) ? CKKS_ERR_INVALID_ARGUMENT : CKKS_ERR_SCALE;
  double *buf = ckks_alloc (2 * n * sizeof (double));
  if (!buf)
    return CKKS_ERR_NO_MEMORY;
  double *vr = buf, *vi = buf + n;
  memcpy (vr, re, count * sizeof (double));
  memset (vr + count, 0, (n - count) * sizeof (double));
  if (im)
    memcpy (vi, im, count * sizeof (double));
  else
    memset (vi, 0, count * sizeof (double));
  memset (vi + count, 0, (n - count) * sizeof (double));
  /* inverse FFT without its 1/n pass: the 1/n goes into the scale */
  ctx->k.fft_stages_inverse (vr, vi, ctx->fft_re, ctx->fft_im, n);
  double s = scale / (double) n;
  const uint32_t *br = ctx->slot_bitrev;
  bool ok = ctx->k.round_scaled (coeffs, vr, br, s, n)
            && ctx->k.round_scaled (coeffs + n, vi, br, s, n);
  ckks_free (buf);
  return ok ? CKKS_OK : CKKS_ERR_SCALE;
}

CkksStatus
ckks_real_coeffs_decode (const CkksContext *ctx, const double *coeffs,
                         double scale, double *re, double *im, size_t count)
{
  size_t n = ctx->slots;
  double *buf = ckks_alloc (2 * n * sizeof (double));
  double inv = 1.0 / scale;
  if (!buf)
    return CKKS_ERR_NO_MEMORY;
  for (size_t i = 0; i < n; i++)
    {
      buf[i] = coeffs[i] * inv;
      buf[n + i] = coeffs[n + i] * inv;
    }
  ckks_fft_forward (ctx, buf, buf + n);
  memcpy (re, buf, count * sizeof (double));
  if (im)
    memcpy (im, buf + n, count * sizeof (double));
  ckks_free (buf);
  return CKKS_OK;
}

CkksStatus
ckks_plaintext_new (const CkksContext *ctx, uint32_t n_limbs, CkksPlaintext **out)
{
  if (!ctx || !out || n_limbs == 0 || n_limbs > ctx->params.n_moduli)
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksPlaintext *pt = ckks_alloc0 (sizeof *pt);
  if (!pt)
    return CKKS_ERR_NO_MEMORY;
  pt->ctx = ctx;
  pt->n_limbs = n_limbs;
  pt->scale = 1.0;
  pt->data = ckks_alloc0 ((size_t) n_limbs * ctx->n * sizeof (uint64_t));
  if (!pt->data)
    {
      ckks_free (pt);
      return CKKS_ERR_NO_MEMORY;
    }
  *out = pt;
  return CKKS_OK;
}

void
ckks_plaintext_free (CkksPlaintext *pt)
{
  if (!pt)
    return;
  ckks_free (pt->data);
  ckks_free (pt);
}

uint32_t
ckks_plaintext_limbs (const CkksPlaintext *pt)
{
  return pt->n_limbs;
}

double
ckks_plaintext_scale (const CkksPlaintext *pt)
{
  return pt->scale;
}

CkksStatus
ckks_encode (const double *re, const double *im, size_t count, double scale,
             CkksPlaintext *pt)
{
  if (!pt)
    return CKKS_ERR_INVALID_ARGUMENT;
  int64_t *coeffs = ckks_alloc (pt->ctx->n * sizeof (int64_t));
  if (!coeffs)
    return CKKS_ERR_NO_MEMORY;
  CkksStatus st = ckks_encode_coeffs (pt->ctx, re, im, count, scale, coeffs);
  if (st == CKKS_OK)
    {
      ckks_coeffs_to_ntt (pt->ctx, coeffs, pt->n_limbs, pt->data);
      pt->scale = scale;
    }
  ckks_free (coeffs);
  return st;
}

CkksStatus
ckks_decode (const CkksPlaintext *pt, double *re, double *im, size_t count)
{
  if (!pt || !re || count > pt->ctx->slots)
    return CKKS_ERR_INVALID_ARGUMENT;
  const CkksContext *ctx = pt->ctx;
  size_t words = (size_t) pt->n_limbs * ctx->n;
  uint64_t *tmp = ckks_alloc (words * sizeof (uint64_t));
  double *coeffs = ckks_alloc (ctx->n * sizeof (double));
  CkksStatus st = CKKS_ERR_NO_MEMORY;
  if (tmp && coeffs)
    {
      memcpy (tmp, pt->data, words * sizeof (uint64_t));
      ckks_ntt_to_real_coeffs (ctx, tmp, pt->n_limbs, coeffs);
      st = ckks_real_coeffs_decode (ctx, coeffs, pt->scale, re, im, count);
    }
  ckks_free (tmp);
  ckks_free (coeffs);
  return st;
}
