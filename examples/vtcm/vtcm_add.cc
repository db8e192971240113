// The forum question, answered by running it.
//
// A and B (int8[2048], or float32 with --dtype float32) are copied into VTCM
// scratchpad buffers and C = A_buf + B_buf. This program writes the kernel
// with the tensor-expression API, prints the tensor IR before and after the
// scratchpad lowering (allocate, null check, free), builds a shared library
// for the host, shows where each of its imports resolves, loads it with the
// dynamic linker (the HexagonBackend* symbols come from kiln's runtime,
// linked into this executable and exported), runs it, checks C, and prints
// the VTCM pool's figures.
//
// With --target hexagon-v68 (or v66, v69, v73) the same kernel is built for
// Hexagon instead: its assembly is shown (the HexagonBackendAllocateVTCM
// calls and the HVX vector instructions), it is linked with a generated
// harness and kiln's Hexagon runtime into a static executable, run under
// qemu-hexagon-static, C is checked, and the pool's figures printed are the
// Hexagon runtime's own.
//
//   vtcm_add [--dtype int8|float32] [--target llvm|hexagon-v68] [--out DIR]
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/prim_runner.h"
#include "kiln/runtime/backend_api.h"
#include "runtime/runtime_abi.h"
#include "runtime/vtcm_pool.h"
#include "tir/te/te.h"
#include "tir/text.h"
#include "tir/transform/passes.h"

using namespace kiln;

namespace {

constexpr int64_t kN = 2048;

tir::PrimFunc build_kernel(tir::DataType t) {
  namespace te = tir::te;
  te::Tensor A = te::placeholder({kN}, t, "A");
  te::Tensor B = te::placeholder({kN}, t, "B");
  te::Tensor C = te::compute(
      {kN}, [&](const te::Axes& i) { return tir::add((*A)(i), (*B)(i)); }, "C");
  te::Schedule s({C});
  s.cache_read(A, "local.vtcm", {C});
  s.cache_read(B, "local.vtcm", {C});
  s[C].vectorize(s[C].leaf(0));
  return te::lower(s, {A, B, C}, "alloc_vtcm");
}

template <typename T>
T input_a(int64_t i) {
  return T(i % 64 - 32);
}
template <typename T>
T input_b(int64_t i) {
  return T((i * 5) % 50);
}

template <typename T>
int check(const T* c) {
  for (int64_t i = 0; i < kN; ++i) {
    T want = T(input_a<T>(i) + input_b<T>(i));
    if (c[i] != want) {
      std::printf("WRONG: C[%lld] = %g, want %g\n", (long long)i, double(c[i]), double(want));
      return 1;
    }
  }
  std::printf("C is right: all %lld elements equal A + B\n", (long long)kN);
  return 0;
}

template <typename T>
int run(void* symbol, VtcmPool& pool) {
  using Kernel = int32_t (*)(void*, void*, void*);
  std::vector<T> a(kN), b(kN), c(kN, T(0));
  for (int64_t i = 0; i < kN; ++i) {
    a[size_t(i)] = input_a<T>(i);
    b[size_t(i)] = input_b<T>(i);
  }
  int32_t code;
  {
    ScopedVtcmPool bind(pool);
    code = reinterpret_cast<Kernel>(symbol)(a.data(), b.data(), c.data());
  }
  if (code != 0) {
    std::printf("kernel failed: %s\n", KilnBackendGetLastError());
    return 1;
  }
  return check(c.data());
}

// The Hexagon path: assembly, a static executable, a run under QEMU.
template <typename T>
int run_on_hexagon(const tir::PrimFunc& kernel, const std::string& target_name, const std::string& out_dir) {
  codegen::CodegenOptions cg;
  cg.target = codegen::parse_target(target_name);
  tir::TirPassOptions passes;
  passes.scratchpad_capacity = cg.target.vtcm_capacity;
  std::string s = codegen::emit_text({tir::lower_for_build(kernel, passes)}, codegen::EmitKind::Assembly, cg);
  tir::DataType t = kernel->params[0].buffer->dtype;
  const std::string stem = "vtcm_add_" + tir::dtype_str(t) + "_" + target_name;
  std::string asm_path = (std::filesystem::path(out_dir) / (stem + ".s")).string();
  if (std::FILE* f = std::fopen(asm_path.c_str(), "w")) {
    std::fwrite(s.data(), 1, s.size(), f);
    std::fclose(f);
  }
  std::printf("== %s assembly (%s): the calls, and the first HVX instructions\n", target_name.c_str(),
              asm_path.c_str());
  int loads_shown = 0, adds_shown = 0;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    std::string line = s.substr(start, end - start);
    start = end + 1;
    line.erase(0, line.find_first_not_of(" \t"));
    bool is_call = line.rfind("call ", 0) == 0;
    bool is_load = line.find("= vmem(") != std::string::npos && loads_shown++ < 2;
    bool is_add = line.find("= vadd(v") != std::string::npos && adds_shown++ < 2;
    if (is_call || is_load || is_add) std::printf("  %s\n", line.c_str());
  }

