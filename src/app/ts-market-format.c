/* ts-market-format.c: small helpers of the marketplace views: readable values, toasts, folders.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <adwaita.h>
#include <errno.h>
#include <glib/gi18n.h>

#include "ts-market-format.h"

char *
ts_market_format_price (double price)
{
  if (price <= 0)
    return g_strdup (_("Free"));
  /* Translators: a price per thousand generated tokens, e.g. "0.02 per 1k tokens". */
  return g_strdup_printf (_("%.2f per 1k tokens"), price);
}

char *
ts_market_format_rank (gint64 rank, double alpha)
{
  /* Translators: LoRA rank and scaling factor alpha, e.g. "Rank 8 · α 16". */
  return g_strdup_printf (_("Rank %d · α %g"), (int) CLAMP (rank, 0, G_MAXINT), alpha);
}

char *
ts_market_format_modules (const char * const *modules)
{
  if (modules == NULL || modules[0] == NULL)
    return g_strdup ("—");
  return g_strjoinv (", ", (char **) modules);
}

char *
ts_market_format_fingerprint (const char *public_key_b64)
{
  GString *out = g_string_new (NULL);

  for (gsize i = 0; public_key_b64 != NULL && public_key_b64[i] != '\0'; i++)
    {
      if (i > 0 && i % 4 == 0)
        g_string_append_c (out, i % 24 == 0 ? '\n' : ' ');
      g_string_append_c (out, public_key_b64[i]);
    }
  return g_string_free (out, FALSE);
}

void
ts_market_ensure_parent_dir (const char *path)
{
  g_autofree char *parent = g_path_get_dirname (path);

  if (g_mkdir_with_parents (parent, 0700) != 0)
    g_message ("Cannot create %s: %s", parent, g_strerror (errno));
}

char *
ts_market_keyring_path (void)
{
  return g_build_filename (g_get_user_data_dir (), "tensafe", "market-keyring.json", NULL);
}
