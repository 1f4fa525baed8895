// A tensor dim as an expression of the model's symbolic dims (`--dim batch=1..64`): integer
// constants and symbols combined by +, -, *, floor and ceiling division by a positive
// constant, modulo a positive constant, min and max.
//
// An expression is kept in one canonical form, a sum of terms, each an integer coefficient
// times a product of atoms (a symbol, floor(e/c), min(a,b) or max(a,b)), terms and atoms in
// one fixed order. Two expressions that this form makes equal compare equal: batch*seq and
// seq*batch, (seq+1)-1 and seq, floor((2*seq+4)/2) and seq+2. Equality is therefore sound
// (equal expressions are equal for every value of the symbols) but not complete: min(seq,64)
// and seq are different expressions even where seq never passes 64, unless the constructor
// was given the symbols' ranges (the overloads taking `SymbolRanges`).
//
// Every value a model's shapes take is an integer; evaluation uses floor division and checked
// 64-bit arithmetic, so an overflow is a user error, never undefined behavior.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace stitch {

// A closed integer interval [lo, hi].
struct DimBounds {
  int64_t lo = 0;
  int64_t hi = 0;
};

using SymbolRanges = std::map<std::string, DimBounds>; // symbol -> the values it may take
using SymbolValues = std::map<std::string, int64_t>;   // symbol -> one value

class DimExpr {
public:
  DimExpr() = default;    // the constant 0
  DimExpr(int64_t value); // NOLINT: a constant converts implicitly, so that `seq + 1` reads
  static DimExpr symbol(const std::string& name);

  bool is_constant() const;
  // The constant's value; only for is_constant().
  int64_t constant_value() const;
  // The symbol's name when the expression is exactly one symbol.
  std::optional<std::string> as_symbol() const;
  // The symbols the expression mentions.
  std::set<std::string> symbols() const;

  friend DimExpr operator+(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator-(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator*(const DimExpr& a, const DimExpr& b);
  DimExpr operator-() const;

  // floor(a / d) and ceil(a / d) for a positive constant d; a % d as a - d * floor(a / d).
  static DimExpr floor_div(const DimExpr& a, int64_t d);
  static DimExpr ceil_div(const DimExpr& a, int64_t d);
  static DimExpr mod(const DimExpr& a, int64_t d);
  // min and max; with `ranges`, an operand provably never above (min) or below (max) the
  // other is the result itself: min(seq, 64) is seq where seq ranges over 1..64.
  static DimExpr min(const DimExpr& a, const DimExpr& b, const SymbolRanges* ranges = nullptr);
  static DimExpr max(const DimExpr& a, const DimExpr& b, const SymbolRanges* ranges = nullptr);
  // a / b where b is one term (a constant times a product of atoms) dividing every term of a
  // exactly: (batch*seq*768) / (batch*12) is seq*64. nullopt where that does not hold.
  static std::optional<DimExpr> exact_div(const DimExpr& a, const DimExpr& b);

  // The value for the given symbol values (every symbol mentioned must have one).
  int64_t evaluate(const SymbolValues& values) const;
  // The smallest and largest value over every combination of the symbols' ranges (sound,
  // not always tight: interval arithmetic).
  DimBounds bounds(const SymbolRanges& ranges) const;
  // The values of the one symbol the expression mentions, tried one by one: `visit` with each
  // (a constant: once, with no values) until it returns false. Whether every visit returned
  // true; nullopt, visiting none, where the expression mentions several symbols or one of more
  // than 2^16 values in `ranges`.
  std::optional<bool> every_value(const SymbolRanges& ranges,
                                  const std::function<bool(const SymbolValues&)>& visit) const;
  // The largest value over `ranges`: exact where every_value can try them, else
  // bounds(ranges).hi.
  int64_t largest(const SymbolRanges& ranges) const;
  // Whether the value never decreases as any symbol grows within `ranges` (sound, not
  // complete: positive sums of products of symbols, floor divisions, min and max of such, no
  // negative factor; seq-1 is, 64-seq is not).
  bool non_decreasing(const SymbolRanges& ranges) const;

  // "batch*seq", "2*seq+1", "floor((seq+1)/2)", "min(seq,64)".
  std::string to_string() const;
  // The expression as C++ of int64_t values, each symbol written as `symbol(name)` gives it:
  // "(sym0 * sym1 * 64)", "stitch::dims::floor_div(sym1 + 1, 2)", "stitch::dims::min(sym1, 64)"
  // (stitch_generated.h). A constant is a plain literal.
  std::string to_code(const std::function<std::string(const std::string&)>& symbol) const;

  friend bool operator==(const DimExpr& a, const DimExpr& b) { return compare(a, b) == 0; }
  friend bool operator!=(const DimExpr& a, const DimExpr& b) { return compare(a, b) != 0; }
  friend bool operator<(const DimExpr& a, const DimExpr& b) { return compare(a, b) < 0; }

  // The canonical form's pieces (public for the implementation's helpers; callers use the
  // operations above).
  struct Atom {
    enum class Kind { Symbol, FloorDiv, Min, Max };
    Kind kind = Kind::Symbol;
    std::string name;                    // Symbol
    std::shared_ptr<const DimExpr> a, b; // FloorDiv: a; Min, Max: a and b (a < b)
    int64_t divisor = 1;                 // FloorDiv
  };
  struct Term {
    int64_t coefficient = 0;
    std::vector<Atom> atoms; // sorted; empty for the constant term
  };

  static int compare(const DimExpr& a, const DimExpr& b);

private:
  std::vector<Term> terms_; // sorted by atoms, no zero coefficients
  friend struct DimExprBuilder;
};

using SymShape = std::vector<DimExpr>;

// "[batch,seq,768]".
std::string sym_shape_to_string(const SymShape& shape);
// The shape with every dim constant; `shape` as expressions.
SymShape sym_shape_of(const std::vector<int64_t>& shape);
// True when every dim is a constant.
bool is_static(const SymShape& shape);
// The product of the dims: a shape's elements as an expression.
DimExpr sym_elements(const SymShape& shape);
// Row-major strides of a shape as expressions: each the product of the dims after it.
SymShape sym_row_major_strides(const SymShape& shape);
// Whether `d` is the constant 1 (a dim of 1 at every value of the symbols, which broadcasts).
bool is_one(const DimExpr& d);
// Whether `d` is the constant 0.
bool is_zero(const DimExpr& d);
// `shape` without its constant-1 dims.
SymShape squeezed(const SymShape& shape);
// One past the last dim that depends on the symbols (0 for a static shape): the dims from
// there on are constants.
size_t symbolic_prefix(const SymShape& shape);

} // namespace stitch
