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

/* ---- h and u in device memory (the engine's GPU backend) ----
 *
 * For a caller whose h already is in device memory (an LLM running on the
 * same GPU): nothing of h crosses to the host, and the host does not wait.
 * Per token and row: ckks_gpu_helora_session_run_device reads h on the
 * session's stream after everything the caller enqueued on its stream so
 * far (a CUDA event), computes max|h| and 1/max|h| on the device (a
 * reduction kernel; they stay in device memory and are never sent), runs
 * the token and writes every plan's u as f32 into row @row of the
 * session's u rows, then makes the caller's stream wait for it;
 * ckks_gpu_helora_session_copy_u enqueues on the caller's stream the copy
 * of a plan's rows into the caller's device buffer. u is f32 because the
 * caller computes with it in f32 (B u on the GPU) and the host variant's
 * users round it to float too: decrypting yields doubles, rounded once.
 * The seed is drawn from the CSPRNG per call and handed to the device in a
 * launch's parameters (no pinned copy lingers on the host).
 *
 * A non-finite h cannot be refused before the device has read it: it gives
 * u = NaN (as a plain A h would) instead of CKKS_ERR_INVALID_ARGUMENT.
 * @stream is a cudaStream_t (NULL: the legacy default stream); use the same
 * stream for a run and the copies of its rows. Not usable in a CUDA graph
 * capture (the seed must be fresh per token). */

/* Room for @rows rows of u per plan (grows only; a growth synchronises the
 * session's stream and allocates: reserve the largest batch up front). */
CkksStatus ckks_gpu_helora_session_reserve_rows (CkksGpuHeloraSession *session, size_t rows);
/* One token: @h_dev[g] (device pointer, d_g floats) for each of the @n_h
 * groups; every plan's u into row @row (< the reserved rows). Returns
 * without waiting for the GPU; a device failure may surface at a later
 * call (CKKS_ERR_DEVICE). */
CkksStatus ckks_gpu_helora_session_run_device (CkksGpuHeloraSession *session,
                                               const float *const *h_dev, size_t n_h,
                                               size_t row, void *stream);
/* Several sessions' tokens in one launch sequence on @stream (e.g. the
 * sessions of several chats on one GPU): one CUDA event on @stream that
 * every session waits for, each session's token on its own stream (they
 * overlap on the GPU), @stream waiting for all. @h_dev[i] holds session
 * i's groups' device pointers, @rows[i] its row. Each session draws its own
 * seed. The sessions must be distinct; each is then used as after
 * ckks_gpu_helora_session_run_device. */
CkksStatus ckks_gpu_helora_sessions_run_device (CkksGpuHeloraSession *const *sessions,
                                                size_t n_sessions,
                                                const float *const *const *h_dev,
                                                const size_t *rows, void *stream);
/* Enqueues on @stream the copy of rows [@first_row, @first_row + @n_rows)
 * of plan @plan's u (r_p floats a row) into @u_dev (device memory). */
CkksStatus ckks_gpu_helora_session_copy_u (CkksGpuHeloraSession *session, size_t plan,
                                           size_t first_row, size_t n_rows, float *u_dev,
                                           void *stream);
/* The stages of the last ckks_gpu_helora_session_run_device from its CUDA
 * events, once the GPU finished it (-1 for stages not finished yet): h2d_us
 * is the on-device staging of h (copy + max|h|), d2h_us the rounding of u to
 * f32. CKKS_ERR_UNSUPPORTED without CUDA. */
CkksStatus ckks_gpu_helora_session_device_timings (CkksGpuHeloraSession *session,
                                                   CkksGpuHeloraTimings *timings);

#ifdef __cplusplus
}
#endif
