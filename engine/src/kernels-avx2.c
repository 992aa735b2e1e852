/* kernels-avx2.c: AVX2 + FMA + F16C kernels (compiled per function with target attributes).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Integer dot products use maddubs (u8 x s8 -> pairs of int16) then madd with
 * the sub-block scales (-> int32), so each super-block's sum is exact; blocks
 * are combined in f32 vectors. */
#include <immintrin.h>
#include <string.h>

#include "kernels-private.h"
#include "quant-private.h"

#define TARGET __attribute__ ((target ("avx2,fma,f16c")))

#include "kernels-x86.h"

/* ---- f32 activations for float weights ---- */

TARGET static inline __m256
load8_f32 (const float *p)
{
  return _mm256_loadu_ps (p);
}

TARGET static inline __m256
load8_f16 (const uint16_t *p)
{
  return _mm256_cvtph_ps (_mm_loadu_si128 ((const __m128i *) p));
}

TARGET static inline __m256
load8_bf16 (const uint16_t *p)
{
  __m256i v = _mm256_cvtepu16_epi32 (_mm_loadu_si128 ((const __m128i *) p));
  return _mm256_castsi256_ps (_mm256_slli_epi32 (v, 16));
}

#define DEFINE_FLOAT_DOT(name, elem_t, load8, to_f32)                          \
  TARGET static float name (const elem_t *w, const float *x, int64_t n)        \
  {                                                                            \
    __m256 acc0 = _mm256_setzero_ps (), acc1 = _mm256_setzero_ps ();           \
    __m256 acc2 = _mm256_setzero_ps (), acc3 = _mm256_setzero_ps ();           \
    int64_t i = 0;                                                             \
    for (; i + 32 <= n; i += 32)                                               \
      {                                                                        \
        acc0 = _mm256_fmadd_ps (load8 (w + i), _mm256_loadu_ps (x + i), acc0);            \
        acc1 = _mm256_fmadd_ps (load8 (w + i + 8), _mm256_loadu_ps (x + i + 8), acc1);    \
        acc2 = _mm256_fmadd_ps (load8 (w + i + 16), _mm256_loadu_ps (x + i + 16), acc2);  \
        acc3 = _mm256_fmadd_ps (load8 (w + i + 24), _mm256_loadu_ps (x + i + 24), acc3);  \
      }                                                                        \
    for (; i + 8 <= n; i += 8)                                                 \
      acc0 = _mm256_fmadd_ps (load8 (w + i), _mm256_loadu_ps (x + i), acc0);   \
    float sum = hsum256_ps (_mm256_add_ps (_mm256_add_ps (acc0, acc1),            \
                                        _mm256_add_ps (acc2, acc3)));          \
    for (; i < n; i++)                                                         \
      sum += to_f32 (w[i]) * x[i];                                             \
    return sum;                                                                \
  }

DEFINE_FLOAT_DOT (dot_f32, float, load8_f32, same_f32)
DEFINE_FLOAT_DOT (dot_f16, uint16_t, load8_f16, lm_fp16_to_fp32)
DEFINE_FLOAT_DOT (dot_bf16, uint16_t, load8_bf16, lm_bf16_to_fp32)

/* ---- 8-bit activations ---- */

TARGET static float
dot_q8_0 (const LmBlockQ8_0 *w, const LmBlockQ8_0 *a, int64_t nb)
{
  __m256 acc = _mm256_setzero_ps ();
  const __m256i ones = _mm256_set1_epi16 (1);
  for (int64_t b = 0; b < nb; b++)
    {
      __m256i qw = _mm256_loadu_si256 ((const __m256i *) w[b].qs);
      __m256i qa = _mm256_loadu_si256 ((const __m256i *) a[b].qs);
      /* |w| is unsigned (-128 -> 128); the sign moves to the activation,
       * which is never -128 */
      __m256i p16 = _mm256_maddubs_epi16 (_mm256_sign_epi8 (qw, qw), _mm256_sign_epi8 (qa, qw));
      __m256 p = _mm256_cvtepi32_ps (_mm256_madd_epi16 (p16, ones));
      acc = _mm256_fmadd_ps (_mm256_set1_ps (fp16 (w[b].d) * fp16 (a[b].d)), p, acc);
    }
  return hsum256_ps (acc);
}

