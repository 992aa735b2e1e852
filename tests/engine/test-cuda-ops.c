/* test-cuda-ops.c: every GPU layer operation against its CPU counterpart.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Random inputs at the shapes of the tiny golden models, of a tiny qwen3moe
 * model, of Qwen3.5-35B-A3B and of Qwen3-30B-A3B; attention with and
 * without the output gate, deep into a context and multi-token prefill;
 * the DeltaNet state carried over prefill and decode calls; sampling with
 * the CPU sampler's own uniform numbers. Skips without a usable GPU. */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cuda-test-mem.h"
#include "forward-ops.h"
#include "gguf-synth.h"
#include "lm-cuda-ops.h"
#include "lm-gpu.h"
#include "sampler.h"
#include "test-forward-util.h"

typedef struct {
  const char *name;
  uint32_t n_embd, n_head, n_head_kv, head_dim, n_rot;
  float rope_base, eps;
  int32_t sections[4];
  uint32_t K, S, Hk, Hv;      /* DeltaNet: conv kernel, state, key heads, value heads */
  uint32_t n_expert, k;       /* 0 experts: dense */
  uint32_t n_vocab;
  bool gated;                 /* attention's output gate; without it q rows are head_dim */
  bool shared_expert;
} Shape;

static const Shape shape_35b = { "35B-A3B", 2048, 16, 2, 256, 64, 10000000.0f, 1e-6f,
                                 { 11, 11, 10, 0 }, 4, 128, 16, 32, 256, 8, 248320, true, true };
/* Qwen3-30B-A3B (qwen3moe): attention only, plain NEOX RoPE on the whole head. */
static const Shape shape_30b = { "30B-A3B", 2048, 32, 4, 128, 128, 1000000.0f, 1e-6f,
                                 { 0, 0, 0, 0 }, 0, 0, 0, 0, 128, 8, 151936, false, false };

/* Floats per query head in the attention's q rows. */
static uint32_t
q_stride (const Shape *sh)
{
  return (sh->gated ? 2 : 1) * sh->head_dim;
}

/* Whether the shape has Gated DeltaNet layers. */
static bool
hybrid (const Shape *sh)
{
  return sh->S > 0;
}

static Shape
shape_of_model (const char *model)
{
  LmModel *m = golden_model (model);
  const LmModelInfo *in = lm_model_info (m);
  Shape s = { model, in->n_embd, in->n_head, in->n_head_kv, in->head_dim, in->n_rot,
              in->rope_base, in->rms_eps,
              { in->rope_sections[0], in->rope_sections[1], in->rope_sections[2],
                in->rope_sections[3] },
              in->ssm_conv_kernel, in->ssm_state, in->ssm_groups, in->ssm_heads,
              in->n_expert, in->n_expert_used, in->n_vocab, in->attn_gated,
              in->n_ff_shexp > 0 };
  lm_model_free (m);
  return s;
}

/* The tiny preset of a synthetic architecture, from its hyperparameters. */
static Shape
shape_of_synth (const char *name, LmSynthArch arch)
{
  LmSynthHparams hp = lm_synth_hparams (arch, LM_SYNTH_TINY);
  Shape s = { name, hp.n_embd, hp.n_head, hp.n_head_kv, hp.head_dim, hp.n_rot, hp.rope_base,
              hp.rms_eps, { 0, 0, 0, 0 }, hp.conv_kernel, hp.ssm_state, hp.ssm_groups,
              hp.ssm_heads, hp.n_expert, hp.n_expert_used, hp.n_vocab, false,
              hp.n_ff_shexp > 0 };
  return s;
}

/* The shapes every test runs: both tiny golden models, a tiny qwen3moe,
 * the 35B-A3B and the 30B-A3B (the DeltaNet tests skip those without). */
static GArray *
all_shapes (void)
{
  GArray *a = g_array_new (FALSE, FALSE, sizeof (Shape));
  Shape dense = shape_of_model ("tiny-qwen35-f32"), moe = shape_of_model ("tiny-qwen35moe-f32");
  Shape qwen3moe = shape_of_synth ("tiny qwen3moe", LM_SYNTH_QWEN3MOE);
  g_array_append_val (a, dense);
  g_array_append_val (a, moe);
  g_array_append_val (a, qwen3moe);
  g_array_append_val (a, shape_35b);
  g_array_append_val (a, shape_30b);
  return a;
}

static gboolean
need_gpu (void)
{
  char why[200];
  if (lm_gpu_available (why, sizeof why))
    return TRUE;
  g_test_skip (why);
  return FALSE;
}

static GRand *rng;

static float *
random_floats (size_t n, double lo, double hi)
{
  float *x = g_new (float, n);
  for (size_t i = 0; i < n; i++)
    x[i] = (float) g_rand_double_range (rng, lo, hi);
  return x;
}

/* Asserts |a - b| <= atol + rtol |b| everywhere; logs the worst ratio. */
static void
check_close (const char *what, const Shape *sh, const float *a, const float *b, size_t n,
             double rtol, double atol)
{
  double worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < n; i++)
    {
      double r = fabs ((double) a[i] - b[i]) / (atol + rtol * fabs ((double) b[i]));
      if (!(r <= worst))
        {
          worst = r;
          at = i;
        }
    }
  g_test_message ("%s (%s): worst error %.3g of the tolerance at %zu", what, sh->name, worst, at);
  if (!(worst <= 1.0))
    g_error ("%s (%s): element %zu is %.9g, the CPU has %.9g", what, sh->name, at, a[at], b[at]);
}

