/* lm-cuda-forward.c: the layer loop of every Qwen architecture on the GPU
 * (the device counterpart of forward.c, forward-attn.c, forward-deltanet.c
 * and forward-ffn.c, with the same optional parts: q/k/v bias, q/k norm,
 * output gate, shared expert), and the decode step recorded as a CUDA graph.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Every launch goes to the session's stream; the host waits only where it
 * needs a result: the logits (or the residual rows for the CPU layers) at the
 * end, the expert choice of a prefill batch (to group its rows by expert),
 * the input of a host LoRA hook (a device hook gets device memory and the
 * stream, and nobody waits), and the rows a debug observer asks for. A decode
 * step without a debug observer or pooling is recorded once as CUDA graphs
 * and replayed; the token and the position travel in pinned host memory
 * that the graph's first copies read, so a replay needs no new recording.
 * LoRA hooks cut the step into segments: the launches up to the first
 * hooked module are one graph, the host calls the hook (which enqueues its
 * own work, or waits for h, as without graphs), then the next graph runs,
 * and so on. So a hook keeps its per-token freedom (HE-LoRA draws a fresh
 * seed per token) while the step's some hundred launches stay recorded.
 */
#include <stdlib.h>
#include <string.h>

#include "lm-cuda-gpu.h"
#include "lm-cuda-matvec.h"
#include "lm-cuda-ops.h"
#include "lora-private.h"

/* Returns from the calling function with any status but LM_OK. */
#define TRY(expr)                 \
  do                              \
    {                             \
      LmStatus try_st_ = (expr);  \
      if (try_st_ != LM_OK)       \
        return try_st_;           \
    }                             \
  while (0)

/* The products' activation mode: the session's (forward.c), so that both
 * backends round the activations alike. The kernels keep f32 activations
 * for F32/F16/BF16 weights in either mode, as the CPU does. */
static LmCudaActMode
act_mode (const LmSession *s)
{
  return s->act_mode == LM_ACT_F32 ? LM_CUDA_ACT_F32 : LM_CUDA_ACT_Q8;
}

static LmStatus
linear (LmSession *s, const LmWeight *w, const float *x, uint32_t n, float *y)
{
  LmGpuSession *g = s->gpu;
  LmCudaActMode mode = act_mode (s);
  return n == 1 ? lm_cuda_matvec_ex (g->stream, mode, w->type, w->data, w->n_in, w->n_out, x, y,
                                     false)
                : lm_cuda_matmul_ex (g->stream, mode, w->type, w->data, w->n_in, w->n_out, x, n,
                                     y);
}

/* u = A·h through the host hook: h to the host, u back to the device (the
 * path of a module without a device hook). */
static LmStatus
lora_hook (LmSession *s, size_t index, const LmLoraModule *mod, const float *x, uint32_t n)
{
  LmGpuSession *g = s->gpu;
  const LmHookSlot *hook = &s->hooks[index];
  TRY (lm_cuda_rt_copy (g->stream, g->lora_h, x, (size_t) n * mod->d_in * sizeof (float)));
  TRY (lm_cuda_rt_sync (g->stream));
  LmLoraHookCall call = { index, mod, s->pos, n, &s->timings, s->pool };
  double t0 = lm_time_ms ();
  LmStatus st = hook->fn (&call, g->lora_h, s->lora_u, hook->user_data);
  s->excluded_ms += lm_time_ms () - t0;
  if (st != LM_OK)
    return LM_ERR_HOOK;
  return lm_cuda_rt_copy (g->stream, g->lora_u, s->lora_u,
                          (size_t) n * mod->rank * sizeof (float));
}

/* u = A·h through the device hook: h and u stay in device memory, and the
 * host does not wait (the hook orders its work on the session's stream). */
static LmStatus
lora_device_hook (LmSession *s, size_t index, const LmLoraModule *mod, const float *x,
                  uint32_t n)
{
  LmGpuSession *g = s->gpu;
  const LmHookSlot *hook = &s->hooks[index];
  LmLoraHookCall call = { index, mod, s->pos, n, &s->timings, s->pool };
  double t0 = lm_time_ms ();
  LmStatus st = hook->device_fn (&call, x, g->lora_u, (void *) g->stream, hook->device_data);
  s->excluded_ms += lm_time_ms () - t0;
  return st == LM_OK ? LM_OK : LM_ERR_HOOK;
}

