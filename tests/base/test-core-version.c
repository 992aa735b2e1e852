/* test-core-version.c: the core library reports the project version.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-config.h"
#include "ts-core.h"

static void
test_version (void)
{
  g_assert_cmpstr (ts_version (), ==, TS_VERSION);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/core/version", test_version);
  return g_test_run ();
}
