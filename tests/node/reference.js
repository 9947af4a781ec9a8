// reference.js: an independent float64 reference for every form of the registry (lib.forms), the
// only per-form code of tests/node/conformance.test.js. Each entry takes
// { q, k, v, x, n, m, d, heads, causal, options, params, maxLen } (options: the layer's finished
// values, params: tensor name -> Float32Array, maxLen: the layer's L) and returns the output
// (n*d) as a Float64Array. Written from docs/attention-forms.md and the C sources
// (src/attention/*.c, src/model/form_*.c); shares no code with the C core.
import { linearAttentionF64 } from './helpers.js';
import { retnetGammas } from '../../wasm/index.js';

// ---- local / strided (section 4): softmax over the band (plus every stride-th key) ----------
// Float64 local attention from its definition: per head, per query, the band's keys only.
export function localF64({ q, k, v, n, m = n, d, dv = d, heads = 1, window, causal = true, stride = 0 }) {
  const dh = d / heads, dvh = dv / heads, scale = 1 / Math.sqrt(dh);
  const output = new Float64Array(n * dv), weights = new Float64Array(heads * n * m);
  for (let h = 0; h < heads; h++)
    for (let i = 0; i < n; i++) {
      const keys = [];
      for (let j = 0; j < m; j++) {
        const band = causal ? j <= i && j > i - window : Math.abs(i - j) <= Math.floor(window / 2);
        const strided = stride > 0 && Math.abs(i - j) % stride === 0 && (!causal || j <= i);
        if (band || strided) keys.push(j);
      }
      if (!keys.length) continue;
      const s = keys.map((j) => { let x = 0; for (let c = 0; c < dh; c++) x += q[i * d + h * dh + c] * k[j * d + h * dh + c]; return x * scale; });
      const mx = Math.max(...s), e = s.map((x) => Math.exp(x - mx)), sum = e.reduce((a, b) => a + b, 0);
      keys.forEach((j, t) => {
        const p = e[t] / sum;
        weights[(h * n + i) * m + j] = p;
        for (let c = 0; c < dvh; c++) output[i * dv + h * dvh + c] += p * v[j * dv + h * dvh + c];
      });
    }
  return { output, weights };
}

// ---- retention (section 4): O = ((Q K^T s) ⊙ D) V, D = gamma^|i-j| (zero above the diagonal when causal)

// Float64 retention from its definition: O_i = sum_j scale (q_i . k_j) gamma^|i-j| v_j.
export function retentionF64({ q, k, v, n, d, dv = d, heads = 1, causal = true, gamma }) {
  const dh = d / heads, dvh = dv / heads, scale = 1 / Math.sqrt(dh);
  const g = gamma === undefined ? [...retnetGammas(heads)] : typeof gamma === 'number' ? new Array(heads).fill(gamma) : [...gamma];
  const output = new Float64Array(n * dv), weights = new Float64Array(heads * n * n);
  for (let h = 0; h < heads; h++)
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) {
        if (causal && j > i) continue;
        let s = 0;
        for (let c = 0; c < dh; c++) s += q[i * d + h * dh + c] * k[j * d + h * dh + c];
        const w = s * scale * Math.fround(g[h]) ** Math.abs(i - j);
        weights[(h * n + i) * n + j] = w;
        for (let c = 0; c < dvh; c++) output[i * dv + h * dvh + c] += w * v[j * dv + h * dvh + c];
      }
  return { output, weights };
}

// ---- Linformer (section 4), E, F (k, L) shared by heads. Float64 Linformer: Kp = E[:, :n] K, Vp = F[:, :n] V, softmax(Q Kp^T s) Vp; weights P F[:, :n].
export function linformerF64({ q, k, v, n, d, dv = d, heads = 1, E, F, proj, maxLen }) {
  const dh = d / heads, dvh = dv / heads, scale = 1 / Math.sqrt(dh);
  const Kp = new Float64Array(proj * d), Vp = new Float64Array(proj * dv);
  for (let r = 0; r < proj; r++)
    for (let j = 0; j < n; j++) {
      for (let c = 0; c < d; c++) Kp[r * d + c] += E[r * maxLen + j] * k[j * d + c];
      for (let c = 0; c < dv; c++) Vp[r * dv + c] += F[r * maxLen + j] * v[j * dv + c];
    }
  const output = new Float64Array(n * dv), weights = new Float64Array(heads * n * n);
  for (let h = 0; h < heads; h++)
    for (let i = 0; i < n; i++) {
      const s = [];
      for (let r = 0; r < proj; r++) {
        let x = 0;
        for (let c = 0; c < dh; c++) x += q[i * d + h * dh + c] * Kp[r * d + h * dh + c];
        s.push(x * scale);
      }
      const mx = Math.max(...s), e = s.map((x) => Math.exp(x - mx)), sum = e.reduce((a, b) => a + b, 0);
      for (let r = 0; r < proj; r++) {
        const p = e[r] / sum;
        for (let c = 0; c < dvh; c++) output[i * dv + h * dvh + c] += p * Vp[r * dv + h * dvh + c];
        for (let j = 0; j < n; j++) weights[(h * n + i) * n + j] += p * F[r * maxLen + j];
      }
    }
  return { output, weights };
}

