/* ckks-cuda-helora.cu: one HE-LoRA token on the GPU as one CUDA graph.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Per token: H2D of one pinned block (seed, per-group 1/max|h| and max|h|,
 * the h vectors), then per input group encode (replicated chunks, inverse
 * special FFT in double precision, rounding), message limbs + errors,
 * forward NTT (ckks_cuda_ntt_forward), uniform a and c0 += a (-s); per
 * module the ct x pt sums (ckks_cuda_mul_plain_accumulate), then
 * the trace block sums of c0 + c1 s, the 2c x 2c trace matrix, the two-limb CRT
 * and the segment sums scaled to u; D2H of every u. Every buffer comes from
 * one cudaMalloc made when the session is made; the sequence is captured
 * once and replayed. The per-element arithmetic is in
 * ckks-cuda-helora-math.cuh (checked on the host).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckks-cuda-helora-math.cuh"
#include "ckks-cuda-helora.h"
#include "ckks-cuda-kernels.h"

#define THREADS 256
#define WIDE_THREADS 1024
#define SEED_BYTES 32
#define ALIGN 256
/* Dynamic shared memory a block may opt into on sm_80 and sm_90 (minus a
 * margin); larger FFTs and NTTs work in global memory. */
#define SHARED_LIMIT (160 * 1024)

typedef struct {
  uint32_t limbs;
  CkksCudaLimb limb[CKKS_CUDA_HELORA_MAX_LIMBS];
} LimbParams;

typedef struct {
  CkksCudaHeloraGroup g;
  uint32_t ct_base;               /* stream domain of its first ciphertext */
  size_t h_offset;                /* bytes into the input block */
  double *fft_work;               /* K * 2 * slots (global-memory FFT only) */
  int64_t *coeffs;                /* K * N */
  uint64_t *cts;                  /* K * 2 L N */
} DevGroup;

typedef struct {
  CkksCudaHeloraModule m;         /* the host pointers are not kept */
  uint32_t g2;                    /* G = 2c */
  uint64_t *pt, *pt_shoup, *trace_w;
  double *trace_re;
  uint64_t *out;                  /* B * 2 L N */
  uint64_t *seg_sums;             /* B * L * G: segment_sums_kernel's */
  size_t u_offset;                /* doubles into the u block */
} DevModule;

struct CkksCudaHelora {
  uint32_t n, slots;
  LimbParams lp;
  uint64_t crt_inv, crt_inv_shoup, crt_half_t, crt_half_a;
  CkksCudaTables *tables;          /* NTT and ct x pt constants (he-cuda kernels) */
  cudaStream_t stream;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaEvent_t ev[CKKS_CUDA_N_STAGES + 1];
  int n_events;
  char *pool;
  size_t pool_bytes;
  unsigned char *host_in, *dev_in;   /* pinned and device input blocks */
  size_t in_bytes;
  double *host_u, *dev_u;
  size_t u_count;
  uint64_t *s, *s_shoup, *neg_s, *neg_s_shoup;
  double *fft_re, *fft_im;
  uint32_t *bitrev;
  DevGroup *groups;
  uint32_t n_groups;
  DevModule *modules;
  uint32_t n_modules;
  /* The device-pointer run: its own stage events, the caller's stream's
   * position and the end of the token, and the f32 u rows it writes (plan
   * i at u_offset_i * rows_cap, r_i floats a row). */
  cudaEvent_t dev_ev[CKKS_CUDA_N_STAGES + 1];
  int n_dev_events;
  cudaEvent_t caller_ev, done_ev;
  float *u_rows;
  size_t rows_cap;
};

static void
say (char *why, size_t why_len, const char *what, cudaError_t err)
{
  if (why && why_len > 0)
    snprintf (why, why_len, "%s: %s", what, cudaGetErrorString (err));
}

/* ---- kernels (internal linkage: no clash with other kernel files) ---- */

namespace {

/* One chunk per block: pack, inverse special FFT, round into @coeffs. The
 * FFT works in dynamic shared memory when @shared, else in @work (global).
 * The message limbs are lift_kernel's: on one multiprocessor the errors'
 * ChaCha20 blocks and the limb arithmetic took most of this kernel's
 * 86 us at N = 16384 (H200). */
template <bool shared>
__global__ void __launch_bounds__ (WIDE_THREADS)
encode_kernel (const unsigned char *in, size_t h_offset, uint32_t group, CkksCudaHeloraGroup g,
               uint32_t slots, const double *fft_re, const double *fft_im,
               const uint32_t *bitrev, double *work, int64_t *coeffs)
{
  extern __shared__ double smem[];
  uint32_t k = blockIdx.x, n = 2 * slots;
  const float *h = (const float *) (in + h_offset);
  double inv = ((const double *) (in + SEED_BYTES))[2 * group];
  uint32_t base = k * g.chunk_len;
  uint32_t len = base >= g.d ? 0 : (g.d - base < g.chunk_len ? g.d - base : g.chunk_len);
  double *re = shared ? smem : work + (size_t) k * 2 * slots, *im = re + slots;
  for (uint32_t s = threadIdx.x; s < slots; s += blockDim.x)
    {
      re[s] = hd_helora_slot_value (h + base, len, g.copies, inv, s);
      im[s] = 0.0;
    }
  __syncthreads ();
  /* Two stages per barrier: the butterflies of stages hl and hl / 2 over
   * four elements stay in one thread, the same ones in the same order as
   * one stage at a time (bit for bit the CPU's). */
  uint32_t hl = slots >> 1;
  for (; hl >= 2; hl >>= 2)
    {
      for (uint32_t idx = threadIdx.x; idx < slots / 4; idx += blockDim.x)
        hd_fft_inverse_two_stages (re, im, idx, hl, fft_re, fft_im);
      __syncthreads ();
    }
  if (hl == 1)
    {
      for (uint32_t idx = threadIdx.x; idx < slots / 2; idx += blockDim.x)
        hd_fft_inverse_butterfly (&re[2 * idx], &im[2 * idx], &re[2 * idx + 1],
                                  &im[2 * idx + 1], fft_re[1], fft_im[1]);
      __syncthreads ();
    }
  int64_t *m = coeffs + (size_t) k * n;
  for (uint32_t i = threadIdx.x; i < slots; i += blockDim.x)
    {
      uint32_t b = bitrev[i];
      m[i] = hd_round_scaled (re[b], g.encode_scale);
      m[slots + i] = hd_round_scaled (im[b], g.encode_scale);
    }
}

/* The message limbs of c0, (m 2^lift + e) mod q_i in coefficient form:
 * one thread per 8 coefficients of a chunk (one ChaCha20 block of errors),
 * every limb. */
__global__ void __launch_bounds__ (THREADS)
lift_kernel (const unsigned char *in, uint32_t ct_base, uint32_t chunks, uint32_t n,
             CkksCudaHeloraGroup g, LimbParams lp, const int64_t *coeffs, uint64_t *cts)
{
  size_t t = (size_t) blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= (size_t) chunks * (n / 8))
    return;
  uint32_t k = (uint32_t) (t / (n / 8)), blk = (uint32_t) (t % (n / 8));
  const int64_t *m = coeffs + (size_t) k * n + (size_t) blk * 8;
  uint64_t *c0 = cts + (size_t) k * 2 * lp.limbs * n + (size_t) blk * 8;
  int8_t e[8];
  hd_sample_error8 ((const uint32_t *) in, ct_base + k, blk, e);
  for (uint32_t i = 0; i < lp.limbs; i++)
    for (uint32_t j = 0; j < 8; j++)
      c0[(size_t) i * n + j] = hd_message_limb (m[j], e[j], lp.limb[i].q, lp.limb[i].ratio64,
                                                g.lift_w[i], g.lift_shoup[i]);
}

