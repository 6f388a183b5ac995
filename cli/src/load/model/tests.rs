use super::*;

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

#[test]
fn stages_parse_in_every_unit_and_refuse_nonsense() {
    let s = parse_stages("10s:100, 500ms:1000,1m:0").unwrap();
    assert_eq!(s[0], Stage { duration: secs(10.0), target: 100.0 });
    assert_eq!(s[1].duration, Duration::from_millis(500));
    assert_eq!(s[2].duration, secs(60.0));
    for bad in ["", "10s", "10:100", "0s:5", "1s:-1", "1s:inf", "xs:1", "1s:nan"] {
        assert!(parse_stages(bad).is_err(), "{bad}");
    }
}

#[test]
fn stages_at_the_bound_parse_and_one_more_does_not() {
    let at = vec!["1s:1"; DEFAULT_MAX_STAGES].join(",");
    assert_eq!(parse_stages(&at).unwrap().len(), DEFAULT_MAX_STAGES);
    let past = vec!["1s:1"; DEFAULT_MAX_STAGES + 1].join(",");
    assert!(parse_stages(&past).is_err());
}

#[test]
fn lanes_share_the_schedule_and_skipping_counts_what_a_walk_would() {
    for shape in
        [Shape::Constant(1000.0), Shape::Stages(parse_stages("2s:1000,1s:1000,2s:0").unwrap())]
    {
        let mut whole = Schedule::new(shape.clone());
        let all: Vec<_> = std::iter::from_fn(|| whole.next()).take(4000).collect();
        let mut lanes: Vec<_> = (0..3).map(|l| Schedule::lane(shape.clone(), l, 3)).collect();
        for (i, at) in all.iter().enumerate() {
            assert_eq!(lanes[i % 3].next(), Some(*at), "{i}");
        }
        // Skipping from a fresh lane counts its requests due before t, as walking would.
        for t in [0.0, 0.0015, 0.9, 1.7, 2.5] {
            let t = secs(t);
            for l in 0..3 {
                let mut walk = Schedule::lane(shape.clone(), l, 3);
                let mut walked = 0;
                while walk.next().is_some_and(|at| at < t) {
                    walked += 1;
                }
                let mut skip = Schedule::lane(shape.clone(), l, 3);
                let skipped = skip.skip_before(t);
                assert!(skipped.abs_diff(walked) <= 1, "{t:?} lane {l}: {skipped} vs {walked}");
            }
        }
    }
    // A stall of an hour at a billion requests a second is skipped at once.
    let mut s = Schedule::new(Shape::Constant(1e9));
    assert_eq!(s.skip_before(secs(3600.0)), 3_600_000_000_000);
    assert!(s.next().unwrap() >= secs(3600.0) - Duration::from_micros(1));
}

#[test]
fn a_constant_rate_is_evenly_spaced() {
    let mut s = Schedule::new(Shape::Constant(1000.0));
    for i in 0..5000u64 {
        let at = s.next().unwrap();
        assert!((at.as_secs_f64() - i as f64 / 1000.0).abs() < 1e-9, "{i}: {at:?}");
    }
    assert_eq!(Schedule::new(Shape::Constant(0.0)).next(), None);
}

#[test]
fn a_ramp_sends_the_integral_of_its_rate_and_ends_with_the_stages() {
    // 0 → 100/s over 10 s (500 requests), 100/s for 5 s (500), 100 → 0 over 10 s (500).
    let shape = Shape::Stages(parse_stages("10s:100,5s:100,10s:0").unwrap());
    assert_eq!(shape.length(), Some(secs(25.0)));
    let mut s = Schedule::new(shape.clone());
    let mut times = Vec::new();
    while let Some(t) = s.next() {
        times.push(t);
        assert!(times.len() < 10_000, "the schedule must end");
    }
    assert!((1499..=1501).contains(&times.len()), "{}", times.len());
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "never backwards");
    let by = |t: f64| times.iter().filter(|x| x.as_secs_f64() < t).count() as i64;
    // Integral of the rate: 0.5 * 100 * t² / 10 over the first ramp.
    assert!((by(5.0) - 125).abs() <= 1, "{}", by(5.0));
    assert!((by(10.0) - 500).abs() <= 1);
    assert!((by(15.0) - 1000).abs() <= 1);
    assert!((shape.at(secs(5.0)) - 50.0).abs() < 1e-9);
    assert!((shape.at(secs(20.0)) - 50.0).abs() < 1e-9);
    assert_eq!(shape.at(secs(99.0)), 0.0);
    assert_eq!(shape.peak(), 100.0);
}
