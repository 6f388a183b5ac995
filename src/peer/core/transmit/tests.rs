use super::*;

fn line(n: usize) -> impl FnOnce(&mut BytesMut) -> Result<(), Error> {
    move |b: &mut BytesMut| {
        b.extend_from_slice(&vec![b'x'; n]);
        Ok(())
    }
}

fn take(t: &mut Transmit) -> (BytesMut, Vec<Sent>) {
    let (mut out, mut sent, mut wake) = (BytesMut::new(), Vec::new(), Vec::new());
    t.take(&mut out, &mut sent, &mut wake);
    (out, sent)
}

#[test]
fn messages_queued_between_takes_come_out_together() {
    let mut t = Transmit::new(100, false);
    t.push(Lane::Normal, line(3), || Route::Request { id: 0, related: None }).unwrap();
    t.push(Lane::Control, line(4), || Route::Request { id: 0, related: None }).unwrap();
    assert_eq!(take(&mut t).0.len(), 7);
    assert!(t.is_empty());
}

#[test]
fn the_normal_lane_is_full_past_cap_and_a_large_message_goes_alone() {
    let mut t = Transmit::new(10, false);
    t.push(Lane::Normal, line(10), || Route::Request { id: 0, related: None }).unwrap();
    assert!(!t.has_room(Lane::Normal));
    assert!(matches!(
        t.push(Lane::Normal, line(1), || Route::Request { id: 0, related: None }),
        Err(PushError::Full)
    ));
    assert_eq!(t.len(), 10, "a refused message leaves nothing behind");
    take(&mut t);
    t.push(Lane::Normal, line(50), || Route::Request { id: 0, related: None }).unwrap();
    assert_eq!(t.len(), 50);
}

#[test]
fn the_control_lane_goes_past_the_bound_by_its_budget_and_no_further() {
    let mut t = Transmit::new(10, false);
    t.push(Lane::Normal, line(10), || Route::Request { id: 0, related: None }).unwrap();
    t.push(Lane::Control, line(CONTROL_BUDGET), || Route::Request { id: 0, related: None })
        .unwrap();
    assert_eq!(t.len(), 10 + CONTROL_BUDGET);
    assert!(!t.has_room(Lane::Control));
    assert!(matches!(
        t.push(Lane::Control, line(1), || Route::Request { id: 0, related: None }),
        Err(PushError::Full)
    ));
}

#[test]
fn closing_keeps_what_was_queued_and_refuses_more() {
    let mut t = Transmit::new(100, false);
    t.push(Lane::Normal, line(5), || Route::Request { id: 0, related: None }).unwrap();
    t.close(&mut Vec::new());
    assert!(matches!(
        t.push(Lane::Control, line(1), || Route::Request { id: 0, related: None }),
        Err(PushError::Closed)
    ));
    assert_eq!(take(&mut t).0.len(), 5);
}

#[test]
fn an_encoding_failure_queues_nothing() {
    let mut t = Transmit::new(100, true);
    t.push(Lane::Normal, line(2), || Route::Request { id: 0, related: None }).unwrap();
    let r = t.push(
        Lane::Normal,
        |b| {
            b.extend_from_slice(b"half");
            Err(Error::NullRequestId)
        },
        || Route::Request { id: 0, related: None },
    );
    assert!(matches!(r, Err(PushError::Encode(Error::NullRequestId))));
    let (out, sent) = take(&mut t);
    assert_eq!((out.len(), sent.len()), (2, 1));
}

#[test]
fn records_follow_their_messages_when_tracked() {
    let mut t = Transmit::new(100, true);
    t.push(Lane::Normal, line(3), || Route::Request { id: 0, related: None }).unwrap();
    t.push(Lane::Normal, line(4), || Route::Response {
        id: Some(OwnedId::Num(1)),
        initialize: false,
    })
    .unwrap();
    let (_, sent) = take(&mut t);
    assert_eq!(sent.iter().map(|s| s.len).collect::<Vec<_>>(), [3, 4]);
    assert_eq!(sent[1].route, Route::Response { id: Some(OwnedId::Num(1)), initialize: false });
}
