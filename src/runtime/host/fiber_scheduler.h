// FiberScheduler: runs a set of resident blocks of one launch on the calling OS thread, each
// emulated GPU thread as a Boost.Context fiber.
//
// A thread runs until it blocks: at __syncthreads, at a warp collective, at stitch_grid_sync,
// at __nanosleep, or at exit. Nothing runs in lock-step, so a kernel that relies on an ordering
// it did not synchronize for (a missing __syncthreads or __syncwarp) reads garbage, as it may on
// a GPU. Threads that a barrier or collective releases are queued in the configured ThreadOrder,
// and the thread that completes it queues itself among them, so every phase between two
// synchronization points runs in that order. Everything is deterministic.
//
// A blocking thread switches straight to the next ready thread (one context switch, not two
// through a scheduler loop); whoever lands stores the context it came from into that thread's
// `fiber` (accept()). Control returns to run() only when no thread is ready or a fault was
// recorded.
//
// When the ready queue runs dry while threads are still alive, the launch is a deadlock (e.g. a
// __syncthreads that some threads skipped by exiting); the scheduler reports what each thread
// waits for and unwinds the stuck fibers. A KernelFault thrown inside a thread (broken CUDA rule)
// ends the launch the same way. An ordinary launch runs one block per run(); a cooperative launch
// runs the whole grid in one run(), so stitch_grid_sync can wait for every block; a cluster
// launch runs one cluster per run_cluster(), so stitch::cluster::sync waits for its blocks and
// they reach each other's shared memory.
//
// In sanitizer builds every switch is announced to AddressSanitizer and ThreadSanitizer
// (leave/land, fiber_stacks.h); under TSan an exiting thread returns to run(), which starts the
// next one (fiber_stacks.h says why).
#pragma once

#include "fiber_stacks.h"
#include "host_config.h"
#include "launch_request.h"
#include "stall_report.h"
#include "thread_state.h"

#include <boost/context/fiber.hpp>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace stitch::host {

// Linear thread ids of a block in the order they run; the same for every phase and block.
inline std::vector<unsigned> schedule_order(const HostDeviceConfig& config, unsigned threads) {
  std::vector<unsigned> order(threads);
  std::iota(order.begin(), order.end(), 0u);
  if (config.thread_order == ThreadOrder::Descending) std::reverse(order.begin(), order.end());
  if (config.thread_order == ThreadOrder::Shuffled) {
    std::uint64_t state = config.shuffle_seed * 0x9E3779B97F4A7C15ull + 1; // own generator: the
    for (unsigned i = threads; i > 1; --i) { // permutation must not depend on the std library
      state ^= state << 13, state ^= state >> 7, state ^= state << 17;
      std::swap(order[i - 1], order[state % i]);
    }
  }
  return order;
}

// A FIFO of thread indices; a thread is never queued twice, so the thread count bounds it.
class ReadyQueue {
public:
  void reset(std::size_t capacity) {
    slots_.assign(std::max<std::size_t>(capacity, 1), 0);
    head_ = count_ = 0;
  }
  void push(unsigned index) {
    slots_[(head_ + count_) % slots_.size()] = index;
    ++count_;
  }
  bool pop(unsigned& index) {
    if (count_ == 0) return false;
    index = slots_[head_];
    head_ = (head_ + 1) % slots_.size();
    --count_;
    return true;
  }

private:
  std::vector<unsigned> slots_;
  std::size_t head_ = 0, count_ = 0;
};

class FiberScheduler {
public:
  FiberScheduler(const LaunchGeometry& geometry, KernelInvoker kernel,
                 const HostDeviceConfig& config)
      : geometry_(geometry), kernel_(kernel), config_(config), stacks_(this_thread_stack_cache()),
        order_(schedule_order(config, geometry.threads_per_block)),
        rank_(geometry.threads_per_block) {
    for (unsigned r = 0; r < order_.size(); ++r)
      rank_[order_[r]] = r;
    warp_lane_order_.resize(geometry.warps_per_block);
    for (unsigned w = 0; w < geometry.warps_per_block; ++w) {
      for (unsigned lane = 0; lane < 32; ++lane)
        if (w * 32 + lane < geometry.threads_per_block) warp_lane_order_[w].push_back(lane);
      std::sort(warp_lane_order_[w].begin(), warp_lane_order_[w].end(),
                [&](unsigned a, unsigned b) { return rank_[w * 32 + a] < rank_[w * 32 + b]; });
    }
  }
  FiberScheduler(const FiberScheduler&) = delete;
  FiberScheduler& operator=(const FiberScheduler&) = delete;
  ~FiberScheduler() { abandon_fibers(); }

