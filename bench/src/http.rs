//! A minimal HTTP/1.1 client over one kept-alive connection, so that what
//! is timed is the daemon's work and not connection setup or a client
//! library's.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;

pub struct Http {
    stream: BufReader<TcpStream>,
    port: u16,
    token: String,
}

impl Http {
    pub fn connect(port: u16, token: &str) -> io::Result<Http> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        Ok(Http { stream: BufReader::new(stream), port, token: token.to_string() })
    }

    /// Sends one request and reads the whole answer: (status, body).
    pub fn request(&mut self, method: &str, path: &str, body: Option<&str>) -> io::Result<(u16, String)> {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n",
            self.port, self.token
        );
        match body {
            Some(body) => {
                head.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len()));
                head.push_str(body);
            }
            None => head.push_str("Content-Length: 0\r\n\r\n"),
        }
        self.stream.get_mut().write_all(head.as_bytes())?;
        self.read_response()
    }

    /// A request that must answer `expect`; anything else is the bench's error.
    pub fn expect(&mut self, method: &str, path: &str, body: Option<&str>, expect: u16) -> String {
        let (status, answer) = self.request(method, path, body).unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        assert_eq!(status, expect, "{method} {path}: {answer}");
        answer
    }

    fn read_response(&mut self) -> io::Result<(u16, String)> {
        let mut line = String::new();
        self.stream.read_line(&mut line)?;
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| io::Error::other(format!("not an HTTP status line: {line:?}")))?;
        let (mut length, mut chunked) = (0usize, false);
        loop {
            line.clear();
            self.stream.read_line(&mut line)?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap_or((header, ""));
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().map_err(io::Error::other)?;
            } else if name.eq_ignore_ascii_case("transfer-encoding") && value.contains("chunked") {
                chunked = true;
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                self.stream.read_line(&mut line)?;
                let size = usize::from_str_radix(line.trim(), 16).map_err(io::Error::other)?;
                let mut chunk = vec![0; size + 2];
                self.stream.read_exact(&mut chunk)?;
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else {
            body.resize(length, 0);
            self.stream.read_exact(&mut body)?;
        }
        Ok((status, String::from_utf8_lossy(&body).into_owned()))
    }
}
