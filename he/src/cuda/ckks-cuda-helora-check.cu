/* ckks-cuda-helora-check.cu: the GPU pipeline's per-element arithmetic run
 * on the host, for the tests that have no GPU (ckks-cuda-helora.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Each function loops over exactly the __host__ __device__ functions the
 * kernels of ckks-cuda-helora.cu call per thread, in an order the kernels'
 * results do not depend on (their threads write disjoint elements, and each
 * FFT stage's butterflies are independent).
 */
#include <string.h>

#include "ckks-cuda-helora-math.cuh"
#include "ckks-cuda-helora.h"

static void
key_words (const uint8_t bytes[32], uint32_t key[8])
{
  for (int i = 0; i < 8; i++)
    key[i] = (uint32_t) bytes[4 * i] | (uint32_t) bytes[4 * i + 1] << 8
             | (uint32_t) bytes[4 * i + 2] << 16 | (uint32_t) bytes[4 * i + 3] << 24;
}

extern "C" void
ckks_cuda_check_chacha20_block (const uint8_t key[32], uint32_t counter, const uint8_t nonce[12],
                                uint8_t out[64])
{
  uint32_t k[8], nw[3], s[16];
  key_words (key, k);
  for (int i = 0; i < 3; i++)
    nw[i] = (uint32_t) nonce[4 * i] | (uint32_t) nonce[4 * i + 1] << 8
            | (uint32_t) nonce[4 * i + 2] << 16 | (uint32_t) nonce[4 * i + 3] << 24;
  hd_chacha20_block (k, counter, nw, s);
  for (int i = 0; i < 16; i++)
    for (int b = 0; b < 4; b++)
      out[4 * i + b] = (uint8_t) (s[i] >> (8 * b));
}

extern "C" void
ckks_cuda_check_sample_error (const uint8_t seed[32], uint32_t ct, int8_t *e, size_t n)
{
  uint32_t k[8];
  key_words (seed, k);
  for (size_t blk = 0; blk < n / 8; blk++)
    hd_sample_error8 (k, ct, (uint32_t) blk, e + 8 * blk);
}

extern "C" void
ckks_cuda_check_sample_uniform (const uint8_t seed[32], uint32_t ct, uint32_t limb,
                                const CkksCudaLimb *lc, uint64_t *a, size_t n)
{
  uint32_t k[8];
  key_words (seed, k);
  for (size_t blk = 0; blk < n / 4; blk++)
    hd_sample_uniform4 (k, ct, limb, (uint32_t) blk, lc->q, lc->ratio_lo, lc->ratio_hi,
                        a + 4 * blk);
}

extern "C" void
ckks_cuda_check_encode (const float *h, uint32_t len, uint32_t copies, double inv,
                        uint32_t slots, const double *fft_re, const double *fft_im,
                        const uint32_t *slot_bitrev, double encode_scale, double *work,
                        int64_t *coeffs)
{
  double *re = work, *im = work + slots;
  for (uint32_t s = 0; s < slots; s++)
    {
      re[s] = hd_helora_slot_value (h, len, copies, inv, s);
      im[s] = 0.0;
    }
  /* encode_kernel's schedule: two stages per step, then the last alone */
  uint32_t hl = slots >> 1;
  for (; hl >= 2; hl >>= 2)
    for (uint32_t idx = 0; idx < slots / 4; idx++)
      hd_fft_inverse_two_stages (re, im, idx, hl, fft_re, fft_im);
  if (hl == 1)
    for (uint32_t idx = 0; idx < slots / 2; idx++)
      hd_fft_inverse_butterfly (&re[2 * idx], &im[2 * idx], &re[2 * idx + 1], &im[2 * idx + 1],
                                fft_re[1], fft_im[1]);
  for (uint32_t i = 0; i < slots; i++)
    {
      coeffs[i] = hd_round_scaled (re[slot_bitrev[i]], encode_scale);
      coeffs[slots + i] = hd_round_scaled (im[slot_bitrev[i]], encode_scale);
    }
}

extern "C" void
ckks_cuda_check_ntt_forward (uint64_t *a, const uint64_t *psi_rev, const uint64_t *psi_rev_shoup,
                             uint64_t q, uint32_t n)
{
  for (uint32_t m = 1, half = n >> 1; m < n; m <<= 1, half >>= 1)
    for (uint32_t idx = 0; idx < n / 2; idx++)
      {
        uint32_t x, t = hd_ntt_butterfly (idx, m, half, &x);
        hd_ntt_forward_butterfly (&a[x], &a[x + half], psi_rev[t], psi_rev_shoup[t], q);
      }
}

extern "C" void
ckks_cuda_check_message_limb (const int64_t *m, const int8_t *e, const CkksCudaLimb *lc,
                              uint64_t lift_w, uint64_t lift_shoup, uint64_t *out, size_t n)
{
  for (size_t i = 0; i < n; i++)
    out[i] = hd_message_limb (m[i], e[i], lc->q, lc->ratio64, lift_w, lift_shoup);
}

