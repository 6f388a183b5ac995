//! The decoders mcpwire is measured against: the peers' own message types, serde_json, simd-json
//! and sonic-rs.

use std::hint::black_box;
use std::marker::PhantomData;

use mcpwire::Kind;
use rmcp::model::{CustomNotification, CustomRequest, CustomResult, JsonRpcMessage};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use simd_json::{Buffers, INPUT_PADDING, Tape};

/// What a typical serde_json-based peer decodes each line into: an untagged enum of owned values.
#[allow(dead_code, reason = "fields exist to be deserialised, as a peer's would")]
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum PeerMessage {
    Request {
        jsonrpc: String,
        id: serde_json::Value,
        method: String,
        params: Option<serde_json::Value>,
    },
    Notification {
        jsonrpc: String,
        method: String,
        params: Option<serde_json::Value>,
    },
    Response {
        jsonrpc: String,
        id: serde_json::Value,
        result: serde_json::Value,
    },
    Error {
        jsonrpc: String,
        id: serde_json::Value,
        error: PeerError,
    },
}

#[allow(dead_code, reason = "fields exist to be deserialised, as a peer's would")]
#[derive(Deserialize)]
pub(crate) struct PeerError {
    code: i64,
    message: String,
    data: Option<serde_json::Value>,
}

/// A line as `T`, or as `Vec<T>` when it is a batch; the number of messages.
#[inline]
pub(crate) fn serde_json_line<'a, T: Deserialize<'a>>(line: &'a [u8]) -> Option<usize> {
    if line.first() == Some(&b'[') {
        serde_json::from_slice::<Vec<T>>(line).ok().map(|v| black_box(v).len())
    } else {
        serde_json::from_slice::<T>(line).ok().map(|m| {
            black_box(m);
            1
        })
    }
}

#[inline]
pub(crate) fn serde_json_value(line: &[u8]) -> Option<usize> {
    match serde_json::from_slice::<serde_json::Value>(line).ok()? {
        serde_json::Value::Array(items) => Some(black_box(items).len()),
        value => {
            black_box(value);
            Some(1)
        }
    }
}

/// As rmcp's `transport-async-rw` codec decodes a line (`try_parse_with_compatibility`): strip a
/// BOM, check UTF-8 (it keeps the text for its fallback path), `serde_json::from_slice`.
#[inline]
pub(crate) fn rmcp_line<T: DeserializeOwned>(line: &[u8]) -> Option<usize> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    std::str::from_utf8(line).ok()?;
    serde_json_line::<T>(line)
}

/// rmcp's most generic message: any method, any params, any result.
pub(crate) type RmcpGeneric = JsonRpcMessage<CustomRequest, CustomResult, CustomNotification>;

pub(crate) type JsonrpseeNotification<'a> = jsonrpsee_types::Notification<'a, Option<&'a RawValue>>;

/// As a jsonrpsee server reads a body: a request, else a notification; a batch as raw elements,
/// then each one.
#[inline]
pub(crate) fn jsonrpsee_server(line: &[u8]) -> Option<usize> {
    pub(crate) fn one(line: &[u8]) -> Option<usize> {
        if let Ok(request) = serde_json::from_slice::<jsonrpsee_types::Request<'_>>(line) {
            black_box(request);
            return Some(1);
        }
        serde_json::from_slice::<JsonrpseeNotification<'_>>(line).ok().map(|n| {
            black_box(n);
            1
        })
    }
    if line.first() == Some(&b'[') {
        let batch: Vec<&RawValue> = serde_json::from_slice(line).ok()?;
        let mut n = 0;
        for element in &batch {
            n += one(element.get().as_bytes())?;
        }
        return Some(n);
    }
    one(line)
}

/// As a jsonrpsee client reads a message: a response (success or error), else a notification.
#[inline]
pub(crate) fn jsonrpsee_client(line: &[u8]) -> Option<usize> {
    if let Ok(response) = serde_json::from_slice::<jsonrpsee_types::Response<'_, &RawValue>>(line) {
        black_box(response);
        return Some(1);
    }
    serde_json::from_slice::<JsonrpseeNotification<'_>>(line).ok().map(|n| {
        black_box(n);
        1
    })
}

/// Both directions on one stream: request, response, notification, in that order.
#[inline]
pub(crate) fn jsonrpsee_any(line: &[u8]) -> Option<usize> {
    if line.first() == Some(&b'[') {
        return jsonrpsee_server(line);
    }
    if let Ok(request) = serde_json::from_slice::<jsonrpsee_types::Request<'_>>(line) {
        black_box(request);
        return Some(1);
    }
    jsonrpsee_client(line)
}

/// An id borrowed from the input: what a lean decoder keeps.
#[allow(dead_code, reason = "fields exist to be deserialised")]
pub(crate) enum BorrowedId<'a> {
    Num(i64),
    Str(&'a str),
}

impl<'de: 'a, 'a> Deserialize<'de> for BorrowedId<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visitor<'a> {
            type Value = BorrowedId<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an integer or a string without escapes")
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Self::Value, E> {
                Ok(BorrowedId::Num(n))
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Self::Value, E> {
                i64::try_from(n).map(BorrowedId::Num).map_err(E::custom)
            }
            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                s: &'de str,
            ) -> Result<Self::Value, E> {
                Ok(BorrowedId::Str(s))
            }
        }
        d.deserialize_any(Visitor(PhantomData))
    }
}

