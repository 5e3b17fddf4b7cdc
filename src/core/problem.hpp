#pragma once
// The attention problem attn-tune tunes: every field of it, the one list of those fields that every
// serializer walks (results CSV, JSON, best table, database, export, sweep file, the child
// process's arguments, benchmark names), and the formulas derived from it.
//
// Adding a field: the member below, its entry in problem_fields() (problem.cpp: its text form,
// its parse and validation, its default for files written before it), and its kernel meaning.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

/// Bad user input (CLI value, sweep row, space token). The message names the bad value.
struct invalid_input : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class dtype { bf16, fp16 };
enum class layout { bhsd, bshd };  ///< [B,H,N,D] (default) or [B,N,H,D]
/// Which attention pass is tuned: the forward (O and its LSE), the backward (dQ, dK, dV from dO,
/// O and the LSE), or both (their times summed).
enum class attention_pass { fwd, bwd, fwdbwd };

struct problem {
  int64_t batch = 1;
  int64_t heads = 1;
  int64_t kv_heads = 1;  ///< H % kv_heads == 0; < heads means GQA/MQA
  int64_t q_len = 1;
  int64_t kv_len = 1;  ///< != q_len means cross-attention
  int64_t head_dim = 64;
  bool causal = false;  ///< bottom-right aligned: key j is masked for query i when j > i + kv_len - q_len
  attn::dtype dtype = dtype::bf16;
  attn::layout layout = layout::bhsd;
  /// A paged K/V cache: K and V stored as [pages, page_size, kv_heads, D] with a page table
  /// [B, pages per sequence] (block_table); 0 = contiguous K and V in `layout`. Accepted: 0 or a
  /// power of two in [1, max_page_size].
  int64_t page_size = 0;
  /// Each sequence's own K/V length (FlashAttention's cache_seqlens), each in [0, kv_len], kv_len
  /// being the cache's capacity: "" = all kv_len; "L1/L2/..." = B lengths; "uniform:LO:HI" = B
  /// draws in [LO, HI] from a generator seeded by the text (the same lengths on every run);
  /// "given" = lengths passed at run time (the library's cache_seqlens; the tool cannot make them).
  std::string kv_lens;
  /// A sliding window, FlashAttention's window_size: query i sees key j when
  /// i + kv_len - q_len - window_left <= j <= i + kv_len - q_len + window_right; -1 = no limit on
  /// that side. With causal the right side is the diagonal and window_right is -1 (canonicalize()
  /// turns a right side of 0 into causal).
  int64_t window_left = -1;
  int64_t window_right = -1;
  /// Logit soft-capping (Gemma-2's 50): scores become softcap * tanh(score / softcap) after the
  /// softmax scale, before the softmax; 0 = off.
  double softcap = 0;
  /// V's and O's head dim when it differs from Q's and K's (DeepSeek-V3's prefill: d 192, dv 128);
  /// 0 = head_dim (canonicalize() turns a head_dim_v equal to head_dim into 0). value_dim() reads it.
  int64_t head_dim_v = 0;
  /// A packed variable-length batch (flash_attn_varlen_func): each sequence's own query count, Q
  /// and O packed as [total queries, H, D] (bshd) or [H, total queries, D] (bhsd) with cumulative
  /// offsets (cu_seqlens_q), each length in [0, q_len] (q_len: max_seqlen_q). The forms of kv_lens:
  /// "" = not packed; "L1/L2/..." (B lengths); "uniform:LO:HI"; "given" (the library's cu_seqlens).
  std::string seqlens;
  /// The keys' lengths of a packed batch (cu_seqlens_k), each in [0, kv_len]; "" = seqlens (self-
  /// attention: kv_len = q_len). Only with seqlens.
  std::string kv_seqlens;
  /// The pass tuned (fwd: the forward, as before the field; bwd: the backward; fwdbwd: both, their
  /// times summed). What a backward cannot run yet: backward_refusal().
  attention_pass pass = attention_pass::fwd;

