// What a library records about its making: the model file's SHA-256 (checked against FIPS
// 180-4's example digests, across the padding's block boundaries) and which symbol prefixes
// the exported C API may take.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "driver/build_library.h"
#include "driver/sha256.h"

namespace stitch {

// Proves: the digests of the standard's examples, of messages that end just before, at and after
// a block's length field, and of a file read in chunks equal to the digest of its bytes.
TEST_CASE("sha256 digests match the standard's examples", "[driver]") {
  REQUIRE(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  REQUIRE(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  REQUIRE(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  REQUIRE(sha256_hex(std::string(1000000, 'a')) ==
          "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "stitch_sha256_test.bin";
  std::string bytes;
  for (int i = 0; i < 3 * (1 << 20) + 77; ++i)
    bytes += static_cast<char>((i * 131) >> 3);
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(sha256_file_hex(path.string()) == sha256_hex(bytes));
  std::filesystem::remove(path);
}

// Proves: a prefix is a C identifier of at most 64 characters, so that NAME_run is a symbol.
TEST_CASE("symbol prefixes are C identifiers", "[driver]") {
  for (const char* good : {"bert", "_m", "Model_2", "stitch"})
    REQUIRE(is_symbol_prefix(good));
  for (const char* bad : {"", "2bert", "bert-large", "a b", "b\xc3\xa9rt", "x;y"})
    REQUIRE_FALSE(is_symbol_prefix(bad));
  REQUIRE(is_symbol_prefix(std::string(64, 'a')));
  REQUIRE_FALSE(is_symbol_prefix(std::string(65, 'a')));
}

} // namespace stitch
