// colormap.js: viridis, the perceptually uniform colormap of matplotlib, as a 256-entry table.
// The table comes from a degree-6 polynomial fit of viridis (Matt Zucker's CC0 fit, shadertoy WlfXRN),
// accurate to about 1/255 over [0, 1].
const C = [
  [0.2777273272234177, 0.005407344544966578, 0.3340998053353061],
  [0.1050930431085774, 1.404613529898575, 1.384590162594685],
  [-0.3308618287255563, 0.214847559468213, 0.09509516302823659],
  [-4.634230498983486, -5.799100973351585, -19.33244095627987],
  [6.228269936347081, 14.17993336680509, 56.69055260068105],
  [4.776384997670288, -13.74514537774601, -65.35303263337234],
  [-5.435455855934631, 4.645852612178535, 26.3124352495832],
];

/** VIRIDIS[4*i .. 4*i+3] is the RGBA colour of t = i/255. */
export const VIRIDIS = new Uint8ClampedArray(256 * 4);
for (let i = 0; i < 256; i++) {
  const t = i / 255;
  for (let c = 0; c < 3; c++) {
    let v = C[6][c];
    for (let p = 5; p >= 0; p--) v = v * t + C[p][c];
    VIRIDIS[4 * i + c] = Math.round(v * 255);
  }
  VIRIDIS[4 * i + 3] = 255;
}

/** CSS colour for t in [0, 1]. */
export function viridisCss(t) {
  const i = 4 * Math.max(0, Math.min(255, Math.round(t * 255)));
  return `rgb(${VIRIDIS[i]}, ${VIRIDIS[i + 1]}, ${VIRIDIS[i + 2]})`;
}
