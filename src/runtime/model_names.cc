#include "runtime/model_names.h"

#include <cctype>
#include <nlohmann/json.hpp>
#include <set>

namespace kiln {

std::optional<size_t> find_input(const std::vector<std::string>& params, const ModelNames& names,
                                 const std::string& name) {
  // Model names first: an ONNX input may be called like another input's kiln name.
  for (size_t i = 0; i < params.size(); ++i) {
    auto it = names.inputs.find(params[i]);
    if (it != names.inputs.end() && it->second == name) return i;
  }
  std::string kiln_name = !name.empty() && name[0] == '%' ? name.substr(1) : name;
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i] == kiln_name) return i;
  return std::nullopt;
}

std::string input_label(const std::string& param, const ModelNames& names) {
  auto it = names.inputs.find(param);
  if (it == names.inputs.end() || it->second == param) return "%" + param;
  return it->second + " (%" + param + ")";
}

std::string input_list(const std::vector<std::string>& params, const ModelNames& names) {
  std::string s;
  for (const auto& p : params) s += (s.empty() ? "" : ", ") + input_label(p, names);
  return s.empty() ? "none" : s;
}

std::string file_stem(const std::string& model_name) {
  std::string s;
  for (char c : model_name) {
    bool safe = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    s += safe ? c : '_';
  }
  if (s.empty() || s[0] == '.' || s[0] == '-') s = "_" + s;
  if (s.size() > 200) s.resize(200);
  return s;
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<OutputFiles> output_files(const ModelNames& names, size_t count) {
  std::vector<OutputFiles> files(count);
  std::set<std::string> taken;  // lower case, with ".npy"
  for (size_t i = 0; i < count; ++i) {
    files[i].index_file = "output_" + std::to_string(i) + ".npy";
    taken.insert(lower(files[i].index_file));
  }
  for (size_t i = 0; i < count && i < names.outputs.size(); ++i) {
    std::string stem = file_stem(names.outputs[i]);
    if (lower(stem + ".npy") == lower(files[i].index_file)) continue;  // output_0 named "output_0"
    while (taken.count(lower(stem + ".npy"))) stem += "_" + std::to_string(i);
    files[i].named_file = stem + ".npy";
    taken.insert(lower(files[i].named_file));
  }
  return files;
}

std::string outputs_json(const ModelNames& names, const std::vector<OutputFiles>& files,
                         const std::vector<Tensor>& outputs) {
  using json = nlohmann::json;
  json list = json::array();
  for (size_t i = 0; i < outputs.size() && i < files.size(); ++i) {
    bool named = i < names.outputs.size();
    json o{{"index", i},
           {"name", named ? json(names.outputs[i]) : json(nullptr)},
           {"file", files[i].named_file.empty() ? files[i].index_file : files[i].named_file},
           {"index_file", files[i].index_file},
           {"shape", outputs[i].shape()},
           {"dtype", std::string(dtype_name(outputs[i].dtype()))}};
    list.push_back(o);
  }
  json j{{"format", "kiln.outputs"}, {"version", 1}, {"outputs", list}};
  // Model names are arbitrary bytes: invalid UTF-8 is replaced, not an exception.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace kiln
