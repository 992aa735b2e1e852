/* test-chat-router.c: the chat's routing between installed adapters on the demo model:
 * which folders count, labelled prompts routed by keywords (metadata.json and a
 * marketplace release file's tags) and by the base model's embedding, the
 * user's override, an adapter that does not fit, and the asynchronous calls.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The demo model has random weights: its embedding tells texts apart by
 * shared tokens, so the embedding cases keep most of one example's words.
 */
#include <glib/gstdio.h>

#include "ts-chat-router.h"
#include "ts-market-install.h"
#include "ts-test-util.h"

#define PIRATE_METADATA \
  "{\"id\": \"tiny-pirate\", \"version\": \"1.0.0\", \"tags\": [\"demo\", \"style\", \"fun\"]," \
  " \"keywords\": [\"pirate\", \"ship\", \"treasure\"]," \
  " \"examples\": [\"Arr, where be the captain's parrot hiding today?\"," \
  "               \"Hoist the sails and swab the deck, ye scallywags!\"]}"
#define FORMAL_METADATA \
  "{\"id\": \"tiny-formal\", \"version\": \"1.0.0\", \"tags\": [\"demo\", \"style\", \"business\"]," \
  " \"keywords\": [\"formal\", \"letter\", \"memo\"]," \
  " \"examples\": [\"Dear Sir or Madam, I am writing to inform you of our decision.\"," \
  "               \"Please find attached the quarterly report for your review.\"]}"
/* What an install from the marketplace leaves: the release file, with tags. */
#define POET_RELEASE \
  "{\"id\": \"tiny-poet\", \"version\": \"1.0.0\", \"publisher\": \"tensafe-demo\"," \
  " \"tags\": [\"demo\", \"creative\", \"poetry\"], \"manifest\": \"{}\"}"

static TsGenerationModel *model;
static char *adapters_dir;

/* adapters/@id/: the demo catalogue's PEFT files (unless @source is NULL)
 * and @file_name holding @json. */
static void
install (const char *id, const char *source, const char *file_name, const char *json)
{
  g_autofree char *dir = g_build_filename (adapters_dir, id, NULL);
  g_autofree char *src = source != NULL ? g_build_filename (TS_SOURCE_DATA_DIR, "market",
                                                            source, NULL) : NULL;
  g_autofree char *path = g_build_filename (dir, file_name, NULL);

  g_assert_cmpint (g_mkdir_with_parents (dir, 0700), ==, 0);
  if (src != NULL)
    {
      ts_test_copy_into (src, dir, "adapter_config.json");
      ts_test_copy_into (src, dir, "adapter_model.safetensors");
    }
  if (json != NULL)
    g_assert_true (g_file_set_contents (path, json, -1, NULL));
}

/* Folders with metadata.json or a release file count, sorted by id; hidden
 * folders (downloads in progress) and bare folders do not. */
static void
test_find (void)
{
  g_autoptr (GPtrArray) found = ts_chat_router_find (adapters_dir);
  g_autoptr (GPtrArray) none = ts_chat_router_find ("/nonexistent/adapters");
  const char *expect[] = { "broken", "tiny-formal", "tiny-pirate", "tiny-poet", "unfit" };
  TsRoutableAdapter *poet;

  g_assert_cmpuint (none->len, ==, 0);
  g_assert_cmpuint (found->len, ==, G_N_ELEMENTS (expect));
  for (guint i = 0; i < found->len; i++)
    g_assert_cmpstr (((TsRoutableAdapter *) g_ptr_array_index (found, i))->id, ==, expect[i]);
  poet = g_ptr_array_index (found, 3);
  g_assert_true (g_str_has_suffix (poet->metadata_path, TS_MARKET_RELEASE_FILE));
  g_assert_cmpstr (poet->version, ==, "1.0.0");
  g_assert_true (g_str_has_suffix (poet->path, "/tiny-poet"));
}

typedef struct {
  const char *text;
  const char *expect;          /* NULL: not routed */
  TsRouteRule rule;
} Labelled;

static TsChatRouter *
build (void)
{
  g_autoptr (GPtrArray) found = ts_chat_router_find (adapters_dir);
  g_autoptr (GError) error = NULL;
  TsChatRouter *routing = ts_chat_router_new (model, found, &error);

  g_assert_no_error (error);
  /* "broken" has a metadata.json that is not JSON: left out. */
  g_assert_cmpuint (ts_chat_router_get_adapters (routing)->len, ==, found->len - 1);
  g_assert_null (ts_chat_router_lookup (routing, "broken"));
  return routing;
}

