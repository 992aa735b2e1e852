/* ckks-internal.h: the context layout and internal helpers shared by he/.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * RNS polynomials are arrays of n_limbs * N uint64_t, limb i reduced mod q_i,
 * kept in NTT form (bit-reversed evaluation order) between operations.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckks-modarith.h"
#include "ckks-params.h"

typedef struct {
  CkksModulus mod;
  uint64_t *psi_rev;          /* psi^bitrev(i), psi a primitive 2N-th root */
  uint64_t *psi_rev_shoup;    /* companions for the active backend */
  uint64_t *ipsi_rev;         /* psi^-bitrev(i) */
  uint64_t *ipsi_rev_shoup;
  uint64_t n_inv, n_inv_shoup;
  uint64_t w_n_inv, w_n_inv_shoup;  /* ipsi_rev[1] * N^-1: last inverse stage */
  /* IFMA only: twiddles of the three innermost stages expanded lane by lane */
  uint64_t *fwd_small, *fwd_small_shoup;   /* 3 * N/2 entries */
  uint64_t *inv_small, *inv_small_shoup;
  /* AVX2 only: twiddles as doubles, N in bit-reversed order, then the
   * half-size 2 and 1 stages expanded lane by lane (N/2 each) */
  double *fwd_d, *inv_d;
} CkksNttTables;

struct CkksCrt2;

/* Arithmetic kernels of one backend; every pointer set. Outputs are fully
 * reduced, so every backend gives bit-identical results. */
typedef struct {
  const char *name;
  /* floor(w * 2^k / q) with k the backend's word size (64 or 52) */
  uint64_t (*shoup) (uint64_t w, uint64_t q);
  /* the backend's own NTT tables (fwd_small, fwd_d, ...), built by
   * ckks_ntt_tables_init after the common ones; NULL when none */
  CkksStatus (*ntt_tables_expand) (CkksNttTables *t, size_t n);
  void (*ntt_forward) (uint64_t *a, const CkksNttTables *t, size_t n);
  void (*ntt_inverse) (uint64_t *a, const CkksNttTables *t, size_t n);
  /* Fixed operands (plaintexts, keys) are stored in the backend's form:
   * scalar: w and its Shoup companion; IFMA: w * 2^52 mod q (Montgomery)
   * and no companion (half the memory traffic); AVX2: the bits of the
   * double of w, no companion. fixed_prepare writes that form; @comp is
   * NULL when !fixed_has_companion. fixed_values turns it back into the
   * plain values (for the GPU upload). */
  bool fixed_has_companion;
  void (*fixed_prepare) (uint64_t *wf, uint64_t *comp, const uint64_t *w, uint64_t q,
                         size_t n);
  void (*fixed_values) (uint64_t *out, const uint64_t *wf, const CkksModulus *m, size_t n);
  /* out[i] = a[i] * w[i] mod q (w prepared, with its companion if any);
   * in the three product kernels a[i] and add[i] are below q */
  void (*mul_fixed) (uint64_t *out, const uint64_t *a, const uint64_t *w,
                     const uint64_t *w_shoup, uint64_t q, size_t n);
  /* out[i] = add[i] + a[i] * w[i] mod q (@out may be @add) */
  void (*mul_fixed_add) (uint64_t *out, const uint64_t *add, const uint64_t *a,
                         const uint64_t *w, const uint64_t *w_shoup, uint64_t q,
                         size_t n);
  /* ct x pt for both halves of a ciphertext in one pass over w:
   * out0 = add0 + a0 * w, out1 = add1 + a1 * w (add0/add1 NULL: no add) */
  void (*mul_fixed_pair) (uint64_t *out0, uint64_t *out1, const uint64_t *add0,
                          const uint64_t *add1, const uint64_t *a0, const uint64_t *a1,
                          const uint64_t *w, const uint64_t *w_shoup, uint64_t q,
                          size_t n);
  /* sums[beta] = sum of a[i] * w[i] mod q over block beta (values
   * [beta span, (beta + 1) span)) for @blocks blocks, w prepared: the
   * trace decryption's block sums of c1 s without writing c1 s out. NULL:
   * the caller runs mul_fixed, then ckks_block_sums (ckks_fixed_block_sums
   * does either). */
  void (*mul_fixed_block_sums) (const uint64_t *a, const uint64_t *w,
                                const uint64_t *w_shoup, const CkksModulus *m,
                                size_t blocks, size_t span, uint64_t *sums);
  /* Two-limb CRT to centred doubles (see CkksCrt2) */
  void (*crt2) (const uint64_t *a0, const uint64_t *a1, double *out,
                const struct CkksCrt2 *c, size_t n);
  /* butterfly stages of the special FFT over @n slots (no bit reversal,
   * no 1/n): twiddles tw_re/tw_im[h + j] for half-length h */
  void (*fft_stages_forward) (double *re, double *im, const double *tw_re,
                              const double *tw_im, size_t n);
  void (*fft_stages_inverse) (double *re, double *im, const double *tw_re,
                              const double *tw_im, size_t n);
  /* out[i] = e[i] mod q in [0, q): a small polynomial (an error, a
   * ternary secret) lifted to one limb before its NTT */
  void (*lift_small) (uint64_t *out, const int8_t *e, uint64_t q, size_t n);
  /* out[i] = (x[i] + e[i]) mod q in [0, q) (@e may be NULL); |x| < 2^62 */
  void (*reduce_signed) (uint64_t *out, const int64_t *x, const int8_t *e,
                         const CkksModulus *m, size_t n);
  /* out[i] = round-half-even(v[idx[i]] * scale) (the gather does the FFT's
   * bit reversal); false if any |.| >= 2^62 or NaN */
  bool (*round_scaled) (int64_t *out, const double *v, const uint32_t *idx,
                        double scale, size_t n);
  /* sum of a[i] * b[i] in 8 interleaved partial sums (n % 8 == 0) */
  double (*dot) (const double *a, const double *b, size_t n);
} CkksKernels;

