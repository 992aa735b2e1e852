/* test-gpu-probe.c: the CKKS engine and the runtime see the same GPU, and
 * say why when there is none.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <string.h>

#include "ckks-gpu.h"
#include "lm-gpu.h"
#include "ts-gpu.h"

static void
test_probe_consistent (void)
{
  char why[200] = "", again[200] = "", engine_why[200] = "";
  gboolean first = ckks_gpu_available (why, sizeof why);
  /* Cached: the second answer is the first one, and the runtime agrees. */
  g_assert_cmpint (ckks_gpu_available (again, sizeof again), ==, first);
  g_assert_cmpint (lm_gpu_available (engine_why, sizeof engine_why), ==, first);
  g_assert_cmpint (ckks_gpu_built (), ==, lm_gpu_built ());
  if (first)
    {
      g_assert_cmpstr (why, ==, "");
      g_assert_true (ckks_gpu_built ());
      g_test_message ("a CUDA GPU is present");
      return;
    }
  g_assert_cmpstr (why, ==, again);
  g_assert_cmpstr (why, ==, engine_why);
  g_assert_cmpuint (strlen (why), >, 10);
  g_assert_nonnull (strstr (why, ckks_gpu_built () ? "no usable NVIDIA GPU" : "no CUDA kernels"));
  g_test_message ("GPU backends unavailable: %s", why);
  /* Without the driver library the reason says so, in the words of the
   * benchmark page's probe, not "driver version is insufficient". */
  g_autoptr (TsGpuInfo) info = ts_gpu_probe ();
  if (ckks_gpu_built () && info->reason != NULL && strstr (info->reason, "is not installed") != NULL)
    {
      g_assert_nonnull (strstr (why, "libcuda.so.1 is not installed"));
      g_assert_null (strstr (why, "insufficient"));
    }
  /* A NULL buffer is allowed. */
  g_assert_false (ckks_gpu_available (NULL, 0));
  g_assert_false (lm_gpu_available (NULL, 0));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/gpu/probe", test_probe_consistent);
  return g_test_run ();
}
