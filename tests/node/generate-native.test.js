// The native generation yardstick (tools/generate.c, bash build.sh generate; bench/generate.bench.js
// runs it beside ours): it loads the library's checkpoint and generates the tokens the wasm build
// generates from the same weights, at 1 and 2 threads; its flags are checked; its bandwidths are numbers.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAttention } from '../../wasm/index.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const DIR = mkdtempSync(join(tmpdir(), 'aw-generate-'));
const BIN = join(DIR, 'generate'); // a binary of its own: the benchmark may build build/generate meanwhile
const build = spawnSync('bash', ['build.sh', 'generate'], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, GENERATE_OUT: BIN } });
const run = (...args) => spawnSync(BIN, args, { encoding: 'utf8', timeout: 120_000 });
test.after(() => rmSync(DIR, { recursive: true, force: true }));

test('native generate: the same greedy tokens as the wasm build from the same checkpoint, at 1 and 2 threads', async () => {
  assert.equal(build.status, 0, build.stderr);
  const lib = await loadAttention();
  // dModel 288, dFF 768: the matrix-vector products are cut for threads (src/kernels/matmul.c gemv)
  for (const opts of [{ block: 'llama', tieEmbeddings: true, kvHeads: 2 }, { tieEmbeddings: false }]) {
    const m = lib.createModel({ vocab: 1200, dModel: 288, heads: 6, layers: 2, dFF: 768, maxLen: 64, seed: 5, ...opts });
    const file = join(DIR, 'm.safetensors');
    writeFileSync(file, m.save());
    const prompt = Array.from({ length: 8 }, (_, i) => 1 + ((i * 7919) % 1199)); // the tool's prompt
    const ours = Array.from(m.generate(prompt, { maxTokens: 16 }));
    m.dispose();
    for (const threads of ['1', '2']) {
      const r = run(file, '--threads', threads, '--prompt', '8', '--tokens', '16', '--rounds', '2');
      assert.equal(r.status, 0, r.stderr);
      const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
      assert.equal(lines.length, 2, 'one line per round');
      for (const l of lines) {
        assert.deepEqual(l.first, ours, `${JSON.stringify(opts)}, ${threads} threads: the native tokens`);
        assert.equal(l.threads, Number(threads));
        assert.ok(l.tokPerSec > 0 && l.ttftMs > 0, JSON.stringify(l));
      }
    }
  }
});

test('native generate: bad flags name themselves; --copy-mib alone measures the bandwidths', () => {
  assert.equal(build.status, 0, build.stderr);
  for (const [args, words] of [[['--threads', '0', '--copy-mib', '1'], /--threads must be an integer in \[1, 64\]/],
    [['--copy-mib', 'lots'], /--copy-mib must be an integer/], [['--frobnicate', '1'], /unknown flag --frobnicate/],
    [['/nonexistent.safetensors'], /cannot read \/nonexistent.safetensors/], [['--threads', '2'], /nothing to measure/]]) {
    const r = run(...args);
    assert.notEqual(r.status, 0, `${args.join(' ')}: exit 0`);
    assert.match(r.stderr, words, args.join(' '));
  }
  const r = run('--copy-mib', '8');
  assert.equal(r.status, 0, r.stderr);
  const bw = JSON.parse(r.stdout);
  assert.ok(bw.copyGBs > 0 && bw.readGBs > 0 && bw.bytes === 8 << 20, r.stdout);
});
