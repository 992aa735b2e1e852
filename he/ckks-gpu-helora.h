/* ckks-gpu-helora.h: the per-token HE-LoRA pipeline on an NVIDIA GPU.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A session holds, in device memory, a client's secret key and one or more
 * HE-LoRA plans (modules: the q, k, v, ... projections of one layer), and
 * runs a whole token on the GPU: h on the host in, u on the host out. Per
 * token it encodes h exactly as ckks_helora_encrypt_sk packs it (replicated
 * chunks, special FFT in double precision, rounding at 2^48, lift to the
 * layout's 2^in_bits), encrypts it with the secret key (c1 = a uniform mod
 * q_i, c0 = -a s + m + e, e centred binomial with parameter 21 as on the
 * CPU; a and e expanded on the GPU with ChaCha20 from a fresh 32-byte seed
 * drawn from OpenSSL's CSPRNG each token), evaluates every plan's ct x pt
 * products, decrypts through the trace as ckks_helora_decrypt does and
 * copies u back: u[m] is what ckks_helora_decrypt would give for module m,
 * within CKKS error (the encryption randomness differs, nothing else).
 *
 * Plans with the same d and scale split (ckks_helora_layout_input_bits)
 * share one encrypted h: an input group. The caller passes one h per group,
 * in the order ckks_gpu_helora_session_group() reports.
 *
 * Limits: layouts of two limbs (every preset) with at most 256 copies per
 * result, i.e. d >= N / 512 (16 at "fast", 32 at "default", 64 at "wide");
 * otherwise CKKS_ERR_UNSUPPORTED.
 *
 * Builds without CUDA (TS_HAVE_CUDA 0) and machines without a usable GPU:
 * ckks_gpu_helora_session_new returns CKKS_ERR_UNSUPPORTED with the reason
 * (ckks_gpu_available) in @why; nothing else is needed to fall back to the
 * CPU functions of ckks-helora.h.
 *
 * Memory: every device buffer (the key's copy, the plans' plaintexts, all
 * ciphertexts, a pinned host staging area) is allocated when the session is
 * made, sized from the plans; a token allocates nothing. The token's whole
 * launch sequence (H2D, encode, encrypt, evaluate, decrypt, D2H) is one
 * CUDA graph captured once and replayed.
 *
 * Ownership: the session copies what it needs from @sk and @plans while it
 * is made (they may be freed afterwards; the context must outlive the
 * session). Freeing the session wipes the key's device copy (cudaMemset),
 * every other device buffer and the pinned staging memory. Nothing secret is
 * ever logged.
 *
 * Thread-safety: a session is used by one thread at a time (run calls must
 * not overlap); any number of sessions, in any threads, may share a GPU:
 * each has its own stream, graph and memory. The current CUDA device of the
 * creating thread is used.
 */
#pragma once

#include <stddef.h>

#include "ckks-helora.h"
#include "ckks-keys.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CkksGpuHeloraSession CkksGpuHeloraSession;

/* One token's stages on the GPU in µs, from CUDA events in the graph (-1
 * where an event could not be read). */
typedef struct {
  double h2d_us;          /* h (and the seed) host -> device */
  double encrypt_us;      /* encode + encrypt */
  double evaluate_us;     /* every module's ct x pt */
  double decrypt_us;      /* decrypt + segment sums */
  double d2h_us;          /* u device -> host */
  double device_us;       /* first event to last */
} CkksGpuHeloraTimings;

/* A session for @sk and the @n_plans plans (all of sk's context; at least
 * one). CKKS_ERR_UNSUPPORTED when this build has no CUDA kernels, no GPU is
 * usable or a layout is outside the limits above; CKKS_ERR_DEVICE when the
 * GPU fails or lacks memory; @why (may be NULL) then receives one sentence. */
CkksStatus ckks_gpu_helora_session_new (const CkksSecretKey *sk,
                                        const CkksHeloraPlan *const *plans, size_t n_plans,
                                        CkksGpuHeloraSession **out, char *why, size_t why_len);
/* Wipes and frees; NULL is allowed. */
void ckks_gpu_helora_session_free (CkksGpuHeloraSession *session);

/* Input groups, the group of plan @plan and a group's d. */
size_t ckks_gpu_helora_session_n_groups (const CkksGpuHeloraSession *session);
size_t ckks_gpu_helora_session_group (const CkksGpuHeloraSession *session, size_t plan);
size_t ckks_gpu_helora_session_group_d (const CkksGpuHeloraSession *session, size_t group);

/* One token: @h[g] (d_g finite floats) for each of the @n_h groups;
 * @u[p] (r_p doubles) for each of the @n_u plans receives A_p h. @timings
 * may be NULL. Blocks until u is on the host. CKKS_ERR_INVALID_ARGUMENT for
 * wrong counts, NULL or non-finite inputs; CKKS_ERR_RANDOM when the CSPRNG
 * fails; CKKS_ERR_DEVICE when the GPU does. */
CkksStatus ckks_gpu_helora_session_run (CkksGpuHeloraSession *session, const float *const *h,
                                        size_t n_h, double *const *u, size_t n_u,
                                        CkksGpuHeloraTimings *timings);

#ifdef __cplusplus
}
#endif
