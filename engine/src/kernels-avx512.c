/* kernels-avx512.c: AVX-512 (F/BW/DQ/VL) + VNNI kernels (compiled per function with target attributes).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * K-quants: each 64-value group of a super-block is unpacked into one 512-bit
 * register laid out like its 64 activation bytes, multiplied with maddubs
 * (u8 x s8 -> int16 pairs) and accumulated against the sub-block scales with
 * VNNI dpwssd (int16 pairs x int16 -> int32), so a super-block's integer sum is
 * exact; super-blocks are combined in f32 in the orders of llama.cpp's x86
 * kernels (Q4_K: kernels-q4k-x86.h, its batch kernel in
 * kernels-avx512-q4k.c; Q6_K: its single-token product's 8 lanes here, its
 * batch kernel in kernels-q6k-batch-x86.h). */
#include <immintrin.h>
#include <string.h>

#include "kernels-private.h"
#include "quant-private.h"

#define TARGET __attribute__ ((target ("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

#include "kernels-x86.h"

/* ---- f32 activations for float weights ---- */

TARGET static inline __m512
load16_f32 (const float *p)
{
  return _mm512_loadu_ps (p);
}

TARGET static inline __m512
load16_f16 (const uint16_t *p)
{
  return _mm512_cvtph_ps (_mm256_loadu_si256 ((const __m256i *) p));
}

TARGET static inline __m512
load16_bf16 (const uint16_t *p)
{
  __m512i v = _mm512_cvtepu16_epi32 (_mm256_loadu_si256 ((const __m256i *) p));
  return _mm512_castsi512_ps (_mm512_slli_epi32 (v, 16));
}

#define DEFINE_FLOAT_DOT(name, elem_t, load16, to_f32)                         \
  TARGET static float name (const elem_t *w, const float *x, int64_t n)        \
  {                                                                            \
    __m512 acc0 = _mm512_setzero_ps (), acc1 = _mm512_setzero_ps ();           \
    __m512 acc2 = _mm512_setzero_ps (), acc3 = _mm512_setzero_ps ();           \
    int64_t i = 0;                                                             \
    for (; i + 64 <= n; i += 64)                                               \
      {                                                                        \
        acc0 = _mm512_fmadd_ps (load16 (w + i), _mm512_loadu_ps (x + i), acc0);           \
        acc1 = _mm512_fmadd_ps (load16 (w + i + 16), _mm512_loadu_ps (x + i + 16), acc1); \
        acc2 = _mm512_fmadd_ps (load16 (w + i + 32), _mm512_loadu_ps (x + i + 32), acc2); \
        acc3 = _mm512_fmadd_ps (load16 (w + i + 48), _mm512_loadu_ps (x + i + 48), acc3); \
      }                                                                        \
    for (; i + 16 <= n; i += 16)                                               \
      acc0 = _mm512_fmadd_ps (load16 (w + i), _mm512_loadu_ps (x + i), acc0);  \
    float sum = _mm512_reduce_add_ps (_mm512_add_ps (_mm512_add_ps (acc0, acc1), \
                                                     _mm512_add_ps (acc2, acc3))); \
    for (; i < n; i++)                                                         \
      sum += to_f32 (w[i]) * x[i];                                             \
    return sum;                                                                \
  }

DEFINE_FLOAT_DOT (dot_f32, float, load16_f32, same_f32)
DEFINE_FLOAT_DOT (dot_f16, uint16_t, load16_f16, lm_fp16_to_fp32)
DEFINE_FLOAT_DOT (dot_bf16, uint16_t, load16_bf16, lm_bf16_to_fp32)

/* ---- 8-bit activations ---- */

/* How far ahead of the block it multiplies a Q8_0 row kernel asks for
 * weights, in the stream of rows. Asked for this way, a line every other
 * block, the one-row kernel decoded the bench Q8_0 file at 2 threads 5 %
 * faster (median of 6 alternations) than with each row asked for whole 4
 * rows ahead (3.7 KiB at 896 wide). */
#define Q8_0_READ_AHEAD (16 * 1024)

TARGET static float
dot_q8_0 (const LmBlockQ8_0 *w, const LmBlockQ8_0 *a, int64_t nb)
{
  __m256 acc = _mm256_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    {
      if (b & 1)
        __builtin_prefetch ((const uint8_t *) (w + b) + Q8_0_READ_AHEAD, 0, 1);
      __m256i qw = _mm256_loadu_si256 ((const __m256i *) w[b].qs);
      __m256i qa = _mm256_loadu_si256 ((const __m256i *) a[b].qs);
      /* |w| as unsigned (-128 -> 128), its sign moved onto the activation */
      __m256i dp = _mm256_dpbusd_epi32 (_mm256_setzero_si256 (), _mm256_abs_epi8 (qw),
                                        _mm256_sign_epi8 (qa, qw));
      acc = _mm256_fmadd_ps (_mm256_set1_ps (fp16 (w[b].d) * fp16 (a[b].d)),
                             _mm256_cvtepi32_ps (dp), acc);
    }
  return hsum256_ps (acc);
}

