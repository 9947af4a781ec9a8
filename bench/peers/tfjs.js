// tfjs.js: TensorFlow.js (tfjs-core) on its wasm backend (XNNPACK), loaded from the .wasm
// files inside node_modules (setWasmPaths points at the package's own dist/ folder, so
// nothing is fetched). In Node the backend runs one thread: its WASM_HAS_MULTITHREAD_SUPPORT
// flag is false under Node, so it loads tfjs-backend-wasm-simd.wasm; we also ask for one thread.
import * as tf from '@tensorflow/tfjs-core';
import { registerTfjsGradients } from './tfjs_gradients.js';
import { setThreadsCount, setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import { fileURLToPath } from 'node:url';

let ready = null;

/** Returns tf with the wasm backend active; { simd, multithread } report what it loaded. */
export async function loadTfjs() {
  if (ready) return ready;
  ready = (async () => {
    const dist = new URL('../node_modules/@tensorflow/tfjs-backend-wasm/dist/', import.meta.url);
    setWasmPaths(fileURLToPath(dist));
    setThreadsCount(1);
    if (!(await tf.setBackend('wasm'))) throw new Error('tfjs: the wasm backend failed to initialise');
    await tf.ready();
    await registerTfjsGradients(); // the training-step peer needs autograd
    const simd = await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT');
    const multithread = await tf.env().getAsync('WASM_HAS_MULTITHREAD_SUPPORT');
    return { tf, simd, multithread };
  })();
  return ready;
}
