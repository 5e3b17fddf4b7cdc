// The C API of libattn_tune (include/attn_tune/attn_tune.h) over the engine (src/library/):
// arguments are checked here, exceptions become status codes and this thread's last message.
#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "attn_tune/attn_tune.h"
#include "codegen/cache.hpp"
#include "codegen/compile_pool.hpp"
#include "library/engine.hpp"
#include "library/errors.hpp"
#include "codegen/kernel_args.hpp"
#include "core/problem.hpp"

struct attn_tune_context {
  std::unique_ptr<attn::engine> engine;
};
struct attn_tune_table {
  std::unique_ptr<attn::tuned_source> table;
};

namespace {

thread_local std::string last_error, last_warning;

attn_tune_status fail(attn_tune_status status, const std::string& message) {
  last_error = message;
  return status;
}

// The library prints nothing: what the tool would say on stderr is kept for the calling thread.
void keep_warning(const std::string& line) {
  if (!last_warning.empty()) last_warning += '\n';
  last_warning += line;
}

// Runs f; every exception becomes its status code and message. Nothing escapes into C.
template <class F>
attn_tune_status guarded(F&& f) {
  last_error.clear();
  last_warning.clear();
  try {
    f();
    return ATTN_TUNE_OK;
  } catch (const attn::invalid_input& e) {
    return fail(ATTN_TUNE_ERROR_INVALID_ARGUMENT, e.what());
  } catch (const attn::unsupported_problem& e) {
    return fail(ATTN_TUNE_ERROR_UNSUPPORTED, e.what());
  } catch (const attn::table_error& e) {
    return fail(ATTN_TUNE_ERROR_TABLE, e.what());
  } catch (const attn::bundle_error& e) {
    return fail(ATTN_TUNE_ERROR_BUNDLE, e.what());
  } catch (const attn::compile_failure& e) {
    return fail(ATTN_TUNE_ERROR_COMPILE, e.what());
  } catch (const attn::device_error& e) {
    const bool no_device = std::strstr(e.what(), "no CUDA device") || std::strstr(e.what(), "does not exist");
    return fail(no_device ? ATTN_TUNE_ERROR_NO_DEVICE : ATTN_TUNE_ERROR_DEVICE, e.what());
  } catch (const std::exception& e) {
    return fail(ATTN_TUNE_ERROR_INTERNAL, e.what());
  } catch (...) {
    return fail(ATTN_TUNE_ERROR_INTERNAL, "unknown error");
  }
}

void require(const void* p, const char* name) {
  if (p == nullptr) throw attn::invalid_input(fmt::format("{} is NULL", name));
}

// The smallest struct_size a struct may have: its size in the oldest version still read.
template <class S>
constexpr size_t oldest_size() {
  if constexpr (std::is_same_v<S, attn_tune_problem>) return offsetof(attn_tune_problem, cache_seqlens);  // version 2
  if constexpr (std::is_same_v<S, attn_tune_choice>) return offsetof(attn_tune_choice, variant);  // version 6
  return sizeof(S);
}

template <class S>
void require_struct(const S* p, const char* name) {
  require(p, name);
  if (p->struct_size < oldest_size<S>())
    throw attn::invalid_input(fmt::format("{}->struct_size {} is less than sizeof = {} (set it to sizeof)", name,
                                          p->struct_size, sizeof(S)));
}

// The problem as this version reads it: the fields a caller of an older version did not have are
// NULL and 0.
attn_tune_problem current(const attn_tune_problem& p) {
  attn_tune_problem out{};
  std::memcpy(&out, &p, std::min<size_t>(p.struct_size, sizeof out));
  out.struct_size = sizeof out;
  return out;
}

// A packed variable-length batch (cu_seqlens_q set): the lengths come with the call ("given"),
// the rows of Q and K with total_q and total_k. Refuses the fields of one without the others.
void packed_lengths(const attn_tune_problem& p, attn::problem& s) {
  if (p.cu_seqlens_q == nullptr) {
    if (p.cu_seqlens_k != nullptr)
      throw attn::invalid_input("cu_seqlens_k without cu_seqlens_q: a packed batch gives both (cu_seqlens_q NULL: "
                                "not packed)");
    if (p.total_q != 0 || p.total_k != 0)
      throw attn::invalid_input(fmt::format("total_q {} and total_k {} without cu_seqlens_q: they are a packed "
                                            "batch's rows (give 0 when not packed)", p.total_q, p.total_k));
    return;
  }
  if (p.cu_seqlens_k == nullptr)
    throw attn::invalid_input("cu_seqlens_q without cu_seqlens_k: a packed batch gives its keys' offsets too "
                              "(cu_seqlens_k = cu_seqlens_q for self-attention)");
  if (p.cache_seqlens != nullptr || p.block_table != nullptr)
    throw attn::invalid_input(fmt::format("cu_seqlens_q with {}: a packed batch's keys are packed too (their "
                                          "offsets in cu_seqlens_k), not a KV cache",
                                          p.cache_seqlens != nullptr ? "cache_seqlens" : "block_table"));
  using named = std::pair<const char*, const int32_t*>;
  for (const auto& [name, offsets] : {named{"cu_seqlens_q", p.cu_seqlens_q}, named{"cu_seqlens_k", p.cu_seqlens_k}})
    if (reinterpret_cast<uintptr_t>(offsets) % alignof(int32_t) != 0)
      throw attn::invalid_input(fmt::format("{} = {} is not {}-byte aligned", name, static_cast<const void*>(offsets),
                                            alignof(int32_t)));
  s.seqlens = s.kv_seqlens = "given";
}

// A packed batch's rows: each of its B sequences has at most q_len (kv_len) of them, so more in
// all is a wrong total or a wrong maximum. After validate(): batch and lengths are positive.
void check_packed_rows(const attn_tune_problem& p) {
  const struct {
    const char *name, *longest_name;
    int64_t total, longest;
  } sides[] = {{"total_q", "q_len (max_seqlen_q)", p.total_q, p.q_len},
               {"total_k", "kv_len (max_seqlen_k)", p.total_k, p.kv_len}};
  for (const auto& side : sides) {
    if (side.total <= 0)
      throw attn::invalid_input(fmt::format("{} {} with cu_seqlens_q: a packed batch's rows must be > 0", side.name,
                                            side.total));
    if (static_cast<__int128>(p.batch) * side.longest < side.total)
      throw attn::invalid_input(fmt::format("{} {} exceeds batch {} x {} {}: no sequence may be longer than that",
                                            side.name, side.total, p.batch, side.longest_name, side.longest));
  }
}

attn::problem to_shape(const attn_tune_problem& p) {
  attn::problem s;
  s.batch = p.batch;
  s.heads = p.heads;
  s.kv_heads = p.kv_heads;
  s.q_len = p.q_len;
  s.kv_len = p.kv_len;
  s.head_dim = p.head_dim;
  if (p.dtype != ATTN_TUNE_BF16 && p.dtype != ATTN_TUNE_FP16)
    throw attn::invalid_input(fmt::format("unknown dtype {} (ATTN_TUNE_BF16 = 0, ATTN_TUNE_FP16 = 1)", p.dtype));
  s.dtype = p.dtype == ATTN_TUNE_BF16 ? attn::dtype::bf16 : attn::dtype::fp16;
  if (p.layout != ATTN_TUNE_BHSD && p.layout != ATTN_TUNE_BSHD)
    throw attn::invalid_input(fmt::format("unknown layout {} (ATTN_TUNE_BHSD = 0, ATTN_TUNE_BSHD = 1)", p.layout));
  s.layout = p.layout == ATTN_TUNE_BHSD ? attn::layout::bhsd : attn::layout::bshd;
  if (p.causal != 0 && p.causal != 1) throw attn::invalid_input(fmt::format("causal {} is not 0 or 1", p.causal));
  s.causal = p.causal == 1;
  if ((p.block_table != nullptr) != (p.page_size != 0))
    throw attn::invalid_input(fmt::format("block_table {} with page_size {}: a paged cache needs both, a contiguous one "
                                          "neither", static_cast<const void*>(p.block_table), p.page_size));
  s.page_size = p.page_size;
  if (p.cache_seqlens != nullptr) s.kv_lens = "given";
  if (p.window != 0 && p.window != 1) throw attn::invalid_input(fmt::format("window {} is not 0 or 1", p.window));
  if (p.window == 1) {
    if (p.causal == 1 && p.window_right > 0)
      throw attn::invalid_input(fmt::format("window_right {} with causal: causal is a window_right of 0 (give 0 or -1)",
                                            p.window_right));
    s.window_left = p.window_left;
    s.window_right = p.window_right;
  }
  s.softcap = p.softcap;
  s.head_dim_v = p.head_dim_v;
  packed_lengths(p, s);
  attn::canonicalize(s);
  attn::validate(s);
  if (attn::is_varlen(s)) check_packed_rows(p);
  return s;
}

// Refuses strides under which two elements of a tensor share memory: taken from the smallest
// stride up, each dimension's stride must pass everything the ones below it span (a head stride
// below D, a batch stride equal to the head stride). Dimensions of one element do not count.
void check_no_overlap(const char* name, const attn::tensor_strides& t, int64_t batch, int64_t heads, int64_t rows,
                      int64_t head_dim) {
  struct dim {
    const char* which;
    int64_t stride, count;
  };
  dim dims[] = {{"row", t.row, rows}, {"head", t.head, heads}, {"batch", t.batch, batch}};
  std::stable_sort(std::begin(dims), std::end(dims), [](const dim& a, const dim& b) { return a.stride < b.stride; });
  __int128 span = head_dim;  // elements one step of the dimension must pass
  const char* below = "row's head dim";
  for (const dim& d : dims) {
    if (d.count <= 1) continue;
    if (d.stride < span)
      throw attn::invalid_input(fmt::format("{} {} stride {} is less than the {} elements of each {} below it: the "
                                            "tensor's {}s would overlap",
                                            name, d.which, d.stride, static_cast<int64_t>(span), below, d.which));
    span += static_cast<__int128>(d.count - 1) * d.stride;
    below = d.which;
  }
}

attn_k::fwd_params to_params(const attn::problem& s, const void* q, const void* k, const void* v, const void* o,
                             const float* lse, const attn_tune_problem& p) {
  attn::forward_tensors t{q, k, v, const_cast<void*>(o), const_cast<float*>(lse)};
  t.seqlens_k = p.cache_seqlens;
  t.block_table = p.block_table;
  t.num_pages = p.num_pages;
  attn::tensor_strides qs{p.q_strides[0], p.q_strides[1], p.q_strides[2]};
  attn::tensor_strides kvs{p.kv_strides[0], p.kv_strides[1], p.kv_strides[2]};
  attn::tensor_strides vs{p.v_strides[0], p.v_strides[1], p.v_strides[2]};
  attn::tensor_strides os{p.o_strides[0], p.o_strides[1], p.o_strides[2]};
  const bool packed = attn::is_varlen(s);
  const int64_t dv = attn::value_dim(s);
  if (packed) {
    t.cu_seqlens_q = p.cu_seqlens_q;
    t.cu_seqlens_k = p.cu_seqlens_k;
    t.total_q = p.total_q;
    t.total_kv = p.total_k;
    // Strides left at 0: contiguous over the caller's totals (make_fwd_params's own would take
    // B x the longest for the rows of lengths "given", a bound, not the total).
    auto strides_of = [&](const attn::tensor_strides& given, bool kv, int64_t dim, int64_t rows) {
      return given.unset() ? attn::packed_strides(s, kv, dim, rows) : given;
    };
    qs = strides_of(qs, false, s.head_dim, p.total_q);
    kvs = strides_of(kvs, true, s.head_dim, p.total_k);
    if (attn::has_value_dim(s)) {  // with dv = d, V and O take K's and Q's (make_fwd_params checks)
      vs = strides_of(vs, true, dv, p.total_k);
      os = strides_of(os, false, dv, p.total_q);
    }
  }
  attn_k::fwd_params params = attn::make_fwd_params(s, t, qs, kvs, p.softmax_scale, vs, os);  // each stride checked
  qs = {params.q_batch_stride, params.q_head_stride, params.q_row_stride};
  kvs = {params.kv_batch_stride, params.kv_head_stride, params.kv_row_stride};
  vs = {params.v_batch_stride, params.v_head_stride, params.v_row_stride};
  os = {params.o_batch_stride, params.o_head_stride, params.o_row_stride};
  // A packed batch is one sequence of total rows (its batch stride is 0).
  const int64_t batches = packed ? 1 : s.batch, q_rows = packed ? p.total_q : s.q_len;
  const int64_t kv_rows = packed ? p.total_k : s.kv_len;
  check_no_overlap("q", qs, batches, s.heads, q_rows, s.head_dim);
  check_no_overlap("o", os, batches, s.heads, q_rows, dv);
  if (s.page_size > 0) {
    check_no_overlap("kv", kvs, p.num_pages, s.kv_heads, s.page_size, s.head_dim);
    check_no_overlap("v", vs, p.num_pages, s.kv_heads, s.page_size, dv);
  } else {
    check_no_overlap("kv", kvs, batches, s.kv_heads, kv_rows, s.head_dim);
    check_no_overlap("v", vs, batches, s.kv_heads, kv_rows, dv);
  }
  return params;
}

void fill_choice(attn_tune_choice* out, const attn::tuned_choice& c, bool from_bundle, bool backward = false) {
  if (out == nullptr) return;
  require_struct(out, "choice");
  out->source = c.source == attn::choice_source::tuned    ? ATTN_TUNE_SOURCE_TUNED
                : c.source == attn::choice_source::bucket ? ATTN_TUNE_SOURCE_BUCKET
                                                          : ATTN_TUNE_SOURCE_FALLBACK;
  std::snprintf(out->family, sizeof out->family, "%s", c.family.c_str());
  std::snprintf(out->config, sizeof out->config, "%s", attn::name(c.config).c_str());
  out->from_bundle = from_bundle ? 1 : 0;
  if (out->struct_size >= offsetof(attn_tune_choice, variant) + sizeof out->variant)  // version 7 on
    std::snprintf(out->variant, sizeof out->variant, "%s", backward ? attn::name(c.backward).c_str() : attn::name(c.config).c_str());
}

// The backward's tensors: each contiguous in the problem's layout (its strides all 0, or the
// contiguous ones), the problem one the backward takes. Throws invalid_input / unsupported_problem.
attn_k::bwd_params to_backward_params(const attn::problem& s, const attn_tune_problem& p, const void* q, const void* k,
                                      const void* v, const void* o, const float* lse, const void* d_o, void* dq,
                                      void* dk, void* dv, float* delta) {
  attn::problem b = s;
  b.pass = attn::attention_pass::bwd;
  if (auto why = attn::backward_refusal(b)) throw attn::unsupported_problem(*why);
  // The contiguous strides: to_params's with every stride 0 (a packed batch's over its totals).
  attn_tune_problem unset = p;
  for (int64_t* strides : {unset.q_strides, unset.kv_strides, unset.v_strides, unset.o_strides})
    strides[0] = strides[1] = strides[2] = 0;
  const attn_k::fwd_params contiguous = to_params(s, q, k, v, o, lse, unset);
  const std::pair<const char*, const int64_t*> given[] = {{"q_strides", p.q_strides}, {"kv_strides", p.kv_strides},
                                                          {"v_strides", p.v_strides}, {"o_strides", p.o_strides}};
  const int64_t want[4][3] = {
      {contiguous.q_batch_stride, contiguous.q_head_stride, contiguous.q_row_stride},
      {contiguous.kv_batch_stride, contiguous.kv_head_stride, contiguous.kv_row_stride},
      {contiguous.v_batch_stride, contiguous.v_head_stride, contiguous.v_row_stride},
      {contiguous.o_batch_stride, contiguous.o_head_stride, contiguous.o_row_stride}};
  for (int i = 0; i < 4; ++i) {
    const int64_t* g = given[i].second;
    const bool unset = g[0] == 0 && g[1] == 0 && g[2] == 0;
    if (!unset && !(g[0] == want[i][0] && g[1] == want[i][1] && g[2] == want[i][2]))
      throw attn::unsupported_problem(fmt::format(
          "the backward takes tensors contiguous in the layout so far: {} ({}, {}, {}) are not ({}, {}, {})",
          given[i].first, g[0], g[1], g[2], want[i][0], want[i][1], want[i][2]));
  }
  attn::backward_tensors t;
  t.q = q, t.k = k, t.v = v, t.o = o, t.d_o = d_o, t.lse = lse, t.delta = delta, t.dq = dq, t.dk = dk, t.dv = dv;
  if (attn::is_varlen(s))  // a packed batch: its offsets and totals, as the forward's (fa2's backward)
    t.cu_seqlens_q = p.cu_seqlens_q, t.cu_seqlens_k = p.cu_seqlens_k, t.total_q = p.total_q, t.total_kv = p.total_k;
  return attn::make_bwd_params(s, t, p.softmax_scale);  // each pointer checked
}

}  // namespace

