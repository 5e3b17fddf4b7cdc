// attn_tune.hpp: a thin C++ wrapper over attn_tune.h. RAII handles, exceptions carrying the
// status and the library's message; header-only, so it adds nothing to the library's ABI.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>

#include "attn_tune/attn_tune.h"

namespace attn_tune {

class error : public std::runtime_error {
 public:
  error(attn_tune_status status, const std::string& message) : std::runtime_error(message), m_status(status) {}
  attn_tune_status status() const noexcept { return m_status; }

 private:
  attn_tune_status m_status;
};

/// Throws attn_tune::error with the calling thread's last message unless `status` is ATTN_TUNE_OK.
inline void check(attn_tune_status status) {
  if (status != ATTN_TUNE_OK) throw error(status, attn_tune_last_error());
}

/// The warnings of the calling thread's last call ("" when none), one line each.
inline std::string last_warning() { return attn_tune_last_warning(); }

using problem = attn_tune_problem;
using choice = attn_tune_choice;

/// A problem with the library's defaults, then the sizes given.
inline problem make_problem(int64_t batch, int64_t heads, int64_t kv_heads, int64_t q_len, int64_t kv_len,
                            int64_t head_dim, attn_tune_dtype dtype = ATTN_TUNE_BF16, bool causal = false,
                            attn_tune_layout layout = ATTN_TUNE_BHSD) {
  problem p = attn_tune_default_problem();
  p.batch = batch, p.heads = heads, p.kv_heads = kv_heads, p.q_len = q_len, p.kv_len = kv_len;
  p.head_dim = head_dim, p.dtype = dtype, p.causal = causal ? 1 : 0, p.layout = layout;
  return p;
}

struct context_options {
  int device = 0;
  std::string table;      ///< export CSV/JSON, results CSV or bundle; empty: none
  std::string bundle;     ///< empty: none
  std::string cache_dir;  ///< empty: the default cache folder
  bool no_cache = false;  ///< true: no disk cache
};

/// One device's context; move-only. Thread-safe: share one between threads.
class context {
 public:
  explicit context(const context_options& o = {}) {
    attn_tune_context_options c{};
    c.struct_size = sizeof c;
    c.device = o.device;
    c.table = o.table.empty() ? nullptr : o.table.c_str();
    c.bundle = o.bundle.empty() ? nullptr : o.bundle.c_str();
    c.cache_dir = o.no_cache ? "" : o.cache_dir.empty() ? nullptr : o.cache_dir.c_str();
    check(attn_tune_context_create(&c, &m_ctx));
  }
  ~context() { attn_tune_context_destroy(m_ctx); }
  context(context&& o) noexcept : m_ctx(std::exchange(o.m_ctx, nullptr)) {}
  context& operator=(context&& o) noexcept {
    std::swap(m_ctx, o.m_ctx);
    return *this;
  }
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  /// Launches on `stream` (a cudaStream_t); returns what ran. Never synchronizes.
  choice forward(const void* q, const void* k, const void* v, void* o, float* lse, const problem& p,
                 void* stream = nullptr) {
    choice c{};
    c.struct_size = sizeof c;
    check(attn_tune_forward(m_ctx, q, k, v, o, lse, &p, stream, &c));
    return c;
  }
  /// The backward (attn_tune_backward): dq, dk, dv from d_o and the forward's o and lse; delta is
  /// float32 [B, H, N_q] scratch. Launches on `stream`; returns what ran. Never synchronizes.
  choice backward(const void* q, const void* k, const void* v, const void* o, const float* lse, const void* d_o,
                  void* dq, void* dk, void* dv, float* delta, const problem& p, void* stream = nullptr) {
    choice c{};
    c.struct_size = sizeof c;
    check(attn_tune_backward(m_ctx, q, k, v, o, lse, d_o, dq, dk, dv, delta, &p, stream, &c));
    return c;
  }
  choice choose(const problem& p) const {
    choice c{};
    c.struct_size = sizeof c;
    check(attn_tune_choose(m_ctx, &p, &c));
    return c;
  }
  void synchronize(void* stream = nullptr) { check(attn_tune_synchronize(m_ctx, stream)); }
  attn_tune_context* get() const noexcept { return m_ctx; }

 private:
  attn_tune_context* m_ctx = nullptr;
};

/// A tuned table read without a device, for dispatch decisions elsewhere.
class table {
 public:
  explicit table(const std::string& path) { check(attn_tune_table_load(path.c_str(), &m_table)); }
  ~table() { attn_tune_table_destroy(m_table); }
  table(table&& o) noexcept : m_table(std::exchange(o.m_table, nullptr)) {}
  table(const table&) = delete;
  table& operator=(const table&) = delete;
  table& operator=(table&&) = delete;

  choice lookup(const std::string& device, int cc_major, int cc_minor, int sm_count, const problem& p) const {
    choice c{};
    c.struct_size = sizeof c;
    check(attn_tune_table_lookup(m_table, device.c_str(), cc_major, cc_minor, sm_count, &p, &c));
    return c;
  }

 private:
  attn_tune_table* m_table = nullptr;
};

}  // namespace attn_tune