/* After the forward NTT of c0 (ckks_cuda_ntt_forward): c1 = a uniform (NTT
 * form directly, 4 values per ChaCha20 block) and c0 += a (-s), for every
 * limb of every input ciphertext of a group. */
__global__ void __launch_bounds__ (THREADS)
uniform_kernel (const unsigned char *in, uint32_t ct_base, uint32_t chunks, uint32_t n,
                LimbParams lp, const uint64_t *neg_s, const uint64_t *neg_s_shoup,
                uint64_t *cts)
{
  size_t t = (size_t) blockIdx.x * blockDim.x + threadIdx.x;
  size_t per_limb = n / 4, per_ct = per_limb * lp.limbs;
  if (t >= (size_t) chunks * per_ct)
    return;
  uint32_t k = (uint32_t) (t / per_ct);
  uint32_t i = (uint32_t) (t % per_ct / per_limb), blk = (uint32_t) (t % per_limb);
  const CkksCudaLimb *L = &lp.limb[i];
  uint64_t a[4];
  hd_sample_uniform4 ((const uint32_t *) in, ct_base + k, i, blk, L->q, L->ratio_lo,
                      L->ratio_hi, a);
  size_t ln = (size_t) lp.limbs * n, off = (size_t) i * n + (size_t) blk * 4;
  uint64_t *c0 = cts + (size_t) k * 2 * ln + off, *c1 = c0 + ln;
  for (int j = 0; j < 4; j++)
    {
      c1[j] = a[j];
      uint64_t as = ckks_cu_mul_shoup (a[j], neg_s[off + j], neg_s_shoup[off + j], L->q);
      c0[j] = ckks_cu_add_mod (c0[j], as, L->q);
    }
}

/* The NTT block sums of c0 + c1 s (ckks-helora-client.c trace_sums): one
 * block per result b and segment (limb i, beta) of L' values, into
 * seg_sums[b][i G + beta]. Sums mod q are exact in any order; a block per
 * segment spreads what took one multiprocessor per result 25 us at
 * N = 16384 (H200) over the whole GPU. */
__global__ void __launch_bounds__ (THREADS)
segment_sums_kernel (const uint64_t *out, uint32_t n, uint32_t g2, uint32_t span, LimbParams lp,
                     const uint64_t *s, const uint64_t *s_shoup, uint64_t *seg_sums)
{
  __shared__ uint64_t partial[THREADS / 32];
  uint32_t b = blockIdx.x, seg = blockIdx.y, i = seg / g2, beta = seg % g2;
  uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  uint64_t q = lp.limb[i].q, acc = 0;
  size_t ln = (size_t) lp.limbs * n, off = (size_t) i * n + (size_t) beta * span;
  const uint64_t *c0 = out + (size_t) b * 2 * ln, *c1 = c0 + ln;
  for (uint32_t j = threadIdx.x; j < span; j += blockDim.x)
    {
      uint64_t c1s = ckks_cu_mul_shoup (c1[off + j], s[off + j], s_shoup[off + j], q);
      acc = ckks_cu_add_mod (acc, ckks_cu_add_mod (c0[off + j], c1s, q), q);
    }
  for (int w = 16; w > 0; w >>= 1)
    acc = ckks_cu_add_mod (acc, __shfl_down_sync (0xffffffffu, acc, w), q);
  if (lane == 0)
    partial[warp] = acc;
  __syncthreads ();
  if (threadIdx.x == 0)
    {
      for (uint32_t w = 1; w < blockDim.x / 32; w++)
        acc = ckks_cu_add_mod (acc, partial[w], q);
      seg_sums[(size_t) b * lp.limbs * g2 + seg] = acc;
    }
}

/* One result b per block, from its segment sums: m_kappa =
 * sum_beta W[kappa][beta] sums[beta] per limb, the two-limb CRT, and
 * u[b c + t] = (sum_kappa m_kappa cos_t,kappa) L' / scale * max|h|. */
