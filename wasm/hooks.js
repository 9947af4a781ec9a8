// hooks.js: a model's interpretability calls (docs/interpretability.md): runWithCache,
// runWithHooks, logitLens, headAttribution, ablationGrid, patchingGrid, attributionPatching and ablationEstimate, over the named points of
// src/model/hooks.h, and compositionScores from the weights alone (src/model/composition.h) (TransformerLens's names, layers from 0). Types are checked here; names,
// layers, heads, positions and shapes are C's to check (src/api/api_hooks.c), in its messages.
import { checkInt, checkKeys, describe, fail } from './core.js';

const MODES = ['zero', 'mean'];

/**
 * An optional array of integer indices (positions, heads) as an Int32Array; undefined stays so.
 * distinct: refuse an index given twice (C selects by a mask, so scale's or add's second mention
 * would be dropped where the caller may mean it twice).
 */
function indexList(what, list, distinct = false) {
  if (list === undefined) return undefined;
  const ok = Array.isArray(list) || (ArrayBuffer.isView(list) && !(list instanceof DataView));
  if (!ok) fail(`${what} must be an array of integer indices, got ${describe(list)}`);
  const out = new Int32Array(list.length), first = new Map();
  for (let i = 0; i < list.length; i++) {
    out[i] = checkInt(`${what}[${i}]`, list[i]);
    if (!distinct) continue;
    if (first.has(out[i]))
      fail(`${what}[${first.get(out[i])}] and ${what.split(': ').pop()}[${i}] are both ${out[i]}: list each once (the edit applies once to each)`);
    first.set(out[i], i);
  }
  return out;
}

/**
 * A hook name as C reads it: a string with no NUL (C would stop at the NUL and read a different
 * name). Whether the name exists in this model is C's to say, with the list of names.
 */
function hookName(what, name) {
  if (typeof name !== 'string') fail(`${what} must be a hook name (a string), got ${describe(name)}`);
  const nul = name.indexOf('\0');
  if (nul >= 0)
    fail(`${what} is ${describe(name)}, which holds a NUL character (U+0000) at index ${nul}; hook names such as ` +
      '"hook_embed" or "blocks.0.hook_resid_pre" hold none (runWithCache(ids) without names keeps every point of the model)');
  return name;
}


/**
 * Adds the calls to Model.prototype. checkTokens(what, ids) -> Int32Array is model.js's.
 */