  bool operator==(const problem&) const = default;
};

enum class field_type { integer, flag, text, real };

/// A field's piece of describe()'s text: "B4", "/8" (glued to the piece before it), or nothing.
struct field_tag {
  std::string text;
  bool glued = false;
};

/// The results CSV's schema_version that the first fields date from (the oldest that is read).
inline constexpr int first_field_schema = 3;

/// One field of `problem`, for code that handles every field alike.
struct problem_field {
  const char* name;          ///< its column and key in the CSV, JSON, database and best table
  const char* sweep_column;  ///< its column in a sweep file
  field_type type;
  /// Its place in the export's key (report/export.hpp), by which a runtime looks up a tuned
  /// config: 1, 2, ... among the fields matched exactly (in that order in the exported files and
  /// the header's lookup()), 0 when the export does not match it.
  int export_key;
  /// The field the export matches by its power-of-two bucket (the sequence length).
  bool export_bucket;
  /// Whether a sweep file must give it; one that need not takes, when blank, the value of the
  /// field `follows` names (kv_heads: heads), or else its default.
  bool required;
  int follows;
  std::string (*get)(const problem&);  ///< "4", "1" (a flag), "bf16"
  /// Parses and stores the text get() writes; throws invalid_input naming the text.
  void (*set)(problem&, std::string_view text);
  field_tag (*tag)(const problem&);
  /// The results CSV's schema_version that added the column: files of an older schema lack it,
  /// and their rows take the field's default (a default-constructed problem's). A field added
  /// after first_field_schema may also lack its column in a sweep file or the database.
  int since_schema = first_field_schema;
};

/// The first schema with head_dim_v (dv != d); the exported header's lookup() takes both lengths
/// from it on (report/export.cpp).
inline constexpr int value_dim_schema = 8;
/// The first schema with seqlens and kv_seqlens (packed variable-length batches).
inline constexpr int varlen_schema = 9;
/// The first schema with pass (fwd, bwd, fwdbwd); files, sweep files, databases and problem keys
/// without it read as fwd.
inline constexpr int pass_schema = 10;

/// Whether every file has the field's column (it dates from first_field_schema).
inline bool in_first_schema(const problem_field& f) { return f.since_schema <= first_field_schema; }

inline constexpr size_t problem_field_count = 18;
/// How many of them have an export_key (the export's readers need the count at compile time).
inline constexpr size_t export_key_field_count = 8;
/// Every field, in the order files list them.
const std::array<problem_field, problem_field_count>& problem_fields();

inline constexpr int64_t max_page_size = 1024;
/// The largest batch that kv_lens (per-sequence lengths) may describe.
inline constexpr int64_t max_kv_lens_batch = int64_t{1} << 20;

