//! The real whatsapp-rust session against a local socket that accepts and
//! drops every connection: it dials again with backoff (not in a tight
//! loop), counts its failures, and shuts down promptly. No network needed.

use std::time::{Duration, Instant};

use relay::channel::whatsapp::session::{Endpoint, Session};
use relay::channel::whatsapp::state::LinkState;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_is_dialled_again_with_backoff() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (dialled, mut dials) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            drop(socket);
            let _ = dialled.send(Instant::now());
        }
    });

    let dir = tempfile::tempdir().unwrap();
    let endpoint = Endpoint {
        ws_url: Some(format!("ws://{addr}/ws/chat")),
        // A fixed version: no fetch from web.whatsapp.com.
        version: Some((2, 3000, 1_000_000_000)),
    };
    let (session, _events) = Session::start(dir.path().join("whatsapp-auth"), endpoint);
    assert_eq!(*session.state().borrow(), LinkState::NotLinked, "no session: nothing dials");

    // Linking needs a connection: the session dials, is dropped, dials again.
    let _pairing = session.pair(None, false);
    let mut times = Vec::new();
    for _ in 0..4 {
        let at = tokio::time::timeout(Duration::from_secs(30), dials.recv()).await.expect("dialled again").unwrap();
        times.push(at);
    }
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|g| *g >= Duration::from_millis(500)), "backoff between dials: {gaps:?}");
    assert!(session.failed_dials() >= 2, "failures counted: {}", session.failed_dials());
    assert_eq!(*session.state().borrow(), LinkState::Pairing);

    let auth = dir.path().join("whatsapp-auth");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&auth).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o700, "the session's keys are owner-only");

    let stopping = Instant::now();
    session.shutdown().await;
    assert!(stopping.elapsed() < Duration::from_secs(10), "shutdown took {:?}", stopping.elapsed());
}
