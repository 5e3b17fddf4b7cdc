// Without --out, a run writes results/<device>-<problem>.csv, or the next free name beside it: a
// second run of the same command neither refuses to start nor writes over the first one's results.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli/options.hpp"

namespace attn {
namespace {

TEST(default_out, takes_the_first_free_name) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "attn-default-out-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::filesystem::path dir = tmpl;
  const std::string path = (dir / "dev-1x2x64x64x64-bf16-bhsd.csv").string();
  EXPECT_EQ(first_free_path(path), path);
  std::ofstream(path) << "first run\n";
  EXPECT_EQ(first_free_path(path), (dir / "dev-1x2x64x64x64-bf16-bhsd-2.csv").string());
  std::ofstream(dir / "dev-1x2x64x64x64-bf16-bhsd-2.csv") << "second run\n";
  EXPECT_EQ(first_free_path(path), (dir / "dev-1x2x64x64x64-bf16-bhsd-3.csv").string());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace attn
