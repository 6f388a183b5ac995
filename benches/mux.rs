//! Request multiplexing: the cost of one request's round trip through the table of requests in
//! flight, against the `HashMap<u64, oneshot::Sender>` that peers (rmcp, lsp-server) keep, all
//! measured in the same run.
//!
//! Each table is first filled with `N` live requests. One iteration then registers a new request
//! and matches the oldest live one (FIFO) and frees its slot, so the table stays at `N` entries
//! and slots churn as they do under steady traffic. For `Outbound` that is `answer` then
//! `collect`, the table's one way to match and free a request. Every oneshot variant does the
//! same waiter work inside the timing: it makes a `tokio::sync::oneshot` channel, drops the
//! receiver at once (as if the caller gave up; this keeps no receivers alive, the same for every
//! variant), and sends on the matched sender, which fails because its receiver is gone. The ids of live requests are kept in a `VecDeque`,
//! one push and one pop per iteration, also the same for every variant. `floor_waiter_only` does
//! that waiter and queue work with no table at all (its queue holds the senders themselves): the
//! floor under every variant, so a variant's time minus the floor is its table's own cost.
//!
//! `mcpwire_cell` is the waiter the peer itself uses: no channel, but a cell in the request's
//! slot holding the caller's waker and then its outcome. One iteration registers a cell (with a
//! waker), answers the oldest request in place (writes its outcome, takes and wakes its waker)
//! and collects it (frees the slot), as a response and the caller's next poll do. Its waker is
//! `Waker::noop()`, so waking costs nothing here; the oneshot variants' `send` to a dropped
//! receiver wakes nothing either.
//!
//! The global allocator is mimalloc (as in the other benches and the binary). Allocations per
//! round trip are counted outside the timing and printed as `allocs <function>/<N> <allocs/op>`.

mod common;

use std::collections::{HashMap, VecDeque};
use std::hint::black_box;
use std::sync::atomic::Ordering;
use std::task::Waker;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcpwire::Id;
use mcpwire::mux::Outbound;
use tokio::sync::oneshot;

use common::{ALLOCATIONS, COUNTING};

/// Allocations per call of `round_trip`, counted over 1,000 calls outside the timing.
fn allocs_per_op(name: &str, n: usize, mut round_trip: impl FnMut()) {
    const CALLS: u64 = 1_000;
    ALLOCATIONS.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    for _ in 0..CALLS {
        round_trip();
    }
    COUNTING.store(false, Ordering::Relaxed);
    let per = ALLOCATIONS.load(Ordering::Relaxed) as f64 / CALLS as f64;
    println!("allocs {name}/{n} {per:.2}");
}

type Waiter = oneshot::Sender<u64>;

/// A sender whose receiver is already dropped, made the same way by every variant.
fn waiter() -> Waiter {
    let (tx, rx) = oneshot::channel();
    drop(rx);
    tx
}

/// `Outbound` with `N` requests in flight, each registered with `deadline`.
struct OutboundState {
    table: Outbound<Waiter>,
    ids: VecDeque<u64>,
    deadline: Option<Instant>,
}

impl OutboundState {
    fn new(n: usize, deadline: Option<Instant>) -> Self {
        // Room for the one extra request between register and answer.
        let mut table = Outbound::new(n + 1);
        let ids = (0..n).map(|_| table.register(waiter(), deadline).unwrap()).collect();
        Self { table, ids, deadline }
    }

    fn round_trip(&mut self) {
        let id = self.table.register(waiter(), self.deadline).unwrap();
        self.ids.push_back(id);
        let oldest = self.ids.pop_front().unwrap();
        self.table.answer(Id::Num(oldest as i64)).unwrap();
        let tx = self.table.collect(oldest).unwrap();
        let _ = black_box(tx.send(1));
    }
}

/// The peer's waiter: a cell in the slot, answered in place and collected by its caller.
#[derive(Default)]
struct Cell {
    waker: Option<Waker>,
    outcome: Option<u64>,
}

struct CellState {
    table: Outbound<Cell>,
    ids: VecDeque<u64>,
}

