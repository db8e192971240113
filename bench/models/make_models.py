"""Writes four classic architectures as ONNX models with random weights, for
bench/e2e_models.sh: ResNet-18, MobileNetV2 and EfficientNet-B0 (ImageNet
classifiers, 224x224 input) and two BERT-base encoder layers (128 tokens of
768 features); and two of awkward extents (prime channel counts and widths,
77 tokens of 388 features), where a schedule without tails would fall back
to slow code; a CRNN text recognizer with two bidirectional LSTM
layers; a small 3-D U-Net on a 16x64x64 volume; and ResNet-18 and
MobileNetV2 again in float16 (weights, input and output, as a half-precision
export writes them), ResNet-18 quantized to int8 (QDQ) and the two BERT
layers quantized dynamically (MatMulInteger) and statically (QDQ). The
weights are random (fixed seed) and batch norms are left out, as an export
folds them into the convs; the speed and the arithmetic are those of the real
models.

    python3 bench/models/make_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class Graph:
    def __init__(self, seed):
        self.nodes, self.weights, self.count = [], [], 0
        self.rng = np.random.default_rng(seed)

    def fresh(self, prefix):
        self.count += 1
        return f"{prefix}_{self.count}"

    def constant(self, value, dtype=np.float32):
        name = self.fresh("w")
        self.weights.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def node(self, op, inputs, **attrs):
        out = self.fresh(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def conv(self, x, cin, cout, k, stride=1, groups=1):
        fan_in = cin // groups * k * k
        w = self.rng.standard_normal((cout, cin // groups, k, k)) * np.sqrt(2.0 / fan_in)
        b = self.rng.standard_normal(cout) * 0.05
        return self.node("Conv", [x, self.constant(w), self.constant(b)], kernel_shape=[k, k],
                         strides=[stride, stride], pads=[k // 2] * 4, group=groups)

    def dense(self, x, n_in, n_out):
        w = self.rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)
        y = self.node("MatMul", [x, self.constant(w)])
        return self.node("Add", [y, self.constant(self.rng.standard_normal(n_out) * 0.05)])

    def classifier(self, x, channels):
        x = self.node("Flatten", [self.node("GlobalAveragePool", [x])])
        w = self.rng.standard_normal((1000, channels)) / np.sqrt(channels)
        return self.node("Gemm", [x, self.constant(w), self.constant(np.zeros(1000))], transB=1)

    def save(self, path, input_shape, output, output_shape):
        graph = helper.make_graph(self.nodes, os.path.basename(path), [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, input_shape)
        ], [helper.make_tensor_value_info(output, TensorProto.FLOAT, output_shape)], self.weights)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        onnx.checker.check_model(model)
        onnx.save(model, path)


def resnet18(path):
    g = Graph(18)
    x = g.node("Relu", [g.conv("x", 3, 64, 7, 2)])
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = 64
    for width, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        for block in range(2):
            s = stride if block == 0 else 1
            y = g.conv(g.node("Relu", [g.conv(x, channels, width, 3, s)]), width, width, 3)
            shortcut = x if s == 1 and channels == width else g.conv(x, channels, width, 1, s)
            x = g.node("Relu", [g.node("Add", [y, shortcut])])
            channels = width
    g.save(path, [1, 3, 224, 224], g.classifier(x, channels), [1, 1000])


def mobilenet_v2(path):
    g = Graph(2)
    lo, hi = g.constant(0.0), g.constant(6.0)

    def relu6(t):
        return g.node("Clip", [t, lo, hi])

    x = relu6(g.conv("x", 3, 32, 3, 2))
    channels = 32
    # expansion, output channels, repeats, first stride
    for expand, width, repeats, stride in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                                           (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(repeats):
            s = stride if i == 0 else 1
            hidden = channels * expand
            y = relu6(g.conv(x, channels, hidden, 1)) if expand != 1 else x
            y = relu6(g.conv(y, hidden, hidden, 3, s, groups=hidden))
            y = g.conv(y, hidden, width, 1)
            x = g.node("Add", [y, x]) if s == 1 and channels == width else y
            channels = width
    x = relu6(g.conv(x, channels, 1280, 1))
    g.save(path, [1, 3, 224, 224], g.classifier(x, 1280), [1, 1000])


def efficientnet_b0(path):
    g = Graph(7)

    def swish(t):
        return g.node("Mul", [t, g.node("Sigmoid", [t])])

    x = swish(g.conv("x", 3, 32, 3, 2))
    channels = 32
    # expansion, output channels, repeats, first stride, kernel
    for expand, width, repeats, stride, k in [(1, 16, 1, 1, 3), (6, 24, 2, 2, 3), (6, 40, 2, 2, 5), (6, 80, 3, 2, 3),
                                              (6, 112, 3, 1, 5), (6, 192, 4, 2, 5), (6, 320, 1, 1, 3)]:
        for i in range(repeats):
            s = stride if i == 0 else 1
            hidden = channels * expand
            y = swish(g.conv(x, channels, hidden, 1)) if expand != 1 else x
            y = swish(g.conv(y, hidden, hidden, k, s, groups=hidden))
            # Squeeze and excitation: a channel gate from the mean of each channel.
            squeeze = max(1, channels // 4)
            gate = swish(g.conv(g.node("GlobalAveragePool", [y]), hidden, squeeze, 1))
            y = g.node("Mul", [y, g.node("Sigmoid", [g.conv(gate, squeeze, hidden, 1)])])
            y = g.conv(y, hidden, width, 1)
            x = g.node("Add", [y, x]) if s == 1 and channels == width else y
            channels = width
    x = swish(g.conv(x, channels, 1280, 1))
    g.save(path, [1, 3, 224, 224], g.classifier(x, 1280), [1, 1000])


def bert_layers(path, layers=2, tokens=128, features=768, heads=12):
    g = Graph(12)
    head = features // heads
    split = g.constant([1, tokens, heads, head], np.int64)
    merge = g.constant([1, tokens, features], np.int64)

    def layer_norm(t):
        scale = 1 + 0.1 * g.rng.standard_normal(features)
        return g.node("LayerNormalization", [t, g.constant(scale), g.constant(0.1 * g.rng.standard_normal(features))],
                      axis=-1, epsilon=1e-12)

    def gelu(t):  # 0.5 x (1 + erf(x / sqrt(2))), as BERT's exports write it
        erf = g.node("Erf", [g.node("Div", [t, g.constant(np.sqrt(2.0))])])
        return g.node("Mul", [g.node("Mul", [t, g.constant(0.5)]), g.node("Add", [erf, g.constant(1.0)])])

    def heads_of(t, perm):
        return g.node("Transpose", [g.node("Reshape", [t, split])], perm=perm)

    x = "x"
    for _ in range(layers):
        q = heads_of(g.dense(x, features, features), [0, 2, 1, 3])
        k = heads_of(g.dense(x, features, features), [0, 2, 3, 1])
        v = heads_of(g.dense(x, features, features), [0, 2, 1, 3])
        scores = g.node("Mul", [g.node("MatMul", [q, k]), g.constant(1 / np.sqrt(head))])
        context = g.node("MatMul", [g.node("Softmax", [scores], axis=-1), v])
        context = g.node("Reshape", [g.node("Transpose", [context], perm=[0, 2, 1, 3]), merge])
        x = layer_norm(g.node("Add", [x, g.dense(context, features, features)]))
        hidden = gelu(g.dense(x, features, 4 * features))
        x = layer_norm(g.node("Add", [x, g.dense(hidden, 4 * features, features)]))
    g.save(path, [1, tokens, features], x, [1, tokens, features])


def odd_shapes_cnn(path):
    """A CNN whose every extent is awkward (prime channel counts and widths,
    a stride-2 conv on 3 channels, depthwise 3x3/2 and 5x5, an upsampling
    2x2 / 2 transposed conv, 997 classes): no tile of whole vectors divides
    them, so a schedule that only takes divisors computes them a lane or a
    row at a time."""
    g = Graph(13)
    x = g.node("Relu", [g.conv("x", 3, 37, 3, stride=2)])         # 58x59
    x = g.node("Relu", [g.conv(x, 37, 53, 3)])
    x = g.node("Relu", [g.conv(x, 53, 53, 3, stride=2, groups=53)])  # 29x30
    x = g.node("Relu", [g.conv(x, 53, 71, 1)])
    x = g.node("Relu", [g.conv(x, 71, 71, 5, groups=71)])
    x = g.node("Relu", [g.conv(x, 71, 101, 1)])
    w = g.rng.standard_normal((101, 13, 2, 2)) / np.sqrt(101)
    x = g.node("Sigmoid", [g.node("ConvTranspose", [x, g.constant(w)], strides=[2, 2])])  # 58x60
    x = g.node("MaxPool", [g.conv(x, 13, 41, 3)], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    w = g.rng.standard_normal((997, 41)) / np.sqrt(41)
    x = g.node("Gemm", [g.node("Flatten", [g.node("GlobalAveragePool", [x])]), g.constant(w),
                        g.constant(np.zeros(997))], transB=1)
    g.save(path, [1, 3, 115, 117], x, [1, 997])


def crnn_bilstm(path, hidden=128, classes=97):
    """A CRNN text recognizer (the classic OCR head): a conv stem to a row of
    80 feature columns, two bidirectional LSTM layers of 128 over them, and
    a classifier per column, as recognizers before attention-based ones
    were exported."""
    g = Graph(17)
    x = g.node("Relu", [g.conv("x", 3, 32, 3, stride=2)])    # 16x160
    x = g.node("Relu", [g.conv(x, 32, 64, 3, stride=2)])     # 8x80
    x = g.node("Relu", [g.conv(x, 64, 128, 3)])
    x = g.node("MaxPool", [x], kernel_shape=[8, 1], strides=[8, 1])  # 1x80
    x = g.node("Reshape", [x, g.constant([1, 128, 80], np.int64)])
    x = g.node("Transpose", [x], perm=[2, 0, 1])           # (80, 1, 128): steps, batch, features
    features = 128
    for _ in range(2):
        w = g.rng.standard_normal((2, 4 * hidden, features)) / np.sqrt(features)
        r = g.rng.standard_normal((2, 4 * hidden, hidden)) / np.sqrt(hidden)
        b = g.rng.standard_normal((2, 8 * hidden)) * 0.05
        y = g.fresh("lstm")
        g.nodes.append(helper.make_node("LSTM", [x, g.constant(w), g.constant(r), g.constant(b)], [y],
                                        hidden_size=hidden, direction="bidirectional"))
        x = g.node("Transpose", [y], perm=[0, 2, 1, 3])    # (80, 1, 2, hidden)
        x = g.node("Reshape", [x, g.constant([80, 1, 2 * hidden], np.int64)])
        features = 2 * hidden
    x = g.node("Reshape", [x, g.constant([80, features], np.int64)])
    x = g.node("Softmax", [g.dense(x, features, classes)], axis=-1)
    g.save(path, [1, 3, 32, 320], x, [80, classes])


def unet3d(path):
    """A small 3-D U-Net for volumes (medical segmentation's shape): two
    levels of 3x3x3 convs, a 2x2x2 max pool, a 2x2x2 / 2 transposed conv
    back up, the skip concatenated, two classes per voxel."""
    g = Graph(19)

    def conv3d(x, cin, cout, k=3):
        w = g.rng.standard_normal((cout, cin, k, k, k)) * np.sqrt(2.0 / (cin * k ** 3))
        b = g.rng.standard_normal(cout) * 0.05
        return g.node("Conv", [x, g.constant(w), g.constant(b)], kernel_shape=[k] * 3, pads=[k // 2] * 6)

    skip = g.node("Relu", [conv3d(g.node("Relu", [conv3d("x", 1, 16)]), 16, 16)])   # 16x64x64
    x = g.node("MaxPool", [skip], kernel_shape=[2, 2, 2], strides=[2, 2, 2])         # 8x32x32
    x = g.node("Relu", [conv3d(g.node("Relu", [conv3d(x, 16, 32)]), 32, 32)])
    w = g.rng.standard_normal((32, 16, 2, 2, 2)) / np.sqrt(32)
    x = g.node("ConvTranspose", [x, g.constant(w)], kernel_shape=[2, 2, 2], strides=[2, 2, 2])
    x = g.node("Concat", [x, skip], axis=1)                                           # 32 channels
    x = g.node("Relu", [conv3d(x, 32, 16)])
    g.save(path, [1, 1, 16, 64, 64], conv3d(x, 16, 2, k=1), [1, 2, 16, 64, 64])


def float16_copy(src, dst):
    """The model at `src` with its weights, input and output in float16, as
    an export in half precision writes it (every op then runs on float16)."""
    model = onnx.load(src)
    g = model.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT:
            g.initializer[i].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    for v in list(g.input) + list(g.output) + list(g.value_info):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    onnx.checker.check_model(model)
    onnx.save(model, dst)


class ModelEdit:
    """A copy of the model at `src` being rewritten node by node: `nodes`
    collects the new graph's nodes, `const` and `node` add constants and
    nodes of fresh names, and `save` writes it with the initializers it
    still reads."""

    def __init__(self, src, prefix):
        self.model = onnx.load(src)
        self.weights = {t.name: numpy_helper.to_array(t) for t in self.model.graph.initializer}
        self.added, self.nodes, self.count, self.prefix = [], [], 0, prefix

    def fresh(self, what):
        self.count += 1
        return f"{self.prefix}_{what}_{self.count}"

    def const(self, value):
        name = self.fresh("const")
        self.added.append(numpy_helper.from_array(value, name))
        return name

    def node(self, op, inputs, **attrs):
        out = self.fresh(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def save(self, dst):
        g = self.model.graph
        used = {i for n in self.nodes for i in n.input}
        kept = [t for t in g.initializer if t.name in used]
        del g.node[:]
        g.node.extend(self.nodes)
        del g.initializer[:]
        g.initializer.extend(kept + self.added)
        onnx.checker.check_model(self.model)
        onnx.save(self.model, dst)


def quantized_copy(src, dst, activation_scale=0.1):
    """The model at `src` in ONNX's QDQ form, as a post-training quantizer
    writes it for ONNX Runtime: each Conv and Gemm reads its input through
    QuantizeLinear and DequantizeLinear (uint8, zero point 128), its weight
    as int8 dequantized per output channel (symmetric, the largest magnitude
    at 127) and its bias as int32 at the product's scale, and its result is
    quantized and dequantized again. ONNX Runtime runs each such conv as one
    integer kernel (QLinearConv)."""
    e = ModelEdit(src, "q")
    scale, zero = e.const(np.array(activation_scale, np.float32)), e.const(np.array(128, np.uint8))

    def fake_quant(x):
        return e.node("DequantizeLinear", [e.node("QuantizeLinear", [x, scale, zero]), scale, zero])

    for n in e.model.graph.node:
        if n.op_type not in ("Conv", "Gemm"):
            e.nodes.append(n)
            continue
        w = e.weights[n.input[1]].astype(np.float32)
        w_scale = (np.abs(w).reshape(len(w), -1).max(axis=1) / 127).astype(np.float32)
        w_int = np.round(w / w_scale.reshape([-1] + [1] * (w.ndim - 1))).astype(np.int8)
        inputs = [fake_quant(n.input[0]),
                  e.node("DequantizeLinear", [e.const(w_int), e.const(w_scale), e.const(np.zeros(len(w), np.int8))],
                         axis=0)]
        if len(n.input) > 2:
            b_scale = (w_scale * activation_scale).astype(np.float32)
            b_int = np.round(e.weights[n.input[2]] / b_scale).astype(np.int32)
            inputs.append(e.node("DequantizeLinear",
                                 [e.const(b_int), e.const(b_scale), e.const(np.zeros(len(w), np.int32))], axis=0))
        conv = helper.make_node(n.op_type, inputs, [n.output[0] + "_float"], name=n.name)
        conv.attribute.extend(n.attribute)
        e.nodes.append(conv)
        q = e.node("QuantizeLinear", [conv.output[0], scale, zero])
        e.nodes.append(helper.make_node("DequantizeLinear", [q, scale, zero], [n.output[0]]))
    e.save(dst)


def dynamic_quantized_copy(src, dst):
    """The model at `src` quantized dynamically, as ONNX Runtime's
    quantize_dynamic writes it: each MatMul by a constant weight reads its
    input through DynamicQuantizeLinear (uint8, scale and zero point from the
    input's range at run time) and its weight as int8 (symmetric, per tensor,
    the largest magnitude at 127); MatMulInteger multiplies them into int32,
    and a Cast and a Mul by the two scales' product give float32 again."""
    e = ModelEdit(src, "d")
    for n in e.model.graph.node:
        if n.op_type != "MatMul" or n.input[1] not in e.weights:
            e.nodes.append(n)
            continue
        w = e.weights[n.input[1]].astype(np.float32)
        w_scale = np.float32(np.abs(w).max() / 127)
        w_int = np.round(w / w_scale).astype(np.int8)
        xq, xs, xz = e.fresh("x_q"), e.fresh("x_scale"), e.fresh("x_zero")
        e.nodes.append(helper.make_node("DynamicQuantizeLinear", [n.input[0]], [xq, xs, xz]))
        acc = e.node("MatMulInteger", [xq, e.const(w_int), xz, e.const(np.array(0, np.int8))])
        scale = e.node("Mul", [xs, e.const(np.array(w_scale, np.float32))])
        e.nodes.append(helper.make_node("Mul", [e.node("Cast", [acc], to=TensorProto.FLOAT), scale], [n.output[0]]))
    e.save(dst)


def qdq_products_copy(src, dst, activation_scale=0.05):
    """The model at `src` with its products by constant weights in ONNX's
    QDQ form, as static quantization writes a transformer: each MatMul by a
    constant reads its input through QuantizeLinear and DequantizeLinear
    (uint8, zero point 128) and its weight as int8 dequantized per output
    column (symmetric, each column's largest magnitude at 127)."""
    e = ModelEdit(src, "s")
    scale, zero = e.const(np.array(activation_scale, np.float32)), e.const(np.array(128, np.uint8))
    for n in e.model.graph.node:
        if n.op_type != "MatMul" or n.input[1] not in e.weights:
            e.nodes.append(n)
            continue
        w = e.weights[n.input[1]].astype(np.float32)
        w_scale = (np.abs(w).max(axis=0) / 127).astype(np.float32)
        w_int = np.round(w / w_scale).astype(np.int8)
        x = e.node("DequantizeLinear", [e.node("QuantizeLinear", [n.input[0], scale, zero]), scale, zero])
        wq = e.node("DequantizeLinear", [e.const(w_int), e.const(w_scale), e.const(np.zeros(w.shape[1], np.int8))],
                    axis=1)
        e.nodes.append(helper.make_node("MatMul", [x, wq], [n.output[0]]))
    e.save(dst)


def qlinear_copy(src, dst, activation_scale=0.1):
    """The model at `src` with each Conv in ONNX's operator form of
    quantization (QOperator): QuantizeLinear of its input (uint8, zero point
    128), one QLinearConv of it by the int8 weight (symmetric per output
    channel, the largest magnitude at 127) with its int32 bias, requantized
    to uint8 at the same scale, and DequantizeLinear after it; what is not a
    conv (the residual Adds, the pools, the Gemm) stays float32, as a
    converter limited to the standard domain writes it."""
    e = ModelEdit(src, "l")
    scale, zero = e.const(np.array(activation_scale, np.float32)), e.const(np.array(128, np.uint8))
    for n in e.model.graph.node:
        if n.op_type != "Conv":
            e.nodes.append(n)
            continue
        w = e.weights[n.input[1]].astype(np.float32)
        w_scale = (np.abs(w).reshape(len(w), -1).max(axis=1) / 127).astype(np.float32)
        w_int = np.round(w / w_scale.reshape(-1, 1, 1, 1)).astype(np.int8)
        inputs = [e.node("QuantizeLinear", [n.input[0], scale, zero]), scale, zero, e.const(w_int),
                  e.const(w_scale), e.const(np.zeros(len(w), np.int8)), scale, zero]
        if len(n.input) > 2:
            inputs.append(e.const(np.round(e.weights[n.input[2]] / (w_scale * activation_scale)).astype(np.int32)))
        conv = helper.make_node("QLinearConv", inputs, [n.output[0] + "_q"], name=n.name)
        conv.attribute.extend(n.attribute)
        e.nodes.append(conv)
        e.nodes.append(helper.make_node("DequantizeLinear", [conv.output[0], scale, zero], [n.output[0]]))
    e.save(dst)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_models.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    resnet18(os.path.join(out, "resnet18.onnx"))
    mobilenet_v2(os.path.join(out, "mobilenet_v2.onnx"))
    efficientnet_b0(os.path.join(out, "efficientnet_b0.onnx"))
    bert_layers(os.path.join(out, "bert_base_2_layers.onnx"))
    odd_shapes_cnn(os.path.join(out, "odd_shapes_cnn.onnx"))
    # An encoder layer of odd extents: 77 tokens, 388 features, heads of 97.
    bert_layers(os.path.join(out, "odd_shapes_encoder.onnx"), layers=1, tokens=77, features=388, heads=4)
    crnn_bilstm(os.path.join(out, "crnn_bilstm.onnx"))
    unet3d(os.path.join(out, "unet3d.onnx"))
    for name in ["resnet18", "mobilenet_v2"]:
        float16_copy(os.path.join(out, name + ".onnx"), os.path.join(out, name + "_float16.onnx"))
    quantized_copy(os.path.join(out, "resnet18.onnx"), os.path.join(out, "resnet18_int8.onnx"))
    qlinear_copy(os.path.join(out, "resnet18.onnx"), os.path.join(out, "resnet18_qlinear.onnx"))
    dynamic_quantized_copy(os.path.join(out, "bert_base_2_layers.onnx"), os.path.join(out, "bert_base_2_layers_int8.onnx"))
    qdq_products_copy(os.path.join(out, "bert_base_2_layers.onnx"), os.path.join(out, "bert_base_2_layers_qdq.onnx"))


if __name__ == "__main__":
    main()