static LmStatus
call_hook (LmSession *s, size_t index, const float *x, uint32_t n)
{
  const LmLoraModule *mod = &s->lora->modules[index];
  return s->hooks[index].device_fn != NULL ? lora_device_hook (s, index, mod, x, n)
                                           : lora_hook (s, index, mod, x, n);
}

/* Recording: closes the segment being captured, to be followed by the hook
 * of module @module on @x (-1: the step's end), and runs it, since the hook
 * that follows reads its results. */
static LmStatus
segment_close (LmSession *s, int32_t module, const float *x)
{
  LmGpuSession *g = s->gpu;
  LmCudaGraph graph = NULL;
  LmStatus st = lm_cuda_rt_capture_end (g->stream, &graph);
  g->recording = false;
  if (st != LM_OK)
    return st;
  LmGpuSegment *grown = realloc (g->segments, (g->n_segments + 1) * sizeof *grown);
  if (grown == NULL)
    {
      lm_cuda_rt_graph_free (graph);
      return LM_ERR_NO_MEMORY;
    }
  g->segments = grown;
  g->segments[g->n_segments++] = (LmGpuSegment) { graph, module, x };
  return lm_cuda_rt_graph_launch (graph, g->stream);
}

static LmStatus
segment_open (LmSession *s)
{
  LmGpuSession *g = s->gpu;
  TRY (lm_cuda_rt_capture_begin (g->stream));
  g->recording = true;
  return LM_OK;
}

/* u = A·x through the hook of module @index, between two segments when
 * recording. */
static LmStatus
run_hook (LmSession *s, size_t index, const float *x, uint32_t n)
{
  bool recording = s->gpu->recording;
  if (recording)
    TRY (segment_close (s, (int32_t) index, x));
  TRY (call_hook (s, index, x, n));
  return recording ? segment_open (s) : LM_OK;
}

/* The adapter's module of @kind in layer @il, or -1. */
static int32_t
module_index (const LmSession *s, uint32_t il, LmModuleKind kind)
{
  return s->module_slot[il * LM_N_MODULE_KINDS + kind];
}

/* y += scale·B·(A·x) for the module of @kind in layer @il, if any (scale is
 * folded into the device copy of B). */
static LmStatus
lora (LmSession *s, uint32_t il, LmModuleKind kind, const float *x, uint32_t n, float *y)
{
  int32_t index = module_index (s, il, kind);
  if (index < 0)
    return LM_OK;
  LmGpuSession *g = s->gpu;
  const LmLoraModule *mod = &s->lora->modules[index];
  if (s->hooks[index].device_fn != NULL || s->hooks[index].fn != NULL)
    TRY (run_hook (s, (size_t) index, x, n));
  else
    {
      LmWeight a = { g->lora_a[index], LM_TYPE_F32, mod->d_in, mod->rank, 1, 0 };
      TRY (linear (s, &a, x, n, g->lora_u));
    }
  LmWeight b = { g->lora_b[index], LM_TYPE_F32, mod->rank, mod->d_out, 1, 0 };
  if (n == 1)
    return lm_cuda_matvec_ex (g->stream, act_mode (s), b.type, b.data, b.n_in, b.n_out,
                              g->lora_u, y, true);
  TRY (linear (s, &b, g->lora_u, n, g->lora_y));
  return lm_cuda_add (g->stream, y, g->lora_y, (size_t) n * mod->d_out);
}

static LmStatus
project (LmSession *s, uint32_t il, LmModuleKind kind, const LmWeight *w, const float *x,
         uint32_t n, float *y)
{
  TRY (linear (s, w, x, n, y));
  return lora (s, il, kind, x, n, y);
}

/* Whether two products of one input can share a launch: same type and
 * shape. */
static bool
pairable (const LmWeight *a, const LmWeight *b)
{
  return a->type == b->type && a->n_in == b->n_in && a->n_out == b->n_out
         && a->mat_stride == b->mat_stride;
}

/* Decode: @a h into @ya and @b h into @yb in one launch, for the k experts
 * of @sel (NULL: the one matrix of each). */
