/* ckks-cuda-ntt.cuh: table view and butterfly schedule of the CUDA NTT.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The fast NTT runs in two phases of one kernel each, every block holding a
 * chunk of CKKS_CUDA_CHUNK words of one limb in shared memory:
 *  - COLUMNS: the stages whose butterflies span CKKS_CUDA_CHUNK words or
 *    more (only when N > CKKS_CUDA_CHUNK). A block takes B = CHUNK / R
 *    consecutive columns of the N = R x CHUNK matrix (row-major), all R rows;
 *    such stages pair rows within a column, so log2 R stages run in place.
 *  - CHUNK: the stages whose butterflies stay within a contiguous chunk.
 * Forward runs COLUMNS then CHUNK (spans shrink), inverse CHUNK then COLUMNS.
 * Within a phase, stages go two per barrier: each thread takes quartets
 * (x, x + h, x + 2h, x + 3h) into registers and does both stages' four
 * butterflies; an odd stage left over runs as plain pairs.
 *
 * Which pair, which twiddle, which shared-memory slot a (block, thread,
 * stage) handles is computed here by __host__ __device__ functions, and the
 * work of one thread in one stage is one function too: the kernels call
 * them between __syncthreads(), and the host self-check
 * (ckks-cuda-selfcheck.cu) calls them for every block, thread and stage in
 * the same phase order and compares the result bit for bit with the CPU.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "ckks-cuda-arith.cuh"
#include "ckks-cuda-elementwise.cuh"
#include "ckks-params.h"

#define CKKS_CUDA_LOG_CHUNK 12u
#define CKKS_CUDA_CHUNK (1u << CKKS_CUDA_LOG_CHUNK)
#define CKKS_CUDA_NTT_THREADS 512u
#define CKKS_CUDA_NTT_WORDS_PER_THREAD (CKKS_CUDA_CHUNK / CKKS_CUDA_NTT_THREADS)
#define CKKS_CUDA_NTT_BFLY_PER_THREAD (CKKS_CUDA_CHUNK / 2 / CKKS_CUDA_NTT_THREADS)

/* Per-limb NTT constants; the pointers are device memory for kernels and
 * host memory for the self-check. Twiddle tables are limb-major:
 * psi[limb * N + index], as CkksNttTables.psi_rev of each limb. */
typedef struct {
  const uint64_t *psi, *psi_shoup, *ipsi, *ipsi_shoup;
  uint32_t log_n, limbs;
  uint64_t q[CKKS_MAX_MODULI];
  uint64_t n_inv[CKKS_MAX_MODULI], n_inv_shoup[CKKS_MAX_MODULI];
  uint64_t w_n_inv[CKKS_MAX_MODULI], w_n_inv_shoup[CKKS_MAX_MODULI];
} CkksCudaNttView;

/* The constants one limb's transform in one direction needs. */
typedef struct {
  const uint64_t *tw, *tw_shoup;
  uint64_t q, n_inv, n_inv_shoup, w_n_inv, w_n_inv_shoup;
  uint32_t log_n;
} CkksCuLimbNtt;

CKKS_CUDA_HD CkksCuLimbNtt
ckks_cu_limb_ntt (const CkksCudaNttView &v, uint32_t limb, bool forward)
{
  CkksCuLimbNtt t;
  size_t base = (size_t) limb << v.log_n;
  t.tw = (forward ? v.psi : v.ipsi) + base;
  t.tw_shoup = (forward ? v.psi_shoup : v.ipsi_shoup) + base;
  t.q = v.q[limb];
  t.n_inv = v.n_inv[limb];
  t.n_inv_shoup = v.n_inv_shoup[limb];
  t.w_n_inv = v.w_n_inv[limb];
  t.w_n_inv_shoup = v.w_n_inv_shoup[limb];
  t.log_n = v.log_n;
  return t;
}

enum { CKKS_CU_LAYOUT_CHUNK = 0, CKKS_CU_LAYOUT_COLUMNS = 1 };

/* One kernel launch: @n_stages stages, the first with butterfly span
 * 2^log_half_first, the following halving (forward) or doubling (inverse). */
typedef struct {
  int layout;
  uint32_t log_half_first, n_stages;
  bool forward;
  bool reduce_out;   /* forward's last phase: reduce [0, 4q) to [0, q) */
  bool first_phase;
} CkksCuNttPhase;