/* Sub-block pair (2g, 2g+1) of a Q4_K/Q5_K block: lo, hi are its 32+32 unsigned
 * values, q8 the 64 activations. Returns the scaled int32 sums. */
TARGET static inline __m256i
k4_pair_sum (__m256i lo, __m256i hi, const int8_t *q8, int sc_lo, int sc_hi)
{
  __m256i p_lo = _mm256_maddubs_epi16 (lo, _mm256_loadu_si256 ((const __m256i *) q8));
  __m256i p_hi = _mm256_maddubs_epi16 (hi, _mm256_loadu_si256 ((const __m256i *) (q8 + 32)));
  return _mm256_add_epi32 (_mm256_madd_epi16 (p_lo, _mm256_set1_epi16 ((short) sc_lo)),
                           _mm256_madd_epi16 (p_hi, _mm256_set1_epi16 ((short) sc_hi)));
}

/* Adds one Q4_K/Q5_K block's contribution given its integer sums. */
TARGET static inline void
k4_accumulate (__m256 *acc, __m256 *acc_min, __m256i sumi, __m256i mins, float d, float dmin)
{
  *acc = _mm256_fmadd_ps (_mm256_set1_ps (d), _mm256_cvtepi32_ps (sumi), *acc);
  *acc_min = _mm256_fmadd_ps (_mm256_set1_ps (dmin), _mm256_cvtepi32_ps (mins), *acc_min);
}

/* 16 where bit @bit of qh is set, else 0, per byte. */
TARGET static inline __m256i
q5_high_bits (__m256i qh, int bit)
{
  __m256i mask = _mm256_set1_epi8 ((char) (1 << bit));
  __m256i set = _mm256_cmpeq_epi8 (_mm256_and_si256 (qh, mask), mask);
  return _mm256_and_si256 (set, _mm256_set1_epi8 (16));
}

/* One Q4_K (@qh NULL) or Q5_K super-block against the Q8_K blocks a[0..n_act)
 * (several tokens in a prefill tile): the weights are unpacked once, and each
 * token gets exactly the operations it would get alone. */
TARGET static inline __attribute__ ((always_inline)) void
k4_block (const uint8_t *scales, const uint8_t *qs, const uint8_t *qh, float d, float dmin,
          const LmBlockQ8_K *const a[], int n_act, __m256 acc[], __m256 acc_min[])
{
  const __m256i low4 = _mm256_set1_epi8 (0x0F);
  uint8_t sm[16];
  lm_k4_unpack_scales (scales, sm);
  __m256i high = qh ? _mm256_loadu_si256 ((const __m256i *) qh) : _mm256_setzero_si256 ();
  __m256i sumi[LM_TILE_TOKENS];
  #pragma GCC unroll 4
  for (int t = 0; t < n_act; t++)
    sumi[t] = _mm256_setzero_si256 ();
  #pragma GCC unroll 4
  for (int g = 0; g < 4; g++)
    {
      __m256i q = _mm256_loadu_si256 ((const __m256i *) (qs + 32 * g));
      __m256i lo = _mm256_and_si256 (q, low4);
      __m256i hi = _mm256_and_si256 (_mm256_srli_epi16 (q, 4), low4);
      if (qh)
        {
          lo = _mm256_or_si256 (lo, q5_high_bits (high, 2 * g));
          hi = _mm256_or_si256 (hi, q5_high_bits (high, 2 * g + 1));
        }
      #pragma GCC unroll 4
      for (int t = 0; t < n_act; t++)
        sumi[t] = _mm256_add_epi32 (sumi[t], k4_pair_sum (lo, hi, a[t]->qs + 64 * g, sm[2 * g],
                                                          sm[2 * g + 1]));
    }
  #pragma GCC unroll 4
  for (int t = 0; t < n_act; t++)
    k4_accumulate (&acc[t], &acc_min[t], sumi[t], k4_min_products (sm, a[t]->bsums),
                   a[t]->d * d, a[t]->d * dmin);
}

