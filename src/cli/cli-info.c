/* cli-info.c: tensafe-cli info.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdio.h>

#include "cli.h"
#include "ts-core.h"

int
cli_info (int argc, char **argv)
{
  printf ("tensafe %s\n", ts_version ());
  return 0;
}
