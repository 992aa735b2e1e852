/* test-chat-session.c: TsChatSession alone (no GTK): loading the demo model
 * (data/demo), switching it to another adapter without a reload, stacks,
 * cancelled and superseded loads, and errors that name what is wrong.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <string.h>

#include "ts-chat-session.h"
#include "ts-test-util.h"

static char *model_path;
static char *demo_adapter;
static char *pirate;

typedef struct {
  gboolean done;
  gboolean ok;
  GError *error;
} Result;

static void
loaded_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  Result *r = data;

  r->ok = ts_chat_session_load_finish (TS_CHAT_SESSION (source), result, &r->error);
  r->done = TRUE;
}

static void
wait_for (Result *r)
{
  while (!r->done)
    g_main_context_iteration (NULL, TRUE);
}

/* Loads and waits; returns the error, or NULL. */
static GError *
load (TsChatSession *session, const char *model, const char *const *adapters,
      const float *weights, guint n)
{
  Result r = { FALSE, FALSE, NULL };

  ts_chat_session_load_async (session, model, adapters, weights, n, NULL, loaded_cb, &r);
  g_assert_true (ts_chat_session_get_loading (session));
  wait_for (&r);
  g_assert_cmpint (r.ok, ==, r.error == NULL);
  g_assert_false (ts_chat_session_get_loading (session));
  return r.error;
}

static void
count_cb (GObject *object, GParamSpec *pspec, guint *count)
{
  (*count)++;
}

static TsChatSession *
demo_session (void)
{
  return ts_chat_session_new (model_path, demo_adapter);
}

static void
test_load (void)
{
  g_autoptr (TsChatSession) session = demo_session ();
  guint model_notes = 0, adapter_notes = 0, loading_notes = 0;
  float weight = 0;

  g_assert_null (ts_chat_session_get_model (session));
  g_assert_null (ts_chat_session_get_model_name (session));
  g_assert_cmpstr (ts_chat_session_get_adapter_name (session), ==, "no adapter");
  g_signal_connect (session, "notify::model-name", G_CALLBACK (count_cb), &model_notes);
  g_signal_connect (session, "notify::adapter-name", G_CALLBACK (count_cb), &adapter_notes);
  g_signal_connect (session, "notify::loading", G_CALLBACK (count_cb), &loading_notes);
  g_assert_no_error (load (session, model_path, (const char *[]) { demo_adapter }, NULL, 1));

  g_assert_nonnull (ts_chat_session_get_model (session));
  g_assert_cmpstr (ts_chat_session_get_model_path (session), ==, model_path);
  g_assert_cmpstr (ts_chat_session_get_model_name (session), ==, "tiny-qwen35moe-f32");
  g_assert_true (ts_chat_session_get_model_is_demo (session));
  g_assert_cmpstr (ts_chat_session_get_adapter_path (session), ==, demo_adapter);
  g_assert_cmpstr (ts_chat_session_get_adapter_name (session), ==, "Demo Adapter");
  /* the model's own adapter: a reply asks for none */
  g_assert_null (ts_chat_session_get_request_adapter (session));
  g_assert_cmpuint (ts_chat_session_get_n_adapters (session), ==, 1);
  g_assert_cmpstr (ts_chat_session_get_nth_adapter (session, 0, &weight), ==, demo_adapter);
  g_assert_cmpfloat (weight, ==, 1.0f);
  g_assert_cmpuint (model_notes, ==, 1);
  g_assert_cmpuint (adapter_notes, ==, 1);
  g_assert_cmpuint (loading_notes, ==, 2);  /* on, then off */

  /* the same model without its adapter is a new model, not a switch */
  {
    TsGenerationModel *before = ts_chat_session_get_model (session);

    g_assert_no_error (load (session, model_path, NULL, NULL, 0));
    g_assert_true (ts_chat_session_get_model (session) != before);
    g_assert_null (ts_chat_session_get_adapter_path (session));
    g_assert_cmpstr (ts_chat_session_get_adapter_name (session), ==, "no adapter");
    g_assert_cmpuint (ts_chat_session_get_n_adapters (session), ==, 0);
  }
}

/* One adapter at weight 1 on the loaded model's file: the model stays,
 * the adapter comes from its cache and replies ask for it by path. */
