/* ts-helora-session-private.h: internals of the HE-LoRA session shared by its files.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ckks-gpu-helora.h"
#include "ckks-helora.h"
#include "ckks-keys.h"
#include "ts-helora-local.h"
#include "ts-helora-remote.h"
#include "ts-helora-session.h"

G_BEGIN_DECLS

typedef struct {
  const LmLoraModule *lm;
  guint group;
  guint local_index;           /* local mode */
  /* local mode: the evaluator's layout, complex-packed where it can be,
   * which the results decrypt with (owned by the evaluator) */
  const CkksHeloraLayout *local_layout;
  guint16 remote_index;        /* remote mode: position in the hello's list */
  CkksHeloraLayout *layout;    /* the client's view of (d, r) */
  CkksCiphertext **outputs;    /* B results, reused token after token */
  guint n_outputs;
  float *u;                    /* cached rows of u (rank floats each) */
  double *u_row;               /* decrypt scratch */
} SessionModule;

/* Modules of one layer reading the same h: one encryption serves them all. */
typedef struct {
  GArray *members;             /* of guint module index */
  guint d;
  CkksCiphertext **inputs;     /* K ciphertexts of the encrypted h */
  guint n_inputs;
  float *h;                    /* rows of h the cached u belong to */
  guint cached_rows;
  guint capacity_rows;
  /* Local mode: the begin hook's encryption of a decode step's h, which
   * the hook proper evaluates (inputs hold it while begun_valid). */
  float *begun_h;              /* d floats */
  double begun_factor;
  gboolean begun_valid;
  /* GPU backend: the group's modules and the key in device memory (NULL on
   * the CPU); a token's u lands in the members' u_row. */
  CkksGpuHeloraSession *gpu;
  /* The device hook (h in the engine's GPU memory): which call the rows of
   * u in the GPU session belong to, the members that took them since, and
   * whether the last token's stage events are still to be read. */
  const float *dev_h;
  guint32 dev_pos;
  guint dev_rows;
  guint64 dev_served;
  gboolean dev_timings_pending;
} SessionGroup;

struct _TsHeloraSession {
  TsHeloraMode mode;
  gboolean public_key;
  gboolean track_error;
  gboolean thread_clock;
  const LmLora *lora;
  char *preset;                /* CKKS preset name */
  CkksContext *ctx;
  CkksSecretKey *sk;
  CkksPublicKey *pk;
  TsHeloraBackend backend;     /* CPU or CUDA: what runs */
  char *backend_reason;        /* why not the GPU that was asked for, or NULL */
  TsHeloraLocal *local;
  TsHeloraRemote *remote;
  GArray *modules;             /* of SessionModule, indexed like the adapter */
  GPtrArray *groups;           /* of SessionGroup * */
  guint max_in_flight;         /* remote: from the hello-ack */
  gboolean private_mode;       /* remote: the hello asked for the adapter-private mode */
  gboolean complex_packing;    /* remote: some layouts are complex; the hello asks for it */
  GError *last_error;
  /* the engine's calls of the host hook and of the device hook (tests: h
   * reaches the host only through the former) */
  guint64 host_hook_calls, device_hook_calls;
  GMutex stats_lock;
  TsHeloraStats stats;
};

/* ts-helora-session.c: encrypt one row of h for a group; decrypt every
 * member's results into its row of u. */
/* Whether the group's inputs hold the begin hook's encryption of @h (a
 * decode step's one row): then sets @h_factor and counts it. Either way
 * the begun encryption is used up. */
gboolean _ts_helora_session_take_begun (TsHeloraSession *self, SessionGroup *g,
                                        const LmLoraHookCall *call, const float *h,
                                        double *h_factor);
gboolean _ts_helora_session_encrypt_row (TsHeloraSession *self, SessionGroup *g, const float *h,
                                         double *h_factor, GError **error);
gboolean _ts_helora_session_decrypt_row (TsHeloraSession *self, SessionGroup *g, guint row,
                                         double h_factor, GError **error);

/* ts-helora-session.c: (re)makes every module's layout, result and input
 * ciphertexts for @scales, in the complex packing where a layout has it
 * and @complex_packing asks for it (self->complex_packing: whether any
 * layout is complex). */
gboolean _ts_helora_session_build_modules (TsHeloraSession *self, CkksHeloraScales scales,
                                           gboolean complex_packing, GError **error);

/* ts-helora-session.c: adds what one row of @g would send and receive
 * over a wire to the statistics (local mode). */
void _ts_helora_session_count_local_bytes (TsHeloraSession *self, SessionGroup *g);

/* ts-helora-gpu.c: picks the backend (self->backend, backend_reason) and,
 * for the GPU, makes every group's GPU session; FALSE with @error only when
 * the GPU was asked for explicitly and cannot be used. Then every row of a
 * call for a group on the GPU, the stages added to call->timings. */
gboolean _ts_helora_session_choose_backend (TsHeloraSession *self, const TsHeloraOptions *options,
                                            GError **error);
/* Records that the GPU failed (what a device error mid-reply does): every
 * later auto session in this process runs on the CPU, saying why, and an
 * explicit cuda one fails. Exposed for the tests of that path. */
void _ts_helora_gpu_mark_failed (const char *reason);
/* ts-helora-gpu.c: when the engine session and this session both run on
 * the GPU, routes every module through the engine's device hook as well
 * (h stays in device memory); nothing otherwise. */
gboolean _ts_helora_session_gpu_attach (TsHeloraSession *self, LmSession *lm, GError **error);
gboolean _ts_helora_session_gpu_rows (TsHeloraSession *self, SessionGroup *g,
                                      const LmLoraHookCall *call, const float *h,
                                      GError **error);

/* ts-helora-session-remote.c: hello with the adapter's modules; every row of
 * a call for a group, pipelined up to the server's in-flight limit. */
/* ts-helora-session-privacy.c: the hello's adapter-private request
 * (nothing when options->private_mode is off). */
gboolean _ts_helora_session_private_request (TsHeloraSession *self,
                                             const TsHeloraOptions *options,
                                             TsHeloraHello *hello, GError **error);
gboolean _ts_helora_session_hello (TsHeloraSession *self, const TsHeloraOptions *options,
                                   GError **error);
gboolean _ts_helora_session_remote_rows (TsHeloraSession *self, SessionGroup *g,
                                         const LmLoraHookCall *call, const float *h,
                                         GError **error);

G_END_DECLS