/* int16 lane patterns: lanes 0-15 take scale 2g, lanes 16-31 scale 2g+1. */
TARGET static inline __m512i
pair_index (int g)
{
  return _mm512_inserti64x4 (_mm512_castsi256_si512 (_mm256_set1_epi16 ((short) (2 * g))),
                             _mm256_set1_epi16 ((short) (2 * g + 1)), 1);
}

/* Shift counts per 16-bit lane: 0 in the low 256 bits, 4 in the high ones. */
TARGET static inline __m512i
nibble_shifts (void)
{
  return _mm512_inserti64x4 (_mm512_setzero_si512 (), _mm256_set1_epi16 (4), 1);
}

/* Group g (values 64g .. 64g+63) of a Q4_K/Q5_K block as 64 bytes: low
 * nibbles of qs[32g..] then their high nibbles. */
TARGET static inline __m512i
k4_group (const uint8_t *qs, int g, __m512i shifts)
{
  __m512i q = _mm512_broadcast_i64x4 (_mm256_loadu_si256 ((const __m256i *) (qs + 32 * g)));
  return _mm512_and_si512 (_mm512_srlv_epi16 (q, shifts), _mm512_set1_epi8 (0x0F));
}

TARGET static inline __m512i
k4_scales16 (const uint8_t sm[16])
{
  return _mm512_cvtepu8_epi16 (_mm256_castsi128_si256 (_mm_loadl_epi64 ((const __m128i *) sm)));
}

/* A Q4_K/Q5_K super-block unpacked once for any number of activation rows:
 * group g's 64 values laid out like activation bytes 64g..64g+63, the int16
 * scale of each value pair, and the mins as int16 pairs for the bsums. */
typedef struct {
  __m512i q[4];
  __m512i scale[4];
  __m256i mins;
  float d, dmin;
} K4Block;

TARGET static inline __attribute__ ((always_inline)) void
k4_unpack (const uint8_t *scales, const uint8_t *qs, const uint8_t *qh, uint16_t d,
           uint16_t dmin, K4Block *u)
{
  const __m512i shifts = nibble_shifts (), sixteen = _mm512_set1_epi8 (16);
  uint8_t sm[16];
  lm_k4_unpack_scales (scales, sm);
  __m512i sc16 = k4_scales16 (sm);
  __m512i high = qh ? _mm512_broadcast_i64x4 (_mm256_loadu_si256 ((const __m256i *) qh))
                    : _mm512_setzero_si512 ();
  #pragma GCC unroll 4
  for (int g = 0; g < 4; g++)
    {
      __m512i q = k4_group (qs, g, shifts);
      if (qh)
        {
          /* fifth bit: qh bit 2g for the low nibbles, 2g+1 for the high ones */
          __m512i bit = _mm512_inserti64x4 (_mm512_set1_epi8 ((char) (1 << (2 * g))),
                                            _mm256_set1_epi8 ((char) (2 << (2 * g))), 1);
          q = _mm512_mask_add_epi8 (q, _mm512_test_epi8_mask (high, bit), q, sixteen);
        }
      u->q[g] = q;
      u->scale[g] = _mm512_permutexvar_epi16 (pair_index (g), sc16);
    }
  __m128i m = _mm_loadl_epi64 ((const __m128i *) (sm + 8));
  u->mins = _mm256_cvtepu8_epi16 (_mm_unpacklo_epi8 (m, m));
  u->d = fp16 (d);
  u->dmin = fp16 (dmin);
}

/* Adds the block's product with one Q8_K block to that row's accumulators. */
TARGET static inline __attribute__ ((always_inline)) void
k4_accumulate (const K4Block *u, const LmBlockQ8_K *a, __m512 *acc, __m256 *acc_min)
{
  __m512i sumi = _mm512_setzero_si512 ();
  #pragma GCC unroll 4
  for (int g = 0; g < 4; g++)
    sumi = _mm512_dpwssd_epi32 (sumi, _mm512_maddubs_epi16 (u->q[g], _mm512_loadu_si512 (a->qs + 64 * g)),
                                u->scale[g]);
  __m256i mins = _mm256_madd_epi16 (_mm256_loadu_si256 ((const __m256i *) a->bsums), u->mins);
  *acc = _mm512_fmadd_ps (_mm512_set1_ps (a->d * u->d), _mm512_cvtepi32_ps (sumi), *acc);
  *acc_min = _mm256_fmadd_ps (_mm256_set1_ps (a->d * u->dmin), _mm256_cvtepi32_ps (mins), *acc_min);
}

