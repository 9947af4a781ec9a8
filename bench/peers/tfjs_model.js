// tfjs_model.js: the tiny Transformer of docs/attention-forms.md section 5 written with tfjs ops and
// trained with tfjs autograd, as the peer of lib.createModel's trainStep: decoder-only, pre-norm,
// sinusoidal positions, softmax attention with a causal mask, ReLU FFN, output projection,
// masked softmax cross-entropy, global-norm gradient clipping and AdamW (Adam + decoupled decay
// of the weight matrices). Attention is built the fast way in tfjs: K is transposed first and
// multiplied with a plain matMul (matMul(a, b, false, true) is ~13x slower in tfjs-wasm).
// The embedding lookup is a one-hot matMul, whose gradient every tfjs backend has.

/** Sinusoidal positions (T x C): PE[p, 2i] = sin(p / 10000^(2i/C)), PE[p, 2i+1] = cos(...). */
function sinusoid(T, C) {
  const pe = new Float32Array(T * C);
  for (let p = 0; p < T; p++)
    for (let i = 0; i < C; i += 2) {
      const a = p / 10000 ** (i / C);
      pe[p * C + i] = Math.sin(a);
      if (i + 1 < C) pe[p * C + i + 1] = Math.cos(a);
    }
  return pe;
}

// C = A B whose gradient transposes first: tfjs's own MatMul gradient calls
// matMul(dy, b, false, true) and matMul(a, dy, true, false), the slow transposed paths of the
// wasm backend (they took 80% of a training step here).
function fastMatMulOf(tf) {
  const t = (x) => tf.transpose(x, x.rank === 3 ? [0, 2, 1] : [1, 0]);
  return tf.customGrad((a, b, save) => {
    save([a, b]);
    return { value: tf.matMul(a, b), gradFunc: (dy, [sa, sb]) => [tf.matMul(dy, t(sb)), tf.matMul(t(sa), dy)] };
  });
}

/**
 * cfg: { vocab, dModel, heads, layers, dFF, T, batch, seed, lr, beta1, beta2, eps, weightDecay, clip,
 * fastGrad }. fastGrad: use the transpose-first matmul gradient instead of tfjs's own.
 * Returns { step(tokens Int32Array (B*T), targets Int32Array (B*T), -1 = no loss) -> loss, dispose() }.
 */
