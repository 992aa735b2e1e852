/* cli-adapter.c: tensafe-cli adapter.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "cli.h"

int
cli_adapter (int argc, char **argv)
{
  return cli_not_available ("adapter");
}
