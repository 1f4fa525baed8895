// The runtime headers (src/runtime: the portability layer, device helpers, the model ABI)
// that stitchc embeds at build time and writes beside the sources it generates.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace stitch {

struct EmbeddedFile {
  const char* path; // relative to src/runtime
  const unsigned char* data;
  size_t size;
};

const std::vector<EmbeddedFile>& embedded_runtime_files();

} // namespace stitch
