/* attn_tune.h: run attn-tune's tuned attention kernels from your own program (C API).
 *
 * Stable and versioned: every struct the caller fills starts with `struct_size` (set it to
 * sizeof the struct; a later version only appends fields), every call returns an attn_tune_status,
 * and attn_tune_last_error() gives the message of the calling thread's last failure. Nothing here
 * prints, exits or synchronizes the device unless asked (attn_tune_synchronize): what is worth a
 * warning (a table read with less checking than usual, a damaged cache entry compiled again) is
 * kept for attn_tune_last_warning().
 *
 * A context serves one device: it holds a kernel cache folder, a tuned table (an export of
 * `attn-tune export` as CSV or JSON, a results CSV of the tuner, the tuned-results database, a
 * bundle, or none) and the
 * kernels compiled or loaded so far. Several threads may call attn_tune_forward on one context. */
#ifndef ATTN_TUNE_H
#define ATTN_TUNE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ATTN_TUNE_BUILDING)
#define ATTN_TUNE_API __attribute__((visibility("default")))
#else
#define ATTN_TUNE_API
#endif

#define ATTN_TUNE_API_VERSION 7 /* bumped when a struct gains a field or a call is added (2: last_warning;
                                  3: the problem's KV-cache fields; 4: its window and softcap;
                                  5: V's own head dim, V's and O's strides; 6: packed variable-length
                                  batches; 7: attn_tune_backward, the choice's variant) */

typedef enum attn_tune_status {
  ATTN_TUNE_OK = 0,
  ATTN_TUNE_ERROR_INVALID_ARGUMENT = 1, /* null pointer, bad size, dtype, layout, stride, alignment */
  ATTN_TUNE_ERROR_UNSUPPORTED = 2,      /* a problem no kernel family can run on this device */
  ATTN_TUNE_ERROR_TABLE = 3,            /* the tuned table cannot be read or is for another device */
  ATTN_TUNE_ERROR_BUNDLE = 4,           /* a corrupt bundle, or one for another architecture */
  ATTN_TUNE_ERROR_NO_DEVICE = 5,        /* no CUDA device (or driver), or the ordinal is out of range */
  ATTN_TUNE_ERROR_COMPILE = 6,          /* NVRTC failed to compile the chosen kernel */
  ATTN_TUNE_ERROR_DEVICE = 7,           /* a CUDA runtime call failed */
  ATTN_TUNE_ERROR_INTERNAL = 8
} attn_tune_status;

typedef enum attn_tune_dtype { ATTN_TUNE_BF16 = 0, ATTN_TUNE_FP16 = 1 } attn_tune_dtype;
/* BHSD: [B, H, N, D]; BSHD: [B, N, H, D]. Only used for strides left at 0. */
typedef enum attn_tune_layout { ATTN_TUNE_BHSD = 0, ATTN_TUNE_BSHD = 1 } attn_tune_layout;

/* Where the launched config came from. */
typedef enum attn_tune_source {
  ATTN_TUNE_SOURCE_TUNED = 0,   /* the table holds this exact shape (a results CSV / bundle of one) */
  ATTN_TUNE_SOURCE_BUCKET = 1,  /* the table's entry for (dtype, head dim, causal, N_q bucket) */
  /* nothing tuned: fa2 m128_n64_w4_s2 up to D=128, m64_n64_w4_s1 above (and where the former does
   * not fit the device's shared memory) */
  ATTN_TUNE_SOURCE_FALLBACK = 2
} attn_tune_source;

/* One attention forward: O = softmax(Q K^T * scale [+ causal mask]) V, LSE = log-sum-exp per row.
 * Q and O are [B, H, N_q, D], K and V [B, kv_heads, N_kv, D] (in the layout's order, or the
 * strides'; V and O have head_dim_v where it is set; a packed batch's: see cu_seqlens_q); LSE is
 * float32 [B, H, N_q], contiguous. Strides are in elements; D is contiguous.
 * Causal masks are aligned bottom-right (key j hidden from query i when j > i + N_kv - N_q). */
