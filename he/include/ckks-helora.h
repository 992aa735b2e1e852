/* ckks-helora.h: the HE-LoRA packed product u = A * h under CKKS.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Roles (see DESIGN.md section 1):
 *   client     holds sk; encrypts h, decrypts results into u.
 *   evaluator  holds A (r x d); computes ct x pt with NO key at all.
 *
 * Packing. A layout for (context, d, r) splits h (length d) into K chunks of
 * L = ceil(d / K) values, K = ceil(d / (N/2)); each chunk is replicated
 * c = (N/2) / L' times across the slots of one ciphertext, L' the power of
 * two >= L, copy t holding value j in slot t + j c (the coset 5^t H of the
 * order-L' subgroup H of the slot group), so an encrypted h is K
 * ciphertexts. Result ciphertext b (b < B = ceil(r / c)) holds in copy t
 * the slot-wise products of h with row b*c + t of A, summed over the K
 * chunks; the client's segment sums give u[b*c + t]. Because each segment is
 * a coset of a subgroup, its sum depends only on the 2c coefficients of index
 * 0 mod L', which the client reads from sums of blocks of NTT values: no
 * inverse NTT, no FFT (for c <= 64; wider layouts decode in full). Rows past
 * r are zero (no data-dependent failure for zero rows or a zero A).
 *
 * Scales and levels. h is divided by max|h| (kept by the client, never sent)
 * and encrypted at scale 2^in_bits on the first limbs of the chain whose
 * product exceeds 2^99 (two limbs for the presets); A is encoded at
 * 2^pt_bits / (max|A| * K), in_bits + pt_bits = 96, so each result slot is at
 * most 2^96 in magnitude: it decrypts exactly with a two-limb CRT, no rescale
 * needed. The split is a property of the layout (CkksHeloraScales): the
 * plain split 48/48 gives a max error of u ~1e-10 relative to
 * max|h| * max|A| * d; the private split 72/24 (the adapter-private mode,
 * ckks-privacy.h) puts the bits on h, so the evaluation's error e * p_A that
 * the flooding must drown is 2^24 times smaller relative to the result, at the
 * price of A quantised to 2^-24 (~1e-6 relative error of u). h is still
 * rounded at 2^48 (h is a float: 24 bits), then multiplied by 2^24 mod q
 * before the encryption error is added, so the error stays that of a fresh
 * encryption. The evaluator refuses inputs at another scale than its
 * layout's (CKKS_ERR_SCALE): client and evaluator must agree on the split.
 *
 * Sharing. The input ciphertexts depend only on (context, d): one encryption
 * of h serves every plan with the same context and d (q, k, v projections of
 * the same hidden state), whatever their r.
 *
 * Evaluator-side functions (layouts, plans, ckks_helora_evaluate) live in
 * ckks-helora-plan.c, which references no secret-key code. Client-side
 * functions live in ckks-helora-client.c.
 *
 * Ownership: *_new results belong to the caller; layouts and plans keep a
 * pointer to their context. Thread-safety: layouts and plans are read-only
 * after creation and may be shared by any number of threads; each call
 * allocates its own scratch; ciphertexts passed as outputs must not be
 * shared between concurrent calls.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "ckks-cipher.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CkksHeloraLayout CkksHeloraLayout;
typedef struct CkksHeloraPlan CkksHeloraPlan;
struct CkksSecretKey;
struct CkksPublicKey;

/* How a layout splits the result's 2^96 scale between h and A. */
typedef enum {
  CKKS_HELORA_SCALES_PLAIN = 0,    /* h at 2^48, A at 2^48: best precision */
  CKKS_HELORA_SCALES_PRIVACY = 1,  /* h at 2^72, A at 2^24: room for flooding */
} CkksHeloraScales;

/* How a layout places the rows of A in a packed plaintext. h is real, so
 * the product of its slot with a complex slot a + i a' is h a + i h a':
 * with two rows per copy, one as the real and one as the imaginary part,
 * the same products give twice the rows, and the trace decryption reads
 * the imaginary part of a segment sum from the same 2c coefficients as its
 * real part. Half the results per token: half the plaintext memory, half
 * the products, half the decryptions; the same input ciphertexts. */
typedef enum {
  CKKS_HELORA_PACKING_REAL = 0,     /* row b c + t in copy t of result b */
  CKKS_HELORA_PACKING_COMPLEX = 1,  /* rows 2 b c + t (real) and 2 b c + c + t
                                       (imaginary) in copy t of result b; only
                                       for layouts that decrypt through the
                                       trace (c <= 64) and the plain scales */
} CkksHeloraPacking;

/* ---- shared (key-free, A-free) ---- */

/* The packing for vectors of length @d (1..2^24) and @r outputs (1..2^16),
 * plain scales. */
