/* cli-generate.c: tensafe-cli generate.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "cli.h"

int
cli_generate (int argc, char **argv)
{
  return cli_not_available ("generate");
}
