/* lm.h: public API of libtensafe-engine, a Qwen3.5 runtime.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Plain C17 + pthreads; no GLib. Functions return an LmStatus; lm_status_message()
 * turns one into text.
 *
 * Objects and ownership:
 *   LmModel    loaded weights (memory-mapped GGUF). Read-only once loaded: any
 *              number of sessions on any threads may use one model at once.
 *              GPU sessions share one device copy of the weights, uploaded
 *              by the first of them and freed with the last (thread-safe).
 *   LmSession  one sequence: KV cache, recurrent state, scratch buffers, timings.
 *              A session is used by one thread at a time; it borrows its model
 *              (and its LoRA adapter, if any), which must outlive it.
 *   LmLora     a LoRA adapter bound to a model's shapes. Read-only once loaded;
 *              shared by any number of sessions.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "threadpool.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  LM_OK = 0,
  LM_ERR_INVALID_ARGUMENT,
  LM_ERR_NO_MEMORY,
  LM_ERR_IO,             /* a file could not be opened or read */
  LM_ERR_FORMAT,         /* a file is corrupt, truncated or not what it claims */
  LM_ERR_UNSUPPORTED,    /* valid, but an architecture/type this runtime lacks */
  LM_ERR_SHAPE,          /* tensor or adapter shapes do not fit the model */
  LM_ERR_CONTEXT_FULL,   /* the session's context length would be exceeded */
  LM_ERR_HOOK,           /* a LoRA hook callback reported failure */
  LM_ERR_CANCELLED,      /* the session's abort callback asked to stop */
  LM_ERR_DEVICE,         /* the GPU failed or ran out of memory */
} LmStatus;

/* Returns a static, human-readable description of @status. */
const char *lm_status_message (LmStatus status);

/* ------------------------------------------------------------------------ */
/* Timings: the stage names of the HE-LoRA token pipeline (DESIGN.md §2).     */

typedef enum {
  LM_STAGE_FORWARD = 0,  /* base model compute (everything not listed below) */
  LM_STAGE_ENCRYPT,      /* filled by a LoRA hook */
  LM_STAGE_UPLOAD,       /* filled by a LoRA hook */
  LM_STAGE_EVALUATE,     /* filled by a LoRA hook */
  LM_STAGE_DOWNLOAD,     /* filled by a LoRA hook */
  LM_STAGE_DECRYPT,      /* filled by a LoRA hook */
  LM_STAGE_LORA_B,       /* the engine's B·u and scale (and A·h for built-in LoRA) */
  LM_STAGE_LM_HEAD,      /* final norm + output projection */
  LM_STAGE_SAMPLE,       /* filled by the caller around its sampler */
  LM_N_STAGES
} LmStage;

typedef struct {
  double ms[LM_N_STAGES];  /* milliseconds spent per stage */
  uint32_t n_tokens;       /* tokens these timings cover */
} LmTimings;

/* "forward", "encrypt", "upload", "evaluate", "download", "decrypt", "lora_b",
 * "lm_head", "sample"; NULL for an out-of-range stage. */
const char *lm_stage_name (LmStage stage);
/* Adds @ms to @stage of @timings (NULL-safe). */
void lm_timings_add (LmTimings *timings, LmStage stage, double ms);
/* Monotonic clock in milliseconds, for callers timing their own stages. */
double lm_time_ms (void);

/* ------------------------------------------------------------------------ */
/* Models                                                                     */

/* The architectures the runtime runs, by their GGUF general.architecture.
 * One forward pass serves all of them: what differs is in LmModelInfo's
 * feature flags below, not in a copy of the layer loop per architecture. */
typedef enum {
  LM_ARCH_QWEN35 = 0,     /* "qwen35": hybrid DeltaNet + gated attention, dense SwiGLU */
  LM_ARCH_QWEN35MOE = 1,  /* "qwen35moe": the same with routed experts + shared expert */
  LM_ARCH_QWEN2 = 2,      /* "qwen2": Qwen2 / Qwen2.5, attention with q/k/v bias */
  LM_ARCH_QWEN3 = 3,      /* "qwen3": attention with per-head q/k RMSNorm, no bias */
  LM_ARCH_QWEN3MOE = 4,   /* "qwen3moe": qwen3 attention, routed experts, no shared expert */
  LM_N_ARCHS
} LmArch;

