/* ts-helora-session.h: HE-LoRA for an engine session: encrypt h, evaluate, decrypt u.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A TsHeloraSession implements the engine's LoRA hook (engine/include/lm.h) for every
 * module of an adapter: it encrypts h under a CKKS secret key it generates
 * (or unseals from the key vault) and keeps in memory (wiped on free, never
 * serialised, never sent), has an
 * evaluator compute the packed ct × pt products, decrypts and returns
 * u = A·h; the engine applies B and the scale. Modules of a layer that read
 * the same h share one encryption (and one upload). Every hook call adds its
 * stages (encrypt, upload, evaluate, download, decrypt) to the engine's
 * timings and its ciphertext bytes to the session's statistics.
 *
 * Modes: plain (no hook: the engine's exact LoRA), local (evaluator in this
 * process on its own thread pool, holding only the packed adapter) and remote
 * (a tensafe-he-server over ws:// or wss://).
 *
 * Backends of local mode: the CPU (encrypt here, products on the pool,
 * decrypt here) or an NVIDIA GPU (ckks-gpu-helora.h: each group of modules
 * reading one h is one GPU session holding the key's and the group's packed
 * plaintexts in device memory; a token's encrypt, products and decrypt are
 * one call). "auto" takes the GPU when ckks_gpu_available() says it can and
 * falls back to the CPU otherwise, saying why (g_message, once per process,
 * and ts_helora_session_backend_reason()). A GPU that fails mid-reply fails
 * that hook call (the reply ends with the error) and every later auto
 * session in this process uses the CPU. Remote mode (and so the
 * adapter-private mode) ignores the backend: the GPU session holds the key
 * and the plaintexts in one process, which only local mode has.
 *
 * Threads: the hook runs on the engine session's thread; one TsHeloraSession
 * serves one LmSession. Statistics may be read from any thread.
 */
#pragma once

#include <glib.h>

#include "lm.h"
#include "ts-key-pair.h"
#include "ts-helora-proto.h"
#include "ts-helora-remote.h"

G_BEGIN_DECLS

typedef enum {
  TS_HELORA_MODE_PLAIN,
  TS_HELORA_MODE_LOCAL,
  TS_HELORA_MODE_REMOTE,
} TsHeloraMode;

/* Where local mode computes. */
typedef enum {
  TS_HELORA_BACKEND_AUTO,      /* the GPU when one is usable, else the CPU */
  TS_HELORA_BACKEND_CPU,
  TS_HELORA_BACKEND_CUDA,      /* the GPU or an error (TS_HELORA_ERROR_UNAVAILABLE) */
} TsHeloraBackend;

