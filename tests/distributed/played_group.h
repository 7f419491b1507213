// A group of processes played one after another in one test process (no MPI): a gather by a process
// other than 0 posts its messages to a shared mailbox; process 0, played last, collects every post. Lets the
// tests check the partition, the exchanges and process 0's pipeline wherever they run.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "parity/process_group.h"

namespace parity_test {

// Each process's posted messages, in order.
using Mailbox = std::map<int, std::vector<std::string>>;

class PlayedGroup final : public parity::ProcessGroup {
 public:
  PlayedGroup(int rank, int size, Mailbox& mailbox) : rank_(rank), size_(size), mailbox_(mailbox) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  parity::Status gather_each(const std::function<bool(std::string&)>& next,
                             const std::function<parity::Status(int, std::string&)>& consume) const override {
    if (rank_ != 0) {
      std::vector<std::string>& posted = mailbox_[rank_];
      for (std::string m; next(m);) posted.push_back(m);
      return parity::Status::OK();
    }
    parity::Status first_error = parity::Status::OK();
    for (int r = 1; r < size_; ++r) {
      if (!mailbox_.count(r)) return parity::Status::Internal("process " + std::to_string(r) + " sent nothing");
      for (std::string m : mailbox_[r])
        if (first_error.ok()) first_error = consume(r, m);
    }
    return first_error;
  }
  int broadcast(int value) const override { return value; }
  [[noreturn]] void abort(const std::string& message, int code) const override {
    ADD_FAILURE() << "abort: " << message;
    std::exit(code);
  }

 private:
  int rank_, size_;
  Mailbox& mailbox_;
};

}  // namespace parity_test
