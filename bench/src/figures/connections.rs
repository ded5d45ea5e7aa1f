//! Connections: the daemon's memory, and its answers to a client already
//! connected, while a storm of other connections stays open doing nothing
//! (half send nothing, half half a request). The daemon keeps
//! `http.max_connections` of them (1,024 by default) and refuses the rest at
//! once, so the storm costs it at most that many. The reference is the same
//! client with no storm, in the same run.

use std::io::Write;
use std::net::TcpStream;
use std::time::Instant;

use crate::model::Model;
use crate::relay::Relay;
use crate::report::{Section, verdict};
use crate::stats::{Samples, ms};

pub fn run(bin: &std::path::Path, model: &Model, storm: usize, runs: usize) -> Section {
    println!("connections: a storm of {storm}");
    let relay = Relay::new(bin, model.base_url());
    relay.start();
    let mut http = relay.http();
    let (instance, _) = relay.template(&mut http, "Chase the invoice");
    let get = format!("/instances/{}", instance.id);
    let rss_quiet = relay.rss_mib();
    let quiet = Samples::time(runs, 20, || drop(http.expect("GET", &get, None, 200)));

    let opened = Instant::now();
    let mut held = Vec::with_capacity(storm);
    let mut refused_at_once = 0;
    for k in 0..storm {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", relay.port)) else { break };
        // Slow: a request line and half its headers, and nothing more.
        if k % 2 == 1 {
            let _ = stream.write_all(format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n", relay.port).as_bytes());
        }
        held.push(stream);
        // The client is in use meanwhile: a kept-alive connection that asks
        // nothing for `http.header_timeout` (10 s) is closed, as it should be,
        // and opening the storm takes longer than that.
        if k % 500 == 0 {
            http.expect("GET", "/health", None, 200);
        }
    }
    let opening = opened.elapsed();
    let stormy = Samples::time(runs, 20, || drop(http.expect("GET", &get, None, 200)));
    let rss_storm = relay.rss_mib();
    // A new client while the daemon is full: refused at once, with a reason.
    // Full for sure: the storm's first connections may have reached
    // `http.header_timeout` and been closed, so as many fresh ones take
    // their file descriptors.
    let fresh = relay::config::HttpSettings::default().max_connections + 64;
    held.drain(..fresh.min(held.len()));
    for _ in 0..fresh {
        if let Ok(stream) = TcpStream::connect(("127.0.0.1", relay.port)) {
            held.push(stream);
        }
    }
    let asked = Instant::now();
    let answer =
        crate::http::Http::connect(relay.port, &relay.token()).and_then(|mut h| h.request("GET", "/health", None));
    let refusal = asked.elapsed();
    let held_by_daemon = relay::config::HttpSettings::default().max_connections;
    if let Ok((503, _)) = answer {
        refused_at_once += 1;
    }
    drop(held);
    relay.stop();

    let mut section = Section::new(
        "Connections",
        &format!(
            "A client on a kept-alive connection asks `GET /instances/{{id}}` {runs} times with no other connection \
             open, then again while {storm} other connections are open and idle (half send nothing, half half a \
             request's headers; opened in {:.1} s). The daemon holds {held_by_daemon} (`http.max_connections`) and refuses \
             the rest. Targets: RSS growth under 50 MB, the client served under 50 ms p99.",
            opening.as_secs_f64()
        ),
        &["figure", "no storm", "during the storm", "target"],
    );
    section.row(vec![
        "`GET /instances/{id}`, median (p99)".into(),
        format!("{} ({})", ms(quiet.median()), ms(quiet.p99())),
        format!("{} ({})", ms(stormy.median()), ms(stormy.p99())),
        verdict(stormy.p99() < 50.0),
    ]);
    section.row(vec![
        "daemon RSS".into(),
        format!("{rss_quiet:.1} MiB"),
        format!("{rss_storm:.1} MiB (+{:.1})", rss_storm - rss_quiet),
        verdict(rss_storm - rss_quiet < 50.0),
    ]);
    section.row(vec![
        "a new client while the daemon is full".into(),
        String::new(),
        match refused_at_once {
            1 => format!("503 in {}", ms(refusal.as_secs_f64() * 1e3)),
            _ => format!("{answer:?} in {}", ms(refusal.as_secs_f64() * 1e3)),
        },
        String::new(),
    ]);
    section
}
