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

/// The real session's download, before it is linked: nothing is fetched,
/// and the engine is told to try again later.
#[tokio::test]
async fn a_download_without_a_connection_is_worth_another_try() {
    use relay::channel::whatsapp::Link;
    use relay::channel::whatsapp::inbound::MediaRef;
    use relay::media::intake::FetchError;
    use whatsapp_rust::download::MediaType;

    let dir = tempfile::tempdir().unwrap();
    let (session, _events) = Session::start(dir.path().join("whatsapp-auth"), Endpoint::default());
    let media = MediaRef {
        direct_path: Some("/v/t62.7118-24/1_2_3.enc".into()),
        media_key: Some(vec![1; 32]),
        file_sha256: Some(vec![2; 32]),
        file_enc_sha256: Some(vec![3; 32]),
        file_length: Some(10),
        media_type: MediaType::Image,
    };
    let outcome = Link::download(session.as_ref(), &media, 1_000).await;
    assert_eq!(outcome, Err(FetchError::retryable("WhatsApp is not connected")));
    session.shutdown().await;
}
