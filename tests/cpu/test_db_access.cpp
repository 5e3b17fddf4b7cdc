// Issue 21, items 12, 13 and 14: a database locked by another program is said after the wait, not
// retried for ever; another program's database is refused without a byte of it changed; a
// database on storage this process cannot write is read (as immutable).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "db/sqlite.hpp"
#include "db/tuned_db.hpp"
#include "temp_dir.hpp"

namespace attn {
namespace {

using namespace std::chrono_literals;

TEST(db_access, a_lock_held_by_another_program_is_said_after_the_wait) {
  temp_dir d;
  const std::string path = d / "tuned.sqlite";
  { tuned_db::open(path); }
  sqlite_connection other(path, sqlite_open::read_write);  // another program, in rollback-journal mode
  other.exec("PRAGMA journal_mode = DELETE");
  other.exec("BEGIN EXCLUSIVE");
  for (const bool reader : {false, true}) {
    const auto start = std::chrono::steady_clock::now();
    try {
      if (reader) tuned_db::open_read_only(path, 300ms);
      else tuned_db::open(path, 300ms);
      FAIL() << "opened a locked database";
    } catch (const invalid_input& e) {
      EXPECT_NE(std::string(e.what()).find("is locked"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << (reader ? "reader" : "writer");
  }
  other.exec("ROLLBACK");
}

TEST(db_access, another_programs_database_is_left_as_it_was) {
  temp_dir d;
  const std::string path = d / "theirs.sqlite";
  {
    sqlite_connection c(path, sqlite_open::create);
    c.exec("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine')");
  }
  const std::string before = slurp(path);
  EXPECT_THROW(tuned_db::open(path), invalid_input);
  EXPECT_THROW(tuned_db::open_read_only(path), invalid_input);
  EXPECT_EQ(slurp(path), before);  // its journal mode (header bytes 18 and 19) included
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

TEST(db_access, a_database_on_storage_it_cannot_write_is_read) {
  temp_dir d;
  const std::string folder = d / "ro";
  std::filesystem::create_directory(folder);
  const std::string path = folder + "/tuned.sqlite";
  { tuned_db::open(path); }  // WAL mode; closing removes the -wal and -shm files
  ASSERT_FALSE(std::filesystem::exists(path + "-shm"));
  ::chmod(folder.c_str(), 0555);
  ::chmod(path.c_str(), 0444);
  ::chmod(d.path().c_str(), 0755);
  // Another user (nobody, when this runs as root, which can write anywhere) or this one reads it.
  const pid_t child = ::fork();
  if (child == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    if (::access(folder.c_str(), W_OK) == 0) ::_exit(4);  // the folder is writable after all
    try {
      const tuned_db db = tuned_db::open_read_only(path);
      ::_exit(db.list().empty() && db.schema_version() == db_schema_version ? 0 : 1);
    } catch (...) {
      ::_exit(2);
    }
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ::chmod(folder.c_str(), 0755);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 4) GTEST_SKIP() << "the folder stayed writable to the child";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the read-only database was not read (2: refused, 3: no nobody)";
}

}  // namespace
}  // namespace attn