  // Runs blocks [first_block, first_block + block_count) together until every thread exits.
  // Returns false with failure() set on a fault, a deadlock or running out of stack memory.
  bool run(std::uint64_t first_block, unsigned block_count) {
    prepare(block_count, [&](unsigned b) { return first_block + b; });
    return run_prepared();
  }

  // Runs the blocks of cluster `cluster` of a cluster launch together, in rank order.
  bool run_cluster(std::uint64_t cluster) {
    prepare(geometry_.cluster_blocks,
            [&](unsigned rank) { return block_of_cluster(geometry_, cluster, rank); });
    return run_prepared();
  }

  const LaunchFailure& failure() const { return failure_; }

  // ---- Called by device intrinsics, inside the fiber of `thread`. ----

  // __syncthreads and its _count/_and/_or forms; thread.collective_result gets the count of
  // threads that passed a true predicate.
  void block_barrier(EmulatedThread& thread, SourceSite site, int predicate) {
    BlockState& block = *thread.block;
    if (block.barrier_arrivals > 0 && !(block.barrier_site == site))
      throw KernelFault(cudaErrorLaunchFailure, "divergent __syncthreads: reached the barrier at " +
                                                    site.text() + " while " +
                                                    std::to_string(block.barrier_arrivals) +
                                                    " threads of its block wait at the one at " +
                                                    block.barrier_site.text());
    if (block.barrier_arrivals == 0) block.barrier_site = site;
    ++block.barrier_arrivals;
    block.barrier_true += predicate != 0;
    thread.state = WaitState::BlockBarrier;
    thread.wait_site = site;
    if (block.barrier_arrivals == geometry_.threads_per_block) release_block(block);
    suspend(thread);
  }

  // A shuffle, vote or __syncwarp; returns this lane's result bits.
  std::uint64_t warp_collective(EmulatedThread& thread, const WarpCall& call, SourceSite site) {
    const unsigned lane_bit = 1u << thread.lane();
    const auto where = [&] {
      return std::string(collective_name(call.kind)) + " at " + site.text();
    };
    if (!(call.mask & lane_bit))
      throw KernelFault(cudaErrorLaunchFailure, where() + ": mask " + detail::hex_mask(call.mask) +
                                                    " does not include the calling lane " +
                                                    std::to_string(thread.lane()));
    if (is_shuffle(call.kind) &&
        (call.width < 1 || call.width > 32 || (call.width & (call.width - 1)) != 0))
      throw KernelFault(cudaErrorLaunchFailure, where() + ": width " + std::to_string(call.width) +
                                                    " is not a power of two in [1, 32]");
    WarpState& warp = thread.block->warps[thread.warp()];
    auto pending = std::find_if(warp.pending.begin(), warp.pending.end(),
                                [&](const PendingCollective& p) { return p.mask == call.mask; });
    if (pending == warp.pending.end()) {
      warp.pending.push_back(PendingCollective{call.kind, call.mask, call.width, 0});
      pending = warp.pending.end() - 1;
    } else if (pending->kind != call.kind || pending->width != call.width) {
      throw KernelFault(cudaErrorLaunchFailure,
                        where() + ": lanes of the same mask " + detail::hex_mask(call.mask) +
                            " already wait in " + collective_name(pending->kind) + " (width " +
                            std::to_string(pending->width) + ")");
    }
    pending->arrived |= lane_bit;
    warp.lane_value[thread.lane()] = call.value;
    warp.lane_operand[thread.lane()] = call.operand;
    thread.state = WaitState::WarpCollective;
    thread.wait_site = site;
    thread.wait_collective = call.kind;
    thread.wait_mask = call.mask;
    if (warp.missing_lanes(*pending) == 0)
      complete_collective(*thread.block, thread.warp(),
                          static_cast<std::size_t>(pending - warp.pending.begin()));
    suspend(thread);
    return thread.collective_result;
  }

  // stitch_grid_sync: waits for every thread of every block of a cooperative launch.
  void grid_barrier(EmulatedThread& thread, SourceSite site) {
    if (!geometry_.cooperative)
      throw KernelFault(cudaErrorLaunchFailure,
                        "stitch_grid_sync at " + site.text() +
                            " in a launch that is not cooperative (use STITCH_LAUNCH_COOPERATIVE)");
    resident_barrier(thread, site, WaitState::GridBarrier, "stitch_grid_sync", grid_);
  }

