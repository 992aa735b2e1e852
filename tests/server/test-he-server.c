/* test-he-server.c: the evaluator server under good and hostile clients.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The server evaluates the golden LoRA adapter under CKKS; clients hold real
 * keys and check every answer against a schoolbook A·h. A second, test-only
 * adapter ("toy", float vectors, one deliberately slow module) makes
 * in-flight limits and clients vanishing mid-request deterministic. Every
 * test ends by checking that a well-behaved client still gets correct
 * answers from the same server.
 */
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>
#include <libsoup/soup.h>

#include "ckks-client.h"
#include "ckks-objects.h"
#include "float-evaluator.h"
#include "server-fixture.h"
#include "ts-helora-adapter.h"
#include "ts-helora-ckks-evaluator.h"
#include "ts-helora-session.h"
#include "ts-test-util.h"

#define D 48
#define R 6
#define MAX_FRAME (1u << 20)
#define PRESET "fast"
#define GOLDEN_LORA "qwen35/tiny-qwen35moe-f32/lora/tiny-qwen35moe-lora-f32.gguf"

typedef struct {
  char *dir;
  char *lora_path;             /* the golden adapter, copied into dir */
  ServerFixture *server;
  guint8 adapter_sha256[TS_HELORA_HASH_SIZE];
  CkksClient *client;
} Fixture;

/* CKKS for GGUF adapters, the float stand-in for the slow toy adapter. */
static TsHeloraEvaluator *
open_evaluator (const char *path, const char *params_id, gpointer data, GError **error)
{
  if (g_str_has_suffix (path, ".adapter"))
    return float_evaluator_open (path, params_id, data, error);
  return ts_helora_ckks_evaluator_open (path, params_id, data, error);
}

static void
copy_golden_adapter (Fixture *f)
{
  gsize len;
  g_autofree guint8 *data = ts_test_read_data (GOLDEN_LORA, &len);
  g_autoptr (GError) error = NULL;

  f->lora_path = g_build_filename (f->dir, "tiny-lora.gguf", NULL);
  g_assert_true (g_file_set_contents (f->lora_path, (const char *) data, len, &error));
  g_assert_no_error (error);
}

static void
write_adapter (Fixture *f)
{
  g_autofree char *path = g_build_filename (f->dir, "toy.adapter", NULL);
  g_autoptr (GError) error = NULL;
  const char *text = "module blk.3.attn_output 48 6 1\n"
                     "module blk.0.ssm_out 48 6 2\n"
                     "module slow 48 6 3 300\n"
                     "module glacial 48 6 4 2000\n";

  g_assert_true (g_file_set_contents (path, text, -1, &error));
  g_assert_no_error (error);
  g_assert_true (ts_helora_adapter_sha256 (path, f->adapter_sha256, &error));
}

static void
fixture_set_up (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  HeServerOptions options = {
    .n_threads = 4,
    .max_frame_bytes = MAX_FRAME,
    .max_in_flight = 4,
    .idle_timeout_ms = GPOINTER_TO_UINT (data),
    .open_evaluator = open_evaluator,
  };

  f->dir = g_dir_make_tmp ("he-server-XXXXXX", &error);
  g_assert_no_error (error);
  write_adapter (f);
  copy_golden_adapter (f);
  options.adapters_dir = f->dir;
  f->server = server_fixture_start (&options);
  f->client = ckks_client_new (PRESET, f->lora_path);
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
  g_autofree char *path = g_build_filename (f->dir, "toy.adapter", NULL);

  if (f->server != NULL)
    server_fixture_stop (f->server);
  ckks_client_free (f->client);
  g_unlink (path);
  g_unlink (f->lora_path);
  g_free (f->lora_path);
  g_rmdir (f->dir);
  g_free (f->dir);
}

static TsHeloraFrame *
make_hello (Fixture *f, const char *adapter, const char *params, const char *const *modules)
{
  TsHeloraFrame *frame = ts_helora_frame_new (TS_HELORA_FRAME_HELLO, 0);

  frame->u.hello.params_id = g_strdup (params);
  float_params_sha256 (frame->u.hello.params_sha256);
  frame->u.hello.adapter_id = g_strdup (adapter);
  memcpy (frame->u.hello.adapter_sha256, f->adapter_sha256, TS_HELORA_HASH_SIZE);
  for (guint i = 0; modules[i] != NULL; i++)
    g_ptr_array_add (frame->u.hello.modules, g_strdup (modules[i]));
  return frame;
}

static const char *const default_modules[] = { "blk.3.attn_output", "blk.0.ssm_out", "slow",
                                               "glacial", NULL };

static TsHeloraRemote *
connect_client (Fixture *f)
{
  g_autoptr (GError) error = NULL;
  TsHeloraRemote *remote = ts_helora_remote_connect (server_fixture_ws_url (f->server), 5000, &error);

  g_assert_no_error (error);
  g_assert_nonnull (remote);
  return remote;
}

static TsHeloraRemote *
connect_and_hello (Fixture *f)
{
  TsHeloraRemote *remote = connect_client (f);
  g_autoptr (TsHeloraFrame) hello = make_hello (f, "toy", FLOAT_PARAMS_ID, default_modules);
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraFrame) ack = ts_helora_remote_hello (remote, &hello->u.hello, &error);
  TsHeloraModuleShape *shape;

  g_assert_no_error (error);
  g_assert_cmpuint (ack->u.ack.max_frame_bytes, ==, MAX_FRAME);
  g_assert_cmpuint (ack->u.ack.max_in_flight, ==, 4);
  g_assert_cmpuint (ack->u.ack.modules->len, ==, 4);
  shape = &g_array_index (ack->u.ack.modules, TsHeloraModuleShape, 0);
  g_assert_cmpuint (shape->d_in, ==, D);
  g_assert_cmpuint (shape->rank, ==, R);
  return remote;
}

static GBytes *
random_h (GRand *rng, float *h)
{
  for (guint j = 0; j < D; j++)
    h[j] = (float) g_rand_double_range (rng, -1, 1);
  return g_bytes_new (h, D * sizeof (float));
}

