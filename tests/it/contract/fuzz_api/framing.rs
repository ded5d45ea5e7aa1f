//! Malformed HTTP framing sent over TCP to the real binary, which must keep
//! serving and log no panic.

use super::*;

// ---------------------------------------------------------------------------
// Malformed framing against the real binary
// ---------------------------------------------------------------------------

/// What the client does after writing its bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Then {
    /// Reads the answer (the request says `Connection: close`, or is so
    /// broken that the server closes).
    Read,
    /// Closes its side, then reads: the server sees a request cut short.
    HalfClose,
    /// Goes away without reading.
    Drop,
}

pub(super) struct Raw {
    pub(super) name: String,
    /// Written in this many pieces (one write each), as a slow client would.
    pub(super) pieces: Vec<Vec<u8>>,
    pub(super) then: Then,
}

impl Raw {
    fn new(name: impl Into<String>, bytes: impl Into<Vec<u8>>, then: Then) -> Raw {
        Raw { name: name.into(), pieces: vec![bytes.into()], then }
    }
}

/// Hand-written framing attacks on an authorised base request.
pub(super) fn framing_cases(port: u16, token: &str) -> Vec<Raw> {
    let host = format!("Host: 127.0.0.1:{port}\r\n");
    let auth = format!("Authorization: Bearer {token}\r\n");
    let base = format!("{host}{auth}Connection: close\r\n");
    let json = "Content-Type: application/json\r\n";
    let create = r#"{"objective":"o","target_contact":"+56912345678","todos":[{"text":"t"}]}"#;
    let mut cases = vec![
        // Request lines.
        Raw::new("empty lines", "\r\n\r\n\r\n", Then::HalfClose),
        Raw::new("garbage line", "GARBAGE\r\n\r\n", Then::Read),
        Raw::new("method only", "GET\r\n\r\n", Then::Read),
        Raw::new("HTTP/0.9", "GET /health\r\n\r\n", Then::Read),
        Raw::new("HTTP/9.9", format!("GET /health HTTP/9.9\r\n{base}\r\n"), Then::Read),
        Raw::new("HTTP/1.0", format!("GET /health HTTP/1.0\r\n{host}\r\n"), Then::Read),
        Raw::new("extra token", format!("GET /health HTTP/1.1 extra\r\n{base}\r\n"), Then::Read),
        Raw::new("double spaces", format!("GET  /health  HTTP/1.1\r\n{base}\r\n"), Then::Read),
        Raw::new("NUL in method", format!("G\0T /health HTTP/1.1\r\n{base}\r\n"), Then::Read),
        Raw::new("DEL in path", format!("GET /\x7f HTTP/1.1\r\n{base}\r\n"), Then::Read),
        Raw::new("lowercase version", format!("get /health http/1.1\r\n{base}\r\n"), Then::Read),
        Raw::new("absolute form", format!("GET http://evil.example/instances HTTP/1.1\r\n{base}\r\n"), Then::Read),
        Raw::new("authority form", format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n{base}\r\n"), Then::Read),
        Raw::new("asterisk form", format!("OPTIONS * HTTP/1.1\r\n{base}\r\n"), Then::Read),
        Raw::new("h2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", Then::HalfClose),
        Raw::new("TLS hello", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".to_vec(), Then::HalfClose),
        Raw::new("100 KiB path", format!("GET /{} HTTP/1.1\r\n{base}\r\n", "a".repeat(100 * 1024)), Then::Read),
        Raw::new("long method", format!("{} / HTTP/1.1\r\n{base}\r\n", "A".repeat(10_000)), Then::Read),
        // Header bytes.
        Raw::new("NUL in value", format!("GET /status HTTP/1.1\r\n{base}X: a\0b\r\n\r\n"), Then::Read),
        Raw::new("no colon", format!("GET /status HTTP/1.1\r\n{base}NoColon\r\n\r\n"), Then::Read),
        Raw::new("space in name", format!("GET /status HTTP/1.1\r\n{base}Bad Name: x\r\n\r\n"), Then::Read),
        Raw::new("space before colon", format!("GET /status HTTP/1.1\r\n{base}Host : x\r\n\r\n"), Then::Read),
        Raw::new("obs-fold", format!("GET /status HTTP/1.1\r\n{base}X: a\r\n b\r\n\r\n"), Then::Read),
        Raw::new("bare LF", format!("GET /status HTTP/1.1\n{}\n", base.replace("\r\n", "\n")), Then::Read),
        Raw::new("bare CR", format!("GET /status HTTP/1.1\r{}\r", base.replace("\r\n", "\r")), Then::HalfClose),
        Raw::new("empty name", format!("GET /status HTTP/1.1\r\n{base}: x\r\n\r\n"), Then::Read),
        Raw::new("two hosts", format!("GET /status HTTP/1.1\r\nHost: evil.com\r\n{base}\r\n"), Then::Read),
        Raw::new("no host", format!("GET /status HTTP/1.1\r\n{auth}Connection: close\r\n\r\n"), Then::Read),
        Raw::new(
            "host with userinfo",
            format!("GET /status HTTP/1.1\r\nHost: a@127.0.0.1\r\n{auth}Connection: close\r\n\r\n"),
            Then::Read,
        ),
        Raw::new(
            "high bytes",
            {
                let mut r = format!("GET /status HTTP/1.1\r\n{base}X: ").into_bytes();
                r.extend_from_slice(b"\xff\xfe\x80\r\nAuthorization: Bearer \xff\r\n\r\n");
                r
            },
            Then::Read,
        ),
        Raw::new(
            "1000 headers",
            format!("GET /status HTTP/1.1\r\n{base}{}\r\n", "X-A: b\r\n".repeat(1000)),
            Then::Read,
        ),
        Raw::new("101 headers", format!("GET /status HTTP/1.1\r\n{base}{}\r\n", "X-A: b\r\n".repeat(101)), Then::Read),
        Raw::new(
            "20000 headers",
            format!("GET /status HTTP/1.1\r\n{base}{}\r\n", "X: b\r\n".repeat(20_000)),
            Then::Read,
        ),
        Raw::new(
            "1 MiB header",
            format!("GET /status HTTP/1.1\r\n{base}X: {}\r\n\r\n", "v".repeat(1 << 20)),
            Then::Read,
        ),
        // Body framing.
        Raw::new(
            "CL and TE",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{create}\r\n0\r\n\r\n",
                create.len()
            ),
            Then::Read,
        ),
        Raw::new(
            "TE and CL",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\nContent-Length: 500\r\n\r\n{:x}\r\n{create}\r\n0\r\n\r\n",
                create.len()
            ),
            Then::Read,
        ),
        Raw::new(
            "two CLs",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{{}}"),
            Then::Read,
        ),
        Raw::new(
            "CL list",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: 2, 2\r\n\r\n{{}}"),
            Then::Read,
        ),
        Raw::new(
            "CL words",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: abc\r\n\r\n{{}}"),
            Then::Read,
        ),
        Raw::new(
            "CL negative",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: -1\r\n\r\n{{}}"),
            Then::Read,
        ),
        Raw::new(
            "CL plus",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: +2\r\n\r\n{{}}"),
            Then::Read,
        ),
        Raw::new(
            "CL overflow",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: 18446744073709551616\r\n\r\n{{}}"),
            Then::Read,
        ),
        Raw::new(
            "CL huge",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: 18446744073709551615\r\n\r\n{{}}"),
            Then::HalfClose,
        ),
        Raw::new(
            "TE gzip",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: gzip\r\n\r\n{{}}"),
            Then::Read,
        ),
        Raw::new(
            "TE chunked, gzip",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked, gzip\r\n\r\n2\r\n{{}}\r\n0\r\n\r\n"
            ),
            Then::Read,
        ),
        Raw::new(
            "TE twice",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{{}}\r\n0\r\n\r\n"
            ),
            Then::Read,
        ),
        Raw::new(
            "TE xchunked",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: xchunked\r\n\r\n2\r\n{{}}\r\n0\r\n\r\n"
            ),
            Then::Read,
        ),
        Raw::new(
            "TE on GET",
            format!("GET /status HTTP/1.1\r\n{base}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
            Then::Read,
        ),
        Raw::new(
            "bad chunk size",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\n\r\nzz\r\n{{}}\r\n0\r\n\r\n"
            ),
            Then::Read,
        ),
        Raw::new(
            "chunk size overflow",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n{{}}\r\n0\r\n\r\n"
            ),
            Then::HalfClose,
        ),
        Raw::new(
            "chunk larger than sent",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\n\r\n100\r\n{{}}"),
            Then::HalfClose,
        ),
        Raw::new(
            "chunk extension",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\n\r\n2;{}\r\n{{}}\r\n0\r\n\r\n",
                "x=y;".repeat(5000)
            ),
            Then::Read,
        ),
        Raw::new(
            "no last chunk",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\n\r\n2\r\n{{}}\r\n"),
            Then::HalfClose,
        ),
        Raw::new(
            "trailers",
            format!(
                "POST /instances HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\n\r\n2\r\n{{}}\r\n0\r\nX-Trailer: \0\r\n\r\n"
            ),
            Then::Read,
        ),
        Raw::new(
            "chunked 70 KiB",
            {
                let mut r =
                    format!("POST /instances/abcd/send HTTP/1.1\r\n{base}{json}Transfer-Encoding: chunked\r\n\r\n");
                for _ in 0..70 {
                    r.push_str(&format!("400\r\n{}\r\n", "x".repeat(1024)));
                }
                r.push_str("0\r\n\r\n");
                r
            },
            Then::Read,
        ),
        Raw::new(
            "truncated body",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: 100\r\n\r\n{{\"objective\""),
            Then::HalfClose,
        ),
        Raw::new(
            "truncated body, gone",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: 100\r\n\r\n{{\"objective\""),
            Then::Drop,
        ),
        Raw::new(
            "body longer than CL",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: 2\r\n\r\n{{}}GARBAGE / HTTP/1.1\r\n\r\n"),
            Then::Read,
        ),
        Raw::new(
            "expect continue, gone",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Expect: 100-continue\r\nContent-Length: 60000\r\n\r\n"),
            Then::Drop,
        ),
        Raw::new(
            "expect continue, cut",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Expect: 100-continue\r\nContent-Length: 60000\r\n\r\n"),
            Then::HalfClose,
        ),
        Raw::new(
            "expect junk",
            format!("POST /instances HTTP/1.1\r\n{base}{json}Expect: 999-nope\r\nContent-Length: 2\r\n\r\n{{}}"),
            Then::Read,
        ),
        Raw::new(
            "h2c upgrade",
            format!(
                "GET /status HTTP/1.1\r\n{host}{auth}Connection: Upgrade, HTTP2-Settings, close\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"
            ),
            Then::Read,
        ),
        Raw::new(
            "websocket upgrade",
            format!(
                "GET /status HTTP/1.1\r\n{host}{auth}Connection: Upgrade, close\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ),
            Then::Read,
        ),
        // Slow or vanishing clients.
        Raw::new("partial line, gone", "GET /hea", Then::Drop),
        Raw::new("partial headers, gone", format!("GET /health HTTP/1.1\r\n{host}X-Slow: "), Then::Drop),
        Raw::new("partial headers, cut", format!("GET /health HTTP/1.1\r\n{host}X-Slow: "), Then::HalfClose),
        Raw::new("nothing, cut", "", Then::HalfClose),
        Raw::new("nothing, gone", "", Then::Drop),
        // Pipelining: a good request, then garbage on the same connection.
        Raw::new(
            "pipelined",
            format!("GET /health HTTP/1.1\r\n{host}\r\nGET /status HTTP/1.1\r\n{base}\r\n"),
            Then::Read,
        ),
        Raw::new("pipelined garbage", format!("GET /health HTTP/1.1\r\n{host}\r\n\0\0\0GARBAGE\r\n\r\n"), Then::Read),
    ];
    // Byte by byte, one write each: a slow but complete client is served.
    let slow = format!("GET /health HTTP/1.1\r\n{host}Connection: close\r\n\r\n");
    cases.push(Raw { name: "byte by byte".into(), pieces: slow.bytes().map(|b| vec![b]).collect(), then: Then::Read });
    // Deep and odd JSON through real framing.
    for (name, body) in [
        ("deep nesting", "[".repeat(10_000)),
        ("lone surrogate", r#"{"message":"\ud800"}"#.to_string()),
        ("huge number", r#"{"objective":"o","target_contact":"+56912345678","todos":[{"text":"t"}],"heartbeat_config":{"interval_ms":18446744073709551616}}"#.to_string()),
        ("valid create", create.to_string()),
    ] {
        let request = format!("POST /instances HTTP/1.1\r\n{base}{json}Content-Length: {}\r\n\r\n{body}", body.len());
        cases.push(Raw::new(name, request, Then::Read));
    }
    cases
}

/// A tiny deterministic generator (xorshift64*), so the TCP part needs no
/// proptest machinery and runs the same every time.
pub(super) struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Valid requests with random bytes flipped, inserted, removed or cut off.
pub(super) fn mutated_cases(port: u16, token: &str, count: usize, seed: u64) -> Vec<Raw> {
    let host = format!("Host: 127.0.0.1:{port}\r\n");
    let auth = format!("Authorization: Bearer {token}\r\n");
    let body = r#"{"message":"hello"}"#;
    let templates = [
        format!("GET /health HTTP/1.1\r\n{host}Connection: close\r\n\r\n"),
        format!("GET /instances?state=ACTIVE HTTP/1.1\r\n{host}{auth}Connection: close\r\n\r\n"),
        format!(
            "POST /instances/abcd/send HTTP/1.1\r\n{host}{auth}Connection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
        format!(
            "POST /sandbox/messages HTTP/1.1\r\n{host}{auth}Connection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
            body.len()
        ),
    ];
    const NASTY: &[u8] = b"\0\r\n \t:;,\"\\%/?#\x7f\x80\xff0123456789abcdefABCDEF-+";
    let mut rng = Rng(seed | 1);
    (0..count)
        .map(|n| {
            let mut bytes = templates[rng.below(templates.len())].clone().into_bytes();
            for _ in 0..1 + rng.below(4) {
                if bytes.is_empty() {
                    break;
                }
                let at = rng.below(bytes.len());
                let byte = NASTY[rng.below(NASTY.len())];
                match rng.below(5) {
                    0 | 1 => bytes[at] = byte,
                    2 => bytes.insert(at, byte),
                    3 => {
                        bytes.remove(at);
                    }
                    _ => bytes.truncate(at.max(1)),
                }
            }
            // Mutations can break `Connection: close`; closing our side
            // makes the server finish either way.
            Raw::new(format!("mutation {n}"), bytes, Then::HalfClose)
        })
        .collect()
}

/// What a raw exchange got back.
pub(super) enum Outcome {
    /// One or more answers, all within the contract.
    Answered,
    /// The server closed without answering (fine for garbage).
    Closed,
    /// No answer and no close within the read timeout.
    TimedOut,
}

/// Sends one raw exchange and checks what came back, waiting no longer than
/// the read timeout for an answer.
pub(super) fn exchange(port: u16, raw: &Raw) -> Result<Outcome, String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("cannot connect: {e}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    stream.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    for piece in &raw.pieces {
        // The server may answer and close before reading everything.
        if stream.write_all(piece).is_err() {
            break;
        }
    }
    match raw.then {
        Then::Drop => return Ok(Outcome::Closed),
        Then::HalfClose => {
            let _ = stream.shutdown(Shutdown::Write);
        }
        Then::Read => {}
    }
    let mut response = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => response.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                if response.is_empty() {
                    return Ok(Outcome::TimedOut);
                }
                break;
            }
            // Reset by the server, after its answer or with none.
            Err(_) => break,
        }
    }
    if response.is_empty() {
        return Ok(Outcome::Closed);
    }
    // Hyper also speaks HTTP/2 with prior knowledge (reqwest turns on
    // hyper-util's http2): it answers the preface with a SETTINGS frame.
    if raw.pieces[0].starts_with(b"PRI * HTTP/2.0") {
        return match response.get(3) {
            Some(4) => Ok(Outcome::Answered),
            _ => Err(format!("not an HTTP/2 SETTINGS frame: {}", response.escape_ascii())),
        };
    }
    check_raw(&response)?;
    Ok(Outcome::Answered)
}

