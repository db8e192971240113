// The example NPU emulator: planning, tiling, fusion, cost model, compute.
#include "backends/example_npu/runtime/npu_runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "backends/example_npu/runtime/tiling.h"
#include "op/op.h"
#include "runtime/graph.h"

namespace kiln::example_npu {
namespace {

// One dispatch: a node, or a main op with a fused bias add and/or activation.
struct Dispatch {
  const GraphNode* main = nullptr;
  const GraphNode* bias = nullptr;        // fused add of main's result and a broadcast operand
  const GraphNode* activation = nullptr;  // fused; applied per tile
  Engine engine = Engine::Vector;
};

struct Program {
  Graph graph;
  std::vector<Dispatch> dispatches;
};

bool is_activation(const std::string& op) {
  const char* engine = engine_for_op(op);
  return engine && std::string(engine) == "ACTIVATION";
}

bool is_fusable_main(const std::string& op) {
  return op == "nn.conv2d" || op == "matmul" || op == "nn.dense";
}

// Multiply-accumulates (or element operations) of one node, for the cost model.
int64_t work_of(const GraphNode& n, const std::vector<Shape>& in_shapes) {
  int64_t out = shape_numel(n.outputs[0].desc.shape);
  if (n.op == "nn.conv2d") {
    const Shape& w = in_shapes[1];
    return out * w[1] * w[2] * w[3];
  }
  if (n.op == "matmul") return out * in_shapes[0].back();
  if (n.op == "nn.dense") return out * in_shapes[1].back();
  if (n.op == "nn.max_pool2d" || n.op == "nn.avg_pool2d") {
    const auto& p = n.attrs.get_ints("pool_size");
    return out * p[0] * p[1];
  }
  if (n.op == "nn.softmax") return 3 * out;
  if (n.op == "nn.batch_norm") return 2 * out;
  if (n.op == "nn.gelu" || n.op == "sigmoid" || n.op == "tanh" || n.op == "nn.hard_swish" ||
      n.op == "nn.silu")
    return 4 * out;
  return out;
}

class NpuRuntime final : public BackendRuntime {
 public:
  std::string name() const override { return "example_npu"; }

  Status init(const std::vector<BackendFunction>& functions, const std::map<std::string, Tensor>& constants,
              const std::map<std::string, std::string>& options) override {
    try {
      device_ = device_from_options(options);
      programs_.clear();
      constants_.clear();
      for (const auto& f : functions) {
        Program p;
        p.graph = graph_from_json(f.artifact, "example_npu function " + f.symbol);
        for (const auto& c : p.graph.constants) {
          auto it = constants.find(c.name);
          if (it == constants.end())
            return Status::error("example_npu: " + f.symbol + " needs constant '" + c.name +
                                 "', which was not given");
          constants_[c.name] = it->second;
        }
        if (Status s = plan(p); !s.ok()) return s;
        programs_[f.symbol] = std::move(p);
      }
      return Status::success();
    } catch (const Error& e) {
      return Status::error(e.message());
    }
  }

  Status run(const std::string& symbol, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
             std::vector<DispatchEvent>* events, const NodeObserver& observer) override {
    auto it = programs_.find(symbol);
    if (it == programs_.end())
      return Status::error("example_npu: no function '" + symbol + "' was initialised");
    try {
      return execute(it->second, inputs, outputs, events, observer);
    } catch (const Error& e) {
      return Status::error("example_npu: " + symbol + ": " + e.message());
    }
  }

 private:
  // The engine for a node. Most ops have one home; convolutions depend on
  // their shape: a 1x1 stride-1 unpadded convolution is a matrix product
  // (MATRIX), a depthwise one has no reduction over channels to fill a
  // systolic array (VECTOR), the rest go to CONV.
  static Engine choose_engine(const GraphNode& n, const std::map<std::string, TensorDesc>& types) {
    if (n.op != "nn.conv2d") return engine_of(n.op);
    const Shape& w = types.at(n.inputs[1]).shape;
    if (n.attrs.get_int("groups") > 1) return Engine::Vector;
    std::vector<int64_t> pad = n.attrs.get_ints("padding");
    bool unpadded = std::all_of(pad.begin(), pad.end(), [](int64_t v) { return v == 0; });
    if (w[2] == 1 && w[3] == 1 && unpadded && n.attrs.get_ints("strides") == std::vector<int64_t>{1, 1})
      return Engine::Matrix;
    return Engine::Conv;
  }

