/* ts-chat-page.c: the chat page: the same conversation in plaintext and under HE-LoRA.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ckks-gpu.h"
#include "ts-chat-page-private.h"
#include "ts-chat-panes.h"

G_DEFINE_FINAL_TYPE (TsChatPage, ts_chat_page, ADW_TYPE_BIN)

enum {
  PROP_0,
  PROP_READY,
  PROP_BUSY,
  PROP_TEMPERATURE,
  PROP_TOP_P,
  PROP_MAX_TOKENS,
  PROP_SEED,
  PROP_ROUTING,
  PROP_ADAPTER_OVERRIDE,
  PROP_SAVE_INTERVAL,
  PROP_SETTINGS,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];


static AdwToast *
new_toast (const char *message, guint timeout_s)
{
  /* Toast titles are markup; messages can carry '<', '&' or bytes from a
   * file or a peer. */
  g_autofree char *valid = g_utf8_make_valid (message, -1);
  g_autofree char *escaped = g_markup_escape_text (valid, -1);
  AdwToast *toast = adw_toast_new (escaped);

  adw_toast_set_timeout (toast, timeout_s);
  if (timeout_s == 0)
    adw_toast_set_priority (toast, ADW_TOAST_PRIORITY_HIGH);
  return toast;
}

static void
show_toast (TsChatPage *self, const char *message, guint timeout_s)
{
  adw_toast_overlay_add_toast (self->toast_overlay, new_toast (message, timeout_s));
}

void
_ts_chat_page_toast (TsChatPage *self, const char *message)
{
  show_toast (self, message, 6);
}

/* An error stays until it is dismissed: a model that failed to load is not
 * a passing remark a presenter may miss while talking. */
void
_ts_chat_page_error (TsChatPage *self, const char *message)
{
  g_free (self->last_error);
  self->last_error = g_strdup (message);
  show_toast (self, message, 0);
}

void
_ts_chat_page_error_with_remedy (TsChatPage *self, const char *message, const char *button,
                                 const char *action, GVariant *target)
{
  AdwToast *toast = new_toast (message, 0);

  g_free (self->last_error);
  self->last_error = g_strdup (message);
  adw_toast_set_button_label (toast, button);
  adw_toast_set_action_name (toast, action);
  adw_toast_set_action_target_value (toast, target);
  adw_toast_overlay_add_toast (self->toast_overlay, toast);
}

const char *
ts_chat_page_get_last_error (TsChatPage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PAGE (self), NULL);
  return self->last_error;
}

void
_ts_chat_page_notify_routing (TsChatPage *self, gboolean override)
{
  g_object_notify_by_pspec (G_OBJECT (self),
                            properties[override ? PROP_ADAPTER_OVERRIDE : PROP_ROUTING]);
}

void
_ts_chat_page_update_actions (TsChatPage *self)
{
  gboolean ready = ts_chat_page_get_ready (self);
  gboolean has_exchange = ts_chat_pane_get_reply (self->plain_pane) != NULL;
  GtkWidget *widget = GTK_WIDGET (self);

  gtk_widget_action_set_enabled (widget, "chat.send", ready);
  gtk_widget_action_set_enabled (widget, "chat.stop", self->busy);
  gtk_widget_action_set_enabled (widget, "chat.regenerate", ready && has_exchange);
  gtk_widget_action_set_enabled (widget, "chat.edit-last", !self->busy && has_exchange);
  gtk_widget_action_set_enabled (widget, "chat.clear", !self->busy);
  gtk_widget_action_set_enabled (widget, "chat.edit-prompt", !self->busy);
  gtk_widget_action_set_enabled (widget, "chat.cancel-edit", self->editing >= 0);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_READY]);
}

void
_ts_chat_page_update_empty_state (TsChatPage *self)
{
  gboolean empty = !self->busy && ts_chat_pane_get_reply (self->plain_pane) == NULL &&
                   ts_chat_pane_get_reply (self->he_pane) == NULL;

  gtk_stack_set_visible_child_name (self->content_stack, empty ? "empty" : "chat");
}

