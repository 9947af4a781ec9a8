// local.js: lib.localAttention, softmax attention over a sliding window of keys
// (docs/attention-forms.md section 4; C side: src/attention/local_attention.c).
import { checkBool, checkFiniteNumber, checkKeys, checkSize } from './core.js';
import { checkAttentionShapes, runAttention } from './softmax.js';

const OPTIONS = ['q', 'k', 'v', 'n', 'm', 'd', 'dv', 'heads', 'window', 'stride', 'causal', 'scale', 'returnWeights', 'reference'];

export function localMethods(core) {
  return {
    /**
     * Per head, query i attends to keys in its band: the last `window` positions (causal, the
     * default) or window / 2 on each side, and with `stride` every stride-th key as well (strided
     * sparse attention); O(n (window + m / stride) d) time, no n x m buffer unless returnWeights
     * (then zero outside the pattern).
     */
    localAttention(opts) {
      const what = 'localAttention';
      checkKeys(what, opts, OPTIONS);
      const shapes = checkAttentionShapes(what, opts);
      const { n, m, d, dv, heads } = shapes;
      const window = checkSize(`${what}: window`, opts.window);
      const stride = opts.stride === undefined ? 0 : checkSize(`${what}: stride`, opts.stride);
      const causal = checkBool(`${what}: causal`, opts.causal !== undefined ? opts.causal : true);
      const returnWeights = checkBool(`${what}: returnWeights`, opts.returnWeights !== undefined ? opts.returnWeights : false);
      const reference = checkBool(`${what}: reference`, opts.reference !== undefined ? opts.reference : false);
      const scale = checkFiniteNumber(`${what}: scale`, opts.scale !== undefined ? opts.scale : 1 / Math.sqrt(d / heads));
      return runAttention(core, what, shapes, opts, returnWeights, (out, w, q, k, v) =>
        core.exports.aw_local_attention(out, w, q, k, v, n, m, d, dv, heads, window, stride, causal ? 1 : 0, scale,
          reference ? 1 : 0));
    },
  };
}