/// Every answer in `response` (several when pipelined) is below 500, and an
/// error with a body has an `ApiErrorResponse` body. (Hyper's own answers to
/// unparsable requests have none.)
pub(super) fn check_raw(response: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(response);
    let mut rest = text.as_ref();
    if !rest.starts_with("HTTP/1.") {
        return Err(format!("not an HTTP answer: {}", response.escape_ascii()));
    }
    while let Some(at) = rest.find("HTTP/1.") {
        let answer = &rest[at..];
        let status: u16 =
            answer.get(9..12).and_then(|s| s.parse().ok()).ok_or_else(|| format!("bad status line: {answer}"))?;
        if status >= 500 {
            return Err(format!("answered {status}: {answer}"));
        }
        let (head, after) = answer.split_once("\r\n\r\n").unwrap_or((answer, ""));
        let length = head
            .lines()
            .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").and_then(|v| v.trim().parse().ok()))
            .unwrap_or(0usize);
        let body = &after[..length.min(after.len())];
        if status >= 400 && length > 0 {
            let error: Value = serde_json::from_str(body)
                .map_err(|e| format!("{status} with a body that is not JSON ({e}): {body}"))?;
            if !(error["error"].is_string() && error["code"].is_string()) {
                return Err(format!("{status} without `error` and `code`: {body}"));
            }
        }
        rest = &after[length.min(after.len())..];
    }
    Ok(())
}

