// A RecordSource over tensors held in memory, for tests of what reads sources (compare, the report
// writers): real tensors, real fused-kernel metrics, no files. Records are named files under `dir` with
// `suffix` (Data_name columns and messages quote them).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "parity/compare.h"
#include "parity/source.h"

namespace parity::test {

// A smooth, sign-changing test tensor of n values.
inline std::vector<float> ramp(int n, float scale = 1.0f, float offset = 0.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * std::sin(0.37f * static_cast<float>(i) + 0.1f) + offset;
  return v;
}

// What the compare tests run with: the shipped defaults on two threads.
inline CompareOptions compare_options() {
  CompareOptions o;
  o.jobs = 2;
  return o;
}

// Stored statistics as a statistics-mode dump holds them.
inline TensorStats stats(double mn, double mx, double mean, double norm, int64_t numel = 10) {
  TensorStats s;
  s.min = mn;
  s.max = mx;
  s.mean = mean;
  s.l2norm = norm;
  s.absmax = std::max(std::fabs(mn), std::fabs(mx));
  s.numel = numel;
  return s;
}


class MemorySource : public RecordSource {
 public:
  explicit MemorySource(std::string suffix = ".npy", std::string dir = "")
      : suffix_(std::move(suffix)), dir_(std::move(dir)) {}

  std::string describe() const override { return "memory"; }
  const RecordList& records() const override { return records_; }
  const std::vector<Status>& problems() const override { return problems_; }
  Result<TensorView> load(const Record& r) const override {
    auto it = tensors_.find(r.handle);
    if (it == tensors_.end()) return Status::IOError(r.file + ": cannot read tensor data");
    return it->second;
  }
  NativeRecordInfo native_info(const Record& r) const override {
    auto it = native_.find(r.handle);
    return it == native_.end() ? NativeRecordInfo{} : it->second;
  }

  // An fp32 tensor; its shape is [n] unless given (a single value: a 0-d tensor).
  Record& add(const std::string& name, const std::vector<float>& values, Shape shape = {}) {
    if (shape.empty() && values.size() != 1) shape = {static_cast<int64_t>(values.size())};
    std::vector<std::byte> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    Record& r = push(name, suffix_, std::move(shape), records_.size());
    r.has_data = true;
    tensors_[r.handle] = make_owned_tensor(DType::kF32, r.shape, std::move(bytes));
    return r;
  }
  // A boolean tensor (one byte per element, as torch and numpy store it).
  Record& add_bool(const std::string& name, const std::vector<bool>& values) {
    Record& r = add(name, std::vector<float>(values.size()));
    std::vector<std::byte> bytes(values.size());
    for (size_t i = 0; i < values.size(); ++i) bytes[i] = std::byte{values[i]};
    r.dtype = DType::kBool;
    tensors_[r.handle] = make_owned_tensor(DType::kBool, r.shape, std::move(bytes));
    return r;
  }
  // A record with a shape and no data.
  Record& add_meta(const std::string& name, Shape shape) {
    return push(name, ".bin", std::move(shape), 1'000'000 + records_.size());
  }
  // A statistics-only record of four elements.
  Record& add_stats(const std::string& name, double max, double min, double mean, double norm) {
    Record& r = push(name, suffix_, {4}, records_.size());
    TensorStats s;
    s.max = max, s.min = min, s.mean = mean, s.l2norm = norm, s.numel = 4;
    r.stats = s;
    return r;
  }
  void name_natively(const std::string& name, NativeRecordInfo info) {
    for (const Record& r : records_)
      if (r.name == name) native_[r.handle] = std::move(info);
  }
  void add_problem(Status st) { problems_.push_back(std::move(st)); }
  void drop_data(const std::string& name) {
    for (Record& r : records_)
      if (r.name == name) tensors_.erase(r.handle);
  }

 private:
  Record& push(const std::string& name, const std::string& suffix, Shape shape, uint64_t handle) {
    Record r;
    r.name = name;
    r.file = dir_ + name + suffix;
    r.dtype = DType::kF32;
    r.shape = std::move(shape);
    r.handle = handle;
    r.order = static_cast<int64_t>(records_.size());
    records_.push_back(r);
    return records_.back();
  }

  std::string suffix_, dir_;
  RecordList records_;
  std::vector<Status> problems_;
  std::map<uint64_t, TensorView> tensors_;
  std::map<uint64_t, NativeRecordInfo> native_;
};

}  // namespace parity::test
