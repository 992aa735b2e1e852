/* gpu-emu.c: the device API of engine/cuda (lm-cuda-rt.h, lm-cuda-matvec.h,
 * lm-cuda-ops.h) emulated on the host with the CPU engine's f32 functions,
 * for a build without CUDA: the GPU backend's orchestration (lm-cuda-model.c,
 * lm-cuda-session.c, lm-cuda-forward.c) then runs, and is tested, on any
 * machine. Each function does what its header says, synchronously; graph
 * capture is refused, so the decode steps take the eager path (the same
 * launches a graph would record).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "forward-ops.h"
#include "gpu-emu.h"
#include "lm-gpu.h"
#include "lm-cuda-matvec.h"
#include "lm-cuda-ops.h"
#include "lm-cuda-rt.h"
#include "quant.h"

size_t gpu_emu_free_bytes = (size_t) 1 << 34;
atomic_size_t gpu_emu_live_allocations;

/* ---- the probe (lm-gpu.h): the emulated GPU is always there ---- */

bool
lm_gpu_available (char *why, size_t why_len)
{
  return true;
}

bool
lm_gpu_built (void)
{
  return true;
}

/* ---- runtime ---- */

const char *
lm_cuda_rt_error (void)
{
  return "emulated device error";
}

LmStatus
lm_cuda_rt_malloc (void **out, size_t bytes)
{
  *out = aligned_alloc (256, (bytes + 255) / 256 * 256 + 256);
  if (*out == NULL)
    return LM_ERR_DEVICE;
  /* Device memory starts as garbage: NaN floats show any read before a write. */
  memset (*out, 0xff, bytes);
  gpu_emu_live_allocations++;
  return LM_OK;
}

void
lm_cuda_rt_free (void *p)
{
  if (p != NULL)
    gpu_emu_live_allocations--;
  free (p);
}

LmStatus
lm_cuda_rt_host_alloc (void **out, size_t bytes)
{
  return lm_cuda_rt_malloc (out, bytes);
}

void
lm_cuda_rt_host_free (void *p)
{
  lm_cuda_rt_free (p);
}

LmStatus
lm_cuda_rt_host_register (void *p, size_t bytes)
{
  return LM_OK;
}

void
lm_cuda_rt_host_unregister (void *p)
{
}

LmStatus
lm_cuda_rt_mem_info (size_t *free_bytes, size_t *total_bytes)
{
  *free_bytes = gpu_emu_free_bytes;
  *total_bytes = (size_t) 1 << 34;
  return LM_OK;
}

LmStatus
lm_cuda_rt_stream_new (LmCudaStream *out)
{
  static int dummy;
  *out = (LmCudaStream) (void *) &dummy;
  return LM_OK;
}

void
lm_cuda_rt_stream_free (LmCudaStream stream)
{
}

LmStatus
lm_cuda_rt_sync (LmCudaStream stream)
{
  return LM_OK;
}

LmStatus
lm_cuda_rt_copy (LmCudaStream stream, void *dst, const void *src, size_t bytes)
{
  memmove (dst, src, bytes);
  return LM_OK;
}

LmStatus
lm_cuda_rt_upload (void *dst, const void *src, size_t bytes)
{
  memcpy (dst, src, bytes);
  return LM_OK;
}

LmStatus
lm_cuda_rt_memset (LmCudaStream stream, void *dst, int value, size_t bytes)
{
  memset (dst, value, bytes);
  return LM_OK;
}

LmStatus
lm_cuda_rt_capture_begin (LmCudaStream stream)
{
  return LM_ERR_DEVICE;
}

LmStatus
lm_cuda_rt_capture_end (LmCudaStream stream, LmCudaGraph *out)
{
  *out = NULL;
  return LM_ERR_DEVICE;
}

LmStatus
lm_cuda_rt_graph_launch (LmCudaGraph graph, LmCudaStream stream)
{
  return LM_ERR_DEVICE;
}

void
lm_cuda_rt_graph_free (LmCudaGraph graph)
{
}

/* ---- products ---- */

bool
lm_cuda_matvec_supports (LmTensorType type)
{
  return type == LM_TYPE_F32 || type == LM_TYPE_F16 || type == LM_TYPE_BF16
         || type == LM_TYPE_Q8_0 || type == LM_TYPE_Q4_K || type == LM_TYPE_Q5_K
         || type == LM_TYPE_Q6_K;
}

static void
product (LmTensorType type, const void *w, uint32_t n_in, uint32_t n_out, const float *x,
         uint32_t n, float *y)
{
  lm_matmul_ex (lm_kernels_best (), LM_ACT_F32, NULL, type, w, n_in, n_out, x, n, y);
}

LmStatus
lm_cuda_matvec (LmCudaStream stream, LmTensorType type, const void *w, uint32_t n_in,
                uint32_t n_out, const float *x, float *y, bool accumulate)
{
  float *tmp = malloc (n_out * sizeof (float));
  product (type, w, n_in, n_out, x, 1, tmp);
  for (uint32_t o = 0; o < n_out; o++)
    y[o] = accumulate ? y[o] + tmp[o] : tmp[o];
  free (tmp);
  return LM_OK;
}

