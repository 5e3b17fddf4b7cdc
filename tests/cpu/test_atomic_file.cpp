// write_file_atomically: what --out points at is written, never replaced by something else, and
// nothing is left behind (issue 11, items 1 and 5).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <thread>
#include <vector>

#include "report/atomic_file.hpp"
#include "temp_dir.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;

size_t entries(const fs::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

TEST(atomic_file, replaces_a_regular_file_and_leaves_nothing_else) {
  temp_dir d;
  spit(d / "out.csv", "old");
  write_file_atomically(d / "out.csv", "new");
  EXPECT_EQ(slurp(d / "out.csv"), "new");
  EXPECT_EQ(entries(d.path()), 1u);
}

TEST(atomic_file, creates_parents_and_gives_the_usual_mode) {
  temp_dir d;
  write_file_atomically(d / "a/b/out.csv", "x");
  EXPECT_EQ(slurp(d / "a/b/out.csv"), "x");
  struct stat st {};
  ASSERT_EQ(::stat((d / "a/b/out.csv").c_str(), &st), 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);  // not mkstemp's 0600
}

TEST(atomic_file, a_symlink_is_followed_and_stays_a_link) {
  temp_dir d;
  spit(d / "target.csv", "old");
  fs::create_symlink("target.csv", d / "link.csv");
  write_file_atomically(d / "link.csv", "new");
  EXPECT_TRUE(fs::is_symlink(d / "link.csv"));
  EXPECT_EQ(slurp(d / "target.csv"), "new");
}

TEST(atomic_file, a_fifo_is_written_in_place) {
  temp_dir d;
  const std::string fifo = d / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = slurp(fifo); });
  write_file_atomically(fifo, "through the pipe");
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  EXPECT_TRUE(fs::is_fifo(fifo));  // not replaced by a regular file
}

TEST(atomic_file, a_character_device_is_written_not_replaced) {
  write_file_atomically("/dev/null", "discarded");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  check_writable("/dev/null");
  EXPECT_FALSE(is_existing_file("/dev/null"));
  EXPECT_FALSE(is_existing_file("-"));
}

TEST(atomic_file, concurrent_writers_of_one_path_never_collide) {
  temp_dir d;
  const std::string path = d / "out.csv";
  std::vector<std::thread> writers;
  std::vector<std::string> errors(8);
  for (int i = 0; i < 8; ++i)
    writers.emplace_back([&, i] {
      try {
        for (int k = 0; k < 20; ++k) write_file_atomically(path, std::string(100000, char('a' + i)));
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  for (auto& w : writers) w.join();
  for (const auto& e : errors) EXPECT_EQ(e, "");
  const std::string text = slurp(path);
  ASSERT_EQ(text.size(), 100000u);
  EXPECT_EQ(text.find_first_not_of(text[0]), std::string::npos);  // one writer's whole file
  EXPECT_EQ(entries(d.path()), 1u);                              // no temporary file left
}

TEST(atomic_file, a_failure_names_the_path_and_the_reason_and_leaves_nothing) {
  temp_dir d;
  fs::create_directory(d / "dir");
  try {
    write_file_atomically(d / "dir", "x");
    FAIL() << "wrote over a directory";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  if (::geteuid() != 0) {  // root writes anywhere
    fs::create_directory(d / "ro");
    fs::permissions(d / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    try {
      write_file_atomically(d / "ro/out.csv", "x");
      FAIL() << "wrote into a read-only folder";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("Permission denied"), std::string::npos) << e.what();
    }
    EXPECT_EQ(entries(d / "ro"), 0u);
    fs::permissions(d / "ro", fs::perms::owner_all);
  }
  try {
    write_file_atomically("/proc/attn-tune/x.csv", "x");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write '/proc/attn-tune/x.csv'"), std::string::npos) << e.what();
  }
}

TEST(atomic_file, same_file_sees_through_links) {
  temp_dir d;
  spit(d / "a.csv", "x");
  fs::create_symlink("a.csv", d / "b.csv");
  EXPECT_TRUE(same_file(d / "a.csv", d / "b.csv"));
  EXPECT_FALSE(same_file(d / "a.csv", d / "missing.csv"));
}

TEST(atomic_file, refuse_overwrite_only_replaces_with_force) {
  temp_dir d;
  spit(d / "a.csv", "x");
  EXPECT_THROW(refuse_overwrite(d / "a.csv", false, "--force overwrites it"), invalid_input);
  refuse_overwrite(d / "a.csv", true, "--force overwrites it");
  refuse_overwrite(d / "new.csv", false, "--force overwrites it");
  refuse_overwrite("/dev/null", false, "--force overwrites it");
}

}  // namespace
}  // namespace attn

namespace attn {
namespace {

TEST(atomic_file, a_descriptor_name_is_written_in_place_even_on_a_regular_file) {
  temp_dir d;
  const std::string log = d / "log.txt";
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  write_file_atomically("/proc/self/fd/" + std::to_string(fd), "through the descriptor\n");
  ::close(fd);
  EXPECT_EQ(slurp(log), "through the descriptor\n");
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(d.path())) ++n;
  EXPECT_EQ(n, 1u);  // nothing renamed over it, nothing left beside it
}

}  // namespace
}  // namespace attn

// Issue 21: a legal long name, a directory as the target, and a writer that follows no link.
namespace attn {
namespace {

TEST(atomic_file, a_name_of_250_bytes_is_written_and_checked) {
  temp_dir d;
  const std::string name = std::string(246, 'n') + ".csv";
  check_writable(d / name);
  write_file_atomically(d / name, "long");
  EXPECT_EQ(slurp(d / name), "long");
}

TEST(atomic_file, a_directory_is_bad_input_naming_it) {
  temp_dir d;
  try {
    check_writable(d.path().string());
    FAIL() << "a directory was taken as writable";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("it is a directory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(write_file_atomically(d.path().string(), "x"), invalid_input);
}

TEST(atomic_file, replace_never_writes_through_a_link) {
  temp_dir d;
  spit(d / "victim", "keep");
  fs::create_symlink("victim", d / "entry");
  replace_file_atomically(d / "entry", "new");
  EXPECT_EQ(slurp(d / "victim"), "keep");
  EXPECT_FALSE(fs::is_symlink(d / "entry"));
  EXPECT_EQ(slurp(d / "entry"), "new");
  fs::create_symlink("nowhere", d / "dangling");
  replace_file_atomically(d / "dangling", "x");
  EXPECT_FALSE(fs::exists(d / "nowhere"));
  EXPECT_EQ(slurp(d / "dangling"), "x");
}

}  // namespace
}  // namespace attn
