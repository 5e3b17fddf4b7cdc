// Issue 20, item 3: the gate fails when it must, with its exit codes pinned. `check` against a
// baseline it matches exits 0; against a baseline faster than the kernel can be, 1 (REGRESSION);
// with kernels whose recorded config is a planted defect (tests/planted_defects.hpp), 1 (WRONG),
// naming the wrong result. Each verdict is read back from the --csv-report it wrote.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "../planted_defects.hpp"
#include "gpu_fixture.hpp"
#include "report/csv.hpp"

namespace attn::testing {
namespace {

namespace fs = std::filesystem;

int exit_code_of(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// The verdict column of each line of check's --csv-report.
std::vector<std::string> verdicts_of(const fs::path& report) {
  std::istringstream in(text_of(report));
  std::string line;
  std::vector<std::string> out;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    // shape,config,baseline_ms,now_ms,ratio,verdict,why: the shape is quoted (it has spaces, no commas)
    std::vector<std::string> fields;
    std::string field;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) fields.push_back(field), field.clear();
      else field += c;
    }
    fields.push_back(field);
    out.push_back(fields.size() > 5 ? fields[5] : "(short line: " + line + ")");
  }
  return out;
}

class gate_gpu : public gpu_test {
 protected:
  void SetUp() override {
    gpu_test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (m_gpu.backend == backend::hip) GTEST_SKIP() << "the baseline and the defects are fa2's, a CUDA family";
    m_dir = fs::temp_directory_path() / ("attn-tune-gate-gpu-" + std::to_string(::getpid()));
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
    // The baseline: one fa2 config, measured here.
    const std::string tune = std::string(ATTN_TUNE_BINARY) +
                             " --shape 1,4,256,64 --family fa2 --configs m64_n64_w4_s2 --seed 3 --no-db"
                             " --out " + baseline() + " > " + (m_dir / "tune.txt").string() + " 2>&1";
    ASSERT_EQ(exit_code_of(tune), 0) << tune << "\n" << text_of(m_dir / "tune.txt");
    const auto rows = read_csv(baseline());
    ASSERT_EQ(rows.size(), 1u);
    ASSERT_EQ(rows[0].status, status::ok);
    ASSERT_EQ(rows[0].rank, 1);
  }
  void TearDown() override {
    if (!m_dir.empty()) fs::remove_all(m_dir);
  }
  std::string baseline() const { return (m_dir / "baseline.csv").string(); }
  // Runs check; returns its exit code, the report's verdicts in *verdicts and its output in *text.
  int check(const std::string& baseline_csv, const std::string& extra, std::vector<std::string>* verdicts,
            std::string* text) {
    const fs::path report = m_dir / "report.csv", out = m_dir / "check.txt";
    fs::remove(report);
    const std::string command = std::string(ATTN_TUNE_BINARY) + " check --baseline " + baseline_csv +
                                " --no-db --min-reps 10 --csv " + report.string() + " " + extra + " > " +
                                out.string() + " 2>&1";
    const int rc = exit_code_of(command);
    *verdicts = verdicts_of(report);
    *text = text_of(out);
    return rc;
  }
  fs::path m_dir;
};

TEST_F(gate_gpu, a_baseline_the_kernel_matches_passes_with_exit_0) {
  std::vector<std::string> verdicts;
  std::string text;
  // A wide tolerance: the same kernel measured again is within it, whatever the noise.
  EXPECT_EQ(check(baseline(), "--tolerance 0.5", &verdicts, &text), 0) << text;
  EXPECT_EQ(verdicts, (std::vector<std::string>{"pass"})) << text;
  EXPECT_NE(text.find("check passed: 1 shapes"), std::string::npos) << text;
}

TEST_F(gate_gpu, a_baseline_faster_than_the_kernel_can_be_is_a_regression_with_exit_1) {
  auto rows = read_csv(baseline());
  rows[0].median_ms /= 50;  // 50 times faster than it ran
  rows[0].tflops *= 50;
  const std::string fast = (m_dir / "fast.csv").string();
  write_csv(fast, rows);
  std::vector<std::string> verdicts;
  std::string text;
  EXPECT_EQ(check(fast, "--tolerance 0.5", &verdicts, &text), 1) << text;
  EXPECT_EQ(verdicts, (std::vector<std::string>{"REGRESSION"})) << text;
  EXPECT_NE(text.find("confirmed by a second measurement"), std::string::npos) << text;
  EXPECT_NE(text.find("check FAILED"), std::string::npos) << text;
}

TEST_F(gate_gpu, a_planted_defect_in_the_recorded_config_is_wrong_with_exit_1) {
  const auto parent = m_dir / "defects";
  for (const char* defect : {"wrong_scale", "one_row_never_written"}) {
    SCOPED_TRACE(defect);
    const planted_defect* d = nullptr;
    for (const auto& p : planted_defects())
      if (std::string(p.name) == defect) d = &p;
    ASSERT_NE(d, nullptr);
    const fs::path kernels = plant(*d, parent);
    ASSERT_FALSE(kernels.empty()) << "anchor not found in kernels/" << d->file;
    std::vector<std::string> verdicts;
    std::string text;
    EXPECT_EQ(check(baseline(), "--tolerance 0.5 --no-cache --kernels-dir " + kernels.string(), &verdicts, &text), 1)
        << text;
    EXPECT_EQ(verdicts, (std::vector<std::string>{"WRONG"})) << text;
    EXPECT_NE(text.find("the variant is wrong now"), std::string::npos) << text;
    EXPECT_NE(text.find("kernel sources changed since the baseline"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace attn::testing
