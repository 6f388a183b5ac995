use super::*;

fn tally(values: impl Iterator<Item = u64>) -> OpTally {
    let mut t = OpTally::new();
    for v in values {
        t.record(Duration::from_micros(v), if v % 7 == 0 { Err("x".into()) } else { Ok(()) }, 0, 0);
    }
    t
}

fn write(path: &Path, seconds: &[u64]) {
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let log = HdrLog::create(path, "mcpwire load test", start).unwrap();
    let names = vec!["tools/call echo".to_owned()];
    for &s in seconds {
        let t = tally((0..1000).map(|i| 1 + (i * 37 + s * 101) % 50_000));
        log.write(&names, &[t], Duration::from_secs(s), Duration::from_secs(1));
    }
    log.finish().unwrap();
}

#[test]
fn logs_of_parts_merge_to_the_log_of_the_whole() {
    let dir = std::env::temp_dir().join(format!("mcpwire-hdr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (whole, a, b) = (dir.join("whole.hlog"), dir.join("a.hlog"), dir.join("b.hlog"));
    write(&whole, &[0, 1, 2, 3, 4]);
    write(&a, &[0, 2, 4]);
    write(&b, &[1, 3]);
    let one = merge(&[read(&whole).unwrap()]);
    let two = merge(&[read(&a).unwrap(), read(&b).unwrap()]);
    let (x, y) = (&one.ops["tools/call_echo"], &two.ops["tools/call_echo"]);
    assert_eq!(x.ok, y.ok, "the same histogram, value for value");
    assert_eq!(x.failed, y.failed);
    assert_eq!(x.requests(), 5000);
    assert!(x.error_count() > 0);
    assert_eq!(one.seconds, two.seconds);
    assert_eq!((one.first, one.last), (two.first, two.last));
    assert_eq!(one.last - one.first, 5.0);
    // The log is the standard text format.
    let text = std::fs::read_to_string(&whole).unwrap();
    assert!(text.starts_with("#mcpwire load test\n#[StartTime: 1700000000.000"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("Tag=tools/call_echo,0.000,1.000,")));
    assert!(text.lines().any(|l| l.starts_with("Tag=failed:tools/call_echo,")));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_full_queue_loses_intervals_and_says_so() {
    let dir = std::env::temp_dir().join(format!("mcpwire-hdrq-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let names = vec!["op".to_owned()];
    let t = tally(1..100);
    // A queue of 0 holds nothing the writer is not already taking: with the writer busy,
    // a burst of intervals overflows it.
    let log = HdrLog::with_queue(&dir.join("q.hlog"), "c", SystemTime::now(), 0).unwrap();
    for s in 0..200 {
        log.write(&names, std::slice::from_ref(&t), Duration::from_secs(s), Duration::from_secs(1));
    }
    let e = log.finish().unwrap_err();
    assert!(e.to_string().contains("intervals were not written"), "{e}");
    // With room for the burst, nothing is lost.
    let log = HdrLog::with_queue(&dir.join("r.hlog"), "c", SystemTime::now(), 200).unwrap();
    for s in 0..200 {
        log.write(&names, std::slice::from_ref(&t), Duration::from_secs(s), Duration::from_secs(1));
    }
    log.finish().unwrap();
    // Two histograms an interval: the successes and the failures.
    assert_eq!(read(&dir.join("r.hlog")).unwrap().intervals.len(), 400);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_that_is_not_a_log_is_refused() {
    assert!(parse(b"Tag=x,0.000,1.000,1.0,not-base64!\n").is_err());
    assert!(parse(b"hello\n").is_err());
    assert_eq!(parse(b"").unwrap().intervals.len(), 0);
}
