// A built-in task too long for the model (issue 45, item 3k): the error suggests the longest
// { length } that fits, and that length does fit (one more does not), for every task and shape.
import test from 'node:test';
import assert from 'node:assert/strict';
import { builds, expectError } from './helpers.js';

const { lib } = builds[0];

test('trainStep({ task: "copy" }) with maxLen 16 suggests { length: 8 }', () => {
  const m = lib.createModel({ vocab: 16, dModel: 8, heads: 2, layers: 1, dFF: 8, maxLen: 16, seed: 1 });
  // copy at length L on a decoder: L source tokens, a separator and L - 1 more inputs = 2L positions.
  expectError(() => m.trainStep({ task: 'copy' }), /needs 32 positions, more than maxLen = 16: pass \{ length: 8 \}/);
  m.trainStep({ task: 'copy', length: 8, batchSize: 2 });
  expectError(() => m.trainStep({ task: 'copy', length: 9 }), /pass \{ length: 8 \}/);
  m.dispose();
});

test('the suggested length fits and one more does not, for every task on a decoder and an encoder-decoder', () => {
  let checked = 0;
  for (const arch of ['decoder', 'encoder-decoder']) {
    for (const maxLen of [9, 16, 33]) {
      const m = lib.createModel({ vocab: 64, dModel: 8, heads: 2, layers: 1, dFF: 8, maxLen, arch, seed: 2 });
      for (const task of lib.tasks) {
        const opts = { task, length: 4000, symbols: task === 'recall' || task === 'mqar' ? 8192 : undefined };
        let message = '';
        try { m.example(opts); } catch (e) { message = e.message; }
        if (/language modelling|needs vocab|symbols must|length must be below/.test(message)) continue;
        assert.match(message, /more than maxLen/, `${arch} ${task} maxLen ${maxLen}: ${message}`);
        const hint = /pass \{ length: (\d+) \}/.exec(message);
        if (!hint) { assert.match(message, /no length fits: create the model with maxLen >= \d+/); continue; }
        const L = Number(hint[1]);
        assert.doesNotThrow(() => m.example({ ...opts, length: L }), `${arch} ${task} maxLen ${maxLen} length ${L}`);
        expectError(() => m.example({ ...opts, length: L + 1 }), /more than maxLen/);
        checked++;
      }
      m.dispose();
    }
  }
  assert.ok(checked >= 20, `checked ${checked} hints`);
});
