// claim-tools.mjs: what the claim scripts that train with the native trainer share
// (scripts/hybrid-claim.mjs, scripts/sink-claims.mjs): their integer flags, the trainer's build,
// one training's run and its output read, trainings a few at a time, and the mean and spread over seeds.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const ROOT = new URL('../', import.meta.url).pathname;

/** flag(name, default): the positive integer after --name in args; else exits 2 naming it and the script. */
export function intFlags(script, args) {
  return (name, def) => {
    const i = args.indexOf(`--${name}`);
    if (i < 0) return def;
    const v = Number(args[i + 1]);
    if (!Number.isInteger(v) || v < 1) {
      console.error(`${script}: --${name} must be a positive integer, got ${JSON.stringify(args[i + 1])}`);
      process.exit(2);
    }
    return v;
  };
}

/** Builds the native trainer (bash build.sh trainer) and returns its path; exits 1 when it cannot.
 * TRAINER_OUT=path: a binary of its own (as build.sh takes it; the tests build one beside docs.test.js's). */
export function buildTrainer(script) {
  const trainer = process.env.TRAINER_OUT || `${ROOT}build/trainer`;
  const build = spawnSync('bash', [`${ROOT}build.sh`, 'trainer'], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, TRAINER_OUT: trainer } });
  if (build.status !== 0 || !existsSync(trainer)) {
    console.error(`${script}: bash build.sh trainer failed`);
    process.exit(1);
  }
  return trainer;
}

/** Runs the trainer with args and resolves parse(its stdout); rejects with the command, the exit code
 * and everything it printed when it exits non-zero or parse finds nothing (returns null). */
export function runTrainer(trainer, args, parse) {
  return new Promise((resolve, reject) => {
    const p = spawn(trainer, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('close', (code) => {
      const r = code === 0 ? parse(out) : null;
      if (r === null) reject(new Error(`trainer ${args.join(' ')}: exit ${code}\n${out}${err}`));
      else resolve(r);
    });
  });
}

/** run(item) for every item, `jobs` at a time (each training takes one thread), in order of start. */
export async function inJobs(items, jobs, run) {
  let next = 0;
  await Promise.all(Array.from({ length: jobs }, async () => {
    while (next < items.length) await run(items[next++]);
  }));
}

export const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
/** The sample standard deviation (0 for one value). */
export const sd = (xs) => (xs.length < 2 ? 0 : Math.sqrt(xs.reduce((a, b) => a + (b - mean(xs)) ** 2, 0) / (xs.length - 1)));