/* "local", the evaluator URL, or "plain", as the settings say. */
static char *
he_mode_from_settings (TsSettings *settings)
{
  switch (ts_settings_get_evaluator_mode (settings))
    {
    case TS_EVALUATOR_MODE_PLAIN:
      return g_strdup ("plain");
    case TS_EVALUATOR_MODE_REMOTE:
      return g_strdup (ts_settings_get_evaluator_url (settings));
    case TS_EVALUATOR_MODE_LOCAL:
    default:
      return g_strdup ("local");
    }
}

char *
_ts_chat_page_describe_evaluator (TsChatPage *self)
{
  g_autofree char *mode = he_mode_from_settings (self->settings);

  if (g_str_equal (mode, "local"))
    return g_strdup (_("CKKS, local evaluator"));
  if (g_str_equal (mode, "plain"))
    return g_strdup (_("Encryption off in Preferences"));
  return g_strdup_printf (_("CKKS, evaluator at %s"), mode);
}

/* The adapter-private request, when the settings ask for it with a remote
 * evaluator (he_mode is its URL then). */
static void
request_private_mode (TsGenerationRequest *r, TsSettings *settings)
{
  if (r->he_mode == NULL || !g_str_has_prefix (r->he_mode, "ws")
      || !ts_settings_get_evaluator_private (settings))
    return;
  r->he_private = TRUE;
  r->he_private_lambda_s = 0;    /* the library's default flood (docs/security.md §3.1) */
  r->he_private_rho = ts_settings_get_privacy_rho (settings);
}

/* Temperature a regenerate samples at when the page is greedy: pressing
 * Regenerate asks for another answer, which greedy decoding cannot give. */
#define REGENERATE_TEMPERATURE 0.8

/* A regenerate draws again: a fresh seed each time (both panes the same, so
 * they still agree), and sampling when the page is set to greedy. */
static void
regenerate_sampling (TsChatPage *self, TsGenerationRequest *r)
{
  self->regenerating = FALSE;
  self->n_regenerated++;
  r->seed += 0x9E3779B97F4A7C15ull * self->n_regenerated;
  if (r->temperature <= 0)
    {
      r->temperature = REGENERATE_TEMPERATURE;
      r->top_p = MIN (r->top_p, 0.95);
    }
}

/* The conversation's settings; one request serves both panes, so a random
 * seed is drawn once per turn and both draw alike. */
static void
request_sampling (TsChatPage *self, TsGenerationRequest *r)
{
  const TsConversationSettings *s = self->conv_settings;

  r->system_prompt = g_strdup (s->system_prompt);
  r->temperature = s->temperature;
  r->top_k = s->top_k;
  r->top_p = s->top_p;
  r->min_p = s->min_p;
  r->repeat_penalty = s->repeat_penalty;
  r->seed = s->seed >= 0 ? (guint64) s->seed : (guint64) g_random_int_range (0, G_MAXINT32);
  r->context_tokens = s->context_length;
  r->max_tokens = self->max_tokens;
}

static TsGenerationRequest *
build_request (TsChatPage *self, const char *adapter_path)
{
  TsSettings *settings = self->settings;
  TsGenerationRequest *r = ts_generation_request_new ();
  guint threads = ts_settings_get_threads (settings);

  request_sampling (self, r);
  r->thinking = ts_settings_get_chat_thinking (settings);
  if (self->regenerating)
    regenerate_sampling (self, r);
  /* Two panes generate at once: each gets half the cores unless told. */
  r->n_threads = threads > 0 ? threads : MAX (g_get_num_processors () / 2, 1);
  r->he_mode = he_mode_from_settings (settings);
  r->he_preset = g_strdup (ts_settings_get_ckks_preset_name (settings));
  /* Automatic, with the evaluator in this process: the smallest ring the
   * HE standard allows for the adapter (the compact one for inputs of at
   * most 1024 values, the encrypted pane's fastest, on the CPU); a remote
   * evaluator and the GPU get the default ring they are sure to take. */
  if (r->he_preset == NULL && g_str_equal (r->he_mode, "local")
      && (!ts_settings_get_use_gpu (settings) || !ckks_gpu_available (NULL, 0)))
    r->he_preset = g_strdup ("auto");
  r->he_backend = ts_settings_get_use_gpu (settings) ? TS_HELORA_BACKEND_AUTO
                                                     : TS_HELORA_BACKEND_CPU;
  r->adapter_path = g_strdup (adapter_path);
  request_private_mode (r, settings);
  _ts_chat_page_use_vault_key (self, r);
  return r;
}

