/* test-market-reduce.c: rank reduction of an adapter installed from a real
 * tensafe-marketd into a new adapter of the store: its files, metadata and
 * local release, the energies against the engine's singular values, the
 * engine loading it, and every refusal leaving nothing behind.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>

#include "lm.h"
#include "market-test-util.h"
#include "ts-adapter-reduce.h"
#include "ts-market-install.h"
#include "ts-test-util.h"

#define MODEL_REL "qwen35/tiny-qwen35moe-f32/tiny-qwen35moe-f32.gguf"
#define GGUF_LORA_REL "qwen35/tiny-qwen35moe-f32/lora/tiny-qwen35moe-lora-f32.gguf"

static MarketServer *server;
static TsMarketClient *client;

typedef struct
{
  char *root;
  char *store;         /* root/adapters: tiny-golden installed there */
  char *keyring_path;  /* tensafe-demo pinned */
  TsMarketAdapter *golden;
} Store;

static void
store_setup (Store *s, gconstpointer unused)
{
  g_autoptr(TsMarketKeyring) keyring = NULL;
  g_autoptr(GAsyncResult) res = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL;

  s->root = market_tmpdir ();
  s->store = g_build_filename (s->root, "adapters", NULL);
  s->keyring_path = g_build_filename (s->root, "market-keyring.json", NULL);
  keyring = ts_market_keyring_new (s->keyring_path);
  market_pin_publisher (client, keyring, "tensafe-demo");
  s->golden = market_get_adapter (client, "tiny-golden", &error);
  g_assert_no_error (error);
  ts_market_client_install_async (client, s->golden, NULL, keyring, s->store, NULL, NULL, NULL,
                                  NULL, market_store_result, &res);
  market_wait (&res);
  path = ts_market_client_install_finish (client, res, &error);
  g_assert_no_error (error);
}

static void
store_teardown (Store *s, gconstpointer unused)
{
  market_rm_rf (s->root);
  g_free (s->root);
  g_free (s->store);
  g_free (s->keyring_path);
  ts_market_adapter_unref (s->golden);
}

static char *
golden_source (Store *s)
{
  return g_build_filename (s->store, "tiny-golden", NULL);
}

/* Nothing but @expected entries in @dir (no staging folder left). */
static void
assert_entries (const char *dir, guint expected)
{
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  guint n = 0;

  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_assert_false (g_str_has_prefix (name, ".reducing-"));
      if (name[0] != '.')
        n++;
    }
  g_assert_cmpuint (n, ==, expected);
}

typedef struct
{
  guint calls, total;
  guint cancel_at;
  GCancellable *cancellable;
} Progress;

static void
progress_cb (guint done, guint total, const char *module, gpointer user_data)
{
  Progress *p = user_data;

  g_assert_cmpuint (done, ==, p->calls + 1);
  g_assert_nonnull (module);
  p->calls = done;
  p->total = total;
  if (p->cancel_at != 0 && done == p->cancel_at)
    g_cancellable_cancel (p->cancellable);
}