/* Sends h for module @m and checks u = A·h, A from @seed, against a schoolbook sum. */
static void
assert_evaluates_seed (TsHeloraRemote *remote, GRand *rng, guint16 m, guint seed)
{
  float h[D];
  g_autoptr (GPtrArray) cts = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraFrame) result = NULL;
  TsHeloraModuleResult *mr;

  g_ptr_array_add (cts, random_h (rng, h));
  result = ts_helora_remote_evaluate (remote, 5, &m, 1, cts, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (result->u.result.token_index, ==, 5);
  mr = &g_array_index (result->u.result.modules, TsHeloraModuleResult, 0);
  g_assert_cmpuint (mr->module, ==, m);
  g_assert_cmpuint (g_bytes_get_size (g_ptr_array_index (mr->blobs, 0)), ==, R * sizeof (float));
  /* Frame payloads carry no alignment promise: copy before reading floats. */
  g_autofree float *u = g_memdup2 (g_bytes_get_data (g_ptr_array_index (mr->blobs, 0), NULL),
                                   R * sizeof (float));
  for (guint i = 0; i < R; i++)
    {
      double expect = 0;
      for (guint j = 0; j < D; j++)
        expect += (double) float_adapter_weight (seed, D, i, j) * h[j];
      g_assert_cmpfloat_with_epsilon (u[i], expect, 1e-4);
    }
}

/* The toy adapter's module @m has seed m + 1. */
static void
assert_evaluates (TsHeloraRemote *remote, GRand *rng, guint16 m)
{
  assert_evaluates_seed (remote, rng, m, m + 1);
}

static TsHeloraRemote *
connect_ckks (Fixture *f)
{
  return ckks_client_connect (f->client, server_fixture_ws_url (f->server));
}

/* A fresh, well-behaved client with its CKKS key gets correct answers. */
static void
assert_server_healthy (Fixture *f)
{
  g_autoptr (TsHeloraRemote) remote = connect_ckks (f);
  g_autoptr (GRand) rng = g_rand_new_with_seed (42);

  ckks_client_assert_evaluates (f->client, remote, 0, rng);
  ckks_client_assert_evaluates (f->client, remote, 3, rng);
}

/* Sends raw bytes and returns the error code of the answer. */
static guint
raw_error_code (TsHeloraRemote *remote, GBytes *message, guint64 id)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraFrame) reply = NULL;

  ts_helora_remote_send (remote, message, id);
  reply = ts_helora_remote_wait (remote, id, &error);
  g_assert_no_error (error);
  g_assert_cmpint (reply->type, ==, TS_HELORA_FRAME_ERROR);
  g_assert_cmpstr (reply->u.status.text, !=, "");
  return reply->u.status.code;
}

static GBytes *
encode (TsHeloraFrame *frame)
{
  g_autoptr (GError) error = NULL;
  GBytes *bytes = ts_helora_frame_encode (frame, &error);

  g_assert_no_error (error);
  return bytes;
}

static GBytes *
evaluate_message (guint64 id, guint16 module, gsize ct_len)
{
  g_autoptr (TsHeloraFrame) frame = ts_helora_frame_new (TS_HELORA_FRAME_EVALUATE, id);

  g_array_append_val (frame->u.evaluate.modules, module);
  g_ptr_array_add (frame->u.evaluate.ciphertexts, g_bytes_new_take (g_malloc0 (ct_len), ct_len));
  return encode (frame);
}

/* An evaluate frame for @module carrying @cts. */
static GBytes *
ckks_evaluate_message (guint64 id, guint16 module, GPtrArray *cts)
{
  g_autoptr (TsHeloraFrame) frame = ts_helora_frame_new (TS_HELORA_FRAME_EVALUATE, id);

  g_array_append_val (frame->u.evaluate.modules, module);
  for (guint i = 0; i < cts->len; i++)
    g_ptr_array_add (frame->u.evaluate.ciphertexts, g_bytes_ref (g_ptr_array_index (cts, i)));
  return encode (frame);
}

/* Real input ciphertexts of a random h for @module. */
static GPtrArray *
real_cts (CkksClient *client, guint module, GRand *rng)
{
  g_autofree float *h = ckks_client_random_h (client, module, rng);
  double hf;

  return ckks_client_encrypt (client, module, h, &hf);
}

static void
test_healthz_and_metrics (Fixture *f, gconstpointer data)
{
  g_autofree char *health = server_fixture_get (f->server, "/healthz");
  g_autofree char *metrics = NULL;

  g_assert_cmpstr (health, ==, "ok\n");
  assert_server_healthy (f);
  metrics = server_fixture_get (f->server, "/metrics");
  g_assert_nonnull (strstr (metrics, "# TYPE tensafe_he_stage_seconds histogram"));
  g_assert_nonnull (strstr (metrics, "tensafe_he_stage_seconds_count{stage=\"evaluate\"} 2\n"));
  g_assert_nonnull (strstr (metrics, "tensafe_he_requests_total 2\n"));
  g_assert_nonnull (strstr (metrics, "tensafe_he_connected_clients"));
}

