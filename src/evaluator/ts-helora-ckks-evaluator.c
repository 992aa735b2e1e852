/* ts-helora-ckks-evaluator.c: the CKKS evaluator: packed plaintexts per module, ct × pt.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ckks-helora.h"
#include "lm.h"
#include "ts-adapter-stack.h"
#include "ts-helora-adapter.h"
#include "ts-helora-ckks.h"
#include "ts-helora-ckks-evaluator.h"
#include "ts-privacy-accountant.h"

typedef struct {
  char *name;
  CkksHeloraPlan *plan;        /* plain split */
  CkksHeloraPlan *private_plan;   /* private split, made at first use (set under lock) */
  CkksHeloraPlan *complex_plan;   /* complex packing, made at first use (set under lock) */
  gboolean no_complex;         /* the layout has no complex packing: the plain plan serves */
  float *a;                    /* r x d, for the private plan (read-only) */
  double a_row_norm;           /* largest ||A_i||_2: the adapter-private mode's sensitivity */
} CkksModule;

typedef struct {
  TsHeloraEvaluator parent;
  CkksContext *ctx;
  GArray *modules;             /* of CkksModule */
  GMutex lock;                 /* private plans */
} CkksEvaluator;

static const CkksHeloraPlan *module_plan (CkksEvaluator *self, CkksModule *m,
                                          CkksHeloraScales scales, gboolean complex_packing,
                                          GError **error);

static gboolean
ckks_find_module (TsHeloraEvaluator *base, const char *name, gboolean complex_packing,
                  guint *index, TsHeloraModuleShape *shape, GError **error)
{
  CkksEvaluator *self = (CkksEvaluator *) base;

  for (guint i = 0; i < self->modules->len; i++)
    {
      CkksModule *m = &g_array_index (self->modules, CkksModule, i);
      if (strcmp (m->name, name) != 0)
        continue;
      /* the complex plan is encoded here, at the hello, not at a token */
      const CkksHeloraPlan *plan = module_plan (self, m, CKKS_HELORA_SCALES_PLAIN,
                                                complex_packing, error);
      if (plan == NULL)
        return FALSE;
      const CkksHeloraLayout *l = ckks_helora_plan_layout (plan);
      *index = i;
      shape->d_in = ckks_helora_layout_d (l);
      shape->rank = ckks_helora_layout_r (l);
      shape->n_results = ckks_helora_layout_n_outputs (l);
      return TRUE;
    }
  g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_MODULE,
               "The adapter has no module '%s'", name);
  return FALSE;
}

static gboolean
plain_products (const CkksHeloraPlan *plan, double a_row_norm, CkksCiphertext *const *in,
                gsize n_in, CkksCiphertext *const *out, gsize n_out, gpointer data,
                GError **error)
{
  return ts_helora_ckks_check (ckks_helora_evaluate (plan, in, n_in, out, n_out), "Evaluating",
                               error);
}

static gboolean run_plan (const CkksHeloraPlan *plan, double a_row_norm, GPtrArray *cts,
                          GPtrArray *results, TsHeloraCkksProductsFunc products,
                          gpointer data, GError **error);

static gboolean
ckks_evaluate (TsHeloraEvaluator *base, guint index, gboolean complex_packing, GPtrArray *cts,
               GPtrArray *results, GError **error)
{
  CkksEvaluator *self = (CkksEvaluator *) base;
  if (index >= self->modules->len)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_MODULE, "No module %u", index);
      return FALSE;
    }
  CkksModule *m = &g_array_index (self->modules, CkksModule, index);
  const CkksHeloraPlan *plan = module_plan (self, m, CKKS_HELORA_SCALES_PLAIN, complex_packing,
                                            error);
  return plan != NULL
         && run_plan (plan, m->a_row_norm, cts, results, plain_products, NULL, error);
}