__global__ void __launch_bounds__ (WIDE_THREADS)
decrypt_kernel (const unsigned char *in, uint32_t group, const uint64_t *seg_sums, uint32_t g2,
                uint32_t copies, uint32_t r, LimbParams lp, uint64_t crt_inv,
                uint64_t crt_inv_shoup, uint64_t crt_half_t, uint64_t crt_half_a,
                const uint64_t *trace_w, const double *trace_re, double span_over_scale,
                double *u)
{
  __shared__ uint64_t sums[CKKS_CUDA_HELORA_MAX_LIMBS * 2 * CKKS_CUDA_HELORA_MAX_COPIES];
  __shared__ uint64_t res[CKKS_CUDA_HELORA_MAX_LIMBS * 2 * CKKS_CUDA_HELORA_MAX_COPIES];
  __shared__ double m[2 * CKKS_CUDA_HELORA_MAX_COPIES];
  uint32_t b = blockIdx.x, segs = lp.limbs * g2;
  for (uint32_t seg = threadIdx.x; seg < segs; seg += blockDim.x)
    sums[seg] = seg_sums[(size_t) b * segs + seg];
  __syncthreads ();
  for (uint32_t idx = threadIdx.x; idx < lp.limbs * g2; idx += blockDim.x)
    {
      uint32_t i = idx / g2, kappa = idx % g2;
      const CkksCudaLimb *L = &lp.limb[i];
      const uint64_t *w = trace_w + ((size_t) i * g2 + kappa) * g2;
      const uint64_t *sv = sums + (size_t) i * g2;
      uint64_t acc = 0;
      for (uint32_t beta = 0; beta < g2; beta++)
        acc = ckks_cu_add_mod (acc, hd_mul_mod (w[beta], sv[beta], L->q, L->ratio_lo,
                                                L->ratio_hi), L->q);
      res[idx] = acc;
    }
  __syncthreads ();
  for (uint32_t kappa = threadIdx.x; kappa < g2; kappa += blockDim.x)
    m[kappa] = hd_crt2 (res[kappa], res[g2 + kappa], lp.limb[0].q, lp.limb[1].q, crt_inv,
                        crt_inv_shoup, crt_half_t, crt_half_a);
  __syncthreads ();
  double h_factor = ((const double *) (in + SEED_BYTES))[2 * group + 1];
  double factor = hd_dmul (span_over_scale, h_factor);
  for (uint32_t t = threadIdx.x; t < copies; t += blockDim.x)
    {
      uint32_t row = b * copies + t;
      if (row >= r)
        continue;
      double acc = 0;
      for (uint32_t kappa = 0; kappa < g2; kappa++)
        acc = hd_dadd (acc, hd_dmul (m[kappa], trace_re[(size_t) t * g2 + kappa]));
      u[row] = hd_dmul (acc, factor);
    }
}

/* The seed, by value in the launch's parameters, into the input block. */
typedef struct {
  uint32_t w[SEED_BYTES / 4];
} SeedWords;

__global__ void
seed_kernel (SeedWords seed, unsigned char *in)
{
  uint32_t t = threadIdx.x;
  if (t < SEED_BYTES / 4)
    ((uint32_t *) in)[t] = seed.w[t];
}

/* One group's h from the caller's device memory: copied into the input
 * block, max|h| reduced (hd_abs_max_*, checked on the host by
 * ckks_cuda_check_abs_max) into 1/max|h| and max|h| where the encoder and
 * the decoder read them. One block of CKKS_CUDA_ABS_MAX_THREADS threads. */
__global__ void __launch_bounds__ (CKKS_CUDA_ABS_MAX_THREADS)
stage_h_kernel (const float *h, uint32_t d, unsigned char *in, size_t h_offset, uint32_t group)
{
  __shared__ double part[CKKS_CUDA_ABS_MAX_THREADS];
  uint32_t t = threadIdx.x;
  float *dst = (float *) (in + h_offset);
  double m = 0;
  for (uint32_t i = t; i < d; i += CKKS_CUDA_ABS_MAX_THREADS)
    {
      float v = h[i];
      /* a non-finite value encodes as 0 (u is NaN through the factor) */
      dst[i] = isfinite (v) ? v : 0.0f;
      m = hd_abs_max_step (m, v);
    }
  part[t] = m;
  __syncthreads ();
  for (uint32_t s = CKKS_CUDA_ABS_MAX_THREADS / 2; s > 0; s >>= 1)
    {
      if (t < s)
        part[t] = hd_abs_max_combine (part[t], part[t + s]);
      __syncthreads ();
    }
  if (t == 0)
    {
      double *factors = (double *) (in + SEED_BYTES);
      hd_abs_max_finish (part[0], &factors[2 * group], &factors[2 * group + 1]);
    }
}

/* u (double, as decrypted) to the f32 rows the caller reads. */
__global__ void __launch_bounds__ (THREADS)
u_to_float_kernel (const double *u, uint32_t r, float *out)
{
  uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < r)
    out[t] = (float) u[t];
}

} /* namespace */

/* ---- session ---- */

/* Carves aligned pieces out of the pool; with base NULL it only counts. */
typedef struct {
  char *base;
  size_t used;
} Carver;

static void *
carve (Carver *c, size_t bytes)
{
  void *p = c->base ? c->base + c->used : NULL;
  c->used += (bytes + ALIGN - 1) / ALIGN * ALIGN;
  return p;
}

static bool
fft_in_shared (uint32_t slots)
{
  return 2 * (size_t) slots * sizeof (double) <= SHARED_LIMIT;
}

/* Assigns every device buffer; returns the pool size. */
static size_t
layout_pool (CkksCudaHelora *dev, const CkksCudaHeloraSpec *spec, char *base)
{
  Carver c = { base, 0 };
  size_t n = dev->n, ln = (size_t) spec->limbs * n;
  dev->dev_in = (unsigned char *) carve (&c, dev->in_bytes);
  dev->dev_u = (double *) carve (&c, dev->u_count * sizeof (double));
  dev->s = (uint64_t *) carve (&c, ln * 8);
  dev->s_shoup = (uint64_t *) carve (&c, ln * 8);
  dev->neg_s = (uint64_t *) carve (&c, ln * 8);
  dev->neg_s_shoup = (uint64_t *) carve (&c, ln * 8);
  dev->fft_re = (double *) carve (&c, dev->slots * sizeof (double));
  dev->fft_im = (double *) carve (&c, dev->slots * sizeof (double));
  dev->bitrev = (uint32_t *) carve (&c, dev->slots * sizeof (uint32_t));
  for (uint32_t g = 0; g < dev->n_groups; g++)
    {
      DevGroup *G = &dev->groups[g];
      size_t k = G->g.chunks;
      G->fft_work = fft_in_shared (dev->slots)
                    ? NULL : (double *) carve (&c, k * 2 * dev->slots * sizeof (double));
      G->coeffs = (int64_t *) carve (&c, k * n * sizeof (int64_t));
      G->cts = (uint64_t *) carve (&c, k * 2 * ln * 8);
    }
  for (uint32_t i = 0; i < dev->n_modules; i++)
    {
      DevModule *M = &dev->modules[i];
      const CkksCudaHeloraModule *m = &spec->modules[i];
      size_t pts = (size_t) m->n_outputs * dev->groups[m->group].g.chunks * ln;
      M->pt = (uint64_t *) carve (&c, pts * 8);
      M->pt_shoup = (uint64_t *) carve (&c, pts * 8);
      M->trace_w = (uint64_t *) carve (&c, (size_t) spec->limbs * M->g2 * M->g2 * 8);
      M->trace_re = (double *) carve (&c, (size_t) m->copies * M->g2 * sizeof (double));
      M->out = (uint64_t *) carve (&c, (size_t) m->n_outputs * 2 * ln * 8);
      M->seg_sums = (uint64_t *) carve (&c, (size_t) m->n_outputs * spec->limbs * M->g2 * 8);
    }
  return c.used;
}

