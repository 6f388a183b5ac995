use super::*;

fn cfg(events: usize, bytes: usize) -> ResumeConfig {
    ResumeConfig {
        retry: Duration::from_millis(1500),
        events,
        bytes,
        streams: 4,
        retention: Duration::from_secs(60),
    }
}

#[test]
fn event_ids_are_read_strictly() {
    assert_eq!(parse_event_id(b"7-0"), Some((7, 0)));
    assert_eq!(
        parse_event_id(b"18446744073709551615-18446744073709551615"),
        Some((u64::MAX, u64::MAX))
    );
    for bad in [
        &b""[..],
        b"-",
        b"7",
        b"7-",
        b"-1",
        b"0-1",
        b"07-1",
        b"7-01",
        b"7-1-2",
        b"7 -1",
        b"+7-1",
        b"7-1 ",
        b"a-1",
        b"18446744073709551616-1",
        b"7-18446744073709551616",
    ] {
        assert_eq!(parse_event_id(bad), None, "{:?}", String::from_utf8_lossy(bad));
    }
    assert_eq!(parse_event_id(&[b'1'; 64]), None);
}

#[test]
fn the_priming_event_has_an_id_a_retry_and_empty_data() {
    assert_eq!(&priming(3, Duration::from_millis(1500))[..], b"id: 3-0\nretry: 1500\ndata: \n\n");
}

#[tokio::test]
async fn a_reader_gets_the_prefix_then_the_events_and_a_resumption_the_rest() {
    let s = SseStream::new(5, &cfg(8, 1 << 20));
    s.append(br#"{"a":1}"#);
    let mut r = s.attach(0, Some(Bytes::from_static(b"P\n\n")), None);
    let got = r.next().await.unwrap();
    assert_eq!(&got[..], b"P\n\nevent: message\nid: 5-1\ndata: {\"a\":1}\n\n");
    s.append(br#"{"a":2}"#);
    s.append(br#"{"a":3}"#);
    let got = r.next().await.unwrap();
    assert!(got.starts_with(b"event: message\nid: 5-2\n") && got.ends_with(b"{\"a\":3}\n\n"));
    drop(r);
    assert!(!s.is_live());
    let mut again = s.resume(2).unwrap();
    assert!(s.is_live());
    s.finish();
    assert_eq!(&again.next().await.unwrap()[..], b"event: message\nid: 5-3\ndata: {\"a\":3}\n\n");
    assert_eq!(again.next().await, None);
    assert!(!s.is_live());
    assert_eq!(s.resume(4).err(), Some(Unresumable::Future));
}

#[tokio::test]
async fn past_the_bound_the_oldest_events_go_and_a_resumption_from_before_is_refused() {
    let s = SseStream::new(1, &cfg(2, 1 << 20));
    for i in 1..=4 {
        s.append(format!("{{\"i\":{i}}}").as_bytes());
    }
    // Events 3 and 4 are kept: resuming after 2 or later works, after 1 does not.
    assert_eq!(s.resume(1).err(), Some(Unresumable::Dropped));
    assert_eq!(s.resume(0).err(), Some(Unresumable::Dropped));
    let mut r = s.resume(2).unwrap();
    let got = r.next().await.unwrap();
    assert!(got.starts_with(b"event: message\nid: 1-3\n"), "{got:?}");
    // Bytes bound: one event is always kept, however large.
    let s = SseStream::new(2, &cfg(100, 10));
    s.append(br#"{"big":"xxxxxxxxxxxxxxxxxxxxxxxx"}"#);
    s.append(br#"{"big":"yyyyyyyyyyyyyyyyyyyyyyyy"}"#);
    assert_eq!(s.resume(0).err(), Some(Unresumable::Dropped));
    assert!(s.resume(1).is_ok());
}

#[tokio::test]
async fn a_cut_ends_the_connection_but_not_the_stream_and_a_takeover_ends_the_old_reader() {
    let s = SseStream::new(9, &cfg(8, 1 << 20));
    let mut r = s.attach(0, Some(Bytes::from_static(b"P\n\n")), None);
    s.append(b"1");
    s.cut();
    s.append(b"2");
    let got = r.next().await.unwrap();
    assert!(got.starts_with(b"P\n\nevent: message\nid: 9-1\n") && !got.ends_with(b"2\n\n"));
    assert_eq!(r.next().await, None);
    let mut a = s.resume(1).unwrap();
    let mut b = s.resume(1).unwrap();
    assert_eq!(a.next().await, None, "taken over");
    assert!(b.next().await.unwrap().ends_with(b"data: 2\n\n"));
}

#[tokio::test]
async fn a_reader_that_falls_behind_skips_what_was_dropped() {
    let s = SseStream::new(1, &cfg(2, 1 << 20));
    let mut r = s.attach(0, None, None);
    for i in 1..=5 {
        s.append(format!("{i}").as_bytes());
    }
    let got = r.next().await.unwrap();
    assert!(got.starts_with(b"event: message\nid: 1-4\n"), "{got:?}");
    assert_eq!(r.skipped, 3);
}