static void
ckks_module_clear (gpointer data)
{
  CkksModule *m = data;

  g_free (m->name);
  g_free (m->a);
  g_clear_pointer (&m->plan, ckks_helora_plan_free);
  g_clear_pointer (&m->private_plan, ckks_helora_plan_free);
  g_clear_pointer (&m->complex_plan, ckks_helora_plan_free);
}

static void
ckks_finalize (TsHeloraEvaluator *base)
{
  CkksEvaluator *self = (CkksEvaluator *) base;

  g_array_unref (self->modules);
  g_mutex_clear (&self->lock);
  if (self->ctx != NULL)
    ckks_context_free (self->ctx);
  g_free (self);
}

static const TsHeloraEvaluatorClass ckks_class = {
  ckks_find_module, ckks_evaluate, ckks_finalize,
};

static gboolean
encode_modules (CkksEvaluator *self, GPtrArray *adapter, GError **error)
{
  for (guint i = 0; i < adapter->len; i++)
    {
      TsHeloraAdapterModule *am = g_ptr_array_index (adapter, i);
      CkksModule m = { .name = g_strdup (am->name),
                       .a = g_memdup2 (am->a, (gsize) am->rank * am->d_in * sizeof (float)),
                       .a_row_norm = ts_privacy_sensitivity (am->a, am->rank, am->d_in, 1.0) };
      CkksStatus st = ckks_helora_plan_new (self->ctx, am->d_in, am->rank, am->a, &m.plan);

      g_array_append_val (self->modules, m);
      if (!ts_helora_ckks_check (st, am->name, error))
        return FALSE;
    }
  return TRUE;
}

/* The A matrices of an engine adapter (copies). */
static GPtrArray *
modules_of (const LmLora *lora)
{
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) ts_helora_adapter_module_free);

  for (gsize i = 0; i < lm_lora_n_modules (lora); i++)
    {
      const LmLoraModule *lm = lm_lora_module (lora, i);
      TsHeloraAdapterModule *m = g_new0 (TsHeloraAdapterModule, 1);
      m->name = g_str_has_suffix (lm->name, ".weight")
                  ? g_strndup (lm->name, strlen (lm->name) - 7) : g_strdup (lm->name);
      m->d_in = lm->d_in;
      m->rank = lm->rank;
      m->a = g_memdup2 (lm->a, (gsize) lm->rank * lm->d_in * sizeof (float));
      g_ptr_array_add (out, m);
    }
  return out;
}

/* Through the engine's loaders: PEFT folders too, A in GGUF column order. */
static GPtrArray *
read_with_model (const LmModel *model, const char *path, GError **error)
{
  GPtrArray *out;
  LmLora *lora = NULL;
  char *msg = NULL;

  if (lm_lora_load (model, path, 1.0f, &lora, &msg) != LM_OK)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_ADAPTER, "%s: %s", path,
                   msg ? msg : "cannot load the adapter");
      free (msg);
      return NULL;
    }
  out = modules_of (lora);
  lm_lora_free (lora);
  return out;
}

/* Packs @adapter's modules (of TsHeloraAdapterModule *) under @params_id. */
static TsHeloraEvaluator *
evaluator_new (GPtrArray *adapter, const char *params_id, GError **error)
{
  CkksEvaluator *self = g_new0 (CkksEvaluator, 1);

  ts_helora_evaluator_init (&self->parent, &ckks_class);
  g_mutex_init (&self->lock);
  self->modules = g_array_new (FALSE, TRUE, sizeof (CkksModule));
  g_array_set_clear_func (self->modules, ckks_module_clear);
  self->ctx = ts_helora_ckks_context_new (params_id, error);
  if (self->ctx == NULL || !encode_modules (self, adapter, error))
    {
      ts_helora_evaluator_unref (&self->parent);
      return NULL;
    }
  memcpy (self->parent.params_sha256, ckks_context_fingerprint (self->ctx), TS_HELORA_HASH_SIZE);
  return &self->parent;
}

