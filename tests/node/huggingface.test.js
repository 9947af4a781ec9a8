// huggingface.test.js: Hugging Face checkpoints against a float64 reference written from
// transformers' modeling code (scripts/hf_reference.py, Debian's python3-torch; transformers itself
// is not installed). For each architecture and dtype the script writes a small checkpoint of seeded
// random weights in the real names and layouts; the library loads it and its logits must match the
// reference's to TOL.huggingface_logits (max |a - b| / max |b|); then saveHuggingFace's files, read
// by the reference, give the library's logits again.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TOL, builds, relMaxErr } from './helpers.js';

const PYTHON = '/usr/bin/python3'; // Debian's, where python3-torch installs
const SCRIPT = new URL('../../scripts/hf_reference.py', import.meta.url).pathname;
const haveTorch = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch'], { encoding: 'utf8' }).status === 0;
const why = 'python3-torch is missing: run bash scripts/setup.sh as root, or apt-get install -y python3-torch';
// 20 tokens: past Mistral's sliding window of 8 in the reference's config
const IDS = Array.from({ length: 20 }, (_, i) => (i * 37 + 11) % 96);

function py(args) {
  const r = spawnSync(PYTHON, [SCRIPT, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`hf_reference.py ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}
const reference = (dir) => Float64Array.from(JSON.parse(py(['logits', '--dir', dir, '--ids', IDS.join(',')])).logits.flat());

// config.json's text and the weights (one file, or every shard the index names)
function readDir(dir) {
  const config = readFileSync(join(dir, 'config.json'), 'utf8');
  const index = join(dir, 'model.safetensors.index.json');
  if (!existsSync(index)) return { config, weights: readFileSync(join(dir, 'model.safetensors')) };
  const files = [...new Set(Object.values(JSON.parse(readFileSync(index, 'utf8')).weight_map))];
  return { config, weights: files.reverse().map((f) => readFileSync(join(dir, f))) }; // any order
}

const CASES = [
  ['llama', 'F32'], ['llama', 'BF16'], ['llama', 'F16', '--tie', '1'], ['llama', 'F32', '--rope-scaling', 'llama3'],
  ['llama', 'BF16', '--new-style-config', '--rope-scaling', 'llama3'], ['llama', 'F32', '--sharded'],
  ['mistral', 'F32'], ['mistral', 'BF16'],
  ['qwen2', 'F32'], ['qwen2', 'BF16', '--sharded'],
  ['qwen3', 'F32'], ['qwen3', 'BF16'], ['qwen3', 'F32', '--head-dim', '24'], ['qwen3', 'BF16', '--head-dim', '64'],
  ['llama', 'F32', '--head-dim', '8'],
  ['gpt2', 'F32'], ['gpt2', 'BF16'], ['gpt2', 'F32', '--bare-names'],
];

test('Hugging Face checkpoints: the library\'s logits are the float64 reference\'s, and saveHuggingFace\'s files give them back',
  { skip: haveTorch ? false : why }, (t) => {
    const { lib } = builds[0];
    const root = mkdtempSync(join(tmpdir(), 'aw-hf-'));
    try {
      CASES.forEach(([arch, dtype, ...extra], i) => {
        const label = [arch, dtype, ...extra].join(' ');
        const dir = join(root, `case${i}`);
        py(['make', '--arch', arch, '--dtype', dtype, '--seed', String(7 + i), '--out', dir, ...extra]);
        const want = reference(dir);
        const model = lib.loadHuggingFace(readDir(dir));
        const got = model.forward(IDS).logits, e = relMaxErr(got, want);
        t.diagnostic(`${label}: ${model.huggingFace.architecture}, max err ${e.toExponential(2)} (tol ${TOL.huggingface_logits})`);
        assert.ok(e <= TOL.huggingface_logits, `${label}: logits differ from the reference by ${e}`);
        // the fields whose effect on these logits is below the tolerance, read all the same
        const c = JSON.parse(readDir(dir).config), rp = c.rope_parameters ?? {};
        assert.equal(model.config.normEps ?? 1e-5, c.rms_norm_eps ?? c.layer_norm_epsilon, `${label}: normEps`);
        if (arch !== 'gpt2') assert.equal(model.config.ropeTheta, rp.rope_theta ?? c.rope_theta, `${label}: ropeTheta`);
        // the same model written back and read by the reference (F32: exactly the weights loaded)
        const saved = model.saveHuggingFace();
        const out = join(root, `saved${i}`);
        rmSync(out, { recursive: true, force: true });
        spawnSync('mkdir', ['-p', out]);
        writeFileSync(join(out, 'config.json'), JSON.stringify(saved.config, null, 2));
        writeFileSync(join(out, 'model.safetensors'), saved.weights);
        const again = relMaxErr(got, reference(out));
        t.diagnostic(`${label}: saved, read by the reference: max err ${again.toExponential(2)}`);
        assert.ok(again <= TOL.huggingface_logits, `${label}: the saved files give logits ${again} away`);
        model.dispose();
      });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
