/* lora-reduce.c: QR + Jacobi SVD rank reduction of one LoRA module.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "lora-reduce.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The factorisation M = (Q_B U) Σ (Q_A V)^T of one module. */
typedef struct {
  size_t ka, kb;         /* columns of Q_A (d_in × ka) and Q_B (d_out × kb) */
  double *qa, *qb;       /* column-major */
  double *w;             /* kb × ka column-major: column i is σ_i · U_i */
  double *v;             /* ka × ka column-major: column i is V_i */
  double *sigma;         /* ka values */
  size_t *order;         /* column indices by decreasing σ */
} Factors;

static void
factors_clear (Factors *f)
{
  free (f->qa);
  free (f->qb);
  free (f->w);
  free (f->v);
  free (f->sigma);
  free (f->order);
  memset (f, 0, sizeof *f);
}

/* Applies the reflector I - 2 v v^T / (v^T v) (v nonzero from row @from) to
 * @cols columns of the n-row column-major @x. */
static void
reflect (const double *v, double vv, size_t from, size_t n, double *x, size_t cols)
{
  for (size_t c = 0; c < cols; c++)
    {
      double *col = x + c * n, dot = 0.0;
      for (size_t i = from; i < n; i++)
        dot += v[i] * col[i];
      double f = 2.0 * dot / vv;
      for (size_t i = from; i < n; i++)
        col[i] -= f * v[i];
    }
}

/* Thin Householder QR of the n × m column-major @x (overwritten):
 * @q (n × k column-major) and @rr (k × m row-major), k = min(n, m). */
static LmStatus
thin_qr (double *x, size_t n, size_t m, double *q, double *rr)
{
  size_t k = n < m ? n : m;
  double *v = calloc (n * k, sizeof (double)), *vv = calloc (k, sizeof (double));
  if (v == NULL || vv == NULL)
    {
      free (v);
      free (vv);
      return LM_ERR_NO_MEMORY;
    }
  for (size_t j = 0; j < k; j++)
    {
      double *col = x + j * n, *vj = v + j * n, norm = 0.0;
      for (size_t i = j; i < n; i++)
        norm += col[i] * col[i];
      norm = sqrt (norm);
      if (norm == 0.0)
        continue;              /* a zero column: no reflection, R's diagonal is 0 */
      double alpha = col[j] > 0.0 ? -norm : norm;
      memcpy (vj + j, col + j, (n - j) * sizeof (double));
      vj[j] -= alpha;
      for (size_t i = j; i < n; i++)
        vv[j] += vj[i] * vj[i];
      reflect (vj, vv[j], j, n, col, m - j);
    }
  for (size_t j = 0; j < k; j++)
    for (size_t c = 0; c < m; c++)
      rr[j * m + c] = c >= j ? x[c * n + j] : 0.0;
  memset (q, 0, n * k * sizeof (double));
  for (size_t j = 0; j < k; j++)
    q[j * n + j] = 1.0;
  for (size_t j = k; j-- > 0;)
    if (vv[j] != 0.0)
      reflect (v + j * n, vv[j], j, n, q, k);
  free (v);
  free (vv);
  return LM_OK;
}

/* One-sided Jacobi: orthogonalises the columns of @w (p × q column-major),
 * accumulating the rotations in @v (q × q, starts as the identity). */
static void
jacobi_orthogonalise (double *w, size_t p, size_t q, double *v)
{
  for (int sweep = 0; sweep < 100; sweep++)
    {
      bool rotated = false;
      for (size_t i = 0; i < q; i++)
        for (size_t j = i + 1; j < q; j++)
          {
            double *wi = w + i * p, *wj = w + j * p, a = 0.0, b = 0.0, g = 0.0;
            for (size_t l = 0; l < p; l++)
              {
                a += wi[l] * wi[l];
                b += wj[l] * wj[l];
                g += wi[l] * wj[l];
              }
            if (g == 0.0 || fabs (g) <= 1e-15 * sqrt (a * b))
              continue;
            rotated = true;
            double zeta = (b - a) / (2.0 * g);
            double t = (zeta >= 0.0 ? 1.0 : -1.0) / (fabs (zeta) + sqrt (1.0 + zeta * zeta));
            double c = 1.0 / sqrt (1.0 + t * t), s = c * t;
            for (size_t l = 0; l < p; l++)
              {
                double x = wi[l], y = wj[l];
                wi[l] = c * x - s * y;
                wj[l] = s * x + c * y;
              }
            double *vi = v + i * q, *vj = v + j * q;
            for (size_t l = 0; l < q; l++)
              {
                double x = vi[l], y = vj[l];
                vi[l] = c * x - s * y;
                vj[l] = s * x + c * y;
              }
          }
      if (!rotated)
        break;
    }
}

