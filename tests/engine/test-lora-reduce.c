/* test-lora-reduce.c: rank reduction against an independent SVD, and reduced
 * adapters (GGUF and PEFT) loaded back into the golden model.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "lora-gguf.h"
#include "lora-write.h"
#include "safetensors-json.h"
#include "safetensors.h"
#include "test-forward-util.h"
#include "ts-test-util.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#define MODEL "tiny-qwen35moe-f32"
#define GGUF_REL "qwen35/" MODEL "/lora/tiny-qwen35moe-lora-f32.gguf"
#define PEFT_REL "qwen35/" MODEL "/lora/peft"

/* ---- the reference: eigenvalues of M^T M by the classic two-sided Jacobi method ---- */

/* Symmetric n × n @s (row-major, destroyed): eigenvalues into @lambda,
 * eigenvectors as the columns of @vec. */
static void
jacobi_eigen (double *s, size_t n, double *lambda, double *vec)
{
  for (size_t i = 0; i < n * n; i++)
    vec[i] = i % (n + 1) == 0 ? 1.0 : 0.0;
  for (int sweep = 0; sweep < 100; sweep++)
    {
      double off = 0.0;
      for (size_t p = 0; p < n; p++)
        for (size_t q = p + 1; q < n; q++)
          off += s[p * n + q] * s[p * n + q];
      if (off < 1e-40)
        break;
      for (size_t p = 0; p < n; p++)
        for (size_t q = p + 1; q < n; q++)
          {
            double apq = s[p * n + q];
            if (fabs (apq) < 1e-300)
              continue;
            double theta = (s[q * n + q] - s[p * n + p]) / (2.0 * apq);
            double t = (theta >= 0 ? 1.0 : -1.0) / (fabs (theta) + sqrt (theta * theta + 1.0));
            double c = 1.0 / sqrt (t * t + 1.0), sn = t * c;
            for (size_t k = 0; k < n; k++)       /* S <- S J (columns p, q) */
              {
                double x = s[k * n + p], y = s[k * n + q];
                s[k * n + p] = c * x - sn * y;
                s[k * n + q] = sn * x + c * y;
              }
            for (size_t k = 0; k < n; k++)       /* S <- J^T S (rows p, q) */
              {
                double x = s[p * n + k], y = s[q * n + k];
                s[p * n + k] = c * x - sn * y;
                s[q * n + k] = sn * x + c * y;
              }
            for (size_t k = 0; k < n; k++)
              {
                double x = vec[k * n + p], y = vec[k * n + q];
                vec[k * n + p] = c * x - sn * y;
                vec[k * n + q] = sn * x + c * y;
              }
          }
    }
  for (size_t i = 0; i < n; i++)
    lambda[i] = s[i * n + i];
}

/* M = scale · B · A in double (d_out × d_in). */
static double *
full_product (const float *a, const float *b, uint32_t r, uint32_t d_in, uint32_t d_out,
              double scale)
{
  double *m = g_new0 (double, (size_t) d_out * d_in);
  for (uint32_t i = 0; i < d_out; i++)
    for (uint32_t j = 0; j < d_in; j++)
      {
        double sum = 0.0;
        for (uint32_t l = 0; l < r; l++)
          sum += (double) b[(size_t) i * r + l] * a[(size_t) l * d_in + j];
        m[(size_t) i * d_in + j] = scale * sum;
      }
  return m;
}

typedef struct {
  double *sigma;   /* decreasing */
  double *v;       /* d_in × d_in, column i the right singular vector of sigma[i] */
} Reference;

static Reference
reference_svd (const double *m, uint32_t d_in, uint32_t d_out)
{
  g_autofree double *mtm = g_new0 (double, (size_t) d_in * d_in);
  g_autofree double *lambda = g_new (double, d_in), *vec = g_new (double, (size_t) d_in * d_in);
  for (uint32_t i = 0; i < d_in; i++)
    for (uint32_t j = 0; j < d_in; j++)
      for (uint32_t k = 0; k < d_out; k++)
        mtm[i * d_in + j] += m[(size_t) k * d_in + i] * m[(size_t) k * d_in + j];
  jacobi_eigen (mtm, d_in, lambda, vec);
  Reference ref = { g_new (double, d_in), g_new (double, (size_t) d_in * d_in) };
  g_autofree gboolean *used = g_new0 (gboolean, d_in);
  for (uint32_t i = 0; i < d_in; i++)
    {
      uint32_t best = 0;
      for (uint32_t j = 0; j < d_in; j++)
        if (!used[j] && (used[best] || lambda[j] > lambda[best]))
          best = j;
      used[best] = TRUE;
      ref.sigma[i] = sqrt (fmax (lambda[best], 0.0));
      for (uint32_t k = 0; k < d_in; k++)
        ref.v[k * d_in + i] = vec[k * d_in + best];
    }
  return ref;
}

static void
fill_random (GRand *rng, float *x, size_t n)
{
  for (size_t i = 0; i < n; i++)
    x[i] = (float) g_rand_double_range (rng, -1.0, 1.0);
}

