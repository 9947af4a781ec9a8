// hub.js: the files of a model, from this device or from the Hugging Face Hub, for "Open a model
// file" (views/opener.js, which sniffs every file with lib.sniffModelFile and picks its row of
// web/formats.js; nothing here decides a format). Dropped folders are walked; a Hub id is fetched from the Hub's resolve URLs only
// (${endpoint}/${id}/resolve/main/${file}; the endpoint is huggingface.co or a mirror the user names), with the size said first, progress in bytes and an
// AbortSignal that stops it. Nothing is sent anywhere else: no analytics, no other host (the Hub
// itself may redirect a large file to its own download host).

export const HUB = 'https://huggingface.co';
const FILES = { config: 'config.json', tokenizer: 'tokenizer.json', weights: 'model.safetensors', index: 'model.safetensors.index.json' };

/**
 * null when text is an endpoint to fetch from (an http(s) URL with a host and no query or fragment:
 * the files are fetched from ${endpoint}/${id}/resolve/main/${file}), else why not (a sentence for
 * the status line). The page keeps the endpoint in its URL (?hub=, web/panels.js).
 */
export function checkEndpoint(text) {
  const why = `The Hub endpoint "${text}" is not usable: write an http:// or https:// URL such as ${HUB} or a mirror's`;
  let u;
  try {
    u = new URL(text);
  } catch {
    return `${why}.`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `${why} (it starts with ${u.protocol}).`;
  if (u.search || u.hash || u.username || u.password) return `${why}, with no ?query, #fragment or user:password@ in it.`;
  return null;
}

/** The endpoint as the URLs are built from it: no trailing slash. Check it first (checkEndpoint). */
export const endpointBase = (text) => new URL(text).href.replace(/\/+$/, '');

// The Hub's own rule: owner and name of letters, digits, '-', '_' and '.', neither starting nor
// ending with '-' or '.', no '--' or '..', at most 96 characters each.
const PART = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?$/;

/** null when id is a Hub model id owner/name, else why it is not (a sentence for the status line). */
export function checkHubId(id) {
  const parts = id.split('/');
  if (parts.length !== 2) return `"${id}" is not a Hub id: write it as owner/name, e.g. HuggingFaceTB/SmolLM2-135M`;
  for (const p of parts) {
    if (!PART.test(p) || p.includes('--') || p.includes('..')) {
      return `"${id}" is not a Hub id: "${p}" may hold only letters, digits, '-', '_' and '.', start and end with a letter or digit, and hold no '--' or '..'`;
    }
  }
  return null;
}

export const hubUrl = (base, id, file) => `${base}/${id}/resolve/main/${file.split('/').map(encodeURIComponent).join('/')}`;

/** Bytes as the status line says them: 123.4 MB (decimal, as the Hub says them), 12.3 kB or 123 bytes. */
export function formatMB(n) {
  return n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} kB` : `${n} bytes`;
}

async function get(url, file, signal, method = 'GET') {
  let r;
  try {
    // credentials 'omit': no cookies go to the Hub either
    r = await fetch(url, { method, signal, credentials: 'omit', referrerPolicy: 'no-referrer' });
  } catch (e) {
    if (e?.name === 'AbortError') throw e;
    // a TypeError ("Failed to fetch") is all a browser tells a page of a request that got no
    // response it may read: the host unreachable, or a response without CORS headers
    const host = new URL(url).host;
    throw new Error(`Could not fetch ${file} from ${host} (${url}): no response the page may read. `
      + `Either this device is offline or cannot reach ${host}, or ${host} answered without the CORS header `
      + `Access-Control-Allow-Origin that lets a page read it; check the endpoint, the connection, `
      + `or try a mirror that sends CORS headers (or download the files and drop them here).`);
  }
  // a body nobody reads leaves the request open until it is dropped (Chromium then counts it aborted)
  if (method === 'HEAD' || !r.ok) await r.arrayBuffer().catch(() => {});
  if (!r.ok) {
    const e = new Error(`Could not fetch ${file}: HTTP ${r.status}${r.statusText ? ` ${r.statusText}` : ''} at ${url}`
      + (r.status === 401 || r.status === 403 ? ' (a gated or private model: download it on the Hub and drop its files here)' : ''));
    e.status = r.status;
    throw e;
  }
  return r;
}

// The size a response says: Content-Length, or the Hub's X-Linked-Size for a file it stores apart.
function sizeOf(r) {
  const n = Number(r.headers.get('content-length') ?? r.headers.get('x-linked-size'));
  return Number.isFinite(n) && n > 0 ? n : null;
}

/** A body read chunk by chunk into one buffer, onBytes(n) after each chunk; size: the expected length or null. */
async function readBody(r, size, onBytes) {
  const reader = r.body.getReader();
  let buf = new Uint8Array(size ?? 1 << 20), at = 0;
  for (;;) {
    const { done, value } = await reader.read(); // rejects with an AbortError when the signal fires
    if (done) break;
    if (at + value.length > buf.length) { // longer than said: grow (doubling)
      const bigger = new Uint8Array(Math.max(buf.length * 2, at + value.length));
      bigger.set(buf.subarray(0, at));
      buf = bigger;
    }
    buf.set(value, at);
    at += value.length;
    onBytes(value.length);
  }
  return at === buf.length ? buf : buf.slice(0, at);
}

/**
 * Fetches a model's Hugging Face files from the Hub at base (an endpoint, checkEndpoint): config.json, tokenizer.json, then
 * model.safetensors or (when that is 404) model.safetensors.index.json and every shard it names.
 * onStatus(text), onSize(total bytes of the weights or null, files), onProgress(done, total).
 * Returns { config, tokenizer, weights: Uint8Array[], files: [name], bytes }. Throws on any HTTP
 * error (naming the file, the URL and the status), on no readable response (naming the file, the
 * host and what it can mean) and with an AbortError when signal fires.
 */
export async function fetchHubModel({ base, id, signal, onStatus = () => {}, onSize = () => {}, onProgress = () => {} }) {
  const why = checkEndpoint(base) ?? checkHubId(id);
  if (why) throw new Error(why);
  base = endpointBase(base);
  const url = (file) => hubUrl(base, id, file);
  onStatus(`Fetching ${id}'s ${FILES.config} and ${FILES.tokenizer} from ${new URL(base).host}…`);
  const config = await (await get(url(FILES.config), FILES.config, signal)).text();
  const tokenizer = await (await get(url(FILES.tokenizer), FILES.tokenizer, signal)).text();
  // one file, or shards: HEAD model.safetensors first (its size, before any weight is fetched)
  let files, sizes;
  try {
    const head = await get(url(FILES.weights), FILES.weights, signal, 'HEAD');
    files = [FILES.weights];
    sizes = [sizeOf(head)];
  } catch (e) {
    if (e.status !== 404) throw e;
    const index = await (await get(url(FILES.index), `${FILES.index} (there is no ${FILES.weights})`, signal)).json();
    const map = index?.weight_map;
    if (!map || typeof map !== 'object') throw new Error(`${FILES.index} at ${url(FILES.index)} has no weight_map`);
    files = [...new Set(Object.values(map))].sort();
    if (!files.length || files.some((f) => typeof f !== 'string' || f.includes('..'))) {
      throw new Error(`${FILES.index} at ${url(FILES.index)} names no usable shard files`);
    }
    sizes = [];
    for (const f of files) sizes.push(sizeOf(await get(url(f), f, signal, 'HEAD')));
  }
  const known = sizes.every((s) => s !== null);
  const total = known ? sizes.reduce((a, b) => a + b, 0) : null;
  onSize(total, files);
  let done = 0;
  const weights = [];
  for (let k = 0; k < files.length; k++) {
    onStatus(`Fetching ${files[k]}${files.length > 1 ? ` (${k + 1} of ${files.length})` : ''}${total ? `: ${formatMB(total)} in all` : ''}…`);
    const r = await get(url(files[k]), files[k], signal);
    const size = sizes[k] ?? sizeOf(r);
    weights.push(await readBody(r, size, (n) => {
      done += n;
      onProgress(done, total);
    }));
  }
  return { config, tokenizer, weights, files, bytes: done };
}