  // Whether node `next` can run inside the dispatch ending at node `last`: one
  // group, it reads last's result (first), and nothing else reads that.
  static bool fuses(const Program& p, size_t last, size_t next) {
    const auto& nodes = p.graph.nodes;
    const GraphNode& n = nodes[last];
    if (n.group < 0 || next >= nodes.size() || nodes[next].group != n.group) return false;
    if (nodes[next].inputs.empty() || nodes[next].inputs[0] != n.outputs[0].name) return false;
    for (size_t k = 1; k < nodes[next].inputs.size(); ++k)
      if (nodes[next].inputs[k] == n.outputs[0].name) return false;
    for (size_t j = next + 1; j < nodes.size(); ++j)
      for (const auto& in : nodes[j].inputs)
        if (in == n.outputs[0].name) return false;
    for (const auto& o : p.graph.outputs)
      if (o == n.outputs[0].name) return false;
    return true;
  }

  Status plan(Program& p) {
    const auto& nodes = p.graph.nodes;
    std::map<std::string, TensorDesc> types;
    for (const auto& v : p.graph.inputs) types[v.name] = v.desc;
    for (const auto& v : p.graph.constants) types[v.name] = v.desc;
    for (const auto& n : nodes)
      for (const auto& v : n.outputs) types[v.name] = v.desc;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const GraphNode& n = nodes[i];
      if (!n.callee.empty() || !engine_for_op(n.op))
        return Status::error("example_npu: " + p.graph.name + ": node " + n.name + ": op '" +
                             (n.op.empty() ? n.callee : n.op) + "' has no engine on this device");
      Dispatch d{&n, nullptr, nullptr, choose_engine(n, types)};
      // A fused pattern: the main op, then (conv2d/matmul/dense only) an add
      // of a bias that broadcasts to its result, then its activation, all in
      // the same group, each reading only the one before.
      if (is_fusable_main(n.op) && fuses(p, i, i + 1) && nodes[i + 1].op == "add" &&
          nodes[i + 1].inputs.size() == 2 && nodes[i + 1].outputs[0].desc == n.outputs[0].desc)
        d.bias = &nodes[++i];
      if (!is_activation(n.op) && fuses(p, i, i + 1) && is_activation(nodes[i + 1].op) &&
          nodes[i + 1].inputs.size() == 1)
        d.activation = &nodes[++i];
      p.dispatches.push_back(d);
    }
    return Status::success();
  }