CkksStatus ckks_helora_layout_new (const CkksContext *ctx, size_t d, size_t r,
                                   CkksHeloraLayout **out);
/* The same with the scale split @scales. */
CkksStatus ckks_helora_layout_new_scaled (const CkksContext *ctx, size_t d, size_t r,
                                          CkksHeloraScales scales, CkksHeloraLayout **out);
/* The same with the packing @packing: CKKS_ERR_UNSUPPORTED for the complex
 * packing where the layout would decode in full or with the private scales. */
CkksStatus ckks_helora_layout_new_packed (const CkksContext *ctx, size_t d, size_t r,
                                          CkksHeloraScales scales, CkksHeloraPacking packing,
                                          CkksHeloraLayout **out);
CkksHeloraScales ckks_helora_layout_scales (const CkksHeloraLayout *layout);
CkksHeloraPacking ckks_helora_layout_packing (const CkksHeloraLayout *layout);
/* log2 of the scale h is encrypted at, and of A's plaintext scale before
 * the 1 / (max|A| K) (they add up to 96). */
unsigned ckks_helora_layout_input_bits (const CkksHeloraLayout *layout);
unsigned ckks_helora_layout_plain_bits (const CkksHeloraLayout *layout);
void ckks_helora_layout_free (CkksHeloraLayout *layout);
size_t ckks_helora_layout_d (const CkksHeloraLayout *layout);
size_t ckks_helora_layout_r (const CkksHeloraLayout *layout);
/* K: ciphertexts per encrypted h. */
size_t ckks_helora_layout_n_inputs (const CkksHeloraLayout *layout);
/* B: result ciphertexts per evaluation. */
size_t ckks_helora_layout_n_outputs (const CkksHeloraLayout *layout);
/* c: copies of a chunk per ciphertext. */
size_t ckks_helora_layout_copies (const CkksHeloraLayout *layout);
/* Limb count of inputs and results. */
uint32_t ckks_helora_layout_limbs (const CkksHeloraLayout *layout);

/* @count ciphertexts at the layout's limb count (inputs or outputs; reuse
 * them token after token). Free with ckks_helora_ciphertexts_free. */
CkksStatus ckks_helora_ciphertexts_new (const CkksHeloraLayout *layout,
                                        size_t count, CkksCiphertext ***out);
void ckks_helora_ciphertexts_free (CkksCiphertext **cts, size_t count);

/* ---- evaluator ---- */

/* Encodes A (@r x @d floats, row-major, finite) once, in NTT form, at the
 * plain scales (ckks_helora_plan_new) or at @scales. */
CkksStatus ckks_helora_plan_new (const CkksContext *ctx, size_t d, size_t r,
                                 const float *a, CkksHeloraPlan **out);
CkksStatus ckks_helora_plan_new_scaled (const CkksContext *ctx, size_t d, size_t r,
                                        const float *a, CkksHeloraScales scales,
                                        CkksHeloraPlan **out);
/* ... and the packing @packing (as ckks_helora_layout_new_packed). Client
 * and evaluator must use the same packing. */
CkksStatus ckks_helora_plan_new_packed (const CkksContext *ctx, size_t d, size_t r,
                                        const float *a, CkksHeloraScales scales,
                                        CkksHeloraPacking packing, CkksHeloraPlan **out);
void ckks_helora_plan_free (CkksHeloraPlan *plan);
const CkksHeloraLayout *ckks_helora_plan_layout (const CkksHeloraPlan *plan);

/* outputs[b] = sum_k inputs[k] x pt[b][k] for b < B: ct x pt only, in NTT
 * form, no key. @inputs: K ciphertexts from ckks_helora_encrypt_* with the
 * same context, d and scales (CKKS_ERR_SCALE for inputs at another scale
 * than the layout's 2^in_bits); @outputs: B ciphertexts from
 * ckks_helora_ciphertexts_new (overwritten). The counts must be K and B
 * (CKKS_ERR_INVALID_ARGUMENT otherwise). */
CkksStatus ckks_helora_evaluate (const CkksHeloraPlan *plan,
                                 CkksCiphertext *const *inputs, size_t n_inputs,
                                 CkksCiphertext *const *outputs, size_t n_outputs);

/* The same products, but the results come out trace-only: c1 in full and c0
 * reduced to the 2c NTT block sums the trace decryption reads. Less memory
 * traffic for both sides; the results are good for ckks_helora_decrypt and
 * ckks_helora_result_serialize only. CKKS_ERR_UNSUPPORTED for layouts
 * decoded in full (c > 64): use ckks_helora_evaluate there. */
CkksStatus ckks_helora_evaluate_compact (const CkksHeloraPlan *plan,
                                         CkksCiphertext *const *inputs, size_t n_inputs,
                                         CkksCiphertext *const *outputs, size_t n_outputs);