static void
set_busy (TsChatPage *self, gboolean busy)
{
  if (self->busy == busy)
    return;
  self->busy = busy;
  if (!busy)
    g_clear_handle_id (&self->save_timeout, g_source_remove);
  _ts_chat_page_update_actions (self);
  _ts_chat_page_update_empty_state (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_BUSY]);
}

static gboolean
save_timeout_cb (gpointer data)
{
  TsChatPage *self = TS_CHAT_PAGE (data);

  /* Throttled: what streamed so far survives a crash. */
  if (ts_chat_pane_get_busy (self->plain_pane))
    _ts_chat_page_history_save_reply (self, FALSE, FALSE);
  if (ts_chat_pane_get_busy (self->he_pane))
    _ts_chat_page_history_save_reply (self, TRUE, FALSE);
  return G_SOURCE_CONTINUE;
}

void
_ts_chat_page_start_exchange (TsChatPage *self, const char *prompt, const char *adapter_path,
                              const char *note)
{
  g_autoptr (TsGenerationRequest) request = build_request (self, adapter_path);
  TsGenerationModel *model = ts_chat_session_get_model (self->session);

  g_array_set_size (self->plain_ids, 0);
  g_array_set_size (self->he_ids, 0);
  self->turn_failed = FALSE;
  _ts_chat_page_update_subtitles (self);
  _ts_chat_page_market_set_adapter (self, adapter_path);
  _ts_chat_page_history_begin_exchange (self, prompt);
  ts_chat_pane_generate (self->plain_pane, model, request, prompt);
  ts_chat_pane_generate (self->he_pane, model, request, prompt);
  ts_chat_pane_set_reply_note (self->plain_pane, note);
  ts_chat_pane_set_reply_note (self->he_pane, note);
  self->save_timeout = g_timeout_add (self->save_interval_ms, save_timeout_cb, self);
  set_busy (self, TRUE);
}

void
_ts_chat_page_turn_cancelled (TsChatPage *self, const char *prompt)
{
  self->regenerating = FALSE;
  set_busy (self, FALSE);
  if (*ts_prompt_view_get_text (self->prompt_view) == '\0')
    ts_prompt_view_set_text (self->prompt_view, prompt);
}

/* The turn is routed first (on a worker) when there are adapters to route
 * between; the page is busy from now on. */
static void
start_exchange (TsChatPage *self, const char *prompt)
{
  set_busy (self, TRUE);
  _ts_chat_page_route_turn (self, prompt);
}

static void
send_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsChatPage *self = TS_CHAT_PAGE (widget);
  g_autofree char *prompt = g_strstrip (g_strdup (ts_prompt_view_get_text (self->prompt_view)));

  if (*prompt == '\0' || !ts_chat_page_get_ready (self))
    return;
  ts_prompt_view_set_text (self->prompt_view, "");
  _ts_chat_page_edit_commit (self);
  start_exchange (self, prompt);
}

static void
prompt_activate_cb (TsChatPage *self)
{
  gtk_widget_activate_action (GTK_WIDGET (self), "chat.send", NULL);
}

static void
stop_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsChatPage *self = TS_CHAT_PAGE (widget);

  _ts_chat_page_cancel_route (self);
  ts_chat_pane_stop (self->plain_pane);
  ts_chat_pane_stop (self->he_pane);
}

/* Takes the last exchange off both panes and history; returns its prompt. */
static char *
pop_exchange (TsChatPage *self)
{
  g_autofree char *prompt = ts_chat_conversation_pop_exchange
                              (ts_chat_session_get_conversation (self->session, FALSE));
  g_autofree char *he_prompt = ts_chat_conversation_pop_exchange
                                 (ts_chat_session_get_conversation (self->session, TRUE));

  _ts_chat_page_history_drop_exchange (self);
  return g_steal_pointer (&prompt);
}

