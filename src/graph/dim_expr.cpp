// DimExpr: the canonical sum-of-terms form and its arithmetic.
#include "graph/dim_expr.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "graph/checked_math.h"
#include "graph/error.h"

namespace stitch {

using Atom = DimExpr::Atom;
using Term = DimExpr::Term;

namespace {

constexpr const char* kWhat = "a symbolic dim";

int compare_ints(int64_t a, int64_t b) { return a < b ? -1 : a > b ? 1 : 0; }

int compare_atoms(const Atom& a, const Atom& b) {
  if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;
  switch (a.kind) {
  case Atom::Kind::Symbol:
    return a.name.compare(b.name) < 0 ? -1 : a.name == b.name ? 0 : 1;
  case Atom::Kind::FloorDiv:
    if (int c = compare_ints(a.divisor, b.divisor)) return c;
    return DimExpr::compare(*a.a, *b.a);
  case Atom::Kind::Min:
  case Atom::Kind::Max:
    if (int c = DimExpr::compare(*a.a, *b.a)) return c;
    return DimExpr::compare(*a.b, *b.b);
  }
  return 0;
}

int compare_products(const std::vector<Atom>& a, const std::vector<Atom>& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    if (int c = compare_atoms(a[i], b[i])) return c;
  return 0;
}

bool atom_less(const Atom& a, const Atom& b) { return compare_atoms(a, b) < 0; }

int64_t floor_div_int(int64_t a, int64_t d) {
  int64_t q = a / d;
  return (a % d != 0 && (a < 0) != (d < 0)) ? q - 1 : q;
}

int64_t checked_sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) user_fail({}, "{} overflows 64-bit arithmetic", kWhat);
  return r;
}

