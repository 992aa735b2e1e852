/* ckks-cuda-selfcheck.cu: the kernels' __host__ __device__ code run on the
 * host against the CPU backend (see ckks-cuda-selfcheck.h).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdio.h>
#include <string.h>

#include "ckks-cuda-elementwise.cuh"
#include "ckks-cuda-selfcheck.h"
#include "ckks-cuda-tables.cuh"

extern "C" {
#include "ckks-objects.h"
}

/* Test randomness only (splitmix64): reproducible from the test's seed. */
static uint64_t
next_random (uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void
fill_below (uint64_t *a, size_t n, uint64_t q, uint64_t *s)
{
  for (size_t i = 0; i < n; i++)
    a[i] = next_random (s) % q;
}

static bool
fail (char *why, size_t why_len, const char *what, uint64_t q, uint64_t a, uint64_t b,
      uint64_t got, uint64_t want)
{
  if (why && why_len > 0)
    snprintf (why, why_len,
              "%s differs for q = %llu, inputs %llu, %llu: got %llu, want %llu", what,
              (unsigned long long) q, (unsigned long long) a, (unsigned long long) b,
              (unsigned long long) got, (unsigned long long) want);
  return false;
}

#define CHECK_EQ(what, a, b, got, want)                                                  \
  do                                                                                     \
    {                                                                                    \
      uint64_t got_ = (got), want_ = (want);                                             \
      if (got_ != want_)                                                                 \
        return fail (why, why_len, what, q, a, b, got_, want_);                          \
    }                                                                                    \
  while (0)

/* One pair of operands through every helper. x and y are any 64-bit words,
 * a and b reduced. */
static bool
arith_case (const CkksModulus *m, uint64_t a, uint64_t b, uint64_t x, uint64_t y,
            char *why, size_t why_len)
{
  const uint64_t q = m->q;
  CHECK_EQ ("add_mod", a, b, ckks_cu_add_mod (a, b, q), ckks_add_mod (a, b, q));
  CHECK_EQ ("sub_mod", a, b, ckks_cu_sub_mod (a, b, q), ckks_sub_mod (a, b, q));
  CHECK_EQ ("neg_mod", a, 0, ckks_cu_neg_mod (a, q), ckks_neg_mod (a, q));
  uint64_t bs = ckks_shoup_precompute (b, q);
  CHECK_EQ ("mul_shoup_lazy", x, b, ckks_cu_mul_shoup_lazy (x, b, bs, q),
            ckks_mul_shoup_lazy (x, b, bs, q));
  CHECK_EQ ("mul_shoup", x, b, ckks_cu_mul_shoup (x, b, bs, q), ckks_mul_shoup (x, b, bs, q));
  CHECK_EQ ("barrett_reduce_128", x, y,
            ckks_cu_barrett_reduce_128 (x, y, q, m->ratio_lo, m->ratio_hi),
            ckks_barrett_reduce_128 (((ckks_u128) y << 64) | x, m));
  CHECK_EQ ("barrett_reduce_128 (64-bit)", x, 0,
            ckks_cu_barrett_reduce_64w (x, q, m->ratio_lo, m->ratio_hi),
            ckks_barrett_reduce_128 (x, m));
  /* butterflies on their lazy input ranges, against the formulas of
   * ckks-kernels-scalar.c */
  const uint64_t two_q = 2 * q;
  uint64_t u4 = x % (4 * q), v4 = y % (4 * q), bx = u4, by = v4;
  ckks_cu_ntt_fwd_butterfly (&bx, &by, b, bs, q);
  uint64_t u = u4 >= two_q ? u4 - two_q : u4, v = ckks_mul_shoup_lazy (v4, b, bs, q);
  CHECK_EQ ("forward butterfly x", u4, v4, bx, u + v);
  CHECK_EQ ("forward butterfly y", u4, v4, by, u - v + two_q);
  CHECK_EQ ("reduce_4q", u4, 0, ckks_cu_reduce_4q (u4, q), u4 % q);
  uint64_t u2 = x % two_q, v2 = y % two_q;
  bx = u2;
  by = v2;
  ckks_cu_ntt_inv_butterfly (&bx, &by, b, bs, q);
  uint64_t s = u2 + v2;
  CHECK_EQ ("inverse butterfly x", u2, v2, bx, s >= two_q ? s - two_q : s);
  CHECK_EQ ("inverse butterfly y", u2, v2, by, ckks_mul_shoup_lazy (u2 - v2 + two_q, b, bs, q));
  uint64_t as = ckks_shoup_precompute (a, q);
  bx = u2;
  by = v2;
  ckks_cu_ntt_inv_last_butterfly (&bx, &by, a, as, b, bs, q);
  CHECK_EQ ("last inverse butterfly x", u2, v2, bx, ckks_mul_shoup (u2 + v2, a, as, q));
  CHECK_EQ ("last inverse butterfly y", u2, v2, by,
            ckks_mul_shoup (u2 - v2 + two_q, b, bs, q));
  /* lazy accumulation: any chain of sums stays congruent and below 2q */
  uint64_t lz = ckks_cu_lazy_add (x % two_q, y % two_q, q);
  if (lz >= two_q)
    return fail (why, why_len, "lazy_add range", q, x, y, lz, two_q);
  CHECK_EQ ("lazy_add", x, y, lz % q, ((x % two_q) % q + (y % two_q) % q) % q);
  return true;
}

extern "C" bool
ckks_cuda_selfcheck_arith (uint64_t seed, char *why, size_t why_len)
{
  const unsigned bits[] = { 20, 30, 40, 50, 55, 60, 61 };
  uint64_t rs = seed;
  for (size_t bi = 0; bi < sizeof bits / sizeof bits[0]; bi++)
    {
      CkksParams p;
      if (ckks_params_generate (12, &bits[bi], 1, &p) != CKKS_OK)
        {
          snprintf (why, why_len, "no %u-bit prime", bits[bi]);
          return false;
        }
      CkksModulus m;
      ckks_modulus_init (&m, p.moduli[0]);
      const uint64_t q = m.q;
      const uint64_t edges[] = { 0, 1, 2, q / 2, q - 2, q - 1 };
      const uint64_t wide[] = { 0, 1, q - 1, q, 2 * q - 1, 2 * q, 4 * q - 1, ~0ull >> 1,
                                ~0ull - 1, ~0ull };
      const size_t ne = sizeof edges / sizeof edges[0], nw = sizeof wide / sizeof wide[0];
      for (size_t i = 0; i < ne; i++)
        for (size_t j = 0; j < ne; j++)
          for (size_t k = 0; k < nw; k++)
            if (!arith_case (&m, edges[i], edges[j], wide[k], wide[nw - 1 - k], why, why_len))
              return false;
      for (int r = 0; r < 200000; r++)
        {
          uint64_t x = next_random (&rs), y = next_random (&rs);
          if (!arith_case (&m, next_random (&rs) % q, next_random (&rs) % q, x, y, why,
                           why_len))
            return false;
        }
    }
  return true;
}

/* ---- NTT ---- */

/* One phase of the fused transform as the kernel runs it: per block, every
 * thread's load, then stage by stage every thread's butterflies (the
 * barriers), then every thread's store. */
static void
emulate_phase (const CkksCudaNttView &v, uint64_t *data, uint32_t first_limb,
               uint32_t n_limbs, uint32_t count, size_t stride, const CkksCuNttPhase &ph,
               uint64_t *sh, const CkksCuRescaleIo *io)
{
  for (uint32_t z = 0; z < count; z++)
    for (uint32_t y = 0; y < n_limbs; y++)
      {
        uint64_t *a = data + z * stride + ((size_t) y << v.log_n);
        const CkksCuLimbNtt t = ckks_cu_limb_ntt (v, first_limb + y, ph.forward);
        for (uint32_t block = 0; block < ckks_cu_ntt_blocks (v.log_n); block++)
          {
            for (uint32_t th = 0; th < CKKS_CUDA_NTT_THREADS; th++)
              if (io && ph.first_phase)
                ckks_cu_ntt_load_lift_thread (sh, *io, z, v.log_n, ph.layout, block, th, t.q);
              else
                ckks_cu_ntt_load_thread (sh, a, v.log_n, ph.layout, block, th);
            for (uint32_t s = 0; s < ph.n_stages; s += ckks_cu_phase_step (ph, s))
              for (uint32_t th = 0; th < CKKS_CUDA_NTT_THREADS; th++)
                ckks_cu_ntt_step_thread (sh, t, ph, block, th, s);
            for (uint32_t th = 0; th < CKKS_CUDA_NTT_THREADS; th++)
              if (io && ph.reduce_out)
                ckks_cu_ntt_store_finish_thread (*io, sh, z, v.log_n, ph.layout, block, th,
                                                 t.q);
              else
                ckks_cu_ntt_store_thread (a, sh, v.log_n, ph.layout, block, th, ph.reduce_out,
                                          t.q);
          }
      }
}

/* @io non-NULL: the fused rescale transform (ckks_cu_ntt_rescale_launch). */
static void
emulate_ntt (const CkksCudaNttView &v, uint64_t *data, uint32_t first_limb,
             uint32_t n_limbs, uint32_t count, size_t stride, bool forward, uint64_t *sh,
             const CkksCuRescaleIo *io = NULL)
{
  CkksCuNttPhase phases[2];
  uint32_t n_phases = ckks_cu_ntt_plan (v.log_n, forward, phases);
  for (uint32_t p = 0; p < n_phases; p++)
    emulate_phase (v, data, first_limb, n_limbs, count, stride, phases[p], sh, io);
}

/* The per-stage reference kernels, thread by thread. */
static void
emulate_ntt_reference (const CkksCudaNttView &v, uint64_t *a, uint32_t limb, bool forward)
{
  const CkksCuLimbNtt t = ckks_cu_limb_ntt (v, limb, forward);
  for (uint32_t s = 0; s < v.log_n; s++)
    {
      uint32_t log_half = forward ? v.log_n - 1 - s : s;
      for (uint32_t b = 0; b < (1u << (v.log_n - 1)); b++)
        {
          uint32_t x = ckks_cu_butterfly_first (b, log_half);
          ckks_cu_ntt_apply (a + x, a + x + (1u << log_half),
                             ckks_cu_twiddle_index (v.log_n, x, log_half), log_half, t, forward);
        }
    }
  if (forward)
    for (size_t i = 0; i < ((size_t) 1 << v.log_n); i++)
      a[i] = ckks_cu_reduce_4q (a[i], t.q);
}

/* One radix-2 stage of a block: every slot touched once, each pair the
 * CPU's (span apart in the limb), twiddles in range. */
static bool
check_butterflies (uint32_t log_n, const CkksCuNttPhase &ph, uint32_t block,
                   uint32_t log_half, uint8_t *touched)
{
  for (uint32_t th = 0; th < CKKS_CUDA_NTT_THREADS; th++)
    for (uint32_t k = 0; k < CKKS_CUDA_NTT_BFLY_PER_THREAD; k++)
      {
        CkksCuButterfly b = ckks_cu_ntt_butterfly (log_n, ph.layout, block,
                                                   th + k * CKKS_CUDA_NTT_THREADS, log_half);
        if (b.lx >= CKKS_CUDA_CHUNK || b.ly >= CKKS_CUDA_CHUNK || b.tw >= (1u << log_n)
            || touched[b.lx]++ != 0 || touched[b.ly]++ != 0
            || ckks_cu_slot_to_index (log_n, ph.layout, block, b.ly)
                 != ckks_cu_slot_to_index (log_n, ph.layout, block, b.lx) + (1u << log_half))
          return false;
      }
  return true;
}

/* One two-stage step of a block: the quartets partition the slots, and
 * each is x, x + h, x + 2h, x + 3h in the limb. */
static bool
check_quartets (uint32_t log_n, const CkksCuNttPhase &ph, uint32_t block, uint32_t log_big,
                uint8_t *touched)
{
  const uint32_t h = 1u << (log_big - 1);
  for (uint32_t th = 0; th < CKKS_CUDA_NTT_THREADS; th++)
    for (uint32_t k = 0; k < CKKS_CUDA_NTT_BFLY_PER_THREAD / 2; k++)
      {
        CkksCuQuartet qt = ckks_cu_ntt_quartet (log_n, ph.layout, block,
                                                th + k * CKKS_CUDA_NTT_THREADS, log_big);
        uint32_t x = ckks_cu_slot_to_index (log_n, ph.layout, block, qt.slot[0]);
        if (((x >> (log_big - 1)) & 3) != 0)
          return false;
        for (uint32_t j = 0; j < 4; j++)
          if (qt.slot[j] >= CKKS_CUDA_CHUNK || touched[qt.slot[j]]++ != 0
              || ckks_cu_slot_to_index (log_n, ph.layout, block, qt.slot[j]) != x + j * h)
            return false;
      }
  return true;
}

/* Race freedom and coverage of the fused schedule of one direction. */
static bool
check_schedule (uint32_t log_n, bool forward, char *why, size_t why_len)
{
  const size_t n = (size_t) 1 << log_n;
  uint8_t *loaded = (uint8_t *) ckks_alloc (n);
  uint8_t touched[CKKS_CUDA_CHUNK];
  CkksCuNttPhase phases[2];
  uint32_t n_phases = ckks_cu_ntt_plan (log_n, forward, phases), stages = 0;
  bool ok = loaded != NULL;
  for (uint32_t p = 0; ok && p < n_phases; p++)
    {
      const CkksCuNttPhase &ph = phases[p];
      stages += ph.n_stages;
      memset (loaded, 0, n);
      for (uint32_t block = 0; ok && block < ckks_cu_ntt_blocks (log_n); block++)
        {
          for (uint32_t slot = 0; slot < CKKS_CUDA_CHUNK; slot++)
            {
              uint32_t g = ckks_cu_slot_to_index (log_n, ph.layout, block, slot);
              ok = ok && g < n && loaded[g]++ == 0;
            }
          for (uint32_t s = 0; ok && s < ph.n_stages; s += ckks_cu_phase_step (ph, s))
            {
              memset (touched, 0, sizeof touched);
              if (ckks_cu_phase_step (ph, s) == 2)
                ok = check_quartets (log_n, ph, block, ckks_cu_step_log_big (ph, s), touched);
              else
                ok = check_butterflies (log_n, ph, block, ckks_cu_phase_log_half (ph, s),
                                        touched);
            }
        }
      for (size_t i = 0; ok && i < n; i++)
        ok = loaded[i] == 1;
    }
  ok = ok && stages == log_n;
  ckks_free (loaded);
  if (!ok)
    snprintf (why, why_len, "the %s NTT schedule for N = %zu races or misses a coefficient",
              forward ? "forward" : "inverse", n);
  return ok;
}

static bool
compare (const uint64_t *got, const uint64_t *want, size_t n, const char *what, char *why,
         size_t why_len)
{
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i])
      {
        snprintf (why, why_len, "%s differs at word %zu of %zu: got %llu, want %llu", what, i,
                  n, (unsigned long long) got[i], (unsigned long long) want[i]);
        return false;
      }
  return true;
}