static cudaError_t
upload (void *dst, const void *src, size_t bytes)
{
  return cudaMemcpy (dst, src, bytes, cudaMemcpyHostToDevice);
}

static cudaError_t
upload_spec (CkksCudaHelora *dev, const CkksCudaHeloraSpec *spec)
{
  size_t ln8 = (size_t) spec->limbs * dev->n * 8;
  cudaError_t err = cudaSuccess;
#define UP(dst, src, bytes) if (err == cudaSuccess) err = upload (dst, src, bytes)
  UP (dev->s, spec->s, ln8);
  UP (dev->s_shoup, spec->s_shoup, ln8);
  UP (dev->neg_s, spec->neg_s, ln8);
  UP (dev->neg_s_shoup, spec->neg_s_shoup, ln8);
  UP (dev->fft_re, spec->fft_re, dev->slots * sizeof (double));
  UP (dev->fft_im, spec->fft_im, dev->slots * sizeof (double));
  UP (dev->bitrev, spec->slot_bitrev, dev->slots * sizeof (uint32_t));
  for (uint32_t i = 0; i < dev->n_modules; i++)
    {
      DevModule *M = &dev->modules[i];
      const CkksCudaHeloraModule *m = &spec->modules[i];
      size_t pts8 = (size_t) m->n_outputs * dev->groups[m->group].g.chunks * ln8;
      UP (M->pt, m->pt, pts8);
      UP (M->pt_shoup, m->pt_shoup, pts8);
      UP (M->trace_w, m->trace_w, (size_t) spec->limbs * M->g2 * M->g2 * 8);
      UP (M->trace_re, m->trace_re, (size_t) m->copies * M->g2 * sizeof (double));
    }
#undef UP
  return err;
}

static unsigned
blocks_for (size_t threads)
{
  return (unsigned) ((threads + THREADS - 1) / THREADS);
}

/* Encode and encrypt every group's h (launches on the stream). */
static cudaError_t
launch_encrypt (CkksCudaHelora *dev)
{
  uint32_t n = dev->n, limbs = dev->lp.limbs;
  size_t fft_shared = fft_in_shared (dev->slots) ? 2 * (size_t) dev->slots * sizeof (double) : 0;
  for (uint32_t g = 0; g < dev->n_groups; g++)
    {
      const DevGroup *G = &dev->groups[g];
      uint32_t k = G->g.chunks;
      size_t ln = (size_t) limbs * n;
      if (fft_shared)
        encode_kernel<true><<<k, WIDE_THREADS, fft_shared, dev->stream>>> (
          dev->dev_in, G->h_offset, g, G->g, dev->slots, dev->fft_re, dev->fft_im,
          dev->bitrev, NULL, G->coeffs);
      else
        encode_kernel<false><<<k, WIDE_THREADS, 0, dev->stream>>> (
          dev->dev_in, G->h_offset, g, G->g, dev->slots, dev->fft_re, dev->fft_im,
          dev->bitrev, G->fft_work, G->coeffs);
      lift_kernel<<<blocks_for ((size_t) k * n / 8), THREADS, 0, dev->stream>>> (
        dev->dev_in, G->ct_base, k, n, G->g, dev->lp, G->coeffs, G->cts);
      cudaError_t err = cudaGetLastError ();
      if (err != cudaSuccess)
        return err;
      /* c0 of every ciphertext: limbs [0, L) of K polynomials 2 L N apart */
      if (ckks_cuda_ntt_forward (dev->stream, dev->tables, G->cts, limbs, k, 2 * ln) != CKKS_OK)
        return cudaErrorInvalidValue;   /* a shape the kernels refuse */
      uniform_kernel<<<blocks_for ((size_t) k * limbs * n / 4), THREADS, 0, dev->stream>>> (
        dev->dev_in, G->ct_base, k, n, dev->lp, dev->neg_s, dev->neg_s_shoup, G->cts);
      if ((err = cudaGetLastError ()) != cudaSuccess)
        return err;
    }
  return cudaSuccess;
}

/* Every module's ct x pt (ckks_cuda_mul_plain_accumulate): inputs K
 * ciphertexts 2 L N apart (c1 at + L N), plaintexts L N apart, outputs 2 L N
 * apart. */
static cudaError_t
launch_evaluate (CkksCudaHelora *dev)
{
  size_t ln = (size_t) dev->lp.limbs * dev->n;
  for (uint32_t i = 0; i < dev->n_modules; i++)
    {
      const DevModule *M = &dev->modules[i];
      const DevGroup *G = &dev->groups[M->m.group];
      CkksStatus st = ckks_cuda_mul_plain_accumulate (
        dev->stream, dev->tables, dev->lp.limbs, G->cts, G->cts + ln, 2 * ln, G->g.chunks,
        M->pt, M->pt_shoup, ln, M->m.n_outputs, NULL, NULL, M->out, M->out + ln, 2 * ln);
      if (st != CKKS_OK)
        return cudaErrorInvalidValue;   /* a shape the kernels refuse */
    }
  return cudaSuccess;
}

static cudaError_t
launch_decrypt (CkksCudaHelora *dev)
{
  for (uint32_t i = 0; i < dev->n_modules; i++)
    {
      const DevModule *M = &dev->modules[i];
      dim3 segments (M->m.n_outputs, dev->lp.limbs * M->g2);
      segment_sums_kernel<<<segments, THREADS, 0, dev->stream>>> (
        M->out, dev->n, M->g2, M->m.span, dev->lp, dev->s, dev->s_shoup, M->seg_sums);
      decrypt_kernel<<<M->m.n_outputs, WIDE_THREADS, 0, dev->stream>>> (
        dev->dev_in, M->m.group, M->seg_sums, M->g2, M->m.copies, M->m.r, dev->lp,
        dev->crt_inv, dev->crt_inv_shoup, dev->crt_half_t, dev->crt_half_a, M->trace_w,
        M->trace_re, M->m.span_over_scale, dev->dev_u + M->u_offset);
      cudaError_t err = cudaGetLastError ();
      if (err != cudaSuccess)
        return err;
    }
  return cudaSuccess;
}

