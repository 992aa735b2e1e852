/* ts-chat-session.c: the chat without its widgets: the loaded model and its adapters.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include <string.h>

#include "ts-adapter-stack.h"
#include "ts-chat-session-private.h"

struct _TsChatSession
{
  GObject parent_instance;

  char *demo_model;
  char *demo_adapter;

  TsGenerationModel *model;
  char *model_path;
  char *model_name;
  char *adapter_path;            /* the current adapter (the first of a stack) */
  gboolean adapter_is_own;       /* it is the model's own (loaded with it), not
                                  * switched to from the model's cache */
  char *adapter_name;

  GCancellable *load_cancellable;  /* the load under way: a newer one cancels it */
  guint load_serial;             /* which load is the latest */
  gboolean loading;

  /* One conversation per side of the chat: they differ in their replies
   * (and in what a failed reply leaves out). */
  TsChatConversation *conversations[2];

  TsChatSessionRouting routing;  /* ts-chat-session-routing.c */
};

G_DEFINE_FINAL_TYPE (TsChatSession, ts_chat_session, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_MODEL_PATH,
  PROP_MODEL_NAME,
  PROP_MODEL_IS_DEMO,
  PROP_ADAPTER_PATH,
  PROP_ADAPTER_NAME,
  PROP_LOADING,
  PROP_ROUTING,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

enum {
  SIGNAL_ADAPTER_USED,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

TsChatSessionRouting *
_ts_chat_session_get_routing_state (TsChatSession *self)
{
  return &self->routing;
}

static char *
file_display_name (const char *path)
{
  g_autofree char *base = g_path_get_basename (path);
  char *dot = g_str_has_suffix (base, ".gguf") ? strrchr (base, '.') : NULL;

  if (dot != NULL)
    *dot = '\0';
  return g_steal_pointer (&base);
}

char *
ts_chat_session_name_adapter (TsChatSession *self, const char *path)
{
  g_return_val_if_fail (TS_IS_CHAT_SESSION (self), NULL);
  g_return_val_if_fail (path != NULL, NULL);

  if (self->demo_adapter != NULL && g_str_equal (path, self->demo_adapter))
    return g_strdup (_("Demo Adapter"));
  return file_display_name (path);
}

guint
ts_chat_session_get_n_adapters (TsChatSession *self)
{
  g_return_val_if_fail (TS_IS_CHAT_SESSION (self), 0);

  if (!self->adapter_is_own)
    return self->adapter_path != NULL ? 1 : 0;
  return self->model != NULL ? ts_generation_model_get_n_adapters (self->model) : 0;
}

const char *
ts_chat_session_get_nth_adapter (TsChatSession *self, guint i, float *weight)
{
  g_return_val_if_fail (TS_IS_CHAT_SESSION (self), NULL);
  g_return_val_if_fail (i < ts_chat_session_get_n_adapters (self), NULL);

  if (self->adapter_is_own)
    return ts_generation_model_get_nth_adapter (self->model, i, weight);
  if (weight != NULL)
    *weight = 1.0f;
  return self->adapter_path;
}

/* "name", "a ×0.70 + b ×0.30" for a stack, or "no adapter". */
static char *
describe_adapters (TsChatSession *self)
{
  guint n = ts_chat_session_get_n_adapters (self);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_autofree float *weights = g_new (float, MAX (n, 1));

  if (self->adapter_path == NULL)
    return g_strdup (_("no adapter"));
  for (guint i = 0; i < n; i++)
    g_ptr_array_add (names, ts_chat_session_name_adapter (
                              self, ts_chat_session_get_nth_adapter (self, i, &weights[i])));
  if (n < 2 && (n == 0 || weights[0] == 1.0f))
    return ts_chat_session_name_adapter (self, self->adapter_path);
  return ts_adapter_stack_describe ((const char *const *) names->pdata, weights, n);
}

static void
set_loading (TsChatSession *self, gboolean loading)
{
  if (self->loading == loading)
    return;
  self->loading = loading;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_LOADING]);
}

/* ---- loading --------------------------------------------------------------- */

/* One load, as asked, until it is done. */
typedef struct {
  char *model_path;
  char *adapter_path;            /* the first adapter, or NULL */
  guint serial;
  GCancellable *cancellable;     /* the caller's, or NULL */
  gulong cancelled_id;
} Load;

static void
load_free (gpointer data)
{
  Load *load = data;

  if (load->cancellable != NULL)
    g_cancellable_disconnect (load->cancellable, load->cancelled_id);
  g_clear_object (&load->cancellable);
  g_free (load->model_path);
  g_free (load->adapter_path);
  g_free (load);
}

/* @model (a reference, taken over) is a newly loaded one, or (@own FALSE,
 * an adapter switch) the session's own: the adapter is then no longer the
 * one the model was loaded with. */