static LmStatus
pair_decode (LmSession *s, const LmWeight *a, const LmWeight *b, const int32_t *sel, uint32_t k,
             float *ya, float *yb)
{
  LmGpuSession *g = s->gpu;
  LmCudaProduct p = { a->type, a->data, b->data, a->mat_stride, sel, k, a->n_in, a->n_out, g->h,
                      NULL, 0, ya, yb };
  return lm_cuda_matvec_product (g->stream, act_mode (s), &p);
}

/* project() of modules @ka (weights @a, into @ya) and @kb of h, the two
 * products in one launch where they can share it. */
static LmStatus
project_pair (LmSession *s, uint32_t il, LmModuleKind ka, const LmWeight *a, float *ya,
              LmModuleKind kb, const LmWeight *b, float *yb, uint32_t n)
{
  LmGpuSession *g = s->gpu;
  if (n != 1 || !pairable (a, b))
    {
      TRY (project (s, il, ka, a, g->h, n, ya));
      return project (s, il, kb, b, g->h, n, yb);
    }
  TRY (pair_decode (s, a, b, NULL, 1, ya, yb));
  TRY (lora (s, il, ka, g->h, n, ya));
  return lora (s, il, kb, g->h, n, yb);
}

/* Hands @n device rows of the residual stream to the test observer. */
static LmStatus
debug_rows (LmSession *s, uint32_t layer, int which, uint32_t n, const float *rows)
{
  if (s->debug_fn == NULL)
    return LM_OK;
  LmGpuSession *g = s->gpu;
  TRY (lm_cuda_rt_copy (g->stream, s->h, rows,
                        (size_t) n * s->model->info.n_embd * sizeof (float)));
  TRY (lm_cuda_rt_sync (g->stream));
  s->debug_fn (s->debug_data, layer, which, s->pos, n, s->h);
  return LM_OK;
}

/* Adds the bias rows of q, k and v (Qwen2) to the @n new tokens. */
static LmStatus
add_qkv_bias (LmSession *s, const LmLayer *l, uint32_t n)
{
  LmGpuSession *g = s->gpu;
  const LmModelInfo *in = &s->model->info;
  uint32_t qd = in->head_dim * in->n_head, kvd = in->head_dim * in->n_head_kv;
  TRY (lm_cuda_add_rows (g->stream, g->a1, l->bq, n, qd));
  TRY (lm_cuda_add_rows (g->stream, g->a2, l->bk, n, kvd));
  return lm_cuda_add_rows (g->stream, g->a3, l->bv, n, kvd);
}

static LmStatus
full_attention (LmSession *s, uint32_t il, uint32_t n)
{
  LmGpuSession *g = s->gpu;
  const LmLayer *l = &g->dm->layers[il];
  const LmModelInfo *in = &s->model->info;
  uint32_t hd = in->head_dim, nh = in->n_head, nkv = in->n_head_kv, kvd = hd * nkv;
  /* q heads sit every qs floats (in gated attention each is followed by its gate). */
  uint32_t qs = lm_q_stride (in);
  float *k_cache = g->kv_k + (size_t) l->state_index * s->n_ctx * kvd;
  float *v_cache = g->kv_v + (size_t) l->state_index * s->n_ctx * kvd;
  LmCudaStream st = g->stream;
  TRY (project (s, il, LM_MODULE_ATTN_Q, &l->wq, g->h, n, g->a1));
  TRY (project (s, il, LM_MODULE_ATTN_K, &l->wk, g->h, n, g->a2));
  TRY (project (s, il, LM_MODULE_ATTN_V, &l->wv, g->h, n, g->a3));
  if (l->bq != NULL)
    TRY (add_qkv_bias (s, l, n));
  if (l->q_norm != NULL)
    TRY (lm_cuda_rms_norm (st, g->a1, qs, l->q_norm, in->rms_eps, n * nh, hd, g->a1, qs));
  if (l->k_norm != NULL)
    TRY (lm_cuda_rms_norm (st, g->a2, hd, l->k_norm, in->rms_eps, n * nkv, hd, g->a2, hd));
  TRY (lm_cuda_rope (st, g->a1, (size_t) qs * nh, qs, nh, n, g->pos, in->n_rot, in->rope_base,
                     in->rope_sections));
  TRY (lm_cuda_rope (st, g->a2, kvd, hd, nkv, n, g->pos, in->n_rot, in->rope_base,
                     in->rope_sections));
  TRY (lm_cuda_kv_append (st, g->a2, g->a3, kvd, n, g->pos, k_cache, v_cache));
  /* Decode has one query row: the split form spreads the positions over
   * blocks (n_head_kv blocks alone would leave the GPU idle). */
  if (n == 1)
    TRY (lm_cuda_attention_split (st, g->a1, in->attn_gated, k_cache, v_cache, nh, nkv, hd, 1,
                                  g->pos, s->n_ctx, g->attn_scratch, g->a4));
  else
    TRY (lm_cuda_attention (st, g->a1, in->attn_gated, k_cache, v_cache, nh, nkv, hd, n, g->pos,
                            s->n_ctx, g->a4));
  return project (s, il, LM_MODULE_ATTN_OUTPUT, &l->wo, g->a4, n, g->o);
}