// ---- decay-gated linear attention (section 4c), from its recurrence: per head, the gate
// a_t = 1 / (1 + exp(x_t . W_h + b_h)) (log a = -softplus), S_t = a_t S_{t-1} + k_t^T v_t,
// o_t = scale q_t S_t. W (heads, d) and b (heads) are the form's 'weight' and 'bias'.
export function gatedF64({ q, k, v, x, n, d, heads, W, b }) {
  const dh = d / heads, scale = 1 / Math.sqrt(dh);
  const output = new Float64Array(n * d);
  for (let h = 0; h < heads; h++) {
    const S = new Float64Array(dh * dh);
    for (let t = 0; t < n; t++) {
      let z = b[h];
      for (let c = 0; c < d; c++) z += x[t * d + c] * W[h * d + c];
      const a = 1 / (1 + Math.exp(z));
      for (let r = 0; r < dh; r++)
        for (let c = 0; c < dh; c++) S[r * dh + c] = a * S[r * dh + c] + k[t * d + h * dh + r] * v[t * d + h * dh + c];
      for (let c = 0; c < dh; c++) {
        let o = 0;
        for (let r = 0; r < dh; r++) o += q[t * d + h * dh + r] * S[r * dh + c];
        output[t * d + h * dh + c] = o * scale;
      }
    }
  }
  return output;
}

// ---- GLA (section 4c), from its recurrence: a gate per key channel, alpha_tc = 1 / (1 +
// exp(x_t . W_c + b_c)) (W (d, d) and b (d): the form's 'weight' and 'bias'), each row r of a head's
// state fading by its channel's gate: S_t[r] = alpha_t,r S_{t-1}[r] + k_tr v_t, o_t = scale q_t S_t.
export function glaF64({ q, k, v, x, n, d, heads, W, b }) {
  const dh = d / heads, scale = 1 / Math.sqrt(dh);
  const output = new Float64Array(n * d);
  for (let h = 0; h < heads; h++) {
    const S = new Float64Array(dh * dh);
    for (let t = 0; t < n; t++) {
      for (let r = 0; r < dh; r++) {
        const ch = h * dh + r;
        let z = b[ch];
        for (let c = 0; c < d; c++) z += x[t * d + c] * W[ch * d + c];
        const a = 1 / (1 + Math.exp(z));
        for (let c = 0; c < dh; c++) S[r * dh + c] = a * S[r * dh + c] + k[t * d + ch] * v[t * d + h * dh + c];
      }
      for (let c = 0; c < dh; c++) {
        let o = 0;
        for (let r = 0; r < dh; r++) o += q[t * d + h * dh + r] * S[r * dh + c];
        output[t * d + h * dh + c] = o * scale;
      }
    }
  }
  return output;
}