static float *
download_floats (const float *dev, size_t n)
{
  float *h = g_new (float, n);
  ct_download (h, dev, n * sizeof (float));
  return h;
}

/* ---- norms and element-wise ---- */

static void
test_norms (void)
{
  if (!need_gpu ())
    return;
  GArray *shapes = all_shapes ();
  for (guint si = 0; si < shapes->len; si++)
    {
      const Shape *sh = &g_array_index (shapes, Shape, si);
      /* the residual rows, then per-head q norms inside the q rows (q+gate rows
       * in gated attention) */
      uint32_t n = 9, hd = sh->head_dim, qs = q_stride (sh), qrow = qs * sh->n_head;
      float *x = random_floats ((size_t) n * sh->n_embd, -3, 3);
      float *w = random_floats (sh->n_embd, 0.5, 1.5);
      float *dx = ct_upload (x, (size_t) n * sh->n_embd * 4), *dw = ct_upload (w, sh->n_embd * 4);
      float *dy = ct_alloc ((size_t) n * sh->n_embd * 4);
      g_assert_cmpint (lm_cuda_rms_norm (NULL, dx, sh->n_embd, dw, sh->eps, n, sh->n_embd, dy,
                                         sh->n_embd), ==, LM_OK);
      float *want = g_new (float, (size_t) n * sh->n_embd);
      for (uint32_t t = 0; t < n; t++)
        lm_rms_norm (x + (size_t) t * sh->n_embd, w, sh->eps, sh->n_embd,
                     want + (size_t) t * sh->n_embd);
      float *got = download_floats (dy, (size_t) n * sh->n_embd);
      check_close ("rms_norm", sh, got, want, (size_t) n * sh->n_embd, 1e-5, 1e-6);
      g_free (got);

      float *qg = random_floats ((size_t) n * qrow, -3, 3);
      float *dqg = ct_upload (qg, (size_t) n * qrow * 4);
      g_assert_cmpint (lm_cuda_rms_norm (NULL, dqg, qs, dw, sh->eps, n * sh->n_head, hd, dqg, qs),
                       ==, LM_OK);
      for (uint32_t r = 0; r < n * sh->n_head; r++)
        lm_rms_norm (qg + (size_t) r * qs, w, sh->eps, hd, qg + (size_t) r * qs);
      got = download_floats (dqg, (size_t) n * qrow);
      check_close ("rms_norm in place, strided", sh, got, qg, (size_t) n * qrow, 1e-5, 1e-6);
      g_free (got);

      /* L2 norm of the q and k heads of DeltaNet rows */
      if (hybrid (sh))
        {
          uint32_t C = sh->S * (2 * sh->Hk + sh->Hv);
          float *u = random_floats ((size_t) n * C, -2, 2);
          float *du = ct_upload (u, (size_t) n * C * 4);
          for (uint32_t t = 0; t < n; t++)
            g_assert_cmpint (lm_cuda_l2_norm (NULL, du + (size_t) t * C, sh->S, sh->eps,
                                              2 * sh->Hk, sh->S), ==, LM_OK);
          for (uint32_t t = 0; t < n; t++)
            for (uint32_t h = 0; h < 2 * sh->Hk; h++)
              lm_l2_norm (u + (size_t) t * C + (size_t) h * sh->S, sh->eps, sh->S);
          got = download_floats (du, (size_t) n * C);
          check_close ("l2_norm", sh, got, u, (size_t) n * C, 1e-5, 1e-7);
          g_free (got);
          ct_free (du);
          g_free (u);
        }

      /* a bias row added to every token's q (qwen2): a plain sum, to the bit */
      uint32_t qd = hd * sh->n_head;
      float *bq = random_floats ((size_t) n * qd, -2, 2), *bias = random_floats (qd, -1, 1);
      float *dbq = ct_upload (bq, (size_t) n * qd * 4), *dbias = ct_upload (bias, qd * 4);
      g_assert_cmpint (lm_cuda_add_rows (NULL, dbq, dbias, n, qd), ==, LM_OK);
      for (uint32_t t = 0; t < n; t++)
        lm_add (bq + (size_t) t * qd, bias, qd);
      got = download_floats (dbq, (size_t) n * qd);
      g_assert_cmpmem (got, (size_t) n * qd * 4, bq, (size_t) n * qd * 4);
      g_free (got);
      ct_free (dbq);
      ct_free (dbias);
      g_free (bq);
      g_free (bias);

      /* add and SwiGLU */
      size_t m = (size_t) n * sh->n_embd;
      float *a = random_floats (m, -10, 10), *b = random_floats (m, -10, 10);
      float *da = ct_upload (a, m * 4), *db = ct_upload (b, m * 4);
      g_assert_cmpint (lm_cuda_add (NULL, da, db, m), ==, LM_OK);
      float *sum = download_floats (da, m);
      g_assert_cmpint (lm_cuda_swiglu (NULL, da, db, m), ==, LM_OK);
      float *sw = download_floats (da, m);
      lm_add (a, b, (uint32_t) m);
      g_assert_cmpmem (sum, m * 4, a, m * 4);
      lm_swiglu (lm_kernels_best (), a, b, m);
      check_close ("swiglu", sh, sw, a, m, 2e-6, 1e-7);
      g_free (sum);
      g_free (sw);

      ct_free (dx);
      ct_free (dw);
      ct_free (dy);
      ct_free (dqg);
      ct_free (da);
      ct_free (db);
      g_free (x);
      g_free (w);
      g_free (want);
      g_free (qg);
      g_free (a);
      g_free (b);
    }
  g_array_unref (shapes);
}

/* ---- RoPE and KV append ---- */

