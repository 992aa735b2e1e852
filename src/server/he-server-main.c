/* he-server-main.c: tensafe-he-server, the remote HE-LoRA evaluator.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdio.h>
#include <string.h>

#include "ts-core.h"

int
main (int argc, char **argv)
{
  if (argc > 1 && strcmp (argv[1], "--version") == 0)
    {
      printf ("tensafe-he-server %s\n", ts_version ());
      return 0;
    }
  fprintf (stderr, "tensafe-he-server: not implemented yet\n");
  return 1;
}
