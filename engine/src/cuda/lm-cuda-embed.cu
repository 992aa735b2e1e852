/* lm-cuda-embed.cu: row dequantisation and the embedding lookup on the GPU,
 * bit-exact with lm_dequantize_row (lm-cuda-blocks.cuh).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <cuda_runtime.h>

#include "lm-cuda-blocks.cuh"
#include "lm-cuda-launch.cuh"
#include "lm-cuda-matvec.h"
#include "lm-cuda-ops.h"
#include "quant.h"

#define DQ_THREADS 256

/* grid (unit blocks, rows): row t of dst (width floats) is row tokens[t] of
 * src (row t when tokens is NULL); one thread per unit. A token outside
 * [0, n_vocab) gives zeros and sets *bad. */
template <class Dec>
__global__ void __launch_bounds__ (DQ_THREADS)
dequant_kernel (const uint8_t *src, size_t row_bytes, uint32_t width, const int32_t *tokens,
                uint32_t n_vocab, float *dst, int32_t *bad)
{
  lmc_wait_previous ();
  const uint32_t t = blockIdx.y;
  const uint32_t u = blockIdx.x * DQ_THREADS + threadIdx.x;
  const uint32_t n_units = width / Dec::BV * Dec::UPB;
  if (u >= n_units)
    return;
  const uint32_t blk = u / Dec::UPB;
  const int c = (int) (u % Dec::UPB);
  float *out = dst + (size_t) t * width + (size_t) blk * Dec::BV;
  size_t row = t;
  if (tokens != nullptr)
    {
      int32_t tok = tokens[t];
      if (tok < 0 || (uint32_t) tok >= n_vocab)
        {
          for (int i = 0; i < Dec::C; i++)
            out[Dec::index (c, i)] = 0.0f;
          if (bad != nullptr)
            *bad = 1;   /* every writer stores the same value */
          return;
        }
      row = (size_t) tok;
    }
  float v[Dec::C];
  Dec::decode (src + row * row_bytes + (size_t) blk * Dec::BB, c, v);
  for (int i = 0; i < Dec::C; i++)
    out[Dec::index (c, i)] = v[i];
}

static LmStatus
launch_dequant (cudaStream_t stream, LmTensorType type, const void *src, uint32_t width,
                const int32_t *tokens, uint32_t n_vocab, uint32_t n, float *dst, int32_t *bad)
{
  if (!lm_cuda_matvec_supports (type))
    return LM_ERR_UNSUPPORTED;
  size_t row_bytes = lm_row_bytes (type, width);
  if (width == 0 || row_bytes == 0)
    return LM_ERR_SHAPE;
  if (n == 0)
    return LM_OK;
  if (src == nullptr || dst == nullptr || n > 65535)
    return LM_ERR_INVALID_ARGUMENT;
  uint64_t bits = (uint64_t) (uintptr_t) src | row_bytes;
  bool vector = lmc_fp_vector_ok (type, width, bits);
  return lmc_with_decoder (type, vector, [&] (auto dec) {
    using Dec = decltype (dec);
    if (bits % Dec::ALIGN != 0)
      return LM_ERR_INVALID_ARGUMENT;
    uint32_t n_units = width / Dec::BV * Dec::UPB;
    dim3 grid ((n_units + DQ_THREADS - 1) / DQ_THREADS, n);
    return lmc_launched (lmc_launch (dequant_kernel<Dec>, grid, DQ_THREADS, 0, stream,
                                     (const uint8_t *) src, row_bytes, width, tokens, n_vocab,
                                     dst, bad));
  });
}

extern "C" LmStatus
lm_cuda_dequantize_row (LmCudaStream stream, LmTensorType type, const void *src, float *dst,
                        uint32_t n)
{
  return launch_dequant ((cudaStream_t) stream, type, src, n, nullptr, 0, 1, dst, nullptr);
}

extern "C" LmStatus
lm_cuda_embed (LmCudaStream stream, LmTensorType type, const void *table, uint32_t n_vocab,
               uint32_t width, const int32_t *tokens, uint32_t n, float *x, int32_t *bad)
{
  if (n > 0 && tokens == nullptr)
    return LM_ERR_INVALID_ARGUMENT;
  return launch_dequant ((cudaStream_t) stream, type, table, width, tokens, n_vocab, n, x, bad);
}
