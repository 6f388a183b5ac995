//! HTTP/2 written frame by frame on a `TcpStream`, for what a well-behaved client (hyper's, the
//! `h2` crate's) never sends: more streams than allowed, data past the window, floods of
//! resets, settings and pings. Header blocks are HPACK literals without indexing or Huffman
//! coding, so their decoded size is exactly what the test computes.

use bytes::{Buf, BytesMut};

use crate::harness::*;

pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

pub(crate) const DATA: u8 = 0;
pub(crate) const HEADERS: u8 = 1;
pub(crate) const RST_STREAM: u8 = 3;
pub(crate) const SETTINGS: u8 = 4;
pub(crate) const PING: u8 = 6;
pub(crate) const GOAWAY: u8 = 7;
pub(crate) const WINDOW_UPDATE: u8 = 8;

pub(crate) const END_STREAM: u8 = 0x1;
pub(crate) const ACK: u8 = 0x1;
pub(crate) const END_HEADERS: u8 = 0x4;

pub(crate) const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub(crate) const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub(crate) const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;
pub(crate) const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 0x6;

pub(crate) const NO_ERROR: u32 = 0x0;
pub(crate) const FLOW_CONTROL_ERROR: u32 = 0x3;
pub(crate) const STREAM_CLOSED: u32 = 0x5;
pub(crate) const FRAME_SIZE_ERROR: u32 = 0x6;
pub(crate) const REFUSED_STREAM: u32 = 0x7;
pub(crate) const CANCEL: u32 = 0x8;
pub(crate) const ENHANCE_YOUR_CALM: u32 = 0xb;

/// One frame read back.
#[derive(Debug)]
pub(crate) struct Frame {
    pub(crate) ty: u8,
    pub(crate) flags: u8,
    pub(crate) stream: u32,
    pub(crate) payload: Vec<u8>,
}

impl Frame {
    /// The error code of a `RST_STREAM` or `GOAWAY`.
    pub(crate) fn code(&self) -> u32 {
        let at = if self.ty == GOAWAY { 4 } else { 0 };
        u32::from_be_bytes(self.payload[at..at + 4].try_into().unwrap())
    }

    /// Whether this is a response `HEADERS` whose `:status` is 200 (the static table's entry 8,
    /// which is how the server's encoder sends it).
    pub(crate) fn is_ok_head(&self) -> bool {
        self.ty == HEADERS && self.payload.first() == Some(&0x88)
    }

    /// The `(identifier, value)` pairs of a `SETTINGS` frame.
    pub(crate) fn settings(&self) -> Vec<(u16, u32)> {
        self.payload
            .chunks(6)
            .map(|c| {
                (u16::from_be_bytes([c[0], c[1]]), u32::from_be_bytes(c[2..6].try_into().unwrap()))
            })
            .collect()
    }
}

pub(crate) fn frame(ty: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap();
    let mut f = Vec::with_capacity(9 + payload.len());
    f.extend_from_slice(&len.to_be_bytes()[1..]);
    f.extend_from_slice(&[ty, flags]);
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

pub(crate) fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
    let mut p = Vec::new();
    for (id, v) in pairs {
        p.extend_from_slice(&id.to_be_bytes());
        p.extend_from_slice(&v.to_be_bytes());
    }
    frame(SETTINGS, 0, 0, &p)
}

pub(crate) fn rst(stream: u32, code: u32) -> Vec<u8> {
    frame(RST_STREAM, 0, stream, &code.to_be_bytes())
}

/// HPACK integer with an `n`-bit prefix (RFC 7541, 5.1).
fn int(out: &mut Vec<u8>, n: u32, mut v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(u8::try_from(v).unwrap());
        return;
    }
    out.push(u8::try_from(max).unwrap());
    v -= max;
    while v >= 128 {
        out.push(u8::try_from(v % 128).unwrap() | 0x80);
        v /= 128;
    }
    out.push(u8::try_from(v).unwrap());
}

/// A header block of literal fields, new names, no indexing, no Huffman coding.
pub(crate) fn hpack(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in fields {
        out.push(0x00);
        int(&mut out, 7, name.len());
        out.extend_from_slice(name.as_bytes());
        int(&mut out, 7, value.len());
        out.extend_from_slice(value.as_bytes());
    }
    out
}

/// What HTTP/2 counts for a header list: each field's name and value, plus 32.
pub(crate) fn list_size(fields: &[(&str, &str)]) -> usize {
    fields.iter().map(|(n, v)| n.len() + v.len() + 32).sum()
}

/// The fields of a POST to the endpoint, then `extra`.
pub(crate) fn post_fields<'a>(
    authority: &'a str,
    extra: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    let mut f = vec![
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", authority),
        (":path", "/mcp"),
        ("content-type", "application/json"),
        ("accept", BOTH),
    ];
    f.extend_from_slice(extra);
    f
}

