#include "codegen/kernel_sources.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "codegen/embedded_kernels.hpp"
#include "core/digest.hpp"
#include "core/problem.hpp"

namespace fs = std::filesystem;

namespace attn {

kernel_sources::kernel_sources(std::vector<kernel_source_file> files, std::string origin)
    : m_files(std::move(files)), m_origin(std::move(origin)) {
  std::sort(m_files.begin(), m_files.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  std::string all;
  for (const auto& f : m_files) all += f.name + '\0' + f.text + '\0';
  m_hash = xxh3_64(all);
}

uint64_t kernel_sources::hash_of(const std::vector<std::string>& roots) const {
  const std::vector<std::string> names = include_closure(roots);
  std::string closure;
  for (const auto& f : m_files)  // sorted by name, like hash()
    if (std::find(names.begin(), names.end(), f.name) != names.end())
      closure += f.name + '\0' + f.text + '\0';
  return xxh3_64(closure);
}

std::vector<std::string> kernel_sources::include_closure(const std::vector<std::string>& roots) const {
  auto find = [&](const std::string& name) -> const kernel_source_file* {
    for (const auto& f : m_files)
      if (f.name == name) return &f;
    return nullptr;
  };
  std::vector<std::string> seen, todo = roots;
  while (!todo.empty()) {
    const std::string name = todo.back();
    todo.pop_back();
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    const kernel_source_file* f = find(name);
    if (f == nullptr) continue;
    seen.push_back(name);
    std::istringstream lines(f->text);
    for (std::string line; std::getline(lines, line);) {
      const auto hash = line.find_first_not_of(" \t");
      if (hash == std::string::npos || line[hash] != '#') continue;
      const auto word = line.find_first_not_of(" \t", hash + 1);
      if (word == std::string::npos || line.compare(word, 7, "include") != 0) continue;
      const auto open = line.find('"', word + 7), close = open == std::string::npos ? open : line.find('"', open + 1);
      if (close == std::string::npos) continue;  // <...>: not a kernel file
      const std::string target = line.substr(open + 1, close - open - 1);
      const auto slash = name.rfind('/');
      const std::string sibling = slash == std::string::npos ? target : name.substr(0, slash + 1) + target;
      todo.push_back(find(target) != nullptr ? target : sibling);
    }
  }
  std::sort(seen.begin(), seen.end());
  return seen;
}

kernel_sources kernel_sources::from_files(std::vector<kernel_source_file> files, std::string origin) {
  return kernel_sources(std::move(files), std::move(origin));
}

kernel_sources kernel_sources::embedded() {
  std::vector<kernel_source_file> files;
  for (const auto& f : embedded_kernel_files()) files.push_back({f.name, f.text});
  return kernel_sources(std::move(files), "embedded");
}

kernel_sources kernel_sources::from_directory(const std::string& dir) {
  std::vector<kernel_source_file> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file() || it->path().extension() != ".cuh") continue;
    std::ifstream in(it->path());
    std::ostringstream text;
    text << in.rdbuf();
    files.push_back({fs::relative(it->path(), dir).generic_string(), text.str()});
  }
  if (files.empty())
    throw invalid_input(fmt::format("invalid --kernels-dir '{}': no .cuh files found there", dir));
  return kernel_sources(std::move(files), dir);
}

}  // namespace attn
