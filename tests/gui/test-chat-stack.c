/* test-chat-stack.c: stacked adapters in the chat page: the "Stack Adapters"
 * dialog stacks the demo adapter with an attention q/k/v adapter at weights
 * 0.70 and 0.30, both panes answer the same greedy text with the stack, and
 * the HE pane says how many encryptions the token's modules share, with the
 * in-process evaluator and with a real tensafe-he-server.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <adwaita.h>
#include <glib/gstdio.h>
#include <string.h>

#include "gui-evaluator.h"
#include "gui-test-util.h"
#include "lm.h"
#include "ts-application.h"
#include "ts-chat-page.h"
#include "ts-helora-adapter.h"
#include "ts-test-util.h"

#define PROMPT "Tell me about encrypted adapters."
#define N_TOKENS 4
#define WAIT_S 20

static TsChatPage *
start_app (TsApplication *app)
{
  TsChatPage *page = gui_start_chat (G_APPLICATION (app), WAIT_S);

  g_object_set (page, "max-tokens", N_TOKENS, "temperature", 0.0, NULL);
  return page;
}

/* A rank-4 adapter on the full-attention layer's q, k and v: three modules
 * reading one h. Returns the number of modules it has. */
static guint
write_qkv_adapter (const char *path)
{
  g_autofree char *model_path = ts_chat_page_find_demo_file ("tiny-qwen35moe-f32.gguf");
  const char *kinds[] = { "attn_q", "attn_k", "attn_v", NULL };
  g_autoptr (GError) error = NULL;
  LmModel *model = NULL;
  LmLora *lora = NULL;
  guint n;

  g_assert_nonnull (model_path);
  g_assert_cmpint (lm_model_load (model_path, &model, NULL), ==, LM_OK);
  g_assert_true (ts_helora_adapter_write_synthetic (model, path, 4, 7, kinds, &error));
  g_assert_no_error (error);
  g_assert_cmpint (lm_lora_load (model, path, 1.0f, &lora, NULL), ==, LM_OK);
  n = (guint) lm_lora_n_modules (lora);
  lm_lora_free (lora);
  lm_model_free (model);
  return n;
}

static guint
count_modules (const char *path)
{
  g_autofree char *model_path = ts_chat_page_find_demo_file ("tiny-qwen35moe-f32.gguf");
  LmModel *model = NULL;
  LmLora *lora = NULL;
  guint n;

  g_assert_cmpint (lm_model_load (model_path, &model, NULL), ==, LM_OK);
  g_assert_cmpint (lm_lora_load (model, path, 1.0f, &lora, NULL), ==, LM_OK);
  n = (guint) lm_lora_n_modules (lora);
  lm_lora_free (lora);
  lm_model_free (model);
  return n;
}

typedef struct {
  TsChatPage *page;
  const char *path;
} AdapterWait;

static gboolean
adapter_loaded (gpointer data)
{
  AdapterWait *w = data;

  return g_strcmp0 (ts_chat_page_get_adapter_path (w->page), w->path) == 0
         && ts_chat_page_get_ready (w->page);
}

static gboolean
picker_shows_stack (gpointer page)
{
  const char *label = gtk_menu_button_get_label (ts_chat_page_get_picker (page, TRUE));

  return label != NULL && strstr (label, " + ") != NULL && ts_chat_page_get_ready (page);
}

static gboolean
is_check (GtkWidget *widget, gconstpointer data)
{
  return GTK_IS_CHECK_BUTTON (widget);
}

/* The rows' check buttons and weights, in row order. */
static void
collect_rows (GtkWidget *widget, GPtrArray *checks, GPtrArray *spins)
{
  if (GTK_IS_CHECK_BUTTON (widget))
    g_ptr_array_add (checks, widget);
  if (GTK_IS_SPIN_BUTTON (widget))
    g_ptr_array_add (spins, widget);
  for (GtkWidget *c = gtk_widget_get_first_child (widget); c; c = gtk_widget_get_next_sibling (c))
    collect_rows (c, checks, spins);
}

/* Checks every row of the dialog with @weights (demo adapter first, then the
 * loaded file) and applies. */