static cudaError_t
record (CkksCudaHelora *dev, int stage)
{
  return cudaEventRecordWithFlags (dev->ev[stage], dev->stream, cudaEventRecordExternal);
}

/* Encrypt, evaluate and decrypt, each followed by its stage event (2, 3,
 * 4) recorded by @rec; the stages both token paths share. */
static cudaError_t
launch_he_stages (CkksCudaHelora *dev, cudaError_t (*rec) (CkksCudaHelora *, int))
{
  cudaError_t err = launch_encrypt (dev);
  if (err == cudaSuccess)
    err = rec (dev, 2);
  if (err == cudaSuccess)
    err = launch_evaluate (dev);
  if (err == cudaSuccess)
    err = rec (dev, 3);
  if (err == cudaSuccess)
    err = launch_decrypt (dev);
  if (err == cudaSuccess)
    err = rec (dev, 4);
  return err;
}

/* CKKS_OK for cudaSuccess; else CKKS_ERR_DEVICE, the error cleared so that
 * the next call on this thread starts clean. */
static CkksStatus
device_status (cudaError_t err)
{
  if (err != cudaSuccess)
    {
      cudaGetLastError ();
      return CKKS_ERR_DEVICE;
    }
  return CKKS_OK;
}

/* Microseconds between consecutive stage events @ev; timings are best
 * effort: -1 where an event could not be read. */
static void
read_stage_timings (cudaEvent_t ev[CKKS_CUDA_N_STAGES + 1], double stage_us[CKKS_CUDA_N_STAGES])
{
  for (int s = 0; s < CKKS_CUDA_N_STAGES; s++)
    {
      float ms = 0;
      if (cudaEventElapsedTime (&ms, ev[s], ev[s + 1]) == cudaSuccess)
        stage_us[s] = ms * 1e3;
      else
        {
          stage_us[s] = -1;
          cudaGetLastError ();
        }
    }
}

/* The token's launch sequence, captured between the stage events. */
static cudaError_t
capture_token (CkksCudaHelora *dev)
{
  cudaError_t err = cudaStreamBeginCapture (dev->stream, cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess)
    return err;
  cudaError_t st = record (dev, 0);
  if (st == cudaSuccess)
    st = cudaMemcpyAsync (dev->dev_in, dev->host_in, dev->in_bytes, cudaMemcpyHostToDevice,
                          dev->stream);
  if (st == cudaSuccess)
    st = record (dev, 1);
  if (st == cudaSuccess)
    st = launch_he_stages (dev, record);
  if (st == cudaSuccess)
    st = cudaMemcpyAsync (dev->host_u, dev->dev_u, dev->u_count * sizeof (double),
                          cudaMemcpyDeviceToHost, dev->stream);
  if (st == cudaSuccess)
    st = record (dev, 5);
  err = cudaStreamEndCapture (dev->stream, &dev->graph);
  if (st != cudaSuccess)
    return st;
  if (err != cudaSuccess)
    return err;
  return cudaGraphInstantiate (&dev->exec, dev->graph, 0);
}

static cudaError_t
allow_shared (uint32_t slots)
{
  cudaError_t err = cudaSuccess;
  if (fft_in_shared (slots))
    err = cudaFuncSetAttribute (encode_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int) (2 * (size_t) slots * sizeof (double)));
  return err;
}

/* Host-side shapes: input block offsets, u offsets, stream domains. */
static void
plan_host_layout (CkksCudaHelora *dev, const CkksCudaHeloraSpec *spec)
{
  size_t off = SEED_BYTES + (size_t) spec->n_groups * 2 * sizeof (double);
  uint32_t ct = 0;
  for (uint32_t g = 0; g < spec->n_groups; g++)
    {
      DevGroup *G = &dev->groups[g];
      G->g = spec->groups[g];
      G->ct_base = ct;
      ct += G->g.chunks;
      G->h_offset = off;
      off += ((size_t) G->g.d * sizeof (float) + 15) / 16 * 16;
    }
  dev->in_bytes = off;
  size_t u = 0;
  for (uint32_t i = 0; i < spec->n_modules; i++)
    {
      DevModule *M = &dev->modules[i];
      M->m = spec->modules[i];
      M->g2 = 2 * M->m.copies;
      M->u_offset = u;
      u += M->m.r;
    }
  dev->u_count = u;
}

static bool
spec_ok (const CkksCudaHeloraSpec *spec)
{
  if (spec->limbs != 2 || spec->n < 8 || spec->n_groups == 0 || spec->n_modules == 0)
    return false;
  for (uint32_t i = 0; i < spec->n_modules; i++)
    {
      const CkksCudaHeloraModule *m = &spec->modules[i];
      if (m->group >= spec->n_groups || m->copies == 0
          || m->copies > CKKS_CUDA_HELORA_MAX_COPIES || m->n_outputs == 0)
        return false;
    }
  return true;
}