static void
test_rope_kv (void)
{
  if (!need_gpu ())
    return;
  GArray *shapes = all_shapes ();
  static const uint32_t pos0s[] = { 0, 1, 1000, 4090, 200000 };
  for (guint si = 0; si < shapes->len; si++)
    {
      const Shape *sh = &g_array_index (shapes, Shape, si);
      uint32_t hd = sh->head_dim, qs = q_stride (sh), qrow = qs * sh->n_head;
      uint32_t kvd = hd * sh->n_head_kv;
      for (size_t pi = 0; pi < G_N_ELEMENTS (pos0s); pi++)
        {
          uint32_t n = pi % 2 ? 1 : 6, pos0 = pos0s[pi];
          float *qg = random_floats ((size_t) n * qrow, -2, 2);
          float *dqg = ct_upload (qg, (size_t) n * qrow * 4);
          uint32_t *dpos = ct_upload (&pos0, 4);
          g_assert_cmpint (lm_cuda_rope (NULL, dqg, qrow, qs, sh->n_head, n, dpos, sh->n_rot,
                                         sh->rope_base, sh->sections), ==, LM_OK);
          float cs[LM_CUDA_MAX_HEAD_DIM];
          for (uint32_t t = 0; t < n; t++)
            {
              lm_rope_table (pos0 + t, sh->n_rot, sh->rope_base, sh->sections, cs);
              for (uint32_t h = 0; h < sh->n_head; h++)
                lm_rope_apply (qg + (size_t) t * qrow + (size_t) h * qs, sh->n_rot, cs);
            }
          float *got = download_floats (dqg, (size_t) n * qrow);
          check_close ("rope", sh, got, qg, (size_t) n * qrow, 2e-6, 2e-6);
          g_free (got);

          /* KV rows into a cache at pos0 (a small cache for the deep positions) */
          uint32_t base = pos0 % 64, n_ctx = 64 + n;
          float *k = random_floats ((size_t) n * kvd, -1, 1), *v = random_floats ((size_t) n * kvd, -1, 1);
          float *dk = ct_upload (k, (size_t) n * kvd * 4), *dv = ct_upload (v, (size_t) n * kvd * 4);
          float *dkc = ct_alloc ((size_t) n_ctx * kvd * 4), *dvc = ct_alloc ((size_t) n_ctx * kvd * 4);
          ct_copy_in (dpos, &base, 4);
          g_assert_cmpint (lm_cuda_kv_append (NULL, dk, dv, kvd, n, dpos, dkc, dvc), ==, LM_OK);
          float *kc = download_floats (dkc, (size_t) n_ctx * kvd);
          float *vc = download_floats (dvc, (size_t) n_ctx * kvd);
          g_assert_cmpmem (kc + (size_t) base * kvd, (size_t) n * kvd * 4, k, (size_t) n * kvd * 4);
          g_assert_cmpmem (vc + (size_t) base * kvd, (size_t) n * kvd * 4, v, (size_t) n * kvd * 4);
          for (size_t i = 0; i < (size_t) base * kvd; i++)
            g_assert_cmpfloat (kc[i], ==, 0.0f);
          g_free (kc);
          g_free (vc);
          g_free (k);
          g_free (v);
          g_free (qg);
          ct_free (dk);
          ct_free (dv);
          ct_free (dkc);
          ct_free (dvc);
          ct_free (dqg);
          ct_free (dpos);
        }
    }
  g_array_unref (shapes);
}

/* ---- attention ---- */

/* @gated: q rows of query and gate per head, else of the query alone. */
static void
attention_case (const Shape *sh, bool gated, uint32_t n_ctx, uint32_t pos0, uint32_t n,
                const float *dk_cache, const float *dv_cache, const float *k_cache,
                const float *v_cache)
{
  uint32_t hd = sh->head_dim, kvd = hd * sh->n_head_kv, G = sh->n_head / sh->n_head_kv;
  uint32_t qs = (gated ? 2 : 1) * hd;
  size_t qn = (size_t) n * sh->n_head * qs, on = (size_t) n * sh->n_head * hd;
  float *qg = random_floats (qn, -1, 1);
  /* scores of a few units, like normed q and k */
  for (size_t i = 0; i < qn; i++)
    qg[i] *= 3.0f;
  float *want = g_new (float, on);
  const LmKernels *kern = lm_kernels_best ();
  for (uint32_t t = 0; t < n; t++)
    for (uint32_t h = 0; h < sh->n_head; h++)
      {
        const float *q = qg + ((size_t) t * sh->n_head + h) * qs;
        lm_attend_head (kern, q, gated ? q + hd : NULL, k_cache + (size_t) (h / G) * hd,
                        v_cache + (size_t) (h / G) * hd, kvd, pos0 + t + 1, hd,
                        want + ((size_t) t * sh->n_head + h) * hd);
      }
  float *dqg = ct_upload (qg, qn * 4), *dout = ct_alloc (on * 4);
  uint32_t *dpos = ct_upload (&pos0, 4);
  char what[96];
  const char *kind = gated ? "gated" : "ungated";
  g_assert_cmpint (lm_cuda_attention (NULL, dqg, gated, dk_cache, dv_cache, sh->n_head,
                                      sh->n_head_kv, hd, n, dpos, n_ctx, dout), ==, LM_OK);
  float *got = download_floats (dout, on);
  snprintf (what, sizeof what, "attention %s, %u tokens at %u", kind, n, pos0);
  check_close (what, sh, got, want, on, 2e-4, 2e-5);
  g_free (got);
  size_t scratch_n = lm_cuda_attention_scratch_floats (sh->n_head, hd, n, n_ctx);
  float *dscratch = ct_alloc (scratch_n * 4);
  g_assert_cmpint (lm_cuda_attention_split (NULL, dqg, gated, dk_cache, dv_cache, sh->n_head,
                                            sh->n_head_kv, hd, n, dpos, n_ctx, dscratch, dout),
                   ==, LM_OK);
  got = download_floats (dout, on);
  snprintf (what, sizeof what, "attention %s split, %u tokens at %u", kind, n, pos0);
  check_close (what, sh, got, want, on, 2e-4, 2e-5);
  g_free (got);
  ct_free (dscratch);
  ct_free (dqg);
  ct_free (dout);
  ct_free (dpos);
  g_free (qg);
  g_free (want);
}

