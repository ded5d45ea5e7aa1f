//! `relay version` and `relay --version --json`: which relay this is, for a
//! person or for a program (a Main Agent checking what it drives).

use serde::Serialize;

use super::output::{self, say};

#[derive(Serialize)]
pub struct Version {
    pub name: &'static str,
    pub version: &'static str,
    /// The platform this binary was built for (`linux`, `macos`; `x86_64`, `aarch64`).
    pub os: &'static str,
    pub arch: &'static str,
}

pub const VERSION: Version = Version {
    name: env!("CARGO_PKG_NAME"),
    version: env!("CARGO_PKG_VERSION"),
    os: std::env::consts::OS,
    arch: std::env::consts::ARCH,
};

/// What `relay --version` prints (clap's own line), or its JSON form.
pub fn print(json: bool) {
    if json {
        output::json(&VERSION);
    } else {
        say!("{} {}", VERSION.name, VERSION.version);
    }
}
