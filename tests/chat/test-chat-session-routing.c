/* test-chat-session-routing.c: TsChatSession's routing and metering alone
 * (no GTK), on the demo model: the router rebuilt only when the model or
 * the installed adapters change, one turn's adapter and note (keyword, the
 * user's choice, no fit, cancelled), and "adapter-used" for marketplace
 * adapters (installed, made from one, made from nothing).
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <glib/gstdio.h>
#include <string.h>

#include "ts-chat-session.h"
#include "ts-market-install.h"
#include "ts-test-util.h"

#define PIRATE_METADATA \
  "{\"id\": \"tiny-pirate\", \"version\": \"1.0.0\", \"tags\": [\"demo\"]," \
  " \"keywords\": [\"pirate\", \"ship\", \"treasure\"], \"examples\": []}"
#define FORMAL_METADATA \
  "{\"id\": \"tiny-formal\", \"version\": \"1.0.0\", \"tags\": [\"demo\"]," \
  " \"keywords\": [\"formal\", \"letter\", \"memo\"], \"examples\": []}"
/* Release files as an install, a rank reduction and a local import leave them. */
#define POET_RELEASE \
  "{\"id\": \"tiny-poet\", \"version\": \"1.2.0\", \"publisher\": \"tensafe-demo\"," \
  " \"tags\": [\"poetry\"], \"manifest\": \"{}\"}"
#define REDUCED_RELEASE \
  "{\"id\": \"tiny-poet-r2\", \"version\": \"1.2.0\", \"local\": true," \
  " \"derived_from\": \"tiny-poet\", \"manifest\": \"{}\"}"
#define OWN_RELEASE \
  "{\"id\": \"mine\", \"version\": \"0.1.0\", \"local\": true, \"manifest\": \"{}\"}"

static char *model_path;

/* @dir/@id/: the demo catalogue's PEFT files of @source and @file_name
 * holding @json. */
static void
install (const char *dir, const char *id, const char *source, const char *file_name,
         const char *json)
{
  g_autofree char *folder = g_build_filename (dir, id, NULL);
  g_autofree char *src = g_build_filename (TS_SOURCE_DATA_DIR, "market", source, NULL);
  g_autofree char *path = g_build_filename (folder, file_name, NULL);

  g_assert_cmpint (g_mkdir_with_parents (folder, 0700), ==, 0);
  ts_test_copy_into (src, folder, "adapter_config.json");
  ts_test_copy_into (src, folder, "adapter_model.safetensors");
  g_assert_true (g_file_set_contents (path, json, -1, NULL));
}

static void
done_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  *(GAsyncResult **) data = g_object_ref (result);
}

static GAsyncResult *
wait_for_result (GAsyncResult **result)
{
  while (*result == NULL)
    g_main_context_iteration (NULL, TRUE);
  return *result;
}

static TsChatSession *
loaded_session (void)
{
  TsChatSession *session = ts_chat_session_new (model_path, NULL);
  g_autoptr (GAsyncResult) result = NULL;
  g_autoptr (GError) error = NULL;

  ts_chat_session_load_async (session, model_path, NULL, NULL, 0, NULL, done_cb, &result);
  g_assert_true (ts_chat_session_load_finish (session, wait_for_result (&result), &error));
  g_assert_no_error (error);
  return session;
}

/* TRUE when the router was rebuilt. */
static gboolean
update (TsChatSession *session, const char *dir)
{
  g_autoptr (GAsyncResult) result = NULL;
  g_autoptr (GError) error = NULL;
  gboolean rebuilt;

  ts_chat_session_update_router_async (session, dir, NULL, done_cb, &result);
  rebuilt = ts_chat_session_update_router_finish (session, wait_for_result (&result), &error);
  g_assert_no_error (error);
  return rebuilt;
}

static void
count_cb (GObject *object, GParamSpec *pspec, guint *count)
{
  (*count)++;
}

