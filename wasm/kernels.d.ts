export interface MatmulOptions {
  M: number;
  N: number;
  K: number;
  /** A is stored (K, M) */
  transA?: boolean;
  /** B is stored (N, K) */
  transB?: boolean;
  /** run the naive reference loop */
  reference?: boolean;
}

export interface KernelsApi {
  kernels: {
    /** C (M, N) = op(A) op(B) */
    matmul(a: Float32Array, b: Float32Array, options: MatmulOptions): Float32Array;
    /** row softmax; -Infinity entries are masked, an all-masked row gives zeros */
    softmax(x: Float32Array, rows: number, cols: number, options?: { reference?: boolean }): Float32Array;
    /** the vectorised exp used by softmax */
    exp(x: Float32Array): Float32Array;
  };
}