  DType dt = t.is_float() ? DType::Float32 : DType::Int8;
  Tensor a = Tensor::empty({kN}, dt), b = Tensor::empty({kN}, dt);
  for (int64_t i = 0; i < kN; ++i) {
    a.data<T>()[i] = input_a<T>(i);
    b.data<T>()[i] = input_b<T>(i);
  }
  codegen::PrimRunOptions ro;
  ro.target = cg.target;
  ro.work_dir = (std::filesystem::path(out_dir) / stem).string();
  codegen::PrimRunResult r = codegen::run_prim_function(kernel, {{"A", a}, {"B", b}}, ro);
  std::printf("== linked %s/%s.elf with kiln's Hexagon runtime; ran it under qemu-hexagon-static -cpu v67\n",
              ro.work_dir.c_str(), kernel->name.c_str());
  int rc = check(r.outputs.at(0).second.template data<T>());
  std::printf("== VTCM pool (the Hexagon runtime's): %s\n", r.vtcm_pool.c_str());
  std::string want = "high-water " + std::to_string(2 * kN * t.bytes()) + " B";
  if (rc == 0 && r.vtcm_pool.find(want) == std::string::npos) {
    std::printf("WRONG: the pool's %s expected\n", want.c_str());
    rc = 1;
  }
  if (rc == 0 && r.vtcm_pool.find(" 0 live)") == std::string::npos) {
    std::printf("WRONG: VTCM buffers were not freed\n");
    rc = 1;
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string dtype = "int8";
  std::string target = "llvm";
  std::string out_dir = std::filesystem::temp_directory_path().string();
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--dtype") && i + 1 < argc) {
      dtype = argv[++i];
    } else if (!std::strcmp(argv[i], "--out") && i + 1 < argc) {
      out_dir = argv[++i];
    } else if (!std::strcmp(argv[i], "--target") && i + 1 < argc) {
      target = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: vtcm_add [--dtype int8|float32] [--target llvm|hexagon-v68] [--out DIR]\n");
      return 2;
    }
  }
  if (dtype != "int8" && dtype != "float32") {
    std::fprintf(stderr, "vtcm_add: --dtype must be int8 or float32, not '%s'\n", dtype.c_str());
    return 2;
  }
  tir::DataType t = dtype == "int8" ? tir::DataType::int_(8) : tir::DataType::float32();

  tir::PrimFunc kernel = build_kernel(t);
  std::printf("== scheduled tensor IR\n%s\n", tir::print_prim_func(*kernel).c_str());
  if (target != "llvm")
    return t.is_float() ? run_on_hexagon<float>(kernel, target, out_dir)
                        : run_on_hexagon<int8_t>(kernel, target, out_dir);
  tir::PrimFunc lowered = tir::lower_for_build(kernel);
  std::printf("== after lower-scratchpad-alloc (sizes in bytes)\n%s\n",
              tir::print_prim_func(*lowered).c_str());

  // Build for the host. The build fails here, naming the symbol, if an
  // import is neither in the runtime ABI nor in a --link-lib library.
  std::string so = (std::filesystem::path(out_dir) / ("vtcm_add_" + dtype + ".so")).string();
  codegen::emit_to_file({lowered}, codegen::EmitKind::SharedLibrary, so);
  std::printf("== built %s\n", so.c_str());
  auto imports = codegen::collect_imports({lowered});
  for (const auto& r : codegen::resolve_imports(imports, {}))
    std::printf("  import %-28s -> %s\n", r.import.symbol.c_str(), codegen::import_source_name(r.source));

  // Load time: the dynamic linker resolves the imports against this
  // executable, which links kiln_runtime and exports its symbols.
  codegen::check_imports(imports, {}, "load");
  void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::printf("cannot load %s: %s\n", so.c_str(), dlerror());
    return 1;
  }
  void* symbol = dlsym(lib, "alloc_vtcm");
  if (!symbol) {
    std::printf("%s exports no alloc_vtcm\n", so.c_str());
    return 1;
  }
  VtcmPool pool;
  int rc = dtype == "int8" ? run<int8_t>(symbol, pool) : run<float>(symbol, pool);
  VtcmPoolStats s = pool.stats();
  std::printf("== VTCM pool: %s\n", s.str().c_str());
  std::printf("   allocations %llu, high water %llu bytes (%llu bytes per element x 2 buffers x %lld)\n",
              (unsigned long long)s.total_allocations, (unsigned long long)s.high_water_bytes,
              (unsigned long long)t.bytes(), (long long)kN);
  if (rc == 0 && s.high_water_bytes != uint64_t(2 * kN * t.bytes())) {
    std::printf("WRONG: the pool's high water should be %lld bytes\n", (long long)(2 * kN * t.bytes()));
    rc = 1;
  }
  if (rc == 0 && s.live_allocations != 0) {
    std::printf("WRONG: %llu VTCM buffers were not freed\n", (unsigned long long)s.live_allocations);
    rc = 1;
  }
  dlclose(lib);
  return rc;
} catch (const Error& e) {
  std::fprintf(stderr, "vtcm_add: %s\n", e.what());
  return 1;
}
