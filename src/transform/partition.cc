// The partition driver, pass options by name, and the partition report
// (--explain lines, the JSON report, the DOT drawing).
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "transform/partition.h"
#include "transform/pass.h"

namespace kiln {

static bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "1" || v == "true") return true;
  if (v == "0" || v == "false") return false;
  throw Error("pass option " + key + "=" + v + ": expected 0, 1, true or false");
}

PartitionOptions partition_options_from(const std::map<std::string, std::string>& opts) {
  PartitionOptions o;
  for (const auto& [k, v] : opts) {
    if (k == "backends") {
      std::stringstream ss(v);
      std::string b;
      while (std::getline(ss, b, '|'))
        if (!b.empty()) o.backends.push_back(b);
    } else if (k == "bind-constants") {
      o.bind_constants = parse_bool(k, v);
    } else if (k == "annotate-codegen") {
      o.annotate_codegen = parse_bool(k, v);
    } else if (k == "strict") {
      o.strict = parse_bool(k, v);
    } else if (k == "min-region-size") {
      try {
        o.min_region_size = std::stoll(v);
      } catch (const std::exception&) {
        throw Error("pass option min-region-size=" + v + ": expected a number");
      }
    } else {
      throw Error("unknown partition option '" + k +
                  "' (known: backends, bind-constants, annotate-codegen, min-region-size, strict)");
    }
  }
  return o;
}

Module partition_module(const Module& m, const PartitionOptions& opts, bool merge, PartitionReport* report) {
  PartitionOptions fuse = opts;
  fuse.annotate_codegen = !merge;
  Module out = fuse_ops_by_pattern(m, fuse, report);
  if (merge) out = merge_composite_functions(out, opts, report);
  return out;
}

OpDecision* PartitionReport::find(const std::string& function, const std::string& var) {
  for (auto& d : ops)
    if (d.function == function && d.var == var) return &d;
  return nullptr;
}

int64_t PartitionReport::offloaded_count() const {
  int64_t n = 0;
  for (const auto& d : ops) n += d.offloaded();
  return n;
}

int64_t PartitionReport::region_count() const {
  std::set<std::string> regions;
  for (const auto& d : ops)
    if (d.offloaded()) regions.insert(d.region.empty() ? d.function + "%" + d.var : d.region);
  return static_cast<int64_t>(regions.size());
}

std::string PartitionReport::summary() const {
  std::map<std::string, int64_t> per_backend;
  for (const auto& d : ops)
    if (d.offloaded()) ++per_backend[d.backend];
  std::string backends;
  for (const auto& [b, n] : per_backend)
    backends += (backends.empty() ? "" : ", ") + b + ": " + std::to_string(n);
  int64_t host = static_cast<int64_t>(ops.size()) - offloaded_count();
  int64_t regions = region_count();
  return std::to_string(offloaded_count()) + " of " + std::to_string(ops.size()) + " ops offloaded in " +
         std::to_string(regions) + (regions == 1 ? " region" : " regions") +
         (backends.empty() ? "" : " (" + backends + ")") + "; " + std::to_string(host) + " on the host";
}

std::string PartitionReport::explain() const {
  std::string s;
  for (const auto& d : ops) {
    s += "@" + d.function + " %" + d.var + " = " + d.op + ": ";
    if (d.offloaded()) {
      s += d.backend + " by " + d.pattern;
      if (!d.region.empty()) s += " in @" + d.region;
    } else {
      s += "host: " + d.reason;
    }
    for (const auto& n : d.notes) s += "; " + n;
    s += "\n";
  }
  return s;
}

std::string PartitionReport::to_json() const {
  nlohmann::json j;
  j["summary"] = summary();
  j["offloaded"] = offloaded_count();
  j["total"] = ops.size();
  j["regions"] = region_count();
  j["ops"] = nlohmann::json::array();
  for (const auto& d : ops) {
    nlohmann::json o{{"function", d.function}, {"var", d.var}, {"op", d.op}};
    if (d.offloaded()) {
      o["backend"] = d.backend;
      o["pattern"] = d.pattern;
      o["region"] = d.region;
    } else {
      o["backend"] = "host";
      o["reason"] = d.reason;
    }
    if (!d.notes.empty()) o["notes"] = d.notes;
    j["ops"].push_back(o);
  }
  return j.dump(2) + "\n";
}

static const char* backend_colour(const std::string& backend, std::map<std::string, int>& palette) {
  static const char* colours[] = {"lightblue", "palegreen", "gold", "plum", "lightsalmon"};
  auto it = palette.emplace(backend, static_cast<int>(palette.size())).first;
  return colours[it->second % 5];
}

std::string PartitionReport::to_dot(const Module& original) const {
  std::map<std::string, int> palette;
  std::ostringstream s;
  s << "digraph kiln {\n  rankdir=TB;\n  node [shape=box, style=filled, fillcolor=white];\n";
  for (const auto& f : original.functions) {
    if (!is_partitionable(*f)) continue;
    std::string prefix = f->name + "_";
    for (const auto& p : f->params)
      s << "  \"" << prefix << p->name << "\" [shape=ellipse, label=\"%" << p->name << "\"];\n";
    std::map<std::string, std::vector<std::string>> clusters;
    for (const auto& b : f->bindings) {
      const auto* c = as<CallNode>(b.value);
      std::string id = prefix + b.var->name;
      std::string label = "%" + b.var->name + (c && c->is_op_call() ? "\\n" + c->op->name : "");
      const OpDecision* d = nullptr;
      for (const auto& x : ops)
        if (x.function == f->name && x.var == b.var->name) d = &x;
      std::string line = "\"" + id + "\" [label=\"" + label + "\"";
      if (d && d->offloaded()) line += ", fillcolor=" + std::string(backend_colour(d->backend, palette));
      line += "];";
      if (d && d->offloaded())
        clusters[d->region.empty() ? d->var : d->region].push_back(line);
      else
        s << "  " << line << "\n";
      if (!c) continue;
      for (const auto& a : c->args)
        if (const auto* v = as<VarNode>(a)) s << "  \"" << prefix << v->name << "\" -> \"" << id << "\";\n";
    }
    int k = 0;
    for (const auto& [region, lines] : clusters) {
      s << "  subgraph cluster_" << f->name << "_" << k++ << " {\n    label=\"@" << region << "\";\n";
      for (const auto& l : lines) s << "    " << l << "\n";
      s << "  }\n";
    }
  }
  s << "}\n";
  return s.str();
}

}  // namespace kiln

namespace kiln {

Module fuse_ops_by_pattern_pass(const Module& m, const PassOptions& options) {
  return fuse_ops_by_pattern(m, partition_options_from(options));
}

Module merge_composite_functions_pass(const Module& m, const PassOptions& options) {
  return merge_composite_functions(m, partition_options_from(options));
}

// Options "key=value" go to every backend, "backend.key=value" to one.
Module run_codegen_pass(const Module& m, const PassOptions& options) {
  RunCodegenOptions opts;
  for (const auto& [k, v] : options) {
    size_t dot = k.find('.');
    if (dot == std::string::npos)
      opts.global[k] = v;
    else
      opts.backend[k.substr(0, dot)][k.substr(dot + 1)] = v;
  }
  return run_codegen(m, opts);
}

}  // namespace kiln
