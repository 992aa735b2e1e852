/* ts-core.c: product-wide facts (version).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-config.h"
#include "ts-core.h"

const char *
ts_version (void)
{
  return TS_VERSION;
}
