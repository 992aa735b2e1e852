/* bench-cuda-ops.c: one timing line per GPU layer operation at the
 * Qwen3.5-35B-A3B shapes (not a test).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * usage: bench-cuda-ops [reps]
 * Inputs are random device buffers; each line is the mean of @reps calls
 * (default 200) on the default stream, timed with CUDA events, with the
 * bytes each call must move and the bandwidth that makes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda-test-mem.h"
#include "lm-cuda-ops.h"
#include "lm-gpu.h"

/* The 35B-A3B shapes. */
#define N_EMBD 2048
#define N_HEAD 16
#define N_HEAD_KV 2
#define HEAD_DIM 256
#define N_ROT 64
#define CONV_K 4
#define STATE 128
#define GROUPS 16
#define V_HEADS 32
#define N_EXPERT 256
#define N_USED 8
#define N_VOCAB 248320
#define PREFILL 512

typedef struct {
  uint32_t n, n_ctx, pos;
  float *x, *y, *w, *qg, *k, *v, *kc, *vc, *scratch, *out;
  float *u, *z, *ab, *state, *conv_w, *conv_state, *logits, *ssm_a, *dt_bias, *norm;
  float *router, *route_w, *moe_y;
  void *sample_scratch;
  int32_t *sel, *token, *history, *history_state;
  uint32_t *dpos;
  double *du;
  LmCudaSampleParams sp;
} Bench;

static void
fail (LmStatus st, const char *what)
{
  if (st != LM_OK)
    {
      fprintf (stderr, "%s failed: %s\n", what, lm_status_message (st));
      exit (1);
    }
}

static void
run_rms_norm (void *ctx)
{
  Bench *b = ctx;
  fail (lm_cuda_rms_norm (NULL, b->x, N_EMBD, b->w, 1e-6f, b->n, N_EMBD, b->y, N_EMBD), "rms_norm");
}

static void
run_qk_norm_rope (void *ctx)
{
  Bench *b = ctx;
  static const int32_t sections[4] = { 11, 11, 10, 0 };
  fail (lm_cuda_rms_norm (NULL, b->qg, 2 * HEAD_DIM, b->w, 1e-6f, b->n * N_HEAD, HEAD_DIM, b->qg,
                          2 * HEAD_DIM), "rms_norm q");
  fail (lm_cuda_rope (NULL, b->qg, 2 * HEAD_DIM * N_HEAD, 2 * HEAD_DIM, N_HEAD, b->n, b->dpos,
                      N_ROT, 1e7f, sections), "rope q");
  fail (lm_cuda_rms_norm (NULL, b->k, HEAD_DIM, b->w, 1e-6f, b->n * N_HEAD_KV, HEAD_DIM, b->k,
                          HEAD_DIM), "rms_norm k");
  fail (lm_cuda_rope (NULL, b->k, HEAD_DIM * N_HEAD_KV, HEAD_DIM, N_HEAD_KV, b->n, b->dpos, N_ROT,
                      1e7f, sections), "rope k");
}

static void
run_kv_append (void *ctx)
{
  Bench *b = ctx;
  fail (lm_cuda_kv_append (NULL, b->k, b->v, HEAD_DIM * N_HEAD_KV, b->n, b->dpos, b->kc, b->vc),
        "kv_append");
}

static void
run_attention (void *ctx)
{
  Bench *b = ctx;
  fail (lm_cuda_attention (NULL, b->qg, true, b->kc, b->vc, N_HEAD, N_HEAD_KV, HEAD_DIM, b->n,
                           b->dpos, b->n_ctx, b->out), "attention");
}

static void
run_attention_split (void *ctx)
{
  Bench *b = ctx;
  fail (lm_cuda_attention_split (NULL, b->qg, true, b->kc, b->vc, N_HEAD, N_HEAD_KV, HEAD_DIM,
                                 b->n, b->dpos, b->n_ctx, b->scratch, b->out), "attention_split");
}

static void
run_conv (void *ctx)
{
  Bench *b = ctx;
  uint32_t C = STATE * (2 * GROUPS + V_HEADS);
  fail (lm_cuda_causal_conv (NULL, b->x, b->conv_w, CONV_K, C, b->n, b->conv_state, b->u),
        "causal_conv");
}