static void
test_malformed_frames (Fixture *f, gconstpointer data)
{
  g_autoptr (TsHeloraRemote) remote = connect_ckks (f);
  g_autoptr (GRand) rng = g_rand_new_with_seed (ts_test_seed ());
  g_autoptr (GBytes) garbage = g_bytes_new_static ("\x01\x02\x03", 3);
  g_autoptr (GPtrArray) cts = real_cts (f->client, 0, rng);
  g_autoptr (GBytes) good = ckks_evaluate_message (77, 0, cts);
  gsize len;
  guint8 *bytes = g_bytes_unref_to_data (g_bytes_ref (good), &len);
  g_autoptr (GBytes) bad_magic = NULL, truncated = NULL, trailing = NULL, bad_type = NULL;

  g_assert_cmpuint (raw_error_code (remote, garbage, 0), ==, TS_HELORA_ERROR_TRUNCATED);
  truncated = g_bytes_new (bytes, len - 7);
  g_assert_cmpuint (raw_error_code (remote, truncated, 77), ==, TS_HELORA_ERROR_TRUNCATED);
  bytes[5] = 42;
  bad_type = g_bytes_new (bytes, len);
  g_assert_cmpuint (raw_error_code (remote, bad_type, 77), ==, TS_HELORA_ERROR_UNKNOWN_TYPE);
  bytes[5] = TS_HELORA_FRAME_EVALUATE;
  bytes[0] = 'X';
  bad_magic = g_bytes_new (bytes, len);
  g_assert_cmpuint (raw_error_code (remote, bad_magic, 0), ==, TS_HELORA_ERROR_MALFORMED);
  g_free (bytes);
  /* A well-formed frame of a type only the server sends. */
  {
    g_autoptr (TsHeloraFrame) ack = ts_helora_frame_new (TS_HELORA_FRAME_HELLO_ACK, 78);
    g_autoptr (GBytes) ack_bytes = encode (ack);
    g_assert_cmpuint (raw_error_code (remote, ack_bytes, 78), ==, TS_HELORA_ERROR_UNKNOWN_TYPE);
  }
  /* Random bytes after a valid header: never a crash, always an error. */
  for (int i = 0; i < 20; i++)
    {
      g_autoptr (GBytes) noise = NULL;
      guint8 buf[64];
      guint code;
      memcpy (buf, g_bytes_get_data (good, NULL), TS_HELORA_HEADER_SIZE);
      for (guint k = TS_HELORA_HEADER_SIZE; k < sizeof buf; k++)
        buf[k] = (guint8) g_rand_int (rng);
      buf[16] = sizeof buf - TS_HELORA_HEADER_SIZE, buf[17] = buf[18] = buf[19] = 0;
      noise = g_bytes_new (buf, sizeof buf);
      code = raw_error_code (remote, noise, 77);
      g_assert_true (code == TS_HELORA_ERROR_MALFORMED || code == TS_HELORA_ERROR_TRUNCATED
                     || code == TS_HELORA_ERROR_UNKNOWN_MODULE || code == TS_HELORA_ERROR_BAD_CIPHERTEXT);
    }
  /* The same connection still works, and so does a new one. */
  ckks_client_assert_evaluates (f->client, remote, 1, rng);
  assert_server_healthy (f);
}

/* Returns a copy of @blob cut to @len bytes, or with byte @flip inverted. */
static GBytes *
damaged (GBytes *blob, gsize len, gssize flip)
{
  guint8 *copy = g_memdup2 (g_bytes_get_data (blob, NULL), g_bytes_get_size (blob));

  if (flip >= 0)
    copy[flip] ^= 0xff;
  return g_bytes_new_take (copy, len);
}

static guint
ckks_error_code (TsHeloraRemote *remote, guint64 id, guint16 module, GPtrArray *cts)
{
  g_autoptr (GBytes) msg = ckks_evaluate_message (id, module, cts);

  return raw_error_code (remote, msg, id);
}

static void
test_truncated_ciphertext (Fixture *f, gconstpointer data)
{
  g_autoptr (TsHeloraRemote) remote = connect_ckks (f);
  g_autoptr (GRand) rng = g_rand_new_with_seed (ts_test_seed ());
  g_autoptr (GPtrArray) cts = real_cts (f->client, 0, rng);
  GBytes *ct = g_ptr_array_index (cts, 0);
  gsize len = g_bytes_get_size (ct);
  g_autoptr (GPtrArray) bad = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  CkksClient *other = ckks_client_new ("default", f->lora_path);
  g_autoptr (GPtrArray) other_cts = real_cts (other, 0, rng);

  /* Cut short, cut to a header, one byte changed in the body. */
  g_ptr_array_add (bad, damaged (ct, len - 7, -1));
  g_assert_cmpuint (ckks_error_code (remote, 5, 0, bad), ==, TS_HELORA_ERROR_BAD_CIPHERTEXT);
  g_ptr_array_set_size (bad, 0);
  g_ptr_array_add (bad, damaged (ct, 16, -1));
  g_assert_cmpuint (ckks_error_code (remote, 6, 0, bad), ==, TS_HELORA_ERROR_BAD_CIPHERTEXT);
  g_ptr_array_set_size (bad, 0);
  g_ptr_array_add (bad, damaged (ct, len, len / 2));
  g_assert_cmpuint (ckks_error_code (remote, 7, 0, bad), ==, TS_HELORA_ERROR_BAD_CIPHERTEXT);
  /* Two ciphertexts where the layout has one. */
  g_ptr_array_set_size (bad, 0);
  g_ptr_array_add (bad, g_bytes_ref (ct));
  g_ptr_array_add (bad, g_bytes_ref (ct));
  g_assert_cmpuint (ckks_error_code (remote, 8, 0, bad), ==, TS_HELORA_ERROR_BAD_CIPHERTEXT);
  /* A ciphertext of another parameter set. */
  g_assert_cmpuint (ckks_error_code (remote, 9, 0, other_cts), ==, TS_HELORA_ERROR_BAD_CIPHERTEXT);
  /* A module index past the hello's list. */
  g_assert_cmpuint (ckks_error_code (remote, 10, 4, cts), ==, TS_HELORA_ERROR_UNKNOWN_MODULE);
  ckks_client_free (other);
  ckks_client_assert_evaluates (f->client, remote, 0, rng);
  assert_server_healthy (f);
}

static void
assert_hello_fails (Fixture *f, TsHeloraFrame *hello, int code)
{
  g_autoptr (TsHeloraRemote) remote = connect_client (f);
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraFrame) ack = ts_helora_remote_hello (remote, &hello->u.hello, &error);
  g_autoptr (GBytes) eval = evaluate_message (9, 0, D * sizeof (float));

  g_assert_null (ack);
  g_assert_error (error, TS_HELORA_ERROR, code);
  /* No hello took: evaluate is refused, the connection stays usable. */
  g_assert_cmpuint (raw_error_code (remote, eval, 9), ==, TS_HELORA_ERROR_NOT_READY);
  ts_helora_frame_free (hello);
}

