// sae.js: TopK sparse autoencoders (Gao et al. 2024; src/sae/sae.h; docs/interpretability.md):
// lib.createSAE, lib.loadSAE and lib.trainSAE, which streams a model's activations at a hook point
// through runWithCache, a window at a time, into training batches. An SAE's parameters, Adam state
// and counters live in the wasm heap, owned by the C object.
import { bytesOf, checkFiniteNumber, checkInt, checkKeys, checkSeed, checkSize, describe, fail, isIntIn } from './core.js';
import { readSafetensors, safetensorsHeader, writeSafetensors } from './safetensors.js';

const FORMAT = 'attention-wasm-sae';
const CREATE_OPTIONS = ['dIn', 'dSae', 'k', 'auxK', 'deadTokens', 'auxCoef', 'seed'];
const TRAIN_OPTIONS = ['model', 'hook', 'text', 'tokenizer', 'ids', 'dSae', 'k', 'auxK', 'deadTokens', 'auxCoef', 'seed',
  'steps', 'batch', 'lr', 'window', 'reuse', 'onProgress', 'onRead'];
// reuse's bound on the rows it keeps (ids x dIn float32 values)
const REUSE_BYTES = 512 * 2 ** 20;
// AuxK's coefficient in Gao et al. 2024 (section 2.4 and appendix A.2)
const AUX_COEF = 1 / 32;
// rows without firing after which a latent is dead (the paper counts 10M tokens on models of
// billions; a window of a few hundred thousand rows is what a tab trains on)
const DEAD_TOKENS = 65536;
const STATS = ['loss', 'fvu', 'aux', 'l0', 'dead'];

// The paper's auxK: a power of two near dIn / 2, at most dSae.
function defaultAuxK(dIn, dSae) {
  return Math.min(dSae, 2 ** Math.max(0, Math.round(Math.log2(dIn / 2))));
}

// Frees the C object of an SAE that was garbage-collected without free().
const forgotten = typeof FinalizationRegistry === 'function'
  ? new FinalizationRegistry(({ core, handle }) => core.exports.aw_sae_destroy(handle))
  : null;

// The tensors an SAE file holds, by name, with their shapes for a config.
const saeShapes = (c) => ({ 'enc.w': [c.dSae, c.dIn], 'enc.b': [c.dSae], 'dec.w': [c.dSae, c.dIn], b_pre: [c.dIn] });

// A safetensors file's header JSON as it stands, or null when it is not a readable object (then
// safetensorsHeader says why): read ahead of safetensorsHeader, whose check that the tensors tile
// the data would report a missing tensor as the gap its bytes leave, where loadSAE names it.
function peekHeader(u8) {
  if (u8.length < 8) return null;
  const n = new DataView(u8.buffer, u8.byteOffset, 8).getBigUint64(0, true);
  if (n > BigInt(u8.length - 8)) return null;
  try {
    const h = JSON.parse(new TextDecoder().decode(u8.subarray(8, 8 + Number(n))));
    return h !== null && typeof h === 'object' && !Array.isArray(h) ? h : null;
  } catch {
    return null;
  }
}