static void
run_delta (void *ctx)
{
  Bench *b = ctx;
  uint32_t C = STATE * (2 * GROUPS + V_HEADS);
  LmCudaDeltaShape ds = { V_HEADS, GROUPS, STATE, 1e-6f, b->ssm_a, b->dt_bias, b->norm };
  fail (lm_cuda_delta_rule (NULL, &ds, b->u, C, b->z, b->ab, b->ab + V_HEADS, 2 * V_HEADS, b->n,
                            b->state, b->out), "delta_rule");
}

static void
run_route (void *ctx)
{
  Bench *b = ctx;
  fail (lm_cuda_moe_route (NULL, b->router, b->n, N_EXPERT, N_USED, b->sel, b->route_w), "moe_route");
}

static void
run_combine (void *ctx)
{
  Bench *b = ctx;
  fail (lm_cuda_moe_combine (NULL, b->moe_y, b->route_w, b->w, b->x, b->n, N_USED, N_EMBD, b->y),
        "moe_combine");
}

static void
run_swiglu (void *ctx)
{
  Bench *b = ctx;
  fail (lm_cuda_swiglu (NULL, b->moe_y, b->moe_y + (size_t) b->n * 512 * N_USED,
                        (size_t) b->n * 512 * N_USED), "swiglu");
}

static void
run_argmax (void *ctx)
{
  Bench *b = ctx;
  fail (lm_cuda_argmax (NULL, b->logits, N_VOCAB, b->token), "argmax");
}

static void
run_sample (void *ctx)
{
  Bench *b = ctx;
  fail (lm_cuda_sample (NULL, &b->sp, b->logits, N_VOCAB, b->history, b->history_state, b->du,
                        b->sample_scratch, b->token), "sample");
}

static float *
random_dev (size_t n, float scale)
{
  float *h = malloc (n * sizeof (float));
  uint64_t s = 0x9e3779b97f4a7c15ull ^ n;
  for (size_t i = 0; i < n; i++)
    {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      h[i] = scale * ((float) (s >> 40) / (float) (1 << 24) * 2.0f - 1.0f);
    }
  float *d = ct_upload (h, n * sizeof (float));
  free (h);
  return d;
}

static void
line (const char *op, const char *shape, void (*fn) (void *), Bench *b, int reps, double bytes)
{
  double ms = ct_time_ms (fn, b, reps);
  printf ("%-22s %-34s %10.2f us", op, shape, ms * 1000.0);
  if (bytes > 0)
    printf ("  %7.1f GB/s", bytes / (ms * 1e-3) / 1e9);
  printf ("\n");
}