/* The GGUF name of @arch ("qwen2", "qwen35moe", ...); "unknown" out of range. */
const char *lm_arch_name (LmArch arch);

#define LM_MAX_LAYERS 256

/* Hyper-parameters as read from the GGUF (FORMAT.md §1). */
typedef struct {
  LmArch arch;
  uint32_t n_vocab, n_embd;
  uint32_t n_layer;            /* main layers (MTP blocks excluded) */
  uint32_t n_ctx_train;
  uint32_t n_head, n_head_kv, head_dim, n_rot;
  float rope_base;
  int32_t rope_sections[4];
  float rms_eps;
  uint32_t ssm_conv_kernel;    /* K */
  uint32_t ssm_state;          /* S: linear-attention head dim */
  uint32_t ssm_groups;         /* Hk: key heads */
  uint32_t ssm_heads;          /* Hv: value heads */
  uint32_t n_ff;               /* dense FFN width (dense architectures) */
  uint32_t n_expert, n_expert_used, n_ff_exp;  /* MoE; 0 when dense */
  uint32_t n_ff_shexp;         /* shared expert width; 0 when there is none */
  bool tied_embeddings;        /* LM head is token_embd.weight */
  /* What the layers contain (set from the architecture, checked against the
   * tensors when the model loads). */
  bool hybrid;                 /* some layers are Gated DeltaNet (is_linear) */
  bool attn_gated;             /* attn_q also yields a sigmoid output gate per head */
  bool attn_qk_norm;           /* per-head RMSNorm of q and k before RoPE */
  bool attn_qkv_bias;          /* q, k and v projections add a bias */
  bool is_moe;                 /* routed experts instead of a dense FFN */
  bool is_linear[LM_MAX_LAYERS];  /* layer il is Gated DeltaNet (else full attention) */
} LmModelInfo;

typedef struct LmModel LmModel;

/* Loads the GGUF model at @path, checks every tensor the forward pass uses
 * (names, shapes, types). On failure returns a status and, when @error_out is
 * non-NULL, a newly allocated message naming what is wrong (free() it). */
LmStatus lm_model_load (const char *path, LmModel **out, char **error_out);
void lm_model_free (LmModel *model);
/* Borrowed; valid while the model lives. */
const LmModelInfo *lm_model_info (const LmModel *model);
/* The underlying GGUF file (for the tokenizer); borrowed. */
const struct GgufFile *lm_model_gguf (const LmModel *model);
/* Bytes of weight data the model maps. */
size_t lm_model_weight_bytes (const LmModel *model);
/* Weight bytes one decode step reads (every dense weight, the LM head, and
 * n_expert_used of n_expert experts per MoE layer): with the memory bandwidth
 * this gives the decode speed's upper bound. */
size_t lm_model_decode_bytes (const LmModel *model);

/* ------------------------------------------------------------------------ */
/* Adapted modules: the 2-D projections a LoRA may target.                    */