/// Malformed HTTP framing over real TCP: whatever arrives, the daemon
/// answers below 500 or closes, keeps serving, and logs no panic.
#[test]
pub(super) fn malformed_http_framing_leaves_the_daemon_serving() {
    let relay = Relay::started();
    let token = relay.token();
    let mut cases = framing_cases(relay.port, &token);
    cases.extend(mutated_cases(relay.port, &token, 300, env_or("RELAY_FUZZ_SEED", DEFAULT_SEED)));
    let total = cases.len();
    let started = Instant::now();
    let (answered, timed_out, failures) = (AtomicUsize::new(0), Mutex::new(Vec::new()), Mutex::new(Vec::new()));
    let slow = Mutex::new(Vec::new());
    // A few clients at once, so one slow exchange does not hold up the rest.
    std::thread::scope(|scope| {
        for chunk in cases.chunks(total.div_ceil(6)) {
            let (answered, timed_out, failures, slow, port) = (&answered, &timed_out, &failures, &slow, relay.port);
            scope.spawn(move || {
                for raw in chunk {
                    let began = Instant::now();
                    let outcome = exchange(port, raw);
                    if began.elapsed() > Duration::from_secs(1) {
                        slow.lock().unwrap().push(format!("{} ({:.1?})", raw.name, began.elapsed()));
                    }
                    match outcome {
                        Ok(Outcome::Answered) => {
                            answered.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(Outcome::Closed) => {}
                        Ok(Outcome::TimedOut) => timed_out.lock().unwrap().push(raw.name.clone()),
                        Err(why) => failures.lock().unwrap().push(format!("{}: {why}", raw.name)),
                    }
                }
            });
        }
    });
    let (timed_out, failures) = (timed_out.into_inner().unwrap(), failures.into_inner().unwrap());
    eprintln!(
        "fuzz_api TCP: {total} raw exchanges in {:.1?}, {} answered, {} timed out {timed_out:?}, slow {:?}",
        started.elapsed(),
        answered.load(Ordering::Relaxed),
        timed_out.len(),
        slow.lock().unwrap(),
    );
    assert!(failures.is_empty(), "{} exchanges broke the contract:\n{}", failures.len(), failures.join("\n"));

    let (status, body) = relay.http("GET", "/health", &[], None);
    assert_eq!(status, 200, "{body}");
    relay.ok(&["status"]);
    for file in ["relay.log", "daemon.stderr"] {
        let text = std::fs::read_to_string(relay.path().join(file)).unwrap_or_default();
        assert!(!text.contains("panicked"), "{file} shows a panic:\n{text}");
    }
    assert!(timed_out.is_empty(), "no answer and no close within 5 s: {timed_out:?}");
}