int
main (int argc, char **argv)
{
  char why[200];
  if (!lm_gpu_available (why, sizeof why))
    {
      printf ("skipped: %s\n", why);
      return 0;
    }
  int reps = argc > 1 ? atoi (argv[1]) : 200;
  if (reps < 1)
    reps = 1;
  uint32_t max_ctx = 32768, C = STATE * (2 * GROUPS + V_HEADS), kvd = HEAD_DIM * N_HEAD_KV;
  Bench b = { 0 };
  b.x = random_dev ((size_t) PREFILL * C, 1.0f);
  b.y = random_dev ((size_t) PREFILL * N_EMBD, 1.0f);
  b.w = random_dev (N_EMBD, 1.0f);
  b.qg = random_dev ((size_t) PREFILL * N_HEAD * 2 * HEAD_DIM, 1.0f);
  b.k = random_dev ((size_t) PREFILL * kvd, 1.0f);
  b.v = random_dev ((size_t) PREFILL * kvd, 1.0f);
  b.kc = random_dev ((size_t) max_ctx * kvd, 1.0f);
  b.vc = random_dev ((size_t) max_ctx * kvd, 1.0f);
  b.scratch = ct_alloc (lm_cuda_attention_scratch_floats (N_HEAD, HEAD_DIM, 1, max_ctx)
                        * sizeof (float));
  b.sample_scratch = ct_alloc (lm_cuda_sample_scratch_bytes (N_VOCAB));
  b.out = ct_alloc ((size_t) PREFILL * N_HEAD * HEAD_DIM * sizeof (float));
  b.u = random_dev ((size_t) PREFILL * C, 1.0f);
  b.z = random_dev ((size_t) PREFILL * STATE * V_HEADS, 1.0f);
  b.ab = random_dev ((size_t) PREFILL * 2 * V_HEADS, 2.0f);
  b.state = ct_alloc ((size_t) V_HEADS * STATE * STATE * sizeof (float));
  b.conv_w = random_dev ((size_t) C * CONV_K, 0.5f);
  b.conv_state = ct_alloc ((size_t) (CONV_K - 1) * C * sizeof (float));
  b.logits = random_dev (N_VOCAB, 10.0f);
  b.ssm_a = random_dev (V_HEADS, 1.0f);
  b.dt_bias = random_dev (V_HEADS, 1.0f);
  b.norm = random_dev (STATE, 1.0f);
  b.router = random_dev ((size_t) PREFILL * N_EXPERT, 3.0f);
  b.route_w = ct_alloc ((size_t) PREFILL * N_USED * sizeof (float));
  b.moe_y = random_dev ((size_t) PREFILL * N_USED * N_EMBD, 1.0f);
  b.sel = ct_alloc ((size_t) PREFILL * N_USED * sizeof (int32_t));
  b.token = ct_alloc (sizeof (int32_t));
  b.history = ct_alloc (64 * sizeof (int32_t));
  b.history_state = ct_alloc (2 * sizeof (int32_t));
  b.dpos = ct_alloc (sizeof (uint32_t));
  double u = 0.5;
  b.du = ct_upload (&u, sizeof u);

  printf ("%-22s %-34s %13s\n", "op", "shape (35B-A3B)", "time per call");
  char shape[64];
  for (int prefill = 0; prefill < 2; prefill++)
    {
      b.n = prefill ? PREFILL : 1;
      const char *mode = prefill ? "prefill 512 tokens" : "decode";
      line ("rms_norm", mode, run_rms_norm, &b, reps, 2.0 * b.n * N_EMBD * 4);
      line ("q/k norm + rope", mode, run_qk_norm_rope, &b, reps, 0);
      line ("kv_append", mode, run_kv_append, &b, reps, 4.0 * b.n * kvd * 4);
      line ("causal_conv", mode, run_conv, &b, reps, 2.0 * b.n * C * 4);
      snprintf (shape, sizeof shape, "%s, Hv %d, S %d", mode, V_HEADS, STATE);
      line ("delta_rule", shape, run_delta, &b, prefill ? 5 : reps,
            2.0 * V_HEADS * STATE * STATE * 4);
      line ("moe_route", mode, run_route, &b, reps, 0);
      line ("swiglu (8 experts)", mode, run_swiglu, &b, reps, 3.0 * b.n * 512 * N_USED * 4);
      line ("moe_combine", mode, run_combine, &b, reps, 0);
    }
  static const uint32_t positions[] = { 100, 1000, 4000, 16000, 32000 };
  b.n = 1;
  b.n_ctx = max_ctx;
  for (size_t i = 0; i < sizeof positions / sizeof positions[0]; i++)
    {
      b.pos = positions[i];
      ct_copy_in (b.dpos, &b.pos, sizeof b.pos);
      double bytes = 2.0 * (b.pos + 1) * kvd * 4;
      snprintf (shape, sizeof shape, "decode at %u of n_ctx %u", b.pos, max_ctx);
      line ("attention", shape, run_attention, &b, reps, bytes);
      line ("attention_split", shape, run_attention_split, &b, reps, bytes);
    }
  b.n = PREFILL;
  b.pos = 0;
  ct_copy_in (b.dpos, &b.pos, sizeof b.pos);
  line ("attention", "prefill 512 tokens at 0", run_attention, &b, 20, 0);
  b.pos = 0;
  ct_copy_in (b.dpos, &b.pos, sizeof b.pos);
  line ("argmax", "248320 logits", run_argmax, &b, reps, N_VOCAB * 4.0);
  b.sp = (LmCudaSampleParams) { 0.8f, 40, 0.95f, 0.05f, 1.0f };
  line ("sample", "T 0.8, top-k 40, p 0.95, min-p 0.05", run_sample, &b, reps, 0);
  b.sp = (LmCudaSampleParams) { 1.0f, 0, 1.0f, 0.0f, 1.0f };
  line ("sample", "T 1, whole vocabulary", run_sample, &b, reps, 0);
  b.sp = (LmCudaSampleParams) { 1.0f, 0, 0.9f, 0.0f, 1.0f };
  line ("sample", "T 1, top-p 0.9 alone (sorted)", run_sample, &b, reps, 0);
  b.sp = (LmCudaSampleParams) { 0.0f, 0, 1.0f, 0.0f, 1.0f };
  line ("sample", "greedy", run_sample, &b, reps, 0);
  return 0;
}