static double
frobenius_sq_diff (const double *m, const float *a, const float *b, uint32_t rank,
                   uint32_t d_in, uint32_t d_out, double scale)
{
  g_autofree double *p = full_product (a, b, rank, d_in, d_out, scale);
  double sum = 0.0;
  for (size_t i = 0; i < (size_t) d_in * d_out; i++)
    sum += (m[i] - p[i]) * (m[i] - p[i]);
  return sum;
}

/* Singular values, energies, the optimal approximation M V_R V_R^T and the
 * Eckart–Young residual, for every R, on random shapes (tall, wide, r > d). */
static void
test_against_reference (void)
{
  static const uint32_t shapes[][3] = { { 6, 11, 9 }, { 8, 5, 13 }, { 7, 14, 4 }, { 12, 16, 16 } };
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  for (size_t s = 0; s < G_N_ELEMENTS (shapes); s++)
    {
      uint32_t r = shapes[s][0], d_in = shapes[s][1], d_out = shapes[s][2];
      g_autofree float *a = g_new (float, (size_t) r * d_in), *b = g_new (float, (size_t) d_out * r);
      fill_random (rng, a, (size_t) r * d_in);
      fill_random (rng, b, (size_t) d_out * r);
      double scale = 1.75;
      g_autofree double *m = full_product (a, b, r, d_in, d_out, scale);
      Reference ref = reference_svd (m, d_in, d_out);
      uint32_t n = MIN (r, MIN (d_in, d_out));
      g_autofree double *sigma = g_new (double, r);
      g_assert_cmpint (lm_lora_singular_values (r, d_in, d_out, a, b, scale, sigma), ==, LM_OK);
      double total = 0.0;
      for (uint32_t i = 0; i < n; i++)
        {
          g_assert_cmpfloat (fabs (sigma[i] - ref.sigma[i]), <=, 1e-9 * ref.sigma[0]);
          total += ref.sigma[i] * ref.sigma[i];
        }
      for (uint32_t R = 1; R <= r + 2; R++)
        {
          float *na, *nb;
          LmLoraReduceInfo info;
          g_assert_cmpint (lm_lora_reduce_module (r, d_in, d_out, a, b, scale, R, NULL, NULL,
                                                  &na, &nb, &info), ==, LM_OK);
          uint32_t k = MIN (R, n);
          g_assert_cmpuint (info.rank_out, ==, k);
          double kept = 0.0;
          for (uint32_t i = 0; i < k; i++)
            kept += ref.sigma[i] * ref.sigma[i];
          g_assert_cmpfloat (fabs (info.energy_total - total), <=, 1e-9 * total);
          g_assert_cmpfloat (fabs (info.energy_kept - kept), <=, 1e-9 * total);
          /* ‖M − B'A'‖² = discarded energy (f32 factors: ~1e-7 of the total) */
          double resid = frobenius_sq_diff (m, na, nb, k, d_in, d_out, 1.0);
          g_assert_cmpfloat (fabs (resid - (total - kept)), <=, 1e-6 * total);
          /* B'A' = M V_k V_k^T entry by entry (the gap between σ_k and σ_k+1 is
           * wide for random matrices, so the optimum is unique) */
          g_autofree double *p = full_product (na, nb, k, d_in, d_out, 1.0);
          for (uint32_t i = 0; i < d_out; i++)
            for (uint32_t j = 0; j < d_in; j++)
              {
                double opt = 0.0;
                for (uint32_t l = 0; l < d_in; l++)
                  {
                    double proj = 0.0;
                    for (uint32_t t = 0; t < k; t++)
                      proj += ref.v[l * d_in + t] * ref.v[j * d_in + t];
                    opt += m[(size_t) i * d_in + l] * proj;
                  }
                g_assert_cmpfloat (fabs (p[(size_t) i * d_in + j] - opt), <=, 1e-5 * ref.sigma[0]);
              }
          if (R >= r)   /* full rank: the same product */
            for (size_t i = 0; i < (size_t) d_in * d_out; i++)
              g_assert_cmpfloat (fabs (p[i] - m[i]), <=, 1e-6 * ref.sigma[0]);
          free (na);
          free (nb);
        }
      g_free (ref.sigma);
      g_free (ref.v);
    }
}

static double
half_factor (uint32_t rank, void *user_data)
{
  (void) rank;
  return *(const double *) user_data;
}

/* A product of rank 2 written with r = 6 reduces to rank 2 losslessly; the
 * output factor is honoured; a zero module stays zero; bad input is refused. */
