/* ts-key-vault.c: the CKKS key kept on this desktop: generate, unlock, rotate, delete.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "ts-key-vault.h"
#include "ts-main-context.h"
#include "ts-write-atomic.h"

#define KEY_FILE_NAME "key.tskey"

struct _TsKeyVault
{
  GObject parent_instance;

  char *directory;
  char *path;
  TsScryptParams kdf;
  TsKeyState state;
  TsKeyFile *file;        /* the file's public facts; NULL in NONE and DAMAGED */
  TsKeyPair *pair;        /* UNLOCKED only */
  char *fingerprint;
  GDateTime *created;
  char *problem;
  gboolean busy;
  double progress;
};

G_DEFINE_FINAL_TYPE (TsKeyVault, ts_key_vault, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_DIRECTORY,
  PROP_STATE,
  PROP_FINGERPRINT,
  PROP_CREATED,
  PROP_PRESET,
  PROP_PROBLEM,
  PROP_BUSY,
  PROP_PROGRESS,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

GType
ts_key_state_get_type (void)
{
  static gsize type_id;
  static const GEnumValue values[] = {
    { TS_KEY_STATE_NONE, "TS_KEY_STATE_NONE", "none" },
    { TS_KEY_STATE_LOCKED, "TS_KEY_STATE_LOCKED", "locked" },
    { TS_KEY_STATE_UNLOCKED, "TS_KEY_STATE_UNLOCKED", "unlocked" },
    { TS_KEY_STATE_DAMAGED, "TS_KEY_STATE_DAMAGED", "damaged" },
    { 0, NULL, NULL },
  };

  if (g_once_init_enter (&type_id))
    g_once_init_leave (&type_id, g_enum_register_static ("TsKeyState", values));
  return type_id;
}

/* A copy of a passphrase that is wiped when freed. */
static char *
secret_dup (const char *text)
{
  return g_strdup (text != NULL ? text : "");
}

static void
secret_free (char *text)
{
  if (text != NULL)
    OPENSSL_cleanse (text, strlen (text));
  g_free (text);
}

/* ---- State ------------------------------------------------------------ */

static void
set_busy (TsKeyVault *self, gboolean busy)
{
  if (self->busy == busy)
    return;
  self->busy = busy;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_BUSY]);
}

static void
set_progress (TsKeyVault *self, double progress)
{
  if (self->progress == progress)
    return;
  self->progress = progress;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_PROGRESS]);
}

/* Takes @file and @pair (either may be NULL) and the matching state;
 * notifies every public fact that changed. */
static void
set_key (TsKeyVault *self, TsKeyState state, TsKeyFile *file, TsKeyPair *pair,
         const char *problem)
{
  g_autofree char *fingerprint = file != NULL ? ts_key_file_fingerprint_hex (file) : NULL;
  g_autofree char *old_preset = g_strdup (ts_key_vault_get_preset (self));
  GObject *object = G_OBJECT (self);

  g_object_freeze_notify (object);
  g_clear_pointer (&self->pair, ts_key_pair_free);
  g_clear_pointer (&self->file, ts_key_file_free);
  self->file = file;
  self->pair = pair;
  if (g_strcmp0 (fingerprint, self->fingerprint) != 0)
    {
      g_free (self->fingerprint);
      self->fingerprint = g_steal_pointer (&fingerprint);
      g_clear_pointer (&self->created, g_date_time_unref);
      if (file != NULL)
        self->created = g_date_time_new_from_unix_local (file->created);
      g_object_notify_by_pspec (object, properties[PROP_FINGERPRINT]);
      g_object_notify_by_pspec (object, properties[PROP_CREATED]);
    }
  if (g_strcmp0 (old_preset, ts_key_vault_get_preset (self)) != 0)
    g_object_notify_by_pspec (object, properties[PROP_PRESET]);
  if (g_strcmp0 (problem, self->problem) != 0)
    {
      g_free (self->problem);
      self->problem = g_strdup (problem);
      g_object_notify_by_pspec (object, properties[PROP_PROBLEM]);
    }
  if (self->state != state)
    {
      self->state = state;
      g_object_notify_by_pspec (object, properties[PROP_STATE]);
    }
  g_object_thaw_notify (object);
}

