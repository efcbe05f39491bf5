// Checked file input and output: a full device, a directory where a file is expected, an empty
// name and a missing file are errors with messages; an atomic file appears only when complete.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "core/io.h"

namespace hogwild {
namespace {

namespace fs = std::filesystem;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string tmp_path(const std::string& name) {
  return testing::TempDir() + "/hogwild_io_" + std::to_string(getpid()) + "_" + name;
}

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(OutputFile, AFullDeviceIsAnErrorNamingTheFlagAndTheCause) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const std::string msg = error_of([] {
    OutputFile f("/dev/full", "--json");
    f.write(std::string(100, 'x'));
    f.close();
  });
  EXPECT_EQ(msg, "--json: cannot write '/dev/full': No space left on device");
}

TEST(OutputFile, EmptyNameAndDirectoryAreRefused) {
  EXPECT_EQ(error_of([] { OutputFile f("", "--dump-views"); }),
            "--dump-views: the file name is empty; give a path (or - for standard output)");
  const std::string dir = testing::TempDir();
  EXPECT_EQ(error_of([&] { OutputFile f(dir, "--json"); }),
            "--json: '" + dir + "' is a directory; give a file name inside it");
  EXPECT_NE(error_of([] { OutputFile f("/nonexistent-dir/x.json", "--json"); })
                .find("--json: cannot create '/nonexistent-dir/x.json': No such file or directory"),
            std::string::npos);
}

TEST(ReadFile, SaysWhatIsWrongWithThePath) {
  const std::string dir = testing::TempDir();
  EXPECT_EQ(error_of([&] { read_file(dir, "formatting file"); }),
            "formatting file '" + dir + "' is a directory, not a file");
  EXPECT_EQ(error_of([] { read_file("/nonexistent/f.json", "config.json"); }),
            "config.json '/nonexistent/f.json' does not exist");
  const std::string p = tmp_path("read.txt");
  std::ofstream(p) << "abc\xff";
  EXPECT_EQ(read_file(p, "x"), "abc\xff");
  fs::remove(p);
}

TEST(AtomicOutputFile, AppearsOnlyWhenCommitted) {
  const std::string p = tmp_path("atomic.json");
  std::ofstream(p) << "old";
  {
    AtomicOutputFile f(p, "--json");
    f.write("new");
    EXPECT_EQ(slurp(p), "old") << "the old file stays until commit";
    EXPECT_TRUE(fs::exists(p + ".tmp"));
  }  // abandoned: the temporary goes, the old file stays
  EXPECT_EQ(slurp(p), "old");
  EXPECT_FALSE(fs::exists(p + ".tmp"));
  {
    AtomicOutputFile f(p, "--json");
    f.write("new");
    f.commit();
  }
  EXPECT_EQ(slurp(p), "new");
  EXPECT_FALSE(fs::exists(p + ".tmp"));
  fs::remove(p);
}

}  // namespace
}  // namespace hogwild
