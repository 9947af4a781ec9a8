// synthesizer.bench.js: forward time against n for every Synthesizer variant beside softmax
// attention (streaming, and with its n x n weights built), SIMD build, one head, d = dv = 64,
// maxLen = 1024. All contenders of one n are timed round-robin in one run (interleave), so the
// ratios compare like with like on a shared machine. Times include the wrapper's copies in and out.
const D = 64, MAX_LEN = 1024, NS = [64, 128, 256, 512, 1024];

export default async function run({ simd: lib, interleave, table, randomF32 }) {
  const layers = {
    dense: lib.createSynthesizer({ variant: 'dense', d: D, maxLen: MAX_LEN, seed: 1 }),
    random: lib.createSynthesizer({ variant: 'random', d: D, maxLen: MAX_LEN, seed: 1 }),
    'factorized-dense': lib.createSynthesizer({ variant: 'factorized-dense', d: D, maxLen: MAX_LEN, a: 32, b: 32, seed: 1 }),
    'factorized-random': lib.createSynthesizer({ variant: 'factorized-random', d: D, maxLen: MAX_LEN, k: 16, seed: 1 }),
    mixture: lib.createSynthesizer({ variant: 'mixture', d: D, maxLen: MAX_LEN, a: 32, b: 32, k: 16, seed: 1,
      components: ['dense', 'random', 'factorized-dense', 'factorized-random', 'dot'] }),
  };
  console.log(`forward ms, median of 9 interleaved samples (ratio = time / softmax streaming time); d = dv = ${D}, ` +
    `heads = 1, maxLen = ${MAX_LEN}, factorized-dense a = b = 32, factorized-random k = 16, mixture of all five ` +
    `components; build: ${lib.simd ? 'SIMD' : 'scalar'}`);
  const names = ['softmax', 'softmax+weights', ...Object.keys(layers)];
  const rows = [];
  for (const n of NS) {
    const x = randomF32(n * D, 1), v = randomF32(n * D, 2), q = randomF32(n * D, 3), k = randomF32(n * D, 4);
    const contenders = {
      softmax: () => lib.softmaxAttention({ q, k, v, n, d: D }),
      'softmax+weights': () => lib.softmaxAttention({ q, k, v, n, d: D, returnWeights: true }),
    };
    for (const [name, layer] of Object.entries(layers))
      contenders[name] = () => layer.forward(name === 'mixture' ? { x, v, q, k, n } : name.includes('dense') ? { x, v, n } : { v, n });
    const t = interleave(contenders, { samples: 9, minMs: 20 });
    const base = t.softmax.median;
    rows.push([n, ...names.map((c) => `${t[c].median.toFixed(3)} (${(t[c].median / base).toFixed(2)}x)`)]);
  }
  table(['n', ...names], rows);
  for (const layer of Object.values(layers)) layer.dispose();
}
