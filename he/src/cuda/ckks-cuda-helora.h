/* ckks-cuda-helora.h: the device side of the GPU HE-LoRA session (internal,
 * C-callable; built only with CUDA).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * ckks-gpu-helora.c prepares everything on the host (tables, the key's and
 * the plans' NTT values with their Shoup companions) in a CkksCudaHeloraSpec;
 * ckks_cuda_helora_new uploads it into one device allocation, captures one
 * token as a CUDA graph and keeps it; ckks_cuda_helora_run replays it.
 *
 * Device layout per input group g (plans sharing d and the input scale):
 * K ciphertexts, ciphertext k at inputs + k * 2 L N words (c0, then c1, L
 * limbs of N words each, NTT form as on the CPU); per module: B results of
 * the same shape, their trace block sums, and r doubles of u.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "ckks-status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CKKS_CUDA_HELORA_MAX_LIMBS 2
/* Stream domains of the ChaCha20 keystreams: word 13 of the state (the
 * first nonce word); word 14 is the ciphertext, word 15 the limb. */
#define CKKS_CUDA_DOMAIN_ERROR 0x65727231u     /* "1rre" */
#define CKKS_CUDA_DOMAIN_UNIFORM 0x696e6931u   /* "1ini" */
/* Up to this many copies per result the session decrypts through the trace
 * (2c x 2c matrices per limb on the device). */
#define CKKS_CUDA_HELORA_MAX_COPIES 256

typedef struct {
  uint64_t q;
  uint64_t ratio_lo, ratio_hi;     /* floor(2^128 / q) */
  uint64_t ratio64;                /* floor(2^64 / q) */
} CkksCudaLimb;

typedef struct {
  uint32_t d;
  uint32_t chunks;                 /* K */
  uint32_t chunk_len;              /* L */
  uint32_t copies;                 /* c of the input packing */
  double encode_scale;             /* 2^encode_bits / (N/2): the rounding scale */
  /* 2^(in_bits - encode_bits) mod q_i and its companion, per limb */
  uint64_t lift_w[CKKS_CUDA_HELORA_MAX_LIMBS], lift_shoup[CKKS_CUDA_HELORA_MAX_LIMBS];
} CkksCudaHeloraGroup;

typedef struct {
  uint32_t group;
  uint32_t r;
  uint32_t n_outputs;              /* B */
  uint32_t copies;                 /* c */
  uint32_t span;                   /* L' */
  double span_over_scale;          /* L' / the result's scale */
  /* B * K plaintexts of L * N words, (b, k) at (b K + k) L N, NTT form,
   * and their 64-bit Shoup companions at the same offsets */
  const uint64_t *pt, *pt_shoup;
  /* trace tables as in ckks-helora-private.h, for G = 2c: W (L * G * G)
   * and the cosines (c * G) */
  const uint64_t *trace_w;
  const double *trace_re;
} CkksCudaHeloraModule;

typedef struct {
  const struct CkksContext *ctx;   /* for the kernels' tables (ckks_cuda_tables_new) */
  uint32_t n;                      /* ring degree */
  uint32_t limbs;                  /* L (2) */
  CkksCudaLimb limb[CKKS_CUDA_HELORA_MAX_LIMBS];
  /* CRT of limbs 0 and 1 (CkksCrt2) */
  uint64_t crt_inv, crt_inv_shoup, crt_half_t, crt_half_a;
  /* forward NTT twiddles psi_rev and 64-bit companions, L * N (the host
   * emulation's NTT; the device uses ckks_cuda_ntt_forward) */
  const uint64_t *psi_rev, *psi_rev_shoup;
  /* the secret key s and -s in NTT form with companions, L * N each */
  const uint64_t *s, *s_shoup, *neg_s, *neg_s_shoup;
  /* special FFT twiddles (N/2 each) and the bit reversal over N/2 */
  const double *fft_re, *fft_im;
  const uint32_t *slot_bitrev;
  const CkksCudaHeloraGroup *groups;
  uint32_t n_groups;
  const CkksCudaHeloraModule *modules;
  uint32_t n_modules;
} CkksCudaHeloraSpec;

