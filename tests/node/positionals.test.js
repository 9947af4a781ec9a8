// positionals.test.js: lib.positionals, the C table of positional encodings (src/model/positional.c):
// it lists the five with their words and papers, a model made with each name runs, and any other
// name is an Error that lists the table's names.
import test from 'node:test';
import assert from 'node:assert/strict';
import { builds, expectError } from './helpers.js';

const small = { vocab: 12, dModel: 8, heads: 2, layers: 1, maxLen: 8, seed: 3 };

for (const { name: label, lib } of builds) {
  test(`lib.positionals lists the table's five encodings (${label})`, () => {
    assert.deepEqual(lib.positionals.map((p) => p.name), ['sinusoidal', 'learned', 'rope', 'alibi', 'none']);
    for (const p of lib.positionals) {
      for (const k of ['name', 'label', 'words', 'paper']) assert.ok(typeof p[k] === 'string' && p[k].length > 0, `${p.name}.${k}`);
      assert.ok(Object.isFrozen(p));
    }
    assert.ok(Object.isFrozen(lib.positionals));
  });

  test(`a model with each positional runs; any other name is refused (${label})`, () => {
    for (const { name } of lib.positionals) {
      const m = lib.createModel({ ...small, positional: name });
      assert.equal(m.config.positional, name);
      const { logits } = m.forward([1, 2, 3, 4]);
      assert.equal(logits.length, 4 * small.vocab);
      assert.ok(logits.every(Number.isFinite), name);
      assert.equal(lib.loadModel(m.save()).config.positional, name);
      m.free?.();
    }
    const list = lib.positionals.map((p) => `"${p.name}"`).join(', ');
    for (const bad of ['absolute', 'ROPE', ''])
      expectError(() => lib.createModel({ ...small, positional: bad }), new RegExp(`positional must be one of ${list.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  });
}