/* ---- Q4_K in the float order of ggml's repacked kernels ---- */

typedef struct {
  __m256i lo[4], hi[4];  /* sub-blocks 2g and 2g+1, unsigned */
  uint8_t sm[16];        /* scales, then mins */
  float d, dmin;
} K4Block;

TARGET static inline __attribute__ ((always_inline)) void
k4_unpack_q4 (const LmBlockQ4_K *w, K4Block *u)
{
  const __m256i low4 = _mm256_set1_epi8 (0x0F);
  lm_k4_unpack_scales (w->scales, u->sm);
  #pragma GCC unroll 4
  for (int g = 0; g < 4; g++)
    {
      __m256i q = _mm256_loadu_si256 ((const __m256i *) (w->qs + 32 * g));
      u->lo[g] = _mm256_and_si256 (q, low4);
      u->hi[g] = _mm256_and_si256 (_mm256_srli_epi16 (q, 4), low4);
    }
  u->d = fp16 (w->d);
  u->dmin = fp16 (w->dmin);
}

TARGET static inline __attribute__ ((always_inline)) void
k4_integers (const K4Block *u, const LmBlockQ8_K *a, __m256i *sumi, __m256i *mins)
{
  __m256i s = _mm256_setzero_si256 ();
  #pragma GCC unroll 4
  for (int g = 0; g < 4; g++)
    s = _mm256_add_epi32 (s, k4_pair_sum (u->lo[g], u->hi[g], a->qs + 64 * g, u->sm[2 * g],
                                          u->sm[2 * g + 1]));
  *sumi = s;
  *mins = k4_min_products (u->sm, a->bsums);
}

TARGET static inline __attribute__ ((always_inline)) __m256i
k4_group_lanes (const K4Block *u, const LmBlockQ8_K *a, int g)
{
  return k4_pair_sum (u->lo[g], u->hi[g], a->qs + 64 * g, u->sm[2 * g], u->sm[2 * g + 1]);
}

TARGET static inline __attribute__ ((always_inline)) __m256i
k4_min_lanes (const K4Block *u, const LmBlockQ8_K *a)
{
  return k4_min_products (u->sm, a->bsums);
}

/* 4 rows at a time: 8 rows' integer vectors do not fit 16 registers */
#define Q4K_ROW_GROUP 4
#include "kernels-q4k-x86.h"

TARGET static float
dot_q5_K (const LmBlockQ5_K *w, const LmBlockQ8_K *a, int64_t nb)
{
  __m256 acc = _mm256_setzero_ps (), acc_min = _mm256_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    {
      const LmBlockQ8_K *ab[1] = { &a[b] };
      k4_block (w[b].scales, w[b].qs, w[b].qh, fp16 (w[b].d), fp16 (w[b].dmin), ab, 1, &acc, &acc_min);
    }
  return hsum256_ps (acc) - hsum256_ps (acc_min);
}

/* Two int16 scales, each over 8 lanes (one 16-value sub-block of Q6_K). */
TARGET static inline __m256i
q6_scale_pair (const int8_t *sc)
{
  return _mm256_setr_m128i (_mm_set1_epi16 (sc[0]), _mm_set1_epi16 (sc[1]));
}

TARGET static inline __m256i
q6_part (__m256i q, const int8_t *q8, const int8_t *sc)
{
  __m256i p = _mm256_maddubs_epi16 (q, _mm256_loadu_si256 ((const __m256i *) q8));
  return _mm256_madd_epi16 (p, q6_scale_pair (sc));
}

