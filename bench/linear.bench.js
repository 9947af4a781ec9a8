// linear.bench.js: linear attention against streaming softmax attention as n grows (d = 64,
// one head), the crossover n and the n = 4096 ratio; then decoding: the cost of one step of
// the linear-attention state at position 128 and 8192 beside softmax attention of one query
// over a growing cache. Everything printed is measured in this run, side by side.

const D = 64;
const NS = [128, 256, 512, 1024, 2048, 4096, 8192, 16384];
const FEATURES = ['elu+1', 'relu', 'efficient', 'taylor'];

export default async function run({ simd, scalar, interleave, fmt, table, randomF32, median, timeOnce }) {
  console.log(`time per call in ms, median [min-max], SIMD build, d = ${D}, one head; softmax = lib.softmaxAttention ` +
    '(streaming, no weights); every column of a row measured round-robin in one interleave()');
  const rows = [];
  const med = {}; // n -> { name: median ms }
  for (const n of NS) {
    const o = { q: randomF32(n * D, 1), k: randomF32(n * D, 2), v: randomF32(n * D, 3), n, d: D };
    const contenders = {};
    for (const feature of FEATURES) contenders[feature] = () => simd.linearAttention({ ...o, feature });
    contenders['elu+1 causal'] = () => simd.linearAttention({ ...o, causal: true, mode: 'parallel' });
    contenders.softmax = () => simd.softmaxAttention(o);
    // softmax is ~2 s a call at n = 16384: fewer samples there keep the file within ~2 minutes
    const samples = n <= 2048 ? 7 : n <= 4096 ? 5 : 3;
    const t = interleave(contenders, { samples, minMs: n <= 1024 ? 15 : 5 });
    med[n] = Object.fromEntries(Object.entries(t).map(([k, v]) => [k, v.median]));
    rows.push([n, ...Object.keys(contenders).map((k) => fmt(t[k], 2)), (t.softmax.median / t['elu+1'].median).toFixed(1) + 'x']);
  }
  table(['n', ...FEATURES, 'elu+1 causal (parallel)', 'softmax', 'softmax / elu+1'], rows);

  // Below 128 only elu+1 and softmax, to place the crossover when it lies under the table.
  const SMALL = [4, 8, 16, 32, 64];
  const small = [];
  for (const n of SMALL) {
    const o = { q: randomF32(n * D, 1), k: randomF32(n * D, 2), v: randomF32(n * D, 3), n, d: D };
    const t = interleave({ 'elu+1': () => simd.linearAttention(o), softmax: () => simd.softmaxAttention(o) },
      { samples: 7, minMs: 10 });
    med[n] = { 'elu+1': t['elu+1'].median, softmax: t.softmax.median };
    small.push([n, fmt(t['elu+1'], 4), fmt(t.softmax, 4), (t.softmax.median / t['elu+1'].median).toFixed(2) + 'x']);
  }
  table(['n', 'elu+1', 'softmax', 'softmax / elu+1'], small);

  // crossover: the smallest n from which linear (elu+1) is faster at every larger n measured
  const all = [...SMALL, ...NS];
  let cross = null;
  for (let i = all.length - 1; i >= 0 && med[all[i]]['elu+1'] < med[all[i]].softmax; i--) cross = all[i];
  if (cross === null) console.log('crossover: linear (elu+1) was not faster than softmax at any n measured');
  else if (cross === all[0]) console.log(`crossover: linear (elu+1) is already faster at n = ${cross}, the smallest n measured`);
  else console.log(`crossover: linear (elu+1) is faster than softmax from n = ${cross} on (not at n = ${all[all.indexOf(cross) - 1]})`);
  const r4096 = med[4096].softmax / med[4096]['elu+1'];
  console.log(`speed ratio at n = 4096: softmax / linear (elu+1) = ${r4096.toFixed(1)}x (target >= 20x: ${r4096 >= 20 ? 'met' : 'NOT met'})`);
  const rc = med[4096].softmax / med[4096]['elu+1 causal'];
  console.log(`  causal linear (elu+1, parallel) at n = 4096: ${rc.toFixed(1)}x faster than non-causal softmax`);

  { // the SIMD build against the scalar one, on the same call
    const n = 4096;
    const o = { q: randomF32(n * D, 1), k: randomF32(n * D, 2), v: randomF32(n * D, 3), n, d: D };
    const t = interleave({ simd: () => simd.linearAttention(o), scalar: () => scalar.linearAttention(o) }, { samples: 5, minMs: 20 });
    console.log(`SIMD vs scalar build, linear (elu+1) n = 4096: ${fmt(t.simd, 2)} vs ${fmt(t.scalar, 2)} ms, ` +
      `${(t.scalar.median / t.simd.median).toFixed(2)}x`);
  }

  // ---- decoding ------------------------------------------------------------------------
  // Linear: a state advanced (untimed) to position P, then STEPS steps timed one after another.
  // Softmax: one query over a cache of P keys and values (lib.softmaxAttention, n = 1, m = P),
  // which is what a decoder with a KV cache computes per token (the call also copies the cache in).
  const POS = [128, 8192], STEPS = 256, SAMPLES = 9;
  const total = POS[POS.length - 1] + STEPS;
  const q = randomF32(total * D, 4), k = randomF32(total * D, 5), v = randomF32(total * D, 6);
  const row = (a, i) => a.subarray(i * D, (i + 1) * D);
  const st = simd.linearAttentionState({ d: D, feature: 'elu+1' });
  const stepTimes = Object.fromEntries(POS.map((p) => [p, []]));
  const softTimes = Object.fromEntries(POS.map((p) => [p, []]));
  for (let s = 0; s < SAMPLES; s++)
    for (const p of POS) {
      st.reset();
      for (let i = 0; i < p; i++) st.step(row(q, i), row(k, i), row(v, i));
      const t0 = performance.now();
      for (let i = p; i < p + STEPS; i++) st.step(row(q, i), row(k, i), row(v, i));
      stepTimes[p].push((performance.now() - t0) / STEPS);
      const so = { q: row(q, p), k: k.subarray(0, p * D), v: v.subarray(0, p * D), n: 1, m: p, d: D };
      softTimes[p].push(timeOnce(() => simd.softmaxAttention(so), 10));
    }
  st.dispose();
  const us = (ms) => (ms * 1000).toFixed(2);
  console.log(`decoding, d = ${D}, one head: time per token in us, median [min-max] of ${SAMPLES} samples ` +
    `(linear: ${STEPS} consecutive step() calls from the position; both include the JS argument checks and copies)`);
  table(['position', 'linear state step() (us)', 'softmax, 1 query over the cache (us)'],
    POS.map((p) => [p, `${us(median(stepTimes[p]))} [${us(Math.min(...stepTimes[p]))}-${us(Math.max(...stepTimes[p]))}]`,
      `${us(median(softTimes[p]))} [${us(Math.min(...softTimes[p]))}-${us(Math.max(...softTimes[p]))}]`]));
  const [a, b] = POS;
  const lr = median(stepTimes[b]) / median(stepTimes[a]), sr = median(softTimes[b]) / median(softTimes[a]);
  console.log(`decoding cost ratio, position ${b} / position ${a}: linear step ${lr.toFixed(2)} (target <= 1.2: ` +
    `${lr <= 1.2 ? 'met' : 'NOT met'}), softmax per token ${sr.toFixed(1)}`);
}