/* The phases of a transform of size 2^log_n (12..16); returns how many. */
CKKS_CUDA_HD uint32_t
ckks_cu_ntt_plan (uint32_t log_n, bool forward, CkksCuNttPhase phases[2])
{
  uint32_t wide = log_n - CKKS_CUDA_LOG_CHUNK;    /* stages with span >= CHUNK */
  CkksCuNttPhase columns = { CKKS_CU_LAYOUT_COLUMNS, 0, wide, forward, false, false };
  CkksCuNttPhase chunk = { CKKS_CU_LAYOUT_CHUNK, 0, CKKS_CUDA_LOG_CHUNK, forward, forward,
                           false };
  uint32_t count = 0;
  if (forward)
    {
      columns.log_half_first = log_n - 1;
      chunk.log_half_first = CKKS_CUDA_LOG_CHUNK - 1;
      if (wide > 0)
        phases[count++] = columns;
      phases[count++] = chunk;
    }
  else
    {
      columns.log_half_first = CKKS_CUDA_LOG_CHUNK;
      chunk.log_half_first = 0;
      phases[count++] = chunk;
      if (wide > 0)
        phases[count++] = columns;
    }
  phases[0].first_phase = true;
  return count;
}

CKKS_CUDA_HD uint32_t
ckks_cu_phase_log_half (const CkksCuNttPhase &ph, uint32_t stage)
{
  return ph.forward ? ph.log_half_first - stage : ph.log_half_first + stage;
}

/* Blocks per limb of either phase. */
CKKS_CUDA_HD uint32_t
ckks_cu_ntt_blocks (uint32_t log_n)
{
  return 1u << (log_n - CKKS_CUDA_LOG_CHUNK);
}

/* The limb index held in shared-memory @slot of @block. */
CKKS_CUDA_HD uint32_t
ckks_cu_slot_to_index (uint32_t log_n, int layout, uint32_t block, uint32_t slot)
{
  if (layout == CKKS_CU_LAYOUT_CHUNK)
    return (block << CKKS_CUDA_LOG_CHUNK) | slot;
  uint32_t log_cols = 2 * CKKS_CUDA_LOG_CHUNK - log_n;     /* B = CHUNK / R */
  uint32_t row = slot >> log_cols, col = slot & ((1u << log_cols) - 1);
  return (row << CKKS_CUDA_LOG_CHUNK) | (block << log_cols) | col;
}

/* The t-th butterfly of a stage of span 2^log_half over 2^(log_half+1)
 * blocks: its first element (the second is span further). */
CKKS_CUDA_HD uint32_t
ckks_cu_butterfly_first (uint32_t t, uint32_t log_half)
{
  return ((t >> log_half) << (log_half + 1)) | (t & ((1u << log_half) - 1));
}

/* Twiddle index of the butterfly starting at limb index @x in the stage of
 * span 2^log_half: psi_rev[m + i] (forward, m = N / (2 span)) and
 * ipsi_rev[h + i] (inverse, h = the same), i the butterfly group. */
CKKS_CUDA_HD uint32_t
ckks_cu_twiddle_index (uint32_t log_n, uint32_t x, uint32_t log_half)
{
  return (1u << (log_n - log_half - 1)) + (x >> (log_half + 1));
}

/* log2 of a span of 2^log_half limb indices in shared-memory slots. */
CKKS_CUDA_HD uint32_t
ckks_cu_local_log_half (uint32_t log_n, int layout, uint32_t log_half)
{
  if (layout == CKKS_CU_LAYOUT_CHUNK)
    return log_half;
  /* a span of R' rows is R' * B slots */
  return log_half - CKKS_CUDA_LOG_CHUNK + (2 * CKKS_CUDA_LOG_CHUNK - log_n);
}

typedef struct {
  uint32_t lx, ly;   /* shared-memory slots */
  uint32_t tw;       /* twiddle index */
} CkksCuButterfly;

/* Local butterfly @lb (0 .. CHUNK/2) of @block in the stage of span
 * 2^log_half. */
CKKS_CUDA_HD CkksCuButterfly
ckks_cu_ntt_butterfly (uint32_t log_n, int layout, uint32_t block, uint32_t lb,
                       uint32_t log_half)
{
  uint32_t local_log_half = ckks_cu_local_log_half (log_n, layout, log_half);
  CkksCuButterfly b;
  b.lx = ckks_cu_butterfly_first (lb, local_log_half);
  b.ly = b.lx + (1u << local_log_half);
  b.tw = ckks_cu_twiddle_index (log_n,
                                ckks_cu_slot_to_index (log_n, layout, block, b.lx),
                                log_half);
  return b;
}

/* One butterfly of a transform, on any memory. */
CKKS_CUDA_HD void
ckks_cu_ntt_apply (uint64_t *x, uint64_t *y, uint32_t tw, uint32_t log_half,
                   const CkksCuLimbNtt &t, bool forward)
{
  if (forward)
    ckks_cu_ntt_fwd_butterfly (x, y, t.tw[tw], t.tw_shoup[tw], t.q);
  else if (log_half == t.log_n - 1)
    ckks_cu_ntt_inv_last_butterfly (x, y, t.n_inv, t.n_inv_shoup, t.w_n_inv,
                                    t.w_n_inv_shoup, t.q);
  else
    ckks_cu_ntt_inv_butterfly (x, y, t.tw[tw], t.tw_shoup[tw], t.q);
}