TsHeloraEvaluator *
ts_helora_ckks_evaluator_open (const char *path, const char *params_id,
                               gpointer user_data, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);

  g_autoptr (GPtrArray) adapter = user_data != NULL ? read_with_model (user_data, path, error)
                                                    : ts_helora_adapter_read (path, error);

  return adapter != NULL ? evaluator_new (adapter, params_id, error) : NULL;
}

/* The engine's stacking (ts_adapter_stack_load()) makes exactly the modules
 * a client's stacked LmLora has, so both ends pack the same A. It needs
 * the base model to load and check every adapter. */
TsHeloraEvaluator *
ts_helora_ckks_evaluator_open_stack (const char *const *paths, const float *weights, guint n,
                                     const char *params_id, gpointer user_data, GError **error)
{
  g_return_val_if_fail (paths != NULL || n == 0, NULL);

  g_autoptr (GError) stack_error = NULL;
  g_autoptr (GPtrArray) adapter = NULL;
  LmLora *stack;

  if (user_data == NULL)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNAVAILABLE,
                   "This server stacks adapters only when it has the base model "
                   "(tensafe-he-server --model FILE)");
      return NULL;
    }
  stack = ts_adapter_stack_load (user_data, paths, weights, n, &stack_error);
  if (stack == NULL)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_ADAPTER,
                   "The adapters do not stack: %s", stack_error->message);
      return NULL;
    }
  adapter = modules_of (stack);
  lm_lora_free (stack);
  return evaluator_new (adapter, params_id, error);
}

/* An input made for the other scale split would overflow the result. */
static gboolean
check_input_scale (const CkksHeloraLayout *l, const CkksCiphertext *ct, GError **error)
{
  double bits = log2 (ckks_ciphertext_scale (ct));
  if (fabs (bits - ckks_helora_layout_input_bits (l)) < 1e-9)
    return TRUE;
  g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_BAD_CIPHERTEXT,
               "Input ciphertext at scale 2^%.4g where this mode wants 2^%u", bits,
               ckks_helora_layout_input_bits (l));
  return FALSE;
}

/* Scratch ciphertexts are per call: calls run concurrently on the pool. */
gboolean
ts_helora_ckks_evaluator_run (TsHeloraEvaluator *base, guint index, CkksHeloraScales scales,
                              GPtrArray *cts, GPtrArray *results,
                              TsHeloraCkksProductsFunc products, gpointer data, GError **error)
{
  g_return_val_if_fail (cts != NULL, FALSE);

  double a_row_norm = 0.0;
  const CkksHeloraPlan *plan = ts_helora_ckks_evaluator_plan (base, index, scales, &a_row_norm,
                                                              error);
  return plan != NULL && run_plan (plan, a_row_norm, cts, results, products, data, error);
}

static gboolean
run_plan (const CkksHeloraPlan *plan, double a_row_norm, GPtrArray *cts, GPtrArray *results,
          TsHeloraCkksProductsFunc products, gpointer data, GError **error)
{
  const CkksHeloraLayout *l = ckks_helora_plan_layout (plan);
  gsize n_in = ckks_helora_layout_n_inputs (l), n_out = ckks_helora_layout_n_outputs (l);
  CkksCiphertext **in = NULL, **out = NULL;
  gboolean ok = cts->len == n_in;

  if (!ok)
    g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_BAD_CIPHERTEXT,
                 "Expected %zu input ciphertexts, got %u", n_in, cts->len);
  ok = ok && ts_helora_ckks_check (ckks_helora_ciphertexts_new (l, n_in, &in), "Inputs", error)
       && ts_helora_ckks_check (ckks_helora_ciphertexts_new (l, n_out, &out), "Outputs", error);
  for (gsize k = 0; ok && k < n_in; k++)
    ok = ts_helora_ckks_ciphertext_from_bytes (g_ptr_array_index (cts, k), in[k],
                                               ckks_helora_layout_limbs (l), error)
         && check_input_scale (l, in[k], error);
  ok = ok && products (plan, a_row_norm, in, n_in, out, n_out, data, error);
  for (gsize b = 0; ok && b < n_out; b++)
    {
      GBytes *bytes = ts_helora_ckks_result_to_bytes (l, out[b], error);
      ok = bytes != NULL;
      if (ok)
        g_ptr_array_add (results, bytes);
    }
  if (in != NULL)
    ckks_helora_ciphertexts_free (in, n_in);
  if (out != NULL)
    ckks_helora_ciphertexts_free (out, n_out);
  return ok;
}