static void
test_hello_refusals (Fixture *f, gconstpointer data)
{
  TsHeloraFrame *hello;

  hello = ckks_client_hello (f->client);
  g_free (hello->u.hello.params_id);
  hello->u.hello.params_id = g_strdup ("no-such-preset");
  assert_hello_fails (f, hello, TS_HELORA_ERROR_PARAMS);
  hello = ckks_client_hello (f->client);
  hello->u.hello.params_sha256[3] ^= 1;     /* same name, other parameters */
  assert_hello_fails (f, hello, TS_HELORA_ERROR_PARAMS);
  hello = ckks_client_hello (f->client);
  g_free (hello->u.hello.adapter_id);
  hello->u.hello.adapter_id = g_strdup ("missing");
  assert_hello_fails (f, hello, TS_HELORA_ERROR_UNKNOWN_ADAPTER);
  hello = ckks_client_hello (f->client);
  g_free (hello->u.hello.adapter_id);
  hello->u.hello.adapter_id = g_strdup ("../tiny-lora");
  assert_hello_fails (f, hello, TS_HELORA_ERROR_UNKNOWN_ADAPTER);
  hello = ckks_client_hello (f->client);
  hello->u.hello.adapter_sha256[0] ^= 1;
  assert_hello_fails (f, hello, TS_HELORA_ERROR_ADAPTER_HASH);
  hello = ckks_client_hello (f->client);
  g_ptr_array_add (hello->u.hello.modules, g_strdup ("blk.9.nope"));
  assert_hello_fails (f, hello, TS_HELORA_ERROR_UNKNOWN_MODULE);
  assert_server_healthy (f);
}

static void
test_oversized_frames (Fixture *f, gconstpointer data)
{
  g_autoptr (TsHeloraRemote) remote = connect_ckks (f);
  g_autoptr (TsHeloraRemote) other = connect_ckks (f);
  g_autoptr (GBytes) big = evaluate_message (11, 0, MAX_FRAME + 100);
  g_autoptr (GBytes) huge = evaluate_message (12, 0, 2 * MAX_FRAME + 100);
  g_autoptr (GRand) rng = g_rand_new_with_seed (2);
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraFrame) reply = NULL;

  /* Over the limit: an error frame, and the connection goes on. */
  g_assert_cmpuint (raw_error_code (remote, big, 11), ==, TS_HELORA_ERROR_TOO_LARGE);
  ckks_client_assert_evaluates (f->client, remote, 0, rng);
  /* Beyond twice the limit the WebSocket layer drops the connection. */
  ts_helora_remote_send (remote, huge, 12);
  reply = ts_helora_remote_wait (remote, 12, &error);
  g_assert_null (reply);
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_CLOSED);
  ckks_client_assert_evaluates (f->client, other, 1, rng);
  assert_server_healthy (f);
}

static void
test_version_mismatch (Fixture *f, gconstpointer data)
{
  g_autoptr (TsHeloraRemote) remote = connect_client (f);
  g_autoptr (GBytes) good = evaluate_message (3, 0, 8);
  gsize len;
  guint8 *bytes = g_bytes_unref_to_data (g_bytes_ref (good), &len);
  g_autoptr (GBytes) v2 = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraFrame) reply = NULL;

  bytes[4] = 2;
  v2 = g_bytes_new_take (bytes, len);
  ts_helora_remote_send (remote, v2, 3);
  reply = ts_helora_remote_wait (remote, 3, &error);
  g_assert_no_error (error);
  g_assert_cmpint (reply->type, ==, TS_HELORA_FRAME_ERROR);
  g_assert_cmpuint (reply->u.status.code, ==, TS_HELORA_ERROR_VERSION);
  g_assert_nonnull (strstr (reply->u.status.text, "version 2"));
  /* Then the server closes. */
  for (int i = 0; i < 1000 && !ts_helora_remote_is_closed (remote); i++)
    g_usleep (10000);
  g_assert_true (ts_helora_remote_is_closed (remote));
  assert_server_healthy (f);
}

static void
test_busy (Fixture *f, gconstpointer data)
{
  g_autoptr (TsHeloraRemote) remote = connect_and_hello (f);
  g_autoptr (GRand) rng = g_rand_new_with_seed (3);
  guint busy = 0, ok = 0;

  /* Max in flight is 4: of 6 two-second requests sent at once, 2 are refused. */
  for (guint64 id = 100; id < 106; id++)
    {
      g_autoptr (GBytes) msg = evaluate_message (id, 3, D * sizeof (float));
      ts_helora_remote_send (remote, msg, id);
    }
  for (guint64 id = 100; id < 106; id++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (TsHeloraFrame) reply = ts_helora_remote_wait (remote, id, &error);
      g_assert_no_error (error);
      if (reply->type == TS_HELORA_FRAME_ERROR)
        {
          g_assert_cmpuint (reply->u.status.code, ==, TS_HELORA_ERROR_BUSY);
          busy++;
        }
      else
        ok++;
    }
  g_assert_cmpuint (ok, ==, 4);
  g_assert_cmpuint (busy, ==, 2);
  assert_evaluates (remote, rng, 0);
}

/* Fifty clients at once, each with its own connection, sharing one key
 * (keys are read-only and thread-safe). */
static gpointer
client_thread (gpointer data)
{
  Fixture *f = data;
  g_autoptr (TsHeloraRemote) remote = connect_ckks (f);
  g_autoptr (GRand) rng = g_rand_new ();

  for (guint i = 0; i < 4; i++)
    ckks_client_assert_evaluates (f->client, remote, i, rng);
  return NULL;
}

static void
test_many_clients (Fixture *f, gconstpointer data)
{
  GThread *threads[50];
  g_autofree char *metrics = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (threads); i++)
    threads[i] = g_thread_new ("client", client_thread, f);
  for (guint i = 0; i < G_N_ELEMENTS (threads); i++)
    g_thread_join (threads[i]);
  metrics = server_fixture_get (f->server, "/metrics");
  g_assert_nonnull (strstr (metrics, "tensafe_he_requests_total 200\n"));
  assert_server_healthy (f);
}

static void
wait_for_clients (Fixture *f, int n)
{
  for (int i = 0; i < 1000 && he_metrics_clients (server_fixture_metrics (f->server)) != n; i++)
    g_usleep (10000);
  g_assert_cmpint (he_metrics_clients (server_fixture_metrics (f->server)), ==, n);
}

static void
test_client_vanishes (Fixture *f, gconstpointer data)
{
  for (int i = 0; i < 3; i++)
    {
      TsHeloraRemote *remote = connect_and_hello (f);
      g_autoptr (GBytes) msg = evaluate_message (50, 2, D * sizeof (float));

      ts_helora_remote_send (remote, msg, 50);
      g_usleep (50000);          /* the slow job is running now */
      ts_helora_remote_free (remote);
    }
  /* Real ciphertexts, the client gone before any answer. */
  for (int i = 0; i < 3; i++)
    {
      TsHeloraRemote *remote = connect_ckks (f);
      g_autoptr (GRand) rng = g_rand_new ();
      for (guint64 id = 1; id <= 3; id++)
        {
          g_autoptr (GPtrArray) cts = real_cts (f->client, 0, rng);
          g_autoptr (GBytes) msg = ckks_evaluate_message (id, 0, cts);
          ts_helora_remote_send (remote, msg, id);
        }
      ts_helora_remote_free (remote);
    }
  wait_for_clients (f, 0);
  assert_server_healthy (f);
  g_usleep (400000);             /* the orphaned jobs finish and are dropped */
  assert_server_healthy (f);
  wait_for_clients (f, 0);
}

