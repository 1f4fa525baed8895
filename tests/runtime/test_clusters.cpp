// Thread-block clusters on the host target: a cluster launch gives each block its rank in the
// cluster's box; the blocks of a cluster read and write each other's shared memory after
// stitch::cluster::sync, and leaving a sync out is visible (garbage, NaN) rather than silently
// right; the distributed-shared-memory collectives (reduce-scatter, all-gather, all-reduce) equal
// a reference summed in the same order; and launches or calls that CUDA refuses are errors.
#include "stitch_cuda.h"

#include "device/stitch_cluster.cuh"

#include "cluster_kernels.h"
#include "runtime_test_support.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using stitch::test::ClusterCollective;
using stitch::test::DeviceBuffer;
using stitch::test::ScopedHostConfig;

namespace {

namespace cluster = stitch::cluster;

std::string last_error_text(cudaError_t code) { return cudaGetErrorString(code); }

// Misuses of map_shared: a rank past the cluster, an address outside shared memory.
__global__ void map_shared_misuse(float* global, int what) {
  STITCH_SHARED(float, mine, 32);
  mine[threadIdx.x] = 1.0f;
  cluster::sync();
  if (what == 0) global[threadIdx.x] = *cluster::map_shared(mine, cluster::blocks());
  if (what == 1) global[threadIdx.x] = *cluster::map_shared(global, 0);
  cluster::sync();
}

// Rank 0 waits at one cluster::sync, the others at another.
__global__ void divergent_cluster_sync(float* out) {
  if (cluster::block_rank() == 0) {
    cluster::sync();
  } else {
    cluster::sync();
  }
  out[blockIdx.x] = 1.0f;
}

// Rank 0 exits while the others wait for it.
__global__ void rank_exits_before_cluster_sync(float* out) {
  if (cluster::block_rank() == 0) return;
  cluster::sync();
  out[blockIdx.x] = 1.0f;
}

__global__ void cluster_sync_in_cooperative_launch(float* out) {
  cluster::sync();
  out[blockIdx.x] = 1.0f;
}

__global__ void small_cluster_kernel(float* out) { out[blockIdx.x] = 1.0f; }

// The reference of each collective, summing the ranks in the order the kernels do (ascending),
// in float: the results must be bitwise equal.
std::vector<float> collective_reference(ClusterCollective collective, const std::vector<float>& in,
                                        int clusters, int size, int count) {
  std::vector<float> sums(static_cast<std::size_t>(clusters) * count);
  for (int c = 0; c < clusters; ++c)
    for (int i = 0; i < count; ++i) {
      float sum = in[static_cast<std::size_t>(c * size) * count + i];
      for (int q = 1; q < size; ++q)
        sum += in[static_cast<std::size_t>(c * size + q) * count + i];
      sums[static_cast<std::size_t>(c) * count + i] = sum;
    }
  if (collective == ClusterCollective::ReduceScatter) return sums;
  const int blocks = clusters * size;
  if (collective == ClusterCollective::AllReduce) {
    std::vector<float> out(static_cast<std::size_t>(blocks) * count);
    for (int b = 0; b < blocks; ++b)
      for (int i = 0; i < count; ++i)
        out[static_cast<std::size_t>(b) * count + i] =
            sums[static_cast<std::size_t>(b / size) * count + i];
    return out;
  }
  std::vector<float> out(static_cast<std::size_t>(blocks) * size * count);
  for (int b = 0; b < blocks; ++b)
    for (int q = 0; q < size; ++q)
      for (int i = 0; i < count; ++i)
        out[(static_cast<std::size_t>(b) * size + q) * count + i] =
            in[static_cast<std::size_t>(b / size * size + q) * count + i];
  return out;
}

std::size_t output_size(ClusterCollective collective, int clusters, int size, int count) {
  const std::size_t blocks = static_cast<std::size_t>(clusters) * size;
  switch (collective) {
  case ClusterCollective::ReduceScatter:
    return static_cast<std::size_t>(clusters) * count;
  case ClusterCollective::AllGather:
    return blocks * size * count;
  case ClusterCollective::AllReduce:
    return blocks * count;
  }
  return 0;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace

TEST_CASE("a cluster launch gives each block its rank in its cluster's box of blocks",
          "[runtime][cluster]") {
  const dim3 grid(4, 4, 2), cluster(2, 2, 1);
  const int threads = 32, blocks = 32;
  DeviceBuffer<unsigned> ranks(blocks * threads), sizes(blocks * threads);
  REQUIRE(stitch::test::launch_cluster_ranks(grid, cluster, threads, ranks.get(), sizes.get()) ==
          cudaSuccess);
  const std::vector<unsigned> rank = ranks.download(), size = sizes.download();
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        const unsigned block = x + grid.x * (y + grid.y * z);
        for (int t = 0; t < threads; ++t) {
          CHECK(rank[block * threads + t] == x % 2 + 2 * (y % 2));
          CHECK(size[block * threads + t] == 4);
        }
      }

  SECTION("a launch without clusters: every block is rank 0 of a cluster of one") {
    REQUIRE(stitch::test::launch_cluster_ranks(dim3(8), dim3(1), threads, ranks.get(),
                                               sizes.get()) == cudaSuccess);
    const std::vector<unsigned> alone = ranks.download(), one = sizes.download();
    for (int i = 0; i < 8 * threads; ++i) {
      CHECK(alone[i] == 0);
      CHECK(one[i] == 1);
    }
  }
}

TEST_CASE("the blocks of a cluster read each other's shared memory after cluster::sync",
          "[runtime][cluster]") {
  ScopedHostConfig config;
  config->worker_threads = 3; // clusters on several OS threads
  const int clusters = 3, threads = 64;
  const int size = GENERATE(2, 4, 8);
  const bool dynamic = GENERATE(false, true);
  CAPTURE(size, dynamic);
  const int blocks = clusters * size;
  DeviceBuffer<float> out(static_cast<std::size_t>(blocks) * threads);
  std::vector<float> expected(static_cast<std::size_t>(blocks) * threads);
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < threads; ++t)
      expected[static_cast<std::size_t>(b) * threads + t] =
          static_cast<float>((b % size + 1) % size * 1000 + t);

