// The .npy reader and writer. The header is a Python dict literal; it is parsed by a small
// recursive-descent reader that accepts exactly what numpy writes and what a person could
// reasonably write by hand (either quote, any key order, spaces, trailing commas), and
// nothing more: no escapes, no nested containers other than the shape tuple.
#include "driver/run/npy.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>

#include "driver/run/run_error.h"
#include "driver/run/tensor_file.h"

namespace stitch::run {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr int64_t kMaxDim = int64_t{1} << 62;
constexpr size_t kMaxRank = 64;
constexpr uint64_t kMaxFileBytes = uint64_t{1} << 40;
constexpr size_t kArrayAlign = 64;   // numpy's ARRAY_ALIGN
constexpr size_t kGrowthDigits = 21; // numpy's GROWTH_AXIS_MAX_DIGITS

struct DescrEntry {
  const char* code; // the descr without its byte-order character
  stitch_dtype dtype;
};

constexpr DescrEntry kDescrs[] = {
    {"f2", STITCH_FLOAT16},  {"f4", STITCH_FLOAT32}, {"f8", STITCH_FLOAT64}, {"i1", STITCH_INT8},
    {"i2", STITCH_INT16},    {"i4", STITCH_INT32},   {"i8", STITCH_INT64},   {"u1", STITCH_UINT8},
    {"u2", STITCH_UINT16},   {"u4", STITCH_UINT32},  {"u8", STITCH_UINT64},  {"b1", STITCH_BOOL},
    {"V2", STITCH_BFLOAT16}, // ml_dtypes.bfloat16, see npy.h
};

// A value of the header dictionary.
struct HeaderValue {
  enum class Kind { String, Bool, Tuple } kind = Kind::String;
  std::string text;
  bool flag = false;
  std::vector<int64_t> items;
};

// Reads the header dict; every failure names the file and what was expected where.
class HeaderParser {
public:
  HeaderParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  std::map<std::string, HeaderValue> parse_dict() {
    std::map<std::string, HeaderValue> dict;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      std::string key = parse_string();
      expect(':');
      HeaderValue value = parse_value();
      if (!dict.emplace(key, value).second) fail("the header gives the key '{}' twice", key);
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') fail("expected ',' or '}}' after the value of '{}'", key);
    }
    ++pos_;
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the header dictionary");
    return dict;
  }

private:
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
    run_fail("{}: malformed .npy header at character {}: {}", source_, pos_,
             fmt::format(format, std::forward<Args>(args)...));
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  void expect(char c) {
    skip_space();
    if (peek() != c) fail("expected '{}'", c);
    ++pos_;
  }

  std::string parse_string() {
    skip_space();
    char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    size_t start = ++pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') fail("escapes in header strings are not supported");
      ++pos_;
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    return std::string(text_.substr(start, pos_++ - start));
  }

  int64_t parse_integer() {
    skip_space();
    if (peek() < '0' || peek() > '9') fail("expected a non-negative integer");
    int64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      int digit = peek() - '0';
      if (value > (kMaxDim - digit) / 10) fail("a dimension is too large");
      value = value * 10 + digit;
      ++pos_;
    }
    if (peek() == 'L') ++pos_; // Python 2 numpy wrote long integers as 3L
    return value;
  }

  HeaderValue parse_tuple() {
    HeaderValue value;
    value.kind = HeaderValue::Kind::Tuple;
    expect('(');
    bool trailing_comma = false;
    while (true) {
      skip_space();
      if (peek() == ')') break;
      if (value.items.size() >= kMaxRank) fail("the shape has more than {} dims", kMaxRank);
      value.items.push_back(parse_integer());
      skip_space();
      trailing_comma = peek() == ',';
      if (trailing_comma) {
        ++pos_;
        continue;
      }
      if (peek() != ')') fail("expected ',' or ')' in the shape");
    }
    ++pos_;
    if (value.items.size() == 1 && !trailing_comma)
      fail("'({})' is an integer in parentheses, not a tuple; write '({},)'", value.items[0],
           value.items[0]);
    return value;
  }

  HeaderValue parse_value() {
    skip_space();
    char c = peek();
    if (c == '\'' || c == '"')
      return HeaderValue{HeaderValue::Kind::String, parse_string(), false, {}};
    if (c == '(') return parse_tuple();
    if (c == '[') fail("structured dtypes (a list as 'descr') are not supported");
    for (bool flag : {true, false}) {
      std::string_view word = flag ? "True" : "False";
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return HeaderValue{HeaderValue::Kind::Bool, "", flag, {}};
      }
    }
    fail("expected a string, True, False or a tuple");
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
};

