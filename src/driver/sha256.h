// SHA-256 (FIPS 180-4) of a file, for the model hash every compiled library embeds
// (stitch_build_info.model_sha256): what lets a deployment check which model a library serves.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace stitch {

// The SHA-256 of `bytes`, as 64 lowercase hex digits.
std::string sha256_hex(std::string_view bytes);

// The SHA-256 of the file at `path`, read in chunks; a user error when it cannot be read.
std::string sha256_file_hex(const std::string& path);

} // namespace stitch
