/* ckks-helora-private.h: HE-LoRA layout internals shared by plan and client.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ckks-helora.h"
#include "ckks-objects.h"

/* Up to this many copies a result decrypts through the trace (no inverse
 * NTT, see ckks-helora-client.c); above, it is decoded with the FFT. */
#define CKKS_HELORA_MAX_TRACE_COPIES 64
/* log2 of a result's scale (times max|A| K): in_bits + pt_bits */
#define CKKS_HELORA_RESULT_BITS 96
/* h is rounded at this scale at most (int64 coefficients, double FFT), then
 * multiplied by 2^(in_bits - 48) mod q */
#define CKKS_HELORA_ENCODE_BITS 48

struct CkksHeloraLayout {
  const CkksContext *ctx;
  CkksHeloraScales scales;
  unsigned in_bits;       /* h at 2^in_bits */
  unsigned pt_bits;       /* A at 2^pt_bits / (max|A| K) */
  size_t d, r;
  size_t chunks;          /* K */
  size_t chunk_len;       /* L */
  size_t span;            /* L' = the power of two >= L */
  size_t copies;          /* c = (N/2) / L'; copy t, value i in slot t + i c */
  size_t n_outputs;       /* B */
  CkksHeloraPacking packing;
  size_t rows_per_output; /* c, or 2c with the complex packing */
  uint32_t limbs;
  /* Trace decryption (c <= CKKS_HELORA_MAX_TRACE_COPIES), with G = 2c:
   * trace_w[limb][kappa][beta] = N^-1 psi^(-(2 bitrev(beta) + 1) L' kappa)
   * mod q_limb (G x G per limb), and trace_re[t][kappa] =
   * cos(pi 5^t L' kappa / N) (c x G). NULL otherwise. */
  uint64_t *trace_w;
  double *trace_re;
  /* complex packing only: trace_im[t][kappa] = sin(pi 5^t L' kappa / N),
   * the imaginary part of the same segment sums (NULL otherwise) */
  double *trace_im;
  /* trace_x[limb][beta] = psi^((2 bitrev(beta) + 1) L') mod q_limb: the
   * value of X^L' on NTT block beta, so a polynomial whose only non-zero
   * coefficients m_kappa sit at L' kappa has block sums
   * L' sum_kappa m_kappa trace_x[beta]^kappa (G per limb; NULL with trace_w). */
  uint64_t *trace_x;
};

/* values[beta] = sum_kappa m[kappa] trace_x[limb][beta]^kappa mod q_limb,
 * beta, kappa < 2c: the NTT value, on each block, of the polynomial with
 * coefficient m[kappa] at L' kappa and zeros elsewhere (Horner, 4c^2
 * products). */
void ckks_helora_trace_block_values (const CkksHeloraLayout *l, uint32_t limb, const uint64_t *m,
                                     uint64_t *values);

/* The 2c NTT block sums of c0, limb @i, of a result: read from the block
 * starts of a trace-only ciphertext, summed otherwise. */
void ckks_helora_c0_sums (const CkksHeloraLayout *l, const CkksCiphertext *ct, uint32_t i,
                          uint64_t *sums);

/* Slot of value i of copy t. */
static inline size_t
ckks_helora_slot (const CkksHeloraLayout *l, size_t t, size_t i)
{
  return t + i * l->copies;
}

/* Fills the trace tables of @l (laid out as trace_w, trace_re, trace_x
 * above) for any number of copies; @trace_x may be NULL. The layout keeps
 * its own up to CKKS_HELORA_MAX_TRACE_COPIES; the GPU session builds wider
 * ones with this. */
void ckks_helora_trace_tables_fill (const CkksHeloraLayout *l, uint64_t *trace_w,
                                    double *trace_re, uint64_t *trace_x);

/* A plan's scale: 2^pt_bits / (max|A| K). */
double ckks_helora_plan_scale (const CkksHeloraPlan *plan);
/* The NTT values (fully reduced, not in the backend's fixed form) of limb
 * @limb of the packed plaintext (b, k): N words into @out. */
void ckks_helora_plan_pt_values (const CkksHeloraPlan *plan, size_t b, size_t k, uint32_t limb,
                                 uint64_t *out);