static void
test_attention (void)
{
  if (!need_gpu ())
    return;
  GArray *shapes = all_shapes ();
  for (guint si = 0; si < shapes->len; si++)
    {
      const Shape *sh = &g_array_index (shapes, Shape, si);
      uint32_t n_ctx = 4096, kvd = sh->head_dim * sh->n_head_kv;
      float *k = random_floats ((size_t) n_ctx * kvd, -1, 1), *v = random_floats ((size_t) n_ctx * kvd, -1, 1);
      float *dk = ct_upload (k, (size_t) n_ctx * kvd * 4), *dv = ct_upload (v, (size_t) n_ctx * kvd * 4);
      /* decode at the first, tile and chunk edges, deep; then prefill batches */
      static const uint32_t decode_pos[] = { 0, 1, 63, 64, 255, 256, 1000, 2047, 4095 };
      /* the shape's own form first, then the other one */
      for (int form = 0; form < 2; form++)
        {
          bool gated = form == 0 ? sh->gated : !sh->gated;
          for (size_t i = 0; i < G_N_ELEMENTS (decode_pos); i++)
            attention_case (sh, gated, n_ctx, decode_pos[i], 1, dk, dv, k, v);
          attention_case (sh, gated, n_ctx, 0, 37, dk, dv, k, v);
          attention_case (sh, gated, n_ctx, 3000, 70, dk, dv, k, v);
          attention_case (sh, gated, 256, 100, 3, dk, dv, k, v);
        }
      ct_free (dk);
      ct_free (dv);
      g_free (k);
      g_free (v);
    }
  g_array_unref (shapes);
}

/* ---- Gated DeltaNet ---- */

static void
test_causal_conv (void)
{
  if (!need_gpu ())
    return;
  GArray *shapes = all_shapes ();
  for (guint si = 0; si < shapes->len; si++)
    {
      const Shape *sh = &g_array_index (shapes, Shape, si);
      if (!hybrid (sh))
        continue;
      uint32_t K = sh->K, C = sh->S * (2 * sh->Hk + sh->Hv);
      float *w = random_floats ((size_t) C * K, -1, 1);
      float *state = g_new0 (float, (size_t) (K - 1) * C);
      float *dw = ct_upload (w, (size_t) C * K * 4), *dstate = ct_alloc ((size_t) (K - 1) * C * 4 + 4);
      /* batches shorter and longer than the K - 1 saved rows, one after the other */
      static const uint32_t batches[] = { 5, 1, 2, 1, 1, 17, 1 };
      for (size_t b = 0; b < G_N_ELEMENTS (batches); b++)
        {
          uint32_t n = batches[b];
          float *in = random_floats ((size_t) n * C, -2, 2), *want = g_new (float, (size_t) n * C);
          float *din = ct_upload (in, (size_t) n * C * 4), *dout = ct_alloc ((size_t) n * C * 4);
          lm_causal_conv (in, w, K, C, n, state, want);
          g_assert_cmpint (lm_cuda_causal_conv (NULL, din, dw, K, C, n, dstate, dout), ==, LM_OK);
          float *got = download_floats (dout, (size_t) n * C);
          check_close ("causal conv", sh, got, want, (size_t) n * C, 1e-5, 1e-6);
          float *got_state = download_floats (dstate, (size_t) (K - 1) * C);
          g_assert_cmpmem (got_state, (size_t) (K - 1) * C * 4, state, (size_t) (K - 1) * C * 4);
          g_free (got);
          g_free (got_state);
          g_free (in);
          g_free (want);
          ct_free (din);
          ct_free (dout);
        }
      ct_free (dw);
      ct_free (dstate);
      g_free (w);
      g_free (state);
    }
  g_array_unref (shapes);
}

/* The CPU's delta_head_cb for all heads and tokens (q, k normalised first). */
static void
delta_reference (const Shape *sh, float *u, const float *z, const float *ab, uint32_t n,
                 const float *ssm_a, const float *dt_bias, const float *norm, float *state,
                 float *out)
{
  uint32_t S = sh->S, Hv = sh->Hv, key_dim = S * sh->Hk, C = 2 * key_dim + S * Hv;
  const LmKernels *kern = lm_kernels_best ();
  float *mk = g_new (float, S);
  for (uint32_t t = 0; t < n; t++)
    for (uint32_t h = 0; h < 2 * sh->Hk; h++)
      lm_l2_norm (u + (size_t) t * C + (size_t) h * S, sh->eps, S);
  for (uint32_t j = 0; j < Hv; j++)
    for (uint32_t t = 0; t < n; t++)
      {
        const float *ut = u + (size_t) t * C;
        uint32_t m = j % sh->Hk;
        float g = ssm_a[j] * lm_softplus (ab[(size_t) t * 2 * Hv + j] + dt_bias[j]);
        float b = lm_sigmoid (ab[(size_t) t * 2 * Hv + Hv + j]);
        float *o = out + (size_t) t * S * Hv + (size_t) j * S;
        lm_delta_step (kern, state + (size_t) j * S * S, ut + (size_t) m * S,
                       ut + key_dim + (size_t) m * S, ut + 2 * key_dim + (size_t) j * S, expf (g),
                       b, S, mk, o);
        lm_rms_norm (o, norm, sh->eps, S, o);
        const float *zt = z + (size_t) t * S * Hv + (size_t) j * S;
        for (uint32_t i = 0; i < S; i++)
          o[i] *= lm_silu (zt[i]);
      }
  g_free (mk);
}