/* Each client's results decrypt only under its own key. */
static void
test_swapped_keys (Fixture *f, gconstpointer data)
{
  CkksClient *a = ckks_client_new (PRESET, f->lora_path);
  CkksClient *b = ckks_client_new (PRESET, f->lora_path);
  g_autoptr (TsHeloraRemote) ra = ckks_client_connect (a, server_fixture_ws_url (f->server));
  g_autoptr (TsHeloraRemote) rb = ckks_client_connect (b, server_fixture_ws_url (f->server));
  g_autoptr (GRand) rng = g_rand_new_with_seed (ts_test_seed ());
  guint rank = ((TsHeloraAdapterModule *) g_ptr_array_index (a->modules, 3))->rank;

  for (int who = 0; who < 2; who++)
    {
      CkksClient *self = who ? b : a, *peer = who ? a : b;
      g_autofree float *h = ckks_client_random_h (self, 3, rng);
      g_autofree double *u_own = g_new0 (double, rank);
      g_autofree double *u_peer = g_new0 (double, rank);
      double hf;
      g_autoptr (GPtrArray) cts = ckks_client_encrypt (self, 3, h, &hf);
      g_autoptr (GError) error = NULL;
      guint16 module = 3;
      g_autoptr (TsHeloraFrame) result = ts_helora_remote_evaluate (who ? rb : ra, 1, &module, 1, cts, &error);
      GPtrArray *blobs;

      g_assert_no_error (error);
      blobs = g_array_index (result->u.result.modules, TsHeloraModuleResult, 0).blobs;
      ckks_client_decrypt (self, NULL, 3, blobs, hf, u_own);
      ckks_client_decrypt (peer, NULL, 3, blobs, hf, u_peer);   /* the peer decrypts it */
      g_test_message ("own key error %.3g, other key error %.3g",
                      ckks_client_error (self, 3, h, u_own), ckks_client_error (self, 3, h, u_peer));
      g_assert_cmpfloat (ckks_client_error (self, 3, h, u_own), <, 1e-6);
      g_assert_cmpfloat (ckks_client_error (self, 3, h, u_peer), >, 1.0);
    }
  ckks_client_free (a);
  ckks_client_free (b);
}

static void
capture_cb (GBytes *message, gpointer data)
{
  g_byte_array_append (data, g_bytes_get_data (message, NULL), g_bytes_get_size (message));
}

/* Whether any @window-byte piece of @key (taken every @step bytes) occurs in @sent. */
static gboolean
leaks (const GByteArray *sent, const guint8 *key, gsize key_len, gsize window, gsize step)
{
  for (gsize off = 0; off + window <= key_len; off += step)
    if (memmem (sent->data, sent->len, key + off, window) != NULL)
      return TRUE;
  return FALSE;
}

/* Nothing a client sends (hello, evaluate frames) contains its secret key:
 * neither its ternary coefficients nor its NTT-form residues. */
static void
test_no_secret_key_sent (Fixture *f, gconstpointer data)
{
  g_autoptr (GByteArray) sent = g_byte_array_new ();
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraFrame) hello = ckks_client_hello (f->client);
  g_autoptr (TsHeloraFrame) ack = NULL;
  g_autoptr (GRand) rng = g_rand_new ();
  TsHeloraRemote *remote = ts_helora_remote_connect (server_fixture_ws_url (f->server), 5000, &error);
  const CkksSecretKey *sk = f->client->sk;
  gsize n = ckks_context_ring_degree (f->client->ctx);
  guint limbs = ckks_context_params (f->client->ctx)->n_moduli;

  g_assert_no_error (error);
  ts_helora_remote_set_tap (remote, capture_cb, sent);
  ack = ts_helora_remote_hello (remote, &hello->u.hello, &error);
  g_assert_no_error (error);
  for (guint m = 0; m < 4; m++)
    for (int i = 0; i < 4; i++)
      ckks_client_assert_evaluates (f->client, remote, m, rng);
  ts_helora_remote_free (remote);
  g_assert_cmpuint (sent->len, >, 4 * 4 * n * 8);  /* the ciphertexts went out */
  g_assert_false (leaks (sent, (const guint8 *) sk->coeffs, n, 64, 61));
  g_assert_false (leaks (sent, (const guint8 *) sk->s, (gsize) limbs * n * 8, 16, 104));
  /* The check itself finds a key that was sent. */
  g_byte_array_append (sent, (const guint8 *) sk->s + 8000, 64);
  g_assert_true (leaks (sent, (const guint8 *) sk->s, (gsize) limbs * n * 8, 16, 8));
}

static void
test_idle_timeout (Fixture *f, gconstpointer data)
{
  g_autoptr (TsHeloraRemote) remote = connect_and_hello (f);
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) msg = evaluate_message (8, 0, D * sizeof (float));
  g_autoptr (TsHeloraFrame) reply = NULL;

  for (int i = 0; i < 1000 && !ts_helora_remote_is_closed (remote); i++)
    g_usleep (10000);
  g_assert_true (ts_helora_remote_is_closed (remote));
  ts_helora_remote_send (remote, msg, 8);
  reply = ts_helora_remote_wait (remote, 8, &error);
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_CLOSED);
  g_assert_nonnull (strstr (error->message, "Idle"));
  wait_for_clients (f, 0);
}

static gpointer
cancel_soon (gpointer remote)
{
  g_usleep (20000);
  ts_helora_remote_cancel (remote);
  return NULL;
}