  // stitch::cluster::sync: waits for every thread of every block of the thread's cluster. In a
  // launch without clusters each block is a cluster of its own, as in CUDA.
  void cluster_barrier(EmulatedThread& thread, SourceSite site) {
    if (geometry_.cooperative)
      throw KernelFault(cudaErrorNotSupported, "stitch::cluster::sync at " + site.text() +
                                                   " in a cooperative launch (not emulated)");
    resident_barrier(thread, site, WaitState::ClusterBarrier, "stitch::cluster::sync", cluster_);
  }

  // Lets the other threads run first (__nanosleep): a spin-wait on a flag another thread of
  // the resident set sets must yield, since nothing preempts a fiber.
  void yield(EmulatedThread& thread) {
    make_ready(thread);
    suspend(thread);
  }

private:
  // Threads waiting at a barrier of every resident thread (the grid's or the cluster's).
  struct ResidentBarrier {
    std::size_t arrivals = 0;
    SourceSite site;
  };

  void resident_barrier(EmulatedThread& thread, SourceSite site, WaitState state, const char* name,
                        ResidentBarrier& barrier) {
    if (barrier.arrivals > 0 && !(barrier.site == site))
      throw KernelFault(cudaErrorLaunchFailure, std::string("divergent ") + name +
                                                    ": reached the one at " + site.text() +
                                                    " while others wait at " + barrier.site.text());
    if (barrier.arrivals == 0) barrier.site = site;
    ++barrier.arrivals;
    thread.state = state;
    thread.wait_site = site;
    if (barrier.arrivals == threads_.size()) {
      barrier.arrivals = 0;
      for (BlockState& block : blocks_)
        for (unsigned id : order_)
          make_ready(threads_[block.first_thread + id]);
    }
    suspend(thread);
  }

  bool run_prepared() {
    adopt_current_context(scheduler_switch_);
    try {
      // Threads hand over to each other until none is ready, so this loop runs once, unless
      // exits come back here (kExitThroughScheduler).
      unsigned next = 0;
      while (!failure_ && ready_.pop(next)) {
        switched_from_ = nullptr;
        accept(start_or_resume(threads_[next], scheduler_switch_));
        if (switched_from_ != nullptr && switched_from_->state == WaitState::Exited)
          retire_context(context_of(*switched_from_));
      }
    } catch (const std::bad_alloc&) {
      failure_ = {cudaErrorMemoryAllocation, "no memory for the fiber stack of an emulated thread"};
    }
    detail::current_emulated_thread = nullptr;
    if (!failure_ && live_threads_ > 0)
      failure_ = {cudaErrorLaunchFailure,
                  describe_stall(blocks_, threads_, geometry_.threads_per_block)};
    if (failure_) abandon_fibers();
    return !failure_;
  }

  // Makes blocks block_at(0) .. block_at(block_count - 1) resident, as one cluster.
  template <class BlockAt> void prepare(unsigned block_count, BlockAt block_at) {
    const unsigned per_block = geometry_.threads_per_block;
    const std::size_t total_limit =
        std::max(config_.max_shared_bytes_per_block_optin, geometry_.dynamic_shared_bytes);
    blocks_.resize(block_count);
    threads_.resize(static_cast<std::size_t>(block_count) * per_block);
    contexts_.resize(threads_.size());
    ready_.reset(threads_.size());
    for (unsigned b = 0; b < block_count; ++b) {
      BlockState& block = blocks_[b];
      block.linear_block = block_at(b);
      block.cluster = blocks_.data();
      block.cluster_rank = b;
      block.block_idx = block_index_of(geometry_, block.linear_block);
      block.first_thread = b * per_block;
      block.warps.resize(geometry_.warps_per_block);
      for (unsigned w = 0; w < geometry_.warps_per_block; ++w)
        block.warps[w].reset(std::min(32u, per_block - 32 * w));
      block.barrier_arrivals = block.barrier_true = block.exited_threads = 0;
      block.shared.reset(geometry_.dynamic_shared_bytes, config_.static_shared_limit, total_limit);
      for (unsigned id = 0; id < per_block; ++id) {
        EmulatedThread& thread = threads_[block.first_thread + id];
        thread.thread_idx = thread_index_of(geometry_.block_dim, id);
        thread.geometry = &geometry_;
        thread.block = &block;
        thread.scheduler = this;
        thread.linear_id = id;
        thread.state = WaitState::Ready;
        thread.collective_result = 0;
        thread.started = false;
      }
    }
    // A cluster's blocks start in the configured order too (ranks ascending, descending or
    // shuffled), so that a block reading a peer's shared memory before a cluster::sync shows in
    // one order or the other; the blocks of any other launch start in ascending order.
    std::vector<unsigned> block_order(block_count);
    std::iota(block_order.begin(), block_order.end(), 0u);
    if (geometry_.cluster_blocks > 1) block_order = schedule_order(config_, block_count);
    for (unsigned b : block_order)
      for (unsigned id : order_)
        ready_.push(blocks_[b].first_thread + id);
    live_threads_ = threads_.size();
    grid_ = {};
    cluster_ = {};
    failure_ = {};
  }