static int
compare_doubles (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

static void
check_energies (TsAdapterReduction *red, const char *source, guint rank)
{
  g_autofree char *model_path = ts_test_data_path (MODEL_REL);
  g_autoptr(GArray) want = market_lora_kept_fractions (model_path, source, rank, NULL);
  g_autoptr(GArray) got = g_array_new (FALSE, FALSE, sizeof (double));
  double sum = 0.0;

  for (guint i = 0; i < red->modules->len; i++)
    {
      const TsReducedModule *m = &g_array_index (red->modules, TsReducedModule, i);
      double frac = m->energy_kept / m->energy_total;

      g_assert_cmpuint (m->rank_out, ==, rank);
      g_array_append_val (got, frac);
      sum += frac;
    }
  g_array_sort (got, compare_doubles);
  g_assert_cmpuint (got->len, ==, want->len);
  for (guint i = 0; i < got->len; i++)
    g_assert_cmpfloat (fabs (g_array_index (got, double, i) - g_array_index (want, double, i)),
                       <, 1e-9);
  g_assert_cmpfloat (red->retained_min, ==, g_array_index (got, double, 0));
  g_assert_cmpfloat (fabs (red->retained_mean - sum / got->len), <, 1e-12);
  /* Rank 4 of 8 of a random adapter keeps some but not all of it. */
  g_assert_cmpfloat (red->retained_min, >, 0.3);
  g_assert_cmpfloat (red->retained_mean, <, 1.0);
}

static void
check_loads (LmModel *model, const char *path, guint rank, gsize n_modules)
{
  LmLora *lora = NULL;
  char *message = NULL;

  g_assert_cmpint (lm_lora_load (model, path, 1.0f, &lora, &message), ==, LM_OK);
  g_assert_cmpuint (lm_lora_n_modules (lora), ==, n_modules);
  for (gsize i = 0; i < lm_lora_n_modules (lora); i++)
    g_assert_cmpuint (lm_lora_module (lora, i)->rank, ==, rank);
  lm_lora_free (lora);
}

static TsMarketInstalled *
find_installed (GPtrArray *list, const char *id)
{
  for (guint i = 0; i < list->len; i++)
    if (g_str_equal (((TsMarketInstalled *) list->pdata[i])->id, id))
      return list->pdata[i];
  return NULL;
}

static void
check_record (Store *s, TsAdapterReduction *red, const char *id, const char *source_id)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) list = ts_market_list_installed (s->store, &error);
  g_autoptr(TsMarketKeyring) keyring = ts_market_keyring_new (NULL);
  g_autoptr(TsMarketAdapter) meta = NULL;
  TsAdapterOrigin origin;
  TsMarketInstalled *inst;

  g_assert_no_error (error);
  inst = find_installed (list, id);
  g_assert_nonnull (inst);
  g_assert_true (inst->local);
  g_assert_cmpstr (inst->derived_from, ==, "tiny-golden");
  g_assert_cmpstr (inst->version, ==, "1.0.0");
  g_assert_cmpstr (inst->publisher, ==, "tensafe-demo");
  g_assert_null (inst->key_id);
  /* Not signed, so no key is needed; its files match what was recorded. */
  g_assert_true (ts_market_verify_installed (s->store, id, keyring, NULL, &error));
  g_assert_no_error (error);
  meta = ts_adapter_read_metadata (red->path, &origin, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (meta->id, ==, id);
  g_assert_cmpstr (meta->name, ==, inst->name);
  g_assert_cmpint (meta->rank, ==, red->rank_out);
  g_assert_cmpstr (meta->license, ==, "Apache-2.0");
  g_assert_cmpstr (meta->publisher_name, ==, "TenSafe Demo Publisher");
  g_assert_cmpstr (meta->latest_version, ==, "1.0.0");
  g_assert_cmpstr (origin.id, ==, source_id);
  g_assert_cmpuint (origin.rank_in, ==, red->rank_in);
  g_assert_cmpuint (origin.rank_out, ==, red->rank_out);
  g_assert_cmpfloat (fabs (origin.retained_total - red->retained_total), <, 1e-12);
  g_assert_cmpfloat (fabs (origin.retained_min - red->retained_min), <, 1e-12);
  ts_adapter_origin_clear (&origin);
}

/* @dir's metadata.json lists @keywords and @examples (comma-separated): a
 * reduced copy routes in the chat as its source did. */
static void
check_routing_hints (const char *dir, const char *keywords, const char *examples)
{
  g_autofree char *path = g_build_filename (dir, "metadata.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  const char *members[] = { "keywords", "examples" }, *expected[] = { keywords, examples };

  g_assert_true (json_parser_load_from_file (parser, path, NULL));
  for (int m = 0; m < 2; m++)
    {
      JsonArray *list = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)),
                                                      members[m]);
      g_autoptr (GString) joined = g_string_new (NULL);

      g_assert_nonnull (list);
      for (guint i = 0; i < json_array_get_length (list); i++)
        g_string_append_printf (joined, "%s%s", i ? "," : "", json_array_get_string_element (list, i));
      g_assert_cmpstr (joined->str, ==, expected[m]);
    }
}

