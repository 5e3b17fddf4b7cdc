// A family's kernel hash covers exactly what it compiles: its source_files are the include closure
// of its root kernel files (issue 17, item 3), so editing any file a family includes, directly or
// not, changes that family's hash, and editing a file it does not include changes nothing.
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/family.hpp"
#include "codegen/kernel_sources.hpp"

namespace attn {
namespace {

kernel_sources edited(const kernel_sources& base, const std::string& name, const std::string& append) {
  auto files = base.files();
  bool found = false;
  for (auto& f : files)
    if (f.name == name) f.text += append, found = true;
  if (!found) files.push_back({name, append});
  return kernel_sources::from_files(files, "test");
}

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

TEST(kernel_hashes, each_family_lists_its_include_closure) {
  const kernel_sources embedded = kernel_sources::embedded();
  for (const char* name : {"fa2", "wgmma", "hopper", "mfma"}) {
    SCOPED_TRACE(name);
    const auto& files = find_family(name).source_files;
    EXPECT_TRUE(has(files, std::string(name) + ".cuh"));
    EXPECT_TRUE(has(files, "reference.cuh"));
    EXPECT_TRUE(has(files, "common/inputs.cuh"));  // through reference.cuh
    EXPECT_TRUE(has(files, "common/params.cuh"));
    EXPECT_TRUE(has(files, "common/attention.cuh"));  // the shared core
    EXPECT_TRUE(has(files, "common/softmax.cuh"));
    EXPECT_EQ(embedded.include_closure(files), files);  // closed
  }
  const auto& hopper = find_family("hopper").source_files;
  for (const char* f : {"hopper/config.cuh", "hopper/epilogue.cuh", "hopper/mainloop.cuh", "hopper/mma.cuh",
                        "hopper/producer.cuh", "hopper/scheduler.cuh", "hopper/softmax.cuh", "common/swizzle.cuh",
                        "common/hopper_ptx.cuh", "common/wgmma_ops.cuh", "common/hopper_params.cuh"})
    EXPECT_TRUE(has(hopper, f)) << f;
  EXPECT_FALSE(has(find_family("fa2").source_files, "hopper.cuh"));
  EXPECT_FALSE(has(find_family("mfma").source_files, "fa2.cuh"));
}

TEST(kernel_hashes, editing_any_included_file_changes_the_family_hash_and_no_other_file_does) {
  const kernel_sources embedded = kernel_sources::embedded();
  for (const char* name : {"fa2", "wgmma", "hopper", "mfma"}) {
    SCOPED_TRACE(name);
    const auto& mine = find_family(name).source_files;
    const uint64_t before = embedded.hash_of(mine);
    for (const auto& f : embedded.files()) {
      SCOPED_TRACE(f.name);
      const uint64_t after = edited(embedded, f.name, "\n// edited\n").hash_of(mine);
      if (has(mine, f.name))
        EXPECT_NE(after, before);
      else
        EXPECT_EQ(after, before);
    }
    EXPECT_EQ(edited(embedded, "unrelated.cuh", "// new\n").hash_of(mine), before);
  }
}

TEST(kernel_hashes, a_file_newly_included_under_kernels_dir_counts) {
  const kernel_sources embedded = kernel_sources::embedded();
  const auto& fa2 = find_family("fa2").source_files;
  // fa2.cuh gains an include of a new file (as a --kernels-dir tree may): editing that file now
  // changes fa2's hash, resolved by its name under kernels/ or beside the including file.
  for (const std::string include : {"common/extra.cuh", "extra.cuh"}) {
    SCOPED_TRACE(include);
    const kernel_sources with = edited(edited(embedded, "common/attention.cuh", "#include \"" + include + "\"\n"),
                                       "common/extra.cuh", "// one\n");
    EXPECT_TRUE(has(with.include_closure(fa2), "common/extra.cuh"));
    EXPECT_NE(edited(with, "common/extra.cuh", "// two\n").hash_of(fa2), with.hash_of(fa2));
  }
  // <system> includes and includes of files that are not there are left out.
  const kernel_sources odd = edited(embedded, "fa2.cuh", "#include <cstdint>\n#  include \"nowhere.cuh\"\n");
  EXPECT_EQ(odd.include_closure(fa2), embedded.include_closure(fa2));
}

}  // namespace
}  // namespace attn

// Issue 21, item 22: the kernel hash is XXH3 (as the cache's keys), of each file's name and text.
#include "core/digest.hpp"

namespace attn {
namespace {

TEST(kernel_hashes, are_xxh3_of_the_closure) {
  const kernel_sources two = kernel_sources::from_files({{"b.cuh", "// b\n"}, {"a.cuh", "#include \"b.cuh\"\n"}}, "t");
  EXPECT_EQ(two.hash_of({"a.cuh"}), xxh3_64(std::string("a.cuh\0#include \"b.cuh\"\n\0b.cuh\0// b\n\0", 36)));
  EXPECT_EQ(two.hash(), two.hash_of({"a.cuh"}));
}

}  // namespace
}  // namespace attn