void
ts_key_vault_reload (TsKeyVault *self)
{
  g_autoptr (GError) error = NULL;
  TsKeyFile *file;

  g_return_if_fail (TS_IS_KEY_VAULT (self));

  file = ts_key_file_load (self->path, &error);
  if (file == NULL)
    {
      if (g_error_matches (error, TS_KEY_ERROR, TS_KEY_ERROR_NOT_FOUND))
        set_key (self, TS_KEY_STATE_NONE, NULL, NULL, NULL);
      else
        set_key (self, TS_KEY_STATE_DAMAGED, NULL, NULL, error->message);
      return;
    }
  /* Keep the unlocked key only if the file still holds that very key. */
  if (self->pair != NULL && self->file != NULL)
    {
      g_autofree char *fingerprint = ts_key_file_fingerprint_hex (file);
      if (g_strcmp0 (fingerprint, self->fingerprint) == 0)
        {
          set_key (self, TS_KEY_STATE_UNLOCKED, file, g_steal_pointer (&self->pair), NULL);
          return;
        }
    }
  set_key (self, TS_KEY_STATE_LOCKED, file, NULL, NULL);
}

void
ts_key_vault_lock (TsKeyVault *self)
{
  g_return_if_fail (TS_IS_KEY_VAULT (self));

  if (self->state != TS_KEY_STATE_UNLOCKED)
    return;
  set_key (self, TS_KEY_STATE_LOCKED, g_steal_pointer (&self->file), NULL, NULL);
}

/* ---- Jobs on a worker thread ----------------------------------------- */

typedef enum {
  JOB_GENERATE,
  JOB_UNLOCK,
  JOB_CHANGE_PASSPHRASE,
  JOB_ROTATE,
} JobKind;

typedef struct {
  JobKind kind;
  TsKeyVault *vault;        /* ref; touched on the main thread only */
  GMainContext *context;    /* where progress goes */
  char *directory;
  char *path;
  char *preset;
  char *passphrase;         /* wiped */
  char *new_passphrase;     /* wiped */
  TsScryptParams kdf;
  TsKeyFile *result_file;
  TsKeyPair *result_pair;
} Job;

static void
job_free (gpointer data)
{
  Job *job = data;

  g_clear_object (&job->vault);
  g_clear_pointer (&job->context, g_main_context_unref);
  g_free (job->directory);
  g_free (job->path);
  g_free (job->preset);
  secret_free (job->passphrase);
  secret_free (job->new_passphrase);
  ts_key_file_free (job->result_file);
  ts_key_pair_free (job->result_pair);
  g_free (job);
}

typedef struct {
  TsKeyVault *vault;
  double fraction;
} Progress;

static gboolean
progress_apply (gpointer data)
{
  Progress *p = data;

  if (p->vault->busy)
    set_progress (p->vault, p->fraction);
  return G_SOURCE_REMOVE;
}

static void
progress_free (gpointer data)
{
  Progress *p = data;

  g_object_unref (p->vault);
  g_free (p);
}

/* Progress of a step covering [@from, @to] of the whole job. */
typedef struct {
  Job *job;
  double from, to;
} Step;

static void
step_progress (double fraction, gpointer user_data)
{
  Step *step = user_data;
  Progress *p = g_new (Progress, 1);

  p->vault = g_object_ref (step->job->vault);
  p->fraction = step->from + fraction * (step->to - step->from);
  ts_main_context_post (step->job->context, progress_apply, p, progress_free);
}

static gboolean
job_seal_and_save (Job *job, TsKeyPair *pair, const char *passphrase, gint64 created,
                   double from, GCancellable *cancellable, GError **error)
{
  Step step = { job, from, 0.98 };

  job->result_file = ts_key_pair_seal (pair, passphrase, &job->kdf, created, step_progress,
                                       &step, error);
  if (job->result_file == NULL || g_cancellable_set_error_if_cancelled (cancellable, error))
    return FALSE;
  if (g_mkdir_with_parents (job->directory, 0700) != 0)
    {
      g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_FAILED, "Could not create %s: %s",
                   job->directory, g_strerror (errno));
      return FALSE;
    }
  return ts_key_file_save (job->result_file, job->path, error);
}

static gboolean
job_generate (Job *job, const char *preset, const char *passphrase, double from,
              GCancellable *cancellable, GError **error)
{
  Step step = { job, from, from + 0.2 };

  if (passphrase == NULL || *passphrase == '\0')
    {
      g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_INVALID, "The passphrase is empty");
      return FALSE;
    }
  job->result_pair = ts_key_pair_generate (preset, step_progress, &step, error);
  return job->result_pair != NULL
         && !g_cancellable_set_error_if_cancelled (cancellable, error)
         && job_seal_and_save (job, job->result_pair, passphrase, g_get_real_time () / G_USEC_PER_SEC,
                               from + 0.2, cancellable, error);
}

