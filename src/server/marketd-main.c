/* marketd-main.c: tensafe-marketd, the adapter marketplace server.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdio.h>
#include <string.h>

#include "ts-core.h"

int
main (int argc, char **argv)
{
  if (argc > 1 && strcmp (argv[1], "--version") == 0)
    {
      printf ("tensafe-marketd %s\n", ts_version ());
      return 0;
    }
  fprintf (stderr, "tensafe-marketd: not implemented yet\n");
  return 1;
}
