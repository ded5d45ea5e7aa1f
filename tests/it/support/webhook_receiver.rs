//! A webhook receiver for the tests: a plain HTTP server on a free port
//! that records each request relay POSTs.

/// One request the test receiver took: its headers (lowercased names) and body.
pub struct Received {
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str()).unwrap_or("")
    }
}

/// A webhook receiver on a free port: answers 500 to the first `failures`
/// requests, and before answering the next one waits for `go`.
pub fn receiver(
    failures: usize,
    go: std::sync::mpsc::Receiver<()>,
) -> (u16, std::sync::mpsc::Receiver<(u16, Received)>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let mut stream = stream.unwrap();
            let mut raw = Vec::new();
            let mut buf = [0u8; 4096];
            let (head_end, length) = loop {
                let read = stream.read(&mut buf).unwrap();
                assert!(read > 0, "the request was cut");
                raw.extend_from_slice(&buf[..read]);
                if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&raw[..end]).to_lowercase();
                    let length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse::<usize>().unwrap());
                    break (end + 4, length);
                }
            };
            while raw.len() < head_end + length {
                let read = stream.read(&mut buf).unwrap();
                raw.extend_from_slice(&buf[..read]);
            }
            let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
            let headers = head
                .lines()
                .skip(1)
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_lowercase(), v.trim().to_string()))
                .collect();
            let received = Received { headers, body: raw[head_end..head_end + length].to_vec() };
            let status = if n < failures { 500 } else { 200 };
            if n == failures {
                go.recv().unwrap();
            }
            let _ = tx.send((status, received));
            let _ = write!(stream, "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    (port, rx)
}