/* Stages timed with CUDA events, in µs. */
typedef enum {
  CKKS_CUDA_STAGE_H2D,
  CKKS_CUDA_STAGE_ENCRYPT,         /* encode + encrypt */
  CKKS_CUDA_STAGE_EVALUATE,
  CKKS_CUDA_STAGE_DECRYPT,         /* decrypt + segment sums */
  CKKS_CUDA_STAGE_D2H,
  CKKS_CUDA_N_STAGES
} CkksCudaStage;

typedef struct CkksCudaHelora CkksCudaHelora;

/* Uploads @spec (read during the call only), allocates every buffer and
 * captures the token graph on a stream of its own. CKKS_ERR_DEVICE (with
 * @why) when the GPU fails or lacks memory. */
CkksStatus ckks_cuda_helora_new (const CkksCudaHeloraSpec *spec, CkksCudaHelora **out,
                                 char *why, size_t why_len);
/* Wipes every device buffer (the key's copy included) and the pinned
 * staging memory, then frees them. */
void ckks_cuda_helora_free (CkksCudaHelora *dev);

/* One token: h[g] (d_g floats, finite) scaled by inv[g] = 1 / max|h_g|,
 * h_factor[g] = max|h_g|, a fresh 32-byte @seed; u[m] receives r_m doubles.
 * @stage_us (NULL: not read) receives the event times. Blocks until u is
 * on the host. */
CkksStatus ckks_cuda_helora_run (CkksCudaHelora *dev, const float *const *h,
                                 const double *inv, const double *h_factor,
                                 const uint8_t seed[32], double *const *u,
                                 double stage_us[CKKS_CUDA_N_STAGES]);

/* ---- the device-pointer run ---- */

/* Room for @rows rows of every plan's u (f32) in device memory, the place
 * ckks_cuda_helora_run_device writes to (grows only; synchronises the
 * session's stream when it grows). */
CkksStatus ckks_cuda_helora_reserve_rows (CkksCudaHelora *dev, size_t rows);
/* One token with h in device memory: h_dev[g] (d_g floats) for each group,
 * read on the session's stream after everything enqueued on @stream so far
 * (an event; no host wait); max|h| and its inverse computed on the device;
 * every plan's u written as f32 into row @row (< the reserved rows) of the
 * session's u area; @stream then waits for it. @seed is passed by value in
 * a launch's parameters: the caller may wipe it as soon as this returns.
 * Returns without waiting for the device; a device error may show only at
 * a later call. */
CkksStatus ckks_cuda_helora_run_device (CkksCudaHelora *dev, const float *const *h_dev,
                                        size_t row, const uint8_t seed[32], void *stream);
/* Several sessions' tokens in one launch sequence: one event on @stream
 * that every session's stream waits for, each session's token (h_dev[i]
 * per group, row rows[i], seed seeds + 32 i) enqueued on its own stream so
 * that they run concurrently, and @stream waiting for all of them. The
 * sessions must be distinct and on the current device. */
CkksStatus ckks_cuda_helora_run_device_batch (CkksCudaHelora *const *devs, size_t n,
                                              const float *const *const *h_dev,
                                              const size_t *rows, const uint8_t *seeds,
                                              void *stream);
/* Enqueues on @stream the copy of rows [first_row, first_row + n_rows) of
 * plan @plan's u (f32) into @dst (device memory, r floats a row). */
CkksStatus ckks_cuda_helora_copy_u (CkksCudaHelora *dev, uint32_t plan, size_t first_row,
                                    size_t n_rows, float *dst, void *stream);
/* The stage times of the last ckks_cuda_helora_run_device, once the device
 * has finished it (-1 for a stage not finished or not readable). Stage H2D
 * is the on-device staging of h (max|h|, the copy into the input block),
 * D2H the conversion of u to f32. */
void ckks_cuda_helora_device_timings (CkksCudaHelora *dev, double stage_us[CKKS_CUDA_N_STAGES]);

/* Tests: @rows rows of every group's h (h[g]: rows x d_g floats, host)
 * copied to device memory, ckks_cuda_helora_run_device per row on a stream
 * of its own with seed row of @seeds (rows x 32 bytes), every plan's rows
 * copied out with ckks_cuda_helora_copy_u into device memory and back into
 * u[p] (rows x r_p floats, host); blocking. */