// ---- DeltaNet and Gated DeltaNet (section 4c), from the recurrence with the projection-made
// strengths: beta_t = sigmoid(x_t . Wb_h + bb_h), a_t = 1 / (1 + exp(x_t . Wa_h + ba_h)) (Gated
// DeltaNet; 1 for DeltaNet), k^ = k / sqrt(|k|^2 + 1e-6), S_t = a_t (S - beta k^^T (k^ S)) +
// beta k^^T v_t, o_t = scale q_t S_t. The form's tensors: beta_weight (heads, d), beta_bias,
// gate_weight, gate_bias.
// KDA (kda: true): a decay per key channel, alpha_t,c = exp(-exp(gate_a_log_h) softplus(x_t .
// gate_weight_c + gate_bias_c)) (gate_weight (d, d), or gate_down (r, d) and gate_up (d, r) at
// attentionOptions.gateRank r; gate_bias (d), gate_a_log (heads)), applied to
// the state's rows before the write: S_t = (I - beta k^^T k^) diag(alpha_t) S + beta k^^T v_t.
export function deltaF64({ q, k, v, x, n, d, heads, params, gated, kda = false }) {
  const dh = d / heads, scale = 1 / Math.sqrt(dh);
  const softplus = (z) => (z > 0 ? z + Math.log1p(Math.exp(-z)) : Math.log1p(Math.exp(z)));
  const rank = params.gate_down ? params.gate_down.length / d : 0; // attentionOptions.gateRank
  const channelDecay = (t, ch) => {
    let z = params.gate_bias[ch];
    if (rank) // gate_down (rank, d), gate_up (d, rank)
      for (let i = 0; i < rank; i++) {
        let y = 0;
        for (let c = 0; c < d; c++) y += x[t * d + c] * params.gate_down[i * d + c];
        z += params.gate_up[ch * rank + i] * y;
      }
    else for (let c = 0; c < d; c++) z += x[t * d + c] * params.gate_weight[ch * d + c];
    return Math.exp(-Math.exp(params.gate_a_log[Math.floor(ch / dh)]) * softplus(z));
  };
  const proj = (W, b, t, h) => {
    let z = b[h];
    for (let c = 0; c < d; c++) z += x[t * d + c] * W[h * d + c];
    return z;
  };
  const output = new Float64Array(n * d);
  for (let h = 0; h < heads; h++) {
    let S = new Float64Array(dh * dh);
    for (let t = 0; t < n; t++) {
      const beta = 1 / (1 + Math.exp(-proj(params.beta_weight, params.beta_bias, t, h)));
      const a = gated && !kda ? 1 / (1 + Math.exp(proj(params.gate_weight, params.gate_bias, t, h))) : 1;
      const alpha = Array.from({ length: dh }, (_, r) => (kda ? channelDecay(t, h * dh + r) : a));
      let norm = 1e-6;
      for (let r = 0; r < dh; r++) norm += k[t * d + h * dh + r] ** 2;
      norm = Math.sqrt(norm);
      const kh = Array.from({ length: dh }, (_, r) => k[t * d + h * dh + r] / norm);
      const u = new Float64Array(dh);
      for (let r = 0; r < dh; r++) for (let c = 0; c < dh; c++) u[c] += kh[r] * alpha[r] * S[r * dh + c]; // k^ diag(alpha) S
      const next = new Float64Array(dh * dh);
      for (let r = 0; r < dh; r++)
        for (let c = 0; c < dh; c++)
          next[r * dh + c] = alpha[r] * S[r * dh + c] - beta * kh[r] * u[c] + beta * kh[r] * v[t * d + h * dh + c];
      S = next;
      for (let c = 0; c < dh; c++) {
        let o = 0;
        for (let r = 0; r < dh; r++) o += q[t * d + h * dh + r] * S[r * dh + c];
        output[t * d + h * dh + c] = o * scale;
      }
    }
  }
  return output;
}

function retentionGammas(heads, options, params) {
  const decay = options.decay ?? 'retnet';
  if (decay === 'retnet') return [...retnetGammas(heads)].map(Math.fround);
  if (decay === 'learned') return [...params.decay_logit].map((z) => Math.fround(1 / (1 + Math.exp(-z))));
  return new Array(heads).fill(Math.fround(Number(decay)));
}

// ---- Synthesizer (section 3); layouts as src/attention/synthesizer.c: a leading heads axis,
// W1 (d, d), b1 (d), W2 (d, L), b2 (L), R (L, L), W2a (d, a), W2b (d, b), R1, R2 (L, k),
// alphaLogits (heads, components); a mixture's tensors are named "<kind>.<tensor>".
function hiddenF64(x, W1, b1, hd, n, d) { // relu(X W1[hd] + b1[hd]) (n, d)
  const H = new Float64Array(n * d);
  for (let i = 0; i < n; i++)
    for (let c = 0; c < d; c++) {
      let z = b1[hd * d + c];
      for (let t = 0; t < d; t++) z += x[i * d + t] * W1[hd * d * d + t * d + c];
      H[i * d + c] = Math.max(z, 0);
    }
  return H;
}

