// The region program's JSON form.
#include "backends/hexagon/runtime/region_program.h"

#include <nlohmann/json.hpp>

#include "kiln/runtime/error.h"

namespace kiln::hexagon {
namespace {

using json = nlohmann::json;

const char* kind_name(RegionSlot::Kind k) {
  switch (k) {
    case RegionSlot::Kind::Input:
      return "input";
    case RegionSlot::Kind::Output:
      return "output";
    case RegionSlot::Kind::Temp:
      return "temp";
    case RegionSlot::Kind::Constant:
      return "constant";
  }
  return "temp";
}

RegionSlot::Kind kind_from(const std::string& s, const std::string& what) {
  for (auto k : {RegionSlot::Kind::Input, RegionSlot::Kind::Output, RegionSlot::Kind::Temp,
                 RegionSlot::Kind::Constant})
    if (s == kind_name(k)) return k;
  throw Error(what + ": unknown slot kind '" + s + "'");
}

std::vector<uint32_t> slot_list(const json& j, size_t slots, const std::string& what) {
  std::vector<uint32_t> out;
  for (const auto& v : j) {
    uint64_t s = v.get<uint64_t>();
    if (s >= slots) throw Error(what + ": slot " + std::to_string(s) + " is past the slot table");
    out.push_back(uint32_t(s));
  }
  return out;
}

}  // namespace

std::string region_to_json(const RegionProgram& p) {
  json j{{"format", "kiln.hexagon.region"},
         {"version", kRegionFormatVersion},
         {"target", p.target},
         {"executable", p.executable},
         {"inputs", p.inputs},
         {"outputs", p.outputs}};
  j["slots"] = json::array();
  for (const auto& s : p.slots)
    j["slots"].push_back({{"name", s.name},
                          {"kind", kind_name(s.kind)},
                          {"dtype", std::string(dtype_name(s.desc.dtype))},
                          {"shape", s.desc.shape}});
  j["steps"] = json::array();
  for (const auto& st : p.steps)
    j["steps"].push_back(
        {{"kernel", st.kernel}, {"ops", st.ops}, {"args", st.args}, {"vtcm_bytes", st.vtcm_bytes}});
  return j.dump();
}

RegionProgram region_from_json(const std::string& text, const std::string& what) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw Error(what + ": the region is not valid JSON");
  if (j.value("format", "") != "kiln.hexagon.region")
    throw Error(what + ": not a kiln.hexagon.region (was it compiled for another backend?)");
  if (j.value("version", 0) != kRegionFormatVersion)
    throw Error(what + ": region format version " + std::to_string(j.value("version", 0)) +
                ", this runtime reads version " + std::to_string(kRegionFormatVersion) +
                "; compile the model again");
  try {
    RegionProgram p;
    p.target = j.at("target").get<std::string>();
    p.executable = j.at("executable").get<std::string>();
    for (const auto& s : j.at("slots")) {
      RegionSlot slot;
      slot.name = s.at("name").get<std::string>();
      slot.kind = kind_from(s.at("kind").get<std::string>(), what);
      std::string dt = s.at("dtype").get<std::string>();
      auto d = dtype_from_name(dt);
      if (!d) throw Error(what + ": slot " + slot.name + " has an unknown dtype '" + dt + "'");
      slot.desc.dtype = *d;
      for (const auto& e : s.at("shape")) {
        int64_t v = e.get<int64_t>();
        if (v < 0) throw Error(what + ": slot " + slot.name + " has a negative extent");
        slot.desc.shape.push_back(v);
      }
      p.slots.push_back(std::move(slot));
    }
    p.inputs = slot_list(j.at("inputs"), p.slots.size(), what);
    p.outputs = slot_list(j.at("outputs"), p.slots.size(), what);
    for (const auto& s : j.at("steps")) {
      RegionStep st;
      st.kernel = s.at("kernel").get<std::string>();
      st.ops = s.value("ops", "");
      st.args = slot_list(s.at("args"), p.slots.size(), what);
      st.vtcm_bytes = s.value("vtcm_bytes", uint64_t(0));
      p.steps.push_back(std::move(st));
    }
    return p;
  } catch (const json::exception& e) {
    throw Error(what + ": malformed region: " + e.what());
  }
}

}  // namespace kiln::hexagon
