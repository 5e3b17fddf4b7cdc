#include "codegen/nvrtc.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <regex>

#include <fmt/format.h>

#include "core/problem.hpp"

namespace attn {

namespace {

int sum_matches(const std::string& log, const std::regex& re) {
  int total = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator(); ++it)
    total += std::stoi((*it)[1].str());
  return total;
}

int max_match(const std::string& log, const std::regex& re) {
  int largest = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator(); ++it)
    largest = std::max(largest, std::stoi((*it)[1].str()));
  return largest;
}

int arch_number(const std::string& arch) {
  static const std::regex re(R"(sm_(\d+)a?)");
  std::smatch m;
  if (!std::regex_match(arch, m, re))
    throw invalid_input(fmt::format("invalid architecture '{}': expected sm_NN or sm_NNa (e.g. sm_90a)", arch));
  return std::stoi(m[1].str());
}

}  // namespace

void trim_log(std::string& log) {
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
}

ptxas_report parse_ptxas_report(const std::string& log) {
  // One kernel per variant; the support module has several: its largest counts.
  static const std::regex regs(R"(Used (\d+) registers)");
  static const std::regex stores(R"((\d+) bytes spill stores)");
  static const std::regex loads(R"((\d+) bytes spill loads)");
  static const std::regex stack(R"((\d+) bytes stack frame)");
  ptxas_report r;
  r.registers = max_match(log, regs);  // the largest of the program's kernels, as cubin_resources
  r.spill_bytes = sum_matches(log, stores) + sum_matches(log, loads);
  r.stack_bytes = max_match(log, stack);
  return r;
}

namespace {

// Little-endian fixed-width read at `at`; false past the end.
template <typename T>
bool read_at(const std::string& bytes, uint64_t at, T& out) {
  if (at > bytes.size() || bytes.size() - at < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + at, sizeof(T));
  return true;
}

}  // namespace

ptxas_report cubin_resources(const std::string& cubin) {
  ptxas_report r;
  // ELF64, little-endian (ELFCLASS64 = 2, ELFDATA2LSB = 1).
  if (cubin.size() < 64 || cubin.compare(0, 4, "\x7f" "ELF") != 0 || cubin[4] != 2 || cubin[5] != 1) return r;
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
  if (!read_at(cubin, 0x28, shoff) || !read_at(cubin, 0x3a, shentsize) || !read_at(cubin, 0x3c, shnum) ||
      !read_at(cubin, 0x3e, shstrndx) || shentsize < 64 || shstrndx >= shnum)
    return r;
  auto section = [&](uint16_t i, uint32_t& name, uint64_t& offset, uint64_t& size) {
    const uint64_t h = shoff + uint64_t{i} * shentsize;
    return read_at(cubin, h, name) && read_at(cubin, h + 24, offset) && read_at(cubin, h + 32, size) &&
           offset <= cubin.size() && size <= cubin.size() - offset;
  };
  uint32_t unused = 0;
  uint64_t names = 0, names_size = 0;
  if (!section(shstrndx, unused, names, names_size)) return r;
  for (uint16_t i = 0; i < shnum; ++i) {
    uint32_t name = 0;
    uint64_t at = 0, size = 0;
    if (!section(i, name, at, size) || name >= names_size) continue;
    const char* text = cubin.data() + names + name;
    if (strnlen(text, names_size - name) != 8 || std::memcmp(text, ".nv.info", 8) != 0) continue;
    // Attributes: format byte, attribute byte, then a u16 value (formats 1-3) or a u16 size and
    // that many bytes (format 4, EIFMT_SVAL). REGCOUNT (0x2f) and FRAME_SIZE (0x11) are SVALs of
    // (u32 symbol, u32 value), one per kernel: the program has one, the largest is taken anyway.
    for (uint64_t p = at, end = at + size; p + 4 <= end;) {
      const auto format = static_cast<uint8_t>(cubin[p]), attribute = static_cast<uint8_t>(cubin[p + 1]);
      if (format < 1 || format > 4) break;
      uint16_t length = 0;
      if (format == 4 && !read_at(cubin, p + 2, length)) break;
      const uint64_t value_at = p + 4, next = value_at + (format == 4 ? length : 0);
      if (next > end) break;
      uint32_t value = 0;
      if (format == 4 && length == 8 && read_at(cubin, value_at + 4, value)) {
        if (attribute == 0x2f) r.registers = std::max(r.registers, static_cast<int>(value));
        if (attribute == 0x11) r.stack_bytes = std::max(r.stack_bytes, static_cast<int>(value));
      }
      p = next;
    }
  }
  return r;
}

ptxas_report cuda_resources(const std::string& log, const std::string& cubin) {
  ptxas_report r = parse_ptxas_report(log);
  if (r.registers > 0) return r;
  return cubin_resources(cubin);
}

std::string ptxas_performance_warning(const std::string& log) {
  static const std::regex note(R"(Potential Performance Loss: ([^\n]*?)(?: (?:for|in) the function '[^']*')?\s*(?:\n|$))");
  std::smatch m;
  return std::regex_search(log, m, note) ? "ptxas: " + m[1].str() : std::string();
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return fmt::format("{}.{}", major, minor);
}

bool nvrtc_supports(const std::string& arch) {
  const int number = arch_number(arch);
  int count = 0;
  if (nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS) return false;
  std::vector<int> archs(count);
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return false;
  for (int a : archs)
    if (a == number) return true;
  return false;
}

std::vector<std::string> nvrtc_options(const std::string& arch,
                                       const std::vector<std::string>& extra_options) {
  arch_number(arch);  // validates
  std::vector<std::string> options = {"--gpu-architecture=" + arch, "--std=c++17",
                                      "--ptxas-options=-v",
                                      "-default-device"};
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  return options;
}

compile_result compile_cubin(const std::string& source, const std::string& arch,
                             const std::vector<std::string>& extra_options,
                             const kernel_sources& kernels) {
  const auto start = std::chrono::steady_clock::now();
  compile_result result;
  const auto& files = kernels.files();
  std::vector<const char*> names, texts;
  for (const auto& f : files) {
    names.push_back(f.name.c_str());
    texts.push_back(f.text.c_str());
  }
  nvrtcProgram program = nullptr;
  if (nvrtcCreateProgram(&program, source.c_str(), "attn_tune_variant.cu",
                         static_cast<int>(files.size()), texts.data(), names.data()) != NVRTC_SUCCESS) {
    result.log = "nvrtcCreateProgram failed";
    return result;
  }
  const auto options = nvrtc_options(arch, extra_options);
  std::vector<const char*> option_ptrs;
  for (const auto& o : options) option_ptrs.push_back(o.c_str());
  const nvrtcResult rc =
      nvrtcCompileProgram(program, static_cast<int>(option_ptrs.size()), option_ptrs.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  result.log.resize(log_size);
  if (log_size > 0) nvrtcGetProgramLog(program, result.log.data());
  trim_log(result.log);
  if (rc == NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetCUBINSize(program, &size);
    result.cubin.resize(size);
    result.ok = size > 0 && nvrtcGetCUBIN(program, result.cubin.data()) == NVRTC_SUCCESS;
    if (!result.ok) result.log += "\nno cubin produced";
  } else if (result.log.empty()) {
    result.log = nvrtcGetErrorString(rc);
  }
  nvrtcDestroyProgram(&program);
  const auto report = cuda_resources(result.log, result.cubin);  // (read_resources in cache.cpp, for hits)
  result.registers = report.registers;
  result.spill_bytes = report.spill_bytes;
  result.stack_bytes = report.stack_bytes;
  result.milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace attn
