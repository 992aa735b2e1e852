/* ts-helora-adapter.c: the A matrices of a GGUF LoRA adapter, read without the base model.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <errno.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

#include "lora-gguf.h"
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

/* "blk.3.attn_output.weight" → "blk.3.attn_output". */
static char *
base_name (const char *name)
{
  char *s = g_strdup (name);

  if (g_str_has_suffix (s, ".weight"))
    s[strlen (s) - strlen (".weight")] = '\0';
  return s;
}

static gboolean
read_a (const LmLoraGgufPair *p, const char *path, GPtrArray *out, GError **error)
{
  gsize row_bytes = lm_row_bytes (p->a->type, (gint64) p->d_in);
  TsHeloraAdapterModule *m;

  if (p->d_in == 0 || p->d_in > (1u << 24) || row_bytes == 0
      || p->a->n_bytes < row_bytes * p->rank)
    return fail (error, path, "a lora_a tensor has an unusable shape or type");
  m = g_new0 (TsHeloraAdapterModule, 1);
  m->name = base_name (p->name);
  m->d_in = p->d_in;
  m->rank = p->rank;
  g_ptr_array_add (out, m);
  if (lm_lora_gguf_pair_f32 (p, &m->a, NULL) != LM_OK)
    return fail (error, path, "a lora_a tensor does not decode");
  return TRUE;
}

GPtrArray *
ts_helora_adapter_read (const char *path, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);

  g_autoptr (GPtrArray) modules = g_ptr_array_new_with_free_func ((GDestroyNotify) ts_helora_adapter_module_free);
  LmLoraGguf *adapter = NULL;
  char *msg = NULL;
  gboolean ok = TRUE;

  if (lm_lora_gguf_open (path, &adapter, &msg) != LM_OK)
    {
      fail (error, path, msg ? msg : "not a GGUF file");
      free (msg);
      return NULL;
    }
  for (gsize i = 0; ok && i < lm_lora_gguf_n_pairs (adapter); i++)
    ok = read_a (lm_lora_gguf_pair (adapter, i), path, modules, error);
  lm_lora_gguf_close (adapter);
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

/* @n values uniform in ±@bound (g_free()). */
static float *
random_values (guint64 *state, gsize n, float bound)
{
  float *buf = g_new (float, n);

  for (gsize i = 0; i < n; i++)
    buf[i] = uniform (state, bound);
  return buf;
}

static void
modules_free (GArray *mods)
{
  for (guint i = 0; mods != NULL && i < mods->len; i++)
    {
      LmLoraGgufModule *m = &g_array_index (mods, LmLoraGgufModule, i);
      g_free ((char *) m->name);
      g_free ((float *) m->a);
      g_free ((float *) m->b);
    }
  if (mods != NULL)
    g_array_free (mods, TRUE);
}

/* Every full-attention layer's projections in @kinds (validated), A and B
 * seeded random, in file order: by layer, then kind; A before B. */
static GArray *
synthetic_modules (const LmModelInfo *info, guint rank, const char *const *kinds, guint64 seed)
{
  GArray *mods = g_array_new (FALSE, TRUE, sizeof (LmLoraGgufModule));
  guint64 state = seed * 2 + 0x9E3779B97F4A7C15ULL;

  for (guint l = 0; l < info->n_layer; l++)
    for (guint k = 0; !info->is_linear[l] && kinds[k] != NULL; k++)
      {
        LmLoraGgufModule m = { .rank = rank };
        guint d_in = 0, d_out = 0;

        projection_shape (info, kinds[k], &d_in, &d_out);
        m.name = g_strdup_printf ("blk.%u.%s.weight", l, kinds[k]);
        m.d_in = d_in;
        m.d_out = d_out;
        m.a = random_values (&state, (gsize) rank * d_in, 0.1f);
        m.b = random_values (&state, (gsize) rank * d_out, 0.02f);
        g_array_append_val (mods, m);
      }
  return mods;
}

/* Writes @mods with the keys of an adapter for @info's architecture. */
static gboolean
write_modules (const char *path, const LmModelInfo *info, float alpha, GArray *mods,
               GError **error)
{
  LmLoraGgufKeys keys = { .arch = lm_arch_name (info->arch), .alpha = alpha };
  char *msg = NULL;
  LmStatus st = lm_lora_gguf_write (path, &keys, (const LmLoraGgufModule *) (void *) mods->data,
                                    mods->len, &msg);
  gboolean ok = check_lm (st, msg ? msg : path, error);

  free (msg);
  return ok;
}

gboolean
ts_helora_adapter_write_synthetic (const struct LmModel *model, const char *path, guint rank,
                                   guint64 seed, const char *const *kinds, GError **error)
{
  g_return_val_if_fail (model != NULL, FALSE);
  g_return_val_if_fail (path != NULL, FALSE);

  static const char *const output_only[] = { "attn_output", NULL };
  const LmModelInfo *info = lm_model_info (model);
  GArray *mods;
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
          return FALSE;
        }
    }
  mods = synthetic_modules (info, rank, kinds, seed);
  ok = write_modules (path, info, (float) rank, mods, error);
  modules_free (mods);
  if (!ok && error != NULL && *error == NULL)
    g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_INTERNAL, "Cannot write %s", path);
  return ok;
}

/* ---- any adapter as a GGUF file ---- */

/* A as it is, B times the module's scale (the file says alpha 0: scale 1). */
static GArray *
lora_modules (const LmLora *lora)
{
  GArray *mods = g_array_new (FALSE, TRUE, sizeof (LmLoraGgufModule));

  for (gsize i = 0; i < lm_lora_n_modules (lora); i++)
    {
      const LmLoraModule *m = lm_lora_module (lora, i);
      gsize n_b = (gsize) m->d_out * m->rank;
      float *b = g_new (float, n_b);
      LmLoraGgufModule out = { g_strdup (m->name), m->rank, m->d_in, m->d_out,
                               g_memdup2 (m->a, (gsize) m->rank * m->d_in * sizeof (float)), b };

      for (gsize k = 0; k < n_b; k++)
        b[k] = m->scale * m->b[k];
      g_array_append_val (mods, out);
    }
  return mods;
}

gboolean
ts_helora_adapter_write (const struct LmModel *model, const LmLora *lora, const char *path,
                         GError **error)
{
  g_return_val_if_fail (model != NULL, FALSE);
  g_return_val_if_fail (lora != NULL, FALSE);
  g_return_val_if_fail (path != NULL, FALSE);

  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *name = g_path_get_basename (path);
  g_autofree char *tmp_name = g_strconcat (".", name, ".tmp", NULL);
  g_autofree char *tmp = g_build_filename (dir, tmp_name, NULL);
  GArray *mods = lora_modules (lora);
  gboolean ok;

  ok = write_modules (tmp, lm_model_info (model), 0.0f, mods, error);
  modules_free (mods);
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