  REQUIRE(stitch::test::launch_neighbour_exchange(clusters, size, threads, out.get(), true, true,
                                                  dynamic) == cudaSuccess);
  CHECK(out.download() == expected);

  SECTION("without the cluster::sync before the reads, a block reads its peer's garbage") {
    config->thread_order = stitch::host::ThreadOrder::Ascending;
    REQUIRE(stitch::test::launch_neighbour_exchange(clusters, size, threads, out.get(), false, true,
                                                    dynamic) == cudaSuccess);
    const std::vector<float> got = out.download();
    CHECK(std::isnan(got[0])); // rank 0 runs first: rank 1 has not written yet
    CHECK(got != expected);
  }
  SECTION("without the cluster::sync before the reads, in descending order, the last rank reads "
          "garbage") {
    config->thread_order = stitch::host::ThreadOrder::Descending;
    REQUIRE(stitch::test::launch_neighbour_exchange(clusters, size, threads, out.get(), false, true,
                                                    dynamic) == cudaSuccess);
    const std::vector<float> got = out.download();
    // The last rank runs first and reads rank 0's, not written yet; rank 0 reads rank 1's.
    CHECK(std::isnan(got[static_cast<std::size_t>(size - 1) * threads]));
    CHECK(got[0] == expected[0]);
  }
  SECTION("without the cluster::sync before exit, the last rank reads an exited block's garbage") {
    config->thread_order = stitch::host::ThreadOrder::Ascending;
    REQUIRE(stitch::test::launch_neighbour_exchange(clusters, size, threads, out.get(), true, false,
                                                    dynamic) == cudaSuccess);
    const std::vector<float> got = out.download();
    CHECK(std::isnan(got[static_cast<std::size_t>(size - 1) * threads])); // it read rank 0's
    CHECK(got != expected);
  }
}

