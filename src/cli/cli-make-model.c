/* cli-make-model.c: tensafe-cli make-model.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "cli.h"

int
cli_make_model (int argc, char **argv)
{
  return cli_not_available ("make-model");
}