typedef struct {
  TsHeloraMode mode;
  /* Local mode: CPU, GPU or auto (0, the default). Others ignore it. */
  TsHeloraBackend backend;
  const char *remote_url;      /* remote: ws://HOST:PORT[/v1/helora] */
  /* CKKS preset; NULL: "default". "auto": "compact" (N = 4096) when every
   * adapted module reads at most 1024 values, "fast" otherwise; with a
   * key_pair, the key's preset. */
  const char *params_preset;
  gboolean public_key;         /* encrypt with a public key instead of sk */
  guint n_threads;             /* local evaluator threads (0: 1) */
  const char *adapter_path;    /* remote: the adapter file or PEFT folder (id and hash) */
  /* Remote, when the adapter is a stack (ts_adapter_stack()): the stacked
   * adapters' files or folders in stacking order and their weights; the
   * server stacks the same files the same way (adapter_path is then
   * unused). Borrowed for ts_helora_session_new() only. 0: one adapter. */
  const char *const *stacked_paths;
  const float *stacked_weights;
  guint n_stacked;
  gboolean track_error;        /* also compute Δ in plaintext and keep the max error */
  guint timeout_ms;            /* remote: per request (0: 30 s) */
  /* Local mode: time the HE stages by this thread's CPU clock instead of the
   * wall clock (benchmarks on a busy machine; products of several modules
   * running on the pool are then counted only for the caller's share). */
  gboolean thread_clock;
  /* The key vault's unlocked key pair instead of a fresh key (borrowed for
   * the call only: the session keeps its own copy). Its preset is used when
   * params_preset is NULL, and must match otherwise. */
  const TsKeyPair *key_pair;
  /* Or a secret key sealed by ckks_secret_key_seal() for the same preset, and
   * the 32-byte sealing key. Both borrowed for the call only. */
  const guint8 *sealed_key;
  gsize sealed_key_len;
  const guint8 *unseal_key;
  /* Remote: sees every message the session sends (audits and tests). */
  TsHeloraTapFunc tap;
  gpointer tap_data;
  /* Remote over wss://: trust only the CA certificates in this PEM file
   * (a self-signed server certificate); NULL: the system's CAs. */
  const char *remote_ca_file;
  /* Remote: ask for the adapter-private mode (docs/security.md): sends the
   * public key and encrypts on the private layouts (h at 2^72, A at 2^24);
   * the server floods with private_lambda_s bits (0: 40, the default;
   * servers refuse less than their floor, 40 unless configured) and, when
   * private_rho > 0, adds DP noise costing that much zCDP per answer. */
  gboolean private_mode;
  guint private_lambda_s;
  double private_rho;
  /* The public key to send (the he library's serialisation, borrowed for
   * the call); it must belong to the session's secret key, e.g. the key
   * vault's pair. The server charges its privacy budget to this key, so a
   * stable key keeps one budget across sessions; NULL: one is made from the
   * secret key, a new identity each session. */
  GBytes *private_public_key;
  /* Remote: connection tries after a drop (ts_helora_remote_set_reconnect());
   * 0: TS_HELORA_REMOTE_DEFAULT_RECONNECTS, < 0: none (a drop fails the
   * hook call at once). */
  int reconnect_tries;
  /* Remote: results in the real packing. By default a plain (not private)
   * remote session asks for the complex one, half the results and bytes
   * down, and falls back to the real one with a server that predates it. */
  gboolean real_packing;
} TsHeloraOptions;

typedef struct {
  guint64 bytes_up;            /* ciphertext frames sent */
  guint64 bytes_down;          /* result frames received */
  /* Ciphertext bytes each way whatever the mode: remote, the frames above;
   * local, what would cross a wire (serialised inputs up, results down). */
  guint64 ct_bytes_up;
  guint64 ct_bytes_down;
  guint64 module_evaluations;  /* (module, token) pairs evaluated under encryption */
  guint64 encryptions;         /* encryptions of h (shared by modules) */
  guint64 encryptions_begun;   /* of those, made while the engine computed the
                                  modules' own products (local mode, decode) */
  double he_ms;                /* encrypt + upload + evaluate + download + decrypt */
  double max_abs_delta_error;  /* max |Δ_he − Δ_plain| (track_error) */
  double max_abs_delta_plain;  /* max |Δ_plain| (track_error) */
  /* Remote: evaluate answers decrypted into u, one per encryption (each
   * counted where it is applied: a lost answer recomputed counts once). */
  guint64 answers_applied;
  guint reconnects;            /* connections lost and made again */
  guint64 requests_resent;     /* requests sent again after a reconnect */
  double max_recovery_ms;      /* longest drop → new connection acknowledged */
} TsHeloraStats;

typedef struct _TsHeloraSession TsHeloraSession;

/* Parses "plain", "local" or "ws://…"/"wss://…" into @options->mode and
 * remote_url (pointing into @text). */
gboolean ts_helora_mode_parse (const char *text, TsHeloraOptions *options, GError **error);

/* Parses "cpu", "cuda" or "auto". */
gboolean ts_helora_backend_parse (const char *text, TsHeloraBackend *out, GError **error);
/* "auto", "cpu" or "cuda" (static). */
const char *ts_helora_backend_name (TsHeloraBackend backend);

