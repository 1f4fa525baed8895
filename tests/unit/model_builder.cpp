// ModelBuilder: small ONNX models for tests.
#include "model_builder.h"

#include <atomic>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

namespace stitch::test {

ModelBuilder::ModelBuilder(int opset) {
  model_.set_ir_version(8);
  auto* imp = model_.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  model_.mutable_graph()->set_name("test");
}

ModelBuilder& ModelBuilder::input(const std::string& name, int elem_type,
                                  const std::vector<int64_t>& dims,
                                  const std::vector<std::string>& dim_params) {
  auto* in = model_.mutable_graph()->add_input();
  in->set_name(name);
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  size_t p = 0;
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0)
      dim->set_dim_value(d);
    else if (p < dim_params.size())
      dim->set_dim_param(dim_params[p++]);
  }
  return *this;
}

ModelBuilder& ModelBuilder::output(const std::string& name, int elem_type,
                                   const std::vector<int64_t>& dims, bool with_shape) {
  auto* out = model_.mutable_graph()->add_output();
  out->set_name(name);
  if (elem_type == 0) return *this;
  auto* tt = out->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  if (!with_shape) return *this;
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims)
    shape->add_dim()->set_dim_value(d);
  return *this;
}

ModelBuilder& ModelBuilder::initializer_f32(const std::string& name,
                                            const std::vector<int64_t>& dims,
                                            const std::vector<float>& values, bool as_raw) {
  auto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims)
    t->add_dims(d);
  if (as_raw)
    t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4));
  else
    for (float v : values)
      t->add_float_data(v);
  return *this;
}

ModelBuilder& ModelBuilder::initializer_i64(const std::string& name,
                                            const std::vector<int64_t>& dims,
                                            const std::vector<int64_t>& values, bool as_raw) {
  auto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims)
    t->add_dims(d);
  if (as_raw)
    t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * 8));
  else
    for (int64_t v : values)
      t->add_int64_data(v);
  return *this;
}

onnx::NodeProto& ModelBuilder::node(const std::string& op, const std::vector<std::string>& inputs,
                                    const std::vector<std::string>& outputs,
                                    const std::string& name) {
  auto* n = model_.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name.empty() ? op + "_" + std::to_string(model_.graph().node_size()) : name);
  for (const auto& i : inputs)
    n->add_input(i);
  for (const auto& o : outputs)
    n->add_output(o);
  return *n;
}

std::filesystem::path fresh_temp_dir(const std::string& tag) {
  static std::atomic<int> counter{0};
  auto dir = std::filesystem::temp_directory_path() / ("stitch-test-" + std::to_string(getpid()) +
                                                       "-" + tag + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string ModelBuilder::write(const std::string& file_name) const {
  return write_to(fresh_temp_dir("model"), file_name);
}

std::string ModelBuilder::write_to(const std::filesystem::path& dir,
                                   const std::string& file_name) const {
  auto path = dir / file_name;
  std::ofstream f(path, std::ios::binary);
  if (!model_.SerializeToOstream(&f)) throw std::runtime_error("cannot write " + path.string());
  return path.string();
}

void set_attr_int(onnx::NodeProto& node, const std::string& name, int64_t v) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void set_attr_ints(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v)
    a->add_ints(x);
}

void set_attr_float(onnx::NodeProto& node, const std::string& name, float v) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void set_attr_string(onnx::NodeProto& node, const std::string& name, const std::string& v) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

} // namespace stitch::test
