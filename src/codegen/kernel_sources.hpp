#pragma once
// The kernels/ files NVRTC compiles against: the copy embedded at build time, or, for kernel
// development, a directory read at run time (--kernels-dir). Its hash is part of every cache key.
#include <cstdint>
#include <string>
#include <vector>

namespace attn {

struct kernel_source_file {
  std::string name;  ///< relative to kernels/, e.g. "common/device.cuh"
  std::string text;
};

class kernel_sources {
 public:
  static kernel_sources embedded();
  /// Every *.cuh below dir; throws invalid_input naming dir when it holds none.
  static kernel_sources from_directory(const std::string& dir);
  /// Given files (tests use it to plant a faulty kernel).
  static kernel_sources from_files(std::vector<kernel_source_file> files, std::string origin);
  const std::vector<kernel_source_file>& files() const { return m_files; }
  uint64_t hash() const { return m_hash; }
  /// Hash of the named files and what they include (include_closure: a family's own sources, so a
  /// file a --kernels-dir kernel newly includes counts too), in the same form as hash().
  uint64_t hash_of(const std::vector<std::string>& names) const;
  /// The roots and every file they include, directly or not, sorted by name: each `#include "x"`
  /// line (any preprocessor branch) resolved as NVRTC resolves it here, "x" relative to kernels/
  /// (the names the files are given under), else relative to the including file's folder. An
  /// include of no file here (a system header) is left out.
  std::vector<std::string> include_closure(const std::vector<std::string>& roots) const;
  std::string origin() const { return m_origin; }  ///< "embedded" or the directory

 private:
  kernel_sources(std::vector<kernel_source_file> files, std::string origin);
  std::vector<kernel_source_file> m_files;
  uint64_t m_hash = 0;
  std::string m_origin;
};

}  // namespace attn
