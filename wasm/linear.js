// linear.js: lib.linearAttention and lib.linearAttentionState, linear attention with four
// feature maps (docs/attention-forms.md section 2; C side: src/attention/linear_attention.c).
import { checkBool, checkF32, checkKeys, checkOneOf, checkSize, fail } from './core.js';
import { checkAttentionShapes, runAttention } from './softmax.js';

// Feature names in the order of enum aw_linear_feature.
const FEATURES = ['elu+1', 'relu', 'efficient', 'taylor'];
const MODES = ['parallel', 'recurrent']; // enum aw_linear_mode
const OPTIONS = ['q', 'k', 'v', 'n', 'm', 'd', 'dv', 'heads', 'feature', 'causal', 'mode', 'returnWeights', 'reference'];
const STATE_OPTIONS = ['d', 'dv', 'heads', 'feature'];

// Frees the C state of a decoding object that was garbage-collected without dispose().
const leaked = typeof FinalizationRegistry === 'function'
  ? new FinalizationRegistry(({ core, handle, scratch }) => {
    core.exports.aw_linear_state_destroy(handle);
    core.exports.free(scratch);
  })
  : null;

export function linearMethods(core) {
  return {
    /**
     * O_i = sum_j sim(q_i, k_j) v_j / sum_j sim(q_i, k_j), per head, in time linear in n.
     * Non-causal: S = phi(K)^T V and z are formed once; no n x m buffer unless returnWeights.
     * Causal: mode 'parallel' (chunked prefix sums) or 'recurrent' (the RNN form); same numbers.
     */
    linearAttention(opts) {
      const what = 'linearAttention';
      checkKeys(what, opts, OPTIONS);
      const feature = checkOneOf(`${what}: feature`, opts.feature !== undefined ? opts.feature : 'elu+1', FEATURES);
      const causal = checkBool(`${what}: causal`, opts.causal !== undefined ? opts.causal : false);
      const mode = checkOneOf(`${what}: mode`, opts.mode !== undefined ? opts.mode : 'parallel', MODES);
      const returnWeights = checkBool(`${what}: returnWeights`, opts.returnWeights !== undefined ? opts.returnWeights : false);
      const reference = checkBool(`${what}: reference`, opts.reference !== undefined ? opts.reference : false);
      const shapes = checkAttentionShapes(what, opts);
      const { n, m, d, dv, heads } = shapes;
      return runAttention(core, what, shapes, opts, returnWeights, (out, w, q, k, v) =>
        core.exports.aw_linear_attention(out, w, q, k, v, n, m, d, dv, heads, FEATURES.indexOf(feature), causal ? 1 : 0,
          MODES.indexOf(mode), reference ? 1 : 0)); // C names an overflow (the result is an Infinity) in its message
    },

    /**
     * Incremental causal decoding: a constant-size state (S, z per head) that step() advances by
     * one position, returning that position's output row in O(d dv) whatever the position.
     */
    linearAttentionState(opts) {
      const what = 'linearAttentionState';
      checkKeys(what, opts, STATE_OPTIONS);
      const d = checkSize(`${what}: d`, opts.d);
      const dv = checkSize(`${what}: dv`, opts.dv !== undefined ? opts.dv : d);
      const heads = checkSize(`${what}: heads`, opts.heads !== undefined ? opts.heads : 1);
      if (d % heads) fail(`${what}: d (${d}) must be divisible by heads (${heads})`);
      if (dv % heads) fail(`${what}: dv (${dv}) must be divisible by heads (${heads})`);
      const feature = checkOneOf(`${what}: feature`, opts.feature !== undefined ? opts.feature : 'elu+1', FEATURES);
      const ex = core.exports;
      // One scratch block for a step's q, k, v and output, kept for the state's lifetime.
      const scratchBytes = (2 * d + 2 * dv) * 4;
      const handle = ex.aw_linear_state_create(d, dv, heads, FEATURES.indexOf(feature));
      if (handle === 0) core.check(core.exports.aw_error_code() || 2, what); // C's status and message
      const scratch = ex.malloc(scratchBytes);
      if (scratch === 0) {
        ex.aw_linear_state_destroy(handle);
        fail(`${what}: out of memory: the wasm heap could not grow to hold the step buffers`);
      }
      const qp = scratch, kp = qp + d * 4, vp = kp + d * 4, outp = vp + dv * 4;
      const token = {}; // unregisters the finalizer on dispose()
      let live = true;
      const alive = (call) => {
        if (!live) fail(`${what}.${call}: this state was disposed; create a new one with lib.linearAttentionState()`);
      };
      const state = {
        d, dv, heads, feature,
        /** Adds k (d), v (dv) at the next position and returns that position's output (dv) for q (d). */
        step(q, k, v) {
          alive('step');
          const w = `${what}.step`;
          checkF32(`${w}: q`, q, d, `d = ${d}`);
          checkF32(`${w}: k`, k, d, `d = ${d}`);
          checkF32(`${w}: v`, v, dv, `dv = ${dv}`);
          const f32 = core.f32;
          f32.set(q, qp >> 2);
          f32.set(k, kp >> 2);
          f32.set(v, vp >> 2);
          const status = ex.aw_linear_state_step(outp, handle, qp, kp, vp);
          if (status === 5) fail(`${w}: the result overflowed float32 (an Infinity appeared); reset() the state`);
          core.check(status, w);
          return core.readF32(outp, dv);
        },
        /** Positions stepped since creation or the last reset(). */
        get position() {
          alive('position');
          return ex.aw_linear_state_position(handle);
        },
        /** Forgets every position: back to an empty sequence. */
        reset() {
          alive('reset');
          core.check(ex.aw_linear_state_reset(handle), `${what}.reset`);
        },
        /** Frees the wasm memory; any later use throws. Calling it twice is harmless. */
        dispose() {
          if (!live) return;
          live = false;
          leaked?.unregister(token);
          ex.aw_linear_state_destroy(handle);
          ex.free(scratch);
        },
      };
      leaked?.register(state, { core, handle, scratch }, token);
      return state;
    },
  };
}