  boost::context::fiber create_fiber(EmulatedThread& thread) {
    thread.started = true;
    FiberSwitchContext& context = context_of(thread);
    boost::context::fiber created = create_in_context(context, [&] {
      return boost::context::fiber(std::allocator_arg,
                                   FiberStackLease{&stacks_, config_.fiber_stack_bytes},
                                   [this, &thread](boost::context::fiber&& came_from) {
                                     return thread_main(thread, std::move(came_from));
                                   });
    });
    const boost::context::stack_context& stack = stacks_.last_taken();
    thread.stack_low = static_cast<char*>(stack.sp) - stack.size;
    context.stack_bottom = thread.stack_low;
    context.stack_size = stack.size;
    return created;
  }

  FiberSwitchContext& context_of(const EmulatedThread& thread) {
    return contexts_[static_cast<std::size_t>(&thread - threads_.data())];
  }

  // Lands in `self` (an emulated thread's context or the scheduler's) after a switch.
  void land_in(FiberSwitchContext& self) {
    land(self,
         switched_from_ == nullptr && &self != &scheduler_switch_ ? &scheduler_switch_ : nullptr);
  }

  // Switches from `self` to `target`; returns, in `self`, the context that later switches back.
  boost::context::fiber start_or_resume(EmulatedThread& target, FiberSwitchContext& self) {
    if (!target.started) target.fiber = create_fiber(target);
    detail::current_emulated_thread = &target;
    leave(self, context_of(target), false);
    boost::context::fiber came_from = std::move(target.fiber).resume();
    land_in(self);
    return came_from;
  }

  // Right after landing: park the context we came from where it belongs (empty if it exited).
  void accept(boost::context::fiber&& came_from) {
    if (switched_from_ == nullptr)
      scheduler_context_ = std::move(came_from);
    else
      switched_from_->fiber = std::move(came_from);
  }

  boost::context::fiber thread_main(EmulatedThread& thread, boost::context::fiber&& came_from) {
    land_in(context_of(thread));
    accept(std::move(came_from));
    detail::current_emulated_thread = &thread;
    try {
      kernel_.call(kernel_.bound);
    } catch (const boost::context::detail::forced_unwind&) {
      // abandon_fibers switched here to unwind this fiber; Boost finishes it and returns there.
      land(context_of(thread), nullptr);
      leave(context_of(thread), scheduler_switch_, true);
      throw;
    } catch (const KernelFault& fault) {
      record_fault(thread, fault.code(), fault.what());
    } catch (const std::exception& error) {
      record_fault(thread, cudaErrorLaunchFailure, std::string("exception: ") + error.what());
    } catch (...) {
      record_fault(thread, cudaErrorLaunchFailure, "unknown exception");
    }
    thread.state = WaitState::Exited;
    on_thread_exit(thread);
    // Returning a context from a fiber's function switches to it.
    switched_from_ = &thread;
    unsigned next = 0;
    if (!kExitThroughScheduler && !failure_ && ready_.pop(next)) {
      EmulatedThread& target = threads_[next];
      try {
        if (!target.started) target.fiber = create_fiber(target);
        detail::current_emulated_thread = &target;
        leave(context_of(thread), context_of(target), true);
        return std::move(target.fiber);
      } catch (const std::bad_alloc&) {
        record_fault(target, cudaErrorMemoryAllocation, "no memory for a fiber stack");
      }
    }
    detail::current_emulated_thread = nullptr;
    leave(context_of(thread), scheduler_switch_, true);
    return std::move(scheduler_context_);
  }