static void
test_degenerate (void)
{
  uint32_t r = 6, d = 10;
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed () + 1);
  g_autofree float *a = g_new0 (float, r * d), *b = g_new0 (float, d * r);
  fill_random (rng, a, 2 * d);         /* only two non-zero rows of A */
  fill_random (rng, b, d * r);
  g_autofree double *m = full_product (a, b, r, d, d, 1.0);
  float *na, *nb;
  LmLoraReduceInfo info;
  double factor = 0.5;
  g_assert_cmpint (lm_lora_reduce_module (r, d, d, a, b, 1.0, 2, half_factor, &factor, &na, &nb,
                                          &info), ==, LM_OK);
  g_assert_cmpfloat (info.energy_kept / info.energy_total, >, 1.0 - 1e-12);
  double resid = frobenius_sq_diff (m, na, nb, 2, d, d, factor);
  g_assert_cmpfloat (resid, <=, 1e-10 * info.energy_total);
  free (na);
  free (nb);
  memset (a, 0, r * d * sizeof (float));
  g_assert_cmpint (lm_lora_reduce_module (r, d, d, a, b, 1.0, 3, NULL, NULL, &na, &nb, &info), ==,
                   LM_OK);
  g_assert_cmpfloat (info.energy_total, ==, 0.0);
  for (size_t i = 0; i < 3 * d; i++)
    g_assert_true (na[i] == 0.0f && nb[i] == 0.0f);
  free (na);
  free (nb);
  a[3] = NAN;
  g_assert_cmpint (lm_lora_reduce_module (r, d, d, a, b, 1.0, 3, NULL, NULL, &na, &nb, &info), ==,
                   LM_ERR_FORMAT);
  g_assert_cmpint (lm_lora_reduce_module (r, d, d, a, b, 1.0, 0, NULL, NULL, &na, &nb, &info), ==,
                   LM_ERR_INVALID_ARGUMENT);
}

/* ---- reduced golden adapters ---- */

typedef struct {
  GHashTable *discarded;   /* module stem -> discarded energy (double *) */
  double total;
} Report;

static bool
collect (const char *name, const LmLoraReduceInfo *info, void *user_data)
{
  Report *rep = user_data;
  double *d = g_new (double, 1);
  *d = info->energy_total - info->energy_kept;
  g_hash_table_insert (rep->discarded, g_strdup (name), d);
  rep->total += info->energy_total;
  return true;
}

/* @rel: a path under tests/data, or an absolute one. */
static LmLora *
reduce_and_load (const LmModel *m, const char *rel, const char *out, uint32_t rank, Report *rep)
{
  g_autofree char *in = g_path_is_absolute (rel) ? g_strdup (rel) : ts_test_data_path (rel);
  char *error = NULL;
  LmStatus st = lm_lora_reduce_file (in, out, rank, collect, rep, &error);
  if (st != LM_OK)
    g_error ("reducing %s: %s (%s)", in, lm_status_message (st), error ? error : "");
  LmLora *lora = NULL;
  st = lm_lora_load (m, out, 1.0f, &lora, &error);
  if (st != LM_OK)
    g_error ("loading %s: %s (%s)", out, lm_status_message (st), error ? error : "");
  return lora;
}

static LmLora *
load_original (const LmModel *m, const char *rel)
{
  g_autofree char *path = ts_test_data_path (rel);
  LmLora *lora = NULL;
  g_assert_cmpint (lm_lora_load (m, path, 1.0f, &lora, NULL), ==, LM_OK);
  return lora;
}

/* Per module of a GGUF adapter: ‖s·BA − s'·B'A'‖_F² equals the discarded
 * energy reported for it. */
static void
check_modules (const LmLora *orig, const LmLora *red, uint32_t rank, Report *rep)
{
  g_assert_cmpuint (lm_lora_n_modules (red), ==, lm_lora_n_modules (orig));
  for (size_t i = 0; i < lm_lora_n_modules (orig); i++)
    {
      const LmLoraModule *mo = lm_lora_module (orig, i);
      const LmLoraModule *mr = lm_lora_module (red, (size_t) lm_lora_find (red, mo->name));
      g_assert_cmpuint (mr->rank, ==, MIN (rank, mo->rank));
      g_autofree double *m = full_product (mo->a, mo->b, mo->rank, mo->d_in, mo->d_out, mo->scale);
      double resid = frobenius_sq_diff (m, mr->a, mr->b, mr->rank, mr->d_in, mr->d_out, mr->scale);
      const double *disc = g_hash_table_lookup (rep->discarded, mo->name);
      g_assert_nonnull (disc);
      g_assert_cmpfloat (fabs (resid - *disc), <=, 1e-6 * rep->total);
    }
}

static float *
lora_logits (const LmModel *m, const LmLora *lora, gsize *n)
{
  gsize n_tok;
  g_autofree int32_t *tokens = golden_ints (MODEL, "prompt_tokens.bin", &n_tok);
  LmSession *s = golden_session (m, 2, 64);
  g_assert_cmpint (lm_session_set_lora (s, lora), ==, LM_OK);
  float *logits = prefill_all (s, tokens, n_tok);
  *n = n_tok * lm_model_info (m)->n_vocab;
  lm_session_free (s);
  return logits;
}

static Report
report_new (void)
{
  return (Report) { g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free), 0.0 };
}

/* Full rank: the goldens again. Lower ranks: each module loses exactly its
 * discarded energy, and the logits move less as the rank grows. */