uint32_t read_le(std::string_view bytes, size_t offset, size_t width) {
  uint32_t value = 0;
  for (size_t i = 0; i < width; ++i)
    value |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[offset + i])) << (8 * i);
  return value;
}

stitch_dtype dtype_of_descr(const std::string& descr, const std::string& source) {
  if (descr.size() == 3) {
    char order = descr[0];
    std::string code = descr.substr(1);
    if (descr == "|V2")
      run_fail("{}: dtype '|V2' is numpy's opaque 2-byte type, not a number; a bfloat16 array "
               "saved with ml_dtypes has the descr '<V2'",
               source);
    for (const DescrEntry& entry : kDescrs) {
      if (code != entry.code) continue;
      bool single_byte = dtype_size(entry.dtype) == 1;
      if (order == '<' || order == '=' || order == '|' || (order == '>' && single_byte))
        return entry.dtype;
      if (order == '>')
        run_fail("{}: dtype '{}' is big-endian; only little-endian .npy files are supported",
                 source, descr);
    }
  }
  run_fail("{}: dtype '{}' is not supported (supported: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1, "
           "little-endian, and <V2 for ml_dtypes' bfloat16)",
           source, descr);
}

const HeaderValue& header_entry(const std::map<std::string, HeaderValue>& dict, const char* key,
                                HeaderValue::Kind kind, const char* kind_name,
                                const std::string& source) {
  auto it = dict.find(key);
  if (it == dict.end()) run_fail("{}: the .npy header has no '{}'", source, key);
  if (it->second.kind != kind)
    run_fail("{}: the .npy header's '{}' is not {}", source, key, kind_name);
  return it->second;
}

void check_bool_bytes(const HostTensor& tensor, const std::string& source) {
  for (size_t i = 0; i < tensor.bytes.size(); ++i) {
    if (tensor.bytes[i] > 1)
      run_fail("{}: bool element {} holds the byte {}, not 0 or 1", source, i, tensor.bytes[i]);
  }
}

std::string shape_literal(const std::vector<int64_t>& dims) {
  if (dims.size() == 1) return fmt::format("({},)", dims[0]);
  return fmt::format("({})", fmt::join(dims, ", "));
}

} // namespace

std::string npy_descr(stitch_dtype dtype) {
  for (const DescrEntry& entry : kDescrs) {
    if (entry.dtype != dtype) continue;
    return (dtype_size(dtype) == 1 ? "|" : "<") + std::string(entry.code);
  }
  return "";
}

