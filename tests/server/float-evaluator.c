/* float-evaluator.c: a test-only evaluator whose "ciphertexts" are float vectors.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "float-evaluator.h"

typedef struct {
  char *name;
  guint d, r, seed, delay_ms;
} FloatModule;

typedef struct {
  TsHeloraEvaluator parent;
  GArray *modules;             /* of FloatModule */
} FloatEvaluator;

float
float_adapter_weight (guint seed, guint d, guint i, guint j)
{
  return (float) (0.1 * sin (seed * 1000.0 + i * (double) d + j));
}

void
float_params_sha256 (guint8 out[TS_HELORA_HASH_SIZE])
{
  g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
  gsize len = TS_HELORA_HASH_SIZE;

  g_checksum_update (sum, (const guchar *) "float-test-params", -1);
  g_checksum_get_digest (sum, out, &len);
}

static gboolean
float_find_module (TsHeloraEvaluator *base, const char *name, gboolean complex_packing,
                   guint *index, TsHeloraModuleShape *shape, GError **error)
{
  FloatEvaluator *self = (FloatEvaluator *) base;

  (void) complex_packing;   /* plain floats: one result whatever the packing */
  for (guint i = 0; i < self->modules->len; i++)
    {
      FloatModule *m = &g_array_index (self->modules, FloatModule, i);
      if (strcmp (m->name, name) == 0)
        {
          *index = i;
          *shape = (TsHeloraModuleShape) { m->d, m->r, 1 };
          return TRUE;
        }
    }
  g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_MODULE, "No module '%s'", name);
  return FALSE;
}

static gboolean
float_evaluate (TsHeloraEvaluator *base, guint index, gboolean complex_packing, GPtrArray *cts,
                GPtrArray *results, GError **error)
{
  FloatEvaluator *self = (FloatEvaluator *) base;
  FloatModule *m = &g_array_index (self->modules, FloatModule, index);
  (void) complex_packing;
  GBytes *ct = g_ptr_array_index (cts, 0);
  g_autofree float *h = NULL;
  float *u;

  if (cts->len != 1 || g_bytes_get_size (ct) != m->d * sizeof (float))
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_BAD_CIPHERTEXT,
                   "Expected one vector of %u floats", m->d);
      return FALSE;
    }
  if (m->delay_ms)
    g_usleep (m->delay_ms * 1000);
  /* Frame payloads carry no alignment promise: copy before reading floats. */
  h = g_memdup2 (g_bytes_get_data (ct, NULL), m->d * sizeof (float));
  u = g_new0 (float, m->r);
  for (guint i = 0; i < m->r; i++)
    for (guint j = 0; j < m->d; j++)
      u[i] += float_adapter_weight (m->seed, m->d, i, j) * h[j];
  g_ptr_array_add (results, g_bytes_new_take (u, m->r * sizeof (float)));
  return TRUE;
}

static void
float_module_clear (gpointer data)
{
  g_free (((FloatModule *) data)->name);
}

static void
float_finalize (TsHeloraEvaluator *base)
{
  FloatEvaluator *self = (FloatEvaluator *) base;

  g_array_unref (self->modules);
  g_free (self);
}

static const TsHeloraEvaluatorClass float_class = {
  float_find_module, float_evaluate, float_finalize,
};

TsHeloraEvaluator *
float_evaluator_open (const char *path, const char *params_id, gpointer user_data, GError **error)
{
  g_autofree char *text = NULL;
  g_auto (GStrv) lines = NULL;
  FloatEvaluator *self;

  if (g_strcmp0 (params_id, FLOAT_PARAMS_ID) != 0)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS, "Unknown parameter set '%s'", params_id);
      return NULL;
    }
  if (!g_file_get_contents (path, &text, NULL, error))
    return NULL;
  self = g_new0 (FloatEvaluator, 1);
  ts_helora_evaluator_init (&self->parent, &float_class);
  float_params_sha256 (self->parent.params_sha256);
  self->modules = g_array_new (FALSE, TRUE, sizeof (FloatModule));
  g_array_set_clear_func (self->modules, float_module_clear);
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    {
      char name[129];
      FloatModule m = { 0 };
      if (sscanf (lines[i], "module %128s %u %u %u %u", name, &m.d, &m.r, &m.seed, &m.delay_ms) < 4)
        continue;
      m.name = g_strdup (name);
      g_array_append_val (self->modules, m);
    }
  return &self->parent;
}
