/* test-market-routing.c: the chat routes adapters installed from the
 * marketplace by their publisher's keywords and examples: a real
 * tensafe-marketd imports the demo catalogue's tiny adapters, the client
 * installs two of them (each folder then holds only the adapter's files and
 * tensafe-release.json), and the chat's router, built from that folder on
 * the demo model, routes labelled prompts. The expected keywords are read
 * from the catalogue's metadata.json, not from anything the chain wrote.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gstdio.h>
#include <string.h>

#include "market-test-util.h"
#include "ts-chat-router.h"
#include "ts-market-install.h"
#include "ts-test-util.h"

#define MODEL_REL "qwen35/tiny-qwen35moe-f32/tiny-qwen35moe-f32.gguf"

static MarketServer *server;
static TsMarketClient *client;
static TsGenerationModel *model;
static char *adapters_dir;

static void
install (TsMarketKeyring *keyring, const char *id)
{
  g_autoptr(GAsyncResult) res = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(TsMarketAdapter) a = market_get_adapter (client, id, &error);
  g_autofree char *path = NULL, *metadata = NULL;

  g_assert_no_error (error);
  ts_market_client_install_async (client, a, NULL, keyring, adapters_dir, NULL, NULL, NULL,
                                  NULL, market_store_result, &res);
  market_wait (&res);
  path = ts_market_client_install_finish (client, res, &error);
  g_assert_no_error (error);
  /* What the router reads is the release file: no metadata.json came along. */
  metadata = g_build_filename (path, "metadata.json", NULL);
  g_assert_false (g_file_test (metadata, G_FILE_TEST_EXISTS));
}

/* The keywords of @id's metadata.json in the demo catalogue. */
static GStrv
catalogue_keywords (const char *id)
{
  g_autofree char *path = g_build_filename (market_demo_dir (), id, "metadata.json", NULL);
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;
  JsonArray *list;
  GStrv out;

  g_assert_true (json_parser_load_from_file (parser, path, &error));
  list = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)),
                                       "keywords");
  g_assert_nonnull (list);
  out = g_new0 (char *, json_array_get_length (list) + 1);
  for (guint i = 0; i < json_array_get_length (list); i++)
    out[i] = g_strdup (json_array_get_string_element (list, i));
  return out;
}

static TsChatRouter *
build (void)
{
  g_autoptr(GPtrArray) found = ts_chat_router_find (adapters_dir);
  g_autoptr(GError) error = NULL;
  TsChatRouter *routing;

  g_assert_cmpuint (found->len, ==, 2);
  for (guint i = 0; i < found->len; i++)
    g_assert_true (g_str_has_suffix (((TsRoutableAdapter *) found->pdata[i])->metadata_path,
                                     TS_MARKET_RELEASE_FILE));
  routing = ts_chat_router_new (model, found, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (ts_chat_router_get_adapters (routing)->len, ==, 2);
  return routing;
}

static void
assert_route (TsChatRouter *routing, const char *text, const char *expect, TsRouteRule rule)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *path = expect ? g_build_filename (adapters_dir, expect, NULL) : NULL;
  TsChatRoute route;

  g_assert_true (ts_chat_router_route (routing, text, NULL, &route, &error));
  g_assert_no_error (error);
  g_test_message ("'%s' -> %s %s %.3f", text,
                  route.route.adapter_id ? route.route.adapter_id : "-",
                  ts_route_rule_name (route.route.rule), route.route.score);
  g_assert_cmpstr (route.route.adapter_id, ==, expect);
  g_assert_cmpint (route.route.rule, ==, rule);
  g_assert_cmpstr (route.adapter_path, ==, path);
  g_assert_null (route.unusable);
  ts_chat_route_clear (&route);
}

/* Prompts holding a keyword of the catalogue, none of the tags (demo,
 * style, fun, business), go to their adapter by the keyword rule. */
static void
test_keywords (void)
{
  g_autoptr(TsChatRouter) routing = build ();
  g_auto(GStrv) pirate = catalogue_keywords ("tiny-pirate");
  g_auto(GStrv) formal = catalogue_keywords ("tiny-formal");

  g_assert_true (g_strv_contains ((const char *const *) pirate, "matey"));
  g_assert_true (g_strv_contains ((const char *const *) formal, "memo"));
  assert_route (routing, "Ahoy matey, where is the treasure?", "tiny-pirate", TS_ROUTE_KEYWORD);
  assert_route (routing, "Ahoy! Tell me how a ship's compass works, matey.", "tiny-pirate",
                TS_ROUTE_KEYWORD);
  assert_route (routing, "Write a short memo to the team.", "tiny-formal", TS_ROUTE_KEYWORD);
  /* Whole words only: "arrow" and "shipment" are not "arr" and "ship". */
  assert_route (routing, "How many arrows in a shipment?", NULL, TS_ROUTE_NONE);
  assert_route (routing, "What is the capital of France?", NULL, TS_ROUTE_NONE);
}

/* No keyword: an example of the catalogue, almost word for word, is close
 * enough in the demo model's embedding (it tells texts apart by shared
 * tokens). */
static void
test_examples (void)
{
  g_autoptr(TsChatRouter) routing = build ();

  assert_route (routing, "Hoist the sails and swab the deck, ye scallywags and landlubbers!",
                "tiny-pirate", TS_ROUTE_EMBEDDING);
  assert_route (routing, "Dear Sir or Madam, I am writing to inform you of our move.",
                "tiny-formal", TS_ROUTE_EMBEDDING);
}

int
main (int argc, char **argv)
{
  g_autofree char *model_path = ts_test_data_path (MODEL_REL);
  g_autofree char *pirate = g_build_filename (market_demo_dir (), "tiny-pirate", NULL);
  g_autofree char *formal = g_build_filename (market_demo_dir (), "tiny-formal", NULL);
  g_autofree char *poet = g_build_filename (market_demo_dir (), "tiny-poet", NULL);
  const char *imports[] = { pirate, formal, poet, NULL };
  g_autoptr(TsMarketKeyring) keyring = NULL;
  g_autoptr(GError) error = NULL;
  int status;

  g_test_init (&argc, &argv, NULL);
  server = market_server_start (imports, NULL);
  client = ts_market_client_new (server->url, &error);
  g_assert_no_error (error);
  keyring = ts_market_keyring_new (NULL);
  market_pin_publisher (client, keyring, "tensafe-demo");
  adapters_dir = market_tmpdir ();
  install (keyring, "tiny-pirate");
  install (keyring, "tiny-formal");
  model = ts_generation_model_load (model_path, NULL, &error);
  g_assert_no_error (error);
  g_test_add_func ("/market-routing/keywords", test_keywords);
  g_test_add_func ("/market-routing/examples", test_examples);
  status = g_test_run ();
  ts_generation_model_unref (model);
  g_object_unref (client);
  market_server_stop (server);
  market_rm_rf (adapters_dir);
  g_free (adapters_dir);
  return status;
}