static void
test_golden_gguf (void)
{
  LmModel *m = golden_model (MODEL);
  LmLora *orig = load_original (m, GGUF_REL);
  g_autofree char *dir = g_dir_make_tmp ("lora-reduce-XXXXXX", NULL);
  g_autofree char *out = g_build_filename (dir, "reduced.gguf", NULL);
  gsize n, n_gold;
  g_autofree float *gold = golden_floats (MODEL, "lora_logits_batched.bin", &n_gold);
  g_autofree float *base_logits = NULL;
  {
    Report rep = report_new ();
    LmLora *red = reduce_and_load (m, GGUF_REL, out, 8, &rep);
    check_modules (orig, red, 8, &rep);
    g_autofree float *logits = lora_logits (m, red, &n);
    g_assert_cmpuint (n, ==, n_gold);
    assert_close ("rank 8 of 8", logits, gold, n, LOGITS_TOL);
    lm_lora_free (red);
    g_hash_table_destroy (rep.discarded);
  }
  double prev = INFINITY;
  for (uint32_t rank = 1; rank < 8; rank *= 2)
    {
      Report rep = report_new ();
      LmLora *red = reduce_and_load (m, GGUF_REL, out, rank, &rep);
      check_modules (orig, red, rank, &rep);
      g_assert_cmpfloat (lm_lora_module (red, 0)->scale, ==, 1.0f);   /* alpha = new rank */
      g_autofree float *logits = lora_logits (m, red, &n);
      double diff = max_abs_diff (logits, gold, n);
      g_test_message ("rank %u: max |logits - golden| = %.4g", rank, diff);
      g_assert_cmpfloat (diff, <, prev);
      g_assert_cmpfloat (diff, >, LOGITS_TOL);
      prev = diff;
      lm_lora_free (red);
      g_hash_table_destroy (rep.discarded);
    }
  g_remove (out);
  g_rmdir (dir);
  lm_lora_free (orig);
  lm_model_free (m);
}

/* The PEFT folder (Hugging Face order, value-head permutation at load time)
 * reduces to the same products as the GGUF file, and its config says r = 4. */
static void
test_golden_peft (void)
{
  LmModel *m = golden_model (MODEL);
  g_autofree char *dir = g_dir_make_tmp ("lora-reduce-XXXXXX", NULL);
  g_autofree char *out_peft = g_build_filename (dir, "peft", NULL);
  g_autofree char *out_gguf = g_build_filename (dir, "r4.gguf", NULL);
  Report rp = report_new (), rg = report_new ();
  LmLora *peft = reduce_and_load (m, PEFT_REL, out_peft, 4, &rp);
  LmLora *gguf = reduce_and_load (m, GGUF_REL, out_gguf, 4, &rg);
  g_assert_cmpfloat (fabs (rp.total - rg.total), <=, 1e-9 * rg.total);
  for (size_t i = 0; i < lm_lora_n_modules (gguf); i++)
    {
      const LmLoraModule *mg = lm_lora_module (gguf, i);
      const LmLoraModule *mp = lm_lora_module (peft, (size_t) lm_lora_find (peft, mg->name));
      g_assert_cmpuint (mp->rank, ==, 4);
      g_autofree double *pg = full_product (mg->a, mg->b, 4, mg->d_in, mg->d_out, mg->scale);
      g_autofree double *pp = full_product (mp->a, mp->b, 4, mp->d_in, mp->d_out, mp->scale);
      double max = 0.0, diff = 0.0;
      for (size_t k = 0; k < (size_t) mg->d_in * mg->d_out; k++)
        {
          max = fmax (max, fabs (pg[k]));
          diff = fmax (diff, fabs (pg[k] - pp[k]));
        }
      g_assert_cmpfloat (diff, <=, 1e-5 * max);
    }
  g_autofree char *cfg_path = g_build_filename (out_peft, "adapter_config.json", NULL);
  g_autofree char *text = NULL;
  gsize len;
  g_assert_true (g_file_get_contents (cfg_path, &text, &len, NULL));
  LmJson *root = lm_json_parse (text, len, NULL);
  g_assert_nonnull (root);
  uint64_t r = 0;
  double alpha = 0.0;
  const char *type = NULL;
  g_assert_true (lm_json_get_uint (root, "r", &r) && r == 4);
  g_assert_true (lm_json_get_number (root, "lora_alpha", &alpha) && alpha == 4.0);
  g_assert_true (lm_json_get_string (root, "peft_type", &type) && strcmp (type, "LORA") == 0);
  lm_json_free (root);
  g_hash_table_destroy (rp.discarded);
  g_hash_table_destroy (rg.discarded);
  lm_lora_free (peft);
  lm_lora_free (gguf);
  g_autofree char *st_path = g_build_filename (out_peft, "adapter_model.safetensors", NULL);
  g_remove (st_path);
  g_remove (cfg_path);
  g_rmdir (out_peft);
  g_remove (out_gguf);
  g_rmdir (dir);
  lm_model_free (m);
}

/* ---- half-precision adapters stay half precision ---- */

/* The real banking adapter of the demo catalogue: PEFT, F16, rank 16 on the
 * q and v projections of all 24 layers of Qwen2.5-Coder-0.5B. */
static char *
banking_adapter (void)
{
  g_autofree char *tests_data = ts_test_data_path (".");
  return g_build_filename (tests_data, "..", "..", "data", "market", "qwen2.5-coder-0.5b-banking",
                           NULL);
}