/* Column indices by decreasing σ (insertion sort: r is small). */
static void
sort_by_sigma (const double *sigma, size_t *order, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      size_t x = order[i], j = i;
      for (; j > 0 && sigma[order[j - 1]] < sigma[x]; j--)
        order[j] = order[j - 1];
      order[j] = x;
    }
}

/* Copies a float matrix into doubles, refusing non-finite values. */
static bool
copy_finite (double *dst, const float *src, size_t rows, size_t cols, size_t row_stride,
             size_t col_stride)
{
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < cols; j++)
      {
        float x = src[i * cols + j];
        if (!isfinite (x))
          return false;
        dst[i * row_stride + j * col_stride] = x;
      }
  return true;
}

static LmStatus
factorise (uint32_t r, uint32_t d_in, uint32_t d_out, const float *a, const float *b,
           double scale, Factors *f)
{
  memset (f, 0, sizeof *f);
  if (r == 0 || d_in == 0 || d_out == 0 || a == NULL || b == NULL || !isfinite (scale))
    return LM_ERR_INVALID_ARGUMENT;
  f->ka = d_in < r ? d_in : r;
  f->kb = d_out < r ? d_out : r;
  /* A^T (d_in × r) column-major is A row-major; B (d_out × r) transposed. */
  double *at = malloc ((size_t) d_in * r * sizeof (double));
  double *bt = malloc ((size_t) d_out * r * sizeof (double));
  double *ra = malloc (f->ka * r * sizeof (double)), *rb = malloc (f->kb * r * sizeof (double));
  f->qa = malloc ((size_t) d_in * f->ka * sizeof (double));
  f->qb = malloc ((size_t) d_out * f->kb * sizeof (double));
  f->w = malloc (f->kb * f->ka * sizeof (double));
  f->v = calloc (f->ka * f->ka, sizeof (double));
  f->sigma = malloc (f->ka * sizeof (double));
  f->order = malloc (f->ka * sizeof (size_t));
  LmStatus st = LM_OK;
  if (at == NULL || bt == NULL || ra == NULL || rb == NULL || f->qa == NULL || f->qb == NULL ||
      f->w == NULL || f->v == NULL || f->sigma == NULL || f->order == NULL)
    st = LM_ERR_NO_MEMORY;
  else if (!copy_finite (at, a, r, d_in, d_in, 1) || !copy_finite (bt, b, d_out, r, 1, d_out))
    st = LM_ERR_FORMAT;
  if (st == LM_OK)
    st = thin_qr (at, d_in, r, f->qa, ra);
  if (st == LM_OK)
    st = thin_qr (bt, d_out, r, f->qb, rb);
  if (st == LM_OK)
    {
      /* core C = scale · R_B · R_A^T (kb × ka), stored column-major in w */
      for (size_t i = 0; i < f->kb; i++)
        for (size_t j = 0; j < f->ka; j++)
          {
            double sum = 0.0;
            for (size_t l = 0; l < r; l++)
              sum += rb[i * r + l] * ra[j * r + l];
            f->w[j * f->kb + i] = scale * sum;
          }
      for (size_t i = 0; i < f->ka; i++)
        f->v[i * f->ka + i] = 1.0;
      jacobi_orthogonalise (f->w, f->kb, f->ka, f->v);
      for (size_t i = 0; i < f->ka; i++)
        {
          double s = 0.0;
          for (size_t l = 0; l < f->kb; l++)
            s += f->w[i * f->kb + l] * f->w[i * f->kb + l];
          f->sigma[i] = sqrt (s);
          f->order[i] = i;
        }
      sort_by_sigma (f->sigma, f->order, f->ka);
    }
  free (at);
  free (bt);
  free (ra);
  free (rb);
  if (st != LM_OK)
    factors_clear (f);
  return st;
}

