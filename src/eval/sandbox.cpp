// The sandbox of sandbox.h: fork, limits, exec (bwrap or python), poll, kill, reap, clean up.
#include "eval/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.h"

namespace hogwild::eval {
namespace fs = std::filesystem;

namespace {

/// A fresh private directory for one run; removed (with whatever the program left) on scope exit.
struct RunDir {
  std::string path;
  RunDir() {
    std::string tmpl = (fs::temp_directory_path() / "hogwild-sandbox-XXXXXX").string();
    if (!mkdtemp(tmpl.data()))
      fail("sandbox: cannot create a temporary directory in {}: {}",
           fs::temp_directory_path().string(), std::strerror(errno));
    path = tmpl;
  }
  ~RunDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  void write(const std::string& name, const std::string& data) const {
    std::ofstream f(fs::path(path) / name, std::ios::binary);
    f << data;
    if (!f) fail("sandbox: cannot write {}/{}", path, name);
  }
};

std::vector<std::string> bwrap_args(const std::string& bwrap, const std::string& dir,
                                    const std::string& python) {
  std::vector<std::string> a = {bwrap,           "--unshare-all", "--die-with-parent",
                                "--new-session", "--clearenv",    "--ro-bind",
                                "/usr",          "/usr"};
  for (const char* top : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    std::error_code ec;
    if (fs::is_symlink(top, ec)) {
      a.insert(a.end(), {"--symlink", fs::read_symlink(top, ec).string(), top});
    } else if (fs::is_directory(top, ec)) {
      a.insert(a.end(), {"--ro-bind", top, top});
    }
  }
  a.insert(a.end(), {"--proc",
                     "/proc",
                     "--dev",
                     "/dev",
                     "--tmpfs",
                     "/tmp",
                     "--bind",
                     dir,
                     "/sandbox",
                     "--chdir",
                     "/sandbox",
                     "--setenv",
                     "HOME",
                     "/sandbox",
                     "--setenv",
                     "PATH",
                     "/usr/bin:/bin",
                     "--setenv",
                     "PYTHONDONTWRITEBYTECODE",
                     "1",
                     python,
                     "-I",
                     "prog.py"});
  return a;
}

void set_limit(int resource, rlim_t soft, rlim_t hard) {
  struct rlimit r {
    soft, hard
  };
  setrlimit(resource, &r);
}

/// Reaps this process's exited children that ran as `uid` (the sandbox's own processes, which
/// reach us as orphans through PR_SET_CHILD_SUBREAPER), waiting up to `seconds` for the killed ones
/// to exit. Without this, orphans go to pid 1, which does not reap them on every system, and the
/// zombies would count against the process limit of later runs.
void reap_orphans(uid_t run_uid, double seconds) {
  const std::string self = std::to_string(getpid());
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    int alive = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc", ec)) {
      const std::string name = e.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream st(e.path() / "status");
      std::string line, state, ppid, uid;
      while (std::getline(st, line)) {
        if (line.rfind("State:", 0) == 0) state = line.substr(6);
        if (line.rfind("PPid:", 0) == 0) ppid = line.substr(5);
        if (line.rfind("Uid:", 0) == 0) uid = line.substr(4);
      }
      auto field = [](const std::string& v) {
        size_t b = v.find_first_not_of(" \t");
        return b == std::string::npos ? "" : v.substr(b, v.find_first_of(" \t", b) - b);
      };
      if (field(ppid) != self || field(uid) != std::to_string(run_uid)) continue;
      if (field(state) == "Z") {
        waitpid(std::stoi(name), nullptr, WNOHANG);
      } else {
        ++alive;
      }
    }
    if (alive == 0) return;
    auto left =
        seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (left <= 0) return;
    usleep(5000);
  }
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// The running program's process group (the child called setpgid(0, 0)), SIGKILLed at most once.
struct ProcessGroup {
  pid_t pid;
  bool killed = false;
  void kill_all() {
    if (!killed) kill(-pid, SIGKILL);
    killed = true;
  }
};

/// Reads the program's stdout (out_fd) and stderr (err_fd) into res.out / res.err, each kept up
/// to its cap in `limits` (the rest of stderr is drained and dropped), until both close. Stops
/// early, killing the group, when the wall limit counted from t0 passes (res.timed_out) or stdout
/// passes output_bytes (res.output_limit). Throws nothing.
void drain_output(ProcessGroup& group, int out_fd, int err_fd, const SandboxLimits& limits,
                  std::chrono::steady_clock::time_point t0, SandboxResult& res) {
  struct pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  bool open_fd[2] = {true, true};
  char buf[65536];
  while (open_fd[0] || open_fd[1]) {
    double left = limits.wall_seconds - since(t0);
    if (left <= 0) {
      res.timed_out = !group.killed;
      group.kill_all();
      break;
    }
    for (int i = 0; i < 2; ++i) fds[i].fd = open_fd[i] ? (i ? err_fd : out_fd) : -1;
    int n = poll(fds, 2, static_cast<int>(std::min(left * 1000 + 1, 1000.0)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (!open_fd[i] || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        open_fd[i] = false;
        continue;
      }
      std::string& dst = i ? res.err : res.out;
      const int64_t cap = i ? limits.stderr_bytes : limits.output_bytes;
      const int64_t room = cap - static_cast<int64_t>(dst.size());
      dst.append(buf, static_cast<size_t>(std::min<int64_t>(room, got)));
      if (i == 0 && got > room) {
        res.output_limit = true;
        group.kill_all();
        open_fd[0] = open_fd[1] = false;
      }
    }
  }
}

/// Waits for the program, whose pipes are closed (or which was killed), to exit within the wall
/// limit counted from t0; past it kills the group and sets res.timed_out unless it was killed
/// already. Returns the waitpid status (0 when waitpid failed). Throws nothing.
int wait_exit(ProcessGroup& group, const SandboxLimits& limits,
              std::chrono::steady_clock::time_point t0, SandboxResult& res) {
  int status = 0;
  for (;;) {
    pid_t w = waitpid(group.pid, &status, WNOHANG);
    if (w == group.pid || (w < 0 && errno != EINTR)) break;
    if (since(t0) > limits.wall_seconds) {
      res.timed_out = res.timed_out || !group.killed;
      group.kill_all();
      waitpid(group.pid, &status, 0);
      break;
    }
    usleep(2000);
  }
  return status;
}

}  // namespace

std::string SandboxResult::status() const {
  if (timed_out) return "timeout";
  if (output_limit) return "output_limit";
  if (signal != 0) return "signal " + std::to_string(signal);
  if (exit_code != 0) return "exit " + std::to_string(exit_code);
  return "ok";
}

Sandbox::Sandbox(SandboxLimits limits, std::string python, const std::string& use_bwrap)
    : limits_(limits), python_(std::move(python)) {
  // A uid of this harness process's own: the process limit counts per uid, so programs of
  // another eval (or test) on the machine neither use up nor free this one's.
  uid_ = geteuid() == 0 ? static_cast<uid_t>(kSandboxUidBase + getpid() % 100000) : geteuid();
  if (use_bwrap != "auto" && use_bwrap != "yes" && use_bwrap != "no")
    fail("sandbox: bubblewrap use '{}' must be auto, yes or no", use_bwrap);
  if (access(python_.c_str(), X_OK) != 0)
    fail("sandbox: python interpreter '{}' not found; install python3 (Debian) or pass --python",
         python_);
  // Orphans of the sandboxed programs come back to this process to be reaped (reap_orphans).
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (use_bwrap == "no") return;
  for (const char* p : {"/usr/bin/bwrap", "/bin/bwrap"})
    if (access(p, X_OK) == 0) {
      bwrap_ = p;
      break;
    }
  if (bwrap_.empty()) {
    if (use_bwrap == "yes")
      fail("sandbox: bubblewrap (bwrap) is not installed; apt-get install bubblewrap");
    return;
  }
  // A trial run: bubblewrap needs user namespaces, which some containers refuse.
  SandboxResult r = run_python("print(6 * 7)", "");
  if (r.exit_code != 0 || r.out != "42\n") {
    std::string why = r.err.substr(0, 300);
    bwrap_.clear();
    if (use_bwrap == "yes")
      fail("sandbox: bubblewrap does not work here ({}: {}); use rlimits only", r.status(), why);
  }
}

SandboxResult Sandbox::run_python(const std::string& code, const std::string& input) const {
  RunDir dir;
  dir.write("prog.py", code);
  dir.write("input.txt", input);
  const bool root = geteuid() == 0;
  if (root) {
    if (chown(dir.path.c_str(), uid_, uid_) != 0 ||
        chown((dir.path + "/prog.py").c_str(), uid_, uid_) != 0)
      fail("sandbox: cannot hand {} to uid {}: {}", dir.path, uid_, std::strerror(errno));
  }
  // Everything the child needs is prepared before fork (the child only makes system calls).
  std::vector<std::string> args = bwrap_.empty()
                                      ? std::vector<std::string>{python_, "-I", "prog.py"}
                                      : bwrap_args(bwrap_, dir.path, python_);
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::string env_path = "PATH=/usr/bin:/bin", env_home = "HOME=" + dir.path,
              env_nobc = "PYTHONDONTWRITEBYTECODE=1";
  char* envp[] = {env_path.data(), env_home.data(), env_nobc.data(), nullptr};
  const std::string input_path = dir.path + "/input.txt";
  int in_fd = open(input_path.c_str(), O_RDONLY | O_CLOEXEC);
  int out_pipe[2], err_pipe[2];
  if (in_fd < 0 || pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
    fail("sandbox: cannot open pipes: {}", std::strerror(errno));
  const rlim_t cpu = static_cast<rlim_t>(std::ceil(limits_.cpu_seconds));

  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) fail("sandbox: fork failed: {}", std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    dup2(in_fd, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    if (chdir(dir.path.c_str()) != 0) _exit(126);
    if (root && bwrap_.empty()) unshare(CLONE_NEWNET);  // no network without bubblewrap too
    set_limit(RLIMIT_CPU, cpu, cpu + 1);
    set_limit(RLIMIT_AS, limits_.memory_bytes, limits_.memory_bytes);
    set_limit(RLIMIT_FSIZE, limits_.file_bytes, limits_.file_bytes);
    set_limit(RLIMIT_NOFILE, limits_.open_files, limits_.open_files);
    set_limit(RLIMIT_NPROC, limits_.processes, limits_.processes);
    set_limit(RLIMIT_CORE, 0, 0);
    if (root) {
      if (setgroups(0, nullptr) != 0 || setgid(uid_) != 0 || setuid(uid_) != 0) _exit(126);
    }
    execve(argv[0], argv.data(), envp);
    _exit(127);
  }
  close(in_fd);
  close(out_pipe[1]);
  close(err_pipe[1]);

  SandboxResult res;
  ProcessGroup group{pid};
  drain_output(group, out_pipe[0], err_pipe[0], limits_, t0, res);
  int status = wait_exit(group, limits_, t0, res);
  kill(-pid, SIGKILL);  // anything the program left behind in its group
  reap_orphans(uid_, 2.0);
  close(out_pipe[0]);
  close(err_pipe[0]);
  res.wall_seconds = since(t0);
  if (WIFEXITED(status)) {
    res.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    res.signal = WTERMSIG(status);
  }
  return res;
}

}  // namespace hogwild::eval