/// The K/V length of each sequence (kv_lens expanded; a packed batch's kv_seqlens, or its seqlens
/// when that is empty; kv_len for each otherwise). Throws invalid_input naming the text when it
/// does not parse or does not fit the problem, and for "given" (the lengths come with the call).
std::vector<int64_t> kv_lengths(const problem& p);
/// The query count of each sequence (seqlens expanded; q_len for each when it is empty).
std::vector<int64_t> q_lengths(const problem& p);
/// Whether Q, K, V and O are packed variable-length batches (seqlens not empty).
inline bool is_varlen(const problem& p) { return !p.seqlens.empty(); }
/// Offsets of each sequence's first row in a packed tensor: [0, L1, L1 + L2, ...], B + 1 of them.
std::vector<int64_t> cumulative_lengths(const std::vector<int64_t>& lengths);
/// Rows of Q (and O) and of K (and V) as allocated: a packed batch's total lengths (B times the
/// bound with lengths "given"), B * q_len and B * kv_len otherwise.
int64_t q_rows(const problem& p);
int64_t kv_rows(const problem& p);
/// A row block's row space under the decode axes: packed GQA (pack_gqa) puts the query rows of the
/// heads that share a K/V head in one space (q_len x group rows per K/V head), else each head's.
inline int64_t decode_rows(const problem& p, bool pack_gqa) {
  return pack_gqa ? p.q_len * (p.heads / p.kv_heads) : p.q_len;
}
/// The heads those row spaces belong to: the K/V heads when packed, else the query heads.
inline int64_t decode_heads(const problem& p, bool pack_gqa) { return pack_gqa ? p.kv_heads : p.heads; }
/// Whether every sequence has its own length (a kernel reads them: kv_lens is not empty).
inline bool has_kv_lens(const problem& p) { return !p.kv_lens.empty(); }
/// Whether a sliding window limits either side (window_left or window_right not -1).
inline bool has_window(const problem& p) { return p.window_left >= 0 || p.window_right >= 0; }
inline bool has_softcap(const problem& p) { return p.softcap != 0; }
/// V's and O's head dim (dv): head_dim_v, or head_dim when that is 0.
inline int64_t value_dim(const problem& p) { return p.head_dim_v > 0 ? p.head_dim_v : p.head_dim; }
/// Whether V and O have their own head dim (dv != d).
inline bool has_value_dim(const problem& p) { return value_dim(p) != p.head_dim; }
/// The one form of an equal problem that validate() accepts: a window's right side of 0 is the
/// causal mask (causal set, window_right -1), as in FlashAttention; a head_dim_v equal to head_dim
/// is 0.
void canonicalize(problem& p);
/// The (query, key) pairs a mask leaves visible for one sequence of q_len queries and kv_len keys
/// (bottom-right aligned causal and window), exactly; q_len * kv_len without a mask.
double visible_pairs(const problem& p, int64_t kv_len);
/// The same for a sequence of its own query count (a packed batch's).
double visible_pairs(const problem& p, int64_t q_len, int64_t kv_len);
/// Pages per sequence of a paged cache (ceil(kv_len / page_size)); 0 when not paged.
int64_t pages_per_sequence(const problem& p);

/// "batch=4,heads=32,kv_heads=8,...": every field, stable, read back by parse_problem_key.
std::string problem_key(const problem& p);
/// Throws invalid_input naming the key and the bad or missing field; validates the problem. A field
/// from pass_schema on may be left out (a key written before it): it takes its default (pass fwd).
problem parse_problem_key(std::string_view key);
size_t hash_value(const problem& p);

int element_size(dtype t);
std::string to_string(dtype t);  ///< "bf16" / "fp16"
std::string to_string(layout l);  ///< "bhsd" / "bshd"
std::string to_string(attention_pass p);  ///< "fwd" / "bwd" / "fwdbwd"
dtype parse_dtype(const std::string& text);  ///< throws invalid_input naming the text
layout parse_layout(const std::string& text);
attention_pass parse_pass(const std::string& text);  ///< throws invalid_input naming the text
/// Whether the pass includes the backward (bwd or fwdbwd).
inline bool has_backward(const problem& p) { return p.pass != attention_pass::fwd; }

/// Parses "B,H,N,D" into batch, heads (= kv_heads), q_len (= kv_len), head_dim.
problem parse_shape(const std::string& text);
/// Throws invalid_input naming the first bad value: non-positive sizes, H % kv_heads != 0,
/// head_dim not in [32, 256] (fa2 takes every one; the other families refuse one that is not a
/// multiple of 16: problem_refusal), a page size not accepted, kv_lens that do not parse, do not
/// give B lengths or exceed kv_len, a head_dim_v not 0 or in [32, 256], or equal to head_dim (give 0).
void validate(const problem& s);
/// Why a backward (pass bwd or fwdbwd) cannot run this problem yet, naming the values: a sliding
/// window, softcap, dv != d, kv_lens, a paged cache, a packed batch (seqlens), a head dim that is
/// not a multiple of 8. nullopt for a forward problem and for a backward it takes. validate()
/// accepts every pass: the tool asks this where it would run a backward.
std::optional<std::string> backward_refusal(const problem& p);
/// "B4 H32 N4096 D128 bf16 bhsd causal"; shows "/kv" and "xNkv" only when they differ, and the pass
/// only when it is not fwd ("... causal bwd").
std::string describe(const problem& s);

