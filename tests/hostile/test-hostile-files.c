/* test-hostile-files.c: mutated models, GGUF adapters, PEFT folders and
 * sealed key files through the real tensafe-cli.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Each mutant (bits flipped, extreme integers written, cut short, a piece
 * repeated; in the part of the file a parser reads, not the tensor data)
 * is given to `tensafe-cli generate` (key files: `keys verify`). Every run must end by itself within
 * RUN_LIMIT_S, exit 0 or 1 (never a signal: no crash, no abort), say why
 * on stderr when it exits 1, and stay under RUN_MAX_RSS_KIB: a hostile
 * file must not make the program ask for gigabytes. The mutants are
 * seeded (TS_TEST_SEED) so a failure can be replayed. */
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hostile-common.h"
#include "ts-test-util.h"

#define RUN_LIMIT_S 30
#define RUN_MAX_RSS_KIB (1024 * 1024)
#define GGUF_HOT_BYTES (64 * 1024)

typedef struct {
  gboolean signaled;
  int code;            /* exit status or signal */
  guint64 max_rss_kib;
  char *err;
} Run;

static void
run_clear (Run *r)
{
  g_free (r->err);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Run, run_clear)

static Run
run_cli (const char *const *args, const char *dir)
{
  g_autofree char *err_path = g_build_filename (dir, "stderr.txt", NULL);
  const char *cli = g_getenv ("TENSAFE_CLI");
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  Run r = { 0 };
  struct rusage ru;
  int status = 0;
  pid_t pid;

  g_assert_nonnull (cli);
  g_ptr_array_add (argv, (char *) cli);
  for (int i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);
  pid = fork ();
  g_assert_cmpint (pid, >=, 0);
  if (pid == 0)
    {
      int err = open (err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
      int out = open ("/dev/null", O_WRONLY);
      dup2 (err, 2);
      dup2 (out, 1);
      alarm (RUN_LIMIT_S);   /* survives exec: a hang ends in SIGALRM */
      execv (cli, (char **) argv->pdata);
      _exit (127);
    }
  g_assert_cmpint (wait4 (pid, &status, 0, &ru), ==, pid);
  r.signaled = WIFSIGNALED (status);
  r.code = r.signaled ? WTERMSIG (status) : WEXITSTATUS (status);
  r.max_rss_kib = (guint64) ru.ru_maxrss;
  g_file_get_contents (err_path, &r.err, NULL, NULL);
  return r;
}

/* ---- mutations ---- */

static void
flip_bits (GByteArray *b, gsize hot, GRand *rng)
{
  for (int n = g_rand_int_range (rng, 1, 9); n > 0; n--)
    b->data[g_rand_int_range (rng, 0, (gint32) hot)] ^= (guint8) (1u << g_rand_int_range (rng, 0, 8));
}

static void
write_extreme (GByteArray *b, gsize hot, GRand *rng)
{
  static const guint64 values[] = { 0, 1, 0x7f, 0xff, 0x7fffffff, 0x80000000, 0xffffffff,
                                    0x7fffffffffffffffull, 0xffffffffffffffffull,
                                    0x100000000ull, 0x7ff0000000000000ull /* +inf */ };
  guint64 v = values[g_rand_int_range (rng, 0, G_N_ELEMENTS (values))];
  gsize width = g_rand_boolean (rng) ? 8 : 4;
  gsize at;

  if (hot < width)
    return;
  at = (gsize) g_rand_int_range (rng, 0, (gint32) (hot - width + 1)) & ~(gsize) 3;
  memcpy (b->data + at, &v, width);   /* little-endian, as GGUF and safetensors */
}

static void
cut_short (GByteArray *b, gsize hot, GRand *rng)
{
  g_byte_array_set_size (b, (guint) g_rand_int_range (rng, 0, (gint32) MAX (hot, 1)));
}

static void
repeat_piece (GByteArray *b, gsize hot, GRand *rng)
{
  gsize at = (gsize) g_rand_int_range (rng, 0, (gint32) hot);
  gsize len = MIN ((gsize) g_rand_int_range (rng, 1, 64), b->len - at);
  g_autofree guint8 *piece = g_memdup2 (b->data + at, len);

  g_byte_array_set_size (b, b->len + (guint) len);
  memmove (b->data + at + len, b->data + at, b->len - at - len);
  memcpy (b->data + at, piece, len);
}

/* One mutation of @b, in its first @hot bytes. */
static void
mutate (GByteArray *b, gsize hot, GRand *rng)
{
  static void (*const ops[]) (GByteArray *, gsize, GRand *) = {
    flip_bits, write_extreme, cut_short, repeat_piece,
  };

  hot = MIN (hot, b->len);
  if (hot == 0)
    return;
  ops[g_rand_int_range (rng, 0, G_N_ELEMENTS (ops))] (b, hot, rng);
}

static GByteArray *
read_bytes (const char *path)
{
  g_autofree char *data = NULL;
  gsize len = 0;

  g_assert_true (g_file_get_contents (path, &data, &len, NULL));
  return g_byte_array_new_take ((guint8 *) g_steal_pointer (&data), len);
}

static void
write_bytes (const char *path, GByteArray *b)
{
  g_assert_true (g_file_set_contents (path, (const char *) b->data, b->len, NULL));
}

/* ---- the check of one run ---- */

typedef struct {
  guint accepted;
  guint refused;
  guint64 max_rss_kib;
} Tally;

static void
check_run (const Run *r, const char *what, guint i, Tally *t)
{
  if (r->signaled || r->code > 1 || r->max_rss_kib > RUN_MAX_RSS_KIB)
    g_error ("%s mutant %u (seed %" G_GUINT64_FORMAT "): %s %d, %" G_GUINT64_FORMAT
             " KiB; stderr: %s", what, i, ts_test_seed (), r->signaled ? "signal" : "exit",
             r->code, r->max_rss_kib, r->err != NULL ? r->err : "");
  if (r->code == 1)
    {
      g_assert_nonnull (r->err);
      g_assert_cmpuint (strlen (r->err), >, 0);
      t->refused++;
    }
  else
    t->accepted++;
  t->max_rss_kib = MAX (t->max_rss_kib, r->max_rss_kib);
}

static void
report (const char *what, const Tally *t)
{
  g_test_message ("%s: %u mutants refused with a message, %u accepted, peak %" G_GUINT64_FORMAT
                  " KiB", what, t->refused, t->accepted, t->max_rss_kib);
  /* the mutations reach the parser: most of them must be refused */
  g_assert_cmpuint (t->refused, >, t->accepted / 4);
}

static char *
qwen2_path (const char *relative)
{
  g_autofree char *rel = g_build_filename ("hf", "qwen2", relative, NULL);

  return ts_test_data_path (rel);
}

static void
test_models (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  g_autofree char *dir = g_dir_make_tmp ("ts-hostile-XXXXXX", NULL);
  g_autofree char *model = qwen2_path ("qwen2.gguf");
  g_autofree char *mutant = g_build_filename (dir, "model.gguf", NULL);
  g_autoptr (GByteArray) original = read_bytes (model);
  Tally t = { 0 };

  for (guint i = 0; i < hostile_count (40); i++)
    {
      g_autoptr (GByteArray) b = g_byte_array_sized_new (original->len);
      const char *args[] = { "generate", "--model", mutant, "-n", "2", "--prompt", "hi",
                             "--greedy", NULL };
      g_byte_array_append (b, original->data, original->len);
      mutate (b, GGUF_HOT_BYTES, rng);
      write_bytes (mutant, b);
      g_auto (Run) r = run_cli (args, dir);
      check_run (&r, "model", i, &t);
    }
  report ("GGUF model", &t);
  ts_test_remove_tree (dir);
}

static void
test_gguf_adapters (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed () + 1);
  g_autofree char *dir = g_dir_make_tmp ("ts-hostile-XXXXXX", NULL);
  g_autofree char *model = qwen2_path ("qwen2.gguf");
  g_autofree char *lora = qwen2_path ("lora/qwen2-lora.gguf");
  g_autofree char *mutant = g_build_filename (dir, "lora.gguf", NULL);
  g_autoptr (GByteArray) original = read_bytes (lora);
  Tally t = { 0 };

  for (guint i = 0; i < hostile_count (40); i++)
    {
      g_autoptr (GByteArray) b = g_byte_array_sized_new (original->len);
      const char *args[] = { "generate", "--model", model, "--lora", mutant, "-n", "2",
                             "--prompt", "hi", "--greedy", NULL };
      g_byte_array_append (b, original->data, original->len);
      mutate (b, GGUF_HOT_BYTES, rng);
      write_bytes (mutant, b);
      g_auto (Run) r = run_cli (args, dir);
      check_run (&r, "GGUF adapter", i, &t);
    }
  report ("GGUF adapter", &t);
  ts_test_remove_tree (dir);
}

