/* test-read-bandwidth.c: the read-bandwidth measurement behind bench engine's decode ceiling.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <math.h>
#include <time.h>

#include "read-bandwidth.h"

/* A measured rate is a plausible memory rate: above what any machine this
 * runs on reads (10 MB/s) and below what no DRAM system delivers (10 TB/s). */
static void
test_measures (void)
{
  for (int threads = 1; threads <= 2; threads++)
    {
      double wall = 0, cpu = 0;
      g_assert_cmpint (lm_read_bandwidth (64, 2, threads, CLOCK_MONOTONIC, &wall), ==, LM_OK);
      g_assert_cmpint (lm_read_bandwidth (64, 2, threads, CLOCK_PROCESS_CPUTIME_ID, &cpu), ==,
                       LM_OK);
      g_assert_true (isfinite (wall) && isfinite (cpu));
      g_assert_cmpfloat (wall, >, 1e7);
      g_assert_cmpfloat (wall, <, 1e13);
      g_assert_cmpfloat (cpu, >, 1e7);
      g_assert_cmpfloat (cpu, <, 1e13);
    }
}

static void
test_refuses (void)
{
  double rate = -1;
  g_assert_cmpint (lm_read_bandwidth (LM_READ_BANDWIDTH_MIN_MIB - 1, 1, 1, CLOCK_MONOTONIC, &rate),
                   ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_read_bandwidth (LM_READ_BANDWIDTH_MAX_MIB + 1, 1, 1, CLOCK_MONOTONIC, &rate),
                   ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_read_bandwidth (64, 0, 1, CLOCK_MONOTONIC, &rate), ==,
                   LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_read_bandwidth (64, 1, 0, CLOCK_MONOTONIC, &rate), ==,
                   LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_read_bandwidth (64, 1, 1, CLOCK_MONOTONIC, NULL), ==,
                   LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpfloat (rate, ==, -1);   /* untouched on refusal */
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/read-bandwidth/measures", test_measures);
  g_test_add_func ("/engine/read-bandwidth/refuses", test_refuses);
  return g_test_run ();
}