/* Prepares HE-LoRA for @lora (borrowed; must outlive the session): creates
 * the CKKS context and a fresh key, and connects to / builds the evaluator. */
TsHeloraSession *ts_helora_session_new (const LmLora *lora, const TsHeloraOptions *options,
                                        GError **error);
/* Wipes the key and frees. Detach it from the LmSession first (or free that). */
void ts_helora_session_free (TsHeloraSession *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsHeloraSession, ts_helora_session_free)

/* Routes every module of the adapter through the session (after
 * lm_session_set_lora()). Plain mode installs nothing. */
gboolean ts_helora_session_attach (TsHeloraSession *self, LmSession *lm, GError **error);

TsHeloraMode ts_helora_session_mode (TsHeloraSession *self);
/* Distinct inputs h among the adapter's modules (modules of a layer reading
 * the same h share one): the encryptions per token. 0 in plain mode. */
guint ts_helora_session_n_inputs (TsHeloraSession *self);
void ts_helora_session_get_stats (TsHeloraSession *self, TsHeloraStats *out);
void ts_helora_session_reset_stats (TsHeloraSession *self);
/* From any thread: a remote session stops waiting for its evaluator at once
 * (the hook then fails with TS_HELORA_ERROR_CLOSED) and cannot be used again.
 * Local work finishes its current product. */
void ts_helora_session_cancel (TsHeloraSession *self);

/* Remote adapter-private sessions: asks the evaluator what its accountant
 * has charged this session's key so far (a round trip). Errors: not a
 * private remote session (TS_HELORA_ERROR_NOT_READY), or the evaluator does
 * not report it (TS_HELORA_ERROR_UNKNOWN_TYPE), or the connection's. Call it
 * on the thread that runs the hook, between calls. */
gboolean ts_helora_session_privacy_status (TsHeloraSession *self, TsHeloraPrivacyStatus *out,
                                           GError **error);

/* Where the session computes: TS_HELORA_BACKEND_CUDA or _CPU (remote and
 * plain sessions: _CPU, nothing here runs on a GPU). */
TsHeloraBackend ts_helora_session_backend (TsHeloraSession *self);
/* When the GPU was asked for (auto with a usable GPU counts as asked) but
 * the session does not use it: one English sentence why (no usable GPU, a
 * layout the GPU pipeline does not take, public-key encryption, remote
 * mode, an earlier GPU failure); NULL otherwise, and NULL for auto on a
 * computer without an NVIDIA driver (no GPU to explain). Owned by the
 * session. */
const char *ts_helora_session_backend_reason (TsHeloraSession *self);
/* The CKKS preset the session runs (the one "auto" resolved to); NULL in
 * plain mode. */
const char *ts_helora_session_preset (TsHeloraSession *self);

/* Why the last hook call failed (the engine only says LM_ERR_HOOK); NULL if none. */
const GError *ts_helora_session_last_error (TsHeloraSession *self);

/* For front ends: parses @mode_text ("plain", "local", "ws://…"), creates a
 * session for @lora (loaded from @lora_path) with CKKS preset @params_preset
 * (NULL: default) and attaches it to @lm. */
TsHeloraSession *ts_helora_attach (LmSession *lm, const LmLora *lora, const char *lora_path,
                                   const char *mode_text, const char *params_preset,
                                   GError **error);
/* The same, with @options' other fields (params_preset, public_key,
 * remote_ca_file, private_mode, …) for the session; mode and remote_url come from
 * @mode_text, adapter_path from @lora_path. */
TsHeloraSession *ts_helora_attach_with (LmSession *lm, const LmLora *lora, const char *lora_path,
                                        const char *mode_text, const TsHeloraOptions *options,
                                        GError **error);

/* One line for people: mode, encryptions, bytes each way, max Δ error. */
char *ts_helora_session_summary (TsHeloraSession *self);

G_END_DECLS
