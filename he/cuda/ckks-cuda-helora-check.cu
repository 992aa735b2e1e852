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
  for (uint32_t hl = slots >> 1; hl >= 1; hl >>= 1)
    for (uint32_t idx = 0; idx < slots / 2; idx++)
      {
        uint32_t x = hd_fft_butterfly_x (idx, hl), y = x + hl, j = idx % hl;
        hd_fft_inverse_butterfly (&re[x], &im[x], &re[y], &im[y], fft_re[hl + j], fft_im[hl + j]);
      }
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