TARGET static inline float
k4_result (__m512 acc, __m256 acc_min)
{
  return _mm512_reduce_add_ps (acc) - hsum256_ps (acc_min);
}

/* A Q6_K super-block unpacked once: values (q+32) laid out like activation
 * bytes 64k..64k+63 and the int16 scale of each value pair. */
typedef struct {
  __m512i q[4];
  __m512i scale[4];
  __m256i sc16;
  float d;
} Q6Block;

/* int16 lanes in 4 runs of 8: scales 4k .. 4k+3 of the 16 of a Q6_K block. */
TARGET static inline __m512i
q6_scale_runs (__m512i sc16, int k)
{
  const __m512i idx = _mm512_set_epi16 (3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2,
                                        1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_permutexvar_epi16 (_mm512_add_epi16 (idx, _mm512_set1_epi16 ((short) (4 * k))), sc16);
}

TARGET static inline __attribute__ ((always_inline)) void
q6_unpack (const LmBlockQ6_K *w, Q6Block *u)
{
  const __m512i low4 = _mm512_set1_epi8 (0x0F), bits45 = _mm512_set1_epi8 (0x30);
  /* per 256-bit half: how far qh moves its 2-bit field into bits 4-5 */
  const __m512i shl_v0 = _mm512_inserti64x4 (_mm512_set1_epi16 (4), _mm256_set1_epi16 (2), 1);
  const __m512i shr_v1 = _mm512_inserti64x4 (_mm512_setzero_si512 (), _mm256_set1_epi16 (2), 1);
  u->sc16 = _mm256_cvtepi8_epi16 (_mm_loadu_si128 ((const __m128i *) w->scales));
  __m512i sc16 = _mm512_castsi256_si512 (u->sc16);
  #pragma GCC unroll 2
  for (int half = 0; half < 2; half++)
    {
      __m512i ql = _mm512_loadu_si512 (w->ql + 64 * half);
      __m512i qh = _mm512_broadcast_i64x4 (_mm256_loadu_si256 ((const __m256i *) (w->qh + 32 * half)));
      u->q[2 * half] = _mm512_or_si512 (_mm512_and_si512 (ql, low4),
                                        _mm512_and_si512 (_mm512_sllv_epi16 (qh, shl_v0), bits45));
      u->q[2 * half + 1] = _mm512_or_si512 (_mm512_and_si512 (_mm512_srli_epi16 (ql, 4), low4),
                                            _mm512_and_si512 (_mm512_srlv_epi16 (qh, shr_v1), bits45));
      u->scale[2 * half] = q6_scale_runs (sc16, 2 * half);
      u->scale[2 * half + 1] = q6_scale_runs (sc16, 2 * half + 1);
    }
  u->d = fp16 (w->d);
}

/* The block's product with one Q8_K block in the 8 int32 lanes of ggml's x86
 * Q6_K product: lane l takes the values whose offset in their 32-value
 * group is 4l .. 4l+3 (the two 256-bit halves of the 512-bit sums added as
 * integers) less 32 times the offset of sub-blocks 2l and 2l+1. */
TARGET static inline __attribute__ ((always_inline)) __m256i
q6_lanes (const Q6Block *u, const LmBlockQ8_K *a)
{
  __m512i sumi = _mm512_setzero_si512 ();
  #pragma GCC unroll 4
  for (int k = 0; k < 4; k++)
    sumi = _mm512_dpwssd_epi32 (sumi, _mm512_maddubs_epi16 (u->q[k], _mm512_loadu_si512 (a->qs + 64 * k)),
                                u->scale[k]);
  __m256i lanes = _mm256_add_epi32 (_mm512_castsi512_si256 (sumi), _mm512_extracti64x4_epi64 (sumi, 1));
  /* stored values are q+32: remove 32 * sum_s sc_s * bsums_s */
  __m256i offset = _mm256_madd_epi16 (_mm256_loadu_si256 ((const __m256i *) a->bsums), u->sc16);
  return _mm256_sub_epi32 (lanes, _mm256_slli_epi32 (offset, 5));
}

/* Adds the block's lanes to that row's accumulator as ggml's single-token
 * product does: fma (d_a * d_w, lanes, acc). */
TARGET static inline __attribute__ ((always_inline)) void
q6_accumulate (const Q6Block *u, const LmBlockQ8_K *a, __m256 *acc)
{
  *acc = _mm256_fmadd_ps (_mm256_set1_ps (a->d * u->d), _mm256_cvtepi32_ps (q6_lanes (u, a)), *acc);
}

TARGET static float
dot_q5_K (const LmBlockQ5_K *w, const LmBlockQ8_K *a, int64_t nb)
{
  __m512 acc = _mm512_setzero_ps ();
  __m256 acc_min = _mm256_setzero_ps ();
  K4Block u;
  for (int64_t b = 0; b < nb; b++)
    {
      k4_unpack (w[b].scales, w[b].qs, w[b].qh, w[b].d, w[b].dmin, &u);
      k4_accumulate (&u, &a[b], &acc, &acc_min);
    }
  return k4_result (acc, acc_min);
}

/* ---- Q4_K in the float order of ggml's repacked kernels ---- */

TARGET static inline __attribute__ ((always_inline)) void
k4_unpack_q4 (const LmBlockQ4_K *w, K4Block *u)
{
  k4_unpack (w->scales, w->qs, NULL, w->d, w->dmin, u);
}

/* The sub-block sum (the 512-bit sums' halves added) and the mins times the
 * activation sums, as 8 int32 lanes each. */
TARGET static inline __attribute__ ((always_inline)) void
k4_integers (const K4Block *u, const LmBlockQ8_K *a, __m256i *sumi, __m256i *mins)
{
  __m512i s = _mm512_setzero_si512 ();
  #pragma GCC unroll 4
  for (int g = 0; g < 4; g++)
    s = _mm512_dpwssd_epi32 (s, _mm512_maddubs_epi16 (u->q[g], _mm512_loadu_si512 (a->qs + 64 * g)),
                             u->scale[g]);
  *sumi = _mm256_add_epi32 (_mm512_castsi512_si256 (s), _mm512_extracti64x4_epi64 (s, 1));
  *mins = _mm256_madd_epi16 (_mm256_loadu_si256 ((const __m256i *) a->bsums), u->mins);
}

/* the batch kernel: kernels-avx512-q4k.c */
#define Q4K_BATCH_ELSEWHERE
#include "kernels-q4k-x86.h"
#include "kernels-q6k-batch-x86.h"

/* ---- tiles of LM_TILE_TOKENS activation rows: each weight block is unpacked
 * once for all of them; per row the same operations as the dots above, so
 * the results are identical bit for bit ---- */

#define DEFINE_K4_TILE(name, wtype, qh_of)                                              \
  TARGET static inline __attribute__ ((always_inline)) void                             \
  name##_body (const void *W, size_t row_bytes, int64_t n_rows, const void *act,        \
               size_t act_stride, int64_t n, float *Y, size_t y_stride, const int T)    \
  {                                                                                     \
    for (int64_t r = 0; r < n_rows; r++)                                                \
      {                                                                                 \
        const wtype *w = (const wtype *) ((const uint8_t *) W + r * row_bytes);         \
        __m512 acc[LM_TILE_TOKENS_MAX];                                                 \
        __m256 acc_min[LM_TILE_TOKENS_MAX];                                             \
        for (int t = 0; t < T; t++)                                                     \
          {                                                                             \
            acc[t] = _mm512_setzero_ps ();                                              \
            acc_min[t] = _mm256_setzero_ps ();                                          \
          }                                                                             \
        K4Block u;                                                                      \
        for (int64_t b = 0; b < n / LM_QK_K; b++)                                       \
          {                                                                             \
            k4_unpack (w[b].scales, w[b].qs, qh_of (w[b]), w[b].d, w[b].dmin, &u);      \
            for (int t = 0; t < T; t++)                                                 \
              k4_accumulate (&u, (const LmBlockQ8_K *) ((const uint8_t *) act           \
                                                        + t * act_stride) + b,          \
                             &acc[t], &acc_min[t]);                                     \
          }                                                                             \
        for (int t = 0; t < T; t++)                                                     \
          Y[t * y_stride + (size_t) r] = k4_result (acc[t], acc_min[t]);                \
      }                                                                                 \
  }                                                                                     \
  LM_DEFINE_WIDE_TILE (TARGET, name, name##_body)

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
      #pragma GCC unroll 4
      for (int t = 0; t < T; t++)
        acc[t] = _mm256_setzero_ps ();
      Q6Block u;
      for (int64_t b = 0; b < n / LM_QK_K; b++)
        {
          q6_unpack (&w[b], &u);
          #pragma GCC unroll 4
          for (int t = 0; t < T; t++)
            q6_accumulate (&u, (const LmBlockQ8_K *) ((const uint8_t *) act + t * act_stride) + b,
                           &acc[t]);
        }
      #pragma GCC unroll 4
      for (int t = 0; t < T; t++)
        Y[t * y_stride + (size_t) r] = hsum256_ps (acc[t]);
    }
}