/// 4*B*H*Nq*Nkv*D, halved when causal (FlashAttention/Triton convention); with kv_lens, each
/// sequence's own length in place of Nkv. With a sliding window, 4*H*D times the visible (query,
/// key) pairs of every sequence, counted exactly (no halving: a causal window counts its pairs).
/// With dv != d, 2*(D + dv) in place of 4*D (Q K^T over D, P V over dv).
/// That is the forward's count. The backward counts 2.5 times it (FlashAttention's convention: five
/// matrix products, Q K^T again, dV, dP, dQ and dK, to the forward's two), so pass bwd is 2.5x and
/// fwdbwd 3.5x the forward's count, after every rule above (causal halving, windows, dv, lengths).
double attention_flops(const problem& s);
double tflops(const problem& s, double milliseconds);

int64_t q_bytes(const problem& s);
int64_t o_bytes(const problem& s);   ///< O: q_bytes with the value dim (dv)
int64_t kv_bytes(const problem& s);  ///< K as allocated (kv_len rows per sequence)
int64_t v_bytes(const problem& s);   ///< V as allocated: kv_bytes with the value dim (dv)
/// K as attention reads it (one of K or V when dv = d): each sequence's own length (kv_lens) of
/// rows; with a sliding window, only the keys some query's window reaches (visible_keys).
int64_t kv_read_bytes(const problem& s);
/// V as attention reads it: kv_read_bytes with the value dim (dv).
int64_t v_read_bytes(const problem& s);
/// The keys of a sequence of kv_len keys that at least one query sees (kv_len without a window;
/// with one, e.g. decode's N_q = 1 and a window of LEFT: LEFT + 1 of the cache's keys).
int64_t visible_keys(const problem& p, int64_t kv_len);
int64_t visible_keys(const problem& p, int64_t q_len, int64_t kv_len);
/// Extra device memory a materializing implementation needs: scores in fp32 plus
/// probabilities in the input type, B*H*Nq*Nkv*(4 + element size).
int64_t materialized_extra_bytes(const problem& s);
/// What the fused kernel needs beyond Q, K, V and O: its LSE, B*H*Nq*4.
int64_t lse_bytes(const problem& s);
/// The memory one call of the problem's pass moves at the least. The forward: Q, K and V read, O and
/// its LSE written (q_bytes + o_bytes + kv_read_bytes + v_read_bytes + lse_bytes; K and V have
/// kv_heads heads, each sequence its own length). The backward: Q, K, V, O and dO read, dQ, dK and
/// dV written (dK and dV whole, as allocated: a key no query sees gets a zero gradient), the LSE
/// read, and delta (rowsum(dO * O), 4 bytes a query row and head) written and read again:
/// 2 q_bytes + 2 o_bytes + kv_read_bytes + v_read_bytes + kv_bytes + v_bytes + 3 lse_bytes.
/// fwdbwd: the forward's and the backward's.
int64_t moved_bytes(const problem& s);

/// Element offset of (b, h, i, 0) for a tensor with `h_count` heads and `n` rows in layout l.
int64_t element_offset(layout l, int64_t h_count, int64_t n, int64_t d, int64_t b, int64_t h, int64_t i);
/// Element offset of row i of sequence b, head h, in the problem's Q or O (keys = false) or K or V
/// (keys = true) of rows of d elements: element_offset, or in a packed batch row starts[b] + i of
/// the one packed sequence (starts: cumulative_lengths of that side).
int64_t row_offset(const problem& p, bool keys, int64_t d, int64_t b, int64_t h, int64_t i,
                   const std::vector<int64_t>& starts);

}  // namespace attn

template <>
struct std::hash<attn::problem> {
  size_t operator()(const attn::problem& p) const { return attn::hash_value(p); }
};
