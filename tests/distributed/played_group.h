// A group of processes played one after another in one test process (no MPI): a gather by a process
// other than 0 posts its bytes to a shared mailbox; process 0, played last, collects every post. Lets the
// tests check the partition, the exchanges and process 0's pipeline wherever they run.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "parity/process_group.h"

namespace parity_test {

class PlayedGroup final : public parity::ProcessGroup {
 public:
  PlayedGroup(int rank, int size, std::map<int, std::string>& mailbox) : rank_(rank), size_(size), mailbox_(mailbox) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  parity::Result<std::vector<std::string>> gather(std::string_view bytes) const override {
    if (rank_ != 0) {
      mailbox_[rank_] = std::string(bytes);
      return std::vector<std::string>{};
    }
    std::vector<std::string> all{std::string(bytes)};
    for (int r = 1; r < size_; ++r) {
      if (!mailbox_.count(r)) return parity::Status::Internal("process " + std::to_string(r) + " sent nothing");
      all.push_back(mailbox_[r]);
    }
    return all;
  }
  int broadcast(int value) const override { return value; }
  [[noreturn]] void abort(const std::string& message, int code) const override {
    ADD_FAILURE() << "abort: " << message;
    std::exit(code);
  }

 private:
  int rank_, size_;
  std::map<int, std::string>& mailbox_;
};

}  // namespace parity_test
