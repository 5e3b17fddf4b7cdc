#include "cli/options.hpp"

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include <cctype>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string_view>
#include <tuple>

#include "backend/runtime.hpp"
#include "cli/command_options.hpp"
#include "cli/option_checks.hpp"
#include "codegen/cache.hpp"
#include "core/digest.hpp"
#include "codegen/compile_pool.hpp"
#include "codegen/family.hpp"
#include "db/tuned_db.hpp"
#include "run/search.hpp"

namespace attn {

namespace {

const char* description = R"(attn-tune: find the fastest launch configuration of a fused attention kernel
for one problem shape on the GPU at hand.

Every variant of the search space (BLOCK_M x BLOCK_N x warps x stages) is compiled at run time
with NVRTC (hiprtc for AMD GPUs; in parallel, cached on disk), checked against a reference on fresh
random inputs (poisoned outputs, fp32 GPU reference, float64 CPU check of sampled rows), timed
with device events (warm-up, L2 flushed, median and IQR), and ranked.
TFLOPS = 4*B*H*Nq*Nkv*D / time, halved when causal.

Examples:
  attn-tune --shape 4,32,4096,128 --causal
  attn-tune --shape 2,32,1024,128 --kv-len 8192 --kv-heads 8 --dtype fp16 --out results/mine.csv
  attn-tune --shape 1,8,512,64 --space block_m=64,128 block_n=64 warps=4 stages=2,3
  attn-tune --compile-only --arch sm_80 --shape 4,32,4096,128     # no GPU needed)";

bool asks_for_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "-h" || std::string_view(argv[i]) == "--help") return true;
  return false;
}

// The default space of the family that runs here (hopper on an H100/H200, else fa2; mfma on AMD),
// and the others': --help teaches what a plain run searches on this machine.
std::string default_space_help() {
  std::string here;
  try {
    const backend b = detect_backend();
    const device_runtime& rt = runtime_for(b);
    if (rt.device_count(nullptr) > 0) {
      const gpu_info gpu = rt.open_device(0);
      const kernel_family* chosen = &default_family(b);
      for (const kernel_family* f : families_of(b))
        if (f->supersedes_others && runs_on(*f, gpu.desc.cc_major, gpu.desc.cc_minor)) chosen = f;
      here = fmt::format("Default on this {} ({}): {} {}{}", gpu.desc.name, gpu.desc.arch, chosen->name,
                         space_text(chosen->default_space), knob_extras_text(chosen->default_space));
    }
  } catch (const std::exception&) {
    here.clear();  // no device to ask: the defaults below
  }
  const std::string elsewhere = fmt::format("{} {}; on an H100/H200 (sm_90): hopper {}{}; on AMD: mfma {}",
                                            fa2_family().name, space_text(fa2_family().default_space),
                                            space_text(hopper_family().default_space),
                                            knob_extras_text(hopper_family().default_space),
                                            space_text(mfma_family().default_space));
  return here.empty() ? fmt::format("Default (no GPU here): {}", elsewhere)
                      : fmt::format("{}. Elsewhere: {}", here, elsewhere);
}

}  // namespace

std::string device_slug(const std::string& name) {
  std::string slug;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) slug += static_cast<char>(std::tolower(c));
    else if (!slug.empty() && slug.back() != '-') slug += '-';
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return slug.empty() ? "device" : slug;
}

std::string default_out_path(const std::string& device_name, const problem& s) {
  std::string variant;  // the fields that make another problem of the same shape
  if (s.page_size > 0) variant += fmt::format("-paged{}", s.page_size);
  if (has_window(s)) variant += fmt::format("-window{}x{}", s.window_left, s.causal ? 0 : s.window_right);
  if (has_softcap(s)) variant += fmt::format("-softcap{}", s.softcap);
  if (has_value_dim(s)) variant += fmt::format("-dv{}", value_dim(s));
  // A packed batch's lengths may be long: a digest of them names the file.
  if (is_varlen(s)) variant += fmt::format("-varlen{:08x}", xxh3_64(s.seqlens + "|" + s.kv_seqlens) & 0xffffffffu);
  if (has_backward(s)) variant += "-" + to_string(s.pass);  // nothing for the forward: its names stay
  return fmt::format("results/{}-{}x{}x{}x{}x{}-{}-{}{}{}.csv", device_slug(device_name),
                     s.batch, s.heads, s.q_len, s.kv_len, s.head_dim, to_string(s.dtype),
                     to_string(s.layout), s.causal ? "-causal" : "", variant);
}