extern "C" {

int attn_tune_api_version(void) { return ATTN_TUNE_API_VERSION; }
const char* attn_tune_version_string(void) { return ATTN_TUNE_VERSION; }
const char* attn_tune_last_error(void) { return last_error.c_str(); }
const char* attn_tune_last_warning(void) { return last_warning.c_str(); }

const char* attn_tune_status_name(attn_tune_status status) {
  switch (status) {
    case ATTN_TUNE_OK: return "ok";
    case ATTN_TUNE_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case ATTN_TUNE_ERROR_UNSUPPORTED: return "unsupported problem";
    case ATTN_TUNE_ERROR_TABLE: return "table error";
    case ATTN_TUNE_ERROR_BUNDLE: return "bundle error";
    case ATTN_TUNE_ERROR_NO_DEVICE: return "no device";
    case ATTN_TUNE_ERROR_COMPILE: return "compile error";
    case ATTN_TUNE_ERROR_DEVICE: return "device error";
    case ATTN_TUNE_ERROR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

attn_tune_problem attn_tune_default_problem(void) {
  attn_tune_problem p{};
  p.struct_size = sizeof p;
  p.batch = p.heads = p.kv_heads = p.q_len = p.kv_len = 1;
  p.head_dim = 64;
  return p;
}

attn_tune_status attn_tune_context_create(const attn_tune_context_options* options, attn_tune_context** out) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    require_struct(options, "options");
    attn::engine_options e;
    e.device = options->device;
    e.cache_dir = options->cache_dir ? options->cache_dir : attn::default_cache_dir();
    e.table = options->table ? options->table : "";
    e.bundle = options->bundle ? options->bundle : "";
    e.warn = keep_warning;
    auto ctx = std::make_unique<attn_tune_context>();
    ctx->engine = std::make_unique<attn::engine>(e);
    *out = ctx.release();
  });
}