extern "C" bool
ckks_cuda_selfcheck_ntt (const CkksContext *ctx, uint64_t seed, char *why, size_t why_len)
{
  CkksCuTableData d;
  uint64_t *words = NULL;
  if (ckks_cu_table_data_build (ctx, &d, &words) != CKKS_OK)
    {
      snprintf (why, why_len, "could not build the tables");
      return false;
    }
  const uint32_t log_n = d.view.log_n, limbs = d.view.limbs;
  const size_t n = ctx->n;
  bool ok = check_schedule (log_n, true, why, why_len)
            && check_schedule (log_n, false, why, why_len);
  uint64_t *in = (uint64_t *) ckks_alloc (limbs * n * sizeof (uint64_t));
  uint64_t *fast = (uint64_t *) ckks_alloc (limbs * n * sizeof (uint64_t));
  uint64_t *cpu = (uint64_t *) ckks_alloc (n * sizeof (uint64_t));
  uint64_t *ref = (uint64_t *) ckks_alloc (n * sizeof (uint64_t));
  uint64_t *sh = (uint64_t *) ckks_alloc (CKKS_CUDA_CHUNK * sizeof (uint64_t));
  if (!in || !fast || !cpu || !ref || !sh)
    ok = false;
  uint64_t rs = seed;
  for (int forward = 1; ok && forward >= 0; forward--)
    {
      for (uint32_t i = 0; i < limbs; i++)
        fill_below (in + i * n, n, d.view.q[i], &rs);
      memcpy (fast, in, limbs * n * sizeof (uint64_t));
      /* all limbs as one batch of one polynomial, as a launch takes them */
      emulate_ntt (d.view, fast, 0, limbs, 1, limbs * n, forward, sh);
      for (uint32_t i = 0; ok && i < limbs; i++)
        {
          memcpy (cpu, in + i * n, n * sizeof (uint64_t));
          memcpy (ref, in + i * n, n * sizeof (uint64_t));
          if (forward)
            ckks_ntt_forward_limb (ctx, i, cpu);
          else
            ckks_ntt_inverse_limb (ctx, i, cpu);
          emulate_ntt_reference (d.view, ref, i, forward);
          ok = compare (fast + i * n, cpu, n, forward ? "fused forward NTT" : "fused inverse NTT",
                        why, why_len)
               && compare (ref, cpu, n,
                           forward ? "per-stage forward NTT" : "per-stage inverse NTT", why,
                           why_len);
        }
    }
  ckks_free (in);
  ckks_free (fast);
  ckks_free (cpu);
  ckks_free (ref);
  ckks_free (sh);
  ckks_free (words);
  if (!ok && why_len > 0 && why[0] == '\0')
    snprintf (why, why_len, "out of memory");
  return ok;
}