extern "C" void
ckks_cuda_check_crt2 (const uint64_t *a0, const uint64_t *a1, uint64_t q0, uint64_t q1,
                      uint64_t inv, uint64_t inv_shoup, uint64_t half_t, uint64_t half_a,
                      double *out, size_t n)
{
  for (size_t i = 0; i < n; i++)
    out[i] = hd_crt2 (a0[i], a1[i], q0, q1, inv, inv_shoup, half_t, half_a);
}

/* stage_h_kernel's reduction in its order: per thread a strided running
 * max, then the shared-memory tree. */
void
ckks_cuda_check_abs_max (const float *h, size_t d, double *inv, double *factor)
{
  double part[CKKS_CUDA_ABS_MAX_THREADS];
  for (size_t t = 0; t < CKKS_CUDA_ABS_MAX_THREADS; t++)
    {
      double m = 0;
      for (size_t i = t; i < d; i += CKKS_CUDA_ABS_MAX_THREADS)
        m = hd_abs_max_step (m, h[i]);
      part[t] = m;
    }
  for (size_t s = CKKS_CUDA_ABS_MAX_THREADS / 2; s > 0; s >>= 1)
    for (size_t t = 0; t < s; t++)
      part[t] = hd_abs_max_combine (part[t], part[t + s]);
  hd_abs_max_finish (part[0], inv, factor);
}

/* ---- the whole token on the host ---- */

/* One input group: encode, message limbs, NTT, uniform a, c0 += a (-s), as
 * encode_kernel, lift_kernel, the NTT and uniform_kernel; cts as on the
 * device. */
static void
check_encrypt_group (const CkksCudaHeloraSpec *sp, const CkksCudaHeloraGroup *g,
                     uint32_t ct_base, const float *h, double inv, const uint32_t key[8],
                     uint64_t *cts)
{
  uint32_t n = sp->n, slots = n / 2, L = sp->limbs;
  size_t ln = (size_t) L * n;
  double *work = new double[2 * (size_t) slots];
  int64_t *m = new int64_t[n];
  for (uint32_t k = 0; k < g->chunks; k++)
    {
      uint32_t base = k * g->chunk_len;
      uint32_t len = base >= g->d ? 0 : (g->d - base < g->chunk_len ? g->d - base : g->chunk_len);
      ckks_cuda_check_encode (h + base, len, g->copies, inv, slots, sp->fft_re, sp->fft_im,
                              sp->slot_bitrev, g->encode_scale, work, m);
      uint64_t *c0 = cts + (size_t) k * 2 * ln, *c1 = c0 + ln;
      for (uint32_t blk = 0; blk < n / 8; blk++)
        {
          int8_t e[8];
          hd_sample_error8 (key, ct_base + k, blk, e);
          for (uint32_t i = 0; i < L; i++)
            for (uint32_t j = 0; j < 8; j++)
              c0[(size_t) i * n + blk * 8 + j]
                = hd_message_limb (m[blk * 8 + j], e[j], sp->limb[i].q, sp->limb[i].ratio64,
                                   g->lift_w[i], g->lift_shoup[i]);
        }
      for (uint32_t i = 0; i < L; i++)
        {
          const CkksCudaLimb *lc = &sp->limb[i];
          uint64_t *a = c0 + (size_t) i * n, *a1 = c1 + (size_t) i * n;
          ckks_cuda_check_ntt_forward (a, sp->psi_rev + (size_t) i * n,
                                       sp->psi_rev_shoup + (size_t) i * n, lc->q, n);
          const uint64_t *ns = sp->neg_s + (size_t) i * n, *nss = sp->neg_s_shoup + (size_t) i * n;
          for (uint32_t blk = 0; blk < n / 4; blk++)
            {
              uint64_t u[4];
              hd_sample_uniform4 (key, ct_base + k, i, blk, lc->q, lc->ratio_lo, lc->ratio_hi, u);
              for (uint32_t j = 0; j < 4; j++)
                {
                  uint32_t x = blk * 4 + j;
                  a1[x] = u[j];
                  uint64_t as = ckks_cu_mul_shoup (u[j], ns[x], nss[x], lc->q);
                  a[x] = ckks_cu_add_mod (a[x], as, lc->q);
                }
            }
        }
    }
  delete[] work;
  delete[] m;
}

/* One module: ct x pt (mul_plain_kernel), then segment_sums_kernel's sums,
 * trace matrix, CRT and segment sums. */
