/* ckks-gpu-helora-private.h: the GPU HE-LoRA session's host emulation, for
 * the tests (internal).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ckks-gpu-helora.h"

/* One token of a session for @sk and @plans computed on the host from the
 * very tables, key material and plaintexts a session uploads, with the
 * kernels' arithmetic in the kernels' order (ckks_cuda_check_token): no GPU
 * needed, but slow. Arguments as ckks_gpu_helora_session_run, groups in the
 * same order. CKKS_ERR_UNSUPPORTED in builds without CUDA. */
CkksStatus ckks_gpu_helora_host_token (const CkksSecretKey *sk,
                                       const CkksHeloraPlan *const *plans, size_t n_plans,
                                       const float *const *h, size_t n_h, double *const *u,
                                       size_t n_u);

/* One token of a real session and of the host emulation with the same seed:
 * CKKS_OK when the device's input ciphertexts, results and u equal the
 * host's bit for bit; CKKS_ERR_MISMATCH with *@stage naming the first stage
 * that differs; the session's errors otherwise (CKKS_ERR_UNSUPPORTED
 * without a GPU). The device's intermediate values are read back: for
 * tests only. */
CkksStatus ckks_gpu_helora_compare_host (const CkksSecretKey *sk,
                                         const CkksHeloraPlan *const *plans, size_t n_plans,
                                         const float *const *h, size_t n_h,
                                         const char **stage);

/* The device-pointer run of @session exercised from host buffers: rows x
 * d_g floats of h per group, copied to device memory, run row by row
 * (ckks_gpu_helora_session_run_device, on a stream of its own), every
 * plan's u copied out with ckks_gpu_helora_session_copy_u and back to
 * u[p] (rows x r_p floats). Blocking; for tests (fresh CSPRNG seeds).
 * CKKS_ERR_UNSUPPORTED without CUDA. */
CkksStatus ckks_gpu_helora_session_check_device_run (CkksGpuHeloraSession *session,
                                                     const float *const *h, size_t n_h,
                                                     size_t rows, float *const *u, size_t n_u);
/* One row per session through ckks_gpu_helora_sessions_run_device from
 * host buffers: h[i][g] (d_g floats of session i's group g) in, u[i][p]
 * (r_p floats) out. Blocking; for tests (fresh CSPRNG seeds). */
CkksStatus ckks_gpu_helora_sessions_check_device_run (CkksGpuHeloraSession *const *sessions,
                                                      size_t n_sessions,
                                                      const float *const *const *h,
                                                      float *const *const *u);
