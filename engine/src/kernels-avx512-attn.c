/* kernels-avx512-attn.c: attention and SwiGLU with AVX-512 (one register per
 * 16 lanes; kernels-attn-x86.h).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <immintrin.h>
#include <math.h>

#include "kernels-private.h"

#define TARGET __attribute__ ((target ("avx512f,avx512dq,avx2,fma")))

typedef __m512 V16;
typedef struct {
  __m512d lo, hi;
} VD16;

TARGET static inline V16 v_zero (void) { return _mm512_setzero_ps (); }
TARGET static inline V16 v_set1 (float f) { return _mm512_set1_ps (f); }
TARGET static inline V16 v_load (const float *p) { return _mm512_loadu_ps (p); }
TARGET static inline void v_store (float *p, V16 v) { _mm512_storeu_ps (p, v); }
TARGET static inline V16 v_bcast (const float *p) { return _mm512_set1_ps (*p); }
TARGET static inline V16 v_add (V16 a, V16 b) { return _mm512_add_ps (a, b); }
TARGET static inline V16 v_sub (V16 a, V16 b) { return _mm512_sub_ps (a, b); }
TARGET static inline V16 v_mul (V16 a, V16 b) { return _mm512_mul_ps (a, b); }
TARGET static inline V16 v_div (V16 a, V16 b) { return _mm512_div_ps (a, b); }
TARGET static inline V16 v_max (V16 a, V16 b) { return _mm512_max_ps (a, b); }
TARGET static inline V16 v_fma (V16 a, V16 b, V16 c) { return _mm512_fmadd_ps (a, b, c); }
TARGET static inline V16 v_fnma (V16 a, V16 b, V16 c) { return _mm512_fnmadd_ps (a, b, c); }

TARGET static inline V16
v_lt_select (V16 a, V16 b, V16 x, V16 y)
{
  return _mm512_mask_blend_ps (_mm512_cmp_ps_mask (a, b, _CMP_LT_OQ), y, x);
}

TARGET static inline V16
v_exp_scale (V16 j, V16 z, V16 n)
{
  __m512i k = _mm512_add_epi32 (_mm512_slli_epi32 (_mm512_castps_si512 (z), 23),
                                _mm512_castps_si512 (_mm512_set1_ps (1.0f)));
  V16 r = _mm512_mul_ps (j, _mm512_castsi512_ps (k));
  r = _mm512_mask_blend_ps (_mm512_cmp_ps_mask (n, _mm512_set1_ps (-126.0f), _CMP_LT_OQ), r,
                            _mm512_setzero_ps ());
  return _mm512_mask_blend_ps (_mm512_cmp_ps_mask (n, _mm512_set1_ps (127.0f), _CMP_GT_OQ), r,
                               _mm512_set1_ps (INFINITY));
}

TARGET static inline VD16
vd_zero (void)
{
  return (VD16) { _mm512_setzero_pd (), _mm512_setzero_pd () };
}

TARGET static inline VD16
vd_add (VD16 s, V16 e)
{
  return (VD16) { _mm512_add_pd (s.lo, _mm512_cvtps_pd (_mm512_castps512_ps256 (e))),
                  _mm512_add_pd (s.hi, _mm512_cvtps_pd (_mm512_extractf32x8_ps (e, 1))) };
}

TARGET static inline V16
vd_inv (VD16 s)
{
  const __m512d one = _mm512_set1_pd (1.0);
  return _mm512_insertf32x8 (_mm512_castps256_ps512 (_mm512_cvtpd_ps (_mm512_div_pd (one, s.lo))),
                             _mm512_cvtpd_ps (_mm512_div_pd (one, s.hi)), 1);
}

#define ATTN_QG 4
#define ATTN_LC 4

#include "kernels-attn-x86.h"

void
lm_kernels_fill_avx512_attn (LmKernels *k)
{
  k->attend = attend_x86;
  k->swiglu = swiglu_x86;
}
