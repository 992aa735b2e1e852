/* main.c: tensafe-cli, the scriptable front end.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdio.h>
#include <string.h>

#include "ts-core.h"

static int
usage (FILE *out)
{
  fprintf (out,
           "Usage: tensafe-cli COMMAND [OPTIONS]\n"
           "\n"
           "Commands:\n"
           "  info        Show version and compute devices\n"
           "  --version   Print the version\n");
  return out == stderr ? 2 : 0;
}

int
main (int argc, char **argv)
{
  if (argc < 2)
    return usage (stderr);
  if (strcmp (argv[1], "--version") == 0)
    {
      printf ("tensafe-cli %s\n", ts_version ());
      return 0;
    }
  if (strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0)
    return usage (stdout);
  if (strcmp (argv[1], "info") == 0)
    {
      printf ("tensafe %s\n", ts_version ());
      return 0;
    }
  fprintf (stderr, "tensafe-cli: unknown command '%s'\n", argv[1]);
  return usage (stderr);
}
