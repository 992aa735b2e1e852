/* ts-bench-stack.c: the random adapters a benchmark stacks on the one it measures.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>

#include "ts-bench-stack.h"
#include "ts-helora-adapter.h"

/* Stems of attention q/k/v on full-attention layers, or of FFN gate/up
 * (shared expert on MoE models) on every layer; NULL-ended. */
static GPtrArray *
member_stems (const LmModel *model, gboolean ffn)
{
  const LmModelInfo *info = lm_model_info (model);
  /* The FFN member adapts the dense FFN or the shared expert; a MoE without
   * a shared expert has no 2-D FFN projection, so it adapts attn_output. */
  gboolean moe = info->is_moe, shared = info->n_ff_shexp > 0;
  static const char *const attn[] = { "attn_q", "attn_k", "attn_v" };
  const char *const ff[] = { !moe ? "ffn_gate" : shared ? "ffn_gate_shexp" : "attn_output",
                             !moe ? "ffn_up" : shared ? "ffn_up_shexp" : NULL };
  GPtrArray *stems = g_ptr_array_new_with_free_func (g_free);

  for (guint l = 0; l < info->n_layer; l++)
    {
      if (ffn)
        for (guint k = 0; k < G_N_ELEMENTS (ff) && ff[k] != NULL; k++)
          g_ptr_array_add (stems, g_strdup_printf ("blk.%u.%s", l, ff[k]));
      else if (!info->is_linear[l])
        for (guint k = 0; k < G_N_ELEMENTS (attn); k++)
          g_ptr_array_add (stems, g_strdup_printf ("blk.%u.%s", l, attn[k]));
    }
  g_ptr_array_add (stems, NULL);
  return stems;
}

/* Member @i (0: attention, 1: FFN) written to @path; seeded by @i, so the
 * same values every run. */
static gboolean
write_member (const LmModel *model, guint rank, guint i, const char *path, GError **error)
{
  g_autoptr (GPtrArray) stems = member_stems (model, i == 1);
  LmLora *member = NULL;
  char *msg = NULL;
  gboolean ok;

  if (lm_lora_synth (model, (const char *const *) stems->pdata, rank, 0.05f, 12 + i, &member,
                     &msg) != LM_OK)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "Cannot make a random adapter: %s",
                   msg ? msg : "?");
      free (msg);
      return FALSE;
    }
  ok = ts_helora_adapter_write (model, member, path, error);
  lm_lora_free (member);
  return ok;
}

gboolean
ts_bench_stack_write_members (const LmModel *model, guint rank, const char *dir,
                              char *paths[TS_BENCH_STACK_N_MEMBERS], guint *n_written,
                              GError **error)
{
  g_return_val_if_fail (paths != NULL && n_written != NULL, FALSE);

  *n_written = 0;
  for (guint i = 0; i < TS_BENCH_STACK_N_MEMBERS; i++)
    {
      g_autofree char *name = g_strdup_printf ("stack-%s-r%u.gguf", i == 1 ? "ffn" : "attn", rank);

      paths[i] = g_build_filename (dir, name, NULL);
    }
  for (guint i = 0; i < TS_BENCH_STACK_N_MEMBERS; i++)
    {
      if (g_file_test (paths[i], G_FILE_TEST_EXISTS))
        continue;
      if (!write_member (model, rank, i, paths[i], error))
        return FALSE;
      (*n_written)++;
    }
  return TRUE;
}
