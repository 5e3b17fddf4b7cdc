#pragma once
// Tuned configs as a lookup table for a runtime's kernel dispatcher: keyed by device (name,
// compute capability, SM count), the problem's export-key fields (core/problem.hpp: dtype, head
// dim, causal, the window, softcap, dv, the pass) and the sequence-length buckets, with a
// documented fallback for anything not tuned.
// Formats: csv, json, and a self-contained C++ header with lookup().
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/best_table.hpp"

namespace attn {

/// The fields of the export's key, in its order (problem_field::export_key).
std::vector<const problem_field*> export_key_fields();
/// The field matched by its bucket (the sequence length, q_len).
const problem_field& export_bucket_field();

struct export_entry {
  std::string device;
  int cc_major = 0, cc_minor = 0, sm_count = 0;
  problem key;  ///< its export_key_fields() are the entry's; the other fields are defaults
  int64_t seq_min = 0, seq_max = 0;  ///< bucket (seq_min, seq_max] of the bucket field: powers of two
  /// And of kv_len (decode: a few queries against a long cache), from the same powers of two; an
  /// export written before it matches every kv_len.
  int64_t kv_min = 0, kv_max = INT64_MAX;
  std::string family = "fa2";  ///< the kernel family the config belongs to (fa2, wgmma, mfma)
  tile_config config;  ///< a backward's: its dK/dV kernel's tile
  double tflops = 0;
  int shapes = 0;  ///< tuned shapes that fell in this key
  /// A pass bwd entry's backward variant (the "variant" column); none in an export from before it.
  std::optional<backward_config> backward;
};

/// The power-of-two bucket holding n: (bucket / 2, bucket].
int64_t seq_bucket(int64_t n);
/// Whether e's key fields are p's and p's bucket field and kv_len lie in e's buckets (the device aside).
bool export_key_matches(const export_entry& e, const problem& p);
/// "bf16,128,1": the key fields' text, to tell two keys apart.
std::string export_key_text(const problem& p);
/// Fallback for shapes not tuned: an fa2 config valid for every head dim fa2 supports on sm_80+.
tile_config fallback_config(int head_dim);

/// The entry's whole variant: a backward's (kv_m32_n64_w4_s2-q_m64_n64_w4_s2), else the config's name.
std::string variant_name(const export_entry& e);

/// One entry per key. When several tuned shapes share a key (other B or H), the (family, config)
/// that won most of them is kept, ties to the one with the higher TFLOPS.
std::vector<export_entry> export_entries(const std::vector<best_row>& rows);

std::string export_csv(const std::vector<export_entry>& entries);
std::string export_json(const std::vector<export_entry>& entries);
/// Reads export_csv's text back (`path` names it in errors); an export without the knob column
/// (before the family axis) reads as knob 0. Throws invalid_input naming the file, line and value.
std::vector<export_entry> read_export_csv(const std::string& text, const std::string& path);
/// Reads export_json's text back. Throws invalid_input naming the file and what is wrong.
std::vector<export_entry> read_export_json(const std::string& text, const std::string& path);

std::string export_header(const std::vector<export_entry>& entries, const std::string& source);

}  // namespace attn