typedef struct attn_tune_problem {
  uint32_t struct_size; /* sizeof(attn_tune_problem) */
  int64_t batch, heads, kv_heads, q_len, kv_len, head_dim;
  int32_t dtype;  /* attn_tune_dtype */
  int32_t layout; /* attn_tune_layout */
  int32_t causal; /* 0 or 1 */
  float softmax_scale; /* 0: 1/sqrt(head_dim) */
  /* Q's (and O's) and K's (and V's) batch, head and row strides; all three 0: contiguous in layout. */
  int64_t q_strides[3];
  int64_t kv_strides[3];
  /* Since ATTN_TUNE_API_VERSION 3 (a struct_size of version 2 leaves them NULL and 0), with the names
   * of FlashAttention's flash_attn_with_kvcache. The fa2 family reads them.
   * cache_seqlens: NULL, or int32 [B] on the device: each sequence's K/V length, at most kv_len (then
   * the cache's capacity); 0 gives O = 0 and LSE = -inf; causal is bottom-right per sequence.
   * block_table: NULL, or a paged cache: int32 [B, ceil(kv_len / page_size)] on the device, contiguous,
   * row b naming sequence b's pages in order; K and V are then [num_pages, page_size, kv_heads, D]
   * and kv_strides are their page, head and row strides (all 0: contiguous). page_size: a power of
   * two in [1, 1024]. */
  const int32_t* cache_seqlens;
  const int32_t* block_table;
  int64_t page_size;
  int64_t num_pages;
  /* Since ATTN_TUNE_API_VERSION 4 (an older struct_size leaves them 0: no window, no softcap), with
   * FlashAttention's meanings. The fa2 family reads them.
   * window: 0, or 1 for a sliding window (window_size = (window_left, window_right)): query i sees key
   * j when i + N_kv - N_q - window_left <= j <= i + N_kv - N_q + window_right, -1 = no limit on that
   * side; with causal, window_right is 0 or -1 (causal is a window_right of 0).
   * softcap: 0, or C > 0: scores become C * tanh(score / C) after the scale, before the softmax. */
  int32_t window;
  float softcap;
  int64_t window_left, window_right;
  /* Since ATTN_TUNE_API_VERSION 5 (an older struct_size leaves them 0: V and O have Q's head dim).
   * head_dim_v: 0 (the head dim), or V's and O's head dim dv in [32, 256] (FlashAttention's dv != d,
   * as in DeepSeek's MLA prefill: d 192, dv 128); the fa2 family reads it. V is then
   * [B, kv_heads, N_kv, dv] (a paged cache: [num_pages, page_size, kv_heads, dv]) and O
   * [B, H, N_q, dv]. v_strides and o_strides: V's and O's batch (page), head and row strides; all
   * three 0: contiguous in layout with rows of dv. With head_dim_v 0 they are 0 or equal to
   * kv_strides and q_strides, which V and O then share. */
  int64_t head_dim_v;
  int64_t v_strides[3];
  int64_t o_strides[3];
  /* Since ATTN_TUNE_API_VERSION 6 (an older struct_size leaves them NULL and 0: not packed), with
   * the names of FlashAttention's flash_attn_varlen_func. The fa2 family reads them.
   * cu_seqlens_q: NULL, or a packed variable-length batch: int32 [B + 1] on the device, sequence b's
   * queries being rows [cu_seqlens_q[b], cu_seqlens_q[b + 1]) of Q and O (cu_seqlens_q[0] = 0,
   * non-decreasing, cu_seqlens_q[B] = total_q); cu_seqlens_k the same for the keys of K and V, and
   * required with it. batch is B; q_len and kv_len are max_seqlen_q and max_seqlen_k (each
   * sequence's lengths at most those; a sequence of 0 keys gives O = 0 and LSE = -inf; causal is
   * bottom-right per sequence). Q and O are then [total_q, H, D] (BSHD) or [H, total_q, D] (BHSD),
   * K and V [total_k, kv_heads, D] or [kv_heads, total_k, D]; the LSE is float32 [H, total_q].
   * Their batch strides are 0 (all three strides 0: contiguous in layout); the head and row strides
   * are as before. total_q and total_k: the rows of Q and of K, each > 0 and at most batch x q_len
   * (kv_len); both 0 without cu_seqlens_q. Not with cache_seqlens or block_table. The library reads
   * neither array on the host: their values are the caller's to keep right. */
  const int32_t* cu_seqlens_q;
  const int32_t* cu_seqlens_k;
  int64_t total_q;
  int64_t total_k;
} attn_tune_problem;