/* Results b in [@first, @first + @count) only, in the compact form where
 * the layout has it (trace decryption) and in full otherwise: the other
 * outputs are not touched, so several threads may evaluate disjoint parts
 * of the same @outputs at once. @n_outputs must be B. */
CkksStatus ckks_helora_evaluate_part (const CkksHeloraPlan *plan,
                                      CkksCiphertext *const *inputs, size_t n_inputs,
                                      CkksCiphertext *const *outputs, size_t n_outputs,
                                      size_t first, size_t count);

/* The two evaluations with the adapter-private pads (ckks-privacy.h) fused
 * into the output write: outputs[b] = pads[b] + sum_k inputs[k] x pt[b][k],
 * in the same pass as the products (no second pass over the results).
 * @pads: B ciphertexts at the layout's limb count, read only; results are
 * bit for bit those of an evaluation followed by adding the pads (the
 * compact form: c0's block sums include the pad's). The compact evaluation
 * also takes compact pads (ckks_privacy_pad_compact: c0 as its block sums,
 * so only c1 is read in full). A pad must never be used twice: the caller
 * frees it after the call. */
CkksStatus ckks_helora_evaluate_padded (const CkksHeloraPlan *plan,
                                        CkksCiphertext *const *inputs, size_t n_inputs,
                                        CkksCiphertext *const *outputs, size_t n_outputs,
                                        CkksCiphertext *const *pads);
CkksStatus ckks_helora_evaluate_compact_padded (const CkksHeloraPlan *plan,
                                                CkksCiphertext *const *inputs,
                                                size_t n_inputs,
                                                CkksCiphertext *const *outputs,
                                                size_t n_outputs,
                                                CkksCiphertext *const *pads);

/* Compact results for the trip evaluator -> client: c0 shrinks to the sums
 * of its 2c NTT blocks per limb, all the trace decryption reads (about half
 * the bytes of the full ciphertext). Format: "CKHR", u32 version, u32 body
 * length, body (parameter fingerprint, u32 limbs, u32 2c, f64 scale, the
 * block sums, c1), u64 checksum, as in ckks-serial.h. Only for layouts with
 * trace decryption (ckks_helora_result_serialized_size() returns 0 for the
 * others: send the full ciphertext with ckks_ciphertext_serialize()). A
 * ciphertext read back this way is only good for ckks_helora_decrypt: every
 * other operation refuses it with CKKS_ERR_MISMATCH. */
size_t ckks_helora_result_serialized_size (const CkksHeloraLayout *layout);
CkksStatus ckks_helora_result_serialize (const CkksHeloraLayout *layout,
                                         const CkksCiphertext *result,
                                         uint8_t *buf, size_t len);
/* Into a ciphertext from ckks_helora_ciphertexts_new (no allocation). */
CkksStatus ckks_helora_result_deserialize_into (const CkksHeloraLayout *layout,
                                                CkksCiphertext *result,
                                                const uint8_t *data, size_t len);

/* ---- client ---- */

/* Encrypts h (length d) into the K ciphertexts @inputs (secret-key: seeded,
 * half the upload; or public-key); @n_inputs must be K. *h_factor receives
 * max|h| (1 if h = 0): keep it for ckks_helora_decrypt, never send it. */
CkksStatus ckks_helora_encrypt_sk (const CkksHeloraLayout *layout,
                                   const struct CkksSecretKey *sk, const float *h,
                                   CkksCiphertext *const *inputs, size_t n_inputs,
                                   double *h_factor);
CkksStatus ckks_helora_encrypt_pk (const CkksHeloraLayout *layout,
                                   const struct CkksPublicKey *pk, const float *h,
                                   CkksCiphertext *const *inputs, size_t n_inputs,
                                   double *h_factor);
/* Decrypts the B results of an evaluation (@n_outputs must be B) and sums
 * the segments: u (length r) = A * h. @layout must have the plan's d and r. */
CkksStatus ckks_helora_decrypt (const CkksHeloraLayout *layout,
                                const struct CkksSecretKey *sk,
                                CkksCiphertext *const *outputs, size_t n_outputs,
                                double h_factor, double *u);

/* The same for results b in [@first, @first + @count) only (@n_outputs
 * must be B): writes u[b c + t] for those b, t < c (and b c + t < r);
 * disjoint parts may be decrypted by several threads at once. */
CkksStatus ckks_helora_decrypt_part (const CkksHeloraLayout *layout,
                                     const struct CkksSecretKey *sk,
                                     CkksCiphertext *const *outputs, size_t n_outputs,
                                     size_t first, size_t count, double h_factor, double *u);

#ifdef __cplusplus
}
#endif