static void
regenerate_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsChatPage *self = TS_CHAT_PAGE (widget);
  g_autofree char *prompt = NULL;

  if (!ts_chat_page_get_ready (self))
    return;
  _ts_chat_page_edit_cancel (self);
  if ((prompt = pop_exchange (self)) == NULL)
    return;
  self->regenerating = TRUE;
  start_exchange (self, prompt);
}

static void
edit_last_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsChatPage *self = TS_CHAT_PAGE (widget);
  g_autofree char *prompt = NULL;

  if (self->busy)
    return;
  _ts_chat_page_edit_cancel (self);
  if ((prompt = pop_exchange (self)) == NULL)
    return;
  ts_prompt_view_set_text (self->prompt_view, prompt);
  gtk_widget_grab_focus (GTK_WIDGET (self->prompt_view));
  _ts_chat_page_update_actions (self);
  _ts_chat_page_update_empty_state (self);
}

static void
clear_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsChatPage *self = TS_CHAT_PAGE (widget);

  _ts_chat_page_edit_cancel (self);
  ts_chat_pane_clear (self->plain_pane);
  ts_chat_pane_clear (self->he_pane);
  self->conversation = 0;
  self->last_user_message = 0;
  _ts_chat_page_settings_reset (self);
  gtk_list_box_unselect_all (self->history_list);
  set_busy (self, FALSE);
  _ts_chat_page_update_actions (self);
  _ts_chat_page_update_empty_state (self);
}

/* Marks the first token where the panes chose differently. */
static void
pane_token_cb (TsChatPane *pane, guint index, int token_id, TsChatPage *self)
{
  GArray *mine = pane == self->he_pane ? self->he_ids : self->plain_ids;
  guint n;

  g_array_append_val (mine, token_id);
  n = MIN (self->plain_ids->len, self->he_ids->len);
  if (ts_chat_pane_get_diverged_at (self->he_pane) >= 0 || index >= n)
    return;
  if (g_array_index (self->plain_ids, int, index) != g_array_index (self->he_ids, int, index))
    ts_chat_pane_set_diverged_at (self->he_pane, (int) index);
}

static void
pane_finished_cb (TsChatPane *pane, int kind, const char *message, TsChatPage *self)
{
  gboolean he = pane == self->he_pane;

  _ts_chat_page_history_save_reply (self, he, kind == TS_GENERATION_EVENT_DONE);
  if (kind == TS_GENERATION_EVENT_ERROR)
    {
      g_autofree char *text = g_strdup_printf (he ? _("HE-LoRA: %s") : _("Plaintext LoRA: %s"),
                                               message);
      _ts_chat_page_toast (self, text);
      self->turn_failed = TRUE;
    }
  if (!ts_chat_pane_get_busy (self->plain_pane) && !ts_chat_pane_get_busy (self->he_pane))
    {
      /* Both panes answer from the same history: a turn one side failed
       * is left out on both sides, or every later answer would differ. */
      if (self->turn_failed)
        _ts_chat_page_history_leave_out_exchange (self);
      _ts_chat_page_history_save_stats (self);
      set_busy (self, FALSE);
      gtk_widget_grab_focus (GTK_WIDGET (self->prompt_view));
      _ts_chat_page_history_refresh (self);
      _ts_chat_page_market_report_turn (self);
    }
}

/* ------------------------------------------------------------------------ */

TsChatPane *
ts_chat_page_get_pane (TsChatPage *self, gboolean he)
{
  g_return_val_if_fail (TS_IS_CHAT_PAGE (self), NULL);
  return he ? self->he_pane : self->plain_pane;
}

GtkMenuButton *
ts_chat_page_get_picker (TsChatPage *self, gboolean adapter)
{
  g_return_val_if_fail (TS_IS_CHAT_PAGE (self), NULL);
  return adapter ? self->adapter_button : self->model_button;
}

void
ts_chat_page_set_prompt (TsChatPage *self, const char *text)
{
  g_return_if_fail (TS_IS_CHAT_PAGE (self));
  ts_prompt_view_set_text (self->prompt_view, text);
}

const char *
ts_chat_page_get_prompt (TsChatPage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PAGE (self), NULL);
  return ts_prompt_view_get_text (self->prompt_view);
}

