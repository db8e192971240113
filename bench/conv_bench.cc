// Conv shapes of PP-OCR (a 3x3 conv, pointwise convs, depthwise convs, the
// strided first conv): the nn.conv2d op as a compiled model gets it (its
// tensor-expression definition with the default schedule for this CPU, no
// tuning) against oneDNN's convolution in the same run, on one thread.
// oneDNN picks its own (blocked) layouts; only the convolution itself is
// timed, not the reorders into them, so the ratio is against oneDNN's best.
// kiln's conv is timed in both of its layouts: NCHW (nn.conv2d, or
// nn.conv2d_winograd on the transformed kernel where the pass
// winograd-weights picks it, as in a compiled model) and blocks of the
// vector's float32 lanes (nn.conv2d_blocked, what convert-layout gives a
// model's convs whose rows leave NCHW's vectors partly idle, and those
// after them; nn.conv2d_winograd in blocks where winograd-weights picks
// it), where the channels make whole blocks. ResNet-18's 3x3 stages
// follow PP-OCR's shapes. A second table times 3-D convs (nn.conv3d, NCDHW,
// as video and volume models use them) against oneDNN's the same way.
//
//   make bench
//   kiln_bench_conv --cpu x86-64-v3    (kiln's code for that CPU, oneDNN
//                                       limited to AVX2: bench_util.h)
#include <oneapi/dnnl/dnnl.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

#include "bench_util.h"
#include "codegen/codegen.h"
#include "codegen/target.h"
#include "lower/lower.h"
#include "runtime/thread_pool.h"
#include "tir/transform/passes.h"
#include "transform/pass.h"

using namespace kiln;