static void
stack_in_dialog (TsChatPage *page, const double *weights, guint n)
{
  AdwMessageDialog *dialog;
  g_autoptr (GPtrArray) checks = g_ptr_array_new ();
  g_autoptr (GPtrArray) spins = g_ptr_array_new ();

  /* From the window, as the header's adapter picker menu runs it (it is not
   * inside the chat page: the window forwards the action) */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (gtk_widget_get_root (GTK_WIDGET (page))),
                                             "chat.stack-adapters", NULL));
  gui_wait_until (gui_message_dialog_shown, NULL, WAIT_S, "the Stack Adapters dialog");
  dialog = gui_find_message_dialog ();
  g_assert_nonnull (gui_find_widget (GTK_WIDGET (dialog), is_check, NULL));
  collect_rows (adw_message_dialog_get_extra_child (dialog), checks, spins);
  g_assert_cmpuint (checks->len, ==, n);
  g_assert_cmpuint (spins->len, ==, n);
  /* The loaded adapter (last row) starts checked, the demo one does not. */
  g_assert_false (gtk_check_button_get_active (g_ptr_array_index (checks, 0)));
  g_assert_true (gtk_check_button_get_active (g_ptr_array_index (checks, n - 1)));
  for (guint i = 0; i < n; i++)
    {
      gtk_check_button_set_active (g_ptr_array_index (checks, i), TRUE);
      gtk_spin_button_set_value (g_ptr_array_index (spins, i), weights[i]);
    }
  /* A response emitted by hand leaves the dialog open, as a click would not. */
  adw_message_dialog_response (dialog, "apply");
  gtk_window_destroy (GTK_WINDOW (dialog));
  gui_wait_until (gui_message_dialog_gone, NULL, WAIT_S, "the dialog to close");
}

static void
finished_cb (TsChatPane *pane, int kind, const char *message, char **error_out)
{
  if (message != NULL && *error_out == NULL)
    *error_out = g_strdup (message);
}

static char *
send_prompt (TsChatPage *page, gboolean he)
{
  char *error = NULL;
  gulong id = g_signal_connect (ts_chat_page_get_pane (page, he), "finished",
                                G_CALLBACK (finished_cb), &error);

  ts_chat_page_set_prompt (page, PROMPT);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.send", NULL));
  gui_wait_until (gui_chat_idle, page, WAIT_S, "both panes to finish");
  g_signal_handler_disconnect (ts_chat_page_get_pane (page, he), id);
  return error;
}

static gboolean
label_has (GtkWidget *widget, gconstpointer text)
{
  return GTK_IS_LABEL (widget) && strstr (gtk_label_get_text (GTK_LABEL (widget)), text) != NULL;
}

static void
test_stack_two_adapters (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_autofree char *dir = g_dir_make_tmp ("tensafe-stack-XXXXXX", NULL);
  g_autofree char *qkv = g_build_filename (dir, "qkv.gguf", NULL);
  g_autofree char *demo = ts_chat_page_find_demo_file ("tiny-qwen35moe-lora-f32.gguf");
  g_autofree char *error = NULL;
  g_autofree char *expected = NULL;
  const double weights[] = { 0.70, 0.30 };
  guint qkv_modules = write_qkv_adapter (qkv);
  guint modules = count_modules (demo) + qkv_modules;
  AdapterWait wait;
  TsChatPage *page = start_app (app);
  const char *label;

  g_assert_cmpuint (qkv_modules, ==, 3);
  wait = (AdapterWait) { page, qkv };
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.use-adapter", "s", qkv));
  gui_wait_until (adapter_loaded, &wait, WAIT_S, "the q/k/v adapter to load");
  stack_in_dialog (page, weights, 2);
  gui_wait_until (picker_shows_stack, page, WAIT_S, "the stack to load");
  label = gtk_menu_button_get_label (ts_chat_page_get_picker (page, TRUE));
  g_assert_nonnull (strstr (label, "×0.70"));
  g_assert_nonnull (strstr (label, "qkv ×0.30"));
  g_assert_cmpstr (ts_chat_page_get_adapter_path (page), ==, demo);

  error = send_prompt (page, TRUE);
  g_assert_cmpstr (error, ==, NULL);
  g_assert_cmpuint (ts_chat_pane_get_n_tokens (ts_chat_page_get_pane (page, TRUE)), >=, 1);
  g_assert_cmpstr (ts_chat_pane_get_reply (ts_chat_page_get_pane (page, TRUE)), ==,
                   ts_chat_pane_get_reply (ts_chat_page_get_pane (page, FALSE)));
  /* q, k and v read one h: the stack's token costs two encryptions fewer
   * than it has modules. */
  expected = g_strdup_printf ("%u encryptions for %u modules per token", modules - 2, modules);
  g_assert_nonnull (gui_find_widget (GTK_WIDGET (ts_chat_page_get_pane (page, TRUE)), label_has,
                                     expected));
  gui_save_screenshot (GTK_WIDGET (gtk_widget_get_root (GTK_WIDGET (page))),
                       "screenshot-chat-stack.png");
  gui_quit_app (G_APPLICATION (app), WAIT_S);
  g_remove (qkv);
  g_rmdir (dir);
}

