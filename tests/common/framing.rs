//! Decoders driven as a reader drives them: fed in chunks, fed a stream cut anywhere, and read
//! through a real `FramedRead` over a duplex pipe.

use std::fmt::Debug;

use bytes::BytesMut;
use futures::StreamExt;
use proptest::prelude::*;
use tokio::io::AsyncWriteExt;
use tokio_util::codec::{Decoder, FramedRead};

/// Feeds `chunks` to `decoder` in order, draining `decode` after each, then drains
/// `decode_eof`; neither may fail, and no byte may be left in the buffer at the end.
pub fn decode_chunks<'a, D>(
    mut decoder: D,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Vec<D::Item>
where
    D: Decoder,
    D::Error: Debug,
{
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        while let Some(item) = decoder.decode(&mut buf).expect("decode never fails") {
            out.push(item);
        }
    }
    while let Some(item) = decoder.decode_eof(&mut buf).expect("decode_eof never fails") {
        out.push(item);
    }
    assert!(buf.is_empty(), "bytes left at end of input: {:?}", String::from_utf8_lossy(&buf));
    out
}

/// `input` cut into reads of the lengths in `cuts`, taken in turn (a zero is an empty read),
/// `2 * input.len() + cuts.len()` reads at most, the rest in one last read.
pub fn cut_by<'a>(input: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut chunks = Vec::new();
    let mut at = 0;
    for &c in cuts.iter().cycle().take(2 * input.len() + cuts.len()) {
        let end = (at + c).min(input.len());
        chunks.push(&input[at..end]);
        at = end;
    }
    chunks.push(&input[at..]);
    chunks
}

/// A run of 1 to `max` bytes of `stream`, from anywhere in it: pieces of a stream a decoder
/// must read, for proptests that put them together anew.
pub fn run_of(stream: Vec<u8>, max: usize) -> impl Strategy<Value = Vec<u8>> {
    let len = stream.len();
    (0..len, 1..max).prop_map(move |(at, n)| stream[at..(at + n).min(len)].to_vec())
}

/// Up to 40 bytes, each one of `bytes`: the bytes that matter to a framing, in any order.
pub fn drawn_from(bytes: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(proptest::sample::select(bytes), 0..40)
}

/// Writes `stream` in writes of `chunk` bytes into a duplex pipe of `pipe` bytes and shuts it
/// down, while a `FramedRead` with `decoder` reads the other end: every item it reads, none of
/// which may be an error.
pub async fn through_duplex<D>(
    stream: Vec<u8>,
    pipe: usize,
    chunk: usize,
    decoder: D,
) -> Vec<D::Item>
where
    D: Decoder,
    D::Error: Debug,
{
    let (mut tx, rx) = tokio::io::duplex(pipe);
    let writer = async move {
        for piece in stream.chunks(chunk) {
            tx.write_all(piece).await.unwrap();
        }
        tx.shutdown().await.unwrap();
    };
    let reader =
        FramedRead::new(rx, decoder).map(|r| r.expect("no stream error")).collect::<Vec<D::Item>>();
    let ((), got) = tokio::join!(writer, reader);
    got
}

/// A notification whose params nest arrays so that the message is `depth` levels deep.
pub fn nested_arrays(depth: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"m","params":{}1{}}}"#,
        "[".repeat(depth - 1),
        "]".repeat(depth - 1)
    )
}

/// A notification whose params nest objects so that the message is `depth` levels deep.
pub fn nested_objects(depth: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"m","params":{}1{}}}"#,
        "{\"k\":".repeat(depth - 1),
        "}".repeat(depth - 1)
    )
}