/* Thread @thread's share of loading a block's chunk into @sh. */
CKKS_CUDA_HD void
ckks_cu_ntt_load_thread (uint64_t *sh, const uint64_t *limb_data, uint32_t log_n,
                         int layout, uint32_t block, uint32_t thread)
{
  for (uint32_t k = 0; k < CKKS_CUDA_NTT_WORDS_PER_THREAD; k++)
    {
      uint32_t slot = thread + k * CKKS_CUDA_NTT_THREADS;
      sh[slot] = limb_data[ckks_cu_slot_to_index (log_n, layout, block, slot)];
    }
}

CKKS_CUDA_HD void
ckks_cu_ntt_store_thread (uint64_t *limb_data, const uint64_t *sh, uint32_t log_n,
                          int layout, uint32_t block, uint32_t thread, bool reduce,
                          uint64_t q)
{
  for (uint32_t k = 0; k < CKKS_CUDA_NTT_WORDS_PER_THREAD; k++)
    {
      uint32_t slot = thread + k * CKKS_CUDA_NTT_THREADS;
      uint64_t v = sh[slot];
      limb_data[ckks_cu_slot_to_index (log_n, layout, block, slot)]
        = reduce ? ckks_cu_reduce_4q (v, q) : v;
    }
}

/* Rescale fused into a forward transform (see ckks_cuda_rescale): the
 * first phase loads the lifted last limb instead of the data, the last
 * phase stores finish(destination, result) into the destination limb
 * instead of the data. Polynomial p's limbs at last + p * last_stride and
 * dest + p * dest_stride. */
typedef struct {
  const uint64_t *last;
  size_t last_stride;
  uint64_t *dest;
  size_t dest_stride;
  uint64_t q_last, ratio_lo, ratio_hi, inv, inv_shoup;
} CkksCuRescaleIo;

CKKS_CUDA_HD void
ckks_cu_ntt_load_lift_thread (uint64_t *sh, const CkksCuRescaleIo &io, uint32_t poly,
                              uint32_t log_n, int layout, uint32_t block, uint32_t thread,
                              uint64_t q)
{
  const uint64_t *src = io.last + poly * io.last_stride;
  for (uint32_t k = 0; k < CKKS_CUDA_NTT_WORDS_PER_THREAD; k++)
    {
      uint32_t slot = thread + k * CKKS_CUDA_NTT_THREADS;
      sh[slot] = ckks_cu_rescale_lift (src[ckks_cu_slot_to_index (log_n, layout, block, slot)],
                                       io.q_last, q, io.ratio_lo, io.ratio_hi);
    }
}

CKKS_CUDA_HD void
ckks_cu_ntt_store_finish_thread (const CkksCuRescaleIo &io, const uint64_t *sh, uint32_t poly,
                                 uint32_t log_n, int layout, uint32_t block, uint32_t thread,
                                 uint64_t q)
{
  uint64_t *dst = io.dest + poly * io.dest_stride;
  for (uint32_t k = 0; k < CKKS_CUDA_NTT_WORDS_PER_THREAD; k++)
    {
      uint32_t slot = thread + k * CKKS_CUDA_NTT_THREADS;
      uint64_t *p = dst + ckks_cu_slot_to_index (log_n, layout, block, slot);
      *p = ckks_cu_rescale_finish (*p, ckks_cu_reduce_4q (sh[slot], q), io.inv, io.inv_shoup, q);
    }
}

/* Thread @thread's butterflies of one stage of a phase. Every slot of the
 * block is touched by exactly one butterfly of the stage (checked by the
 * self-check), so the threads of a stage never race. */
CKKS_CUDA_HD void
ckks_cu_ntt_stage_thread (uint64_t *sh, const CkksCuLimbNtt &t, const CkksCuNttPhase &ph,
                          uint32_t block, uint32_t thread, uint32_t log_half)
{
  for (uint32_t k = 0; k < CKKS_CUDA_NTT_BFLY_PER_THREAD; k++)
    {
      uint32_t lb = thread + k * CKKS_CUDA_NTT_THREADS;
      CkksCuButterfly b = ckks_cu_ntt_butterfly (t.log_n, ph.layout, block, lb, log_half);
      ckks_cu_ntt_apply (sh + b.lx, sh + b.ly, b.tw, log_half, t, ph.forward);
    }
}