/* The client's errors: nobody listening, no answer in time, a dropped server. */
static void
test_client_errors (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraRemote) nobody = ts_helora_remote_connect ("ws://127.0.0.1:1/", 2000, &error);
  g_autoptr (TsHeloraRemote) remote = connect_and_hello (f);
  g_autoptr (GBytes) slow = evaluate_message (60, 2, D * sizeof (float));
  g_autoptr (TsHeloraFrame) reply = NULL;

  g_assert_null (nobody);
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_CLOSED);
  g_clear_error (&error);
  g_assert_null (ts_helora_remote_connect ("http//nonsense", 2000, &error));
  g_assert_nonnull (error);
  g_clear_error (&error);
  /* The slow module takes 300 ms; wait 50. */
  ts_helora_remote_set_timeout (remote, 50);
  ts_helora_remote_send (remote, slow, 60);
  reply = ts_helora_remote_wait (remote, 60, &error);
  g_assert_null (reply);
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_TIMEOUT);
  g_clear_error (&error);
  /* Cancelled from another thread while waiting. */
  {
    g_autoptr (TsHeloraRemote) other = connect_and_hello (f);
    g_autoptr (GBytes) glacial = evaluate_message (62, 3, D * sizeof (float));
    g_autoptr (GThread) canceller = NULL;
    gint64 t0 = g_get_monotonic_time ();

    ts_helora_remote_send (other, glacial, 62);
    canceller = g_thread_new ("cancel", cancel_soon, other);
    reply = ts_helora_remote_wait (other, 62, &error);
    g_assert_null (reply);
    g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_CLOSED);
    g_assert_nonnull (strstr (error->message, "Cancelled"));
    g_assert_cmpint (g_get_monotonic_time () - t0, <, 1500000);  /* before the 2 s product */
    g_clear_error (&error);
    g_thread_join (g_steal_pointer (&canceller));
  }
  /* The server goes away while a request is in flight. */
  ts_helora_remote_set_timeout (remote, 10000);
  ts_helora_remote_send (remote, slow, 61);
  server_fixture_stop (f->server);
  f->server = NULL;
  reply = ts_helora_remote_wait (remote, 61, &error);
  g_assert_null (reply);
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_CLOSED);
  g_assert_nonnull (strstr (error->message, "shutting down"));
}

/* An engine session on the tiny golden model whose adapter runs on the server. */
typedef struct {
  LmModel *model;
  LmLora *lora;
  LmSession *session;
  TsHeloraSession *helora;
} RemoteGeneration;

static void
remote_generation_start (Fixture *f, RemoteGeneration *g, TsHeloraOptions *options,
                         const gint32 *prompt, gsize n_prompt)
{
  g_autofree char *model_path = ts_test_data_path ("qwen35/tiny-qwen35moe-f32/tiny-qwen35moe-f32.gguf");
  g_autoptr (GError) error = NULL;

  options->mode = TS_HELORA_MODE_REMOTE;
  options->params_preset = PRESET;
  options->adapter_path = f->lora_path;
  options->remote_url = server_fixture_ws_url (f->server);
  g_assert_cmpint (lm_model_load (model_path, &g->model, NULL), ==, LM_OK);
  g_assert_cmpint (lm_lora_load (g->model, f->lora_path, 1.0f, &g->lora, NULL), ==, LM_OK);
  g->helora = ts_helora_session_new (g->lora, options, &error);
  g_assert_no_error (error);
  g_assert_cmpint (lm_session_new (g->model, NULL, &g->session), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora (g->session, g->lora), ==, LM_OK);
  g_assert_true (ts_helora_session_attach (g->helora, g->session, &error));
  g_assert_cmpint (lm_session_prefill (g->session, prompt, n_prompt, NULL), ==, LM_OK);
}

static void
remote_generation_clear (RemoteGeneration *g)
{
  g_clear_pointer (&g->session, lm_session_free);
  g_clear_pointer (&g->helora, ts_helora_session_free);
  g_clear_pointer (&g->lora, lm_lora_free);
  g_clear_pointer (&g->model, lm_model_free);
}

/* Without reconnecting, a drop fails the forward pass with LM_ERR_HOOK,
 * and the HE-LoRA session says why (test-he-reconnect.c: with it). */
static void
test_session_drop (Fixture *f, gconstpointer data)
{
  TsHeloraOptions options = { .timeout_ms = 5000, .reconnect_tries = -1 };
  const gint32 prompt[] = { 999, 716, 260, 198 };
  RemoteGeneration g = { 0 };
  TsHeloraStats stats;
  const GError *why;

  remote_generation_start (f, &g, &options, prompt, G_N_ELEMENTS (prompt));
  ts_helora_session_get_stats (g.helora, &stats);
  g_assert_cmpuint (stats.module_evaluations, ==, 4 * G_N_ELEMENTS (prompt));
  g_assert_cmpuint (stats.bytes_up, >, 0);
  server_fixture_stop (f->server);
  f->server = NULL;
  g_assert_cmpint (lm_session_decode (g.session, 42), ==, LM_ERR_HOOK);
  why = ts_helora_session_last_error (g.helora);
  g_assert_nonnull (why);
  g_assert_true (why->domain == TS_HELORA_ERROR);
  g_assert_cmpint (why->code, ==, TS_HELORA_ERROR_CLOSED);
  remote_generation_clear (&g);
}

/* The real client: a session generating through the server, with a sealed
 * key (so the test knows it), sends no byte run of that key. */
static void
test_session_sends_no_secret_key (Fixture *f, gconstpointer data)
{
  g_autoptr (GByteArray) sent = g_byte_array_new ();
  guint8 seal_key[32] = { 7 }, *sealed = NULL;
  gsize sealed_len = 0;
  TsHeloraOptions options = { .unseal_key = seal_key, .tap = capture_cb, .tap_data = sent };
  const gint32 prompt[] = { 999, 716, 260, 198, 54, 71 };
  const CkksSecretKey *sk = f->client->sk;
  gsize n = ckks_context_ring_degree (f->client->ctx);
  guint limbs = ckks_context_params (f->client->ctx)->n_moduli;
  RemoteGeneration g = { 0 };

  g_assert_cmpint (ckks_secret_key_seal (sk, seal_key, &sealed, &sealed_len), ==, CKKS_OK);
  options.sealed_key = sealed;
  options.sealed_key_len = sealed_len;
  remote_generation_start (f, &g, &options, prompt, G_N_ELEMENTS (prompt));
  for (int k = 0; k < 4; k++)
    g_assert_cmpint (lm_session_decode (g.session, 100 + k), ==, LM_OK);
  remote_generation_clear (&g);
  g_assert_cmpuint (sent->len, >, 40 * n * 8);
  g_assert_false (leaks (sent, (const guint8 *) sk->coeffs, n, 64, 61));
  g_assert_false (leaks (sent, (const guint8 *) sk->s, (gsize) limbs * n * 8, 16, 104));
  g_assert_null (memmem (sent->data, sent->len, sealed, 64));
  free (sealed);
}