/* One Q6_K super-block against the Q8_K blocks a[0..n_act), as k4_block. */
TARGET static inline __attribute__ ((always_inline)) void
q6_block (const LmBlockQ6_K *w, const LmBlockQ8_K *const a[], int n_act, __m256 acc[])
{
  const __m256i low4 = _mm256_set1_epi8 (0x0F), two = _mm256_set1_epi8 (3);
  __m256i sumi[LM_TILE_TOKENS];
  #pragma GCC unroll 4
  for (int t = 0; t < n_act; t++)
    sumi[t] = _mm256_setzero_si256 ();
  #pragma GCC unroll 2
  for (int half = 0; half < 2; half++)
    {
      const uint8_t *ql = w->ql + 64 * half;
      const int8_t *sc = w->scales + 8 * half;
      __m256i l0 = _mm256_loadu_si256 ((const __m256i *) ql);
      __m256i l1 = _mm256_loadu_si256 ((const __m256i *) (ql + 32));
      __m256i h = _mm256_loadu_si256 ((const __m256i *) (w->qh + 32 * half));
      __m256i h0 = _mm256_slli_epi16 (_mm256_and_si256 (h, two), 4);
      __m256i h1 = _mm256_slli_epi16 (_mm256_and_si256 (_mm256_srli_epi16 (h, 2), two), 4);
      __m256i h2 = _mm256_slli_epi16 (_mm256_and_si256 (_mm256_srli_epi16 (h, 4), two), 4);
      __m256i h3 = _mm256_slli_epi16 (_mm256_and_si256 (_mm256_srli_epi16 (h, 6), two), 4);
      __m256i q0 = _mm256_or_si256 (_mm256_and_si256 (l0, low4), h0);
      __m256i q1 = _mm256_or_si256 (_mm256_and_si256 (l1, low4), h1);
      __m256i q2 = _mm256_or_si256 (_mm256_and_si256 (_mm256_srli_epi16 (l0, 4), low4), h2);
      __m256i q3 = _mm256_or_si256 (_mm256_and_si256 (_mm256_srli_epi16 (l1, 4), low4), h3);
      #pragma GCC unroll 4
      for (int t = 0; t < n_act; t++)
        {
          const int8_t *q8 = a[t]->qs + 128 * half;
          sumi[t] = _mm256_add_epi32 (sumi[t], q6_part (q0, q8, sc));
          sumi[t] = _mm256_add_epi32 (sumi[t], q6_part (q1, q8 + 32, sc + 2));
          sumi[t] = _mm256_add_epi32 (sumi[t], q6_part (q2, q8 + 64, sc + 4));
          sumi[t] = _mm256_add_epi32 (sumi[t], q6_part (q3, q8 + 96, sc + 6));
        }
    }
  /* the stored values are q+32: take 32 * sum_s sc_s * bsums_s back out */
  __m256i sc16 = _mm256_cvtepi8_epi16 (_mm_loadu_si128 ((const __m128i *) w->scales));
  float d = fp16 (w->d);
  #pragma GCC unroll 4
  for (int t = 0; t < n_act; t++)
    {
      __m256i offset = _mm256_madd_epi16 (_mm256_loadu_si256 ((const __m256i *) a[t]->bsums), sc16);
      __m256i s = _mm256_sub_epi32 (sumi[t], _mm256_slli_epi32 (offset, 5));
      acc[t] = _mm256_fmadd_ps (_mm256_set1_ps (a[t]->d * d), _mm256_cvtepi32_ps (s), acc[t]);
    }
}

/* A Q6_K super-block unpacked for the batch kernel: the 8 groups of 32
 * values (q+32), as q6_block makes them. */
typedef struct {
  __m256i q[8];
  const int8_t *scales;
  float d;
} Q6Block;

