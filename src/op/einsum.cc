// einsum(x0, x1, ...; equation): Einstein summation (ONNX Einsum, numpy's
// einsum).
//
// The equation names each input's axes with letters ("ij,jk->ik"); a letter
// repeated within one input takes the diagonal ("ii->i"), a letter missing
// from the output is summed over ("ii->" is the trace). "..." stands for
// the axes no letter names; those broadcast across inputs (numpy rules,
// right-aligned). Without "->" (implicit mode) the output is the "..." axes
// followed by the letters used exactly once, in alphabetical order (upper
// case before lower case, as in numpy). Spaces are ignored. Numeric dtypes,
// all inputs of one dtype; sums accumulate in double.
#include <algorithm>
#include <map>

#include "op/einsum.h"
#include "op/kernel_util.h"
#include "op/op.h"
#include "op/register_ops.h"

namespace kiln {
namespace {

const std::string kOp = "einsum";
constexpr int kLetters = 52;  // A-Z, a-z; "..." axes get ids from 52 on

int letter_id(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -1;
}

[[noreturn]] void bad_equation(const std::string& eq, const std::string& why) {
  throw Error(kOp + ": malformed equation '" + eq + "': " + why);
}

// One term's letters, -2 marking where "..." stands.
std::vector<int> parse_term(const std::string& eq, const std::string& term) {
  std::vector<int> out;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term[i] == '.') {
      if (term.compare(i, 3, "...") != 0) bad_equation(eq, "a '.' that is not part of '...'");
      if (ellipsis) bad_equation(eq, "'...' twice in one term");
      ellipsis = true;
      out.push_back(-2);
      i += 2;
      continue;
    }
    int id = letter_id(term[i]);
    if (id < 0)
      bad_equation(
          eq, std::string("unexpected character '") + term[i] + "' (expected letters, ',', '...', '->')");
    out.push_back(id);
  }
  return out;
}

std::vector<std::string> split_terms(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == ',')
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

}  // namespace

EinsumPlan plan_einsum(const std::string& equation, const std::vector<Shape>& shapes) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  if (eq.empty()) bad_equation(equation, "it is empty");
  const size_t arrow = eq.find("->");
  const bool explicit_out = arrow != std::string::npos;
  if (explicit_out && eq.find("->", arrow + 2) != std::string::npos) bad_equation(equation, "'->' twice");
  std::string lhs = explicit_out ? eq.substr(0, arrow) : eq;
  std::vector<std::string> terms = split_terms(lhs);
  if (terms.size() != shapes.size())
    throw Error(kOp + ": equation '" + equation + "' has " + std::to_string(terms.size()) +
                " input term(s) but " + std::to_string(shapes.size()) + " input(s) were given");

  EinsumPlan p;
  p.size.assign(kLetters, -1);
  size_t ellipsis_rank = 0;
  std::vector<std::vector<int>> parsed;
  for (size_t k = 0; k < terms.size(); ++k) {
    parsed.push_back(parse_term(equation, terms[k]));
    const std::vector<int>& t = parsed.back();
    bool has_ellipsis = std::count(t.begin(), t.end(), -2) != 0;
    size_t letters = t.size() - (has_ellipsis ? 1 : 0);
    size_t rank = shapes[k].size();
    if (has_ellipsis ? rank < letters : rank != letters)
      throw Error(kOp + ": term '" + terms[k] + "' of equation '" + equation + "' names " +
                  std::to_string(letters) + " axes but input " + std::to_string(k) + " has rank " +
                  std::to_string(rank));
    if (has_ellipsis) ellipsis_rank = std::max(ellipsis_rank, rank - letters);
  }
  p.num_labels = kLetters + static_cast<int>(ellipsis_rank);
  p.size.resize(static_cast<size_t>(p.num_labels), -1);
  std::vector<int> uses(static_cast<size_t>(p.num_labels), 0);
  for (size_t k = 0; k < parsed.size(); ++k) {
    std::vector<int> labels;
    const size_t letters = parsed[k].size() - (std::count(parsed[k].begin(), parsed[k].end(), -2) ? 1 : 0);
    const size_t e = shapes[k].size() - letters;
    for (int id : parsed[k]) {
      if (id != -2) {
        labels.push_back(id);
        continue;
      }
      for (size_t j = 0; j < e; ++j) labels.push_back(kLetters + static_cast<int>(ellipsis_rank - e + j));
    }
    for (size_t a = 0; a < labels.size(); ++a) {
      const int id = labels[a];
      const int64_t d = shapes[k][a];
      int64_t& s = p.size[static_cast<size_t>(id)];
      ++uses[static_cast<size_t>(id)];
      if (s == -1 || s == d) {
        s = d;
        continue;
      }
      if (id >= kLetters && (s == 1 || d == 1)) {  // "..." axes broadcast
        s = std::max(s, d);
        continue;
      }
      throw Error(kOp + ": equation '" + equation + "': axis " + std::to_string(a) + " of input " +
                  std::to_string(k) + " has size " + std::to_string(d) + " but its label has size " +
                  std::to_string(s) + " elsewhere");
    }
    p.in_labels.push_back(labels);
  }

  if (!explicit_out) {
    for (int id = kLetters; id < p.num_labels; ++id) p.out_labels.push_back(id);
    for (int id = 0; id < kLetters; ++id)
      if (uses[static_cast<size_t>(id)] == 1) p.out_labels.push_back(id);
    return p;
  }
  std::vector<int> rhs = parse_term(equation, eq.substr(arrow + 2));
  const std::string letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  for (int id : rhs) {
    if (id == -2) {
      for (int e = kLetters; e < p.num_labels; ++e) p.out_labels.push_back(e);
      continue;
    }
    if (uses[static_cast<size_t>(id)] == 0)
      bad_equation(equation,
                   "output letter '" + letters.substr(static_cast<size_t>(id), 1) + "' is in no input term");
    if (std::count(p.out_labels.begin(), p.out_labels.end(), id))
      bad_equation(equation, "output letter '" + letters.substr(static_cast<size_t>(id), 1) + "' repeats");
    p.out_labels.push_back(id);
  }
  return p;
}

