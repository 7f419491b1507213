// parity/status.h — error discipline for the whole library.
//
// Library functions that can fail return `Status` or `Result<T>` (Arrow style); only the CLI's
// `main` and the Python binding turn them into an exit code or an exception, each in one place.
// User errors (bad files, bad options) are Statuses whose message names the file and the problem;
// broken invariants inside parity are assertions, not Statuses.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace parity {

enum class StatusCode {
  kOk = 0,
  kInvalid,      // malformed input: a header that lies, a bad option value
  kIOError,      // cannot open / read / write / map a file
  kNotFound,     // a named file, tensor or record does not exist
  kTypeError,    // unsupported or mismatched dtype
  kCorrupt,      // checksum mismatch, torn record
  kUnsupported,  // a valid input parity does not handle
  kInternal,     // a bug in parity
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return {}; }
  static Status Invalid(std::string m) { return {StatusCode::kInvalid, std::move(m)}; }
  static Status IOError(std::string m) { return {StatusCode::kIOError, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status TypeError(std::string m) { return {StatusCode::kTypeError, std::move(m)}; }
  static Status Corrupt(std::string m) { return {StatusCode::kCorrupt, std::move(m)}; }
  static Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "<message>" prefixed with context, e.g. the file name: st.WithContext("a.npy") -> "a.npy: <message>".
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return {code_, context + ": " + message_};
  }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(implicit)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(implicit)
    assert(!std::get<Status>(v_).ok() && "Result constructed from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::OK() : std::get<Status>(v_); }

  T& value() & { assert(ok()); return std::get<T>(v_); }
  const T& value() const& { assert(ok()); return std::get<T>(v_); }
  T&& value() && { assert(ok()); return std::get<T>(std::move(v_)); }
  T ValueOr(T fallback) const { return ok() ? std::get<T>(v_) : std::move(fallback); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace parity

#define PARITY_CONCAT_IMPL(a, b) a##b
#define PARITY_CONCAT(a, b) PARITY_CONCAT_IMPL(a, b)

// Return the Status from the enclosing function when `expr` is not OK.
#define PARITY_RETURN_NOT_OK(expr)                 \
  do {                                             \
    ::parity::Status _st = (expr);                 \
    if (!_st.ok()) return _st;                     \
  } while (0)

// `PARITY_ASSIGN_OR_RETURN(auto x, f());` — unwrap a Result or return its Status.
#define PARITY_ASSIGN_OR_RETURN(lhs, rexpr) \
  PARITY_ASSIGN_OR_RETURN_IMPL(PARITY_CONCAT(_res_, __LINE__), lhs, rexpr)
#define PARITY_ASSIGN_OR_RETURN_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                 \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