/* @dir's adapter_config.json: lora_alpha / r, the factor of B·A. */
static double
peft_scale (const char *dir)
{
  g_autofree char *path = g_build_filename (dir, "adapter_config.json", NULL);
  g_autofree char *text = NULL;
  gsize len;
  uint64_t r = 0;
  double alpha = 0.0;
  g_assert_true (g_file_get_contents (path, &text, &len, NULL));
  LmJson *root = lm_json_parse (text, len, NULL);
  g_assert_nonnull (root);
  g_assert_true (lm_json_get_uint (root, "r", &r) && r > 0);
  g_assert_true (lm_json_get_number (root, "lora_alpha", &alpha));
  lm_json_free (root);
  return alpha / (double) r;
}

/* One module's product scale·B·A, d_out × d_in. */
typedef struct {
  size_t n;
  double *m;
} Product;

static void
product_free (gpointer data)
{
  Product *p = data;
  g_free (p->m);
  g_free (p);
}

/* Every module's full product (name of its A tensor → Product); asserts
 * that every factor is stored as @dtype. */
static GHashTable *
peft_products (const char *dir, SafetensorsDtype dtype, uint32_t *rank_out)
{
  g_autofree char *path = g_build_filename (dir, "adapter_model.safetensors", NULL);
  GHashTable *products = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, product_free);
  SafetensorsFile *st = NULL;
  double scale = peft_scale (dir);
  g_assert_cmpint (lm_safetensors_open (path, &st, NULL), ==, LM_OK);
  for (size_t i = 0; i < lm_safetensors_n_tensors (st); i++)
    {
      const SafetensorsTensor *ta = lm_safetensors_tensor (st, i);
      g_assert_cmpint (ta->dtype, ==, dtype);
      if (!g_str_has_suffix (ta->name, ".lora_A.weight"))
        continue;
      g_autofree char *stem = g_strndup (ta->name, strlen (ta->name) - strlen ("A.weight"));
      g_autofree char *b_name = g_strconcat (stem, "B.weight", NULL);
      const SafetensorsTensor *tb = lm_safetensors_find (st, b_name);
      g_assert_nonnull (tb);
      uint32_t r = (uint32_t) ta->shape[0], d_in = (uint32_t) ta->shape[1];
      uint32_t d_out = (uint32_t) tb->shape[0];
      g_assert_cmpuint (tb->shape[1], ==, r);
      g_autofree float *a = g_new (float, ta->n_elements);
      g_autofree float *b = g_new (float, tb->n_elements);
      g_assert_cmpint (lm_safetensors_read_f32 (ta, a), ==, LM_OK);
      g_assert_cmpint (lm_safetensors_read_f32 (tb, b), ==, LM_OK);
      Product *p = g_new (Product, 1);
      p->n = (size_t) d_in * d_out;
      p->m = full_product (a, b, r, d_in, d_out, scale);
      g_hash_table_insert (products, g_strdup (ta->name), p);
      *rank_out = r;
    }
  lm_safetensors_close (st);
  return products;
}

static gint64
file_size (const char *dir, const char *name)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  GStatBuf sb;
  g_assert_cmpint (g_stat (path, &sb), ==, 0);
  return (gint64) sb.st_size;
}

/* An F16 adapter reduced stays F16, so rank 8 of rank 16 is half the file
 * (written in F32 it was as big as the original); at its own rank it is
 * the same product up to F16 rounding, and at rank 8 each module loses the
 * energy the reduction reported, no more. */
static void
test_half_precision_kept (void)
{
  g_autofree char *in = banking_adapter ();
  g_autofree char *dir = g_dir_make_tmp ("lora-reduce-f16-XXXXXX", NULL);
  g_autofree char *same = g_build_filename (dir, "r16", NULL);
  g_autofree char *half = g_build_filename (dir, "r8", NULL);
  Report r16 = report_new (), r8 = report_new ();
  uint32_t rank_in = 0, rank_same = 0, rank_half = 0;
  char *error = NULL;

  g_assert_cmpint (lm_lora_reduce_file (in, same, 16, collect, &r16, &error), ==, LM_OK);
  g_assert_cmpint (lm_lora_reduce_file (in, half, 8, collect, &r8, &error), ==, LM_OK);
  g_autoptr (GHashTable) original = peft_products (in, SAFETENSORS_F16, &rank_in);
  g_autoptr (GHashTable) kept = peft_products (same, SAFETENSORS_F16, &rank_same);
  g_autoptr (GHashTable) reduced = peft_products (half, SAFETENSORS_F16, &rank_half);
  g_assert_cmpuint (rank_in, ==, 16);
  g_assert_cmpuint (rank_same, ==, 16);
  g_assert_cmpuint (rank_half, ==, 8);
  gint64 in_bytes = file_size (in, "adapter_model.safetensors");
  gint64 half_bytes = file_size (half, "adapter_model.safetensors");
  g_test_message ("rank 16: %" G_GINT64_FORMAT " bytes, rank 8: %" G_GINT64_FORMAT " bytes",
                  in_bytes, half_bytes);
  g_assert_cmpint (half_bytes, <, in_bytes * 51 / 100);
  g_assert_cmpuint (g_hash_table_size (original), ==, 48);
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init (&it, original);
  while (g_hash_table_iter_next (&it, &key, &value))
    {
      const Product *po = value, *pk = g_hash_table_lookup (kept, key);
      const Product *ph = g_hash_table_lookup (reduced, key);
      g_assert_nonnull (pk);
      g_assert_nonnull (ph);
      g_assert_cmpuint (pk->n, ==, po->n);
      g_assert_cmpuint (ph->n, ==, po->n);
      const double *m = po->m, *k = pk->m, *h = ph->m;
      double total = 0.0, err_same = 0.0, resid = 0.0;
      for (size_t i = 0; i < po->n; i++)
        {
          total += m[i] * m[i];
          err_same += (m[i] - k[i]) * (m[i] - k[i]);
          resid += (m[i] - h[i]) * (m[i] - h[i]);
        }
      g_assert_cmpfloat (err_same, <=, 1e-5 * total);
      g_autofree char *module = g_strndup (key, strlen (key) - strlen (".lora_A.weight"));
      const double *disc = g_hash_table_lookup (r8.discarded, module);
      g_assert_nonnull (disc);
      g_assert_cmpfloat (fabs (resid - *disc), <=, 5e-3 * total);
    }
  g_hash_table_destroy (r16.discarded);
  g_hash_table_destroy (r8.discarded);
  ts_test_remove_tree (dir);
}