LM_DEFINE_TILE (TARGET, tile_q6_K, tile_q6_K_body)

/* Q8_0 rows against @T tokens, two tokens to a 512-bit register (a lone last
 * token in both halves, its high half unused). Each token's eight lanes get
 * dot_q8_0's numbers: the same int32 lane sums, the same scale product, the
 * same fmadd chain, the same final sum, so every result is dot_q8_0's bit
 * for bit. What a token pair needs is prepared once per chunk of blocks for
 * all rows of the tile (its quants side by side, its scales, and the offset
 * below), so a (row, pair, block) takes four vector operations: the weight
 * quants enter dpbusd as w + 128 (unsigned), made once per weight block for
 * every pair, and the dpbusd starts from -128 times each lane's activation
 * sum, which leaves the exact sum of w * a (instead of moving w's sign onto
 * each pair's activations). With the scale conversions out of the loop as
 * well, a 64-token prompt of the bench Q8_0 file ran 1.13-1.15x as fast on
 * one thread and 1.04-1.10x on two (Zen 5). */
#define Q8_TILE_CHUNK 32   /* blocks prepared at once: 24 KiB for 4 pairs */
#define Q8_TILE_ROWS 16    /* rows whose accumulators wait between chunks */

typedef struct {
  __m512i qs;     /* the pair's quants, token 2p in the low half */
  __m512i bias;   /* -128 * the sum of each lane's four quants */
  __m512 d;       /* each token's scale, in its half */
} Q8Pair;