claimed_file::claimed_file(const std::string& path) {
  std::error_code ec;
  if (const auto parent = std::filesystem::path(path).parent_path(); !parent.empty())
    std::filesystem::create_directories(parent, ec);
  const std::string stem = path.size() > 4 && path.compare(path.size() - 4, 4, ".csv") == 0
                               ? path.substr(0, path.size() - 4) : path;
  for (int i = 1;; ++i) {
    const std::string candidate = i == 1 ? path : fmt::format("{}-{}.csv", stem, i);
    const int fd = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0)
      throw std::runtime_error(fmt::format("cannot write '{}': {}", candidate, std::strerror(errno)));
    struct stat st {};
    ::fstat(fd, &st);
    ::close(fd);
    m_path = candidate;
    m_inode = st.st_ino;
    return;
  }
}

claimed_file& claimed_file::operator=(claimed_file&& o) noexcept {
  if (this != &o) {
    release();
    m_path = std::exchange(o.m_path, std::string());
    m_inode = std::exchange(o.m_inode, 0);
  }
  return *this;
}

claimed_file::~claimed_file() { release(); }

void claimed_file::release() {
  struct stat st {};
  // Written, the file is another one (renamed over the claim); still the claim and empty: unused.
  if (!m_path.empty() && ::lstat(m_path.c_str(), &st) == 0 && st.st_ino == m_inode && st.st_size == 0)
    ::unlink(m_path.c_str());
  m_path.clear();
}

backend choose_backend(const std::string& requested, const std::string& family, const std::string& arch,
                       bool runs_on_device, const std::function<bool()>& hip_device_present) {
  if (requested != "auto" && requested != "cuda" && requested != "hip")
    throw invalid_input(fmt::format("invalid --backend '{}': expected auto, cuda or hip", requested));
  if (!family.empty()) {
    const kernel_family& f = find_family(family);
    if (requested != "auto" && requested != to_string(f.backend))
      throw invalid_input(fmt::format("--family {} runs on the {} backend, not --backend {}", family,
                                      to_string(f.backend), requested));
    return f.backend;
  }
  if (requested != "auto") return requested == "hip" ? backend::hip : backend::cuda;
  if (arch.rfind("gfx", 0) == 0) return backend::hip;
  if (!arch.empty()) return backend::cuda;
  return runs_on_device && hip_device_present() ? backend::hip : backend::cuda;
}

