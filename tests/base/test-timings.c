/* test-timings.c: stage names, medians and sums of per-token timings.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-timings.h"

static void
test_names (void)
{
  const char *expected[] = { "forward", "encrypt", "upload", "evaluate", "download",
                             "decrypt", "lora_b", "lm_head", "sample" };
  TsStage stage;

  g_assert_cmpuint (G_N_ELEMENTS (expected), ==, TS_N_STAGES);
  for (guint i = 0; i < TS_N_STAGES; i++)
    {
      g_assert_cmpstr (ts_stage_name (i), ==, expected[i]);
      g_assert_true (ts_stage_from_name (expected[i], &stage));
      g_assert_cmpuint (stage, ==, i);
    }
  g_assert_null (ts_stage_name (TS_N_STAGES));
  g_assert_false (ts_stage_from_name ("total", &stage));
}

static void
test_median_and_sum (void)
{
  g_autoptr (TsTimingSeries) series = ts_timing_series_new ();
  /* Encrypt times 5, 1, 4, 2 ms: median (2 + 4) / 2 = 3; then 9 → median 4. */
  const double encrypt[] = { 5, 1, 4, 2, 9 };
  TsTokenTimings sum;

  g_assert_cmpfloat (ts_timing_series_median_ms (series, TS_STAGE_ENCRYPT), ==, 0);
  for (guint i = 0; i < G_N_ELEMENTS (encrypt); i++)
    {
      TsTokenTimings t = { { 0 } };
      t.ms[TS_STAGE_ENCRYPT] = encrypt[i];
      t.ms[TS_STAGE_SAMPLE] = 0.5;
      t.bytes_up = 100;
      t.bytes_down = 1000;
      ts_timing_series_append (series, &t);
      if (i == 3)
        g_assert_cmpfloat (ts_timing_series_median_ms (series, TS_STAGE_ENCRYPT), ==, 3);
    }
  g_assert_cmpfloat (ts_timing_series_median_ms (series, TS_STAGE_ENCRYPT), ==, 4);
  g_assert_cmpuint (ts_timing_series_len (series), ==, 5);
  sum = ts_timing_series_sum (series);
  g_assert_cmpfloat (sum.ms[TS_STAGE_ENCRYPT], ==, 21);
  g_assert_cmpfloat (ts_token_timings_total_ms (&sum), ==, 23.5);
  g_assert_cmpuint (sum.bytes_up, ==, 500);
  g_assert_cmpuint (sum.bytes_down, ==, 5000);
}

static void
test_json (void)
{
  g_autoptr (TsTimingSeries) series = ts_timing_series_new ();
  g_autoptr (JsonBuilder) builder = json_builder_new ();
  g_autoptr (JsonNode) root = NULL;
  TsTokenTimings t = { { 0 } };
  JsonObject *medians;

  t.ms[TS_STAGE_EVALUATE] = 1.25;
  ts_timing_series_append (series, &t);
  json_builder_begin_object (builder);
  ts_timing_series_build_medians (series, builder);
  json_builder_end_object (builder);
  root = json_builder_get_root (builder);
  medians = json_object_get_object_member (json_node_get_object (root), "median_ms");
  g_assert_cmpuint (json_object_get_size (medians), ==, TS_N_STAGES);
  g_assert_cmpfloat (json_object_get_double_member (medians, "evaluate"), ==, 1.25);
  g_assert_cmpfloat (json_object_get_double_member (medians, "lm_head"), ==, 0);
}

static void
test_clock (void)
{
  double a = ts_now_ms ();
  double b;

  g_usleep (2000);
  b = ts_now_ms ();
  g_assert_cmpfloat (b - a, >=, 2.0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/helora/timings/names", test_names);
  g_test_add_func ("/helora/timings/median-and-sum", test_median_and_sum);
  g_test_add_func ("/helora/timings/json", test_json);
  g_test_add_func ("/helora/timings/clock", test_clock);
  return g_test_run ();
}
