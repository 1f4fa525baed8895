// Builds small ONNX models in tests: a fluent wrapper over onnx::ModelProto that writes the
// model to a temporary folder, so frontend tests need no Python.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace stitch::test {

class ModelBuilder {
public:
  explicit ModelBuilder(int opset = 17);

  // A graph input with dims; a negative dim -1 stands for dim_param `sym` (one per input).
  ModelBuilder& input(const std::string& name, int elem_type, const std::vector<int64_t>& dims,
                      const std::vector<std::string>& dim_params = {});
  ModelBuilder& output(const std::string& name, int elem_type = 0,
                       const std::vector<int64_t>& dims = {}, bool with_shape = false);
  ModelBuilder& initializer_f32(const std::string& name, const std::vector<int64_t>& dims,
                                const std::vector<float>& values, bool as_raw = true);
  ModelBuilder& initializer_i64(const std::string& name, const std::vector<int64_t>& dims,
                                const std::vector<int64_t>& values, bool as_raw = true);
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "");

  onnx::ModelProto& proto() { return model_; }
  // Writes the model into a fresh temporary folder; returns the file path.
  std::string write(const std::string& file_name = "model.onnx") const;
  std::string write_to(const std::filesystem::path& dir,
                       const std::string& file_name = "model.onnx") const;

private:
  onnx::ModelProto model_;
};

void set_attr_int(onnx::NodeProto& node, const std::string& name, int64_t v);
void set_attr_ints(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& v);
void set_attr_float(onnx::NodeProto& node, const std::string& name, float v);
void set_attr_string(onnx::NodeProto& node, const std::string& name, const std::string& v);

// A fresh empty folder under the system temp dir, removed at process exit is not needed:
// tests leave their files for inspection on failure.
std::filesystem::path fresh_temp_dir(const std::string& tag);

} // namespace stitch::test
