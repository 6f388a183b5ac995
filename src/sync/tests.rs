use super::*;

#[test]
fn a_poisoned_lock_is_taken_with_its_data() {
    let m = Mutex::new(1);
    let rw = RwLock::new(2);
    let _ = std::panic::catch_unwind(|| {
        let _m = m.lock().unwrap();
        let _w = rw.write().unwrap();
        panic!("a holder panics");
    });
    assert!(m.is_poisoned() && rw.is_poisoned());
    *m.locked() += 1;
    *rw.write_locked() += 1;
    assert_eq!((*m.locked(), *rw.read_locked()), (2, 3));
}