/* Loads the current file and opens it with @passphrase. */
static TsKeyFile *
job_open_current (Job *job, const char *passphrase, TsKeyPair **pair, double to, GError **error)
{
  Step step = { job, 0.0, to };
  g_autoptr (TsKeyFile) file = ts_key_file_load (job->path, error);

  if (file == NULL)
    return NULL;
  *pair = ts_key_file_unlock (file, passphrase, step_progress, &step, error);
  return *pair != NULL ? g_steal_pointer (&file) : NULL;
}

static gboolean
job_run (Job *job, GCancellable *cancellable, GError **error)
{
  g_autoptr (TsKeyFile) current = NULL;
  g_autoptr (TsKeyPair) old_pair = NULL;

  switch (job->kind)
    {
    case JOB_GENERATE:
      if (g_file_test (job->path, G_FILE_TEST_EXISTS))
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_EXISTS,
                       "A key exists already; rotate or delete it first");
          return FALSE;
        }
      return job_generate (job, job->preset, job->passphrase, 0.0, cancellable, error);
    case JOB_UNLOCK:
      job->result_file = job_open_current (job, job->passphrase, &job->result_pair, 1.0, error);
      return job->result_file != NULL;
    case JOB_CHANGE_PASSPHRASE:
      if (job->new_passphrase == NULL || *job->new_passphrase == '\0')
        {
          g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_INVALID, "The new passphrase is empty");
          return FALSE;
        }
      current = job_open_current (job, job->passphrase, &job->result_pair, 0.5, error);
      return current != NULL
             && job_seal_and_save (job, job->result_pair, job->new_passphrase, current->created,
                                   0.5, cancellable, error);
    case JOB_ROTATE:
      current = job_open_current (job, job->passphrase, &old_pair, 0.4, error);
      return current != NULL
             && job_generate (job, current->preset, job->passphrase, 0.4, cancellable, error);
    default:
      g_assert_not_reached ();
    }
}

static void
job_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  GError *error = NULL;

  if (job_run (task_data, cancellable, &error))
    g_task_return_boolean (task, TRUE);
  else
    g_task_return_error (task, error);
}

/* Back on the main thread: apply the result, then complete the caller's task. */
static void
job_done_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr (GTask) outer = user_data;
  TsKeyVault *self = TS_KEY_VAULT (source);
  Job *job = g_task_get_task_data (G_TASK (result));
  GError *error = NULL;

  if (g_task_propagate_boolean (G_TASK (result), &error))
    {
      set_progress (self, 1.0);
      set_key (self, TS_KEY_STATE_UNLOCKED, g_steal_pointer (&job->result_file),
               g_steal_pointer (&job->result_pair), NULL);
      set_busy (self, FALSE);
      g_task_return_boolean (outer, TRUE);
      return;
    }
  /* Whatever happened, show what is on disk now (an unlocked key stays). */
  set_busy (self, FALSE);
  ts_key_vault_reload (self);
  g_task_return_error (outer, error);
}

static void
job_start (TsKeyVault *self, Job *job, GCancellable *cancellable, GAsyncReadyCallback callback,
           gpointer user_data, gpointer source_tag)
{
  GTask *outer = g_task_new (self, cancellable, callback, user_data);
  g_autoptr (GTask) inner = NULL;

  g_task_set_source_tag (outer, source_tag);
  if (self->busy)
    {
      job_free (job);
      g_task_return_new_error (outer, G_IO_ERROR, G_IO_ERROR_BUSY,
                               "Another key operation is running");
      g_object_unref (outer);
      return;
    }
  job->vault = g_object_ref (self);
  job->context = g_main_context_ref_thread_default ();
  job->directory = g_strdup (self->directory);
  job->path = g_strdup (self->path);
  job->kdf = self->kdf;
  set_progress (self, 0.0);
  set_busy (self, TRUE);
  inner = g_task_new (self, cancellable, job_done_cb, outer);
  /* The result is applied even when cancelled late: the file may be written. */
  g_task_set_check_cancellable (inner, FALSE);
  g_task_set_task_data (inner, job, job_free);
  g_task_run_in_thread (inner, job_thread);
}

static Job *
job_new (JobKind kind, const char *passphrase, const char *new_passphrase)
{
  Job *job = g_new0 (Job, 1);

  job->kind = kind;
  job->passphrase = secret_dup (passphrase);
  job->new_passphrase = new_passphrase != NULL ? secret_dup (new_passphrase) : NULL;
  return job;
}

static gboolean
job_finish (TsKeyVault *self, GAsyncResult *result, gpointer source_tag, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == source_tag, FALSE);
  return g_task_propagate_boolean (G_TASK (result), error);
}

