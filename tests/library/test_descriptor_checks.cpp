// test_descriptor_checks.cpp: descriptors that break stitch_library.h's rules are refused with
// STITCH_ERROR_INTERNAL (they are stitchc bugs) and a message naming the routine and the rule;
// and the host target's per-context state is empty.
#include "library_reference.h"

#include "library/descriptor_checks.h"

#include "stitch/stitch.h"

#include <catch2/catch.hpp>

using namespace stitch::library::testing;

namespace {

struct Refusal {
  int32_t status;
  std::string message;
};

Refusal gemm_refusal(const stitch_gemm_desc& desc, bool null_c = true, bool c_is_d = false) {
  std::vector<float> a(4096, 1.0f), b(4096, 1.0f), d(4096, 1.0f);
  stitch_abi_buffers buffers = {};
  char error[512] = {};
  const float* c = c_is_d ? d.data() : (null_c ? nullptr : a.data());
  const int32_t status = stitch_library_gemm(&buffers, &desc, a.data(), b.data(), c, nullptr,
                                             d.data(), error, sizeof(error));
  return {status, error};
}

Refusal conv_refusal(const stitch_conv_desc& desc, bool transposed) {
  std::vector<float> x(4096, 1.0f), w(4096, 1.0f), y(4096, 1.0f);
  stitch_abi_buffers buffers = {};
  char error[512] = {};
  const int32_t status =
      transposed ? stitch_library_conv_transpose(&buffers, &desc, x.data(), w.data(), nullptr,
                                                 y.data(), error, sizeof(error))
                 : stitch_library_conv(&buffers, &desc, x.data(), w.data(), nullptr, y.data(),
                                       error, sizeof(error));
  return {status, error};
}

// A valid 2-D conv: 1 x 2 x 6 x 6, 3x3 kernel, pad 1, stride 1, 2 output channels.
stitch_conv_desc valid_conv() {
  stitch_conv_desc desc = {};
  desc.spatial_rank = 2;
  desc.batch = 1;
  desc.in_channels = 2;
  desc.out_channels = 2;
  desc.groups = 1;
  for (int i = 0; i < 2; ++i) {
    desc.in_spatial[i] = 6;
    desc.out_spatial[i] = 6;
    desc.kernel[i] = 3;
    desc.strides[i] = 1;
    desc.dilations[i] = 1;
    desc.pads_begin[i] = desc.pads_end[i] = 1;
  }
  return desc;
}

} // namespace

TEST_CASE("a valid conv descriptor is accepted (the refusals below are not spurious)",
          "[library]") {
  CHECK(conv_refusal(valid_conv(), false).status == STITCH_OK);
  CHECK(conv_refusal(valid_conv(), true).status == STITCH_OK);
}

TEST_CASE("asymmetric conv pads are refused as an internal error", "[library]") {
  stitch_conv_desc desc = valid_conv();
  desc.pads_end[1] = 2;
  const Refusal refusal = conv_refusal(desc, false);
  CHECK(refusal.status == STITCH_ERROR_INTERNAL);
  CHECK(refusal.message.rfind("stitch_library_conv: pads_begin must equal pads_end", 0) == 0);
}

TEST_CASE("a conv output size that disagrees with the geometry is refused", "[library]") {
  stitch_conv_desc desc = valid_conv();
  desc.out_spatial[0] = 5;
  const Refusal refusal = conv_refusal(desc, false);
  CHECK(refusal.status == STITCH_ERROR_INTERNAL);
  CHECK(refusal.message.find("out_spatial is 5 but the geometry gives 6") != std::string::npos);
}

TEST_CASE("conv transpose output padding must be below the stride", "[library]") {
  stitch_conv_desc desc = valid_conv();
  desc.strides[0] = 2;          // base size (6 - 1) * 2 - 2 + 3 = 11
  desc.out_spatial[0] = 11 + 2; // output padding 2 == stride
  const Refusal refusal = conv_refusal(desc, true);
  CHECK(refusal.status == STITCH_ERROR_INTERNAL);
  CHECK(refusal.message.rfind("stitch_library_conv_transpose: out_spatial 13 needs output "
                              "padding 2",
                              0) == 0);
  desc.out_spatial[0] = 11 + 1;
  CHECK(conv_refusal(desc, true).status == STITCH_OK);
}

TEST_CASE("conv groups must divide both channel counts", "[library]") {
  stitch_conv_desc desc = valid_conv();
  desc.out_channels = 3;
  desc.groups = 2;
  CHECK(conv_refusal(desc, false).message.find("groups must divide") != std::string::npos);
}

