/* kernels-q32-kinds.h: the layouts of the 32-value formats Q4_0, Q5_0, Q4_1
 * and Q5_1 and of their activation blocks, for the x86 kernel bodies
 * (kernels-q32-x86.h, 256-bit; kernels-avx512-q4q5.c, 512-bit).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Internal. The including file defines TARGET and includes kernels-x86.h
 * first. Blocks are combined in chunks of ACT_CHUNK (a row longer than that
 * is summed chunk by chunk, identically in every kernel of these formats, so
 * that the ISAs agree bit for bit). */
#pragma once

#include "kernels-private.h"

#ifndef TARGET
#error "define TARGET before including kernels-q32-kinds.h"
#endif

/* Activation blocks prepared at once: 2048 values. */
#define ACT_CHUNK 64

/* These rows are short (616 bytes for 896 values of Q5_0): the row kernels
 * prefetch three times as many rows ahead as the others to keep as many
 * lines in flight (measured: a streamed Q5_0 896x4864, 4 -> 8 rows, AVX-512
 * 160 -> 125 us, AVX2 180 -> 164 us; the real Qwen2.5 0.5B's decode on
 * one thread, 8 -> 12 rows, 65 -> 68 tokens/s). */
#define Q32_PREFETCH_ROWS (3 * LM_PREFETCH_ROWS)

typedef enum { KIND_Q4_0, KIND_Q5_0, KIND_Q4_1, KIND_Q5_1 } Kind;

static inline __attribute__ ((always_inline)) int
kind_has_min (Kind k)
{
  return k == KIND_Q4_1 || k == KIND_Q5_1;
}

static inline __attribute__ ((always_inline)) int
kind_has_qh (Kind k)
{
  return k == KIND_Q5_0 || k == KIND_Q5_1;
}

static inline __attribute__ ((always_inline)) size_t
weight_block_bytes (Kind k)
{
  static const size_t bytes[] = { sizeof (LmBlockQ4_0), sizeof (LmBlockQ5_0),
                                  sizeof (LmBlockQ4_1), sizeof (LmBlockQ5_1) };
  return bytes[k];
}

/* Where a weight block keeps its fifth bits and its nibbles. */
static inline __attribute__ ((always_inline)) size_t
qh_offset (Kind k)
{
  return kind_has_min (k) ? 4 : 2;
}

static inline __attribute__ ((always_inline)) size_t
qs_offset (Kind k)
{
  return qh_offset (k) + (kind_has_qh (k) ? 4 : 0);
}

/* Q8_0 activations for Q4_0 / Q5_0, Q8_1 for Q4_1 / Q5_1. */
static inline __attribute__ ((always_inline)) size_t
act_block_bytes (Kind k)
{
  return kind_has_min (k) ? sizeof (LmBlockQ8_1) : sizeof (LmBlockQ8_0);
}

static inline __attribute__ ((always_inline)) const int8_t *
act_quants (const uint8_t *block, Kind k)
{
  return kind_has_min (k) ? ((const LmBlockQ8_1 *) block)->qs : ((const LmBlockQ8_0 *) block)->qs;
}

/* The activation block's scale d and (Q8_1) sum s. */
TARGET static inline __attribute__ ((always_inline)) float
act_scale (const uint8_t *block, Kind k)
{
  return fp16 (kind_has_min (k) ? ((const LmBlockQ8_1 *) block)->d
                                : ((const LmBlockQ8_0 *) block)->d);
}

TARGET static inline __attribute__ ((always_inline)) float
act_sum (const uint8_t *block, Kind k)
{
  return kind_has_min (k) ? fp16 (((const LmBlockQ8_1 *) block)->s) : 0.0f;
}

/* The fp16 at p (converted from memory, without a general register). */
TARGET static inline float
fp16_at (const uint8_t *p)
{
  return _mm_cvtss_f32 (_mm_cvtph_ps (_mm_loadu_si32 (p)));
}

/* A weight block's min (Q4_1 / Q5_1; 0 for the others). */
TARGET static inline __attribute__ ((always_inline)) float
weight_min (const uint8_t *block, Kind k)
{
  return kind_has_min (k) ? fp16_at (block + 2) : 0.0f;
}