/// The payload of the PING that ends [`Raw::connect`]'s handshake.
const HANDSHAKE_PING: [u8; 8] = *b"shake\0\0\0";

/// A client connection: the preface and our SETTINGS sent, the server's SETTINGS read and
/// acknowledged.
pub(crate) struct Raw {
    pub(crate) read: tokio::net::tcp::OwnedReadHalf,
    /// Taken by a writer of its own while the test reads (or does not).
    pub(crate) write: Option<tokio::net::tcp::OwnedWriteHalf>,
    buf: BytesMut,
    /// The server's first SETTINGS.
    pub(crate) server_settings: Vec<(u16, u32)>,
    /// The connection window the server opened beyond the initial 65,535 (its `WINDOW_UPDATE`
    /// on stream 0 during the handshake), if it opened any.
    pub(crate) connection_window_update: Option<u32>,
}

impl Raw {
    pub(crate) async fn connect(addr: SocketAddr) -> Self {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        let mut hello = PREFACE.to_vec();
        // A large window for the server's answers, so they never wait on us.
        hello.extend(settings(&[(SETTINGS_INITIAL_WINDOW_SIZE, 1 << 30)]));
        hello.extend(frame(WINDOW_UPDATE, 0, 0, &(1u32 << 30).to_be_bytes()));
        tcp.write_all(&hello).await.unwrap();
        let (read, write) = tcp.into_split();
        let mut raw = Self {
            read,
            write: Some(write),
            buf: BytesMut::new(),
            server_settings: Vec::new(),
            connection_window_update: None,
        };
        let first = raw.next().await.expect("the server's SETTINGS");
        assert_eq!((first.ty, first.flags), (SETTINGS, 0), "{first:?}");
        raw.server_settings = first.settings();
        raw.send(&frame(SETTINGS, ACK, 0, &[])).await;
        // The server's ACK of our SETTINGS follows, and its WINDOW_UPDATE for the connection if
        // it opens it wider, in either order, both written by then. A PING sent after the ACK
        // is answered after them: its ACK ends the handshake whether a WINDOW_UPDATE came or not.
        let mut acked = false;
        let mut pinged = false;
        loop {
            let f = raw.next().await.expect("the server's handshake");
            match (f.ty, f.flags & ACK != 0) {
                (WINDOW_UPDATE, _) if f.stream == 0 => {
                    raw.connection_window_update =
                        Some(u32::from_be_bytes(f.payload[..4].try_into().unwrap()));
                }
                (SETTINGS, true) => acked = true,
                (PING, true) if f.payload == HANDSHAKE_PING => break,
                // The server's own keep-alive PING, when its interval is that short: answered,
                // as a client does.
                (PING, false) => raw.send(&frame(PING, ACK, 0, &f.payload)).await,
                _ => panic!("{f:?} in the handshake"),
            }
            if acked && !pinged {
                raw.send(&frame(PING, 0, 0, &HANDSHAKE_PING)).await;
                pinged = true;
            }
        }
        raw
    }

    pub(crate) fn setting(&self, id: u16) -> Option<u32> {
        self.server_settings.iter().find(|(i, _)| *i == id).map(|(_, v)| *v)
    }

    pub(crate) async fn send(&mut self, bytes: &[u8]) {
        let w = self.write.as_mut().expect("the write half is here");
        timeout(WAIT, w.write_all(bytes)).await.expect("the server reads").unwrap();
    }

    /// The next frame, or `None` once the server closed (or reset) the connection.
    pub(crate) async fn next(&mut self) -> Option<Frame> {
        loop {
            if self.buf.len() >= 9 {
                let len = usize::from(self.buf[0]) << 16
                    | usize::from(self.buf[1]) << 8
                    | usize::from(self.buf[2]);
                if self.buf.len() >= 9 + len {
                    let head = self.buf.split_to(9);
                    let payload = self.buf.split_to(len).to_vec();
                    let stream = (&head[5..9]).get_u32() & 0x7fff_ffff;
                    return Some(Frame { ty: head[3], flags: head[4], stream, payload });
                }
            }
            let read = timeout(WAIT, self.read.read_buf(&mut self.buf)).await;
            match read.expect("a frame or the close in time") {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }

    /// Frames until `pick` takes one; panics if the connection ends first.
    pub(crate) async fn until(&mut self, mut pick: impl FnMut(&Frame) -> bool) -> Frame {
        loop {
            let f = self.next().await.expect("the connection still open");
            if pick(&f) {
                return f;
            }
        }
    }

    /// Frames until the connection ends; returns the GOAWAY among them, if any.
    pub(crate) async fn until_closed(&mut self) -> Option<Frame> {
        let mut goaway = None;
        while let Some(f) = self.next().await {
            if f.ty == GOAWAY {
                goaway = Some(f);
            }
        }
        goaway
    }
}