/* ---- hot-swap ---- */

#define SWAP_CLIENTS 20

typedef struct {
  Fixture *f;
  guint8 sha[2][TS_HELORA_HASH_SIZE];   /* the versions of "swap" */
  gint swapped;                          /* atomic: the new version is served */
  gint ready;                            /* atomic: clients pinned to the old one */
  gint evaluations;                      /* atomic: answers checked */
} SwapTest;

/* Writes "swap" with A from @seed (atomically: temp file and rename). */
static void
write_swap_adapter (Fixture *f, guint seed, guint8 *sha)
{
  g_autofree char *path = g_build_filename (f->dir, "swap.adapter", NULL);
  g_autofree char *text = g_strdup_printf ("module m 48 6 %u\n", seed);
  g_autoptr (GError) error = NULL;

  g_assert_true (g_file_set_contents (path, text, -1, &error));
  g_assert_no_error (error);
  g_assert_true (ts_helora_adapter_sha256 (path, sha, &error));
}

static void
assert_admin (Fixture *f, const char *method, const char *path, guint status,
              const char *needle)
{
  guint got;
  g_autofree char *body = server_fixture_request (f->server, method, path, &got);

  g_assert_cmpuint (got, ==, status);
  g_assert_nonnull (strstr (body, needle));
}

static TsHeloraRemote *
connect_version (Fixture *f, const guint8 *sha, GError **error)
{
  static const char *const modules[] = { "m", NULL };
  TsHeloraRemote *remote = connect_client (f);
  g_autoptr (TsHeloraFrame) hello = make_hello (f, "swap", FLOAT_PARAMS_ID, modules);
  g_autoptr (TsHeloraFrame) ack = NULL;

  memcpy (hello->u.hello.adapter_sha256, sha, TS_HELORA_HASH_SIZE);
  ack = ts_helora_remote_hello (remote, &hello->u.hello, error);
  if (ack == NULL)
    g_clear_pointer (&remote, ts_helora_remote_free);
  return remote;
}

/* One client: pinned to the old version through the swap, then a new
 * session that gets the new version. Every request must succeed. */
static gpointer
swap_client_thread (gpointer data)
{
  SwapTest *t = data;
  g_autoptr (GRand) rng = g_rand_new ();
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraRemote) old = connect_version (t->f, t->sha[0], &error);
  g_autoptr (TsHeloraRemote) fresh = NULL;
  guint after = 0;

  g_assert_no_error (error);
  g_atomic_int_inc (&t->ready);
  while (after < 5)
    {
      gboolean swapped = g_atomic_int_get (&t->swapped);
      assert_evaluates_seed (old, rng, 0, 11);
      g_atomic_int_inc (&t->evaluations);
      after += swapped;
    }
  fresh = connect_version (t->f, t->sha[1], &error);
  g_assert_no_error (error);
  for (guint i = 0; i < 5; i++)
    {
      assert_evaluates_seed (fresh, rng, 0, 23);
      assert_evaluates_seed (old, rng, 0, 11);
      g_atomic_int_add (&t->evaluations, 2);
    }
  return NULL;
}

static void
test_hot_swap (Fixture *f, gconstpointer data)
{
  SwapTest t = { f };
  GThread *threads[SWAP_CLIENTS];
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraRemote) late = NULL;
  g_autoptr (GRand) rng = g_rand_new_with_seed (3);
  g_autofree char *metrics = NULL;
  g_autofree char *path = g_build_filename (f->dir, "swap.adapter", NULL);

  /* Not there yet: a reload of an unknown name is 404, then a new file loads. */
  assert_admin (f, "POST", "admin/adapters/swap/reload", 404, "No adapter 'swap'");
  write_swap_adapter (f, 11, t.sha[0]);
  assert_admin (f, "POST", "admin/adapters/swap/reload", 200, "\"action\":\"loaded\"");
  assert_admin (f, "GET", "admin/adapters/swap/reload", 405, "error");
  assert_admin (f, "POST", "admin/adapters/swap/unknown", 404, "error");

  for (guint i = 0; i < SWAP_CLIENTS; i++)
    threads[i] = g_thread_new ("swap-client", swap_client_thread, &t);
  while (g_atomic_int_get (&t.ready) < SWAP_CLIENTS || g_atomic_int_get (&t.evaluations) < 40)
    g_usleep (1000);
  /* The file changes first: a hello for the old hash that would open it now
   * is refused rather than served the new weights. */
  write_swap_adapter (f, 23, t.sha[1]);
  assert_admin (f, "POST", "admin/adapters/swap/reload", 200, "\"action\":\"replaced\"");
  g_atomic_int_set (&t.swapped, TRUE);
  for (guint i = 0; i < SWAP_CLIENTS; i++)
    g_thread_join (threads[i]);
  g_assert_cmpint (t.evaluations, >=, SWAP_CLIENTS * 15);

  /* A new session cannot pin the replaced version. */
  late = connect_version (f, t.sha[0], &error);
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_ADAPTER_HASH);
  g_clear_error (&error);
  metrics = server_fixture_get (f->server, "/metrics");
  g_assert_nonnull (strstr (metrics, "tensafe_he_errors_total{code=\"internal\"} 0\n"));
  g_assert_nonnull (strstr (metrics, "tensafe_he_adapter_swaps_total 2\n"));

  /* Unload: connected clients keep their version, new hellos are refused. */
  late = connect_version (f, t.sha[1], &error);
  g_assert_no_error (error);
  assert_admin (f, "DELETE", "admin/adapters/swap", 200, "\"action\":\"unloaded\"");
  assert_evaluates_seed (late, rng, 0, 23);
  g_clear_pointer (&late, ts_helora_remote_free);
  late = connect_version (f, t.sha[1], &error);
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_ADAPTER);
  assert_admin (f, "DELETE", "admin/adapters/swap", 404, "error");
  g_unlink (path);
  assert_server_healthy (f);
}

