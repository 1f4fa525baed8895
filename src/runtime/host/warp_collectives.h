// Warp collectives on the host target: what a pending shuffle / vote / __syncwarp is, and how
// its results are computed once every lane it waits for has arrived.
//
// A warp is 32 consecutive threads by linear thread id (x fastest), as in CUDA. A collective
// named by `mask` completes when every lane in the mask that exists and has not exited has
// called it with that same mask ("all non-exited threads in membermask", PTX shfl.sync /
// vote.sync / bar.warp.sync). Lanes of one warp may wait in different collectives at once as
// long as their masks differ (e.g. a 16-lane shuffle in each half-warp). Source lanes follow the
// PTX shfl.sync rules exactly, including `width` segments and out-of-range deltas; reading from a
// lane that does not take part (exited, or not in the mask) yields all-ones garbage, which is
// NaN as a float.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace stitch::host {

enum class WarpCollectiveKind : std::uint8_t {
  ShuffleIndex, // __shfl_sync
  ShuffleUp,    // __shfl_up_sync
  ShuffleDown,  // __shfl_down_sync
  ShuffleXor,   // __shfl_xor_sync
  Ballot,       // __ballot_sync
  Any,          // __any_sync
  All,          // __all_sync
  SyncWarp,     // __syncwarp
};

inline const char* collective_name(WarpCollectiveKind kind) {
  switch (kind) {
  case WarpCollectiveKind::ShuffleIndex:
    return "__shfl_sync";
  case WarpCollectiveKind::ShuffleUp:
    return "__shfl_up_sync";
  case WarpCollectiveKind::ShuffleDown:
    return "__shfl_down_sync";
  case WarpCollectiveKind::ShuffleXor:
    return "__shfl_xor_sync";
  case WarpCollectiveKind::Ballot:
    return "__ballot_sync";
  case WarpCollectiveKind::Any:
    return "__any_sync";
  case WarpCollectiveKind::All:
    return "__all_sync";
  case WarpCollectiveKind::SyncWarp:
    return "__syncwarp";
  }
  return "warp collective";
}

inline bool is_shuffle(WarpCollectiveKind kind) {
  return kind == WarpCollectiveKind::ShuffleIndex || kind == WarpCollectiveKind::ShuffleUp ||
         kind == WarpCollectiveKind::ShuffleDown || kind == WarpCollectiveKind::ShuffleXor;
}

// What one lane brings to a collective: its value bits (shuffles) or predicate (votes), and its
// own operand (source lane, delta or xor mask).
struct WarpCall {
  WarpCollectiveKind kind;
  unsigned mask;
  std::uint64_t value;
  int operand;
  int width;
};

inline constexpr std::uint64_t kGarbageLaneValue = ~std::uint64_t{0};

struct PendingCollective {
  WarpCollectiveKind kind;
  unsigned mask;
  int width;
  unsigned arrived; // lanes that have called it
};

struct WarpState {
  unsigned existing_lanes = 0; // lanes that exist (the block's last warp may be partial)
  unsigned exited_lanes = 0;
  std::vector<PendingCollective> pending; // usually empty or one entry
  std::array<std::uint64_t, 32> lane_value{};
  std::array<int, 32> lane_operand{};
  // Register fragments of the warp's matrix products (stitch_mma.cuh's product on the host
  // target): two rounds of 32 lanes x 6 registers, and each lane's count of products so far.
  std::vector<std::uint32_t> matrix_operands;
  std::array<std::uint32_t, 32> matrix_products{};
  // The same for its shared-memory matrix loads (load_transposed): rows' addresses.
  std::vector<const void*> matrix_rows;
  std::array<std::uint32_t, 32> matrix_row_loads{};

  void reset(unsigned lane_count) {
    existing_lanes = lane_count >= 32 ? ~0u : (1u << lane_count) - 1u;
    exited_lanes = 0;
    pending.clear();
    matrix_products.fill(0);
    matrix_row_loads.fill(0);
  }

  // Lanes `collective` still waits for.
  unsigned missing_lanes(const PendingCollective& collective) const {
    return collective.mask & existing_lanes & ~exited_lanes & ~collective.arrived;
  }
};

// The lane whose value `lane` receives, per PTX shfl.sync with c = ((32 - width) << 8) | clamp.
inline unsigned shuffle_source_lane(WarpCollectiveKind kind, unsigned lane, int operand,
                                    int width) {
  const int segment_mask = 32 - width; // high lane bits that name the segment
  const int b = operand & 31;
  const int self = static_cast<int>(lane);
  const int min_lane = self & segment_mask;
  const int max_lane = min_lane | (31 & ~segment_mask);
  int source = self;
  switch (kind) {
  case WarpCollectiveKind::ShuffleIndex:
    source = min_lane | (b & ~segment_mask);
    break;
  case WarpCollectiveKind::ShuffleUp:
    source = self - b >= min_lane ? self - b : self;
    break;
  case WarpCollectiveKind::ShuffleDown:
    source = self + b <= max_lane ? self + b : self;
    break;
  case WarpCollectiveKind::ShuffleXor:
    source = (self ^ b) <= max_lane ? self ^ b : self;
    break;
  default:
    break;
  }
  return static_cast<unsigned>(source);
}

// Each arrived lane's result, once `collective` is complete.
inline std::array<std::uint64_t, 32> collective_results(const PendingCollective& collective,
                                                        const WarpState& warp) {
  std::array<std::uint64_t, 32> results{};
  unsigned ballot = 0;
  for (unsigned lane = 0; lane < 32; ++lane)
    if ((collective.arrived >> lane & 1u) && warp.lane_value[lane] != 0) ballot |= 1u << lane;
  for (unsigned lane = 0; lane < 32; ++lane) {
    if (!(collective.arrived >> lane & 1u)) continue;
    switch (collective.kind) {
    case WarpCollectiveKind::Ballot:
      results[lane] = ballot;
      break;
    case WarpCollectiveKind::Any:
      results[lane] = ballot != 0;
      break;
    case WarpCollectiveKind::All:
      results[lane] = ballot == collective.arrived;
      break;
    case WarpCollectiveKind::SyncWarp:
      results[lane] = 0;
      break;
    default: {
      const unsigned source =
          shuffle_source_lane(collective.kind, lane, warp.lane_operand[lane], collective.width);
      const bool source_took_part = collective.arrived >> source & 1u;
      results[lane] = source_took_part ? warp.lane_value[source] : kGarbageLaneValue;
    }
    }
  }
  return results;
}

} // namespace stitch::host