// min and max of the four corner products: the interval product.
DimBounds multiply(DimBounds a, DimBounds b) {
  int64_t c[4] = {checked_mul(a.lo, b.lo, kWhat), checked_mul(a.lo, b.hi, kWhat),
                  checked_mul(a.hi, b.lo, kWhat), checked_mul(a.hi, b.hi, kWhat)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

} // namespace

// Builds canonical expressions from terms (a friend of DimExpr: it owns terms_).
struct DimExprBuilder {
  static DimExpr from_terms(std::vector<Term> terms) {
    std::sort(terms.begin(), terms.end(),
              [](const Term& a, const Term& b) { return compare_products(a.atoms, b.atoms) < 0; });
    DimExpr out;
    for (Term& t : terms) {
      if (!out.terms_.empty() && compare_products(out.terms_.back().atoms, t.atoms) == 0)
        out.terms_.back().coefficient =
            checked_add(out.terms_.back().coefficient, t.coefficient, kWhat);
      else
        out.terms_.push_back(std::move(t));
    }
    out.terms_.erase(std::remove_if(out.terms_.begin(), out.terms_.end(),
                                    [](const Term& t) { return t.coefficient == 0; }),
                     out.terms_.end());
    return out;
  }
  static const std::vector<Term>& terms(const DimExpr& e) { return e.terms_; }
  static DimExpr from_atom(Atom atom) { return from_terms({Term{1, {std::move(atom)}}}); }
};

namespace {

Atom pair_atom(Atom::Kind kind, const DimExpr& a, const DimExpr& b) {
  Atom atom;
  atom.kind = kind;
  const bool ordered = DimExpr::compare(a, b) <= 0;
  atom.a = std::make_shared<const DimExpr>(ordered ? a : b);
  atom.b = std::make_shared<const DimExpr>(ordered ? b : a);
  return atom;
}

int64_t atom_value(const Atom& atom, const SymbolValues& values) {
  switch (atom.kind) {
  case Atom::Kind::Symbol: {
    auto it = values.find(atom.name);
    STITCH_INTERNAL_CHECK(it != values.end(), "symbolic dim '{}' has no value", atom.name);
    return it->second;
  }
  case Atom::Kind::FloorDiv:
    return floor_div_int(atom.a->evaluate(values), atom.divisor);
  case Atom::Kind::Min:
    return std::min(atom.a->evaluate(values), atom.b->evaluate(values));
  case Atom::Kind::Max:
    return std::max(atom.a->evaluate(values), atom.b->evaluate(values));
  }
  return 0;
}

DimBounds atom_bounds(const Atom& atom, const SymbolRanges& ranges) {
  switch (atom.kind) {
  case Atom::Kind::Symbol: {
    auto it = ranges.find(atom.name);
    STITCH_INTERNAL_CHECK(it != ranges.end(), "symbolic dim '{}' has no range", atom.name);
    return it->second;
  }
  case Atom::Kind::FloorDiv: {
    DimBounds r = atom.a->bounds(ranges);
    return {floor_div_int(r.lo, atom.divisor), floor_div_int(r.hi, atom.divisor)};
  }
  case Atom::Kind::Min: {
    DimBounds a = atom.a->bounds(ranges), b = atom.b->bounds(ranges);
    return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
  }
  case Atom::Kind::Max: {
    DimBounds a = atom.a->bounds(ranges), b = atom.b->bounds(ranges);
    return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
  }
  }
  return {};
}

std::string atom_string(const Atom& atom) {
  switch (atom.kind) {
  case Atom::Kind::Symbol:
    return atom.name;
  case Atom::Kind::FloorDiv: {
    std::string inner = atom.a->to_string();
    const bool sum = DimExprBuilder::terms(*atom.a).size() > 1;
    return "floor(" + (sum ? "(" + inner + ")" : inner) + "/" + std::to_string(atom.divisor) + ")";
  }
  case Atom::Kind::Min:
  case Atom::Kind::Max: {
    // A constant operand sorts first; it reads better second: min(seq,64).
    const DimExpr& first = atom.a->is_constant() ? *atom.b : *atom.a;
    const DimExpr& second = atom.a->is_constant() ? *atom.a : *atom.b;
    return std::string(atom.kind == Atom::Kind::Min ? "min(" : "max(") + first.to_string() + "," +
           second.to_string() + ")";
  }
  }
  return {};
}

// Whether `part` is a sub-multiset of `whole` (both sorted); `rest` gets whole minus part.
bool remove_atoms(const std::vector<Atom>& whole, const std::vector<Atom>& part,
                  std::vector<Atom>& rest) {
  rest.clear();
  size_t j = 0;
  for (const Atom& a : whole) {
    if (j < part.size() && compare_atoms(a, part[j]) == 0) {
      ++j;
      continue;
    }
    rest.push_back(a);
  }
  return j == part.size();
}

} // namespace

DimExpr::DimExpr(int64_t value) {
  if (value != 0) terms_.push_back(Term{value, {}});
}

DimExpr DimExpr::symbol(const std::string& name) {
  Atom atom;
  atom.name = name;
  return DimExprBuilder::from_atom(std::move(atom));
}

bool DimExpr::is_constant() const {
  return terms_.empty() || (terms_.size() == 1 && terms_[0].atoms.empty());
}

int64_t DimExpr::constant_value() const {
  STITCH_INTERNAL_CHECK(is_constant(), "{} is not a constant", to_string());
  return terms_.empty() ? 0 : terms_[0].coefficient;
}

std::optional<std::string> DimExpr::as_symbol() const {
  if (terms_.size() == 1 && terms_[0].coefficient == 1 && terms_[0].atoms.size() == 1 &&
      terms_[0].atoms[0].kind == Atom::Kind::Symbol)
    return terms_[0].atoms[0].name;
  return std::nullopt;
}

std::set<std::string> DimExpr::symbols() const {
  std::set<std::string> out;
  for (const Term& t : terms_)
    for (const Atom& a : t.atoms) {
      if (a.kind == Atom::Kind::Symbol) out.insert(a.name);
      for (const auto* e : {a.a.get(), a.b.get()})
        if (e) {
          std::set<std::string> inner = e->symbols();
          out.insert(inner.begin(), inner.end());
        }
    }
  return out;
}

DimExpr operator+(const DimExpr& a, const DimExpr& b) {
  std::vector<Term> terms = a.terms_;
  terms.insert(terms.end(), b.terms_.begin(), b.terms_.end());
  return DimExprBuilder::from_terms(std::move(terms));
}

DimExpr DimExpr::operator-() const {
  std::vector<Term> terms = terms_;
  for (Term& t : terms)
    t.coefficient = checked_mul(t.coefficient, -1, kWhat);
  return DimExprBuilder::from_terms(std::move(terms));
}

DimExpr operator-(const DimExpr& a, const DimExpr& b) { return a + (-b); }

DimExpr operator*(const DimExpr& a, const DimExpr& b) {
  std::vector<Term> terms;
  for (const Term& x : a.terms_)
    for (const Term& y : b.terms_) {
      Term t{checked_mul(x.coefficient, y.coefficient, kWhat), x.atoms};
      t.atoms.insert(t.atoms.end(), y.atoms.begin(), y.atoms.end());
      std::sort(t.atoms.begin(), t.atoms.end(), atom_less);
      terms.push_back(std::move(t));
    }
  return DimExprBuilder::from_terms(std::move(terms));
}

DimExpr DimExpr::floor_div(const DimExpr& a, int64_t d) {
  STITCH_INTERNAL_CHECK(d > 0, "a symbolic dim divided by {}", d);
  if (d == 1) return a;
  // floor((d*Q + R) / d) = Q + floor(R / d) for integer-valued Q: take the multiples of d out
  // of every coefficient, so that R's coefficients lie in [0, d).
  std::vector<Term> q, r;
  for (const Term& t : a.terms_) {
    int64_t whole = floor_div_int(t.coefficient, d);
    int64_t rest = checked_sub(t.coefficient, checked_mul(whole, d, kWhat));
    if (whole != 0) q.push_back(Term{whole, t.atoms});
    if (rest != 0) r.push_back(Term{rest, t.atoms});
  }
  DimExpr quotient = DimExprBuilder::from_terms(std::move(q));
  DimExpr remainder = DimExprBuilder::from_terms(std::move(r));
  if (remainder.is_constant()) return quotient; // 0 <= R < d: floor(R / d) = 0
  // A common factor g of R's coefficients and d cancels: floor(R / d) = floor((R/g) / (d/g)).
  int64_t g = d;
  for (const Term& t : remainder.terms_)
    g = std::gcd(g, t.coefficient);
  if (g > 1) {
    std::vector<Term> reduced = remainder.terms_;
    for (Term& t : reduced)
      t.coefficient /= g;
    remainder = DimExprBuilder::from_terms(std::move(reduced));
    d /= g;
  }
  // floor(floor(x / e) / d) = floor(x / (e * d)) for positive e and d.
  const auto& rt = remainder.terms_;
  if (rt.size() == 1 && rt[0].coefficient == 1 && rt[0].atoms.size() == 1 &&
      rt[0].atoms[0].kind == Atom::Kind::FloorDiv)
    return quotient + floor_div(*rt[0].atoms[0].a, checked_mul(rt[0].atoms[0].divisor, d, kWhat));
  Atom atom;
  atom.kind = Atom::Kind::FloorDiv;
  atom.a = std::make_shared<const DimExpr>(std::move(remainder));
  atom.divisor = d;
  return quotient + DimExprBuilder::from_atom(std::move(atom));
}

DimExpr DimExpr::ceil_div(const DimExpr& a, int64_t d) {
  STITCH_INTERNAL_CHECK(d > 0, "a symbolic dim divided by {}", d);
  return floor_div(a + DimExpr(d - 1), d);
}

DimExpr DimExpr::mod(const DimExpr& a, int64_t d) { return a - DimExpr(d) * floor_div(a, d); }

DimExpr DimExpr::min(const DimExpr& a, const DimExpr& b, const SymbolRanges* ranges) {
  DimExpr diff = a - b;
  if (diff.is_constant()) return diff.constant_value() <= 0 ? a : b;
  if (ranges) {
    DimBounds r = diff.bounds(*ranges);
    if (r.hi <= 0) return a;
    if (r.lo >= 0) return b;
  }
  return DimExprBuilder::from_atom(pair_atom(Atom::Kind::Min, a, b));
}

DimExpr DimExpr::max(const DimExpr& a, const DimExpr& b, const SymbolRanges* ranges) {
  DimExpr diff = a - b;
  if (diff.is_constant()) return diff.constant_value() >= 0 ? a : b;
  if (ranges) {
    DimBounds r = diff.bounds(*ranges);
    if (r.lo >= 0) return a;
    if (r.hi <= 0) return b;
  }
  return DimExprBuilder::from_atom(pair_atom(Atom::Kind::Max, a, b));
}

std::optional<DimExpr> DimExpr::exact_div(const DimExpr& a, const DimExpr& b) {
  if (b.terms_.size() != 1) return std::nullopt;
  const Term& divisor = b.terms_[0];
  std::vector<Term> terms;
  std::vector<Atom> rest;
  for (const Term& t : a.terms_) {
    int64_t quotient;
    if (divisor.coefficient == -1) { // INT64_MIN / -1 overflows: checked
      quotient = checked_mul(t.coefficient, -1, kWhat);
    } else {
      if (t.coefficient % divisor.coefficient != 0) return std::nullopt;
      quotient = t.coefficient / divisor.coefficient;
    }
    if (!remove_atoms(t.atoms, divisor.atoms, rest)) return std::nullopt;
    terms.push_back(Term{quotient, rest});
  }
  return DimExprBuilder::from_terms(std::move(terms));
}

int64_t DimExpr::evaluate(const SymbolValues& values) const {
  int64_t sum = 0;
  for (const Term& t : terms_) {
    int64_t product = t.coefficient;
    for (const Atom& a : t.atoms)
      product = checked_mul(product, atom_value(a, values), kWhat);
    sum = checked_add(sum, product, kWhat);
  }
  return sum;
}

std::optional<bool>
DimExpr::every_value(const SymbolRanges& ranges,
                     const std::function<bool(const SymbolValues&)>& visit) const {
  const std::set<std::string> names = symbols();
  if (names.empty()) return visit({});
  if (names.size() != 1) return std::nullopt;
  const std::string& name = *names.begin();
  const auto range = ranges.find(name);
  if (range == ranges.end() || range->second.hi - range->second.lo > (int64_t{1} << 16))
    return std::nullopt;
  for (int64_t v = range->second.lo; v <= range->second.hi; ++v)
    if (!visit({{name, v}})) return false;
  return true;
}

int64_t DimExpr::largest(const SymbolRanges& ranges) const {
  int64_t most = std::numeric_limits<int64_t>::min();
  const bool tried = every_value(ranges, [&](const SymbolValues& values) {
                       most = std::max(most, evaluate(values));
                       return true;
                     }).has_value();
  return tried ? most : bounds(ranges).hi;
}

DimBounds DimExpr::bounds(const SymbolRanges& ranges) const {
  DimBounds sum{0, 0};
  for (const Term& t : terms_) {
    DimBounds product{t.coefficient, t.coefficient};
    for (const Atom& a : t.atoms)
      product = multiply(product, atom_bounds(a, ranges));
    sum = {checked_add(sum.lo, product.lo, kWhat), checked_add(sum.hi, product.hi, kWhat)};
  }
  return sum;
}

namespace {

bool atom_non_decreasing(const DimExpr::Atom& a, const SymbolRanges& ranges) {
  switch (a.kind) {
  case DimExpr::Atom::Kind::Symbol:
    return true;
  case DimExpr::Atom::Kind::FloorDiv:
    return a.a->non_decreasing(ranges);
  case DimExpr::Atom::Kind::Min:
  case DimExpr::Atom::Kind::Max:
    return a.a->non_decreasing(ranges) && a.b->non_decreasing(ranges);
  }
  return false;
}

} // namespace

bool DimExpr::non_decreasing(const SymbolRanges& ranges) const {
  for (const Term& t : terms_) {
    if (t.atoms.empty()) continue; // the constant term
    if (t.coefficient < 0) return false;
    // A product of non-decreasing factors is non-decreasing where none is negative.
    for (const Atom& a : t.atoms)
      if (!atom_non_decreasing(a, ranges) || (t.atoms.size() > 1 && atom_bounds(a, ranges).lo < 0))
        return false;
  }
  return true;
}

namespace {

// A canonical sum written out, the constant term (first in the canonical order) last: seq+1,
// not 1+seq. As text, compact and each coefficient first ("2*seq+1"); as C++ (`code`), spaced
// and each coefficient after its product ("sym1 * 2 + 1").
std::string write_sum(const std::vector<Term>& terms,
                      const std::function<std::string(const Atom&)>& atom, bool code) {
  std::vector<const Term*> order;
  for (const Term& t : terms)
    if (!t.atoms.empty()) order.push_back(&t);
  if (terms[0].atoms.empty()) order.push_back(&terms[0]);
  const char* times = code ? " * " : "*";
  std::string out;
  for (const Term* t : order) {
    int64_t c = t->coefficient;
    if (c < 0) {
      out += code && !out.empty() ? " - " : "-";
      c = checked_sub(0, c);
    } else if (!out.empty()) {
      out += code ? " + " : "+";
    }
    std::string product;
    for (const Atom& a : t->atoms)
      product += (product.empty() ? "" : times) + atom(a);
    if (t->atoms.empty())
      product = std::to_string(c);
    else if (c != 1)
      product = code ? product + times + std::to_string(c) : std::to_string(c) + times + product;
    out += product;
  }
  return out;
}

} // namespace

std::string DimExpr::to_string() const {
  if (terms_.empty()) return "0";
  return write_sum(terms_, atom_string, false);
}

namespace {

std::string atom_code(const Atom& atom,
                      const std::function<std::string(const std::string&)>& symbol) {
  switch (atom.kind) {
  case Atom::Kind::Symbol:
    return symbol(atom.name);
  case Atom::Kind::FloorDiv:
    return fmt::format("stitch::dims::floor_div({}, {})", atom.a->to_code(symbol), atom.divisor);
  case Atom::Kind::Min:
  case Atom::Kind::Max:
    return fmt::format("stitch::dims::{}({}, {})", atom.kind == Atom::Kind::Min ? "min" : "max",
                       atom.a->to_code(symbol), atom.b->to_code(symbol));
  }
  return {};
}

} // namespace

std::string DimExpr::to_code(const std::function<std::string(const std::string&)>& symbol) const {
  if (terms_.empty()) return "0";
  if (is_constant()) return std::to_string(constant_value());
  if (terms_.size() == 1 && terms_[0].coefficient == 1 && terms_[0].atoms.size() == 1)
    return atom_code(terms_[0].atoms[0], symbol); // one symbol, or one call: no parentheses
  return "(" +
         write_sum(
             terms_, [&](const Atom& a) { return atom_code(a, symbol); }, true) +
         ")";
}

int DimExpr::compare(const DimExpr& a, const DimExpr& b) {
  if (a.terms_.size() != b.terms_.size()) return a.terms_.size() < b.terms_.size() ? -1 : 1;
  for (size_t i = 0; i < a.terms_.size(); ++i) {
    if (int c = compare_products(a.terms_[i].atoms, b.terms_[i].atoms)) return c;
    if (int c = compare_ints(a.terms_[i].coefficient, b.terms_[i].coefficient)) return c;
  }
  return 0;
}

std::string sym_shape_to_string(const SymShape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? "," : "") + shape[i].to_string();
  return out + "]";
}

SymShape sym_shape_of(const std::vector<int64_t>& shape) {
  return SymShape(shape.begin(), shape.end());
}

DimExpr sym_elements(const SymShape& shape) {
  DimExpr count = 1;
  for (const DimExpr& d : shape)
    count = count * d;
  return count;
}

SymShape sym_row_major_strides(const SymShape& shape) {
  SymShape strides(shape.size(), DimExpr(1));
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

bool is_one(const DimExpr& d) { return d.is_constant() && d.constant_value() == 1; }

bool is_zero(const DimExpr& d) { return d.is_constant() && d.constant_value() == 0; }

SymShape squeezed(const SymShape& shape) {
  SymShape out;
  for (const DimExpr& d : shape)
    if (!is_one(d)) out.push_back(d);
  return out;
}

size_t symbolic_prefix(const SymShape& shape) {
  size_t end = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!shape[d].is_constant()) end = d + 1;
  return end;
}

bool is_static(const SymShape& shape) {
  return std::all_of(shape.begin(), shape.end(), [](const DimExpr& d) { return d.is_constant(); });
}

} // namespace stitch
