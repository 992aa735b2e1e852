/* cli-tokenize.c: tensafe-cli tokenize --model FILE [--no-special] [--] TEXT.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gguf.h"
#include "tokenizer.h"

int
cli_tokenize (int argc, char **argv)
{
  g_autofree char *model = NULL;
  g_auto (GStrv) text = NULL;
  gboolean no_special = FALSE;
  /* The text is collected as the remaining argument so that "--" ends the
   * options and a text starting with '-' can follow it; as a FILENAME it is
   * taken byte for byte, not converted from the locale's character set
   * (which is ASCII: the CLI does not call setlocale). */
  GOptionEntry entries[] = {
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &model, "GGUF model file", "FILE" },
    { "no-special", 0, 0, G_OPTION_ARG_NONE, &no_special,
      "Do not recognise control tokens such as <|im_start|> in the text", NULL },
    { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &text, NULL, "TEXT" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new (
    "- print the token ids of TEXT (put -- before a TEXT that starts with '-')");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    {
      fprintf (stderr, "tensafe-cli tokenize: %s (a TEXT that starts with '-' goes after --)\n",
               error->message);
      return 2;
    }
  if (model == NULL || text == NULL || g_strv_length (text) != 1)
    {
      fprintf (stderr, "Usage: tensafe-cli tokenize --model FILE [--no-special] [--] TEXT\n");
      return 2;
    }

  GgufFile *file = NULL;
  LmTokenizer *tok = NULL;
  char *msg = NULL;
  int status = 1;
  if (lm_gguf_open (model, &file, &msg) != LM_OK
      || lm_tokenizer_new_from_gguf (file, &tok, &msg) != LM_OK)
    {
      fprintf (stderr, "tensafe-cli tokenize: %s\n", msg ? msg : "cannot load the tokenizer");
      goto out;
    }
  int32_t *ids = NULL;
  size_t n = 0;
  if (lm_tokenize (tok, text[0], strlen (text[0]), !no_special, &ids, &n) != LM_OK)
    {
      fprintf (stderr, "tensafe-cli tokenize: out of memory\n");
      goto out;
    }
  for (size_t i = 0; i < n; i++)
    printf (i ? " %d" : "%d", ids[i]);
  printf ("\n");
  free (ids);
  status = 0;
out:
  free (msg);
  lm_tokenizer_free (tok);
  lm_gguf_close (file);
  return status;
}
