// Runs an ONNX model on ONNX Runtime (onnxruntime-node), one thread unless
// --threads says otherwise, and
// writes its outputs as .npy files: the peer that kiln's results and speed
// are compared with.
//
//   node ort_run.js MODEL.onnx OUT_DIR NAME=SHAPE [--seed S] [--repeat N] [--threads T] [--float16]
//
// SHAPE is 1x3x48x320. The input is deterministic (a fixed-seed generator,
// values in [0, 1) like a normalised image, shifted to [-1, 1)) and written
// to OUT_DIR/input.npy so kiln runs on exactly the same bytes (rounded to
// float16 for a model whose input is float16, --float16). Outputs go to
// OUT_DIR/output_<i>.npy in the model's output order. The last line printed
// is JSON: {"model":..., "ort_ms": median latency, "session_ms": the time
// InferenceSession.create took, "outputs": [...]}.
'use strict';
const fs = require('fs');
const path = require('path');

// A float32 value as the bits of the nearest float16 (ties to even;
// overflow to infinity, NaN stays NaN).
function float16Bits(value) {
  const f = new Float32Array([value]);
  const u = new Uint32Array(f.buffer)[0];
  const sign = (u >>> 16) & 0x8000, exp = (u >>> 23) & 0xff, mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const m = mant | 0x800000, shift = 14 - e;
    let h = m >>> shift;
    const rest = m & ((1 << shift) - 1), half = 1 << (shift - 1);
    if (rest > half || (rest === half && (h & 1))) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h++;
  return sign | h;
}

// A .npy file of float32 data, or of float16 bits (a Uint16Array).
function npyBytes(shape, data) {
  const shapeStr = '(' + shape.join(', ') + (shape.length === 1 ? ',' : '') + ')';
  const descr = data instanceof Uint16Array ? '<f2' : '<f4';
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeStr}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.concat([pre, Buffer.from(header, 'latin1'), body]);
}

function main() {
  const args = process.argv.slice(2);
  let seed = 1, repeat = 5, threads = 1, half = false;
  const pos = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--seed') seed = Number(args[++i]);
    else if (args[i] === '--repeat') repeat = Number(args[++i]);
    else if (args[i] === '--threads') threads = Number(args[++i]);
    else if (args[i] === '--float16') half = true;
    else pos.push(args[i]);
  }
  if (pos.length !== 3) {
    console.error('usage: node ort_run.js MODEL.onnx OUT_DIR NAME=SHAPE [--seed S] [--repeat N]');
    process.exit(2);
  }
  const [model, outDir, spec] = pos;
  const [name, shapeText] = spec.split('=');
  const shape = shapeText.split('x').map(Number);
  const ortDir = process.env.ORT_NODE_MODULES;
  const ort = require(ortDir ? path.join(ortDir, 'onnxruntime-node') : 'onnxruntime-node');

  // A linear congruential generator: the same bytes on every machine.
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  let state = BigInt(seed);
  const rand = () => {
    state = (state * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    return Number(state >> 40n) / 16777216;
  };
  // A synthetic document: a light, slightly noisy page with rows of dark
  // "characters" (random on/off cells with strokes), so detection and
  // recognition see text-like structure rather than noise alone.
  const [H, W] = [shape[shape.length - 2], shape[shape.length - 1]];
  const cells = new Map();
  for (let i = 0; i < n; i++) {
    const x = i % W, y = Math.floor(i / W) % H;
    const rowBand = y % 40, cell = `${Math.floor(y / 40)},${Math.floor(x / 12)}`;
    if (!cells.has(cell)) cells.set(cell, rand() < 0.6);
    const ink = rowBand >= 12 && rowBand < 30 && x % 12 < 9 && cells.get(cell) && (x + y) % 5 < 2;
    data[i] = (ink ? -0.9 : 0.9) + (rand() - 0.5) * 0.1;
  }
  // A float16 model (--float16) takes the same values rounded to float16.
  const input = half ? Uint16Array.from(data, float16Bits) : data;
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'input.npy'), npyBytes(shape, input));

  (async () => {
    const created = process.hrtime.bigint();
    const session = await ort.InferenceSession.create(model, {
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
    });
    const sessionMs = Number(process.hrtime.bigint() - created) / 1e6;
    const feeds = { [name]: new ort.Tensor(half ? 'float16' : 'float32', input, shape) };
    let results;
    const times = [];
    for (let r = 0; r < Math.max(1, repeat); r++) {
      const t0 = process.hrtime.bigint();
      results = await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    times.sort((a, b) => a - b);
    const outputs = [];
    session.outputNames.forEach((o, i) => {
      const t = results[o];
      if (t.type !== 'float32' && t.type !== 'float16')
        throw new Error(`output ${o} has type ${t.type}; only float32 and float16 are compared`);
      // float16 data comes as its bits (a Uint16Array) or, where Node has
      // one, a Float16Array: written as the bits either way.
      const out = t.type === 'float16' ? new Uint16Array(t.data.buffer, t.data.byteOffset, t.data.length) : t.data;
      fs.writeFileSync(path.join(outDir, `output_${i}.npy`), npyBytes(t.dims, out));
      outputs.push({ name: o, shape: t.dims });
    });
    console.log(JSON.stringify({
      model: path.basename(model),
      ort_ms: times[Math.floor(times.length / 2)],
      session_ms: sessionMs,
      outputs,
    }));
  })().catch((e) => {
    console.error('ort_run.js: ' + e.message);
    process.exit(1);
  });
}

main();