/* ---- branches (TENSAFE_CUDA_BRANCHES=1) ----
 * In decode, products of a layer that do not depend on each other can run
 * at once: the launches of a branch go to the side stream, which starts
 * after everything enqueued so far, and the stream waits for them where
 * their results are read. Not where a LoRA hook sits in the forked part:
 * a hook cuts a recorded segment, and a capture cannot end forked. */

static bool
hooked (const LmSession *s, uint32_t il, LmModuleKind kind)
{
  int32_t index = module_index (s, il, kind);
  return index >= 0 && s->hooks != NULL
         && (s->hooks[index].fn != NULL || s->hooks[index].device_fn != NULL);
}

/* Whether layer @il may fork around modules @first .. @last in decode. */
static bool
can_branch (const LmSession *s, uint32_t il, LmModuleKind first, LmModuleKind last, uint32_t n)
{
  if (n != 1 || s->gpu->side == NULL)
    return false;
  for (int kind = first; kind <= (int) last; kind++)
    if (hooked (s, il, (LmModuleKind) kind))
      return false;
  return true;
}

static void
swap_streams (LmGpuSession *g)
{
  LmCudaStream stream = g->stream;
  g->stream = g->side;
  g->side = stream;
}

typedef LmStatus (*BranchFn) (LmSession *s, uint32_t il, uint32_t n);

/* Enqueues @fn (which launches on g->stream) on the side stream. */
static LmStatus
branch (LmSession *s, uint32_t il, uint32_t n, BranchFn fn)
{
  LmGpuSession *g = s->gpu;
  TRY (lm_cuda_rt_after (g->side, g->stream, g->fork_event));
  swap_streams (g);
  LmStatus st = fn (s, il, n);
  swap_streams (g);
  return st;
}

/* The stream waits for the side stream's branch. */
static LmStatus
join (LmSession *s)
{
  LmGpuSession *g = s->gpu;
  return lm_cuda_rt_after (g->stream, g->side, g->join_event);
}

/* The output gate z and the decay inputs alpha and beta of a DeltaNet layer. */
static LmStatus
deltanet_gates (LmSession *s, uint32_t il, uint32_t n)
{
  LmGpuSession *g = s->gpu;
  const LmLayer *l = &g->dm->layers[il];
  float *alpha = g->ab, *beta = g->ab + (size_t) s->n_batch * s->model->info.ssm_heads;
  TRY (project (s, il, LM_MODULE_ATTN_GATE, &l->wgate, g->h, n, g->a2));
  return project_pair (s, il, LM_MODULE_SSM_ALPHA, &l->walpha, alpha, LM_MODULE_SSM_BETA,
                       &l->wbeta, beta, n);
}