static void
apply_load (TsChatSession *self, TsGenerationModel *model, gboolean own, const Load *load)
{
  g_object_freeze_notify (G_OBJECT (self));
  if (own)
    {
      g_clear_pointer (&self->model, ts_generation_model_unref);
      self->model = model;
      g_free (self->model_path);
      self->model_path = g_strdup (load->model_path);
      g_free (self->model_name);
      self->model_name = file_display_name (load->model_path);
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MODEL_PATH]);
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MODEL_NAME]);
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MODEL_IS_DEMO]);
    }
  else
    ts_generation_model_unref (model);
  self->adapter_is_own = own;
  g_free (self->adapter_path);
  self->adapter_path = g_strdup (load->adapter_path);
  g_free (self->adapter_name);
  self->adapter_name = describe_adapters (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_ADAPTER_PATH]);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_ADAPTER_NAME]);
  g_object_thaw_notify (G_OBJECT (self));
}

/* The end of a load: it stops "loading" unless a newer one runs. */
static void
load_ended (GTask *task)
{
  TsChatSession *self = g_task_get_source_object (task);
  Load *load = g_task_get_task_data (task);

  if (load->serial == self->load_serial)
    set_loading (self, FALSE);
}

static void
model_loaded_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  g_autoptr (GTask) task = data;
  TsChatSession *self = g_task_get_source_object (task);
  GError *error = NULL;
  TsGenerationModel *model = ts_generation_model_load_stack_finish (result, &error);

  load_ended (task);
  if (model == NULL)
    g_task_return_error (task, error);
  else if (g_task_return_error_if_cancelled (task))
    ts_generation_model_unref (model);
  else
    {
      apply_load (self, model, TRUE, g_task_get_task_data (task));
      g_task_return_boolean (task, TRUE);
    }
}

static void
adapter_switched_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  g_autoptr (GTask) task = data;
  TsChatSession *self = g_task_get_source_object (task);
  GError *error = NULL;

  load_ended (task);
  if (!ts_generation_model_load_lora_finish (result, &error))
    g_task_return_error (task, error);
  else if (!g_task_return_error_if_cancelled (task))
    {
      apply_load (self, ts_generation_model_ref (self->model), FALSE,
                  g_task_get_task_data (task));
      g_task_return_boolean (task, TRUE);
    }
}

static void
cancel_cb (GCancellable *caller, GCancellable *load_cancellable)
{
  g_cancellable_cancel (load_cancellable);
}

/* One adapter on the model already loaded: a switch, not a reload. The
 * model stays the same, read once into its cache. */
static gboolean
is_switch (TsChatSession *self, const char *model_path, guint n, const float *weights)
{
  return self->model != NULL && g_strcmp0 (model_path, self->model_path) == 0 && n == 1
         && (weights == NULL || weights[0] == 1.0f);
}

void
ts_chat_session_load_async (TsChatSession *self, const char *model_path,
                            const char *const *adapter_paths, const float *weights, guint n,
                            GCancellable *cancellable, GAsyncReadyCallback callback,
                            gpointer user_data)
{
  GTask *task;
  Load *load;

  g_return_if_fail (TS_IS_CHAT_SESSION (self));
  g_return_if_fail (model_path != NULL);
  g_return_if_fail (n == 0 || adapter_paths != NULL);

  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, ts_chat_session_load_async);
  g_cancellable_cancel (self->load_cancellable);
  g_clear_object (&self->load_cancellable);
  self->load_cancellable = g_cancellable_new ();
  load = g_new0 (Load, 1);
  load->model_path = g_strdup (model_path);
  load->adapter_path = g_strdup (n > 0 ? adapter_paths[0] : NULL);
  load->serial = ++self->load_serial;
  if (cancellable != NULL)
    {
      load->cancellable = g_object_ref (cancellable);
      load->cancelled_id = g_cancellable_connect (cancellable, G_CALLBACK (cancel_cb),
                                                  g_object_ref (self->load_cancellable),
                                                  g_object_unref);
    }
  g_task_set_task_data (task, load, load_free);
  set_loading (self, TRUE);
  if (is_switch (self, model_path, n, weights))
    ts_generation_model_load_lora_async (self->model, adapter_paths[0], self->load_cancellable,
                                         adapter_switched_cb, task);
  else
    ts_generation_model_load_stack_async (model_path, adapter_paths, weights, n,
                                          self->load_cancellable, model_loaded_cb, task);
}

gboolean
ts_chat_session_load_finish (TsChatSession *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
  return g_task_propagate_boolean (G_TASK (result), error);
}

/* ---- properties ------------------------------------------------------------ */

TsGenerationModel *
ts_chat_session_get_model (TsChatSession *self)
{
  g_return_val_if_fail (TS_IS_CHAT_SESSION (self), NULL);
  return self->model;
}

const char *
ts_chat_session_get_model_path (TsChatSession *self)
{
  g_return_val_if_fail (TS_IS_CHAT_SESSION (self), NULL);
  return self->model_path;
}

const char *
ts_chat_session_get_model_name (TsChatSession *self)
{
  g_return_val_if_fail (TS_IS_CHAT_SESSION (self), NULL);
  return self->model_name;
}

gboolean
ts_chat_session_get_model_is_demo (TsChatSession *self)
{
  g_return_val_if_fail (TS_IS_CHAT_SESSION (self), FALSE);
  return self->model_path != NULL && self->demo_model != NULL
         && g_str_equal (self->model_path, self->demo_model);
}

