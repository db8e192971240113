// The acme_npu's own program format, and the device that runs it.
//
// kiln hands the plugin's codegen each offloaded function as kiln.graph JSON;
// compile_program() turns it into the device's program, a few lines of text:
//
//   acme_npu program 1
//   input x 64             a value of the function: its name, float32 elements
//   constant w 64          a constant kiln keeps and gives the runtime by name
//   op multiply t0 x w     an instruction: op, result, operands
//   op relu t1 t0
//   output t1
//
// parse_program() reads it back (the runtime never sees the graph), and
// Program::run() computes it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace acme {

enum class Op { Add, Subtract, Multiply, Relu };

// "add" -> Op::Add; false for an op the device does not have.
bool op_from_name(const std::string& name, Op* op);
int op_arity(Op op);

struct Instruction {
  Op op;
  std::string result;
  std::vector<std::string> operands;
};

struct Program {
  std::vector<std::pair<std::string, int64_t>> inputs;     // name, elements
  std::vector<std::pair<std::string, int64_t>> constants;  // name, elements
  std::map<std::string, int64_t> elements;                 // every value's size
  std::vector<Instruction> code;
  std::vector<std::string> outputs;

  // Runs on caller-owned buffers: inputs[i] and outputs[i] as declared;
  // `constants` by name. Returns "" or what is wrong.
  std::string run(const std::vector<const float*>& inputs,
                  const std::map<std::string, const float*>& constants,
                  const std::vector<float*>& outputs) const;
};

// Returns "" and fills `text`, or the reason the graph cannot be compiled.
std::string compile_program(const std::string& graph_json, std::string* text);
// Returns "" and fills `program`, or what is malformed.
std::string parse_program(const std::string& text, Program* program);

}  // namespace acme