namespace {

struct ConvShape {
  const char* what;
  int64_t in_channels, out_channels, height, width, kernel, stride, groups;
  int64_t out_height() const { return (height + 2 * (kernel / 2) - kernel) / stride + 1; }
  int64_t out_width() const { return (width + 2 * (kernel / 2) - kernel) / stride + 1; }
  double flops() const {
    return 2.0 * double(out_channels * out_height() * out_width()) * double(in_channels / groups) *
           double(kernel * kernel);
  }
};

const ConvShape kShapes[] = {
    {"det 3x3 96->24 80x80", 96, 24, 80, 80, 3, 1, 1},
    // det 640x640's hottest conv (two of them take a third of the model).
    {"det640 3x3 96->24 160x160", 96, 24, 160, 160, 3, 1, 1},
    {"det first 3x3/2 3->16 320x320", 3, 16, 320, 320, 3, 2, 1},
    {"det 1x1 16->32 160x160", 16, 32, 160, 160, 1, 1, 1},
    {"rec 1x1 480->480 6x80", 480, 480, 6, 80, 1, 1, 1},
    {"det 1x1 384->384 10x10", 384, 384, 10, 10, 1, 1, 1},
    {"det 1x1 192->192 20x20", 192, 192, 20, 20, 1, 1, 1},
    {"rec depthwise 3x3 240 12x80", 240, 240, 12, 80, 3, 1, 240},
    {"det depthwise 3x3/2 32 160x160", 32, 32, 160, 160, 3, 2, 32},
    {"det depthwise 5x5 192 20x20", 192, 192, 20, 20, 5, 1, 192},
    {"resnet 3x3 128->128 28x28", 128, 128, 28, 28, 3, 1, 1},
    {"resnet 3x3 256->256 14x14", 256, 256, 14, 14, 3, 1, 1},
    {"resnet 3x3 512->512 7x7", 512, 512, 7, 7, 3, 1, 1},
    {"mnv2 1x1 96->576 14x14", 96, 576, 14, 14, 1, 1, 1},
    {"mnv2 1x1 960->160 7x7", 960, 160, 7, 7, 1, 1, 1},
    {"mnv2 first 3x3/2 3->32 224x224", 3, 32, 224, 224, 3, 2, 1},
    {"mnv2 depthwise 3x3/2 96 112x112", 96, 96, 112, 112, 3, 2, 96},
    {"effnet depthwise 5x5/2 144 56x56", 144, 144, 56, 56, 5, 2, 144},
    {"resnet first 7x7/2 3->64 224x224", 3, 64, 224, 224, 7, 2, 1},
};

// nn.conv2d's attributes for `c`: its strides, groups and the padding that
// keeps the image's size at stride 1.
Attrs conv_attrs(const ConvShape& c) {
  const int64_t pad = c.kernel / 2;
  return {{"strides", std::vector<int64_t>{c.stride, c.stride}},
          {"padding", std::vector<int64_t>{pad, pad, pad, pad}},
          {"dilation", std::vector<int64_t>{1, 1}},
          {"groups", c.groups}};
}

// `c`'s data, weight and output in NCHW / OIHW.
struct NchwDescs {
  TensorDesc x, w, y;
};
NchwDescs nchw_descs(const ConvShape& c) {
  return {{{1, c.in_channels, c.height, c.width}, DType::Float32},
          {{c.out_channels, c.in_channels / c.groups, c.kernel, c.kernel}, DType::Float32},
          {{1, c.out_channels, c.out_height(), c.out_width()}, DType::Float32}};
}

// `op` (nn.conv2d or nn.conv2d_blocked) of `c` on x and w, lowered as a
// kernel of its own.
tir::PrimFunc lowered_conv(const char* op, const ConvShape& c, const TensorDesc& x, const TensorDesc& w,
                           const TensorDesc& y, const std::string& name, const codegen::Target& target) {
  return bench::lowered_op(op, conv_attrs(c), {x, w}, y, name, target);
}

// The F(m, 3) a compiled model runs `c` by (the pass winograd-weights);
// 0: the direct conv.
int64_t winograd_rows(const ConvShape& c) {
  const NchwDescs d = nchw_descs(c);
  return winograd_tile_rows(d.x, d.w, d.y, conv_attrs(c));
}

// nn.conv2d_winograd's attributes for `c` by F(m, 3).
Attrs winograd_attrs(const ConvShape& c, int64_t m) {
  return {{"padding", conv_attrs(c).get_ints("padding")}, {"tile_rows", m}};
}

// `c` as a compiled model runs it in NCHW: nn.conv2d, or nn.conv2d_winograd
// on the transformed kernel.
tir::PrimFunc kiln_conv(const ConvShape& c, const std::string& name, const codegen::Target& target) {
  const NchwDescs d = nchw_descs(c);
  if (const int64_t m = winograd_rows(c)) {
    TensorDesc u{{c.out_channels, c.in_channels, m + 2, 3}, DType::Float32};
    return bench::lowered_op("nn.conv2d_winograd", winograd_attrs(c, m), {d.x, u}, d.y, name, target);
  }
  return lowered_conv("nn.conv2d", c, d.x, d.w, d.y, name, target);
}

// The blocks of the channels of `c` in the blocked layout; 0 when they do not make blocks.
int64_t channel_block(const ConvShape& c, int64_t lanes) {
  const bool ok = c.out_channels % lanes == 0 && (c.groups == 1 || c.groups == c.in_channels);
  return ok ? lanes : 0;
}

// The F(m, 3) a compiled model runs `c` by in blocks of `block` (the pass
// winograd-weights, on blocked data); 0: the direct blocked conv.
int64_t blocked_winograd_rows(const ConvShape& c, int64_t block) {
  if (c.in_channels % block != 0 || !winograd_rows(c)) return 0;
  return blocked_winograd_tile_rows(1, c.out_height(), c.out_width());
}

// `c` in blocks of `block` as a compiled model runs it: nn.conv2d_blocked
// (data in blocks, or NCHW when its channels do not make blocks; the
// weight blocked), or nn.conv2d_winograd on blocked data and the
// transformed blocked weight.
tir::PrimFunc kiln_blocked_conv(const ConvShape& c, int64_t block, const std::string& name,
                                const codegen::Target& target) {
  const int64_t ib = c.in_channels % block == 0 ? block : 1;
  if (const int64_t m = blocked_winograd_rows(c, block)) {
    TensorDesc x{{1, c.in_channels / block, c.height, c.width, block}, DType::Float32},
        u{{c.out_channels / block, c.in_channels / block, m + 2, 3, block, block}, DType::Float32},
        y{{1, c.out_channels / block, c.out_height(), c.out_width(), block}, DType::Float32};
    return bench::lowered_op("nn.conv2d_winograd", winograd_attrs(c, m), {x, u}, y, name, target);
  }
  const bool depthwise = c.groups > 1;
  TensorDesc x{ib == 1 ? Shape{1, c.in_channels, c.height, c.width}
                       : Shape{1, c.in_channels / block, c.height, c.width, block},
               DType::Float32};
  TensorDesc w{{c.out_channels / block, depthwise ? 1 : c.in_channels / ib, c.kernel, c.kernel,
                depthwise ? 1 : ib, block},
               DType::Float32};
  TensorDesc y{{1, c.out_channels / block, c.out_height(), c.out_width(), block}, DType::Float32};
  return lowered_conv("nn.conv2d_blocked", c, x, w, y, name, target);
}

// oneDNN's convolution of `c` on user buffers in NCHW / OIHW.
struct DnnlConv {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::memory src, weights, dst, user_dst;
  dnnl::convolution_forward conv;

