//! The significance test of `load compare`: the Mann-Whitney U test (Wilcoxon rank-sum), two
//! sided, over two samples of per-second values (a second's p99, its requests per second, …).
//!
//! It asks whether a value drawn from one sample tends to be larger than one drawn from the
//! other, assuming nothing of their distributions: the right question for per-second latencies,
//! which are skewed and bursty. Small samples without ties get the exact distribution of U
//! (counted, not approximated); larger ones, or any with ties, the normal approximation with the
//! tie correction and a continuity correction.

/// The most values in both samples together for which the exact distribution is counted.
pub const EXACT_MAX: usize = 40;

/// The outcome of one test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Test {
    /// U of the first sample: how many of the pairs (a from the first, b from the second) have
    /// a > b, ties counting one half.
    pub u: f64,
    /// The two-sided p-value.
    pub p: f64,
    /// Whether `p` is exact (otherwise the normal approximation).
    pub exact: bool,
}

/// Tests `a` against `b`; `None` when either is empty (or holds a value that is not a number).
#[must_use]
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<Test> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 || a.iter().chain(b).any(|v| v.is_nan()) {
        return None;
    }
    // Rank both together, ties sharing the mean of their ranks.
    let mut all: Vec<(f64, bool)> =
        a.iter().map(|&v| (v, true)).chain(b.iter().map(|&v| (v, false))).collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let (mut rank_sum, mut ties, mut i) = (0.0, 0.0, 0);
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        // Positions i..=j (ranks i+1..=j+1) share their mean rank.
        let mean = (i + j + 2) as f64 / 2.0;
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        rank_sum += mean * all[i..=j].iter().filter(|x| x.1).count() as f64;
        i = j + 1;
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let u = rank_sum - f1 * (f1 + 1.0) / 2.0;
    let smaller = u.min(f1 * f2 - u);
    if ties == 0.0 && n <= EXACT_MAX {
        // U is a whole number here.
        let p = (2.0 * exact_cdf(n1, n2, smaller as usize)).min(1.0);
        return Some(Test { u, p, exact: true });
    }
    let nf = n as f64;
    let var = f1 * f2 / 12.0 * ((nf + 1.0) - ties / (nf * (nf - 1.0)));
    if var <= 0.0 {
        // Every value the same: no evidence of any difference.
        return Some(Test { u, p: 1.0, exact: false });
    }
    let z = ((f1 * f2 / 2.0 - smaller) - 0.5).max(0.0) / var.sqrt();
    Some(Test { u, p: erfc(z / std::f64::consts::SQRT_2).min(1.0), exact: false })
}

/// P(U ≤ `u`) under the null hypothesis, for samples of `n1` and `n2` distinct values: the
/// share of the C(n1 + n2, n1) orderings whose U is at most `u`.
fn exact_cdf(n1: usize, n2: usize, u: usize) -> f64 {
    // c(m, j, k): the orderings of m values of the first sample and j of the second with U = k.
    // The largest value is either the first sample's (above all j of the second: it adds j to
    // U) or the second's (adds nothing), so c(m, j, k) = c(m - 1, j, k - j) + c(m, j - 1, k).
    // `row[j][k]` holds c(m, j, k) for the m being built.
    let max = n1 * n2;
    let mut row = vec![vec![0.0_f64; max + 1]; n2 + 1];
    for r in &mut row {
        r[0] = 1.0; // m = 0: one ordering, U = 0
    }
    for _m in 1..=n1 {
        let last = row;
        row = vec![vec![0.0; max + 1]; n2 + 1];
        row[0][0] = 1.0; // j = 0: one ordering, U = 0
        for j in 1..=n2 {
            for k in 0..=max {
                let top_first = if k >= j { last[j][k - j] } else { 0.0 };
                row[j][k] = top_first + row[j - 1][k];
            }
        }
    }
    let all: f64 = row[n2].iter().sum();
    row[n2].iter().take(u + 1).sum::<f64>() / all
}

/// The complementary error function, by Abramowitz and Stegun's formula 7.1.26 (absolute error
/// under 1.5e-7, ample beside a significance level of a few percent).
fn erfc(x: f64) -> f64 {
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    poly * (-x * x).exp()
}

#[cfg(test)]
mod tests;
