/* kernels-avx512-q4k.c: the Q4_K batch kernel on AVX-512 VNNI, with the
 * tokens in the vector lanes.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The float steps are those of kernels-q4k-x86.h's batch kernel (ggml's
 * repacked Q4_K batch order): per (row, token) and super-block, four steps
 * of two sub-blocks,
 *   acc     = fma (sum over the pair of sc_j * (quants . activations), d_w * d_a, acc)
 *   acc_min = fma (sum over the pair of m_j * activation sum_j, dmin_w * d_a, acc_min)
 * and the result acc - acc_min. Only how the exact integer sums are formed
 * differs. ggml repacks the weights of 8 rows so that the lanes are rows;
 * here the weights keep their file layout (shared with the GPU upload and
 * the other kernels, no copy at load) and the activations of the 8 tokens
 * are interleaved instead, a few super-blocks at a time on the stack: a
 * 512-bit vector holds 8 bytes of each token, and 8 bytes of one weight row
 * broadcast against it in a VNNI dot product leave each token's partial
 * sums in its own two lanes, so no horizontal sums are needed. Groups of 4
 * tokens (routed experts see few tokens each) run the same in 256-bit
 * vectors. The interleaving costs about a tenth of the products it feeds
 * (one chunk serves ROW_GROUP rows). */
#include <immintrin.h>

#include "kernels-private.h"
#include "quant-private.h"

#define TARGET __attribute__ ((target ("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

#include "kernels-x86.h"

/* Super-blocks of activations interleaved at once (18 KiB on the stack). */
#define CHUNK_BLOCKS 8
/* Rows run against one interleaved chunk before the next is made. */
#define ROW_GROUP 16
#define TOKENS 8

/* The activations of 8 tokens for CHUNK_BLOCKS super-blocks. */
typedef struct {
  /* qs[b][k]: byte 8t + i is value 8k + i of token t */
  _Alignas (64) int8_t qs[CHUNK_BLOCKS][LM_QK_K / 8][64];
  /* sums[b][g]: int16 lanes 2t, 2t+1 the sums of token t's values in
   * sub-blocks 2g and 2g+1 */
  _Alignas (32) int16_t sums[CHUNK_BLOCKS][4][2 * TOKENS];
  _Alignas (32) float d[CHUNK_BLOCKS][TOKENS];
} Interleaved;

/* Transposes 8 rows of 8 qwords: out[k] qword t = in[t] qword k. */
TARGET static inline __attribute__ ((always_inline)) void
transpose_qwords (const __m512i in[8], __m512i out[8])
{
  __m512i p[8], q[8];
  for (int i = 0; i < 4; i++)
    {
      /* 128-bit lane l: in[2i] and in[2i+1]'s qwords 2l (lo) or 2l+1 (hi) */
      p[2 * i] = _mm512_unpacklo_epi64 (in[2 * i], in[2 * i + 1]);
      p[2 * i + 1] = _mm512_unpackhi_epi64 (in[2 * i], in[2 * i + 1]);
    }
  /* q[4i + h]: 128-bit lanes (rows 4i, 4i+1 of qword h), (the same of
   * qword 4 + h), (rows 4i+2, 4i+3 of qword h), (the same of qword 4 + h);
   * q[4i + 2 + h]: the same for qwords 2 + h and 6 + h */
  for (int i = 0; i < 2; i++)
    for (int h = 0; h < 2; h++)
      {
        q[4 * i + h] = _mm512_shuffle_i64x2 (p[4 * i + h], p[4 * i + 2 + h], 0x88);
        q[4 * i + 2 + h] = _mm512_shuffle_i64x2 (p[4 * i + h], p[4 * i + 2 + h], 0xdd);
      }
  /* rows 0-3 (q[0..3]) and 4-7 (q[4..7]) of each qword side by side */
  for (int e = 0; e < 2; e++)
    for (int h = 0; h < 2; h++)
      {
        __m512i lo = q[2 * e + h], hi = q[4 + 2 * e + h];
        out[2 * e + h] = _mm512_shuffle_i64x2 (lo, hi, 0x88);
        out[4 + 2 * e + h] = _mm512_shuffle_i64x2 (lo, hi, 0xdd);
      }
}