typedef enum {
  LM_MODULE_ATTN_Q = 0,   /* blk.N.attn_q.weight        self_attn.q_proj */
  LM_MODULE_ATTN_K,       /* blk.N.attn_k.weight        self_attn.k_proj */
  LM_MODULE_ATTN_V,       /* blk.N.attn_v.weight        self_attn.v_proj */
  LM_MODULE_ATTN_OUTPUT,  /* blk.N.attn_output.weight   self_attn.o_proj */
  LM_MODULE_ATTN_QKV,     /* blk.N.attn_qkv.weight      linear_attn.in_proj_qkv */
  LM_MODULE_ATTN_GATE,    /* blk.N.attn_gate.weight     linear_attn.in_proj_z */
  LM_MODULE_SSM_ALPHA,    /* blk.N.ssm_alpha.weight     linear_attn.in_proj_a */
  LM_MODULE_SSM_BETA,     /* blk.N.ssm_beta.weight      linear_attn.in_proj_b */
  LM_MODULE_SSM_OUT,      /* blk.N.ssm_out.weight       linear_attn.out_proj */
  LM_MODULE_FFN_GATE,     /* blk.N.ffn_gate.weight      mlp.gate_proj */
  LM_MODULE_FFN_UP,       /* blk.N.ffn_up.weight        mlp.up_proj */
  LM_MODULE_FFN_DOWN,     /* blk.N.ffn_down.weight      mlp.down_proj */
  LM_MODULE_FFN_GATE_SHEXP, /* blk.N.ffn_gate_shexp.weight mlp.shared_expert.gate_proj */
  LM_MODULE_FFN_UP_SHEXP,   /* blk.N.ffn_up_shexp.weight   mlp.shared_expert.up_proj */
  LM_MODULE_FFN_DOWN_SHEXP, /* blk.N.ffn_down_shexp.weight mlp.shared_expert.down_proj */
  LM_N_MODULE_KINDS
} LmModuleKind;

/* "attn_q", "attn_output", "ssm_out", ... (the GGUF tensor stem). */
const char *lm_module_kind_name (LmModuleKind kind);

/* ------------------------------------------------------------------------ */
/* LoRA adapters                                                              */

typedef struct LmLora LmLora;

/* One adapted module, y = W·h + scale·B·(A·h). A and B are f32, row-major,
 * owned by the adapter (valid while it lives): this is what an HE-LoRA layer
 * reads to build its packed plaintexts. */
typedef struct {
  const char *name;      /* GGUF base tensor name, "blk.3.attn_output.weight" */
  LmModuleKind kind;
  uint32_t layer;
  uint32_t d_in;         /* d: length of h */
  uint32_t d_out;        /* length of the module output */
  uint32_t rank;         /* r: length of u */
  float scale;           /* alpha / r, times the user scale given at load */
  const float *a;        /* A: rank x d_in (in GGUF order: PEFT columns already permuted) */
  const float *b;        /* B: d_out x rank */
} LmLoraModule;

/* Loads an adapter for @model: a llama.cpp GGUF LoRA file, or a Hugging Face
 * PEFT directory (adapter_config.json + adapter_model.safetensors). @path is a
 * directory -> PEFT, a file -> GGUF; a directory without adapter_config.json
 * that holds exactly one *.gguf file (a GGUF adapter installed from the
 * marketplace) -> that file. The effective factor of every module is
 * @user_scale * alpha / r (alpha absent or 0 -> @user_scale). Unknown module
 * names or shapes that do not fit the model are errors (message in @error_out,
 * free() it). */
LmStatus lm_lora_load (const LmModel *model, const char *path, float user_scale,
                       LmLora **out, char **error_out);
LmStatus lm_lora_load_gguf (const LmModel *model, const char *path, float user_scale,
                            LmLora **out, char **error_out);
LmStatus lm_lora_load_peft (const LmModel *model, const char *dir, float user_scale,
                            LmLora **out, char **error_out);
void lm_lora_free (LmLora *lora);
size_t lm_lora_n_modules (const LmLora *lora);
/* Borrowed; NULL when @index is out of range. */
const LmLoraModule *lm_lora_module (const LmLora *lora, size_t index);
/* Index of the module adapting GGUF tensor @name, or -1. */
int64_t lm_lora_find (const LmLora *lora, const char *name);

/* Stacks @n adapters (loaded for the same model) with weights @weights into
 * one new adapter: every module of any input, and for a module several adapt,
 * Δ = Σ_k weights[k]·scale_k·B_k·A_k·h as one module of rank Σ r_k (A rows
 * concatenated, factors folded into B, scale 1). Inputs are only read;
 * lm_lora_free() the result. */