  DnnlConv(const ConvShape& c, float* x, float* w, float* y) {
    using dnnl::memory;
    using tag = memory::format_tag;
    const memory::dim pad = c.kernel / 2;
    memory::dims src_dims{1, c.in_channels, c.height, c.width};
    memory::dims dst_dims{1, c.out_channels, c.out_height(), c.out_width()};
    memory::dims w_dims = c.groups == 1 ? memory::dims{c.out_channels, c.in_channels, c.kernel, c.kernel}
                                        : memory::dims{c.groups, c.out_channels / c.groups,
                                                       c.in_channels / c.groups, c.kernel, c.kernel};
    auto any = [](const memory::dims& d) { return memory::desc(d, memory::data_type::f32, tag::any); };
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                         dnnl::algorithm::convolution_direct, any(src_dims), any(w_dims),
                                         any(dst_dims), {c.stride, c.stride}, {pad, pad}, {pad, pad});
    dnnl::convolution_forward::primitive_desc pd(desc, engine);
    memory user_src({src_dims, memory::data_type::f32, tag::nchw}, engine, x);
    memory user_w({w_dims, memory::data_type::f32, c.groups == 1 ? tag::oihw : tag::goihw}, engine, w);
    user_dst = memory({dst_dims, memory::data_type::f32, tag::nchw}, engine, y);
    src = memory(pd.src_desc(), engine);
    weights = memory(pd.weights_desc(), engine);
    dst = memory(pd.dst_desc(), engine);
    dnnl::reorder(user_src, src).execute(stream, user_src, src);
    dnnl::reorder(user_w, weights).execute(stream, user_w, weights);
    stream.wait();
    conv = dnnl::convolution_forward(pd);
  }
  void run() {
    conv.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}});
    stream.wait();
  }
  void read_output() {
    dnnl::reorder(dst, user_dst).execute(stream, dst, user_dst);
    stream.wait();
  }
};

// 3-D convs: stride 1, the padding that keeps the volume's size.
struct Conv3dShape {
  const char* what;
  int64_t in_channels, out_channels, depth, height, width, kernel;
  double flops() const {
    return 2.0 * double(out_channels * depth * height * width) *
           double(in_channels * kernel * kernel * kernel);
  }
};