namespace {

Shape out_shape(const EinsumPlan& p) {
  Shape s;
  for (int id : p.out_labels) s.push_back(p.size[static_cast<size_t>(id)]);
  return s;
}

std::vector<TensorDesc> einsum_infer(const std::vector<TensorDesc>& in, const Attrs& attrs) {
  std::vector<Shape> shapes;
  for (size_t k = 0; k < in.size(); ++k) {
    require_dtype(kOp, "input " + std::to_string(k), in[k].dtype,
                  {DType::Float32, DType::Float64, DType::Float16, DType::Int32, DType::Int64});
    if (in[k].dtype != in[0].dtype)
      throw Error(kOp + ": input " + std::to_string(k) + " has dtype " +
                  std::string(dtype_name(in[k].dtype)) + " but input 0 has " +
                  std::string(dtype_name(in[0].dtype)) + "; all inputs must share one dtype");
    shapes.push_back(in[k].shape);
  }
  return {{out_shape(plan_einsum(attrs.get_string("equation"), shapes)), in[0].dtype}};
}

void einsum_kernel(const std::vector<Tensor>& in, const Attrs& attrs, std::vector<Tensor>& out) {
  std::vector<Shape> shapes;
  for (const auto& t : in) shapes.push_back(t.shape());
  const EinsumPlan p = plan_einsum(attrs.get_string("equation"), shapes);

  // The labels that occur, and per operand the stride each label steps by
  // (summed for a repeated letter: the diagonal; 0 for a broadcast axis).
  std::vector<int> used;
  for (int id = 0; id < p.num_labels; ++id)
    if (p.size[static_cast<size_t>(id)] >= 0) used.push_back(id);
  const size_t nl = used.size();
  std::vector<std::vector<int64_t>> stride(in.size() + 1, std::vector<int64_t>(nl, 0));
  auto slot = [&](int id) {
    return static_cast<size_t>(std::find(used.begin(), used.end(), id) - used.begin());
  };
  for (size_t k = 0; k < in.size(); ++k) {
    std::vector<int64_t> cs = contiguous_strides(shapes[k]);
    for (size_t a = 0; a < p.in_labels[k].size(); ++a)
      if (shapes[k][a] != 1 || p.size[static_cast<size_t>(p.in_labels[k][a])] == 1)
        stride[k][slot(p.in_labels[k][a])] += cs[a];
  }
  const Shape os = out_shape(p);
  std::vector<int64_t> ocs = contiguous_strides(os);
  for (size_t a = 0; a < p.out_labels.size(); ++a) stride[in.size()][slot(p.out_labels[a])] = ocs[a];

  std::vector<double> acc(static_cast<size_t>(out[0].numel()), 0.0);
  std::vector<int64_t> counter(nl, 0), off(in.size() + 1, 0);
  bool empty = false;
  for (int id : used) empty = empty || p.size[static_cast<size_t>(id)] == 0;
  while (!empty) {
    double prod = 1;
    for (size_t k = 0; k < in.size(); ++k) prod *= in[k].get_as_double(off[k]);
    acc[static_cast<size_t>(off[in.size()])] += prod;
    size_t l = nl;
    while (l > 0) {
      --l;
      const int64_t n = p.size[static_cast<size_t>(used[l])];
      if (++counter[l] < n) {
        for (size_t k = 0; k <= in.size(); ++k) off[k] += stride[k][l];
        break;
      }
      for (size_t k = 0; k <= in.size(); ++k) off[k] -= stride[k][l] * (n - 1);
      counter[l] = 0;
      if (l == 0) empty = true;
    }
    if (nl == 0) break;
  }
  for (int64_t i = 0; i < out[0].numel(); ++i) out[0].set_from_double(i, acc[static_cast<size_t>(i)]);
}

}  // namespace

void register_einsum_ops(OpRegistry& r) {
  r.add({"einsum",
         "Einstein summation over the inputs as the equation says (diagonals, sums, broadcast '...')",
         1,
         -1,
         {{"equation", AttrKind::String, std::nullopt}},
         false,
         einsum_infer,
         einsum_kernel});
}

}  // namespace kiln
