// The compile cache never trusts a damaged entry and says once when it cannot write (issue 11,
// item 3).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "codegen/cache.hpp"
#include "codegen/cache_entry.hpp"
#include "core/private_dir.hpp"
#include "temp_dir.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

compile_result fake_result() {
  compile_result r;
  r.ok = true;
  r.cubin = std::string(4000, '\x7f') + "ELF-ish binary";
  r.log = "ptxas info    : Used 123 registers, 0 bytes spill stores, 0 bytes spill loads\n";
  return r;
}

TEST(cache_entry, round_trips_and_refuses_damage) {
  const std::string bytes = encode_cache_entry("k1", {"binary\0x", "log"});
  std::string why;
  auto e = decode_cache_entry(bytes, "k1", why);
  ASSERT_TRUE(e) << why;
  EXPECT_EQ(e->binary, std::string("binary\0x"));
  EXPECT_EQ(e->log, "log");
  EXPECT_FALSE(decode_cache_entry(bytes.substr(0, bytes.size() - 1), "k1", why));
  EXPECT_NE(why.find("where the header says"), std::string::npos) << why;
  std::string flipped = bytes;
  flipped[flipped.size() - 5] ^= 1;
  EXPECT_FALSE(decode_cache_entry(flipped, "k1", why));
  EXPECT_EQ(why, "checksum mismatch");
  EXPECT_FALSE(decode_cache_entry("", "k1", why));
  EXPECT_FALSE(decode_cache_entry(encode_cache_entry("k1", {"", "log"}), "k1", why));
  EXPECT_EQ(why, "an empty binary");
}

TEST(compile_cache, the_key_is_128_bits) {
  const compile_cache cache("");
  const std::string k = cache.key("source", "sm_80", {});
  EXPECT_EQ(k.rfind("sm_80-", 0), 0u);
  EXPECT_EQ(k.size(), std::string("sm_80-").size() + 32);
  EXPECT_NE(k, cache.key("sourcf", "sm_80", {}));
}

TEST(compile_cache, a_truncated_or_random_entry_is_not_used_and_is_said) {
  temp_dir d;
  const compile_cache cache(d.path().string());
  const std::string key = cache.key("source", "sm_80", {});
  cache.store(key, fake_result());
  ASSERT_TRUE(cache.load(key));
  EXPECT_EQ(cache.load(key)->cubin, fake_result().cubin);
  const std::string path = cache.entry_path(key);

  fs::resize_file(path, 1000);  // cut short
  testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.load(key));
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("cache entry '" + path + "' is damaged"), std::string::npos) << err;

  std::mt19937 rng(7);  // random bytes of the same size
  std::string junk(slurp(path).size(), '\0');
  for (char& c : junk) c = static_cast<char>(rng());
  spit(path, junk);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.load(key));
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("is damaged"), std::string::npos) << err;

  cache.store(key, fake_result());  // repaired by the next store
  EXPECT_TRUE(cache.load(key));
}

TEST(compile_cache, concurrent_stores_leave_only_whole_entries) {
  temp_dir d;
  const compile_cache cache(d.path().string());
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      for (int k = 0; k < 10; ++k) cache.store(cache.key("same", "sm_80", {}), fake_result());
    });
  for (auto& t : threads) t.join();
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(d.path())) {
    ++files;
    EXPECT_EQ(e.path().extension(), ".entry") << e.path();  // no temporary names left
  }
  EXPECT_EQ(files, 1u);
  EXPECT_TRUE(cache.load(cache.key("same", "sm_80", {})));
}

TEST(compile_cache, an_unwritable_cache_dir_is_said_once) {
  temp_dir d;
  spit(d / "a-file", "not a folder");
  const compile_cache cache(d / "a-file");
  testing::internal::CaptureStderr();
  cache.store("k1", fake_result());
  cache.store("k2", fake_result());
  const std::string err = testing::internal::GetCapturedStderr();
  const std::string said = "the compile cache '" + (d / "a-file") + "' cannot be written";
  ASSERT_NE(err.find(said), std::string::npos) << err;
  EXPECT_EQ(err.find(said, err.find(said) + 1), std::string::npos) << "said twice: " << err;
}

}  // namespace
}  // namespace attn