LmStatus
lm_cuda_matmul (LmCudaStream stream, LmTensorType type, const void *w, uint32_t n_in,
                uint32_t n_out, const float *x, uint32_t n, float *y)
{
  product (type, w, n_in, n_out, x, n, y);
  return LM_OK;
}

LmStatus
lm_cuda_matvec_experts (LmCudaStream stream, LmTensorType type, const void *w,
                        size_t mat_stride, uint32_t n_in, uint32_t n_out, const int32_t *sel,
                        uint32_t k, const float *x, size_t x_stride, float *y)
{
  for (uint32_t j = 0; j < k; j++)
    {
      float *yj = y + (size_t) j * n_out;
      if (sel[j] < 0)
        memset (yj, 0, n_out * sizeof (float));
      else
        product (type, (const char *) w + (size_t) sel[j] * mat_stride, n_in, n_out,
                 x + j * x_stride, 1, yj);
    }
  return LM_OK;
}

LmStatus
lm_cuda_matmul_rows (LmCudaStream stream, LmTensorType type, const void *w, size_t mat_stride,
                     uint32_t expert, uint32_t n_in, uint32_t n_out, const float *x,
                     const int32_t *x_rows, const int32_t *y_rows, uint32_t n_rows, float *y)
{
  const char *m = (const char *) w + (size_t) expert * mat_stride;
  for (uint32_t i = 0; i < n_rows; i++)
    product (type, m, n_in, n_out, x + (size_t) x_rows[i] * n_in, 1,
             y + (size_t) y_rows[i] * n_out);
  return LM_OK;
}

LmStatus
lm_cuda_dequantize_row (LmCudaStream stream, LmTensorType type, const void *src, float *dst,
                        uint32_t n)
{
  return lm_dequantize_row (type, src, dst, n);
}

/* ---- layer operations ---- */

LmStatus
lm_cuda_rms_norm (LmCudaStream stream, const float *x, size_t x_stride, const float *w,
                  float eps, uint32_t n_rows, uint32_t width, float *y, size_t y_stride)
{
  for (uint32_t r = 0; r < n_rows; r++)
    lm_rms_norm (x + r * x_stride, w, eps, width, y + r * y_stride);
  return LM_OK;
}

LmStatus
lm_cuda_l2_norm (LmCudaStream stream, float *x, size_t x_stride, float eps, uint32_t n_rows,
                 uint32_t width)
{
  for (uint32_t r = 0; r < n_rows; r++)
    lm_l2_norm (x + r * x_stride, eps, width);
  return LM_OK;
}

LmStatus
lm_cuda_add (LmCudaStream stream, float *x, const float *y, size_t n)
{
  for (size_t i = 0; i < n; i++)
    x[i] += y[i];
  return LM_OK;
}

LmStatus
lm_cuda_swiglu (LmCudaStream stream, float *gate, const float *up, size_t n)
{
  for (size_t i = 0; i < n; i++)
    gate[i] = lm_silu (gate[i]) * up[i];
  return LM_OK;
}

LmStatus
lm_cuda_embed (LmCudaStream stream, LmTensorType type, const void *table, uint32_t n_vocab,
               uint32_t width, const int32_t *tokens, uint32_t n, float *x, int32_t *bad)
{
  for (uint32_t t = 0; t < n; t++)
    {
      float *row = x + (size_t) t * width;
      if (tokens[t] < 0 || (uint32_t) tokens[t] >= n_vocab)
        {
          memset (row, 0, width * sizeof (float));
          if (bad != NULL)
            *bad = 1;
          continue;
        }
      lm_dequantize_row (type, (const char *) table + (size_t) tokens[t] * lm_row_bytes (type, width),
                         row, width);
    }
  return LM_OK;
}

LmStatus
lm_cuda_rope (LmCudaStream stream, float *x, size_t token_stride, size_t head_stride,
              uint32_t n_heads, uint32_t n_tokens, const uint32_t *pos, uint32_t n_rot,
              float base, const int32_t sections[4])
{
  float cs[LM_CUDA_MAX_HEAD_DIM];
  for (uint32_t t = 0; t < n_tokens; t++)
    {
      lm_rope_table (pos[0] + t, n_rot, base, sections, cs);
      for (uint32_t h = 0; h < n_heads; h++)
        lm_rope_apply (x + t * token_stride + h * head_stride, n_rot, cs);
    }
  return LM_OK;
}

LmStatus
lm_cuda_kv_append (LmCudaStream stream, const float *k, const float *v, uint32_t kv_dim,
                   uint32_t n, const uint32_t *pos, float *k_cache, float *v_cache)
{
  size_t row = (size_t) pos[0] * kv_dim, count = (size_t) n * kv_dim;
  memcpy (k_cache + row, k, count * sizeof (float));
  memcpy (v_cache + row, v, count * sizeof (float));
  return LM_OK;
}