static void
delta_shape (const Shape *sh)
{
  uint32_t S = sh->S, Hv = sh->Hv, C = S * (2 * sh->Hk + Hv), vd = S * Hv;
  float *ssm_a = random_floats (Hv, -6, -0.1), *dt_bias = random_floats (Hv, -1, 1);
  float *norm = random_floats (S, 0.5, 1.5);
  float *state = g_new0 (float, (size_t) Hv * S * S);
  float *da = ct_upload (ssm_a, Hv * 4), *ddt = ct_upload (dt_bias, Hv * 4);
  float *dnorm = ct_upload (norm, S * 4), *dstate = ct_alloc ((size_t) Hv * S * S * 4);
  LmCudaDeltaShape ds = { Hv, sh->Hk, S, sh->eps, da, ddt, dnorm };
  /* a prefill, decode steps, a second prefill: the state carries over */
  static const uint32_t batches[] = { 40, 1, 1, 1, 9, 1 };
  for (size_t b = 0; b < G_N_ELEMENTS (batches); b++)
    {
      uint32_t n = batches[b];
      float *u = random_floats ((size_t) n * C, -1, 1), *z = random_floats ((size_t) n * vd, -3, 3);
      float *ab = random_floats ((size_t) n * 2 * Hv, -4, 4);
      float *du = ct_upload (u, (size_t) n * C * 4), *dz = ct_upload (z, (size_t) n * vd * 4);
      float *dab = ct_upload (ab, (size_t) n * 2 * Hv * 4), *dout = ct_alloc ((size_t) n * vd * 4);
      float *want = g_new (float, (size_t) n * vd);
      delta_reference (sh, u, z, ab, n, ssm_a, dt_bias, norm, state, want);
      g_assert_cmpint (lm_cuda_delta_rule (NULL, &ds, du, C, dz, dab, dab + Hv, 2 * Hv, n,
                                           dstate, dout), ==, LM_OK);
      float *got = download_floats (dout, (size_t) n * vd);
      char what[64];
      snprintf (what, sizeof what, "delta rule, batch %zu of %u tokens", b, n);
      check_close (what, sh, got, want, (size_t) n * vd, 2e-4, 1e-4);
      float *got_state = download_floats (dstate, (size_t) Hv * S * S);
      check_close ("delta rule state", sh, got_state, state, (size_t) Hv * S * S, 2e-4, 1e-5);
      g_free (got);
      g_free (got_state);
      g_free (want);
      g_free (u);
      g_free (z);
      g_free (ab);
      ct_free (du);
      ct_free (dz);
      ct_free (dab);
      ct_free (dout);
    }
  ct_free (da);
  ct_free (ddt);
  ct_free (dnorm);
  ct_free (dstate);
  g_free (ssm_a);
  g_free (dt_bias);
  g_free (norm);
  g_free (state);
}

static void
test_delta_rule (void)
{
  if (!need_gpu ())
    return;
  GArray *shapes = all_shapes ();
  for (guint si = 0; si < shapes->len; si++)
    if (hybrid (&g_array_index (shapes, Shape, si)))
      delta_shape (&g_array_index (shapes, Shape, si));
  g_array_unref (shapes);
  /* a state too large for the registers: the second form of the kernel */
  Shape big = shape_35b;
  big.name = "S = 256";
  big.S = 256;
  big.Hk = 2;
  big.Hv = 4;
  delta_shape (&big);
  /* invalid */
  LmCudaDeltaShape ds = { 1, 1, LM_CUDA_MAX_STATE + 1, 1e-6f, NULL, NULL, NULL };
  g_assert_cmpint (lm_cuda_delta_rule (NULL, &ds, NULL, 0, NULL, NULL, NULL, 0, 1, NULL, NULL),
                   ==, LM_ERR_INVALID_ARGUMENT);
}

/* ---- MoE ---- */

