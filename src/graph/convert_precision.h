// convert-precision: `stitchc --precision fp16|bf16` turns a float32 model into one whose
// activations and weights are float16 or bfloat16 (the "reduced" type), keeping in float32 the
// values that lose too much when rounded to 11 (fp16) or 8 (bf16) significant bits. Half the
// bytes for every tensor the model moves, and GEMMs and convolutions on tensor cores; the
// generated kernels compute in float32 registers anyway, so what this pass decides is only
// what is *stored* in which type. Only float32 tensors change: integer, bool, float64 and
// tensors already in a half type keep their types, and a model without float32 values is left
// as it is.
//
// Every float32 value gets a home type by these rules, applied to each node in order (a
// "non-constant float operand" is an input the node computes with that is not a constant;
// constants take whatever type their reader computes in):
//
//   1. GEMMs and convolutions (op categories Gemm and Conv) compute in the reduced type: they
//      are what tensor cores run, accumulating in float32 (cuBLASLt, cuDNN).
//   2. fp32 ops compute in float32 and their outputs stay float32, following mixed-precision
//      practice (PyTorch autocast's float32 list):
//        - reductions that sum or multiply many values (the reduction table's Sum, Prod and
//          LogSumExp rows: ReduceSum, ReduceMean, ReduceSumSquare, ReduceL1, ReduceL2,
//          ReduceLogSum, ReduceLogSumExp, ReduceProd, GlobalAveragePool) and CumSum: a sum
//          of many halves overflows float16 (65504), and a mean or variance rounded to 8 or 11
//          bits is what every normalization then divides by;
//        - Pow, Exp and Log: their outputs span far more range than their inputs (x^2 of an
//          activation of 300 overflows float16; exp(x) does past x = 11), and an exporter's
//          LayerNorm squares with Pow, its softmax writes Exp.
//   3. A float value made from no non-constant float value is index math or a fill value and
//      stays float32: Cast to float32 from an integer or bool (positions, masks), Range,
//      ConstantOfShape, and a pointwise node reading only constants and integer or bool
//      tensors (Where(mask, 0, -inf)). float16 holds integers exactly only up to 2048.
//   4. Every other node follows its non-constant float operands: all float32 -> float32 (a
//      statistic computed from statistics stays a statistic: var + eps, sqrt, reciprocal,
//      exp / sum), none float32 -> the reduced type. A pointwise node reading both (an
//      activation with a statistic: x - mean, d / std, scores + mask) computes in float32
//      from the unrounded float32 operands and its output's home is the reduced type: the
//      value is an activation, rounded once where it is stored. Other nodes reading both
//      (Concat, ReduceMax, ...) only move or select, and take the reduced type.
//
// Composite normalizations and softmax (LayerNormalization, RMSNormalization, Group- and
// InstanceNormalization, Softmax, LogSoftmax) are converted as single nodes and lowered after
// this pass by lower-composites, which computes their statistics in float32 (or float64 by
// stash_type) with Casts around them; so a LayerNormalization keeps its float32 statistics,
// and an exporter's hand-written one (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul,
// Add) keeps them by rules 2 and 4, its mean, variance and standard deviation in float32 and
// x - mean read unrounded by both the variance and the division.
//
// A value is converted where a reader wants another type than its home: a float32 constant
// becomes a reduced copy once (rounded to nearest even), a computed value gets one Cast node,
// placed before its first such reader and shared by the rest. Casts are pointwise, so the
// planner fuses them into their neighbours; generated code rounds each stored value once.
// A Cast between float32 and the reduced type already in the graph is recognised as such a
// conversion (its output is another type of the same value), so converting a converted graph
// changes nothing.
//
// The model's float32 inputs and outputs keep their declared type (IoPrecision::Model): a Cast
// to the reduced type follows each input and one to float32 precedes each output (unless the
// output's home is float32 already), ordinary nodes the planner fuses into the first and last
// kernels. With IoPrecision::Reduced (--io-precision reduced) the inputs and outputs
// themselves are float16 or bfloat16.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace stitch {

// --precision: fp32 is the model's own types (the default); tf32 keeps the graph and lets the
// libraries use TF32 tensor cores (PlannerOptions::tf32); fp16 and bf16 run this pass.
enum class Precision { Fp32, Tf32, Fp16, Bf16 };
// --io-precision: the model's inputs and outputs keep their declared types (Model) or take
// the reduced type too (Reduced).
enum class IoPrecision { Model, Reduced };

struct PrecisionOptions {
  Precision precision = Precision::Fp32;
  IoPrecision io = IoPrecision::Model;
};

std::string_view precision_name(Precision p); // "fp32", "tf32", "fp16", "bf16"
std::optional<Precision> precision_from_name(std::string_view name);
std::string_view io_precision_name(IoPrecision io); // "model", "reduced"
std::optional<IoPrecision> io_precision_from_name(std::string_view name);
// The reduced dtype of fp16 or bf16; nullopt for fp32 and tf32.
std::optional<DType> reduced_dtype(Precision p);

// The rules above as short lines, for the reports.
const std::vector<std::string>& precision_fp32_rules();

// Returns true when the graph changed. Needs a typed graph (after infer-shapes).
bool convert_precision(Graph& graph, const PrecisionOptions& options);

} // namespace stitch
