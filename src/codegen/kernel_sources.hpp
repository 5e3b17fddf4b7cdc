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
  /// Hash of the named files only (a family's own sources), in the same form as hash().
  uint64_t hash_of(const std::vector<std::string>& names) const;
  std::string origin() const { return m_origin; }  ///< "embedded" or the directory

 private:
  kernel_sources(std::vector<kernel_source_file> files, std::string origin);
  std::vector<kernel_source_file> m_files;
  uint64_t m_hash = 0;
  std::string m_origin;
};

}  // namespace attn