/* In decode with branches, the gates run beside qkv and the conv. */
static LmStatus
linear_attention (LmSession *s, uint32_t il, uint32_t n)
{
  LmGpuSession *g = s->gpu;
  const LmLayer *l = &g->dm->layers[il];
  const LmModelInfo *in = &s->model->info;
  uint32_t K = in->ssm_conv_kernel, S = in->ssm_state, Hv = in->ssm_heads, C = lm_conv_dim (in);
  float *conv_state = g->conv_state + (size_t) l->state_index * (K - 1) * C;
  float *state = g->ssm_state + (size_t) l->state_index * Hv * S * S;
  float *alpha = g->ab, *beta = g->ab + (size_t) s->n_batch * Hv;
  bool forked = can_branch (s, il, LM_MODULE_ATTN_QKV, LM_MODULE_SSM_BETA, n);
  if (forked)
    TRY (branch (s, il, n, deltanet_gates));
  TRY (project (s, il, LM_MODULE_ATTN_QKV, &l->wqkv, g->h, n, g->a1));
  if (!forked)
    TRY (deltanet_gates (s, il, n));
  TRY (lm_cuda_causal_conv (g->stream, g->a1, l->conv, K, C, n, conv_state, g->a3));
  if (forked)
    TRY (join (s));
  LmCudaDeltaShape shape = { Hv, in->ssm_groups, S, in->rms_eps, l->ssm_a, l->dt_bias,
                             l->ssm_norm };
  TRY (lm_cuda_delta_rule (g->stream, &shape, g->a3, C, g->a2, alpha, beta, Hv, n, state, g->a4));
  return project (s, il, LM_MODULE_SSM_OUT, &l->wssm_out, g->a4, n, g->o);
}

/* Decode: y = down (SiLU(gate) * up) for the k experts of @sel (NULL: the
 * one matrix), the SwiGLU folded into the product's input. */
static LmStatus
down_swiglu_decode (LmSession *s, const LmWeight *down, const int32_t *sel, uint32_t k,
                    const float *gate, const float *up, float *y)
{
  LmGpuSession *g = s->gpu;
  LmCudaProduct p = { down->type, down->data, NULL, down->mat_stride, sel, k, down->n_in,
                      down->n_out, gate, up, down->n_in, y, NULL };
  return lm_cuda_matvec_product (g->stream, act_mode (s), &p);
}

/* o = down(SiLU(gate h) * up h), the modules @gate_kind and the next two.
 * Decode takes two launches where it can: gate and up together, and the
 * SwiGLU inside the down product (unless a LoRA module needs its input). */
static LmStatus
swiglu_mlp (LmSession *s, uint32_t il, LmModuleKind gate_kind, const LmWeight *gate,
            const LmWeight *up, const LmWeight *down, uint32_t n)
{
  LmGpuSession *g = s->gpu;
  TRY (project_pair (s, il, gate_kind, gate, g->a1, gate_kind + 1, up, g->a2, n));
  if (n == 1 && module_index (s, il, gate_kind + 2) < 0)
    return down_swiglu_decode (s, down, NULL, 1, g->a1, g->a2, g->o);
  TRY (lm_cuda_swiglu (g->stream, g->a1, g->a2, (size_t) n * gate->n_out));
  return project (s, il, gate_kind + 2, down, g->a1, n, g->o);
}

/* Decode: the k selected experts, the selection in device memory; gate and
 * up in one launch, the SwiGLU inside the down product. */
static LmStatus
experts_decode (LmSession *s, const LmLayer *l)
{
  LmGpuSession *g = s->gpu;
  const LmModelInfo *in = &s->model->info;
  uint32_t E = in->n_embd, k = in->n_expert_used, nf = in->n_ff_exp;
  const LmWeight *wg = &l->exp_gate, *wu = &l->exp_up, *wd = &l->exp_down;
  LmCudaActMode mode = act_mode (s);
  if (pairable (wg, wu))
    TRY (pair_decode (s, wg, wu, g->sel, k, g->moe_g, g->moe_u));
  else
    {
      TRY (lm_cuda_matvec_experts_ex (g->stream, mode, wg->type, wg->data, wg->mat_stride, E, nf,
                                      g->sel, k, g->h, 0, g->moe_g));
      TRY (lm_cuda_matvec_experts_ex (g->stream, mode, wu->type, wu->data, wu->mat_stride, E, nf,
                                      g->sel, k, g->h, 0, g->moe_u));
    }
  return down_swiglu_decode (s, wd, g->sel, k, g->moe_g, g->moe_u, g->moe_y);
}

