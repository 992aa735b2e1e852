/* test-he-status.c: status codes have distinct, non-empty messages.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>

#include "ckks-status.h"

static void
test_messages_distinct (void)
{
  g_assert_cmpstr (ckks_status_message (CKKS_OK), ==, "success");
  g_assert_cmpstr (ckks_status_message (CKKS_ERR_NO_MEMORY), !=,
                   ckks_status_message (CKKS_ERR_INVALID_ARGUMENT));
  g_assert_cmpstr (ckks_status_message ((CkksStatus) 9999), ==, "unknown status");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/he/status/messages", test_messages_distinct);
  return g_test_run ();
}
