/* test-he-gpu-probe.c: the GPU probe answers, with a reason when it says no.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <string.h>

#include "ckks-gpu.h"

static void
test_probe_consistent (void)
{
  char why[200] = "";
  gboolean first = ckks_gpu_available (why, sizeof why);
  char again[200] = "";
  /* Cached: the second answer is the first one. */
  g_assert_cmpint (ckks_gpu_available (again, sizeof again), ==, first);
  if (first)
    {
      g_assert_cmpstr (why, ==, "");
      g_test_message ("a CUDA GPU is present");
      return;
    }
  g_assert_cmpstr (why, ==, again);
  g_assert_cmpuint (strlen (why), >, 10);
  g_assert_nonnull (strstr (why, ckks_gpu_built () ? "no usable NVIDIA GPU" : "no CUDA kernels"));
  g_test_message ("GPU backend unavailable: %s", why);
  /* A NULL buffer is allowed. */
  g_assert_false (ckks_gpu_available (NULL, 0));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/he/gpu/probe", test_probe_consistent);
  return g_test_run ();
}