TARGET static inline __attribute__ ((always_inline)) void
q6_unpack (const LmBlockQ6_K *w, Q6Block *u)
{
  const __m256i low4 = _mm256_set1_epi8 (0x0F), two = _mm256_set1_epi8 (3);
  #pragma GCC unroll 2
  for (int half = 0; half < 2; half++)
    {
      const uint8_t *ql = w->ql + 64 * half;
      __m256i l0 = _mm256_loadu_si256 ((const __m256i *) ql);
      __m256i l1 = _mm256_loadu_si256 ((const __m256i *) (ql + 32));
      __m256i h = _mm256_loadu_si256 ((const __m256i *) (w->qh + 32 * half));
      __m256i *q = u->q + 4 * half;
      q[0] = _mm256_or_si256 (_mm256_and_si256 (l0, low4), _mm256_slli_epi16 (_mm256_and_si256 (h, two), 4));
      q[1] = _mm256_or_si256 (_mm256_and_si256 (l1, low4),
                              _mm256_slli_epi16 (_mm256_and_si256 (_mm256_srli_epi16 (h, 2), two), 4));
      q[2] = _mm256_or_si256 (_mm256_and_si256 (_mm256_srli_epi16 (l0, 4), low4),
                              _mm256_slli_epi16 (_mm256_and_si256 (_mm256_srli_epi16 (h, 4), two), 4));
      q[3] = _mm256_or_si256 (_mm256_and_si256 (_mm256_srli_epi16 (l1, 4), low4),
                              _mm256_slli_epi16 (_mm256_and_si256 (_mm256_srli_epi16 (h, 6), two), 4));
    }
  u->scales = w->scales;
  u->d = fp16 (w->d);
}

/* The integer lanes of q6_block for one token. */
TARGET static inline __attribute__ ((always_inline)) __m256i
q6_lanes (const Q6Block *u, const LmBlockQ8_K *a)
{
  __m256i sumi = _mm256_setzero_si256 ();
  #pragma GCC unroll 8
  for (int g = 0; g < 8; g++)
    sumi = _mm256_add_epi32 (sumi, q6_part (u->q[g], a->qs + 32 * g, u->scales + 2 * g));
  __m256i sc16 = _mm256_cvtepi8_epi16 (_mm_loadu_si128 ((const __m128i *) u->scales));
  __m256i offset = _mm256_madd_epi16 (_mm256_loadu_si256 ((const __m256i *) a->bsums), sc16);
  return _mm256_sub_epi32 (sumi, _mm256_slli_epi32 (offset, 5));
}

#include "kernels-q6k-batch-x86.h"

/* Q6_K rows, one fma chain each; the row LM_PREFETCH_ROWS ahead is asked
 * for block by block rather than in one burst of up to 62 lines per row
 * (as on AVX-512, kernels-avx512.c). */
TARGET static void
rows_q6_K (const void *W, size_t row_bytes, int64_t n_rows, const void *act, int64_t n, float *y)
{
  const LmBlockQ8_K *a = act;

  for (int64_t r = 0; r < n_rows; r++)
    {
      const LmBlockQ6_K *w = (const LmBlockQ6_K *) ((const uint8_t *) W + r * row_bytes);
      __m256 acc = _mm256_setzero_ps ();
      for (int64_t b = 0; b < n / LM_QK_K; b++)
        {
          const LmBlockQ8_K *ab[1] = { &a[b] };
          lm_prefetch_row ((const uint8_t *) &w[b] + LM_PREFETCH_ROWS * row_bytes, sizeof w[b]);
          q6_block (&w[b], ab, 1, &acc);
        }
      y[r] = hsum256_ps (acc);
    }
}

/* ---- tiles of 2 to LM_TILE_TOKENS activation rows for prefill ---- */

/* The Q8_K blocks @b of the @T activation rows of a tile. */
static inline __attribute__ ((always_inline)) void
tile_blocks (const void *act, size_t act_stride, int64_t b, const LmBlockQ8_K *ab[], int T)
{
  for (int t = 0; t < T; t++)
    ab[t] = (const LmBlockQ8_K *) ((const uint8_t *) act + t * act_stride) + b;
}

/* Q8_0 rows against @T tokens: each weight block is loaded and its signs
 * taken once; per token the operations of dot_q8_0. */