/* ---- mul_plain_accumulate ---- */

extern "C" bool
ckks_cuda_selfcheck_mul_plain_accumulate (const CkksContext *ctx, uint64_t seed,
                                          uint32_t n_in, uint32_t n_out, bool with_add,
                                          char *why, size_t why_len)
{
  const uint32_t limbs = ctx->params.n_moduli, log_n = ctx->params.log_n;
  const size_t n = ctx->n, words = limbs * n;
  /* strides with a gap, as a caller's batch may have */
  const size_t in_stride = words + 64, pt_stride = words + 128, out_stride = words + 32;
  if (n_in == 0 || n_out == 0 || limbs > CKKS_MAX_MODULI)
    {
      snprintf (why, why_len, "bad shape");
      return false;
    }
  uint64_t *a = (uint64_t *) ckks_alloc (2 * n_in * in_stride * sizeof (uint64_t));
  uint64_t *w = (uint64_t *) ckks_alloc (2 * n_out * n_in * pt_stride * sizeof (uint64_t));
  uint64_t *o = (uint64_t *) ckks_alloc (4 * n_out * out_stride * sizeof (uint64_t));
  bool ok = a && w && o;
  if (!ok)
    snprintf (why, why_len, "out of memory");
  uint64_t rs = seed;
  uint64_t *a0 = a, *a1 = a ? a + n_in * in_stride : NULL;
  uint64_t *wv = w, *ws = w ? w + n_out * n_in * pt_stride : NULL;
  uint64_t *out0 = o, *out1 = o ? o + n_out * out_stride : NULL;
  uint64_t *add0 = o ? o + 2 * n_out * out_stride : NULL;
  uint64_t *add1 = o ? o + 3 * n_out * out_stride : NULL;
  CkksCuMpaArgs args = {};
  if (ok)
    {
      for (size_t e = 0; e < n_in * in_stride; e++)
        {
          uint64_t q = ctx->params.moduli[(e % in_stride) / n % limbs];
          a0[e] = next_random (&rs) % q;
          a1[e] = next_random (&rs) % q;
        }
      for (size_t e = 0; e < n_out * n_in * pt_stride; e++)
        {
          uint64_t q = ctx->params.moduli[(e % pt_stride) / n % limbs];
          wv[e] = next_random (&rs) % q;
          ws[e] = ckks_shoup_precompute (wv[e], q);
        }
      for (size_t e = 0; e < 2 * n_out * out_stride; e++)
        add0[e] = next_random (&rs) % ctx->params.moduli[(e % out_stride) / n % limbs];
      args.a0 = a0;
      args.a1 = a1;
      args.in_stride = in_stride;
      args.n_in = n_in;
      args.w = wv;
      args.w_shoup = ws;
      args.pt_stride = pt_stride;
      args.n_out = n_out;
      args.add0 = with_add ? add0 : NULL;
      args.add1 = with_add ? add1 : NULL;
      args.out0 = out0;
      args.out1 = out1;
      args.out_stride = out_stride;
      args.log_n = log_n;
      args.n_limbs = limbs;
      for (uint32_t i = 0; i < limbs; i++)
        args.q[i] = ctx->params.moduli[i];
      for (uint32_t g = 0; g < ckks_cu_mpa_groups (n_out); g++)
        for (size_t e = 0; e < words; e++)
          ckks_cu_mpa_element (args, e, g);
    }
  /* the CPU: fully reduced products added one by one, as the evaluator's
   * chain of mul_fixed_pair calls */
  for (uint32_t b = 0; ok && b < n_out; b++)
    for (size_t e = 0; ok && e < words; e++)
      {
        const CkksModulus *m = &ctx->ntt[e / n].mod;
        size_t at = b * out_stride + e;
        uint64_t s0 = with_add ? add0[at] : 0, s1 = with_add ? add1[at] : 0;
        for (uint32_t k = 0; k < n_in; k++)
          {
            size_t pt = (b * n_in + k) * pt_stride + e;
            s0 = ckks_add_mod (s0, ckks_mul_mod (a0[k * in_stride + e], wv[pt], m), m->q);
            s1 = ckks_add_mod (s1, ckks_mul_mod (a1[k * in_stride + e], wv[pt], m), m->q);
          }
        if (out0[at] != s0 || out1[at] != s1)
          {
            snprintf (why, why_len,
                      "mul_plain_accumulate differs at output %u, word %zu (n_in %u, n_out %u)",
                      b, e, n_in, n_out);
            ok = false;
          }
      }
  ckks_free (a);
  ckks_free (w);
  ckks_free (o);
  return ok;
}