static void
test_moe (void)
{
  if (!need_gpu ())
    return;
  GArray *shapes = all_shapes ();
  for (guint si = 0; si < shapes->len; si++)
    {
      const Shape *sh = &g_array_index (shapes, Shape, si);
      if (sh->n_expert == 0)
        continue;
      uint32_t n = 33, ne = sh->n_expert, k = sh->k, E = sh->n_embd;
      float *logits = random_floats ((size_t) n * ne, -5, 5);
      /* ties: some tokens with few distinct logits */
      for (uint32_t t = 0; t < n; t += 4)
        for (uint32_t e = 0; e < ne; e++)
          logits[(size_t) t * ne + e] = (float) g_rand_int_range (rng, -2, 2);
      float *dl = ct_upload (logits, (size_t) n * ne * 4), *dw = ct_alloc ((size_t) n * k * 4);
      int32_t *dsel = ct_alloc ((size_t) n * k * 4);
      g_assert_cmpint (lm_cuda_moe_route (NULL, dl, n, ne, k, dsel, dw), ==, LM_OK);
      int32_t *sel = g_new (int32_t, (size_t) n * k), *want_sel = g_new (int32_t, (size_t) n * k);
      float *want_w = g_new (float, (size_t) n * k);
      for (uint32_t t = 0; t < n; t++)
        lm_route_token (logits + (size_t) t * ne, ne, k, want_sel + (size_t) t * k,
                        want_w + (size_t) t * k);
      ct_download (sel, dsel, (size_t) n * k * 4);
      float *w = download_floats (dw, (size_t) n * k);
      g_assert_cmpmem (sel, (size_t) n * k * 4, want_sel, (size_t) n * k * 4);
      check_close ("moe route weights", sh, w, want_w, (size_t) n * k, 1e-5, 1e-7);

      /* combine: the routed outputs, weights, shared expert and its gate;
       * then without a shared expert (the old o, NaN, must not be read) */
      float *y = random_floats ((size_t) n * k * E, -1, 1), *o = random_floats ((size_t) n * E, -1, 1);
      float *gate_inp = random_floats (E, -0.1, 0.1), *h = random_floats ((size_t) n * E, -1, 1);
      float *routed = g_new (float, (size_t) n * E), *nan_rows = g_new (float, (size_t) n * E);
      float *dy = ct_upload (y, (size_t) n * k * E * 4), *do_ = ct_upload (o, (size_t) n * E * 4);
      float *dg = ct_upload (gate_inp, E * 4), *dh = ct_upload (h, (size_t) n * E * 4);
      g_assert_cmpint (lm_cuda_moe_combine (NULL, dy, dw, dg, dh, n, k, E, do_), ==, LM_OK);
      for (uint32_t t = 0; t < n; t++)
        {
          float dot = 0.0f;
          for (uint32_t i = 0; i < E; i++)
            dot += gate_inp[i] * h[(size_t) t * E + i];
          float gate = lm_sigmoid (dot);
          for (uint32_t i = 0; i < E; i++)
            {
              float sum = 0.0f;
              for (uint32_t j = 0; j < k; j++)
                sum += want_w[(size_t) t * k + j] * y[((size_t) t * k + j) * E + i];
              routed[(size_t) t * E + i] = sum;
              o[(size_t) t * E + i] = sum + gate * o[(size_t) t * E + i];
              nan_rows[(size_t) t * E + i] = NAN;
            }
        }
      float *got = download_floats (do_, (size_t) n * E);
      check_close ("moe combine", sh, got, o, (size_t) n * E, 1e-5, 5e-6);
      g_free (got);
      ct_copy_in (do_, nan_rows, (size_t) n * E * 4);
      g_assert_cmpint (lm_cuda_moe_combine (NULL, dy, dw, NULL, NULL, n, k, E, do_), ==, LM_OK);
      got = download_floats (do_, (size_t) n * E);
      check_close ("moe combine without a shared expert", sh, got, routed, (size_t) n * E, 1e-5,
                   5e-6);
      g_free (got);
      g_free (routed);
      g_free (nan_rows);
      g_free (y);
      g_free (o);
      g_free (gate_inp);
      g_free (h);
      g_free (logits);
      g_free (sel);
      g_free (want_sel);
      g_free (want_w);
      g_free (w);
      ct_free (dy);
      ct_free (do_);
      ct_free (dg);
      ct_free (dh);
      ct_free (dl);
      ct_free (dw);
      ct_free (dsel);
    }
  g_array_unref (shapes);
}

/* ---- argmax and sampling ---- */

static float *
sample_logits (uint32_t n, int kind)
{
  float *l = random_floats (n, -8, 8);
  for (uint32_t i = 0; i < n; i++)
    {
      if (kind == 1)
        l[i] = (float) g_rand_int_range (rng, 0, 6);        /* many ties */
      if (kind == 2 && g_rand_int_range (rng, 0, 50) == 0)
        l[i] = NAN;
      if (kind == 3)
        l[i] = 30.0f * l[i];                                /* peaked */
      if (kind == 4)
        l[i] *= 0.01f;                                      /* flat */
    }
  return l;
}

static void
test_argmax (void)
{
  if (!need_gpu ())
    return;
  LmSamplerParams gp = lm_sampler_params_greedy ();
  static const uint32_t sizes[] = { 1, 7, 1000, 248320 };
  for (size_t si = 0; si < G_N_ELEMENTS (sizes); si++)
    for (int kind = 0; kind < 5; kind++)
      {
        uint32_t n = sizes[si];
        float *l = sample_logits (n, kind);
        float *dl = ct_upload (l, (size_t) n * 4);
        int32_t *dtok = ct_alloc (4), tok = -1;
        g_assert_cmpint (lm_cuda_argmax (NULL, dl, n, dtok), ==, LM_OK);
        ct_download (&tok, dtok, 4);
        LmSampler *s = lm_sampler_new (&gp, (int32_t) n);
        g_assert_cmpint (tok, ==, lm_sampler_sample (s, l));
        lm_sampler_free (s);
        if (n > 1)
          {
            /* logits not 16-byte aligned: the kernel's scalar loads */
            g_assert_cmpint (lm_cuda_argmax (NULL, dl + 1, n - 1, dtok), ==, LM_OK);
            ct_download (&tok, dtok, 4);
            s = lm_sampler_new (&gp, (int32_t) n - 1);
            g_assert_cmpint (tok, ==, lm_sampler_sample (s, l + 1));
            lm_sampler_free (s);
          }
        ct_free (dl);
        ct_free (dtok);
        g_free (l);
      }
}

