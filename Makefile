# The two commands of the README: `make run` and `make test`.
BUILD ?= build
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_WERROR=ON
LAUNCHER := $(shell command -v ccache >/dev/null 2>&1 && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)

.PHONY: all setup build run test e2e fuzz check-sanitize bench check-builds clean

all: build

setup:
	@scripts/setup.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_FLAGS) $(LAUNCHER)

build: setup $(BUILD)/build.ninja
	@cmake --build $(BUILD)

run: build
	@scripts/run-example.sh $(BUILD)

test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j2 --timeout 600

# PP-OCR models against ONNX Runtime (needs npm): outputs checked, latency table.
e2e: build
	@tests/e2e/ppocr.sh $(BUILD) --bench

# kiln's float32 matmul (1024^3: the op compiled as a model, its kernel
# JIT-compiled, a hand-written schedule) against oneDNN sgemm, on one thread
# and on all threads (the bench sets both sides' thread counts itself); then
# PP-OCR's conv shapes (3x3, pointwise, depthwise, strided) and ResNet-18's
# 3x3 stages against oneDNN's convolution on one thread; then PP-OCR's GEMM shapes against OpenBLAS and
# oneDNN, and its elementwise ops, softmax and a layer norm's mean against oneDNN (Google
# Benchmark), one thread; then the DSP session's dispatch overhead under QEMU.
# On an AVX-512 machine the matmul, conv and GEMM benches run a second time with
# kiln's code for x86-64-v3 and oneDNN limited to AVX2: what an AVX2-only
# machine gets.
bench: setup $(BUILD)/build.ninja
	@ninja -C $(BUILD) kiln_bench_matmul kiln_bench_conv kiln_bench_gemm kiln_bench_eltwise kiln_bench_hexagon_dispatch
	@$(BUILD)/kiln_bench_matmul
	@if grep -q -w avx512f /proc/cpuinfo; then $(BUILD)/kiln_bench_matmul --cpu x86-64-v3; fi
	@$(BUILD)/kiln_bench_conv
	@if grep -q -w avx512f /proc/cpuinfo; then $(BUILD)/kiln_bench_conv --cpu x86-64-v3; fi
	@$(BUILD)/kiln_bench_gemm --benchmark_min_time=0.2
	@if grep -q -w avx512f /proc/cpuinfo; then $(BUILD)/kiln_bench_gemm --cpu x86-64-v3 --benchmark_min_time=0.2; fi
	@$(BUILD)/kiln_bench_eltwise --benchmark_min_time=0.2
	@$(BUILD)/kiln_bench_hexagon_dispatch

# Fuzzes the .kir parser, the .kmod loader, the kiln.graph loader and the
# ONNX importer for FUZZ_SECONDS each (libFuzzer + ASan + UBSan, clang-19, in
# build-fuzz/; corpus in tests/fuzz/corpus/, which `make test` replays).
FUZZ_SECONDS ?= 60
fuzz: setup
	@scripts/fuzz.sh $(FUZZ_SECONDS)

# The whole ctest suite on an ASan + UBSan build (build-sanitize/; slow).
check-sanitize: setup
	@scripts/check-sanitize.sh

# The `kiln` target from a clean copy of the tree: CMake's default generator,
# Release, and clang-19 with warnings as errors (slow: too long for CI).
check-builds: setup
	@scripts/check-builds.sh

clean:
	rm -rf $(BUILD)