/* @path's pairs, each factor checked to be of @type; products as in
 * peft_products() (GGUF factors carry alpha / rank, or 1 without alpha). */
static GHashTable *
gguf_products (const char *path, LmTensorType type)
{
  GHashTable *products = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, product_free);
  LmLoraGguf *adapter = NULL;
  g_assert_cmpint (lm_lora_gguf_open (path, &adapter, NULL), ==, LM_OK);
  float alpha = lm_lora_gguf_alpha (adapter);
  for (size_t i = 0; i < lm_lora_gguf_n_pairs (adapter); i++)
    {
      const LmLoraGgufPair *pair = lm_lora_gguf_pair (adapter, i);
      g_autofree float *a = NULL, *b = NULL;
      g_assert_cmpint (pair->a->type, ==, type);
      g_assert_cmpint (pair->b->type, ==, type);
      g_assert_cmpint (lm_lora_gguf_pair_f32 (pair, &a, &b), ==, LM_OK);
      Product *p = g_new (Product, 1);
      p->n = (size_t) pair->d_in * pair->d_out;
      p->m = full_product (a, b, pair->rank, pair->d_in, pair->d_out,
                           alpha > 0 ? alpha / (double) pair->rank : 1.0);
      g_hash_table_insert (products, g_strdup (pair->name), p);
    }
  lm_lora_gguf_close (adapter);
  return products;
}

/* The golden GGUF adapter written in F16, then reduced: the result is F16
 * too, and at full rank the same products up to F16 rounding. */
static void
test_half_precision_gguf (void)
{
  g_autofree char *golden = ts_test_data_path (GGUF_REL);
  g_autofree char *dir = g_dir_make_tmp ("lora-reduce-f16-XXXXXX", NULL);
  g_autofree char *f16 = g_build_filename (dir, "f16.gguf", NULL);
  g_autofree char *out = g_build_filename (dir, "reduced.gguf", NULL);
  LmLoraGguf *adapter = NULL;
  g_assert_cmpint (lm_lora_gguf_open (golden, &adapter, NULL), ==, LM_OK);
  size_t n = lm_lora_gguf_n_pairs (adapter);
  g_autofree LmLoraGgufModule *modules = g_new0 (LmLoraGgufModule, n);
  g_autoptr (GPtrArray) buffers = g_ptr_array_new_with_free_func (free);
  for (size_t i = 0; i < n; i++)
    {
      const LmLoraGgufPair *pair = lm_lora_gguf_pair (adapter, i);
      float *a = NULL, *b = NULL;
      g_assert_cmpint (lm_lora_gguf_pair_f32 (pair, &a, &b), ==, LM_OK);
      g_ptr_array_add (buffers, a);
      g_ptr_array_add (buffers, b);
      modules[i] = (LmLoraGgufModule) { pair->name, pair->rank, pair->d_in, pair->d_out, a, b };
    }
  LmLoraGgufKeys keys = { .copy_from = lm_lora_gguf_file (adapter),
                          .alpha = lm_lora_gguf_alpha (adapter), .half = true };
  g_assert_cmpint (lm_lora_gguf_write (f16, &keys, modules, n, NULL), ==, LM_OK);
  lm_lora_gguf_close (adapter);
  g_assert_cmpint (lm_lora_reduce_file (f16, out, 8, NULL, NULL, NULL), ==, LM_OK);
  g_autoptr (GHashTable) before = gguf_products (f16, LM_TYPE_F16);
  g_autoptr (GHashTable) after = gguf_products (out, LM_TYPE_F16);
  g_assert_cmpuint (g_hash_table_size (after), ==, n);
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init (&it, before);
  while (g_hash_table_iter_next (&it, &key, &value))
    {
      const Product *pb = value, *pa = g_hash_table_lookup (after, key);
      double total = 0.0, err = 0.0;
      g_assert_nonnull (pa);
      for (size_t i = 0; i < pb->n; i++)
        {
          total += pb->m[i] * pb->m[i];
          err += (pb->m[i] - pa->m[i]) * (pb->m[i] - pa->m[i]);
        }
      g_assert_cmpfloat (err, <=, 1e-5 * total);
    }
  ts_test_remove_tree (dir);
}