/* A non-loopback IPv4 address of this host, or NULL. */
static char *
outside_address (void)
{
  g_autoptr (GSocket) probe = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_DATAGRAM,
                                            G_SOCKET_PROTOCOL_UDP, NULL);
  g_autoptr (GInetAddress) remote = g_inet_address_new_from_string ("192.0.2.254");
  g_autoptr (GSocketAddress) to = g_inet_socket_address_new (remote, 9);
  g_autoptr (GSocketAddress) local = NULL;
  GInetAddress *ip;

  /* Connecting a UDP socket sends nothing; it picks the outgoing interface. */
  if (probe == NULL || !g_socket_connect (probe, to, NULL, NULL)
      || (local = g_socket_get_local_address (probe, NULL)) == NULL)
    return NULL;
  ip = g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (local));
  return g_inet_address_get_is_loopback (ip) ? NULL : g_inet_address_to_string (ip);
}

/* The admin routes answer loopback peers only, whatever the listen address. */
static void
test_admin_loopback_only (Fixture *f, gconstpointer data)
{
  HeServerOptions options = { .n_threads = 1, .open_evaluator = open_evaluator,
                              .adapters_dir = f->dir, .max_frame_bytes = MAX_FRAME,
                              .max_in_flight = 4 };
  g_autofree char *ip = outside_address ();
  g_autofree char *outside = NULL;
  g_autoptr (SoupSession) session = soup_session_new ();
  g_autoptr (SoupMessage) msg = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) body = NULL;

  if (ip == NULL)
    {
      g_test_skip ("no non-loopback IPv4 address on this host");
      return;
    }
  server_fixture_stop (f->server);
  f->server = server_fixture_start_on (&options, "0.0.0.0:0");
  outside = g_strdup_printf ("http://%s:%d/admin/adapters/toy", ip,
                             atoi (strrchr (server_fixture_http_url (f->server), ':') + 1));
  msg = soup_message_new ("DELETE", outside);
  body = soup_session_send_and_read (session, msg, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (soup_message_get_status (msg), ==, SOUP_STATUS_FORBIDDEN);
  ts_helora_remote_free (connect_and_hello (f));    /* still served */
  assert_admin (f, "DELETE", "admin/adapters/toy", 200, "\"action\":\"unloaded\"");
}

/* Hellos for @sha until one gives @code (0: success), for up to 5 s. */
static TsHeloraRemote *
wait_for_hello (Fixture *f, const guint8 *sha, int code)
{
  for (int i = 0; i < 500; i++)
    {
      g_autoptr (GError) error = NULL;
      TsHeloraRemote *remote = connect_version (f, sha, &error);

      if (code == 0 && remote != NULL)
        return remote;
      if (code != 0 && g_error_matches (error, TS_HELORA_ERROR, code))
        return NULL;
      g_clear_pointer (&remote, ts_helora_remote_free);
      g_usleep (10000);
    }
  g_assert_not_reached ();
}

/* --watch: writing, replacing and deleting a file hot-swaps its adapter;
 * a client pinned to the first version keeps it throughout. */
static void
test_directory_watch (Fixture *f, gconstpointer data)
{
  HeServerOptions options = { .n_threads = 2, .open_evaluator = open_evaluator,
                              .adapters_dir = f->dir, .watch_adapters = TRUE };
  g_autofree char *path = g_build_filename (f->dir, "swap.adapter", NULL);
  g_autoptr (GRand) rng = g_rand_new_with_seed (5);
  g_autoptr (TsHeloraRemote) pinned = NULL;
  g_autoptr (TsHeloraRemote) fresh = NULL;
  g_autofree char *metrics = NULL;
  guint8 sha[2][TS_HELORA_HASH_SIZE];

  server_fixture_stop (f->server);
  f->server = server_fixture_start (&options);
  write_swap_adapter (f, 11, sha[0]);
  pinned = wait_for_hello (f, sha[0], 0);
  assert_evaluates_seed (pinned, rng, 0, 11);
  write_swap_adapter (f, 23, sha[1]);
  fresh = wait_for_hello (f, sha[1], 0);
  assert_evaluates_seed (fresh, rng, 0, 23);
  assert_evaluates_seed (pinned, rng, 0, 11);
  g_unlink (path);
  wait_for_hello (f, sha[1], TS_HELORA_ERROR_UNKNOWN_ADAPTER);
  assert_evaluates_seed (pinned, rng, 0, 11);
  assert_evaluates_seed (fresh, rng, 0, 23);
  metrics = server_fixture_get (f->server, "/metrics");
  g_assert_nonnull (strstr (metrics, "tensafe_he_adapter_swaps_total 3\n"));
  assert_server_healthy (f);
}

static void
add (const char *path, void (*func) (Fixture *, gconstpointer), guint idle_ms)
{
  g_test_add (path, Fixture, GUINT_TO_POINTER (idle_ms), fixture_set_up, func, fixture_tear_down);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  add ("/he-server/healthz-and-metrics", test_healthz_and_metrics, 0);
  add ("/he-server/malformed-frames", test_malformed_frames, 0);
  add ("/he-server/truncated-ciphertext", test_truncated_ciphertext, 0);
  add ("/he-server/hello-refusals", test_hello_refusals, 0);
  add ("/he-server/oversized-frames", test_oversized_frames, 0);
  add ("/he-server/version-mismatch", test_version_mismatch, 0);
  add ("/he-server/busy", test_busy, 0);
  add ("/he-server/many-clients", test_many_clients, 0);
  add ("/he-server/client-vanishes", test_client_vanishes, 0);
  add ("/he-server/idle-timeout", test_idle_timeout, 200);
  add ("/he-server/swapped-keys", test_swapped_keys, 0);
  add ("/he-server/no-secret-key-sent", test_no_secret_key_sent, 0);
  add ("/he-server/client-errors", test_client_errors, 0);
  add ("/he-server/session-drop", test_session_drop, 0);
  add ("/he-server/session-sends-no-secret-key", test_session_sends_no_secret_key, 0);
  add ("/he-server/hot-swap", test_hot_swap, 0);
  add ("/he-server/directory-watch", test_directory_watch, 0);
  add ("/he-server/admin-loopback-only", test_admin_loopback_only, 0);
  return g_test_run ();
}