void
ts_key_vault_generate_async (TsKeyVault *self, const char *preset, const char *passphrase,
                             GCancellable *cancellable, GAsyncReadyCallback callback,
                             gpointer user_data)
{
  Job *job;

  g_return_if_fail (TS_IS_KEY_VAULT (self));
  job = job_new (JOB_GENERATE, passphrase, NULL);
  job->preset = g_strdup (preset != NULL ? preset : "default");
  job_start (self, job, cancellable, callback, user_data, ts_key_vault_generate_async);
}

gboolean
ts_key_vault_generate_finish (TsKeyVault *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  return job_finish (self, result, ts_key_vault_generate_async, error);
}

void
ts_key_vault_unlock_async (TsKeyVault *self, const char *passphrase, GCancellable *cancellable,
                           GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (TS_IS_KEY_VAULT (self));
  job_start (self, job_new (JOB_UNLOCK, passphrase, NULL), cancellable, callback, user_data,
             ts_key_vault_unlock_async);
}

gboolean
ts_key_vault_unlock_finish (TsKeyVault *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  return job_finish (self, result, ts_key_vault_unlock_async, error);
}

void
ts_key_vault_change_passphrase_async (TsKeyVault *self, const char *old_passphrase,
                                      const char *new_passphrase, GCancellable *cancellable,
                                      GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (TS_IS_KEY_VAULT (self));
  job_start (self, job_new (JOB_CHANGE_PASSPHRASE, old_passphrase, new_passphrase),
             cancellable, callback, user_data, ts_key_vault_change_passphrase_async);
}

gboolean
ts_key_vault_change_passphrase_finish (TsKeyVault *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  return job_finish (self, result, ts_key_vault_change_passphrase_async, error);
}

void
ts_key_vault_rotate_async (TsKeyVault *self, const char *passphrase, GCancellable *cancellable,
                           GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (TS_IS_KEY_VAULT (self));
  job_start (self, job_new (JOB_ROTATE, passphrase, NULL), cancellable, callback, user_data,
             ts_key_vault_rotate_async);
}

gboolean
ts_key_vault_rotate_finish (TsKeyVault *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  return job_finish (self, result, ts_key_vault_rotate_async, error);
}

/* ---- Quick operations ------------------------------------------------- */

gboolean
ts_key_vault_delete (TsKeyVault *self, GError **error)
{
  g_return_val_if_fail (TS_IS_KEY_VAULT (self), FALSE);

  if (self->busy)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_BUSY, "Another key operation is running");
      return FALSE;
    }
  if (g_unlink (self->path) != 0 && errno != ENOENT)
    {
      g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_FAILED, "Could not delete %s: %s",
                   self->path, g_strerror (errno));
      return FALSE;
    }
  set_key (self, TS_KEY_STATE_NONE, NULL, NULL, NULL);
  return TRUE;
}

gboolean
ts_key_vault_export_public (TsKeyVault *self, const char *path, GError **error)
{
  g_autoptr (GBytes) bytes = NULL;
  const void *data;
  gsize len;

  g_return_val_if_fail (TS_IS_KEY_VAULT (self), FALSE);
  g_return_val_if_fail (path != NULL, FALSE);

  if (self->file == NULL)
    {
      g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_NOT_FOUND, "There is no key to export");
      return FALSE;
    }
  bytes = ts_key_file_export_public (self->file);
  data = g_bytes_get_data (bytes, &len);
  return ts_write_atomic (path, data, len, error);
}

/* ---- Accessors -------------------------------------------------------- */

char *
ts_key_vault_default_directory (void)
{
  return g_build_filename (g_get_user_data_dir (), "tensafe", "keys", NULL);
}

const char *
ts_key_vault_get_path (TsKeyVault *self)
{
  g_return_val_if_fail (TS_IS_KEY_VAULT (self), NULL);
  return self->path;
}

TsKeyState
ts_key_vault_get_state (TsKeyVault *self)
{
  g_return_val_if_fail (TS_IS_KEY_VAULT (self), TS_KEY_STATE_NONE);
  return self->state;
}

const char *
ts_key_vault_get_fingerprint (TsKeyVault *self)
{
  g_return_val_if_fail (TS_IS_KEY_VAULT (self), NULL);
  return self->fingerprint;
}

GDateTime *
ts_key_vault_get_created (TsKeyVault *self)
{
  g_return_val_if_fail (TS_IS_KEY_VAULT (self), NULL);
  return self->created;
}

const char *
ts_key_vault_get_preset (TsKeyVault *self)
{
  g_return_val_if_fail (TS_IS_KEY_VAULT (self), NULL);
  return self->file != NULL ? self->file->preset : NULL;
}

const char *
ts_key_vault_get_problem (TsKeyVault *self)
{
  g_return_val_if_fail (TS_IS_KEY_VAULT (self), NULL);
  return self->problem;
}

