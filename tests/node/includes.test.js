// includes.test.js: no circles between the C sources. Three graphs over src/: (1) `#include "..."`
// between files, (2) the same between modules, a .c and its own .h counted as one (x.c including
// y.h while y.c includes x.h is a circle, though no file includes itself), and (3) use between .c
// files: a.c uses b.c when a.c calls a function b.c defines (not static), i.e. what the linker
// joins. Any graph with a cycle fails, printing it: a file
// should sit below the files it uses (forms.c, the registry's table, calls nothing; the sublayer's
// lifecycle, which reads the options, is form_layer.c). AW_SCAN_ROOT scans another checkout.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = process.env.AW_SCAN_ROOT ?? fileURLToPath(new URL('../..', import.meta.url));

function sources(dir, out = []) {
  for (const e of readdirSync(dir, { withFileTypes: true }))
    if (e.isDirectory()) sources(join(dir, e.name), out);
    else if (/\.[ch]$/.test(e.name)) out.push(join(dir, e.name));
  return out;
}

// Comments and string literals out, so neither a commented call nor a message is read as code.
const code = (s) => s.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '').replace(/"(\\.|[^"\\\n])*"/g, '""');

/** The cycles of a graph (Map node -> Set of nodes): each strongly connected part of 2 or more, as a path. */
function cycles(graph) {
  let next = 0;
  const index = new Map(), low = new Map(), stack = [], on = new Set(), out = [];
  const visit = (v) => {
    index.set(v, next), low.set(v, next++), stack.push(v), on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) visit(w), low.set(v, Math.min(low.get(v), low.get(w)));
      else if (on.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const part = [];
    let w;
    do (w = stack.pop()), on.delete(w), part.push(w); while (w !== v);
    if (part.length > 1 || graph.get(v)?.has(v)) out.push(part.reverse());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

const files = sources(join(ROOT, 'src'));
const name = (f) => relative(ROOT, f);
const print = (found) => found.map((c) => [...c, c[0]].map(name).join(' -> ')).join('\n');

test('no #include circle in src/', () => {
  const graph = new Map();
  for (const f of files) {
    const deps = new Set();
    for (const m of readFileSync(f, 'utf8').matchAll(/^\s*#\s*include\s+"([^"]+)"/gm)) deps.add(resolve(dirname(f), m[1]));
    graph.set(f, deps);
  }
  const found = cycles(graph);
  assert.equal(found.length, 0, `#include circles:\n${print(found)}`);
});

test('no #include circle between the modules of src/ (a .c with its own .h as one)', () => {
  const module = (f) => f.replace(/\.[ch]$/, '');
  const graph = new Map();
  for (const f of files) {
    const deps = graph.get(module(f)) ?? new Set();
    for (const m of readFileSync(f, 'utf8').matchAll(/^\s*#\s*include\s+"([^"]+)"/gm)) {
      const d = module(resolve(dirname(f), m[1]));
      if (d !== module(f)) deps.add(d);
    }
    graph.set(module(f), deps);
  }
  assert.ok(graph.get(module(join(ROOT, 'src/model/transformer.c')))?.size, 'the scan finds the modules\' includes');
  const found = cycles(graph);
  assert.equal(found.length, 0, `#include circles between modules (each includes the next's header, or its .c the next's):\n${print(found)}`);
});

test('no circle of use between the .c files of src/', () => {
  const text = new Map(files.filter((f) => f.endsWith('.c')).map((f) => [f, code(readFileSync(f, 'utf8'))]));
  const defines = new Map(); // function -> the file that defines it
  for (const [f, s] of text)
    for (const m of s.matchAll(/^(?!static\b)[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*\([^;{]*\)\s*\{/gm)) defines.set(m[1], f);
  assert.ok(defines.has('aw_form_at') && defines.has('model_create'), 'the scan finds the definitions');
  const graph = new Map();
  for (const [f, s] of text) {
    const deps = new Set();
    for (const m of s.matchAll(/\b([A-Za-z_]\w*)\s*\(/g)) {
      const g = defines.get(m[1]);
      if (g && g !== f) deps.add(g);
    }
    graph.set(f, deps);
  }
  const found = cycles(graph);
  assert.equal(found.length, 0, `circles of use (each file calls a function the next defines):\n${print(found)}`);
});
