// .npy files: numpy's array format, versions 1.0, 2.0 and 3.0, for the little-endian numeric
// dtypes f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 and b1 in C order, and bfloat16. Files are
// untrusted: the reader checks the magic, the version, the header length, every key of the
// header dictionary and the data size against the shape, and refuses anything else with a
// message naming the file.
//
// bfloat16 has no numpy dtype. numpy.save of an ml_dtypes.bfloat16 array writes the descr
// '<V2' (a 2-byte opaque type with a byte order), and numpy.load gives it back as '|V2' bytes
// that .view(ml_dtypes.bfloat16) turns into values. No other dtype numpy or ml_dtypes 0.5/0.6
// knows is saved as '<V2' (numpy's own 2-byte void is '|V2', ml_dtypes' other types are 1
// or 4 bytes), so '<V2' is read as bfloat16 and bfloat16 is written as '<V2', byte for byte
// what ml_dtypes gives; '|V2' is refused.
#pragma once

#include <string>
#include <string_view>

#include "driver/run/host_tensor.h"

namespace stitch::run {

// Parses the whole contents of a .npy file; `source` names it in error messages.
HostTensor parse_npy(std::string_view file_bytes, const std::string& source);
HostTensor read_npy(const std::string& path);

// The .npy encoding of `tensor`. `major_version` 0 picks 1.0 when the header fits (as numpy
// does) and 2.0 otherwise; 1, 2 or 3 forces that version.
std::string encode_npy(const HostTensor& tensor, int major_version = 0);
void write_npy(const std::string& path, const HostTensor& tensor);

// The numpy descr of a dtype ("<f4", "|b1", "<V2" for bfloat16).
std::string npy_descr(stitch_dtype dtype);

} // namespace stitch::run