export function tfjsTinyTransformer(tf, cfg) {
  const { vocab: V, dModel: C, heads: H, layers: L, dFF: F, T, batch: B } = cfg;
  const dh = C / H;
  const mm = cfg.fastGrad ? fastMatMulOf(tf) : (a, b) => tf.matMul(a, b);
  let seed = cfg.seed ?? 1;
  const vars = [];
  const decayed = new Set(); // weight matrices (AdamW decays these, not biases or norms)
  const param = (shape, std, decay = true) => {
    const v = tf.variable(std === 0 ? tf.zeros(shape) : std === 1 && shape.length === 1 ? tf.ones(shape) :
      tf.randomNormal(shape, 0, std, 'float32', seed++));
    vars.push(v);
    if (decay) decayed.add(v);
    return v;
  };
  const wte = param([V, C], 0.02);
  const blocks = [];
  for (let l = 0; l < L; l++) {
    const s = 1 / Math.sqrt(C);
    blocks.push({
      ln1w: param([C], 1, false), ln1b: param([C], 0, false),
      wq: param([C, C], s), bq: param([C], 0, false), wk: param([C, C], s), bk: param([C], 0, false),
      wv: param([C, C], s), bv: param([C], 0, false), wo: param([C, C], s), bo: param([C], 0, false),
      ln2w: param([C], 1, false), ln2b: param([C], 0, false),
      w1: param([C, F], s), b1: param([F], 0, false), w2: param([F, C], 1 / Math.sqrt(F)), b2: param([C], 0, false),
    });
  }
  const lnfw = param([C], 1, false), lnfb = param([C], 0, false);
  const wout = param([C, V], 1 / Math.sqrt(C)), bout = param([V], 0, false);

  const pe = tf.keep(tf.tile(tf.tensor2d(sinusoid(T, C), [T, C]), [B, 1])); // (B T, C)
  // causal additive mask (T x T): 0 where j <= i, a large negative number above the diagonal
  const causal = tf.keep(tf.mul(tf.sub(1, tf.linalg.bandPart(tf.ones([T, T]), -1, 0)), -1e9));
  const optimizer = tf.train.adam(cfg.lr, cfg.beta1, cfg.beta2, cfg.eps);

  const layerNorm = (x, w, b) => {
    const { mean, variance } = tf.moments(x, -1, true);
    return tf.add(tf.mul(tf.div(tf.sub(x, mean), tf.sqrt(tf.add(variance, 1e-5))), w), b);
  };
  const heads = (x2) => tf.reshape(tf.transpose(tf.reshape(x2, [B, T, H, dh]), [0, 2, 1, 3]), [B * H, T, dh]);
  const attention = (x2, p) => {
    const q = heads(tf.add(mm(x2, p.wq), p.bq));
    const kT = tf.transpose(heads(tf.add(mm(x2, p.wk), p.bk)), [0, 2, 1]); // (B H, dh, T)
    const v = heads(tf.add(mm(x2, p.wv), p.bv));
    const s = tf.add(tf.mul(mm(q, kT), 1 / Math.sqrt(dh)), causal);
    const o = mm(tf.softmax(s), v); // (B H, T, dh)
    const o2 = tf.reshape(tf.transpose(tf.reshape(o, [B, H, T, dh]), [0, 2, 1, 3]), [B * T, C]);
    return tf.add(mm(o2, p.wo), p.bo);
  };

  const lossOf = (tokens, targets, weight) => () => {
    let x = tf.add(mm(tf.cast(tf.oneHot(tokens, V), 'float32'), wte), pe); // (B T, C)
    for (const p of blocks) {
      x = tf.add(x, attention(layerNorm(x, p.ln1w, p.ln1b), p));
      const h = layerNorm(x, p.ln2w, p.ln2b);
      x = tf.add(x, tf.add(mm(tf.relu(tf.add(mm(h, p.w1), p.b1)), p.w2), p.b2));
    }
    const logits = tf.add(mm(layerNorm(x, lnfw, lnfb), wout), bout); // (B T, V)
    const onehot = tf.cast(tf.oneHot(targets, V), 'float32');
    const nll = tf.neg(tf.sum(tf.mul(tf.logSoftmax(logits), onehot), -1));
    return tf.div(tf.sum(tf.mul(nll, weight)), tf.maximum(tf.sum(weight), 1));
  };

  return {
    vars,
    /** One AdamW step on this batch; returns the loss (a number). */
    step(tokensArr, targetsArr) {
      return tf.tidy(() => {
        const tokens = tf.tensor1d(tokensArr, 'int32');
        const targets = tf.tensor1d(targetsArr.map((t) => (t < 0 ? 0 : t)), 'int32');
        const weight = tf.tensor1d(Float32Array.from(targetsArr, (t) => (t < 0 ? 0 : 1))); // (B T): 1 = scored
        const { value, grads } = tf.variableGrads(lossOf(tokens, targets, weight), vars);
        const gs = vars.map((v) => grads[v.name]);
        const norm = tf.sqrt(tf.addN(gs.map((g) => tf.sum(tf.square(g)))));
        const scale = tf.minimum(1, tf.div(cfg.clip, tf.add(norm, 1e-6)));
        optimizer.applyGradients(vars.map((v, i) => ({ name: v.name, tensor: tf.mul(gs[i], scale) })));
        for (const v of decayed) v.assign(tf.mul(v, 1 - cfg.lr * cfg.weightDecay));
        return value.dataSync()[0];
      });
    },
    dispose() {
      for (const v of vars) v.dispose();
      pe.dispose(), causal.dispose(), optimizer.dispose();
    },
  };
}

/** A batch of the `reverse` task laid out as the decoder-only model sees it (src, 0, tgt[:-1]). */
export function reverseBatch(B, length, symbols, rand) {
  const T = 2 * length;
  const tokens = new Int32Array(B * T), targets = new Int32Array(B * T).fill(-1);
  for (let b = 0; b < B; b++) {
    const src = Array.from({ length }, () => 1 + Math.floor(rand() * symbols));
    const tgt = [...src].reverse();
    for (let i = 0; i < T; i++) {
      tokens[b * T + i] = i < length ? src[i] : i === length ? 0 : tgt[i - length - 1];
      if (i >= length) targets[b * T + i] = tgt[i - length];
    }
  }
  return { tokens, targets, T };
}