/* Token t's sub-block activation sums as int16 pairs (sub-blocks 2g, 2g+1
 * in dword g of the low 128 bits). */
TARGET static inline __m128i
pair_sums (const LmBlockQ8_K *a)
{
  __m256i s = _mm256_madd_epi16 (_mm256_loadu_si256 ((const __m256i *) a->bsums),
                                 _mm256_set1_epi16 (1));
  s = _mm256_packs_epi32 (s, s);
  return _mm256_castsi256_si128 (_mm256_permutevar8x32_epi32 (s, _mm256_setr_epi32 (0, 1, 4, 5, 0, 1, 4, 5)));
}

/* Interleaves super-blocks [b0, b0 + nb) of the tokens tok[0..7] (a zero
 * block for the tokens past the product's). */
TARGET static void
interleave (const LmBlockQ8_K *const tok[TOKENS], const size_t step[TOKENS], int64_t b0, int nb,
            Interleaved *x)
{
  for (int b = 0; b < nb; b++)
    {
      const LmBlockQ8_K *a[TOKENS];
      for (int t = 0; t < TOKENS; t++)
        a[t] = tok[t] + (size_t) (b0 + b) * step[t];
      for (int j = 0; j < 4; j++)
        {
          __m512i in[TOKENS], out[TOKENS];
          for (int t = 0; t < TOKENS; t++)
            in[t] = _mm512_loadu_si512 (a[t]->qs + 64 * j);
          transpose_qwords (in, out);
          for (int k = 0; k < 8; k++)
            _mm512_store_si512 (x->qs[b][8 * j + k], out[k]);
        }
      __m256i s[4];
      for (int t = 0; t < 4; t++)
        s[t] = _mm256_inserti128_si256 (_mm256_castsi128_si256 (pair_sums (a[t])), pair_sums (a[t + 4]), 1);
      /* per 128-bit half (tokens t, t + 4): dword g of each token -> group g's lanes */
      __m256i lo01 = _mm256_unpacklo_epi32 (s[0], s[1]), hi01 = _mm256_unpackhi_epi32 (s[0], s[1]);
      __m256i lo23 = _mm256_unpacklo_epi32 (s[2], s[3]), hi23 = _mm256_unpackhi_epi32 (s[2], s[3]);
      __m256i g[4] = { _mm256_unpacklo_epi64 (lo01, lo23), _mm256_unpackhi_epi64 (lo01, lo23),
                       _mm256_unpacklo_epi64 (hi01, hi23), _mm256_unpackhi_epi64 (hi01, hi23) };
      /* lanes now tokens 0-3 | 4-7 */
      for (int k = 0; k < 4; k++)
        _mm256_store_si256 ((__m256i *) x->sums[b][k], g[k]);
      for (int t = 0; t < TOKENS; t++)
        x->d[b][t] = a[t]->d;
    }
}

/* The same for 4 tokens (tok[0..3]), in the first half of each row of x:
 * qs[b][k] bytes 8t + i value 8k + i of token t, sums[b][g] int16 lanes
 * 2t, 2t+1, d[b][t]. */