TARGET static inline __attribute__ ((always_inline)) void
tile_q8_0_body (const void *W, size_t row_bytes, int64_t n_rows, const void *act,
                size_t act_stride, int64_t n, float *Y, size_t y_stride, const int T)
{
  const __m256i ones = _mm256_set1_epi16 (1);
  for (int64_t r = 0; r < n_rows; r++)
    {
      const LmBlockQ8_0 *w = (const LmBlockQ8_0 *) ((const uint8_t *) W + r * row_bytes);
      __m256 acc[LM_TILE_TOKENS];
      for (int t = 0; t < T; t++)
        acc[t] = _mm256_setzero_ps ();
      for (int64_t b = 0; b < n / LM_QK8_0; b++)
        {
          __m256i qw = _mm256_loadu_si256 ((const __m256i *) w[b].qs);
          __m256i w_abs = _mm256_sign_epi8 (qw, qw);
          float dw = fp16 (w[b].d);
          for (int t = 0; t < T; t++)
            {
              const LmBlockQ8_0 *a = (const LmBlockQ8_0 *) ((const uint8_t *) act
                                                            + t * act_stride) + b;
              __m256i qa = _mm256_loadu_si256 ((const __m256i *) a->qs);
              __m256i p16 = _mm256_maddubs_epi16 (w_abs, _mm256_sign_epi8 (qa, qw));
              __m256 p = _mm256_cvtepi32_ps (_mm256_madd_epi16 (p16, ones));
              acc[t] = _mm256_fmadd_ps (_mm256_set1_ps (dw * fp16 (a->d)), p, acc[t]);
            }
        }
      for (int t = 0; t < T; t++)
        Y[t * y_stride + (size_t) r] = hsum256_ps (acc[t]);
    }
}

LM_DEFINE_TILE (TARGET, tile_q8_0, tile_q8_0_body)