void attn_tune_context_destroy(attn_tune_context* ctx) { delete ctx; }

attn_tune_status attn_tune_check(const void* q, const void* k, const void* v, const void* o, const float* lse,
                                 const attn_tune_problem* problem) {
  return guarded([&] {
    require_struct(problem, "problem");
    const attn_tune_problem p = current(*problem);
    to_params(to_shape(p), q, k, v, o, lse, p);
  });
}

attn_tune_status attn_tune_forward(attn_tune_context* ctx, const void* q, const void* k, const void* v, void* o,
                                   float* lse, const attn_tune_problem* problem, void* stream,
                                   attn_tune_choice* choice) {
  return guarded([&] {
    require(ctx, "ctx");
    require_struct(problem, "problem");
    if (choice) require_struct(choice, "choice");
    const attn_tune_problem p = current(*problem);
    const attn::problem s = to_shape(p);
    const attn_k::fwd_params params = to_params(s, q, k, v, o, lse, p);
    const attn::forward_choice c = ctx->engine->forward(s, params, stream);
    fill_choice(choice, c.choice, c.from_bundle);
  });
}

attn_tune_status attn_tune_backward(attn_tune_context* ctx, const void* q, const void* k, const void* v, const void* o,
                                    const float* lse, const void* d_o, void* dq, void* dk, void* dv, float* delta,
                                    const attn_tune_problem* problem, void* stream, attn_tune_choice* choice) {
  return guarded([&] {
    require(ctx, "ctx");
    require_struct(problem, "problem");
    if (choice) require_struct(choice, "choice");
    const attn_tune_problem p = current(*problem);
    const attn::problem s = to_shape(p);
    const attn_k::bwd_params params = to_backward_params(s, p, q, k, v, o, lse, d_o, dq, dk, dv, delta);
    fill_choice(choice, ctx->engine->backward(s, params, stream), false, true);
  });
}

