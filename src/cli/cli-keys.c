/* cli-keys.c: tensafe-cli keys.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "cli.h"

int
cli_keys (int argc, char **argv)
{
  return cli_not_available ("keys");
}