TEST_CASE("cluster collectives through distributed shared memory equal their reference",
          "[runtime][cluster]") {
  const int size = GENERATE(1, 2, 3, 4, 8, 16);
  const int count = GENERATE(1, 5, 37, 256);
  const ClusterCollective collective = GENERATE(
      ClusterCollective::ReduceScatter, ClusterCollective::AllGather, ClusterCollective::AllReduce);
  CAPTURE(size, count, static_cast<int>(collective));
  const int clusters = 2, threads = 64;
  const std::vector<float> input = stitch::test::random_floats(
      static_cast<std::size_t>(clusters) * size * count, -4.0f, 4.0f, 91);
  DeviceBuffer<float> in(input);
  DeviceBuffer<float> out(output_size(collective, clusters, size, count));
  REQUIRE(stitch::test::launch_cluster_collective(collective, clusters, size, threads, in.get(),
                                                  out.get(), count) == cudaSuccess);
  CHECK(bitwise_equal(out.download(),
                      collective_reference(collective, input, clusters, size, count)));
}

TEST_CASE("cluster launches and calls that CUDA refuses are errors", "[runtime][cluster]") {
  DeviceBuffer<float> out(64);
  SECTION("a grid that is not a whole number of clusters") {
    const cudaError_t status = STITCH_LAUNCH_CLUSTER(small_cluster_kernel, dim3(6), dim3(4),
                                                     dim3(32), 0, nullptr, out.get());
    CHECK(status == cudaErrorInvalidClusterSize);
    CHECK(last_error_text(status).find("not a whole number of clusters") != std::string::npos);
    CHECK(cudaGetLastError() == cudaErrorInvalidClusterSize);
  }
  SECTION("more than 8 blocks without the non-portable attribute, more than 16 with it") {
    cudaError_t status = STITCH_LAUNCH_CLUSTER(small_cluster_kernel, dim3(16), dim3(16), dim3(32),
                                               0, nullptr, out.get());
    CHECK(status == cudaErrorInvalidClusterSize);
    CHECK(last_error_text(status).find("NonPortableClusterSizeAllowed") != std::string::npos);
    REQUIRE(cudaFuncSetAttribute(small_cluster_kernel,
                                 cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess);
    CHECK(STITCH_LAUNCH_CLUSTER(small_cluster_kernel, dim3(16), dim3(16), dim3(32), 0, nullptr,
                                out.get()) == cudaSuccess);
    CHECK(STITCH_LAUNCH_CLUSTER(small_cluster_kernel, dim3(32), dim3(32), dim3(32), 0, nullptr,
                                out.get()) == cudaErrorInvalidClusterSize);
    REQUIRE(cudaFuncSetAttribute(small_cluster_kernel,
                                 cudaFuncAttributeNonPortableClusterSizeAllowed, 0) == cudaSuccess);
    cudaGetLastError();
  }
  SECTION("map_shared to a rank past the cluster, or of an address outside shared memory") {
    for (int what = 0; what < 2; ++what) {
      const cudaError_t status = STITCH_LAUNCH_CLUSTER(map_shared_misuse, dim3(4), dim3(2),
                                                       dim3(32), 0, nullptr, out.get(), what);
      CHECK(status == cudaErrorIllegalAddress);
      CHECK(last_error_text(status).find(what == 0 ? "rank 2 of a cluster of 2"
                                                   : "not in the block's shared memory") !=
            std::string::npos);
    }
    cudaGetLastError();
  }
  SECTION("divergent cluster barriers, and a rank that exits before the barrier") {
    cudaError_t status = STITCH_LAUNCH_CLUSTER(divergent_cluster_sync, dim3(4), dim3(4), dim3(32),
                                               0, nullptr, out.get());
    CHECK(status == cudaErrorLaunchFailure);
    CHECK(last_error_text(status).find("divergent stitch::cluster::sync") != std::string::npos);
    status = STITCH_LAUNCH_CLUSTER(rank_exits_before_cluster_sync, dim3(4), dim3(4), dim3(32), 0,
                                   nullptr, out.get());
    CHECK(status == cudaErrorLaunchFailure);
    CHECK(last_error_text(status).find("wait at stitch::cluster::sync") != std::string::npos);
    cudaGetLastError();
  }
  SECTION("cluster::sync in a cooperative launch is not emulated") {
    const cudaError_t status = STITCH_LAUNCH_COOPERATIVE(cluster_sync_in_cooperative_launch,
                                                         dim3(2), dim3(32), 0, nullptr, out.get());
    CHECK(status == cudaErrorNotSupported);
    cudaGetLastError();
  }
}

TEST_CASE("cudaOccupancyMaxActiveClusters counts the clusters the device holds at once",
          "[runtime][cluster]") {
  ScopedHostConfig config;
  config->multiprocessor_count = 4;
  int clusters = -1;
  // 8 blocks of 256 threads per multiprocessor, 4 multiprocessors: 32 blocks, 4 clusters of 8.
  REQUIRE(stitch::max_active_clusters(&clusters, small_cluster_kernel, dim3(8), dim3(256), 0) ==
          cudaSuccess);
  CHECK(clusters == 4);
  // Two blocks of 100 KiB of shared memory per multiprocessor: one cluster.
  REQUIRE(stitch::max_active_clusters(&clusters, small_cluster_kernel, dim3(4, 2), dim3(256),
                                      100 * 1024) == cudaSuccess);
  CHECK(clusters == 1);
  CHECK(stitch::max_active_clusters(&clusters, small_cluster_kernel, dim3(16), dim3(256), 0) ==
        cudaErrorInvalidClusterSize); // not portable
  int supported = 0;
  REQUIRE(cudaDeviceGetAttribute(&supported, cudaDevAttrClusterLaunch, 0) == cudaSuccess);
  CHECK(supported == 1);
  cudaGetLastError();
}

TEST_CASE("cluster_launch_fits: whether the device runs a kernel in such clusters at all",
          "[runtime][cluster]") {
  // Proves: the check a GEMM chain's launcher asks when the model is created answers yes for a
  // cluster the device holds, no where the shared memory exceeds the opt-in limit or no cluster
  // fits at once, and no on a device before sm_90, where a cluster launch fails; every refusal
  // leaves no error behind.
  ScopedHostConfig config;
  config->multiprocessor_count = 4;
  CHECK(stitch::cluster_launch_fits(small_cluster_kernel, dim3(8), dim3(256), 0));
  CHECK(stitch::cluster_launch_fits(small_cluster_kernel, dim3(2), dim3(128), 100 * 1024));
  CHECK_FALSE(stitch::cluster_launch_fits(small_cluster_kernel, dim3(2), dim3(128), 228 * 1024));
  // One block of 200 KiB per multiprocessor: 4 resident, no cluster of 8.
  CHECK_FALSE(stitch::cluster_launch_fits(small_cluster_kernel, dim3(8), dim3(128), 200 * 1024));
  CHECK(cudaGetLastError() == cudaSuccess);

  config->cluster_launch = false;
  int supported = 1;
  REQUIRE(cudaDeviceGetAttribute(&supported, cudaDevAttrClusterLaunch, 0) == cudaSuccess);
  CHECK(supported == 0);
  CHECK_FALSE(stitch::cluster_launch_fits(small_cluster_kernel, dim3(2), dim3(128), 0));
  CHECK(cudaGetLastError() == cudaSuccess);
  int clusters = -1;
  CHECK(stitch::max_active_clusters(&clusters, small_cluster_kernel, dim3(2), dim3(128), 0) ==
        cudaErrorNotSupported);
  DeviceBuffer<float> out(4);
  const cudaError_t status = STITCH_LAUNCH_CLUSTER(small_cluster_kernel, dim3(4), dim3(2), dim3(32),
                                                   0, nullptr, out.get());
  CHECK(status == cudaErrorNotSupported);
  CHECK(last_error_text(status).find("without thread-block clusters") != std::string::npos);
  cudaGetLastError();
}