static void
test_switch (void)
{
  g_autoptr (TsChatSession) session = demo_session ();
  TsGenerationModel *model;
  guint model_notes = 0;
  float weight = 0;

  g_assert_no_error (load (session, model_path, (const char *[]) { demo_adapter }, NULL, 1));
  model = ts_chat_session_get_model (session);
  g_signal_connect (session, "notify::model-path", G_CALLBACK (count_cb), &model_notes);
  g_assert_no_error (load (session, model_path, (const char *[]) { pirate }, NULL, 1));

  g_assert_true (ts_chat_session_get_model (session) == model);
  g_assert_cmpuint (model_notes, ==, 0);
  g_assert_cmpstr (ts_chat_session_get_adapter_path (session), ==, pirate);
  g_assert_cmpstr (ts_chat_session_get_request_adapter (session), ==, pirate);
  g_assert_cmpstr (ts_chat_session_get_adapter_name (session), ==, "tiny-pirate");
  g_assert_cmpuint (ts_chat_session_get_n_adapters (session), ==, 1);
  g_assert_cmpstr (ts_chat_session_get_nth_adapter (session, 0, &weight), ==, pirate);
  g_assert_cmpfloat (weight, ==, 1.0f);

  /* a stack is loaded with the model: its own, named with its weights */
  g_assert_no_error (load (session, model_path, (const char *[]) { demo_adapter, pirate },
                           (const float[]) { 0.7f, 0.3f }, 2));
  g_assert_true (ts_chat_session_get_model (session) != model);
  g_assert_cmpuint (model_notes, ==, 1);
  g_assert_null (ts_chat_session_get_request_adapter (session));
  g_assert_cmpstr (ts_chat_session_get_adapter_path (session), ==, demo_adapter);
  g_assert_cmpstr (ts_chat_session_get_adapter_name (session), ==,
                   "Demo Adapter ×0.70 + tiny-pirate ×0.30");
  g_assert_cmpuint (ts_chat_session_get_n_adapters (session), ==, 2);
  g_assert_cmpstr (ts_chat_session_get_nth_adapter (session, 1, &weight), ==, pirate);
  g_assert_cmpfloat (weight, ==, 0.3f);
}

/* A cancelled load and one a newer load replaced change nothing. */
static void
test_cancel (void)
{
  g_autoptr (TsChatSession) session = demo_session ();
  g_autoptr (GCancellable) cancellable = g_cancellable_new ();
  Result first = { FALSE, FALSE, NULL }, second = { FALSE, FALSE, NULL };

  ts_chat_session_load_async (session, model_path, NULL, NULL, 0, cancellable, loaded_cb, &first);
  g_cancellable_cancel (cancellable);
  wait_for (&first);
  g_assert_error (first.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_false (ts_chat_session_get_loading (session));
  g_assert_null (ts_chat_session_get_model (session));
  g_assert_null (ts_chat_session_get_model_path (session));
  g_clear_error (&first.error);

  first.done = FALSE;
  ts_chat_session_load_async (session, model_path, (const char *[]) { pirate }, NULL, 1, NULL,
                              loaded_cb, &first);
  ts_chat_session_load_async (session, model_path, (const char *[]) { demo_adapter }, NULL, 1,
                              NULL, loaded_cb, &second);
  wait_for (&first);
  g_assert_error (first.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  /* the newer load is still under way */
  g_assert_true (ts_chat_session_get_loading (session));
  wait_for (&second);
  g_assert_no_error (second.error);
  g_assert_false (ts_chat_session_get_loading (session));
  g_assert_cmpstr (ts_chat_session_get_adapter_path (session), ==, demo_adapter);
  g_clear_error (&first.error);
}

/* Errors name the file; the session keeps what it had. */
static void
test_errors (void)
{
  g_autoptr (TsChatSession) session = demo_session ();
  g_autofree char *missing = g_build_filename (g_get_tmp_dir (), "ts-no-such-model.gguf", NULL);
  g_autofree char *other = ts_test_data_path ("hf/qwen2/lora/peft");
  g_autoptr (GError) error = NULL;
  TsGenerationModel *model;

  error = load (session, missing, NULL, NULL, 0);
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "ts-no-such-model.gguf"));
  g_assert_null (ts_chat_session_get_model (session));
  g_clear_error (&error);

  g_assert_no_error (load (session, model_path, (const char *[]) { demo_adapter }, NULL, 1));
  model = ts_chat_session_get_model (session);
  /* an adapter made for another model, as a switch */
  error = load (session, model_path, (const char *[]) { other }, NULL, 1);
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "made for the model tiny-qwen2"));
  g_assert_true (ts_chat_session_get_model (session) == model);
  g_assert_cmpstr (ts_chat_session_get_adapter_path (session), ==, demo_adapter);
  g_assert_cmpstr (ts_chat_session_get_adapter_name (session), ==, "Demo Adapter");
}

int
main (int argc, char **argv)
{
  int status;

  g_test_init (&argc, &argv, NULL);
  model_path = g_build_filename (TS_SOURCE_DATA_DIR, "demo", "tiny-qwen35moe-f32.gguf", NULL);
  demo_adapter = g_build_filename (TS_SOURCE_DATA_DIR, "demo", "tiny-qwen35moe-lora-f32.gguf",
                                   NULL);
  pirate = g_build_filename (TS_SOURCE_DATA_DIR, "market", "tiny-pirate", NULL);
  g_test_add_func ("/chat-session/load", test_load);
  g_test_add_func ("/chat-session/switch", test_switch);
  g_test_add_func ("/chat-session/cancel", test_cancel);
  g_test_add_func ("/chat-session/errors", test_errors);
  status = g_test_run ();
  g_free (model_path);
  g_free (demo_adapter);
  g_free (pirate);
  return status;
}
