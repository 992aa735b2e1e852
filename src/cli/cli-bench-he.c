/* cli-bench-he.c: tensafe-cli bench he.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "cli.h"

int
cli_bench_he (int argc, char **argv)
{
  return cli_not_available ("bench he");
}
