/* ckks-objects.h: layouts of plaintexts, ciphertexts and keys (internal).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ckks-cipher.h"
#include "ckks-internal.h"

#define CKKS_SEED_BYTES 32

/* A polynomial (NTT form) in the backend's fixed-operand form. */
typedef struct {
  uint64_t *w, *comp;          /* comp NULL when the backend needs none */
  size_t words;
} CkksFixed;

struct CkksPlaintext {
  const CkksContext *ctx;
  uint32_t n_limbs;
  double scale;
  uint64_t *data;              /* n_limbs * N, NTT form */
};

struct CkksCiphertext {
  const CkksContext *ctx;
  uint32_t n_limbs;            /* current */
  uint32_t capacity;           /* limbs allocated */
  double scale;
  bool seeded;
  /* read back from a compact HE-LoRA result: c0 only carries the NTT block
   * sums the trace decryption needs; nothing else may use it */
  bool trace_only;
  uint8_t seed[CKKS_SEED_BYTES];
  uint64_t *c0, *c1;           /* capacity * N each, NTT form */
};

struct CkksSecretKey {
  const CkksContext *ctx;
  int8_t *coeffs;              /* N ternary coefficients */
  uint64_t *s;                 /* all limbs, NTT form */
  CkksFixed s_fixed;
  CkksFixed neg_s;             /* -s: encryption adds c1 * (-s) in one pass */
};

struct CkksPublicKey {
  const CkksContext *ctx;
  uint8_t seed[CKKS_SEED_BYTES];   /* a = expand(seed) */
  uint64_t *b, *a;                  /* all limbs, NTT form */
  CkksFixed b_fixed, a_fixed;
};

/* Scales @count slot values and rounds them to integer coefficients
 * (N entries, int64). CKKS_ERR_SCALE on overflow. */
CkksStatus ckks_encode_coeffs (const CkksContext *ctx, const double *re,
                               const double *im, size_t count, double scale,
                               int64_t *coeffs);
/* dst limb i = coeffs mod q_i, then NTT; for i < n_limbs. */
void ckks_coeffs_to_ntt (const CkksContext *ctx, const int64_t *coeffs,
                         uint32_t n_limbs, uint64_t *dst);
/* out = (m * 2^@lift_bits + e) mod q_i, coefficient form, limb @i (@e may
 * be NULL; @lift_bits < 64). Lifting the message before the error is added
 * raises a ciphertext's scale without raising its error. */
void ckks_message_to_limb (const CkksContext *ctx, uint32_t i, const int64_t *m,
                           const int8_t *e, unsigned lift_bits, uint64_t *out);
/* As ckks_encrypt_values_pk, the message lifted by 2^@lift_bits before the
 * error is added: the ciphertext's scale is @scale * 2^@lift_bits. */
CkksStatus ckks_encrypt_values_pk_lifted (const struct CkksPublicKey *pk, const double *re,
                                          const double *im, size_t count, double scale,
                                          unsigned lift_bits, CkksCiphertext *ct);
/* Same for small coefficients (ternary, errors). */
void ckks_small_to_ntt (const CkksContext *ctx, const int8_t *coeffs,
                        uint32_t n_limbs, uint64_t *dst);
/* Inverse NTT of every limb of @poly in place, then CRT: out[k] = centred
 * coefficient k as a double (exact to double rounding). */
void ckks_ntt_to_real_coeffs (const CkksContext *ctx, uint64_t *poly,
                              uint32_t n_limbs, double *out);
/* sums[beta] = sum of values[beta * span .. (beta + 1) * span) mod q, for
 * @blocks blocks (values below q < 2^52). */
void ckks_block_sums (const uint64_t *values, size_t blocks, size_t span,
                      const CkksModulus *m, uint64_t *sums);
/* sums[beta] = block sums of a * w mod q_limb (w a prepared fixed operand of
 * limb @limb), fused where the backend has a kernel for it, else through
 * @scratch (N words). */
void ckks_fixed_block_sums (const CkksContext *ctx, const uint64_t *a, const uint64_t *w,
                            const uint64_t *w_shoup, uint32_t limb, size_t blocks, size_t span,
                            uint64_t *scratch, uint64_t *sums);
/* CRT of @count residues per limb (limb i at poly + i * stride) to centred
 * doubles. */
void ckks_crt_to_real (const CkksContext *ctx, const uint64_t *poly, size_t stride,
                       uint32_t n_limbs, size_t count, double *out);
/* Slot values from real coefficients divided by @scale (FFT). */
CkksStatus ckks_real_coeffs_decode (const CkksContext *ctx, const double *coeffs,
                                    double scale, double *re, double *im,
                                    size_t count);
/* Uniform polynomial in NTT form from @seed, limbs [0, n_limbs). */
CkksStatus ckks_expand_uniform (const CkksContext *ctx,
                                const uint8_t seed[CKKS_SEED_BYTES],
                                uint32_t n_limbs, uint64_t *dst);
/* A fixed polynomial prepared for the backend's multiply kernels. */
CkksStatus ckks_fixed_init (CkksFixed *f, const CkksContext *ctx, const uint64_t *poly,
                            uint32_t n_limbs);
/* Wipes and frees (keys go through here too). */
void ckks_fixed_clear (CkksFixed *f);

/* Limb @i of a fixed polynomial: the value and companion pointers. */
#define CKKS_FIXED_W(f, i, n) ((f)->w + (size_t) (i) * (n))
#define CKKS_FIXED_C(f, i, n) ((f)->comp ? (f)->comp + (size_t) (i) * (n) : NULL)
bool ckks_same_scale (double a, double b);
/* An uninitialised public key of @ctx (all limbs allocated). */
CkksStatus ckks_public_key_alloc (const CkksContext *ctx, struct CkksPublicKey **out);
void ckks_public_key_free (struct CkksPublicKey *pk);
/* Derives the multiply forms of a and b once they are filled in. */
CkksStatus ckks_public_key_prepare (struct CkksPublicKey *pk);
