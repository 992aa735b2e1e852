/* ts-helora-adapter.c: the A matrices of a GGUF LoRA adapter, read without the base model.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <errno.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf-writer.h"
#include "gguf.h"
#include "quant.h"
#include "ts-helora-adapter.h"
#include "ts-helora-proto.h"

void
ts_helora_adapter_module_free (TsHeloraAdapterModule *m)
{
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
  g_autoptr (GPtrArray) modules = g_ptr_array_new_with_free_func ((GDestroyNotify) ts_helora_adapter_module_free);
  GgufFile *g = NULL;
  char *msg = NULL;
  gboolean ok = TRUE;

  if (lm_gguf_open (path, &g, &msg) != LM_OK)
    {
      fail (error, path, msg ? msg : "not a GGUF file");
      free (msg);
      return NULL;
    }
  for (guint64 i = 0; ok && i < lm_gguf_n_tensors (g); i++)
    {
      const GgufTensorInfo *t = lm_gguf_tensor (g, i);
      if (t->name.len > 7 && memcmp (t->name.data + t->name.len - 7, ".lora_a", 7) == 0)
        ok = read_a (t, path, modules, error);
    }
  lm_gguf_close (g);
  if (ok && modules->len == 0)
    ok = fail (error, path, "no LoRA tensors");
  return ok ? g_steal_pointer (&modules) : NULL;
}

/* ---- a synthetic adapter for benchmarks ---- */

static float
uniform (guint64 *state, float bound)
{
  /* xorshift64*: benchmark data, not secrets. */
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return bound * (float) ((double) ((*state * 0x2545F4914F6CDD1DULL) >> 11) / 4503599627370496.0 - 1.0);
}

static gboolean
check_lm (LmStatus st, const char *what, GError **error)
{
  if (st == LM_OK)
    return TRUE;
  g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_INTERNAL, "%s: %s", what, lm_status_message (st));
  return FALSE;
}

/* Input and output widths of a full-attention projection (FORMAT.md: in
 * gated attention the query projection also yields the output gate). */
static gboolean
projection_shape (const LmModelInfo *info, const char *kind, guint *d_in, guint *d_out)
{
  guint q = info->n_head * info->head_dim, kv = info->n_head_kv * info->head_dim;

  *d_in = info->n_embd;
  if (g_str_equal (kind, "attn_q"))
    *d_out = (info->attn_gated ? 2 : 1) * q;
  else if (g_str_equal (kind, "attn_k") || g_str_equal (kind, "attn_v"))
    *d_out = kv;
  else if (g_str_equal (kind, "attn_output"))
    *d_in = q, *d_out = info->n_embd;
  else
    return FALSE;
  return TRUE;
}

static gboolean
declare_tensors (GgufWriter *w, const LmModelInfo *info, guint rank, const char *const *kinds)
{
  for (guint l = 0; l < info->n_layer; l++)
    for (guint k = 0; !info->is_linear[l] && kinds[k] != NULL; k++)
      {
        char name[96];
        guint d_in, d_out;
        if (!projection_shape (info, kinds[k], &d_in, &d_out))
          return FALSE;
        guint64 ne_a[2] = { d_in, rank }, ne_b[2] = { rank, d_out };
        g_snprintf (name, sizeof name, "blk.%u.%s.weight.lora_a", l, kinds[k]);
        if (lm_gguf_writer_add_tensor (w, name, LM_TYPE_F32, 2, ne_a) != LM_OK)
          return FALSE;
        g_snprintf (name, sizeof name, "blk.%u.%s.weight.lora_b", l, kinds[k]);
        if (lm_gguf_writer_add_tensor (w, name, LM_TYPE_F32, 2, ne_b) != LM_OK)
          return FALSE;
      }
  return TRUE;
}

static gboolean
write_random (GgufWriter *w, guint64 *state, gsize n, float bound)
{
  g_autofree float *buf = g_new (float, n);

  for (gsize i = 0; i < n; i++)
    buf[i] = uniform (state, bound);
  return lm_gguf_writer_write (w, buf, n * sizeof (float)) == LM_OK;
}

static gboolean
write_values (GgufWriter *w, const LmModelInfo *info, guint rank, const char *const *kinds,
              guint64 seed)
{
  guint64 state = seed * 2 + 0x9E3779B97F4A7C15ULL;

  for (guint l = 0; l < info->n_layer; l++)
    for (guint k = 0; !info->is_linear[l] && kinds[k] != NULL; k++)
      {
        guint d_in = 0, d_out = 0;
        /* The kinds were validated when the tensor infos were written. */
        if (!projection_shape (info, kinds[k], &d_in, &d_out)
            || !write_random (w, &state, (gsize) rank * d_in, 0.1f)
            || !write_random (w, &state, (gsize) rank * d_out, 0.02f))
          return FALSE;
      }
  return TRUE;
}

