use super::*;

#[test]
fn session_ids_are_32_hex_digits_and_differ() {
    let a = new_session_id().unwrap();
    let b = new_session_id().unwrap();
    assert_eq!(a.len(), 32);
    assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a, b);
}

#[test]
fn an_sse_event_carries_the_message_as_its_data() {
    assert_eq!(&sse_event(br#"{"a":1}"#)[..], b"event: message\ndata: {\"a\":1}\n\n");
}

/// `read_body`: a body gathered from its chunks, within its bound.
mod read_body {
    use super::super::*;
    use http_body_util::{Full, StreamBody};

    fn chunks(parts: &[&'static [u8]]) -> impl hyper::body::Body<Data = Bytes, Error = String> {
        let frames: Vec<Result<hyper::body::Frame<Bytes>, String>> =
            parts.iter().map(|p| Ok(hyper::body::Frame::data(Bytes::from_static(p)))).collect();
        StreamBody::new(futures_util::stream::iter(frames))
    }

    #[tokio::test]
    async fn one_chunk_is_kept_as_it_came_and_several_are_gathered() {
        let one = Bytes::from_static(b"{\"a\":1}");
        let got = read_body(Full::new(one.clone()), 7).await.unwrap();
        // The very bytes handed over: same address, nothing copied.
        assert_eq!(got.as_ptr(), one.as_ptr());
        let got = read_body(chunks(&[b"{\"a\"", b":", b"1}"]), 7).await.unwrap();
        assert_eq!(&got[..], b"{\"a\":1}");
        assert!(read_body(chunks(&[]), 0).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn the_limit_holds_at_its_bound_and_refuses_just_past_it() {
        assert_eq!(read_body(chunks(&[b"1234", b"5678"]), 8).await.unwrap().len(), 8);
        assert!(matches!(
            read_body(chunks(&[b"1234", b"56789"]), 8).await,
            Err(BodyError::TooLarge)
        ));
        assert!(matches!(
            read_body(Full::new(Bytes::from_static(b"123456789")), 8).await,
            Err(BodyError::TooLarge)
        ));
        let failing = StreamBody::new(futures_util::stream::iter(vec![
            Ok(hyper::body::Frame::data(Bytes::from_static(b"12"))),
            Err("reset".to_owned()),
        ]));
        assert!(matches!(read_body(failing, 8).await, Err(BodyError::Failed(e)) if e == "reset"));
    }
}