static void
test_labelled_prompts (void)
{
  static const Labelled cases[] = {
    { "Tell me about the pirate ship and its treasure.", "tiny-pirate", TS_ROUTE_KEYWORD },
    { "Draft a formal letter to the landlord.", "tiny-formal", TS_ROUTE_KEYWORD },
    { "Some poetry about autumn, please.", "tiny-poet", TS_ROUTE_KEYWORD },
    /* a tie of keywords (one tag each), and no example close enough */
    { "A creative business idea", NULL, TS_ROUTE_NONE },
    { "Arr, where be the captain's hat hiding today?", "tiny-pirate", TS_ROUTE_EMBEDDING },
    { "Dear Sir or Madam, I am writing to inform you of our move.", "tiny-formal",
      TS_ROUTE_EMBEDDING },
  };
  g_autoptr (TsChatRouter) routing = build ();

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (GError) error = NULL;
      TsChatRoute route;
      const TsRoutableAdapter *a;

      g_assert_true (ts_chat_router_route (routing, cases[i].text, NULL, &route, &error));
      g_assert_no_error (error);
      g_test_message ("'%s' -> %s %s %.3f", cases[i].text,
                      route.route.adapter_id ? route.route.adapter_id : "-",
                      ts_route_rule_name (route.route.rule), route.route.score);
      g_assert_cmpstr (route.route.adapter_id, ==, cases[i].expect);
      g_assert_cmpint (route.route.rule, ==, cases[i].rule);
      a = ts_chat_router_lookup (routing, route.route.adapter_id);
      g_assert_cmpstr (route.adapter_path, ==, a != NULL ? a->path : NULL);
      g_assert_null (route.unusable);
      ts_chat_route_clear (&route);
    }
}

/* The user's choice wins over keywords; "" is automatic again; an adapter
 * that does not load on the model is reported, not used. */
static void
test_override_and_unfit (void)
{
  g_autoptr (TsChatRouter) routing = build ();
  g_autoptr (GError) error = NULL;
  TsChatRoute route;

  g_assert_true (ts_chat_router_route (routing, "Tell me about the pirate ship.",
                                       "tiny-formal", &route, &error));
  g_assert_cmpstr (route.route.adapter_id, ==, "tiny-formal");
  g_assert_cmpint (route.route.rule, ==, TS_ROUTE_OVERRIDE);
  g_assert_true (g_str_has_suffix (route.adapter_path, "/tiny-formal"));
  ts_chat_route_clear (&route);
  g_assert_true (ts_chat_router_route (routing, "Tell me about the pirate ship.", "",
                                       &route, &error));
  g_assert_cmpstr (route.route.adapter_id, ==, "tiny-pirate");
  ts_chat_route_clear (&route);
  /* An override outside the routed set: the caller resolves it. */
  g_assert_true (ts_chat_router_route (routing, "hello", "some-file", &route, &error));
  g_assert_cmpint (route.route.rule, ==, TS_ROUTE_OVERRIDE);
  g_assert_null (route.adapter_path);
  ts_chat_route_clear (&route);
  /* "unfit" has metadata but no adapter files. */
  g_assert_true (ts_chat_router_route (routing, "a calibration run", NULL, &route, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (route.route.adapter_id, ==, "unfit");
  g_assert_null (route.adapter_path);
  g_assert_nonnull (route.unusable);
  g_test_message ("unfit: %s", route.unusable);
  ts_chat_route_clear (&route);
}

static void
store_result (GObject *source, GAsyncResult *result, gpointer data)
{
  *(GAsyncResult **) data = g_object_ref (result);
}

static GAsyncResult *
wait_result (GAsyncResult **slot)
{
  while (*slot == NULL)
    g_main_context_iteration (NULL, TRUE);
  return *slot;
}

/* The _async pair builds on a worker and routes there. */
static void
test_async (void)
{
  g_autoptr (GAsyncResult) built = NULL, routed = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (TsChatRouter) routing = NULL;
  TsChatRoute route;

  ts_chat_router_new_async (model, adapters_dir, NULL, store_result, &built);
  routing = ts_chat_router_new_finish (wait_result (&built), &error);
  g_assert_no_error (error);
  g_assert_true (ts_chat_router_get_model (routing) == model);
  ts_chat_router_route_async (routing, "Hoist the treasure onto the ship!", NULL, NULL,
                              store_result, &routed);
  g_assert_true (ts_chat_router_route_finish (wait_result (&routed), &route, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (route.route.adapter_id, ==, "tiny-pirate");
  g_assert_cmpint (route.route.rule, ==, TS_ROUTE_KEYWORD);
  ts_chat_route_clear (&route);
}

int
main (int argc, char **argv)
{
  g_autofree char *model_path = g_build_filename (TS_SOURCE_DATA_DIR, "demo",
                                                  "tiny-qwen35moe-f32.gguf", NULL);
  g_autoptr (GError) error = NULL;
  int status;

  g_test_init (&argc, &argv, NULL);
  adapters_dir = g_dir_make_tmp ("routing-XXXXXX", &error);
  g_assert_no_error (error);
  install ("tiny-pirate", "tiny-pirate", "metadata.json", PIRATE_METADATA);
  install ("tiny-formal", "tiny-formal", "metadata.json", FORMAL_METADATA);
  install ("tiny-poet", "tiny-poet", TS_MARKET_RELEASE_FILE, POET_RELEASE);
  install ("unfit", NULL, "metadata.json", "{\"keywords\": [\"calibration\"]}");
  install ("broken", "tiny-golden", "metadata.json", "{not json");
  install (".downloads", "tiny-golden", "metadata.json", "{}");
  install ("bare", "tiny-golden", "README", "no metadata");
  model = ts_generation_model_load (model_path, NULL, &error);
  g_assert_no_error (error);

  g_test_add_func ("/chat-router/find", test_find);
  g_test_add_func ("/chat-router/labelled-prompts", test_labelled_prompts);
  g_test_add_func ("/chat-router/override-and-unfit", test_override_and_unfit);
  g_test_add_func ("/chat-router/async", test_async);
  status = g_test_run ();
  ts_generation_model_unref (model);
  ts_test_remove_tree (adapters_dir);
  g_free (adapters_dir);
  return status;
}
