/* quant-types.c: the table of tensor types and the row (de)quantisation entry points.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "quant-private.h"

typedef struct {
  LmTensorType type;
  const char *name;
  size_t block_size;
  size_t block_bytes;
  void (*to_float) (const void *src, float *dst, int64_t n);
  void (*from_float) (const float *src, void *dst, int64_t n);
} TypeTraits;

static void
copy_row_f32 (const void *src, float *dst, int64_t n)
{
  memcpy (dst, src, (size_t) n * sizeof (float));
}

static void
store_row_f32 (const float *src, void *dst, int64_t n)
{
  memcpy (dst, src, (size_t) n * sizeof (float));
}

static const TypeTraits type_traits[] = {
  { LM_TYPE_F32, "f32", 1, 4, copy_row_f32, store_row_f32 },
  { LM_TYPE_F16, "f16", 1, 2, lm_dequantize_row_f16, lm_quantize_row_f16 },
  { LM_TYPE_BF16, "bf16", 1, 2, lm_dequantize_row_bf16, lm_quantize_row_bf16 },
  { LM_TYPE_Q4_0, "q4_0", LM_QK32, sizeof (LmBlockQ4_0), lm_dequantize_row_q4_0, lm_quantize_row_q4_0 },
  { LM_TYPE_Q4_1, "q4_1", LM_QK32, sizeof (LmBlockQ4_1), lm_dequantize_row_q4_1, lm_quantize_row_q4_1 },
  { LM_TYPE_Q5_0, "q5_0", LM_QK32, sizeof (LmBlockQ5_0), lm_dequantize_row_q5_0, lm_quantize_row_q5_0 },
  { LM_TYPE_Q5_1, "q5_1", LM_QK32, sizeof (LmBlockQ5_1), lm_dequantize_row_q5_1, lm_quantize_row_q5_1 },
  { LM_TYPE_Q8_0, "q8_0", LM_QK8_0, sizeof (LmBlockQ8_0), lm_dequantize_row_q8_0, lm_quantize_row_q8_0 },
  { LM_TYPE_Q2_K, "q2_K", LM_QK_K, sizeof (LmBlockQ2_K), lm_dequantize_row_q2_K, lm_quantize_row_q2_K },
  { LM_TYPE_Q3_K, "q3_K", LM_QK_K, sizeof (LmBlockQ3_K), lm_dequantize_row_q3_K, lm_quantize_row_q3_K },
  { LM_TYPE_Q4_K, "q4_K", LM_QK_K, sizeof (LmBlockQ4_K), lm_dequantize_row_q4_K, lm_quantize_row_q4_K },
  { LM_TYPE_Q5_K, "q5_K", LM_QK_K, sizeof (LmBlockQ5_K), lm_dequantize_row_q5_K, lm_quantize_row_q5_K },
  { LM_TYPE_Q6_K, "q6_K", LM_QK_K, sizeof (LmBlockQ6_K), lm_dequantize_row_q6_K, lm_quantize_row_q6_K },
};

static const TypeTraits *
traits_of (LmTensorType type)
{
  for (size_t i = 0; i < sizeof type_traits / sizeof type_traits[0]; i++)
    if (type_traits[i].type == type)
      return &type_traits[i];
  return NULL;
}

int
lm_type_is_supported (LmTensorType type)
{
  return traits_of (type) != NULL;
}

const char *
lm_type_name (LmTensorType type)
{
  const TypeTraits *t = traits_of (type);
  return t ? t->name : "unknown";
}

size_t
lm_type_block_size (LmTensorType type)
{
  const TypeTraits *t = traits_of (type);
  return t ? t->block_size : 0;
}

size_t
lm_type_block_bytes (LmTensorType type)
{
  const TypeTraits *t = traits_of (type);
  return t ? t->block_bytes : 0;
}

size_t
lm_row_bytes (LmTensorType type, int64_t n)
{
  const TypeTraits *t = traits_of (type);
  if (!t || n < 0 || (uint64_t) n % t->block_size != 0)
    return 0;
  return (size_t) n / t->block_size * t->block_bytes;
}

static const TypeTraits *
checked_traits (LmTensorType type, const void *src, const void *dst, int64_t n)
{
  const TypeTraits *t = traits_of (type);
  if (!t || !src || !dst || n < 0 || (uint64_t) n % t->block_size != 0)
    return NULL;
  return t;
}

LmStatus
lm_dequantize_row (LmTensorType type, const void *src, float *dst, int64_t n)
{
  const TypeTraits *t = checked_traits (type, src, dst, n);
  if (!t)
    return LM_ERR_INVALID_ARGUMENT;
  t->to_float (src, dst, n);
  return LM_OK;
}

LmStatus
lm_quantize_row (LmTensorType type, const float *src, void *dst, int64_t n)
{
  const TypeTraits *t = checked_traits (type, src, dst, n);
  if (!t)
    return LM_ERR_INVALID_ARGUMENT;
  t->from_float (src, dst, n);
  return LM_OK;
}