TARGET static inline __attribute__ ((always_inline)) void
prepare_q8_pairs (const void *act, size_t act_stride, int T, int pairs, int64_t b0, int len,
                  Q8Pair prep[][Q8_TILE_CHUNK])
{
  const __m512i offset = _mm512_set1_epi8 ((char) 0x80);
  for (int p = 0; p < pairs; p++)
    for (int i = 0; i < len; i++)
      {
        const LmBlockQ8_0 *a0 = (const LmBlockQ8_0 *) ((const uint8_t *) act
                                                       + 2 * p * act_stride) + b0 + i;
        const LmBlockQ8_0 *a1 = 2 * p + 1 < T
                                ? (const LmBlockQ8_0 *) ((const uint8_t *) a0 + act_stride) : a0;
        __m512i qs = _mm512_inserti64x4 (
            _mm512_castsi256_si512 (_mm256_loadu_si256 ((const __m256i *) a0->qs)),
            _mm256_loadu_si256 ((const __m256i *) a1->qs), 1);
        prep[p][i].qs = qs;
        prep[p][i].bias = _mm512_sub_epi32 (_mm512_setzero_si512 (),
                                            _mm512_dpbusd_epi32 (_mm512_setzero_si512 (), offset, qs));
        prep[p][i].d = _mm512_insertf32x8 (_mm512_set1_ps (fp16 (a0->d)),
                                           _mm256_set1_ps (fp16 (a1->d)), 1);
      }
}

/* Row @w's blocks [b0, b0 + len) into the pairs' accumulators. */
TARGET static inline __attribute__ ((always_inline)) void
q8_tile_row_chunk (const LmBlockQ8_0 *w, int64_t b0, int len, Q8Pair prep[][Q8_TILE_CHUNK],
                   int pairs, __m512 *acc)
{
  const __m512i offset = _mm512_set1_epi8 ((char) 0x80);
  for (int i = 0; i < len; i++)
    {
      const LmBlockQ8_0 *b = w + b0 + i;
      __m512i w_biased = _mm512_xor_si512 (
          _mm512_broadcast_i64x4 (_mm256_loadu_si256 ((const __m256i *) b->qs)), offset);
      __m512 dw = _mm512_set1_ps (fp16 (b->d));
      #pragma GCC unroll 4
      for (int p = 0; p < pairs; p++)
        {
          __m512i dp = _mm512_dpbusd_epi32 (prep[p][i].bias, w_biased, prep[p][i].qs);
          acc[p] = _mm512_fmadd_ps (_mm512_mul_ps (dw, prep[p][i].d), _mm512_cvtepi32_ps (dp),
                                    acc[p]);
        }
    }
}

