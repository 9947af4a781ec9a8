// onnx.js: builds small ONNX models in memory (a minimal protobuf writer for the few ONNX
// messages a graph of float32 ops needs), and wraps onnxruntime-web's wasm backend with one
// thread. Nothing is downloaded: ort finds its .wasm next to its own .mjs in node_modules.
// Field numbers follow onnx/onnx.proto (ModelProto, GraphProto, NodeProto, AttributeProto,
// ValueInfoProto, TypeProto, TensorShapeProto, OperatorSetIdProto).
import * as ort from 'onnxruntime-web';

// ---- protobuf wire format: varint (0) and length-delimited (2) fields, fixed32 (5) ----------
const utf8 = new TextEncoder();

function varint(n) {
  const out = [];
  let v = BigInt(n);
  if (v < 0n) v += 1n << 64n; // int64 two's complement
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return out;
}

class Msg {
  constructor() {
    this.bytes = [];
  }

  int(field, value) {
    this.bytes.push(...varint((field << 3) | 0), ...varint(value));
    return this;
  }

  float(field, value) {
    const b = new Uint8Array(new Float32Array([value]).buffer);
    this.bytes.push(...varint((field << 3) | 5), ...b);
    return this;
  }

  raw(field, u8) {
    this.bytes.push(...varint((field << 3) | 2), ...varint(u8.length));
    for (let i = 0; i < u8.length; i++) this.bytes.push(u8[i]);
    return this;
  }

  str(field, s) {
    return this.raw(field, utf8.encode(s));
  }

  msg(field, m) {
    return this.raw(field, m.bytes);
  }

  done() {
    return Uint8Array.from(this.bytes);
  }
}

const FLOAT = 1; // TensorProto.DataType.FLOAT
const ATTR = { FLOAT: 1, INT: 2, STRING: 3, INTS: 7 };
const INT64 = 7; // TensorProto.DataType.INT64

// ValueInfoProto for a float32 tensor of fixed shape.
function valueInfo(name, dims) {
  const shape = new Msg();
  for (const d of dims) shape.msg(1, new Msg().int(1, d)); // Dimension.dim_value
  const tensorType = new Msg().int(1, FLOAT).msg(2, shape); // elem_type, shape
  return new Msg().str(1, name).msg(2, new Msg().msg(1, tensorType)); // name, type.tensor_type
}

function attribute(name, value) {
  const a = new Msg().str(1, name);
  if (typeof value === 'string') return a.raw(4, utf8.encode(value)).int(20, ATTR.STRING);
  if (Array.isArray(value)) { // a list of ints (Transpose's perm)
    for (const x of value) a.int(8, x);
    return a.int(20, ATTR.INTS);
  }
  if (Number.isInteger(value) && !Object.is(value, -0)) return a.int(3, value).int(20, ATTR.INT);
  return a.float(2, value).int(20, ATTR.FLOAT);
}

// TensorProto holding float32 values (dims [] for a scalar), or int64 ones (Reshape's shape).
function tensor(name, dims, values, type = 'float32') {
  const t = new Msg();
  for (const d of dims) t.int(1, d);
  t.int(2, type === 'int64' ? INT64 : FLOAT).str(8, name);
  const bytes = type === 'int64' ? BigInt64Array.from(values, BigInt).buffer : Float32Array.from(values).buffer;
  return t.raw(9, new Uint8Array(bytes));
}

/**
 * An ONNX model: inputs and outputs are { name: dims }, nodes are
 * { op, inputs, outputs, domain?, attrs?: { name: int | float | string } }. Floats that happen to
 * be integers must be passed as { float: x } to keep their type; an array is a list of ints.
 * initializers: { name: [dims, values, type?] } (type 'float32', the default, or 'int64').
 */
export function buildModel({ inputs, outputs, nodes, initializers = {}, opset = 17, msOpset = 1 }) {
  const graph = new Msg();
  nodes.forEach((n, i) => {
    const node = new Msg();
    for (const x of n.inputs) node.str(1, x);
    for (const y of n.outputs) node.str(2, y);
    node.str(3, `${n.op}_${i}`).str(4, n.op);
    for (const [k, v] of Object.entries(n.attrs ?? {}))
      node.msg(5, typeof v === 'object' && !Array.isArray(v) ? new Msg().str(1, k).float(2, v.float).int(20, ATTR.FLOAT) : attribute(k, v));
    if (n.domain) node.str(7, n.domain);
    graph.msg(1, node);
  });
  graph.str(2, 'g');
  for (const [name, [dims, values, type]] of Object.entries(initializers)) graph.msg(5, tensor(name, dims, values, type));
  for (const [name, dims] of Object.entries(inputs)) graph.msg(11, valueInfo(name, dims));
  for (const [name, dims] of Object.entries(outputs)) graph.msg(12, valueInfo(name, dims));
  const model = new Msg().int(1, 8).str(2, 'attention-wasm-bench'); // ir_version 8
  model.msg(8, new Msg().str(1, '').int(2, opset));
  model.msg(8, new Msg().str(1, 'com.microsoft').int(2, msOpset));
  model.msg(7, graph);
  return model.done();
}

let configured = false;

/** One-thread, SIMD wasm backend; call before the first session. */
export function configureOrt() {
  if (configured) return ort;
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.simd = true; // ignored by newer builds (always SIMD), kept for older ones
  ort.env.wasm.proxy = false;
  ort.env.logLevel = 'error';
  configured = true;
  return ort;
}

/**
 * Creates a session for `model` (bytes) and returns an async function feeds -> Float32Array of
 * the first output. feeds: { name: [Float32Array, dims] }. Each call wraps the arrays in
 * ort.Tensor (ort copies them into its heap, as our API does) and reads the output back.
 */
export async function ortSession(model) {
  configureOrt();
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['wasm'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
  });
  const outName = session.outputNames[0];
  const run = async (feeds) => {
    const t = {};
    for (const [name, [data, dims]] of Object.entries(feeds)) t[name] = new ort.Tensor('float32', data, dims);
    const res = await session.run(t);
    const out = res[outName];
    const data = out.data; // a Float32Array owned by JS (the wasm backend copies it out)
    out.dispose?.();
    return data;
  };
  run.session = session;
  return run;
}

export { ort };