static void
check_module (const CkksCudaHeloraSpec *sp, const CkksCudaHeloraModule *md,
              const CkksCudaHeloraGroup *g, const uint64_t *cts, double h_factor, double *u,
              uint64_t *keep_out)
{
  uint32_t n = sp->n, L = sp->limbs, g2 = 2 * md->copies;
  size_t ln = (size_t) L * n;
  uint64_t *out = new uint64_t[2 * ln];
  uint64_t *sums = new uint64_t[(size_t) L * g2], *res = new uint64_t[(size_t) L * g2];
  double *m = new double[g2];
  for (uint32_t b = 0; b < md->n_outputs; b++)
    {
      for (size_t off = 0; off < ln; off++)
        {
          uint64_t q = sp->limb[off / n].q, acc0 = 0, acc1 = 0;
          for (uint32_t k = 0; k < g->chunks; k++)
            {
              size_t p = ((size_t) b * g->chunks + k) * ln + off;
              const uint64_t *c = cts + (size_t) k * 2 * ln + off;
              uint64_t w = md->pt[p], ws = md->pt_shoup[p];
              acc0 = ckks_cu_add_mod (acc0, ckks_cu_mul_shoup (c[0], w, ws, q), q);
              acc1 = ckks_cu_add_mod (acc1, ckks_cu_mul_shoup (c[ln], w, ws, q), q);
            }
          out[off] = acc0;
          out[ln + off] = acc1;
        }
      if (keep_out)
        memcpy (keep_out + (size_t) b * 2 * ln, out, 2 * ln * sizeof (uint64_t));
      for (uint32_t seg = 0; seg < L * g2; seg++)
        {
          uint32_t i = seg / g2, beta = seg % g2;
          uint64_t q = sp->limb[i].q, acc = 0;
          size_t off = (size_t) i * n + (size_t) beta * md->span;
          for (uint32_t j = 0; j < md->span; j++)
            acc = ckks_cu_add_mod (acc, ckks_cu_add_mod (out[off + j],
                                               ckks_cu_mul_shoup (out[ln + off + j], sp->s[off + j],
                                                             sp->s_shoup[off + j], q), q), q);
          sums[seg] = acc;
        }
      for (uint32_t idx = 0; idx < L * g2; idx++)
        {
          uint32_t i = idx / g2, kappa = idx % g2;
          const CkksCudaLimb *lc = &sp->limb[i];
          const uint64_t *w = md->trace_w + ((size_t) i * g2 + kappa) * g2;
          uint64_t acc = 0;
          for (uint32_t beta = 0; beta < g2; beta++)
            acc = ckks_cu_add_mod (acc, hd_mul_mod (w[beta], sums[(size_t) i * g2 + beta], lc->q,
                                               lc->ratio_lo, lc->ratio_hi), lc->q);
          res[idx] = acc;
        }
      for (uint32_t kappa = 0; kappa < g2; kappa++)
        m[kappa] = hd_crt2 (res[kappa], res[g2 + kappa], sp->limb[0].q, sp->limb[1].q,
                            sp->crt_inv, sp->crt_inv_shoup, sp->crt_half_t, sp->crt_half_a);
      double factor = hd_dmul (md->span_over_scale, h_factor);
      for (uint32_t t = 0; t < md->copies && b * md->copies + t < md->r; t++)
        {
          double acc = 0;
          for (uint32_t kappa = 0; kappa < g2; kappa++)
            acc = hd_dadd (acc, hd_dmul (m[kappa], md->trace_re[(size_t) t * g2 + kappa]));
          u[b * md->copies + t] = hd_dmul (acc, factor);
        }
    }
  delete[] out;
  delete[] sums;
  delete[] res;
  delete[] m;
}

extern "C" CkksStatus
ckks_cuda_check_token (const CkksCudaHeloraSpec *sp, const float *const *h, const double *inv,
                       const double *h_factor, const uint8_t seed[32], double *const *u,
                       uint64_t *const *group_cts, uint64_t *const *module_outs)
{
  if (sp->limbs != 2)
    return CKKS_ERR_INVALID_ARGUMENT;
  uint32_t key[8];
  key_words (seed, key);
  size_t ln = (size_t) sp->limbs * sp->n;
  uint64_t **cts = new uint64_t *[sp->n_groups];
  uint32_t ct_base = 0;
  for (uint32_t g = 0; g < sp->n_groups; g++)
    {
      cts[g] = new uint64_t[(size_t) sp->groups[g].chunks * 2 * ln];
      check_encrypt_group (sp, &sp->groups[g], ct_base, h[g], inv[g], key, cts[g]);
      if (group_cts && group_cts[g])
        memcpy (group_cts[g], cts[g], (size_t) sp->groups[g].chunks * 2 * ln * sizeof (uint64_t));
      ct_base += sp->groups[g].chunks;
    }
  for (uint32_t i = 0; i < sp->n_modules; i++)
    {
      const CkksCudaHeloraModule *md = &sp->modules[i];
      check_module (sp, md, &sp->groups[md->group], cts[md->group], h_factor[md->group], u[i],
                    module_outs ? module_outs[i] : NULL);
    }
  for (uint32_t g = 0; g < sp->n_groups; g++)
    delete[] cts[g];
  delete[] cts;
  return CKKS_OK;
}