static void
sample_case (const LmSamplerParams *p, uint32_t n, int kind, const int32_t *history,
             int n_history)
{
  float *l = sample_logits (n, kind);
  LmSampler *s = lm_sampler_new (p, (int32_t) n);
  g_assert_nonnull (s);
  for (int i = 0; i < n_history; i++)
    lm_sampler_accept (s, history[i]);
  int32_t want = lm_sampler_sample (s, l);
  /* the sampler's first draw */
  uint64_t st[4];
  lm_rng_seed (st, p->seed);
  double u = lm_rng_uniform (st);

  /* the history through the device's accept, as a graph would keep it */
  int32_t *dhist = ct_alloc ((size_t) (p->repeat_last_n > 0 ? p->repeat_last_n : 1) * 4);
  int32_t *dstate = ct_alloc (8), *dtok = ct_alloc (4);
  for (int i = 0; i < n_history; i++)
    {
      ct_copy_in (dtok, &history[i], 4);
      g_assert_cmpint (lm_cuda_sample_accept (NULL, dtok, n, p->repeat_last_n, dhist, dstate), ==,
                       LM_OK);
    }
  float *dl = ct_upload (l, (size_t) n * 4);
  void *dscratch = ct_alloc (lm_cuda_sample_scratch_bytes (n));
  double *du = ct_upload (&u, sizeof u);
  LmCudaSampleParams cp = { p->temperature, p->top_k, p->top_p, p->min_p, p->repeat_penalty };
  g_assert_cmpint (lm_cuda_sample (NULL, &cp, dl, n, dhist, dstate, du, dscratch, dtok), ==,
                   LM_OK);
  int32_t got = -1;
  ct_download (&got, dtok, 4);
  if (got != want)
    g_error ("sampling (T %g, top-k %d, top-p %g, min-p %g, penalty %g, %u tokens, kind %d, "
             "u %.17g): GPU %d, CPU %d", p->temperature, p->top_k, p->top_p, p->min_p,
             p->repeat_penalty, n, kind, u, got, want);
  lm_sampler_free (s);
  ct_free (dhist);
  ct_free (dstate);
  ct_free (dtok);
  ct_free (dl);
  ct_free (dscratch);
  ct_free (du);
  g_free (l);
}

static void
test_sample (void)
{
  if (!need_gpu ())
    return;
  static const uint32_t sizes[] = { 50, 5000, 248320 };
  int32_t history[100];
  for (int i = 0; i < 100; i++)
    history[i] = g_rand_int_range (rng, 0, 40);   /* repeats included */
  for (uint64_t seed = 1; seed <= 6; seed++)
    for (size_t si = 0; si < G_N_ELEMENTS (sizes); si++)
      for (int kind = 0; kind < 5; kind++)
        {
          uint32_t n = sizes[si];
          LmSamplerParams p = lm_sampler_params_default (seed);
          sample_case (&p, n, kind, NULL, 0);                    /* the app's default chain */
          p.top_k = 0;
          sample_case (&p, n, kind, NULL, 0);                    /* top-p and min-p alone */
          p.min_p = 0;
          sample_case (&p, n, kind, NULL, 0);                    /* top-p alone */
          p.top_p = 1;
          p.temperature = 1.3f;
          sample_case (&p, n, kind, NULL, 0);                    /* the whole vocabulary */
          p.top_k = 1000;
          sample_case (&p, n, kind, NULL, 0);                    /* a large top-k */
          p.top_k = 3000;
          p.top_p = 0.9f;
          sample_case (&p, n, kind, NULL, 0);                    /* top-k past the fast path */
          p.min_p = 0.01f;
          sample_case (&p, n, kind, NULL, 0);
          p = lm_sampler_params_default (seed);
          p.repeat_penalty = 1.5f;
          sample_case (&p, n, kind, history, 100);               /* penalty, ring wrapped */
          p.temperature = 0;
          sample_case (&p, n, kind, history, 30);                /* greedy with a penalty */
        }
  LmCudaSampleParams bad = { NAN, 40, 1.0f, 0.0f, 1.0f };
  g_assert_cmpint (lm_cuda_sample (NULL, &bad, NULL, 100000, NULL, NULL, NULL, NULL, NULL), ==,
                   LM_ERR_INVALID_ARGUMENT);
}

/* ---- a decode step as a CUDA graph ---- */

typedef struct {
  const Shape *sh;
  uint32_t n_ctx;
  float *qg, *k, *v, *kc, *vc, *scratch, *out;
  void *sample_scratch;
  uint32_t *pos;
  double *u;
  int32_t *token, *history, *history_state;
  LmCudaSampleParams sp;
  int32_t repeat_last_n;
  LmStatus st;
} GraphStep;

static void
graph_step (void *ctx, void *stream)
{
  GraphStep *g = ctx;
  const Shape *sh = g->sh;
  uint32_t hd = sh->head_dim, n_out = sh->n_head * hd;
  LmCudaStream s = stream;
  LmStatus st;
  if ((st = lm_cuda_rope (s, g->qg, 2 * hd * sh->n_head, 2 * hd, sh->n_head, 1, g->pos, sh->n_rot,
                          sh->rope_base, sh->sections))
      || (st = lm_cuda_rope (s, g->k, hd * sh->n_head_kv, hd, sh->n_head_kv, 1, g->pos, sh->n_rot,
                             sh->rope_base, sh->sections))
      || (st = lm_cuda_kv_append (s, g->k, g->v, hd * sh->n_head_kv, 1, g->pos, g->kc, g->vc))
      || (st = lm_cuda_attention_split (s, g->qg, true, g->kc, g->vc, sh->n_head, sh->n_head_kv,
                                        hd, 1, g->pos, g->n_ctx, g->scratch, g->out))
      || (st = lm_cuda_sample (s, &g->sp, g->out, n_out, g->history, g->history_state, g->u,
                               g->sample_scratch, g->token))
      || (st = lm_cuda_sample_accept (s, g->token, n_out, g->repeat_last_n, g->history,
                                      g->history_state)))
    g->st = st;
}

