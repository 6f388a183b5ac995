use super::*;

#[tokio::test]
async fn a_freed_slot_goes_to_each_waiting_client_in_turn() {
    let a = Admission::new(1);
    let held = a.acquire(0).await;
    // Client 1 queues three requests, then client 2 one: 2's comes second, not fourth.
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for (client, n) in [(1, 0), (1, 1), (1, 2), (2, 0)] {
        let (a, order) = (a.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let slot = a.acquire(client).await;
            order.lock().unwrap().push((client, n));
            drop(slot);
        }));
        tokio::task::yield_now().await;
    }
    assert_eq!(a.waiting(), 4);
    drop(held);
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), [(1, 0), (2, 0), (1, 1), (1, 2)]);
    assert_eq!(a.waiting(), 0);
    assert_eq!(a.lock().free, 1);
}

#[tokio::test]
async fn a_waiter_that_gives_up_loses_no_slot() {
    let a = Admission::new(1);
    let held = a.acquire(0).await;
    let gone = tokio::spawn({
        let a = a.clone();
        async move { a.acquire(1).await }
    });
    tokio::task::yield_now().await;
    gone.abort();
    let _ = gone.await;
    drop(held);
    assert_eq!(a.lock().free, 1);
    let _again = a.acquire(2).await;
    assert_eq!(a.lock().free, 0);
}