/* Two consecutive stages, spans 2h and h (h = 2^(log_big - 1)), restricted
 * to the quartet x, x + h, x + 2h, x + 3h: the first stage pairs (0, 2) and
 * (1, 3) with one twiddle, the second (0, 1) and (2, 3) with two. One
 * thread does all four butterflies in registers: two stages per barrier. */
typedef struct {
  uint32_t slot[4];
  uint32_t tw_big, tw_small0, tw_small1;
} CkksCuQuartet;

/* Local quartet @lq (0 .. CHUNK/4) of @block for the stage pair whose
 * larger span is 2^log_big. */
CKKS_CUDA_HD CkksCuQuartet
ckks_cu_ntt_quartet (uint32_t log_n, int layout, uint32_t block, uint32_t lq,
                     uint32_t log_big)
{
  uint32_t local_small = ckks_cu_local_log_half (log_n, layout, log_big) - 1;
  uint32_t h = 1u << local_small;
  CkksCuQuartet r;
  r.slot[0] = ((lq >> local_small) << (local_small + 2)) | (lq & (h - 1));
  r.slot[1] = r.slot[0] + h;
  r.slot[2] = r.slot[0] + 2 * h;
  r.slot[3] = r.slot[0] + 3 * h;
  uint32_t x = ckks_cu_slot_to_index (log_n, layout, block, r.slot[0]);
  r.tw_big = ckks_cu_twiddle_index (log_n, x, log_big);
  r.tw_small0 = ckks_cu_twiddle_index (log_n, x, log_big - 1);
  r.tw_small1 = ckks_cu_twiddle_index (log_n, x + (2u << (log_big - 1)), log_big - 1);
  return r;
}

/* How many stages the step starting at stage @s of @ph runs: two while
 * two remain, then one. */
CKKS_CUDA_HD uint32_t
ckks_cu_phase_step (const CkksCuNttPhase &ph, uint32_t s)
{
  return ph.n_stages - s >= 2 ? 2 : 1;
}

/* The larger span (log2) of the stage pair starting at stage @s: the first
 * stage's going forward (spans shrink), the second's going back. */
CKKS_CUDA_HD uint32_t
ckks_cu_step_log_big (const CkksCuNttPhase &ph, uint32_t s)
{
  return ph.forward ? ckks_cu_phase_log_half (ph, s) : ckks_cu_phase_log_half (ph, s + 1);
}

CKKS_CUDA_HD void
ckks_cu_ntt_quartet_thread (uint64_t *sh, const CkksCuLimbNtt &t, const CkksCuNttPhase &ph,
                            uint32_t block, uint32_t thread, uint32_t log_big)
{
  for (uint32_t k = 0; k < CKKS_CUDA_NTT_BFLY_PER_THREAD / 2; k++)
    {
      uint32_t lq = thread + k * CKKS_CUDA_NTT_THREADS;
      CkksCuQuartet qt = ckks_cu_ntt_quartet (t.log_n, ph.layout, block, lq, log_big);
      uint64_t v[4];
      for (int j = 0; j < 4; j++)
        v[j] = sh[qt.slot[j]];
      if (ph.forward)
        {
          ckks_cu_ntt_apply (&v[0], &v[2], qt.tw_big, log_big, t, true);
          ckks_cu_ntt_apply (&v[1], &v[3], qt.tw_big, log_big, t, true);
          ckks_cu_ntt_apply (&v[0], &v[1], qt.tw_small0, log_big - 1, t, true);
          ckks_cu_ntt_apply (&v[2], &v[3], qt.tw_small1, log_big - 1, t, true);
        }
      else
        {
          ckks_cu_ntt_apply (&v[0], &v[1], qt.tw_small0, log_big - 1, t, false);
          ckks_cu_ntt_apply (&v[2], &v[3], qt.tw_small1, log_big - 1, t, false);
          ckks_cu_ntt_apply (&v[0], &v[2], qt.tw_big, log_big, t, false);
          ckks_cu_ntt_apply (&v[1], &v[3], qt.tw_big, log_big, t, false);
        }
      for (int j = 0; j < 4; j++)
        sh[qt.slot[j]] = v[j];
    }
}

/* Thread @thread's share of the step starting at stage @s (one or two
 * stages, ckks_cu_phase_step); a barrier must follow. */
CKKS_CUDA_HD void
ckks_cu_ntt_step_thread (uint64_t *sh, const CkksCuLimbNtt &t, const CkksCuNttPhase &ph,
                         uint32_t block, uint32_t thread, uint32_t s)
{
  if (ckks_cu_phase_step (ph, s) == 2)
    ckks_cu_ntt_quartet_thread (sh, t, ph, block, thread, ckks_cu_step_log_big (ph, s));
  else
    ckks_cu_ntt_stage_thread (sh, t, ph, block, thread, ckks_cu_phase_log_half (ph, s));
}
