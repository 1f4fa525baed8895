// BlockWorkerPool: the OS threads that run the blocks of an ordinary launch in parallel. The
// launching thread always takes part; up to `participants - 1` pool threads join it, each
// running the same job (a loop that takes block indices from a shared counter). Threads are
// started on first need and live until release() (the library's last model destroyed), or the
// process (or the library) unloads. One launch uses the pool at a time; a second host thread
// launching concurrently waits its turn.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace stitch::host {

class BlockWorkerPool {
public:
  static BlockWorkerPool& instance() {
    static BlockWorkerPool pool;
    return pool;
  }

  BlockWorkerPool(const BlockWorkerPool&) = delete;
  BlockWorkerPool& operator=(const BlockWorkerPool&) = delete;

  ~BlockWorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& helper : helpers_)
      helper.join();
  }

  // Runs `job` on the calling thread and on participants - 1 pool threads; returns when all
  // of them have returned. `job` must not throw.
  void run(unsigned participants, const std::function<void()>& job) {
    std::lock_guard<std::mutex> one_launch_at_a_time(run_mutex_);
    const unsigned helpers_wanted = participants > 1 ? participants - 1 : 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (helpers_.size() < helpers_wanted) {
        const unsigned index = static_cast<unsigned>(helpers_.size());
        helpers_.emplace_back([this, index] { helper_loop(index); });
      }
      job_ = &job;
      helpers_wanted_ = helpers_wanted;
      helpers_done_ = 0;
      ++generation_;
    }
    wake_.notify_all();
    job();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return helpers_done_ == helpers_wanted_; });
    job_ = nullptr;
  }

  // Stops the pool threads, each unmapping the fiber stacks it cached as it exits (every model
  // library holds a pool of its own: a process that loads many would otherwise keep their
  // threads and stacks, past the kernel's limit on memory mappings). Waits for a launch in
  // flight; the next launch starts threads again.
  void release() {
    std::lock_guard<std::mutex> one_launch_at_a_time(run_mutex_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& helper : helpers_)
      helper.join();
    std::lock_guard<std::mutex> lock(mutex_);
    helpers_.clear();
    stopping_ = false;
  }

private:
  BlockWorkerPool() = default;

  void helper_loop(unsigned index) {
    std::uint64_t seen = 0;
    for (;;) {
      const std::function<void()>* job = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        if (index >= helpers_wanted_) continue;
        job = job_;
      }
      (*job)();
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++helpers_done_;
      }
      done_.notify_all();
    }
  }

  std::mutex run_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> helpers_;
  const std::function<void()>* job_ = nullptr;
  unsigned helpers_wanted_ = 0;
  unsigned helpers_done_ = 0;
  std::uint64_t generation_ = 0;
  bool stopping_ = false;
};

} // namespace stitch::host
