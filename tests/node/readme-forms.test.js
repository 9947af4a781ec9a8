// readme-forms.test.js: the README's table of forms lists every form of the registry (lib.forms), in
// its order, with its cost, modes and paper as the C descriptors give them: a form added in C needs
// its row, and a row cannot outlive its form.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { builds } from './helpers.js';

test('README: the forms table is lib.forms', () => {
  const { lib } = builds[0];
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const rows = [...readme.matchAll(/^\| `([^`]+)` \| (.*) \| (.*) \| (.*) \| \[(.*)\]\((.*)\) \|$/gm)];
  assert.deepEqual(rows.map((r) => r[1]), lib.forms.map((f) => f.name));
  for (const [, name, , cost, modes, cite, url] of rows) {
    const f = lib.forms.find((x) => x.name === name);
    assert.equal(cost, f.cost, name);
    assert.equal(modes, (f.causal ? (f.nonCausal ? 'both' : 'causal') : 'non-causal') + (f.step ? ', step' : ''), name);
    assert.equal(url, f.paper.url, name);
    assert.ok(f.paper.cite.startsWith(cite), `${name}: ${cite}`);
  }
});
