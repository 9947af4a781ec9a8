// clock.js: measures the core clock the benchmark runs at, with a dependent chain of
// one-cycle integer ops in a hand-assembled wasm function (every x86-64 core since the
// 1990s retires a dependent i32 add or xor at one per cycle). The function is
//   chain(n, y): x = 0; do { 8 x { x = x + y; x = x ^ n } } while (--n); return x
// 16 dependent ops per iteration; the loop counter is a separate chain that runs alongside.
// It is called many times first so V8 tiers it up from Liftoff to TurboFan (Liftoff keeps
// locals on the stack, which would add a store-load to the chain).

const OPS_PER_ITER = 16;

function chainModule() {
  const body = [0x01, 0x01, 0x7f]; // one local group: 1 x i32 (local 2 = x)
  body.push(0x03, 0x40); // loop (void)
  for (let i = 0; i < OPS_PER_ITER / 2; i++) {
    body.push(0x20, 0x02, 0x20, 0x01, 0x6a, 0x21, 0x02); // x = x + y
    body.push(0x20, 0x02, 0x20, 0x00, 0x73, 0x21, 0x02); // x = x ^ n
  }
  body.push(0x20, 0x00, 0x41, 0x01, 0x6b, 0x22, 0x00, 0x0d, 0x00); // n = n - 1; br_if n
  body.push(0x0b, 0x20, 0x02, 0x0b); // end loop; return x; end
  const leb = (n) => (n < 128 ? [n] : [(n & 0x7f) | 0x80, n >> 7]); // lengths here are < 2^14
  const code = [0x01, ...leb(body.length), ...body];
  const section = (id, bytes) => [id, ...leb(bytes.length), ...bytes];
  const name = [...new TextEncoder().encode('chain')];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [0x01, 0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f]), // type (i32, i32) -> i32
    ...section(3, [0x01, 0x00]),
    ...section(7, [0x01, name.length, ...name, 0x00, 0x00]),
    ...section(10, code),
  ]);
}

/**
 * Returns { ghz, samples } : the highest rate of dependent ops per nanosecond over `rounds`
 * timed runs of `iters` loop iterations (the highest, because interference only slows it).
 */
export async function measureClockGHz({ rounds = 15, iters = 4e6 } = {}) {
  const { instance } = await WebAssembly.instantiate(chainModule());
  const chain = instance.exports.chain;
  let sink = 0;
  for (let i = 0; i < 3000; i++) sink ^= chain(1000, i); // tier up
  const samples = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    sink ^= chain(iters, r + 1);
    const ms = performance.now() - t0;
    samples.push((iters * OPS_PER_ITER) / (ms * 1e6));
  }
  if (sink === 0.5) console.log(sink); // keep the result alive
  return { ghz: Math.max(...samples), samples };
}