bool parse_options(int argc, char** argv, options& out) {
  CLI::App app{description, "attn-tune"};
  app.get_formatter()->column_width(34);
  std::string shape_text = "4,32,4096,128", dtype_text = "bf16", layout_text = "bhsd";
  std::string kv_len_text, kv_heads_text, page_size_text, kv_lens_text;  // parsed by option_checks: CLI11 would clamp huge values
  std::string window_text, softcap_text, dv_text, seqlens_text, kv_seqlens_text, pass_text = "fwd";
  std::string problem_text;  // the whole problem as problem_key() writes it: how a run hands one to its child
  bool causal = false, no_cache = false;
  std::vector<std::string> space_tokens;
  std::string seed_text, inputs_text = "normal";
  out.cache_dir = default_cache_dir();

  app.add_option("--shape", shape_text, "Problem B,H,N,D (batch, heads, sequence length, head dim)")
      ->capture_default_str();
  app.add_flag("--causal", causal,
               "Causal mask, aligned bottom-right when N != kv-len (key j is hidden from query i "
               "when j > i + kv_len - N; PyTorch's is_causal is top-left)");
  app.add_option("--kv-len", kv_len_text, "Key/value length for cross-attention (default: N)");
  app.add_option("--kv-heads", kv_heads_text, "Key/value heads for GQA/MQA; H must be divisible by it (default: H)");
  app.add_option("--page-size", page_size_text,
                 "Paged K/V cache: K and V as [pages, P, kv_heads, D] with a page table [B, pages per sequence] "
                 "holding a random permutation of the pages, as a serving engine's allocator leaves them; P a "
                 "power of two in [1, 1024] (fa2 family; hopper for pages of 16 rows or more; default: contiguous K/V)");
  app.add_option("--kv-lens", kv_lens_text,
                 "Each sequence's own K/V length (FlashAttention's cache_seqlens), each at most --kv-len (the "
                 "cache's capacity, default: the longest): L1,L2,... (B lengths, 0 allowed) or uniform:LO:HI "
                 "(B lengths drawn from the text's own seed, the same on every run); the causal mask is "
                 "bottom-right per sequence (fa2 and hopper families)");
  app.add_option("--seqlens", seqlens_text,
                 "A packed variable-length batch (flash_attn_varlen_func): each sequence's own length, "
                 "L1,L2,... (B lengths, 0 allowed) or uniform:LO:HI (B draws from the text's own seed); Q, K, V "
                 "and O packed as [total, H, D] (bshd) or [H, total, D] (bhsd) with cumulative offsets; N of "
                 "--shape is the longest a sequence may be (default: the longest given); the causal mask and a "
                 "window are bottom-right per sequence (hopper and fa2 families). E.g. --shape 32,16,8192,128 --seqlens "
                 "uniform:128:8192");
  app.add_option("--kv-seqlens", kv_seqlens_text,
                 "The keys' lengths of a packed batch for cross-attention (cu_seqlens_k), each at most --kv-len "
                 "(default: the longest); without it the keys' lengths are --seqlens'");
  app.add_option("--window", window_text,
                 "Sliding window LEFT,RIGHT (FlashAttention's window_size): query i sees key j when "
                 "i + kv_len - N - LEFT <= j <= i + kv_len - N + RIGHT; -1 = no limit on that side; with "
                 "--causal RIGHT is 0 (a RIGHT of 0 is the causal mask). TFLOPS count the visible pairs "
                 "(fa2 and hopper families). E.g. --window 4096,0 --causal");
  app.add_option("--softcap", softcap_text,
                 "Logit soft-capping: scores become C*tanh(score/C) after the softmax scale (Gemma-2: 50; "
                 "0 = off; fa2 and hopper families)");
  app.add_option("--dv", dv_text,
                 "V's and O's head dim when it differs from Q's and K's D (DeepSeek-V3's prefill: --shape "
                 "1,128,4096,192 --dv 128), in [32, 256]; TFLOPS count 2*(D + dv) per visible pair (fa2; hopper when D and dv are multiples of 8)");
  app.add_option("--pass", pass_text,
                 "Which pass to tune: fwd (the forward: O and its LSE), bwd (the backward: dQ, dK, dV from dO, "
                 "with the reference forward's O and LSE as inputs; its own kernels, fa2's mma.sync and wgmma's, "
                 "and its own variants such as kv_m64_n128_w8_s2-q_m64_n64_w4_s2), or fwdbwd (both, one after "
                 "the other, and their sum). Backward TFLOPS count 2.5x the forward's FLOPs (5 matrix products "
                 "to its 2, FlashAttention's convention)")
      ->capture_default_str();
  app.add_option("--dtype", dtype_text, "Element type: bf16 or fp16")->capture_default_str();
  app.add_option("--problem", problem_text, "The problem as a key (batch=..,heads=..,...)")->group("");
  app.add_option("--layout", layout_text, "bhsd = [B,H,N,D] contiguous, bshd = [B,N,H,D]")
      ->capture_default_str();
  app.add_option("--family", out.families,
                 "Kernel families to search, comma-separated: fa2 (NVIDIA sm_80+, mma.sync), wgmma (NVIDIA "
                 "Hopper sm_90a, warpgroup MMA), hopper (NVIDIA Hopper sm_90a: TMA, warp-specialized pipeline, "
                 "ping-pong, persistent grid), mfma (AMD, MFMA). Default: hopper on an H100/H200 (sm_90, or "
                 "--arch sm_90a; fa2 and wgmma never won there: give --family fa2,wgmma,hopper to search "
                 "them too; a decode-sized problem, at most 64 packed query rows per K/V head: fa2 and hopper, "
                 "the families with split-KV and packed GQA), fa2 elsewhere on NVIDIA, mfma on AMD")
      ->delimiter(',');
  app.add_option("--backend", out.backend,
                 "auto, cuda or hip. auto: the --family's backend, else hip for a gfx --arch, else hip "
                 "when an AMD GPU is present, else cuda. The AMD path is compile-verified only: it has "
                 "not run on AMD hardware yet")
      ->capture_default_str();
  app.add_option("--space", space_tokens,
                 "Search space, axes not named keep their family's defaults, e.g. --space block_m=64,128 "
                 "block_n=64 warps=4 stages=2,3; a family's own axis (hopper's schedule, fa2's loader) "
                 "goes to the families of the run that have it. hopper's schedule is a set of bits: 1 overlap, "
                 "2 ping-pong, 4 persistent grid, 8 two Q tiles, 16 half-width last tile, 32 two blocks an SM, "
                 "64 softcap's polynomial tanh, 128 trimmed warpgroups, 256 half-width first tile "
                 "(docs/search-and-database.md). " + (asks_for_help(argc, argv) ? default_space_help() : ""));
  app.add_option("--configs", out.configs,
                 "Run exactly these configs instead of a space, e.g. m128_n64_w4_s2,m64_n64_w4_s1")
      ->delimiter(',');
  app.add_option("--out", out.out, "CSV with one row per variant (default: results/<device>-<shape>.csv)");
  app.add_option("--json", out.json_out,
                 "Also write the run as JSON (device, clocks, versions, seed; every variant; the best) to this "
                 "file, or - for standard output (tune, sweep, check)");
  bool quiet = false, verbose = false;
  app.add_flag("-q,--quiet", quiet, "Print only the best line and errors");
  app.add_flag("-v,--verbose", verbose, "Print every variant's compile log and measurement, and keep every progress line");
  app.add_flag("--force", out.force, "Overwrite an existing --out results CSV (never replaced otherwise)");
  app.add_option("--dump", out.dump_dir, "Write q, k, v and the best variant's o and lse as .npy files here");
  app.add_flag("--compile-only", out.compile_only,
               "No GPU needed: compile the whole space for --arch and report registers, spills, "
               "shared memory");
  app.add_option("--arch", out.arch,
                 "Target for --compile-only: sm_80, sm_86, sm_89, sm_90, sm_90a (default), or gfx90a (HIP)");
  app.add_option("--cache-dir", out.cache_dir, "Compiled-kernel cache (env ATTN_TUNE_CACHE_DIR)")
      ->capture_default_str();
  app.add_flag("--no-cache", no_cache, "Compile everything, read and write no cache");
  app.add_option("--kernels-dir", out.kernels_dir,
                 "Kernel development: compile the kernels/ sources of this directory instead of the "
                 "copy built into attn-tune");
  app.add_option("--jobs,-j", out.jobs, "Compile threads (default: all cores)");
  app.add_option("--device", out.device, "Device ordinal (CUDA or HIP)")->capture_default_str();
  app.add_option("--seed", seed_text, "Seed of the random inputs (default: from the clock, so every run checks fresh inputs)");
  app.add_option("--inputs", inputs_text,
                 "What every variant is checked on: normal (standard-normal Q, K, V), wide (scores whose spread "
                 "grows along the keys, standard deviation 4 to 12: row maxima growing across tiles, so the "
                 "online softmax's rescale runs), sink (keys 0, N/3 and 2N/3 with logits of about 30, 20 and "
                 "40, as attention sinks have). Tuned results are stored per kind")
      ->capture_default_str();
  app.add_option("--min-reps", out.min_reps, "Timed repetitions per variant, at least")->capture_default_str();
  app.add_option("--max-reps", out.max_reps, "Timed repetitions per variant, at most")->capture_default_str();
  app.add_option("--min-time-ms", out.min_time_ms,
                 "Repeat at least until the timed kernels add up to this many ms")->capture_default_str();
  app.add_option("--max-time-ms", out.max_time_ms,
                 "Stop repeating once the timed kernels add up to this many ms, however noisy")
      ->capture_default_str();
  app.add_option("--max-noise", out.max_noise,
                 "Stop repeating once the median is known to this relative precision: the half-width of "
                 "its 95% confidence interval (order statistics) over the median, e.g. 0.01 = 1%; 0 = "
                 "only --max-time-ms and --max-reps stop")
      ->capture_default_str();
  app.add_option("--search", out.search,
                 "screen: verify every variant, screen each with a short measurement, then measure to full "
                 "precision only those that can still win (within the screening's noise of the best, at least "
                 "the top 3); exhaustive: measure every verified variant to full precision; halving: "
                 "successive halving (the faster half, twice the precision, until 3 are left); random: "
                 "--samples configs drawn from the space (compiled, verified, screened)")
      ->capture_default_str();
  app.add_option("--objective", out.objective,
                 "tune, sweep: what the best is chosen by. time: the fastest median (near-ties to the simpler "
                 "config); energy: the fewest joules per call: the median times the board's power while the "
                 "variant runs back to back, from NVML's energy counter between two of its steps at least 0.5 s "
                 "apart (about 0.6 s more per fully measured variant; the screening still picks the contenders "
                 "by time: --search exhaustive measures every variant's energy). With time, energy is not "
                 "measured. energy needs NVML's counter (Volta and newer, with the "
                 "driver): without it the run stops, saying so. Tuned results are stored per objective")
      ->capture_default_str();
  app.add_option("--regime", out.regime,
                 "tune, sweep: how each full measurement meets the GPU. burst: its repetitions start at once, "
                 "from whatever clock the GPU is at (as a call among a model's others sees it; the clocks it "
                 "ran at are in the CSV); sustained: the kernel first runs back to back until the SM clock "
                 "(NVML) has settled, at least 200 ms and at most 2 s a variant, as a long run of one kernel "
                 "sees it (without NVML it runs the 200 ms). Tuned results are stored per regime")
      ->capture_default_str();
  app.add_option("--budget-s", out.budget_s,
                 "Stop verifying and timing after this many seconds (from the start of the tuning) and report "
                 "the best found so far (default: no budget)");
  app.add_option("--samples", out.samples, "Configs per family that --search random draws")->capture_default_str();
  app.add_option("--db", out.db_path,
                 "Tuned-results database (SQLite; env ATTN_TUNE_DB; default ~/.cache/attn-tune/tuned.sqlite): a "
                 "shape already tuned on this device with these kernel sources and space is answered from it");
  app.add_flag("--no-db", out.no_db, "Neither read nor write the tuned-results database");
  app.add_flag("--retune", out.retune, "Measure again even when the database has the answer, and replace it");
  app.add_flag("--deterministic", out.deterministic,
               "Deterministic mode (FlashAttention's): a variant passes its check only when a rerun on the same "
               "inputs gives bit-identical outputs (the backward's dQ, dK, dV; the forward's O and LSE). The "
               "backward's atomic-dQ variants (-dq_atomic: dQ summed by fp32 atomics) are left out of the search; "
               "every other variant is deterministic by construction, and the flag checks it");
  app.add_option("--kernel-timeout-s", out.kernel_timeout_s,
                 "Seconds a variant's kernels may take (its verification run, or a batch of up to 10 timed "
                 "launches) before they count as hung: a hung kernel keeps the GPU busy until attn-tune "
                 "exits, so the run stops there, writes what it measured and exits with code 6")
      ->capture_default_str();
  app.add_option("--top", out.top, "Rows of the ranked table to print (0 = all)")->capture_default_str();
  app.set_version_flag("--version", std::string("attn-tune ") + ATTN_TUNE_VERSION);

  // Subcommands share the tuning options above (space, timing, cache, device), given before or
  // after the subcommand's name.
  const subcommands commands = add_subcommands(app, out);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    app.exit(e);
    return false;
  } catch (const CLI::CallForAllHelp& e) {
    app.exit(e);
    return false;
  } catch (const CLI::CallForVersion& e) {
    app.exit(e);
    return false;
  }

  check_subcommands(commands, out);

  problem s = parse_shape(shape_text);
  const bool shape_given = app.count("--shape") > 0;
  if (app.count("--kv-len")) s.kv_len = parse_positive_count(kv_len_text, "--kv-len");
  if (app.count("--kv-heads")) s.kv_heads = parse_positive_count(kv_heads_text, "--kv-heads");
  if (app.count("--page-size")) s.page_size = parse_positive_count(page_size_text, "--page-size");
  if (app.count("--kv-lens")) {
    s.kv_lens = kv_lens_from_option(kv_lens_text);
    if (!app.count("--kv-len")) s.kv_len = longest_kv_len(s.kv_lens, kv_lens_text);
  }
  if (app.count("--seqlens")) {
    s.seqlens = kv_lens_from_option(seqlens_text, "--seqlens");
    if (!shape_given) s.q_len = longest_kv_len(s.seqlens, seqlens_text, "--seqlens");
    if (!app.count("--kv-len") && !app.count("--kv-seqlens")) s.kv_len = s.q_len;
  }
  if (app.count("--kv-seqlens")) {
    s.kv_seqlens = kv_lens_from_option(kv_seqlens_text, "--kv-seqlens");
    if (!app.count("--kv-len")) s.kv_len = longest_kv_len(s.kv_seqlens, kv_seqlens_text, "--kv-seqlens");
  }
  for (int i = 1; i < argc; ++i) out.arguments.emplace_back(argv[i]);
  if (app.count("--arch") && out.arch.empty()) throw invalid_input("invalid --arch '': name a target such as sm_90a");
  if (quiet && verbose) throw invalid_input("-q/--quiet and -v/--verbose exclude each other");
  out.verbosity = quiet ? verbosity::quiet : verbose ? verbosity::verbose : verbosity::normal;
  if (out.json_out == "-" && out.out == "-")
    throw invalid_input("--out - and --json - cannot both go to standard output");
  if (out.compile_only && !out.dump_dir.empty())
    throw invalid_input("--dump writes the best variant's outputs, which needs a GPU run: it does nothing with "
                        "--compile-only");
  s.causal = causal;
  if (app.count("--window")) {
    std::tie(s.window_left, s.window_right) = parse_window(window_text);
    if (causal && s.window_right > 0)
      throw invalid_input(fmt::format("invalid --window '{}' with --causal: the causal mask hides every key right "
                                      "of the diagonal, so RIGHT must be 0 or -1",
                                      window_text));
  }
  if (app.count("--softcap")) s.softcap = parse_softcap(softcap_text);
  if (app.count("--dv")) s.head_dim_v = parse_value_dim(dv_text);
  s.pass = parse_pass(pass_text);  // throws naming a bad one and the choices
  out.pass_given = app.count("--pass") > 0;
  if (!out.dump_dir.empty() && s.pass == attention_pass::bwd)
    throw invalid_input("--dump writes the forward's q, k, v and its best variant's o and lse: give --pass fwd or "
                        "fwdbwd (whose forward it dumps)");
  canonicalize(s);
  s.dtype = parse_dtype(dtype_text);
  s.layout = parse_layout(layout_text);
  validate(s);
  if (app.count("--problem")) {
    for (const char* o : {"--shape", "--kv-len", "--kv-heads", "--dtype", "--layout", "--causal", "--page-size",
                          "--kv-lens", "--window", "--softcap", "--dv", "--seqlens", "--kv-seqlens", "--pass"})
      if (app.count(o)) throw invalid_input(fmt::format("--problem gives the whole problem: leave out {}", o));
    s = parse_problem_key(problem_text);
  }
  out.problem = s;
  const bool runs_on_device =
      !out.compile_only && (out.command == command::tune || out.command == command::sweep || out.command == command::check);
  std::vector<std::string> names = out.families;  // --family, split at commas
  for (const auto& n : names) {
    find_family(n);  // throws naming an unknown one
    if (std::count(names.begin(), names.end(), n) > 1)
      throw invalid_input(fmt::format("invalid --family '{}': {} is named twice", fmt::join(names, ","), n));
  }
  const backend chosen = choose_backend(out.backend, names.empty() ? "" : names.front(), out.arch, runs_on_device,
                                        [] { return detect_backend() == backend::hip; });
  out.backend = to_string(chosen);
  out.families_defaulted = names.empty();
  if (names.empty())
    for (const kernel_family* f : families_of(chosen)) names.push_back(f->name);
  for (const auto& n : names)
    if (find_family(n).backend != chosen)
      throw invalid_input(fmt::format("--family {} runs on the {} backend, not {}", n,
                                      to_string(find_family(n).backend), to_string(chosen)));
  out.families = names;
  out.family = fmt::format("{}", fmt::join(names, ","));
  if (out.arch.empty()) out.arch = chosen == backend::cuda ? "sm_90a" : "gfx90a";
  if ((chosen == backend::cuda) == (out.arch.rfind("sm_", 0) != 0))
    throw invalid_input(fmt::format("--arch {} is not a {} target (family {})", out.arch, out.backend, out.family));
  // --configs names one family's configs: without --family, compiling for an --arch that one
  // family alone of the defaults runs on (sm_80: fa2), that one is meant.
  if (!out.configs.empty() && out.families_defaulted && out.compile_only && chosen == backend::cuda) {
    const resource_limits target = limits_for_arch(out.arch);
    std::vector<std::string> running;
    for (const auto& n : names)
      if (runs_on(find_family(n), target.cc_major, target.cc_minor)) running.push_back(n);
    if (!running.empty()) names = running;
    out.families = names;
    out.family = fmt::format("{}", fmt::join(names, ","));
  }
  // A family's own axis (hopper's schedule, fa2's loader) is given to the families that have it:
  // `--space schedule=3` on a run of fa2 and hopper narrows hopper's schedules and leaves fa2's
  // loaders alone. An axis no family of the run has is still an error (parse_space names it).
  auto own_axis_of_another = [&](const std::string& token, const kernel_family& f) {
    const std::string axis = token.substr(0, token.find('='));
    if (axis == f.default_space.knob_name) return false;
    return std::any_of(names.begin(), names.end(),
                       [&](const std::string& n) { return find_family(n).default_space.knob_name == axis; });
  };
  for (const auto& n : names) {
    const kernel_family& f = find_family(n);
    std::vector<std::string> tokens;
    for (const auto& t : space_tokens)
      if (!own_axis_of_another(t, f)) tokens.push_back(t);
    out.spaces.push_back(tokens.empty() ? f.default_space : parse_space(tokens, f.default_space));
    if (out.spaces.back().enumerate().empty()) throw invalid_input("--space is empty");
  }
  check_config_names(out.configs, out.problem.pass);
  check_distinct(out.configs);
  if (!out.configs.empty() && !space_tokens.empty())
    throw invalid_input("--configs and --space exclude each other");
  if (!out.configs.empty() && names.size() != 1)
    throw invalid_input(fmt::format("--configs needs exactly one --family (the configs of {} differ)", out.family));
  if (no_cache) out.cache_dir.clear();
  if (out.jobs < 0) throw invalid_input(fmt::format("invalid --jobs {}: must be >= 0", out.jobs));
  if (out.min_reps < 1 || out.max_reps < out.min_reps)
    throw invalid_input(fmt::format("invalid --min-reps {} / --max-reps {}: need 1 <= min <= max",
                                    out.min_reps, out.max_reps));
  if (!(out.min_time_ms >= 0)) throw invalid_input(fmt::format("invalid --min-time-ms {}", out.min_time_ms));
  if (!(out.max_time_ms > 0))
    throw invalid_input(fmt::format("invalid --max-time-ms {}: must be a positive number of ms", out.max_time_ms));
  if (out.min_time_ms > out.max_time_ms)
    throw invalid_input(fmt::format("invalid --min-time-ms {} / --max-time-ms {}: the floor is above the cap",
                                    out.min_time_ms, out.max_time_ms));
  if (out.max_noise >= 0.5 && std::isfinite(out.max_noise))  // +-50% or more: surely a percent
    throw invalid_input(fmt::format("invalid --max-noise {}: a fraction, not a percent (did you mean {}?)",
                                    out.max_noise, out.max_noise / 100));
  if (!(out.max_noise >= 0 && out.max_noise < 0.5))
    throw invalid_input(fmt::format("invalid --max-noise {}: expected a fraction such as 0.01", out.max_noise));
  if (!(out.kernel_timeout_s > 0))
    throw invalid_input(
        fmt::format("invalid --kernel-timeout-s {}: must be a positive number of seconds", out.kernel_timeout_s));
  parse_search(out.search);  // throws naming a bad one
  parse_objective(out.objective);
  parse_regime(out.regime);
  if (!(out.budget_s >= 0))
    throw invalid_input(fmt::format("invalid --budget-s {}: must be a non-negative number of seconds", out.budget_s));
  if (out.samples < 1) throw invalid_input(fmt::format("invalid --samples {}: must be at least 1", out.samples));
  if (out.top < 0) throw invalid_input(fmt::format("invalid --top {}", out.top));
  if (out.device < 0) throw invalid_input(fmt::format("invalid --device {}", out.device));
  out.inputs = parse_input_kind(inputs_text);  // throws naming a bad one
  if (seed_text.empty()) {
    out.seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  } else {
    out.seed = parse_seed(seed_text);
  }
  return true;
}

}  // namespace attn