LmStatus lm_lora_stack (const LmLora *const *loras, const float *weights, size_t n,
                        LmLora **out, char **error_out);
/* A synthetic adapter (tests, benchmarks): modules named by the NULL-ended
 * @stems ("blk.3.attn_q", ...), rank @rank, A and B uniform in ±@amplitude,
 * scale 1. The values depend only on (@seed, module name), so a module has
 * the same A and B in every adapter made with the same seed. */
LmStatus lm_lora_synth (const LmModel *model, const char *const *stems, uint32_t rank,
                        float amplitude, uint64_t seed, LmLora **out, char **error_out);

/* ------------------------------------------------------------------------ */
/* The LoRA hook: external evaluation of u = A·h (the HE-LoRA path).          */

/* What the engine tells the hook about one call. */
typedef struct {
  size_t module_index;   /* index in the session's adapter (lm_lora_module()) */
  const LmLoraModule *module;  /* name, kind, layer, d_in, rank, A, B */
  uint32_t pos;          /* position of the first token of this call */
  uint32_t n_tokens;     /* rows of h and u (1 in decode, more in prefill) */
  LmTimings *timings;    /* the session's current timings: add encrypt,
                            upload, evaluate, download, decrypt here */
  LmThreadPool *pool;    /* the session's thread pool, which the forward
                            leaves idle during the call: the hook may spread
                            its work over it with lm_thread_pool_run() (not
                            from inside such a job); NULL: one thread */
} LmLoraHookCall;

/* Called on the session's thread with h = the module input, n_tokens rows of
 * module->d_in floats; must write u = A·h, n_tokens rows of module->rank floats.
 * The engine then adds module->scale · B·u to the module output. Return LM_OK,
 * or any other status to abort the forward call (it then returns LM_ERR_HOOK and
 * the session must be reset or rewound). @h is valid only during the call.
 * On the GPU backend, for a module without a device hook (below), h is
 * copied to host memory for the hook and u back to the device after it, and
 * a decode step with a hook set runs without the CUDA graph. */
typedef LmStatus (*LmLoraHookFunc) (const LmLoraHookCall *call, const float *h,
                                    float *u, void *user_data);

/* The begin hook: called, where set, with a decode step's h as soon as it
 * is ready and before the module's own product W·h, which the session's
 * other threads compute meanwhile; the hook proper is called after that
 * product as always, with the same h. For the part of the work that needs
 * only h (encrypting it), so that it overlaps the product. call->pool is
 * NULL (the pool is busy) and call->n_tokens 1. Modules that read the same
 * h in one layer (q, k, v) are begun one after another, then multiplied.
 * Only decode steps computed on the CPU with more than one thread call it
 * (not the layers a GPU computes); everywhere else the hook proper runs
 * alone. Its wall time counts as the
 * hook's, not the forward's. Return LM_OK, or any other status to abort
 * the forward call as the hook can. */
typedef LmStatus (*LmLoraBeginFunc) (const LmLoraHookCall *call, const float *h,
                                     void *user_data);

/* The device hook: the same contract, but @h_dev and @u_dev are device
 * memory of the session's GPU (n_tokens rows of d_in and of rank floats)
 * and @stream is the session's cudaStream_t: the hook enqueues its work so
 * that u_dev is written, in stream order, before anything the engine
 * enqueues on @stream after the call (e.g. record an event on @stream, work
 * on a stream of its own that waits for it, and make @stream wait for the
 * end). The engine does not wait for the device around the call: h never
 * reaches the host. Only a GPU session calls it, for the modules of the
 * layers it runs on the GPU; everywhere else (the CPU backend, CPU layers
 * of a partial offload) the host hook of the same module is called, or the
 * built-in A·h when it has none: set both. A decode step with a device hook
 * set runs without the CUDA graph too (a hook may need fresh host input per
 * token, such as encryption randomness, that a replayed graph would not
 * give it). */
typedef LmStatus (*LmLoraDeviceHookFunc) (const LmLoraHookCall *call, const float *h_dev,
                                          float *u_dev, void *stream, void *user_data);