extern "C" CkksStatus
ckks_cuda_helora_new (const CkksCudaHeloraSpec *spec, CkksCudaHelora **out, char *why,
                      size_t why_len)
{
  if (!spec || !out || !spec_ok (spec))
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksCudaHelora *dev = (CkksCudaHelora *) calloc (1, sizeof *dev);
  if (!dev)
    return CKKS_ERR_NO_MEMORY;
  dev->n = spec->n;
  dev->slots = spec->n / 2;
  dev->lp.limbs = spec->limbs;
  memcpy (dev->lp.limb, spec->limb, sizeof dev->lp.limb);
  dev->crt_inv = spec->crt_inv;
  dev->crt_inv_shoup = spec->crt_inv_shoup;
  dev->crt_half_t = spec->crt_half_t;
  dev->crt_half_a = spec->crt_half_a;
  dev->n_groups = spec->n_groups;
  dev->n_modules = spec->n_modules;
  dev->groups = (DevGroup *) calloc (spec->n_groups, sizeof (DevGroup));
  dev->modules = (DevModule *) calloc (spec->n_modules, sizeof (DevModule));
  if (!dev->groups || !dev->modules)
    {
      ckks_cuda_helora_free (dev);
      return CKKS_ERR_NO_MEMORY;
    }
  plan_host_layout (dev, spec);
  dev->pool_bytes = layout_pool (dev, spec, NULL);
  const char *what = "cudaStreamCreate";
  if (ckks_cuda_tables_new (spec->ctx, &dev->tables) != CKKS_OK)
    {
      say (why, why_len, "ckks_cuda_tables_new", cudaGetLastError ());
      ckks_cuda_helora_free (dev);
      return CKKS_ERR_DEVICE;
    }
  cudaError_t err = cudaStreamCreateWithFlags (&dev->stream, cudaStreamNonBlocking);
  for (int e = 0; err == cudaSuccess && e <= CKKS_CUDA_N_STAGES; e++, dev->n_events++)
    err = cudaEventCreate (&dev->ev[e]);
  for (int e = 0; err == cudaSuccess && e <= CKKS_CUDA_N_STAGES; e++, dev->n_dev_events++)
    err = cudaEventCreate (&dev->dev_ev[e]);
  if (err == cudaSuccess)
    err = cudaEventCreateWithFlags (&dev->caller_ev, cudaEventDisableTiming);
  if (err == cudaSuccess)
    err = cudaEventCreateWithFlags (&dev->done_ev, cudaEventDisableTiming);
  if (err == cudaSuccess)
    {
      what = "cudaMalloc";
      err = cudaMalloc ((void **) &dev->pool, dev->pool_bytes);
    }
  if (err == cudaSuccess)
    {
      layout_pool (dev, spec, dev->pool);
      what = "cudaHostAlloc";
      err = cudaHostAlloc ((void **) &dev->host_in, dev->in_bytes, cudaHostAllocDefault);
    }
  if (err == cudaSuccess)
    err = cudaHostAlloc ((void **) &dev->host_u, dev->u_count * sizeof (double),
                         cudaHostAllocDefault);
  if (err == cudaSuccess)
    {
      what = "upload";
      err = upload_spec (dev, spec);
    }
  if (err == cudaSuccess)
    {
      what = "shared memory";
      err = allow_shared (dev->slots);
    }
  if (err == cudaSuccess)
    {
      what = "graph capture";
      err = capture_token (dev);
    }
  if (err != cudaSuccess)
    {
      say (why, why_len, what, err);
      cudaGetLastError ();
      ckks_cuda_helora_free (dev);
      return CKKS_ERR_DEVICE;
    }
  *out = dev;
  return CKKS_OK;
}

/* Plain memset may be dropped for memory that is never read again. */
static void
wipe_host (void *p, size_t bytes)
{
  volatile unsigned char *v = (volatile unsigned char *) p;
  for (size_t i = 0; i < bytes; i++)
    v[i] = 0;
}

extern "C" void
ckks_cuda_helora_free (CkksCudaHelora *dev)
{
  if (!dev)
    return;
  if (dev->stream)
    cudaStreamSynchronize (dev->stream);
  if (dev->exec)
    cudaGraphExecDestroy (dev->exec);
  if (dev->graph)
    cudaGraphDestroy (dev->graph);
  if (dev->pool)
    {
      /* the key's copy, the seed, h, the ciphertexts and u */
      if (dev->stream)
        {
          cudaMemsetAsync (dev->pool, 0, dev->pool_bytes, dev->stream);
          cudaStreamSynchronize (dev->stream);
        }
      else
        cudaMemset (dev->pool, 0, dev->pool_bytes);
      cudaFree (dev->pool);     /* synchronises with the device first */
    }
  if (dev->host_in)
    {
      wipe_host (dev->host_in, dev->in_bytes);
      cudaFreeHost (dev->host_in);
    }
  if (dev->host_u)
    {
      wipe_host (dev->host_u, dev->u_count * sizeof (double));
      cudaFreeHost (dev->host_u);
    }
  if (dev->u_rows)
    {
      /* u = A h is as private as h */
      cudaMemset (dev->u_rows, 0, dev->rows_cap * dev->u_count * sizeof (float));
      cudaFree (dev->u_rows);
    }
  for (int e = 0; e < dev->n_events; e++)
    cudaEventDestroy (dev->ev[e]);
  for (int e = 0; e < dev->n_dev_events; e++)
    cudaEventDestroy (dev->dev_ev[e]);
  if (dev->caller_ev)
    cudaEventDestroy (dev->caller_ev);
  if (dev->done_ev)
    cudaEventDestroy (dev->done_ev);
  if (dev->stream)
    cudaStreamDestroy (dev->stream);
  ckks_cuda_tables_free (dev->tables);
  free (dev->groups);
  free (dev->modules);
  free (dev);
}

extern "C" CkksStatus
ckks_cuda_helora_run (CkksCudaHelora *dev, const float *const *h, const double *inv,
                      const double *h_factor, const uint8_t seed[32], double *const *u,
                      double stage_us[CKKS_CUDA_N_STAGES])
{
  memcpy (dev->host_in, seed, SEED_BYTES);
  double *factors = (double *) (dev->host_in + SEED_BYTES);
  for (uint32_t g = 0; g < dev->n_groups; g++)
    {
      factors[2 * g] = inv[g];
      factors[2 * g + 1] = h_factor[g];
      memcpy (dev->host_in + dev->groups[g].h_offset, h[g], dev->groups[g].g.d * sizeof (float));
    }
  cudaError_t err = cudaGraphLaunch (dev->exec, dev->stream);
  if (err == cudaSuccess)
    err = cudaStreamSynchronize (dev->stream);
  wipe_host (dev->host_in, SEED_BYTES);
  if (err != cudaSuccess)
    {
      cudaGetLastError ();
      return CKKS_ERR_DEVICE;
    }
  if (stage_us)
    read_stage_timings (dev->ev, stage_us);
  for (uint32_t i = 0; i < dev->n_modules; i++)
    memcpy (u[i], dev->host_u + dev->modules[i].u_offset, dev->modules[i].m.r * sizeof (double));
  return CKKS_OK;
}

