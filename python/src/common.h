// What the parts of the Python module share: numpy <-> Tensor, errors,
// references to Python objects held by C++ registries, and the calls back
// into Python from C++ (checks and backend runtimes).
//
// GIL rules, in one place:
//   - every binding that runs kiln code which may take long or call back into
//     Python (import, partition, compile, VM creation and runs, lowering,
//     builds, prim runs) releases the GIL while kiln runs (CompilerLock, or
//     a module's own lock for VM runs);
//   - every call back into Python (a check, a backend runtime) takes the GIL
//     first (PyCall), so it works from any thread kiln runs it on, and a
//     Python exception there becomes a kiln::Error that names the callback;
//   - Python objects held by C++ (PyRef) are released with the GIL, or leaked
//     when the interpreter is already gone (at exit).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/runtime/attrs.h"
#include "kiln/runtime/error.h"
#include "kiln/runtime/tensor.h"
#include "op/op.h"
#include "runtime/model_names.h"
#include "tir/tir.h"

namespace kiln::python {

namespace py = pybind11;

// ---------------------------------------------------------------- numpy

// The numpy dtype of a kiln element type, and back (an unsupported numpy
// dtype is a kiln::Error naming it and the supported ones).
py::dtype numpy_dtype(DType t);
DType dtype_from_numpy(const py::dtype& d);
// "float64": a numpy dtype's name, for messages.
std::string dtype_text(const py::dtype& d);
// "float32", "int8", ... or a numpy dtype / type object given by the user.
DType dtype_from_object(const py::handle& obj);

// A numpy array over the tensor's storage (no copy); the array keeps the
// storage alive. `writeable` false marks it read-only.
py::array to_numpy(const Tensor& t, bool writeable = true);

// A tensor over a numpy array's memory when the array is C-contiguous and
// 64-byte aligned (what compiled kernels assume); otherwise a 64-byte-aligned
// copy. `keep` receives the array whose memory the tensor uses, so the caller
// keeps it alive while the tensor is used. `what` names the value in errors.
Tensor from_numpy(const py::handle& obj, const std::string& what, std::vector<py::object>& keep);
// The same, checked against the expected type; a mismatch names `what`, the
// expected and the given type, and says how to convert.
Tensor from_numpy_as(const py::handle& obj, const TensorDesc& want, const std::string& what,
                     std::vector<py::object>& keep);

// Attrs <-> dict.
py::dict attrs_to_dict(const Attrs& attrs);
Attrs attrs_from_dict(const py::dict& d);

// ---------------------------------------------------------------- threads

// Releases the GIL, then takes the lock that serialises kiln's compiler
// (registries, import, partitioning, codegen) between Python threads. In
// this order, always: no thread waits for the lock while holding the GIL,
// so callbacks of the thread that holds it always get the GIL. Recursive, so
// a Python check that calls kiln again on its own thread goes through.
class CompilerLock {
 public:
  CompilerLock() : lock_(mutex()) {}

 private:
  static std::recursive_mutex& mutex();
  py::gil_scoped_release release_;  // first: released before the lock is taken
  std::unique_lock<std::recursive_mutex> lock_;
};

// ---------------------------------------------------------------- Python objects held by C++

// A reference to a Python object that may outlive the interpreter (a check in
// the process-wide pattern registry): dropped with the GIL, or leaked at exit.
class PyRef {
 public:
  explicit PyRef(py::object obj) : obj_(std::move(obj)) {}
  ~PyRef();
  PyRef(const PyRef&) = delete;
  PyRef& operator=(const PyRef&) = delete;
  const py::object& get() const { return obj_; }  // with the GIL held

 private:
  py::object obj_;
};

// ---------------------------------------------------------------- calls back into Python

// Runs `fn` with the GIL held. A Python exception raised by it becomes a
// kiln::Error "<what> raised <Type>: <message>", and the exception object is
// kept so the binding that reaches the caller can chain it (raise ... from).
template <typename Fn>
auto call_python(const std::string& what, Fn&& fn) -> decltype(fn());

// Records a Python exception raised in a callback (with the GIL held) and
// returns the message of the kiln::Error that carries it.
std::string record_callback_exception(py::error_already_set& e, const std::string& what);

template <typename Fn>
auto call_python(const std::string& what, Fn&& fn) -> decltype(fn()) {
  py::gil_scoped_acquire gil;
  std::string message;
  try {
    return fn();
  } catch (py::error_already_set& e) {
    message = record_callback_exception(e, what);
  } catch (const kiln::Error&) {
    throw;
  } catch (const std::exception& e) {
    message = what + " failed: " + e.what();
  }
  throw kiln::Error(message);
}

// A prim function as Python holds it (pybind11 holders cannot be const).
struct PrimFuncHandle {
  tir::PrimFunc func;
};

// Inputs given positionally and by name (the model's name, `names`, or the
// kiln parameter name), in the order of `params`; each is checked against its
// type. `what` names the function in errors.
std::vector<Tensor> gather_inputs(const std::string& what,
                                  const std::vector<std::pair<std::string, TensorDesc>>& params,
                                  const ModelNames& names, const py::tuple& args, const py::dict& kwargs,
                                  std::vector<py::object>& keep);
// {"inputs": {kiln parameter: model name}, "outputs": [model name, ...]}.
py::dict model_names_dict(const ModelNames& names);
py::list to_numpy_list(const std::vector<Tensor>& ts);

// ---------------------------------------------------------------- module parts

void bind_errors(py::module_& m);
void bind_graph(py::module_& m);
void bind_runtime(py::module_& m);
void bind_backends(py::module_& m);
void bind_te(py::module_& m);

}  // namespace kiln::python