export function installHooks(core, proto, checkTokens) {
  const ex = core.exports;

  function live(model, what) {
    if (model.handle === 0) fail(`${what}: this model was disposed`);
  }

  // fn(run handle) with a hooked run of ids.length tokens; the run is freed whatever happens.
  function withRun(model, what, n, fn) {
    const r = core.withBuffers(what, [{ name: 'handle', bytes: 4 }], ([hp]) => {
      core.check(ex.aw_hooks_create(hp, model.handle, n), what);
      return new Uint32Array(core.memory.buffer, hp, 1)[0];
    });
    try {
      return fn(r);
    } finally {
      ex.aw_hooks_destroy(r);
    }
  }

  // The run's forward over tok; returns the logits (n * V).
  function runForward(model, what, r, tok) {
    const V = model.config.vocab;
    return core.withBuffers(what, [{ name: 'ids', bytes: tok.length * 4, from: tok }, { name: 'logits', bytes: tok.length * V * 4 }],
      ([ip, lp]) => {
        core.check(ex.aw_hooks_run(r, ip, lp), what);
        return core.readF32(lp, tok.length * V);
      });
  }

  function readCache(what, r) {
    const need = ex.aw_hooks_cache_json(r, 0, 0);
    const list = core.withBuffers(what, [{ name: 'cache list', bytes: need + 1 }], ([p]) => {
      ex.aw_hooks_cache_json(r, p, need + 1);
      return JSON.parse(core.cString(p));
    });
    const cache = {};
    for (const { name, ptr, shape } of list)
      cache[name] = { data: core.readF32(ptr, shape.reduce((a, b) => a * b, 1)), shape };
    return cache;
  }

  // The run's forward over tok when it stops after its last kept point: no logits.
  function runStopped(what, r, tok) {
    core.withBuffers(what, [{ name: 'ids', bytes: tok.length * 4, from: tok }], ([ip]) => core.check(ex.aw_hooks_run(r, ip, 0), what));
  }

  /**
   * One forward pass of ids that keeps the activations at the named points: { logits (n * V, as
   * forward gives them), cache: { [name]: { data: Float32Array, shape } } }. names (default: every
   * point of the model) limits what is kept. stopAfter (default false): true ends the forward once
   * every named point is computed: the later blocks, the final norm (unless ln_final.hook_normalized
   * is named) and the classifier are skipped, the cache holds the same values bit for bit, and
   * logits is null.
   */
  proto.runWithCache = function runWithCache(ids, opts = {}) {
    const what = 'runWithCache';
    live(this, what);
    checkKeys(what, opts, ['names', 'stopAfter']);
    const tok = checkTokens(`${what}: ids`, ids);
    const { names, stopAfter = false } = opts;
    if (names !== undefined && !Array.isArray(names))
      fail(`${what}: names must be an array of hook names (strings), got ${describe(names)}`);
    names?.forEach((x, i) => hookName(`${what}: names[${i}]`, x));
    if (typeof stopAfter !== 'boolean') fail(`${what}: stopAfter must be a boolean (true: stop once the named points are computed), got ${describe(stopAfter)}`);
    return withRun(this, what, tok.length, (r) => {
      if (names === undefined) core.check(ex.aw_hooks_keep(r, 0), what);
      else for (const name of names) core.withStrings(what, [name], ([np]) => core.check(ex.aw_hooks_keep(r, np), what));
      if (stopAfter) {
        core.check(ex.aw_hooks_stop_after(r, 1), what);
        runStopped(what, r, tok);
        return { logits: null, cache: readCache(what, r) };
      }
      const logits = runForward(this, what, r, tok);
      return { logits, cache: readCache(what, r) };
    });
  };

  /**
   * One forward pass with interventions: ablate [{ layer, head, mode: 'zero' | 'mean', positions? }]
   * sets the head's attn.hook_z to 0 or to its mean over every position of this input, at
   * `positions` (default all); patch [{ name, positions?, heads?, from }] replaces the activation
   * `name` (at those positions and, for per-head names, heads) by from[name], a runWithCache cache
   * of another input of the same length. Hook operations (TransformerLens's hook functions):
   * replace [{ name, positions?, heads?, data }] sets the rows at positions (data: one row per
   * position, in the order given; all positions when absent) and, for per-head names, only the
   * heads given; scale [{ name, heads?, positions?, factor }] multiplies the activation there;
   * add [{ name, vector, scale = 1, positions?, heads? }] adds scale x vector (one position's row:
   * dModel values, or heads x dHead for a per-head name) to each selected row: steering. At a point
   * they apply in this order: patch, replace, ablate, scale, add (each list in its order). names:
   * the points to return, as edited, in { cache } (runWithCache's form).
   * Returns { logits } (and cache with names).
   */
  proto.runWithHooks = function runWithHooks(ids, opts = {}) {
    const what = 'runWithHooks';
    live(this, what);
    checkKeys(what, opts, ['ablate', 'patch', 'add', 'scale', 'replace', 'names']);
    const tok = checkTokens(`${what}: ids`, ids);
    const ablate = opts.ablate ?? [], patch = opts.patch ?? [];
    const list = (key, shape) => {
      const v = opts[key] ?? [];
      if (!Array.isArray(v)) fail(`${what}: ${key} must be an array of ${shape}, got ${describe(v)}`);
      return v;
    };
    const floats = (w, x, label) => {
      const ok = Array.isArray(x) || (ArrayBuffer.isView(x) && !(x instanceof DataView));
      if (!ok || x.length === 0) fail(`${w}: ${label} must be a non-empty array of numbers, got ${describe(x)}`);
      const out = Float32Array.from(x, (v, i) => (typeof v === 'number' && Number.isFinite(v) ? v : fail(`${w}: ${label}[${i}] is ${describe(v)}; expected a finite number`)));
      return out;
    };
    const number = (w, x, label, def) => {
      if (x === undefined && def !== undefined) return def;
      if (typeof x !== 'number' || !Number.isFinite(x)) fail(`${w}: ${label} must be a finite number, got ${describe(x)}`);
      return x;
    };
    const ops = [];
    list('replace', '{ name, positions?, heads?, data }').forEach((o, i) => {
      const w = `${what}: replace[${i}]`;
      checkKeys(w, o, ['name', 'positions', 'heads', 'data']);
      hookName(`${w}: name`, o.name);
      ops.push({ w, kind: 'replace', name: o.name, positions: indexList(`${w}: positions`, o.positions), heads: indexList(`${w}: heads`, o.heads), data: floats(w, o.data, 'data') });
    });
    const scaleOps = list('scale', '{ name, heads?, positions?, factor }').map((o, i) => {
      const w = `${what}: scale[${i}]`;
      checkKeys(w, o, ['name', 'positions', 'heads', 'factor']);
      hookName(`${w}: name`, o.name);
      return { w, kind: 'scale', name: o.name, positions: indexList(`${w}: positions`, o.positions, true), heads: indexList(`${w}: heads`, o.heads, true), factor: number(w, o.factor, 'factor') };
    });
    const addOps = list('add', '{ name, vector, scale?, positions?, heads? }').map((o, i) => {
      const w = `${what}: add[${i}]`;
      checkKeys(w, o, ['name', 'vector', 'scale', 'positions', 'heads']);
      hookName(`${w}: name`, o.name);
      return { w, kind: 'add', name: o.name, positions: indexList(`${w}: positions`, o.positions, true), heads: indexList(`${w}: heads`, o.heads, true), data: floats(w, o.vector, 'vector'), factor: number(w, o.scale, 'scale', 1) };
    });
    const { names } = opts;
    if (names !== undefined && !Array.isArray(names)) fail(`${what}: names must be an array of hook names (strings), got ${describe(names)}`);
    names?.forEach((x, i) => hookName(`${what}: names[${i}]`, x));
    // one hook operation into C (the name, the index lists, the floats)
    const apply = (r, o) => {
      const { positions: pos, heads } = o, data = o.data ?? new Float32Array(0);
      const enc = new TextEncoder().encode(`${o.name}\0`);
      core.withBuffers(o.w, [{ name: 'name', bytes: enc.length, from: enc },
        { name: 'positions', bytes: pos ? pos.length * 4 : 0, from: pos },
        { name: 'heads', bytes: heads ? heads.length * 4 : 0, from: heads },
        { name: 'data', bytes: data.length * 4, from: data }], ([np, pp, hp, dp]) => {
        const npos = pos ? pos.length : -1, nh = heads ? heads.length : -1;
        const st = o.kind === 'replace' ? ex.aw_hooks_replace(r, np, pp, npos, hp, nh, dp, data.length)
          : o.kind === 'scale' ? ex.aw_hooks_scale(r, np, pp, npos, hp, nh, o.factor)
            : ex.aw_hooks_add(r, np, pp, npos, hp, nh, dp, data.length, o.factor);
        core.check(st, o.w);
      });
    };
    if (!Array.isArray(ablate)) fail(`${what}: ablate must be an array of { layer, head, mode, positions? }, got ${describe(ablate)}`);
    if (!Array.isArray(patch)) fail(`${what}: patch must be an array of { name, positions?, heads?, from }, got ${describe(patch)}`);
    const ab = ablate.map((a, i) => {
      const w = `${what}: ablate[${i}]`;
      checkKeys(w, a, ['layer', 'head', 'mode', 'positions']);
      if (!MODES.includes(a.mode)) fail(`${w}: mode must be one of "zero", "mean", got ${describe(a.mode)}`);
      return { w, layer: checkInt(`${w}: layer`, a.layer), head: checkInt(`${w}: head`, a.head), mode: MODES.indexOf(a.mode),
        positions: indexList(`${w}: positions`, a.positions) };
    });
    const pa = patch.map((p, i) => {
      const w = `${what}: patch[${i}]`;
      checkKeys(w, p, ['name', 'positions', 'heads', 'from']);
      hookName(`${w}: name`, p.name);
      if (p.from === null || typeof p.from !== 'object') fail(`${w}: from must be a cache from runWithCache, got ${describe(p.from)}`);
      const entry = p.from[p.name];
      if (!entry || !(entry.data instanceof Float32Array))
        fail(`${w}: from has no "${p.name}": give the cache of a runWithCache that kept it`);
      return { w, name: p.name, positions: indexList(`${w}: positions`, p.positions), heads: indexList(`${w}: heads`, p.heads), data: entry.data };
    });
    return withRun(this, what, tok.length, (r) => {
      // patches first: C applies the edits at a point in the order they were added
      for (const p of pa) {
        const { positions: pos, heads } = p;
        const enc = new TextEncoder().encode(`${p.name}\0`);
        core.withBuffers(p.w, [{ name: 'name', bytes: enc.length, from: enc },
          { name: 'positions', bytes: pos ? pos.length * 4 : 0, from: pos },
          { name: 'heads', bytes: heads ? heads.length * 4 : 0, from: heads },
          { name: 'from', bytes: p.data.length * 4, from: p.data }], ([np, pp, hp, fp]) =>
          core.check(ex.aw_hooks_patch(r, np, pp, pos ? pos.length : -1, hp, heads ? heads.length : -1, fp, p.data.length), p.w));
      }
      for (const o of ops) apply(r, o); // replace
      for (const a of ab) {
        const pos = a.positions;
        core.withBuffers(a.w, [{ name: 'positions', bytes: pos ? pos.length * 4 : 0, from: pos }], ([pp]) =>
          core.check(ex.aw_hooks_ablate(r, a.layer, a.head, a.mode, pp, pos ? pos.length : -1), a.w));
      }
      for (const o of scaleOps) apply(r, o);
      for (const o of addOps) apply(r, o);
      for (const name of names ?? []) core.withStrings(what, [name], ([np]) => core.check(ex.aw_hooks_keep(r, np), what));
      const logits = runForward(this, what, r, tok);
      return names ? { logits, cache: readCache(what, r) } : { logits };
    });
  };

  /**
   * The logit lens (nostalgebraist 2020): each layer's blocks.{l}.hook_resid_post through the final
   * norm and the classifier: { data, shape: [layers, n, vocab] } (logits; the last layer's are
   * forward's).
   */
  proto.logitLens = function logitLens(ids) {
    const what = 'logitLens';
    live(this, what);
    const tok = checkTokens(`${what}: ids`, ids);
    const { layers: L, vocab: V } = this.config, n = Math.min(tok.length, this.config.maxLen);
    return core.withBuffers(what, [{ name: 'ids', bytes: tok.length * 4, from: tok }, { name: 'lens', bytes: L * n * V * 4 }],
      ([ip, op]) => {
        core.check(ex.aw_hooks_logit_lens(this.handle, ip, tok.length, op), what);
        return { data: core.readF32(op, L * n * V), shape: [L, n, V] };
      });
  };

  /**
   * Direct logit attribution of the logit of target[p] at each position p: heads { data, shape:
   * [layers, heads, n] } (each head's z through its slice of W_O, times the final norm's scale of
   * the clean run, dotted with the classifier's column of the target), mlp [layers, n], embed (n),
   * rest (n: attention output biases, the final norm's shift, the classifier's bias) and logit (n,
   * the clean logit they sum to). target: one token id, n of them, or by default the next token
   * (at the last position, the model's own top guess).
   */
  proto.headAttribution = function headAttribution(ids, opts = {}) {
    const what = 'headAttribution';
    live(this, what);
    checkKeys(what, opts, ['target']);
    const tok = checkTokens(`${what}: ids`, ids);
    const n = tok.length, { layers: L, heads: H, vocab: V } = this.config;
    let target;
    if (opts.target === undefined) {
      if (n > this.config.maxLen) fail(`${what}: ids has ${n} tokens; this model takes 1 to maxLen = ${this.config.maxLen}`);
      target = new Int32Array(n);
      for (let p = 0; p + 1 < n; p++) target[p] = tok[p + 1];
      const logits = withRun(this, what, n, (r) => runForward(this, what, r, tok));
      let best = 0;
      for (let v = 1; v < V; v++) if (logits[(n - 1) * V + v] > logits[(n - 1) * V + best]) best = v;
      target[n - 1] = best;
    } else if (typeof opts.target === 'number') target = new Int32Array(n).fill(checkInt(`${what}: target`, opts.target));
    else {
      target = indexList(`${what}: target`, opts.target);
      if (target.length !== n) fail(`${what}: target has ${target.length} ids, expected one per position (${n})`);
    }
    const f = (name, count) => ({ name, bytes: Math.max(0, count) * 4 });
    const m = Math.min(n, this.config.maxLen);
    return core.withBuffers(what, [{ name: 'ids', bytes: n * 4, from: tok }, { name: 'target', bytes: n * 4, from: target },
      f('heads', L * H * m), f('mlp', L * m), f('embed', m), f('rest', m), f('logit', m)], ([ip, tp, hp, mp, ep, rp, gp]) => {
      core.check(ex.aw_hooks_attribution(this.handle, ip, n, tp, hp, mp, ep, rp, gp), what);
      return {
        heads: { data: core.readF32(hp, L * H * n), shape: [L, H, n] },
        mlp: { data: core.readF32(mp, L * n), shape: [L, n] },
        embed: core.readF32(ep, n), rest: core.readF32(rp, n), logit: core.readF32(gp, n), target,
      };
    });
  };

  /**
   * The whole ablation grid in one call: for each mode, layer and head, the log-probability (nats)
   * of ids[p + 1] at every position p < n - 1 with that head's attn.hook_z ablated at every
   * position: { data, shape: [modes.length, layers, heads, n - 1], modes, clean (n - 1: no
   * ablation) }. modes: default ['zero', 'mean'].
   */
  proto.ablationGrid = function ablationGrid(ids, opts = {}) {
    const what = 'ablationGrid';
    live(this, what);
    checkKeys(what, opts, ['modes']);
    const tok = checkTokens(`${what}: ids`, ids);
    const modes = opts.modes ?? MODES;
    if (!Array.isArray(modes) || modes.length === 0 || !modes.every((x) => MODES.includes(x)) || new Set(modes).size !== modes.length)
      fail(`${what}: modes must be a non-empty array of distinct "zero", "mean", got ${describe(modes)}`);
    const ordered = MODES.filter((x) => modes.includes(x)); // the order of the grid's first axis
    const bits = ordered.reduce((b, x) => b | (1 << MODES.indexOf(x)), 0);
    const { layers: L, heads: H } = this.config, k = Math.max(0, Math.min(tok.length, this.config.maxLen) - 1);
    return core.withBuffers(what, [{ name: 'ids', bytes: tok.length * 4, from: tok },
      { name: 'grid', bytes: ordered.length * L * H * k * 4 }, { name: 'clean', bytes: k * 4 }], ([ip, op, cp]) => {
      core.check(ex.aw_hooks_ablation_grid(this.handle, ip, tok.length, bits, op, cp), what);
      return { data: core.readF32(op, ordered.length * L * H * k), shape: [ordered.length, L, H, k], modes: ordered, clean: core.readF32(cp, k) };
    });
  };

  /**
   * Activation patching over layers x positions in one call (the runs of ids with block l's
   * activation `name` at position p taken from `from`, a runWithCache cache of another input of the
   * same length): { data, shape: [layers, n, n - 1], clean }, the log-probability (nats) of
   * targets[q] (default ids[q + 1]) at every position q < n - 1 for each (l, p), and without patching.
   * name: 'hook_resid_pre' (default), 'hook_attn_out', 'hook_resid_mid', 'hook_mlp_out' or 'hook_resid_post'.
   */
  proto.patchingGrid = function patchingGrid(ids, opts = {}) {
    const what = 'patchingGrid';
    live(this, what);
    checkKeys(what, opts, ['from', 'name', 'targets']);
    const tok = checkTokens(`${what}: ids`, ids);
    const name = opts.name ?? 'hook_resid_pre';
    if (typeof name !== 'string') fail(`${what}: name must be a block's point name such as "hook_resid_pre", got ${describe(name)}`);
    hookName(`${what}: name`, name);
    const { from } = opts;
    if (from === null || typeof from !== 'object') fail(`${what}: from must be a cache from runWithCache, got ${describe(from)}`);
    const { layers: L, dModel: C } = this.config, n = tok.length;
    const stacked = new Float32Array(L * n * C);
    for (let l = 0; l < L; l++) {
      const entry = from[`blocks.${l}.${name}`];
      if (!entry || !(entry.data instanceof Float32Array))
        fail(`${what}: from has no "blocks.${l}.${name}": give the cache of a runWithCache that kept every layer's ${name}`);
      if (entry.data.length !== n * C)
        fail(`${what}: from's blocks.${l}.${name} has ${entry.data.length} values, expected (n, dModel) = (${n}, ${C}) = ${n * C}: a cache of an input of the same length`);
      stacked.set(entry.data, l * n * C);
    }
    let targets;
    if (opts.targets === undefined) targets = tok.subarray(1);
    else {
      targets = indexList(`${what}: targets`, opts.targets);
      if (targets.length !== n - 1) fail(`${what}: targets has ${targets.length} ids, expected n - 1 = ${n - 1} (the token each position predicts)`);
    }
    const k = Math.max(0, Math.min(n, this.config.maxLen) - 1);
    const enc = new TextEncoder().encode(`blocks.0.${name}\0`);
    return core.withBuffers(what, [{ name: 'ids', bytes: n * 4, from: tok }, { name: 'name', bytes: enc.length, from: enc },
      { name: 'from', bytes: stacked.length * 4, from: stacked }, { name: 'targets', bytes: Math.max(1, targets.length) * 4, from: targets },
      { name: 'grid', bytes: L * n * k * 4 }, { name: 'clean', bytes: k * 4 }], ([ip, np, fp, tp, op, cp]) => {
      core.check(ex.aw_hooks_patching_grid(this.handle, ip, n, np, fp, stacked.length, tp, op, cp), what);
      return { data: core.readF32(op, L * n * k), shape: [L, n, k], clean: core.readF32(cp, k) };
    });
  };

  /**
   * Attribution patching (Nanda 2023; Syed, Rager and Conmy 2023): the effect on a metric of
   * patching each activation of the clean run with the corrupted run's, estimated to first order
   * from one clean forward, one corrupted forward and one backward as (corrupt - clean) . d metric /
   * d activation. clean, corrupt: token ids of the same length. metric: { target, position = n - 1,
   * versus? }: log p(target) at position (nats; patchingGrid's number there), or with versus the
   * logit difference logit[target] - logit[versus]. names: block points without "blocks.{l}."
   * (default attn.hook_z, hook_attn_out, hook_mlp_out, hook_resid_pre), each at every layer.
   * Returns { clean, corrupt (the metric of each run), grids: { [name]: { data, shape } } }, shape
   * [layers, heads] for the per-head names (a head's columns summed; k and v: the K/V heads),
   * [layers] for the others: the activation patched at every position; with perPosition, one
   * position at a time: [layers, heads, n] or [layers, n]. Any float32 decoder, trainable or loaded
   * for inference only ({ training: false }, loadHuggingFace, loadLlama2c): an inference-only model's
   * backward computes the activations' gradients alone, in memory of the call's length freed before
   * it returns (no parameter gradients). Quantized models are an Error (the backward reads the
   * float32 matrices the quantizer freed).
   */
  proto.attributionPatching = function attributionPatching(clean, corrupt, opts = {}) {
    const what = 'attributionPatching';
    live(this, what);
    checkKeys(what, opts, ['metric', 'names', 'perPosition']);
    const a = checkTokens(`${what}: clean`, clean), b = checkTokens(`${what}: corrupt`, corrupt);
    const n = a.length, V = this.config.vocab;
    // named here: C's forward would call either "tokens"
    for (const [label, t] of [['clean', a], ['corrupt', b]])
      t.forEach((x, i) => { if (x < 0 || x >= V) fail(`${what}: ${label}[${i}] is ${x}, outside the vocabulary [0, ${V})`); });
    if (b.length !== n)
      fail(`${what}: corrupt has ${b.length} tokens and clean ${n}: patching lines the two runs up position by position, so they must have the same length`);
    const { metric } = opts;
    if (metric === null || typeof metric !== 'object')
      fail(`${what}: metric must be { target, position?, versus? } (log p(target) at position, default the last), got ${describe(metric)}`);
    checkKeys(`${what}: metric`, metric, ['target', 'position', 'versus']);
    const target = checkInt(`${what}: metric.target`, metric.target);
    const position = metric.position === undefined ? n - 1 : checkInt(`${what}: metric.position`, metric.position);
    const versus = metric.versus === undefined ? -1 : checkInt(`${what}: metric.versus`, metric.versus);
    if (metric.versus !== undefined && versus < 0) fail(`${what}: metric.versus is ${versus}: expected a token id (or no versus: log p(target))`);
    const names = opts.names ?? ['attn.hook_z', 'hook_attn_out', 'hook_mlp_out', 'hook_resid_pre'];
    if (!Array.isArray(names) || names.length === 0)
      fail(`${what}: names must be a non-empty array of block point names such as "attn.hook_z", got ${describe(names)}`);
    names.forEach((x, i) => {
      hookName(`${what}: names[${i}]`, x);
      if (x.includes(',')) fail(`${what}: names[${i}] is ${describe(x)}: one name per entry (no commas)`);
      if (names.indexOf(x) !== i) fail(`${what}: names[${names.indexOf(x)}] and names[${i}] are both ${describe(x)}: list each once`);
    });
    const perPosition = opts.perPosition ?? false;
    if (typeof perPosition !== 'boolean') fail(`${what}: perPosition must be true or false, got ${describe(perPosition)}`);
    const { layers: L, heads: H } = this.config, KH = this.config.kvHeads || H;
    const groups = names.map((x) => (x === 'attn.hook_k' || x === 'attn.hook_v' ? KH : x === 'attn.hook_q' || x === 'attn.hook_z' ? H : 1));
    const total = groups.reduce((s, g) => s + L * g * n, 0);
    const enc = new TextEncoder().encode(`${names.join(',')}\0`);
    return core.withBuffers(what, [{ name: 'clean', bytes: n * 4, from: a }, { name: 'corrupt', bytes: n * 4, from: b },
      { name: 'names', bytes: enc.length, from: enc }, { name: 'out', bytes: total * 4 }, { name: 'values', bytes: 8 }],
    ([cp, kp, np, op, vp]) => {
      core.check(ex.aw_hooks_attribution_patching(this.handle, cp, kp, n, np, target, position, versus, op, vp), what);
      const all = core.readF32(op, total), values = core.readF32(vp, 2), grids = {};
      let at = 0;
      names.forEach((name, i) => {
        const G = groups[i], per = all.subarray(at, at + L * G * n);
        at += L * G * n;
        if (perPosition) grids[name] = { data: per.slice(), shape: G > 1 ? [L, G, n] : [L, n] };
        else {
          const data = new Float32Array(L * G);
          for (let r = 0; r < L * G; r++) {
            let s = 0; // over the positions, in float64
            for (let p = 0; p < n; p++) s += per[r * n + p];
            data[r] = s;
          }
          grids[name] = { data, shape: G > 1 ? [L, G] : [L] };
        }
      });
      return { clean: values[0], corrupt: values[1], grids };
    });
  };

  /**
   * ablationGrid's cost of each head estimated to first order, as attributionPatching estimates
   * patching: one clean forward, then per span one backward from the span's metric gives g = d
   * metric / d attn.hook_z at every layer, head and position, and a head's ablation changes the
   * metric by about the sum over positions of (z_ablated - z) . g (zero: -z; mean: its mean over the
   * positions minus z). spans: [from, to) ranges of positions p, 0 <= from < to <= n - 1, each with
   * the metric sum over p of log p(ids[p + 1] | ids[0..p]) (overlapping spans are fine: each has
   * its own backward). modes: default ['zero', 'mean'].
   * Returns { data, shape: [modes.length, spans.length, layers, heads], modes, spans, clean }: data the
   * estimated change of each span's loss in bits per token, ablated minus clean (positive: the
   * model reads worse without the head; lab/circuits.js ablationGrid's deltas), clean (spans.length)
   * each span's loss in bits per token. The same models as attributionPatching (inference-only
   * included; quantized an Error).
   */
  proto.ablationEstimate = function ablationEstimate(ids, opts = {}) {
    const what = 'ablationEstimate';
    live(this, what);
    checkKeys(what, opts, ['spans', 'modes']);
    const tok = checkTokens(`${what}: ids`, ids);
    const n = tok.length, V = this.config.vocab;
    if (n < 2) fail(`${what}: ids has ${n} token${n === 1 ? '' : 's'}: expected at least 2 (a next token to predict)`);
    tok.forEach((x, i) => { if (x < 0 || x >= V) fail(`${what}: ids[${i}] is ${x}, outside the vocabulary [0, ${V})`); });
    const modes = opts.modes ?? MODES;
    if (!Array.isArray(modes) || modes.length === 0 || !modes.every((x) => MODES.includes(x)) || new Set(modes).size !== modes.length)
      fail(`${what}: modes must be a non-empty array of distinct "zero", "mean", got ${describe(modes)}`);
    const ordered = MODES.filter((x) => modes.includes(x)); // the order of the grid's first axis
    const bits = ordered.reduce((b, x) => b | (1 << MODES.indexOf(x)), 0);
    const { spans } = opts;
    if (!Array.isArray(spans) || spans.length === 0)
      fail(`${what}: spans must be a non-empty array of [from, to) position ranges, got ${describe(spans)}`);
    const flat = new Int32Array(2 * spans.length);
    spans.forEach((sp, i) => {
      if (!Array.isArray(sp) || sp.length !== 2) fail(`${what}: spans[${i}] must be a [from, to) pair of positions, got ${describe(sp)}`);
      const from = checkInt(`${what}: spans[${i}][0]`, sp[0]), to = checkInt(`${what}: spans[${i}][1]`, sp[1]);
      if (!(from >= 0 && from < to && to <= n - 1))
        fail(`${what}: spans[${i}] is [${from}, ${to}): expected 0 <= from < to <= n - 1 = ${n - 1} (position p predicts ids[p + 1])`);
      flat[2 * i] = from, flat[2 * i + 1] = to;
    });
    const { layers: L, heads: H } = this.config, S = spans.length, total = ordered.length * S * L * H;
    return core.withBuffers(what, [{ name: 'ids', bytes: n * 4, from: tok }, { name: 'spans', bytes: flat.length * 4, from: flat },
      { name: 'grid', bytes: total * 4 }, { name: 'clean', bytes: S * 4 }], ([ip, sp, op, cp]) => {
      core.check(ex.aw_hooks_ablation_estimate(this.handle, ip, n, sp, S, bits, op, cp), what);
      return { data: core.readF32(op, total), shape: [ordered.length, S, L, H], modes: ordered,
        spans: Array.from({ length: S }, (_, i) => [flat[2 * i], flat[2 * i + 1]]), clean: core.readF32(cp, S) };
    });
  };

  /**
   * Elhage et al. 2021's composition scores from the weights (src/model/composition.c says what is
   * folded in): { q, k, v }, each { data: Float32Array, shape: [layers, heads, layers, heads] } where
   * [l2, h2, l1, h1] is how much the later head (l2, h2)'s queries (q), keys (k) or values (v) read
   * what the earlier head (l1, h1) writes: ||W_OV^1 W_QK^2||_F / (||W_OV^1||_F ||W_QK^2||_F), with
   * W_QK^2 transposed for k and W_OV^2 in its place for v; 0 where l1 >= l2. Pre-norm decoders with
   * softmax attention only.
   */
  proto.compositionScores = function compositionScores() {
    const what = 'compositionScores';
    live(this, what);
    const { layers: L, heads: H } = this.config, count = L * H * L * H, shape = [L, H, L, H];
    return core.withBuffers(what, [{ name: 'q', bytes: count * 4 }, { name: 'k', bytes: count * 4 }, { name: 'v', bytes: count * 4 }],
      ([qp, kp, vp]) => {
        core.check(ex.aw_model_composition_scores(this.handle, qp, kp, vp), what);
        return { q: { data: core.readF32(qp, count), shape }, k: { data: core.readF32(kp, count), shape: [...shape] },
          v: { data: core.readF32(vp, count), shape: [...shape] } };
      });
  };
}
