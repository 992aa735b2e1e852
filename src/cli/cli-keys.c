/* cli-keys.c: tensafe-cli keys: the sealed CKKS key, from the command line.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The same file the Keys page manages (XDG data dir tensafe/keys/key.tskey),
 * through the same code (ts-key-file, ts-key-pair). Passphrases are read from
 * a file or standard input, never from the command line, where other users
 * could see them; every copy is wiped after use.
 */
#include <stdio.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <openssl/crypto.h>

#include "cli.h"
#include "ts-key-file.h"
#include "ts-key-pair.h"
#include "ts-key-vault.h"

#define KEY_FILE_NAME "key.tskey"

typedef struct {
  char *dir;
  char *preset;
  char *passphrase_file;
  char *new_passphrase_file;
  gboolean force;
  gboolean yes;
} KeysOptions;

static void
keys_options_clear (KeysOptions *o)
{
  g_clear_pointer (&o->dir, g_free);
  g_clear_pointer (&o->preset, g_free);
  g_clear_pointer (&o->passphrase_file, g_free);
  g_clear_pointer (&o->new_passphrase_file, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (KeysOptions, keys_options_clear)

static void
passphrase_free (char *passphrase)
{
  if (passphrase != NULL)
    OPENSSL_cleanse (passphrase, strlen (passphrase));
  g_free (passphrase);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (char, passphrase_free)

/* The first line of @path ("-": standard input), without its line end. */
static char *
read_passphrase (const char *path, GError **error)
{
  char *contents = NULL;
  gsize len = 0;

  if (path == NULL)
    {
      g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_INVALID,
                   "this needs a passphrase: --passphrase-file FILE (- for standard input)");
      return NULL;
    }
  if (strcmp (path, "-") == 0)
    {
      char line[1024];

      if (fgets (line, sizeof line, stdin) == NULL)
        line[0] = '\0';
      contents = g_strdup (line);
      OPENSSL_cleanse (line, sizeof line);
    }
  else if (!g_file_get_contents (path, &contents, &len, error))
    return NULL;
  contents[strcspn (contents, "\r\n")] = '\0';
  return contents;
}

static char *
key_path (const KeysOptions *o)
{
  g_autofree char *dir = o->dir ? g_strdup (o->dir) : ts_key_vault_default_directory ();

  return g_build_filename (dir, KEY_FILE_NAME, NULL);
}

static int
fail (const char *what, const GError *error)
{
  fprintf (stderr, "tensafe-cli keys %s: %s\n", what, error->message);
  return 1;
}

static int
keys_info (const KeysOptions *o)
{
  g_autofree char *path = key_path (o);
  g_autoptr (GError) error = NULL;
  g_autoptr (TsKeyFile) file = ts_key_file_load (path, &error);
  g_autofree char *fingerprint = NULL;
  g_autoptr (GDateTime) created = NULL;
  g_autofree char *when = NULL;

  if (file == NULL)
    return fail ("info", error);
  fingerprint = ts_key_file_fingerprint_hex (file);
  created = g_date_time_new_from_unix_utc (file->created);
  when = created ? g_date_time_format_iso8601 (created) : g_strdup ("unknown");
  printf ("path: %s\npreset: %s\ncreated: %s\nfingerprint: %s\nkdf: scrypt N=2^%u r=%u p=%u\n",
          path, file->preset, when, fingerprint, file->kdf.log2_n, file->kdf.r, file->kdf.p);
  return 0;
}

static gboolean
ensure_directory (const char *path, GError **error)
{
  g_autofree char *dir = g_path_get_dirname (path);

  if (g_mkdir_with_parents (dir, 0700) != 0)
    {
      g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_FAILED, "cannot create %s: %s",
                   dir, g_strerror (errno));
      return FALSE;
    }
  return TRUE;
}

static int
keys_generate (const KeysOptions *o)
{
  g_autofree char *path = key_path (o);
  g_autoptr (GError) error = NULL;
  g_autoptr (char) passphrase = NULL;
  g_autoptr (TsKeyPair) pair = NULL;
  g_autoptr (TsKeyFile) file = NULL;
  g_autofree char *fingerprint = NULL;

  if (g_file_test (path, G_FILE_TEST_EXISTS) && !o->force)
    {
      fprintf (stderr, "tensafe-cli keys generate: %s exists; --force replaces it "
               "(the old key is kept until the new one is safely written)\n", path);
      return 1;
    }
  if ((passphrase = read_passphrase (o->passphrase_file, &error)) == NULL
      || (pair = ts_key_pair_generate (o->preset ? o->preset : "fast", NULL, NULL, &error)) == NULL
      || (file = ts_key_pair_seal (pair, passphrase, NULL, g_get_real_time () / G_USEC_PER_SEC,
                                   NULL, NULL, &error)) == NULL
      || !ensure_directory (path, &error)
      || !ts_key_file_save (file, path, &error))
    return fail ("generate", error);
  fingerprint = ts_key_file_fingerprint_hex (file);
  printf ("fingerprint: %s\n", fingerprint);
  return 0;
}

/* Opens the key with the passphrase; with a new passphrase, reseals it. */
static int
keys_unlock (const KeysOptions *o, gboolean change)
{
  const char *what = change ? "passwd" : "verify";
  g_autofree char *path = key_path (o);
  g_autoptr (GError) error = NULL;
  g_autoptr (char) passphrase = NULL;
  g_autoptr (char) new_passphrase = NULL;
  g_autoptr (TsKeyFile) file = NULL;
  g_autoptr (TsKeyFile) resealed = NULL;
  g_autoptr (TsKeyPair) pair = NULL;

  if ((file = ts_key_file_load (path, &error)) == NULL
      || (passphrase = read_passphrase (o->passphrase_file, &error)) == NULL
      || (pair = ts_key_file_unlock (file, passphrase, NULL, NULL, &error)) == NULL)
    return fail (what, error);
  if (!change)
    {
      printf ("unlocked: the passphrase opens this key\n");
      return 0;
    }
  if ((new_passphrase = read_passphrase (o->new_passphrase_file, &error)) == NULL
      || (resealed = ts_key_pair_seal (pair, new_passphrase, NULL, file->created,
                                       NULL, NULL, &error)) == NULL
      || !ts_key_file_save (resealed, path, &error))
    return fail (what, error);
  printf ("passphrase changed\n");
  return 0;
}

static int
keys_export_public (const KeysOptions *o, const char *out)
{
  g_autofree char *path = key_path (o);
  g_autoptr (GError) error = NULL;
  g_autoptr (TsKeyFile) file = NULL;
  g_autoptr (GBytes) bytes = NULL;

  if (out == NULL)
    {
      fprintf (stderr, "Usage: tensafe-cli keys export-public OUT\n");
      return 2;
    }
  if ((file = ts_key_file_load (path, &error)) == NULL)
    return fail ("export-public", error);
  bytes = ts_key_file_export_public (file);
  if (!g_file_set_contents (out, g_bytes_get_data (bytes, NULL), (gssize) g_bytes_get_size (bytes),
                            &error))
    return fail ("export-public", error);
  return 0;
}

static int
keys_delete (const KeysOptions *o)
{
  g_autofree char *path = key_path (o);

  if (!o->yes)
    {
      fprintf (stderr, "tensafe-cli keys delete: this destroys the key for good; "
               "confirm with --yes\n");
      return 1;
    }
  if (g_unlink (path) != 0)
    {
      fprintf (stderr, "tensafe-cli keys delete: %s: %s\n", path, g_strerror (errno));
      return 1;
    }
  return 0;
}

static gboolean
parse_options (KeysOptions *o, int *argc, char ***argv, GError **error)
{
  GOptionEntry entries[] = {
    { "dir", 0, 0, G_OPTION_ARG_FILENAME, &o->dir, "Key directory (default: the app's)", "DIR" },
    { "preset", 0, 0, G_OPTION_ARG_STRING, &o->preset, "CKKS preset for generate (fast, default, wide)", "P" },
    { "passphrase-file", 0, 0, G_OPTION_ARG_FILENAME, &o->passphrase_file, "Passphrase, first line of FILE (- for stdin)", "FILE" },
    { "new-passphrase-file", 0, 0, G_OPTION_ARG_FILENAME, &o->new_passphrase_file, "New passphrase for passwd", "FILE" },
    { "force", 0, 0, G_OPTION_ARG_NONE, &o->force, "generate: replace an existing key", NULL },
    { "yes", 0, 0, G_OPTION_ARG_NONE, &o->yes, "delete: confirm", NULL },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx =
    g_option_context_new ("info|generate|verify|passwd|export-public OUT|delete - the sealed CKKS key");

  g_option_context_add_main_entries (ctx, entries, NULL);
  return g_option_context_parse (ctx, argc, argv, error);
}

int
cli_keys (int argc, char **argv)
{
  g_auto (KeysOptions) o = { 0 };
  g_autoptr (GError) error = NULL;
  const char *verb;

  if (!parse_options (&o, &argc, &argv, &error))
    {
      fprintf (stderr, "tensafe-cli keys: %s\n", error->message);
      return 2;
    }
  verb = argc > 1 ? argv[1] : "info";
  if (strcmp (verb, "info") == 0)
    return keys_info (&o);
  if (strcmp (verb, "generate") == 0)
    return keys_generate (&o);
  if (strcmp (verb, "verify") == 0)
    return keys_unlock (&o, FALSE);
  if (strcmp (verb, "passwd") == 0)
    return keys_unlock (&o, TRUE);
  if (strcmp (verb, "export-public") == 0)
    return keys_export_public (&o, argc > 2 ? argv[2] : NULL);
  if (strcmp (verb, "delete") == 0)
    return keys_delete (&o);
  fprintf (stderr, "tensafe-cli keys: unknown action '%s' "
           "(info, generate, verify, passwd, export-public, delete)\n", verb);
  return 2;
}