/* What attn_tune_forward launched. */
typedef struct attn_tune_choice {
  uint32_t struct_size; /* sizeof(attn_tune_choice) */
  int32_t source;       /* attn_tune_source */
  char family[16];      /* "fa2", "wgmma", "hopper" */
  char config[32];      /* "m128_n64_w4_s2" */
  int32_t from_bundle;  /* 1: the kernel came from the bundle, 0: compiled (or the disk cache) */
  /* Since ATTN_TUNE_API_VERSION 7 (an older struct_size leaves it unwritten): the variant's whole
   * name; a backward's is "kv_m32_n64_w4_s2-q_m64_n64_w4_s2" (config is then its dK/dV kernel's tile,
   * "m32_n64_w4_s2"). */
  char variant[64];
} attn_tune_choice;

typedef struct attn_tune_context_options {
  uint32_t struct_size; /* sizeof(attn_tune_context_options) */
  int32_t device;       /* CUDA device ordinal */
  const char* cache_dir; /* NULL: $ATTN_TUNE_CACHE_DIR, else ~/.cache/attn-tune; "": no disk cache */
  /* NULL or "": no table (the fallback for every shape). Else a path: an export (.csv, .json), a
   * results CSV of attn-tune, the tuned-results database (SQLite, read once and never written:
   * each entry's winner is an exact tuned shape), or a bundle (.attnb, also given by `bundle`). */
  const char* table;
  const char* bundle; /* NULL: none. A bundle of `attn-tune bundle`: cubins loaded without NVRTC */
} attn_tune_context_options;

typedef struct attn_tune_context attn_tune_context;

/* ATTN_TUNE_API_VERSION of the library; the library's version as "0.1.0". */
ATTN_TUNE_API int attn_tune_api_version(void);
ATTN_TUNE_API const char* attn_tune_version_string(void);
/* The message of this thread's last failed call ("" when none). Valid until its next call. */
ATTN_TUNE_API const char* attn_tune_last_error(void);
/* The warnings of this thread's last call, one line each ("" when none; the call itself succeeded
 * or failed as its status says). Valid until its next call. Since ATTN_TUNE_API_VERSION 2. */
ATTN_TUNE_API const char* attn_tune_last_warning(void);
ATTN_TUNE_API const char* attn_tune_status_name(attn_tune_status status);

/* A problem with all fields set to defaults: batch etc. 1, head_dim 64, bf16, bhsd. */
ATTN_TUNE_API attn_tune_problem attn_tune_default_problem(void);

ATTN_TUNE_API attn_tune_status attn_tune_context_create(const attn_tune_context_options* options,
                                                        attn_tune_context** out);
ATTN_TUNE_API void attn_tune_context_destroy(attn_tune_context* ctx);

/* Checks every argument as attn_tune_forward does (no device needed): null or misaligned pointers
 * (16 bytes for q, k, v, o; 4 for lse), sizes, dtype, layout and strides (multiples of 8 elements). */
ATTN_TUNE_API attn_tune_status attn_tune_check(const void* q, const void* k, const void* v, const void* o,
                                               const float* lse, const attn_tune_problem* problem);