static void
test_router (void)
{
  g_autofree char *dir = g_dir_make_tmp ("ts-session-routing-XXXXXX", NULL);
  g_autoptr (TsChatSession) empty = ts_chat_session_new (NULL, NULL);
  g_autoptr (TsChatSession) session = NULL;
  TsChatRouter *router;
  guint notes = 0;

  install (dir, "tiny-pirate", "tiny-pirate", "metadata.json", PIRATE_METADATA);
  /* No model: nothing to build on. */
  g_assert_false (update (empty, dir));
  g_assert_false (ts_chat_session_get_routing (empty));

  session = loaded_session ();
  g_signal_connect (session, "notify::routing", G_CALLBACK (count_cb), &notes);
  /* One adapter: nothing to route between. */
  g_assert_true (update (session, dir));
  g_assert_false (ts_chat_session_get_routing (session));
  g_assert_null (ts_chat_session_get_router (session));
  g_assert_cmpuint (notes, ==, 0);

  install (dir, "tiny-formal", "tiny-formal", "metadata.json", FORMAL_METADATA);
  g_assert_true (update (session, dir));
  g_assert_true (ts_chat_session_get_routing (session));
  g_assert_cmpuint (notes, ==, 1);
  router = ts_chat_session_get_router (session);
  g_assert_cmpuint (ts_chat_router_get_adapters (router)->len, ==, 2);
  /* Nothing changed: the same router. */
  g_assert_false (update (session, dir));
  g_assert_true (ts_chat_session_get_router (session) == router);

  install (dir, "tiny-poet", "tiny-poet", TS_MARKET_RELEASE_FILE, POET_RELEASE);
  g_assert_true (update (session, dir));
  g_assert_cmpuint (ts_chat_router_get_adapters (ts_chat_session_get_router (session))->len,
                    ==, 3);
  ts_test_remove_tree (dir);
}

typedef struct {
  gboolean ok;
  char *path;
  char *note;
  GError *error;
} Routed;

static void
routed_clear (Routed *r)
{
  g_free (r->path);
  g_free (r->note);
  g_clear_error (&r->error);
}

static Routed
route (TsChatSession *session, const char *prompt, const char *override_id,
       GCancellable *cancellable)
{
  g_autoptr (GAsyncResult) result = NULL;
  Routed r = { FALSE, NULL, NULL, NULL };

  ts_chat_session_route_async (session, prompt, override_id, cancellable, done_cb, &result);
  r.ok = ts_chat_session_route_finish (session, wait_for_result (&result), &r.path, &r.note,
                                       &r.error);
  return r;
}