/* Runs tensafe-cli with @args (NULL-terminated); returns the exit status. */
static int
run_cli (const char *const *args, char **out, char **err)
{
  const char *cli = g_getenv ("TENSAFE_CLI");
  g_assert_nonnull (cli);
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) cli);
  for (size_t i = 0; args[i]; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  int status = 0;
  g_assert_true (g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                               out, err, &status, NULL));
  return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

/* tensafe-cli adapter reduce --json: one entry per module, the retained
 * fractions those of the singular values; bad input fails without output. */
static void
test_cli (void)
{
  g_autofree char *in = ts_test_data_path (GGUF_REL);
  g_autofree char *model = ts_test_data_path ("qwen35/" MODEL "/tiny-qwen35moe-f32.gguf");
  g_autofree char *dir = g_dir_make_tmp ("lora-reduce-XXXXXX", NULL);
  g_autofree char *out_path = g_build_filename (dir, "r2.gguf", NULL);
  g_autofree char *out = NULL, *err = NULL;
  const char *args[] = { "adapter", "reduce", "--rank", "2", "--json", in, out_path, NULL };
  g_assert_cmpint (run_cli (args, &out, &err), ==, 0);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_assert_true (json_parser_load_from_data (parser, out, -1, NULL));
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  g_assert_true (json_object_get_boolean_member (root, "ok"));
  JsonArray *mods = json_object_get_array_member (root, "modules");
  g_assert_cmpuint (json_array_get_length (mods), ==, 4);
  LmModel *m = golden_model (MODEL);
  LmLora *orig = load_original (m, GGUF_REL);
  for (guint i = 0; i < 4; i++)
    {
      JsonObject *o = json_array_get_object_element (mods, i);
      const LmLoraModule *mod = lm_lora_module (orig, (size_t) lm_lora_find (
        orig, json_object_get_string_member (o, "module")));
      g_assert_nonnull (mod);
      g_assert_cmpint (json_object_get_int_member (o, "rank_out"), ==, 2);
      double sigma[8], total = 0.0;
      g_assert_cmpint (lm_lora_singular_values (mod->rank, mod->d_in, mod->d_out, mod->a, mod->b,
                                                mod->scale, sigma), ==, LM_OK);
      for (int k = 0; k < 8; k++)
        total += sigma[k] * sigma[k];
      double kept = (sigma[0] * sigma[0] + sigma[1] * sigma[1]) / total;
      g_assert_cmpfloat (fabs (json_object_get_double_member (o, "energy_retained") - kept), <, 1e-6);
    }
  lm_lora_free (orig);
  lm_model_free (m);
  g_remove (out_path);
  const char *zero[] = { "adapter", "reduce", "--rank", "0", in, out_path, NULL };
  g_assert_cmpint (run_cli (zero, NULL, NULL), ==, 2);
  const char *not_lora[] = { "adapter", "reduce", "--rank", "2", model, out_path, NULL };
  g_autofree char *err2 = NULL;
  g_assert_cmpint (run_cli (not_lora, NULL, &err2), ==, 1);
  g_assert_nonnull (strstr (err2, "unexpected tensor"));
  g_assert_false (g_file_test (out_path, G_FILE_TEST_EXISTS));
  g_rmdir (dir);
}

/* Files left in @dir (temporary names included). */
static guint
count_files (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  guint n = 0;
  while (d != NULL && g_dir_read_name (d) != NULL)
    n++;
  return n;
}

typedef struct {
  guint seen, stop_after;
} Stopper;

static bool
stop_after (const char *name, const LmLoraReduceInfo *info, void *user_data)
{
  Stopper *s = user_data;
  return ++s->seen < s->stop_after;
}

/* A report that says stop ends the run with LM_ERR_CANCELLED at once, and
 * nothing (no output, no temporary file) is left behind, in both formats. */
static void
test_cancel (void)
{
  const char *inputs[] = { GGUF_REL, PEFT_REL };
  for (guint i = 0; i < G_N_ELEMENTS (inputs); i++)
    {
      g_autofree char *in = ts_test_data_path (inputs[i]);
      g_autofree char *dir = g_dir_make_tmp ("lora-reduce-XXXXXX", NULL);
      g_autofree char *out = g_build_filename (dir, i == 0 ? "r2.gguf" : "r2", NULL);
      Stopper stopper = { 0, 2 };
      char *error = NULL;
      g_assert_cmpint (lm_lora_reduce_file (in, out, 2, stop_after, &stopper, &error), ==,
                       LM_ERR_CANCELLED);
      g_assert_cmpuint (stopper.seen, ==, 2);
      g_assert_nonnull (strstr (error, "cancelled"));
      free (error);
      g_assert_cmpuint (count_files (dir), ==, 0);
      g_rmdir (dir);
    }
}

