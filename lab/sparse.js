// sparse.js: what a sparse layer's reading (model.sparseReading) comes to over a text, shared by the
// playground's "Which keys each query read" (web/views/sparse-read.js) and scripts/sparse-claim.mjs.

/**
 * Over every head and query of a reading: kept, the mean share of the dense attention's mass on the
 * keys read; read, the mean share of the keys a query may read (s <= t) that it read; readLast, that
 * share at the last query alone. Each a mean over heads (and queries for the first two).
 */
export function readingSummary(r) {
  let kept = 0, read = 0, readLast = 0;
  for (let h = 0; h < r.heads; h++)
    for (let t = 0; t < r.n; t++) {
      let c = 0;
      for (let s = 0; s <= t; s++) c += r.selected[h][t * r.n + s];
      kept += r.kept[h][t], read += c / (t + 1);
      if (t === r.n - 1) readLast += c / r.n;
    }
  const rows = r.heads * r.n;
  return { kept: kept / rows, read: read / rows, readLast: readLast / r.heads };
}