/* ------------------------------------------------------------------------ */
/* Sessions                                                                   */

typedef struct LmSession LmSession;

/* Where a session computes. */
typedef enum {
  LM_BACKEND_CPU = 0,  /* the default: the CPU kernels on the session's pool */
  LM_BACKEND_CUDA,     /* an NVIDIA GPU: creating the session fails (LM_ERR_DEVICE,
                          with a message) if this build has no CUDA kernels, no
                          usable GPU is present or the weights do not fit */
  LM_BACKEND_AUTO,     /* the GPU when it can be used, otherwise the CPU; the
                          reason for falling back is lm_session_backend_note() */
} LmBackend;

/* "cpu", "cuda" or "auto" -> the backend; false for any other name. */
bool lm_backend_from_name (const char *name, LmBackend *out);

typedef struct {
  uint32_t n_ctx;      /* max positions (0: the training context, at most 4096);
                          the K/V cache is allocated for all of them */
  uint32_t n_batch;    /* max tokens per internal prefill step (0: 64) */
  uint32_t n_threads;  /* worker threads of the session's own pool (0: all online cores) */
  /* Optional pool shared with other sessions (borrowed; must outlive the
   * session). Jobs of sessions sharing a pool run one after another, which
   * avoids oversubscribing the cores when several sessions generate at once.
   * NULL: the session starts its own pool of n_threads. */
  struct LmThreadPool *pool;
  /* Quantized weights are multiplied with 8-bit activation blocks, as llama.cpp
   * does (fast; the default). true keeps activations in f32 against the
   * decoded weights (slower; equals an f32 model with the dequantized weights). */
  bool exact_activations;
  /* The compute backend (LM_BACKEND_CPU when zero-initialised). On the GPU
   * activations are always f32 against the dequantised weights, so
   * exact_activations has no effect there, and the LM head's time is part
   * of the forward stage. The GPU is device 0. */
  LmBackend backend;
  /* GPU backend: how many layers, from the first, run on the GPU (0 or at
   * least n_layer: all of them, and the LM head). With fewer, the embedding
   * and the first gpu_layers layers run on the GPU and the rest of the layers
   * and the LM head on the CPU: the residual stream crosses to the host once
   * per forward call. For GPUs too small for the whole model. */
  uint32_t gpu_layers;
} LmSessionParams;

/* Creates a session on @model; every buffer (KV cache, recurrent state,
 * scratch) is allocated here, none per token. @params may be NULL. */
LmStatus lm_session_new (const LmModel *model, const LmSessionParams *params,
                         LmSession **out);
void lm_session_free (LmSession *session);
/* lm_session_new() with a message: on failure, if @error_out is non-NULL, it
 * receives a newly allocated sentence saying what went wrong (free() it), e.g.
 * why an explicit LM_BACKEND_CUDA request cannot be met. */
LmStatus lm_session_new_full (const LmModel *model, const LmSessionParams *params,
                              LmSession **out, char **error_out);

/* What the session computes on: "cpu" or "cuda" (static string). */
const char *lm_session_backend_name (const LmSession *session);
/* For an LM_BACKEND_AUTO session that runs on the CPU: one sentence saying
 * why the GPU is not used (no CUDA in the build, no GPU, not enough GPU
 * memory, ...), for the caller to log once; NULL otherwise. Borrowed. */
const char *lm_session_backend_note (const LmSession *session);
/* Layers that run on the GPU (0 on the CPU backend). */
uint32_t lm_session_gpu_layers (const LmSession *session);
/* GPU memory in bytes: the model's weights on the device (shared by every
 * session of the model) and this session's own (caches, state, scratch).
 * Both 0 on the CPU backend. */
void lm_session_gpu_memory (const LmSession *session, size_t *model_bytes,
                            size_t *session_bytes);