gboolean
ts_chat_page_get_ready (TsChatPage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PAGE (self), FALSE);
  return ts_chat_session_get_model (self->session) != NULL && !self->busy;
}

gboolean
ts_chat_page_get_busy (TsChatPage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PAGE (self), FALSE);
  return self->busy;
}

gint64
ts_chat_page_get_conversation (TsChatPage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PAGE (self), 0);
  return self->conversation;
}

static void
ts_chat_page_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  TsChatPage *self = TS_CHAT_PAGE (object);

  switch (prop_id)
    {
    case PROP_READY:
      g_value_set_boolean (value, ts_chat_page_get_ready (self));
      break;
    case PROP_BUSY:
      g_value_set_boolean (value, self->busy);
      break;
    case PROP_TEMPERATURE:
      g_value_set_double (value, self->conv_settings->temperature);
      break;
    case PROP_TOP_P:
      g_value_set_double (value, self->conv_settings->top_p);
      break;
    case PROP_MAX_TOKENS:
      g_value_set_uint (value, self->max_tokens);
      break;
    case PROP_SAVE_INTERVAL:
      g_value_set_uint (value, self->save_interval_ms);
      break;
    case PROP_SEED:
      g_value_set_uint (value, (guint) MAX (self->conv_settings->seed, 0));
      break;
    case PROP_ROUTING:
      g_value_set_boolean (value, ts_chat_page_get_routing (self));
      break;
    case PROP_ADAPTER_OVERRIDE:
      g_value_set_string (value, self->adapter_override);
      break;
    case PROP_SETTINGS:
      g_value_set_object (value, self->settings);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

/* The conversation's temperature, top-p or seed, kept with it. */
static void
set_sampling (TsChatPage *self, guint prop, const GValue *value)
{
  g_autoptr (TsConversationSettings) s = ts_conversation_settings_copy (self->conv_settings);

  if (prop == PROP_TEMPERATURE)
    s->temperature = g_value_get_double (value);
  else if (prop == PROP_TOP_P)
    s->top_p = g_value_get_double (value);
  else
    s->seed = g_value_get_uint (value);
  if (!ts_conversation_settings_equal (s, self->conv_settings))
    ts_chat_page_set_conversation_settings (self, s);
}

void
_ts_chat_page_notify_sampling (TsChatPage *self)
{
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_TEMPERATURE]);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_TOP_P]);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_SEED]);
}

static void
set_uint (TsChatPage *self, guint *field, guint value, guint prop)
{
  if (*field == value)
    return;
  *field = value;
  g_object_notify_by_pspec (G_OBJECT (self), properties[prop]);
}

