//! A partdiff-like compute kernel: Jacobi iteration for the Poisson equation on the unit
//! square, `-Δu = f` with `f = 2π² sin(πx) sin(πy)` and u = 0 on the border (partdiff's second
//! interference function). It is the application of the async workload (it computes on every
//! core between writes) and the generator of `matrix.bin`.

use std::f64::consts::PI;

/// An n × n grid (border included) and its Jacobi iteration.
pub struct Solver {
    n: usize,
    u: Vec<f64>,
    next: Vec<f64>,
    rhs: Vec<f64>,
    threads: usize,
}

impl Solver {
    /// A grid of `n` × `n` points (n >= 3), iterated on `threads` threads (0 = every core).
    pub fn new(n: usize, threads: usize) -> Solver {
        let n = n.max(3);
        let h = 1.0 / (n - 1) as f64;
        let mut rhs = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                let (x, y) = (i as f64 * h, j as f64 * h);
                rhs[i * n + j] = h * h * 2.0 * PI * PI * (PI * x).sin() * (PI * y).sin();
            }
        }
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, |t| t.get())
        } else {
            threads
        };
        Solver { n, u: vec![0.0; n * n], next: vec![0.0; n * n], rhs, threads }
    }

    /// `iters` Jacobi sweeps, the interior split into row bands, one per thread.
    pub fn iterate(&mut self, iters: usize) {
        let n = self.n;
        for _ in 0..iters {
            let u = &self.u;
            let rhs = &self.rhs;
            let interior = &mut self.next[n..n * (n - 1)];
            let rows = n - 2;
            let band = rows.div_ceil(self.threads.min(rows).max(1));
            std::thread::scope(|s| {
                for (b, chunk) in interior.chunks_mut(band * n).enumerate() {
                    s.spawn(move || {
                        for (k, row) in chunk.chunks_mut(n).enumerate() {
                            let i = 1 + b * band + k;
                            for (j, cell) in row.iter_mut().enumerate().take(n - 1).skip(1) {
                                let c = i * n + j;
                                *cell = 0.25 * (u[c - n] + u[c + n] + u[c - 1] + u[c + 1] + rhs[c]);
                            }
                        }
                    });
                }
            });
            std::mem::swap(&mut self.u, &mut self.next);
        }
    }

    /// The matrix as little-endian f64, row-major (what partdiff writes).
    pub fn to_bytes(&self) -> Vec<u8> {
        self.u.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// The largest difference from the analytic solution sin(πx) sin(πy).
    #[cfg(test)]
    pub fn max_error(&self) -> f64 {
        let n = self.n;
        let h = 1.0 / (n - 1) as f64;
        let mut e: f64 = 0.0;
        for i in 0..n {
            for j in 0..n {
                let exact = (PI * i as f64 * h).sin() * (PI * j as f64 * h).sin();
                e = e.max((self.u[i * n + j] - exact).abs());
            }
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jacobi_converges_to_the_analytic_solution() {
        let mut s = Solver::new(17, 2);
        let e0 = s.max_error();
        s.iterate(2000);
        let e1 = s.max_error();
        assert!(e0 > 0.9, "{e0}");
        assert!(e1 < 0.01, "{e1}");
    }

    #[test]
    fn thread_count_does_not_change_the_result() {
        let mut a = Solver::new(33, 1);
        let mut b = Solver::new(33, 3);
        a.iterate(25);
        b.iterate(25);
        assert_eq!(a.to_bytes(), b.to_bytes());
        assert_eq!(a.to_bytes().len(), 33 * 33 * 8);
    }
}
