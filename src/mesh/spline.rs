//! A cubic interpolating spline with not-a-knot end conditions (the third derivative is
//! continuous at the second and second-to-last knots), as MATLAB's `spline` and SciPy's default
//! `CubicSpline` build it. The knots' second derivatives come from one small dense solve.

/// A not-a-knot cubic spline through (xs, ys), xs strictly increasing, at least 4 points.
pub struct NotAKnot {
    xs: Vec<f64>,
    ys: Vec<f64>,
    /// Second derivative at each knot.
    m: Vec<f64>,
}

impl NotAKnot {
    /// The spline through the knots (`xs` strictly increasing, at least 4 knots; panics otherwise: the callers pass fixed tables).
    pub fn new(xs: &[f64], ys: &[f64]) -> NotAKnot {
        let n = xs.len();
        assert!(
            n >= 4 && ys.len() == n,
            "a not-a-knot spline needs at least 4 points"
        );
        let h: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
        let d: Vec<f64> = (0..n - 1).map(|i| (ys[i + 1] - ys[i]) / h[i]).collect();
        let mut a = vec![vec![0.0; n]; n];
        let mut rhs = vec![0.0; n];
        // Not-a-knot at x1: (M1 - M0) / h0 = (M2 - M1) / h1.
        a[0][0] = -1.0 / h[0];
        a[0][1] = 1.0 / h[0] + 1.0 / h[1];
        a[0][2] = -1.0 / h[1];
        for i in 1..n - 1 {
            a[i][i - 1] = h[i - 1];
            a[i][i] = 2.0 * (h[i - 1] + h[i]);
            a[i][i + 1] = h[i];
            rhs[i] = 6.0 * (d[i] - d[i - 1]);
        }
        // Not-a-knot at x(n-2).
        a[n - 1][n - 3] = -1.0 / h[n - 3];
        a[n - 1][n - 2] = 1.0 / h[n - 3] + 1.0 / h[n - 2];
        a[n - 1][n - 1] = -1.0 / h[n - 2];
        NotAKnot {
            xs: xs.to_vec(),
            ys: ys.to_vec(),
            m: solve(a, rhs),
        }
    }

    /// The spline's value at x (the end cubics extend beyond the knots).
    pub fn eval(&self, x: f64) -> f64 {
        let n = self.xs.len();
        let k = match self.xs.partition_point(|&t| t <= x) {
            0 => 0,
            p if p >= n => n - 2,
            p => p - 1,
        };
        let (x0, x1) = (self.xs[k], self.xs[k + 1]);
        let h = x1 - x0;
        let (a, b) = ((x1 - x) / h, (x - x0) / h);
        a * self.ys[k]
            + b * self.ys[k + 1]
            + ((a * a * a - a) * self.m[k] + (b * b * b - b) * self.m[k + 1]) * h * h / 6.0
    }
}

/// Gaussian elimination with partial pivoting.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for col in 0..n {
        let piv = (col..n)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .unwrap_or(col);
        a.swap(col, piv);
        b.swap(col, piv);
        for r in col + 1..n {
            let f = a[r][col] / a[col][col];
            if f != 0.0 {
                for c in col..n {
                    a[r][c] -= f * a[col][c];
                }
                b[r] -= f * b[col];
            }
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|c| a[r][c] * x[c]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Not-a-knot splines reproduce a cubic polynomial exactly, on uneven knots too.
    #[test]
    fn reproduces_cubics() {
        let f = |x: f64| 2.0 * x * x * x - 3.0 * x * x + 0.5 * x - 7.0;
        let xs: Vec<f64> = (0..12).map(|k| (k as f64 * 0.37).powf(1.3) - 1.0).collect();
        let ys: Vec<f64> = xs.iter().map(|&x| f(x)).collect();
        let s = NotAKnot::new(&xs, &ys);
        for k in 0..200 {
            let x = -1.0 + k as f64 * 0.04;
            assert!(
                (s.eval(x) - f(x)).abs() < 1e-9,
                "at {x}: {} vs {}",
                s.eval(x),
                f(x)
            );
        }
    }

    /// On a smooth function it converges at fourth order (the error falls ~2^4 when h halves).
    #[test]
    fn converges_at_fourth_order() {
        let err = |n: usize| {
            let xs: Vec<f64> = (0..n).map(|k| k as f64 / (n - 1) as f64 * 3.0).collect();
            let ys: Vec<f64> = xs.iter().map(|x| x.sin()).collect();
            let s = NotAKnot::new(&xs, &ys);
            (0..1000)
                .map(|k| k as f64 * 0.003)
                .map(|x| (s.eval(x) - x.sin()).abs())
                .fold(0.0, f64::max)
        };
        for (coarse, fine) in [(41, 81), (81, 161)] {
            let order = (err(coarse) / err(fine)).log2();
            assert!((3.7..4.5).contains(&order), "observed order {order}");
        }
    }
}