/* The bytes of a safetensors file a parser reads: the length and the JSON
 * header after it. */
static gsize
safetensors_head (GByteArray *b)
{
  guint64 header = 0;

  g_assert_cmpuint (b->len, >=, 8);
  memcpy (&header, b->data, 8);
  return (gsize) MIN (header + 8, b->len);
}

static void
test_peft_folders (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed () + 2);
  g_autofree char *dir = g_dir_make_tmp ("ts-hostile-XXXXXX", NULL);
  g_autofree char *model = qwen2_path ("qwen2.gguf");
  g_autofree char *config = qwen2_path ("lora/peft/adapter_config.json");
  g_autofree char *weights = qwen2_path ("lora/peft/adapter_model.safetensors");
  g_autofree char *peft = g_build_filename (dir, "peft", NULL);
  g_autofree char *config_out = g_build_filename (peft, "adapter_config.json", NULL);
  g_autofree char *weights_out = g_build_filename (peft, "adapter_model.safetensors", NULL);
  g_autoptr (GByteArray) config_bytes = read_bytes (config);
  g_autoptr (GByteArray) weights_bytes = read_bytes (weights);
  Tally t = { 0 };

  g_assert_cmpint (g_mkdir (peft, 0700), ==, 0);
  for (guint i = 0; i < hostile_count (40); i++)
    {
      g_autoptr (GByteArray) c = g_byte_array_new ();
      g_autoptr (GByteArray) w = g_byte_array_new ();
      const char *args[] = { "generate", "--model", model, "--lora", peft, "-n", "2",
                             "--prompt", "hi", "--greedy", NULL };
      g_byte_array_append (c, config_bytes->data, config_bytes->len);
      g_byte_array_append (w, weights_bytes->data, weights_bytes->len);
      if (g_rand_boolean (rng))
        mutate (c, c->len, rng);
      else
        mutate (w, safetensors_head (w), rng);
      write_bytes (config_out, c);
      write_bytes (weights_out, w);
      g_auto (Run) r = run_cli (args, dir);
      check_run (&r, "PEFT folder", i, &t);
    }
  report ("PEFT folder", &t);
  ts_test_remove_tree (dir);
}