/* Picks the config for the problem (see attn_tune_source), compiles it once into the cache (or takes
 * it from the bundle), and launches it on `stream` (a cudaStream_t; NULL: the default stream).
 * `choice` may be NULL. On any error nothing is launched. */
ATTN_TUNE_API attn_tune_status attn_tune_forward(attn_tune_context* ctx, const void* q, const void* k,
                                                 const void* v, void* o, float* lse,
                                                 const attn_tune_problem* problem, void* stream,
                                                 attn_tune_choice* choice);
/* Since ATTN_TUNE_API_VERSION 7. The backward of attn_tune_forward's attention: dq, dk and dv from
 * d_o, given the forward's o and lse (as attn_tune_forward left them). dq and d_o are shaped like q
 * and o, dk and dv like k and v (dK and dV summed over the query heads of each K/V head: GQA, MQA);
 * each of q, k, v, o, d_o, dq, dk, dv contiguous in the problem's layout (its strides all 0, or the
 * contiguous ones) and 16-byte aligned. delta: float32 [B, H, N_q] scratch (the row sums of dO.O),
 * 4-byte aligned (with head_dim_v set, dv and d_o shaped like v and o, rows of head_dim_v; a packed
 * batch's tensors as the forward's, delta then [H, total_q]). The problem takes what the backward
 * takes so far: a window, softcap, head_dim_v and a packed batch (cu_seqlens_q and cu_seqlens_k,
 * run by fa2's variants), not cache_seqlens or block_table, and head dims (both) multiples of 8 up
 * to 256 (ATTN_TUNE_ERROR_UNSUPPORTED, naming it). Deterministic (a rerun gives bit-identical gradients: dQ
 * has a pass of its own) unless the table names an atomic-dQ variant ("-dq_atomic", which adds dQ in
 * fp32 atomics; `attn-tune --pass bwd --deterministic` leaves them out). The variant: the table's pass bwd entry for the exact shape
 * (a results CSV or tuned-results database of `attn-tune --pass bwd`), else the fallback, fa2's
 * kv_m32_n64_w4_s2-q_m64_n64_w4_s2 (kv_m32_n64_w4_s2_x2-q_m64_n32_w4_s1 where D or head_dim_v is above 128; single-stage
 * tiles where their shared memory does not fit the device).
 * Enqueued on `stream`; `choice` may be NULL. On any error nothing is launched. */
ATTN_TUNE_API attn_tune_status attn_tune_backward(attn_tune_context* ctx, const void* q, const void* k,
                                                  const void* v, const void* o, const float* lse, const void* d_o,
                                                  void* dq, void* dk, void* dv, float* delta,
                                                  const attn_tune_problem* problem, void* stream,
                                                  attn_tune_choice* choice);
/* Only the choice, without launching or compiling. */
ATTN_TUNE_API attn_tune_status attn_tune_choose(attn_tune_context* ctx, const attn_tune_problem* problem,
                                                attn_tune_choice* choice);
/* Waits for `stream`'s work; the only call that synchronizes. */
ATTN_TUNE_API attn_tune_status attn_tune_synchronize(attn_tune_context* ctx, void* stream);

/* A tuned table without a device: load it, then ask which config a device would run. */
typedef struct attn_tune_table attn_tune_table;
ATTN_TUNE_API attn_tune_status attn_tune_table_load(const char* path, attn_tune_table** out);
ATTN_TUNE_API void attn_tune_table_destroy(attn_tune_table* table);
/* The device as the table names it: "NVIDIA H200", compute capability 9.0, 132 SMs. Fails with
 * ATTN_TUNE_ERROR_TABLE when the table holds entries but none for this device. */
ATTN_TUNE_API attn_tune_status attn_tune_table_lookup(const attn_tune_table* table, const char* device_name,
                                                      int cc_major, int cc_minor, int sm_count,
                                                      const attn_tune_problem* problem, attn_tune_choice* choice);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_TUNE_H */