/* Prefill: the (token, slot) pairs grouped by expert on the host (a counting
 * sort of the downloaded choice), then each used expert's rows at once. */
static LmStatus
group_by_expert (LmSession *s, uint32_t n, uint32_t *first)
{
  LmGpuSession *g = s->gpu;
  const LmModelInfo *in = &s->model->info;
  uint32_t k = in->n_expert_used, slots = n * k, ne = in->n_expert;
  size_t cap = (size_t) s->n_batch * k;
  int32_t *sel = g->h_rows, *rows_x = g->h_rows + cap, *rows_y = g->h_rows + 2 * cap;
  TRY (lm_cuda_rt_copy (g->stream, sel, g->sel, slots * sizeof (int32_t)));
  TRY (lm_cuda_rt_sync (g->stream));
  memset (first, 0, (ne + 1) * sizeof *first);
  for (uint32_t i = 0; i < slots; i++)
    {
      if (sel[i] < 0 || (uint32_t) sel[i] >= ne)
        return LM_ERR_DEVICE;   /* the router kernel misbehaved */
      first[sel[i] + 1]++;
    }
  for (uint32_t e = 0; e < ne; e++)
    first[e + 1] += first[e];
  uint32_t *fill = first + ne + 1;   /* [ne] write positions */
  memcpy (fill, first, ne * sizeof *fill);
  for (uint32_t i = 0; i < slots; i++)
    {
      uint32_t at = fill[sel[i]]++;
      rows_x[at] = (int32_t) (i / k);
      rows_y[at] = (int32_t) i;
    }
  TRY (lm_cuda_rt_copy (g->stream, g->rows_x, rows_x, slots * sizeof (int32_t)));
  return lm_cuda_rt_copy (g->stream, g->rows_y, rows_y, slots * sizeof (int32_t));
}

static LmStatus
experts_batch (LmSession *s, const LmLayer *l, uint32_t n)
{
  LmGpuSession *g = s->gpu;
  const LmModelInfo *in = &s->model->info;
  uint32_t E = in->n_embd, k = in->n_expert_used, nf = in->n_ff_exp;
  uint32_t *first = g->h_first;
  const LmWeight *wg = &l->exp_gate, *wu = &l->exp_up, *wd = &l->exp_down;
  LmCudaActMode mode = act_mode (s);
  TRY (group_by_expert (s, n, first));
  for (uint32_t e = 0; e < in->n_expert; e++)
    {
      uint32_t count = first[e + 1] - first[e];
      const int32_t *rx = g->rows_x + first[e], *ry = g->rows_y + first[e];
      if (count == 0)
        continue;
      TRY (lm_cuda_matmul_rows_ex (g->stream, mode, wg->type, wg->data, wg->mat_stride, e, E, nf,
                                   g->h, rx, ry, count, g->moe_g));
      TRY (lm_cuda_matmul_rows_ex (g->stream, mode, wu->type, wu->data, wu->mat_stride, e, E, nf,
                                   g->h, rx, ry, count, g->moe_u));
    }
  TRY (lm_cuda_swiglu (g->stream, g->moe_g, g->moe_u, (size_t) n * k * nf));
  for (uint32_t e = 0; e < in->n_expert; e++)
    {
      uint32_t count = first[e + 1] - first[e];
      const int32_t *ry = g->rows_y + first[e];
      if (count == 0)
        continue;
      TRY (lm_cuda_matmul_rows_ex (g->stream, mode, wd->type, wd->data, wd->mat_stride, e, nf, E,
                                   g->moe_g, ry, ry, count, g->moe_y));
    }
  return LM_OK;
}

static LmStatus
shared_expert (LmSession *s, uint32_t il, uint32_t n)
{
  const LmLayer *l = &s->gpu->dm->layers[il];
  return swiglu_mlp (s, il, LM_MODULE_FFN_GATE_SHEXP, &l->sh_gate, &l->sh_up, &l->sh_down, n);
}