/* tiny-golden (rank 8, PEFT) → 4 → 2: files, energies, metadata, records. */
static void
test_reduce_installed (Store *s, gconstpointer unused)
{
  g_autofree char *source = golden_source (s);
  g_autofree char *model_path = ts_test_data_path (MODEL_REL);
  g_autoptr(TsAdapterReduction) red = NULL, red2 = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *config = NULL;
  LmModel *model = NULL;
  LmLoraShape shape;
  Progress p = { 0 };
  TsAdapterReduceRequest req = {
    .source = source, .dest_dir = s->store, .id = "tiny-golden-r4", .rank = 4,
    .keyring_path = s->keyring_path, .catalogue = s->golden,
  };

  g_assert_true (ts_adapter_probe (source, &shape, &error));
  g_assert_true (shape.peft);
  g_assert_cmpuint (shape.rank_max, ==, 8);
  /* The catalogue's routing hints (tiny-golden publishes none: given here). */
  g_strfreev (s->golden->keywords);
  g_strfreev (s->golden->examples);
  s->golden->keywords = g_strsplit ("golden,reference", ",", -1);
  s->golden->examples = g_strsplit ("Show me the reference output.", ",", -1);
  red = ts_adapter_reduce (&req, progress_cb, &p, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (p.calls, ==, shape.n_modules);
  g_assert_cmpuint (p.total, ==, shape.n_modules);
  g_assert_cmpuint (red->modules->len, ==, shape.n_modules);
  g_assert_cmpuint (red->rank_in, ==, 8);
  g_assert_cmpuint (red->rank_out, ==, 4);
  g_assert_cmpint (red->bytes_out, <, red->bytes_in);
  g_assert_cmpint (red->bytes_out, >, 0);
  config = g_build_filename (red->path, "adapter_config.json", NULL);
  g_assert_true (g_file_test (config, G_FILE_TEST_IS_REGULAR));

  g_assert_cmpint (lm_model_load (model_path, &model, NULL), ==, LM_OK);
  check_energies (red, source, 4);
  check_loads (model, red->path, 4, shape.n_modules);
  check_record (s, red, "tiny-golden-r4", "tiny-golden");
  check_routing_hints (red->path, "golden,reference", "Show me the reference output.");

  /* Reducing the reduced one again: still metered as tiny-golden. */
  req = (TsAdapterReduceRequest) { .source = red->path, .dest_dir = s->store,
                                   .id = "tiny-golden-r2", .name = "Two", .rank = 2,
                                   .keyring_path = s->keyring_path };
  red2 = ts_adapter_reduce (&req, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  check_loads (model, red2->path, 2, shape.n_modules);
  check_record (s, red2, "tiny-golden-r2", "tiny-golden-r4");
  check_routing_hints (red2->path, "golden,reference", "Show me the reference output.");
  assert_entries (s->store, 3);

  /* A reduced adapter changed on disk fails its check, and is not reduced. */
  {
    g_autofree char *st = g_build_filename (red->path, "adapter_model.safetensors", NULL);
    g_autoptr(TsMarketKeyring) keyring = ts_market_keyring_new (NULL);
    g_autoptr(TsAdapterReduction) none = NULL;

    g_assert_true (g_file_set_contents (st, "tampered", -1, NULL));
    g_assert_false (ts_market_verify_installed (s->store, "tiny-golden-r4", keyring, NULL, &error));
    g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_CHECKSUM);
    g_clear_error (&error);
    req.source = red->path;
    req.id = "tiny-golden-r1";
    req.rank = 1;
    none = ts_adapter_reduce (&req, NULL, NULL, NULL, &error);
    g_assert_null (none);
    g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
    assert_entries (s->store, 3);
  }
  lm_model_free (model);
}

static void
expect_refusal (const TsAdapterReduceRequest *req, GIOErrorEnum code, const char *dir,
                guint entries)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsAdapterReduction) red = ts_adapter_reduce (req, NULL, NULL, NULL, &error);

  g_assert_null (red);
  g_assert_error (error, G_IO_ERROR, (gint) code);
  g_test_message ("refused as expected: %s", error->message);
  if (dir != NULL)
    assert_entries (dir, entries);
}

/* Bad ranks and names, a taken name, an unwritable place, a file that is no
 * adapter and a cancel: each refused with its own code, nothing left. */