const char *
ts_chat_session_get_adapter_path (TsChatSession *self)
{
  g_return_val_if_fail (TS_IS_CHAT_SESSION (self), NULL);
  return self->adapter_path;
}

const char *
ts_chat_session_get_adapter_name (TsChatSession *self)
{
  g_return_val_if_fail (TS_IS_CHAT_SESSION (self), NULL);
  return self->adapter_name;
}

const char *
ts_chat_session_get_request_adapter (TsChatSession *self)
{
  g_return_val_if_fail (TS_IS_CHAT_SESSION (self), NULL);
  return self->adapter_is_own ? NULL : self->adapter_path;
}

gboolean
ts_chat_session_get_loading (TsChatSession *self)
{
  g_return_val_if_fail (TS_IS_CHAT_SESSION (self), FALSE);
  return self->loading;
}

TsChatConversation *
ts_chat_session_get_conversation (TsChatSession *self, gboolean he)
{
  g_return_val_if_fail (TS_IS_CHAT_SESSION (self), NULL);
  return self->conversations[he ? 1 : 0];
}

static void
ts_chat_session_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  TsChatSession *self = TS_CHAT_SESSION (object);

  switch (prop_id)
    {
    case PROP_MODEL_PATH:
      g_value_set_string (value, self->model_path);
      break;
    case PROP_MODEL_NAME:
      g_value_set_string (value, self->model_name);
      break;
    case PROP_MODEL_IS_DEMO:
      g_value_set_boolean (value, ts_chat_session_get_model_is_demo (self));
      break;
    case PROP_ADAPTER_PATH:
      g_value_set_string (value, self->adapter_path);
      break;
    case PROP_ADAPTER_NAME:
      g_value_set_string (value, self->adapter_name);
      break;
    case PROP_LOADING:
      g_value_set_boolean (value, self->loading);
      break;
    case PROP_ROUTING:
      g_value_set_boolean (value, self->routing.router != NULL);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_chat_session_dispose (GObject *object)
{
  TsChatSession *self = TS_CHAT_SESSION (object);

  g_cancellable_cancel (self->load_cancellable);
  g_clear_object (&self->load_cancellable);
  _ts_chat_session_routing_cancel (&self->routing);
  G_OBJECT_CLASS (ts_chat_session_parent_class)->dispose (object);
}

static void
ts_chat_session_finalize (GObject *object)
{
  TsChatSession *self = TS_CHAT_SESSION (object);

  g_clear_pointer (&self->model, ts_generation_model_unref);
  g_clear_object (&self->conversations[0]);
  g_clear_object (&self->conversations[1]);
  _ts_chat_session_routing_clear (&self->routing);
  g_free (self->model_path);
  g_free (self->model_name);
  g_free (self->adapter_path);
  g_free (self->adapter_name);
  g_free (self->demo_model);
  g_free (self->demo_adapter);
  G_OBJECT_CLASS (ts_chat_session_parent_class)->finalize (object);
}

static void
ts_chat_session_class_init (TsChatSessionClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  const GParamFlags ro = G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;

  object_class->get_property = ts_chat_session_get_property;
  object_class->dispose = ts_chat_session_dispose;
  object_class->finalize = ts_chat_session_finalize;
  properties[PROP_MODEL_PATH] = g_param_spec_string ("model-path", NULL, NULL, NULL, ro);
  properties[PROP_MODEL_NAME] = g_param_spec_string ("model-name", NULL, NULL, NULL, ro);
  properties[PROP_MODEL_IS_DEMO] = g_param_spec_boolean ("model-is-demo", NULL, NULL, FALSE, ro);
  properties[PROP_ADAPTER_PATH] = g_param_spec_string ("adapter-path", NULL, NULL, NULL, ro);
  properties[PROP_ADAPTER_NAME] = g_param_spec_string ("adapter-name", NULL, NULL, NULL, ro);
  properties[PROP_LOADING] = g_param_spec_boolean ("loading", NULL, NULL, FALSE, ro);
  properties[PROP_ROUTING] = g_param_spec_boolean ("routing", NULL, NULL, FALSE, ro);
  g_object_class_install_properties (object_class, N_PROPS, properties);
  signals[SIGNAL_ADAPTER_USED] =
    g_signal_new ("adapter-used", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                  NULL, G_TYPE_NONE, 3, G_TYPE_STRING, G_TYPE_STRING, G_TYPE_INT64);
}

static void
ts_chat_session_init (TsChatSession *self)
{
  self->adapter_name = g_strdup (_("no adapter"));
  self->conversations[0] = ts_chat_conversation_new ();
  self->conversations[1] = ts_chat_conversation_new ();
}

TsChatSession *
ts_chat_session_new (const char *demo_model, const char *demo_adapter)
{
  TsChatSession *self = g_object_new (TS_TYPE_CHAT_SESSION, NULL);

  self->demo_model = g_strdup (demo_model);
  self->demo_adapter = g_strdup (demo_adapter);
  return self;
}