static LmStatus
moe_ffn (LmSession *s, uint32_t il, uint32_t n)
{
  LmGpuSession *g = s->gpu;
  const LmLayer *l = &g->dm->layers[il];
  const LmModelInfo *in = &s->model->info;
  uint32_t k = in->n_expert_used;
  /* A shared expert leaves its output in o for the combine to scale; without
   * one the combine writes o afresh. With branches it runs beside the
   * routing and the routed experts. */
  bool shared = l->sh_gate.data != NULL;
  bool forked = shared && can_branch (s, il, LM_MODULE_FFN_GATE_SHEXP, LM_MODULE_FFN_DOWN_SHEXP, n);
  if (forked)
    TRY (branch (s, il, n, shared_expert));
  TRY (linear (s, &l->router, g->h, n, g->router));
  TRY (lm_cuda_moe_route (g->stream, g->router, n, in->n_expert, k, g->sel, g->sel_w));
  TRY (n == 1 ? experts_decode (s, l) : experts_batch (s, l, n));
  if (shared && !forked)
    TRY (shared_expert (s, il, n));
  if (forked)
    TRY (join (s));
  return lm_cuda_moe_combine (g->stream, g->moe_y, g->sel_w, l->shexp_gate_inp, g->h, n, k,
                              in->n_embd, g->o);
}

static LmStatus
ffn (LmSession *s, uint32_t il, uint32_t n)
{
  const LmLayer *l = &s->gpu->dm->layers[il];
  if (s->model->info.is_moe)
    return moe_ffn (s, il, n);
  return swiglu_mlp (s, il, LM_MODULE_FFN_GATE, &l->ffn_gate, &l->ffn_up, &l->ffn_down, n);
}

/* Each residual add shares its launch with the norm that follows it: the
 * FFN's with the next layer's input norm (the first layer normalises the
 * embedding alone, the last adds alone before the head). */
static LmStatus
layer (LmSession *s, uint32_t il, uint32_t n)
{
  LmGpuSession *g = s->gpu;
  const LmLayer *l = &g->dm->layers[il];
  const LmModelInfo *in = &s->model->info;
  uint32_t E = in->n_embd;
  float eps = in->rms_eps;
  if (il == 0)
    TRY (lm_cuda_rms_norm (g->stream, g->x, E, l->attn_norm, eps, n, E, g->h, E));
  TRY (l->is_linear ? linear_attention (s, il, n) : full_attention (s, il, n));
  TRY (lm_cuda_add_rms_norm (g->stream, g->x, g->o, l->post_norm, eps, n, E, g->h));
  TRY (debug_rows (s, il, 0, n, g->x));
  TRY (ffn (s, il, n));
  if (il + 1 < g->n_layers)
    TRY (lm_cuda_add_rms_norm (g->stream, g->x, g->o, g->dm->layers[il + 1].attn_norm, eps, n, E,
                               g->h));
  else
    TRY (lm_cuda_add (g->stream, g->x, g->o, (size_t) n * E));
  return debug_rows (s, il, 1, n, g->x);
}

/* Final norm and LM head: every row into @logits_all (synchronously), or
 * the last row into the pinned h_logits. */
static LmStatus
head (LmSession *s, uint32_t n, float *logits_all)
{
  LmGpuSession *g = s->gpu;
  const LmGpuModel *dm = g->dm;
  const LmModelInfo *in = &s->model->info;
  uint32_t E = in->n_embd, V = in->n_vocab;
  if (s->pool_sum != NULL)
    {
      TRY (lm_cuda_rt_copy (g->stream, s->x, g->x, (size_t) n * E * sizeof (float)));
      TRY (lm_cuda_rt_sync (g->stream));
      lm_pool_hidden (s, n);
    }
  if (logits_all != NULL)
    {
      TRY (lm_cuda_rms_norm (g->stream, g->x, E, dm->output_norm, in->rms_eps, n, E, g->h, E));
      TRY (debug_rows (s, in->n_layer, 2, n, g->h));
      TRY (linear (s, &dm->output, g->h, n, g->logits));
      TRY (lm_cuda_rt_copy (g->stream, logits_all, g->logits, (size_t) n * V * sizeof (float)));
      TRY (lm_cuda_rt_sync (g->stream));
      memcpy (s->logits, logits_all + (size_t) (n - 1) * V, V * sizeof (float));
      return LM_OK;
    }
  TRY (lm_cuda_rms_norm (g->stream, g->x + (size_t) (n - 1) * E, E, dm->output_norm, in->rms_eps,
                         1, E, g->h, E));
  TRY (linear (s, &dm->output, g->h, 1, g->logits));
  return lm_cuda_rt_copy (g->stream, g->h_logits, g->logits, V * sizeof (float));
}