/** Every file of a drop, folders walked (DataTransferItem.webkitGetAsEntry); plain files when entries are not offered. */
export async function droppedFiles(dataTransfer) {
  const entries = [...(dataTransfer.items ?? [])].map((it) => it.webkitGetAsEntry?.()).filter(Boolean);
  if (!entries.length) return [...dataTransfer.files];
  const out = [];
  const file = (entry) => new Promise((resolve, reject) => entry.file(resolve, reject));
  // readEntries returns a batch at a time (100 in Chromium): read until it returns none
  const children = async (dir) => {
    const reader = dir.createReader(), all = [];
    for (;;) {
      const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
      if (!batch.length) return all;
      all.push(...batch);
    }
  };
  const walk = async (entry, depth) => {
    if (entry.isFile) out.push(await file(entry));
    else if (entry.isDirectory && depth < 4) for (const c of await children(entry)) await walk(c, depth + 1);
  };
  for (const e of entries) await walk(e, 0);
  return out;
}

/** The dtypes a safetensors file's header lists (e.g. ['BF16']), [] when it cannot be read: for the status line. */
export function safetensorsDtypes(bytes) {
  try {
    const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
    return [...new Set(Object.entries(header).filter(([k]) => k !== '__metadata__').map(([, t]) => t.dtype))];
  } catch {
    return [];
  }
}
