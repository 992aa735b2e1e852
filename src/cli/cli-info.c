/* cli-info.c: tensafe-cli info: version, CPU features and GPUs of this machine.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdio.h>

#include "cli.h"
#include "ts-config.h"
#include "ts-core.h"
#include "ts-gpu.h"

int
cli_info (int argc, char **argv)
{
  g_autoptr (TsGpuInfo) gpu = NULL;
  g_autofree char *cpu = NULL;
  g_autofree char *kernels = ts_cpu_kernels_describe ();
  g_autofree char *gpu_text = NULL;

  if (argc > 1)
    {
      fprintf (stderr, "Usage: tensafe-cli info\n");
      return 2;
    }

  cpu = ts_cpu_features_describe ();
  gpu = ts_gpu_probe ();
  gpu_text = ts_gpu_info_describe (gpu);

  printf ("tensafe %s\n", ts_version ());
  printf ("CUDA kernels: %s\n", TS_HAVE_CUDA ? "built" : "not built");
  printf ("CPU: %s\n", cpu);
  printf ("CPU kernels: %s\n", kernels);
  printf ("%s\n", gpu_text);
  return 0;
}
