// fetch-once.js: the page's one way to fetch a file it may need in several places (model files,
// texts, catalogs), so a first load asks the server for each URL once. Workers do not fetch what the
// page has: the page hands them the bytes (see below) or a compiled WebAssembly.Module.
//
//   import { fetchOnce, fetchTextOnce, fetchJsonOnce } from '../fetch-once.js';
//   const bytes = await fetchOnce(new URL('../models/x.safetensors', import.meta.url)); // ArrayBuffer
//
// The ArrayBuffer is shared by every caller: treat it as read-only. A caller that transfers bytes to a
// Worker (postMessage(msg, [buf])) must transfer a copy, `bytes.slice(0)`: a transfer detaches the
// buffer, and every later caller would get an empty one. A Uint8Array view over it (new
// Uint8Array(bytes)) costs nothing and is what lib.loadModel takes.

const cache = new Map(); // absolute URL -> Promise<ArrayBuffer>

/**
 * The bytes at url, fetched once per page: later calls with the same absolute URL (after resolving
 * against the page) share the first call's promise. A failed fetch (network error or HTTP status
 * other than 2xx) rejects with an Error naming the URL and the status, and is forgotten, so a later
 * call tries again.
 * @param {string | URL} url
 * @returns {Promise<ArrayBuffer>}
 */
export function fetchOnce(url) {
  const key = new URL(url, globalThis.location?.href).href;
  if (!cache.has(key)) {
    const p = fetch(key).then((r) => {
      if (!r.ok) throw new Error(`could not fetch ${key.split('/').pop()}: HTTP ${r.status}`);
      return r.arrayBuffer();
    });
    p.catch(() => { if (cache.get(key) === p) cache.delete(key); });
    cache.set(key, p);
  }
  return cache.get(key);
}

/** The text at url (UTF-8), through fetchOnce. */
export async function fetchTextOnce(url) {
  return new TextDecoder().decode(await fetchOnce(url));
}

/** The JSON at url, through fetchOnce (each call parses its own copy, so callers may change it). */
export async function fetchJsonOnce(url) {
  return JSON.parse(await fetchTextOnce(url));
}