const Conv3dShape k3dShapes[] = {
    {"3-D 3x3x3 32->32 8x28x28", 32, 32, 8, 28, 28, 3},
    {"3-D 3x3x3 64->64 8x14x14", 64, 64, 8, 14, 14, 3},
    {"3-D 1x1x1 64->128 8x28x28", 64, 128, 8, 28, 28, 1},
};

// kiln's nn.conv3d against oneDNN's 3-D convolution (NCDHW / OIDHW user
// buffers, oneDNN's own layouts inside), outputs compared, one thread.
void bench_conv3d(const codegen::Target& target) {
  using dnnl::memory;
  using tag = memory::format_tag;
  std::vector<tir::PrimFunc> funcs;
  const auto options = codegen::tir_pass_options(target);
  for (size_t i = 0; i < std::size(k3dShapes); ++i) {
    const Conv3dShape& c = k3dShapes[i];
    const int64_t p = c.kernel / 2;
    TensorDesc x{{1, c.in_channels, c.depth, c.height, c.width}, DType::Float32},
        w{{c.out_channels, c.in_channels, c.kernel, c.kernel, c.kernel}, DType::Float32},
        y{{1, c.out_channels, c.depth, c.height, c.width}, DType::Float32};
    funcs.push_back(
        tir::lower_for_build(bench::lowered_op("nn.conv3d", {{"padding", std::vector<int64_t>{p, p, p}}},
                                               {x, w}, y, "conv3d" + std::to_string(i), target),
                             options));
  }
  codegen::CodegenOptions codegen_options;
  codegen_options.target = target;
  auto jit = codegen::JitModule::create(funcs, codegen_options);
  std::printf("%-34s %9s %9s %7s %7s %7s\n", "conv3d (one thread)", "kiln ms", "oneDNN ms", "kiln GF",
              "oneDNN", "ratio");
  for (size_t i = 0; i < std::size(k3dShapes); ++i) {
    const Conv3dShape& c = k3dShapes[i];
    const memory::dim p = c.kernel / 2;
    std::vector<float> x(size_t(c.in_channels * c.depth * c.height * c.width)),
        w(size_t(c.out_channels * c.in_channels * c.kernel * c.kernel * c.kernel)),
        y_kiln(size_t(c.out_channels * c.depth * c.height * c.width)), y_dnnl(y_kiln.size());
    for (size_t k = 0; k < x.size(); ++k) x[k] = float(int(k % 23) - 11) * 0.0625f;
    for (size_t k = 0; k < w.size(); ++k) w[k] = float(int(k % 17) - 8) * 0.03125f;
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
    memory::dims src_dims{1, c.in_channels, c.depth, c.height, c.width},
        w_dims{c.out_channels, c.in_channels, c.kernel, c.kernel, c.kernel},
        dst_dims{1, c.out_channels, c.depth, c.height, c.width};
    auto any = [](const memory::dims& d) { return memory::desc(d, memory::data_type::f32, tag::any); };
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                         dnnl::algorithm::convolution_direct, any(src_dims), any(w_dims),
                                         any(dst_dims), {1, 1, 1}, {p, p, p}, {p, p, p});
    dnnl::convolution_forward::primitive_desc pd(desc, engine);
    memory user_src({src_dims, memory::data_type::f32, tag::ncdhw}, engine, x.data());
    memory user_w({w_dims, memory::data_type::f32, tag::oidhw}, engine, w.data());
    memory user_dst({dst_dims, memory::data_type::f32, tag::ncdhw}, engine, y_dnnl.data());
    memory src(pd.src_desc(), engine), weights(pd.weights_desc(), engine), dst(pd.dst_desc(), engine);
    dnnl::reorder(user_src, src).execute(stream, user_src, src);
    dnnl::reorder(user_w, weights).execute(stream, user_w, weights);
    dnnl::convolution_forward conv(pd);
    auto run_dnnl = [&] {
      conv.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}});
      stream.wait();
    };
    const std::string name = "conv3d" + std::to_string(i);
    auto run_kiln = [&] { jit->run(name, {x.data(), w.data(), y_kiln.data()}); };
    run_kiln();
    run_dnnl();
    dnnl::reorder(dst, user_dst).execute(stream, dst, user_dst);
    stream.wait();
    double max_err = 0;
    for (size_t k = 0; k < y_kiln.size(); ++k)
      max_err = std::max(max_err, double(std::fabs(y_kiln[k] - y_dnnl[k])));
    if (max_err > 1e-3)
      throw Error(std::string(c.what) + ": kiln and oneDNN differ by " + std::to_string(max_err));
    double tk = 1e30, td = 1e30;
    for (int round = 0; round < 3; ++round) {
      tk = std::min(tk, bench::best_seconds(run_kiln, 5));
      td = std::min(td, bench::best_seconds(run_dnnl, 5));
    }
    std::printf("%-34s %9.3f %9.3f %7.1f %7.1f %6.2fx\n", c.what, tk * 1e3, td * 1e3, c.flops() / tk * 1e-9,
                c.flops() / td * 1e-9, td / tk);
  }
  std::printf("ratio: oneDNN time / kiln time (above 1: kiln is faster); kiln's NCDHW nn.conv3d\n");
}

}  // namespace

