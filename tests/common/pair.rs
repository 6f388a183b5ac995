//! Two peers joined by an in-process pipe, a peer facing a side played by hand, accept loops on
//! a loopback port, and the handler the peer tests share.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use mcpwire::peer::{
    ConnectionTask, Context, Handler, Incoming, PeerBuilder, PeerHandle, Reply, RpcError,
};
use mcpwire::{Frame, JsonRpcCodec};
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;
use tokio_util::codec::FramedRead;

/// The pipe between the two sides, in bytes, unless a test needs another.
pub const PIPE: usize = 1 << 16;

/// Two peers joined by an in-process pipe (`transport::in_process`): the client, which the test
/// drives, and the server, under test. Dropping a connection closes its side.
pub struct Pair {
    pub client: PeerHandle,
    pub server: PeerHandle,
    pub client_conn: ConnectionTask,
    pub server_conn: ConnectionTask,
}

/// A [`Pair`] over a pipe of [`PIPE`] bytes: the client runs `client`, the server `server`.
pub fn pair(builder: &PeerBuilder, client: impl Handler, server: impl Handler) -> Pair {
    pair_over(builder, PIPE, client, server)
}

/// A [`Pair`] over a pipe of `pipe` bytes.
pub fn pair_over(
    builder: &PeerBuilder,
    pipe: usize,
    client: impl Handler,
    server: impl Handler,
) -> Pair {
    let ((client, client_conn), (server, server_conn)) =
        mcpwire::transport::in_process(builder, pipe, client, server);
    Pair { client, server, client_conn, server_conn }
}

/// A peer on one end of a pipe of `pipe` bytes, and the other end, for the test to use as it
/// will (a client of its own, a side played by hand).
pub fn peer_on_pipe(
    builder: &PeerBuilder,
    pipe: usize,
    handler: impl Handler,
) -> (PeerHandle, ConnectionTask, DuplexStream) {
    let (a, b) = tokio::io::duplex(pipe);
    let (peer, conn) = builder.connect(a, handler);
    (peer, conn, b)
}

/// The other side of a duplex, played by hand.
pub struct Raw {
    pub frames: FramedRead<ReadHalf<DuplexStream>, JsonRpcCodec>,
    pub out: WriteHalf<DuplexStream>,
}

impl Raw {
    pub fn new(io: DuplexStream) -> Self {
        let (r, w) = tokio::io::split(io);
        Self { frames: FramedRead::new(r, JsonRpcCodec::new()), out: w }
    }

    pub async fn send(&mut self, line: &str) {
        self.out.write_all(line.as_bytes()).await.unwrap();
        self.out.write_all(b"\n").await.unwrap();
    }

    pub async fn next(&mut self) -> Frame {
        tokio::time::timeout(Duration::from_secs(20), self.frames.next())
            .await
            .expect("a frame within 20 s")
            .expect("a frame before EOF")
            .unwrap()
    }

    pub async fn next_json(&mut self) -> Value {
        serde_json::from_slice(self.next().await.as_bytes()).unwrap()
    }
}

/// Writes `n` lines, `line(i)` each followed by a newline, from a task of its own, which
/// returns the write half when it is done: a sender that does not wait for the answers.
pub fn write_lines(
    mut out: WriteHalf<DuplexStream>,
    n: usize,
    line: impl Fn(usize) -> String + Send + 'static,
) -> JoinHandle<WriteHalf<DuplexStream>> {
    tokio::spawn(async move {
        for i in 0..n {
            out.write_all(format!("{}\n", line(i)).as_bytes()).await.unwrap();
        }
        out
    })
}

/// A peer under test on one end of a duplex of [`PIPE`] bytes, the hand-played side on the
/// other.
pub fn with_raw<H: Handler>(
    builder: &PeerBuilder,
    handler: H,
) -> (PeerHandle, ConnectionTask, Raw) {
    with_raw_over(builder, PIPE, handler)
}

/// [`with_raw`] over a pipe of `pipe` bytes.
pub fn with_raw_over<H: Handler>(
    builder: &PeerBuilder,
    pipe: usize,
    handler: H,
) -> (PeerHandle, ConnectionTask, Raw) {
    let (peer, conn, io) = peer_on_pipe(builder, pipe, handler);
    (peer, conn, Raw::new(io))
}

/// `transport::serve_tcp` with the default builder on a loopback port: its address, and the
/// accept loop's task (aborting it stops the loop and closes what it accepted).
pub async fn serve_tcp<H: Handler>(
    make: impl FnMut() -> H + Send + 'static,
) -> (SocketAddr, JoinHandle<std::io::Result<()>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (addr, tokio::spawn(mcpwire::transport::serve_tcp(listener, PeerBuilder::new(), make)))
}

/// Deterministic pseudo-random numbers for delays and orders.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Answers `{"n": k}` with `k * 2` after a delay derived from `k`; `ping` with `{}`; `hang`
/// never; `panic` by panicking; counts how many run at once.
#[derive(Clone, Default)]
pub struct Worker {
    pub running: Arc<AtomicUsize>,
    pub peak: Arc<AtomicUsize>,
    pub ended: Arc<AtomicUsize>,
}

/// Counts a handler out when it ends, whether it returned or was dropped.
struct Running(Arc<AtomicUsize>, Arc<AtomicUsize>);
impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
        self.1.fetch_add(1, Ordering::SeqCst);
    }
}

impl Handler for Worker {
    async fn request(&self, req: &Incoming, cx: &Context) -> Result<Reply, RpcError> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        let _running = Running(self.running.clone(), self.ended.clone());
        match req.method() {
            "ping" => Ok(Reply::empty()),
            "work" => {
                #[derive(serde::Deserialize)]
                struct P {
                    n: u64,
                }
                let p: P = req.params_as().map_err(RpcError::invalid_params)?;
                tokio::time::sleep(Duration::from_micros(mix(p.n) % 3000)).await;
                Reply::json(&json!({ "twice": p.n * 2 }))
            }
            "hang" => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(Reply::empty())
            }
            "progress" => {
                // Reports progress every 500 ms for 3 s, then answers.
                let token: Value =
                    req.params_as::<Value>().unwrap()["_meta"]["progressToken"].clone();
                for i in 0..6 {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    let _ = cx
                        .peer()
                        .notify(
                            "notifications/progress",
                            Some(mcpwire::Json(&json!({"progressToken": token, "progress": i}))),
                        )
                        .await;
                }
                Ok(Reply::raw("\"finished\""))
            }
            "panic" => panic!("asked to panic"),
            m => Err(RpcError::method_not_found(m)),
        }
    }
}