TARGET static inline __attribute__ ((always_inline)) void
tile_q8_0_body (const void *W, size_t row_bytes, int64_t n_rows, const void *act,
                size_t act_stride, int64_t n, float *Y, size_t y_stride, const int T)
{
  const int pairs = (T + 1) / 2;
  const int64_t nb = n / LM_QK8_0;
  Q8Pair prep[LM_TILE_TOKENS_MAX / 2][Q8_TILE_CHUNK];
  __m512 waiting[Q8_TILE_ROWS][LM_TILE_TOKENS_MAX / 2];

  for (int64_t r0 = 0; r0 < n_rows; r0 += Q8_TILE_ROWS)
    {
      const int64_t rows = n_rows - r0 < Q8_TILE_ROWS ? n_rows - r0 : Q8_TILE_ROWS;
      for (int64_t b0 = 0; b0 < nb; b0 += Q8_TILE_CHUNK)
        {
          const int len = nb - b0 < Q8_TILE_CHUNK ? (int) (nb - b0) : Q8_TILE_CHUNK;
          prepare_q8_pairs (act, act_stride, T, pairs, b0, len, prep);
          for (int64_t j = 0; j < rows; j++)
            {
              const int64_t r = r0 + j;
              const LmBlockQ8_0 *w = (const LmBlockQ8_0 *) ((const uint8_t *) W + r * row_bytes);
              __m512 acc[LM_TILE_TOKENS_MAX / 2];
              /* the first chunk reads the rows from memory: ask for later
               * rows as the row kernel does (in cache for the other chunks) */
              if (b0 == 0)
                lm_prefetch_row ((const uint8_t *) W + (r + LM_PREFETCH_ROWS) * row_bytes, row_bytes);
              #pragma GCC unroll 4
              for (int p = 0; p < pairs; p++)
                acc[p] = b0 == 0 ? _mm512_setzero_ps () : waiting[j][p];
              q8_tile_row_chunk (w, b0, len, prep, pairs, acc);
              #pragma GCC unroll 4
              for (int p = 0; p < pairs; p++)
                waiting[j][p] = acc[p];
            }
        }
      for (int64_t j = 0; j < rows; j++)
        for (int t = 0; t < T; t++)
          {
            __m512 acc = waiting[j][t / 2];
            __m256 half = t % 2 ? _mm512_extractf32x8_ps (acc, 1) : _mm512_castps512_ps256 (acc);
            Y[t * y_stride + (size_t) (r0 + j)] = hsum256_ps (half);
          }
    }
}

/* Every width from 2 to LM_TILE_TOKENS_MAX in one pass. */
TARGET static void
tile_q8_0 (const void *W, size_t row_bytes, int64_t n_rows, const void *act, size_t act_stride,
           int64_t n, int n_tok, float *Y, size_t y_stride)
{
  switch (n_tok)
    {
    case 2: tile_q8_0_body (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride, 2); break;
    case 3: tile_q8_0_body (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride, 3); break;
    case 4: tile_q8_0_body (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride, 4); break;
    case 5: tile_q8_0_body (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride, 5); break;
    case 6: tile_q8_0_body (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride, 6); break;
    case 7: tile_q8_0_body (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride, 7); break;
    default: tile_q8_0_body (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride, 8); break;
    }
}

/* ---- activation quantisation (bit-identical to the scalar reference) ---- */