impl CellState {
    fn new(n: usize) -> Self {
        let mut table = Outbound::new(n + 1);
        let ids = (0..n).map(|_| table.register(Cell::default(), None).unwrap()).collect();
        Self { table, ids }
    }

    fn round_trip(&mut self) {
        let cell = Cell { waker: Some(Waker::noop().clone()), outcome: None };
        let id = self.table.register(cell, None).unwrap();
        self.ids.push_back(id);
        let oldest = self.ids.pop_front().unwrap();
        let cell = self.table.answer(Id::Num(oldest as i64)).unwrap();
        cell.outcome = Some(1);
        if let Some(w) = cell.waker.take() {
            w.wake();
        }
        let _ = black_box(self.table.collect(oldest).unwrap().outcome);
    }
}

/// The peers' table: a `HashMap` keyed by a counter.
/// The waiter work every variant does, with no table: the floor under all of them.
struct FloorState {
    waiters: VecDeque<Waiter>,
}

impl FloorState {
    fn new(n: usize) -> Self {
        Self { waiters: (0..n).map(|_| waiter()).collect() }
    }

    fn round_trip(&mut self) {
        self.waiters.push_back(waiter());
        let tx = self.waiters.pop_front().unwrap();
        let _ = black_box(tx.send(1));
    }
}

struct HashMapState {
    table: HashMap<u64, Waiter>,
    ids: VecDeque<u64>,
    next: u64,
}

impl HashMapState {
    fn new(n: usize) -> Self {
        let mut state = Self { table: HashMap::new(), ids: VecDeque::new(), next: 0 };
        for _ in 0..n {
            let id = state.insert();
            state.ids.push_back(id);
        }
        state
    }

    fn insert(&mut self) -> u64 {
        self.next += 1;
        self.table.insert(self.next, waiter());
        self.next
    }

    fn round_trip(&mut self) {
        let id = self.insert();
        self.ids.push_back(id);
        let oldest = self.ids.pop_front().unwrap();
        let tx = self.table.remove(&oldest).unwrap();
        let _ = black_box(tx.send(1));
    }
}

fn register_complete(c: &mut Criterion) {
    let mut group = c.benchmark_group("mux_register_complete");
    group.throughput(Throughput::Elements(1));
    eprintln!(
        "Outbound::<oneshot::Sender<u64>>::entry_bytes() = {}",
        Outbound::<Waiter>::entry_bytes()
    );
    let now = Instant::now();
    for n in [1_000usize, 10_000, 100_000] {
        let mut state = OutboundState::new(n, None);
        allocs_per_op("mcpwire_outbound", n, || state.round_trip());
        group.bench_function(BenchmarkId::new("mcpwire_outbound", n), |b| {
            b.iter(|| state.round_trip());
        });
        assert_eq!(state.table.len(), n, "the table stayed at N");
        drop(state);

        let mut state = OutboundState::new(n, Some(now + Duration::from_secs(60)));
        allocs_per_op("mcpwire_outbound_deadline", n, || state.round_trip());
        group.bench_function(BenchmarkId::new("mcpwire_outbound_deadline", n), |b| {
            b.iter(|| state.round_trip());
        });
        assert_eq!(state.table.len(), n, "the table stayed at N");
        drop(state);

        let mut state = CellState::new(n);
        allocs_per_op("mcpwire_cell", n, || state.round_trip());
        group.bench_function(BenchmarkId::new("mcpwire_cell", n), |b| {
            b.iter(|| state.round_trip());
        });
        assert_eq!(state.table.len(), n, "the table stayed at N");
        drop(state);

        let mut floor = FloorState::new(n);
        allocs_per_op("floor_waiter_only", n, || floor.round_trip());
        group.bench_function(BenchmarkId::new("floor_waiter_only", n), |b| {
            b.iter(|| floor.round_trip());
        });
        drop(floor);

        let mut state = HashMapState::new(n);
        allocs_per_op("hashmap_oneshot", n, || state.round_trip());
        group.bench_function(BenchmarkId::new("hashmap_oneshot", n), |b| {
            b.iter(|| state.round_trip());
        });
        assert_eq!(state.table.len(), n, "the table stayed at N");
    }
    group.finish();
}

criterion_group!(benches, register_complete);
criterion_main!(benches);
