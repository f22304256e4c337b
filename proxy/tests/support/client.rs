//! A small HTTP/1.1 client with full control of the socket: requests written byte for
//! byte, responses read head, chunk and body apart.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A request to `localhost`, its body framed by `content-length`.
pub fn raw(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    raw_to(Some("localhost"), method, path, headers, body)
}

/// A request naming `host` in its Host header (none without one).
pub fn raw_to(
    host: Option<&str>,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let mut out = format!("{method} {path} HTTP/1.1\r\nconnection: close\r\n");
    if let Some(host) = host {
        out.push_str(&format!("host: {host}\r\n"));
    }
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        out.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// One connection to a proxy, and what was read from it and not yet parsed.
pub struct Conn {
    pub stream: TcpStream,
    pub buf: Vec<u8>,
}

/// A whole response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {:?}", self.text()))
    }

    /// An OpenAI error body's code, after checking its shape.
    pub fn error_code(&self) -> String {
        let body = self.json();
        let error = &body["error"];
        assert!(error["message"].is_string(), "{body}");
        assert!(error["type"].is_string(), "{body}");
        assert!(error.get("param").is_some(), "{body}");
        error["code"].as_str().unwrap_or_default().to_owned()
    }
}

impl Conn {
    pub fn open(addr: SocketAddr) -> Conn {
        Conn::from(TcpStream::connect(addr).unwrap())
    }

    pub fn from(stream: TcpStream) -> Conn {
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Conn {
            stream,
            buf: Vec::new(),
        }
    }

    /// A connection whose receive window is as small as the kernel allows, so a server
    /// writing to it is soon blocked when it is not read.
    pub fn open_small_window(addr: SocketAddr) -> Conn {
        use nix::sys::socket::{
            AddressFamily, SockFlag, SockType, SockaddrIn, connect, setsockopt, socket, sockopt,
        };
        use std::os::fd::AsRawFd;
        let SocketAddr::V4(v4) = addr else {
            panic!("loopback v4 expected: {addr}")
        };
        let fd = socket(
            AddressFamily::Inet,
            SockType::Stream,
            SockFlag::empty(),
            None,
        )
        .unwrap();
        setsockopt(&fd, sockopt::RcvBuf, &1024).unwrap();
        connect(fd.as_raw_fd(), &SockaddrIn::from(v4)).unwrap();
        Conn::from(TcpStream::from(fd))
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    pub fn post_chat(&mut self, body: &str) {
        self.send(&raw(
            "POST",
            "/v1/chat/completions",
            &[("content-type", "application/json")],
            body.as_bytes(),
        ));
    }

    /// Reads more; false at end of stream (or a reset).
    pub fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 16 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }

    pub fn head(&mut self) -> (u16, Vec<(String, String)>) {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut response = httparse::Response::new(&mut headers);
            match response.parse(&self.buf).expect("a valid response head") {
                httparse::Status::Complete(len) => {
                    let status = response.code.unwrap();
                    let headers = response
                        .headers
                        .iter()
                        .map(|h| {
                            (
                                h.name.to_ascii_lowercase(),
                                String::from_utf8_lossy(h.value).into_owned(),
                            )
                        })
                        .collect();
                    self.buf.drain(..len);
                    return (status, headers);
                }
                httparse::Status::Partial => {
                    assert!(self.fill(), "connection closed before a response head")
                }
            }
        }
    }

    /// The next chunk of a chunked body; `None` after the last.
    pub fn chunk(&mut self) -> Option<Vec<u8>> {
        loop {
            match httparse::parse_chunk_size(&self.buf) {
                Ok(httparse::Status::Complete((start, size))) => {
                    let size = size as usize;
                    if size == 0 {
                        return None;
                    }
                    while self.buf.len() < start + size + 2 {
                        assert!(self.fill(), "connection closed inside a chunk");
                    }
                    let data = self.buf[start..start + size].to_vec();
                    self.buf.drain(..start + size + 2);
                    return Some(data);
                }
                Ok(httparse::Status::Partial) => {
                    if !self.fill() {
                        return None;
                    }
                }
                Err(e) => panic!("bad chunk: {e:?}"),
            }
        }
    }

    pub fn reply(&mut self) -> Reply {
        let (status, headers) = self.head();
        let header = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let body = if header("transfer-encoding").is_some_and(|te| te.contains("chunked")) {
            let mut body = Vec::new();
            while let Some(chunk) = self.chunk() {
                body.extend_from_slice(&chunk);
            }
            body
        } else if let Some(length) = header("content-length") {
            let length: usize = length.parse().unwrap();
            while self.buf.len() < length {
                assert!(self.fill(), "connection closed inside the body");
            }
            self.buf[..length].to_vec()
        } else {
            while self.fill() {}
            std::mem::take(&mut self.buf)
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    /// Whether the server closed the connection (end of stream or reset) within `limit`.
    pub fn closed_within(&mut self, limit: Duration) -> bool {
        self.stream.set_read_timeout(Some(limit)).unwrap();
        let mut chunk = [0u8; 1024];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    return false;
                }
                Err(_) => return true,
            }
        }
    }
}

/// The head of a chat request whose body, of `length` bytes, is still to come.
pub fn upload_head(length: usize) -> Vec<u8> {
    let mut head = raw(
        "POST",
        "/v1/chat/completions",
        &[("content-type", "application/json")],
        b"",
    );
    let declared = format!("content-length: {length}\r\n\r\n");
    let end = head.len() - "content-length: 0\r\n\r\n".len();
    head.truncate(end);
    head.extend_from_slice(declared.as_bytes());
    head
}