/* The keys that make a GGUF file a LoRA adapter for @info's architecture. */
static gboolean
add_adapter_keys (GgufWriter *w, const LmModelInfo *info, float alpha)
{
  return lm_gguf_writer_add_string (w, "general.architecture", lm_arch_name (info->arch)) == LM_OK
         && lm_gguf_writer_add_string (w, "general.type", "adapter") == LM_OK
         && lm_gguf_writer_add_string (w, "adapter.type", "lora") == LM_OK
         && lm_gguf_writer_add_f32 (w, "adapter.lora.alpha", alpha) == LM_OK;
}

gboolean
ts_helora_adapter_write_synthetic (const struct LmModel *model, const char *path, guint rank,
                                   guint64 seed, const char *const *kinds, GError **error)
{
  static const char *const output_only[] = { "attn_output", NULL };
  const LmModelInfo *info = lm_model_info (model);
  GgufWriter *w = lm_gguf_writer_new ();
  char *msg = NULL;
  gboolean ok;

  if (kinds == NULL)
    kinds = output_only;
  for (guint k = 0; kinds[k] != NULL; k++)
    {
      guint d_in, d_out;
      if (!projection_shape (info, kinds[k], &d_in, &d_out))
        {
          g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_INTERNAL,
                       "Unknown projection '%s' (attn_q, attn_k, attn_v or attn_output)", kinds[k]);
          lm_gguf_writer_free (w);
          return FALSE;
        }
    }
  ok = add_adapter_keys (w, info, (float) rank) && declare_tensors (w, info, rank, kinds);
  ok = ok && check_lm (lm_gguf_writer_begin (w, path, &msg), msg ? msg : path, error);
  ok = ok && write_values (w, info, rank, kinds, seed);
  ok = ok && check_lm (lm_gguf_writer_finish (w, &msg), msg ? msg : path, error);
  if (!ok && error != NULL && *error == NULL)
    g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_INTERNAL, "Cannot write %s", path);
  free (msg);
  lm_gguf_writer_free (w);
  return ok;
}

/* ---- any adapter as a GGUF file ---- */

static gboolean
declare_modules (GgufWriter *w, const LmLora *lora)
{
  for (gsize i = 0; i < lm_lora_n_modules (lora); i++)
    {
      const LmLoraModule *m = lm_lora_module (lora, i);
      guint64 ne_a[2] = { m->d_in, m->rank }, ne_b[2] = { m->rank, m->d_out };
      g_autofree char *a = g_strconcat (m->name, ".lora_a", NULL);
      g_autofree char *b = g_strconcat (m->name, ".lora_b", NULL);

      if (lm_gguf_writer_add_tensor (w, a, LM_TYPE_F32, 2, ne_a) != LM_OK
          || lm_gguf_writer_add_tensor (w, b, LM_TYPE_F32, 2, ne_b) != LM_OK)
        return FALSE;
    }
  return TRUE;
}

/* A as it is, B times the module's scale (the file says alpha 0: scale 1). */
static gboolean
write_modules (GgufWriter *w, const LmLora *lora)
{
  for (gsize i = 0; i < lm_lora_n_modules (lora); i++)
    {
      const LmLoraModule *m = lm_lora_module (lora, i);
      gsize n_b = (gsize) m->d_out * m->rank;
      g_autofree float *b = g_new (float, n_b);

      for (gsize k = 0; k < n_b; k++)
        b[k] = m->scale * m->b[k];
      if (lm_gguf_writer_write (w, m->a, (gsize) m->rank * m->d_in * sizeof (float)) != LM_OK
          || lm_gguf_writer_write (w, b, n_b * sizeof (float)) != LM_OK)
        return FALSE;
    }
  return TRUE;
}

gboolean
ts_helora_adapter_write (const struct LmModel *model, const LmLora *lora, const char *path,
                         GError **error)
{
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *name = g_path_get_basename (path);
  g_autofree char *tmp_name = g_strconcat (".", name, ".tmp", NULL);
  g_autofree char *tmp = g_build_filename (dir, tmp_name, NULL);
  GgufWriter *w = lm_gguf_writer_new ();
  char *msg = NULL;
  gboolean ok;

  ok = add_adapter_keys (w, lm_model_info (model), 0.0f) && declare_modules (w, lora);
  ok = ok && check_lm (lm_gguf_writer_begin (w, tmp, &msg), msg ? msg : tmp, error);
  ok = ok && write_modules (w, lora);
  ok = ok && check_lm (lm_gguf_writer_finish (w, &msg), msg ? msg : tmp, error);
  lm_gguf_writer_free (w);
  free (msg);
  if (ok && g_rename (tmp, path) != 0)
    {
      int err = errno;
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (err), "Cannot rename %s: %s",
                   tmp, g_strerror (err));
      ok = FALSE;
    }
  if (!ok)
    g_unlink (tmp);
  if (!ok && error != NULL && *error == NULL)
    g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_INTERNAL, "Cannot write %s", path);
  return ok;
}