function synthLogits(kind, P, hd, { x, q, k, n, d, heads, L, a, b, rank }) {
  const B = new Float64Array(n * n);
  if (kind === 'dense') {
    const H = hiddenF64(x, P.W1, P.b1, hd, n, d);
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) {
        let z = P.b2[hd * L + j];
        for (let t = 0; t < d; t++) z += H[i * d + t] * P.W2[hd * d * L + t * L + j];
        B[i * n + j] = z;
      }
  } else if (kind === 'random') {
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) B[i * n + j] = P.R[hd * L * L + i * L + j];
  } else if (kind === 'factorized-dense') {
    const Ha = hiddenF64(x, P.W1a, P.b1a, hd, n, d), Hb = hiddenF64(x, P.W1b, P.b1b, hd, n, d);
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) { // B[i, j] = Ba[i, floor(j / b)] * Bb[i, j mod b]
        const p = Math.floor(j / b), r = j % b;
        let ba = 0, bb = 0;
        for (let t = 0; t < d; t++) {
          ba += Ha[i * d + t] * P.W2a[hd * d * a + t * a + p];
          bb += Hb[i * d + t] * P.W2b[hd * d * b + t * b + r];
        }
        B[i * n + j] = ba * bb;
      }
  } else if (kind === 'factorized-random') {
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) {
        let z = 0;
        for (let t = 0; t < rank; t++) z += P.R1[hd * L * rank + i * rank + t] * P.R2[hd * L * rank + j * rank + t];
        B[i * n + j] = z;
      }
  } else if (kind === 'dot') {
    const dh = d / heads;
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) {
        let z = 0;
        for (let t = 0; t < dh; t++) z += q[i * d + hd * dh + t] * k[j * d + hd * dh + t];
        B[i * n + j] = z / Math.sqrt(dh);
      }
  } else throw new Error(`reference.js: unknown synthesizer kind ${kind}`);
  return B;
}

function softmax(row) {
  const mx = Math.max(...row), e = row.map((z) => Math.exp(z - mx)), s = e.reduce((p, c) => p + c, 0);
  return e.map((z) => z / s);
}

function synthesizerF64(variant, { q, k, v, x, n, d, heads, causal, options, params, maxLen }) {
  const kinds = variant === 'mixture' ? options.components : [variant];
  const cfg = { x, q, k, n, d, heads, L: maxLen, a: options.a, b: options.b, rank: options.k };
  const output = new Float64Array(n * d), dh = d / heads;
  for (let hd = 0; hd < heads; hd++) {
    const alpha = variant === 'mixture' ? softmax([...params.alphaLogits.slice(hd * kinds.length, (hd + 1) * kinds.length)]) : [1];
    const B = new Float64Array(n * n);
    kinds.forEach((kind, c) => {
      const P = {};
      for (const [name, t] of Object.entries(params))
        if (variant !== 'mixture') P[name] = t;
        else if (name.startsWith(`${kind}.`)) P[name.slice(kind.length + 1)] = t;
      const Bc = synthLogits(kind, P, hd, cfg);
      for (let t = 0; t < n * n; t++) B[t] += alpha[c] * Bc[t];
    });
    for (let i = 0; i < n; i++) {
      const p = softmax(Array.from({ length: n }, (_, j) => (causal && j > i ? -Infinity : B[i * n + j])));
      for (let j = 0; j < n; j++)
        for (let c = 0; c < dh; c++) output[i * d + hd * dh + c] += p[j] * v[j * d + hd * dh + c];
    }
  }
  return output;
}

