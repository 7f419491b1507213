// Running the Python engines from the CLI (python_engine.h says which interpreter and why).
#include "cli/python_engine.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace parity::cli {
namespace fs = std::filesystem;

namespace {

fs::path binary_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

bool is_executable(const fs::path& p) { return !p.empty() && ::access(p.c_str(), X_OK) == 0; }

// PYTHONPATH with the package and the extension in front (where they exist).
std::string python_path() {
  std::string path;
  auto add = [&](const fs::path& p) {
    std::error_code ec;
    if (!p.empty() && fs::is_directory(p, ec)) path += (path.empty() ? "" : ":") + p.string();
  };
  add(binary_dir() / "python");
#ifdef PARITY_SOURCE_DIR
  add(fs::path(PARITY_SOURCE_DIR) / "python");
#endif
  if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old) path += (path.empty() ? "" : ":") + std::string(old);
  return path;
}

}  // namespace

PythonEngine find_python() {
  if (const char* p = std::getenv("PARITY_PYTHON"); p != nullptr && *p) return {p, "PARITY_PYTHON"};
  const fs::path venv1 = binary_dir().parent_path() / ".venv" / "bin" / "python";
  if (is_executable(venv1)) return {venv1.string(), "venv " + venv1.string()};
#ifdef PARITY_SOURCE_DIR
  const fs::path venv2 = fs::path(PARITY_SOURCE_DIR) / ".venv" / "bin" / "python";
  if (is_executable(venv2)) return {venv2.string(), "venv " + venv2.string()};
#endif
  return {"python3", "PATH"};
}

Result<int> run_python_module(const std::string& module, const std::vector<std::string>& args) {
  const PythonEngine py = find_python();
  std::vector<std::string> argv_s = {py.python, "-m", module};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  // The child's environment: ours, with PYTHONPATH replaced.
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, "PYTHONPATH=", 11) != 0) env_s.emplace_back(*e);
  env_s.push_back("PYTHONPATH=" + python_path());
  std::vector<char*> envp;
  for (std::string& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, py.python.c_str(), nullptr, nullptr, argv.data(), envp.data());
  if (rc != 0)
    return Status::NotFound("cannot start the Python engine " + py.python + " (chosen by " + py.how +
                            "): " + std::strerror(rc) + "; set PARITY_PYTHON to a Python with torch");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return Status::Internal(std::string("waiting for the Python engine: ") + std::strerror(errno));
  if (WIFSIGNALED(status))
    return Status::Internal("the Python engine " + py.python + " was killed by signal " + std::to_string(WTERMSIG(status)));
  return WEXITSTATUS(status);
}

Result<std::string> temp_file(const std::string& stem) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/parity-" + stem + "-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) return Status::IOError(path + ": cannot create a temporary file: " + std::strerror(errno));
  ::close(fd);
  return path;
}

Result<EngineOutput> run_python_engine_json(const std::string& module, std::vector<std::string> args) {
  PARITY_ASSIGN_OR_RETURN(std::string out, temp_file(module.substr(module.rfind('.') + 1)));
  args.insert(args.end(), {"--json", out});
  Result<int> rc = run_python_module(module, args);
  std::stringstream text;
  text << std::ifstream(out).rdbuf();
  std::remove(out.c_str());
  if (!rc.ok()) return rc.status();
  EngineOutput o;
  o.exit_code = *rc;
  o.doc = nlohmann::json::parse(text.str(), nullptr, false);
  if (!o.doc.is_object()) o.doc = nlohmann::json(nlohmann::json::value_t::discarded);
  return o;
}

}  // namespace parity::cli
