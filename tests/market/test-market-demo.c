/* test-market-demo.c: the seeded demo adapters in data/market are exactly what the generator makes.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "market-test-util.h"

typedef struct
{
  const char *folder;
  const char *args;   /* SEED RANK ALPHA TARGETS, as in data/market/README.md */
  int         rank;
  int         n_modules;
} DemoAdapter;

static const DemoAdapter demo[] = {
  { "tiny-pirate", "1 4 8 o_proj,out_proj", 4, 4 },
  { "tiny-formal", "2 16 16 o_proj", 16, 1 },
  { "tiny-poet", "3 8 32 out_proj", 8, 3 },
};

/* Size check from the PEFT shapes alone: per module an r×128 A and a 128×r B
 * in F32, after an 8-byte length and a header padded to 8. */
static void
assert_safetensors_size (const char *path, int rank, int n_modules)
{
  g_autofree char *data = NULL;
  gsize len = 0;
  guint64 header = 0;

  g_assert_true (g_file_get_contents (path, &data, &len, NULL));
  for (int i = 7; i >= 0; i--)
    header = (header << 8) | (guint8) data[i];
  g_assert_cmpuint (header % 8, ==, 0);
  g_assert_cmpuint (len, ==, 8 + header + (gsize) n_modules * 2 * rank * 128 * 4);
}

static void
test_generator_reproduces_catalogue (void)
{
  g_autofree char *tmp = market_tmpdir ();

  for (guint i = 0; i < G_N_ELEMENTS (demo); i++)
    {
      g_autofree char *out = g_build_filename (tmp, demo[i].folder, NULL);
      g_autofree char *cmd = g_strdup_printf ("%s %s %s", MAKE_DEMO_ADAPTER_PATH, out,
                                              demo[i].args);
      g_autoptr(GError) error = NULL;
      int status = 0;

      g_assert_true (g_spawn_command_line_sync (cmd, NULL, NULL, &status, &error));
      g_assert_no_error (error);
      g_assert_true (g_spawn_check_wait_status (status, NULL));
      for (guint f = 0; f < 2; f++)
        {
          const char *name = f ? "adapter_model.safetensors" : "adapter_config.json";
          g_autofree char *got = g_build_filename (out, name, NULL);
          g_autofree char *want = g_build_filename (market_demo_dir (), demo[i].folder, name,
                                                    NULL);
          market_assert_same_file (got, want);
          if (f)
            assert_safetensors_size (want, demo[i].rank, demo[i].n_modules);
        }
    }
  market_rm_rf (tmp);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/market/demo/generator-reproduces-catalogue",
                   test_generator_reproduces_catalogue);
  return g_test_run ();
}