// ---- MLA (section 4d): keys and values from a shared latent, plus a rotary key shared by the heads.
// Float64 from the definition (the plain path): c = x W_DKV^T, k^C = c W_UK^T, v = c W_UV^T,
// k^R = RoPE(x W_KR^T), q^C = xq W_Q^T, q^R = RoPE_h(xq W_QR^T), xq = x or x W_DQ^T (qRank > 0).
export function mlaF64({ x, n, d, heads, causal, options, params }) {
  const R = options.kvRank, P = options.ropeDim, Qr = options.qRank ?? 0, hd = d / heads;
  // y (n, O) = a (n, I) W^T, W (O, I)
  const lin = (a, W, I) => {
    const O = W.length / I, y = new Float64Array(n * O);
    for (let t = 0; t < n; t++) for (let o = 0; o < O; o++) { let s = 0; for (let i = 0; i < I; i++) s += a[t * I + i] * W[o * I + i]; y[t * O + o] = s; }
    return y;
  };
  // RoPE on each P-wide group of a row: pair (2r, 2r+1) turned by t 10000^(-2r/P)
  const rope = (y, groups) => {
    for (let t = 0; t < n; t++) for (let g = 0; g < groups; g++) for (let r = 0; 2 * r < P; r++) {
      const a = t * 10000 ** (-(2 * r) / P), o = (t * groups + g) * P + 2 * r, x0 = y[o], x1 = y[o + 1];
      y[o] = x0 * Math.cos(a) - x1 * Math.sin(a);
      y[o + 1] = x0 * Math.sin(a) + x1 * Math.cos(a);
    }
    return y;
  };
  const c = lin(x, params.w_dkv, d), kc = lin(c, params.w_uk, R), v = lin(c, params.w_uv, R);
  // ropeDim 0: no rotary part, and no W_KR, W_QR tensors
  const kr = P ? rope(lin(x, params.w_kr, d), 1) : new Float64Array(0);
  const xq = Qr ? lin(x, params.w_dq, d) : x, inq = Qr || d;
  const qc = lin(xq, Qr ? params.w_uq : params.w_q, inq), qr = P ? rope(lin(xq, params.w_qr, inq), heads) : new Float64Array(0);
  const scale = 1 / Math.sqrt(hd + P), out = new Float64Array(n * d);
  for (let h = 0; h < heads; h++)
    for (let i = 0; i < n; i++) {
      const m = causal ? i + 1 : n, s = new Float64Array(m);
      for (let j = 0; j < m; j++) {
        let z = 0;
        for (let e = 0; e < hd; e++) z += qc[i * d + h * hd + e] * kc[j * d + h * hd + e];
        for (let e = 0; e < P; e++) z += qr[(i * heads + h) * P + e] * kr[j * P + e];
        s[j] = z * scale;
      }
      const mx = Math.max(...s);
      let sum = 0;
      for (let j = 0; j < m; j++) sum += (s[j] = Math.exp(s[j] - mx));
      for (let j = 0; j < m; j++) for (let e = 0; e < hd; e++) out[i * d + h * hd + e] += (s[j] / sum) * v[j * d + h * hd + e];
    }
  return out;
}

const linear = (feature) => ({ q, k, v, n, m, d, heads, causal }) =>
  linearAttentionF64({ q, k, v, n, m, d, heads, feature, causal }).output;
const synth = (variant) => (a) => synthesizerF64(variant, a);

// ---- softmax with 2025's switches (docs/attention-forms.md section 1b) ----------------------
// qkNorm: q, k per head x / sqrt(mean(x^2) + 1e-5) * scale; softcap: c tanh(s / c); window: keys
// j > i - window; learnedSinks: exp(z_h) joins each row's denominator; outputGate: O * sigmoid(x W^T).
function softmaxSwitchesF64({ q, k, v, x, n, m, d, heads, causal, options = {}, params = {} }) {
  const dh = d / heads, scale = 1 / Math.sqrt(dh);
  const norm = (a, rows, w) => {
    if (!options.qkNorm) return a;
    const out = new Float64Array(a.length);
    for (let r = 0; r < rows * heads; r++) {
      let ss = 0;
      for (let c = 0; c < dh; c++) ss += a[r * dh + c] ** 2;
      const rs = 1 / Math.sqrt(ss / dh + 1e-5);
      for (let c = 0; c < dh; c++) out[r * dh + c] = a[r * dh + c] * rs * w[c];
    }
    return out;
  };
  const qn = norm(q, n, params.q_norm), kn = norm(k, m, params.k_norm);
  const cap = typeof options.softcap === 'number' ? options.softcap : 0;
  const out = new Float64Array(n * d), row = new Float64Array(m);
  for (let h = 0; h < heads; h++)
    for (let i = 0; i < n; i++) {
      let mx = options.learnedSinks ? params.sinks[h] : -Infinity;
      for (let j = 0; j < m; j++) {
        let s = 0;
        for (let c = 0; c < dh; c++) s += qn[i * d + h * dh + c] * kn[j * d + h * dh + c];
        s *= scale;
        if (cap > 0) s = cap * Math.tanh(s / cap);
        const allowed = !(causal && j > i) && !(options.window && j <= i - options.window);
        row[j] = allowed ? s : -Infinity;
        mx = Math.max(mx, row[j]);
      }
      let sum = options.learnedSinks ? Math.exp(params.sinks[h] - mx) : 0;
      for (let j = 0; j < m; j++) sum += row[j] = mx === -Infinity ? 0 : Math.exp(row[j] - mx);
      for (let j = 0; j < m; j++)
        for (let c = 0; c < dh; c++) out[i * d + h * dh + c] += (sum > 0 ? row[j] / sum : 0) * v[j * d + h * dh + c];
    }
  if (options.outputGate)
    for (let i = 0; i < n; i++)
      for (let c = 0; c < d; c++) {
        let z = 0;
        for (let e = 0; e < d; e++) z += x[i * d + e] * params.gate[c * d + e];
        out[i * d + c] *= 1 / (1 + Math.exp(-z));
      }
  return out;
}