#define DEFINE_K4_TILE(name, wtype, qh_of)                                              \
  TARGET static inline __attribute__ ((always_inline)) void                             \
  name##_body (const void *W, size_t row_bytes, int64_t n_rows, const void *act,        \
               size_t act_stride, int64_t n, float *Y, size_t y_stride, const int T)    \
  {                                                                                     \
    for (int64_t r = 0; r < n_rows; r++)                                                \
      {                                                                                 \
        const wtype *w = (const wtype *) ((const uint8_t *) W + r * row_bytes);         \
        __m256 acc[LM_TILE_TOKENS], acc_min[LM_TILE_TOKENS];                            \
        for (int t = 0; t < T; t++)                                                     \
          acc[t] = acc_min[t] = _mm256_setzero_ps ();                                   \
        for (int64_t b = 0; b < n / LM_QK_K; b++)                                       \
          {                                                                             \
            const LmBlockQ8_K *ab[LM_TILE_TOKENS];                                      \
            tile_blocks (act, act_stride, b, ab, T);                                    \
            k4_block (w[b].scales, w[b].qs, qh_of (w[b]), fp16 (w[b].d),                \
                      fp16 (w[b].dmin), ab, T, acc, acc_min);                           \
          }                                                                             \
        for (int t = 0; t < T; t++)                                                     \
          Y[t * y_stride + (size_t) r] = hsum256_ps (acc[t]) - hsum256_ps (acc_min[t]); \
      }                                                                                 \
  }                                                                                     \
  LM_DEFINE_TILE (TARGET, name, name##_body)

#define QH(block) (block).qh

DEFINE_K4_TILE (tile_q5_K, LmBlockQ5_K, QH)


/* Q6_K rows against @T tokens in the single-token order (rows_q6_K's per
 * token), each weight block unpacked once: for products below the batch
 * kernel's size. */
TARGET static inline __attribute__ ((always_inline)) void
tile_q6_K_body (const void *W, size_t row_bytes, int64_t n_rows, const void *act,
                size_t act_stride, int64_t n, float *Y, size_t y_stride, const int T)
{
  for (int64_t r = 0; r < n_rows; r++)
    {
      const LmBlockQ6_K *w = (const LmBlockQ6_K *) ((const uint8_t *) W + r * row_bytes);
      __m256 acc[LM_TILE_TOKENS];
      for (int t = 0; t < T; t++)
        acc[t] = _mm256_setzero_ps ();
      for (int64_t b = 0; b < n / LM_QK_K; b++)
        {
          const LmBlockQ8_K *ab[LM_TILE_TOKENS];
          tile_blocks (act, act_stride, b, ab, T);
          q6_block (&w[b], ab, T, acc);
        }
      for (int t = 0; t < T; t++)
        Y[t * y_stride + (size_t) r] = hsum256_ps (acc[t]);
    }
}

LM_DEFINE_TILE (TARGET, tile_q6_K, tile_q6_K_body)

/* ---- activation quantisation (bit-identical to the scalar reference) ---- */

TARGET static inline float
hmax256_ps (__m256 v)
{
  __m128 m = _mm_max_ps (_mm256_castps256_ps128 (v), _mm256_extractf128_ps (v, 1));
  m = _mm_max_ps (m, _mm_movehl_ps (m, m));
  m = _mm_max_ss (m, _mm_movehdup_ps (m));
  return _mm_cvtss_f32 (m);
}

/* 32 int32 (four vectors) -> 32 int8 at @out, saturating. */
TARGET static inline void
store_i8x32 (__m256i q0, __m256i q1, __m256i q2, __m256i q3, int8_t *out)
{
  __m256i p8 = _mm256_packs_epi16 (_mm256_packs_epi32 (q0, q1), _mm256_packs_epi32 (q2, q3));
  /* packs interleave the 128-bit lanes: put the 32-bit groups back in order */
  p8 = _mm256_permutevar8x32_epi32 (p8, _mm256_setr_epi32 (0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256 ((__m256i *) out, p8);
}

TARGET static inline __m256i
round_to_i32 (__m256 v)
{
  return _mm256_cvtps_epi32 (_mm256_round_ps (v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

TARGET static void
quantize_q8_0 (const float *x, void *out, int64_t n)
{
  LmBlockQ8_0 *y = out;
  const __m256 sign = _mm256_set1_ps (-0.0f);
  for (int64_t b = 0; b < n / LM_QK8_0; b++)
    {
      __m256 v[4], amax_v = _mm256_setzero_ps ();
      for (int i = 0; i < 4; i++)
        {
          v[i] = _mm256_loadu_ps (x + 32 * b + 8 * i);
          amax_v = _mm256_max_ps (amax_v, _mm256_andnot_ps (sign, v[i]));
        }
      float amax = hmax256_ps (amax_v);
      y[b].d = lm_fp32_to_fp16 (amax / 127.0f);
      __m256 id = _mm256_set1_ps (amax != 0.0f ? 127.0f / amax : 0.0f);
      store_i8x32 (round_to_i32 (_mm256_mul_ps (v[0], id)), round_to_i32 (_mm256_mul_ps (v[1], id)),
                   round_to_i32 (_mm256_mul_ps (v[2], id)), round_to_i32 (_mm256_mul_ps (v[3], id)),
                   y[b].qs);
    }
}

TARGET static void
quantize_q8_K (const float *x, void *out, int64_t n)
{
  LmBlockQ8_K *y = out;
  const __m256 sign = _mm256_set1_ps (-0.0f);
  for (int64_t b = 0; b < n / LM_QK_K; b++)
    {
      const float *xb = x + LM_QK_K * b;
      __m256 amax_v = _mm256_setzero_ps ();
      for (int i = 0; i < LM_QK_K; i += 8)
        amax_v = _mm256_max_ps (amax_v, _mm256_andnot_ps (sign, _mm256_loadu_ps (xb + i)));
      float amax = hmax256_ps (amax_v);
      if (amax == 0.0f)
        {
          memset (&y[b], 0, sizeof y[b]);
          continue;
        }
      /* the signed value of the first element reaching amax */
      float max = 0.0f;
      for (int i = 0; i < LM_QK_K; i += 8)
        {
          __m256 hit = _mm256_cmp_ps (_mm256_andnot_ps (sign, _mm256_loadu_ps (xb + i)),
                                      _mm256_set1_ps (amax), _CMP_EQ_OQ);
          int mask = _mm256_movemask_ps (hit);
          if (mask)
            {
              max = xb[i + __builtin_ctz ((unsigned) mask)];
              break;
            }
        }
      float iscale = -127.0f / max;
      const __m256 s = _mm256_set1_ps (iscale);
      const __m256i limit = _mm256_set1_epi32 (127);
      for (int i = 0; i < LM_QK_K; i += 32)
        {
          __m256i q[4];
          #pragma GCC unroll 4
          for (int k = 0; k < 4; k++)
            q[k] = _mm256_min_epi32 (round_to_i32 (_mm256_mul_ps (_mm256_loadu_ps (xb + i + 8 * k), s)),
                                     limit);
          store_i8x32 (q[0], q[1], q[2], q[3], y[b].qs + i);
        }
      for (int g = 0; g < LM_QK_K / 16; g++)
        {
          __m128i v = _mm_loadu_si128 ((const __m128i *) (y[b].qs + 16 * g));
          __m256i w = _mm256_cvtepi8_epi16 (v);
          __m256i pairs = _mm256_madd_epi16 (w, _mm256_set1_epi16 (1));
          __m128i s4 = _mm_add_epi32 (_mm256_castsi256_si128 (pairs), _mm256_extracti128_si256 (pairs, 1));
          s4 = _mm_hadd_epi32 (s4, s4);
          s4 = _mm_hadd_epi32 (s4, s4);
          y[b].bsums[g] = (int16_t) _mm_cvtsi128_si32 (s4);
        }
      y[b].d = 1.0f / iscale;
    }
}

/* ---- row loops ---- */


LM_DEFINE_ROWS (TARGET, rows_f32, dot_f32, float, float, 1)
LM_DEFINE_ROWS (TARGET, rows_f16, dot_f16, uint16_t, float, 1)
LM_DEFINE_ROWS (TARGET, rows_bf16, dot_bf16, uint16_t, float, 1)
LM_DEFINE_ROWS (TARGET, rows_q8_0, dot_q8_0, LmBlockQ8_0, LmBlockQ8_0, LM_QK8_0)
LM_DEFINE_ROWS (TARGET, rows_q5_K, dot_q5_K, LmBlockQ5_K, LmBlockQ8_K, LM_QK_K)

void
lm_kernels_fill_avx2 (LmKernels *k)
{
  k->isa = LM_ISA_AVX2;
  lm_set_f32act (k, LM_KT_F32, rows_f32, NULL);
  lm_set_f32act (k, LM_KT_F16, rows_f16, NULL);
  lm_set_f32act (k, LM_KT_BF16, rows_bf16, NULL);
  k->native[LM_KT_Q8_0] = rows_q8_0;
  k->native[LM_KT_Q4_K] = rows_q4_K;
  k->native[LM_KT_Q5_K] = rows_q5_K;
  k->native[LM_KT_Q6_K] = rows_q6_K;
  lm_set_tile (k, LM_KT_Q8_0, tile_q8_0, LM_TILE_TOKENS);
  lm_set_tile (k, LM_KT_Q4_K, tile_q4_K, LM_TILE_TOKENS);
  lm_set_batch_tile (k, LM_KT_Q4_K, tile_q4_K_batch, LM_TILE_TOKENS, 4, 4);
  lm_set_tile (k, LM_KT_Q5_K, tile_q5_K, LM_TILE_TOKENS);
  lm_set_tile (k, LM_KT_Q6_K, tile_q6_K, LM_TILE_TOKENS);
  lm_set_batch_tile (k, LM_KT_Q6_K, tile_q6_K_batch, LM_TILE_TOKENS, 8, 1);
  k->quantize_q8_0 = quantize_q8_0;
  k->quantize_q8_K = quantize_q8_K;
  lm_kernels_fill_avx2_q4q5 (k);
  lm_kernels_fill_avx2_k23 (k);
  lm_kernels_fill_avx2_f32act (k);
  lm_kernels_fill_avx2_attn (k);
}