/* The model the session runs (borrowed). */
const LmModel *lm_session_model (const LmSession *session);
/* Bytes this session holds (state + cache + scratch): bounded by n_ctx. */
size_t lm_session_memory_bytes (const LmSession *session);
uint32_t lm_session_n_ctx (const LmSession *session);
/* Tokens in the sequence so far (= the next position). */
uint32_t lm_session_pos (const LmSession *session);

/* Attaches @lora (NULL detaches) to the session; applied from the next call
 * (usually right after creation or lm_session_reset(): tokens already fed keep
 * the state they produced). @lora must have been loaded for this session's
 * model (LM_ERR_INVALID_ARGUMENT otherwise). Clears the hooks. */
LmStatus lm_session_set_lora (LmSession *session, const LmLora *lora);
/* Routes module @module_index of the attached adapter through @hook (NULL:
 * back to the built-in A·h); LM_LORA_ALL_MODULES sets every module. Set after
 * lm_session_set_lora() (attaching an adapter clears the hooks). */
#define LM_LORA_ALL_MODULES SIZE_MAX
LmStatus lm_session_set_lora_hook (LmSession *session, size_t module_index,
                                   LmLoraHookFunc hook, void *user_data);
/* Sets the begin hook of module @module_index (or LM_LORA_ALL_MODULES), NULL
 * for none; it is called only for modules that also have a hook. Set after
 * lm_session_set_lora(), which clears it. */
LmStatus lm_session_set_lora_begin_hook (LmSession *session, size_t module_index,
                                         LmLoraBeginFunc begin, void *user_data);
/* Routes module @module_index (or LM_LORA_ALL_MODULES) of the attached
 * adapter, where a GPU session computes it, through the device hook @hook
 * (NULL: back to the host hook or the built-in A·h). Set after
 * lm_session_set_lora(); independent of the host hook. */
LmStatus lm_session_set_lora_device_hook (LmSession *session, size_t module_index,
                                          LmLoraDeviceHookFunc hook, void *user_data);

/* Asked before every prefill step of up to n_batch tokens; returning true
 * stops the prefill with LM_ERR_CANCELLED, the steps already done kept (the
 * session stays usable at lm_session_pos()). Called on the session's thread;
 * may be NULL. */
typedef bool (*LmAbortFunc) (void *user_data);
void lm_session_set_abort (LmSession *session, LmAbortFunc abort_fn, void *user_data);

/* Feeds @n tokens in batches. If @logits_all is non-NULL it receives n rows of
 * n_vocab logits (row i after token i); the logits after the last token are
 * always available from lm_session_logits(). */
LmStatus lm_session_prefill (LmSession *session, const int32_t *tokens, size_t n,
                             float *logits_all);
/* Feeds @n tokens like lm_session_prefill() and writes to @out (n_embd
 * floats) the mean over them of the final-norm hidden state (the LM head's
 * input): the base model's own embedding of a text, used for routing. */
LmStatus lm_session_mean_hidden (LmSession *session, const int32_t *tokens, size_t n,
                                 float *out);
/* Feeds one token (the decode step).
 * If a prefill or decode fails inside the layers (LM_ERR_HOOK), the recurrent
 * state is half-updated: later calls return LM_ERR_INVALID_ARGUMENT until
 * lm_session_rewind() (to any kept position, lm_session_pos() included) or
 * lm_session_reset(). */
LmStatus lm_session_decode (LmSession *session, int32_t token);
/* Logits (n_vocab) after the last token fed; borrowed until the next call. */
const float *lm_session_logits (const LmSession *session);
/* Keeps only the first @pos tokens. The Gated DeltaNet state cannot be
 * un-applied, so the kept tokens are replayed from the session's own history
 * (one batched prefill; LoRA hooks are called again for them). */
LmStatus lm_session_rewind (LmSession *session, uint32_t pos);
/* Forgets the sequence (keeps the adapter and hooks). */
void lm_session_reset (LmSession *session);

/* Timings of the last prefill/decode call; the caller may add its own stages
 * (sample) to it. Borrowed. */
LmTimings *lm_session_timings (LmSession *session);

#ifdef __cplusplus
}
#endif