// ---- NSA (section 4e): compressed blocks, selected blocks and a window, mixed by gates --------
// Native Sparse Attention (Yuan et al. 2025) from the paper's definitions, causal, per head h and
// query t: block b = keys [b bs, (b+1) bs), visible once complete ((b+1) bs - 1 <= t); the
// compressed branch attends over the visible blocks' mean keys and values (compress 'mlp': per head
// wk2 silu(wk1 concat_i(k_i + pe_i)), values likewise); the selection takes
// block 0, the current and the previous block and the topBlocks most important other visible
// blocks (importance: the compressed weights summed over the kvHeads group; ties: the lower
// block) and attends over their keys j <= t; the window attends over j > t - window. Gates
// sigmoid(x W^T + b), row 3h + (0 cmp, 1 slc, 2 win). Returns output (n*d), weights (heads, n, n):
// the effective weight of key j in the output (mlp: the selected and window branches' only), selection (heads, n, n): 1 for the keys the
// selected blocks or the window read, and blocks (heads, n): the selected blocks' lists.
export function nsaF64({ q, k, v, x, n, d, heads, kvHeads = heads, options, params }) {
  const { blockSize: bs, topBlocks: top, window: win } = options;
  const dh = d / heads, scale = 1 / Math.sqrt(dh), group = heads / kvHeads;
  const gate = (t, h, j) => {
    let z = params.bias[3 * h + j];
    for (let e = 0; e < d; e++) z += x[t * d + e] * params.weight[(3 * h + j) * d + e];
    return 1 / (1 + Math.exp(-z));
  };
  // the complete blocks' keys and values (nb, d): means, or the learned compression per head
  const nb = Math.floor(n / bs), kbar = new Float64Array(nb * d), vbar = new Float64Array(nb * d);
  const mlp = options.compress === 'mlp';
  const compressed = (X, W1, W2, b, hh) => { // W2 silu(W1 concat_i(X_i + pe_i)), head hh of block b
    const x = [];
    for (let i = 0; i < bs; i++) for (let c = 0; c < dh; c++) x.push(X[(b * bs + i) * d + hh * dh + c] + params.pe[i * dh + c]);
    const a = Array.from({ length: dh }, (_, o) => x.reduce((s, xi, j) => s + W1[o * bs * dh + j] * xi, 0));
    const r = a.map((z) => z / (1 + Math.exp(-z)));
    return Array.from({ length: dh }, (_, o) => r.reduce((s, ri, j) => s + W2[o * dh + j] * ri, 0));
  };
  for (let b = 0; b < nb; b++)
    if (mlp)
      for (let hh = 0; hh < heads; hh++) {
        kbar.set(compressed(k, params.wk1, params.wk2, b, hh), b * d + hh * dh);
        vbar.set(compressed(v, params.wv1, params.wv2, b, hh), b * d + hh * dh);
      }
    else
      for (let i = b * bs; i < (b + 1) * bs; i++)
        for (let c = 0; c < d; c++) { kbar[b * d + c] += k[i * d + c] / bs; vbar[b * d + c] += v[i * d + c] / bs; }
  // softmax of head h's query t over rows `rows` of keys K: the weights by row
  const softmaxOver = (h, t, rows, K) => {
    const s = rows.map((j) => { let z = 0; for (let c = 0; c < dh; c++) z += q[t * d + h * dh + c] * K[j * d + h * dh + c]; return z * scale; });
    const mx = Math.max(...s), e = s.map((z) => Math.exp(z - mx)), sum = e.reduce((a, b) => a + b, 0);
    return e.map((z) => z / sum);
  };
  const range = (lo, hi) => Array.from({ length: Math.max(0, hi - lo) }, (_, i) => lo + i);
  const output = new Float64Array(n * d), weights = new Float64Array(heads * n * n), selection = new Float64Array(heads * n * n);
  const blocks = [];
  for (let t = 0; t < n; t++) {
    const visible = range(0, Math.floor((t + 1) / bs)), cur = Math.floor(t / bs);
    const pcmp = Array.from({ length: heads }, (_, h) => (visible.length ? softmaxOver(h, t, visible, kbar) : []));
    for (let g0 = 0; g0 < heads; g0 += group) {
      const importance = visible.map((b) => { let s = 0; for (let h = g0; h < g0 + group; h++) s += pcmp[h][b]; return s; });
      const chosen = new Set([0, cur, ...(cur > 0 ? [cur - 1] : [])]);
      const ranked = visible.filter((b) => !chosen.has(b)).sort((a, b) => importance[b] - importance[a] || a - b);
      ranked.slice(0, top).forEach((b) => chosen.add(b));
      const slcKeys = [...chosen].sort((a, b) => a - b).flatMap((b) => range(b * bs, Math.min((b + 1) * bs, t + 1)));
      const winKeys = range(Math.max(0, t - win + 1), t + 1);
      for (let h = g0; h < g0 + group; h++) {
        blocks[h * n + t] = [...chosen].sort((a, b) => a - b);
        const A = new Float64Array(n);
        const gc = gate(t, h, 0), gs = gate(t, h, 1), gw = gate(t, h, 2);
        // mean blocks: the compressed branch as weights on the keys; mlp: added to the output directly
        if (!mlp) visible.forEach((b, i) => { for (let j = b * bs; j < (b + 1) * bs; j++) A[j] += (gc * pcmp[h][i]) / bs; });
        else visible.forEach((b, i) => { for (let c = 0; c < dh; c++) output[t * d + h * dh + c] += gc * pcmp[h][i] * vbar[b * d + h * dh + c]; });
        softmaxOver(h, t, slcKeys, k).forEach((p, i) => { A[slcKeys[i]] += gs * p; });
        softmaxOver(h, t, winKeys, k).forEach((p, i) => { A[winKeys[i]] += gw * p; });
        for (const j of [...slcKeys, ...winKeys]) selection[(h * n + t) * n + j] = 1;
        // out = sum_j A_j v_j: the compressed branch's mean values are the block's values / bs
        for (let j = 0; j <= t; j++) {
          weights[(h * n + t) * n + j] = A[j];
          for (let c = 0; c < dh; c++) output[t * d + h * dh + c] += A[j] * v[j * d + h * dh + c];
        }
      }
    }
  }
  return { output, weights, selection, blocks };
}

