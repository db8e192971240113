// kiln errors as Python exceptions.
//
//   kiln.Error             every error a user can cause (RuntimeError)
//   kiln.ParseError        one with a source location (.kir text, ...)
//   kiln.UnsupportedError  a model uses something kiln cannot import
//   kiln.CallbackError     a Python check or backend runtime raised; the
//                          original exception is its __cause__
//
// Each carries .message (without the location), .file, .line, .column and
// .context (for a parse error: the offending line and a caret).
#include <deque>

#include "common.h"
#include "frontend/onnx/importer.h"

namespace kiln::python {
namespace {

// Created once by bind_errors and never released: exception classes live as
// long as the process.
PyObject* g_error = nullptr;
PyObject* g_parse_error = nullptr;
PyObject* g_unsupported_error = nullptr;
PyObject* g_callback_error = nullptr;

// Python exceptions raised in callbacks, waiting for the kiln::Error that
// carries their message to reach Python. The message is the key because a
// backend runtime's errors cross the VM as Status strings (the runtime
// contract), so no exception object can travel with them. Touched with the GIL held only.
// Errors that C++ handled without reaching Python leave their entry behind;
// only the last few are kept.
struct PendingException {
  std::string message;
  py::object value;
};
std::deque<PendingException>& pending() {
  static auto* p = new std::deque<PendingException>();  // leaked: outlives the interpreter
  return *p;
}
constexpr size_t kMaxPending = 8;

PyObject* make_class(py::module_& m, const char* name, PyObject* base, const char* doc) {
  std::string qualified = std::string("kiln.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (!cls) throw py::error_already_set();
  m.add_object(name, py::handle(cls));  // the module holds its own reference
  return cls;
}

// Messages may quote bytes of the input (a parse error's context line from a
// binary file): invalid UTF-8 is replaced rather than raising a decode error.
py::object text(const std::string& s) {
  return py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(s.data(), py::ssize_t(s.size()), "replace"));
}

void raise(PyObject* cls, const kiln::Error& e) {
  py::object full = text(e.what());
  py::object inst = py::reinterpret_steal<py::object>(PyObject_CallOneArg(cls, full.ptr()));
  if (!inst) return;  // the Python error raised by the call stands
  inst.attr("message") = text(e.message());
  inst.attr("file") = text(e.loc().file);
  inst.attr("line") = e.loc().line;
  inst.attr("column") = e.loc().column;
  inst.attr("context") = text(e.context());
  std::string what = e.what();
  auto& queue = pending();
  for (auto it = queue.begin(); it != queue.end(); ++it) {
    if (what.find(it->message) == std::string::npos) continue;
    // SetCause steals a reference.
    PyException_SetCause(inst.ptr(), it->value.inc_ref().ptr());
    queue.erase(it);
    break;
  }
  PyErr_SetObject(cls, inst.ptr());
}

bool is_callback_error(const kiln::Error& e) {
  std::string what = e.what();
  for (const auto& p : pending())
    if (what.find(p.message) != std::string::npos) return true;
  return false;
}

}  // namespace

std::string record_callback_exception(py::error_already_set& e, const std::string& what) {
  std::string type = py::str(e.type().attr("__name__"));
  std::string message = what + " raised " + type;
  std::string text = py::str(e.value());
  if (!text.empty()) message += ": " + text;
  // Where it was raised: the innermost frame of the traceback.
  if (e.trace()) {
    try {
      py::list frames = py::module_::import("traceback").attr("extract_tb")(e.trace());
      if (!frames.empty()) {
        py::object last = frames[frames.size() - 1];
        message += " (at " + std::string(py::str(last.attr("filename"))) + ":" +
                   std::string(py::str(last.attr("lineno"))) + ")";
      }
    } catch (py::error_already_set&) {
      // No location then; the message stands.
    }
  }
  auto& queue = pending();
  queue.push_back({message, e.value()});
  while (queue.size() > kMaxPending) queue.pop_front();
  return message;
}

std::recursive_mutex& CompilerLock::mutex() {
  static auto* m = new std::recursive_mutex();  // leaked: used until the process ends
  return *m;
}

PyRef::~PyRef() {
  if (!Py_IsInitialized()) {
    obj_.release();  // the interpreter is gone: nothing left to release it to
    return;
  }
  py::gil_scoped_acquire gil;
  obj_ = py::object();
}

void bind_errors(py::module_& m) {
  g_error = make_class(m, "Error", PyExc_RuntimeError,
                       "An error kiln reports: .message, and .file/.line/.column where there is a location.");
  g_parse_error = make_class(m, "ParseError", g_error, "An error at a source location (.kir text, ...).");
  g_unsupported_error =
      make_class(m, "UnsupportedError", g_error, "The model uses something kiln cannot import.");
  g_callback_error =
      make_class(m, "CallbackError", g_error,
                 "A Python check or backend runtime raised; the original exception is __cause__.");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const UnsupportedError& e) {
      raise(g_unsupported_error, e);
    } catch (const kiln::Error& e) {
      PyObject* cls = is_callback_error(e) ? g_callback_error : e.loc().known() ? g_parse_error : g_error;
      raise(cls, e);
    }
  });
}

}  // namespace kiln::python
