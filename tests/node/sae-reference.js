// sae-reference.js: a float64 TopK sparse autoencoder (Gao et al. 2024) written from the paper's
// equations, sharing no code with src/sae/sae.c, for sae.test.js: the forward, the losses (normalised
// MSE and AuxK), and their gradient with the decoder rows' component along themselves removed.
// P: { 'enc.w' (S, d), 'enc.b' (S), 'dec.w' (S, d), 'b_pre' (d) } as sae.params() gives them.

/** The top k of values over the eligible latents: indices by value descending, index ascending. */
export function topK(values, k, eligible = null) {
  const order = [];
  for (let j = 0; j < values.length; j++) if (!eligible || eligible[j]) order.push(j);
  order.sort((a, b) => values[b] - values[a] || a - b);
  return order.slice(0, k);
}

/**
 * The loss of X (B rows of d) and its parts; with grads: true, the gradient (the decoder's projected).
 * dead: a 0/1 array of S (the AuxK latents); residual: a fixed r per row for the AuxK target (the
 * finite-difference check holds it constant, as the training does); else r = x - x^ of these P.
 */
export function saeReference(P, X, { d, S, k, auxK, auxCoef, dead, residual = null, grads = false }) {
  const B = X.length / d;
  const mean = new Float64Array(d);
  for (let b = 0; b < B; b++) for (let i = 0; i < d; i++) mean[i] += X[b * d + i] / B;
  let D = 0;
  for (let b = 0; b < B; b++) for (let i = 0; i < d; i++) D += (X[b * d + i] - mean[i]) ** 2;
  const G = grads ? { 'enc.w': new Float64Array(S * d), 'enc.b': new Float64Array(S), 'dec.w': new Float64Array(S * d), b_pre: new Float64Array(d) } : null;
  let ee = 0, aa = 0, fired = 0;
  const chosen = [], residuals = [];
  for (let b = 0; b < B; b++) {
    const x = X.subarray(b * d, (b + 1) * d);
    const xc = Array.from(x, (v, i) => v - P.b_pre[i]);
    const pre = new Float64Array(S);
    for (let j = 0; j < S; j++) {
      let s = P['enc.b'][j];
      for (let i = 0; i < d; i++) s += P['enc.w'][j * d + i] * xc[i];
      pre[j] = s;
    }
    const relu = pre.map((v) => Math.max(v, 0));
    const main = topK(relu, k).filter((j) => relu[j] > 0);
    chosen.push(main);
    fired += main.length;
    const xhat = Float64Array.from(P.b_pre);
    for (const j of main) for (let i = 0; i < d; i++) xhat[i] += relu[j] * P['dec.w'][j * d + i];
    const e = xhat.map((v, i) => v - x[i]);
    ee += e.reduce((s, v) => s + v * v, 0);
    const r = residual ? residual[b] : e.map((v) => -v);
    residuals.push(r);
    let aux = [], diff = null;
    if (auxK > 0 && dead.some((v) => v)) {
      aux = topK(relu, auxK, dead).filter((j) => relu[j] > 0);
      const ehat = new Float64Array(d);
      for (const j of aux) for (let i = 0; i < d; i++) ehat[i] += relu[j] * P['dec.w'][j * d + i];
      diff = ehat.map((v, i) => v - r[i]);
      aa += diff.reduce((s, v) => s + v * v, 0);
    }
    if (!grads) continue;
    const g = e.map((v) => (2 * v) / D), h = diff ? diff.map((v) => (2 * auxCoef * v) / D) : null;
    const dpre = new Float64Array(S);
    const dot = (j, v) => v.reduce((s, vi, i) => s + vi * P['dec.w'][j * d + i], 0);
    for (const j of main) {
      for (let i = 0; i < d; i++) G['dec.w'][j * d + i] += relu[j] * g[i];
      dpre[j] += dot(j, g);
    }
    for (const j of aux) {
      for (let i = 0; i < d; i++) G['dec.w'][j * d + i] += relu[j] * h[i];
      dpre[j] += dot(j, h);
    }
    for (let i = 0; i < d; i++) G.b_pre[i] += g[i];
    for (let j = 0; j < S; j++) {
      if (dpre[j] === 0) continue;
      G['enc.b'][j] += dpre[j];
      for (let i = 0; i < d; i++) {
        G['enc.w'][j * d + i] += dpre[j] * xc[i];
        G.b_pre[i] -= dpre[j] * P['enc.w'][j * d + i];
      }
    }
  }
  if (G) {
    for (let j = 0; j < S; j++) {
      let along = 0;
      for (let i = 0; i < d; i++) along += G['dec.w'][j * d + i] * P['dec.w'][j * d + i];
      for (let i = 0; i < d; i++) G['dec.w'][j * d + i] -= along * P['dec.w'][j * d + i];
    }
  }
  const fvu = ee / D, aux = aa / D;
  return { loss: fvu + auxCoef * aux, fvu, aux, l0: fired / B, chosen, residuals, grads: G };
}

/** The fraction of variance unexplained, in float64: sum |x - xhat|^2 over sum |x - mean(x)|^2, rows x d each. */
export function fvu64(x, xhat, rows, d) {
  let err = 0, total = 0;
  for (let i = 0; i < d; i++) {
    let m = 0;
    for (let r = 0; r < rows; r++) m += x[r * d + i] / rows;
    for (let r = 0; r < rows; r++) err += (x[r * d + i] - xhat[r * d + i]) ** 2, (total += (x[r * d + i] - m) ** 2);
  }
  return err / total;
}