static gboolean
footer_says (gpointer data)
{
  gpointer *args = data;

  return gui_find_widget (args[0], label_has, args[1]) != NULL;
}

/* The same stack against a real tensafe-he-server holding both files: the
 * evaluator stacks them itself, the HE pane answers as the plaintext one and
 * uploads one ciphertext per shared h. */
static void
test_stack_remote (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_autofree char *model = ts_chat_page_find_demo_file ("tiny-qwen35moe-f32.gguf");
  g_autofree char *demo = ts_chat_page_find_demo_file ("tiny-qwen35moe-lora-f32.gguf");
  g_autofree char *dir = gui_evaluator_demo_dir ();
  g_autofree char *qkv = g_build_filename (dir, "qkv.gguf", NULL);
  g_autofree char *error = NULL;
  g_autofree char *expected = NULL;
  const double weights[] = { 1.0, 0.5 };
  const char *server_args[] = { "--threads", "1", "--model", model, NULL };
  GuiEvaluator server = { 0 };
  AdapterWait wait;
  TsChatPage *page;
  GSettings *settings;
  guint modules;
  gpointer footer[2];

  modules = count_modules (demo) + write_qkv_adapter (qkv);
  gui_evaluator_start (&server, dir, server_args);
  page = start_app (app);
  wait = (AdapterWait) { page, qkv };
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.use-adapter", "s", qkv));
  gui_wait_until (adapter_loaded, &wait, WAIT_S, "the q/k/v adapter to load");
  stack_in_dialog (page, weights, 2);
  gui_wait_until (picker_shows_stack, page, WAIT_S, "the stack to load");
  settings = ts_settings_get_gsettings (ts_application_get_settings (app));
  g_settings_set_string (settings, "evaluator-url", server.ws_url);
  g_settings_set_string (settings, "evaluator-mode", "remote");
  error = send_prompt (page, TRUE);
  g_settings_reset (settings, "evaluator-mode");
  g_settings_reset (settings, "evaluator-url");
  g_assert_cmpstr (error, ==, NULL);
  g_assert_cmpuint (ts_chat_pane_get_n_tokens (ts_chat_page_get_pane (page, TRUE)), >=, 1);
  g_assert_cmpstr (ts_chat_pane_get_reply (ts_chat_page_get_pane (page, TRUE)), ==,
                   ts_chat_pane_get_reply (ts_chat_page_get_pane (page, FALSE)));
  expected = g_strdup_printf ("%u encryptions for %u modules per token", modules - 2, modules);
  footer[0] = ts_chat_page_get_pane (page, TRUE);
  footer[1] = expected;
  gui_wait_until (footer_says, footer, WAIT_S, "the HE footer to count shared encryptions");
  footer[1] = "of ciphertext per token";
  g_assert_true (footer_says (footer));
  gui_quit_app (G_APPLICATION (app), WAIT_S);
  gui_evaluator_clear (&server);
  ts_test_remove_tree (dir);
}

int
main (int argc, char **argv)
{
  g_autoptr (TsApplication) app = NULL;
  g_autofree char *data_home = NULL;
  int status;

  g_test_init (&argc, &argv, NULL);
  data_home = g_dir_make_tmp ("tensafe-chat-stack-XXXXXX", NULL);
  g_setenv ("XDG_DATA_HOME", data_home, TRUE);
  if (!gtk_init_check ())
    {
      ts_test_remove_tree (data_home);
      return gui_run_without_display ("/chat-stack/no-display");
    }
  adw_init ();
  app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_test_add_func ("/chat-stack/two-adapters", test_stack_two_adapters);
  g_test_add_func ("/chat-stack/remote", test_stack_remote);
  status = g_test_run ();
  ts_test_remove_tree (data_home);
  return status;
}
