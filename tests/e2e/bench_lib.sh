# Shell helpers the end-to-end scripts share (tests/e2e/ppocr.sh,
# bench/e2e_models.sh); sourced, not run.

# ONNX Runtime for node (onnxruntime-node 1.30.0) in DIR/node_modules,
# installed from npm when missing, and exported as ORT_NODE_MODULES for
# tests/e2e/ort_run.js. Returns 1 when npm cannot install it (DIR/npm-install.log says why).
ort_modules() {
  local dir=$1
  if [ ! -d "$dir/node_modules/onnxruntime-node" ]; then
    (cd "$dir" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-save onnxruntime-node@1.30.0 >npm-install.log 2>&1) ||
      return 1
  fi
  export ORT_NODE_MODULES=$dir/node_modules
}

# The one-thread runs of kiln and of ONNX Runtime share one core, the last
# this script may use: the cores of a shared machine differ (on one 2-core
# VM, core 0 ran single-threaded code 1.6x slower than core 1), and unpinned
# runs would compare whichever cores they landed on. Sets `pin` (a command
# prefix, empty without taskset) and `pin_cpu`.
pin=()
if command -v taskset >/dev/null; then
  pin_cpu=$(taskset -pc $$ | sed -E 's/.*: //' | tr ',' '\n' | tail -1 | sed -E 's/.*-//')
  pin=(taskset -c "$pin_cpu")
fi

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.2f", a / b; else print "-" }'; }
cpu_line() {
  echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); $(grep -o -m1 -w 'avx512f' /proc/cpuinfo || echo 'no avx512f'); $(nproc) cores"
}