/* Enqueues one forward call. A decode step (n = 1) reads its token and
 * position from pinned memory and writes only pinned memory, so that it can
 * be recorded; a prefill copies the tokens straight from @tokens. */
static LmStatus
enqueue (LmSession *s, const int32_t *tokens, uint32_t n, float *logits_all)
{
  LmGpuSession *g = s->gpu;
  const LmGpuModel *dm = g->dm;
  const LmModelInfo *in = &s->model->info;
  uint32_t E = in->n_embd;
  const int32_t *src = n == 1 ? &g->io->token : tokens;
  TRY (lm_cuda_rt_copy (g->stream, g->tokens, src, n * sizeof (int32_t)));
  TRY (lm_cuda_rt_copy (g->stream, g->pos, &g->io->pos, sizeof (uint32_t)));
  TRY (lm_cuda_embed (g->stream, dm->tok_embd.type, dm->tok_embd.data, in->n_vocab, E, g->tokens,
                      n, g->x, NULL));
  for (uint32_t il = 0; il < g->n_layers; il++)
    TRY (layer (s, il, n));
  if (g->head)
    return head (s, n, logits_all);
  /* The residual stream crosses to the host for the CPU layers. */
  return lm_cuda_rt_copy (g->stream, n == 1 ? g->h_x : s->x, g->x, (size_t) n * E * sizeof (float));
}

/* Records the decode step while running it, segment by segment. A failure
 * before the first segment ran leaves the session eager and runs the step
 * so; after it, the step is half done and its error is returned (the
 * session stays eager too). */
static LmStatus
record_and_run (LmSession *s)
{
  LmGpuSession *g = s->gpu;
  LmStatus st = segment_open (s);
  if (st == LM_OK)
    st = enqueue (s, NULL, 1, NULL);
  if (st == LM_OK)
    st = segment_close (s, -1, NULL);
  if (st == LM_OK)
    return LM_OK;
  if (g->recording)
    {
      LmCudaGraph partial = NULL;
      lm_cuda_rt_capture_end (g->stream, &partial);
      lm_cuda_rt_graph_free (partial);
      g->recording = false;
    }
  bool started = g->n_segments > 0;
  lm_gpu_session_invalidate (g);
  /* a hook's own failure says nothing of the graphs: record again next time */
  g->graph_failed = st != LM_ERR_HOOK;
  return started ? st : enqueue (s, NULL, 1, NULL);
}

static LmStatus
replay (LmSession *s)
{
  LmGpuSession *g = s->gpu;
  for (size_t i = 0; i < g->n_segments; i++)
    {
      const LmGpuSegment *seg = &g->segments[i];
      TRY (lm_cuda_rt_graph_launch (seg->graph, g->stream));
      if (seg->module >= 0)
        TRY (call_hook (s, (size_t) seg->module, seg->x, 1));
    }
  return LM_OK;
}

LmStatus
lm_gpu_forward (LmSession *s, const int32_t *tokens, uint32_t n, float *logits_all)
{
  LmGpuSession *g = s->gpu;
  const LmModelInfo *in = &s->model->info;
  g->io->token = tokens[0];
  g->io->pos = s->pos;
  bool recordable = n == 1 && logits_all == NULL && s->debug_fn == NULL && s->pool_sum == NULL;
  LmStatus st;
  if (!recordable || g->graph_failed)
    st = enqueue (s, tokens, n, logits_all);
  else if (g->n_segments == 0)
    st = record_and_run (s);
  else
    st = replay (s);
  LmStatus done = lm_cuda_rt_sync (g->stream);
  if (st != LM_OK || done != LM_OK)
    return st != LM_OK ? st : done;
  if (g->head && logits_all == NULL && g->h_logits != s->logits)
    memcpy (s->logits, g->h_logits, in->n_vocab * sizeof (float));
  else if (!g->head && n == 1)
    memcpy (s->x, g->h_x, in->n_embd * sizeof (float));
  return LM_OK;
}