int main(int argc, char** argv) try {
  kiln::bench::keep_heap_memory();
  const codegen::Target target = bench::bench_target(argc, argv, "kiln_bench_conv");
  std::printf("CPU: %s\n", codegen::host_cpu_summary().c_str());
  bench::print_named_cpu(target);
  std::vector<tir::PrimFunc> funcs;
  const auto options = codegen::tir_pass_options(target);
  const int64_t lanes = codegen::schedule_target(target).float32_lanes();
  for (size_t i = 0; i < std::size(kShapes); ++i) {
    funcs.push_back(tir::lower_for_build(kiln_conv(kShapes[i], "conv" + std::to_string(i), target), options));
    if (int64_t block = channel_block(kShapes[i], lanes))
      funcs.push_back(tir::lower_for_build(
          kiln_blocked_conv(kShapes[i], block, "blocked" + std::to_string(i), target), options));
  }
  codegen::CodegenOptions codegen_options;
  codegen_options.target = target;
  auto jit = codegen::JitModule::create(funcs, codegen_options);
  set_parallel_num_threads(1);
  bench::set_dnnl_threads(1);
  std::printf("%-34s %9s %9s %9s %7s %7s %7s %7s\n", "conv (one thread)", "NCHW ms", "block ms", "oneDNN ms",
              "NCHW GF", "oneDNN", "ratio", "blocked");
  for (size_t i = 0; i < std::size(kShapes); ++i) {
    const ConvShape& c = kShapes[i];
    std::vector<float> x(size_t(c.in_channels * c.height * c.width)),
        w(size_t(c.out_channels * (c.in_channels / c.groups) * c.kernel * c.kernel)),
        y_kiln(size_t(c.out_channels * c.out_height() * c.out_width())), y_dnnl(y_kiln.size());
    for (size_t k = 0; k < x.size(); ++k) x[k] = float(int(k % 23) - 11) * 0.0625f;
    for (size_t k = 0; k < w.size(); ++k) w[k] = float(int(k % 17) - 8) * 0.03125f;
    DnnlConv dnnl(c, x.data(), w.data(), y_dnnl.data());
    const std::string name = "conv" + std::to_string(i);
    // A Winograd conv reads its kernel transformed, as fold-constants leaves it.
    Tensor wk = Tensor::wrap(w.data(), {c.out_channels, c.in_channels / c.groups, c.kernel, c.kernel},
                             DType::Float32);
    if (const int64_t m = winograd_rows(c))
      wk = run_op(*find_op("nn.winograd_weight"), {wk}, {{"tile_rows", m}})[0];
    auto run_kiln = [&] { jit->run(name, {x.data(), wk.raw(), y_kiln.data()}); };
    run_kiln();
    dnnl.run();
    dnnl.read_output();
    double max_err = 0;
    for (size_t k = 0; k < y_kiln.size(); ++k)
      max_err = std::max(max_err, double(std::fabs(y_kiln[k] - y_dnnl[k])));
    if (max_err > 1e-3)
      throw Error(std::string(c.what) + ": kiln and oneDNN differ by " + std::to_string(max_err));
    // The blocked conv on the blocked input and weight (the reference
    // kernels block them), its output unblocked and checked too.
    const int64_t block = channel_block(c, lanes);
    Tensor xb, wb, yb;
    if (block) {
      Tensor xt = Tensor::wrap(x.data(), {1, c.in_channels, c.height, c.width}, DType::Float32);
      Tensor wt = Tensor::wrap(w.data(), {c.out_channels, c.in_channels / c.groups, c.kernel, c.kernel},
                               DType::Float32);
      const int64_t ib = c.in_channels % block == 0 ? block : 1;
      xb = ib == 1 ? xt : run_op(*find_op("nn.block_channels"), {xt}, {{"block", block}})[0];
      wb = run_op(*find_op("nn.block_conv_weight"), {wt},
                  {{"in_block", c.groups > 1 ? int64_t{1} : ib}, {"out_block", block}})[0];
      if (const int64_t m = blocked_winograd_rows(c, block))
        wb = run_op(*find_op("nn.winograd_weight"), {wb}, {{"tile_rows", m}})[0];
      yb = Tensor::empty({1, c.out_channels / block, c.out_height(), c.out_width(), block}, DType::Float32);
    }
    auto run_blocked = [&] { jit->run("blocked" + std::to_string(i), {xb.raw(), wb.raw(), yb.raw()}); };
    if (block) {
      run_blocked();
      Tensor back = run_op(*find_op("nn.unblock_channels"), {yb}, {})[0];
      for (size_t k = 0; k < y_kiln.size(); ++k)
        max_err = std::max(max_err, double(std::fabs(back.data<float>()[k] - y_dnnl[k])));
      if (max_err > 1e-3)
        throw Error(std::string(c.what) + ": kiln's blocked conv and oneDNN differ by " +
                    std::to_string(max_err));
    }
    double tk = 1e30, td = 1e30, tb = 1e30;
    const int reps = c.flops() > 1e8 ? 5 : 20;
    for (int round = 0; round < 3; ++round) {
      tk = std::min(tk, bench::best_seconds(run_kiln, reps));
      if (block) tb = std::min(tb, bench::best_seconds(run_blocked, reps));
      td = std::min(td, bench::best_seconds([&] { dnnl.run(); }, reps));
    }
    const std::string what = std::string(c.what) + (winograd_rows(c) ? " *" : "") +
                             (block && blocked_winograd_rows(c, block) ? " +" : "");
    if (block)
      std::printf("%-34s %9.3f %9.3f %9.3f %7.1f %7.1f %6.2fx %6.2fx\n", what.c_str(), tk * 1e3, tb * 1e3,
                  td * 1e3, c.flops() / tk * 1e-9, c.flops() / td * 1e-9, td / tk, td / tb);
    else
      std::printf("%-34s %9.3f %9s %9.3f %7.1f %7.1f %6.2fx %7s\n", what.c_str(), tk * 1e3, "-", td * 1e3,
                  c.flops() / tk * 1e-9, c.flops() / td * 1e-9, td / tk, "-");
  }
  std::printf(
      "ratio, blocked: oneDNN time / kiln time, NCHW and blocked (above 1: kiln is faster); blocks of %lld "
      "channels, - where the output channels do not make blocks; * NCHW by Winograd's F(m, 3) along rows, + "
      "blocked by it too (as a compiled model runs them; GF counts the direct conv's operations)\n",
      static_cast<long long>(lanes));
  bench_conv3d(target);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "conv_bench: %s\n", e.what());
  return 1;
}