static void
test_route (void)
{
  g_autofree char *dir = g_dir_make_tmp ("ts-session-routing-XXXXXX", NULL);
  g_autoptr (TsChatSession) session = loaded_session ();
  g_autoptr (GCancellable) cancellable = g_cancellable_new ();
  Routed r;

  /* Without a router the current adapter answers, with no note. */
  r = route (session, "Tell me about the pirate ship.", NULL, NULL);
  g_assert_true (r.ok);
  g_assert_null (r.path);
  g_assert_null (r.note);
  routed_clear (&r);

  install (dir, "tiny-pirate", "tiny-pirate", "metadata.json", PIRATE_METADATA);
  install (dir, "tiny-formal", "tiny-formal", "metadata.json", FORMAL_METADATA);
  g_assert_true (update (session, dir));

  r = route (session, "Tell me about the pirate ship and its treasure.", "", NULL);
  g_test_message ("%s", r.note);
  g_assert_true (r.ok);
  g_assert_true (g_str_has_suffix (r.path, "/tiny-pirate"));
  g_assert_true (g_str_has_prefix (r.note, "routed to: tiny-pirate, "));
  g_assert_true (g_str_has_suffix (r.note, " (keyword)"));
  routed_clear (&r);

  /* The user's choice wins over the keywords. */
  r = route (session, "Tell me about the pirate ship and its treasure.", "tiny-formal", NULL);
  g_assert_true (g_str_has_suffix (r.path, "/tiny-formal"));
  g_assert_cmpstr (r.note, ==, "routed to: tiny-formal, 1.00 (your choice)");
  routed_clear (&r);

  /* Nothing fits: the model's own (no) adapter answers. */
  r = route (session, "zzz", NULL, NULL);
  g_test_message ("%s", r.note);
  g_assert_true (r.ok);
  g_assert_null (r.path);
  g_assert_cmpstr (r.note, ==, "not routed: no adapter fits, kept no adapter");
  routed_clear (&r);

  g_cancellable_cancel (cancellable);
  r = route (session, "Tell me about the pirate ship.", NULL, cancellable);
  g_assert_false (r.ok);
  g_assert_error (r.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_null (r.path);
  routed_clear (&r);
  ts_test_remove_tree (dir);
}

typedef struct {
  guint n;
  char *id;
  char *version;
  gint64 tokens;
} Used;

static void
adapter_used_cb (TsChatSession *session, const char *id, const char *version, gint64 tokens,
                 Used *used)
{
  used->n++;
  g_free (used->id);
  g_free (used->version);
  used->id = g_strdup (id);
  used->version = g_strdup (version);
  used->tokens = tokens;
}

static void
test_meter (void)
{
  g_autofree char *dir = g_dir_make_tmp ("ts-session-meter-XXXXXX", NULL);
  g_autofree char *poet = g_build_filename (dir, "tiny-poet", NULL);
  g_autofree char *reduced = g_build_filename (dir, "tiny-poet-r2", NULL);
  g_autofree char *mine = g_build_filename (dir, "mine", NULL);
  g_autofree char *pirate = g_build_filename (dir, "tiny-pirate", NULL);
  g_autofree char *poet_dotted = g_build_filename (dir, ".", "tiny-poet", NULL);
  g_autoptr (TsChatSession) session = ts_chat_session_new (NULL, NULL);
  Used used = { 0, NULL, NULL, 0 };

  install (dir, "tiny-poet", "tiny-poet", TS_MARKET_RELEASE_FILE, POET_RELEASE);
  install (dir, "tiny-poet-r2", "tiny-poet", TS_MARKET_RELEASE_FILE, REDUCED_RELEASE);
  install (dir, "mine", "tiny-poet", TS_MARKET_RELEASE_FILE, OWN_RELEASE);
  install (dir, "tiny-pirate", "tiny-pirate", "metadata.json", PIRATE_METADATA);
  g_signal_connect (session, "adapter-used", G_CALLBACK (adapter_used_cb), &used);

  /* An installed marketplace adapter, named any way that is the same file. */
  ts_chat_session_meter_adapter (session, dir, poet_dotted);
  g_assert_cmpstr (ts_chat_session_get_metered_id (session), ==, "tiny-poet");
  ts_chat_session_report_turn (session, 0);
  g_assert_cmpuint (used.n, ==, 0);
  ts_chat_session_report_turn (session, 42);
  g_assert_cmpuint (used.n, ==, 1);
  g_assert_cmpstr (used.id, ==, "tiny-poet");
  g_assert_cmpstr (used.version, ==, "1.2.0");
  g_assert_cmpint (used.tokens, ==, 42);

  /* A rank reduction is metered as the adapter it was made from. */
  ts_chat_session_meter_adapter (session, dir, reduced);
  ts_chat_session_report_turn (session, 7);
  g_assert_cmpuint (used.n, ==, 2);
  g_assert_cmpstr (used.id, ==, "tiny-poet");
  g_assert_cmpint (used.tokens, ==, 7);

  /* Made from nothing on the marketplace, not from it at all, or none. */
  ts_chat_session_meter_adapter (session, dir, mine);
  g_assert_null (ts_chat_session_get_metered_id (session));
  ts_chat_session_meter_adapter (session, dir, pirate);
  g_assert_null (ts_chat_session_get_metered_id (session));
  ts_chat_session_meter_adapter (session, dir, poet);
  ts_chat_session_meter_adapter (session, dir, NULL);
  g_assert_null (ts_chat_session_get_metered_id (session));
  ts_chat_session_report_turn (session, 9);
  g_assert_cmpuint (used.n, ==, 2);

  g_free (used.id);
  g_free (used.version);
  ts_test_remove_tree (dir);
}

static void
test_preconditions (void)
{
  g_autoptr (TsChatSession) session = ts_chat_session_new (NULL, NULL);

  g_test_expect_message ("tensafe-chat", G_LOG_LEVEL_CRITICAL, "*adapters_dir != NULL*");
  ts_chat_session_meter_adapter (session, NULL, "x");
  g_test_assert_expected_messages ();
  g_test_expect_message ("tensafe-chat", G_LOG_LEVEL_CRITICAL, "*prompt != NULL*");
  ts_chat_session_route_async (session, NULL, NULL, NULL, NULL, NULL);
  g_test_assert_expected_messages ();
  g_test_expect_message ("tensafe-chat", G_LOG_LEVEL_CRITICAL, "*TS_IS_CHAT_SESSION*");
  g_assert_false (ts_chat_session_get_routing (NULL));
  g_test_assert_expected_messages ();
}

int
main (int argc, char **argv)
{
  int status;

  g_test_init (&argc, &argv, NULL);
  model_path = g_build_filename (TS_SOURCE_DATA_DIR, "demo", "tiny-qwen35moe-f32.gguf", NULL);
  g_test_add_func ("/chat-session-routing/router", test_router);
  g_test_add_func ("/chat-session-routing/route", test_route);
  g_test_add_func ("/chat-session-routing/meter", test_meter);
  g_test_add_func ("/chat-session-routing/preconditions", test_preconditions);
  status = g_test_run ();
  g_free (model_path);
  return status;
}
