/* ts-helora-adapter.c: the A matrices of a GGUF LoRA adapter, read without the base model.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "quant.h"
#include "ts-helora-adapter.h"
#include "ts-helora-proto.h"

static void
module_free (gpointer data)
{
  TsHeloraAdapterModule *m = data;

  g_free (m->name);
  g_free (m->a);
  g_free (m);
}

static gboolean
fail (GError **error, const char *path, const char *what)
{
  g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_ADAPTER,
               "%s: %s", path, what);
  return FALSE;
}

/* "blk.3.attn_output.weight.lora_a" → "blk.3.attn_output". */
static char *
base_name (GgufString name)
{
  g_autofree char *s = g_strndup (name.data, name.len - strlen (".lora_a"));

  if (g_str_has_suffix (s, ".weight"))
    s[strlen (s) - strlen (".weight")] = '\0';
  return g_steal_pointer (&s);
}

static gboolean
read_a (const GgufTensorInfo *t, const char *path, GPtrArray *out, GError **error)
{
  guint64 cols = t->ne[0], rows = t->ne[1];
  gsize row_bytes = lm_row_bytes (t->type, (gint64) cols);
  TsHeloraAdapterModule *m;

  if (t->n_dims != 2 || rows == 0 || rows > 65536 || cols == 0 || cols > (1u << 24)
      || row_bytes == 0 || t->n_bytes < row_bytes * rows)
    return fail (error, path, "a lora_a tensor has an unusable shape or type");
  m = g_new0 (TsHeloraAdapterModule, 1);
  m->name = base_name (t->name);
  m->d_in = (guint) cols;
  m->rank = (guint) rows;
  m->a = g_new (float, cols * rows);
  g_ptr_array_add (out, m);
  for (guint64 r = 0; r < rows; r++)
    if (lm_dequantize_row (t->type, (const char *) t->data + r * row_bytes, m->a + r * cols,
                           (gint64) cols) != LM_OK)
      return fail (error, path, "a lora_a tensor does not decode");
  return TRUE;
}

GPtrArray *
ts_helora_adapter_read (const char *path, GError **error)
{
  g_autoptr (GPtrArray) modules = g_ptr_array_new_with_free_func (module_free);
  GgufFile *g = NULL;
  char *msg = NULL;
  gboolean ok = TRUE;

  if (gguf_open (path, &g, &msg) != LM_OK)
    {
      fail (error, path, msg ? msg : "not a GGUF file");
      free (msg);
      return NULL;
    }
  for (guint64 i = 0; ok && i < gguf_n_tensors (g); i++)
    {
      const GgufTensorInfo *t = gguf_tensor (g, i);
      if (t->name.len > 7 && memcmp (t->name.data + t->name.len - 7, ".lora_a", 7) == 0)
        ok = read_a (t, path, modules, error);
    }
  gguf_close (g);
  if (ok && modules->len == 0)
    ok = fail (error, path, "no LoRA tensors");
  return ok ? g_steal_pointer (&modules) : NULL;
}
