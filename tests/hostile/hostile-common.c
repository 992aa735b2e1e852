/* hostile-common.c: the --long switch and reading a process's memory.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>
#include <string.h>

#include "hostile-common.h"

#define LONG_SCALE 25

static guint scale = 1;

guint
hostile_scale_from_args (int *argc, char **argv)
{
  int kept = 1;

  for (int i = 1; i < *argc; i++)
    if (strcmp (argv[i], "--long") == 0)
      scale = LONG_SCALE;
    else
      argv[kept++] = argv[i];
  *argc = kept;
  argv[kept] = NULL;
  return scale;
}

guint
hostile_count (guint n)
{
  return n * scale;
}

guint64
hostile_status_kib (GPid pid, const char *field)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/status", (int) pid);
  g_autofree char *key = g_strconcat ("\n", field, ":", NULL);
  g_autofree char *text = NULL;
  const char *line;

  if (!g_file_get_contents (path, &text, NULL, NULL))
    return 0;
  line = strstr (text, key);
  return line != NULL ? g_ascii_strtoull (line + strlen (key), NULL, 10) : 0;
}