extern "C" CkksStatus
ckks_cuda_helora_read (CkksCudaHelora *dev, uint64_t *const *group_cts,
                       uint64_t *const *module_outs)
{
  size_t ln8 = (size_t) dev->lp.limbs * dev->n * sizeof (uint64_t);
  cudaError_t err = cudaSuccess;
  for (uint32_t g = 0; group_cts && err == cudaSuccess && g < dev->n_groups; g++)
    if (group_cts[g])
      err = cudaMemcpyAsync (group_cts[g], dev->groups[g].cts,
                             (size_t) dev->groups[g].g.chunks * 2 * ln8, cudaMemcpyDeviceToHost,
                             dev->stream);
  for (uint32_t i = 0; module_outs && err == cudaSuccess && i < dev->n_modules; i++)
    if (module_outs[i])
      err = cudaMemcpyAsync (module_outs[i], dev->modules[i].out,
                             (size_t) dev->modules[i].m.n_outputs * 2 * ln8,
                             cudaMemcpyDeviceToHost, dev->stream);
  if (err == cudaSuccess)
    err = cudaStreamSynchronize (dev->stream);
  return device_status (err);
}

/* ---- the device-pointer run ---- */

extern "C" CkksStatus
ckks_cuda_helora_reserve_rows (CkksCudaHelora *dev, size_t rows)
{
  if (rows <= dev->rows_cap)
    return CKKS_OK;
  float *fresh = NULL;
  size_t bytes = rows * dev->u_count * sizeof (float);
  cudaError_t err = cudaStreamSynchronize (dev->stream);
  if (err == cudaSuccess)
    err = cudaMalloc ((void **) &fresh, bytes);
  if (err == cudaSuccess)
    err = cudaMemset (fresh, 0, bytes);
  if (err != cudaSuccess)
    {
      cudaGetLastError ();
      if (fresh)
        cudaFree (fresh);
      return CKKS_ERR_DEVICE;
    }
  if (dev->u_rows)
    {
      /* rows already written are the caller's; nothing else may read them
       * now (the stream was idle), so only the wipe remains */
      cudaMemset (dev->u_rows, 0, dev->rows_cap * dev->u_count * sizeof (float));
      cudaFree (dev->u_rows);
    }
  dev->u_rows = fresh;
  dev->rows_cap = rows;
  return CKKS_OK;
}

static cudaError_t
record_dev (CkksCudaHelora *dev, int stage)
{
  return cudaEventRecord (dev->dev_ev[stage], dev->stream);
}

/* Every group's h into the input block, with max|h| (on the session's
 * stream, after the caller's work). */
static cudaError_t
launch_stage_h (CkksCudaHelora *dev, const float *const *h_dev, const uint8_t seed[32])
{
  SeedWords words;
  memcpy (words.w, seed, SEED_BYTES);
  seed_kernel<<<1, 32, 0, dev->stream>>> (words, dev->dev_in);
  wipe_host (&words, sizeof words);
  cudaError_t err = cudaGetLastError ();
  for (uint32_t g = 0; err == cudaSuccess && g < dev->n_groups; g++)
    {
      stage_h_kernel<<<1, CKKS_CUDA_ABS_MAX_THREADS, 0, dev->stream>>> (
        h_dev[g], dev->groups[g].g.d, dev->dev_in, dev->groups[g].h_offset, g);
      err = cudaGetLastError ();
    }
  return err;
}

static cudaError_t
launch_u_rows (CkksCudaHelora *dev, size_t row)
{
  cudaError_t err = cudaSuccess;
  for (uint32_t i = 0; err == cudaSuccess && i < dev->n_modules; i++)
    {
      const DevModule *M = &dev->modules[i];
      float *out = dev->u_rows + M->u_offset * dev->rows_cap + row * M->m.r;
      u_to_float_kernel<<<blocks_for (M->m.r), THREADS, 0, dev->stream>>> (
        dev->dev_u + M->u_offset, M->m.r, out);
      err = cudaGetLastError ();
    }
  return err;
}

/* One token's launches on the session's stream (after it waits for
 * whatever event the caller recorded), ending with done_ev. */
static cudaError_t
enqueue_device_token (CkksCudaHelora *dev, const float *const *h_dev, size_t row,
                      const uint8_t seed[32])
{
  cudaError_t err = record_dev (dev, 0);
  if (err == cudaSuccess)
    err = launch_stage_h (dev, h_dev, seed);
  if (err == cudaSuccess)
    err = record_dev (dev, 1);
  if (err == cudaSuccess)
    err = launch_he_stages (dev, record_dev);
  if (err == cudaSuccess)
    err = launch_u_rows (dev, row);
  if (err == cudaSuccess)
    err = record_dev (dev, 5);
  if (err == cudaSuccess)
    err = cudaEventRecord (dev->done_ev, dev->stream);
  return err;
}

extern "C" CkksStatus
ckks_cuda_helora_run_device (CkksCudaHelora *dev, const float *const *h_dev, size_t row,
                             const uint8_t seed[32], void *stream)
{
  return ckks_cuda_helora_run_device_batch (&dev, 1, &h_dev, &row, seed, stream);
}

extern "C" CkksStatus
ckks_cuda_helora_run_device_batch (CkksCudaHelora *const *devs, size_t n,
                                   const float *const *const *h_dev, const size_t *rows,
                                   const uint8_t *seeds, void *stream)
{
  if (n == 0 || !devs || !h_dev || !rows || !seeds)
    return CKKS_ERR_INVALID_ARGUMENT;
  for (size_t i = 0; i < n; i++)
    if (!devs[i] || !h_dev[i] || rows[i] >= devs[i]->rows_cap)
      return CKKS_ERR_INVALID_ARGUMENT;
  cudaStream_t caller = (cudaStream_t) stream;
  /* one point on the caller's stream that every session starts after */
  cudaError_t err = cudaEventRecord (devs[0]->caller_ev, caller);
  for (size_t i = 0; err == cudaSuccess && i < n; i++)
    err = cudaStreamWaitEvent (devs[i]->stream, devs[0]->caller_ev, 0);
  for (size_t i = 0; err == cudaSuccess && i < n; i++)
    err = enqueue_device_token (devs[i], h_dev[i], rows[i], seeds + 32 * i);
  for (size_t i = 0; err == cudaSuccess && i < n; i++)
    err = cudaStreamWaitEvent (caller, devs[i]->done_ev, 0);
  return device_status (err);
}

extern "C" CkksStatus
ckks_cuda_helora_copy_u (CkksCudaHelora *dev, uint32_t plan, size_t first_row, size_t n_rows,
                         float *dst, void *stream)
{
  if (plan >= dev->n_modules || first_row + n_rows > dev->rows_cap || !dst)
    return CKKS_ERR_INVALID_ARGUMENT;
  const DevModule *M = &dev->modules[plan];
  const float *src = dev->u_rows + M->u_offset * dev->rows_cap + first_row * M->m.r;
  cudaError_t err = cudaMemcpyAsync (dst, src, n_rows * M->m.r * sizeof (float),
                                     cudaMemcpyDeviceToDevice, (cudaStream_t) stream);
  return device_status (err);
}

