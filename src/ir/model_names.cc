#include "ir/model_names.h"

#include <variant>

namespace kiln {
namespace {

constexpr std::string_view kInputPrefix = "onnx.input.";
constexpr std::string_view kOutputPrefix = "onnx.output.";

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

ModelNames model_names(const Module& m) {
  ModelNames names;
  std::map<int64_t, std::string> outputs;
  const FunctionNode* main = m.find("main");
  for (const auto& [key, value] : m.attrs.items()) {
    bool input = starts_with(key, kInputPrefix), output = starts_with(key, kOutputPrefix);
    if (!input && !output) continue;
    const auto* text = std::get_if<std::string>(&value);
    if (!text)
      throw Error("module attribute \"" + key + "\" must be a string (the model's name of the value)");
    if (input) {
      std::string param = key.substr(kInputPrefix.size());
      bool found = false;
      for (const auto& p : main ? main->params : std::vector<Var>{}) found = found || p->name == param;
      if (!found)
        throw Error("module attribute \"" + key + "\" names %" + param +
                    ", which is not a parameter of @main; remove the attribute or rename it");
      names.inputs[param] = *text;
      continue;
    }
    std::string digits = key.substr(kOutputPrefix.size());
    size_t used = 0;
    int64_t index = -1;
    try {
      index = std::stoll(digits, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (digits.empty() || used != digits.size() || index < 0)
      throw Error("module attribute \"" + key + "\": expected \"" + std::string(kOutputPrefix) +
                  "<output index>\"");
    outputs[index] = *text;
  }
  for (const auto& [index, name] : outputs) {
    if (index != static_cast<int64_t>(names.outputs.size()))
      throw Error("module attribute \"" + std::string(kOutputPrefix) + std::to_string(names.outputs.size()) +
                  "\" is missing (the output names must be numbered 0, 1, ... without gaps)");
    names.outputs.push_back(name);
  }
  return names;
}

void set_model_names(Module& m, const ModelNames& names) {
  Attrs kept;
  for (const auto& [key, value] : m.attrs.items())
    if (!starts_with(key, kInputPrefix) && !starts_with(key, kOutputPrefix)) kept.set(key, value);
  for (const auto& [param, name] : names.inputs) kept.set(std::string(kInputPrefix) + param, name);
  for (size_t i = 0; i < names.outputs.size(); ++i)
    kept.set(std::string(kOutputPrefix) + std::to_string(i), names.outputs[i]);
  m.attrs = std::move(kept);
}

}  // namespace kiln
