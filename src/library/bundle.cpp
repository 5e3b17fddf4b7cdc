#include "library/bundle.hpp"

#include <sstream>

#include <fmt/format.h>

#include "codegen/cache.hpp"
#include "core/digest.hpp"
#include "library/errors.hpp"

namespace attn {

namespace {

constexpr const char* magic = "ATTNB ";
constexpr size_t digest_digits = 32;
constexpr size_t trailer_size = 9 + digest_digits + 1;  // "checksum " + 32 hex digits + "\n"

// Reads the sections after the checksum was verified: a malformed one is a bundle_error.
class section_reader {
 public:
  section_reader(const std::string& bytes, size_t end, const std::string& what)
      : m_bytes(bytes), m_end(end), m_what(what) {}
  bool done() const { return m_at >= m_end; }
  std::vector<std::string> line() {
    const size_t nl = m_bytes.find('\n', m_at);
    if (nl == std::string::npos || nl >= m_end) fail("a section line has no end");
    std::istringstream in(m_bytes.substr(m_at, nl - m_at));
    m_at = nl + 1;
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    if (words.empty()) fail("an empty section line");
    return words;
  }
  std::string payload(const std::string& size_text) {
    size_t size = 0;
    try {
      size = std::stoull(size_text);
    } catch (const std::exception&) {
      fail(fmt::format("payload size '{}' is not a number", size_text));
    }
    if (size + 1 > m_end - m_at || m_bytes[m_at + size] != '\n') fail("a payload runs past its section");
    std::string out = m_bytes.substr(m_at, size);
    m_at += size + 1;
    return out;
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw bundle_error(fmt::format("bundle '{}' is corrupt: {}", m_what, why));
  }

 private:
  const std::string& m_bytes;
  size_t m_end, m_at = 0;
  std::string m_what;
};

}  // namespace

const bundle_kernel* bundle::find(const std::string& family, const std::string& key) const {
  for (const auto& k : kernels)
    if (k.family == family && k.key == key) return &k;
  return nullptr;
}

std::string instantiation_key(const kernel_family& f, const tile_config& c, const problem& s) {
  return fmt::format("{:016x}", xxh3_64(f.instantiation(c, s)));
}

bool looks_like_bundle(const std::string& bytes) { return bytes.rfind(magic, 0) == 0; }

std::string serialize_bundle(const bundle& b) {
  std::string out = fmt::format("{}{}\narch {}\nversion {}\nsources", magic, bundle_format_version, b.arch, b.version);
  for (const auto& [family, hash] : b.source_hashes) out += fmt::format(" {}={}", family, hash);
  out += fmt::format("\ntable {}\n", b.table.size()) + b.table + "\n";
  for (const auto& k : b.kernels)
    out += fmt::format("kernel {} {} {} {} {}\n", k.family, k.key, k.config, k.shared_memory_bytes, k.cubin.size()) +
           k.cubin + "\n";
  return out + fmt::format("checksum {}\n", xxh3_128_hex(out));
}

bundle parse_bundle(const std::string& bytes, const std::string& what) {
  if (!looks_like_bundle(bytes)) throw bundle_error(fmt::format("'{}' is not a bundle of attn-tune", what));
  const int version = std::atoi(bytes.c_str() + 6);
  if (version != bundle_format_version)
    throw bundle_error(fmt::format("bundle '{}' has format version {}; this library reads version {} only{}: "
                                   "rebuild it with this attn-tune (attn-tune bundle)",
                                   what, version, bundle_format_version,
                                   version < bundle_format_version ? " (version 1 was checksummed with FNV-1a)" : ""));
  const size_t body = bytes.size() >= trailer_size ? bytes.size() - trailer_size : 0;
  if (body == 0 || bytes.compare(body, 9, "checksum ") != 0 || bytes.back() != '\n')
    throw bundle_error(fmt::format("bundle '{}' is corrupt: it has no checksum at its end (truncated?)", what));
  const std::string stored = bytes.substr(body + 9, digest_digits);
  const std::string actual = xxh3_128_hex(std::string_view(bytes).substr(0, body));
  if (stored != actual)
    throw bundle_error(fmt::format("bundle '{}' is corrupt: checksum {} does not match its content ({})", what,
                                   stored, actual));
  bundle b;
  section_reader in(bytes, body, what);
  in.line();  // ATTNB <version>
  while (!in.done()) {
    const auto words = in.line();
    const std::string& tag = words[0];
    if (tag == "arch" && words.size() == 2) b.arch = words[1];
    else if (tag == "version" && words.size() == 2) b.version = words[1];
    else if (tag == "sources") {
      for (size_t i = 1; i < words.size(); ++i) {
        const size_t eq = words[i].find('=');
        if (eq == std::string::npos) in.fail(fmt::format("source hash '{}' is not family=hash", words[i]));
        b.source_hashes[words[i].substr(0, eq)] = words[i].substr(eq + 1);
      }
    } else if (tag == "table" && words.size() == 2) b.table = in.payload(words[1]);
    else if (tag == "kernel" && words.size() == 6) {
      bundle_kernel k{words[1], words[2], words[3], std::atoll(words[4].c_str()), in.payload(words[5])};
      b.kernels.push_back(std::move(k));
    } else in.fail(fmt::format("unknown section '{}'", tag));
  }
  if (b.arch.empty()) in.fail("no arch");
  return b;
}

void check_bundle_target(const bundle& b, const std::string& device_arch, const kernel_sources& kernels,
                         const std::string& what) {
  if (b.arch != device_arch)
    throw bundle_error(fmt::format("bundle '{}' holds cubins for {}, but this device is {}: build one with "
                                   "`attn-tune bundle --arch {}`",
                                   what, b.arch, device_arch, device_arch));
  for (const auto& [family_name, hash] : b.source_hashes) {
    const kernel_family* f = nullptr;
    try {
      f = &find_family(family_name);
    } catch (const invalid_input& e) {
      throw bundle_error(fmt::format("bundle '{}' holds kernels of a family this library lacks: {}", what, e.what()));
    }
    const std::string mine = fmt::format("{:016x}", kernels.hash_of(f->source_files));
    if (mine != hash)
      throw bundle_error(fmt::format("bundle '{}' was built from other {} kernel sources ({}) than this library's "
                                     "({}): rebuild it with this version of attn-tune",
                                     what, family_name, hash, mine));
  }
}

}  // namespace attn