/// sonic-rs's lazy struct: envelope members borrowed, payloads skipped and kept as raw text.
#[derive(Deserialize)]
pub(crate) struct SonicMessage<'a> {
    jsonrpc: &'a str,
    #[serde(borrow)]
    id: Option<BorrowedId<'a>>,
    method: Option<&'a str>,
    #[serde(borrow)]
    params: Option<sonic_rs::LazyValue<'a>>,
    #[serde(borrow)]
    result: Option<sonic_rs::LazyValue<'a>>,
    #[serde(borrow)]
    error: Option<sonic_rs::LazyValue<'a>>,
}

impl SonicMessage<'_> {
    #[inline]
    pub(crate) fn kind(&self) -> Option<Kind> {
        if self.jsonrpc != "2.0" {
            return None;
        }
        let has =
            (self.method.is_some(), self.id.is_some(), self.result.is_some(), self.error.is_some());
        match has {
            (true, true, false, false) => Some(Kind::Request),
            (true, false, false, false) => Some(Kind::Notification),
            (false, true, true, false) => Some(Kind::Response),
            (false, true, false, true) => Some(Kind::Error),
            _ => None,
        }
    }
}

#[inline]
pub(crate) fn sonic_rs_lazy(line: &[u8]) -> Option<usize> {
    pub(crate) fn one(m: &SonicMessage<'_>) -> Option<usize> {
        black_box((m.kind()?, &m.id, m.method, &m.params, &m.result, &m.error));
        Some(1)
    }
    if line.first() == Some(&b'[') {
        let batch: Vec<SonicMessage<'_>> = sonic_rs::from_slice(line).ok()?;
        batch.iter().map(one).sum()
    } else {
        one(&sonic_rs::from_slice(line).ok()?)
    }
}

/// Messages on a tape: the root array's length for a batch, else 1.
#[inline]
pub(crate) fn tape_messages(tape: &Tape<'_>) -> usize {
    match tape.0.first() {
        Some(simd_json::Node::Array { len, .. }) => *len,
        _ => 1,
    }
}

/// Reused simd-json state: `Buffers` and a tape whose allocation outlives each input.
pub(crate) struct SimdJson {
    buffers: Buffers,
    tape: Option<Tape<'static>>,
    scratch: Vec<u8>,
}

impl SimdJson {
    pub(crate) fn new() -> Self {
        Self { buffers: Buffers::default(), tape: Some(Tape::null()), scratch: Vec::new() }
    }

    /// `fill_tape`: copies `input` into its padded buffer, unescapes strings in place in `input`.
    #[inline]
    pub(crate) fn fill_tape(&mut self, input: &mut [u8]) -> Option<usize> {
        let mut tape = self.tape.take().unwrap().reset();
        let n = simd_json::fill_tape(input, &mut self.buffers, &mut tape)
            .ok()
            .map(|()| tape_messages(black_box(&tape)));
        self.tape = Some(tape.reset());
        n
    }

    /// `fill_tape_padded` of `input[..len]`, with `input[len..]` at least `INPUT_PADDING` long.
    #[inline]
    pub(crate) fn fill_tape_padded(&mut self, input: &mut [u8], len: usize) -> Option<usize> {
        let mut tape = self.tape.take().unwrap().reset();
        let n = simd_json::fill_tape_padded(input, len, &mut self.buffers, &mut tape)
            .ok()
            .map(|()| tape_messages(black_box(&tape)));
        self.tape = Some(tape.reset());
        n
    }

    /// Each line of `stream` with `fill_tape_padded`: in place where `INPUT_PADDING` bytes
    /// follow the line, else from a padded copy, as the codec does.
    pub(crate) fn stream_padded(&mut self, stream: &mut [u8]) -> Option<usize> {
        let (mut start, mut n) = (0, 0);
        let mut scratch = std::mem::take(&mut self.scratch);
        while let Some(len) = memchr::memchr(b'\n', &stream[start..]) {
            n += if stream.len() - (start + len) >= INPUT_PADDING {
                self.fill_tape_padded(&mut stream[start..], len)?
            } else {
                scratch.clear();
                scratch.extend_from_slice(&stream[start..start + len]);
                scratch.resize(len + INPUT_PADDING, b' ');
                self.fill_tape_padded(&mut scratch, len)?
            };
            start += len + 1;
        }
        self.scratch = scratch;
        Some(n)
    }

    /// Each line of `stream` with `fill_tape`.
    pub(crate) fn stream_copying(&mut self, stream: &mut [u8]) -> Option<usize> {
        let (mut start, mut n) = (0, 0);
        while let Some(len) = memchr::memchr(b'\n', &stream[start..]) {
            n += self.fill_tape(&mut stream[start..start + len])?;
            start += len + 1;
        }
        Some(n)
    }
}

/// Splits `stream` at newlines as an NDJSON reader does and decodes each line with `decode`.
#[inline]
pub(crate) fn lines(
    stream: &[u8],
    mut decode: impl FnMut(&[u8]) -> Option<usize>,
) -> Option<usize> {
    let (mut start, mut n) = (0, 0);
    for nl in memchr::memchr_iter(b'\n', stream) {
        n += decode(&stream[start..nl])?;
        start = nl + 1;
    }
    Some(n)
}
