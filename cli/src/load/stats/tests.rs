use super::*;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn separated_samples_get_the_exact_p_value() {
    // Every ordering equally likely: U = 0 is 1 of C(6, 3) = 20, both tails 2/20.
    let t = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
    assert_eq!((t.u, t.exact), (0.0, true));
    assert!(close(t.p, 0.1, 1e-12), "{t:?}");
    // 5 and 5: 2/252.
    let t = mann_whitney(&[6.0, 7.0, 8.0, 9.0, 10.0], &[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
    assert_eq!(t.u, 25.0);
    assert!(close(t.p, 2.0 / 252.0, 1e-12), "{t:?}");
    // Overlapping: U = 1 of 4 by 4 (orderings with U ≤ 1: 2 of 70, both tails 4/70).
    let t = mann_whitney(&[1.0, 2.0, 3.0, 5.0], &[4.0, 6.0, 7.0, 8.0]).unwrap();
    assert_eq!(t.u, 1.0);
    assert!(close(t.p, 4.0 / 70.0, 1e-12), "{t:?}");
    // Unequal sizes, 6 and 4, U = 3: counted by enumeration, 14/210.
    let t = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0, 9.0], &[6.0, 7.0, 8.0, 10.0]).unwrap();
    assert_eq!(t.u.min(24.0 - t.u), 3.0);
    assert!(close(t.p, 14.0 / 210.0, 1e-12), "{t:?}");
}

#[test]
fn the_test_is_symmetric_and_the_same_sample_is_no_evidence() {
    let a = [3.0, 9.0, 4.0, 7.0, 1.0];
    let b = [2.0, 8.0, 6.0, 5.0, 10.0, 11.0];
    let (ab, ba) = (mann_whitney(&a, &b).unwrap(), mann_whitney(&b, &a).unwrap());
    assert!(close(ab.p, ba.p, 1e-12));
    assert!(close(ab.u + ba.u, 30.0, 1e-12));
    let t = mann_whitney(&a, &a).unwrap();
    assert!(t.p > 0.9, "{t:?}");
}

#[test]
fn ties_take_mean_ranks_and_the_corrected_normal_approximation() {
    // Ranks 1.5 1.5 3.5 | 3.5 5.5 5.5: U = 0.5; the tie-corrected variance is 4.8, so
    // z = (4.5 - 0.5 - 0.5) / sqrt(4.8) and p = erfc(z / sqrt 2) = 0.110149 (to 6 places).
    let t = mann_whitney(&[1.0, 1.0, 2.0], &[2.0, 3.0, 3.0]).unwrap();
    assert_eq!((t.u, t.exact), (0.5, false));
    assert!(close(t.p, 0.110_149, 1e-6), "{t:?}");
    // Everything tied: no difference at all.
    let t = mann_whitney(&[5.0; 4], &[5.0; 7]).unwrap();
    assert_eq!(t.p, 1.0);
}

#[test]
fn the_normal_approximation_agrees_with_the_exact_count_near_the_bound() {
    // 20 and 20 distinct values, interleaved so U sits about two standard deviations out: the
    // exact count and the approximation (forced by one tie far from the rest) agree closely.
    let a: Vec<f64> =
        (0..20).map(|i| f64::from(i) * 2.0 + if i < 6 { 0.0 } else { 16.0 }).collect();
    let b: Vec<f64> = (0..20).map(|i| f64::from(i) * 2.0 + 1.0).collect();
    let exact = mann_whitney(&a, &b).unwrap();
    assert!(exact.exact);
    assert!((0.03..0.07).contains(&exact.p), "{exact:?}");
    let (mut a2, mut b2) = (a.clone(), b.clone());
    a2.push(1000.0);
    b2.push(1000.0);
    let approx = mann_whitney(&a2, &b2).unwrap();
    assert!(!approx.exact);
    // (One pair more shifts U by a half; the p-values stay within a few thousandths.)
    assert!(close(exact.p, approx.p, 0.02), "{exact:?} {approx:?}");
}

#[test]
fn tiny_and_empty_samples() {
    // One value each: the two orderings are equally likely, p = 1.
    assert_eq!(mann_whitney(&[1.0], &[2.0]).unwrap().p, 1.0);
    // Two and two, separated: 2 of 6 orderings, p = 1/3; no sample so small can be significant.
    assert!(close(mann_whitney(&[1.0, 2.0], &[3.0, 4.0]).unwrap().p, 1.0 / 3.0, 1e-12));
    assert!(mann_whitney(&[], &[1.0]).is_none());
    assert!(mann_whitney(&[1.0], &[f64::NAN]).is_none());
}

#[test]
fn erfc_matches_known_values() {
    for (x, want) in
        [(0.0, 1.0), (0.5, 0.479_500_122), (1.0, 0.157_299_207), (1.959_964, 0.005_574_6)]
    {
        assert!(close(erfc(x), want, 2e-7), "erfc({x}) = {} not {want}", erfc(x));
    }
    assert!(close(erfc(-1.0), 2.0 - 0.157_299_207, 2e-7));
}