/* rope, KV append, split attention, sampling (over the attention output as
 * logits) and the history, captured once and replayed at the positions
 * 0 .. 39 with new inputs and uniform numbers in device memory. */
static void
test_graph_replay (void)
{
  if (!need_gpu ())
    return;
  const Shape *sh = &shape_35b;
  uint32_t hd = sh->head_dim, kvd = hd * sh->n_head_kv, n_ctx = 600, G = sh->n_head / sh->n_head_kv;
  uint32_t qn = 2 * hd * sh->n_head, n_out = sh->n_head * hd;
  LmSamplerParams sp = lm_sampler_params_default (77);
  sp.repeat_penalty = 1.3f;
  sp.repeat_last_n = 16;
  GraphStep g = { sh, n_ctx, ct_alloc (qn * 4), ct_alloc (kvd * 4), ct_alloc (kvd * 4),
                  ct_alloc ((size_t) n_ctx * kvd * 4), ct_alloc ((size_t) n_ctx * kvd * 4),
                  ct_alloc (lm_cuda_attention_scratch_floats (sh->n_head, hd, 1, n_ctx) * 4),
                  ct_alloc (n_out * 4), ct_alloc (lm_cuda_sample_scratch_bytes (n_out)),
                  ct_alloc (4), ct_alloc (8),
                  ct_alloc (4), ct_alloc (16 * 4), ct_alloc (8),
                  { sp.temperature, sp.top_k, sp.top_p, sp.min_p, sp.repeat_penalty }, 16, LM_OK };
  void *stream = ct_stream_new ();
  void *graph = ct_graph_capture (stream, graph_step, &g);
  g_assert_cmpint (g.st, ==, LM_OK);

  float *kc = g_new0 (float, (size_t) n_ctx * kvd), *vc = g_new0 (float, (size_t) n_ctx * kvd);
  float *want = g_new (float, n_out), *got = g_new (float, n_out), cs[LM_CUDA_MAX_HEAD_DIM];
  LmSampler *cpu = lm_sampler_new (&sp, (int32_t) n_out);
  uint64_t rs[4];
  lm_rng_seed (rs, sp.seed);
  const LmKernels *kern = lm_kernels_best ();
  for (uint32_t pos = 0; pos < 40; pos++)
    {
      float *qg = random_floats (qn, -3, 3), *k = random_floats (kvd, -1, 1);
      float *v = random_floats (kvd, -1, 1);
      double u = lm_rng_uniform (rs);
      ct_copy_in (g.qg, qg, qn * 4);
      ct_copy_in (g.k, k, kvd * 4);
      ct_copy_in (g.v, v, kvd * 4);
      ct_copy_in (g.pos, &pos, 4);
      ct_copy_in (g.u, &u, sizeof u);
      ct_graph_launch (graph, stream);

      lm_rope_table (pos, sh->n_rot, sh->rope_base, sh->sections, cs);
      for (uint32_t h = 0; h < sh->n_head; h++)
        lm_rope_apply (qg + (size_t) h * 2 * hd, sh->n_rot, cs);
      for (uint32_t h = 0; h < sh->n_head_kv; h++)
        lm_rope_apply (k + (size_t) h * hd, sh->n_rot, cs);
      memcpy (kc + (size_t) pos * kvd, k, kvd * 4);
      memcpy (vc + (size_t) pos * kvd, v, kvd * 4);
      for (uint32_t h = 0; h < sh->n_head; h++)
        lm_attend_head (kern, qg + (size_t) h * 2 * hd, qg + (size_t) h * 2 * hd + hd,
                        kc + (size_t) (h / G) * hd, vc + (size_t) (h / G) * hd, kvd, pos + 1, hd,
                        want + (size_t) h * hd);
      ct_download (got, g.out, n_out * 4);
      check_close ("graph: attention", sh, got, want, n_out, 2e-4, 2e-5);
      /* the CPU sampler on the GPU's logits: its generator, seeded alike,
       * draws the same uniform numbers (one per sampled token) */
      int32_t token = -1;
      ct_download (&token, g.token, 4);
      int32_t cpu_token = lm_sampler_sample (cpu, got);
      g_assert_cmpint (token, ==, cpu_token);
      lm_sampler_accept (cpu, token);
      g_free (qg);
      g_free (k);
      g_free (v);
    }
  lm_sampler_free (cpu);
  ct_graph_free (graph);
  ct_stream_free (stream);
  g_free (kc);
  g_free (vc);
  g_free (want);
  g_free (got);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  rng = g_rand_new_with_seed (20261121);
  g_test_add_func ("/engine/cuda-ops/norms", test_norms);
  g_test_add_func ("/engine/cuda-ops/rope-kv", test_rope_kv);
  g_test_add_func ("/engine/cuda-ops/attention", test_attention);
  g_test_add_func ("/engine/cuda-ops/causal-conv", test_causal_conv);
  g_test_add_func ("/engine/cuda-ops/delta-rule", test_delta_rule);
  g_test_add_func ("/engine/cuda-ops/moe", test_moe);
  g_test_add_func ("/engine/cuda-ops/argmax", test_argmax);
  g_test_add_func ("/engine/cuda-ops/sample", test_sample);
  g_test_add_func ("/engine/cuda-ops/graph-replay", test_graph_replay);
  int rc = g_test_run ();
  g_rand_free (rng);
  return rc;
}