/* The bytes of a sealed key file its reader parses before the sealed
 * secret: magic, version, KDF settings, salt, public parts' lengths. */
#define KEY_HOT_BYTES 512
/* The KDF may cost four times the vault's own 32 MiB (docs/key-vault.md),
 * the rest of the program little: a hostile file gets no more. */
#define KEY_MAX_RSS_KIB (256 * 1024)

static void
test_key_files (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed () + 3);
  g_autofree char *dir = g_dir_make_tmp ("ts-hostile-XXXXXX", NULL);
  g_autofree char *pass = g_build_filename (dir, "passphrase", NULL);
  g_autofree char *keys = g_build_filename (dir, "keys", NULL);
  g_autofree char *key = g_build_filename (keys, "key.tskey", NULL);
  const char *generate[] = { "keys", "generate", "--dir", keys, "--preset", "fast",
                             "--passphrase-file", pass, NULL };
  const char *verify[] = { "keys", "verify", "--dir", keys, "--passphrase-file", pass, NULL };
  g_autoptr (GByteArray) original = NULL;
  Tally t = { 0 };

  g_assert_true (g_file_set_contents (pass, "correct horse battery\n", -1, NULL));
  {
    g_auto (Run) made = run_cli (generate, dir);
    g_assert_false (made.signaled);
    g_assert_cmpint (made.code, ==, 0);
  }
  original = read_bytes (key);
  for (guint i = 0; i < hostile_count (30); i++)
    {
      g_autoptr (GByteArray) b = g_byte_array_sized_new (original->len);
      g_byte_array_append (b, original->data, original->len);
      mutate (b, KEY_HOT_BYTES, rng);
      write_bytes (key, b);
      g_auto (Run) r = run_cli (verify, dir);
      check_run (&r, "key file", i, &t);
      g_assert_cmpuint (r.max_rss_kib, <, KEY_MAX_RSS_KIB);
    }
  report ("sealed key file", &t);
  ts_test_remove_tree (dir);
}

int
main (int argc, char **argv)
{
  hostile_scale_from_args (&argc, argv);
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/hostile/files/models", test_models);
  g_test_add_func ("/hostile/files/gguf-adapters", test_gguf_adapters);
  g_test_add_func ("/hostile/files/peft-folders", test_peft_folders);
  g_test_add_func ("/hostile/files/key-files", test_key_files);
  return g_test_run ();
}