// ---- DSA (section 4f): the lightning indexer, top-k keys per query, softmax over them --------
// Written from the paper's formulas (DeepSeek-V3.2-Exp, section 2.1): I_ts = sum_j w_tj ReLU(q^I_tj .
// k^I_s), q^I_tj = W_qI[j] x_t, k^I_s = W_kI x_s, w_tj = W_w[j] x_t; params as nn.Linear keeps them
// (out, in): w_qi (J D, d), w_ki (D, d), w_w (J, d).
export function dsaIndexF64({ x, n, d, options, params }) {
  const J = options.indexHeads, D = options.indexDim;
  const lin = (W, rows, t) => Array.from({ length: rows }, (_, r) => { let z = 0; for (let c = 0; c < d; c++) z += W[r * d + c] * x[t * d + c]; return z; });
  const qI = [], kI = [], w = [];
  for (let t = 0; t < n; t++) qI.push(lin(params.w_qi, J * D, t)), kI.push(lin(params.w_ki, D, t)), w.push(lin(params.w_w, J, t));
  // I[t][s] for s <= t
  return Array.from({ length: n }, (_, t) => Array.from({ length: t + 1 }, (_, s) => {
    let acc = 0;
    for (let j = 0; j < J; j++) {
      let a = 0;
      for (let r = 0; r < D; r++) a += qI[t][j * D + r] * kI[s][r];
      acc += w[t][j] * Math.max(a, 0);
    }
    return acc;
  }));
}

// The top k of one row of scores, ties to the lower index, as ascending indices.
export function dsaTopK(row, k) {
  return row.map((score, s) => ({ score, s })).sort((a, b) => b.score - a.score || a.s - b.s).slice(0, k)
    .map((e) => e.s).sort((a, b) => a - b);
}