attn_tune_status attn_tune_choose(attn_tune_context* ctx, const attn_tune_problem* problem, attn_tune_choice* choice) {
  return guarded([&] {
    require(ctx, "ctx");
    require_struct(problem, "problem");
    require(choice, "choice");
    fill_choice(choice, ctx->engine->choose(to_shape(current(*problem))), false);
  });
}

attn_tune_status attn_tune_synchronize(attn_tune_context* ctx, void* stream) {
  return guarded([&] {
    require(ctx, "ctx");
    ctx->engine->synchronize(stream);
  });
}

attn_tune_status attn_tune_table_load(const char* path, attn_tune_table** out) {
  return guarded([&] {
    require(out, "out");
    *out = nullptr;
    require(path, "path");
    auto t = std::make_unique<attn_tune_table>();
    const std::string text = attn::read_file_text(path);
    if (attn::looks_like_bundle(text))
      t->table = std::make_unique<attn::tuned_table>(
          attn::tuned_table::parse(attn::parse_bundle(text, path).table, path));
    else
      t->table = attn::open_tuned_source(path);
    for (const std::string& w : t->table->warnings()) keep_warning(w);
    *out = t.release();
  });
}

void attn_tune_table_destroy(attn_tune_table* table) { delete table; }

attn_tune_status attn_tune_table_lookup(const attn_tune_table* table, const char* device_name, int cc_major,
                                        int cc_minor, int sm_count, const attn_tune_problem* problem,
                                        attn_tune_choice* choice) {
  return guarded([&] {
    require(table, "table");
    require(device_name, "device_name");
    require_struct(problem, "problem");
    require(choice, "choice");
    attn::device_desc d;
    d.name = device_name;
    d.cc_major = cc_major;
    d.cc_minor = cc_minor;
    d.sm_count = sm_count;
    table->table->check_device(d);
    const std::string arch = fmt::format("sm_{}{}{}", cc_major, cc_minor, cc_major == 9 && cc_minor == 0 ? "a" : "");
    fill_choice(choice, attn::choose_config(*table->table, d, attn::limits_for_arch(arch), to_shape(current(*problem))), false);
  });
}

}  // extern "C"