static void
ts_chat_page_set_property (GObject *object, guint prop_id, const GValue *value,
                           GParamSpec *pspec)
{
  TsChatPage *self = TS_CHAT_PAGE (object);

  switch (prop_id)
    {
    case PROP_TEMPERATURE:
    case PROP_TOP_P:
    case PROP_SEED:
      set_sampling (self, prop_id, value);
      break;
    case PROP_MAX_TOKENS:
      set_uint (self, &self->max_tokens, g_value_get_uint (value), prop_id);
      break;
    case PROP_SAVE_INTERVAL:
      set_uint (self, &self->save_interval_ms, g_value_get_uint (value), prop_id);
      break;
    case PROP_ADAPTER_OVERRIDE:
      _ts_chat_page_set_adapter_override (self, g_value_get_string (value));
      break;
    case PROP_SETTINGS:
      self->settings = g_value_dup_object (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
settings_changed_cb (TsChatPage *self)
{
  _ts_chat_page_update_subtitles (self);
}

GtkWidget *
ts_chat_page_new (TsSettings *settings)
{
  g_return_val_if_fail (TS_IS_SETTINGS (settings), NULL);
  return g_object_new (TS_TYPE_CHAT_PAGE, "settings", settings, NULL);
}

/* The page follows the settings it was built with for its whole life. */
static void
ts_chat_page_constructed (GObject *object)
{
  TsChatPage *self = TS_CHAT_PAGE (object);
  TsSettings *settings = self->settings;

  G_OBJECT_CLASS (ts_chat_page_parent_class)->constructed (object);
  g_return_if_fail (TS_IS_SETTINGS (settings));   /* required (ts-chat-page.h) */
  self->override_binding =
    g_object_bind_property (settings, "chat-adapter-override", self, "adapter-override",
                            G_BINDING_BIDIRECTIONAL | G_BINDING_SYNC_CREATE);
  g_object_bind_property (settings, "chat-thinking", self->thinking_switch, "active",
                          G_BINDING_BIDIRECTIONAL | G_BINDING_SYNC_CREATE);
  /* The HE pane's subtitle names the evaluator. */
  g_signal_connect_object (settings, "notify::evaluator-mode", G_CALLBACK (settings_changed_cb),
                           self, G_CONNECT_SWAPPED);
  g_signal_connect_object (settings, "notify::evaluator-url", G_CALLBACK (settings_changed_cb),
                           self, G_CONNECT_SWAPPED);
  _ts_chat_page_update_subtitles (self);
  _ts_chat_page_settings_reset (self);
}

static void
ts_chat_page_dispose (GObject *object)
{
  TsChatPage *self = TS_CHAT_PAGE (object);

  g_cancellable_cancel (self->load_cancellable);
  g_clear_object (&self->load_cancellable);
  g_clear_handle_id (&self->save_timeout, g_source_remove);
  /* The settings outlive the page: stop following them now. */
  g_clear_pointer (&self->override_binding, g_binding_unbind);
  g_clear_object (&self->settings);
  _ts_chat_page_routing_dispose (self);
  _ts_chat_page_market_dispose (self);
  _ts_chat_page_vault_dispose (self);
  _ts_chat_page_settings_dispose (self);
  _ts_chat_page_edit_dispose (self);
  G_OBJECT_CLASS (ts_chat_page_parent_class)->dispose (object);
}

static void
ts_chat_page_finalize (GObject *object)
{
  TsChatPage *self = TS_CHAT_PAGE (object);

  g_clear_object (&self->session);
  ts_conversation_settings_free (self->conv_settings);
  g_free (self->last_error);
  g_free (self->loading_model);
  g_free (self->loading_adapter);
  g_array_unref (self->plain_ids);
  g_array_unref (self->he_ids);
  g_clear_pointer (&self->history, ts_history_close);
  G_OBJECT_CLASS (ts_chat_page_parent_class)->finalize (object);
}

static void
install_properties (GObjectClass *object_class)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;
  const GParamFlags ro = G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;

  properties[PROP_READY] = g_param_spec_boolean ("ready", NULL, NULL, FALSE, ro);
  properties[PROP_BUSY] = g_param_spec_boolean ("busy", NULL, NULL, FALSE, ro);
  properties[PROP_TEMPERATURE] = g_param_spec_double ("temperature", NULL, NULL, 0, 2, 0, rw);
  properties[PROP_TOP_P] = g_param_spec_double ("top-p", NULL, NULL, 0.05, 1, 1, rw);
  properties[PROP_MAX_TOKENS] = g_param_spec_uint ("max-tokens", NULL, NULL, 1, 4096, 128, rw);
  properties[PROP_SEED] = g_param_spec_uint ("seed", NULL, NULL, 0, G_MAXINT32, 0, rw);
  properties[PROP_ROUTING] = g_param_spec_boolean ("routing", NULL, NULL, FALSE, ro);
  properties[PROP_ADAPTER_OVERRIDE] = g_param_spec_string ("adapter-override", NULL, NULL, "", rw);
  /* How often a streaming answer is written to history.sqlite, so that a
   * crash loses at most this much of it (ms; applies from the next turn). */
  properties[PROP_SAVE_INTERVAL] = g_param_spec_uint ("save-interval", NULL, NULL, 10, 60000, 400, rw);
  properties[PROP_SETTINGS] =
    g_param_spec_object ("settings", NULL, NULL, TS_TYPE_SETTINGS,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
ts_chat_page_class_init (TsChatPageClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->get_property = ts_chat_page_get_property;
  object_class->set_property = ts_chat_page_set_property;
  object_class->constructed = ts_chat_page_constructed;
  object_class->dispose = ts_chat_page_dispose;
  object_class->finalize = ts_chat_page_finalize;
  install_properties (object_class);
  _ts_chat_page_market_class_init (object_class);

  g_type_ensure (TS_TYPE_CHAT_PANE);
  g_type_ensure (TS_TYPE_CHAT_PANES);
  g_type_ensure (TS_TYPE_PROMPT_VIEW);
  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/org/tensafe/Desktop/ui/ts-chat-page.ui");
  gtk_widget_class_bind_template_child (widget_class, TsChatPage, toast_overlay);
  gtk_widget_class_bind_template_child (widget_class, TsChatPage, thinking_switch);
  gtk_widget_class_bind_template_child (widget_class, TsChatPage, history_list);
  gtk_widget_class_bind_template_child (widget_class, TsChatPage, model_button);
  gtk_widget_class_bind_template_child (widget_class, TsChatPage, adapter_button);
  gtk_widget_class_bind_template_child (widget_class, TsChatPage, content_stack);
  gtk_widget_class_bind_template_child (widget_class, TsChatPage, plain_pane);
  gtk_widget_class_bind_template_child (widget_class, TsChatPage, he_pane);
  gtk_widget_class_bind_template_child (widget_class, TsChatPage, prompt_view);
  gtk_widget_class_bind_template_callback (widget_class, prompt_activate_cb);

  gtk_widget_class_install_action (widget_class, "chat.send", NULL, send_action);
  gtk_widget_class_install_action (widget_class, "chat.stop", NULL, stop_action);
  gtk_widget_class_install_action (widget_class, "chat.regenerate", NULL, regenerate_action);
  gtk_widget_class_install_action (widget_class, "chat.edit-last", NULL, edit_last_action);
  gtk_widget_class_install_action (widget_class, "chat.clear", NULL, clear_action);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Escape, 0, "chat.stop", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_r, GDK_CONTROL_MASK | GDK_SHIFT_MASK,
                                       "chat.regenerate", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Up, GDK_CONTROL_MASK,
                                       "chat.edit-last", NULL);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_n, GDK_CONTROL_MASK,
                                       "chat.clear", NULL);
  _ts_chat_page_models_class_init (widget_class);
  _ts_chat_page_routing_class_init (widget_class);
  _ts_chat_page_stack_class_init (widget_class);
  _ts_chat_page_history_class_init (widget_class);
  _ts_chat_page_settings_class_init (widget_class);
  _ts_chat_page_edit_class_init (widget_class);
}

static void
ts_chat_page_init (TsChatPage *self)
{
  self->conv_settings = ts_conversation_settings_new ();
  self->editing = -1;
  self->max_tokens = 128;
  self->save_interval_ms = 400;
  self->plain_ids = g_array_new (FALSE, FALSE, sizeof (int));
  self->he_ids = g_array_new (FALSE, FALSE, sizeof (int));
  gtk_widget_init_template (GTK_WIDGET (self));
  ts_latency_chart_share_scale (ts_chat_pane_get_chart (self->plain_pane),
                                ts_chat_pane_get_chart (self->he_pane));
  ts_latency_chart_share_scale (ts_chat_pane_get_chart (self->he_pane),
                                ts_chat_pane_get_chart (self->plain_pane));
  g_signal_connect (self->plain_pane, "token", G_CALLBACK (pane_token_cb), self);
  g_signal_connect (self->he_pane, "token", G_CALLBACK (pane_token_cb), self);
  g_signal_connect (self->plain_pane, "finished", G_CALLBACK (pane_finished_cb), self);
  g_signal_connect (self->he_pane, "finished", G_CALLBACK (pane_finished_cb), self);
  _ts_chat_page_history_init (self);
  _ts_chat_page_routing_init (self);
  _ts_chat_page_models_init (self);
  _ts_chat_page_market_init (self);
  ts_chat_pane_set_conversation (self->plain_pane,
                                 ts_chat_session_get_conversation (self->session, FALSE));
  ts_chat_pane_set_conversation (self->he_pane,
                                 ts_chat_session_get_conversation (self->session, TRUE));
  _ts_chat_page_update_actions (self);
  _ts_chat_page_update_empty_state (self);
}