export function saeMethods(core) {
  const ex = core.exports;

  class SAE {
    #token = {};

    constructor(handle, config) {
      this.handle = handle;
      /** { dIn, dSae, k, auxK, deadTokens, auxCoef, seed } */
      this.config = Object.freeze(config);
      /** the hook point it was trained on (trainSAE, or the checkpoint's), or null */
      this.hook = null;
      forgotten?.register(this, { core, handle }, this.#token);
    }

    #live(what) {
      if (this.handle === 0) fail(`${what}: this SAE was freed`);
    }

    // acts: a Float32Array of rows x dIn values (checked for NaN in wasm after the copy); its rows.
    #rows(what, acts, name = 'acts', width = this.config.dIn, widthName = 'dIn') {
      if (!(acts instanceof Float32Array))
        fail(`${what}: ${name} must be a Float32Array of rows x ${widthName} = rows x ${width} values, got ${describe(acts)}`);
      if (acts.length === 0 || acts.length % width !== 0)
        fail(`${what}: ${name} has ${acts.length} values, expected a positive multiple of ${widthName} = ${width} (rows x ${widthName})`);
      const rows = acts.length / width;
      if (rows > 2 ** 31 - 1) fail(`${what}: ${name} has ${rows} rows; at most 2^31 - 1`);
      return rows; // its values are checked in wasm after the copy (withBuffers' finite)
    }

    // Runs fn(actsPtr, statsPtr, rows) and returns the stats.
    #withActs(what, acts, fn) {
      const rows = this.#rows(what, acts);
      return core.withBuffers(what, [{ name: 'acts', bytes: acts.length * 4, from: acts, finite: true }, { name: 'stats', bytes: 40 }],
        ([xp, sp]) => {
          core.check(fn(xp, sp, rows), what);
          const s = new Float64Array(core.memory.buffer, sp, 5);
          return Object.fromEntries(STATS.map((k, i) => [k, s[i]]));
        });
    }

    /**
     * One Adam step on a batch: acts (rows x dIn, rows >= 2 and not all equal), lr (default 1e-3).
     * Returns { loss, fvu, aux, l0, dead }: loss = fvu + auxCoef aux; fvu the batch's normalised
     * MSE (unexplained variance share) before the step; l0 the mean latents firing per row; dead the
     * latents that have not fired for deadTokens rows. The first step sets b_pre to the batch's mean.
     */
    trainStep(acts, opts = {}) {
      const what = 'trainStep';
      this.#live(what);
      checkKeys(what, opts, ['lr']);
      const lr = checkFiniteNumber(`${what}: lr`, opts.lr ?? 1e-3);
      if (lr < 0) fail(`${what}: lr must be >= 0, got ${lr}`);
      return this.#withActs(what, acts, (xp, sp, rows) => ex.aw_sae_train_step(this.handle, xp, rows, lr, sp));
    }

    /**
     * The loss of a batch and its gradient, without a step: { loss, fvu, aux, l0, dead, grads:
     * { 'enc.w', 'enc.b', 'dec.w', 'b_pre' } } (the tensors of save(); dec.w's rows with their
     * component along the row removed, as the step uses them). For tests and the curious.
     */
    gradients(acts) {
      const what = 'gradients';
      this.#live(what);
      const stats = this.#withActs(what, acts, (xp, sp, rows) => ex.aw_sae_gradients(this.handle, xp, rows, sp));
      return { ...stats, grads: this.#tensors(ex.aw_sae_grads(this.handle)) };
    }

    // The four tensors of a block laid out as the C params block, copied out.
    #tensors(ptr) {
      const { dIn, dSae } = this.config, E = dIn * dSae;
      const at = [['enc.w', 0, E], ['enc.b', E, dSae], ['dec.w', E + dSae, E], ['b_pre', 2 * E + dSae, dIn]];
      return Object.fromEntries(at.map(([name, off, n]) => [name, core.readF32(ptr + off * 4, n)]));
    }

    /** The parameters (copies): { 'enc.w' (dSae, dIn), 'enc.b' (dSae), 'dec.w' (dSae, dIn), 'b_pre' (dIn) }. */
    params() {
      this.#live('params');
      return this.#tensors(ex.aw_sae_params(this.handle));
    }

    /** Rows since each latent last fired (a Uint32Array of dSae; a fresh or loaded SAE's are 0). */
    sinceFired() {
      this.#live('sinceFired');
      const p = ex.aw_sae_since_fired(this.handle);
      return new Uint32Array(core.memory.buffer.slice(p, p + this.config.dSae * 4));
    }

    /**
     * The sparse code of acts (rows x dIn): { indices: Int32Array, values: Float32Array, rows, k },
     * each rows x k: the k latents of largest ReLU(pre-activation) in each row, largest first (ties:
     * lower index first); a value is 0 (and its index arbitrary) where fewer than k are positive.
     */
    encode(acts) {
      const what = 'encode';
      this.#live(what);
      const rows = this.#rows(what, acts), { k } = this.config;
      return core.withBuffers(what, [{ name: 'acts', bytes: acts.length * 4, from: acts, finite: true },
        { name: 'indices', bytes: rows * k * 4 }, { name: 'values', bytes: rows * k * 4 }], ([xp, ip, vp]) => {
        core.check(ex.aw_sae_encode(this.handle, xp, rows, ip, vp), what);
        return { indices: new Int32Array(core.memory.buffer.slice(ip, ip + rows * k * 4)), values: core.readF32(vp, rows * k), rows, k };
      });
    }

    /** x^ = z W_dec + b_pre for a dense z (rows x dSae Float32Array): a Float32Array of rows x dIn. */
    decode(z) {
      const what = 'decode';
      this.#live(what);
      const { dIn, dSae } = this.config, rows = this.#rows(what, z, 'z', dSae, 'dSae');
      return core.withBuffers(what, [{ name: 'z', bytes: z.length * 4, from: z, finite: true }, { name: 'out', bytes: rows * dIn * 4 }],
        ([zp, op]) => {
          core.check(ex.aw_sae_decode(this.handle, zp, rows, op), what);
          return core.readF32(op, rows * dIn);
        });
    }

    /** Adam steps taken since it was created or loaded. */
    get steps() {
      this.#live('steps');
      return ex.aw_sae_steps(this.handle);
    }

    /** The SAE as a safetensors file (docs/interpretability.md lists its tensors and metadata). */
    save() {
      this.#live('save');
      const c = this.config, p = this.params();
      const meta = { format: FORMAT, version: '1', d_in: String(c.dIn), d_sae: String(c.dSae), k: String(c.k), aux_k: String(c.auxK),
        dead_tokens: String(c.deadTokens), aux_coef: String(c.auxCoef), seed: String(c.seed), steps: String(this.steps) };
      if (this.hook !== null) meta.hook = this.hook;
      const shapes = saeShapes(c);
      return writeSafetensors(meta, Object.keys(shapes).map((name) => [name, { shape: shapes[name], data: p[name] }]));
    }

    /** Frees the SAE's wasm memory; later calls throw. Safe to call twice. */
    free() {
      if (this.handle) {
        forgotten?.unregister(this.#token);
        ex.aw_sae_destroy(this.handle);
      }
      this.handle = 0;
    }

    /** The same as free() (the name models use). */
    dispose() {
      this.free();
    }
  }

  function create(what, config) {
    const handle = core.withBuffers(what, [{ name: 'handle', bytes: 4 }], ([hp]) => {
      core.check(ex.aw_sae_create(hp, config.dIn, config.dSae, config.k, config.auxK, config.deadTokens, config.auxCoef, config.seed), what);
      return new Uint32Array(core.memory.buffer, hp, 1)[0];
    });
    return new SAE(handle, config);
  }

  // createSAE's options, checked for type here (ranges between them are C's): the full config.
  function saeConfig(what, opts, dIn) {
    const int = (name, def) => checkInt(`${what}: ${name}`, opts[name] ?? def, 0, 2 ** 31 - 1, { expected: 'a non-negative integer' });
    const dSae = checkSize(`${what}: dSae`, opts.dSae);
    const k = checkSize(`${what}: k`, opts.k);
    if (k > dSae) fail(`${what}: k is ${k}; expected 1 <= k <= dSae = ${dSae}`);
    const config = { dIn, dSae, k, auxK: int('auxK', defaultAuxK(dIn, dSae)), deadTokens: int('deadTokens', DEAD_TOKENS),
      auxCoef: checkFiniteNumber(`${what}: auxCoef`, opts.auxCoef ?? AUX_COEF), seed: checkSeed(`${what}: seed`, opts.seed ?? 0) };
    if (config.auxK > dSae) fail(`${what}: auxK is ${config.auxK}; expected 0 <= auxK <= dSae = ${dSae}`);
    return config;
  }

  // The token ids trainSAE reads: ids, or text through tokenizer.encode; each an integer in [0, vocab)
  // (Int32Array.from would truncate 1.5 to 1 and train on it).
  function trainIds(what, opts, vocab) {
    if ((opts.ids === undefined) === (opts.text === undefined)) fail(`${what}: give text (with tokenizer) or ids, one of the two`);
    let ids = opts.ids;
    if (opts.text !== undefined) {
      if (typeof opts.text !== 'string') fail(`${what}: text must be a string, got ${describe(opts.text)}`);
      if (typeof opts.tokenizer?.encode !== 'function')
        fail(`${what}: tokenizer must be an object with encode(text) -> ids (lib.loadTokenizer's, charTokenizer's), got ${describe(opts.tokenizer)}`);
      ids = opts.tokenizer.encode(opts.text);
    }
    if (!(ids instanceof Int32Array) && !Array.isArray(ids)) fail(`${what}: ids must be an Int32Array or an array of token ids, got ${describe(ids)}`);
    if (ids.length < 2) fail(`${what}: the text gives ${ids.length} tokens; at least 2 are needed`);
    const from = opts.ids === undefined ? 'tokenizer.encode(text)' : 'ids';
    for (let i = 0; i < ids.length; i++)
      if (!isIntIn(ids[i], 0, vocab - 1))
        fail(`${what}: ${from}[${i}] is ${describe(ids[i])}; expected an integer token id in [0, ${vocab}) (the model's vocab)`);
    return ids;
  }

  return {
    /** trainSAE's option names (frozen), so a caller can tell what this library's trainSAE takes
     *  (window, reuse and onRead are newer than the rest) */
    trainSAEOptions: Object.freeze([...TRAIN_OPTIONS]),

    /**
     * A new TopK SAE: { dIn, dSae, k, auxK?, deadTokens?, auxCoef?, seed? } (auxK defaults to a power
     * of two near dIn / 2, deadTokens to 65536 rows, auxCoef to 1/32, seed to 0).
     */
    createSAE(opts = {}) {
      const what = 'createSAE';
      checkKeys(what, opts, CREATE_OPTIONS);
      return create(what, saeConfig(what, opts, checkSize(`${what}: dIn`, opts.dIn)));
    },

    /** An SAE from save()'s bytes (its counters start at 0 and Adam afresh). */
    loadSAE(bytes) {
      const what = 'loadSAE';
      const u8 = bytesOf(bytes) ?? fail(`${what}: bytes must be a Uint8Array or ArrayBuffer (an SAE's safetensors file), got ${describe(bytes)}`);
      const isSAE = (meta) => {
        if (meta?.format !== FORMAT) fail(`${what}: the file's __metadata__.format is ${describe(meta?.format)}, expected "${FORMAT}" (an SAE saved by sae.save())`);
      };
      const peek = peekHeader(u8);
      if (peek) { // what the file is and the tensors it names, before the checks of its bytes' layout
        isSAE(peek.__metadata__);
        const names = Object.keys(saeShapes({})), missing = names.filter((name) => !Object.hasOwn(peek, name));
        const has = Object.keys(peek).filter((k) => k !== '__metadata__').map((k) => `"${k}"`).join(', ') || 'none';
        if (missing.length)
          fail(`${what}: the file has no tensor ${missing.map((name) => `"${name}"`).join(', ')}; an SAE file holds ${names.join(', ')} (it has ${has})`);
      }
      // the header alone (no tensor is copied yet), checked against the bytes
      const { meta, tensors: found } = safetensorsHeader(u8, what);
      isSAE(meta);
      const num = (key) => {
        const x = Number(meta[key]);
        if (typeof meta[key] !== 'string' || !Number.isFinite(x)) fail(`${what}: __metadata__.${key} is ${describe(meta[key])}, expected a number`);
        return x;
      };
      const config = { dIn: num('d_in'), dSae: num('d_sae'), k: num('k'), auxK: num('aux_k'), deadTokens: num('dead_tokens'),
        auxCoef: num('aux_coef'), seed: num('seed') };
      for (const key of ['dIn', 'dSae', 'k', 'auxK', 'deadTokens', 'seed'])
        if (!isIntIn(config[key], 0, key === 'seed' ? 2 ** 32 - 1 : 2 ** 31 - 1))
          fail(`${what}: __metadata__'s ${key} is ${config[key]}, expected an integer in [0, ${key === 'seed' ? '2^32 - 1' : '2^31 - 1'}]`);
      const shapes = saeShapes(config);
      // the sizes the metadata states, against the bytes present (BigInt: d_sae x d_in passes 2^53),
      // before C allocates anything for them
      const [dIn, dSae] = [BigInt(config.dIn), BigInt(config.dSae)];
      const need = 4n * (2n * dSae * dIn + dSae + dIn);
      if (need > BigInt(u8.length))
        fail(`${what}: __metadata__'s d_in ${config.dIn} and d_sae ${config.dSae} need ${need} bytes of float32 parameters ` +
          `and the file has ${u8.length} bytes in all`);
      for (const [name, shape] of Object.entries(shapes)) {
        const t = found.get(name) ?? fail(`${what}: the file has no tensor "${name}"`);
        if (t.shape.join() !== shape.join()) fail(`${what}: tensor "${name}" has shape [${t.shape}], expected [${shape}]`);
      }
      const { tensors } = readSafetensors(u8, what);
      const sae = create(what, config);
      try {
        const all = new Float32Array(Object.values(shapes).reduce((s, sh) => s + sh.reduce((a, b) => a * b, 1), 0));
        let at = 0;
        for (const name of Object.keys(shapes)) all.set(tensors.get(name).data, at), (at += tensors.get(name).data.length);
        core.withBuffers(what, [{ name: 'params', bytes: all.length * 4, from: all }], ([pp]) =>
          core.check(ex.aw_sae_load(sae.handle, pp, all.length, 0), what));
      } catch (e) {
        sae.free();
        throw e;
      }
      if (typeof meta.hook === 'string') sae.hook = meta.hook;
      return sae;
    },

    /**
     * Trains a new SAE on a model's activations at `hook` (a name of runWithCache's, one row per
     * position): the text's ids (text through tokenizer, or ids) cut into windows of `window` tokens
     * (default the model's maxLen), taken in a seeded random order (again after each pass), each run
     * through model.runWithCache (stopAfter: the blocks after the hook's are not run), its rows
     * filling batches of `batch` rows (default 1024), one Adam step per batch (lr default 1e-3), for
     * `steps` steps (default 300). Only one batch of activations is held at a time, unless reuse is
     * true: then each window's rows are kept once read (at most 512 MiB: ids x dIn x 4 bytes), and
     * later passes run the model no more; the SAE is the same either way. onRead({ done, total })
     * after each window's first read (total: the windows); onProgress({ step, steps, loss, fvu, aux,
     * l0, dead }) after every 10 steps and the last; both yield to the event loop there. Resolves to
     * the SAE, with sae.hook set.
     */
    async trainSAE(opts = {}) {
      const what = 'trainSAE';
      checkKeys(what, opts, TRAIN_OPTIONS);
      const { model, hook, onProgress, onRead } = opts;
      if (typeof model?.runWithCache !== 'function') fail(`${what}: model must be a Model (lib.createModel, lib.loadModel), got ${describe(model)}`);
      if (typeof hook !== 'string') fail(`${what}: hook must be a hook name such as "blocks.1.hook_resid_post", got ${describe(hook)}`);
      if (onProgress !== undefined && typeof onProgress !== 'function') fail(`${what}: onProgress must be a function, got ${describe(onProgress)}`);
      if (onRead !== undefined && typeof onRead !== 'function') fail(`${what}: onRead must be a function, got ${describe(onRead)}`);
      const ids = trainIds(what, opts, model.config.vocab);
      const steps = checkSize(`${what}: steps`, opts.steps ?? 300);
      const batch = checkInt(`${what}: batch`, opts.batch ?? 1024, 2, 2 ** 20, { expected: 'an integer in [2, 2^20]' });
      const lr = checkFiniteNumber(`${what}: lr`, opts.lr ?? 1e-3);
      if (lr < 0) fail(`${what}: lr must be >= 0, got ${lr}`);
      const maxLen = model.config.maxLen;
      const L = checkInt(`${what}: window`, opts.window ?? maxLen, 2, maxLen,
        { expected: `an integer in [2, ${maxLen}] (tokens per runWithCache; the model's maxLen is ${maxLen})`, accepted: '' });
      const reuse = opts.reuse ?? false;
      if (typeof reuse !== 'boolean') fail(`${what}: reuse must be a boolean (true: keep each window's rows after its first read), got ${describe(reuse)}`);
      const starts = [];
      for (let s = 0; s + 1 < ids.length; s += L) starts.push(s);
      // each window's rows once read: all of them with reuse, else only the first window's until
      // its first use (it was read to learn the width)
      const kept = new Map();
      // one window's rows from the model; the first window tells the width, and whether the name is
      // a point of one row per position
      const readWindow = (s) => {
        // onRead or onProgress, or anything run while they yielded, may have disposed the model
        if (model.handle === 0) fail(`${what}: the model was disposed during training; dispose it after trainSAE resolves`);
        const win = Int32Array.from(ids.slice(s, Math.min(ids.length, s + L)));
        let cache;
        try {
          ({ cache } = model.runWithCache(win, { names: [hook], stopAfter: true }));
        } catch (e) {
          const why = e.message.replace(/^attention-wasm: (runWithCache: )?/, '');
          fail(`${what}: ${/hook name/.test(why) ? 'hook: ' : 'model.runWithCache: '}${why}`);
        }
        const { data, shape } = cache[hook];
        if (shape[0] !== win.length)
          fail(`${what}: hook "${hook}" has shape [${shape}], not one row per position; use a residual-stream or MLP point such as "blocks.0.hook_resid_post"`);
        return { data, rows: win.length };
      };
      const read = new Set(); // the windows read at least once (onRead's count)
      const firstRead = async (s) => {
        read.add(s);
        onRead?.({ done: read.size, total: starts.length });
        await new Promise((resolve) => setTimeout(resolve, 0));
      };
      const first = readWindow(starts[0]);
      kept.set(starts[0], first);
      const dIn = first.data.length / first.rows;
      const config = saeConfig(what, opts, dIn);
      if (reuse && ids.length * dIn * 4 > REUSE_BYTES)
        fail(`${what}: reuse keeps every row: ${ids.length} tokens x dIn ${dIn} x 4 bytes = ${(ids.length * dIn * 4 / 2 ** 20).toFixed(1)} MiB, ` +
          `more than the ${REUSE_BYTES / 2 ** 20} MiB it may hold; use fewer tokens or reuse: false`);
      await firstRead(starts[0]);
      // a window's rows: kept ones, else a run of the model (kept with reuse)
      const rowsOf = async (s) => {
        let w = kept.get(s);
        if (w) {
          if (!reuse) kept.delete(s);
          return w;
        }
        w = readWindow(s);
        if (reuse) kept.set(s, w);
        if (!read.has(s)) await firstRead(s);
        return w;
      };
      // window order: a seeded shuffle (xorshift32), a new one per pass
      let state = (config.seed ^ 0x9e3779b9) >>> 0 || 1;
      const rand = () => ((state ^= state << 13), (state ^= state >>> 17), (state ^= state << 5), (state >>> 0) / 2 ** 32);
      const order = [];
      const nextStart = () => {
        if (order.length === 0) {
          order.push(...starts);
          for (let i = order.length - 1; i > 0; i--) {
            const j = Math.floor(rand() * (i + 1));
            [order[i], order[j]] = [order[j], order[i]];
          }
        }
        return order.pop();
      };
      const sae = create(what, config);
      sae.hook = hook;
      try {
        const buf = new Float32Array(batch * dIn);
        let filled = 0, pending = null, last = null;
        for (let step = 0; step < steps; step++) {
          // onProgress, or anything run while it yielded, may have disposed the model: stop rather
          // than train on rows left over from a model that is gone (the SAE is freed)
          if (model.handle === 0)
            fail(`${what}: the model was disposed during training, after step ${step} of ${steps}; dispose it after trainSAE resolves`);
          while (filled < batch) {
            if (!pending) pending = { ...(await rowsOf(nextStart())), at: 0 };
            const take = Math.min(pending.rows - pending.at, batch - filled);
            buf.set(pending.data.subarray(pending.at * dIn, (pending.at + take) * dIn), filled * dIn);
            filled += take, (pending.at += take);
            if (pending.at === pending.rows) pending = null;
          }
          last = sae.trainStep(buf, { lr });
          filled = 0;
          if ((step + 1) % 10 === 0 || step + 1 === steps) {
            onProgress?.({ step: step + 1, steps, ...last });
            await new Promise((resolve) => setTimeout(resolve, 0));
          }
        }
      } catch (e) {
        sae.free();
        throw e;
      }
      return sae;
    },
  };
}