// Issue 21, items 4 and 5: links planted in the cache are never followed, an entry copied over
// another key's is refused, and the folder used without HOME is this user's alone.
namespace attn {
namespace {

TEST(compile_cache, a_planted_link_is_neither_read_nor_written_through) {
  temp_dir d;
  const compile_cache cache((d / "cache"));
  const std::string key = cache.key("source", "sm_80", {});
  cache.store(key, fake_result());
  spit(d / "victim", "the user's file");
  std::filesystem::remove(cache.entry_path(key));
  std::filesystem::create_symlink("../victim", cache.entry_path(key));
  testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.load(key));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("a symbolic link"), std::string::npos) << err;
  cache.store(key, fake_result());
  EXPECT_EQ(slurp(d / "victim"), "the user's file");
  EXPECT_FALSE(std::filesystem::is_symlink(cache.entry_path(key)));
  std::filesystem::remove(cache.entry_path(key));
  std::filesystem::create_symlink("../created", cache.entry_path(key));  // dangling
  cache.store(key, fake_result());
  EXPECT_FALSE(std::filesystem::exists(d / "created"));
  EXPECT_TRUE(cache.load(key));
}

TEST(compile_cache, an_entry_copied_over_another_key_is_refused) {
  temp_dir d;
  const compile_cache cache(d.path().string());
  const std::string a = cache.key("config a", "sm_80", {}), b = cache.key("config b", "sm_80", {});
  cache.store(a, fake_result());
  std::filesystem::copy_file(cache.entry_path(a), cache.entry_path(b));
  testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.load(b));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("holds the entry of another key, " + a), std::string::npos) << err;
  EXPECT_TRUE(cache.load(a));
}

TEST(compile_cache, an_entry_of_the_older_format_is_a_quiet_miss) {
  temp_dir d;
  const compile_cache cache(d.path().string());
  const std::string key = cache.key("source", "sm_80", {});
  spit(cache.entry_path(key), "attn-tune cache entry 1 3 0 00000000000000000000000000000000\nabc");
  testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.load(key));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(private_dir, made_0700_and_refused_when_another_users) {
  temp_dir d;
  const std::string mine = d / "mine";
  ensure_private_dir(mine, ::geteuid());
  struct stat st {};
  ASSERT_EQ(::lstat(mine.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ::chmod(mine.c_str(), 0777);
  ensure_private_dir(mine, ::geteuid());
  ASSERT_EQ(::lstat(mine.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // Another user's folder (here: one that is not the given owner's) and a planted link are refused.
  try {
    ensure_private_dir(mine, ::geteuid() + 1);
    FAIL() << "another user's folder was used";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("belongs to user"), std::string::npos) << e.what();
  }
  std::filesystem::create_directory_symlink(mine, d / "link");
  EXPECT_THROW(ensure_private_dir(d / "link", ::geteuid()), invalid_input);
}

TEST(private_dir, without_home_the_defaults_are_private) {
  temp_dir d;
  const char* home = std::getenv("HOME");
  const std::string saved_home = home ? home : "";
  const char* tmp = std::getenv("TMPDIR");
  const std::string saved_tmp = tmp ? tmp : "";
  ::unsetenv("HOME");
  ::unsetenv("XDG_CACHE_HOME");
  ::unsetenv("ATTN_TUNE_CACHE_DIR");
  ::setenv("TMPDIR", d.path().c_str(), 1);
  const std::string dir = default_cache_dir();
  EXPECT_EQ(dir, d / ("attn-tune-cache-" + std::to_string(::geteuid())));
  { const compile_cache cache(dir); }
  struct stat st {};
  ASSERT_EQ(::lstat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  if (!saved_home.empty()) ::setenv("HOME", saved_home.c_str(), 1);
  if (saved_tmp.empty()) ::unsetenv("TMPDIR");
  else ::setenv("TMPDIR", saved_tmp.c_str(), 1);
}

}  // namespace
}  // namespace attn

namespace attn {
namespace {

// Issue 21, item 15: the cache says what it says through its sink (the library keeps it), not on
// stderr behind its caller's back.
TEST(compile_cache, warnings_go_to_its_sink) {
  temp_dir d;
  std::vector<std::string> said;
  const compile_cache cache(d.path().string(), kernel_sources::embedded(),
                            [&](const std::string& line) { said.push_back(line); });
  const std::string key = cache.key("source", "sm_80", {});
  cache.store(key, fake_result());
  std::filesystem::resize_file(cache.entry_path(key), 100);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.load(key));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  ASSERT_EQ(said.size(), 1u);
  EXPECT_NE(said[0].find("is damaged"), std::string::npos) << said[0];
}

}  // namespace
}  // namespace attn
