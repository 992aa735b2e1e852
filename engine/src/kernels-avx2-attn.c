/* kernels-avx2-attn.c: attention and SwiGLU with AVX2 (two registers per 16
 * lanes; kernels-attn-x86.h).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <immintrin.h>
#include <math.h>

#include "kernels-private.h"

#define TARGET __attribute__ ((target ("avx2,fma")))

typedef struct {
  __m256 lo, hi;
} V16;
typedef struct {
  __m256d d[4];
} VD16;

#define LANEWISE(expr_lo, expr_hi) ((V16) { expr_lo, expr_hi })

TARGET static inline V16 v_zero (void) { return LANEWISE (_mm256_setzero_ps (), _mm256_setzero_ps ()); }
TARGET static inline V16 v_set1 (float f) { return LANEWISE (_mm256_set1_ps (f), _mm256_set1_ps (f)); }
TARGET static inline V16 v_load (const float *p) { return LANEWISE (_mm256_loadu_ps (p), _mm256_loadu_ps (p + 8)); }
TARGET static inline V16 v_bcast (const float *p) { return v_set1 (*p); }

TARGET static inline void
v_store (float *p, V16 v)
{
  _mm256_storeu_ps (p, v.lo);
  _mm256_storeu_ps (p + 8, v.hi);
}

TARGET static inline V16 v_add (V16 a, V16 b) { return LANEWISE (_mm256_add_ps (a.lo, b.lo), _mm256_add_ps (a.hi, b.hi)); }
TARGET static inline V16 v_sub (V16 a, V16 b) { return LANEWISE (_mm256_sub_ps (a.lo, b.lo), _mm256_sub_ps (a.hi, b.hi)); }
TARGET static inline V16 v_mul (V16 a, V16 b) { return LANEWISE (_mm256_mul_ps (a.lo, b.lo), _mm256_mul_ps (a.hi, b.hi)); }
TARGET static inline V16 v_div (V16 a, V16 b) { return LANEWISE (_mm256_div_ps (a.lo, b.lo), _mm256_div_ps (a.hi, b.hi)); }
TARGET static inline V16 v_max (V16 a, V16 b) { return LANEWISE (_mm256_max_ps (a.lo, b.lo), _mm256_max_ps (a.hi, b.hi)); }

TARGET static inline V16
v_fma (V16 a, V16 b, V16 c)
{
  return LANEWISE (_mm256_fmadd_ps (a.lo, b.lo, c.lo), _mm256_fmadd_ps (a.hi, b.hi, c.hi));
}

TARGET static inline V16
v_fnma (V16 a, V16 b, V16 c)
{
  return LANEWISE (_mm256_fnmadd_ps (a.lo, b.lo, c.lo), _mm256_fnmadd_ps (a.hi, b.hi, c.hi));
}

TARGET static inline __m256
select8 (__m256 a, __m256 b, __m256 x, __m256 y)
{
  return _mm256_blendv_ps (y, x, _mm256_cmp_ps (a, b, _CMP_LT_OQ));
}

TARGET static inline V16
v_lt_select (V16 a, V16 b, V16 x, V16 y)
{
  return LANEWISE (select8 (a.lo, b.lo, x.lo, y.lo), select8 (a.hi, b.hi, x.hi, y.hi));
}

TARGET static inline __m256
exp_scale8 (__m256 j, __m256 z, __m256 n)
{
  __m256i k = _mm256_add_epi32 (_mm256_slli_epi32 (_mm256_castps_si256 (z), 23),
                                _mm256_castps_si256 (_mm256_set1_ps (1.0f)));
  __m256 r = _mm256_mul_ps (j, _mm256_castsi256_ps (k));
  r = _mm256_blendv_ps (r, _mm256_setzero_ps (),
                        _mm256_cmp_ps (n, _mm256_set1_ps (-126.0f), _CMP_LT_OQ));
  return _mm256_blendv_ps (r, _mm256_set1_ps (INFINITY),
                           _mm256_cmp_ps (n, _mm256_set1_ps (127.0f), _CMP_GT_OQ));
}

TARGET static inline V16
v_exp_scale (V16 j, V16 z, V16 n)
{
  return LANEWISE (exp_scale8 (j.lo, z.lo, n.lo), exp_scale8 (j.hi, z.hi, n.hi));
}

TARGET static inline VD16
vd_zero (void)
{
  return (VD16) { { _mm256_setzero_pd (), _mm256_setzero_pd (), _mm256_setzero_pd (),
                    _mm256_setzero_pd () } };
}

TARGET static inline VD16
vd_add (VD16 s, V16 e)
{
  s.d[0] = _mm256_add_pd (s.d[0], _mm256_cvtps_pd (_mm256_castps256_ps128 (e.lo)));
  s.d[1] = _mm256_add_pd (s.d[1], _mm256_cvtps_pd (_mm256_extractf128_ps (e.lo, 1)));
  s.d[2] = _mm256_add_pd (s.d[2], _mm256_cvtps_pd (_mm256_castps256_ps128 (e.hi)));
  s.d[3] = _mm256_add_pd (s.d[3], _mm256_cvtps_pd (_mm256_extractf128_ps (e.hi, 1)));
  return s;
}

TARGET static inline V16
vd_inv (VD16 s)
{
  const __m256d one = _mm256_set1_pd (1.0);
  __m128 q[4];
  for (int i = 0; i < 4; i++)
    q[i] = _mm256_cvtpd_ps (_mm256_div_pd (one, s.d[i]));
  return LANEWISE (_mm256_set_m128 (q[1], q[0]), _mm256_set_m128 (q[3], q[2]));
}

#define ATTN_QG 2
#define ATTN_LC 2

#include "kernels-attn-x86.h"

void
lm_kernels_fill_avx2_attn (LmKernels *k)
{
  k->attend = attend_x86;
  k->swiglu = swiglu_x86;
}
