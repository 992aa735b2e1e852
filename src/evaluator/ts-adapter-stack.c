/* ts-adapter-stack.c: several LoRA adapters active at once, with weights.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>

#include "ts-adapter-stack.h"

static GQuark
stack_error_quark (void)
{
  return g_quark_from_static_string ("ts-adapter-stack-error");
}

LmLora *
ts_adapter_stack (const LmLora *const *loras, const float *weights, guint n, GError **error)
{
  g_return_val_if_fail (loras != NULL || n == 0, NULL);

  LmLora *out = NULL;
  char *msg = NULL;
  LmStatus st = lm_lora_stack (loras, weights, n, &out, &msg);

  if (st != LM_OK)
    {
      g_set_error (error, stack_error_quark (), st, "Cannot stack the adapters: %s",
                   msg != NULL ? msg : lm_status_message (st));
      free (msg);
    }
  return out;
}

LmLora *
ts_adapter_stack_load (const LmModel *model, const char *const *paths, const float *weights,
                       guint n, GError **error)
{
  g_autofree LmLora **loras = g_new0 (LmLora *, MAX (n, 1));
  LmLora *out = NULL;
  guint loaded = 0;

  g_return_val_if_fail (paths != NULL, NULL);

  for (; loaded < n; loaded++)
    {
      char *msg = NULL;
      LmStatus st = lm_lora_load (model, paths[loaded], 1.0f, &loras[loaded], &msg);
      if (st != LM_OK)
        {
          g_set_error (error, stack_error_quark (), st, "%s: %s", paths[loaded],
                       msg != NULL ? msg : lm_status_message (st));
          free (msg);
          break;
        }
    }
  if (loaded == n)
    out = ts_adapter_stack ((const LmLora *const *) loras, weights, n, error);
  for (guint i = 0; i < loaded; i++)
    lm_lora_free (loras[i]);
  return out;
}

char *
ts_adapter_stack_describe (const char *const *ids, const float *weights, guint n)
{
  g_return_val_if_fail (ids != NULL || n == 0, NULL);

  GString *out = g_string_new (NULL);

  for (guint i = 0; i < n; i++)
    g_string_append_printf (out, "%s%s ×%.2f", i ? " + " : "", ids[i], weights[i]);
  return g_string_free (out, FALSE);
}
