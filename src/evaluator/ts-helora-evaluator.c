/* ts-helora-evaluator.c: reference counting and dispatch of evaluators; adapter hashes.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <gio/gio.h>
#include <openssl/evp.h>
#include <string.h>

#include "ts-helora-evaluator.h"

void
ts_helora_evaluator_init (TsHeloraEvaluator *self, const TsHeloraEvaluatorClass *klass)
{
  g_return_if_fail (self != NULL);

  self->klass = klass;
  g_atomic_ref_count_init (&self->ref_count);
}

TsHeloraEvaluator *
ts_helora_evaluator_ref (TsHeloraEvaluator *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  g_atomic_ref_count_inc (&self->ref_count);
  return self;
}

void
ts_helora_evaluator_unref (TsHeloraEvaluator *self)
{
  if (self != NULL && g_atomic_ref_count_dec (&self->ref_count))
    self->klass->finalize (self);
}

gboolean
ts_helora_evaluator_find_module (TsHeloraEvaluator *self, const char *name,
                                 gboolean complex_packing, guint *index,
                                 TsHeloraModuleShape *shape, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  return self->klass->find_module (self, name, complex_packing, index, shape, error);
}

gboolean
ts_helora_evaluator_evaluate (TsHeloraEvaluator *self, guint index, gboolean complex_packing,
                              GPtrArray *cts, GPtrArray *results, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  return self->klass->evaluate (self, index, complex_packing, cts, results, error);
}

/* Streams the file through SHA-256 so large adapters need no second copy. */
static gboolean
hash_file (const char *path, guint8 out[TS_HELORA_HASH_SIZE], GError **error)
{
  g_autoptr (GFile) file = g_file_new_for_path (path);
  g_autoptr (GFileInputStream) in = g_file_read (file, NULL, error);
  g_autofree guint8 *buf = NULL;
  EVP_MD_CTX *md;
  gssize n;
  gboolean ok = TRUE;

  if (in == NULL)
    return FALSE;
  buf = g_malloc (1 << 16);
  md = EVP_MD_CTX_new ();
  EVP_DigestInit_ex (md, EVP_sha256 (), NULL);
  while ((n = g_input_stream_read (G_INPUT_STREAM (in), buf, 1 << 16, NULL, error)) > 0)
    EVP_DigestUpdate (md, buf, n);
  if (n < 0)
    ok = FALSE;
  else
    EVP_DigestFinal_ex (md, out, NULL);
  EVP_MD_CTX_free (md);
  return ok;
}

gboolean
ts_helora_adapter_sha256 (const char *path, guint8 out[TS_HELORA_HASH_SIZE], GError **error)
{
  g_return_val_if_fail (path != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  if (g_file_test (path, G_FILE_TEST_IS_DIR))
    {
      g_autofree char *weights = g_build_filename (path, "adapter_model.safetensors", NULL);
      return hash_file (weights, out, error);
    }
  return hash_file (path, out, error);
}

char *
ts_helora_adapter_id (const char *path)
{
  g_return_val_if_fail (path != NULL, NULL);

  g_autofree char *name = g_path_get_basename (path);
  const char *dot = strrchr (name, '.');

  if (g_file_test (path, G_FILE_TEST_IS_DIR) || dot == NULL || dot == name)
    return g_steal_pointer (&name);
  return g_strndup (name, dot - name);
}
