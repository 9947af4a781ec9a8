// kernels.js: lib.kernels, the building blocks exposed for tests and benchmarks
// (matmul in three layouts, row softmax, vectorised exp), each with its reference twin.
import { checkBool, checkF32, checkKeys, checkSize, fail } from './core.js';

export function kernelMethods(core) {
  const kernels = {
    /**
     * C (M x N) = op(A) op(B). transB: B stored (N x K); transA: A stored (K x M).
     * reference: the naive double-accumulating loop.
     */
    matmul(a, b, opts) {
      const what = 'kernels.matmul';
      checkKeys(what, opts, ['M', 'N', 'K', 'transA', 'transB', 'reference']);
      const M = checkSize(`${what}: M`, opts.M), N = checkSize(`${what}: N`, opts.N), K = checkSize(`${what}: K`, opts.K);
      const transA = checkBool(`${what}: transA`, opts.transA !== undefined ? opts.transA : false);
      const transB = checkBool(`${what}: transB`, opts.transB !== undefined ? opts.transB : false);
      if (transA && transB) fail(`${what}: transA and transB together are not offered`);
      checkF32(`${what}: a`, a, M * K, `M*K = ${M}*${K}`, { scan: false });
      checkF32(`${what}: b`, b, K * N, `K*N = ${K}*${N}`, { scan: false });
      const variant = transB ? 1 : transA ? 2 : 0;
      const ref = checkBool(`${what}: reference`, opts.reference !== undefined ? opts.reference : false);
      return core.withBuffers(what, [
        { name: 'c', bytes: M * N * 4 },
        { name: 'a', bytes: M * K * 4, from: a, finite: true },
        { name: 'b', bytes: K * N * 4, from: b, finite: true },
      ], ([pc, pa, pb]) => {
        core.check(core.exports.aw_matmul(pc, pa, pb, M, N, K, variant, ref ? 1 : 0), what);
        return core.readF32(pc, M * N);
      });
    },

    /** Row softmax of x (rows x cols); -Infinity entries are masked. */
    softmax(x, rows, cols, { reference = false } = {}) {
      const what = 'kernels.softmax';
      checkSize(`${what}: rows`, rows);
      checkSize(`${what}: cols`, cols);
      if (!(x instanceof Float32Array) || x.length !== rows * cols)
        fail(`${what}: x must be a Float32Array of rows*cols = ${rows * cols} values`);
      for (let i = 0; i < x.length; i++)
        if (Number.isNaN(x[i]) || x[i] === Infinity) fail(`${what}: x[${i}] is ${x[i]}; only -Infinity (masked) is allowed`);
      return core.withBuffers(what, [{ name: 'x', bytes: x.length * 4, from: x }], ([p]) => {
        core.check(core.exports.aw_softmax(p, rows, cols, reference ? 1 : 0), what);
        return core.readF32(p, x.length);
      });
    },

    /** The vectorised exp used inside softmax (exact 0 at and below -87). */
    exp(x) {
      const what = 'kernels.exp';
      if (!(x instanceof Float32Array) || x.length === 0) fail(`${what}: x must be a non-empty Float32Array`);
      return core.withBuffers(what, [
        { name: 'y', bytes: x.length * 4 },
        { name: 'x', bytes: x.length * 4, from: x },
      ], ([py, px]) => {
        core.check(core.exports.aw_exp_vec(py, px, x.length), what);
        return core.readF32(py, x.length);
      });
    },
  };
  return { kernels };
}
