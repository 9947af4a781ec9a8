// cpu.js: the CPU as /proc/cpuinfo names it, printed beside every table (benchmarks and scripts).
import { readFileSync } from 'node:fs';
import os from 'node:os';

/**
 * The CPU as /proc/cpuinfo names it, with its family and model (they tell Zen 3 from Zen 4 or 5
 * where the name does not): printed beside every table.
 */
export function cpuName() {
  let cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  try {
    const info = readFileSync('/proc/cpuinfo', 'utf8');
    const field = (k) => new RegExp(`^${k}\\s*:\\s*(.*)$`, 'm').exec(info)?.[1];
    cpu = `${field('model name') ?? cpu} (cpu family ${field('cpu family')}, model ${field('model')})`;
  } catch {}
  return `${cpu}, ${os.cpus().length} cores`;
}