HostTensor parse_npy(std::string_view file_bytes, const std::string& source) {
  if (file_bytes.size() < kMagicSize + 2 || file_bytes.substr(0, kMagicSize) != kMagic)
    run_fail("{}: not a .npy file (no \\x93NUMPY magic)", source);
  int major = static_cast<uint8_t>(file_bytes[6]);
  int minor = static_cast<uint8_t>(file_bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    run_fail("{}: .npy format version {}.{} is not supported (1.0, 2.0, 3.0 are)", source, major,
             minor);
  size_t length_width = major == 1 ? 2 : 4;
  size_t prefix = kMagicSize + 2 + length_width;
  if (file_bytes.size() < prefix) run_fail("{}: the .npy file ends inside its preamble", source);
  uint64_t header_length = read_le(file_bytes, kMagicSize + 2, length_width);
  if (header_length > file_bytes.size() - prefix)
    run_fail("{}: the .npy header claims {} bytes, but only {} follow the preamble", source,
             header_length, file_bytes.size() - prefix);
  std::string_view header = file_bytes.substr(prefix, header_length);
  for (char c : header) {
    if (static_cast<uint8_t>(c) >= 0x80 || c == '\0')
      run_fail("{}: the .npy header holds a non-ASCII or NUL byte", source);
  }

  std::map<std::string, HeaderValue> dict = HeaderParser(header, source).parse_dict();
  for (const auto& [key, value] : dict) {
    if (key != "descr" && key != "fortran_order" && key != "shape")
      run_fail("{}: the .npy header has an unexpected key '{}'", source, key);
  }
  const HeaderValue& descr =
      header_entry(dict, "descr", HeaderValue::Kind::String, "a string", source);
  const HeaderValue& fortran =
      header_entry(dict, "fortran_order", HeaderValue::Kind::Bool, "True or False", source);
  const HeaderValue& shape =
      header_entry(dict, "shape", HeaderValue::Kind::Tuple, "a tuple", source);
  if (fortran.flag)
    run_fail("{}: the array is in Fortran order; save it in C order "
             "(numpy.ascontiguousarray) and try again",
             source);

  HostTensor tensor;
  tensor.dtype = dtype_of_descr(descr.text, source);
  tensor.dims = shape.items;
  uint64_t count = 0;
  size_t element_size = dtype_size(tensor.dtype);
  if (!checked_element_count(tensor.dims, element_size, &count))
    run_fail("{}: the shape {} is too large", source, shape_literal(tensor.dims));
  uint64_t data_offset = prefix + header_length;
  uint64_t data_bytes = file_bytes.size() - data_offset;
  uint64_t needed = count * element_size;
  if (data_bytes != needed)
    run_fail("{}: the {} array needs {} data bytes, but the file holds {}", source,
             describe_tensor(tensor), needed, data_bytes);
  const uint8_t* data = reinterpret_cast<const uint8_t*>(file_bytes.data()) + data_offset;
  tensor.bytes.assign(data, data + needed);
  if (tensor.dtype == STITCH_BOOL) check_bool_bytes(tensor, source);
  return tensor;
}

HostTensor read_npy(const std::string& path) {
  return parse_npy(read_whole_file(path, kMaxFileBytes), path);
}

std::string encode_npy(const HostTensor& tensor, int major_version) {
  std::string descr = npy_descr(tensor.dtype);
  if (descr.empty())
    run_fail("internal error: a {} tensor has no .npy descr", describe_tensor(tensor));
  if (major_version < 0 || major_version > 3)
    run_fail(".npy format version {}.0 does not exist", major_version);
  uint64_t count = 0;
  if (!checked_element_count(tensor.dims, dtype_size(tensor.dtype), &count) ||
      count * dtype_size(tensor.dtype) != tensor.bytes.size())
    run_fail("internal error: a {} tensor holds {} bytes", describe_tensor(tensor),
             tensor.bytes.size());
  // Byte for byte what numpy.save writes: spare spaces so the first dim can grow in place,
  // then 1 to 64 spaces so the data starts at a multiple of 64, then '\n'.
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr,
                                 shape_literal(tensor.dims));
  if (!tensor.dims.empty())
    dict.append(kGrowthDigits - std::min(kGrowthDigits, fmt::format("{}", tensor.dims[0]).size()),
                ' ');
  auto padded_length = [&](size_t prefix) {
    return dict.size() + 1 + (kArrayAlign - (prefix + dict.size() + 1) % kArrayAlign);
  };
  int version = major_version;
  if (version == 0) version = padded_length(10) <= 0xffff ? 1 : 2;
  size_t prefix = version == 1 ? 10 : 12;
  size_t header_length = padded_length(prefix);
  if (version == 1 && header_length > 0xffff)
    run_fail("the .npy header of a {} tensor is too long for format 1.0", describe_tensor(tensor));

  std::string out(kMagic, kMagicSize);
  out += static_cast<char>(version);
  out += '\0';
  for (size_t i = 0; i < prefix - kMagicSize - 2; ++i)
    out += static_cast<char>((header_length >> (8 * i)) & 0xff);
  out += dict;
  out.append(header_length - dict.size() - 1, ' ');
  out += '\n';
  out.append(reinterpret_cast<const char*>(tensor.bytes.data()), tensor.bytes.size());
  return out;
}

void write_npy(const std::string& path, const HostTensor& tensor) {
  std::string bytes = encode_npy(tensor);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) run_fail("{}: cannot write: {}", path, std::strerror(errno));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) run_fail("{}: writing failed", path);
}

} // namespace stitch::run