TARGET static void
interleave4 (const LmBlockQ8_K *const tok[TOKENS], const size_t step[TOKENS], int64_t b0, int nb,
             Interleaved *x)
{
  for (int b = 0; b < nb; b++)
    {
      const LmBlockQ8_K *a[4];
      for (int t = 0; t < 4; t++)
        a[t] = tok[t] + (size_t) (b0 + b) * step[t];
      for (int j = 0; j < 8; j++)
        {
          __m256i in[4];
          for (int t = 0; t < 4; t++)
            in[t] = _mm256_loadu_si256 ((const __m256i *) (a[t]->qs + 32 * j));
          /* 128-bit half h: tokens 0, 1 (or 2, 3) of qword 2h (lo) or 2h + 1 (hi) */
          __m256i lo01 = _mm256_unpacklo_epi64 (in[0], in[1]), hi01 = _mm256_unpackhi_epi64 (in[0], in[1]);
          __m256i lo23 = _mm256_unpacklo_epi64 (in[2], in[3]), hi23 = _mm256_unpackhi_epi64 (in[2], in[3]);
          _mm256_store_si256 ((__m256i *) x->qs[b][4 * j], _mm256_permute2x128_si256 (lo01, lo23, 0x20));
          _mm256_store_si256 ((__m256i *) x->qs[b][4 * j + 1], _mm256_permute2x128_si256 (hi01, hi23, 0x20));
          _mm256_store_si256 ((__m256i *) x->qs[b][4 * j + 2], _mm256_permute2x128_si256 (lo01, lo23, 0x31));
          _mm256_store_si256 ((__m256i *) x->qs[b][4 * j + 3], _mm256_permute2x128_si256 (hi01, hi23, 0x31));
        }
      __m128i s[4];
      for (int t = 0; t < 4; t++)
        s[t] = pair_sums (a[t]);
      __m128i lo01 = _mm_unpacklo_epi32 (s[0], s[1]), hi01 = _mm_unpackhi_epi32 (s[0], s[1]);
      __m128i lo23 = _mm_unpacklo_epi32 (s[2], s[3]), hi23 = _mm_unpackhi_epi32 (s[2], s[3]);
      _mm_store_si128 ((__m128i *) x->sums[b][0], _mm_unpacklo_epi64 (lo01, lo23));
      _mm_store_si128 ((__m128i *) x->sums[b][1], _mm_unpackhi_epi64 (lo01, lo23));
      _mm_store_si128 ((__m128i *) x->sums[b][2], _mm_unpacklo_epi64 (hi01, hi23));
      _mm_store_si128 ((__m128i *) x->sums[b][3], _mm_unpackhi_epi64 (hi01, hi23));
      for (int t = 0; t < 4; t++)
        x->d[b][t] = a[t]->d;
    }
}

/* Packed weight bytes p[0..7] in every qword lane. */
TARGET static inline __m512i
broadcast_qword (const uint8_t *p)
{
  int64_t v;
  __builtin_memcpy (&v, p, sizeof v);
  return _mm512_set1_epi64 (v);
}

/* Sub-block pair g (packed bytes qs[32g..32g+31]: sub-block 2g in the low
 * nibbles, 2g+1 in the high ones) against the interleaved tokens of block
 * b: lanes 2t and 2t+1 hold halves of token t's integer sum
 * sc_{2g} * (sub-block 2g) + sc_{2g+1} * (sub-block 2g+1), @scales the
 * uint16 pair (sc_{2g}, sc_{2g+1}). */
TARGET static inline __attribute__ ((always_inline)) __m512i
pair_lanes (const uint8_t *qs, const Interleaved *x, int b, int g, __m512i scales)
{
  const __m512i low4 = _mm512_set1_epi8 (0x0F), high4 = _mm512_set1_epi8 ((char) 0xF0);
  __m512i s0 = _mm512_setzero_si512 (), s1 = _mm512_setzero_si512 ();
  #pragma GCC unroll 4
  for (int k = 0; k < 4; k++)
    {
      __m512i packed = broadcast_qword (qs + 32 * g + 8 * k);
      s0 = _mm512_dpbusd_epi32 (s0, _mm512_and_si512 (packed, low4),
                                _mm512_load_si512 (x->qs[b][8 * g + k]));
      /* the high nibbles in place: 16 times the sum */
      s1 = _mm512_dpbusd_epi32 (s1, _mm512_and_si512 (packed, high4),
                                _mm512_load_si512 (x->qs[b][8 * g + 4 + k]));
    }
  /* |sum| <= 16 * 15 * 128: exact as int16, so both sub-blocks share a
   * dword (2g low, 2g+1 high: s1 / 16 << 16) for one multiply-add with the
   * scale pair */
  __m512i words = _mm512_mask_blend_epi16 (0xAAAAAAAAu, s0, _mm512_slli_epi32 (s1, 12));
  return _mm512_madd_epi16 (words, scales);
}

