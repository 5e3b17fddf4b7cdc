#pragma once
// The tuned configs a library context runs: read from an export of `attn-tune export` (CSV or
// JSON), or from a results CSV of the tuner (whose rank-1 rows are exact tuned shapes), and the
// choice for one problem: the exact tuned shape, then the export's bucket, then the fallback.
//
// A source is anything with the three functions of tuned_source; tuned_table is the one for files
// and for the tuned-results database (library/tuned_db_table.hpp), which open_tuned_source()
// recognizes by its SQLite header.
#include <memory>
#include <string>
#include <vector>

#include "codegen/family.hpp"
#include "codegen/kernel_sources.hpp"
#include "report/export.hpp"
#include "core/record.hpp"

namespace attn {

enum class choice_source { tuned, bucket, fallback };
std::string to_string(choice_source s);  ///< "tuned", "bucket", "fallback"

struct tuned_choice {
  std::string family = "fa2";
  tile_config config;  ///< a backward's: its dK/dV kernel's tile
  choice_source source = choice_source::fallback;
  backward_config backward;  ///< pass bwd: the backward variant
};

/// A tuned shape of a results CSV: the tuner's choice (rank 1) for exactly this problem.
struct tuned_shape {
  device_desc device;
  attn::problem shape;
  std::string family;
  tile_config config;
  double median_ms = 0;
  backward_config backward;  ///< shape.pass bwd: the backward variant
};

class tuned_source {
 public:
  virtual ~tuned_source() = default;
  virtual bool empty() const = 0;
  /// Throws table_error naming the devices the source holds when it has none for `d`.
  virtual void check_device(const device_desc& d) const = 0;
  /// In order of preference: the exact tuned shape, the bucket (each when there is one), the fallback.
  virtual std::vector<tuned_choice> candidates(const device_desc& d, const problem& s) const = 0;
  /// What reading it warned of ("warning: ..." lines; the library prints nothing).
  virtual std::vector<std::string> warnings() const { return {}; }
};

class tuned_table : public tuned_source {
 public:
  tuned_table() = default;
  /// The text of an export CSV, an export JSON or a results CSV (told apart by their first line);
  /// `what` names it in messages. Throws table_error (also for an empty text, or a family this
  /// build lacks).
  static tuned_table parse(const std::string& text, const std::string& what);
  static tuned_table load(const std::string& path);
  /// A table of these exact shapes and buckets, read from `what` (which has no text of its own).
  static tuned_table from_parts(std::string what, std::vector<tuned_shape> exact, std::vector<export_entry> buckets);

  bool empty() const override { return m_exact.empty() && m_buckets.empty(); }
  void check_device(const device_desc& d) const override;
  std::vector<tuned_choice> candidates(const device_desc& d, const problem& s) const override;

  const std::vector<tuned_shape>& exact() const { return m_exact; }
  const std::vector<export_entry>& buckets() const { return m_buckets; }
  const std::string& text() const { return m_text; }  ///< what it was read from (for bundles)
  const std::string& origin() const { return m_what; }  ///< its path, as messages name it
  std::vector<std::string> warnings() const override { return m_warnings; }

 private:
  void check_families() const;  ///< table_error naming a family this build does not know
  std::string m_what, m_text;
  std::vector<std::string> m_warnings;
  std::vector<tuned_shape> m_exact;
  std::vector<export_entry> m_buckets;
};

/// The most a table or bundle file may hold.
constexpr long long max_table_bytes = 1LL << 30;
/// Reads a regular file of at most max_table_bytes into a string; throws table_error naming the
/// path (and why: missing, a directory, a device or FIFO, too large).
std::string read_file_text(const std::string& path);
/// A table file, or the tuned-results database (an SQLite file: tuned_table_from_db with
/// `kernels`). Empty path: an empty table. Throws table_error.
std::unique_ptr<tuned_source> open_tuned_source(const std::string& path,
                                                const kernel_sources& kernels = kernel_sources::embedded());


/// The first candidate that a family accepts for this shape on a device with these limits (a
/// tuned config the device cannot run falls through to the next). Throws unsupported_problem
/// with every candidate's reason when none can run. For pass bwd: the exact tuned shape's backward
/// variant, the export's bucket (an export written with its variant column), else fallback_backwards.
tuned_choice choose_config(const tuned_source& table, const device_desc& d, const resource_limits& limits,
                           const problem& s);

}  // namespace attn
