/* quant.h: ggml tensor block formats, (de)quantisation and 8-bit activation blocks.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Layouts follow GGUF/ggml exactly (little-endian, packed, see FORMAT.md §4.1):
 * a row of n values of a quantised type is n / lm_type_block_size() consecutive
 * blocks. All functions here are pure: they touch only the buffers passed in, so
 * they are thread-safe for disjoint outputs. Callers own every buffer.
 */
#pragma once

#include <assert.h>   /* static_assert, in C and C++ */
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"   /* LmTensorType, LmStatus */

#ifdef __cplusplus
extern "C" {
#endif

#define LM_QK8_0 32    /* elements per Q8_0 block */
#define LM_QK32 32     /* elements per Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_1 block */
#define LM_QK_K 256    /* elements per K-quant super-block */
#define LM_K_SCALE_SIZE 12

/* Q4_0: x[j] = d * (q[j] - 8), q[j] the low nibble of qs[j] for j < 16 and
 * the high nibble of qs[j - 16] after. 18 bytes. */
typedef struct {
  uint16_t d;              /* fp16 */
  uint8_t qs[LM_QK32 / 2];
} LmBlockQ4_0;

/* Q4_1: x[j] = d * q[j] + m, nibbles as Q4_0. 20 bytes. */
typedef struct {
  uint16_t d;              /* fp16 */
  uint16_t m;              /* fp16 */
  uint8_t qs[LM_QK32 / 2];
} LmBlockQ4_1;

/* Q5_0: x[j] = d * (q[j] - 16), q[j] a nibble as Q4_0 plus bit j of the
 * little-endian word qh as its fifth bit. 22 bytes. */
typedef struct {
  uint16_t d;              /* fp16 */
  uint8_t qh[4];
  uint8_t qs[LM_QK32 / 2];
} LmBlockQ5_0;

/* Q5_1: x[j] = d * q[j] + m, q[j] as Q5_0. 24 bytes. */
typedef struct {
  uint16_t d;              /* fp16 */
  uint16_t m;              /* fp16 */
  uint8_t qh[4];
  uint8_t qs[LM_QK32 / 2];
} LmBlockQ5_1;

/* Q8_0: x[i] = d * qs[i]. 34 bytes. */
typedef struct {
  uint16_t d;              /* fp16 */
  int8_t qs[LM_QK8_0];
} LmBlockQ8_0;

/* Q8_1: activation blocks only (for Q4_1 / Q5_1 weights): Q8_0 plus
 * s = d * sum(qs), both fp16. 36 bytes. */
typedef struct {
  uint16_t d;              /* fp16 */
  uint16_t s;              /* fp16 */
  int8_t qs[LM_QK32];
} LmBlockQ8_1;

/* Q2_K: sixteen sub-blocks of 16, x = d*(sc & 15)*q - dmin*(sc >> 4), q 2-bit.
 * Value 16s + l (s = 8h + 2j + p) is bits 2j, 2j+1 of qs[32h + 16p + l].
 * 84 bytes. */
typedef struct {
  uint8_t scales[LM_QK_K / 16]; /* 4-bit scale (low) and min (high) per sub-block */
  uint8_t qs[LM_QK_K / 4];
  uint16_t d;              /* fp16 super-block scale for the scales */
  uint16_t dmin;           /* fp16 super-block scale for the mins */
} LmBlockQ2_K;

/* Q3_K: sixteen sub-blocks of 16, x = d*(sc-32)*(q - 4*!hbit), q the 2-bit
 * field of qs as in Q2_K and hbit bit 4h + j of hmask[16p + l]; the 6-bit
 * scales are packed in 12 bytes (low nibbles in 0..7, high pairs in 8..11).
 * 110 bytes. */
typedef struct {
  uint8_t hmask[LM_QK_K / 8];
  uint8_t qs[LM_QK_K / 4];
  uint8_t scales[LM_K_SCALE_SIZE];
  uint16_t d;              /* fp16 */
} LmBlockQ3_K;

/* Q4_K: eight sub-blocks of 32, x = d*sc_j*q - dmin*m_j. 144 bytes. */
typedef struct {
  uint16_t d;              /* fp16 super-block scale for the 6-bit scales */
  uint16_t dmin;           /* fp16 super-block scale for the 6-bit mins */
  uint8_t scales[LM_K_SCALE_SIZE];
  uint8_t qs[LM_QK_K / 2]; /* 4-bit quants, 4 groups of 64 (low then high nibbles) */
} LmBlockQ4_K;

/* Q5_K: Q4_K plus a fifth bit per value in qh. 176 bytes. */
typedef struct {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[LM_K_SCALE_SIZE];
  uint8_t qh[LM_QK_K / 8];
  uint8_t qs[LM_QK_K / 2];
} LmBlockQ5_K;

/* Q6_K: sixteen sub-blocks of 16 with int8 scales, x = d*scale*(q-32). 210 bytes. */
typedef struct {
  uint8_t ql[LM_QK_K / 2];
  uint8_t qh[LM_QK_K / 4];
  int8_t scales[LM_QK_K / 16];
  uint16_t d;
} LmBlockQ6_K;

/* Q8_K: activation blocks only (never stored in files); bsums[g] is the sum of
 * qs[16g .. 16g+15]. */
typedef struct {
  float d;
  int8_t qs[LM_QK_K];
  int16_t bsums[LM_QK_K / 16];
} LmBlockQ8_K;

static_assert (sizeof (LmBlockQ4_0) == 18, "Q4_0 block size");
static_assert (sizeof (LmBlockQ4_1) == 20, "Q4_1 block size");
static_assert (sizeof (LmBlockQ5_0) == 22, "Q5_0 block size");
static_assert (sizeof (LmBlockQ5_1) == 24, "Q5_1 block size");
static_assert (sizeof (LmBlockQ8_0) == 34, "Q8_0 block size");
static_assert (sizeof (LmBlockQ8_1) == 36, "Q8_1 block size");
static_assert (sizeof (LmBlockQ2_K) == 84, "Q2_K block size");
static_assert (sizeof (LmBlockQ3_K) == 110, "Q3_K block size");
static_assert (sizeof (LmBlockQ4_K) == 144, "Q4_K block size");
static_assert (sizeof (LmBlockQ5_K) == 176, "Q5_K block size");
static_assert (sizeof (LmBlockQ6_K) == 210, "Q6_K block size");
static_assert (sizeof (LmBlockQ8_K) == 292, "Q8_K block size");

/* Element conversions, bit-exact with ggml (round to nearest even; NaN kept). */
float lm_fp16_to_fp32 (uint16_t h);
uint16_t lm_fp32_to_fp16 (float f);
float lm_bf16_to_fp32 (uint16_t h);
uint16_t lm_fp32_to_bf16 (float f);

/* True for the types listed in LmTensorType. */
int lm_type_is_supported (LmTensorType type);
/* Short name ("q4_K", "f32", ...) or "unknown". */
const char *lm_type_name (LmTensorType type);
/* Elements per block: 1 for F32/F16/BF16, 32 for Q4_0/Q4_1/Q5_0/Q5_1/Q8_0,
 * 256 for K-quants; 0 if the type is unsupported. */
size_t lm_type_block_size (LmTensorType type);
/* Bytes per block; 0 if the type is unsupported. */
size_t lm_type_block_bytes (LmTensorType type);
/* Bytes of a row of @n values; @n must be a multiple of the block size (0 if not,
 * or if the type is unsupported). */
size_t lm_row_bytes (LmTensorType type, int64_t n);

/* Decodes @n values (a multiple of the block size) of @type at @src into @dst.
 * Bit-exact with ggml's to_float. */
LmStatus lm_dequantize_row (LmTensorType type, const void *src, float *dst, int64_t n);
/* Encodes @n floats into blocks of @type at @dst (lm_row_bytes(type, n) bytes).
 * Produces valid blocks close to the input. Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 are
 * ggml's reference encoders (bit-identical to gguf-py's); the K-quants are a
 * plain min/max fit, not llama-quantize's search. */
LmStatus lm_quantize_row (LmTensorType type, const float *src, void *dst, int64_t n);

/* Activation quantisation exactly as ggml's x86 CPU backend does it before an
 * integer dot product (FORMAT.md §4): Q8_0 with d = amax/127 stored as fp16 and
 * q = round_half_even(x * (127/amax)); Q8_1 the same plus s = fp16(d * sum q)
 * with the unrounded d; Q8_K with iscale = -127/m (m the signed
 * element of largest magnitude, first one on ties), q = min(127, rne(iscale*x)),
 * d = 1/iscale. @n must be a multiple of 32 resp. 256. */
void lm_quantize_row_q8_0_act (const float *src, LmBlockQ8_0 *dst, int64_t n);
void lm_quantize_row_q8_1_act (const float *src, LmBlockQ8_1 *dst, int64_t n);
void lm_quantize_row_q8_K (const float *src, LmBlockQ8_K *dst, int64_t n);

#ifdef __cplusplus
}
#endif