gboolean
ts_key_vault_get_busy (TsKeyVault *self)
{
  g_return_val_if_fail (TS_IS_KEY_VAULT (self), FALSE);
  return self->busy;
}

double
ts_key_vault_get_progress (TsKeyVault *self)
{
  g_return_val_if_fail (TS_IS_KEY_VAULT (self), 0.0);
  return self->progress;
}

const TsKeyPair *
ts_key_vault_get_key_pair (TsKeyVault *self)
{
  g_return_val_if_fail (TS_IS_KEY_VAULT (self), NULL);
  return self->pair;
}

void
ts_key_vault_set_kdf (TsKeyVault *self, const TsScryptParams *kdf)
{
  g_return_if_fail (TS_IS_KEY_VAULT (self));
  g_return_if_fail (kdf != NULL);
  self->kdf = *kdf;
}

/* ---- GObject ---------------------------------------------------------- */

static void
ts_key_vault_constructed (GObject *object)
{
  TsKeyVault *self = TS_KEY_VAULT (object);

  G_OBJECT_CLASS (ts_key_vault_parent_class)->constructed (object);
  if (self->directory == NULL)
    self->directory = ts_key_vault_default_directory ();
  self->path = g_build_filename (self->directory, KEY_FILE_NAME, NULL);
  ts_key_vault_reload (self);
}

static void
ts_key_vault_finalize (GObject *object)
{
  TsKeyVault *self = TS_KEY_VAULT (object);

  ts_key_pair_free (self->pair);
  ts_key_file_free (self->file);
  g_clear_pointer (&self->created, g_date_time_unref);
  g_free (self->fingerprint);
  g_free (self->problem);
  g_free (self->directory);
  g_free (self->path);
  G_OBJECT_CLASS (ts_key_vault_parent_class)->finalize (object);
}

static void
ts_key_vault_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  TsKeyVault *self = TS_KEY_VAULT (object);

  switch (prop_id)
    {
    case PROP_DIRECTORY:
      g_value_set_string (value, self->directory);
      break;
    case PROP_STATE:
      g_value_set_enum (value, self->state);
      break;
    case PROP_FINGERPRINT:
      g_value_set_string (value, self->fingerprint);
      break;
    case PROP_CREATED:
      g_value_set_boxed (value, self->created);
      break;
    case PROP_PRESET:
      g_value_set_string (value, ts_key_vault_get_preset (self));
      break;
    case PROP_PROBLEM:
      g_value_set_string (value, self->problem);
      break;
    case PROP_BUSY:
      g_value_set_boolean (value, self->busy);
      break;
    case PROP_PROGRESS:
      g_value_set_double (value, self->progress);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_key_vault_set_property (GObject *object, guint prop_id, const GValue *value,
                           GParamSpec *pspec)
{
  TsKeyVault *self = TS_KEY_VAULT (object);

  switch (prop_id)
    {
    case PROP_DIRECTORY:
      self->directory = g_value_dup_string (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_key_vault_class_init (TsKeyVaultClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  const GParamFlags ro = G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;

  object_class->constructed = ts_key_vault_constructed;
  object_class->finalize = ts_key_vault_finalize;
  object_class->get_property = ts_key_vault_get_property;
  object_class->set_property = ts_key_vault_set_property;

  properties[PROP_DIRECTORY] =
    g_param_spec_string ("directory", NULL, NULL, NULL,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  properties[PROP_STATE] = g_param_spec_enum ("state", NULL, NULL, TS_TYPE_KEY_STATE,
                                              TS_KEY_STATE_NONE, ro);
  properties[PROP_FINGERPRINT] = g_param_spec_string ("fingerprint", NULL, NULL, NULL, ro);
  properties[PROP_CREATED] = g_param_spec_boxed ("created", NULL, NULL, G_TYPE_DATE_TIME, ro);
  properties[PROP_PRESET] = g_param_spec_string ("preset", NULL, NULL, NULL, ro);
  properties[PROP_PROBLEM] = g_param_spec_string ("problem", NULL, NULL, NULL, ro);
  properties[PROP_BUSY] = g_param_spec_boolean ("busy", NULL, NULL, FALSE, ro);
  properties[PROP_PROGRESS] = g_param_spec_double ("progress", NULL, NULL, 0.0, 1.0, 0.0, ro);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
ts_key_vault_init (TsKeyVault *self)
{
  self->kdf = ts_scrypt_default;
}

TsKeyVault *
ts_key_vault_new (const char *directory)
{
  return g_object_new (TS_TYPE_KEY_VAULT, "directory", directory, NULL);
}
