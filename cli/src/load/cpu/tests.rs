use super::*;

#[test]
fn cpu_time_grows_with_work_done_and_never_goes_back() {
    let before = Cpu::now().expect("getrusage answers on Linux");
    // Spin until the kernel has charged at least 20 ms of user time: the clock ticks at
    // 1-10 ms, so the loop ends on any machine, however loaded.
    let mut x = 0u64;
    let mut after = before;
    while after.since(before).user < Duration::from_millis(20) {
        for i in 0..100_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        after = Cpu::now().expect("getrusage answers on Linux");
        assert!(after.user >= before.user && after.system >= before.system);
    }
    let spent = after.since(before);
    assert!(spent.total() >= Duration::from_millis(20));
    assert_eq!(spent.per_request_us(0), None);
    let per = spent.per_request_us(1_000).expect("requests > 0");
    assert!((per - spent.total().as_secs_f64() * 1e3).abs() < 1e-6);
}

#[test]
fn an_earlier_reading_past_a_later_one_gives_zero_not_a_wrap() {
    let a = Cpu { user: Duration::from_secs(2), system: Duration::from_secs(1) };
    let b = Cpu { user: Duration::from_secs(1), system: Duration::from_secs(3) };
    assert_eq!(b.since(a), Cpu { user: Duration::ZERO, system: Duration::from_secs(2) });
}