  Status execute(const Program& p, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
                 std::vector<DispatchEvent>* events, const NodeObserver& observer) {
    const Graph& g = p.graph;
    if (inputs.size() != g.inputs.size() || outputs.size() != g.outputs.size())
      return Status::error("example_npu: " + g.name + " takes " + std::to_string(g.inputs.size()) +
                           " inputs and " + std::to_string(g.outputs.size()) + " outputs");
    // Values of this run only: nothing survives to the next run.
    std::map<std::string, Tensor> values;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const TensorDesc& d = g.inputs[i].desc;
      if (inputs[i].shape() != d.shape || inputs[i].dtype() != d.dtype)
        return Status::error("example_npu: " + g.name + ": input '" + g.inputs[i].name + "' must be " +
                             desc_str(d));
      values[g.inputs[i].name] = inputs[i];
    }
    for (const auto& c : g.constants) values[c.name] = constants_.at(c.name);
    // Graph outputs are written straight into the caller's tensors.
    std::map<std::string, Tensor> sinks;
    for (size_t i = 0; i < g.outputs.size(); ++i) sinks[g.outputs[i]] = outputs[i];
    auto start = std::chrono::steady_clock::now();
    for (const Dispatch& d : p.dispatches) {
      const GraphNode& last = d.activation ? *d.activation : d.bias ? *d.bias : *d.main;
      const TensorDesc& od = last.outputs[0].desc;
      auto sink = sinks.find(last.outputs[0].name);
      Tensor out = sink != sinks.end() ? sink->second : Tensor::empty(od.shape, od.dtype);
      if (out.shape() != od.shape || out.dtype() != od.dtype)
        return Status::error("example_npu: " + g.name + ": output '" + last.outputs[0].name + "' must be " +
                             desc_str(od));
      std::vector<Tensor> ins;
      for (const auto& name : d.main->inputs) ins.push_back(values.at(name));
      Tensor bias = d.bias ? values.at(d.bias->inputs[1]) : Tensor();
      double t0 = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
      DispatchEvent e = compute(d, ins, bias, out);
      e.function = g.name;
      e.start_us = t0;
      e.duration_us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() - t0;
      values[last.outputs[0].name] = out;
      if (observer) observer(last.name, out);
      if (events) events->push_back(std::move(e));
    }
    // Outputs that are inputs or constants (no node wrote them).
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      const Tensor& v = values.at(g.outputs[i]);
      if (v.raw() != outputs[i].raw()) std::memcpy(outputs[i].raw(), v.raw(), v.nbytes());
    }
    return Status::success();
  }

  // Chooses the tile: the whole output when the working set fits L1, else
  // halve the outermost splittable axis until it does.
  Shape choose_tile(const Dispatch& d, const std::vector<Tensor>& ins, const Shape& out_shape,
                    DType out_dtype, int64_t& working_set) const {
    Shape tile = out_shape;
    std::vector<bool> axes = tileable_axes(d.main->op, out_shape, d.main->attrs);
    auto bytes_for = [&](const Shape& t) {
      Block b{Shape(t.size(), 0), t};
      TileInputs ti = tile_inputs(d.main->op, b, ins, d.main->attrs);
      int64_t n = block_bytes(b, out_dtype);
      for (size_t i = 0; i < ins.size(); ++i) n += block_bytes(ti.blocks[i], ins[i].dtype());
      return n;
    };
    working_set = bytes_for(tile);
    while (working_set > device_.l1_bytes()) {
      bool shrunk = false;
      for (size_t a = 0; a < tile.size() && !shrunk; ++a) {
        if (!axes[a] || tile[a] <= 1) continue;
        tile[a] = (tile[a] + 1) / 2;
        shrunk = true;
      }
      if (!shrunk)
        throw Error("node " + d.main->name + ": the smallest tile needs " + std::to_string(working_set) +
                    " bytes, more than L1 (" + std::to_string(device_.l1_bytes()) + " bytes)");
      working_set = bytes_for(tile);
    }
    return tile;
  }

  DispatchEvent compute(const Dispatch& d, const std::vector<Tensor>& ins, const Tensor& bias, Tensor& out) {
    const OpDef* op = find_op(d.main->op);
    const OpDef* act = d.activation ? find_op(d.activation->op) : nullptr;
    DType mid_dtype = d.main->outputs[0].desc.dtype;
    DispatchEvent e;
    e.backend = "example_npu";
    e.node = d.activation ? d.activation->name : d.bias ? d.bias->name : d.main->name;
    e.op = d.main->op + (d.bias ? "+add" : "") + (d.activation ? "+" + d.activation->op : "");
    e.engine = engine_name(d.engine);
    e.fused = d.activation != nullptr || d.bias != nullptr;
    int64_t working_set = 0;
    Shape tile = choose_tile(d, ins, out.shape(), mid_dtype, working_set);
    bool tiled = tile != out.shape();
    // Placement: each operand in the smallest tier that holds it whole.
    std::map<std::string, int64_t> bytes;
    std::vector<Tier> in_tier;
    for (size_t i = 0; i < ins.size(); ++i) {
      Tier t = device_.tier_for(static_cast<int64_t>(ins[i].nbytes()));
      in_tier.push_back(t);
      e.operands.push_back({d.main->inputs[i], tier_name(t), static_cast<int64_t>(ins[i].nbytes())});
    }
    Tier bias_tier = device_.tier_for(d.bias ? static_cast<int64_t>(bias.nbytes()) : 0);
    if (d.bias)
      e.operands.push_back({d.bias->inputs[1], tier_name(bias_tier), static_cast<int64_t>(bias.nbytes())});
    Tier out_tier = device_.tier_for(static_cast<int64_t>(out.nbytes()));
    e.operands.push_back({e.node, tier_name(out_tier), static_cast<int64_t>(out.nbytes())});
    // Walk the tile grid.
    const size_t rank = tile.size();
    Shape origin(rank, 0);
    int64_t tiles = 0;
    for (bool more = true; more;) {
      Block ob{origin, Shape(rank)};
      for (size_t a = 0; a < rank; ++a) ob.size[a] = std::min(tile[a], out.shape()[a] - origin[a]);
      TileInputs ti = tile_inputs(d.main->op, ob, ins, d.main->attrs);
      std::vector<Tensor> blocks;
      for (size_t i = 0; i < ins.size(); ++i) {
        blocks.push_back(to_device_precision(load_block(ins[i], ti.blocks[i])));
        int64_t n = block_bytes(ti.blocks[i], ins[i].dtype());
        bytes[tier_name(in_tier[i])] += n;
        if (tiled) bytes["L1"] += n;  // staged through L1
      }
      std::vector<Tensor> res = run_op(*op, blocks, ti.attrs);
      if (res[0].shape() != ob.size) throw Error("node " + d.main->name + ": tile computed the wrong shape");
      if (d.bias) {
        // Fused: the bias block that broadcasts onto this tile, added in L1.
        Block bb = tile_inputs("add", ob, {out, bias}, {}).blocks[1];
        int64_t n = block_bytes(bb, bias.dtype());
        bytes[tier_name(bias_tier)] += n;
        bytes["L1"] += n + 2 * static_cast<int64_t>(res[0].nbytes());
        res = run_op(*find_op("add"), {res[0], to_device_precision(load_block(bias, bb))}, d.bias->attrs);
      }
      if (act) {
        // Fused: the intermediate stays in L1, never written to DRAM.
        bytes["L1"] += 2 * static_cast<int64_t>(res[0].nbytes());
        res = run_op(*act, {res[0]}, d.activation->attrs);
      }
      store_block(out, to_device_precision(res[0]), ob.begin);
      bytes[tier_name(out_tier)] += static_cast<int64_t>(res[0].nbytes());
      if (tiled) bytes["L1"] += static_cast<int64_t>(res[0].nbytes());
      ++tiles;
      more = false;
      for (size_t a = rank; a-- > 0;) {
        origin[a] += tile[a];
        if (origin[a] < out.shape()[a]) {
          more = true;
          break;
        }
        origin[a] = 0;
      }
      if (rank == 0) more = false;
    }
    e.tiles = tiles;
    if (tiled) e.tile = tile;
    e.bytes_per_tier = bytes;
    // Cost model: engine cycles from the work, plus bytes over each tier's bandwidth.
    std::vector<Shape> in_shapes;
    for (const auto& t : ins) in_shapes.push_back(t.shape());
    int64_t work = work_of(*d.main, in_shapes);
    int64_t rate = device_.macs_per_cycle(d.engine, ins[0].dtype());
    int64_t cycles = (work + rate - 1) / rate;
    if (d.bias) cycles += (shape_numel(out.shape()) + device_.vector_lanes - 1) / device_.vector_lanes;
    if (d.activation) {
      std::vector<Shape> act_in = {out.shape()};
      int64_t w = work_of(*d.activation, act_in);
      cycles += (w + device_.vector_lanes - 1) / device_.vector_lanes;
    }
    for (int t = 0; t < kNumTiers; ++t) {
      auto it = bytes.find(tier_name(static_cast<Tier>(t)));
      if (it != bytes.end()) cycles += (it->second + device_.bandwidth[t] - 1) / device_.bandwidth[t];
    }
    e.cycles = cycles;
    return e;
  }

  // A float32 block as the device holds it (see Precision); in place.
  Tensor to_device_precision(Tensor t) const {
    if (device_.precision == Precision::Float32 || t.dtype() != DType::Float32) return t;
    float* v = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) v[i] = round_to(v[i], device_.precision);
    return t;
  }

  DeviceDesc device_;
  std::map<std::string, Program> programs_;
  std::map<std::string, Tensor> constants_;
};

}  // namespace

std::unique_ptr<BackendRuntime> make_runtime() { return std::make_unique<NpuRuntime>(); }

}  // namespace kiln::example_npu