TARGET static void
quantize_q8_0 (const float *x, void *out, int64_t n)
{
  LmBlockQ8_0 *y = out;
  for (int64_t b = 0; b < n / LM_QK8_0; b++)
    {
      __m512 v0 = _mm512_loadu_ps (x + 32 * b), v1 = _mm512_loadu_ps (x + 32 * b + 16);
      float amax = _mm512_reduce_max_ps (_mm512_max_ps (_mm512_abs_ps (v0), _mm512_abs_ps (v1)));
      y[b].d = lm_fp32_to_fp16 (amax / 127.0f);
      __m512 id = _mm512_set1_ps (amax != 0.0f ? 127.0f / amax : 0.0f);
      __m512i q0 = _mm512_cvt_roundps_epi32 (_mm512_mul_ps (v0, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      __m512i q1 = _mm512_cvt_roundps_epi32 (_mm512_mul_ps (v1, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      _mm_storeu_si128 ((__m128i *) y[b].qs, _mm512_cvtsepi32_epi8 (q0));
      _mm_storeu_si128 ((__m128i *) (y[b].qs + 16), _mm512_cvtsepi32_epi8 (q1));
    }
}

TARGET static void
quantize_q8_K (const float *x, void *out, int64_t n)
{
  LmBlockQ8_K *y = out;
  for (int64_t b = 0; b < n / LM_QK_K; b++)
    {
      const float *xb = x + LM_QK_K * b;
      __m512 amax_v = _mm512_setzero_ps ();
      for (int i = 0; i < LM_QK_K; i += 16)
        amax_v = _mm512_max_ps (amax_v, _mm512_abs_ps (_mm512_loadu_ps (xb + i)));
      float amax = _mm512_reduce_max_ps (amax_v);
      if (amax == 0.0f)
        {
          memset (&y[b], 0, sizeof y[b]);
          continue;
        }
      /* the signed value of the first element reaching amax */
      float max = 0.0f;
      for (int i = 0; i < LM_QK_K; i += 16)
        {
          __mmask16 hit = _mm512_cmp_ps_mask (_mm512_abs_ps (_mm512_loadu_ps (xb + i)),
                                              _mm512_set1_ps (amax), _CMP_EQ_OQ);
          if (hit)
            {
              max = xb[i + __builtin_ctz (hit)];
              break;
            }
        }
      float iscale = -127.0f / max;
      __m512 s = _mm512_set1_ps (iscale);
      for (int i = 0; i < LM_QK_K; i += 16)
        {
          __m512i q = _mm512_cvt_roundps_epi32 (_mm512_mul_ps (_mm512_loadu_ps (xb + i), s),
                                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
          q = _mm512_min_epi32 (q, _mm512_set1_epi32 (127));
          _mm_storeu_si128 ((__m128i *) (y[b].qs + i), _mm512_cvtsepi32_epi8 (q));
          y[b].bsums[i / 16] = (int16_t) _mm512_reduce_add_epi32 (q);
        }
      y[b].d = 1.0f / iscale;
    }
}

/* ---- row loops ---- */


LM_DEFINE_ROWS (TARGET, rows_f32, dot_f32, float, float, 1)
LM_DEFINE_ROWS (TARGET, rows_f16, dot_f16, uint16_t, float, 1)
LM_DEFINE_ROWS (TARGET, rows_bf16, dot_bf16, uint16_t, float, 1)
/* Rows one after another; dot_q8_0 reads ahead within and across them. */
TARGET static void
rows_q8_0 (const void *W, size_t row_bytes, int64_t n_rows, const void *act, int64_t n, float *y)
{
  for (int64_t r = 0; r < n_rows; r++)
    y[r] = dot_q8_0 ((const LmBlockQ8_0 *) ((const uint8_t *) W + r * row_bytes), act,
                     n / LM_QK8_0);
}

/* Q8_0 rows two to a 512-bit register against one token, for a thread
 * alone: each row's eight lanes get dot_q8_0's operations (the same int32
 * lane sums, scale product, fmadd chain and final sum), so every result is
 * dot_q8_0's bit for bit. A row alone is one fmadd chain, bound by its
 * latency at 34 bytes per fmadd (about 38 GB/s from L2 on Zen 5); a pair
 * moves twice the bytes per fmadd (44-47 GB/s) and loads each activation
 * block once for both rows. Both rows' weights are asked for a fixed
 * distance ahead block by block, which keeps the stream even.
 *   On one thread it decodes the bench Q8_0 file 8-13 % faster than
 * rows_q8_0 and the real model (whose output head is Q8_0) 2-8 %; with a
 * second thread streaming beside it, it was 4-14 % slower in every
 * alternation (a row kernel's chain latency leaves the core's units to
 * the other thread where the two vCPUs share a core), so products spread
 * over threads keep rows_q8_0. */
TARGET static inline __attribute__ ((always_inline)) void
q8_0_row_pair (const uint8_t *W, size_t row_bytes, int64_t r, const LmBlockQ8_0 *a, int64_t nb,
               float *y)
{
  const LmBlockQ8_0 *lo = (const LmBlockQ8_0 *) (W + r * row_bytes);
  const LmBlockQ8_0 *hi = (const LmBlockQ8_0 *) (W + (r + 1) * row_bytes);
  __m512 acc = _mm512_setzero_ps ();

  for (int64_t b = 0; b < nb; b++)
    {
      __builtin_prefetch ((const uint8_t *) (lo + b) + Q8_0_READ_AHEAD, 0, 1);
      __builtin_prefetch ((const uint8_t *) (hi + b) + Q8_0_READ_AHEAD, 0, 1);
      __m512i qa = _mm512_broadcast_i64x4 (_mm256_loadu_si256 ((const __m256i *) a[b].qs));
      __m512i qw = _mm512_inserti64x4 (
          _mm512_castsi256_si512 (_mm256_loadu_si256 ((const __m256i *) lo[b].qs)),
          _mm256_loadu_si256 ((const __m256i *) hi[b].qs), 1);
      /* where w < 0 the activation is negated, as dot_q8_0's sign does (a
       * zero w multiplies its activation by zero whatever its sign) */
      __m512i signed_a = _mm512_mask_sub_epi8 (qa, _mm512_movepi8_mask (qw),
                                               _mm512_setzero_si512 (), qa);
      __m512i dp = _mm512_dpbusd_epi32 (_mm512_setzero_si512 (), _mm512_abs_epi8 (qw), signed_a);
      __m512 dw = _mm512_insertf32x8 (_mm512_set1_ps (fp16 (lo[b].d)),
                                      _mm256_set1_ps (fp16 (hi[b].d)), 1);
      acc = _mm512_fmadd_ps (_mm512_mul_ps (dw, _mm512_set1_ps (fp16 (a[b].d))),
                             _mm512_cvtepi32_ps (dp), acc);
    }
  y[r] = hsum256_ps (_mm512_castps512_ps256 (acc));
  y[r + 1] = hsum256_ps (_mm512_extractf32x8_ps (acc, 1));
}

TARGET static void
rows_q8_0_alone (const void *W, size_t row_bytes, int64_t n_rows, const void *act, int64_t n,
                 float *y)
{
  const uint8_t *w = W;
  const int64_t nb = n / LM_QK8_0;
  int64_t r = 0;

  for (; r + 2 <= n_rows; r += 2)
    q8_0_row_pair (w, row_bytes, r, act, nb, y);
  if (r < n_rows)
    y[r] = dot_q8_0 ((const LmBlockQ8_0 *) (w + r * row_bytes), act, nb);
}
LM_DEFINE_ROWS (TARGET, rows_q5_K, dot_q5_K, LmBlockQ5_K, LmBlockQ8_K, LM_QK_K)

/* Q6_K rows, one fma chain each; the row LM_PREFETCH_ROWS ahead is asked
 * for block by block rather than at once per row: a 4864-wide row is 62
 * lines, and those bursts left the stream at 24-29 GB/s where the same rows
 * hot in L2 run at 44.8 (Zen 5, one thread; block by block: 36 GB/s). */
TARGET static void
rows_q6_K (const void *W, size_t row_bytes, int64_t n_rows, const void *act, int64_t n, float *y)
{
  const LmBlockQ8_K *a = act;

  for (int64_t r = 0; r < n_rows; r++)
    {
      const LmBlockQ6_K *w = (const LmBlockQ6_K *) ((const uint8_t *) W + r * row_bytes);
      __m256 acc = _mm256_setzero_ps ();
      Q6Block u;
      for (int64_t b = 0; b < n / LM_QK_K; b++)
        {
          lm_prefetch_row ((const uint8_t *) &w[b] + LM_PREFETCH_ROWS * row_bytes, sizeof w[b]);
          q6_unpack (&w[b], &u);
          q6_accumulate (&u, &a[b], &acc);
        }
      y[r] = hsum256_ps (acc);
    }
}

void
lm_kernels_fill_avx512 (LmKernels *k)
{
  k->isa = LM_ISA_AVX512;
  lm_set_f32act (k, LM_KT_F32, rows_f32, NULL);
  lm_set_f32act (k, LM_KT_F16, rows_f16, NULL);
  lm_set_f32act (k, LM_KT_BF16, rows_bf16, NULL);
  k->native[LM_KT_Q8_0] = rows_q8_0;
  k->native_alone[LM_KT_Q8_0] = rows_q8_0_alone;
  k->native[LM_KT_Q4_K] = rows_q4_K;
  k->native[LM_KT_Q5_K] = rows_q5_K;
  k->native[LM_KT_Q6_K] = rows_q6_K;
  lm_set_tile (k, LM_KT_Q8_0, tile_q8_0, LM_TILE_TOKENS_MAX);
  lm_set_tile (k, LM_KT_Q4_K, tile_q4_K, LM_TILE_TOKENS_MAX);
  lm_kernels_fill_avx512_q4k (k);
  lm_set_tile (k, LM_KT_Q5_K, tile_q5_K, LM_TILE_TOKENS_MAX);
  lm_set_tile (k, LM_KT_Q6_K, tile_q6_K, LM_TILE_TOKENS);
  lm_set_batch_tile (k, LM_KT_Q6_K, tile_q6_K_batch, LM_TILE_TOKENS_MAX, 8, 1);
  k->quantize_q8_0 = quantize_q8_0;
  k->quantize_q8_K = quantize_q8_K;
  lm_kernels_fill_avx512_q4q5 (k);
  lm_kernels_fill_avx512_f32act (k);
  lm_kernels_fill_avx512_attn (k);
}