LmStatus
lm_cuda_attention (LmCudaStream stream, const float *qg, const float *k_cache,
                   const float *v_cache, uint32_t n_head, uint32_t n_head_kv, uint32_t head_dim,
                   uint32_t n, const uint32_t *pos, uint32_t n_ctx, float *out)
{
  uint32_t kvd = head_dim * n_head_kv, group = n_head / n_head_kv;
  for (uint32_t t = 0; t < n; t++)
    for (uint32_t h = 0; h < n_head; h++)
      {
        const float *q = qg + ((size_t) t * n_head + h) * 2 * head_dim;
        size_t kv = (size_t) (h / group) * head_dim;
        lm_attend_head (lm_kernels_best (), q, q + head_dim, k_cache + kv, v_cache + kv, kvd,
                        pos[0] + t + 1, head_dim, out + ((size_t) t * n_head + h) * head_dim);
      }
  return LM_OK;
}

size_t
lm_cuda_attention_scratch_floats (uint32_t n_head, uint32_t head_dim, uint32_t n, uint32_t n_ctx)
{
  return (size_t) n_head * head_dim;
}

LmStatus
lm_cuda_attention_split (LmCudaStream stream, const float *qg, const float *k_cache,
                         const float *v_cache, uint32_t n_head, uint32_t n_head_kv,
                         uint32_t head_dim, uint32_t n, const uint32_t *pos, uint32_t n_ctx,
                         float *scratch, float *out)
{
  /* The scratch must be usable: write all of it. */
  memset (scratch, 0, (size_t) n_head * head_dim * sizeof (float));
  return lm_cuda_attention (stream, qg, k_cache, v_cache, n_head, n_head_kv, head_dim, n, pos,
                            n_ctx, out);
}

LmStatus
lm_cuda_causal_conv (LmCudaStream stream, const float *in, const float *w, uint32_t K,
                     uint32_t C, uint32_t n, float *state, float *out)
{
  lm_causal_conv (in, w, K, C, n, state, out);
  return LM_OK;
}

LmStatus
lm_cuda_delta_rule (LmCudaStream stream, const LmCudaDeltaShape *shape, float *u,
                    size_t u_stride, const float *z, const float *alpha, const float *beta,
                    size_t ab_stride, uint32_t n, float *state, float *out)
{
  uint32_t S = shape->state, Hv = shape->n_heads, Hk = shape->n_groups, key_dim = S * Hk;
  float mk[LM_CUDA_MAX_STATE];
  for (uint32_t t = 0; t < n; t++)
    {
      float *ut = u + t * u_stride;
      lm_cuda_l2_norm (stream, ut, S, shape->eps, 2 * Hk, S);
      for (uint32_t j = 0; j < Hv; j++)
        {
          uint32_t m = j % Hk;
          float g = shape->ssm_a[j] * lm_softplus (alpha[t * ab_stride + j] + shape->dt_bias[j]);
          float b = lm_sigmoid (beta[t * ab_stride + j]);
          float *o = out + (size_t) t * Hv * S + (size_t) j * S;
          lm_delta_step (lm_kernels_best (), state + (size_t) j * S * S, ut + (size_t) m * S,
                         ut + key_dim + (size_t) m * S, ut + 2 * key_dim + (size_t) j * S,
                         expf (g), b, S, mk, o);
          lm_rms_norm (o, shape->norm, shape->eps, S, o);
          const float *zj = z + (size_t) t * Hv * S + (size_t) j * S;
          for (uint32_t i = 0; i < S; i++)
            o[i] *= lm_silu (zj[i]);
        }
    }
  return LM_OK;
}

LmStatus
lm_cuda_moe_route (LmCudaStream stream, const float *logits, uint32_t n, uint32_t n_expert,
                   uint32_t k, int32_t *sel, float *w)
{
  for (uint32_t t = 0; t < n; t++)
    lm_route_token (logits + (size_t) t * n_expert, n_expert, k, sel + (size_t) t * k,
                    w + (size_t) t * k);
  return LM_OK;
}

LmStatus
lm_cuda_moe_combine (LmCudaStream stream, const float *y, const float *w, const float *gate_inp,
                     const float *h, uint32_t n, uint32_t k, uint32_t width, float *o)
{
  for (uint32_t t = 0; t < n; t++)
    {
      const float *ht = h + (size_t) t * width;
      float dot = 0.0f;
      for (uint32_t i = 0; i < width; i++)
        dot += gate_inp[i] * ht[i];
      float gate = lm_sigmoid (dot);
      float *ot = o + (size_t) t * width;
      for (uint32_t i = 0; i < width; i++)
        {
          float sum = 0.0f;
          for (uint32_t j = 0; j < k; j++)
            sum += w[(size_t) t * k + j] * y[((size_t) t * k + j) * width + i];
          ot[i] = sum + gate * ot[i];
        }
    }
  return LM_OK;
}