/* ---- rescale ---- */

/* The launch sequence of ckks_cuda_rescale, kernel by kernel. */
static void
emulate_rescale (const CkksCuTableData &d, uint64_t *data, uint32_t n_limbs, uint32_t count,
                 size_t stride, uint64_t *scratch, uint64_t *sh)
{
  const uint32_t l = n_limbs - 1, log_n = d.view.log_n;
  const size_t n = (size_t) 1 << log_n;
  uint64_t *last = data + l * n;
  emulate_ntt (d.view, last, l, 1, count, stride, false, sh);
  for (uint32_t i = 0; i < l; i++)
    {
      CkksCuRescaleIo io = ckks_cu_rescale_io (d, data, n_limbs, stride, i);
      emulate_ntt (d.view, scratch, i, 1, count, n, true, sh, &io);
    }
}

extern "C" bool
ckks_cuda_selfcheck_rescale (const CkksContext *ctx, uint64_t seed, uint32_t n_limbs,
                             char *why, size_t why_len)
{
  if (n_limbs < 2 || n_limbs > ctx->params.n_moduli)
    {
      snprintf (why, why_len, "bad limb count %u", n_limbs);
      return false;
    }
  CkksCuTableData d;
  uint64_t *words = NULL;
  CkksCiphertext *ct = NULL;
  const size_t n = ctx->n, stride = n_limbs * n;
  if (ckks_cu_table_data_build (ctx, &d, &words) != CKKS_OK
      || ckks_ciphertext_new (ctx, n_limbs, &ct) != CKKS_OK)
    {
      ckks_free (words);
      snprintf (why, why_len, "out of memory");
      return false;
    }
  uint64_t *data = (uint64_t *) ckks_alloc (2 * stride * sizeof (uint64_t));
  uint64_t *scratch = (uint64_t *) ckks_alloc (2 * n * sizeof (uint64_t));
  uint64_t *sh = (uint64_t *) ckks_alloc (CKKS_CUDA_CHUNK * sizeof (uint64_t));
  bool ok = data && scratch && sh;
  uint64_t rs = seed;
  if (ok)
    {
      for (uint32_t i = 0; i < n_limbs; i++)
        {
          fill_below (ct->c0 + i * n, n, ctx->params.moduli[i], &rs);
          fill_below (ct->c1 + i * n, n, ctx->params.moduli[i], &rs);
        }
      /* c0 and c1 as a batch of two polynomials */
      memcpy (data, ct->c0, stride * sizeof (uint64_t));
      memcpy (data + stride, ct->c1, stride * sizeof (uint64_t));
      emulate_rescale (d, data, n_limbs, 2, stride, scratch, sh);
      ok = ckks_rescale (ct) == CKKS_OK;
      ok = ok && compare (data, ct->c0, (n_limbs - 1) * n, "rescale of c0", why, why_len)
           && compare (data + stride, ct->c1, (n_limbs - 1) * n, "rescale of c1", why, why_len);
    }
  else
    snprintf (why, why_len, "out of memory");
  ckks_free (data);
  ckks_free (scratch);
  ckks_free (sh);
  ckks_free (words);
  ckks_ciphertext_free (ct);
  return ok;
}