/* For the adapter-private mode (ts-helora-privacy-eval.c). */
const CkksContext *
ts_helora_ckks_evaluator_context (TsHeloraEvaluator *base)
{
  return base != NULL && base->klass == &ckks_class ? ((CkksEvaluator *) base)->ctx : NULL;
}

/* A plan of @m made at its first use (the private split, the complex
 * packing) into @slot. Encoded outside the lock (it takes a while, and the
 * lock is also taken by pool queries on the main thread); two first uses
 * at once both encode, the second copy is dropped. A layout without the
 * complex packing (decoded in full) is noted, and the plain plan serves. */
static const CkksHeloraPlan *
lazy_plan (CkksEvaluator *self, CkksModule *m, CkksHeloraPlan **slot, CkksHeloraScales scales,
           CkksHeloraPacking packing, GError **error)
{
  g_mutex_lock (&self->lock);
  const CkksHeloraPlan *plan = *slot != NULL ? *slot
                               : packing == CKKS_HELORA_PACKING_COMPLEX && m->no_complex ? m->plan
                               : NULL;
  g_mutex_unlock (&self->lock);
  if (plan != NULL)
    return plan;
  const CkksHeloraLayout *l = ckks_helora_plan_layout (m->plan);
  CkksHeloraPlan *made = NULL;
  CkksStatus st = ckks_helora_plan_new_packed (self->ctx, ckks_helora_layout_d (l),
                                               ckks_helora_layout_r (l), m->a, scales, packing,
                                               &made);
  if (st == CKKS_ERR_UNSUPPORTED && packing == CKKS_HELORA_PACKING_COMPLEX)
    {
      g_mutex_lock (&self->lock);
      m->no_complex = TRUE;
      g_mutex_unlock (&self->lock);
      return m->plan;
    }
  if (!ts_helora_ckks_check (st, m->name, error))
    return NULL;
  g_mutex_lock (&self->lock);
  if (*slot == NULL)
    *slot = g_steal_pointer (&made);
  plan = *slot;
  g_mutex_unlock (&self->lock);
  ckks_helora_plan_free (made);
  return plan;
}

/* The private split has the real packing only (the flooding covers its
 * results); the plain split either packing. */
static const CkksHeloraPlan *
module_plan (CkksEvaluator *self, CkksModule *m, CkksHeloraScales scales,
             gboolean complex_packing, GError **error)
{
  if (scales == CKKS_HELORA_SCALES_PRIVACY)
    return lazy_plan (self, m, &m->private_plan, scales, CKKS_HELORA_PACKING_REAL, error);
  if (complex_packing)
    return lazy_plan (self, m, &m->complex_plan, scales, CKKS_HELORA_PACKING_COMPLEX, error);
  return m->plan;
}

const CkksHeloraPlan *
ts_helora_ckks_evaluator_plan (TsHeloraEvaluator *base, guint index, CkksHeloraScales scales,
                               double *a_row_norm, GError **error)
{
  g_return_val_if_fail (a_row_norm != NULL, NULL);

  CkksEvaluator *self = (CkksEvaluator *) base;
  if (ts_helora_ckks_evaluator_context (base) == NULL || index >= self->modules->len)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_MODULE, "No module %u", index);
      return NULL;
    }
  CkksModule *m = &g_array_index (self->modules, CkksModule, index);
  *a_row_norm = m->a_row_norm;
  return module_plan (self, m, scales, FALSE, error);
}
