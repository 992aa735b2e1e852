/* test-gpu.c: the CUDA probe reports devices or a reason, and never crashes.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ckks.h"
#include "ts-config.h"
#include "ts-gpu.h"

static void
assert_consistent (const TsGpuInfo *info)
{
  g_assert_nonnull (info);
  if (info->n_devices == 0)
    {
      g_assert_nonnull (info->reason);
      g_assert_cmpuint (strlen (info->reason), >, 0);
      return;
    }
  g_assert_null (info->reason);
  for (guint i = 0; i < info->n_devices; i++)
    {
      g_assert_cmpint (info->devices[i].ordinal, ==, (int) i);
      g_assert_cmpuint (strlen (info->devices[i].name), >, 0);
      g_assert_cmpuint (info->devices[i].total_memory, >, 0);
      g_assert_cmpint (info->devices[i].cc_major, >=, 1);
    }
}

static void
test_probe_system (void)
{
  g_autoptr (TsGpuInfo) info = ts_gpu_probe ();
  g_autofree char *text = NULL;

  assert_consistent (info);
  text = ts_gpu_info_describe (info);
  g_test_message ("%s", text);
  if (info->n_devices == 0)
    g_assert_true (g_str_has_prefix (text, "No GPU: "));
  else
    g_assert_true (g_str_has_prefix (text, "GPU 0: "));
}

static void
test_probe_twice (void)
{
  g_autoptr (TsGpuInfo) first = ts_gpu_probe ();
  g_autoptr (TsGpuInfo) second = ts_gpu_probe ();

  g_assert_cmpuint (first->n_devices, ==, second->n_devices);
}

static void
probe_done_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  TsGpuInfo **out = user_data;
  g_autoptr (GError) error = NULL;

  *out = ts_gpu_probe_finish (result, &error);
  g_assert_no_error (error);
}

static void
test_probe_async (void)
{
  g_autoptr (TsGpuInfo) sync_info = ts_gpu_probe ();
  g_autoptr (TsGpuInfo) async_info = NULL;

  ts_gpu_probe_async (NULL, probe_done_cb, &async_info);
  while (async_info == NULL)
    g_main_context_iteration (NULL, TRUE);
  assert_consistent (async_info);
  g_assert_cmpuint (async_info->n_devices, ==, sync_info->n_devices);
}

/* Probing @library finds no GPU, for a reason that mentions @expected. */
static void
assert_no_gpu_because (const char *library, const char *expected)
{
  g_autoptr (TsGpuInfo) info = ts_gpu_probe_library (library);

  assert_consistent (info);
  g_assert_cmpuint (info->n_devices, ==, 0);
  g_assert_nonnull (strstr (info->reason, library));
  g_assert_nonnull (strstr (info->reason, expected));
}

static void
test_missing_library (void)
{
  assert_no_gpu_because ("libtensafe-no-such-driver.so.0", "not installed");
}

static void
test_not_a_driver (void)
{
  /* libc is always loadable and has none of the driver's entry points. */
  assert_no_gpu_because ("libc.so.6", "symbol cuInit is missing");
}

/* The CUDA toolkit ships a stub libcuda.so for linking; loading it exercises
 * the path where the driver library is there but cuInit() fails. */
static void
test_driver_error (void)
{
  const char *cuda_home = g_getenv ("CUDA_HOME");
  g_autofree char *stub = g_build_filename (cuda_home ? cuda_home : "/usr/local/cuda",
                                            "lib64", "stubs", "libcuda.so", NULL);
  g_autoptr (TsGpuInfo) info = NULL;

  if (!g_file_test (stub, G_FILE_TEST_EXISTS))
    {
      g_test_skip ("no CUDA toolkit stub driver here");
      return;
    }
  info = ts_gpu_probe_library (stub);
  assert_consistent (info);
  g_assert_cmpuint (info->n_devices, ==, 0);
  g_assert_nonnull (strstr (info->reason, "failed in cuInit with error 34"));
  g_assert_nonnull (strstr (info->reason, "stub library"));
}

static void
test_describe_device (void)
{
  TsGpuDevice dev = { .ordinal = 0, .name = (char *) "Test GPU",
                      .total_memory = G_GUINT64_CONSTANT (80) << 30,
                      .cc_major = 9, .cc_minor = 0 };
  TsGpuInfo info = { .driver_version = 12040, .n_devices = 1, .devices = &dev };
  g_autofree char *text = ts_gpu_info_describe (&info);

  g_assert_cmpstr (text, ==, "GPU 0: Test GPU, 80.0 GiB, compute 9.0\nCUDA driver 12.4");
}