CkksStatus ckks_cuda_helora_check_device_run (CkksCudaHelora *dev, const float *const *h,
                                              size_t rows, const uint8_t *seeds,
                                              float *const *u);

/* Tests: one row per session through ckks_cuda_helora_run_device_batch
 * from host buffers (h[i][g], u[i][p]), session i with seed i of @seeds
 * (n x 32 bytes); blocking. */
CkksStatus ckks_cuda_helora_check_device_batch (CkksCudaHelora *const *devs, size_t n,
                                                const float *const *const *h,
                                                const uint8_t *seeds,
                                                float *const *const *u);

/* ---- host self-checks of the device arithmetic (ckks-cuda-helora-check.cu) ---- */

/* The ChaCha20 block function. */
void ckks_cuda_check_chacha20_block (const uint8_t key[32], uint32_t counter,
                                     const uint8_t nonce[12], uint8_t out[64]);
/* The samplers as the kernels run them: errors e[0..n) of ciphertext @ct
 * (n a multiple of 8), uniform a[0..n) mod q of (ct, limb) (n a multiple
 * of 4). */
void ckks_cuda_check_sample_error (const uint8_t seed[32], uint32_t ct, int8_t *e, size_t n);
void ckks_cuda_check_sample_uniform (const uint8_t seed[32], uint32_t ct, uint32_t limb,
                                     const CkksCudaLimb *limb_consts, uint64_t *a, size_t n);
/* The encoder as the kernels run it: the chunk @h (len values) scaled by
 * @inv, packed with @copies copies into @slots slots, inverse special FFT
 * (twiddles fft_re/fft_im, bit reversal slot_bitrev), rounded at
 * @encode_scale: coeffs[0 .. 2 slots). @work: 2 slots doubles. */
void ckks_cuda_check_encode (const float *h, uint32_t len, uint32_t copies, double inv,
                             uint32_t slots, const double *fft_re, const double *fft_im,
                             const uint32_t *slot_bitrev, double encode_scale, double *work,
                             int64_t *coeffs);
/* The forward NTT of one limb as the kernel runs it (@a: n values < q). */
void ckks_cuda_check_ntt_forward (uint64_t *a, const uint64_t *psi_rev,
                                  const uint64_t *psi_rev_shoup, uint64_t q, uint32_t n);
/* Message limb values (m 2^lift + e) mod q and the two-limb CRT as the
 * kernels compute them, element-wise over @n. */
void ckks_cuda_check_message_limb (const int64_t *m, const int8_t *e, const CkksCudaLimb *lc,
                                   uint64_t lift_w, uint64_t lift_shoup, uint64_t *out, size_t n);
void ckks_cuda_check_crt2 (const uint64_t *a0, const uint64_t *a1, uint64_t q0, uint64_t q1,
                           uint64_t inv, uint64_t inv_shoup, uint64_t half_t, uint64_t half_a,
                           double *out, size_t n);
/* max|h| as the device reduces it (CKKS_CUDA_ABS_MAX_THREADS partial maxima,
 * then a tree): @inv and @factor as the kernel leaves them in the input
 * block (0 and NaN when some value is not finite, 1 and 1 for h = 0). */
void ckks_cuda_check_abs_max (const float *h, size_t d, double *inv, double *factor);
/* The whole token of ckks_cuda_helora_run on the host, from the same spec
 * and inputs, with the kernels' arithmetic in the kernels' order (slow; for
 * the tests). With @group_cts / @module_outs (NULL, or NULL entries: not
 * kept) it also keeps each group's input ciphertexts (K * 2 L N words) and
 * each module's results (B * 2 L N), laid out as on the device. */
CkksStatus ckks_cuda_check_token (const CkksCudaHeloraSpec *spec, const float *const *h,
                                  const double *inv, const double *h_factor,
                                  const uint8_t seed[32], double *const *u,
                                  uint64_t *const *group_cts, uint64_t *const *module_outs);
/* Copies the device's input ciphertexts and results of the last token into
 * host buffers shaped as above (NULL entries skipped; blocking). */
CkksStatus ckks_cuda_helora_read (CkksCudaHelora *dev, uint64_t *const *group_cts,
                                  uint64_t *const *module_outs);

#ifdef __cplusplus
}
#endif