LmStatus
lm_lora_singular_values (uint32_t r, uint32_t d_in, uint32_t d_out, const float *a,
                         const float *b, double scale, double *sigma)
{
  if (sigma == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  Factors f;
  LmStatus st = factorise (r, d_in, d_out, a, b, scale, &f);
  if (st != LM_OK)
    return st;
  size_t n = f.ka < f.kb ? f.ka : f.kb;
  for (size_t i = 0; i < r; i++)
    sigma[i] = i < n ? f.sigma[f.order[i]] : 0.0;
  factors_clear (&f);
  return LM_OK;
}

/* Writes the rank_out leading singular triplets as float factors. */
static LmStatus
split_factors (const Factors *f, uint32_t d_in, uint32_t d_out, uint32_t rank_out,
               double scale_out, float *a_out, float *b_out)
{
  double *u = malloc (f->kb * sizeof (double));
  if (u == NULL)
    return LM_ERR_NO_MEMORY;
  for (uint32_t i = 0; i < rank_out; i++)
    {
      size_t col = f->order[i];
      double sigma = f->sigma[col], w = sqrt (sigma / scale_out);
      const double *wc = f->w + col * f->kb, *vc = f->v + col * f->ka;
      for (size_t l = 0; l < f->kb; l++)
        u[l] = sigma > 0.0 ? wc[l] / sigma : 0.0;
      for (uint32_t row = 0; row < d_out; row++)
        {
          double sum = 0.0;
          for (size_t l = 0; l < f->kb; l++)
            sum += f->qb[l * d_out + row] * u[l];
          b_out[(size_t) row * rank_out + i] = (float) (w * sum);
        }
      for (uint32_t c = 0; c < d_in; c++)
        {
          double sum = 0.0;
          for (size_t l = 0; l < f->ka; l++)
            sum += f->qa[l * d_in + c] * vc[l];
          a_out[(size_t) i * d_in + c] = (float) (w * sum);
        }
    }
  free (u);
  return LM_OK;
}

LmStatus
lm_lora_reduce_module (uint32_t r, uint32_t d_in, uint32_t d_out, const float *a,
                       const float *b, double scale_in, uint32_t rank,
                       LmLoraScaleFunc scale_out, void *user_data, float **a_out,
                       float **b_out, LmLoraReduceInfo *info)
{
  if (rank == 0 || a_out == NULL || b_out == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  *a_out = *b_out = NULL;
  Factors f;
  LmStatus st = factorise (r, d_in, d_out, a, b, scale_in, &f);
  if (st != LM_OK)
    return st;
  size_t n = f.ka < f.kb ? f.ka : f.kb;
  uint32_t rank_out = rank < n ? rank : (uint32_t) n;
  double s_out = scale_out ? scale_out (rank_out, user_data) : 1.0;
  float *na = malloc ((size_t) rank_out * d_in * sizeof (float));
  float *nb = malloc ((size_t) d_out * rank_out * sizeof (float));
  if (!(s_out > 0.0) || !isfinite (s_out))
    st = LM_ERR_INVALID_ARGUMENT;
  else if (na == NULL || nb == NULL)
    st = LM_ERR_NO_MEMORY;
  else
    st = split_factors (&f, d_in, d_out, rank_out, s_out, na, nb);
  if (st == LM_OK && info != NULL)
    {
      *info = (LmLoraReduceInfo) { .rank_in = r, .rank_out = rank_out,
                                   .sigma_max = n > 0 ? f.sigma[f.order[0]] : 0.0 };
      for (size_t i = 0; i < n; i++)
        {
          double s2 = f.sigma[f.order[i]] * f.sigma[f.order[i]];
          info->energy_total += s2;
          if (i < rank_out)
            info->energy_kept += s2;
        }
    }
  factors_clear (&f);
  if (st != LM_OK)
    {
      free (na);
      free (nb);
      return st;
    }
  *a_out = na;
  *b_out = nb;
  return LM_OK;
}
