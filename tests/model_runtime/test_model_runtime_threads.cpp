// test_model_runtime_threads.cpp: stitch.h's thread-safety contract: one model shared by many
// threads, one context per thread, results bitwise equal to serial runs.
#include "model_runtime_test_support.h"

#include <atomic>
#include <thread>

using namespace model_runtime_test;

namespace {

constexpr int kThreads = 8;
constexpr int kRunsPerThread = 50;

uint32_t seed_of(int thread, int run) {
  return static_cast<uint32_t>(1000 + thread * kRunsPerThread + run);
}

} // namespace

// Proves: 8 threads, each creating its own context of one shared model and running it 50 times
// on its own random inputs, all at once, get exactly the outputs that the same inputs give in
// serial runs on one context (and those match the reference). Contexts are created and destroyed
// concurrently too, so the handle registry is exercised under contention.
TEST_CASE("model runtime threads: 8 threads x 50 runs equal serial runs", "[model_runtime]") {
  OwnedModel model;

  std::vector<std::vector<AffineOutputs>> serial(kThreads,
                                                 std::vector<AffineOutputs>(kRunsPerThread));
  {
    OwnedContext context(model.get());
    for (int t = 0; t < kThreads; ++t)
      for (int r = 0; r < kRunsPerThread; ++r)
        require_ok(run_affine(context.get(), random_matrix(seed_of(t, r)), serial[t][r]));
  }
  for (int t = 0; t < kThreads; ++t)
    REQUIRE(serial[t][0] == reference_outputs(random_matrix(seed_of(t, 0))));

  std::vector<std::vector<AffineOutputs>> parallel(kThreads,
                                                   std::vector<AffineOutputs>(kRunsPerThread));
  std::vector<std::string> failures(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      stitch_context* context = nullptr;
      const stitch_status created = stitch_context_create(model.get(), &context);
      if (created != STITCH_OK) failures[t] = stitch_last_error();
      // Start together, so that the runs really overlap.
      ready.fetch_add(1);
      while (ready.load() < kThreads)
        std::this_thread::yield();
      if (created != STITCH_OK) return;
      for (int r = 0; r < kRunsPerThread && failures[t].empty(); ++r) {
        if (run_affine(context, random_matrix(seed_of(t, r)), parallel[t][r]) != STITCH_OK)
          failures[t] = stitch_last_error();
      }
      if (stitch_context_destroy(context) != STITCH_OK && failures[t].empty())
        failures[t] = stitch_last_error();
    });
  }
  for (std::thread& thread : threads)
    thread.join();

  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t << ": " << failures[t]);
    REQUIRE(failures[t].empty());
    for (int r = 0; r < kRunsPerThread; ++r) {
      INFO("run " << r);
      REQUIRE(parallel[t][r] == serial[t][r]);
    }
  }
}