/* x = a0 + q0 * t, t = (a1 - a0) * q0^-1 mod q1; centred: t - q1 when
 * x > (Q - 1) / 2 = half_t * q0 + half_a. Value = double(t) * q0 + a0. */
typedef struct CkksCrt2 {
  uint64_t q0, q1;
  uint64_t inv;                /* q0^-1 mod q1 */
  uint64_t inv_shoup;          /* its Shoup companion, 64-bit (scalar) */
  uint64_t inv_shoup52;        /* and 52-bit (IFMA) */
  uint64_t half_t, half_a;
} CkksCrt2;

void ckks_crt2_init (CkksCrt2 *c, uint64_t q0, uint64_t q1);
void ckks_crt2_scalar (const uint64_t *a0, const uint64_t *a1, double *out,
                       const CkksCrt2 *c, size_t n);

struct CkksContext {
  CkksParams params;
  size_t n;                   /* ring degree N */
  size_t slots;               /* N / 2 */
  CkksNttTables ntt[CKKS_MAX_MODULI];
  CkksKernels k;
  /* special FFT: twiddle for stage half-length h, index j at [h + j] */
  double *fft_re, *fft_im;
  uint32_t *slot_bitrev;      /* bit reversal over N/2 entries */
  /* garner[i][j] = q_j^-1 mod q_i (j < i), for CRT and rescale */
  uint64_t garner[CKKS_MAX_MODULI][CKKS_MAX_MODULI];
  uint64_t garner_shoup[CKKS_MAX_MODULI][CKKS_MAX_MODULI];
  CkksCrt2 crt2;              /* q0, q1 (when there are two limbs or more) */
  uint8_t fingerprint[32];
};

/* Backends. */
void ckks_kernels_scalar (CkksKernels *k);
bool ckks_kernels_ifma (CkksKernels *k);   /* false if the CPU lacks IFMA */
bool ckks_kernels_avx2 (CkksKernels *k);   /* false without AVX2 and FMA */
/* AVX2 + FMA encode/decode kernels (ckks-encode-avx2.c): sets the FFT
 * stages, round_scaled, reduce_signed, crt2 and dot, bit-identical to the
 * scalar ones; false, leaving @k untouched, if the CPU lacks AVX2 or FMA. */
bool ckks_kernels_avx2_encode (CkksKernels *k);

/* NTT table construction (ckks-kernels-scalar.c), the backend's own tables
 * included. */
CkksStatus ckks_ntt_tables_init (CkksNttTables *t, uint64_t q, size_t n,
                                 const CkksKernels *k);
void ckks_ntt_tables_clear (CkksNttTables *t);
uint64_t ckks_primitive_root_2n (const CkksModulus *m, size_t n);

/* Scratch memory for one call: aligned, freed with ckks_scratch_free. */
void *ckks_alloc (size_t bytes);
void *ckks_alloc0 (size_t bytes);
void ckks_free (void *p);

static inline uint64_t *
ckks_limb (uint64_t *poly, size_t i, size_t n)
{
  return poly + i * n;
}

/* Encoder internals (ckks-encode.c): canonical embedding of real slot values.
 * ckks_fft_inverse/forward work in place on N/2 complex values. */
void ckks_fft_inverse (const CkksContext *ctx, double *re, double *im);
void ckks_fft_forward (const CkksContext *ctx, double *re, double *im);

/* Special FFT butterfly stages (ckks-encode.c), scalar reference. */
void ckks_fft_forward_stages_from (double *re, double *im, const double *tw_re,
                                   const double *tw_im, size_t n, size_t h0,
                                   size_t h_end);
void ckks_fft_inverse_stages_from (double *re, double *im, const double *tw_re,
                                   const double *tw_im, size_t n, size_t h_start,
                                   size_t h_end);
bool ckks_round_scaled_scalar (int64_t *out, const double *v, const uint32_t *idx,
                               double scale, size_t n);
void ckks_fft_stages_forward_scalar (double *re, double *im, const double *tw_re,
                                     const double *tw_im, size_t n);
void ckks_fft_stages_inverse_scalar (double *re, double *im, const double *tw_re,
                                     const double *tw_im, size_t n);

/* SHA-256 of the parameter serialisation. */
void ckks_params_fingerprint (const CkksParams *p, uint8_t out[32]);