extern "C" void
ckks_cuda_helora_device_timings (CkksCudaHelora *dev, double stage_us[CKKS_CUDA_N_STAGES])
{
  read_stage_timings (dev->dev_ev, stage_us);
}

/* ---- test support: the device-pointer run from host buffers ---- */

extern "C" CkksStatus
ckks_cuda_helora_check_device_run (CkksCudaHelora *dev, const float *const *h, size_t rows,
                                   const uint8_t *seeds, float *const *u)
{
  size_t h_floats = 0;
  for (uint32_t g = 0; g < dev->n_groups; g++)
    h_floats += dev->groups[g].g.d;
  float *d_h = NULL, *d_u = NULL;
  cudaStream_t stream = NULL;
  cudaError_t err = cudaStreamCreateWithFlags (&stream, cudaStreamNonBlocking);
  if (err == cudaSuccess)
    err = cudaMalloc ((void **) &d_h, rows * h_floats * sizeof (float));
  if (err == cudaSuccess)
    err = cudaMalloc ((void **) &d_u, rows * dev->u_count * sizeof (float));
  CkksStatus st = err == cudaSuccess ? ckks_cuda_helora_reserve_rows (dev, rows) : CKKS_ERR_DEVICE;
  /* group g's rows at d_h + rows * (d_0 + .. + d_{g-1}), like the engine's */
  const float **hp = (const float **) calloc (dev->n_groups, sizeof *hp);
  size_t off = 0;
  for (uint32_t g = 0; st == CKKS_OK && g < dev->n_groups; g++)
    {
      size_t d = dev->groups[g].g.d;
      if (cudaMemcpyAsync (d_h + off, h[g], rows * d * sizeof (float), cudaMemcpyHostToDevice,
                           stream) != cudaSuccess)
        st = CKKS_ERR_DEVICE;
      off += rows * d;
    }
  for (size_t row = 0; st == CKKS_OK && row < rows; row++)
    {
      off = 0;
      for (uint32_t g = 0; g < dev->n_groups; g++)
        {
          hp[g] = d_h + off + row * dev->groups[g].g.d;
          off += rows * dev->groups[g].g.d;
        }
      st = ckks_cuda_helora_run_device (dev, hp, row, seeds + 32 * row, stream);
    }
  off = 0;
  for (uint32_t i = 0; st == CKKS_OK && i < dev->n_modules; i++)
    {
      st = ckks_cuda_helora_copy_u (dev, i, 0, rows, d_u + off, stream);
      if (st == CKKS_OK && cudaMemcpyAsync (u[i], d_u + off, rows * dev->modules[i].m.r * sizeof (float),
                                            cudaMemcpyDeviceToHost, stream) != cudaSuccess)
        st = CKKS_ERR_DEVICE;
      off += rows * dev->modules[i].m.r;
    }
  if (stream && cudaStreamSynchronize (stream) != cudaSuccess)
    st = CKKS_ERR_DEVICE;
  free (hp);
  cudaFree (d_h);
  cudaFree (d_u);
  if (stream)
    cudaStreamDestroy (stream);
  cudaGetLastError ();
  return st;
}

extern "C" CkksStatus
ckks_cuda_helora_check_device_batch (CkksCudaHelora *const *devs, size_t n,
                                     const float *const *const *h, const uint8_t *seeds,
                                     float *const *const *u)
{
  size_t h_floats = 0, u_floats = 0;
  for (size_t i = 0; i < n; i++)
    {
      for (uint32_t g = 0; g < devs[i]->n_groups; g++)
        h_floats += devs[i]->groups[g].g.d;
      u_floats += devs[i]->u_count;
    }
  float *d_h = NULL, *d_u = NULL;
  cudaStream_t stream = NULL;
  cudaError_t err = cudaStreamCreateWithFlags (&stream, cudaStreamNonBlocking);
  if (err == cudaSuccess)
    err = cudaMalloc ((void **) &d_h, h_floats * sizeof (float));
  if (err == cudaSuccess)
    err = cudaMalloc ((void **) &d_u, u_floats * sizeof (float));
  CkksStatus st = err == cudaSuccess ? CKKS_OK : CKKS_ERR_DEVICE;
  const float ***hp = (const float ***) calloc (n, sizeof *hp);
  size_t *rows = (size_t *) calloc (n, sizeof *rows);
  size_t off = 0;
  for (size_t i = 0; st == CKKS_OK && i < n; i++)
    {
      st = ckks_cuda_helora_reserve_rows (devs[i], 1);
      hp[i] = (const float **) calloc (devs[i]->n_groups, sizeof (float *));
      for (uint32_t g = 0; st == CKKS_OK && g < devs[i]->n_groups; g++)
        {
          size_t d = devs[i]->groups[g].g.d;
          hp[i][g] = d_h + off;
          if (cudaMemcpyAsync (d_h + off, h[i][g], d * sizeof (float), cudaMemcpyHostToDevice,
                               stream) != cudaSuccess)
            st = CKKS_ERR_DEVICE;
          off += d;
        }
    }
  if (st == CKKS_OK)
    st = ckks_cuda_helora_run_device_batch (devs, n, (const float *const *const *) hp, rows,
                                            seeds, stream);
  off = 0;
  for (size_t i = 0; st == CKKS_OK && i < n; i++)
    for (uint32_t m = 0; st == CKKS_OK && m < devs[i]->n_modules; m++)
      {
        uint32_t r = devs[i]->modules[m].m.r;
        st = ckks_cuda_helora_copy_u (devs[i], m, 0, 1, d_u + off, stream);
        if (st == CKKS_OK && cudaMemcpyAsync (u[i][m], d_u + off, r * sizeof (float),
                                              cudaMemcpyDeviceToHost, stream) != cudaSuccess)
          st = CKKS_ERR_DEVICE;
        off += r;
      }
  if (stream && cudaStreamSynchronize (stream) != cudaSuccess)
    st = CKKS_ERR_DEVICE;
  for (size_t i = 0; i < n; i++)
    free (hp[i]);
  free (hp);
  free (rows);
  cudaFree (d_h);
  cudaFree (d_u);
  if (stream)
    cudaStreamDestroy (stream);
  cudaGetLastError ();
  return st;
}