/* The activation sums of pair g of block b times the mins pair @mins. */
TARGET static inline __m256
pair_mins (const Interleaved *x, int b, int g, __m256i mins)
{
  return _mm256_cvtepi32_ps (_mm256_madd_epi16 (_mm256_load_si256 ((const __m256i *) x->sums[b][g]),
                                                mins));
}

/* One row's super-block against the interleaved tokens of block b: the
 * four float steps into acc and acc_min (lanes: tokens). */
TARGET static inline __attribute__ ((always_inline)) void
row_block (const LmBlockQ4_K *w, const Interleaved *x, int b, __m256 *acc, __m256 *acc_min)
{
  uint8_t sm[16];
  lm_k4_unpack_scales (w->scales, sm);
  /* dword g in every 128-bit lane: the uint16 pair (sc_{2g}, sc_{2g+1});
   * the same of the mins */
  const __m512i sc = _mm512_broadcast_i32x4 (_mm_cvtepu8_epi16 (_mm_loadl_epi64 ((const __m128i *) sm)));
  const __m256i mn = _mm256_broadcastsi128_si256 (_mm_cvtepu8_epi16 (_mm_loadl_epi64 ((const __m128i *) (sm + 8))));
  const __m256 d_a = _mm256_load_ps (x->d[b]);
  const __m256 d = _mm256_mul_ps (_mm256_set1_ps (fp16 (w->d)), d_a);
  const __m256 dmin = _mm256_mul_ps (_mm256_set1_ps (fp16 (w->dmin)), d_a);
  /* the two halves of each token's sum, for pairs g (lanes 0-7) and g+1 (8-15) */
  const __m512i even = _mm512_setr_epi32 (0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32 (1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  __m512i a = pair_lanes (w->qs, x, b, 0, _mm512_shuffle_epi32 (sc, _MM_PERM_AAAA));
  __m512i c = pair_lanes (w->qs, x, b, 1, _mm512_shuffle_epi32 (sc, _MM_PERM_BBBB));
  __m512 f = _mm512_cvtepi32_ps (_mm512_add_epi32 (_mm512_permutex2var_epi32 (a, even, c),
                                                   _mm512_permutex2var_epi32 (a, odd, c)));
  *acc = _mm256_fmadd_ps (_mm512_castps512_ps256 (f), d, *acc);
  *acc_min = _mm256_fmadd_ps (pair_mins (x, b, 0, _mm256_shuffle_epi32 (mn, 0x00)), dmin, *acc_min);
  *acc = _mm256_fmadd_ps (_mm512_extractf32x8_ps (f, 1), d, *acc);
  *acc_min = _mm256_fmadd_ps (pair_mins (x, b, 1, _mm256_shuffle_epi32 (mn, 0x55)), dmin, *acc_min);
  a = pair_lanes (w->qs, x, b, 2, _mm512_shuffle_epi32 (sc, _MM_PERM_CCCC));
  c = pair_lanes (w->qs, x, b, 3, _mm512_shuffle_epi32 (sc, _MM_PERM_DDDD));
  f = _mm512_cvtepi32_ps (_mm512_add_epi32 (_mm512_permutex2var_epi32 (a, even, c),
                                            _mm512_permutex2var_epi32 (a, odd, c)));
  *acc = _mm256_fmadd_ps (_mm512_castps512_ps256 (f), d, *acc);
  *acc_min = _mm256_fmadd_ps (pair_mins (x, b, 2, _mm256_shuffle_epi32 (mn, 0xAA)), dmin, *acc_min);
  *acc = _mm256_fmadd_ps (_mm512_extractf32x8_ps (f, 1), d, *acc);
  *acc_min = _mm256_fmadd_ps (pair_mins (x, b, 3, _mm256_shuffle_epi32 (mn, 0xFF)), dmin, *acc_min);
}

/* pair_lanes for 4 tokens: lanes 2t, 2t+1 of a 256-bit vector. */
TARGET static inline __attribute__ ((always_inline)) __m256i
pair_lanes4 (const uint8_t *qs, const Interleaved *x, int b, int g, __m256i scales)
{
  const __m256i low4 = _mm256_set1_epi8 (0x0F), high4 = _mm256_set1_epi8 ((char) 0xF0);
  __m256i s0 = _mm256_setzero_si256 (), s1 = _mm256_setzero_si256 ();
  #pragma GCC unroll 4
  for (int k = 0; k < 4; k++)
    {
      int64_t v;
      __builtin_memcpy (&v, qs + 32 * g + 8 * k, sizeof v);
      __m256i packed = _mm256_set1_epi64x (v);
      s0 = _mm256_dpbusd_epi32 (s0, _mm256_and_si256 (packed, low4),
                                _mm256_load_si256 ((const __m256i *) x->qs[b][8 * g + k]));
      s1 = _mm256_dpbusd_epi32 (s1, _mm256_and_si256 (packed, high4),
                                _mm256_load_si256 ((const __m256i *) x->qs[b][8 * g + 4 + k]));
    }
  __m256i words = _mm256_mask_blend_epi16 (0xAAAA, s0, _mm256_slli_epi32 (s1, 12));
  return _mm256_madd_epi16 (words, scales);
}

TARGET static inline __m128
pair_mins4 (const Interleaved *x, int b, int g, __m128i mins)
{
  return _mm_cvtepi32_ps (_mm_madd_epi16 (_mm_load_si128 ((const __m128i *) x->sums[b][g]), mins));
}

/* row_block for 4 tokens (lanes 0-3 of acc and acc_min). */
TARGET static inline __attribute__ ((always_inline)) void
row_block4 (const LmBlockQ4_K *w, const Interleaved *x, int b, __m256 *acc8, __m256 *acc_min8)
{
  uint8_t sm[16];
  lm_k4_unpack_scales (w->scales, sm);
  const __m256i sc = _mm256_broadcastsi128_si256 (_mm_cvtepu8_epi16 (_mm_loadl_epi64 ((const __m128i *) sm)));
  const __m128i mn = _mm_cvtepu8_epi16 (_mm_loadl_epi64 ((const __m128i *) (sm + 8)));
  const __m128 d_a = _mm_load_ps (x->d[b]);
  const __m128 d = _mm_mul_ps (_mm_set1_ps (fp16 (w->d)), d_a);
  const __m128 dmin = _mm_mul_ps (_mm_set1_ps (fp16 (w->dmin)), d_a);
  const __m256i even = _mm256_setr_epi32 (0, 2, 4, 6, 8, 10, 12, 14);
  const __m256i odd = _mm256_setr_epi32 (1, 3, 5, 7, 9, 11, 13, 15);
  __m128 acc = _mm256_castps256_ps128 (*acc8), acc_min = _mm256_castps256_ps128 (*acc_min8);
  __m256i a = pair_lanes4 (w->qs, x, b, 0, _mm256_shuffle_epi32 (sc, 0x00));
  __m256i c = pair_lanes4 (w->qs, x, b, 1, _mm256_shuffle_epi32 (sc, 0x55));
  __m256 f = _mm256_cvtepi32_ps (_mm256_add_epi32 (_mm256_permutex2var_epi32 (a, even, c),
                                                   _mm256_permutex2var_epi32 (a, odd, c)));
  acc = _mm_fmadd_ps (_mm256_castps256_ps128 (f), d, acc);
  acc_min = _mm_fmadd_ps (pair_mins4 (x, b, 0, _mm_shuffle_epi32 (mn, 0x00)), dmin, acc_min);
  acc = _mm_fmadd_ps (_mm256_extractf128_ps (f, 1), d, acc);
  acc_min = _mm_fmadd_ps (pair_mins4 (x, b, 1, _mm_shuffle_epi32 (mn, 0x55)), dmin, acc_min);
  a = pair_lanes4 (w->qs, x, b, 2, _mm256_shuffle_epi32 (sc, 0xAA));
  c = pair_lanes4 (w->qs, x, b, 3, _mm256_shuffle_epi32 (sc, 0xFF));
  f = _mm256_cvtepi32_ps (_mm256_add_epi32 (_mm256_permutex2var_epi32 (a, even, c),
                                            _mm256_permutex2var_epi32 (a, odd, c)));
  acc = _mm_fmadd_ps (_mm256_castps256_ps128 (f), d, acc);
  acc_min = _mm_fmadd_ps (pair_mins4 (x, b, 2, _mm_shuffle_epi32 (mn, 0xAA)), dmin, acc_min);
  acc = _mm_fmadd_ps (_mm256_extractf128_ps (f, 1), d, acc);
  acc_min = _mm_fmadd_ps (pair_mins4 (x, b, 3, _mm_shuffle_epi32 (mn, 0xFF)), dmin, acc_min);
  *acc8 = _mm256_zextps128_ps256 (acc);
  *acc_min8 = _mm256_zextps128_ps256 (acc_min);
}

/* Rows [0, n_rows) against @n_tok (1..@tk) activation rows, @tk 4 or 8:
 * Y[t * y_stride + r]. */
TARGET static inline __attribute__ ((always_inline)) void
lanes_body (const void *W, size_t row_bytes, int64_t n_rows, const void *act, size_t act_stride,
            int64_t n, int n_tok, float *Y, size_t y_stride, const int tk)
{
  static const LmBlockQ8_K zero_block;
  const LmBlockQ8_K *tok[TOKENS];
  size_t step[TOKENS];
  for (int t = 0; t < TOKENS; t++)
    {
      tok[t] = t < n_tok ? (const LmBlockQ8_K *) ((const uint8_t *) act + (size_t) t * act_stride)
                         : &zero_block;
      step[t] = t < n_tok ? 1 : 0;
    }
  const int64_t nb = n / LM_QK_K;
  Interleaved x;
  for (int64_t r0 = 0; r0 < n_rows; r0 += ROW_GROUP)
    {
      const int rows = n_rows - r0 < ROW_GROUP ? (int) (n_rows - r0) : ROW_GROUP;
      __m256 acc[ROW_GROUP], acc_min[ROW_GROUP];
      for (int r = 0; r < rows; r++)
        acc[r] = acc_min[r] = _mm256_setzero_ps ();
      for (int64_t b0 = 0; b0 < nb; b0 += CHUNK_BLOCKS)
        {
          const int blocks = nb - b0 < CHUNK_BLOCKS ? (int) (nb - b0) : CHUNK_BLOCKS;
          if (tk == 4)
            interleave4 (tok, step, b0, blocks, &x);
          else
            interleave (tok, step, b0, blocks, &x);
          for (int r = 0; r < rows; r++)
            {
              const LmBlockQ4_K *w = (const LmBlockQ4_K *) ((const uint8_t *) W
                                                            + (size_t) (r0 + r) * row_bytes) + b0;
              for (int b = 0; b < blocks; b++)
                if (tk == 4)
                  row_block4 (&w[b], &x, b, &acc[r], &acc_min[r]);
                else
                  row_block (&w[b], &x, b, &acc[r], &acc_min[r]);
            }
        }
      for (int r = 0; r < rows; r++)
        {
          float out[TOKENS];
          _mm256_storeu_ps (out, _mm256_sub_ps (acc[r], acc_min[r]));
          for (int t = 0; t < n_tok; t++)
            Y[(size_t) t * y_stride + (size_t) (r0 + r)] = out[t];
        }
    }
}

/* 4 tokens or fewer in 256-bit vectors, more in 512-bit ones. */
TARGET static void
tile_q4_K_lanes (const void *W, size_t row_bytes, int64_t n_rows, const void *act,
                 size_t act_stride, int64_t n, int n_tok, float *Y, size_t y_stride)
{
  if (n_tok <= 4)
    lanes_body (W, row_bytes, n_rows, act, act_stride, n, n_tok, Y, y_stride, 4);
  else
    lanes_body (W, row_bytes, n_rows, act, act_stride, n, n_tok, Y, y_stride, 8);
}

void
lm_kernels_fill_avx512_q4k (LmKernels *k)
{
  lm_set_batch_tile (k, LM_KT_Q4_K, tile_q4_K_lanes, TOKENS, 4, 4);
}