/* The kernels named are the ones a CKKS context on the automatic backend
 * really takes, and agree with the CPU's features. */
static void
test_cpu_kernels (void)
{
  g_autofree char *text = ts_cpu_kernels_describe ();
  g_autofree char *expected = NULL;
  CkksParams params;
  CkksContext *ctx = NULL;

  g_assert_true (g_regex_match_simple ("^CKKS (scalar|avx2|avx512ifma), runtime "
                                       "(scalar|avx2|avx512)$", text, 0, 0));
  g_assert_cmpint (ckks_params_preset ("default", &params), ==, CKKS_OK);
  g_assert_cmpint (ckks_context_new (&params, &ctx), ==, CKKS_OK);
  expected = g_strdup_printf ("CKKS %s,", ckks_context_backend_name (ctx));
  g_assert_true (g_str_has_prefix (text, expected));
  ckks_context_free (ctx);
#if defined(__x86_64__)
  __builtin_cpu_init ();
  if (!__builtin_cpu_supports ("avx512ifma"))
    g_assert_null (strstr (text, "avx512ifma"));
  if (!__builtin_cpu_supports ("avx2"))
    g_assert_true (g_str_equal (text, "CKKS scalar, runtime scalar"));
  if (__builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma")
      && !__builtin_cpu_supports ("avx512f"))
    g_assert_true (g_str_equal (text, "CKKS avx2, runtime avx2"));
#endif
}

/* `tensafe-cli info` prints the version, CPU features and the probe result. */
static void
test_cli_info (void)
{
  const char *cli = g_getenv ("TENSAFE_CLI");
  const char *argv[] = { cli, "info", NULL };
  g_autoptr (TsGpuInfo) info = ts_gpu_probe ();
  g_autofree char *gpu = ts_gpu_info_describe (info);
  g_autofree char *cpu = ts_cpu_features_describe ();
  g_autofree char *kernels = ts_cpu_kernels_describe ();
  g_autofree char *expected_kernels = g_strdup_printf ("\nCPU kernels: %s\n", kernels);
  g_autofree char *out = NULL;
  g_autofree char *expected_cpu = NULL;
  g_autoptr (GError) error = NULL;
  int status = 0;

  g_assert_nonnull (cli);
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                &out, NULL, &status, &error);
  g_assert_no_error (error);
  g_assert_true (g_spawn_check_wait_status (status, NULL));

  expected_cpu = g_strdup_printf ("\nCPU: %s\n", cpu);
  g_assert_true (g_str_has_prefix (out, "tensafe " TS_VERSION "\n"));
  g_assert_nonnull (strstr (out, expected_cpu));
  g_assert_nonnull (strstr (out, expected_kernels));
  g_assert_nonnull (strstr (out, gpu));
}

static void
test_cpu_features (void)
{
  g_autofree char *text = ts_cpu_features_describe ();

#if defined(__x86_64__)
  /* x86-64 guarantees SSE2 only, so each feature must be answered yes or no. */
  g_assert_true (g_regex_match_simple ("^AVX2 (yes|no), AVX-512F (yes|no), "
                                       "AVX-512 IFMA (yes|no)$", text, 0, 0));
#else
  g_assert_cmpuint (strlen (text), >, 0);
#endif
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/core/gpu/probe-system", test_probe_system);
  g_test_add_func ("/core/gpu/probe-twice", test_probe_twice);
  g_test_add_func ("/core/gpu/probe-async", test_probe_async);
  g_test_add_func ("/core/gpu/missing-library", test_missing_library);
  g_test_add_func ("/core/gpu/not-a-driver", test_not_a_driver);
  g_test_add_func ("/core/gpu/driver-error", test_driver_error);
  g_test_add_func ("/core/gpu/describe-device", test_describe_device);
  g_test_add_func ("/core/gpu/cpu-features", test_cpu_features);
  g_test_add_func ("/core/gpu/cpu-kernels", test_cpu_kernels);
  g_test_add_func ("/core/gpu/cli-info", test_cli_info);
  return g_test_run ();
}