TEST_CASE("GEMM descriptors that break the rules are refused", "[library]") {
  stitch_gemm_desc desc = stitch_gemm_desc_packed(4, 4, 4);
  REQUIRE(gemm_refusal(desc).status == STITCH_OK);

  SECTION("negative k; k of 0 is an empty sum") {
    desc.k = -1;
    CHECK(gemm_refusal(desc).message.rfind("stitch_library_gemm: negative k", 0) == 0);
    desc.k = 0;
    CHECK(gemm_refusal(desc).status == STITCH_OK);
  }
  SECTION("lda shorter than A's rows") {
    desc.lda = 3;
    CHECK(gemm_refusal(desc).message.find("lda 3 is less than") != std::string::npos);
  }
  SECTION("beta without C") {
    desc.beta = 1.0f;
    CHECK(gemm_refusal(desc).message.find("C is null") != std::string::npos);
  }
  SECTION("C aliasing D with another layout") {
    desc.beta = 1.0f;
    desc.ldc = 5;
    CHECK(gemm_refusal(desc, false, true).message.find("C is D but") != std::string::npos);
  }
  SECTION("batches of D that overlap") {
    desc.batch_count = 2;
    desc.stride_d = 8;
    CHECK(gemm_refusal(desc).message.find("makes the batches of D overlap") != std::string::npos);
  }
  SECTION("batches of D side by side in each row (a transposed result) are accepted, unless "
          "they share columns") {
    desc.batch_count = 2;
    desc.ldd = 2 * desc.n;
    desc.ldc = desc.ldd;
    desc.stride_d = desc.n;
    desc.stride_c = desc.n;
    CHECK(gemm_refusal(desc).status == STITCH_OK);
    desc.stride_d = desc.n - 1;
    CHECK(gemm_refusal(desc).message.find("makes the batches of D overlap") != std::string::npos);
    desc.stride_d = desc.n + 1; // the second batch would run past ldd
    CHECK(gemm_refusal(desc).message.find("makes the batches of D overlap") != std::string::npos);
  }
  SECTION("an unknown epilogue") {
    desc.epilogue = 9;
    CHECK(gemm_refusal(desc).status == STITCH_ERROR_INTERNAL);
  }
}

TEST_CASE("messages are truncated to the caller's buffer and NUL-terminated", "[library]") {
  stitch_gemm_desc desc = stitch_gemm_desc_packed(4, 4, -1); // a negative K: refused
  const float a[1] = {1.0f};
  float d[1] = {0.0f};
  stitch_abi_buffers buffers = {};
  char error[8];
  std::memset(error, 'x', sizeof(error));
  CHECK(stitch_library_gemm(&buffers, &desc, a, a, nullptr, nullptr, d, error, sizeof(error)) ==
        STITCH_ERROR_INTERNAL);
  CHECK(std::string(error) == "stitch_");
  // No buffer at all: the status alone.
  CHECK(stitch_library_gemm(&buffers, &desc, a, a, nullptr, nullptr, d, nullptr, 0) ==
        STITCH_ERROR_INTERNAL);
}

TEST_CASE("a noted error sink follows each message with what the call was run as", "[library]") {
  char error[128] = {};
  const stitch::library::ErrorSink sink("stitch_library_gemm", error, sizeof(error));
  CHECK(sink.noted("a product of K = 0, run as K = 1 over zeros")
            .fail(STITCH_ERROR_CUDA, "cuBLASLt failed") == STITCH_ERROR_CUDA);
  CHECK(std::string(error) ==
        "stitch_library_gemm: cuBLASLt failed (a product of K = 0, run as K = 1 over zeros)");
  // The sink it was made from writes without the note.
  CHECK(sink.fail(STITCH_ERROR_INTERNAL, "null call") == STITCH_ERROR_INTERNAL);
  CHECK(std::string(error) == "stitch_library_gemm: null call");
}

TEST_CASE("the host target keeps no library state and needs no workspace", "[library]") {
  stitch_abi_libraries* libraries = reinterpret_cast<stitch_abi_libraries*>(&libraries);
  CHECK(stitch_libraries_create(&libraries, nullptr, 0) == STITCH_OK);
  CHECK(libraries == nullptr);
  stitch_libraries_destroy(libraries);
  CHECK(stitch_library_workspace_bytes() == STITCH_LIBRARY_HOST_WORKSPACE_BYTES);
}
