/* cli-tokenize.c: tensafe-cli tokenize.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "cli.h"

int
cli_tokenize (int argc, char **argv)
{
  return cli_not_available ("tokenize");
}