  // Runs the next ready thread (or returns to run() if none); returns when `thread` is resumed.
  void suspend(EmulatedThread& thread) {
    unsigned next = 0;
    boost::context::fiber came_from;
    if (!failure_ && ready_.pop(next)) {
      EmulatedThread& target = threads_[next];
      if (&target == &thread) return; // it is its own successor: keep running
      switched_from_ = &thread;
      came_from = start_or_resume(target, context_of(thread));
    } else {
      switched_from_ = &thread;
      detail::current_emulated_thread = nullptr;
      leave(context_of(thread), scheduler_switch_, false);
      came_from = std::move(scheduler_context_).resume();
      land_in(context_of(thread));
    }
    accept(std::move(came_from));
    detail::current_emulated_thread = &thread;
  }

  void make_ready(EmulatedThread& thread) {
    thread.state = WaitState::Ready;
    ready_.push(static_cast<unsigned>(&thread - threads_.data()));
  }

  void release_block(BlockState& block) {
    const unsigned passed = block.barrier_true;
    block.barrier_arrivals = block.barrier_true = 0;
    for (unsigned id : order_) {
      EmulatedThread& thread = threads_[block.first_thread + id];
      thread.collective_result = passed;
      make_ready(thread);
    }
  }

  void complete_collective(BlockState& block, unsigned warp_index, std::size_t pending_index) {
    WarpState& warp = block.warps[warp_index];
    const PendingCollective collective = warp.pending[pending_index];
    warp.pending.erase(warp.pending.begin() + static_cast<std::ptrdiff_t>(pending_index));
    const std::array<std::uint64_t, 32> results = collective_results(collective, warp);
    const unsigned first_of_warp = block.first_thread + warp_index * 32;
    for (unsigned char lane : warp_lane_order_[warp_index]) {
      if (!(collective.arrived >> lane & 1u)) continue;
      EmulatedThread& thread = threads_[first_of_warp + lane];
      thread.collective_result = results[lane];
      make_ready(thread);
    }
  }

  void on_thread_exit(EmulatedThread& thread) {
    --live_threads_;
    BlockState& block = *thread.block;
    ++block.exited_threads;
    // A peer of its cluster that reads its shared memory from now on reads garbage.
    if (block.exited_threads == geometry_.threads_per_block && geometry_.cluster_blocks > 1)
      block.shared.poison();
    WarpState& warp = block.warps[thread.warp()];
    warp.exited_lanes |= 1u << thread.lane();
    // Collectives do not wait for exited lanes, so an exit can complete one.
    for (std::size_t i = 0; i < warp.pending.size();) {
      if (warp.missing_lanes(warp.pending[i]) == 0)
        complete_collective(block, thread.warp(), i);
      else
        ++i;
    }
  }

  void record_fault(const EmulatedThread& thread, cudaError_t code, const std::string& message) {
    if (failure_) return;
    failure_ = {code, "block " + detail::index_text(thread.block->block_idx) + " thread " +
                          detail::index_text(thread.thread_idx) + ": " + message};
  }

  // Destroys every suspended fiber; Boost unwinds each one's stack with forced_unwind, in its
  // fiber, which comes back here when done (thread_main). Runs in the scheduler's context.
  void abandon_fibers() {
    for (EmulatedThread& thread : threads_) {
      if (!thread.fiber) continue;
      detail::current_emulated_thread = &thread;
      leave(scheduler_switch_, context_of(thread), false);
      { boost::context::fiber doomed = std::move(thread.fiber); }
      land(scheduler_switch_, nullptr);
    }
    detail::current_emulated_thread = nullptr;
    for (FiberSwitchContext& context : contexts_)
      retire_context(context);
  }

  const LaunchGeometry& geometry_;
  KernelInvoker kernel_;
  const HostDeviceConfig& config_;
  FiberStackCache& stacks_;
  std::vector<unsigned> order_; // linear thread ids in schedule order
  std::vector<unsigned> rank_;  // position of each linear thread id in order_
  std::vector<std::vector<unsigned char>> warp_lane_order_; // each warp's lanes in rank order
  std::vector<BlockState> blocks_;
  std::vector<EmulatedThread> threads_;
  ReadyQueue ready_;
  std::uint64_t live_threads_ = 0;
  ResidentBarrier grid_, cluster_;
  LaunchFailure failure_;
  boost::context::fiber scheduler_context_;  // run()'s context while emulated threads run
  std::vector<FiberSwitchContext> contexts_; // each thread's, for the sanitizers (fiber_stacks.h)
  FiberSwitchContext scheduler_switch_;      // run()'s, for the sanitizers
  EmulatedThread* switched_from_ = nullptr;  // who switched last (nullptr: run() itself)
};

} // namespace stitch::host
