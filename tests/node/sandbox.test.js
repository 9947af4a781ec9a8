// sandbox.test.js: the page's form list (lab/forms.js probeForms) holds every form of the registry,
// in both builds: a form the probe call refuses would vanish from every menu of the page without a
// word. The sandbox sets a form's own sizes (local's window) and never a switch that is off unless
// set (softmax's sliding window, which refuses the sandbox's non-causal call).
import test from 'node:test';
import assert from 'node:assert/strict';
import { builds } from './helpers.js';
import { probeForms, sandboxOptions } from '../../lab/forms.js';

for (const { name, lib } of builds) {
  test(`sandbox (${name}): the probe finds every form of lib.forms, each with its causal form when it has one`, () => {
    const { forms, skipped } = probeForms(lib);
    assert.deepEqual(skipped, []);
    assert.deepEqual(forms.map((f) => f.id), lib.forms.map((f) => f.name));
    for (const f of forms) assert.equal(f.causal, Boolean(f.entry.causal), f.id);
  });
}

test('sandbox: sizes only, no switches', () => {
  const { lib } = builds[0];
  const byName = (n) => lib.forms.find((f) => f.name === n);
  assert.deepEqual(sandboxOptions(byName('local')), { window: 4 });
  assert.deepEqual(sandboxOptions(byName('softmax')), {});
});
