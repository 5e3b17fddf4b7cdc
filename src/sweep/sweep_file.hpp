#pragma once
// Sweep files: one problem shape per row, so a whole model's attention shapes tune in one run.
// The columns are "name" and each field's sweep_column in problem_fields() (core/problem.hpp), by
// header name in any order: every file has name and the first schema's fields' columns
// (in_first_schema), and may lack a later one's (page_size, kv_lens, window_left, ...). A blank
// cell takes the field's default, or the field it follows (kv_heads = H, kv_len = N); a required
// field (B, H, N, D) needs a value. `attn-tune sweep --help` lists them all, from the same list.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/problem.hpp"

namespace attn {

struct sweep_row {
  std::string name;
  attn::problem problem;
  int line = 0;  ///< in the file, for messages
};

/// Throws invalid_input naming the file, the line and the column of a bad row.
std::vector<sweep_row> read_sweep_file(const std::string& path);

/// The rows in the passes a sweep tunes: each in `pass` when given (--pass), else in its own; a
/// fwdbwd row becomes two, fwd (its name) and bwd (its name and " bwd"), next to each other.
std::vector<sweep_row> with_passes(const std::vector<sweep_row>& rows, std::optional<attention_pass> pass);

/// The rows whose shape no earlier row has (a results file holds one tuning per shape: models
/// often share one, e.g. Mistral-7B's are Llama-3-8B's). Each row left out is appended to
/// `repeats` as "name (line N) is the shape of name (line M)".
std::vector<sweep_row> distinct_shapes(const std::vector<sweep_row>& rows, std::vector<std::string>& repeats);

/// A deterministic share of a sweep: rows i with i % count == index.
struct shard_spec {
  int index = 0;
  int count = 1;
};
/// "k/n" (0 <= k < n), or "auto": Slurm's SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT, else a
/// Kubernetes indexed job's JOB_COMPLETION_INDEX with the count from ATTN_TUNE_SHARDS. `env`
/// reads a variable (std::getenv in the tool, a map in tests). Throws invalid_input.
shard_spec parse_shard(const std::string& text,
                       const std::function<const char*(const char*)>& env);
std::vector<sweep_row> take_shard(const std::vector<sweep_row>& rows, const shard_spec& shard);

}  // namespace attn