static void
test_refusals (Store *s, gconstpointer unused)
{
  g_autofree char *source = golden_source (s);
  g_autofree char *blocker = g_build_filename (s->root, "a-file", NULL);
  g_autofree char *under_file = g_build_filename (blocker, "adapters", NULL);
  g_autofree char *model_path = ts_test_data_path (MODEL_REL);
  g_autofree char *marker = g_build_filename (s->store, "taken", "old-file", NULL);
  g_autofree char *taken = g_build_filename (s->store, "taken", NULL);
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  g_autoptr(TsAdapterReduction) red = NULL;
  g_autoptr(GError) error = NULL;
  Progress p = { .cancel_at = 2, .cancellable = cancellable };
  TsAdapterReduceRequest req = {
    .source = source, .dest_dir = s->store, .id = "tiny-golden-r8", .rank = 8,
  };

  expect_refusal (&req, G_IO_ERROR_INVALID_ARGUMENT, s->store, 1);   /* rank = current */
  req.rank = 0;
  expect_refusal (&req, G_IO_ERROR_INVALID_ARGUMENT, s->store, 1);
  req.rank = 4;
  req.id = "../escape";
  expect_refusal (&req, G_IO_ERROR_INVALID_ARGUMENT, s->store, 1);
  req.id = "tiny-golden";                                              /* itself */
  req.replace = TRUE;
  expect_refusal (&req, G_IO_ERROR_INVALID_ARGUMENT, s->store, 1);
  req.replace = FALSE;

  /* A name in use is refused unless replacing was asked for. */
  g_assert_cmpint (g_mkdir (taken, 0755), ==, 0);
  g_assert_true (g_file_set_contents (marker, "old", -1, NULL));
  req.id = "taken";
  expect_refusal (&req, G_IO_ERROR_EXISTS, s->store, 2);
  g_assert_true (g_file_test (marker, G_FILE_TEST_EXISTS));
  req.replace = TRUE;
  red = ts_adapter_reduce (&req, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_false (g_file_test (marker, G_FILE_TEST_EXISTS));
  assert_entries (s->store, 2);
  req.replace = FALSE;

  /* A place that cannot be a folder (works for root too). */
  g_assert_true (g_file_set_contents (blocker, "not a folder", -1, NULL));
  req.dest_dir = under_file;
  req.id = "tiny-golden-r4";
  expect_refusal (&req, G_IO_ERROR_NOT_DIRECTORY, NULL, 0);
  g_assert_false (g_file_test (under_file, G_FILE_TEST_EXISTS));
  req.dest_dir = s->store;

  /* Not an adapter. */
  req.source = model_path;
  expect_refusal (&req, G_IO_ERROR_INVALID_DATA, s->store, 2);
  req.source = source;

  /* The disk fills up while the files are written (a file size limit stands
   * in for a full disk): the error says so, and nothing is left. */
  {
    struct rlimit old_limit, limit;

    g_clear_pointer (&red, ts_adapter_reduction_free);
    signal (SIGXFSZ, SIG_IGN);
    g_assert_cmpint (getrlimit (RLIMIT_FSIZE, &old_limit), ==, 0);
    limit = (struct rlimit) { 4096, old_limit.rlim_max };
    g_assert_cmpint (setrlimit (RLIMIT_FSIZE, &limit), ==, 0);
    red = ts_adapter_reduce (&req, NULL, NULL, NULL, &error);
    g_assert_cmpint (setrlimit (RLIMIT_FSIZE, &old_limit), ==, 0);
    g_assert_null (red);
    g_assert_error (error, G_IO_ERROR, G_IO_ERROR_FAILED);
    g_test_message ("refused as expected: %s", error->message);
    g_clear_error (&error);
    assert_entries (s->store, 2);
  }

  /* Cancelled after the second module: nothing is written. */
  red = ts_adapter_reduce (&req, progress_cb, &p, cancellable, &error);
  g_assert_null (red);
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpuint (p.calls, ==, 2);
  assert_entries (s->store, 2);
}

/* A GGUF adapter (a plain file) reduces into "<id>/<id>.gguf", which the
 * engine loads through its folder; its metadata comes from the file name. */
static void
test_gguf_source (Store *s, gconstpointer unused)
{
  g_autofree char *source = ts_test_data_path (GGUF_LORA_REL);
  g_autofree char *model_path = ts_test_data_path (MODEL_REL);
  g_autofree char *file = NULL;
  g_autoptr(TsAdapterReduction) red = NULL;
  g_autoptr(TsMarketAdapter) meta = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) list = NULL;
  TsAdapterReduceRequest req = {
    .source = source, .dest_dir = s->store, .id = "lora-r2", .rank = 2,
  };
  LmModel *model = NULL;
  TsMarketInstalled *inst;

  red = ts_adapter_reduce (&req, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  file = g_build_filename (red->path, "lora-r2.gguf", NULL);
  g_assert_true (g_file_test (file, G_FILE_TEST_IS_REGULAR));
  g_assert_cmpint (lm_model_load (model_path, &model, NULL), ==, LM_OK);
  check_energies (red, source, 2);
  check_loads (model, red->path, 2, red->modules->len);
  meta = ts_adapter_read_metadata (red->path, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (meta->name, ==, "tiny-qwen35moe-lora-f32 (rank 2)");
  list = ts_market_list_installed (s->store, &error);
  inst = find_installed (list, "lora-r2");
  g_assert_nonnull (inst);
  g_assert_true (inst->local);
  g_assert_null (inst->derived_from);   /* not from the marketplace: never metered */
  lm_model_free (model);
}

int
main (int argc, char **argv)
{
  const char *imports[] = { market_demo_dir (), NULL };
  int status;

  g_test_init (&argc, &argv, NULL);
  server = market_server_start (imports, NULL);
  client = ts_market_client_new (server->url, NULL);
  g_test_add ("/market-reduce/installed", Store, NULL, store_setup, test_reduce_installed,
              store_teardown);
  g_test_add ("/market-reduce/refusals", Store, NULL, store_setup, test_refusals,
              store_teardown);
  g_test_add ("/market-reduce/gguf-source", Store, NULL, store_setup, test_gguf_source,
              store_teardown);
  status = g_test_run ();
  g_object_unref (client);
  market_server_stop (server);
  return status;
}