// Softmax of one head of query t over the keys `keys`: probabilities in the order of keys.
function dsaHeadProbs(q, k, t, h, dh, d, keys) {
  const s = keys.map((j) => { let z = 0; for (let c = 0; c < dh; c++) z += q[t * d + h * dh + c] * k[j * d + h * dh + c]; return z / Math.sqrt(dh); });
  const mx = Math.max(...s), e = s.map((z) => Math.exp(z - mx)), sum = e.reduce((a, b) => a + b, 0);
  return e.map((z) => z / sum);
}

// The output (n*d), the weights used (heads*n*n), each query's keys (sets) and the indexer's loss:
// the mean over the queries of KL(p || softmax(I over the set)), p the dense causal attention summed
// over the heads, restricted to the set (every s <= t in the warm-up) and L1-normalised.
export function dsaF64({ q, k, v, x, n, d, heads, options, params }) {
  const dh = d / heads, sparse = options.stage !== 'warmup';
  const I = dsaIndexF64({ x, n, d, options, params });
  const output = new Float64Array(n * d), weights = new Float64Array(heads * n * n), sets = [];
  let kl = 0;
  for (let t = 0; t < n; t++) {
    const all = Array.from({ length: t + 1 }, (_, s) => s);
    const keys = sparse ? dsaTopK(I[t], options.topK) : all;
    sets.push(keys);
    const dense = new Float64Array(t + 1);
    for (let h = 0; h < heads; h++) {
      const p = dsaHeadProbs(q, k, t, h, dh, d, keys);
      keys.forEach((j, i) => {
        weights[(h * n + t) * n + j] = p[i];
        for (let c = 0; c < dh; c++) output[t * d + h * dh + c] += p[i] * v[j * d + h * dh + c];
      });
      dsaHeadProbs(q, k, t, h, dh, d, all).forEach((z, s) => { dense[s] += z; });
    }
    const z = keys.reduce((a, j) => a + dense[j], 0), mx = Math.max(...keys.map((j) => I[t][j]));
    const lse = mx + Math.log(keys.reduce((a, j) => a + Math.exp(I[t][j] - mx), 0));
    for (const j of keys) {
      const p = dense[j] / z;
      if (p > 0) kl += p * (Math.log(p) - (I[t][j] - lse));
    }
  }
  return { output, weights, sets, indexerLoss: kl / n };
}

export const REFERENCES = {
  softmax: softmaxSwitchesF64,
  local: ({ q, k, v, n, m, d, heads, causal, options }) => localF64({ q, k, v, n, m, d, heads, causal, window: options.window }).output,
  strided: ({ q, k, v, n, m, d, heads, causal, options }) =>
    localF64({ q, k, v, n, m, d, heads, causal, window: options.window, stride: options.stride }).output,
  'linear:elu+1': linear('elu+1'),
  'linear:relu': linear('relu'),
  'linear:efficient': linear('efficient'),
  'linear:taylor': linear('taylor'),
  'synth:dense': synth('dense'),
  'synth:random': synth('random'),
  'synth:factorized-dense': synth('factorized-dense'),
  'synth:factorized-random': synth('factorized-random'),
  'synth:mixture': synth('mixture'),
  delta: ({ q, k, v, x, n, d, heads, params }) => deltaF64({ q, k, v, x, n, d, heads, params, gated: false }),
  'gated-delta': ({ q, k, v, x, n, d, heads, params }) => deltaF64({ q, k, v, x, n, d, heads, params, gated: true }),
  kda: ({ q, k, v, x, n, d, heads, params }) => deltaF64({ q, k, v, x, n, d, heads, params, gated: true, kda: true }),
  gated: ({ q, k, v, x, n, d, heads, params }) => gatedF64({ q, k, v, x, n, d, heads, W: params.weight, b: params.bias }),
  gla: ({ q, k, v, x, n, d, heads, params }) => glaF64({ q, k, v, x, n, d, heads, W: params.weight, b: params.bias }),
  retention: ({ q, k, v, n, d, heads, causal, options, params }) =>
    retentionF64({ q, k, v, n, d, heads, causal, gamma: retentionGammas(heads, options, params) }).output,
  linformer: ({ q, k, v, n, d, heads, options, params, maxLen }) =>
    linformerF64({ q, k, v, n, d, heads, E: params.E, F: params.F, proj: options.k, maxLen }).output,
  mla: ({ x, n, d, heads, causal, options, params }) => mlaF64({ x, n, d, heads, causal, options, params }),
  nsa: (a) => nsaF64(a).output,
  dsa: ({ q, k, v, x, n, d, heads, options, params }) => dsaF64({ q, k, v, x, n, d, heads, options, params }).output,
};
