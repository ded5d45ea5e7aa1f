//! The daemon's HTTP connections, bounded, so that months of clients (or one
//! careless script) cannot pile them up: at most `http.max_connections` at
//! once, a connection past that refused at once with a 503; a request's
//! headers must arrive within `http.header_timeout`, which also closes a
//! kept-alive connection that has asked nothing for as long; and a request
//! body that stops arriving for `http.body_timeout` is cut off. A long poll
//! (`wait`, `events --follow`) is a request under way, not an idle
//! connection: it is never timed out here, but it holds its slot. A
//! connection is closed lingering, so that an answer given before the
//! request's body was read reaches a client still sending it.
//!
//! axum's own `serve` sets none of these (hyper's header timeout needs a
//! timer it does not give), hence this loop.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::config::HttpSettings;

/// Serves `router` on `listener` until `stop`, then lets the requests under
/// way finish (the long polls end on the same signal) and returns once every
/// connection is closed.
pub async fn serve(listener: TcpListener, router: Router, limits: HttpSettings, stop: CancellationToken) {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let closing = CancellationToken::new();
    loop {
        let stream = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before
                    // it was taken: the listener is fine; give the others a
                    // moment to close rather than spin.
                    tracing::debug!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            refuse(stream, limits.max_connections);
            continue;
        };
        let (router, closing) = (router.clone(), closing.clone());
        tokio::spawn(async move {
            serve_connection(stream, router, limits, closing).await;
            drop(slot);
        });
    }
    closing.cancel();
    // Each connection gives its slot back when it is done: all of them back
    // is every connection closed.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
}

async fn serve_connection(stream: TcpStream, router: Router, limits: HttpSettings, closing: CancellationToken) {
    let _ = stream.set_nodelay(true);
    // hyper's clock starts once it knows the protocol; until then, ours.
    let whole_connection_bounded = match tokio::time::timeout(limits.header_timeout, first_bytes(&stream)).await {
        Ok(FirstBytes::Http1OrPreface) => false,
        // Part of HTTP/2's preface and no more yet: hyper-util waits for
        // the rest with no clock (and sees the client close, which a peek
        // cannot). A real HTTP/2 client sends the preface whole, so such a
        // connection gets `header_timeout` in all.
        Ok(FirstBytes::PartOfPreface) => true,
        Ok(FirstBytes::Closed) | Err(_) => return,
    };
    let body_timeout = limits.body_timeout;
    let service = router.map_request(move |request: axum::http::Request<Incoming>| {
        request.map(|body| Body::new(TimedBody::new(body, body_timeout)))
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    builder.http2().timer(TokioTimer::new());
    let (stream, given_back) = Lent::new(stream);
    let connection = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
    let served = async {
        tokio::pin!(connection);
        tokio::select! {
            served = connection.as_mut() => {
                if let Err(e) = served {
                    tracing::trace!(error = %e, "connection ended");
                }
            }
            _ = closing.cancelled() => {
                connection.as_mut().graceful_shutdown();
                let _ = connection.await;
            }
        }
    };
    match whole_connection_bounded {
        true => drop(tokio::time::timeout(limits.header_timeout, served).await),
        false => served.await,
    }
    if let Ok(stream) = given_back.await {
        tokio::select! {
            () = linger(stream) => {}
            () = closing.cancelled() => {}
        }
    }
}

/// How long a connection is held open after its last answer, for the
/// client to read it (see [`linger`]).
const LINGER: Duration = Duration::from_secs(5);

/// Closes a connection the way that lets the client read its answer: the
/// end of the answer first (FIN), then whatever the client still sends is
/// read and dropped until it closes, for [`LINGER`] at most. An answer
/// given before a request's body was read (a file over `media.max_bytes`,
/// refused by its Content-Length) leaves the client still writing; closing
/// at once, with its bytes unread, resets the connection, and the client
/// sees a broken pipe instead of the answer it was sent.
async fn linger(mut stream: TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = stream.shutdown().await;
    // In the task's own state, not a heap buffer per connection closed.
    let mut sink = [0u8; 8 * 1024];
    let drain = async { while let Ok(1..) = stream.read(&mut sink).await {} };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

/// A connection's socket lent to hyper, given back when hyper drops it,
/// so that [`linger`] closes it rather than hyper.
struct Lent {
    stream: Option<TcpStream>,
    back: Option<tokio::sync::oneshot::Sender<TcpStream>>,
}

impl Lent {
    fn new(stream: TcpStream) -> (Lent, tokio::sync::oneshot::Receiver<TcpStream>) {
        let (back, given_back) = tokio::sync::oneshot::channel();
        (Lent { stream: Some(stream), back: Some(back) }, given_back)
    }

    fn stream(&mut self) -> Pin<&mut TcpStream> {
        Pin::new(self.stream.as_mut().expect("lent until dropped"))
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if let (Some(stream), Some(back)) = (self.stream.take(), self.back.take()) {
            let _ = back.send(stream);
        }
    }
}

impl tokio::io::AsyncRead for Lent {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        self.stream().poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Lent {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.stream().poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.stream().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.as_ref().is_some_and(|s| s.is_write_vectored())
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.stream().poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.stream().poll_shutdown(cx)
    }
}

/// What a connection's first bytes say.
enum FirstBytes {
    /// Closed before a byte came.
    Closed,
    /// Not HTTP/2's preface (so HTTP/1), or all of it.
    Http1OrPreface,
    /// The start of the preface, and no more yet.
    PartOfPreface,
}

/// Waits for the client's first bytes: hyper-util's reading of them, to
/// tell HTTP/1 from HTTP/2, has no timeout, so a connection that says
/// nothing would otherwise be held for ever.
async fn first_bytes(stream: &TcpStream) -> FirstBytes {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let mut first = [0u8; PREFACE.len()];
    match stream.peek(&mut first).await {
        Ok(0) | Err(_) => FirstBytes::Closed,
        Ok(n) if first[..n] != PREFACE[..n] || n == PREFACE.len() => FirstBytes::Http1OrPreface,
        Ok(_) => FirstBytes::PartOfPreface,
    }
}

/// A connection past the limit: a 503 that says why, written only if the
/// socket takes it now (nothing waits on a client here), then closed.
fn refuse(stream: TcpStream, max: usize) {
    tracing::debug!(max, "too many connections: one refused");
    let body = serde_json::to_string(&crate::api::ApiErrorResponse::new(
        crate::api::ErrorCode::TooManyConnections,
        format!("relay is serving {max} connections, its limit (http.max_connections): close one, or try again"),
    ))
    .expect("an error serialises");
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: \
         close\r\nretry-after: 1\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.try_write(response.as_bytes());
}

/// A request body that fails once no part of it has come for `timeout`:
/// a client that sends its headers and then trickles, or nothing, does not
/// hold a handler (and its buffer) for ever.
struct TimedBody {
    inner: Incoming,
    timeout: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl TimedBody {
    fn new(inner: Incoming, timeout: Duration) -> TimedBody {
        TimedBody { inner, timeout, deadline: Box::pin(tokio::time::sleep(timeout)) }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the request body stopped arriving: nothing came for {0:?}")]
struct BodyTimedOut(Duration);

impl hyper::body::Body for TimedBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.deadline.as_mut().reset(Instant::now() + this.timeout);
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                ready!(this.deadline.as_mut().poll(cx));
                Poll::Ready(Some(Err(BodyTimedOut(this.timeout).into())))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