/* The shape from the headers matches the loaded adapter; a model file, a
 * missing path and a folder of two GGUF files are clear errors. */
static void
test_probe (void)
{
  LmModel *m = golden_model (MODEL);
  LmLora *orig = load_original (m, GGUF_REL);
  const char *inputs[] = { GGUF_REL, PEFT_REL };
  uint64_t dims = 0;
  uint32_t rank_max = 0;
  for (size_t k = 0; k < lm_lora_n_modules (orig); k++)
    {
      dims += lm_lora_module (orig, k)->d_in + lm_lora_module (orig, k)->d_out;
      rank_max = MAX (rank_max, lm_lora_module (orig, k)->rank);
    }
  for (guint i = 0; i < G_N_ELEMENTS (inputs); i++)
    {
      g_autofree char *in = ts_test_data_path (inputs[i]);
      LmLoraShape shape;
      g_assert_cmpint (lm_lora_probe_file (in, &shape, NULL), ==, LM_OK);
      g_assert_cmpint (shape.peft, ==, i == 1);
      g_assert_cmpuint (shape.n_modules, ==, lm_lora_n_modules (orig));
      g_assert_cmpuint (shape.rank_max, ==, rank_max);
      g_assert_cmpuint (shape.rank_min, ==, rank_max);
      g_assert_cmpuint (shape.dims_total, ==, dims);
    }
  g_autofree char *model = ts_test_data_path ("qwen35/" MODEL "/tiny-qwen35moe-f32.gguf");
  LmLoraShape shape;
  char *error = NULL;
  g_assert_cmpint (lm_lora_probe_file (model, &shape, &error), ==, LM_ERR_FORMAT);
  g_assert_nonnull (strstr (error, "no LoRA tensors"));
  g_clear_pointer (&error, free);
  g_assert_cmpint (lm_lora_probe_file ("/nonexistent/adapter", &shape, &error), ==, LM_ERR_IO);
  g_clear_pointer (&error, free);
  lm_lora_free (orig);
  lm_model_free (m);
}

/* A folder holding one GGUF file (an installed GGUF adapter) stands for that
 * file: it probes, loads and reduces as the file does. */
static void
test_gguf_folder (void)
{
  g_autofree char *in = ts_test_data_path (GGUF_REL);
  g_autofree char *dir = g_dir_make_tmp ("lora-reduce-XXXXXX", NULL);
  g_autofree char *copy = g_build_filename (dir, "adapter.gguf", NULL);
  g_autofree char *second = g_build_filename (dir, "other.gguf", NULL);
  g_autofree char *out = g_build_filename (dir, "..", "reduced-from-folder.gguf", NULL);
  g_autofree char *data = NULL;
  gsize len;
  g_assert_true (g_file_get_contents (in, &data, &len, NULL));
  g_assert_true (g_file_set_contents (copy, data, (gssize) len, NULL));
  LmLoraShape shape;
  g_assert_cmpint (lm_lora_probe_file (dir, &shape, NULL), ==, LM_OK);
  g_assert_false (shape.peft);
  LmModel *m = golden_model (MODEL);
  Report rep = report_new ();
  LmLora *red = reduce_and_load (m, dir, out, 2, &rep);
  g_assert_cmpuint (lm_lora_module (red, 0)->rank, ==, 2);
  LmLora *whole = NULL;
  g_assert_cmpint (lm_lora_load (m, dir, 1.0f, &whole, NULL), ==, LM_OK);
  g_assert_cmpuint (lm_lora_module (whole, 0)->rank, ==, 8);
  /* Two GGUF files: the folder is read as PEFT, which it is not. */
  g_assert_true (g_file_set_contents (second, data, (gssize) len, NULL));
  g_assert_cmpint (lm_lora_probe_file (dir, &shape, NULL), ==, LM_ERR_IO);
  lm_lora_free (whole);
  lm_lora_free (red);
  lm_model_free (m);
  g_hash_table_destroy (rep.discarded);
  g_remove (out);
  g_remove (copy);
  g_remove (second);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/lora-reduce/against-reference", test_against_reference);
  g_test_add_func ("/lora-reduce/degenerate", test_degenerate);
  g_test_add_func ("/lora-reduce/golden-gguf", test_golden_gguf);
  g_test_add_func ("/lora-reduce/golden-peft", test_golden_peft);
  g_test_add_func ("/lora-reduce/cli", test_cli);
  g_test_add_func ("/lora-reduce/cancel", test_cancel);
  g_test_add_func ("/lora-reduce/probe", test_probe);
  g_test_add_func ("/lora-reduce/gguf-folder", test_gguf_folder);
  g_test_add_func ("/lora-reduce/half-precision-kept", test_half_precision_kept);
  g_test_add_func ("/lora-reduce/half-precision-gguf", test_half_precision_gguf);
  return g_test_run ();
}
